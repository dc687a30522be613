//! What a running debate appends to its journal as it goes (events, audit entries, where it
//! stands), written in one transaction however many come together: a commit, not the rows,
//! is what an append costs.

use super::audit::{AuditKind, AuditPlace, deflate, sha256_hex};
use super::chain::{self, Writer};
use super::journal::{json, redacted};
use super::{Store, StoreError};
use crate::debate::{Event, Stage, now_rfc3339};
use rusqlite::params;
use serde_json::Value;

/// One thing a running debate appends to its journal.
pub enum Entry<'a> {
    Event(&'a Event),
    /// An audit entry; `keep_body` false stores its hash and size only.
    Audit {
        kind: AuditKind,
        place: &'a AuditPlace,
        body: &'a Value,
        keep_body: bool,
    },
    /// Where the debate stands, for `moot list` (not chained: the next stage replaces it).
    Stage(&'a Stage),
}

/// An entry made ready outside the transaction (serialized, redacted, hashed, compressed), so
/// the write lock is held for the inserts only.
enum Ready<'a> {
    Event {
        kind: &'static str,
        text: String,
    },
    Audit {
        kind: AuditKind,
        place: &'a AuditPlace,
        hash: String,
        size: i64,
        stored: Option<Vec<u8>>,
    },
    Stage(String),
}

impl Entry<'_> {
    fn ready(&self) -> Result<Ready<'_>, StoreError> {
        Ok(match self {
            Entry::Event(event) => Ready::Event {
                kind: event.kind(),
                text: redacted(&json(event)?),
            },
            Entry::Audit {
                kind,
                place,
                body,
                keep_body,
            } => {
                // Redacted of every secret moot knows before it is hashed or stored.
                let text = redacted(&body.to_string());
                let stored = match keep_body {
                    true => Some(deflate(&text).map_err(|e| {
                        StoreError::Data(format!("cannot compress an audit entry: {e}"))
                    })?),
                    false => None,
                };
                Ready::Audit {
                    kind: *kind,
                    place,
                    hash: sha256_hex(&text),
                    size: text.len() as i64,
                    stored,
                }
            }
            Entry::Stage(stage) => Ready::Stage(json(stage)?),
        })
    }
}

impl Ready<'_> {
    fn insert(&self, tx: &Writer<'_>, id: &str) -> Result<(), StoreError> {
        match self {
            Ready::Event { kind, text } => {
                tx.prepare_cached(
                    "INSERT INTO events (debate_id, kind, event) VALUES (?1, ?2, ?3)",
                )?
                .execute(params![id, kind, text])?;
                chain::append(tx, id, &chain::EVENT, &[tx.last_insert_rowid().into()])?;
            }
            Ready::Audit {
                kind,
                place,
                hash,
                size,
                stored,
            } => {
                tx.prepare_cached(
                    "INSERT INTO audit (debate_id, at, kind, round, phase, seat, attempt, provider, model, sha256, size, body)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                )?
                .execute(params![
                    id,
                    now_rfc3339(),
                    kind.to_string(),
                    place.round,
                    place.phase,
                    place.seat,
                    place.attempt,
                    place.provider,
                    place.model,
                    hash,
                    size,
                    stored,
                ])?;
                chain::append(tx, id, &chain::AUDIT, &[tx.last_insert_rowid().into()])?;
            }
            Ready::Stage(stage) => {
                tx.prepare_cached("UPDATE debates SET stage = ?2 WHERE id = ?1")?
                    .execute(params![id, stage])?;
            }
        }
        Ok(())
    }
}

impl Store {
    /// Appends `entries` to debate `id`'s journal in one transaction: all of them, or (on an
    /// error) none.
    pub fn append(&self, id: &str, entries: &[Entry<'_>]) -> Result<(), StoreError> {
        let ready = entries
            .iter()
            .map(Entry::ready)
            .collect::<Result<Vec<_>, _>>()?;
        self.write(|tx| {
            for entry in &ready {
                entry.insert(tx, id)?;
            }
            Ok(())
        })
    }
}
