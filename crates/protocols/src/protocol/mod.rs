//! The protocols moot ships, over the engine's protocol seam: each folder is one protocol
//! implementing `Protocol` (the seam, the `Registry` and what every protocol builds on are
//! `moot-engine`'s, re-exported here under the same names), and `builtin` lists them.

pub use moot_engine::protocol::*;

pub mod arena;
mod builtin;
pub mod code;
pub mod dialogue;
pub mod moderated;
pub mod panel;

pub use builtin::builtin;
