//! moot: a terminal workbench for structured debates between LLM agents.
//!
//! Imports point one way, down: `cli`/`headless` → `session` → `protocol` → `engine` →
//! `store` / `argue` / `llm` → `debate` (the domain types). See ARCHITECTURE.md.

// A panic is never how moot reports a problem: outside tests, an unwrap or expect is refused
// at compile time (errors carry what went wrong and how to fix it instead).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod arena;
pub mod argue;
pub mod audit;
pub mod bench;
pub mod beneath;
pub mod catalog;
pub mod cli;
pub mod code;
pub mod commands;
pub mod config;
pub mod debate;
pub mod decision;
pub mod diagram;
pub mod engine;
pub mod gather;
pub mod headless;
pub mod launch;
pub mod lessons;
pub mod live;
pub mod llm;
pub mod paths;
pub mod protocol;
pub mod providers;
pub mod remote;
pub mod replay;
pub mod report;
pub mod sanitize;
pub mod serve;
pub mod session;
pub mod signals;
pub mod store;
pub mod tui;
pub mod vote;
