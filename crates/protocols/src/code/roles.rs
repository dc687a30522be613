//! The ten role templates of design note 004 for code debates, with their focus, the hooks
//! whose results they are shown (moot runs the tools; seats never run commands), and the
//! default line-up per phase. `--seat ROLE` overrides a phase's line-up.

use serde::{Deserialize, Serialize};

/// A code debate's phase, in the note's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CodePhase {
    Clarification,
    SelfCheck,
    Proposal,
    Critique,
    Review,
    Optimization,
    Adversarial,
    Convergence,
}

impl CodePhase {
    pub const ORDER: [CodePhase; 8] = [
        CodePhase::Clarification,
        CodePhase::SelfCheck,
        CodePhase::Proposal,
        CodePhase::Critique,
        CodePhase::Review,
        CodePhase::Optimization,
        CodePhase::Adversarial,
        CodePhase::Convergence,
    ];

    /// Its name as the header, `--skip` and the record spell it.
    pub fn name(self) -> &'static str {
        match self {
            CodePhase::Clarification => "clarification",
            CodePhase::SelfCheck => "self-check",
            CodePhase::Proposal => "proposal",
            CodePhase::Critique => "critique",
            CodePhase::Review => "review",
            CodePhase::Optimization => "optimization",
            CodePhase::Adversarial => "adversarial",
            CodePhase::Convergence => "convergence",
        }
    }

    /// Whether hooks run after this phase (the note's hook points).
    pub fn runs_hooks(self) -> bool {
        matches!(
            self,
            CodePhase::Proposal
                | CodePhase::Optimization
                | CodePhase::Adversarial
                | CodePhase::Convergence
        )
    }
}

/// One role template.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Role {
    pub name: &'static str,
    /// What its system prompt puts first.
    pub focus: &'static str,
    /// The note's tools, as the hooks moot runs for it: their results are in its prompts.
    pub tools: &'static [&'static str],
    /// Phases it sits in when no `--seat` says otherwise.
    pub phases: &'static [CodePhase],
}

use CodePhase::*;

pub const ROLES: &[Role] = &[
    Role {
        name: "Generator",
        focus: "Produce complete, production-ready implementations.",
        tools: &["test", "format"],
        phases: &[SelfCheck, Proposal, Adversarial],
    },
    Role {
        name: "Refactorer",
        focus: "Improve structure without changing behaviour; find code smells.",
        tools: &["lint", "analysis", "format"],
        phases: &[Critique, Optimization],
    },
    Role {
        name: "PerformanceAnalyzer",
        focus: "Profile, optimise hot paths, memory and CPU efficiency.",
        tools: &["bench"],
        phases: &[Critique, Optimization],
    },
    Role {
        name: "Security",
        focus: "Find vulnerabilities: the OWASP top 10, injection vectors, unsafe input handling.",
        tools: &["security"],
        phases: &[Critique, Adversarial],
    },
    Role {
        name: "Teacher",
        focus: "Explain decisions, document the rationale, transfer knowledge.",
        tools: &[],
        phases: &[Convergence],
    },
    Role {
        name: "Compiler",
        focus: "Validate syntax, type safety and build correctness.",
        tools: &["lint", "test"],
        phases: &[Review],
    },
    Role {
        name: "Executor",
        focus: "Run the code in the sandbox, collect runtime feedback, capture metrics.",
        tools: &["test", "bench"],
        phases: &[Review],
    },
    Role {
        name: "Judge",
        focus: "Score solutions objectively against the rubric (0-1 per criterion) and declare a winner.",
        tools: &["test", "lint", "security", "bench"],
        phases: &[Review, Convergence],
    },
    Role {
        name: "Implementer",
        focus: "Turn architectural specs into concrete code; follow the contracts.",
        tools: &["test"],
        phases: &[],
    },
    Role {
        name: "Designer",
        focus: "High-level system design, component decomposition, interface specs.",
        tools: &[],
        phases: &[Clarification],
    },
];

/// A role by name, case and separators aside (`performance-analyzer`, `Judge/Adjudicator`).
pub fn find(name: &str) -> Option<&'static Role> {
    let key = |s: &str| {
        s.split('/')
            .next()
            .unwrap_or(s)
            .chars()
            .filter(|c| c.is_alphanumeric())
            .collect::<String>()
            .to_lowercase()
    };
    let wanted = key(name);
    ROLES.iter().find(|r| key(r.name) == wanted)
}

/// The roles that sit in `phase` by default.
pub fn line_up(phase: CodePhase) -> Vec<&'static Role> {
    ROLES.iter().filter(|r| r.phases.contains(&phase)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ten_templates_are_there_and_found_by_any_spelling() {
        assert_eq!(ROLES.len(), 10);
        assert_eq!(
            find("performance-analyzer").unwrap().name,
            "PerformanceAnalyzer"
        );
        assert_eq!(find("Judge/Adjudicator").unwrap().name, "Judge");
        assert_eq!(find("security").unwrap().tools, &["security"]);
        assert!(find("Wizard").is_none());
        // Seats are named by initial: the ten must differ.
        let mut initials: Vec<char> = ROLES.iter().filter_map(|r| r.name.chars().next()).collect();
        initials.sort();
        initials.dedup();
        assert_eq!(initials.len(), ROLES.len());
    }

    #[test]
    fn every_phase_that_argues_has_a_line_up_and_hooks_follow_the_notes_points() {
        for phase in CodePhase::ORDER {
            assert!(!line_up(phase).is_empty(), "{phase:?}");
        }
        let names: Vec<&str> = line_up(Critique).iter().map(|r| r.name).collect();
        assert_eq!(names, vec!["Refactorer", "PerformanceAnalyzer", "Security"]);
        let hooked: Vec<CodePhase> = CodePhase::ORDER
            .into_iter()
            .filter(|p| p.runs_hooks())
            .collect();
        assert_eq!(
            hooked,
            vec![Proposal, Optimization, Adversarial, Convergence]
        );
    }
}
