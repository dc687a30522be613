//! The embedded model: how it runs (`LocalSettings`), the store its GGUF files live in
//! (`models`), the header check every file passes before llama.cpp sees it (`gguf`), and, with
//! the cargo feature `local`, the llama.cpp provider itself (`provider`, scheduled by `batch`,
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
pub mod gguf;
#[cfg(moot_kernel_choice)]
mod huge_pages;
#[cfg(moot_kernel_choice)]
mod kernels;
pub mod models;
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

use serde::{Deserialize, Serialize};

/// How the embedded model runs; every field falls back to a default that suits the model. The
/// temperature is the provider spec's own, sent with each request like every provider's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LocalSettings {
    /// Tokens one request (prompt and reply) may hold.
    pub context: Option<u32>,
    /// Requests decoded together, each keeping its own part of the cache between turns.
    pub sequences: Option<u32>,
    pub threads: Option<u32>,
    pub max_tokens: Option<u32>,
    pub top_k: Option<u32>,
    pub top_p: Option<f32>,
    pub repeat_penalty: Option<f32>,
    pub chat_template: Option<String>,
    /// The most tokens drafted ahead a step for a reply decoded alone, from its own context
    /// (default 3; 0 turns drafting off).
    pub drafts: Option<u32>,
    /// Where the caches of system prompts are kept between runs (default: the models
    /// directory's `openings`). Not read from the config file.
    #[serde(skip)]
    pub openings: Option<std::path::PathBuf>,
    /// Where Q4_1 models' Q8_0 copies are kept (default: the models directory's `widened`).
    /// Not read from the config file.
    #[serde(skip)]
    pub widened: Option<std::path::PathBuf>,
    /// Load the file as stored, never a widened copy (to compare the two). Not read from the
    /// config file.
    #[serde(skip)]
    pub as_stored: bool,
}
