//! moot's product of Q8_0 weights and one to four Q8_0 columns (a step of up to four sequences):
//! each block of weights is loaded once for all of the step's columns, and each column's sum is
//! its own chain.
//!
//! ggml's own `vec_dot` computes one row and one column at a time into a single accumulator,
//! so a block waits on the previous block's multiply-add, and a step of three sequences
//! repeats every weight block's work three times. Why and what it measured: moot's
//! ARCHITECTURE.md ("The embedded model").
//!
//! `packed` computes the same product over weights packed eight rows side by side, for a step,
//! or a prompt's many columns four at a time, over weights that never change.
//!
//! A crate of its own so that it is compiled optimized in every profile: unoptimized, its
//! intrinsics are calls, and a test debate on the embedded model ran past its turn time.
//!
//! The build assumes nothing of the CPU (no `target-cpu`): each kernel is compiled for its own
//! features (`#[target_feature]`) and chosen at run time by what this CPU has (`level`), so one
//! binary runs on any x86-64 CPU and uses AVX2 or AVX-512 VNNI where they are.

use std::ops::Range;

mod packed;

pub use packed::{ALIGNMENT as PACKED_ALIGNMENT, Packed, ROWS as PACKED_ROWS, multiply_packed};

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

/// The most columns a product of the row kernel may have (ggml or tinyBLAS take wider ones),
/// and the most the packed kernel computes at once.
pub const MOST_COLUMNS: usize = 4;
/// The most blocks a row may have (8,192 values), so that a product's columns fit in a table
/// on the stack.
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

/// Which of the kernels this CPU runs, best last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// None: llama.cpp's own kernels take every product.
    Portable,
    /// The row kernel (AVX2, FMA, F16C).
    Avx2,
    /// The row kernel's byte dot product in one instruction, and the packed kernel (AVX-512F,
    /// VNNI and VL besides).
    Vnni,
}

/// The variable that lowers the level (`portable` or `avx2`), for a test or a comparison; it
/// never raises it past what the CPU has.
pub const LEVEL_VARIABLE: &str = "MOOT_Q8_0_KERNEL";

/// What this CPU runs, found once: its features as the CPU and the kernel report them, lowered
/// by `MOOT_Q8_0_KERNEL` where that is set.
pub fn level() -> Level {
    static LEVEL: std::sync::OnceLock<Level> = std::sync::OnceLock::new();
    *LEVEL.get_or_init(|| {
        let found = detected();
        match std::env::var(LEVEL_VARIABLE).as_deref() {
            Ok("portable") => Level::Portable,
            Ok("avx2") => found.min(Level::Avx2),
            _ => found,
        }
    })
}

#[cfg(target_arch = "x86_64")]
fn detected() -> Level {
    let avx2 = std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("fma")
        && std::arch::is_x86_feature_detected!("f16c");
    let vnni = std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512vnni")
        && std::arch::is_x86_feature_detected!("avx512vl");
    match (avx2, vnni) {
        (true, true) => Level::Vnni,
        (true, false) => Level::Avx2,
        _ => Level::Portable,
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn detected() -> Level {
    Level::Portable
}

/// For a test of the kernel of `level`: whether it runs on this CPU, said on stderr; where it
/// does not, a failure, unless `MOOT_KERNEL_TESTS=skip-missing` says to skip it (said too), so
/// a suite never passes a kernel it did not run.
pub fn tested_here(level: Level) -> bool {
    let features = match level {
        Level::Avx2 => "AVX2, FMA and F16C",
        Level::Vnni => "AVX2, FMA, F16C and AVX-512F, VNNI and VL",
        Level::Portable => return true,
    };
    if self::level() >= level {
        eprintln!("kernel tested: q8_0 {level:?} ({features})");
        return true;
    }
    let skip = std::env::var("MOOT_KERNEL_TESTS").as_deref() == Ok("skip-missing");
    assert!(
        skip,
        "this CPU cannot run the q8_0 {level:?} kernel (it needs {features}); set \
         MOOT_KERNEL_TESTS=skip-missing to skip it"
    );
    eprintln!(
        "kernel NOT tested: q8_0 {level:?}: this CPU lacks some of {features} (MOOT_KERNEL_TESTS=skip-missing)"
    );
    false
}

/// Whether this CPU computes a product of `column_count` columns of `blocks` blocks here.
pub fn takes(column_count: usize, blocks: usize) -> bool {
    level() >= Level::Avx2
        && (1..=MOST_COLUMNS).contains(&column_count)
        && (1..=MOST_BLOCKS).contains(&blocks)
}

/// Computes `rows` of the product (each of llama.cpp's threads computes its own share).
///
/// # Safety
/// `takes(product.column_count, product.blocks)` holds, and the pointers and strides describe
/// readable weights for every row in `rows`, readable columns and writable output.
pub unsafe fn multiply(product: &Product, rows: Range<usize>) {
    // SAFETY: the caller's promise, passed on; `takes` found the level's features on this CPU.
    unsafe { run(level(), product, rows) }
}

/// `multiply` with the kernel of `at` (a test or a comparison runs each level the CPU has).
///
/// # Safety
/// As `multiply`'s, and `Level::Avx2 <= at <= level()`.
pub unsafe fn multiply_at(at: Level, product: &Product, rows: Range<usize>) {
    assert!(
        at <= detected() && at >= Level::Avx2,
        "the row kernel at {at:?} on a CPU that runs {:?}",
        detected()
    );
    // SAFETY: the caller's promise, passed on; the CPU has the level's features.
    unsafe { run(at, product, rows) }
}

/// The row kernel of `at`.
///
/// # Safety
/// As `multiply`'s, and this CPU has `at`'s features.
unsafe fn run(at: Level, product: &Product, rows: Range<usize>) {
    // SAFETY: the caller's promise, passed on.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        match at {
            Level::Vnni => row::multiply_vnni(product, rows),
            Level::Avx2 => row::multiply_avx2(product, rows),
            Level::Portable => unreachable!("no row kernel is portable"),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (at, product, rows);
        unreachable!("no row kernel is portable")
    }
}

/// The rows of `0..rows` that thread `thread` of `threads` computes: an even share, so that
/// the threads' ranges cover every row once.
pub fn share(rows: usize, thread: usize, threads: usize) -> Range<usize> {
    let threads = threads.max(1);
    rows * thread / threads..rows * (thread + 1) / threads
}

#[cfg(target_arch = "x86_64")]
mod row {
    //! The row kernel, compiled twice: for AVX2 (with FMA and F16C), and for AVX-512 VNNI's
    //! byte dot product besides. Each entry point enables its features (`#[target_feature]`);
    //! the helpers below are inlined into it, so their intrinsics run with those features, and
    //! `level` calls an entry only on a CPU that has them.

    use super::{MOST_BLOCKS, MOST_COLUMNS, Product};
    use std::arch::x86_64::*;
    use std::mem::MaybeUninit;
    use std::ops::Range;

    #[inline(always)]
    pub(crate) unsafe fn half_to_float(half: u16) -> f32 {
        // SAFETY: inlined into functions that enable F16C.
        unsafe { _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(i32::from(half)))) }
    }

    /// How a column block's values meet a block of weights.
    trait Dot {
        /// A column block's values as kept for the row loop.
        unsafe fn prepare(values: __m256i) -> __m256i;
        /// What every column's dot product with `weights` starts from.
        unsafe fn start(weights: __m256i) -> __m256i;
        /// The eight partial sums of one column block's product with `weights`.
        unsafe fn column(start: __m256i, weights: __m256i, prepared: __m256i) -> __m256i;
    }

    /// With VNNI, each column's values are moved up by 128 once per product (unsigned, as
    /// `vpdpbusd` wants its first operand), and each weight block pays 128 × its sum back
    /// once for all columns: a column then costs one instruction where it cost two (the
    /// weight's sign moved onto it, then the dot product).
    struct Vnni;

    impl Dot for Vnni {
        #[inline(always)]
        unsafe fn prepare(values: __m256i) -> __m256i {
            // SAFETY: inlined into `multiply_vnni`, which enables AVX2.
            unsafe { _mm256_xor_si256(values, _mm256_set1_epi8(i8::MIN)) }
        }

        #[inline(always)]
        unsafe fn start(weights: __m256i) -> __m256i {
            // SAFETY: inlined into `multiply_vnni`, which enables AVX-512 VNNI and VL.
            unsafe {
                let owed =
                    _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(i8::MIN), weights);
                _mm256_sub_epi32(_mm256_setzero_si256(), owed)
            }
        }

        #[inline(always)]
        unsafe fn column(start: __m256i, weights: __m256i, prepared: __m256i) -> __m256i {
            // SAFETY: as above.
            unsafe { _mm256_dpbusd_epi32(start, prepared, weights) }
        }
    }

    /// Without VNNI, `vpmaddubsw` would saturate on such sums, so the weight's sign moves to
    /// each column instead.
    struct Avx2;

    impl Dot for Avx2 {
        #[inline(always)]
        unsafe fn prepare(values: __m256i) -> __m256i {
            values
        }

        /// The weights' magnitudes (unsigned, as `vpmaddubsw` wants its first operand).
        #[inline(always)]
        unsafe fn start(weights: __m256i) -> __m256i {
            // SAFETY: inlined into functions that enable AVX2.
            unsafe { _mm256_sign_epi8(weights, weights) }
        }

        #[inline(always)]
        unsafe fn column(magnitudes: __m256i, weights: __m256i, prepared: __m256i) -> __m256i {
            // SAFETY: as above.
            unsafe {
                // The weight's sign moves to the column's value, so that the product of
                // unsigned and signed bytes is the product of the two signed ones. Q8_0
                // values lie in -127..=127, so no pair of products saturates 16 bits.
                let signed = _mm256_sign_epi8(prepared, weights);
                _mm256_madd_epi16(
                    _mm256_maddubs_epi16(magnitudes, signed),
                    _mm256_set1_epi16(1),
                )
            }
        }
    }

    #[inline(always)]
    unsafe fn sum(lanes: __m256) -> f32 {
        // SAFETY: inlined into functions that enable AVX.
        unsafe {
            let half = _mm_add_ps(
                _mm256_castps256_ps128(lanes),
                _mm256_extractf128_ps(lanes, 1),
            );
            let quarter = _mm_add_ps(half, _mm_movehl_ps(half, half));
            _mm_cvtss_f32(_mm_add_ss(quarter, _mm_movehdup_ps(quarter)))
        }
    }

    /// The columns block by block, side by side: each block's values as the row loop reads
    /// them and its scale. Only the product's own blocks and columns are written (and read):
    /// the rest of the 36 KB is left as it was, as clearing it would cost more than a small
    /// product.
    struct Columns {
        values: [[MaybeUninit<__m256i>; MOST_COLUMNS]; MOST_BLOCKS],
        scales: [[MaybeUninit<f32>; MOST_COLUMNS]; MOST_BLOCKS],
    }

    /// The row kernel on AVX2, FMA and F16C.
    ///
    /// # Safety
    /// As `crate::multiply`'s, on a CPU with those features.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn multiply_avx2(product: &Product, rows: Range<usize>) {
        // SAFETY: the caller's promise.
        unsafe { multiply_with::<Avx2>(product, rows) }
    }

    /// The row kernel with AVX-512 VNNI's byte dot product.
    ///
    /// # Safety
    /// As `crate::multiply`'s, on a CPU with AVX2, FMA, F16C and AVX-512F, VNNI and VL.
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vnni,avx512vl")]
    pub(super) unsafe fn multiply_vnni(product: &Product, rows: Range<usize>) {
        // SAFETY: the caller's promise.
        unsafe { multiply_with::<Vnni>(product, rows) }
    }

    #[inline(always)]
    unsafe fn multiply_with<D: Dot>(product: &Product, rows: Range<usize>) {
        let mut columns = Columns {
            values: [[MaybeUninit::uninit(); MOST_COLUMNS]; MOST_BLOCKS],
            scales: [[MaybeUninit::uninit(); MOST_COLUMNS]; MOST_BLOCKS],
        };
        for block in 0..product.blocks {
            for column in 0..product.column_count {
                // SAFETY: column and block are within the product the caller described, and
                // a block's 32 values are 32 readable bytes.
                unsafe {
                    let source = &*product.columns.add(column * product.column_stride + block);
                    columns.scales[block][column].write(half_to_float(source.scale));
                    columns.values[block][column].write(D::prepare(_mm256_loadu_si256(
                        source.quants.as_ptr() as *const __m256i,
                    )));
                }
            }
        }
        // SAFETY (every call below): rows stay within `rows`, columns within the product,
        // whose blocks and columns were all written above.
        unsafe {
            match product.column_count {
                1 => rows_of::<1, D>(product, &columns, rows),
                2 => rows_of::<2, D>(product, &columns, rows),
                3 => rows_of::<3, D>(product, &columns, rows),
                _ => rows_of::<4, D>(product, &columns, rows),
            }
        }
    }

    /// `rows` of `N` columns, a row at a time: the weights are read in the order they lie in
    /// memory (tiles of two or four rows read them as interleaved streams, and a step of one
    /// sequence, bound by reading the weights, ran at 0.6 × ggml's speed).
    #[inline(always)]
    unsafe fn rows_of<const N: usize, D: Dot>(
        product: &Product,
        columns: &Columns,
        rows: Range<usize>,
    ) {
        // SAFETY: the rows read are the caller's, each block's 32 values are 32 readable
        // bytes, the columns' first `blocks` blocks of `N` are written, and the features used
        // are enabled by the entry point this is inlined into.
        unsafe {
            for row in rows {
                let mut sums = [_mm256_setzero_ps(); N];
                let weights = product.weights.add(row * product.weight_stride);
                for block in 0..product.blocks {
                    let weight = &*weights.add(block);
                    let values = _mm256_loadu_si256(weight.quants.as_ptr() as *const __m256i);
                    let start = D::start(values);
                    let weight_scale = _mm256_set1_ps(half_to_float(weight.scale));
                    let (prepared, scales) = (&columns.values[block], &columns.scales[block]);
                    for (c, sum) in sums.iter_mut().enumerate() {
                        let column = D::column(start, values, prepared[c].assume_init());
                        let partial = _mm256_cvtepi32_ps(column);
                        let scale =
                            _mm256_mul_ps(weight_scale, _mm256_set1_ps(scales[c].assume_init()));
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
