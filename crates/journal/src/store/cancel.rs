//! A cancel asked of a debate that another process runs (another `moot serve` on a journal
//! replicas share): filed here by whichever replica was asked, taken by the one that runs it.

use super::{Sqlite, StoreError};
use crate::debate::now_rfc3339;
use rusqlite::{OptionalExtension, params};

impl Sqlite {
    /// Files a cancel of debate `id`, asked by `by`; false when one waits already.
    pub fn request_cancel(&self, id: &str, by: &str) -> Result<bool, StoreError> {
        self.with(|connection| {
            Ok(connection.execute(
                "INSERT INTO cancellations (debate_id, requested_by, requested_at)
                 VALUES (?1, ?2, ?3) ON CONFLICT (debate_id) DO NOTHING",
                params![id, by, now_rfc3339()],
            )? == 1)
        })
    }

    /// The debates a cancel waits for.
    pub fn cancel_requests(&self) -> Result<Vec<String>, StoreError> {
        self.with(|connection| {
            Ok(connection
                .prepare("SELECT debate_id FROM cancellations ORDER BY requested_at")?
                .query_map([], |row| row.get(0))?
                .collect::<Result<_, _>>()?)
        })
    }

    /// Takes the cancel that waits for debate `id`: who asked, if anyone did.
    pub fn take_cancel_request(&self, id: &str) -> Result<Option<String>, StoreError> {
        self.with(|connection| {
            Ok(connection
                .query_row(
                    "DELETE FROM cancellations WHERE debate_id = ?1 RETURNING requested_by",
                    params![id],
                    |row| row.get(0),
                )
                .optional()?)
        })
    }
}
