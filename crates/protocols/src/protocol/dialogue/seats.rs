//! Who sits at a dialogue: the two sides, each a seat with its persona.

use super::Persona;
use super::rules::Side;
use crate::debate::Seat;

/// One side at the table.
pub(super) struct Speaker {
    pub(super) side: Side,
    pub(super) seat: Seat,
    pub(super) persona: Persona,
}
