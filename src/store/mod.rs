//! The journal: SQLite (WAL, numbered migrations) holding debates, turns, checkpoint answers,
//! syntheses and learned endpoint capabilities, with FTS5 search over all their text.

mod history;
mod journal;
mod migrations;

pub use history::{DebateSummary, SearchHit};
pub use journal::{CheckpointRecord, StoredSynthesis};

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
        "the journal {path} was written by a newer moot (schema {found}, this one knows {known}); upgrade moot"
    )]
    TooNew {
        path: String,
        found: i64,
        known: i64,
    },
    #[error("cannot open the journal {path}: {detail}")]
    Open { path: String, detail: String },
    #[error("journal error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("journal data error: {0}")]
    Data(String),
}

impl StoreError {
    fn classify(path: &Path, error: rusqlite::Error) -> StoreError {
        let path = path.display().to_string();
        match error.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DatabaseBusy) | Some(rusqlite::ErrorCode::DatabaseLocked) => {
                StoreError::Locked { path }
            }
            Some(rusqlite::ErrorCode::NotADatabase)
            | Some(rusqlite::ErrorCode::DatabaseCorrupt) => StoreError::Corrupt {
                path,
                detail: error.to_string(),
            },
            _ => StoreError::Open {
                path,
                detail: error.to_string(),
            },
        }
    }
}

/// A shared handle on the journal. Writes are short and serialized through one connection.
#[derive(Clone)]
pub struct Store {
    connection: Arc<Mutex<Connection>>,
    path: PathBuf,
}

impl Store {
    /// Opens (creating if needed) the journal at `path` and brings its schema up to date.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Self::open_waiting(path, Duration::from_secs(5))
    }

    /// Opens the journal, waiting at most `busy` for another process's lock.
    pub fn open_waiting(path: &Path, busy: Duration) -> Result<Store, StoreError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| StoreError::Open {
                path: path.display().to_string(),
                detail: format!("cannot create {}: {e}", parent.display()),
            })?;
        }
        let connection = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| StoreError::classify(path, e))?;
        Self::prepare(connection, path, busy)
    }

    /// An in-memory journal, for tests and benchmarks.
    pub fn in_memory() -> Result<Store, StoreError> {
        let connection = Connection::open_in_memory()?;
        Self::prepare(connection, Path::new(":memory:"), Duration::from_secs(5))
    }

    fn prepare(connection: Connection, path: &Path, busy: Duration) -> Result<Store, StoreError> {
        let setup = || -> Result<(), rusqlite::Error> {
            connection.busy_timeout(busy)?;
            // Reading a page is what reveals a file that is not a database.
            connection.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))?;
            connection.pragma_update(None, "journal_mode", "WAL")?;
            connection.pragma_update(None, "synchronous", "NORMAL")?;
            connection.pragma_update(None, "foreign_keys", "ON")?;
            Ok(())
        };
        setup().map_err(|e| StoreError::classify(path, e))?;
        migrations::migrate(&connection, path)?;
        Ok(Store {
            connection: Arc::new(Mutex::new(connection)),
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // The connection stays consistent after a panic elsewhere: SQLite rolls back on error.
        self.connection.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_locked_journal_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("moot.db");
        let holder = Connection::open(&path).unwrap();
        holder
            .execute_batch("CREATE TABLE t (x); BEGIN EXCLUSIVE; INSERT INTO t VALUES (1);")
            .unwrap();
        let error = Store::open_waiting(&path, Duration::from_millis(50))
            .err()
            .unwrap();
        assert!(matches!(error, StoreError::Locked { .. }), "{error}");
        assert!(error.to_string().contains("locked by another process"));
        holder.execute_batch("COMMIT").unwrap();
        drop(holder);
        // Once released, the journal opens and migrates.
        Store::open_waiting(&path, Duration::from_millis(50)).unwrap();
    }

    #[test]
    fn a_newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("moot.db");
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "user_version", 99)
            .unwrap();
        let error = Store::open(&path).err().unwrap();
        assert!(
            matches!(error, StoreError::TooNew { found: 99, .. }),
            "{error}"
        );
    }
}
