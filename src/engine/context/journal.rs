//! Journaling and events: the write backlog that survives a locked journal, turns recorded
//! or served from the journal, audit entries, and the events every face shows.

use super::*;
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
        let stuck = {
            let mut backlog = lock(&self.backlog);
            let stuck = !backlog.is_empty();
            backlog.extend(appends);
            stuck
        };
        // Behind an entry the journal already refused, these only queue: the next journal
        // write retries them all with backoff, instead of every event blocking for SQLite's
        // busy wait while another process holds the lock.
        if !stuck && let Err(StoreError::Locked { path }) = self.drain() {
            self.tell_locked(&path);
        }
    }

    /// Queues an append to go with the next journal write, as `append` does behind a refused
    /// one: an entry nobody waits for (a reply's audit entry) then costs no commit of its own.
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
        let _ = self.events.send(completed);
        Ok(turn)
    }

    /// Waits until every pending append is written (up to the journal's patience); the
    /// session calls it before it records how the debate ended.
    pub async fn flush(&self) -> Result<(), EngineError> {
        self.journal(|_| Ok(())).await
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
