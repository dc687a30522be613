//! The journal's approval gates: a request when a debate reaches a gate, and the decision that
//! settles it, written once (the first writer wins, whichever process it is).

use super::chain;
use super::{Sqlite, StoreError};
use crate::debate::{GateDecision, Named as _, now_rfc3339};
use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

/// One gate of one debate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateRecord {
    /// `after_round:2`, `before_synthesis:3`.
    pub gate: String,
    pub point: String,
    pub round: u32,
    pub summary: String,
    pub artifacts: serde_json::Value,
    pub requested_at: String,
    /// How it was settled; none while it waits.
    pub decision: Option<GateDecision>,
    pub decided_by: Option<String>,
    pub reason: Option<String>,
    pub decided_at: Option<String>,
}

impl Sqlite {
    /// Files a gate's request (again on resume: the first request and any decision stand).
    pub fn request_gate(
        &self,
        id: &str,
        gate: &str,
        point: &str,
        round: u32,
        summary: &str,
        artifacts: &serde_json::Value,
    ) -> Result<(), StoreError> {
        self.write(|tx| {
            let filed = tx
                .prepare_cached(
                    "INSERT OR IGNORE INTO gates (debate_id, gate, point, round, summary,
                        artifacts, requested_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )?
                .execute(params![
                    id,
                    gate,
                    point,
                    round,
                    super::journal::redacted(summary),
                    super::journal::redacted(&artifacts.to_string()),
                    now_rfc3339()
                ])?;
            if filed == 1 {
                chain::append(tx, id, &chain::GATE_REQUEST, &[gate.into()])?;
            }
            Ok(())
        })
    }

    /// Settles a gate that waits; false when it was settled already (by another process).
    pub fn decide_gate(
        &self,
        id: &str,
        gate: &str,
        decision: GateDecision,
        by: &str,
        reason: Option<&str>,
    ) -> Result<bool, StoreError> {
        self.write(|tx| {
            let changed = tx
                .prepare_cached(
                    "UPDATE gates SET decision = ?3, decided_by = ?4, reason = ?5, decided_at = ?6
                 WHERE debate_id = ?1 AND gate = ?2 AND decision IS NULL",
                )?
                .execute(params![
                    id,
                    gate,
                    decision.as_str(),
                    by,
                    reason.map(super::journal::redacted),
                    now_rfc3339()
                ])?;
            if changed == 1 {
                chain::append(tx, id, &chain::GATE_DECISION, &[gate.into()])?;
            }
            Ok(changed == 1)
        })
    }

    /// Every gate of a debate, in the order they were reached.
    pub fn gates(&self, id: &str) -> Result<Vec<GateRecord>, StoreError> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(
                "SELECT gate, point, round, summary, artifacts, requested_at, decision, decided_by, reason, decided_at
                 FROM gates WHERE debate_id = ?1 ORDER BY requested_at, rowid",
            )?;
            let rows = statement.query_map(params![id], row)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(Into::into)
        })
    }

    /// One gate of a debate.
    pub fn gate(&self, id: &str, gate: &str) -> Result<Option<GateRecord>, StoreError> {
        self.read(|connection| {
            connection
                .prepare_cached(
                    "SELECT gate, point, round, summary, artifacts, requested_at, decision,
                        decided_by, reason, decided_at
                     FROM gates WHERE debate_id = ?1 AND gate = ?2",
                )?
                .query_row(params![id, gate], row)
                .optional()
                .map_err(Into::into)
        })
    }
}

fn row(row: &rusqlite::Row<'_>) -> rusqlite::Result<GateRecord> {
    let artifacts: String = row.get(4)?;
    Ok(GateRecord {
        gate: row.get(0)?,
        point: row.get(1)?,
        round: row.get(2)?,
        summary: row.get(3)?,
        artifacts: serde_json::from_str(&artifacts).unwrap_or(serde_json::Value::Null),
        requested_at: row.get(5)?,
        // A word this moot does not know (a journal edited by hand, which the chain names)
        // settles nothing: it reads as a gate that timed out, asked again on resume.
        decision: row
            .get::<_, Option<String>>(6)?
            .map(|word| GateDecision::parse(&word).unwrap_or(GateDecision::TimedOut)),
        decided_by: row.get(7)?,
        reason: row.get(8)?,
        decided_at: row.get(9)?,
    })
}
