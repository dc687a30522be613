//! The headless face: one JSON object per event on stdout (sanitized), checkpoint answers
//! from stdin (`c`, `g TEXT`, `e`) or answered automatically.

use crate::debate::{Control, DebateStatus, Event};
use crate::session::{self, Finish, SessionError, Wiring};
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
    /// Nobody here answers: each question waits for another terminal (the workbench following
    /// it, `moot approve`) until the checkpoint timeout.
    Wait,
}

/// What stderr says when the debate stops for someone elsewhere: at an approval gate (nobody
/// on this side decides one), or at any question under `--checkpoints wait`.
fn waiting_notice(event: &Event, debate: &str, answers: CheckpointAnswers) -> Option<String> {
    match event {
        Event::GateRequested {
            gate,
            point,
            round,
            timeout_seconds,
            ..
        } => Some(gate_notice(
            debate,
            gate,
            point,
            *round,
            *timeout_seconds,
            answers == CheckpointAnswers::Stdin,
        )),
        Event::Checkpoint {
            kind,
            round,
            timeout_seconds,
            ..
        } if answers == CheckpointAnswers::Wait => Some(format!(
            "{debate} waits for an answer ({}); answer it from another terminal: `moot open \
             {debate}` (or Enter on it in `moot history`), or `moot approve {debate}` to go on; \
             unanswered, it pauses in {}",
            crate::debate::Stage::Asking {
                kind: *kind,
                round: *round
            },
            crate::debate::spoken_duration(*timeout_seconds)
        )),
        _ => None,
    }
}

/// What stderr says when a debate stops at an approval gate: nobody on this side answers
/// one, so it names the commands that decide it from another terminal.
fn gate_notice(
    debate: &str,
    gate: &str,
    point: &str,
    round: u32,
    timeout_seconds: u64,
    on_stdin: bool,
) -> String {
    format!(
        "{debate} waits at the approval gate {} ({gate}); decide it {}from another terminal with \
         `moot approve {debate}` or `moot reject {debate} --reason \"…\"`; undecided, it pauses \
         in {}",
        crate::debate::gate_place(point, round),
        if on_stdin {
            "here (`approve`, or `reject REASON`) or "
        } else {
            ""
        },
        crate::debate::spoken_duration(timeout_seconds)
    )
}

/// Reads answers from standard input, a line each (`c`, `g TEXT`, `e`…), until it ends or
/// nobody listens; a bad line is reported on stderr with its number and skipped.
async fn read_answers(control_tx: mpsc::UnboundedSender<Control>) {
    let mut input = tokio::io::BufReader::new(tokio::io::stdin());
    let mut line = Vec::new();
    let mut number = 0;
    // Bytes, not lines of text: one line that is not UTF-8 is reported and skipped
    // instead of ending every later answer.
    while matches!(input.read_until(b'\n', &mut line).await, Ok(read) if read > 0) {
        number += 1;
        let text = match std::str::from_utf8(&line) {
            Ok(text) => text.trim().to_string(),
            Err(_) => {
                eprintln!("moot: line {number} of standard input is not UTF-8; ignored");
                line.clear();
                continue;
            }
        };
        line.clear();
        if text.is_empty() {
            continue;
        }
        match Control::parse_line(&text) {
            Ok(control) => {
                if control_tx.send(control).is_err() {
                    break;
                }
            }
            Err(message) => eprintln!("moot: line {number}: {message}"),
        }
    }
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
        tokio::spawn(read_answers(control_tx.clone()));
    }

    // Only auto mode answers from the printer; with stdin, the channel closes at end of input.
    let auto_tx = (answers == CheckpointAnswers::Auto).then(|| control_tx.clone());
    let printer = tokio::spawn(async move {
        let stdout = std::io::stdout();
        let mut broken = false;
        let mut debate = String::new();
        while let Some(event) = event_rx.recv().await {
            if let Event::DebateCreated { id, .. } = &event {
                debate = id.clone();
            }
            if let Some(notice) = waiting_notice(&event, &debate, answers) {
                eprintln!("moot: {notice}");
            }
            if let Some(auto_tx) = &auto_tx {
                match &event {
                    Event::Checkpoint { kind, .. } => {
                        if let Some(answer) = kind.default_answer() {
                            let _ = auto_tx.send(answer);
                        }
                    }
                    Event::ClarificationRequested { .. } => {
                        let _ = auto_tx.send(Control::Continue);
                    }
                    _ => {}
                }
            }
            if broken {
                continue;
            }
            let mut out = stdout.lock();
            // A closed pipe (`| head`) stops the printing, not the debate.
            if writeln!(out, "{}", crate::live::event_line(&event))
                .and_then(|_| out.flush())
                .is_err()
            {
                broken = true;
            }
        }
    });
    // Waiting keeps the line open, so no question takes its default for want of answers.
    let waiting = (answers == CheckpointAnswers::Wait).then_some(control_tx);

    let answerer = match answers {
        CheckpointAnswers::Auto => "headless auto-answer (no --checkpoints stdin)".to_string(),
        CheckpointAnswers::Stdin => format!("{} on standard input", crate::signals::user()),
        // Every answer comes from elsewhere, journaled with who gave it.
        CheckpointAnswers::Wait => format!("{} headless", crate::signals::user()),
    };
    let result = session(Wiring {
        events: event_tx,
        controls: control_rx,
        answerer,
    })
    .await;
    if let Err(error) = &result {
        // Usage errors happen before any event; say them once, plainly, on stderr.
        eprintln!("moot: {error}");
    }
    drop(waiting);
    let _ = printer.await;
    if let Ok(finish) = &result {
        match finish.status {
            DebateStatus::Paused => eprintln!(
                "moot: {} is paused; continue with: moot resume {}",
                finish.id, finish.id
            ),
            DebateStatus::Failed if finish.recorded => eprintln!(
                "moot: {} ({} is stored as failed with what completed: moot resume {} retries it)",
                finish.error.as_deref().unwrap_or("the debate failed"),
                finish.id,
                finish.id
            ),
            DebateStatus::Failed => eprintln!(
                "moot: {} ({} could not be marked failed in the journal; it shows as \
                 interrupted, with every turn recorded before this: moot resume {})",
                finish.error.as_deref().unwrap_or("the debate failed"),
                finish.id,
                finish.id
            ),
            _ => {}
        }
    }
    session::exit_code(&result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_lines_are_sanitized_json() {
        let line = crate::live::event_line(&Event::TurnDelta {
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
                recorded: true,
            })
        };
        use session::exit_code;
        assert_eq!(exit_code(&done(DebateStatus::Completed, false)), 0);
        assert_eq!(exit_code(&done(DebateStatus::Failed, false)), 1);
        assert_eq!(exit_code(&done(DebateStatus::Paused, false)), 3);
        assert_eq!(exit_code(&done(DebateStatus::Paused, true)), 130);
        assert_eq!(exit_code(&Err(SessionError::EmptyQuestion)), 2);
        assert_eq!(
            exit_code(&Err(SessionError::Environment("no cwd".into()))),
            1
        );
    }
}
