//! moot's entry point: parse arguments, load config, open the journal, hand over to a face.

use clap::Parser;
use moot::cli::{CheckpointMode, Cli, Command, ModelCommand, ProviderArgs, RunArgs};
use moot::commands::{self, Failure};
use moot::config::{Config, TokenBudget};
use moot::headless::{self, CheckpointAnswers};
use moot::providers::{self, ProviderFlags};
use moot::session::{self, DebateSettings};
use moot::store::Store;
use moot::tui;
use moot::tui::history::NewDebate;
use moot::tui::run::Start;
use moot::tui::theme::{Depth, Theme};
use moot::{paths, sanitize};
use std::io::IsTerminal;
use std::process::ExitCode;

fn main() -> ExitCode {
    // An internal error is reported in one line, never as a raw backtrace.
    std::panic::set_hook(Box::new(|info| {
        let message = sanitize::clean(&info.to_string());
        eprintln!("moot: internal error: {message}\nPlease report it; the journal is unaffected.");
    }));
    let cli = match Cli::try_parse() {
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

fn run(cli: Cli) -> Result<i32, Failure> {
    let (config, config_path) =
        Config::load(paths::config_path(cli.config.clone())).map_err(|e| {
            Failure::usage(format!(
                "{e}\n(fix the file, or point --config / MOOT_CONFIG elsewhere)"
            ))
        })?;
    tui::run::set_mouse(config.ui.mouse.unwrap_or(true));
    if let Err(problem) = tui::keymap::install(&config.ui.keys) {
        let place = config_path
            .as_deref()
            .map(|p| moot::config::locate(p, "[ui.keys]"))
            .unwrap_or_else(|| "config".into());
        return Err(Failure::usage(format!("{place}: [ui.keys]: {problem}")));
    }
    match cli.command {
        Some(Command::Open { id, ascii, theme }) => {
            if !std::io::stdout().is_terminal() {
                return Err(Failure::usage(
                    "moot open needs a terminal; moot show ID prints a debate as text",
                ));
            }
            // Fail before the screen opens if the id is unknown.
            let id = open_store()?.debate(&id)?.id;
            let args = RunArgs {
                ascii,
                theme,
                ..RunArgs::default()
            };
            workbench(&config, &args, Start::Replay(id))
        }
        Some(Command::History { ascii, theme }) => {
            if !std::io::stdout().is_terminal() {
                return Err(Failure::usage(
                    "moot history needs a terminal; moot list prints the history as text",
                ));
            }
            let args = RunArgs {
                ascii,
                theme,
                ..RunArgs::default()
            };
            workbench(&config, &args, Start::History)
        }
        Some(Command::Perspectives { json }) => {
            commands::perspectives(&config, json)?;
            Ok(0)
        }
        Some(Command::Model { action }) => model_command(action),
        Some(Command::List { json, limit }) => {
            commands::list(&open_store()?, json, limit)?;
            Ok(0)
        }
        Some(Command::Show { id, json, markdown }) => {
            commands::show(&open_store()?, &id, json, markdown)?;
            Ok(0)
        }
        Some(Command::Search { text, json, limit }) => {
            commands::search(&open_store()?, &text.join(" "), json, limit)?;
            Ok(0)
        }
        Some(Command::Export { id, format, out }) => {
            commands::export(&open_store()?, &id, format, out.as_deref())?;
            Ok(0)
        }
        Some(Command::Resume {
            id,
            headless: _,
            checkpoints,
            yes,
            provider,
        }) => {
            let store = open_store()?;
            let override_spec = if provider_given(&provider) {
                Some(providers::resolve(&flags(&provider), &config).map_err(Failure::usage)?)
            } else {
                None
            };
            if let Some(spec) = &override_spec {
                ensure_local_model(spec, yes)?;
            }
            let answers = answers(checkpoints);
            Ok(runtime()?.block_on(headless::run(answers, |wiring| {
                session::resume(store, &id, override_spec, wiring, headless::interrupted())
            })))
        }
        None => run_debate(cli.run, &config),
    }
}

fn run_debate(args: RunArgs, config: &Config) -> Result<i32, Failure> {
    let question = args.question.join(" ");
    // The workbench needs a terminal on both ends; otherwise the NDJSON face runs.
    let on_terminal = std::io::stdout().is_terminal() && std::io::stdin().is_terminal();
    if question.trim().is_empty() {
        if on_terminal && !args.headless {
            return workbench(config, &args, Start::History);
        }
        return Err(Failure::usage(
            "no question given: moot --headless \"Should we use Redis or PostgreSQL for caching?\" (moot --help for more)",
        ));
    }
    let settings = build_settings(&args, config)?;
    ensure_local_model(&settings.provider, args.yes)?;
    for spec in settings.perspective_providers.values() {
        ensure_local_model(spec, args.yes)?;
    }
    if on_terminal && !args.headless {
        let settings = Box::new(settings);
        return workbench(config, &args, Start::Live { question, settings });
    }
    let store = open_store()?;
    let answers = answers(args.checkpoints);
    Ok(runtime()?.block_on(headless::run(answers, |wiring| {
        session::start(store, &question, settings, wiring, headless::interrupted())
    })))
}

/// Opens the workbench on a screen; new debates from its form get the same settings as the
/// command line would give them.
fn workbench(config: &Config, args: &RunArgs, start: Start) -> Result<i32, Failure> {
    let name = args
        .theme
        .clone()
        .or_else(|| config.ui.theme.clone())
        .unwrap_or_else(|| "dark".into());
    let theme = Theme::named(&name, Depth::detect())
        .map_err(Failure::usage)?
        .with_ascii(args.ascii || config.ui.ascii);
    let store = open_store()?;
    let settings_for = |debate: &NewDebate| {
        let mut form_args = args.clone();
        form_args.max_rounds = Some(debate.max_rounds);
        form_args.perspectives = debate.perspectives;
        form_args.no_checkpoints = !debate.checkpoints;
        form_args.named = debate.named.clone();
        build_settings(&form_args, config).map_err(|f| f.message)
    };
    let catalog = moot::catalog::catalog(&config.debate.custom_perspectives)
        .into_iter()
        .map(|p| p.name)
        .collect();
    runtime()?
        .block_on(tui::run::workbench(
            store,
            theme,
            start,
            settings_for,
            config.debate.max_rounds,
            catalog,
        ))
        .map_err(|e| Failure::runtime(e.to_string()))
}

/// The debate settings from config and the command line.
fn build_settings(args: &RunArgs, config: &Config) -> Result<DebateSettings, Failure> {
    let provider = providers::resolve(&flags(&args.provider), config).map_err(Failure::usage)?;
    let mut settings = DebateSettings::from_config(config, provider).map_err(Failure::usage)?;
    if let Some(max_rounds) = args.max_rounds {
        settings.max_rounds = max_rounds;
    }
    settings.perspectives = args.perspectives;
    settings.named_perspectives = args.named.clone();
    if args.named.len() > 4 {
        return Err(Failure::usage(format!(
            "{} perspectives were named; a debate seats 2 to 4",
            args.named.len()
        )));
    }
    if let Some(budget) = &args.token_budget {
        settings.token_budget_per_round = TokenBudget::parse(budget)
            .map_err(|e| Failure::usage(format!("--token-budget: {e}")))?;
    }
    if let Some(seconds) = args.round_timeout {
        settings.round_timeout_seconds = seconds;
    }
    if let Some(seconds) = args.checkpoint_timeout {
        settings.checkpoint_timeout_seconds = seconds;
    }
    if let Some(seconds) = args.total_timeout {
        settings.total_timeout_seconds = seconds;
    }
    if args.no_checkpoints {
        settings.checkpoints = false;
    }
    if args.no_write {
        settings.write_decision = false;
    }
    if let Some(dir) = &args.decisions_dir {
        let cwd = std::env::current_dir().map_err(|e| Failure::runtime(e.to_string()))?;
        settings.decisions_dir = cwd.join(dir);
    }
    settings.follow_up = args.follow_up;
    settings.sequential = args.sequential;
    // Unknown perspective names are a usage error before anything is stored.
    let catalog = moot::catalog::catalog(&settings.custom_perspectives);
    for name in &settings.named_perspectives {
        if moot::catalog::find(&catalog, name).is_none() {
            return Err(Failure::usage(format!(
                "unknown perspective {name:?}; `moot perspectives` lists the catalog"
            )));
        }
    }
    Ok(settings)
}

/// When a debate will run on the default embedded model and it is not here yet: pull it with
/// `--yes`, ask on a terminal, otherwise explain every way to proceed.
fn ensure_local_model(spec: &providers::ProviderSpec, yes: bool) -> Result<(), Failure> {
    let default = &moot::models::DEFAULT_MODEL;
    if spec.kind != "local" || spec.model != default.name || moot::models::default_model_present() {
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
            moot::models::models_dir().display()
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
    let default = &moot::models::DEFAULT_MODEL;
    if let Some(path) = moot::models::verified_default() {
        eprintln!(
            "moot: {} is already here ({})",
            default.name,
            path.display()
        );
        return Ok(());
    }
    eprintln!("moot: pulling {} ({})", default.name, default.description);
    let client = providers::http_client().map_err(Failure::runtime)?;
    let stored = runtime()?
        .block_on(moot::models::pull(default, &client))
        .map_err(Failure::runtime)?;
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
            if name.to_lowercase() != moot::models::DEFAULT_MODEL.name {
                return Err(Failure::usage(format!(
                    "moot knows how to pull {} only; add any other GGUF model with `moot model add PATH|URL`",
                    moot::models::DEFAULT_MODEL.name
                )));
            }
            pull_default()?;
        }
        ModelCommand::Add { source, name } => {
            let client = providers::http_client().map_err(Failure::runtime)?;
            let stored = runtime()?
                .block_on(moot::models::add(&source, name.as_deref(), &client))
                .map_err(Failure::usage)?;
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
                moot::models::locate(&name)
                    .map_err(Failure::usage)?
                    .display()
            );
        }
        ModelCommand::Rm { name } => {
            let path = moot::models::remove(&name).map_err(Failure::usage)?;
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

fn provider_given(args: &ProviderArgs) -> bool {
    args.provider.is_some()
        || args.model.is_some()
        || args.base_url.is_some()
        || args.script.is_some()
}

fn flags(args: &ProviderArgs) -> ProviderFlags {
    ProviderFlags {
        provider: args.provider.clone(),
        model: args.model.clone(),
        base_url: args.base_url.clone(),
        script: args.script.clone(),
    }
}

fn open_store() -> Result<Store, Failure> {
    Store::open(&paths::database_path()).map_err(Failure::from)
}

fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::runtime(format!("cannot start the async runtime: {e}")))
}
