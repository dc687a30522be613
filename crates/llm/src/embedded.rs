//! How the embedded model runs, as its provider profile and a debate's snapshot carry it: known
//! to the session that chooses the model, and read by the engine that runs it (`llm::local`).

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
