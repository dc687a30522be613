//! The workbench as a user meets it, driven on a pseudo-terminal: time to the first frame
//! (beside the floor this machine puts under it: a shell printing the same text),
//! key-press-to-screen latency while 4 seats stream 500 tokens a second each, and CPU and
//! output while a finished debate sits on screen, and a key on that screen. `cargo bench --bench
//! latency`.

#[path = "../tests/support/mod.rs"]
mod support;

use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use support::pty::{Pty, cpu_time};

fn main() {
    report_idle();
    divan::main();
}

fn scratch() -> &'static (tempfile::TempDir, PathBuf) {
    static SCRATCH: std::sync::OnceLock<(tempfile::TempDir, PathBuf)> = std::sync::OnceLock::new();
    SCRATCH.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.toml"), "").unwrap();
        let script = dir.path().join("streaming.json");
        std::fs::write(&script, streaming_script().to_string()).unwrap();
        (dir, script)
    })
}

/// Four seats whose arguments stream 8 characters (≈2 tokens) every 4 ms: ≈500 tokens/s each,
/// for about 40 seconds.
fn streaming_script() -> serde_json::Value {
    let mut replies = vec![
        json!({"phase": "analysis", "reply": {"domain": "architecture", "constraints": [], "binary": false, "debaters": 4, "vague": false}}),
        json!({"phase": "pose", "reply": "Round 1: go."}),
    ];
    let words = "the cache path must stay within its latency budget while operations stay simple ";
    for seat in ["A", "B", "C", "D"] {
        replies.push(json!({
            "phase": "argument", "seat": seat, "chunk_chars": 8, "delay_ms": 4,
            "reply": {"argument": words.repeat(1000), "moves": [], "confidence": 0.5, "position": seat}
        }));
    }
    json!({"model": "streaming", "replies": replies})
}

fn moot(home: &Path, args: &[&str]) -> Command {
    support::pty::moot(home, None, args)
}

#[divan::bench(sample_count = 60, sample_size = 1)]
fn first_frame_of_a_new_debate(bencher: divan::Bencher) {
    let (dir, script) = scratch();
    bencher.bench_local(|| {
        let started = Instant::now();
        let pty = Pty::spawn(&mut moot(
            dir.path(),
            &[
                "--script",
                script.to_str().unwrap(),
                "How should we structure the plugin system?",
            ],
        ));
        pty.wait_for(" moot ");
        let elapsed = started.elapsed();
        drop(pty);
        elapsed
    });
}

/// The floor under the first frame on this machine: the same spawn on the same pseudo-terminal
/// and the same wait for the same text, of a shell that only prints it. What the first frame
/// takes beyond this is moot's own start.
#[divan::bench(sample_count = 60, sample_size = 1)]
fn first_frame_floor_a_shell_printing_the_title(bencher: divan::Bencher) {
    let (dir, _) = scratch();
    bencher.bench_local(|| {
        let started = Instant::now();
        let mut shell = Command::new("sh");
        shell
            .current_dir(dir.path())
            .env_clear()
            .args(["-c", "printf ' moot '; exec sleep 30"]);
        let pty = Pty::spawn(&mut shell);
        pty.wait_for(" moot ");
        let elapsed = started.elapsed();
        drop(pty);
        elapsed
    });
}

#[divan::bench(sample_count = 40, sample_size = 1)]
fn key_to_screen_while_four_seats_stream(bencher: divan::Bencher) {
    let (dir, script) = scratch();
    let mut pty = Pty::spawn(&mut moot(
        dir.path(),
        &[
            "--script",
            script.to_str().unwrap(),
            "How should we structure the plugin system?",
        ],
    ));
    // The four seats stream in parallel (at 140 columns the panes show as tabs).
    pty.wait_until(|screen| screen.contains("A Performance") || screen.contains("cache path"));
    pty.wait_for("cache path");
    time_toggles(bencher, &mut pty);
    drop(pty);
}

/// Times `t` (each seat's token counts in the pane titles, on or off) until the screen shows it.
fn time_toggles(bencher: divan::Bencher, pty: &mut Pty) {
    let mut shown = false;
    bencher.bench_local(|| {
        let started = Instant::now();
        pty.press(b"t");
        shown = !shown;
        pty.wait_until(|screen| screen.contains('↑') == shown);
        started.elapsed()
    });
}

/// A key on a finished debate's screen, where no stream wakes the screen between keys: only
/// the key itself can (the clock ticks every 100 ms).
#[divan::bench(sample_count = 40, sample_size = 1)]
fn key_to_screen_with_nothing_streaming(bencher: divan::Bencher) {
    let mut pty = finished_demo();
    time_toggles(bencher, &mut pty);
    pty.press(b"q");
    pty.wait_exit();
}

/// The recorded demo debate run to its end on the workbench, which stays open on it.
fn finished_demo() -> Pty {
    let (dir, _) = scratch();
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/demo/redis-vs-postgres.json");
    let pty = Pty::spawn(&mut moot(
        dir.path(),
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

fn report_idle() {
    let mut pty = finished_demo();
    let pid = pty.pid();
    // Let the last frame settle, then watch the finished screen for five seconds.
    std::thread::sleep(Duration::from_millis(500));
    let (cpu_before, bytes_before) = (cpu_time(pid), pty.written());
    let window = Duration::from_secs(5);
    std::thread::sleep(window);
    let (cpu_after, bytes_after) = (cpu_time(pid), pty.written());
    let cpu = cpu_after.saturating_sub(cpu_before);
    eprintln!(
        "idle with a finished debate on screen: {} ms CPU in {} s ({:.2} %), {} bytes written to the terminal",
        cpu.as_millis(),
        window.as_secs(),
        cpu.as_secs_f64() / window.as_secs_f64() * 100.0,
        bytes_after - bytes_before
    );
    pty.press(b"q");
    pty.wait_exit();
}
