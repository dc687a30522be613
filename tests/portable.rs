//! One binary for every x86-64-v2 CPU: llama.cpp is built for no CPU in particular (so ggml's
//! AMX path, which dies with SIGILL on some AMX hosts, is not in it), the whole engine runs a
//! scripted debate as a Nehalem (SSE4.2, no AVX) and a Haswell (AVX2) run it, and the
//! embedded model writes a few tokens as a Haswell runs it, moot's AVX2 kernel chosen at run
//! time. The CPUs are qemu's user-mode emulation (`qemu-x86_64 -cpu …`, which scripts/setup
//! installs).

#[cfg(feature = "local")]
#[path = "support/model.rs"]
mod model;

#[cfg(feature = "local")]
use serde_json::{Value, json};
#[cfg(feature = "local")]
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
#[cfg(feature = "local")]
use std::time::{Duration, Instant};

const QUESTION: &str = "Should we use Redis or PostgreSQL for caching?";

/// qemu's user-mode emulator, which scripts/setup installs; its absence fails the test.
fn qemu() -> &'static str {
    let found = Command::new("qemu-x86_64")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "qemu-x86_64 is not installed: scripts/setup installs it (Debian's qemu-user)"
    );
    "qemu-x86_64"
}

/// moot run as `cpu` runs it, in a fresh home.
fn as_cpu(cpu: &str, home: &Path) -> Command {
    let mut command = Command::new(qemu());
    command
        .args(["-cpu", cpu, env!("CARGO_BIN_EXE_moot")])
        .current_dir(home)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("MOOT_HOME", home.join("moot-home"))
        .env("MOOT_CONFIG", home.join("config.toml"))
        .env("OLLAMA_HOST", "127.0.0.1:9");
    command
}

#[test]
fn a_scripted_debate_runs_on_a_nehalem_and_a_haswell() {
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/demo/redis-vs-postgres.json");
    for cpu in ["Nehalem", "Haswell"] {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join("config.toml"), "").unwrap();
        let output = as_cpu(cpu, home.path())
            .args(["--headless", "--no-lessons", "--script"])
            .arg(&demo)
            .arg(QUESTION)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "{cpu}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(stdout.contains("\"debate_completed\""), "{cpu}: {stdout}");
    }
}

/// Reads a worker's lines until one is `wanted` (by its key), with a deadline.
#[cfg(feature = "local")]
fn until(lines: &std::sync::mpsc::Receiver<String>, wanted: &str, deadline: Instant) -> Vec<Value> {
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = lines
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("no {wanted:?} from the worker in time; it said {seen:?}"));
        let value: Value = serde_json::from_str(&line).unwrap();
        let found = value.get(wanted).is_some();
        seen.push(value);
        if found {
            return seen;
        }
        assert!(
            seen.last().unwrap().get("failed").is_none(),
            "the worker failed: {seen:?}"
        );
    }
}

/// The embedded model's worker run as a Haswell runs it: it chooses moot's AVX2 kernel for
/// the CPU it finds, and writes a short reply.
#[cfg(feature = "local")]
#[test]
fn the_embedded_model_writes_a_few_tokens_on_a_haswell_with_its_avx2_kernel() {
    let home = tempfile::tempdir().unwrap();
    let model = model::model_path();
    let mut worker = as_cpu("Haswell", home.path())
        .arg(moot::llm::local::worker::SUBCOMMAND)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = worker.stdin.take().unwrap();
    let stdout = worker.stdout.take().unwrap();
    let (sender, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    // A small context and one sequence: emulation is slow. The model's Q8_0 copy is made
    // where the rest of the suite keeps it, or found there.
    let start = json!({
        "path": model,
        "settings": {"context": 256, "sequences": 1, "threads": 2},
        "openings": home.path().join("openings"),
        "widened": model.parent().unwrap().join("widened"),
        "as_stored": false
    });
    writeln!(stdin, "{start}").unwrap();
    let deadline = Instant::now() + Duration::from_secs(600);
    let ready = until(&lines, "ready", deadline);
    let kernels = ready.last().unwrap()["ready"]["kernels"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(kernels.starts_with("q8_0 avx2"), "{kernels}");
    let request = json!({"request": {"id": 1, "request": {
        "seat": "A", "system": "", "messages": [["user", "Say hello."]], "reply": null,
        "max_tokens": 3, "temperature": 0.0, "reply_bytes": null
    }}});
    writeln!(stdin, "{request}").unwrap();
    let replies = until(&lines, "done", deadline);
    let done = &replies.last().unwrap()["done"];
    assert_eq!(done["id"], 1);
    let text = done["completion"]["text"].as_str().unwrap();
    assert!(!text.trim().is_empty(), "{replies:?}");
    drop(stdin);
    assert!(
        worker.wait().unwrap().success(),
        "the worker ends when moot closes its stdin"
    );
}
