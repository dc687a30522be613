//! How the embedded model runs, as its provider profile and a debate's snapshot carry it: known
//! to the session that chooses the model, and read by the engine that runs it (`llm::local`).

use serde::{Deserialize, Serialize};

/// How the embedded model runs; every field falls back to a default that suits the model. The
/// temperature is the provider spec's own, sent with each request like every provider's. A
/// `kind = "local"` provider profile sets these in its own table (`CONFIG_KEYS`), so the config
/// file and a debate's snapshot carry this one type.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LocalSettings {
    /// The tokens one request, prompt and reply, may hold (default: what the model was
    /// trained on, at most 4096).
    pub context: Option<u32>,
    /// Requests decoded together, each keeping its own part of the cache between turns
    /// (default 4: a default debate's three seats and its moderator).
    pub sequences: Option<u32>,
    /// Inference threads (default: all cores).
    pub threads: Option<u32>,
    /// The longest reply in tokens.
    pub max_tokens: Option<u32>,
    /// Sample among this many likeliest tokens (default 40).
    pub top_k: Option<u32>,
    /// Nucleus sampling threshold (default 0.95).
    pub top_p: Option<f32>,
    /// Penalty for repeating one of the last 64 tokens (default 1.1).
    pub repeat_penalty: Option<f32>,
    /// A llama.cpp template name (chatml, llama3, …) when the GGUF has none.
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

impl LocalSettings {
    /// The keys of a provider profile's table that set these.
    pub const CONFIG_KEYS: &[&str] = &[
        "context",
        "sequences",
        "threads",
        "max_tokens",
        "top_k",
        "top_p",
        "repeat_penalty",
        "chat_template",
        "drafts",
    ];

    /// Reads the value of `key`, one of `CONFIG_KEYS`, from the table being read; `false` for
    /// any other key, whose value is left unread. A profile's one flat table holds these
    /// beside its own keys, and every error keeps its line and column in the file.
    pub fn read_config_key<'de, A: serde::de::MapAccess<'de>>(
        &mut self,
        key: &str,
        table: &mut A,
    ) -> Result<bool, A::Error> {
        match key {
            "context" => self.context = table.next_value()?,
            "sequences" => self.sequences = table.next_value()?,
            "threads" => self.threads = table.next_value()?,
            "max_tokens" => self.max_tokens = table.next_value()?,
            "top_k" => self.top_k = table.next_value()?,
            "top_p" => self.top_p = table.next_value()?,
            "repeat_penalty" => self.repeat_penalty = table.next_value()?,
            "chat_template" => self.chat_template = table.next_value()?,
            "drafts" => self.drafts = table.next_value()?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A field added to the settings is a key the config file can set, or says why not
    /// (`serde(skip)`): the keys the settings serialize are exactly `CONFIG_KEYS`.
    #[test]
    fn every_stored_setting_is_a_config_key() {
        let stored = serde_json::to_value(LocalSettings::default()).unwrap();
        let mut keys: Vec<&str> = stored
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut config_keys = LocalSettings::CONFIG_KEYS.to_vec();
        keys.sort_unstable();
        config_keys.sort_unstable();
        assert_eq!(keys, config_keys);
    }
}
