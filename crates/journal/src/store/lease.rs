//! Which process runs a debate. The kernel holds the lease: an `flock` on the debate's lock file
//! beside the journal (`leases/<id>.lock`, which names the holder's pid and host), taken by
//! whoever drives the debate and released when that process ends, stopped or not. `flock`, not
//! `fcntl`: its lock belongs to the open file, so one process running many debates conflicts
//! with itself too. The pid, host and a heartbeat also go in the debate's row, for display: a
//! `running` debate whose process is gone reads as interrupted. The lease is for one host.

use super::{Sqlite, StoreError};
use crate::debate::DebateStatus;
use rusqlite::{OptionalExtension, params};
use std::path::Path;
use std::time::Duration;

/// How often a running debate renews its lease.
pub const LEASE_RENEWAL: Duration = Duration::from_secs(5);

/// How long a lease lasts without a heartbeat unless its holder said otherwise (a journal from
/// before migration 15, a handle not set `with_lease_ttl`): a holder elsewhere not heard from
/// for this long is gone (or hung).
pub const LEASE_TTL: Duration = Duration::from_secs(20);

/// The shortest a lease may last: its holder renews it four times over that, and a busy
/// machine must not miss them all.
pub const MIN_LEASE_TTL: Duration = Duration::from_secs(2);

/// The lease columns of a debate row.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Lease {
    pub pid: Option<i64>,
    pub host: Option<String>,
    /// The last heartbeat.
    pub at: Option<i64>,
    /// When the lease was taken (none in a journal from before migration 13).
    pub since: Option<i64>,
    /// How many seconds the heartbeat lasts (none before migration 15).
    pub ttl: Option<i64>,
}

impl Lease {
    /// Whether its holder still runs: on this machine the process answers; elsewhere its
    /// heartbeat must be recent.
    pub(super) fn alive(&self) -> bool {
        let (Some(pid), Some(at)) = (self.pid, self.at) else {
            return false;
        };
        // On this machine the process itself answers, however long it has been stopped;
        // elsewhere only the heartbeat can. A process that started after the lease was taken
        // (after its last heartbeat, where the journal does not say when it was taken) is
        // another one the kernel gave the same pid, not the holder.
        if self.host.as_deref() == Some(&host()) {
            return holder_alive(pid, self.since.unwrap_or(at));
        }
        let ttl = self.ttl.unwrap_or(LEASE_TTL.as_secs() as i64);
        unix_now() - at <= ttl
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

pub(super) fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// This machine's name, so a lease held elsewhere (a shared home over NFS, another replica on
/// a shared journal) is judged by its heartbeat alone. `MOOT_HOST` names it instead, where
/// two machines (or containers with pids of their own) answer to one hostname.
pub(super) fn host() -> String {
    host_named(std::env::var("MOOT_HOST").ok())
}

/// `host`, given what `MOOT_HOST` says.
fn host_named(named: Option<String>) -> String {
    if let Some(named) = named.filter(|n| !n.trim().is_empty()) {
        return named.trim().to_string();
    }
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|name| name.trim().to_string())
        .unwrap_or_default()
}

/// How much later than its lease a holder may seem to have started: the start time read from
/// /proc moves with the wall clock when that is stepped (NTP), and a pid given again within a
/// minute of a lease being taken is not what this guards against (a journal copied from
/// another run, a holder that died long ago).
const CLOCK_SLACK_SECONDS: i64 = 60;

/// Whether process `pid`, which took a lease at `taken`, still holds it: it exists, is not
/// a zombie, and started before then (where /proc says; elsewhere, assume so).
fn holder_alive(pid: i64, taken: i64) -> bool {
    if !Path::new("/proc/self/stat").exists() {
        return true;
    }
    let Some(stat) = process_stat(pid) else {
        return false;
    };
    let running = stat
        .trim_start()
        .chars()
        .next()
        .is_some_and(|state| !matches!(state, 'Z' | 'X'));
    running && started(&stat).is_none_or(|started| started <= taken + CLOCK_SLACK_SECONDS)
}

/// The fields of `/proc/PID/stat` after the parenthesised command name (which may itself
/// hold spaces): the state first.
fn process_stat(pid: i64) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(stat.rsplit_once(')')?.1.to_string())
}

/// When the process whose `process_stat` this is started (Unix seconds).
fn started(stat: &str) -> Option<i64> {
    // Field 22, counted from the pid; these fields start at the third.
    let ticks: i64 = stat.split_whitespace().nth(22 - 3)?.parse().ok()?;
    let boot: i64 = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|line| line.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    let hertz = moot_os::lock::clock_ticks_per_second()?;
    Some(boot + ticks / hertz)
}

/// A debate's lease, held for as long as this lives (the lock file stays open). Dropped, it
/// removes its lock file while still holding the lock, so a server that runs many debates
/// leaves no file behind for each.
#[derive(Debug)]
pub struct LeaseGuard {
    held: Option<(std::fs::File, std::path::PathBuf)>,
}

impl LeaseGuard {
    /// A lease kept in the debate's row alone (a journal on a server, which several hosts
    /// share: no lock file on one of them can hold it), given up by `release_lease` or by the
    /// holder's end.
    pub(super) fn in_row() -> LeaseGuard {
        LeaseGuard { held: None }
    }
}

impl Drop for LeaseGuard {
    fn drop(&mut self) {
        if let Some((file, path)) = &self.held
            && still_at(file, path)
        {
            let _ = std::fs::remove_file(path);
        }
        // The lock goes with the file, closed after this.
    }
}

/// Whether `path` still names the file `file` has open (a lock file its holder removed on
/// release is gone, or replaced by the next holder's).
fn still_at(file: &std::fs::File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(open), Ok(named)) => open.dev() == named.dev() && open.ino() == named.ino(),
        _ => false,
    }
}

/// Takes the lock on `path` without waiting: the file, or the pid of who holds it as its
/// contents say.
fn lock(path: &Path) -> Result<Result<std::fs::File, u32>, std::io::Error> {
    // A file opened just before its holder removed it can be locked once the holder lets go,
    // but it is no longer the lease: that is seen after locking, and the path opened again.
    for _ in 0..8 {
        match lock_once(path)? {
            Ok(file) if !still_at(&file, path) => continue,
            taken => return Ok(taken),
        }
    }
    Err(std::io::Error::other(
        "its lock file kept being replaced while it was being taken",
    ))
}

/// One try of `lock`: the file opened (made if need be) and locked, or who holds it.
fn lock_once(path: &Path) -> Result<Result<std::fs::File, u32>, std::io::Error> {
    use std::io::{Read, Seek, Write};
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(parent) = path.parent() {
        super::private::create_dir(parent)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    if !moot_os::lock::try_exclusive(&file)? {
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

impl Sqlite {
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
    pub fn acquire_lease(&self, id: &str, ttl: i64) -> Result<LeaseGuard, StoreError> {
        let held = match self.lease_file(id)? {
            Some(path) => match lock(&path) {
                Ok(Ok(file)) => Some((file, path)),
                Ok(Err(pid)) => {
                    let heard = self
                        .with(|connection| {
                            Ok(connection
                                .prepare_cached("SELECT lease_at FROM debates WHERE id = ?1")?
                                .query_row(params![id], |row| row.get::<_, Option<i64>>(0))
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
        // Made now, so a lock file taken for a debate that is not there goes again.
        let guard = LeaseGuard { held };
        self.with(|connection| {
            let tx = rusqlite::Transaction::new_unchecked(
                connection,
                rusqlite::TransactionBehavior::Immediate,
            )?;
            let exists = tx
                .prepare_cached("SELECT 1 FROM debates WHERE id = ?1")?
                .query_row(params![id], |_| Ok(()))
                .optional()?
                .is_some();
            if !exists {
                return Err(StoreError::NotFound(id.to_string()));
            }
            tx.prepare_cached(
                "UPDATE debates SET lease_pid = ?2, lease_host = ?3, lease_at = ?4,
                    lease_since = ?4, lease_ttl = ?5 WHERE id = ?1",
            )?
            .execute(params![
                id,
                i64::from(std::process::id()),
                host(),
                unix_now(),
                ttl
            ])?;
            tx.commit()?;
            Ok(())
        })?;
        Ok(guard)
    }

    /// Renews this process's lease of debate `id`; false when this process no longer holds
    /// it.
    pub fn renew_lease(&self, id: &str) -> Result<bool, StoreError> {
        self.with(|connection| {
            let changed = connection
                .prepare_cached(
                    "UPDATE debates SET lease_at = ?3 WHERE id = ?1 AND lease_pid = ?2",
                )?
                .execute(params![id, i64::from(std::process::id()), unix_now()])?;
            Ok(changed > 0)
        })
    }

    /// Gives up this process's lease of debate `id`.
    pub fn release_lease(&self, id: &str) -> Result<(), StoreError> {
        self.with(|connection| {
            connection
                .prepare_cached(
                    "UPDATE debates SET lease_pid = NULL, lease_host = NULL, lease_at = NULL,
                    lease_since = NULL, lease_ttl = NULL WHERE id = ?1 AND lease_pid = ?2",
                )?
                .execute(params![id, i64::from(std::process::id())])?;
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
            since: Some(unix_now()),
            ttl: None,
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
            ..mine.clone()
        };
        assert!(!gone.alive());
        // So is a holder whose pid the kernel gave again: the process now under that pid
        // started after the lease was taken (a journal copied from another run, say), or,
        // where the journal does not say when it was taken, after its last heartbeat.
        let started = process_stat(i64::from(std::process::id()))
            .and_then(|stat| started(&stat))
            .expect("/proc says");
        assert!(started <= unix_now() + CLOCK_SLACK_SECONDS);
        let reused = Lease {
            since: Some(started - 3600),
            ..mine.clone()
        };
        assert_eq!(
            reused.status(DebateStatus::Running),
            DebateStatus::Interrupted
        );
        let reused_before_13 = Lease {
            at: Some(started - 3600),
            since: None,
            ..mine
        };
        assert!(!reused_before_13.alive());
    }

    /// A holder on another host lasts as long as the heartbeat it set (its replica's
    /// takeover time), else the default: seven seconds of silence end a five-second lease and
    /// not a default one.
    #[test]
    fn a_lease_elsewhere_lasts_as_long_as_its_holder_said() {
        let silent = Lease {
            pid: Some(1),
            host: Some("another-host".into()),
            at: Some(unix_now() - 7),
            since: Some(unix_now() - 60),
            ttl: Some(5),
        };
        assert!(!silent.alive(), "seven seconds outlast a five-second lease");
        assert!(
            Lease {
                ttl: Some(10),
                ..silent.clone()
            }
            .alive()
        );
        assert!(
            Lease {
                ttl: None,
                ..silent.clone()
            }
            .alive(),
            "a lease that says nothing lasts {LEASE_TTL:?}"
        );
        assert!(
            !Lease {
                ttl: None,
                at: Some(unix_now() - LEASE_TTL.as_secs() as i64 - 1),
                ..silent
            }
            .alive()
        );
    }

    /// `MOOT_HOST` names the host a lease is taken on (two machines with one hostname).
    #[test]
    fn the_host_a_lease_names_can_be_set() {
        assert_eq!(host_named(Some("  replica-7  ".into())), "replica-7");
        let machine = host_named(None);
        assert!(!machine.is_empty());
        assert_eq!(host_named(Some(" ".into())), machine, "blank names nothing");
    }

    /// A journal in a directory of its own, holding the running debate `id`.
    fn journal_with(id: &str) -> (tempfile::TempDir, Sqlite) {
        let dir = tempfile::tempdir().unwrap();
        let store = Sqlite::open(&dir.path().join("moot.db")).unwrap();
        store
            .create_debate(&super::super::running_debate(id))
            .unwrap();
        (dir, store)
    }

    /// The kernel holds the lease: a second driver, even in this same process, is refused
    /// with the holder's pid while the first guard lives, and takes it once it is dropped.
    #[test]
    fn a_held_lease_refuses_a_second_driver_even_in_the_same_process() {
        let (dir, store) = journal_with("DEB-lease01");
        let held = store.acquire_lease("DEB-lease01", 20).unwrap();
        let other = Sqlite::open(&dir.path().join("moot.db")).unwrap();
        for store in [&store, &other] {
            match store.acquire_lease("DEB-lease01", 20) {
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
        let again = other.acquire_lease("DEB-lease01", 20).unwrap();
        drop(again);
        assert!(matches!(
            store.acquire_lease("../escape", 20),
            Err(StoreError::Data(_))
        ));
    }

    /// A released lease leaves no lock file behind (a server runs thousands of debates), nor
    /// does a lease refused because its debate is not there. A lock file opened just before
    /// its holder removed it can be locked afterwards, but that lock is not the lease: the
    /// next driver still takes it, and a third is still refused.
    #[test]
    fn a_released_lease_removes_its_lock_file_and_a_stale_one_is_not_the_lease() {
        let (dir, store) = journal_with("DEB-lease02");
        let file = dir.path().join("leases").join("DEB-lease02.lock");
        let held = store.acquire_lease("DEB-lease02", 20).unwrap();
        let opened_early = std::fs::File::open(&file).unwrap();
        drop(held);
        assert!(!file.exists(), "the released lease left its lock file");
        assert!(
            moot_os::lock::try_exclusive(&opened_early).unwrap(),
            "the removed file can be locked"
        );
        assert!(!still_at(&opened_early, &file));
        let again = store.acquire_lease("DEB-lease02", 20).unwrap();
        assert!(file.exists());
        let other = Sqlite::open(&dir.path().join("moot.db")).unwrap();
        assert!(matches!(
            other.acquire_lease("DEB-lease02", 20),
            Err(StoreError::InUse { .. })
        ));
        drop(again);
        assert!(!file.exists());

        assert!(matches!(
            store.acquire_lease("DEB-nosuch02", 20),
            Err(StoreError::NotFound(_))
        ));
        assert!(!dir.path().join("leases").join("DEB-nosuch02.lock").exists());
    }
}
