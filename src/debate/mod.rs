//! Domain types shared by every layer: debates, seats, turns, moves, events, controls, syntheses.

mod event;
mod model;
mod synthesis;

/// A vocabulary enum's name as the journal and the wire spell it (its serde and strum names
/// agree), and back.
pub trait Named: Copy + Into<&'static str> + std::str::FromStr {
    fn as_str(self) -> &'static str {
        self.into()
    }

    fn parse(text: &str) -> Option<Self> {
        text.parse().ok()
    }
}

pub use event::{
    Answer, AskKind, Assessment, Control, Convergence, ConvergenceSignal, Decision, Event,
    FlagKind, Stage,
};
pub use model::{
    Act, Debate, DebateStatus, MODERATOR, Move, Phase, Protocol, Relation, Round, Seat, Turn,
    TurnKey, TurnStatus, new_debate_id, now_rfc3339, today,
};
pub use synthesis::{Approval, ApprovalStatus, Confidence, PerspectiveSummary, Synthesis};
