//! Domain types shared by every layer: debates, seats, turns, moves, events, controls, syntheses.

mod event;
mod model;
mod synthesis;

pub use event::{Control, Convergence, ConvergenceSignal, Event, FlagKind};
pub use model::{
    Act, Debate, DebateStatus, MODERATOR, Move, Phase, Protocol, Relation, Round, Seat, Turn,
    TurnKey, TurnStatus, new_debate_id, now_rfc3339, today,
};
pub use synthesis::{Confidence, PerspectiveSummary, Synthesis};
