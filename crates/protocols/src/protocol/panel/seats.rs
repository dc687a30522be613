//! The judges at a panel's table: each seat, its judge and what it has said so far.

use super::settings::Judge;
use crate::debate::Seat;

/// A judge at the table.
pub(super) struct Seated {
    pub(super) seat: Seat,
    pub(super) judge: Judge,
    /// The key its words are filed under in the result: `risk`.
    pub(super) key: String,
    /// Its latest valid recommendation and one-line perspective.
    pub(super) recommended: Option<String>,
    pub(super) perspective: String,
    pub(super) reasoning: String,
    /// Options in the order this judge sees them.
    pub(super) order: Vec<String>,
    /// Every option, best first, and how sure it is (0–1), when `--vote` asks for a ranking.
    pub(super) ranking: Vec<String>,
    pub(super) confidence: f64,
    /// Whether its evaluation of the options (round 1, every option assessed) was read.
    pub(super) evaluated: bool,
    /// The round of its latest reply when that reply could not be read and an earlier
    /// recommendation stands for it.
    pub(super) unread: Option<u32>,
}
