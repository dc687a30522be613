//! Decisions taken after the fact: `decide` (a contested debate's choice), `gates`, and
//! `approve` / `reject` of a gate from another terminal.

use super::{Failure, one_line, print, print_json};
use crate::debate::GateDecision;
use crate::sanitize;
use crate::store::Store;

/// `moot decide ID OPTION [--force]`: settles a contested result and prints it as it now
/// reads. For a debate paused at its choice it journals the answer and returns true: the
/// caller resumes it to finish.
pub fn decide(
    store: &Store,
    id: &str,
    option: &str,
    by: &str,
    force: bool,
) -> Result<bool, Failure> {
    use crate::session::{DecideError, Decided};
    let decided = crate::session::decide(&crate::protocol::builtin(), store, id, option, by, force)
        .map_err(|e| match e {
            DecideError::Store(e) => Failure::from(e),
            other => Failure::usage(other.to_string()),
        })?;
    let (markdown, path) = match decided {
        Decided::Answered { .. } => return Ok(true),
        Decided::Sent { .. } => {
            let id = store.debate(id)?.id;
            print(&format!(
                "answered option {} to {id} (it was waiting for the person to choose an option); it goes on\n",
                option.trim().to_uppercase()
            ))?;
            return Ok(false);
        }
        Decided::Settled { markdown, path } => (markdown, path),
    };
    let mut out = sanitize::clean(&markdown);
    if let Some(path) = path {
        out.push_str(&format!("\nRecorded in {path}\n"));
    }
    print(&out)?;
    Ok(false)
}

/// `moot approve ID` on a debate waiting at a question rather than a gate (a checkpoint, a
/// conclusion, its synthesis, a panel's options): answers it with what goes on (continue,
/// accept), through the journal, where the running debate picks it up.
fn approve_question(
    store: &Store,
    debate: &crate::debate::Debate,
    by: &str,
) -> Result<(), Failure> {
    use crate::debate::{AskKind, DebateStatus, Stage};
    let none = || {
        Failure::usage(format!(
            "{} waits at no gate or question now; `moot show {}` says where it stands",
            debate.id, debate.id
        ))
    };
    let (kind, round) = match (&debate.status, &debate.stage) {
        (DebateStatus::Running, Some(Stage::Asking { kind, round })) => (*kind, *round),
        _ => return Err(none()),
    };
    let answer = match kind {
        AskKind::Choice => {
            return Err(Failure::usage(format!(
                "{} waits for a choice among options: `moot decide {} OPTION` makes it",
                debate.id, debate.id
            )));
        }
        AskKind::Turn | AskKind::Gate => {
            return Err(Failure::usage(format!(
                "{} waits for a person's turn: write it from the workbench (`moot open {}`)",
                debate.id, debate.id
            )));
        }
        other => other.default_answer().ok_or_else(none)?,
    };
    match store.record_remote_answer(&debate.id, round, kind, &answer, by)? {
        crate::store::RemoteAnswer::Recorded => {}
        crate::store::RemoteAnswer::AnsweredAlready => {
            return Err(Failure::usage(format!(
                "that question of {} was answered a moment ago; `moot show {}` says how",
                debate.id, debate.id
            )));
        }
        crate::store::RemoteAnswer::DoesNotFit(why) => {
            return Err(Failure::usage(format!("{}: {why}", debate.id)));
        }
    }
    print(&format!(
        "answered `{}` to {} ({}); it goes on\n",
        answer.answer(),
        debate.id,
        Stage::Asking { kind, round }
    ))
}

/// `moot gates ID`: each approval gate the debate reached, and how it was decided.
pub fn gates(store: &Store, id: &str, json: bool) -> Result<(), Failure> {
    let debate = store.debate(id)?;
    let gates = store.gates(&debate.id)?;
    if json {
        return print_json(&gates);
    }
    if gates.is_empty() {
        return print(&format!("{} reached no gate.\n", debate.id));
    }
    let mut out = String::new();
    for gate in &gates {
        let decided = match (&gate.decision, &gate.decided_by) {
            (Some(decision), Some(by)) => format!(
                "{decision} by {by} at {}{}",
                gate.decided_at.as_deref().unwrap_or("?"),
                gate.reason
                    .as_deref()
                    .map(|r| format!(" — {}", one_line(r, 80)))
                    .unwrap_or_default()
            ),
            _ => "waiting (`moot approve`, or `moot reject --reason …`)".to_string(),
        };
        out.push_str(&format!(
            "{:<22} {}\n  {}\n",
            gate.gate,
            decided,
            one_line(&gate.summary, 100)
        ));
    }
    print(&out)
}

/// `moot approve ID` / `moot reject ID --reason …`: settles the gate the debate waits at; the
/// running debate reads the decision from the journal.
pub fn decide_gate(store: &Store, id: &str, reason: Option<&str>, by: &str) -> Result<(), Failure> {
    let debate = store.debate(id)?;
    if let Some(reason) = reason
        && reason.trim().is_empty()
    {
        return Err(Failure::usage(
            "--reason must say why the gate is rejected".to_string(),
        ));
    }
    let Some(waiting) = store.waiting_gate(&debate)? else {
        // No gate: `approve` answers the question it waits at, if it goes on by default.
        if reason.is_none() {
            return approve_question(store, &debate, by);
        }
        return Err(Failure::usage(format!(
            "{} waits at no gate now ({}); a gate is decided while its debate waits there, and a stopped debate asks again when resumed; `moot gates {}` lists its gates",
            debate.id, debate.status, debate.id
        )));
    };
    let decision = if reason.is_some() {
        GateDecision::Rejected
    } else {
        GateDecision::Approved
    };
    if !store.decide_gate(
        &debate.id,
        &waiting.gate,
        decision,
        by,
        reason.map(str::trim),
    )? {
        return Err(Failure::usage(format!(
            "the gate {} was decided a moment ago; `moot gates {}` says how",
            waiting.gate, debate.id
        )));
    }
    print(&format!(
        "{decision} gate {} of {}\n",
        waiting.gate, debate.id
    ))
}
