//! The history commands (list, show, search, export, perspectives): read the journal, print.

use crate::catalog;
use crate::cli::ExportFormat;
use crate::config::Config;
use crate::debate::Confidence;
use crate::debate::Named as _;
use crate::llm::local::models;
use crate::report;
use crate::sanitize;
use crate::store::Store;
use std::io::Write;
use std::path::Path;

/// A command's failure: the message and the exit code it deserves.
#[derive(Debug)]
pub struct Failure {
    pub message: String,
    pub code: i32,
}

impl Failure {
    pub fn usage(message: impl Into<String>) -> Self {
        Failure {
            message: message.into(),
            code: 2,
        }
    }

    pub fn runtime(message: impl Into<String>) -> Self {
        Failure {
            message: message.into(),
            code: 1,
        }
    }
}

impl From<crate::store::StoreError> for Failure {
    fn from(error: crate::store::StoreError) -> Self {
        use crate::store::StoreError::*;
        let code = match error {
            NotFound(_) | Ambiguous { .. } | InUse { .. } => 2,
            _ => 1,
        };
        Failure {
            message: error.to_string(),
            code,
        }
    }
}

fn print(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    // A closed pipe is not an error worth reporting.
    let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
    Ok(())
}

fn one_line(text: &str, width: usize) -> String {
    let flat = sanitize::clean(text)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if flat.chars().count() <= width {
        flat
    } else {
        format!(
            "{}…",
            flat.chars()
                .take(width.saturating_sub(1))
                .collect::<String>()
        )
    }
}

pub fn list(store: &Store, json: bool, limit: usize) -> Result<(), Failure> {
    let debates = store.list(limit)?;
    if json {
        let mut value = serde_json::to_value(&debates).unwrap_or_default();
        sanitize::clean_json(&mut value);
        return print(&format!(
            "{}\n",
            serde_json::to_string_pretty(&value).unwrap_or_default()
        ));
    }
    if debates.is_empty() {
        return print(
            "No debates yet. Start one: moot \"Should we use Redis or PostgreSQL for caching?\"\n",
        );
    }
    // Columns as wide as their widest value, so a long protocol name or confidence
    // ("Requires input") never shifts the rest.
    let protocol_width = debates
        .iter()
        .map(|d| d.protocol.chars().count())
        .chain([8])
        .max()
        .unwrap_or(8);
    let confidence_width = debates
        .iter()
        .map(|d| d.confidence.map_or(1, |c| c.as_str().chars().count()))
        .chain([4])
        .max()
        .unwrap_or(4);
    let mut out = format!(
        "{:<12}  {:<11}  {:<10}  {:<protocol_width$}  {:<confidence_width$}  {:>6}  {}\n",
        "ID", "STATUS", "DATE", "PROTOCOL", "CONF", "ROUNDS", "QUESTION"
    );
    for debate in &debates {
        out.push_str(&format!(
            "{:<12}  {:<11}  {:<10}  {:<protocol_width$}  {:<confidence_width$}  {:>6}  {}\n",
            debate.id,
            debate.status.as_str(),
            debate.created_at.get(..10).unwrap_or(&debate.created_at),
            sanitize::clean(&debate.protocol),
            debate.confidence.map_or("-", Confidence::as_str),
            debate.rounds,
            one_line(&debate.question, 70)
        ));
        // Where a debate that has not finished stopped, so it is clear what resume picks up.
        if let Some(stage) = debate
            .stage
            .as_ref()
            .filter(|_| !debate.status.is_finished_for_good())
        {
            out.push_str(&format!("{:<14}{} {stage}\n", "", debate.status.stopped()));
        }
    }
    print(&out)
}

pub fn show(store: &Store, id: &str, json: bool, markdown: bool) -> Result<(), Failure> {
    let document = report::document(store, id)?;
    if json {
        return print(&format!("{}\n", report::to_json(&document)));
    }
    if markdown {
        return print(&report::to_markdown(&document));
    }
    let debate = &document.debate;
    let mut out = format!(
        "{}  {}  {}  {}\n{}\n",
        debate.id,
        debate.protocol,
        debate.status,
        debate.created_at,
        one_line(&debate.question, 200)
    );
    if let Some(stage) = debate
        .stage
        .as_ref()
        .filter(|_| !debate.status.is_finished_for_good())
    {
        out.push_str(&format!("{} {stage}\n", debate.status.stopped()));
    }
    for seat in &debate.seats {
        out.push_str(&format!(
            "  {}  {}  ({})\n",
            seat.id,
            one_line(&seat.perspective, 80),
            one_line(&seat.priorities.join(", "), 120)
        ));
    }
    let rounds = document.turns.iter().map(|t| t.round).max().unwrap_or(0);
    out.push_str(&format!(
        "{} round(s), {} turn(s), {} argument(s), {} tokens in / {} out{}\n",
        rounds,
        document.turns.len(),
        document.arguments.len(),
        document.tokens.tokens_in,
        document.tokens.tokens_out,
        if document.tokens.estimated {
            " (partly estimated)"
        } else {
            ""
        }
    ));
    if let Some(error) = &debate.error {
        out.push_str(&format!("error: {}\n", one_line(error, 300)));
    }
    for line in document.gates.iter().filter_map(report::gate_line) {
        out.push_str(&format!("{}\n", one_line(&line, 400)));
    }
    for refused in &document.lessons_refused {
        out.push_str(&format!(
            "lesson refused ({}): {}\n",
            one_line(&refused.reason, 120),
            one_line(&refused.lesson, 200)
        ));
    }
    let chain = store.check_chain(&debate.id)?;
    if chain.upgraded > 0 || chain.problem.is_some() {
        out.push_str(chain_line(&debate.id, &chain).trim_start());
    }
    match &document.synthesis {
        Some(synthesis) => {
            out.push('\n');
            out.push_str(&sanitize::clean(&synthesis.markdown));
            if let Some(path) = &synthesis.path {
                out.push_str(&format!("\nDecision record: {path}\n"));
            }
        }
        None => out.push_str("No synthesis yet. The transcript: moot show ID --markdown\n"),
    }
    print(&out)
}

pub fn search(store: &Store, text: &str, json: bool, limit: usize) -> Result<(), Failure> {
    let hits = store.search(text, limit)?;
    if json {
        let mut value = serde_json::to_value(&hits).unwrap_or_default();
        sanitize::clean_json(&mut value);
        return print(&format!(
            "{}\n",
            serde_json::to_string_pretty(&value).unwrap_or_default()
        ));
    }
    if hits.is_empty() {
        return print(&format!("Nothing matches {:?}.\n", one_line(text, 60)));
    }
    let mut out = String::new();
    for hit in &hits {
        out.push_str(&format!(
            "{:<12}  {:<9}  {}\n              {}\n",
            hit.id,
            hit.kind,
            one_line(&hit.question, 70),
            one_line(&hit.snippet, 110)
        ));
    }
    print(&out)
}

pub fn export(
    store: &Store,
    id: &str,
    format: ExportFormat,
    out: Option<&Path>,
) -> Result<(), Failure> {
    let document = report::document(store, id)?;
    let text = match format {
        ExportFormat::Arena => return export_arena(&document, out),
        ExportFormat::Md => report::to_markdown(&document),
        ExportFormat::Json => format!("{}\n", report::to_json(&document)),
        ExportFormat::Yaml => report::to_yaml(&document).ok_or_else(|| {
            Failure::usage(format!(
                "{} has no result yet to export as YAML; `moot show {}` says where it stands",
                document.debate.id, document.debate.id
            ))
        })?,
    };
    write_out(&text, out)
}

/// `export --format arena`: the arena directory under `--out DIR`, never over an existing one.
fn export_arena(document: &report::DebateDocument, out: Option<&Path>) -> Result<(), Failure> {
    let root = out.ok_or_else(|| {
        Failure::usage("--format arena writes a directory: give it with --out DIR".to_string())
    })?;
    let debate = report::to_arena(document);
    let target = root.join(&debate.manifest.debate_id);
    if target.exists() {
        return Err(Failure::usage(format!(
            "{} already exists; choose another --out or remove it first",
            target.display()
        )));
    }
    let dir = crate::arena::ArenaDir::create(root, &debate.manifest.debate_id)
        .map_err(|e| Failure::runtime(e.to_string()))?;
    dir.write_all(&debate)
        .map_err(|e| Failure::runtime(e.to_string()))?;
    eprintln!("moot: wrote {}", dir.path.display());
    Ok(())
}

/// Text to stdout, or to a new file.
fn write_out(text: &str, out: Option<&Path>) -> Result<(), Failure> {
    match out {
        None => print(text),
        Some(path) => {
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
                .map_err(|e| match e.kind() {
                    std::io::ErrorKind::AlreadyExists => Failure::usage(format!(
                        "{} already exists; choose another --out or remove it first",
                        path.display()
                    )),
                    _ => Failure::runtime(format!("cannot create {}: {e}", path.display())),
                })?;
            file.write_all(text.as_bytes())
                .map_err(|e| Failure::runtime(format!("cannot write {}: {e}", path.display())))?;
            eprintln!("moot: wrote {}", path.display());
            Ok(())
        }
    }
}

/// `moot protocols`: every registered protocol with its one-line description and flags.
pub fn protocols(json: bool) -> Result<(), Failure> {
    if json {
        let list: Vec<serde_json::Value> = crate::protocol::REGISTRY
            .iter()
            .map(|p| {
                serde_json::json!({
                    "name": p.name(),
                    "description": p.description(),
                    "flags": p.flags().iter().map(|f| format!("--{}", f.name)).collect::<Vec<_>>(),
                })
            })
            .collect();
        return print(&format!(
            "{}\n",
            serde_json::to_string_pretty(&list).unwrap_or_default()
        ));
    }
    let mut out = String::new();
    for protocol in crate::protocol::REGISTRY {
        out.push_str(&format!(
            "{:<10} {}\n",
            protocol.name(),
            protocol.description()
        ));
        for flag in protocol.flags() {
            out.push_str(&format!(
                "{:<10}   --{}{}  {}\n",
                "",
                flag.name,
                flag.value.map(|v| format!(" {v}")).unwrap_or_default(),
                flag.help
            ));
        }
    }
    print(&out)
}

/// `moot decide ID OPTION`: settles a contested result and prints it as it now reads.
pub fn decide(store: &Store, id: &str, option: &str, by: &str) -> Result<(), Failure> {
    let decided = crate::session::decide(store, id, option, by).map_err(|e| match e {
        crate::session::DecideError::Store(e) => Failure::from(e),
        other => Failure::usage(other.to_string()),
    })?;
    let mut out = sanitize::clean(&decided.markdown);
    if let Some(path) = decided.path {
        out.push_str(&format!("\nRecorded in {path}\n"));
    }
    print(&out)
}

pub fn perspectives(config: &Config, json: bool) -> Result<(), Failure> {
    let all = catalog::catalog(&config.debate.custom_perspectives);
    if json {
        let mut value = serde_json::to_value(&all).unwrap_or_default();
        sanitize::clean_json(&mut value);
        return print(&format!(
            "{}\n",
            serde_json::to_string_pretty(&value).unwrap_or_default()
        ));
    }
    let mut out = String::new();
    for perspective in &all {
        out.push_str(&format!(
            "{}  [{}]\n  priorities: {}\n  trade-offs: {}\n",
            one_line(&perspective.name, 200),
            perspective.source,
            one_line(&perspective.priorities.join(", "), 400),
            one_line(&perspective.trade_offs, 400)
        ));
        if !perspective.opposes.is_empty() {
            out.push_str(&format!(
                "  pulls against: {}\n",
                one_line(&perspective.opposes.join(", "), 400)
            ));
        }
    }
    out.push_str("\nAdd your own under [[debate.custom_perspectives]] in config.toml.\n");
    print(&out)
}

/// `moot model list`: the models on this machine.
pub fn models(json: bool) -> Result<(), Failure> {
    let stored = models::list().map_err(|e| Failure::runtime(e.to_string()))?;
    if json {
        let rows: Vec<serde_json::Value> = stored
            .iter()
            .map(|model| {
                serde_json::json!({
                    "name": model.name,
                    "path": model.path,
                    "bytes": model.manifest.as_ref().map(|m| m.bytes),
                    "sha256": model.manifest.as_ref().map(|m| &m.sha256),
                    "architecture": model.manifest.as_ref().map(|m| &m.architecture),
                    "source": model.manifest.as_ref().map(|m| &m.source),
                    "default": model.name == models::DEFAULT_MODEL.name,
                })
            })
            .collect();
        println!("{}", serde_json::Value::Array(rows));
        return Ok(());
    }
    if stored.is_empty() {
        println!(
            "no models in {}: `moot model pull` fetches the default ({}), `moot model add PATH|URL` adds a GGUF file",
            models::models_dir().display(),
            models::DEFAULT_MODEL.name
        );
        return Ok(());
    }
    println!(
        "{:<28} {:>9}  {:<10} {:<14} SOURCE",
        "NAME", "SIZE", "ARCH", "SHA-256"
    );
    for model in &stored {
        let (size, architecture, digest, source) = match &model.manifest {
            Some(m) => (
                format!("{:.1} MB", m.bytes as f64 / 1_000_000.0),
                m.architecture.clone(),
                m.sha256.chars().take(12).collect::<String>(),
                m.source.clone(),
            ),
            None => (
                "?".into(),
                "?".into(),
                "unverified".into(),
                "copied by hand".into(),
            ),
        };
        let marker = if model.name == models::DEFAULT_MODEL.name {
            " (default)"
        } else {
            ""
        };
        println!(
            "{:<28} {size:>9}  {architecture:<10} {digest:<14} {source}",
            format!("{}{marker}", model.name)
        );
    }
    Ok(())
}

/// `moot import DIR`: an arena directory (written by moot or by hand) into the journal, so the
/// workbench can replay it and search finds it. What moot exported comes back as it was; a
/// hand-written one gets a seat per persona and a round per turn. Nothing is written unless
/// all of it reads.
pub fn import(store: &Store, dir: &Path) -> Result<String, Failure> {
    use crate::arena;
    use crate::debate::{
        Debate, DebateStatus, Event, MODERATOR, Move, Phase, Presentation, Seat, Turn, TurnStatus,
    };
    use serde_json::Value;
    let read = arena::read(dir).map_err(|e| Failure::usage(format!("cannot import: {e}")))?;
    let manifest = &read.manifest;
    let id = manifest.debate_id.trim().to_string();
    let manifest_path = dir.join("manifest.json");
    if !arena::is_safe_name(&id) {
        return Err(Failure::usage(format!(
            "{}: debate_id {id:?} is not a usable id (letters, digits, - _ .)",
            manifest_path.display()
        )));
    }
    if store.debate(&id).is_ok() {
        return Err(Failure::usage(format!(
            "{id} is already in the journal; `moot show {id}` shows it"
        )));
    }
    let moot = manifest.extra.get("moot");
    let mut seats: Vec<Seat> = Vec::new();
    let mut agents: Vec<(String, String)> = Vec::new();
    // Seats in the manifest's order of participants (persona files come in name order).
    let mut personas: Vec<&arena::Persona> = read.personas.iter().collect();
    personas.sort_by_key(|p| {
        manifest
            .participants
            .iter()
            .position(|q| q.agent_id == p.agent_id)
            .unwrap_or(usize::MAX)
    });
    for persona in personas {
        let kept: Option<Seat> = persona
            .extra
            .get("moot")
            .and_then(|m| serde_json::from_value(m.get("seat")?.clone()).ok());
        let seat = kept.unwrap_or_else(|| Seat {
            id: seat_letter(seats.len()),
            perspective: persona.role_name.clone(),
            priorities: Vec::new(),
            trade_offs: persona.instructions.clone(),
            stance: persona.stance_summary.clone(),
            provider: None,
            model: None,
        });
        agents.push((persona.agent_id.clone(), seat.id.clone()));
        seats.push(seat);
    }
    let mut turns: Vec<Turn> = Vec::new();
    let mut positions: Vec<usize> = Vec::new();
    for argument in &read.turns {
        let file = dir.join("transcript").display().to_string();
        let kept = argument.metadata.get("moot");
        let field = |name: &str| kept.and_then(|m| m.get(name)).filter(|v| !v.is_null());
        let seat = match agents.iter().find(|(agent, _)| *agent == argument.agent_id) {
            Some((_, seat)) => seat.clone(),
            None => {
                // An agent with no persona file still gets a seat.
                let seat = Seat {
                    id: seat_letter(seats.len()),
                    perspective: argument.agent_id.clone(),
                    priorities: Vec::new(),
                    trade_offs: String::new(),
                    stance: String::new(),
                    provider: None,
                    model: None,
                };
                agents.push((argument.agent_id.clone(), seat.id.clone()));
                seats.push(seat.clone());
                seat.id
            }
        };
        let seat = field("seat")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or(seat);
        let phase: Phase = field("phase")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or(Phase::Argument);
        let round = field("round")
            .and_then(Value::as_u64)
            .map_or(argument.turn_number, |r| r as u32);
        if turns
            .iter()
            .any(|t| t.round == round && t.phase == phase && t.seat == seat)
        {
            return Err(Failure::usage(format!(
                "{file}: turn {} of {} repeats round {round} ({phase}) for the same seat",
                argument.turn_number, argument.agent_id
            )));
        }
        let moves: Vec<Move> = field("moves")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default();
        let mut data = serde_json::Map::new();
        data.insert(
            "references".into(),
            Value::from(argument.references.clone()),
        );
        let mut metadata = argument.metadata.clone();
        metadata.remove("moot");
        if !metadata.is_empty() {
            data.insert("metadata".into(), Value::Object(metadata));
        }
        if !argument.extra.is_empty() {
            data.insert("extra".into(), Value::Object(argument.extra.clone()));
        }
        positions.push(
            field("position")
                .and_then(Value::as_u64)
                .map_or(usize::MAX, |p| p as usize),
        );
        turns.push(Turn {
            round,
            phase,
            seat,
            content: argument.argument_text.clone(),
            moves,
            confidence: field("confidence")
                .and_then(Value::as_f64)
                .or_else(|| argument.metadata.get("confidence").and_then(Value::as_f64)),
            tokens_in: field("tokens_in").and_then(Value::as_u64).unwrap_or(0),
            tokens_out: field("tokens_out").and_then(Value::as_u64).unwrap_or(0),
            tokens_estimated: field("tokens_estimated")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            latency_ms: field("latency_ms").and_then(Value::as_u64).unwrap_or(0),
            provider: field("provider")
                .and_then(Value::as_str)
                .unwrap_or("arena")
                .to_string(),
            model: field("model")
                .and_then(Value::as_str)
                .unwrap_or("imported")
                .to_string(),
            status: field("status")
                .and_then(|v| serde_json::from_value(v.clone()).ok())
                .unwrap_or(TurnStatus::Ok),
            // What moot exported keeps its own data; a hand-written turn keeps what it said.
            data: if kept.is_some() {
                field("data").cloned()
            } else {
                Some(Value::Object(data))
            },
            note: field("note").and_then(Value::as_str).map(str::to_string),
        });
    }
    // The moderator's turns moot kept in the manifest, back in their places.
    let moderator_turns: Vec<(usize, Turn)> = moot
        .and_then(|m| m.get("moderator_turns"))
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|item| {
                    let position = item.get("position")?.as_u64()? as usize;
                    let turn: Turn = serde_json::from_value(item.get("turn")?.clone()).ok()?;
                    (turn.seat == MODERATOR).then_some((position, turn))
                })
                .collect()
        })
        .unwrap_or_default();
    let mut ordered: Vec<(usize, Turn)> = positions.into_iter().zip(turns).collect();
    ordered.extend(moderator_turns);
    // A stable sort: hand-written turns (no position) keep their file order, after the rest.
    ordered.sort_by_key(|(position, _)| *position);
    let turns: Vec<Turn> = ordered.into_iter().map(|(_, turn)| turn).collect();
    let status = moot
        .and_then(|m| serde_json::from_value(m.get("status")?.clone()).ok())
        .unwrap_or(if manifest.status == arena::ArenaStatus::Closed {
            DebateStatus::Completed
        } else {
            DebateStatus::Cancelled
        });
    let protocol = if crate::protocol::find(&manifest.protocol).is_some() {
        manifest.protocol.clone()
    } else {
        "arena".to_string()
    };
    let debate = Debate {
        id: id.clone(),
        question: manifest.topic.clone(),
        protocol: protocol.clone(),
        status,
        config: serde_json::json!({"imported_from": dir.display().to_string()}),
        seats: seats.clone(),
        created_at: manifest.created_utc.clone(),
        updated_at: manifest.updated_utc.clone(),
        finished_at: None,
        confidence: None,
        error: None,
        stage: None,
    };
    let fail = |e: crate::store::StoreError| Failure::runtime(e.to_string());
    store.create_debate(&debate).map_err(fail)?;
    store.set_seats(&id, &seats).map_err(fail)?;
    let presentation: Presentation = crate::protocol::find(&protocol)
        .map(|p| p.presentation())
        .unwrap_or_default();
    let mut events = vec![
        Event::DebateCreated {
            id: id.clone(),
            question: debate.question.clone(),
            protocol: protocol.clone(),
            resumed: false,
            presentation: presentation.clone(),
        },
        Event::DebateStarted {
            id: id.clone(),
            question: debate.question.clone(),
            protocol: protocol.clone(),
            seats: seats.clone(),
            max_rounds: turns.iter().map(|t| t.round).max().unwrap_or(0),
            provider: "arena".into(),
            model: "imported".into(),
            caveat: None,
            presentation,
        },
    ];
    let mut round = None;
    for turn in &turns {
        store.record_turn(&id, turn).map_err(fail)?;
        if round != Some(turn.round) && turn.seat != MODERATOR {
            round = Some(turn.round);
            events.push(Event::RoundStarted {
                round: turn.round,
                limit: None,
            });
        }
        events.push(turn.completed_event(false));
    }
    if let Some(summary) = &read.summary {
        let kept = moot.and_then(|m| m.get("synthesis"));
        let confidence: Confidence = kept
            .and_then(|s| serde_json::from_value(s.get("confidence")?.clone()).ok())
            .unwrap_or(Confidence::Medium);
        let section = moot
            .and_then(|m| m.get("section"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let data = kept
            .and_then(|s| s.get("data"))
            .cloned()
            .unwrap_or(Value::Null);
        store
            .save_synthesis(
                &id,
                &crate::store::StoredSynthesis {
                    markdown: summary.clone(),
                    data,
                    confidence,
                    path: None,
                    follow_up_path: None,
                    section,
                },
            )
            .map_err(fail)?;
        events.push(Event::Synthesis {
            markdown: summary.clone(),
            confidence,
            path: None,
            draft: false,
        });
    }
    events.push(Event::DebateCompleted {
        id: id.clone(),
        status,
    });
    for event in &events {
        store.record_event(&id, event).map_err(fail)?;
    }
    store
        .set_status(
            &id,
            status,
            (status == DebateStatus::Cancelled).then_some(
                "imported from an arena directory before it closed; it cannot be resumed",
            ),
        )
        .map_err(fail)?;
    Ok(id)
}

fn seat_letter(index: usize) -> String {
    let letter = char::from(b'A' + (index % 26) as u8);
    if index < 26 {
        letter.to_string()
    } else {
        format!("{letter}{}", index / 26)
    }
}

/// A running arena's directory as it stands: a turn file that cannot be read is named on
/// stderr and skipped (the running debate sets it aside), so one bad file breaks no command.
fn read_live(dir: &crate::arena::ArenaDir) -> Result<crate::arena::ArenaDebate, Failure> {
    let (debate, skipped) = dir.read().map_err(|e| Failure::runtime(e.to_string()))?;
    for why in skipped {
        eprintln!("moot: skipped {}", sanitize::clean(&why));
    }
    Ok(debate)
}

/// Where a debate's arena directory is kept written, if it is (`--arena-dir`).
fn live_arena(debate: &crate::debate::Debate) -> Option<crate::arena::ArenaDir> {
    let root = debate
        .config
        .get("protocol_settings")?
        .get("arena_dir")?
        .as_str()?;
    crate::arena::ArenaDir::existing(Path::new(root), &debate.id)
}

/// `moot arena …`. Reading works for any debate (from its live directory, else from the
/// journal); joining and submitting need the live directory of a running arena.
pub fn arena(store: &Store, action: crate::cli::ArenaAction) -> Result<(), Failure> {
    use crate::arena::{self, ArenaStatus};
    use crate::cli::ArenaAction;
    let id = match &action {
        ArenaAction::Info { id, .. }
        | ArenaAction::Persona { id, .. }
        | ArenaAction::Transcript { id, .. }
        | ArenaAction::Join { id, .. }
        | ArenaAction::Submit { id, .. } => id.clone(),
    };
    let debate = store.debate(&id)?;
    let live = live_arena(&debate);
    let read = || -> Result<arena::ArenaDebate, Failure> {
        match &live {
            Some(dir) => read_live(dir),
            None => Ok(report::to_arena(&report::document(store, &debate.id)?)),
        }
    };
    let json_out = |value: &serde_json::Value| {
        let mut value = value.clone();
        sanitize::clean_json(&mut value);
        print(&format!(
            "{}\n",
            serde_json::to_string_pretty(&value).unwrap_or_default()
        ))
    };
    // A seat by agent id or role name.
    let find = |debate: &arena::ArenaDebate, seat: &str| -> Result<arena::Persona, Failure> {
        debate
            .personas
            .iter()
            .find(|p| p.agent_id == seat || p.role_name.eq_ignore_ascii_case(seat))
            .cloned()
            .ok_or_else(|| {
                Failure::usage(format!(
                    "{} has no seat {seat:?}; its seats are {}",
                    debate.manifest.debate_id,
                    debate
                        .personas
                        .iter()
                        .map(|p| format!("{} ({})", p.agent_id, p.role_name))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })
    };
    match action {
        ArenaAction::Info { json, .. } => {
            let manifest = read()?.manifest;
            if json {
                return json_out(&serde_json::to_value(&manifest).unwrap_or_default());
            }
            let status = serde_json::to_value(manifest.status).unwrap_or_default();
            let mut out = format!(
                "{}  {}\nstatus {} · protocol {} · updated {}\n",
                manifest.debate_id,
                sanitize::clean(&manifest.topic),
                status.as_str().unwrap_or("?"),
                manifest.protocol,
                manifest.updated_utc
            );
            for p in &manifest.participants {
                out.push_str(&format!(
                    "  {:<20} {:<8} {}{}\n",
                    p.agent_id,
                    p.kind,
                    sanitize::clean(&p.role_name),
                    if p.joined { "" } else { " (not joined)" }
                ));
            }
            if let Some(request) = &manifest.turn_requested {
                out.push_str(&format!(
                    "waiting for turn {} of {} (round {}) until {}\n",
                    request.turn_number, request.agent_id, request.round, request.deadline_utc
                ));
            }
            print(&out)
        }
        ArenaAction::Persona { seat, json, .. } => {
            let persona = find(&read()?, &seat)?;
            if json {
                return json_out(&serde_json::to_value(&persona).unwrap_or_default());
            }
            print(&sanitize::clean(&persona.to_markdown()))
        }
        ArenaAction::Transcript {
            seat, since, json, ..
        } => {
            let debate = read()?;
            let agent = match &seat {
                Some(seat) => Some(find(&debate, seat)?.agent_id),
                None => None,
            };
            let turns: Vec<&arena::Argument> = debate
                .turns
                .iter()
                .filter(|t| agent.as_ref().is_none_or(|a| *a == t.agent_id))
                .filter(|t| since.is_none_or(|n| t.turn_number > n))
                .collect();
            if json {
                return json_out(&serde_json::to_value(&turns).unwrap_or_default());
            }
            let mut out = String::new();
            for t in turns {
                out.push_str(&format!(
                    "turn {} · {} · {}\n{}\n\n",
                    t.turn_number,
                    t.agent_id,
                    t.timestamp_utc,
                    sanitize::clean(t.argument_text.trim())
                ));
            }
            print(&out)
        }
        ArenaAction::Join { seat, json, .. } => {
            let dir = live.ok_or_else(|| no_live_arena(&debate.id))?;
            let current = read_live(&dir)?;
            let persona = find(&current, &seat)?;
            if current.manifest.status == ArenaStatus::Closed {
                return Err(Failure::usage(format!(
                    "{} is closed; there is nothing to join",
                    debate.id
                )));
            }
            let manifest = dir
                .update_manifest(&current.manifest, |m| {
                    for p in m
                        .participants
                        .iter_mut()
                        .filter(|p| p.agent_id == persona.agent_id)
                    {
                        p.joined = true;
                    }
                })
                .map_err(|e| Failure::runtime(e.to_string()))?;
            let answer = serde_json::json!({"joined": true, "debate_id": debate.id, "agent_id": persona.agent_id, "status": manifest.status});
            if json {
                return json_out(&answer);
            }
            print(&format!("{} joined {}\n", persona.agent_id, debate.id))
        }
        ArenaAction::Submit {
            seat, file, json, ..
        } => {
            let dir = live.ok_or_else(|| no_live_arena(&debate.id))?;
            let manifest = dir
                .manifest()
                .map_err(|e| Failure::runtime(e.to_string()))?;
            if manifest.status == ArenaStatus::Closed {
                return Err(Failure::usage(format!(
                    "{} is closed; it takes no more turns",
                    debate.id
                )));
            }
            let current = read_live(&dir)?;
            let persona = find(&current, &seat)?;
            let request = manifest.turn_requested.clone().ok_or_else(|| {
                Failure::usage(format!(
                    "{} waits for no turn now; `moot arena info {}` says where it stands",
                    debate.id, debate.id
                ))
            })?;
            if request.agent_id != persona.agent_id {
                return Err(Failure::usage(format!(
                    "it is not {}'s turn: {} waits for turn {} of {}",
                    persona.agent_id, debate.id, request.turn_number, request.agent_id
                )));
            }
            let argument = submitted_argument(&file, &request)?;
            let path = dir
                .submit_turn(&argument)
                .map_err(|e| Failure::usage(e.to_string()))?;
            let answer = serde_json::json!({
                "submitted": true,
                "debate_id": debate.id,
                "turn_number": argument.turn_number,
                "agent_id": argument.agent_id,
                "path": path.display().to_string(),
            });
            if json {
                return json_out(&answer);
            }
            print(&format!(
                "submitted turn {} for {}; the debate acknowledges it in its manifest\n",
                argument.turn_number, argument.agent_id
            ))
        }
    }
}

fn no_live_arena(id: &str) -> Failure {
    Failure::usage(format!(
        "{id} keeps no arena directory (start it with --protocol arena --arena-dir DIR)"
    ))
}

/// The argument in a submitted file: the note's fields, with the requested turn's number and
/// agent filled in where missing and refused where they differ.
fn submitted_argument(
    file: &Path,
    request: &crate::arena::TurnRequest,
) -> Result<crate::arena::Argument, Failure> {
    use serde_json::Value;
    let meta = std::fs::metadata(file)
        .map_err(|e| Failure::usage(format!("--file {}: cannot be read ({e})", file.display())))?;
    if meta.len() > crate::arena::MAX_FILE_BYTES {
        return Err(Failure::usage(format!(
            "--file {}: {} bytes; a turn takes at most {}",
            file.display(),
            meta.len(),
            crate::arena::MAX_FILE_BYTES
        )));
    }
    let text = std::fs::read_to_string(file)
        .map_err(|e| Failure::usage(format!("--file {}: cannot be read ({e})", file.display())))?;
    let mut value: Value = serde_json::from_str(&text).map_err(|e| {
        Failure::usage(format!(
            "--file {}: line {}, column {}: {e}",
            file.display(),
            e.line(),
            e.column()
        ))
    })?;
    let object = value.as_object_mut().ok_or_else(|| {
        Failure::usage(format!(
            "--file {}: a turn is a JSON object with `argument_text`",
            file.display()
        ))
    })?;
    match object.get("turn_number").and_then(Value::as_u64) {
        Some(n) if n != u64::from(request.turn_number) => {
            return Err(Failure::usage(format!(
                "--file {}: turn_number {n} is not the turn the debate waits for ({})",
                file.display(),
                request.turn_number
            )));
        }
        _ => {
            object.insert("turn_number".into(), Value::from(request.turn_number));
        }
    }
    match object.get("agent_id").and_then(Value::as_str) {
        Some(agent) if agent != request.agent_id => {
            return Err(Failure::usage(format!(
                "--file {}: agent_id {agent:?} is not the seat whose turn it is ({})",
                file.display(),
                request.agent_id
            )));
        }
        _ => {
            object.insert("agent_id".into(), Value::from(request.agent_id.clone()));
        }
    }
    object
        .entry("timestamp_utc")
        .or_insert_with(|| Value::from(crate::debate::now_rfc3339()));
    let argument: crate::arena::Argument = serde_json::from_value(value)
        .map_err(|e| Failure::usage(format!("--file {}: {e}", file.display())))?;
    if argument.argument_text.trim().is_empty() {
        return Err(Failure::usage(format!(
            "--file {}: `argument_text` is empty; the turn needs words",
            file.display()
        )));
    }
    Ok(argument)
}

/// `moot gates ID`: each approval gate the debate reached, and how it was decided.
pub fn gates(store: &Store, id: &str, json: bool) -> Result<(), Failure> {
    let debate = store.debate(id)?;
    let gates = store.gates(&debate.id)?;
    if json {
        let mut value = serde_json::to_value(&gates).unwrap_or_default();
        sanitize::clean_json(&mut value);
        return print(&format!(
            "{}\n",
            serde_json::to_string_pretty(&value).unwrap_or_default()
        ));
    }
    if gates.is_empty() {
        return print(&format!("{} reached no gate.\n", debate.id));
    }
    let mut out = String::new();
    for gate in &gates {
        let decided = match (&gate.decision, &gate.decided_by) {
            (Some(decision), Some(by)) => format!(
                "{decision} by {by} at {}{}",
                gate.decided_at.as_deref().unwrap_or("?"),
                gate.reason
                    .as_deref()
                    .map(|r| format!(" — {}", one_line(r, 80)))
                    .unwrap_or_default()
            ),
            _ => "waiting (`moot approve`, or `moot reject --reason …`)".to_string(),
        };
        out.push_str(&format!(
            "{:<22} {}\n  {}\n",
            gate.gate,
            decided,
            one_line(&gate.summary, 100)
        ));
    }
    print(&out)
}

/// `moot code versions | diff | apply`: a code debate's versions, read from its result and its
/// branch.
pub fn code(store: &Store, action: crate::cli::CodeAction) -> Result<(), Failure> {
    use crate::cli::CodeAction;
    use crate::code::history::History;
    use crate::code::record::CodeResult;
    let id = match &action {
        CodeAction::Versions { id, .. }
        | CodeAction::Episodes { id, .. }
        | CodeAction::Diff { id, .. }
        | CodeAction::Apply { id, .. } => id,
    };
    let debate = store.debate(id)?;
    if debate.protocol != "code" {
        return Err(Failure::usage(format!(
            "{} is a {} debate; `moot code` reads code debates",
            debate.id, debate.protocol
        )));
    }
    let result: CodeResult = store
        .synthesis(&debate.id)?
        .and_then(|s| serde_json::from_value(s.data).ok())
        .ok_or_else(|| {
            Failure::usage(format!(
                "{} has no result yet: it has not concluded",
                debate.id
            ))
        })?;
    let origin = std::path::PathBuf::from(
        debate.config["protocol_settings"]["origin"]
            .as_str()
            .unwrap_or("."),
    );
    // Outside git the versions live only in the journal: diffs and applies read their files.
    let in_git = debate.config["protocol_settings"]["in_git"]
        .as_bool()
        .unwrap_or(true);
    // In git, moot's own git dir holds them (or, for a debate from before it kept one, a
    // branch in the user's repository); with neither, the journal's files stand in.
    let history = if in_git {
        History::locate(
            &store.versions_git_dir(&debate.id),
            &origin,
            &debate.id,
            &result.versions,
        )
    } else {
        History::Journal
    };
    let base_files: Vec<(String, String)> =
        serde_json::from_value(debate.config["protocol_settings"]["files"].clone())
            .unwrap_or_default();
    let files_at =
        |number: u32| crate::code::versions::files_at(&base_files, &result.versions, number);
    let known = |number: u32| -> Result<u32, Failure> {
        if result.versions.iter().any(|v| v.number == number) {
            Ok(number)
        } else {
            Err(Failure::usage(format!(
                "{} has no version {number}; `moot code versions {}` lists them",
                debate.id, debate.id
            )))
        }
    };
    // A version that changed nothing has no commit of its own: the one before it stands.
    let commit_of = |number: u32| -> Result<String, Failure> {
        match crate::code::versions::commit_of(&result.versions, known(number)?) {
            Some(commit) => Ok(commit),
            None => history.base().map_err(Failure::runtime),
        }
    };
    match action {
        CodeAction::Versions { json, .. } => {
            if json {
                let mut value = serde_json::json!({
                    "id": debate.id, "winner": result.winner, "versions": result.versions,
                });
                sanitize::clean_json(&mut value);
                return print(&format!(
                    "{}\n",
                    serde_json::to_string_pretty(&value).unwrap_or_default()
                ));
            }
            let mut out = format!("{} · {}\n", debate.id, sanitize::clean(&debate.question));
            for v in &result.versions {
                out.push_str(&format!(
                    "{} v{:<3} {:<8} quality {:<5} tests {:<18} {:>4} lines  {}\n",
                    if Some(v.number) == result.winner {
                        "★"
                    } else {
                        " "
                    },
                    v.number,
                    match v.hooks_ok {
                        Some(true) => "pass",
                        Some(false) => "fail",
                        None => "untested",
                    },
                    v.quality
                        .map_or("–".into(), |q| format!("{:.2}", q.score())),
                    match (v.passed, v.failed, v.hooks_ok) {
                        (Some(p), Some(f), _) => format!("{p} passed, {f} failed"),
                        (_, _, Some(false)) => "failed".into(),
                        _ => "–".into(),
                    },
                    v.lines(),
                    match v.commit.as_deref() {
                        Some(commit) => commit.chars().take(12).collect::<String>(),
                        None if in_git => "(no change)".into(),
                        // Outside git no version has a commit: the journal holds them.
                        None => String::new(),
                    },
                ));
            }
            print(&out)
        }
        CodeAction::Episodes { json, .. } => {
            let episodes = result.episodes();
            if json {
                let mut value = serde_json::json!({"id": debate.id, "episodes": episodes});
                sanitize::clean_json(&mut value);
                return print(&format!(
                    "{}\n",
                    serde_json::to_string_pretty(&value).unwrap_or_default()
                ));
            }
            let mut out = format!("{} · {}\n", debate.id, sanitize::clean(&debate.question));
            for episode in &episodes {
                out.push_str(&format!(
                    "\nattempt {} · version {} · {}\n",
                    episode.attempt,
                    episode.version.number,
                    if episode.version.passes() {
                        "passed"
                    } else {
                        "failed"
                    }
                ));
                for (path, content) in &episode.version.files {
                    out.push_str(&format!("  {path} ({} lines)\n", content.lines().count()));
                }
                for test in &episode.tests {
                    out.push_str(&format!("  {}\n", test.summary()));
                }
                if let Some(r) = &episode.reflection {
                    out.push_str(&format!(
                        "  reflection ({:.0} % confident): {} — {} — next: {}\n",
                        r.confidence * 100.0,
                        r.root_cause,
                        r.went_wrong,
                        r.change_next
                    ));
                }
            }
            if episodes.is_empty() {
                out.push_str("no attempts were recorded\n");
            }
            print(&sanitize::clean(&out))
        }
        CodeAction::Diff { from, to, .. } if history == History::Journal => {
            let diff =
                crate::code::versions::full_diff(&files_at(known(from)?), &files_at(known(to)?));
            print(&format!("{}\n", sanitize::clean(&diff)))
        }
        CodeAction::Diff { from, to, .. } => {
            let diff = history
                .diff(&commit_of(from)?, &commit_of(to)?)
                .map_err(Failure::runtime)?;
            print(&format!("{}\n", sanitize::clean(&diff)))
        }
        CodeAction::Apply {
            version,
            force,
            failing,
            ..
        } => {
            let number = version.or(result.winner).ok_or_else(|| {
                Failure::usage(format!("{} has no winner; give --version N", debate.id))
            })?;
            let fails = result
                .versions
                .iter()
                .find(|v| v.number == number)
                .is_some_and(|v| v.hooks_ok == Some(false));
            if fails && !failing {
                let which: Vec<String> = result
                    .tests
                    .iter()
                    .filter(|(n, hook)| *n == number && !hook.ok())
                    .map(|(_, hook)| hook.summary())
                    .collect();
                return Err(Failure::usage(format!(
                    "version {number} of {} fails its tests ({}), so nothing was applied; apply it anyway with --failing",
                    debate.id,
                    if which.is_empty() {
                        "its hooks failed".to_string()
                    } else {
                        sanitize::clean(&which.join("; "))
                    }
                )));
            }
            let source = crate::code::apply::Source {
                origin: &origin,
                history: &history,
                base: &base_files,
                versions: &result.versions,
            };
            match crate::code::apply::apply_version(&source, known(number)?, force) {
                Ok(files) if files.is_empty() => print(&format!(
                    "version {number} changes nothing against your tree's base\n"
                )),
                Ok(files) => print(&format!(
                    "applied version {number} of {} to {}: {}\n",
                    debate.id,
                    origin.display(),
                    files.join(", ")
                )),
                Err(error) => Err(Failure::usage(error.to_string())),
            }
        }
    }
}

/// A lesson's id as typed: `L3` or `3`.
fn lesson_id(text: &str) -> Result<i64, Failure> {
    text.trim()
        .trim_start_matches(['L', 'l'])
        .parse()
        .map_err(|_| {
            Failure::usage(format!(
                "{text:?} is not a lesson id; `moot lessons list` shows them (L1, L2…)"
            ))
        })
}

/// `moot lessons list | show | rm | off | on`.
pub fn lessons(store: &Store, action: crate::cli::LessonsAction) -> Result<(), Failure> {
    use crate::cli::LessonsAction;
    let json_out = |value: serde_json::Value| {
        let mut value = value;
        sanitize::clean_json(&mut value);
        print(&format!(
            "{}\n",
            serde_json::to_string_pretty(&value).unwrap_or_default()
        ))
    };
    match action {
        LessonsAction::List { json } => {
            let lessons = store.lessons()?;
            if json {
                return json_out(serde_json::to_value(&lessons).unwrap_or_default());
            }
            let off = if crate::lessons::turned_off(store)? {
                " (lessons are off: `moot lessons on` turns them back on)"
            } else {
                ""
            };
            if lessons.is_empty() {
                return print(&format!(
                    "No lessons yet{off}; each finished debate writes some.\n"
                ));
            }
            let mut out = format!("{} lessons{off}\n", lessons.len());
            for lesson in &lessons {
                out.push_str(&format!(
                    "L{:<4} {:<5} {:>3.0}%  {}  {}\n",
                    lesson.id,
                    lesson.went,
                    lesson.confidence * 100.0,
                    lesson.source,
                    one_line(&lesson.text, 90)
                ));
            }
            print(&out)
        }
        LessonsAction::Show { id, json } => {
            let number = lesson_id(&id)?;
            let lesson = store.lesson(number)?.ok_or_else(|| {
                Failure::usage(format!(
                    "there is no lesson L{number}; `moot lessons list` shows them"
                ))
            })?;
            if json {
                return json_out(serde_json::to_value(&lesson).unwrap_or_default());
            }
            print(&sanitize::clean(&format!(
                "L{} · went {} · confidence {:.0}%\nfrom {} ({}), {}\n\n{}\n\nNext time: {}\n",
                lesson.id,
                lesson.went,
                lesson.confidence * 100.0,
                lesson.source,
                lesson.question,
                lesson.created_at,
                lesson.text,
                lesson.advice
            )))
        }
        LessonsAction::Rm { id } => {
            let number = lesson_id(&id)?;
            if !store.remove_lesson(number)? {
                return Err(Failure::usage(format!(
                    "there is no lesson L{number}; `moot lessons list` shows them"
                )));
            }
            print(&format!("removed L{number}\n"))
        }
        LessonsAction::Off => {
            store.set_preference(crate::lessons::PREFERENCE, "off")?;
            print(
                "Lessons are off: debates are given none and write none (`moot lessons on` undoes it).\n",
            )
        }
        LessonsAction::On => {
            store.set_preference(crate::lessons::PREFERENCE, "on")?;
            print("Lessons are on.\n")
        }
    }
}

/// `moot audit ID [--json]`: the debate's audit trail, secrets already redacted when written.
pub fn audit(store: &Store, id: &str, json: bool) -> Result<(), Failure> {
    let debate = store.debate(id)?;
    let entries = store.audit(&debate.id)?;
    let chain = store.check_chain(&debate.id)?;
    if json {
        let mut value = serde_json::json!({
            "id": debate.id,
            "question": debate.question,
            "protocol": debate.protocol,
            "chain": chain,
            "entries": entries,
        });
        sanitize::clean_json(&mut value);
        return print(&format!(
            "{}\n",
            serde_json::to_string_pretty(&value).unwrap_or_default()
        ));
    }
    let head = chain_line(&debate.id, &chain);
    if entries.is_empty() {
        return print(&format!(
            "{} has no audit trail (it was run before moot kept one).\n{head}",
            debate.id
        ));
    }
    print(&format!(
        "{}{head}",
        crate::audit::to_text(&debate.id, &debate.question, &entries)
    ))
}

/// The journal chain's head as `moot audit` and `moot show` print it, saying whether it was
/// chained at upgrade and whether it still holds.
fn chain_line(id: &str, chain: &crate::store::ChainCheck) -> String {
    let Some(head) = &chain.head else {
        return String::new();
    };
    let mut line = format!(
        "\njournal chain: {} rows, head sha256:{head}",
        chain.entries
    );
    if chain.upgraded > 0 {
        line.push_str(&format!(
            "; chained at upgrade ({} rows journaled before moot kept a chain)",
            chain.upgraded
        ));
    }
    match &chain.problem {
        Some(problem) => line.push_str(&format!(
            "\nTHE CHAIN DOES NOT HOLD: {}; `moot audit {id} --verify` says more",
            sanitize::clean(problem)
        )),
        None => line.push_str("; it holds"),
    }
    line.push('\n');
    line
}

/// `moot approve ID` / `moot reject ID --reason …`: settles the gate the debate waits at; the
/// running debate reads the decision from the journal.
pub fn decide_gate(store: &Store, id: &str, reason: Option<&str>, by: &str) -> Result<(), Failure> {
    let debate = store.debate(id)?;
    if let Some(reason) = reason
        && reason.trim().is_empty()
    {
        return Err(Failure::usage(
            "--reason must say why the gate is rejected".to_string(),
        ));
    }
    let waiting = store
        .gates(&debate.id)?
        .into_iter()
        .rfind(|g| g.decision.is_none())
        .ok_or_else(|| {
            Failure::usage(format!(
                "{} waits at no gate now; `moot gates {}` lists its gates",
                debate.id, debate.id
            ))
        })?;
    let decision = if reason.is_some() {
        "rejected"
    } else {
        "approved"
    };
    if !store.decide_gate(
        &debate.id,
        &waiting.gate,
        decision,
        by,
        reason.map(str::trim),
    )? {
        return Err(Failure::usage(format!(
            "the gate {} was decided a moment ago; `moot gates {}` says how",
            waiting.gate, debate.id
        )));
    }
    print(&format!(
        "{decision} gate {} of {}\n",
        waiting.gate, debate.id
    ))
}
