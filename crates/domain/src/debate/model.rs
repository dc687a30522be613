//! The journaled records: a debate, its seats, and the turns spoken in it.

use serde::{Deserialize, Serialize};

/// The seat name the moderator speaks under in the journal.
pub const MODERATOR: &str = "moderator";

/// The provider of a seat a person plays, and of an outside agent's seat.
pub const PERSON: &str = "person";
pub const OUTSIDE: &str = "outside";

super::vocabulary! {
    /// Where a debate is in its life. `Interrupted` is never stored: it is how a `running` debate
    /// reads once no live process holds its lease (the process died or was killed).
    #[derive(Default)]
    pub enum DebateStatus {
        Pending,
        #[default]
        Running,
        Paused,
        Completed,
        Failed,
        Cancelled,
        Interrupted,
    }
}

impl DebateStatus {
    /// A debate in one of these states can be picked up again with `moot resume`.
    pub fn is_resumable(self) -> bool {
        matches!(
            self,
            DebateStatus::Pending
                | DebateStatus::Paused
                | DebateStatus::Failed
                | DebateStatus::Interrupted
        )
    }

    /// No process works on it any more.
    pub fn is_finished(self) -> bool {
        !matches!(self, DebateStatus::Pending | DebateStatus::Running)
    }

    /// It ended, however: completed, failed or cancelled (not paused, not interrupted). Its
    /// row then has a finish time, and its event stream ends.
    pub fn has_ended(self) -> bool {
        matches!(
            self,
            DebateStatus::Completed | DebateStatus::Failed | DebateStatus::Cancelled
        )
    }

    /// Over and done: completed, cancelled (nothing left to resume).
    pub fn is_finished_for_good(self) -> bool {
        matches!(self, DebateStatus::Completed | DebateStatus::Cancelled)
    }

    /// How a listing introduces where the debate stands: "running", "paused", "stopped".
    pub fn stopped(self) -> &'static str {
        match self {
            DebateStatus::Running | DebateStatus::Pending => "now",
            DebateStatus::Paused => "paused",
            _ => "stopped",
        }
    }
}

/// One debate as stored in the journal.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Debate {
    pub id: String,
    pub question: String,
    /// The name of the protocol that runs it (`moot protocols` lists them).
    pub protocol: String,
    pub status: DebateStatus,
    /// The settings the debate was started with, so a resume runs the same debate.
    pub config: serde_json::Value,
    pub seats: Vec<Seat>,
    pub created_at: String,
    pub updated_at: String,
    pub finished_at: Option<String>,
    pub confidence: Option<super::Confidence>,
    pub error: Option<String>,
    /// Where it stands (or stopped): in round 2, at the checkpoint of round 2, synthesising.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<super::Stage>,
}

impl Debate {
    /// How it stands now, as its row says, in events: its error, if any, then its status as
    /// a closing event (for a viewer that reads a debate no event of the journal closed).
    pub fn ending(&self) -> Vec<super::Event> {
        let error = self.error.as_ref().map(|message| super::Event::Error {
            message: message.clone(),
        });
        error
            .into_iter()
            .chain([super::Event::DebateCompleted {
                id: self.id.clone(),
                status: self.status,
            }])
            .collect()
    }
}

/// A debater's place at the table: the perspective it argues from.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Seat {
    /// Short label used in move ids and prompts: "A", "B", "C", "D".
    pub id: String,
    pub perspective: String,
    pub priorities: Vec<String>,
    pub trade_offs: String,
    /// The position the seat is asked to push for, in a sentence.
    pub stance: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

impl Seat {
    /// Seat `id` arguing for `perspective`, its priorities and trade-off made up, for tests.
    #[cfg(any(test, feature = "fixtures"))]
    pub fn fixture(id: &str, perspective: &str) -> Seat {
        Seat {
            id: id.into(),
            perspective: perspective.into(),
            priorities: vec!["latency".into()],
            trade_offs: "complexity for speed".into(),
            stance: String::new(),
            provider: None,
            model: None,
        }
    }
}

super::vocabulary! {
    /// The step of a round a turn belongs to.
    #[derive(Hash, PartialOrd, Ord)]
    pub enum Phase {
        Analysis,
        Clarification,
        Pose,
        Argument,
        Rebuttal,
        Evaluation,
        Synthesis,
        /// The moderator's synthesis rewritten once to address the person's revision request.
        Revision,
        /// The moderator proposes the options a panel judges.
        Options,
        /// A judge's independent recommendation (the panel's first round).
        Recommendation,
        /// A judge challenges the others and defends or revises (the panel's later rounds).
        Challenge,
        /// The moderator condenses what was gathered from the codebase into shared facts K.
        Context,
        /// A side's opening move of a formal dialogue (round 0).
        Opening,
        /// A side's final statement of a formal dialogue: concessions and retractions.
        Closing,
        /// The moderator's verdict on a formal dialogue, after the computed one.
        Verdict,
        /// A seat ranks the positions on the table (a closing vote).
        Vote,
        /// The moderator's summary of a round for seats that see only that (a star topology).
        Digest,
        /// After the debate, the moderator writes what it teaches the next ones (lessons).
        Reflection,
        /// A tree's planning: the root's sub-questions, or a lead's proposal (round 0).
        Plan,
        /// A code debate's version (its round is the version's number).
        Proposal,
        /// A critic's comments on a version of code.
        Critique,
        /// The red team's attacks on a version of code.
        Attack,
        /// A generator's draft tested against its own tests before the debate sees it.
        SelfCheck,
        /// A reviewer weighs the critiques of a version: which must be answered.
        Review,
        /// A version of code answering the critics and the review.
        Optimization,
        /// The blue team's patch against the red team's attacks.
        Defence,
        /// What moot itself ran on a version (its commit, the hooks' results) or did at the
        /// end (applying the winner): recorded like a turn so a resume never runs it again.
        Tool,
        /// The moderator's ruling on a round of a formal dialogue: arguments struck as weak,
        /// moves that attack the speaker rather than the argument (its `data` is a `Ruling`).
        Ruling,
        /// A retraction the rules impose on a side of a formal dialogue that left a `why`
        /// unanswered past its grace (`[dialogue] why_grace`); recorded by moot, not spoken.
        Lapse,
    }
}

impl Phase {
    /// Debater phases carry moves; moderator phases carry a structured reply in `data`.
    pub fn is_debater(self) -> bool {
        matches!(
            self,
            Phase::Argument | Phase::Rebuttal | Phase::Opening | Phase::Closing | Phase::Lapse
        )
    }

    /// Moderator phases that come before any round (reading the question, gathering facts).
    pub fn is_preamble(self) -> bool {
        matches!(self, Phase::Analysis | Phase::Context)
    }

    /// Phases that close a debate rather than belong to one of its rounds.
    pub fn is_closing(self) -> bool {
        matches!(self, Phase::Synthesis | Phase::Revision | Phase::Verdict)
    }
}

/// Identifies a turn within a debate; resume looks recorded turns up by it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TurnKey {
    pub round: u32,
    pub phase: Phase,
    pub seat: String,
}

impl TurnKey {
    pub fn new(round: u32, phase: Phase, seat: impl Into<String>) -> Self {
        TurnKey {
            round,
            phase,
            seat: seat.into(),
        }
    }
}

super::vocabulary! {
    /// How a turn ended.
    pub enum TurnStatus {
        Ok,
        TimedOut,
        Failed,
        /// The reply could not be parsed even after a repair request: prose kept, no moves.
        Fallback,
        /// The reply passed its byte cap (`[limits] reply_bytes`); what came before the cap
        /// is kept and the debate goes on.
        Truncated,
    }
}

impl TurnStatus {
    /// Whether the turn produced something the debate can use.
    pub fn spoke(self) -> bool {
        matches!(
            self,
            TurnStatus::Ok | TurnStatus::Fallback | TurnStatus::Truncated
        )
    }
}

/// One thing said by one seat (or the moderator) in one phase of one round.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Turn {
    pub round: u32,
    pub phase: Phase,
    pub seat: String,
    /// Markdown prose as the model wrote it (unsanitized; sanitize where printed).
    pub content: String,
    pub moves: Vec<Move>,
    pub confidence: Option<f64>,
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// True when the provider reported no usage and the counts are estimates.
    pub tokens_estimated: bool,
    pub latency_ms: u64,
    pub provider: String,
    pub model: String,
    pub status: TurnStatus,
    /// The validated structured reply of a moderator turn (analysis, evaluation, synthesis).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
    /// Why a turn failed, timed out or fell back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Turn {
    /// An ok turn with no text, moves or cost yet, for `key` spoken through this provider.
    pub fn pending(key: TurnKey, provider: &str, model: &str) -> Turn {
        Turn {
            round: key.round,
            phase: key.phase,
            seat: key.seat,
            content: String::new(),
            moves: Vec::new(),
            confidence: None,
            tokens_in: 0,
            tokens_out: 0,
            tokens_estimated: false,
            latency_ms: 0,
            provider: provider.to_string(),
            model: model.to_string(),
            status: TurnStatus::Ok,
            data: None,
            note: None,
        }
    }

    /// A finished, ok turn with no text or moves, for tests to fill in.
    #[cfg(any(test, feature = "fixtures"))]
    pub fn fixture(seat: &str, round: u32, phase: Phase) -> Turn {
        Turn::pending(TurnKey::new(round, phase, seat), "test", "test")
    }

    pub fn key(&self) -> TurnKey {
        TurnKey::new(self.round, self.phase, self.seat.clone())
    }
}

super::vocabulary! {
    /// A speech act of the persuasion dialogue.
    #[derive(Hash)]
    pub enum Act {
        Claim,
        Why,
        Concede,
        Retract,
        Since,
    }
}

super::vocabulary! {
    /// How an answering move relates to the argument it answers.
    #[derive(Hash)]
    pub enum Relation {
        Support,
        Rebut,
        Undercut,
    }
}

/// One speech act within a turn, with a debate-wide id assigned by moot (never by the model).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Move {
    pub id: String,
    pub act: Act,
    /// The proposition φ.
    pub text: String,
    /// The reasons S of `φ since S`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub premises: Vec<String>,
    /// Ids of the arguments this move answers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answers: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relation: Option<Relation>,
}

/// A round's turns grouped for display and export; derived from the journal, never stored.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Round {
    pub number: u32,
    pub turns: Vec<Turn>,
    /// How the human answered the checkpoint after this round, if one was asked.
    pub checkpoint: Option<super::Control>,
}

impl Round {
    /// Groups the turns of rounds 1.. (not the analysis or synthesis) with their checkpoints.
    pub fn group(turns: &[Turn], checkpoints: &[(u32, super::Control)]) -> Vec<Round> {
        let mut rounds: Vec<Round> = Vec::new();
        for turn in turns
            .iter()
            .filter(|t| !t.phase.is_preamble() && !t.phase.is_closing())
        {
            match rounds.last_mut() {
                Some(round) if round.number == turn.round => round.turns.push(turn.clone()),
                _ => rounds.push(Round {
                    number: turn.round,
                    turns: vec![turn.clone()],
                    checkpoint: checkpoints
                        .iter()
                        .find(|(number, _)| *number == turn.round)
                        .map(|(_, control)| control.clone()),
                }),
            }
        }
        rounds
    }

    /// The guidance given at this round's checkpoint.
    pub fn guidance(&self) -> Option<&str> {
        self.checkpoint.as_ref().and_then(|c| c.guidance())
    }
}

/// A fresh debate id: `DEB-` and eight lowercase base-32 characters.
pub fn new_debate_id() -> String {
    const ALPHABET: &[u8] = b"abcdefghijkmnpqrstuvwxyz23456789";
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        bytes = (nanos as u64).to_le_bytes();
    }
    let tail: String = bytes
        .iter()
        .map(|b| ALPHABET[(*b as usize) % ALPHABET.len()] as char)
        .collect();
    format!("DEB-{tail}")
}

/// The current UTC time as RFC 3339, the format every stored timestamp uses.
pub fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc();
    now.replace_nanosecond(0)
        .unwrap_or(now)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".to_string())
}

/// Today's UTC date as YYYY-MM-DD.
pub fn today() -> String {
    let now = time::OffsetDateTime::now_utc();
    format!(
        "{:04}-{:02}-{:02}",
        now.year(),
        u8::from(now.month()),
        now.day()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::debate::Control;

    fn turn(round: u32, phase: Phase) -> Turn {
        Turn::fixture("A", round, phase)
    }

    #[test]
    fn rounds_group_turns_and_carry_their_checkpoint() {
        let turns = vec![
            turn(0, Phase::Analysis),
            turn(1, Phase::Pose),
            turn(1, Phase::Argument),
            turn(2, Phase::Pose),
            turn(2, Phase::Synthesis),
        ];
        let rounds = Round::group(&turns, &[(1, Control::Guide("focus".into()))]);
        assert_eq!(rounds.len(), 2);
        assert_eq!(rounds[0].number, 1);
        assert_eq!(rounds[0].turns.len(), 2);
        assert_eq!(rounds[0].guidance(), Some("focus"));
        assert_eq!(rounds[1].turns.len(), 1);
        assert_eq!(rounds[1].checkpoint, None);
    }

    #[test]
    fn debate_ids_have_the_documented_shape() {
        let id = new_debate_id();
        assert!(id.starts_with("DEB-") && id.len() == 12, "{id}");
        assert_ne!(new_debate_id(), id);
    }
}
