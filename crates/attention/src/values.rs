//! The attention's values weighed without flash attention (llama.cpp's `kqv` product where the
//! cache keeps F16 values, transposed): each output row is an F16 row of values (one value
//! head's number across the cells) against each column of F32 weights (a token's softmax over
//! the cells). On AVX2 with FMA and F16C, which the CPUs without this crate's AVX-512 kernel
//! mostly have; ggml's own kernel for it, in a build for x86-64-v2, converts every F16 number
//! through a table and took over half of a long prompt's time.

use std::ops::Range;

/// One product: row `r` of F16 numbers starts at `rows + r * row_stride`, column `c` of F32
/// numbers at `columns + c * column_stride` (both `length` long, strides in numbers), and the
/// result for row `r` and column `c` goes to `out[c * out_stride + r]`.
pub struct HalfProduct {
    pub rows: *const u16,
    pub row_stride: usize,
    pub columns: *const f32,
    pub column_stride: usize,
    pub column_count: usize,
    pub length: usize,
    pub out: *mut f32,
    pub out_stride: usize,
}

/// Whether this CPU runs `multiply` (x86-64 with AVX2, FMA and F16C), found once, and
/// `MOOT_ATTENTION_KERNEL` does not turn moot's attention kernels off.
pub fn available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    super::found_once(&AVAILABLE, || {
        #[cfg(target_arch = "x86_64")]
        {
            std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
                && std::arch::is_x86_feature_detected!("f16c")
        }
        #[cfg(not(target_arch = "x86_64"))]
        false
    })
}

/// Computes `rows` of the product, for every column.
///
/// # Safety
/// `available()` holds; every row in `rows` and every column holds `length` readable numbers at
/// the strides given, and the output is writable at `c * out_stride + r` for each of them,
/// overlapping no operand.
pub unsafe fn multiply(product: &HalfProduct, rows: Range<usize>) {
    // SAFETY: the caller's promise; `available` found the features on this CPU.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        kernel::multiply(product, rows)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (product, rows);
        unreachable!("`available` is false off x86-64")
    }
}

#[cfg(target_arch = "x86_64")]
mod kernel {
    use super::HalfProduct;
    use std::arch::x86_64::*;
    use std::ops::Range;

    /// Rows a tile computes at once: each row's eight numbers converted once for both columns.
    const TILE_ROWS: usize = 4;
    /// Columns a tile computes at once: with four rows, eight sums, four rows' numbers and a
    /// column's fit in the sixteen vector registers.
    const TILE_COLUMNS: usize = 2;

    #[inline(always)]
    unsafe fn sum(v: __m256) -> f32 {
        // SAFETY: inlined into a function that enables AVX.
        unsafe {
            let half = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
            let quarter = _mm_add_ps(half, _mm_movehl_ps(half, half));
            _mm_cvtss_f32(_mm_add_ss(quarter, _mm_movehdup_ps(quarter)))
        }
    }

    #[inline(always)]
    unsafe fn half_to_float(half: u16) -> f32 {
        // SAFETY: inlined into a function that enables F16C.
        unsafe { _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(i32::from(half)))) }
    }

    /// A tile of up to `TILE_ROWS` rows by up to `TILE_COLUMNS` columns, from `first_row` and
    /// `first_column`; `R` and `C` its actual size, so that each size is its own loop.
    // `r` and `c` are the tile's coordinates, for the sums and for the operands' addresses.
    #[allow(clippy::needless_range_loop)]
    #[inline(always)]
    unsafe fn tile<const R: usize, const C: usize>(
        product: &HalfProduct,
        first_row: usize,
        first_column: usize,
    ) {
        // SAFETY: inlined into `multiply`, whose caller vouches for every row and column read
        // and every output written here.
        unsafe {
            let row = |r: usize| product.rows.add((first_row + r) * product.row_stride);
            let column = |c: usize| {
                product
                    .columns
                    .add((first_column + c) * product.column_stride)
            };
            let mut sums = [[_mm256_setzero_ps(); C]; R];
            let whole = product.length / 8 * 8;
            let mut at = 0;
            while at < whole {
                let mut numbers = [_mm256_setzero_ps(); R];
                for (r, number) in numbers.iter_mut().enumerate() {
                    *number = _mm256_cvtph_ps(_mm_loadu_si128(row(r).add(at) as *const __m128i));
                }
                for c in 0..C {
                    let weights = _mm256_loadu_ps(column(c).add(at));
                    for r in 0..R {
                        sums[r][c] = _mm256_fmadd_ps(numbers[r], weights, sums[r][c]);
                    }
                }
                at += 8;
            }
            for r in 0..R {
                for c in 0..C {
                    let mut total = sum(sums[r][c]);
                    for i in whole..product.length {
                        total += half_to_float(*row(r).add(i)) * *column(c).add(i);
                    }
                    *product
                        .out
                        .add((first_column + c) * product.out_stride + first_row + r) = total;
                }
            }
        }
    }

    /// # Safety
    /// As `super::multiply`'s.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn multiply(product: &HalfProduct, rows: Range<usize>) {
        // SAFETY: the caller's promise covers every tile, each within `rows` and the columns.
        unsafe {
            let mut first_column = 0;
            while first_column < product.column_count {
                let columns = (product.column_count - first_column).min(TILE_COLUMNS);
                let mut first_row = rows.start;
                while first_row < rows.end {
                    let tile_rows = (rows.end - first_row).min(TILE_ROWS);
                    match (tile_rows, columns) {
                        (4, 2) => tile::<4, 2>(product, first_row, first_column),
                        (4, _) => tile::<4, 1>(product, first_row, first_column),
                        (3, 2) => tile::<3, 2>(product, first_row, first_column),
                        (3, _) => tile::<3, 1>(product, first_row, first_column),
                        (2, 2) => tile::<2, 2>(product, first_row, first_column),
                        (2, _) => tile::<2, 1>(product, first_row, first_column),
                        (_, 2) => tile::<1, 2>(product, first_row, first_column),
                        _ => tile::<1, 1>(product, first_row, first_column),
                    }
                    first_row += tile_rows;
                }
                first_column += columns;
            }
        }
    }
}
