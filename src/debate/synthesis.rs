//! The closing decision document of a debate and its markdown rendering (Debate Mode format).

use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// How sure the moderator is of its recommendation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Confidence {
    High,
    Medium,
    Low,
}

impl Confidence {
    pub fn as_str(self) -> &'static str {
        match self {
            Confidence::High => "High",
            Confidence::Medium => "Medium",
            Confidence::Low => "Low",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "high" => Some(Confidence::High),
            "medium" => Some(Confidence::Medium),
            "low" => Some(Confidence::Low),
            _ => None,
        }
    }

    /// The lower of two confidences.
    pub fn min(self, other: Confidence) -> Confidence {
        let rank = |c: Confidence| match c {
            Confidence::Low => 0,
            Confidence::Medium => 1,
            Confidence::High => 2,
        };
        if rank(self) <= rank(other) {
            self
        } else {
            other
        }
    }
}

/// One perspective's part in the decision document.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PerspectiveSummary {
    pub name: String,
    pub key_arguments: Vec<String>,
    pub trade_offs_accepted: Vec<String>,
}

/// The synthesis document, as structured data; `to_markdown` renders the decision record.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Synthesis {
    pub title: String,
    pub date: String,
    pub debate_id: String,
    pub rounds: u32,
    pub perspectives: Vec<String>,
    pub question: String,
    pub perspectives_considered: Vec<PerspectiveSummary>,
    pub agreements: Vec<String>,
    pub tensions: Vec<String>,
    pub recommendation: String,
    pub confidence: Confidence,
    pub caveats: Vec<String>,
    pub dissent: String,
    pub action_items: Vec<String>,
    /// Facts about the run itself: seats dropped or muted, the provider, limits hit.
    pub notes: Vec<String>,
}

impl Synthesis {
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# Decision: {}\n", one_line(&self.title));
        let _ = writeln!(out, "**Date:** {}", self.date);
        let _ = writeln!(out, "**Debate ID:** {}", self.debate_id);
        let _ = writeln!(out, "**Rounds:** {}", self.rounds);
        let _ = writeln!(out, "**Perspectives:** {}\n", self.perspectives.join(", "));
        let _ = writeln!(out, "## Question\n\n{}\n", self.question.trim());
        let _ = writeln!(out, "## Perspectives Considered\n");
        for perspective in &self.perspectives_considered {
            let _ = writeln!(out, "### {}\n", one_line(&perspective.name));
            let _ = writeln!(
                out,
                "- Key arguments: {}",
                joined_or_none(&perspective.key_arguments)
            );
            let _ = writeln!(
                out,
                "- Trade-offs accepted: {}\n",
                joined_or_none(&perspective.trade_offs_accepted)
            );
        }
        let _ = writeln!(out, "## Points of Agreement\n");
        bullet_list(
            &mut out,
            &self.agreements,
            "No point was agreed by every perspective.",
        );
        let _ = writeln!(out, "## Key Tensions\n");
        bullet_list(&mut out, &self.tensions, "No tension remained open.");
        let _ = writeln!(out, "## Recommendation\n\n{}\n", self.recommendation.trim());
        let _ = writeln!(out, "**Confidence:** {}", self.confidence.as_str());
        let _ = writeln!(out, "**Caveats:** {}\n", joined_or_none(&self.caveats));
        let _ = writeln!(out, "## Dissenting View\n");
        if self.dissent.trim().is_empty() {
            let _ = writeln!(out, "No perspective dissented from the recommendation.\n");
        } else {
            let _ = writeln!(out, "{}\n", self.dissent.trim());
        }
        if !self.action_items.is_empty() {
            let _ = writeln!(out, "## Action Items\n");
            bullet_list(&mut out, &self.action_items, "");
        }
        if !self.notes.is_empty() {
            let _ = writeln!(out, "## Notes on This Debate\n");
            bullet_list(&mut out, &self.notes, "");
        }
        out.truncate(out.trim_end().len());
        out.push('\n');
        out
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn joined_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none stated".to_string()
    } else {
        items
            .iter()
            .map(|item| one_line(item))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

fn bullet_list(out: &mut String, items: &[String], empty: &str) {
    if items.is_empty() {
        if !empty.is_empty() {
            let _ = writeln!(out, "- {empty}");
        }
    } else {
        for item in items {
            let _ = writeln!(out, "- {}", one_line(item));
        }
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Synthesis {
        Synthesis {
            title: "Redis or PostgreSQL for caching".into(),
            date: "2026-11-22".into(),
            debate_id: "DEB-abc".into(),
            rounds: 2,
            perspectives: vec!["Performance Advocate".into(), "Simplicity Advocate".into()],
            question: "Should we use Redis or PostgreSQL for caching?".into(),
            perspectives_considered: vec![PerspectiveSummary {
                name: "Performance Advocate".into(),
                key_arguments: vec!["Redis is in-memory [A1.1]".into()],
                trade_offs_accepted: vec!["another service".into()],
            }],
            agreements: vec!["Measure first".into()],
            tensions: vec![],
            recommendation: "Start with PostgreSQL.".into(),
            confidence: Confidence::Medium,
            caveats: vec!["If p99 matters, revisit".into()],
            dissent: String::new(),
            action_items: vec![],
            notes: vec![],
        }
    }

    #[test]
    fn markdown_has_every_section_of_the_debate_mode_format() {
        let markdown = sample().to_markdown();
        for heading in [
            "# Decision: Redis or PostgreSQL for caching",
            "**Date:** 2026-11-22",
            "**Debate ID:** DEB-abc",
            "**Rounds:** 2",
            "**Perspectives:** Performance Advocate, Simplicity Advocate",
            "## Question",
            "## Perspectives Considered",
            "### Performance Advocate",
            "- Key arguments: Redis is in-memory [A1.1]",
            "- Trade-offs accepted: another service",
            "## Points of Agreement",
            "## Key Tensions",
            "- No tension remained open.",
            "## Recommendation",
            "**Confidence:** Medium",
            "**Caveats:** If p99 matters, revisit",
            "## Dissenting View",
        ] {
            assert!(
                markdown.contains(heading),
                "missing {heading:?} in\n{markdown}"
            );
        }
    }

    #[test]
    fn confidence_min_picks_the_lower() {
        assert_eq!(Confidence::High.min(Confidence::Low), Confidence::Low);
        assert_eq!(Confidence::Medium.min(Confidence::High), Confidence::Medium);
    }
}
