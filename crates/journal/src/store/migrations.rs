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
    // 3: where a debate stands, which process runs it, and who answered each question.
    r#"
ALTER TABLE debates ADD COLUMN stage TEXT;
ALTER TABLE debates ADD COLUMN lease_pid INTEGER;
ALTER TABLE debates ADD COLUMN lease_host TEXT;
ALTER TABLE debates ADD COLUMN lease_at INTEGER;
ALTER TABLE checkpoints ADD COLUMN answered_by TEXT;
"#,
    // 4: every event a debate emits (but streaming deltas), in emit order, so a replay needs
    // no knowledge of the protocol that produced them; and which section an outcome fills.
    r#"
CREATE TABLE events (
    seq       INTEGER PRIMARY KEY,
    debate_id TEXT NOT NULL REFERENCES debates(id) ON DELETE CASCADE,
    kind      TEXT NOT NULL,
    event     TEXT NOT NULL
);
CREATE INDEX events_by_debate ON events(debate_id, seq);
ALTER TABLE syntheses ADD COLUMN section TEXT;
"#,
    // 5: approval gates: each request, and its decision once made (by the debate's own face,
    // by `moot approve` / `moot reject` from another process, by the timeout, or automatically
    // when gates are off).
    r#"
CREATE TABLE gates (
    debate_id    TEXT NOT NULL REFERENCES debates(id) ON DELETE CASCADE,
    gate         TEXT NOT NULL,
    point        TEXT NOT NULL,
    round        INTEGER NOT NULL,
    summary      TEXT NOT NULL,
    artifacts    TEXT NOT NULL,
    requested_at TEXT NOT NULL,
    decision     TEXT,
    decided_by   TEXT,
    reason       TEXT,
    decided_at   TEXT,
    PRIMARY KEY (debate_id, gate)
);
"#,
    // 6: the audit trail: every request sent and reply received, and the votes, gates and
    // lessons a debate used; each body deflated (or left out when `audit = false`) beside the
    // SHA-256 of its text.
    r#"
CREATE TABLE audit (
    seq       INTEGER PRIMARY KEY,
    debate_id TEXT NOT NULL REFERENCES debates(id) ON DELETE CASCADE,
    at        TEXT NOT NULL,
    kind      TEXT NOT NULL,
    round     INTEGER NOT NULL,
    phase     TEXT NOT NULL,
    seat      TEXT NOT NULL,
    attempt   INTEGER NOT NULL,
    provider  TEXT NOT NULL,
    model     TEXT NOT NULL,
    sha256    TEXT NOT NULL,
    size      INTEGER NOT NULL,
    body      BLOB
);
CREATE INDEX audit_by_debate ON audit(debate_id, seq);
"#,
    // 7: lessons one debate writes for the next (kept apart from debates: a lesson outlives
    // nothing but the capacity), their full-text index (stemmed, so "caching" finds "cache"),
    // and the person's standing preferences (`moot lessons off`).
    r#"
CREATE TABLE lessons (
    id         INTEGER PRIMARY KEY,
    debate_id  TEXT NOT NULL,
    question   TEXT NOT NULL,
    lesson     TEXT NOT NULL,
    went       TEXT NOT NULL,
    advice     TEXT NOT NULL,
    confidence REAL NOT NULL,
    created_at TEXT NOT NULL
);
CREATE VIRTUAL TABLE lessons_index USING fts5(
    body,
    lesson_id UNINDEXED,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TABLE preferences (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"#,
    // 8: `moot bench` runs and each problem's result per arm, so an interrupted run resumes.
    r#"
CREATE TABLE bench_runs (
    id         TEXT PRIMARY KEY,
    settings   TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE bench_results (
    run_id      TEXT NOT NULL REFERENCES bench_runs(id) ON DELETE CASCADE,
    problem     INTEGER NOT NULL,
    arm         TEXT NOT NULL,
    result      TEXT NOT NULL,
    PRIMARY KEY (run_id, problem, arm)
);
"#,
    // 9: a lesson's embedding (of its source question) and the model that made it, when the
    // provider offers embeddings.
    r#"
ALTER TABLE lessons ADD COLUMN embedding BLOB;
ALTER TABLE lessons ADD COLUMN embedding_model TEXT;
"#,
    // 10: the hash chain of every row a debate's outcome depends on (`store::chain`); debates
    // already journaled are chained (after 12), marked as chained at upgrade.
    r#"
CREATE TABLE chain (
    debate_id TEXT NOT NULL REFERENCES debates(id) ON DELETE CASCADE,
    n         INTEGER NOT NULL,
    facet     TEXT NOT NULL,
    row_key   TEXT NOT NULL,
    place     TEXT NOT NULL,
    content   TEXT NOT NULL,
    prev      TEXT NOT NULL,
    hash      TEXT NOT NULL,
    upgraded  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (debate_id, n)
) WITHOUT ROWID;
"#,
    // 11: a turn carries its own chain link (its position and hash, 32 bytes), so journaling
    // one writes no page beyond the turn's own; its content and the previous hash are what
    // the link is checked against. Earlier turns keep theirs in `chain`, and a turn removed
    // on purpose hands its link to `chain` first. Every entry names the place of the one
    // before it, so a row deleted with its in-row link is still named by the gap it leaves.
    r#"
ALTER TABLE turns ADD COLUMN chain_n INTEGER;
ALTER TABLE turns ADD COLUMN chain_hash BLOB;
ALTER TABLE turns ADD COLUMN chain_prev_place TEXT;
ALTER TABLE chain ADD COLUMN prev_place TEXT;
"#,
    // 12: events and audit entries carry their own chain link too, as turns do from 11: they
    // are most of a debate's entries, and each link in `chain` was one more page a commit
    // wrote. Earlier rows keep theirs in `chain`.
    r#"
ALTER TABLE events ADD COLUMN chain_n INTEGER;
ALTER TABLE events ADD COLUMN chain_hash BLOB;
ALTER TABLE events ADD COLUMN chain_prev_place TEXT;
ALTER TABLE audit ADD COLUMN chain_n INTEGER;
ALTER TABLE audit ADD COLUMN chain_hash BLOB;
ALTER TABLE audit ADD COLUMN chain_prev_place TEXT;
"#,
    // 13: when the lease was taken (not renewed), so a process that started after it, under a
    // pid the kernel gave again, is not taken for its holder.
    r#"
ALTER TABLE debates ADD COLUMN lease_since INTEGER;
"#,
    // 14: a cancel asked of a debate another process runs (another `moot serve` on a shared
    // journal), until that process takes it.
    r#"
CREATE TABLE cancellations (
    debate_id    TEXT PRIMARY KEY REFERENCES debates(id) ON DELETE CASCADE,
    requested_by TEXT NOT NULL,
    requested_at TEXT NOT NULL
);
"#,
    // 15: how long a lease's heartbeat lasts, as its holder set it: a holder on another host
    // whose last heartbeat is older is gone. Replicas sharing a journal take each other's
    // debates over within their `takeover_seconds`, which sets it.
    r#"
ALTER TABLE debates ADD COLUMN lease_ttl INTEGER;
"#,
];

/// Work a migration needs beyond SQL, run in its transaction after its SQL.
fn after(version: i64, connection: &Connection) -> Result<(), rusqlite::Error> {
    if version == 3 {
        // Search passages are printed, so they are kept free of escapes from here on; older
        // rows are cleaned once.
        let dirty: Vec<(i64, String)> = connection
            .prepare("SELECT rowid, body FROM search_index")?
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?
            .filter_map(Result::ok)
            .filter(|(_, body): &(i64, String)| crate::sanitize::clean(body) != *body)
            .collect();
        for (rowid, body) in dirty {
            connection.execute(
                "UPDATE search_index SET body = ?2 WHERE rowid = ?1",
                rusqlite::params![rowid, crate::sanitize::clean(&body)],
            )?;
        }
    }
    // Debates journaled before the chain are chained once its last column exists (a journal
    // from before 10 passes 10 to 12 in one go); a debate chained already is left alone.
    if version == 12 {
        let debates: Vec<String> = connection
            .prepare(
                "SELECT id FROM debates d
                 WHERE NOT EXISTS (SELECT 1 FROM chain c WHERE c.debate_id = d.id)
                 ORDER BY created_at, id",
            )?
            .query_map([], |row| row.get(0))?
            .collect::<Result<_, _>>()?;
        for debate in debates {
            super::chain::chain_at_upgrade(connection, &debate)?;
        }
    }
    Ok(())
}

/// Applies every migration the database has not seen, all in one immediate transaction: the
/// version is read inside it, so two processes opening a new journal at once cannot both
/// apply the same migration.
pub fn migrate(connection: &Connection, path: &Path) -> Result<(), StoreError> {
    let known = MIGRATIONS.len() as i64;
    let version = |connection: &Connection| -> Result<i64, StoreError> {
        connection
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .map_err(|e| StoreError::classify(path, e))
    };
    let current = version(connection)?;
    if current > known {
        return Err(StoreError::TooNew {
            path: path.display().to_string(),
            found: current,
            known,
        });
    }
    if current == known {
        return Ok(());
    }
    connection
        .execute_batch("BEGIN IMMEDIATE")
        .map_err(|e| StoreError::classify(path, e))?;
    let apply = || -> Result<(), StoreError> {
        // Another process may have migrated while this one waited for the lock.
        let current = version(connection)?;
        for (index, sql) in MIGRATIONS.iter().enumerate().skip(current.max(0) as usize) {
            let number = index as i64 + 1;
            let step = || -> Result<(), rusqlite::Error> {
                connection.execute_batch(sql)?;
                after(number, connection)?;
                connection.pragma_update(None, "user_version", number)
            };
            step().map_err(|e| StoreError::classify(path, e))?;
        }
        connection
            .execute_batch("COMMIT")
            .map_err(|e| StoreError::classify(path, e))
    };
    apply().inspect_err(|_| {
        let _ = connection.execute_batch("ROLLBACK");
    })
}
