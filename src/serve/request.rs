//! What a caller may ask of a new debate, on an allow-list: the question and the settings that
//! are safe to take from outside. Nothing that runs a command or names a path on the server is
//! accepted (an unknown field is refused by name), and the request goes through the same
//! settings assembly as the command line, so a bad value gets the same message.

use crate::cli::Cli;
use crate::config::Config;
use crate::session::DebateSettings;
use clap::Parser as _;
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
        server: &crate::cli::ProviderArgs,
    ) -> Result<DebateSettings, NotHere> {
        self.check()?;
        let argv = self.argv(config, server)?;
        let mut cli = Cli::try_parse_from(&argv).map_err(|e| {
            let message = e.to_string();
            Refused(in_api_terms(
                message
                    .lines()
                    .next()
                    .unwrap_or("the request is not valid")
                    .trim_start_matches("error: "),
            ))
        })?;
        let run = &mut cli.run;
        // What runs is the request's protocol, else the server's config default: the checks
        // below are on that, never on the request's field alone (P3).
        let protocol = crate::session::chosen_protocol(run, config).to_string();
        if protocol == "code" {
            return Err(Refused(CODE_REFUSED.into()).into());
        }
        let mut protocol_flag = |name: &str, values: Vec<String>| {
            if !values.is_empty() {
                run.protocol_flags.insert(name.to_string(), values);
            }
        };
        protocol_flag("option", self.options.clone());
        protocol_flag("topology", self.topology.clone().into_iter().collect());
        protocol_flag("planning", self.planning.clone().into_iter().collect());
        // A dialogue gathers its shared context from where moot runs: never over the API.
        // (serve does not import protocol, by the layering ARCHITECTURE.md sets, so the
        // protocol is named here rather than asked for its flags.)
        if protocol == "dialogue" {
            protocol_flag("no-context", vec![String::new()]);
        }
        let mut settings = crate::session::assemble(registry, run, config)
            .map_err(|e| Refused(in_api_terms(&e.to_string())))?;
        if settings.protocol == "code" {
            return Err(Refused(CODE_REFUSED.into()).into());
        }
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

    /// The command line `moot --headless …` this request stands for.
    fn argv(
        &self,
        config: &Config,
        server: &crate::cli::ProviderArgs,
    ) -> Result<Vec<String>, NotHere> {
        let mut argv: Vec<String> = vec!["moot".into(), "--headless".into()];
        // `--name=value`: a value that starts with `-` is taken as the value it is, never as
        // a flag of its own (C10: a vote of "--script=…" got clap's "a value is required").
        let mut flag = |name: &str, value: Option<String>| {
            argv.push(match value {
                Some(value) => format!("--{name}={value}"),
                None => format!("--{name}"),
            });
        };
        if let Some(protocol) = &self.protocol {
            flag("protocol", Some(protocol.clone()));
        }
        if let Some(rounds) = self.max_rounds {
            flag("max-rounds", Some(rounds.to_string()));
        }
        match &self.perspectives {
            Some(Perspectives::Count(n)) => flag("perspectives", Some(n.to_string())),
            Some(Perspectives::Names(names)) => {
                for name in names {
                    flag("perspective", Some(name.clone()));
                }
            }
            None => {}
        }
        if let Some(vote) = &self.vote {
            flag("vote", Some(vote.clone()));
        }
        // No points named: the server's `[gates]` stand, as with no field at all.
        if let Some(gates) = self.gates.as_ref().filter(|g| !g.is_empty()) {
            flag("gates", Some(gates.join(",")));
        }
        if self.checkpoints == Some(false) {
            flag("no-checkpoints", None);
        }
        if self.lessons == Some(false) {
            flag("no-lessons", None);
        }
        match &self.provider {
            Some(name) if config.providers.contains_key(name) => {
                flag("provider", Some(name.clone()));
            }
            Some(name) => {
                let known: Vec<&String> = config.providers.keys().collect();
                return Err(NotHere::NotConfigured(format!(
                    "provider: {name:?} is not configured on this server (configured: {})",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known
                            .iter()
                            .map(|k| k.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                )));
            }
            None => {
                if let Some(name) = &server.provider {
                    flag("provider", Some(name.clone()));
                }
                if let Some(model) = &server.model {
                    flag("model", Some(model.clone()));
                }
                if let Some(url) = &server.base_url {
                    flag("base-url", Some(url.clone()));
                }
                if let Some(script) = &server.script {
                    flag("script", Some(script.display().to_string()));
                }
            }
        }
        argv.push("--".into());
        argv.push(self.question.trim().to_string());
        Ok(argv)
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
        request
            .settings(
                &crate::protocol::builtin(),
                &Config::default(),
                &crate::cli::ProviderArgs::default(),
            )
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
                &crate::cli::ProviderArgs::default(),
            )
            .unwrap_err();
        assert!(
            refused.to_string().starts_with("protocol: code debates"),
            "{refused}"
        );
    }
}
