//! `[gates]`: where a debate stops for approval and how long a gate waits, as the config
//! sets them and every protocol reads them (design note 004).

use serde::Deserialize;

/// `[gates]`: approval gates (design note 004).
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct GatesConfig {
    pub enabled: bool,
    /// Where: `after_round`, `before_synthesis` (before a protocol's closing document).
    pub points: Vec<String>,
    pub timeout_minutes: u64,
    /// The timeout in seconds, when a gate must not wait whole minutes (overrides
    /// `timeout_minutes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<u64>,
}

impl GatesConfig {
    /// How long a gate waits for a person before the debate pauses.
    pub fn timeout(&self) -> std::time::Duration {
        super::wait(
            self.timeout_seconds
                .unwrap_or(self.timeout_minutes.saturating_mul(60)),
        )
    }
}

impl Default for GatesConfig {
    fn default() -> Self {
        GatesConfig {
            enabled: false,
            points: vec!["after_round".into(), "before_synthesis".into()],
            timeout_minutes: 30,
            timeout_seconds: None,
        }
    }
}
