//! Browsing the journal: newest-first listing, full-text search, deletion.

use super::lease::Lease;
use super::{Sqlite, StoreError};
use crate::debate::Named as _;
use crate::debate::{Confidence, DebateStatus, Stage};
use rusqlite::{Row, params};
use serde::Serialize;

/// One line of history (read back from a server's `GET /v1/debates` too).
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct DebateSummary {
    pub id: String,
    pub question: String,
    pub protocol: String,
    /// As it reads now: a `running` debate no live process holds is `interrupted`.
    pub status: DebateStatus,
    pub confidence: Option<Confidence>,
    pub created_at: String,
    pub updated_at: String,
    pub rounds: u32,
    /// Where it stands or stopped, when moot recorded it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stage: Option<Stage>,
}

/// The status a debate row reads as, from its `status` and its five lease columns at
/// `first`.
fn status_at(row: &Row<'_>, first: usize) -> rusqlite::Result<DebateStatus> {
    let stored: String = row.get(first)?;
    let lease = Lease {
        pid: row.get(first + 1)?,
        host: row.get(first + 2)?,
        at: row.get(first + 3)?,
        since: row.get(first + 4)?,
        ttl: row.get(first + 5)?,
    };
    Ok(lease.status(DebateStatus::parse(&stored).unwrap_or(DebateStatus::Failed)))
}

/// A search match: which debate, where in it, and the matching passage.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SearchHit {
    pub id: String,
    pub question: String,
    /// question | turn | guidance | synthesis
    pub kind: String,
    pub snippet: String,
    pub status: DebateStatus,
    pub protocol: String,
    pub confidence: Option<Confidence>,
    pub created_at: String,
}

impl Sqlite {
    /// Debates, newest first.
    pub fn list(&self, limit: usize) -> Result<Vec<DebateSummary>, StoreError> {
        self.with(|connection| {
            let mut statement = connection.prepare_cached(
                "SELECT d.id, d.question, d.protocol, d.status, d.lease_pid, d.lease_host, d.lease_at,
                        d.lease_since, d.lease_ttl, (SELECT r.confidence FROM syntheses r WHERE r.debate_id = d.id), d.created_at, d.updated_at,
                        COALESCE((SELECT MAX(round) FROM turns t WHERE t.debate_id = d.id), 0),
                        d.stage
                 FROM debates d ORDER BY d.created_at DESC, d.rowid DESC LIMIT ?1",
            )?;
            let rows = statement.query_map(params![limit as i64], |row| {
                let stage: Option<String> = row.get(13)?;
                Ok(DebateSummary {
                    id: row.get(0)?,
                    question: row.get(1)?,
                    protocol: row.get(2)?,
                    status: status_at(row, 3)?,
                    confidence: row
                        .get::<_, Option<String>>(9)?
                        .as_deref()
                        .and_then(Confidence::parse),
                    created_at: row.get(10)?,
                    updated_at: row.get(11)?,
                    rounds: row.get(12)?,
                    stage: stage.and_then(|s| serde_json::from_str(&s).ok()),
                })
            })?;
            Ok(rows.collect::<Result<_, _>>()?)
        })
    }

    /// The debates the journal holds as running (some may read as interrupted: their holder is
    /// gone), oldest first: what a server looks through for debates to resume.
    pub fn running_ids(&self) -> Result<Vec<String>, StoreError> {
        self.with(|connection| {
            Ok(connection
                .prepare_cached(
                    "SELECT id FROM debates WHERE status = 'running' ORDER BY created_at, id",
                )?
                .query_map([], |row| row.get(0))?
                .collect::<Result<_, _>>()?)
        })
    }

    /// Full-text search over questions, turns, guidance and syntheses. Every word must match;
    /// the last word also matches as a prefix, so search works while typing.
    pub fn search(&self, text: &str, limit: usize) -> Result<Vec<SearchHit>, StoreError> {
        let Some(query) = fts_query(text) else {
            return Ok(Vec::new());
        };
        self.with(|connection| {
            let mut statement = connection.prepare_cached(
            "SELECT s.debate_id, d.question, s.kind, snippet(search_index, 0, '[', ']', '…', 12),
                    d.status, d.lease_pid, d.lease_host, d.lease_at, d.lease_since, d.lease_ttl,
                    d.protocol, (SELECT r.confidence FROM syntheses r WHERE r.debate_id = d.id),
                    d.created_at
             FROM search_index s JOIN debates d ON d.id = s.debate_id
             WHERE search_index MATCH ?1
             ORDER BY rank LIMIT ?2",
        )?;
            let rows = statement.query_map(params![query, (limit * 4) as i64], |row| {
                Ok(SearchHit {
                    id: row.get(0)?,
                    question: row.get(1)?,
                    kind: row.get(2)?,
                    snippet: row.get(3)?,
                    status: status_at(row, 4)?,
                    protocol: row.get(10)?,
                    confidence: row
                        .get::<_, Option<String>>(11)?
                        .as_deref()
                        .and_then(Confidence::parse),
                    created_at: row.get(12)?,
                })
            })?;
            // One hit per debate: its best-ranked passage.
            let mut hits: Vec<SearchHit> = Vec::new();
            for row in rows {
                let hit = row?;
                if !hits.iter().any(|h| h.id == hit.id) {
                    hits.push(hit);
                }
                if hits.len() >= limit {
                    break;
                }
            }
            Ok(hits)
        })
    }

    pub fn delete(&self, id: &str) -> Result<(), StoreError> {
        // The debate's chain goes with it (ON DELETE CASCADE): no head of it stays known.
        self.heads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .forget();
        self.with(|connection| {
            let tx = connection.unchecked_transaction()?;
            tx.execute("DELETE FROM search_index WHERE debate_id = ?1", params![id])?;
            let removed = tx.execute("DELETE FROM debates WHERE id = ?1", params![id])?;
            tx.commit()?;
            if removed == 0 {
                return Err(StoreError::NotFound(id.to_string()));
            }
            Ok(())
        })?;
        // A code debate's versions go with it; a debate of another kind has none.
        super::remove_versions(&self.versions_git_dir(id), id)
    }
}

/// Builds an FTS5 query from free text: every word quoted (so no operator injection), the last
/// one as a prefix.
fn fts_query(text: &str) -> Option<String> {
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| format!("\"{w}\""))
        .collect();
    if words.is_empty() {
        return None;
    }
    let mut query = words.join(" ");
    query.push('*');
    Some(query)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_quote_words_and_prefix_the_last() {
        assert_eq!(fts_query("redis cach").unwrap(), "\"redis\" \"cach\"*");
        assert_eq!(
            fts_query("NOT \"x\" OR y*").unwrap(),
            "\"NOT\" \"x\" \"OR\" \"y\"*"
        );
        assert_eq!(fts_query(" -- "), None);
    }
}
