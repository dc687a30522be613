//! The context protocols stand on: `speak` (journal-first, streamed, retried, validated,
//! served from the journal on resume), `speak_all`, `checkpoint`, `clarify` and `emit`.

use super::reply::{Reply, ReplyParser, Transcript};
use crate::debate::{AskKind, Control, Event, Phase, Seat, Stage, Turn, TurnKey, TurnStatus};
use crate::llm::retry::random_unit;
use crate::llm::structured::{FieldStreamer, extract_json};
use crate::llm::{
    ChatMessage, ChatRequest, Completion, LlmError, Provider, RetryPolicy, estimate_tokens,
};
use crate::store::{AuditKind, AuditPlace, CheckpointRecord, Store, StoreError};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// How long the engine keeps retrying a journal write another process has locked before it
/// gives up and the debate stops (resumable, nothing recorded lost).
const JOURNAL_PATIENCE: Duration = Duration::from_secs(120);

/// A mutex's value even after a panic elsewhere poisoned it: every value kept behind one here
/// is whole between statements.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// The channels a face uses to watch a debate and steer it, and who answers through them.
pub struct Wiring {
    pub events: mpsc::UnboundedSender<Event>,
    pub controls: mpsc::UnboundedReceiver<Control>,
    /// Who answers the controls ("alice at the workbench", "headless auto-answer"), journaled
    /// with every answer so a record can say who approved it.
    pub answerer: String,
}

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

impl ReplyKind {
    /// A reply checked by a plain validator, its `stream_field` shown while it streams and
    /// kept as the turn's text.
    pub fn validated(
        validator: super::reply::Validator,
        stream_field: Option<&'static str>,
    ) -> ReplyKind {
        ReplyKind::Structured {
            parser: Arc::new(super::reply::Validated {
                validator,
                prose_field: stream_field,
            }),
            stream_field,
        }
    }
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

/// What the journal already holds of a debate being resumed.
#[derive(Debug, Clone, Default)]
pub struct Replay {
    pub turns: Vec<Turn>,
    pub answers: Vec<CheckpointRecord>,
    /// The event log so far: a resume re-emits these, and they are not logged twice.
    pub events: Vec<Event>,
}

/// How the engine runs.
#[derive(Debug, Clone)]
pub struct EngineSettings {
    /// Run every call one after another (for comparison with the parallel schedule).
    pub sequential: bool,
    pub retry: RetryPolicy,
    pub checkpoints: bool,
    pub checkpoint_timeout: Duration,
    pub temperature: Option<f32>,
    /// Keep request and reply bodies in the audit trail, not only their hashes.
    pub audit: bool,
    /// Lessons from earlier debates, appended to every system prompt…
    pub lessons: Option<String>,
    /// …but those of turns the protocol argues from the question alone.
    pub lessons_withheld: fn(&TurnKey) -> bool,
    /// `[limits] reply_bytes`: the most bytes of one reply (None: from `max_tokens`).
    pub reply_bytes: Option<usize>,
}

/// How often a waiting gate looks in the journal for a decision made elsewhere.
const GATE_POLL: Duration = Duration::from_millis(500);

/// How an approval gate was settled.
#[derive(Debug, Clone, PartialEq)]
pub enum GateOutcome {
    Approved {
        by: String,
    },
    Rejected {
        by: String,
        reason: String,
    },
    /// Nobody decided in time: the debate pauses, and a resume asks again.
    TimedOut,
}

impl GateOutcome {
    /// The answer it amounts to, for the faces' question to close.
    fn control(&self) -> Control {
        match self {
            GateOutcome::Rejected { reason, .. } => Control::Decline(reason.clone()),
            _ => Control::Accept,
        }
    }
}

/// The outcome of asking the person something.
#[derive(Debug, Clone, PartialEq)]
pub enum CheckpointOutcome {
    /// `by` is who answered (the face's answerer, journaled with the answer).
    Answered { control: Control, by: String },
    /// Checkpoints are off: nobody was asked.
    Unasked,
    /// Nobody answered in time: the debate pauses and can be resumed.
    TimedOut,
}

/// Which provider each seat speaks through.
#[derive(Clone)]
pub struct Seating {
    pub default: Arc<dyn Provider>,
    pub per_seat: HashMap<String, Arc<dyn Provider>>,
}

impl Seating {
    pub fn for_seat(&self, seat: &str) -> Arc<dyn Provider> {
        self.per_seat
            .get(seat)
            .cloned()
            .unwrap_or_else(|| self.default.clone())
    }
}

/// Everything a running protocol needs; shared by the tasks of one debate.
pub struct Context {
    pub debate_id: String,
    store: Store,
    events: mpsc::UnboundedSender<Event>,
    controls: tokio::sync::Mutex<mpsc::UnboundedReceiver<Control>>,
    answerer: String,
    recorded: Mutex<HashMap<TurnKey, Turn>>,
    recorded_answers: Vec<CheckpointRecord>,
    logged: Mutex<LoggedEvents>,
    transcript: Mutex<Vec<Turn>>,
    seating: Mutex<Seating>,
    /// Why the debate last stopped for want of an answer, for the pause notice.
    unanswered: Mutex<Option<String>>,
    /// Events and audit entries not yet written (the journal was locked), in order: each is
    /// tried again before the next journal write, so none is lost and the chain keeps the
    /// order they happened in.
    backlog: Mutex<std::collections::VecDeque<Append>>,
    /// Whether the debate has told that the journal is locked, since it last wrote to it.
    locked_told: AtomicBool,
    pub settings: EngineSettings,
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The provider could not be used at all (every seat failed, or the first call did).
    #[error("{0}")]
    Provider(String),
    /// The protocol's setup is impossible (no perspectives to seat, say).
    #[error("{0}")]
    Setup(String),
}

impl Context {
    /// `replay` comes from the journal when resuming; empty for a new debate.
    pub fn new(
        debate_id: String,
        store: Store,
        wiring: Wiring,
        seating: Seating,
        settings: EngineSettings,
        replay: Replay,
    ) -> Context {
        Context {
            debate_id,
            store,
            events: wiring.events,
            controls: tokio::sync::Mutex::new(wiring.controls),
            answerer: wiring.answerer,
            recorded: Mutex::new(replay.turns.into_iter().map(|t| (t.key(), t)).collect()),
            recorded_answers: replay.answers,
            logged: Mutex::new(LoggedEvents {
                events: replay.events.iter().map(as_logged).collect(),
                next: 0,
            }),
            transcript: Mutex::new(Vec::new()),
            seating: Mutex::new(seating),
            unanswered: Mutex::new(None),
            backlog: Mutex::new(std::collections::VecDeque::new()),
            locked_told: AtomicBool::new(false),
            settings,
        }
    }

    /// What nobody answered in time, when a question or gate paused the debate: "the
    /// checkpoint of round 2 within 1800 s".
    pub fn unanswered(&self) -> Option<String> {
        lock(&self.unanswered).clone()
    }

    fn note_unanswered(&self, what: String, timeout: Duration) {
        *lock(&self.unanswered) = Some(format!("{what} within {} s", timeout.as_secs()));
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Runs a journal write, waiting out another process's lock (with a notice) for up to
    /// `JOURNAL_PATIENCE` instead of failing the debate at the first busy answer.
    pub async fn journal<T>(
        &self,
        write: impl Fn(&Store) -> Result<T, StoreError>,
    ) -> Result<T, EngineError> {
        let started = tokio::time::Instant::now();
        let mut delay = Duration::from_millis(200);
        loop {
            match self.drain().and_then(|()| write(&self.store)) {
                Err(StoreError::Locked { path }) if started.elapsed() < JOURNAL_PATIENCE => {
                    self.tell_locked(&path);
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(5));
                }
                Err(StoreError::Locked { path }) => {
                    return Err(EngineError::Store(StoreError::LockedTooLong {
                        path,
                        seconds: JOURNAL_PATIENCE.as_secs(),
                    }));
                }
                other => {
                    if other.is_ok() {
                        self.locked_told.store(false, Ordering::Relaxed);
                    }
                    return other.map_err(EngineError::from);
                }
            }
        }
    }

    /// Says once per spell that another process holds the journal, from whichever write
    /// meets the lock first, so the wait is explained as soon as it starts.
    fn tell_locked(&self, path: &str) {
        if !self.locked_told.swap(true, Ordering::Relaxed) {
            self.emit(Event::Notice {
                message: format!(
                    "the journal {path} is locked by another process; waiting for it \
                     (up to {} s) before going on",
                    JOURNAL_PATIENCE.as_secs()
                ),
            });
        }
    }

    /// Writes every append still waiting, in order; stops at the first the journal refuses
    /// (it stays first in line).
    fn drain(&self) -> Result<(), StoreError> {
        let mut backlog = lock(&self.backlog);
        while let Some(append) = backlog.front() {
            let written = match append {
                Append::Event(event) => self.store.record_event(&self.debate_id, event),
                Append::Audit { kind, place, body } => self.store.record_audit(
                    &self.debate_id,
                    *kind,
                    place,
                    body,
                    self.settings.audit,
                ),
                Append::Stage(stage) => self.store.set_stage(&self.debate_id, stage.clone()),
            };
            match written {
                Ok(()) => {
                    backlog.pop_front();
                }
                Err(StoreError::Locked { path }) => return Err(StoreError::Locked { path }),
                // Where the debate stands is a courtesy for `moot list`; the next stage
                // replaces it anyway.
                Err(_) if matches!(append, Append::Stage(_)) => {
                    backlog.pop_front();
                }
                Err(error) => {
                    // Not a lock that passes: this entry can never be written (it does not
                    // serialize, or the journal is broken), so it is told, not retried forever.
                    backlog.pop_front();
                    let _ = self.events.send(Event::Notice {
                        message: format!("the journal missed an entry: {error}"),
                    });
                }
            }
        }
        Ok(())
    }

    /// Appends an event or audit entry: at once when the journal takes it, else before the
    /// next journal write (or `flush`), never dropped.
    fn append(&self, append: Append) {
        let stuck = {
            let mut backlog = lock(&self.backlog);
            let stuck = !backlog.is_empty();
            backlog.push_back(append);
            stuck
        };
        // Behind an entry the journal already refused, this one only queues: the next journal
        // write retries them all with backoff, instead of every event blocking for SQLite's
        // busy wait while another process holds the lock.
        if !stuck && let Err(StoreError::Locked { path }) = self.drain() {
            self.tell_locked(&path);
        }
    }

    /// Waits until every pending append is written (up to the journal's patience); the
    /// session calls it before it records how the debate ended.
    pub async fn flush(&self) -> Result<(), EngineError> {
        self.journal(|_| Ok(())).await
    }

    /// Sends one of the session's own events to the face and logs it as it is (no resume
    /// de-duplication: the session announces each of these once per run).
    pub fn announce(&self, event: Event) {
        self.append(Append::Event(event.clone()));
        let _ = self.events.send(event);
    }

    /// Adds an entry to the audit trail beside the turns: what moot itself did for the debate
    /// (a hook it ran, with command, exit status, counts and the output's hash).
    pub fn audit_action(&self, what: &str, round: u32, seat: &str, body: Value) {
        let place = AuditPlace {
            round,
            phase: what.to_string(),
            seat: seat.to_string(),
            attempt: 0,
            provider: String::new(),
            model: String::new(),
        };
        self.audit(AuditKind::Event, &place, body);
    }

    /// Logs the event (but a streaming delta, or one a resume re-emits that is logged
    /// already), then hands it to the face.
    pub fn emit(&self, event: Event) {
        if !matches!(event, Event::TurnDelta { .. }) && lock(&self.logged).is_new(&event) {
            self.append(Append::Event(event.clone()));
            if audited(&event) {
                let place = AuditPlace {
                    round: 0,
                    phase: event.kind().to_string(),
                    seat: "debate".into(),
                    attempt: 0,
                    provider: String::new(),
                    model: String::new(),
                };
                let body = serde_json::to_value(&event).unwrap_or(Value::Null);
                self.audit(AuditKind::Event, &place, body);
            }
        }
        // Where the debate stands is stored with it, for `moot list`; it waits in line like
        // the rest, so a locked journal costs it one busy wait, not one per stage.
        if let Some(stage) = stage_of(&event) {
            self.append(Append::Stage(stage));
        }
        // A face that stopped listening must not stop the debate.
        let _ = self.events.send(event);
    }

    /// Every turn spoken (or replayed) so far, in order.
    pub fn turns(&self) -> Vec<Turn> {
        lock(&self.transcript).clone()
    }

    pub fn seat_provider(&self, seat: &str) -> Arc<dyn Provider> {
        lock(&self.seating).for_seat(seat)
    }

    /// How many of these seats take their turns one after another (`--sequential`, or a
    /// provider that answers one request at a time); a round's time limit is multiplied by
    /// this (at least 1), so waiting in line is not mistaken for a stalled provider.
    pub fn queued_turn_slots(&self, seats: &[Seat]) -> u32 {
        let queued = seats
            .iter()
            .filter(|seat| {
                self.settings.sequential || self.seat_provider(&seat.id).answers_one_at_a_time()
            })
            .count();
        u32::try_from(queued).unwrap_or(u32::MAX).max(1)
    }

    /// Seats assigned after the context was made can be given their own providers.
    pub fn seat_on(&self, seat: &Seat, provider: Arc<dyn Provider>) {
        lock(&self.seating)
            .per_seat
            .insert(seat.id.clone(), provider);
    }

    fn push(&self, turn: &Turn) {
        lock(&self.transcript).push(turn.clone());
    }

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
        self.emit(Event::TurnStarted {
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
        self.journal(|store| store.record_turn(&self.debate_id, &turn))
            .await?;
        self.push(&turn);
        self.emit(turn.completed_event(false));
        Ok(turn)
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

    /// Runs the exchange with the provider: first request, retries, one repair request.
    async fn converse(&self, speech: &Speech, provider: &dyn Provider) -> Conversation {
        let mut conversation = Conversation {
            prose_field: match &speech.kind {
                ReplyKind::Structured { stream_field, .. } => *stream_field,
                ReplyKind::Prose => None,
            },
            ..Conversation::default()
        };
        let reply_format = speech
            .schema
            .as_ref()
            .map(|schema| crate::llm::ReplyFormat {
                name: speech.schema_name.to_string(),
                schema: schema.clone(),
            });
        let mut request = ChatRequest {
            label: crate::llm::RequestLabel {
                round: speech.key.round,
                phase: speech.key.phase,
                seat: speech.key.seat.clone(),
                perspective: speech.perspective.clone(),
            },
            system: match &self.settings.lessons {
                Some(lessons) if !(self.settings.lessons_withheld)(&speech.key) => {
                    format!("{}\n\n{lessons}", speech.system)
                }
                _ => speech.system.clone(),
            },
            messages: vec![ChatMessage::user(speech.prompt.clone())],
            reply: reply_format,
            max_tokens: speech.max_tokens,
            temperature: self.settings.temperature,
            reply_bytes: self.settings.reply_bytes,
        };
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
                conversation.failure = Some(error);
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
                conversation.first_problem = Some(problem);
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
                    conversation.final_problem = Some(problem);
                }
            },
            Err(error) => {
                conversation.fallback_text = Some(conversation.first_text.clone());
                conversation.final_problem = Some(format!("the repair request failed: {error}"));
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
    ) -> Result<Completion, String> {
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
                        return Err(describe_failure(provider, &error));
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
    fn audit(&self, kind: AuditKind, place: &AuditPlace, body: Value) {
        self.append(Append::Audit {
            kind,
            place: place.clone(),
            body,
        });
    }

    fn audit_result(&self, place: &AuditPlace, result: &Result<Completion, LlmError>) {
        match result {
            Ok(completion) => self.audit(
                AuditKind::Response,
                place,
                serde_json::json!({
                    "model": completion.model,
                    "text": completion.text,
                    "finish": format!("{:?}", completion.finish).to_lowercase(),
                    "usage": completion.usage.map(|u| serde_json::json!({"input": u.input, "output": u.output})),
                }),
            ),
            Err(error) => self.audit(
                AuditKind::Failure,
                place,
                serde_json::json!({
                    "error": error.to_string(),
                    "retryable": error.is_retryable(),
                }),
            ),
        }
    }

    fn interpret(&self, speech: &Speech, text: &str, repair: bool) -> Result<Parsed, String> {
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

    /// Waits at a between-rounds checkpoint (or replays the recorded answer).
    pub async fn checkpoint(&self, round: u32) -> Result<CheckpointOutcome, EngineError> {
        self.ask(round, AskKind::Checkpoint, None).await
    }

    /// Asks the human a clarifying question (the moderator's before round 1 is `round` 0; a
    /// code debate asks up to three rounds of them); a guide answer is the reply.
    pub async fn clarify(
        &self,
        round: u32,
        question: &str,
    ) -> Result<CheckpointOutcome, EngineError> {
        if let Some(recorded) = self.recorded_answer(round, AskKind::Clarification) {
            return Ok(recorded);
        }
        self.emit(Event::ClarificationRequested {
            question: question.to_string(),
        });
        self.ask(round, AskKind::Clarification, None).await
    }

    fn recorded_answer(&self, round: u32, kind: AskKind) -> Option<CheckpointOutcome> {
        self.recorded_answers
            .iter()
            .find(|r| r.round == round && r.kind == kind)
            .map(|r| CheckpointOutcome::Answered {
                control: r.control.clone(),
                by: r.answered_by.clone(),
            })
    }

    /// Asks the person `kind` after `round` (or replays the recorded answer), journaling the
    /// answer with who gave it. An answer that does not fit the question is refused with a
    /// notice and the question stays open.
    pub async fn ask(
        &self,
        round: u32,
        kind: AskKind,
        detail: Option<String>,
    ) -> Result<CheckpointOutcome, EngineError> {
        self.put(round, kind, detail, Vec::new()).await
    }

    /// Asks the person to pick one of `choices` (id, label) after `round`, or leave it open
    /// (`Reject`); an id that is not among them is refused with a notice.
    pub async fn choose(
        &self,
        round: u32,
        detail: String,
        choices: Vec<(String, String)>,
    ) -> Result<CheckpointOutcome, EngineError> {
        self.put(round, AskKind::Choice, Some(detail), choices)
            .await
    }

    async fn put(
        &self,
        round: u32,
        kind: AskKind,
        detail: Option<String>,
        choices: Vec<(String, String)>,
    ) -> Result<CheckpointOutcome, EngineError> {
        if let Some(recorded) = self.recorded_answer(round, kind) {
            if let CheckpointOutcome::Answered { control, .. } = &recorded
                && kind != AskKind::Clarification
            {
                self.emit(answered(round, kind, control));
            }
            return Ok(recorded);
        }
        if !self.settings.checkpoints {
            return Ok(CheckpointOutcome::Unasked);
        }
        if kind != AskKind::Clarification {
            self.emit(Event::Checkpoint {
                round,
                timeout_seconds: self.settings.checkpoint_timeout.as_secs(),
                kind,
                detail,
                choices: choices.clone(),
            });
        }
        let deadline = tokio::time::Instant::now() + self.settings.checkpoint_timeout;
        let Some(answer) = self.await_answer(kind, &choices, deadline).await else {
            self.note_unanswered(
                format!("nobody answered ({})", Stage::Asking { kind, round }),
                self.settings.checkpoint_timeout,
            );
            return Ok(CheckpointOutcome::TimedOut);
        };
        let by = self.answerer.clone();
        self.journal(|store| store.record_checkpoint(&self.debate_id, round, kind, &answer, &by))
            .await?;
        if kind != AskKind::Clarification {
            self.emit(answered(round, kind, &answer));
        }
        Ok(CheckpointOutcome::Answered {
            control: answer,
            by,
        })
    }

    /// A turn recorded in the journal for `key`, served as `speak` serves one: for turns whose
    /// words come from outside the engine (a person, an outside agent).
    pub fn replayed(&self, key: &TurnKey) -> Option<Turn> {
        let turn = lock(&self.recorded).remove(key)?;
        self.push(&turn);
        self.emit(turn.completed_event(true));
        Some(turn)
    }

    /// Journals a turn whose words came from outside the engine, then announces it.
    pub async fn record(&self, turn: Turn) -> Result<Turn, EngineError> {
        self.journal(|store| store.record_turn(&self.debate_id, &turn))
            .await?;
        self.push(&turn);
        self.emit(turn.completed_event(false));
        Ok(turn)
    }

    /// Asks the person for the words of a seat they play (`AskKind::Turn`), whatever the
    /// checkpoint setting, for at most `timeout`. The answer is not journaled as one: the turn
    /// it becomes is (`record`), so a resume serves the turn and never asks again.
    pub async fn ask_turn(
        &self,
        round: u32,
        detail: String,
        timeout: Duration,
    ) -> Result<CheckpointOutcome, EngineError> {
        self.emit(Event::Checkpoint {
            round,
            timeout_seconds: timeout.as_secs(),
            kind: AskKind::Turn,
            detail: Some(detail),
            choices: Vec::new(),
        });
        let deadline = tokio::time::Instant::now() + timeout;
        let Some(answer) = self.await_answer(AskKind::Turn, &[], deadline).await else {
            return Ok(CheckpointOutcome::TimedOut);
        };
        self.emit(answered(round, AskKind::Turn, &answer));
        Ok(CheckpointOutcome::Answered {
            control: answer,
            by: self.answerer.clone(),
        })
    }

    /// Stops at an approval gate (`point` after `round`) until it is settled: by the person
    /// here (approve, or reject with a reason), by `moot approve` / `moot reject` from another
    /// process (read from the journal), or by the timeout, which pauses the debate (a resume
    /// asks again). With gates off (`active` false) it is approved at once and recorded so.
    pub async fn gate(
        &self,
        point: &str,
        round: u32,
        summary: String,
        artifacts: Value,
        active: bool,
        timeout: Duration,
    ) -> Result<GateOutcome, EngineError> {
        let base = format!("{point}:{round}");
        // A gate that timed out is asked again on resume, under the next attempt's name.
        let earlier = self.store.gates(&self.debate_id)?;
        let attempts = earlier
            .iter()
            .filter(|g| g.gate == base || g.gate.starts_with(&format!("{base}#")))
            .count();
        let latest = earlier
            .iter()
            .rfind(|g| g.gate == base || g.gate.starts_with(&format!("{base}#")));
        let gate = match latest {
            Some(record) if record.decision.as_deref() != Some("timed_out") => record.gate.clone(),
            Some(_) => format!("{base}#{}", attempts + 1),
            None => base,
        };
        self.journal(|store| {
            store.request_gate(&self.debate_id, &gate, point, round, &summary, &artifacts)
        })
        .await?;
        if let Some(settled) = self.settled(&gate)? {
            return Ok(settled);
        }
        if !active {
            // Recorded, not announced: with gates off, or this point not among them, nothing waits.
            return self
                .settle(
                    &gate,
                    "approved",
                    "moot (this debate does not stop here)",
                    None,
                    false,
                )
                .await;
        }
        self.emit(Event::GateRequested {
            gate: gate.clone(),
            point: point.to_string(),
            round,
            summary: summary.clone(),
            timeout_seconds: timeout.as_secs(),
        });
        self.emit(Event::Checkpoint {
            round,
            timeout_seconds: timeout.as_secs(),
            kind: AskKind::Gate,
            detail: Some(summary),
            choices: Vec::new(),
        });
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(settled) = self.settled(&gate)? {
                // Another process decided: announced here, and the question here is closed.
                self.announce_gate(&gate, &settled);
                if let GateOutcome::Approved { .. } | GateOutcome::Rejected { .. } = &settled {
                    self.emit(answered(round, AskKind::Gate, &settled.control()));
                }
                return Ok(settled);
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                self.settle(&gate, "timed_out", "the timeout", None, true)
                    .await?;
                self.note_unanswered(
                    format!(
                        "nobody decided the approval gate {} ({gate})",
                        crate::debate::gate_place(point, round)
                    ),
                    timeout,
                );
                return Ok(GateOutcome::TimedOut);
            }
            let slice = (now + GATE_POLL).min(deadline);
            if let Some(control) = self.await_answer(AskKind::Gate, &[], slice).await {
                let (decision, reason) = match &control {
                    Control::Decline(reason) => ("rejected", Some(reason.clone())),
                    _ => ("approved", None),
                };
                let by = self.answerer.clone();
                let outcome = self
                    .settle(&gate, decision, &by, reason.as_deref(), true)
                    .await?;
                self.emit(answered(round, AskKind::Gate, &outcome.control()));
                return Ok(outcome);
            }
        }
    }

    /// A gate's decision, if one is journaled.
    fn settled(&self, gate: &str) -> Result<Option<GateOutcome>, EngineError> {
        let Some(record) = self.store.gate(&self.debate_id, gate)? else {
            return Ok(None);
        };
        let by = record.decided_by.clone().unwrap_or_default();
        Ok(match record.decision.as_deref() {
            Some("approved") => Some(GateOutcome::Approved { by }),
            Some("rejected") => Some(GateOutcome::Rejected {
                by,
                reason: record.reason.unwrap_or_default(),
            }),
            Some(_) => Some(GateOutcome::TimedOut),
            None => None,
        })
    }

    /// Journals a gate's decision (unless another process settled it first: then that one
    /// stands) and announces it.
    async fn settle(
        &self,
        gate: &str,
        decision: &str,
        by: &str,
        reason: Option<&str>,
        announce: bool,
    ) -> Result<GateOutcome, EngineError> {
        self.journal(|store| store.decide_gate(&self.debate_id, gate, decision, by, reason))
            .await?;
        let outcome = self.settled(gate)?.unwrap_or(GateOutcome::TimedOut);
        if announce {
            self.announce_gate(gate, &outcome);
        }
        Ok(outcome)
    }

    fn announce_gate(&self, gate: &str, outcome: &GateOutcome) {
        let (decision, by, reason) = match outcome {
            GateOutcome::Approved { by } => ("approved", by.clone(), None),
            GateOutcome::Rejected { by, reason } => ("rejected", by.clone(), Some(reason.clone())),
            GateOutcome::TimedOut => ("timed_out", "the timeout".to_string(), None),
        };
        self.emit(Event::GateDecided {
            gate: gate.to_string(),
            decision: decision.to_string(),
            by,
            reason,
        });
    }

    /// The first control that answers `kind` before `deadline` (ones that do not are refused
    /// with a notice); `None` when time runs out.
    async fn await_answer(
        &self,
        kind: AskKind,
        choices: &[(String, String)],
        deadline: tokio::time::Instant,
    ) -> Option<Control> {
        let mut controls = self.controls.lock().await;
        let answer = loop {
            match tokio::time::timeout_at(deadline, controls.recv()).await {
                Err(_) => return None,
                Ok(Some(Control::Choose(id)))
                    if !choices.is_empty() && !choices.iter().any(|(known, _)| *known == id) =>
                {
                    self.emit(Event::Notice {
                        message: format!(
                            "there is no option {id:?}; choose one of {}",
                            choices
                                .iter()
                                .map(|(id, _)| id.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    })
                }
                Ok(Some(control)) if kind.accepts(&control) => break control,
                Ok(Some(control)) => self.emit(Event::Notice {
                    message: format!(
                        "`{}` does not answer this question; answer with {}",
                        control.answer(),
                        kind.answers()
                            .iter()
                            .map(|a| a.usage())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                }),
                Ok(None) => match kind.default_answer() {
                    Some(fallback) => {
                        self.emit(Event::Notice {
                            message: format!(
                                "no more answers can arrive; taking `{}`",
                                fallback.answer()
                            ),
                        });
                        break fallback;
                    }
                    // Nobody answers for the person: the question waits out its time (for
                    // `moot approve` from another terminal, or the timeout).
                    None => {
                        drop(controls);
                        tokio::time::sleep_until(deadline).await;
                        return None;
                    }
                },
            }
        };
        Some(answer)
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

/// Whether an event belongs in the audit trail: the decisions a debate made beside its turns.
fn audited(event: &Event) -> bool {
    matches!(
        event,
        Event::Votes { .. }
            | Event::GateRequested { .. }
            | Event::GateDecided { .. }
            | Event::Lessons { .. }
    )
}

fn answered(round: u32, kind: AskKind, control: &Control) -> Event {
    Event::CheckpointAnswered {
        round,
        decision: control.answer(),
        guidance: control.guidance().map(str::to_string),
        kind,
    }
}

/// Where the debate stands once `event` has happened, for the ones that move it.
fn stage_of(event: &Event) -> Option<Stage> {
    match event {
        Event::TurnStarted {
            phase: Phase::Analysis,
            ..
        } => Some(Stage::Analysing),
        Event::RoundStarted { round, .. } => Some(Stage::Round { round: *round }),
        Event::ClarificationRequested { .. } => Some(Stage::Asking {
            kind: AskKind::Clarification,
            round: 0,
        }),
        Event::GateRequested { point, round, .. } => Some(Stage::AtGate {
            point: point.clone(),
            round: *round,
        }),
        // A gate's question follows its request, which already says where it stands.
        Event::Checkpoint {
            kind: AskKind::Gate,
            ..
        } => None,
        Event::Checkpoint { round, kind, .. } => Some(Stage::Asking {
            kind: *kind,
            round: *round,
        }),
        Event::TurnStarted { phase, .. } if phase.is_closing() => Some(Stage::Synthesising),
        _ => None,
    }
}

/// The log a resume found, and how far the re-run protocol has re-emitted it.
struct LoggedEvents {
    events: Vec<Event>,
    next: usize,
}

impl LoggedEvents {
    /// Whether `event` is not yet in the log: a resume re-emits what the first run logged
    /// (in the same order, give or take a retry), and those are skipped, once each.
    fn is_new(&mut self, event: &Event) -> bool {
        let wanted = as_logged(event);
        match self.events[self.next..].iter().position(|e| *e == wanted) {
            Some(offset) => {
                self.next += offset + 1;
                false
            }
            None => true,
        }
    }
}

/// An event as the first run logged it: a turn served from the journal is the same turn.
fn as_logged(event: &Event) -> Event {
    let mut event = event.clone();
    if let Event::TurnCompleted { replayed, .. } = &mut event {
        *replayed = false;
    }
    event
}

/// An append to the journal that waits its turn in the backlog.
enum Append {
    Event(Event),
    Audit {
        kind: AuditKind,
        place: AuditPlace,
        body: Value,
    },
    Stage(Stage),
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
