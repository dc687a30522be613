//! A running debate from another terminal: headless `--checkpoints wait` serves its events on
//! a private socket beside the journal and waits for answers given elsewhere (`moot approve`).

use crate::*;

/// A headless debate that waits answers nothing itself: each question is answered by `moot
/// approve` from another process, through the journal, and the debate goes on with it. While
/// it runs, its socket is private to its owner; once it ends, the socket is gone.
#[test]
fn a_waiting_headless_debate_goes_on_with_answers_from_another_terminal() {
    use std::os::unix::fs::PermissionsExt;
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    let (mut child, mut reader) = home.spawn(
        &server,
        &[
            "--headless",
            "--checkpoints",
            "wait",
            "--no-lessons",
            "--max-rounds",
            "2",
            QUESTION,
        ],
    );
    let started = read_until(&mut reader, |e| e["type"] == "checkpoint");
    let id = started[0]["id"].as_str().unwrap().to_string();
    let socket = home
        .database()
        .parent()
        .unwrap()
        .join("live")
        .join(format!("{id}.sock"));
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the socket is its owner's alone");
    let mut answered = 0;
    loop {
        let approve = home.run(None, &["approve", &id]);
        assert_eq!(approve.status.code(), Some(0), "{}", stderr(&approve));
        assert!(String::from_utf8_lossy(&approve.stdout).contains("it goes on"));
        answered += 1;
        let next = read_until(&mut reader, |e| {
            e["type"] == "checkpoint" || e["type"] == "debate_completed"
        });
        assert!(
            of_type(&next, "checkpoint_answered").len() == 1,
            "the answer was taken: {next:?}"
        );
        if next.last().unwrap()["type"] == "debate_completed" {
            break;
        }
        assert!(answered < 6, "too many questions: {next:?}");
    }
    assert!(child.wait().unwrap().success());
    assert!(!socket.exists(), "the socket goes with the debate");
    let answers = show_json(&home, &id)["checkpoints"].clone();
    let by: Vec<&str> = answers
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["answered_by"].as_str().unwrap())
        .collect();
    assert!(
        !by.is_empty() && by.iter().all(|b| b.ends_with("from another terminal")),
        "{by:?}"
    );
    // Nothing waits now: approve says so.
    let late = home.run(None, &["approve", &id]);
    assert_eq!(late.status.code(), Some(2));
    assert!(
        stderr(&late).contains("waits at no gate or question"),
        "{}",
        stderr(&late)
    );
}
