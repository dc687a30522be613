//! The moderated protocol (the Debate Mode design): analysis, perspective assignment, rounds of
//! parallel arguments and sequential rebuttals, evaluation, checkpoints, guardrails, synthesis.
//! Deterministic given the recorded turns, so a resume replays into the same state.

use super::analysis::{self, Analysis};
use super::moderator::{self, ANALYSIS_SCHEMA, EVALUATION_SCHEMA, SYNTHESIS_SCHEMA};
use super::moves::{debater_reply, debater_schema};
use super::prompts::{self, DebaterInput, EvaluationInput, PoseInput, SynthesisInput};
use super::verdict::{self, Evaluation, RoundFacts};
use super::{Common, Ending, Outcome};
use crate::argue::{argument_graph, commitment_stores};
use crate::catalog;
use crate::debate::Presentation;
use crate::debate::{
    Approval, ApprovalStatus, AskKind, Assessment, Control, Convergence, ConvergenceSignal,
    Decision, Event, FlagKind, MODERATOR, Phase, Seat, Synthesis, Turn, TurnKey, TurnStatus,
};
use crate::engine::guardrails::{self, Allowance, RoundBudget};
use crate::engine::{CheckpointOutcome, Context, EngineError, ReplyKind, Speech};
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;
use tokio::time::Instant;

/// The moderated protocol, as registered.
pub struct Moderated;

impl super::Protocol for Moderated {
    fn name(&self) -> &'static str {
        "moderated"
    }

    fn description(&self) -> &'static str {
        "a moderator seats 2–4 perspectives that argue in rounds, then writes a synthesis \
         (Debate Mode)"
    }

    /// Everything it needs is common to every protocol (perspectives, rounds, budgets).
    fn settings(&self, _: &super::SettingsInput<'_>) -> Result<Value, super::SettingsError> {
        Ok(serde_json::json!({}))
    }

    fn presentation(&self) -> Presentation {
        Presentation::default()
    }

    fn run<'a>(&'a self, ctx: &'a Context, common: &'a Common, _: &'a Value) -> super::Run<'a> {
        Box::pin(run(ctx, common))
    }

    fn follow_up(&self, outcome: &Value, _: &str, record: Option<&Path>) -> Option<String> {
        let synthesis: Synthesis = serde_json::from_value(outcome.clone()).ok()?;
        Some(crate::decision::follow_up_markdown(&synthesis, record))
    }
}

/// A seat and what the guardrails know about it.
struct SeatState {
    seat: Seat,
    muted: bool,
    dropped: bool,
    off_topic_strikes: u32,
    consecutive_failures: u32,
    last_argument: Option<String>,
    last_position: Option<String>,
}

impl SeatState {
    fn active(&self) -> bool {
        !self.muted && !self.dropped
    }
}

/// The most rounds a debate may run, even when the person keeps asking for one more.
const ROUND_CEILING: u32 = 20;

async fn run(ctx: &Context, settings: &Common) -> Result<Ending, EngineError> {
    let started = Instant::now();
    let total_deadline = started + settings.total_timeout;
    let question = settings.question.trim().to_string();

    // 1. Prompt analysis: the heuristic, refined by the moderator.
    let heuristic = analysis::analyze(&question);
    let schema = moderator::analysis_schema();
    let analysis_turn = ctx
        .speak(Speech {
            key: TurnKey::new(0, Phase::Analysis, MODERATOR),
            perspective: None,
            system: format!(
                "{}\n\n{}",
                prompts::analysis_system(),
                prompts::json_instructions(ANALYSIS_SCHEMA, &schema)
            ),
            prompt: prompts::analysis_prompt(&question, &heuristic.constraints),
            kind: ReplyKind::validated(moderator::validate_analysis, None),
            schema_name: ANALYSIS_SCHEMA,
            schema: Some(schema),
            max_tokens: Some(400),
            deadline: Some(Instant::now() + settings.round_timeout),
        })
        .await?;
    if analysis_turn.status == TurnStatus::Failed {
        // The first call failing means the provider cannot be used at all.
        return Err(EngineError::Provider(
            analysis_turn
                .note
                .clone()
                .unwrap_or_else(|| "the provider failed".into()),
        ));
    }
    let analysis = merge_analysis(heuristic, analysis_turn.data.as_ref());

    // 2. A vague prompt gets one clarifying question before perspectives are assigned.
    let mut clarified_question = question.clone();
    if analysis.vague
        && let Some(clarifying) = analysis.clarifying_question.as_deref()
    {
        match ctx.clarify(clarifying).await? {
            CheckpointOutcome::TimedOut => return Ok(Ending::Paused),
            CheckpointOutcome::Answered { control, .. } => match control {
                Control::End => return Ok(Ending::Cancelled),
                Control::Guide(answer) => {
                    clarified_question = format!("{question}\n(Clarified by the asker: {answer})");
                }
                _ => {}
            },
            CheckpointOutcome::Unasked => {}
        }
    }

    // 3. Perspective assignment.
    let mut seats =
        assign_seats(settings, &analysis, &clarified_question).map_err(EngineError::Setup)?;
    for seat in &mut seats {
        if let Some(provider) = settings.perspective_providers.get(&seat.perspective) {
            seat.provider = Some(provider.kind().to_string());
            seat.model = Some(provider.model().to_string());
            ctx.seat_on(seat, provider.clone());
        }
    }
    ctx.journal(|store| store.set_seats(&ctx.debate_id, &seats))
        .await?;
    let default_provider = ctx.seat_provider(MODERATOR);
    ctx.emit(Event::DebateStarted {
        id: ctx.debate_id.clone(),
        question: question.clone(),
        protocol: "moderated".into(),
        presentation: Presentation::default(),
        seats: seats.clone(),
        max_rounds: settings.max_rounds,
        provider: default_provider.kind().to_string(),
        model: default_provider.model().to_string(),
        caveat: default_provider.caveat().map(str::to_string),
    });
    let mut states: Vec<SeatState> = seats
        .iter()
        .map(|seat| SeatState {
            seat: seat.clone(),
            muted: false,
            dropped: false,
            off_topic_strikes: 0,
            consecutive_failures: 0,
            last_argument: None,
            last_position: None,
        })
        .collect();

    // 4. Rounds.
    let mut guidance: Vec<String> = Vec::new();
    let mut latest_guidance: Option<String> = None;
    let mut summaries: Vec<(u32, String)> = Vec::new();
    let mut clarification: Option<String> = None;
    let mut redirect: Vec<Seat> = Vec::new();
    let mut signal = ConvergenceSignal::None;
    let mut rounds_run = 0;
    let mut notes: Vec<String> = Vec::new();
    // The person may ask for rounds beyond the limit at a conclusion; never past the ceiling.
    let mut max_rounds = settings.max_rounds;

    for round in 1..=ROUND_CEILING {
        if round > max_rounds {
            break;
        }
        if Instant::now() >= total_deadline {
            signal = ConvergenceSignal::TimeLimit;
            notes.push(format!(
                "The total time limit ({} s) ended the debate before round {round}.",
                settings.total_timeout.as_secs()
            ));
            break;
        }
        let active: Vec<Seat> = states
            .iter()
            .filter(|s| s.active())
            .map(|s| s.seat.clone())
            .collect();
        if active.is_empty() {
            signal = ConvergenceSignal::NoSeatsLeft;
            break;
        }
        rounds_run = round;
        ctx.emit(Event::RoundStarted {
            round,
            limit: (max_rounds != settings.max_rounds).then_some(max_rounds),
        });
        let round_time = settings
            .round_timeout
            .saturating_mul(ctx.queued_turn_slots(&active));
        let deadline = (Instant::now() + round_time).min(total_deadline);

        // 4a. The moderator poses the question or summarises the last round.
        let pose_input = PoseInput {
            question: &clarified_question,
            constraints: &analysis.constraints,
            seats: &active,
            round,
            max_rounds,
            previous_summary: summaries.last().map(|(_, s)| s.as_str()),
            guidance: latest_guidance.as_deref(),
            clarification: clarification.as_deref(),
            redirect: &redirect,
        };
        let pose_turn = ctx
            .speak(Speech {
                key: TurnKey::new(round, Phase::Pose, MODERATOR),
                perspective: None,
                system: prompts::moderator_system(),
                prompt: prompts::pose_prompt(&pose_input),
                kind: ReplyKind::Prose,
                schema_name: "prose",
                schema: None,
                max_tokens: Some(400),
                deadline: Some(deadline),
            })
            .await?;
        let pose = if pose_turn.status.spoke() && !pose_turn.content.trim().is_empty() {
            pose_turn.content.clone()
        } else {
            prompts::fallback_pose(&pose_input)
        };

        // 4b. Arguments, in parallel.
        let graph = argument_graph(&ctx.turns());
        let mut budgets: HashMap<String, RoundBudget> = active
            .iter()
            .map(|s| (s.id.clone(), RoundBudget::new(settings.token_budget)))
            .collect();
        let schema = debater_schema();
        let instructions = prompts::json_instructions("moot_argument", &schema);
        let speeches: Vec<Speech> = active
            .iter()
            .map(|seat| {
                let state = states.iter().find(|s| s.seat.id == seat.id);
                Speech {
                    key: TurnKey::new(round, Phase::Argument, seat.id.clone()),
                    perspective: Some(seat.perspective.clone()),
                    system: prompts::debater_system(seat, &instructions),
                    prompt: prompts::debater_prompt(&DebaterInput {
                        question: &clarified_question,
                        constraints: &analysis.constraints,
                        seat,
                        seats: &active,
                        round,
                        max_rounds,
                        pose: &pose,
                        guidance: &guidance,
                        previous_position: state.and_then(|s| s.last_position.as_deref()),
                        graph: &graph,
                        this_round: &[],
                        rebuttal: false,
                    }),
                    kind: debater_reply(),
                    schema_name: "moot_argument",
                    schema: Some(schema.clone()),
                    max_tokens: budgets[&seat.id].for_argument(),
                    deadline: Some(deadline),
                }
            })
            .collect();
        let arguments = ctx.speak_all(speeches).await?;
        let mut round_turns: Vec<Turn> = Vec::new();
        for turn in &arguments {
            if let Some(budget) = budgets.get_mut(&turn.seat) {
                budget.spend(turn.tokens_out);
            }
            round_turns.push(turn.clone());
        }
        // Every seat failing at once is the provider, not the seats: stop, resumable later.
        if !arguments.is_empty() && arguments.iter().all(|t| t.status == TurnStatus::Failed) {
            let reason = arguments
                .iter()
                .find_map(|t| t.note.clone())
                .unwrap_or_else(|| "every seat failed".into());
            return Err(EngineError::Provider(reason));
        }

        // 4c. Rebuttals, one after another, each seeing everything said this round.
        for seat in &active {
            let argued = arguments
                .iter()
                .any(|t| t.seat == seat.id && t.status.spoke());
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
                            settings.token_budget
                        ),
                    });
                    continue;
                }
            };
            let state = states.iter().find(|s| s.seat.id == seat.id);
            let graph = argument_graph(&ctx.turns());
            let turn = ctx
                .speak(Speech {
                    key: TurnKey::new(round, Phase::Rebuttal, seat.id.clone()),
                    perspective: Some(seat.perspective.clone()),
                    system: prompts::debater_system(seat, &instructions),
                    prompt: prompts::debater_prompt(&DebaterInput {
                        question: &clarified_question,
                        constraints: &analysis.constraints,
                        seat,
                        seats: &active,
                        round,
                        max_rounds,
                        pose: &pose,
                        guidance: &guidance,
                        previous_position: state.and_then(|s| s.last_position.as_deref()),
                        graph: &graph,
                        this_round: &round_turns,
                        rebuttal: true,
                    }),
                    kind: debater_reply(),
                    schema_name: "moot_argument",
                    schema: Some(schema.clone()),
                    max_tokens,
                    deadline: Some(deadline),
                })
                .await?;
            if let Some(budget) = budgets.get_mut(&turn.seat) {
                budget.spend(turn.tokens_out);
            }
            round_turns.push(turn);
        }

        // 4d. Guardrails over the round's turns.
        let mut signals: Vec<String> = Vec::new();
        let mut repeated = 0;
        for state in states.iter_mut().filter(|s| s.active()) {
            let mine: Vec<&Turn> = round_turns
                .iter()
                .filter(|t| t.seat == state.seat.id)
                .collect();
            let failed = mine.iter().any(|t| !t.status.spoke()) || mine.is_empty();
            if failed {
                state.consecutive_failures += 1;
                if state.consecutive_failures >= 2 {
                    state.dropped = true;
                    let detail = format!(
                        "{} failed or timed out twice in a row; the debate goes on without it",
                        state.seat.perspective
                    );
                    notes.push(format!(
                        "Seat {} ({}) was dropped after repeated failures.",
                        state.seat.id, state.seat.perspective
                    ));
                    ctx.emit(Event::Flag {
                        round,
                        seat: state.seat.id.clone(),
                        kind: FlagKind::Dropped,
                        detail,
                    });
                }
            } else {
                state.consecutive_failures = 0;
            }
            if let Some(argument) = mine
                .iter()
                .find(|t| t.phase == Phase::Argument && t.status.spoke())
            {
                if let Some(previous) = &state.last_argument
                    && let Some(ratio) = guardrails::repetition(&argument.content, previous)
                {
                    repeated += 1;
                    let detail = format!(
                        "{:.0}% of the argument repeats the previous round",
                        ratio * 100.0
                    );
                    signals.push(format!("Seat {} repeats itself: {detail}", state.seat.id));
                    ctx.emit(Event::Flag {
                        round,
                        seat: state.seat.id.clone(),
                        kind: FlagKind::Repetition,
                        detail,
                    });
                }
                state.last_argument = Some(argument.content.clone());
            }
            if let Some(position) = mine
                .iter()
                .rev()
                .filter_map(|t| t.data.as_ref()?.get("position")?.as_str())
                .find(|p| !p.is_empty())
            {
                state.last_position = Some(position.to_string());
            }
        }
        let all_turns = ctx.turns();
        let graph = argument_graph(&all_turns);
        signals.extend(verdict::round_signals(
            &round_turns,
            &graph,
            &states_seats(&states),
        ));
        let active_after: Vec<Seat> = states
            .iter()
            .filter(|s| s.active())
            .map(|s| s.seat.clone())
            .collect();

        // 4e. The moderator evaluates.
        let schema = moderator::evaluation_schema();
        let evaluation_turn = ctx
            .speak(Speech {
                key: TurnKey::new(round, Phase::Evaluation, MODERATOR),
                perspective: None,
                system: format!(
                    "{}\n\n{}",
                    prompts::moderator_system(),
                    prompts::json_instructions(EVALUATION_SCHEMA, &schema)
                ),
                prompt: prompts::evaluation_prompt(&EvaluationInput {
                    question: &clarified_question,
                    seats: &active,
                    round,
                    max_rounds,
                    turns: &round_turns,
                    signals: &signals,
                }),
                kind: ReplyKind::validated(moderator::validate_evaluation, Some("summary")),
                schema_name: EVALUATION_SCHEMA,
                schema: Some(schema),
                max_tokens: Some(800),
                deadline: Some(deadline.max(Instant::now() + Duration::from_secs(5))),
            })
            .await?;
        let evaluation = evaluation_turn
            .data
            .as_ref()
            .filter(|_| evaluation_turn.status == TurnStatus::Ok)
            .and_then(|data| serde_json::from_value::<Evaluation>(data.clone()).ok())
            .unwrap_or_else(|| derived_evaluation(&round_turns, &active, repeated));
        summaries.push((round, evaluation.summary.clone()));

        // Off-topic seats are redirected once, then muted.
        redirect.clear();
        for state in states.iter_mut().filter(|s| s.active()) {
            if evaluation.off_topic.contains(&state.seat.id) {
                state.off_topic_strikes += 1;
                if state.off_topic_strikes >= 2 {
                    state.muted = true;
                    notes.push(format!(
                        "Seat {} ({}) was muted for arguing off the question.",
                        state.seat.id, state.seat.perspective
                    ));
                    ctx.emit(Event::Flag {
                        round,
                        seat: state.seat.id.clone(),
                        kind: FlagKind::Muted,
                        detail: "off the question twice; muted".into(),
                    });
                } else {
                    redirect.push(state.seat.clone());
                    ctx.emit(Event::Flag {
                        round,
                        seat: state.seat.id.clone(),
                        kind: FlagKind::OffTopic,
                        detail: "off the question; the moderator will redirect it".into(),
                    });
                }
            } else {
                state.off_topic_strikes = 0;
            }
        }

        let active_ids: Vec<String> = active_after.iter().map(|s| s.id.clone()).collect();
        let judgement = verdict::judge(
            &evaluation,
            &RoundFacts {
                round,
                max_rounds,
                active: &active_ids,
                repeating: repeated,
                turns: &all_turns,
            },
        );
        if let Some(reason) = &judgement.overruled {
            ctx.emit(Event::Flag {
                round,
                seat: MODERATOR.into(),
                kind: FlagKind::Unsupported,
                detail: format!("{reason}; the debate goes on"),
            });
        }
        clarification = (judgement.decision == Decision::Clarify)
            .then(|| evaluation.clarification.clone())
            .flatten();
        ctx.emit(Event::RoundCompleted {
            round,
            convergence: Convergence {
                assessment: evaluation.assessment,
                decision: judgement.decision,
                signal: judgement.signal,
                reason: evaluation.reason.clone(),
                overruled: judgement.overruled.clone(),
            },
            summary: evaluation.summary.clone(),
        });

        // 4f. The person's say: approve a conclusion (or overrule it), or steer the next round.
        if judgement.decision == Decision::Conclude {
            let detail = format!(
                "The debate would end here: {}.",
                judgement.signal.describe()
            );
            match ctx.ask(round, AskKind::Conclusion, Some(detail)).await? {
                CheckpointOutcome::TimedOut => return Ok(Ending::Paused),
                CheckpointOutcome::Unasked => {
                    signal = judgement.signal;
                    break;
                }
                CheckpointOutcome::Answered { control, .. } => match control {
                    Control::Continue | Control::Guide(_) if round < ROUND_CEILING => {
                        if let Control::Guide(text) = &control {
                            guidance.push(text.clone());
                        }
                        latest_guidance = control.guidance().map(str::to_string);
                        if round >= max_rounds {
                            max_rounds = round + 1;
                            notes.push(format!(
                                "The person asked for round {max_rounds}, beyond the limit of {}.",
                                settings.max_rounds
                            ));
                        }
                    }
                    other => {
                        if other != Control::Accept {
                            notes.push(format!(
                                "The person asked for another round, but {ROUND_CEILING} rounds \
                                 is the most a debate runs."
                            ));
                        }
                        signal = judgement.signal;
                        break;
                    }
                },
            }
            continue;
        }
        match ctx.checkpoint(round).await? {
            CheckpointOutcome::TimedOut => return Ok(Ending::Paused),
            CheckpointOutcome::Answered {
                control: Control::End,
                ..
            } => {
                signal = ConvergenceSignal::HumanEnded;
                break;
            }
            CheckpointOutcome::Answered {
                control: Control::Guide(text),
                ..
            } => {
                guidance.push(text.clone());
                latest_guidance = Some(text);
            }
            CheckpointOutcome::Answered { .. } | CheckpointOutcome::Unasked => {
                latest_guidance = None
            }
        }
    }
    if signal == ConvergenceSignal::None {
        signal = ConvergenceSignal::MaxRounds;
    }

    // 5. Synthesis.
    let turns = ctx.turns();
    let graph = argument_graph(&turns);
    let seat_ids: Vec<String> = seats.iter().map(|s| s.id.clone()).collect();
    let stores = commitment_stores(&seat_ids, &turns);
    let concessions = verdict::concessions(&turns, &graph);
    let positions: Vec<(String, String)> = states
        .iter()
        .filter_map(|s| s.last_position.clone().map(|p| (s.seat.id.clone(), p)))
        .collect();
    let synthesis_turn = ctx
        .speak(synthesis_speech(
            TurnKey::new(rounds_run, Phase::Synthesis, MODERATOR),
            prompts::synthesis_prompt(&SynthesisInput {
                question: &clarified_question,
                seats: &seats,
                rounds: rounds_run,
                summaries: &summaries,
                guidance: &guidance,
                graph: &graph,
                positions: &positions,
                concessions: &concessions,
                ending: signal.describe(),
            }),
            Instant::now() + settings.round_timeout,
        ))
        .await?;
    for state in &states {
        if state.dropped || state.muted {
            continue;
        }
        let failed_turns = turns
            .iter()
            .filter(|t| t.seat == state.seat.id && !t.status.spoke())
            .count();
        if failed_turns > 0 {
            notes.push(format!(
                "Seat {} ({}) missed {failed_turns} turn(s) to failures or timeouts.",
                state.seat.id, state.seat.perspective
            ));
        }
    }
    if let Some(caveat) = default_provider.caveat() {
        notes.push(caveat.into());
    }
    let provider = format!("{} / {}", default_provider.kind(), default_provider.model());
    let build = |turn: &Turn, notes: Vec<String>| {
        verdict::build_synthesis(verdict::SynthesisParts {
            debate_id: &ctx.debate_id,
            question: &question,
            seats: &seats,
            rounds: rounds_run,
            data: turn.data.as_ref().filter(|_| turn.status == TurnStatus::Ok),
            turns: &turns,
            graph: &graph,
            stores: &stores,
            signal,
            positions: &positions,
            notes,
            provider: &provider,
        })
    };
    let mut synthesis = build(&synthesis_turn, notes.clone());

    // 6. The person approves the synthesis, or asks for one revision of it.
    let approval = match present(ctx, rounds_run, AskKind::Approval, &synthesis).await? {
        CheckpointOutcome::TimedOut => return Ok(Ending::Paused),
        CheckpointOutcome::Unasked => Approval {
            status: ApprovalStatus::Unapproved,
            by: "nobody".into(),
            note: Some("nobody was asked to approve it (checkpoints were off)".into()),
        },
        CheckpointOutcome::Answered {
            control: Control::Accept,
            by,
        } => Approval {
            status: ApprovalStatus::Approved,
            by,
            note: None,
        },
        CheckpointOutcome::Answered {
            control: Control::Revise(request),
            by,
        } => {
            let revision = ctx
                .speak(synthesis_speech(
                    TurnKey::new(rounds_run, Phase::Revision, MODERATOR),
                    prompts::revision_prompt(&synthesis.to_markdown(), &request),
                    Instant::now() + settings.round_timeout,
                ))
                .await?;
            let revised = revision.status == TurnStatus::Ok;
            if revised {
                synthesis = build(&revision, notes.clone());
            } else {
                synthesis.notes.push(
                    "The moderator's revision was unusable; this is its first synthesis.".into(),
                );
            }
            match present(ctx, rounds_run, AskKind::RevisedApproval, &synthesis).await? {
                CheckpointOutcome::TimedOut => return Ok(Ending::Paused),
                CheckpointOutcome::Answered {
                    control: Control::Accept,
                    by: approver,
                } if !revised => Approval {
                    status: ApprovalStatus::Approved,
                    note: Some(format!(
                        "{by} asked for a revision (“{request}”) the moderator could not \
                         produce; the first synthesis was approved"
                    )),
                    by: approver,
                },
                CheckpointOutcome::Answered {
                    control: Control::Accept,
                    ..
                } => Approval {
                    status: ApprovalStatus::Revised,
                    by,
                    note: Some(request),
                },
                CheckpointOutcome::Answered { by: approver, .. } => Approval {
                    status: ApprovalStatus::Unapproved,
                    note: Some(format!(
                        "{by} asked for a revision (“{request}”) and {approver} left it unapproved"
                    )),
                    by: approver,
                },
                CheckpointOutcome::Unasked => Approval {
                    status: ApprovalStatus::Unapproved,
                    note: Some(format!("{by} asked for a revision (“{request}”)")),
                    by,
                },
            }
        }
        CheckpointOutcome::Answered { by, .. } => Approval {
            status: ApprovalStatus::Unapproved,
            note: Some(format!("left unapproved by {by}")),
            by,
        },
    };
    synthesis.approval = Some(approval);
    Ok(Ending::Concluded(Box::new(Outcome {
        markdown: synthesis.to_markdown(),
        confidence: synthesis.confidence,
        data: serde_json::to_value(&synthesis).unwrap_or_default(),
        section: None,
        date: synthesis.date.clone(),
    })))
}

/// The moderator's synthesis (or its revision) of the debate, as a structured reply.
fn synthesis_speech(key: TurnKey, prompt: String, deadline: Instant) -> Speech {
    let schema = moderator::synthesis_schema();
    Speech {
        key,
        perspective: None,
        system: format!(
            "{}\n\n{}",
            prompts::moderator_system(),
            prompts::json_instructions(SYNTHESIS_SCHEMA, &schema)
        ),
        prompt,
        kind: ReplyKind::validated(moderator::validate_synthesis, Some("recommendation")),
        schema_name: SYNTHESIS_SCHEMA,
        schema: Some(schema),
        max_tokens: Some(2000),
        deadline: Some(deadline),
    }
}

/// Shows the synthesis as a draft and asks the person about it (with checkpoints off nobody
/// is asked, and no draft is shown).
async fn present(
    ctx: &Context,
    round: u32,
    kind: AskKind,
    synthesis: &Synthesis,
) -> Result<CheckpointOutcome, EngineError> {
    if ctx.settings.checkpoints {
        ctx.emit(Event::Synthesis {
            markdown: synthesis.to_markdown(),
            confidence: synthesis.confidence,
            path: None,
            draft: true,
        });
    }
    ctx.ask(round, kind, None).await
}

fn states_seats(states: &[SeatState]) -> Vec<Seat> {
    states.iter().map(|s| s.seat.clone()).collect()
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
    for constraint in moderator::string_list(data.get("constraints"), 5) {
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
) -> Result<Vec<Seat>, String> {
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
