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
    use crate::arena::{self, ArenaDebate, ArenaStatus, Manifest, Participant, Persona};
    use serde_json::{Map, Value, json};
    if let Some(kept) = as_imported(document) {
        return kept;
    }
    let debate = &document.debate;
    let own = document.outcome.get("arena_result");
    let mut used: Vec<String> = Vec::new();
    let mut positions: Vec<usize> = Vec::new();
    let personas: Vec<(String, Persona)> = match own.and_then(|r| r.get("personas")) {
        Some(personas) => debate
            .seats
            .iter()
            .zip(serde_json::from_value::<Vec<Persona>>(personas.clone()).unwrap_or_default())
            .map(|(seat, persona)| (seat.id.clone(), persona))
            .collect(),
        None => debate
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
                    // The seat as moot keeps it, so an import restores it exactly.
                    extra: Map::from_iter([("moot".to_string(), json!({"seat": seat}))]),
                };
                (seat.id.clone(), persona)
            })
            .collect(),
    };
    let agent = |seat: &str| {
        personas
            .iter()
            .find(|(id, _)| id == seat)
            .map_or_else(|| arena::agent_id(seat), |(_, p)| p.agent_id.clone())
    };
    // Each turn with its place in the journal, so an import restores the interleaving.
    let (spoken, moderator): (Placed, Placed) = document
        .turns
        .iter()
        .enumerate()
        .partition(|(_, t)| t.seat != MODERATOR && debate.seats.iter().any(|s| s.id == t.seat));
    let spoken: Vec<&Turn> = spoken
        .into_iter()
        .map(|(position, turn)| {
            positions.push(position);
            turn
        })
        .collect();
    let turn_of = |move_id: &str| {
        spoken
            .iter()
            .position(|t| t.moves.iter().any(|m| m.id == move_id))
            .map(|i| i + 1)
    };
    let timestamp = debate
        .finished_at
        .clone()
        .unwrap_or_else(|| debate.updated_at.clone());
    let turns = spoken
        .iter()
        .enumerate()
        .map(|(index, turn)| {
            let number = index as u32 + 1;
            // What the reply itself said it answers and rests on (as the live files list
            // it), then what its moves answer.
            let data = turn.data.clone().unwrap_or(serde_json::Value::Null);
            let mut references = arena::said_references(&data);
            for mv in &turn.moves {
                for answered in &mv.answers {
                    if let Some(n) = turn_of(answered).filter(|n| *n as u32 != number) {
                        let reference = format!("turn:{n}");
                        if !references.contains(&reference) {
                            references.push(reference);
                        }
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
                    "position": positions[index],
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
                    .get(positions[index])
                    .cloned()
                    .unwrap_or_else(|| timestamp.clone()),
                argument_text: sanitize::clean(&turn.content),
                references,
                metadata,
                extra: Map::new(),
            }
        })
        .collect();
    let scores = own.and_then(|r| {
        let info = serde_json::from_value(r.get("scoring")?.clone()).ok()?;
        let scores: Vec<arena::Score> = serde_json::from_value(r.get("scores")?.clone()).ok()?;
        Some(arena::Scores {
            debate_id: debate.id.clone(),
            scoring_info: info,
            scores,
        })
    });
    let summary = document
        .synthesis
        .as_ref()
        .map(|s| sanitize::clean(&s.markdown));
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
            "moderator_turns": moderator
                .iter()
                .map(|(position, turn)| json!({"position": position, "turn": turn, "at": document.turn_times.get(*position)}))
                .collect::<Vec<_>>(),
        }),
    );
    ArenaDebate {
        manifest: Manifest {
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
                        || spoken.iter().any(|t| &t.seat == seat && t.status.spoke());
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
            } else if spoken.is_empty() {
                ArenaStatus::Open
            } else {
                ArenaStatus::InProgress
            },
            created_utc: debate.created_at.clone(),
            updated_utc: debate.updated_at.clone(),
            moderator_id: moderator_id(document, &personas),
            scoring_info: scores.as_ref().map(|s| s.scoring_info.clone()),
            turn_requested: None,
            extra,
        },
        protocol_md: format!(
            "# Protocol\n\nExported by moot from a `{}` debate. Each seat is an agent; every turn a seat spoke is one argument, numbered in the order the journal holds them; `metadata.moot` keeps the round, phase, status and speech acts.\n",
            debate.protocol
        ),
        personas: personas.into_iter().map(|(_, p)| p).collect(),
        turns,
        scores,
        summary,
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
    use crate::debate::{
        Debate, DebateStatus, Event, MODERATOR, Move, Phase, Presentation, Seat, Turn, TurnStatus,
    };
    use serde_json::Value;
    let (read, passed_over) =
        arena::read_noting(dir).map_err(|e| Failure::usage(format!("cannot import: {e}")))?;
    for skipped in &passed_over {
        eprintln!("moot: import: {skipped}");
    }
    let manifest = &read.manifest;
    let id = manifest.debate_id.trim().to_string();
    let manifest_path = dir.join("manifest.json");
    if !arena::is_safe_name(&id) {
        return Err(Failure::usage(format!(
            "{}: debate_id {id:?} is not a usable id (letters, digits, - _ .)",
            manifest_path.display()
        )));
    }
    if store.debate(&id).is_ok() {
        return Err(Failure::usage(format!(
            "{id} is already in the journal; `moot show {id}` shows it"
        )));
    }
    let moot = manifest.extra.get("moot");
    let mut seats: Vec<Seat> = Vec::new();
    let mut agents: Vec<(String, String)> = Vec::new();
    // Seats in the manifest's order of participants (persona files come in name order).
    let mut personas: Vec<&arena::Persona> = read.personas.iter().collect();
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
            id: seat_letter(seats.len()),
            perspective: persona.role_name.clone(),
            priorities: Vec::new(),
            trade_offs: persona.instructions.clone(),
            stance: persona.stance_summary.clone(),
            provider: None,
            model: None,
        });
        agents.push((persona.agent_id.clone(), seat.id.clone()));
        seats.push(seat);
    }
    let mut turns: Vec<Turn> = Vec::new();
    let mut positions: Vec<usize> = Vec::new();
    // When each turn was spoken, as its file says, so the journal keeps it.
    let mut times: Vec<Option<String>> = Vec::new();
    for argument in &read.turns {
        let file = dir.join("transcript").display().to_string();
        let kept = argument.metadata.get("moot");
        let field = |name: &str| kept.and_then(|m| m.get(name)).filter(|v| !v.is_null());
        let seat = match agents.iter().find(|(agent, _)| *agent == argument.agent_id) {
            Some((_, seat)) => seat.clone(),
            None => {
                // An agent with no persona file still gets a seat, with the role and stance
                // the manifest gives it.
                let listed = manifest
                    .participants
                    .iter()
                    .find(|p| p.agent_id == argument.agent_id);
                let seat = Seat {
                    id: seat_letter(seats.len()),
                    perspective: listed
                        .map_or_else(|| argument.agent_id.clone(), |p| p.role_name.clone()),
                    priorities: Vec::new(),
                    trade_offs: String::new(),
                    stance: listed.map(|p| p.stance.clone()).unwrap_or_default(),
                    provider: None,
                    model: None,
                };
                agents.push((argument.agent_id.clone(), seat.id.clone()));
                seats.push(seat.clone());
                seat.id
            }
        };
        let seat = field("seat")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or(seat);
        let phase: Phase = field("phase")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or(Phase::Argument);
        let round = field("round")
            .and_then(Value::as_u64)
            .map_or(argument.turn_number, |r| r as u32);
        if turns
            .iter()
            .any(|t| t.round == round && t.phase == phase && t.seat == seat)
        {
            return Err(Failure::usage(format!(
                "{file}: turn {} of {} repeats round {round} ({phase}) for the same seat",
                argument.turn_number, argument.agent_id
            )));
        }
        let moves: Vec<Move> = field("moves")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default();
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
        // As the file gave them, so an export writes the turn back as it came.
        data.insert("turn_number".into(), Value::from(argument.turn_number));
        data.insert(
            "timestamp_utc".into(),
            Value::from(argument.timestamp_utc.clone()),
        );
        positions.push(
            field("position")
                .and_then(Value::as_u64)
                .map_or(usize::MAX, |p| p as usize),
        );
        times.push(Some(argument.timestamp_utc.clone()).filter(|t| !t.trim().is_empty()));
        turns.push(Turn {
            round,
            phase,
            seat,
            content: argument.argument_text.clone(),
            moves,
            confidence: field("confidence")
                .and_then(Value::as_f64)
                .or_else(|| argument.metadata.get("confidence").and_then(Value::as_f64)),
            tokens_in: field("tokens_in").and_then(Value::as_u64).unwrap_or(0),
            tokens_out: field("tokens_out").and_then(Value::as_u64).unwrap_or(0),
            tokens_estimated: field("tokens_estimated")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            latency_ms: field("latency_ms").and_then(Value::as_u64).unwrap_or(0),
            provider: field("provider")
                .and_then(Value::as_str)
                .unwrap_or("arena")
                .to_string(),
            model: field("model")
                .and_then(Value::as_str)
                .unwrap_or("imported")
                .to_string(),
            status: field("status")
                .and_then(|v| serde_json::from_value(v.clone()).ok())
                .unwrap_or(TurnStatus::Ok),
            // What moot exported keeps its own data; a hand-written turn keeps what it said.
            data: if kept.is_some() {
                field("data").cloned()
            } else {
                Some(Value::Object(data))
            },
            note: field("note").and_then(Value::as_str).map(str::to_string),
        });
    }
    // The moderator's turns moot kept in the manifest, back in their places.
    let moderator_turns: Vec<(usize, (Turn, Option<String>))> = moot
        .and_then(|m| m.get("moderator_turns"))
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|item| {
                    let position = item.get("position")?.as_u64()? as usize;
                    let turn: Turn = serde_json::from_value(item.get("turn")?.clone()).ok()?;
                    let at = item.get("at").and_then(Value::as_str).map(str::to_string);
                    (turn.seat == MODERATOR).then_some((position, (turn, at)))
                })
                .collect()
        })
        .unwrap_or_default();
    let mut ordered: Vec<(usize, (Turn, Option<String>))> = positions
        .into_iter()
        .zip(turns.into_iter().zip(times))
        .collect();
    ordered.extend(moderator_turns);
    // A stable sort: hand-written turns (no position) keep their file order, after the rest.
    ordered.sort_by_key(|(position, _)| *position);
    let (turns, times): (Vec<Turn>, Vec<Option<String>>) =
        ordered.into_iter().map(|(_, timed)| timed).unzip();
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
    let debate = Debate {
        id: id.clone(),
        question: manifest.topic.clone(),
        protocol: protocol.clone(),
        status,
        config: {
            let mut config = imported_config(dir, &read, &agents, moot.is_some());
            if let Some(by) = moot
                .and_then(|m| m.get("initiated_by"))
                .filter(|by| by.is_string())
            {
                config["initiated_by"] = by.clone();
            }
            config
        },
        seats: seats.clone(),
        created_at: manifest.created_utc.clone(),
        updated_at: manifest.updated_utc.clone(),
        finished_at: None,
        confidence: None,
        error: None,
        stage: None,
    };
    let fail = |e: crate::store::StoreError| Failure::runtime(e.to_string());
    store.create_debate(&debate).map_err(fail)?;
    store.set_seats(&id, &seats).map_err(fail)?;
    let presentation: Presentation = registry
        .find(&protocol)
        .map(|p| p.presentation())
        .unwrap_or_default();
    let mut events = vec![
        Event::DebateCreated {
            id: id.clone(),
            question: debate.question.clone(),
            protocol: protocol.clone(),
            resumed: false,
            presentation: presentation.clone(),
        },
        Event::DebateStarted {
            id: id.clone(),
            question: debate.question.clone(),
            protocol: protocol.clone(),
            seats: seats.clone(),
            max_rounds: turns.iter().map(|t| t.round).max().unwrap_or(0),
            provider: "arena".into(),
            model: "imported".into(),
            caveat: None,
            presentation,
        },
    ];
    let mut round = None;
    for (turn, at) in turns.iter().zip(&times) {
        match at {
            Some(at) => store.record_turn_at(&id, turn, at),
            None => store.record_turn(&id, turn),
        }
        .map_err(fail)?;
        if round != Some(turn.round) && turn.seat != MODERATOR {
            round = Some(turn.round);
            events.push(Event::RoundStarted {
                round: turn.round,
                limit: None,
            });
        }
        events.push(turn.completed_event(false));
    }
    if let Some(summary) = &read.summary {
        let kept = moot.and_then(|m| m.get("synthesis"));
        let kept_data = kept.and_then(|s| s.get("data")).filter(|d| !d.is_null());
        // A directory moot wrote keeps its result; one written by hand gets its outcome and
        // confidence computed from its scores (003-N6), never a level assumed.
        let computed = (kept_data.is_none() && protocol == "arena").then(|| {
            use crate::protocol::TypedProtocol as _;
            let spoken: Vec<(&Turn, &str)> = turns
                .iter()
                .filter(|turn| turn.seat != MODERATOR)
                .filter_map(|turn| {
                    let agent = agents.iter().find(|(_, seat)| *seat == turn.seat)?;
                    Some((turn, agent.0.as_str()))
                })
                .collect();
            let result = crate::protocol::arena::ArenaResult::imported(
                &id,
                &read,
                &spoken,
                summary,
                &dir.display().to_string(),
            );
            let mut data = serde_json::to_value(&result).unwrap_or_default();
            if let Some(map) = data.as_object_mut() {
                map.insert(
                    crate::protocol::RESULT_VERSION_KEY.into(),
                    crate::protocol::arena::Arena::RESULT_VERSION.into(),
                );
            }
            (data, result.confidence())
        });
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
                &id,
                &crate::store::StoredSynthesis {
                    markdown: summary.clone(),
                    data,
                    confidence,
                    path: None,
                    follow_up_path: None,
                    section,
                },
            )
            .map_err(fail)?;
        events.push(Event::Synthesis {
            markdown: summary.clone(),
            confidence,
            path: None,
            draft: false,
        });
    }
    events.push(Event::DebateCompleted {
        id: id.clone(),
        status,
    });
    for event in &events {
        store.record_event(&id, event).map_err(fail)?;
    }
    store
        .set_status(
            &id,
            status,
            (status == DebateStatus::Cancelled).then_some(
                "imported from an arena directory before it closed; it cannot be resumed",
            ),
        )
        .map_err(fail)?;
    Ok(id)
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
