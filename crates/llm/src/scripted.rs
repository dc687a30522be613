//! A provider that replays a fixture file of replies, for tests, demos and offline replays.

use super::provider::{ChatRequest, Completion, FinishReason, LlmError, Provider, TextSink};
use crate::debate::Named as _;
use futures_util::future::BoxFuture;
use serde::Deserialize;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Script {
    #[serde(default = "default_model")]
    model: String,
    replies: Vec<ScriptedReply>,
    /// Serve requests one after another, as an in-process model does.
    #[serde(default)]
    one_at_a_time: bool,
}

fn default_model() -> String {
    "script".to_string()
}

/// One reply, matched on phase, seat (id or perspective name) and round where given.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptedReply {
    phase: Option<String>,
    seat: Option<String>,
    round: Option<u32>,
    /// A string is sent as is; any other JSON value is sent serialized.
    reply: serde_json::Value,
    /// May be used for any number of matching requests instead of once.
    #[serde(default)]
    repeat: bool,
    #[serde(default = "default_chunk")]
    chunk_chars: usize,
    #[serde(default)]
    delay_ms: u64,
}

fn default_chunk() -> usize {
    24
}

/// A script file that cannot be used, with where it is wrong.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    #[error("cannot read the script {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}:{column}: the script is not valid: {source}")]
    Invalid {
        path: String,
        line: usize,
        column: usize,
        #[source]
        source: serde_json::Error,
    },
}

pub struct ScriptedProvider {
    path: String,
    model: String,
    replies: Vec<ScriptedReply>,
    used: Mutex<Vec<bool>>,
    /// Held for a whole reply when the script serves one request at a time.
    queue: Option<tokio::sync::Mutex<()>>,
}

impl ScriptedProvider {
    pub fn load(path: &Path) -> Result<Self, ScriptError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Read {
            path: path.display().to_string(),
            source,
        })?;
        let script: Script =
            serde_json::from_str(&text).map_err(|source| ScriptError::Invalid {
                path: path.display().to_string(),
                line: source.line(),
                column: source.column(),
                source,
            })?;
        let count = script.replies.len();
        Ok(ScriptedProvider {
            path: path.display().to_string(),
            model: script.model,
            replies: script.replies,
            used: Mutex::new(vec![false; count]),
            queue: script.one_at_a_time.then(|| tokio::sync::Mutex::new(())),
        })
    }

    fn pick(&self, request: &ChatRequest) -> Option<usize> {
        let label = &request.label;
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        let index = self.replies.iter().enumerate().position(|(i, reply)| {
            (reply.repeat || !used[i])
                && reply
                    .phase
                    .as_deref()
                    .is_none_or(|p| p == label.phase.as_str())
                && reply.round.is_none_or(|r| r == label.round)
                && reply
                    .seat
                    .as_deref()
                    .is_none_or(|s| s == label.seat || Some(s) == label.perspective.as_deref())
        })?;
        used[index] = true;
        Some(index)
    }

    async fn play(
        &self,
        request: &ChatRequest,
        on_text: TextSink<'_>,
    ) -> Result<Completion, LlmError> {
        let _turn = match &self.queue {
            Some(queue) => Some(queue.lock().await),
            None => None,
        };
        let label = &request.label;
        let index = self.pick(request).ok_or_else(|| {
            LlmError::Fatal(format!(
                "the script {} has no reply left for the {} of {} in round {}",
                self.path,
                label.phase.as_str(),
                label.perspective.as_deref().unwrap_or(&label.seat),
                label.round
            ))
        })?;
        let reply = &self.replies[index];
        let text = match &reply.reply {
            serde_json::Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        let chars: Vec<char> = text.chars().collect();
        for piece in chars.chunks(reply.chunk_chars.max(1)) {
            if reply.delay_ms > 0 {
                tokio::time::sleep(Duration::from_millis(reply.delay_ms)).await;
            }
            on_text(&piece.iter().collect::<String>());
        }
        // A script reports no usage, so the engine estimates it and marks it as estimated.
        Ok(Completion {
            usage: None,
            text,
            model: self.model.clone(),
            finish: FinishReason::Stop,
        })
    }
}

impl Provider for ScriptedProvider {
    fn kind(&self) -> super::ProviderKind {
        super::ProviderKind::Scripted
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn endpoint(&self) -> String {
        self.path.clone()
    }

    fn configure_hint(&self) -> String {
        "check the --script file".to_string()
    }

    fn answers_one_at_a_time(&self) -> bool {
        self.queue.is_some()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_text: TextSink<'a>,
    ) -> BoxFuture<'a, Result<Completion, LlmError>> {
        Box::pin(self.play(request, on_text))
    }
}
