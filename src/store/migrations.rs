//! Numbered schema migrations, applied in order and tracked in `PRAGMA user_version`.

use super::StoreError;
use rusqlite::Connection;
use std::path::Path;

const MIGRATIONS: &[&str] = &[
    // 1: the journal.
    r#"
CREATE TABLE debates (
    id          TEXT PRIMARY KEY,
    question    TEXT NOT NULL,
    protocol    TEXT NOT NULL,
    status      TEXT NOT NULL,
    config      TEXT NOT NULL,
    seats       TEXT NOT NULL DEFAULT '[]',
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    finished_at TEXT,
    confidence  TEXT,
    error       TEXT
);
CREATE INDEX debates_by_time ON debates(created_at DESC);

CREATE TABLE turns (
    id               INTEGER PRIMARY KEY,
    debate_id        TEXT NOT NULL REFERENCES debates(id) ON DELETE CASCADE,
    round            INTEGER NOT NULL,
    phase            TEXT NOT NULL,
    seat             TEXT NOT NULL,
    content          TEXT NOT NULL,
    moves            TEXT NOT NULL,
    data             TEXT,
    confidence       REAL,
    tokens_in        INTEGER NOT NULL,
    tokens_out       INTEGER NOT NULL,
    tokens_estimated INTEGER NOT NULL,
    latency_ms       INTEGER NOT NULL,
    provider         TEXT NOT NULL,
    model            TEXT NOT NULL,
    status           TEXT NOT NULL,
    note             TEXT,
    created_at       TEXT NOT NULL,
    UNIQUE (debate_id, round, phase, seat)
);

CREATE TABLE checkpoints (
    debate_id  TEXT NOT NULL REFERENCES debates(id) ON DELETE CASCADE,
    round      INTEGER NOT NULL,
    kind       TEXT NOT NULL,
    decision   TEXT NOT NULL,
    guidance   TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (debate_id, round, kind)
);

CREATE TABLE syntheses (
    debate_id      TEXT PRIMARY KEY REFERENCES debates(id) ON DELETE CASCADE,
    markdown       TEXT NOT NULL,
    data           TEXT NOT NULL,
    confidence     TEXT NOT NULL,
    path           TEXT,
    follow_up_path TEXT,
    created_at     TEXT NOT NULL
);

CREATE TABLE endpoint_capabilities (
    endpoint   TEXT PRIMARY KEY,
    shape      TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

CREATE VIRTUAL TABLE search_index USING fts5(
    body,
    debate_id UNINDEXED,
    kind UNINDEXED,
    tokenize = 'unicode61 remove_diacritics 2'
);
"#,
    // 2: round outcomes and guardrail flags, so a replay shows what the live screen showed.
    r#"
CREATE TABLE annotations (
    seq       INTEGER PRIMARY KEY,
    debate_id TEXT NOT NULL REFERENCES debates(id) ON DELETE CASCADE,
    round     INTEGER NOT NULL,
    kind      TEXT NOT NULL,
    seat      TEXT NOT NULL,
    event     TEXT NOT NULL,
    UNIQUE (debate_id, round, kind, seat)
);
"#,
];

/// Applies every migration the database has not seen, each in its own transaction.
pub fn migrate(connection: &Connection, path: &Path) -> Result<(), StoreError> {
    let current: i64 = connection.pragma_query_value(None, "user_version", |row| row.get(0))?;
    let known = MIGRATIONS.len() as i64;
    if current > known {
        return Err(StoreError::TooNew {
            path: path.display().to_string(),
            found: current,
            known,
        });
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        let version = index as i64 + 1;
        let apply = || -> Result<(), rusqlite::Error> {
            connection.execute_batch("BEGIN IMMEDIATE")?;
            connection.execute_batch(sql)?;
            connection.pragma_update(None, "user_version", version)?;
            connection.execute_batch("COMMIT")
        };
        if let Err(error) = apply() {
            let _ = connection.execute_batch("ROLLBACK");
            return Err(StoreError::classify(path, error));
        }
    }
    Ok(())
}
