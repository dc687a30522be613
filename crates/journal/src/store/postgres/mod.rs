//! The journal on a PostgreSQL server (`postgres://…`), for several hosts sharing one (issue
//! 73): the same rows as the SQLite journal, written with the same values, so the same hash
//! chain holds over them. Calls go to a few connections, each on a thread of its own
//! (`pool`). Every write to a debate first locks that debate's row, so writers on several
//! hosts append to its chain one at a time; one that journals events tells every replica
//! listening (`listen`) as it commits.

/// A lease's heartbeat as SQL reads it (`lease_at`, or `d.lease_at` with a table's alias):
/// how many seconds before the server's clock it was stamped, a number `lease::on_this_clock`
/// turns into a time on this host's. Heartbeats are stamped with the server's clock
/// (`lease_at = server_clock!()`), so hosts whose clocks disagree agree on a heartbeat's age.
macro_rules! heartbeat {
    ($column:literal) => {
        concat!($column, " - ", server_clock!())
    };
}

/// The journal server's clock, in whole seconds since the epoch.
macro_rules! server_clock {
    () => {
        "CAST(floor(EXTRACT(EPOCH FROM now())) AS BIGINT)"
    };
}

mod append;
mod browse;
mod cancel;
mod copy;
mod lease;
mod lessons;
mod listen;
mod pool;
mod records;
mod schema;
mod tls;
mod values;

use super::StoreError;
use super::chain::{self, ChainCheck, ChainHead, Facet};
use super::journal::{json, redacted};
use super::lease::Lease;
use crate::debate::Named as _;
use crate::debate::{
    Confidence, Debate, DebateStatus, Event, Phase, Stage, Turn, TurnStatus, now_rfc3339,
};
use pool::{Connection, Job, Link, Pool, Tx, Write};
use rusqlite::types::{Value, ValueRef};
use std::collections::HashSet;
use std::sync::{Arc, Mutex, mpsc};
use values::value_at;

/// A handle on a journal in PostgreSQL; clones share its connections.
#[derive(Clone)]
pub struct PgJournal {
    pool: Pool,
    /// The debates whose lease this process took through this handle: a write to one whose
    /// row names another holder is refused (`LeaseLost`), so a replica taken for dead that
    /// still runs cannot write beside the one that took its debate over.
    held: Arc<Mutex<HashSet<String>>>,
    /// The URL as it may be shown: its password left out.
    shown: String,
}

impl std::fmt::Debug for PgJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgJournal")
            .field("url", &self.shown)
            .finish()
    }
}

/// What went wrong, in words that name the server but never its password.
fn failed(shown: &str, error: impl std::fmt::Display) -> StoreError {
    StoreError::Open {
        path: shown.to_string(),
        detail: crate::sanitize::redact(&error.to_string()).into_owned(),
    }
}

/// Whether this process took debate `id`'s lease through a handle sharing `held` (and has not
/// let it go).
fn held_here(held: &Mutex<HashSet<String>>, id: &str) -> bool {
    held.lock().unwrap_or_else(|e| e.into_inner()).contains(id)
}

/// `failed` for the client's own errors, with what the server said.
fn failed_pg(shown: &str, error: postgres::Error) -> StoreError {
    failed(shown, described(&error))
}

impl PgJournal {
    /// Connects to the journal at `url` and brings its schema up to date.
    pub fn connect(url: &str) -> Result<PgJournal, StoreError> {
        let shown = crate::sanitize::redact(url).into_owned();
        let opener = tls::opener(url, &shown)?;
        let name = shown.clone();
        let pool = Pool::open(opener, &shown, move |client| {
            schema::migrate(client).map_err(|e| match e {
                schema::MigrationError::TooNew { found, known } => StoreError::TooNew {
                    path: name.clone(),
                    found,
                    known,
                },
                schema::MigrationError::Postgres(e) => failed_pg(&name, e),
            })
        })?;
        Ok(PgJournal {
            pool,
            shown,
            held: Arc::default(),
        })
    }

    /// Whether this handle's connection to the server is encrypted (TLS).
    pub fn ssl_in_use(&self) -> Result<bool, StoreError> {
        let rows = self.rows(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            Vec::new(),
        )?;
        Ok(matches!(
            rows.first().and_then(|row| row.first()),
            Some(Value::Integer(1))
        ))
    }

    /// Runs `work` on a free connection and waits for what it returns.
    fn call<R: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<R, StoreError> + Send + 'static,
    ) -> Result<R, StoreError> {
        let (answer, answered) = mpsc::sync_channel(1);
        self.pool
            .send(Job::Run(Box::new(move |conn| {
                let _ = answer.send(work(conn));
            })))
            .map_err(|()| failed(&self.shown, "the connection's thread ended"))?;
        answered
            .recv()
            .map_err(|_| failed(&self.shown, "the connection's thread ended"))?
    }

    /// Runs `work` in a transaction holding debate `id`'s row lock, and commits it: with
    /// other debates' writes queued at the same moment, in one transaction (`pool::Job::Write`),
    /// so `work` may run a second time, alone, when that one does not commit.
    fn write<R: Send + 'static>(
        &self,
        id: &str,
        work: impl Fn(&mut Tx<'_>, &str) -> Result<R, StoreError> + Send + 'static,
    ) -> Result<R, StoreError> {
        let made: Arc<Mutex<Option<R>>> = Arc::default();
        let (answer, answered) = mpsc::sync_channel(1);
        let (debate, kept, held) = (id.to_string(), made.clone(), self.held.clone());
        let write = Write {
            debate: id.to_string(),
            work: Box::new(move |tx| {
                let holder = query(
                    tx,
                    "SELECT lease_pid, lease_host FROM debates WHERE id = ?1 FOR UPDATE",
                    &[Value::Text(debate.clone())],
                )?;
                // Whether this process holds the lease is asked now, under the row's lock,
                // not when the write was queued: one it gave up since (its debate ended, and
                // another replica may have taken the row) no longer fences its writes.
                if held_here(&held, &debate)
                    && let Some(holder) = holder.first()
                {
                    lease::still_mine(&debate, holder)?;
                }
                let out = work(tx, &debate)?;
                *kept.lock().unwrap_or_else(|e| e.into_inner()) = Some(out);
                Ok(())
            }),
            done: Box::new(move |ended| {
                let _ = answer.send(ended);
            }),
        };
        let gone = || failed(&self.shown, "the connection's thread ended");
        self.pool.send(Job::Write(write)).map_err(|()| gone())?;
        answered.recv().map_err(|_| gone())??;
        let out = made.lock().unwrap_or_else(|e| e.into_inner()).take();
        out.ok_or_else(gone)
    }

    pub fn create_debate(&self, debate: &Debate) -> Result<(), StoreError> {
        let values = [
            Value::Text(debate.id.clone()),
            Value::Text(redacted(&debate.question)),
            Value::Text(debate.protocol.clone()),
            Value::Text(debate.status.as_str().to_string()),
            Value::Text(redacted(&json(&debate.config)?)),
            Value::Text(json(&debate.seats)?),
            Value::Text(debate.created_at.clone()),
            Value::Text(debate.updated_at.clone()),
        ];
        let question = debate.question.clone();
        self.write(&debate.id, move |tx, id| {
            execute(
                tx,
                "INSERT INTO debates (id, question, protocol, status, config, seats, created_at,
                    updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                &values,
            )?;
            index(tx, id, "question", &question)?;
            append(tx, id, &chain::DEBATE, &[])
        })
    }

    pub fn set_status(
        &self,
        id: &str,
        status: DebateStatus,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        let error = error.map(str::to_string);
        self.write(id, move |tx, id| {
            update_status(tx, id, status, error.as_deref(), &now_rfc3339())
        })
    }

    /// Records where the debate stands (for `moot list`).
    pub fn set_stage(&self, id: &str, stage: Stage) -> Result<(), StoreError> {
        let values = [Value::Text(id.to_string()), Value::Text(json(&stage)?)];
        self.write(id, move |tx, _| {
            execute(tx, "UPDATE debates SET stage = ?2 WHERE id = ?1", &values).map(|_| ())
        })
    }

    pub fn turns(&self, id: &str) -> Result<Vec<Turn>, StoreError> {
        let rows = self.rows(
            "SELECT round, phase, seat, content, moves, data, confidence, tokens_in, tokens_out,
                    tokens_estimated, latency_ms, provider, model, status, note
             FROM turns WHERE debate_id = ?1 ORDER BY id",
            vec![Value::Text(id.to_string())],
        )?;
        rows.iter().map(|row| turn_of(row)).collect()
    }

    /// The debate's logged events after `seq` (0 for all), each with its place in the log.
    pub fn events_after(&self, id: &str, seq: i64) -> Result<Vec<(i64, Event)>, StoreError> {
        let rows = self.rows(
            "SELECT seq, event FROM events WHERE debate_id = ?1 AND seq > ?2 ORDER BY seq",
            vec![Value::Text(id.to_string()), Value::Integer(seq)],
        )?;
        rows.into_iter()
            .map(|row| match row.as_slice() {
                [Value::Integer(seq), Value::Text(text)] => Ok((
                    *seq,
                    serde_json::from_str(text).map_err(|e| StoreError::Data(e.to_string()))?,
                )),
                other => Err(StoreError::Data(format!("an event row reads {other:?}"))),
            })
            .collect()
    }

    pub fn events(&self, id: &str) -> Result<Vec<Event>, StoreError> {
        Ok(self
            .events_after(id, 0)?
            .into_iter()
            .map(|(_, event)| event)
            .collect())
    }

    /// The place in the log of debate `id`'s latest event (0 with none).
    pub fn last_event_seq(&self, id: &str) -> Result<i64, StoreError> {
        let rows = self.rows(
            "SELECT COALESCE(MAX(seq), 0) FROM events WHERE debate_id = ?1",
            vec![Value::Text(id.to_string())],
        )?;
        match rows.first().and_then(|row| row.first()) {
            Some(Value::Integer(seq)) => Ok(*seq),
            _ => Ok(0),
        }
    }

    /// The debate with this id, or the one debate whose id starts with it (case-insensitive).
    pub fn debate(&self, id_or_prefix: &str) -> Result<Debate, StoreError> {
        let wanted = id_or_prefix.trim().to_string();
        let escaped = wanted
            .replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_");
        let rows = self.rows(
            // The confidence comes from the chained record, as in SQLite.
            concat!(
                "SELECT id, question, protocol, status, config, seats, created_at, updated_at,
                    finished_at,
                    (SELECT s.confidence FROM syntheses s WHERE s.debate_id = debates.id), error,
                    stage, lease_pid, lease_host, ",
                heartbeat!("lease_at"),
                ", lease_since, lease_ttl
             FROM debates WHERE lower(id) = lower(?1) OR id ILIKE ?2 OR id ILIKE ?3
             ORDER BY (lower(id) = lower(?1)) DESC LIMIT 6"
            ),
            vec![
                Value::Text(wanted.clone()),
                Value::Text(format!("{escaped}%")),
                Value::Text(format!("DEB-{escaped}%")),
            ],
        )?;
        let mut found = rows
            .iter()
            .map(|row| debate_of(row))
            .collect::<Result<Vec<_>, _>>()?;
        match found.len() {
            0 => Err(StoreError::NotFound(wanted)),
            1 => Ok(found.remove(0)),
            _ if found[0].id.eq_ignore_ascii_case(&wanted) => Ok(found.remove(0)),
            _ => Err(StoreError::Ambiguous {
                prefix: wanted,
                candidates: found.into_iter().map(|d| d.id).collect(),
            }),
        }
    }

    /// Where debate `id`'s chain ends now.
    pub fn chain_head(&self, id: &str) -> Result<Option<ChainHead>, StoreError> {
        let id = id.to_string();
        let shown = self.shown.clone();
        self.call(move |conn| {
            let mut tx = conn.begin().map_err(|e| failed_pg(&shown, e))?;
            head(&mut tx, &id)
        })
    }

    /// Checks debate `id`'s chain against its rows, as `audit --verify` does in SQLite.
    pub fn check_chain(&self, id: &str) -> Result<ChainCheck, StoreError> {
        let id = id.to_string();
        let shown = self.shown.clone();
        self.call(move |conn| {
            let mut tx = conn.begin().map_err(|e| failed_pg(&shown, e))?;
            let entries = query(
                &mut tx,
                "SELECT n, facet, row_key, place, content, prev, hash, upgraded, prev_place
                 FROM chain WHERE debate_id = ?1 ORDER BY n",
                &[Value::Text(id.clone())],
            )?
            .into_iter()
            .map(|row| chain::StoredEntry::from_values(&row))
            .collect::<Result<Vec<_>, _>>()?;
            let mut rows = Vec::new();
            for &facet in chain::facets() {
                rows.push((facet, facet_rows(&mut tx, &id, facet)?));
            }
            Ok(chain::check_entries(&id, entries, rows))
        })
    }

    /// Every row `sql` returns, each as its values, in a transaction of its own.
    fn rows(
        &self,
        sql: impl Into<String>,
        params: Vec<Value>,
    ) -> Result<Vec<Vec<Value>>, StoreError> {
        let (sql, shown) = (sql.into(), self.shown.clone());
        self.call(move |conn| {
            let mut tx = conn.begin().map_err(|e| failed_pg(&shown, e))?;
            let rows = query(&mut tx, &sql, &params)?;
            // A statement that writes (`… RETURNING`) keeps what it wrote.
            tx.commit().map_err(|e| failed_pg(&shown, e))?;
            Ok(rows)
        })
    }
}

/// Sets debate `id`'s status (and error) as of `now`, as SQLite's journal does: a completed or
/// cancelled debate stands nowhere any more; one that failed or paused keeps where it stopped.
fn update_status(
    tx: &mut Tx<'_>,
    id: &str,
    status: DebateStatus,
    error: Option<&str>,
    now: &str,
) -> Result<(), StoreError> {
    // A stream following the debate elsewhere ends when it has ended.
    tx.notify(id);
    execute(
        tx,
        "UPDATE debates SET status = ?2, updated_at = ?3, finished_at = ?4, error = ?5,
         stage = CASE WHEN ?2 IN ('completed', 'cancelled') THEN NULL ELSE stage END
         WHERE id = ?1",
        &[
            Value::Text(id.to_string()),
            Value::Text(status.as_str().to_string()),
            Value::Text(now.to_string()),
            if status.has_ended() {
                Value::Text(now.to_string())
            } else {
                Value::Null
            },
            error.map_or(Value::Null, |e| Value::Text(e.to_string())),
        ],
    )
    .map(|_| ())
}

/// A PostgreSQL error inside a transaction, named without the URL the caller shows.
fn pg(error: postgres::Error) -> StoreError {
    StoreError::Data(described(&error))
}

/// What the server said (its message, detail and hint), or what failed on the way to it:
/// the client's own words for a server's error are only "db error".
fn described(error: &postgres::Error) -> String {
    let said = match error.as_db_error() {
        Some(db) => {
            let mut said = format!("PostgreSQL: {}", db.message());
            for extra in [db.detail(), db.hint()].into_iter().flatten() {
                said.push_str(&format!(" ({extra})"));
            }
            said
        }
        None => {
            let mut said = error.to_string();
            let mut source = std::error::Error::source(error);
            while let Some(cause) = source {
                said.push_str(&format!(": {cause}"));
                source = cause.source();
            }
            said
        }
    };
    crate::sanitize::redact(&said).into_owned()
}

fn execute(tx: &mut Tx<'_>, sql: &str, params: &[Value]) -> Result<u64, StoreError> {
    tx.execute(sql, params).map_err(pg)
}

fn query(tx: &mut Tx<'_>, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, StoreError> {
    let rows = tx.query(sql, params).map_err(pg)?;
    rows.iter()
        .map(|row| {
            (0..row.len())
                .map(|i| value_at(row, i).map_err(pg))
                .collect()
        })
        .collect()
}

/// Adds searchable text, free of escapes so that a printed snippet never carries one.
fn index(tx: &mut Tx<'_>, id: &str, kind: &str, body: &str) -> Result<(), StoreError> {
    execute(
        tx,
        "INSERT INTO search_index (body, debate_id, kind) VALUES (?1, ?2, ?3)",
        &[
            Value::Text(crate::sanitize::clean(body)),
            Value::Text(id.to_string()),
            Value::Text(kind.to_string()),
        ],
    )
    .map(|_| ())
}

/// A row's values as the chain reads them.
fn canonical(values: &[Value]) -> Vec<serde_json::Value> {
    values
        .iter()
        .map(|v| chain::json_value(ValueRef::from(v)))
        .collect()
}

/// The canonical content of the row of `facet` at `key` in debate `id`, if it is there.
fn content(
    tx: &mut Tx<'_>,
    id: &str,
    facet: &Facet,
    key: &[serde_json::Value],
) -> Result<Option<Vec<serde_json::Value>>, StoreError> {
    let mut params = vec![Value::Text(id.to_string())];
    params.extend(key.iter().map(chain::sql_value));
    let rows = query(tx, &facet.select(facet.columns, true), &params)?;
    Ok(rows.first().map(|row| canonical(row)))
}

/// Every row of `facet` in debate `id`: its key and canonical content.
fn facet_rows(
    tx: &mut Tx<'_>,
    id: &str,
    facet: &Facet,
) -> Result<Vec<chain::KeyedRow>, StoreError> {
    let columns: Vec<&str> = facet.key.iter().chain(facet.columns).copied().collect();
    let width = facet.key.len();
    Ok(query(
        tx,
        &facet.select(&columns, false),
        &[Value::Text(id.to_string())],
    )?
    .into_iter()
    .map(|row| {
        let values = canonical(&row);
        (values[..width].to_vec(), values[width..].to_vec())
    })
    .collect())
}

/// Where the debate's chain ends: read once per transaction (after the row's lock, in a
/// statement of its own, since one that waited for the lock would see the chain as it was
/// when it began to wait), then moved on by each entry the transaction appends.
fn head(tx: &mut Tx<'_>, id: &str) -> Result<Option<ChainHead>, StoreError> {
    if let Some(known) = tx.heads.get(id) {
        return Ok(known.clone());
    }
    let rows = query(
        tx,
        "SELECT n, hash, place FROM chain WHERE debate_id = ?1 ORDER BY n DESC LIMIT 1",
        &[Value::Text(id.to_string())],
    )?;
    let known = rows.first().and_then(|row| head_of(row));
    tx.heads.insert(id.to_string(), known.clone());
    Ok(known)
}

/// A chain's head from `n, hash, place` (all null: a debate with no chain yet).
fn head_of(row: &[Value]) -> Option<ChainHead> {
    match row {
        [Value::Integer(n), Value::Text(hash), Value::Text(place)] => Some(ChainHead {
            entries: *n,
            hash: hash.clone(),
            place: place.clone(),
        }),
        _ => None,
    }
}

/// Appends the row of `facet` at `key`, read back as written, to debate `id`'s chain.
fn append(
    tx: &mut Tx<'_>,
    id: &str,
    facet: &Facet,
    key: &[serde_json::Value],
) -> Result<(), StoreError> {
    let content = content(tx, id, facet, key)?;
    append_content(tx, id, facet, key, content)
}

/// `append` for a row whose canonical content is known: as its insert returned it (the
/// values the table holds, as a read would give them), or `None` for a row removed.
fn append_content(
    tx: &mut Tx<'_>,
    id: &str,
    facet: &Facet,
    key: &[serde_json::Value],
    content: Option<Vec<serde_json::Value>>,
) -> Result<(), StoreError> {
    let (place, hash) = match content {
        Some(content) => (
            facet.place(key, Some(&content)),
            chain::content_hash(&content),
        ),
        None => (facet.place(key, None), chain::REMOVED.to_string()),
    };
    let (n, previous, previous_place) = match head(tx, id)? {
        Some(head) => (head.entries + 1, head.hash, Some(head.place)),
        None => (1, chain::genesis(id), None),
    };
    let key = serde_json::to_string(key).unwrap_or_default();
    let link = chain::link(&previous, n, facet.name, &key, &place, &hash, false);
    tx.heads.insert(
        id.to_string(),
        Some(ChainHead {
            entries: n,
            hash: link.clone(),
            place: place.clone(),
        }),
    );
    tx.link(Link {
        debate: id.to_string(),
        n,
        facet: facet.name.to_string(),
        key,
        place,
        content: hash,
        previous,
        hash: link,
        previous_place,
    });
    Ok(())
}

fn text(value: &Value) -> Result<String, StoreError> {
    match value {
        Value::Text(text) => Ok(text.clone()),
        other => Err(StoreError::Data(format!("expected text, read {other:?}"))),
    }
}

fn optional_text(value: &Value) -> Result<Option<String>, StoreError> {
    match value {
        Value::Null => Ok(None),
        other => text(other).map(Some),
    }
}

fn integer(value: &Value) -> Result<i64, StoreError> {
    match value {
        Value::Integer(i) => Ok(*i),
        other => Err(StoreError::Data(format!(
            "expected a number, read {other:?}"
        ))),
    }
}

fn optional_integer(value: &Value) -> Result<Option<i64>, StoreError> {
    match value {
        Value::Null => Ok(None),
        other => integer(other).map(Some),
    }
}

fn parsed<T: serde::de::DeserializeOwned>(value: &Value) -> Result<T, StoreError> {
    serde_json::from_str(&text(value)?).map_err(|e| StoreError::Data(e.to_string()))
}

/// A turn from its columns (as `turns` selects them).
fn turn_of(row: &[Value]) -> Result<Turn, StoreError> {
    let [
        round,
        phase,
        seat,
        content,
        moves,
        data,
        confidence,
        tokens_in,
        tokens_out,
        estimated,
        latency,
        provider,
        model,
        status,
        note,
    ] = row
    else {
        return Err(StoreError::Data(format!(
            "a turn row has {} columns",
            row.len()
        )));
    };
    let phase = text(phase)?;
    let status = text(status)?;
    Ok(Turn {
        round: u32::try_from(integer(round)?).map_err(|e| StoreError::Data(e.to_string()))?,
        phase: Phase::parse(&phase)
            .ok_or_else(|| StoreError::Data(format!("unknown phase {phase:?}")))?,
        seat: text(seat)?,
        content: text(content)?,
        moves: parsed(moves)?,
        data: match data {
            Value::Null => None,
            data => Some(parsed(data)?),
        },
        confidence: match confidence {
            Value::Real(f) => Some(*f),
            _ => None,
        },
        tokens_in: integer(tokens_in)? as u64,
        tokens_out: integer(tokens_out)? as u64,
        tokens_estimated: integer(estimated)? != 0,
        latency_ms: integer(latency)? as u64,
        provider: text(provider)?,
        model: text(model)?,
        status: TurnStatus::parse(&status)
            .ok_or_else(|| StoreError::Data(format!("unknown turn status {status:?}")))?,
        note: optional_text(note)?,
    })
}

/// A debate from its row (as `debate` selects it).
fn debate_of(row: &[Value]) -> Result<Debate, StoreError> {
    let [
        id,
        question,
        protocol,
        status,
        config,
        seats,
        created_at,
        updated_at,
        finished_at,
        confidence,
        error,
        stage,
        lease_pid,
        lease_host,
        lease_at,
        lease_since,
        lease_ttl,
    ] = row
    else {
        return Err(StoreError::Data(format!(
            "a debate row has {} columns",
            row.len()
        )));
    };
    let status = text(status)?;
    let lease = Lease {
        pid: optional_integer(lease_pid)?,
        host: optional_text(lease_host)?,
        at: lease::on_this_clock(optional_integer(lease_at)?),
        since: optional_integer(lease_since)?,
        ttl: optional_integer(lease_ttl)?,
    };
    Ok(Debate {
        id: text(id)?,
        question: text(question)?,
        protocol: text(protocol)?,
        status: lease.status(
            DebateStatus::parse(&status)
                .ok_or_else(|| StoreError::Data(format!("unknown status {status:?}")))?,
        ),
        config: parsed(config)?,
        seats: parsed(seats)?,
        created_at: text(created_at)?,
        updated_at: text(updated_at)?,
        finished_at: optional_text(finished_at)?,
        confidence: optional_text(confidence)?
            .as_deref()
            .and_then(Confidence::parse),
        error: optional_text(error)?,
        stage: optional_text(stage)?.and_then(|s| serde_json::from_str(&s).ok()),
    })
}
