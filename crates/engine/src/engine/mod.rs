//! The machinery every protocol stands on: speaking through providers with retries, repair and
//! journaling (`context`), reply parsing (`reply`), and per-seat guardrails (`guardrails`).
//! The engine knows nothing of screens and nothing of which protocol runs.

pub mod context;
mod gates;
pub mod guardrails;
pub mod reply;

/// The hash the journal uses, for protocols that put what they did in the audit trail.
pub use crate::store::sha256_hex;
pub use crate::unusable;
pub use context::{
    AnswerCheck, CheckpointOutcome, Context, EngineError, EngineSettings, GateOutcome, Refusal,
    Replay, ReplyKind, Seating, Speech, Wiring,
};
pub use gates::GatesConfig;
pub use reply::{
    Checked, Reply, ReplyParser, ReplyShape, Transcript, Unusable, Validator, text_field,
};

use std::time::Duration;

/// The longest any time limit may be: a year. Longer ones are refused where they are typed
/// (flags, config) and capped where they are used (older stored settings), so no deadline can
/// overflow the clock.
pub const LONGEST_WAIT_SECONDS: u64 = 365 * 24 * 60 * 60;

/// A time limit of `seconds`, between one second and `LONGEST_WAIT_SECONDS`.
pub fn wait(seconds: u64) -> Duration {
    Duration::from_secs(seconds.clamp(1, LONGEST_WAIT_SECONDS))
}
