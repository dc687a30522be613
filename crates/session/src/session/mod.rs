//! Starts, resumes and drives one debate: snapshots its settings, holds its lease, builds its
//! providers, runs the protocol over the journal, and records how it ended (synthesis, decision
//! record, status). Its rooms: `settings` (what a debate runs with, assembled once for every
//! face), `lessons` (what earlier debates teach this one, and what it teaches), `decide`
//! (choices and follow-ups after the end) and `rerun` (the audit's re-run from the journal).

mod decide;
mod lessons;
mod read;
mod request;
mod rerun;
mod settings;

pub use decide::*;
use lessons::*;
pub use read::{Listed, document, listed};
pub use request::DebateRequest;
pub use rerun::*;
pub use settings::*;

use crate::catalog;
use crate::config::Config;
use crate::debate::{Debate, DebateStatus, Event, new_debate_id, now_rfc3339};
use crate::decision;
use crate::engine::{self, Context, EngineError, Replay, Seating};
use crate::llm::{CapabilityCache, Provider};
use crate::protocol::{self, Common, Ending, Outcome};
use crate::providers::{self, ProviderError, ProviderSpec};
use crate::store::{Store, StoreError, StoredSynthesis};
use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

pub use crate::engine::Wiring;
/// The protocols a session can run, as its callers hand them in.
pub use crate::protocol::Registry;

/// The longest question moot takes, in characters: every request carries it, so a pasted file
/// would be paid for on every turn.
pub const MAX_QUESTION_CHARS: usize = 4000;

/// What a resume may change about a stored debate.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResumeChanges {
    /// Another provider (the stored one's server is gone, say).
    pub provider: Option<ProviderSpec>,
    /// Checkpoints on or off from here on.
    pub checkpoints: Option<bool>,
    /// `--option` texts: the options a panel judges, given when its moderator's proposal
    /// could not be used (the protocol refuses them once its options are settled).
    pub options: Vec<String>,
    /// Why it is picked up again (a server that took over a dead replica's debate, say):
    /// journaled as a notice once the resume holds the lease, before anything else runs, so
    /// a resume that runs says why in its own events, and one that does not run says nothing.
    pub notice: Option<String>,
}

/// How a session ended, for the exit code.
#[derive(Debug, Clone, PartialEq)]
pub struct Finish {
    pub id: String,
    pub status: DebateStatus,
    /// Set when the debate paused because the user interrupted it.
    pub interrupted: bool,
    /// Why a failed debate failed.
    pub error: Option<String>,
    /// False when the journal could not record how it ended (it then reads as interrupted).
    pub recorded: bool,
}

impl Finish {
    fn new(id: &str, status: DebateStatus) -> Finish {
        Finish {
            id: id.to_string(),
            status,
            interrupted: false,
            error: None,
            recorded: true,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("the question is empty: moot \"Should we use Redis or PostgreSQL for caching?\"")]
    EmptyQuestion,
    #[error(
        "the question is {chars} characters long; moot takes at most {MAX_QUESTION_CHARS}: \
         state the decision in a few sentences (every turn repeats it)"
    )]
    QuestionTooLong { chars: usize },
    #[error("{id} is {status}; only paused, interrupted or failed debates can be resumed")]
    NotResumable { id: String, status: DebateStatus },
    #[error("the stored settings of {id} cannot be read ({detail}); it cannot be resumed")]
    StoredSettings { id: String, detail: String },
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Environment(String),
    /// An unknown protocol, or settings a protocol refuses.
    #[error("{0}")]
    Protocol(String),
    /// What a new debate was asked for cannot be run as asked: the message says what and how
    /// to fix it (a config key located at its line).
    #[error("{0}")]
    Settings(String),
    #[error("{id} cannot take that on resume: {detail}")]
    ResumeFlag { id: String, detail: String },
    #[error("interrupted before the debate started; nothing was stored")]
    Interrupted,
    #[error(
        "{id} went on elsewhere: another moot serve on its journal took it for stopped and \
         holds its lease; this one stopped writing to it"
    )]
    LeaseLost { id: String },
}

impl SessionError {
    /// Whether the user can fix this by asking differently (exit 2), rather than a failure
    /// at run time (exit 1).
    pub fn is_usage(&self) -> bool {
        match self {
            SessionError::EmptyQuestion
            | SessionError::QuestionTooLong { .. }
            | SessionError::NotResumable { .. }
            | SessionError::Protocol(_)
            | SessionError::Settings(_)
            | SessionError::ResumeFlag { .. } => true,
            // A platform whose TLS cannot be set up is not the person's to fix by asking
            // differently.
            SessionError::Provider(error) => !matches!(error, ProviderError::Http(_)),
            SessionError::Store(error) => matches!(
                error,
                StoreError::NotFound(_) | StoreError::Ambiguous { .. } | StoreError::InUse { .. }
            ),
            _ => false,
        }
    }
}

/// What the program that runs debates hands the session: the protocols it can run and how
/// it opens the embedded model. The binary builds it from `protocol::builtin()` and its own
/// opener; a test hands in a protocol of its own, or none of the embedded model. The session
/// names neither a protocol nor the embedded engine.
#[derive(Clone)]
pub struct Host {
    pub protocols: Registry,
    /// `None`: `--provider local` is refused as a build without the embedded model.
    pub embedded: Option<providers::OpenEmbedded>,
}

impl Host {
    /// `protocols`, with no embedded model.
    pub fn new(protocols: Registry) -> Host {
        Host {
            protocols,
            embedded: None,
        }
    }

    /// What providers are built with here: a fresh HTTP client, the request shapes `store`
    /// has learned, `retry`, and this host's embedded model.
    pub fn provider_builder(
        &self,
        store: &Store,
        retry: &crate::config::RetryConfig,
    ) -> providers::Builder {
        providers::Builder {
            client: crate::llm::LazyClient::default(),
            capabilities: Arc::new(CapabilityCache::from_stored(
                store.load_capabilities().unwrap_or_default(),
            )),
            retry: retry.clone(),
            embedded: self.embedded,
        }
    }

    /// This host, opening the embedded model with `open`.
    pub fn with_embedded(self, open: providers::OpenEmbedded) -> Host {
        Host {
            embedded: Some(open),
            ..self
        }
    }
}

/// How a protocol wants its debates shown; the moderated look for a name no longer
/// registered.
pub fn presentation(registry: &Registry, protocol: &str) -> crate::debate::Presentation {
    registry
        .find(protocol)
        .map(|p| p.presentation())
        .unwrap_or_default()
}

/// Exit codes: 0 done, 1 runtime failure, 2 usage or config error, 3 paused at a checkpoint
/// nobody answered, 130 interrupted (paused).
pub fn exit_code(result: &Result<Finish, SessionError>) -> i32 {
    match result {
        Ok(Finish {
            interrupted: true, ..
        })
        | Err(SessionError::Interrupted) => 130,
        Ok(Finish { status, .. }) => match status {
            DebateStatus::Completed | DebateStatus::Cancelled => 0,
            DebateStatus::Paused => 3,
            _ => 1,
        },
        Err(error) if error.is_usage() => 2,
        Err(_) => 1,
    }
}

/// Creates a new debate in the journal and runs it.
pub async fn start(
    host: Host,
    store: Store,
    question: &str,
    settings: DebateSettings,
    wiring: Wiring,
    interrupt: impl Future<Output = ()>,
) -> Result<Finish, SessionError> {
    let question = question.trim();
    if question.is_empty() {
        return Err(SessionError::EmptyQuestion);
    }
    let chars = question.chars().count();
    if chars > MAX_QUESTION_CHARS {
        return Err(SessionError::QuestionTooLong { chars });
    }
    let mut settings = settings;
    if settings.lessons.enabled && crate::lessons::turned_off(&store)? {
        settings.lessons.enabled = false;
    }
    let providers = providers_for(&host, &store, &settings)?;
    // Polled again by the debate itself: a Ctrl-C while lessons are looked up stops here.
    let mut interrupt = std::pin::pin!(interrupt);
    if settings.lessons.enabled {
        let lookup = relevant_lessons(
            &store,
            question,
            &settings.lessons,
            &providers.seating.default,
            engine::wait(settings.round_timeout_seconds),
        );
        let (given, matched_by) = tokio::select! {
            found = lookup => found?,
            _ = interrupt.as_mut() => return Err(SessionError::Interrupted),
        };
        settings.lessons.given = given;
        settings.lessons.matched_by = matched_by;
    }
    let now = now_rfc3339();
    let debate = Debate {
        id: new_debate_id(),
        question: question.to_string(),
        protocol: settings.protocol.clone(),
        status: DebateStatus::Running,
        config: serde_json::to_value(&settings).map_err(|e| SessionError::StoredSettings {
            id: "the new debate".into(),
            detail: e.to_string(),
        })?,
        seats: Vec::new(),
        created_at: now.clone(),
        updated_at: now,
        finished_at: None,
        confidence: None,
        error: None,
        stage: None,
    };
    store.create_debate(&debate)?;
    // Held until the debate stops driving: the kernel's lock on its lease file.
    let _lease = store.acquire_lease(&debate.id)?;
    let ready = Ready {
        debate,
        settings,
        providers,
        resumed: false,
        notice: None,
    };
    drive(&host.protocols, store, ready, wiring, interrupt.as_mut()).await
}

/// Picks up a stored debate where it stopped: recorded turns are served from the journal.
pub async fn resume(
    host: Host,
    store: Store,
    id: &str,
    changes: ResumeChanges,
    wiring: Wiring,
    interrupt: impl Future<Output = ()>,
) -> Result<Finish, SessionError> {
    let debate = store.debate(id)?;
    if debate.status == DebateStatus::Running {
        // Its lease is held: another driver is running it right now.
        drop(store.acquire_lease(&debate.id)?);
    }
    if !debate.status.is_resumable() {
        return Err(SessionError::NotResumable {
            id: debate.id,
            status: debate.status,
        });
    }
    let changed =
        changes.provider.is_some() || changes.checkpoints.is_some() || !changes.options.is_empty();
    let notice = changes.notice.clone();
    let settings = resumed_settings(&host.protocols, &store, &debate, changes)?;
    let providers = providers_for(&host, &store, &settings)?;
    // Taken before anything is written, so two resumes of one debate cannot both run it.
    let _lease = store.acquire_lease(&debate.id)?;
    // Looked at again under the lease: another driver may have run it to its end between the
    // first look and the lease (its lease given up once it ended).
    let now = store.debate(&debate.id)?.status;
    if now != DebateStatus::Running && !now.is_resumable() {
        let _ = store.release_lease(&debate.id);
        return Err(SessionError::NotResumable {
            id: debate.id,
            status: now,
        });
    }
    if changed {
        let snapshot =
            serde_json::to_value(&settings).map_err(|e| SessionError::StoredSettings {
                id: debate.id.clone(),
                detail: e.to_string(),
            })?;
        store.set_config(&debate.id, &snapshot)?;
    }
    let ready = Ready {
        debate,
        settings,
        providers,
        resumed: true,
        notice,
    };
    drive(&host.protocols, store, ready, wiring, interrupt).await
}

/// Checks a resume's changes before anything runs (the workbench calls it before its screen
/// opens): the stored settings with `changes` applied.
pub fn check_resume(
    registry: &Registry,
    store: &Store,
    id: &str,
    changes: &ResumeChanges,
) -> Result<DebateSettings, SessionError> {
    let debate = store.debate(id)?;
    resumed_settings(registry, store, &debate, changes.clone())
}

/// The stored settings of `debate` with a resume's changes applied.
fn resumed_settings(
    registry: &Registry,
    store: &Store,
    debate: &Debate,
    changes: ResumeChanges,
) -> Result<DebateSettings, SessionError> {
    let mut settings = stored_settings(debate)?;
    if let Some(provider) = changes.provider {
        settings.provider = provider;
    }
    if let Some(checkpoints) = changes.checkpoints {
        settings.checkpoints = checkpoints;
    }
    if !changes.options.is_empty() {
        let protocol = stored_protocol(registry, &debate.id, &settings.protocol)?;
        let turns = store.turns(&debate.id)?;
        settings.protocol_settings = protocol
            .with_options(&settings.protocol_settings, &changes.options, &turns)
            .map_err(|detail| SessionError::ResumeFlag {
                id: debate.id.clone(),
                detail: detail.to_string(),
            })?;
    }
    Ok(settings)
}

/// The settings a debate was stored with.
fn stored_settings(debate: &Debate) -> Result<DebateSettings, SessionError> {
    serde_json::from_value(debate.config.clone()).map_err(|e| SessionError::StoredSettings {
        id: debate.id.clone(),
        detail: e.to_string(),
    })
}

/// The face's event channel, every event on it also served on the debate's socket for
/// viewers in other processes (`moot open`, the history) while it runs. Without a socket (an
/// in-memory journal, a path too long to bind) the debate runs on, and the face is told.
fn served(
    store: &Store,
    id: &str,
    face: tokio::sync::mpsc::UnboundedSender<Event>,
) -> tokio::sync::mpsc::UnboundedSender<Event> {
    let Some(dir) = store.live_dir() else {
        return face;
    };
    let server = match crate::live::Server::start(&dir, id) {
        Ok(server) => server,
        Err(why) => {
            let _ = face.send(Event::Notice {
                message: format!(
                    "other terminals cannot follow this debate live ({why}); `moot open {id}` still replays it"
                ),
            });
            return face;
        }
    };
    let (tap, mut taken) = tokio::sync::mpsc::unbounded_channel::<Event>();
    tokio::spawn(async move {
        while let Some(event) = taken.recv().await {
            server.publish(&event);
            // A face that stopped listening must not stop the viewers.
            let _ = face.send(event);
        }
        // The debate's events are done: the socket goes with the server.
        drop(server);
    });
    tap
}

/// Refuses a debate whose protocol settings were stored by a newer moot than this one reads.
fn readable(
    id: &str,
    protocol: &dyn protocol::Protocol,
    settings: &DebateSettings,
) -> Result<(), SessionError> {
    let stored = settings.protocol_settings_version;
    let known = protocol.settings_version();
    if stored > known {
        return Err(SessionError::StoredSettings {
            id: id.to_string(),
            detail: format!(
                "its {} settings are version {stored}, written by a newer moot; this one reads up to version {known} (upgrade moot to go on)",
                protocol.name()
            ),
        });
    }
    Ok(())
}

/// The protocol a stored debate names (one no longer registered is a stored-settings error).
fn stored_protocol(
    registry: &Registry,
    id: &str,
    name: &str,
) -> Result<&'static dyn protocol::Protocol, SessionError> {
    registry
        .named(name)
        .map_err(|detail| SessionError::StoredSettings {
            id: id.to_string(),
            detail: detail.to_string(),
        })
}

/// The providers of one debate, and the capability cache and HTTP client they share (with
/// the providers the protocol builds later, for seats of its own).
struct Providers {
    seating: Seating,
    per_perspective: HashMap<String, Arc<dyn Provider>>,
    builder: providers::Builder,
}

fn providers_for(
    host: &Host,
    store: &Store,
    settings: &DebateSettings,
) -> Result<Providers, SessionError> {
    let builder = host.provider_builder(store, &settings.retry);
    let default = builder.build(&settings.provider)?;
    let mut per_perspective = HashMap::new();
    for (perspective, spec) in &settings.perspective_providers {
        per_perspective.insert(perspective.clone(), builder.build(spec)?);
    }
    Ok(Providers {
        seating: Seating::all(default),
        per_perspective,
        builder,
    })
}

/// Renews the debate's lease until dropped (with the debate it runs beside), or until it is
/// found held by another (a replica that took this one for dead: the debate is its now).
/// Each renewal runs on a blocking thread: while another process holds the journal it waits
/// out SQLite's busy timeout there, not on the task that drives the debate.
async fn keep_lease(store: &Store, id: &str) {
    let mut renewal = tokio::time::interval(store.lease_renewal());
    renewal.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        renewal.tick().await;
        let (store, id) = (store.clone(), id.to_string());
        // A missed renewal only risks the debate reading as interrupted for a moment.
        if let Ok(Ok(false)) = tokio::task::spawn_blocking(move || store.renew_lease(&id)).await {
            return;
        }
    }
}

/// A debate ready to run: its row, its settings, the providers its seats speak through, and
/// whether it is picked up again (its journal replayed) and why.
struct Ready {
    debate: Debate,
    settings: DebateSettings,
    providers: Providers,
    resumed: bool,
    notice: Option<String>,
}

/// Runs `ready` under its lease, and lets the lease go however the run ends.
async fn drive(
    registry: &Registry,
    store: Store,
    ready: Ready,
    wiring: Wiring,
    interrupt: impl Future<Output = ()>,
) -> Result<Finish, SessionError> {
    let id = ready.debate.id.clone();
    let outcome = run(registry, &store, ready, wiring, interrupt).await;
    let _ = store.release_lease(&id);
    outcome
}

async fn run(
    registry: &Registry,
    store: &Store,
    ready: Ready,
    wiring: Wiring,
    interrupt: impl Future<Output = ()>,
) -> Result<Finish, SessionError> {
    let Ready {
        ref debate,
        ref settings,
        providers,
        resumed,
        ref notice,
    } = ready;
    let Providers {
        seating,
        per_perspective: perspective_providers,
        builder,
    } = providers;
    if resumed && debate.status == DebateStatus::Failed {
        // The failure that ended the debate is retried, not replayed.
        store.discard_trailing_failures(&debate.id)?;
    }
    let replay = if resumed {
        Replay {
            turns: store.turns(&debate.id)?,
            answers: store.checkpoints(&debate.id)?,
            events: store.events(&debate.id)?,
        }
    } else {
        Replay::default()
    };
    let protocol = stored_protocol(registry, debate.id.as_str(), &settings.protocol)?;
    readable(&debate.id, protocol, settings)?;
    store.set_status(&debate.id, DebateStatus::Running, None)?;
    let wiring = Wiring {
        events: served(store, &debate.id, wiring.events),
        ..wiring
    };
    let ctx = Context::new(
        debate.id.clone(),
        store.clone(),
        wiring,
        seating,
        settings.engine_settings(protocol),
        replay,
    );
    ctx.announce(Event::DebateCreated {
        id: debate.id.clone(),
        question: debate.question.clone(),
        protocol: debate.protocol.clone(),
        resumed,
        presentation: protocol.presentation(),
    });
    if let Some(message) = notice {
        ctx.announce(Event::Notice {
            message: message.clone(),
        });
    }
    for warning in providers::take_warnings() {
        ctx.announce(Event::Notice { message: warning });
    }
    if !settings.lessons.given.is_empty() {
        ctx.emit(Event::Lessons {
            lessons: settings.lessons.given.clone(),
        });
    }
    let capabilities = builder.capabilities.clone();
    let common = Common {
        providers: Arc::new(move |spec| {
            let spec: ProviderSpec = serde_json::from_value(spec.clone())?;
            builder
                .build(&spec)
                .map_err(|e| protocol::ProviderUnavailable::Refused(Box::new(e)))
        }),
        perspective_providers,
        ..common_for(debate, settings)
    };
    let mut interrupt = std::pin::pin!(interrupt);
    let outcome = tokio::select! {
        outcome = protocol.run(&ctx, &common, &settings.protocol_settings) => Some(outcome),
        _ = interrupt.as_mut() => None,
        () = keep_lease(store, &debate.id) => {
            // Another holder runs it now: nothing more is written here.
            return Err(SessionError::LeaseLost {
                id: debate.id.clone(),
            });
        }
    };
    // Losing learned shapes only costs a degraded request next time.
    let _ = store.save_capabilities(&capabilities.stored());
    // Every event and audit entry of the run is written before how it ended: the record's
    // receipt covers them all.
    let outcome = match (outcome, ctx.flush().await) {
        (Some(Ok(_)), Err(error)) => Some(Err(error)),
        (outcome, _) => outcome,
    };
    let finish = match outcome {
        None => {
            ctx.announce(Event::Notice {
                message: format!(
                    "interrupted; the debate is paused: moot resume {}",
                    debate.id
                ),
            });
            journaled(ctx.close(DebateStatus::Paused, None).await)?;
            Ok(Finish {
                interrupted: true,
                ..Finish::new(&debate.id, DebateStatus::Paused)
            })
        }
        Some(Ok(Ending::Paused)) => {
            ctx.announce(Event::Notice {
                message: format!(
                    "{}; the debate is paused: moot resume {}",
                    ctx.unanswered().unwrap_or_else(|| format!(
                        "nobody answered within {} s",
                        settings.checkpoint_timeout_seconds
                    )),
                    debate.id
                ),
            });
            journaled(ctx.close(DebateStatus::Paused, None).await)?;
            Ok(Finish::new(&debate.id, DebateStatus::Paused))
        }
        Some(Ok(Ending::Cancelled)) => {
            journaled(ctx.close(DebateStatus::Cancelled, None).await)?;
            Ok(Finish::new(&debate.id, DebateStatus::Cancelled))
        }
        Some(Ok(Ending::Concluded(outcome))) => {
            let outcome = cite_lessons(*outcome, &settings.lessons);
            conclude(store, debate, settings, protocol, &outcome, &ctx)?;
            // The lessons step has the round's deadline and stops at Ctrl-C like every other
            // step; the record is written already, so the debate is complete either way.
            let mut interrupted = false;
            if settings.lessons.enabled {
                let deadline = engine::wait(settings.round_timeout_seconds);
                tokio::select! {
                    () = learn(Ended { ctx: &ctx, store, protocol, debate, settings, outcome: &outcome }) => {}
                    () = interrupt.as_mut() => {
                        interrupted = true;
                        ctx.announce(Event::Notice {
                            message: "interrupted while writing lessons; the debate is complete and no lessons were written".into(),
                        });
                    }
                    () = tokio::time::sleep(deadline) => ctx.announce(Event::Notice {
                        message: format!(
                            "no lessons were written: the lessons step took longer than {} s ([debate] round_timeout_seconds)",
                            deadline.as_secs()
                        ),
                    }),
                }
            }
            journaled(ctx.close(DebateStatus::Completed, None).await)?;
            Ok(Finish {
                interrupted,
                ..Finish::new(&debate.id, DebateStatus::Completed)
            })
        }
        Some(Err(error)) => {
            let message = match &error {
                EngineError::Store(e) => e.to_string(),
                other => other.to_string(),
            };
            ctx.announce(Event::Error {
                message: message.clone(),
            });
            // When the journal itself is what failed, this write may fail too: say so rather
            // than claim the debate is stored as failed. It is tried once, not waited out.
            let recorded = ctx
                .close_at_once(DebateStatus::Failed, Some(&message))
                .is_ok();
            Ok(Finish {
                error: Some(message),
                recorded,
                ..Finish::new(&debate.id, DebateStatus::Failed)
            })
        }
    };
    // The closing events wait in the backlog if the journal is locked right now; they are
    // written before the session ends (a journal that stays locked only loses them from the
    // replay log: the ending itself is in the debate's row).
    let _ = ctx.flush().await;
    finish
}

/// A journal write of the session's, as the session reports it (the engine's journal writes
/// fail only as the store does).
fn journaled(written: Result<(), EngineError>) -> Result<(), SessionError> {
    written.map_err(|error| match error {
        EngineError::Store(error) => SessionError::Store(error),
        other => SessionError::Store(StoreError::Data(other.to_string())),
    })
}

/// What every protocol is given of a debate's settings; its providers are the caller's to set.
fn common_for(debate: &Debate, settings: &DebateSettings) -> Common {
    Common {
        providers: Arc::new(|_| Err(protocol::ProviderUnavailable::NotSet)),
        question: debate.question.clone(),
        vote: settings.vote,
        gates: settings.gates.clone(),
        vote_weights: settings.vote_weights.clone(),
        max_rounds: settings.max_rounds,
        perspectives: settings.perspectives,
        default_perspectives: settings.default_perspectives,
        named: settings.named_perspectives.clone(),
        catalog: catalog::catalog(&settings.custom_perspectives),
        token_budget: settings.token_budget_per_round,
        round_timeout: engine::wait(settings.round_timeout_seconds),
        total_timeout: engine::wait(settings.total_timeout_seconds),
        perspective_providers: HashMap::new(),
    }
}

/// The provider for a seat of `config` named by profile (or kind) and model; the debate's own
/// provider when neither is given.
pub fn seat_provider(
    config: &Config,
    default: &ProviderSpec,
    profile: Option<&str>,
    model: Option<&str>,
) -> Result<ProviderSpec, protocol::SettingsError> {
    let mut spec = match profile {
        Some(name) => providers::named_spec(name, config)
            .map_err(|e| protocol::SettingsError::from(e.to_string()))?,
        None => default.clone(),
    };
    if let Some(model) = model {
        spec.model = model.to_string();
    }
    Ok(spec)
}

/// `seat_provider`, as the snapshot a protocol stores in its settings.
pub fn resolve_provider(
    config: &Config,
    default: &ProviderSpec,
    profile: Option<&str>,
    model: Option<&str>,
) -> Result<serde_json::Value, protocol::SettingsError> {
    let spec = seat_provider(config, default, profile, model)?;
    serde_json::to_value(&spec).map_err(|e| protocol::SettingsError::from(e.to_string()))
}

/// Stores the outcome, writes the decision record (once) and the follow-up if asked.
fn conclude(
    store: &Store,
    debate: &Debate,
    settings: &DebateSettings,
    protocol: &dyn protocol::Protocol,
    outcome: &Outcome,
    ctx: &Context,
) -> Result<(), StoreError> {
    let outcome = &with_receipt(store, debate, protocol, outcome)?;
    let previous = store.synthesis(&debate.id)?;
    let mut path = previous.as_ref().and_then(|s| s.path.clone());
    let mut follow_up_path = previous.as_ref().and_then(|s| s.follow_up_path.clone());
    if settings.write_decision && path.is_none() {
        match decision::write_record(
            &settings.decisions_dir,
            &outcome.date,
            &debate.question,
            &outcome.markdown,
        ) {
            Ok(written) => path = Some(written.display().to_string()),
            Err(e) => ctx.announce(Event::Notice {
                message: format!(
                    "could not write the decision record to {}: {e}; it is stored, `moot export {} --format md` prints it",
                    settings.decisions_dir.display(),
                    debate.id
                ),
            }),
        }
    }
    if settings.follow_up && follow_up_path.is_none() {
        let record = path.as_ref().map(PathBuf::from);
        if let Some(draft) = protocol.follow_up(&outcome.data, &debate.question, record.as_deref())
        {
            match decision::write_follow_up(
                &settings.decisions_dir,
                &outcome.date,
                &debate.question,
                &draft,
            ) {
                Ok(written) => follow_up_path = Some(written.display().to_string()),
                Err(e) => ctx.announce(Event::Notice {
                    message: format!("could not write the follow-up issue draft: {e}"),
                }),
            }
        }
    }
    ctx.announce(save_outcome(
        store,
        &debate.id,
        outcome,
        path,
        follow_up_path.clone(),
    )?);
    if let Some(path) = follow_up_path {
        ctx.announce(Event::FollowUp { path });
    }
    Ok(())
}

/// The outcome with its record's closing section: the uniform result its protocol reads
/// from it, and the receipt (the journal's chain head over every row written before the
/// record, `decision::Receipt`).
fn with_receipt(
    store: &Store,
    debate: &Debate,
    protocol: &dyn protocol::Protocol,
    outcome: &Outcome,
) -> Result<Outcome, StoreError> {
    let mut outcome = outcome.clone();
    let initiated_by: Option<crate::debate::Initiator> = debate
        .config
        .get("initiated_by")
        .and_then(|v| serde_json::from_value(v.clone()).ok());
    let turns = store.turns(&debate.id)?;
    let fallbacks = fallback_line(&turns);
    // How the seats changed their minds, from the moves alone (empty when none gave ground).
    let dynamics = crate::report::dynamics_line(&turns);
    let result = protocol.resolution(&outcome.data).map(|r| {
        crate::debate::Concluded::new(r, outcome.confidence).line(initiated_by.as_ref())
            + &fallbacks
            + &dynamics
    });
    let receipt = store.chain_head(&debate.id)?.map(|head| decision::Receipt {
        debate: debate.id.clone(),
        entry: head.entries,
        hash: head.hash,
    });
    outcome.markdown = format!(
        "{}{}",
        decision::without_receipt(&outcome.markdown),
        decision::closing_section(result.as_deref(), receipt.as_ref())
    );
    Ok(outcome)
}

/// " · 12 turns served by a fallback (backup)" when a provider's fallback served any turn (its
/// model names it: `llm::cascade`), else nothing.
fn fallback_line(turns: &[crate::debate::Turn]) -> String {
    let mut by: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for turn in turns {
        if let Some(name) = turn
            .model
            .rsplit_once("(fallback ")
            .and_then(|(_, rest)| rest.strip_suffix(')'))
        {
            *by.entry(name).or_default() += 1;
        }
    }
    if by.is_empty() {
        return String::new();
    }
    let served: Vec<String> = by
        .iter()
        .map(|(name, n)| format!("{n} by {name}"))
        .collect();
    format!(
        " · turns served by a fallback provider after the first failed past its retries: {}",
        served.join(", ")
    )
}

/// Stores a debate's outcome with where its record and follow-up were written, and returns
/// the final `Synthesis` event that announces it.
fn save_outcome(
    store: &Store,
    id: &str,
    outcome: &Outcome,
    path: Option<String>,
    follow_up_path: Option<String>,
) -> Result<Event, StoreError> {
    store.save_synthesis(
        id,
        &StoredSynthesis {
            markdown: outcome.markdown.clone(),
            data: outcome.data.clone(),
            confidence: outcome.confidence,
            path: path.clone(),
            follow_up_path,
            section: outcome.section.clone(),
        },
    )?;
    Ok(Event::Synthesis {
        markdown: outcome.markdown.clone(),
        confidence: outcome.confidence,
        path,
        draft: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_from_a_newer_moot_are_refused_and_older_ones_read() {
        let registry = crate::protocol::builtin();
        let mut settings = DebateSettings::from_config(
            &registry,
            &Config::default(),
            crate::providers::ProviderSpec::scripted("none.json"),
        )
        .unwrap();
        let protocol = registry.named("moderated").unwrap();
        settings.protocol = protocol.name().into();
        settings.protocol_settings_version = protocol.settings_version();
        assert_eq!(settings.protocol_settings_version, 1);
        assert!(readable("DEB-x", protocol, &settings).is_ok());
        // Stored before snapshots carried a version.
        settings.protocol_settings_version = 0;
        assert!(readable("DEB-x", protocol, &settings).is_ok());
        settings.protocol_settings_version = 2;
        let refused = readable("DEB-x", protocol, &settings)
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("version 2, written by a newer moot")
                && refused.contains("reads up to version 1"),
            "{refused}"
        );
    }

    /// The embedded model is opened by what the host hands in, and by nothing else: a host
    /// without an opener refuses a local debate before the journal holds it; one with an
    /// opener calls it with the model the spec names.
    #[tokio::test]
    async fn the_embedded_model_is_opened_by_the_hosts_opener_alone() {
        fn refusing(
            path: &std::path::Path,
            _: &crate::llm::embedded::LocalSettings,
        ) -> Result<Arc<dyn Provider>, Box<dyn std::error::Error + Send + Sync>> {
            Err(format!("the test's opener was asked for {}", path.display()).into())
        }
        let models = tempfile::tempdir().unwrap();
        let model = models.path().join("tiny.gguf");
        std::fs::write(&model, b"GGUF").unwrap();
        let registry = crate::protocol::builtin();
        let spec = ProviderSpec {
            kind: crate::llm::ProviderKind::Local,
            model: model.display().to_string(),
            ..ProviderSpec::openai("http://127.0.0.1:9/v1")
        };
        let settings = DebateSettings::from_config(&registry, &Config::default(), spec).unwrap();
        let run = |host: Host| {
            let settings = settings.clone();
            async move {
                let store = Store::in_memory().unwrap();
                let (events, _) = tokio::sync::mpsc::unbounded_channel();
                let (_, controls) = tokio::sync::mpsc::unbounded_channel();
                let wiring = Wiring {
                    events,
                    controls,
                    answerer: "test".into(),
                };
                let error = start(host, store.clone(), "Tabs?", settings, wiring, async {})
                    .await
                    .unwrap_err();
                (error.to_string(), store.list(10).unwrap().len())
            }
        };
        let (without, journaled) = run(Host::new(registry.clone())).await;
        assert!(
            without.contains("built without the embedded model"),
            "{without}"
        );
        assert_eq!(journaled, 0);
        let (with, _) = run(Host::new(registry).with_embedded(refusing)).await;
        assert!(
            with.contains("the test's opener was asked for") && with.contains("tiny.gguf"),
            "{with}"
        );
    }
}
