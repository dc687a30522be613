//! A debate copied out of PostgreSQL into a SQLite file, row for row with its chain, so what
//! reads a SQLite journal (the audit's re-run from the journal alone) reads it there and the
//! copy's chain checks as the original's does.

use super::{PgJournal, query};
use crate::store::{Sqlite, StoreError};
use rusqlite::types::Value;
use std::path::Path;

/// Each table that holds a debate's rows: the columns both journals have, the column that
/// names the debate, and the order its rows were written in.
const TABLES: &[(&str, &str, &str, &str)] = &[
    (
        "debates",
        "id, question, protocol, status, config, seats, created_at, updated_at, finished_at,
         confidence, error, stage, lease_pid, lease_host, lease_at, lease_since",
        "id",
        "id",
    ),
    (
        "turns",
        "id, debate_id, round, phase, seat, content, moves, data, confidence, tokens_in,
         tokens_out, tokens_estimated, latency_ms, provider, model, status, note, created_at",
        "debate_id",
        "id",
    ),
    (
        "checkpoints",
        "debate_id, round, kind, decision, guidance, created_at, answered_by",
        "debate_id",
        "entered",
    ),
    (
        "syntheses",
        "debate_id, markdown, data, confidence, path, follow_up_path, created_at, section",
        "debate_id",
        "debate_id",
    ),
    (
        "annotations",
        "seq, debate_id, round, kind, seat, event",
        "debate_id",
        "seq",
    ),
    ("events", "seq, debate_id, kind, event", "debate_id", "seq"),
    (
        "gates",
        "debate_id, gate, point, round, summary, artifacts, requested_at, decision, decided_by,
         reason, decided_at",
        "debate_id",
        "entered",
    ),
    (
        "audit",
        "seq, debate_id, at, kind, round, phase, seat, attempt, provider, model, sha256, size,
         body",
        "debate_id",
        "seq",
    ),
    (
        "lessons",
        "id, debate_id, question, lesson, went, advice, confidence, created_at, embedding,
         embedding_model",
        "debate_id",
        "id",
    ),
    (
        "chain",
        "debate_id, n, facet, row_key, place, content, prev, hash, upgraded, prev_place",
        "debate_id",
        "n",
    ),
    ("search_index", "body, debate_id, kind", "debate_id", "id"),
];

impl PgJournal {
    /// A new SQLite journal at `path` holding debate `id` alone, copied row for row.
    pub fn copy_debate_to_sqlite(&self, id: &str, path: &Path) -> Result<Sqlite, StoreError> {
        let (wanted, shown) = (id.to_string(), self.shown.clone());
        let tables = self.call(move |client| {
            let mut tx = client
                .build_transaction()
                .read_only(true)
                .isolation_level(postgres::IsolationLevel::RepeatableRead)
                .start()
                .map_err(|e| super::failed_pg(&shown, e))?;
            let mut tables = Vec::new();
            for (table, columns, owner, order) in TABLES {
                let rows = query(
                    &mut tx,
                    &format!("SELECT {columns} FROM {table} WHERE {owner} = ?1 ORDER BY {order}"),
                    &[Value::Text(wanted.clone())],
                )?;
                tables.push((*table, *columns, rows));
            }
            Ok(tables)
        })?;
        if tables.first().is_none_or(|(_, _, rows)| rows.is_empty()) {
            return Err(StoreError::NotFound(id.to_string()));
        }
        let copy = Sqlite::open(path)?;
        copy.with(|connection| {
            let tx = connection.unchecked_transaction()?;
            for (table, columns, rows) in &tables {
                let marks: Vec<String> = (1..=columns.split(',').count())
                    .map(|n| format!("?{n}"))
                    .collect();
                let sql = format!(
                    "INSERT INTO {table} ({columns}) VALUES ({})",
                    marks.join(", ")
                );
                let mut statement = tx.prepare(&sql)?;
                for row in rows {
                    statement.execute(rusqlite::params_from_iter(row))?;
                }
                // SQLite finds lessons through an index of its own.
                if *table == "lessons" {
                    for row in rows {
                        tx.execute(
                            "INSERT INTO lessons_index (body, lesson_id) VALUES (?1, ?2)",
                            rusqlite::params![
                                format!("{}\n{}\n{}", text(&row[2]), text(&row[3]), text(&row[5])),
                                row[0]
                            ],
                        )?;
                    }
                }
            }
            tx.commit()?;
            Ok(())
        })?;
        Ok(copy)
    }
}

fn text(value: &Value) -> &str {
    match value {
        Value::Text(text) => text,
        _ => "",
    }
}
