//! Reading the journal back: `list`, `show`, `search`, `export` and `audit`.

use super::{Failure, one_line, print, print_json};
use crate::cli::ExportFormat;
use crate::debate::Confidence;
use crate::debate::Named as _;
use crate::report;
use crate::sanitize;
use crate::store::Store;
use std::io::Write;
use std::path::Path;

pub fn list(store: &Store, json: bool, limit: usize) -> Result<(), Failure> {
    let debates = store.list(limit)?;
    if json {
        return print_json(&crate::session::listed(
            &crate::protocol::builtin(),
            store,
            debates,
        )?);
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
    let document = crate::session::document(&crate::protocol::builtin(), store, id)?;
    if json {
        return print(&format!("{}\n", report::to_json(&document)));
    }
    if markdown {
        return print(&report::to_markdown(&document, record_is_report(&document)));
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
            if let Some(path) = &synthesis.follow_up_path {
                out.push_str(&format!("Follow-up issue draft: {path}\n"));
            }
        }
        None => out.push_str("No synthesis yet. The transcript: moot show ID --markdown\n"),
    }
    print(&out)
}

pub fn search(store: &Store, text: &str, json: bool, limit: usize) -> Result<(), Failure> {
    let hits = store.search(text, limit)?;
    if json {
        return print_json(&hits);
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
    let document = crate::session::document(&crate::protocol::builtin(), store, id)?;
    let text = match format {
        ExportFormat::Arena => return export_arena(&document, out),
        ExportFormat::Md => report::to_markdown(&document, record_is_report(&document)),
        ExportFormat::Json => format!("{}\n", report::to_json(&document)),
        ExportFormat::Mermaid | ExportFormat::Dot => {
            let events = store.events(&document.debate.id)?;
            let language = match format {
                ExportFormat::Dot => crate::diagram::Language::Dot,
                _ => crate::diagram::Language::Mermaid,
            };
            report::argument_map(&document, &events, language)
        }
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
    let debate = super::arena::export(document);
    let target = root.join(&debate.manifest.debate_id);
    if target.exists() {
        return Err(Failure::usage(format!(
            "{} already exists; choose another --out or remove it first",
            target.display()
        )));
    }
    // Written whole beside the target, then renamed into place: a failure leaves no half
    // directory behind to block the next attempt (seed review 002/003 #6).
    let staging = format!(
        "{}.partial-{}",
        debate.manifest.debate_id,
        std::process::id()
    );
    let written = crate::arena::ArenaDir::create(root, &staging)
        .and_then(|dir| dir.write_all(&debate).map(|()| dir.path));
    let staged = match written {
        Ok(path) => path,
        Err(e) => {
            let _ = std::fs::remove_dir_all(root.join(&staging));
            return Err(Failure::runtime(e.to_string()));
        }
    };
    if let Err(e) = std::fs::rename(&staged, &target) {
        let _ = std::fs::remove_dir_all(&staged);
        return Err(Failure::runtime(format!(
            "cannot move the export into {}: {e}",
            target.display()
        )));
    }
    eprintln!("moot: wrote {}", target.display());
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

/// `moot audit ID [--json]`: the debate's audit trail, secrets already redacted when written.
pub fn audit(store: &Store, id: &str, json: bool) -> Result<(), Failure> {
    let debate = store.debate(id)?;
    let entries = store.audit(&debate.id)?;
    let chain = store.check_chain(&debate.id)?;
    if json {
        let value = serde_json::json!({
            "id": debate.id,
            "question": debate.question,
            "protocol": debate.protocol,
            "chain": chain,
            "entries": entries,
        });
        return print_json(&value);
    }
    let head = chain_line(&debate.id, &chain);
    if entries.is_empty() {
        let why = match debate.config.get("imported_from").and_then(|v| v.as_str()) {
            Some(from) => format!(
                "it was imported from {}, and its requests were made elsewhere",
                crate::sanitize::clean(from)
            ),
            None => "it was run before moot kept one".to_string(),
        };
        return print(&format!(
            "{} has no audit trail ({why}).\n{head}",
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

/// Whether the debate's protocol writes a record that is already the whole report.
fn record_is_report(document: &report::DebateDocument) -> bool {
    crate::protocol::builtin()
        .find(&document.debate.protocol)
        .is_some_and(|p| p.presentation().record_is_report)
}
