//! Which process runs a debate: a lease (pid, host, heartbeat time) in the debate's row. A
//! running debate renews it; a resume of a debate whose lease is alive is refused; a `running`
//! debate whose lease is dead (the process died) reads as interrupted.

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
    /// Whether a live process other than this one holds it.
    fn held_by_another(&self) -> bool {
        self.alive() && !self.is_mine()
    }

    fn is_mine(&self) -> bool {
        self.pid == Some(i64::from(std::process::id())) && self.host.as_deref() == Some(&host())
    }

    fn alive(&self) -> bool {
        let (Some(pid), Some(at)) = (self.pid, self.at) else {
            return false;
        };
        if unix_now() - at > LEASE_STALE_SECONDS {
            return false;
        }
        // On this machine a dead process is known at once, not only when the lease goes stale.
        self.host.as_deref() != Some(&host()) || process_alive(pid)
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

impl Store {
    /// Takes the lease of debate `id` for this process, unless another live one holds it.
    pub fn acquire_lease(&self, id: &str) -> Result<(), StoreError> {
        self.with(|connection| {
            let tx = rusqlite::Transaction::new_unchecked(
                connection,
                rusqlite::TransactionBehavior::Immediate,
            )?;
            let lease = tx
                .query_row(
                    "SELECT lease_pid, lease_host, lease_at FROM debates WHERE id = ?1",
                    params![id],
                    |row| {
                        Ok(Lease {
                            pid: row.get(0)?,
                            host: row.get(1)?,
                            at: row.get(2)?,
                        })
                    },
                )
                .optional()?
                .ok_or_else(|| StoreError::NotFound(id.to_string()))?;
            if lease.held_by_another() {
                return Err(StoreError::InUse {
                    id: id.to_string(),
                    pid: lease.pid.unwrap_or_default() as u32,
                    seconds: (unix_now() - lease.at.unwrap_or_default()).max(0) as u64,
                });
            }
            tx.execute(
                "UPDATE debates SET lease_pid = ?2, lease_host = ?3, lease_at = ?4 WHERE id = ?1",
                params![id, i64::from(std::process::id()), host(), unix_now()],
            )?;
            tx.commit()?;
            Ok(())
        })
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
        assert!(mine.alive() && mine.is_mine() && !mine.held_by_another());
        assert_eq!(
            mine.status(DebateStatus::Running),
            DebateStatus::Running,
            "a live lease keeps a debate running"
        );
        let stale = Lease {
            at: Some(unix_now() - 60),
            ..mine.clone()
        };
        assert_eq!(
            stale.status(DebateStatus::Running),
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
}
