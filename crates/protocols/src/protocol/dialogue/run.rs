//! A dialogue's run as its list of steps: seat the sides, gather the shared context, hear both
//! sides round by round (opening, argumentation, closing), then the verdict.

use super::context::shared_context;
use super::discipline::{self, RulingReplies};
use super::prompts;
use super::replies::{self, DialogueReplies, ModeratorVerdict, VerdictReplies};
use super::result::{DialogueResult, Participant, RecordedViolation};
use super::rules::{Side, Stage, State};
use super::seats::Speaker;
use super::verdict;
use super::{Dialogue, DialogueSettings};
use crate::debate::{
    Assessment, Control, Convergence, ConvergenceSignal, Decision, Event, Fact, MODERATOR, Phase,
    Ruled, Ruling, Seat, Turn, TurnKey, TurnStatus, VoteView,
};
use crate::engine::{CheckpointOutcome, Context, EngineError};
use crate::protocol::kit;
use crate::protocol::{Common, Outcome};
use serde_json::json;
use tokio::time::Instant;

/// How this protocol's run ends, its result typed.
type Ending = crate::protocol::Ending<super::result::DialogueResult>;

/// Runs a dialogue: the steps, in order.
pub(super) async fn run(
    ctx: &Context,
    common: &Common,
    settings: &DialogueSettings,
) -> Result<Ending, EngineError> {
    let mut dialogue = DialogueRun::seat(ctx, common, settings).await?;
    // 1. The shared context K.
    dialogue.facts =
        shared_context(ctx, common, settings, &dialogue.topic, &mut dialogue.notes).await?;
    // 2. Opening, argumentation, closing; a surrender, or the person, ends it early.
    let schedule: Vec<(u32, Stage)> = std::iter::once((0, Stage::Opening))
        .chain((1..=settings.max_rounds).map(|r| (r, Stage::Argument)))
        .chain(std::iter::once((settings.max_rounds + 1, Stage::Closing)))
        .collect();
    for (round, stage) in schedule {
        if dialogue.ended.is_some() {
            break;
        }
        if let Some(ending) = dialogue.round(round, stage).await? {
            return Ok(ending);
        }
    }
    // 3. The verdict: computed, then the moderator's reading.
    dialogue.conclude().await
}

/// One dialogue as it runs.
struct DialogueRun<'a> {
    ctx: &'a Context,
    common: &'a Common,
    settings: &'a DialogueSettings,
    topic: String,
    speakers: Vec<Speaker>,
    seats: Vec<Seat>,
    notes: Vec<String>,
    /// The shared context K.
    facts: Vec<Fact>,
    /// What the person asked both sides to address, in order.
    guidance: Vec<String>,
    rounds_argued: u32,
    failures_in_a_row: u32,
    /// Why it ended before the closing round, if it did.
    ended: Option<ConvergenceSignal>,
}

impl<'a> DialogueRun<'a> {
    /// PRO, OPP and the moderator take their seats; the debate starts.
    async fn seat(
        ctx: &'a Context,
        common: &'a Common,
        settings: &'a DialogueSettings,
    ) -> Result<DialogueRun<'a>, EngineError> {
        let topic = common.question.trim().to_string();
        let mut notes: Vec<String> = Vec::new();
        let speakers = seat_sides(ctx, common, settings)?;
        let seats: Vec<Seat> = speakers.iter().map(|s| s.seat.clone()).collect();
        // The closing statements are round N + 1, after the N rounds of argumentation.
        notes.extend(
            kit::seat_and_start(ctx, &Dialogue, &topic, &seats, settings.max_rounds + 1).await?,
        );
        Ok(DialogueRun {
            ctx,
            common,
            settings,
            topic,
            speakers,
            seats,
            notes,
            facts: Vec::new(),
            guidance: Vec::new(),
            rounds_argued: 0,
            failures_in_a_row: 0,
            ended: None,
        })
    }

    /// One round: both sides speak, the round is scored and closed, then its gate and (between
    /// rounds of argumentation) the person's checkpoint.
    async fn round(&mut self, round: u32, stage: Stage) -> Result<Option<Ending>, EngineError> {
        self.ctx.emit(Event::RoundStarted { round, limit: None });
        self.hear_sides(round, stage).await?;
        if stage == Stage::Argument {
            self.rounds_argued = round;
            if self.ended.is_none() && self.settings.discipline {
                self.discipline(round).await?;
            }
        }
        let computed = verdict::compute(
            &side_ids(),
            &self.ctx.turns(),
            violation_count(&self.ctx.turns()),
        );
        self.complete_round(round, stage, &computed);
        if self.ended.is_some() {
            return Ok(None);
        }
        if stage == Stage::Argument {
            let artifacts = json!({"pro": computed.pro.score, "opp": computed.opp.score, "metrics": computed.metrics});
            let summary = format!(
                "Round {round}: PRO {:.2} · OPP {:.2} · {} open why(s)",
                computed.pro.score, computed.opp.score, computed.metrics.unaddressed_whys
            );
            let stop = kit::Stop::after_round(round, summary, artifacts);
            if let Some(ending) = kit::gate(self.ctx, self.common, stop).await? {
                return Ok(Some(ending));
            }
        }
        // Between rounds of argumentation the person may guide both sides or end it.
        let last_argument = round == self.settings.max_rounds && stage == Stage::Argument;
        if stage == Stage::Argument && !last_argument {
            return self.checkpoint(round).await;
        }
        Ok(None)
    }

    /// Each side's turn in order; two failures in a row (or PRO failing its opening) fail the
    /// debate, and a surrender ends the round.
    async fn hear_sides(&mut self, round: u32, stage: Stage) -> Result<(), EngineError> {
        for index in 0..self.speakers.len() {
            let turn = self.speak(index, stage, round).await?;
            announce_violations(self.ctx, &turn);
            if !matches!(turn.status, TurnStatus::Ok | TurnStatus::Truncated) {
                let side = self.speakers[index].side.seat();
                self.notes.push(format!(
                    "{side} could not answer in round {round} (its reply {}); nothing in that turn was read as a move of {side}'s, and its grace for open whys waits for a turn it takes.",
                    match turn.status {
                        TurnStatus::Fallback => "could not be read",
                        TurnStatus::TimedOut => "timed out",
                        _ => "failed",
                    }
                ));
            }
            if turn.status == TurnStatus::Failed {
                self.failures_in_a_row += 1;
                if self.failures_in_a_row >= 2
                    || (round == 0 && self.speakers[index].side == Side::Pro)
                {
                    return Err(EngineError::Provider(
                        turn.note.unwrap_or_else(|| "the provider failed".into()),
                    ));
                }
            } else {
                self.failures_in_a_row = 0;
            }
            if verdict::surrender(&State::from_turns(&self.ctx.turns())).is_some() {
                self.ended = Some(ConvergenceSignal::ClearWinner);
                break;
            }
        }
        Ok(())
    }

    /// The round's discipline: whys past their grace become retractions (moot's own turn, once),
    /// then the moderator's ruling strikes weak arguments and flags attacks on the speaker.
    async fn discipline(&mut self, round: u32) -> Result<(), EngineError> {
        let grace = self.settings.why_grace;
        for side in [Side::Pro, Side::Opp] {
            let key = TurnKey::new(round, Phase::Lapse, side.seat());
            if self.ctx.replayed(&key).is_some() {
                continue;
            }
            let state = State::from_turns(&self.ctx.turns());
            let lapsed = discipline::lapses(&state, round, grace);
            if lapsed.iter().any(|l| l.side == side) {
                let turn = discipline::lapse_turn(&state, side, round, grace, &lapsed);
                self.ctx.record(turn).await?;
            }
        }
        if verdict::surrender(&State::from_turns(&self.ctx.turns())).is_some() {
            self.ended = Some(ConvergenceSignal::ClearWinner);
            return Ok(());
        }
        let turns = self.ctx.turns();
        let replies = RulingReplies::for_round(&State::from_turns(&turns), round);
        if replies.is_empty() {
            return Ok(());
        }
        let turn = self
            .ctx
            .speak(kit::ask(
                TurnKey::new(round, Phase::Ruling, MODERATOR),
                prompts::moderator_system(self.settings),
                discipline::ruling_prompt(&self.topic, &turns, round, &replies),
                replies,
                kit::Limits::new(600, Instant::now() + self.common.round_timeout),
            ))
            .await?;
        let Some(ruling) = Ruling::of(&turn).filter(|_| turn.status == TurnStatus::Ok) else {
            self.notes.push(format!(
                "The moderator's ruling on round {round} was unusable; nothing was struck or flagged in it."
            ));
            return Ok(());
        };
        for flagged in &ruling.ad_hominem {
            self.ctx.emit(Event::Violation {
                round,
                seat: flagged.side.clone(),
                rule: ad_hominem_rule(flagged),
            });
        }
        self.ctx.emit(Event::Ruled { round, ruling });
        Ok(())
    }

    /// One side's turn: the legal moves for now in the schema, checked by the rules.
    async fn speak(&self, index: usize, stage: Stage, round: u32) -> Result<Turn, EngineError> {
        let speaker = &self.speakers[index];
        let turns = self.ctx.turns();
        let state = State::from_turns(&turns);
        let prompt = prompts::side_prompt(&prompts::SideTurn {
            settings: self.settings,
            topic: &self.topic,
            facts: &self.facts,
            guidance: &self.guidance,
            turns: &turns,
            state: &state,
            side: speaker.side,
            stage,
            round,
        });
        self.ctx
            .speak(
                kit::ask(
                    TurnKey::new(round, stage.phase(), speaker.side.seat()),
                    prompts::side_system(self.settings, speaker, &self.topic),
                    prompt,
                    DialogueReplies::new(&state, speaker.side, stage),
                    kit::Limits::new(900, Instant::now() + self.common.round_timeout),
                )
                .by(speaker.seat.perspective.clone()),
            )
            .await
    }

    /// The round's closing event: the scores so far, and whether the dialogue goes on.
    fn complete_round(&self, round: u32, stage: Stage, computed: &verdict::Computed) {
        let summary = format!(
            "PRO {:.2} · OPP {:.2} · {} open why(s) · {} violation(s)",
            computed.pro.score,
            computed.opp.score,
            computed.metrics.unaddressed_whys,
            computed.metrics.violations
        );
        let ended = self.ended;
        let signal = match (&ended, stage) {
            (Some(signal), _) => *signal,
            (None, Stage::Closing) => ConvergenceSignal::MaxRounds,
            _ => ConvergenceSignal::None,
        };
        let reason = match (&ended, stage) {
            (Some(_), _) => format!(
                "{} gave up its thesis ({} by {})",
                verdict::surrender(&State::from_turns(&self.ctx.turns()))
                    .map(|(side, _, _)| side.seat())
                    .unwrap_or("a side"),
                computed.decisive_move.clone().unwrap_or_default(),
                computed.decided_by
            ),
            (None, Stage::Closing) => "the closing statements are in".into(),
            _ => "the sides argue on".into(),
        };
        self.ctx.emit(Event::RoundCompleted {
            round,
            convergence: Convergence {
                assessment: if ended.is_some() {
                    Assessment::Converging
                } else {
                    Assessment::NewGround
                },
                decision: if ended.is_some() || stage == Stage::Closing {
                    Decision::Conclude
                } else {
                    Decision::Continue
                },
                signal,
                reason,
                overruled: None,
            },
            summary,
        });
    }

    /// The person's checkpoint between rounds: guidance for both sides, or the end.
    async fn checkpoint(&mut self, round: u32) -> Result<Option<Ending>, EngineError> {
        match self.ctx.checkpoint(round).await? {
            CheckpointOutcome::TimedOut => return Ok(Some(Ending::Paused)),
            CheckpointOutcome::Answered {
                control: Control::End,
                ..
            } => {
                self.ended = Some(ConvergenceSignal::HumanEnded);
                self.notes.push(format!(
                    "The person ended the dialogue after round {round}."
                ));
            }
            CheckpointOutcome::Answered {
                control: Control::Guide(text),
                ..
            } => self.guidance.push(text),
            _ => {}
        }
        Ok(None)
    }

    /// The verdict: computed from the journal, past its gate, the closing vote if asked, the
    /// moderator's reading beside it, and the result.
    async fn conclude(mut self) -> Result<Ending, EngineError> {
        let turns = self.ctx.turns();
        let violations = recorded_violations(&turns);
        let computed = verdict::compute(&side_ids(), &turns, violations.len());
        let summary = format!(
            "The dialogue is over: PRO {:.2} · OPP {:.2}; computed winner {} by {}.",
            computed.pro.score, computed.opp.score, computed.winner, computed.decided_by
        );
        let round = turns.iter().map(|t| t.round).max().unwrap_or(0);
        let artifacts = json!({"computed": computed});
        let stop = kit::Stop::before_synthesis(round, summary, artifacts);
        if let Some(ending) = kit::gate(self.ctx, self.common, stop).await? {
            return Ok(ending);
        }
        let votes = self.vote(&turns, &computed, round).await?;
        let moderator = self.moderator_verdict(&computed, &turns).await?;
        let disagreement = moderator
            .as_ref()
            .filter(|m| m.winner != computed.winner)
            .map(|m| {
                format!(
                    "the moderator names {}, but the computed verdict is {} (PRO {:.2} vs OPP {:.2}, decided by {}); both are shown, and the computed one is the record's",
                    m.winner, computed.winner, computed.pro.score, computed.opp.score, computed.decided_by
                )
            });
        if moderator.is_none() {
            self.notes.push(
                "The moderator's verdict was unusable; the computed verdict stands alone.".into(),
            );
        }
        let result = DialogueResult {
            debate_id: self.ctx.debate_id.clone(),
            topic: self.topic.clone(),
            focus: self.settings.focus.clone(),
            participants: self.participants(),
            context: self.facts,
            computed,
            moderator,
            disagreement,
            violations,
            votes,
            rounds: self.rounds_argued,
            notes: self.notes,
            date: crate::debate::today(),
        };
        let markdown = result.to_markdown(&turns);
        Ok(Ending::Concluded(Box::new(Outcome {
            markdown,
            confidence: result.confidence(),
            section: Some("dialogue_verdict".into()),
            date: result.date.clone(),
            data: result,
        })))
    }

    /// The closing vote (`--vote`) between the two theses.
    async fn vote(
        &self,
        turns: &[Turn],
        computed: &verdict::Computed,
        round: u32,
    ) -> Result<Option<VoteView>, EngineError> {
        let Some(method) = self.common.vote else {
            return Ok(None);
        };
        let topic = &self.topic;
        let thesis = |side: Side| {
            let state = State::from_turns(turns);
            verdict::thesis_of(&state, side).and_then(|id| state.get(&id).map(|n| n.text.clone()))
        };
        let candidates = vec![
            (
                "PRO".to_string(),
                thesis(Side::Pro).unwrap_or_else(|| topic.clone()),
            ),
            (
                "OPP".to_string(),
                thesis(Side::Opp).unwrap_or_else(|| format!("not: {topic}")),
            ),
        ];
        let so_far = format!(
            "Computed so far: PRO {:.2}, OPP {:.2}; {} open why(s).",
            computed.pro.score, computed.opp.score, computed.metrics.unaddressed_whys
        );
        let (_, view) = kit::closing_vote(
            self.ctx,
            self.common,
            method,
            round,
            &self.seats,
            &candidates,
            &so_far,
        )
        .await?;
        Ok(Some(view))
    }

    /// The moderator reads the computed verdict and writes its own; `None` when unusable.
    async fn moderator_verdict(
        &self,
        computed: &verdict::Computed,
        turns: &[Turn],
    ) -> Result<Option<ModeratorVerdict>, EngineError> {
        let ids: Vec<String> = computed.arguments.iter().map(|a| a.id.clone()).collect();
        // Only what stands may be named strongest: when nothing scored above the line, the
        // list is empty rather than open to any argument (a struck or retracted one included).
        let surviving: Vec<String> = computed.survived.iter().map(|a| a.id.clone()).collect();
        let round = turns.iter().map(|t| t.round).max().unwrap_or(0);
        let turn = self
            .ctx
            .speak(kit::ask(
                TurnKey::new(round, Phase::Verdict, MODERATOR),
                prompts::moderator_system(self.settings),
                prompts::verdict_prompt(self.settings, &self.topic, computed, turns),
                VerdictReplies { ids, surviving },
                kit::Limits::new(1200, Instant::now() + self.common.round_timeout),
            ))
            .await?;
        Ok(turn
            .data
            .as_ref()
            .filter(|_| turn.status == TurnStatus::Ok)
            .and_then(|d| serde_json::from_value(d.clone()).ok()))
    }

    /// Who took part, as the record lists them: both sides and the moderator.
    fn participants(&self) -> Vec<Participant> {
        let settings = self.settings;
        self.speakers
            .iter()
            .map(|s| Participant {
                role: s.side.seat().into(),
                persona: s.persona.persona.clone(),
                bias: s.persona.bias.clone(),
                model: s.seat.model.clone(),
            })
            .chain(std::iter::once(Participant {
                role: "MOD".into(),
                persona: settings.moderator.persona.clone(),
                bias: settings.moderator.bias.clone(),
                model: settings
                    .moderator
                    .provider
                    .as_ref()
                    .map(|_| self.ctx.seat_provider(MODERATOR).model().to_string()),
            }))
            .collect()
    }
}

fn side_ids() -> Vec<String> {
    vec!["PRO".into(), "OPP".into()]
}

/// PRO and OPP take their seats (each on its own provider when config gives one); the
/// moderator too.
fn seat_sides(
    ctx: &Context,
    common: &Common,
    settings: &DialogueSettings,
) -> Result<Vec<Speaker>, EngineError> {
    let mut speakers = Vec::new();
    for (side, persona) in [(Side::Pro, &settings.pro), (Side::Opp, &settings.opp)] {
        let mut seat = Seat {
            id: side.seat().into(),
            perspective: persona.persona.clone(),
            priorities: settings.focus.iter().cloned().collect(),
            trade_offs: format!("bias: {}", persona.bias),
            stance: side.stance().into(),
            provider: None,
            model: None,
        };
        if let Some(spec) = &persona.provider {
            kit::seat_on_own_provider(ctx, common, &mut seat, spec)?;
        }
        speakers.push(Speaker {
            side,
            seat,
            persona: persona.clone(),
        });
    }
    if let Some(spec) = &settings.moderator.provider {
        let mut seat = Seat {
            id: MODERATOR.into(),
            perspective: "MOD".into(),
            priorities: Vec::new(),
            trade_offs: String::new(),
            stance: String::new(),
            provider: None,
            model: None,
        };
        kit::seat_on_own_provider(ctx, common, &mut seat, spec)?;
    }
    Ok(speakers)
}

/// Every rejected move of a turn (and a turn with no usable reply at all) as an event.
fn announce_violations(ctx: &Context, turn: &Turn) {
    for violation in turn_violations(turn) {
        ctx.emit(Event::Violation {
            round: turn.round,
            seat: turn.seat.clone(),
            rule: violation.rule,
        });
    }
}

fn turn_violations(turn: &Turn) -> Vec<replies::Violation> {
    if turn.status == TurnStatus::Fallback {
        return vec![replies::Violation {
            attempted: "(unreadable reply)".into(),
            rule: turn
                .note
                .clone()
                .unwrap_or_else(|| "no valid move after one repair".into()),
        }];
    }
    turn.data
        .as_ref()
        .and_then(|d| d.get("violations"))
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

/// The rule an attack on the speaker breaks, as the violation records it.
fn ad_hominem_rule(flagged: &Ruled) -> String {
    format!(
        "no ad hominem: {} attacks the speaker, not the argument (the moderator: {})",
        flagged.id, flagged.reason
    )
}

/// Every violation of the dialogue: moves the rules rejected, and moves the moderator's
/// rulings flagged as attacks on the speaker.
fn recorded_violations(turns: &[Turn]) -> Vec<RecordedViolation> {
    let rejected = turns.iter().filter(|t| t.phase.is_debater()).flat_map(|t| {
        turn_violations(t)
            .into_iter()
            .map(|violation| RecordedViolation {
                round: t.round,
                side: t.seat.clone(),
                violation,
            })
    });
    let flagged = turns.iter().flat_map(|t| {
        Ruling::of(t)
            .map(|r| r.ad_hominem)
            .unwrap_or_default()
            .into_iter()
            .map(|flagged| RecordedViolation {
                round: t.round,
                side: flagged.side.clone(),
                violation: replies::Violation {
                    attempted: flagged.id.clone(),
                    rule: ad_hominem_rule(&flagged),
                },
            })
    });
    rejected.chain(flagged).collect()
}

fn violation_count(turns: &[Turn]) -> usize {
    recorded_violations(turns).len()
}
