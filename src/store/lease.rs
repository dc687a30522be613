//! Which process runs a debate. The kernel holds the lease: an `flock` on the debate's lock file
//! beside the journal (`leases/<id>.lock`, which names the holder's pid and host), taken by
//! whoever drives the debate and released when that process ends, stopped or not. `flock`, not
//! `fcntl`: its lock belongs to the open file, so one process running many debates conflicts
//! with itself too. The pid, host and a heartbeat also go in the debate's row, for display: a
//! `running` debate whose process is gone reads as interrupted. The lease is for one host.

use super::{Store, StoreError};
use crate::debate::DebateStatus;
use rusqlite::{OptionalExtension, params};
use std::path::Path;
use std::time::Duration;

/// How often a running debate renews its lease.
pub const LEASE_RENEWAL: Duration = Duration::from_secs(5);

/// A lease not renewed for this long belongs to a process that is gone (or hung).
const LEASE_STALE_SECONDS: i64 = 20;

/// The lease columns of a debate row.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Lease {
    pub pid: Option<i64>,
    pub host: Option<String>,
    pub at: Option<i64>,
}

impl Lease {
    fn alive(&self) -> bool {
        let (Some(pid), Some(at)) = (self.pid, self.at) else {
            return false;
        };
        // On this machine the process itself answers, however long it has been stopped;
        // elsewhere only the heartbeat can.
        if self.host.as_deref() == Some(&host()) {
            return process_alive(pid);
        }
        unix_now() - at <= LEASE_STALE_SECONDS
    }

    /// How a debate stored with `status` reads: `running` with no live process is interrupted.
    pub fn status(&self, stored: DebateStatus) -> DebateStatus {
        if stored == DebateStatus::Running && !self.alive() {
            DebateStatus::Interrupted
        } else {
            stored
        }
    }
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// This machine's name, so a lease held elsewhere (a shared home over NFS) is judged by its
/// heartbeat alone.
fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|name| name.trim().to_string())
        .unwrap_or_default()
}

/// Whether process `pid` exists and is not a zombie (where /proc says; elsewhere, assume so).
fn process_alive(pid: i64) -> bool {
    if !Path::new("/proc/self/stat").exists() {
        return true;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name, which may itself hold spaces.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next())
            .is_some_and(|state| !matches!(state, 'Z' | 'X')),
        Err(_) => false,
    }
}

/// A debate's lease, held for as long as this lives (the lock file stays open).
#[derive(Debug)]
pub struct LeaseGuard {
    _file: Option<std::fs::File>,
}

/// Takes the lock on `path` without waiting: the file, or the pid of who holds it as its
/// contents say.
fn lock(path: &Path) -> Result<Result<std::fs::File, u32>, std::io::Error> {
    use std::io::{Read, Seek, Write};
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    // SAFETY: flock on a descriptor this function owns.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let error = std::io::Error::last_os_error();
        if error.raw_os_error() != Some(libc::EWOULDBLOCK) {
            return Err(error);
        }
        let mut holder = String::new();
        let _ = file.read_to_string(&mut holder);
        let pid = holder
            .split_whitespace()
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        return Ok(Err(pid));
    }
    file.set_len(0)?;
    file.rewind()?;
    writeln!(file, "{} {}", std::process::id(), host())?;
    Ok(Ok(file))
}

impl Store {
    /// Where debate `id`'s lock file is: beside the journal (none for an in-memory one).
    fn lease_file(&self, id: &str) -> Result<Option<std::path::PathBuf>, StoreError> {
        if self.path == Path::new(":memory:") {
            return Ok(None);
        }
        if id.is_empty()
            || !id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(StoreError::Data(format!(
                "{id:?} is not a debate id a lock file can be named for"
            )));
        }
        let dir = self.path.parent().unwrap_or(Path::new("."));
        Ok(Some(dir.join("leases").join(format!("{id}.lock"))))
    }

    /// Takes the lease of debate `id` for as long as the guard lives, unless another holder
    /// (another process, or another debate driver in this one) has it.
    pub fn acquire_lease(&self, id: &str) -> Result<LeaseGuard, StoreError> {
        let file = match self.lease_file(id)? {
            Some(path) => match lock(&path) {
                Ok(Ok(file)) => Some(file),
                Ok(Err(pid)) => {
                    let heard = self
                        .with(|connection| {
                            Ok(connection
                                .query_row(
                                    "SELECT lease_at FROM debates WHERE id = ?1",
                                    params![id],
                                    |row| row.get::<_, Option<i64>>(0),
                                )
                                .optional()?
                                .flatten())
                        })
                        .unwrap_or(None);
                    return Err(StoreError::InUse {
                        id: id.to_string(),
                        pid,
                        seconds: heard.map_or(0, |at| (unix_now() - at).max(0) as u64),
                    });
                }
                Err(error) => {
                    return Err(StoreError::Data(format!(
                        "cannot take the lease of {id} ({}): {error}",
                        path.display()
                    )));
                }
            },
            None => None,
        };
        self.with(|connection| {
            let tx = rusqlite::Transaction::new_unchecked(
                connection,
                rusqlite::TransactionBehavior::Immediate,
            )?;
            let exists = tx
                .query_row("SELECT 1 FROM debates WHERE id = ?1", params![id], |_| {
                    Ok(())
                })
                .optional()?
                .is_some();
            if !exists {
                return Err(StoreError::NotFound(id.to_string()));
            }
            tx.execute(
                "UPDATE debates SET lease_pid = ?2, lease_host = ?3, lease_at = ?4 WHERE id = ?1",
                params![id, i64::from(std::process::id()), host(), unix_now()],
            )?;
            tx.commit()?;
            Ok(())
        })?;
        Ok(LeaseGuard { _file: file })
    }

    /// Renews this process's lease of debate `id`.
    pub fn renew_lease(&self, id: &str) -> Result<(), StoreError> {
        self.with(|connection| {
            connection.execute(
                "UPDATE debates SET lease_at = ?3 WHERE id = ?1 AND lease_pid = ?2",
                params![id, i64::from(std::process::id()), unix_now()],
            )?;
            Ok(())
        })
    }

    /// Gives up this process's lease of debate `id`.
    pub fn release_lease(&self, id: &str) -> Result<(), StoreError> {
        self.with(|connection| {
            connection.execute(
                "UPDATE debates SET lease_pid = NULL, lease_host = NULL, lease_at = NULL
                 WHERE id = ?1 AND lease_pid = ?2",
                params![id, i64::from(std::process::id())],
            )?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_is_alive_while_renewed_by_a_living_process() {
        let mine = Lease {
            pid: Some(i64::from(std::process::id())),
            host: Some(host()),
            at: Some(unix_now()),
        };
        assert!(mine.alive());
        assert_eq!(
            mine.status(DebateStatus::Running),
            DebateStatus::Running,
            "a live lease keeps a debate running"
        );
        // On this host a living process holds its lease however stale its heartbeat (it may
        // be stopped); on another host only the heartbeat tells.
        let stale = Lease {
            at: Some(unix_now() - 60),
            ..mine.clone()
        };
        assert_eq!(stale.status(DebateStatus::Running), DebateStatus::Running);
        let elsewhere = Lease {
            host: Some("another-host".into()),
            ..stale
        };
        assert_eq!(
            elsewhere.status(DebateStatus::Running),
            DebateStatus::Interrupted
        );
        let none = Lease::default();
        assert_eq!(
            none.status(DebateStatus::Running),
            DebateStatus::Interrupted
        );
        assert_eq!(none.status(DebateStatus::Paused), DebateStatus::Paused);
        // A process that has exited (pid beyond the kernel's range) is dead at once.
        let gone = Lease {
            pid: Some(i64::from(i32::MAX)),
            ..mine
        };
        assert!(!gone.alive());
    }

    /// The kernel holds the lease: a second driver, even in this same process, is refused
    /// with the holder's pid while the first guard lives, and takes it once it is dropped.
    #[test]
    fn a_held_lease_refuses_a_second_driver_even_in_the_same_process() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("moot.db")).unwrap();
        store
            .create_debate(&super::super::running_debate("DEB-lease01"))
            .unwrap();
        let held = store.acquire_lease("DEB-lease01").unwrap();
        let other = Store::open(&dir.path().join("moot.db")).unwrap();
        for store in [&store, &other] {
            match store.acquire_lease("DEB-lease01") {
                Err(StoreError::InUse { pid, .. }) => assert_eq!(pid, std::process::id()),
                other => panic!("a second driver got {other:?}"),
            }
        }
        let file = dir.path().join("leases").join("DEB-lease01.lock");
        let holder = std::fs::read_to_string(&file).unwrap();
        assert!(
            holder.starts_with(&format!("{} ", std::process::id())),
            "{holder}"
        );
        drop(held);
        let again = other.acquire_lease("DEB-lease01").unwrap();
        drop(again);
        assert!(matches!(
            store.acquire_lease("../escape"),
            Err(StoreError::Data(_))
        ));
    }
}
