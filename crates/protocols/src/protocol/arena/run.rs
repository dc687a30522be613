//! An arena's run as its list of steps: seat the personas, plan a tree, then for each round
//! order the speakers, hear them, share what the topology shares, score and gate; then the
//! closing vote and the moderator's summary.

use super::live::Live;
use super::personas::personas;
use super::prompts::{self, Sight, role_of, seen_by, transcript_text};
use super::replies::{ArgumentReplies, OrderReplies, ScoreReplies};
use super::result::{
    ArenaResult, ArenaTurn, Pick, RubricScore, arena_turn, phase_name, with_gradual,
};
use super::seats::Member;
use super::seats::{Slot, human_turn, outside_turn};
use super::{Arena, ArenaSettings, Moderator, Order, Player, RUBRIC, Topology};
use crate::arena::{ArenaStatus, Persona, ScoringInfo};
use crate::debate::{
    Assessment, Convergence, ConvergenceSignal, Decision, Event, MODERATOR, Phase, Seat, Turn,
    TurnKey, TurnStatus, VoteView,
};
use crate::engine::{Context, EngineError};
use crate::protocol::tree::{self, Role, Tree};
use crate::protocol::{Common, Outcome, kit};
use serde_json::{Map, Value, json};
use std::time::Duration;
use tokio::time::Instant;

/// How this protocol's run ends, its result typed.
type Ending = crate::protocol::Ending<super::ArenaResult>;

/// Runs an arena: the steps, in order.
pub(super) async fn run(
    ctx: &Context,
    common: &Common,
    settings: &ArenaSettings,
) -> Result<Ending, EngineError> {
    let mut arena = ArenaRun::seat(ctx, common, settings).await?;
    arena.plan_tree().await?;
    for round in 1..=settings.rounds {
        if let Some(ending) = arena.round(round).await? {
            return Ok(ending);
        }
    }
    // Gradual scores beside the rubric, from the whole debate's speech acts.
    with_gradual(&mut arena.scores, &arena.turns, &ctx.turns());
    let votes = arena.vote().await?;
    let artifacts = json!({"scores": arena.scores, "votes": votes});
    let summary = format!(
        "{} turns are in; the moderator's summary comes next.",
        arena.turns.len()
    );
    let stop = kit::Stop::before_synthesis(settings.rounds, summary, artifacts);
    if let Some(ending) = kit::gate(ctx, common, stop).await? {
        return Ok(ending);
    }
    arena.conclude(votes).await
}

/// The phase a round is in: the first opens, the last closes, the rest rebut.
fn phase_of(round: u32, rounds: u32) -> Phase {
    match round {
        1 => Phase::Opening,
        r if r == rounds => Phase::Closing,
        _ => Phase::Rebuttal,
    }
}

/// One arena as it runs: who sits, what has been said and scored, and what each seat sees.
struct ArenaRun<'a> {
    ctx: &'a Context,
    common: &'a Common,
    settings: &'a ArenaSettings,
    topic: String,
    members: Vec<Member>,
    /// The arena directory, kept written while it runs.
    live: Live<'a>,
    scoring: Option<ScoringInfo>,
    turns: Vec<ArenaTurn>,
    /// What seats see beyond turns: the moderator's summaries (star), or the tree's.
    sight: Sight,
    picks: Vec<Pick>,
    scores: Vec<RubricScore>,
    notes: Vec<String>,
    /// The seats' roles, when a tree is built from them (its leads change by phase).
    roles: Vec<Role>,
}

impl<'a> ArenaRun<'a> {
    /// Step 1: personas for every seat, the seats announced, the arena directory opened.
    async fn seat(
        ctx: &'a Context,
        common: &'a Common,
        settings: &'a ArenaSettings,
    ) -> Result<ArenaRun<'a>, EngineError> {
        let topic = common.question.trim().to_string();
        let mut notes = Vec::new();
        let created = crate::debate::now_rfc3339();
        let members: Vec<Member> = personas(ctx, common, settings, &topic, &mut notes)
            .await?
            .into_iter()
            .enumerate()
            .map(|(index, persona)| member(settings, index, persona))
            .collect();
        let seats: Vec<Seat> = members.iter().map(|m| m.seat.clone()).collect();
        let started = kit::seat_and_start(ctx, &Arena, &topic, &seats, settings.rounds).await?;
        // A participant that moderates takes the moderator's calls on its own provider.
        if let Some(chair) = chair(settings, &members) {
            let provider = ctx.seat_provider(&chair.seat.id);
            let moderator = Seat {
                id: MODERATOR.into(),
                ..chair.seat.clone()
            };
            ctx.seat_on(&moderator, provider);
            // Only what it did: with round-robin order it ordered nothing (B7).
            let did: Vec<&str> = [
                (settings.order == Order::Moderator).then_some("ordered"),
                settings.score.then_some("scored"),
                Some("summarised"),
            ]
            .into_iter()
            .flatten()
            .collect();
            notes.push(format!(
                "{} moderated as well as argued: it {} its own turns among the others.",
                chair.persona.role_name,
                super::result::said_in_prose(&did)
            ));
        }
        if settings.moderator == Moderator::System {
            notes.push("moot moderated this arena itself, with no model call: round-robin order, no scores, a summary built from the turns.".into());
        }
        kit::announce_topology(ctx, settings.topology, &seats);
        notes.extend(started);
        let scoring = settings.score.then(|| ScoringInfo {
            scale: "0-1".into(),
            rubric: RUBRIC.iter().map(|r| r.to_string()).collect(),
            extra: Default::default(),
        });
        let mut live = Live::open(
            ctx,
            settings,
            &topic,
            &members,
            scoring.clone(),
            &created,
            &mut notes,
        );
        live.status(ArenaStatus::InProgress);
        Ok(ArenaRun {
            ctx,
            common,
            settings,
            topic,
            members,
            live,
            scoring,
            turns: Vec::new(),
            sight: Sight::default(),
            picks: Vec::new(),
            scores: Vec::new(),
            notes,
            roles: Vec::new(),
        })
    }

    /// Step 2, for a tree only: its teams announced and planned.
    async fn plan_tree(&mut self) -> Result<(), EngineError> {
        if self.settings.topology != Topology::Tree {
            return Ok(());
        }
        let order: Vec<String> = self.members.iter().map(|m| m.seat.id.clone()).collect();
        let mut tree = if self.settings.by_roles {
            self.roles = self
                .members
                .iter()
                .map(|m| Role::of(&m.seat, &self.common.catalog))
                .collect();
            Tree::by_roles(&self.roles)
        } else {
            Tree::of(&order)
        }
        .map_err(|e| EngineError::Setup(e.to_string()))?;
        self.notes.extend(tree::lead_phase(
            self.ctx,
            &mut tree,
            Phase::Opening,
            &self.roles,
            false,
        ));
        tree::announce(self.ctx, &tree);
        if self.settings.by_roles {
            self.notes.extend(tree::planned(
                self.ctx,
                self.settings.planning,
                self.settings.planning_reason.as_deref(),
            ));
        }
        let members = &self.members;
        let names = |id: &str| role_of(members, id);
        tree::plan(
            self.ctx,
            &mut tree,
            self.settings.planning,
            &self.topic,
            &names,
            Instant::now() + self.common.round_timeout,
        )
        .await?;
        self.sight.tree = Some(tree);
        Ok(())
    }

    /// Step 3, once a round: order, hear every seat, share, score, close the round and gate.
    async fn round(&mut self, round: u32) -> Result<Option<Ending>, EngineError> {
        let phase = phase_of(round, self.settings.rounds);
        self.ctx.emit(Event::RoundStarted { round, limit: None });
        // A tree built from roles: its teams' leads for this round's phase.
        if let Some(tree) = self.sight.tree.as_mut() {
            self.notes
                .extend(tree::lead_phase(self.ctx, tree, phase, &self.roles, true));
        }
        let order = self.order(round).await?;
        let first_of_round = self.turns.len();
        for index in order {
            self.hear(index, round, phase).await?;
        }
        if self.turns[first_of_round..]
            .iter()
            .all(|t| t.status == TurnStatus::Failed)
        {
            return Err(EngineError::Provider(
                self.ctx
                    .turns()
                    .iter()
                    .rev()
                    .find_map(|t| t.note.clone())
                    .unwrap_or_else(|| "every seat failed".into()),
            ));
        }
        if round < self.settings.rounds {
            self.share(round, first_of_round).await?;
        }
        if self.settings.score {
            self.score(round, first_of_round).await?;
        }
        self.complete_round(round, phase, first_of_round);
        let artifacts = json!({"round": round, "scores": self.scores});
        let summary = format!("Round {round} ({}) is in.", phase_name(phase));
        let stop = kit::Stop::after_round(round, summary, artifacts);
        kit::gate(self.ctx, self.common, stop).await
    }

    /// Who speaks in a round, in order: every seat in turn, or the moderator's picks.
    async fn order(&mut self, round: u32) -> Result<Vec<usize>, EngineError> {
        Ok(match self.settings.order {
            Order::RoundRobin => (0..self.members.len()).collect(),
            Order::Moderator => {
                let (order, picks, usable) = self.moderator_order(round).await?;
                if !usable {
                    self.notes.push(format!(
                        "Round {round}'s order could not be read from the moderator; its seats spoke round-robin."
                    ));
                }
                self.picks.extend(picks);
                order
            }
        })
    }

    /// One seat's turn, by whoever plays it, filed and written to the arena directory.
    async fn hear(&mut self, index: usize, round: u32, phase: Phase) -> Result<(), EngineError> {
        let member = &self.members[index];
        let number = self.turns.len() as u32 + 1;
        let (ctx, settings) = (self.ctx, self.settings);
        let slot = Slot {
            member,
            round,
            phase,
            number,
        };
        let turn = if member.player == Player::Model {
            self.speak(member, round, phase).await?
        } else if let Some(turn) = ctx.replayed(&slot.key()) {
            // What the person or an outside agent gave before a resume is not asked again.
            turn
        } else if member.player == Player::Human {
            human_turn(ctx, settings, slot, &self.heard(round)).await?
        } else {
            outside_turn(ctx, settings, &mut self.live, slot).await?
        };
        let arena_turn = arena_turn(&turn, member, number);
        self.live
            .turn(&arena_turn.argument, arena_turn.status.spoke());
        self.turns.push(arena_turn);
        Ok(())
    }

    /// The turns a seat speaking in `round` has heard: all so far, but none of a blind first
    /// round's (`--blind-first`: no seat reads an opening before it has given its own).
    fn heard(&self, round: u32) -> Vec<ArenaTurn> {
        let blind = self.settings.blind_first && round == 1;
        self.turns
            .iter()
            .filter(|t| !blind || t.round < round)
            .cloned()
            .collect()
    }

    /// A seat moot's model plays argues its persona's stance on what it has seen.
    async fn speak(&self, member: &Member, round: u32, phase: Phase) -> Result<Turn, EngineError> {
        let heard = self.heard(round);
        let earlier: Vec<u32> = heard.iter().map(|t| t.turn_number).collect();
        let seen = seen_by(
            self.settings.topology,
            member,
            &self.members,
            &heard,
            &self.sight,
        );
        let prompt = prompts::seat_prompt(&self.topic, round, self.settings.rounds, phase, &seen);
        let shape = ArgumentReplies {
            earlier,
            rebuttal: phase != Phase::Opening,
        };
        let deadline = Instant::now() + Duration::from_secs(self.settings.turn_timeout_seconds);
        self.ctx
            .speak(
                kit::ask(
                    TurnKey::new(round, phase, member.seat.id.clone()),
                    prompts::seat_system(&member.persona),
                    prompt,
                    shape,
                    kit::Limits::new(1200, deadline),
                )
                .by(member.persona.role_name.clone()),
            )
            .await
    }

    /// What the topology shares after a round: the moderator's summary (star), or each lead's
    /// summary of its team's round (tree).
    async fn share(&mut self, round: u32, first_of_round: usize) -> Result<(), EngineError> {
        if self.settings.topology == Topology::Star {
            let text = self.digest(round, first_of_round).await?;
            self.sight.digests.push((round, text));
        }
        let Some(tree) = self.sight.tree.as_mut() else {
            return Ok(());
        };
        let members = &self.members;
        let names = |id: &str| role_of(members, id);
        let this_round = &self.turns[first_of_round..];
        let team_turns = |team: &[String]| {
            let mine: Vec<ArenaTurn> = this_round
                .iter()
                .filter(|t| team.contains(&t.seat))
                .cloned()
                .collect();
            transcript_text(members, &mine)
        };
        let deadline = Instant::now() + self.common.round_timeout;
        let escalated = tree::escalate(
            self.ctx,
            tree,
            round,
            &self.topic,
            &team_turns,
            &names,
            deadline,
        )
        .await?;
        let spoke = |lead: &str| {
            this_round
                .iter()
                .any(|t| t.seat == lead && t.status == TurnStatus::Ok)
        };
        self.notes.extend(tree::settle_round(
            self.ctx,
            tree,
            &mut self.sight.escalations,
            round,
            escalated,
            &spoke,
        ));
        Ok(())
    }

    /// The moderator's summary of a round, for a star topology's seats.
    async fn digest(&self, round: u32, first_of_round: usize) -> Result<String, EngineError> {
        if self.settings.moderator == Moderator::System {
            let what = format!("round {round}");
            return Ok(prompts::system_summary(
                &self.members,
                &self.turns[first_of_round..],
                &what,
            ));
        }
        let transcript = transcript_text(&self.members, &self.turns[first_of_round..]);
        let turn = self
            .ctx
            .speak(kit::prose_speech(
                TurnKey::new(round, Phase::Digest, MODERATOR),
                "moot_arena_digest",
                prompts::summariser_system(&self.settings.moderator),
                prompts::digest_prompt(&self.topic, round, &transcript),
                Some(500),
                Instant::now() + self.common.round_timeout,
            ))
            .await?;
        Ok(turn.content)
    }

    /// The moderator orders a round's speakers from the transcript, with a reason for each;
    /// an unusable order is round-robin, said so (false).
    async fn moderator_order(
        &self,
        round: u32,
    ) -> Result<(Vec<usize>, Vec<Pick>, bool), EngineError> {
        let ids: Vec<String> = self
            .members
            .iter()
            .map(|m| m.persona.agent_id.clone())
            .collect();
        let prompt = prompts::order_prompt(&self.topic, round, &self.members, &self.turns);
        let turn = self
            .ctx
            .speak(kit::ask(
                TurnKey::new(round, Phase::Pose, MODERATOR),
                prompts::order_system(&self.settings.moderator),
                prompt,
                OrderReplies { ids: ids.clone() },
                kit::Limits::new(600, Instant::now() + self.common.round_timeout),
            ))
            .await?;
        let picks: Vec<(String, String)> = turn
            .data
            .as_ref()
            .filter(|_| turn.status == TurnStatus::Ok)
            .and_then(|d| serde_json::from_value(d.get("order")?.clone()).ok())
            .unwrap_or_default();
        if picks.is_empty() {
            let order: Vec<usize> = (0..self.members.len()).collect();
            let picks = order
                .iter()
                .map(|&i| Pick {
                    round,
                    agent_id: ids[i].clone(),
                    reason: "round-robin: the moderator's order was unusable".into(),
                })
                .collect();
            return Ok((order, picks, false));
        }
        let order = picks
            .iter()
            .filter_map(|(id, _)| ids.iter().position(|i| i == id))
            .collect();
        let picks = picks
            .into_iter()
            .map(|(agent_id, reason)| Pick {
                round,
                agent_id,
                reason,
            })
            .collect();
        Ok((order, picks, true))
    }

    /// The moderator scores the round's arguments on the rubric; the scores so far, with
    /// their gradual scores, go out as an event.
    async fn score(&mut self, round: u32, first_of_round: usize) -> Result<(), EngineError> {
        let scored = self.score_round(round, first_of_round).await?;
        if scored.is_none() {
            // Said in the record and the summary, never left as a silent empty list (seed
            // review 002/003 #7).
            self.notes.push(format!(
                "Round {round}'s scores could not be read, even after a repair request; its arguments are unscored."
            ));
        }
        self.scores.extend(scored.unwrap_or_default());
        with_gradual(&mut self.scores, &self.turns, &self.ctx.turns());
        let turns = &self.turns;
        self.ctx.emit(Event::Scores {
            round,
            scores: self
                .scores
                .iter()
                .map(|s| crate::debate::TurnScore {
                    turn_number: s.turn_number,
                    seat: turns
                        .iter()
                        .find(|t| t.turn_number == s.turn_number)
                        .map_or_else(String::new, |t| t.seat.clone()),
                    score: s.score,
                    gradual: s.gradual,
                    reason: s.reason.clone(),
                })
                .collect(),
        });
        Ok(())
    }

    /// The moderator's rubric scores of the round's spoken arguments; `None` when its reply
    /// could not be used.
    async fn score_round(
        &self,
        round: u32,
        first_of_round: usize,
    ) -> Result<Option<Vec<RubricScore>>, EngineError> {
        let scored: Vec<ArenaTurn> = self.turns[first_of_round..]
            .iter()
            .filter(|t| t.status.spoke())
            .cloned()
            .collect();
        if scored.is_empty() {
            return Ok(Some(Vec::new()));
        }
        let numbers: Vec<u32> = scored.iter().map(|t| t.turn_number).collect();
        let transcript = transcript_text(&self.members, &scored);
        let turn = self
            .ctx
            .speak(kit::ask(
                TurnKey::new(round, Phase::Evaluation, MODERATOR),
                prompts::scorer_system(&self.settings.moderator),
                prompts::scores_prompt(&self.topic, round, &transcript),
                ScoreReplies { numbers },
                kit::Limits::new(900, Instant::now() + self.common.round_timeout),
            ))
            .await?;
        let Some(data) = turn.data.as_ref().filter(|_| turn.status == TurnStatus::Ok) else {
            return Ok(None);
        };
        let items: Vec<Value> = data
            .get("scores")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        Ok(Some(
            items
                .iter()
                .filter_map(|item| rubric_score(item, &scored))
                .collect(),
        ))
    }

    /// The round's closing event: who spoke, and whether the arena goes on.
    fn complete_round(&self, round: u32, phase: Phase, first_of_round: usize) {
        let spoke = self.turns[first_of_round..]
            .iter()
            .filter(|t| t.status.spoke())
            .count();
        let last = round == self.settings.rounds;
        self.ctx.emit(Event::RoundCompleted {
            round,
            convergence: Convergence {
                assessment: Assessment::NewGround,
                decision: if last {
                    Decision::Conclude
                } else {
                    Decision::Continue
                },
                signal: if last {
                    ConvergenceSignal::MaxRounds
                } else {
                    ConvergenceSignal::None
                },
                reason: format!("{} statements are in", phase_name(phase)),
                overruled: None,
            },
            summary: format!(
                "Round {round} ({}): {spoke} of {} seats spoke{}",
                phase_name(phase),
                self.members.len(),
                if self.settings.score {
                    format!("; {} argument(s) scored", self.scores.len())
                } else {
                    String::new()
                }
            ),
        });
    }

    /// The closing vote (`--vote`): the seats moot's model plays rank every seat's position.
    async fn vote(&mut self) -> Result<Option<VoteView>, EngineError> {
        let Some(method) = self.common.vote else {
            return Ok(None);
        };
        let voters: Vec<Seat> = self
            .members
            .iter()
            .filter(|m| m.player == Player::Model)
            .map(|m| m.seat.clone())
            .collect();
        let candidates: Vec<(String, String)> = self
            .members
            .iter()
            .map(|m| {
                (
                    m.seat.id.clone(),
                    format!("{}: {}", m.persona.role_name, m.persona.stance_summary),
                )
            })
            .collect();
        if voters.is_empty() {
            self.notes
                .push("No seat moot's model plays could vote.".into());
            return Ok(None);
        }
        let so_far = transcript_text(&self.members, &self.turns);
        let round = self.settings.rounds;
        let (_, view) = kit::closing_vote(
            self.ctx,
            self.common,
            method,
            round,
            &voters,
            &candidates,
            &so_far,
        )
        .await?;
        Ok(Some(view))
    }

    /// The last step: the moderator's summary, the arena directory closed, the result.
    async fn conclude(mut self, votes: Option<VoteView>) -> Result<Ending, EngineError> {
        let summary = self.summarise().await?;
        self.live
            .finish(&self.scores, self.scoring.as_ref(), &summary);
        let result = ArenaResult {
            debate_id: self.ctx.debate_id.clone(),
            topic: self.topic,
            personas: self.members.iter().map(|m| m.persona.clone()).collect(),
            turns: self.turns,
            order: self.settings.order,
            picks: self.picks,
            scoring: self.scoring,
            scores: self.scores,
            summary,
            votes,
            topology: self.settings.topology,
            moderator: self.settings.moderator.clone(),
            rounds: self.settings.rounds,
            notes: self.notes,
            date: crate::debate::today(),
        };
        Ok(Ending::Concluded(Box::new(Outcome {
            markdown: result.to_markdown(),
            confidence: result.confidence(),
            section: Some("arena_result".into()),
            date: result.date.clone(),
            data: result,
        })))
    }

    /// The moderator's summary, streamed; a stand-in sentence when none could be had.
    async fn summarise(&self) -> Result<String, EngineError> {
        if self.settings.moderator == Moderator::System {
            return Ok(prompts::system_summary(
                &self.members,
                &self.turns,
                "the arena",
            ));
        }
        let rounds = self.turns.iter().map(|t| t.round).max().unwrap_or(0);
        let transcript = transcript_text(&self.members, &self.turns);
        let turn = self
            .ctx
            .speak(kit::prose_speech(
                TurnKey::new(rounds, Phase::Synthesis, MODERATOR),
                "moot_arena_summary",
                prompts::summariser_system(&self.settings.moderator),
                prompts::summary_prompt(&self.topic, &transcript, &self.scores),
                Some(900),
                Instant::now() + self.common.round_timeout,
            ))
            .await?;
        Ok(match turn.status {
            TurnStatus::Ok if !turn.content.trim().is_empty() => turn.content,
            _ => "The moderator's summary could not be had; the transcript below stands.".into(),
        })
    }
}

/// The participant that moderates (`--moderator seat:ROLE`), when one does.
fn chair<'m>(settings: &ArenaSettings, members: &'m [Member]) -> Option<&'m Member> {
    let Moderator::Seat(role) = &settings.moderator else {
        return None;
    };
    members
        .iter()
        .find(|m| m.persona.role_name.eq_ignore_ascii_case(role))
}

/// The seat at `index`, with its persona and who plays it.
fn member(settings: &ArenaSettings, index: usize, persona: Persona) -> Member {
    let player = settings.players.get(index).copied().unwrap_or_default();
    Member {
        player,
        seat: Seat {
            id: char::from(b'A' + index as u8).to_string(),
            perspective: persona.role_name.clone(),
            priorities: Vec::new(),
            trade_offs: persona.instructions.clone(),
            stance: persona.stance_summary.clone(),
            // Who speaks for a seat moot's model does not play, for every face to show.
            provider: (player != Player::Model).then(|| player.speaker().to_string()),
            model: None,
        },
        persona,
    }
}

/// One rubric score from the moderator's reply, for a turn that was scored.
fn rubric_score(item: &Value, scored: &[ArenaTurn]) -> Option<RubricScore> {
    let number = item.get("turn_number")?.as_u64()? as u32;
    let turn = scored.iter().find(|t| t.turn_number == number)?;
    let criteria: Map<String, Value> = RUBRIC
        .iter()
        .filter_map(|c| Some((c.to_string(), item.get(*c)?.clone())))
        .collect();
    Some(RubricScore {
        turn_number: number,
        agent_id: turn.agent_id.clone(),
        score: item.get("score").and_then(Value::as_f64).unwrap_or(0.0),
        reason: item
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        criteria,
        gradual: None,
    })
}
