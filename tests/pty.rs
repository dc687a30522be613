//! The real binary in a pseudo-terminal against the stand-in server: the workbench opens,
//! a guide is typed at the first checkpoint, the debate is ended at the second, and both the
//! screen (through a VT100 emulator) and the journal show it. The terminal is restored after.

mod support;

use support::pty::{Pty, alternate_screen, moot};
use support::serving::Serving;
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
    // Ending cannot be taken back: the first press asks, on the rebound key (U6).
    pty.wait_for("press x again to end the debate and synthesise");
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
    let raw = pty.output();
    let (entered, left) = alternate_screen(&raw);
    let entered = entered.expect("entered the alternate screen");
    let left = left.expect("left the alternate screen");
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
    // Started at the workbench: by the person there, as the listing and the record say.
    assert_eq!(list[0]["initiated_by"], "person");
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
    // U5: the person's guidance is part of the record.
    assert!(
        record.contains("## Your Guidance\n\n1. Focus on our PostgreSQL experience"),
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

/// A scratch home whose config is `config`.
fn home_with(config: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    home
}

/// U2: leaving gives the terminal back once, then says where the debate stands on its own
/// line: the main screen is left exactly once, and the message comes after it whole (a second
/// leave moved the cursor back to the message's start, where the prompt overwrote it).
#[test]
fn leaving_restores_the_terminal_once_and_the_last_message_stands_after_it() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = home_with("[lessons]\nenabled = false\n");
    let mut pty = Pty::spawn(&mut moot(
        home.path(),
        Some(&server.openai_base()),
        &[
            "--max-rounds",
            "3",
            "Should we use Redis or PostgreSQL for caching?",
        ],
    ));
    pty.wait_for("Round 1 complete");
    pty.press(b"q");
    let status = pty.wait_exit();
    assert_eq!(status.code(), Some(130), "paused by the person");
    let raw = pty.output();
    assert_eq!(
        raw.matches("\u{1b}[?1049l").count(),
        1,
        "the alternate screen is left once: {:?}",
        &raw[raw.len().saturating_sub(600)..]
    );
    let left = raw.rfind("\u{1b}[?1049l").unwrap();
    let after = &raw[left..];
    let message = after
        .find("is paused; continue with: moot resume DEB-")
        .unwrap_or_else(|| panic!("the message follows the restore: {after:?}"));
    assert!(
        !after[message..].contains('\u{1b}'),
        "nothing moves the cursor after the message: {after:?}"
    );
}

/// U3: a debate that fails says why in full on the screen (not a line cut in the strip), and
/// the exit prints the whole reason and how to go on.
#[test]
fn a_failed_debate_says_its_whole_reason_on_screen_and_on_exit() {
    let server = StandIn::start_in_background(Behaviour::default());
    server.fault(support::FaultRule::new(support::Fault::EchoKey).times(1000));
    let home = home_with("[lessons]\nenabled = false\n[retry]\nmax_attempts = 1\n");
    let mut pty = Pty::spawn(&mut moot(
        home.path(),
        Some(&server.openai_base()),
        &["Should we use Redis or PostgreSQL for caching?"],
    ));
    let screen = pty.wait_for("The debate failed");
    assert!(screen.contains("API key"), "{screen}");
    assert!(screen.contains("moot resume DEB-"), "{screen}");
    pty.press(b"q");
    pty.wait_exit();
    let raw = pty.output();
    let left = raw
        .rfind("\u{1b}[?1049l")
        .expect("left the alternate screen");
    let after = &raw[left..];
    assert!(
        after.contains(" failed: ") && after.contains("API key"),
        "the whole reason is printed: {after:?}"
    );
    assert!(
        after.contains("continue with: moot resume DEB-"),
        "{after:?}"
    );
}

/// Issue 27 item 4: a new debate's first frame (its question) is drawn before the journal is
/// opened. With a journal that cannot open, the question was on the screen before the error,
/// the terminal is restored, and the error and its exit code are the journal's.
#[test]
fn the_first_frame_comes_before_the_journal_opens() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), "").unwrap();
    // Where the journal's folder should be, a file: the journal cannot open.
    std::fs::write(home.path().join("data"), "").unwrap();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/assets/demo/redis-vs-postgres.json"
    );
    let question = "Is the first frame drawn before the journal opens?";
    let mut pty = Pty::spawn(&mut moot(
        home.path(),
        None,
        &["--script", script, question],
    ));
    // Read to the end first: the process may be gone before its last bytes are read.
    pty.wait_for("cannot open the journal");
    assert_eq!(pty.wait_exit().code(), Some(1));
    let raw = pty.output();
    let (entered, left) = alternate_screen(&raw);
    let entered = entered.expect("the workbench opened");
    let asked = raw.find(question).expect("the question was drawn");
    let left = left.expect("the terminal was restored");
    let error = raw
        .find("cannot open the journal")
        .expect("the journal's error");
    assert!(entered < asked && asked < left && left < error, "{raw:?}");
}

/// The catalog is read after the first frame (issue 27 item 4), but the new-debate form still
/// offers all of it: the built-ins and the config's own perspectives.
#[test]
fn the_new_debate_form_offers_the_catalog_with_the_configs_perspectives() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "[[debate.custom_perspectives]]\nname = \"Frugalist\"\npriorities = [\"spend\"]\ntrade_offs = \"speed for savings\"\n",
    )
    .unwrap();
    let mut pty = Pty::spawn(&mut moot(home.path(), None, &[]));
    pty.wait_for("n new debate");
    pty.press(b"n");
    // The form wraps between words: one-word names are found whole wherever a line breaks.
    let screen = pty.wait_for("Frugalist");
    assert!(screen.contains("Performance"), "{screen}");
    pty.press(b"\x1b");
    pty.wait_until(|screen| !screen.contains("Frugalist"));
    pty.press(b"q");
    assert_eq!(pty.wait_exit().code(), Some(0));
}

/// Issue 69 U9: the new-debate form chooses the provider and model, and `moot history` takes
/// the run's provider flags as the form's defaults. Before, a form debate went to whatever
/// the resolution order found (api.openai.com with a key in the environment).
#[test]
fn the_new_debate_form_chooses_the_provider_and_history_takes_the_provider_flags() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "[providers.standin]\nkind = \"openai\"\nbase_url = \"{}\"\nmodel = \"profile-model\"\n",
            server.openai_base()
        ),
    )
    .unwrap();
    // Ctrl-S starts the debate; every request it makes names `model`; leaving it goes back
    // to the history it was started from, and leaving that ends moot.
    let started_on = |mut pty: Pty, model: &str| {
        let before = server.seen().len();
        pty.press(b"\x13");
        pty.wait_for("The moderator asks");
        pty.press(b"q");
        pty.wait_for("Preview");
        pty.press(b"q");
        pty.wait_exit();
        let asked: Vec<String> = server.seen()[before..]
            .iter()
            .filter(|s| s.kind != "models")
            .filter_map(|s| s.body["model"].as_str().map(str::to_string))
            .collect();
        assert!(
            !asked.is_empty() && asked.iter().all(|m| m == model),
            "{asked:?}"
        );
    };
    let start = |pty: &mut Pty, question: &str| {
        pty.wait_for("n new debate");
        pty.press(b"n");
        pty.wait_for("New debate");
        pty.press(question.as_bytes());
        pty.wait_for(question);
    };

    // No provider anywhere: the form says what the default would be, and offers the profile.
    let mut pty = Pty::spawn(&mut moot(home.path(), None, &["history"]));
    start(&mut pty, "Which queue should we adopt?");
    let screen = pty.wait_for("Provider");
    assert!(
        screen.contains("auto (an Ollama that answers, else the embedded model)"),
        "{screen}"
    );
    pty.press(b"\t\t"); // to Provider
    pty.press(b"\x1b[C"); // → the first profile
    pty.wait_for("standin · http://127.0.0.1");
    pty.press(b"\t"); // to Model
    pty.wait_for("profile-model");
    pty.press(b"typed-model");
    pty.wait_for("typed-model");
    started_on(pty, "typed-model");

    // The command line's provider flags are the form's default.
    let mut pty = Pty::spawn(&mut moot(
        home.path(),
        None,
        &["history", "--provider", "standin", "--model", "flag-model"],
    ));
    start(&mut pty, "Which cache should we adopt?");
    let screen = pty.wait_for("standin (from the command line)");
    assert!(screen.contains("flag-model"), "{screen}");
    started_on(pty, "flag-model");
}

/// Issue 69 U13: Ctrl-Z gives the terminal back and stops moot, as helix and lazygit do; `fg`
/// brings the screen back. An interactive bash runs it, for its job control: outside one, the
/// kernel discards a terminal stop signal (an orphaned process group).
#[test]
fn ctrl_z_suspends_the_workbench_and_fg_brings_it_back() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), "").unwrap();
    // moot's own environment (a scratch home, no provider), given to the shell that runs it.
    let environment = moot(home.path(), None, &[]);
    let mut bash = std::process::Command::new("bash");
    bash.args(["--norc", "--noprofile", "-i"])
        .current_dir(home.path())
        .env_clear()
        .env("PS1", "ready> ");
    for (key, value) in environment.get_envs() {
        if let Some(value) = value {
            bash.env(key, value);
        }
    }
    let mut pty = Pty::spawn(&mut bash);
    pty.wait_for("ready>");
    pty.press(format!("'{}' history\r", env!("CARGO_BIN_EXE_moot")).as_bytes());
    pty.wait_for("n new debate");
    pty.press(b"\x1a"); // Ctrl-Z
    // The shell has the terminal again, and says the job stopped.
    pty.wait_for("Stopped");
    let raw = pty.output();
    let (entered, left) = alternate_screen(&raw);
    assert!(
        left > entered,
        "the alternate screen was left before stopping"
    );
    let before = raw.len();
    pty.press(b"fg\r");
    // moot continues and takes the screen again.
    pty.wait_until(|screen| screen.contains("n new debate") && !screen.contains("Stopped"));
    assert!(
        pty.output()[before..].contains("\u{1b}[?1049h"),
        "the workbench took the screen again"
    );
    pty.press(b"q");
    pty.wait_until(|screen| screen.contains("ready>") && !screen.contains("n new debate"));
    pty.press(b"exit\r");
    pty.wait_exit();
}

/// A finished debate replays read-only on the same screen a followed one uses, with no clock
/// ticking to wake it: every key must wake it by itself. (Polling the key stream with a
/// throwaway waker once lost every key after the first until some other event came.)
#[test]
fn a_replayed_debate_answers_every_key_with_nothing_else_to_wake_it() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), "").unwrap();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/assets/demo/redis-vs-postgres.json"
    );
    let run = moot(
        home.path(),
        None,
        &[
            "--headless",
            "--script",
            script,
            "Redis or PostgreSQL for caching?",
        ],
    )
    .output()
    .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let output = moot(home.path(), None, &["list", "--json"])
        .output()
        .unwrap();
    let list: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let id = list[0]["id"].as_str().unwrap().to_string();

    let mut pty = Pty::spawn(&mut moot(home.path(), None, &["open", &id]));
    let screen = pty.wait_for("· replay");
    assert!(screen.contains("completed ·"), "{screen}");
    for _ in 0..3 {
        pty.press(b"s");
        pty.wait_for("╭ Synthesis");
        pty.press(b"\x1b");
        pty.wait_until(|screen| !screen.contains("╭ Synthesis"));
    }
    pty.press(b"q");
    assert_eq!(pty.wait_exit().code(), Some(0));
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
    let raw = pty.output();
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

/// The workbench in `home` over the scripted demo debate, once the debate has finished.
fn finished_demo_debate(home: &std::path::Path) -> Pty {
    std::fs::write(home.join("config.toml"), "").unwrap();
    let demo =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/demo/redis-vs-postgres.json");
    let pty = Pty::spawn(&mut moot(
        home,
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
    pty
}

/// A fatal signal (here `kill -SEGV`, as a crash would raise it) in the workbench: the terminal
/// is given back first (main screen, cursor shown, mouse and paste modes off, cooked mode),
/// then moot ends by that signal.
#[test]
fn a_fatal_signal_gives_the_terminal_back_before_moot_ends() {
    let home = tempfile::tempdir().unwrap();
    let mut pty = finished_demo_debate(home.path());
    let raw = pty.settings();
    assert_eq!(
        raw.c_lflag & (libc::ICANON | libc::ECHO),
        0,
        "the workbench runs raw"
    );
    let before = pty.written();
    // SAFETY: signalling our own child.
    assert_eq!(
        unsafe { libc::kill(pty.pid() as libc::pid_t, libc::SIGSEGV) },
        0
    );
    let status = pty.wait_exit();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGSEGV), "{status:?}");
    // Sliced as bytes: `before` may fall inside a character a read had only half of, where
    // the whole output's text cannot be cut. The reader may still be draining what moot wrote
    // as it ended: looked at until all of it is there, or a deadline.
    let restored = [
        ("\u{1b}[?1049l", "the main screen back"),
        ("\u{1b}[?25h", "the cursor shown"),
        ("\u{1b}[?1000l", "the mouse let go"),
        ("\u{1b}[?2004l", "bracketed paste off"),
    ];
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let after = loop {
        let raw_output = pty.raw.lock().unwrap().clone();
        let after =
            String::from_utf8_lossy(&raw_output[before.min(raw_output.len())..]).to_string();
        if restored
            .iter()
            .all(|(sequence, _)| after.contains(sequence))
            || std::time::Instant::now() >= deadline
        {
            break after;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    for (sequence, what) in restored {
        assert!(after.contains(sequence), "{what}: {after:?}");
    }
    let cooked = pty.settings();
    assert_eq!(
        cooked.c_lflag & (libc::ICANON | libc::ECHO),
        libc::ICANON | libc::ECHO,
        "cooked mode again"
    );
}

#[test]
fn sigterm_ends_the_workbench_after_the_debate_has_finished() {
    let home = tempfile::tempdir().unwrap();
    let mut pty = finished_demo_debate(home.path());
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
    // Round 2: the Proponent closes, then the person closes. The Proponent's closing, which
    // the person answers, is in front above the dock, numbered, and a fresh, empty editor is
    // open (its placeholder shows; the first one held text when it closed).
    pty.wait_until(|s| {
        s.contains("Make your case, as your seat would") && s.contains("turn 3 · round 2 · closing")
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

/// Issue 24 item 3: a debate runs headless with `--checkpoints wait` in one process; the
/// workbench, in another, opens it live from the history, sees its next turn stream in before
/// the turn is done, and answers its checkpoint and its synthesis; the debate goes on with
/// those answers and completes.
#[test]
fn a_running_debate_opens_live_from_the_history_and_is_answered_there() {
    use std::io::BufRead;
    let server = StandIn::start_in_background(Behaviour {
        // Slow streams, so a turn is seen while it is still being written.
        chunk_chars: 12,
        chunk_delay: std::time::Duration::from_millis(40),
        ..Behaviour::default()
    });
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), "").unwrap();
    let mut owner = moot(
        home.path(),
        Some(&server.openai_base()),
        &[
            "--headless",
            "--checkpoints",
            "wait",
            "--no-lessons",
            "--max-rounds",
            "2",
            "Should we use Redis or PostgreSQL for caching?",
        ],
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let (lines, events) = std::sync::mpsc::channel::<serde_json::Value>();
    let stdout = owner.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if lines.send(serde_json::from_str(&line).unwrap()).is_err() {
                break;
            }
        }
    });
    let wait_for = |kind: &str| -> Vec<serde_json::Value> {
        let mut seen = Vec::new();
        loop {
            let event = events
                .recv_timeout(std::time::Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("the owner never emitted {kind}: {seen:?}"));
            let done = event["type"] == kind;
            seen.push(event);
            if done {
                return seen;
            }
        }
    };
    let first = wait_for("checkpoint");
    let id = first[0]["id"].as_str().unwrap().to_string();

    // U10: opened directly, the header says another process runs it; leaving says it goes
    // on, and how to come back.
    let mut glance = Pty::spawn(&mut moot(home.path(), None, &["open", &id]));
    glance.wait_for("· live: another process runs it");
    glance.press(b"q");
    // Read to the end first: the process may be gone before its last bytes are read.
    glance.wait_for("follow it again with");
    glance.wait_exit();
    let said = glance.output();
    assert!(
        said.contains(&format!(
            "moot: {id} goes on in the process that runs it; follow it again with: moot open {id}"
        )),
        "{said:?}"
    );

    // Another terminal: the history lists it running; Enter opens it live, at its question.
    let mut viewer = Pty::spawn(&mut moot(home.path(), None, &["history"]));
    viewer.wait_for("Enter follows it live");
    viewer.press(b"\r");
    let screen = viewer.wait_for("Round 1 complete");
    assert!(screen.contains("round 1 · argument"), "{screen}");
    viewer.press(b"c");
    // Round 2 streams in: seen on the viewer while the owner has not finished the turn.
    viewer.wait_for("Seat A, round 2");
    let mut so_far = Vec::new();
    while let Ok(event) = events.try_recv() {
        so_far.push(event);
    }
    assert!(
        !so_far.iter().any(|e| e["type"] == "turn_completed"
            && e["seat"] == "A"
            && e["round"] == 2
            && e["phase"] == "argument"),
        "the viewer saw A's round-2 argument only once it was done: {so_far:?}"
    );
    // At the round limit it asks to conclude, then for approval of its synthesis; the viewer
    // accepts both, and the debate completes.
    viewer.wait_for("conclude the debate?");
    // Accepting cannot be taken back, and `a` is the map's key elsewhere: it asks first (U6).
    viewer.press(b"a");
    viewer.wait_for("press a again to accept the conclusion and synthesise");
    viewer.press(b"a");
    viewer.wait_for("Approve this synthesis?");
    viewer.press(b"a");
    let ended = wait_for("debate_completed");
    assert_eq!(ended.last().unwrap()["status"], "completed");
    assert!(owner.wait().unwrap().success());
    viewer.wait_for("approved by the user at another workbench");
    viewer.press(b"\x1b");
    viewer.wait_for("completed ·");
    viewer.press(b"q");
    viewer.wait_for("history ·");
    viewer.press(b"q");
    assert_eq!(viewer.wait_exit().code(), Some(0));

    let shown = shown(home.path(), &id);
    assert_eq!(shown["checkpoints"][0]["decision"], "continue");
    assert_eq!(shown["checkpoints"][1]["kind"], "conclusion");
    assert_eq!(shown["checkpoints"][2]["kind"], "approval");
    for answer in shown["checkpoints"].as_array().unwrap() {
        let by = answer["answered_by"].as_str().unwrap();
        assert!(by.ends_with(" at another workbench"), "{by}");
    }
}

/// `moot attach`: the workbench on a debate `moot serve` runs, on another "machine" (its own
/// data directory): the debate shows as it runs, and its checkpoint, conclusion and synthesis
/// are answered from the workbench over the API; the server's journal has those answers.
#[test]
fn moot_attach_follows_a_served_debate_and_answers_it_over_the_api() {
    let server = StandIn::start_in_background(Behaviour::default());
    let token = "attach-test-token-0123456789";
    let (home, serving, addr) = serve(&server, token);
    let body = r#"{"question": "Should we use Redis or PostgreSQL for caching?", "max_rounds": 2}"#;
    let id = post_debate(&addr, token, body);

    // Elsewhere: a data directory of its own, the server named, the token from the environment.
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(elsewhere.path().join("config.toml"), "").unwrap();
    let mut viewer = Pty::spawn(
        moot(
            elsewhere.path(),
            None,
            &["attach", &id, "--server", &format!("http://{addr}")],
        )
        .env("MOOT_SERVE_TOKEN", token),
    );
    let screen = viewer.wait_for("Round 1 complete");
    assert!(screen.contains("round 1 · argument"), "{screen}");
    guide_the_next_round(&mut viewer);
    viewer.press(b"a");
    viewer.wait_for("press a again");
    viewer.press(b"a");
    viewer.wait_for("Approve this synthesis?");
    viewer.press(b"a");
    viewer.wait_for("Create a follow-up issue draft");
    viewer.press(b"\x1b");
    viewer.wait_for("completed ·");
    viewer.press(b"q");
    assert_eq!(viewer.wait_exit().code(), Some(0));
    drop(serving);

    let shown = shown(home.path(), &id);
    assert_eq!(shown["status"], "completed");
    assert_eq!(shown["checkpoints"][0]["decision"], "guide");
    assert_eq!(
        shown["checkpoints"][0]["guidance"],
        "Weigh the migration cost"
    );
    assert_eq!(shown["checkpoints"][0]["answered_by"], "the API via HTTP");
    assert_eq!(shown["checkpoints"][2]["kind"], "approval");
}

/// `moot serve` on a free port of 127.0.0.1 against the stand-in, in a home of its own with
/// lessons off; the home, the server and the address it listens on.
fn serve(stand_in: &StandIn, token: &str) -> (tempfile::TempDir, Serving, String) {
    let home = tempfile::tempdir().unwrap();
    let config = "[lessons]\nenabled = false\n";
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    let serving = Serving::start(
        moot(
            home.path(),
            Some(&stand_in.openai_base()),
            &["serve", "--listen", "127.0.0.1:0"],
        )
        .env("MOOT_SERVE_TOKEN", token),
    );
    let addr = serving.addr.clone();
    (home, serving, addr)
}

/// At a debate's first checkpoint: guidance typed and sent; it waits at the conclusion next.
fn guide_the_next_round(viewer: &mut Pty) {
    viewer.press(b"g");
    viewer.wait_for("Guidance for the next round");
    viewer.press(b"Weigh the migration cost");
    viewer.press(b"\x13");
    viewer.wait_for("conclude the debate?");
}

/// `moot show ID --json` on the journal in `home`.
fn shown(home: &std::path::Path, id: &str) -> serde_json::Value {
    let output = moot(home, None, &["show", id, "--json"]).output().unwrap();
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Starts a debate on the server at `addr` (`POST /v1/debates`); its id.
fn post_debate(addr: &str, token: &str, body: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST /v1/debates HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAuthorization: Bearer {token}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    let at = reply.find("DEB-").unwrap_or_else(|| panic!("{reply}"));
    reply[at..at + 12].to_string()
}

/// The history with `[serve] url` set lists the server's debates beside this machine's,
/// marked `@`; Enter on one attaches to it (its checkpoint answered over the API), and
/// leaving the debate comes back to the history.
#[test]
fn the_history_lists_a_servers_debates_and_attaches_to_one() {
    let server = StandIn::start_in_background(Behaviour::default());
    let token = "history-test-token-0123456789";
    let (home, serving, addr) = serve(&server, token);
    let body = r#"{"question": "Served: should the cache live in Redis?", "max_rounds": 2}"#;
    let id = post_debate(&addr, token, body);

    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(
        elsewhere.path().join("config.toml"),
        format!("[serve]\nurl = \"http://{addr}\"\n"),
    )
    .unwrap();
    let mut viewer =
        Pty::spawn(moot(elsewhere.path(), None, &["history"]).env("MOOT_SERVE_TOKEN", token));
    let screen = viewer.wait_for(&format!("@ 1 only on http://{addr}"));
    assert!(
        screen.contains("@ running") || screen.contains("@ paused"),
        "{screen}"
    );
    assert!(
        screen.contains("Served: should the cache live in Redis?"),
        "{screen}"
    );
    assert!(screen.contains("follows it"), "{screen}");
    viewer.press(b"\r");
    let screen = viewer.wait_for("Round 1 complete");
    assert!(screen.contains(&id), "{screen}");
    guide_the_next_round(&mut viewer);
    viewer.press(b"q");
    viewer.wait_for("history ·");
    viewer.press(b"q");
    assert_eq!(viewer.wait_exit().code(), Some(0));
    drop(serving);
    let shown = shown(home.path(), &id);
    assert_eq!(
        shown["checkpoints"][0]["guidance"],
        "Weigh the migration cost"
    );
}
