//! The judges' panel (design note 001): judges with fixed stances recommend one of a few
//! options in isolation, then challenge each other until two thirds agree or the rounds run
//! out; the result is RECOMMENDED, or CONTESTED and left to the person.

use super::kit::{self, SeatRoster, Visibility};
use super::prompts::{DATA_RULE, fenced};
use super::{Common, Ending, Flag, Outcome, SettingsError, SettingsInput};
use crate::debate::{
    AskKind, Confidence, Control, Event, FlagKind, MODERATOR, Phase, Presentation, Seat, SidePanel,
    Standing, Turn, TurnKey, TurnStatus,
};
use crate::engine::{
    CheckpointOutcome, Context, EngineError, Reply, ReplyKind, ReplyParser, Transcript,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// The panel, as registered.
pub struct Panel;

/// The most options a panel takes (one letter each).
const MAX_OPTIONS: usize = 26;
/// Bytes of `--context` text every judge sees, by default.
const CONTEXT_BUDGET: usize = 16_000;

/// Schema names, one per reply shape (the stand-in server answers by them).
pub const OPTIONS_SCHEMA: &str = "moot_panel_options";
pub const RECOMMENDATION_SCHEMA: &str = "moot_panel_recommendation";
pub const CHALLENGE_SCHEMA: &str = "moot_panel_challenge";

const FLAGS: &[Flag] = &[
    Flag {
        name: "option",
        value: Some("ID: LABEL — DESCRIPTION"),
        help: "An option the panel judges (repeat for each; default: the moderator proposes them)",
        repeatable: true,
    },
    Flag {
        name: "context",
        value: Some("PATH"),
        help: "A file, or a directory of text files, every seat reads (repeatable; the panel's spec, the dialogue's extra sources)",
        repeatable: true,
    },
    Flag {
        name: "anonymous",
        value: None,
        help: "Show judges to each other as Judge 1, 2, 3 when they challenge each other",
        repeatable: false,
    },
];

/// One option the panel judges.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct PanelOption {
    pub id: String,
    pub label: String,
    #[serde(default)]
    pub description: String,
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
}

/// `[panel]` in config, with the note's names.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
struct PanelConfig {
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
fn default_judges() -> Vec<Judge> {
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
fn vocabulary_of(stance: &str, instruction: &str) -> Vec<String> {
    let mut words: Vec<String> = format!("{stance} {instruction}")
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 5)
        .map(|w| w.to_lowercase())
        .collect();
    words.sort();
    words.dedup();
    words
}

/// Parses `--option "A: Local-first sync — full offline editing"` (the description after an
/// em dash, ` - ` or ` -- ` is optional).
pub fn parse_option(text: &str) -> Result<PanelOption, String> {
    let example = "--option \"A: Local-first sync — full offline editing\"";
    let (id, rest) = text
        .split_once(':')
        .ok_or_else(|| format!("option {text:?} has no id: write it as {example}"))?;
    let id = id.trim().to_uppercase();
    if id.len() != 1 || !id.chars().all(|c| c.is_ascii_uppercase()) {
        return Err(format!(
            "option {text:?}: the id must be one letter (A–Z), as in {example}"
        ));
    }
    let (label, description) = ["—", " -- ", " - "]
        .iter()
        .find_map(|dash| rest.split_once(dash))
        .unwrap_or((rest, ""));
    let label = label.trim();
    if label.is_empty() {
        return Err(format!("option {id} has no label: write it as {example}"));
    }
    Ok(PanelOption {
        id,
        label: label.to_string(),
        description: description.trim().to_string(),
    })
}

/// Refuses duplicate ids, missing labels and too many options.
fn check_options(options: &[PanelOption]) -> Result<(), String> {
    if options.len() > MAX_OPTIONS {
        return Err(format!(
            "{} options given; a panel takes at most {MAX_OPTIONS} (one letter each)",
            options.len()
        ));
    }
    for (index, option) in options.iter().enumerate() {
        if option.label.trim().is_empty() {
            return Err(format!("option {} has no label", option.id));
        }
        if options[..index].iter().any(|o| o.id == option.id) {
            return Err(format!(
                "option id {} is given twice; every option needs its own letter",
                option.id
            ));
        }
    }
    Ok(())
}

/// Reads `--context` paths (files, or directories of text files) into one text within
/// `budget` bytes, listing what was cut.
fn read_context(
    paths: &[String],
    cwd: &Path,
    budget: usize,
) -> Result<(String, Vec<String>), String> {
    let mut files = Vec::new();
    for given in paths {
        let path = cwd.join(given);
        if !path.exists() {
            return Err(format!(
                "--context {given}: no such file or directory (give a spec file or a docs directory)"
            ));
        }
        collect_files(&path, &mut files)
            .map_err(|e| format!("--context {given}: cannot be read ({e})"))?;
    }
    let mut text = String::new();
    let mut cut = Vec::new();
    for file in files {
        let Ok(content) = std::fs::read_to_string(&file) else {
            // Not text (an image, say): nothing a judge could read.
            continue;
        };
        let header = format!("## {}\n\n", file.display());
        let room = budget.saturating_sub(text.len() + header.len());
        if room == 0 {
            cut.push(format!(
                "{} (left out: the context budget of {budget} bytes was used)",
                file.display()
            ));
            continue;
        }
        text.push_str(&header);
        if content.len() > room {
            let end = content.floor_char_boundary(room);
            text.push_str(&content[..end]);
            cut.push(format!(
                "{} (cut after {end} of {} bytes)",
                file.display(),
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

impl super::Protocol for Panel {
    fn name(&self) -> &'static str {
        "panel"
    }

    fn description(&self) -> &'static str {
        "judges with fixed stances (Risk, Value, Effort) recommend an option in isolation, then \
         challenge each other; two thirds agreeing is RECOMMENDED, else CONTESTED"
    }

    fn flags(&self) -> &'static [Flag] {
        FLAGS
    }

    fn settings(&self, input: &SettingsInput<'_>) -> Result<Value, SettingsError> {
        let located = |key: &str, message: String| input.located("panel", key, message);
        let config: PanelConfig = input.table("panel")?;
        let flag = |name: &str| input.flags.get(name).cloned().unwrap_or_default();
        let mut options = Vec::new();
        for text in flag("option") {
            options.push(parse_option(&text)?);
        }
        if options.is_empty() {
            options = config.options.clone();
            for option in &mut options {
                option.id = option.id.trim().to_uppercase();
            }
            check_options(&options).map_err(|m| located("[[panel.options]]", m))?;
        } else {
            check_options(&options)?;
        }
        if options.len() == 1 {
            return Err(format!(
                "only one option ({}) given; a panel needs at least two to judge",
                options[0].id
            ));
        }
        let threshold = match config.consensus_threshold {
            Some(value) => {
                Threshold::from_decimal(value).map_err(|m| located("consensus_threshold", m))?
            }
            None => Threshold::TWO_THIRDS,
        };
        let max_rounds = input.max_rounds.or(config.max_rounds).unwrap_or(2);
        if !(1..=10).contains(&max_rounds) {
            let problem = format!("a panel runs 1–10 rounds, not {max_rounds}");
            return Err(match input.max_rounds {
                Some(_) => format!("--max-rounds: {problem}"),
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
        let judges = if config.judges.is_empty() {
            default_judges()
        } else {
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
                            .map_err(|m| located(&judge.name, m))?,
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
            judges
        };
        let (context, context_cut) = read_context(
            &flag("context"),
            input.cwd,
            config.context_budget.unwrap_or(CONTEXT_BUDGET),
        )?;
        let settings = PanelSettings {
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
        };
        serde_json::to_value(&settings).map_err(|e| e.to_string())
    }

    fn unsettled(&self, outcome: &Value) -> Option<String> {
        (outcome.get("consensus") == Some(&Value::Bool(false)))
            .then(|| "the judges disagreed (CONTESTED)".to_string())
    }

    /// Round 1 is each judge alone with the question: no earlier panel's judges reach it,
    /// not even through lessons.
    fn withholds_lessons(&self) -> fn(&crate::debate::TurnKey) -> bool {
        |key| key.round == 1 && key.phase == Phase::Recommendation
    }

    fn presentation(&self) -> Presentation {
        Presentation {
            seat_role: "judge".into(),
            panels: vec![SidePanel::Standings],
            outcome_title: "Result".into(),
            follow_up: false,
            opening: "The moderator is framing the options to judge…".into(),
            round_name: "round".into(),
            rounds_of_their_own: Vec::new(),
        }
    }

    fn run<'a>(
        &'a self,
        ctx: &'a Context,
        common: &'a Common,
        settings: &'a Value,
    ) -> super::Run<'a> {
        Box::pin(async move {
            let settings: PanelSettings = kit::stored(settings, "the panel's")?;
            run(ctx, common, &settings).await
        })
    }

    fn decide(&self, outcome: &Value, choice: &str, by: &str) -> Result<Outcome, String> {
        let mut result: PanelResult = serde_json::from_value(outcome.clone())
            .map_err(|e| format!("the stored result cannot be read: {e}"))?;
        if result.consensus {
            return Err(format!(
                "the judges agreed on option {}; there is nothing to decide",
                result.recommended_option.as_deref().unwrap_or("?")
            ));
        }
        let choice = choice.trim().to_uppercase();
        if !result.options.iter().any(|o| o.id == choice) {
            return Err(format!(
                "there is no option {choice:?}; choose one of {}",
                result
                    .options
                    .iter()
                    .map(|o| o.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        result.chosen = Some(Chosen {
            option: choice,
            by: by.to_string(),
        });
        Ok(result.outcome())
    }
}

/// A judge at the table.
struct Seated {
    seat: Seat,
    judge: Judge,
    /// The key its words are filed under in the result: `risk`.
    key: String,
    /// Its latest valid recommendation and one-line perspective.
    recommended: Option<String>,
    perspective: String,
    reasoning: String,
    /// Options in the order this judge sees them.
    order: Vec<String>,
    /// Every option, best first, and how sure it is (0–1), when `--vote` asks for a ranking.
    ranking: Vec<String>,
    confidence: f64,
}

/// A change of mind.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Change {
    pub judge: String,
    pub round: u32,
    pub from: String,
    pub to: String,
    pub reason: String,
}

/// The option the person chose for a contested result.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Chosen {
    pub option: String,
    pub by: String,
}

/// The panel's typed result, with the note's field names (`debate_result`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PanelResult {
    pub question_id: String,
    pub question: String,
    pub consensus: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recommended_option: Option<String>,
    /// `CONTESTED` when the judges disagree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// `HIGH` or `REQUIRES_INPUT`.
    pub confidence: String,
    /// Option id → judges recommending it at the end (contested results).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub distribution: BTreeMap<String, Vec<String>>,
    /// `risk` → "Option A - …" (consensus), or `risk_favors` → the quoted reasoning.
    pub perspectives: BTreeMap<String, String>,
    pub change_log: Vec<Change>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_prompt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chosen: Option<Chosen>,
    pub options: Vec<PanelOption>,
    pub rounds: u32,
    pub threshold: String,
    /// Judges that gave a valid recommendation at the end, and how many of them back the
    /// leading option.
    #[serde(default)]
    pub voters: usize,
    #[serde(default)]
    pub agreeing: usize,
    /// How a ranked vote (`--vote`) decided, when one did: the method and each option's points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    /// Judge → the order it saw the options in (against position bias).
    pub option_order: BTreeMap<String, Vec<String>>,
    /// Judges left out, flags, what the context lost.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    pub date: String,
}

impl PanelResult {
    fn label(&self, id: &str) -> String {
        self.options
            .iter()
            .find(|o| o.id == id)
            .map(|o| format!("{id}: {}", o.label))
            .unwrap_or_else(|| id.to_string())
    }

    /// The record, in prose.
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# Panel result: {}\n", self.question.trim());
        let _ = writeln!(out, "**Debate:** {}\n", self.question_id);
        if self.consensus {
            let option = self.recommended_option.as_deref().unwrap_or("?");
            let _ = writeln!(
                out,
                "**Outcome:** RECOMMENDED — option {}\n",
                self.label(option)
            );
            match &self.decided_by {
                Some(decided_by) => {
                    let _ = writeln!(
                        out,
                        "**Confidence:** HIGH (every judge ranked every option; decided by {decided_by})\n"
                    );
                }
                None => {
                    let _ = writeln!(
                        out,
                        "**Confidence:** HIGH ({} of {} judges agreed; threshold {})\n",
                        self.agreeing, self.voters, self.threshold
                    );
                }
            }
        } else {
            let _ = writeln!(out, "**Outcome:** CONTESTED — the judges disagree\n");
            let _ = writeln!(out, "**Confidence:** REQUIRES_INPUT\n");
            match &self.chosen {
                Some(chosen) => {
                    let _ = writeln!(
                        out,
                        "**Chosen:** option {} by {}\n",
                        self.label(&chosen.option),
                        chosen.by
                    );
                }
                None => {
                    let _ = writeln!(
                        out,
                        "**Chosen:** not yet (`moot decide {} OPTION`)\n",
                        self.question_id
                    );
                }
            }
        }
        let _ = writeln!(out, "## Options\n");
        for option in &self.options {
            let backers = self
                .distribution
                .get(&option.id)
                .map(|j| j.join(", "))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "- **{}: {}**{}{}",
                option.id,
                option.label,
                if option.description.is_empty() {
                    String::new()
                } else {
                    format!(" — {}", option.description)
                },
                if self.consensus || backers.is_empty() {
                    String::new()
                } else {
                    format!(" (favoured by {backers})")
                }
            );
        }
        let _ = writeln!(out, "\n## Perspectives\n");
        for (judge, words) in &self.perspectives {
            let _ = writeln!(
                out,
                "- **{}:** {}",
                judge.replace("_favors", " favours"),
                words.trim()
            );
        }
        if !self.change_log.is_empty() {
            let _ = writeln!(out, "\n## Change log\n");
            for change in &self.change_log {
                let _ = writeln!(
                    out,
                    "- {} (round {}): {} → {} — {}",
                    change.judge, change.round, change.from, change.to, change.reason
                );
            }
        }
        if let Some(prompt) = self.user_prompt.as_ref().filter(|_| self.chosen.is_none()) {
            let _ = writeln!(out, "\n## Your decision\n\n{}", prompt.trim());
        }
        if !self.notes.is_empty() {
            let _ = writeln!(out, "\n## Notes\n");
            for note in &self.notes {
                let _ = writeln!(out, "- {note}");
            }
        }
        out
    }

    pub fn outcome(&self) -> Outcome {
        Outcome {
            markdown: self.to_markdown(),
            confidence: if self.consensus {
                Confidence::High
            } else {
                Confidence::RequiresInput
            },
            data: serde_json::to_value(self).unwrap_or_default(),
            section: Some("debate_result".into()),
            date: self.date.clone(),
        }
    }
}

/// The consensus check over the judges' current recommendations.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// The option that reached the threshold.
    pub consensus: Option<String>,
    /// Option id → judge keys recommending it, every option listed.
    pub distribution: BTreeMap<String, Vec<String>>,
    /// Judges that gave a valid recommendation.
    pub voters: usize,
    /// How a ranked vote (`--vote`) decided, when one did: the method and its points.
    pub decided_by: Option<String>,
}

/// Consensus when the largest share of valid recommendations reaches the threshold, with at
/// least two of them; a tie for the largest share is no consensus.
pub fn check(
    options: &[PanelOption],
    votes: &[(String, Option<String>)],
    threshold: Threshold,
) -> Check {
    let mut distribution: BTreeMap<String, Vec<String>> =
        options.iter().map(|o| (o.id.clone(), Vec::new())).collect();
    let mut voters = 0;
    for (judge, vote) in votes {
        if let Some(option) = vote
            && let Some(backers) = distribution.get_mut(option)
        {
            backers.push(judge.clone());
            voters += 1;
        }
    }
    // The threshold method of the voting module decides; a panel also needs two voices.
    let candidates: Vec<String> = options.iter().map(|o| o.id.clone()).collect();
    let ballots: Vec<crate::vote::Ballot> = votes
        .iter()
        .map(|(judge, vote)| crate::vote::Ballot {
            voter: judge.clone(),
            ranking: vote.iter().cloned().collect(),
            confidence: 1.0,
            weight: 1.0,
        })
        .collect();
    let counted = crate::vote::tally(
        crate::vote::Method::Threshold,
        &candidates,
        &ballots,
        threshold,
    );
    let consensus = counted.winner.filter(|_| voters >= 2);
    Check {
        consensus,
        distribution,
        voters,
        decided_by: None,
    }
}

/// The consensus check when `--vote` asks every judge to rank every option: the method
/// decides on the full rankings (a judge's first place still fills the distribution), and
/// consensus needs two voices and the method's own consensus.
pub fn check_ranked(
    options: &[PanelOption],
    ballots: &[crate::vote::Ballot],
    method: crate::vote::Method,
    threshold: Threshold,
) -> Check {
    let firsts: Vec<(String, Option<String>)> = ballots
        .iter()
        .map(|b| (b.voter.clone(), b.ranking.first().cloned()))
        .collect();
    let by_first = check(options, &firsts, threshold);
    let candidates: Vec<String> = options.iter().map(|o| o.id.clone()).collect();
    let counted = crate::vote::tally(method, &candidates, ballots, threshold);
    let points = candidates
        .iter()
        .zip(&counted.points)
        .map(|(id, p)| format!("{id} {p:.1}"))
        .collect::<Vec<_>>()
        .join(" · ");
    Check {
        consensus: counted
            .winner
            .clone()
            .filter(|_| counted.consensus_reached && by_first.voters >= 2),
        decided_by: Some(format!(
            "{}{}: {points}",
            counted.method,
            if counted.fallback_used {
                " (Condorcet cycle: Borda decided)"
            } else {
                ""
            }
        )),
        ..by_first
    }
}

/// A deterministic shuffle of the options for one judge (from the debate and the judge, so a
/// resume shows the same order).
fn order_for(debate_id: &str, judge: &str, options: &[PanelOption]) -> Vec<String> {
    let mut state: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in debate_id.bytes().chain(judge.bytes()) {
        state ^= u64::from(byte);
        state = state.wrapping_mul(0x0100_0000_01b3);
    }
    let mut ids: Vec<String> = options.iter().map(|o| o.id.clone()).collect();
    for index in (1..ids.len()).rev() {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let pick = ((state >> 33) % (index as u64 + 1)) as usize;
        ids.swap(index, pick);
    }
    ids
}

fn options_text(options: &[PanelOption], order: &[String]) -> String {
    order
        .iter()
        .filter_map(|id| options.iter().find(|o| &o.id == id))
        .map(|o| {
            if o.description.is_empty() {
                format!("- [{}] {}", o.id, o.label)
            } else {
                format!("- [{}] {} — {}", o.id, o.label, o.description)
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The options as a list in their own order.
fn listed(options: &[PanelOption]) -> String {
    let ids: Vec<String> = options.iter().map(|o| o.id.clone()).collect();
    options_text(options, &ids)
}

fn option_ids(options: &[PanelOption]) -> Vec<Value> {
    options.iter().map(|o| json!(o.id)).collect()
}

fn options_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "options": {
                "type": "array", "minItems": 2, "maxItems": 4,
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "enum": ["A", "B", "C", "D"]},
                        "label": {"type": "string", "maxLength": 80},
                        "description": {"type": "string", "maxLength": 300}
                    },
                    "required": ["id", "label", "description"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["options"],
        "additionalProperties": false
    })
}

fn recommendation_schema(options: &[PanelOption]) -> Value {
    json!({
        "type": "object",
        "properties": {
            "reasoning": {"type": "string", "maxLength": 2000},
            "assessments": {
                "type": "array", "minItems": options.len(), "maxItems": options.len(),
                "items": {
                    "type": "object",
                    "properties": {
                        "option": {"type": "string", "enum": option_ids(options)},
                        "assessment": {"type": "string", "maxLength": 400}
                    },
                    "required": ["option", "assessment"],
                    "additionalProperties": false
                }
            },
            "recommended": {"type": "string", "enum": option_ids(options)},
            "perspective": {"type": "string", "maxLength": 160}
        },
        "required": ["reasoning", "assessments", "recommended", "perspective"],
        "additionalProperties": false
    })
}

/// A judge's schema with every option to rank and a confidence, for a ranked vote.
fn with_ranking(mut schema: Value, options: &[PanelOption]) -> Value {
    let ids = option_ids(options);
    schema["properties"]["ranking"] = json!({
        "type": "array", "minItems": ids.len(), "maxItems": ids.len(),
        "items": {"type": "string", "enum": ids},
        "description": "Every option once, best first; your recommendation first."
    });
    schema["properties"]["confidence"] = json!({"type": "number", "minimum": 0, "maximum": 1});
    if let Some(required) = schema["required"].as_array_mut() {
        required.push(json!("ranking"));
        required.push(json!("confidence"));
    }
    schema
}

fn challenge_schema(options: &[PanelOption], others: &[String]) -> Value {
    json!({
        "type": "object",
        "properties": {
            "reasoning": {"type": "string", "maxLength": 2000},
            "challenges": {
                "type": "array", "minItems": others.len(), "maxItems": others.len(),
                "items": {
                    "type": "object",
                    "properties": {
                        "judge": {"type": "string", "enum": others},
                        "counter_argument": {"type": "string", "maxLength": 600}
                    },
                    "required": ["judge", "counter_argument"],
                    "additionalProperties": false
                }
            },
            "recommended": {"type": "string", "enum": option_ids(options)},
            "change_reason": {"type": "string", "maxLength": 600},
            "perspective": {"type": "string", "maxLength": 160}
        },
        "required": ["reasoning", "challenges", "recommended", "change_reason", "perspective"],
        "additionalProperties": false
    })
}

/// The moderator's proposed options.
struct OptionsReplies;

impl ReplyParser for OptionsReplies {
    fn parse(&self, reply: &Value, _: &Transcript<'_>) -> Result<Reply, String> {
        let options: Vec<PanelOption> = serde_json::from_value(
            reply.get("options").cloned().unwrap_or(Value::Null),
        )
        .map_err(|e| format!("`options` must be a list of {{id, label, description}}: {e}"))?;
        let mut options: Vec<PanelOption> = options
            .into_iter()
            .map(|o| PanelOption {
                id: o.id.trim().to_uppercase(),
                ..o
            })
            .collect();
        options.truncate(4);
        check_options(&options)?;
        if options.len() < 2 {
            return Err("propose at least two options".into());
        }
        Ok(Reply {
            content: listed(&options),
            data: Some(json!({"options": options})),
            ..Reply::default()
        })
    }
}

/// A judge's recommendation (round 1) or challenge (later rounds): the recommended option must
/// be one of the options; a challenge must answer every other judge, and a changed
/// recommendation must say what convinced it.
struct JudgeReplies {
    options: Vec<String>,
    order: Vec<String>,
    /// The other judges this one must challenge (empty in round 1).
    others: Vec<String>,
    require_reason: bool,
    /// Every option must be ranked, the recommendation first, with a confidence.
    ranked: bool,
}

impl ReplyParser for JudgeReplies {
    fn parse(&self, reply: &Value, transcript: &Transcript<'_>) -> Result<Reply, String> {
        let text = |field: &str| {
            reply
                .get(field)
                .and_then(Value::as_str)
                .map(str::trim)
                .unwrap_or("")
                .to_string()
        };
        let recommended = text("recommended").to_uppercase();
        if !self.options.contains(&recommended) {
            return Err(format!(
                "`recommended` must be one of {}, not {:?}",
                self.options.join(", "),
                recommended
            ));
        }
        let reasoning = text("reasoning");
        if reasoning.is_empty() {
            return Err("`reasoning` is empty: explain the recommendation".into());
        }
        let mut data = json!({
            "recommended": recommended,
            "perspective": text("perspective"),
            "order": self.order,
        });
        if self.ranked {
            let ranking: Vec<String> = reply
                .get("ranking")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(|s| s.trim().to_uppercase()))
                .collect();
            let mut sorted = ranking.clone();
            sorted.sort();
            sorted.dedup();
            let mut all = self.options.clone();
            all.sort();
            if sorted != all || ranking.len() != all.len() {
                return Err(format!(
                    "`ranking` must list every option once ({}), best first",
                    self.options.join(", ")
                ));
            }
            if ranking.first() != Some(&recommended) {
                return Err(format!(
                    "`ranking` must start with your recommendation {recommended}"
                ));
            }
            let confidence = reply
                .get("confidence")
                .and_then(Value::as_f64)
                .filter(|c| (0.0..=1.0).contains(c))
                .ok_or("`confidence` must be a number from 0 to 1")?;
            data["ranking"] = json!(ranking);
            data["confidence"] = json!(confidence);
        }
        if let Some(assessments) = reply.get("assessments").and_then(Value::as_array) {
            data["assessments"] = Value::Array(assessments.clone());
        }
        if !self.others.is_empty() {
            let challenges = reply
                .get("challenges")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let answered: Vec<String> = challenges
                .iter()
                .filter(|c| {
                    c.get("counter_argument")
                        .and_then(Value::as_str)
                        .is_some_and(|t| !t.trim().is_empty())
                })
                .filter_map(|c| c.get("judge").and_then(Value::as_str).map(str::to_string))
                .collect();
            let missing: Vec<&String> = self
                .others
                .iter()
                .filter(|o| !answered.contains(o))
                .collect();
            if !missing.is_empty() {
                return Err(format!(
                    "`challenges` must hold one specific counter-argument to each other judge; missing: {}",
                    missing
                        .iter()
                        .map(|m| m.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            data["challenges"] = Value::Array(challenges);
            let previous = transcript
                .turns
                .iter()
                .rev()
                .filter(|t| {
                    t.seat == transcript.key.seat
                        && t.round < transcript.key.round
                        && t.status == TurnStatus::Ok
                })
                .find_map(|t| {
                    t.data
                        .as_ref()?
                        .get("recommended")?
                        .as_str()
                        .map(str::to_string)
                });
            let reason = text("change_reason");
            if let Some(previous) = previous.filter(|p| *p != recommended) {
                if self.require_reason && reason.split_whitespace().count() < 3 {
                    return Err(format!(
                        "you changed your recommendation from {previous} to {recommended}; say exactly \
                         what convinced you in `change_reason`"
                    ));
                }
                data["changed_from"] = json!(previous);
                data["change_reason"] = json!(reason);
            }
        }
        Ok(Reply {
            content: reasoning,
            data: Some(data),
            ..Reply::default()
        })
    }
}

/// What a judge shows of itself to the others: its name, or `Judge N` when anonymous.
fn shown_name(seated: &[Seated], index: usize, anonymous: bool) -> String {
    if anonymous {
        format!("Judge {}", index + 1)
    } else {
        seated[index].judge.name.clone()
    }
}

/// A judge's system prompt; `kit::structured_speech` appends the reply schema.
fn judge_system(judge: &Judge) -> String {
    format!(
        "You are the {} judge on a decision panel, with a {} stance that you must keep. {}\n\n\
         {DATA_RULE}",
        judge.name, judge.stance, judge.instruction
    )
}

fn base_prompt(
    question: &str,
    settings: &PanelSettings,
    options: &[PanelOption],
    order: &[String],
) -> String {
    let mut prompt = format!(
        "Question: {question}\n\nOptions:\n{}\n",
        options_text(options, order)
    );
    if !settings.context.is_empty() {
        let _ = write!(prompt, "\nSpec context:\n{}\n", settings.context);
    }
    prompt
}

async fn run(
    ctx: &Context,
    common: &Common,
    settings: &PanelSettings,
) -> Result<Ending, EngineError> {
    let question = common.question.trim().to_string();
    let mut notes: Vec<String> = settings
        .context_cut
        .iter()
        .map(|c| format!("Context: {c}"))
        .collect();

    // 1. The options: given, or proposed by the moderator and accepted (or edited) by the person.
    let options = match settings.options.is_empty() {
        false => settings.options.clone(),
        true => match propose_options(ctx, common, settings, &question).await? {
            Ok(options) => options,
            Err(ending) => return Ok(ending),
        },
    };

    // 2. The judges take their seats.
    let mut seated = seat_judges(ctx, common, settings, &options)?;
    let seats: Vec<Seat> = seated.iter().map(|s| s.seat.clone()).collect();
    let mut roster = SeatRoster::new(&seats);
    if let Some(caveat) =
        kit::seat_and_start(ctx, &Panel, &question, &seats, settings.max_rounds).await?
    {
        notes.push(caveat);
    }

    // 3. Rounds: isolated recommendations, then challenges until consensus.
    let mut changes: Vec<Change> = Vec::new();
    let mut standings: Vec<Standing> = options
        .iter()
        .map(|o| Standing {
            id: o.id.clone(),
            label: o.label.clone(),
            backers: Vec::new(),
        })
        .collect();
    let mut rounds = 0;
    let mut final_check = None;
    for round in 1..=settings.max_rounds {
        if roster.active().is_empty() {
            break;
        }
        rounds = round;
        ctx.emit(Event::RoundStarted { round, limit: None });
        let turns = judge_round(
            ctx,
            settings,
            &question,
            &options,
            &seated,
            &roster,
            round,
            common.vote.is_some(),
        )
        .await?;
        if !turns.is_empty() && turns.iter().all(|t| t.status == TurnStatus::Failed) {
            return Err(EngineError::Provider(
                turns
                    .iter()
                    .find_map(|t| t.note.clone())
                    .unwrap_or_else(|| "every judge failed".into()),
            ));
        }
        for turn in &turns {
            let Some(judge) = seated.iter_mut().find(|s| s.seat.id == turn.seat) else {
                continue;
            };
            absorb(judge, &mut roster, turn, round, &mut changes, &mut notes);
        }
        flag_judges(ctx, settings, &seated, &roster, &turns, round);
        let votes: Vec<(String, Option<String>)> = seated
            .iter()
            .filter(|s| roster.is_active(&s.seat.id))
            .map(|s| (s.key.clone(), s.recommended.clone()))
            .collect();
        let check = match common.vote {
            Some(method) => {
                let ballots: Vec<crate::vote::Ballot> = seated
                    .iter()
                    .filter(|s| roster.is_active(&s.seat.id))
                    .map(|s| crate::vote::Ballot {
                        voter: s.key.clone(),
                        ranking: s.ranking.clone(),
                        confidence: s.confidence,
                        weight: common
                            .vote_weights
                            .iter()
                            .find(|(name, _)| {
                                name.eq_ignore_ascii_case(&s.judge.name) || **name == s.seat.id
                            })
                            .map_or(1.0, |(_, w)| *w),
                    })
                    .collect();
                check_ranked(&options, &ballots, method, settings.consensus_threshold)
            }
            None => check(&options, &votes, settings.consensus_threshold),
        };
        for standing in &mut standings {
            let backers = seated
                .iter()
                .filter(|s| {
                    roster.is_active(&s.seat.id)
                        && s.recommended.as_deref() == Some(standing.id.as_str())
                })
                .map(|s| s.seat.id.clone())
                .collect();
            standing.backers.push(backers);
        }
        ctx.emit(Event::Standings {
            round,
            headline: headline(round, &check, settings.consensus_threshold),
            standings: standings.clone(),
            changes: changes
                .iter()
                .map(|c| {
                    format!(
                        "{} r{}: {} → {} — {}",
                        c.judge, c.round, c.from, c.to, c.reason
                    )
                })
                .collect(),
        });
        let artifacts = json!({"standings": standings, "changes": changes});
        let summary = headline(round, &check, settings.consensus_threshold);
        if let Some(ending) =
            kit::gate(ctx, common, "after_round", round, summary, artifacts).await?
        {
            return Ok(ending);
        }
        let agreed = check.consensus.is_some();
        final_check = Some(check);
        if agreed {
            break;
        }
    }
    let Some(check) = final_check else {
        return Err(EngineError::Setup("no judge could take part".into()));
    };
    if check.voters < 2 {
        notes.push(format!(
            "Only {} judge(s) gave a valid recommendation; a panel needs two to agree.",
            check.voters
        ));
    }

    // 4. The result, and the person's choice when it is contested.
    if let Some(ending) = kit::gate(
        ctx,
        common,
        "before_synthesis",
        rounds,
        format!("{} round(s) judged; the result comes next.", rounds),
        json!({"distribution": check.distribution}),
    )
    .await?
    {
        return Ok(ending);
    }
    let mut result = build_result(
        ctx, settings, &question, &options, &seated, &roster, &check, changes, rounds, notes,
    );
    if !result.consensus {
        let choices: Vec<(String, String)> = options
            .iter()
            .map(|o| (o.id.clone(), o.label.clone()))
            .collect();
        if ctx.settings.checkpoints {
            ctx.emit(Event::Synthesis {
                markdown: result.to_markdown(),
                confidence: Confidence::RequiresInput,
                path: None,
                draft: true,
            });
        }
        let prompt = result.user_prompt.clone().unwrap_or_default();
        match ctx.choose(rounds, prompt, choices).await? {
            CheckpointOutcome::TimedOut => return Ok(Ending::Paused),
            CheckpointOutcome::Answered {
                control: Control::Choose(option),
                by,
            } => result.chosen = Some(Chosen { option, by }),
            CheckpointOutcome::Answered { .. } | CheckpointOutcome::Unasked => {}
        }
    }
    Ok(Ending::Concluded(Box::new(result.outcome())))
}

/// The moderator proposes options, and the person accepts or replaces them; the ending
/// instead when the person ends the debate there or nobody answers in time.
async fn propose_options(
    ctx: &Context,
    common: &Common,
    settings: &PanelSettings,
    question: &str,
) -> Result<Result<Vec<PanelOption>, Ending>, EngineError> {
    let schema = options_schema();
    let mut prompt = format!(
        "Question: {question}\n\nPropose the 2–4 distinct options a decision panel should weigh \
         for this question: mutually exclusive, each a real course of action, ids A, B, C, D in order."
    );
    if !settings.context.is_empty() {
        let _ = write!(prompt, "\n\nSpec context:\n{}", settings.context);
    }
    let turn = ctx
        .speak(kit::structured_speech(
            TurnKey::new(0, Phase::Options, MODERATOR),
            None,
            "You are the moderator of a decision panel. You frame the choice; you do not judge it."
                .into(),
            prompt,
            OPTIONS_SCHEMA,
            schema,
            ReplyKind::Structured {
                parser: Arc::new(OptionsReplies),
                stream_field: None,
            },
            Some(600),
            Some(Instant::now() + common.round_timeout),
        ))
        .await?;
    if turn.status == TurnStatus::Failed {
        return Err(EngineError::Provider(
            turn.note.unwrap_or_else(|| "the provider failed".into()),
        ));
    }
    let proposed: Vec<PanelOption> = turn
        .data
        .as_ref()
        .filter(|_| turn.status == TurnStatus::Ok)
        .and_then(|d| serde_json::from_value(d.get("options")?.clone()).ok())
        .unwrap_or_default();
    if proposed.len() < 2 && !ctx.settings.checkpoints {
        return Err(EngineError::Setup(
            "the moderator proposed no usable options; give them with --option \"A: label — description\"".into(),
        ));
    }
    let detail = format!(
        "The moderator proposes these options:\n{}\n\nContinue with them, or guide with the options to use instead (A: label — description; B: …).",
        listed(&proposed)
    );
    let mut proposed = proposed;
    match ctx.ask(0, AskKind::Options, Some(detail)).await? {
        CheckpointOutcome::TimedOut => return Ok(Err(Ending::Paused)),
        CheckpointOutcome::Answered {
            control: Control::End,
            ..
        } => return Ok(Err(Ending::Cancelled)),
        CheckpointOutcome::Answered {
            control: Control::Guide(text),
            ..
        } => match edited_options(&text) {
            Ok(options) => proposed = options,
            // The answer is journaled; an unusable edit keeps the proposal.
            Err(problem) => ctx.emit(Event::Notice {
                message: format!(
                    "the edited options are unusable ({problem}); the proposed ones stand"
                ),
            }),
        },
        _ => {}
    }
    if proposed.len() < 2 {
        return Err(EngineError::Setup(
            "no usable options to judge; give them with --option \"A: label — description\"".into(),
        ));
    }
    Ok(Ok(proposed))
}

/// Options typed at the checkpoint: `A: label — description` separated by `;` or new lines.
fn edited_options(text: &str) -> Result<Vec<PanelOption>, String> {
    let options = text
        .split([';', '\n'])
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .map(parse_option)
        .collect::<Result<Vec<_>, _>>()?;
    check_options(&options)?;
    if options.len() < 2 {
        return Err("at least two options are needed".into());
    }
    Ok(options)
}

fn seat_judges(
    ctx: &Context,
    common: &Common,
    settings: &PanelSettings,
    options: &[PanelOption],
) -> Result<Vec<Seated>, EngineError> {
    let mut seated: Vec<Seated> = Vec::new();
    for judge in &settings.judges {
        let initial = judge
            .name
            .chars()
            .next()
            .unwrap_or('J')
            .to_ascii_uppercase()
            .to_string();
        let id = if seated.iter().any(|s| s.seat.id == initial) {
            format!("{initial}{}", seated.len() + 1)
        } else {
            initial
        };
        let key = judge
            .name
            .to_lowercase()
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
            .join("_");
        let mut seat = Seat {
            id,
            perspective: judge.name.clone(),
            priorities: vec![judge.stance.clone()],
            trade_offs: judge.instruction.clone(),
            stance: judge.stance.clone(),
            provider: None,
            model: None,
        };
        if let Some(spec) = &judge.provider {
            kit::seat_on_own_provider(ctx, common, &mut seat, spec)?;
        }
        seated.push(Seated {
            order: order_for(&ctx.debate_id, &key, options),
            seat,
            judge: judge.clone(),
            key,
            recommended: None,
            perspective: String::new(),
            reasoning: String::new(),
            ranking: Vec::new(),
            confidence: 1.0,
        });
    }
    Ok(seated)
}

/// One round of every judge still at the table, in parallel.
#[allow(clippy::too_many_arguments)]
async fn judge_round(
    ctx: &Context,
    settings: &PanelSettings,
    question: &str,
    options: &[PanelOption],
    seated: &[Seated],
    roster: &SeatRoster,
    round: u32,
    ranked: bool,
) -> Result<Vec<Turn>, EngineError> {
    let ids: Vec<String> = options.iter().map(|o| o.id.clone()).collect();
    let deadline = Instant::now()
        + Duration::from_secs(settings.timeout_per_judge).saturating_mul(
            ctx.queued_turn_slots(&seated.iter().map(|s| s.seat.clone()).collect::<Vec<_>>()),
        );
    let speeches = seated
        .iter()
        .enumerate()
        .filter(|(_, s)| roster.is_active(&s.seat.id))
        .map(|(index, judge)| {
            let mut prompt = format!(
                "Round {round} of at most {}.\n{}",
                settings.max_rounds,
                base_prompt(question, settings, options, &judge.order)
            );
            // Round 1 is isolated; from round 2 every judge sees every other still at the table.
            let visibility = if round == 1 {
                Visibility::Isolated
            } else {
                Visibility::All
            };
            let visible = |other: usize, s: &Seated| {
                other != index
                    && roster.is_active(&s.seat.id)
                    && visibility.sees(&judge.seat.id, &s.seat.id)
            };
            let others: Vec<String> = seated
                .iter()
                .enumerate()
                .filter(|(other, s)| visible(*other, s))
                .map(|(other, _)| shown_name(seated, other, settings.anonymous))
                .collect();
            let (phase, schema_name, schema, others) = if round == 1 {
                prompt.push_str(
                    "\nEvaluate every option from your stance, then recommend exactly one. You work alone: \
                     no other judge's view is available to you.",
                );
                (Phase::Recommendation, RECOMMENDATION_SCHEMA, recommendation_schema(options), others)
            } else {
                let _ = write!(
                    prompt,
                    "\nYour previous recommendation: option {}.\n{}\n\nThe other judges' positions:\n",
                    judge.recommended.as_deref().unwrap_or("none"),
                    fenced(&shown_name(seated, index, settings.anonymous), "reasoning", &judge.reasoning)
                );
                for (other, them) in seated.iter().enumerate().filter(|(other, s)| visible(*other, s)) {
                    let name = shown_name(seated, other, settings.anonymous);
                    let _ = write!(
                        prompt,
                        "\n{name} recommends option {}:\n{}\n",
                        them.recommended.as_deref().unwrap_or("none"),
                        fenced(&name, "reasoning", &them.reasoning)
                    );
                }
                prompt.push_str(
                    "\nChallenge each other judge's position with a specific counter-argument (one per \
                     judge), then defend your recommendation or revise it. If you change it, say in \
                     change_reason exactly what convinced you; otherwise leave change_reason empty.",
                );
                let schema = challenge_schema(options, &others);
                (Phase::Challenge, CHALLENGE_SCHEMA, schema, others)
            };
            let schema = if ranked {
                prompt.push_str(
                    "\nAlso rank every option, best first (your recommendation first), and say how \
                     confident you are in that ranking (0–1): the panel is decided by a vote on \
                     the rankings.",
                );
                with_ranking(schema, options)
            } else {
                schema
            };
            kit::structured_speech(
                TurnKey::new(round, phase, judge.seat.id.clone()),
                Some(judge.judge.name.clone()),
                judge_system(&judge.judge),
                prompt,
                schema_name,
                schema,
                ReplyKind::Structured {
                    parser: Arc::new(JudgeReplies {
                        options: ids.clone(),
                        order: judge.order.clone(),
                        others,
                        require_reason: settings.require_change_documentation,
                        ranked,
                    }),
                    stream_field: Some("reasoning"),
                },
                Some(1200),
                Some(deadline),
            )
        })
        .collect();
    ctx.speak_all(speeches).await
}

/// Folds a judge's turn into what the panel knows of it.
fn absorb(
    judge: &mut Seated,
    roster: &mut SeatRoster,
    turn: &Turn,
    round: u32,
    changes: &mut Vec<Change>,
    notes: &mut Vec<String>,
) {
    match turn.status {
        TurnStatus::TimedOut | TurnStatus::Failed => {
            let why = if turn.status == TurnStatus::TimedOut {
                "timed out"
            } else {
                "kept failing"
            };
            judge.recommended = None;
            judge.ranking.clear();
            roster.drop_seat(
                &judge.seat.id,
                why,
                format!(
                    "{} judge {why} in round {round} and was left out.",
                    judge.judge.name
                ),
                notes,
            );
        }
        TurnStatus::Fallback => {
            // Unparseable after one clarification: no recommendation this round.
            judge.recommended = None;
            judge.ranking.clear();
            judge.reasoning = turn.content.clone();
            notes.push(format!(
                "{} judge's round-{round} reply could not be read; it counts as no recommendation.",
                judge.judge.name
            ));
        }
        // A reply cut at its byte cap counts for what was read of it (nothing, unless a repair
        // made it whole).
        TurnStatus::Ok | TurnStatus::Truncated => {
            let data = turn.data.clone().unwrap_or_default();
            let recommended = data
                .get("recommended")
                .and_then(Value::as_str)
                .map(str::to_string);
            if let (Some(from), Some(to)) = (
                data.get("changed_from").and_then(Value::as_str),
                recommended.as_deref(),
            ) {
                changes.push(Change {
                    judge: judge.key.clone(),
                    round,
                    from: from.to_string(),
                    to: to.to_string(),
                    reason: data
                        .get("change_reason")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                });
            }
            judge.ranking = data
                .get("ranking")
                .and_then(Value::as_array)
                .map(|r| {
                    r.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_else(|| recommended.iter().cloned().collect());
            judge.confidence = data
                .get("confidence")
                .and_then(Value::as_f64)
                .unwrap_or(1.0);
            judge.recommended = recommended;
            judge.reasoning = turn.content.clone();
            judge.perspective = data
                .get("perspective")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
        }
    }
}

/// Flags a judge that dropped its stance's vocabulary, or agreed with everyone without a
/// challenge worth the name.
fn flag_judges(
    ctx: &Context,
    settings: &PanelSettings,
    seated: &[Seated],
    roster: &SeatRoster,
    turns: &[Turn],
    round: u32,
) {
    for turn in turns.iter().filter(|t| t.status == TurnStatus::Ok) {
        let Some(judge) = seated.iter().find(|s| s.seat.id == turn.seat) else {
            continue;
        };
        let text = turn.content.to_lowercase();
        if settings.require_stance_maintenance
            && !judge.judge.vocabulary.is_empty()
            && !judge
                .judge
                .vocabulary
                .iter()
                .any(|w| text.contains(w.as_str()))
        {
            ctx.emit(Event::Flag {
                round,
                seat: turn.seat.clone(),
                kind: FlagKind::StanceDropped,
                detail: format!(
                    "uses none of the words of its stance ({})",
                    judge.judge.stance
                ),
            });
        }
        if round > 1 {
            let others: Vec<&Seated> = seated
                .iter()
                .filter(|s| s.seat.id != turn.seat && roster.is_active(&s.seat.id))
                .collect();
            let agrees =
                !others.is_empty() && others.iter().all(|o| o.recommended == judge.recommended);
            let challenged = turn
                .data
                .as_ref()
                .and_then(|d| d.get("challenges")?.as_array().cloned())
                .unwrap_or_default()
                .iter()
                .filter_map(|c| c.get("counter_argument")?.as_str().map(str::to_lowercase))
                .any(|c| c.split_whitespace().count() >= 6 && !c.starts_with("i agree"));
            if agrees && !challenged {
                ctx.emit(Event::Flag {
                    round,
                    seat: turn.seat.clone(),
                    kind: FlagKind::Sycophancy,
                    detail: "agrees with every other judge without a real challenge".into(),
                });
            }
        }
    }
}

fn headline(round: u32, check: &Check, threshold: Threshold) -> String {
    let tally = check
        .distribution
        .iter()
        .map(|(id, backers)| format!("{id} {}", backers.len()))
        .collect::<Vec<_>>()
        .join(" · ");
    if let Some(decided_by) = &check.decided_by {
        return match &check.consensus {
            Some(option) => {
                format!("round {round}: {option} by {decided_by} — first places {tally}")
            }
            None => format!("round {round}: no consensus by {decided_by} — first places {tally}"),
        };
    }
    match &check.consensus {
        Some(option) => format!(
            "round {round}: consensus on {option} ({} of {} ≥ {threshold}) — {tally}",
            check.distribution[option].len(),
            check.voters
        ),
        None => format!(
            "round {round}: no consensus (needs {threshold} of {} valid) — {tally}",
            check.voters
        ),
    }
}

#[allow(clippy::too_many_arguments)]
fn build_result(
    ctx: &Context,
    settings: &PanelSettings,
    question: &str,
    options: &[PanelOption],
    seated: &[Seated],
    roster: &SeatRoster,
    check: &Check,
    change_log: Vec<Change>,
    rounds: u32,
    mut notes: Vec<String>,
) -> PanelResult {
    let available = seated
        .iter()
        .filter(|s| roster.is_active(&s.seat.id))
        .count();
    for (judge, why) in seated
        .iter()
        .filter_map(|s| Some((s, roster.member(&s.seat.id)?.dropped()?)))
    {
        notes.insert(
            0,
            format!(
                "{} judge {} — only {available} perspectives available",
                judge.judge.name, why
            ),
        );
    }
    let option_label = |id: &str| {
        options
            .iter()
            .find(|o| o.id == id)
            .map(|o| o.label.clone())
            .unwrap_or_default()
    };
    let mut perspectives = BTreeMap::new();
    let consensus = check.consensus.is_some();
    for judge in seated.iter().filter(|s| roster.is_active(&s.seat.id)) {
        let Some(option) = &judge.recommended else {
            continue;
        };
        let changed = change_log
            .iter()
            .rev()
            .find(|c| c.judge == judge.key)
            .map(|c| format!(" (changed from {})", c.from))
            .unwrap_or_default();
        if consensus {
            let line = if judge.perspective.is_empty() {
                option_label(option)
            } else {
                judge.perspective.clone()
            };
            perspectives.insert(
                judge.key.clone(),
                format!("Option {option} - {line}{changed}"),
            );
        } else {
            perspectives.insert(
                format!("{}_favors", judge.key),
                format!("Option {option} - \"{}\"", judge.reasoning.trim()),
            );
        }
    }
    let user_prompt = (!consensus).then(|| {
        let mut prompt = String::from("⚠️ Judges disagreed on this question. Review perspectives above.\n\nWhich option would you like to proceed with?\n");
        for option in options {
            let _ = writeln!(
                prompt,
                "[{}] {}{}",
                option.id,
                option.label,
                if option.description.is_empty() { String::new() } else { format!(" — {}", option.description) }
            );
        }
        prompt
    });
    PanelResult {
        question_id: ctx.debate_id.clone(),
        question: question.to_string(),
        consensus,
        recommended_option: check.consensus.clone(),
        outcome: (!consensus).then(|| "CONTESTED".to_string()),
        confidence: if consensus { "HIGH" } else { "REQUIRES_INPUT" }.into(),
        distribution: if consensus {
            BTreeMap::new()
        } else {
            check.distribution.clone()
        },
        perspectives,
        change_log,
        user_prompt,
        chosen: None,
        options: options.to_vec(),
        rounds,
        threshold: settings.consensus_threshold.to_string(),
        voters: check.voters,
        agreeing: check.distribution.values().map(Vec::len).max().unwrap_or(0),
        decided_by: check.decided_by.clone(),
        option_order: seated
            .iter()
            .map(|s| (s.key.clone(), s.order.clone()))
            .collect(),
        notes,
        date: crate::debate::today(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(ids: &[&str]) -> Vec<PanelOption> {
        ids.iter()
            .map(|id| PanelOption {
                id: id.to_string(),
                label: format!("option {id}"),
                description: String::new(),
            })
            .collect()
    }

    fn votes(pairs: &[(&str, Option<&str>)]) -> Vec<(String, Option<String>)> {
        pairs
            .iter()
            .map(|(j, v)| (j.to_string(), v.map(str::to_string)))
            .collect()
    }

    #[test]
    fn two_of_three_is_consensus_at_0_67_exactly_as_a_fraction() {
        // 2/3 < 0.67 in floating point, yet the note means two thirds.
        let threshold = Threshold::from_decimal(0.67).unwrap();
        assert_eq!(threshold, Threshold::TWO_THIRDS);
        assert!(threshold.reached(2, 3));
        assert!(!threshold.reached(1, 3));
        assert!(!Threshold::from_decimal(0.75).unwrap().reached(2, 3));
        assert!(Threshold::from_decimal(0.75).unwrap().reached(3, 4));
        assert!(Threshold::from_decimal(1.0).unwrap().reached(3, 3));
        assert!(!Threshold::from_decimal(1.0).unwrap().reached(2, 3));
        let check = check(
            &options(&["A", "B", "C"]),
            &votes(&[
                ("risk", Some("A")),
                ("value", Some("A")),
                ("effort", Some("C")),
            ]),
            threshold,
        );
        assert_eq!(check.consensus.as_deref(), Some("A"));
    }

    #[test]
    fn thresholds_outside_the_open_half_to_one_are_refused() {
        for bad in [0.5, 0.2, 1.01, -1.0, f64::NAN] {
            assert!(Threshold::from_decimal(bad).is_err(), "{bad}");
        }
        assert_eq!(Threshold::from_decimal(0.6).unwrap().to_string(), "3/5");
    }

    #[test]
    fn ties_empty_options_and_lone_judges_have_defined_outcomes() {
        let abc = options(&["A", "B", "C"]);
        // A tie for the largest share is no consensus; options without votes stay listed.
        let tie = check(
            &options(&["A", "B", "C", "D"]),
            &votes(&[
                ("a", Some("A")),
                ("b", Some("A")),
                ("c", Some("B")),
                ("d", Some("B")),
            ]),
            Threshold::TWO_THIRDS,
        );
        assert_eq!(tie.consensus, None);
        assert_eq!(tie.distribution["C"], Vec::<String>::new());
        // One valid recommendation is never a consensus, however unanimous.
        let lone = check(
            &abc,
            &votes(&[("risk", Some("A")), ("value", None), ("effort", None)]),
            Threshold::TWO_THIRDS,
        );
        assert_eq!((lone.consensus, lone.voters), (None, 1));
        // The denominator is the valid recommendations: 2 of 2 with one unparseable judge.
        let two = check(
            &abc,
            &votes(&[("risk", Some("B")), ("value", Some("B")), ("effort", None)]),
            Threshold::TWO_THIRDS,
        );
        assert_eq!(two.consensus.as_deref(), Some("B"));
        let none = check(&abc, &votes(&[]), Threshold::TWO_THIRDS);
        assert_eq!((none.consensus, none.voters), (None, 0));
    }

    #[test]
    fn options_parse_with_or_without_a_description() {
        assert_eq!(
            parse_option("a: Local-first sync — full offline editing").unwrap(),
            PanelOption {
                id: "A".into(),
                label: "Local-first sync".into(),
                description: "full offline editing".into()
            }
        );
        assert_eq!(parse_option("B: Online only").unwrap().description, "");
        assert!(parse_option("Online only").unwrap_err().contains("no id"));
        assert!(parse_option("AB: x").unwrap_err().contains("one letter"));
        assert!(
            parse_option("C:  — nothing")
                .unwrap_err()
                .contains("no label")
        );
        let twice = vec![parse_option("A: x").unwrap(), parse_option("a: y").unwrap()];
        assert!(check_options(&twice).unwrap_err().contains("twice"));
    }

    #[test]
    fn every_judge_sees_its_own_stable_order() {
        let abcd = options(&["A", "B", "C", "D"]);
        let risk = order_for("DEB-1", "risk", &abcd);
        assert_eq!(risk, order_for("DEB-1", "risk", &abcd));
        let mut sorted = risk.clone();
        sorted.sort();
        assert_eq!(sorted, vec!["A", "B", "C", "D"]);
        let orders: Vec<Vec<String>> = ["risk", "value", "effort", "cost", "ops"]
            .iter()
            .map(|j| order_for("DEB-1", j, &abcd))
            .collect();
        assert!(orders.iter().any(|o| *o != orders[0]), "{orders:?}");
    }
}
