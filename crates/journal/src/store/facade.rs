//! The journal every command opens: SQLite (the embedded default, a file in moot's data dir)
//! or PostgreSQL (`postgres://…`, which several hosts share). Both keep the same rows with the
//! same hash chain; this is the one handle the rest of moot holds, and it hands each call to
//! the journal it was opened on. What lives beside a journal on the host (the live sockets, a
//! code debate's versions) stays in the local data dir whichever journal holds the rows.

use super::audit::{AuditEntry, AuditKind, AuditPlace};
use super::chain::{ChainCheck, ChainHead};
use super::checkpoint::Checkpointer;
use super::lease::{LEASE_RENEWAL, LEASE_TTL, LeaseGuard, MIN_LEASE_TTL};
use super::{
    CheckpointRecord, DebateSummary, Entry, GateRecord, PgJournal, RemoteAnswer, SearchHit, Sqlite,
    StoreError, StoredSynthesis,
};
use crate::debate::{
    AskKind, Control, Debate, DebateStatus, Event, GateDecision, Lesson, LessonDraft, Seat, Stage,
    Turn,
};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A shared handle on the journal.
#[derive(Clone)]
pub struct Store {
    journal: Journal,
    /// How long this handle's leases last without a heartbeat.
    lease_ttl: Duration,
}

#[derive(Clone)]
enum Journal {
    Sqlite(Sqlite),
    /// With the path a SQLite journal would have here, beside which the host's own files go.
    Postgres(PgJournal, PathBuf),
}

impl From<Sqlite> for Store {
    fn from(sqlite: Sqlite) -> Store {
        Store {
            journal: Journal::Sqlite(sqlite),
            lease_ttl: LEASE_TTL,
        }
    }
}

impl Store {
    /// Opens (creating if needed) the SQLite journal at `path` and brings its schema up to
    /// date.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Sqlite::open(path).map(Store::from)
    }

    /// `open` for the journal in moot's own data dir (narrowed to its owner).
    pub fn open_in_data_dir(path: &Path) -> Result<Store, StoreError> {
        Sqlite::open_in_data_dir(path).map(Store::from)
    }

    /// Opens the SQLite journal, waiting at most `busy` for another process's lock.
    pub fn open_waiting(path: &Path, busy: Duration, owned: bool) -> Result<Store, StoreError> {
        Sqlite::open_waiting(path, busy, owned).map(Store::from)
    }

    /// `open_in_data_dir` for a command that only reads (a read-only mount is read as it
    /// stands).
    pub fn open_to_read(path: &Path) -> Result<Store, StoreError> {
        Sqlite::open_to_read(path).map(Store::from)
    }

    /// An in-memory SQLite journal, for tests and benchmarks.
    pub fn in_memory() -> Result<Store, StoreError> {
        Sqlite::in_memory().map(Store::from)
    }

    /// The journal on the PostgreSQL server at `url`; `beside` is where this host's own files
    /// go (the path a SQLite journal would have here).
    pub fn connect(url: &str, beside: &Path) -> Result<Store, StoreError> {
        Ok(Store {
            journal: Journal::Postgres(PgJournal::connect(url)?, beside.to_path_buf()),
            lease_ttl: LEASE_TTL,
        })
    }

    /// Calls `told` with a debate's id whenever another process (on any host) journals
    /// events for it, and with `None` when some may have been missed; false (and `told` is
    /// never called) where the journal cannot tell, as SQLite cannot: look again instead.
    pub fn watch_events(&self, told: impl Fn(Option<&str>) + Send + 'static) -> bool {
        match &self.journal {
            Journal::Sqlite(_) => false,
            Journal::Postgres(pg, _) => {
                pg.watch_events(told);
                true
            }
        }
    }

    /// This handle, its leases lasting `ttl` without a heartbeat (renewed every quarter of
    /// it): a holder on another host is taken for gone that long after its last one. A
    /// replica sets it from its `takeover_seconds`.
    pub fn with_lease_ttl(mut self, ttl: Duration) -> Store {
        self.lease_ttl = ttl.max(MIN_LEASE_TTL);
        self
    }

    /// How often a debate this handle runs renews its lease.
    pub fn lease_renewal(&self) -> Duration {
        (self.lease_ttl / 4).min(LEASE_RENEWAL)
    }

    /// Takes the lease of debate `id` for as long as the guard lives, unless another holder
    /// has it.
    pub fn acquire_lease(&self, id: &str) -> Result<LeaseGuard, StoreError> {
        let ttl = i64::try_from(self.lease_ttl.as_secs()).unwrap_or(i64::MAX);
        match &self.journal {
            Journal::Sqlite(sqlite) => sqlite.acquire_lease(id, ttl),
            Journal::Postgres(pg, _) => pg.acquire_lease(id, ttl),
        }
    }

    /// Whether the journal is on a server other hosts share.
    pub fn is_shared(&self) -> bool {
        matches!(self.journal, Journal::Postgres(..))
    }

    /// The SQLite journal's file, or where it would be on this host.
    pub fn path(&self) -> &Path {
        match &self.journal {
            Journal::Sqlite(sqlite) => sqlite.path(),
            Journal::Postgres(_, beside) => beside,
        }
    }

    /// What opening the journal changed that its owner should hear (a mode narrowed).
    pub fn notices(&self) -> &[String] {
        match &self.journal {
            Journal::Sqlite(sqlite) => sqlite.notices(),
            Journal::Postgres(..) => &[],
        }
    }

    /// Where running debates serve their events to viewers on this host.
    pub fn live_dir(&self) -> Option<PathBuf> {
        match &self.journal {
            Journal::Sqlite(sqlite) => sqlite.live_dir(),
            Journal::Postgres(_, beside) => beside.parent().map(|dir| dir.join("live")),
        }
    }

    /// moot's own git dir for code debate `id`'s versions, on this host.
    pub fn versions_git_dir(&self, id: &str) -> PathBuf {
        super::versions_git_dir_beside(self.path(), id)
    }

    /// Checkpoints a SQLite journal's log on a thread of its own (a server's); PostgreSQL
    /// checkpoints its own.
    pub fn checkpoint_in_background(&self, every: Duration) -> Result<Checkpointer, StoreError> {
        match &self.journal {
            Journal::Sqlite(sqlite) => sqlite.checkpoint_in_background(every),
            Journal::Postgres(..) => Ok(Checkpointer::none()),
        }
    }

    /// A SQLite copy of the journal at `path` holding only debate `id`, for re-running it
    /// without touching the original.
    pub fn copy_debate(&self, id: &str, path: &Path) -> Result<Store, StoreError> {
        match &self.journal {
            Journal::Sqlite(sqlite) => sqlite.copy_debate(id, path).map(Store::from),
            Journal::Postgres(pg, _) => pg.copy_debate_to_sqlite(id, path).map(Store::from),
        }
    }

    /// Deletes a debate, and its code versions on this host.
    pub fn delete(&self, id: &str) -> Result<(), StoreError> {
        match &self.journal {
            Journal::Sqlite(sqlite) => sqlite.delete(id),
            Journal::Postgres(pg, _) => {
                pg.delete(id)?;
                super::remove_versions(&self.versions_git_dir(id), id)
            }
        }
    }

    /// The gate `debate` waits at now, if it does: one whose debate is running and stands at
    /// a gate, so a decision is taken only while someone waits for it (a gate of a stopped
    /// debate is asked again when it resumes).
    pub fn waiting_gate(&self, debate: &Debate) -> Result<Option<GateRecord>, StoreError> {
        if debate.status != DebateStatus::Running
            || !matches!(debate.stage, Some(Stage::AtGate { .. }))
        {
            return Ok(None);
        }
        Ok(self
            .gates(&debate.id)?
            .into_iter()
            .rfind(|g| g.decision.is_none()))
    }

    /// Debate `id` row for row, with its chain (`moot journal copy`).
    pub fn debate_rows(&self, id: &str) -> Result<super::DebateRows, StoreError> {
        match &self.journal {
            Journal::Sqlite(sqlite) => sqlite.debate_rows(id),
            Journal::Postgres(pg, _) => pg.debate_rows(id),
        }
    }

    /// Writes a debate copied from another journal, with the numbers it had there.
    pub fn import_debate(&self, rows: &super::DebateRows) -> Result<(), StoreError> {
        match &self.journal {
            Journal::Sqlite(sqlite) => sqlite.import_debate(rows),
            Journal::Postgres(pg, _) => pg.import_debate(rows),
        }
    }

    /// Every standing preference.
    pub(super) fn preferences(&self) -> Result<Vec<(String, String)>, StoreError> {
        match &self.journal {
            Journal::Sqlite(sqlite) => sqlite.preferences(),
            Journal::Postgres(pg, _) => pg.preferences(),
        }
    }

    /// Every bench run's id and settings.
    pub(super) fn bench_runs(&self) -> Result<Vec<(String, serde_json::Value)>, StoreError> {
        match &self.journal {
            Journal::Sqlite(sqlite) => sqlite.bench_runs(),
            Journal::Postgres(pg, _) => pg.bench_runs(),
        }
    }

    /// How many transactions this journal's appends have taken so far (SQLite's; PostgreSQL
    /// writes an append in one).
    #[cfg(any(test, feature = "fixtures"))]
    pub fn append_transactions(&self) -> usize {
        match &self.journal {
            Journal::Sqlite(sqlite) => sqlite.append_transactions(),
            Journal::Postgres(..) => 0,
        }
    }

    /// The same write as `record_turn` but for the chain, so `benches/chain.rs` can measure
    /// what the chain costs; nothing else may call it.
    #[doc(hidden)]
    pub fn record_turn_unchained_for_benchmark(
        &self,
        id: &str,
        turn: &Turn,
    ) -> Result<(), StoreError> {
        match &self.journal {
            Journal::Sqlite(sqlite) => sqlite.record_turn_unchained_for_benchmark(id, turn),
            Journal::Postgres(pg, _) => pg.record_turn(id, turn),
        }
    }
}

/// Each call handed to the journal the store was opened on, as both name it.
macro_rules! delegated {
    ($( $(#[$meta:meta])* fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty; )*) => {
        impl Store {
            $(
                $(#[$meta])*
                pub fn $name(&self $(, $arg: $ty)*) -> $ret {
                    match &self.journal {
                        Journal::Sqlite(journal) => journal.$name($($arg),*),
                        Journal::Postgres(journal, _) => journal.$name($($arg),*),
                    }
                }
            )*
        }
    };
}

delegated! {
    /// Appends `entries` to debate `id`'s journal in one transaction: all of them, or none.
    fn append(&self, id: &str, entries: &[Entry<'_>]) -> Result<(), StoreError>;
    /// Appends one audit entry; `keep_body` false stores its hash and size only.
    fn record_audit(&self, id: &str, kind: AuditKind, place: &AuditPlace, body: &serde_json::Value, keep_body: bool) -> Result<(), StoreError>;
    /// A debate's audit trail in the order it was written, each body checked against its hash.
    fn audit(&self, id: &str) -> Result<Vec<AuditEntry>, StoreError>;
    fn create_bench_run(&self, id: &str, settings: &serde_json::Value) -> Result<(), StoreError>;
    /// A bench run's settings, by id.
    fn bench_run(&self, id: &str) -> Result<Option<serde_json::Value>, StoreError>;
    fn record_bench_result(&self, id: &str, problem: usize, arm: &str, result: &serde_json::Value) -> Result<(), StoreError>;
    /// Every result of a bench run: (problem, arm, result).
    fn bench_results(&self, id: &str) -> Result<Vec<(usize, String, serde_json::Value)>, StoreError>;
    /// Files a gate's request (again on resume: the first request and any decision stand).
    fn request_gate(&self, id: &str, gate: &str, point: &str, round: u32, summary: &str, artifacts: &serde_json::Value) -> Result<(), StoreError>;
    /// Settles a gate that waits; false when it was settled already (by another process).
    fn decide_gate(&self, id: &str, gate: &str, decision: GateDecision, by: &str, reason: Option<&str>) -> Result<bool, StoreError>;
    /// Every gate of a debate, in the order they were reached.
    fn gates(&self, id: &str) -> Result<Vec<GateRecord>, StoreError>;
    /// One gate of a debate.
    fn gate(&self, id: &str, gate: &str) -> Result<Option<GateRecord>, StoreError>;
    /// Debates, newest first.
    fn list(&self, limit: usize) -> Result<Vec<DebateSummary>, StoreError>;
    /// The debates held as running (some may read as interrupted), oldest first.
    fn running_ids(&self) -> Result<Vec<String>, StoreError>;
    /// Full-text search over questions, turns, guidance and records: one hit per debate.
    fn search(&self, text: &str, limit: usize) -> Result<Vec<SearchHit>, StoreError>;
    fn create_debate(&self, debate: &Debate) -> Result<(), StoreError>;
    /// Where debate `id`'s chain ends now.
    fn chain_head(&self, id: &str) -> Result<Option<ChainHead>, StoreError>;
    /// The hash of entry `n` of debate `id`'s chain, if there is one.
    fn chain_entry(&self, id: &str, n: i64) -> Result<Option<String>, StoreError>;
    /// Checks debate `id`'s chain against its rows.
    fn check_chain(&self, id: &str) -> Result<ChainCheck, StoreError>;
    fn set_status(&self, id: &str, status: DebateStatus, error: Option<&str>) -> Result<(), StoreError>;
    /// Debate `id`'s confidence column as stored, unreconciled.
    fn stored_confidence(&self, id: &str) -> Result<Option<String>, StoreError>;
    /// Records where the debate stands (for `moot list`).
    fn set_stage(&self, id: &str, stage: Stage) -> Result<(), StoreError>;
    /// Replaces the stored settings snapshot (a resume on another provider).
    fn set_config(&self, id: &str, config: &serde_json::Value) -> Result<(), StoreError>;
    fn set_seats(&self, id: &str, seats: &[Seat]) -> Result<(), StoreError>;
    /// Commits a turn (and its searchable text) before anyone is told about it, chained.
    fn record_turn(&self, id: &str, turn: &Turn) -> Result<(), StoreError>;
    /// `record_turn` for a turn spoken elsewhere, at `at` (RFC 3339).
    fn record_turn_at(&self, id: &str, turn: &Turn, at: &str) -> Result<(), StoreError>;
    /// When each of the debate's turns was journaled, in journal order.
    fn turn_times(&self, id: &str) -> Result<Vec<String>, StoreError>;
    fn turns(&self, id: &str) -> Result<Vec<Turn>, StoreError>;
    /// Removes the failed or timed-out turns at the end of a failed debate's journal.
    fn discard_trailing_failures(&self, id: &str) -> Result<usize, StoreError>;
    /// Appends an event to the debate's log (streaming deltas never reach it).
    fn record_event(&self, id: &str, event: &Event) -> Result<(), StoreError>;
    /// The debate's logged events after `seq` (0 for all), each with its place in the log.
    fn events_after(&self, id: &str, seq: i64) -> Result<Vec<(i64, Event)>, StoreError>;
    /// The place in the log of debate `id`'s latest event (0 with none).
    fn last_event_seq(&self, id: &str) -> Result<i64, StoreError>;
    fn events(&self, id: &str) -> Result<Vec<Event>, StoreError>;
    /// The round outcomes and flags of a debate journaled before the event log existed.
    fn annotations(&self, id: &str) -> Result<Vec<(u32, Event)>, StoreError>;
    /// Journals an answer and who gave it; its text becomes searchable.
    fn record_checkpoint(&self, id: &str, round: u32, kind: AskKind, control: &Control, answered_by: &str) -> Result<(), StoreError>;
    /// An answer given from another process to the question debate `id` waits at.
    fn record_remote_answer(&self, id: &str, round: u32, kind: AskKind, control: &Control, answered_by: &str) -> Result<RemoteAnswer, StoreError>;
    /// The answer journaled to `kind` after `round`, with who gave it, if there is one.
    fn checkpoint_answer(&self, id: &str, round: u32, kind: AskKind) -> Result<Option<CheckpointRecord>, StoreError>;
    fn checkpoints(&self, id: &str) -> Result<Vec<CheckpointRecord>, StoreError>;
    fn save_synthesis(&self, id: &str, synthesis: &StoredSynthesis) -> Result<(), StoreError>;
    /// Records the follow-up issue draft written from a debate's decision.
    fn set_follow_up(&self, id: &str, path: &str) -> Result<(), StoreError>;
    fn synthesis(&self, id: &str) -> Result<Option<StoredSynthesis>, StoreError>;
    /// The debate with this id, or the one debate whose id starts with it (case-insensitive).
    fn debate(&self, id_or_prefix: &str) -> Result<Debate, StoreError>;
    /// The request shapes learned per endpoint, as stored: (endpoint, JSON).
    fn load_capabilities(&self) -> Result<Vec<(String, String)>, StoreError>;
    fn save_capabilities(&self, learned: &[(String, String)]) -> Result<(), StoreError>;
    /// Renews this process's lease of debate `id`; false when it holds it no longer.
    fn renew_lease(&self, id: &str) -> Result<bool, StoreError>;
    /// Gives up this process's lease of debate `id`.
    fn release_lease(&self, id: &str) -> Result<(), StoreError>;
    /// Stores the lessons debate `id` wrote, then evicts the oldest beyond `capacity`.
    fn add_lessons(&self, id: &str, question: &str, drafts: &[LessonDraft], capacity: usize) -> Result<Vec<Lesson>, StoreError>;
    /// Every stored lesson, newest first.
    fn lessons(&self) -> Result<Vec<Lesson>, StoreError>;
    fn lesson(&self, lesson_id: i64) -> Result<Option<Lesson>, StoreError>;
    /// Removes a lesson; false when there was none with that id.
    fn remove_lesson(&self, lesson_id: i64) -> Result<bool, StoreError>;
    /// For each stored lesson that matches any of `terms` (stemmed), how many it matches.
    fn lessons_matching(&self, terms: &[String]) -> Result<Vec<(Lesson, usize)>, StoreError>;
    /// Keeps the embedding `model` made of a lesson's source question.
    fn set_lesson_embedding(&self, lesson_id: i64, model: &str, vector: &[f32]) -> Result<(), StoreError>;
    /// Every lesson with an embedding made by `model`, with it.
    fn lesson_embeddings(&self, model: &str) -> Result<Vec<(Lesson, Vec<f32>)>, StoreError>;
    /// A standing preference, such as `lessons` = `off`.
    fn preference(&self, key: &str) -> Result<Option<String>, StoreError>;
    /// Kept redacted, as everything the journal stores.
    fn set_preference(&self, key: &str, value: &str) -> Result<(), StoreError>;
    /// Files a cancel of a debate another process runs; false when one waits already.
    fn request_cancel(&self, id: &str, by: &str) -> Result<bool, StoreError>;
    /// The debates a cancel waits for.
    fn cancel_requests(&self) -> Result<Vec<String>, StoreError>;
    /// Takes the cancel that waits for debate `id`: who asked, if anyone did.
    fn take_cancel_request(&self, id: &str) -> Result<Option<String>, StoreError>;
}
