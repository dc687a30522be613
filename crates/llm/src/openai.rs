//! OpenAI-compatible chat completions over SSE: OpenAI, Ollama, vLLM, llama.cpp, LM Studio,
//! OpenRouter. Degrades the structured-reply shape step by step when an endpoint refuses it.

use super::capability::{Capabilities, StructuredMode};
use super::endpoint::{Endpoint, StreamReader};
use super::provider::{
    ChatRequest, Completion, DEFAULT_REPLY_BYTES, FinishReason, LlmError, Provider, Refusal,
    TextSink, Usage, event_json, transport_error, trim_body,
};
use super::sse::{Seen, SseEvent, Streamed};
use futures_util::future::BoxFuture;
use reqwest::RequestBuilder;
use serde_json::{Value, json};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::Semaphore;

pub struct OpenAiProvider {
    endpoint: Endpoint,
    /// Where the configuration came from, for the "cannot reach" hint.
    hint: String,
    /// The server's first model, when none was configured (local servers list theirs).
    discovered: OnceLock<String>,
    /// Requests under way, to notice a server that cuts one stream when another starts.
    in_flight: AtomicUsize,
    /// One request at a time, once the endpoint is known to need it.
    queue: Semaphore,
    /// Requests in a row that the server fell over with the schema in hand and before a word.
    schema_deaths: AtomicUsize,
    /// While a request is tried in plain JSON mode after such failures, the shape to go back
    /// to if it fails too.
    plain_trial: std::sync::Mutex<Option<Capabilities>>,
}

/// Counts a request as under way until dropped.
struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl OpenAiProvider {
    pub fn new(endpoint: Endpoint, hint: String) -> Self {
        OpenAiProvider {
            endpoint,
            hint,
            discovered: OnceLock::new(),
            in_flight: AtomicUsize::new(0),
            schema_deaths: AtomicUsize::new(0),
            plain_trial: std::sync::Mutex::new(None),
            queue: Semaphore::new(1),
        }
    }

    /// The model to ask for: configured, else discovered from `GET /models`.
    async fn model_name(&self) -> String {
        if !self.endpoint.model.is_empty() {
            return self.endpoint.model.clone();
        }
        if let Some(found) = self.discovered.get() {
            return found.clone();
        }
        let url = format!("{}/models", self.endpoint.base_url);
        let mut builder = self.endpoint.client.get(&url);
        if let Some(api_key) = &self.endpoint.api_key {
            builder = builder.bearer_auth(api_key);
        }
        let listed = async {
            let response = builder.send().await.ok()?;
            let (body, _) = super::http::body_capped(response, DEFAULT_REPLY_BYTES)
                .await
                .ok()?;
            let value: Value = serde_json::from_slice(&body).ok()?;
            value["data"][0]["id"].as_str().map(str::to_string)
        };
        match tokio::time::timeout(self.endpoint.idle, listed).await {
            Ok(Some(found)) => self.discovered.get_or_init(|| found).clone(),
            // The server will say what it thinks of a missing model.
            _ => "default".to_string(),
        }
    }

    /// A POST of a JSON body with the key, named by `request` for servers that log it.
    fn post_of(&self, url: &str, body: &Value, request: Option<&'static str>) -> RequestBuilder {
        let mut builder = self.endpoint.client.post(url).json(body);
        if let Some(request) = request {
            builder = builder.header(super::REQUEST_HEADER, request);
        }
        match &self.endpoint.api_key {
            Some(api_key) => builder.bearer_auth(api_key),
            None => builder,
        }
    }

    /// POSTs a JSON body with the key, waiting at most the idle timeout for the response.
    async fn post(&self, url: &str, body: &Value) -> Result<reqwest::Response, LlmError> {
        let builder = self.post_of(url, body, None);
        tokio::time::timeout(self.endpoint.idle, builder.send())
            .await
            .map_err(|_| LlmError::Timeout(self.endpoint.idle))?
            .map_err(|e| transport_error(url, &e, self.endpoint.idle))
    }

    fn url(&self) -> String {
        format!("{}/chat/completions", self.endpoint.base_url)
    }

    fn capability_key(&self) -> String {
        format!("openai {} {}", self.endpoint.base_url, self.endpoint.model)
    }

    fn body(&self, request: &ChatRequest, caps: Capabilities, model: &str) -> Value {
        let mut messages = vec![json!({"role": "system", "content": request.system})];
        messages.extend(
            request
                .messages
                .iter()
                .map(|m| json!({"role": m.role, "content": m.content})),
        );
        let mut body = json!({
            "model": model,
            "messages": messages,
            "stream": true,
        });
        if caps.stream_usage {
            body["stream_options"] = json!({"include_usage": true});
        }
        if let Some(max) = request.max_tokens {
            let field = if caps.max_completion_tokens {
                "max_completion_tokens"
            } else {
                "max_tokens"
            };
            body[field] = json!(max);
        }
        if let Some(temperature) = request.temperature {
            body["temperature"] = json!(temperature);
        }
        if let Some(reply) = &request.reply {
            match caps.mode {
                StructuredMode::JsonSchema => {
                    body["response_format"] = json!({
                        "type": "json_schema",
                        "json_schema": {"name": reply.name, "schema": compilable(&reply.schema), "strict": false},
                    });
                }
                StructuredMode::JsonObjectSchema => {
                    body["response_format"] =
                        json!({"type": "json_object", "schema": compilable(&reply.schema)});
                }
                StructuredMode::JsonObject => {
                    body["response_format"] = json!({"type": "json_object"});
                }
                StructuredMode::Instructions => {}
            }
        }
        body
    }

    /// When an endpoint refuses part of the request shape, the shape to try next.
    fn adapt(
        caps: Capabilities,
        status: u16,
        body: &str,
        structured: bool,
    ) -> Option<Capabilities> {
        let lower = body.to_ascii_lowercase();
        let mut next = caps;
        if structured
            && (lower.contains("response_format")
                || lower.contains("json_schema")
                || lower.contains("grammar"))
            && let Some(mode) = caps.mode.degrade()
        {
            next.mode = mode;
            return Some(next);
        }
        if (400..500).contains(&status) {
            if caps.stream_usage
                && (lower.contains("stream_options") || lower.contains("include_usage"))
            {
                next.stream_usage = false;
                return Some(next);
            }
            if !caps.max_completion_tokens
                && lower.contains("max_tokens")
                && lower.contains("max_completion_tokens")
            {
                next.max_completion_tokens = true;
                return Some(next);
            }
        }
        None
    }

    /// One attempt, queued behind others when the endpoint cannot serve two at once.
    async fn attempt(
        &self,
        request: &ChatRequest,
        on_text: TextSink<'_>,
    ) -> Result<Completion, LlmError> {
        let key = self.capability_key();
        let _turn = if self.endpoint.capabilities.get(&key).serial {
            self.queue.acquire().await.ok()
        } else {
            None
        };
        let others_at_start = self.in_flight.fetch_add(1, Ordering::SeqCst) > 0;
        let _counted = InFlight(&self.in_flight);
        let mut streamed = false;
        let result = {
            let mut watched = |chunk: &str| {
                streamed = true;
                on_text(chunk);
            };
            self.exchange(request, &mut watched).await
        };
        let concurrent = others_at_start || self.in_flight.load(Ordering::SeqCst) > 1;
        let mut trial = self.plain_trial.lock().unwrap_or_else(|e| e.into_inner());
        let Err(error) = &result else {
            self.schema_deaths.store(0, Ordering::SeqCst);
            *trial = None;
            return result;
        };
        if *error == LlmError::StreamCut && concurrent {
            // Some servers (llama-cpp-python) abort a stream when another request arrives.
            let mut caps = self.endpoint.capabilities.get(&key);
            caps.serial = true;
            self.endpoint.capabilities.set(&key, caps);
            return result;
        }
        if request.reply.is_none() || streamed || !died(error) {
            return result;
        }
        let caps = self.endpoint.capabilities.get(&key);
        if let Some(before) = trial.take() {
            if caps.mode == StructuredMode::JsonObject {
                // Plain JSON failed too, so the schema was not what failed: send it again.
                self.endpoint.capabilities.set(&key, before);
                self.schema_deaths.store(0, Ordering::SeqCst);
            }
            return result;
        }
        // The server fell over before a word with the schema in hand. Some (llama.cpp-based
        // ones) cannot compile a schema into a grammar and answer 500 or die. Once is taken as
        // chance; after twice in a row the next attempt is in plain JSON mode, where the
        // prompt states the schema and the parser holds the reply to it. It stays so if that
        // works.
        if caps.mode.sends_schema()
            && self.schema_deaths.fetch_add(1, Ordering::SeqCst) + 1 >= SCHEMA_DEATHS_BEFORE_PLAIN
        {
            *trial = Some(caps);
            self.endpoint.capabilities.set(
                &key,
                Capabilities {
                    mode: StructuredMode::JsonObject,
                    ..caps
                },
            );
        }
        result
    }

    async fn exchange(
        &self,
        request: &ChatRequest,
        on_text: TextSink<'_>,
    ) -> Result<Completion, LlmError> {
        let url = self.url();
        let model = self.model_name().await;
        let build = |caps: Capabilities| {
            let body = self.body(request, caps, &model);
            self.post_of(&url, &body, Some(request.label.request))
        };
        let adapt = |caps: Capabilities, refusal: &Refusal| {
            Self::adapt(caps, refusal.status, &refusal.body, request.reply.is_some())
        };
        let reader = Completions {
            usage: None,
            finish: None,
            model: self.model().to_string(),
            done: false,
        };
        let key = self.capability_key();
        let (reply_cap, read) = (request.reply_cap(), (reader, on_text));
        (self.endpoint)
            .exchange((&url, &key), reply_cap, build, adapt, read)
            .await
    }
}

/// A chat completions stream as read so far: the usage it reported, why it stopped, the model
/// that answered, and whether `[DONE]` came.
struct Completions {
    usage: Option<Usage>,
    finish: Option<FinishReason>,
    model: String,
    done: bool,
}

impl StreamReader for Completions {
    fn event(&mut self, event: &SseEvent) -> Result<Seen, LlmError> {
        if event.data.trim() == "[DONE]" {
            self.done = true;
            return Ok(Seen::Nothing);
        }
        let value = event_json(&event.data)?;
        if let Some(error) = value.get("error") {
            return Err(stream_error(error));
        }
        if let Some(name) = value.get("model").and_then(Value::as_str) {
            self.model = name.to_string();
        }
        if let Some(u) = value.get("usage").filter(|u| !u.is_null()) {
            self.usage = Some(usage_of(u));
        }
        let Some(choice) = value.get("choices").and_then(|c| c.get(0)) else {
            return Ok(Seen::Nothing);
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish = Some(match reason {
                "stop" => FinishReason::Stop,
                "length" => FinishReason::Length,
                _ => FinishReason::Other,
            });
        }
        let delta = choice
            .get("delta")
            .and_then(|d| d.get("content"))
            .and_then(Value::as_str);
        Ok(delta.map_or(Seen::Nothing, |d| Seen::Text(d.to_string())))
    }

    fn completion(self, read: Streamed) -> Result<Completion, LlmError> {
        if read.capped {
            return Ok(Completion {
                text: read.text,
                usage: self.usage,
                model: self.model,
                finish: FinishReason::Capped,
            });
        }
        let done = self.done
            || read
                .unfinished
                .is_some_and(|event| event.data.trim() == "[DONE]");
        // A stream that ends with neither [DONE] nor a finish reason was cut.
        let finish = match (done, self.finish) {
            (_, Some(finish)) => finish,
            (true, None) => FinishReason::Stop,
            (false, None) => return Err(LlmError::StreamCut),
        };
        Ok(Completion {
            text: read.text,
            usage: self.usage,
            model: self.model,
            finish,
        })
    }
}

impl Provider for OpenAiProvider {
    fn kind(&self) -> super::ProviderKind {
        super::ProviderKind::Openai
    }

    fn model(&self) -> &str {
        if self.endpoint.model.is_empty() {
            self.discovered
                .get()
                .map(String::as_str)
                .unwrap_or("server default")
        } else {
            &self.endpoint.model
        }
    }

    fn endpoint(&self) -> String {
        // A proxy's password in the base URL never reaches a message.
        crate::sanitize::redact(&self.url()).into_owned()
    }

    fn configure_hint(&self) -> String {
        self.hint.clone()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_text: TextSink<'a>,
    ) -> BoxFuture<'a, Result<Completion, LlmError>> {
        Box::pin(self.attempt(request, on_text))
    }

    fn embed<'a>(
        &'a self,
        texts: &'a [String],
        model: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<Vec<Vec<f32>>>, LlmError>> {
        Box::pin(self.embeddings(texts, model))
    }
}

/// The most bytes one text's embedding may take in a reply.
const EMBEDDING_BYTES: usize = 96 * 1024;

impl OpenAiProvider {
    /// `POST /embeddings`. A server without the endpoint (or the model) answers 4xx: no
    /// embeddings, not an error.
    async fn embeddings(
        &self,
        texts: &[String],
        model: Option<&str>,
    ) -> Result<Option<Vec<Vec<f32>>>, LlmError> {
        let url = format!("{}/embeddings", self.endpoint.base_url);
        let model = match model {
            Some(model) => model.to_string(),
            None => self.model_name().await,
        };
        let response = self
            .post(&url, &json!({"model": model, "input": texts}))
            .await?;
        let status = response.status().as_u16();
        if (400..500).contains(&status) && status != 429 {
            return Ok(None);
        }
        if status != 200 {
            let refusal = Refusal::read(response, DEFAULT_REPLY_BYTES, self.endpoint.idle).await;
            return Err(LlmError::Server {
                status,
                body: trim_body(&refusal.body),
                retry_after: None,
            });
        }
        // Room for each text's vector as JSON (4,096 numbers of ~20 characters), and never
        // less than a reply's default cap.
        let cap = DEFAULT_REPLY_BYTES.max(texts.len().saturating_mul(EMBEDDING_BYTES));
        let (body, cut) =
            tokio::time::timeout(self.endpoint.idle, super::http::body_capped(response, cap))
                .await
                .map_err(|_| LlmError::Timeout(self.endpoint.idle))?
                .map_err(|e| LlmError::Malformed(format!("embeddings reply: {e}")))?;
        if cut {
            return Err(LlmError::Malformed(format!(
                "embeddings reply: longer than {cap} bytes for {} texts",
                texts.len()
            )));
        }
        let value: Value = serde_json::from_slice(&body)
            .map_err(|e| LlmError::Malformed(format!("embeddings reply: {e}")))?;
        let vectors: Option<Vec<Vec<f32>>> = value["data"]
            .as_array()
            .and_then(|data| {
                data.iter()
                    .map(|item| {
                        item["embedding"].as_array().map(|numbers| {
                            numbers
                                .iter()
                                .filter_map(|n| n.as_f64().map(|f| f as f32))
                                .collect()
                        })
                    })
                    .collect::<Option<Vec<Vec<f32>>>>()
            })
            .filter(|vectors: &Vec<Vec<f32>>| {
                vectors.len() == texts.len() && vectors.iter().all(|v| !v.is_empty())
            });
        match vectors {
            Some(vectors) => Ok(Some(vectors)),
            None => Err(LlmError::Malformed(
                "the embeddings reply does not hold one vector per text".into(),
            )),
        }
    }
}

/// Failures in a row with the schema in hand after which the next attempt is in plain JSON mode.
const SCHEMA_DEATHS_BEFORE_PLAIN: usize = 2;

/// Whether a failure looks like the server falling over the request itself rather than being
/// busy or unreachable: a 5xx other than "overloaded" (503), a connection closed or reset after
/// the request was sent, or a stream cut with nothing in it.
fn died(error: &LlmError) -> bool {
    match error {
        LlmError::Server { status, .. } => *status >= 500 && *status != 503,
        LlmError::StreamCut => true,
        LlmError::Connect { detail, .. } => {
            let detail = detail.to_ascii_lowercase();
            !detail.contains("refused")
                && (detail.contains("closed")
                    || detail.contains("reset")
                    || detail.contains("incomplete"))
        }
        _ => false,
    }
}

/// An error event inside a stream, as the server's error.
fn stream_error(error: &Value) -> LlmError {
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("error event in stream");
    LlmError::Server {
        status: 500,
        body: trim_body(message),
        retry_after: None,
    }
}

/// The token counts a stream's `usage` reports.
fn usage_of(usage: &Value) -> Usage {
    let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    Usage {
        input: count("prompt_tokens"),
        output: count("completion_tokens"),
    }
}

/// The reply's schema as an OpenAI-compatible server is sent it: without strings' `maxLength`.
/// A llama.cpp-based server turns each bound into nested optional characters in its grammar,
/// and a bound in the thousands made llama-cpp-python's converter fail and the server crash
/// on the first argument; the bounds still reach the model in the prompt's instructions, the
/// token budget caps the reply, and the reply's parser holds it to the bounds.
fn compilable(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(key, _)| key.as_str() != "maxLength")
                .map(|(key, value)| {
                    // `properties` names fields, not keywords: a field called maxLength stays.
                    let value = match (key.as_str(), value) {
                        ("properties", Value::Object(fields)) => Value::Object(
                            fields
                                .iter()
                                .map(|(name, field)| (name.clone(), compilable(field)))
                                .collect(),
                        ),
                        _ => compilable(value),
                    };
                    (key.clone(), value)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(compilable).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 68: a llama.cpp-based server crashed compiling strings' `maxLength` into its
    /// grammar; the schema sent keeps everything else (`minLength`, `maxItems`, enums).
    #[test]
    fn the_schema_sent_leaves_out_strings_max_length_and_keeps_the_rest() {
        let schema = json!({"type": "object", "properties": {
            "argument": {"type": "string", "minLength": 1, "maxLength": 2000},
            "moves": {"type": "array", "maxItems": 4, "items": {"type": "object", "properties": {
                "text": {"type": "string", "maxLength": 300}, "act": {"enum": ["claim", "why"]}}}}
        }, "required": ["argument"]});
        let sent = compilable(&schema);
        assert!(!sent.to_string().contains("maxLength"), "{sent}");
        assert_eq!(sent["properties"]["argument"]["minLength"], 1);
        assert_eq!(sent["properties"]["moves"]["maxItems"], 4);
        assert_eq!(
            sent["properties"]["moves"]["items"]["properties"]["act"]["enum"],
            json!(["claim", "why"])
        );
        assert_eq!(sent["required"], json!(["argument"]));
    }

    #[test]
    fn refusals_naming_response_format_degrade_one_step() {
        let caps = Capabilities::default();
        let next = OpenAiProvider::adapt(caps, 400, "unknown field response_format", true).unwrap();
        assert_eq!(next.mode, StructuredMode::JsonObjectSchema);
        let next =
            OpenAiProvider::adapt(next, 400, "response_format.schema: extra field", true).unwrap();
        assert_eq!(next.mode, StructuredMode::JsonObject);
        let last = OpenAiProvider::adapt(
            next,
            500,
            "json_schema not supported; response_format",
            true,
        )
        .unwrap();
        assert_eq!(last.mode, StructuredMode::Instructions);
        assert_eq!(
            OpenAiProvider::adapt(last, 400, "response_format", true),
            None
        );
        assert_eq!(OpenAiProvider::adapt(caps, 400, "bad model", true), None);
    }

    #[test]
    fn refusals_of_stream_options_and_max_tokens_adapt() {
        let caps = Capabilities::default();
        let next = OpenAiProvider::adapt(caps, 400, "Unrecognized: stream_options", false).unwrap();
        assert!(!next.stream_usage);
        let next = OpenAiProvider::adapt(
            caps,
            400,
            "Unsupported parameter: 'max_tokens'. Use 'max_completion_tokens' instead.",
            false,
        )
        .unwrap();
        assert!(next.max_completion_tokens);
    }
}
