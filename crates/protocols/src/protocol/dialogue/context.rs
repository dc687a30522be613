//! The shared context K: what was gathered from the codebase, condensed by the moderator into
//! facts with sources that both sides may cite (the raw lines stand in when it cannot).

use super::prompts::moderator_system;
use super::{CONTEXT_SCHEMA, DialogueSettings};
use crate::debate::{Event, Fact, MODERATOR, Phase, TurnKey, TurnStatus};
use crate::engine::Unusable;
use crate::engine::{Context, EngineError, Reply, ReplyParser, ReplyShape, Transcript};
use crate::gather::{Gathered, Located};
use crate::protocol::Common;
use crate::protocol::kit;
use serde_json::{Value, json};
use tokio::time::Instant;

/// The most facts K holds.
const MAX_FACTS: usize = 12;

/// K: the moderator condenses what was gathered into facts with sources (the raw lines stand
/// in when it cannot); announced for the Context panel.
pub(super) async fn shared_context(
    ctx: &Context,
    common: &Common,
    settings: &DialogueSettings,
    topic: &str,
    notes: &mut Vec<String>,
) -> Result<Vec<Fact>, EngineError> {
    let Some(gathered) = &settings.context else {
        ctx.emit(Event::SharedContext {
            root: String::new(),
            facts: Vec::new(),
            notes: vec!["no shared context: gathering was switched off (--no-context, or `context = false` in [dialogue])".into()],
        });
        return Ok(Vec::new());
    };
    let mut context_notes = gathered.notes.clone();
    let facts = if gathered.is_empty() {
        context_notes.push(format!(
            "nothing under {} mentions {}",
            gathered.root,
            gathered.terms.join(", ")
        ));
        Vec::new()
    } else {
        let prompt = format!(
            "Thesis under debate: {topic}\n\nMaterial gathered from the codebase in {}:\n\n{}\n\
             Condense it into at most {MAX_FACTS} facts that bear on the thesis, for both sides \
             to use. Each fact is one sentence and names its source exactly as it appears above \
             (path:line, or a commit hash). Facts, not opinions.",
            gathered.root,
            gathered.to_prompt()
        );
        let turn = ctx
            .speak(kit::ask(
                TurnKey::new(0, Phase::Context, MODERATOR),
                moderator_system(settings),
                prompt,
                ContextReplies {
                    gathered: gathered.clone(),
                },
                kit::Limits::new(900, Instant::now() + common.round_timeout),
            ))
            .await?;
        let facts: Vec<Fact> = turn
            .data
            .as_ref()
            .filter(|_| turn.status == TurnStatus::Ok)
            .and_then(|d| serde_json::from_value(d.get("facts")?.clone()).ok())
            .unwrap_or_default();
        if facts.is_empty() {
            context_notes.push(
                "the moderator could not condense the material; K is the matching lines as found"
                    .into(),
            );
            raw_facts(gathered)
        } else {
            facts
        }
    };
    for note in &context_notes {
        notes.push(format!("Context: {note}"));
    }
    ctx.emit(Event::SharedContext {
        root: gathered.root.clone(),
        facts: facts.clone(),
        notes: context_notes,
    });
    Ok(facts)
}

/// The moderator's condensed K: facts, each with its source.
pub fn context_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "facts": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_FACTS,
                "items": {
                    "type": "object",
                    "properties": {
                        "fact": {"type": "string", "minLength": 1, "description": "One fact that bears on the decision, in a sentence."},
                        "source": {"type": "string", "minLength": 1, "description": "Where it comes from, exactly as given: path:line or a commit hash."}
                    },
                    "required": ["fact", "source"]
                }
            }
        },
        "required": ["facts"]
    })
}

/// The gathered lines themselves as facts, when no condensed K could be had.
fn raw_facts(gathered: &Gathered) -> Vec<Fact> {
    gathered
        .docs
        .iter()
        .chain(&gathered.code)
        .take(MAX_FACTS)
        .map(|e| Fact {
            text: e.text.clone(),
            source: format!("{}:{}", e.path, e.line),
            file: Some((e.path.clone(), e.line)),
        })
        .collect()
}

/// Checks the moderator's facts: every source must be one gathering found (a model never
/// chooses a path the workbench opens); facts with other sources are dropped.
struct ContextReplies {
    gathered: Gathered,
}

impl ReplyShape for ContextReplies {
    fn name(&self) -> &'static str {
        CONTEXT_SCHEMA
    }

    fn schema(&self) -> Value {
        context_schema()
    }
}

impl ReplyParser for ContextReplies {
    fn parse(&self, reply: &Value, transcript: &Transcript<'_>) -> Result<Reply, Unusable> {
        let items = reply
            .get("facts")
            .and_then(Value::as_array)
            .ok_or("`facts` must be an array of {fact, source}")?;
        let mut facts = Vec::new();
        let mut dropped = 0;
        for item in items.iter().take(MAX_FACTS) {
            let text = item
                .get("fact")
                .and_then(Value::as_str)
                .unwrap_or("")
                .trim();
            let source = item
                .get("source")
                .and_then(Value::as_str)
                .unwrap_or("")
                .trim();
            match (text.is_empty(), self.gathered.locate(source)) {
                (false, Some(Located::File(path, line))) => facts.push(Fact {
                    text: text.to_string(),
                    source: format!("{path}:{line}"),
                    file: Some((path, line)),
                }),
                (false, Some(Located::Commit(hash))) => facts.push(Fact {
                    text: text.to_string(),
                    source: format!("commit {hash}"),
                    file: None,
                }),
                _ => dropped += 1,
            }
        }
        if facts.is_empty() && !transcript.repair {
            return Err(
                "no fact names a source from the material; give each fact the path:line or commit hash it comes from, exactly as listed".into(),
            );
        }
        Ok(Reply {
            content: facts
                .iter()
                .map(|f| format!("- {} ({})", f.text, f.source))
                .collect::<Vec<_>>()
                .join("\n"),
            data: Some(json!({"facts": facts})),
            note: (dropped > 0)
                .then(|| format!("{dropped} fact(s) cited no gathered source and were dropped")),
            ..Reply::default()
        })
    }
}
