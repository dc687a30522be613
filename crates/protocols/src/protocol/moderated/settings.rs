//! The moderated protocol's own settings: the topology its seats argue in and how a tree
//! plans, from `--topology` and `--planning`.

use super::super::kit::Topology;
use super::super::tree::Planning;
use super::super::{SettingsError, SettingsInput};

/// The moderated protocol's own settings: what each seat sees of the others, and how a tree
/// plans. Debates stored before topologies (and `{}`) are a mesh.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ModeratedSettings {
    pub topology: Topology,
    pub planning: Planning,
    /// Why `--planning auto` (the default) chose what it did; none when it was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planning_reason: Option<String>,
    /// A tree's teams are grouped by role affinity and led, phase by phase, by the role that
    /// fits; debates stored before it kept seat order and the first seat.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub by_roles: bool,
    /// `--blind-first`: round 1 is the seats' arguments alone, each written before any seat
    /// has read another's; its rebuttals are not asked.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub blind_first: bool,
}

/// The settings from the command line (a mesh when nothing is said).
pub(super) fn build(input: &SettingsInput<'_>) -> Result<ModeratedSettings, SettingsError> {
    let given = input.flags.get("topology").and_then(|v| v.first());
    let topology = Topology::from_flag(given.map(String::as_str))?;
    let (planning, planning_reason) = Planning::choose(
        input
            .flags
            .get("planning")
            .and_then(|v| v.first())
            .map(String::as_str),
        input.question,
    )?;
    if input.flags.contains_key("planning") && topology != Topology::Tree {
        return Err("--planning plans a tree: add --topology tree".into());
    }
    let tree = topology == Topology::Tree;
    Ok(ModeratedSettings {
        topology,
        planning,
        planning_reason: planning_reason.filter(|_| tree),
        by_roles: tree,
        blind_first: input.flags.contains_key("blind-first"),
    })
}
