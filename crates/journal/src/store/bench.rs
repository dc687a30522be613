//! `moot bench` runs in the journal: a run's settings, and each problem's result per arm as it
//! lands, so an interrupted run resumes where it stopped.

use super::{Sqlite, StoreError};
use crate::debate::now_rfc3339;
use rusqlite::{OptionalExtension, params};

impl Sqlite {
    pub fn create_bench_run(
        &self,
        id: &str,
        settings: &serde_json::Value,
    ) -> Result<(), StoreError> {
        self.with(|connection| {
            connection.execute(
                "INSERT INTO bench_runs (id, settings, created_at) VALUES (?1, ?2, ?3)",
                params![id, settings.to_string(), now_rfc3339()],
            )?;
            Ok(())
        })
    }

    /// A run's settings, by id.
    pub fn bench_run(&self, id: &str) -> Result<Option<serde_json::Value>, StoreError> {
        let text: Option<String> = self.with(|connection| {
            Ok(connection
                .query_row(
                    "SELECT settings FROM bench_runs WHERE id = ?1",
                    params![id],
                    |row| row.get(0),
                )
                .optional()?)
        })?;
        text.map(|t| {
            serde_json::from_str(&t)
                .map_err(|e| StoreError::Data(format!("bench run {id} settings: {e}")))
        })
        .transpose()
    }

    pub fn record_bench_result(
        &self,
        id: &str,
        problem: usize,
        arm: &str,
        result: &serde_json::Value,
    ) -> Result<(), StoreError> {
        self.with(|connection| {
            connection.execute(
                "INSERT OR REPLACE INTO bench_results (run_id, problem, arm, result) VALUES (?1, ?2, ?3, ?4)",
                params![id, problem as i64, arm, result.to_string()],
            )?;
            Ok(())
        })
    }

    /// Every result of a run: (problem, arm, result).
    pub fn bench_results(
        &self,
        id: &str,
    ) -> Result<Vec<(usize, String, serde_json::Value)>, StoreError> {
        let rows: Vec<(i64, String, String)> = self.with(|connection| {
            let rows = connection
                .prepare(
                    "SELECT problem, arm, result FROM bench_results WHERE run_id = ?1 ORDER BY problem, arm",
                )?
                .query_map(params![id], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        })?;
        rows.into_iter()
            .map(|(problem, arm, text)| match serde_json::from_str(&text) {
                Ok(value) => Ok((problem.max(0) as usize, arm, value)),
                Err(e) => Err(StoreError::Data(format!(
                    "bench result {id}/{problem}/{arm}: {e}"
                ))),
            })
            .collect()
    }
}
