//! What a running debate appends to its journal as it goes (events, audit entries, where it
//! stands), written in one transaction however many come together: a commit, not the rows,
//! is what an append costs. Appends that wait for the write lock at the same moment (a
//! hundred debates served at once reach each phase together) are written by whichever of
//! them takes the lock first, all in one transaction with a savepoint each: one commit for
//! the burst, and an append that fails still leaves nothing of itself behind.

use super::audit::{AuditKind, AuditPlace, deflate, sha256_hex};
use super::chain::{self, Writer};
use super::journal::{TurnRow, json, redacted};
use super::{Sqlite, StoreError};
use crate::debate::{DebateStatus, Event, Stage, Turn, now_rfc3339};
use rusqlite::params;
use rusqlite::types::ValueRef;
use serde_json::Value;
use std::sync::{Arc, Mutex};

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
    /// How the debate ended (or stopped), in its row: written with the event that says so,
    /// so that neither is ever journaled without the other.
    Status {
        status: DebateStatus,
        error: Option<&'a str>,
    },
}

/// An entry made ready outside the transaction (serialized, redacted, hashed, compressed), so
/// the write lock is held for the inserts only. It owns what it holds: another debate's
/// thread may be the one that writes it. The PostgreSQL journal writes the same values.
pub(super) enum Ready {
    Event {
        kind: &'static str,
        text: String,
        content: chain::RowContent,
    },
    Audit {
        /// When it was made ready: the moment of the call, not of the commit.
        at: String,
        kind: String,
        place: AuditPlace,
        hash: String,
        size: i64,
        stored: Option<Vec<u8>>,
        content: chain::RowContent,
    },
    Stage(String),
    Turn(Box<TurnRow>),
    Status {
        status: DebateStatus,
        error: Option<String>,
        at: String,
    },
}

impl Entry<'_> {
    pub(super) fn ready(&self) -> Result<Ready, StoreError> {
        Ok(match self {
            Entry::Event(event) => {
                let (kind, text) = (event.kind(), redacted(&json(event)?));
                let content = chain::RowContent::of(&event_values(kind, &text));
                Ready::Event {
                    kind,
                    text,
                    content,
                }
            }
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
                let (at, kind, hash) = (now_rfc3339(), kind.to_string(), sha256_hex(&text));
                let size = text.len() as i64;
                let content = chain::RowContent::of(&audit_values(&at, &kind, place, &hash, size));
                Ready::Audit {
                    at,
                    kind,
                    place: (*place).clone(),
                    hash,
                    size,
                    stored,
                    content,
                }
            }
            Entry::Stage(stage) => Ready::Stage(json(stage)?),
            Entry::Turn(turn) => Ready::Turn(Box::new(TurnRow::new(turn, None)?)),
            Entry::Status { status, error } => Ready::Status {
                status: *status,
                error: error.map(str::to_string),
                at: now_rfc3339(),
            },
        })
    }
}

/// One debate's append, waiting to be written, and once written what came of it.
struct Queued {
    id: String,
    entries: Vec<Ready>,
    outcome: Mutex<Option<Result<(), StoreError>>>,
}

impl Queued {
    fn settle(&self, outcome: Result<(), StoreError>) {
        *self.outcome.lock().unwrap_or_else(|e| e.into_inner()) = Some(outcome);
    }

    fn outcome(&self) -> Option<Result<(), StoreError>> {
        self.outcome
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }
}

/// The appends waiting for the write lock. An append joins before it asks for the lock, and
/// whoever holds the lock takes them all, so when an append's caller gets the lock its
/// append was written by an earlier holder (its outcome settled before that holder let go),
/// or is still here, or was taken into a transaction that failed and kept nothing; then its
/// caller writes it.
#[derive(Default)]
pub(super) struct Waiting {
    queue: Mutex<Vec<Arc<Queued>>>,
    /// How many transactions appends have taken, for the tests that check they are shared.
    #[cfg(any(test, feature = "fixtures"))]
    transactions: std::sync::atomic::AtomicUsize,
}

impl Waiting {
    fn join(&self, queued: Arc<Queued>) {
        self.queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(queued);
    }

    fn take_all(&self) -> Vec<Arc<Queued>> {
        #[cfg(any(test, feature = "fixtures"))]
        self.transactions
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        std::mem::take(&mut *self.queue.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

#[cfg(any(test, feature = "fixtures"))]
impl Sqlite {
    /// How many transactions this journal's appends have taken so far.
    pub fn append_transactions(&self) -> usize {
        self.waiting
            .transactions
            .load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// An event's chained values, in `chain::EVENT`'s column order.
pub(super) fn event_values<'a>(kind: &'a str, event: &'a str) -> [ValueRef<'a>; 2] {
    [
        ValueRef::Text(kind.as_bytes()),
        ValueRef::Text(event.as_bytes()),
    ]
}

/// An audit entry's chained values, in `chain::AUDIT`'s column order (the body is checked
/// against its hash on its own).
pub(super) fn audit_values<'a>(
    at: &'a str,
    kind: &'a str,
    place: &'a AuditPlace,
    hash: &'a str,
    size: i64,
) -> [ValueRef<'a>; 10] {
    let text = |s: &'a str| ValueRef::Text(s.as_bytes());
    let whole = |i: u32| ValueRef::Integer(i64::from(i));
    [
        text(at),
        text(kind),
        whole(place.round),
        text(&place.phase),
        text(&place.seat),
        whole(place.attempt),
        text(&place.provider),
        text(&place.model),
        text(hash),
        ValueRef::Integer(size),
    ]
}

impl Ready {
    fn insert(&self, tx: &Writer<'_>, id: &str) -> Result<(), StoreError> {
        use rusqlite::types::ToSqlOutput;
        match self {
            Ready::Event {
                kind,
                text: event,
                content,
            } => {
                // The link goes in the same insert.
                let values = event_values(kind, event);
                let (seq, link) = chain::row_link(tx, id, &chain::EVENT, &values, content)?;
                tx.prepare_cached(
                    "INSERT INTO events (seq, debate_id, kind, event, chain_n, chain_hash,
                        chain_prev_place)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )?
                .execute(rusqlite::params_from_iter(
                    [ValueRef::Integer(seq), ValueRef::Text(id.as_bytes())]
                        .into_iter()
                        .chain(values)
                        .chain(link.iter().map(ValueRef::from))
                        .map(ToSqlOutput::Borrowed),
                ))?;
            }
            Ready::Audit {
                at,
                kind,
                place,
                hash,
                size,
                stored,
                content,
            } => {
                let values = audit_values(at, kind, place, hash, *size);
                let body = stored.as_deref().map_or(ValueRef::Null, ValueRef::Blob);
                let (seq, link) = chain::row_link(tx, id, &chain::AUDIT, &values, content)?;
                tx.prepare_cached(
                    "INSERT INTO audit (seq, debate_id, at, kind, round, phase, seat, attempt,
                        provider, model, sha256, size, body, chain_n, chain_hash, chain_prev_place)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15,
                        ?16)",
                )?
                .execute(rusqlite::params_from_iter(
                    [ValueRef::Integer(seq), ValueRef::Text(id.as_bytes())]
                        .into_iter()
                        .chain(values)
                        .chain(std::iter::once(body))
                        .chain(link.iter().map(ValueRef::from))
                        .map(ToSqlOutput::Borrowed),
                ))?;
            }
            Ready::Stage(stage) => {
                tx.prepare_cached("UPDATE debates SET stage = ?2 WHERE id = ?1")?
                    .execute(params![id, stage])?;
            }
            Ready::Turn(row) => row.insert(tx, id, true)?,
            Ready::Status { status, error, at } => {
                super::journal::update_status(tx, id, *status, error.as_deref(), at)?
            }
        }
        Ok(())
    }
}

impl Sqlite {
    /// Appends `entries` to debate `id`'s journal in one transaction: all of them, or (on an
    /// error) none. It returns once they are committed, whoever wrote them.
    pub fn append(&self, id: &str, entries: &[Entry<'_>]) -> Result<(), StoreError> {
        let mine = Arc::new(Queued {
            id: id.to_string(),
            entries: entries
                .iter()
                .map(Entry::ready)
                .collect::<Result<Vec<_>, _>>()?,
            outcome: Mutex::new(None),
        });
        self.waiting.join(Arc::clone(&mine));
        let mut connection = self.lock();
        if let Some(outcome) = mine.outcome() {
            return outcome;
        }
        let mut group = self.waiting.take_all();
        // Taken by a holder whose transaction failed (nothing of it kept), it is written again.
        if !group.iter().any(|queued| Arc::ptr_eq(queued, &mine)) {
            group.push(Arc::clone(&mine));
        }
        let outcomes = match self.write_together(&mut connection, &group) {
            Ok(outcomes) => outcomes,
            // A lock held elsewhere says nothing of any append, and is not waited for twice.
            Err(error @ StoreError::Locked { .. }) => return Err(error),
            // Another's append may have ended the transaction (a full disk): this one is tried
            // alone, and the others by their own callers.
            Err(_) if group.len() > 1 => {
                group = vec![Arc::clone(&mine)];
                self.write_together(&mut connection, &group)?
            }
            Err(error) => return Err(error),
        };
        let mut own = Ok(());
        for (queued, outcome) in group.iter().zip(outcomes) {
            match Arc::ptr_eq(queued, &mine) {
                true => own = outcome,
                false => queued.settle(outcome),
            }
        }
        own
    }

    /// Writes `group` in one transaction, each append under a savepoint of its own: what
    /// came of each (an append that failed was rolled back alone), or, when the transaction
    /// itself fails, that error, and the others stay unsettled for their callers to write.
    fn write_together(
        &self,
        connection: &mut rusqlite::Connection,
        group: &[Arc<Queued>],
    ) -> Result<Vec<Result<(), StoreError>>, StoreError> {
        self.write_on(connection, |writer| {
            let mut each = Vec::with_capacity(group.len());
            for queued in group {
                writer.prepare_cached("SAVEPOINT one_append")?.execute([])?;
                match queued
                    .entries
                    .iter()
                    .try_for_each(|e| e.insert(writer, &queued.id))
                {
                    Ok(()) => {
                        writer.prepare_cached("RELEASE one_append")?.execute([])?;
                        each.push(Ok(()));
                    }
                    Err(error) => {
                        // SQLite ends the whole transaction on some errors (a full disk): the
                        // savepoint went with it, and the group fails with what ended it.
                        if writer
                            .execute_batch("ROLLBACK TO one_append; RELEASE one_append")
                            .is_err()
                        {
                            return Err(error);
                        }
                        writer.forget(&queued.id);
                        each.push(Err(self.classified(error)));
                    }
                }
            }
            Ok(each)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A journal holding a running debate for each of `ids`.
    fn journal_with(ids: &[String]) -> (tempfile::TempDir, Sqlite) {
        let dir = tempfile::tempdir().unwrap();
        let store = Sqlite::open(&dir.path().join("moot.db")).unwrap();
        for id in ids {
            store
                .create_debate(&super::super::running_debate(id))
                .unwrap();
        }
        (dir, store)
    }

    /// Appends a notice saying `message` to debate `id`, with an audit entry of `body`.
    fn append_notice(
        store: &Sqlite,
        id: &str,
        message: String,
        body: &Value,
    ) -> Result<(), StoreError> {
        let event = Event::Notice { message };
        let audit = Entry::Audit {
            kind: AuditKind::Event,
            place: &place(),
            body,
            keep_body: true,
        };
        store.append(id, &[Entry::Event(&event), audit])
    }

    /// Waits until `count` appends wait in `store`'s queue (its lock is held elsewhere).
    fn wait_until_queued(store: &Sqlite, count: usize) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while store.waiting.queue.lock().unwrap().len() < count {
            assert!(
                std::time::Instant::now() < deadline,
                "the appends never queued"
            );
            std::thread::yield_now();
        }
    }

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

    /// Events and audit entries carry their own chain links, as turns do: appending them adds
    /// no row to `chain`, and the chain holds over them. A failed turn discarded on purpose
    /// hands its link and its announcement's to `chain` first, so the chain still holds;
    /// an event deleted by hand leaves a gap that names it.
    #[test]
    fn events_and_audit_entries_carry_their_own_links() {
        use crate::debate::{Phase, TurnStatus};
        let (_dir, store) = journal_with(&["DEB-inrow001".into()]);
        let debate = store.debate("DEB-inrow001").unwrap();
        let chain_rows = |facets: &str| -> i64 {
            store
                .with(|c| {
                    Ok(c.query_row(
                        &format!(
                            "SELECT count(*) FROM chain WHERE debate_id = 'DEB-inrow001'
                             AND facet IN ({facets})"
                        ),
                        [],
                        |r| r.get(0),
                    )?)
                })
                .unwrap()
        };
        let body = serde_json::json!({"asked": "which cache?"});
        let notice = Event::Notice {
            message: "first".into(),
        };
        let mut failed = Turn::fixture("A", 1, Phase::Argument);
        failed.status = TurnStatus::Failed;
        let announced = failed.completed_event(false);
        store
            .append(
                &debate.id,
                &[
                    Entry::Event(&notice),
                    Entry::Audit {
                        kind: AuditKind::Request,
                        place: &place(),
                        body: &body,
                        keep_body: true,
                    },
                    Entry::Turn(&failed),
                    Entry::Event(&announced),
                ],
            )
            .unwrap();
        assert_eq!(chain_rows("'event', 'audit entry', 'turn'"), 0);
        let chain = store.check_chain(&debate.id).unwrap();
        assert!(chain.holds(), "{:?}", chain.problem);
        // The debate's own entry, then the four rows.
        assert_eq!(chain.entries, 5);

        assert_eq!(store.discard_trailing_failures(&debate.id).unwrap(), 1);
        assert_eq!(
            chain_rows("'event', 'turn'"),
            4,
            "two links handed on, two removals"
        );
        let chain = store.check_chain(&debate.id).unwrap();
        assert!(chain.holds(), "{:?}", chain.problem);

        let later = Event::Notice {
            message: "after the discard".into(),
        };
        store.record_event(&debate.id, &later).unwrap();
        assert!(store.check_chain(&debate.id).unwrap().holds());
        store
            .with(|c| {
                Ok(c.execute(
                    "DELETE FROM events WHERE debate_id = 'DEB-inrow001' AND event LIKE '%\"first\"%'",
                    [],
                )?)
            })
            .unwrap();
        let problem = store.check_chain(&debate.id).unwrap().problem.unwrap();
        assert!(
            problem.contains("entry 2 is missing") && problem.contains("which was events: #"),
            "{problem}"
        );
    }

    /// Appends that wait for the lock together are written in one transaction by whichever
    /// takes it first; one that fails (an unknown debate) is rolled back alone and gets its
    /// own error, and the others land, chained.
    #[test]
    fn appends_waiting_together_share_one_transaction_and_fail_alone() {
        let ids: Vec<String> = (0..6).map(|i| format!("DEB-grouped{i}")).collect();
        let (_dir, store) = journal_with(&ids);
        let mut appending: Vec<&str> = ids.iter().map(String::as_str).collect();
        appending.insert(3, "DEB-nosuch002");
        let held = store.lock();
        let before = store.append_transactions();
        std::thread::scope(|scope| {
            let outcomes: Vec<_> = appending
                .iter()
                .map(|&id| {
                    let store = store.clone();
                    scope.spawn(move || {
                        let body = serde_json::json!({"id": id});
                        append_notice(&store, id, format!("{id} grouped"), &body)
                    })
                })
                .collect();
            // Every append has joined the queue before the lock is let go.
            wait_until_queued(&store, appending.len());
            drop(held);
            for (id, outcome) in appending.iter().zip(outcomes) {
                let outcome = outcome.join().unwrap();
                match *id {
                    "DEB-nosuch002" => assert!(outcome.is_err(), "an unknown debate appended"),
                    _ => assert!(outcome.is_ok(), "{id}: {outcome:?}"),
                }
            }
        });
        let taken = store.append_transactions() - before;
        assert_eq!(
            taken, 1,
            "seven appends waiting together took {taken} transactions"
        );
        assert!(store.events_after("DEB-nosuch002", 0).unwrap().is_empty());
        for id in &ids {
            let events = store.events_after(id, 0).unwrap();
            assert_eq!(events.len(), 1, "{id}");
            assert_eq!(store.audit(id).unwrap().len(), 1, "{id}");
            let chain = store.check_chain(id).unwrap();
            assert!(chain.holds(), "{id}: {:?}", chain.problem);
            assert_eq!(chain.entries, 3, "{id}");
        }
        // The heads the group moved are known, and right: the next append chains on them.
        let event = Event::Notice {
            message: "after".into(),
        };
        store.append(&ids[0], &[Entry::Event(&event)]).unwrap();
        assert!(store.check_chain(&ids[0]).unwrap().holds());
    }

    /// A journal that cannot grow fails an append that needs room with the error that says
    /// so (the disk is full) and keeps none of it. SQLite ends the whole transaction then, so
    /// the small appends that waited in the same group are written again by their own
    /// callers, and land.
    #[test]
    fn a_journal_that_cannot_grow_fails_each_append_with_that_reason() {
        let ids: Vec<String> = (0..3).map(|i| format!("DEB-nospace0{i}")).collect();
        let (_dir, store) = journal_with(&ids);
        {
            let connection = store.lock();
            let pages: i64 = connection
                .query_row("PRAGMA page_count", [], |r| r.get(0))
                .unwrap();
            connection
                .pragma_update(None, "max_page_count", pages)
                .unwrap();
        }
        // Too large and too varied to fit in the pages the journal already has.
        let body =
            serde_json::json!({"said": (0..20_000).map(|n| n.to_string()).collect::<Vec<_>>()});
        for id in &ids {
            let error = append_notice(&store, id, format!("{id} grows"), &body).unwrap_err();
            assert!(matches!(error, StoreError::Full { .. }), "{id}: {error:?}");
            assert!(store.events_after(id, 0).unwrap().is_empty(), "{id}");
            assert!(store.check_chain(id).unwrap().holds(), "{id}");
        }

        let held = store.lock();
        let small = serde_json::json!({"n": 1});
        std::thread::scope(|scope| {
            // The large append first in the group, so it ends the transaction the others share.
            let large = scope.spawn(|| append_notice(&store, &ids[0], "large".into(), &body));
            wait_until_queued(&store, 1);
            let smalls: Vec<_> = ids[1..]
                .iter()
                .map(|id| {
                    let (store, small) = (&store, &small);
                    scope.spawn(move || append_notice(store, id, format!("{id} small"), small))
                })
                .collect();
            wait_until_queued(&store, ids.len());
            drop(held);
            let error = large.join().unwrap().unwrap_err();
            assert!(matches!(error, StoreError::Full { .. }), "{error:?}");
            for (id, small) in ids[1..].iter().zip(smalls) {
                assert!(small.join().unwrap().is_ok(), "{id}");
                assert_eq!(store.events_after(id, 0).unwrap().len(), 1, "{id}");
                assert!(store.check_chain(id).unwrap().holds(), "{id}");
            }
        });
        assert!(store.events_after(&ids[0], 0).unwrap().is_empty());
    }
}
