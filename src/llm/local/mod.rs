//! The embedded model's engine: with the cargo feature `local`, the llama.cpp provider itself (`provider`, scheduled by `batch`,
//! a reply decoded alone drafted ahead from its context by `draft`, with system prompts' caches
//! kept on disk by `openings`, the tokens a reply grammar may admit found by `first_bytes`, Q4_1 models read from a Q8_0 copy
//! made by `widen`, and a step of up to four sequences computed by moot's own kernel, `q8_0_step`,
//! where `kernels` sends it, over the model's weights packed by `packed_weights` into memory of
//! large pages from `huge_pages`; each layer's attention computed by moot's own kernel where
//! `attention` takes it).

#[cfg(moot_kernel_choice)]
mod attention;
#[cfg(feature = "local")]
mod batch;
#[cfg(feature = "local")]
mod draft;
#[cfg(feature = "local")]
mod first_bytes;
#[cfg(moot_kernel_choice)]
mod huge_pages;
#[cfg(moot_kernel_choice)]
mod kernels;
#[cfg(feature = "local")]
mod openings;
#[cfg(moot_kernel_choice)]
mod packed_weights;
#[cfg(feature = "local")]
mod provider;
#[cfg(moot_kernel_choice)]
mod q8_0_step;
#[cfg(feature = "local")]
mod widen;
#[cfg(feature = "local")]
pub mod worker;

#[cfg(moot_kernel_choice)]
pub use kernels::{
    KernelCounts, counts as kernel_counts, own_kernel_built, packed_kernel_built, use_own_kernel,
};
#[cfg(feature = "local")]
pub use provider::{LoadedModel, LocalError, LocalProvider, Timings};

/// The settings each room of the engine reads.
#[cfg(feature = "local")]
use super::embedded::LocalSettings;

/// Opens the embedded model at `path`: in a worker process where moot runs one (the binary
/// does), else in this process. The session is handed this as its `OpenEmbedded`.
#[cfg(feature = "local")]
pub fn open(
    path: &std::path::Path,
    settings: &LocalSettings,
) -> Result<std::sync::Arc<dyn super::Provider>, Box<dyn std::error::Error + Send + Sync>> {
    Ok(match worker::program() {
        Some(program) => {
            std::sync::Arc::new(worker::WorkerProvider::open(program, path, settings)?)
        }
        None => std::sync::Arc::new(LocalProvider::open(path, settings)?),
    })
}
