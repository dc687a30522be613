//! Writing and reading one debate's records: the debate row, turns, checkpoint answers,
//! the synthesis, and learned endpoint capabilities.

use super::chain::{self, ChainCheck, ChainHead};
use super::lease::Lease;
use super::{Sqlite, StoreError};
use crate::debate::Named as _;
use crate::debate::{
    Answer, AskKind, Confidence, Control, Debate, DebateStatus, Event, Phase, Seat, Stage, Turn,
    TurnStatus, now_rfc3339,
};
use crate::sanitize;
use rusqlite::{Connection, OptionalExtension, Row, params};
use std::path::Path;

/// A stored answer to something the person was asked.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointRecord {
    pub round: u32,
    pub kind: AskKind,
    pub control: Control,
    /// Who answered ("alice at the workbench"); empty for answers stored before moot kept it.
    pub answered_by: String,
}

/// A stored synthesis with where it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredSynthesis {
    pub markdown: String,
    pub data: serde_json::Value,
    pub confidence: Confidence,
    pub path: Option<String>,
    pub follow_up_path: Option<String>,
    /// The name of the protocol's own document in `show --json` (`debate_result`), if any.
    pub section: Option<String>,
}

/// Adds searchable text, free of escapes so that a printed snippet never carries one.
fn index(connection: &Connection, id: &str, kind: &str, body: &str) -> rusqlite::Result<()> {
    connection
        .prepare_cached("INSERT INTO search_index (body, debate_id, kind) VALUES (?1, ?2, ?3)")?
        .execute(params![sanitize::clean(body), id, kind])?;
    Ok(())
}

/// An answer as stored (its kind and decision as words), read back; both journals read it
/// so.
pub(super) fn checkpoint_record(
    round: u32,
    kind: &str,
    decision: &str,
    guidance: Option<String>,
    answered_by: Option<String>,
) -> Result<CheckpointRecord, StoreError> {
    let kind = AskKind::parse(kind)
        .ok_or_else(|| StoreError::Data(format!("unknown question kind {kind:?}")))?;
    let answer: Answer = decision
        .parse()
        .map_err(|_| StoreError::Data(format!("unknown checkpoint decision {decision:?}")))?;
    Ok(CheckpointRecord {
        round,
        kind,
        control: Control::from_stored(answer, guidance),
        answered_by: answered_by.unwrap_or_default(),
    })
}

/// The options a debate offered when it last asked `kind` after `round`, from its events
/// (none for a question that offers none).
pub(super) fn choices_asked(events: &[Event], round: u32, kind: AskKind) -> Vec<(String, String)> {
    if kind != AskKind::Choice {
        return Vec::new();
    }
    events
        .iter()
        .rev()
        .find_map(|event| match event {
            Event::Checkpoint {
                round: asked,
                kind: asked_kind,
                choices,
                ..
            } if *asked == round && *asked_kind == kind => Some(choices.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

/// Text as the journal keeps it: free of every secret moot knows (keys, URL credentials),
/// whatever wrote it (a model reply, an error body, a person).
pub(super) fn redacted(text: &str) -> String {
    sanitize::redact(text).into_owned()
}

pub(super) fn json<T: serde::Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Data(e.to_string()))
}

impl Sqlite {
    /// A copy of the journal at `path` holding only debate `id` (its turns, answers, gates
    /// and log), for re-running it without touching the original.
    pub fn copy_debate(&self, id: &str, path: &Path) -> Result<Sqlite, StoreError> {
        let target = path
            .to_str()
            .ok_or_else(|| StoreError::Data(format!("{} is not a UTF-8 path", path.display())))?;
        self.with(|connection| {
            connection.execute("VACUUM INTO ?1", params![target])?;
            Ok(())
        })?;
        let copy = Sqlite::open(path)?;
        copy.with(|connection| {
            connection.execute("DELETE FROM debates WHERE id != ?1", params![id])?;
            Ok(())
        })?;
        Ok(copy)
    }

    pub fn create_debate(&self, debate: &Debate) -> Result<(), StoreError> {
        self.write(|tx| {
            tx.prepare_cached(
                "INSERT INTO debates (id, question, protocol, status, config, seats, created_at,
                    updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?
            .execute(params![
                debate.id,
                redacted(&debate.question),
                debate.protocol,
                debate.status.as_str(),
                redacted(&json(&debate.config)?),
                json(&debate.seats)?,
                debate.created_at,
                debate.updated_at,
            ])?;
            index(tx, &debate.id, "question", &debate.question)?;
            chain::append(tx, &debate.id, &chain::DEBATE, &[])?;
            Ok(())
        })
    }

    /// Where debate `id`'s chain ends now.
    pub fn chain_head(&self, id: &str) -> Result<Option<ChainHead>, StoreError> {
        self.with(|connection| {
            let known = self
                .heads
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(connection, id)?;
            match known {
                Some(head) => Ok(Some(head)),
                None => Ok(chain::head(connection, id)?),
            }
        })
    }

    /// The hash of entry `n` of debate `id`'s chain, if there is one.
    pub fn chain_entry(&self, id: &str, n: i64) -> Result<Option<String>, StoreError> {
        self.with(|connection| Ok(chain::entry_hash(connection, id, n)?))
    }

    /// Checks debate `id`'s chain against its rows (`store::chain`).
    pub fn check_chain(&self, id: &str) -> Result<ChainCheck, StoreError> {
        self.with(|connection| Ok(chain::check(connection, id)?))
    }

    pub fn set_status(
        &self,
        id: &str,
        status: DebateStatus,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        self.with(|connection| update_status(connection, id, status, error, &now_rfc3339()))
    }

    /// Debate `id`'s confidence column as stored, unreconciled: reads take a debate's
    /// confidence from its chained record, and `--verify` holds this column against it.
    pub fn stored_confidence(&self, id: &str) -> Result<Option<String>, StoreError> {
        self.read(|connection| {
            connection
                .prepare_cached("SELECT confidence FROM debates WHERE id = ?1")?
                .query_row(params![id], |row| row.get(0))
                .optional()
                .map(Option::flatten)
                .map_err(Into::into)
        })
    }

    /// Records where the debate stands (for `moot list`).
    pub fn set_stage(&self, id: &str, stage: Stage) -> Result<(), StoreError> {
        self.with(|connection| {
            connection
                .prepare_cached("UPDATE debates SET stage = ?2 WHERE id = ?1")?
                .execute(params![id, json(&stage)?])?;
            Ok(())
        })
    }

    /// Replaces the stored settings snapshot (a resume on another provider).
    pub fn set_config(&self, id: &str, config: &serde_json::Value) -> Result<(), StoreError> {
        self.write(|tx| {
            tx.prepare_cached("UPDATE debates SET config = ?2, updated_at = ?3 WHERE id = ?1")?
                .execute(params![id, redacted(&json(config)?), now_rfc3339()])?;
            chain::append(tx, id, &chain::DEBATE, &[])?;
            Ok(())
        })
    }

    pub fn set_seats(&self, id: &str, seats: &[Seat]) -> Result<(), StoreError> {
        self.write(|tx| {
            tx.prepare_cached("UPDATE debates SET seats = ?2, updated_at = ?3 WHERE id = ?1")?
                .execute(params![id, json(&seats)?, now_rfc3339()])?;
            chain::append(tx, id, &chain::DEBATE, &[])?;
            Ok(())
        })
    }

    /// Commits a turn (and its searchable text) before anyone is told about it, chained.
    pub fn record_turn(&self, id: &str, turn: &Turn) -> Result<(), StoreError> {
        self.write_turn(id, turn, true, None)
    }

    /// `record_turn` for a turn spoken elsewhere, at `at` (RFC 3339): an imported arena
    /// directory's turn keeps its own time.
    pub fn record_turn_at(&self, id: &str, turn: &Turn, at: &str) -> Result<(), StoreError> {
        self.write_turn(id, turn, true, Some(at))
    }

    /// When each of the debate's turns was journaled, in journal order.
    pub fn turn_times(&self, id: &str) -> Result<Vec<String>, StoreError> {
        self.with(|connection| {
            let mut statement = connection
                .prepare_cached("SELECT created_at FROM turns WHERE debate_id = ?1 ORDER BY id")?;
            let rows = statement.query_map(params![id], |row| row.get::<_, String>(0))?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
    }

    /// The same write as `record_turn` but for the chain, so `benches/chain.rs` can measure
    /// what the chain costs; nothing else may call it.
    #[doc(hidden)]
    pub fn record_turn_unchained_for_benchmark(
        &self,
        id: &str,
        turn: &Turn,
    ) -> Result<(), StoreError> {
        self.write_turn(id, turn, false, None)
    }

    fn write_turn(
        &self,
        id: &str,
        turn: &Turn,
        chained: bool,
        at: Option<&str>,
    ) -> Result<(), StoreError> {
        let row = TurnRow::new(turn, at)?;
        self.write(|tx| row.insert(tx, id, chained))
    }

    pub fn turns(&self, id: &str) -> Result<Vec<Turn>, StoreError> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(
            "SELECT round, phase, seat, content, moves, data, confidence, tokens_in, tokens_out,
                    tokens_estimated, latency_ms, provider, model, status, note
             FROM turns WHERE debate_id = ?1 ORDER BY id",
        )?;
            let rows = statement.query_map(params![id], turn_from_row)?;
            let mut turns = Vec::new();
            for row in rows {
                turns.push(row??);
            }
            Ok(turns)
        })
    }

    /// Removes the failed or timed-out turns at the end of a failed debate's journal, so a
    /// resume asks for them again instead of replaying the failure. Returns how many.
    pub fn discard_trailing_failures(&self, id: &str) -> Result<usize, StoreError> {
        self.write(|tx| {
            let mut discarded = 0;
            loop {
                let last: Option<(i64, String)> = tx
                    .prepare_cached(
                        "SELECT id, status FROM turns WHERE debate_id = ?1
                         ORDER BY id DESC LIMIT 1",
                    )?
                    .query_row(params![id], |row| Ok((row.get(0)?, row.get(1)?)))
                    .optional()?;
                match last {
                    Some((row, status)) if status == "failed" || status == "timed_out" => {
                        // Its announcement goes too, so a replay shows the retried turn once.
                        let announced: Option<i64> = tx
                            .prepare_cached(
                                "SELECT MAX(seq) FROM events WHERE debate_id = ?1
                                   AND kind = 'turn_completed'",
                            )?
                            .query_row(params![id], |row| row.get(0))
                            .optional()?
                            .flatten();
                        if let Some(seq) = announced {
                            chain::keep_link(tx, &chain::EVENT, seq)?;
                            tx.prepare_cached("DELETE FROM events WHERE seq = ?1")?
                                .execute(params![seq])?;
                            chain::remove(tx, id, &chain::EVENT, &[seq.into()], None)?;
                        }
                        chain::keep_link(tx, &chain::TURN, row)?;
                        tx.prepare_cached("DELETE FROM turns WHERE id = ?1")?
                            .execute(params![row])?;
                        chain::remove(tx, id, &chain::TURN, &[row.into()], None)?;
                        discarded += 1;
                    }
                    _ => break,
                }
            }
            Ok(discarded)
        })
    }

    /// Appends an event to the debate's log (streaming deltas never reach it).
    pub fn record_event(&self, id: &str, event: &Event) -> Result<(), StoreError> {
        self.append(id, &[super::Entry::Event(event)])
    }

    /// The debate's event log in emit order; empty for debates journaled before it existed.
    /// The debate's logged events after `seq` (0 for all), each with its place in the log,
    /// for a viewer following a running debate.
    pub fn events_after(&self, id: &str, seq: i64) -> Result<Vec<(i64, Event)>, StoreError> {
        self.numbered_events(
            "SELECT seq, event FROM events WHERE debate_id = ?1 AND seq > ?2 ORDER BY seq",
            params![id, seq],
        )
    }

    /// The place in the log of debate `id`'s latest event (0 with none): where a follower
    /// that wants only what comes next starts.
    pub fn last_event_seq(&self, id: &str) -> Result<i64, StoreError> {
        self.read(|connection| {
            Ok(connection
                .prepare_cached("SELECT COALESCE(MAX(seq), 0) FROM events WHERE debate_id = ?1")?
                .query_row(params![id], |row| row.get(0))?)
        })
    }

    /// Rows of (a number, an event as JSON) read back: the event log, the annotations.
    fn numbered_events<N: rusqlite::types::FromSql>(
        &self,
        sql: &str,
        bound: impl rusqlite::Params + Copy,
    ) -> Result<Vec<(N, Event)>, StoreError> {
        self.read(|connection| {
            let mut statement = connection.prepare_cached(sql)?;
            let rows = statement.query_map(bound, |row| {
                Ok((row.get::<_, N>(0)?, row.get::<_, String>(1)?))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (number, text) = row?;
                let event =
                    serde_json::from_str(&text).map_err(|e| StoreError::Data(e.to_string()))?;
                out.push((number, event));
            }
            Ok(out)
        })
    }

    pub fn events(&self, id: &str) -> Result<Vec<Event>, StoreError> {
        Ok(self
            .events_after(id, 0)?
            .into_iter()
            .map(|(_, event)| event)
            .collect())
    }

    /// The round outcomes and flags of a debate journaled before the event log existed (its
    /// replay is rebuilt from them), in the order they were made.
    pub fn annotations(&self, id: &str) -> Result<Vec<(u32, Event)>, StoreError> {
        self.numbered_events(
            "SELECT round, event FROM annotations WHERE debate_id = ?1 ORDER BY seq",
            params![id],
        )
    }

    /// Journals an answer and who gave it; its text becomes searchable.
    pub fn record_checkpoint(
        &self,
        id: &str,
        round: u32,
        kind: AskKind,
        control: &Control,
        answered_by: &str,
    ) -> Result<(), StoreError> {
        let answer = GivenAnswer {
            id,
            round,
            kind,
            control,
            answered_by,
        };
        self.write(|tx| answer.insert(tx, "INSERT OR REPLACE").map(|_| ()))
    }

    /// An answer given from another process (a viewer, `moot approve`, the API) to the
    /// question debate `id` waits at; the process running it reads it from here. It is checked
    /// against the question as asked before anything is journaled (an answer that does not
    /// fit would otherwise take the question's one place), and only the first answer to a
    /// question is kept.
    pub fn record_remote_answer(
        &self,
        id: &str,
        round: u32,
        kind: AskKind,
        control: &Control,
        answered_by: &str,
    ) -> Result<RemoteAnswer, StoreError> {
        if let Some(why) = kind.refusal(control, &choices_asked(&self.events(id)?, round, kind)) {
            return Ok(RemoteAnswer::DoesNotFit(why));
        }
        let answer = GivenAnswer {
            id,
            round,
            kind,
            control,
            answered_by,
        };
        Ok(if self.write(|tx| answer.insert(tx, "INSERT OR IGNORE"))? {
            RemoteAnswer::Recorded
        } else {
            RemoteAnswer::AnsweredAlready
        })
    }

    /// The answer journaled to `kind` after `round`, with who gave it, if there is one.
    pub fn checkpoint_answer(
        &self,
        id: &str,
        round: u32,
        kind: AskKind,
    ) -> Result<Option<CheckpointRecord>, StoreError> {
        // Asked four times a second while a debate waits: one keyed row, not the whole table.
        let row: Option<(String, Option<String>, Option<String>)> = self.with(|connection| {
            connection
                .prepare_cached(
                    "SELECT decision, guidance, answered_by FROM checkpoints
                     WHERE debate_id = ?1 AND round = ?2 AND kind = ?3",
                )?
                .query_row(params![id, round, kind.as_str()], |row| {
                    Ok((row.get(0)?, row.get(1)?, row.get(2)?))
                })
                .optional()
                .map_err(StoreError::from)
        })?;
        let Some((decision, guidance, answered_by)) = row else {
            return Ok(None);
        };
        checkpoint_record(round, kind.as_str(), &decision, guidance, answered_by).map(Some)
    }

    pub fn checkpoints(&self, id: &str) -> Result<Vec<CheckpointRecord>, StoreError> {
        self.with(|connection| {
            let mut statement = connection.prepare_cached(
                "SELECT round, kind, decision, guidance, answered_by FROM checkpoints
                 WHERE debate_id = ?1 ORDER BY round, rowid",
            )?;
            let rows = statement.query_map(params![id], |row| {
                Ok((
                    row.get::<_, u32>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, String>(2)?,
                    row.get::<_, Option<String>>(3)?,
                    row.get::<_, Option<String>>(4)?,
                ))
            })?;
            let mut records = Vec::new();
            for row in rows {
                let (round, kind, decision, guidance, answered_by) = row?;
                records.push(checkpoint_record(
                    round,
                    &kind,
                    &decision,
                    guidance,
                    answered_by,
                )?);
            }
            Ok(records)
        })
    }

    pub fn save_synthesis(&self, id: &str, synthesis: &StoredSynthesis) -> Result<(), StoreError> {
        self.write(|tx| {
            // The search index keeps debate ids unindexed, so deleting by one reads every row
            // of every debate: only a debate whose synthesis is written again has one to go.
            let rewritten = tx
                .prepare_cached("SELECT 1 FROM syntheses WHERE debate_id = ?1")?
                .exists(params![id])?;
            tx.prepare_cached(
                "INSERT OR REPLACE INTO syntheses (debate_id, markdown, data, confidence, path,
                    follow_up_path, created_at, section)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?
            .execute(params![
                id,
                redacted(&synthesis.markdown),
                redacted(&json(&synthesis.data)?),
                synthesis.confidence.as_str(),
                synthesis.path,
                synthesis.follow_up_path,
                now_rfc3339(),
                synthesis.section,
            ])?;
            if rewritten {
                tx.prepare_cached(
                    "DELETE FROM search_index WHERE debate_id = ?1 AND kind = 'synthesis'",
                )?
                .execute(params![id])?;
            }
            index(tx, id, "synthesis", &synthesis.markdown)?;
            tx.prepare_cached("UPDATE debates SET confidence = ?2, updated_at = ?3 WHERE id = ?1")?
                .execute(params![id, synthesis.confidence.as_str(), now_rfc3339()])?;
            chain::append(tx, id, &chain::RECORD, &[])?;
            Ok(())
        })
    }

    /// Records the follow-up issue draft written from a debate's decision.
    pub fn set_follow_up(&self, id: &str, path: &str) -> Result<(), StoreError> {
        self.write(|tx| {
            tx.prepare_cached("UPDATE syntheses SET follow_up_path = ?2 WHERE debate_id = ?1")?
                .execute(params![id, path])?;
            chain::append(tx, id, &chain::RECORD, &[])?;
            Ok(())
        })
    }

    pub fn synthesis(&self, id: &str) -> Result<Option<StoredSynthesis>, StoreError> {
        self.read(|connection| {
        let row = connection
            .prepare_cached("SELECT markdown, data, confidence, path, follow_up_path, section FROM syntheses WHERE debate_id = ?1")?.query_row(
                params![id],
                |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, String>(2)?,
                        row.get::<_, Option<String>>(3)?,
                        row.get::<_, Option<String>>(4)?,
                        row.get::<_, Option<String>>(5)?,
                    ))
                },
            )
            .optional()?;
        row.map(|(markdown, data, confidence, path, follow_up_path, section)| {
            Ok(StoredSynthesis {
                markdown,
                data: serde_json::from_str(&data).map_err(|e| StoreError::Data(e.to_string()))?,
                confidence: Confidence::parse(&confidence).ok_or_else(|| {
                    StoreError::Data(format!("unknown confidence {confidence:?}"))
                })?,
                path,
                follow_up_path,
                section,
            })
        })
        .transpose()
        })
    }

    /// The debate with this id, or the one debate whose id starts with it (case-insensitive).
    pub fn debate(&self, id_or_prefix: &str) -> Result<Debate, StoreError> {
        let wanted = id_or_prefix.trim();
        self.read(|connection| {
        let mut statement = connection.prepare_cached(
            // The confidence comes from the chained record, never from the row's summary
            // column, which the chain does not cover (a forged one would show).
            "SELECT id, question, protocol, status, config, seats, created_at, updated_at, finished_at,
                    (SELECT s.confidence FROM syntheses s WHERE s.debate_id = debates.id), error,
                    stage, lease_pid, lease_host, lease_at, lease_since, lease_ttl
             FROM debates WHERE id = ?1 COLLATE NOCASE OR id LIKE ?2 ESCAPE '\\' COLLATE NOCASE
                OR id LIKE ?3 ESCAPE '\\' COLLATE NOCASE
             ORDER BY (id = ?1 COLLATE NOCASE) DESC LIMIT 6",
        )?;
        let escaped = wanted
            .replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_");
        let rows = statement.query_map(
            params![wanted, format!("{escaped}%"), format!("DEB-{escaped}%")],
            debate_from_row,
        )?;
        let mut found = Vec::new();
        for row in rows {
            found.push(row??);
        }
        match found.len() {
            0 => Err(StoreError::NotFound(wanted.to_string())),
            1 => Ok(found.remove(0)),
            _ if found[0].id.eq_ignore_ascii_case(wanted) => Ok(found.remove(0)),
            _ => Err(StoreError::Ambiguous {
                prefix: wanted.to_string(),
                candidates: found.into_iter().map(|d| d.id).collect(),
            }),
        }
        })
    }

    /// The request shapes learned per endpoint, as stored: (endpoint, JSON). What a shape
    /// means is the providers' business; the journal keeps it as text.
    pub fn load_capabilities(&self) -> Result<Vec<(String, String)>, StoreError> {
        self.read(|connection| {
            let mut statement =
                connection.prepare_cached("SELECT endpoint, shape FROM endpoint_capabilities")?;
            let rows = statement.query_map([], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
            })?;
            let mut out = Vec::new();
            for row in rows {
                out.push(row?);
            }
            Ok(out)
        })
    }

    pub fn save_capabilities(&self, learned: &[(String, String)]) -> Result<(), StoreError> {
        self.with(|connection| {
        let tx = connection.unchecked_transaction()?;
        for (endpoint, shape) in learned {
            tx.prepare_cached("INSERT OR REPLACE INTO endpoint_capabilities (endpoint, shape, updated_at) VALUES (?1, ?2, ?3)")?.execute(
                params![endpoint, shape, now_rfc3339()],
            )?;
        }
        tx.commit()?;
        Ok(())
        })
    }
}

fn turn_from_row(row: &Row<'_>) -> rusqlite::Result<Result<Turn, StoreError>> {
    let phase: String = row.get(1)?;
    let moves: String = row.get(4)?;
    let data: Option<String> = row.get(5)?;
    let status: String = row.get(13)?;
    let build = || -> Result<Turn, StoreError> {
        Ok(Turn {
            round: row.get(0)?,
            phase: Phase::parse(&phase)
                .ok_or_else(|| StoreError::Data(format!("unknown phase {phase:?}")))?,
            seat: row.get(2)?,
            content: row.get(3)?,
            moves: serde_json::from_str(&moves).map_err(|e| StoreError::Data(e.to_string()))?,
            data: data
                .map(|d| serde_json::from_str(&d))
                .transpose()
                .map_err(|e| StoreError::Data(e.to_string()))?,
            confidence: row.get(6)?,
            tokens_in: row.get::<_, i64>(7)? as u64,
            tokens_out: row.get::<_, i64>(8)? as u64,
            tokens_estimated: row.get(9)?,
            latency_ms: row.get::<_, i64>(10)? as u64,
            provider: row.get(11)?,
            model: row.get(12)?,
            status: TurnStatus::parse(&status)
                .ok_or_else(|| StoreError::Data(format!("unknown turn status {status:?}")))?,
            note: row.get(14)?,
        })
    };
    Ok(build())
}

/// A debate row (selected with its stage and lease columns, 0..=15).
pub(super) fn debate_from_row(row: &Row<'_>) -> rusqlite::Result<Result<Debate, StoreError>> {
    let protocol: String = row.get(2)?;
    let status: String = row.get(3)?;
    let config: String = row.get(4)?;
    let seats: String = row.get(5)?;
    let confidence: Option<String> = row.get(9)?;
    let stage: Option<String> = row.get(11)?;
    let lease = Lease {
        pid: row.get(12)?,
        host: row.get(13)?,
        at: row.get(14)?,
        since: row.get(15)?,
        ttl: row.get(16)?,
    };
    let build = || -> Result<Debate, StoreError> {
        Ok(Debate {
            id: row.get(0)?,
            question: row.get(1)?,
            protocol,
            status: lease.status(
                DebateStatus::parse(&status)
                    .ok_or_else(|| StoreError::Data(format!("unknown status {status:?}")))?,
            ),
            config: serde_json::from_str(&config).map_err(|e| StoreError::Data(e.to_string()))?,
            seats: serde_json::from_str(&seats).map_err(|e| StoreError::Data(e.to_string()))?,
            created_at: row.get(6)?,
            updated_at: row.get(7)?,
            finished_at: row.get(8)?,
            confidence: confidence.as_deref().and_then(Confidence::parse),
            error: row.get(10)?,
            // A stage this version cannot read is simply not shown.
            stage: stage.and_then(|s| serde_json::from_str(&s).ok()),
        })
    };
    Ok(build())
}

/// A turn's row made ready outside the transaction (serialized and redacted), so the write
/// lock is held for the insert only.
pub(super) struct TurnRow {
    /// In the order of `chain::TURN`'s columns: the values bound are the values chained, so
    /// the chain needs no read-back of the row.
    values: [rusqlite::types::Value; 16],
    /// The chained values' hash (`chain::RowContent`).
    chained: chain::RowContent,
    content: String,
}

impl TurnRow {
    /// `at` (RFC 3339) is when it was spoken, if not now.
    pub(super) fn new(turn: &Turn, at: Option<&str>) -> Result<TurnRow, StoreError> {
        use rusqlite::types::Value;
        let text = |s: &str| Value::Text(redacted(s));
        let optional = |s: Option<String>| s.map_or(Value::Null, Value::Text);
        let data = turn.data.as_ref().map(json).transpose()?;
        let values = [
            Value::Integer(i64::from(turn.round)),
            Value::Text(turn.phase.as_str().to_string()),
            Value::Text(turn.seat.clone()),
            text(&turn.content),
            text(&json(&turn.moves)?),
            optional(data.map(|d| redacted(&d))),
            turn.confidence.map_or(Value::Null, Value::Real),
            Value::Integer(turn.tokens_in as i64),
            Value::Integer(turn.tokens_out as i64),
            Value::Integer(i64::from(turn.tokens_estimated)),
            Value::Integer(turn.latency_ms as i64),
            Value::Text(turn.provider.clone()),
            Value::Text(turn.model.clone()),
            Value::Text(turn.status.as_str().to_string()),
            optional(turn.note.as_deref().map(redacted)),
            Value::Text(at.map_or_else(now_rfc3339, str::to_string)),
        ];
        let bound: Vec<_> = values.iter().map(rusqlite::types::ValueRef::from).collect();
        Ok(TurnRow {
            chained: chain::RowContent::of(&bound),
            values,
            content: turn.content.clone(),
        })
    }

    /// The values the row is written with, in `chain::TURN`'s column order.
    pub(super) fn values(&self) -> &[rusqlite::types::Value] {
        &self.values
    }

    /// The turn's text, as it is made searchable.
    pub(super) fn text(&self) -> &str {
        &self.content
    }

    /// Inserts the turn into debate `id`, its text made searchable and (when `chained`) its
    /// link in the chain written with it.
    pub(super) fn insert(
        &self,
        tx: &chain::Writer<'_>,
        id: &str,
        chained: bool,
    ) -> Result<(), StoreError> {
        use rusqlite::types::{Value, ValueRef};
        // Chained, the link is written in the same insert; else SQLite numbers the row.
        let (row, link) = if chained {
            let bound: Vec<_> = self.values.iter().map(ValueRef::from).collect();
            let (row, link) = chain::row_link(tx, id, &chain::TURN, &bound, &self.chained)?;
            (Value::Integer(row), link)
        } else {
            (Value::Null, [Value::Null, Value::Null, Value::Null])
        };
        tx.prepare_cached(
            "INSERT INTO turns (id, debate_id, round, phase, seat, content, moves, data,
                confidence, tokens_in, tokens_out, tokens_estimated, latency_ms, provider,
                model, status, note, created_at, chain_n, chain_hash, chain_prev_place)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                ?17, ?18, ?19, ?20, ?21)",
        )?
        .execute(rusqlite::params_from_iter(
            [row, Value::Text(id.to_string())]
                .iter()
                .chain(&self.values)
                .chain(&link),
        ))?;
        if !self.content.trim().is_empty() {
            index(tx, id, "turn", &self.content)?;
        }
        tx.prepare_cached("UPDATE debates SET updated_at = ?2 WHERE id = ?1")?
            .execute(params![id, now_rfc3339()])?;
        Ok(())
    }
}

/// One answer to the question a debate waits at, as both ways of journaling it store it.
/// What became of an answer sent from another process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemoteAnswer {
    /// Journaled: the running debate takes it.
    Recorded,
    /// The question had its answer already.
    AnsweredAlready,
    /// It does not answer the question as asked: why, naming the answers that would.
    DoesNotFit(String),
}

struct GivenAnswer<'a> {
    id: &'a str,
    round: u32,
    kind: AskKind,
    control: &'a Control,
    answered_by: &'a str,
}

impl GivenAnswer<'_> {
    /// Inserts the answer with `verb` (which says what a second answer does); when a row went
    /// in, its guidance is indexed and the audit chain gains the answer. True when it went in.
    fn insert(&self, tx: &chain::Writer<'_>, verb: &str) -> Result<bool, StoreError> {
        let inserted = tx.execute(
            &format!(
                "{verb} INTO checkpoints (debate_id, round, kind, decision, guidance, created_at, answered_by)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
            ),
            params![
                self.id,
                self.round,
                self.kind.as_str(),
                self.control.answer().as_str(),
                self.control.guidance().map(redacted),
                now_rfc3339(),
                self.answered_by
            ],
        )? == 1;
        if inserted {
            if let Some(guidance) = self.control.guidance() {
                index(tx, self.id, "guidance", guidance)?;
            }
            let fields = [self.round.into(), self.kind.as_str().into()];
            chain::append(tx, self.id, &chain::ANSWER, &fields)?;
        }
        Ok(inserted)
    }
}

/// Sets debate `id`'s status (and error) as of `now`, in `connection` or a transaction on it.
pub(super) fn update_status(
    connection: &rusqlite::Connection,
    id: &str,
    status: DebateStatus,
    error: Option<&str>,
    now: &str,
) -> Result<(), StoreError> {
    let finished = status.has_ended().then_some(now);
    connection
        .prepare_cached(
            // A completed or cancelled debate (a rejected gate, say) stands nowhere any more;
            // one that failed or paused keeps where it stopped, for its resume.
            "UPDATE debates SET status = ?2, updated_at = ?3, finished_at = ?4, error = ?5,
             stage = CASE WHEN ?2 IN ('completed', 'cancelled') THEN NULL ELSE stage END
             WHERE id = ?1",
        )?
        .execute(params![id, status.as_str(), now, finished, error])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    /// Numbers a journal keeps as JSON text come back bit for bit, so a re-run computes what
    /// the live run computed (N11: `audit --verify` diverged on a score off by one ULP).
    #[test]
    fn floats_survive_the_journal_bit_for_bit() {
        let known: f64 = "0.9992000000000001".parse().unwrap();
        let back: serde_json::Value = serde_json::from_str("0.9992000000000001").unwrap();
        assert_eq!(back.as_f64().unwrap().to_bits(), known.to_bits(), "{back}");
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..20_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let x = (state >> 11) as f64 / (1u64 << 53) as f64;
            for value in [x, 1.0 - x * 1e-3, x * 0.3 + 0.7] {
                let text = super::json(&serde_json::json!({ "score": value })).unwrap();
                let back: serde_json::Value = serde_json::from_str(&text).unwrap();
                assert_eq!(
                    back["score"].as_f64().unwrap().to_bits(),
                    value.to_bits(),
                    "{value} was written as {text}"
                );
            }
        }
    }
}
