//! A stored debate as the event stream it produced, so a face can replay it offline through
//! the same fold it uses live (no provider needed).

use crate::debate::{AskKind, Debate, Event, Phase};
use crate::llm::local::models::{DEMONSTRATION_NOTE, is_demonstration_model};
use crate::session::{self, DebateSettings};
use crate::store::{CheckpointRecord, Store, StoreError};

/// The events of a stored debate, in the order a live run emitted them (less the deltas):
/// its event log, framed by where the debate stands now. Debates journaled before the log
/// existed are rebuilt from their tables.
pub fn journal_events(store: &Store, id: &str) -> Result<Vec<Event>, StoreError> {
    let debate = store.debate(id)?;
    let logged = store.events(&debate.id)?;
    if logged.is_empty() {
        return rebuilt_events(store, &debate);
    }
    let mut events = vec![created(&debate)];
    // How each run ended is the debate row's to say, once, at the end.
    events.extend(logged.into_iter().filter(|e| {
        !matches!(
            e,
            Event::DebateCreated { .. } | Event::DebateCompleted { .. } | Event::Error { .. }
        )
    }));
    events.extend(ending(&debate));
    Ok(events)
}

/// The events of a debate journaled before the event log, rebuilt from its tables in the
/// moderated protocol's order (the only protocol there was).
fn rebuilt_events(store: &Store, debate: &Debate) -> Result<Vec<Event>, StoreError> {
    let turns = store.turns(&debate.id)?;
    let checkpoints = store.checkpoints(&debate.id)?;
    let annotations = store.annotations(&debate.id)?;
    let synthesis = store.synthesis(&debate.id)?;
    let settings: Option<DebateSettings> = serde_json::from_value(debate.config.clone()).ok();
    let mut events = vec![created(debate)];
    let mut rest = turns.iter().peekable();
    while let Some(turn) = rest.next_if(|t| t.phase == Phase::Analysis) {
        events.push(turn.completed_event(true));
    }
    if !debate.seats.is_empty() {
        let (provider, model) = match &settings {
            Some(s) => (s.provider.kind.to_string(), s.provider.model.clone()),
            None => (String::new(), String::new()),
        };
        let model = turns
            .iter()
            .find(|t| t.status.spoke())
            .map(|t| t.model.clone())
            .filter(|m| !m.is_empty())
            .unwrap_or(model);
        events.push(Event::DebateStarted {
            id: debate.id.clone(),
            question: debate.question.clone(),
            protocol: debate.protocol.clone(),
            seats: debate.seats.clone(),
            max_rounds: settings.as_ref().map_or(0, |s| s.max_rounds),
            provider,
            caveat: is_demonstration_model(&model).then(|| DEMONSTRATION_NOTE.to_string()),
            presentation: Default::default(),
            model,
        });
    }
    let answered = |record: &CheckpointRecord| Event::CheckpointAnswered {
        round: record.round,
        decision: record.control.answer(),
        guidance: record.control.guidance().map(str::to_string),
        kind: record.kind,
    };
    let close_round = |events: &mut Vec<Event>, round: u32| {
        events.extend(
            annotations
                .iter()
                .filter(|(r, _)| *r == round)
                .map(|(_, e)| e.clone()),
        );
        for record in checkpoints.iter().filter(|c| {
            c.round == round && matches!(c.kind, AskKind::Checkpoint | AskKind::Conclusion)
        }) {
            events.push(answered(record));
        }
    };
    let mut limit = settings.as_ref().map_or(0, |s| s.max_rounds);
    let mut current: Option<u32> = None;
    for turn in rest {
        if !turn.phase.is_closing() && current != Some(turn.round) {
            if let Some(round) = current {
                close_round(&mut events, round);
            }
            current = Some(turn.round);
            // A round past the limit was one the person asked for at a conclusion.
            let moved = turn.round > limit && limit > 0;
            limit = limit.max(turn.round);
            events.push(Event::RoundStarted {
                round: turn.round,
                limit: moved.then_some(limit),
            });
        }
        if turn.phase.is_closing()
            && let Some(round) = current.take()
        {
            close_round(&mut events, round);
        }
        events.push(turn.completed_event(true));
    }
    if let Some(round) = current {
        close_round(&mut events, round);
    }
    events.extend(
        checkpoints
            .iter()
            .filter(|c| matches!(c.kind, AskKind::Approval | AskKind::RevisedApproval))
            .map(answered),
    );
    if let Some(synthesis) = synthesis {
        events.push(Event::Synthesis {
            markdown: synthesis.markdown,
            confidence: synthesis.confidence,
            path: synthesis.path,
            draft: false,
        });
        if let Some(path) = synthesis.follow_up_path {
            events.push(Event::FollowUp { path });
        }
    }
    events.extend(ending(debate));
    Ok(events)
}

/// How the debate stands now, as its row says: its error, if any, then its status.
fn ending(debate: &Debate) -> Vec<Event> {
    let error = debate.error.as_ref().map(|message| Event::Error {
        message: message.clone(),
    });
    error
        .into_iter()
        .chain([Event::DebateCompleted {
            id: debate.id.clone(),
            status: debate.status,
        }])
        .collect()
}

/// The debate as it was created (a replay starts from the beginning, never as a resume).
fn created(debate: &Debate) -> Event {
    Event::DebateCreated {
        id: debate.id.clone(),
        question: debate.question.clone(),
        protocol: debate.protocol.clone(),
        resumed: false,
        presentation: session::presentation(&debate.protocol),
    }
}
