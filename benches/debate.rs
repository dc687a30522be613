//! The moderated debate against the stand-in server answering every call after 200 ms:
//! wall time of a 3-seat, 3-round debate (parallel and `--sequential`) against its critical
//! path, peak RSS of the real binary running it, and prompt tokens of a 4-round debate
//! against a full-transcript baseline; the same wall-time figures for a panel of 3 judges × 2
//! rounds with options proposed first; and a 2-round formal dialogue (K gathered from this
//! repository, every turn strictly after the one before) against its critical path.
//! `cargo bench --bench debate`.

#[path = "../tests/support/mod.rs"]
mod support;

use moot::config::{Config, TokenBudget};
use moot::debate::{Named as _, Phase, Turn};
use moot::providers::ProviderSpec;
use moot::session::DebateSettings;
use std::process::{Command, Stdio};
use std::time::Duration;
use support::{Behaviour, StandIn};

const LATENCY: Duration = Duration::from_millis(200);
const QUESTION: &str = "How should we structure the plugin system?";

fn main() {
    let server = StandIn::start_in_background(Behaviour {
        debaters: 3,
        latency: LATENCY,
        extra_words: 120,
        ..Behaviour::default()
    });
    report_critical_path(&server);
    report_peak_rss(&server);
    report_prompt_tokens(&server);
    let panel = StandIn::start_in_background(Behaviour {
        latency: LATENCY,
        // Three ways apart in round 1; Value and Effort come round to A in round 2.
        panel_votes: vec![
            ("R", vec!["A"]),
            ("V", vec!["B", "A"]),
            ("E", vec!["C", "A"]),
        ],
        ..Behaviour::default()
    });
    report_panel_critical_path(&panel);
    report_dialogue_critical_path(&panel);
    SERVER.set(server).ok();
    PANEL_SERVER.set(panel).ok();
    divan::main();
}

static SERVER: std::sync::OnceLock<StandIn> = std::sync::OnceLock::new();
static PANEL_SERVER: std::sync::OnceLock<StandIn> = std::sync::OnceLock::new();

fn settings(server: &StandIn, rounds: u32, sequential: bool) -> DebateSettings {
    let spec = ProviderSpec {
        model: "stand-in".into(),
        ..ProviderSpec::openai(&server.openai_base())
    };
    let mut settings =
        DebateSettings::from_config(&moot::protocol::builtin(), &Config::default(), spec).unwrap();
    // Lessons are their own tests; a reflection step would change what these count.
    settings.lessons.enabled = false;
    settings.max_rounds = rounds;
    settings.perspectives = Some(3);
    settings.checkpoints = false;
    settings.write_decision = false;
    settings.sequential = sequential;
    settings.token_budget_per_round = TokenBudget::Unlimited;
    settings
}

/// A panel of the default three judges, two rounds at most, options proposed by the moderator.
fn panel_settings(server: &StandIn, sequential: bool) -> DebateSettings {
    let spec = ProviderSpec {
        model: "stand-in".into(),
        ..ProviderSpec::openai(&server.openai_base())
    };
    let config = Config::parse(
        "protocol = \"panel\"\n[panel]\nmax_rounds = 2\n",
        std::path::Path::new("bench.toml"),
    )
    .unwrap();
    let mut settings =
        DebateSettings::from_config(&moot::protocol::builtin(), &config, spec).unwrap();
    // Lessons are their own tests; a reflection step would change what these count.
    settings.lessons.enabled = false;
    settings.checkpoints = false;
    settings.write_decision = false;
    settings.sequential = sequential;
    settings
}

/// Runs one debate in-process; returns its wall time and journaled turns.
fn debate(server: &StandIn, rounds: u32, sequential: bool) -> (Duration, Vec<Turn>) {
    run(settings(server, rounds, sequential))
}

fn run(settings: DebateSettings) -> (Duration, Vec<Turn>) {
    support::session::timed(QUESTION, settings)
}

/// How many steps must follow one another, and how long they took (see
/// `support::session::critical_steps`).
fn critical_path(turns: &[Turn], parallel: &[Phase]) -> (usize, Duration) {
    let steps = support::session::critical_steps(turns, parallel);
    (
        steps.len(),
        Duration::from_millis(steps.iter().map(|(_, ms)| ms).sum()),
    )
}

fn report_critical_path(server: &StandIn) {
    let (wall, turns) = debate(server, 3, false);
    let (steps, measured) = critical_path(&turns, &[Phase::Argument]);
    let nominal = LATENCY * steps as u32;
    let (sequential_wall, sequential_turns) = debate(server, 3, true);
    eprintln!(
        "debate: 3 seats, 3 rounds, stand-in latency {} ms",
        LATENCY.as_millis()
    );
    eprintln!(
        "  parallel:   wall {:>6} ms | critical path {steps} steps = {} ms nominal, {} ms as journaled | wall / nominal = {:.3}",
        wall.as_millis(),
        nominal.as_millis(),
        measured.as_millis(),
        wall.as_secs_f64() / nominal.as_secs_f64()
    );
    eprintln!(
        "  sequential: wall {:>6} ms | {} calls one after another = {} ms nominal",
        sequential_wall.as_millis(),
        sequential_turns.len(),
        (LATENCY * sequential_turns.len() as u32).as_millis()
    );
}

fn report_panel_critical_path(server: &StandIn) {
    let (wall, turns) = run(panel_settings(server, false));
    let (steps, measured) = critical_path(&turns, &[Phase::Recommendation, Phase::Challenge]);
    let nominal = LATENCY * steps as u32;
    let (sequential_wall, sequential_turns) = run(panel_settings(server, true));
    let rounds = turns.iter().map(|t| t.round).max().unwrap_or(0);
    eprintln!(
        "panel: 3 judges, {rounds} rounds, options proposed first, stand-in latency {} ms",
        LATENCY.as_millis()
    );
    eprintln!(
        "  parallel:   wall {:>6} ms | critical path {steps} model steps = {} ms nominal, {} ms as journaled | wall / nominal = {:.3}",
        wall.as_millis(),
        nominal.as_millis(),
        measured.as_millis(),
        wall.as_secs_f64() / nominal.as_secs_f64()
    );
    eprintln!(
        "  sequential: wall {:>6} ms | {} calls one after another = {} ms nominal | sequential / parallel = {:.2}",
        sequential_wall.as_millis(),
        sequential_turns.len(),
        (LATENCY * sequential_turns.len() as u32).as_millis(),
        sequential_wall.as_secs_f64() / wall.as_secs_f64()
    );
}

/// A 2-round dialogue whose K is gathered from this repository.
fn dialogue_settings(server: &StandIn) -> DebateSettings {
    let spec = ProviderSpec {
        model: "stand-in".into(),
        ..ProviderSpec::openai(&server.openai_base())
    };
    let mut settings =
        DebateSettings::from_config(&moot::protocol::builtin(), &Config::default(), spec.clone())
            .unwrap();
    // Lessons are their own tests; a reflection step would change what these count.
    settings.lessons.enabled = false;
    settings.checkpoints = false;
    settings.write_decision = false;
    settings.protocol = "dialogue".into();
    settings.protocol_settings = moot::protocol::builtin()
        .named("dialogue")
        .unwrap()
        .settings(&moot::protocol::SettingsInput {
            flags: &Default::default(),
            table: None,
            config_path: None,
            cwd: std::path::Path::new(env!("CARGO_MANIFEST_DIR")),
            max_rounds: Some(2),
            question: Some(DIALOGUE_TOPIC),
            perspectives: &[],
            outside: false,
            resolve_provider: &|_, _| Ok(serde_json::Value::Null),
        })
        .unwrap();
    settings
}

const DIALOGUE_TOPIC: &str = "We should replace the hand-rolled retry loop with a retry layer";

fn report_dialogue_critical_path(server: &StandIn) {
    let (wall, turns) = run(dialogue_settings(server));
    // Strict alternation: every turn is its own step.
    let (steps, measured) = critical_path(&turns, &[]);
    let nominal = LATENCY * steps as u32;
    eprintln!(
        "dialogue: 2 rounds (context, opening, 2 rounds, closing, verdict), stand-in latency {} ms",
        LATENCY.as_millis()
    );
    eprintln!(
        "  wall {:>6} ms | critical path {steps} model steps = {} ms nominal, {} ms as journaled | wall / journaled = {:.3}",
        wall.as_millis(),
        nominal.as_millis(),
        measured.as_millis(),
        wall.as_secs_f64() / measured.as_secs_f64()
    );
}

fn report_peak_rss(server: &StandIn) {
    let home = tempfile::tempdir().unwrap();
    let binary = env!("CARGO_BIN_EXE_moot");
    std::fs::write(home.path().join("none.toml"), "").unwrap();
    let status = Command::new(binary)
        .current_dir(home.path())
        .env("MOOT_HOME", home.path())
        .env("MOOT_CONFIG", home.path().join("none.toml"))
        .env("OPENAI_BASE_URL", server.openai_base())
        .args([
            "--headless",
            "--max-rounds",
            "3",
            "--perspectives",
            "3",
            "--no-checkpoints",
            "--no-write",
            QUESTION,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct we own.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    eprintln!(
        "  peak RSS of `moot --headless` for that debate: {:.1} MB",
        usage.ru_maxrss as f64 / 1024.0
    );
}

fn report_prompt_tokens(server: &StandIn) {
    let before = server.seen().len();
    let (_, turns) = debate(server, 4, false);
    let requests: Vec<_> = server.seen()[before..].to_vec();
    let tokens = |chars: usize| chars.div_ceil(4);
    let mut ours = 0;
    let mut baseline = 0;
    for request in &requests {
        let messages = request.body["messages"].as_array().unwrap();
        let system = messages[0]["content"].as_str().unwrap().len();
        let prompt: usize = messages[1..]
            .iter()
            .map(|m| m["content"].as_str().unwrap().len())
            .sum();
        // The baseline: same system prompt, the question and every earlier turn in full.
        let Some(position) = turns.iter().position(|t| {
            t.phase.as_str() == request.kind
                && (t.phase == Phase::Synthesis || t.round == request.round)
                && request.seat.as_deref().is_none_or(|s| s == t.seat)
        }) else {
            continue;
        };
        ours += tokens(system + prompt);
        let transcript: usize = turns[..position]
            .iter()
            .map(|t| t.content.len() + t.seat.len() + 16)
            .sum();
        baseline += tokens(system + QUESTION.len() + transcript + 200);
    }
    let synthesis = turns
        .iter()
        .find(|t| t.phase == Phase::Synthesis)
        .map(|t| t.content.clone())
        .unwrap_or_default();
    let cited_rounds = (1..=4)
        .filter(|r| {
            ["A", "B", "C"]
                .iter()
                .any(|s| synthesis.contains(&format!("[{s}{r}.")))
        })
        .count();
    eprintln!(
        "  prompt tokens over a 4-round, 3-seat debate: {ours} sent vs {baseline} for full transcripts = {:.2} of the baseline; synthesis cites arguments from {cited_rounds} of 4 rounds",
        ours as f64 / baseline as f64
    );
}

#[divan::bench(sample_count = 3, sample_size = 1)]
fn moderated_3_seats_3_rounds_parallel() -> Duration {
    debate(SERVER.get().unwrap(), 3, false).0
}

#[divan::bench(sample_count = 3, sample_size = 1)]
fn moderated_3_seats_3_rounds_sequential() -> Duration {
    debate(SERVER.get().unwrap(), 3, true).0
}

#[divan::bench(sample_count = 3, sample_size = 1)]
fn panel_3_judges_2_rounds_parallel() -> Duration {
    run(panel_settings(PANEL_SERVER.get().unwrap(), false)).0
}

#[divan::bench(sample_count = 3, sample_size = 1)]
fn dialogue_2_rounds() -> Duration {
    run(dialogue_settings(PANEL_SERVER.get().unwrap())).0
}

#[divan::bench(sample_count = 3, sample_size = 1)]
fn panel_3_judges_2_rounds_sequential() -> Duration {
    run(panel_settings(PANEL_SERVER.get().unwrap(), true)).0
}
