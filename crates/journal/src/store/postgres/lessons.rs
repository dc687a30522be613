//! Lessons and preferences in PostgreSQL, as in SQLite: stored with their source debate and
//! chained in it while it is there, matched by stemmed terms (`tsvector` in English, as
//! SQLite's porter tokenizer stems), the oldest evicted past a capacity.

use super::pool::Tx;
use super::{PgJournal, append, failed_pg, integer, query, text};
use crate::debate::{Lesson, LessonDraft, now_rfc3339};
use crate::store::StoreError;
use crate::store::chain;
use rusqlite::types::Value;

const COLUMNS: &str = "id, debate_id, question, lesson, went, advice, confidence, created_at";

/// A lesson from its columns (as `COLUMNS` selects them).
fn lesson_of(row: &[Value]) -> Result<Lesson, StoreError> {
    Ok(Lesson {
        id: integer(&row[0])?,
        source: text(&row[1])?,
        question: text(&row[2])?,
        text: text(&row[3])?,
        went: text(&row[4])?,
        advice: text(&row[5])?,
        confidence: match row[6] {
            Value::Real(f) => f,
            _ => 0.0,
        },
        created_at: text(&row[7])?,
    })
}

/// Locks the debate's row when it is still in the journal (only a source still there has a
/// chain to note its lessons in); false when it is gone.
fn lock_source(tx: &mut Tx<'_>, id: &str) -> Result<bool, StoreError> {
    Ok(!query(
        tx,
        "SELECT 1 FROM debates WHERE id = ?1 FOR UPDATE",
        &[Value::Text(id.to_string())],
    )?
    .is_empty())
}

/// Deletes a lesson, noting the removal in its source debate's chain. False when there was
/// none (another transaction may have removed it while this one waited for the source's
/// row: only the one that deleted it notes the removal).
fn forget(tx: &mut Tx<'_>, lesson_id: i64) -> Result<bool, StoreError> {
    let source = query(
        tx,
        "SELECT debate_id FROM lessons WHERE id = ?1",
        &[Value::Integer(lesson_id)],
    )?
    .first()
    .map(|row| text(&row[0]))
    .transpose()?;
    let Some(source) = source else {
        return Ok(false);
    };
    let chained = lock_source(tx, &source)?;
    let deleted = query(
        tx,
        "DELETE FROM lessons WHERE id = ?1 RETURNING id",
        &[Value::Integer(lesson_id)],
    )?;
    if deleted.is_empty() {
        return Ok(false);
    }
    if chained {
        append(tx, &source, &chain::LESSON, &[lesson_id.into()])?;
    }
    Ok(true)
}

impl PgJournal {
    /// Stores the lessons debate `id` wrote, then evicts the oldest beyond `capacity`. Texts
    /// are cleaned of escapes and secrets first. Returns the new lessons.
    pub fn add_lessons(
        &self,
        id: &str,
        question: &str,
        drafts: &[LessonDraft],
        capacity: usize,
    ) -> Result<Vec<Lesson>, StoreError> {
        let clean = |text: &str| Value::Text(crate::sanitize::clean(text));
        let rows: Vec<Vec<Value>> = drafts
            .iter()
            .map(|draft| {
                vec![
                    Value::Text(id.to_string()),
                    clean(question),
                    clean(&draft.text),
                    clean(&draft.went),
                    clean(&draft.advice),
                    Value::Real(draft.confidence.clamp(0.0, 1.0)),
                    Value::Text(now_rfc3339()),
                ]
            })
            .collect();
        let (id, shown) = (id.to_string(), self.shown.clone());
        let ids = self.call(move |conn| {
            let mut tx = conn.begin().map_err(|e| failed_pg(&shown, e))?;
            let chained = lock_source(&mut tx, &id)?;
            let mut ids = Vec::new();
            for row in rows {
                let added = query(
                    &mut tx,
                    "INSERT INTO lessons (debate_id, question, lesson, went, advice, confidence,
                        created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id",
                    &row,
                )?;
                let lesson_id = integer(&added[0][0])?;
                if chained {
                    append(&mut tx, &id, &chain::LESSON, &[lesson_id.into()])?;
                }
                ids.push(lesson_id);
            }
            tx.commit().map_err(|e| failed_pg(&shown, e))?;
            Ok(ids)
        })?;
        // Evicted each in a transaction of its own, after the new ones are in: a transaction
        // that held this debate's row while it waited for a source's would deadlock with
        // another debate evicting this one's lessons at the same moment.
        // The new lessons are stored by now, so a failed eviction does not fail the call: the
        // next store evicts what this one left.
        let evicted = self
            .rows(
                "SELECT id FROM lessons ORDER BY id DESC OFFSET ?1",
                vec![Value::Integer(capacity as i64)],
            )
            .unwrap_or_default();
        for lesson_id in evicted.iter().filter_map(|row| integer(&row[0]).ok()) {
            let _ = self.remove_lesson(lesson_id);
        }
        Ok(self
            .lessons()?
            .into_iter()
            .filter(|l| ids.contains(&l.id))
            .collect())
    }

    /// Every stored lesson, newest first.
    pub fn lessons(&self) -> Result<Vec<Lesson>, StoreError> {
        self.rows(
            format!("SELECT {COLUMNS} FROM lessons ORDER BY id DESC"),
            Vec::new(),
        )?
        .iter()
        .map(|row| lesson_of(row))
        .collect()
    }

    pub fn lesson(&self, lesson_id: i64) -> Result<Option<Lesson>, StoreError> {
        self.rows(
            format!("SELECT {COLUMNS} FROM lessons WHERE id = ?1"),
            vec![Value::Integer(lesson_id)],
        )?
        .first()
        .map(|row| lesson_of(row))
        .transpose()
    }

    /// Removes a lesson; false when there was none with that id.
    pub fn remove_lesson(&self, lesson_id: i64) -> Result<bool, StoreError> {
        let shown = self.shown.clone();
        self.call(move |conn| {
            let mut tx = conn.begin().map_err(|e| failed_pg(&shown, e))?;
            let removed = forget(&mut tx, lesson_id)?;
            tx.commit().map_err(|e| failed_pg(&shown, e))?;
            Ok(removed)
        })
    }

    /// For each stored lesson that matches any of `terms` (stemmed), how many of them it
    /// matches.
    pub fn lessons_matching(&self, terms: &[String]) -> Result<Vec<(Lesson, usize)>, StoreError> {
        let mut matched = Vec::new();
        for term in terms {
            // A phrase of the term's words, parsed by PostgreSQL: no word is query syntax.
            for row in self.rows(
                "SELECT id FROM lessons WHERE words @@ phraseto_tsquery('english', ?1)",
                vec![Value::Text(term.clone())],
            )? {
                matched.push(integer(&row[0])?);
            }
        }
        crate::store::lessons::tally_matches(matched, |id| self.lesson(id))
    }

    /// Keeps the embedding `model` made of a lesson's source question.
    pub fn set_lesson_embedding(
        &self,
        lesson_id: i64,
        model: &str,
        vector: &[f32],
    ) -> Result<(), StoreError> {
        let bytes = crate::store::lessons::embedding_bytes(vector);
        self.plain(
            "UPDATE lessons SET embedding = ?2, embedding_model = ?3 WHERE id = ?1",
            vec![
                Value::Integer(lesson_id),
                Value::Blob(bytes),
                Value::Text(model.to_string()),
            ],
        )
    }

    /// Every lesson with an embedding made by `model`, with it.
    pub fn lesson_embeddings(&self, model: &str) -> Result<Vec<(Lesson, Vec<f32>)>, StoreError> {
        self.rows(
            format!(
                "SELECT {COLUMNS}, embedding FROM lessons WHERE embedding_model = ?1
                 ORDER BY id DESC"
            ),
            vec![Value::Text(model.to_string())],
        )?
        .iter()
        .map(|row| {
            let vector = match &row[8] {
                Value::Blob(bytes) => crate::store::lessons::embedding_of(bytes),
                _ => Vec::new(),
            };
            Ok((lesson_of(row)?, vector))
        })
        .collect()
    }

    /// A standing preference, such as `lessons` = `off`.
    pub fn preference(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.rows(
            "SELECT value FROM preferences WHERE key = ?1",
            vec![Value::Text(key.to_string())],
        )?
        .first()
        .map(|row| text(&row[0]))
        .transpose()
    }

    /// Kept redacted, as everything the journal stores.
    pub fn set_preference(&self, key: &str, value: &str) -> Result<(), StoreError> {
        self.plain(
            "INSERT INTO preferences (key, value) VALUES (?1, ?2)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            vec![
                Value::Text(key.to_string()),
                Value::Text(crate::sanitize::redact(value).into_owned()),
            ],
        )
    }
}
