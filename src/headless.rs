//! The headless face: one JSON object per event on stdout (sanitized), checkpoint answers
//! from stdin (`c`, `g TEXT`, `e`) or answered automatically.

use crate::debate::{Control, DebateStatus, Event};
use crate::sanitize;
use crate::session::{Finish, SessionError, Wiring};
use std::future::Future;
use std::io::Write;
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;

/// How checkpoints are answered without a screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckpointAnswers {
    /// Every checkpoint continues at once.
    Auto,
    /// Lines from stdin: `c`, `g TEXT`, `e`.
    Stdin,
}

/// Exit codes: 0 done, 1 runtime failure, 2 usage or config error, 3 paused at a checkpoint
/// nobody answered, 130 interrupted (paused).
pub fn exit_code(result: &Result<Finish, SessionError>) -> i32 {
    match result {
        Ok(Finish {
            interrupted: true, ..
        }) => 130,
        Ok(Finish { status, .. }) => match status {
            DebateStatus::Completed | DebateStatus::Cancelled => 0,
            DebateStatus::Paused => 3,
            _ => 1,
        },
        Err(SessionError::Usage(_)) => 2,
        Err(SessionError::Runtime(_)) => 1,
    }
}

/// One event as a sanitized NDJSON line.
pub fn event_line(event: &Event) -> String {
    let mut value = serde_json::to_value(event).unwrap_or_else(
        |e| serde_json::json!({"type": "error", "message": format!("unprintable event: {e}")}),
    );
    sanitize::clean_json(&mut value);
    value.to_string()
}

/// Runs a session, printing its events as NDJSON until it ends; returns the exit code.
pub async fn run<F, Fut>(answers: CheckpointAnswers, session: F) -> i32
where
    F: FnOnce(Wiring) -> Fut,
    Fut: Future<Output = Result<Finish, SessionError>>,
{
    let (event_tx, mut event_rx) = mpsc::unbounded_channel::<Event>();
    let (control_tx, control_rx) = mpsc::unbounded_channel::<Control>();

    if answers == CheckpointAnswers::Stdin {
        let control_tx = control_tx.clone();
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if line.trim().is_empty() {
                    continue;
                }
                match Control::parse_line(&line) {
                    Ok(control) => {
                        if control_tx.send(control).is_err() {
                            break;
                        }
                    }
                    Err(message) => eprintln!("moot: {message}"),
                }
            }
        });
    }

    // Only auto mode answers from the printer; with stdin, the channel closes at end of input.
    let auto_tx = (answers == CheckpointAnswers::Auto).then(|| control_tx.clone());
    let printer = tokio::spawn(async move {
        let stdout = std::io::stdout();
        let mut broken = false;
        while let Some(event) = event_rx.recv().await {
            if let Some(auto_tx) = &auto_tx
                && matches!(
                    event,
                    Event::Checkpoint { .. } | Event::ClarificationRequested { .. }
                )
            {
                let _ = auto_tx.send(Control::Continue);
            }
            if broken {
                continue;
            }
            let mut out = stdout.lock();
            // A closed pipe (`| head`) stops the printing, not the debate.
            if writeln!(out, "{}", event_line(&event))
                .and_then(|_| out.flush())
                .is_err()
            {
                broken = true;
            }
        }
    });
    drop(control_tx);

    let result = session(Wiring {
        events: event_tx,
        controls: control_rx,
    })
    .await;
    if let Err(error) = &result {
        // Usage errors happen before any event; say them once, plainly, on stderr.
        eprintln!("moot: {error}");
    }
    let _ = printer.await;
    if let Ok(finish) = &result {
        match finish.status {
            DebateStatus::Paused => eprintln!(
                "moot: {} is paused; continue with: moot resume {}",
                finish.id, finish.id
            ),
            DebateStatus::Failed => eprintln!(
                "moot: {} ({} is stored as failed with what completed)",
                finish.error.as_deref().unwrap_or("the debate failed"),
                finish.id
            ),
            _ => {}
        }
    }
    exit_code(&result)
}

/// Resolves when the user interrupts (Ctrl-C), the terminal hangs up, or we are told to stop.
pub async fn interrupted() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).ok();
        let mut hangup = signal(SignalKind::hangup()).ok();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = async { match term.as_mut() { Some(s) => { s.recv().await; } None => std::future::pending().await } } => {}
            _ = async { match hangup.as_mut() { Some(s) => { s.recv().await; } None => std::future::pending().await } } => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_lines_are_sanitized_json() {
        let line = event_line(&Event::TurnDelta {
            seat: "A".into(),
            round: 1,
            phase: crate::debate::Phase::Argument,
            text: "hi\u{1b}]0;pwned\u{7} there\u{1b}[2J".into(),
        });
        assert_eq!(
            line,
            r#"{"type":"turn_delta","seat":"A","round":1,"phase":"argument","text":"hi there"}"#
        );
    }

    #[test]
    fn exit_codes_follow_the_contract() {
        let done = |status, interrupted| {
            Ok(Finish {
                id: "x".into(),
                status,
                interrupted,
                error: None,
            })
        };
        assert_eq!(exit_code(&done(DebateStatus::Completed, false)), 0);
        assert_eq!(exit_code(&done(DebateStatus::Failed, false)), 1);
        assert_eq!(exit_code(&done(DebateStatus::Paused, false)), 3);
        assert_eq!(exit_code(&done(DebateStatus::Paused, true)), 130);
        assert_eq!(exit_code(&Err(SessionError::Usage("x".into()))), 2);
    }
}
