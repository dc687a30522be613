//! Drives a debate session in-process with answers queued up front, collecting every event it
//! announces.

use moot::debate::{Control, Event};
use moot::session::{Finish, SessionError, Wiring};
use tokio::sync::mpsc;

/// Runs `session` with `controls` queued as the answers (given by `answerer`), and returns how
/// it finished with everything it announced.
pub async fn answered<F>(
    controls: Vec<Control>,
    answerer: &str,
    session: impl FnOnce(Wiring) -> F,
) -> (Finish, Vec<Event>)
where
    F: std::future::Future<Output = Result<Finish, SessionError>>,
{
    let (events, mut events_rx) = mpsc::unbounded_channel();
    let (controls_tx, controls_rx) = mpsc::unbounded_channel();
    for control in controls {
        controls_tx.send(control).unwrap();
    }
    let finish = session(Wiring {
        events,
        controls: controls_rx,
        answerer: answerer.into(),
    })
    .await
    .unwrap();
    drop(controls_tx);
    let mut seen = Vec::new();
    while let Some(event) = events_rx.recv().await {
        seen.push(event);
    }
    (finish, seen)
}
