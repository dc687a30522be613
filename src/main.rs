//! moot's entry point: parse arguments, load config, open the journal, hand over to a face.

use clap::Parser;
use moot::cli::{CheckpointMode, Cli, Command, ProviderArgs, RunArgs};
use moot::commands::{self, Failure};
use moot::config::{Config, TokenBudget};
use moot::headless::{self, CheckpointAnswers};
use moot::providers::{self, ProviderFlags};
use moot::session::{self, DebateSettings};
use moot::store::Store;
use moot::tui::{self, theme::Theme};
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
    let (config, _) = Config::load(paths::config_path(cli.config.clone())).map_err(|e| {
        Failure::usage(format!(
            "{e}\n(fix the file, or point --config / MOOT_CONFIG elsewhere)"
        ))
    })?;
    match cli.command {
        Some(Command::Open { id, ascii }) => {
            let store = open_store()?;
            let events = moot::replay::journal_events(&store, &id)?;
            if !std::io::stdout().is_terminal() {
                return Err(Failure::usage(
                    "moot open needs a terminal; use moot show ID for text",
                ));
            }
            runtime()?
                .block_on(tui::run::replay(Theme::dark().with_ascii(ascii), events))
                .map_err(|e| Failure::runtime(format!("the terminal failed: {e}")))?;
            Ok(0)
        }
        Some(Command::Perspectives { json }) => {
            commands::perspectives(&config, json)?;
            Ok(0)
        }
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
            provider,
        }) => {
            let store = open_store()?;
            let override_spec = if provider_given(&provider) {
                Some(providers::resolve(&flags(&provider), &config).map_err(Failure::usage)?)
            } else {
                None
            };
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
    if question.trim().is_empty() {
        return Err(Failure::usage(
            "no question given: moot --headless \"Should we use Redis or PostgreSQL for caching?\" (moot --help for more)",
        ));
    }
    // The workbench needs a terminal on both ends; otherwise the NDJSON face runs.
    let workbench =
        !args.headless && std::io::stdout().is_terminal() && std::io::stdin().is_terminal();
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
    let store = open_store()?;
    if workbench {
        let theme = Theme::dark().with_ascii(args.ascii);
        let journal = store.clone();
        let result = runtime()?.block_on(tui::run::live(theme, |wiring, interrupt| {
            session::start(store, &question, settings, wiring, interrupt)
        }));
        return Ok(farewell(&journal, &result));
    }
    let answers = answers(args.checkpoints);
    Ok(runtime()?.block_on(headless::run(answers, |wiring| {
        session::start(store, &question, settings, wiring, headless::interrupted())
    })))
}

/// The line left on the terminal after the workbench closes, and the exit code.
fn farewell(store: &Store, result: &Result<session::Finish, session::SessionError>) -> i32 {
    match result {
        Ok(finish) => {
            let record = store
                .synthesis(&finish.id)
                .ok()
                .flatten()
                .and_then(|s| s.path)
                .map(|p| format!("; decision record {p}"))
                .unwrap_or_default();
            match finish.status {
                moot::debate::DebateStatus::Paused => {
                    eprintln!(
                        "moot: {} is paused; continue with: moot resume {}",
                        finish.id, finish.id
                    )
                }
                moot::debate::DebateStatus::Failed => eprintln!(
                    "moot: {} ({} is stored as failed)",
                    finish.error.as_deref().unwrap_or("the debate failed"),
                    finish.id
                ),
                status => eprintln!("moot: {} {status}{record}", finish.id),
            }
        }
        Err(error) => eprintln!("moot: {error}"),
    }
    headless::exit_code(result)
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
