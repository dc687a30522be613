//! A cancel asked of a debate another replica runs, in PostgreSQL (as `store::cancel`).

use super::{PgJournal, text};
use crate::debate::now_rfc3339;
use crate::store::StoreError;
use rusqlite::types::Value;

impl PgJournal {
    /// Files a cancel of debate `id`, asked by `by`; false when one waits already.
    pub fn request_cancel(&self, id: &str, by: &str) -> Result<bool, StoreError> {
        Ok(!self
            .rows(
                "INSERT INTO cancellations (debate_id, requested_by, requested_at)
                 VALUES (?1, ?2, ?3) ON CONFLICT (debate_id) DO NOTHING RETURNING debate_id",
                vec![
                    Value::Text(id.to_string()),
                    Value::Text(by.to_string()),
                    Value::Text(now_rfc3339()),
                ],
            )?
            .is_empty())
    }

    /// The debates a cancel waits for.
    pub fn cancel_requests(&self) -> Result<Vec<String>, StoreError> {
        self.rows(
            "SELECT debate_id FROM cancellations ORDER BY requested_at",
            Vec::new(),
        )?
        .iter()
        .map(|row| text(&row[0]))
        .collect()
    }

    /// Takes the cancel that waits for debate `id`: who asked, if anyone did.
    pub fn take_cancel_request(&self, id: &str) -> Result<Option<String>, StoreError> {
        self.rows(
            "DELETE FROM cancellations WHERE debate_id = ?1 RETURNING requested_by",
            vec![Value::Text(id.to_string())],
        )?
        .first()
        .map(|row| text(&row[0]))
        .transpose()
    }
}
