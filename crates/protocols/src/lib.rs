//! The debate protocols moot ships (`protocol`: moderated perspectives, the judges' panel, the
//! persuasion dialogue, the arena and code debates, each a folder over the engine's seam, and
//! `protocol::builtin()`, the one list of them), with the machinery they stand on: the arena
//! directory (`arena`), code debates' work trees, hooks and versions (`code`), and the shared
//! context gathered from a directory (`gather`).

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

// The crates below, under the names the modules here use.
use moot_domain::{argue, catalog, debate, sanitize, spelling, vote};
use moot_engine::engine;
#[cfg(test)]
use moot_llm as llm;
use moot_os::beneath;

pub mod arena;
pub mod code;
pub mod gather;
pub mod protocol;
