//! moot's product of Q8_0 weights and one to four Q8_0 columns (a step of up to four sequences):
//! each block of weights is loaded and unsigned once for all of the step's columns, and each
//! column's sum is its own chain.
//!
//! ggml's own `vec_dot` computes one row and one column at a time into a single accumulator,
//! so a block waits on the previous block's multiply-add, and a step of three sequences
//! repeats every weight block's work three times. Why and what it measured: moot's
//! ARCHITECTURE.md ("The embedded model").
//!
//! A crate of its own so that it is compiled optimized in every profile: unoptimized, its
//! intrinsics are calls, and a test debate on the embedded model ran past its turn time.

use std::ops::Range;

/// Values in a Q8_0 block.
pub const QUANTS: usize = 32;

/// One block of a Q8_0 row as ggml lays it out (`block_q8_0`): an IEEE half-precision scale
/// and 32 signed values.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Block {
    pub scale: u16,
    pub quants: [i8; QUANTS],
}

const _: () = assert!(std::mem::size_of::<Block>() == 34);

/// The most columns a product may have here; ggml or tinyBLAS take wider ones.
pub const MOST_COLUMNS: usize = 4;
/// The most blocks a row may have (8,192 values), so the columns' scales fit on the stack.
pub const MOST_BLOCKS: usize = 256;

/// One product's operands, with strides in blocks (and the output's in floats) as llama.cpp
/// passes them: row `r` of the weights starts at `weights + r * weight_stride`, column `c` at
/// `columns + c * column_stride`, and its result for row `r` goes to `out[c * out_stride + r]`.
pub struct Product {
    pub weights: *const Block,
    pub weight_stride: usize,
    pub columns: *const Block,
    pub column_stride: usize,
    pub column_count: usize,
    pub blocks: usize,
    pub out: *mut f32,
    pub out_stride: usize,
}

/// Whether this build can compute a product of `column_count` columns of `blocks` blocks.
pub fn takes(column_count: usize, blocks: usize) -> bool {
    avx2::BUILT && (1..=MOST_COLUMNS).contains(&column_count) && (1..=MOST_BLOCKS).contains(&blocks)
}

/// Computes `rows` of the product (each of llama.cpp's threads computes its own share).
///
/// # Safety
/// `takes(product.column_count, product.blocks)` holds, and the pointers and strides describe
/// readable weights for every row in `rows`, readable columns and writable output.
pub unsafe fn multiply(product: &Product, rows: Range<usize>) {
    // SAFETY: the caller's promise, passed on.
    unsafe { avx2::multiply(product, rows) }
}

/// The rows of `0..rows` that thread `thread` of `threads` computes: an even share, so that
/// the threads' ranges cover every row once.
pub fn share(rows: usize, thread: usize, threads: usize) -> Range<usize> {
    let threads = threads.max(1);
    rows * thread / threads..rows * (thread + 1) / threads
}

#[cfg(all(
    target_arch = "x86_64",
    target_feature = "avx2",
    target_feature = "fma",
    target_feature = "f16c"
))]
mod avx2 {
    //! The kernel in AVX2 (with AVX-512 VNNI's byte dot product where the build has it). The
    //! build enables these features for the whole program (`target-cpu=native`), which is
    //! what makes the intrinsics below sound to call.

    use super::{MOST_BLOCKS, MOST_COLUMNS, Product};
    use std::arch::x86_64::*;
    use std::ops::Range;

    /// Whether this build has the kernel.
    pub(super) const BUILT: bool = true;

    #[inline(always)]
    unsafe fn half_to_float(half: u16) -> f32 {
        // SAFETY: F16C is enabled for the build (see the module's comment).
        unsafe { _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(i32::from(half)))) }
    }

    /// The eight partial sums of `unsigned · signed` over 32 byte pairs.
    #[inline(always)]
    unsafe fn dot(unsigned: __m256i, signed: __m256i) -> __m256i {
        // SAFETY: the features named are enabled for the build.
        unsafe {
            #[cfg(all(target_feature = "avx512vnni", target_feature = "avx512vl"))]
            {
                _mm256_dpbusd_epi32(_mm256_setzero_si256(), unsigned, signed)
            }
            #[cfg(not(all(target_feature = "avx512vnni", target_feature = "avx512vl")))]
            {
                // Q8_0 values lie in -127..=127, so no pair of products saturates 16 bits.
                _mm256_madd_epi16(_mm256_maddubs_epi16(unsigned, signed), _mm256_set1_epi16(1))
            }
        }
    }

    #[inline(always)]
    unsafe fn sum(lanes: __m256) -> f32 {
        // SAFETY: AVX is enabled for the build.
        unsafe {
            let half = _mm_add_ps(
                _mm256_castps256_ps128(lanes),
                _mm256_extractf128_ps(lanes, 1),
            );
            let quarter = _mm_add_ps(half, _mm_movehl_ps(half, half));
            _mm_cvtss_f32(_mm_add_ss(quarter, _mm_movehdup_ps(quarter)))
        }
    }

    pub(super) unsafe fn multiply(product: &Product, rows: Range<usize>) {
        // Each block's column scales, side by side.
        let mut scales = [[0.0f32; MOST_COLUMNS]; MOST_BLOCKS];
        for (block, scales) in scales.iter_mut().enumerate().take(product.blocks) {
            for (column, scale) in scales.iter_mut().enumerate().take(product.column_count) {
                // SAFETY: column and block are within the product the caller described.
                *scale = unsafe {
                    half_to_float(
                        (*product.columns.add(column * product.column_stride + block)).scale,
                    )
                };
            }
        }
        // SAFETY (every call below): rows stay within `rows`, columns within the product.
        unsafe {
            match product.column_count {
                1 => rows_of::<1>(product, &scales, rows),
                2 => rows_of::<2>(product, &scales, rows),
                3 => rows_of::<3>(product, &scales, rows),
                _ => rows_of::<4>(product, &scales, rows),
            }
        }
    }

    /// `rows` of `N` columns, a row at a time: the weights are read in the order they lie in
    /// memory (tiles of two or four rows read them as interleaved streams, and a step of one
    /// sequence, bound by reading the weights, ran at 0.6 × ggml's speed).
    #[inline(always)]
    unsafe fn rows_of<const N: usize>(
        product: &Product,
        scales: &[[f32; MOST_COLUMNS]; MOST_BLOCKS],
        rows: Range<usize>,
    ) {
        // SAFETY: the rows, columns and blocks read are the caller's, each block's 32 values
        // are 32 readable bytes, and the features used are enabled for the build.
        unsafe {
            for row in rows {
                let mut sums = [_mm256_setzero_ps(); N];
                let weights = product.weights.add(row * product.weight_stride);
                for (block, column_scales) in scales.iter().enumerate().take(product.blocks) {
                    let weight = &*weights.add(block);
                    let values = _mm256_loadu_si256(weight.quants.as_ptr() as *const __m256i);
                    let unsigned = _mm256_sign_epi8(values, values);
                    let weight_scale = _mm256_set1_ps(half_to_float(weight.scale));
                    for (c, sum) in sums.iter_mut().enumerate() {
                        let column = &*product.columns.add(c * product.column_stride + block);
                        let column_values =
                            _mm256_loadu_si256(column.quants.as_ptr() as *const __m256i);
                        // The weight's sign moves to the column's value, so that the product
                        // of unsigned and signed bytes is the product of the two signed ones.
                        let signed = _mm256_sign_epi8(column_values, values);
                        let partial = _mm256_cvtepi32_ps(dot(unsigned, signed));
                        let scale = _mm256_mul_ps(weight_scale, _mm256_set1_ps(column_scales[c]));
                        *sum = _mm256_fmadd_ps(partial, scale, *sum);
                    }
                }
                for (c, lanes) in sums.iter().enumerate() {
                    *product.out.add(c * product.out_stride + row) = self::sum(*lanes);
                }
            }
        }
    }
}

#[cfg(not(all(
    target_arch = "x86_64",
    target_feature = "avx2",
    target_feature = "fma",
    target_feature = "f16c"
)))]
mod avx2 {
    //! A build without AVX2: `takes` refuses every product, so llama.cpp's kernels take them.

    use super::Product;
    use std::ops::Range;

    pub(super) const BUILT: bool = false;

    pub(super) unsafe fn multiply(_: &Product, _: Range<usize>) {
        unreachable!("`takes` refuses every product on this build");
    }
}
