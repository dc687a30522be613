//! Which process runs a debate, when the journal is on a server several hosts share: the
//! lease is the debate's row (holder's pid and host, when it was taken, a heartbeat), taken
//! under the row's lock, so of replicas that reach for one debate at once exactly one gets
//! it. A holder on this host is alive while its process is; one elsewhere while it renews,
//! its heartbeat stamped and aged by the server's clock (hosts' own clocks may disagree).

use super::{PgJournal, execute, optional_integer, optional_text, query};
use crate::store::StoreError;
use crate::store::lease::{Lease, LeaseGuard, host, unix_now};
use rusqlite::types::Value;

impl PgJournal {
    /// Takes the lease of debate `id`, unless a live holder (another replica, or another
    /// driver in this process) has it.
    pub fn acquire_lease(&self, id: &str, ttl: i64) -> Result<LeaseGuard, StoreError> {
        let me = i64::from(std::process::id());
        // Taken again (after another holder died): the row names that one until this write.
        self.held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
        let taken = self.write(id, move |tx, id| {
            let rows = query(
                tx,
                concat!(
                    "SELECT lease_pid, lease_host, ",
                    heartbeat!("lease_at"),
                    ", lease_since, lease_ttl FROM debates WHERE id = ?1"
                ),
                &[Value::Text(id.to_string())],
            )?;
            let Some(row) = rows.first() else {
                return Err(StoreError::NotFound(id.to_string()));
            };
            let held = Lease {
                pid: optional_integer(&row[0])?,
                host: optional_text(&row[1])?,
                at: on_this_clock(optional_integer(&row[2])?),
                since: optional_integer(&row[3])?,
                ttl: optional_integer(&row[4])?,
            };
            if held.alive() {
                return Err(StoreError::InUse {
                    id: id.to_string(),
                    pid: held.pid.unwrap_or(0) as u32,
                    seconds: held.at.map_or(0, |at| (unix_now() - at).max(0) as u64),
                });
            }
            execute(
                tx,
                // Its heartbeat on the server's clock, which every host reads it by; when it
                // was taken on this host's, which a process on this host is compared with.
                concat!(
                    "UPDATE debates SET lease_pid = ?2, lease_host = ?3, lease_at = ",
                    server_clock!(),
                    ", lease_since = ?4, lease_ttl = ?5 WHERE id = ?1"
                ),
                &[
                    Value::Text(id.to_string()),
                    Value::Integer(me),
                    Value::Text(host()),
                    Value::Integer(unix_now()),
                    Value::Integer(ttl),
                ],
            )?;
            Ok(LeaseGuard::in_row())
        })?;
        self.held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.to_string());
        Ok(taken)
    }

    /// Renews this process's lease of debate `id` (its heartbeat); false when this process
    /// no longer holds it (another replica took it for dead).
    pub fn renew_lease(&self, id: &str) -> Result<bool, StoreError> {
        self.counted(
            concat!(
                "UPDATE debates SET lease_at = ",
                server_clock!(),
                " WHERE id = ?1 AND lease_pid = ?2 AND lease_host = ?3"
            ),
            vec![
                Value::Text(id.to_string()),
                Value::Integer(i64::from(std::process::id())),
                Value::Text(host()),
            ],
        )
        .map(|changed| changed > 0)
    }

    /// Gives up this process's lease of debate `id`.
    pub fn release_lease(&self, id: &str) -> Result<(), StoreError> {
        self.held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
        self.plain(
            "UPDATE debates SET lease_pid = NULL, lease_host = NULL, lease_at = NULL,
                lease_since = NULL, lease_ttl = NULL WHERE id = ?1 AND lease_pid = ?2 AND lease_host = ?3",
            vec![
                Value::Text(id.to_string()),
                Value::Integer(i64::from(std::process::id())),
                Value::Text(host()),
            ],
        )
    }
}

/// A heartbeat read as `heartbeat!` reads it (seconds before the server's clock) as a time
/// on this host's clock, which `Lease` judges it by.
pub(super) fn on_this_clock(before_server_now: Option<i64>) -> Option<i64> {
    before_server_now.map(|offset| unix_now() + offset)
}

/// Refuses a write to debate `id` when the holder its row names (`lease_pid, lease_host`)
/// is not this process: another took the debate over. A released lease names nobody.
pub(super) fn still_mine(id: &str, holder: &[Value]) -> Result<(), StoreError> {
    let [Value::Integer(pid), Value::Text(named)] = holder else {
        return Ok(());
    };
    if *pid == i64::from(std::process::id()) && *named == host() {
        return Ok(());
    }
    Err(StoreError::LeaseLost {
        id: id.to_string(),
        pid: *pid,
        host: named.clone(),
    })
}
