//! Which of llama.cpp's CPU matrix kernels a product of the weights goes to: llamafile's
//! tinyBLAS for a prompt, ggml's own dot products for a step of a few sequences decoded
//! together.
//!
//! llama.cpp hands every product of two or more columns (tokens) to tinyBLAS, which on AVX2 made
//! a step of two or three sequences no cheaper than computing them apart; ggml's own kernel
//! reads each block of weights once for all of a step's columns. The measurements, and why
//! prompts stay on tinyBLAS, are in ARCHITECTURE.md ("The embedded model"). The linker's
//! `--wrap`, which `build.rs` sets where this is built, sends llama.cpp's calls here first.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};

/// The fewest columns a product of Q8_0 weights needs to go to tinyBLAS.
const TINYBLAS_FROM_COLUMNS: i64 = 5;

static TO_LLAMAFILE: AtomicU64 = AtomicU64::new(0);
static TO_GGML: AtomicU64 = AtomicU64::new(0);

/// How many calls for products of two or more columns went to each kernel since the process
/// started; llama.cpp calls once per compute thread for each product.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelCounts {
    /// Calls passed on to llamafile: prompts, and whatever else it takes.
    pub llamafile: u64,
    /// Calls for Q8_0 weights and a few columns, left to ggml's own kernel: steps of
    /// sequences decoded together.
    pub ggml: u64,
}

/// The counts so far.
pub fn counts() -> KernelCounts {
    KernelCounts {
        llamafile: TO_LLAMAFILE.load(Ordering::Relaxed),
        ggml: TO_GGML.load(Ordering::Relaxed),
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

/// Whether a product of `weights` (a `ggml_type`) and `columns` columns is left to ggml's
/// kernel. One column llamafile declines itself. Other weight types were not measured (and a
/// model's 4-bit ones are mostly repacked for kernels of their own before this is asked).
fn leave_to_ggml(weights: c_int, columns: i64) -> bool {
    weights == llama_cpp_sys_2::GGML_TYPE_Q8_0 as c_int
        && (2..TINYBLAS_FROM_COLUMNS).contains(&columns)
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
    if leave_to_ggml(a_type, n) {
        TO_GGML.fetch_add(1, Ordering::Relaxed);
        return false;
    }
    if n >= 2 {
        TO_LLAMAFILE.fetch_add(1, Ordering::Relaxed);
    }
    // SAFETY: the arguments are llama.cpp's own, passed on unchanged.
    unsafe {
        __real_llamafile_sgemm(
            params, m, n, k, a, lda, b, ldb, c, ldc, a_type, b_type, c_type,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_few_columns_of_q8_0_weights_are_left_to_ggml() {
        let q8_0 = llama_cpp_sys_2::GGML_TYPE_Q8_0 as c_int;
        let f16 = llama_cpp_sys_2::GGML_TYPE_F16 as c_int;
        for (weights, columns, expected) in [
            (q8_0, 1, false),
            (q8_0, 2, true),
            (q8_0, 4, true),
            (q8_0, 5, false),
            (q8_0, 512, false),
            (f16, 2, false),
        ] {
            assert_eq!(
                leave_to_ggml(weights, columns),
                expected,
                "type {weights}, {columns} columns"
            );
        }
    }
}
