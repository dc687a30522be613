//! The provider-neutral request, reply and error types, and the `Provider` trait.

use crate::debate::Phase;
use futures_util::future::BoxFuture;
use std::time::Duration;

crate::debate::vocabulary! {
    /// Which wire protocol (or engine) a provider speaks; the string is what the journal stores.
    #[derive(Hash)]
    pub enum ProviderKind {
        /// OpenAI-compatible chat completions (OpenAI, Ollama, vLLM, llama.cpp, LM Studio,
        /// OpenRouter).
        Openai,
        Anthropic,
        /// Replies replayed from a script file.
        Scripted,
        /// The embedded llama.cpp model (a GGUF file).
        Local,
    }
}

/// A chat message after the system prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatMessage {
    /// "user" or "assistant".
    pub role: &'static str,
    pub content: String,
}

impl ChatMessage {
    pub fn user(content: impl Into<String>) -> Self {
        ChatMessage {
            role: "user",
            content: content.into(),
        }
    }

    pub fn assistant(content: impl Into<String>) -> Self {
        ChatMessage {
            role: "assistant",
            content: content.into(),
        }
    }
}

/// A JSON schema the reply must match; sent to providers that accept one.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplyFormat {
    pub name: String,
    pub schema: serde_json::Value,
}

/// Who is asking and why; scripted replies are matched on it and errors name it.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestLabel {
    pub round: u32,
    pub phase: Phase,
    pub seat: String,
    /// The seat's perspective name, when a debater speaks.
    pub perspective: Option<String>,
    /// What is asked: the reply schema's name, or a prose request's own (`moot_pose`). HTTP
    /// providers send it as the `x-moot-request` header, so a server (the tests' stand-in,
    /// a proxy's logs) can tell requests apart without reading their wording.
    pub request: &'static str,
}

/// The header that carries `RequestLabel::request` over the wire.
pub const REQUEST_HEADER: &str = "x-moot-request";

#[derive(Debug, Clone)]
pub struct ChatRequest {
    pub label: RequestLabel,
    pub system: String,
    pub messages: Vec<ChatMessage>,
    pub reply: Option<ReplyFormat>,
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
    /// The most bytes of reply taken (`[limits] reply_bytes`); None: `DEFAULT_BYTES_PER_TOKEN`
    /// per `max_tokens` token, or `DEFAULT_REPLY_BYTES` without a `max_tokens`.
    pub reply_bytes: Option<usize>,
}

/// Bytes of reply allowed per token asked for, when no cap is configured: far more than any
/// tokenizer yields, so only a runaway or hostile server meets it.
pub const DEFAULT_BYTES_PER_TOKEN: usize = 16;
/// The cap of a reply whose request sets no `max_tokens`.
pub const DEFAULT_REPLY_BYTES: usize = 1024 * 1024;

impl ChatRequest {
    /// The conversation as (role, content) pairs, as the embedded engine takes it.
    pub fn role_content_pairs(&self) -> Vec<(String, String)> {
        self.messages
            .iter()
            .map(|m| (m.role.to_string(), m.content.clone()))
            .collect()
    }

    /// How many bytes of reply a provider takes before it stops reading the stream.
    pub fn reply_cap(&self) -> usize {
        self.reply_bytes.unwrap_or_else(|| {
            self.max_tokens.map_or(DEFAULT_REPLY_BYTES, |tokens| {
                (tokens as usize).saturating_mul(DEFAULT_BYTES_PER_TOKEN)
            })
        })
    }

    /// The whole prompt as text, for estimating prompt tokens.
    pub fn prompt_chars(&self) -> usize {
        self.system.len() + self.messages.iter().map(|m| m.content.len()).sum::<usize>()
    }
}

/// Token counts as the provider reported them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    /// Cut at `max_tokens`.
    Length,
    /// Cut by moot at the request's byte cap (`ChatRequest::reply_cap`): the stream was
    /// abandoned there.
    Capped,
    Other,
}

/// Appends a streamed `piece` to a reply capped at `cap` bytes, handing what fits (cut at a
/// character boundary) to `on_text`; whether the cap was reached.
pub fn push_capped(
    text: &mut String,
    piece: &str,
    cap: usize,
    on_text: &mut (dyn FnMut(&str) + Send),
) -> bool {
    let room = cap.saturating_sub(text.len());
    let mut end = piece.len().min(room);
    while !piece.is_char_boundary(end) {
        end -= 1;
    }
    if end > 0 {
        text.push_str(&piece[..end]);
        on_text(&piece[..end]);
    }
    piece.len() > room
}

/// A finished reply: the raw text (JSON for structured requests) and what it cost.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Completion {
    pub text: String,
    pub usage: Option<Usage>,
    pub model: String,
    pub finish: FinishReason,
}

/// Rough token count for providers that report none: about four characters a token.
pub fn estimate_tokens(chars: usize) -> u64 {
    chars.div_ceil(4) as u64
}

/// Why a provider call failed. `is_retryable` decides whether the retry loop tries again.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum LlmError {
    #[error("rate limited (HTTP 429){}", retry_after.map(|d| format!(", retry after {}s", d.as_secs_f64())).unwrap_or_default())]
    RateLimited { retry_after: Option<Duration> },
    #[error("server error HTTP {status}: {body}")]
    Server {
        status: u16,
        body: String,
        retry_after: Option<Duration>,
    },
    #[error("request refused HTTP {status}: {body}")]
    Client { status: u16, body: String },
    #[error("cannot reach {url}: {detail}")]
    Connect { url: String, detail: String },
    #[error("no data from the provider for {0:?}")]
    Timeout(Duration),
    #[error("the stream was cut before the reply finished")]
    StreamCut,
    #[error("malformed stream chunk: {0}")]
    Malformed(String),
    #[error("{0}")]
    Fatal(String),
}

impl LlmError {
    /// The error an HTTP status other than 200 means: 429 a rate limit (with the server's
    /// Retry-After), 5xx and 408 the server's trouble (retried), anything else a refusal.
    pub fn from_status(status: u16, body: &str, retry_after: Option<Duration>) -> LlmError {
        match status {
            429 => LlmError::RateLimited { retry_after },
            500..=599 | 408 => LlmError::Server {
                status,
                body: trim_body(body),
                retry_after,
            },
            _ => LlmError::Client {
                status,
                body: trim_body(body),
            },
        }
    }

    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            LlmError::RateLimited { .. }
                | LlmError::Server { .. }
                | LlmError::Connect { .. }
                | LlmError::Timeout(_)
                | LlmError::StreamCut
                | LlmError::Malformed(_)
        )
    }

    /// The delay the server asked for, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::RateLimited { retry_after } | LlmError::Server { retry_after, .. } => {
                *retry_after
            }
            _ => None,
        }
    }

    /// A short reason for retry events.
    pub fn short_reason(&self) -> String {
        match self {
            LlmError::RateLimited { .. } => "rate limited (429)".into(),
            LlmError::Server { status, .. } => format!("server error ({status})"),
            LlmError::Client { status, .. } => format!("request refused ({status})"),
            LlmError::Connect { .. } => "connection failed".into(),
            LlmError::Timeout(_) => "timed out".into(),
            LlmError::StreamCut => "stream cut mid-way".into(),
            LlmError::Malformed(_) => "malformed chunk".into(),
            LlmError::Fatal(_) => "fatal".into(),
        }
    }
}

/// A receiver for raw text as it streams in (JSON for structured requests).
pub type TextSink<'a> = &'a mut (dyn FnMut(&str) + Send);

/// A streaming chat model.
pub trait Provider: Send + Sync {
    fn kind(&self) -> ProviderKind;
    fn model(&self) -> &str;
    /// Where requests go, for error messages.
    fn endpoint(&self) -> String;
    /// What to tell a user who cannot reach this provider.
    fn configure_hint(&self) -> String;
    /// Something every record this provider argues should say about it (a demonstration
    /// model, say), or None.
    fn caveat(&self) -> Option<&'static str> {
        None
    }
    /// Whether requests wait their turn for one engine (an in-process model) instead of
    /// running side by side; the engine then gives a round time per seat, not per phase.
    fn answers_one_at_a_time(&self) -> bool {
        false
    }
    /// The words appended to the system prompt that ask for a reply matching `reply`: the
    /// schema's whole text, unless the provider's sampler keeps every reply to the schema.
    fn schema_instructions(&self, reply: &ReplyFormat) -> String {
        crate::instructions::json_instructions(&reply.name, &reply.schema)
    }
    /// Embeddings of `texts` with `model` (the chat model when None), when the provider offers
    /// an embeddings endpoint; `Ok(None)` when it does not.
    fn embed<'a>(
        &'a self,
        texts: &'a [String],
        model: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<Vec<Vec<f32>>>, LlmError>> {
        let _ = (texts, model);
        Box::pin(async { Ok(None) })
    }
    /// Sends one request, streaming raw text into `on_text`; one attempt, no retries.
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_text: TextSink<'a>,
    ) -> BoxFuture<'a, Result<Completion, LlmError>>;
}

/// Parses a Retry-After header: delta-seconds (integer or decimal). HTTP dates are ignored.
pub fn parse_retry_after(value: Option<&reqwest::header::HeaderValue>) -> Option<Duration> {
    let text = value?.to_str().ok()?.trim();
    let seconds: f64 = text.parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds.min(3600.0)))
}

/// A reply other than 200, read up to the request's reply cap and for no longer than the idle
/// timeout: what a provider looks at to adapt its request or to say what went wrong.
pub struct Refusal {
    pub status: u16,
    pub body: String,
    retry_after: Option<Duration>,
}

impl Refusal {
    pub async fn read(response: reqwest::Response, cap: usize, idle: Duration) -> Refusal {
        let status = response.status().as_u16();
        let retry_after = parse_retry_after(response.headers().get("retry-after"));
        let body = match tokio::time::timeout(idle, super::http::body_capped(response, cap)).await {
            Ok(Ok((bytes, cut))) => {
                let mut body = String::from_utf8_lossy(&bytes).into_owned();
                if cut {
                    body.push_str(&format!(" … (cut at {cap} bytes)"));
                }
                body
            }
            Ok(Err(_)) | Err(_) => String::new(),
        };
        Refusal {
            status,
            body,
            retry_after,
        }
    }

    pub fn into_error(self) -> LlmError {
        LlmError::from_status(self.status, &self.body, self.retry_after)
    }
}

/// One server-sent event's JSON data, or the malformed text quoted (short and redacted).
pub fn event_json(data: &str) -> Result<serde_json::Value, LlmError> {
    serde_json::from_str(data).map_err(|e| LlmError::Malformed(format!("{e}: {}", trim_body(data))))
}

/// Turns a reqwest failure into an `LlmError` naming the URL, whose credentials (a proxy's
/// password) are gone before anything is formatted, from the URL and from reqwest's own text.
pub fn transport_error(url: &str, error: &reqwest::Error, idle: Duration) -> LlmError {
    let redacted = |text: &str| crate::sanitize::redact(text).into_owned();
    let url = redacted(url);
    let url = url.as_str();
    if error.is_timeout() {
        LlmError::Timeout(idle)
    } else if error.is_connect() || error.is_request() {
        let mut detail = error.to_string();
        let mut source = std::error::Error::source(error);
        while let Some(inner) = source {
            detail = inner.to_string();
            source = inner.source();
        }
        LlmError::Connect {
            url: url.to_string(),
            detail: redacted(&detail),
        }
    } else if error.is_body() || error.is_decode() {
        LlmError::StreamCut
    } else {
        LlmError::Connect {
            url: url.to_string(),
            detail: redacted(&error.to_string()),
        }
    }
}

/// Keeps an error body short and single-line for messages, with any API key it repeats
/// redacted: error text is journaled, printed and exported.
pub fn trim_body(body: &str) -> String {
    let flat: String = crate::sanitize::redact(body)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if flat.chars().count() > 300 {
        format!("{}…", flat.chars().take(300).collect::<String>())
    } else {
        flat
    }
}
