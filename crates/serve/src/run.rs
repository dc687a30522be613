//! How the server runs a debate: on a thread of its own with a current-thread runtime, as the
//! command line does (the engine's futures stay on the thread that started them), its controls
//! channel kept open so every question waits for an answer from the journal, its deltas handed
//! to SSE clients; and, at start, the debates it was running when it died, resumed.

use super::{Admitted, Live, Running, Server};
use crate::debate::{DebateStatus, Event, Initiator};
use crate::session::DebateSettings;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Why a debate could not start, in the session's own words.
#[derive(Debug, thiserror::Error)]
#[error("{why}")]
pub(super) struct NotStarted {
    why: String,
    /// Another driver holds it, or ran it to its end first: nothing is wrong here.
    elsewhere: bool,
}

impl NotStarted {
    fn new(why: impl ToString) -> NotStarted {
        NotStarted {
            why: why.to_string(),
            elsewhere: false,
        }
    }
}

impl From<crate::session::SessionError> for NotStarted {
    fn from(error: crate::session::SessionError) -> NotStarted {
        use crate::session::SessionError;
        use crate::store::StoreError;
        let elsewhere = matches!(
            error,
            SessionError::Store(StoreError::InUse { .. }) | SessionError::NotResumable { .. }
        );
        NotStarted {
            why: error.to_string(),
            elsewhere,
        }
    }
}

/// A debate to run: a new one, or one resumed from the journal.
pub(super) enum Start {
    New {
        question: String,
        settings: Box<DebateSettings>,
    },
    /// A stored debate, picked up where its journal left it; `why`, if given, is journaled as
    /// its first notice once this server holds its lease.
    Resume { id: String, why: Option<String> },
}

/// Starts the debate in the place it was admitted to and returns its id once the journal holds
/// it, or why it could not start (the place is given back then, or when the debate ends).
pub(super) async fn spawn(
    server: &Arc<Server>,
    start: Start,
    place: Admitted,
) -> Result<String, NotStarted> {
    let (events, mut received) = tokio::sync::mpsc::unbounded_channel();
    let (controls_kept, controls) = tokio::sync::mpsc::unbounded_channel();
    let (cancel, cancelled) = tokio::sync::oneshot::channel::<()>();
    let (done, mut finished) = tokio::sync::oneshot::channel::<Result<(), NotStarted>>();
    let store = server.store.clone();
    let host = server.host.clone();
    std::thread::Builder::new()
        .name("moot-debate".into())
        .spawn(move || {
            let outcome = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(NotStarted::new)
                .and_then(|runtime| {
                    runtime.block_on(async move {
                        let _controls = controls_kept;
                        let interrupt = async move {
                            if cancelled.await.is_err() {
                                std::future::pending::<()>().await;
                            }
                        };
                        let wiring = crate::session::Wiring {
                            events,
                            controls,
                            answerer: "the API".into(),
                        };
                        let finish = match start {
                            Start::New { question, settings } => {
                                crate::session::start(
                                    host, store, &question, *settings, wiring, interrupt,
                                )
                                .await
                            }
                            Start::Resume { id, why } => {
                                crate::session::resume(
                                    host,
                                    store,
                                    &id,
                                    crate::session::ResumeChanges {
                                        notice: why,
                                        ..Default::default()
                                    },
                                    wiring,
                                    interrupt,
                                )
                                .await
                            }
                        };
                        finish.map(|_| ()).map_err(NotStarted::from)
                    })
                });
            let _ = done.send(outcome);
        })
        .map_err(|e| NotStarted::new(format!("cannot start the debate's thread: {e}")))?;
    // The id comes with the first event; a debate that cannot start says why instead.
    let id = loop {
        match received.recv().await {
            Some(Event::DebateCreated { id, .. }) => break id,
            Some(_) => continue,
            None => {
                return Err(match (&mut finished).await {
                    Ok(Err(e)) => e,
                    _ => NotStarted::new("the debate ended before it started"),
                });
            }
        }
    };
    let (live, _) = tokio::sync::broadcast::channel(1024);
    let journaled = Arc::new(AtomicU64::new(0));
    let progress = Arc::new(std::sync::Mutex::new(super::watchdog::Progress::new()));
    server.running().insert(
        id.clone(),
        Running {
            cancel: Some(cancel),
            live: live.clone(),
            journaled: journaled.clone(),
            progress: progress.clone(),
        },
    );
    let keeper = server.clone();
    let ended = id.clone();
    tokio::spawn(async move {
        while let Some(event) = received.recv().await {
            progress
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .saw(&event);
            let told = match event {
                Event::TurnDelta { .. } => Live::Delta(Box::new(event)),
                // Journaled before it is sent here, so a stream that reads the journal after
                // counting it finds it there.
                _ => Live::Journaled(journaled.fetch_add(1, Ordering::AcqRel) + 1),
            };
            let _ = live.send(told);
        }
        // A debate that stops with an error after it started says so to whoever runs the
        // server (its journal says what it can).
        if let Ok(Err(why)) = finished.await {
            eprintln!("moot serve: {ended}: {why}");
        }
        keeper.running().remove(&ended);
        drop(place);
    });
    Ok(id)
}

/// On a journal several replicas share: looks, six times per `[serve] takeover_seconds`,
/// for debates a server started whose holder is gone (on this host its process ended; on
/// another its heartbeat stopped), and resumes each one this replica has room for where its
/// journal left it. Replicas that reach for one debate at once meet at its lease in the
/// journal, which exactly one of them gets; the others leave it.
pub(super) async fn take_over_orphans(server: Arc<Server>) {
    // A dead holder's lease runs out at most two thirds of `takeover_seconds` after its
    // death; looking every sixth finds it by five sixths, leaving the rest for resuming its
    // debates one after another.
    let every = super::takeover(&server.config) / 6;
    loop {
        tokio::time::sleep(every).await;
        let taken = take_over(&server).await;
        if !taken.is_empty() {
            eprintln!(
                "moot serve: took over {} debate(s) whose server stopped: {}",
                taken.len(),
                taken.join(", ")
            );
        }
    }
}

/// The notice a debate taken over from a dead replica journals first.
const TAKEN_OVER: &str =
    "its server stopped: another moot serve on this journal took it over where its journal left it";

/// One look for orphaned debates (`take_over_orphans`); the ids taken over.
async fn take_over(server: &Arc<Server>) -> Vec<String> {
    let mut taken = Vec::new();
    for id in orphans(server) {
        // At its limit, a replica leaves the rest to the others.
        let Some(place) = server.admit() else {
            break;
        };
        let resume = Start::Resume {
            id: id.clone(),
            why: Some(TAKEN_OVER.into()),
        };
        match spawn(server, resume, place).await {
            Ok(id) => taken.push(id),
            // Another replica took it first, or ran it to its end: its lease says so.
            Err(why) if why.elsewhere => {}
            Err(why) => eprintln!("moot serve: {id} could not be taken over: {why}"),
        }
    }
    taken
}

/// The debates a server started whose holder is gone (they read as interrupted), oldest
/// first. A debate started from the command line is its starter's, never a server's.
fn orphans(server: &Server) -> Vec<String> {
    let Ok(held) = server.store.running_ids() else {
        return Vec::new();
    };
    held.into_iter()
        .filter(|id| {
            server.store.debate(id).is_ok_and(|debate| {
                // `served` marks it; a debate from before the mark was always
                // `initiated_by: server`.
                debate.status == DebateStatus::Interrupted
                    && (debate.config.get("served").and_then(|v| v.as_bool()) == Some(true)
                        || debate.config.get("initiated_by").and_then(|v| v.as_str())
                            == Some(Initiator::Server.to_string().as_str()))
            })
        })
        .collect()
}

/// Resumes every debate a server started that was left running when its process died (its
/// lease is dead, so it reads as interrupted): each says so in its events and goes on where
/// the journal left it, waiting again at a gate or checkpoint it waited at. A debate someone
/// started from the command line is never touched. Returns the ids resumed.
pub(super) async fn recover(server: &Arc<Server>) -> Vec<String> {
    let mut resumed = Vec::new();
    for id in orphans(server) {
        let resume = Start::Resume {
            id: id.clone(),
            why: Some(
                "moot serve restarted: this debate is resumed where its journal left it".into(),
            ),
        };
        match spawn(server, resume, server.admit_anyway()).await {
            Ok(id) => resumed.push(id),
            Err(why) => eprintln!("moot serve: {id} could not be resumed: {why}"),
        }
    }
    resumed
}
