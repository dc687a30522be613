//! Shared helpers of the end-to-end tests: a scratch home, the binary run in it, event lines read as they come.

use crate::*;

/// A scratch home: journal, config and working directory for one test.
pub(crate) struct Home {
    pub(crate) dir: tempfile::TempDir,
}

impl Home {
    pub(crate) fn new() -> Home {
        let home = Home {
            dir: tempfile::tempdir().unwrap(),
        };
        home.write_config("[retry]\nmax_attempts = 3\nbase_delay_ms = 5\nmax_delay_ms = 50\n");
        home
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes the config; lessons stay off unless `text` has a `[lessons]` table, so that a
    /// test's debates neither learn from each other nor end with a reflection it did not ask
    /// for.
    pub(crate) fn write_config(&self, text: &str) {
        let text = if text.contains("[lessons]") {
            text.to_string()
        } else {
            format!("{text}\n[lessons]\nenabled = false\n")
        };
        std::fs::write(self.path().join("config.toml"), text).unwrap();
    }

    pub(crate) fn command(&self, server: Option<&StandIn>) -> Command {
        self.prepared(Command::new(env!("CARGO_BIN_EXE_moot")), server)
    }

    /// The binary with its wall clock moved by `shift` ("+3d", "-40s"): libfaketime
    /// (installed by scripts/setup with `faketime`) preloaded into moot itself, its monotonic
    /// clock left alone. Not the `faketime` wrapper: that runs moot as a child of its own,
    /// which outlives the wrapper when a test stops a server it started.
    pub(crate) fn command_at_shifted_clock(
        &self,
        shift: &str,
        server: Option<&StandIn>,
    ) -> Command {
        let mut command = self.command(server);
        command
            .env("LD_PRELOAD", libfaketime())
            .env("FAKETIME", shift)
            .env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
        command
    }

    pub(crate) fn prepared(&self, mut command: Command, server: Option<&StandIn>) -> Command {
        command
            .current_dir(self.path())
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.path())
            .env("USER", "moot-tester")
            .env("XDG_CONFIG_HOME", self.path().join("xdg-config"))
            .env("XDG_DATA_HOME", self.path().join("xdg-data"))
            .env("MOOT_HOME", self.path().join("moot-home"))
            .env("MOOT_CONFIG", self.path().join("config.toml"))
            // No Ollama and no pulled model, whatever this machine has.
            .env("OLLAMA_HOST", "127.0.0.1:9")
            .env("MOOT_MODELS", self.path().join("models"));
        if let Some(server) = server {
            command.env("OPENAI_BASE_URL", server.openai_base());
        }
        command
    }

    pub(crate) fn run(&self, server: Option<&StandIn>, args: &[&str]) -> Output {
        self.command(server)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    pub(crate) fn run_with_stdin(
        &self,
        server: Option<&StandIn>,
        args: &[&str],
        stdin: &str,
    ) -> Output {
        let mut child = self
            .command(server)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    }

    /// Starts the binary with its NDJSON stdout piped back for reading as it runs.
    pub(crate) fn spawn(
        &self,
        server: &StandIn,
        args: &[&str],
    ) -> (std::process::Child, EventLines) {
        let mut child = self
            .command(Some(server))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let reader = EventLines::new(child.stdout.take().unwrap());
        (child, reader)
    }

    pub(crate) fn database(&self) -> PathBuf {
        self.path().join("moot-home").join("moot.db")
    }

    pub(crate) fn decisions(&self) -> Vec<PathBuf> {
        let dir = self.path().join("docs").join("decisions");
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|d| d.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default();
        files.sort();
        files
    }
}

pub(crate) fn events(output: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
        .collect()
}

pub(crate) fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// The synthesis a debate concluded with (drafts shown for approval come before it).
pub(crate) fn final_synthesis(events: &[Value]) -> &Value {
    of_type(events, "synthesis")
        .into_iter()
        .rfind(|e| e["draft"] != true)
        .expect("a final synthesis")
}

pub(crate) fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).to_string()
}

pub(crate) fn show_json(home: &Home, id: &str) -> Value {
    let output = home.run(None, &["show", id, "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    serde_json::from_slice(&output.stdout).unwrap()
}

pub(crate) const QUESTION: &str = "Should we use Redis or PostgreSQL for caching?";

/// Runs `protocol` headless with `extra` flags, expecting a usage error: exit 2, no panic.
/// Returns what it said.
pub(crate) fn refused(
    home: &Home,
    server: &StandIn,
    protocol: &str,
    extra: &[&str],
    question: &str,
) -> String {
    let mut args = vec!["--headless", "--no-checkpoints", "--protocol", protocol];
    args.extend_from_slice(extra);
    args.push(question);
    let output = home.run(Some(server), &args);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{extra:?}: {message}");
    assert!(!message.contains("panicked"), "{message}");
    message
}

/// Polls until the server has seen `count` requests matching `wanted`, with a deadline.
/// Every file under `dir` (the journal, its WAL, lease files…), read as text and joined.
pub(crate) fn every_file_under(dir: &Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            text.push_str(&every_file_under(&path));
        } else {
            text.push_str(&String::from_utf8_lossy(&std::fs::read(&path).unwrap()));
        }
    }
    text
}

/// Every text moot made of a debate `id` run as `output`: its stdout and stderr, every file of
/// its data dir (the journal, raw), the records, what `show`, `export` and `audit` print, and
/// every request `server` received.
pub(crate) fn traces(home: &Home, output: &Output, id: &str, server: Option<&StandIn>) -> String {
    let mut all = String::from_utf8_lossy(&output.stdout).to_string();
    all.push_str(&stderr(output));
    all.push_str(&every_file_under(home.database().parent().unwrap()));
    for args in [
        &["export", id, "--format", "json"][..],
        &["export", id, "--format", "md"],
        &["show", id],
        &["show", id, "--json"],
        &["audit", id, "--json"],
    ] {
        let shown = home.run(None, args);
        all.push_str(&String::from_utf8_lossy(&shown.stdout));
        all.push_str(&stderr(&shown));
    }
    for file in home.decisions() {
        all.push_str(&std::fs::read_to_string(file).unwrap_or_default());
    }
    for seen in server.map(StandIn::seen).unwrap_or_default() {
        all.push_str(&seen.body.to_string());
    }
    all
}

pub(crate) fn await_requests(
    server: &StandIn,
    count: usize,
    wanted: impl Fn(&support::Seen) -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.seen().iter().filter(|s| wanted(s)).count() < count {
        assert!(
            Instant::now() < deadline,
            "the awaited requests never reached the server"
        );
        std::thread::yield_now();
    }
}

/// Reads a child's stdout until a line satisfies `stop`, with a deadline.
/// A child's NDJSON lines, read on a thread of their own so that waiting for one can time out.
pub(crate) struct EventLines {
    pub(crate) lines: std::sync::mpsc::Receiver<String>,
}

impl EventLines {
    pub(crate) fn new(stdout: impl std::io::Read + Send + 'static) -> EventLines {
        let (sender, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        EventLines { lines }
    }
}

/// Reads events until one satisfies `stop`; fails (instead of blocking) after 30 s.
pub(crate) fn read_until(reader: &mut EventLines, stop: impl Fn(&Value) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = match reader.lines.recv_timeout(left) {
            Ok(line) => line,
            Err(_) => panic!("never saw the awaited event; got {seen:?}"),
        };
        let event: Value = serde_json::from_str(line.trim()).unwrap();
        let done = stop(&event);
        seen.push(event);
        if done {
            return seen;
        }
    }
}

/// libfaketime's library, which scripts/setup installs with `faketime`.
fn libfaketime() -> std::path::PathBuf {
    let found = ["/usr/lib/faketime", "/usr/lib64/faketime"]
        .into_iter()
        .map(std::path::PathBuf::from)
        .chain(
            std::fs::read_dir("/usr/lib")
                .into_iter()
                .flatten()
                .flatten()
                .map(|entry| entry.path().join("faketime")),
        )
        .map(|dir| dir.join("libfaketime.so.1"))
        .find(|library| library.exists());
    found.expect("libfaketime.so.1 is not installed: run scripts/setup (it installs faketime)")
}
