//! What else a debate keeps in PostgreSQL, as it does in SQLite: the person's answers, the
//! record, approval gates, bench runs, learned endpoint shapes, and the settings and seats
//! a resume may replace.

use super::{
    PgJournal, append, execute, failed_pg, index, integer, optional_text, parsed, query, text,
};
use crate::debate::Named as _;
use crate::debate::{AskKind, Confidence, Control, GateDecision, Seat, now_rfc3339};
use crate::store::chain;
use crate::store::journal::{
    CheckpointRecord, RemoteAnswer, StoredSynthesis, checkpoint_record, choices_asked, json,
    redacted,
};
use crate::store::{GateRecord, StoreError};
use rusqlite::types::Value;

fn owned(text: &str) -> Value {
    Value::Text(text.to_string())
}

fn maybe(text: Option<&str>) -> Value {
    text.map_or(Value::Null, owned)
}

impl PgJournal {
    /// Replaces the stored settings snapshot (a resume on another provider), chained.
    pub fn set_config(&self, id: &str, config: &serde_json::Value) -> Result<(), StoreError> {
        let values = [
            owned(id),
            Value::Text(redacted(&json(config)?)),
            Value::Text(now_rfc3339()),
        ];
        self.write(id, move |tx, id| {
            execute(
                tx,
                "UPDATE debates SET config = ?2, updated_at = ?3 WHERE id = ?1",
                &values,
            )?;
            append(tx, id, &chain::DEBATE, &[])
        })
    }

    pub fn set_seats(&self, id: &str, seats: &[Seat]) -> Result<(), StoreError> {
        let values = [
            owned(id),
            Value::Text(json(&seats)?),
            Value::Text(now_rfc3339()),
        ];
        self.write(id, move |tx, id| {
            execute(
                tx,
                "UPDATE debates SET seats = ?2, updated_at = ?3 WHERE id = ?1",
                &values,
            )?;
            append(tx, id, &chain::DEBATE, &[])
        })
    }

    /// When each of the debate's turns was journaled, in journal order.
    pub fn turn_times(&self, id: &str) -> Result<Vec<String>, StoreError> {
        self.rows(
            "SELECT created_at FROM turns WHERE debate_id = ?1 ORDER BY id",
            vec![owned(id)],
        )?
        .iter()
        .map(|row| text(&row[0]))
        .collect()
    }

    /// The hash of entry `n` of debate `id`'s chain, if there is one.
    pub fn chain_entry(&self, id: &str, n: i64) -> Result<Option<String>, StoreError> {
        self.rows(
            "SELECT hash FROM chain WHERE debate_id = ?1 AND n = ?2",
            vec![owned(id), Value::Integer(n)],
        )?
        .first()
        .map(|row| text(&row[0]))
        .transpose()
    }

    /// Removes the failed or timed-out turns at the end of a failed debate's journal (and
    /// the announcement of each), so a resume asks for them again. Returns how many.
    pub fn discard_trailing_failures(&self, id: &str) -> Result<usize, StoreError> {
        self.write(id, |tx, id| {
            let mut discarded = 0;
            loop {
                let last = query(
                    tx,
                    "SELECT id, status FROM turns WHERE debate_id = ?1 ORDER BY id DESC LIMIT 1",
                    &[owned(id)],
                )?;
                let Some([Value::Integer(row), Value::Text(status)]) =
                    last.first().map(Vec::as_slice)
                else {
                    break;
                };
                if status != "failed" && status != "timed_out" {
                    break;
                }
                let row = *row;
                let announced = query(
                    tx,
                    "SELECT MAX(seq) FROM events WHERE debate_id = ?1 AND kind = 'turn_completed'",
                    &[owned(id)],
                )?;
                if let Some(Value::Integer(seq)) = announced.first().and_then(|r| r.first()) {
                    let seq = *seq;
                    execute(
                        tx,
                        "DELETE FROM events WHERE debate_id = ?1 AND seq = ?2",
                        &[owned(id), Value::Integer(seq)],
                    )?;
                    append(tx, id, &chain::EVENT, &[seq.into()])?;
                }
                execute(
                    tx,
                    "DELETE FROM turns WHERE debate_id = ?1 AND id = ?2",
                    &[owned(id), Value::Integer(row)],
                )?;
                append(tx, id, &chain::TURN, &[row.into()])?;
                discarded += 1;
            }
            Ok(discarded)
        })
    }

    /// The round outcomes and flags of a debate journaled before the event log existed.
    pub fn annotations(&self, id: &str) -> Result<Vec<(u32, crate::debate::Event)>, StoreError> {
        self.rows(
            "SELECT round, event FROM annotations WHERE debate_id = ?1 ORDER BY seq",
            vec![owned(id)],
        )?
        .iter()
        .map(|row| Ok((integer(&row[0])? as u32, parsed(&row[1])?)))
        .collect()
    }

    /// Journals an answer and who gave it (a second answer replaces the first).
    pub fn record_checkpoint(
        &self,
        id: &str,
        round: u32,
        kind: AskKind,
        control: &Control,
        answered_by: &str,
    ) -> Result<(), StoreError> {
        self.insert_answer(id, round, kind, control, answered_by, true)
            .map(|_| ())
    }

    /// An answer given from another process to the question debate `id` waits at: checked
    /// against the question as asked, and only the first answer to it kept.
    pub fn record_remote_answer(
        &self,
        id: &str,
        round: u32,
        kind: AskKind,
        control: &Control,
        answered_by: &str,
    ) -> Result<RemoteAnswer, StoreError> {
        let asked = choices_asked(&self.events(id)?, round, kind);
        if let Some(why) = kind.refusal(control, &asked) {
            return Ok(RemoteAnswer::DoesNotFit(why));
        }
        Ok(
            if self.insert_answer(id, round, kind, control, answered_by, false)? {
                RemoteAnswer::Recorded
            } else {
                RemoteAnswer::AnsweredAlready
            },
        )
    }

    /// Inserts an answer (`replace`: over one there already; else only when there is none),
    /// its guidance indexed and the answer chained when it went in. True when it went in.
    fn insert_answer(
        &self,
        id: &str,
        round: u32,
        kind: AskKind,
        control: &Control,
        answered_by: &str,
        replace: bool,
    ) -> Result<bool, StoreError> {
        let values = [
            owned(id),
            Value::Integer(round.into()),
            owned(kind.as_str()),
            owned(control.answer().as_str()),
            control
                .guidance()
                .map_or(Value::Null, |g| Value::Text(redacted(g))),
            Value::Text(now_rfc3339()),
            owned(answered_by),
        ];
        let guidance = control.guidance().map(str::to_string);
        let conflict = if replace {
            "DO UPDATE SET decision = excluded.decision, guidance = excluded.guidance,
                created_at = excluded.created_at, answered_by = excluded.answered_by"
        } else {
            "DO NOTHING"
        };
        let kind = kind.as_str().to_string();
        self.write(id, move |tx, id| {
            let inserted = execute(
                tx,
                &format!(
                    "INSERT INTO checkpoints (debate_id, round, kind, decision, guidance,
                        created_at, answered_by) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                     ON CONFLICT (debate_id, round, kind) {conflict}"
                ),
                &values,
            )? == 1;
            if inserted {
                if let Some(guidance) = &guidance {
                    index(tx, id, "guidance", guidance)?;
                }
                append(tx, id, &chain::ANSWER, &[round.into(), kind.clone().into()])?;
            }
            Ok(inserted)
        })
    }

    /// The answer journaled to `kind` after `round`, with who gave it, if there is one.
    pub fn checkpoint_answer(
        &self,
        id: &str,
        round: u32,
        kind: AskKind,
    ) -> Result<Option<CheckpointRecord>, StoreError> {
        self.rows(
            "SELECT round, kind, decision, guidance, answered_by FROM checkpoints
             WHERE debate_id = ?1 AND round = ?2 AND kind = ?3",
            vec![
                owned(id),
                Value::Integer(round.into()),
                owned(kind.as_str()),
            ],
        )?
        .first()
        .map(|row| answer_of(row))
        .transpose()
    }

    pub fn checkpoints(&self, id: &str) -> Result<Vec<CheckpointRecord>, StoreError> {
        self.rows(
            "SELECT round, kind, decision, guidance, answered_by FROM checkpoints
             WHERE debate_id = ?1 ORDER BY round, entered",
            vec![owned(id)],
        )?
        .iter()
        .map(|row| answer_of(row))
        .collect()
    }

    /// Writes (or writes again) the debate's record; its text replaces the searchable text
    /// of any earlier one; chained.
    pub fn save_synthesis(&self, id: &str, synthesis: &StoredSynthesis) -> Result<(), StoreError> {
        let values = [
            owned(id),
            Value::Text(redacted(&synthesis.markdown)),
            Value::Text(redacted(&json(&synthesis.data)?)),
            owned(synthesis.confidence.as_str()),
            maybe(synthesis.path.as_deref()),
            maybe(synthesis.follow_up_path.as_deref()),
            Value::Text(now_rfc3339()),
            maybe(synthesis.section.as_deref()),
        ];
        let (markdown, confidence) = (
            synthesis.markdown.clone(),
            synthesis.confidence.as_str().to_string(),
        );
        self.write(id, move |tx, id| {
            execute(
                tx,
                "INSERT INTO syntheses (debate_id, markdown, data, confidence, path,
                    follow_up_path, created_at, section) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                 ON CONFLICT (debate_id) DO UPDATE SET markdown = excluded.markdown,
                    data = excluded.data, confidence = excluded.confidence,
                    path = excluded.path, follow_up_path = excluded.follow_up_path,
                    created_at = excluded.created_at, section = excluded.section",
                &values,
            )?;
            execute(
                tx,
                "DELETE FROM search_index WHERE debate_id = ?1 AND kind = 'synthesis'",
                &[owned(id)],
            )?;
            index(tx, id, "synthesis", &markdown)?;
            execute(
                tx,
                "UPDATE debates SET confidence = ?2, updated_at = ?3 WHERE id = ?1",
                &[
                    owned(id),
                    Value::Text(confidence.clone()),
                    Value::Text(now_rfc3339()),
                ],
            )?;
            append(tx, id, &chain::RECORD, &[])
        })
    }

    /// Records the follow-up issue draft written from a debate's decision, chained.
    pub fn set_follow_up(&self, id: &str, path: &str) -> Result<(), StoreError> {
        let values = [owned(id), owned(path)];
        self.write(id, move |tx, id| {
            execute(
                tx,
                "UPDATE syntheses SET follow_up_path = ?2 WHERE debate_id = ?1",
                &values,
            )?;
            append(tx, id, &chain::RECORD, &[])
        })
    }

    pub fn synthesis(&self, id: &str) -> Result<Option<StoredSynthesis>, StoreError> {
        self.rows(
            "SELECT markdown, data, confidence, path, follow_up_path, section FROM syntheses
             WHERE debate_id = ?1",
            vec![owned(id)],
        )?
        .first()
        .map(|row| {
            let confidence = text(&row[2])?;
            Ok(StoredSynthesis {
                markdown: text(&row[0])?,
                data: parsed(&row[1])?,
                confidence: Confidence::parse(&confidence).ok_or_else(|| {
                    StoreError::Data(format!("unknown confidence {confidence:?}"))
                })?,
                path: optional_text(&row[3])?,
                follow_up_path: optional_text(&row[4])?,
                section: optional_text(&row[5])?,
            })
        })
        .transpose()
    }

    /// Debate `id`'s confidence column as stored, unreconciled.
    pub fn stored_confidence(&self, id: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .rows(
                "SELECT confidence FROM debates WHERE id = ?1",
                vec![owned(id)],
            )?
            .first()
            .map(|row| optional_text(&row[0]))
            .transpose()?
            .flatten())
    }

    /// Files a gate's request (again on resume: the first request and any decision stand).
    pub fn request_gate(
        &self,
        id: &str,
        gate: &str,
        point: &str,
        round: u32,
        summary: &str,
        artifacts: &serde_json::Value,
    ) -> Result<(), StoreError> {
        let values = [
            owned(id),
            owned(gate),
            owned(point),
            Value::Integer(round.into()),
            Value::Text(redacted(summary)),
            Value::Text(redacted(&artifacts.to_string())),
            Value::Text(now_rfc3339()),
        ];
        let gate = gate.to_string();
        self.write(id, move |tx, id| {
            let filed = execute(
                tx,
                "INSERT INTO gates (debate_id, gate, point, round, summary, artifacts,
                    requested_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                 ON CONFLICT (debate_id, gate) DO NOTHING",
                &values,
            )?;
            if filed == 1 {
                append(tx, id, &chain::GATE_REQUEST, &[gate.clone().into()])?;
            }
            Ok(())
        })
    }

    /// Settles a gate that waits; false when it was settled already (by any replica).
    pub fn decide_gate(
        &self,
        id: &str,
        gate: &str,
        decision: GateDecision,
        by: &str,
        reason: Option<&str>,
    ) -> Result<bool, StoreError> {
        let values = [
            owned(id),
            owned(gate),
            owned(decision.as_str()),
            owned(by),
            reason.map_or(Value::Null, |r| Value::Text(redacted(r))),
            Value::Text(now_rfc3339()),
        ];
        let gate = gate.to_string();
        self.write(id, move |tx, id| {
            let changed = execute(
                tx,
                "UPDATE gates SET decision = ?3, decided_by = ?4, reason = ?5, decided_at = ?6
                 WHERE debate_id = ?1 AND gate = ?2 AND decision IS NULL",
                &values,
            )?;
            if changed == 1 {
                append(tx, id, &chain::GATE_DECISION, &[gate.clone().into()])?;
            }
            Ok(changed == 1)
        })
    }

    /// Every gate of a debate, in the order they were reached.
    pub fn gates(&self, id: &str) -> Result<Vec<GateRecord>, StoreError> {
        self.rows(GATES, vec![owned(id)])?
            .iter()
            .map(|row| gate_of(row))
            .collect()
    }

    /// One gate of a debate.
    pub fn gate(&self, id: &str, gate: &str) -> Result<Option<GateRecord>, StoreError> {
        self.rows(
            "SELECT gate, point, round, summary, artifacts, requested_at, decision,
                decided_by, reason, decided_at
             FROM gates WHERE debate_id = ?1 AND gate = ?2",
            vec![owned(id), owned(gate)],
        )?
        .first()
        .map(|row| gate_of(row))
        .transpose()
    }

    pub fn create_bench_run(
        &self,
        id: &str,
        settings: &serde_json::Value,
    ) -> Result<(), StoreError> {
        let values = [
            owned(id),
            Value::Text(settings.to_string()),
            Value::Text(now_rfc3339()),
        ];
        self.plain(
            "INSERT INTO bench_runs (id, settings, created_at) VALUES (?1, ?2, ?3)",
            values.to_vec(),
        )
    }

    /// A run's settings, by id.
    pub fn bench_run(&self, id: &str) -> Result<Option<serde_json::Value>, StoreError> {
        self.rows(
            "SELECT settings FROM bench_runs WHERE id = ?1",
            vec![owned(id)],
        )?
        .first()
        .map(|row| parsed(&row[0]))
        .transpose()
    }

    pub fn record_bench_result(
        &self,
        id: &str,
        problem: usize,
        arm: &str,
        result: &serde_json::Value,
    ) -> Result<(), StoreError> {
        self.plain(
            "INSERT INTO bench_results (run_id, problem, arm, result) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (run_id, problem, arm) DO UPDATE SET result = excluded.result",
            vec![
                owned(id),
                Value::Integer(problem as i64),
                owned(arm),
                Value::Text(result.to_string()),
            ],
        )
    }

    /// Every result of a run: (problem, arm, result).
    pub fn bench_results(
        &self,
        id: &str,
    ) -> Result<Vec<(usize, String, serde_json::Value)>, StoreError> {
        self.rows(
            "SELECT problem, arm, result FROM bench_results WHERE run_id = ?1
             ORDER BY problem, arm",
            vec![owned(id)],
        )?
        .iter()
        .map(|row| {
            Ok((
                integer(&row[0])?.max(0) as usize,
                text(&row[1])?,
                parsed(&row[2])?,
            ))
        })
        .collect()
    }

    /// The request shapes learned per endpoint, as stored: (endpoint, JSON).
    pub fn load_capabilities(&self) -> Result<Vec<(String, String)>, StoreError> {
        self.rows(
            "SELECT endpoint, shape FROM endpoint_capabilities",
            Vec::new(),
        )?
        .iter()
        .map(|row| Ok((text(&row[0])?, text(&row[1])?)))
        .collect()
    }

    pub fn save_capabilities(&self, learned: &[(String, String)]) -> Result<(), StoreError> {
        let learned = learned.to_vec();
        let shown = self.shown.clone();
        self.call(move |conn| {
            let mut tx = conn.begin().map_err(|e| failed_pg(&shown, e))?;
            for (endpoint, shape) in learned {
                execute(
                    &mut tx,
                    "INSERT INTO endpoint_capabilities (endpoint, shape, updated_at)
                     VALUES (?1, ?2, ?3)
                     ON CONFLICT (endpoint) DO UPDATE SET shape = excluded.shape,
                        updated_at = excluded.updated_at",
                    &[
                        Value::Text(endpoint),
                        Value::Text(shape),
                        Value::Text(now_rfc3339()),
                    ],
                )?;
            }
            tx.commit().map_err(|e| failed_pg(&shown, e))
        })
    }

    /// One statement that belongs to no debate, in a transaction of its own.
    pub(super) fn plain(&self, sql: &'static str, values: Vec<Value>) -> Result<(), StoreError> {
        self.counted(sql, values).map(|_| ())
    }

    /// `plain`, saying how many rows it changed.
    pub(super) fn counted(&self, sql: &'static str, values: Vec<Value>) -> Result<u64, StoreError> {
        let shown = self.shown.clone();
        self.call(move |conn| {
            let mut tx = conn.begin().map_err(|e| failed_pg(&shown, e))?;
            let changed = execute(&mut tx, sql, &values)?;
            tx.commit().map_err(|e| failed_pg(&shown, e))?;
            Ok(changed)
        })
    }
}

const GATES: &str = "SELECT gate, point, round, summary, artifacts, requested_at, decision,
        decided_by, reason, decided_at
     FROM gates WHERE debate_id = ?1 ORDER BY requested_at, entered";

/// An answer from its columns (`round, kind, decision, guidance, answered_by`).
fn answer_of(row: &[Value]) -> Result<CheckpointRecord, StoreError> {
    checkpoint_record(
        integer(&row[0])? as u32,
        &text(&row[1])?,
        &text(&row[2])?,
        optional_text(&row[3])?,
        optional_text(&row[4])?,
    )
}

/// A gate from its columns (as `GATES` selects them).
fn gate_of(row: &[Value]) -> Result<GateRecord, StoreError> {
    Ok(GateRecord {
        gate: text(&row[0])?,
        point: text(&row[1])?,
        round: integer(&row[2])? as u32,
        summary: text(&row[3])?,
        artifacts: serde_json::from_str(&text(&row[4])?).unwrap_or(serde_json::Value::Null),
        requested_at: text(&row[5])?,
        // A word this moot does not know settles nothing, as in SQLite.
        decision: optional_text(&row[6])?
            .map(|word| GateDecision::parse(&word).unwrap_or(GateDecision::TimedOut)),
        decided_by: optional_text(&row[7])?,
        reason: optional_text(&row[8])?,
        decided_at: optional_text(&row[9])?,
    })
}
