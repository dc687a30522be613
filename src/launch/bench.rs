//! `moot bench`: its runs with progress on stderr, and the results table.

use super::{block_on, ensure_local_model, open_store};
use crate::commands::Failure;
use crate::config::Config;
use crate::providers;
use crate::session::DebateSettings;
use crate::store::Store;
use std::io::IsTerminal;

/// `moot bench`: builds (or reloads) the run, runs what is missing with a progress bar on a
/// terminal, prints the table and writes the JSON and markdown reports.
pub(super) fn bench_command(args: crate::cli::BenchArgs, config: &Config) -> Result<i32, Failure> {
    use crate::bench::{self, BenchSettings, arms::Shape};
    let store = open_store()?;
    let spec = providers::resolve(
        &crate::providers::ProviderFlags::from(&args.provider),
        config,
    )
    .map_err(|e| Failure::usage(e.to_string()))?;
    ensure_local_model(&spec, args.yes)?;
    let host = super::host();
    let builder = host.provider_builder(&store, &config.retry);
    let provider = builder.build(&spec).map_err(|e| match e {
        providers::ProviderError::Http(e) => Failure::runtime(e.to_string()),
        e => Failure::usage(e.to_string()),
    })?;
    let (id, settings) = match &args.resume {
        Some(id) => {
            let stored = store.bench_run(id)?.ok_or_else(|| {
                Failure::usage(format!(
                    "there is no bench run {id}; its id is printed when it starts"
                ))
            })?;
            let settings: BenchSettings = serde_json::from_value(stored).map_err(|e| {
                Failure::runtime(format!("the stored bench run {id} cannot be read: {e}"))
            })?;
            (id.clone(), settings)
        }
        None => new_bench_run(&args, provider.as_ref(), &store)?,
    };
    let shape = Shape {
        agents: settings.agents,
        rounds: settings.rounds,
        samples: settings.samples,
        retry: crate::llm::RetryPolicy {
            max_attempts: config.retry.max_attempts.max(1),
            base_delay: std::time::Duration::from_millis(config.retry.base_delay_ms),
            max_delay: std::time::Duration::from_millis(config.retry.max_delay_ms),
        },
    };
    let runners = bench_runners(
        &settings,
        config,
        &spec,
        &host,
        &builder,
        args.yes,
        provider.clone(),
    )?;
    let progress = bench_progress(&id, &settings);
    let mut report = block_on(bench::run(
        &store, &id, &settings, &runners, &shape, &progress,
    ))?
    .map_err(|e| Failure::runtime(e.to_string()))?;
    // The model a server names in its replies is known only once it has replied.
    report.provider = format!("{} / {}", provider.kind(), provider.model());
    if !runners.seats.is_empty() {
        report.mixed_seats = runners
            .seats
            .iter()
            .enumerate()
            .map(|(seat, on)| {
                format!(
                    "{}: {} / {}",
                    crate::bench::seat_letter(seat),
                    on.kind(),
                    on.model()
                )
            })
            .collect();
    }
    let _ = store.save_capabilities(&builder.capabilities.stored());
    let markdown = report.to_markdown();
    let json =
        serde_json::to_string_pretty(&report).map_err(|e| Failure::runtime(e.to_string()))?;
    std::fs::create_dir_all(&args.out)
        .map_err(|e| Failure::usage(format!("cannot create {}: {e}", args.out.display())))?;
    for (extension, text) in [("json", &json), ("md", &markdown)] {
        let path = args.out.join(format!("{id}.{extension}"));
        std::fs::write(&path, text)
            .map_err(|e| Failure::runtime(format!("cannot write {}: {e}", path.display())))?;
    }
    if args.json {
        println!("{json}");
    } else {
        print!("{markdown}");
        println!(
            "\nWritten: {} and {}",
            args.out.join(format!("{id}.json")).display(),
            args.out.join(format!("{id}.md")).display()
        );
    }
    let failed = report.arms.iter().any(|arm| arm.failed > 0);
    Ok(if failed { 1 } else { 0 })
}

/// What a run's arms run on: the provider; the mixed arm's seats, each on the model
/// `--seat-model` gives it; and, when the debate is a protocol's, the settings of its
/// debates for each debate arm (a protocol's debates run on the same provider, quietly).
fn bench_runners(
    settings: &crate::bench::BenchSettings,
    config: &Config,
    spec: &providers::ProviderSpec,
    host: &crate::session::Host,
    builder: &providers::Builder,
    yes: bool,
    provider: std::sync::Arc<dyn crate::llm::Provider>,
) -> Result<crate::bench::Runners, Failure> {
    use crate::bench::{Runners, arms::Arm, arms::ProtocolArm, seat_letter};
    let seat_models: Vec<String> = settings
        .seat_models
        .iter()
        .map(|(seat, model)| format!("{seat}={model}"))
        .collect();
    let mut runners = Runners::on(provider.clone());
    let Some(name) = &settings.protocol else {
        if settings.arms.contains(&Arm::Mixed) {
            for seat in 0..settings.agents {
                let seat_provider = match settings.seat_models.get(&seat_letter(seat)) {
                    Some(given) => {
                        let refused = |why: String| {
                            Failure::usage(format!(
                                "--seat-model {}={given}: {why}",
                                seat_letter(seat)
                            ))
                        };
                        let (profile, model) = crate::protocol::provider_and_model(given);
                        let seat_spec = crate::session::seat_provider(config, spec, profile, model)
                            .map_err(|e| refused(e.to_string()))?;
                        ensure_local_model(&seat_spec, yes)?;
                        builder
                            .build(&seat_spec)
                            .map_err(|e| refused(e.to_string()))?
                    }
                    None => provider.clone(),
                };
                runners.seats.push(seat_provider);
            }
        }
        return Ok(runners);
    };
    for arm in settings.arms.iter().filter(|arm| arm.is_debate()) {
        let flags: std::collections::BTreeMap<String, Vec<String>> = (*arm == Arm::BlindFirst)
            .then(|| {
                (
                    crate::protocol::kit::BLIND_FIRST_FLAG.name.to_string(),
                    vec![String::new()],
                )
            })
            .into_iter()
            .collect();
        let seats: &[String] = if *arm == Arm::Mixed {
            &seat_models
        } else {
            &[]
        };
        let template = DebateSettings::for_bench(
            &host.protocols,
            config,
            spec.clone(),
            &crate::session::BenchDebate {
                protocol: name,
                rounds: settings.rounds as u32,
                seats: settings.agents as u32,
                flags: &flags,
                seat_models: seats,
            },
        )
        .map_err(Failure::from)?;
        runners.protocol.insert(
            *arm,
            ProtocolArm {
                host: host.clone(),
                settings: template,
            },
        );
    }
    Ok(runners)
}

/// Says what a bench run will do, and returns the progress bar it draws on a terminal.
pub(super) fn bench_progress(
    id: &str,
    settings: &crate::bench::BenchSettings,
) -> impl Fn(usize, usize) + use<> {
    let terminal = std::io::stderr().is_terminal();
    eprintln!(
        "moot bench {id}: {} problems from {}, arms {}, on {} (`moot bench --resume {id}` continues it)",
        settings.problems.len(),
        settings.set,
        settings
            .arms
            .iter()
            .map(|a| a.label())
            .collect::<Vec<_>>()
            .join(", "),
        settings.provider
    );
    move |done: usize, total: usize| {
        if terminal {
            let width = 30;
            let filled = done * width / total.max(1);
            eprint!(
                "\r  [{}{}] {done}/{total} problems",
                "#".repeat(filled),
                "·".repeat(width - filled)
            );
            if done == total {
                eprintln!();
            }
        }
    }
}

/// A new bench run from its flags: the arms, the problems of its set, stored before it runs.
pub(super) fn new_bench_run(
    args: &crate::cli::BenchArgs,
    provider: &dyn crate::llm::Provider,
    store: &Store,
) -> Result<(String, crate::bench::BenchSettings), Failure> {
    use crate::bench::{self, BenchSettings, data};
    let seat_models = bench_seat_models(args)?;
    let arms = bench_arms(args, &seat_models)?;
    let count = args.problems as usize;
    let kind = args.set.as_deref().unwrap_or("arithmetic");
    if args.dataset.is_some() && ["arithmetic", "words"].contains(&kind) && args.set.is_some() {
        return Err(Failure::usage(format!(
            "--set {kind} is moot's own problems; a --dataset is read as plain questions, or with --set choice or --set code in their shapes"
        )));
    }
    if kind == "code" && args.protocol.is_some() {
        return Err(Failure::usage(
            "--set code runs Du et al.'s exchange as its debate arm (every arm writes code for the hidden tests); drop --protocol",
        ));
    }
    let (set, problems) = match (&args.dataset, kind) {
        (Some(path), _) => (
            match kind {
                "choice" | "code" => format!("{} ({kind})", path.display()),
                _ => path.display().to_string(),
            },
            data::dataset_as(path, kind)
                .map_err(|e| Failure::usage(e.to_string()))?
                .into_iter()
                .take(count)
                .collect(),
        ),
        (None, "words") => (
            "words".to_string(),
            data::words(count).map_err(|e| Failure::runtime(e.to_string()))?,
        ),
        (None, "choice" | "code") => (
            kind.to_string(),
            data::bundled(kind, count).map_err(|e| Failure::runtime(e.to_string()))?,
        ),
        (None, _) => ("arithmetic".to_string(), data::arithmetic(count, args.seed)),
    };
    let settings = BenchSettings {
        set,
        problems,
        seed: args.seed,
        arms,
        agents: args.agents as usize,
        rounds: args.rounds as usize,
        samples: args
            .samples
            .map_or((args.agents * args.rounds) as usize, |s| s as usize),
        jobs: args.jobs as usize,
        provider: format!("{} / {}", provider.kind(), provider.model()),
        protocol: args.protocol.clone(),
        unsandboxed_hooks: args.unsandboxed_hooks,
        seat_models,
    };
    let id = bench::new_run_id();
    let value = serde_json::to_value(&settings).map_err(|e| Failure::runtime(e.to_string()))?;
    store.create_bench_run(&id, &value)?;
    Ok((id, settings))
}

/// `--seat-model SEAT=PROVIDER[:MODEL]`: the mixed arm's seats by letter, each checked to be
/// one of the run's `--agents`.
fn bench_seat_models(
    args: &crate::cli::BenchArgs,
) -> Result<std::collections::BTreeMap<String, String>, Failure> {
    let letters: Vec<String> = (0..args.agents as usize)
        .map(crate::bench::seat_letter)
        .collect();
    let mut seat_models = std::collections::BTreeMap::new();
    for given in &args.seat_models {
        let refused = |why: String| Failure::usage(format!("--seat-model {given}: {why}"));
        let Some((seat, model)) = given.split_once('=') else {
            return Err(refused(
                "write it as SEAT=PROVIDER[:MODEL], as in B=ollama:qwen2.5".into(),
            ));
        };
        let seat = seat.trim().to_uppercase();
        if !letters.contains(&seat) {
            return Err(refused(format!(
                "the bench's seats are {} (one per --agents, A the first)",
                letters.join(", ")
            )));
        }
        if crate::protocol::provider_and_model(model).0.is_none() {
            return Err(refused("name the provider after `=`".into()));
        }
        seat_models.insert(seat, model.trim().to_string());
    }
    Ok(seat_models)
}

/// The arms asked for (`--arms`), or single, self-consistency and debate with blind-first and
/// mixed beside them when `--blind-first` and `--seat-model` ask for them; an arm without what
/// it runs on is refused.
fn bench_arms(
    args: &crate::cli::BenchArgs,
    seat_models: &std::collections::BTreeMap<String, String>,
) -> Result<Vec<crate::bench::arms::Arm>, Failure> {
    use crate::bench::arms::Arm;
    let arms = if args.arms.is_empty() {
        let mut arms = vec![Arm::Single, Arm::SelfConsistency, Arm::Debate];
        if args.blind_first {
            arms.push(Arm::BlindFirst);
        }
        if !seat_models.is_empty() {
            arms.push(Arm::Mixed);
        }
        arms
    } else {
        let mut arms = Vec::new();
        for given in &args.arms {
            let arm = Arm::parse_flag(given).map_err(|e| Failure::usage(format!("--arms: {e}")))?;
            if !arms.contains(&arm) {
                arms.push(arm);
            }
        }
        arms
    };
    let blind = arms.contains(&Arm::BlindFirst);
    if (blind || args.blind_first) && args.protocol.is_none() {
        return Err(Failure::usage(
            "--blind-first is an arm of a protocol's debate: Du et al.'s exchange already answers alone in round 1; add --protocol moderated or --protocol arena",
        ));
    }
    if args.blind_first && !blind {
        return Err(Failure::usage(
            "--blind-first adds the blind-first arm, which --arms leaves out; add blind-first to --arms",
        ));
    }
    match (arms.contains(&Arm::Mixed), seat_models.is_empty()) {
        (true, true) => Err(Failure::usage(
            "the mixed arm puts seats on models of their own; name them with --seat-model SEAT=PROVIDER[:MODEL], as in --seat-model B=ollama:qwen2.5",
        )),
        (false, false) => Err(Failure::usage(
            "--seat-model is for the mixed arm, which --arms leaves out; add mixed to --arms",
        )),
        _ => Ok(arms),
    }
}
