//! The server's deadlock watchdog (design note 004): a debate that makes no progress for
//! `[serve] stall_seconds` while no person is asked anything is flagged once in its events
//! (`flag` `stalled`, saying what it waits on) and its stage, which `moot list` shows.

use super::Server;
use crate::debate::{Event, FlagKind, Phase, Stage};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the watchdog looks.
const LOOK: Duration = Duration::from_millis(500);
/// The stall limit when neither `--stall-seconds` nor `[serve] stall_seconds` gives one.
const DEFAULT_STALL_SECONDS: u64 = 300;

/// How a debate is getting on: when it last did anything, what it is waiting on, whether it
/// was flagged for this stall already.
#[derive(Debug)]
pub(super) struct Progress {
    at: Instant,
    round: u32,
    /// Steps started and not finished: (seat, phase) by round.
    waiting: BTreeMap<(String, Phase), u32>,
    flagged: bool,
}

impl Progress {
    pub(super) fn new() -> Progress {
        Progress {
            at: Instant::now(),
            round: 0,
            waiting: BTreeMap::new(),
            flagged: false,
        }
    }

    /// Any event is progress; a step started or finished changes what it waits on.
    pub(super) fn saw(&mut self, event: &Event) {
        self.at = Instant::now();
        self.flagged = false;
        match event {
            Event::RoundStarted { round, .. } => self.round = *round,
            Event::TurnStarted {
                round, phase, seat, ..
            } => {
                self.waiting.insert((seat.clone(), *phase), *round);
            }
            Event::TurnCompleted { phase, seat, .. } => {
                self.waiting.remove(&(seat.clone(), *phase));
            }
            _ => {}
        }
    }

    /// What it waits on, as a person reads it: "B's argument (round 2)".
    fn waiting_on(&self) -> String {
        if self.waiting.is_empty() {
            return "nothing moot can name (between steps)".into();
        }
        self.waiting
            .iter()
            .map(|((seat, phase), round)| format!("{seat}'s {phase} (round {round})"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Looks at every running debate every half second until the server stops.
pub(super) async fn watch(server: Arc<Server>) {
    let limit = Duration::from_secs(
        server
            .args
            .stall_seconds
            .or(server.config.serve.stall_seconds)
            .unwrap_or(DEFAULT_STALL_SECONDS),
    );
    loop {
        tokio::time::sleep(LOOK).await;
        let stalled: Vec<(String, Arc<std::sync::Mutex<Progress>>)> = server
            .running()
            .iter()
            .map(|(id, running)| (id.clone(), running.progress.clone()))
            .collect();
        for (id, progress) in stalled {
            flag_if_stalled(&server, &id, &progress, limit);
        }
        if server.store.is_shared() {
            cancel_as_asked_elsewhere(&server);
        }
    }
}

/// Interrupts each debate this replica runs that another replica was asked to cancel (the
/// request waits in the shared journal until the replica that runs the debate takes it).
fn cancel_as_asked_elsewhere(server: &Server) {
    let Ok(asked) = server.store.cancel_requests() else {
        return;
    };
    // Only a debate run here is this replica's to take the request of.
    for id in asked
        .into_iter()
        .filter(|id| server.running().contains_key(id))
    {
        if !server
            .store
            .take_cancel_request(&id)
            .is_ok_and(|by| by.is_some())
        {
            continue;
        }
        let sender = server
            .running()
            .get_mut(&id)
            .and_then(|running| running.cancel.take());
        if let Some(sender) = sender {
            let _ = sender.send(());
        }
    }
}

fn flag_if_stalled(
    server: &Server,
    id: &str,
    progress: &std::sync::Mutex<Progress>,
    limit: Duration,
) {
    let mut progress = progress.lock().unwrap_or_else(|e| e.into_inner());
    if progress.flagged || progress.at.elapsed() < limit {
        return;
    }
    // Waiting on a person is not a stall.
    let asking = server.store.debate(id).is_ok_and(|debate| {
        matches!(
            debate.stage,
            Some(Stage::Asking { .. } | Stage::AtGate { .. })
        )
    });
    if asking {
        return;
    }
    progress.flagged = true;
    let seconds = progress.at.elapsed().as_secs();
    let waiting_on = progress.waiting_on();
    let seat = progress.waiting.keys().next().map_or_else(
        || crate::debate::MODERATOR.to_string(),
        |(seat, _)| seat.clone(),
    );
    let _ = server.store.record_event(
        id,
        &Event::Flag {
            round: progress.round,
            seat,
            kind: FlagKind::Stalled,
            detail: format!(
                "no progress for {} while waiting on {waiting_on}",
                crate::debate::spoken_duration(seconds)
            ),
        },
    );
    let _ = server.store.set_stage(
        id,
        Stage::Stalled {
            seconds,
            waiting_on,
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_knows_what_it_waits_on_and_any_event_resets_it() {
        let mut progress = Progress::new();
        progress.saw(&Event::RoundStarted {
            round: 2,
            limit: None,
        });
        progress.saw(&Event::TurnStarted {
            round: 2,
            phase: Phase::Argument,
            seat: "B".into(),
        });
        assert_eq!(progress.waiting_on(), "B's argument (round 2)");
        progress.flagged = true;
        progress.saw(&Event::TurnCompleted {
            round: 2,
            phase: Phase::Argument,
            seat: "B".into(),
            content: String::new(),
            moves: vec![],
            confidence: None,
            tokens_in: 0,
            tokens_out: 0,
            tokens_estimated: false,
            latency_ms: 0,
            provider: String::new(),
            model: String::new(),
            status: crate::debate::TurnStatus::Ok,
            note: None,
            replayed: false,
        });
        assert!(!progress.flagged);
        assert!(progress.waiting_on().starts_with("nothing"));
    }
}
