//! The dialogue's settings: its personas (with their declared biases and own providers), rounds,
//! the one viewpoint both sides take, and the shared context gathered before it starts.

use crate::gather::{self, Gathered};
use crate::protocol::refused;
use crate::protocol::{SettingsError, SettingsInput};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::PathBuf;

/// A seat's persona: who it is and the bias it declares.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Persona {
    pub persona: String,
    pub bias: String,
    /// Its own provider snapshot, when config gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<Value>,
}

/// The dialogue's settings, stored with the debate (K included, so a resume never gathers
/// again).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DialogueSettings {
    pub pro: Persona,
    pub opp: Persona,
    pub moderator: Persona,
    /// Rounds of argumentation between the opening and the closing.
    pub max_rounds: u32,
    /// Rounds a `why` may stay unanswered before it counts as a retraction of what it asked.
    #[serde(default = "default_why_grace")]
    pub why_grace: u32,
    /// The moderator rules on each round and unanswered whys lapse (`discipline`). Stored
    /// settings written before it existed read as false, so an older journal re-runs (audit,
    /// resume) as it was recorded.
    #[serde(default)]
    pub discipline: bool,
    /// `--perspective`: the viewpoint both sides argue from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub focus: Option<String>,
    /// What was gathered; `None` with `--no-context`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Gathered>,
}

/// `[dialogue]` in config.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub(super) struct DialogueConfig {
    max_rounds: Option<u32>,
    why_grace: Option<u32>,
    context_budget: Option<usize>,
    /// `false` never gathers (as `--no-context`).
    context: Option<bool>,
    pro: Option<PersonaConfig>,
    opp: Option<PersonaConfig>,
    moderator: Option<PersonaConfig>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct PersonaConfig {
    persona: Option<String>,
    bias: Option<String>,
    provider: Option<String>,
    model: Option<String>,
}

fn default_why_grace() -> u32 {
    1
}

/// The note's three personas.
fn default_personas() -> [Persona; 3] {
    let persona = |persona: &str, bias: &str| Persona {
        persona: persona.into(),
        bias: bias.into(),
        provider: None,
    };
    [
        persona(
            "Pragmatic engineer focused on delivery and simplicity",
            "prefers solutions that ship fast and are easy to maintain",
        ),
        persona(
            "Cautious architect focused on quality and long-term health",
            "prefers solutions that minimize risk and technical debt",
        ),
        persona(
            "Neutral senior staff engineer balancing trade-offs",
            "none: evaluates argument strength, not rhetoric",
        ),
    ]
}

/// Reads `[dialogue]`, `--perspective` (one viewpoint for both sides), `--context` and
/// `--no-context` into the dialogue's settings; the shared context is gathered here.
pub(super) fn build(input: &SettingsInput<'_>) -> Result<DialogueSettings, SettingsError> {
    let located = |key: &str, message: String| input.located("dialogue", key, message);
    let config: DialogueConfig = input.table("dialogue")?;
    let max_rounds = input.max_rounds.or(config.max_rounds).unwrap_or(2);
    if !(1..=10).contains(&max_rounds) {
        let problem = format!("a dialogue runs 1–10 rounds of argumentation, not {max_rounds}");
        return Err(match input.max_rounds {
            Some(_) => refused!("--max-rounds: {problem}"),
            None => located("max_rounds", format!("max_rounds: {problem}")),
        });
    }
    let why_grace = config.why_grace.unwrap_or_else(default_why_grace);
    if !(1..=10).contains(&why_grace) {
        return Err(located(
            "why_grace",
            format!(
                "why_grace: a why may stay unanswered for 1–10 rounds before it counts as a retraction, not {why_grace}"
            ),
        ));
    }
    let focus = match input.perspectives {
        [] => None,
        [one] => Some(one.trim().to_string()).filter(|f| !f.is_empty()),
        many => {
            return Err(refused!(
                "--perspective: a dialogue focuses both sides on one viewpoint; {} were given",
                many.len()
            ));
        }
    };
    let [pro, opp, moderator] = default_personas();
    let mut personas = [("pro", pro), ("opp", opp), ("moderator", moderator)];
    for (key, persona) in &mut personas {
        let given = match *key {
            "pro" => &config.pro,
            "opp" => &config.opp,
            _ => &config.moderator,
        };
        let Some(given) = given else { continue };
        let table = format!("[dialogue.{key}]");
        if let Some(text) = &given.persona {
            if text.trim().is_empty() {
                return Err(located(
                    &table,
                    format!("{table} persona must not be empty"),
                ));
            }
            persona.persona = text.trim().to_string();
        }
        if let Some(text) = &given.bias {
            persona.bias = text.trim().to_string();
        }
        if given.provider.is_some() || given.model.is_some() {
            persona.provider = Some(
                (input.resolve_provider)(given.provider.as_deref(), given.model.as_deref())
                    .map_err(|m| located(&table, format!("{table}: {m}")))?,
            );
        }
    }
    let [(_, pro), (_, opp), (_, moderator)] = personas;
    let flag = |name: &str| input.flags.get(name).cloned().unwrap_or_default();
    let paths: Vec<PathBuf> = flag("context").into_iter().map(PathBuf::from).collect();
    let skip = input.flags.contains_key("no-context") || config.context == Some(false);
    if skip && !paths.is_empty() {
        return Err("--context and --no-context contradict each other; give one of them".into());
    }
    // A debate asked from off this machine gathers nothing from the directory moot runs in.
    let skip = skip || input.outside;
    let budget = config.context_budget.unwrap_or(gather::DEFAULT_BUDGET);
    if !(1_000..=1_000_000).contains(&budget) {
        return Err(located(
            "context_budget",
            format!("context_budget must be 1000 to 1000000 bytes, not {budget}"),
        ));
    }
    let context = match (skip, input.question) {
        (true, _) | (false, None) => None,
        (false, Some(question)) => Some(
            gather::gather(&gather::Request {
                root: input.cwd,
                topic: question,
                extra: &paths,
                budget,
            })
            .map_err(|e| e.to_string())?,
        ),
    };
    let settings = DialogueSettings {
        pro,
        opp,
        moderator,
        max_rounds,
        why_grace,
        discipline: true,
        focus,
        context,
    };
    Ok(settings)
}
