//! Debate protocols: the code that decides who speaks when, on top of the engine's context.
//! Only `moderated` exists so far; panel, dialogue and arena will sit beside it.

pub mod analysis;
pub mod moderated;
pub mod moderator;
pub mod prompts;
pub mod verdict;
