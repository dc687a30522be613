//! Drives a debate session in-process with answers queued up front, collecting every event it
//! announces; and, for the benchmarks, runs one to its end and splits its wall time into the
//! steps that must follow one another.

use moot::debate::{Control, Event};
use moot::session::{Finish, SessionError, Wiring};
use tokio::sync::mpsc;

/// Runs `session` with `controls` queued as the answers (given by `answerer`), and returns how
/// it finished with everything it announced.
pub async fn answered<F>(
    controls: Vec<Control>,
    answerer: &str,
    session: impl FnOnce(Wiring) -> F,
) -> (Finish, Vec<Event>)
where
    F: std::future::Future<Output = Result<Finish, SessionError>>,
{
    let (events, mut events_rx) = mpsc::unbounded_channel();
    let (controls_tx, controls_rx) = mpsc::unbounded_channel();
    for control in controls {
        controls_tx.send(control).unwrap();
    }
    let finish = session(Wiring {
        events,
        controls: controls_rx,
        answerer: answerer.into(),
    })
    .await
    .unwrap();
    drop(controls_tx);
    let mut seen = Vec::new();
    while let Some(event) = events_rx.recv().await {
        seen.push(event);
    }
    (finish, seen)
}

/// Settings for a debate of `protocol` on the scripted provider `script`, without checkpoints
/// or a decision record, its own settings made by the protocol from `flags` as `moot` makes
/// them (relative paths against `cwd`, material gathered for `question`).
#[allow(dead_code)]
pub fn scripted_settings(
    protocol: &str,
    script: &std::path::Path,
    cwd: &std::path::Path,
    flags: &[(&str, &[&str])],
    max_rounds: Option<u32>,
    question: &str,
) -> moot::session::DebateSettings {
    let mut settings = moot::session::DebateSettings::from_config(
        &moot::protocol::builtin(),
        &moot::config::Config::default(),
        moot::providers::ProviderSpec::scripted(script),
    )
    .unwrap();
    // Lessons are their own tests; a reflection step would change what these count.
    settings.lessons.enabled = false;
    settings.checkpoints = false;
    settings.write_decision = false;
    settings.protocol = protocol.into();
    let flags: std::collections::BTreeMap<String, Vec<String>> = flags
        .iter()
        .map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect()))
        .collect();
    settings.protocol_settings = moot::protocol::builtin()
        .named(protocol)
        .unwrap()
        .settings(&moot::protocol::SettingsInput {
            flags: &flags,
            table: None,
            config_path: None,
            cwd,
            max_rounds,
            question: Some(question),
            perspectives: &[],
            outside: false,
            resolve_provider: &|_, _| Ok(serde_json::Value::Null),
        })
        .unwrap();
    settings
}

/// Runs one debate in-process to its end on an in-memory journal, nobody answering (the
/// settings should ask nothing); its wall time and journaled turns.
#[allow(dead_code)]
pub fn timed(
    question: &str,
    settings: moot::session::DebateSettings,
) -> (std::time::Duration, Vec<moot::debate::Turn>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = moot::store::Store::in_memory().unwrap();
        let started = std::time::Instant::now();
        let (finish, _) = answered(Vec::new(), "the benchmark", |wiring| {
            moot::session::start(
                moot::launch::host(),
                store.clone(),
                question,
                settings,
                wiring,
                std::future::pending(),
            )
        })
        .await;
        let wall = started.elapsed();
        (wall, store.turns(&finish.id).unwrap())
    })
}

/// The steps of a debate that must follow one another, as (phase, milliseconds), each as long
/// as its slowest call: the turns of one round in a `parallel` phase are one step, every other
/// turn its own.
#[allow(dead_code)]
pub fn critical_steps(
    turns: &[moot::debate::Turn],
    parallel: &[moot::debate::Phase],
) -> Vec<(moot::debate::Phase, u64)> {
    let mut steps: Vec<(u32, moot::debate::Phase, u64)> = Vec::new();
    for turn in turns {
        if parallel.contains(&turn.phase)
            && let Some(step) = steps
                .iter_mut()
                .find(|(round, phase, _)| *round == turn.round && *phase == turn.phase)
        {
            step.2 = step.2.max(turn.latency_ms);
            continue;
        }
        steps.push((turn.round, turn.phase, turn.latency_ms));
    }
    steps
        .into_iter()
        .map(|(_, phase, ms)| (phase, ms))
        .collect()
}
