//! Following a running debate from another terminal (issue 24 item 3): a headless debate with
//! `--checkpoints wait` streams two seats at 50 tokens a second each while the workbench,
//! in a pseudo-terminal, follows it with `moot open ID`. Reports the time from the owner
//! printing a streamed token of the seat on screen to the viewer showing it (median and 90th
//! percentile),
//! and the viewer's CPU while it streams and while the debate waits. `cargo bench --bench
//! follow`.

#[path = "../tests/support/mod.rs"]
mod support;

use serde_json::json;
use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use support::pty::{Pty, cpu_time};

/// Tokens each seat streams, one every `TOKEN_MS`.
const TOKENS: usize = 400;
const TOKEN_MS: u64 = 20;
/// Tokens timed, once the viewer shows the stream.
const SAMPLES: usize = 200;

fn main() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), "").unwrap();
    let script = dir.path().join("streaming.json");
    std::fs::write(&script, streaming_script().to_string()).unwrap();
    let mut owner = moot(
        dir.path(),
        &[
            "--headless",
            "--checkpoints",
            "wait",
            "--no-lessons",
            "--no-write",
            "--script",
            script.to_str().unwrap(),
            "How should we structure the plugin system?",
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let deltas = printed_deltas(owner.stdout.take().unwrap());
    let id = wait_for_id(&deltas);
    // Following itself, without drawing: the library's follower on a thread of its own,
    // its CPU counted for that thread alone, until the debate waits at its checkpoint.
    let follower = {
        let (database, id) = (dir.path().join("data").join("moot.db"), id.clone());
        std::thread::spawn(move || follow_without_drawing(&database, &id))
    };
    let viewer = Pty::spawn(&mut moot(dir.path(), &["open", &id]));
    // Tokens printed before the viewer joined reach it only with their finished turn.
    viewer.wait_until(|screen| screen.contains(" x0"));
    while let Ok(Printed::Delta(..)) = deltas.try_recv() {}
    let pid = viewer.pid();

    // Latency: each token the owner prints, until the viewer's screen shows it.
    let mut latencies = Vec::new();
    let cpu_before = cpu_time(pid);
    let streaming_from = Instant::now();
    while latencies.len() < SAMPLES {
        match deltas.recv_timeout(Duration::from_secs(30)) {
            Ok(Printed::Delta(token, printed)) => {
                viewer.wait_until(|screen| screen.contains(&token));
                latencies.push(printed.elapsed());
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    let streaming_cpu = share(cpu_time(pid) - cpu_before, streaming_from.elapsed());
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() as f64 - 1.0) * q) as usize];
    eprintln!(
        "follow: owner prints a token → viewer shows it: median {:.1} ms, p90 {:.1} ms ({} tokens, 2 seats × {} tokens/s)",
        at(0.5).as_secs_f64() * 1000.0,
        at(0.9).as_secs_f64() * 1000.0,
        latencies.len(),
        1000 / TOKEN_MS
    );
    eprintln!("follow: viewer CPU while two seats stream: {streaming_cpu:.2} % of one core");

    let (events, cpu, wall) = follower.join().unwrap();
    eprintln!(
        "follow: following without drawing (the follower alone, {events} events): {:.2} % of one core",
        share(cpu, wall)
    );

    // Idle: the debate waits at its checkpoint; the viewer follows a socket with nothing on it.
    while !matches!(
        deltas.recv_timeout(Duration::from_secs(60)),
        Ok(Printed::Checkpoint) | Err(_)
    ) {}
    viewer.wait_until(|screen| screen.contains("Round 1 complete"));
    let window = Duration::from_secs(5);
    let before = cpu_time(pid);
    std::thread::sleep(window);
    eprintln!(
        "follow: viewer CPU while the debate waits: {:.2} % of one core",
        share(cpu_time(pid) - before, window)
    );
    let _ = owner.kill();
    let _ = owner.wait();
    drop(viewer);
}

/// Follows debate `id` with `replay::follow` until it waits at a checkpoint: how many events
/// it took, the CPU this thread spent, and the wall time.
fn follow_without_drawing(database: &Path, id: &str) -> (usize, Duration, Duration) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = moot::store::Store::open(database).unwrap();
        let started = Instant::now();
        let cpu_before = thread_cpu();
        let (events, mut following) = moot::replay::follow(&moot::protocol::builtin(), &store, id)
            .await
            .unwrap();
        let mut taken = events.len();
        while let Some(batch) = following.next().await {
            taken += batch.len();
            if batch
                .iter()
                .any(|e| matches!(e, moot::debate::Event::Checkpoint { .. }))
            {
                break;
            }
        }
        (taken, thread_cpu() - cpu_before, started.elapsed())
    })
}

/// CPU time of the calling thread.
fn thread_cpu() -> Duration {
    // SAFETY: getrusage fills the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    let micros = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Duration::from_micros(micros(usage.ru_utime) + micros(usage.ru_stime))
}

fn share(cpu: Duration, wall: Duration) -> f64 {
    cpu.as_secs_f64() / wall.as_secs_f64() * 100.0
}

/// Two seats whose arguments stream `x00001 x00002 …`, one token every `TOKEN_MS`.
fn streaming_script() -> serde_json::Value {
    let mut replies = vec![
        json!({"phase": "analysis", "reply": {"domain": "architecture", "constraints": [], "binary": false, "debaters": 2, "vague": false}}),
        json!({"phase": "pose", "repeat": true, "reply": "Round 1: go."}),
    ];
    for (seat, first) in [("A", 0), ("B", TOKENS)] {
        let text: String = (first..first + TOKENS)
            .map(|n| format!("x{n:05} "))
            .collect();
        replies.push(json!({
            "phase": "argument", "seat": seat, "chunk_chars": 7, "delay_ms": TOKEN_MS,
            "reply": {"argument": text, "moves": [], "confidence": 0.5, "position": seat}
        }));
    }
    for seat in ["A", "B"] {
        replies.push(json!({"phase": "rebuttal", "seat": seat, "reply": {"argument": "Noted.", "moves": [], "confidence": 0.5, "position": seat}}));
    }
    replies.push(json!({"phase": "evaluation", "repeat": true, "reply": {"summary": "Both streamed.", "assessment": "new_ground", "decision": "continue", "agreement": false, "leader": "", "off_topic": [], "clarification": "", "reason": "more to say"}}));
    json!({"model": "streaming", "replies": replies})
}

fn moot(home: &Path, args: &[&str]) -> Command {
    support::pty::moot(home, None, args)
}

/// What the owner printed, as it printed it.
enum Printed {
    Id(String),
    Delta(String, Instant),
    Checkpoint,
}

/// The owner's stdout as it prints: a delta's newest whole token (`x00123`) with when it was
/// printed (chunks need not end on a token, so each seat's stream is pieced together).
fn printed_deltas(stdout: std::process::ChildStdout) -> mpsc::Receiver<Printed> {
    let (sender, printed) = mpsc::channel();
    std::thread::spawn(move || {
        let mut streams: std::collections::HashMap<String, String> = Default::default();
        let mut last = String::new();
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let at = Instant::now();
            let Ok(event) = serde_json::from_str::<serde_json::Value>(&line) else {
                continue;
            };
            let sent = match event["type"].as_str() {
                Some("debate_created") => Printed::Id(event["id"].as_str().unwrap().to_string()),
                Some("turn_delta") => {
                    // The viewer's screen shows seat A's pane (at 140 columns the seats are
                    // tabs); B streams beside it, for the load.
                    let seat = event["seat"].as_str().unwrap_or("").to_string();
                    if seat != "A" {
                        continue;
                    }
                    let stream = streams.entry(seat).or_default();
                    stream.push_str(event["text"].as_str().unwrap_or(""));
                    let whole = stream.rsplit(' ').nth(1).unwrap_or("");
                    if whole.len() != 6 || !whole.starts_with('x') || whole == last {
                        continue;
                    }
                    last = whole.to_string();
                    Printed::Delta(last.clone(), at)
                }
                Some("checkpoint") => Printed::Checkpoint,
                _ => continue,
            };
            if sender.send(sent).is_err() {
                break;
            }
        }
    });
    printed
}

fn wait_for_id(printed: &mpsc::Receiver<Printed>) -> String {
    loop {
        if let Ok(Printed::Id(id)) = printed.recv_timeout(Duration::from_secs(30)) {
            return id;
        }
    }
}
