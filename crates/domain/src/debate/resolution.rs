//! How a finished debate came out, in one shape for every protocol (design note 004): what
//! won, how it was decided, how sure moot is, how far the seats ended agreeing, and who
//! started the debate. Each protocol reads its own result into a `Resolution`; its own fields
//! (a panel's RECOMMENDED or CONTESTED outcome, say) stay beside it.

use super::Confidence;
use serde::{Deserialize, Serialize};

/// What a protocol reads from its result: the winner, the method, the consensus score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resolution {
    /// What won: an option, a side, a seat, a version; `None` for a draw or a choice still open.
    pub winner: Option<String>,
    /// How it was decided, in a few words ("consensus at 2/3", "concession", "borda vote").
    pub method: String,
    /// 0–1: how far the seats ended agreeing, as each protocol defines it (ARCHITECTURE.md).
    pub final_consensus_score: f64,
}

/// The uniform outcome `show --json`, `list --json` and the record carry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UniformOutcome {
    pub winner: Option<String>,
    pub method: String,
    pub confidence: Confidence,
}

/// A finished debate's outcome with its consensus score, as the faces show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Concluded {
    pub outcome: UniformOutcome,
    pub final_consensus_score: f64,
}

impl Concluded {
    /// A protocol's reading of its result, with the confidence the journal stored.
    pub fn new(resolution: Resolution, confidence: Confidence) -> Concluded {
        Concluded {
            outcome: UniformOutcome {
                winner: resolution.winner,
                method: resolution.method,
                confidence,
            },
            // A score outside 0–1 (or not a number) would be a protocol's bug; it is shown
            // clamped rather than passed on.
            final_consensus_score: if resolution.final_consensus_score.is_nan() {
                0.0
            } else {
                (resolution.final_consensus_score.clamp(0.0, 1.0) * 1000.0).round() / 1000.0
            },
        }
    }

    /// The record's line for it: "**Result:** winner PRO · method concession · …".
    pub fn line(&self, initiated_by: Option<&Initiator>) -> String {
        let o = &self.outcome;
        format!(
            "{RESULT_MARK} winner {} · method {} · confidence {} · final consensus score {:.2} · initiated by {}",
            o.winner.as_deref().unwrap_or("none"),
            o.method,
            o.confidence,
            self.final_consensus_score,
            initiated_by.map_or_else(|| "(not recorded)".to_string(), Initiator::to_string)
        )
    }
}

/// What the record's uniform result line starts with.
pub const RESULT_MARK: &str = "**Result:**";

/// Who started a debate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Initiator {
    /// A person at the workbench.
    Person,
    /// A headless run, its checkpoints answered (if at all) on stdin.
    Stdin,
    /// An outside agent that named itself (`--initiated-by agent:NAME`).
    Agent(String),
    /// `moot serve`, on a request to its API.
    Server,
    /// `moot bench`, as one of its arms.
    Bench,
}

/// The most characters an agent's name may have.
const AGENT_NAME_CHARS: usize = 64;

impl std::fmt::Display for Initiator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Initiator::Person => f.write_str("person"),
            Initiator::Stdin => f.write_str("stdin"),
            Initiator::Agent(name) => write!(f, "agent:{name}"),
            Initiator::Server => f.write_str("server"),
            Initiator::Bench => f.write_str("bench"),
        }
    }
}

/// Why a text names nobody who starts a debate.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InitiatorError {
    #[error(
        "{0:?} is not who starts a debate: write agent:NAME (person, stdin, server and bench are moot's own)"
    )]
    Unknown(String),
    #[error("agent name {0:?}: use 1–{AGENT_NAME_CHARS} letters, digits, '-', '_' or '.'")]
    BadAgentName(String),
    /// `--initiated-by` names an outside agent only.
    #[error("moot records `{0}` itself; --initiated-by names an outside agent: agent:NAME")]
    NotAnAgent(String),
}

impl std::str::FromStr for Initiator {
    type Err = InitiatorError;

    fn from_str(text: &str) -> Result<Initiator, InitiatorError> {
        match text {
            "person" => Ok(Initiator::Person),
            "stdin" => Ok(Initiator::Stdin),
            "server" => Ok(Initiator::Server),
            "bench" => Ok(Initiator::Bench),
            other => {
                let name = other
                    .strip_prefix("agent:")
                    .ok_or_else(|| InitiatorError::Unknown(other.to_string()))?;
                let valid = !name.is_empty()
                    && name.chars().count() <= AGENT_NAME_CHARS
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
                if valid {
                    Ok(Initiator::Agent(name.to_string()))
                } else {
                    Err(InitiatorError::BadAgentName(name.to_string()))
                }
            }
        }
    }
}

impl Initiator {
    /// `--initiated-by`: only an outside agent names itself; who else starts a debate moot knows.
    pub fn parse_agent(text: &str) -> Result<Initiator, InitiatorError> {
        match text.parse()? {
            agent @ Initiator::Agent(_) => Ok(agent),
            other => Err(InitiatorError::NotAnAgent(other.to_string())),
        }
    }
}

impl From<Initiator> for String {
    fn from(initiator: Initiator) -> String {
        initiator.to_string()
    }
}

impl TryFrom<String> for Initiator {
    type Error = InitiatorError;

    fn try_from(text: String) -> Result<Initiator, InitiatorError> {
        text.parse()
    }
}

pub const RECEIPT_MARK: &str = "*Journal receipt:*";

/// Whether `text` is a file moot wrote about a debate (a decision record of any protocol, its
/// follow-up draft, an arena persona page), by the marks each carries: material gathered for a
/// new debate must come from the project, not from moot's own conclusions (seed review
/// 002/003 #11).
pub fn written_by_moot(text: &str) -> bool {
    let head: String = text.chars().take(4096).collect();
    [
        "**Debate:** DEB-",
        "**Debate ID:** DEB-",
        "A moot debate (DEB-",
    ]
    .iter()
    .any(|mark| head.contains(mark))
        || text.contains(&format!("{RECEIPT_MARK} moot debate `"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn who_started_a_debate_reads_back_as_written_and_a_bad_agent_is_refused() {
        for text in ["person", "stdin", "server", "bench", "agent:ci-bot_2.1"] {
            let parsed: Initiator = text.parse().unwrap();
            assert_eq!(parsed.to_string(), text);
            let json = serde_json::to_string(&parsed).unwrap();
            assert_eq!(serde_json::from_str::<Initiator>(&json).unwrap(), parsed);
        }
        assert!(
            "robot"
                .parse::<Initiator>()
                .unwrap_err()
                .to_string()
                .contains("agent:NAME")
        );
        assert!(Initiator::parse_agent("person").is_err());
        assert!(Initiator::parse_agent("agent:ci").is_ok());
        assert!("agent:".parse::<Initiator>().is_err());
        assert!("agent:a b".parse::<Initiator>().is_err());
        assert!(
            format!("agent:{}", "x".repeat(65))
                .parse::<Initiator>()
                .is_err()
        );
    }

    #[test]
    fn the_consensus_score_is_kept_in_0_to_1_and_the_line_says_everything() {
        let concluded = Concluded::new(
            Resolution {
                winner: Some("PRO".into()),
                method: "concession".into(),
                final_consensus_score: 1.7,
            },
            Confidence::High,
        );
        assert_eq!(concluded.final_consensus_score, 1.0);
        assert_eq!(
            concluded.line(Some(&Initiator::Stdin)),
            "**Result:** winner PRO · method concession · confidence High · final consensus score 1.00 · initiated by stdin"
        );
        let nan = Concluded::new(
            Resolution {
                winner: None,
                method: "draw".into(),
                final_consensus_score: f64::NAN,
            },
            Confidence::Low,
        );
        assert_eq!(nan.final_consensus_score, 0.0);
        assert!(
            nan.line(None).contains("winner none · method draw")
                && nan.line(None).contains("(not recorded)")
        );
    }
}
