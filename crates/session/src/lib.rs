//! The session layer: one debate assembled from a `DebateRequest` and the config (`session`,
//! `config`), its seats' providers built from profiles (`providers`), the lessons it is given
//! (`lessons`), its events on a socket for viewers (`live`) and as NDJSON (`headless`), and
//! debates read back from the journal (`replay`, `report`, `diagram`, `audit`) or from a
//! server's API (`remote`). It runs whatever protocol the `Registry` it is handed holds, and
//! knows nothing of screens or the command line.

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

// The crates below, under the names the modules here use.
use moot_domain::{argue, catalog, debate, sanitize, vote};
use moot_engine::{decision, engine};
use moot_journal::store;
use moot_llm as llm;
use moot_os::{place, signals};
// The protocol seam; in unit tests, with the protocols moot ships beside it (`builtin()`),
// which the session itself never names.
#[cfg(not(test))]
use moot_engine::protocol;
#[cfg(test)]
use moot_protocols::protocol;

pub mod audit;
pub mod config;
pub mod diagram;
pub mod headless;
pub mod lessons;
pub mod live;
pub mod providers;
pub mod remote;
pub mod replay;
pub mod report;
pub mod session;
