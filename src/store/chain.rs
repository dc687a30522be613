//! The journal's hash chain: every row a debate's outcome depends on is appended to that
//! debate's chain in the transaction that writes it, as in a transparency log. Each entry
//! carries the SHA-256 of the row's canonical content and the previous entry's hash, so a
//! quiet edit, a deleted, added or reordered row, or a gap in the chain shows when it is
//! checked.

use super::audit::sha256_hex;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OptionalExtension, Transaction, params};
use serde::Serialize;
use serde_json::Value;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

/// One kind of chained row: a table (or a part of a row that is written on its own, like a
/// gate's decision) and the columns its canonical content is made of.
pub(super) struct Facet {
    /// The facet's name in the chain: `turn`, `event`, `gate decision`.
    pub name: &'static str,
    table: &'static str,
    /// The column naming the debate (`debate_id`, or `id` for the debate row itself).
    owner: &'static str,
    /// The columns that tell one row of the debate from another.
    key: &'static [&'static str],
    /// The columns whose values are chained.
    columns: &'static [&'static str],
    /// A condition a row must meet to carry this facet (a gate has a decision only once one
    /// was made).
    present: Option<&'static str>,
}

pub(super) const DEBATE: Facet = Facet {
    name: "debate",
    table: "debates",
    owner: "id",
    key: &[],
    columns: &["question", "protocol", "config", "seats", "created_at"],
    present: None,
};

pub(super) const TURN: Facet = Facet {
    name: "turn",
    table: "turns",
    owner: "debate_id",
    key: &["id"],
    columns: &[
        "round",
        "phase",
        "seat",
        "content",
        "moves",
        "data",
        "confidence",
        "tokens_in",
        "tokens_out",
        "tokens_estimated",
        "latency_ms",
        "provider",
        "model",
        "status",
        "note",
        "created_at",
    ],
    present: None,
};

pub(super) const EVENT: Facet = Facet {
    name: "event",
    table: "events",
    owner: "debate_id",
    key: &["seq"],
    columns: &["kind", "event"],
    present: None,
};

pub(super) const ANSWER: Facet = Facet {
    name: "answer",
    table: "checkpoints",
    owner: "debate_id",
    key: &["round", "kind"],
    columns: &["decision", "guidance", "answered_by", "created_at"],
    present: None,
};

pub(super) const GATE_REQUEST: Facet = Facet {
    name: "gate request",
    table: "gates",
    owner: "debate_id",
    key: &["gate"],
    columns: &["point", "round", "summary", "artifacts", "requested_at"],
    present: None,
};

pub(super) const GATE_DECISION: Facet = Facet {
    name: "gate decision",
    table: "gates",
    owner: "debate_id",
    key: &["gate"],
    columns: &["decision", "decided_by", "reason", "decided_at"],
    present: Some("decision IS NOT NULL"),
};

pub(super) const AUDIT: Facet = Facet {
    name: "audit entry",
    table: "audit",
    owner: "debate_id",
    key: &["seq"],
    // The body is checked against `sha256` on its own (it may be left out: `audit = false`).
    columns: &[
        "at", "kind", "round", "phase", "seat", "attempt", "provider", "model", "sha256", "size",
    ],
    present: None,
};

pub(super) const RECORD: Facet = Facet {
    name: "record",
    table: "syntheses",
    owner: "debate_id",
    key: &[],
    columns: &[
        "markdown",
        "data",
        "confidence",
        "path",
        "follow_up_path",
        "section",
        "created_at",
    ],
    present: None,
};

pub(super) const LESSON: Facet = Facet {
    name: "lesson",
    table: "lessons",
    owner: "debate_id",
    key: &["id"],
    // Its embedding is an index for matching, made after the fact, not what the lesson says.
    columns: &[
        "question",
        "lesson",
        "went",
        "advice",
        "confidence",
        "created_at",
    ],
    present: None,
};

/// Every facet, in the order a debate chained at upgrade takes them.
const FACETS: &[&Facet] = &[
    &DEBATE,
    &TURN,
    &ANSWER,
    &GATE_REQUEST,
    &GATE_DECISION,
    &EVENT,
    &AUDIT,
    &RECORD,
    &LESSON,
];

/// The content hash of a row that was removed on purpose (a failed turn a resume retries, a
/// lesson `moot lessons rm` took away): the row must then be absent.
const REMOVED: &str = "removed";

impl Facet {
    /// `SELECT columns` of the debate's rows carrying this facet; `keyed` narrows it to the
    /// one row whose key columns are bound as ?2, ?3, ….
    fn select(&self, columns: &[&str], keyed: bool) -> String {
        let mut sql = format!(
            "SELECT {} FROM {} WHERE {} = ?1",
            columns.join(", "),
            self.table,
            self.owner
        );
        if keyed {
            for (i, key) in self.key.iter().enumerate() {
                sql.push_str(&format!(" AND {key} = ?{}", i + 2));
            }
        }
        if let Some(present) = self.present {
            sql.push_str(&format!(" AND {present}"));
        }
        sql
    }

    /// The canonical content of one row, `None` when it is not there.
    fn content(
        &self,
        connection: &Connection,
        debate: &str,
        key: &[Value],
    ) -> rusqlite::Result<Option<Vec<Value>>> {
        let sql = self.select(self.columns, true);
        let mut statement = connection.prepare_cached(&sql)?;
        let mut bound: Vec<rusqlite::types::Value> = vec![debate.to_string().into()];
        bound.extend(key.iter().map(sql_value));
        statement
            .query_row(rusqlite::params_from_iter(bound), |row| {
                (0..self.columns.len())
                    .map(|i| row.get_ref(i).map(json_value))
                    .collect()
            })
            .optional()
    }

    /// Every row of the debate carrying this facet: its key and canonical content.
    fn rows(
        &self,
        connection: &Connection,
        debate: &str,
    ) -> rusqlite::Result<Vec<(Vec<Value>, Vec<Value>)>> {
        let columns: Vec<&str> = self.key.iter().chain(self.columns).copied().collect();
        let mut statement = connection.prepare(&self.select(&columns, false))?;
        let width = self.key.len();
        let rows = statement.query_map(params![debate], |row| {
            let values: Vec<Value> = (0..width + self.columns.len())
                .map(|i| row.get_ref(i).map(json_value))
                .collect::<rusqlite::Result<_>>()?;
            Ok((values[..width].to_vec(), values[width..].to_vec()))
        })?;
        rows.collect()
    }

    /// Where a row stands, as a person names it: the table, then round, phase and seat where
    /// the row has them.
    fn place(&self, key: &[Value], content: Option<&[Value]>) -> String {
        let text = |value: &Value| match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let column = |name: &str| -> Option<String> {
            let index = self.columns.iter().position(|c| *c == name)?;
            content.and_then(|c| c.get(index)).map(text)
        };
        let keyed = key.iter().map(text).collect::<Vec<_>>().join(" ");
        match self.name {
            "turn" => format!(
                "turns: round {} {} {}",
                column("round").unwrap_or_default(),
                column("phase").unwrap_or_default(),
                column("seat").unwrap_or_default()
            ),
            "audit entry" => format!(
                "audit: #{keyed} {} round {} {} {} attempt {}",
                column("kind").unwrap_or_default(),
                column("round").unwrap_or_default(),
                column("phase").unwrap_or_default(),
                column("seat").unwrap_or_default(),
                column("attempt").unwrap_or_default()
            ),
            "event" => {
                let event: Option<Value> =
                    column("event").and_then(|e| serde_json::from_str(&e).ok());
                let field = |name: &str| {
                    event
                        .as_ref()
                        .and_then(|e| e.get(name))
                        .map(text)
                        .map(|v| format!(" {name} {v}"))
                        .unwrap_or_default()
                };
                format!(
                    "events: #{keyed} {}{}{}{}",
                    column("kind").unwrap_or_default(),
                    field("round"),
                    field("phase"),
                    field("seat")
                )
            }
            "answer" => format!("checkpoints: round {keyed}"),
            "gate request" => format!("gates: {keyed} request"),
            "gate decision" => format!("gates: {keyed} decision"),
            "record" => "syntheses: the stored record".to_string(),
            "lesson" => format!("lessons: L{keyed}"),
            _ => "debates: the question and settings".to_string(),
        }
    }
}

fn json_value(value: ValueRef<'_>) -> Value {
    match value {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::from(i),
        ValueRef::Real(f) => serde_json::Number::from_f64(f)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        ValueRef::Text(bytes) => Value::String(String::from_utf8_lossy(bytes).into_owned()),
        ValueRef::Blob(bytes) => Value::String(bytes.iter().map(|b| format!("{b:02x}")).collect()),
    }
}

fn sql_value(value: &Value) -> rusqlite::types::Value {
    match value {
        Value::Null => rusqlite::types::Value::Null,
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.into(),
            None => n.as_f64().unwrap_or_default().into(),
        },
        Value::String(s) => s.clone().into(),
        other => other.to_string().into(),
    }
}

fn content_hash(content: &[Value]) -> String {
    sha256_hex(&serde_json::to_string(content).unwrap_or_default())
}

/// The hash a chain starts from: bound to the debate, so no entry can be moved to another.
fn genesis(debate: &str) -> String {
    sha256_hex(&format!("moot journal chain\n{debate}"))
}

/// An entry's own hash, over everything it says and the entry before it.
fn link(
    previous: &str,
    n: i64,
    facet: &str,
    key: &str,
    place: &str,
    content: &str,
    upgraded: bool,
) -> String {
    sha256_hex(&format!(
        "{previous}\n{n}\n{facet}\n{key}\n{place}\n{content}\n{}",
        u8::from(upgraded)
    ))
}

/// The chain heads one connection knows, as of a `PRAGMA data_version`: valid while no other
/// connection has committed since, so an append needs no lookup of the head.
#[derive(Debug, Default)]
pub(super) struct KnownHeads {
    version: Option<i64>,
    heads: HashMap<String, ChainHead>,
}

impl KnownHeads {
    /// Forgets every head, as after a write that did not commit or a debate deleted.
    pub(super) fn forget(&mut self) {
        *self = KnownHeads::default();
    }
}

/// A write transaction that appends to chains: the transaction, and the heads it may take as
/// known. The heads it moves become known only when it commits.
pub(super) struct Writer<'c> {
    tx: Transaction<'c>,
    heads: RefCell<HashMap<String, ChainHead>>,
    version: i64,
}

impl<'c> Writer<'c> {
    /// Wraps an immediate transaction (the write lock is held, so no other connection can
    /// move a head until it ends), keeping `known` heads if nobody else committed since.
    pub(super) fn begin(tx: Transaction<'c>, known: &mut KnownHeads) -> rusqlite::Result<Self> {
        let version: i64 = tx
            .prepare_cached("PRAGMA data_version")?
            .query_row([], |row| row.get(0))?;
        let heads = if known.version == Some(version) {
            std::mem::take(&mut known.heads)
        } else {
            HashMap::new()
        };
        known.forget();
        Ok(Writer {
            tx,
            heads: RefCell::new(heads),
            version,
        })
    }

    /// Appends an entry (not at upgrade) on the head this writer knows.
    fn push(
        &self,
        debate: &str,
        facet: &str,
        key: &[Value],
        place: &str,
        content: &str,
    ) -> rusqlite::Result<()> {
        push(
            self,
            Some(&self.heads),
            debate,
            facet,
            key,
            place,
            content,
            false,
        )
    }

    /// Commits, and only then makes the heads it moved known.
    pub(super) fn commit(self, known: &mut KnownHeads) -> rusqlite::Result<()> {
        self.tx.commit()?;
        known.version = Some(self.version);
        known.heads = self.heads.into_inner();
        Ok(())
    }
}

impl<'c> std::ops::Deref for Writer<'c> {
    type Target = Transaction<'c>;
    fn deref(&self) -> &Transaction<'c> {
        &self.tx
    }
}

/// Where a debate's chain ends: how many entries, and the last one's hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChainHead {
    pub entries: i64,
    pub hash: String,
}

pub(super) fn head(connection: &Connection, debate: &str) -> rusqlite::Result<Option<ChainHead>> {
    connection
        // A descending seek on the primary key: constant time however long the chain. (SQLite
        // prepares a query on part of this key again whenever the table has changed, so a
        // writer takes the head from `KnownHeads` instead.)
        .prepare_cached("SELECT n, hash FROM chain WHERE debate_id = ?1 ORDER BY n DESC LIMIT 1")?
        .query_row(params![debate], |row| {
            Ok(ChainHead {
                entries: row.get(0)?,
                hash: row.get(1)?,
            })
        })
        .optional()
}

/// The hash of the entry at position `n` of a debate's chain.
pub(super) fn entry_hash(
    connection: &Connection,
    debate: &str,
    n: i64,
) -> rusqlite::Result<Option<String>> {
    connection
        .prepare_cached("SELECT hash FROM chain WHERE debate_id = ?1 AND n = ?2")?
        .query_row(params![debate, n], |row| row.get(0))
        .optional()
}

/// Appends the row of `facet` at `key` (read back as written, so the content chained now is
/// exactly what a check reads later) to the debate's chain. Call inside the writing
/// transaction.
pub(super) fn append(
    writer: &Writer<'_>,
    debate: &str,
    facet: &Facet,
    key: &[Value],
) -> rusqlite::Result<()> {
    append_as(writer, Some(&writer.heads), debate, facet, key, false)
}

/// Appends a row just written with `values` (in the order of the facet's columns, as they
/// were bound): the same as `append` without reading the row back. A value whose column
/// would store it differently shows at the next check, which reads the row.
pub(super) fn append_written(
    writer: &Writer<'_>,
    debate: &str,
    facet: &Facet,
    key: &[Value],
    values: &[rusqlite::types::Value],
) -> rusqlite::Result<()> {
    let content: Vec<Value> = values
        .iter()
        .map(|v| json_value(ValueRef::from(v)))
        .collect();
    let place = facet.place(key, Some(&content));
    writer.push(debate, facet.name, key, &place, &content_hash(&content))
}

fn append_as(
    connection: &Connection,
    heads: Option<&RefCell<HashMap<String, ChainHead>>>,
    debate: &str,
    facet: &Facet,
    key: &[Value],
    upgraded: bool,
) -> rusqlite::Result<()> {
    let content = facet.content(connection, debate, key)?;
    let (place, hash) = match &content {
        Some(content) => (facet.place(key, Some(content)), content_hash(content)),
        None => (facet.place(key, None), REMOVED.to_string()),
    };
    push(
        connection, heads, debate, facet.name, key, &place, &hash, upgraded,
    )
}

/// Records that the row of `facet` at `key` was removed on purpose; call after deleting it.
pub(super) fn remove(
    writer: &Writer<'_>,
    debate: &str,
    facet: &Facet,
    key: &[Value],
    place: Option<&str>,
) -> rusqlite::Result<()> {
    let place = place
        .map(str::to_string)
        .unwrap_or_else(|| facet.place(key, None));
    writer.push(debate, facet.name, key, &place, REMOVED)
}

#[allow(clippy::too_many_arguments)]
fn push(
    connection: &Connection,
    heads: Option<&RefCell<HashMap<String, ChainHead>>>,
    debate: &str,
    facet: &str,
    key: &[Value],
    place: &str,
    content: &str,
    upgraded: bool,
) -> rusqlite::Result<()> {
    let key = serde_json::to_string(key).unwrap_or_default();
    let known = heads.and_then(|heads| heads.borrow().get(debate).cloned());
    let (n, previous) = match known.map_or_else(|| head(connection, debate), |h| Ok(Some(h)))? {
        Some(head) => (head.entries + 1, head.hash),
        None => (1, genesis(debate)),
    };
    let hash = link(&previous, n, facet, &key, place, content, upgraded);
    connection
        .prepare_cached(
            "INSERT INTO chain (debate_id, n, facet, row_key, place, content, prev, hash, upgraded)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )?
        .execute(params![
            debate, n, facet, key, place, content, previous, hash, upgraded
        ])?;
    if let Some(heads) = heads {
        heads
            .borrow_mut()
            .insert(debate.to_string(), ChainHead { entries: n, hash });
    }
    Ok(())
}

/// Chains every row of a debate journaled before the chain existed, facet by facet in table
/// order (the order they were written in is not known), marked as chained at upgrade.
pub(super) fn chain_at_upgrade(connection: &Connection, debate: &str) -> rusqlite::Result<()> {
    for facet in FACETS {
        for (key, _) in facet.rows(connection, debate)? {
            append_as(connection, None, debate, facet, &key, true)?;
        }
    }
    Ok(())
}

/// What checking a debate's chain found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChainCheck {
    /// Entries in the chain.
    pub entries: i64,
    /// The last entry's hash (the chain head), when there is one.
    pub head: Option<String>,
    /// Entries made when a journal from before the chain was upgraded.
    pub upgraded: i64,
    /// The first row (in chain order) that no longer matches, and how; none when all hold.
    pub problem: Option<String>,
}

impl ChainCheck {
    pub fn holds(&self) -> bool {
        self.problem.is_none()
    }
}

struct Entry {
    n: i64,
    facet: String,
    key: String,
    place: String,
    content: String,
}

/// Checks a debate's chain: each entry links to the one before it with no gap, and every
/// chained row in the journal reads as it was chained — no row changed, deleted or added.
pub(super) fn check(connection: &Connection, debate: &str) -> rusqlite::Result<ChainCheck> {
    let mut statement = connection.prepare(
        "SELECT n, facet, row_key, place, content, prev, hash, upgraded FROM chain
         WHERE debate_id = ?1 ORDER BY n",
    )?;
    let rows = statement.query_map(params![debate], |row| {
        Ok((
            Entry {
                n: row.get(0)?,
                facet: row.get(1)?,
                key: row.get(2)?,
                place: row.get(3)?,
                content: row.get(4)?,
            },
            row.get::<_, String>(5)?,
            row.get::<_, String>(6)?,
            row.get::<_, bool>(7)?,
        ))
    })?;
    let mut entries = Vec::new();
    // Problems found, ranked by where in the chain they stand (rows outside it last).
    let mut problems: Vec<(i64, String)> = Vec::new();
    let mut previous = genesis(debate);
    let mut head = None;
    let mut upgraded = 0;
    let mut broken = false;
    for row in rows {
        let (entry, prev, hash, was_upgraded) = row?;
        upgraded += i64::from(was_upgraded);
        let expected = entries.len() as i64 + 1;
        if !broken {
            if entry.n != expected {
                problems.push((
                    expected,
                    format!(
                        "the chain has a gap: entry {expected} is missing (the next is {})",
                        entry.n
                    ),
                ));
                broken = true;
            } else if prev != previous {
                problems.push((
                    entry.n,
                    format!(
                        "chain entry {} ({}) does not follow the entry before it",
                        entry.n, entry.place
                    ),
                ));
                broken = true;
            } else if link(
                &prev,
                entry.n,
                &entry.facet,
                &entry.key,
                &entry.place,
                &entry.content,
                was_upgraded,
            ) != hash
            {
                problems.push((
                    entry.n,
                    format!("chain entry {} ({}) was altered", entry.n, entry.place),
                ));
                broken = true;
            }
        }
        previous = hash.clone();
        head = Some(hash);
        entries.push(entry);
    }
    // The latest entry of each row is what the row must read now.
    let mut latest: BTreeMap<(String, String), &Entry> = BTreeMap::new();
    for entry in &entries {
        latest.insert((entry.facet.clone(), entry.key.clone()), entry);
    }
    for facet in FACETS {
        for (key, content) in facet.rows(connection, debate)? {
            let key_text = serde_json::to_string(&key).unwrap_or_default();
            let place = facet.place(&key, Some(&content));
            match latest.remove(&(facet.name.to_string(), key_text)) {
                None => problems.push((
                    i64::MAX,
                    format!("{place} is in the journal but was never chained (added afterwards)"),
                )),
                Some(entry) if entry.content == REMOVED => problems.push((
                    entry.n,
                    format!("{place} was removed (chain entry {}) but is back", entry.n),
                )),
                Some(entry) if entry.content != content_hash(&content) => problems.push((
                    entry.n,
                    format!(
                        "{place} no longer matches what was chained (entry {})",
                        entry.n
                    ),
                )),
                Some(_) => {}
            }
        }
    }
    for entry in latest.values().filter(|e| e.content != REMOVED) {
        problems.push((
            entry.n,
            format!(
                "{} is missing from the journal (chained as entry {}; deleted afterwards)",
                entry.place, entry.n
            ),
        ));
    }
    problems.sort_by_key(|(n, _)| *n);
    Ok(ChainCheck {
        entries: entries.len() as i64,
        head,
        upgraded,
        problem: problems.into_iter().next().map(|(_, problem)| problem),
    })
}
