//! The arena directory of design note 003: a manifest, personas, one JSON file per turn,
//! scores and a summary under `<dir>/<debate_id>/`. Writes are atomic (temp file, fsync,
//! rename) under an exclusive lock on `manifest.lock`; reads name the file that is wrong and
//! never follow a path out of the debate's directory.

use crate::beneath::Beneath;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fs;
use std::path::{Path, PathBuf};

/// The largest file the arena reads (a turn, a persona, the manifest).
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// Where a debate stands, as the manifest says it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ArenaStatus {
    Open,
    InProgress,
    Closed,
}

/// A seat's persona (the note's schema).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Persona {
    pub agent_id: String,
    #[serde(default)]
    pub debate_id: String,
    pub role_name: String,
    #[serde(default)]
    pub stance_summary: String,
    #[serde(default)]
    pub instructions: String,
    #[serde(default)]
    pub background_context: String,
    /// Fields moot does not know, kept as they came.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Persona {
    /// The persona as a page for people.
    pub fn to_markdown(&self) -> String {
        format!(
            "# {} ({})\n\n**Debate:** {}\n\n## Stance\n\n{}\n\n## Instructions\n\n{}\n\n## Background\n\n{}\n",
            self.role_name,
            self.agent_id,
            self.debate_id,
            self.stance_summary.trim(),
            self.instructions.trim(),
            if self.background_context.trim().is_empty() {
                "(none)"
            } else {
                self.background_context.trim()
            }
        )
    }
}

/// One contribution (the note's argument schema).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Argument {
    pub turn_number: u32,
    pub agent_id: String,
    pub timestamp_utc: String,
    pub argument_text: String,
    /// Sources, ids of earlier turns (`turn:3`), data points.
    #[serde(default)]
    pub references: Vec<String>,
    /// Confidence, tone; moot adds its round, phase, status and speech acts under `moot`.
    #[serde(default)]
    pub metadata: Map<String, Value>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Whether a file of an arena directory is one moot wrote (its manifest, scores, a turn, or a
/// persona it exported), so gathering context from a project skips moot's own debates.
pub fn written_by_moot(text: &str) -> bool {
    let text = text.trim_start();
    if !text.starts_with('{') {
        return false;
    }
    let Ok(Value::Object(document)) = serde_json::from_str::<Value>(text) else {
        return false;
    };
    let names_a_debate = document
        .get("debate_id")
        .and_then(Value::as_str)
        .is_some_and(|id| id.starts_with("DEB-"));
    names_a_debate
        || document.get("exported_by").and_then(Value::as_str) == Some("moot")
        || document.contains_key("moot")
        || document
            .get("metadata")
            .and_then(Value::as_object)
            .is_some_and(|m| m.contains_key("moot"))
}

/// What a turn's reply said it answers and rests on, as the arena file lists it: the turns it
/// responds to (`turn:N`), then its own references, once each.
pub fn said_references(data: &Value) -> Vec<String> {
    let mut references: Vec<String> = data
        .get("responds_to")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_u64)
        .map(|n| format!("turn:{n}"))
        .collect();
    for said in data
        .get("references")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !references.iter().any(|r| r == said) {
            references.push(said.to_string());
        }
    }
    references
}

/// The tone a turn's reply gave, if it gave one.
pub fn said_tone(data: &Value) -> Option<&str> {
    data.get("tone")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|t| !t.is_empty())
}

/// A seat as the manifest lists it: an object, or (as note 003 writes it) the agent's id
/// alone, its role and stance then taken from the manifest's `roles` and `stances` maps.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(from = "ParticipantGiven")]
pub struct Participant {
    pub agent_id: String,
    pub role_name: String,
    pub stance: String,
    /// `model`, `human` or `outside`.
    #[serde(default = "model")]
    pub kind: String,
    #[serde(default)]
    pub joined: bool,
}

fn model() -> String {
    "model".into()
}

/// A participant as a manifest may give it.
#[derive(Deserialize)]
#[serde(untagged)]
enum ParticipantGiven {
    Id(String),
    Object {
        agent_id: String,
        #[serde(default)]
        role_name: Option<String>,
        #[serde(default)]
        stance: String,
        #[serde(default = "model")]
        kind: String,
        #[serde(default)]
        joined: bool,
    },
}

impl From<ParticipantGiven> for Participant {
    fn from(given: ParticipantGiven) -> Participant {
        match given {
            ParticipantGiven::Id(agent_id) => Participant {
                role_name: agent_id.clone(),
                agent_id,
                stance: String::new(),
                kind: model(),
                joined: false,
            },
            ParticipantGiven::Object {
                agent_id,
                role_name,
                stance,
                kind,
                joined,
            } => Participant {
                role_name: role_name.unwrap_or_else(|| agent_id.clone()),
                agent_id,
                stance,
                kind,
                joined,
            },
        }
    }
}

/// The turn the debate waits for, while it waits.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TurnRequest {
    pub turn_number: u32,
    pub agent_id: String,
    pub round: u32,
    pub deadline_utc: String,
}

/// How arguments are scored, when they are.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct ScoringInfo {
    #[serde(default)]
    pub scale: String,
    #[serde(default)]
    pub rubric: Vec<String>,
    /// Fields moot does not know (note 003's `method`), kept as they came.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `manifest.json`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    pub debate_id: String,
    pub topic: String,
    #[serde(default)]
    pub proposal_ref: Option<String>,
    pub participants: Vec<Participant>,
    pub protocol: String,
    pub status: ArenaStatus,
    /// When it began and last changed; a manifest may give them under `timestamps` instead
    /// (`created_utc`, `closed_utc`), as note 003 does.
    #[serde(default)]
    pub created_utc: String,
    #[serde(default)]
    pub updated_utc: String,
    #[serde(default = "moderator_id")]
    pub moderator_id: String,
    #[serde(default)]
    pub scoring_info: Option<ScoringInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_requested: Option<TurnRequest>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn moderator_id() -> String {
    "moderator".into()
}

/// One score of one argument.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Score {
    pub turn_number: u32,
    pub agent_id: String,
    /// The moderator's rubric score, 0–1.
    pub score: f64,
    #[serde(default)]
    pub reason: String,
    /// The gradual score of the argument's speech acts, beside it (never blended).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gradual: Option<f64>,
}

/// `scores.json`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Scores {
    pub debate_id: String,
    /// How they were scored; the manifest's `scoring_info` when the file leaves it out.
    #[serde(default)]
    pub scoring_info: ScoringInfo,
    pub scores: Vec<Score>,
}

/// Everything an arena directory holds.
#[derive(Debug, Clone, PartialEq)]
pub struct ArenaDebate {
    pub manifest: Manifest,
    pub protocol_md: String,
    pub personas: Vec<Persona>,
    pub turns: Vec<Argument>,
    pub scores: Option<Scores>,
    pub summary: Option<String>,
}

/// What went wrong, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum ArenaError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
    /// A file stands where the arena needs a directory.
    #[error("{0} is not a directory")]
    NotADirectory(String),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ArenaError + '_ {
    move |source| ArenaError::Io {
        path: path.display().to_string(),
        source,
    }
}

fn invalid(path: &Path, message: impl Into<String>) -> ArenaError {
    ArenaError::Invalid {
        path: path.display().to_string(),
        message: message.into(),
    }
}

/// Whether `name` can be one path component of the arena: letters, digits, `-`, `_`, `.`, not
/// starting with a dot.
pub fn is_safe_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// An agent id from a role name: `Ethics Advisor` → `ethics_advisor`.
/// Kept short enough that a turn file named after it (`turn_N_<id>_<timestamp>.json`) is a
/// usable name however long the role (seed review 002/003 #6: a 218-character persona).
pub fn agent_id(role: &str) -> String {
    let mut id = String::new();
    for word in role
        .to_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let joined = if id.is_empty() { 0 } else { 1 };
        if id.len() + joined + word.len() > MAX_AGENT_ID {
            if id.is_empty() {
                id.push_str(&word[..MAX_AGENT_ID]);
            }
            break;
        }
        if joined == 1 {
            id.push('_');
        }
        id.push_str(word);
    }
    if id.is_empty() { "agent".into() } else { id }
}

/// The longest agent id `agent_id` makes.
const MAX_AGENT_ID: usize = 64;

/// `2026-11-22T18:53:00Z` → `20261122T185300Z`, for file names.
pub fn compact_timestamp(rfc3339: &str) -> String {
    rfc3339
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect()
}

/// One debate's directory, to write into. Every path in it is opened beneath the arena root
/// with no symlink anywhere (`beneath`): a `transcript/` or `manifest.lock` replaced by a link
/// leads nowhere.
pub struct ArenaDir {
    pub path: PathBuf,
    root: Beneath,
    /// The debate's directory name under the root.
    id: PathBuf,
}

impl ArenaDir {
    /// `<root>/<debate_id>/` with its `personas/` and `transcript/`, created if missing.
    pub fn create(root: &Path, debate_id: &str) -> Result<ArenaDir, ArenaError> {
        if !is_safe_name(debate_id) {
            return Err(invalid(
                root,
                format!("{debate_id:?} cannot name a directory"),
            ));
        }
        fs::create_dir_all(root).map_err(io(root))?;
        let dir = ArenaDir {
            path: root.join(debate_id),
            root: Beneath::open(root).map_err(io(root))?,
            id: PathBuf::from(debate_id),
        };
        for sub in ["personas", "transcript"] {
            let relative = dir.id.join(sub);
            dir.root
                .create_dirs(&relative)
                .map_err(io(&dir.root.display(&relative)))?;
        }
        Ok(dir)
    }

    /// The directory of a debate already written under `root`, when it has a manifest.
    pub fn existing(root: &Path, debate_id: &str) -> Option<ArenaDir> {
        if !is_safe_name(debate_id) {
            return None;
        }
        let dir = ArenaDir {
            path: root.join(debate_id),
            root: Beneath::open(root).ok()?,
            id: PathBuf::from(debate_id),
        };
        dir.root
            .is_file(&dir.id.join("manifest.json"))
            .then_some(dir)
    }

    fn rel(&self, name: &str) -> PathBuf {
        self.id.join(name)
    }

    fn shown(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Runs `write` holding the exclusive lock on `manifest.lock` (blocking until another
    /// writer is done; the lock dies with its process, so a crash leaves none behind).
    pub fn locked<T>(
        &self,
        write: impl FnOnce() -> Result<T, ArenaError>,
    ) -> Result<T, ArenaError> {
        let path = self.shown("manifest.lock");
        let file = self
            .root
            .lock_file(&self.rel("manifest.lock"))
            .map_err(io(&path))?;
        file.lock().map_err(io(&path))?;
        let result = write();
        let _ = file.unlock();
        result
    }

    pub fn write_manifest(&self, manifest: &Manifest) -> Result<(), ArenaError> {
        self.locked(|| self.write_json("manifest.json", manifest))
    }

    /// Reads the manifest, changes it and writes it back, all under the lock, so that two
    /// writers (the running debate, `moot arena join`) never lose each other's change. With no
    /// manifest yet, `initial` is the one changed.
    pub fn update_manifest(
        &self,
        initial: &Manifest,
        change: impl FnOnce(&mut Manifest),
    ) -> Result<Manifest, ArenaError> {
        self.locked(|| self.change_manifest(initial, change))
    }

    /// Files a turn moot took in and changes the manifest under one hold of the lock, so that
    /// `moot arena submit` in another process sees either the turn still asked for and its
    /// file there, or the turn filed and no longer asked for; never the file missing while
    /// it is replaced (a second submission of the same turn was accepted in that gap).
    pub fn file_turn(
        &self,
        argument: &Argument,
        initial: &Manifest,
        change: impl FnOnce(&mut Manifest),
    ) -> Result<Manifest, ArenaError> {
        self.locked(|| {
            self.write_turn(argument)?;
            self.change_manifest(initial, change)
        })
    }

    /// The body of [`Self::update_manifest`], for callers that hold the lock.
    fn change_manifest(
        &self,
        initial: &Manifest,
        change: impl FnOnce(&mut Manifest),
    ) -> Result<Manifest, ArenaError> {
        let mut manifest = if self.root.is_file(&self.rel("manifest.json")) {
            read_json(&self.root, &self.rel("manifest.json"))?
        } else {
            initial.clone()
        };
        change(&mut manifest);
        self.write_json("manifest.json", &manifest)?;
        Ok(manifest)
    }

    /// The names in `transcript/` (regular files only; links are not followed).
    pub fn transcript_files(&self) -> Result<Vec<String>, ArenaError> {
        let mut names: Vec<String> = self
            .root
            .list(&self.rel("transcript"))
            .map_err(io(&self.shown("transcript")))?
            .into_iter()
            .filter(|(_, file)| *file)
            .map(|(name, _)| name)
            .collect();
        names.sort();
        Ok(names)
    }

    /// One turn file of `transcript/`, by name.
    pub fn read_turn_file(&self, name: &str) -> Result<Argument, ArenaError> {
        read_json(&self.root, &self.rel("transcript").join(name))
    }

    /// Moves a turn file that cannot be accepted out of the way (`….rejected`), so the turn
    /// can be submitted again.
    pub fn set_aside(&self, name: &str) -> Result<(), ArenaError> {
        let from = self.rel("transcript").join(name);
        let to = self.rel("transcript").join(format!("{name}.rejected"));
        self.root
            .rename(&from, &to)
            .map_err(io(&self.shown("transcript").join(name)))
    }

    /// Drops a turn file written elsewhere (an outside agent's) into `transcript/` under the
    /// lock; refuses to replace one. A file set aside (`….rejected`) takes no turn.
    pub fn submit_turn(&self, argument: &Argument) -> Result<PathBuf, ArenaError> {
        self.locked(|| {
            let prefix = format!("turn_{}_{}_", argument.turn_number, argument.agent_id);
            let taken = self
                .transcript_files()?
                .iter()
                .any(|name| name.starts_with(&prefix) && name.ends_with(".json"));
            if taken {
                return Err(invalid(
                    &self.shown("transcript"),
                    format!(
                        "turn {} of {} is already submitted",
                        argument.turn_number, argument.agent_id
                    ),
                ));
            }
            self.write_turn(argument)
        })
    }

    pub fn write_protocol(&self, text: &str) -> Result<(), ArenaError> {
        self.write_atomic("protocol.md", text.as_bytes())
    }

    pub fn write_persona(&self, persona: &Persona) -> Result<(), ArenaError> {
        let id = &persona.agent_id;
        if !is_safe_name(id) {
            return Err(invalid(
                &self.path,
                format!("agent id {id:?} cannot name a file"),
            ));
        }
        self.write_json(&format!("personas/{id}_persona.json"), persona)?;
        self.write_atomic(
            &format!("personas/{id}_persona.md"),
            persona.to_markdown().as_bytes(),
        )
    }

    /// `transcript/turn_<n>_<agent_id>_<timestamp>.json`; the file of an earlier write of the
    /// same turn is replaced.
    pub fn write_turn(&self, argument: &Argument) -> Result<PathBuf, ArenaError> {
        let id = &argument.agent_id;
        if !is_safe_name(id) {
            return Err(invalid(
                &self.path,
                format!("agent id {id:?} cannot name a file"),
            ));
        }
        let prefix = format!("turn_{}_{id}_", argument.turn_number);
        let file = format!(
            "{prefix}{}.json",
            compact_timestamp(&argument.timestamp_utc)
        );
        let name = format!("transcript/{file}");
        // Written before the earlier copy goes, so a reader never finds the turn missing.
        self.write_json(&name, argument)?;
        for earlier in self.transcript_files().unwrap_or_default() {
            if earlier != file && earlier.starts_with(&prefix) && earlier.ends_with(".json") {
                let _ = self.root.remove(&self.rel("transcript").join(&earlier));
            }
        }
        Ok(self.shown(&name))
    }

    pub fn write_scores(&self, scores: &Scores) -> Result<(), ArenaError> {
        self.write_json("scores.json", scores)
    }

    pub fn write_summary(&self, markdown: &str) -> Result<(), ArenaError> {
        self.write_atomic("summary.md", markdown.as_bytes())
    }

    /// Writes a whole debate (an export).
    pub fn write_all(&self, debate: &ArenaDebate) -> Result<(), ArenaError> {
        self.write_protocol(&debate.protocol_md)?;
        for persona in &debate.personas {
            self.write_persona(persona)?;
        }
        for turn in &debate.turns {
            self.write_turn(turn)?;
        }
        if let Some(scores) = &debate.scores {
            self.write_scores(scores)?;
        }
        if let Some(summary) = &debate.summary {
            self.write_summary(summary)?;
        }
        self.write_manifest(&debate.manifest)
    }

    fn write_json(&self, name: &str, value: &impl Serialize) -> Result<(), ArenaError> {
        let mut text = serde_json::to_string_pretty(value)
            .map_err(|e| invalid(&self.shown(name), e.to_string()))?;
        text.push('\n');
        self.write_atomic(name, text.as_bytes())
    }

    /// Temp file beside the target, fsync, rename: a reader sees the old file or the new one.
    fn write_atomic(&self, name: &str, bytes: &[u8]) -> Result<(), ArenaError> {
        self.root
            .write_atomic(&self.rel(name), bytes)
            .map_err(io(&self.shown(name)))
    }

    /// Reads the debate as its directory holds it now; see `read_lenient`.
    pub fn read(&self) -> Result<(ArenaDebate, Vec<String>), ArenaError> {
        read_beneath(&self.root, &self.id, true)
    }

    pub fn manifest(&self) -> Result<Manifest, ArenaError> {
        read_json(&self.root, &self.rel("manifest.json"))
    }
}

/// Reads an arena directory (written by moot or by hand). Missing required files and fields,
/// oversized or malformed files are errors naming the file; unknown fields are kept. Nothing
/// is read through a link.
pub fn read(dir: &Path) -> Result<ArenaDebate, ArenaError> {
    read_noting(dir).map(|(debate, _)| debate)
}

/// `read`, with what it passed over said: a `.json` entry of `personas/` or `transcript/` that
/// is not a plain file (a link, a directory) is not read, and is named so an import can say
/// so instead of dropping it silently (seed review 002/003 #20).
pub fn read_noting(dir: &Path) -> Result<(ArenaDebate, Vec<String>), ArenaError> {
    let root = Beneath::open(dir).map_err(io(dir))?;
    read_beneath(&root, Path::new(""), false)
}

/// Reads `dir` under `root`. `lenient`: a turn file that cannot be read is skipped and named
/// in the list returned (a running arena's commands go on beside one bad file) instead of
/// failing the whole read.
fn read_beneath(
    root: &Beneath,
    dir: &Path,
    lenient: bool,
) -> Result<(ArenaDebate, Vec<String>), ArenaError> {
    let mut manifest: Manifest = read_json(root, &dir.join("manifest.json"))?;
    completed_from_note_003(&mut manifest);
    let protocol_md = match root.read(&dir.join("protocol.md"), MAX_FILE_BYTES) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(io(&root.display(&dir.join("protocol.md")))(e)),
    };
    let mut personas = Vec::new();
    let mut skipped = Vec::new();
    for path in json_files(root, &dir.join("personas"), &mut skipped)? {
        let persona: Persona = read_json(root, &path)?;
        personas.push(persona);
    }
    // Note 003 writes personas as `personas/<agent>_persona.md`: read as the persona's
    // instructions, for an agent the JSON files do not already give.
    for path in files_ending(root, &dir.join("personas"), "_persona.md", &mut skipped)? {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let agent_id = name.trim_end_matches("_persona.md").to_string();
        if personas.iter().any(|p| p.agent_id == agent_id) {
            continue;
        }
        let bytes = root
            .read(&path, MAX_FILE_BYTES)
            .map_err(io(&root.display(&path)))?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let participant = manifest
            .participants
            .iter()
            .find(|p| p.agent_id == agent_id);
        let heading = text
            .lines()
            .find_map(|l| l.strip_prefix("# "))
            .map(|h| h.trim().to_string());
        personas.push(Persona {
            role_name: participant
                .map(|p| p.role_name.clone())
                .filter(|r| *r != agent_id)
                .or(heading)
                .unwrap_or_else(|| agent_id.clone()),
            stance_summary: participant.map(|p| p.stance.clone()).unwrap_or_default(),
            debate_id: manifest.debate_id.clone(),
            instructions: text,
            background_context: String::new(),
            agent_id,
            extra: Map::new(),
        });
    }
    let mut turns = Vec::new();
    for path in json_files(root, &dir.join("transcript"), &mut skipped)? {
        match read_json::<Argument>(root, &path) {
            Ok(turn) => turns.push(turn),
            Err(error) if lenient => skipped.push(error.to_string()),
            Err(error) => return Err(error),
        }
    }
    turns.sort_by(|a, b| {
        a.turn_number
            .cmp(&b.turn_number)
            .then(a.timestamp_utc.cmp(&b.timestamp_utc))
    });
    let scores = if root.is_file(&dir.join("scores.json")) {
        let mut scores: Scores = read_json(root, &dir.join("scores.json"))?;
        if scores.scoring_info == ScoringInfo::default()
            && let Some(info) = &manifest.scoring_info
        {
            scores.scoring_info = info.clone();
        }
        Some(scores)
    } else {
        None
    };
    let summary = root
        .read(&dir.join("summary.md"), MAX_FILE_BYTES)
        .ok()
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
    Ok((
        ArenaDebate {
            manifest,
            protocol_md,
            personas,
            turns,
            scores,
            summary,
        },
        skipped,
    ))
}

/// A manifest written from note 003's description completed to moot's shape: each
/// participant given by id takes its role and stance from the `roles` and `stances` maps, and
/// the times come from `timestamps` when the top-level ones are missing. The maps themselves
/// stay among the unknown fields, kept as they came.
fn completed_from_note_003(manifest: &mut Manifest) {
    let text_in = |map: &str, id: &str| {
        manifest
            .extra
            .get(map)
            .and_then(|m| m.get(id))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let filled: Vec<(Option<String>, Option<String>)> = manifest
        .participants
        .iter()
        .map(|p| {
            (
                text_in("roles", &p.agent_id),
                text_in("stances", &p.agent_id),
            )
        })
        .collect();
    for (participant, (role, stance)) in manifest.participants.iter_mut().zip(filled) {
        if participant.role_name == participant.agent_id
            && let Some(role) = role
        {
            participant.role_name = role;
        }
        if participant.stance.is_empty()
            && let Some(stance) = stance
        {
            participant.stance = stance;
        }
    }
    let timestamp = |name: &str| {
        manifest
            .extra
            .get("timestamps")
            .and_then(|t| t.get(name))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    if manifest.created_utc.is_empty() {
        manifest.created_utc = timestamp("created_utc").unwrap_or_default();
    }
    if manifest.updated_utc.is_empty() {
        manifest.updated_utc = timestamp("updated_utc")
            .or_else(|| timestamp("closed_utc"))
            .unwrap_or_else(|| manifest.created_utc.clone());
    }
}

/// The `.json` files directly inside `dir` (links and subdirectories are not followed), in
/// name order; a missing directory has none.
fn json_files(
    root: &Beneath,
    dir: &Path,
    passed_over: &mut Vec<String>,
) -> Result<Vec<PathBuf>, ArenaError> {
    files_ending(root, dir, ".json", passed_over)
}

/// The files directly inside `dir` whose names end with `suffix` (links and subdirectories
/// are not followed), in name order; a missing directory has none.
fn files_ending(
    root: &Beneath,
    dir: &Path,
    suffix: &str,
    passed_over: &mut Vec<String>,
) -> Result<Vec<PathBuf>, ArenaError> {
    let entries = match root.list(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(&root.display(dir))(e)),
    };
    let mut files = Vec::new();
    for (name, file) in entries
        .into_iter()
        .filter(|(name, _)| name.ends_with(suffix))
    {
        if file {
            files.push(dir.join(name));
        } else {
            passed_over.push(format!(
                "{}: not a plain file (a link or a directory), so not read",
                root.display(&dir.join(name)).display()
            ));
        }
    }
    files.sort();
    passed_over.sort();
    Ok(files)
}

/// One turn file given by its path (`moot arena submit --file`): the person's own file.
pub fn read_argument(path: &Path) -> Result<Argument, ArenaError> {
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| invalid(path, "names no file"))?;
    let root = Beneath::open(parent).map_err(io(parent))?;
    read_json(&root, Path::new(name))
}

/// The manifest of a debate's directory.
pub fn read_manifest(dir: &Path) -> Result<Manifest, ArenaError> {
    let root = Beneath::open(dir).map_err(io(dir))?;
    read_json(&root, Path::new("manifest.json"))
}

fn read_json<T: serde::de::DeserializeOwned>(
    root: &Beneath,
    relative: &Path,
) -> Result<T, ArenaError> {
    let path = root.display(relative);
    let bytes = root.read(relative, MAX_FILE_BYTES).map_err(|e| {
        if e.raw_os_error() == Some(libc::ELOOP)
            || e.raw_os_error() == Some(libc::EXDEV)
            || e.kind() == std::io::ErrorKind::InvalidInput
        {
            invalid(&path, "not a regular file (links are not followed)")
        } else if e.kind() == std::io::ErrorKind::InvalidData {
            invalid(
                &path,
                format!("{e}; an arena file takes at most {MAX_FILE_BYTES} bytes"),
            )
        } else {
            io(&path)(e)
        }
    })?;
    let text = String::from_utf8_lossy(&bytes);
    serde_json::from_str(&text).map_err(|e| {
        invalid(
            &path,
            format!("line {}, column {}: {e}", e.line(), e.column()),
        )
    })
}

/// Whether `dir` (an arena directory's root) is a directory, or could be made as one: its
/// nearest existing ancestor is a directory this process may write in.
pub fn could_be_made(dir: &std::path::Path) -> Result<(), ArenaError> {
    let mut at = dir;
    loop {
        match std::fs::metadata(at) {
            Ok(meta) if meta.is_dir() => break,
            Ok(_) => return Err(ArenaError::NotADirectory(at.display().to_string())),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                match at.parent() {
                    Some(parent) if !parent.as_os_str().is_empty() => at = parent,
                    _ => return Ok(()),
                }
            }
            Err(e) => return Err(io(at)(e)),
        }
    }
    if at == dir {
        return Ok(());
    }
    crate::beneath::may_write_in(at).map_err(io(at))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample(id: &str) -> ArenaDebate {
        let persona = |role: &str| Persona {
            agent_id: agent_id(role),
            debate_id: id.into(),
            role_name: role.into(),
            stance_summary: format!("{role} stance"),
            instructions: "Argue from evidence.".into(),
            background_context: String::new(),
            extra: Map::new(),
        };
        ArenaDebate {
            manifest: Manifest {
                debate_id: id.into(),
                topic: "Adopt a 4-day work week".into(),
                proposal_ref: None,
                participants: vec![Participant {
                    agent_id: "proponent".into(),
                    role_name: "Proponent".into(),
                    stance: "for".into(),
                    kind: "model".into(),
                    joined: true,
                }],
                protocol: "arena".into(),
                status: ArenaStatus::Closed,
                created_utc: "2026-11-22T18:00:00Z".into(),
                updated_utc: "2026-11-22T18:05:00Z".into(),
                moderator_id: "moderator".into(),
                scoring_info: None,
                turn_requested: None,
                extra: Map::new(),
            },
            protocol_md: "# Arena protocol\n".into(),
            personas: vec![persona("Proponent"), persona("Ethics Advisor")],
            turns: vec![Argument {
                turn_number: 1,
                agent_id: "proponent".into(),
                timestamp_utc: "2026-11-22T18:01:00Z".into(),
                argument_text: "Output per hour rises.".into(),
                references: vec!["data: a 2022 pilot".into()],
                metadata: Map::from_iter([("confidence".to_string(), json!(0.7))]),
                extra: Map::new(),
            }],
            scores: None,
            summary: Some("# Summary\n".into()),
        }
    }

    /// This process's umask, read from /proc (reading it with umask(2) would change it for
    /// every thread).
    fn umask() -> u32 {
        std::fs::read_to_string("/proc/self/status")
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("Umask:"))
            .map(|m| u32::from_str_radix(m.trim(), 8).unwrap())
            .unwrap()
    }

    #[test]
    fn a_debate_round_trips_through_the_notes_layout() {
        let root = tempfile::tempdir().unwrap();
        let debate = sample("DEB-abc");
        let dir = ArenaDir::create(root.path(), "DEB-abc").unwrap();
        dir.write_all(&debate).unwrap();
        for file in [
            "manifest.json",
            "protocol.md",
            "personas/proponent_persona.json",
            "personas/ethics_advisor_persona.md",
            "transcript/turn_1_proponent_20261122T180100Z.json",
            "summary.md",
        ] {
            assert!(dir.path.join(file).is_file(), "{file} missing");
            // Seed review 002/003 #16: shared files, readable as the umask allows (0644 under
            // the usual 022), never the private 0600 of a temp file.
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path.join(file))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o644 & !umask(), "{file}: {mode:o}");
        }
        let read_back = read(&dir.path).unwrap();
        let mut expected = debate;
        expected
            .personas
            .sort_by(|a, b| a.agent_id.cmp(&b.agent_id));
        assert_eq!(read_back, expected);
    }

    #[test]
    fn unknown_fields_are_kept_and_bad_files_are_named() {
        let root = tempfile::tempdir().unwrap();
        let dir = ArenaDir::create(root.path(), "DEB-x").unwrap();
        dir.write_all(&sample("DEB-x")).unwrap();
        let manifest = dir.path.join("manifest.json");
        let mut value: Value =
            serde_json::from_str(&fs::read_to_string(&manifest).unwrap()).unwrap();
        value["reviewer_note"] = json!("hand-written");
        fs::write(&manifest, value.to_string()).unwrap();
        let read_back = read(&dir.path).unwrap();
        assert_eq!(read_back.manifest.extra["reviewer_note"], "hand-written");
        // A bad turn file is named with what is wrong in it.
        for (file, text, wrong) in [
            ("turn_2_x_1.json", "{\"turn_number\": 2,", "line 1"),
            ("turn_3_x_1.json", "{\"turn_number\": 3}", "agent_id"),
        ] {
            let path = dir.path.join("transcript").join(file);
            fs::write(&path, text).unwrap();
            let err = read(&dir.path).unwrap_err().to_string();
            assert!(err.contains(file) && err.contains(wrong), "{err}");
            fs::remove_file(&path).unwrap();
        }
        fs::remove_file(&manifest).unwrap();
        let err = read(&dir.path).unwrap_err().to_string();
        assert!(err.contains("manifest.json"), "{err}");
    }

    #[test]
    fn links_are_not_followed_and_names_stay_inside() {
        let root = tempfile::tempdir().unwrap();
        let dir = ArenaDir::create(root.path(), "DEB-l").unwrap();
        dir.write_all(&sample("DEB-l")).unwrap();
        let outside = root.path().join("secret.json");
        fs::write(&outside, "{}").unwrap();
        std::os::unix::fs::symlink(&outside, dir.path.join("transcript/turn_9_x_1.json")).unwrap();
        // A link is not a file of the arena: it is skipped, never read.
        assert_eq!(read(&dir.path).unwrap().turns.len(), 1);
        assert!(ArenaDir::create(root.path(), "../escape").is_err());
        let mut persona = sample("DEB-l").personas.remove(0);
        persona.agent_id = "../../x".into();
        assert!(dir.write_persona(&persona).is_err());
        assert_eq!(agent_id("Ethics Advisor"), "ethics_advisor");
        assert_eq!(agent_id("!!"), "agent");
    }

    /// Seed review 002/003 #6: a very long role makes a short agent id, cut at a word, so a
    /// persona and turn files named after it are written.
    #[test]
    fn a_long_role_makes_an_agent_id_files_can_be_named_after() {
        let long = format!(
            "Pragmatic engineer who {}cares about delivery",
            "really ".repeat(25)
        );
        let id = agent_id(&long);
        assert!(id.len() <= 64, "{id}");
        assert!(id.starts_with("pragmatic_engineer_who_really_"), "{id}");
        assert!(!id.ends_with('_'));
        assert_eq!(agent_id(&"x".repeat(100)).len(), 64);
        let root = tempfile::tempdir().unwrap();
        let mut debate = sample("DEB-long");
        debate.personas[0].agent_id = id.clone();
        debate.personas[0].role_name = long;
        debate.turns[0].agent_id = id;
        ArenaDir::create(root.path(), "DEB-long")
            .unwrap()
            .write_all(&debate)
            .unwrap();
        let back = read(&root.path().join("DEB-long")).unwrap();
        assert_eq!(back.turns, debate.turns);
        assert_eq!(back.personas.len(), 2);
        assert!(back.personas.iter().all(|p| debate.personas.contains(p)));
    }

    /// N8 and seed review 002/003 #2: a `transcript/` or `manifest.lock` replaced by a link to
    /// somewhere else is not read, written, emptied or created through, by an import, a
    /// submission or the debate's own writes.
    #[test]
    fn a_linked_transcript_or_lock_leads_nowhere() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let keep = outside.path().join("turn_3_proponent_keep.json");
        fs::write(
            &keep,
            r#"{"turn_number":3,"agent_id":"proponent","timestamp_utc":"x","argument_text":"SECRET FROM OUTSIDE"}"#,
        )
        .unwrap();
        let dir = ArenaDir::create(root.path(), "DEB-link").unwrap();
        dir.write_all(&sample("DEB-link")).unwrap();
        fs::rename(
            dir.path.join("transcript"),
            dir.path.join("transcript.real"),
        )
        .unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path.join("transcript")).unwrap();
        // Import and the live commands read nothing from there.
        let refused = read(&dir.path).unwrap_err().to_string();
        assert!(refused.contains("transcript"), "{refused}");
        assert!(dir.read().is_err());
        let mut turn = sample("DEB-link").turns.remove(0);
        turn.turn_number = 3;
        turn.agent_id = "proponent".into();
        assert!(dir.submit_turn(&turn).is_err());
        assert!(dir.write_turn(&turn).is_err());
        assert_eq!(
            fs::read_dir(outside.path()).unwrap().count(),
            1,
            "nothing written there"
        );
        assert!(keep.exists(), "nothing deleted there");
        // A lock file that is a link to a missing path creates nothing.
        fs::remove_file(dir.path.join("manifest.lock")).unwrap();
        let planted = outside.path().join("planted");
        std::os::unix::fs::symlink(&planted, dir.path.join("manifest.lock")).unwrap();
        assert!(dir.write_manifest(&sample("DEB-link").manifest).is_err());
        assert!(!planted.exists());
    }

    /// N9 and N10: a file set aside does not block its turn, and one malformed file in
    /// `transcript/` is skipped and named by a running arena's reads instead of failing them.
    #[test]
    fn a_set_aside_or_malformed_file_blocks_nothing() {
        let root = tempfile::tempdir().unwrap();
        let dir = ArenaDir::create(root.path(), "DEB-bad").unwrap();
        dir.write_all(&sample("DEB-bad")).unwrap();
        fs::write(
            dir.path
                .join("transcript/turn_4_reviewer_20260101T000000Z.json"),
            "{\"turn_number\": 4, \"agent",
        )
        .unwrap();
        dir.set_aside("turn_4_reviewer_20260101T000000Z.json")
            .unwrap();
        assert!(
            dir.path
                .join("transcript/turn_4_reviewer_20260101T000000Z.json.rejected")
                .exists()
        );
        let mut turn = sample("DEB-bad").turns.remove(0);
        turn.turn_number = 4;
        turn.agent_id = "reviewer".into();
        dir.submit_turn(&turn).unwrap();
        fs::write(dir.path.join("transcript/zzz_notes.json"), "{").unwrap();
        let (debate, skipped) = dir.read().unwrap();
        assert_eq!(debate.turns.len(), 2);
        assert_eq!(skipped.len(), 1);
        assert!(skipped[0].contains("zzz_notes.json"), "{skipped:?}");
        // An import stays strict: the file is named.
        assert!(
            read(&dir.path)
                .unwrap_err()
                .to_string()
                .contains("zzz_notes.json")
        );
    }

    /// The debate re-files a submitted turn as moot's acknowledged copy while another process
    /// may submit the same turn again; the second submission must always be refused (the
    /// file was once removed before its copy was written, and a submission in that gap was
    /// taken).
    #[test]
    fn a_turn_being_refiled_is_never_open_to_a_second_submission() {
        let root = tempfile::tempdir().unwrap();
        let dir = ArenaDir::create(root.path(), "DEB-race").unwrap();
        let debate = sample("DEB-race");
        dir.write_all(&debate).unwrap();
        let mut turn = debate.turns[0].clone();
        turn.turn_number = 2;
        turn.agent_id = "reviewer".into();
        dir.submit_turn(&turn).unwrap();
        let refiled = std::sync::atomic::AtomicBool::new(false);
        let accepted = std::thread::scope(|scope| {
            scope.spawn(|| {
                for second in 0..300 {
                    let mut copy = turn.clone();
                    copy.timestamp_utc =
                        format!("2026-11-22T18:{:02}:{:02}Z", second / 60, second % 60);
                    dir.file_turn(&copy, &debate.manifest, |m| m.turn_requested = None)
                        .unwrap();
                }
                refiled.store(true, std::sync::atomic::Ordering::SeqCst);
            });
            let mut accepted = 0;
            while !refiled.load(std::sync::atomic::Ordering::SeqCst) {
                if dir.submit_turn(&turn).is_ok() {
                    accepted += 1;
                }
            }
            accepted
        });
        assert_eq!(accepted, 0, "a second submission of turn 2 was taken");
        let files: Vec<String> = dir
            .transcript_files()
            .unwrap()
            .into_iter()
            .filter(|n| n.starts_with("turn_2_reviewer_"))
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
    }
}
