//! Browsing the journal: newest-first listing, full-text search, deletion.

use super::{Store, StoreError};
use rusqlite::params;
use serde::Serialize;

/// One line of history.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DebateSummary {
    pub id: String,
    pub question: String,
    pub protocol: String,
    pub status: String,
    pub confidence: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub rounds: u32,
}

/// A search match: which debate, where in it, and the matching passage.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SearchHit {
    pub id: String,
    pub question: String,
    /// question | turn | guidance | synthesis
    pub kind: String,
    pub snippet: String,
    pub status: String,
    pub protocol: String,
    pub confidence: Option<String>,
    pub created_at: String,
}

impl Store {
    /// Debates, newest first.
    pub fn list(&self, limit: usize) -> Result<Vec<DebateSummary>, StoreError> {
        let connection = self.lock();
        let mut statement = connection.prepare_cached(
            "SELECT d.id, d.question, d.protocol, d.status, d.confidence, d.created_at, d.updated_at,
                    COALESCE((SELECT MAX(round) FROM turns t WHERE t.debate_id = d.id), 0)
             FROM debates d ORDER BY d.created_at DESC, d.rowid DESC LIMIT ?1",
        )?;
        let rows = statement.query_map(params![limit as i64], |row| {
            Ok(DebateSummary {
                id: row.get(0)?,
                question: row.get(1)?,
                protocol: row.get(2)?,
                status: row.get(3)?,
                confidence: row.get(4)?,
                created_at: row.get(5)?,
                updated_at: row.get(6)?,
                rounds: row.get(7)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Full-text search over questions, turns, guidance and syntheses. Every word must match;
    /// the last word also matches as a prefix, so search works while typing.
    pub fn search(&self, text: &str, limit: usize) -> Result<Vec<SearchHit>, StoreError> {
        let Some(query) = fts_query(text) else {
            return Ok(Vec::new());
        };
        let connection = self.lock();
        let mut statement = connection.prepare_cached(
            "SELECT s.debate_id, d.question, s.kind, snippet(search_index, 0, '[', ']', '…', 12),
                    d.status, d.protocol, d.confidence, d.created_at
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
                status: row.get(4)?,
                protocol: row.get(5)?,
                confidence: row.get(6)?,
                created_at: row.get(7)?,
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
    }

    pub fn delete(&self, id: &str) -> Result<(), StoreError> {
        let connection = self.lock();
        let tx = connection.unchecked_transaction()?;
        tx.execute("DELETE FROM search_index WHERE debate_id = ?1", params![id])?;
        let removed = tx.execute("DELETE FROM debates WHERE id = ?1", params![id])?;
        tx.commit()?;
        if removed == 0 {
            return Err(StoreError::NotFound(id.to_string()));
        }
        Ok(())
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
