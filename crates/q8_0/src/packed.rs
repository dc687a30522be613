//! Weights packed eight rows side by side, and the product over them: with AVX-512
//! VNNI, one `vpdpbusd` multiplies four values of eight rows by the same four values of a
//! column, so a block's product lands in eight lanes, one row each, and is scaled and summed
//! in floats once for eight rows rather than once for each.
//!
//! Laid out as ggml keeps them, a row's block leaves its sum spread over eight lanes, and each
//! (row, block, column) pays a conversion, a scale and a multiply-add on all eight: in a step
//! of three sequences, three instructions of every four after the byte product. The packed
//! copy costs as much memory as the weights it copies, so only weights that never change are
//! packed (the caller's choice), once.

use super::{Block, MOST_BLOCKS, MOST_COLUMNS, Product};
use std::ops::Range;
use std::ptr::NonNull;
use std::sync::Arc;

/// Rows packed side by side.
pub const ROWS: usize = 8;

/// One block of eight rows: each row's values four at a time, row by row within each four
/// (`quants[k][r]` holds values `4k..4k + 4` of row `r`), moved up by 128 so that they are the
/// unsigned operand of the byte product. Their scales are kept apart, as ggml's halves, so
/// that the packed copy is no larger than the weights and every load is aligned.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Tile {
    quants: [[u32; ROWS]; 8],
}

/// A matrix of Q8_0 weights packed for `multiply_packed`: its rows in groups of eight, each
/// group's blocks in order, in memory of its own or the caller's (`new_in`).
pub struct Packed {
    tiles: NonNull<Tile>,
    /// Each tile's eight scales, in IEEE half precision.
    scales: NonNull<[u16; ROWS]>,
    rows: usize,
    blocks: usize,
    /// What the copy's memory belongs to, kept as long as the copy.
    _memory: Arc<dyn Send + Sync>,
}

// SAFETY: the copy is written once, while it is made, and only read after; its memory lives as
// long as `_memory`, which the copy holds.
unsafe impl Send for Packed {}
// SAFETY: as above.
unsafe impl Sync for Packed {}

/// How a packed copy's memory must be aligned (a tile is a cache line).
pub const ALIGNMENT: usize = std::mem::align_of::<Tile>();

impl Packed {
    /// Whether this CPU runs the packed kernel (it needs AVX-512 VNNI and VL).
    pub fn built() -> bool {
        crate::level() == crate::Level::Vnni
    }

    /// Bytes a packed copy of `rows` rows of `blocks` blocks takes, or `None` where this CPU
    /// runs no packed kernel or the matrix does not suit it (rows not a multiple of eight, rows
    /// longer than `MOST_BLOCKS` blocks).
    pub fn bytes_for(rows: usize, blocks: usize) -> Option<usize> {
        if !Self::built()
            || rows == 0
            || !rows.is_multiple_of(ROWS)
            || !(1..=MOST_BLOCKS).contains(&blocks)
        {
            return None;
        }
        let tiles = rows / ROWS * blocks;
        Some(tiles * (std::mem::size_of::<Tile>() + std::mem::size_of::<[u16; ROWS]>()))
    }

    /// Packs `rows` rows of `blocks` blocks, row `r` starting at `weights + r * stride`, into
    /// memory of its own, or `None` where `bytes_for` refuses the matrix.
    ///
    /// # Safety
    /// The rows described are readable.
    pub unsafe fn new(
        weights: *const Block,
        rows: usize,
        blocks: usize,
        stride: usize,
    ) -> Option<Packed> {
        // Tiles enough to hold the copy's tiles and their scales after them.
        let tiles = Self::bytes_for(rows, blocks)?.div_ceil(std::mem::size_of::<Tile>());
        let mut heap = vec![
            Tile {
                quants: [[0; ROWS]; 8]
            };
            tiles
        ];
        // The vector's own buffer, which moving the vector into its owner does not move.
        let memory = NonNull::new(heap.as_mut_ptr())?.cast::<u8>();
        // SAFETY: the caller's promise; the buffer is at least `bytes_for` bytes, aligned for
        // tiles, and owned by `heap`, which the copy keeps.
        unsafe { Self::new_in(weights, rows, blocks, stride, memory, Arc::new(heap)) }
    }

    /// Packs as `new` does, into `memory`, which `owner` keeps alive: the caller chooses where
    /// the copy lies (in memory of large pages, say, which a step that reads every weight
    /// crosses with fewer misses of the address cache).
    ///
    /// # Safety
    /// The rows described are readable; `memory` is aligned to `ALIGNMENT`, writable for
    /// `bytes_for(rows, blocks)` bytes, not used for anything else, and valid while `owner` is
    /// alive.
    pub unsafe fn new_in(
        weights: *const Block,
        rows: usize,
        blocks: usize,
        stride: usize,
        memory: NonNull<u8>,
        owner: Arc<dyn Send + Sync>,
    ) -> Option<Packed> {
        Self::bytes_for(rows, blocks)?;
        if stride < blocks || !(memory.as_ptr() as usize).is_multiple_of(ALIGNMENT) {
            return None;
        }
        let count = rows / ROWS * blocks;
        let tiles = memory.cast::<Tile>();
        // SAFETY: the scales follow the tiles within the caller's `bytes_for` bytes.
        let scales = unsafe { tiles.add(count) }.cast::<[u16; ROWS]>();
        for group in 0..rows / ROWS {
            for block in 0..blocks {
                let mut tile = Tile {
                    quants: [[0; ROWS]; 8],
                };
                let mut halves = [0; ROWS];
                for (row, half) in halves.iter_mut().enumerate() {
                    // SAFETY: within the rows the caller describes.
                    let source = unsafe { &*weights.add((group * ROWS + row) * stride + block) };
                    *half = source.scale;
                    for (four, values) in source.quants.chunks_exact(4).enumerate() {
                        let bytes = [values[0], values[1], values[2], values[3]].map(|v| v as u8);
                        tile.quants[four][row] = u32::from_le_bytes(bytes) ^ 0x8080_8080;
                    }
                }
                let at = group * blocks + block;
                // SAFETY: `at` is below `count`, within the caller's memory, which is aligned
                // for tiles (and so for the scales after them).
                unsafe {
                    tiles.add(at).write(tile);
                    scales.add(at).write(halves);
                }
            }
        }
        Some(Packed {
            tiles,
            scales,
            rows,
            blocks,
            _memory: owner,
        })
    }

    /// Where the copy starts, for a caller that checks where it was made.
    pub fn address(&self) -> usize {
        self.tiles.as_ptr() as usize
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn blocks(&self) -> usize {
        self.blocks
    }

    /// Groups of eight rows: what `multiply_packed` shares out.
    pub fn groups(&self) -> usize {
        self.rows / ROWS
    }

    /// Bytes the packed copy takes.
    pub fn bytes(&self) -> usize {
        Self::bytes_for(self.rows, self.blocks).unwrap_or(0)
    }
}

/// Computes the rows of `groups` (groups of eight rows) of the product of `packed` and the
/// product's columns (`product.weights` and `product.weight_stride` are not read). Any number of
/// columns, `MOST_COLUMNS` at a time: a prompt's hundreds of columns read the weights of
/// `groups` from memory once, and from cache for every four columns after the first.
///
/// # Safety
/// `packed` came from `Packed::new`, the product's columns (one or more) have `packed.blocks()`
/// readable blocks each, its output is writable for every row of `groups` and every column,
/// and `groups` lies within `0..packed.groups()`.
pub unsafe fn multiply_packed(packed: &Packed, product: &Product, groups: Range<usize>) {
    debug_assert!(product.column_count >= 1);
    debug_assert!(groups.end <= packed.groups());
    let mut first = 0;
    while first < product.column_count {
        let count = (product.column_count - first).min(MOST_COLUMNS);
        // SAFETY: columns `first..first + count` and their outputs lie within the caller's
        // product.
        let part = unsafe {
            Product {
                columns: product.columns.add(first * product.column_stride),
                column_count: count,
                out: product.out.add(first * product.out_stride),
                ..*product
            }
        };
        // SAFETY: the caller's promise, for `count` (at most `MOST_COLUMNS`) of its columns.
        unsafe { kernel::multiply(packed, &part, groups.clone()) };
        first += count;
    }
}

#[cfg(target_arch = "x86_64")]
mod kernel {
    //! AVX2 with AVX-512 VNNI and VL, which `multiply` enables (`#[target_feature]`) and
    //! `Packed::built` checks the CPU has before any copy is made.

    use super::{Block, MOST_BLOCKS, MOST_COLUMNS, Packed, Product, ROWS, Tile};
    use crate::row::half_to_float;
    use std::arch::x86_64::*;
    use std::mem::MaybeUninit;
    use std::ops::Range;

    /// What each column block adds besides its values' products: the weights were moved up by
    /// 128, so every product owes 128 × the column block's sum back; and the block's scale.
    struct Columns {
        owed: [[MaybeUninit<i32>; MOST_COLUMNS]; MOST_BLOCKS],
        scales: [[MaybeUninit<f32>; MOST_COLUMNS]; MOST_BLOCKS],
        starts: [*const Block; MOST_COLUMNS],
    }

    /// # Safety
    /// As `multiply_packed`'s, on a CPU with AVX2, FMA, F16C and AVX-512F, VNNI and VL.
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vnni,avx512vl")]
    pub(super) unsafe fn multiply(packed: &Packed, product: &Product, groups: Range<usize>) {
        let mut columns = Columns {
            owed: [[MaybeUninit::uninit(); MOST_COLUMNS]; MOST_BLOCKS],
            scales: [[MaybeUninit::uninit(); MOST_COLUMNS]; MOST_BLOCKS],
            starts: [std::ptr::null(); MOST_COLUMNS],
        };
        for column in 0..product.column_count {
            // SAFETY: the column lies within the product the caller described.
            let start = unsafe { product.columns.add(column * product.column_stride) };
            columns.starts[column] = start;
            for block in 0..packed.blocks {
                // SAFETY: as above, for each of the column's blocks.
                let source = unsafe { &*start.add(block) };
                let sum: i32 = source.quants.iter().map(|&v| i32::from(v)).sum();
                columns.owed[block][column].write(-128 * sum);
                // SAFETY: F16C is enabled here.
                columns.scales[block][column].write(unsafe { half_to_float(source.scale) });
            }
        }
        // SAFETY (every call below): the groups are the caller's, within the packed rows, and
        // the first `blocks` of each of the `N` columns are written above.
        unsafe {
            match product.column_count {
                1 => groups_of::<1>(packed, product, &columns, groups),
                2 => groups_of::<2>(packed, product, &columns, groups),
                3 => groups_of::<3>(packed, product, &columns, groups),
                _ => groups_of::<4>(packed, product, &columns, groups),
            }
        }
    }

    #[inline(always)]
    unsafe fn groups_of<const N: usize>(
        packed: &Packed,
        product: &Product,
        columns: &Columns,
        groups: Range<usize>,
    ) {
        // SAFETY: tiles are read within the packed matrix, columns within their `blocks`
        // blocks (each 32 values, read four at a time), and the output within the rows of
        // `groups`; the features used are enabled by `multiply`, which this is inlined into.
        unsafe {
            for group in groups {
                let tiles: *const Tile = packed.tiles.as_ptr().add(group * packed.blocks);
                let halves: *const [u16; ROWS] = packed.scales.as_ptr().add(group * packed.blocks);
                let mut sums = [_mm256_setzero_ps(); N];
                for block in 0..packed.blocks {
                    let tile = &*tiles.add(block);
                    let weights: [__m256i; 8] = std::array::from_fn(|four| {
                        _mm256_load_si256(tile.quants[four].as_ptr() as *const __m256i)
                    });
                    let weight_scales =
                        _mm256_cvtph_ps(_mm_loadu_si128(halves.add(block) as *const __m128i));
                    for (c, sum) in sums.iter_mut().enumerate() {
                        let values = (*columns.starts[c].add(block)).quants.as_ptr() as *const i32;
                        let mut dot = _mm256_set1_epi32(columns.owed[block][c].assume_init());
                        for (four, weights) in weights.iter().enumerate() {
                            let column = _mm256_set1_epi32(values.add(four).read_unaligned());
                            dot = _mm256_dpbusd_epi32(dot, *weights, column);
                        }
                        let scale = _mm256_mul_ps(
                            weight_scales,
                            _mm256_set1_ps(columns.scales[block][c].assume_init()),
                        );
                        *sum = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), scale, *sum);
                    }
                }
                for (c, sum) in sums.iter().enumerate() {
                    _mm256_storeu_ps(product.out.add(c * product.out_stride + group * ROWS), *sum);
                }
            }
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod kernel {
    //! Not x86-64: `Packed::new` packs nothing, and llama.cpp takes every product.

    use super::{Packed, Product};
    use std::ops::Range;

    pub(super) unsafe fn multiply(_: &Packed, _: &Product, _: Range<usize>) {
        unreachable!("`Packed::new` packs nothing on this CPU");
    }
}
