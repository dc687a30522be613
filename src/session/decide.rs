//! After a debate: the person's decision of a contested one, and the follow-up draft.

use super::{DebateSettings, save_outcome, with_receipt};
use crate::debate::Event;
use crate::decision;
use crate::protocol::{self};
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
pub fn write_follow_up(store: &Store, id: &str) -> Result<PathBuf, FollowUpError> {
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
    let protocol = protocol::named(&debate.protocol).map_err(|e| unreadable(e.to_string()))?;
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
    #[error("{0} has no result yet; only a finished debate can be decided")]
    NoResult(String),
    #[error(transparent)]
    Unknown(#[from] protocol::UnknownProtocol),
    #[error(transparent)]
    Refused(#[from] protocol::Undecidable),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A settled result: its record as it now reads, and where that record was written.
pub struct Decided {
    pub markdown: String,
    pub path: Option<String>,
}

/// Settles what a finished debate left to the person (`moot decide ID OPTION`): the protocol
/// takes the choice, the answer is journaled with who gave it, and the record is stored and
/// written again (a new file beside the old one; records are never overwritten).
pub fn decide(store: &Store, id: &str, choice: &str, by: &str) -> Result<Decided, DecideError> {
    let debate = store.debate(id)?;
    let stored = store
        .synthesis(&debate.id)?
        .ok_or_else(|| DecideError::NoResult(debate.id.clone()))?;
    let protocol = protocol::named(&debate.protocol)?;
    let outcome = protocol.decide(&stored.data, choice, by)?;
    let control = crate::debate::Control::Choose(choice.trim().to_uppercase());
    let round = store
        .checkpoints(&debate.id)?
        .iter()
        .rfind(|c| c.kind == crate::debate::AskKind::Choice)
        .map_or(0, |c| c.round);
    store.record_checkpoint(
        &debate.id,
        round,
        crate::debate::AskKind::Choice,
        &control,
        by,
    )?;
    let outcome = with_receipt(store, &debate.id, &outcome)?;
    let settings: Option<DebateSettings> = serde_json::from_value(debate.config.clone()).ok();
    let mut path = stored.path.clone();
    if let Some(settings) = settings.filter(|s| s.write_decision && stored.path.is_some())
        && let Ok(written) = decision::write_record(
            &settings.decisions_dir,
            &outcome.date,
            &debate.question,
            &outcome.markdown,
        )
    {
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
    Ok(Decided {
        markdown: outcome.markdown,
        path,
    })
}
