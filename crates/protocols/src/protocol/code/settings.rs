//! A code debate's settings: its flags, its `[code]` table in config (hooks, time limits,
//! phases skipped, seats' providers), and what they make together, stored with the debate.

use super::super::{Flag, SettingsError, SettingsInput};
use crate::code::hooks::Hook;
use crate::code::roles::{self, CodePhase};
use crate::code::worktree::safe_path;
use crate::protocol::refused;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

pub const FLAGS: &[Flag] = &[
    Flag::valued("file", "PATH", "A file of the project the task is about (its contents go to the seats)").repeatable(),
    Flag::valued("test", "CMD", "The test command run after each version (default: [code.hooks] unit, else detected from the project)"),
    Flag::valued("lint", "CMD", "A linter run after each version (default: [code.hooks] lint)"),
    Flag::valued("lang", "LANGUAGE", "The language the code is written in (default: from the files written)"),
    Flag::switch("red-blue", "Red team attacks the result, blue team hardens it (at most three rounds)"),
    Flag::valued("seat", "ROLE[=PROFILE[:MODEL]]", "A critic of the critique phase (default Refactorer and Security), or a seat's own provider (Generator=ollama:qwen2.5-coder); the roles: Generator, Refactorer, PerformanceAnalyzer, Security, Teacher, Compiler, Executor, Judge, Implementer, Designer").repeatable(),
    Flag::valued("skip", "PHASE", "Leave out a phase: clarification, self-check, critique, review, optimization").repeatable(),
    Flag::switch("unsandboxed-hooks", "Run hooks without the box where this machine can build none, or uncapped where nothing can cap them (they run model-written code; the record says so)"),
    Flag::switch("keep", "Keep the debate's work tree after it ends"),
    Flag::valued("max-attempts", "N", "Attempts of the Reflexion loop (default 3)"),
    // The critics criticise side by side, none reading another's critique first; the flag is
    // taken so that one command line asks every protocol for that, and the record says so.
    crate::protocol::kit::BLIND_FIRST_FLAG,
];

/// The most bytes of one `--file` given to the seats.
const LARGEST_CONTEXT_FILE: usize = 64 * 1024;
/// The phases a debate may leave out (the others are what makes it a code debate).
pub const SKIPPABLE: &[CodePhase] = &[
    CodePhase::Clarification,
    CodePhase::SelfCheck,
    CodePhase::Critique,
    CodePhase::Review,
    CodePhase::Optimization,
];
/// Roles that always sit in their own phase: naming them with `--seat` gives them a provider,
/// not a place among the critics.
const FIXED_SEATS: &[&str] = &["Generator", "Judge", "Designer"];

/// `[code]` in config.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub(super) struct CodeConfig {
    max_attempts: Option<u32>,
    /// A reflection less sure of its fix than this stops the Reflexion loop (0–1).
    min_fix_confidence: Option<f64>,
    /// Refinements of the self-check (0–2).
    self_check: Option<u32>,
    /// Seconds a hook may run.
    hook_timeout: Option<u64>,
    /// Bytes of a hook's output kept (its tail).
    output_cap: Option<usize>,
    /// Processes (and threads) a hook run may have at once.
    hook_processes: Option<u32>,
    /// Memory a hook run may take, in MiB.
    hook_memory_mb: Option<u64>,
    skip: Vec<String>,
    critics: Vec<String>,
    hooks: HooksConfig,
    seats: BTreeMap<String, SeatConfig>,
}

/// `[code.hooks]`: the note's five kinds of hook.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
struct HooksConfig {
    unit: Option<String>,
    lint: Option<String>,
    analysis: Option<String>,
    security: Option<String>,
    bench: Option<String>,
}

/// `[code.seats.ROLE]`: a role's own provider.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct SeatConfig {
    provider: Option<String>,
    model: Option<String>,
}

/// How sure of its fix a reflection must be for another attempt to be worth its call.
pub const DEFAULT_MIN_FIX_CONFIDENCE: f64 = 0.2;

fn two() -> u32 {
    2
}

/// Everything a code debate runs with; snapshotted with the debate.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CodeSettings {
    /// The project the debate works on (absolute).
    pub origin: PathBuf,
    /// Where its work tree is made.
    pub worktrees: PathBuf,
    /// `--file`s: path and contents, read when the debate started.
    pub files: Vec<(String, String)>,
    pub hooks: Vec<Hook>,
    /// Why no hooks run, when none do.
    pub hooks_note: Option<String>,
    pub red_blue: bool,
    pub keep: bool,
    /// `--blind-first` was asked (the critics are blind to each other in every code debate;
    /// the record says so).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub blind_first: bool,
    pub max_attempts: u32,
    /// The critique phase's roles (`--seat`), by template name.
    #[serde(default = "default_critics")]
    pub critics: Vec<String>,
    /// `--lang`.
    #[serde(default)]
    pub language: Option<String>,
    /// Phases left out.
    #[serde(default)]
    pub skip: Vec<CodePhase>,
    /// Refinements the self-check may make.
    #[serde(default = "two")]
    pub self_check: u32,
    /// The Reflexion loop stops when a reflection is less sure of its fix than this. Debates
    /// stored before it existed read 0, which never stops early, so they resume as they ran.
    #[serde(default)]
    pub min_fix_confidence: f64,
    /// A role's provider snapshot, when it is not the debate's.
    #[serde(default)]
    pub seat_providers: BTreeMap<String, Value>,
    /// Whether the project was in git when the debate started (else it works in a copy).
    #[serde(default)]
    pub in_git: bool,
    /// An audit's re-run: versions go to a scratch tree, and commits, hook results and the
    /// apply come from the journal, so nothing outside the scratch tree is touched.
    #[serde(default)]
    pub rehearsal: bool,
}

impl CodeSettings {
    pub fn runs(&self, phase: CodePhase) -> bool {
        !self.skip.contains(&phase)
    }
}

pub fn default_critics() -> Vec<String> {
    vec!["Refactorer".into(), "Security".into()]
}

fn phase_named(name: &str) -> Option<CodePhase> {
    let wanted = name.trim().replace('_', "-").to_lowercase();
    SKIPPABLE.iter().copied().find(|p| p.name() == wanted)
}

/// A seat named for a role moot does not have; it lists the roles there are.
#[derive(Debug, thiserror::Error)]
#[error("{0}: no such role; the roles are {roles}", roles = role_names())]
struct NoSuchRole(String);

fn role_names() -> String {
    roles::ROLES
        .iter()
        .map(|r| r.name)
        .collect::<Vec<_>>()
        .join(", ")
}

fn role_named(given: &str) -> Result<&'static roles::Role, NoSuchRole> {
    roles::find(given).ok_or_else(|| NoSuchRole(given.to_string()))
}

/// A language name as `--lang` takes it: a word such as python, rust, c++, c#.
fn language(given: &str) -> Result<String, SettingsError> {
    let lang = given.trim().to_lowercase();
    if lang.is_empty()
        || lang.len() > 24
        || !lang
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+#-_.".contains(c))
    {
        return Err(refused!(
            "--lang {given:?}: give a language's name, as in --lang python"
        ));
    }
    Ok(lang)
}

pub fn settings(input: &SettingsInput<'_>) -> Result<CodeSettings, SettingsError> {
    let flag = |name: &str| input.flags.get(name).cloned().unwrap_or_default();
    let config: CodeConfig = input.table("code")?;
    let located = |key: &str, message: String| input.located("code", key, message);
    let mut files = Vec::new();
    for given in flag("file") {
        let relative = safe_path(&given).map_err(|e| format!("--file {e}"))?;
        let path = input.cwd.join(&relative);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            format!("--file {given}: cannot be read ({e}); give a text file of the project")
        })?;
        let text: String = text.chars().take(LARGEST_CONTEXT_FILE).collect();
        files.push((relative.to_string_lossy().to_string(), text));
    }
    let mut critics = Vec::new();
    let mut seat_providers = BTreeMap::new();
    for (name, seat) in &config.seats {
        let role = role_named(name).map_err(|e| located(name, format!("[code.seats] {e}")))?;
        let spec = (input.resolve_provider)(seat.provider.as_deref(), seat.model.as_deref())
            .map_err(|e| located(name, e.to_string()))?;
        seat_providers.insert(role.name.to_string(), spec);
    }
    for name in &config.critics {
        let role = role_named(name).map_err(|e| located("critics", e.to_string()))?;
        if !critics.iter().any(|c: &String| c == role.name) {
            critics.push(role.name.to_string());
        }
    }
    let mut named_critics = Vec::new();
    for given in flag("seat") {
        let (name, provider) = match given.split_once('=') {
            Some((name, provider)) => (name, Some(provider)),
            None => (given.as_str(), None),
        };
        let role = role_named(name).map_err(|e| refused!("--seat {e}"))?;
        if let Some(provider) = provider {
            let (profile, model) = super::super::provider_and_model(provider);
            if profile.is_none() && model.is_none() {
                return Err(refused!(
                    "--seat {given}: say which provider after `=`, as in --seat {}=ollama:qwen2.5-coder",
                    role.name
                ));
            }
            let spec = (input.resolve_provider)(profile, model)
                .map_err(|e| format!("--seat {given}: {e}"))?;
            seat_providers.insert(role.name.to_string(), spec);
        }
        if !FIXED_SEATS.contains(&role.name) && !named_critics.contains(&role.name.to_string()) {
            named_critics.push(role.name.to_string());
        }
    }
    if !named_critics.is_empty() {
        critics = named_critics;
    }
    if critics.is_empty() {
        critics = default_critics();
    }
    let max_attempts = match flag("max-attempts").first() {
        Some(n) => n
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=10).contains(n))
            .ok_or_else(|| format!("--max-attempts takes 1–10, not {n:?}"))?,
        None => match config.max_attempts {
            Some(n) if !(1..=10).contains(&n) => {
                return Err(located(
                    "max_attempts",
                    format!("max_attempts takes 1–10, not {n}"),
                ));
            }
            Some(n) => n,
            None => 3,
        },
    };
    let self_check = match config.self_check {
        Some(n) if n > 2 => {
            return Err(located(
                "self_check",
                format!("self_check refines at most 2 times, not {n}"),
            ));
        }
        Some(n) => n,
        None => 2,
    };
    let min_fix_confidence = match config.min_fix_confidence {
        Some(c) if !(0.0..=1.0).contains(&c) => {
            return Err(located(
                "min_fix_confidence",
                format!("min_fix_confidence is a confidence from 0 to 1, not {c}"),
            ));
        }
        Some(c) => c,
        None => DEFAULT_MIN_FIX_CONFIDENCE,
    };
    let timeout = match config.hook_timeout {
        Some(s) if !(1..=86_400).contains(&s) => {
            return Err(located(
                "hook_timeout",
                format!("hook_timeout is 1 second to a day, not {s}"),
            ));
        }
        Some(s) => Duration::from_secs(s),
        None => Duration::from_secs(300),
    };
    let output_cap = match config.output_cap {
        Some(n) if !(256..=4 * 1024 * 1024).contains(&n) => {
            return Err(located(
                "output_cap",
                format!("output_cap is 256 bytes to 4 MiB, not {n}"),
            ));
        }
        Some(n) => n,
        None => 16 * 1024,
    };
    let mut limits = crate::code::sandbox::Limits::default();
    match config.hook_processes {
        Some(n) if !(8..=1_000_000).contains(&n) => {
            return Err(located(
                "hook_processes",
                format!("hook_processes is 8 to 1000000 processes, not {n}"),
            ));
        }
        Some(n) => limits.processes = n,
        None => {}
    }
    match config.hook_memory_mb {
        Some(n) if !(64..=16 * 1024 * 1024).contains(&n) => {
            return Err(located(
                "hook_memory_mb",
                format!("hook_memory_mb is 64 MiB to 16 TiB, not {n}"),
            ));
        }
        Some(n) => limits.memory_mb = n,
        None => {}
    }
    let mut skip = Vec::new();
    let given_skips = flag("skip");
    for name in config.skip.iter().chain(given_skips.iter()) {
        let phase = phase_named(name).ok_or_else(|| {
            let message = format!(
                "{name:?} is not a phase that can be left out; those are clarification, self-check, critique, review, optimization"
            );
            if given_skips.contains(name) {
                refused!("--skip {message}")
            } else {
                located("skip", message)
            }
        })?;
        if !skip.contains(&phase) {
            skip.push(phase);
        }
    }
    let language = flag("lang").first().map(|l| language(l)).transpose()?;
    let test = flag("test")
        .first()
        .cloned()
        .or(config.hooks.unit.clone())
        .or_else(|| crate::code::detect::test_command(input.cwd));
    let unsandboxed = input.flags.contains_key("unsandboxed-hooks");
    let hook = |name: &str, command: String| Hook {
        name: name.into(),
        command,
        timeout,
        output_cap,
        unsandboxed,
        limits,
    };
    let mut hooks = Vec::new();
    if let Some(test) = test {
        hooks.push(hook("test", test));
    }
    if let Some(lint) = flag("lint").first().cloned().or(config.hooks.lint.clone()) {
        hooks.push(hook("lint", lint));
    }
    for (name, command) in [
        ("analysis", &config.hooks.analysis),
        ("security", &config.hooks.security),
        ("bench", &config.hooks.bench),
    ] {
        if let Some(command) = command {
            hooks.push(hook(name, command.clone()));
        }
    }
    let settings = CodeSettings {
        origin: input.cwd.to_path_buf(),
        worktrees: std::env::temp_dir(),
        files,
        hooks_note: hooks.is_empty().then(|| {
            "No --test was given, none is in [code.hooks] and none was detected: the debate ran without hooks, so no version is known to pass.".into()
        }),
        hooks,
        red_blue: input.flags.contains_key("red-blue"),
        keep: input.flags.contains_key("keep"),
        blind_first: input
            .flags
            .contains_key(crate::protocol::kit::BLIND_FIRST_FLAG.name),
        max_attempts,
        critics,
        language,
        skip,
        self_check,
        min_fix_confidence,
        seat_providers,
        in_git: crate::code::worktree::in_git(input.cwd),
        rehearsal: false,
    };
    Ok(settings)
}
