//! A provider profile, `[providers.NAME]`: which provider, how to reach it, and for the
//! embedded model how it runs, all in one flat table that is read key by key so that every
//! error keeps its line and column.

use crate::llm::ProviderKind;
use crate::llm::embedded::LocalSettings;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    pub base_url: Option<String>,
    pub model: Option<String>,
    /// The environment variable holding the key (keys never belong in the file).
    pub api_key_env: Option<String>,
    /// A replay script, for `kind = "scripted"`.
    pub script: Option<PathBuf>,
    pub temperature: Option<f32>,
    /// Profiles (or kinds) to fall back on, in order, when this one keeps failing past its
    /// retries.
    pub fallback: Vec<String>,
    /// How the embedded model runs, for a `kind = "local"` profile: its keys
    /// (`LocalSettings::CONFIG_KEYS`) sit in the profile's table beside the ones above.
    pub local: LocalSettings,
}

/// A profile's own keys, beside `LocalSettings::CONFIG_KEYS`.
const PROFILE_KEYS: &[&str] = &[
    "kind",
    "base_url",
    "model",
    "api_key_env",
    "script",
    "temperature",
    "fallback",
];

impl<'de> Deserialize<'de> for ProviderConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ProfileTable)
    }
}

struct ProfileTable;

impl<'de> Visitor<'de> for ProfileTable {
    type Value = ProviderConfig;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a provider profile's table")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut table: A) -> Result<ProviderConfig, A::Error> {
        let mut kind = None;
        let (mut base_url, mut model, mut api_key_env, mut script, mut temperature) =
            (None, None, None, None, None);
        let mut fallback = Vec::new();
        let mut local = LocalSettings::default();
        while let Some(key) = table.next_key_seed(ProfileKey)? {
            match key.as_str() {
                "kind" => kind = Some(table.next_value()?),
                "base_url" => base_url = table.next_value()?,
                "model" => model = table.next_value()?,
                "api_key_env" => api_key_env = table.next_value()?,
                "script" => script = table.next_value()?,
                "temperature" => temperature = table.next_value()?,
                "fallback" => fallback = table.next_value()?,
                other => {
                    if !local.read_config_key(other, &mut table)? {
                        return Err(de::Error::custom(format!("unknown field `{other}`")));
                    }
                }
            }
        }
        Ok(ProviderConfig {
            kind: kind.ok_or_else(|| de::Error::missing_field("kind"))?,
            base_url,
            model,
            api_key_env,
            script,
            temperature,
            fallback,
            local,
        })
    }
}

/// A key of a profile's table, refused while it is read (so the error points at the key)
/// unless the profile or the embedded model's settings take it.
struct ProfileKey;

impl<'de> DeserializeSeed<'de> for ProfileKey {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
        let key = String::deserialize(deserializer)?;
        if PROFILE_KEYS.contains(&key.as_str())
            || LocalSettings::CONFIG_KEYS.contains(&key.as_str())
        {
            return Ok(key);
        }
        let listed = |keys: &[&str]| {
            keys.iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        Err(de::Error::custom(format!(
            "unknown field `{key}`, expected one of {}; for kind = \"local\" also {}",
            listed(PROFILE_KEYS),
            listed(LocalSettings::CONFIG_KEYS)
        )))
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{Config, ConfigError};
    use std::path::Path;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("config.toml"))
    }

    /// Every key of the embedded model's settings is read from the profile's own table.
    #[test]
    fn a_local_profile_sets_every_local_setting_from_its_table() {
        let keys: String = crate::llm::embedded::LocalSettings::CONFIG_KEYS
            .iter()
            .map(|key| match *key {
                "chat_template" => format!("{key} = \"chatml\"\n"),
                "top_p" => format!("{key} = 0.9\n"),
                "repeat_penalty" => format!("{key} = 1.2\n"),
                _ => format!("{key} = 7\n"),
            })
            .collect();
        let config = parse(&format!(
            "[providers.mine]\nkind = \"local\"\nmodel = \"qwen\"\n{keys}"
        ))
        .unwrap();
        let profile = &config.providers["mine"];
        assert_eq!(profile.model.as_deref(), Some("qwen"));
        let stored = serde_json::to_value(&profile.local).unwrap();
        for key in crate::llm::embedded::LocalSettings::CONFIG_KEYS {
            assert!(!stored[key].is_null(), "{key} was not read: {stored}");
        }
        assert_eq!(profile.local.top_p, Some(0.9));
        assert_eq!(profile.local.chat_template.as_deref(), Some("chatml"));
    }

    /// A misspelt key is refused at its own line and column, naming the keys there are;
    /// a value of the wrong type is refused where the value stands.
    #[test]
    fn a_profile_s_errors_point_at_the_key_or_value() {
        let error = parse("[providers.mine]\nkind = \"local\"\n  treads = 4\n").unwrap_err();
        assert_eq!((error.line, error.column), (3, 3), "{error}");
        assert!(error.message.contains("unknown field `treads`"), "{error}");
        assert!(error.message.contains("`threads`"), "{error}");
        assert!(error.message.contains("`api_key_env`"), "{error}");
        let error = parse("[providers.mine]\nkind = \"local\"\ntop_k = \"many\"\n").unwrap_err();
        assert_eq!((error.line, error.column), (3, 9), "{error}");
        let error = parse("[providers.mine]\nmodel = \"m\"\n").unwrap_err();
        assert!(error.message.contains("missing field `kind`"), "{error}");
    }
}
