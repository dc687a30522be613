//! The real binary in a pseudo-terminal against the stand-in server: the workbench opens,
//! a guide is typed at the first checkpoint, the debate is ended at the second, and both the
//! screen (through a VT100 emulator) and the journal show it. The terminal is restored after.

mod support;

use support::pty::{Pty, moot};
use support::{Behaviour, StandIn};

#[test]
fn the_workbench_takes_guidance_then_ends_and_restores_the_terminal() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = tempfile::tempdir().unwrap();
    // Ending is rebound to x, to show the keymap is configurable.
    std::fs::write(
        home.path().join("config.toml"),
        "[ui.keys]\nend = [\"x\"]\n",
    )
    .unwrap();
    let mut pty = Pty::spawn(&mut moot(
        home.path(),
        Some(&server.openai_base()),
        &[
            "--max-rounds",
            "3",
            "Should we use Redis or PostgreSQL for caching?",
        ],
    ));

    let screen = pty.wait_for("Round 1 complete");
    assert!(
        screen.contains("Operational Simplicity") && screen.contains("Performance Advocate"),
        "{screen}"
    );
    assert!(screen.contains("round 1 · argument"), "{screen}");
    pty.press(b"g");
    pty.wait_for("Guidance for the next round");
    pty.press(b"Focus on our PostgreSQL experience");
    pty.wait_for("Focus on our PostgreSQL experience");
    pty.press(b"\x13"); // Ctrl-S
    let screen = pty.wait_for("Round 2 complete");
    assert!(screen.contains("round 2 · argument"), "{screen}");
    // The modal and the footer follow the rebinding.
    let screen = pty.wait_for("[x] end");
    assert!(!screen.contains("[e]"), "{screen}");
    pty.wait_for(" x end ");
    pty.press(b"e");
    pty.press(b"x");
    // The synthesis opens for approval; approving it ends the debate.
    let screen = pty.wait_for("Approve this synthesis?");
    assert!(
        screen.contains("[a] approve   [r] ask for one revision"),
        "{screen}"
    );
    pty.press(b"a");
    // The approved record stays open, now naming its file; w writes the follow-up issue
    // draft the design note offers; Esc goes back to the panes.
    pty.wait_for("docs/decisions/");
    pty.press(b"w");
    let screen = pty.wait_for("follow-up issue draft:");
    assert!(screen.contains("-issue.md"), "{screen}");
    pty.press(b"\x1b");
    let screen = pty.wait_for("completed ·");
    assert!(screen.contains("round 2 of 3"), "{screen}");
    pty.press(b"q");
    let status = pty.wait_exit();
    assert_eq!(status.code(), Some(0));
    // The alternate screen was left and the cursor shown again.
    let raw = String::from_utf8_lossy(&pty.raw.lock().unwrap()).to_string();
    let entered = raw
        .find("\u{1b}[?1049h")
        .expect("entered the alternate screen");
    let left = raw
        .rfind("\u{1b}[?1049l")
        .expect("left the alternate screen");
    assert!(left > entered);
    assert!(
        raw[left..].contains("\u{1b}[?25h") || raw.rfind("\u{1b}[?25h").unwrap() > entered,
        "cursor shown again"
    );
    assert!(
        raw.contains("\u{1b}[?2026h"),
        "frames are drawn inside synchronized updates"
    );

    // The journal holds the guidance and the end.
    let output = moot(home.path(), None, &["list", "--json"])
        .output()
        .unwrap();
    let list: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let id = list[0]["id"].as_str().unwrap();
    assert_eq!(list[0]["status"], "completed");
    let output = moot(home.path(), None, &["show", id, "--json"])
        .output()
        .unwrap();
    let shown: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(shown["checkpoints"][0]["decision"], "guide");
    assert_eq!(
        shown["checkpoints"][0]["guidance"],
        "Focus on our PostgreSQL experience"
    );
    assert_eq!(shown["checkpoints"][1]["decision"], "end");
    assert_eq!(shown["checkpoints"][2]["kind"], "approval");
    let approver = shown["checkpoints"][2]["answered_by"].as_str().unwrap();
    assert!(approver.ends_with(" at the workbench"), "{approver}");
    let record = shown["synthesis"]["markdown"].as_str().unwrap();
    assert!(
        record.contains(&format!("**Approval:** approved by {approver}")),
        "{record}"
    );
    assert!(
        server
            .seen()
            .iter()
            .filter(|s| s.round == 2 && s.kind == "argument")
            .all(|s| s
                .body
                .to_string()
                .contains("Focus on our PostgreSQL experience"))
    );
}

#[test]
fn a_dropped_connection_pauses_the_debate_and_leaves_the_terminal_clean() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), "").unwrap();
    let moot = |args: &[&str]| moot(home.path(), Some(&server.openai_base()), args);
    let mut pty = Pty::spawn(&mut moot(&[
        "--max-rounds",
        "3",
        "Should we use Redis or PostgreSQL for caching?",
    ]));
    pty.wait_for("Round 1 complete");
    // What sshd does when the connection drops.
    // SAFETY: signalling our own child.
    assert_eq!(
        unsafe { libc::kill(pty.pid() as libc::pid_t, libc::SIGHUP) },
        0
    );
    let status = pty.wait_exit();
    assert_eq!(status.code(), Some(130), "interrupted and paused");
    let raw = String::from_utf8_lossy(&pty.raw.lock().unwrap()).to_string();
    assert!(
        raw.rfind("\u{1b}[?1049l") > raw.rfind("\u{1b}[?1049h"),
        "left the alternate screen"
    );
    let output = moot(&["list", "--json"]).output().unwrap();
    let list: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(list[0]["status"], "paused");
    let id = list[0]["id"].as_str().unwrap().to_string();
    // On a terminal, resume opens the workbench where the debate stopped: the checkpoint of
    // round 1 is asked again; quitting pauses it once more.
    let mut pty = Pty::spawn(&mut moot(&["resume", &id]));
    let screen = pty.wait_for("Round 1 complete");
    assert!(screen.contains(&id), "{screen}");
    pty.press(b"q");
    assert_eq!(pty.wait_exit().code(), Some(130));
    // --headless runs it as NDJSON, even on a terminal.
    let mut pty = Pty::spawn(&mut moot(&[
        "resume",
        &id,
        "--headless",
        "--no-checkpoints",
    ]));
    pty.wait_for("\"type\":\"debate_completed\"");
    assert_eq!(pty.wait_exit().code(), Some(0));
    assert!(
        !String::from_utf8_lossy(&pty.raw.lock().unwrap()).contains("\u{1b}[?1049h"),
        "no alternate screen"
    );
}

#[test]
fn sigterm_ends_the_workbench_after_the_debate_has_finished() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), "").unwrap();
    let demo =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/demo/redis-vs-postgres.json");
    let mut pty = Pty::spawn(&mut moot(
        home.path(),
        None,
        &[
            "--no-checkpoints",
            "--no-write",
            "--script",
            demo.to_str().unwrap(),
            "Should we use Redis or PostgreSQL for caching?",
        ],
    ));
    pty.wait_for("completed ·");
    // SAFETY: signalling our own child.
    assert_eq!(
        unsafe { libc::kill(pty.pid() as libc::pid_t, libc::SIGTERM) },
        0
    );
    let status = pty.wait_exit();
    assert_eq!(status.code(), Some(0), "the debate had completed");
}

#[test]
fn a_person_plays_an_arena_seat_in_the_workbench() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), "").unwrap();
    let mut pty = Pty::spawn(&mut moot(
        home.path(),
        Some(&server.openai_base()),
        &[
            "--protocol",
            "arena",
            "--seat",
            "Proponent",
            "--seat",
            "human:Skeptic",
            "--rounds",
            "2",
            "Adopt a 4-day work week",
        ],
    ));
    // The Proponent opens; the person's editor opens for the Skeptic's opening.
    let screen = pty.wait_for("Your turn: what your seat says");
    assert!(screen.contains("Proponent"), "{screen}");
    pty.press(b"Where is the data? Turn 1 cites one pilot.");
    pty.wait_for("Turn 1 cites one pilot.");
    pty.press(b"\x13"); // Ctrl-S
    // Round 2: the Proponent closes, then the person closes.
    // The person's pane is in front (its first turn above the editor) and a fresh, empty
    // editor is open (its placeholder shows; the first one held text when it closed).
    pty.wait_until(|s| {
        s.contains("Make your case, as your seat would") && s.contains("Where is the data?")
    });
    pty.press(b"A second pilot first.");
    pty.wait_for("A second pilot first.");
    pty.press(b"\x13");
    let screen = pty.wait_for("completed ·");
    assert!(screen.contains("round 1 · opening"), "{screen}");
    pty.press(b"q");
    assert_eq!(pty.wait_exit().code(), Some(0));
    // The person's words are the Skeptic's turns in the journal, with who wrote them.
    let list = std::process::Command::new(env!("CARGO_BIN_EXE_moot"))
        .args(["list", "--json"])
        .env("MOOT_HOME", home.path().join("data"))
        .env("MOOT_CONFIG", home.path().join("config.toml"))
        .output()
        .unwrap();
    let listed: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    let id = listed[0]["id"].as_str().unwrap().to_string();
    let shown = std::process::Command::new(env!("CARGO_BIN_EXE_moot"))
        .args(["show", &id, "--json"])
        .env("MOOT_HOME", home.path().join("data"))
        .env("MOOT_CONFIG", home.path().join("config.toml"))
        .output()
        .unwrap();
    let shown: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    let skeptic: Vec<&serde_json::Value> = shown["arena_result"]["turns"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["agent_id"] == "skeptic")
        .collect();
    assert_eq!(
        skeptic[0]["argument"]["argument_text"],
        "Where is the data? Turn 1 cites one pilot."
    );
    assert_eq!(skeptic[0]["argument"]["references"][0], "turn:1");
    assert_eq!(
        skeptic[1]["argument"]["argument_text"],
        "A second pilot first."
    );
}
