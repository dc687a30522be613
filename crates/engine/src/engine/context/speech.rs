//! Speaking: a speech sent to its seat's provider, streamed, retried, parsed (with one repair)
//! and journaled; `speak_all` runs a round's speeches together.

use super::*;
use crate::engine::reply::Unusable;

/// What kind of reply a speech expects.
#[derive(Clone)]
pub enum ReplyKind {
    /// Free markdown, streamed as it comes.
    Prose,
    /// A JSON reply the protocol's parser turns into the turn; `stream_field` is the prose
    /// field shown while it streams (none: nothing shows until it is done).
    Structured {
        parser: Arc<dyn ReplyParser>,
        stream_field: Option<&'static str>,
    },
}

/// One request to speak.
pub struct Speech {
    pub key: TurnKey,
    pub perspective: Option<String>,
    pub system: String,
    pub prompt: String,
    pub kind: ReplyKind,
    pub schema_name: &'static str,
    pub schema: Option<Value>,
    pub max_tokens: Option<u32>,
    /// The speech gives up (status timed_out) at this instant.
    pub deadline: Option<tokio::time::Instant>,
}

impl Speech {
    /// The same speech, spoken by the seat of `perspective` (its name goes with the request).
    pub fn by(mut self, perspective: impl Into<String>) -> Speech {
        self.perspective = Some(perspective.into());
        self
    }
}

/// A request as it is sent, for the audit trail: everything but the transport's headers
/// (where the keys are).
fn request_body(provider: &dyn Provider, request: &ChatRequest) -> Value {
    serde_json::json!({
        "provider": provider.kind().to_string(),
        "endpoint": provider.endpoint(),
        "model": provider.model(),
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
        "system": request.system,
        "messages": request
            .messages
            .iter()
            .map(|m| serde_json::json!({"role": m.role, "content": m.content}))
            .collect::<Vec<_>>(),
        "schema": request.reply.as_ref().map(|r| serde_json::json!({"name": r.name, "schema": r.schema})),
    })
}

/// How a reply's text reaches the faces while it streams.
#[derive(Clone, Copy)]
enum Streaming {
    /// Prose as it comes.
    Raw,
    /// Only this JSON field's prose.
    Field(&'static str),
    /// Nothing until the turn is done.
    Silent,
}

fn describe_failure(provider: &dyn Provider, error: &LlmError) -> String {
    match error {
        LlmError::Connect { url, detail } => format!(
            "cannot reach the {} provider at {url} ({detail}); {}",
            provider.kind(),
            provider.configure_hint()
        ),
        LlmError::Client {
            status: 401 | 403,
            body,
        } => format!(
            "the {} provider at {} refused the API key (HTTP 401/403: {body}); {}",
            provider.kind(),
            provider.endpoint(),
            provider.configure_hint()
        ),
        LlmError::Client { status: 404, body } => format!(
            "the {} provider at {} does not know this endpoint or model {:?} (HTTP 404: {body}); check --model and --base-url",
            provider.kind(),
            provider.endpoint(),
            provider.model()
        ),
        other => format!("{} ({})", other, provider.endpoint()),
    }
}

/// What parsing a reply produced.
enum Parsed {
    Prose(String),
    Reply(Reply),
}

/// Everything one speech went through, folded into its turn at the end.
#[derive(Default)]
struct Conversation {
    /// The reply's prose field, salvaged from an unusable reply.
    prose_field: Option<&'static str>,
    attempts: u32,
    tokens_in: u64,
    tokens_out: u64,
    estimated: bool,
    truncated: bool,
    /// The byte cap a reply passed (`[limits] reply_bytes`), when one did.
    capped: Option<usize>,
    model: Option<String>,
    content: String,
    parsed: Option<Parsed>,
    failure: Option<String>,
    first_problem: Option<String>,
    first_text: String,
    fallback_text: Option<String>,
    final_problem: Option<String>,
}

impl Conversation {
    fn fill(self, turn: &mut Turn) {
        turn.tokens_in = self.tokens_in;
        turn.tokens_out = self.tokens_out;
        turn.tokens_estimated = self.estimated;
        if let Some(model) = self.model {
            turn.model = model;
        }
        if let Some(failure) = self.failure {
            turn.status = TurnStatus::Failed;
            turn.note = Some(failure);
            return;
        }
        match self.parsed {
            Some(Parsed::Prose(text)) => turn.content = text,
            Some(Parsed::Reply(reply)) => {
                turn.content = reply.content;
                turn.moves = reply.moves;
                turn.confidence = reply.confidence;
                turn.data = reply.data;
                turn.note = reply.note;
            }
            None if self.fallback_text.is_some() => {
                let raw = self.fallback_text.unwrap_or_default();
                turn.status = TurnStatus::Fallback;
                turn.content = salvage_prose(&raw, self.prose_field);
                turn.note = Some(format!(
                    "no usable structured reply after one repair: {}",
                    self.final_problem
                        .or(self.first_problem)
                        .unwrap_or_default()
                ));
            }
            None => turn.content = self.content,
        }
        if self.truncated && turn.note.is_none() {
            turn.note = Some("the reply was cut at max_tokens and closed".into());
        }
        if let Some(cap) = self.capped {
            turn.status = TurnStatus::Truncated;
            let cut = format!(
                "the reply passed its cap of {cap} bytes ([limits] reply_bytes) and was cut there"
            );
            turn.note = Some(match turn.note.take() {
                Some(note) => format!("{cut}; {note}"),
                None => cut,
            });
        }
    }
}

/// The prose of an unusable reply, never raw JSON: the prose field if it can be found; else,
/// for a JSON reply, its longer string values; else the text before any JSON object.
fn salvage_prose(raw: &str, prose_field: Option<&'static str>) -> String {
    if let Some(field) = prose_field {
        let prose = FieldStreamer::new(field).feed(raw);
        if !prose.trim().is_empty() {
            return prose.trim().to_string();
        }
    }
    let mut sentences = Vec::new();
    if let Ok(value) = extract_json(raw) {
        collect_prose(&value, &mut sentences);
    }
    if !sentences.is_empty() {
        return sentences.join("\n\n");
    }
    let before_json = raw.find('{').map_or(raw, |start| &raw[..start]).trim();
    if before_json.is_empty() {
        "(the reply carried no usable argument)".to_string()
    } else {
        before_json.to_string()
    }
}

/// String values of a JSON reply that read like prose (several words), in order.
fn collect_prose(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(text) if text.split_whitespace().count() >= 4 => {
            out.push(text.trim().to_string())
        }
        Value::Array(items) => items.iter().for_each(|item| collect_prose(item, out)),
        Value::Object(map) => map.values().for_each(|item| collect_prose(item, out)),
        _ => {}
    }
}

impl Context {
    /// Speaks one turn: served from the journal if recorded, else asked of the seat's provider
    /// with retries, repaired once if unusable, journaled, and only then announced.
    pub async fn speak(&self, speech: Speech) -> Result<Turn, EngineError> {
        let recorded = lock(&self.recorded).remove(&speech.key);
        if let Some(turn) = recorded {
            self.push(&turn);
            self.emit(turn.completed_event(true));
            return Ok(turn);
        }
        let key = speech.key.clone();
        let provider = self.seat_provider(&key.seat);
        // Journaled with the turn's first request, in one commit rather than two.
        self.emit_with_next_write(Event::TurnStarted {
            round: key.round,
            phase: key.phase,
            seat: key.seat.clone(),
        });
        let started = Instant::now();
        let work = self.converse(&speech, provider.as_ref());
        let outcome = match speech.deadline {
            Some(deadline) => tokio::time::timeout_at(deadline, work).await.ok(),
            None => Some(work.await),
        };
        let latency_ms = started.elapsed().as_millis() as u64;
        let mut turn = Turn {
            latency_ms,
            ..Turn::pending(key.clone(), provider.kind().into(), provider.model())
        };
        match outcome {
            None => {
                turn.status = TurnStatus::TimedOut;
                turn.note = Some("the round's time ran out before this turn finished".into());
            }
            Some(conversation) => conversation.fill(&mut turn),
        }
        self.record(turn).await
    }

    /// Speaks several turns at once (or one after another when settings say sequential).
    pub async fn speak_all(&self, speeches: Vec<Speech>) -> Result<Vec<Turn>, EngineError> {
        if self.settings.sequential {
            let mut turns = Vec::new();
            for speech in speeches {
                turns.push(self.speak(speech).await?);
            }
            return Ok(turns);
        }
        let results =
            futures_util::future::join_all(speeches.into_iter().map(|s| self.speak(s))).await;
        results.into_iter().collect()
    }

    /// The provider request a speech makes: its label (named over the wire), the system prompt
    /// with the words that ask for the reply's schema (as `provider` wants them) and the
    /// debate's lessons where they may reach it, the prompt, the reply's schema.
    fn request_for(&self, speech: &Speech, provider: &dyn Provider) -> ChatRequest {
        let reply_format = speech
            .schema
            .as_ref()
            .map(|schema| crate::llm::ReplyFormat {
                name: speech.schema_name.to_string(),
                schema: schema.clone(),
            });
        let system = match &reply_format {
            Some(reply) => crate::llm::instructions::system_asking(
                &speech.system,
                &provider.schema_instructions(reply),
            ),
            None => speech.system.clone(),
        };
        ChatRequest {
            label: crate::llm::RequestLabel {
                round: speech.key.round,
                phase: speech.key.phase,
                seat: speech.key.seat.clone(),
                perspective: speech.perspective.clone(),
                request: speech.schema_name,
            },
            system: match &self.settings.lessons {
                Some(lessons) if !(self.settings.lessons_withheld)(&speech.key) => {
                    format!("{system}\n\n{lessons}")
                }
                _ => system,
            },
            messages: vec![ChatMessage::user(speech.prompt.clone())],
            reply: reply_format,
            max_tokens: speech.max_tokens,
            temperature: self.settings.temperature,
            reply_bytes: self.settings.reply_bytes,
        }
    }

    /// Runs the exchange with the provider: first request, retries, one repair request.
    async fn converse(&self, speech: &Speech, provider: &dyn Provider) -> Conversation {
        let mut conversation = Conversation {
            prose_field: match &speech.kind {
                ReplyKind::Structured { stream_field, .. } => *stream_field,
                ReplyKind::Prose => None,
            },
            ..Conversation::default()
        };
        let mut request = self.request_for(speech, provider);
        let streaming = match speech.kind {
            ReplyKind::Prose => Streaming::Raw,
            // A structured reply with no prose field streams nothing: faces never see raw JSON.
            ReplyKind::Structured {
                stream_field: Some(field),
                ..
            } => Streaming::Field(field),
            ReplyKind::Structured {
                stream_field: None, ..
            } => Streaming::Silent,
        };
        let completion = match self
            .call(speech, provider, &request, streaming, &mut conversation)
            .await
        {
            Ok(completion) => completion,
            Err(error) => {
                conversation.failure = Some(describe_failure(provider, &error));
                return conversation;
            }
        };
        if matches!(speech.kind, ReplyKind::Prose) {
            conversation.content = completion.text;
            return conversation;
        }
        match self.interpret(speech, &completion.text, false) {
            Ok(parsed) => {
                conversation.parsed = Some(parsed);
                return conversation;
            }
            Err(problem) => {
                // One repair request naming what was wrong.
                self.emit(Event::Retry {
                    seat: speech.key.seat.clone(),
                    round: speech.key.round,
                    phase: speech.key.phase,
                    attempt: conversation.attempts + 1,
                    reason: format!("unusable reply, asking for a repair: {problem}"),
                    delay_ms: 0,
                });
                request
                    .messages
                    .push(ChatMessage::assistant(completion.text.clone()));
                request.messages.push(ChatMessage::user(format!(
                    "Your reply could not be used: {problem}. Reply again with only the JSON object, \
                     following the schema `{}` exactly, with no other text.",
                    speech.schema_name
                )));
                conversation.first_problem = Some(problem.0);
                conversation.first_text = completion.text;
            }
        }
        match self
            .call(speech, provider, &request, streaming, &mut conversation)
            .await
        {
            Ok(repaired) => match self.interpret(speech, &repaired.text, true) {
                Ok(parsed) => conversation.parsed = Some(parsed),
                Err(problem) => {
                    conversation.fallback_text = Some(repaired.text);
                    conversation.final_problem = Some(problem.0);
                }
            },
            Err(error) => {
                conversation.fallback_text = Some(conversation.first_text.clone());
                let why = describe_failure(provider, &error);
                conversation.final_problem = Some(format!("the repair request failed: {why}"));
            }
        }
        conversation
    }

    /// One request with retries; streams prose deltas as events and tallies tokens.
    async fn call(
        &self,
        speech: &Speech,
        provider: &dyn Provider,
        request: &ChatRequest,
        streaming: Streaming,
        conversation: &mut Conversation,
    ) -> Result<Completion, LlmError> {
        let key = &speech.key;
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            conversation.attempts += 1;
            let mut streamer = match streaming {
                Streaming::Field(field) => Some(FieldStreamer::new(field)),
                Streaming::Raw | Streaming::Silent => None,
            };
            let events = self.events.clone();
            let (seat, round, phase) = (key.seat.clone(), key.round, key.phase);
            let mut received = 0usize;
            let mut on_text = |chunk: &str| {
                received += chunk.len();
                let prose = match (streamer.as_mut(), streaming) {
                    (Some(streamer), _) => streamer.feed(chunk),
                    (None, Streaming::Raw) => chunk.to_string(),
                    (None, _) => String::new(),
                };
                if !prose.is_empty() {
                    let _ = events.send(Event::TurnDelta {
                        seat: seat.clone(),
                        round,
                        phase,
                        text: prose,
                    });
                }
            };
            let place = AuditPlace {
                round: key.round,
                phase: key.phase.to_string(),
                seat: key.seat.clone(),
                attempt: conversation.attempts,
                provider: provider.kind().to_string(),
                model: provider.model().to_string(),
            };
            self.audit(AuditKind::Request, &place, request_body(provider, request));
            // The turn's start is journaled now (or waits behind a locked journal): told
            // before any of its reply streams.
            self.tell_untold();
            let result = provider.complete(request, &mut on_text).await;
            self.audit_result(&place, &result);
            let prompt_tokens = estimate_tokens(request.prompt_chars());
            match result {
                Ok(mut completion) => {
                    // A reply is untrusted: a key it carries (echoed, or leaked by a hook's
                    // output) goes no further, so every turn, record and title built from it
                    // is free of it, live and in a re-run alike.
                    if let std::borrow::Cow::Owned(clean) =
                        crate::sanitize::redact(&completion.text)
                    {
                        completion.text = clean;
                    }
                    match completion.usage {
                        Some(usage) => {
                            conversation.tokens_in += usage.input;
                            conversation.tokens_out += usage.output;
                        }
                        None => {
                            conversation.tokens_in += prompt_tokens;
                            conversation.tokens_out += estimate_tokens(completion.text.len());
                            conversation.estimated = true;
                        }
                    }
                    conversation.model = Some(completion.model.clone());
                    if completion.finish == crate::llm::FinishReason::Length {
                        conversation.truncated = true;
                    }
                    if completion.finish == crate::llm::FinishReason::Capped {
                        conversation.capped = Some(request.reply_cap());
                    }
                    return Ok(completion);
                }
                Err(error) => {
                    // An attempt that streamed before failing was billed; its cost is a guess.
                    if received > 0 {
                        conversation.tokens_in += prompt_tokens;
                        conversation.tokens_out += estimate_tokens(received);
                        conversation.estimated = true;
                    }
                    if !self.settings.retry.should_retry(attempt, &error) {
                        return Err(error);
                    }
                    let delay = self.settings.retry.delay(attempt, &error, random_unit());
                    self.emit(Event::Retry {
                        seat: key.seat.clone(),
                        round: key.round,
                        phase: key.phase,
                        attempt: attempt + 1,
                        reason: error.short_reason(),
                        delay_ms: delay.as_millis() as u64,
                    });
                    tokio::time::sleep(delay).await;
                }
            }
        }
    }

    /// Appends to the audit trail (in order with the events, retried while the journal is
    /// locked).
    pub(super) fn audit(&self, kind: AuditKind, place: &AuditPlace, body: Value) {
        self.append(Append::Audit {
            kind,
            place: place.clone(),
            body,
        });
    }

    /// Queues the reply's audit entry for the next journal write (the turn's, when it makes
    /// one), so a call costs one commit, not two, beside its turn.
    fn audit_result(&self, place: &AuditPlace, result: &Result<Completion, LlmError>) {
        let audit = |kind, body| {
            self.defer(Append::Audit {
                kind,
                place: place.clone(),
                body,
            })
        };
        match result {
            Ok(completion) => audit(
                AuditKind::Response,
                serde_json::json!({
                    "model": completion.model,
                    "text": completion.text,
                    "finish": format!("{:?}", completion.finish).to_lowercase(),
                    "usage": completion.usage.map(|u| serde_json::json!({"input": u.input, "output": u.output})),
                }),
            ),
            Err(error) => audit(
                AuditKind::Failure,
                serde_json::json!({
                    "error": error.to_string(),
                    "retryable": error.is_retryable(),
                }),
            ),
        }
    }

    fn interpret(&self, speech: &Speech, text: &str, repair: bool) -> Result<Parsed, Unusable> {
        match &speech.kind {
            ReplyKind::Prose => Ok(Parsed::Prose(text.to_string())),
            ReplyKind::Structured { parser, .. } => {
                let value = extract_json(text)?;
                let turns = self.turns();
                let transcript = Transcript {
                    key: &speech.key,
                    turns: &turns,
                    repair,
                };
                parser.parse(&value, &transcript).map(Parsed::Reply)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ARGUMENT: Option<&str> = Some("argument");

    #[test]
    fn salvaged_prose_is_never_raw_json() {
        assert_eq!(
            salvage_prose(r#"{"argument": "Redis is fast", "moves": 3}"#, ARGUMENT),
            "Redis is fast"
        );
        assert_eq!(
            salvage_prose(
                r#"{"type": "object", "properties": {"x": ["we should cache in redis now", "id1"]}}"#,
                ARGUMENT
            ),
            "we should cache in redis now"
        );
        assert_eq!(
            salvage_prose(r#"{"type": "object"}"#, None),
            "(the reply carried no usable argument)"
        );
        assert_eq!(
            salvage_prose("Plain prose only.", ARGUMENT),
            "Plain prose only."
        );
        assert_eq!(
            salvage_prose("I think so. {\"broken\": ", None),
            "I think so."
        );
    }
}
