//! Settings from config.toml (every Debate Mode setting plus providers), validated with the
//! file, line and column of whatever is wrong.

pub use crate::engine::GatesConfig;
pub use crate::engine::guardrails::TokenBudget;
pub use crate::llm::ProviderKind;
pub use crate::place::{line_column, locate, locate_in_table};
use serde::{Deserialize, Deserializer};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod profile;
pub use profile::ProviderConfig;

/// A user mistake in a config file, already located.
#[derive(Debug, thiserror::Error)]
#[error("{path}:{line}:{column}: {message}")]
pub struct ConfigError {
    pub path: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// Unknown top-level keys are not refused by serde: a table named after a protocol
/// (`[panel]`) is that protocol's to read, and `Config::protocol_tables` checks the rest.
#[derive(Debug, Clone, Deserialize, PartialEq, Default)]
#[serde(default)]
pub struct Config {
    /// The provider profile (a key of `[providers]`) or kind to use when no flag says.
    pub provider: Option<String>,
    /// The protocol to run when no `--protocol` says (`moot protocols`).
    pub protocol: Option<String>,
    /// The voting method of a closing vote (`--vote`): plurality, borda, condorcet, unanimous,
    /// weighted, threshold or auto.
    pub vote: Option<String>,
    /// Approval gates: where a debate stops for the person's approval.
    pub gates: GatesConfig,
    /// A seat's weight in a weighted vote, by its perspective or role name (1 when absent).
    pub vote_weights: BTreeMap<String, f64>,
    /// Keep every request and reply in the audit trail (false keeps their hashes only;
    /// unset is true).
    pub audit: Option<bool>,
    /// Lessons carried from one debate to the next.
    pub lessons: LessonsConfig,
    /// Tables the config file has beyond moot's own: a protocol's settings (`[panel]`).
    #[serde(skip)]
    pub protocol_tables: BTreeMap<String, toml::Value>,
    /// The file this came from, to point at what is wrong in it.
    #[serde(skip)]
    pub source: Option<PathBuf>,
    pub debate: DebateConfig,
    pub providers: BTreeMap<String, ProviderConfig>,
    pub retry: RetryConfig,
    /// Perspective name → provider profile, to seat a perspective on another model.
    pub perspective_providers: BTreeMap<String, String>,
    pub ui: UiConfig,
    /// What moot takes from a server at most.
    pub limits: LimitsConfig,
    /// `moot serve`'s own settings.
    pub serve: ServeConfig,
    /// Where the journal is.
    pub journal: JournalConfig,
}

/// `[journal]`: where debates are journaled.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Default)]
#[serde(deny_unknown_fields, default)]
pub struct JournalConfig {
    /// A PostgreSQL server's `postgres://…` URL, shared with moot on other hosts; unset, the
    /// SQLite file in moot's data dir.
    pub url: Option<String>,
}

/// `[serve]`: how `moot serve` watches the debates it runs.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Default)]
#[serde(deny_unknown_fields, default)]
pub struct ServeConfig {
    /// Seconds without progress, while no person is asked anything, before a debate is
    /// flagged as stalled (default 300).
    pub stall_seconds: Option<u64>,
    /// The server `moot attach` reaches when no `--server` says.
    pub url: Option<String>,
    /// Where the server writes its debates' decision records (relative to the config
    /// file's directory); unset, it writes none (the journal keeps each record).
    pub decisions_dir: Option<PathBuf>,
    /// On a journal replicas share (PostgreSQL): how soon a replica takes over the debates
    /// of one that died, in seconds (default 15).
    pub takeover_seconds: Option<u64>,
}

impl ServeConfig {
    /// `decisions_dir`, made absolute against the directory of `source` (the config file).
    pub fn decisions_dir(&self, source: Option<&std::path::Path>) -> Option<PathBuf> {
        let dir = self.decisions_dir.as_ref()?;
        Some(match source.and_then(std::path::Path::parent) {
            Some(base) if dir.is_relative() => base.join(dir),
            _ => dir.clone(),
        })
    }
}

/// `[limits]`: bounds on what a server may send.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Default)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    /// The most bytes of one reply; past it the stream is abandoned and the turn kept as
    /// `truncated`. Unset: 16 bytes per `max_tokens` token, or 1 MiB without one.
    #[serde(deserialize_with = "reply_bytes")]
    pub reply_bytes: Option<usize>,
}

/// A reply cap a debate can live with: 1 KiB (a short structured reply) to 1 GiB.
fn reply_bytes<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    let value = i128::deserialize(d)?;
    if (1024..=1 << 30).contains(&value) {
        Ok(Some(value as usize))
    } else {
        Err(serde::de::Error::custom(format!(
            "reply_bytes must be between 1024 and 1073741824 (1 GiB), not {value}"
        )))
    }
}

/// `[lessons]`: what debates learn and pass on (design note 004, Reflexion's verbal memory).
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct LessonsConfig {
    /// Write lessons after a debate and give the relevant ones to new debates.
    pub enabled: bool,
    /// How many lessons are kept; the oldest go first.
    pub capacity: usize,
    /// How many lessons a debate is given at most.
    pub per_debate: usize,
    /// The embeddings model, when the provider offers embeddings (the chat model when unset).
    pub embedding_model: Option<String>,
    /// How similar (cosine, 0–1) a lesson's source question must be to a new question to be
    /// given, when embeddings decide.
    pub similarity: f64,
    /// Let debates on the embedded demonstration model write lessons (off: its lessons are
    /// noise).
    pub from_demonstration_model: bool,
}

impl Default for LessonsConfig {
    fn default() -> Self {
        LessonsConfig {
            enabled: true,
            capacity: 500,
            per_debate: 3,
            embedding_model: None,
            similarity: 0.5,
            from_demonstration_model: false,
        }
    }
}

/// The workbench's look.
#[derive(Debug, Clone, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields, default)]
pub struct UiConfig {
    /// dark, light, high-contrast, ansi16, or a path to a theme file.
    pub theme: Option<String>,
    /// ASCII borders and glyphs.
    pub ascii: bool,
    /// Take the mouse (wheel scrolling, click to focus); off leaves the terminal's own selection.
    pub mouse: Option<bool>,
    /// Command name → keys, replacing that command's default keys (see `?` in the workbench).
    pub keys: BTreeMap<String, Vec<String>>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct DebateConfig {
    #[serde(deserialize_with = "rounds")]
    pub max_rounds: u32,
    /// Debaters when the analysis does not decide (2–4); absent means decided per question.
    #[serde(deserialize_with = "optional_seat_count")]
    pub default_perspectives: Option<u32>,
    pub token_budget_per_round: TokenBudget,
    #[serde(deserialize_with = "positive_seconds")]
    pub round_timeout_seconds: u64,
    #[serde(deserialize_with = "positive_seconds")]
    pub checkpoint_timeout_seconds: u64,
    #[serde(deserialize_with = "positive_seconds")]
    pub total_timeout_seconds: u64,
    pub checkpoints: bool,
    /// Where decision records are written, relative to the current directory.
    pub decisions_dir: PathBuf,
    pub write_decision: bool,
    /// Perspectives defined by the user, extending (or replacing by name) the built-ins.
    pub custom_perspectives: Vec<crate::catalog::Perspective>,
}

impl Default for DebateConfig {
    fn default() -> Self {
        DebateConfig {
            max_rounds: 5,
            default_perspectives: None,
            token_budget_per_round: TokenBudget::Limited(2000),
            round_timeout_seconds: 120,
            checkpoint_timeout_seconds: 1800,
            total_timeout_seconds: 1800,
            checkpoints: true,
            decisions_dir: PathBuf::from("docs/decisions"),
            write_decision: true,
            custom_perspectives: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RetryConfig {
    pub max_attempts: u32,
    pub base_delay_ms: u64,
    pub max_delay_ms: u64,
    /// How long a stream may go silent before the attempt counts as timed out.
    #[serde(deserialize_with = "positive_seconds")]
    pub idle_timeout_seconds: u64,
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            max_attempts: 4,
            base_delay_ms: 500,
            max_delay_ms: 30_000,
            idle_timeout_seconds: 120,
        }
    }
}

fn rounds<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u32, D::Error> {
    let value = i64::deserialize(deserializer)?;
    if (1..=20).contains(&value) {
        Ok(value as u32)
    } else {
        Err(serde::de::Error::custom(format!(
            "max_rounds must be between 1 and 20, not {value}"
        )))
    }
}

fn optional_seat_count<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<u32>, D::Error> {
    let value = i64::deserialize(deserializer)?;
    if (2..=4).contains(&value) {
        Ok(Some(value as u32))
    } else {
        Err(serde::de::Error::custom(format!(
            "default_perspectives must be 2, 3 or 4, not {value}"
        )))
    }
}

/// A time limit: whole seconds from one to a year (a longer one would overflow the clock).
fn positive_seconds<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    let value = i128::deserialize(deserializer)?;
    let longest = crate::engine::LONGEST_WAIT_SECONDS;
    if (1..=i128::from(longest)).contains(&value) {
        Ok(value as u64)
    } else {
        Err(serde::de::Error::custom(format!(
            "a timeout must be between 1 second and a year ({longest} s), not {value}"
        )))
    }
}

/// The top-level keys `Config` reads itself.
const OWN_KEYS: &[&str] = &[
    "provider",
    "protocol",
    "debate",
    "providers",
    "retry",
    "perspective_providers",
    "ui",
    "vote",
    "gates",
    "vote_weights",
    "audit",
    "lessons",
    "limits",
    "serve",
    "journal",
];

impl Config {
    /// Parses config text; `path` names the file in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let config: Config = toml::from_str(text).map_err(|e| {
            let (line, column) = e
                .span()
                .map(|span| line_column(text, span.start))
                .unwrap_or((1, 1));
            ConfigError {
                path: path.display().to_string(),
                line,
                column,
                message: e.message().trim().to_string(),
            }
        })?;
        config.check_references(text, path)?;
        let mut config = config;
        config.source = Some(path.to_path_buf());
        if let Ok(table) = toml::from_str::<toml::Table>(text) {
            for (key, value) in table {
                if !OWN_KEYS.contains(&key.as_str()) {
                    config.protocol_tables.insert(key, value);
                }
            }
        }
        Ok(config)
    }

    /// Refuses a top-level key that is neither moot's own nor one of these protocols' tables,
    /// pointing at it.
    pub fn check_protocol_tables(&self, protocols: &[&str]) -> Result<(), ConfigError> {
        let Some(path) = &self.source else {
            return Ok(());
        };
        for key in self.protocol_tables.keys() {
            if !protocols.contains(&key.as_str()) {
                let text = std::fs::read_to_string(path).unwrap_or_default();
                let offset = [format!("[{key}"), format!("{key} ="), format!("{key}=")]
                    .iter()
                    .find_map(|needle| text.find(needle.as_str()))
                    .unwrap_or(0);
                let (line, column) = line_column(&text, offset);
                return Err(ConfigError {
                    path: path.display().to_string(),
                    line,
                    column,
                    message: format!(
                        "unknown key `{key}`: expected one of {}, or a protocol's table ({})",
                        OWN_KEYS.join(", "),
                        protocols.join(", ")
                    ),
                });
            }
        }
        Ok(())
    }

    /// Reads the config file if there is one; a file the user named must exist.
    pub fn load(path: Option<(PathBuf, bool)>) -> Result<(Config, Option<PathBuf>), ConfigError> {
        let Some((path, named)) = path else {
            return Ok((Config::default(), None));
        };
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok((Config::parse(&text, &path)?, Some(path))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !named => {
                Ok((Config::default(), None))
            }
            Err(e) => Err(ConfigError {
                path: path.display().to_string(),
                line: 1,
                column: 1,
                message: format!("cannot read the config file: {e}"),
            }),
        }
    }

    /// Checks names that point elsewhere in the file, locating the offending text.
    fn check_references(&self, text: &str, path: &Path) -> Result<(), ConfigError> {
        let locate = |needle: &str, message: String| {
            let offset = text.find(needle).unwrap_or(0);
            let (line, column) = line_column(text, offset);
            ConfigError {
                path: path.display().to_string(),
                line,
                column,
                message,
            }
        };
        let known = |name: &str| {
            self.providers.contains_key(name)
                || matches!(
                    name,
                    "openai" | "anthropic" | "ollama" | "scripted" | "local"
                )
        };
        if let Some(name) = &self.provider
            && !known(name)
        {
            return Err(locate(
                &format!("\"{name}\""),
                format!(
                    "provider {name:?} is neither a [providers.{name}] table nor one of openai, anthropic, ollama, scripted, local"
                ),
            ));
        }
        for (perspective, profile) in &self.perspective_providers {
            if !known(profile) {
                return Err(locate(
                    &format!("\"{profile}\""),
                    format!(
                        "perspective {perspective:?} names provider {profile:?}, which is not defined under [providers]"
                    ),
                ));
            }
        }
        for (name, profile) in &self.providers {
            if profile.kind == ProviderKind::Scripted && profile.script.is_none() {
                return Err(locate(
                    &format!("[providers.{name}]"),
                    format!(
                        "[providers.{name}] is scripted but has no `script = \"path/to/script.json\"`"
                    ),
                ));
            }
        }
        for perspective in &self.debate.custom_perspectives {
            if perspective.name.trim().is_empty() || perspective.priorities.is_empty() {
                return Err(locate(
                    &format!("\"{}\"", perspective.name),
                    "a custom perspective needs a name and at least one priority".to_string(),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("config.toml"))
    }

    #[test]
    fn every_debate_mode_setting_parses() {
        let config = parse(
            r#"
provider = "local-llm"

[debate]
max_rounds = 3
default_perspectives = 3
token_budget_per_round = "unlimited"
round_timeout_seconds = 60
checkpoint_timeout_seconds = 600
total_timeout_seconds = 900

[[debate.custom_perspectives]]
name = "Compliance First"
priorities = ["audit trails", "data residency"]
trade_offs = "Will accept development slowdown for compliance"
keywords = ["gdpr", "audit"]

[providers.local-llm]
kind = "openai"
base_url = "http://127.0.0.1:8080/v1"
model = "qwen2.5"
"#,
        )
        .unwrap();
        assert_eq!(config.debate.max_rounds, 3);
        assert_eq!(config.debate.default_perspectives, Some(3));
        assert_eq!(config.debate.token_budget_per_round, TokenBudget::Unlimited);
        assert_eq!(
            config.debate.custom_perspectives[0].name,
            "Compliance First"
        );
        assert_eq!(config.providers["local-llm"].kind, ProviderKind::Openai);
        assert_eq!(
            parse("[debate]\ntoken_budget_per_round = 0")
                .unwrap()
                .debate
                .token_budget_per_round,
            TokenBudget::Unlimited
        );
        assert_eq!(
            Config {
                source: None,
                ..parse("").unwrap()
            },
            Config::default()
        );
    }

    #[test]
    fn unknown_keys_are_refused_with_line_and_column() {
        let err = parse("[debate]\nmax_rounds = 3\nmax_round = 4\n").unwrap_err();
        assert_eq!((err.line, err.column), (3, 1), "{err}");
        assert!(err.message.contains("max_round"), "{err}");
        assert!(err.to_string().starts_with("config.toml:3:1: "));
    }

    #[test]
    fn bad_values_point_at_the_value() {
        let err = parse("[debate]\nmax_rounds = 0\n").unwrap_err();
        assert_eq!((err.line, err.column), (2, 14), "{err}");
        assert!(err.message.contains("between 1 and 20"));
        let err = parse("[debate]\ntoken_budget_per_round = \"lots\"\n").unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.message.contains("not a token budget"), "{err}");
        let err = parse("[debate]\nround_timeout_seconds = \"soon\"\n").unwrap_err();
        assert_eq!(err.line, 2);
        let err = parse("[debate]\ntotal_timeout_seconds = 18446744073709551615\n").unwrap_err();
        assert_eq!((err.line, err.column), (2, 25), "{err}");
        assert!(err.message.contains("between 1 second and a year"), "{err}");
        let err = parse("[debate\n").unwrap_err();
        assert_eq!(err.line, 1);
    }

    #[test]
    fn the_reply_cap_is_read_and_a_useless_one_refused() {
        let config = parse("[limits]\nreply_bytes = 65536\n").unwrap();
        assert_eq!(config.limits.reply_bytes, Some(65536));
        assert_eq!(parse("").unwrap().limits.reply_bytes, None);
        let err = parse("[limits]\nreply_bytes = 0\n").unwrap_err();
        assert_eq!((err.line, err.column), (2, 15), "{err}");
        assert!(err.message.contains("between 1024"), "{err}");
        let err = parse("[limits]\nreply_byte = 4096\n").unwrap_err();
        assert_eq!((err.line, err.column), (2, 1), "{err}");
    }

    #[test]
    fn dangling_provider_names_are_refused() {
        let err = parse("provider = \"nowhere\"\n").unwrap_err();
        assert_eq!((err.line, err.column), (1, 12));
        assert!(err.message.contains("nowhere"));
        let err = parse("[providers.demo]\nkind = \"scripted\"\n").unwrap_err();
        assert!(err.message.contains("script"), "{err}");
    }
}
