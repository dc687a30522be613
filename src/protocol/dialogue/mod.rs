//! The formal dialogue (design note 002): PRO and OPP argue a thesis in speech acts that must
//! answer each other by the rules, over shared facts gathered from the codebase; the verdict
//! is computed from the journal first and read by a neutral moderator second.

pub mod rules;
pub mod verdict;

use super::kit;
use super::text::{DATA_RULE, fenced};
use super::{Common, Ending, Flag, Outcome, SettingsError, SettingsInput};
use crate::debate::{
    Assessment, Control, Convergence, ConvergenceSignal, Decision, Event, Fact, MODERATOR, Phase,
    Presentation, Seat, SidePanel, Turn, TurnKey, TurnStatus,
};
use crate::engine::Unusable;
use crate::engine::{
    CheckpointOutcome, Context, EngineError, Reply, ReplyParser, ReplyShape, Transcript,
};
use crate::gather::{self, Gathered, Located};
use rules::{DialogueReplies, Side, Stage, State};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::path::PathBuf;
use tokio::time::Instant;
use verdict::{DialogueResult, ModeratorVerdict, Participant, RecordedViolation, VerdictReplies};

/// The formal dialogue, as registered.
pub struct Dialogue;

/// Schema names, one per reply shape (the stand-in server answers by them).
pub const CONTEXT_SCHEMA: &str = "moot_dialogue_context";
pub use rules::MOVE_SCHEMA;

/// The most facts K holds.
const MAX_FACTS: usize = 12;
/// Prose of earlier turns quoted in a prompt, per turn.
const QUOTED_CHARS: usize = 600;

const FLAGS: &[Flag] = &[
    Flag {
        name: "context",
        value: Some("PATH"),
        help: "A file, or a directory of text files, every seat reads (repeatable; the panel's spec, the dialogue's extra sources)",
        repeatable: true,
    },
    Flag {
        name: "no-context",
        value: None,
        help: "Do not gather shared context from the current directory",
        repeatable: false,
    },
];

/// A seat's persona: who it is and the bias it declares.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Persona {
    pub persona: String,
    pub bias: String,
    /// Its own provider snapshot, when config gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<Value>,
}

/// The dialogue's settings, stored with the debate (K included, so a resume never gathers
/// again).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DialogueSettings {
    pub pro: Persona,
    pub opp: Persona,
    pub moderator: Persona,
    /// Rounds of argumentation between the opening and the closing.
    pub max_rounds: u32,
    /// `--perspective`: the viewpoint both sides argue from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub focus: Option<String>,
    /// What was gathered; `None` with `--no-context`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Gathered>,
}

/// `[dialogue]` in config.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
struct DialogueConfig {
    max_rounds: Option<u32>,
    context_budget: Option<usize>,
    /// `false` never gathers (as `--no-context`).
    context: Option<bool>,
    pro: Option<PersonaConfig>,
    opp: Option<PersonaConfig>,
    moderator: Option<PersonaConfig>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct PersonaConfig {
    persona: Option<String>,
    bias: Option<String>,
    provider: Option<String>,
    model: Option<String>,
}

/// The note's three personas.
fn default_personas() -> [Persona; 3] {
    let persona = |persona: &str, bias: &str| Persona {
        persona: persona.into(),
        bias: bias.into(),
        provider: None,
    };
    [
        persona(
            "Pragmatic engineer focused on delivery and simplicity",
            "prefers solutions that ship fast and are easy to maintain",
        ),
        persona(
            "Cautious architect focused on quality and long-term health",
            "prefers solutions that minimize risk and technical debt",
        ),
        persona(
            "Neutral senior staff engineer balancing trade-offs",
            "none: evaluates argument strength, not rhetoric",
        ),
    ]
}

impl super::Protocol for Dialogue {
    fn name(&self) -> &'static str {
        "dialogue"
    }

    fn description(&self) -> &'static str {
        "a formal persuasion dialogue: PRO and OPP argue a thesis in speech acts checked by the \
         rules, over facts gathered from the codebase; the verdict is computed from the \
         argument scores, then read by a neutral moderator"
    }

    fn flags(&self) -> &'static [Flag] {
        FLAGS
    }

    fn check_table(&self, input: &SettingsInput<'_>) -> Result<(), SettingsError> {
        input.table::<DialogueConfig>("dialogue").map(|_| ())
    }

    fn settings(&self, input: &SettingsInput<'_>) -> Result<Value, SettingsError> {
        let located = |key: &str, message: String| input.located("dialogue", key, message);
        let config: DialogueConfig = input.table("dialogue")?;
        let max_rounds = input.max_rounds.or(config.max_rounds).unwrap_or(2);
        if !(1..=10).contains(&max_rounds) {
            let problem = format!("a dialogue runs 1–10 rounds of argumentation, not {max_rounds}");
            return Err(match input.max_rounds {
                Some(_) => format!("--max-rounds: {problem}"),
                None => located("max_rounds", format!("max_rounds: {problem}")),
            });
        }
        let focus = match input.perspectives {
            [] => None,
            [one] => Some(one.trim().to_string()).filter(|f| !f.is_empty()),
            many => {
                return Err(format!(
                    "--perspective: a dialogue focuses both sides on one viewpoint; {} were given",
                    many.len()
                ));
            }
        };
        let [pro, opp, moderator] = default_personas();
        let mut personas = [("pro", pro), ("opp", opp), ("moderator", moderator)];
        for (key, persona) in &mut personas {
            let given = match *key {
                "pro" => &config.pro,
                "opp" => &config.opp,
                _ => &config.moderator,
            };
            let Some(given) = given else { continue };
            let table = format!("[dialogue.{key}]");
            if let Some(text) = &given.persona {
                if text.trim().is_empty() {
                    return Err(located(
                        &table,
                        format!("{table} persona must not be empty"),
                    ));
                }
                persona.persona = text.trim().to_string();
            }
            if let Some(text) = &given.bias {
                persona.bias = text.trim().to_string();
            }
            if given.provider.is_some() || given.model.is_some() {
                persona.provider = Some(
                    (input.resolve_provider)(given.provider.as_deref(), given.model.as_deref())
                        .map_err(|m| located(&table, format!("{table}: {m}")))?,
                );
            }
        }
        let [(_, pro), (_, opp), (_, moderator)] = personas;
        let flag = |name: &str| input.flags.get(name).cloned().unwrap_or_default();
        let paths: Vec<PathBuf> = flag("context").into_iter().map(PathBuf::from).collect();
        let skip = input.flags.contains_key("no-context") || config.context == Some(false);
        if skip && !paths.is_empty() {
            return Err(
                "--context and --no-context contradict each other; give one of them".into(),
            );
        }
        let budget = config.context_budget.unwrap_or(gather::DEFAULT_BUDGET);
        if !(1_000..=1_000_000).contains(&budget) {
            return Err(located(
                "context_budget",
                format!("context_budget must be 1000 to 1000000 bytes, not {budget}"),
            ));
        }
        let context = match (skip, input.question) {
            (true, _) | (false, None) => None,
            (false, Some(question)) => Some(gather::gather(&gather::Request {
                root: input.cwd,
                topic: question,
                extra: &paths,
                budget,
            })?),
        };
        let settings = DialogueSettings {
            pro,
            opp,
            moderator,
            max_rounds,
            focus,
            context,
        };
        serde_json::to_value(&settings).map_err(|e| e.to_string())
    }

    fn presentation(&self) -> Presentation {
        Presentation {
            seat_role: "side".into(),
            seats_from_catalog: false,
            panels: vec![SidePanel::Context, SidePanel::Commitments, SidePanel::Map],
            outcome_title: "Verdict".into(),
            follow_up: false,
            opening: "The moderator is condensing the shared context…".into(),
            round_name: "round".into(),
            rounds_of_their_own: Vec::new(),
        }
    }

    fn run<'a>(
        &'a self,
        ctx: &'a Context,
        common: &'a Common,
        settings: &'a Value,
    ) -> super::Run<'a> {
        Box::pin(async move {
            let settings: DialogueSettings = kit::stored(settings, "the dialogue's")?;
            run(ctx, common, &settings).await
        })
    }
}

/// One side at the table.
struct Speaker {
    side: Side,
    seat: Seat,
    persona: Persona,
}

async fn run(
    ctx: &Context,
    common: &Common,
    settings: &DialogueSettings,
) -> Result<Ending, EngineError> {
    let topic = common.question.trim().to_string();
    let mut notes: Vec<String> = Vec::new();
    let speakers = seat_sides(ctx, common, settings)?;
    let seats: Vec<Seat> = speakers.iter().map(|s| s.seat.clone()).collect();
    // The closing statements are round N + 1, after the N rounds of argumentation.
    if let Some(caveat) =
        kit::seat_and_start(ctx, &Dialogue, &topic, &seats, settings.max_rounds + 1).await?
    {
        notes.push(caveat);
    }

    // 1. The shared context K.
    let facts = shared_context(ctx, common, settings, &topic, &mut notes).await?;

    // 2. Opening, argumentation, closing.
    let mut guidance: Vec<String> = Vec::new();
    let mut rounds_argued = 0;
    let mut failures_in_a_row = 0;
    let mut ended: Option<ConvergenceSignal> = None;
    let schedule: Vec<(u32, Stage)> = std::iter::once((0, Stage::Opening))
        .chain((1..=settings.max_rounds).map(|r| (r, Stage::Argument)))
        .chain(std::iter::once((settings.max_rounds + 1, Stage::Closing)))
        .collect();
    for (round, stage) in schedule {
        // A surrender, or the person, ends it: straight to the verdict.
        if ended.is_some() {
            break;
        }
        ctx.emit(Event::RoundStarted { round, limit: None });
        for speaker in &speakers {
            let turn = speak(
                ctx, common, settings, &topic, &facts, &guidance, speaker, stage, round,
            )
            .await?;
            announce_violations(ctx, &turn);
            if turn.status == TurnStatus::Failed {
                failures_in_a_row += 1;
                if failures_in_a_row >= 2 || (round == 0 && speaker.side == Side::Pro) {
                    return Err(EngineError::Provider(
                        turn.note.unwrap_or_else(|| "the provider failed".into()),
                    ));
                }
            } else {
                failures_in_a_row = 0;
            }
            if verdict::surrender(&State::from_turns(&ctx.turns())).is_some() {
                ended = Some(ConvergenceSignal::ClearWinner);
                break;
            }
        }
        if stage == Stage::Argument {
            rounds_argued = round;
        }
        let computed = verdict::compute(&side_ids(), &ctx.turns(), violation_count(&ctx.turns()));
        let summary = format!(
            "PRO {:.2} · OPP {:.2} · {} open why(s) · {} violation(s)",
            computed.pro.score,
            computed.opp.score,
            computed.metrics.unaddressed_whys,
            computed.metrics.violations
        );
        let last_argument = round == settings.max_rounds && stage == Stage::Argument;
        let signal = match (&ended, stage) {
            (Some(signal), _) => *signal,
            (None, Stage::Closing) => ConvergenceSignal::MaxRounds,
            _ => ConvergenceSignal::None,
        };
        ctx.emit(Event::RoundCompleted {
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
                reason: match (&ended, stage) {
                    (Some(_), _) => format!(
                        "{} gave up its thesis ({} by {})",
                        verdict::surrender(&State::from_turns(&ctx.turns()))
                            .map(|(side, _, _)| side.seat())
                            .unwrap_or("a side"),
                        computed.decisive_move.clone().unwrap_or_default(),
                        computed.decided_by
                    ),
                    (None, Stage::Closing) => "the closing statements are in".into(),
                    _ => "the sides argue on".into(),
                },
                overruled: None,
            },
            summary,
        });
        if ended.is_some() {
            break;
        }
        if stage == Stage::Argument {
            let artifacts = json!({"pro": computed.pro.score, "opp": computed.opp.score, "metrics": computed.metrics});
            let summary = format!(
                "Round {round}: PRO {:.2} · OPP {:.2} · {} open why(s)",
                computed.pro.score, computed.opp.score, computed.metrics.unaddressed_whys
            );
            if let Some(ending) =
                kit::gate(ctx, common, "after_round", round, summary, artifacts).await?
            {
                return Ok(ending);
            }
        }
        // Between rounds of argumentation the person may guide both sides or end it.
        if stage == Stage::Argument && !last_argument {
            match ctx.checkpoint(round).await? {
                CheckpointOutcome::TimedOut => return Ok(Ending::Paused),
                CheckpointOutcome::Answered {
                    control: Control::End,
                    ..
                } => {
                    ended = Some(ConvergenceSignal::HumanEnded);
                    notes.push(format!(
                        "The person ended the dialogue after round {round}."
                    ));
                }
                CheckpointOutcome::Answered {
                    control: Control::Guide(text),
                    ..
                } => guidance.push(text),
                _ => {}
            }
        }
    }

    // 3. The verdict: computed, then the moderator's reading.
    let turns = ctx.turns();
    let violations = recorded_violations(&turns);
    let computed = verdict::compute(&side_ids(), &turns, violations.len());
    let summary = format!(
        "The dialogue is over: PRO {:.2} · OPP {:.2}; computed winner {} by {}.",
        computed.pro.score, computed.opp.score, computed.winner, computed.decided_by
    );
    let round = turns.iter().map(|t| t.round).max().unwrap_or(0);
    let artifacts = json!({"computed": computed});
    if let Some(ending) =
        kit::gate(ctx, common, "before_synthesis", round, summary, artifacts).await?
    {
        return Ok(ending);
    }
    let votes = match common.vote {
        Some(method) => {
            let thesis = |side: Side| {
                let state = State::from_turns(&turns);
                verdict::thesis_of(&state, side)
                    .and_then(|id| state.get(&id).map(|n| n.text.clone()))
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
            Some(
                kit::closing_vote(ctx, common, method, round, &seats, &candidates, &so_far)
                    .await?
                    .1,
            )
        }
        None => None,
    };
    let moderator = moderator_verdict(ctx, common, settings, &topic, &computed, &turns).await?;
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
        notes.push(
            "The moderator's verdict was unusable; the computed verdict stands alone.".into(),
        );
    }
    let participants = speakers
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
                .map(|_| ctx.seat_provider(MODERATOR).model().to_string()),
        }))
        .collect();
    let result = DialogueResult {
        debate_id: ctx.debate_id.clone(),
        topic: topic.clone(),
        focus: settings.focus.clone(),
        participants,
        context: facts,
        computed,
        moderator,
        disagreement,
        violations,
        votes,
        rounds: rounds_argued,
        notes,
        date: crate::debate::today(),
    };
    let markdown = result.to_markdown(&turns);
    Ok(Ending::Concluded(Box::new(Outcome {
        markdown,
        confidence: result.confidence(),
        data: serde_json::to_value(&result).unwrap_or_default(),
        section: Some("dialogue_verdict".into()),
        date: result.date.clone(),
    })))
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
    for (side, persona, stance) in [
        (Side::Pro, &settings.pro, "argues FOR the thesis"),
        (Side::Opp, &settings.opp, "argues AGAINST the thesis"),
    ] {
        let mut seat = Seat {
            id: side.seat().into(),
            perspective: persona.persona.clone(),
            priorities: settings.focus.iter().cloned().collect(),
            trade_offs: format!("bias: {}", persona.bias),
            stance: stance.into(),
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

/// K: the moderator condenses what was gathered into facts with sources (the raw lines stand
/// in when it cannot); announced for the Context panel.
async fn shared_context(
    ctx: &Context,
    common: &Common,
    settings: &DialogueSettings,
    topic: &str,
    notes: &mut Vec<String>,
) -> Result<Vec<Fact>, EngineError> {
    let Some(gathered) = &settings.context else {
        ctx.emit(Event::SharedContext {
            root: String::new(),
            facts: Vec::new(),
            notes: vec!["no shared context: gathering was switched off (--no-context, or `context = false` in [dialogue])".into()],
        });
        return Ok(Vec::new());
    };
    let mut context_notes = gathered.notes.clone();
    let facts = if gathered.is_empty() {
        context_notes.push(format!(
            "nothing under {} mentions {}",
            gathered.root,
            gathered.terms.join(", ")
        ));
        Vec::new()
    } else {
        let prompt = format!(
            "Thesis under debate: {topic}\n\nMaterial gathered from the codebase in {}:\n\n{}\n\
             Condense it into at most {MAX_FACTS} facts that bear on the thesis, for both sides \
             to use. Each fact is one sentence and names its source exactly as it appears above \
             (path:line, or a commit hash). Facts, not opinions.",
            gathered.root,
            gathered.to_prompt()
        );
        let turn = ctx
            .speak(kit::ask(
                TurnKey::new(0, Phase::Context, MODERATOR),
                moderator_system(settings),
                prompt,
                ContextReplies {
                    gathered: gathered.clone(),
                },
                kit::Limits::new(900, Instant::now() + common.round_timeout),
            ))
            .await?;
        let facts: Vec<Fact> = turn
            .data
            .as_ref()
            .filter(|_| turn.status == TurnStatus::Ok)
            .and_then(|d| serde_json::from_value(d.get("facts")?.clone()).ok())
            .unwrap_or_default();
        if facts.is_empty() {
            context_notes.push(
                "the moderator could not condense the material; K is the matching lines as found"
                    .into(),
            );
            raw_facts(gathered)
        } else {
            facts
        }
    };
    for note in &context_notes {
        notes.push(format!("Context: {note}"));
    }
    ctx.emit(Event::SharedContext {
        root: gathered.root.clone(),
        facts: facts.clone(),
        notes: context_notes,
    });
    Ok(facts)
}

/// The moderator's condensed K: facts, each with its source.
pub fn context_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "facts": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_FACTS,
                "items": {
                    "type": "object",
                    "properties": {
                        "fact": {"type": "string", "minLength": 1, "description": "One fact that bears on the decision, in a sentence."},
                        "source": {"type": "string", "minLength": 1, "description": "Where it comes from, exactly as given: path:line or a commit hash."}
                    },
                    "required": ["fact", "source"]
                }
            }
        },
        "required": ["facts"]
    })
}

/// The gathered lines themselves as facts, when no condensed K could be had.
fn raw_facts(gathered: &Gathered) -> Vec<Fact> {
    gathered
        .docs
        .iter()
        .chain(&gathered.code)
        .take(MAX_FACTS)
        .map(|e| Fact {
            text: e.text.clone(),
            source: format!("{}:{}", e.path, e.line),
            file: Some((e.path.clone(), e.line)),
        })
        .collect()
}

/// Checks the moderator's facts: every source must be one gathering found (a model never
/// chooses a path the workbench opens); facts with other sources are dropped.
struct ContextReplies {
    gathered: Gathered,
}

impl ReplyShape for ContextReplies {
    fn name(&self) -> &'static str {
        CONTEXT_SCHEMA
    }

    fn schema(&self) -> Value {
        context_schema()
    }
}

impl ReplyParser for ContextReplies {
    fn parse(&self, reply: &Value, transcript: &Transcript<'_>) -> Result<Reply, Unusable> {
        let items = reply
            .get("facts")
            .and_then(Value::as_array)
            .ok_or("`facts` must be an array of {fact, source}")?;
        let mut facts = Vec::new();
        let mut dropped = 0;
        for item in items.iter().take(MAX_FACTS) {
            let text = item
                .get("fact")
                .and_then(Value::as_str)
                .unwrap_or("")
                .trim();
            let source = item
                .get("source")
                .and_then(Value::as_str)
                .unwrap_or("")
                .trim();
            match (text.is_empty(), self.gathered.locate(source)) {
                (false, Some(Located::File(path, line))) => facts.push(Fact {
                    text: text.to_string(),
                    source: format!("{path}:{line}"),
                    file: Some((path, line)),
                }),
                (false, Some(Located::Commit(hash))) => facts.push(Fact {
                    text: text.to_string(),
                    source: format!("commit {hash}"),
                    file: None,
                }),
                _ => dropped += 1,
            }
        }
        if facts.is_empty() && !transcript.repair {
            return Err(
                "no fact names a source from the material; give each fact the path:line or commit hash it comes from, exactly as listed".into(),
            );
        }
        Ok(Reply {
            content: facts
                .iter()
                .map(|f| format!("- {} ({})", f.text, f.source))
                .collect::<Vec<_>>()
                .join("\n"),
            data: Some(json!({"facts": facts})),
            note: (dropped > 0)
                .then(|| format!("{dropped} fact(s) cited no gathered source and were dropped")),
            ..Reply::default()
        })
    }
}

fn moderator_system(settings: &DialogueSettings) -> String {
    format!(
        "You are MOD, the moderator of a formal persuasion dialogue: {}. Your bias: {}. You \
         weigh argument strength, not rhetoric, and account for each side's declared bias. {DATA_RULE}",
        settings.moderator.persona, settings.moderator.bias
    )
}

fn side_system(settings: &DialogueSettings, speaker: &Speaker, topic: &str) -> String {
    let mut system = format!(
        "You are {side} in a formal persuasion dialogue about a technical decision. Your persona: \
         {persona}. Your bias, declared to everyone: {bias}. You {stance}: \"{topic}\".\n",
        side = speaker.side.seat(),
        persona = speaker.persona.persona,
        bias = speaker.persona.bias,
        stance = speaker.seat.stance,
    );
    if let Some(focus) = &settings.focus {
        let _ = writeln!(
            system,
            "Both sides argue from the viewpoint of a {focus}: judge every point by what it means for that role."
        );
    }
    system.push_str(
        "\nEvery move is a speech act that answers an earlier move by its id:\n\
         - claim φ: assert something. It is answered with why, a counter-claim, or concede.\n\
         - why φ: ask for the reasons. It is answered with since (the reasons) or retract.\n\
         - since: give the reasons S for a proposition of yours that was challenged, or that you \
           stand by; each reason gets an id (P3.1, …) and can itself be challenged or conceded.\n\
         - concede: admit the other side's point. retract: withdraw your own. Both close a line.\n\
         A bare claim with no reasons must be challenged with why on the next turn.\n\
         Steel-man the other side; back claims with evidence, citing the shared context's sources; \
         concede honestly what you cannot defend and retract what you cannot support; prefer \
         undercutting a weak inference to a flat contradiction; attack arguments, never people.\n",
    );
    system.push_str(DATA_RULE);
    system
}

/// One side's turn: the legal moves for now in the schema, checked by the rules.
#[allow(clippy::too_many_arguments)]
async fn speak(
    ctx: &Context,
    common: &Common,
    settings: &DialogueSettings,
    topic: &str,
    facts: &[Fact],
    guidance: &[String],
    speaker: &Speaker,
    stage: Stage,
    round: u32,
) -> Result<Turn, EngineError> {
    let turns = ctx.turns();
    let state = State::from_turns(&turns);
    let side = speaker.side;
    let legal = rules::legal(&state, side, stage);
    let mut prompt = format!("Thesis φ: {topic}\n");
    if !facts.is_empty() {
        prompt.push_str("\nShared context K (facts both sides may cite by source):\n");
        for fact in facts {
            let _ = writeln!(prompt, "- {} [{}]", fact.text, fact.source);
        }
    }
    if turns.iter().any(|t| t.phase.is_debater()) {
        prompt.push_str("\nThe dialogue so far:\n");
        for turn in turns.iter().filter(|t| t.phase.is_debater()) {
            let _ = writeln!(
                prompt,
                "\nRound {} ({}), {}:",
                turn.round, turn.phase, turn.seat
            );
            for mv in &turn.moves {
                let _ = writeln!(prompt, "  {} — \"{}\"", rules::headline(mv), mv.text);
            }
            let quoted: String = turn.content.chars().take(QUOTED_CHARS).collect();
            if !quoted.trim().is_empty() {
                let _ = writeln!(prompt, "{}", fenced(&turn.seat, "argument", &quoted));
            }
        }
    }
    for text in guidance {
        let _ = writeln!(
            prompt,
            "\nThe person watching asks both sides to address: {text}"
        );
    }
    let open: Vec<String> = state
        .open_whys()
        .into_iter()
        .filter(|w| w.side != side)
        .map(|w| format!("{} (why {})", w.id, w.target.as_deref().unwrap_or("?")))
        .collect();
    if !open.is_empty() {
        let _ = writeln!(
            prompt,
            "\nWhys against you still open: {}.",
            open.join(", ")
        );
    }
    let owed: Vec<String> = state
        .obligations(side)
        .iter()
        .map(|n| n.id.clone())
        .collect();
    if stage == Stage::Argument && !owed.is_empty() {
        let _ = writeln!(
            prompt,
            "You must challenge these bare claims with `why` (or concede them) on this turn: {}.",
            owed.join(", ")
        );
    }
    let task = match (stage, side) {
        (Stage::Opening, Side::Pro) => {
            "This is the opening. State the thesis φ with one `claim` and say why it matters.".to_string()
        }
        (Stage::Opening, Side::Opp) => {
            "This is the opening. Answer the thesis P1 with one move: `claim` its negation ¬φ, or ask `why`.".to_string()
        }
        (Stage::Argument, _) => format!(
            "Round {round} of {} of argumentation. Make 1 to {} moves, each answering an open move by its id.",
            settings.max_rounds,
            rules::MAX_MOVES
        ),
        (Stage::Closing, _) => "This is the closing round. Give your final statement; record any concessions and retractions as moves (or make none).".to_string(),
    };
    let _ = writeln!(
        prompt,
        "\n{task}\nLegal moves now: {}.",
        rules::summary(&legal)
    );
    ctx.speak(
        kit::ask(
            TurnKey::new(round, stage.phase(), side.seat()),
            side_system(settings, speaker, topic),
            prompt,
            DialogueReplies::new(&state, side, stage),
            kit::Limits::new(900, Instant::now() + common.round_timeout),
        )
        .by(speaker.seat.perspective.clone()),
    )
    .await
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

fn turn_violations(turn: &Turn) -> Vec<rules::Violation> {
    if turn.status == TurnStatus::Fallback {
        return vec![rules::Violation {
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

fn recorded_violations(turns: &[Turn]) -> Vec<RecordedViolation> {
    turns
        .iter()
        .filter(|t| t.phase.is_debater())
        .flat_map(|t| {
            turn_violations(t)
                .into_iter()
                .map(|violation| RecordedViolation {
                    round: t.round,
                    side: t.seat.clone(),
                    violation,
                })
        })
        .collect()
}

fn violation_count(turns: &[Turn]) -> usize {
    recorded_violations(turns).len()
}

/// The moderator reads the computed verdict and writes its own; `None` when unusable.
async fn moderator_verdict(
    ctx: &Context,
    common: &Common,
    settings: &DialogueSettings,
    topic: &str,
    computed: &verdict::Computed,
    turns: &[Turn],
) -> Result<Option<ModeratorVerdict>, EngineError> {
    let ids: Vec<String> = computed.arguments.iter().map(|a| a.id.clone()).collect();
    let mut surviving: Vec<String> = computed.survived.iter().map(|a| a.id.clone()).collect();
    if surviving.is_empty() {
        surviving = ids.clone();
    }
    let mut prompt = format!("Thesis φ: {topic}\n\nThe dialogue:\n");
    for turn in turns.iter().filter(|t| t.phase.is_debater()) {
        for mv in &turn.moves {
            let _ = writeln!(
                prompt,
                "{} {} — \"{}\"",
                turn.seat,
                rules::headline(mv),
                mv.text
            );
        }
    }
    prompt.push_str("\nArguments with their gradual scores:\n");
    for a in &computed.arguments {
        let _ = writeln!(
            prompt,
            "- {} ({}, {:.2}{}): {}",
            a.id,
            a.seat,
            a.score,
            if a.retracted { ", retracted" } else { "" },
            a.text
        );
    }
    let _ = write!(
        prompt,
        "\nComputed: PRO {:.2} ({}), OPP {:.2} ({}); winner {} by {}. Unaddressed whys: {}. \
         Concessions: {}.\n\nRender your verdict: the winner (you may disagree with the scores, \
         and must then say why), a rationale citing argument ids, the strongest surviving \
         arguments, the valid points of the losing side, a consensus solution that takes the \
         best of both, and the conditions under which to revisit the decision.",
        computed.pro.score,
        computed.pro.basis,
        computed.opp.score,
        computed.opp.basis,
        computed.winner,
        computed.decided_by,
        computed.metrics.unaddressed_whys,
        computed.metrics.concessions
    );
    let round = turns.iter().map(|t| t.round).max().unwrap_or(0);
    let turn = ctx
        .speak(kit::ask(
            TurnKey::new(round, Phase::Verdict, MODERATOR),
            moderator_system(settings),
            prompt,
            VerdictReplies { ids, surviving },
            kit::Limits::new(1200, Instant::now() + common.round_timeout),
        ))
        .await?;
    Ok(turn
        .data
        .as_ref()
        .filter(|_| turn.status == TurnStatus::Ok)
        .and_then(|d| serde_json::from_value(d.clone()).ok()))
}
