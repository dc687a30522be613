//! The arena's settings: `--seat`, `--rounds`, `--persona`, `--order`, `--score`,
//! `--arena-dir`, the topology and `[arena]` in config, read into `ArenaSettings`.

use super::Topology;
use crate::protocol::refused;
use crate::protocol::tree::Planning;
use crate::protocol::{SettingsError, SettingsInput};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Who speaks next.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Order {
    RoundRobin,
    Moderator,
}

/// Who moderates an arena (design note 003: "a dedicated ModeratorAgent, one of the
/// participating agents, or the system"): it orders the speakers (`--order moderator`),
/// scores (`--score`) and summarises.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Moderator {
    /// moot's model, as a neutral moderator.
    #[default]
    Model,
    /// A participant, by its role: its own provider orders, scores and summarises too.
    Seat(String),
    /// moot itself, with no model call: round-robin, no scores, a summary built from the turns.
    System,
}

impl Moderator {
    pub fn is_model(&self) -> bool {
        *self == Moderator::Model
    }

    /// Reads `--moderator` / `[arena] moderator`.
    fn parse(text: &str) -> Result<Moderator, SettingsError> {
        match text.trim() {
            "model" => Ok(Moderator::Model),
            "system" => Ok(Moderator::System),
            other => match other.strip_prefix("seat:").map(str::trim) {
                Some(role) if !role.is_empty() => Ok(Moderator::Seat(role.to_string())),
                _ => Err(refused!(
                    "--moderator {other}: use model, system or seat:ROLE (a participant's role)"
                )),
            },
        }
    }
}

impl std::fmt::Display for Moderator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Moderator::Model => f.write_str("model"),
            Moderator::Seat(role) => write!(f, "seat:{role}"),
            Moderator::System => f.write_str("system"),
        }
    }
}

impl From<Moderator> for String {
    fn from(moderator: Moderator) -> String {
        moderator.to_string()
    }
}

impl TryFrom<String> for Moderator {
    type Error = crate::protocol::SettingsError;

    fn try_from(text: String) -> Result<Moderator, Self::Error> {
        Moderator::parse(&text)
    }
}

/// What a seat's persona is made of before the debate has an id. Only moot writes it (into a
/// debate's settings), so a field it lacks is read as empty.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct PersonaSpec {
    pub role_name: String,
    pub agent_id: Option<String>,
    pub stance_summary: String,
    pub instructions: String,
    pub background_context: String,
}

/// Who plays a seat.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Player {
    /// moot's model.
    #[default]
    Model,
    /// The person at the keyboard (`human:ROLE`): the workbench's editor, or `g TEXT` on
    /// stdin headless.
    Human,
    /// An outside agent (`outside:ROLE`) that answers through the arena directory or
    /// `moot arena submit`.
    Outside,
}

impl Player {
    /// The provider a seat's turns are journaled under: `person`, `outside`.
    pub fn speaker(self) -> &'static str {
        match self {
            Player::Model => "model",
            Player::Human => crate::debate::PERSON,
            Player::Outside => crate::debate::OUTSIDE,
        }
    }

    /// The manifest's word for it.
    pub fn kind(self) -> &'static str {
        match self {
            Player::Model => "model",
            Player::Human => "human",
            Player::Outside => "outside",
        }
    }
}

/// The arena's settings, stored with the debate.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ArenaSettings {
    /// Role names in speaking order.
    pub seats: Vec<String>,
    /// Who plays each seat, in the same order.
    #[serde(default)]
    pub players: Vec<Player>,
    /// Personas given in files, by role.
    #[serde(default)]
    pub personas: Vec<PersonaSpec>,
    pub rounds: u32,
    pub order: Order,
    pub score: bool,
    pub turn_timeout_seconds: u64,
    /// Where the arena directory is kept written, when it is.
    #[serde(default)]
    pub arena_dir: Option<PathBuf>,
    #[serde(default)]
    pub topology: Topology,
    /// How a tree plans (`--planning`).
    #[serde(default)]
    pub planning: Planning,
    /// Why `--planning auto` (the default) chose what it did; none when it was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planning_reason: Option<String>,
    /// A tree's teams are grouped by role affinity and led, phase by phase, by the role that
    /// fits; arenas stored before it kept seat order and the first seat.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub by_roles: bool,
    /// `--blind-first`: the opening round's seats each speak without reading the openings
    /// given before theirs.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub blind_first: bool,
    /// Set for a re-run over the journal (`audit --verify`): the arena directory is named as
    /// the run named it, but nothing is written to it. Never true in stored settings.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
    /// Who moderates (`--moderator`); arenas stored before it were moot's model's.
    #[serde(default, skip_serializing_if = "Moderator::is_model")]
    pub moderator: Moderator,
}

/// `[arena]` in config.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub(super) struct ArenaConfig {
    rounds: Option<u32>,
    order: Option<Order>,
    score: Option<bool>,
    turn_timeout_seconds: Option<u64>,
    arena_dir: Option<PathBuf>,
    seats: Vec<String>,
    moderator: Option<String>,
}

/// Reads a `--persona` file: the note's persona schema as JSON or TOML (`role_name` required).
fn persona_file(given: &str, cwd: &std::path::Path) -> Result<PersonaSpec, SettingsError> {
    let path = cwd.join(given);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| refused!("--persona {given}: cannot be read ({e})"))?;
    // A key moot does not know is refused, not dropped (seed review 002/003 #20).
    let file: PersonaFile = if given.ends_with(".toml") {
        toml::from_str(&text).map_err(|e| {
            let at = e.span().map_or(0, |span| span.start);
            let line = text[..at.min(text.len())].matches('\n').count() + 1;
            let column = at - text[..at.min(text.len())].rfind('\n').map_or(0, |n| n + 1) + 1;
            refused!("--persona {given}:{line}:{column}: {}", e.message().trim())
        })?
    } else {
        serde_json::from_str(&text).map_err(|e| {
            // The place goes first, as for every file moot reads; the message says it again.
            let message = e.to_string();
            let message = message
                .split(" at line ")
                .next()
                .unwrap_or(&message)
                .to_string();
            refused!("--persona {given}:{}:{}: {message}", e.line(), e.column())
        })?
    };
    let spec = PersonaSpec {
        role_name: file.role_name,
        agent_id: file.agent_id,
        stance_summary: file.stance_summary,
        instructions: file.instructions,
        background_context: file.background_context,
    };
    if spec.role_name.trim().is_empty() {
        return Err(refused!("--persona {given}: `role_name` is required"));
    }
    if let Some(id) = spec.agent_id.as_deref()
        && !crate::arena::is_safe_name(id.trim())
    {
        return Err(refused!(
            "--persona {given}: agent_id {id:?} cannot name the persona's files; use letters, digits, - _ and . (or leave it out to derive it from the role)"
        ));
    }
    Ok(spec)
}

/// A `--persona` file as written: the note's persona fields, `debate_id` allowed (and set by
/// the debate), nothing else.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PersonaFile {
    role_name: String,
    #[serde(default)]
    agent_id: Option<String>,
    #[serde(default)]
    stance_summary: String,
    #[serde(default)]
    instructions: String,
    #[serde(default)]
    background_context: String,
    #[serde(default, rename = "debate_id")]
    _debate_id: Option<String>,
}

/// Reads `--seat`, `--rounds`, `--persona`, `--order`, `--score`, `--arena-dir`, the topology
/// and `[arena]` into the arena's settings; persona files are read and the arena directory made.
pub(super) fn build(input: &SettingsInput<'_>) -> Result<ArenaSettings, SettingsError> {
    let located = |key: &str, message: String| input.located("arena", key, message);
    let config: ArenaConfig = input.table("arena")?;
    let flag = |name: &str| input.flags.get(name).cloned().unwrap_or_default();
    let (players, seats) = seats_and_players(flag("seat"), &config)?;
    if players.contains(&Player::Outside)
        && flag("arena-dir").is_empty()
        && config.arena_dir.is_none()
    {
        return Err(
            "an outside seat speaks through the arena directory: give it with --arena-dir DIR"
                .into(),
        );
    }
    let rounds = rounds(input, &config)?;
    let order = match flag("order").first().map(|s| s.trim()) {
        Some("round-robin") => Order::RoundRobin,
        Some("moderator") => Order::Moderator,
        Some(other) => {
            return Err(refused!("--order {other}: use round-robin or moderator"));
        }
        None => config.order.unwrap_or(Order::RoundRobin),
    };
    let personas = persona_files(&flag("persona"), &seats, input.cwd)?;
    let turn_timeout_seconds = config.turn_timeout_seconds.unwrap_or(180);
    if !(1..=crate::engine::LONGEST_WAIT_SECONDS).contains(&turn_timeout_seconds) {
        return Err(located(
            "turn_timeout_seconds",
            format!("turn_timeout_seconds must be 1 second to a year, not {turn_timeout_seconds}"),
        ));
    }
    let arena_dir = flag("arena-dir")
        .first()
        .map(PathBuf::from)
        .or(config.arena_dir.clone())
        .map(|dir| input.cwd.join(dir));
    // Checked, not made: settings have no effects (they are built for checking too); the
    // run makes the directory when it opens it.
    if let Some(dir) = &arena_dir {
        crate::arena::could_be_made(dir).map_err(|why| {
            let problem = format!("{} cannot be created: {why}", dir.display());
            match input.flags.contains_key("arena-dir") {
                true => refused!("--arena-dir {problem}"),
                false => located("arena_dir", format!("arena_dir {problem}")),
            }
        })?;
    }
    let moderator = moderator(input, &config, &seats, &players)?;
    let score = input.flags.contains_key("score") || config.score.unwrap_or(false);
    if moderator == Moderator::System && (score || order == Order::Moderator) {
        return Err(
            "--moderator system runs the arena with no model call: round-robin and no scores; drop --order moderator and --score, or choose --moderator model or seat:ROLE"
                .into(),
        );
    }
    let topology = Topology::from_flag(flag("topology").first().map(String::as_str))?;
    let (planning, planning_reason) =
        Planning::choose(flag("planning").first().map(String::as_str), input.question)?;
    if input.flags.contains_key("planning") && topology != Topology::Tree {
        return Err("--planning plans a tree: add --topology tree".into());
    }
    Ok(ArenaSettings {
        topology,
        planning,
        planning_reason: planning_reason.filter(|_| topology == Topology::Tree),
        by_roles: topology == Topology::Tree,
        blind_first: input.flags.contains_key("blind-first"),
        seats,
        players,
        personas,
        rounds,
        order,
        score,
        turn_timeout_seconds,
        arena_dir,
        dry_run: false,
        moderator,
    })
}

/// `--moderator` (else `[arena] moderator`, else moot's model); a seat moderating must be one
/// of the arena's roles, played by moot's model (a person's or an outside agent's seat cannot
/// take the moderator's calls).
fn moderator(
    input: &SettingsInput<'_>,
    config: &ArenaConfig,
    seats: &[String],
    players: &[Player],
) -> Result<Moderator, SettingsError> {
    let moderator = match (
        input.flags.get("moderator").and_then(|v| v.first()),
        &config.moderator,
    ) {
        (Some(given), _) => Moderator::parse(given)?,
        (None, Some(given)) => Moderator::parse(given)
            .map_err(|e| input.located("arena", "moderator", format!("moderator: {e}")))?,
        (None, None) => Moderator::Model,
    };
    if let Moderator::Seat(role) = &moderator {
        let role_of = |seat: &str| {
            seat.split_once(':')
                .map_or(seat, |(_, r)| r)
                .trim()
                .to_string()
        };
        let Some(index) = seats
            .iter()
            .position(|s| role_of(s).eq_ignore_ascii_case(role))
        else {
            let roles: Vec<String> = seats.iter().map(|s| role_of(s)).collect();
            return Err(refused!(
                "--moderator seat:{role}: no seat has that role (the seats are {})",
                roles.join(", ")
            ));
        };
        if players.get(index).copied().unwrap_or_default() != Player::Model {
            return Err(refused!(
                "--moderator seat:{role}: that seat is played by a {}, and the moderator's calls go to a model; choose a seat moot's model plays",
                players[index].kind()
            ));
        }
        return Ok(Moderator::Seat(role_of(&seats[index])));
    }
    Ok(moderator)
}

/// The seats' roles and who plays each, from `--seat` (`human:ROLE`, `outside:ROLE`,
/// `model:ROLE` or a bare role), else `[arena] seats`, else a proponent and a skeptic.
fn seats_and_players(
    given: Vec<String>,
    config: &ArenaConfig,
) -> Result<(Vec<Player>, Vec<String>), SettingsError> {
    let mut seats: Vec<String> = given.into_iter().map(|s| s.trim().to_string()).collect();
    if seats.is_empty() {
        seats = config.seats.clone();
    }
    if seats.is_empty() {
        seats = vec!["Proponent".into(), "Skeptic".into()];
    }
    if !(2..=6).contains(&seats.len()) {
        return Err(refused!("an arena seats 2–6 roles, not {}", seats.len()));
    }
    let mut players = Vec::new();
    for seat in &seats {
        if seat.is_empty() {
            return Err("--seat needs a role name, as in --seat Skeptic".into());
        }
        let (player, role) = match seat.split_once(':') {
            Some((who, role)) => (player_named(seat, who)?, role.trim()),
            None => (Player::Model, seat.as_str()),
        };
        if role.is_empty() {
            return Err(refused!(
                "--seat {seat}: name the role after the colon, as in human:Skeptic"
            ));
        }
        // The role, whoever plays it, and as its agent id names it: `Skeptic` and
        // `human:Skeptic` (or `Ethics-Advisor` and `Ethics Advisor`) would be one seat twice
        // (seed review 002/003 #12).
        let taken = players.iter().position(|(_, earlier): &(Player, String)| {
            crate::arena::agent_id(earlier) == crate::arena::agent_id(role)
        });
        if let Some(earlier) = taken {
            return Err(refused!(
                "--seat {seat}: the role {role:?} already has a seat (--seat {}); every role needs its own seat",
                seats[earlier]
            ));
        }
        players.push((player, role.to_string()));
    }
    Ok(players.into_iter().unzip())
}

/// Who plays a seat, from the word before the colon of `--seat WHO:ROLE` (any case); a word
/// that names nobody is refused rather than read as a model's role, so `huamn:Skeptic` never
/// quietly becomes a model seat.
fn player_named(seat: &str, who: &str) -> Result<Player, SettingsError> {
    let players = [
        ("human", Player::Human),
        ("outside", Player::Outside),
        ("model", Player::Model),
    ];
    let word = who.trim().to_lowercase();
    if let Some((_, player)) = players.iter().find(|(name, _)| *name == word) {
        return Ok(*player);
    }
    let role = seat.split_once(':').map_or(seat, |(_, role)| role).trim();
    let close = players
        .iter()
        .map(|(name, _)| *name)
        .find(|name| crate::spelling::edits_apart(name, &word) <= 2);
    Err(refused!(
        "--seat {seat}: {who:?} is not who plays a seat; write human:ROLE (you), outside:ROLE (an agent through the arena directory) or model:ROLE, or the role alone for a model{}",
        close
            .map(|name| format!(" (did you mean {name}:{role}?)"))
            .unwrap_or_default()
    ))
}

/// `--rounds`, else `--max-rounds`, else `[arena] rounds`, else 4; 2–10 of them.
fn rounds(input: &SettingsInput<'_>, config: &ArenaConfig) -> Result<u32, SettingsError> {
    let given = input.flags.get("rounds").and_then(|r| r.first());
    let rounds = match (given, input.max_rounds) {
        (Some(text), _) => text
            .trim()
            .parse::<u32>()
            .map_err(|_| format!("--rounds {text}: give a whole number of rounds, 2–10"))?,
        (None, Some(rounds)) => rounds,
        (None, None) => config.rounds.unwrap_or(4),
    };
    if !(2..=10).contains(&rounds) {
        let problem = format!("an arena runs 2–10 rounds (opening … closing), not {rounds}");
        return Err(if given.is_none() && input.max_rounds.is_none() {
            input.located("arena", "rounds", format!("rounds: {problem}"))
        } else {
            refused!("--rounds: {problem}")
        });
    }
    Ok(rounds)
}

/// The `--persona` files, each for a role that has a seat.
fn persona_files(
    given: &[String],
    seats: &[String],
    cwd: &std::path::Path,
) -> Result<Vec<PersonaSpec>, SettingsError> {
    let mut personas = Vec::new();
    for given in given {
        let spec = persona_file(given, cwd)?;
        if !seats
            .iter()
            .any(|s| s.eq_ignore_ascii_case(&spec.role_name))
        {
            return Err(refused!(
                "--persona {given}: its role {:?} has no --seat; add --seat \"{}\"",
                spec.role_name,
                spec.role_name
            ));
        }
        personas.push(spec);
    }
    Ok(personas)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// B2: the word before the colon is read in any case; a word that names nobody is refused.
    #[test]
    fn who_plays_a_seat_is_read_in_any_case_and_an_unknown_word_is_refused() {
        let seats = |given: &[&str]| {
            seats_and_players(
                given.iter().map(|s| s.to_string()).collect(),
                &ArenaConfig::default(),
            )
        };
        let (players, roles) = seats(&["Proponent", "Human:Skeptic", "OUTSIDE :Analyst"]).unwrap();
        assert_eq!(players, [Player::Model, Player::Human, Player::Outside]);
        assert_eq!(roles, ["Proponent", "Skeptic", "Analyst"]);
        let refused = seats(&["Proponent", "huamn:Skeptic"])
            .unwrap_err()
            .to_string();
        assert!(refused.contains("did you mean human:Skeptic?"), "{refused}");
        let refused = seats(&["Proponent", "robot:Skeptic"])
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("\"robot\" is not who plays a seat")
                && !refused.contains("did you mean"),
            "{refused}"
        );
    }

    #[test]
    fn persona_files_read_as_json_or_toml_and_name_what_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("skeptic.json"),
            r#"{"role_name": "Skeptic", "stance_summary": "Doubt it", "instructions": "Ask for data", "background_context": "Two pilots ran"}"#,
        )
        .unwrap();
        let spec = persona_file("skeptic.json", dir.path()).unwrap();
        assert_eq!(
            (spec.role_name.as_str(), spec.background_context.as_str()),
            ("Skeptic", "Two pilots ran")
        );
        std::fs::write(dir.path().join("torn.json"), "{\"role_name\": ").unwrap();
        let err = persona_file("torn.json", dir.path()).unwrap_err();
        assert_eq!(
            err.message(),
            "--persona torn.json:1:14: EOF while parsing a value"
        );
        std::fs::write(dir.path().join("nameless.toml"), "stance_summary = \"x\"\n").unwrap();
        let err = persona_file("nameless.toml", dir.path()).unwrap_err();
        assert!(err.message().contains("role_name"), "{err}");
        let err = persona_file("missing.json", dir.path()).unwrap_err();
        assert!(
            err.message()
                .contains("--persona missing.json: cannot be read"),
            "{err}"
        );
    }
}
