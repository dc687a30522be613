//! moot's domain: the vocabulary every layer speaks (debates, seats, turns, moves, events,
//! syntheses), the views derived from a debate's turns (commitment stores, the argument graph
//! and its scores), the vote counts, the perspective catalog, and text made safe to print and
//! keep. No I/O, no runtime: pure types and functions, depended on by every other crate.

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod argue;
pub mod catalog;
pub mod debate;
pub mod sanitize;
pub mod spelling;
pub mod vote;
