//! What `moot` does once its arguments are parsed: the dispatch to a debate (on the
//! workbench or headless), a screen, or a command, and what they share (the config and keymap,
//! the journal, a runtime to block on).

mod bench;
mod debate;
mod model;
mod request;

use crate::cli::{Cli, Command, FaceArgs, ProviderArgs, RunArgs};
use crate::commands::{self, Failure};
use crate::config::Config;
use crate::paths;
use crate::store::Store;
use crate::tui;
use crate::tui::keymap::Keymap;
use crate::tui::run::Start;
use bench::bench_command;
use clap::Parser;
pub use debate::protocol_choices;
use debate::{audit_command, decide_command, resume_command, run_debate, workbench};
use model::{ensure_local_model, model_command};
use std::io::IsTerminal;
use std::sync::Arc;

/// The protocols moot ships and its embedded model (where this build has one): what every
/// face's sessions run with. Only the binary names them; the session is handed this.
pub fn host() -> crate::session::Host {
    let host = crate::session::Host::new(crate::protocol::builtin());
    #[cfg(feature = "local")]
    let host = host.with_embedded(crate::llm::local::open);
    host
}

/// Runs what the command line asked for: a debate, a screen or a command; the exit code, or
/// the failure to report.
pub fn dispatch(cli: Cli) -> Result<i32, Failure> {
    let (config, keymap) = load_config(&cli)?;
    choose_journal(cli.journal.clone(), &config)?;
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
        Some(Command::Attach {
            id,
            server,
            token_file,
            ascii,
            theme,
        }) => {
            let face = screen_face(
                ascii,
                theme,
                "attach",
                "curl …/v1/debates/ID/events follows it as text",
            )?;
            attach(&config, &keymap, &face, &id, server, token_file.as_deref())
        }
        Some(Command::History {
            ascii,
            theme,
            provider,
        }) => {
            let face = screen_face(
                ascii,
                theme,
                "history",
                "moot list prints the history as text",
            )?;
            let args = RunArgs {
                provider,
                ..RunArgs::default()
            };
            workbench(&config, &keymap, &args, &face, Start::History)
        }
        Some(Command::Protocols { json }) => done(commands::protocols(json)),
        Some(Command::Completions { shell }) => completions(shell),
        Some(Command::Man) => manual_page(),
        Some(Command::Decide { id, option, force }) => decide_command(&id, &option, force),
        Some(Command::Perspectives { json }) => done(commands::perspectives(&config, json)),
        Some(Command::Model { action }) => model_command(action),
        Some(Command::Journal {
            action: crate::cli::JournalCommand::Copy { to },
        }) => journal_copy(&to),
        Some(Command::List { json, limit }) => {
            done(commands::list(&open_store_to_read()?, json, limit))
        }
        Some(Command::Show { id, json, markdown }) => {
            done(commands::show(&open_store_to_read()?, &id, json, markdown))
        }
        Some(Command::Search { text, json, limit }) => done(commands::search(
            &open_store_to_read()?,
            &text.join(" "),
            json,
            limit,
        )),
        Some(Command::Export { id, format, out }) => done(commands::export(
            &open_store_to_read()?,
            &id,
            format,
            out.as_deref(),
        )),
        Some(Command::Gates { id, json }) => {
            done(commands::gates(&open_store_to_read()?, &id, json))
        }
        Some(Command::Audit {
            id,
            json,
            verify,
            verify_record,
        }) => audit_command(&id, json, verify, verify_record.as_deref()),
        Some(Command::Approve { id }) => gate_command(&id, None),
        Some(Command::Reject { id, reason }) => gate_command(&id, Some(&reason)),
        Some(Command::Bench(args)) => bench_command(args, &config),
        Some(Command::Serve(args)) => serve_command(args, &config),
        Some(Command::Mcp(args)) => mcp_command(args, &config),
        Some(Command::Code { action }) => done(commands::code(&open_store()?, action)),
        Some(Command::Lessons { action }) => done(commands::lessons(&open_store()?, action)),
        Some(Command::Arena { action }) => done(commands::arena(&open_store()?, action)),
        Some(Command::Import { dir }) => {
            let id = commands::import(&open_store()?, &dir)?;
            println!("imported {id}; `moot show {id}` shows it");
            Ok(0)
        }
        Some(Command::Resume(args)) => resume_command(&config, &keymap, &args),
        None => run_debate(cli.run, &config, &keymap),
    }
}

/// `moot approve ID` / `moot reject ID REASON`: the gate a debate waits at, decided from
/// another terminal.
fn gate_command(id: &str, rejected_because: Option<&str>) -> Result<i32, Failure> {
    let by = format!("{} from another terminal", crate::signals::user());
    commands::decide_gate(&open_store()?, id, rejected_because, &by)?;
    Ok(0)
}

/// `moot completions SHELL`: the shell's completion script, from the parser itself.
fn completions(shell: clap_complete::Shell) -> Result<i32, Failure> {
    use clap::CommandFactory as _;
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "moot", &mut script);
    printed(&script)
}

/// `moot man`: the manual page, from the parser itself.
fn manual_page() -> Result<i32, Failure> {
    use clap::CommandFactory as _;
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut page)
        .map_err(|e| Failure::runtime(format!("cannot write the manual page: {e}")))?;
    printed(&page)
}

/// `moot serve`: the HTTP API over this host's protocols and journal, with the options the
/// flags give.
fn serve_command(
    args: crate::cli::ServeArgs,
    config: &crate::config::Config,
) -> Result<i32, Failure> {
    crate::serve::serve(
        host(),
        crate::serve::ServeOptions {
            provider: crate::providers::ProviderFlags::from(&args.provider),
            listen: args.listen,
            token_file: args.token_file,
            max_debates: args.max_debates,
            stall_seconds: args.stall_seconds,
        },
        config.clone(),
        open_store()?,
    )
    .map_err(|e| Failure::usage(e.to_string()))?;
    Ok(0)
}

/// `moot mcp`: this host's protocols and journal as MCP tools over stdin and stdout.
fn mcp_command(args: crate::cli::McpArgs, config: &crate::config::Config) -> Result<i32, Failure> {
    crate::serve::mcp_stdio(
        host(),
        crate::serve::ServeOptions {
            provider: crate::providers::ProviderFlags::from(&args.provider),
            listen: String::new(),
            token_file: None,
            max_debates: args.max_debates,
            stall_seconds: None,
        },
        config.clone(),
        open_store()?,
    )
    .map_err(|e| Failure::runtime(e.to_string()))?;
    Ok(0)
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
    let fix = |e: crate::config::ConfigError| {
        Failure::usage(format!(
            "{e}\n(fix the file, or point --config / MOOT_CONFIG elsewhere)"
        ))
    };
    let (config, config_path) =
        Config::load(paths::config_path(cli.config.clone())).map_err(fix)?;
    let protocol_names: Vec<&str> = crate::protocol::builtin()
        .protocols()
        .map(|p| p.name())
        .collect();
    config.check_protocol_tables(&protocol_names).map_err(fix)?;
    tui::run::set_mouse(config.ui.mouse.unwrap_or(true));
    let keymap = Keymap::new(&config.ui.keys).map_err(|problem| {
        use crate::tui::keymap::KeymapError;
        // The entry's own line (U19): the command named, or the key written.
        let place = config_path
            .as_deref()
            .map(|p| match &problem {
                KeymapError::UnknownCommand { name, .. } | KeymapError::NoKeys(name) => {
                    crate::config::locate_in_table(p, "ui.keys", name)
                }
                KeymapError::BadKey { key } => crate::config::locate(p, &format!("\"{key}\"")),
                KeymapError::Clash { .. } => crate::config::locate(p, "[ui.keys]"),
            })
            .unwrap_or_else(|| "config".into());
        Failure::usage(format!("{place}: [ui.keys]: {problem}"))
    })?;
    let keymap = Arc::new(keymap);
    Ok((config, keymap))
}

/// A command that prints and exits 0 when it works.
fn done(result: Result<(), Failure>) -> Result<i32, Failure> {
    result.map(|()| 0)
}

fn on_terminal() -> bool {
    std::io::stdout().is_terminal() && std::io::stdin().is_terminal()
}

/// Whether `word` names a command (or `help`), so that a bare one is never taken for a
/// question. Asked of the derived enum, which knows its names without building the whole
/// command line: building that took about a tenth of `moot --version` (issue 27).
pub fn is_subcommand(word: &str) -> bool {
    word == "help" || <Command as clap::Subcommand>::has_subcommand(word)
}

/// The command a question's words spell when they were meant as one: `moot --yes model pull`
/// reads `model pull` as a question, because a debate's flags came first. A command's name
/// alone, or words that parse as that command; never a question that only starts with a
/// command's name ("list the risks of…", which `list` would refuse).
pub fn misplaced_command(words: &[String]) -> Option<String> {
    let first = words.first()?.trim();
    if !is_subcommand(first) {
        return None;
    }
    let spelled = words.join(" ");
    if words.len() == 1 {
        return Some(spelled);
    }
    let argv = std::iter::once("moot".to_string()).chain(words.iter().cloned());
    let parses = match Cli::try_parse_from(argv) {
        Ok(cli) => cli.command.is_some(),
        // `help list` and `model` without its action are commands too, answered with help.
        Err(error) => matches!(
            error.kind(),
            clap::error::ErrorKind::DisplayHelp
                | clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
        ),
    };
    parses.then_some(spelled)
}

/// A command the question's words were likely meant as, one slip away (`moot lst`, `moot shwo
/// DEB-x`): (what was typed, the command, the words as that command). Only a lone word, or
/// words that parse as the command once it is spelled right, so "Lisp or Rust?" stays a
/// question.
pub fn mistyped_command(words: &[String]) -> Option<(String, String, String)> {
    use clap::CommandFactory as _;
    let first = words.first()?.trim();
    if first.is_empty() || !first.chars().all(|c| c.is_ascii_alphabetic() || c == '-') {
        return None;
    }
    let cli = Cli::command();
    let names: Vec<&str> = cli
        .get_subcommands()
        .map(|c| c.get_name())
        .chain(["help"])
        .collect();
    let command = crate::spelling::nearest(first, names.iter().copied())?.to_string();
    let rest = &words[1..];
    let spelled = std::iter::once(command.clone())
        .chain(rest.iter().cloned())
        .collect::<Vec<_>>();
    if !rest.is_empty() && misplaced_command(&spelled).is_none() {
        return None;
    }
    Some((first.to_string(), command, spelled.join(" ")))
}

/// `bytes` on stdout. A reader that stops early (`| head`) is not a failure.
fn printed(bytes: &[u8]) -> Result<i32, Failure> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Failure::runtime(format!(
            "cannot write to standard output: {e}"
        ))),
        _ => Ok(0),
    }
}

fn provider_given(args: &ProviderArgs) -> bool {
    args.provider.is_some()
        || args.model.is_some()
        || args.base_url.is_some()
        || args.script.is_some()
}

/// The PostgreSQL journal this run was pointed at (`--journal`, else `[journal] url`), if any.
static JOURNAL_URL: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Takes the journal's URL from the command line or config, checked before anything opens it.
fn choose_journal(flag: Option<String>, config: &Config) -> Result<(), Failure> {
    let (url, from) = match (flag, &config.journal.url) {
        (Some(url), _) => (url, "--journal".to_string()),
        (None, Some(url)) => (
            url.clone(),
            format!(
                "[journal] url in {}",
                config
                    .source
                    .as_deref()
                    .map_or("the config".into(), |p| p.display().to_string())
            ),
        ),
        (None, None) => return Ok(()),
    };
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return Err(Failure::usage(format!(
            "{from}: {:?} is not a journal moot can open; give a postgres://USER@HOST/DATABASE URL, or leave it out for the SQLite journal in moot's data dir",
            crate::sanitize::redact(&url)
        )));
    }
    let _ = JOURNAL_URL.set(url);
    Ok(())
}

/// The journal, as the command line and config chose it.
pub(crate) fn journal() -> Result<Store, crate::store::StoreError> {
    match JOURNAL_URL.get() {
        Some(url) => Store::connect(url, &paths::database_path()),
        None => Store::open_in_data_dir(&paths::database_path()),
    }
}

/// `moot journal copy --to TARGET`: every debate copied and its chain checked there, one
/// line each; exit 1 when any did not copy or does not verify.
fn journal_copy(to: &str) -> Result<i32, Failure> {
    let source = open_store_to_read()?;
    let target = if to.starts_with("postgres://") || to.starts_with("postgresql://") {
        Store::connect(to, &paths::database_path())?
    } else if to.contains("://") {
        return Err(Failure::usage(format!(
            "--to {}: moot copies a journal to PostgreSQL (postgres://…) or to a SQLite file",
            crate::sanitize::redact(to)
        )));
    } else {
        let path = std::path::Path::new(to);
        if path.exists() {
            return Err(Failure::usage(format!(
                "--to {to}: the file is there already; moot copies a journal into a new SQLite \
                 file (or into PostgreSQL, where it skips the debates that are there)"
            )));
        }
        Store::open(path)?
    };
    let shown = crate::sanitize::redact(to).into_owned();
    let report = source
        .copy_into(&target, &mut |id, outcome| match outcome {
            crate::store::Copied::Verified(head) => println!(
                "ok   {id}  chain verified at {}",
                head.map_or("(empty)".into(), |h| format!("sha256:{h}"))
            ),
            crate::store::Copied::There => println!("--   {id}  there already, the same chain"),
            crate::store::Copied::Failed(why) => {
                println!("FAIL {id}  {}", crate::sanitize::clean(why))
            }
        })
        .map_err(Failure::from)?;
    println!(
        "{} copied to {shown}, {} there already, {} failed",
        report.copied.len(),
        report.already.len(),
        report.failed.len()
    );
    Ok(if report.passed() { 0 } else { 1 })
}

fn open_store() -> Result<Store, Failure> {
    told(journal().map_err(Failure::from)?)
}

/// The journal for a command that only reads it: read as it stands where it cannot be written.
fn open_store_to_read() -> Result<Store, Failure> {
    match JOURNAL_URL.get() {
        Some(_) => open_store(),
        None => told(Store::open_to_read(&paths::database_path()).map_err(Failure::from)?),
    }
}

/// `store`, once what opening it changed has been said.
fn told(store: Store) -> Result<Store, Failure> {
    for notice in store.notices() {
        eprintln!("moot: {}", crate::sanitize::clean(notice));
    }
    Ok(store)
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

/// The token `moot attach` sends: MOOT_SERVE_TOKEN, else `--token-file`, else the one a server
/// on this machine generated in the data directory.
fn attach_token(file: Option<&std::path::Path>) -> Result<String, Failure> {
    if let Ok(token) = std::env::var("MOOT_SERVE_TOKEN")
        && !token.trim().is_empty()
    {
        return Ok(token.trim().to_string());
    }
    let path = file
        .map(std::path::Path::to_path_buf)
        .unwrap_or_else(|| paths::data_dir().join("serve-token"));
    std::fs::read_to_string(&path)
        .map(|t| t.trim().to_string())
        .map_err(|e| {
            Failure::usage(format!(
                "no token for the server: set MOOT_SERVE_TOKEN or give --token-file FILE ({} cannot be read: {e})",
                path.display()
            ))
        })
}

/// `moot attach ID`: the workbench on a debate a server runs.
fn attach(
    config: &Config,
    keymap: &Arc<Keymap>,
    face: &crate::cli::FaceArgs,
    id: &str,
    server: Option<String>,
    token_file: Option<&std::path::Path>,
) -> Result<i32, Failure> {
    let url = server
        .or_else(|| config.serve.url.clone())
        .unwrap_or_else(|| "http://127.0.0.1:7878".into());
    let token = attach_token(token_file)?;
    let remote = block_on(crate::remote::Remote::connect(&url, &token, id))?
        .map_err(|e| Failure::usage(e.to_string()))?;
    workbench(
        config,
        keymap,
        &RunArgs::default(),
        face,
        Start::Attach(Box::new(remote)),
    )
}

#[cfg(test)]
mod tests {
    use super::misplaced_command;

    fn words(text: &str) -> Vec<String> {
        text.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn a_command_behind_a_debates_flags_is_named_but_a_question_starting_with_one_is_not() {
        for command in [
            "model pull",
            "list",
            "show DEB-abc123",
            "help list",
            "model",
        ] {
            assert_eq!(
                misplaced_command(&words(command)).as_deref(),
                Some(command),
                "{command}"
            );
        }
        for question in [
            "list the risks of Redis",
            "show me why PostgreSQL is enough",
            "Should we cache in Redis?",
        ] {
            assert_eq!(misplaced_command(&words(question)), None, "{question}");
        }
        // Quoted, a command's words are one argument: a question.
        assert_eq!(misplaced_command(&["model pull".to_string()]), None);
    }

    /// U14: every command says what it does in its first line (not its own name), every
    /// argument is described, and no help sends a user to a design note they do not have.
    #[test]
    fn every_commands_help_says_what_it_does_and_describes_its_arguments() {
        use clap::CommandFactory as _;
        fn check(command: &clap::Command, path: &str, problems: &mut Vec<String>) {
            let about = command
                .get_about()
                .map(|a| a.to_string())
                .unwrap_or_default();
            if about.trim().is_empty() || about.starts_with('`') {
                problems.push(format!("{path}: its help opens with {about:?}"));
            }
            for arg in command.get_arguments() {
                let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
                if help.trim().is_empty() && arg.get_id() != "help" && arg.get_id() != "version" {
                    problems.push(format!("{path} {}: no description", arg.get_id()));
                }
                if help.to_lowercase().contains("design note") {
                    problems.push(format!("{path} {}: names a design note", arg.get_id()));
                }
            }
            if about.to_lowercase().contains("design note") {
                problems.push(format!("{path}: names a design note"));
            }
            for sub in command.get_subcommands() {
                check(sub, &format!("{path} {}", sub.get_name()), problems);
            }
        }
        let mut problems = Vec::new();
        // Built, as parsing builds it: the arguments are filled in then.
        let mut cli = super::Cli::command();
        cli.build();
        check(&cli, "moot", &mut problems);
        assert!(problems.is_empty(), "{problems:#?}");
    }

    #[test]
    fn a_command_one_slip_away_is_named_but_a_question_near_one_is_not() {
        use super::mistyped_command;
        let named = |text: &str| mistyped_command(&words(text)).map(|(_, command, _)| command);
        assert_eq!(named("lst").as_deref(), Some("list"));
        assert_eq!(named("shwo DEB-x").as_deref(), Some("show"));
        assert_eq!(named("serach Redis").as_deref(), Some("search"));
        for question in [
            "Lisp or Rust for the parser?",
            "Should we cache in Redis?",
            "list",
            "Redis?",
        ] {
            assert_eq!(named(question), None, "{question}");
        }
    }
}
