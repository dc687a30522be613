//! A server's journal checkpointed on a thread of its own: with many debates writing, the
//! WAL's automatic checkpoint (copying the log into the database and syncing it) would fall to
//! whichever write crossed the threshold, holding every other debate's write behind an fsync.

use super::{Sqlite, StoreError};
use rusqlite::{Connection, OpenFlags};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The checkpointing thread; dropping it checkpoints once more and stops it.
pub struct Checkpointer {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Nothing to checkpoint (an in-memory journal, or a server that checkpoints its own).
    pub(super) fn none() -> Checkpointer {
        Checkpointer {
            stop: None,
            thread: None,
        }
    }
}

impl Sqlite {
    /// Checkpoints this journal every `every` on a connection and thread of its own, instead
    /// of in the middle of a write (a passive checkpoint waits for no writer and no reader).
    /// An in-memory journal has nothing to checkpoint.
    pub fn checkpoint_in_background(&self, every: Duration) -> Result<Checkpointer, StoreError> {
        if self.path == std::path::Path::new(":memory:") {
            return Ok(Checkpointer::none());
        }
        let own = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| StoreError::classify(&self.path, e))?;
        own.busy_timeout(Duration::from_secs(5))?;
        self.with(|connection| {
            connection.pragma_update(None, "wal_autocheckpoint", 0)?;
            Ok(())
        })?;
        let (stop, stopped) = mpsc::channel::<()>();
        let checkpoint = move || {
            // Passive: what cannot be copied now is copied next time.
            let _ = own.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
        };
        let thread = std::thread::Builder::new()
            .name("journal-checkpoint".into())
            .spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(every) {
                    checkpoint();
                }
                checkpoint();
            })
            .map_err(|e| StoreError::Data(format!("cannot start the checkpoint thread: {e}")))?;
        Ok(Checkpointer {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With the checkpointer on, the writers' connection no longer checkpoints; what they
    /// wrote is copied into the database by the checkpointer, at the latest when it stops.
    #[test]
    fn the_checkpointer_takes_the_checkpoints_off_the_writers() {
        let dir = tempfile::tempdir().unwrap();
        let store = Sqlite::open(&dir.path().join("moot.db")).unwrap();
        let checkpointer = store
            .checkpoint_in_background(Duration::from_secs(3600))
            .unwrap();
        let automatic: i64 = store
            .with(|c| Ok(c.query_row("PRAGMA wal_autocheckpoint", [], |r| r.get(0))?))
            .unwrap();
        assert_eq!(automatic, 0);
        for n in 0..300 {
            let id = format!("DEB-chkpt{n:04}");
            store
                .create_debate(&super::super::running_debate(&id))
                .unwrap();
        }
        let file = || std::fs::metadata(dir.path().join("moot.db")).unwrap().len();
        let pages: i64 = store
            .with(|c| {
                let count: i64 = c.query_row("PRAGMA page_count", [], |r| r.get(0))?;
                let size: i64 = c.query_row("PRAGMA page_size", [], |r| r.get(0))?;
                Ok(count * size)
            })
            .unwrap();
        assert!(
            (file() as i64) < pages,
            "nothing was checkpointed yet: the writes are in the WAL"
        );
        drop(checkpointer);
        assert_eq!(file() as i64, pages, "stopping, it checkpointed them all");
    }
}
