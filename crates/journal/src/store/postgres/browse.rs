//! Browsing a journal in PostgreSQL: newest-first listing, full-text search through the
//! `tsvector` index (every word must match, the last as a prefix, as in SQLite), deletion.

use super::{PgJournal, execute, failed_pg, integer, optional_integer, optional_text, text};
use crate::debate::Named as _;
use crate::debate::{Confidence, DebateStatus};
use crate::store::lease::Lease;
use crate::store::{DebateSummary, SearchHit, StoreError};
use rusqlite::types::Value;

/// The status a row reads as, from its `status` and its five lease columns at `first`.
fn status_at(row: &[Value], first: usize) -> Result<DebateStatus, StoreError> {
    let stored = text(&row[first])?;
    let lease = Lease {
        pid: optional_integer(&row[first + 1])?,
        host: optional_text(&row[first + 2])?,
        at: super::lease::on_this_clock(optional_integer(&row[first + 3])?),
        since: optional_integer(&row[first + 4])?,
        ttl: optional_integer(&row[first + 5])?,
    };
    Ok(lease.status(DebateStatus::parse(&stored).unwrap_or(DebateStatus::Failed)))
}

fn confidence(value: &Value) -> Result<Option<Confidence>, StoreError> {
    Ok(optional_text(value)?.as_deref().and_then(Confidence::parse))
}

/// A tsquery from free text: every word kept to letters and digits (so nothing in it is
/// query syntax), all required, the last as a prefix.
fn ts_query(text: &str) -> Option<String> {
    let words: Vec<&str> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let (last, rest) = words.split_last()?;
    let mut query: Vec<String> = rest.iter().map(|w| format!("'{w}'")).collect();
    query.push(format!("'{last}':*"));
    Some(query.join(" & "))
}

impl PgJournal {
    /// Debates, newest first.
    pub fn list(&self, limit: usize) -> Result<Vec<DebateSummary>, StoreError> {
        self.rows(
            concat!(
                "SELECT d.id, d.question, d.protocol, d.status, d.lease_pid, d.lease_host, ",
                heartbeat!("d.lease_at"),
                ", d.lease_since, d.lease_ttl,
                    (SELECT r.confidence FROM syntheses r WHERE r.debate_id = d.id),
                    d.created_at, d.updated_at,
                    COALESCE((SELECT MAX(round) FROM turns t WHERE t.debate_id = d.id), 0),
                    d.stage
             FROM debates d ORDER BY d.created_at DESC, d.id DESC LIMIT ?1"
            ),
            vec![Value::Integer(i64::try_from(limit).unwrap_or(i64::MAX))],
        )?
        .iter()
        .map(|row| {
            Ok(DebateSummary {
                id: text(&row[0])?,
                question: text(&row[1])?,
                protocol: text(&row[2])?,
                status: status_at(row, 3)?,
                confidence: confidence(&row[9])?,
                created_at: text(&row[10])?,
                updated_at: text(&row[11])?,
                rounds: integer(&row[12])? as u32,
                stage: optional_text(&row[13])?.and_then(|s| serde_json::from_str(&s).ok()),
            })
        })
        .collect()
    }

    /// The debates the journal holds as running, oldest first (as SQLite's `running_ids`).
    pub fn running_ids(&self) -> Result<Vec<String>, StoreError> {
        self.rows(
            "SELECT id FROM debates WHERE status = 'running' ORDER BY created_at, id",
            Vec::new(),
        )?
        .iter()
        .map(|row| text(&row[0]))
        .collect()
    }

    /// Full-text search over questions, turns, guidance and records: one hit per debate, its
    /// best-ranked passage, marked as SQLite marks it (`[word]`).
    pub fn search(&self, text_given: &str, limit: usize) -> Result<Vec<SearchHit>, StoreError> {
        let Some(query) = ts_query(text_given) else {
            return Ok(Vec::new());
        };
        let rows = self.rows(
            concat!(
                "SELECT s.debate_id, d.question, s.kind,
                    ts_headline('simple', s.body, to_tsquery('simple', ?1),
                        'StartSel=[, StopSel=], MaxWords=12, MinWords=4, MaxFragments=1,
                         FragmentDelimiter=…'),
                    d.status, d.lease_pid, d.lease_host, ",
                heartbeat!("d.lease_at"),
                ", d.lease_since, d.lease_ttl,
                    d.protocol, (SELECT r.confidence FROM syntheses r WHERE r.debate_id = d.id),
                    d.created_at
             FROM search_index s JOIN debates d ON d.id = s.debate_id
             WHERE s.words @@ to_tsquery('simple', ?1)
             ORDER BY ts_rank(s.words, to_tsquery('simple', ?1)) DESC, s.id
             LIMIT ?2"
            ),
            vec![Value::Text(query), Value::Integer((limit * 4) as i64)],
        )?;
        let mut hits: Vec<SearchHit> = Vec::new();
        for row in &rows {
            let hit = SearchHit {
                id: text(&row[0])?,
                question: text(&row[1])?,
                kind: text(&row[2])?,
                snippet: text(&row[3])?,
                status: status_at(row, 4)?,
                protocol: text(&row[10])?,
                confidence: confidence(&row[11])?,
                created_at: text(&row[12])?,
            };
            if !hits.iter().any(|h| h.id == hit.id) {
                hits.push(hit);
            }
            if hits.len() >= limit {
                break;
            }
        }
        Ok(hits)
    }

    /// Deletes a debate and everything of it (its chain with it).
    pub fn delete(&self, id: &str) -> Result<(), StoreError> {
        let (id, shown) = (id.to_string(), self.shown.clone());
        self.call(move |conn| {
            let mut tx = conn.begin().map_err(|e| failed_pg(&shown, e))?;
            let key = [Value::Text(id.clone())];
            execute(
                &mut tx,
                "DELETE FROM search_index WHERE debate_id = ?1",
                &key,
            )?;
            let removed = execute(&mut tx, "DELETE FROM debates WHERE id = ?1", &key)?;
            tx.commit().map_err(|e| failed_pg(&shown, e))?;
            if removed == 0 {
                return Err(StoreError::NotFound(id));
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn queries_keep_words_only_and_prefix_the_last() {
        assert_eq!(
            super::ts_query("redis cach").as_deref(),
            Some("'redis' & 'cach':*")
        );
        assert_eq!(super::ts_query("x' | !y:*").as_deref(), Some("'x' & 'y':*"));
        assert_eq!(super::ts_query(" -- "), None);
    }
}
