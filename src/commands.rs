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
        ExportFormat::Md => report::to_markdown(&document),
        ExportFormat::Json => format!("{}\n", report::to_json(&document)),
        ExportFormat::Yaml => report::to_yaml(&document).ok_or_else(|| {
            Failure::usage(format!(
                "{} has no result yet to export as YAML; `moot show {}` says where it stands",
                document.debate.id, document.debate.id
            ))
        })?,
    };
    match out {
        None => print(&text),
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
