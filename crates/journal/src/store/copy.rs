//! Moving a journal (`moot journal copy`): every debate read out of one journal row for row,
//! with its chain, and written into another (SQLite to PostgreSQL, or back to a new SQLite
//! file), then its chain checked there against the head it had here. SQLite keeps the links of
//! turns, events and audit entries in their own rows; PostgreSQL keeps every link in `chain`;
//! an entry is the same entry in either form, so the copy moves it from one to the other.

use super::chain::{self, StoredLink};
use super::{Store, StoreError};
use rusqlite::types::Value;

/// Each table that holds a debate's rows: the columns both journals have, the column that
/// names the debate, and the order PostgreSQL wrote its rows in (SQLite's is its rowid).
/// Written in this order (the debate first).
pub(super) const TABLES: &[(&str, &str, &str, &str)] = &[
    (
        "debates",
        "id, question, protocol, status, config, seats, created_at, updated_at, finished_at, \
         confidence, error, stage, lease_pid, lease_host, lease_at, lease_since, lease_ttl",
        "id",
        "id",
    ),
    (
        "turns",
        "id, debate_id, round, phase, seat, content, moves, data, confidence, tokens_in, \
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
        "debate_id, gate, point, round, summary, artifacts, requested_at, decision, \
         decided_by, reason, decided_at",
        "debate_id",
        "entered",
    ),
    (
        "audit",
        "seq, debate_id, at, kind, round, phase, seat, attempt, provider, model, sha256, \
         size, body",
        "debate_id",
        "seq",
    ),
    (
        "lessons",
        "id, debate_id, question, lesson, went, advice, confidence, created_at, embedding, \
         embedding_model",
        "debate_id",
        "id",
    ),
    ("search_index", "body, debate_id, kind", "debate_id", "id"),
];

/// The columns of a chain entry, as `chain` keeps them.
pub(super) const CHAIN: &str = "debate_id, n, facet, row_key, place, content, prev, hash, \
     upgraded, prev_place";

/// One debate as a journal holds it: each table's rows (in `TABLES`' order and columns) and
/// its chain, every entry in `chain`'s form.
pub struct DebateRows {
    pub(super) id: String,
    pub(super) tables: Vec<Vec<Vec<Value>>>,
    pub(super) chain: Vec<Vec<Value>>,
}

/// Entries stored in their rows (SQLite's turns, events and audit entries), as `chain` rows:
/// the hash each was made on is the entry's before it, whatever that entry is.
pub(super) fn links_as_entries(
    debate: &str,
    mut entries: Vec<Vec<Value>>,
    links: Vec<StoredLink>,
) -> Vec<Vec<Value>> {
    let n_of = |row: &Vec<Value>| match row.get(1) {
        Some(Value::Integer(n)) => *n,
        _ => 0,
    };
    for link in links {
        entries.push(vec![
            Value::Text(debate.to_string()),
            Value::Integer(link.n),
            Value::Text(link.facet.to_string()),
            Value::Text(link.key),
            Value::Text(link.place),
            Value::Text(link.content),
            // Filled below, once every entry is in its place.
            Value::Null,
            Value::Text(link.hash),
            Value::Integer(0),
            link.previous_place.map_or(Value::Null, Value::Text),
        ]);
    }
    entries.sort_by_key(n_of);
    let mut previous = chain::genesis(debate);
    for entry in &mut entries {
        if entry[6] == Value::Null {
            entry[6] = Value::Text(previous.clone());
        }
        if let Value::Text(hash) = &entry[7] {
            previous = hash.clone();
        }
    }
    entries
}

/// What came of copying one debate, as `copy_into` tells it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Copied<'a> {
    /// Copied, its chain checked there at this head.
    Verified(Option<&'a str>),
    /// The target had it already, with the same head.
    There,
    /// Not copied, or its copy does not verify: why.
    Failed(&'a str),
}

/// What copying a journal did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct CopyReport {
    /// Debates copied and verified there, each with its chain head.
    pub copied: Vec<(String, Option<String>)>,
    /// Debates the target had already, with the same chain head.
    pub already: Vec<String>,
    /// Debates that could not be copied, or whose copy does not verify: why.
    pub failed: Vec<(String, String)>,
}

impl CopyReport {
    pub fn passed(&self) -> bool {
        self.failed.is_empty()
    }
}

impl Store {
    /// Copies every debate of this journal into `target`, and its bench runs, preferences
    /// and learned endpoint shapes; each debate's chain is checked there against the head it
    /// has here. `each` hears of every debate as it is done.
    pub fn copy_into(
        &self,
        target: &Store,
        each: &mut dyn FnMut(&str, Copied<'_>),
    ) -> Result<CopyReport, StoreError> {
        let mut report = CopyReport::default();
        let mut ids: Vec<String> = self
            .list(i64::MAX as usize)?
            .into_iter()
            .map(|d| d.id)
            .collect();
        // Oldest first, as they were written.
        ids.reverse();
        for id in ids {
            let here = self.check_chain(&id)?;
            if let Ok(there) = target.check_chain(&id)
                && there.entries > 0
            {
                if there.head == here.head {
                    report.already.push(id.clone());
                    each(&id, Copied::There);
                } else {
                    let why = "the target has a debate of this id with another chain".to_string();
                    each(&id, Copied::Failed(&why));
                    report.failed.push((id, why));
                }
                continue;
            }
            let outcome = self
                .debate_rows(&id)
                .and_then(|rows| target.import_debate(&rows))
                .and_then(|()| target.check_chain(&id));
            match outcome {
                Ok(there) if there.holds() && there.head == here.head => {
                    each(&id, Copied::Verified(there.head.as_deref()));
                    report.copied.push((id, there.head));
                }
                Ok(there) => {
                    let why = match there.problem {
                        Some(problem) => format!("its copy does not verify: {problem}"),
                        None => format!(
                            "its copy's chain ends at {} where this one's ends at {}",
                            there.head.unwrap_or_default(),
                            here.head.unwrap_or_default()
                        ),
                    };
                    each(&id, Copied::Failed(&why));
                    report.failed.push((id, why));
                }
                Err(error) => {
                    let why = error.to_string();
                    each(&id, Copied::Failed(&why));
                    report.failed.push((id, why));
                }
            }
        }
        self.copy_outside_debates(target)?;
        Ok(report)
    }

    /// Bench runs and their results, preferences and learned endpoint shapes (what the
    /// target has already stays).
    fn copy_outside_debates(&self, target: &Store) -> Result<(), StoreError> {
        for (key, value) in self.preferences()? {
            if target.preference(&key)?.is_none() {
                target.set_preference(&key, &value)?;
            }
        }
        let known = target.load_capabilities()?;
        let new: Vec<(String, String)> = self
            .load_capabilities()?
            .into_iter()
            .filter(|(endpoint, _)| !known.iter().any(|(e, _)| e == endpoint))
            .collect();
        target.save_capabilities(&new)?;
        for (run, settings) in self.bench_runs()? {
            if target.bench_run(&run)?.is_some() {
                continue;
            }
            target.create_bench_run(&run, &settings)?;
            for (problem, arm, result) in self.bench_results(&run)? {
                target.record_bench_result(&run, problem, &arm, &result)?;
            }
        }
        Ok(())
    }
}

/// SQLite's side of a copy.
impl super::Sqlite {
    /// Debate `id` row for row, its in-row links as `chain` entries.
    pub(super) fn debate_rows(&self, id: &str) -> Result<DebateRows, StoreError> {
        self.with(|connection| {
            let mut tables = Vec::new();
            for (table, columns, owner, _) in TABLES {
                let mut statement = connection.prepare(&format!(
                    "SELECT {columns} FROM {table} WHERE {owner} = ?1 ORDER BY rowid"
                ))?;
                let width = statement.column_count();
                let rows = statement
                    .query_map([id], |row| {
                        (0..width).map(|i| row.get::<_, Value>(i)).collect()
                    })?
                    .collect::<Result<Vec<Vec<Value>>, _>>()?;
                tables.push(rows);
            }
            let mut statement = connection.prepare(&format!(
                "SELECT {CHAIN} FROM chain WHERE debate_id = ?1 ORDER BY n"
            ))?;
            let entries = statement
                .query_map([id], |row| {
                    (0..10).map(|i| row.get::<_, Value>(i)).collect()
                })?
                .collect::<Result<Vec<Vec<Value>>, _>>()?;
            let links = chain::stored_links(connection, id)?;
            Ok(DebateRows {
                id: id.to_string(),
                tables,
                chain: links_as_entries(id, entries, links),
            })
        })
    }

    /// Writes a debate copied from another journal, in one transaction.
    pub(super) fn import_debate(&self, rows: &DebateRows) -> Result<(), StoreError> {
        self.heads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .forget();
        self.with(|connection| {
            let tx = connection.unchecked_transaction()?;
            for ((table, columns, _, _), rows) in TABLES.iter().zip(&rows.tables) {
                insert_all(&tx, table, columns, rows)?;
                // SQLite finds lessons through an index of its own.
                if *table == "lessons" {
                    for row in rows {
                        let text = |i: usize| match &row[i] {
                            Value::Text(text) => text.as_str(),
                            _ => "",
                        };
                        tx.execute(
                            "INSERT INTO lessons_index (body, lesson_id) VALUES (?1, ?2)",
                            rusqlite::params![
                                format!("{}\n{}\n{}", text(2), text(3), text(5)),
                                row[0]
                            ],
                        )?;
                    }
                }
            }
            insert_all(&tx, "chain", CHAIN, &rows.chain)?;
            tx.commit()?;
            Ok(())
        })
        .map_err(|e| match e {
            StoreError::Open { detail, .. } if detail.contains("UNIQUE") => {
                StoreError::Data(format!(
                    "{}'s rows are numbered as rows this journal has already (it was copied \
                     from a journal that shares numbers with one copied here before); copy it \
                     into a new file",
                    rows.id
                ))
            }
            other => other,
        })
    }

    /// Every standing preference.
    pub(super) fn preferences(&self) -> Result<Vec<(String, String)>, StoreError> {
        self.with(|connection| {
            Ok(connection
                .prepare("SELECT key, value FROM preferences ORDER BY key")?
                .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
                .collect::<Result<_, _>>()?)
        })
    }

    /// Every bench run's id and settings.
    pub(super) fn bench_runs(&self) -> Result<Vec<(String, serde_json::Value)>, StoreError> {
        let rows: Vec<(String, String)> = self.with(|connection| {
            Ok(connection
                .prepare("SELECT id, settings FROM bench_runs ORDER BY created_at, id")?
                .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
                .collect::<Result<_, _>>()?)
        })?;
        rows.into_iter()
            .map(|(id, text)| {
                serde_json::from_str(&text)
                    .map(|settings| (id, settings))
                    .map_err(|e| StoreError::Data(e.to_string()))
            })
            .collect()
    }
}

/// Inserts `rows` into `table`'s `columns`.
fn insert_all(
    tx: &rusqlite::Transaction<'_>,
    table: &str,
    columns: &str,
    rows: &[Vec<Value>],
) -> rusqlite::Result<()> {
    let marks: Vec<String> = (1..=columns.split(',').count())
        .map(|n| format!("?{n}"))
        .collect();
    let mut statement = tx.prepare(&format!(
        "INSERT INTO {table} ({columns}) VALUES ({})",
        marks.join(", ")
    ))?;
    for row in rows {
        statement.execute(rusqlite::params_from_iter(row))?;
    }
    Ok(())
}
