//! The event stream every face (TUI, headless NDJSON) folds over, and the controls sent back.

use super::model::{Move, Phase, Seat, TurnStatus};
use serde::{Deserialize, Serialize};

/// Something that happened in a debate. Turn events are emitted only after the turn is journaled.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The debate exists in the journal; seats are not assigned yet.
    DebateCreated {
        id: String,
        question: String,
        protocol: String,
        resumed: bool,
    },
    /// The moderator asks the human one clarifying question before assigning perspectives.
    ClarificationRequested {
        question: String,
    },
    /// Perspectives are assigned and the rounds are about to begin.
    DebateStarted {
        id: String,
        question: String,
        protocol: String,
        seats: Vec<Seat>,
        max_rounds: u32,
        provider: String,
        model: String,
    },
    RoundStarted {
        round: u32,
    },
    TurnStarted {
        round: u32,
        phase: Phase,
        seat: String,
    },
    /// A piece of prose as it streams (never raw JSON).
    TurnDelta {
        seat: String,
        round: u32,
        phase: Phase,
        text: String,
    },
    TurnCompleted {
        round: u32,
        phase: Phase,
        seat: String,
        content: String,
        moves: Vec<Move>,
        confidence: Option<f64>,
        tokens_in: u64,
        tokens_out: u64,
        tokens_estimated: bool,
        latency_ms: u64,
        provider: String,
        model: String,
        status: TurnStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
        /// True when the turn was served from the journal on resume.
        replayed: bool,
    },
    /// A provider call failed and will be tried again; streamed text of the attempt is void.
    Retry {
        seat: String,
        round: u32,
        phase: Phase,
        attempt: u32,
        reason: String,
        delay_ms: u64,
    },
    /// A guardrail noticed something about a seat.
    Flag {
        round: u32,
        seat: String,
        kind: FlagKind,
        detail: String,
    },
    /// Something the user should know that is not an error (a degraded endpoint, say).
    Notice {
        message: String,
    },
    RoundCompleted {
        round: u32,
        convergence: Convergence,
        summary: String,
    },
    /// The debate waits for a Control; `timeout_seconds` later it pauses.
    Checkpoint {
        round: u32,
        timeout_seconds: u64,
    },
    CheckpointAnswered {
        round: u32,
        decision: String,
        guidance: Option<String>,
    },
    Synthesis {
        markdown: String,
        confidence: String,
        path: Option<String>,
    },
    FollowUp {
        path: String,
    },
    DebateCompleted {
        id: String,
        status: String,
    },
    Error {
        message: String,
    },
}

impl super::model::Turn {
    /// The event announcing this turn, once it is journaled (or served from the journal).
    pub fn completed_event(&self, replayed: bool) -> Event {
        Event::TurnCompleted {
            round: self.round,
            phase: self.phase,
            seat: self.seat.clone(),
            content: self.content.clone(),
            moves: self.moves.clone(),
            confidence: self.confidence,
            tokens_in: self.tokens_in,
            tokens_out: self.tokens_out,
            tokens_estimated: self.tokens_estimated,
            latency_ms: self.latency_ms,
            provider: self.provider.clone(),
            model: self.model.clone(),
            status: self.status,
            note: self.note.clone(),
            replayed,
        }
    }
}

/// What a guardrail flagged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlagKind {
    Repetition,
    OffTopic,
    Muted,
    Budget,
    Dropped,
}

/// The moderator's judgement at the end of a round.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Convergence {
    /// converging | stagnating | new_ground
    pub assessment: String,
    /// continue | clarify | conclude
    pub decision: String,
    /// Why the debate ends, when it does.
    pub signal: ConvergenceSignal,
    pub reason: String,
}

/// The reason a debate stops arguing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConvergenceSignal {
    None,
    Agreement,
    Stagnation,
    ClearWinner,
    MaxRounds,
    HumanEnded,
    TimeLimit,
    NoSeatsLeft,
}

/// What the human (or the stdin script) answers at a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", content = "guidance", rename_all = "snake_case")]
pub enum Control {
    Continue,
    Guide(String),
    End,
}

impl Control {
    pub fn decision(&self) -> &'static str {
        match self {
            Control::Continue => "continue",
            Control::Guide(_) => "guide",
            Control::End => "end",
        }
    }

    pub fn guidance(&self) -> Option<&str> {
        match self {
            Control::Guide(text) => Some(text),
            _ => None,
        }
    }

    /// Parses a checkpoint answer line: `c`, `g TEXT`, `e` (or the words in full).
    pub fn parse_line(line: &str) -> Result<Control, String> {
        let line = line.trim();
        let (head, rest) = match line.split_once(char::is_whitespace) {
            Some((head, rest)) => (head, rest.trim()),
            None => (line, ""),
        };
        match head.to_ascii_lowercase().as_str() {
            "c" | "continue" if rest.is_empty() => Ok(Control::Continue),
            "e" | "end" if rest.is_empty() => Ok(Control::End),
            "g" | "guide" if !rest.is_empty() => Ok(Control::Guide(rest.to_string())),
            "g" | "guide" => Err("guidance needs text: `g Focus on our team's experience`".into()),
            _ => Err(format!(
                "unknown checkpoint answer {line:?}: use `c` (continue), `g TEXT` (guide) or `e` (end)"
            )),
        }
    }

    pub fn from_stored(decision: &str, guidance: Option<String>) -> Option<Control> {
        match decision {
            "continue" => Some(Control::Continue),
            "end" => Some(Control::End),
            "guide" => Some(Control::Guide(guidance.unwrap_or_default())),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoint_lines_parse() {
        assert_eq!(Control::parse_line("c"), Ok(Control::Continue));
        assert_eq!(Control::parse_line(" E "), Ok(Control::End));
        assert_eq!(
            Control::parse_line("g focus on  cost"),
            Ok(Control::Guide("focus on  cost".into()))
        );
        assert!(Control::parse_line("g").is_err());
        assert!(Control::parse_line("x").is_err());
        assert!(Control::parse_line("c now").is_err());
    }

    #[test]
    fn events_serialize_with_a_type_tag() {
        let event = Event::RoundStarted { round: 2 };
        let json = serde_json::to_string(&event).unwrap();
        assert_eq!(json, r#"{"type":"round_started","round":2}"#);
    }
}
