//! Anthropic Messages API over SSE. Structured replies use a forced tool whose input schema is
//! the reply schema; its streamed `input_json_delta` pieces are the reply text.

use super::capability::{Capabilities, StructuredMode};
use super::endpoint::{Endpoint, StreamReader};
use super::provider::{
    ChatRequest, Completion, FinishReason, LlmError, Provider, Refusal, TextSink, Usage,
    event_json, trim_body,
};
use super::sse::{Seen, SseEvent, Streamed};
use futures_util::future::BoxFuture;
use serde_json::{Value, json};

const API_VERSION: &str = "2023-06-01";
const DEFAULT_MAX_TOKENS: u32 = 4096;

pub struct AnthropicProvider {
    endpoint: Endpoint,
}

impl AnthropicProvider {
    pub fn new(endpoint: Endpoint) -> Self {
        AnthropicProvider { endpoint }
    }

    fn url(&self) -> String {
        if self.endpoint.base_url.ends_with("/v1") {
            format!("{}/messages", self.endpoint.base_url)
        } else {
            format!("{}/v1/messages", self.endpoint.base_url)
        }
    }

    fn capability_key(&self) -> String {
        format!(
            "anthropic {} {}",
            self.endpoint.base_url, self.endpoint.model
        )
    }

    fn body(&self, request: &ChatRequest, mode: StructuredMode) -> Value {
        let messages: Vec<Value> = request
            .messages
            .iter()
            .map(|m| json!({"role": m.role, "content": m.content}))
            .collect();
        let mut body = json!({
            "model": self.endpoint.model,
            "system": request.system,
            "messages": messages,
            "max_tokens": request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            "stream": true,
        });
        if let Some(temperature) = request.temperature {
            body["temperature"] = json!(temperature);
        }
        if let Some(reply) = &request.reply
            && mode != StructuredMode::Instructions
        {
            body["tools"] = json!([{
                "name": reply.name,
                "description": "Submit your reply. Every field is read by the program.",
                "input_schema": reply.schema,
            }]);
            body["tool_choice"] = json!({"type": "tool", "name": reply.name});
        }
        body
    }

    async fn attempt(
        &self,
        request: &ChatRequest,
        on_text: TextSink<'_>,
    ) -> Result<Completion, LlmError> {
        let endpoint = &self.endpoint;
        let url = self.url();
        let build = |caps: Capabilities| {
            let builder = endpoint
                .client
                .post(&url)
                .header("anthropic-version", API_VERSION)
                .header(super::REQUEST_HEADER, request.label.request)
                .json(&self.body(request, caps.mode));
            match &endpoint.api_key {
                Some(api_key) => builder.header("x-api-key", api_key),
                None => builder,
            }
        };
        // Endpoints (proxies, look-alikes) that refuse tools fall back to instructions.
        let adapt = |caps: Capabilities, refusal: &Refusal| {
            let lower = refusal.body.to_ascii_lowercase();
            (request.reply.is_some()
                && caps.mode != StructuredMode::Instructions
                && (400..500).contains(&refusal.status)
                && (lower.contains("tool") || lower.contains("input_schema")))
            .then_some(Capabilities {
                mode: StructuredMode::Instructions,
                ..caps
            })
        };
        let reader = Messages {
            usage: Usage::default(),
            saw_usage: false,
            finish: FinishReason::Stop,
            model: endpoint.model.clone(),
        };
        let key = self.capability_key();
        let (reply_cap, read) = (request.reply_cap(), (reader, on_text));
        endpoint
            .exchange((&url, &key), reply_cap, build, adapt, read)
            .await
    }
}

/// The Messages API's stream as read so far: the usage it reported, why it stopped, the model
/// that answered.
struct Messages {
    usage: Usage,
    saw_usage: bool,
    finish: FinishReason,
    model: String,
}

impl StreamReader for Messages {
    fn event(&mut self, event: &SseEvent) -> Result<Seen, LlmError> {
        let value = event_json(&event.data)?;
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .or(event.event.as_deref())
            .unwrap_or("");
        match kind {
            "message_start" => {
                let message = &value["message"];
                if let Some(name) = message.get("model").and_then(Value::as_str) {
                    self.model = name.to_string();
                }
                if let Some(input) = message["usage"].get("input_tokens").and_then(Value::as_u64) {
                    self.usage.input = input;
                    self.saw_usage = true;
                }
            }
            "content_block_delta" => {
                let delta = &value["delta"];
                let piece = match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => delta.get("text").and_then(Value::as_str),
                    Some("input_json_delta") => delta.get("partial_json").and_then(Value::as_str),
                    _ => None,
                };
                return Ok(piece.map_or(Seen::Nothing, |p| Seen::Text(p.to_string())));
            }
            "message_delta" => {
                if let Some(output) = value["usage"].get("output_tokens").and_then(Value::as_u64) {
                    self.usage.output = output;
                    self.saw_usage = true;
                }
                if let Some(reason) = value["delta"].get("stop_reason").and_then(Value::as_str) {
                    self.finish = finish_reason(reason);
                }
            }
            "message_stop" => return Ok(Seen::Stop),
            "error" => return Err(stream_error(&value["error"])),
            _ => {}
        }
        Ok(Seen::Nothing)
    }

    fn completion(self, read: Streamed) -> Result<Completion, LlmError> {
        let finish = if read.capped {
            FinishReason::Capped
        } else if read.stopped {
            self.finish
        } else {
            return Err(LlmError::StreamCut);
        };
        Ok(Completion {
            text: read.text,
            usage: self.saw_usage.then_some(self.usage),
            model: self.model,
            finish,
        })
    }
}

impl Provider for AnthropicProvider {
    fn kind(&self) -> super::ProviderKind {
        super::ProviderKind::Anthropic
    }

    fn model(&self) -> &str {
        &self.endpoint.model
    }

    fn endpoint(&self) -> String {
        // A proxy's password in the base URL never reaches a message.
        crate::sanitize::redact(&self.url()).into_owned()
    }

    fn configure_hint(&self) -> String {
        "set ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL or --base-url for a proxy)".to_string()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_text: TextSink<'a>,
    ) -> BoxFuture<'a, Result<Completion, LlmError>> {
        Box::pin(self.attempt(request, on_text))
    }
}

/// An `error` event inside a stream, as the error it is (rate limit, refusal, overload).
fn stream_error(error: &Value) -> LlmError {
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("error event");
    let error_type = error.get("type").and_then(Value::as_str).unwrap_or("");
    match error_type {
        "rate_limit_error" => LlmError::RateLimited { retry_after: None },
        "invalid_request_error" | "authentication_error" | "permission_error" => LlmError::Client {
            status: 400,
            body: trim_body(message),
        },
        _ => LlmError::Server {
            status: 529,
            body: trim_body(message),
            retry_after: None,
        },
    }
}

/// Why the message stopped, as moot says it.
fn finish_reason(stop_reason: &str) -> FinishReason {
    match stop_reason {
        "max_tokens" => FinishReason::Length,
        "end_turn" | "tool_use" | "stop_sequence" => FinishReason::Stop,
        _ => FinishReason::Other,
    }
}
