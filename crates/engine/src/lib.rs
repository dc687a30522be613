//! The engine every protocol runs on: the `Context` a protocol speaks, asks and journals
//! through (`engine`), the protocol seam and what every protocol builds on (`protocol`: the
//! `Protocol` trait, the `Registry`, `kit`, `moves`, `tree`), and the decision record a debate
//! closes with (`decision`). It names no protocol and knows nothing of screens or the command
//! line.

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

// The crates below, under the names the modules here use.
use moot_domain::{argue, catalog, debate, sanitize, vote};
use moot_journal::store;
use moot_llm as llm;
use moot_os::place;

pub mod decision;
pub mod engine;
pub mod protocol;
