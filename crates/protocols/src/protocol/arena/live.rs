//! The arena directory kept written while the debate runs (`--arena-dir`), and its
//! `protocol.md`.

use super::result::{RubricScore, scores_table};
use super::seats::Member;
use super::{ArenaSettings, Order, Player, RUBRIC};
use crate::arena::{self, ArenaDir, ArenaStatus, Manifest, Participant, ScoringInfo};
use crate::debate::Event;
use crate::engine::Context;
use serde_json::Map;

/// The arena directory kept written while the debate runs (when `--arena-dir` is given). A
/// write that fails is a notice, once: the journal, not the directory, is what a resume needs.
pub(super) struct Live<'a> {
    ctx: &'a Context,
    dir: Option<ArenaDir>,
    manifest: Option<Manifest>,
    failed: bool,
}

impl<'a> Live<'a> {
    pub(super) fn open(
        ctx: &'a Context,
        settings: &ArenaSettings,
        topic: &str,
        members: &[Member],
        scoring: Option<ScoringInfo>,
        created: &str,
        notes: &mut Vec<String>,
    ) -> Live<'a> {
        let mut live = Live {
            ctx,
            dir: None,
            manifest: None,
            failed: false,
        };
        let Some(root) = &settings.arena_dir else {
            return live;
        };
        if settings.dry_run {
            notes.push(format!(
                "Arena directory: {}",
                root.join(&ctx.debate_id).display()
            ));
            return live;
        }
        match ArenaDir::create(root, &ctx.debate_id) {
            Ok(dir) => {
                notes.push(format!("Arena directory: {}", dir.path.display()));
                live.dir = Some(dir);
            }
            Err(e) => {
                notes.push(format!("The arena directory could not be made: {e}"));
                return live;
            }
        }
        live.manifest = Some(Manifest {
            debate_id: ctx.debate_id.clone(),
            topic: topic.to_string(),
            proposal_ref: None,
            participants: members
                .iter()
                .map(|m| Participant {
                    agent_id: m.persona.agent_id.clone(),
                    role_name: m.persona.role_name.clone(),
                    stance: m.persona.stance_summary.clone(),
                    kind: m.player.kind().into(),
                    // moot's own seats are there from the start; the others join.
                    joined: m.player == Player::Model,
                })
                .collect(),
            protocol: "arena".into(),
            status: ArenaStatus::Open,
            created_utc: created.to_string(),
            updated_utc: created.to_string(),
            moderator_id: moderator_id(settings, members),
            scoring_info: scoring,
            turn_requested: None,
            extra: Map::new(),
        });
        live.write(|dir| dir.write_protocol(&protocol_md(settings)));
        for member in members {
            live.write(|dir| dir.write_persona(&member.persona));
        }
        // Set up: status `open`, as the note's protocol begins.
        live.manifest(|_| {});
        live
    }

    pub(super) fn write(&mut self, write: impl FnOnce(&ArenaDir) -> Result<(), arena::ArenaError>) {
        let Some(dir) = &self.dir else { return };
        if let Err(e) = write(dir)
            && !self.failed
        {
            self.failed = true;
            self.ctx.emit(Event::Notice {
                message: format!(
                    "the arena directory could not be written ({e}); the debate goes on"
                ),
            });
        }
    }

    /// Changes the manifest as it is on disk now (another process may have marked a seat
    /// joined), under the lock.
    pub(super) fn manifest(&mut self, change: impl FnOnce(&mut Manifest)) {
        let Some(initial) = self.manifest.take() else {
            return;
        };
        let mut kept = initial.clone();
        self.write(|dir| {
            kept = dir.update_manifest(&initial, |m| {
                change(m);
                m.updated_utc = crate::debate::now_rfc3339();
            })?;
            Ok(())
        });
        self.manifest = Some(kept);
    }

    /// The debate's directory, while it is kept written.
    pub(super) fn dir(&self) -> Option<&ArenaDir> {
        self.dir.as_ref()
    }

    pub(super) fn status(&mut self, status: ArenaStatus) {
        self.manifest(|m| m.status = status);
    }

    /// Files a turn (replacing an outside agent's submission with moot's acknowledged copy)
    /// and clears the request it answered; a seat that spoke has joined (seed review 002/003
    /// #8: a person's seat read `joined: false` after both its turns).
    pub(super) fn turn(&mut self, argument: &arena::Argument, spoke: bool) {
        let Some(initial) = self.manifest.take() else {
            self.write(|dir| dir.write_turn(argument).map(|_| ()));
            return;
        };
        let mut kept = initial.clone();
        self.write(|dir| {
            kept = dir.file_turn(argument, &initial, |m| {
                m.turn_requested = None;
                m.updated_utc = crate::debate::now_rfc3339();
                if spoke
                    && let Some(seat) = m
                        .participants
                        .iter_mut()
                        .find(|p| p.agent_id == argument.agent_id)
                {
                    seat.joined = true;
                }
            })?;
            Ok(())
        });
        self.manifest = Some(kept);
    }

    pub(super) fn finish(
        &mut self,
        scores: &[RubricScore],
        scoring: Option<&ScoringInfo>,
        summary: &str,
    ) {
        if let Some(scoring) = scoring {
            let file = arena::Scores {
                debate_id: self.ctx.debate_id.clone(),
                scoring_info: scoring.clone(),
                scores: scores
                    .iter()
                    .map(|s| arena::Score {
                        turn_number: s.turn_number,
                        agent_id: s.agent_id.clone(),
                        score: s.score,
                        reason: s.reason.clone(),
                        gradual: s.gradual,
                    })
                    .collect(),
            };
            self.write(|dir| dir.write_scores(&file));
        }
        let page = format!("{}\n\n{}", summary.trim(), scores_table(scores));
        self.write(|dir| dir.write_summary(page.trim_end()));
        self.status(ArenaStatus::Closed);
    }
}

/// `protocol.md`: the rules this arena runs by.
pub fn protocol_md(settings: &ArenaSettings) -> String {
    format!(
        "# Arena protocol (moot)\n\n1. Setup: the moderator creates the arena, assigns personas, status `open`.\n\
         2. Opening statements: round 1, each seat in turn.\n\
         3. Rebuttal rounds: rounds 2–{}, each seat answers earlier arguments and names the turns it answers.\n\
         4. Closing statements: round {}.\n\
         5. Conclusion: the moderator summarises; status `closed`.\n\n\
         Turn order: {}. Time limit per turn: {} s (a missed turn is recorded and the debate goes on).\n\
         Scoring: {}.\n",
        settings.rounds.saturating_sub(1).max(2),
        settings.rounds,
        match settings.order {
            Order::RoundRobin => "round-robin",
            Order::Moderator => "the moderator orders each round, with a reason per seat",
        },
        settings.turn_timeout_seconds,
        if settings.score {
            format!(
                "the moderator scores every argument 0–1 on {}",
                RUBRIC.join(", ")
            )
        } else {
            "off".into()
        }
    )
}

/// The manifest's `moderator_id` (design note 003): `moderator` for moot's model, the agent id
/// of the participant that moderates, or `system` when moot does it with no model.
fn moderator_id(settings: &ArenaSettings, members: &[Member]) -> String {
    match &settings.moderator {
        super::Moderator::Model => "moderator".into(),
        super::Moderator::System => "system".into(),
        super::Moderator::Seat(role) => members
            .iter()
            .find(|m| m.persona.role_name.eq_ignore_ascii_case(role))
            .map_or_else(|| "moderator".into(), |m| m.persona.agent_id.clone()),
    }
}
