//! The embedded model's engine: the llama.cpp provider itself (`provider`, scheduled by `batch`,
//! a reply decoded alone drafted ahead from its context by `draft`, with system prompts' caches
//! kept on disk by `openings`, the tokens a reply grammar may admit found by `first_bytes`, Q4_1 models read from a Q8_0 copy
//! made by `widen`, and a step of up to four sequences computed by moot's own kernel, `q8_0_step`,
//! where `kernels` sends it, over the model's weights packed by `packed_weights` into memory of
//! large pages from `huge_pages`; each layer's attention computed by moot's own kernel where
//! `attention` takes it). All of moot's FFI and its kernels' `unsafe` live here.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

// The domain and the providers under the names the modules here use.
use moot_domain::{debate, sanitize};

#[cfg(moot_kernel_choice)]
mod attention;
mod batch;
mod draft;
mod first_bytes;
#[cfg(moot_kernel_choice)]
mod huge_pages;
#[cfg(moot_kernel_choice)]
mod kernels;
mod openings;
#[cfg(moot_kernel_choice)]
mod packed_weights;
mod provider;
#[cfg(moot_kernel_choice)]
mod q8_0_step;
mod widen;
pub mod worker;

#[cfg(moot_kernel_choice)]
pub use kernels::{
    KernelCounts, counts as kernel_counts, own_kernel_built, packed_kernel_built, use_own_kernel,
};
pub use provider::{LoadedModel, LocalError, LocalProvider, Timings};

/// llama.cpp's bindings as this crate pins them, for the binary's tests that hold what moot
/// sends any llama.cpp-based server to llama.cpp's own reading of it (`tests/cli/grammar.rs`).
#[doc(hidden)]
pub use {llama_cpp_2, llama_cpp_sys_2};

/// The settings each room of the engine reads.
use moot_llm::embedded::LocalSettings;

/// Opens the embedded model at `path`: in a worker process where moot runs one (the binary
/// does), else in this process. The session is handed this as its `OpenEmbedded`.
pub fn open(
    path: &std::path::Path,
    settings: &LocalSettings,
) -> Result<std::sync::Arc<dyn moot_llm::Provider>, Box<dyn std::error::Error + Send + Sync>> {
    Ok(match worker::program() {
        Some(program) => {
            std::sync::Arc::new(worker::WorkerProvider::open(program, path, settings)?)
        }
        None => std::sync::Arc::new(LocalProvider::open(path, settings)?),
    })
}
