//! The arena (design note 003): seats with personas give opening statements, rebuttals that
//! name the turns they answer, and closing statements, in round-robin or moderator order; the
//! moderator may score every argument on a rubric and summarises; the arena directory can be
//! kept written while it runs.

use super::kit;
use super::moves::{debater_schema, move_prefix, validate_debater_reply};
use super::prompts::{DATA_RULE, fenced};
use super::{Common, Ending, Flag, Outcome, SettingsError, SettingsInput};
use crate::arena::{self, ArenaDir, ArenaStatus, Manifest, Participant, Persona, ScoringInfo};
use crate::argue::argument_graph;
use crate::debate::{
    Assessment, Confidence, Convergence, ConvergenceSignal, Decision, Event, MODERATOR, Phase,
    Presentation, Seat, SidePanel, Turn, TurnKey, TurnStatus,
};
use crate::engine::{Context, EngineError, Reply, ReplyKind, ReplyParser, Transcript};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::time::Instant;

/// The arena, as registered.
pub struct Arena;

/// Schema names, one per reply shape (the stand-in server answers by them).
pub const PERSONAS_SCHEMA: &str = "moot_arena_personas";
pub const ARGUMENT_SCHEMA: &str = "moot_arena_argument";
pub const ORDER_SCHEMA: &str = "moot_arena_order";
pub const SCORES_SCHEMA: &str = "moot_arena_scores";

/// The rubric every argument is scored on, 0–1 each.
pub const RUBRIC: [&str; 4] = [
    "evidence",
    "relevance",
    "responsiveness",
    "stance_adherence",
];

const FLAGS: &[Flag] = &[
    Flag {
        name: "seat",
        value: Some("ROLE"),
        help: "A seat of the arena by its role (repeat for each; a catalog perspective brings its persona)",
        repeatable: true,
    },
    Flag {
        name: "rounds",
        value: Some("N"),
        help: "Rounds of the arena: opening, rebuttals, closing (default 4)",
        repeatable: false,
    },
    Flag {
        name: "persona",
        value: Some("FILE"),
        help: "A persona file (.json or .toml, the arena's persona schema) for the seat it names",
        repeatable: true,
    },
    Flag {
        name: "order",
        value: Some("round-robin|moderator"),
        help: "Who speaks next: every seat in turn, or the moderator's pick with a reason",
        repeatable: false,
    },
    Flag {
        name: "score",
        value: None,
        help: "The moderator scores every argument 0–1 on evidence, relevance, responsiveness and stance adherence",
        repeatable: false,
    },
    kit::TOPOLOGY_FLAG,
    super::tree::PLANNING_FLAG,
    Flag {
        name: "arena-dir",
        value: Some("DIR"),
        help: "Keep the arena directory (manifest, personas, transcript, scores, summary) written under DIR while it runs",
        repeatable: false,
    },
];

/// Who speaks next.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Order {
    RoundRobin,
    Moderator,
}

/// What a seat's persona is made of before the debate has an id.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PersonaSpec {
    pub role_name: String,
    #[serde(default)]
    pub agent_id: Option<String>,
    #[serde(default)]
    pub stance_summary: String,
    #[serde(default)]
    pub instructions: String,
    #[serde(default)]
    pub background_context: String,
}

pub use super::kit::Topology;
use super::tree::{self, Planning, Tree};

/// Who plays a seat.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Player {
    /// moot's model.
    #[default]
    Model,
    /// The person at the keyboard (`human:ROLE`): the workbench's editor, or `g TEXT` on
    /// stdin headless.
    Human,
    /// An outside agent (`outside:ROLE`) that answers through the arena directory or
    /// `moot arena submit`.
    Outside,
}

impl Player {
    /// The provider a seat's turns are journaled under: `person`, `outside`.
    pub fn speaker(self) -> &'static str {
        match self {
            Player::Model => "model",
            Player::Human => crate::debate::PERSON,
            Player::Outside => crate::debate::OUTSIDE,
        }
    }

    /// The manifest's word for it.
    pub fn kind(self) -> &'static str {
        match self {
            Player::Model => "model",
            Player::Human => "human",
            Player::Outside => "outside",
        }
    }
}

/// The arena's settings, stored with the debate.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ArenaSettings {
    /// Role names in speaking order.
    pub seats: Vec<String>,
    /// Who plays each seat, in the same order.
    #[serde(default)]
    pub players: Vec<Player>,
    /// Personas given in files, by role.
    #[serde(default)]
    pub personas: Vec<PersonaSpec>,
    pub rounds: u32,
    pub order: Order,
    pub score: bool,
    pub turn_timeout_seconds: u64,
    /// Where the arena directory is kept written, when it is.
    #[serde(default)]
    pub arena_dir: Option<PathBuf>,
    #[serde(default)]
    pub topology: Topology,
    /// How a tree plans (`--planning`).
    #[serde(default)]
    pub planning: Planning,
}

/// `[arena]` in config.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
struct ArenaConfig {
    rounds: Option<u32>,
    order: Option<Order>,
    score: Option<bool>,
    turn_timeout_seconds: Option<u64>,
    arena_dir: Option<PathBuf>,
    seats: Vec<String>,
}

/// Reads a `--persona` file: the note's persona schema as JSON or TOML (`role_name` required).
fn persona_file(given: &str, cwd: &std::path::Path) -> Result<PersonaSpec, String> {
    let path = cwd.join(given);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("--persona {given}: cannot be read ({e})"))?;
    let spec: PersonaSpec = if given.ends_with(".toml") {
        toml::from_str(&text).map_err(|e| format!("--persona {given}: {}", e.message()))?
    } else {
        serde_json::from_str(&text).map_err(|e| {
            format!(
                "--persona {given}: line {}, column {}: {e}",
                e.line(),
                e.column()
            )
        })?
    };
    if spec.role_name.trim().is_empty() {
        return Err(format!("--persona {given}: `role_name` is required"));
    }
    Ok(spec)
}

impl super::Protocol for Arena {
    fn name(&self) -> &'static str {
        "arena"
    }

    fn description(&self) -> &'static str {
        "an arena of personas: opening statements, rebuttals that name what they answer, closing \
         statements, optional rubric scores and a moderator's summary; the arena directory of \
         design note 003 can be kept written while it runs"
    }

    fn flags(&self) -> &'static [Flag] {
        FLAGS
    }

    fn settings(&self, input: &SettingsInput<'_>) -> Result<Value, SettingsError> {
        let located = |key: &str, message: String| input.located("arena", key, message);
        let config: ArenaConfig = input.table("arena")?;
        let flag = |name: &str| input.flags.get(name).cloned().unwrap_or_default();
        let mut seats: Vec<String> = flag("seat")
            .into_iter()
            .map(|s| s.trim().to_string())
            .collect();
        let mut players = Vec::new();
        if seats.is_empty() {
            seats = config.seats.clone();
        }
        if seats.is_empty() {
            seats = vec!["Proponent".into(), "Skeptic".into()];
        }
        if !(2..=6).contains(&seats.len()) {
            return Err(format!("an arena seats 2–6 roles, not {}", seats.len()));
        }
        for (index, seat) in seats.iter().enumerate() {
            if seat.is_empty() {
                return Err("--seat needs a role name, as in --seat Skeptic".into());
            }
            let (player, role) = match seat.split_once(':') {
                Some(("human", role)) => (Player::Human, role.trim()),
                Some(("outside", role)) => (Player::Outside, role.trim()),
                Some(("model", role)) => (Player::Model, role.trim()),
                _ => (Player::Model, seat.as_str()),
            };
            if role.is_empty() {
                return Err(format!(
                    "--seat {seat}: name the role after the colon, as in human:Skeptic"
                ));
            }
            players.push((player, role.to_string()));
            if seats[..index].iter().any(|s| s.eq_ignore_ascii_case(seat)) {
                return Err(format!(
                    "--seat {seat} is given twice; every role needs its own seat"
                ));
            }
        }
        let (players, seats): (Vec<Player>, Vec<String>) = players.into_iter().unzip();
        if players.contains(&Player::Outside)
            && flag("arena-dir").is_empty()
            && config.arena_dir.is_none()
        {
            return Err(
                "an outside seat speaks through the arena directory: give it with --arena-dir DIR"
                    .into(),
            );
        }
        let rounds = match (flag("rounds").first(), input.max_rounds) {
            (Some(text), _) => text
                .trim()
                .parse::<u32>()
                .map_err(|_| format!("--rounds {text}: give a whole number of rounds, 2–10"))?,
            (None, Some(rounds)) => rounds,
            (None, None) => config.rounds.unwrap_or(4),
        };
        if !(2..=10).contains(&rounds) {
            let problem = format!("an arena runs 2–10 rounds (opening … closing), not {rounds}");
            return Err(if flag("rounds").is_empty() && input.max_rounds.is_none() {
                located("rounds", format!("rounds: {problem}"))
            } else {
                format!("--rounds: {problem}")
            });
        }
        let order = match flag("order").first().map(|s| s.trim()) {
            Some("round-robin") => Order::RoundRobin,
            Some("moderator") => Order::Moderator,
            Some(other) => {
                return Err(format!("--order {other}: use round-robin or moderator"));
            }
            None => config.order.unwrap_or(Order::RoundRobin),
        };
        let mut personas = Vec::new();
        for given in flag("persona") {
            let spec = persona_file(&given, input.cwd)?;
            if !seats
                .iter()
                .any(|s| s.eq_ignore_ascii_case(&spec.role_name))
            {
                return Err(format!(
                    "--persona {given}: its role {:?} has no --seat; add --seat \"{}\"",
                    spec.role_name, spec.role_name
                ));
            }
            personas.push(spec);
        }
        let turn_timeout_seconds = config.turn_timeout_seconds.unwrap_or(180);
        if !(1..=crate::engine::LONGEST_WAIT_SECONDS).contains(&turn_timeout_seconds) {
            return Err(located(
                "turn_timeout_seconds",
                format!(
                    "turn_timeout_seconds must be 1 second to a year, not {turn_timeout_seconds}"
                ),
            ));
        }
        let arena_dir = flag("arena-dir")
            .first()
            .map(PathBuf::from)
            .or(config.arena_dir.clone())
            .map(|dir| input.cwd.join(dir));
        if let Some(dir) = &arena_dir {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("--arena-dir {}: cannot be created ({e})", dir.display()))?;
        }
        let topology = Topology::from_flag(flag("topology").first().map(String::as_str))?;
        let planning = Planning::from_flag(flag("planning").first().map(String::as_str))?;
        if input.flags.contains_key("planning") && topology != Topology::Tree {
            return Err("--planning plans a tree: add --topology tree".into());
        }
        let settings = ArenaSettings {
            topology,
            planning,
            seats,
            players,
            personas,
            rounds,
            order,
            score: input.flags.contains_key("score") || config.score.unwrap_or(false),
            turn_timeout_seconds,
            arena_dir,
        };
        serde_json::to_value(&settings).map_err(|e| e.to_string())
    }

    fn presentation(&self) -> Presentation {
        Presentation {
            seat_role: "role".into(),
            panels: vec![SidePanel::Commitments, SidePanel::Map],
            outcome_title: "Summary".into(),
            follow_up: false,
            opening: "The moderator is setting up the arena…".into(),
            round_name: "round".into(),
            rounds_of_their_own: Vec::new(),
        }
    }

    fn without_side_effects(&self, settings: &Value) -> Value {
        let mut settings = settings.clone();
        if let Some(map) = settings.as_object_mut() {
            map.insert("arena_dir".into(), Value::Null);
        }
        settings
    }

    fn run<'a>(
        &'a self,
        ctx: &'a Context,
        common: &'a Common,
        settings: &'a Value,
    ) -> super::Run<'a> {
        Box::pin(async move {
            let settings: ArenaSettings = kit::stored(settings, "the arena's")?;
            run(ctx, common, &settings).await
        })
    }
}

/// A seat at the arena.
#[derive(Debug, Clone)]
struct Member {
    seat: Seat,
    persona: Persona,
    player: Player,
}

/// One argument as the arena files it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ArenaTurn {
    pub turn_number: u32,
    pub round: u32,
    pub phase: Phase,
    pub seat: String,
    pub agent_id: String,
    pub status: TurnStatus,
    pub argument: arena::Argument,
}

/// A moderator's rubric score of one argument, beside its gradual score.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RubricScore {
    pub turn_number: u32,
    pub agent_id: String,
    pub criteria: Map<String, Value>,
    pub score: f64,
    pub reason: String,
    /// The mean gradual score of the turn's own arguments (its speech acts), if it made any.
    pub gradual: Option<f64>,
}

/// The moderator's order for a round, with a reason per pick.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Pick {
    pub round: u32,
    pub agent_id: String,
    pub reason: String,
}

/// The arena's typed result (`show --json` names it `arena_result`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ArenaResult {
    pub debate_id: String,
    pub topic: String,
    pub personas: Vec<Persona>,
    pub turns: Vec<ArenaTurn>,
    pub order: Order,
    pub picks: Vec<Pick>,
    pub scoring: Option<ScoringInfo>,
    pub scores: Vec<RubricScore>,
    pub summary: String,
    /// The closing vote (`--vote`), when asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub votes: Option<crate::debate::VoteView>,
    /// What each seat saw of the others.
    #[serde(default)]
    pub topology: Topology,
    pub rounds: u32,
    pub notes: Vec<String>,
    pub date: String,
}

impl ArenaResult {
    pub fn to_markdown(&self) -> String {
        let mut out = format!(
            "# Arena: {}\n\n**Debate:** {} · **Rounds:** {} · **Order:** {}\n\n",
            self.topic.trim(),
            self.debate_id,
            self.rounds,
            match self.order {
                Order::RoundRobin => "round-robin",
                Order::Moderator => "moderator",
            }
        );
        out.push_str("## Participants\n\n");
        for p in &self.personas {
            let _ = writeln!(
                out,
                "- **{}** (`{}`): {}",
                p.role_name,
                p.agent_id,
                p.stance_summary.trim()
            );
        }
        let _ = writeln!(out, "\n## Summary\n\n{}\n", self.summary.trim());
        out.push_str(&scores_table(&self.scores));
        if let Some(votes) = &self.votes {
            out.push_str(&votes.to_markdown());
            out.push('\n');
        }
        out.push_str("## Transcript\n\n");
        for t in &self.turns {
            let _ = writeln!(
                out,
                "### Turn {} — {} (round {}, {})\n",
                t.turn_number,
                self.personas
                    .iter()
                    .find(|p| p.agent_id == t.agent_id)
                    .map_or(t.agent_id.as_str(), |p| p.role_name.as_str()),
                t.round,
                phase_name(t.phase)
            );
            match t.status {
                TurnStatus::TimedOut => out.push_str("*(missed the turn's time limit)*\n\n"),
                TurnStatus::Failed => out.push_str("*(no reply)*\n\n"),
                _ => {
                    let _ = writeln!(out, "{}\n", t.argument.argument_text.trim());
                    if !t.argument.references.is_empty() {
                        let _ = writeln!(out, "References: {}\n", t.argument.references.join("; "));
                    }
                }
            }
        }
        if !self.picks.is_empty() {
            out.push_str("## Turn order\n\n");
            for pick in &self.picks {
                let _ = writeln!(
                    out,
                    "- round {}: {} — {}",
                    pick.round, pick.agent_id, pick.reason
                );
            }
            out.push('\n');
        }
        if !self.notes.is_empty() {
            out.push_str("## Notes\n\n");
            for note in &self.notes {
                let _ = writeln!(out, "- {note}");
            }
        }
        out
    }
}

/// The rubric scores as a markdown section (empty without scores).
fn scores_table(scores: &[RubricScore]) -> String {
    if scores.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "## Scores\n\nRubric: {} (0–1 each); the moderator's score beside the mean gradual score of the turn's own arguments.\n\n| Turn | Agent | Rubric score | Gradual | Reason |\n|---|---|---|---|---|\n",
        RUBRIC.join(", ")
    );
    for s in scores {
        let _ = writeln!(
            out,
            "| {} | {} | {:.2} | {} | {} |",
            s.turn_number,
            s.agent_id,
            s.score,
            s.gradual
                .map_or_else(|| "—".to_string(), |g| format!("{g:.2}")),
            s.reason.replace('|', "\\|").replace('\n', " ")
        );
    }
    out.push('\n');
    out
}

fn phase_name(phase: Phase) -> &'static str {
    match phase {
        Phase::Opening => "opening",
        Phase::Closing => "closing",
        _ => "rebuttal",
    }
}

fn phase_of(round: u32, rounds: u32) -> Phase {
    match round {
        1 => Phase::Opening,
        r if r == rounds => Phase::Closing,
        _ => Phase::Rebuttal,
    }
}

async fn run(
    ctx: &Context,
    common: &Common,
    settings: &ArenaSettings,
) -> Result<Ending, EngineError> {
    let topic = common.question.trim().to_string();
    let mut notes = Vec::new();
    let created = crate::debate::now_rfc3339();
    let personas = personas(ctx, common, settings, &topic, &mut notes).await?;
    let members: Vec<Member> = personas
        .into_iter()
        .enumerate()
        .map(|(index, persona)| {
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
        })
        .collect();
    let seats: Vec<Seat> = members.iter().map(|m| m.seat.clone()).collect();
    let started = kit::seat_and_start(ctx, &Arena, &topic, &seats, settings.rounds).await?;
    kit::announce_topology(ctx, settings.topology, &seats);
    if let Some(caveat) = started {
        notes.push(caveat);
    }
    let scoring = settings.score.then(|| ScoringInfo {
        scale: "0-1".into(),
        rubric: RUBRIC.iter().map(|r| r.to_string()).collect(),
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

    let mut turns: Vec<ArenaTurn> = Vec::new();
    // What seats see beyond turns: the moderator's summaries (star), or the tree's.
    let mut sight = Sight::default();
    if settings.topology == Topology::Tree {
        let order: Vec<String> = members.iter().map(|m| m.seat.id.clone()).collect();
        let mut tree = Tree::of(&order).map_err(EngineError::Setup)?;
        tree::announce(ctx, &tree);
        let names = |id: &str| role_of(&members, id);
        tree::plan(
            ctx,
            &mut tree,
            settings.planning,
            &topic,
            &names,
            Instant::now() + common.round_timeout,
        )
        .await?;
        sight.tree = Some(tree);
    }
    let mut picks: Vec<Pick> = Vec::new();
    let mut scores: Vec<RubricScore> = Vec::new();
    for round in 1..=settings.rounds {
        let phase = phase_of(round, settings.rounds);
        ctx.emit(Event::RoundStarted { round, limit: None });
        let order: Vec<usize> = match settings.order {
            Order::RoundRobin => (0..members.len()).collect(),
            Order::Moderator => {
                let (order, round_picks) =
                    moderator_order(ctx, common, &topic, &members, &turns, round).await?;
                picks.extend(round_picks);
                order
            }
        };
        let first_of_round = turns.len();
        for index in order {
            let member = &members[index];
            let number = turns.len() as u32 + 1;
            let turn = match member.player {
                Player::Model => {
                    speak(
                        ctx, settings, &topic, member, &members, &turns, &sight, round, phase,
                    )
                    .await?
                }
                Player::Human => {
                    human_turn(ctx, settings, member, &turns, round, phase, number).await?
                }
                Player::Outside => {
                    outside_turn(ctx, settings, &mut live, member, round, phase, number).await?
                }
            };
            let arena_turn = arena_turn(&turn, member, turns.len() as u32 + 1);
            live.turn(&arena_turn.argument);
            turns.push(arena_turn);
        }
        if turns[first_of_round..]
            .iter()
            .all(|t| t.status == TurnStatus::Failed)
        {
            return Err(EngineError::Provider(
                ctx.turns()
                    .iter()
                    .rev()
                    .find_map(|t| t.note.clone())
                    .unwrap_or_else(|| "every seat failed".into()),
            ));
        }
        if settings.topology == Topology::Star && round < settings.rounds {
            let text = digest(
                ctx,
                common,
                &topic,
                &members,
                &turns[first_of_round..],
                round,
            )
            .await?;
            sight.digests.push((round, text));
        }
        if let Some(tree) = sight.tree.as_mut()
            && round < settings.rounds
        {
            let names = |id: &str| role_of(&members, id);
            let this_round = &turns[first_of_round..];
            let team_turns = |team: &[String]| {
                let mine: Vec<ArenaTurn> = this_round
                    .iter()
                    .filter(|t| team.contains(&t.seat))
                    .cloned()
                    .collect();
                transcript_text(&members, &mine)
            };
            let escalated = tree::escalate(
                ctx,
                tree,
                round,
                &topic,
                &team_turns,
                &names,
                Instant::now() + common.round_timeout,
            )
            .await?;
            let spoke = |lead: &str| {
                this_round
                    .iter()
                    .any(|t| t.seat == lead && t.status == TurnStatus::Ok)
            };
            notes.extend(tree::settle_round(
                ctx,
                tree,
                &mut sight.escalations,
                round,
                escalated,
                &spoke,
            ));
        }
        if settings.score {
            let scored = score_round(
                ctx,
                common,
                &topic,
                &members,
                &turns[first_of_round..],
                round,
            )
            .await?;
            scores.extend(scored);
            with_gradual(&mut scores, &turns, &ctx.turns());
            ctx.emit(Event::Scores {
                round,
                scores: scores
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
        }
        let spoke = turns[first_of_round..]
            .iter()
            .filter(|t| t.status.spoke())
            .count();
        ctx.emit(Event::RoundCompleted {
            round,
            convergence: Convergence {
                assessment: Assessment::NewGround,
                decision: if round == settings.rounds {
                    Decision::Conclude
                } else {
                    Decision::Continue
                },
                signal: if round == settings.rounds {
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
                members.len(),
                if settings.score {
                    format!("; {} argument(s) scored", scores.len())
                } else {
                    String::new()
                }
            ),
        });
        let artifacts = json!({"round": round, "scores": scores});
        let summary = format!("Round {round} ({}) is in.", phase_name(phase));
        if let Some(ending) =
            kit::gate(ctx, common, "after_round", round, summary, artifacts).await?
        {
            return Ok(ending);
        }
    }
    // Gradual scores beside the rubric, from the whole debate's speech acts.
    with_gradual(&mut scores, &turns, &ctx.turns());
    // The closing vote (`--vote`): the seats moot's model plays rank every seat's position.
    let votes = match common.vote {
        Some(method) => {
            let voters: Vec<Seat> = members
                .iter()
                .filter(|m| m.player == Player::Model)
                .map(|m| m.seat.clone())
                .collect();
            let candidates: Vec<(String, String)> = members
                .iter()
                .map(|m| {
                    (
                        m.seat.id.clone(),
                        format!("{}: {}", m.persona.role_name, m.persona.stance_summary),
                    )
                })
                .collect();
            if voters.is_empty() {
                notes.push("No seat moot's model plays could vote.".into());
                None
            } else {
                let so_far = transcript_text(&members, &turns);
                let round = settings.rounds;
                Some(
                    kit::closing_vote(ctx, common, method, round, &voters, &candidates, &so_far)
                        .await?
                        .1,
                )
            }
        }
        None => None,
    };
    let artifacts = json!({"scores": scores, "votes": votes});
    if let Some(ending) = kit::gate(
        ctx,
        common,
        "before_synthesis",
        settings.rounds,
        format!(
            "{} turns are in; the moderator's summary comes next.",
            turns.len()
        ),
        artifacts,
    )
    .await?
    {
        return Ok(ending);
    }
    let summary = summarise(ctx, common, &topic, &members, &turns, &scores).await?;
    live.finish(&scores, scoring.as_ref(), &summary);
    let result = ArenaResult {
        debate_id: ctx.debate_id.clone(),
        topic,
        personas: members.iter().map(|m| m.persona.clone()).collect(),
        turns,
        order: settings.order,
        picks,
        scoring,
        scores,
        summary,
        votes,
        topology: settings.topology,
        rounds: settings.rounds,
        notes,
        date: crate::debate::today(),
    };
    Ok(Ending::Concluded(Box::new(Outcome {
        markdown: result.to_markdown(),
        confidence: Confidence::Medium,
        data: serde_json::to_value(&result).unwrap_or_default(),
        section: Some("arena_result".into()),
        date: result.date.clone(),
    })))
}

/// Sets each score's gradual score: the mean score of its turn's own arguments in the graph
/// of every turn so far.
fn with_gradual(scores: &mut [RubricScore], turns: &[ArenaTurn], journal: &[Turn]) {
    let graph = argument_graph(journal);
    for score in scores {
        if let Some(turn) = turns.iter().find(|t| t.turn_number == score.turn_number) {
            let own: Vec<f64> = turn_argument_ids(turn)
                .iter()
                .filter_map(|id| graph.get(id).map(|a| a.score))
                .collect();
            score.gradual = (!own.is_empty()).then(|| own.iter().sum::<f64>() / own.len() as f64);
        }
    }
}

/// The ids of the arguments (claims and since-moves) a turn made.
fn turn_argument_ids(turn: &ArenaTurn) -> Vec<String> {
    turn.argument
        .metadata
        .get("moot")
        .and_then(|m| m.get("moves"))
        .and_then(Value::as_array)
        .map(|moves| {
            moves
                .iter()
                .filter(|m| {
                    matches!(
                        m.get("act").and_then(Value::as_str),
                        Some("claim" | "since")
                    )
                })
                .filter_map(|m| m.get("id").and_then(Value::as_str).map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Personas: from a `--persona` file, else the catalog, else written by the moderator.
async fn personas(
    ctx: &Context,
    common: &Common,
    settings: &ArenaSettings,
    topic: &str,
    notes: &mut Vec<String>,
) -> Result<Vec<Persona>, EngineError> {
    let mut found: Vec<Option<PersonaSpec>> = settings
        .seats
        .iter()
        .map(|role| {
            settings
                .personas
                .iter()
                .find(|p| p.role_name.eq_ignore_ascii_case(role))
                .cloned()
                .or_else(|| {
                    crate::catalog::find(&common.catalog, role).map(|p| PersonaSpec {
                        role_name: p.role_name.clone().unwrap_or_else(|| p.name.clone()),
                        agent_id: None,
                        stance_summary: format!(
                            "{} (priorities: {})",
                            p.trade_offs,
                            p.priorities.join(", ")
                        ),
                        instructions: p.instructions.clone().unwrap_or_else(|| {
                            format!(
                                "Argue from the priorities of the {}: {}.",
                                p.name,
                                p.priorities.join(", ")
                            )
                        }),
                        background_context: p.background_context.clone().unwrap_or_default(),
                    })
                })
        })
        .collect();
    let missing: Vec<String> = settings
        .seats
        .iter()
        .zip(&found)
        .filter(|(_, p)| p.is_none())
        .map(|(role, _)| role.clone())
        .collect();
    if !missing.is_empty() {
        let written = setup_personas(ctx, common, topic, &settings.seats, &missing).await?;
        for (slot, role) in found.iter_mut().zip(&settings.seats) {
            if slot.is_none() {
                *slot = Some(
                    match written
                        .iter()
                        .find(|p| p.role_name.eq_ignore_ascii_case(role))
                    {
                        Some(spec) => spec.clone(),
                        None => {
                            notes.push(format!(
                                "The moderator wrote no persona for {role}; a plain one stands in."
                            ));
                            PersonaSpec {
                                role_name: role.clone(),
                                agent_id: None,
                                stance_summary: format!("Argue as the {role} would."),
                                instructions: format!(
                                    "Make the strongest case a {role} would make, with evidence."
                                ),
                                background_context: String::new(),
                            }
                        }
                    },
                );
            }
        }
    }
    let mut used: HashSet<String> = HashSet::new();
    Ok(found
        .into_iter()
        .flatten()
        .map(|spec| {
            let base = spec
                .agent_id
                .filter(|id| arena::is_safe_name(id))
                .unwrap_or_else(|| arena::agent_id(&spec.role_name));
            let mut id = base.clone();
            let mut n = 2;
            while !used.insert(id.clone()) {
                id = format!("{base}_{n}");
                n += 1;
            }
            Persona {
                agent_id: id,
                debate_id: ctx.debate_id.clone(),
                role_name: spec.role_name,
                stance_summary: spec.stance_summary,
                instructions: spec.instructions,
                background_context: spec.background_context,
                extra: Map::new(),
            }
        })
        .collect())
}

/// The moderator's setup step: personas for the roles given by name only.
async fn setup_personas(
    ctx: &Context,
    common: &Common,
    topic: &str,
    roles: &[String],
    missing: &[String],
) -> Result<Vec<PersonaSpec>, EngineError> {
    let line = json!({"type": "string", "minLength": 1});
    let schema = json!({
        "type": "object",
        "properties": {
            "personas": {
                "type": "array",
                "minItems": missing.len(),
                "maxItems": missing.len(),
                "items": {
                    "type": "object",
                    "properties": {
                        "role_name": {"type": "string", "enum": missing},
                        "stance_summary": line,
                        "instructions": line,
                        "background_context": {"type": "string"}
                    },
                    "required": ["role_name", "stance_summary", "instructions", "background_context"]
                }
            }
        },
        "required": ["personas"]
    });
    let prompt = format!(
        "Topic: {topic}\nThe seats: {}.\n\nWrite a persona for each of these roles: {}. A persona \
         gives the stance to take (one or two sentences), instructions on how to argue it (style, \
         key points to make and refute, sources to prefer) and background context it should know. \
         Make the seats' stances genuinely different.",
        roles.join(", "),
        missing.join(", ")
    );
    let turn = ctx
        .speak(kit::structured_speech(
            TurnKey::new(0, Phase::Analysis, MODERATOR),
            None,
            "You are the moderator of a debate arena. You set it up; you take no side.".into(),
            prompt,
            PERSONAS_SCHEMA,
            schema,
            ReplyKind::validated(validate_personas, None),
            Some(1200),
            Some(Instant::now() + common.round_timeout),
        ))
        .await?;
    if turn.status == TurnStatus::Failed {
        return Err(EngineError::Provider(
            turn.note.unwrap_or_else(|| "the provider failed".into()),
        ));
    }
    Ok(turn
        .data
        .as_ref()
        .filter(|_| turn.status == TurnStatus::Ok)
        .and_then(|d| serde_json::from_value(d.get("personas")?.clone()).ok())
        .unwrap_or_default())
}

fn validate_personas(value: &Value) -> Result<Value, String> {
    let items = value
        .get("personas")
        .and_then(Value::as_array)
        .ok_or("`personas` must be an array")?;
    for (i, item) in items.iter().enumerate() {
        for field in ["role_name", "stance_summary", "instructions"] {
            if item
                .get(field)
                .and_then(Value::as_str)
                .is_none_or(|s| s.trim().is_empty())
            {
                return Err(format!("persona {} has no `{field}`", i + 1));
            }
        }
    }
    Ok(value.clone())
}

/// The argument schema: the note's argument fields, with the debater's speech acts.
fn argument_schema(earlier: &[u32], rebuttal: bool) -> Value {
    let moves = debater_schema()["properties"]["moves"].clone();
    let mut responds = json!({"type": "array", "items": {"type": "integer"}, "description": "Turn numbers of the earlier arguments this one answers."});
    if rebuttal && !earlier.is_empty() {
        responds["minItems"] = json!(1);
    }
    json!({
        "type": "object",
        "properties": {
            "argument_text": {"type": "string", "minLength": 1, "description": "Your statement, as markdown prose."},
            "responds_to": responds,
            "references": {"type": "array", "maxItems": 8, "items": {"type": "string", "minLength": 1}, "description": "Sources, data points, or earlier turns as turn:N."},
            "tone": {"type": "string", "description": "The tone, in a word."},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "moves": moves
        },
        "required": ["argument_text", "responds_to", "references", "confidence", "moves"]
    })
}

/// Reads an arena argument: the debater's moves validated as for every protocol, the turns it
/// answers checked against the transcript, the rest kept for the arena file.
struct ArgumentReplies {
    /// Turn numbers that exist so far.
    earlier: Vec<u32>,
    rebuttal: bool,
}

impl ReplyParser for ArgumentReplies {
    fn parse(&self, reply: &Value, transcript: &Transcript<'_>) -> Result<Reply, String> {
        let text = reply
            .get("argument_text")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .ok_or("`argument_text` must be a non-empty string: your statement")?;
        let responds: Vec<u32> = reply
            .get("responds_to")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_u64)
                    .map(|n| n as u32)
                    .collect()
            })
            .unwrap_or_default();
        if let Some(unknown) = responds.iter().find(|n| !self.earlier.contains(n)) {
            return Err(format!(
                "`responds_to` names turn {unknown}, which does not exist; earlier turns are {:?}",
                self.earlier
            ));
        }
        if self.rebuttal && !self.earlier.is_empty() && responds.is_empty() {
            return Err("a rebuttal must name the turns it answers in `responds_to`".into());
        }
        let key = transcript.key;
        let known: HashSet<String> = transcript
            .turns
            .iter()
            .flat_map(|t| t.moves.iter().map(|m| m.id.clone()))
            .collect();
        let debater = json!({
            "argument": text,
            "moves": reply.get("moves").cloned().unwrap_or(Value::Null),
            "confidence": reply.get("confidence").cloned().unwrap_or(Value::Null),
            "position": ""
        });
        let parsed = validate_debater_reply(
            &debater,
            &move_prefix(&key.seat, key.round, key.phase),
            &known,
        )?;
        let references: Vec<String> = reply
            .get("references")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .take(8)
                    .collect()
            })
            .unwrap_or_default();
        Ok(Reply {
            content: parsed.argument,
            moves: parsed.moves,
            confidence: parsed.confidence,
            data: Some(json!({
                "responds_to": responds,
                "references": references,
                "tone": reply.get("tone").and_then(Value::as_str).unwrap_or("").trim(),
            })),
            note: (parsed.dropped_answers > 0).then(|| {
                format!(
                    "{} answer(s) pointed at no known argument and were dropped",
                    parsed.dropped_answers
                )
            }),
        })
    }
}

/// The transcript as a seat reads it: every earlier turn with its number and author.
/// What `member` sees before it speaks, by the topology: every turn (mesh), its own turns and
/// the moderator's summary of each round (star), or its own turns and those of the seat
/// before it (chain). Only the turns it sees can be named in `responds_to`'s prompt.
fn seen_by(
    topology: Topology,
    member: &Member,
    members: &[Member],
    turns: &[ArenaTurn],
    sight: &Sight,
) -> String {
    let viewer = member.seat.id.as_str();
    let index = members
        .iter()
        .position(|m| m.seat.id == member.seat.id)
        .unwrap_or(0);
    let order: Vec<String> = members.iter().map(|m| m.seat.id.clone()).collect();
    let visible: Vec<ArenaTurn> = turns
        .iter()
        .filter(|t| match &sight.tree {
            Some(tree) => tree.sees(viewer, &t.seat),
            None => topology.sees(&order, viewer, &t.seat),
        })
        .cloned()
        .collect();
    let mut out = if visible.is_empty() {
        "You have seen no argument yet.".to_string()
    } else {
        format!(
            "The transcript you see:{}",
            transcript_text(members, &visible)
        )
    };
    if let Some(tree) = &sight.tree {
        let names = |id: &str| role_of(members, id);
        out.push_str(&tree::told(tree, viewer, &sight.escalations, &names));
    }
    if topology == Topology::Star && !sight.digests.is_empty() {
        out.push_str("\nThe moderator's summaries of each round:\n");
        for (round, digest) in &sight.digests {
            let _ = writeln!(
                out,
                "Round {round}: {}",
                fenced("moderator", "summary", digest)
            );
        }
    }
    if topology == Topology::Chain {
        let _ = write!(
            out,
            "\n(You see only your own turns and those of {}, the seat before you.)",
            members[(index + members.len() - 1) % members.len()]
                .persona
                .role_name
        );
    }
    out
}

/// What the topology shows seats beyond turns.
#[derive(Default)]
struct Sight {
    /// The moderator's summary of each round (star).
    digests: Vec<(u32, String)>,
    /// The tree's teams, each lead's summary of its team's round, and the root's summary of
    /// the leads' escalations.
    tree: Option<Tree>,
    escalations: tree::Escalations,
}

fn role_of(members: &[Member], id: &str) -> String {
    members
        .iter()
        .find(|m| m.seat.id == id)
        .map_or(id.to_string(), |m| {
            format!("{} ({id})", m.persona.role_name)
        })
}

/// The moderator's summary of a round, for a star topology's seats.
async fn digest(
    ctx: &Context,
    common: &Common,
    topic: &str,
    members: &[Member],
    turns: &[ArenaTurn],
    round: u32,
) -> Result<String, EngineError> {
    let turn = ctx
        .speak(kit::prose_speech(
            TurnKey::new(round, Phase::Digest, MODERATOR),
            format!("You are the moderator of a debate arena. You summarise fairly and take no side. {DATA_RULE}"),
            format!(
                "Topic: {topic}\nRound {round}:{}\n\nSummarise each seat's argument of this round in one line, naming the seat, for the seats to read instead of the transcript.",
                transcript_text(members, turns)
            ),
            Some(500),
            Instant::now() + common.round_timeout,
        ))
        .await?;
    Ok(turn.content)
}

fn transcript_text(members: &[Member], turns: &[ArenaTurn]) -> String {
    let mut out = String::new();
    for t in turns {
        let role = members
            .iter()
            .find(|m| m.persona.agent_id == t.agent_id)
            .map_or(t.agent_id.as_str(), |m| m.persona.role_name.as_str());
        let _ = writeln!(
            out,
            "\nTurn {} — {role} ({}, round {}):",
            t.turn_number,
            phase_name(t.phase),
            t.round
        );
        match t.status {
            TurnStatus::TimedOut => out.push_str("(missed the time limit)\n"),
            TurnStatus::Failed => out.push_str("(no reply)\n"),
            _ => {
                let _ = writeln!(
                    out,
                    "{}",
                    fenced(&t.agent_id, "argument", &t.argument.argument_text)
                );
            }
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
async fn speak(
    ctx: &Context,
    settings: &ArenaSettings,
    topic: &str,
    member: &Member,
    members: &[Member],
    turns: &[ArenaTurn],
    sight: &Sight,
    round: u32,
    phase: Phase,
) -> Result<Turn, EngineError> {
    let persona = &member.persona;
    let system = format!(
        "You are {} in a debate arena. Your stance: {}\nInstructions: {}\n{}Stay in your role; \
         argue from evidence; attack arguments, not people. {DATA_RULE}",
        persona.role_name,
        persona.stance_summary,
        persona.instructions,
        if persona.background_context.trim().is_empty() {
            String::new()
        } else {
            format!("Background: {}\n", persona.background_context)
        }
    );
    let task = match phase {
        Phase::Opening => "Give your opening statement: your position on the topic and your strongest reasons.".to_string(),
        Phase::Closing => "Give your closing statement: your final position, what you concede, and why your case stands.".to_string(),
        _ => "Give your rebuttal: answer the previous arguments, naming the turns you answer in `responds_to`.".to_string(),
    };
    let earlier: Vec<u32> = turns.iter().map(|t| t.turn_number).collect();
    let prompt = format!(
        "Topic: {topic}\nRound {round} of {} ({}).\n{}\n{task}",
        settings.rounds,
        phase_name(phase),
        seen_by(settings.topology, member, members, turns, sight)
    );
    let schema = argument_schema(&earlier, phase != Phase::Opening);
    ctx.speak(kit::structured_speech(
        TurnKey::new(round, phase, member.seat.id.clone()),
        Some(persona.role_name.clone()),
        system,
        prompt,
        ARGUMENT_SCHEMA,
        schema,
        ReplyKind::Structured {
            parser: Arc::new(ArgumentReplies {
                earlier,
                rebuttal: phase != Phase::Opening,
            }),
            stream_field: Some("argument_text"),
        },
        Some(1200),
        Some(Instant::now() + std::time::Duration::from_secs(settings.turn_timeout_seconds)),
    ))
    .await
}

/// The arena file of a journaled turn.
fn arena_turn(turn: &Turn, member: &Member, number: u32) -> ArenaTurn {
    let data = turn.data.clone().unwrap_or(Value::Null);
    let mut references: Vec<String> = data
        .get("responds_to")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_u64)
                .map(|n| format!("turn:{n}"))
                .collect()
        })
        .unwrap_or_default();
    references.extend(
        data.get("references")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default(),
    );
    let mut metadata = Map::new();
    if let Some(confidence) = turn.confidence {
        metadata.insert("confidence".into(), json!(confidence));
    }
    if let Some(tone) = data
        .get("tone")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
    {
        metadata.insert("tone".into(), json!(tone));
    }
    metadata.insert(
        "moot".into(),
        json!({
            "round": turn.round,
            "phase": phase_name(turn.phase),
            "seat": turn.seat,
            "status": turn.status,
            "moves": turn.moves,
        }),
    );
    ArenaTurn {
        turn_number: number,
        round: turn.round,
        phase: turn.phase,
        seat: turn.seat.clone(),
        agent_id: member.persona.agent_id.clone(),
        status: turn.status,
        argument: arena::Argument {
            turn_number: number,
            agent_id: member.persona.agent_id.clone(),
            timestamp_utc: crate::debate::now_rfc3339(),
            argument_text: turn.content.clone(),
            references,
            metadata,
            extra: Map::new(),
        },
    }
}

/// The moderator orders a round's speakers from the transcript, with a reason for each.
async fn moderator_order(
    ctx: &Context,
    common: &Common,
    topic: &str,
    members: &[Member],
    turns: &[ArenaTurn],
    round: u32,
) -> Result<(Vec<usize>, Vec<Pick>), EngineError> {
    let ids: Vec<String> = members.iter().map(|m| m.persona.agent_id.clone()).collect();
    let schema = json!({
        "type": "object",
        "properties": {
            "order": {
                "type": "array",
                "minItems": ids.len(),
                "maxItems": ids.len(),
                "items": {
                    "type": "object",
                    "properties": {
                        "agent_id": {"type": "string", "enum": ids},
                        "reason": {"type": "string", "minLength": 1}
                    },
                    "required": ["agent_id", "reason"]
                }
            }
        },
        "required": ["order"]
    });
    let prompt = format!(
        "Topic: {topic}\nRound {round}. Seats: {}.\n{}\nDecide who speaks in this round and in \
         which order: every seat once, the one with most to answer first. Give a reason for each.",
        members
            .iter()
            .map(|m| format!("{} ({})", m.persona.agent_id, m.persona.role_name))
            .collect::<Vec<_>>()
            .join(", "),
        if turns.is_empty() {
            String::new()
        } else {
            format!("The transcript so far:{}", transcript_text(members, turns))
        }
    );
    let expected = ids.clone();
    let turn = ctx
        .speak(kit::structured_speech(
            TurnKey::new(round, Phase::Pose, MODERATOR),
            None,
            format!("You are the moderator of a debate arena: you manage turns and take no side. {DATA_RULE}"),
            prompt,
            ORDER_SCHEMA,
            schema,
            ReplyKind::Structured {
                parser: Arc::new(OrderReplies { ids: expected }),
                stream_field: None,
            },
            Some(600),
            Some(Instant::now() + common.round_timeout),
        ))
        .await?;
    let picks: Vec<(String, String)> = turn
        .data
        .as_ref()
        .filter(|_| turn.status == TurnStatus::Ok)
        .and_then(|d| serde_json::from_value(d.get("order")?.clone()).ok())
        .unwrap_or_default();
    if picks.is_empty() {
        // No usable order: round-robin, said so.
        let order: Vec<usize> = (0..members.len()).collect();
        let picks = order
            .iter()
            .map(|&i| Pick {
                round,
                agent_id: ids[i].clone(),
                reason: "round-robin: the moderator's order was unusable".into(),
            })
            .collect();
        return Ok((order, picks));
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
    Ok((order, picks))
}

/// Checks the moderator's order: every seat exactly once.
struct OrderReplies {
    ids: Vec<String>,
}

impl ReplyParser for OrderReplies {
    fn parse(&self, reply: &Value, _: &Transcript<'_>) -> Result<Reply, String> {
        let items = reply
            .get("order")
            .and_then(Value::as_array)
            .ok_or("`order` must be an array")?;
        let mut order: Vec<(String, String)> = Vec::new();
        for item in items {
            let id = item
                .get("agent_id")
                .and_then(Value::as_str)
                .unwrap_or("")
                .trim()
                .to_string();
            let reason = item
                .get("reason")
                .and_then(Value::as_str)
                .unwrap_or("")
                .trim()
                .to_string();
            if !self.ids.contains(&id) {
                return Err(format!(
                    "{id:?} is no seat; the seats are {}",
                    self.ids.join(", ")
                ));
            }
            if order.iter().any(|(seen, _)| *seen == id) {
                return Err(format!(
                    "{id} is ordered twice; every seat speaks once a round"
                ));
            }
            if reason.is_empty() {
                return Err(format!("give a reason for picking {id}"));
            }
            order.push((id, reason));
        }
        if order.len() != self.ids.len() {
            return Err(format!("order all {} seats", self.ids.len()));
        }
        Ok(Reply {
            content: order
                .iter()
                .map(|(id, reason)| format!("{id}: {reason}"))
                .collect::<Vec<_>>()
                .join("\n"),
            data: Some(json!({"order": order})),
            ..Reply::default()
        })
    }
}

/// The moderator scores a round's arguments on the rubric.
async fn score_round(
    ctx: &Context,
    common: &Common,
    topic: &str,
    members: &[Member],
    turns: &[ArenaTurn],
    round: u32,
) -> Result<Vec<RubricScore>, EngineError> {
    let scored: Vec<&ArenaTurn> = turns.iter().filter(|t| t.status.spoke()).collect();
    if scored.is_empty() {
        return Ok(Vec::new());
    }
    let numbers: Vec<u32> = scored.iter().map(|t| t.turn_number).collect();
    let unit = json!({"type": "number", "minimum": 0, "maximum": 1});
    let mut criteria = Map::new();
    for name in RUBRIC {
        criteria.insert(name.into(), unit.clone());
    }
    let mut properties = criteria.clone();
    properties.insert(
        "turn_number".into(),
        json!({"type": "integer", "enum": numbers}),
    );
    properties.insert(
        "reason".into(),
        json!({"type": "string", "minLength": 1, "description": "One line."}),
    );
    let mut required: Vec<&str> = vec!["turn_number"];
    required.extend(RUBRIC);
    required.push("reason");
    let schema = json!({
        "type": "object",
        "properties": {
            "scores": {"type": "array", "minItems": numbers.len(), "maxItems": numbers.len(), "items": {"type": "object", "properties": properties, "required": required}}
        },
        "required": ["scores"]
    });
    let owned: Vec<ArenaTurn> = scored.iter().map(|t| (*t).clone()).collect();
    let prompt = format!(
        "Topic: {topic}\nScore each argument of round {round} from 0 to 1 on every criterion of the \
         rubric — evidence (claims backed by sources or data), relevance (to the topic), \
         responsiveness (answers what it names), stance_adherence (argues its persona's stance) — \
         with a one-line reason.\n{}",
        transcript_text(members, &owned)
    );
    let turn = ctx
        .speak(kit::structured_speech(
            TurnKey::new(round, Phase::Evaluation, MODERATOR),
            None,
            format!("You are the moderator of a debate arena. You score arguments by the rubric, not by whether you agree. {DATA_RULE}"),
            prompt,
            SCORES_SCHEMA,
            schema,
            ReplyKind::Structured {
                parser: Arc::new(ScoreReplies { numbers: numbers.clone() }),
                stream_field: None,
            },
            Some(900),
            Some(Instant::now() + common.round_timeout),
        ))
        .await?;
    let Some(data) = turn.data.as_ref().filter(|_| turn.status == TurnStatus::Ok) else {
        return Ok(Vec::new());
    };
    let items: Vec<Value> = data
        .get("scores")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    Ok(items
        .iter()
        .filter_map(|item| {
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
        })
        .collect())
}

/// Checks the moderator's scores: every argument once, each criterion in [0, 1], a reason;
/// the score is the mean of the criteria (so it is never a number the model made up apart).
struct ScoreReplies {
    numbers: Vec<u32>,
}

impl ReplyParser for ScoreReplies {
    fn parse(&self, reply: &Value, _: &Transcript<'_>) -> Result<Reply, String> {
        let items = reply
            .get("scores")
            .and_then(Value::as_array)
            .ok_or("`scores` must be an array")?;
        let mut seen = Vec::new();
        let mut kept = Vec::new();
        for item in items {
            let number = item
                .get("turn_number")
                .and_then(Value::as_u64)
                .ok_or("every score needs its `turn_number`")? as u32;
            if !self.numbers.contains(&number) {
                return Err(format!(
                    "turn {number} is not one of this round's arguments ({:?})",
                    self.numbers
                ));
            }
            if seen.contains(&number) {
                return Err(format!("turn {number} is scored twice"));
            }
            seen.push(number);
            let mut total = 0.0;
            let mut entry = item.clone();
            for criterion in RUBRIC {
                let value = item
                    .get(criterion)
                    .and_then(Value::as_f64)
                    .filter(|v| (0.0..=1.0).contains(v))
                    .ok_or_else(|| {
                        format!("turn {number}: `{criterion}` must be a number from 0 to 1")
                    })?;
                total += value;
            }
            if item
                .get("reason")
                .and_then(Value::as_str)
                .is_none_or(|r| r.trim().is_empty())
            {
                return Err(format!("turn {number}: give a one-line `reason`"));
            }
            entry["score"] = json!(total / RUBRIC.len() as f64);
            kept.push(entry);
        }
        if seen.len() != self.numbers.len() {
            return Err(format!(
                "score every argument of the round: {:?}",
                self.numbers
            ));
        }
        Ok(Reply {
            content: kept
                .iter()
                .map(|s| {
                    format!(
                        "turn {}: {:.2} — {}",
                        s["turn_number"],
                        s["score"].as_f64().unwrap_or(0.0),
                        s["reason"].as_str().unwrap_or("")
                    )
                })
                .collect::<Vec<_>>()
                .join("\n"),
            data: Some(json!({"scores": kept})),
            ..Reply::default()
        })
    }
}

/// The moderator's summary, streamed.
async fn summarise(
    ctx: &Context,
    common: &Common,
    topic: &str,
    members: &[Member],
    turns: &[ArenaTurn],
    scores: &[RubricScore],
) -> Result<String, EngineError> {
    let rounds = turns.iter().map(|t| t.round).max().unwrap_or(0);
    let mut prompt = format!(
        "Topic: {topic}\nThe debate:{}\n\nSummarise it for a reader who was not there: each \
         seat's final position, the strongest arguments (cite turn numbers), where they agree, \
         what stays open, and what a decision-maker should take from it. Markdown, under 400 words.",
        transcript_text(members, turns)
    );
    if !scores.is_empty() {
        prompt.push_str("\nRubric scores: ");
        for s in scores {
            let _ = write!(prompt, "turn {} {:.2}; ", s.turn_number, s.score);
        }
    }
    let turn = ctx
        .speak(kit::prose_speech(
            TurnKey::new(rounds, Phase::Synthesis, MODERATOR),
            format!("You are the moderator of a debate arena. You summarise fairly and take no side. {DATA_RULE}"),
            prompt,
            Some(900),
            Instant::now() + common.round_timeout,
        ))
        .await?;
    Ok(match turn.status {
        TurnStatus::Ok if !turn.content.trim().is_empty() => turn.content,
        _ => "The moderator's summary could not be had; the transcript below stands.".into(),
    })
}

/// The arena directory kept written while the debate runs (when `--arena-dir` is given). A
/// write that fails is a notice, once: the journal, not the directory, is what a resume needs.
struct Live<'a> {
    ctx: &'a Context,
    dir: Option<ArenaDir>,
    manifest: Option<Manifest>,
    failed: bool,
}

impl<'a> Live<'a> {
    fn open(
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
            moderator_id: "moderator".into(),
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

    fn write(&mut self, write: impl FnOnce(&ArenaDir) -> Result<(), arena::ArenaError>) {
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
    fn manifest(&mut self, change: impl FnOnce(&mut Manifest)) {
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
    fn dir(&self) -> Option<&ArenaDir> {
        self.dir.as_ref()
    }

    fn status(&mut self, status: ArenaStatus) {
        self.manifest(|m| m.status = status);
    }

    /// Files a turn (replacing an outside agent's submission with moot's acknowledged copy)
    /// and clears the request it answered.
    fn turn(&mut self, argument: &arena::Argument) {
        self.write(|dir| dir.write_turn(argument).map(|_| ()));
        self.manifest(|m| m.turn_requested = None);
    }

    fn finish(&mut self, scores: &[RubricScore], scoring: Option<&ScoringInfo>, summary: &str) {
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

/// What a phase asks of a seat, in a sentence.
fn task_of(phase: Phase) -> &'static str {
    match phase {
        Phase::Opening => "Give your opening statement: your position and your strongest reasons.",
        Phase::Closing => {
            "Give your closing statement: your final position, what you concede, and why your case stands."
        }
        _ => {
            "Give your rebuttal: answer earlier arguments and name the turns you answer (\"turn 3\")."
        }
    }
}

/// Turn numbers a person's text names (`turn 3`, `#3`) among the earlier turns.
fn named_turns(text: &str, earlier: &[u32]) -> Vec<u32> {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '#'))
        .filter(|w| !w.is_empty())
        .collect();
    let mut named = Vec::new();
    for (i, word) in words.iter().enumerate() {
        let number = match word.strip_prefix('#') {
            Some(n) => n.parse::<u32>().ok(),
            None if *word == "turn" => words.get(i + 1).and_then(|n| n.parse::<u32>().ok()),
            None => None,
        };
        if let Some(n) = number.filter(|n| earlier.contains(n) && !named.contains(n)) {
            named.push(n);
        }
    }
    named
}

/// A turn with no model behind it, for `seat` in `round`.
fn outside_words(round: u32, phase: Phase, seat: &str, provider: &str, model: &str) -> Turn {
    Turn::pending(TurnKey::new(round, phase, seat), provider, model)
}

/// A seat the person plays: the workbench opens its editor (headless: `g TEXT` on stdin);
/// what they write is the turn. `e` passes; silence past the time limit is a missed turn.
#[allow(clippy::too_many_arguments)]
async fn human_turn(
    ctx: &Context,
    settings: &ArenaSettings,
    member: &Member,
    turns: &[ArenaTurn],
    round: u32,
    phase: Phase,
    number: u32,
) -> Result<Turn, EngineError> {
    let key = TurnKey::new(round, phase, member.seat.id.clone());
    if let Some(turn) = ctx.replayed(&key) {
        return Ok(turn);
    }
    ctx.emit(Event::TurnRequested {
        round,
        phase,
        seat: member.seat.id.clone(),
        turn_number: number,
        by: crate::debate::PERSON.into(),
        timeout_seconds: settings.turn_timeout_seconds,
    });
    let persona = &member.persona;
    let detail = format!(
        "You play {} (turn {number}, round {round}, {}). Your stance: {}\n{}",
        persona.role_name,
        phase_name(phase),
        persona.stance_summary,
        task_of(phase)
    );
    let earlier: Vec<u32> = turns.iter().map(|t| t.turn_number).collect();
    let mut turn = outside_words(round, phase, &member.seat.id, crate::debate::PERSON, "");
    let timeout = std::time::Duration::from_secs(settings.turn_timeout_seconds);
    match ctx.ask_turn(round, detail, timeout).await? {
        crate::engine::CheckpointOutcome::Answered {
            control: crate::debate::Control::Guide(text),
            by,
        } => {
            turn.model = by;
            turn.data = Some(json!({
                "responds_to": named_turns(&text, &earlier),
                "references": [],
                "tone": "",
            }));
            turn.content = text;
        }
        crate::engine::CheckpointOutcome::Answered { by, .. } => {
            turn.model = by;
            turn.note = Some("the person passed this turn".into());
        }
        crate::engine::CheckpointOutcome::TimedOut | crate::engine::CheckpointOutcome::Unasked => {
            turn.status = TurnStatus::TimedOut;
            turn.note = Some(format!(
                "nobody wrote this turn within {} s",
                settings.turn_timeout_seconds
            ));
        }
    }
    ctx.record(turn).await
}

/// How often an outside seat's transcript folder is looked at while its turn is awaited.
const OUTSIDE_POLL: std::time::Duration = std::time::Duration::from_millis(250);

/// A seat an outside agent plays: the request goes into the manifest (`turn_requested`) and
/// an event; the agent answers with `moot arena submit` or by dropping a conforming
/// `turn_<n>_<agent_id>_<timestamp>.json` into `transcript/`, which is checked (its seat, its
/// number, its text), journaled and acknowledged (moot rewrites it with its own metadata and
/// clears the request). A file that does not conform is set aside as `….rejected` with a
/// notice, and the wait goes on until the turn's time limit.
async fn outside_turn(
    ctx: &Context,
    settings: &ArenaSettings,
    live: &mut Live<'_>,
    member: &Member,
    round: u32,
    phase: Phase,
    number: u32,
) -> Result<Turn, EngineError> {
    let key = TurnKey::new(round, phase, member.seat.id.clone());
    if let Some(turn) = ctx.replayed(&key) {
        return Ok(turn);
    }
    let agent = member.persona.agent_id.clone();
    let timeout = std::time::Duration::from_secs(settings.turn_timeout_seconds);
    let deadline = Instant::now() + timeout;
    let deadline_utc = {
        let at = time::OffsetDateTime::now_utc() + timeout;
        at.replace_nanosecond(0)
            .unwrap_or(at)
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default()
    };
    live.manifest(|m| {
        m.turn_requested = Some(arena::TurnRequest {
            turn_number: number,
            agent_id: agent.clone(),
            round,
            deadline_utc: deadline_utc.clone(),
        })
    });
    ctx.emit(Event::TurnRequested {
        round,
        phase,
        seat: member.seat.id.clone(),
        turn_number: number,
        by: crate::debate::OUTSIDE.into(),
        timeout_seconds: settings.turn_timeout_seconds,
    });
    let mut turn = outside_words(
        round,
        phase,
        &member.seat.id,
        crate::debate::OUTSIDE,
        &agent,
    );
    let Some(dir) = live.dir() else {
        turn.status = TurnStatus::Failed;
        turn.note = Some(
            "the arena directory could not be written, so no outside agent could answer".into(),
        );
        return ctx.record(turn).await;
    };
    let prefix = format!("turn_{number}_{agent}_");
    let mut ticks = tokio::time::interval(OUTSIDE_POLL);
    let submitted = loop {
        if Instant::now() >= deadline {
            break None;
        }
        ticks.tick().await;
        let mut found = None;
        // Read beneath the arena root with no link followed: a `transcript/` replaced by a
        // link lists nothing.
        if let Ok(names) = dir.transcript_files() {
            let names = names
                .into_iter()
                .filter(|n| n.starts_with(&prefix) && n.ends_with(".json"));
            for name in names {
                let path = &name;
                match dir.read_turn_file(&name) {
                    Ok(argument)
                        if argument.agent_id == agent
                            && argument.turn_number == number
                            && !argument.argument_text.trim().is_empty() =>
                    {
                        found = Some(argument);
                        break;
                    }
                    Ok(argument) => set_aside(
                        ctx,
                        dir,
                        path,
                        &format!(
                            "it names turn {} of {:?}, or has no argument_text; turn {number} of {agent} is awaited",
                            argument.turn_number, argument.agent_id
                        ),
                    ),
                    Err(e) => set_aside(ctx, dir, path, &e.to_string()),
                }
            }
        }
        if found.is_some() {
            break found;
        }
    };
    match submitted {
        Some(argument) => {
            let earlier: Vec<u32> = (1..number).collect();
            let responds: Vec<u32> = argument
                .references
                .iter()
                .filter_map(|r| r.strip_prefix("turn:")?.trim().parse::<u32>().ok())
                .filter(|n| earlier.contains(n))
                .collect();
            let references: Vec<String> = argument
                .references
                .iter()
                .filter(|r| !r.starts_with("turn:"))
                .cloned()
                .collect();
            turn.content = argument.argument_text.clone();
            turn.confidence = argument.metadata.get("confidence").and_then(Value::as_f64);
            turn.data = Some(json!({
                "responds_to": responds,
                "references": references,
                "tone": argument.metadata.get("tone").and_then(Value::as_str).unwrap_or(""),
            }));
        }
        None => {
            turn.status = TurnStatus::TimedOut;
            turn.note = Some(format!(
                "the outside agent {agent} sent nothing within {} s",
                settings.turn_timeout_seconds
            ));
        }
    }
    ctx.record(turn).await
}

/// Moves a turn file that cannot be accepted out of the way (the turn can be submitted
/// again), saying why.
fn set_aside(ctx: &Context, dir: &ArenaDir, name: &str, why: &str) {
    let _ = dir.set_aside(name);
    ctx.emit(Event::Notice {
        message: format!(
            "{name} was set aside as {name}.rejected: {why}; turn files can be submitted again"
        ),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn persona_files_read_as_json_or_toml_and_name_what_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("skeptic.json"),
            r#"{"role_name": "Skeptic", "stance_summary": "Doubt it", "instructions": "Ask for data", "background_context": "Two pilots ran"}"#,
        )
        .unwrap();
        let spec = persona_file("skeptic.json", dir.path()).unwrap();
        assert_eq!(
            (spec.role_name.as_str(), spec.background_context.as_str()),
            ("Skeptic", "Two pilots ran")
        );
        std::fs::write(dir.path().join("torn.json"), "{\"role_name\": ").unwrap();
        let err = persona_file("torn.json", dir.path()).unwrap_err();
        assert!(err.contains("--persona torn.json: line 1"), "{err}");
        std::fs::write(dir.path().join("nameless.toml"), "stance_summary = \"x\"\n").unwrap();
        let err = persona_file("nameless.toml", dir.path()).unwrap_err();
        assert!(err.contains("role_name"), "{err}");
        let err = persona_file("missing.json", dir.path()).unwrap_err();
        assert!(
            err.contains("--persona missing.json: cannot be read"),
            "{err}"
        );
    }

    #[test]
    fn a_persons_text_names_the_turns_it_answers() {
        assert_eq!(
            named_turns(
                "As turn 2 said, and #1 too; turn 9 is not here.",
                &[1, 2, 3]
            ),
            vec![2, 1]
        );
        assert!(named_turns("No numbers.", &[1]).is_empty());
    }
}
