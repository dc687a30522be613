//! moot's entry point: parse arguments, load config, open the journal, hand over to a face.

// A panic is never how moot reports a problem: outside tests, an unwrap or expect is refused
// at compile time (errors carry what went wrong and how to fix it instead).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

use clap::{CommandFactory, FromArgMatches};
use moot::cli::{CheckpointMode, Cli, Command, FaceArgs, ModelCommand, ProviderArgs, RunArgs};
use moot::commands::{self, Failure};
use moot::config::Config;
use moot::headless::{self, CheckpointAnswers};
use moot::llm::ProviderKind;
use moot::llm::local::models;
use moot::providers::{self, ProviderSpec};
use moot::session::{self, DebateSettings, ResumeChanges};
use moot::store::Store;
use moot::tui;
use moot::tui::history::{NewDebate, ProtocolChoice};
use moot::tui::keymap::Keymap;
use moot::tui::run::{Run, Setup, Start};
use moot::tui::theme::{Depth, Theme};
use moot::{paths, sanitize};
use std::ffi::OsString;
use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

fn main() -> ExitCode {
    // An internal error is reported in one line, never as a raw backtrace.
    std::panic::set_hook(Box::new(|info| {
        let message = sanitize::clean(&info.to_string());
        eprintln!("moot: internal error: {message}\nPlease report it; the journal is unaffected.");
    }));
    let cli = match parse(hoist_subcommand(std::env::args_os().collect())) {
        Ok(cli) => cli,
        Err(error) => {
            let code = if error.use_stderr() { 2 } else { 0 };
            let _ = error.print();
            return ExitCode::from(code);
        }
    };
    let code = match run(cli) {
        Ok(code) => code,
        Err(failure) => {
            eprintln!("moot: {}", failure.message);
            failure.code
        }
    };
    ExitCode::from(code.clamp(0, 255) as u8)
}

/// The command line with every registered protocol's flags (each once, however many
/// protocols declare it).
fn command() -> clap::Command {
    let mut command = Cli::command();
    let mut seen = Vec::new();
    for flag in moot::protocol::REGISTRY.iter().flat_map(|p| p.flags()) {
        if seen.contains(&flag.name) {
            continue;
        }
        seen.push(flag.name);
        let owners: Vec<&str> = moot::protocol::REGISTRY
            .iter()
            .filter(|p| p.flags().iter().any(|f| f.name == flag.name))
            .map(|p| p.name())
            .collect();
        let arg = clap::Arg::new(flag.name).long(flag.name).help(format!(
            "{} [{}]",
            flag.help,
            owners.join(", ")
        ));
        command = command.arg(match (flag.value, flag.repeatable) {
            (None, _) => arg.action(clap::ArgAction::SetTrue),
            (Some(value), true) => arg.value_name(value).action(clap::ArgAction::Append),
            (Some(value), false) => arg.value_name(value).action(clap::ArgAction::Set),
        });
    }
    command
}

/// Parses the arguments, keeping the protocols' flags as given.
fn parse(args: Vec<OsString>) -> Result<Cli, clap::Error> {
    let matches = command().try_get_matches_from(args)?;
    let mut cli = Cli::from_arg_matches(&matches)?;
    for flag in moot::protocol::REGISTRY.iter().flat_map(|p| p.flags()) {
        if cli.run.protocol_flags.contains_key(flag.name) {
            continue;
        }
        let values: Vec<String> = match flag.value {
            None if matches.get_flag(flag.name) => vec![String::new()],
            None => continue,
            Some(_) => matches
                .get_many::<String>(flag.name)
                .map(|v| v.cloned().collect())
                .unwrap_or_default(),
        };
        if !values.is_empty() {
            cli.run.protocol_flags.insert(flag.name.to_string(), values);
        }
    }
    Ok(cli)
}

/// The subcommand names clap knows, so that a bare one is never taken for a question.
fn subcommand_names() -> Vec<String> {
    Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .chain(["help".to_string()])
        .collect()
}

/// `moot --config FILE list`: global options may come before a command; clap wants the command
/// first, so it is moved there when only global options precede it.
fn hoist_subcommand(mut args: Vec<OsString>) -> Vec<OsString> {
    let names = subcommand_names();
    let mut index = 1;
    while index < args.len() {
        let arg = args[index].to_string_lossy();
        if arg == "--config" {
            index += 2;
        } else if arg.starts_with("--config=") {
            index += 1;
        } else {
            if index > 1 && names.iter().any(|name| *name == arg) {
                let command = args.remove(index);
                args.insert(1, command);
            }
            break;
        }
    }
    args
}

fn run(cli: Cli) -> Result<i32, Failure> {
    let (config, keymap) = load_config(&cli)?;
    match cli.command {
        Some(Command::Open { id, ascii, theme }) => {
            let face = screen_face(ascii, theme, "open", "moot show ID prints a debate as text")?;
            // Fail before the screen opens if the id is unknown.
            let id = open_store()?.debate(&id)?.id;
            workbench(
                &config,
                &keymap,
                &RunArgs::default(),
                &face,
                Start::Replay(id),
            )
        }
        Some(Command::History { ascii, theme }) => {
            let face = screen_face(
                ascii,
                theme,
                "history",
                "moot list prints the history as text",
            )?;
            workbench(&config, &keymap, &RunArgs::default(), &face, Start::History)
        }
        Some(Command::Protocols { json }) => done(commands::protocols(json)),
        Some(Command::Decide { id, option }) => done(commands::decide(
            &open_store()?,
            &id,
            &option,
            &format!("{} on the command line", moot::signals::user()),
        )),
        Some(Command::Perspectives { json }) => done(commands::perspectives(&config, json)),
        Some(Command::Model { action }) => model_command(action),
        Some(Command::List { json, limit }) => done(commands::list(&open_store()?, json, limit)),
        Some(Command::Show { id, json, markdown }) => {
            done(commands::show(&open_store()?, &id, json, markdown))
        }
        Some(Command::Search { text, json, limit }) => done(commands::search(
            &open_store()?,
            &text.join(" "),
            json,
            limit,
        )),
        Some(Command::Export { id, format, out }) => done(commands::export(
            &open_store()?,
            &id,
            format,
            out.as_deref(),
        )),
        Some(Command::Gates { id, json }) => done(commands::gates(&open_store()?, &id, json)),
        Some(Command::Audit {
            id,
            json,
            verify,
            verify_record,
        }) => audit_command(&id, json, verify, verify_record.as_deref()),
        Some(Command::Approve { id }) => {
            let by = format!("{} from another terminal", moot::signals::user());
            commands::decide_gate(&open_store()?, &id, None, &by)?;
            Ok(0)
        }
        Some(Command::Reject { id, reason }) => {
            let by = format!("{} from another terminal", moot::signals::user());
            commands::decide_gate(&open_store()?, &id, Some(&reason), &by)?;
            Ok(0)
        }
        Some(Command::Bench(args)) => bench_command(args, &config),
        Some(Command::Code { action }) => done(commands::code(&open_store()?, action)),
        Some(Command::Lessons { action }) => done(commands::lessons(&open_store()?, action)),
        Some(Command::Arena { action }) => done(commands::arena(&open_store()?, action)),
        Some(Command::Import { dir }) => {
            let id = commands::import(&open_store()?, &dir)?;
            println!("imported {id}; `moot show {id}` shows it");
            Ok(0)
        }
        Some(Command::Resume {
            id,
            face,
            checkpoints,
            yes,
            provider,
        }) => resume_command(&config, &keymap, &id, &face, &checkpoints, yes, &provider),
        None => run_debate(cli.run, &config, &keymap),
    }
}

/// The workbench needs a terminal on both ends; otherwise the NDJSON face runs.
/// The face of a command that only makes sense on a screen (`open`, `history`); refused, with
/// the text command that does the job instead, when stdout is not a terminal.
fn screen_face(
    ascii: bool,
    theme: Option<String>,
    command: &str,
    instead: &str,
) -> Result<FaceArgs, Failure> {
    if !std::io::stdout().is_terminal() {
        return Err(Failure::usage(format!(
            "moot {command} needs a terminal; {instead}"
        )));
    }
    Ok(FaceArgs {
        ascii,
        theme,
        headless: false,
    })
}

/// The config file (every top-level table one moot knows) and the keymap it configures.
fn load_config(cli: &Cli) -> Result<(Config, Arc<Keymap>), Failure> {
    let fix = |e: moot::config::ConfigError| {
        Failure::usage(format!(
            "{e}\n(fix the file, or point --config / MOOT_CONFIG elsewhere)"
        ))
    };
    let (config, config_path) =
        Config::load(paths::config_path(cli.config.clone())).map_err(fix)?;
    let protocol_names: Vec<&str> = moot::protocol::REGISTRY.iter().map(|p| p.name()).collect();
    config.check_protocol_tables(&protocol_names).map_err(fix)?;
    tui::run::set_mouse(config.ui.mouse.unwrap_or(true));
    let keymap = Keymap::new(&config.ui.keys).map_err(|problem| {
        let place = config_path
            .as_deref()
            .map(|p| moot::config::locate(p, "[ui.keys]"))
            .unwrap_or_else(|| "config".into());
        Failure::usage(format!("{place}: [ui.keys]: {problem}"))
    })?;
    let keymap = Arc::new(keymap);
    Ok((config, keymap))
}

/// `moot audit`: the trail, `--verify` (the chain, the hashes and a re-run from the journal) or
/// `--verify-record FILE` (a record file against its receipt); exit 1 when a check fails.
fn audit_command(
    id: &str,
    json: bool,
    verify: bool,
    verify_record: Option<&std::path::Path>,
) -> Result<i32, Failure> {
    let store = open_store()?;
    if let Some(file) = verify_record {
        let text = std::fs::read_to_string(file)
            .map_err(|e| Failure::usage(format!("cannot read {}: {e}", file.display())))?;
        let shown = file.display().to_string();
        let report =
            moot::audit::verify_record(&store, id, &shown, &text).map_err(Failure::from)?;
        print!("{}", report.to_text());
        return Ok(if report.passed() { 0 } else { 1 });
    }
    if !verify {
        commands::audit(&store, id, json)?;
        return Ok(0);
    }
    let report = block_on(moot::audit::verify(&store, id))?.map_err(Failure::from)?;
    print!("{}", report.to_text());
    Ok(if report.passed() { 0 } else { 1 })
}

/// `moot resume ID`: refused before a screen opens when the debate is unknown, finished or
/// running elsewhere; then on the workbench, or headless.
fn resume_command(
    config: &Config,
    keymap: &Arc<Keymap>,
    id: &str,
    face: &FaceArgs,
    checkpoints: &moot::cli::CheckpointArgs,
    yes: bool,
    provider: &ProviderArgs,
) -> Result<i32, Failure> {
    let store = open_store()?;
    let provider = if provider_given(provider) {
        let spec = providers::resolve(&session::provider_flags(provider), config)
            .map_err(|e| Failure::usage(e.to_string()))?;
        ensure_local_model(&spec, yes)?;
        Some(spec)
    } else {
        None
    };
    let changes = ResumeChanges {
        provider,
        checkpoints: checkpoints.enabled(),
    };
    // Refused before a screen opens: an unknown, finished or running debate.
    let debate = store.debate(id)?;
    if debate.status == moot::debate::DebateStatus::Running {
        // A held lease: says which process holds it.
        drop(store.acquire_lease(&debate.id)?);
    }
    if !debate.status.is_resumable() {
        return Err(Failure::usage(
            session::SessionError::NotResumable {
                id: debate.id,
                status: debate.status,
            }
            .to_string(),
        ));
    }
    if on_terminal() && !face.headless {
        let start = Start::Live(Run::Resume {
            id: debate.id,
            changes: Box::new(changes),
        });
        return workbench(config, keymap, &RunArgs::default(), face, start);
    }
    let answers = answers(checkpoints.mode());
    block_on(headless::run(answers, |wiring| {
        session::resume(store, id, changes, wiring, moot::signals::interrupted())
    }))
}

/// A command that prints and exits 0 when it works.
fn done(result: Result<(), Failure>) -> Result<i32, Failure> {
    result.map(|()| 0)
}

fn on_terminal() -> bool {
    std::io::stdout().is_terminal() && std::io::stdin().is_terminal()
}

fn run_debate(args: RunArgs, config: &Config, keymap: &Arc<Keymap>) -> Result<i32, Failure> {
    let question = args.question.join(" ");
    if question.trim().is_empty() {
        if on_terminal() && !args.face.headless {
            return workbench(config, keymap, &args, &args.face, Start::History);
        }
        return Err(Failure::usage(
            "no question given: moot --headless \"Should we use Redis or PostgreSQL for caching?\" (moot --help for more)",
        ));
    }
    // `moot --headless list`: a command's name alone is never a question.
    if let [word] = args.question.as_slice()
        && subcommand_names().iter().any(|name| name == word.trim())
        && !std::env::args().any(|arg| arg == "--")
    {
        return Err(Failure::usage(format!(
            "`{word}` is a moot command, not a question: run `moot {word}` (a command comes \
             first, its flags after it). To debate the word itself, write `moot -- {word}`."
        )));
    }
    let chars = question.trim().chars().count();
    if chars > session::MAX_QUESTION_CHARS {
        return Err(Failure::usage(
            session::SessionError::QuestionTooLong { chars }.to_string(),
        ));
    }
    let settings = session::assemble(&args, config)?;
    ensure_local_model(&settings.provider, args.yes)?;
    for spec in settings.perspective_providers.values() {
        ensure_local_model(spec, args.yes)?;
    }
    if on_terminal() && !args.face.headless {
        let settings = Box::new(settings);
        return workbench(
            config,
            keymap,
            &args,
            &args.face,
            Start::Live(Run::New { question, settings }),
        );
    }
    let store = open_store()?;
    let answers = answers(args.checkpoints.mode());
    block_on(headless::run(answers, |wiring| {
        session::start(
            store,
            &question,
            settings,
            wiring,
            moot::signals::interrupted(),
        )
    }))
}

/// Opens the workbench on a screen; new debates from its form get the same settings as the
/// command line (`args`) would give them.
fn workbench(
    config: &Config,
    keymap: &Arc<Keymap>,
    args: &RunArgs,
    face: &FaceArgs,
    start: Start,
) -> Result<i32, Failure> {
    let name = face
        .theme
        .clone()
        .or_else(|| config.ui.theme.clone())
        .unwrap_or_else(|| "dark".into());
    let theme = Theme::named(&name, Depth::detect())
        .map_err(|e| Failure::usage(e.to_string()))?
        .with_ascii(face.ascii || config.ui.ascii);
    let store = open_store()?;
    let configured = session::chosen_protocol(args, config).to_string();
    let settings_for = |debate: &NewDebate| {
        let mut form_args = args.clone();
        if debate.protocol != configured {
            // The command line's protocol flags belong to the protocol it named.
            form_args.protocol_flags.clear();
        }
        form_args.protocol = Some(debate.protocol.clone());
        form_args.max_rounds = debate.max_rounds.or(args.max_rounds);
        form_args.perspectives = debate.perspectives;
        form_args.checkpoints.no_checkpoints = !debate.checkpoints;
        form_args.named = debate.named.clone();
        form_args.question = vec![debate.question.clone()];
        session::assemble(&form_args, config).map_err(|e| e.to_string())
    };
    let catalog = moot::catalog::catalog(&config.debate.custom_perspectives)
        .into_iter()
        .map(|p| sanitize::clean(&p.name))
        .collect();
    let setup = Setup {
        theme,
        keymap: keymap.clone(),
        catalog,
        protocols: moot::protocol::REGISTRY
            .iter()
            .map(|p| ProtocolChoice {
                name: p.name().to_string(),
                description: p.description().to_string(),
                seat_role: p.presentation().seat_role,
                seats_from_catalog: p.presentation().seats_from_catalog,
            })
            .collect(),
        default_protocol: configured.clone(),
    };
    block_on(tui::run::workbench(store, setup, start, settings_for))?
        .map_err(|e| Failure::runtime(e.to_string()))
}

/// When a debate will run on the default embedded model and it is not here yet: pull it with
/// `--yes`, ask on a terminal, otherwise explain every way to proceed.
fn ensure_local_model(spec: &ProviderSpec, yes: bool) -> Result<(), Failure> {
    let default = &models::DEFAULT_MODEL;
    if spec.kind != ProviderKind::Local
        || spec.model != default.name
        || models::default_model_present()
    {
        return Ok(());
    }
    let asked = !yes && std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let consent = if yes {
        true
    } else if asked {
        // Neutral wording: this runs both when nothing else is configured and on --provider local.
        eprint!(
            "moot will use its embedded model {} ({} MB, {}), which is not in {} yet. Pull it now? [Y/n] ",
            default.name,
            default.bytes / 1_000_000,
            default.description,
            models::models_dir().display()
        );
        let mut answer = String::new();
        let _ = std::io::stdin().read_line(&mut answer);
        matches!(answer.trim().to_lowercase().as_str(), "" | "y" | "yes")
    } else {
        false
    };
    if !consent {
        let why = if asked {
            format!(
                "not pulling {}. Pull it later with `moot model pull`",
                default.name
            )
        } else {
            format!(
                "the embedded model {} is not pulled yet and there is no terminal to ask: pull it \
                 with `moot model pull` (or run again with --yes)",
                default.name
            )
        };
        return Err(Failure::usage(format!(
            "{why}, or choose another provider:\n{}",
            providers::PROVIDER_OPTIONS
        )));
    }
    pull_default()
}

fn pull_default() -> Result<(), Failure> {
    let default = &models::DEFAULT_MODEL;
    if let Some(path) = models::verified_default() {
        eprintln!(
            "moot: {} is already here ({})",
            default.name,
            path.display()
        );
        return Ok(());
    }
    eprintln!("moot: pulling {} ({})", default.name, default.description);
    let client = moot::llm::http_client().map_err(|e| Failure::runtime(e.to_string()))?;
    let stored =
        block_on(models::pull(default, &client))?.map_err(|e| Failure::runtime(e.to_string()))?;
    eprintln!(
        "moot: {} is ready at {}",
        stored.name,
        stored.path.display()
    );
    Ok(())
}

fn model_command(action: ModelCommand) -> Result<i32, Failure> {
    match action {
        ModelCommand::Pull { name } => {
            if name.to_lowercase() != models::DEFAULT_MODEL.name {
                return Err(Failure::usage(format!(
                    "moot knows how to pull {} only; add any other GGUF model with `moot model add PATH|URL`",
                    models::DEFAULT_MODEL.name
                )));
            }
            pull_default()?;
        }
        ModelCommand::Add { source, name } => {
            let client = moot::llm::http_client().map_err(|e| Failure::runtime(e.to_string()))?;
            let stored = block_on(models::add(&source, name.as_deref(), &client))?
                .map_err(|e| Failure::usage(e.to_string()))?;
            println!(
                "added {} ({}); use it with --provider local --model {}",
                stored.name,
                stored.path.display(),
                stored.name
            );
        }
        ModelCommand::List { json } => commands::models(json)?,
        ModelCommand::Path { name } => {
            println!(
                "{}",
                models::locate(&name)
                    .map_err(|e| Failure::usage(e.to_string()))?
                    .display()
            );
        }
        ModelCommand::Rm { name } => {
            let path = models::remove(&name).map_err(|e| Failure::usage(e.to_string()))?;
            println!("removed {}", path.display());
        }
    }
    Ok(0)
}

fn answers(mode: CheckpointMode) -> CheckpointAnswers {
    match mode {
        CheckpointMode::Auto => CheckpointAnswers::Auto,
        CheckpointMode::Stdin => CheckpointAnswers::Stdin,
    }
}

/// `moot bench`: builds (or reloads) the run, runs what is missing with a progress bar on a
/// terminal, prints the table and writes the JSON and markdown reports.
fn bench_command(args: moot::cli::BenchArgs, config: &Config) -> Result<i32, Failure> {
    use moot::bench::{self, BenchSettings, arms::Shape};
    let store = open_store()?;
    let spec = providers::resolve(&session::provider_flags(&args.provider), config)
        .map_err(|e| Failure::usage(e.to_string()))?;
    ensure_local_model(&spec, args.yes)?;
    let client = moot::llm::http_client().map_err(|e| Failure::runtime(e.to_string()))?;
    let capabilities = Arc::new(moot::llm::CapabilityCache::new(
        store.load_capabilities().unwrap_or_default(),
    ));
    let provider = providers::build(&spec, &client, &capabilities, &config.retry)
        .map_err(|e| Failure::usage(e.to_string()))?;
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
        retry: moot::llm::RetryPolicy {
            max_attempts: config.retry.max_attempts.max(1),
            base_delay: std::time::Duration::from_millis(config.retry.base_delay_ms),
            max_delay: std::time::Duration::from_millis(config.retry.max_delay_ms),
        },
    };
    // A protocol's debate arm runs as real debates on the same provider, quietly.
    let template = match &settings.protocol {
        Some(name) => {
            let template = DebateSettings::for_bench(
                config,
                spec.clone(),
                name,
                settings.rounds as u32,
                settings.agents as u32,
            )
            .map_err(Failure::from)?;
            Some(template)
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
    let _ = store.save_capabilities(&capabilities.learned());
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
fn bench_progress(
    id: &str,
    settings: &moot::bench::BenchSettings,
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
fn new_bench_run(
    args: &moot::cli::BenchArgs,
    provider: &dyn moot::llm::Provider,
    store: &Store,
) -> Result<(String, moot::bench::BenchSettings), Failure> {
    use moot::bench::{self, BenchSettings, arms::Arm, data};
    let arms = args
        .arms
        .iter()
        .map(|a| Arm::parse_flag(a))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Failure::usage(format!("--arms: {e}")))?;
    let count = args.problems as usize;
    let (set, problems) = match &args.dataset {
        Some(path) => (
            path.display().to_string(),
            data::dataset(path)
                .map_err(|e| Failure::usage(e.to_string()))?
                .into_iter()
                .take(count)
                .collect(),
        ),
        None if args.set == "words" => (
            "words".to_string(),
            data::words(count).map_err(|e| Failure::runtime(e.to_string()))?,
        ),
        None => ("arithmetic".to_string(), data::arithmetic(count, args.seed)),
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
    };
    let id = bench::new_run_id();
    let value = serde_json::to_value(&settings).map_err(|e| Failure::runtime(e.to_string()))?;
    store.create_bench_run(&id, &value)?;
    Ok((id, settings))
}

fn provider_given(args: &ProviderArgs) -> bool {
    args.provider.is_some()
        || args.model.is_some()
        || args.base_url.is_some()
        || args.script.is_some()
}

fn open_store() -> Result<Store, Failure> {
    Store::open(&paths::database_path()).map_err(Failure::from)
}

/// Runs `work` to completion on a current-thread runtime. The runtime is then shut down
/// without waiting for blocking tasks: a stdin reader still waiting for a line that will never
/// come must not keep the process alive after the debate has ended.
fn block_on<F: std::future::Future>(work: F) -> Result<F::Output, Failure> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::runtime(format!("cannot start the async runtime: {e}")))?;
    let output = runtime.block_on(work);
    runtime.shutdown_background();
    Ok(output)
}
