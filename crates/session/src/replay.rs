//! A stored debate as the event stream it produced, so a face can replay it offline through
//! the same fold it uses live (no provider needed).

use crate::debate::{AskKind, Debate, Event, Phase};
use crate::llm::models::{DEMONSTRATION_NOTE, is_demonstration_model};
use crate::session::{self, DebateSettings, Registry};
use crate::store::{CheckpointRecord, Store, StoreError};

/// The events of a stored debate, in the order a live run emitted them (less the deltas):
/// its event log, framed by where the debate stands now. Debates journaled before the log
/// existed are rebuilt from their tables.
pub fn journal_events(
    registry: &Registry,
    store: &Store,
    id: &str,
) -> Result<Vec<Event>, StoreError> {
    let debate = store.debate(id)?;
    let logged = store.events(&debate.id)?;
    if logged.is_empty() {
        return rebuilt_events(registry, store, &debate);
    }
    let mut events = vec![created(registry, &debate)];
    // How each run ended is the debate row's to say, once, at the end.
    events.extend(logged.into_iter().filter(within_the_run));
    events.extend(debate.ending());
    Ok(events)
}

/// Whether a logged event belongs between a replay's start and its ending: how each run began
/// and ended is the debate row's to say, once.
fn within_the_run(event: &Event) -> bool {
    !matches!(
        event,
        Event::DebateCreated { .. } | Event::DebateCompleted { .. } | Event::Error { .. }
    )
}

/// The events of a debate journaled before the event log, rebuilt from its tables in the
/// moderated protocol's order (the only protocol there was).
fn rebuilt_events(
    registry: &Registry,
    store: &Store,
    debate: &Debate,
) -> Result<Vec<Event>, StoreError> {
    let turns = store.turns(&debate.id)?;
    let checkpoints = store.checkpoints(&debate.id)?;
    let annotations = store.annotations(&debate.id)?;
    let synthesis = store.synthesis(&debate.id)?;
    let settings: Option<DebateSettings> = serde_json::from_value(debate.config.clone()).ok();
    let mut events = vec![created(registry, debate)];
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
    events.extend(debate.ending());
    Ok(events)
}

/// The debate as it was created (a replay starts from the beginning, never as a resume).
fn created(registry: &Registry, debate: &Debate) -> Event {
    Event::DebateCreated {
        id: debate.id.clone(),
        question: debate.question.clone(),
        protocol: debate.protocol.clone(),
        resumed: false,
        presentation: session::presentation(registry, &debate.protocol),
    }
}

/// How often a follower without a socket (its owner serves none) looks in the journal: at most
/// four times a second.
const FOLLOW_POLL: std::time::Duration = std::time::Duration::from_millis(250);

/// A debate another process is running, followed from the journal and its socket: what has
/// happened first, then each thing as it happens, until it stops running.
pub struct Following {
    store: Store,
    id: String,
    /// The last journaled event taken.
    seq: i64,
    listener: Option<crate::live::Listener>,
    /// When the journal is next looked in, without a socket: kept across calls, since a
    /// caller may drop a call to `next` (a key pressed meanwhile) and call again.
    next_poll: tokio::time::Instant,
    done: bool,
}

/// Starts following debate `id`: the socket is joined before the journal is read, so nothing
/// that happens between is missed. Returns the events so far.
pub async fn follow(
    registry: &Registry,
    store: &Store,
    id: &str,
) -> Result<(Vec<Event>, Following), StoreError> {
    let debate = store.debate(id)?;
    let listener = match store.live_dir() {
        Some(dir) => crate::live::Listener::connect(&dir, &debate.id).await,
        None => None,
    };
    let mut following = Following {
        store: store.clone(),
        id: debate.id.clone(),
        seq: 0,
        listener,
        next_poll: tokio::time::Instant::now(),
        done: false,
    };
    let mut events = vec![created(registry, &debate)];
    events.extend(following.journaled()?);
    Ok((events, following))
}

impl Following {
    /// Whether a socket carries what happens (else the journal is looked in, four times a
    /// second).
    pub fn live(&self) -> bool {
        self.listener.is_some()
    }

    /// What happened next (a stream delta, or the events journaled since); `None` once the
    /// debate has stopped running and its ending was given.
    pub async fn next(&mut self) -> Option<Vec<Event>> {
        if self.done {
            return None;
        }
        loop {
            let Some(listener) = &mut self.listener else {
                tokio::time::sleep_until(self.next_poll).await;
                self.next_poll = tokio::time::Instant::now() + FOLLOW_POLL;
                let events = self.journaled().ok()?;
                if !events.is_empty() {
                    return Some(events);
                }
                return self
                    .ending_if_stopped()
                    .map(|ending| ending.unwrap_or_default());
            };
            match listener.next().await {
                crate::live::Heard::Delta(delta) => return Some(vec![*delta]),
                crate::live::Heard::Journaled => {
                    let events = self.journaled().ok()?;
                    if !events.is_empty() {
                        return Some(events);
                    }
                }
                // The owner stopped serving: the journal says the rest.
                crate::live::Heard::Closed => self.listener = None,
            }
        }
    }

    /// The events journaled since the last taken, as a replay shows them.
    fn journaled(&mut self) -> Result<Vec<Event>, StoreError> {
        let new = self.store.events_after(&self.id, self.seq)?;
        if let Some((seq, _)) = new.last() {
            self.seq = *seq;
        }
        Ok(new
            .into_iter()
            .map(|(_, event)| event)
            .filter(within_the_run)
            .collect())
    }

    /// Once the debate no longer runs: its ending, and no more. `Some(None)` while it runs.
    fn ending_if_stopped(&mut self) -> Option<Option<Vec<Event>>> {
        let debate = self.store.debate(&self.id).ok()?;
        if debate.status == crate::debate::DebateStatus::Running {
            return Some(None);
        }
        self.done = true;
        let mut events = self.journaled().unwrap_or_default();
        events.extend(debate.ending());
        Some(Some(events))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::debate::DebateStatus;

    fn notice(message: &str) -> Event {
        Event::Notice {
            message: message.into(),
        }
    }

    /// With nobody serving a socket, a follower reads the journal (no more than four times a
    /// second) for what is new, and gives the ending once the debate stops running.
    #[tokio::test(start_paused = true)]
    async fn a_follower_without_a_socket_reads_the_journal_until_the_debate_stops() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("moot.db")).unwrap();
        store
            .create_debate(&crate::store::running_debate("DEB-follow1"))
            .unwrap();
        let lease = store.acquire_lease("DEB-follow1").unwrap();
        store
            .record_event("DEB-follow1", &notice("before"))
            .unwrap();
        let (events, mut following) = follow(&crate::protocol::builtin(), &store, "DEB-follow1")
            .await
            .unwrap();
        assert!(!following.live(), "nobody serves a socket");
        assert_eq!(
            events.len(),
            2,
            "created, then what the journal holds: {events:?}"
        );
        assert_eq!(events[1], notice("before"));
        store.record_event("DEB-follow1", &notice("after")).unwrap();
        let started = tokio::time::Instant::now();
        assert_eq!(following.next().await, Some(vec![notice("after")]));
        assert_eq!(following.next().await, Some(vec![]), "nothing new yet");
        assert!(
            started.elapsed() >= FOLLOW_POLL,
            "the journal is not read more than four times a second"
        );
        store
            .set_status("DEB-follow1", DebateStatus::Completed, None)
            .unwrap();
        drop(lease);
        let ending = following.next().await.unwrap();
        assert!(matches!(
            ending.last(),
            Some(Event::DebateCompleted {
                status: DebateStatus::Completed,
                ..
            })
        ));
        assert_eq!(following.next().await, None);
    }
}
