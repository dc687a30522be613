//! The closing decision document of a debate and its markdown rendering (Debate Mode format).

use super::Named as _;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// How sure the moderator is of its recommendation, lowest first.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::Display,
)]
#[strum(ascii_case_insensitive)]
pub enum Confidence {
    /// No recommendation stands: the person has to decide (a contested panel).
    #[serde(rename = "Requires input")]
    #[strum(serialize = "Requires input")]
    RequiresInput,
    Low,
    Medium,
    High,
}

impl super::Named for Confidence {}

impl Confidence {
    pub fn parse(text: &str) -> Option<Self> {
        text.trim().parse().ok()
    }
}

super::vocabulary! {
    /// Whether the person approved the synthesis.
    pub enum ApprovalStatus {
        /// Approved as the moderator first wrote it.
        Approved,
        /// Revised once at the person's request, and the revision approved.
        Revised,
        /// Nobody approved it: declined, or nobody was asked.
        Unapproved,
    }
}

/// The person's verdict on the synthesis, and who gave it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Approval {
    pub status: ApprovalStatus,
    /// Who decided ("alice at the workbench", "headless auto-answer"), or "nobody".
    pub by: String,
    /// The revision asked for, or why the synthesis stands unapproved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Approval {
    /// The record's approval line.
    pub fn line(&self) -> String {
        match self.status {
            ApprovalStatus::Approved => format!(
                "approved by {}{}",
                self.by,
                self.note
                    .as_deref()
                    .map(|n| format!(" ({})", one_line(n)))
                    .unwrap_or_default()
            ),
            ApprovalStatus::Revised => format!(
                "revised once at the request of {}{}, then approved",
                self.by,
                self.note
                    .as_deref()
                    .map(|n| format!(" (“{}”)", one_line(n)))
                    .unwrap_or_default()
            ),
            ApprovalStatus::Unapproved => format!(
                "unapproved: {}",
                self.note.as_deref().map(one_line).unwrap_or_default()
            ),
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
    /// The person's verdict; None while it awaits one (and in records from before moot asked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<Approval>,
    /// The closing vote, when one was asked for (`--vote`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub votes: Option<super::VoteView>,
    /// What the person asked the rounds to address, in the order given (U5): part of the
    /// debate, so part of its record.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guidance: Vec<String>,
}

impl Synthesis {
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        // Each header line is its own paragraph, so that every markdown renderer (and the
        // synthesis view) shows it on a line of its own.
        let _ = writeln!(out, "# Decision: {}\n", one_line(&self.title));
        let _ = writeln!(out, "**Date:** {}\n", self.date);
        let _ = writeln!(out, "**Debate ID:** {}\n", self.debate_id);
        let _ = writeln!(out, "**Rounds:** {}\n", self.rounds);
        let _ = writeln!(out, "**Perspectives:** {}\n", self.perspectives.join(", "));
        if let Some(approval) = &self.approval {
            let _ = writeln!(out, "**Approval:** {}\n", approval.line());
        }
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
        let _ = writeln!(out, "**Confidence:** {}\n", self.confidence.as_str());
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
        if let Some(votes) = &self.votes {
            let _ = writeln!(out, "{}", votes.to_markdown());
        }
        if !self.guidance.is_empty() {
            let _ = writeln!(
                out,
                "## Your Guidance
"
            );
            for (n, words) in self.guidance.iter().enumerate() {
                // Quoted whole: every line of it under its number.
                let _ = writeln!(out, "{}. {}", n + 1, words.trim().replace('\n', "\n   "));
            }
            let _ = writeln!(out);
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

/// A small synthesis of the demo's question, for tests here and in the protocols.
#[cfg(any(test, feature = "fixtures"))]
impl Synthesis {
    pub fn sample() -> Synthesis {
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
            approval: None,
            guidance: Vec::new(),
            votes: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_has_every_section_of_the_debate_mode_format() {
        let markdown = Synthesis::sample().to_markdown();
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

    /// U5: the person's guidance is in the record, every line of it under its number.
    #[test]
    fn the_persons_guidance_is_listed_whole() {
        let mut synthesis = Synthesis::sample();
        synthesis.guidance = vec![
            "Weigh the migration cost.\nAnd the team's ops load.".into(),
            "Decide by Friday".into(),
        ];
        let markdown = synthesis.to_markdown();
        assert!(
            markdown.contains(
                "## Your Guidance\n\n1. Weigh the migration cost.\n   And the team's ops load.\n2. Decide by Friday\n"
            ),
            "{markdown}"
        );
        assert!(
            !Synthesis::sample().to_markdown().contains("Your Guidance"),
            "none given, none listed"
        );
    }

    #[test]
    fn header_lines_are_paragraphs_of_their_own() {
        let mut synthesis = Synthesis::sample();
        synthesis.approval = Some(Approval {
            status: ApprovalStatus::Revised,
            by: "ana at the workbench".into(),
            note: Some("Weigh the\nmigration".into()),
        });
        let markdown = synthesis.to_markdown();
        for pair in [
            ("**Date:**", "**Debate ID:**"),
            ("**Debate ID:**", "**Rounds:**"),
            ("**Rounds:**", "**Perspectives:**"),
            ("**Perspectives:**", "**Approval:**"),
            ("**Confidence:**", "**Caveats:**"),
        ] {
            let first = markdown.find(pair.0).unwrap();
            let second = markdown.find(pair.1).unwrap();
            assert!(
                markdown[first..second].contains("\n\n"),
                "{} and {} must be separate paragraphs:\n{markdown}",
                pair.0,
                pair.1
            );
        }
        assert!(markdown.contains(
            "**Approval:** revised once at the request of ana at the workbench (“Weigh the migration”), then approved"
        ));
    }

    #[test]
    fn confidence_orders_and_parses_in_any_case() {
        assert_eq!(Confidence::High.min(Confidence::Low), Confidence::Low);
        assert_eq!(Confidence::Medium.min(Confidence::High), Confidence::Medium);
        assert_eq!(Confidence::parse(" medium "), Some(Confidence::Medium));
        assert_eq!(Confidence::parse("sure"), None);
        assert_eq!(
            serde_json::to_string(&Confidence::High).unwrap(),
            "\"High\""
        );
    }
}
