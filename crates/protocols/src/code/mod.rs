//! What code debates (design note 004) stand on: the debate's own work tree, hooks that run
//! tests and linters in it safely, and the versions with the rule that picks the winner.

pub mod apply;
pub mod blame;
pub mod detect;
pub mod git;
pub mod history;
pub mod hooks;
pub mod loops;
pub mod record;
pub mod reply;
pub mod roles;
/// The box hooks run in, from the OS crate (`crates/os`), where its `unsafe` is.
pub use moot_os::sandbox;
pub mod versions;
pub mod worktree;
