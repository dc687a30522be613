//! The context protocols stand on: `speak` (journal-first, streamed, retried, validated,
//! served from the journal on resume), `speak_all`, `checkpoint`, `clarify` and `emit`.

mod asks;
mod journal;
mod speech;

use asks::stage_of;
pub use asks::{AnswerCheck, CheckpointOutcome, GateOutcome, Refusal};
use journal::{Append, LoggedEvents, as_logged, audited, lock};
pub use speech::{ReplyKind, Speech};

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
/// The channels a face uses to watch a debate and steer it, and who answers through them.
pub struct Wiring {
    pub events: mpsc::UnboundedSender<Event>,
    pub controls: mpsc::UnboundedReceiver<Control>,
    /// Who answers the controls ("alice at the workbench", "headless auto-answer"), journaled
    /// with every answer so a record can say who approved it.
    pub answerer: String,
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
impl EngineSettings {
    /// A debate nobody steers: turns side by side, no checkpoints, bodies kept in the audit
    /// trail, no lessons, replies capped by their token limit.
    pub fn unattended(retry: RetryPolicy) -> EngineSettings {
        EngineSettings {
            sequential: false,
            retry,
            checkpoints: false,
            checkpoint_timeout: Duration::from_secs(1),
            temperature: None,
            audit: true,
            lessons: None,
            lessons_withheld: |_| false,
            reply_bytes: None,
        }
    }
}
/// Which provider each seat speaks through.
#[derive(Clone)]
pub struct Seating {
    pub default: Arc<dyn Provider>,
    pub per_seat: HashMap<String, Arc<dyn Provider>>,
}
impl Seating {
    /// Every seat speaks through `provider`.
    pub fn all(provider: Arc<dyn Provider>) -> Seating {
        Seating {
            default: provider,
            per_seat: HashMap::new(),
        }
    }

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
    /// Whether the last try to write the backlog met another process's lock: appends then
    /// only queue until the next journal write, which waits the lock out.
    refused: AtomicBool,
    /// Events whose journal entries wait in the backlog for the next write (a turn's start,
    /// written with its first request's audit entry), told to the face once that write is
    /// made, so a face that reads the journal on hearing one finds it there.
    untold: Mutex<Vec<Event>>,
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
            refused: AtomicBool::new(false),
            untold: Mutex::new(Vec::new()),
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

    /// Sends one of the session's own events to the face and logs it as it is (no resume
    /// de-duplication: the session announces each of these once per run).
    pub fn announce(&self, event: Event) {
        self.append(Append::Event(event.clone()));
        self.tell(event);
    }

    /// Logs the event (but a streaming delta, or one a resume re-emits that is logged
    /// already), then hands it to the face.
    pub fn emit(&self, event: Event) {
        let appends = self.logged(&event);
        // One journal write for the event, its audit entry and its stage.
        if !appends.is_empty() {
            self.append_all(appends);
        }
        self.tell(event);
    }

    /// Logs the event with the next journal write instead of one of its own, and hands it to
    /// the face after that write (`tell_untold`): for an event that a write follows at once.
    fn emit_with_next_write(&self, event: Event) {
        let appends = self.logged(&event);
        lock(&self.backlog).extend(appends);
        lock(&self.untold).push(event);
    }

    /// Hands the face every event still untold, in order.
    fn tell_untold(&self) {
        let untold = std::mem::take(&mut *lock(&self.untold));
        for event in untold {
            // A face that stopped listening must not stop the debate.
            let _ = self.events.send(event);
        }
    }

    /// Hands an event to the face, after any told later than it was emitted.
    fn tell(&self, event: Event) {
        self.tell_untold();
        let _ = self.events.send(event);
    }

    /// What logging `event` appends: the event (but a streaming delta, or one a resume
    /// re-emits that is logged already), its audit entry and the stage it moves to.
    fn logged(&self, event: &Event) -> Vec<Append> {
        let mut appends = Vec::new();
        if !matches!(event, Event::TurnDelta { .. }) && lock(&self.logged).is_new(event) {
            appends.push(Append::Event(event.clone()));
            if audited(event) {
                let place = AuditPlace {
                    round: 0,
                    phase: event.kind().to_string(),
                    seat: "debate".into(),
                    attempt: 0,
                    provider: String::new(),
                    model: String::new(),
                };
                let body = serde_json::to_value(event).unwrap_or(Value::Null);
                appends.push(Append::Audit {
                    kind: AuditKind::Event,
                    place,
                    body,
                });
            }
        }
        // Where the debate stands is stored with it, for `moot list`; it waits in line like
        // the rest, so a locked journal costs it one busy wait, not one per stage.
        if let Some(stage) = stage_of(event) {
            appends.push(Append::Stage(stage));
        }
        appends
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
}
