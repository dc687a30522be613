//! Starts, resumes and drives one debate: snapshots its settings, builds its providers, runs
//! the protocol over the journal, and records how it ended (synthesis, decision record, status).

use crate::catalog;
use crate::config::{Config, PerspectiveConfig, RetryConfig, TokenBudget};
use crate::debate::{
    Control, Debate, DebateStatus, Event, Protocol, Synthesis, new_debate_id, now_rfc3339,
};
use crate::decision;
use crate::engine::{Context, EngineError, EngineSettings, Replay, Seating};
use crate::llm::{CapabilityCache, Provider, RetryPolicy};
use crate::protocol::moderated::{self, Ending, ModeratedSettings};
use crate::providers::{self, ProviderSpec};
use crate::store::{Store, StoredSynthesis};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Every setting a debate runs with, stored with it so `resume` runs the same debate.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DebateSettings {
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
}

impl DebateSettings {
    /// Settings from config, before command-line overrides.
    pub fn from_config(config: &Config, provider: ProviderSpec) -> Result<DebateSettings, String> {
        let cwd = std::env::current_dir()
            .map_err(|e| format!("cannot read the current directory: {e}"))?;
        let mut perspective_providers = BTreeMap::new();
        for (perspective, profile) in &config.perspective_providers {
            perspective_providers
                .insert(perspective.clone(), providers::named_spec(profile, config)?);
        }
        Ok(DebateSettings {
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
}

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The user asked for something that cannot be done (exit 2).
    #[error("{0}")]
    Usage(String),
    /// Something failed at run time (exit 1).
    #[error("{0}")]
    Runtime(String),
}

/// The channels a face uses to watch a debate and steer it.
pub struct Wiring {
    pub events: mpsc::UnboundedSender<Event>,
    pub controls: mpsc::UnboundedReceiver<Control>,
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
        return Err(SessionError::Usage(
            "the question is empty: moot \"Should we use Redis or PostgreSQL for caching?\"".into(),
        ));
    }
    let now = now_rfc3339();
    let debate = Debate {
        id: new_debate_id(),
        question: question.to_string(),
        protocol: Protocol::Moderated,
        status: DebateStatus::Running,
        config: serde_json::to_value(&settings)
            .map_err(|e| SessionError::Runtime(e.to_string()))?,
        seats: Vec::new(),
        created_at: now.clone(),
        updated_at: now,
        finished_at: None,
        confidence: None,
        error: None,
    };
    let providers = providers_for(&store, &settings).map_err(SessionError::Usage)?;
    store
        .create_debate(&debate)
        .map_err(|e| SessionError::Runtime(e.to_string()))?;
    drive(store, debate, settings, providers, wiring, interrupt, false).await
}

/// Picks up a stored debate where it stopped: recorded turns are served from the journal.
pub async fn resume(
    store: Store,
    id: &str,
    provider_override: Option<ProviderSpec>,
    wiring: Wiring,
    interrupt: impl Future<Output = ()>,
) -> Result<Finish, SessionError> {
    let debate = store
        .debate(id)
        .map_err(|e| SessionError::Usage(e.to_string()))?;
    if !debate.status.is_resumable() {
        return Err(SessionError::Usage(format!(
            "{} is {}; only paused, interrupted or failed debates can be resumed",
            debate.id, debate.status
        )));
    }
    let mut settings: DebateSettings =
        serde_json::from_value(debate.config.clone()).map_err(|e| {
            SessionError::Runtime(format!(
                "the stored settings of {} cannot be read: {e}",
                debate.id
            ))
        })?;
    if let Some(provider) = provider_override {
        settings.provider = provider;
        let snapshot =
            serde_json::to_value(&settings).map_err(|e| SessionError::Runtime(e.to_string()))?;
        store
            .set_config(&debate.id, &snapshot)
            .map_err(|e| SessionError::Runtime(e.to_string()))?;
    }
    let providers = providers_for(&store, &settings).map_err(SessionError::Usage)?;
    drive(store, debate, settings, providers, wiring, interrupt, true).await
}

/// The providers of one debate and the capability cache they share.
struct Providers {
    seating: Seating,
    per_perspective: HashMap<String, Arc<dyn Provider>>,
    capabilities: Arc<CapabilityCache>,
}

fn providers_for(store: &Store, settings: &DebateSettings) -> Result<Providers, String> {
    let known = store.load_capabilities().unwrap_or_default();
    let capabilities = Arc::new(CapabilityCache::new(known));
    let client = providers::http_client()?;
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

async fn drive(
    store: Store,
    debate: Debate,
    settings: DebateSettings,
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
    let runtime = |e: crate::store::StoreError| SessionError::Runtime(e.to_string());
    if resumed && debate.status == DebateStatus::Failed {
        // The failure that ended the debate is retried, not replayed.
        store
            .discard_trailing_failures(&debate.id)
            .map_err(runtime)?;
    }
    let replay = if resumed {
        Replay {
            turns: store.turns(&debate.id).map_err(runtime)?,
            answers: store.checkpoints(&debate.id).map_err(runtime)?,
        }
    } else {
        Replay::default()
    };
    store
        .set_status(&debate.id, DebateStatus::Running, None)
        .map_err(runtime)?;
    let events = wiring.events.clone();
    let _ = events.send(Event::DebateCreated {
        id: debate.id.clone(),
        question: debate.question.clone(),
        protocol: debate.protocol.as_str().to_string(),
        resumed,
    });
    let engine_settings = EngineSettings {
        sequential: settings.sequential,
        retry: RetryPolicy {
            max_attempts: settings.retry.max_attempts.max(1),
            base_delay: Duration::from_millis(settings.retry.base_delay_ms),
            max_delay: Duration::from_millis(settings.retry.max_delay_ms),
        },
        checkpoints: settings.checkpoints,
        checkpoint_timeout: Duration::from_secs(settings.checkpoint_timeout_seconds),
        temperature: settings.provider.temperature,
    };
    let ctx = Context::new(
        debate.id.clone(),
        store.clone(),
        (wiring.events, wiring.controls),
        seating,
        engine_settings,
        replay,
    );
    let protocol_settings = ModeratedSettings {
        question: debate.question.clone(),
        max_rounds: settings.max_rounds,
        perspectives: settings.perspectives,
        default_perspectives: settings.default_perspectives,
        named: settings.named_perspectives.clone(),
        catalog: catalog::catalog(&settings.custom_perspectives),
        token_budget: settings.token_budget_per_round,
        round_timeout: Duration::from_secs(settings.round_timeout_seconds),
        total_timeout: Duration::from_secs(settings.total_timeout_seconds),
        perspective_providers,
    };
    let outcome = tokio::select! {
        outcome = moderated::run(&ctx, &protocol_settings) => Some(outcome),
        _ = interrupt => None,
    };
    // Losing learned shapes only costs a degraded request next time.
    let _ = store.save_capabilities(&capabilities.learned());
    let finish = |status: DebateStatus, interrupted: bool| Finish {
        id: debate.id.clone(),
        status,
        interrupted,
        error: None,
    };
    let completed = |status: DebateStatus| {
        let _ = events.send(Event::DebateCompleted {
            id: debate.id.clone(),
            status: status.as_str().to_string(),
        });
    };
    match outcome {
        None => {
            store
                .set_status(&debate.id, DebateStatus::Paused, None)
                .map_err(runtime)?;
            let _ = events.send(Event::Notice {
                message: format!(
                    "interrupted; the debate is paused: moot resume {}",
                    debate.id
                ),
            });
            completed(DebateStatus::Paused);
            Ok(finish(DebateStatus::Paused, true))
        }
        Some(Ok(Ending::Paused)) => {
            store
                .set_status(&debate.id, DebateStatus::Paused, None)
                .map_err(runtime)?;
            let _ = events.send(Event::Notice {
                message: format!(
                    "nobody answered the checkpoint within {} s; the debate is paused: moot resume {}",
                    settings.checkpoint_timeout_seconds, debate.id
                ),
            });
            completed(DebateStatus::Paused);
            Ok(finish(DebateStatus::Paused, false))
        }
        Some(Ok(Ending::Cancelled)) => {
            store
                .set_status(&debate.id, DebateStatus::Cancelled, None)
                .map_err(runtime)?;
            completed(DebateStatus::Cancelled);
            Ok(finish(DebateStatus::Cancelled, false))
        }
        Some(Ok(Ending::Concluded { synthesis, .. })) => {
            conclude(&store, &debate, &settings, &synthesis, &events).map_err(runtime)?;
            store
                .set_status(&debate.id, DebateStatus::Completed, None)
                .map_err(runtime)?;
            completed(DebateStatus::Completed);
            Ok(finish(DebateStatus::Completed, false))
        }
        Some(Err(error)) => {
            let message = match &error {
                EngineError::Provider(message) => message.clone(),
                EngineError::Store(e) => e.to_string(),
            };
            let _ = store.set_status(&debate.id, DebateStatus::Failed, Some(&message));
            let _ = events.send(Event::Error {
                message: message.clone(),
            });
            completed(DebateStatus::Failed);
            Ok(Finish {
                error: Some(message),
                ..finish(DebateStatus::Failed, false)
            })
        }
    }
}

/// Stores the synthesis, writes the decision record (once) and the follow-up if asked.
fn conclude(
    store: &Store,
    debate: &Debate,
    settings: &DebateSettings,
    synthesis: &Synthesis,
    events: &mpsc::UnboundedSender<Event>,
) -> Result<(), crate::store::StoreError> {
    let markdown = synthesis.to_markdown();
    let previous = store.synthesis(&debate.id)?;
    let mut path = previous.as_ref().and_then(|s| s.path.clone());
    let mut follow_up_path = previous.as_ref().and_then(|s| s.follow_up_path.clone());
    if settings.write_decision && path.is_none() {
        match decision::write_record(&settings.decisions_dir, synthesis, &debate.question) {
            Ok(written) => path = Some(written.display().to_string()),
            Err(e) => {
                let _ = events.send(Event::Notice {
                    message: format!(
                        "could not write the decision record to {}: {e}; it is stored, `moot export {} --format md` prints it",
                        settings.decisions_dir.display(),
                        debate.id
                    ),
                });
            }
        }
    }
    if settings.follow_up && follow_up_path.is_none() {
        let record = path.as_ref().map(PathBuf::from);
        match decision::write_follow_up(
            &settings.decisions_dir,
            synthesis,
            &debate.question,
            record.as_deref(),
        ) {
            Ok(written) => follow_up_path = Some(written.display().to_string()),
            Err(e) => {
                let _ = events.send(Event::Notice {
                    message: format!("could not write the follow-up issue draft: {e}"),
                });
            }
        }
    }
    store.save_synthesis(
        &debate.id,
        &StoredSynthesis {
            markdown: markdown.clone(),
            data: serde_json::to_value(synthesis).unwrap_or_default(),
            confidence: synthesis.confidence.as_str().to_string(),
            path: path.clone(),
            follow_up_path: follow_up_path.clone(),
        },
    )?;
    let _ = events.send(Event::Synthesis {
        markdown,
        confidence: synthesis.confidence.as_str().to_string(),
        path,
    });
    if let Some(path) = follow_up_path {
        let _ = events.send(Event::FollowUp { path });
    }
    Ok(())
}
