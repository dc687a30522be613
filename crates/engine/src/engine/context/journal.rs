//! Journaling and events: the write backlog that survives a locked journal, turns recorded
//! or served from the journal, audit entries, and the events every face shows.

use super::*;
use crate::debate::DebateStatus;
use crate::store::Entry;

/// How long the engine keeps retrying a journal write another process has locked before it
/// gives up and the debate stops (resumable, nothing recorded lost).
const JOURNAL_PATIENCE: Duration = Duration::from_secs(120);

/// A mutex's value even after a panic elsewhere poisoned it: every value kept behind one here
/// is whole between statements.
pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether an event belongs in the audit trail: the decisions a debate made beside its turns.
pub(super) fn audited(event: &Event) -> bool {
    matches!(
        event,
        Event::Votes { .. }
            | Event::GateRequested { .. }
            | Event::GateDecided { .. }
            | Event::Lessons { .. }
    )
}

/// The log a resume found, and how far the re-run protocol has re-emitted it.
pub(super) struct LoggedEvents {
    pub(super) events: Vec<Event>,
    pub(super) next: usize,
}

impl LoggedEvents {
    /// Whether `event` is not yet in the log: a resume re-emits what the first run logged
    /// (in the same order, give or take a retry), and those are skipped, once each.
    pub(super) fn is_new(&mut self, event: &Event) -> bool {
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
pub(super) fn as_logged(event: &Event) -> Event {
    let mut event = event.clone();
    if let Event::TurnCompleted { replayed, .. } = &mut event {
        *replayed = false;
    }
    event
}

/// An append to the journal that waits its turn in the backlog.
pub(super) enum Append {
    Event(Event),
    Audit {
        kind: AuditKind,
        place: AuditPlace,
        body: Value,
    },
    Stage(Stage),
    /// A turn: unlike the others, never left out when the journal refuses it.
    Turn(Turn),
}

impl Append {
    /// The journal's entry for it; `keep_audit_bodies` is the debate's `audit` setting.
    fn entry(&self, keep_audit_bodies: bool) -> Entry<'_> {
        match self {
            Append::Event(event) => Entry::Event(event),
            Append::Audit { kind, place, body } => Entry::Audit {
                kind: *kind,
                place,
                body,
                keep_body: keep_audit_bodies,
            },
            Append::Stage(stage) => Entry::Stage(stage),
            Append::Turn(turn) => Entry::Turn(turn),
        }
    }
}

impl Context {
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

    /// Writes every append still waiting, in order, in one transaction; when the journal
    /// refuses that for more than a lock, one at a time, so only what can never be written is
    /// left out. Stops at a lock (what waits stays first in line).
    fn drain(&self) -> Result<(), StoreError> {
        let drained = self.write_backlog();
        self.refused.store(
            matches!(drained, Err(StoreError::Locked { .. })),
            Ordering::Relaxed,
        );
        drained
    }

    /// `drain`'s writing, without noting whether the journal refused it.
    fn write_backlog(&self) -> Result<(), StoreError> {
        let mut backlog = lock(&self.backlog);
        if backlog.is_empty() {
            return Ok(());
        }
        let settings = &self.settings;
        let together: Vec<Entry<'_>> = backlog.iter().map(|a| a.entry(settings.audit)).collect();
        match self.store.append(&self.debate_id, &together) {
            Ok(()) => {
                backlog.clear();
                return Ok(());
            }
            Err(StoreError::Locked { path }) => return Err(StoreError::Locked { path }),
            Err(_) => {}
        }
        while let Some(append) = backlog.front() {
            let written = self
                .store
                .append(&self.debate_id, &[append.entry(settings.audit)]);
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
                // A turn the journal cannot take stops the debate (resumable from the turns
                // before it) rather than going on without it.
                Err(error) if matches!(append, Append::Turn(_)) => return Err(error),
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
    pub(super) fn append(&self, append: Append) {
        self.append_all([append]);
    }

    /// Appends entries that belong together (an event, its audit entry, the stage it moves
    /// the debate to) in one journal write.
    pub(super) fn append_all(&self, appends: impl IntoIterator<Item = Append>) {
        lock(&self.backlog).extend(appends);
        // Behind an entry the journal already refused, these only queue: the next journal
        // write retries them all with backoff, instead of every event blocking for SQLite's
        // busy wait while another process holds the lock. Entries merely deferred (`defer`)
        // are written with these.
        let stuck = self.refused.load(Ordering::Relaxed);
        if !stuck && let Err(StoreError::Locked { path }) = self.drain() {
            self.tell_locked(&path);
        }
    }

    /// Queues an append to go with the next journal write: an entry nobody waits for (a
    /// reply's audit entry, a turn's start) then costs no commit of its own.
    pub(super) fn defer(&self, append: Append) {
        lock(&self.backlog).push_back(append);
    }

    /// Commits a turn (spoken here, or whose words came from outside the engine) before
    /// anyone is told of it, in one journal write with everything waiting in the backlog (its
    /// reply's audit entry) and its completed event behind it; then the face hears of it.
    pub async fn record(&self, turn: Turn) -> Result<Turn, EngineError> {
        let completed = turn.completed_event(false);
        let mut appends = vec![Append::Turn(turn.clone())];
        appends.extend(self.logged(&completed));
        self.append_all(appends);
        self.flush().await?;
        self.push(&turn);
        self.tell(completed);
        Ok(turn)
    }

    /// Waits until every pending append is written (up to the journal's patience); the
    /// session calls it before it records how the debate ended.
    pub async fn flush(&self) -> Result<(), EngineError> {
        self.journal(|_| Ok(())).await
    }

    /// Records how the run ended: the debate's closing event and its status in one journal
    /// write, after everything still waiting (up to the journal's patience), then tells the
    /// face. Written apart, a process killed between the two left a debate whose row said
    /// completed and whose journal never did, and whose event stream then never ended.
    pub async fn close(
        &self,
        status: DebateStatus,
        error: Option<&str>,
    ) -> Result<(), EngineError> {
        let event = self.closing(status);
        self.journal(|store| {
            store.append(&self.debate_id, &closing_entries(&event, status, error))
        })
        .await?;
        self.tell(event);
        Ok(())
    }

    /// `close` in one attempt, without waiting out a lock: for a run that failed, whose
    /// journal may be what failed. The ending is tried even when what waited before it
    /// cannot be written (a turn the journal refuses), so the failure is still recorded.
    pub fn close_at_once(
        &self,
        status: DebateStatus,
        error: Option<&str>,
    ) -> Result<(), EngineError> {
        let event = self.closing(status);
        let _ = self.drain();
        let written = self
            .store
            .append(&self.debate_id, &closing_entries(&event, status, error));
        self.tell(event);
        Ok(written?)
    }

    fn closing(&self, status: DebateStatus) -> Event {
        Event::DebateCompleted {
            id: self.debate_id.clone(),
            status,
        }
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

    /// The turn the journal holds for `key`, without serving it.
    pub fn peek_recorded(&self, key: &TurnKey) -> Option<Turn> {
        lock(&self.recorded).get(key).cloned()
    }

    /// A turn recorded in the journal for `key`, served as `speak` serves one: for turns whose
    /// words come from outside the engine (a person, an outside agent).
    pub fn replayed(&self, key: &TurnKey) -> Option<Turn> {
        let turn = lock(&self.recorded).remove(key)?;
        self.push(&turn);
        self.emit(turn.completed_event(true));
        Some(turn)
    }

    pub(super) fn push(&self, turn: &Turn) {
        lock(&self.transcript).push(turn.clone());
    }
}

/// The closing event and the status it reports (`status`, and `error`), as one write.
fn closing_entries<'a>(
    event: &'a Event,
    status: DebateStatus,
    error: Option<&'a str>,
) -> [Entry<'a>; 2] {
    [Entry::Event(event), Entry::Status { status, error }]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::debate::Phase;
    use crate::engine::{ReplyKind, ReplyParser, Speech, Transcript, Unusable};
    use crate::llm::{FinishReason, ProviderKind, TextSink};
    use futures_util::future::BoxFuture;

    const DEBATE: &str = "DEB-journal1";

    /// What the journal and the face held when the provider was asked.
    #[derive(Debug, PartialEq)]
    struct AtTheCall {
        /// The kinds of the events journaled, in order.
        journaled: Vec<&'static str>,
        requests_audited: usize,
        /// The kinds of the events the face had been told since the last call.
        told: Vec<&'static str>,
    }

    /// A provider that notes what the journal and the face held each time it is called, then
    /// streams its next reply.
    struct Looking {
        store: Store,
        face: Mutex<mpsc::UnboundedReceiver<Event>>,
        replies: Mutex<Vec<&'static str>>,
        calls: Mutex<Vec<AtTheCall>>,
        /// The system prompt of each request.
        systems: Mutex<Vec<String>>,
        /// The words it asks for a schema with, when not the default.
        asks_with: Option<&'static str>,
    }

    impl Looking {
        fn told(&self) -> Vec<&'static str> {
            std::iter::from_fn(|| lock(&self.face).try_recv().ok())
                .map(|e| e.kind())
                .collect()
        }
    }

    impl Provider for Looking {
        fn kind(&self) -> ProviderKind {
            ProviderKind::Scripted
        }
        fn model(&self) -> &str {
            "looking-1"
        }
        fn endpoint(&self) -> String {
            "in the test".into()
        }
        fn configure_hint(&self) -> String {
            String::new()
        }
        fn schema_instructions(&self, reply: &crate::llm::ReplyFormat) -> String {
            match self.asks_with {
                Some(words) => format!("{words} ({})", reply.name),
                None => crate::llm::instructions::json_instructions(&reply.name, &reply.schema),
            }
        }
        fn complete<'a>(
            &'a self,
            request: &'a ChatRequest,
            on_text: TextSink<'a>,
        ) -> BoxFuture<'a, Result<Completion, LlmError>> {
            lock(&self.systems).push(request.system.clone());
            let journaled = self.store.events_after(DEBATE, 0).unwrap();
            let audit = self.store.audit(DEBATE).unwrap();
            lock(&self.calls).push(AtTheCall {
                journaled: journaled.iter().map(|(_, e)| e.kind()).collect(),
                requests_audited: audit
                    .iter()
                    .filter(|a| a.kind == AuditKind::Request)
                    .count(),
                told: self.told(),
            });
            let text = lock(&self.replies).remove(0);
            on_text(text);
            Box::pin(async move {
                Ok(Completion {
                    text: text.into(),
                    usage: None,
                    model: "looking-1".into(),
                    finish: FinishReason::Stop,
                })
            })
        }
    }

    /// Takes `{"argument": "…"}`.
    struct Arguments;

    impl ReplyParser for Arguments {
        fn parse(&self, reply: &Value, _: &Transcript<'_>) -> Result<Reply, Unusable> {
            let content = reply["argument"]
                .as_str()
                .ok_or_else(|| Unusable("no argument".into()))?;
            Ok(Reply {
                content: content.into(),
                moves: Vec::new(),
                confidence: None,
                data: None,
                note: None,
            })
        }
    }

    /// A debate's context over an in-memory journal, speaking through a `Looking` provider
    /// that gives `replies` in turn.
    fn looked_at(replies: Vec<&'static str>) -> (Context, Arc<Looking>, Store) {
        looked_at_with(
            replies,
            None,
            EngineSettings::unattended(RetryPolicy::default()),
        )
    }

    fn looked_at_with(
        replies: Vec<&'static str>,
        asks_with: Option<&'static str>,
        settings: EngineSettings,
    ) -> (Context, Arc<Looking>, Store) {
        let store = Store::in_memory().unwrap();
        store
            .create_debate(&crate::store::running_debate(DEBATE))
            .unwrap();
        let (events, face) = mpsc::unbounded_channel();
        let looking = Arc::new(Looking {
            store: store.clone(),
            face: Mutex::new(face),
            replies: Mutex::new(replies),
            calls: Mutex::new(Vec::new()),
            systems: Mutex::new(Vec::new()),
            asks_with,
        });
        let (_controls_tx, controls) = mpsc::unbounded_channel();
        let ctx = Context::new(
            DEBATE.into(),
            store.clone(),
            Wiring {
                events,
                controls,
                answerer: "the test".into(),
            },
            Seating::all(looking.clone()),
            settings,
            Replay::default(),
        );
        (ctx, looking, store)
    }

    fn speech(kind: ReplyKind) -> Speech {
        Speech {
            key: TurnKey::new(1, Phase::Argument, "A"),
            perspective: None,
            system: "Argue.".into(),
            prompt: "Cache in Redis?".into(),
            kind,
            schema_name: "moot_argument",
            schema: None,
            max_tokens: None,
            deadline: None,
        }
    }

    #[tokio::test]
    async fn a_turns_start_is_journaled_with_its_first_request_then_told_before_its_reply() {
        let (ctx, looking, store) = looked_at(vec!["Measured first."]);
        let before = store.append_transactions();
        let turn = ctx.speak(speech(ReplyKind::Prose)).await.unwrap();
        assert_eq!(turn.content, "Measured first.");
        assert_eq!(
            *lock(&looking.calls),
            [AtTheCall {
                journaled: vec!["turn_started"],
                requests_audited: 1,
                told: vec!["turn_started"],
            }],
            "the start is journaled, then told, before the request goes out"
        );
        assert_eq!(
            store.append_transactions() - before,
            2,
            "one commit for the start with its request, one for the turn with its reply"
        );
        assert_eq!(looking.told(), ["turn_delta", "turn_completed"]);
        let journaled: Vec<&str> = store
            .events_after(DEBATE, 0)
            .unwrap()
            .iter()
            .map(|(_, e)| e.kind())
            .collect();
        assert_eq!(journaled, ["turn_started", "turn_completed"]);
        assert!(store.check_chain(DEBATE).unwrap().holds());
    }

    #[tokio::test]
    async fn a_repair_is_journaled_and_audited_before_it_is_asked_for() {
        let (ctx, looking, store) = looked_at(vec!["not json", r#"{"argument": "Repaired."}"#]);
        let turn = ctx
            .speak(speech(ReplyKind::Structured {
                parser: Arc::new(Arguments),
                stream_field: None,
            }))
            .await
            .unwrap();
        assert_eq!(turn.content, "Repaired.");
        let calls = lock(&looking.calls);
        assert_eq!(
            calls[1],
            AtTheCall {
                journaled: vec!["turn_started", "retry"],
                requests_audited: 2,
                told: vec!["retry"],
            },
            "the first reply's audit entry, the retry and the repair request are written \
             before the repair is asked for"
        );
        assert_eq!(
            store
                .audit(DEBATE)
                .unwrap()
                .iter()
                .map(|a| a.kind)
                .collect::<Vec<_>>(),
            [
                AuditKind::Request,
                AuditKind::Response,
                AuditKind::Request,
                AuditKind::Response
            ]
        );
        assert!(store.check_chain(DEBATE).unwrap().holds());
    }

    /// A structured speech with a schema and the debate's lessons: what it is asked in.
    async fn asking(asks_with: Option<&'static str>) -> String {
        let settings = EngineSettings {
            lessons: Some("Lessons: measure first.".into()),
            ..EngineSettings::unattended(RetryPolicy::default())
        };
        let (ctx, looking, _store) =
            looked_at_with(vec![r#"{"argument": "Cache."}"#], asks_with, settings);
        let schema =
            serde_json::json!({"type": "object", "properties": {"argument": {"type": "string"}}});
        let speech = Speech {
            schema: Some(schema),
            ..speech(ReplyKind::Structured {
                parser: Arc::new(Arguments),
                stream_field: None,
            })
        };
        let turn = ctx.speak(speech).await.unwrap();
        assert_eq!(turn.content, "Cache.");
        lock(&looking.systems).remove(0)
    }

    #[tokio::test]
    async fn the_words_asking_for_the_schema_are_the_providers_and_come_before_the_lessons() {
        assert_eq!(
            asking(Some("List the fields")).await,
            "Argue.\n\nList the fields (moot_argument)\n\nLessons: measure first."
        );
        let whole = asking(None).await;
        assert!(
            whole.starts_with("Argue.\n\nReply with exactly one JSON object")
                && whole.contains("named moot_argument:\n{\"type\":\"object\"")
                && whole.ends_with("}\n\nLessons: measure first."),
            "by default the schema's whole text: {whole}"
        );
    }
}
