//! moot's own kernels over Q8_0 weights, from the `moot-q8-0` crate (`crates/q8_0`, optimized
//! in every profile, its reference tests its own): a step of up to four sequences, and a prompt
//! over the packed weights.

pub(super) use moot_q8_0::{
    Block, MOST_COLUMNS, Packed, Product, multiply, multiply_packed, share, takes,
};
