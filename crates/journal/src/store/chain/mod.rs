//! The journal's hash chain: every row a debate's outcome depends on is appended to that
//! debate's chain in the transaction that writes it, as in a transparency log. Each entry
//! carries the SHA-256 of the row's canonical content and the previous entry's hash, so a
//! quiet edit, a deleted, added or reordered row, or a gap in the chain shows when it is
//! checked.

mod check;

pub use check::ChainCheck;
pub(in crate::store) use check::{KeyedRow, StoredEntry, check, check_entries};

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
    pub(in crate::store) table: &'static str,
    /// The column naming the debate (`debate_id`, or `id` for the debate row itself).
    pub(in crate::store) owner: &'static str,
    /// The columns that tell one row of the debate from another.
    pub(in crate::store) key: &'static [&'static str],
    /// The columns whose values are chained.
    pub(in crate::store) columns: &'static [&'static str],
    /// A condition a row must meet to carry this facet (a gate has a decision only once one
    /// was made).
    pub(in crate::store) present: Option<&'static str>,
    /// Whether its rows carry their own chain link (`chain_n`, `chain_hash`,
    /// `chain_prev_place`) rather than an entry in `chain`; its one key column is the row's id.
    /// Only the rows written most often do: each link in `chain` is a row of its own, at the
    /// debate's own place in that table, so one more page every commit writes.
    in_row: bool,
}

pub(super) const DEBATE: Facet = Facet {
    name: "debate",
    table: "debates",
    owner: "id",
    key: &[],
    columns: &["question", "protocol", "config", "seats", "created_at"],
    present: None,
    in_row: false,
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
    in_row: true,
};

pub(super) const EVENT: Facet = Facet {
    name: "event",
    table: "events",
    owner: "debate_id",
    key: &["seq"],
    columns: &["kind", "event"],
    present: None,
    in_row: true,
};

pub(super) const ANSWER: Facet = Facet {
    name: "answer",
    table: "checkpoints",
    owner: "debate_id",
    key: &["round", "kind"],
    columns: &["decision", "guidance", "answered_by", "created_at"],
    present: None,
    in_row: false,
};

pub(super) const GATE_REQUEST: Facet = Facet {
    name: "gate request",
    table: "gates",
    owner: "debate_id",
    key: &["gate"],
    columns: &["point", "round", "summary", "artifacts", "requested_at"],
    present: None,
    in_row: false,
};

pub(super) const GATE_DECISION: Facet = Facet {
    name: "gate decision",
    table: "gates",
    owner: "debate_id",
    key: &["gate"],
    columns: &["decision", "decided_by", "reason", "decided_at"],
    present: Some("decision IS NOT NULL"),
    in_row: false,
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
    in_row: true,
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
    in_row: false,
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
    in_row: false,
};

/// Every facet, in the order a debate chained at upgrade takes them.
pub(in crate::store) fn facets() -> &'static [&'static Facet] {
    FACETS
}

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
pub(in crate::store) const REMOVED: &str = "removed";

impl Facet {
    /// `SELECT columns` of the debate's rows carrying this facet; `keyed` narrows it to the
    /// one row whose key columns are bound as ?2, ?3, ….
    pub(in crate::store) fn select(&self, columns: &[&str], keyed: bool) -> String {
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

    /// The latest in-row link among the debate's rows of this facet, as a chain head.
    fn latest_in_row(
        &self,
        connection: &Connection,
        debate: &str,
    ) -> rusqlite::Result<Option<ChainHead>> {
        let columns: Vec<&str> = ["chain_n", "chain_hash"]
            .iter()
            .chain(self.key)
            .chain(self.columns)
            .copied()
            .collect();
        // Rows take their number and their link as they are written, both rising, so the
        // latest link is on the last linked row: a backward walk of the debate's rows that
        // stops at the first, rather than a sort of them all.
        let sql = self.select(&columns, false)
            + &format!(
                " AND chain_n IS NOT NULL ORDER BY {} DESC LIMIT 1",
                self.key[0]
            );
        connection
            .prepare_cached(&sql)?
            .query_row(params![debate], |row| {
                let width = self.key.len();
                let values: Vec<Value> = (0..width + self.columns.len())
                    .map(|i| row.get_ref(i + 2).map(json_value))
                    .collect::<rusqlite::Result<_>>()?;
                Ok(ChainHead {
                    entries: row.get(0)?,
                    hash: hash_hex(&row.get::<_, Vec<u8>>(1)?),
                    place: self.place(&values[..width], Some(&values[width..])),
                })
            })
            .optional()
    }

    /// Every in-row link among the debate's rows of this facet.
    fn in_row_links(
        &self,
        connection: &Connection,
        debate: &str,
    ) -> rusqlite::Result<Vec<InRowLink>> {
        let columns = [self.key[0], "chain_n", "chain_hash", "chain_prev_place"];
        let sql = self.select(&columns, false) + " AND chain_n IS NOT NULL";
        let mut statement = connection.prepare(&sql)?;
        let rows = statement.query_map(params![debate], |row| {
            Ok(InRowLink {
                row: json_value(row.get_ref(0)?),
                n: row.get(1)?,
                hash: hash_hex(&row.get::<_, Vec<u8>>(2)?),
                previous_place: row.get(3)?,
            })
        })?;
        rows.collect()
    }

    /// Where a row stands, as a person names it: the table, then round, phase and seat where
    /// the row has them.
    pub(in crate::store) fn place(&self, key: &[Value], content: Option<&[Value]>) -> String {
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
                // Only the fields the place names are read out of the event; the rest of its
                // text (a whole turn, say) is skipped without being built.
                #[derive(serde::Deserialize, Default)]
                struct Placed {
                    round: Option<Value>,
                    phase: Option<Value>,
                    seat: Option<Value>,
                }
                let placed: Placed = self
                    .columns
                    .iter()
                    .position(|c| *c == "event")
                    .and_then(|i| content?.get(i)?.as_str())
                    .and_then(|event| serde_json::from_str(event).ok())
                    .unwrap_or_default();
                let field = |name: &str, value: &Option<Value>| {
                    value
                        .as_ref()
                        .map(|v| format!(" {name} {}", text(v)))
                        .unwrap_or_default()
                };
                format!(
                    "events: #{keyed} {}{}{}{}",
                    column("kind").unwrap_or_default(),
                    field("round", &placed.round),
                    field("phase", &placed.phase),
                    field("seat", &placed.seat)
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

pub(in crate::store) fn json_value(value: ValueRef<'_>) -> Value {
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

pub(in crate::store) fn sql_value(value: &Value) -> rusqlite::types::Value {
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

/// Feeds what is written into a SHA-256, so content is hashed as it is serialized.
struct Hashing(sha2::Sha256);

impl std::io::Write for Hashing {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        sha2::Digest::update(&mut self.0, bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Bound values serialized exactly as `json_value` would make them, without copying them
/// into JSON values first.
struct Bound<'a>(&'a [ValueRef<'a>]);

impl Serialize for Bound<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for value in self.0 {
            match *value {
                ValueRef::Null => seq.serialize_element(&())?,
                ValueRef::Integer(i) => seq.serialize_element(&i)?,
                ValueRef::Real(f) if f.is_finite() => seq.serialize_element(&f)?,
                ValueRef::Real(_) => seq.serialize_element(&())?,
                ValueRef::Text(bytes) => {
                    seq.serialize_element(&String::from_utf8_lossy(bytes))?;
                }
                ValueRef::Blob(_) => seq.serialize_element(&json_value(*value))?,
            }
        }
        seq.end()
    }
}

/// The hash of a row's chained values, taken before the write lock is: it needs nothing
/// but the values, and hashing a turn's whole text while every other debate waited to write
/// was about 5 % of what a busy server did under the lock.
pub(super) struct RowContent(String);

impl RowContent {
    /// `values` as they will be bound, in the facet's column order.
    pub(super) fn of(values: &[ValueRef<'_>]) -> RowContent {
        RowContent(bound_content_hash(values))
    }
}

/// The hash of values as bound to a row (in a facet's column order): the same as
/// `content_hash` of the row read back.
fn bound_content_hash(values: &[ValueRef<'_>]) -> String {
    let mut hashing = Hashing(sha2::Sha256::default());
    // Writing into a hasher cannot fail.
    let _ = serde_json::to_writer(&mut hashing, &Bound(values));
    hex(&sha2::Digest::finalize(hashing.0))
}

/// Lower-case hex of `bytes`.
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    out
}

/// SHA-256 of `text`, hex.
fn sha256(text: &str) -> String {
    hex(&<sha2::Sha256 as sha2::Digest>::digest(text.as_bytes()))
}

pub(in crate::store) fn content_hash(content: &[Value]) -> String {
    let mut hashing = Hashing(sha2::Sha256::default());
    let _ = serde_json::to_writer(&mut hashing, content);
    hex(&sha2::Digest::finalize(hashing.0))
}

/// A hex hash as the 32 bytes a turn row keeps.
fn hash_bytes(hex: &str) -> Vec<u8> {
    (0..hex.len() / 2)
        .filter_map(|i| u8::from_str_radix(hex.get(i * 2..i * 2 + 2)?, 16).ok())
        .collect()
}

/// A turn row's hash bytes as hex, as the chain compares hashes.
fn hash_hex(bytes: &[u8]) -> String {
    hex(bytes)
}

/// The hash a chain starts from: bound to the debate, so no entry can be moved to another.
pub(in crate::store) fn genesis(debate: &str) -> String {
    sha256(&format!("moot journal chain\n{debate}"))
}

/// An entry's own hash, over everything it says and the entry before it.
pub(in crate::store) fn link(
    previous: &str,
    n: i64,
    facet: &str,
    key: &str,
    place: &str,
    content: &str,
    upgraded: bool,
) -> String {
    sha256(&format!(
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
    /// The head of `debate`'s chain as known, while no other connection has committed since.
    pub(super) fn get(
        &self,
        connection: &Connection,
        debate: &str,
    ) -> rusqlite::Result<Option<ChainHead>> {
        let Some(known) = self.heads.get(debate) else {
            return Ok(None);
        };
        let version: i64 = connection
            .prepare_cached("PRAGMA data_version")?
            .query_row([], |row| row.get(0))?;
        Ok((self.version == Some(version)).then(|| known.clone()))
    }

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

    /// Forgets the head of `debate`'s chain, as after its appends were rolled back to a
    /// savepoint: the next append reads it again from the tables.
    pub(super) fn forget(&self, debate: &str) {
        self.heads.borrow_mut().remove(debate);
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
    /// Where the last entry's row stands (`turns: round 2 rebuttal B`), for the next entry
    /// to name.
    #[serde(skip)]
    pub place: String,
}

pub(super) fn head(connection: &Connection, debate: &str) -> rusqlite::Result<Option<ChainHead>> {
    let mut latest = connection
        // A descending seek on the primary key: constant time however long the chain. (SQLite
        // prepares a query on part of this key again whenever the table has changed, so a
        // writer takes the head from `KnownHeads` instead.)
        .prepare_cached(
            "SELECT n, hash, place FROM chain WHERE debate_id = ?1 ORDER BY n DESC LIMIT 1",
        )?
        .query_row(params![debate], |row| {
            Ok(ChainHead {
                entries: row.get(0)?,
                hash: row.get(1)?,
                place: row.get(2)?,
            })
        })
        .optional()?;
    for facet in FACETS.iter().filter(|f| f.in_row) {
        if let Some(in_row) = facet.latest_in_row(connection, debate)?
            && latest.as_ref().is_none_or(|l| in_row.entries > l.entries)
        {
            latest = Some(in_row);
        }
    }
    Ok(latest)
}

/// The hash of the entry at position `n` of a debate's chain.
pub(super) fn entry_hash(
    connection: &Connection,
    debate: &str,
    n: i64,
) -> rusqlite::Result<Option<String>> {
    let mut sql = "SELECT hash FROM chain WHERE debate_id = ?1 AND n = ?2".to_string();
    for facet in FACETS.iter().filter(|f| f.in_row) {
        sql.push_str(&format!(
            " UNION ALL SELECT lower(hex(chain_hash)) FROM {} WHERE {} = ?1 AND chain_n = ?2",
            facet.table, facet.owner
        ));
    }
    connection
        .prepare_cached(&sql)?
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

/// The number of the next row of `facet`'s table and its in-row link, for a row about to be
/// written with `values` (in the facet's column order, as bound): its position, hash and the
/// previous entry's place, for the row's `chain_*` columns, so journaling it writes no page
/// beyond the row's own. The number is chosen here (as SQLite would choose it) because the
/// link is made on it. The row's content and the entry before it are what the hash is
/// checked against.
pub(super) fn row_link(
    writer: &Writer<'_>,
    debate: &str,
    facet: &Facet,
    values: &[ValueRef<'_>],
    content: &RowContent,
) -> rusqlite::Result<(i64, [rusqlite::types::Value; 3])> {
    let row: i64 = writer
        .prepare_cached(&format!(
            "SELECT coalesce(max({}), 0) + 1 FROM {}",
            facet.key[0], facet.table
        ))?
        .query_row([], |r| r.get(0))?;
    let key = [Value::from(row)];
    // Only what a place is made of is copied out of the values.
    let placed: Vec<Value> = facet
        .columns
        .iter()
        .zip(values)
        .map(|(column, value)| match PLACED.contains(column) {
            true => json_value(*value),
            false => Value::Null,
        })
        .collect();
    let place = facet.place(&key, Some(&placed));
    // Linked on the head this writer knows, and not stored here: the row stores it.
    let link = next_link(
        writer,
        Some(&writer.heads),
        debate,
        facet.name,
        &key,
        &place,
        &content.0,
        false,
    )?;
    Ok((
        row,
        [
            link.n.into(),
            hash_bytes(&link.hash).into(),
            link.previous_place
                .map_or(rusqlite::types::Value::Null, Into::into),
        ],
    ))
}

/// A link a row carries: the row's key, the entry's position and hash, and the previous
/// entry's place.
/// An entry kept in its row, as a copy carries it to `chain`: its position, facet, key,
/// place and content as a check reads them now, its hash and the place before it.
pub(in crate::store) struct StoredLink {
    pub n: i64,
    pub facet: &'static str,
    pub key: String,
    pub place: String,
    pub content: String,
    pub hash: String,
    pub previous_place: Option<String>,
}

/// Every entry of debate `debate` that SQLite keeps in a row of its own.
pub(in crate::store) fn stored_links(
    connection: &Connection,
    debate: &str,
) -> rusqlite::Result<Vec<StoredLink>> {
    let mut links = Vec::new();
    for facet in FACETS.iter().filter(|facet| facet.in_row) {
        let content_of: HashMap<String, Vec<Value>> = facet
            .rows(connection, debate)?
            .into_iter()
            .map(|(key, content)| (serde_json::to_string(&key).unwrap_or_default(), content))
            .collect();
        for InRowLink {
            row,
            n,
            hash,
            previous_place,
        } in facet.in_row_links(connection, debate)?
        {
            let key = [row];
            let key_text = serde_json::to_string(&key).unwrap_or_default();
            let content = content_of.get(&key_text).map(Vec::as_slice);
            links.push(StoredLink {
                n,
                facet: facet.name,
                place: facet.place(&key, content),
                content: content.map(content_hash).unwrap_or_default(),
                key: key_text,
                hash,
                previous_place,
            });
        }
    }
    Ok(links)
}

struct InRowLink {
    row: Value,
    n: i64,
    hash: String,
    previous_place: Option<String>,
}

/// The columns `Facet::place` reads.
const PLACED: &[&str] = &["round", "phase", "seat", "kind", "attempt", "event"];

/// Before `facet`'s row `row` is deleted on purpose, hands its in-row link (if it has one) to
/// `chain`, where the entry stays to show what was there.
pub(super) fn keep_link(writer: &Writer<'_>, facet: &Facet, row: i64) -> rusqlite::Result<()> {
    let linked = writer
        .prepare_cached(&format!(
            "SELECT {}, chain_n, chain_hash, chain_prev_place FROM {} WHERE {} = ?1 AND chain_n IS NOT NULL",
            facet.owner, facet.table, facet.key[0]
        ))?
        .query_row(params![row], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                hash_hex(&r.get::<_, Vec<u8>>(2)?),
                r.get::<_, Option<String>>(3)?,
            ))
        })
        .optional()?;
    let Some((debate, n, hash, previous_place)) = linked else {
        return Ok(());
    };
    let key = [Value::from(row)];
    let content = facet.content(writer, &debate, &key)?;
    let place = facet.place(&key, content.as_deref());
    let content = content.as_deref().map(content_hash).unwrap_or_default();
    let previous = if n == 1 {
        genesis(&debate)
    } else {
        entry_hash(writer, &debate, n - 1)?.unwrap_or_default()
    };
    writer
        .prepare_cached(
            "INSERT INTO chain (debate_id, n, facet, row_key, place, content, prev, hash, upgraded,
                prev_place)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 0, ?9)",
        )?
        .execute(params![
            debate,
            n,
            facet.name,
            serde_json::to_string(&key).unwrap_or_default(),
            place,
            content,
            previous,
            hash,
            previous_place
        ])?;
    Ok(())
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

/// The next entry's position, the previous hash and the entry's own hash, on the head
/// `heads` knows (else the one stored); the head moves to it.
#[allow(clippy::too_many_arguments)]
fn next_link(
    connection: &Connection,
    heads: Option<&RefCell<HashMap<String, ChainHead>>>,
    debate: &str,
    facet: &str,
    key: &[Value],
    place: &str,
    content: &str,
    upgraded: bool,
) -> rusqlite::Result<Link> {
    let key = serde_json::to_string(key).unwrap_or_default();
    let known = heads.and_then(|heads| heads.borrow().get(debate).cloned());
    let (n, previous, previous_place) =
        match known.map_or_else(|| head(connection, debate), |h| Ok(Some(h)))? {
            Some(head) => (head.entries + 1, head.hash, Some(head.place)),
            None => (1, genesis(debate), None),
        };
    let hash = link(&previous, n, facet, &key, place, content, upgraded);
    if let Some(heads) = heads {
        heads.borrow_mut().insert(
            debate.to_string(),
            ChainHead {
                entries: n,
                hash: hash.clone(),
                place: place.to_string(),
            },
        );
    }
    Ok(Link {
        n,
        previous,
        previous_place,
        hash,
    })
}

/// A new entry's link: its position, the previous entry's hash and place, its own hash.
struct Link {
    n: i64,
    previous: String,
    previous_place: Option<String>,
    hash: String,
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
    let link = next_link(
        connection, heads, debate, facet, key, place, content, upgraded,
    )?;
    let key = serde_json::to_string(key).unwrap_or_default();
    connection
        .prepare_cached(
            "INSERT INTO chain (debate_id, n, facet, row_key, place, content, prev, hash, upgraded,
                prev_place)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        )?
        .execute(params![
            debate,
            link.n,
            facet,
            key,
            place,
            content,
            link.previous,
            link.hash,
            upgraded,
            link.previous_place
        ])?;
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

#[cfg(test)]
mod hashing_tests {
    use super::*;

    /// The fast paths hash exactly what the chain has always hashed: a turn's bound values
    /// as its row reads back, and text as `audit::sha256_hex` does, so chains already
    /// written still check.
    #[test]
    fn bound_values_hash_as_the_row_reads_back() {
        use rusqlite::types::Value as Sql;
        let values = [
            Sql::Integer(2),
            Sql::Text("rebuttal".into()),
            Sql::Text("B \"quoted\" \\ é ✓ \u{1b}[31m\n".into()),
            Sql::Null,
            Sql::Real(0.7),
            Sql::Real(1e-7),
            Sql::Real(f64::NAN),
            Sql::Integer(-40),
        ];
        let read_back: Vec<Value> = values
            .iter()
            .map(|v| json_value(ValueRef::from(v)))
            .collect();
        let bound: Vec<ValueRef<'_>> = values.iter().map(ValueRef::from).collect();
        assert_eq!(bound_content_hash(&bound), content_hash(&read_back));
        assert_eq!(
            content_hash(&read_back),
            super::super::audit::sha256_hex(&serde_json::to_string(&read_back).unwrap())
        );
        assert_eq!(sha256("moot"), super::super::audit::sha256_hex("moot"));
    }
}
