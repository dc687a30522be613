//! Which CPU matrix kernel a product of the weights goes to: moot's packed kernel for a step or
//! a prompt over the model's Q8_0 weights where the CPU has it (a step of one sequence only
//! where the copies lie in large pages), moot's row kernel (`q8_0_step`) for other steps of one
//! to four sequences over Q8_0 (the attention's keys among them) and, four columns at a time,
//! for other prompts over Q8_0; llamafile's tinyBLAS for the rest (which in a build for
//! x86-64-v2 has no kernel and declines), and ggml's own dot products where none takes one.
//!
//! llama.cpp hands every product of two or more columns (tokens) to tinyBLAS, which on AVX2 made
//! a step of two or three sequences no cheaper than computing them apart, and computes a step
//! of one with ggml's `vec_dot`, one row and one multiply-add chain at a time. The
//! measurements are in docs/embedded-model.md. The linker's `--wrap`, which `build.rs` sets
//! where this is built, sends llama.cpp's calls here first, after it has quantized the columns
//! to Q8_0 (it asks once before, with the columns in F32, and that call is declined).

use super::packed_weights;
use super::q8_0_step::{self, Block, Packed, Product};
use moot_attention::values;
use std::ffi::{c_int, c_void};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The fewest columns a product of Q8_0 weights needs to go to tinyBLAS.
const TINYBLAS_FROM_COLUMNS: i64 = 5;

static TO_LLAMAFILE: AtomicU64 = AtomicU64::new(0);
static TO_GGML: AtomicU64 = AtomicU64::new(0);
static TO_MOOT: AtomicU64 = AtomicU64::new(0);
static TO_PACKED: AtomicU64 = AtomicU64::new(0);
static PROMPTS_PACKED: AtomicU64 = AtomicU64::new(0);
static PROMPTS_BY_ROWS: AtomicU64 = AtomicU64::new(0);
static VALUES: AtomicU64 = AtomicU64::new(0);
static OWN_KERNEL_ON: AtomicBool = AtomicBool::new(true);

/// Whether this build has moot's own kernel for a step (an x86-64 CPU with AVX2, FMA and F16C).
pub fn own_kernel_built() -> bool {
    q8_0_step::takes(1, 1)
}

/// Whether this build reads a model's weights packed eight rows side by side for a prompt or a
/// step of several sequences (its CPU has AVX-512 VNNI besides).
pub fn packed_kernel_built() -> bool {
    q8_0_step::Packed::built()
}

/// Turns moot's own kernel on (the default) or off for the whole process, so that a benchmark
/// can run the same requests on ggml's kernels beside them.
pub fn use_own_kernel(on: bool) {
    OWN_KERNEL_ON.store(on, Ordering::Relaxed);
}

/// How many calls went to each kernel since the process started; llama.cpp calls once per
/// compute thread for each product.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelCounts {
    /// Products llamafile computed: prompts, and whatever else it takes.
    pub llamafile: u64,
    /// Products of Q8_0 weights and two to four columns left to ggml's own kernel, where
    /// moot's own kernel cannot take them.
    pub ggml: u64,
    /// Products of Q8_0 weights and one to four Q8_0 columns computed by moot's own kernel
    /// (`q8_0_step`): a step of up to four sequences.
    pub moot: u64,
    /// Of those, the products over a model's weights packed eight rows side by side
    /// (`packed_weights`), where the build has the packed kernel.
    pub packed: u64,
    /// Products of a prompt's five or more columns over a model's packed weights (the packed
    /// kernel, four columns at a time), where the build has it.
    pub prompts_packed: u64,
    /// Products of a prompt's five or more columns computed by moot's step kernel four columns
    /// at a time, where the CPU has AVX2 but not the packed kernel: llamafile's tinyBLAS, which
    /// took them before, has no x86 kernel in a build for x86-64-v2.
    pub prompts_by_rows: u64,
    /// Products of F16 values and F32 attention weights (the attention's values weighed,
    /// without flash attention) computed by `moot_attention::values` on AVX2.
    pub values: u64,
    /// Attention operations (a layer's, for a step or a prompt) computed by moot's own kernel
    /// (`attention`), each thread's share counted once.
    pub attention: u64,
}

/// The counts so far.
pub fn counts() -> KernelCounts {
    KernelCounts {
        llamafile: TO_LLAMAFILE.load(Ordering::Relaxed),
        ggml: TO_GGML.load(Ordering::Relaxed),
        moot: TO_MOOT.load(Ordering::Relaxed),
        packed: TO_PACKED.load(Ordering::Relaxed),
        prompts_packed: PROMPTS_PACKED.load(Ordering::Relaxed),
        prompts_by_rows: PROMPTS_BY_ROWS.load(Ordering::Relaxed),
        values: VALUES.load(Ordering::Relaxed),
        attention: super::attention::computed(),
    }
}

/// The wrapper's address: a use of it in the provider keeps it linked, even under a linker
/// that reads archives in order and would meet llama.cpp's call after passing moot's code.
pub(super) fn linked() -> usize {
    __wrap_llamafile_sgemm as *const () as usize
}

unsafe extern "C" {
    /// llama.cpp's `llamafile_sgemm`, by the name `--wrap` gives it.
    fn __real_llamafile_sgemm(
        params: *const c_void,
        m: i64,
        n: i64,
        k: i64,
        a: *const c_void,
        lda: i64,
        b: *const c_void,
        ldb: i64,
        c: *mut c_void,
        ldc: i64,
        a_type: c_int,
        b_type: c_int,
        c_type: c_int,
    ) -> bool;
}

/// One of llama.cpp's sizes or strides as a `usize`; a negative one (never passed) as 0, which
/// `q8_0_step::takes` refuses.
fn size(value: i64) -> usize {
    usize::try_from(value).unwrap_or(0)
}

/// Where a product goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    /// moot's own kernel (`q8_0_step`).
    Moot,
    /// A prompt's product: moot's packed kernel when the weights are a model's (`packed_weights`),
    /// else moot's step kernel, four columns at a time.
    Prompt,
    /// F16 values by F32 weights: `moot_attention::values`.
    Values,
    /// Declined, so that ggml computes it with its own kernel.
    Ggml,
    /// On to llamafile, which computes it or declines it itself (as it declines one column,
    /// and Q8_0 weights by columns not yet quantized, which ggml then quantizes and asks again).
    Llamafile,
}

/// Where a product of `weights` and `columns` (`ggml_type`s) into `out` goes, for `count`
/// columns of `blocks` blocks, with moot's own kernel turned on or off. Weight types other than
/// Q8_0 were not measured (and a model's 4-bit ones are mostly repacked for kernels of their own
/// before this is asked).
fn route(weights: c_int, columns: c_int, out: c_int, count: i64, blocks: i64, own: bool) -> Route {
    let q8_0 = llama_cpp_sys_2::GGML_TYPE_Q8_0 as c_int;
    let (f16, f32) = (
        llama_cpp_sys_2::GGML_TYPE_F16 as c_int,
        llama_cpp_sys_2::GGML_TYPE_F32 as c_int,
    );
    if own && weights == f16 && columns == f32 && out == f32 && values::available() {
        return Route::Values;
    }
    if weights != q8_0 || columns != q8_0 {
        return Route::Llamafile;
    }
    let ours = out == llama_cpp_sys_2::GGML_TYPE_F32 as c_int && own;
    if ours && q8_0_step::takes(size(count), size(blocks)) {
        Route::Moot
    } else if ours
        && count >= TINYBLAS_FROM_COLUMNS
        // Rows short enough for moot's kernels, on a CPU that runs them.
        && q8_0_step::takes(1, size(blocks))
    {
        Route::Prompt
    } else if (2..TINYBLAS_FROM_COLUMNS).contains(&count) {
        Route::Ggml
    } else {
        Route::Llamafile
    }
}

/// ggml's `ggml_compute_params`, which every compute thread gets for an operation (its layout
/// checked against ggml's header at build time: `ggml_abi.c`).
#[repr(C)]
pub(super) struct ComputeParams {
    pub(super) thread: c_int,
    pub(super) threads: c_int,
    work_size: usize,
    work: *mut c_void,
    threadpool: *mut c_void,
    /// ggml asks for its reference implementation: moot's kernels pass the call on.
    pub(super) use_ref: bool,
}

#[cfg(test)]
impl ComputeParams {
    /// Thread `thread` of `threads`, with no work space or pool, for a test of an operation
    /// that uses neither.
    pub(super) fn thread_of(thread: c_int, threads: c_int) -> ComputeParams {
        ComputeParams {
            thread,
            threads,
            work_size: 0,
            work: std::ptr::null_mut(),
            threadpool: std::ptr::null_mut(),
            use_ref: false,
        }
    }
}

unsafe extern "C" {
    /// Waits for every thread of the pool (an OpenMP barrier in moot's build).
    fn ggml_barrier(threadpool: *mut c_void);
    fn ggml_threadpool_chunk_set(threadpool: *mut c_void, value: c_int);
    /// Adds to the pool's shared chunk counter; the value before.
    fn ggml_threadpool_chunk_add(threadpool: *mut c_void, value: c_int) -> c_int;
}

/// Bytes of weights a chunk of a shared-out product holds at least. A product smaller than two
/// chunks (every one of the default model's but its output matrix) is split in halves fixed in
/// advance, with no counter and no barriers of its own.
///
/// Chunks had been a sixteenth of every product: cut that fine, the weights' chunks of a few
/// tens of KB, the threads' turns at the counter and the restarted streams cost 9-14 % of every
/// decode (steps of one to three sequences and 512-token prompts, the two sizes switched step
/// by step in one process); chunks of at least this many bytes cost nothing measurable beside
/// fixed halves, and still let a thread that started late leave its part of the largest
/// products to the other.
const CHUNK_BYTES: usize = 1 << 20;

/// The most chunks a product is cut into for each thread, so that a thread that started late
/// (woken from a barrier, or sharing its core) leaves its share of a large product to the others.
const MOST_CHUNKS_PER_THREAD: usize = 8;

/// Computes this thread's part of a product whose work comes in `units` (rows, or groups of
/// packed rows) over `weight_bytes` bytes of weights, by calling `multiply` on each range of
/// units it takes.
///
/// # Safety
/// `params` are llama.cpp's for this call, and `multiply` is sound on every range within
/// `0..units`.
unsafe fn compute(
    params: &ComputeParams,
    units: usize,
    weight_bytes: usize,
    multiply: impl Fn(Range<usize>),
) {
    let (thread, threads) = (
        params.thread.max(0) as usize,
        params.threads.max(1) as usize,
    );
    let chunks = (weight_bytes / CHUNK_BYTES)
        .min(threads * MOST_CHUNKS_PER_THREAD)
        .min(units);
    if chunks <= threads {
        multiply(q8_0_step::share(units, thread, threads));
        return;
    }
    // As llamafile shares its products: every thread starts on the chunk of its own index,
    // and the counter hands out the rest. The barriers keep one call's counter from the
    // next's (llama.cpp calls once for each slice of a product of several).
    if thread == 0 {
        // SAFETY: the pool is llama.cpp's, alive for the call.
        unsafe { ggml_threadpool_chunk_set(params.threadpool, threads as c_int) };
    }
    // SAFETY: every thread of the pool makes this call, so every thread reaches each barrier.
    unsafe { ggml_barrier(params.threadpool) };
    let mut chunk = thread;
    while chunk < chunks {
        multiply(q8_0_step::share(units, chunk, chunks));
        // SAFETY: as above.
        chunk = unsafe { ggml_threadpool_chunk_add(params.threadpool, 1) }.max(0) as usize;
    }
    // SAFETY: as above.
    unsafe { ggml_barrier(params.threadpool) };
}

/// What llama.cpp calls for `llamafile_sgemm`. Returning false is llamafile's own way to
/// decline a product, after which ggml computes it with its own kernel.
///
/// # Safety
/// Only llama.cpp calls this, with the arguments it would pass to `llamafile_sgemm`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __wrap_llamafile_sgemm(
    params: *const c_void,
    m: i64,
    n: i64,
    k: i64,
    a: *const c_void,
    lda: i64,
    b: *const c_void,
    ldb: i64,
    c: *mut c_void,
    ldc: i64,
    a_type: c_int,
    b_type: c_int,
    c_type: c_int,
) -> bool {
    // SAFETY: llama.cpp passes its own parameters.
    let threads = unsafe { &*(params as *const ComputeParams) };
    // ggml's reference run gets ggml's (and llamafile's) own kernels.
    let ours = OWN_KERNEL_ON.load(Ordering::Relaxed) && !threads.use_ref;
    let route = route(a_type, b_type, c_type, n, k, ours);
    // The operands as moot's kernels read them (only where `route` sends the product there).
    let product = Product {
        weights: a as *const Block,
        weight_stride: size(lda),
        columns: b as *const Block,
        column_stride: size(ldb),
        column_count: size(n),
        blocks: size(k),
        out: c as *mut f32,
        out_stride: size(ldc),
    };
    let rows = size(m);
    // The packed copy of the weights, made at the first product that asks for it.
    let packed_copy = || {
        packed_weights::packed(
            product.weights,
            rows,
            product.blocks,
            product.weight_stride,
            product.column_count,
        )
    };
    // llamafile's own product, counted when it computes it.
    let llamafile = || {
        // SAFETY: the arguments are llama.cpp's own, passed on unchanged.
        let computed = unsafe {
            __real_llamafile_sgemm(
                params, m, n, k, a, lda, b, ldb, c, ldc, a_type, b_type, c_type,
            )
        };
        if computed {
            TO_LLAMAFILE.fetch_add(1, Ordering::Relaxed);
        }
        computed
    };
    match route {
        Route::Moot => {
            // A step reads the model's own weights packed (one sequence only where the copies
            // lie in large pages: see `packed_weights`); anything that is not the model's
            // weights (the attention's keys) is read as ggml lays it out.
            if let Some(packed) = packed_copy() {
                // SAFETY: `route` checked the types and sizes, and the copy is of these weights.
                unsafe { compute_packed(threads, &packed, &product) };
                TO_PACKED.fetch_add(1, Ordering::Relaxed);
            } else {
                let weight_bytes = rows * product.blocks * size_of::<Block>();
                // SAFETY: `route` checked the types and sizes; the operands are llama.cpp's.
                unsafe {
                    compute(threads, rows, weight_bytes, |rows| {
                        q8_0_step::multiply(&product, rows)
                    })
                };
            }
            TO_MOOT.fetch_add(1, Ordering::Relaxed);
            true
        }
        Route::Prompt => match packed_copy() {
            Some(packed) => {
                // SAFETY: `route` checked the types and the rows' length, and the copy is of
                // these weights.
                unsafe { compute_packed(threads, &packed, &product) };
                PROMPTS_PACKED.fetch_add(1, Ordering::Relaxed);
                true
            }
            None => {
                // SAFETY: `route` checked the types and the rows' length; the operands are
                // llama.cpp's.
                unsafe { compute_by_rows(threads, &product, rows) };
                PROMPTS_BY_ROWS.fetch_add(1, Ordering::Relaxed);
                true
            }
        },
        Route::Values => {
            let values = values::HalfProduct {
                rows: a as *const u16,
                row_stride: size(lda),
                columns: b as *const f32,
                column_stride: size(ldb),
                column_count: size(n),
                length: size(k),
                out: c as *mut f32,
                out_stride: size(ldc),
            };
            // SAFETY: `route` checked the types and that the CPU runs the kernel; the operands
            // are llama.cpp's, as large as its sizes and strides say.
            unsafe {
                compute(threads, rows, rows * size(k) * 2, |rows| {
                    values::multiply(&values, rows)
                })
            };
            VALUES.fetch_add(1, Ordering::Relaxed);
            true
        }
        Route::Ggml => {
            TO_GGML.fetch_add(1, Ordering::Relaxed);
            false
        }
        Route::Llamafile => llamafile(),
    }
}

/// Rows of weights a prompt's product computed by the step kernel takes through every group of
/// columns before the next rows, so that they are read from the core's cache after the first
/// group (32 rows of the default model's widest weights are about 52 KB).
const ROWS_AT_A_TIME: usize = 32;

/// This thread's part of a product of any number of columns by moot's step kernel: each run of
/// `ROWS_AT_A_TIME` rows times each group of up to `MOST_COLUMNS` columns.
///
/// # Safety
/// As `compute`'s; `q8_0_step::takes(1, product.blocks)` holds and the operands are readable
/// (and the output writable) for `rows` rows and every column.
unsafe fn compute_by_rows(params: &ComputeParams, product: &Product, rows: usize) {
    let weight_bytes = rows * product.blocks * size_of::<Block>();
    // SAFETY: the caller's promise; each group's columns and output lie within the product's.
    unsafe {
        compute(params, rows, weight_bytes, |mine| {
            let mut start = mine.start;
            while start < mine.end {
                let run = start..(start + ROWS_AT_A_TIME).min(mine.end);
                for first in (0..product.column_count).step_by(q8_0_step::MOST_COLUMNS) {
                    let group = Product {
                        weights: product.weights,
                        weight_stride: product.weight_stride,
                        columns: product.columns.add(first * product.column_stride),
                        column_stride: product.column_stride,
                        column_count: (product.column_count - first).min(q8_0_step::MOST_COLUMNS),
                        blocks: product.blocks,
                        out: product.out.add(first * product.out_stride),
                        out_stride: product.out_stride,
                    };
                    q8_0_step::multiply(&group, run.clone());
                }
                start = run.end;
            }
        })
    }
}

/// This thread's part of a product over a model's packed weights.
///
/// # Safety
/// As `compute`'s; `packed` is a copy of the product's weights, whose columns and output
/// `q8_0_step::multiply_packed` may read and write.
unsafe fn compute_packed(params: &ComputeParams, packed: &Packed, product: &Product) {
    // SAFETY: the caller's promise; the groups shared out lie within the packed copy.
    unsafe {
        compute(params, packed.groups(), packed.bytes(), |groups| {
            q8_0_step::multiply_packed(packed, product, groups)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A prompt's product computed four columns at a time, in runs of rows, matches the
    /// product in double precision: every column (an odd count, so the last group is short)
    /// and every row (more than one run, the last short), at llama.cpp's strides.
    #[test]
    fn a_prompt_computed_by_rows_matches_the_product_in_double_precision() {
        if !moot_q8_0::tested_here(moot_q8_0::Level::Avx2) {
            return;
        }
        use moot_attention::reference::{float, half, noise};
        let (rows, blocks, columns) = (2 * ROWS_AT_A_TIME + 7, 18, 11);
        // Strides wider than a row, as llama.cpp's views may have them.
        let (weight_stride, column_stride, out_stride) = (blocks + 1, blocks + 2, rows + 3);
        let mut seed = 5;
        let block = |seed: &mut u64| Block {
            scale: half(noise(seed).abs() * 0.05 + 0.001),
            quants: std::array::from_fn(|_| (noise(seed) * 127.0) as i8),
        };
        let weights: Vec<Block> = (0..rows * weight_stride)
            .map(|_| block(&mut seed))
            .collect();
        let column_blocks: Vec<Block> = (0..columns * column_stride)
            .map(|_| block(&mut seed))
            .collect();
        let mut out = vec![f32::NAN; columns * out_stride];
        let product = Product {
            weights: weights.as_ptr(),
            weight_stride,
            columns: column_blocks.as_ptr(),
            column_stride,
            column_count: columns,
            blocks,
            out: out.as_mut_ptr(),
            out_stride,
        };
        // SAFETY: the operands above hold every row and column at these strides; one thread,
        // on a product too small to be cut into chunks, calls no thread pool.
        unsafe { compute_by_rows(&ComputeParams::thread_of(0, 1), &product, rows) };
        for column in 0..columns {
            for row in 0..rows {
                let expected: f64 = (0..blocks)
                    .map(|b| {
                        let (w, c) = (
                            &weights[row * weight_stride + b],
                            &column_blocks[column * column_stride + b],
                        );
                        let dot: i32 = (0..32)
                            .map(|i| i32::from(w.quants[i]) * i32::from(c.quants[i]))
                            .sum();
                        float(w.scale) * float(c.scale) * f64::from(dot)
                    })
                    .sum();
                let got = f64::from(out[column * out_stride + row]);
                assert!(
                    (got - expected).abs() <= 1e-4 * expected.abs().max(1.0),
                    "row {row}, column {column}: {got} against {expected}"
                );
            }
            // Between the rows of two columns, nothing was written.
            assert!(
                out[column * out_stride + rows..(column + 1) * out_stride]
                    .iter()
                    .all(|v| v.is_nan())
            );
        }
    }

    #[test]
    fn a_step_of_q8_0_weights_goes_to_moots_kernel_and_a_prompt_to_the_packed_one() {
        let q8_0 = llama_cpp_sys_2::GGML_TYPE_Q8_0 as c_int;
        let f16 = llama_cpp_sys_2::GGML_TYPE_F16 as c_int;
        let f32 = llama_cpp_sys_2::GGML_TYPE_F32 as c_int;
        let own = if own_kernel_built() {
            Route::Moot
        } else {
            Route::Ggml
        };
        // A prompt: moot's kernels where the CPU runs them (the packed one if the weights are
        // a model's and the CPU has it).
        let prompt = if own_kernel_built() {
            Route::Prompt
        } else {
            Route::Llamafile
        };
        // F16 values by F32 weights: moot's kernel where the CPU runs it.
        let weighed = if values::available() {
            Route::Values
        } else {
            Route::Llamafile
        };
        for (weights, columns, count, blocks, expected) in [
            // Columns still in F32: llamafile declines them, ggml quantizes them and asks again.
            (q8_0, f32, 2, 18, Route::Llamafile),
            (q8_0, q8_0, 2, 18, own),
            (q8_0, q8_0, 4, 48, own),
            // Rows too long for moot's kernel.
            (q8_0, q8_0, 2, 257, Route::Ggml),
            (q8_0, q8_0, 5, 18, prompt),
            (q8_0, q8_0, 512, 18, prompt),
            (q8_0, q8_0, 512, 257, Route::Llamafile),
            (f16, f32, 2, 18, weighed),
            (f16, f16, 512, 18, Route::Llamafile),
        ] {
            assert_eq!(
                route(weights, columns, f32, count, blocks, true),
                expected,
                "type {weights} by {columns}, {count} columns of {blocks} blocks"
            );
        }
        // One column: to moot's kernel where it runs, else on to llamafile, which declines it.
        let one = if own == Route::Moot {
            Route::Moot
        } else {
            Route::Llamafile
        };
        assert_eq!(route(q8_0, q8_0, f32, 1, 18, true), one);
        // Turned off, ggml's kernel takes the steps again.
        assert_eq!(route(q8_0, q8_0, f32, 2, 18, false), Route::Ggml);
        assert_eq!(route(q8_0, q8_0, f32, 1, 18, false), Route::Llamafile);
        assert_eq!(route(q8_0, q8_0, f32, 512, 18, false), Route::Llamafile);
        assert_eq!(route(f16, f32, f32, 512, 18, false), Route::Llamafile);
    }
}
