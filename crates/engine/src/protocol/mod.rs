//! The protocol seam: what a debate protocol implements (`Protocol`, `TypedProtocol`), the
//! `Registry` a session finds protocols in, and what every protocol builds on (`kit`, `moves`,
//! `tree`, `text`, `reflect`). The protocols themselves live above this crate; session,
//! replay, report, the faces and the command line work from what each declares, handed a
//! `Registry` by the binary.

pub mod kit;
pub mod moves;
pub mod reflect;
pub mod text;
pub mod tree;

use crate::catalog::Perspective;
use crate::debate::{Confidence, Presentation};
use crate::engine::guardrails::TokenBudget;
use crate::engine::{Context, EngineError};
use crate::llm::Provider;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// The protocols a session can run, looked up by name: the built-in ones, plus any a caller
/// adds (a test's toy protocol). Session, resume, replay and `audit --verify` take one, so a
/// protocol outside `builtin()` runs through the same engine, journal and checks.
#[derive(Clone)]
pub struct Registry {
    protocols: Vec<&'static dyn Protocol>,
}

impl Registry {
    /// A registry of `protocols`, in the order `moot protocols` lists them.
    pub fn of(protocols: &[&'static dyn Protocol]) -> Registry {
        Registry {
            protocols: protocols.to_vec(),
        }
    }

    /// This registry with `protocol` added (it takes the place of one of the same name).
    pub fn with(mut self, protocol: &'static dyn Protocol) -> Registry {
        self.protocols.retain(|p| p.name() != protocol.name());
        self.protocols.push(protocol);
        self
    }

    /// Every protocol, in the order `moot protocols` lists them.
    pub fn protocols(&self) -> impl Iterator<Item = &'static dyn Protocol> + '_ {
        self.protocols.iter().copied()
    }

    /// The protocol called `name`.
    pub fn find(&self, name: &str) -> Option<&'static dyn Protocol> {
        self.protocols.iter().copied().find(|p| p.name() == name)
    }

    /// The protocol called `name`, or a usage error listing the ones there are.
    pub fn named(&self, name: &str) -> Result<&'static dyn Protocol, UnknownProtocol> {
        self.find(name).ok_or_else(|| UnknownProtocol {
            name: name.to_string(),
            known: self.protocols.iter().map(|p| p.name()).collect(),
        })
    }
}

/// A protocol name no registered protocol answers to.
#[derive(Debug, Clone, thiserror::Error)]
#[error("unknown protocol {name:?}; moot runs {} (see `moot protocols`)", known.join(", "))]
pub struct UnknownProtocol {
    pub name: String,
    pub known: Vec<&'static str>,
}

/// A protocol flag's value that is not one of its words.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("--{flag} {given}: use {choices}")]
pub struct BadFlag {
    pub flag: &'static str,
    pub given: String,
    pub choices: &'static str,
}

/// Why a finished debate's result cannot take the person's choice.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Undecidable {
    #[error("a {0} debate leaves nothing to decide")]
    NothingLeft(&'static str),
    #[error("the judges agreed on option {0}; there is nothing to decide")]
    Agreed(String),
    #[error("there is no option {choice:?}; choose one of {}", options.join(", "))]
    NoSuchOption {
        choice: String,
        options: Vec<String>,
    },
    #[error("the stored result cannot be read: {0}")]
    Unreadable(String),
    #[error(
        "the stored result is version {version}, written by a newer moot (this one reads up to {known}); upgrade moot to settle it"
    )]
    Newer { version: u64, known: u32 },
}

/// A flag a protocol adds to the command line (`--option ID: label`, say).
#[derive(Debug, Clone, Copy)]
pub struct Flag {
    pub name: &'static str,
    /// The value's placeholder; `None` for a switch.
    pub value: Option<&'static str>,
    pub help: &'static str,
    /// May be given more than once (each value kept, in order).
    pub repeatable: bool,
}

impl Flag {
    /// `--context PATH`, as the panel and the dialogue both read it.
    pub const CONTEXT: Flag = Flag::valued(
        "context",
        "PATH",
        "A file, or a directory of text files, every seat reads (repeatable; the panel's spec, the dialogue's extra sources)",
    )
    .repeatable();

    /// A switch: `--NAME`.
    pub const fn switch(name: &'static str, help: &'static str) -> Flag {
        Flag {
            name,
            value: None,
            help,
            repeatable: false,
        }
    }

    /// A flag that takes a value: `--NAME VALUE`.
    pub const fn valued(name: &'static str, value: &'static str, help: &'static str) -> Flag {
        Flag {
            name,
            value: Some(value),
            help,
            repeatable: false,
        }
    }

    /// The same flag, taken more than once (each value kept, in order).
    pub const fn repeatable(self) -> Flag {
        Flag {
            repeatable: true,
            ..self
        }
    }
}

/// What a protocol's settings are made from.
pub struct SettingsInput<'a> {
    /// The protocol's flags as given: name → values (a switch given once has one empty value).
    pub flags: &'a BTreeMap<String, Vec<String>>,
    /// Its table in the config file (`[panel]`), if any.
    pub table: Option<&'a toml::Value>,
    /// The config file, to point at what is wrong in it.
    pub config_path: Option<&'a Path>,
    /// Relative paths (`--context`) resolve against this directory.
    pub cwd: &'a Path,
    /// `--max-rounds` when given: it overrides the protocol's own default and config.
    pub max_rounds: Option<u32>,
    /// The question, when known (not for settings read from config alone): a protocol that
    /// gathers material for it before the debate does so here, so that the material is
    /// stored with the debate and a resume never gathers again.
    pub question: Option<&'a str>,
    /// `--perspective` names as given.
    pub perspectives: &'a [String],
    /// Asked from off this machine (the HTTP API): nothing may be gathered from `cwd`.
    pub outside: bool,
    /// A seat's provider by profile (or kind) and model, as the snapshot `Common::providers`
    /// builds from; the debate's own provider when both are `None`.
    pub resolve_provider: &'a ResolveProvider<'a>,
}

impl SettingsInput<'_> {
    /// `message` about `key` of the protocol's `[table]`, located at its line in the config
    /// file when there is one.
    pub fn located(&self, table: &str, key: &str, message: String) -> SettingsError {
        SettingsError(match self.config_path {
            Some(path) => format!(
                "{}: [{table}] {message}",
                crate::place::locate_in_table(path, table, key)
            ),
            None => message,
        })
    }

    /// The protocol's `[table]` read into its config type (its default when absent); an
    /// unknown key or a wrong type is an error located in the file.
    pub fn table<T: serde::de::DeserializeOwned + Default>(
        &self,
        table: &str,
    ) -> Result<T, SettingsError> {
        match self.table {
            Some(value) => value.clone().try_into().map_err(|e: toml::de::Error| {
                // Read again from the file's text, the error knows the value it is about.
                if let Some(path) = self.config_path
                    && let Some(at) = place_in_file::<T>(path, table)
                {
                    return SettingsError(at);
                }
                // The key the message names (an unknown one), where it stands; else the table.
                let message = e.message().to_string();
                let key = message
                    .split_once("unknown field `")
                    .and_then(|(_, rest)| rest.split_once('`'))
                    .map_or("", |(key, _)| key)
                    .to_string();
                self.located(table, &key, message)
            }),
            None => Ok(T::default()),
        }
    }
}

/// The error of reading the config file's `[table]` as `T`, placed at the value it is about
/// (`file:line:column: [table] message`); None when the file reads, or no place is known.
fn place_in_file<T: serde::de::DeserializeOwned>(path: &Path, table: &str) -> Option<String> {
    use serde::de::DeserializeSeed;
    let text = std::fs::read_to_string(path).ok()?;
    let deserializer = toml::de::Deserializer::parse(&text).ok()?;
    let error = TableOf::<T>(table, std::marker::PhantomData)
        .deserialize(deserializer)
        .err()?;
    let span = error.span()?;
    let (line, column) = crate::place::line_column(&text, span.start);
    Some(format!(
        "{}:{line}:{column}: [{table}] {}",
        path.display(),
        error.message()
    ))
}

/// Reads a document's `[name]` table as `T`, passing over every other key.
struct TableOf<'a, T>(&'a str, std::marker::PhantomData<T>);

impl<'de, T: serde::Deserialize<'de>> serde::de::DeserializeSeed<'de> for TableOf<'_, T> {
    type Value = Option<T>;

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, T: serde::Deserialize<'de>> serde::de::Visitor<'de> for TableOf<'_, T> {
    type Value = Option<T>;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(formatter, "a document with a [{}] table", self.0)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == self.0 {
                found = Some(map.next_value::<T>()?);
            } else {
                map.next_value::<serde::de::IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// `PROVIDER[:MODEL]` as a flag gives a seat's provider (`ollama:qwen2.5`, `anthropic`,
/// `:a-model`): the profile (or kind) and the model, each `None` when left empty.
pub fn provider_and_model(given: &str) -> (Option<&str>, Option<&str>) {
    let (profile, model) = match given.split_once(':') {
        Some((profile, model)) => (profile.trim(), Some(model.trim())),
        None => (given.trim(), None),
    };
    (
        Some(profile).filter(|p| !p.is_empty()),
        model.filter(|m| !m.is_empty()),
    )
}

/// A seat's provider snapshot from a profile (or kind) and a model.
pub type ResolveProvider<'a> =
    dyn Fn(Option<&str>, Option<&str>) -> Result<Value, SettingsError> + 'a;

/// A `TypedProtocol`'s `run`, written once for a protocol whose steps take their settings by
/// reference: `run(ctx, common, &settings)` in its folder's `run.rs`. Stands inside the
/// `impl TypedProtocol` as `moot_engine::runs!(run::run);`.
#[macro_export]
macro_rules! runs {
    ($steps:path) => {
        fn run<'a>(
            &'a self,
            ctx: &'a $crate::engine::Context,
            common: &'a $crate::protocol::Common,
            settings: Self::Settings,
        ) -> $crate::protocol::Run<'a, Self::Result> {
            Box::pin(async move { $steps(ctx, common, &settings).await })
        }
    };
}
pub use crate::runs;

/// A `SettingsError` written as with `format!`.
#[macro_export]
macro_rules! refused {
    ($($arg:tt)*) => {
        $crate::protocol::SettingsError::from(format!($($arg)*))
    };
}
pub use crate::refused;

/// Where a setting went wrong, in words that say how to fix it: a flag of the command line
/// (exit 2) or a key of the config file, located at its line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SettingsError(String);

impl SettingsError {
    /// What was wrong, as said.
    pub fn message(&self) -> &str {
        &self.0
    }
}

impl From<String> for SettingsError {
    fn from(message: String) -> SettingsError {
        SettingsError(message)
    }
}

impl From<&str> for SettingsError {
    fn from(message: &str) -> SettingsError {
        SettingsError(message.to_string())
    }
}

impl From<BadFlag> for SettingsError {
    fn from(bad: BadFlag) -> SettingsError {
        SettingsError(bad.to_string())
    }
}

/// Builds a seat's provider from a snapshot `SettingsInput::resolve_provider` made.
pub type ProviderFactory =
    Arc<dyn Fn(&Value) -> Result<Arc<dyn Provider>, ProviderUnavailable> + Send + Sync>;

/// Why a seat's stored provider cannot be built for a run.
#[derive(Debug, thiserror::Error)]
pub enum ProviderUnavailable {
    /// The snapshot in the settings is not a provider moot can read.
    #[error("a stored provider cannot be read: {0}")]
    Unreadable(#[from] serde_json::Error),
    /// The provider's own factory refused it (a missing key, an unknown kind).
    #[error("{0}")]
    Refused(Box<dyn std::error::Error + Send + Sync>),
    /// The run was given no way to build providers.
    #[error("no provider is set")]
    NotSet,
}

/// What every protocol runs with besides its own settings.
#[derive(Clone)]
pub struct Common {
    pub question: String,
    /// A closing vote, counted by this method, when `--vote` (or `vote =`) asks for one.
    pub vote: Option<crate::vote::Method>,
    /// Approval gates (`[gates]`).
    pub gates: crate::engine::GatesConfig,
    /// Seat weights in a weighted vote, by perspective or role name (`[vote_weights]`).
    pub vote_weights: BTreeMap<String, f64>,
    pub max_rounds: u32,
    /// `--perspectives N`.
    pub perspectives: Option<u32>,
    /// `default_perspectives` from config.
    pub default_perspectives: Option<u32>,
    /// `--perspective NAME`, in order.
    pub named: Vec<String>,
    pub catalog: Vec<Perspective>,
    pub token_budget: TokenBudget,
    pub round_timeout: Duration,
    pub total_timeout: Duration,
    /// Perspectives seated on another provider than the default.
    pub perspective_providers: HashMap<String, Arc<dyn Provider>>,
    pub providers: ProviderFactory,
}

/// The closing document of a debate: typed per protocol (`R`, its `TypedProtocol::Result`),
/// stored and exported uniformly once the blanket impl has serialized it (`Outcome<Value>`).
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome<R = Value> {
    /// The record as markdown (the decision record's text).
    pub markdown: String,
    pub confidence: Confidence,
    /// The protocol's result: its own type until the journal's edge, JSON beyond it.
    pub data: R,
    /// The name `show --json` gives `data` beside the generic synthesis (`debate_result`), if
    /// the protocol's document has one.
    pub section: Option<String>,
    /// The date of the record (its file name starts with it).
    pub date: String,
}

/// How a run of a protocol ended, its outcome typed as `R` (JSON once serialized).
pub enum Ending<R = Value> {
    Concluded(Box<Outcome<R>>),
    /// A question was not answered in time: the debate pauses and can be resumed.
    Paused,
    /// The person ended the debate before it concluded anything.
    Cancelled,
}

/// Why `--option` on resume is refused by a protocol without options.
fn no_options_here(called: &str) -> String {
    format!("--option is read by the panel protocol only; this is a {called} debate")
}

/// A protocol's run, borrowed from its context, ending with its result as `R`.
pub type Run<'a, R = Value> = Pin<Box<dyn Future<Output = Result<Ending<R>, EngineError>> + 'a>>;

/// A protocol written against its own types: the settings it builds and runs with, the result
/// it ends with. The blanket `impl Protocol` below turns both into the JSON the journal keeps
/// (and reads them back, naming the protocol when a stored one cannot be read), so a protocol
/// never handles a `Value` itself. Every protocol moot ships is one.
pub trait TypedProtocol: Sync {
    /// What `settings` builds and `run` runs with, stored with the debate.
    type Settings: serde::Serialize + serde::de::DeserializeOwned;
    /// What its `Outcome` carries (`show --json` names its section), read back by `decide`,
    /// `unsettled` and `follow_up`.
    type Result: serde::Serialize + serde::de::DeserializeOwned;

    /// The name `--protocol` takes and the journal keeps.
    fn name(&self) -> &'static str;

    /// What its debates are called in messages ("arena", "code debate").
    fn called(&self) -> &'static str {
        self.name()
    }

    /// One line for `moot protocols`.
    fn description(&self) -> &'static str;

    /// The approval gates it stops at (`[gates] points`): `after_round`, `before_synthesis`…
    fn gate_points(&self) -> &'static [&'static str] {
        &["after_round", "before_synthesis"]
    }

    /// The flags it adds to `moot` (none by default).
    fn flags(&self) -> &'static [Flag] {
        &[]
    }

    /// The version of `Settings` as stored: raised when a change means an older moot would
    /// misread it (snapshots carry it; 0 means written before versions, read as 1).
    const SETTINGS_VERSION: u32 = 1;

    /// Whether it reads `--perspective` (as seats from the catalog, or as a viewpoint of its
    /// own); one that does not refuses the flag instead of dropping it.
    fn reads_perspective(&self) -> bool {
        self.presentation().seats_from_catalog
    }

    /// The version of `Result` as stored (under `RESULT_VERSION_KEY` in the result's data):
    /// raised when a change means an older moot would misread it; 0 means written before
    /// versions.
    const RESULT_VERSION: u32 = 1;

    /// Its settings from flags and config.
    fn settings(&self, input: &SettingsInput<'_>) -> Result<Self::Settings, SettingsError>;

    /// Checks its `[table]` in config without building anything (see `Protocol::check_table`).
    fn check_table(&self, input: &SettingsInput<'_>) -> Result<(), SettingsError> {
        let _ = input;
        Ok(())
    }

    /// How the faces should show it.
    fn presentation(&self) -> Presentation;

    /// Runs it (again, on resume: recorded turns and answers are served from the journal).
    fn run<'a>(
        &'a self,
        ctx: &'a Context,
        common: &'a Common,
        settings: Self::Settings,
    ) -> Run<'a, Self::Result>;

    /// Its result read in the shape every protocol shares: what won, how it was decided, and
    /// the final consensus score (defined per protocol in ARCHITECTURE.md).
    fn resolution(&self, result: &Self::Result) -> crate::debate::Resolution;

    /// Settles what a finished debate left to the person.
    fn decide(
        &self,
        result: Self::Result,
        choice: &str,
        by: &str,
    ) -> Result<Outcome<Self::Result>, Undecidable> {
        let _ = (result, choice, by);
        Err(Undecidable::NothingLeft(self.name()))
    }

    /// Its settings for a re-run over the journal, with anything that writes outside it off.
    fn without_side_effects(&self, settings: Self::Settings) -> Self::Settings {
        settings
    }

    /// Its settings when a resume gives `--option` (a panel rescued from a proposal it could
    /// not use); refused by a protocol that reads no options, or once `turns` show that the
    /// options were settled.
    fn with_options(
        &self,
        settings: Self::Settings,
        options: &[String],
        turns: &[crate::debate::Turn],
    ) -> Result<Self::Settings, SettingsError> {
        let _ = (settings, options, turns);
        Err(no_options_here(self.called()).into())
    }

    /// What the lessons step should draw from this protocol's record.
    fn lesson_focus(&self) -> Option<&'static str> {
        None
    }

    /// Why a concluded result is not settled enough to learn from.
    fn unsettled(&self, result: &Self::Result) -> Option<String> {
        let _ = result;
        None
    }

    /// Turns that must be argued from the question alone.
    fn withholds_lessons(&self) -> fn(&crate::debate::TurnKey) -> bool {
        |_| false
    }

    /// The "create a workflow from this decision" issue draft, if the protocol offers one.
    fn follow_up(
        &self,
        result: &Self::Result,
        question: &str,
        record: Option<&Path>,
    ) -> Option<String> {
        let _ = (result, question, record);
        None
    }
}

impl<T: TypedProtocol> Protocol for T {
    fn name(&self) -> &'static str {
        TypedProtocol::name(self)
    }

    fn description(&self) -> &'static str {
        TypedProtocol::description(self)
    }

    fn gate_points(&self) -> &'static [&'static str] {
        TypedProtocol::gate_points(self)
    }

    fn flags(&self) -> &'static [Flag] {
        TypedProtocol::flags(self)
    }

    fn settings(&self, input: &SettingsInput<'_>) -> Result<Value, SettingsError> {
        serde_json::to_value(TypedProtocol::settings(self, input)?)
            .map_err(|e| SettingsError(e.to_string()))
    }

    fn check_table(&self, input: &SettingsInput<'_>) -> Result<(), SettingsError> {
        TypedProtocol::check_table(self, input)
    }

    fn settings_version(&self) -> u32 {
        T::SETTINGS_VERSION
    }

    fn reads_perspective(&self) -> bool {
        TypedProtocol::reads_perspective(self)
    }

    fn presentation(&self) -> Presentation {
        TypedProtocol::presentation(self)
    }

    fn run<'a>(&'a self, ctx: &'a Context, common: &'a Common, settings: &'a Value) -> Run<'a> {
        Box::pin(async move {
            let settings: T::Settings =
                kit::stored(settings, &format!("the {}'s", TypedProtocol::called(self)))?;
            Ok(
                match TypedProtocol::run(self, ctx, common, settings).await? {
                    Ending::Concluded(outcome) => Ending::Concluded(Box::new(
                        outcome.stored(T::RESULT_VERSION).map_err(|e| {
                            EngineError::Setup(format!(
                                "the {}'s result cannot be stored: {e}",
                                TypedProtocol::called(self)
                            ))
                        })?,
                    )),
                    Ending::Paused => Ending::Paused,
                    Ending::Cancelled => Ending::Cancelled,
                },
            )
        })
    }

    fn result_version(&self) -> u32 {
        T::RESULT_VERSION
    }

    fn resolution(&self, outcome: &Value) -> Option<crate::debate::Resolution> {
        let result: T::Result = stored_result(outcome, T::RESULT_VERSION).ok()?;
        Some(TypedProtocol::resolution(self, &result))
    }

    fn decide(&self, outcome: &Value, choice: &str, by: &str) -> Result<Outcome, Undecidable> {
        let result: T::Result = stored_result(outcome, T::RESULT_VERSION)?;
        TypedProtocol::decide(self, result, choice, by)?
            .stored(T::RESULT_VERSION)
            .map_err(|e| Undecidable::Unreadable(e.to_string()))
    }

    fn without_side_effects(&self, settings: &Value) -> Value {
        // Settings this moot cannot read run as stored; the run refuses them itself.
        match serde_json::from_value::<T::Settings>(settings.clone()) {
            Ok(typed) => serde_json::to_value(TypedProtocol::without_side_effects(self, typed))
                .unwrap_or_else(|_| settings.clone()),
            Err(_) => settings.clone(),
        }
    }

    fn with_options(
        &self,
        settings: &Value,
        options: &[String],
        turns: &[crate::debate::Turn],
    ) -> Result<Value, SettingsError> {
        let typed: T::Settings = serde_json::from_value(settings.clone())
            .map_err(|e| refused!("its stored settings cannot be read: {e}"))?;
        serde_json::to_value(TypedProtocol::with_options(self, typed, options, turns)?)
            .map_err(|e| SettingsError(e.to_string()))
    }

    fn lesson_focus(&self) -> Option<&'static str> {
        TypedProtocol::lesson_focus(self)
    }

    fn unsettled(&self, outcome: &Value) -> Option<String> {
        let result: T::Result = stored_result(outcome, T::RESULT_VERSION).ok()?;
        TypedProtocol::unsettled(self, &result)
    }

    fn withholds_lessons(&self) -> fn(&crate::debate::TurnKey) -> bool {
        TypedProtocol::withholds_lessons(self)
    }

    fn follow_up(&self, outcome: &Value, question: &str, record: Option<&Path>) -> Option<String> {
        let result: T::Result = stored_result(outcome, T::RESULT_VERSION).ok()?;
        TypedProtocol::follow_up(self, &result, question, record)
    }
}

/// The key under which a stored result's data carries its version (absent in results written
/// before versions).
pub const RESULT_VERSION_KEY: &str = "result_version";

/// The version a stored result's data says it has: 0 for one written before versions.
pub fn result_version_of(data: &Value) -> u64 {
    data.get(RESULT_VERSION_KEY)
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

/// A stored result read back as its type, refused when a newer moot wrote it.
fn stored_result<R: serde::de::DeserializeOwned>(
    data: &Value,
    known: u32,
) -> Result<R, Undecidable> {
    let version = result_version_of(data);
    if version > u64::from(known) {
        return Err(Undecidable::Newer { version, known });
    }
    serde_json::from_value(data.clone()).map_err(|e| Undecidable::Unreadable(e.to_string()))
}

impl<R: serde::Serialize> Outcome<R> {
    /// The outcome as the journal keeps it: its result serialized and stamped with the
    /// result's version.
    pub fn stored(self, version: u32) -> Result<Outcome, serde_json::Error> {
        let mut data = serde_json::to_value(&self.data)?;
        if let Value::Object(map) = &mut data {
            map.insert(RESULT_VERSION_KEY.to_string(), version.into());
        }
        Ok(Outcome {
            markdown: self.markdown,
            confidence: self.confidence,
            data,
            section: self.section,
            date: self.date,
        })
    }
}

/// One debate protocol.
pub trait Protocol: Sync {
    /// The name `--protocol` takes and the journal keeps.
    fn name(&self) -> &'static str;

    /// One line for `moot protocols`.
    fn description(&self) -> &'static str;

    /// The approval gates it stops at (`[gates] points`): `after_round`, `before_synthesis`…
    fn gate_points(&self) -> &'static [&'static str] {
        &["after_round", "before_synthesis"]
    }

    /// The flags it adds to `moot` (none by default).
    fn flags(&self) -> &'static [Flag] {
        &[]
    }

    /// Its settings from flags and config, as the snapshot stored with the debate (so a
    /// resume runs the same debate).
    fn settings(&self, input: &SettingsInput<'_>) -> Result<Value, SettingsError>;

    /// Checks its `[table]` in config without building anything (no file read, no directory
    /// made), so that a typo in it is refused whichever protocol runs. Protocols without a
    /// table have nothing to check.
    fn check_table(&self, input: &SettingsInput<'_>) -> Result<(), SettingsError> {
        let _ = input;
        Ok(())
    }

    /// Whether it reads `--perspective`; one that does not refuses it.
    fn reads_perspective(&self) -> bool {
        self.presentation().seats_from_catalog
    }

    /// The version of the settings snapshot it writes (stored beside it): a journal whose
    /// snapshot is newer than this moot reads is refused instead of misread.
    fn settings_version(&self) -> u32 {
        1
    }

    /// The version of the result it writes (in the result's data, `RESULT_VERSION_KEY`).
    fn result_version(&self) -> u32 {
        1
    }

    /// How the faces should show it.
    fn presentation(&self) -> Presentation;

    /// Runs it (again, on resume: recorded turns and answers are served from the journal).
    fn run<'a>(&'a self, ctx: &'a Context, common: &'a Common, settings: &'a Value) -> Run<'a>;

    /// Its stored result read in the shape every protocol shares; `None` when the result is
    /// one this moot cannot read.
    fn resolution(&self, outcome: &Value) -> Option<crate::debate::Resolution>;

    /// Settles what a finished debate left to the person (the option of a contested result),
    /// returning the outcome as it now reads.
    fn decide(&self, outcome: &Value, choice: &str, by: &str) -> Result<Outcome, Undecidable> {
        let _ = (outcome, choice, by);
        Err(Undecidable::NothingLeft(self.name()))
    }

    /// Its settings for a re-run over the journal (`moot audit --verify`): anything that would
    /// write outside the journal (a directory kept live, say) turned off.
    fn without_side_effects(&self, settings: &Value) -> Value {
        settings.clone()
    }

    /// Its settings when a resume gives `--option`; see `TypedProtocol::with_options`.
    fn with_options(
        &self,
        settings: &Value,
        options: &[String],
        turns: &[crate::debate::Turn],
    ) -> Result<Value, SettingsError> {
        let _ = (settings, options, turns);
        Err(no_options_here(self.name()).into())
    }

    /// What the lessons step should draw from this protocol's record, beyond how the debate
    /// was argued (a code debate's failed attempts, say); none by default.
    fn lesson_focus(&self) -> Option<&'static str> {
        None
    }

    /// Why a concluded outcome is not settled enough to learn from (a contested panel, a code
    /// debate whose winner fails its tests); none when it is.
    fn unsettled(&self, outcome: &Value) -> Option<String> {
        let _ = outcome;
        None
    }

    /// Turns that must be argued from the question alone, so no lesson from an earlier debate
    /// reaches them (a panel's isolated round 1); none by default.
    fn withholds_lessons(&self) -> fn(&crate::debate::TurnKey) -> bool {
        |_| false
    }

    /// The "create a workflow from this decision" issue draft, if the protocol offers one.
    fn follow_up(&self, outcome: &Value, question: &str, record: Option<&Path>) -> Option<String> {
        let _ = (outcome, question, record);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stored result carries its version; one from before versions reads, one a newer moot
    /// wrote is refused rather than misread.
    #[test]
    fn stored_results_carry_their_version_and_a_newer_one_is_refused() {
        let outcome = Outcome {
            markdown: String::new(),
            confidence: Confidence::High,
            data: serde_json::json!({"winner": "A"}),
            section: None,
            date: "2026-11-25".into(),
        }
        .stored(3)
        .unwrap();
        assert_eq!(result_version_of(&outcome.data), 3);
        let old = serde_json::json!({"winner": "A"});
        assert_eq!(result_version_of(&old), 0);
        let read: Value = stored_result(&old, 1).unwrap();
        assert_eq!(read["winner"], "A");
        let refused = stored_result::<Value>(&outcome.data, 2).unwrap_err();
        assert!(
            matches!(
                refused,
                Undecidable::Newer {
                    version: 3,
                    known: 2
                }
            ),
            "{refused}"
        );
        assert!(refused.to_string().contains("upgrade moot"), "{refused}");
    }
}
