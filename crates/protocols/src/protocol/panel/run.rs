//! A panel's run as its list of steps: the options, the judges seated, rounds of
//! recommendations and challenges until consensus, then the result and, when contested, the
//! person's choice.

use super::Panel;
use super::prompts::{self, base_prompt, judge_system, listed, order_for, shown_name};
use super::replies::{JudgeReplies, OptionsReplies};
use super::result::{Change, Check, build_result, check, check_ranked, headline};
use super::seats::Seated;
use super::settings::{OptionError, PanelOption, PanelSettings, check_options, parse_option};
use crate::debate::{
    AskKind, Confidence, Control, Event, FlagKind, MODERATOR, Phase, Seat, Standing, Turn, TurnKey,
    TurnStatus,
};
use crate::engine::{CheckpointOutcome, Context, EngineError, Speech};
use crate::protocol::Common;
use crate::protocol::kit::{self, SeatRoster, Visibility};
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::time::Duration;
use tokio::time::Instant;

/// How this protocol's run ends, its result typed.
type Ending = crate::protocol::Ending<super::PanelResult>;

/// Runs a panel: the steps, in order.
pub(super) async fn run(
    ctx: &Context,
    common: &Common,
    settings: &PanelSettings,
) -> Result<Ending, EngineError> {
    let question = common.question.trim().to_string();
    // 1. The options: given, or proposed by the moderator and accepted (or edited) by the person.
    let options = match settings.options.is_empty() {
        false => settings.options.clone(),
        true => match propose_options(ctx, common, settings, &question).await? {
            Ok(options) => options,
            Err(ending) => return Ok(ending),
        },
    };
    // 2. The judges take their seats.
    let mut panel = PanelRun::seat(ctx, common, settings, question, options).await?;
    // 3. Rounds: isolated recommendations, then challenges until consensus.
    for round in 1..=settings.max_rounds {
        if panel.roster.active().is_empty() {
            break;
        }
        match panel.round(round).await? {
            RoundEnd::Ended(ending) => return Ok(ending),
            RoundEnd::Agreed => break,
            RoundEnd::Open => {}
        }
    }
    // 4. The result, and the person's choice when it is contested.
    panel.conclude().await
}

/// How a round left the panel.
enum RoundEnd {
    /// The threshold is reached: no more rounds.
    Agreed,
    /// No consensus yet.
    Open,
    /// A gate ended the debate.
    Ended(Ending),
}

/// One panel as it runs: its judges, who is still at the table, and what has changed.
struct PanelRun<'a> {
    ctx: &'a Context,
    common: &'a Common,
    settings: &'a PanelSettings,
    question: String,
    options: Vec<PanelOption>,
    seated: Vec<Seated>,
    roster: SeatRoster,
    changes: Vec<Change>,
    standings: Vec<Standing>,
    notes: Vec<String>,
    rounds: u32,
    /// The consensus check after the latest round.
    check: Option<Check>,
}

impl<'a> PanelRun<'a> {
    /// The judges seated, the debate started.
    async fn seat(
        ctx: &'a Context,
        common: &'a Common,
        settings: &'a PanelSettings,
        question: String,
        options: Vec<PanelOption>,
    ) -> Result<PanelRun<'a>, EngineError> {
        let mut notes: Vec<String> = settings
            .context_cut
            .iter()
            .map(|c| format!("Context: {c}"))
            .collect();
        if settings.blind_first {
            notes.push(
                "Round 1 was blind (--blind-first), as a panel's always is: each judge \
                 recommended before reading any other judge's recommendation; they met in \
                 round 2."
                    .into(),
            );
        }
        let seated = seat_judges(ctx, common, settings, &options)?;
        let seats: Vec<Seat> = seated.iter().map(|s| s.seat.clone()).collect();
        let roster = SeatRoster::new(&seats);
        notes.extend(
            kit::seat_and_start(ctx, &Panel, &question, &seats, settings.max_rounds).await?,
        );
        let standings = options
            .iter()
            .map(|o| Standing {
                id: o.id.clone(),
                label: o.label.clone(),
                backers: Vec::new(),
            })
            .collect();
        Ok(PanelRun {
            ctx,
            common,
            settings,
            question,
            options,
            seated,
            roster,
            changes: Vec::new(),
            standings,
            notes,
            rounds: 0,
            check: None,
        })
    }

    /// One round: every judge at the table speaks, the panel takes in what changed, checks
    /// for consensus, shows the standings and passes the round's gate.
    async fn round(&mut self, round: u32) -> Result<RoundEnd, EngineError> {
        self.rounds = round;
        self.ctx.emit(Event::RoundStarted { round, limit: None });
        let turns = self.judge_round(round).await?;
        if !turns.is_empty() && turns.iter().all(|t| t.status == TurnStatus::Failed) {
            return Err(EngineError::Provider(
                turns
                    .iter()
                    .find_map(|t| t.note.clone())
                    .unwrap_or_else(|| "every judge failed".into()),
            ));
        }
        for turn in &turns {
            let Some(judge) = self.seated.iter_mut().find(|s| s.seat.id == turn.seat) else {
                continue;
            };
            absorb(
                judge,
                &mut self.roster,
                turn,
                round,
                &mut self.changes,
                &mut self.notes,
            );
        }
        let left = self.roster.active().len();
        if left < 2 {
            // One judge cannot disagree with anyone: no result, but a failure a resume retries.
            let gone: Vec<String> = self
                .seated
                .iter()
                .filter_map(|s| {
                    let why = self.roster.member(&s.seat.id)?.dropped()?;
                    Some(format!("{} judge {why}", s.judge.name))
                })
                .collect();
            return Err(EngineError::Provider(format!(
                "only {left} of {} judges answered in round {round} ({}); a panel needs two. \
                 `moot resume {}` asks them again",
                self.seated.len(),
                gone.join(", "),
                self.ctx.debate_id
            )));
        }
        flag_judges(
            self.ctx,
            self.settings,
            &self.seated,
            &self.roster,
            &turns,
            round,
        );
        let check = self.consensus();
        self.show_standings(round, &check);
        let artifacts = json!({"standings": self.standings, "changes": self.changes});
        let summary = headline(round, &check, self.settings.consensus_threshold);
        let stop = kit::Stop::after_round(round, summary, artifacts);
        if let Some(ending) = kit::gate(self.ctx, self.common, stop).await? {
            return Ok(RoundEnd::Ended(ending));
        }
        let agreed = check.consensus.is_some();
        self.check = Some(check);
        Ok(if agreed {
            RoundEnd::Agreed
        } else {
            RoundEnd::Open
        })
    }

    /// One round of every judge still at the table, in parallel.
    async fn judge_round(&self, round: u32) -> Result<Vec<Turn>, EngineError> {
        let seats: Vec<Seat> = self.seated.iter().map(|s| s.seat.clone()).collect();
        let deadline = Instant::now()
            + Duration::from_secs(self.settings.timeout_per_judge)
                .saturating_mul(self.ctx.queued_turn_slots(&seats));
        let speeches = self
            .seated
            .iter()
            .enumerate()
            .filter(|(_, s)| self.roster.is_active(&s.seat.id))
            .map(|(index, _)| self.judge_speech(index, round, deadline))
            .collect();
        self.ctx.speak_all(speeches).await
    }

    /// What one judge is asked in a round: alone in round 1, against the others after.
    fn judge_speech(&self, index: usize, round: u32, deadline: Instant) -> Speech {
        let (settings, seated) = (self.settings, &self.seated);
        let judge = &seated[index];
        // Round 1 is isolated; from round 2 every judge sees every other still at the table.
        let visibility = if round == 1 {
            Visibility::Isolated
        } else {
            Visibility::All
        };
        let visible: Vec<usize> = (0..seated.len())
            .filter(|&other| {
                other != index
                    && self.roster.is_active(&seated[other].seat.id)
                    && visibility.sees(&judge.seat.id, &seated[other].seat.id)
            })
            .collect();
        let others: Vec<String> = visible
            .iter()
            .map(|&other| shown_name(seated, other, settings.anonymous))
            .collect();
        let ranked = self.common.vote.is_some();
        let prompt = prompts::round_prompt(
            base_prompt(&self.question, settings, &self.options, &judge.order),
            settings,
            seated,
            index,
            &visible,
            round,
            ranked,
        );
        let phase = if round == 1 {
            Phase::Recommendation
        } else {
            Phase::Challenge
        };
        let shape = JudgeReplies {
            options: self.options.iter().map(|o| o.id.clone()).collect(),
            order: judge.order.clone(),
            challenge: round > 1,
            others,
            require_reason: settings.require_change_documentation,
            ranked,
        };
        kit::ask(
            TurnKey::new(round, phase, judge.seat.id.clone()),
            judge_system(&judge.judge),
            prompt,
            shape,
            kit::Limits::new(1200, deadline),
        )
        .by(judge.judge.name.clone())
    }

    /// The consensus check over the judges at the table: their recommendations, or a ranked
    /// vote on their rankings (`--vote`).
    fn consensus(&self) -> Check {
        let active = || {
            self.seated
                .iter()
                .filter(|s| self.roster.is_active(&s.seat.id))
        };
        let threshold = self.settings.consensus_threshold;
        let Some(method) = self.common.vote else {
            let votes: Vec<(String, Option<String>)> = active()
                .map(|s| (s.key.clone(), s.recommended.clone()))
                .collect();
            return check(&self.options, &votes, threshold);
        };
        let ballots: Vec<crate::vote::Ballot> = active()
            .map(|s| crate::vote::Ballot {
                voter: s.key.clone(),
                ranking: s.ranking.clone(),
                confidence: s.confidence,
                weight: self
                    .common
                    .vote_weights
                    .iter()
                    .find(|(name, _)| {
                        name.eq_ignore_ascii_case(&s.judge.name) || **name == s.seat.id
                    })
                    .map_or(1.0, |(_, w)| *w),
            })
            .collect();
        check_ranked(&self.options, &ballots, method, threshold)
    }

    /// Who backs which option after a round, with the changes of mind so far.
    fn show_standings(&mut self, round: u32, check: &Check) {
        for standing in &mut self.standings {
            let backers = self
                .seated
                .iter()
                .filter(|s| {
                    self.roster.is_active(&s.seat.id)
                        && s.recommended.as_deref() == Some(standing.id.as_str())
                })
                .map(|s| s.seat.id.clone())
                .collect();
            standing.backers.push(backers);
        }
        self.ctx.emit(Event::Standings {
            round,
            headline: headline(round, check, self.settings.consensus_threshold),
            standings: self.standings.clone(),
            changes: self
                .changes
                .iter()
                .map(|c| {
                    format!(
                        "{} r{}: {} → {} — {}",
                        c.judge, c.round, c.from, c.to, c.reason
                    )
                })
                .collect(),
        });
    }

    /// The result after the last round, and the person's choice when it is contested.
    async fn conclude(mut self) -> Result<Ending, EngineError> {
        let Some(check) = self.check.take() else {
            return Err(EngineError::Setup("no judge could take part".into()));
        };
        if check.voters < 2 {
            self.notes.push(format!(
                "Only {} judge(s) gave a valid recommendation; a panel needs two to agree.",
                check.voters
            ));
        }
        let (ctx, rounds) = (self.ctx, self.rounds);
        let summary = format!("{rounds} round(s) judged; the result comes next.");
        let stop = kit::Stop::before_synthesis(
            rounds,
            summary,
            json!({"distribution": check.distribution}),
        );
        if let Some(ending) = kit::gate(ctx, self.common, stop).await? {
            return Ok(ending);
        }
        let mut result = build_result(
            ctx,
            self.settings,
            &self.question,
            &self.options,
            &self.seated,
            &self.roster,
            &check,
            self.changes,
            rounds,
            self.notes,
        );
        if !result.consensus {
            let choices: Vec<(String, String)> = self
                .options
                .iter()
                .map(|o| (o.id.clone(), o.label.clone()))
                .collect();
            if ctx.settings.checkpoints {
                ctx.emit(Event::Synthesis {
                    markdown: result.to_markdown(),
                    confidence: Confidence::RequiresInput,
                    path: None,
                    draft: true,
                });
            }
            match ctx.choose(rounds, result.choice_prompt(), choices).await? {
                CheckpointOutcome::TimedOut => return Ok(Ending::Paused),
                CheckpointOutcome::Answered {
                    control: Control::Choose(option),
                    by,
                } => result.choose(option, &by),
                CheckpointOutcome::Answered { .. } | CheckpointOutcome::Unasked => {}
            }
        }
        Ok(Ending::Concluded(Box::new(result.into_outcome())))
    }
}

/// The moderator proposes options, and the person accepts or replaces them; the ending
/// instead when the person ends the debate there or nobody answers in time.
async fn propose_options(
    ctx: &Context,
    common: &Common,
    settings: &PanelSettings,
    question: &str,
) -> Result<Result<Vec<PanelOption>, Ending>, EngineError> {
    // A proposal nothing could be made of is shown as it was, and the moderator is asked
    // again under the next attempt's number, instead of replaying the dead end on every
    // resume (seed review 000/001 #1). Options the person typed in answer to it stand.
    let mut attempt = 0;
    while let Some(turn) = ctx.peek_recorded(&TurnKey::new(attempt, Phase::Options, MODERATOR)) {
        let rescued = matches!(
            ctx.recorded_control(attempt, AskKind::Options),
            Some(Control::Guide(text)) if edited_options(&text).is_ok()
        );
        if proposal(&turn).len() >= 2 || rescued {
            break;
        }
        ctx.replayed(&TurnKey::new(attempt, Phase::Options, MODERATOR));
        attempt += 1;
    }
    if attempt > 0 {
        ctx.emit(Event::Notice {
            message: "the moderator's earlier options could not be used; asking again".into(),
        });
    }
    let key = TurnKey::new(attempt, Phase::Options, MODERATOR);
    let mut prompt = format!(
        "Question: {question}\n\nPropose the 2–4 distinct options a decision panel should weigh \
         for this question: mutually exclusive, each a real course of action, ids A, B, C, D in order."
    );
    if !settings.context.is_empty() {
        let _ = write!(prompt, "\n\nSpec context:\n{}", settings.context);
    }
    let turn = ctx
        .speak(kit::ask(
            key,
            "You are the moderator of a decision panel. You frame the choice; you do not judge it."
                .into(),
            prompt,
            OptionsReplies,
            kit::Limits::new(600, Instant::now() + common.round_timeout),
        ))
        .await?;
    if turn.status == TurnStatus::Failed {
        return Err(EngineError::Provider(
            turn.note.unwrap_or_else(|| "the provider failed".into()),
        ));
    }
    let mut proposed = proposal(&turn);
    let detail = if proposed.len() < 2 {
        "The moderator proposed no usable options. Type the options to judge, one per line \
         (A: label — description), or end the debate."
            .to_string()
    } else {
        format!(
            "The moderator proposes these options:\n{}\n\nContinue with them, or give the options to use instead (A: label — description; B: …).",
            listed(&proposed)
        )
    };
    let usable = |text: &str| {
        edited_options(text).map(|_| ()).map_err(|problem| {
            crate::engine::Refusal(format!(
                "those options cannot be used ({problem}); type them again"
            ))
        })
    };
    let shown = proposed
        .iter()
        .map(|o| (o.id.clone(), o.label.clone()))
        .collect();
    match ctx
        .ask_checked(attempt, AskKind::Options, Some(detail), shown, &usable)
        .await?
    {
        CheckpointOutcome::TimedOut => return Ok(Err(Ending::Paused)),
        CheckpointOutcome::Answered {
            control: Control::End,
            ..
        } => return Ok(Err(Ending::Cancelled)),
        CheckpointOutcome::Answered {
            control: Control::Guide(text),
            ..
        } => match edited_options(&text) {
            Ok(options) => proposed = options,
            // Only a journal from before typed options were checked holds such an answer.
            Err(problem) => ctx.emit(Event::Notice {
                message: format!(
                    "the edited options are unusable ({problem}); the proposed ones stand"
                ),
            }),
        },
        _ => {}
    }
    if proposed.len() < 2 {
        return Err(EngineError::Setup(format!(
            "the moderator proposed no usable options; `moot resume {id}` asks it again, or give \
             them: moot resume {id} --option \"A: label — description\" --option \"B: …\"",
            id = ctx.debate_id
        )));
    }
    Ok(Ok(proposed))
}

/// The options a moderator's reply proposes (none when it could not be read).
fn proposal(turn: &Turn) -> Vec<PanelOption> {
    turn.data
        .as_ref()
        .filter(|_| turn.status == TurnStatus::Ok)
        .and_then(|d| serde_json::from_value(d.get("options")?.clone()).ok())
        .unwrap_or_default()
}

/// Options typed at the checkpoint: `A: label — description` separated by `;` or new lines.
fn edited_options(text: &str) -> Result<Vec<PanelOption>, OptionError> {
    let options = text
        .split([';', '\n'])
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .map(parse_option)
        .collect::<Result<Vec<_>, _>>()?;
    check_options(&options)?;
    if options.len() < 2 {
        return Err(OptionError::TooFew);
    }
    Ok(options)
}

fn seat_judges(
    ctx: &Context,
    common: &Common,
    settings: &PanelSettings,
    options: &[PanelOption],
) -> Result<Vec<Seated>, EngineError> {
    let mut seated: Vec<Seated> = Vec::new();
    for judge in &settings.judges {
        let initial = judge
            .name
            .chars()
            .next()
            .unwrap_or('J')
            .to_ascii_uppercase()
            .to_string();
        let id = if seated.iter().any(|s| s.seat.id == initial) {
            format!("{initial}{}", seated.len() + 1)
        } else {
            initial
        };
        let key = judge
            .name
            .to_lowercase()
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
            .join("_");
        let mut seat = Seat {
            id,
            perspective: judge.name.clone(),
            priorities: vec![judge.stance.clone()],
            trade_offs: judge.instruction.clone(),
            stance: judge.stance.clone(),
            provider: None,
            model: None,
        };
        if let Some(spec) = &judge.provider {
            kit::seat_on_own_provider(ctx, common, &mut seat, spec)?;
        }
        seated.push(Seated {
            order: order_for(&ctx.debate_id, &key, options),
            seat,
            judge: judge.clone(),
            key,
            recommended: None,
            perspective: String::new(),
            reasoning: String::new(),
            ranking: Vec::new(),
            confidence: 1.0,
            evaluated: false,
            unread: None,
        });
    }
    Ok(seated)
}

/// Folds a judge's turn into what the panel knows of it.
fn absorb(
    judge: &mut Seated,
    roster: &mut SeatRoster,
    turn: &Turn,
    round: u32,
    changes: &mut Vec<Change>,
    notes: &mut Vec<String>,
) {
    match turn.status {
        TurnStatus::TimedOut | TurnStatus::Failed => {
            let why = if turn.status == TurnStatus::TimedOut {
                "timed out"
            } else {
                "kept failing"
            };
            judge.recommended = None;
            judge.ranking.clear();
            // The result names every judge left out in the note's own words ("… — only N
            // perspectives available"); the roster's line would say it twice.
            roster.drop_seat(
                &judge.seat.id,
                why,
                format!(
                    "{} judge {why} in round {round} and was left out.",
                    judge.judge.name
                ),
                &mut Vec::new(),
            );
        }
        // Unparseable after one clarification. A judge that recommended before keeps that
        // recommendation and its case (an unreadable reply changes nobody's mind), so the
        // result has every judge's case (seed review 000/001 #13); one that never did counts
        // as no recommendation, its prose quoted as its case.
        TurnStatus::Fallback => match &judge.recommended {
            Some(earlier) => {
                judge.unread = Some(round);
                notes.push(format!(
                "{} judge's round-{round} reply could not be read; its earlier recommendation ({earlier}) stands.",
                judge.judge.name
            ));
            }
            None => {
                judge.ranking.clear();
                judge.reasoning = turn.content.clone();
                notes.push(format!(
                    "{} judge's round-{round} reply could not be read; it counts as no recommendation.",
                    judge.judge.name
                ));
            }
        },
        // A reply cut at its byte cap counts for what was read of it (nothing, unless a repair
        // made it whole).
        TurnStatus::Ok | TurnStatus::Truncated => take_reply(judge, turn, round, changes),
    }
}

/// A judge's readable reply taken in: its recommendation, ranking, confidence, reasoning and
/// perspective, and a change of mind logged.
fn take_reply(judge: &mut Seated, turn: &Turn, round: u32, changes: &mut Vec<Change>) {
    let data = turn.data.clone().unwrap_or_default();
    judge.unread = None;
    if data.get("assessments").is_some() {
        judge.evaluated = true;
    }
    let recommended = data
        .get("recommended")
        .and_then(Value::as_str)
        .map(str::to_string);
    if let (Some(from), Some(to)) = (
        data.get("changed_from").and_then(Value::as_str),
        recommended.as_deref(),
    ) {
        changes.push(Change {
            judge: judge.key.clone(),
            round,
            from: from.to_string(),
            to: to.to_string(),
            reason: data
                .get("change_reason")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        });
    }
    judge.ranking = data
        .get("ranking")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_else(|| recommended.iter().cloned().collect());
    judge.confidence = data
        .get("confidence")
        .and_then(Value::as_f64)
        .unwrap_or(1.0);
    judge.recommended = recommended;
    judge.reasoning = turn.content.clone();
    judge.perspective = data
        .get("perspective")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
}

/// Flags a judge that dropped its stance's vocabulary, or agreed with everyone without a
/// challenge worth the name.
fn flag_judges(
    ctx: &Context,
    settings: &PanelSettings,
    seated: &[Seated],
    roster: &SeatRoster,
    turns: &[Turn],
    round: u32,
) {
    for turn in turns.iter().filter(|t| t.status == TurnStatus::Ok) {
        let Some(judge) = seated.iter().find(|s| s.seat.id == turn.seat) else {
            continue;
        };
        let text = turn.content.to_lowercase();
        if settings.require_stance_maintenance
            && !judge.judge.vocabulary.is_empty()
            && !judge
                .judge
                .vocabulary
                .iter()
                .any(|w| text.contains(w.as_str()))
        {
            ctx.emit(Event::Flag {
                round,
                seat: turn.seat.clone(),
                kind: FlagKind::StanceDropped,
                detail: format!(
                    "uses none of the words of its stance ({})",
                    judge.judge.stance
                ),
            });
        }
        if round > 1 {
            let others: Vec<&Seated> = seated
                .iter()
                .filter(|s| s.seat.id != turn.seat && roster.is_active(&s.seat.id))
                .collect();
            let agrees =
                !others.is_empty() && others.iter().all(|o| o.recommended == judge.recommended);
            let challenged = turn
                .data
                .as_ref()
                .and_then(|d| d.get("challenges")?.as_array().cloned())
                .unwrap_or_default()
                .iter()
                .filter_map(|c| c.get("counter_argument")?.as_str().map(str::to_lowercase))
                .any(|c| c.split_whitespace().count() >= 6 && !c.starts_with("i agree"));
            if agrees && !challenged {
                ctx.emit(Event::Flag {
                    round,
                    seat: turn.seat.clone(),
                    kind: FlagKind::Sycophancy,
                    detail: "agrees with every other judge without a real challenge".into(),
                });
            }
        }
    }
}
