//! A provider with fallbacks (`[providers.NAME] fallback = ["local", "backup"]`): requests go
//! to the first provider until it has failed as many times in a row as the retry policy lets
//! one turn fail and still try again, then to the next, which serves that turn's last attempt
//! and the debate's later turns. The model a reply names says which served it
//! ("backup-model (fallback backup)"), so the journal and the record do too.

use super::ChatRequest;
use super::provider::{Completion, LlmError, Provider, ProviderKind, TextSink};
use futures_util::future::BoxFuture;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

/// Providers in the order they are tried, with their names.
pub struct Cascade {
    providers: Vec<(String, Arc<dyn Provider>)>,
    /// Failures in a row after which the next provider is used.
    limit: u32,
    /// Which provider serves now, and its failures in a row.
    current: AtomicUsize,
    failures: AtomicU32,
}

impl Cascade {
    /// `providers` first to last; `limit` failures in a row move on (at least 1).
    pub fn new(providers: Vec<(String, Arc<dyn Provider>)>, limit: u32) -> Cascade {
        Cascade {
            providers,
            limit: limit.max(1),
            current: AtomicUsize::new(0),
            failures: AtomicU32::new(0),
        }
    }

    fn primary(&self) -> &Arc<dyn Provider> {
        &self.providers[0].1
    }
}

impl Provider for Cascade {
    fn kind(&self) -> ProviderKind {
        self.primary().kind()
    }

    fn model(&self) -> &str {
        self.primary().model()
    }

    fn endpoint(&self) -> String {
        let names: Vec<&str> = self.providers.iter().map(|(n, _)| n.as_str()).collect();
        format!(
            "{} (then {})",
            self.primary().endpoint(),
            names[1..].join(", ")
        )
    }

    fn configure_hint(&self) -> String {
        self.primary().configure_hint()
    }

    fn caveat(&self) -> Option<&'static str> {
        self.primary().caveat()
    }

    fn answers_one_at_a_time(&self) -> bool {
        self.providers
            .iter()
            .any(|(_, p)| p.answers_one_at_a_time())
    }

    fn embed<'a>(
        &'a self,
        texts: &'a [String],
        model: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<Vec<Vec<f32>>>, LlmError>> {
        self.primary().embed(texts, model)
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_text: TextSink<'a>,
    ) -> BoxFuture<'a, Result<Completion, LlmError>> {
        Box::pin(async move {
            let index = self
                .current
                .load(Ordering::SeqCst)
                .min(self.providers.len() - 1);
            let (name, provider) = &self.providers[index];
            match provider.complete(request, on_text).await {
                Ok(mut completion) => {
                    self.failures.store(0, Ordering::SeqCst);
                    if index > 0 {
                        completion.model = format!("{} (fallback {name})", completion.model);
                    }
                    Ok(completion)
                }
                Err(error) => {
                    let failed = self.failures.fetch_add(1, Ordering::SeqCst) + 1;
                    if failed >= self.limit && index + 1 < self.providers.len() {
                        // Past its retries: the next provider serves from the next attempt.
                        let _ = self.current.compare_exchange(
                            index,
                            index + 1,
                            Ordering::SeqCst,
                            Ordering::SeqCst,
                        );
                        self.failures.store(0, Ordering::SeqCst);
                    }
                    Err(error)
                }
            }
        })
    }
}
