//! What each endpoint was found to accept, so a degraded request shape is not retried each call.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Mutex;

/// How a structured reply is asked for, from strongest to weakest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum StructuredMode {
    /// `response_format: json_schema` (OpenAI-style) or a forced tool (Anthropic).
    #[default]
    JsonSchema,
    /// `response_format: json_object` carrying the schema too (llama.cpp, llama-cpp-python).
    JsonObjectSchema,
    /// `response_format: json_object`.
    JsonObject,
    /// Only the instructions in the prompt; the reply is extracted tolerantly.
    Instructions,
}

impl StructuredMode {
    /// Whether a request in this mode sends the reply's schema, which a server must compile.
    pub fn sends_schema(self) -> bool {
        matches!(
            self,
            StructuredMode::JsonSchema | StructuredMode::JsonObjectSchema
        )
    }

    /// The next weaker mode, if any.
    pub fn degrade(self) -> Option<StructuredMode> {
        match self {
            StructuredMode::JsonSchema => Some(StructuredMode::JsonObjectSchema),
            StructuredMode::JsonObjectSchema => Some(StructuredMode::JsonObject),
            StructuredMode::JsonObject => Some(StructuredMode::Instructions),
            StructuredMode::Instructions => None,
        }
    }
}

/// The request shape an endpoint accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capabilities {
    pub mode: StructuredMode,
    /// Whether `stream_options.include_usage` is accepted.
    pub stream_usage: bool,
    /// Whether the endpoint wants `max_completion_tokens` instead of `max_tokens`.
    pub max_completion_tokens: bool,
    /// Whether the endpoint cuts a stream when another request arrives, so calls must queue.
    #[serde(default)]
    pub serial: bool,
}

impl Default for Capabilities {
    fn default() -> Self {
        Capabilities {
            mode: StructuredMode::JsonSchema,
            stream_usage: true,
            max_completion_tokens: false,
            serial: false,
        }
    }
}

/// Shared by every seat using the same endpoint; loaded from and saved to the journal.
#[derive(Debug, Default)]
pub struct CapabilityCache {
    entries: Mutex<HashMap<String, Capabilities>>,
}

impl CapabilityCache {
    pub fn new(known: impl IntoIterator<Item = (String, Capabilities)>) -> Self {
        CapabilityCache {
            entries: Mutex::new(known.into_iter().collect()),
        }
    }

    pub fn get(&self, endpoint: &str) -> Capabilities {
        self.lock().get(endpoint).copied().unwrap_or_default()
    }

    pub fn set(&self, endpoint: &str, capabilities: Capabilities) {
        self.lock().insert(endpoint.to_string(), capabilities);
    }

    /// Every endpoint whose shape differs from the default, for saving.
    pub fn learned(&self) -> Vec<(String, Capabilities)> {
        let mut entries: Vec<_> = self
            .lock()
            .iter()
            .filter(|(_, caps)| **caps != Capabilities::default())
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        entries
    }

    /// The cache from the shapes the journal keeps (endpoint, JSON); a shape this version
    /// cannot read is left out, to be learned again.
    pub fn from_stored(stored: Vec<(String, String)>) -> Self {
        CapabilityCache::new(stored.into_iter().filter_map(|(endpoint, shape)| {
            serde_json::from_str(&shape)
                .ok()
                .map(|caps: Capabilities| (endpoint, caps))
        }))
    }

    /// What was learned, as the journal keeps it (endpoint, JSON): the journal knows no
    /// provider type.
    pub fn stored(&self) -> Vec<(String, String)> {
        self.learned()
            .into_iter()
            .filter_map(|(endpoint, caps)| {
                serde_json::to_string(&caps)
                    .ok()
                    .map(|shape| (endpoint, shape))
            })
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Capabilities>> {
        // A poisoned map still holds valid entries; keep using it.
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The journal keeps shapes as text; what it gives back is read here, and a shape this
    /// version cannot read is learned again rather than failing the run.
    #[test]
    fn shapes_go_to_the_journal_as_text_and_come_back() {
        let cache = CapabilityCache::new([]);
        cache.set(
            "http://x/v1",
            Capabilities {
                mode: StructuredMode::JsonObject,
                ..Capabilities::default()
            },
        );
        let mut stored = cache.stored();
        assert_eq!(stored.len(), 1);
        stored.push(("http://y/v1".into(), "{\"mode\": \"telepathy\"}".into()));
        let again = CapabilityCache::from_stored(stored);
        assert_eq!(again.get("http://x/v1").mode, StructuredMode::JsonObject);
        assert_eq!(again.get("http://y/v1"), Capabilities::default());
        assert_eq!(again.learned().len(), 1);
    }
}
