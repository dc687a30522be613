//! A debate to and from the arena directory of design note 003, in one place so the two
//! stay each other's inverse: `export` writes any stored debate in the layout (keeping what
//! moot needs under `moot` keys), `import` reads a directory (moot's or hand-written) back into
//! the journal.

use super::super::Failure;
use crate::debate::{Confidence, MODERATOR, Turn};
use crate::report::DebateDocument;
use crate::sanitize;
use crate::store::Store;
use std::path::Path;

/// Turns with their places in the journal.
type Placed<'a> = Vec<(usize, &'a Turn)>;

/// A stored debate of any protocol in the arena layout of design note 003: every seat an
/// agent (its persona from the seat), every turn a seat spoke an argument numbered in journal
/// order (moves that answer earlier moves become `turn:N` references), the outcome the summary.
/// An arena debate keeps its own personas, scores and summary.
pub fn export(document: &DebateDocument) -> crate::arena::ArenaDebate {
    use crate::arena::{ArenaDebate, Scores};
    if let Some(kept) = as_imported(document) {
        return kept;
    }
    let debate = &document.debate;
    let own = document.outcome.get("arena_result");
    let personas = exported_personas(debate, own);
    let placed = Placement::of(document);
    let turns = exported_turns(document, &personas, &placed);
    let scores = own.and_then(|r| {
        let info = serde_json::from_value(r.get("scoring")?.clone()).ok()?;
        let scores = serde_json::from_value(r.get("scores")?.clone()).ok()?;
        Some(Scores {
            debate_id: debate.id.clone(),
            scoring_info: info,
            scores,
        })
    });
    ArenaDebate {
        manifest: exported_manifest(document, &personas, &placed, scores.as_ref()),
        protocol_md: format!(
            "# Protocol\n\nExported by moot from a `{}` debate. Each seat is an agent; every turn a seat spoke is one argument, numbered in the order the journal holds them; `metadata.moot` keeps the round, phase, status and speech acts.\n",
            debate.protocol
        ),
        personas: personas.into_iter().map(|(_, p)| p).collect(),
        turns,
        scores,
        summary: document
            .synthesis
            .as_ref()
            .map(|s| sanitize::clean(&s.markdown)),
    }
}

/// A debate's turns as the layout needs them: the seats' turns (each an argument) with their
/// places in the journal, so an import restores the interleaving, and the moderator's, which
/// have no file of their own.
struct Placement<'a> {
    spoken: Vec<&'a Turn>,
    positions: Vec<usize>,
    moderator: Placed<'a>,
}

impl<'a> Placement<'a> {
    fn of(document: &'a DebateDocument) -> Self {
        let seats = &document.debate.seats;
        let (spoken, moderator): (Placed, Placed) = document
            .turns
            .iter()
            .enumerate()
            .partition(|(_, t)| t.seat != MODERATOR && seats.iter().any(|s| s.id == t.seat));
        let (positions, spoken) = spoken.into_iter().unzip();
        Placement {
            spoken,
            positions,
            moderator,
        }
    }
}

/// Each seat's persona: an arena debate's own, else one made from the seat (an agent id unique
/// in the debate, the seat kept whole under `moot` so an import restores it exactly).
fn exported_personas(
    debate: &crate::debate::Debate,
    own: Option<&serde_json::Value>,
) -> Vec<(String, crate::arena::Persona)> {
    use crate::arena::{self, Persona};
    use serde_json::{Map, json};
    if let Some(personas) = own.and_then(|r| r.get("personas")) {
        return debate
            .seats
            .iter()
            .zip(serde_json::from_value::<Vec<Persona>>(personas.clone()).unwrap_or_default())
            .map(|(seat, persona)| (seat.id.clone(), persona))
            .collect();
    }
    let mut used: Vec<String> = Vec::new();
    debate
        .seats
        .iter()
        .map(|seat| {
            let base = arena::agent_id(&seat.perspective);
            let mut id = base.clone();
            let mut n = 2;
            while used.contains(&id) {
                id = format!("{base}_{n}");
                n += 1;
            }
            used.push(id.clone());
            let persona = Persona {
                agent_id: id,
                debate_id: debate.id.clone(),
                role_name: seat.perspective.clone(),
                stance_summary: if seat.stance.is_empty() {
                    seat.priorities.join(", ")
                } else {
                    seat.stance.clone()
                },
                instructions: seat.trade_offs.clone(),
                background_context: String::new(),
                extra: Map::from_iter([("moot".to_string(), json!({"seat": seat}))]),
            };
            (seat.id.clone(), persona)
        })
        .collect()
}

/// Every turn a seat spoke as an argument numbered in journal order: its references (what the
/// reply said it answers and rests on, then what its moves answer, as `turn:N`), its metadata
/// with what moot needs under `moot`, and the time the journal took it.
fn exported_turns(
    document: &DebateDocument,
    personas: &[(String, crate::arena::Persona)],
    placed: &Placement,
) -> Vec<crate::arena::Argument> {
    use crate::arena;
    use serde_json::{Map, json};
    let agent = |seat: &str| {
        personas
            .iter()
            .find(|(id, _)| id == seat)
            .map_or_else(|| arena::agent_id(seat), |(_, p)| p.agent_id.clone())
    };
    let turn_of = |move_id: &str| {
        placed
            .spoken
            .iter()
            .position(|t| t.moves.iter().any(|m| m.id == move_id))
            .map(|i| i + 1)
    };
    let debate = &document.debate;
    let timestamp = debate
        .finished_at
        .clone()
        .unwrap_or_else(|| debate.updated_at.clone());
    placed
        .spoken
        .iter()
        .enumerate()
        .map(|(index, turn)| {
            let number = index as u32 + 1;
            let position = placed.positions[index];
            let data = turn.data.clone().unwrap_or(serde_json::Value::Null);
            let mut references = arena::said_references(&data);
            for answered in turn.moves.iter().flat_map(|mv| &mv.answers) {
                if let Some(n) = turn_of(answered).filter(|n| *n as u32 != number) {
                    let reference = format!("turn:{n}");
                    if !references.contains(&reference) {
                        references.push(reference);
                    }
                }
            }
            let mut metadata = Map::new();
            if let Some(confidence) = turn.confidence {
                metadata.insert("confidence".into(), json!(confidence));
            }
            if let Some(tone) = arena::said_tone(&data) {
                metadata.insert("tone".into(), json!(tone));
            }
            metadata.insert(
                "moot".into(),
                json!({
                    "position": position,
                    "round": turn.round, "phase": turn.phase, "seat": turn.seat, "status": turn.status,
                    "moves": turn.moves, "confidence": turn.confidence, "note": turn.note, "data": turn.data,
                    "provider": turn.provider, "model": turn.model, "tokens_in": turn.tokens_in,
                    "tokens_out": turn.tokens_out, "tokens_estimated": turn.tokens_estimated,
                    "latency_ms": turn.latency_ms,
                }),
            );
            arena::Argument {
                turn_number: number,
                agent_id: agent(&turn.seat),
                // When the journal took the turn, each its own (seed review 002/003 #8).
                timestamp_utc: document
                    .turn_times
                    .get(position)
                    .cloned()
                    .unwrap_or_else(|| timestamp.clone()),
                argument_text: sanitize::clean(&turn.content),
                references,
                metadata,
                extra: Map::new(),
            }
        })
        .collect()
}

/// The manifest: the topic, who took part (and whether they have joined), the status, the
/// moderator and scoring, and under `moot` what an import needs to restore the debate (its
/// status, synthesis, who started it, the moderator's turns in their places).
fn exported_manifest(
    document: &DebateDocument,
    personas: &[(String, crate::arena::Persona)],
    placed: &Placement,
    scores: Option<&crate::arena::Scores>,
) -> crate::arena::Manifest {
    use crate::arena::{ArenaStatus, Manifest, Participant};
    use serde_json::{Map, Value, json};
    let debate = &document.debate;
    let mut extra = Map::new();
    extra.insert("exported_by".into(), Value::from("moot"));
    extra.insert(
        "moot".into(),
        json!({
            "status": debate.status,
            "confidence": debate.confidence,
            "finished_at": debate.finished_at,
            // Who started it, so an import says it again (B4).
            "initiated_by": debate.config.get("initiated_by"),
            "synthesis": document.synthesis.as_ref().map(|s| json!({"confidence": s.confidence, "data": s.data})),
            "section": document.outcome.keys().next(),
            // The moderator's turns have no file of their own in the note's layout.
            "moderator_turns": placed
                .moderator
                .iter()
                .map(|(position, turn)| json!({"position": position, "turn": turn, "at": document.turn_times.get(*position)}))
                .collect::<Vec<_>>(),
        }),
    );
    Manifest {
        debate_id: debate.id.clone(),
        topic: sanitize::clean(&debate.question),
        proposal_ref: None,
        participants: personas
            .iter()
            .enumerate()
            .map(|(index, (seat, p))| {
                let kind = seat_kind(document, index, seat, &p.agent_id);
                // A seat moot plays is there from the start; a person or an outside agent
                // has joined once it spoke (seed review 002/003 #8).
                let joined = kind == "model"
                    || placed
                        .spoken
                        .iter()
                        .any(|t| &t.seat == seat && t.status.spoke());
                Participant {
                    agent_id: p.agent_id.clone(),
                    role_name: p.role_name.clone(),
                    stance: p.stance_summary.clone(),
                    kind,
                    joined,
                }
            })
            .collect(),
        protocol: debate.protocol.clone(),
        status: if debate.status.is_finished_for_good() {
            ArenaStatus::Closed
        } else if placed.spoken.is_empty() {
            ArenaStatus::Open
        } else {
            ArenaStatus::InProgress
        },
        created_utc: debate.created_at.clone(),
        updated_utc: debate.updated_at.clone(),
        moderator_id: moderator_id(document, personas),
        scoring_info: scores.map(|s| s.scoring_info.clone()),
        turn_requested: None,
        extra,
    }
}

/// Who played seat `seat` (the `index`th): as the debate was set up (an arena's players), as
/// an imported directory's manifest said, or as its turns were journaled (a person's and an
/// outside agent's under their own provider); else moot's model.
fn seat_kind(document: &DebateDocument, index: usize, seat: &str, agent_id: &str) -> String {
    use crate::debate::{OUTSIDE, PERSON};
    let config = &document.debate.config;
    let set_up = config
        .get("protocol_settings")
        .and_then(|p| p.get("players"))
        .and_then(|players| players.get(index))
        .and_then(|kind| kind.as_str());
    let imported = config
        .get("participants")
        .and_then(|p| p.as_array())
        .into_iter()
        .flatten()
        .find(|p| p.get("agent_id").and_then(|a| a.as_str()) == Some(agent_id))
        .and_then(|p| p.get("kind"))
        .and_then(|kind| kind.as_str());
    let journaled = document
        .turns
        .iter()
        .filter(|t| t.seat == seat)
        .find_map(|t| match t.provider.as_str() {
            PERSON => Some("human"),
            OUTSIDE => Some("outside"),
            _ => None,
        });
    set_up
        .or(imported)
        .or(journaled)
        .unwrap_or("model")
        .to_string()
}

/// What `import` kept of a hand-written directory, read back.
#[derive(serde::Deserialize)]
struct Kept {
    manifest: crate::arena::Manifest,
    personas: Vec<crate::arena::Persona>,
    scores: Option<crate::arena::Scores>,
    protocol_md: String,
    agents: Vec<KeptAgent>,
}

#[derive(serde::Deserialize)]
struct KeptAgent {
    agent_id: String,
    seat: String,
}

/// A hand-written directory that was imported, written back as it came: its manifest,
/// personas, scores and protocol page as read, each turn with its own number, agent,
/// timestamp, references, metadata and unknown fields; the summary as the journal holds it.
fn as_imported(document: &DebateDocument) -> Option<crate::arena::ArenaDebate> {
    use serde_json::{Map, Value};
    let kept: Kept = serde_json::from_value(document.debate.config.get("arena")?.clone()).ok()?;
    let agent_of = |seat: &str| {
        kept.agents
            .iter()
            .find(|a| a.seat == seat)
            .map_or_else(|| seat.to_string(), |a| a.agent_id.clone())
    };
    let turns = document
        .turns
        .iter()
        .filter(|t| t.seat != MODERATOR)
        .enumerate()
        .map(|(index, turn)| {
            let data = turn.data.clone().unwrap_or(Value::Null);
            let object = |key: &str| match data.get(key) {
                Some(Value::Object(map)) => map.clone(),
                _ => Map::new(),
            };
            crate::arena::Argument {
                turn_number: data
                    .get("turn_number")
                    .and_then(Value::as_u64)
                    .map_or(index as u32 + 1, |n| n as u32),
                agent_id: agent_of(&turn.seat),
                timestamp_utc: data
                    .get("timestamp_utc")
                    .and_then(Value::as_str)
                    .unwrap_or(&document.debate.created_at)
                    .to_string(),
                argument_text: sanitize::clean(&turn.content),
                references: data
                    .get("references")
                    .and_then(|r| serde_json::from_value(r.clone()).ok())
                    .unwrap_or_default(),
                metadata: object("metadata"),
                extra: object("extra"),
            }
        })
        .collect();
    Some(crate::arena::ArenaDebate {
        manifest: kept.manifest,
        protocol_md: kept.protocol_md,
        personas: kept.personas,
        turns,
        scores: kept.scores,
        summary: document
            .synthesis
            .as_ref()
            .map(|s| sanitize::clean(&s.markdown)),
    })
}

/// `moot import DIR`: an arena directory (written by moot or by hand) into the journal, so the
/// workbench can replay it and search finds it. What moot exported comes back as it was; a
/// hand-written one gets a seat per persona and a round per turn. Nothing is written unless
/// all of it reads.
pub fn import(store: &Store, dir: &Path) -> Result<String, Failure> {
    use crate::arena;
    use crate::debate::{Debate, DebateStatus, Event};
    let (read, passed_over) =
        arena::read_noting(dir).map_err(|e| Failure::usage(format!("cannot import: {e}")))?;
    for skipped in &passed_over {
        eprintln!("moot: import: {skipped}");
    }
    let manifest = &read.manifest;
    let id = new_id(store, dir, manifest)?;
    let moot = manifest.extra.get("moot");
    let mut cast = Cast::of(&read);
    let (turns, times) = imported_turns(dir, &read, &mut cast)?;
    let status = moot
        .and_then(|m| serde_json::from_value(m.get("status")?.clone()).ok())
        .unwrap_or(if manifest.status == arena::ArenaStatus::Closed {
            DebateStatus::Completed
        } else {
            DebateStatus::Cancelled
        });
    let registry = crate::protocol::builtin();
    let protocol = if registry.find(&manifest.protocol).is_some() {
        manifest.protocol.clone()
    } else {
        "arena".to_string()
    };
    let mut config = imported_config(dir, &read, &cast.agents, moot.is_some());
    if let Some(by) = moot
        .and_then(|m| m.get("initiated_by"))
        .filter(|by| by.is_string())
    {
        config["initiated_by"] = by.clone();
    }
    let debate = Debate {
        id: id.clone(),
        question: manifest.topic.clone(),
        protocol: protocol.clone(),
        status,
        config,
        seats: cast.seats.clone(),
        created_at: manifest.created_utc.clone(),
        updated_at: manifest.updated_utc.clone(),
        finished_at: None,
        confidence: None,
        error: None,
        stage: None,
    };
    store.create_debate(&debate).map_err(runtime)?;
    store.set_seats(&id, &cast.seats).map_err(runtime)?;
    let mut events = opening_events(&debate, &registry, &turns);
    record_turns(store, &id, &turns, &times, &mut events)?;
    if let Some(summary) = &read.summary {
        let imported = Imported {
            id: &id,
            dir,
            read: &read,
            protocol: &protocol,
            turns: &turns,
            agents: &cast.agents,
        };
        events.push(save_summary(store, &imported, summary)?);
    }
    events.push(Event::DebateCompleted {
        id: id.clone(),
        status,
    });
    for event in &events {
        store.record_event(&id, event).map_err(runtime)?;
    }
    store
        .set_status(
            &id,
            status,
            (status == DebateStatus::Cancelled).then_some(
                "imported from an arena directory before it closed; it cannot be resumed",
            ),
        )
        .map_err(runtime)?;
    Ok(id)
}

/// A journal error met while importing, said as it is.
fn runtime(e: crate::store::StoreError) -> Failure {
    Failure::runtime(e.to_string())
}

/// The manifest's debate id, if it is a usable id the journal does not hold yet.
fn new_id(store: &Store, dir: &Path, manifest: &crate::arena::Manifest) -> Result<String, Failure> {
    let id = manifest.debate_id.trim().to_string();
    if !crate::arena::is_safe_name(&id) {
        return Err(Failure::usage(format!(
            "{}: debate_id {id:?} is not a usable id (letters, digits, - _ .)",
            dir.join("manifest.json").display()
        )));
    }
    if store.debate(&id).is_ok() {
        return Err(Failure::usage(format!(
            "{id} is already in the journal; `moot show {id}` shows it"
        )));
    }
    Ok(id)
}

/// The seats an imported debate is played by, and which agent took each.
struct Cast {
    seats: Vec<crate::debate::Seat>,
    /// (agent id, seat id).
    agents: Vec<(String, String)>,
}

impl Cast {
    /// A seat per persona, in the manifest's order of participants (persona files come in
    /// name order): the seat moot kept, else one made from the persona.
    fn of(read: &crate::arena::ArenaDebate) -> Self {
        use crate::debate::Seat;
        let manifest = &read.manifest;
        let mut cast = Cast {
            seats: Vec::new(),
            agents: Vec::new(),
        };
        let mut personas: Vec<&crate::arena::Persona> = read.personas.iter().collect();
        personas.sort_by_key(|p| {
            manifest
                .participants
                .iter()
                .position(|q| q.agent_id == p.agent_id)
                .unwrap_or(usize::MAX)
        });
        for persona in personas {
            let kept: Option<Seat> = persona
                .extra
                .get("moot")
                .and_then(|m| serde_json::from_value(m.get("seat")?.clone()).ok());
            let seat = kept.unwrap_or_else(|| Seat {
                id: seat_letter(cast.seats.len()),
                perspective: persona.role_name.clone(),
                priorities: Vec::new(),
                trade_offs: persona.instructions.clone(),
                stance: persona.stance_summary.clone(),
                provider: None,
                model: None,
            });
            cast.agents
                .push((persona.agent_id.clone(), seat.id.clone()));
            cast.seats.push(seat);
        }
        cast
    }

    /// The seat `agent` plays; an agent with no persona file still gets one, with the role and
    /// stance the manifest gives it.
    fn seat_for(&mut self, manifest: &crate::arena::Manifest, agent: &str) -> String {
        if let Some((_, seat)) = self.agents.iter().find(|(a, _)| a == agent) {
            return seat.clone();
        }
        let listed = manifest.participants.iter().find(|p| p.agent_id == agent);
        let seat = crate::debate::Seat {
            id: seat_letter(self.seats.len()),
            perspective: listed.map_or_else(|| agent.to_string(), |p| p.role_name.clone()),
            priorities: Vec::new(),
            trade_offs: String::new(),
            stance: listed.map(|p| p.stance.clone()).unwrap_or_default(),
            provider: None,
            model: None,
        };
        self.agents.push((agent.to_string(), seat.id.clone()));
        self.seats.push(seat.clone());
        seat.id
    }
}

/// Every turn of the directory in journal order, each with the time its file says it was
/// spoken: the seats' arguments, and the moderator's turns moot kept in the manifest, back in
/// their places. A turn that repeats a seat's round and phase is refused, naming it.
fn imported_turns(
    dir: &Path,
    read: &crate::arena::ArenaDebate,
    cast: &mut Cast,
) -> Result<(Vec<Turn>, Vec<Option<String>>), Failure> {
    let mut ordered: Vec<(usize, (Turn, Option<String>))> = Vec::new();
    for argument in &read.turns {
        let seat = cast.seat_for(&read.manifest, &argument.agent_id);
        let (position, turn) = imported_turn(argument, seat);
        if ordered.iter().any(|(_, (t, _))| {
            t.round == turn.round && t.phase == turn.phase && t.seat == turn.seat
        }) {
            return Err(Failure::usage(format!(
                "{}: turn {} of {} repeats round {} ({}) for the same seat",
                dir.join("transcript").display(),
                argument.turn_number,
                argument.agent_id,
                turn.round,
                turn.phase
            )));
        }
        let at = Some(argument.timestamp_utc.clone()).filter(|t| !t.trim().is_empty());
        ordered.push((position, (turn, at)));
    }
    ordered.extend(kept_moderator_turns(read.manifest.extra.get("moot")));
    // A stable sort: hand-written turns (no position) keep their file order, after the rest.
    ordered.sort_by_key(|(position, _)| *position);
    Ok(ordered.into_iter().map(|(_, timed)| timed).unzip())
}

/// One argument as a journal turn, with its place in the journal (`usize::MAX`, after the
/// rest, for a hand-written one): what moot exported keeps its own fields under
/// `metadata.moot`; a hand-written turn keeps what its file said.
fn imported_turn(argument: &crate::arena::Argument, seat: String) -> (usize, Turn) {
    use crate::debate::{Phase, TurnStatus};
    use serde_json::Value;
    let kept = argument.metadata.get("moot");
    let field = |name: &str| kept.and_then(|m| m.get(name)).filter(|v| !v.is_null());
    let text = |name: &str, or: &str| {
        field(name)
            .and_then(Value::as_str)
            .unwrap_or(or)
            .to_string()
    };
    let count = |name: &str| field(name).and_then(Value::as_u64).unwrap_or(0);
    let position = field("position")
        .and_then(Value::as_u64)
        .map_or(usize::MAX, |p| p as usize);
    let turn = Turn {
        round: field("round")
            .and_then(Value::as_u64)
            .map_or(argument.turn_number, |r| r as u32),
        phase: field("phase")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or(Phase::Argument),
        seat: field("seat")
            .and_then(Value::as_str)
            .map_or(seat, str::to_string),
        content: argument.argument_text.clone(),
        moves: field("moves")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default(),
        confidence: field("confidence")
            .and_then(Value::as_f64)
            .or_else(|| argument.metadata.get("confidence").and_then(Value::as_f64)),
        tokens_in: count("tokens_in"),
        tokens_out: count("tokens_out"),
        tokens_estimated: field("tokens_estimated")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        latency_ms: count("latency_ms"),
        provider: text("provider", "arena"),
        model: text("model", "imported"),
        status: field("status")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or(TurnStatus::Ok),
        data: if kept.is_some() {
            field("data").cloned()
        } else {
            Some(said_by_hand(argument))
        },
        note: field("note").and_then(Value::as_str).map(str::to_string),
    };
    (position, turn)
}

/// What a hand-written argument said beside its text, kept as the turn's data so an export
/// writes it back as it came: its references, metadata, unknown fields, number and time.
fn said_by_hand(argument: &crate::arena::Argument) -> serde_json::Value {
    use serde_json::Value;
    let mut data = serde_json::Map::new();
    data.insert(
        "references".into(),
        Value::from(argument.references.clone()),
    );
    let mut metadata = argument.metadata.clone();
    metadata.remove("moot");
    if !metadata.is_empty() {
        data.insert("metadata".into(), Value::Object(metadata));
    }
    if !argument.extra.is_empty() {
        data.insert("extra".into(), Value::Object(argument.extra.clone()));
    }
    data.insert("turn_number".into(), Value::from(argument.turn_number));
    data.insert(
        "timestamp_utc".into(),
        Value::from(argument.timestamp_utc.clone()),
    );
    Value::Object(data)
}

/// The moderator's turns moot kept in an exported manifest, with their places and times.
fn kept_moderator_turns(moot: Option<&serde_json::Value>) -> Vec<(usize, (Turn, Option<String>))> {
    use serde_json::Value;
    moot.and_then(|m| m.get("moderator_turns"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|item| {
            let position = item.get("position")?.as_u64()? as usize;
            let turn: Turn = serde_json::from_value(item.get("turn")?.clone()).ok()?;
            let at = item.get("at").and_then(Value::as_str).map(str::to_string);
            (turn.seat == MODERATOR).then_some((position, (turn, at)))
        })
        .collect()
}

/// The events an imported debate opens with: created, then started with its seats.
fn opening_events(
    debate: &crate::debate::Debate,
    registry: &crate::protocol::Registry,
    turns: &[Turn],
) -> Vec<crate::debate::Event> {
    use crate::debate::{Event, Presentation};
    let presentation: Presentation = registry
        .find(&debate.protocol)
        .map(|p| p.presentation())
        .unwrap_or_default();
    vec![
        Event::DebateCreated {
            id: debate.id.clone(),
            question: debate.question.clone(),
            protocol: debate.protocol.clone(),
            resumed: false,
            presentation: presentation.clone(),
        },
        Event::DebateStarted {
            id: debate.id.clone(),
            question: debate.question.clone(),
            protocol: debate.protocol.clone(),
            seats: debate.seats.clone(),
            max_rounds: turns.iter().map(|t| t.round).max().unwrap_or(0),
            provider: "arena".into(),
            model: "imported".into(),
            caveat: None,
            presentation,
        },
    ]
}

/// Journals each turn (at the time its file gave, where it gave one) and its events: a round
/// started where a seat's round changes, then the turn completed.
fn record_turns(
    store: &Store,
    id: &str,
    turns: &[Turn],
    times: &[Option<String>],
    events: &mut Vec<crate::debate::Event>,
) -> Result<(), Failure> {
    use crate::debate::Event;
    let mut round = None;
    for (turn, at) in turns.iter().zip(times) {
        match at {
            Some(at) => store.record_turn_at(id, turn, at),
            None => store.record_turn(id, turn),
        }
        .map_err(runtime)?;
        if round != Some(turn.round) && turn.seat != MODERATOR {
            round = Some(turn.round);
            events.push(Event::RoundStarted {
                round: turn.round,
                limit: None,
            });
        }
        events.push(turn.completed_event(false));
    }
    Ok(())
}

/// What an import has read, for the steps after the turns.
struct Imported<'a> {
    id: &'a str,
    dir: &'a Path,
    read: &'a crate::arena::ArenaDebate,
    protocol: &'a str,
    turns: &'a [Turn],
    agents: &'a [(String, String)],
}

/// Saves the directory's summary as the debate's synthesis and says so in an event: a
/// directory moot wrote keeps its result; one written by hand gets its outcome and confidence
/// computed from its scores (003-N6), never a level assumed.
fn save_summary(
    store: &Store,
    imported: &Imported,
    summary: &str,
) -> Result<crate::debate::Event, Failure> {
    use serde_json::Value;
    let moot = imported.read.manifest.extra.get("moot");
    let kept = moot.and_then(|m| m.get("synthesis"));
    let kept_data = kept.and_then(|s| s.get("data")).filter(|d| !d.is_null());
    let computed = (kept_data.is_none() && imported.protocol == "arena")
        .then(|| computed_result(imported, summary));
    let confidence: Confidence = match &computed {
        Some((_, confidence)) => *confidence,
        None => kept
            .and_then(|s| serde_json::from_value(s.get("confidence")?.clone()).ok())
            .unwrap_or(Confidence::Medium),
    };
    let section = moot
        .and_then(|m| m.get("section"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| computed.as_ref().map(|_| "arena_result".to_string()));
    let data = match computed {
        Some((data, _)) => data,
        None => kept_data.cloned().unwrap_or(Value::Null),
    };
    store
        .save_synthesis(
            imported.id,
            &crate::store::StoredSynthesis {
                markdown: summary.to_string(),
                data,
                confidence,
                path: None,
                follow_up_path: None,
                section,
            },
        )
        .map_err(runtime)?;
    Ok(crate::debate::Event::Synthesis {
        markdown: summary.to_string(),
        confidence,
        path: None,
        draft: false,
    })
}

/// A hand-written arena directory's result, computed from its scores as the arena computes
/// its own, stored with the arena's result version.
fn computed_result(imported: &Imported, summary: &str) -> (serde_json::Value, Confidence) {
    use crate::protocol::TypedProtocol as _;
    let spoken: Vec<(&Turn, &str)> = imported
        .turns
        .iter()
        .filter(|turn| turn.seat != MODERATOR)
        .filter_map(|turn| {
            let agent = imported
                .agents
                .iter()
                .find(|(_, seat)| *seat == turn.seat)?;
            Some((turn, agent.0.as_str()))
        })
        .collect();
    let result = crate::protocol::arena::ArenaResult::imported(
        imported.id,
        imported.read,
        &spoken,
        summary,
        &imported.dir.display().to_string(),
    );
    let mut data = serde_json::to_value(&result).unwrap_or_default();
    if let Some(map) = data.as_object_mut() {
        map.insert(
            crate::protocol::RESULT_VERSION_KEY.into(),
            crate::protocol::arena::Arena::RESULT_VERSION.into(),
        );
    }
    (data, result.confidence())
}

/// What an imported debate keeps of its directory beside the journal's own: where it came
/// from and, for a hand-written one, the manifest, personas, scores and protocol page as
/// read (unknown fields included) and which seat each agent took, so an export writes them
/// back as they came (README: "unknown fields kept"; seed review 002/003 #5).
fn imported_config(
    dir: &Path,
    read: &crate::arena::ArenaDebate,
    agents: &[(String, String)],
    exported_by_moot: bool,
) -> serde_json::Value {
    use serde_json::json;
    // Who played each seat, for an export to say again.
    let mut config = json!({
        "imported_from": dir.display().to_string(),
        "participants": read.manifest.participants,
    });
    if !exported_by_moot {
        config["arena"] = json!({
            "manifest": read.manifest,
            "personas": read.personas,
            "scores": read.scores,
            "protocol_md": read.protocol_md,
            "agents": agents.iter().map(|(agent, seat)| json!({"agent_id": agent, "seat": seat})).collect::<Vec<_>>(),
        });
    }
    config
}

fn seat_letter(index: usize) -> String {
    let letter = char::from(b'A' + (index % 26) as u8);
    if index < 26 {
        letter.to_string()
    } else {
        format!("{letter}{}", index / 26)
    }
}

/// Who moderated, as the manifest names it: `system`, the agent id of the participant that
/// moderated (`--moderator seat:ROLE`), or `moderator` (moot's model, and every other protocol).
fn moderator_id(document: &DebateDocument, personas: &[(String, crate::arena::Persona)]) -> String {
    let stored = document.debate.config["protocol_settings"]["moderator"]
        .as_str()
        .unwrap_or("model");
    match stored.strip_prefix("seat:") {
        Some(role) => personas
            .iter()
            .find(|(_, p)| p.role_name.eq_ignore_ascii_case(role))
            .map_or_else(|| "moderator".into(), |(_, p)| p.agent_id.clone()),
        None if stored == "system" => "system".into(),
        None => "moderator".into(),
    }
}
