//! The full-screen workbench: a fold of engine events into a view (`state`), the app that
//! reacts to keys (`app`, `keymap`), drawing (`views`, `theme`, `wrap`), and the terminal loop
//! (`run`). It speaks to the engine only through `Event` and `Control`.

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

// The crates below, under the names the modules here use.
use moot_domain::{argue, debate, sanitize};
use moot_journal::store;
use moot_os::{beneath, fatal, signals};
use moot_session::{config, providers, remote, replay, session};

pub mod app;
mod browse;
pub mod history;
pub mod keymap;
pub mod markdown;
mod outside;
pub mod run;
pub mod state;
pub mod theme;
pub mod views;
pub mod wrap;
