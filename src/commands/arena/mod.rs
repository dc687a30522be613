//! The arena directory's commands: `arena` (status, submit, watch) on a running arena, and
//! (in `transfer`) a debate's export to an arena directory and a directory's import as a
//! debate.

mod transfer;

pub use transfer::{export, import};

use super::{Failure, print, print_json};
use crate::report;
use crate::sanitize;
use crate::store::Store;
use std::path::Path;

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
            None => Ok(export(&report::document(store, &debate.id)?)),
        }
    };
    let json_out = |value: &serde_json::Value| print_json(value);
    // A seat by agent id or role name.
    // A seat by agent id, role name, or the journal's seat id (`PRO`, `A`: seed review 002/003
    // #18, the only short name a debate of another protocol has).
    let seat_id = |p: &arena::Persona| -> Option<String> {
        p.extra
            .get("moot")?
            .get("seat")?
            .get("id")?
            .as_str()
            .map(str::to_string)
    };
    let find = |debate: &arena::ArenaDebate, seat: &str| -> Result<arena::Persona, Failure> {
        debate
            .personas
            .iter()
            .find(|p| {
                p.agent_id == seat
                    || p.role_name.eq_ignore_ascii_case(seat)
                    || seat_id(p).is_some_and(|id| id.eq_ignore_ascii_case(seat))
            })
            .cloned()
            .ok_or_else(|| {
                Failure::usage(format!(
                    "{} has no seat {seat:?}; its seats are {}",
                    debate.manifest.debate_id,
                    debate
                        .personas
                        .iter()
                        .map(|p| match seat_id(p) {
                            Some(id) => format!("{id} ({})", p.role_name),
                            None => format!("{} ({})", p.agent_id, p.role_name),
                        })
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
