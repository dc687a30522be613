//! moot's entry point: parse arguments (with every protocol's flags) and hand over to
//! `launch::dispatch`.

// A panic is never how moot reports a problem: outside tests, an unwrap or expect is refused
// at compile time (errors carry what went wrong and how to fix it instead).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![forbid(unsafe_code)]

use clap::{CommandFactory, FromArgMatches};
use moot::cli::Cli;
use moot::launch::{self, is_subcommand};
use moot::sanitize;
use std::ffi::OsString;
use std::process::ExitCode;

fn main() -> ExitCode {
    // A worker for the embedded model (moot re-executed by itself): it answers over its pipes.
    #[cfg(feature = "local")]
    {
        use moot::llm::local::worker;
        if std::env::args_os().nth(1).as_deref() == Some(std::ffi::OsStr::new(worker::SUBCOMMAND)) {
            return worker::serve();
        }
        // The embedded model runs in workers of this very binary.
        if let Ok(program) = std::env::current_exe() {
            worker::run_in_workers(program);
        }
    }
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
    let code = match launch::dispatch(cli) {
        Ok(code) => code,
        Err(failure) => {
            // Escapes stripped and secrets redacted, as for everything else moot prints.
            eprintln!("moot: {}", sanitize::clean(&failure.message));
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
    let shipped = moot::protocol::builtin();
    for flag in shipped.protocols().flat_map(|p| p.flags()) {
        if seen.contains(&flag.name) {
            continue;
        }
        seen.push(flag.name);
        let owners: Vec<&str> = shipped
            .protocols()
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
    for flag in moot::protocol::builtin()
        .protocols()
        .flat_map(|p| p.flags())
    {
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

/// `moot --config FILE list`: global options may come before a command; clap wants the command
/// first, so it is moved there when only global options precede it.
fn hoist_subcommand(mut args: Vec<OsString>) -> Vec<OsString> {
    let mut index = 1;
    while index < args.len() {
        let arg = args[index].to_string_lossy();
        if arg == "--config" {
            index += 2;
        } else if arg.starts_with("--config=") {
            index += 1;
        } else {
            if index > 1 && is_subcommand(&arg) {
                let command = args.remove(index);
                args.insert(1, command);
            }
            break;
        }
    }
    args
}
