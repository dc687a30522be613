//! What the HTTP providers share: where a provider is and how it is reached (the client, the
//! base URL, the key, the model, the capabilities learned of it, the idle timeout), and one
//! streamed exchange with it: the request sent until the provider takes it or refuses it for
//! good, then the reply's stream read by the provider's own reader.

use super::capability::{Capabilities, CapabilityCache};
use super::provider::{Completion, LlmError, Refusal, TextSink, transport_error};
use super::sse::{Seen, SseEvent, Streamed, read_reply};
use std::sync::Arc;
use std::time::Duration;

/// Where an HTTP provider is and how it is reached.
pub struct Endpoint {
    pub client: reqwest::Client,
    /// Without a trailing `/`.
    pub base_url: String,
    pub api_key: Option<String>,
    /// Empty: the server's own choice (an OpenAI-compatible server lists its models).
    pub model: String,
    /// What this endpoint was found to accept, shared by every provider of a run.
    pub capabilities: Arc<CapabilityCache>,
    /// The longest wait for a byte of a reply.
    pub idle: Duration,
}

impl Endpoint {
    pub fn new(
        client: reqwest::Client,
        base_url: &str,
        api_key: Option<String>,
        model: &str,
        capabilities: Arc<CapabilityCache>,
        idle: Duration,
    ) -> Endpoint {
        Endpoint {
            client,
            base_url: base_url.trim_end_matches('/').to_string(),
            api_key,
            model: model.to_string(),
            capabilities,
            idle,
        }
    }

    /// Sends the request `build` makes until the provider answers 200 or refuses it for
    /// good, then reads the reply's stream with `reader`, taking at most `reply_cap` bytes of
    /// text. A refusal that `adapt` answers with other capabilities (no tools, no schema: what
    /// some servers cannot take) is sent again with them, and they are kept under `key` for
    /// the next request.
    pub async fn exchange(
        &self,
        (url, key): (&str, &str),
        reply_cap: usize,
        mut build: impl FnMut(Capabilities) -> reqwest::RequestBuilder,
        adapt: impl Fn(Capabilities, &Refusal) -> Option<Capabilities>,
        (mut reader, on_text): (impl StreamReader, TextSink<'_>),
    ) -> Result<Completion, LlmError> {
        let mut capabilities = self.capabilities.get(key);
        let response = loop {
            let response = tokio::time::timeout(self.idle, build(capabilities).send())
                .await
                .map_err(|_| LlmError::Timeout(self.idle))?
                .map_err(|e| transport_error(url, &e, self.idle))?;
            if response.status() == 200 {
                break response;
            }
            let refusal = Refusal::read(response, reply_cap, self.idle).await;
            match adapt(capabilities, &refusal) {
                Some(next) => {
                    capabilities = next;
                    self.capabilities.set(key, capabilities);
                }
                None => return Err(refusal.into_error()),
            }
        };
        let read = read_reply(response, url, self.idle, reply_cap, on_text, |event| {
            reader.event(event)
        })
        .await?;
        reader.completion(read)
    }
}

/// A provider's reading of its own stream: what each event says, and the completion the
/// whole stream makes.
pub trait StreamReader {
    fn event(&mut self, event: &SseEvent) -> Result<Seen, LlmError>;
    fn completion(self, read: Streamed) -> Result<Completion, LlmError>;
}
