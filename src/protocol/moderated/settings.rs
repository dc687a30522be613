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
}

/// The settings from the command line (a mesh when nothing is said).
pub(super) fn build(input: &SettingsInput<'_>) -> Result<ModeratedSettings, SettingsError> {
    let given = input.flags.get("topology").and_then(|v| v.first());
    let topology = Topology::from_flag(given.map(String::as_str))?;
    let planning = Planning::from_flag(
        input
            .flags
            .get("planning")
            .and_then(|v| v.first())
            .map(String::as_str),
    )?;
    if input.flags.contains_key("planning") && topology != Topology::Tree {
        return Err("--planning plans a tree: add --topology tree".into());
    }
    Ok(ModeratedSettings { topology, planning })
}
