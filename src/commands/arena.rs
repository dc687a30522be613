//! The arena directory's commands: `import` of a directory as a debate, and `arena` (status,
//! submit, watch) on a running arena.

use super::{Failure, print};
use crate::debate::Confidence;
use crate::report;
use crate::sanitize;
use crate::store::Store;
use std::path::Path;

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
    let read = arena::read(dir).map_err(|e| Failure::usage(format!("cannot import: {e}")))?;
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
    for argument in &read.turns {
        let file = dir.join("transcript").display().to_string();
        let kept = argument.metadata.get("moot");
        let field = |name: &str| kept.and_then(|m| m.get(name)).filter(|v| !v.is_null());
        let seat = match agents.iter().find(|(agent, _)| *agent == argument.agent_id) {
            Some((_, seat)) => seat.clone(),
            None => {
                // An agent with no persona file still gets a seat.
                let seat = Seat {
                    id: seat_letter(seats.len()),
                    perspective: argument.agent_id.clone(),
                    priorities: Vec::new(),
                    trade_offs: String::new(),
                    stance: String::new(),
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
        positions.push(
            field("position")
                .and_then(Value::as_u64)
                .map_or(usize::MAX, |p| p as usize),
        );
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
    let moderator_turns: Vec<(usize, Turn)> = moot
        .and_then(|m| m.get("moderator_turns"))
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|item| {
                    let position = item.get("position")?.as_u64()? as usize;
                    let turn: Turn = serde_json::from_value(item.get("turn")?.clone()).ok()?;
                    (turn.seat == MODERATOR).then_some((position, turn))
                })
                .collect()
        })
        .unwrap_or_default();
    let mut ordered: Vec<(usize, Turn)> = positions.into_iter().zip(turns).collect();
    ordered.extend(moderator_turns);
    // A stable sort: hand-written turns (no position) keep their file order, after the rest.
    ordered.sort_by_key(|(position, _)| *position);
    let turns: Vec<Turn> = ordered.into_iter().map(|(_, turn)| turn).collect();
    let status = moot
        .and_then(|m| serde_json::from_value(m.get("status")?.clone()).ok())
        .unwrap_or(if manifest.status == arena::ArenaStatus::Closed {
            DebateStatus::Completed
        } else {
            DebateStatus::Cancelled
        });
    let protocol = if crate::protocol::find(&manifest.protocol).is_some() {
        manifest.protocol.clone()
    } else {
        "arena".to_string()
    };
    let debate = Debate {
        id: id.clone(),
        question: manifest.topic.clone(),
        protocol: protocol.clone(),
        status,
        config: serde_json::json!({"imported_from": dir.display().to_string()}),
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
    let presentation: Presentation = crate::protocol::find(&protocol)
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
    for turn in &turns {
        store.record_turn(&id, turn).map_err(fail)?;
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
        let confidence: Confidence = kept
            .and_then(|s| serde_json::from_value(s.get("confidence")?.clone()).ok())
            .unwrap_or(Confidence::Medium);
        let section = moot
            .and_then(|m| m.get("section"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let data = kept
            .and_then(|s| s.get("data"))
            .cloned()
            .unwrap_or(Value::Null);
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

fn seat_letter(index: usize) -> String {
    let letter = char::from(b'A' + (index % 26) as u8);
    if index < 26 {
        letter.to_string()
    } else {
        format!("{letter}{}", index / 26)
    }
}

/// A running arena's directory as it stands: a turn file that cannot be read is named on
/// stderr and skipped (the running debate sets it aside), so one bad file breaks no command.
fn read_live(dir: &crate::arena::ArenaDir) -> Result<crate::arena::ArenaDebate, Failure> {
    let (debate, skipped) = dir.read().map_err(|e| Failure::runtime(e.to_string()))?;
    for why in skipped {
        eprintln!("moot: skipped {}", sanitize::clean(&why));
    }
    Ok(debate)
}

/// Where a debate's arena directory is kept written, if it is (`--arena-dir`).
fn live_arena(debate: &crate::debate::Debate) -> Option<crate::arena::ArenaDir> {
    let root = debate
        .config
        .get("protocol_settings")?
        .get("arena_dir")?
        .as_str()?;
    crate::arena::ArenaDir::existing(Path::new(root), &debate.id)
}

/// `moot arena …`. Reading works for any debate (from its live directory, else from the
/// journal); joining and submitting need the live directory of a running arena.
pub fn arena(store: &Store, action: crate::cli::ArenaAction) -> Result<(), Failure> {
    use crate::arena::{self, ArenaStatus};
    use crate::cli::ArenaAction;
    let id = match &action {
        ArenaAction::Info { id, .. }
        | ArenaAction::Persona { id, .. }
        | ArenaAction::Transcript { id, .. }
        | ArenaAction::Join { id, .. }
        | ArenaAction::Submit { id, .. } => id.clone(),
    };
    let debate = store.debate(&id)?;
    let live = live_arena(&debate);
    let read = || -> Result<arena::ArenaDebate, Failure> {
        match &live {
            Some(dir) => read_live(dir),
            None => Ok(report::to_arena(&report::document(store, &debate.id)?)),
        }
    };
    let json_out = |value: &serde_json::Value| {
        let mut value = value.clone();
        sanitize::clean_json(&mut value);
        print(&format!(
            "{}\n",
            serde_json::to_string_pretty(&value).unwrap_or_default()
        ))
    };
    // A seat by agent id or role name.
    let find = |debate: &arena::ArenaDebate, seat: &str| -> Result<arena::Persona, Failure> {
        debate
            .personas
            .iter()
            .find(|p| p.agent_id == seat || p.role_name.eq_ignore_ascii_case(seat))
            .cloned()
            .ok_or_else(|| {
                Failure::usage(format!(
                    "{} has no seat {seat:?}; its seats are {}",
                    debate.manifest.debate_id,
                    debate
                        .personas
                        .iter()
                        .map(|p| format!("{} ({})", p.agent_id, p.role_name))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })
    };
    match action {
        ArenaAction::Info { json, .. } => {
            let manifest = read()?.manifest;
            if json {
                return json_out(&serde_json::to_value(&manifest).unwrap_or_default());
            }
            let status = serde_json::to_value(manifest.status).unwrap_or_default();
            let mut out = format!(
                "{}  {}\nstatus {} · protocol {} · updated {}\n",
                manifest.debate_id,
                sanitize::clean(&manifest.topic),
                status.as_str().unwrap_or("?"),
                manifest.protocol,
                manifest.updated_utc
            );
            for p in &manifest.participants {
                out.push_str(&format!(
                    "  {:<20} {:<8} {}{}\n",
                    p.agent_id,
                    p.kind,
                    sanitize::clean(&p.role_name),
                    if p.joined { "" } else { " (not joined)" }
                ));
            }
            if let Some(request) = &manifest.turn_requested {
                out.push_str(&format!(
                    "waiting for turn {} of {} (round {}) until {}\n",
                    request.turn_number, request.agent_id, request.round, request.deadline_utc
                ));
            }
            print(&out)
        }
        ArenaAction::Persona { seat, json, .. } => {
            let persona = find(&read()?, &seat)?;
            if json {
                return json_out(&serde_json::to_value(&persona).unwrap_or_default());
            }
            print(&sanitize::clean(&persona.to_markdown()))
        }
        ArenaAction::Transcript {
            seat, since, json, ..
        } => {
            let debate = read()?;
            let agent = match &seat {
                Some(seat) => Some(find(&debate, seat)?.agent_id),
                None => None,
            };
            let turns: Vec<&arena::Argument> = debate
                .turns
                .iter()
                .filter(|t| agent.as_ref().is_none_or(|a| *a == t.agent_id))
                .filter(|t| since.is_none_or(|n| t.turn_number > n))
                .collect();
            if json {
                return json_out(&serde_json::to_value(&turns).unwrap_or_default());
            }
            let mut out = String::new();
            for t in turns {
                out.push_str(&format!(
                    "turn {} · {} · {}\n{}\n\n",
                    t.turn_number,
                    t.agent_id,
                    t.timestamp_utc,
                    sanitize::clean(t.argument_text.trim())
                ));
            }
            print(&out)
        }
        ArenaAction::Join { seat, json, .. } => {
            let dir = live.ok_or_else(|| no_live_arena(&debate.id))?;
            let current = read_live(&dir)?;
            let persona = find(&current, &seat)?;
            if current.manifest.status == ArenaStatus::Closed {
                return Err(Failure::usage(format!(
                    "{} is closed; there is nothing to join",
                    debate.id
                )));
            }
            let manifest = dir
                .update_manifest(&current.manifest, |m| {
                    for p in m
                        .participants
                        .iter_mut()
                        .filter(|p| p.agent_id == persona.agent_id)
                    {
                        p.joined = true;
                    }
                })
                .map_err(|e| Failure::runtime(e.to_string()))?;
            let answer = serde_json::json!({"joined": true, "debate_id": debate.id, "agent_id": persona.agent_id, "status": manifest.status});
            if json {
                return json_out(&answer);
            }
            print(&format!("{} joined {}\n", persona.agent_id, debate.id))
        }
        ArenaAction::Submit {
            seat, file, json, ..
        } => {
            let dir = live.ok_or_else(|| no_live_arena(&debate.id))?;
            let manifest = dir
                .manifest()
                .map_err(|e| Failure::runtime(e.to_string()))?;
            if manifest.status == ArenaStatus::Closed {
                return Err(Failure::usage(format!(
                    "{} is closed; it takes no more turns",
                    debate.id
                )));
            }
            let current = read_live(&dir)?;
            let persona = find(&current, &seat)?;
            let request = manifest.turn_requested.clone().ok_or_else(|| {
                Failure::usage(format!(
                    "{} waits for no turn now; `moot arena info {}` says where it stands",
                    debate.id, debate.id
                ))
            })?;
            if request.agent_id != persona.agent_id {
                return Err(Failure::usage(format!(
                    "it is not {}'s turn: {} waits for turn {} of {}",
                    persona.agent_id, debate.id, request.turn_number, request.agent_id
                )));
            }
            let argument = submitted_argument(&file, &request)?;
            let path = dir
                .submit_turn(&argument)
                .map_err(|e| Failure::usage(e.to_string()))?;
            let answer = serde_json::json!({
                "submitted": true,
                "debate_id": debate.id,
                "turn_number": argument.turn_number,
                "agent_id": argument.agent_id,
                "path": path.display().to_string(),
            });
            if json {
                return json_out(&answer);
            }
            print(&format!(
                "submitted turn {} for {}; the debate acknowledges it in its manifest\n",
                argument.turn_number, argument.agent_id
            ))
        }
    }
}

fn no_live_arena(id: &str) -> Failure {
    Failure::usage(format!(
        "{id} keeps no arena directory (start it with --protocol arena --arena-dir DIR)"
    ))
}

/// The argument in a submitted file: the note's fields, with the requested turn's number and
/// agent filled in where missing and refused where they differ.
fn submitted_argument(
    file: &Path,
    request: &crate::arena::TurnRequest,
) -> Result<crate::arena::Argument, Failure> {
    use serde_json::Value;
    let meta = std::fs::metadata(file)
        .map_err(|e| Failure::usage(format!("--file {}: cannot be read ({e})", file.display())))?;
    if meta.len() > crate::arena::MAX_FILE_BYTES {
        return Err(Failure::usage(format!(
            "--file {}: {} bytes; a turn takes at most {}",
            file.display(),
            meta.len(),
            crate::arena::MAX_FILE_BYTES
        )));
    }
    let text = std::fs::read_to_string(file)
        .map_err(|e| Failure::usage(format!("--file {}: cannot be read ({e})", file.display())))?;
    let mut value: Value = serde_json::from_str(&text).map_err(|e| {
        Failure::usage(format!(
            "--file {}: line {}, column {}: {e}",
            file.display(),
            e.line(),
            e.column()
        ))
    })?;
    let object = value.as_object_mut().ok_or_else(|| {
        Failure::usage(format!(
            "--file {}: a turn is a JSON object with `argument_text`",
            file.display()
        ))
    })?;
    match object.get("turn_number").and_then(Value::as_u64) {
        Some(n) if n != u64::from(request.turn_number) => {
            return Err(Failure::usage(format!(
                "--file {}: turn_number {n} is not the turn the debate waits for ({})",
                file.display(),
                request.turn_number
            )));
        }
        _ => {
            object.insert("turn_number".into(), Value::from(request.turn_number));
        }
    }
    match object.get("agent_id").and_then(Value::as_str) {
        Some(agent) if agent != request.agent_id => {
            return Err(Failure::usage(format!(
                "--file {}: agent_id {agent:?} is not the seat whose turn it is ({})",
                file.display(),
                request.agent_id
            )));
        }
        _ => {
            object.insert("agent_id".into(), Value::from(request.agent_id.clone()));
        }
    }
    object
        .entry("timestamp_utc")
        .or_insert_with(|| Value::from(crate::debate::now_rfc3339()));
    let argument: crate::arena::Argument = serde_json::from_value(value)
        .map_err(|e| Failure::usage(format!("--file {}: {e}", file.display())))?;
    if argument.argument_text.trim().is_empty() {
        return Err(Failure::usage(format!(
            "--file {}: `argument_text` is empty; the turn needs words",
            file.display()
        )));
    }
    Ok(argument)
}
