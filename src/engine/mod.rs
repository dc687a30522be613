//! The machinery every protocol stands on: speaking through providers with retries, repair and
//! journaling (`context`), debater moves (`moves`), and per-seat guardrails (`guardrails`).
//! The engine knows nothing of screens and nothing of which protocol runs.

pub mod context;
pub mod guardrails;
pub mod moves;

pub use context::{
    CheckpointOutcome, Context, EngineError, EngineSettings, Replay, ReplyKind, Seating, Speech,
    Validator,
};
