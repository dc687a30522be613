//! The moderated protocol (the Debate Mode design): analysis, perspective assignment, rounds of
//! parallel arguments and sequential rebuttals, evaluation, checkpoints, guardrails, synthesis.
//! Deterministic given the recorded turns, so a resume replays into the same state.

mod analysis;
mod moderator;
mod prompts;
mod run;
mod synthesis;
mod verdict;

use super::Common;
use super::kit::{self};
use super::tree::Planning;
use crate::debate::Presentation;
use crate::debate::Synthesis;
use crate::engine::Context;
use std::path::Path;

/// The moderated protocol, as registered.
pub struct Moderated;

/// The moderated protocol's own settings: what each seat sees of the others, and how a tree
/// plans. Debates stored before topologies (and `{}`) are a mesh.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ModeratedSettings {
    pub topology: kit::Topology,
    pub planning: Planning,
}

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
    fn flags(&self) -> &'static [super::Flag] {
        &[kit::TOPOLOGY_FLAG, super::tree::PLANNING_FLAG]
    }

    fn settings(
        &self,
        input: &super::SettingsInput<'_>,
    ) -> Result<ModeratedSettings, super::SettingsError> {
        let given = input.flags.get("topology").and_then(|v| v.first());
        let topology = kit::Topology::from_flag(given.map(String::as_str))?;
        let planning = Planning::from_flag(
            input
                .flags
                .get("planning")
                .and_then(|v| v.first())
                .map(String::as_str),
        )?;
        if input.flags.contains_key("planning") && topology != kit::Topology::Tree {
            return Err("--planning plans a tree: add --topology tree".into());
        }
        Ok(ModeratedSettings { topology, planning })
    }

    fn presentation(&self) -> Presentation {
        Presentation::default()
    }

    fn run<'a>(
        &'a self,
        ctx: &'a Context,
        common: &'a Common,
        settings: ModeratedSettings,
    ) -> super::Run<'a> {
        Box::pin(run::run(ctx, common, settings.topology, settings.planning))
    }

    fn follow_up(&self, synthesis: &Synthesis, _: &str, record: Option<&Path>) -> Option<String> {
        Some(crate::decision::follow_up_markdown(synthesis, record))
    }
}
