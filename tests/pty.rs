//! The real binary in a pseudo-terminal against the stand-in server: the workbench opens,
//! a guide is typed at the first checkpoint, the debate is ended at the second, and both the
//! screen (through a VT100 emulator) and the journal show it. The terminal is restored after.

mod support;

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use support::{Behaviour, StandIn};

const ROWS: u16 = 40;
const COLS: u16 = 140;

/// A child process on a pseudo-terminal, its screen kept by a VT100 emulator.
struct Pty {
    child: std::process::Child,
    master: std::fs::File,
    screen: Arc<(Mutex<vt100::Parser>, Condvar)>,
    raw: Arc<Mutex<Vec<u8>>>,
}

impl Pty {
    fn spawn(command: &mut Command) -> Pty {
        let mut master: libc::c_int = -1;
        let mut slave: libc::c_int = -1;
        let size = libc::winsize {
            ws_row: ROWS,
            ws_col: COLS,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: openpty writes two descriptors we take ownership of.
        let status = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                &size,
            )
        };
        assert_eq!(status, 0, "openpty failed");
        // SAFETY: the descriptors were just created and are owned here.
        let (master, slave) =
            unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
        let slave_fd = slave.as_raw_fd();
        command
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            command.pre_exec(move || {
                libc::setsid();
                libc::ioctl(slave_fd, libc::TIOCSCTTY as _, 0);
                Ok(())
            });
        }
        let child = command.spawn().unwrap();
        let master = std::fs::File::from(master);
        let screen = Arc::new((
            Mutex::new(vt100::Parser::new(ROWS, COLS, 0)),
            Condvar::new(),
        ));
        let raw = Arc::new(Mutex::new(Vec::new()));
        let mut reader = master.try_clone().unwrap();
        let (screen_writer, raw_writer) = (screen.clone(), raw.clone());
        std::thread::spawn(move || {
            let mut buffer = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buffer) {
                if n == 0 {
                    break;
                }
                raw_writer.lock().unwrap().extend_from_slice(&buffer[..n]);
                let (parser, changed) = &*screen_writer;
                parser.lock().unwrap().process(&buffer[..n]);
                changed.notify_all();
            }
        });
        Pty {
            child,
            master,
            screen,
            raw,
        }
    }

    fn press(&mut self, bytes: &[u8]) {
        self.master.write_all(bytes).unwrap();
        self.master.flush().unwrap();
    }

    /// Waits, woken by each batch of output, until the screen shows `text`; 30 s at most.
    fn wait_for(&self, text: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        let (parser, changed) = &*self.screen;
        let mut guard = parser.lock().unwrap();
        loop {
            let contents = guard.screen().contents();
            if contents.contains(text) {
                return contents;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "the screen never showed {text:?}:\n{contents}"
            );
            guard = changed.wait_timeout(guard, left).unwrap().0;
        }
    }
}

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
    let mut command = Command::new(env!("CARGO_BIN_EXE_moot"));
    command
        .current_dir(home.path())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("TERM", "xterm-256color")
        .env("MOOT_HOME", home.path().join("data"))
        .env("MOOT_CONFIG", home.path().join("config.toml"))
        .env("OPENAI_BASE_URL", server.openai_base())
        .args([
            "--max-rounds",
            "3",
            "Should we use Redis or PostgreSQL for caching?",
        ]);
    let mut pty = Pty::spawn(&mut command);

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
    // The footer follows the rebinding.
    pty.wait_for(" x end the debate");
    pty.press(b"e");
    pty.press(b"x");
    let screen = pty.wait_for("completed ·");
    assert!(screen.contains("round 2 of 3"), "{screen}");
    pty.press(b"q");
    let (done, exited) = std::sync::mpsc::channel();
    let mut child = pty.child;
    std::thread::spawn(move || {
        let _ = done.send(child.wait());
    });
    let status = exited
        .recv_timeout(Duration::from_secs(30))
        .expect("moot exits after q")
        .unwrap();
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
    let output = Command::new(env!("CARGO_BIN_EXE_moot"))
        .current_dir(home.path())
        .env("MOOT_HOME", home.path().join("data"))
        .env("MOOT_CONFIG", home.path().join("config.toml"))
        .args(["list", "--json"])
        .output()
        .unwrap();
    let list: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let id = list[0]["id"].as_str().unwrap();
    assert_eq!(list[0]["status"], "completed");
    let output = Command::new(env!("CARGO_BIN_EXE_moot"))
        .current_dir(home.path())
        .env("MOOT_HOME", home.path().join("data"))
        .env("MOOT_CONFIG", home.path().join("config.toml"))
        .args(["show", id, "--json"])
        .output()
        .unwrap();
    let shown: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(shown["checkpoints"][0]["decision"], "guide");
    assert_eq!(
        shown["checkpoints"][0]["guidance"],
        "Focus on our PostgreSQL experience"
    );
    assert_eq!(shown["checkpoints"][1]["decision"], "end");
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
    let moot = |args: &[&str]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_moot"));
        command
            .current_dir(home.path())
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("TERM", "xterm-256color")
            .env("MOOT_HOME", home.path().join("data"))
            .env("MOOT_CONFIG", home.path().join("config.toml"))
            .env("OPENAI_BASE_URL", server.openai_base())
            .args(args);
        command
    };
    let pty = Pty::spawn(&mut moot(&[
        "--max-rounds",
        "3",
        "Should we use Redis or PostgreSQL for caching?",
    ]));
    pty.wait_for("Round 1 complete");
    // What sshd does when the connection drops.
    // SAFETY: signalling our own child.
    assert_eq!(
        unsafe { libc::kill(pty.child.id() as libc::pid_t, libc::SIGHUP) },
        0
    );
    let (done, exited) = std::sync::mpsc::channel();
    let mut child = pty.child;
    std::thread::spawn(move || {
        let _ = done.send(child.wait());
    });
    let status = exited
        .recv_timeout(Duration::from_secs(30))
        .expect("moot exits on SIGHUP")
        .unwrap();
    assert_eq!(status.code(), Some(130), "interrupted and paused");
    let raw = String::from_utf8_lossy(&pty.raw.lock().unwrap()).to_string();
    assert!(
        raw.rfind("\u{1b}[?1049l") > raw.rfind("\u{1b}[?1049h"),
        "left the alternate screen"
    );
    let output = moot(&["list", "--json"]).output().unwrap();
    let list: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(list[0]["status"], "paused");
    let resumed = moot(&["resume", list[0]["id"].as_str().unwrap()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        resumed.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
}
