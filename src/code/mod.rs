//! What code debates (design note 004) stand on: hooks that run tests and linters in a work
//! tree, safely.

pub mod hooks;
