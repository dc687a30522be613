//! The audit's re-run: a debate run again from its journal alone (`JournalOnly` answers every
//! request from the recorded turns), to check it ends as recorded.

use super::lessons::cite_lessons;
use super::{SessionError, Wiring, common_for, readable, stored_protocol, stored_settings};
use crate::debate::DebateStatus;
use crate::engine::{Context, EngineSettings, Replay, Seating};
use crate::llm::Provider;
use crate::protocol::{Common, Ending, Outcome, Registry};
use crate::providers::ProviderSpec;
use crate::store::Store;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

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

impl Rerun {
    /// How a re-run ended, with what it asked for that the journal did not hold.
    fn ended(ending: Result<Ending, crate::engine::EngineError>, asked: Vec<String>) -> Rerun {
        match ending {
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
        }
    }
}

/// Runs the protocol of debate `id` again on a copy of its journal, with no provider: every
/// reply must come from the journal, every answer and gate decision too. Nothing is written
/// but the scratch copy under `scratch` (the record file, the arena directory and the original
/// journal are left alone).
pub async fn rerun(
    registry: &Registry,
    store: &Store,
    id: &str,
    scratch: &std::path::Path,
) -> Result<Rerun, SessionError> {
    let debate = store.debate(id)?;
    let mut settings = stored_settings(&debate)?;
    let protocol = stored_protocol(registry, debate.id.as_str(), &settings.protocol)?;
    readable(&debate.id, protocol, &settings)?;
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
        Seating::all(journal_only.clone()),
        EngineSettings {
            // Time limits would only measure this machine; the journal decides.
            checkpoint_timeout: Duration::from_secs(1),
            ..settings.engine_settings(protocol)
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
            let spec: ProviderSpec = serde_json::from_value(spec.clone())?;
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
    Ok(Rerun::ended(ending, asked))
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
            && crate::llm::models::is_demonstration_model(&self.model))
        .then_some(crate::llm::models::DEMONSTRATION_NOTE)
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
