//! What a running debate appends as it goes (turns, events, audit entries, where it stands,
//! how it ended), in PostgreSQL: made ready as SQLite's journal makes them (`store::append`),
//! and written in one transaction holding the debate's row, each row chained.

use super::pool::Tx;
use super::{PgJournal, append_content, canonical, execute, head_of, index, query, text};
use crate::debate::{Event, Turn, now_rfc3339};
use crate::store::StoreError;
use crate::store::append::{Entry, Ready, audit_values, event_values};
use crate::store::audit::{AuditEntry, AuditKind, AuditPlace, audit_entry};
use crate::store::chain;
use crate::store::journal::TurnRow;
use rusqlite::types::{Value, ValueRef};

impl PgJournal {
    /// Appends `entries` to debate `id`'s journal in one transaction: all of them, or (on an
    /// error) none.
    pub fn append(&self, id: &str, entries: &[Entry<'_>]) -> Result<(), StoreError> {
        let ready = entries
            .iter()
            .map(Entry::ready)
            .collect::<Result<Vec<_>, _>>()?;
        self.write(id, move |tx, id| {
            ready.iter().try_for_each(|entry| insert(tx, id, entry))
        })
    }

    /// Commits a turn (and its searchable text), chained.
    pub fn record_turn(&self, id: &str, turn: &Turn) -> Result<(), StoreError> {
        self.append(id, &[Entry::Turn(turn)])
    }

    /// `record_turn` for a turn spoken at `at` (RFC 3339).
    pub fn record_turn_at(&self, id: &str, turn: &Turn, at: &str) -> Result<(), StoreError> {
        let row = TurnRow::new(turn, Some(at))?;
        self.write(id, move |tx, id| insert_turn(tx, id, &row))
    }

    /// Appends an event to the debate's log, chained.
    pub fn record_event(&self, id: &str, event: &Event) -> Result<(), StoreError> {
        self.append(id, &[Entry::Event(event)])
    }

    /// Appends one audit entry; `keep_body` false stores the hash and size only.
    pub fn record_audit(
        &self,
        id: &str,
        kind: AuditKind,
        place: &AuditPlace,
        body: &serde_json::Value,
        keep_body: bool,
    ) -> Result<(), StoreError> {
        self.append(
            id,
            &[Entry::Audit {
                kind,
                place,
                body,
                keep_body,
            }],
        )
    }

    /// A debate's audit trail in the order it was written, each body checked against its hash.
    pub fn audit(&self, id: &str) -> Result<Vec<AuditEntry>, StoreError> {
        self.rows(
            "SELECT seq, at, kind, round, phase, seat, attempt, provider, model, sha256, size, body
             FROM audit WHERE debate_id = ?1 ORDER BY seq",
            vec![Value::Text(id.to_string())],
        )?
        .into_iter()
        .map(|row| {
            let whole = |value: &Value| super::integer(value);
            Ok(audit_entry(
                whole(&row[0])?,
                text(&row[1])?,
                &text(&row[2])?,
                AuditPlace {
                    round: whole(&row[3])? as u32,
                    phase: text(&row[4])?,
                    seat: text(&row[5])?,
                    attempt: whole(&row[6])? as u32,
                    provider: text(&row[7])?,
                    model: text(&row[8])?,
                },
                text(&row[9])?,
                whole(&row[10])?,
                match &row[11] {
                    Value::Blob(bytes) => Some(bytes.clone()),
                    _ => None,
                },
            ))
        })
        .collect()
    }
}

/// Values as bound, owned (the chain's helpers lend them).
fn owned(values: &[ValueRef<'_>]) -> Vec<Value> {
    values
        .iter()
        .map(|value| match *value {
            ValueRef::Null => Value::Null,
            ValueRef::Integer(i) => Value::Integer(i),
            ValueRef::Real(f) => Value::Real(f),
            ValueRef::Text(bytes) => Value::Text(String::from_utf8_lossy(bytes).into_owned()),
            ValueRef::Blob(bytes) => Value::Blob(bytes.to_vec()),
        })
        .collect()
}

/// Inserts a turn made ready into debate `id`, searchable and chained.
fn insert_turn(tx: &mut Tx<'_>, id: &str, row: &TurnRow) -> Result<(), StoreError> {
    let mut bound = vec![Value::Text(id.to_string())];
    bound.extend(row.values().iter().cloned());
    let written = insert_returning(
        tx,
        id,
        "INSERT INTO turns (id, debate_id, round, phase, seat, content, moves, data,
            confidence, tokens_in, tokens_out, tokens_estimated, latency_ms, provider,
            model, status, note, created_at)
         VALUES (nextval('turns_numbers'), ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12,
            ?13, ?14, ?15, ?16, ?17)
         RETURNING id, round, phase, seat, content, moves, data, confidence, tokens_in,
            tokens_out, tokens_estimated, latency_ms, provider, model, status, note, created_at",
        &bound,
    )?;
    let (number, content) = numbered(&written)?;
    if !row.text().trim().is_empty() {
        index(tx, id, "turn", row.text())?;
    }
    execute(
        tx,
        "UPDATE debates SET updated_at = ?2 WHERE id = ?1",
        &[Value::Text(id.to_string()), Value::Text(now_rfc3339())],
    )?;
    append_content(tx, id, &chain::TURN, &[number.into()], Some(content))
}

/// The rows `insert` (an `INSERT … RETURNING` whose `?1` is debate `id`) returned. Where
/// the transaction has not read the chain's head yet, the same round trip reads it: the row's
/// lock was taken by an earlier statement, so this one sees the chain as it stands.
fn insert_returning(
    tx: &mut Tx<'_>,
    id: &str,
    insert: &str,
    bound: &[Value],
) -> Result<Vec<Vec<Value>>, StoreError> {
    if tx.heads.contains_key(id) {
        return query(tx, insert, bound);
    }
    let with_head = format!(
        "WITH written AS ({insert}) SELECT written.*, c.n, c.hash, c.place FROM written
         LEFT JOIN LATERAL (SELECT n, hash, place FROM chain WHERE debate_id = ?1
            ORDER BY n DESC LIMIT 1) c ON true"
    );
    let mut rows = query(tx, &with_head, bound)?;
    if let Some(row) = rows.first_mut() {
        let head = row.split_off(row.len().saturating_sub(3));
        tx.heads.insert(id.to_string(), head_of(&head));
    }
    Ok(rows)
}

/// The number an insert gave its row and the row's chained content, as `RETURNING` gave
/// them (the number first, then the facet's columns in its order).
fn numbered(written: &[Vec<Value>]) -> Result<(i64, Vec<serde_json::Value>), StoreError> {
    match written.first().map(Vec::as_slice) {
        Some([Value::Integer(number), columns @ ..]) => Ok((*number, canonical(columns))),
        other => Err(StoreError::Data(format!("an insert returned {other:?}"))),
    }
}

/// Writes one entry made ready into debate `id`.
fn insert(tx: &mut Tx<'_>, id: &str, entry: &Ready) -> Result<(), StoreError> {
    match entry {
        Ready::Event { kind, text, .. } => {
            tx.notify(id);
            let mut bound = vec![Value::Text(id.to_string())];
            bound.extend(owned(&event_values(kind, text)));
            let written = insert_returning(
                tx,
                id,
                "INSERT INTO events (seq, debate_id, kind, event)
                 VALUES (nextval('events_numbers'), ?1, ?2, ?3) RETURNING seq, kind, event",
                &bound,
            )?;
            let (seq, content) = numbered(&written)?;
            append_content(tx, id, &chain::EVENT, &[seq.into()], Some(content))
        }
        Ready::Audit {
            at,
            kind,
            place,
            hash,
            size,
            stored,
            ..
        } => {
            let mut bound = vec![Value::Text(id.to_string())];
            bound.extend(owned(&audit_values(at, kind, place, hash, *size)));
            bound.push(stored.clone().map_or(Value::Null, Value::Blob));
            let written = insert_returning(
                tx,
                id,
                "INSERT INTO audit (seq, debate_id, at, kind, round, phase, seat, attempt,
                    provider, model, sha256, size, body)
                 VALUES (nextval('audit_numbers'), ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11,
                    ?12)
                 RETURNING seq, at, kind, round, phase, seat, attempt, provider, model, sha256,
                    size",
                &bound,
            )?;
            let (seq, content) = numbered(&written)?;
            append_content(tx, id, &chain::AUDIT, &[seq.into()], Some(content))
        }
        Ready::Stage(stage) => execute(
            tx,
            "UPDATE debates SET stage = ?2 WHERE id = ?1",
            &[Value::Text(id.to_string()), Value::Text(stage.clone())],
        )
        .map(|_| ()),
        Ready::Turn(row) => insert_turn(tx, id, row),
        Ready::Status { status, error, at } => {
            super::update_status(tx, id, *status, error.as_deref(), at)
        }
    }
}
