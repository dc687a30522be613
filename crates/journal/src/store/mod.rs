//! The journal: SQLite (WAL, numbered migrations) holding debates, turns, checkpoint answers,
//! syntheses and learned endpoint capabilities, with FTS5 search over all their text, and the
//! lease that says which process is running a debate.

mod append;
mod audit;
mod bench;
mod cancel;
mod chain;
mod checkpoint;
mod copy;
mod facade;
mod gates;
mod history;
mod journal;
// `flock` on the lease files.
mod lease;
mod lessons;
mod migrations;
mod postgres;
pub mod private;

pub use append::Entry;
pub use audit::{AuditEntry, AuditKind, AuditPlace, sha256_hex};
pub use chain::{ChainCheck, ChainHead};
pub use checkpoint::Checkpointer;
pub use copy::{Copied, CopyReport, DebateRows};
pub use facade::Store;
pub use gates::GateRecord;
pub use history::{DebateSummary, SearchHit};
pub use journal::{CheckpointRecord, RemoteAnswer, StoredSynthesis};
pub use lease::LEASE_RENEWAL;
pub use postgres::PgJournal;

use rusqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("no debate matches {0:?}; `moot list` shows the stored ones")]
    NotFound(String),
    #[error("{prefix:?} matches several debates ({}); give more of the id", candidates.join(", "))]
    Ambiguous {
        prefix: String,
        candidates: Vec<String>,
    },
    #[error(
        "the journal {path} is not a readable moot database ({detail}); nothing was changed: move it aside (or set MOOT_HOME to another directory) and run again"
    )]
    Corrupt { path: String, detail: String },
    #[error(
        "the journal {path} is locked by another process; wait for it to finish or close the other moot, then run again"
    )]
    Locked { path: String },
    #[error(
        "the journal {path} stayed locked by another process for {seconds} s, so the debate stopped; what was recorded is kept: once the other process is done, moot resume picks it up"
    )]
    LockedTooLong { path: String, seconds: u64 },
    #[error("the journal {path} cannot be written: {culprit}")]
    ReadOnly { path: String, culprit: String },
    #[error("the journal {path} cannot grow: the disk is full; free some space and run again")]
    Full { path: String },
    #[error(
        "the journal {path} was written by a newer moot (schema {found}, this one knows {known}); upgrade moot"
    )]
    TooNew {
        path: String,
        found: i64,
        known: i64,
    },
    #[error("cannot open the journal {path}: {detail}")]
    Open { path: String, detail: String },
    #[error(
        "{id} is being run by another moot (process {pid}, last heard from {seconds} s ago); wait for it to finish or stop that process, then resume it"
    )]
    InUse { id: String, pid: u32, seconds: u64 },
    /// This process held the debate's lease and another holds it now (a replica that took
    /// this one for dead): nothing more of the debate is written from here.
    #[error(
        "{id} went on elsewhere: another moot holds its lease now (process {pid} on {host}); this one writes nothing more to it"
    )]
    LeaseLost { id: String, pid: i64, host: String },
    /// A SQLite error on its way to `classify`, which names the file; never shown as is.
    #[error("journal error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("journal data error: {0}")]
    Data(String),
}

impl StoreError {
    /// What a SQLite error means for the journal at `path`, naming the file and the fix.
    fn classify(path: &Path, error: rusqlite::Error) -> StoreError {
        let shown = path.display().to_string();
        match error.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DatabaseBusy) | Some(rusqlite::ErrorCode::DatabaseLocked) => {
                StoreError::Locked { path: shown }
            }
            Some(rusqlite::ErrorCode::NotADatabase)
            | Some(rusqlite::ErrorCode::DatabaseCorrupt) => StoreError::Corrupt {
                path: shown,
                detail: error.to_string(),
            },
            Some(rusqlite::ErrorCode::ReadOnly) => StoreError::ReadOnly {
                culprit: read_only_culprit(path),
                path: shown,
            },
            Some(rusqlite::ErrorCode::DiskFull) => StoreError::Full { path: shown },
            _ => StoreError::Open {
                path: shown,
                detail: error.to_string(),
            },
        }
    }
}

/// Prepared statements a connection keeps: every one the journal runs (the chain's, per
/// facet, among them), with room to spare. A cache too small for them all evicts the oldest
/// and prepares statements again on every write.
const STATEMENTS_KEPT: usize = 256;

/// Plans each statement once, whatever values are bound to it. Without this, SQLite marks a
/// statement whose plan looked at a bound value for preparing again, and the statement cache
/// clearing its bindings sets that mark, so a cached query was parsed and planned again on
/// every use. moot keeps no statistics for a plan to gain from the values.
fn plan_once(connection: &Connection) -> rusqlite::Result<()> {
    connection.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    Ok(())
}

/// Which of the journal's files cannot be written, and what to do about it. A `-shm` or `-wal`
/// file left read-only keeps the journal unwritable after the main file's permissions are
/// fixed, so each is checked and named.
/// Why the journal's directory cannot be written, when it cannot: a read-only file system (a
/// read-only mount) or a directory the person may not write. Reading commands can still read
/// the journal as it stands; anything that writes cannot run.
struct Unwritable {
    directory: PathBuf,
    what: &'static str,
}

impl Unwritable {
    fn of(path: &Path) -> Option<Unwritable> {
        let directory = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        // Asked only once an open has failed: a file made and removed at once says it surely.
        let error = tempfile::Builder::new()
            .prefix(".moot-probe")
            .tempfile_in(directory)
            .err()?;
        let what = match error.kind() {
            std::io::ErrorKind::ReadOnlyFilesystem => "is on a read-only file system",
            std::io::ErrorKind::PermissionDenied => "is not writable by you",
            // Missing, or not a directory: the open's own error says more.
            _ => return None,
        };
        Some(Unwritable {
            directory: directory.to_path_buf(),
            what,
        })
    }

    /// Why a write cannot happen, and what to do.
    fn culprit(&self) -> String {
        format!(
            "its directory {} {}, and moot writes its journal there; make it writable, or set \
             MOOT_HOME to a writable directory (moot list, show, search, export, gates and \
             audit can still read it)",
            self.directory.display(),
            self.what
        )
    }
}

fn read_only_culprit(path: &Path) -> String {
    if let Some(unwritable) = Unwritable::of(path) {
        return unwritable.culprit();
    }
    let writable = |file: &Path| {
        std::fs::OpenOptions::new()
            .append(true)
            .open(file)
            .map(|_| true)
            .or_else(|e| match e.kind() {
                std::io::ErrorKind::NotFound => Ok(true),
                _ => Err(e),
            })
            .unwrap_or(false)
    };
    if !writable(path) {
        return format!(
            "{} is read-only; make it writable (chmod u+w {}) or point MOOT_HOME elsewhere",
            path.display(),
            path.display()
        );
    }
    for suffix in ["-shm", "-wal"] {
        let mut companion = path.as_os_str().to_owned();
        companion.push(suffix);
        let companion = PathBuf::from(companion);
        if !writable(&companion) {
            return format!(
                "{} is read-only (left by another user or an earlier run); make it writable \
                 (chmod u+w {}), or delete it while no moot is running",
                companion.display(),
                companion.display()
            );
        }
    }
    let directory = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    format!(
        "SQLite opened it read-only; check that {} and the files in it are writable by you",
        directory.display()
    )
}

/// A shared handle on the journal. Writes are short and serialized through one connection.
#[derive(Clone)]
pub struct Sqlite {
    /// A second connection for the reads that follow running debates (their events, a
    /// debate's row), so a viewer never queues behind the writers; none for an in-memory
    /// journal, which only its one connection sees. Declared first so it closes first: the
    /// writing connection, closing last, folds the WAL into the database file and removes it
    /// (a read-only connection cannot, and one still open stops the other from doing it).
    reader: Option<Arc<Mutex<Connection>>>,
    connection: Arc<Mutex<Connection>>,
    /// The chain heads this connection last wrote (`chain::KnownHeads`); locked after the
    /// connection, only by `write` and `delete`.
    heads: Arc<Mutex<chain::KnownHeads>>,
    /// Appends waiting for the write lock, written together by whichever takes it first.
    waiting: Arc<append::Waiting>,
    path: PathBuf,
    /// What opening it changed (`private::prepare`), for the person to hear.
    notices: Vec<String>,
}

impl Sqlite {
    /// Opens (creating if needed) the journal at `path` and brings its schema up to date.
    pub fn open(path: &Path) -> Result<Sqlite, StoreError> {
        Self::open_waiting(path, Duration::from_secs(5), false)
    }

    /// `open` for the journal in moot's own data dir: that directory is narrowed to its
    /// owner too when others can read it.
    pub fn open_in_data_dir(path: &Path) -> Result<Sqlite, StoreError> {
        Self::open_waiting(path, Duration::from_secs(5), true)
    }

    /// Opens the journal, waiting at most `busy` for another process's lock; `owned_dir`:
    /// its directory is moot's data dir.
    pub fn open_waiting(path: &Path, busy: Duration, owned: bool) -> Result<Sqlite, StoreError> {
        Self::open_or_why(path, busy, owned).map_err(|(error, _)| error)
    }

    /// `open_waiting`, and on failure why the journal's directory cannot be written, when
    /// that is the cause: asked once (it makes a probe file) and handed to whoever can use it.
    fn open_or_why(
        path: &Path,
        busy: Duration,
        owned: bool,
    ) -> Result<Sqlite, (StoreError, Option<Unwritable>)> {
        let opened = || -> Result<Sqlite, StoreError> {
            let notices = private::prepare(path, owned).map_err(|e| StoreError::Open {
                path: path.display().to_string(),
                detail: format!("cannot make it private to you: {e}"),
            })?;
            let connection = Connection::open_with_flags(
                path,
                OpenFlags::SQLITE_OPEN_READ_WRITE
                    | OpenFlags::SQLITE_OPEN_CREATE
                    | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .map_err(|e| StoreError::classify(path, e))?;
            let mut store = Self::prepare(connection, path, busy)?;
            store.notices = notices;
            Ok(store)
        };
        opened().map_err(|error| match error {
            // SQLite says only "unable to open database file" when it cannot make the files
            // it keeps beside the journal.
            StoreError::Open { .. } | StoreError::ReadOnly { .. } => match Unwritable::of(path) {
                Some(unwritable) => (
                    StoreError::ReadOnly {
                        path: path.display().to_string(),
                        culprit: unwritable.culprit(),
                    },
                    Some(unwritable),
                ),
                None => (error, None),
            },
            error => (error, None),
        })
    }

    /// `open_in_data_dir` for a command that only reads: when the journal's directory cannot
    /// be written (a read-only mount), the journal is read as it stands, with a notice saying
    /// so, rather than refused.
    pub fn open_to_read(path: &Path) -> Result<Sqlite, StoreError> {
        match Self::open_or_why(path, Duration::from_secs(5), true) {
            Err((_, Some(unwritable))) if path.is_file() => {
                Self::open_as_it_stands(path, &unwritable)
            }
            opened => opened.map_err(|(error, _)| error),
        }
    }

    /// The journal opened read-only and immutable: SQLite neither locks it nor looks for the
    /// files it keeps beside it, which it could not create here.
    fn open_as_it_stands(path: &Path, unwritable: &Unwritable) -> Result<Sqlite, StoreError> {
        use std::os::unix::ffi::OsStrExt;
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let mut uri = String::from("file:");
        for byte in absolute.as_os_str().as_bytes() {
            match byte {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'/' | b'-' | b'.' | b'_' | b'~' => {
                    uri.push(char::from(*byte))
                }
                _ => uri.push_str(&format!("%{byte:02X}")),
            }
        }
        uri.push_str("?immutable=1");
        let connection = Connection::open_with_flags(
            &uri,
            OpenFlags::SQLITE_OPEN_READ_ONLY
                | OpenFlags::SQLITE_OPEN_URI
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| StoreError::classify(path, e))?;
        let sqlite = || -> Result<(), rusqlite::Error> {
            connection.set_prepared_statement_cache_capacity(STATEMENTS_KEPT);
            plan_once(&connection)?;
            connection.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))?;
            connection.pragma_update(None, "temp_store", "MEMORY")
        };
        sqlite().map_err(|e| StoreError::classify(path, e))?;
        // An older journal would need its migrations written first: refused as read-only.
        migrations::migrate(&connection, path)?;
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        let unread = std::fs::metadata(PathBuf::from(wal)).is_ok_and(|m| m.len() > 0);
        let mut notice = format!(
            "{} {}, so the journal is read as it stands and nothing can be changed",
            unwritable.directory.display(),
            unwritable.what
        );
        if unread {
            notice.push_str(
                "; its write-ahead log cannot be read without writing, so the latest changes \
                 may be missing",
            );
        }
        Ok(Sqlite {
            connection: Arc::new(Mutex::new(connection)),
            heads: Arc::default(),
            waiting: Arc::default(),
            reader: None,
            path: path.to_path_buf(),
            notices: vec![notice],
        })
    }

    /// What opening the journal changed that its owner should hear (a mode narrowed).
    pub fn notices(&self) -> &[String] {
        &self.notices
    }

    /// An in-memory journal, for tests and benchmarks.
    pub fn in_memory() -> Result<Sqlite, StoreError> {
        let connection = Connection::open_in_memory()?;
        Self::prepare(connection, Path::new(":memory:"), Duration::from_secs(5))
    }

    fn prepare(connection: Connection, path: &Path, busy: Duration) -> Result<Sqlite, StoreError> {
        let setup = || -> Result<(), StoreError> {
            let sqlite = || -> Result<(), rusqlite::Error> {
                connection.busy_timeout(busy)?;
                connection.set_prepared_statement_cache_capacity(STATEMENTS_KEPT);
                plan_once(&connection)?;
                // Reading a page is what reveals a file that is not a database.
                connection.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))?;
                connection.pragma_update(None, "journal_mode", "WAL")?;
                connection.pragma_update(None, "synchronous", "NORMAL")?;
                connection.pragma_update(None, "foreign_keys", "ON")?;
                // A statement inside a transaction keeps a sub-journal of the pages it changes;
                // past 64 KiB SQLite spills it to a new file in /var/tmp, and creating and
                // deleting those files cost a busy server about a tenth of its CPU.
                connection.pragma_update(None, "temp_store", "MEMORY")?;
                Ok(())
            };
            sqlite().map_err(|e| StoreError::classify(path, e))?;
            migrations::migrate(&connection, path)
        };
        // Processes opening a new journal together meet where SQLite answers "busy" at once
        // rather than calling the busy handler (switching to WAL, a lock upgrade that could
        // deadlock): those are tried again, with a little jitter, until `busy` has passed.
        let deadline = std::time::Instant::now() + busy;
        let mut attempt = 0u64;
        loop {
            match setup() {
                Err(StoreError::Locked { .. }) if std::time::Instant::now() < deadline => {
                    attempt += 1;
                    let jitter = u64::from(std::process::id()) % 17 + attempt * 7;
                    std::thread::sleep(Duration::from_millis(jitter.min(100)));
                }
                other => {
                    other?;
                    break;
                }
            }
        }
        let reader = (path != Path::new(":memory:"))
            .then(|| {
                let reader = Connection::open_with_flags(
                    path,
                    OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                )
                .ok()?;
                reader.busy_timeout(busy).ok()?;
                reader.pragma_update(None, "temp_store", "MEMORY").ok()?;
                reader.set_prepared_statement_cache_capacity(STATEMENTS_KEPT);
                plan_once(&reader).ok()?;
                Some(Arc::new(Mutex::new(reader)))
            })
            .flatten();
        Ok(Sqlite {
            connection: Arc::new(Mutex::new(connection)),
            heads: Arc::default(),
            waiting: Arc::default(),
            reader,
            path: path.to_path_buf(),
            notices: Vec::new(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where running debates serve their events to viewers (`live/` beside the journal); none
    /// for an in-memory journal, which no other process can see.
    pub fn live_dir(&self) -> Option<std::path::PathBuf> {
        (self.path != Path::new(":memory:"))
            .then(|| self.path.parent().map(|dir| dir.join("live")))
            .flatten()
    }

    /// moot's own git dir for code debate `id`'s versions, beside the journal
    /// (`versions/<id>.git`, by absolute path): outside every work tree, so nothing a hook
    /// runs can write it. An in-memory journal keeps them in the temporary directory.
    pub fn versions_git_dir(&self, id: &str) -> std::path::PathBuf {
        versions_git_dir_beside(&self.path, id)
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // The connection stays consistent after a panic elsewhere: SQLite rolls back on error.
        self.connection.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `work` in one transaction that takes the write lock first (so the chain head it
    /// reads is still the head when it appends, whatever another process does), committing
    /// when it succeeds.
    fn write<T>(
        &self,
        work: impl FnOnce(&chain::Writer<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.write_on(&mut self.lock(), work)
    }

    /// `write`, on the connection its caller already holds.
    fn write_on<T>(
        &self,
        connection: &mut Connection,
        work: impl FnOnce(&chain::Writer<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut heads = self.heads.lock().unwrap_or_else(|e| e.into_inner());
        let run = |connection: &mut Connection| -> Result<T, StoreError> {
            let tx =
                connection.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let writer = chain::Writer::begin(tx, &mut heads)?;
            let value = work(&writer)?;
            writer.commit(&mut heads)?;
            Ok(value)
        };
        run(connection).map_err(|error| self.classified(error))
    }

    /// A write's error as the person reads it: a SQLite error names the journal and the fix.
    fn classified(&self, error: StoreError) -> StoreError {
        match error {
            StoreError::Sqlite(error) => StoreError::classify(&self.path, error),
            other => other,
        }
    }

    /// Runs a read on the reading connection (the writing one when there is none), beside
    /// the writers: what it sees is what they had committed when it began. A read the reading
    /// connection cannot make (its files gone, say) is made on the writing one.
    fn read<T>(
        &self,
        work: impl Fn(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        if let Some(reader) = &self.reader {
            let connection = reader.lock().unwrap_or_else(|e| e.into_inner());
            match work(&connection) {
                Err(StoreError::Sqlite(_)) => {}
                done => return done,
            }
        }
        self.with(work)
    }

    /// Runs `work` on the connection; a SQLite error leaves here classified, naming the
    /// journal file and what to do.
    fn with<T>(
        &self,
        work: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let connection = self.lock();
        work(&connection).map_err(|error| match error {
            StoreError::Sqlite(error) => StoreError::classify(&self.path, error),
            other => other,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reading connection closes before the writing one, which then folds the WAL into
    /// the database file: a journal whose moot has exited is whole in `moot.db` alone.
    #[test]
    fn a_closed_journal_is_whole_in_its_database_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = Sqlite::open(&dir.path().join("moot.db")).unwrap();
        let debate = running_debate("DEB-closed01");
        store.create_debate(&debate).unwrap();
        assert_eq!(store.debate("DEB-closed01").unwrap().id, "DEB-closed01");
        assert!(dir.path().join("moot.db-wal").exists());
        drop(store);
        assert!(
            !dir.path().join("moot.db-wal").exists(),
            "the WAL was folded in and removed"
        );
    }

    /// A viewer's reads (a debate's row, its events) go beside the writers: they answer while
    /// the writing connection is held, and see every write committed before they began.
    #[test]
    fn reads_that_follow_a_debate_do_not_queue_behind_the_writers() {
        let dir = tempfile::tempdir().unwrap();
        let store = Sqlite::open(&dir.path().join("moot.db")).unwrap();
        let debate = running_debate("DEB-reader01");
        store.create_debate(&debate).unwrap();
        let said = crate::debate::Event::Notice {
            message: "committed before the read".into(),
        };
        store.record_event(&debate.id, &said).unwrap();
        let held = store.lock();
        let (answer, answered) = std::sync::mpsc::channel();
        let reader = store.clone();
        std::thread::spawn(move || {
            let events = reader.events_after("DEB-reader01", 0).map(|e| e.len());
            let found = reader.debate("DEB-reader01").map(|d| d.id);
            let _ = answer.send((events.ok(), found.ok()));
        });
        let read = answered.recv_timeout(Duration::from_secs(10));
        drop(held);
        assert_eq!(
            read.expect("the reads waited for the writing connection"),
            (Some(1), Some("DEB-reader01".to_string()))
        );
    }

    /// Statement sub-journals and sorts stay in memory on both connections: spilled, each is
    /// a file created and deleted in /var/tmp, which a busy server pays for in its CPU.
    #[test]
    fn both_connections_keep_their_temporary_pages_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let store = Sqlite::open(&dir.path().join("moot.db")).unwrap();
        let temp_store =
            |c: &Connection| -> i64 { c.query_row("PRAGMA temp_store", [], |r| r.get(0)).unwrap() };
        assert_eq!(temp_store(&store.lock()), 2, "the writing connection");
        let reader = store.reader.as_ref().expect("a file journal has a reader");
        assert_eq!(
            temp_store(&reader.lock().unwrap()),
            2,
            "the reading connection"
        );
    }

    /// A cached query runs again with new values without being parsed and planned again, on
    /// either connection (the planner once marked such statements for preparing anew).
    #[test]
    fn a_cached_query_is_planned_once_whatever_is_bound() {
        let dir = tempfile::tempdir().unwrap();
        let store = Sqlite::open(&dir.path().join("moot.db")).unwrap();
        let query = "SELECT seq, event FROM events WHERE debate_id = ?1 AND seq > ?2 ORDER BY seq";
        let prepared_again = |c: &Connection| -> i32 {
            for after in 0..4_i64 {
                let mut statement = c.prepare_cached(query).unwrap();
                let rows = statement
                    .query_map(rusqlite::params![format!("DEB-{after}"), after], |_| Ok(()))
                    .unwrap();
                assert_eq!(rows.count(), 0);
            }
            c.prepare_cached(query)
                .unwrap()
                .get_status(rusqlite::StatementStatus::RePrepare)
        };
        assert_eq!(prepared_again(&store.lock()), 0, "the writing connection");
        let reader = store.reader.as_ref().expect("a file journal has a reader");
        assert_eq!(
            prepared_again(&reader.lock().unwrap()),
            0,
            "the reading connection"
        );
    }

    #[test]
    fn a_locked_journal_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("moot.db");
        let holder = Connection::open(&path).unwrap();
        holder
            .execute_batch("CREATE TABLE t (x); BEGIN EXCLUSIVE; INSERT INTO t VALUES (1);")
            .unwrap();
        let error = Sqlite::open_waiting(&path, Duration::from_millis(50), false)
            .err()
            .unwrap();
        assert!(matches!(error, StoreError::Locked { .. }), "{error}");
        assert!(error.to_string().contains("locked by another process"));
        holder.execute_batch("COMMIT").unwrap();
        drop(holder);
        // Once released, the journal opens and migrates.
        Sqlite::open_waiting(&path, Duration::from_millis(50), false).unwrap();
    }

    /// A code debate's versions sit beside the journal, by absolute path, one component per
    /// id, and go when the debate is deleted.
    #[test]
    fn versions_sit_beside_the_journal_and_go_with_their_debate() {
        let dir = tempfile::tempdir().unwrap();
        let store = Sqlite::open(&dir.path().join("moot.db")).unwrap();
        let git_dir = store.versions_git_dir("DEB-code0001");
        assert_eq!(git_dir, dir.path().join("versions/DEB-code0001.git"));
        assert_eq!(
            store.versions_git_dir("../x").file_name().unwrap(),
            "___x.git"
        );
        assert!(
            Sqlite::open(Path::new(":memory:"))
                .unwrap()
                .versions_git_dir("DEB-x")
                .starts_with(std::env::temp_dir())
        );
        store
            .create_debate(&running_debate("DEB-code0001"))
            .unwrap();
        std::fs::create_dir_all(git_dir.join("objects")).unwrap();
        store.delete("DEB-code0001").unwrap();
        assert!(!git_dir.exists());
        assert!(
            dir.path().join("versions").is_dir(),
            "only its own dir goes"
        );
    }

    #[test]
    fn read_only_and_malformed_journals_name_the_file_and_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("moot.db");
        std::fs::write(&path, b"").unwrap();
        let code = |code| {
            rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), Some("x".into()))
        };
        let error = StoreError::classify(&path, code(rusqlite::ffi::SQLITE_CORRUPT)).to_string();
        assert!(error.contains(&path.display().to_string()), "{error}");
        assert!(error.contains("move it aside"), "{error}");
        // A -shm that cannot be written (here a directory, which even root cannot write as a
        // file) is named, not the main file.
        std::fs::create_dir(dir.path().join("moot.db-shm")).unwrap();
        let error = StoreError::classify(&path, code(rusqlite::ffi::SQLITE_READONLY)).to_string();
        assert!(error.contains("moot.db-shm is read-only"), "{error}");
        assert!(
            error.contains("delete it while no moot is running"),
            "{error}"
        );
        std::fs::remove_dir(dir.path().join("moot.db-shm")).unwrap();
        let error = StoreError::classify(&path, code(rusqlite::ffi::SQLITE_READONLY)).to_string();
        assert!(error.contains("writable by you"), "{error}");
        let error = StoreError::classify(&path, code(rusqlite::ffi::SQLITE_FULL)).to_string();
        assert!(error.contains("disk is full"), "{error}");
    }
}

/// moot's own git dir for code debate `id`'s versions beside the journal at `journal`
/// (`versions/<id>.git`, by absolute path): outside every work tree, so nothing a hook runs
/// can write it. An in-memory journal keeps them in the temporary directory.
pub(super) fn versions_git_dir_beside(journal: &Path, id: &str) -> PathBuf {
    let dir = match journal.parent() {
        _ if journal == Path::new(":memory:") => std::env::temp_dir().join("moot-versions"),
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    // Ids are moot's own (`DEB-…`); anything else is kept to one path component.
    let name: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    dir.join("versions").join(format!("{name}.git"))
}

/// Removes a deleted debate's code versions (`versions`), when it had any.
pub(super) fn remove_versions(versions: &Path, id: &str) -> Result<(), StoreError> {
    match std::fs::remove_dir_all(versions) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(StoreError::Data(format!(
            "{id} was deleted, but its versions in {} were not: {e}",
            versions.display()
        ))),
        _ => Ok(()),
    }
}

/// A running debate with nothing in it yet, for tests (the `fixtures` feature).
#[cfg(any(test, feature = "fixtures"))]
pub fn running_debate(id: &str) -> crate::debate::Debate {
    use crate::debate::{Debate, DebateStatus, now_rfc3339};
    Debate {
        id: id.into(),
        question: "Q?".into(),
        protocol: "moderated".into(),
        status: DebateStatus::Running,
        config: serde_json::json!({}),
        seats: Vec::new(),
        created_at: now_rfc3339(),
        updated_at: now_rfc3339(),
        finished_at: None,
        confidence: None,
        error: None,
        stage: None,
    }
}

#[cfg(test)]
mod chain_heads {
    use super::*;
    use crate::debate::{Event, Phase, Turn, TurnKey};

    /// A writer takes the head it wrote last as known; another connection's append (`moot
    /// approve` from another process) must make it look again, or the chain would fork.
    #[test]
    fn heads_known_to_one_connection_give_way_to_another_connections_appends() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("moot.db");
        let (one, other) = (Sqlite::open(&path).unwrap(), Sqlite::open(&path).unwrap());
        one.create_debate(&running_debate("DEB-heads")).unwrap();
        for round in 1..=3 {
            let turn = Turn::pending(TurnKey::new(round, Phase::Argument, "A"), "p", "m");
            one.record_turn("DEB-heads", &turn).unwrap();
            let notice = Event::Notice {
                message: format!("from the other connection, round {round}"),
            };
            other.record_event("DEB-heads", &notice).unwrap();
            // Nor may a head it reads for a receipt be the one it knew before that append.
            let head = one.chain_head("DEB-heads").unwrap().unwrap();
            assert_eq!(head.entries, 1 + 2 * i64::from(round));
            assert_eq!(Some(head), other.chain_head("DEB-heads").unwrap());
        }
        // A write that fails leaves no head known that it did not commit.
        let duplicate = Turn::pending(TurnKey::new(1, Phase::Argument, "A"), "p", "m");
        assert!(one.record_turn("DEB-heads", &duplicate).is_err());
        one.record_turn(
            "DEB-heads",
            &Turn::pending(TurnKey::new(4, Phase::Argument, "A"), "p", "m"),
        )
        .unwrap();
        let check = one.check_chain("DEB-heads").unwrap();
        assert!(check.holds(), "{check:?}");
        assert_eq!(check.entries, 1 + 3 + 3 + 1);
        let head = one.chain_head("DEB-heads").unwrap().unwrap();
        assert_eq!((head.entries, Some(head.hash)), (check.entries, check.head));
    }
}
