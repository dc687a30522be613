//! Hooks of a code debate (design note 004): a configured command (tests, linter, analysis,
//! scan, benchmark) run in the debate's work tree, in the sandbox of `code::sandbox`, with a
//! time limit, caps on processes and memory, and an output cap; its output treated as
//! untrusted text (redacted, private keys and high-entropy tokens removed) before anything
//! keeps it; its result parsed into pass/fail counts for the common runners.

use crate::code::sandbox::{Limits, Sandbox, SandboxError};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt};

/// A command to run at a hook point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hook {
    /// `test`, `lint`, `analysis`, `security`, `bench`…
    pub name: String,
    /// Run by `sh -c`.
    pub command: String,
    pub timeout: Duration,
    /// Bytes of output kept (the tail); the rest is counted, not kept.
    pub output_cap: usize,
    /// Run without the box where none can be built, or uncapped where nothing can cap it
    /// (`--unsandboxed-hooks`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unsandboxed: bool,
    /// Processes and memory a run may take (`[code] hook_processes`, `hook_memory_mb`).
    #[serde(default)]
    pub limits: Limits,
}

/// What a hook did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookResult {
    pub name: String,
    pub command: String,
    /// The exit status; None when it was killed or could not start.
    pub exit: Option<i32>,
    pub timed_out: bool,
    pub duration_ms: u64,
    /// Tests passed and failed, when the output is a known runner's.
    pub passed: Option<u32>,
    pub failed: Option<u32>,
    /// The last `output_cap` bytes of stdout and stderr, interleaved as they came.
    pub tail: String,
    /// Bytes of output beyond the tail that were dropped.
    pub dropped: u64,
    /// Whether the network was cut off for it.
    pub offline: bool,
    /// The filesystem sandbox it ran in (`landlock ABI 6`); None when it ran without one, or
    /// before moot had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// Why it could not start, when it could not.
    pub error: Option<String>,
    /// Its caps (`at most 1024 processes (cgroup), 4096 MiB in all`); None when nothing
    /// capped its processes, or before moot capped them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<String>,
    /// Why the box stopped it before it ended (a cap reached).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

impl HookResult {
    pub fn ok(&self) -> bool {
        self.exit == Some(0)
            && !self.timed_out
            && self.stopped.is_none()
            && self.failed.unwrap_or(0) == 0
    }

    /// One line for prompts and panels: `test: 12 passed, 1 failed (exit 101, 3.2 s)`.
    pub fn summary(&self) -> String {
        let counts = match (self.passed, self.failed) {
            (Some(p), Some(f)) => format!("{p} passed, {f} failed"),
            (Some(p), None) => format!("{p} passed"),
            (None, Some(f)) => format!("{f} failed"),
            // A linter, or tests whose runner prints no counts: the exit says it all.
            (None, None) if self.exit == Some(0) && !self.timed_out => "passed".into(),
            (None, None) => "failed".into(),
        };
        let how = if let Some(stopped) = &self.stopped {
            stopped.clone()
        } else if self.timed_out {
            "killed at its time limit".to_string()
        } else if let Some(error) = &self.error {
            format!("did not start: {error}")
        } else {
            format!("exit {}", self.exit.map_or("?".into(), |c| c.to_string()))
        };
        format!(
            "{}: {counts} ({how}, {:.1} s)",
            self.name,
            self.duration_ms as f64 / 1000.0
        )
    }
}

/// Bytes kept beyond a hook's output cap, so that a secret straddling the cut is whole when
/// redaction reads it (the cut is made after).
const REDACTION_MARGIN: usize = 4096;

/// Keeps the last `cap` bytes of everything written to it.
struct Tail {
    kept: Vec<u8>,
    cap: usize,
    dropped: u64,
}

impl Tail {
    fn push(&mut self, bytes: &[u8]) {
        self.kept.extend_from_slice(bytes);
        if self.kept.len() > self.cap {
            let excess = self.kept.len() - self.cap;
            self.kept.drain(..excess);
            self.dropped += excess as u64;
        }
    }
}

async fn pump(mut from: impl AsyncRead + Unpin, tail: &std::sync::Mutex<Tail>) {
    let mut buffer = [0u8; 8192];
    loop {
        match from.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if let Ok(mut tail) = tail.lock() {
                    tail.push(&buffer[..n]);
                }
            }
        }
    }
}

/// Runs `hook` in `dir`. It never fails: a command that cannot start, hangs, floods its
/// output or reaches a cap is recorded as such.
pub async fn run(hook: &Hook, dir: &Path) -> HookResult {
    run_boxed(
        hook,
        dir,
        Sandbox::prepare(dir, hook.limits, hook.unsandboxed),
    )
    .await
}

/// The text of a hook's output as moot keeps it: escapes stripped, keys, private-key blocks
/// and high-entropy tokens redacted, and only then cut to its last `cap` bytes (from a line's
/// start when it was cut).
fn kept_text(raw: &[u8], cap: usize) -> String {
    let text = crate::sanitize::clean(&String::from_utf8_lossy(raw));
    let text = crate::sanitize::redact_output(&text);
    if text.len() <= cap {
        return text;
    }
    let mut start = text.len() - cap;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let cut = &text[start..];
    // A line cut in two could leave the end of something redaction did not recognise.
    match cut.find('\n') {
        Some(newline) if newline + 1 < cut.len() => cut[newline + 1..].to_string(),
        _ => cut.to_string(),
    }
}

/// Runs `hook` in `dir` in `sandbox` (or records why it had none and did not run).
pub async fn run_boxed(
    hook: &Hook,
    dir: &Path,
    sandbox: Result<Sandbox, SandboxError>,
) -> HookResult {
    let confinement = sandbox.as_ref().ok().map(Sandbox::confinement);
    let offline = confinement.as_ref().is_some_and(|c| c.offline);
    let mut command = match &sandbox {
        Ok(sandbox) => sandbox.command(&hook.command),
        Err(_) => tokio::process::Command::new("sh"),
    };
    // The child starts a session of its own (a process group moot can kill whole).
    command
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let started = Instant::now();
    let result = |exit, timed_out, tail: Tail, error, stopped: Option<String>| {
        let text = kept_text(&tail.kept, hook.output_cap);
        let dropped = tail.dropped + (tail.kept.len().saturating_sub(hook.output_cap)) as u64;
        let (passed, failed) = counts(&text);
        HookResult {
            name: hook.name.clone(),
            command: hook.command.clone(),
            exit,
            timed_out,
            duration_ms: started.elapsed().as_millis() as u64,
            passed,
            failed,
            tail: text,
            dropped,
            offline,
            sandbox: confinement.as_ref().and_then(|c| c.filesystem.clone()),
            error,
            limits: confinement.as_ref().and_then(|c| c.limits.clone()),
            stopped,
        }
    };
    let empty = || Tail {
        kept: Vec::new(),
        cap: hook.output_cap.saturating_add(REDACTION_MARGIN),
        dropped: 0,
    };
    let sandbox = match sandbox {
        Ok(sandbox) => sandbox,
        Err(refused) => return result(None, false, empty(), Some(refused.to_string()), None),
    };
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => return result(None, false, empty(), Some(e.to_string()), None),
    };
    let group = child.id();
    let tail = std::sync::Mutex::new(empty());
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let work = async {
        let reading = async {
            tokio::join!(
                async {
                    if let Some(out) = stdout {
                        pump(out, &tail).await
                    }
                },
                async {
                    if let Some(err) = stderr {
                        pump(err, &tail).await
                    }
                }
            )
        };
        let (_, status) = tokio::join!(reading, child.wait());
        status
    };
    // A cap the box counts (a fork or an allocation it refused) stops the run at once.
    let watch = async {
        if !sandbox.watches() {
            return std::future::pending().await;
        }
        let mut tick = tokio::time::interval(Duration::from_millis(50));
        loop {
            tick.tick().await;
            if let Some(why) = sandbox.exceeded() {
                return why;
            }
        }
    };
    let outcome = tokio::select! {
        finished = tokio::time::timeout(hook.timeout, work) => Ok(finished),
        why = watch => Err(why),
    };
    if !matches!(outcome, Ok(Ok(Ok(_)))) {
        // The whole group, and the whole cgroup: a test runner's children must not outlive
        // its limit.
        if let Some(pid) = group {
            crate::code::sandbox::kill_group(pid);
        }
    }
    // Whatever is still alive of the run ends with it (the namespaces already saw to theirs).
    sandbox.end();
    let tail = tail.into_inner().unwrap_or_else(|e| e.into_inner());
    match outcome {
        Ok(Ok(Ok(status))) => result(status.code(), false, tail, None, None),
        Ok(Ok(Err(e))) => result(None, false, tail, Some(e.to_string()), None),
        Ok(Err(_)) => result(None, true, tail, None, None),
        Err(why) => result(None, false, tail, None, Some(why)),
    }
}

/// Tests passed and failed, read from the output of cargo test, pytest, go test or jest.
pub fn counts(output: &str) -> (Option<u32>, Option<u32>) {
    let number_before = |line: &str, word: &str| -> Option<u32> {
        let at = line.find(word)?;
        line[..at]
            .trim_end()
            .rsplit(|c: char| !c.is_ascii_digit())
            .next()
            .and_then(|n| n.parse().ok())
    };
    // cargo test: one "test result:" line per test binary.
    let cargo: Vec<&str> = output
        .lines()
        .filter(|l| l.trim_start().starts_with("test result:"))
        .collect();
    if !cargo.is_empty() {
        let sum = |word| {
            cargo
                .iter()
                .filter_map(|l| number_before(l, word))
                .sum::<u32>()
        };
        return (Some(sum(" passed")), Some(sum(" failed")));
    }
    // jest: "Tests:       1 failed, 4 passed, 5 total".
    if let Some(line) = output
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with("Tests:"))
    {
        return (
            Some(number_before(line, " passed").unwrap_or(0)),
            Some(number_before(line, " failed").unwrap_or(0)),
        );
    }
    // go test -v: one "--- PASS" / "--- FAIL" line per test.
    let go_pass = output
        .lines()
        .filter(|l| l.trim_start().starts_with("--- PASS"))
        .count();
    let go_fail = output
        .lines()
        .filter(|l| l.trim_start().starts_with("--- FAIL"))
        .count();
    if go_pass + go_fail > 0 {
        return (Some(go_pass as u32), Some(go_fail as u32));
    }
    // pytest: "==== 1 failed, 3 passed in 0.12s ====" or "3 passed in 0.01s".
    if let Some(line) = output
        .lines()
        .rev()
        .find(|l| (l.contains(" passed") || l.contains(" failed")) && l.contains(" in "))
    {
        let passed = number_before(line, " passed");
        let failed = number_before(line, " failed");
        if passed.is_some() || failed.is_some() {
            return (Some(passed.unwrap_or(0)), Some(failed.unwrap_or(0)));
        }
    }
    (None, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(command: &str, timeout_ms: u64, cap: usize) -> Hook {
        Hook {
            name: "test".into(),
            command: command.into(),
            timeout: Duration::from_millis(timeout_ms),
            output_cap: cap,
            unsandboxed: false,
            limits: Limits::default(),
        }
    }

    #[test]
    fn the_common_runners_are_counted() {
        let cargo = "running 3 tests\ntest result: ok. 3 passed; 0 failed; 0 ignored\n\
                     test result: FAILED. 4 passed; 2 failed; 1 ignored\n";
        assert_eq!(counts(cargo), (Some(7), Some(2)));
        let pytest =
            "tests/test_slug.py ..F.\n=========== 1 failed, 3 passed in 0.12s ===========\n";
        assert_eq!(counts(pytest), (Some(3), Some(1)));
        assert_eq!(counts("5 passed in 0.01s"), (Some(5), Some(0)));
        let go = "=== RUN TestA\n--- PASS: TestA (0.00s)\n=== RUN TestB\n--- FAIL: TestB (0.00s)\nFAIL\n";
        assert_eq!(counts(go), (Some(1), Some(1)));
        let jest = "Tests:       1 failed, 4 passed, 5 total\nTime: 1 s\n";
        assert_eq!(counts(jest), (Some(4), Some(1)));
        assert_eq!(counts("compiled fine"), (None, None));
    }

    #[tokio::test]
    async fn a_passing_and_a_failing_command_are_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let ok = run(
            &hook("echo 'test result: ok. 2 passed; 0 failed'", 10_000, 4096),
            dir.path(),
        )
        .await;
        assert!(ok.ok(), "{ok:?}");
        assert_eq!((ok.passed, ok.failed), (Some(2), Some(0)));
        assert_eq!(
            ok.summary().split(" (").next(),
            Some("test: 2 passed, 0 failed")
        );
        let bad = run(&hook("echo boom >&2; exit 3", 10_000, 4096), dir.path()).await;
        assert!(!bad.ok());
        assert_eq!(bad.exit, Some(3));
        assert!(bad.tail.contains("boom"));
        // Seed review 004 #14: a command that prints no counts (a linter) is told by its exit.
        assert_eq!(bad.summary().split(" (").next(), Some("test: failed"));
        let clean = run(&hook("echo 'no warnings'", 10_000, 4096), dir.path()).await;
        assert_eq!(clean.summary().split(" (").next(), Some("test: passed"));
    }

    /// Processes whose command line holds `marker`, as this process sees them.
    fn running_with(marker: &str) -> Vec<String> {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .bytes()
                    .all(|b| b.is_ascii_digit())
            })
            .filter(|e| {
                let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
                let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
                !stat.contains(") Z ") && String::from_utf8_lossy(&cmdline).contains(marker)
            })
            .map(|e| e.file_name().to_string_lossy().to_string())
            .collect()
    }

    /// Waits (five seconds at most) until no process holds `marker`.
    async fn until_none_with(marker: &str) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let alive = running_with(marker);
            if alive.is_empty() || Instant::now() >= deadline {
                return alive;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[tokio::test]
    async fn a_hanging_hook_and_its_children_are_killed_at_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        // `sleep 30.4711` marks this test's processes on the machine's process list.
        let command = "sleep 30.4711 & setsid sleep 30.4711 & wait";
        let started = Instant::now();
        let hung = run(&hook(command, 500, 4096), dir.path()).await;
        assert!(hung.timed_out && !hung.ok(), "{hung:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(hung.summary().contains("killed at its time limit"));
        // The background children went with the run, the one in a session of its own too.
        let alive = until_none_with("30.4711").await;
        assert!(alive.is_empty(), "{alive:?} outlived the hook's limit");
    }

    /// A hook that ends while it leaves children behind (in a new session, in the
    /// background) leaves nothing running.
    #[tokio::test]
    async fn nothing_a_hook_started_outlives_it() {
        let dir = tempfile::tempdir().unwrap();
        let command = "setsid sh -c 'sleep 60.4712' </dev/null >/dev/null 2>&1 & \
                       (sleep 60.4712 &) ; echo started";
        let done = run(&hook(command, 10_000, 4096), dir.path()).await;
        assert!(done.ok() && done.tail.contains("started"), "{done:?}");
        let alive = until_none_with("60.4712").await;
        assert!(alive.is_empty(), "{alive:?} outlived the hook");
    }

    #[tokio::test]
    async fn a_flood_keeps_only_the_tail_and_a_hook_sees_its_own_environment() {
        let dir = tempfile::tempdir().unwrap();
        let flood = run(&hook("seq 1 100000; echo LAST", 10_000, 1000), dir.path()).await;
        assert!(flood.ok());
        assert!(flood.tail.len() <= 1000 && flood.tail.contains("LAST"));
        assert!(flood.dropped > 500_000, "{}", flood.dropped);
        // That no key reaches it, whatever the variable's name, is the sandbox's own test
        // (moot-os, which runs a boxed `env`); here, a hook still finds its tools.
        let env = run(&hook("env", 10_000, 100_000), dir.path()).await;
        assert!(env.tail.contains("PATH="));
    }
}
