//! After a debate: the person's decision of a contested one, and the follow-up draft.

use super::{DebateSettings, save_outcome, with_receipt};
use crate::debate::{AskKind, Control, DebateStatus, Event, Stage};
use crate::decision;
use crate::protocol::{self, Registry};
use crate::store::{AuditKind, AuditPlace};
use crate::store::{Store, StoreError};
use std::path::PathBuf;

/// Why a follow-up issue draft could not be written.
#[derive(Debug, thiserror::Error)]
pub enum FollowUpError {
    #[error("{0} has no synthesis yet, so there is no decision to follow up")]
    NoSynthesis(String),
    #[error("a {0} debate offers no follow-up issue draft")]
    NotOffered(String),
    #[error("the stored synthesis of {id} cannot be read ({detail})")]
    Unreadable { id: String, detail: String },
    #[error("could not write the follow-up issue draft to {dir}: {source}")]
    Write {
        dir: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Writes the "create a workflow from this decision" issue draft for a concluded debate (once:
/// a second call returns the draft already written), next to its decision record.
pub fn write_follow_up(
    registry: &Registry,
    store: &Store,
    id: &str,
) -> Result<PathBuf, FollowUpError> {
    let debate = store.debate(id)?;
    let stored = store
        .synthesis(&debate.id)?
        .ok_or_else(|| FollowUpError::NoSynthesis(debate.id.clone()))?;
    if let Some(path) = &stored.follow_up_path {
        return Ok(PathBuf::from(path));
    }
    let unreadable = |detail: String| FollowUpError::Unreadable {
        id: debate.id.clone(),
        detail,
    };
    let protocol = registry
        .named(&debate.protocol)
        .map_err(|e| unreadable(e.to_string()))?;
    let record = stored.path.as_ref().map(PathBuf::from);
    let draft = protocol
        .follow_up(&stored.data, &debate.question, record.as_deref())
        .ok_or_else(|| FollowUpError::NotOffered(debate.protocol.clone()))?;
    let dir = serde_json::from_value::<DebateSettings>(debate.config.clone())
        .map(|s| s.decisions_dir)
        .or_else(|_| std::env::current_dir().map(|cwd| cwd.join("docs/decisions")))
        .map_err(|e| unreadable(e.to_string()))?;
    let date = debate.created_at.get(..10).unwrap_or("undated").to_string();
    let path =
        decision::write_follow_up(&dir, &date, &debate.question, &draft).map_err(|source| {
            FollowUpError::Write {
                dir: dir.display().to_string(),
                source,
            }
        })?;
    store.set_follow_up(&debate.id, &path.display().to_string())?;
    let _ = store.record_event(
        &debate.id,
        &Event::FollowUp {
            path: path.display().to_string(),
        },
    );
    Ok(path)
}

/// Why a contested result could not be settled.
#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    #[error(
        "{id} has no result yet; only a finished debate, or one waiting or paused at its choice, can be decided{hint}"
    )]
    NoResult { id: String, hint: String },
    #[error(
        "{id} was decided already (option {option} by {by}); `moot decide {id} OPTION --force` decides again, and both decisions stay in the journal"
    )]
    AlreadyDecided {
        id: String,
        option: String,
        by: String,
    },
    #[error("{id}'s choice was answered a moment ago; `moot show {id}` says how")]
    AnsweredAlready { id: String },
    #[error("there is no option {choice:?} in {id}; choose one of {}", options.join(", "))]
    NoSuchOption {
        id: String,
        choice: String,
        options: Vec<String>,
    },
    #[error(transparent)]
    Unknown(#[from] protocol::UnknownProtocol),
    #[error(transparent)]
    Refused(#[from] protocol::Undecidable),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What `decide` did.
#[derive(Debug)]
pub enum Decided {
    /// A finished debate's result settled: its record as it now reads, and where that record
    /// was written.
    Settled {
        markdown: String,
        path: Option<String>,
    },
    /// A debate paused at its choice: the answer is journaled, and a resume finishes it with
    /// no question asked again.
    Answered { round: u32 },
    /// A debate running and waiting at its choice: the answer is journaled, and the process
    /// running it takes it from there.
    Sent { round: u32 },
}

/// Settles what a debate left to the person (`moot decide ID OPTION`), the choice journaled
/// with who gave it. A finished debate's result is decided by its protocol and its record
/// stored and written again; one paused at its choice gets the answer it waits for. A second
/// decision needs `force`; every decision stays in the journal (an event and an audit entry
/// each), while the latest is the answer a re-run replays.
pub fn decide(
    registry: &Registry,
    store: &Store,
    id: &str,
    choice: &str,
    by: &str,
    force: bool,
) -> Result<Decided, DecideError> {
    let debate = store.debate(id)?;
    let choice = choice.trim().to_uppercase();
    let Some(stored) = store.synthesis(&debate.id)? else {
        return answer_a_paused_choice(store, &debate, &choice, by);
    };
    let earlier = store
        .checkpoints(&debate.id)?
        .into_iter()
        .rfind(|c| c.kind == AskKind::Choice);
    let decided_before = earlier.as_ref().and_then(|c| match &c.control {
        Control::Choose(option) => Some((option.clone(), c.answered_by.clone())),
        _ => None,
    });
    // The choice is checked first: an option the result does not offer is named as such,
    // decided before or not (A7).
    let protocol = registry.named(&debate.protocol)?;
    let outcome = protocol.decide(&stored.data, &choice, by)?;
    if let (Some((option, by)), false) = (&decided_before, force) {
        return Err(DecideError::AlreadyDecided {
            id: debate.id.clone(),
            option: option.clone(),
            by: by.clone(),
        });
    }
    // Filed where the protocol asks for it (after its last round), so a re-run of the journal
    // (`moot audit --verify`) replays the choice and reads as the decided record.
    let round = match &earlier {
        Some(asked) => asked.round,
        None => store
            .turns(&debate.id)?
            .iter()
            .map(|t| t.round)
            .max()
            .unwrap_or(0),
    };
    journal_choice(
        store,
        &debate.id,
        round,
        &choice,
        by,
        decided_before.map(|(o, _)| o),
    )?;
    let outcome = with_receipt(store, &debate, protocol, &outcome)?;
    let settings: Option<DebateSettings> = serde_json::from_value(debate.config.clone()).ok();
    let mut path = stored.path.clone();
    if let (Some(settings), Some(earlier_file)) = (
        settings.filter(|s| s.write_decision),
        stored.path.as_deref(),
    ) && let Ok(written) = decision::rewrite_record(
        std::path::Path::new(earlier_file),
        &stored.markdown,
        &settings.decisions_dir,
        &outcome.date,
        &debate.question,
        &outcome.markdown,
    ) {
        path = Some(written.display().to_string());
    }
    let announced = save_outcome(
        store,
        &debate.id,
        &outcome,
        path.clone(),
        stored.follow_up_path.clone(),
    )?;
    let _ = store.record_event(&debate.id, &announced);
    Ok(Decided::Settled {
        markdown: outcome.markdown,
        path,
    })
}

/// A debate with no result: answered when it is paused at its choice (and the choice is one
/// it offered), refused otherwise with what to do instead.
fn answer_a_paused_choice(
    store: &Store,
    debate: &crate::debate::Debate,
    choice: &str,
    by: &str,
) -> Result<Decided, DecideError> {
    let (waiting, running) = match (&debate.status, &debate.stage) {
        (
            status @ (DebateStatus::Paused | DebateStatus::Running),
            Some(Stage::Asking {
                kind: AskKind::Choice,
                round,
            }),
        ) => (*round, *status == DebateStatus::Running),
        _ => {
            let hint = if debate.status.is_resumable() {
                format!("; `moot resume {}` goes on with it", debate.id)
            } else {
                String::new()
            };
            return Err(DecideError::NoResult {
                id: debate.id.clone(),
                hint,
            });
        }
    };
    let offered: Vec<String> = store
        .events(&debate.id)?
        .into_iter()
        .rev()
        .find_map(|event| match event {
            Event::Checkpoint {
                kind: AskKind::Choice,
                choices,
                ..
            } => Some(choices.into_iter().map(|(id, _)| id).collect()),
            _ => None,
        })
        .unwrap_or_default();
    if !offered.is_empty() && !offered.iter().any(|id| id == choice) {
        return Err(DecideError::NoSuchOption {
            id: debate.id.clone(),
            choice: choice.to_string(),
            options: offered,
        });
    }
    if running {
        // The running debate journals its own announcement when it takes the answer.
        let control = Control::Choose(choice.to_string());
        return match store.record_remote_answer(
            &debate.id,
            waiting,
            AskKind::Choice,
            &control,
            by,
        )? {
            crate::store::RemoteAnswer::Recorded => Ok(Decided::Sent { round: waiting }),
            crate::store::RemoteAnswer::AnsweredAlready => Err(DecideError::AnsweredAlready {
                id: debate.id.clone(),
            }),
            crate::store::RemoteAnswer::DoesNotFit(_) => Err(DecideError::NoSuchOption {
                id: debate.id.clone(),
                choice: choice.to_string(),
                options: offered,
            }),
        };
    }
    journal_choice(store, &debate.id, waiting, choice, by, None)?;
    Ok(Decided::Answered { round: waiting })
}

/// Journals a decision: the answer a re-run replays, the announcement in the event log, and
/// an audit entry naming the decision it replaces, so no decision is ever lost.
fn journal_choice(
    store: &Store,
    id: &str,
    round: u32,
    option: &str,
    by: &str,
    replaces: Option<String>,
) -> Result<(), StoreError> {
    let control = Control::Choose(option.to_string());
    store.record_checkpoint(id, round, AskKind::Choice, &control, by)?;
    store.record_event(
        id,
        &Event::CheckpointAnswered {
            round,
            decision: control.answer(),
            guidance: Some(option.to_string()),
            kind: AskKind::Choice,
        },
    )?;
    let place = AuditPlace {
        round,
        phase: "decide".into(),
        seat: by.to_string(),
        attempt: 0,
        provider: String::new(),
        model: String::new(),
    };
    let body = serde_json::json!({"decided": option, "by": by, "replaces": replaces});
    store.record_audit(id, AuditKind::Event, &place, &body, true)
}
