//! moot: a terminal workbench for structured debates between LLM agents.
//!
//! Imports point one way, down: `cli`/`headless` → `session` → `protocol` → `engine` →
//! `store` / `argue` / `llm` → `debate` (the domain types). See ARCHITECTURE.md.

// A panic is never how moot reports a problem: outside tests, an unwrap or expect is refused
// at compile time (errors carry what went wrong and how to fix it instead).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
// No `unsafe` here: what the operating system needs (paths opened beneath a directory, the
// hook box, the terminal restored on a fatal signal, the lease's locks) is `moot-os`'s, and
// the embedded model's FFI `moot-local`'s.
#![forbid(unsafe_code)]

/// The domain, from its own crate (`crates/domain`), under the names every module here uses.
pub use moot_domain::{argue, catalog, debate, sanitize, spelling, vote};
/// The engine, the protocol seam (under `protocol`, beside the protocols) and the decision
/// record, from their own crate (`crates/engine`).
pub use moot_engine::{decision, engine};
/// The journal, from its own crate (`crates/journal`).
pub use moot_journal::store;
/// What moot asks of the operating system, from its own crate (`crates/os`).
pub use moot_os::{beneath, fatal, paths, place, signals};
/// The protocols moot ships and their machinery, from their own crate (`crates/protocols`).
pub use moot_protocols::{arena, code, gather, protocol};
/// The session layer, from its own crate (`crates/session`).
pub use moot_session::{
    audit, config, diagram, headless, lessons, live, providers, remote, replay, report, session,
};

pub mod bench;
pub mod cli;
pub mod commands;
pub mod launch;
/// The providers, from their own crate (`crates/llm`), with the embedded model (`crates/local`,
/// the `local` feature) among them as `llm::local`.
pub mod llm {
    pub use moot_llm::*;
    #[cfg(feature = "local")]
    pub use moot_local as local;
}
/// `moot serve`, from its own crate (`crates/serve`).
pub use moot_serve as serve;
/// The workbench, from its own crate (`crates/tui`).
pub use moot_tui as tui;
