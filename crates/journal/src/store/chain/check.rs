//! `audit --verify`'s first step: every chained row read back and checked against its latest
//! entry, in chain order, the first failure named by its place.

use super::*;

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
    /// The place of the entry before it, when it was written with one.
    previous_place: Option<String>,
}

/// A row's key and canonical content.
pub(in crate::store) type KeyedRow = (Vec<Value>, Vec<Value>);

/// One entry of a debate's chain as a journal keeps it: in the `chain` table (with the hash
/// of the entry before it), or in its own row (`in_row`: its content and place read from the
/// row now, the entry before it whatever precedes it).
pub(in crate::store) struct StoredEntry {
    entry: Entry,
    prev: String,
    hash: String,
    upgraded: bool,
    in_row: bool,
}

impl StoredEntry {
    /// An entry from the `chain` table's columns `n, facet, row_key, place, content, prev,
    /// hash, upgraded, prev_place`.
    pub(in crate::store) fn from_values(
        row: &[rusqlite::types::Value],
    ) -> Result<Self, crate::store::StoreError> {
        use crate::store::StoreError;
        use rusqlite::types::Value as V;
        let text = |value: &V| match value {
            V::Text(text) => Ok(text.clone()),
            other => Err(StoreError::Data(format!(
                "a chain entry reads {other:?} where text belongs"
            ))),
        };
        match row {
            [
                V::Integer(n),
                facet,
                key,
                place,
                content,
                prev,
                hash,
                V::Integer(upgraded),
                previous_place,
            ] => Ok(StoredEntry {
                entry: Entry {
                    n: *n,
                    facet: text(facet)?,
                    key: text(key)?,
                    place: text(place)?,
                    content: text(content)?,
                    previous_place: match previous_place {
                        V::Null => None,
                        other => Some(text(other)?),
                    },
                },
                prev: text(prev)?,
                hash: text(hash)?,
                upgraded: *upgraded != 0,
                in_row: false,
            }),
            other => Err(StoreError::Data(format!(
                "a chain entry has {} columns",
                other.len()
            ))),
        }
    }
}

/// Checks a debate's chain: each entry links to the one before it with no gap, and every
/// chained row in the journal reads as it was chained — no row changed, deleted or added.
pub(in crate::store) fn check(
    connection: &Connection,
    debate: &str,
) -> rusqlite::Result<ChainCheck> {
    let mut statement = connection.prepare(
        "SELECT n, facet, row_key, place, content, prev, hash, upgraded, prev_place FROM chain
         WHERE debate_id = ?1 ORDER BY n",
    )?;
    let mut linked: Vec<StoredEntry> = statement
        .query_map(params![debate], |row| {
            Ok(StoredEntry {
                entry: Entry {
                    n: row.get(0)?,
                    facet: row.get(1)?,
                    key: row.get(2)?,
                    place: row.get(3)?,
                    content: row.get(4)?,
                    previous_place: row.get(8)?,
                },
                prev: row.get(5)?,
                hash: row.get(6)?,
                upgraded: row.get(7)?,
                in_row: false,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    // Every facet's rows, read once: the in-row links are checked against their rows, and
    // every row against its latest entry below.
    let mut rows_of: Vec<(&Facet, Vec<KeyedRow>)> = Vec::new();
    for facet in FACETS {
        rows_of.push((facet, facet.rows(connection, debate)?));
    }
    // Rows that carry their own link: checked against the row's content and place now and
    // the entry before it, so any edit to the row shows as a link that no longer holds.
    for (facet, rows) in rows_of.iter().filter(|(facet, _)| facet.in_row) {
        let content_of: HashMap<String, &Vec<Value>> = rows
            .iter()
            .map(|(key, content)| (serde_json::to_string(key).unwrap_or_default(), content))
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
            let content = content_of.get(&key_text).map(|content| content.as_slice());
            linked.push(StoredEntry {
                entry: Entry {
                    n,
                    facet: facet.name.to_string(),
                    key: key_text,
                    place: facet.place(&key, content),
                    content: content.map(content_hash).unwrap_or_default(),
                    previous_place,
                },
                // The entry before it, whatever it is, is what the hash was made on.
                prev: String::new(),
                hash,
                upgraded: false,
                in_row: true,
            });
        }
    }
    Ok(check_entries(debate, linked, rows_of))
}

/// The check itself, on what a journal read: the chain's entries (in any order) and every
/// facet's rows of the debate.
pub(in crate::store) fn check_entries(
    debate: &str,
    mut linked: Vec<StoredEntry>,
    rows_of: Vec<(&Facet, Vec<KeyedRow>)>,
) -> ChainCheck {
    linked.sort_by_key(|stored| stored.entry.n);
    let mut entries = Vec::new();
    // Problems found, ranked by where in the chain they stand (rows outside it last).
    let mut problems: Vec<(i64, String)> = Vec::new();
    let mut previous = genesis(debate);
    let mut head = None;
    let mut upgraded = 0;
    let mut broken = false;
    for StoredEntry {
        entry,
        prev,
        hash,
        upgraded: was_upgraded,
        in_row,
    } in linked
    {
        let prev = if in_row { previous.clone() } else { prev };
        upgraded += i64::from(was_upgraded);
        let expected = entries.len() as i64 + 1;
        if !broken {
            if entry.n != expected {
                // The entry after a single missing one names what was there.
                let named = match &entry.previous_place {
                    Some(place) if entry.n == expected + 1 => format!(", which was {place}"),
                    _ => String::new(),
                };
                problems.push((
                    expected,
                    format!(
                        "the chain has a gap: entry {expected} is missing (the next is {}){named}",
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
                    if in_row {
                        format!(
                            "{} no longer matches what was chained (entry {})",
                            entry.place, entry.n
                        )
                    } else {
                        format!("chain entry {} ({}) was altered", entry.n, entry.place)
                    },
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
    for (facet, rows) in &rows_of {
        for (key, content) in rows {
            let key_text = serde_json::to_string(key).unwrap_or_default();
            let place = facet.place(key, Some(content));
            match latest.remove(&(facet.name.to_string(), key_text)) {
                None => problems.push((
                    i64::MAX,
                    format!("{place} is in the journal but was never chained (added afterwards)"),
                )),
                Some(entry) if entry.content == REMOVED => problems.push((
                    entry.n,
                    format!("{place} was removed (chain entry {}) but is back", entry.n),
                )),
                Some(entry) if entry.content != content_hash(content) => problems.push((
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
    ChainCheck {
        entries: entries.len() as i64,
        head,
        upgraded,
        problem: problems.into_iter().next().map(|(_, problem)| problem),
    }
}
