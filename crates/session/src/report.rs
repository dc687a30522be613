//! A stored debate as one document (JSON for `show --json` / `export --format json`, markdown
//! for `show --markdown` / `export --format md`), including the derived views.

use crate::argue::{Argument, CommitmentStore, Edge, argument_graph, commitment_stores};
use crate::debate::Named as _;
use crate::debate::{
    Answer, AskKind, Confidence, Control, Debate, MODERATOR, Round, Seat, Turn, TurnStatus,
};
use crate::sanitize;
use crate::store::{Store, StoreError};
use serde::Serialize;
use std::fmt::Write as _;

#[derive(Debug, Serialize)]
pub struct CheckpointView {
    pub round: u32,
    pub kind: AskKind,
    pub decision: Answer,
    pub guidance: Option<String>,
    /// Who answered; empty for answers stored before moot kept it.
    pub answered_by: String,
}

/// A lesson the debate drafted and moot refused.
#[derive(Debug, Serialize)]
pub struct RefusedLesson {
    pub lesson: String,
    pub reason: String,
}

#[derive(Debug, Serialize)]
pub struct SynthesisView {
    pub markdown: String,
    pub confidence: Confidence,
    pub path: Option<String>,
    pub follow_up_path: Option<String>,
    pub data: serde_json::Value,
}

#[derive(Debug, Serialize)]
pub struct Tokens {
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub estimated: bool,
}

/// Everything stored about a debate, plus what is derived from it.
#[derive(Debug, Serialize)]
pub struct DebateDocument {
    #[serde(flatten)]
    pub debate: Debate,
    pub turns: Vec<Turn>,
    /// When each turn was journaled (RFC 3339), in the order of `turns`: for exports that
    /// date each turn (the arena layout's `timestamp_utc`).
    #[serde(skip)]
    pub turn_times: Vec<String>,
    pub checkpoints: Vec<CheckpointView>,
    /// Every approval gate the debate reached, with its decision, who made it and why.
    pub gates: Vec<crate::store::GateRecord>,
    /// Lessons this debate drafted that were refused, with why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lessons_refused: Vec<RefusedLesson>,
    pub synthesis: Option<SynthesisView>,
    pub commitments: Vec<CommitmentStore>,
    pub arguments: Vec<Argument>,
    pub relations: Vec<Edge>,
    /// How the seats changed their minds: shifts, conformity, anchoring, hollow agreement.
    pub dynamics: DynamicsView,
    pub tokens: Tokens,
    /// The protocol's own document under its name (`debate_result`), when it has one.
    #[serde(flatten)]
    pub outcome: std::collections::BTreeMap<String, serde_json::Value>,
    /// The uniform outcome and final consensus score, once the protocol has read its result
    /// (`with_conclusion`; the protocols are read above this module).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub concluded: Option<crate::debate::Concluded>,
    /// Who started the debate, when moot recorded it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initiated_by: Option<String>,
}

impl DebateDocument {
    /// The document with the uniform outcome its protocol read from the stored result.
    pub fn with_conclusion(mut self, resolution: Option<crate::debate::Resolution>) -> Self {
        self.concluded = resolution
            .zip(self.synthesis.as_ref().map(|s| s.confidence))
            .map(|(resolution, confidence)| crate::debate::Concluded::new(resolution, confidence));
        self
    }
}

/// The debate's dynamics as its moves show them (`argue::dynamics`), and the agreements moot
/// flagged hollow while it ran (its `hollow_agreement` flags).
#[derive(Debug, Serialize)]
pub struct DynamicsView {
    #[serde(flatten)]
    pub moves: crate::argue::Dynamics,
    pub hollow_agreements: Vec<FlaggedRound>,
}

/// A round moot flagged, and what it said.
#[derive(Debug, Serialize)]
pub struct FlaggedRound {
    pub round: u32,
    pub detail: String,
}

/// The record's closing **Dynamics:** paragraph (after the result line), or nothing when no
/// seat gave ground.
pub fn dynamics_line(turns: &[Turn]) -> String {
    let summary = crate::argue::dynamics(turns).summary();
    match summary.is_empty() {
        true => String::new(),
        false => format!("\n\n**Dynamics:** {summary}."),
    }
}

/// Who started a debate, as its stored settings say.
pub fn initiated_by(debate: &Debate) -> Option<String> {
    debate
        .config
        .get("initiated_by")
        .and_then(serde_json::Value::as_str)
        .map(str::to_string)
}

pub fn document(store: &Store, id: &str) -> Result<DebateDocument, StoreError> {
    let debate = store.debate(id)?;
    let turns = store.turns(&debate.id)?;
    let turn_times = store.turn_times(&debate.id)?;
    let checkpoints = store
        .checkpoints(&debate.id)?
        .into_iter()
        .map(|c| CheckpointView {
            round: c.round,
            kind: c.kind,
            decision: c.control.answer(),
            guidance: c.control.guidance().map(str::to_string),
            answered_by: c.answered_by,
        })
        .collect();
    let gates = store.gates(&debate.id)?;
    let events = store.events(&debate.id)?;
    let hollow_agreements = events
        .iter()
        .filter_map(|event| match event {
            crate::debate::Event::Flag {
                round,
                kind: crate::debate::FlagKind::HollowAgreement,
                detail,
                ..
            } => Some(FlaggedRound {
                round: *round,
                detail: detail.clone(),
            }),
            _ => None,
        })
        .collect();
    let lessons_refused = events
        .into_iter()
        .filter_map(|event| match event {
            crate::debate::Event::LessonRefused { lesson, reason } => {
                Some(RefusedLesson { lesson, reason })
            }
            _ => None,
        })
        .collect();
    let stored = store.synthesis(&debate.id)?;
    let outcome = stored
        .as_ref()
        .and_then(|s| Some((s.section.clone()?, s.data.clone())))
        .into_iter()
        .collect();
    let synthesis = stored.map(|s| SynthesisView {
        markdown: s.markdown,
        confidence: s.confidence,
        path: s.path,
        follow_up_path: s.follow_up_path,
        data: s.data,
    });
    let seat_ids: Vec<String> = debate.seats.iter().map(|s| s.id.clone()).collect();
    let commitments = commitment_stores(&seat_ids, &turns);
    let graph = argument_graph(&turns);
    let dynamics = DynamicsView {
        moves: crate::argue::dynamics(&turns),
        hollow_agreements,
    };
    let tokens = Tokens {
        tokens_in: turns.iter().map(|t| t.tokens_in).sum(),
        tokens_out: turns.iter().map(|t| t.tokens_out).sum(),
        estimated: turns.iter().any(|t| t.tokens_estimated),
    };
    let initiated_by = initiated_by(&debate);
    Ok(DebateDocument {
        debate,
        turns,
        turn_times,
        checkpoints,
        gates,
        lessons_refused,
        synthesis,
        commitments,
        arguments: graph.arguments,
        relations: graph.relations,
        dynamics,
        tokens,
        outcome,
        concluded: None,
        initiated_by,
    })
}

/// The protocol's own document (`debate_result:`, or the moderated `synthesis:`) as YAML;
/// `None` before the debate has one.
pub fn to_yaml(document: &DebateDocument) -> Option<String> {
    let synthesis = document.synthesis.as_ref()?;
    let (name, value) = document
        .outcome
        .iter()
        .next()
        .map(|(name, value)| (name.clone(), value.clone()))
        .unwrap_or_else(|| ("synthesis".to_string(), synthesis.data.clone()));
    let mut value = value;
    sanitize::clean_json(&mut value);
    let mut out = format!("{name}:\n");
    yaml(&value, 1, &mut out);
    Some(out)
}

/// Block-style YAML of a JSON value at `depth` (two spaces each). Strings are written as JSON
/// strings, which YAML reads as double-quoted scalars; multi-line ones as `|` blocks.
fn yaml(value: &serde_json::Value, depth: usize, out: &mut String) {
    use serde_json::Value;
    let pad = "  ".repeat(depth);
    let scalar = |value: &Value, depth: usize| -> String {
        match value {
            Value::String(text) if text.contains('\n') => {
                let pad = "  ".repeat(depth + 1);
                let body: Vec<String> = text
                    .trim_end()
                    .lines()
                    .map(|l| format!("{pad}{l}"))
                    .collect();
                format!("|\n{}", body.join("\n"))
            }
            Value::Array(items) if items.is_empty() => "[]".into(),
            Value::Object(map) if map.is_empty() => "{}".into(),
            other => other.to_string(),
        }
    };
    let nested = |value: &Value| {
        matches!(value, Value::Array(a) if !a.is_empty())
            || matches!(value, Value::Object(m) if !m.is_empty())
    };
    match value {
        Value::Object(map) => {
            for (key, item) in map {
                let key = serde_json::Value::String(key.clone());
                let key = match key.as_str() {
                    Some(k)
                        if k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                            && !k.is_empty() =>
                    {
                        k.to_string()
                    }
                    _ => key.to_string(),
                };
                if nested(item) {
                    let _ = writeln!(out, "{pad}{key}:");
                    yaml(item, depth + 1, out);
                } else {
                    let _ = writeln!(out, "{pad}{key}: {}", scalar(item, depth));
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                if nested(item) {
                    let mut inner = String::new();
                    yaml(item, depth + 1, &mut inner);
                    let trimmed = inner.trim_start().to_string();
                    let _ = write!(out, "{pad}- {trimmed}");
                } else {
                    let _ = writeln!(out, "{pad}- {}", scalar(item, depth));
                }
            }
        }
        other => {
            let _ = writeln!(out, "{pad}{}", scalar(other, depth));
        }
    }
}

/// A gate a person decided (or that timed out), as one line: "approval gate after round 1
/// (after_round:1): rejected by alice at the workbench: the numbers are made up". Gates the
/// debate did not stop at are left out.
pub fn gate_line(gate: &crate::store::GateRecord) -> Option<String> {
    let decision = gate.decision?;
    let by = gate.decided_by.as_deref().unwrap_or("");
    if by.starts_with("moot (") {
        return None;
    }
    let mut line = format!(
        "approval gate {} ({}): {decision} by {by}",
        crate::debate::gate_place(&gate.point, gate.round),
        gate.gate
    );
    if let Some(reason) = gate.reason.as_deref().filter(|r| !r.trim().is_empty()) {
        line.push_str(&format!(": {}", reason.trim()));
    }
    Some(sanitize::clean(&line))
}

/// Pretty, sanitized JSON.
pub fn to_json(document: &DebateDocument) -> String {
    let mut value = serde_json::to_value(document).unwrap_or_default();
    sanitize::clean_json(&mut value);
    serde_json::to_string_pretty(&value).unwrap_or_default()
}

fn seat_name<'a>(seats: &'a [Seat], id: &'a str) -> String {
    if id == MODERATOR {
        return "Moderator".to_string();
    }
    seats
        .iter()
        .find(|s| s.id == id)
        .map(|s| format!("{} ({})", s.perspective, s.id))
        .unwrap_or_else(|| id.to_string())
}

fn turn_markdown(out: &mut String, seats: &[Seat], turn: &Turn) {
    let _ = writeln!(
        out,
        "### {} — {}{}\n",
        seat_name(seats, &turn.seat),
        turn.phase.as_str(),
        match turn.status {
            TurnStatus::Ok => String::new(),
            other => format!(" [{other}]"),
        }
    );
    if !turn.content.trim().is_empty() {
        let _ = writeln!(out, "{}\n", turn.content.trim());
    }
    if let Some(note) = &turn.note {
        let _ = writeln!(out, "_{note}_\n");
    }
    for mv in &turn.moves {
        let answers = if mv.answers.is_empty() {
            String::new()
        } else {
            format!(
                " → {}{}",
                mv.relation
                    .map(|r| format!("{} ", r.as_str()))
                    .unwrap_or_default(),
                mv.answers.join(", ")
            )
        };
        let premises = if mv.premises.is_empty() {
            String::new()
        } else {
            format!(" since {}", mv.premises.join("; "))
        };
        let _ = writeln!(
            out,
            "- `{}` **{}** {}{premises}{answers}",
            mv.id,
            mv.act.as_str(),
            mv.text
        );
    }
    if !turn.moves.is_empty() {
        out.push('\n');
    }
}

/// The derived views as markdown: each seat's commitment store, then the arguments with their
/// scores and relations.
fn derived_views_markdown(out: &mut String, document: &DebateDocument) {
    if !document.commitments.is_empty() {
        let _ = writeln!(out, "## Commitment Stores\n");
        let _ = writeln!(out, "| Seat | Commitments | Retractions |\n|---|---|---|");
        for store in &document.commitments {
            let list = |items: &[crate::argue::Commitment]| {
                items
                    .iter()
                    .map(|c| {
                        if c.conceded {
                            format!("{} (conceded)", c.text)
                        } else {
                            c.text.clone()
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("; ")
                    .replace('|', "\\|")
            };
            let (held, retracted) = (list(&store.commitments), list(&store.retractions));
            let _ = writeln!(out, "| {} | {held} | {retracted} |", store.seat);
        }
        out.push('\n');
    }
    let dynamics = document.dynamics.moves.summary();
    if !dynamics.is_empty() || !document.dynamics.hollow_agreements.is_empty() {
        let _ = writeln!(out, "## Dynamics\n");
        if !dynamics.is_empty() {
            let _ = writeln!(out, "{dynamics}.\n");
        }
        for flagged in &document.dynamics.hollow_agreements {
            let _ = writeln!(out, "- Round {}: {}", flagged.round, flagged.detail);
        }
        out.push('\n');
    }
    if !document.arguments.is_empty() {
        let _ = writeln!(out, "## Arguments\n");
        let _ = writeln!(out, "| Id | Seat | Score | Argument |\n|---|---|---|---|");
        for argument in &document.arguments {
            let (id, seat, score) = (&argument.id, &argument.seat, argument.score);
            let withdrawn = argument.withdrawn_note();
            let text = argument.text.replace('|', "\\|");
            let _ = writeln!(out, "| {id} | {seat} | {score:.2}{withdrawn} | {text} |");
        }
        out.push('\n');
        if !document.relations.is_empty() {
            let _ = writeln!(
                out,
                "Relations: {}\n",
                document
                    .relations
                    .iter()
                    .map(|e| format!("{} {} {}", e.from, e.kind.as_str(), e.to))
                    .collect::<Vec<_>>()
                    .join(" · ")
            );
        }
    }
}

/// The argument map of a stored debate (its document and its event log) in `language`, as
/// `moot export` and the MCP resource give it.
pub fn argument_map(
    document: &DebateDocument,
    events: &[crate::debate::Event],
    language: crate::diagram::Language,
) -> String {
    let drawn = crate::diagram::Drawn {
        id: &document.debate.id,
        seats: &document.debate.seats,
        arguments: &document.arguments,
        relations: &document.relations,
        events,
    };
    crate::diagram::draw(&drawn, language)
}

/// The transcript, derived views and synthesis as sanitized markdown.
/// The debate as markdown: its header, then the generic report (seats, rounds, derived views)
/// and its record; or, when `record_is_report` (the protocol's record is already the whole
/// report, `Presentation::record_is_report`), the header and the record alone.
pub fn to_markdown(document: &DebateDocument, record_is_report: bool) -> String {
    let debate = &document.debate;
    let mut out = String::new();
    let _ = writeln!(out, "# {}\n", debate.question.trim());
    let _ = writeln!(out, "- **Debate ID:** {}", debate.id);
    let _ = writeln!(out, "- **Protocol:** {}", debate.protocol);
    let _ = writeln!(out, "- **Status:** {}", debate.status);
    let _ = writeln!(out, "- **Started:** {}", debate.created_at);
    if let Some(confidence) = &debate.confidence {
        let _ = writeln!(out, "- **Confidence:** {confidence}");
    }
    if let Some(error) = &debate.error {
        let _ = writeln!(out, "- **Error:** {error}");
    }
    for line in document.gates.iter().filter_map(gate_line) {
        let _ = writeln!(out, "- **Gate:** {line}");
    }
    let _ = writeln!(
        out,
        "- **Tokens:** {} in, {} out{}\n",
        document.tokens.tokens_in,
        document.tokens.tokens_out,
        if document.tokens.estimated {
            " (partly estimated)"
        } else {
            ""
        }
    );
    if record_is_report && let Some(synthesis) = &document.synthesis {
        out.push_str(&synthesis.markdown);
        if let Some(path) = &synthesis.path {
            let _ = writeln!(out, "\n_Decision record: {path}_");
        }
        return sanitize::clean(&out);
    }
    if !debate.seats.is_empty() {
        let _ = writeln!(out, "## Seats\n");
        for seat in &debate.seats {
            let priorities = if seat.priorities.is_empty() {
                String::new()
            } else {
                format!(": {}", seat.priorities.join(", "))
            };
            let _ = writeln!(
                out,
                "- **{}** {}{priorities} — {}",
                seat.id, seat.perspective, seat.trade_offs
            );
        }
        out.push('\n');
    }
    let answers: Vec<(u32, Control)> = document
        .checkpoints
        .iter()
        .filter(|c| matches!(c.kind, AskKind::Checkpoint | AskKind::Conclusion))
        .map(|c| {
            (
                c.round,
                Control::from_stored(c.decision, c.guidance.clone()),
            )
        })
        .collect();
    for round in Round::group(&document.turns, &answers) {
        let _ = writeln!(out, "## Round {}\n", round.number);
        for turn in &round.turns {
            turn_markdown(&mut out, &debate.seats, turn);
        }
        if let Some(control) = &round.checkpoint {
            // Quoted whole: every line of the guidance inside the quote (U5).
            let said = format!(
                "Checkpoint: **{}**{}",
                control.answer(),
                round
                    .guidance()
                    .map(|g| format!(" — {g}"))
                    .unwrap_or_default()
            );
            for line in said.lines() {
                let _ = writeln!(out, "> {line}");
            }
            let _ = writeln!(out);
        }
    }
    derived_views_markdown(&mut out, document);
    if let Some(synthesis) = &document.synthesis {
        let _ = writeln!(out, "---\n");
        out.push_str(&synthesis.markdown);
        if let Some(path) = &synthesis.path {
            let _ = writeln!(out, "\n_Decision record: {path}_");
        }
    }
    sanitize::clean(&out)
}

#[cfg(test)]
mod tests {
    use crate::debate::{AskKind, Control, Phase, Turn};
    use crate::store::Store;

    /// U5: guidance of several lines is quoted whole in `show --markdown`.
    #[test]
    fn guidance_of_several_lines_is_quoted_whole() {
        let store = Store::in_memory().unwrap();
        let debate = crate::store::running_debate("DEB-guided01");
        store.create_debate(&debate).unwrap();
        store
            .record_turn(&debate.id, &Turn::fixture("A", 1, Phase::Argument))
            .unwrap();
        store
            .record_checkpoint(
                &debate.id,
                1,
                AskKind::Checkpoint,
                &Control::Guide("Weigh the migration cost.\nAnd the team's ops load.".into()),
                "the person",
            )
            .unwrap();
        let markdown = super::to_markdown(&super::document(&store, &debate.id).unwrap(), false);
        assert!(
            markdown.contains(
                "> Checkpoint: **guide** — Weigh the migration cost.\n> And the team's ops load."
            ),
            "{markdown}"
        );
    }
}
