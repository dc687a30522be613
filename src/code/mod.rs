//! What code debates (design note 004) stand on: the debate's own work tree, and hooks that
//! run tests and linters in it, safely.

pub mod hooks;
pub mod worktree;
