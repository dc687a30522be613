//! The moderated protocol (the Debate Mode design): analysis, perspective assignment, rounds of
//! parallel arguments and sequential rebuttals, evaluation, checkpoints, guardrails, synthesis.
//! Deterministic given the recorded turns, so a resume replays into the same state.

mod analysis;
mod moderation;
mod prompts;
mod replies;
mod result;
mod run;
mod settings;
mod verdict;

/// A debater's prompt as a round builds it, for the embedded model's bench (`benches/local.rs`),
/// which times a round on the protocol's own prompts.
#[doc(hidden)]
pub use prompts::{DebaterInput, debater_prompt};

use super::Common;
use super::kit::{self};
use crate::debate::Presentation;
use crate::debate::Synthesis;
use crate::engine::Context;
use settings::ModeratedSettings;
use std::path::Path;

/// The moderated protocol, as registered.
pub struct Moderated;

impl super::TypedProtocol for Moderated {
    type Settings = ModeratedSettings;
    type Result = Synthesis;

    fn name(&self) -> &'static str {
        "moderated"
    }

    fn description(&self) -> &'static str {
        "a moderator seats 2–4 perspectives that argue in rounds, then writes a synthesis \
         (Debate Mode)"
    }

    /// Everything it needs is common to every protocol (perspectives, rounds, budgets).
    fn resolution(&self, result: &Self::Result) -> crate::debate::Resolution {
        result::resolution(result)
    }

    /// 2: the record lists the person's guidance (issue 69, U5); a version-1 record reads as
    /// written.
    const RESULT_VERSION: u32 = 2;

    fn flags(&self) -> &'static [super::Flag] {
        &[
            kit::TOPOLOGY_FLAG,
            super::tree::PLANNING_FLAG,
            kit::BLIND_FIRST_FLAG,
        ]
    }

    fn settings(
        &self,
        input: &super::SettingsInput<'_>,
    ) -> Result<ModeratedSettings, super::SettingsError> {
        settings::build(input)
    }

    fn presentation(&self) -> Presentation {
        Presentation::default()
    }

    fn run<'a>(
        &'a self,
        ctx: &'a Context,
        common: &'a Common,
        settings: ModeratedSettings,
    ) -> super::Run<'a, Self::Result> {
        Box::pin(run::run(ctx, common, settings))
    }

    fn follow_up(&self, synthesis: &Synthesis, _: &str, record: Option<&Path>) -> Option<String> {
        Some(result::follow_up_markdown(synthesis, record))
    }
}
