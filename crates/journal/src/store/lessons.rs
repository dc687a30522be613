//! Lessons in the journal: stored with their source debate, indexed for full-text retrieval,
//! the oldest evicted past a capacity; and the person's standing preferences (lessons on/off).

use super::chain;
use super::{Sqlite, StoreError};
use crate::debate::{Lesson, LessonDraft, now_rfc3339};
use rusqlite::{OptionalExtension, Row, params};
use std::collections::BTreeMap;

const COLUMNS: &str = "id, debate_id, question, lesson, went, advice, confidence, created_at";

fn lesson(row: &Row<'_>) -> rusqlite::Result<Lesson> {
    Ok(Lesson {
        id: row.get(0)?,
        source: row.get(1)?,
        question: row.get(2)?,
        text: row.get(3)?,
        went: row.get(4)?,
        advice: row.get(5)?,
        confidence: row.get(6)?,
        created_at: row.get(7)?,
    })
}

/// Each lesson among `matched` (a lesson's id once for every term it matched), with how many
/// terms it matched, as `lesson` reads it; in id order. Both journals tally so.
pub(super) fn tally_matches(
    matched: impl IntoIterator<Item = i64>,
    lesson: impl Fn(i64) -> Result<Option<Lesson>, StoreError>,
) -> Result<Vec<(Lesson, usize)>, StoreError> {
    let mut counts: BTreeMap<i64, usize> = BTreeMap::new();
    for id in matched {
        *counts.entry(id).or_default() += 1;
    }
    let mut tallied = Vec::new();
    for (id, count) in counts {
        if let Some(found) = lesson(id)? {
            tallied.push((found, count));
        }
    }
    Ok(tallied)
}

/// An embedding as both journals keep it: each component's four little-endian bytes.
pub(super) fn embedding_bytes(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|f| f.to_le_bytes()).collect()
}

/// An embedding read back from its bytes.
pub(super) fn embedding_of(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// A term as an FTS5 string literal: quoted, so no word is read as query syntax.
fn quoted(term: &str) -> String {
    format!("\"{}\"", term.replace('"', "\"\""))
}

/// Whether the debate is still in the journal (a lesson outlives its source; only a source
/// still there has a chain to note it in).
fn debate_exists(tx: &chain::Writer<'_>, id: &str) -> Result<bool, StoreError> {
    Ok(tx
        .query_row("SELECT 1 FROM debates WHERE id = ?1", params![id], |_| {
            Ok(())
        })
        .optional()?
        .is_some())
}

/// Deletes a lesson (and its index row), noting the removal in its source debate's chain so
/// the chain does not report it as deleted behind moot's back. False when there was none.
fn forget(tx: &chain::Writer<'_>, lesson_id: i64) -> Result<bool, StoreError> {
    let source: Option<String> = tx
        .query_row(
            "SELECT debate_id FROM lessons WHERE id = ?1",
            params![lesson_id],
            |row| row.get(0),
        )
        .optional()?;
    let removed = tx.execute("DELETE FROM lessons WHERE id = ?1", params![lesson_id])?;
    tx.execute(
        "DELETE FROM lessons_index WHERE lesson_id = ?1",
        params![lesson_id],
    )?;
    let chained = match &source {
        Some(debate) => debate_exists(tx, debate)?,
        None => false,
    };
    if let (Some(debate), true) = (source, chained) {
        chain::remove(tx, &debate, &chain::LESSON, &[lesson_id.into()], None)?;
    }
    Ok(removed > 0)
}

impl Sqlite {
    /// Stores the lessons debate `id` wrote, then evicts the oldest beyond `capacity`. Texts
    /// are cleaned of escapes and secrets first. Returns the new lessons.
    pub fn add_lessons(
        &self,
        id: &str,
        question: &str,
        drafts: &[LessonDraft],
        capacity: usize,
    ) -> Result<Vec<Lesson>, StoreError> {
        let clean = |text: &str| crate::sanitize::clean(text);
        let ids = self.write(|tx| {
            let mut ids = Vec::new();
            for draft in drafts {
                tx.execute(
                    "INSERT INTO lessons (debate_id, question, lesson, went, advice, confidence, created_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    params![
                        id,
                        clean(question),
                        clean(&draft.text),
                        clean(&draft.went),
                        clean(&draft.advice),
                        draft.confidence.clamp(0.0, 1.0),
                        now_rfc3339()
                    ],
                )?;
                let lesson_id = tx.last_insert_rowid();
                tx.execute(
                    "INSERT INTO lessons_index (body, lesson_id) VALUES (?1, ?2)",
                    params![
                        format!(
                            "{}\n{}\n{}",
                            clean(question),
                            clean(&draft.text),
                            clean(&draft.advice)
                        ),
                        lesson_id
                    ],
                )?;
                if debate_exists(tx, id)? {
                    chain::append(tx, id, &chain::LESSON, &[lesson_id.into()])?;
                }
                ids.push(lesson_id);
            }
            let evicted: Vec<i64> = tx
                .prepare("SELECT id FROM lessons ORDER BY id DESC LIMIT -1 OFFSET ?1")?
                .query_map(params![capacity as i64], |row| row.get(0))?
                .collect::<Result<_, _>>()?;
            for old in evicted {
                forget(tx, old)?;
            }
            Ok(ids)
        })?;
        Ok(self
            .lessons()?
            .into_iter()
            .filter(|l| ids.contains(&l.id))
            .collect())
    }

    /// Every stored lesson, newest first.
    pub fn lessons(&self) -> Result<Vec<Lesson>, StoreError> {
        self.with(|connection| {
            let rows = connection
                .prepare(&format!("SELECT {COLUMNS} FROM lessons ORDER BY id DESC"))?
                .query_map([], lesson)?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })
    }

    pub fn lesson(&self, lesson_id: i64) -> Result<Option<Lesson>, StoreError> {
        self.with(|connection| {
            Ok(connection
                .query_row(
                    &format!("SELECT {COLUMNS} FROM lessons WHERE id = ?1"),
                    params![lesson_id],
                    lesson,
                )
                .optional()?)
        })
    }

    /// Removes a lesson; false when there was none with that id.
    pub fn remove_lesson(&self, lesson_id: i64) -> Result<bool, StoreError> {
        self.write(|tx| forget(tx, lesson_id))
    }

    /// For each stored lesson that matches any of `terms` (stemmed), how many of them it
    /// matches.
    pub fn lessons_matching(&self, terms: &[String]) -> Result<Vec<(Lesson, usize)>, StoreError> {
        let matched: Vec<i64> = self.with(|connection| {
            let mut statement = connection
                .prepare("SELECT lesson_id FROM lessons_index WHERE lessons_index MATCH ?1")?;
            let mut matched = Vec::new();
            for term in terms {
                for id in statement.query_map(params![quoted(term)], |row| row.get(0))? {
                    matched.push(id?);
                }
            }
            Ok(matched)
        })?;
        tally_matches(matched, |id| self.lesson(id))
    }

    /// Keeps the embedding `model` made of a lesson's source question.
    pub fn set_lesson_embedding(
        &self,
        lesson_id: i64,
        model: &str,
        vector: &[f32],
    ) -> Result<(), StoreError> {
        let bytes = embedding_bytes(vector);
        self.with(|connection| {
            connection.execute(
                "UPDATE lessons SET embedding = ?2, embedding_model = ?3 WHERE id = ?1",
                params![lesson_id, bytes, model],
            )?;
            Ok(())
        })
    }

    /// Every lesson with an embedding made by `model`, with it.
    pub fn lesson_embeddings(&self, model: &str) -> Result<Vec<(Lesson, Vec<f32>)>, StoreError> {
        self.with(|connection| {
            let rows = connection
                .prepare(&format!(
                    "SELECT {COLUMNS}, embedding FROM lessons WHERE embedding_model = ?1 ORDER BY id DESC"
                ))?
                .query_map(params![model], |row| {
                    let bytes: Vec<u8> = row.get(8)?;
                    Ok((lesson(row)?, embedding_of(&bytes)))
                })?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })
    }

    /// A standing preference, such as `lessons` = `off`.
    pub fn preference(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.with(|connection| {
            Ok(connection
                .query_row(
                    "SELECT value FROM preferences WHERE key = ?1",
                    params![key],
                    |row| row.get(0),
                )
                .optional()?)
        })
    }

    /// Kept redacted, as everything the journal stores: a value may hold what a person typed
    /// (a draft kept for a resume), and a key pasted into it must not land on disk.
    pub fn set_preference(&self, key: &str, value: &str) -> Result<(), StoreError> {
        let value = crate::sanitize::redact(value);
        self.with(|connection| {
            connection.execute(
                "INSERT INTO preferences (key, value) VALUES (?1, ?2)
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                params![key, value.as_ref()],
            )?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A preference may hold what a person typed (a draft kept for a resume): a key pasted
    /// into it is redacted before it is stored, as everything in the journal is.
    #[test]
    fn a_preference_is_stored_redacted() {
        let store = Sqlite::in_memory().unwrap();
        let key = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789";
        store
            .set_preference("draft DEB-x", &format!("try the key {key} again"))
            .unwrap();
        let kept = store.preference("draft DEB-x").unwrap().unwrap();
        assert!(
            !kept.contains(key) && kept.starts_with("try the key "),
            "{kept}"
        );
    }

    fn draft(text: &str) -> LessonDraft {
        LessonDraft {
            text: text.into(),
            went: "wrong".into(),
            advice: "measure first".into(),
            confidence: 0.8,
        }
    }

    #[test]
    fn lessons_are_found_by_stemmed_terms_and_the_oldest_go_past_capacity() {
        let store = Sqlite::in_memory().unwrap();
        store
            .add_lessons(
                "DEB-a",
                "Should we use Redis for caching?",
                &[draft("Latency claims were never measured")],
                2,
            )
            .unwrap();
        store
            .add_lessons(
                "DEB-b",
                "Which font for the site?",
                &[draft("Legibility beat taste")],
                2,
            )
            .unwrap();
        let found = store
            .lessons_matching(&["cache".into(), "redis".into(), "sessions".into()])
            .unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0.source, "DEB-a");
        assert_eq!(found[0].1, 2, "redis, and cache by its stem");
        // A third lesson evicts the oldest.
        store
            .add_lessons(
                "DEB-c",
                "Kafka or SQS?",
                &[draft("Ask about ordering early")],
                2,
            )
            .unwrap();
        let kept: Vec<String> = store
            .lessons()
            .unwrap()
            .into_iter()
            .map(|l| l.source)
            .collect();
        assert_eq!(kept, vec!["DEB-c", "DEB-b"]);
        assert!(
            store
                .lessons_matching(&["redis".into()])
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a_lesson_keeps_no_secret_and_no_escape() {
        let store = Sqlite::in_memory().unwrap();
        crate::sanitize::register_secret("lesson-secret-987654321");
        let stored = store
            .add_lessons(
                "DEB-a",
                "Q with lesson-secret-987654321",
                &[draft("Key lesson-secret-987654321 leaked \u{1b}[31mred")],
                5,
            )
            .unwrap();
        let all = format!("{stored:?}");
        assert!(!all.contains("lesson-secret-987654321"), "{all}");
        assert!(!all.contains('\u{1b}'), "{all}");
        assert!(stored[0].text.contains("[redacted]"));
    }

    #[test]
    fn query_syntax_in_a_term_is_only_text() {
        let store = Sqlite::in_memory().unwrap();
        store
            .add_lessons("DEB-a", "Q", &[draft("NEAR(x y) \"quoted\" OR")], 5)
            .unwrap();
        assert_eq!(
            store
                .lessons_matching(&["NEAR(x".into(), "\"quoted\"".into(), "OR".into()])
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn preferences_are_kept_and_replaced() {
        let store = Sqlite::in_memory().unwrap();
        assert_eq!(store.preference("lessons").unwrap(), None);
        store.set_preference("lessons", "off").unwrap();
        store.set_preference("lessons", "on").unwrap();
        assert_eq!(store.preference("lessons").unwrap().as_deref(), Some("on"));
    }
}
