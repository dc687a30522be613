//! A moderated debate's run as its list of steps over `Moderation`: analyse the question, ask
//! what is unclear, seat the perspectives, plan a tree, then rounds of arguments, rebuttals,
//! guardrails, evaluation and checkpoints until the moderator concludes or the rounds run out.

use super::Moderated;
use super::analysis::{self, Analysis};
use super::moderation::{Moderation, SeatMemory};
use super::prompts::{self, DebaterInput, EvaluationInput, PoseInput};
use super::replies;
use super::verdict::{self, Evaluation, RoundFacts};
use crate::argue::argument_graph;
use crate::catalog;
use crate::debate::{
    AskKind, Assessment, Control, Convergence, ConvergenceSignal, Decision, Event, FlagKind,
    MODERATOR, Phase, Seat, Turn, TurnKey, TurnStatus,
};
use crate::engine::guardrails::{self, Allowance, RoundBudget};
use crate::engine::{CheckpointOutcome, Context, EngineError, Speech};
use crate::protocol::Common;
use crate::protocol::kit::{self, SeatRoster};
use crate::protocol::tree::{self, Role, Tree};
use serde_json::Value;
use std::collections::HashMap;
use std::time::Duration;
use tokio::time::Instant;

/// How this protocol's run ends, its result typed.
type Ending = crate::protocol::Ending<crate::debate::Synthesis>;

/// The most rounds a debate may run, even when the person keeps asking for one more.
const ROUND_CEILING: u32 = 20;

/// Rounds in a row a seat may fail before it is dropped.
const FAILURES_BEFORE_DROP: u32 = 2;

pub(super) async fn run(
    ctx: &Context,
    common: &Common,
    settings: super::ModeratedSettings,
) -> Result<Ending, EngineError> {
    let topology = settings.topology;
    let total_deadline = Instant::now() + common.total_timeout;
    let question = common.question.trim().to_string();
    let analysis = analyse(ctx, common, &question).await?;
    let clarified = match clarify(ctx, &question, &analysis).await? {
        Ok(clarified) => clarified,
        Err(ending) => return Ok(ending),
    };
    let seats = seat_perspectives(ctx, common, &analysis, &clarified).await?;
    kit::announce_topology(ctx, topology, &seats);
    // A tree built from roles: each seat's role, as the catalog knows it.
    let roles: Vec<Role> = if settings.by_roles {
        seats.iter().map(|s| Role::of(s, &common.catalog)).collect()
    } else {
        Vec::new()
    };
    let mut notes = Vec::new();
    let tree = match topology {
        kit::Topology::Tree => {
            Some(plan_tree(ctx, common, &settings, &seats, &roles, &mut notes).await?)
        }
        _ => None,
    };
    let mut debate = Moderation {
        ctx,
        common,
        question,
        clarified,
        roster: SeatRoster::new(&seats),
        memory: seats
            .iter()
            .map(|s| (s.id.clone(), SeatMemory::default()))
            .collect(),
        seats,
        analysis,
        guidance: Vec::new(),
        latest_guidance: None,
        summaries: Vec::new(),
        clarification: None,
        redirect: Vec::new(),
        notes,
        votes: None,
        topology,
        roles,
        tree,
        escalations: tree::Escalations::default(),
        max_rounds: common.max_rounds,
        rounds_run: 0,
        last_convergence: None,
        hollow: None,
        challenge: None,
        blind_first: settings.blind_first,
        total_deadline,
    };
    if settings.blind_first {
        debate.notes.push(
            "Round 1 was blind (--blind-first): each seat argued before reading any other's \
             argument, and the exchange began in round 2."
                .into(),
        );
    }
    let signal = match debate.rounds().await? {
        Ok(signal) => signal,
        Err(ending) => return Ok(ending),
    };
    debate.vote().await?;
    let summary = format!(
        "{} round(s) argued; ended because {}.",
        debate.rounds_run,
        signal.describe()
    );
    let artifacts = serde_json::json!({"votes": debate.votes, "signal": signal});
    let stop = kit::Stop::before_synthesis(debate.rounds_run, summary, artifacts);
    if let Some(ending) = kit::gate(ctx, common, stop).await? {
        return Ok(ending);
    }
    let basis = debate.synthesise(signal).await?;
    debate.approve(basis).await
}

/// A tree's teams, announced and planned (`--topology tree`): grouped by role and led by the
/// role that fits the first round, when built from roles; the planning style's reason said.
async fn plan_tree(
    ctx: &Context,
    common: &Common,
    settings: &super::ModeratedSettings,
    seats: &[Seat],
    roles: &[Role],
    notes: &mut Vec<String>,
) -> Result<Tree, EngineError> {
    let ids: Vec<String> = seats.iter().map(|s| s.id.clone()).collect();
    let mut tree = if settings.by_roles {
        Tree::by_roles(roles)
    } else {
        Tree::of(&ids)
    }
    .map_err(|e| EngineError::Setup(e.to_string()))?;
    notes.extend(tree::lead_phase(
        ctx,
        &mut tree,
        Phase::Argument,
        roles,
        false,
    ));
    tree::announce(ctx, &tree);
    // Said for debates that chose their planning so (older ones re-run as recorded).
    if settings.by_roles {
        notes.extend(tree::planned(
            ctx,
            settings.planning,
            settings.planning_reason.as_deref(),
        ));
    }
    let names = |id: &str| seat_name(seats, id);
    tree::plan(
        ctx,
        &mut tree,
        settings.planning,
        common.question.trim(),
        &names,
        Instant::now() + common.round_timeout,
    )
    .await?;
    Ok(tree)
}

/// Step 1: Prompt analysis: the heuristic, refined by the moderator.
async fn analyse(ctx: &Context, common: &Common, question: &str) -> Result<Analysis, EngineError> {
    let heuristic = analysis::analyze(question);
    let turn = ctx
        .speak(kit::ask(
            TurnKey::new(0, Phase::Analysis, MODERATOR),
            prompts::analysis_system(),
            prompts::analysis_prompt(question, &heuristic.constraints),
            replies::analysis_reply(),
            kit::Limits::new(400, Instant::now() + common.round_timeout),
        ))
        .await?;
    if turn.status == TurnStatus::Failed {
        // The first call failing means the provider cannot be used at all.
        return Err(EngineError::Provider(
            turn.note
                .clone()
                .unwrap_or_else(|| "the provider failed".into()),
        ));
    }
    Ok(merge_analysis(heuristic, turn.data.as_ref()))
}

/// Step 2: A vague prompt gets one clarifying question before perspectives are assigned: the
/// question as clarified, or how the debate ends there.
async fn clarify(
    ctx: &Context,
    question: &str,
    analysis: &Analysis,
) -> Result<Result<String, Ending>, EngineError> {
    let Some(clarifying) = analysis
        .clarifying_question
        .as_deref()
        .filter(|_| analysis.vague)
    else {
        return Ok(Ok(question.to_string()));
    };
    Ok(match ctx.clarify(0, clarifying).await? {
        CheckpointOutcome::TimedOut => Err(Ending::Paused),
        CheckpointOutcome::Answered {
            control: Control::End,
            ..
        } => Err(Ending::Cancelled),
        CheckpointOutcome::Answered {
            control: Control::Guide(answer),
            ..
        } => Ok(format!("{question}\n(Clarified by the asker: {answer})")),
        CheckpointOutcome::Answered { .. } | CheckpointOutcome::Unasked => Ok(question.to_string()),
    })
}

/// Step 3: Perspective assignment: the seats, each on its own provider where config says so,
/// journaled and announced.
async fn seat_perspectives(
    ctx: &Context,
    common: &Common,
    analysis: &Analysis,
    clarified: &str,
) -> Result<Vec<Seat>, EngineError> {
    let mut seats =
        assign_seats(common, analysis, clarified).map_err(|e| EngineError::Setup(e.to_string()))?;
    for seat in &mut seats {
        // By its perspective, or its letter (`--seat-model A=…`), the perspective's name in
        // any case.
        let own = &common.perspective_providers;
        let provider = own
            .get(&seat.perspective)
            .or_else(|| own.get(&seat.id))
            .or_else(|| {
                own.iter()
                    .find(|(name, _)| name.eq_ignore_ascii_case(&seat.perspective))
                    .map(|(_, provider)| provider)
            });
        if let Some(provider) = provider {
            seat.provider = Some(provider.kind().to_string());
            seat.model = Some(provider.model().to_string());
            ctx.seat_on(seat, provider.clone());
        }
    }
    kit::seat_and_start(
        ctx,
        &Moderated,
        common.question.trim(),
        &seats,
        common.max_rounds,
    )
    .await?;
    Ok(seats)
}

/// A seat as prompts name it: "Operational Simplicity (A)".
fn seat_name(seats: &[Seat], id: &str) -> String {
    seats
        .iter()
        .find(|s| s.id == id)
        .map_or(id.to_string(), |s| format!("{} ({id})", s.perspective))
}

/// What a round ends in.
enum Next {
    Continue,
    Stop(ConvergenceSignal),
    End(Ending),
}

impl Moderation<'_> {
    /// Step 4: Rounds until the debate converges, the person ends it, or a limit does; how it
    /// ended, or the ending when it pauses or is cancelled.
    async fn rounds(&mut self) -> Result<Result<ConvergenceSignal, Ending>, EngineError> {
        let mut signal = ConvergenceSignal::None;
        for round in 1..=ROUND_CEILING {
            if round > self.max_rounds {
                break;
            }
            if Instant::now() >= self.total_deadline {
                signal = ConvergenceSignal::TimeLimit;
                self.notes.push(format!(
                    "The total time limit ({} s) ended the debate before round {round}.",
                    self.common.total_timeout.as_secs()
                ));
                break;
            }
            let active = self.roster.active();
            if active.is_empty() {
                signal = ConvergenceSignal::NoSeatsLeft;
                break;
            }
            let next = self.round(round, &active).await?;
            if !matches!(next, Next::End(_)) {
                let summary = self
                    .summaries
                    .last()
                    .map(|(_, s)| s.clone())
                    .unwrap_or_default();
                // C9: what the reviewer weighs beside the summary: the moderator's reading of
                // the round and each seat's moves in it, by kind.
                let mut moves = serde_json::Map::new();
                for turn in self.ctx.turns().iter().filter(|t| t.round == round) {
                    if turn.seat == MODERATOR || turn.moves.is_empty() {
                        continue;
                    }
                    let mut counted = std::collections::BTreeMap::<String, usize>::new();
                    for made in &turn.moves {
                        *counted.entry(made.act.to_string()).or_default() += 1;
                    }
                    let said = counted
                        .iter()
                        .map(|(act, count)| format!("{count} {act}"))
                        .collect::<Vec<_>>()
                        .join(", ");
                    moves.insert(turn.seat.clone(), serde_json::Value::String(said));
                }
                let artifacts = serde_json::json!({
                    "round": round,
                    "summary": summary,
                    "moderator": self.last_convergence.as_ref().map(|c| format!("{}, {}: {}", c.assessment, c.signal, c.reason)),
                    "moves": moves,
                });
                let stop = kit::Stop::after_round(round, summary, artifacts);
                if let Some(ending) = kit::gate(self.ctx, self.common, stop).await? {
                    return Ok(Err(ending));
                }
            }
            match next {
                Next::Continue => {}
                Next::Stop(stopped) => {
                    signal = stopped;
                    break;
                }
                Next::End(ending) => return Ok(Err(ending)),
            }
        }
        if signal == ConvergenceSignal::None {
            signal = ConvergenceSignal::MaxRounds;
        }
        Ok(Ok(signal))
    }

    /// One round: the opening, arguments, rebuttals, guardrails, the evaluation, the verdict
    /// on it, and the person's say.
    async fn round(&mut self, round: u32, active: &[Seat]) -> Result<Next, EngineError> {
        let ctx = self.ctx;
        self.rounds_run = round;
        ctx.emit(Event::RoundStarted {
            round,
            limit: (self.max_rounds != self.common.max_rounds).then_some(self.max_rounds),
        });
        let round_time = self
            .common
            .round_timeout
            .saturating_mul(ctx.queued_turn_slots(active));
        let deadline = (Instant::now() + round_time).min(self.total_deadline);
        // A tree built from roles: its teams' leads for this round's concern.
        if let Some(tree) = self.tree.as_mut().filter(|_| !self.roles.is_empty()) {
            let phase = if round == 1 {
                Phase::Argument
            } else {
                Phase::Rebuttal
            };
            self.notes
                .extend(tree::lead_phase(ctx, tree, phase, &self.roles, true));
        }
        let pose = self.pose(round, active, deadline).await?;
        let mut budgets: HashMap<String, RoundBudget> = active
            .iter()
            .map(|s| (s.id.clone(), RoundBudget::new(self.common.token_budget)))
            .collect();
        let arguments = self
            .arguments(round, active, &pose, &mut budgets, deadline)
            .await?;
        // A blind first round ends with the arguments: a rebuttal reads the others'.
        let round_turns = if self.blind_first && round == 1 {
            arguments
        } else {
            self.rebuttals(round, active, &pose, arguments, &mut budgets, deadline)
                .await?
        };
        self.escalate(round, &round_turns, deadline).await?;
        let (mut signals, repeated) = self.guard(round, &round_turns);
        let all_turns = ctx.turns();
        let graph = argument_graph(&all_turns);
        signals.extend(verdict::round_signals(
            &round_turns,
            &graph,
            &self.roster.seats(),
        ));
        let active_after: Vec<String> = self.roster.active().into_iter().map(|s| s.id).collect();
        let evaluation = self
            .evaluate(round, active, &round_turns, &signals, repeated, deadline)
            .await?;
        self.summaries.push((round, evaluation.summary.clone()));
        self.redirect = self
            .roster
            .off_topic(ctx, round, &evaluation.off_topic, &mut self.notes);
        let judgement = verdict::judge(
            &evaluation,
            &RoundFacts {
                round,
                max_rounds: self.max_rounds,
                active: &active_after,
                repeating: repeated,
                turns: &all_turns,
            },
        );
        // The round that challenged a hollow agreement is over.
        self.challenge = None;
        self.hollow = (judgement.decision == Decision::Conclude
            && judgement.signal == ConvergenceSignal::Agreement)
            .then(|| crate::argue::hollow_agreement(&all_turns, round))
            .flatten();
        if let Some(hollow) = &self.hollow {
            ctx.emit(Event::Flag {
                round,
                seat: MODERATOR.into(),
                kind: FlagKind::HollowAgreement,
                detail: hollow.describe(),
            });
        }
        if let Some(reason) = &judgement.overruled {
            ctx.emit(Event::Flag {
                round,
                seat: MODERATOR.into(),
                kind: FlagKind::Unsupported,
                detail: format!("{reason}; the debate goes on"),
            });
        }
        self.clarification = (judgement.decision == Decision::Clarify)
            .then(|| evaluation.clarification.clone())
            .flatten();
        let convergence = Convergence {
            assessment: evaluation.assessment,
            decision: judgement.decision,
            signal: judgement.signal,
            reason: evaluation.reason.clone(),
            overruled: judgement.overruled.clone(),
        };
        self.last_convergence = Some(convergence.clone());
        ctx.emit(Event::RoundCompleted {
            round,
            convergence,
            summary: evaluation.summary.clone(),
        });
        if judgement.decision == Decision::Conclude {
            self.conclusion(round, judgement.signal).await
        } else {
            self.checkpoint(round).await
        }
    }

    /// Step 4a: The moderator poses the question or summarises the last round (a fallback opening
    /// when it cannot).
    async fn pose(
        &self,
        round: u32,
        active: &[Seat],
        deadline: Instant,
    ) -> Result<String, EngineError> {
        let input = PoseInput {
            question: &self.clarified,
            constraints: &self.analysis.constraints,
            seats: active,
            round,
            max_rounds: self.max_rounds,
            previous_summary: match self.topology {
                kit::Topology::Chain | kit::Topology::Tree => None,
                _ => self.summaries.last().map(|(_, s)| s.as_str()),
            },
            guidance: self.latest_guidance.as_deref(),
            clarification: self.clarification.as_deref(),
            redirect: &self.redirect,
        };
        let turn = self
            .ctx
            .speak(kit::prose_speech(
                TurnKey::new(round, Phase::Pose, MODERATOR),
                "moot_pose",
                prompts::moderator_system(),
                prompts::pose_prompt(&input),
                Some(400),
                deadline,
            ))
            .await?;
        Ok(if turn.status.spoke() && !turn.content.trim().is_empty() {
            turn.content
        } else {
            prompts::fallback_pose(&input)
        })
    }

    /// A tree's round ends with each lead summarising its team and the root summarising the
    /// escalations; a lead that failed hands its team to a sibling.
    async fn escalate(
        &mut self,
        round: u32,
        round_turns: &[Turn],
        deadline: Instant,
    ) -> Result<(), EngineError> {
        let Some(tree) = self.tree.as_mut() else {
            return Ok(());
        };
        let seats = self.seats.clone();
        let names = |id: &str| seat_name(&seats, id);
        let team_turns = |team: &[String]| {
            round_turns
                .iter()
                .filter(|t| team.contains(&t.seat) && t.status.spoke())
                .map(|t| {
                    format!(
                        "\n{} ({}): {}",
                        names(&t.seat),
                        t.phase,
                        crate::protocol::text::fenced(&t.seat, "argument", &t.content)
                    )
                })
                .collect::<String>()
        };
        let escalated = tree::escalate(
            self.ctx,
            tree,
            round,
            self.question.trim(),
            &team_turns,
            &names,
            deadline,
        )
        .await?;
        let spoke = |lead: &str| {
            round_turns
                .iter()
                .any(|t| t.seat == lead && t.status.spoke())
        };
        let notes = tree::settle_round(
            self.ctx,
            tree,
            &mut self.escalations,
            round,
            escalated,
            &spoke,
        );
        self.notes.extend(notes);
        Ok(())
    }

    /// What a seat is told when it argues or rebuts.
    fn debater_prompt(
        &self,
        round: u32,
        seat: &Seat,
        active: &[Seat],
        pose: &str,
        this_round: &[Turn],
    ) -> String {
        // The topology decides whose arguments this seat is shown.
        let order: Vec<String> = active.iter().map(|s| s.id.clone()).collect();
        let visible = |t: &Turn| {
            t.seat == MODERATOR && t.phase != Phase::Digest
                || match &self.tree {
                    Some(tree) => tree.sees(&seat.id, &t.seat) && t.phase != Phase::Digest,
                    None => self.topology.sees(&order, &seat.id, &t.seat),
                }
        };
        let seen: Vec<Turn> = self
            .ctx
            .turns()
            .into_iter()
            .filter(|t| visible(t))
            .collect();
        let graph = argument_graph(&seen);
        let this_round: Vec<Turn> = this_round.iter().filter(|t| visible(t)).cloned().collect();
        let this_round = this_round.as_slice();
        // A star's seats see the others only through the moderator's summary of the last round.
        let summarised;
        let pose = match (self.topology, self.summaries.last()) {
            (kit::Topology::Star, Some((round, summary))) => {
                summarised =
                    format!("{pose}\n\nThe moderator's summary of round {round}: {summary}");
                summarised.as_str()
            }
            (kit::Topology::Tree, _) => {
                let names = |id: &str| seat_name(&self.seats, id);
                summarised = match &self.tree {
                    Some(tree) => format!(
                        "{pose}\n{}",
                        tree::told(tree, &seat.id, &self.escalations, &names)
                    ),
                    None => pose.to_string(),
                };
                summarised.as_str()
            }
            _ => pose,
        };
        prompts::debater_prompt(&DebaterInput {
            question: &self.clarified,
            constraints: &self.analysis.constraints,
            seat,
            seats: active,
            round,
            max_rounds: self.max_rounds,
            pose,
            guidance: &self.guidance,
            challenge: self.challenge.as_deref(),
            previous_position: self
                .memory
                .get(&seat.id)
                .and_then(|m| m.last_position.as_deref()),
            graph: &graph,
            this_round,
            rebuttal: !this_round.is_empty(),
        })
    }

    /// Step 4b: Arguments, in parallel; every seat failing at once is the provider, not the
    /// seats: the debate stops there, resumable later.
    async fn arguments(
        &self,
        round: u32,
        active: &[Seat],
        pose: &str,
        budgets: &mut HashMap<String, RoundBudget>,
        deadline: Instant,
    ) -> Result<Vec<Turn>, EngineError> {
        let speeches: Vec<Speech> = active
            .iter()
            .map(|seat| {
                kit::debater_speech(
                    TurnKey::new(round, Phase::Argument, seat.id.clone()),
                    seat,
                    self.debater_prompt(round, seat, active, pose, &[]),
                    budgets[&seat.id].for_argument(),
                    deadline,
                )
            })
            .collect();
        let arguments = self.ctx.speak_all(speeches).await?;
        for turn in &arguments {
            if let Some(budget) = budgets.get_mut(&turn.seat) {
                budget.spend(turn.tokens_out);
            }
        }
        if !arguments.is_empty() && arguments.iter().all(|t| t.status == TurnStatus::Failed) {
            let reason = arguments
                .iter()
                .find_map(|t| t.note.clone())
                .unwrap_or_else(|| "every seat failed".into());
            return Err(EngineError::Provider(reason));
        }
        Ok(arguments)
    }

    /// Step 4c: Rebuttals, one after another, each seeing everything said this round; the round's
    /// turns, arguments first.
    async fn rebuttals(
        &self,
        round: u32,
        active: &[Seat],
        pose: &str,
        arguments: Vec<Turn>,
        budgets: &mut HashMap<String, RoundBudget>,
        deadline: Instant,
    ) -> Result<Vec<Turn>, EngineError> {
        let ctx = self.ctx;
        let mut round_turns = arguments;
        for seat in active {
            let argued = round_turns
                .iter()
                .any(|t| t.seat == seat.id && t.phase == Phase::Argument && t.status.spoke());
            if !argued {
                continue;
            }
            // The budget follows from recorded token counts, so a resume decides the same way.
            let max_tokens = match budgets[&seat.id].for_rebuttal() {
                Allowance::Unlimited => None,
                Allowance::Tokens(tokens) => Some(tokens),
                Allowance::Spent => {
                    ctx.emit(Event::Flag {
                        round,
                        seat: seat.id.clone(),
                        kind: FlagKind::Budget,
                        detail: format!(
                            "spent {} of its {} tokens this round; no rebuttal",
                            budgets[&seat.id].spent(),
                            self.common.token_budget
                        ),
                    });
                    continue;
                }
            };
            let turn = ctx
                .speak(kit::debater_speech(
                    TurnKey::new(round, Phase::Rebuttal, seat.id.clone()),
                    seat,
                    self.debater_prompt(round, seat, active, pose, &round_turns),
                    max_tokens,
                    deadline,
                ))
                .await?;
            if let Some(budget) = budgets.get_mut(&turn.seat) {
                budget.spend(turn.tokens_out);
            }
            round_turns.push(turn);
        }
        Ok(round_turns)
    }

    /// Step 4d: Guardrails over the round's turns: failures (a seat failing twice in a row is
    /// dropped), repetition, and each seat's latest position. The signals for the moderator,
    /// and how many seats repeated themselves.
    fn guard(&mut self, round: u32, round_turns: &[Turn]) -> (Vec<String>, usize) {
        let ctx = self.ctx;
        let mut signals: Vec<String> = Vec::new();
        let mut repeated = 0;
        for seat in self.roster.active() {
            self.roster.tally(
                ctx,
                round,
                &seat.id,
                round_turns,
                FAILURES_BEFORE_DROP,
                &mut self.notes,
            );
            let memory = self.memory.entry(seat.id.clone()).or_default();
            let mine: Vec<&Turn> = round_turns.iter().filter(|t| t.seat == seat.id).collect();
            if let Some(argument) = mine
                .iter()
                .find(|t| t.phase == Phase::Argument && t.status.spoke())
            {
                if let Some(previous) = &memory.last_argument
                    && let Some(ratio) = guardrails::repetition(&argument.content, previous)
                {
                    repeated += 1;
                    let detail = format!(
                        "{:.0}% of the argument repeats the previous round",
                        ratio * 100.0
                    );
                    signals.push(format!("Seat {} repeats itself: {detail}", seat.id));
                    ctx.emit(Event::Flag {
                        round,
                        seat: seat.id.clone(),
                        kind: FlagKind::Repetition,
                        detail,
                    });
                }
                memory.last_argument = Some(argument.content.clone());
            }
            if let Some(position) = mine
                .iter()
                .rev()
                .filter_map(|t| t.data.as_ref()?.get("position")?.as_str())
                .find(|p| !p.is_empty())
            {
                memory.last_position = Some(position.to_string());
            }
        }
        (signals, repeated)
    }

    /// Step 4e: The moderator evaluates the round (or, when its reply is unusable, the moves do).
    async fn evaluate(
        &self,
        round: u32,
        active: &[Seat],
        round_turns: &[Turn],
        signals: &[String],
        repeated: usize,
        deadline: Instant,
    ) -> Result<Evaluation, EngineError> {
        let turn = self
            .ctx
            .speak(kit::ask(
                TurnKey::new(round, Phase::Evaluation, MODERATOR),
                prompts::moderator_system(),
                prompts::evaluation_prompt(&EvaluationInput {
                    question: &self.clarified,
                    seats: active,
                    round,
                    max_rounds: self.max_rounds,
                    turns: round_turns,
                    signals,
                }),
                replies::evaluation_reply(active),
                kit::Limits::new(800, deadline.max(Instant::now() + Duration::from_secs(5))),
            ))
            .await?;
        Ok(turn
            .data
            .as_ref()
            .filter(|_| turn.status == TurnStatus::Ok)
            .and_then(|data| serde_json::from_value::<Evaluation>(data.clone()).ok())
            .unwrap_or_else(|| derived_evaluation(round_turns, active, repeated)))
    }

    /// Step 4f: The verdict says conclude: the person approves, or asks for one more round (past
    /// the limit if need be, never past the ceiling).
    async fn conclusion(
        &mut self,
        round: u32,
        signal: ConvergenceSignal,
    ) -> Result<Next, EngineError> {
        let mut detail = format!("The debate would end here: {}.", signal.describe());
        if let Some(hollow) = &self.hollow {
            detail.push_str(&format!(
                " But moot found it a {}; its confidence will be capped. One more round \
                 challenges the agreement.",
                hollow.describe()
            ));
        }
        let control = match self
            .ctx
            .ask(round, AskKind::Conclusion, Some(detail))
            .await?
        {
            CheckpointOutcome::TimedOut => return Ok(Next::End(Ending::Paused)),
            CheckpointOutcome::Unasked => return Ok(Next::Stop(signal)),
            CheckpointOutcome::Answered { control, .. } => control,
        };
        match control {
            Control::Continue | Control::Guide(_) if round < ROUND_CEILING => {
                if let Control::Guide(text) = &control {
                    self.guidance.push(text.clone());
                }
                self.latest_guidance = control.guidance().map(str::to_string);
                if let Some(hollow) = self.hollow.take() {
                    self.notes.push(format!(
                        "Round {} challenged the {} of round {round}.",
                        round + 1,
                        hollow.describe()
                    ));
                    self.challenge = Some(hollow.describe());
                }
                if round >= self.max_rounds {
                    self.max_rounds = round + 1;
                    self.notes.push(format!(
                        "The person asked for round {}, beyond the limit of {}.",
                        self.max_rounds, self.common.max_rounds
                    ));
                }
                Ok(Next::Continue)
            }
            other => {
                if other != Control::Accept {
                    self.notes.push(format!(
                        "The person asked for another round, but {ROUND_CEILING} rounds \
                         is the most a debate runs."
                    ));
                }
                Ok(Next::Stop(signal))
            }
        }
    }

    /// Step 4f: Between rounds: the person continues, steers the next round, or ends the debate.
    async fn checkpoint(&mut self, round: u32) -> Result<Next, EngineError> {
        match self.ctx.checkpoint(round).await? {
            CheckpointOutcome::TimedOut => Ok(Next::End(Ending::Paused)),
            CheckpointOutcome::Answered {
                control: Control::End,
                ..
            } => Ok(Next::Stop(ConvergenceSignal::HumanEnded)),
            CheckpointOutcome::Answered {
                control: Control::Guide(text),
                ..
            } => {
                self.guidance.push(text.clone());
                self.latest_guidance = Some(text);
                Ok(Next::Continue)
            }
            CheckpointOutcome::Answered { .. } | CheckpointOutcome::Unasked => {
                self.latest_guidance = None;
                Ok(Next::Continue)
            }
        }
    }
}

/// The heuristic analysis, overridden field by field by a valid moderator reply.
fn merge_analysis(mut heuristic: Analysis, data: Option<&Value>) -> Analysis {
    let Some(data) = data else {
        return heuristic;
    };
    if let Some(domain) = data.get("domain").and_then(Value::as_str) {
        heuristic.domain = domain.to_string();
    }
    if let Some(debaters) = data.get("debaters").and_then(Value::as_u64) {
        heuristic.debaters = debaters as u32;
    }
    if let Some(binary) = data.get("binary").and_then(Value::as_bool) {
        heuristic.binary = binary;
    }
    for constraint in replies::string_list(data.get("constraints"), 5) {
        if !heuristic
            .constraints
            .iter()
            .any(|c| c.eq_ignore_ascii_case(&constraint))
        {
            heuristic.constraints.push(constraint);
        }
    }
    // Only a question the moderator can actually ask makes a prompt vague.
    let asked = data
        .get("clarifying_question")
        .and_then(Value::as_str)
        .filter(|q| !q.trim().is_empty());
    if data.get("vague").and_then(Value::as_bool) == Some(true)
        && let Some(question) = asked
    {
        heuristic.vague = true;
        heuristic.clarifying_question = Some(question.to_string());
    }
    heuristic
}

fn assign_seats(
    settings: &Common,
    analysis: &Analysis,
    question: &str,
) -> Result<Vec<Seat>, catalog::SeatingError> {
    let count = settings
        .perspectives
        .or(settings.default_perspectives)
        .unwrap_or(analysis.debaters)
        .max(settings.named.len() as u32) as usize;
    let words = analysis::words(question);
    let scores = catalog::relevance(
        &settings.catalog,
        &words,
        &analysis::constraint_boosts(analysis),
    );
    let picked = catalog::select(&settings.catalog, &scores, count, &settings.named)?;
    Ok(picked
        .into_iter()
        .enumerate()
        .map(|(i, p)| Seat {
            id: ((b'A' + i as u8) as char).to_string(),
            stance: format!(
                "Push for the option that best serves {}; {}.",
                p.priorities.join(", "),
                p.trade_offs.trim_end_matches('.').to_lowercase()
            ),
            perspective: p.name,
            priorities: p.priorities,
            trade_offs: p.trade_offs,
            provider: None,
            model: None,
        })
        .collect())
}

/// The evaluation when the moderator's reply is unusable: from the moves alone.
fn derived_evaluation(turns: &[Turn], seats: &[Seat], repeated: usize) -> Evaluation {
    let concessions = turns
        .iter()
        .flat_map(|t| &t.moves)
        .filter(|m| m.act == crate::debate::Act::Concede)
        .count();
    let assessment = if repeated > 0 && repeated >= seats.len() {
        Assessment::Stagnating
    } else if concessions > 0 {
        Assessment::Converging
    } else {
        Assessment::NewGround
    };
    let summary = seats
        .iter()
        .map(|seat| {
            let position = turns
                .iter()
                .rev()
                .filter(|t| t.seat == seat.id)
                .find_map(|t| {
                    t.data
                        .as_ref()?
                        .get("position")?
                        .as_str()
                        .map(str::to_string)
                })
                .unwrap_or_else(|| "no position stated".into());
            format!("{} ({}): {}", seat.id, seat.perspective, position)
        })
        .collect::<Vec<_>>()
        .join(" · ");
    Evaluation {
        summary,
        assessment,
        decision: Decision::Continue,
        agreement: false,
        leader: None,
        off_topic: Vec::new(),
        clarification: None,
        reason: format!(
            "derived from the moves ({concessions} concession(s)); the moderator's evaluation was unusable"
        ),
    }
}
