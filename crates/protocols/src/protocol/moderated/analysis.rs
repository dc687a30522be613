//! Prompt analysis for the moderated protocol: domain, implicit constraints, binary or
//! multi-faceted, vagueness. A keyword heuristic that the moderator's reply refines.

use serde::{Deserialize, Serialize};

/// What the moderator makes of the question before assigning perspectives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    pub domain: String,
    pub constraints: Vec<String>,
    /// True for "A or B" and yes/no questions.
    pub binary: bool,
    pub debaters: u32,
    pub vague: bool,
    pub clarifying_question: Option<String>,
}

const STOPWORDS: &[&str] = &[
    "a",
    "an",
    "the",
    "we",
    "our",
    "us",
    "i",
    "you",
    "should",
    "would",
    "could",
    "can",
    "do",
    "does",
    "is",
    "are",
    "be",
    "to",
    "of",
    "for",
    "in",
    "on",
    "or",
    "and",
    "what",
    "how",
    "which",
    "it",
    "this",
    "that",
    "with",
    "use",
    "about",
    "think",
    "any",
    "best",
    "way",
    "thoughts",
    "help",
    "good",
    "idea",
    "ideas",
    "something",
    "stuff",
    "things",
    "thing",
    "now",
    "go",
];

/// Implicit constraints: a phrase heard in the question, what it means, and which
/// perspectives it weighs toward.
/// Phrases that reveal a constraint, what it means, and the perspective weights it implies.
type Constraint = (
    &'static [&'static str],
    &'static str,
    &'static [(&'static str, i32)],
);

const CONSTRAINTS: &[Constraint] = &[
    (
        &[
            "ship fast",
            "ship quickly",
            "asap",
            "deadline",
            "mvp",
            "quickly",
            "next week",
            "by friday",
            "time to market",
        ],
        "we need to ship fast",
        &[("Simplicity Advocate", 3), ("Operational Simplicity", 1)],
    ),
    (
        &[
            "small team",
            "solo",
            "one developer",
            "two developers",
            "few engineers",
        ],
        "the team is small",
        &[("Simplicity Advocate", 2), ("Operational Simplicity", 2)],
    ),
    (
        &[
            "scale",
            "millions",
            "high traffic",
            "throughput",
            "latency",
            "real-time",
            "realtime",
        ],
        "load and latency matter",
        &[("Performance Advocate", 3)],
    ),
    (
        &[
            "secure",
            "compliance",
            "regulated",
            "hipaa",
            "gdpr",
            "pci",
            "soc2",
            "sso",
            "auth",
        ],
        "security and compliance are in play",
        &[("Security Advocate", 3)],
    ),
    (
        &["users", "customers", "onboarding", "ux", "usability"],
        "end users are affected",
        &[("User Experience", 3)],
    ),
    (
        &["budget", "cheap", "cost", "costs", "expensive"],
        "cost is a concern",
        &[("Operational Simplicity", 2), ("Simplicity Advocate", 1)],
    ),
    (
        &[
            "long term",
            "long-term",
            "future",
            "extensible",
            "plugin",
            "evolve",
        ],
        "it must evolve over years",
        &[("Future Flexibility", 3)],
    ),
];

const DOMAINS: &[(&str, &[&str])] = &[
    (
        "security",
        &[
            "auth",
            "sso",
            "oauth",
            "security",
            "encrypt",
            "secrets",
            "permissions",
            "compliance",
        ],
    ),
    (
        "data",
        &[
            "database",
            "postgresql",
            "postgres",
            "redis",
            "cache",
            "caching",
            "schema",
            "sql",
            "nosql",
            "storage",
            "query",
        ],
    ),
    (
        "ux",
        &[
            "ux",
            "ui",
            "frontend",
            "onboarding",
            "users",
            "design",
            "mobile",
        ],
    ),
    (
        "operations",
        &[
            "deploy",
            "deployment",
            "kubernetes",
            "monitoring",
            "ops",
            "infrastructure",
            "ci",
            "cloud",
        ],
    ),
    (
        "architecture",
        &[
            "architecture",
            "plugin",
            "microservices",
            "monolith",
            "api",
            "graphql",
            "rest",
            "structure",
            "modules",
            "service",
        ],
    ),
    (
        "performance",
        &[
            "performance",
            "latency",
            "throughput",
            "fast",
            "slow",
            "scale",
        ],
    ),
];

/// The lowercase words of a text.
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric() && c != '-')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The keyword heuristic: works with no model at all, and is the fallback when the
/// moderator's reply is unusable.
pub fn analyze(question: &str) -> Analysis {
    let lower = question.to_lowercase();
    let words = words(question);
    let content: Vec<&String> = words
        .iter()
        .filter(|w| !STOPWORDS.contains(&w.as_str()) && w.len() > 1)
        .collect();
    let options = lower
        .split(" or ")
        .count()
        .max(lower.split(" vs ").count())
        .max(lower.split(" versus ").count());
    let yes_no = matches!(
        words.first().map(String::as_str),
        Some("should" | "do" | "does" | "is" | "are" | "can" | "will" | "would" | "must")
    );
    let binary = options == 2 || (options < 2 && yes_no);
    let debaters = if binary {
        2
    } else if options > 2 || content.len() > 14 {
        4
    } else {
        3
    };
    let constraints: Vec<String> = CONSTRAINTS
        .iter()
        .filter(|(phrases, _, _)| phrases.iter().any(|p| contains_phrase(&lower, &words, p)))
        .map(|(_, meaning, _)| meaning.to_string())
        .collect();
    let domain = DOMAINS
        .iter()
        .map(|(name, keys)| {
            (
                name,
                keys.iter()
                    .filter(|k| words.iter().any(|w| w == *k))
                    .count(),
            )
        })
        .filter(|(_, hits)| *hits > 0)
        .max_by_key(|(_, hits)| *hits)
        .map(|(name, _)| name.to_string())
        .unwrap_or_else(|| "general".to_string());
    let vague = content.len() < 3;
    Analysis {
        domain,
        constraints,
        binary,
        debaters,
        vague,
        clarifying_question: vague.then(|| {
            "What decision are you facing, and what options or constraints should the debaters weigh?".to_string()
        }),
    }
}

fn contains_phrase(lower: &str, words: &[String], phrase: &str) -> bool {
    if phrase.contains(' ') {
        lower.contains(phrase)
    } else {
        words.iter().any(|w| w == phrase)
    }
}

/// Perspective weights implied by the constraints found.
pub fn constraint_boosts(analysis: &Analysis) -> Vec<(&'static str, i32)> {
    CONSTRAINTS
        .iter()
        .filter(|(_, meaning, _)| analysis.constraints.iter().any(|c| c == meaning))
        .flat_map(|(_, _, boosts)| boosts.iter().copied())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_choices_get_two_debaters() {
        let a = analyze("Should we use Redis or PostgreSQL for caching?");
        assert!(a.binary);
        assert_eq!(a.debaters, 2);
        assert_eq!(a.domain, "data");
        assert!(!a.vague);
        assert!(analyze("Should we add SSO?").binary);
    }

    #[test]
    fn multi_faceted_questions_get_three_or_four() {
        let a = analyze("How should we structure the plugin system?");
        assert!(!a.binary);
        assert_eq!(a.debaters, 3);
        assert_eq!(a.domain, "architecture");
        let many = analyze("Should we build on Kafka, RabbitMQ or NATS or plain Postgres queues?");
        assert_eq!(many.debaters, 4);
    }

    #[test]
    fn implicit_constraints_are_detected() {
        let a = analyze("We need to ship fast with a small team: monolith or microservices?");
        assert!(a.constraints.contains(&"we need to ship fast".to_string()));
        assert!(a.constraints.contains(&"the team is small".to_string()));
        let boosts = constraint_boosts(&a);
        assert!(boosts.contains(&("Simplicity Advocate", 3)));
    }

    #[test]
    fn vague_prompts_are_noticed() {
        let a = analyze("What should we do?");
        assert!(a.vague);
        assert!(a.clarifying_question.is_some());
        assert!(analyze("thoughts on the thing?").vague);
    }
}
