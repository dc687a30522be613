//! The panel's settings: its options, judges, context files, rounds and threshold, from the
//! flags and `[panel]` in config.

use crate::protocol::refused;
use crate::protocol::{SettingsError, SettingsInput};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::Path;

/// The most options a panel takes (one letter each).
const MAX_OPTIONS: usize = 26;
/// Bytes of `--context` text every judge sees, by default.
const CONTEXT_BUDGET: usize = 16_000;

/// One option the panel judges.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct PanelOption {
    pub id: String,
    pub label: String,
    #[serde(default)]
    pub description: String,
}

impl PanelOption {
    /// ` — description` after its label, or nothing when it has none.
    pub fn dashed_description(&self) -> String {
        if self.description.is_empty() {
            String::new()
        } else {
            format!(" — {}", self.description)
        }
    }
}

/// One judge: a name, the stance it must keep, and how it judges.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Judge {
    pub name: String,
    pub stance: String,
    pub instruction: String,
    /// Words its stance speaks in; a judge that uses none of them has dropped its stance.
    #[serde(default)]
    pub vocabulary: Vec<String>,
    /// Its provider snapshot, when it is not the debate's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<Value>,
}

/// A share of the judges, compared exactly: 2 of 3 reaches two thirds (the voting module's
/// share, which the panel's consensus check counts with).
pub use crate::vote::Share as Threshold;

/// Everything the panel is configured with; snapshotted with the debate.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PanelSettings {
    /// Empty: the moderator proposes them and the person accepts or edits them.
    pub options: Vec<PanelOption>,
    pub judges: Vec<Judge>,
    /// The spec context every judge sees, already trimmed to the budget.
    pub context: String,
    /// What was left out of the context to fit the budget.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context_cut: Vec<String>,
    pub max_rounds: u32,
    pub consensus_threshold: Threshold,
    pub timeout_per_judge: u64,
    pub require_stance_maintenance: bool,
    pub require_change_documentation: bool,
    pub anonymous: bool,
    /// `--blind-first` was asked (round 1 is blind in every panel; the record says so).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub blind_first: bool,
}

/// `[panel]` in config, with the note's names.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub(super) struct PanelConfig {
    max_rounds: Option<u32>,
    consensus_threshold: Option<f64>,
    timeout_per_judge: Option<u64>,
    require_stance_maintenance: Option<bool>,
    require_change_documentation: Option<bool>,
    context_budget: Option<usize>,
    anonymous: Option<bool>,
    options: Vec<PanelOption>,
    judges: Vec<JudgeConfig>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct JudgeConfig {
    name: String,
    stance: String,
    #[serde(default)]
    instruction: String,
    provider: Option<String>,
    model: Option<String>,
}

/// Risk, Value and Effort, as the note seats them.
pub(super) fn default_judges() -> Vec<Judge> {
    let judge = |name: &str, stance: &str, instruction: &str, words: &[&str]| Judge {
        name: name.into(),
        stance: stance.into(),
        instruction: instruction.into(),
        vocabulary: words.iter().map(|w| w.to_string()).collect(),
        provider: None,
    };
    vec![
        judge(
            "Risk",
            "skeptical: minimise risk",
            "Always challenge optimism: find what can fail, the hidden complexity, the bugs that \
             only show after weeks of real use, and the cost of being wrong.",
            &[
                "risk",
                "fail",
                "complex",
                "bug",
                "danger",
                "uncertain",
                "break",
                "safe",
                "debt",
                "incident",
            ],
        ),
        judge(
            "Value",
            "optimistic: maximise user value",
            "Always push for more: what users gain, which needs go unmet, what sets the product \
             apart, and the cost of doing too little.",
            &[
                "user",
                "value",
                "customer",
                "benefit",
                "need",
                "advantage",
                "revenue",
                "gain",
                "experience",
            ],
        ),
        judge(
            "Effort",
            "pragmatic: optimise return on investment",
            "Always ground it in reality: the effort, the timeline, what ships first, and how \
             much value each unit of work buys.",
            &[
                "effort", "cost", "time", "roi", "ship", "week", "simple", "timeline", "return",
                "work",
            ],
        ),
    ]
}

/// The words of a custom judge's stance and instruction that carry it (five letters or more).
pub(super) fn vocabulary_of(stance: &str, instruction: &str) -> Vec<String> {
    let mut words: Vec<String> = format!("{stance} {instruction}")
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 5)
        .map(|w| w.to_lowercase())
        .collect();
    words.sort();
    words.dedup();
    words
}

/// How an option is written on the command line, shown when one is written wrong.
const OPTION_EXAMPLE: &str = "--option \"A: Local-first sync — full offline editing\"";

/// What is wrong with a panel's options, wherever they came from: the command line, the
/// moderator's reply or the person's edit at the checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionError {
    #[error("option {0:?} has no id: write it as {OPTION_EXAMPLE}")]
    NoId(String),
    #[error("option {0:?}: the id must be one letter (A–Z), as in {OPTION_EXAMPLE}")]
    BadId(String),
    #[error("option {0} has no label: write it as {OPTION_EXAMPLE}")]
    NoLabelWritten(String),
    #[error("option {0} has no label")]
    NoLabel(String),
    #[error("{0} options given; a panel takes at most {MAX_OPTIONS} (one letter each)")]
    TooMany(usize),
    #[error("option id {0} is given twice; every option needs its own letter")]
    Twice(String),
    #[error("at least two options are needed")]
    TooFew,
    #[error("only one option ({0}) given; a panel needs at least two to judge")]
    OnlyOne(String),
}

impl From<OptionError> for SettingsError {
    fn from(error: OptionError) -> SettingsError {
        SettingsError::from(error.to_string())
    }
}

impl From<OptionError> for crate::engine::Unusable {
    fn from(error: OptionError) -> crate::engine::Unusable {
        crate::engine::Unusable(error.to_string())
    }
}

/// Parses `--option "A: Local-first sync — full offline editing"` (the description after an
/// em dash, ` - ` or ` -- ` is optional).
pub fn parse_option(text: &str) -> Result<PanelOption, OptionError> {
    let (id, rest) = text
        .split_once(':')
        .ok_or_else(|| OptionError::NoId(text.to_string()))?;
    let id = id.trim().to_uppercase();
    if id.len() != 1 || !id.chars().all(|c| c.is_ascii_uppercase()) {
        return Err(OptionError::BadId(text.to_string()));
    }
    let (label, description) = ["—", " -- ", " - "]
        .iter()
        .find_map(|dash| rest.split_once(dash))
        .unwrap_or((rest, ""));
    let label = label.trim();
    if label.is_empty() {
        return Err(OptionError::NoLabelWritten(id));
    }
    Ok(PanelOption {
        id,
        label: label.to_string(),
        description: description.trim().to_string(),
    })
}

/// Refuses duplicate ids, missing labels and too many options.
pub(super) fn check_options(options: &[PanelOption]) -> Result<(), OptionError> {
    if options.len() > MAX_OPTIONS {
        return Err(OptionError::TooMany(options.len()));
    }
    for (index, option) in options.iter().enumerate() {
        if option.label.trim().is_empty() {
            return Err(OptionError::NoLabel(option.id.clone()));
        }
        if options[..index].iter().any(|o| o.id == option.id) {
            return Err(OptionError::Twice(option.id.clone()));
        }
    }
    Ok(())
}

/// Reads `--context` paths (files, or directories of text files) into one text within
/// `budget` bytes, listing what was cut.
pub(super) fn read_context(
    paths: &[String],
    cwd: &Path,
    budget: usize,
) -> Result<(String, Vec<String>), SettingsError> {
    let mut files = Vec::new();
    for given in paths {
        let path = cwd.join(given);
        if !path.exists() {
            return Err(refused!(
                "--context {given}: no such file or directory (give a spec file or a docs directory)"
            ));
        }
        collect_files(&path, &mut files)
            .map_err(|e| refused!("--context {given}: cannot be read ({e})"))?;
    }
    let mut text = String::new();
    let mut cut = Vec::new();
    for file in files {
        let Ok(content) = std::fs::read_to_string(&file) else {
            // Not text (an image, say): nothing a judge could read.
            continue;
        };
        // Named as the person gave it, under the working directory, never by its absolute
        // path (seed review 000/001 #14: the result's notes carried the whole path).
        let shown = file
            .strip_prefix(cwd)
            .unwrap_or(&file)
            .display()
            .to_string();
        let header = format!("## {shown}\n\n");
        let room = budget.saturating_sub(text.len() + header.len());
        if room == 0 {
            cut.push(format!(
                "{shown} (left out: the context budget of {budget} bytes was used)"
            ));
            continue;
        }
        text.push_str(&header);
        if content.len() > room {
            let end = content.floor_char_boundary(room);
            text.push_str(&content[..end]);
            cut.push(format!(
                "{shown} (cut after {end} of {} bytes)",
                content.len()
            ));
        } else {
            text.push_str(&content);
        }
        text.push_str("\n\n");
    }
    Ok((text.trim_end().to_string(), cut))
}

fn collect_files(path: &Path, out: &mut Vec<std::path::PathBuf>) -> std::io::Result<()> {
    if path.is_file() {
        out.push(path.to_path_buf());
        return Ok(());
    }
    let mut entries: Vec<_> = std::fs::read_dir(path)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            !p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with('.'))
        })
        .collect();
    entries.sort();
    for entry in entries {
        collect_files(&entry, out)?;
    }
    Ok(())
}

/// Reads `--option`, `--context`, `--anonymous`, `--max-rounds` and `[panel]` into the panel's
/// settings; the context files are read here, within their budget.
pub(super) fn build(input: &SettingsInput<'_>) -> Result<PanelSettings, SettingsError> {
    let located = |key: &str, message: String| input.located("panel", key, message);
    let config: PanelConfig = input.table("panel")?;
    let flag = |name: &str| input.flags.get(name).cloned().unwrap_or_default();
    let options = options(input, &config)?;
    let threshold = match config.consensus_threshold {
        Some(value) => Threshold::from_decimal(value)
            .map_err(|m| located("consensus_threshold", m.to_string()))?,
        None => Threshold::TWO_THIRDS,
    };
    let max_rounds = input.max_rounds.or(config.max_rounds).unwrap_or(2);
    if !(1..=10).contains(&max_rounds) {
        let problem = format!("a panel runs 1–10 rounds, not {max_rounds}");
        return Err(match input.max_rounds {
            Some(_) => refused!("--max-rounds: {problem}"),
            None => located("max_rounds", format!("max_rounds: {problem}")),
        });
    }
    let timeout_per_judge = config.timeout_per_judge.unwrap_or(120);
    if !(1..=crate::engine::LONGEST_WAIT_SECONDS).contains(&timeout_per_judge) {
        return Err(located(
            "timeout_per_judge",
            format!("timeout_per_judge must be 1 second to a year, not {timeout_per_judge}"),
        ));
    }
    let judges = judges(input, &config)?;
    let (context, context_cut) = read_context(
        &flag("context"),
        input.cwd,
        config.context_budget.unwrap_or(CONTEXT_BUDGET),
    )?;
    Ok(PanelSettings {
        options,
        judges,
        context,
        context_cut,
        max_rounds,
        consensus_threshold: threshold,
        timeout_per_judge,
        require_stance_maintenance: config.require_stance_maintenance.unwrap_or(true),
        require_change_documentation: config.require_change_documentation.unwrap_or(true),
        anonymous: input.flags.contains_key("anonymous") || config.anonymous.unwrap_or(false),
        blind_first: input
            .flags
            .contains_key(crate::protocol::kit::BLIND_FIRST_FLAG.name),
    })
}

/// The options from `--option`, else `[[panel.options]]`; none means the moderator proposes
/// them, one is refused.
fn options(
    input: &SettingsInput<'_>,
    config: &PanelConfig,
) -> Result<Vec<PanelOption>, SettingsError> {
    let mut options = Vec::new();
    for text in input.flags.get("option").into_iter().flatten() {
        options.push(parse_option(text)?);
    }
    let from_config = options.is_empty();
    if from_config {
        options = config.options.clone();
        for option in &mut options {
            option.id = option.id.trim().to_uppercase();
        }
    }
    let checked = check_options(&options).and_then(|()| match options.len() {
        1 => Err(OptionError::OnlyOne(options[0].id.clone())),
        _ => Ok(()),
    });
    match checked {
        // Options from the config file are located there (seed review 000/001 #14).
        Err(problem) if from_config => {
            Err(input.located("panel", "[[panel.options]]", problem.to_string()))
        }
        Err(problem) => Err(problem.into()),
        Ok(()) => Ok(options),
    }
}

/// The judges of `[[panel.judges]]` (2–7, each named once, with a stance), each on its own
/// provider when it names one; else the default three.
fn judges(input: &SettingsInput<'_>, config: &PanelConfig) -> Result<Vec<Judge>, SettingsError> {
    let located = |key: &str, message: String| input.located("panel", key, message);
    if config.judges.is_empty() {
        return Ok(default_judges());
    }
    if !(2..=7).contains(&config.judges.len()) {
        return Err(located(
            "[[panel.judges]]",
            format!("a panel takes 2–7 judges, not {}", config.judges.len()),
        ));
    }
    let mut judges = Vec::new();
    for judge in &config.judges {
        if judge.name.trim().is_empty() || judge.stance.trim().is_empty() {
            return Err(located(
                "[[panel.judges]]",
                "every judge needs a name and a stance".into(),
            ));
        }
        if judges
            .iter()
            .any(|j: &Judge| j.name.eq_ignore_ascii_case(&judge.name))
        {
            return Err(located(
                &judge.name,
                format!("judge {:?} is named twice", judge.name),
            ));
        }
        let provider = if judge.provider.is_some() || judge.model.is_some() {
            Some(
                (input.resolve_provider)(judge.provider.as_deref(), judge.model.as_deref())
                    .map_err(|m| located(&judge.name, m.to_string()))?,
            )
        } else {
            None
        };
        judges.push(Judge {
            name: judge.name.trim().to_string(),
            stance: judge.stance.trim().to_string(),
            instruction: judge.instruction.trim().to_string(),
            vocabulary: vocabulary_of(&judge.stance, &judge.instruction),
            provider,
        });
    }
    Ok(judges)
}
