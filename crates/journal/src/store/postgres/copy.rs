//! PostgreSQL's side of moving a journal (`store::copy`): a debate read out row for row with
//! its chain, or written in from another journal with the numbers it had there (the sequences
//! moved past them), and a debate copied out into a SQLite file for what reads one (the
//! audit's re-run from the journal alone).

use super::pool::Tx;
use super::{PgJournal, execute, failed_pg, query, text};
use crate::store::copy::{CHAIN, DebateRows, TABLES};
use crate::store::{Sqlite, StoreError};
use rusqlite::types::Value;
use std::path::Path;

/// The sequences that number rows, with their table and column.
const NUMBERED: &[(&str, &str, &str)] = &[
    ("turns_numbers", "turns", "id"),
    ("events_numbers", "events", "seq"),
    ("audit_numbers", "audit", "seq"),
];

impl PgJournal {
    /// Debate `id` row for row, with its chain.
    pub(in crate::store) fn debate_rows(&self, id: &str) -> Result<DebateRows, StoreError> {
        let (wanted, shown) = (id.to_string(), self.shown.clone());
        self.call(move |conn| {
            let mut tx = conn.begin_snapshot().map_err(|e| failed_pg(&shown, e))?;
            let key = [Value::Text(wanted.clone())];
            let mut tables = Vec::new();
            for (table, columns, owner, order) in TABLES {
                tables.push(query(
                    &mut tx,
                    &format!("SELECT {columns} FROM {table} WHERE {owner} = ?1 ORDER BY {order}"),
                    &key,
                )?);
            }
            let chain = query(
                &mut tx,
                &format!("SELECT {CHAIN} FROM chain WHERE debate_id = ?1 ORDER BY n"),
                &key,
            )?;
            Ok(DebateRows {
                id: wanted,
                tables,
                chain,
            })
        })
    }

    /// Writes a debate copied from another journal, in one transaction, with the numbers it
    /// had there; the sequences then number past them.
    pub(in crate::store) fn import_debate(&self, rows: &DebateRows) -> Result<(), StoreError> {
        let (tables, chain, shown) = (rows.tables.clone(), rows.chain.clone(), self.shown.clone());
        self.call(move |conn| {
            let mut tx = conn.begin().map_err(|e| failed_pg(&shown, e))?;
            for ((table, columns, _, _), rows) in TABLES.iter().zip(&tables) {
                insert_all(&mut tx, table, columns, rows)?;
            }
            insert_all(&mut tx, "chain", CHAIN, &chain)?;
            for (sequence, table, column) in NUMBERED {
                query(
                    &mut tx,
                    &format!(
                        "SELECT setval('{sequence}', m) FROM (SELECT MAX({column}) AS m FROM {table}) t
                         WHERE m IS NOT NULL AND m > (SELECT CASE WHEN is_called THEN last_value
                            ELSE last_value - 1 END FROM {sequence})"
                    ),
                    &[],
                )?;
            }
            query(
                &mut tx,
                "SELECT setval(pg_get_serial_sequence('lessons', 'id'), m)
                 FROM (SELECT MAX(id) AS m FROM lessons) t WHERE m IS NOT NULL",
                &[],
            )?;
            tx.commit().map_err(|e| failed_pg(&shown, e))
        })
    }

    /// A new SQLite journal at `path` holding debate `id` alone, copied row for row.
    pub fn copy_debate_to_sqlite(&self, id: &str, path: &Path) -> Result<Sqlite, StoreError> {
        let rows = self.debate_rows(id)?;
        if rows.tables.first().is_none_or(Vec::is_empty) {
            return Err(StoreError::NotFound(id.to_string()));
        }
        let copy = Sqlite::open(path)?;
        copy.import_debate(&rows)?;
        Ok(copy)
    }

    /// Every standing preference.
    pub(in crate::store) fn preferences(&self) -> Result<Vec<(String, String)>, StoreError> {
        self.rows(
            "SELECT key, value FROM preferences ORDER BY key",
            Vec::new(),
        )?
        .iter()
        .map(|row| Ok((text(&row[0])?, text(&row[1])?)))
        .collect()
    }

    /// Every bench run's id and settings.
    pub(in crate::store) fn bench_runs(
        &self,
    ) -> Result<Vec<(String, serde_json::Value)>, StoreError> {
        self.rows(
            "SELECT id, settings FROM bench_runs ORDER BY created_at, id",
            Vec::new(),
        )?
        .iter()
        .map(|row| Ok((text(&row[0])?, super::parsed(&row[1])?)))
        .collect()
    }
}

/// Inserts `rows` into `table`'s `columns`.
fn insert_all(
    tx: &mut Tx<'_>,
    table: &str,
    columns: &str,
    rows: &[Vec<Value>],
) -> Result<(), StoreError> {
    let marks: Vec<String> = (1..=columns.split(',').count())
        .map(|n| format!("?{n}"))
        .collect();
    let sql = format!(
        "INSERT INTO {table} ({columns}) VALUES ({})",
        marks.join(", ")
    );
    for row in rows {
        execute(tx, &sql, row)?;
    }
    Ok(())
}
