//! What a running debate appends to its journal as it goes (events, audit entries, where it
//! stands), written in one transaction however many come together: a commit, not the rows,
//! is what an append costs.

use super::audit::{AuditKind, AuditPlace, deflate, sha256_hex};
use super::chain::{self, Writer};
use super::journal::{TurnRow, json, redacted};
use super::{Store, StoreError};
use crate::debate::{Event, Stage, Turn, now_rfc3339};
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
    /// A turn, committed with what comes with it (its reply's audit entry, its completed
    /// event) rather than in a write of its own.
    Turn(&'a Turn),
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
    Turn(Box<TurnRow<'a>>),
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
            Entry::Turn(turn) => Ready::Turn(Box::new(TurnRow::new(turn, None)?)),
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
            Ready::Turn(row) => row.insert(tx, id, true)?,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn place() -> AuditPlace {
        AuditPlace {
            round: 0,
            phase: "note".into(),
            seat: "debate".into(),
            attempt: 0,
            provider: String::new(),
            model: String::new(),
        }
    }

    /// Entries appended together land together, each chained (the chain still holds), with
    /// the audit body redacted, hashed and readable again; a batch that fails part-way leaves
    /// nothing of itself behind.
    #[test]
    fn entries_appended_together_are_all_written_and_chained_or_none_is() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("moot.db")).unwrap();
        let debate = super::super::running_debate("DEB-append01");
        store.create_debate(&debate).unwrap();
        let event = Event::Notice {
            message: "the key sk-abcdefghijklmnopqrstuvwx stays out".into(),
        };
        let body = serde_json::json!({"said": "sk-abcdefghijklmnopqrstuvwx"});
        let stage = Stage::Synthesising;
        let entries = [
            Entry::Event(&event),
            Entry::Audit {
                kind: AuditKind::Event,
                place: &place(),
                body: &body,
                keep_body: true,
            },
            Entry::Stage(&stage),
        ];
        store.append(&debate.id, &entries).unwrap();
        assert_eq!(store.events_after(&debate.id, 0).unwrap().len(), 1);
        let audit = store.audit(&debate.id).unwrap();
        assert_eq!(audit.len(), 1);
        assert!(audit[0].damage.is_none());
        assert!(
            !audit[0]
                .body
                .as_ref()
                .unwrap()
                .to_string()
                .contains("sk-abc")
        );
        assert_eq!(
            store.debate(&debate.id).unwrap().stage,
            Some(Stage::Synthesising)
        );
        let chain = store.check_chain(&debate.id).unwrap();
        assert!(chain.holds(), "{:?}", chain.problem);
        let before = chain.entries;

        // An unknown debate breaks the batch at its first insert: nothing of it is kept.
        assert!(store.append("DEB-nosuch001", &entries).is_err());
        assert_eq!(store.check_chain(&debate.id).unwrap().entries, before);
        assert!(store.events_after("DEB-nosuch001", 0).unwrap().is_empty());
    }

    /// Appends from many threads at once each land once, in each debate's order, and every
    /// debate's chain holds.
    #[test]
    fn appends_from_many_debates_at_once_each_land_once_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("moot.db")).unwrap();
        let ids: Vec<String> = (0..8).map(|i| format!("DEB-together{i}")).collect();
        for id in &ids {
            store
                .create_debate(&super::super::running_debate(id))
                .unwrap();
        }
        std::thread::scope(|scope| {
            for id in &ids {
                let store = store.clone();
                scope.spawn(move || {
                    for n in 0..25 {
                        let event = Event::Notice {
                            message: format!("{id} {n}"),
                        };
                        let body = serde_json::json!({"n": n});
                        let audit = Entry::Audit {
                            kind: AuditKind::Event,
                            place: &place(),
                            body: &body,
                            keep_body: true,
                        };
                        store.append(id, &[Entry::Event(&event), audit]).unwrap();
                    }
                });
            }
        });
        for id in &ids {
            let said: Vec<String> = store
                .events_after(id, 0)
                .unwrap()
                .into_iter()
                .map(|(_, event)| match event {
                    Event::Notice { message } => message,
                    other => panic!("{other:?}"),
                })
                .collect();
            let expected: Vec<String> = (0..25).map(|n| format!("{id} {n}")).collect();
            assert_eq!(said, expected);
            assert_eq!(store.audit(id).unwrap().len(), 25);
            let chain = store.check_chain(id).unwrap();
            assert!(chain.holds(), "{id}: {:?}", chain.problem);
            // The debate's own row, then 25 events and 25 audit entries.
            assert_eq!(chain.entries, 51);
        }
    }
}
