//! The journal's numbered migrations in PostgreSQL's dialect: the same fourteen steps as
//! SQLite's (`store::migrations`), each in one transaction, tracked in `moot_schema`. Full-text
//! search is a `tsvector` column with a GIN index where SQLite has FTS5; the chain keeps every
//! link in `chain` (no in-row links: those spare SQLite a page per commit, which PostgreSQL's
//! row storage does not need). Turns, events and audit entries are numbered across the whole
//! journal as SQLite numbers them (a sequence each), and keyed by debate and number, so a
//! debate copied in keeps its numbers, on which its chain was made.

use postgres::Client;

/// Step `n` is `MIGRATIONS[n - 1]`, named as SQLite's step `n` is.
pub(super) const MIGRATIONS: &[&str] = &[
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
    id               BIGINT NOT NULL,
    debate_id        TEXT NOT NULL REFERENCES debates(id) ON DELETE CASCADE,
    round            BIGINT NOT NULL,
    phase            TEXT NOT NULL,
    seat             TEXT NOT NULL,
    content          TEXT NOT NULL,
    moves            TEXT NOT NULL,
    data             TEXT,
    confidence       DOUBLE PRECISION,
    tokens_in        BIGINT NOT NULL,
    tokens_out       BIGINT NOT NULL,
    tokens_estimated BIGINT NOT NULL,
    latency_ms       BIGINT NOT NULL,
    provider         TEXT NOT NULL,
    model            TEXT NOT NULL,
    status           TEXT NOT NULL,
    note             TEXT,
    created_at       TEXT NOT NULL,
    PRIMARY KEY (debate_id, id),
    UNIQUE (debate_id, round, phase, seat)
);
CREATE SEQUENCE turns_numbers;

CREATE TABLE checkpoints (
    debate_id  TEXT NOT NULL REFERENCES debates(id) ON DELETE CASCADE,
    round      BIGINT NOT NULL,
    kind       TEXT NOT NULL,
    decision   TEXT NOT NULL,
    guidance   TEXT,
    created_at TEXT NOT NULL,
    -- The order answers came in (SQLite's rowid).
    entered    BIGINT GENERATED ALWAYS AS IDENTITY,
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

CREATE TABLE search_index (
    id        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    body      TEXT NOT NULL,
    debate_id TEXT NOT NULL,
    kind      TEXT NOT NULL,
    words     tsvector GENERATED ALWAYS AS (to_tsvector('simple', body)) STORED
);
CREATE INDEX search_index_words ON search_index USING GIN (words);
CREATE INDEX search_index_by_debate ON search_index(debate_id);
"#,
    // 2: round outcomes and guardrail flags, so a replay shows what the live screen showed.
    r#"
CREATE TABLE annotations (
    seq       BIGINT NOT NULL,
    debate_id TEXT NOT NULL REFERENCES debates(id) ON DELETE CASCADE,
    round     BIGINT NOT NULL,
    kind      TEXT NOT NULL,
    seat      TEXT NOT NULL,
    event     TEXT NOT NULL,
    PRIMARY KEY (debate_id, seq),
    UNIQUE (debate_id, round, kind, seat)
);
"#,
    // 3: where a debate stands, which process runs it, and who answered each question.
    r#"
ALTER TABLE debates ADD COLUMN stage TEXT;
ALTER TABLE debates ADD COLUMN lease_pid BIGINT;
ALTER TABLE debates ADD COLUMN lease_host TEXT;
ALTER TABLE debates ADD COLUMN lease_at BIGINT;
ALTER TABLE checkpoints ADD COLUMN answered_by TEXT;
"#,
    // 4: every event a debate emits (but streaming deltas), in emit order; and which section
    // an outcome fills.
    r#"
CREATE TABLE events (
    seq       BIGINT NOT NULL,
    debate_id TEXT NOT NULL REFERENCES debates(id) ON DELETE CASCADE,
    kind      TEXT NOT NULL,
    event     TEXT NOT NULL,
    PRIMARY KEY (debate_id, seq)
);
CREATE SEQUENCE events_numbers;
ALTER TABLE syntheses ADD COLUMN section TEXT;
"#,
    // 5: approval gates.
    r#"
CREATE TABLE gates (
    debate_id    TEXT NOT NULL REFERENCES debates(id) ON DELETE CASCADE,
    gate         TEXT NOT NULL,
    point        TEXT NOT NULL,
    round        BIGINT NOT NULL,
    summary      TEXT NOT NULL,
    artifacts    TEXT NOT NULL,
    requested_at TEXT NOT NULL,
    decision     TEXT,
    decided_by   TEXT,
    reason       TEXT,
    decided_at   TEXT,
    -- The order requests came in (SQLite's rowid).
    entered      BIGINT GENERATED ALWAYS AS IDENTITY,
    PRIMARY KEY (debate_id, gate)
);
"#,
    // 6: the audit trail.
    r#"
CREATE TABLE audit (
    seq       BIGINT NOT NULL,
    debate_id TEXT NOT NULL REFERENCES debates(id) ON DELETE CASCADE,
    at        TEXT NOT NULL,
    kind      TEXT NOT NULL,
    round     BIGINT NOT NULL,
    phase     TEXT NOT NULL,
    seat      TEXT NOT NULL,
    attempt   BIGINT NOT NULL,
    provider  TEXT NOT NULL,
    model     TEXT NOT NULL,
    sha256    TEXT NOT NULL,
    size      BIGINT NOT NULL,
    body      BYTEA,
    PRIMARY KEY (debate_id, seq)
);
CREATE SEQUENCE audit_numbers;
"#,
    // 7: lessons, their search (stemmed, as SQLite's porter tokenizer), and preferences.
    r#"
CREATE TABLE lessons (
    id         BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    debate_id  TEXT NOT NULL,
    question   TEXT NOT NULL,
    lesson     TEXT NOT NULL,
    went       TEXT NOT NULL,
    advice     TEXT NOT NULL,
    confidence DOUBLE PRECISION NOT NULL,
    created_at TEXT NOT NULL,
    words      tsvector GENERATED ALWAYS AS
        (to_tsvector('english', question || ' ' || lesson || ' ' || advice)) STORED
);
CREATE INDEX lessons_words ON lessons USING GIN (words);
CREATE TABLE preferences (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"#,
    // 8: `moot bench` runs and each problem's result per arm.
    r#"
CREATE TABLE bench_runs (
    id         TEXT PRIMARY KEY,
    settings   TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE bench_results (
    run_id      TEXT NOT NULL REFERENCES bench_runs(id) ON DELETE CASCADE,
    problem     BIGINT NOT NULL,
    arm         TEXT NOT NULL,
    result      TEXT NOT NULL,
    PRIMARY KEY (run_id, problem, arm)
);
"#,
    // 9: a lesson's embedding and the model that made it.
    r#"
ALTER TABLE lessons ADD COLUMN embedding BYTEA;
ALTER TABLE lessons ADD COLUMN embedding_model TEXT;
"#,
    // 10: the hash chain of every row a debate's outcome depends on.
    r#"
CREATE TABLE chain (
    debate_id TEXT NOT NULL REFERENCES debates(id) ON DELETE CASCADE,
    n         BIGINT NOT NULL,
    facet     TEXT NOT NULL,
    row_key   TEXT NOT NULL,
    place     TEXT NOT NULL,
    content   TEXT NOT NULL,
    prev      TEXT NOT NULL,
    hash      TEXT NOT NULL,
    upgraded  BOOLEAN NOT NULL DEFAULT false,
    PRIMARY KEY (debate_id, n)
);
"#,
    // 11: SQLite's in-row chain links for turns; here every link is in `chain`, so only the
    // place of the entry before each, which names the row a gap left.
    r#"
ALTER TABLE chain ADD COLUMN prev_place TEXT;
"#,
    // 12: SQLite's in-row links for events and audit entries: nothing to add here.
    "",
    // 13: when the lease was taken (not renewed).
    r#"
ALTER TABLE debates ADD COLUMN lease_since BIGINT;
"#,
    // 14: a cancel asked of a debate another replica runs, until that replica takes it.
    r#"
CREATE TABLE cancellations (
    debate_id    TEXT PRIMARY KEY REFERENCES debates(id) ON DELETE CASCADE,
    requested_by TEXT NOT NULL,
    requested_at TEXT NOT NULL
);
"#,
    // 15: how long the holder's heartbeat lasts (its host's `takeover_seconds`).
    r#"
ALTER TABLE debates ADD COLUMN lease_ttl BIGINT;
"#,
];

/// Held by whoever changes the schema, until its transaction ends. One key for moot's
/// migrations: `moot` in ASCII.
const LOCK: &str = "SELECT pg_advisory_xact_lock(1836019572)";

/// Applies every step the database has not seen, each in its own transaction under an
/// advisory lock, so replicas starting together apply each step once.
pub(super) fn migrate(client: &mut Client) -> Result<(), MigrationError> {
    let known = MIGRATIONS.len() as i64;
    // Made under the lock too: `CREATE TABLE IF NOT EXISTS` from two connections at once can
    // fail on the catalog's unique index, and the version row could be inserted twice.
    let mut tx = client.transaction()?;
    tx.execute(LOCK, &[])?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS moot_schema (version BIGINT NOT NULL);
         INSERT INTO moot_schema (version)
             SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM moot_schema);",
    )?;
    tx.commit()?;
    loop {
        let mut tx = client.transaction()?;
        tx.execute(LOCK, &[])?;
        let current: i64 = tx.query_one("SELECT version FROM moot_schema", &[])?.get(0);
        if current > known {
            return Err(MigrationError::TooNew {
                found: current,
                known,
            });
        }
        if current == known {
            tx.commit()?;
            return Ok(());
        }
        let step = MIGRATIONS[current as usize];
        if !step.is_empty() {
            tx.batch_execute(step)?;
        }
        tx.execute("UPDATE moot_schema SET version = $1", &[&(current + 1)])?;
        tx.commit()?;
    }
}

/// Why the schema could not be brought up to date.
#[derive(Debug)]
pub(super) enum MigrationError {
    Postgres(postgres::Error),
    /// Written by a newer moot.
    TooNew {
        found: i64,
        known: i64,
    },
}

impl From<postgres::Error> for MigrationError {
    fn from(error: postgres::Error) -> Self {
        MigrationError::Postgres(error)
    }
}
