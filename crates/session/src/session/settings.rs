//! What a debate runs with: `DebateSettings`, from config and then from what the person asked.

use super::{DebateRequest, SessionError, resolve_provider, seat_provider};
use crate::catalog::Perspective;
use crate::config::{Config, RetryConfig, TokenBudget};
use crate::engine::{self, EngineSettings};
use crate::llm::RetryPolicy;
use crate::protocol::{self, Protocol, Registry};
use crate::providers::{self, ProviderSpec};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Every setting a debate runs with, stored with it so `resume` runs the same debate: what
/// every protocol shares, and the protocol's own settings as it snapshotted them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DebateSettings {
    /// The protocol's name (debates stored before protocols were named are moderated).
    #[serde(default = "moderated")]
    pub protocol: String,
    /// The protocol's own settings (`Protocol::settings`).
    #[serde(default)]
    pub protocol_settings: serde_json::Value,
    /// The version of that snapshot (`Protocol::settings_version`); 0 for debates stored
    /// before snapshots carried one.
    #[serde(default)]
    pub protocol_settings_version: u32,
    pub max_rounds: u32,
    pub perspectives: Option<u32>,
    pub default_perspectives: Option<u32>,
    pub named_perspectives: Vec<String>,
    pub custom_perspectives: Vec<Perspective>,
    pub token_budget_per_round: TokenBudget,
    pub round_timeout_seconds: u64,
    pub checkpoint_timeout_seconds: u64,
    pub total_timeout_seconds: u64,
    pub checkpoints: bool,
    pub write_decision: bool,
    /// Absolute, resolved when the debate started.
    pub decisions_dir: PathBuf,
    pub follow_up: bool,
    pub sequential: bool,
    pub provider: ProviderSpec,
    pub perspective_providers: BTreeMap<String, ProviderSpec>,
    pub retry: RetryConfig,
    /// `--vote`: every seat ranks the positions on the table at the end, counted this way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vote: Option<crate::vote::Method>,
    /// Approval gates, as `[gates]` set them when the debate started.
    #[serde(default)]
    pub gates: crate::config::GatesConfig,
    /// Seat weights for a weighted vote, by perspective or role name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub vote_weights: BTreeMap<String, f64>,
    /// Keep request and reply bodies in the audit trail (false: their hashes only).
    #[serde(default = "yes")]
    pub audit: bool,
    /// Lessons: whether this debate is given and writes them, and those it was given.
    #[serde(default)]
    pub lessons: LessonSettings,
    /// `[limits] reply_bytes`: the most bytes of one reply (None: from `max_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_bytes: Option<usize>,
    /// Who started the debate (the person at the workbench, a headless run, an outside agent
    /// that named itself, the server); `None` in debates from before moot recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initiated_by: Option<crate::debate::Initiator>,
    /// Run by `moot serve` on a request to its API, whoever the request named as its
    /// initiator: a server that restarts resumes it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub served: bool,
}

/// A debate's part in the lessons across debates.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LessonSettings {
    /// Give this debate relevant lessons and write its own at the end (off for debates stored
    /// before lessons existed).
    pub enabled: bool,
    pub capacity: usize,
    pub per_debate: usize,
    #[serde(default)]
    pub embedding_model: Option<String>,
    #[serde(default)]
    pub similarity: f64,
    /// The lessons it was given when it started (kept, so a resume gives the same ones).
    #[serde(default)]
    pub given: Vec<crate::debate::Lesson>,
    /// How they were matched: "embeddings (MODEL)" or "full text".
    #[serde(default)]
    pub matched_by: String,
    /// Whether a debate on the embedded demonstration model writes lessons.
    #[serde(default)]
    pub from_demonstration_model: bool,
}

fn moderated() -> String {
    "moderated".into()
}

fn yes() -> bool {
    true
}

impl DebateSettings {
    /// Settings from config alone, for a library user with no command line: the protocol the
    /// config names (or moderated), with its settings from its table. New debates of the
    /// faces go through `assemble`, which builds the protocol that runs, once.
    pub fn from_config(
        registry: &Registry,
        config: &Config,
        provider: ProviderSpec,
    ) -> Result<DebateSettings, SessionError> {
        let cwd = working_dir()?;
        let mut settings = DebateSettings::without_protocol(config, provider.clone(), &cwd)?;
        let protocol = named_in_config(registry, config)?;
        let resolve = resolver(config, &provider);
        let built = protocol
            .settings(&config_input(config, protocol.name(), &cwd, &resolve))
            .map_err(|e| SessionError::Protocol(e.to_string()))?;
        settings.runs(protocol, built);
        Ok(settings)
    }

    /// Settings from config, the protocol and its settings left for the caller to fill in for
    /// the protocol that runs: built from the config's `protocol =` and then again for
    /// `--protocol`, they ran another protocol's settings, with its effects (an `[arena]
    /// arena_dir` was created for a moderated debate).
    fn without_protocol(
        config: &Config,
        provider: ProviderSpec,
        cwd: &std::path::Path,
    ) -> Result<DebateSettings, SessionError> {
        let mut perspective_providers = BTreeMap::new();
        for (perspective, profile) in &config.perspective_providers {
            perspective_providers
                .insert(perspective.clone(), providers::named_spec(profile, config)?);
        }
        let vote = match &config.vote {
            Some(name) => Some(crate::vote::Method::parse(name).map_err(|refused| {
                SessionError::Protocol(match &config.source {
                    Some(path) => {
                        format!("{}: vote: {refused}", crate::config::locate(path, "vote"))
                    }
                    None => refused.to_string(),
                })
            })?),
            None => None,
        };
        Ok(DebateSettings {
            initiated_by: None,
            served: false,
            vote,
            gates: config.gates.clone(),
            vote_weights: config.vote_weights.clone(),
            audit: config.audit.unwrap_or(true),
            reply_bytes: config.limits.reply_bytes,
            lessons: LessonSettings {
                enabled: config.lessons.enabled,
                capacity: config.lessons.capacity,
                per_debate: config.lessons.per_debate,
                embedding_model: config.lessons.embedding_model.clone(),
                similarity: config.lessons.similarity,
                given: Vec::new(),
                matched_by: String::new(),
                from_demonstration_model: config.lessons.from_demonstration_model,
            },
            protocol: String::new(),
            protocol_settings: serde_json::Value::Null,
            protocol_settings_version: 0,
            max_rounds: config.debate.max_rounds,
            perspectives: None,
            default_perspectives: config.debate.default_perspectives,
            named_perspectives: Vec::new(),
            custom_perspectives: config.debate.custom_perspectives.clone(),
            token_budget_per_round: config.debate.token_budget_per_round,
            round_timeout_seconds: config.debate.round_timeout_seconds,
            checkpoint_timeout_seconds: config.debate.checkpoint_timeout_seconds,
            total_timeout_seconds: config.debate.total_timeout_seconds,
            checkpoints: config.debate.checkpoints,
            write_decision: config.debate.write_decision,
            decisions_dir: cwd.join(&config.debate.decisions_dir),
            follow_up: false,
            sequential: false,
            provider,
            perspective_providers,
            retry: config.retry.clone(),
        })
    }

    /// These settings made for `protocol`: its name, its settings' version, and `built`, its
    /// settings as it built them.
    fn runs(&mut self, protocol: &dyn Protocol, built: serde_json::Value) {
        self.protocol = protocol.name().to_string();
        self.protocol_settings_version = protocol.settings_version();
        self.protocol_settings = built;
    }

    pub(super) fn engine_settings(&self, protocol: &dyn Protocol) -> EngineSettings {
        EngineSettings {
            sequential: self.sequential,
            retry: RetryPolicy {
                max_attempts: self.retry.max_attempts.max(1),
                base_delay: Duration::from_millis(self.retry.base_delay_ms),
                max_delay: Duration::from_millis(self.retry.max_delay_ms),
            },
            checkpoints: self.checkpoints,
            checkpoint_timeout: engine::wait(self.checkpoint_timeout_seconds),
            temperature: self.provider.temperature,
            audit: self.audit,
            lessons: crate::lessons::preamble(&self.lessons.given),
            lessons_withheld: protocol.withholds_lessons(),
            reply_bytes: self.reply_bytes,
        }
    }
}

/// The protocol the config names (moderated when it names none); a name from the file is
/// located there (seed review 000/001 #14).
fn named_in_config(
    registry: &Registry,
    config: &Config,
) -> Result<&'static dyn Protocol, SessionError> {
    let name = config.protocol.as_deref().unwrap_or("moderated");
    registry.named(name).map_err(|unknown| {
        SessionError::Protocol(match &config.source {
            Some(path) if config.protocol.is_some() => format!(
                "{}: protocol: {unknown}",
                crate::config::locate(path, "protocol")
            ),
            _ => unknown.to_string(),
        })
    })
}

/// The protocol a new debate runs: `--protocol`, else `protocol =` in the config, else
/// moderated.
pub fn chosen_protocol<'a>(request: &'a DebateRequest, config: &'a Config) -> &'a str {
    request
        .protocol
        .as_deref()
        .or(config.protocol.as_deref())
        .unwrap_or("moderated")
}

/// A new debate's settings from config and what was asked (a `DebateRequest`, which the
/// command line, the workbench's form and the HTTP API each build): every face gets the same
/// checks and the same messages. Every protocol's `[table]` is checked, whichever
/// protocol runs.
pub fn assemble(
    registry: &Registry,
    args: &DebateRequest,
    config: &Config,
) -> Result<DebateSettings, SessionError> {
    args.check_ranges()
        .map_err(|e| SessionError::Settings(e.to_string()))?;
    let provider = providers::resolve(&args.provider, config)
        .map_err(|e| SessionError::Settings(e.to_string()))?;
    let cwd = working_dir()?;
    let mut settings = DebateSettings::without_protocol(config, provider.clone(), &cwd)
        .map_err(|e| SessionError::Settings(e.to_string()))?;
    // The config's `protocol =` is checked even when `--protocol` overrides it, as its tables
    // are.
    named_in_config(registry, config).map_err(|e| SessionError::Settings(e.to_string()))?;
    let protocol = registry
        .named(chosen_protocol(args, config))
        .map_err(|e| SessionError::Settings(e.to_string()))?;
    check_protocol_flags(registry, protocol, &args.protocol_flags)?;
    let question = args.question.trim();
    // An outside agent names itself; otherwise the face that starts the debate says who.
    settings.initiated_by = match &args.initiated_by {
        Some(given) => Some(
            crate::debate::Initiator::parse_agent(given)
                .map_err(|e| SessionError::Settings(format!("--initiated-by {given}: {e}")))?,
        ),
        None => None,
    };
    let resolve = resolver(config, &provider);
    let built = protocol
        .settings(&crate::protocol::SettingsInput {
            flags: &args.protocol_flags,
            max_rounds: args.max_rounds,
            question: Some(question).filter(|q| !q.is_empty()),
            outside: args.from_outside,
            perspectives: &args.named_perspectives,
            ..config_input(config, protocol.name(), &cwd, &resolve)
        })
        .map_err(|e| SessionError::Settings(e.to_string()))?;
    settings.runs(protocol, built);
    check_other_tables(registry, protocol.name(), config, &cwd, &provider)?;
    refuse_unread_flags(protocol, args)?;
    apply_run_flags(&mut settings, args, &cwd)?;
    apply_seat_models(&mut settings, &args.seat_models, config, &provider)?;
    apply_gates(&mut settings, protocol, args, config)?;
    apply_vote_and_lessons(&mut settings, args, config)?;
    // Unknown perspective names are a usage error before anything is stored (where they name
    // seats from the catalog; a protocol that takes `--perspective` as a viewpoint to focus
    // on reads it itself). The catalog is parsed only when there are names to check: a new
    // debate's first frame waits for this assembly.
    if protocol.presentation().seats_from_catalog && !settings.named_perspectives.is_empty() {
        let catalog = crate::catalog::catalog(&settings.custom_perspectives);
        for name in &settings.named_perspectives {
            if crate::catalog::find(&catalog, name).is_none() {
                return Err(SessionError::Settings(format!(
                    "unknown perspective {name:?}; `moot perspectives` lists the catalog"
                )));
            }
        }
    }
    Ok(settings)
}

/// `--seat-model SEAT=PROVIDER[:MODEL]`: each seat named goes on a provider of its own, beside
/// the config's `[perspective_providers]` (the flag wins for a seat both name).
fn apply_seat_models(
    settings: &mut DebateSettings,
    seat_models: &[String],
    config: &Config,
    provider: &ProviderSpec,
) -> Result<(), SessionError> {
    for given in seat_models {
        let refused = |why: &str| SessionError::Settings(format!("--seat-model {given}: {why}"));
        let Some((seat, asked)) = given.split_once('=') else {
            return Err(refused(
                "write it as SEAT=PROVIDER[:MODEL], as in A=ollama:qwen2.5",
            ));
        };
        let seat = seat.trim();
        let (profile, model) = crate::protocol::provider_and_model(asked);
        let (false, Some(profile)) = (seat.is_empty(), profile) else {
            return Err(refused(
                "name the seat before `=` and the provider after it",
            ));
        };
        let spec = seat_provider(config, provider, Some(profile), model)
            .map_err(|e| refused(e.message()))?;
        settings
            .perspective_providers
            .insert(seat.to_string(), spec);
    }
    Ok(())
}

/// The run flags every protocol is offered but not every one reads: given to one that does not
/// read them they are refused, never silently dropped (seed review 000/001 #9).
fn refuse_unread_flags(protocol: &dyn Protocol, args: &DebateRequest) -> Result<(), SessionError> {
    let name = protocol.name();
    // "an arena debate", "a panel debate".
    let a = if name.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    let presentation = protocol.presentation();
    let refused = if !args.named_perspectives.is_empty() && !protocol.reads_perspective() {
        Some(format!(
            "--perspective: {a} {name} debate does not seat perspectives from the catalog; \
             `moot protocols` says how each protocol seats its debaters"
        ))
    } else if args.perspectives.is_some() && !presentation.seats_from_catalog {
        Some(format!(
            "--perspectives: {a} {name} debate seats its own debaters, not a number of perspectives"
        ))
    } else if !args.seat_models.is_empty() && !presentation.seats_from_catalog {
        Some(format!(
            "--seat-model: {a} {name} debate seats its own debaters; give each its provider in its \
             config table (`moot protocols` says how)"
        ))
    } else if args.follow_up && !presentation.follow_up {
        Some(format!(
            "--follow-up: {a} {name} debate writes no follow-up issue draft"
        ))
    } else {
        None
    };
    refused.map_or(Ok(()), |message| Err(SessionError::Settings(message)))
}

impl DebateSettings {
    /// The settings of a `moot bench` debate arm: `arm.protocol` from config, its rounds and
    /// seats, run quietly (no checkpoints, no record, no lessons).
    pub fn for_bench(
        registry: &Registry,
        config: &Config,
        spec: ProviderSpec,
        arm: &BenchDebate,
    ) -> Result<DebateSettings, SessionError> {
        let BenchDebate {
            protocol,
            rounds,
            seats,
            flags,
            seat_models,
        } = *arm;
        let named = registry
            .named(protocol)
            .map_err(|e| SessionError::Settings(e.to_string()))?;
        check_protocol_flags(registry, named, flags)?;
        if !seat_models.is_empty() && !named.presentation().seats_from_catalog {
            return Err(SessionError::Settings(format!(
                "--seat-model: the {protocol} protocol seats its own debaters; give each its \
                 provider in its config table, or bench the moderated protocol"
            )));
        }
        let cwd = working_dir()?;
        let mut template = DebateSettings::without_protocol(config, spec.clone(), &cwd)
            .map_err(|e| SessionError::Settings(e.to_string()))?;
        let resolve = resolver(config, &spec);
        let built = named
            .settings(&crate::protocol::SettingsInput {
                max_rounds: Some(rounds),
                flags,
                ..config_input(config, named.name(), &cwd, &resolve)
            })
            .map_err(|e| SessionError::Settings(format!("--protocol {protocol}: {e}")))?;
        template.runs(named, built);
        apply_seat_models(&mut template, seat_models, config, &spec)?;
        template.max_rounds = rounds;
        template.perspectives = Some(seats);
        template.checkpoints = false;
        template.write_decision = false;
        template.lessons.enabled = false;
        Ok(template)
    }
}

/// What a `moot bench` debate arm runs: the protocol, at most `rounds` rounds of `seats`
/// seats, its protocol flags (`--blind-first`) and its seats' own models (`--seat-model`).
#[derive(Debug, Clone, Copy)]
pub struct BenchDebate<'a> {
    pub protocol: &'a str,
    pub rounds: u32,
    pub seats: u32,
    pub flags: &'a BTreeMap<String, Vec<String>>,
    pub seat_models: &'a [String],
}

/// `--foo` given for a protocol that has no such flag: refused, naming the protocol that has it.
fn check_protocol_flags(
    registry: &Registry,
    protocol: &dyn Protocol,
    flags: &BTreeMap<String, Vec<String>>,
) -> Result<(), SessionError> {
    for given in flags.keys() {
        if !protocol.flags().iter().any(|f| f.name == given) {
            let owners: Vec<&str> = registry
                .protocols()
                .filter(|p| p.flags().iter().any(|f| f.name == given))
                .map(|p| p.name())
                .collect();
            let owner = owners.first().copied().unwrap_or_default();
            let fix = if given == "rounds" {
                // Every protocol's rounds are --max-rounds; the arena's --rounds is its own
                // name for them (seed review 002/003 #14: a dialogue was told to become an arena).
                format!(
                    ": a {} debate's rounds are set with --max-rounds (or add --protocol {owner})",
                    protocol.name()
                )
            } else {
                format!("; add --protocol {owner}")
            };
            // "moderated", "moderated or arena", "moderated, panel or arena".
            let named = match owners.split_last() {
                Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
                _ => owner.to_string(),
            };
            return Err(SessionError::Settings(format!(
                "--{given} is a flag of the {named} protocol, not of {}{fix}",
                protocol.name(),
            )));
        }
    }
    Ok(())
}

/// Rounds, seats, budgets, timeouts, checkpoints and where the record goes, from the command
/// line over config.
fn apply_run_flags(
    settings: &mut DebateSettings,
    args: &DebateRequest,
    cwd: &std::path::Path,
) -> Result<(), SessionError> {
    if let Some(max_rounds) = args.max_rounds {
        settings.max_rounds = max_rounds;
    }
    settings.perspectives = args.perspectives;
    settings.named_perspectives = args.named_perspectives.clone();
    if args.named_perspectives.len() > 4 {
        return Err(SessionError::Settings(format!(
            "{} perspectives were named; a debate seats 2 to 4",
            args.named_perspectives.len()
        )));
    }
    if let Some(count) = args.perspectives
        && !args.named_perspectives.is_empty()
        && count as usize != args.named_perspectives.len()
    {
        return Err(SessionError::Settings(format!(
            "--perspectives {count} asks for {count} seats but {} --perspective names were \
             given; drop --perspectives (the names decide the seats) or name {count}",
            args.named_perspectives.len()
        )));
    }
    if let Some(budget) = &args.token_budget {
        settings.token_budget_per_round = TokenBudget::parse(budget)
            .map_err(|e| SessionError::Settings(format!("--token-budget: {e}")))?;
    }
    if let Some(seconds) = args.round_timeout_seconds {
        settings.round_timeout_seconds = seconds;
    }
    if let Some(seconds) = args.checkpoint_timeout_seconds {
        settings.checkpoint_timeout_seconds = seconds;
    }
    if let Some(seconds) = args.total_timeout_seconds {
        settings.total_timeout_seconds = seconds;
    }
    if let Some(enabled) = args.checkpoints {
        settings.checkpoints = enabled;
    }
    if let Some(write) = args.write_decision {
        settings.write_decision = write;
    }
    if let Some(dir) = &args.decisions_dir {
        settings.decisions_dir = cwd.join(dir);
    }
    settings.follow_up = args.follow_up;
    settings.sequential = args.sequential;
    Ok(())
}

/// `--gates` (which turns gates on) or `[gates]`, each point one the protocol stops at, and the
/// gate timeouts within their range.
fn apply_gates(
    settings: &mut DebateSettings,
    protocol: &dyn Protocol,
    args: &DebateRequest,
    config: &Config,
) -> Result<(), SessionError> {
    // `--gates` names the points for this debate, and turns gates on.
    if let Some(points) = &args.gates {
        for point in points {
            if !protocol.gate_points().contains(&point.as_str()) {
                return Err(SessionError::Settings(format!(
                    "--gates {point}: not a gate of the {} protocol; its gates are {}",
                    protocol.name(),
                    protocol.gate_points().join(", ")
                )));
            }
        }
        settings.gates.enabled = true;
        settings.gates.points = points.clone();
    }
    // Gates at points the protocol does not stop at are a mistake in the config.
    if settings.gates.enabled {
        let where_ = |key: &str| match &config.source {
            Some(path) => format!("{}: [gates] ", crate::config::locate(path, key)),
            None => "[gates] ".to_string(),
        };
        let from_config = if args.gates.is_some() {
            &[][..]
        } else {
            &config.gates.points[..]
        };
        for point in from_config {
            if !protocol.gate_points().contains(&point.as_str()) {
                return Err(SessionError::Settings(format!(
                    "{}{point:?} is not a gate of the {} protocol; its gates are {}",
                    where_("points"),
                    protocol.name(),
                    protocol.gate_points().join(", ")
                )));
            }
        }
        if !(1..=525_600).contains(&config.gates.timeout_minutes) {
            return Err(SessionError::Settings(format!(
                "{}timeout_minutes must be 1 minute to a year, not {}",
                where_("timeout_minutes"),
                config.gates.timeout_minutes
            )));
        }
        if let Some(seconds) = config.gates.timeout_seconds
            && !(1..=crate::engine::LONGEST_WAIT_SECONDS).contains(&seconds)
        {
            return Err(SessionError::Settings(format!(
                "{}timeout_seconds must be 1 second to a year, not {seconds}",
                where_("timeout_seconds")
            )));
        }
    }
    Ok(())
}

/// `[vote_weights]` checked, `--vote` read, `--no-lessons` applied.
fn apply_vote_and_lessons(
    settings: &mut DebateSettings,
    args: &DebateRequest,
    config: &Config,
) -> Result<(), SessionError> {
    for (seat, weight) in &config.vote_weights {
        if !weight.is_finite() || *weight < 0.0 {
            let at = match &config.source {
                Some(path) => format!("{}: ", crate::config::locate(path, seat)),
                None => String::new(),
            };
            return Err(SessionError::Settings(format!(
                "{at}[vote_weights] {seat:?} = {weight}: a weight is a number 0 or more"
            )));
        }
    }
    if let Some(name) = &args.vote {
        let method = crate::vote::Method::parse(name)
            .map_err(|e| SessionError::Settings(format!("--vote: {e}")))?;
        settings.vote = Some(method);
    }
    if args.without_lessons {
        settings.lessons.enabled = false;
    }
    Ok(())
}

/// Every other protocol's `[table]` read for typos, so that one is refused whichever protocol
/// runs (and not only when `protocol =` names it).
fn check_other_tables(
    registry: &Registry,
    running: &str,
    config: &Config,
    cwd: &std::path::Path,
    provider: &ProviderSpec,
) -> Result<(), SessionError> {
    for protocol in registry.protocols().filter(|p| p.name() != running) {
        if !config.protocol_tables.contains_key(protocol.name()) {
            continue;
        }
        let resolve = resolver(config, provider);
        protocol
            .check_table(&config_input(config, protocol.name(), cwd, &resolve))
            .map_err(|e| SessionError::Settings(e.to_string()))?;
    }
    Ok(())
}

/// The directory relative paths (`--context`, `decisions_dir`) resolve against.
fn working_dir() -> Result<std::path::PathBuf, SessionError> {
    std::env::current_dir()
        .map_err(|e| SessionError::Environment(format!("cannot read the current directory: {e}")))
}

/// A seat's provider snapshot from a profile (or kind) and a model, over the debate's own
/// `provider`, as `SettingsInput::resolve_provider` asks for it.
fn resolver<'a>(
    config: &'a Config,
    provider: &'a ProviderSpec,
) -> impl Fn(Option<&str>, Option<&str>) -> Result<serde_json::Value, protocol::SettingsError> + 'a
{
    move |profile, model| resolve_provider(config, provider, profile, model)
}

/// No flags: settings read from config alone.
static NO_FLAGS: BTreeMap<String, Vec<String>> = BTreeMap::new();

/// What `protocol`'s settings are built from when only config speaks: its `[table]`, no
/// flags, no question, no `--max-rounds`. Callers override the fields they have.
fn config_input<'a>(
    config: &'a Config,
    protocol: &str,
    cwd: &'a std::path::Path,
    resolve_provider: &'a protocol::ResolveProvider<'a>,
) -> protocol::SettingsInput<'a> {
    protocol::SettingsInput {
        flags: &NO_FLAGS,
        table: config.protocol_tables.get(protocol),
        config_path: config.source.as_deref(),
        cwd,
        max_rounds: None,
        question: None,
        perspectives: &[],
        outside: false,
        resolve_provider,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A config file on disk (errors locate keys in it) and the config read from it.
    fn config_file(text: &str) -> (tempfile::TempDir, Config) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, text).unwrap();
        let config = Config::parse(text, &path).unwrap();
        (dir, config)
    }

    fn asking(protocol: &str) -> DebateRequest {
        DebateRequest {
            protocol: Some(protocol.into()),
            provider: providers::ProviderFlags {
                provider: Some("ollama".into()),
                ..Default::default()
            },
            ..DebateRequest::new("Should we cache in Redis?")
        }
    }

    fn refusal(args: &DebateRequest, config: &Config) -> String {
        match assemble(&crate::protocol::builtin(), args, config) {
            Err(SessionError::Settings(message)) => message,
            Err(other) => panic!("expected a settings error, got {other}"),
            Ok(settings) => panic!("expected a refusal, got {}", settings.protocol),
        }
    }

    #[test]
    fn a_typo_in_any_protocols_table_is_refused_whichever_protocol_runs() {
        let text = "# moot\n\n[panel]\nconsensus_treshold = 0.6\n";
        let (_dir, config) = config_file(text);
        for running in ["moderated", "arena", "dialogue"] {
            let message = refusal(&asking(running), &config);
            // The typo's own line, not the table's header.
            assert!(
                message.contains("config.toml:4:1: [panel]")
                    && message.contains("consensus_treshold"),
                "{running}: {message}"
            );
        }
        // With `protocol =` naming another protocol, the broken table is still found.
        let (_dir, config) = config_file("protocol = \"panel\"\n\n[arena]\nrounds = \"four\"\n");
        let message = refusal(&asking("moderated"), &config);
        // At the bad value itself (A7 b).
        assert!(message.contains("config.toml:4:10: [arena]"), "{message}");
    }

    #[test]
    fn sound_tables_of_other_protocols_leave_the_running_one_alone() {
        let (_dir, config) = config_file(
            "[panel]\nconsensus_threshold = 0.75\n\n[arena]\nrounds = 3\n\n[dialogue]\n",
        );
        let settings =
            assemble(&crate::protocol::builtin(), &asking("moderated"), &config).unwrap();
        assert_eq!(settings.protocol, "moderated");
        let settings = assemble(&crate::protocol::builtin(), &asking("arena"), &config).unwrap();
        assert_eq!(settings.protocol_settings["rounds"], 3);
    }

    #[test]
    fn flags_gates_and_seats_the_protocol_does_not_take_are_refused_with_the_fix() {
        let config = Config::default();
        let mut args = asking("moderated");
        args.protocol_flags
            .insert("option".into(), vec!["A: Redis — fast".into()]);
        assert_eq!(
            refusal(&args, &config),
            "--option is a flag of the panel protocol, not of moderated; add --protocol panel"
        );
        // Seed review 002/003 #14: --rounds points at --max-rounds first.
        let mut args = asking("dialogue");
        args.protocol_flags
            .insert("rounds".into(), vec!["3".into()]);
        assert_eq!(
            refusal(&args, &config),
            "--rounds is a flag of the arena protocol, not of dialogue: a dialogue debate's \
             rounds are set with --max-rounds (or add --protocol arena)"
        );
        let mut args = asking("panel");
        args.gates = Some(vec!["before_apply".into()]);
        let message = refusal(&args, &config);
        assert!(
            message.starts_with("--gates before_apply: not a gate of the panel protocol"),
            "{message}"
        );
        let mut args = asking("moderated");
        args.named_perspectives = vec!["Security".into(), "Operations".into()];
        args.perspectives = Some(3);
        assert!(refusal(&args, &config).starts_with("--perspectives 3 asks for 3 seats"));
        let mut args = asking("moderated");
        args.named_perspectives = vec!["Nobody In Particular".into()];
        assert!(refusal(&args, &config).starts_with("unknown perspective"));
    }

    #[test]
    fn what_was_asked_overrides_config_and_lands_in_the_settings() {
        let mut args = asking("moderated");
        args.max_rounds = Some(3);
        args.write_decision = Some(false);
        args.vote = Some("borda".into());
        args.without_lessons = true;
        args.round_timeout_seconds = Some(42);
        let settings = assemble(&crate::protocol::builtin(), &args, &Config::default()).unwrap();
        assert_eq!(settings.max_rounds, 3);
        assert!(!settings.write_decision);
        assert_eq!(settings.vote, Some(crate::vote::Method::Borda));
        assert!(!settings.lessons.enabled);
        assert_eq!(settings.round_timeout_seconds, 42);
    }

    /// The ranges the command line's parser holds its flags to hold for a request built any
    /// other way (the server's, a library caller's).
    #[test]
    fn a_request_out_of_range_is_refused_as_the_command_line_refuses_it() {
        let config = Config::default();
        let mut args = asking("moderated");
        args.max_rounds = Some(21);
        assert_eq!(
            refusal(&args, &config),
            "--max-rounds 21: a debate runs 1 to 20 rounds"
        );
        let mut args = asking("moderated");
        args.perspectives = Some(1);
        assert_eq!(
            refusal(&args, &config),
            "--perspectives 1: a debate seats 2 to 4 perspectives"
        );
        let mut args = asking("moderated");
        args.total_timeout_seconds = Some(0);
        assert!(refusal(&args, &config).starts_with("--total-timeout 0: give 1 second"));
    }

    /// A request from off the machine gathers nothing from the directory moot runs in, for a
    /// protocol that would (the dialogue gathers its shared context from it by default).
    #[test]
    fn a_request_from_outside_gathers_nothing_here() {
        let mut args = asking("dialogue");
        args.from_outside = true;
        let settings = assemble(&crate::protocol::builtin(), &args, &Config::default()).unwrap();
        let context = settings.protocol_settings.get("context");
        assert!(
            context.is_none_or(serde_json::Value::is_null),
            "gathered {context:?}"
        );
    }

    /// A value out of range in any protocol's table is refused whichever protocol runs, by
    /// the same checks the protocol's own run applies, at the value's line.
    #[test]
    fn a_bad_value_in_any_protocols_table_is_refused_whichever_protocol_runs() {
        for (table, key, text) in [
            (
                "dialogue",
                "context_budget",
                "[dialogue]\ncontext_budget = 5\n",
            ),
            ("code", "max_attempts", "[code]\nmax_attempts = 99\n"),
            (
                "panel",
                "consensus_threshold",
                "[panel]\nconsensus_threshold = 7.0\n",
            ),
        ] {
            let (_dir, config) = config_file(text);
            let message = refusal(&asking("moderated"), &config);
            assert!(
                message.contains("config.toml:2:") && message.contains(key),
                "{table}: {message}"
            );
        }
    }
}
