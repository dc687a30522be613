//! Starts, resumes and drives one debate: snapshots its settings, holds its lease, builds its
//! providers, runs the protocol over the journal, and records how it ended (synthesis, decision
//! record, status).

use crate::catalog;
use crate::config::{Config, PerspectiveConfig, RetryConfig, TokenBudget};
use crate::debate::{Debate, DebateStatus, Event, new_debate_id, now_rfc3339};
use crate::decision;
use crate::engine::{self, Context, EngineError, EngineSettings, Replay, Seating};
use crate::llm::{CapabilityCache, HttpSetupError, Provider, RetryPolicy};
use crate::protocol::{self, Common, Ending, Outcome};
use crate::providers::{self, ProviderError, ProviderSpec};
use crate::store::{LEASE_RENEWAL, Store, StoreError, StoredSynthesis};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

pub use crate::engine::Wiring;

/// The longest question moot takes, in characters: every request carries it, so a pasted file
/// would be paid for on every turn.
pub const MAX_QUESTION_CHARS: usize = 4000;

/// Every setting a debate runs with, stored with it so `resume` runs the same debate: what
/// every protocol shares, and the protocol's own settings as it snapshotted them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DebateSettings {
    /// The protocol's name (debates stored before protocols were named are moderated).
    #[serde(default = "moderated")]
    pub protocol: String,
    /// The protocol's own settings (`Protocol::settings`).
    #[serde(default)]
    pub protocol_settings: serde_json::Value,
    pub max_rounds: u32,
    pub perspectives: Option<u32>,
    pub default_perspectives: Option<u32>,
    pub named_perspectives: Vec<String>,
    pub custom_perspectives: Vec<PerspectiveConfig>,
    pub token_budget_per_round: TokenBudget,
    pub round_timeout_seconds: u64,
    pub checkpoint_timeout_seconds: u64,
    pub total_timeout_seconds: u64,
    pub checkpoints: bool,
    pub write_decision: bool,
    /// Absolute, resolved when the debate started.
    pub decisions_dir: PathBuf,
    pub follow_up: bool,
    pub sequential: bool,
    pub provider: ProviderSpec,
    pub perspective_providers: BTreeMap<String, ProviderSpec>,
    pub retry: RetryConfig,
    /// `--vote`: every seat ranks the positions on the table at the end, counted this way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vote: Option<crate::vote::Method>,
    /// Approval gates, as `[gates]` set them when the debate started.
    #[serde(default)]
    pub gates: crate::config::GatesConfig,
    /// Seat weights for a weighted vote, by perspective or role name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub vote_weights: BTreeMap<String, f64>,
    /// Keep request and reply bodies in the audit trail (false: their hashes only).
    #[serde(default = "yes")]
    pub audit: bool,
    /// Lessons: whether this debate is given and writes them, and those it was given.
    #[serde(default)]
    pub lessons: LessonSettings,
    /// `[limits] reply_bytes`: the most bytes of one reply (None: from `max_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_bytes: Option<usize>,
}

/// A debate's part in the lessons across debates.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LessonSettings {
    /// Give this debate relevant lessons and write its own at the end (off for debates stored
    /// before lessons existed).
    pub enabled: bool,
    pub capacity: usize,
    pub per_debate: usize,
    #[serde(default)]
    pub embedding_model: Option<String>,
    #[serde(default)]
    pub similarity: f64,
    /// The lessons it was given when it started (kept, so a resume gives the same ones).
    #[serde(default)]
    pub given: Vec<crate::debate::Lesson>,
    /// How they were matched: "embeddings (MODEL)" or "full text".
    #[serde(default)]
    pub matched_by: String,
    /// Whether a debate on the embedded demonstration model writes lessons.
    #[serde(default)]
    pub from_demonstration_model: bool,
}

fn moderated() -> String {
    "moderated".into()
}

fn yes() -> bool {
    true
}

impl DebateSettings {
    /// Settings from config, before command-line overrides (the protocol named in config, or
    /// moderated, with its settings from config alone).
    pub fn from_config(
        config: &Config,
        provider: ProviderSpec,
    ) -> Result<DebateSettings, SessionError> {
        let cwd = std::env::current_dir().map_err(|e| {
            SessionError::Environment(format!("cannot read the current directory: {e}"))
        })?;
        let mut perspective_providers = BTreeMap::new();
        for (perspective, profile) in &config.perspective_providers {
            perspective_providers
                .insert(perspective.clone(), providers::named_spec(profile, config)?);
        }
        let protocol_name = config.protocol.clone().unwrap_or_else(moderated);
        let protocol = protocol::named(&protocol_name).map_err(SessionError::Protocol)?;
        let protocol_settings = protocol
            .settings(&protocol::SettingsInput {
                flags: &BTreeMap::new(),
                table: config.protocol_tables.get(protocol.name()),
                config_path: config.source.as_deref(),
                cwd: &cwd,
                max_rounds: None,
                question: None,
                perspectives: &[],
                resolve_provider: &|profile, model| {
                    resolve_provider(config, &provider, profile, model)
                },
            })
            .map_err(SessionError::Protocol)?;
        let vote = match &config.vote {
            Some(name) => Some(crate::vote::Method::parse(name).map_err(|message| {
                SessionError::Protocol(match &config.source {
                    Some(path) => {
                        format!("{}: vote: {message}", crate::config::locate(path, "vote"))
                    }
                    None => message,
                })
            })?),
            None => None,
        };
        Ok(DebateSettings {
            vote,
            gates: config.gates.clone(),
            vote_weights: config.vote_weights.clone(),
            audit: config.audit.unwrap_or(true),
            reply_bytes: config.limits.reply_bytes,
            lessons: LessonSettings {
                enabled: config.lessons.enabled,
                capacity: config.lessons.capacity,
                per_debate: config.lessons.per_debate,
                embedding_model: config.lessons.embedding_model.clone(),
                similarity: config.lessons.similarity,
                given: Vec::new(),
                matched_by: String::new(),
                from_demonstration_model: config.lessons.from_demonstration_model,
            },
            protocol: protocol_name,
            protocol_settings,
            max_rounds: config.debate.max_rounds,
            perspectives: None,
            default_perspectives: config.debate.default_perspectives,
            named_perspectives: Vec::new(),
            custom_perspectives: config.debate.custom_perspectives.clone(),
            token_budget_per_round: config.debate.token_budget_per_round,
            round_timeout_seconds: config.debate.round_timeout_seconds,
            checkpoint_timeout_seconds: config.debate.checkpoint_timeout_seconds,
            total_timeout_seconds: config.debate.total_timeout_seconds,
            checkpoints: config.debate.checkpoints,
            write_decision: config.debate.write_decision,
            decisions_dir: cwd.join(&config.debate.decisions_dir),
            follow_up: false,
            sequential: false,
            provider,
            perspective_providers,
            retry: config.retry.clone(),
        })
    }

    fn engine_settings(&self) -> EngineSettings {
        EngineSettings {
            sequential: self.sequential,
            retry: RetryPolicy {
                max_attempts: self.retry.max_attempts.max(1),
                base_delay: Duration::from_millis(self.retry.base_delay_ms),
                max_delay: Duration::from_millis(self.retry.max_delay_ms),
            },
            checkpoints: self.checkpoints,
            checkpoint_timeout: engine::wait(self.checkpoint_timeout_seconds),
            temperature: self.provider.temperature,
            audit: self.audit,
            lessons: crate::lessons::preamble(&self.lessons.given),
            lessons_withheld: protocol::find(&self.protocol)
                .map_or(|_| false, |p| p.withholds_lessons()),
            reply_bytes: self.reply_bytes,
        }
    }
}

/// What a resume may change about a stored debate.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResumeChanges {
    /// Another provider (the stored one's server is gone, say).
    pub provider: Option<ProviderSpec>,
    /// Checkpoints on or off from here on.
    pub checkpoints: Option<bool>,
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
    Http(#[from] HttpSetupError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Environment(String),
    /// An unknown protocol, or settings a protocol refuses.
    #[error("{0}")]
    Protocol(String),
    #[error("interrupted before the debate started; nothing was stored")]
    Interrupted,
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
            | SessionError::Provider(_) => true,
            SessionError::Store(error) => matches!(
                error,
                StoreError::NotFound(_) | StoreError::Ambiguous { .. } | StoreError::InUse { .. }
            ),
            _ => false,
        }
    }
}

/// How a protocol wants its debates shown; the moderated look for a name no longer
/// registered.
pub fn presentation(protocol: &str) -> crate::debate::Presentation {
    protocol::find(protocol)
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
    let providers = providers_for(&store, &settings)?;
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
    drive(
        store,
        debate,
        settings,
        providers,
        wiring,
        interrupt.as_mut(),
        false,
    )
    .await
}

/// Picks up a stored debate where it stopped: recorded turns are served from the journal.
pub async fn resume(
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
    let mut settings = stored_settings(&debate)?;
    let changed = changes.provider.is_some() || changes.checkpoints.is_some();
    if let Some(provider) = changes.provider {
        settings.provider = provider;
    }
    if let Some(checkpoints) = changes.checkpoints {
        settings.checkpoints = checkpoints;
    }
    let providers = providers_for(&store, &settings)?;
    // Taken before anything is written, so two resumes of one debate cannot both run it.
    let _lease = store.acquire_lease(&debate.id)?;
    if changed {
        let snapshot =
            serde_json::to_value(&settings).map_err(|e| SessionError::StoredSettings {
                id: debate.id.clone(),
                detail: e.to_string(),
            })?;
        store.set_config(&debate.id, &snapshot)?;
    }
    drive(store, debate, settings, providers, wiring, interrupt, true).await
}

/// The settings a debate was stored with.
fn stored_settings(debate: &Debate) -> Result<DebateSettings, SessionError> {
    serde_json::from_value(debate.config.clone()).map_err(|e| SessionError::StoredSettings {
        id: debate.id.clone(),
        detail: e.to_string(),
    })
}

/// The protocol a stored debate names (one no longer registered is a stored-settings error).
fn stored_protocol(id: &str, name: &str) -> Result<&'static dyn protocol::Protocol, SessionError> {
    protocol::named(name).map_err(|detail| SessionError::StoredSettings {
        id: id.to_string(),
        detail,
    })
}

/// The providers of one debate and the capability cache they share.
struct Providers {
    seating: Seating,
    per_perspective: HashMap<String, Arc<dyn Provider>>,
    capabilities: Arc<CapabilityCache>,
}

fn providers_for(store: &Store, settings: &DebateSettings) -> Result<Providers, SessionError> {
    let known = store.load_capabilities().unwrap_or_default();
    let capabilities = Arc::new(CapabilityCache::new(known));
    let client = crate::llm::http_client()?;
    let default = providers::build(&settings.provider, &client, &capabilities, &settings.retry)?;
    let mut per_perspective = HashMap::new();
    for (perspective, spec) in &settings.perspective_providers {
        per_perspective.insert(
            perspective.clone(),
            providers::build(spec, &client, &capabilities, &settings.retry)?,
        );
    }
    Ok(Providers {
        seating: Seating {
            default,
            per_seat: HashMap::new(),
        },
        per_perspective,
        capabilities,
    })
}

/// Renews the debate's lease until dropped (with the debate it runs beside). Each renewal
/// runs on a blocking thread: while another process holds the journal it waits out SQLite's
/// busy timeout there, not on the task that drives the debate.
async fn keep_lease(store: &Store, id: &str) {
    let mut renewal = tokio::time::interval(LEASE_RENEWAL);
    renewal.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        renewal.tick().await;
        let (store, id) = (store.clone(), id.to_string());
        // A missed renewal only risks the debate reading as interrupted for a moment.
        let _ = tokio::task::spawn_blocking(move || store.renew_lease(&id)).await;
    }
}

async fn drive(
    store: Store,
    debate: Debate,
    settings: DebateSettings,
    providers: Providers,
    wiring: Wiring,
    interrupt: impl Future<Output = ()>,
    resumed: bool,
) -> Result<Finish, SessionError> {
    let outcome = run(
        &store, &debate, &settings, providers, wiring, interrupt, resumed,
    )
    .await;
    let _ = store.release_lease(&debate.id);
    outcome
}

async fn run(
    store: &Store,
    debate: &Debate,
    settings: &DebateSettings,
    providers: Providers,
    wiring: Wiring,
    interrupt: impl Future<Output = ()>,
    resumed: bool,
) -> Result<Finish, SessionError> {
    let Providers {
        seating,
        per_perspective: perspective_providers,
        capabilities,
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
    let protocol = stored_protocol(debate.id.as_str(), &settings.protocol)?;
    store.set_status(&debate.id, DebateStatus::Running, None)?;
    let ctx = Context::new(
        debate.id.clone(),
        store.clone(),
        wiring,
        seating,
        settings.engine_settings(),
        replay,
    );
    ctx.announce(Event::DebateCreated {
        id: debate.id.clone(),
        question: debate.question.clone(),
        protocol: debate.protocol.clone(),
        resumed,
        presentation: presentation(&debate.protocol),
    });
    for warning in providers::take_warnings() {
        ctx.announce(Event::Notice { message: warning });
    }
    if !settings.lessons.given.is_empty() {
        ctx.emit(Event::Lessons {
            lessons: settings.lessons.given.clone(),
        });
    }
    let client = crate::llm::http_client()?;
    let retry = settings.retry.clone();
    let factory_capabilities = capabilities.clone();
    let common = Common {
        providers: Arc::new(move |spec| {
            let spec: ProviderSpec = serde_json::from_value(spec.clone())
                .map_err(|e| format!("a stored provider cannot be read: {e}"))?;
            providers::build(&spec, &client, &factory_capabilities, &retry)
                .map_err(|e| e.to_string())
        }),
        perspective_providers,
        ..common_for(debate, settings)
    };
    let mut interrupt = std::pin::pin!(interrupt);
    let outcome = tokio::select! {
        outcome = protocol.run(&ctx, &common, &settings.protocol_settings) => Some(outcome),
        _ = interrupt.as_mut() => None,
        _ = keep_lease(store, &debate.id) => None,
    };
    // Losing learned shapes only costs a degraded request next time.
    let _ = store.save_capabilities(&capabilities.learned());
    // Every event and audit entry of the run is written before how it ended: the record's
    // receipt covers them all.
    let outcome = match (outcome, ctx.flush().await) {
        (Some(Ok(_)), Err(error)) => Some(Err(error)),
        (outcome, _) => outcome,
    };
    let completed = |status: DebateStatus| {
        ctx.announce(Event::DebateCompleted {
            id: debate.id.clone(),
            status,
        });
    };
    let finish = match outcome {
        None => {
            store.set_status(&debate.id, DebateStatus::Paused, None)?;
            ctx.announce(Event::Notice {
                message: format!(
                    "interrupted; the debate is paused: moot resume {}",
                    debate.id
                ),
            });
            completed(DebateStatus::Paused);
            Ok(Finish {
                interrupted: true,
                ..Finish::new(&debate.id, DebateStatus::Paused)
            })
        }
        Some(Ok(Ending::Paused)) => {
            store.set_status(&debate.id, DebateStatus::Paused, None)?;
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
            completed(DebateStatus::Paused);
            Ok(Finish::new(&debate.id, DebateStatus::Paused))
        }
        Some(Ok(Ending::Cancelled)) => {
            store.set_status(&debate.id, DebateStatus::Cancelled, None)?;
            completed(DebateStatus::Cancelled);
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
                    () = learn(&ctx, store, debate, settings, &outcome) => {}
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
            store.set_status(&debate.id, DebateStatus::Completed, None)?;
            completed(DebateStatus::Completed);
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
            // When the journal itself is what failed, this write may fail too: say so rather
            // than claim the debate is stored as failed.
            let recorded = store
                .set_status(&debate.id, DebateStatus::Failed, Some(&message))
                .is_ok();
            ctx.announce(Event::Error {
                message: message.clone(),
            });
            completed(DebateStatus::Failed);
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

/// The outcome with the lessons its debate was given cited in its record.
fn cite_lessons(mut outcome: Outcome, lessons: &LessonSettings) -> Outcome {
    outcome.markdown.push_str(&crate::lessons::record_section(
        &lessons.given,
        &lessons.matched_by,
    ));
    outcome
}

/// The lessons a new debate is given: by embeddings of the question when the provider offers
/// them and stored lessons were embedded by the same model, else by full text.
async fn relevant_lessons(
    store: &Store,
    question: &str,
    lessons: &LessonSettings,
    provider: &Arc<dyn Provider>,
    deadline: Duration,
) -> Result<(Vec<crate::debate::Lesson>, String), SessionError> {
    // A server that never answers the embedding leaves full text to decide.
    let embedded = tokio::time::timeout(
        deadline,
        embed_question(provider.as_ref(), question, lessons),
    )
    .await
    .ok()
    .flatten();
    if let Some((name, vector)) = embedded
        && let Some(found) = crate::lessons::nearest(
            store,
            &vector,
            &name,
            lessons.similarity,
            lessons.per_debate,
        )?
    {
        return Ok((found, format!("embeddings ({name})")));
    }
    Ok((
        crate::lessons::relevant(store, question, lessons.per_debate)?,
        "full text".into(),
    ))
}

/// The reflection step: the moderator writes the debate's lessons, stored for later debates.
/// It is a courtesy to the next debate, so a failure is told, never fatal to this one.
async fn learn(
    ctx: &Context,
    store: &Store,
    debate: &Debate,
    settings: &DebateSettings,
    outcome: &Outcome,
) {
    if let Some(reason) = unlearnable(ctx, store, debate, settings, outcome) {
        ctx.announce(Event::Notice {
            message: format!("no lessons were written: {reason}"),
        });
        return;
    }
    let focus = protocol::find(&debate.protocol).and_then(|p| p.lesson_focus());
    let drafts =
        match protocol::reflect::reflect(ctx, &debate.question, &outcome.markdown, focus).await {
            Ok(drafts) => drafts,
            Err(error) => {
                ctx.announce(Event::Notice {
                    message: format!("no lessons were written: {error}"),
                });
                return;
            }
        };
    // A resume that concludes again must not store the same lessons twice.
    let written = store
        .lessons()
        .is_ok_and(|all| all.iter().any(|l| l.source == debate.id));
    if drafts.is_empty() || written {
        return;
    }
    // A lesson reaches later debates' prompts: one that addresses the model instead of the
    // problem is refused, and the refusal is journaled with its reason.
    let mut kept = Vec::new();
    for draft in drafts {
        let refused =
            crate::lessons::refusal(&draft.text).or_else(|| crate::lessons::refusal(&draft.advice));
        match refused {
            None => kept.push(draft),
            Some(reason) => ctx.announce(Event::LessonRefused {
                lesson: crate::sanitize::clean(&format!(
                    "{} Next time: {}",
                    draft.text, draft.advice
                )),
                reason,
            }),
        }
    }
    let drafts = kept;
    if drafts.is_empty() {
        return;
    }
    match store.add_lessons(
        &debate.id,
        &debate.question,
        &drafts,
        settings.lessons.capacity,
    ) {
        Ok(learned) => {
            embed_lessons(ctx, store, &debate.question, &settings.lessons, &learned).await;
            ctx.announce(Event::Notice {
                message: format!(
                    "{} lesson{} written for later debates ({}); `moot lessons list` shows them",
                    learned.len(),
                    if learned.len() == 1 { "" } else { "s" },
                    learned
                        .iter()
                        .map(|l| format!("L{}", l.id))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })
        }
        Err(error) => ctx.announce(Event::Notice {
            message: format!("the lessons could not be stored: {error}"),
        }),
    }
}

/// Why a finished debate should teach later ones nothing, if it should not: it did not end
/// well (a conclusion set aside as unsupported or overruled by the person, a synthesis the
/// person rejected, an outcome its protocol calls unsettled), or it ran on the demonstration
/// model, whose lessons are noise, without the person asking for them.
fn unlearnable(
    ctx: &Context,
    store: &Store,
    debate: &Debate,
    settings: &DebateSettings,
    outcome: &Outcome,
) -> Option<String> {
    let provider = ctx.seat_provider(crate::debate::MODERATOR);
    if provider.caveat().is_some() && !settings.lessons.from_demonstration_model {
        return Some(format!(
            "{} is a demonstration model, whose lessons are noise (set [lessons] \
             from_demonstration_model = true to keep them anyway)",
            provider.model()
        ));
    }
    let events = store.events(&debate.id).unwrap_or_default();
    if events.iter().any(|event| {
        matches!(
            event,
            Event::Flag {
                kind: crate::debate::FlagKind::Unsupported,
                ..
            }
        )
    }) {
        return Some("a conclusion was set aside as unsupported by the moves".into());
    }
    let answers = store.checkpoints(&debate.id).unwrap_or_default();
    use crate::debate::{Answer, AskKind};
    if answers.iter().any(|a| {
        (a.kind == AskKind::Conclusion && a.control.answer() != Answer::Accept)
            || (matches!(a.kind, AskKind::Approval | AskKind::RevisedApproval)
                && a.control.answer() == Answer::Reject)
    }) {
        return Some("the person overruled the conclusion or rejected the synthesis".into());
    }
    protocol::find(&debate.protocol).and_then(|p| p.unsettled(&outcome.data))
}

/// Embeds the source question of new lessons, when the provider offers embeddings, so later
/// debates can match them by meaning. Without embeddings they are matched by full text.
async fn embed_lessons(
    ctx: &Context,
    store: &Store,
    question: &str,
    lessons: &LessonSettings,
    learned: &[crate::debate::Lesson],
) {
    let provider = ctx.seat_provider(crate::debate::MODERATOR);
    if let Some((name, vector)) = embed_question(provider.as_ref(), question, lessons).await {
        for lesson in learned {
            let _ = store.set_lesson_embedding(lesson.id, &name, &vector);
        }
    }
}

/// A question's embedding and the model that made it, when the provider offers embeddings.
async fn embed_question(
    provider: &dyn Provider,
    question: &str,
    lessons: &LessonSettings,
) -> Option<(String, Vec<f32>)> {
    let model = lessons.embedding_model.as_deref();
    let vector = provider
        .embed(&[question.to_string()], model)
        .await
        .ok()??
        .into_iter()
        .next()?;
    Some((model.unwrap_or(provider.model()).to_string(), vector))
}

/// What every protocol is given of a debate's settings; its providers are the caller's to set.
fn common_for(debate: &Debate, settings: &DebateSettings) -> Common {
    Common {
        providers: Arc::new(|_| Err("no provider is set".to_string())),
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

/// The provider for a seat of `config` named by profile (or kind) and model, as the snapshot a
/// protocol stores in its settings; the debate's own provider when neither is given.
pub fn resolve_provider(
    config: &Config,
    default: &ProviderSpec,
    profile: Option<&str>,
    model: Option<&str>,
) -> Result<serde_json::Value, String> {
    let mut spec = match profile {
        Some(name) => providers::named_spec(name, config).map_err(|e| e.to_string())?,
        None => default.clone(),
    };
    if let Some(model) = model {
        spec.model = model.to_string();
    }
    serde_json::to_value(&spec).map_err(|e| e.to_string())
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
    let outcome = &with_receipt(store, &debate.id, outcome)?;
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

/// The outcome with its record's receipt: the journal's chain head over every row written
/// before the record (`decision::Receipt`).
fn with_receipt(store: &Store, id: &str, outcome: &Outcome) -> Result<Outcome, StoreError> {
    let mut outcome = outcome.clone();
    if let Some(head) = store.chain_head(id)? {
        let receipt = decision::Receipt {
            debate: id.to_string(),
            entry: head.entries,
            hash: head.hash,
        };
        outcome.markdown = format!(
            "{}{}",
            decision::without_receipt(&outcome.markdown),
            receipt.section()
        );
    }
    Ok(outcome)
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

/// Why a follow-up issue draft could not be written.
#[derive(Debug, thiserror::Error)]
pub enum FollowUpError {
    #[error("{0} has no synthesis yet, so there is no decision to follow up")]
    NoSynthesis(String),
    #[error("a {0} debate offers no follow-up issue draft")]
    NotOffered(String),
    #[error("the stored synthesis of {id} cannot be read ({detail})")]
    Unreadable { id: String, detail: String },
    #[error("could not write the follow-up issue draft to {dir}: {source}")]
    Write {
        dir: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Writes the "create a workflow from this decision" issue draft for a concluded debate (once:
/// a second call returns the draft already written), next to its decision record.
pub fn write_follow_up(store: &Store, id: &str) -> Result<PathBuf, FollowUpError> {
    let debate = store.debate(id)?;
    let stored = store
        .synthesis(&debate.id)?
        .ok_or_else(|| FollowUpError::NoSynthesis(debate.id.clone()))?;
    if let Some(path) = &stored.follow_up_path {
        return Ok(PathBuf::from(path));
    }
    let unreadable = |detail: String| FollowUpError::Unreadable {
        id: debate.id.clone(),
        detail,
    };
    let protocol = protocol::named(&debate.protocol).map_err(unreadable)?;
    let record = stored.path.as_ref().map(PathBuf::from);
    let draft = protocol
        .follow_up(&stored.data, &debate.question, record.as_deref())
        .ok_or_else(|| FollowUpError::NotOffered(debate.protocol.clone()))?;
    let dir = serde_json::from_value::<DebateSettings>(debate.config.clone())
        .map(|s| s.decisions_dir)
        .or_else(|_| std::env::current_dir().map(|cwd| cwd.join("docs/decisions")))
        .map_err(|e| unreadable(e.to_string()))?;
    let date = debate.created_at.get(..10).unwrap_or("undated").to_string();
    let path =
        decision::write_follow_up(&dir, &date, &debate.question, &draft).map_err(|source| {
            FollowUpError::Write {
                dir: dir.display().to_string(),
                source,
            }
        })?;
    store.set_follow_up(&debate.id, &path.display().to_string())?;
    let _ = store.record_event(
        &debate.id,
        &Event::FollowUp {
            path: path.display().to_string(),
        },
    );
    Ok(path)
}

/// Why a contested result could not be settled.
#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    #[error("{0} has no result yet; only a finished debate can be decided")]
    NoResult(String),
    #[error("{0}")]
    Refused(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A settled result: its record as it now reads, and where that record was written.
pub struct Decided {
    pub markdown: String,
    pub path: Option<String>,
}

/// Settles what a finished debate left to the person (`moot decide ID OPTION`): the protocol
/// takes the choice, the answer is journaled with who gave it, and the record is stored and
/// written again (a new file beside the old one; records are never overwritten).
pub fn decide(store: &Store, id: &str, choice: &str, by: &str) -> Result<Decided, DecideError> {
    let debate = store.debate(id)?;
    let stored = store
        .synthesis(&debate.id)?
        .ok_or_else(|| DecideError::NoResult(debate.id.clone()))?;
    let protocol = protocol::named(&debate.protocol).map_err(DecideError::Refused)?;
    let outcome = protocol
        .decide(&stored.data, choice, by)
        .map_err(DecideError::Refused)?;
    let control = crate::debate::Control::Choose(choice.trim().to_uppercase());
    let round = store
        .checkpoints(&debate.id)?
        .iter()
        .rfind(|c| c.kind == crate::debate::AskKind::Choice)
        .map_or(0, |c| c.round);
    store.record_checkpoint(
        &debate.id,
        round,
        crate::debate::AskKind::Choice,
        &control,
        by,
    )?;
    let outcome = with_receipt(store, &debate.id, &outcome)?;
    let settings: Option<DebateSettings> = serde_json::from_value(debate.config.clone()).ok();
    let mut path = stored.path.clone();
    if let Some(settings) = settings.filter(|s| s.write_decision && stored.path.is_some())
        && let Ok(written) = decision::write_record(
            &settings.decisions_dir,
            &outcome.date,
            &debate.question,
            &outcome.markdown,
        )
    {
        path = Some(written.display().to_string());
    }
    let announced = save_outcome(
        store,
        &debate.id,
        &outcome,
        path.clone(),
        stored.follow_up_path.clone(),
    )?;
    let _ = store.record_event(&debate.id, &announced);
    Ok(Decided {
        markdown: outcome.markdown,
        path,
    })
}

/// A run of a stored debate's protocol over its journal alone (`moot audit --verify`).
#[derive(Debug)]
pub struct Rerun {
    /// How the protocol ended this time: completed, paused, cancelled or failed.
    pub status: DebateStatus,
    /// The closing document it produced, when it concluded.
    pub outcome: Option<Outcome>,
    /// Why it failed, when it did.
    pub error: Option<String>,
    /// Every reply the protocol asked for that the journal does not hold.
    pub asked: Vec<String>,
}

/// Runs the protocol of debate `id` again on a copy of its journal, with no provider: every
/// reply must come from the journal, every answer and gate decision too. Nothing is written
/// but the scratch copy under `scratch` (the record file, the arena directory and the original
/// journal are left alone).
pub async fn rerun(
    store: &Store,
    id: &str,
    scratch: &std::path::Path,
) -> Result<Rerun, SessionError> {
    let debate = store.debate(id)?;
    let mut settings = stored_settings(&debate)?;
    let protocol = stored_protocol(debate.id.as_str(), &settings.protocol)?;
    settings.protocol_settings = protocol.without_side_effects(&settings.protocol_settings);
    let copy = store.copy_debate(&debate.id, &scratch.join("rerun.db"))?;
    let asked: Arc<std::sync::Mutex<Vec<String>>> = Arc::default();
    let turns = copy.turns(&debate.id)?;
    // The model a server named in its replies is what the record quotes.
    let answered_as = turns
        .iter()
        .rev()
        .find(|turn| turn.provider == settings.provider.kind.to_string() && !turn.model.is_empty())
        .map(|turn| turn.model.clone());
    let journal_only: Arc<dyn Provider> = Arc::new(JournalOnly::standing_in_for(
        &settings.provider,
        answered_as,
        &asked,
    ));
    let (events, _seen) = mpsc::unbounded_channel();
    // No one answers: an answer the journal lacks takes its default, and the comparison shows it.
    let (_no_answers, controls) = mpsc::unbounded_channel();
    let ctx = Context::new(
        debate.id.clone(),
        copy.clone(),
        Wiring {
            events,
            controls,
            answerer: "audit --verify".into(),
        },
        Seating {
            default: journal_only.clone(),
            per_seat: HashMap::new(),
        },
        EngineSettings {
            // Time limits would only measure this machine; the journal decides.
            checkpoint_timeout: Duration::from_secs(1),
            ..settings.engine_settings()
        },
        Replay {
            turns,
            answers: copy.checkpoints(&debate.id)?,
            events: copy.events(&debate.id)?,
        },
    );
    let factory_asked = asked.clone();
    let common = Common {
        providers: Arc::new(move |spec| {
            let spec: ProviderSpec = serde_json::from_value(spec.clone())
                .map_err(|e| format!("a stored provider cannot be read: {e}"))?;
            Ok(
                Arc::new(JournalOnly::standing_in_for(&spec, None, &factory_asked))
                    as Arc<dyn Provider>,
            )
        }),
        perspective_providers: settings
            .perspective_providers
            .iter()
            .map(|(name, spec)| {
                let provider: Arc<dyn Provider> =
                    Arc::new(JournalOnly::standing_in_for(spec, None, &asked));
                (name.clone(), provider)
            })
            .collect(),
        ..common_for(&debate, &settings)
    };
    let ending = protocol
        .run(&ctx, &common, &settings.protocol_settings)
        .await
        .map(|ending| match ending {
            Ending::Concluded(outcome) => {
                Ending::Concluded(Box::new(cite_lessons(*outcome, &settings.lessons)))
            }
            other => other,
        });
    let asked = asked.lock().map(|a| a.clone()).unwrap_or_default();
    Ok(match ending {
        Ok(Ending::Concluded(outcome)) => Rerun {
            status: DebateStatus::Completed,
            outcome: Some(*outcome),
            error: None,
            asked,
        },
        Ok(Ending::Paused) => Rerun {
            status: DebateStatus::Paused,
            outcome: None,
            error: None,
            asked,
        },
        Ok(Ending::Cancelled) => Rerun {
            status: DebateStatus::Cancelled,
            outcome: None,
            error: None,
            asked,
        },
        Err(error) => Rerun {
            status: DebateStatus::Failed,
            outcome: None,
            error: Some(error.to_string()),
            asked,
        },
    })
}

/// The provider of a re-run: it stands in for the one that argued (its kind and model, which
/// records quote), has nothing to say, and notes every request it gets.
struct JournalOnly {
    kind: crate::llm::ProviderKind,
    model: String,
    asked: Arc<std::sync::Mutex<Vec<String>>>,
}

impl JournalOnly {
    fn standing_in_for(
        spec: &ProviderSpec,
        answered_as: Option<String>,
        asked: &Arc<std::sync::Mutex<Vec<String>>>,
    ) -> JournalOnly {
        let model = answered_as
            .or_else(|| (!spec.model.is_empty()).then(|| spec.model.clone()))
            .unwrap_or_else(|| "server default".into());
        JournalOnly {
            kind: spec.kind,
            model,
            asked: asked.clone(),
        }
    }
}

impl Provider for JournalOnly {
    fn kind(&self) -> crate::llm::ProviderKind {
        self.kind
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn caveat(&self) -> Option<&'static str> {
        (self.kind == crate::llm::ProviderKind::Local
            && crate::llm::local::models::is_demonstration_model(&self.model))
        .then_some(crate::llm::local::models::DEMONSTRATION_NOTE)
    }

    fn endpoint(&self) -> String {
        "the journal".into()
    }

    fn configure_hint(&self) -> String {
        "a re-run uses no provider".into()
    }

    fn complete<'a>(
        &'a self,
        request: &'a crate::llm::ChatRequest,
        _on_text: crate::llm::TextSink<'a>,
    ) -> futures_util::future::BoxFuture<'a, Result<crate::llm::Completion, crate::llm::LlmError>>
    {
        let label = &request.label;
        let asked = format!("round {} {} {}", label.round, label.phase, label.seat);
        if let Ok(mut list) = self.asked.lock() {
            list.push(asked.clone());
        }
        Box::pin(async move {
            Err(crate::llm::LlmError::Fatal(format!(
                "the journal holds no reply for {asked}"
            )))
        })
    }
}
