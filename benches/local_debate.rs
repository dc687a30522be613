//! Whole moderated debates on the embedded default model, run in-process as `moot --headless
//! --no-lessons --no-checkpoints` runs them: the wall time of a 1-round, 2-seat and a 3-round,
//! 3-seat debate, and where it went (each step of the critical path, tokens written and prompt
//! tokens sent), beside how long writing those tokens takes one sequence alone on this machine;
//! each size with replies decoded alone drafted ahead from their context (the default) and
//! without, taking turns.
//! The debates' model runs in a worker process, as moot runs it (`MOOT_BENCH_IN_PROCESS=1`:
//! in this process); the one-sequence reference always runs here.
//! `cargo bench --bench local_debate` (MOOT_TEST_MODEL names another GGUF).

#[path = "../tests/support/mod.rs"]
mod support;

use support::model::model_path;

use moot::config::Config;
use moot::debate::{Phase, Turn};
use moot::llm::embedded::LocalSettings;
use moot::llm::local::LocalProvider;
use moot::llm::{ChatMessage, ChatRequest, RequestLabel};
use moot::providers::ProviderSpec;
use moot::session::DebateSettings;
use std::time::Duration;

const QUESTION: &str = "Should we use Redis or PostgreSQL for caching?";

/// Debates of each size measured (after one that is not counted: see `main`).
const RUNS: usize = 2;

/// The embedded model as a debate gets it, its system prompts' caches kept in `openings`, with
/// `drafts` tokens drafted ahead a step (none: the default).
fn local_spec(openings: &std::path::Path, drafts: Option<u32>) -> ProviderSpec {
    let mut spec = moot::providers::named_spec("local", &Config::default()).unwrap();
    spec.model = model_path().display().to_string();
    spec.local = Some(LocalSettings {
        openings: Some(openings.to_path_buf()),
        drafts,
        ..LocalSettings::default()
    });
    spec
}

fn settings(spec: &ProviderSpec, rounds: u32, seats: u32) -> DebateSettings {
    let mut settings =
        DebateSettings::from_config(&moot::protocol::builtin(), &Config::default(), spec.clone())
            .unwrap();
    settings.lessons.enabled = false;
    settings.checkpoints = false;
    settings.write_decision = false;
    settings.max_rounds = rounds;
    settings.perspectives = Some(seats);
    settings
}

/// Milliseconds per token one sequence takes to write an unconstrained reply on its own, the
/// median of three replies of up to 200 tokens after a short prompt.
fn one_sequence_ms_per_token(spec: &ProviderSpec) -> f64 {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let settings = spec.local.clone().unwrap_or_default();
    let provider = LocalProvider::open(&model_path(), &settings).unwrap();
    let mut per_token: Vec<f64> = (0..3)
        .map(|run| {
            let request = ChatRequest {
                label: RequestLabel {
                    round: 1,
                    phase: Phase::Argument,
                    seat: format!("S{run}"),
                    perspective: None,
                    request: "essay",
                },
                system: format!("Session {run}. You are a careful engineer."),
                messages: vec![ChatMessage::user(
                    "Write a long essay on caching: Redis, PostgreSQL, and how to choose.",
                )],
                reply: None,
                max_tokens: Some(200),
                temperature: None,
                reply_bytes: None,
            };
            let (_, timings) = runtime
                .block_on(provider.complete_timed(&request, &mut |_| {}))
                .unwrap();
            timings.generation_ms / timings.generated_tokens.max(1) as f64
        })
        .collect();
    per_token.sort_by(f64::total_cmp);
    per_token[1]
}

fn report(label: &str, wall: Duration, turns: &[Turn], ms_per_token: f64) {
    let written: u64 = turns.iter().map(|t| t.tokens_out).sum();
    let sent: u64 = turns.iter().map(|t| t.tokens_in).sum();
    // A round's arguments are decoded together: one step.
    let steps = support::session::critical_steps(turns, &[Phase::Argument]);
    let path: u64 = steps.iter().map(|(_, ms)| ms).sum();
    let mut by_phase: Vec<(Phase, u64, usize)> = Vec::new();
    for (phase, ms) in &steps {
        match by_phase.iter_mut().find(|(p, _, _)| p == phase) {
            Some(entry) => {
                entry.1 += ms;
                entry.2 += 1;
            }
            None => by_phase.push((*phase, *ms, 1)),
        }
    }
    let phases: Vec<String> = by_phase
        .iter()
        .map(|(phase, ms, count)| format!("{phase} {:.1} s ({count})", *ms as f64 / 1000.0))
        .collect();
    eprintln!(
        "{label}: wall {:.1} s, {} turns, {written} tokens written ({:.1} ms each of wall), {sent} prompt tokens sent",
        wall.as_secs_f64(),
        turns.len(),
        wall.as_secs_f64() * 1000.0 / written.max(1) as f64,
    );
    eprintln!(
        "  critical path {:.1} s: {}",
        path as f64 / 1000.0,
        phases.join(", ")
    );
    eprintln!(
        "  those tokens written by one sequence alone at {ms_per_token:.1} ms each: {:.1} s",
        written as f64 * ms_per_token / 1000.0
    );
}

fn main() {
    // As moot runs it: the model in a worker process (moot itself, re-executed), unless
    // MOOT_BENCH_IN_PROCESS=1 asks for the engine in this process, for a comparison.
    if std::env::var_os("MOOT_BENCH_IN_PROCESS").is_some_and(|v| v == "1") {
        eprintln!("the embedded model runs in this process (MOOT_BENCH_IN_PROCESS=1)");
    } else {
        moot::llm::local::worker::run_in_workers(env!("CARGO_BIN_EXE_moot").into());
        eprintln!("the embedded model runs in moot's worker process");
    }
    let openings = tempfile::tempdir().unwrap();
    let spec = local_spec(openings.path(), None);
    // The same model (drafting is a request's setting), so both share one load.
    let undrafted = local_spec(openings.path(), Some(0));
    eprintln!("model: {}", model_path().display());
    // Without drafting, as the figure was taken before there was any.
    let ms_per_token = one_sequence_ms_per_token(&undrafted);
    eprintln!(
        "one sequence alone writes a token in {ms_per_token:.1} ms (median of 3 replies of up to 200 tokens)"
    );
    // A user's first debate on a build reads every system prompt and keeps it on disk; later
    // debates load them. The first is reported, not counted.
    let (wall, turns) = support::session::timed(QUESTION, settings(&spec, 1, 2));
    report(
        "first debate of this build, 1 round, 2 seats (system prompts read and kept)",
        wall,
        &turns,
        ms_per_token,
    );
    for (rounds, seats, target) in [(1, 2, 30), (3, 3, 120)] {
        for run in 1..=RUNS {
            for (spec, drafting) in [(&spec, "drafting"), (&undrafted, "no drafting")] {
                let (wall, turns) =
                    support::session::timed(QUESTION, settings(spec, rounds, seats));
                report(
                    &format!(
                        "{rounds} round(s), {seats} seats, {drafting}, run {run} of {RUNS} (target {target} s)"
                    ),
                    wall,
                    &turns,
                    ms_per_token,
                );
            }
        }
    }
}
