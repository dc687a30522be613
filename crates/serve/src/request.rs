//! What a caller may ask of a new debate, on an allow-list: the question and the settings that
//! are safe to take from outside. Nothing that runs a command or names a path on the server is
//! accepted (an unknown field is refused by name), and the request goes through the same
//! settings assembly as the command line, so a bad value gets the same message.

use crate::config::Config;
use crate::providers::ProviderFlags;
use crate::session::{DebateRequest, DebateSettings};
use serde::Deserialize;

/// The body of `POST /v1/debates`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct NewDebate {
    pub(super) question: String,
    protocol: Option<String>,
    /// In the `--option` form: "A: label — description".
    #[serde(default)]
    options: Vec<String>,
    #[serde(default, deserialize_with = "whole_number")]
    max_rounds: Option<u32>,
    perspectives: Option<Perspectives>,
    vote: Option<String>,
    topology: Option<String>,
    planning: Option<String>,
    /// Gate points (`after_round`, `before_synthesis`, …).
    gates: Option<Vec<String>>,
    /// False: no checkpoints (else each waits for `POST …/checkpoint`).
    checkpoints: Option<bool>,
    /// A provider configured on the server (`[providers.NAME]`), never a URL.
    provider: Option<String>,
    /// False: neither given lessons nor writing them.
    lessons: Option<bool>,
    /// The caller, as `agent:NAME`, recorded as who started the debate (else `server`).
    initiated_by: Option<String>,
}

/// A count of seats, or the catalog perspectives to seat.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Perspectives {
    Count(#[serde(deserialize_with = "whole")] u32),
    Names(Vec<String>),
}

/// A whole number however JSON writes it: `11` and `11.0` are the same integer to JSON Schema
/// (and to the OpenAPI file), so both are taken.
fn whole<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<u32, D::Error> {
    use serde::de::Error as _;
    let number = serde_json::Number::deserialize(deserializer)?;
    let whole = match (number.as_u64(), number.as_f64()) {
        (Some(n), _) => Some(n),
        (None, Some(f)) if f.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&f) => {
            Some(f as u64)
        }
        _ => None,
    };
    whole.and_then(|n| u32::try_from(n).ok()).ok_or_else(|| {
        D::Error::custom(format!(
            "{number} is not a whole number from 0 to {}",
            u32::MAX
        ))
    })
}

/// `whole`, for a field that may be left out.
fn whole_number<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<u32>, D::Error> {
    whole(deserializer).map(Some)
}

/// Why a request cannot start a debate: said to the caller as a 400.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(super) struct Refused(pub(super) String);

/// Why a request cannot start a debate on this server: well formed, but it names what this
/// server is not configured with (a provider); said as a 409, since another server might
/// take it.
#[derive(Debug, thiserror::Error)]
pub(super) enum NotHere {
    #[error("{0}")]
    Refused(#[from] Refused),
    #[error("{0}")]
    NotConfigured(String),
}

/// Why the server runs no code debate, whoever asks for one (the request, or its config's
/// `protocol = "code"`).
pub(super) const CODE_REFUSED: &str = "protocol: code debates write and run model-written code in a project directory, and a server runs none (whether the request or the server's config asks for one); run them with `moot --protocol code` on the machine that holds the project";

/// The most options one request may give.
const MOST_OPTIONS: usize = 26;

impl NewDebate {
    /// The debate's settings, assembled as `moot --headless …` would assemble them, on the
    /// server's provider unless the request names one of its configured ones.
    pub(super) fn settings(
        &self,
        registry: &crate::session::Registry,
        config: &Config,
        server: &ProviderFlags,
    ) -> Result<DebateSettings, NotHere> {
        self.check()?;
        let request = self.request(config, server)?;
        // What runs is the request's protocol, else the server's config default: the checks
        // below are on that, never on the request's field alone (P3).
        if crate::session::chosen_protocol(&request, config) == "code" {
            return Err(Refused(CODE_REFUSED.into()).into());
        }
        let mut settings = crate::session::assemble(registry, &request, config)
            .map_err(|e| Refused(in_api_terms(&e.to_string())))?;
        settings.initiated_by = Some(self.initiator()?);
        settings.served = true;
        // Records go where the server's config says, never into its working directory under
        // a name made from a caller's question; with none named, the journal keeps them
        // (`GET …/record`).
        match config.serve.decisions_dir(config.source.as_deref()) {
            Some(dir) => settings.decisions_dir = dir,
            None => settings.write_decision = false,
        }
        Ok(settings)
    }

    /// Who the request says started the debate: an outside agent naming itself, or else the
    /// server.
    fn initiator(&self) -> Result<crate::debate::Initiator, Refused> {
        let Some(named) = &self.initiated_by else {
            return Ok(crate::debate::Initiator::Server);
        };
        match named.parse::<crate::debate::Initiator>() {
            Ok(agent @ crate::debate::Initiator::Agent(_)) => Ok(agent),
            Ok(own) => Err(Refused(format!(
                "initiated_by: moot records `{own}` itself; name the caller as agent:NAME"
            ))),
            Err(problem) => Err(Refused(format!("initiated_by: {problem}"))),
        }
    }

    /// What the command line would refuse before parsing, or the server refuses outright.
    fn check(&self) -> Result<(), Refused> {
        let question = self.question.trim();
        if question.is_empty() {
            return Err(Refused("question: the question is empty".into()));
        }
        let chars = question.chars().count();
        if chars > crate::session::MAX_QUESTION_CHARS {
            return Err(Refused(format!(
                "question: {}",
                crate::session::SessionError::QuestionTooLong { chars }
            )));
        }
        if self.options.len() > MOST_OPTIONS {
            return Err(Refused(format!(
                "options: at most {MOST_OPTIONS} options, not {}",
                self.options.len()
            )));
        }
        if self.protocol.as_deref() == Some("code") {
            return Err(Refused(CODE_REFUSED.into()));
        }
        Ok(())
    }

    /// The library's request this body stands for: its fields, the protocol's options by
    /// the flag names the protocols read, and the provider it names (one configured on this
    /// server) or the server's own.
    fn request(&self, config: &Config, server: &ProviderFlags) -> Result<DebateRequest, NotHere> {
        let mut protocol_flags = std::collections::BTreeMap::new();
        for (name, values) in [
            ("option", self.options.clone()),
            ("topology", self.topology.clone().into_iter().collect()),
            ("planning", self.planning.clone().into_iter().collect()),
        ] {
            if !values.is_empty() {
                protocol_flags.insert(name.to_string(), values);
            }
        }
        let (perspectives, named_perspectives) = match &self.perspectives {
            Some(Perspectives::Count(n)) => (Some(*n), Vec::new()),
            Some(Perspectives::Names(names)) => (None, names.clone()),
            None => (None, Vec::new()),
        };
        let provider = match &self.provider {
            Some(name) if config.providers.contains_key(name) => ProviderFlags {
                provider: Some(name.clone()),
                ..ProviderFlags::default()
            },
            Some(name) => {
                let known: Vec<&str> = config.providers.keys().map(String::as_str).collect();
                return Err(NotHere::NotConfigured(format!(
                    "provider: {name:?} is not configured on this server (configured: {})",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                )));
            }
            None => server.clone(),
        };
        Ok(DebateRequest {
            protocol: self.protocol.clone(),
            protocol_flags,
            max_rounds: self.max_rounds,
            perspectives,
            named_perspectives,
            vote: self.vote.clone(),
            // No points named: the server's `[gates]` stand, as with no field at all.
            gates: self
                .gates
                .as_deref()
                .map(DebateRequest::gate_points)
                .filter(|g| !g.is_empty()),
            checkpoints: (self.checkpoints == Some(false)).then_some(false),
            without_lessons: self.lessons == Some(false),
            provider,
            // Gathered from nowhere on this server, whatever the protocol (a dialogue would
            // gather its shared context from where the server runs).
            from_outside: true,
            ..DebateRequest::new(self.question.trim())
        })
    }
}

/// A message the command line's checks wrote, in the request's own terms: its fields for the
/// flags they became (C10: "--option is a flag of the panel protocol … add --protocol panel").
fn in_api_terms(message: &str) -> String {
    const FIELDS: [(&str, &str); 11] = [
        ("--max-rounds", "max_rounds"),
        // An arena's own name for its rounds, which the request sets as max_rounds.
        ("--rounds", "max_rounds"),
        ("--perspectives", "perspectives"),
        ("--perspective", "perspectives"),
        ("--option", "options"),
        ("--vote", "vote"),
        ("--gates", "gates"),
        ("--topology", "topology"),
        ("--planning", "planning"),
        ("--provider", "provider"),
        ("--checkpoints", "checkpoints"),
    ];
    let mut said = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find("--") {
        said.push_str(&rest[..at]);
        let flag_and_after = &rest[at..];
        let flag_len = flag_and_after[2..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .map_or(flag_and_after.len(), |end| end + 2);
        let flag = &flag_and_after[..flag_len];
        let mut after = &flag_and_after[flag_len..];
        if flag == "--protocol" {
            // "--protocol panel" is the field with its value.
            let value = after.trim_start();
            let value_len = value
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
                .unwrap_or(value.len());
            if value_len > 0 {
                said.push_str(&format!("\"protocol\": \"{}\"", &value[..value_len]));
                after = &value[value_len..];
            } else {
                said.push_str("protocol");
            }
        } else {
            match FIELDS.iter().find(|(spelled, _)| *spelled == flag) {
                Some((_, field)) => said.push_str(field),
                None => said.push_str(flag),
            }
        }
        rest = after;
    }
    said.push_str(rest);
    said
}

#[cfg(test)]
mod tests {
    use super::in_api_terms;

    #[test]
    fn command_line_spellings_become_the_requests_fields() {
        assert_eq!(
            in_api_terms(
                "--option is a flag of the panel protocol, not of moderated; add --protocol panel"
            ),
            "options is a flag of the panel protocol, not of moderated; add \"protocol\": \"panel\""
        );
        assert_eq!(
            in_api_terms("--max-rounds must be 1 to 12, not 99"),
            "max_rounds must be 1 to 12, not 99"
        );
        assert_eq!(in_api_terms("no flags here"), "no flags here");
        assert_eq!(
            in_api_terms("--unknown-thing stays"),
            "--unknown-thing stays"
        );
    }

    use super::*;

    fn settings_for(body: &str) -> DebateSettings {
        let request: NewDebate = serde_json::from_str(body).expect("a valid request");
        // A provider named, so the settings do not hang on which this machine has.
        let provider = ProviderFlags {
            provider: Some("scripted".into()),
            script: Some(
                concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/../../assets/demo/redis-vs-postgres.json"
                )
                .into(),
            ),
            ..ProviderFlags::default()
        };
        request
            .settings(&crate::protocol::builtin(), &Config::default(), &provider)
            .expect("settings the server accepts")
    }

    #[test]
    fn a_dialogue_over_the_api_gathers_no_context_from_the_server() {
        let settings = settings_for(r#"{"question": "Tabs or spaces?", "protocol": "dialogue"}"#);
        assert_eq!(settings.protocol, "dialogue");
        let context = settings.protocol_settings.get("context");
        assert!(
            context.is_none_or(serde_json::Value::is_null),
            "gathered {context:?}"
        );
    }

    #[test]
    fn a_code_debate_is_refused_by_the_server() {
        let request: NewDebate =
            serde_json::from_str(r#"{"question": "Fix it", "protocol": "code"}"#).unwrap();
        let refused = request
            .settings(
                &crate::protocol::builtin(),
                &Config::default(),
                &ProviderFlags::default(),
            )
            .unwrap_err();
        assert!(
            refused.to_string().starts_with("protocol: code debates"),
            "{refused}"
        );
    }
}
