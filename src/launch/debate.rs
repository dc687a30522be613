//! A debate from the command line: new (on the workbench or headless), resumed, or audited.

use super::{
    block_on, ensure_local_model, misplaced_command, mistyped_command, on_terminal, open_store,
    open_store_to_read, provider_given,
};
use crate::cli::{CheckpointMode, FaceArgs, RunArgs};
use crate::commands::{self, Failure};
use crate::config::Config;
use crate::headless::{self, CheckpointAnswers};
use crate::providers;
use crate::sanitize;
use crate::session::{self, DebateRequest, ResumeChanges, SessionError};
use crate::tui;
use crate::tui::history::{NewDebate, ProtocolChoice, ProviderChoice};
use crate::tui::keymap::Keymap;
use crate::tui::run::{Run, Setup, Start};
use crate::tui::theme::{Depth, Theme};
use std::sync::Arc;

pub(super) fn run_debate(
    args: RunArgs,
    config: &Config,
    keymap: &Arc<Keymap>,
) -> Result<i32, Failure> {
    let question = args.question.join(" ");
    if question.trim().is_empty() {
        if on_terminal() && !args.face.headless {
            return workbench(config, keymap, &args, &args.face, Start::History);
        }
        return Err(Failure::usage(
            "no question given: moot --headless \"Should we use Redis or PostgreSQL for caching?\" (moot --help for more)",
        ));
    }
    // `moot --headless list`, `moot --yes model pull`: a command is never a question.
    if let Some(command) = misplaced_command(&args.question)
        && !std::env::args().any(|arg| arg == "--")
    {
        return Err(Failure::usage(format!(
            "`{command}` is a moot command, not a question: run `moot {command}` (a command \
             comes first, its flags after it). To debate these words, write `moot -- {command}`."
        )));
    }
    // `moot lst`, `moot shwo DEB-x`: a slip for a command is refused, not debated (U8).
    if let Some((typed, _, spelled)) = mistyped_command(&args.question)
        && !std::env::args().any(|arg| arg == "--")
    {
        return Err(Failure::usage(format!(
            "unknown command '{typed}'; did you mean 'moot {spelled}'? To debate these words, \
             write `moot -- {}`.",
            args.question.join(" ")
        )));
    }
    let chars = question.trim().chars().count();
    if chars > session::MAX_QUESTION_CHARS {
        return Err(Failure::usage(
            session::SessionError::QuestionTooLong { chars }.to_string(),
        ));
    }
    let host = super::host();
    let mut settings = session::assemble(&host.protocols, &DebateRequest::from(&args), config)?;
    let headless = !on_terminal() || args.face.headless;
    settings.initiated_by.get_or_insert(if headless {
        crate::debate::Initiator::Stdin
    } else {
        crate::debate::Initiator::Person
    });
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
            host,
            store,
            &question,
            settings,
            wiring,
            crate::signals::interrupted(),
        )
    }))
}

/// Opens the workbench on a screen; new debates from its form get the same settings as the
/// command line (`args`) would give them.
pub(super) fn workbench(
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
    let asked = DebateRequest::from(args);
    let configured = session::chosen_protocol(&asked, config).to_string();
    let host = super::host();
    let settings_for = |debate: &NewDebate| {
        let request = debate.request(&asked, &configured);
        let mut settings = session::assemble(&host.protocols, &request, config)?;
        // A debate started from the workbench's form was started by the person at it.
        settings.initiated_by = Some(crate::debate::Initiator::Person);
        Ok(settings)
    };
    let custom = config.debate.custom_perspectives.clone();
    let catalog = Box::new(move || {
        crate::catalog::catalog(&custom)
            .into_iter()
            .map(|p| sanitize::clean(&p.name))
            .collect()
    });
    let setup = Setup {
        theme,
        keymap: keymap.clone(),
        catalog,
        protocols: protocol_choices(),
        default_protocol: configured.clone(),
        providers: provider_choices(args, config),
        served: served(config),
        host: host.clone(),
    };
    // Opened by the workbench once its first frame is up.
    let journal = super::journal;
    block_on(tui::run::workbench(journal, setup, start, settings_for))?.map_err(|e| match e {
        SessionError::Store(e) => Failure::from(e),
        e => Failure::runtime(e.to_string()),
    })
}

/// The providers the new-debate form offers: first the one `moot QUESTION` with these flags
/// would use (named, with why), then each config profile, then the presets not shadowed by
/// one. Nothing here asks the network; an Ollama that answers is found when the debate starts.
fn provider_choices(args: &RunArgs, config: &Config) -> Vec<ProviderChoice> {
    let flags = crate::providers::ProviderFlags::from(&args.provider);
    let default = match providers::settled_choice(&flags, config) {
        Some(_) => match providers::resolve(&flags, config) {
            Ok(spec) => ProviderChoice {
                name: None,
                label: format!("{} ({})", spec.name, where_from(args, config)),
                model: spec.model,
            },
            Err(e) => ProviderChoice {
                name: None,
                label: format!("the default, which cannot be used: {e}"),
                model: String::new(),
            },
        },
        None => ProviderChoice {
            name: None,
            label: "auto (an Ollama that answers, else the embedded model)".into(),
            model: String::new(),
        },
    };
    let mut names: Vec<String> = config.providers.keys().cloned().collect();
    names.sort();
    let presets = ["openai", "anthropic", "ollama"]
        .into_iter()
        .chain(cfg!(feature = "local").then_some("local"));
    for preset in presets {
        if !names.iter().any(|n| n == preset) {
            names.push(preset.to_string());
        }
    }
    std::iter::once(default)
        .chain(names.into_iter().filter_map(|name| {
            let spec = providers::named_spec(&name, config).ok()?;
            let place = match (&spec.base_url, spec.kind) {
                (_, crate::config::ProviderKind::Local) => " · embedded".to_string(),
                (Some(url), _) => format!(" · {url}"),
                (None, _) => String::new(),
            };
            Some(ProviderChoice {
                label: format!("{name}{place}"),
                model: spec.model,
                name: Some(name),
            })
        }))
        .map(|choice| ProviderChoice {
            label: sanitize::clean(&choice.label),
            ..choice
        })
        .collect()
}

/// Why the default provider is the one it is, for the form.
fn where_from(args: &RunArgs, config: &Config) -> &'static str {
    if args.provider.provider.is_some() || args.provider.base_url.is_some() {
        "from the command line"
    } else if config.provider.is_some() {
        "from the config"
    } else {
        "from the environment"
    }
}

/// The server whose debates the history lists too, when `[serve] url` names one: a client
/// with the token `moot attach` would use, or why there is none.
fn served(config: &Config) -> Option<tui::run::Served> {
    let base = config.serve.url.clone()?;
    let client = super::attach_token(None)
        .map_err(|e| crate::remote::RemoteError::Token(e.message))
        .and_then(|token| crate::remote::Server::new(&base, &token));
    Some(tui::run::Served { base, client })
}

/// `moot audit`: the trail, `--verify` (the chain, the hashes and a re-run from the journal) or
/// `--verify-record FILE` (a record file against its receipt); exit 1 when a check fails.
pub(super) fn audit_command(
    id: &str,
    json: bool,
    verify: bool,
    verify_record: Option<&std::path::Path>,
) -> Result<i32, Failure> {
    let store = open_store_to_read()?;
    if let Some(file) = verify_record {
        let text = std::fs::read_to_string(file)
            .map_err(|e| Failure::usage(format!("cannot read {}: {e}", file.display())))?;
        let shown = file.display().to_string();
        let report =
            crate::audit::verify_record(&store, id, &shown, &text).map_err(Failure::from)?;
        print!("{}", report.to_text());
        return Ok(if report.passed() { 0 } else { 1 });
    }
    if !verify {
        commands::audit(&store, id, json)?;
        return Ok(0);
    }
    let report = block_on(crate::audit::verify(&super::host().protocols, &store, id))?
        .map_err(Failure::from)?;
    print!("{}", report.to_text());
    Ok(if report.passed() { 0 } else { 1 })
}

/// Every registered protocol as the new-debate form offers it.
pub fn protocol_choices() -> Vec<ProtocolChoice> {
    crate::protocol::builtin()
        .protocols()
        .map(|p| ProtocolChoice {
            name: p.name().to_string(),
            description: p.description().to_string(),
            seat_role: p.presentation().seat_role,
            seats_from_catalog: p.presentation().seats_from_catalog,
            flags: form_flags(p),
        })
        .collect()
}

/// The options the new-debate form offers for `protocol`: its own flags, then the run flags
/// every protocol takes that the form has no field for.
fn form_flags(protocol: &dyn crate::protocol::Protocol) -> Vec<tui::history::FlagChoice> {
    use tui::history::FlagChoice;
    let mut flags: Vec<FlagChoice> = protocol
        .flags()
        .iter()
        .map(|f| FlagChoice {
            name: f.name.to_string(),
            value: f.value.map(str::to_string),
            help: f.help.to_string(),
            repeatable: f.repeatable,
        })
        .collect();
    // A protocol that reads `--perspective` as a viewpoint of its own (the dialogue's focus)
    // takes it here; the catalog's seats have their own fields.
    if protocol.reads_perspective() && !protocol.presentation().seats_from_catalog {
        flags.push(FlagChoice {
            name: "perspective".into(),
            value: Some("NAME".into()),
            help: "The viewpoint it focuses on: a perspective from `moot perspectives`".into(),
            repeatable: false,
        });
    }
    flags.push(FlagChoice {
        name: "vote".into(),
        value: Some("plurality, borda, condorcet, …".into()),
        help: "End with a vote of the seats: plurality, borda, condorcet, unanimous, weighted, threshold or auto".into(),
        repeatable: false,
    });
    flags.push(FlagChoice {
        name: "gates".into(),
        // The field shows what it takes; a long list is cut as --vote's is (the help has all).
        value: Some(match protocol.gate_points() {
            [first, second, _, ..] => format!("{first}, {second}, …"),
            points => points.join(","),
        }),
        help: format!(
            "Stop for approval at these points (comma-separated): {}",
            protocol.gate_points().join(", ")
        ),
        repeatable: false,
    });
    flags
}

/// `moot resume ID`: refused before a screen opens when the debate is unknown, finished or
/// running elsewhere; then on the workbench, or headless.
pub(super) fn resume_command(
    config: &Config,
    keymap: &Arc<Keymap>,
    args: &crate::cli::ResumeArgs,
) -> Result<i32, Failure> {
    let store = open_store()?;
    let provider = if provider_given(&args.provider) {
        let spec = providers::resolve(
            &crate::providers::ProviderFlags::from(&args.provider),
            config,
        )
        .map_err(|e| Failure::usage(e.to_string()))?;
        ensure_local_model(&spec, args.yes)?;
        Some(spec)
    } else {
        None
    };
    let changes = ResumeChanges {
        provider,
        checkpoints: args.checkpoints.enabled(),
        options: args.options.clone(),
        notice: None,
    };
    // Refused before a screen opens: an unknown, finished or running debate, or a change it
    // cannot take.
    let debate = store.debate(&args.id)?;
    if debate.status == crate::debate::DebateStatus::Running {
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
    let host = super::host();
    session::check_resume(&host.protocols, &store, &debate.id, &changes).map_err(|e| {
        match e.is_usage() {
            true => Failure::usage(e.to_string()),
            false => Failure::from(e),
        }
    })?;
    if on_terminal() && !args.face.headless {
        let start = Start::Live(Run::Resume {
            id: debate.id,
            changes: Box::new(changes),
        });
        return workbench(config, keymap, &RunArgs::default(), &args.face, start);
    }
    let answers = answers(args.checkpoints.mode());
    let id = debate.id;
    block_on(headless::run(answers, |wiring| {
        session::resume(
            host,
            store,
            &id,
            changes,
            wiring,
            crate::signals::interrupted(),
        )
    }))
}

pub(super) fn answers(mode: CheckpointMode) -> CheckpointAnswers {
    match mode {
        CheckpointMode::Auto => CheckpointAnswers::Auto,
        CheckpointMode::Stdin => CheckpointAnswers::Stdin,
        CheckpointMode::Wait => CheckpointAnswers::Wait,
    }
}

/// `moot decide ID OPTION [--force]`: settles a finished debate's result, or answers a debate
/// paused at its choice and resumes it to the end, no question asked again (each takes its
/// default), then prints the record as the finished one would.
pub(super) fn decide_command(id: &str, option: &str, force: bool) -> Result<i32, Failure> {
    let store = open_store()?;
    let by = format!("{} on the command line", crate::signals::user());
    if !commands::decide(&store, id, option, &by, force)? {
        return Ok(0);
    }
    let id = store.debate(id)?.id;
    eprintln!(
        "moot: option {} journaled for {id}; finishing it",
        option.trim().to_uppercase()
    );
    let finish = block_on(async {
        let (events, mut events_rx) = tokio::sync::mpsc::unbounded_channel();
        // Nobody answers: a question the finish still asks takes its default.
        let (_, controls) = tokio::sync::mpsc::unbounded_channel();
        let drain = tokio::spawn(async move { while events_rx.recv().await.is_some() {} });
        let wiring = session::Wiring {
            events,
            controls,
            answerer: by,
        };
        let finish = session::resume(
            super::host(),
            store.clone(),
            &id,
            ResumeChanges::default(),
            wiring,
            crate::signals::interrupted(),
        )
        .await;
        let _ = drain.await;
        finish
    })?
    .map_err(Failure::from)?;
    if finish.status != crate::debate::DebateStatus::Completed {
        return Err(Failure::runtime(format!(
            "{id} is {} after the choice{}; `moot resume {id}` goes on with it",
            finish.status,
            finish.error.map(|e| format!(" ({e})")).unwrap_or_default()
        )));
    }
    if let Some(record) = store.synthesis(&id)? {
        let mut out = sanitize::clean(&record.markdown);
        if let Some(path) = record.path {
            out.push_str(&format!("\nRecorded in {path}\n"));
        }
        print!("{out}");
    }
    Ok(0)
}
