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
    // A protocol's debate arm runs as real debates on the same provider, quietly.
    let template = match &settings.protocol {
        Some(name) => {
            let template = DebateSettings::for_bench(
                &host.protocols,
                config,
                spec.clone(),
                name,
                settings.rounds as u32,
                settings.agents as u32,
                &settings
                    .blind_first
                    .then(|| ("blind-first".to_string(), vec![String::new()]))
                    .into_iter()
                    .collect(),
            )
            .map_err(Failure::from)?;
            Some(crate::bench::arms::ProtocolArm {
                host: host.clone(),
                settings: template,
            })
        }
        None => None,
    };
    let progress = bench_progress(&id, &settings);
    let mut report = block_on(bench::run(
        &store,
        &id,
        &settings,
        provider.clone(),
        &shape,
        template.as_ref(),
        &progress,
    ))?
    .map_err(|e| Failure::runtime(e.to_string()))?;
    // The model a server names in its replies is known only once it has replied.
    report.provider = format!("{} / {}", provider.kind(), provider.model());
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
    use crate::bench::{self, BenchSettings, arms::Arm, data};
    let arms = args
        .arms
        .iter()
        .map(|a| Arm::parse_flag(a))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Failure::usage(format!("--arms: {e}")))?;
    let count = args.problems as usize;
    let kind = args.set.as_deref().unwrap_or("arithmetic");
    if args.dataset.is_some() && ["arithmetic", "words"].contains(&kind) && args.set.is_some() {
        return Err(Failure::usage(format!(
            "--set {kind} is moot's own problems; a --dataset is read as plain questions, or with --set choice or --set code in their shapes"
        )));
    }
    if args.blind_first && args.protocol.is_none() {
        return Err(Failure::usage(
            "--blind-first is for a protocol's debate arm: Du et al.'s exchange already answers alone in round 1; add --protocol moderated or --protocol arena",
        ));
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
        blind_first: args.blind_first,
    };
    let id = bench::new_run_id();
    let value = serde_json::to_value(&settings).map_err(|e| Failure::runtime(e.to_string()))?;
    store.create_bench_run(&id, &value)?;
    Ok((id, settings))
}
