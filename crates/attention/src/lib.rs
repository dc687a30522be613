//! moot's attention for a decoding step or a prompt: the query rows that share a key head (its
//! query heads, for each token) against that head's cached keys and values (F16 or Q8_0), in
//! three passes over the cells a block of rows sees: every row's scores, their softmax, and
//! the values they weigh.
//!
//! llama.cpp's CPU kernel for a step walks the cells one at a time for each query row: a call
//! for each key's dot product, an `expf` and a multiply-add of the value into an F16 sum, and
//! every query head reads its key head's cells again. Here each cell's key and value is
//! loaded once for a block of rows, the exponentials are computed sixteen cells at a time,
//! and the sums are kept in F32. Why and what it measured: moot's ARCHITECTURE.md ("The
//! embedded model").
//!
//! A crate of its own so that it is compiled optimized in every profile, as `moot-q8-0` is.
//! It is compiled for AVX-512F, FMA and F16C (`#[target_feature]`) whatever the build's
//! target, and taken only on a CPU that has them (`available`, found at run time). Where it is
//! not, llama.cpp computes attention as products, and `values` takes the one over F16 values
//! on AVX2.

pub mod reference;
pub mod values;

/// One key head's attention for a step: its query rows, each with its mask row and the output
/// row it writes, against `cells` cells of keys and values.
pub struct Group<'a> {
    /// Each row's `dim` query values.
    pub queries: &'a [*const f32],
    /// Each row's mask, one F16 value a cell added to its scores (negative infinity hides a
    /// cell); null for no mask.
    pub masks: &'a [*const u16],
    /// Where each row's `dim` values go.
    pub outputs: &'a [*mut f32],
    /// The first cell's key (`dim` values in `key_format`); cell `c`'s is `key_stride` bytes
    /// after cell `c - 1`'s.
    pub keys: *const u8,
    pub key_stride: usize,
    pub key_format: Format,
    /// The first cell's value (`dim` values in `value_format`), the same way.
    pub values: *const u8,
    pub value_stride: usize,
    pub value_format: Format,
    pub cells: usize,
    /// Values in a query, a key, a value and an output row.
    pub dim: usize,
    /// What a key's dot product with a query is multiplied by before its mask is added.
    pub scale: f32,
}

/// How a cache stores a key's or a value's numbers, as ggml lays them out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// IEEE half precision.
    F16,
    /// Blocks of 32: a half-precision scale, then 32 signed bytes it multiplies (34 bytes).
    Q8_0,
}

/// The variable that turns moot's attention kernels off (`off`), for a test or a comparison.
pub const VARIABLE: &str = "MOOT_ATTENTION_KERNEL";

/// Whether this CPU runs the kernel (x86-64 with AVX-512F, FMA and F16C), found once, and
/// `MOOT_ATTENTION_KERNEL` does not turn it off.
pub fn available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    found_once(&AVAILABLE, || {
        #[cfg(target_arch = "x86_64")]
        {
            std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("fma")
                && std::arch::is_x86_feature_detected!("f16c")
        }
        #[cfg(not(target_arch = "x86_64"))]
        false
    })
}

/// Whether a kernel runs here: what `detected` says of this CPU, asked once and kept in
/// `cell`, unless `MOOT_ATTENTION_KERNEL=off`.
fn found_once(cell: &std::sync::OnceLock<bool>, detected: fn() -> bool) -> bool {
    *cell.get_or_init(|| std::env::var(VARIABLE).as_deref() != Ok("off") && detected())
}

/// Whether this CPU computes attention over heads of `dim` values here (heads of 64 or 128
/// values, where `available`).
pub fn takes(dim: usize) -> bool {
    available() && matches!(dim, 64 | 128)
}

/// Computes the group's output rows; `scores` is the caller's scratch space, grown as needed.
///
/// # Safety
/// `takes(group.dim)` holds; `queries`, `masks` and `outputs` have the same length; every
/// query row holds `dim` readable floats, every non-null mask row `cells` readable F16 values
/// and every output row `dim` writable floats that no query, key, value or mask overlaps; and
/// `cells` keys and values lie readable at their strides.
pub unsafe fn attend(group: &Group, scores: &mut Vec<f32>) {
    // SAFETY: the caller's promise, passed on.
    unsafe { kernel::attend(group, scores) }
}

// Every function here that is not inlined into another enables AVX-512F, FMA and F16C;
// `takes` admits a call only on a CPU that has them.
#[cfg(target_arch = "x86_64")]
mod kernel {
    use super::{Format, Group};
    use std::arch::x86_64::*;

    /// Negative infinity as an F16 value: a cell the mask hides.
    const HIDDEN: u16 = 0xFC00;

    /// How many cells from the start any row can see: those after the last cell every row's mask
    /// hides (the cache's padding, cells of no sequence, a prompt's later tokens) are not read.
    ///
    /// # Safety
    /// As `attend`'s.
    #[target_feature(enable = "avx512f,fma,f16c")]
    unsafe fn seen_cells(group: &Group) -> usize {
        if group.masks.iter().any(|mask| mask.is_null()) {
            return group.cells;
        }
        let mut seen = 0;
        // The last rows first: a prompt's later tokens see the most, and each row after only
        // looks past what the rows before it saw.
        for mask in group.masks.iter().rev() {
            let mut end = group.cells;
            while end > seen {
                // Four cells at a time where four are left to look at.
                if end - seen >= 4 {
                    // SAFETY: the mask holds `cells` values, and `end - 4 >= seen >= 0`.
                    let four = unsafe { (mask.add(end - 4) as *const [u16; 4]).read_unaligned() };
                    if four == [HIDDEN; 4] {
                        end -= 4;
                        continue;
                    }
                }
                // SAFETY: as above, `end - 1 >= seen >= 0`.
                if unsafe { *mask.add(end - 1) } != HIDDEN {
                    seen = end;
                    break;
                }
                end -= 1;
            }
        }
        seen
    }

    /// Cells a vector holds.
    const LANES: usize = 16;

    /// Rows computed together: their scores (a row's a float a cell) stay in a core's cache
    /// between the passes, and the cells' keys and values are read once for them all. A
    /// prompt's rows come a block at a time, each block reading only the cells its rows see.
    const BLOCK_ROWS: usize = 48;

    #[target_feature(enable = "avx512f,fma,f16c")]
    pub(super) unsafe fn attend(group: &Group, scores: &mut Vec<f32>) {
        use Format::{F16, Q8_0};
        // SAFETY: the caller's promise; `takes` admits only these sizes.
        unsafe {
            match (group.dim, group.key_format, group.value_format) {
                (64, F16, F16) => attend_sized::<4, Half, Half>(group, scores),
                (64, F16, Q8_0) => attend_sized::<4, Half, Blocks>(group, scores),
                (64, Q8_0, F16) => attend_sized::<4, Blocks, Half>(group, scores),
                (64, Q8_0, Q8_0) => attend_sized::<4, Blocks, Blocks>(group, scores),
                (_, F16, F16) => attend_sized::<8, Half, Half>(group, scores),
                (_, F16, Q8_0) => attend_sized::<8, Half, Blocks>(group, scores),
                (_, Q8_0, F16) => attend_sized::<8, Blocks, Half>(group, scores),
                (_, Q8_0, Q8_0) => attend_sized::<8, Blocks, Blocks>(group, scores),
            }
        }
    }

    /// How a format's `16 * D` numbers at a pointer are read as floats.
    trait Load {
        /// # Safety
        /// The numbers lie readable at `at`.
        unsafe fn load<const D: usize>(at: *const u8) -> [__m512; D];
    }

    /// IEEE half precision.
    struct Half;

    impl Load for Half {
        #[inline(always)]
        unsafe fn load<const D: usize>(at: *const u8) -> [__m512; D] {
            // SAFETY: the caller's promise.
            std::array::from_fn(|part| unsafe { halves((at as *const u16).add(part * 16)) })
        }
    }

    /// Q8_0 blocks: two vectors a block.
    struct Blocks;

    impl Load for Blocks {
        #[inline(always)]
        unsafe fn load<const D: usize>(at: *const u8) -> [__m512; D] {
            // SAFETY: the caller's promise: `D / 2` blocks of 34 bytes.
            std::array::from_fn(|part| unsafe {
                let block = at.add(part / 2 * 34);
                let scale = (block as *const u16).read_unaligned();
                let scale =
                    _mm512_set1_ps(_mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(scale as i32))));
                let quants = _mm_loadu_si128(block.add(2 + part % 2 * 16) as *const __m128i);
                _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(quants)), scale)
            })
        }
    }

    /// `attend` for heads of `D` vectors (`16 * D` values), a block of rows at a time.
    #[target_feature(enable = "avx512f,fma,f16c")]
    unsafe fn attend_sized<const D: usize, K: Load, V: Load>(group: &Group, scores: &mut Vec<f32>) {
        let rows = group.queries.len();
        for first in (0..rows).step_by(BLOCK_ROWS) {
            let end = (first + BLOCK_ROWS).min(rows);
            let block = Group {
                queries: &group.queries[first..end],
                masks: &group.masks[first..end],
                outputs: &group.outputs[first..end],
                ..*group
            };
            // SAFETY: the caller's promise holds for every part of its rows.
            unsafe { attend_block::<D, K, V>(&block, scores) };
        }
    }

    /// `attend_sized` for a block of rows.
    #[target_feature(enable = "avx512f,fma,f16c")]
    unsafe fn attend_block<const D: usize, K: Load, V: Load>(group: &Group, scores: &mut Vec<f32>) {
        let rows = group.queries.len();
        // SAFETY: the caller's promise.
        let cells = unsafe { seen_cells(group) };
        let stride = cells.next_multiple_of(LANES);
        // Grown, never cleared: the passes write every score they read (the softmax each
        // row's whole stride).
        if scores.len() < rows * stride {
            scores.resize(rows * stride, 0.0);
        }
        let mut sums = [0.0f32; BLOCK_ROWS];
        // SAFETY: below, every pointer is the caller's, read within its promised length, and
        // `scores` holds `rows * stride` floats.
        unsafe {
            let mut row = 0;
            while row < rows {
                let count = (rows - row).min(4);
                match count {
                    1 => score_tile::<D, 1, K>(group, row, cells, stride, scores),
                    2 => score_tile::<D, 2, K>(group, row, cells, stride, scores),
                    3 => score_tile::<D, 3, K>(group, row, cells, stride, scores),
                    _ => score_tile::<D, 4, K>(group, row, cells, stride, scores),
                }
                row += count;
            }
            for (row, sum) in sums.iter_mut().enumerate().take(rows) {
                let scores = &mut scores[row * stride..(row + 1) * stride];
                *sum = softmax(scores, group.masks[row], cells, group.scale);
            }
            // Accumulators for as many rows as leave registers for a cell's value.
            let most = 24 / D;
            let mut row = 0;
            while row < rows {
                let count = (rows - row).min(most);
                match count {
                    1 => weigh_tile::<D, 1, V>(group, row, cells, stride, scores, &sums),
                    2 => weigh_tile::<D, 2, V>(group, row, cells, stride, scores, &sums),
                    3 => weigh_tile::<D, 3, V>(group, row, cells, stride, scores, &sums),
                    4 => weigh_tile::<D, 4, V>(group, row, cells, stride, scores, &sums),
                    5 => weigh_tile::<D, 5, V>(group, row, cells, stride, scores, &sums),
                    _ => weigh_tile::<D, 6, V>(group, row, cells, stride, scores, &sums),
                }
                row += count;
            }
        }
    }

    /// Sixteen F16 values at `at`, as floats.
    #[inline(always)]
    unsafe fn halves(at: *const u16) -> __m512 {
        // SAFETY: the caller reads within its rows.
        unsafe { _mm512_cvtph_ps(_mm256_loadu_si256(at as *const __m256i)) }
    }

    /// The dot products of rows `first..first + R` with every seen cell's key, into `scores`.
    #[target_feature(enable = "avx512f,fma,f16c")]
    unsafe fn score_tile<const D: usize, const R: usize, K: Load>(
        group: &Group,
        first: usize,
        cells: usize,
        stride: usize,
        scores: &mut [f32],
    ) {
        // SAFETY: as `attend_sized`'s.
        unsafe {
            let queries: [[__m512; D]; R] = std::array::from_fn(|row| {
                let query = group.queries[first + row];
                std::array::from_fn(|part| _mm512_loadu_ps(query.add(part * 16)))
            });
            let out = scores.as_mut_ptr().add(first * stride);
            let mut key = group.keys;
            for cell in 0..cells {
                let parts: [__m512; D] = K::load(key);
                let mut sums = [_mm512_setzero_ps(); 4];
                for row in 0..R {
                    let mut sum = _mm512_mul_ps(parts[0], queries[row][0]);
                    for part in 1..D {
                        sum = _mm512_fmadd_ps(parts[part], queries[row][part], sum);
                    }
                    sums[row] = sum;
                }
                let mut lanes = [0.0f32; 4];
                _mm_storeu_ps(lanes.as_mut_ptr(), sum_each(sums));
                for (row, lane) in lanes.iter().enumerate().take(R) {
                    *out.add(row * stride + cell) = *lane;
                }
                key = key.add(group.key_stride);
            }
        }
    }

    /// The sum of each of four vectors, in the lanes of one.
    #[inline(always)]
    unsafe fn sum_each(v: [__m512; 4]) -> __m128 {
        // SAFETY: register operations only.
        unsafe {
            // Within each 128-bit lane: [a0+a2, b0+b2, a1+a3, b1+b3].
            let ab = _mm512_add_ps(
                _mm512_unpacklo_ps(v[0], v[1]),
                _mm512_unpackhi_ps(v[0], v[1]),
            );
            let cd = _mm512_add_ps(
                _mm512_unpacklo_ps(v[2], v[3]),
                _mm512_unpackhi_ps(v[2], v[3]),
            );
            // Within each 128-bit lane: [a, b, c, d], each a quarter of its sum.
            let lo = _mm512_castpd_ps(_mm512_unpacklo_pd(
                _mm512_castps_pd(ab),
                _mm512_castps_pd(cd),
            ));
            let hi = _mm512_castpd_ps(_mm512_unpackhi_pd(
                _mm512_castps_pd(ab),
                _mm512_castps_pd(cd),
            ));
            let quarters = _mm512_add_ps(lo, hi);
            let halves = _mm256_add_ps(
                _mm512_castps512_ps256(quarters),
                _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(quarters))),
            );
            _mm_add_ps(
                _mm256_castps256_ps128(halves),
                _mm256_extractf128_ps::<1>(halves),
            )
        }
    }

    /// Turns a row's dot products into its softmax's numerators in place (scaled, masked,
    /// less their largest, exponentiated), zero past `cells`; returns their sum (zero when
    /// the mask hides every cell).
    #[target_feature(enable = "avx512f,fma,f16c")]
    unsafe fn softmax(scores: &mut [f32], mask: *const u16, cells: usize, scale: f32) -> f32 {
        // SAFETY: `scores` holds a multiple of 16 floats; the mask holds `cells` values.
        unsafe {
            let hidden = _mm512_set1_ps(f32::NEG_INFINITY);
            let scale = _mm512_set1_ps(scale);
            let mut largest = hidden;
            for start in (0..scores.len()).step_by(LANES) {
                let at = scores.as_mut_ptr().add(start);
                let seen = cells.saturating_sub(start).min(LANES);
                let valid: __mmask16 = if seen == LANES {
                    u16::MAX
                } else {
                    (1u16 << seen) - 1
                };
                let mut score = _mm512_mul_ps(_mm512_loadu_ps(at), scale);
                if !mask.is_null() {
                    let added = if seen == LANES {
                        halves(mask.add(start))
                    } else {
                        let mut tail = [HIDDEN; LANES];
                        tail[..seen]
                            .copy_from_slice(std::slice::from_raw_parts(mask.add(start), seen));
                        halves(tail.as_ptr())
                    };
                    score = _mm512_add_ps(score, added);
                }
                score = _mm512_mask_blend_ps(valid, hidden, score);
                _mm512_storeu_ps(at, score);
                largest = _mm512_max_ps(largest, score);
            }
            let largest = _mm512_reduce_max_ps(largest);
            if largest == f32::NEG_INFINITY {
                scores.fill(0.0);
                return 0.0;
            }
            let largest = _mm512_set1_ps(largest);
            let mut sum = _mm512_setzero_ps();
            for start in (0..scores.len()).step_by(LANES) {
                let at = scores.as_mut_ptr().add(start);
                let weight = exp(_mm512_sub_ps(_mm512_loadu_ps(at), largest));
                _mm512_storeu_ps(at, weight);
                sum = _mm512_add_ps(sum, weight);
            }
            _mm512_reduce_add_ps(sum)
        }
    }

    /// e to the power of each lane, within a few units in the last place for the arguments a
    /// softmax has (zero and below); negative infinity gives zero.
    #[inline(always)]
    unsafe fn exp(x: __m512) -> __m512 {
        // SAFETY: register operations only.
        unsafe {
            // Below e^-104 a float is zero.
            let x = _mm512_max_ps(x, _mm512_set1_ps(-104.0));
            let t = _mm512_mul_ps(x, _mm512_set1_ps(std::f32::consts::LOG2_E));
            let whole =
                _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(t);
            let f = _mm512_sub_ps(t, whole);
            // 2^f for f in [-1/2, 1/2]: its Taylor series to the seventh power.
            let mut p = _mm512_set1_ps(1.525_273_4e-5);
            for c in [
                1.540_353e-4,
                1.333_355_8e-3,
                9.618_129e-3,
                5.550_411e-2,
                0.240_226_5,
                std::f32::consts::LN_2,
                1.0,
            ] {
                p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(c));
            }
            _mm512_scalef_ps(p, whole)
        }
    }

    /// Rows `first..first + R`'s outputs: each seen cell's value weighed by the row's
    /// numerator, over the row's sum.
    #[target_feature(enable = "avx512f,fma,f16c")]
    unsafe fn weigh_tile<const D: usize, const R: usize, V: Load>(
        group: &Group,
        first: usize,
        cells: usize,
        stride: usize,
        scores: &[f32],
        sums: &[f32],
    ) {
        // SAFETY: as `attend_sized`'s.
        unsafe {
            let mut totals = [[_mm512_setzero_ps(); D]; R];
            let weights = scores.as_ptr().add(first * stride);
            let mut value = group.values;
            for cell in 0..cells {
                let parts: [__m512; D] = V::load(value);
                for (row, total) in totals.iter_mut().enumerate() {
                    let weight = _mm512_set1_ps(*weights.add(row * stride + cell));
                    for part in 0..D {
                        total[part] = _mm512_fmadd_ps(parts[part], weight, total[part]);
                    }
                }
                value = value.add(group.value_stride);
            }
            for (row, total) in totals.iter().enumerate() {
                let sum = sums[first + row];
                let inverse = _mm512_set1_ps(if sum > 0.0 { 1.0 / sum } else { 0.0 });
                let out = group.outputs[first + row];
                for (part, total) in total.iter().enumerate() {
                    _mm512_storeu_ps(out.add(part * 16), _mm512_mul_ps(*total, inverse));
                }
            }
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod kernel {
    use super::Group;

    pub(super) unsafe fn attend(_group: &Group, _scores: &mut Vec<f32>) {}
}
