//! The debater reply: its JSON schema, and validation that turns the model's moves into
//! journal moves with moot-assigned ids and only answers that point at real arguments.

use crate::debate::Named;
use crate::debate::{Act, Move, Phase, Relation};
use crate::engine::Unusable;
use crate::engine::text_field;

use crate::engine::reply::{Reply, ReplyParser, ReplyShape, Transcript};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};

/// The most moves kept from one reply; a small model may loop.
const MAX_MOVES: usize = 12;
/// The most moves the schema asks for: an argument of at most 200 words makes few more.
const MOST_MOVES_ASKED: usize = 6;
const MAX_TEXT_CHARS: usize = 600;
/// The longest argument the schema admits: the system prompt asks for 80-200 words.
const MAX_ARGUMENT_CHARS: usize = 1600;
/// One sentence: a move's proposition, a premise, a position.
const MAX_SENTENCE_CHARS: usize = 240;
/// Reasons a `since` move gives.
const MAX_PREMISES: usize = 3;
/// Arguments one move answers.
const MAX_ANSWERS: usize = 3;
/// A move id such as `B1.2` or `m3`.
const MAX_ID_CHARS: usize = 16;

/// The field whose prose streams to the screen while a debater writes.
pub const PROSE_FIELD: &str = "argument";

/// The name of the debater reply's schema, which providers and the stand-in server see.
pub const DEBATER_SCHEMA: &str = "moot_argument";

/// JSON schema of a debater reply. `argument` comes first so it streams first. A `since` move
/// is its own shape, so that a schema-constrained sampler cannot leave out its premises.
pub fn debater_schema() -> Value {
    // Every field is bounded, so that a schema-constrained sampler with a small budget shortens
    // each in proportion rather than cutting the prose to a fragment (llm/grammar.rs).
    let id = json!({"type": "string", "maxLength": MAX_ID_CHARS, "description": "A short local id such as m1, so later moves of this reply can answer it."});
    let text = json!({"type": "string", "minLength": 1, "maxLength": MAX_SENTENCE_CHARS, "description": "The proposition φ, one sentence."});
    let answers = json!({"type": "array", "items": {"type": "string", "maxLength": MAX_ID_CHARS}, "maxItems": MAX_ANSWERS, "description": "Ids of the arguments this move responds to, e.g. B1.2."});
    let relation = json!({"type": "string", "enum": ["support", "rebut", "undercut", "none"]});
    json!({
        "type": "object",
        "properties": {
            "argument": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_ARGUMENT_CHARS,
                "description": "Your argument as markdown prose, as you would say it to the room."
            },
            "moves": {
                "type": "array",
                "minItems": 1,
                "maxItems": MOST_MOVES_ASKED,
                "description": "The speech acts your argument makes.",
                "items": {
                    "anyOf": [
                        {
                            "type": "object",
                            "properties": {
                                "id": id,
                                "act": {"type": "string", "enum": ["claim", "why", "concede", "retract"]},
                                "text": text,
                                "answers": answers,
                                "relation": relation
                            },
                            "required": ["act", "text"]
                        },
                        {
                            "type": "object",
                            "properties": {
                                "id": id,
                                "act": {"type": "string", "const": "since"},
                                "text": text,
                                "premises": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": MAX_SENTENCE_CHARS}, "minItems": 1, "maxItems": MAX_PREMISES, "description": "The reasons S."},
                                "answers": answers,
                                "relation": relation
                            },
                            "required": ["act", "text", "premises"]
                        }
                    ]
                }
            },
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "position": {"type": "string", "maxLength": MAX_SENTENCE_CHARS, "description": "Your current recommendation in one sentence."}
        },
        "required": ["argument", "moves", "confidence", "position"]
    })
}

/// A validated debater reply.
#[derive(Debug, Clone, PartialEq)]
pub struct DebaterReply {
    pub argument: String,
    pub moves: Vec<Move>,
    pub confidence: Option<f64>,
    pub position: String,
    /// Answers dropped because they pointed at no known argument.
    pub dropped_answers: usize,
}

/// The id prefix of a turn's moves: `A2` for seat A's round-2 argument, `A2.r` for its rebuttal.
pub fn move_prefix(seat: &str, round: u32, phase: Phase) -> String {
    match phase {
        Phase::Rebuttal => format!("{seat}{round}.r"),
        _ => format!("{seat}{round}."),
    }
}

/// One move of a reply, checked: its act, text (needed but by concede and retract), premises
/// (needed by since) and relation. `number` counts from 1, for the message.
fn read_move(
    raw: &serde_json::Map<String, Value>,
    number: usize,
) -> Result<CheckedMove<'_>, Unusable> {
    let index = number - 1;
    let word = raw.get("act").and_then(Value::as_str).map_or("", str::trim);
    let Some(act) = Act::parse(word) else {
        return Err(crate::unusable!(
            "move {} has act {word:?}; use one of claim, why, concede, retract, since",
            index + 1
        ));
    };
    let text = raw.get("text").and_then(Value::as_str).unwrap_or("").trim();
    let premises = strings(raw.get("premises"));
    if text.is_empty() && !matches!(act, Act::Concede | Act::Retract) {
        return Err(crate::unusable!(
            "move {} ({}) needs a `text`",
            index + 1,
            act.as_str()
        ));
    }
    if act == Act::Since && premises.is_empty() {
        return Err(crate::unusable!(
            "move {} is `since` but gives no `premises`; list the reasons",
            index + 1
        ));
    }
    let relation = match raw
        .get("relation")
        .and_then(Value::as_str)
        .map_or("", str::trim)
    {
        "" | "none" => None,
        word => Some(Relation::parse(word).ok_or_else(|| {
            crate::unusable!(
                "move {} has relation {word:?}; use support, rebut, undercut or none",
                index + 1
            )
        })?),
    };
    Ok(CheckedMove {
        act,
        text,
        premises,
        relation,
    })
}

/// A move as a reply gave it, checked, before it has its id.
struct CheckedMove<'a> {
    act: Act,
    text: &'a str,
    premises: Vec<String>,
    relation: Option<Relation>,
}

/// A reply in the debaters' shape, opened.
pub struct Opened<'v> {
    pub object: &'v serde_json::Map<String, Value>,
    /// Non-empty, trimmed.
    pub argument: String,
    /// None when the reply gave none.
    pub moves: &'v [Value],
}

/// Opens a reply in the debaters' shape: an object with a non-empty `argument` (the error says
/// what it holds: `what` follows "must be a non-empty string") and a `moves` array.
pub fn argument_and_moves<'v>(value: &'v Value, what: &str) -> Result<Opened<'v>, Unusable> {
    let object = value.as_object().ok_or("the reply must be a JSON object")?;
    let argument = text_field(value, PROSE_FIELD)
        .ok_or_else(|| format!("`argument` must be a non-empty string{what}"))?
        .to_string();
    let moves = match object.get("moves") {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(items)) => items.as_slice(),
        Some(_) => return Err("`moves` must be an array of move objects".into()),
    };
    Ok(Opened {
        object,
        argument,
        moves,
    })
}

/// Validates a parsed reply. `known` holds the ids of every move already in the journal.
pub fn validate_debater_reply(
    value: &Value,
    prefix: &str,
    known: &HashSet<String>,
) -> Result<DebaterReply, Unusable> {
    let Opened {
        object,
        argument,
        moves: raw_moves,
    } = argument_and_moves(value, " holding your argument")?;
    let confidence = match object.get("confidence") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_f64()
                .filter(|c| c.is_finite())
                .ok_or("`confidence` must be a number between 0 and 1")?
                .clamp(0.0, 1.0),
        ),
    };
    let position = object
        .get("position")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim()
        .to_string();

    let mut local_ids: HashMap<String, String> = HashMap::new();
    let mut moves = Vec::new();
    for (index, raw) in raw_moves.iter().take(MAX_MOVES).enumerate() {
        let raw = raw
            .as_object()
            .ok_or_else(|| format!("move {} must be an object", index + 1))?;
        let CheckedMove {
            act,
            text,
            premises,
            relation,
        } = read_move(raw, index + 1)?;
        let id = format!("{prefix}{}", moves.len() + 1);
        if let Some(local) = raw.get("id").and_then(Value::as_str) {
            local_ids.insert(local.trim().to_string(), id.clone());
        }
        moves.push(Move {
            id,
            act,
            text: clip(text),
            premises: premises.into_iter().map(|p| clip(&p)).collect(),
            answers: strings(raw.get("answers")),
            relation,
        });
    }
    let own: HashSet<String> = moves.iter().map(|m| m.id.clone()).collect();
    let mut dropped_answers = 0;
    for mv in &mut moves {
        let answers = std::mem::take(&mut mv.answers);
        for answer in answers {
            let resolved = local_ids.get(&answer).cloned().unwrap_or(answer);
            if resolved != mv.id && (known.contains(&resolved) || own.contains(&resolved)) {
                if !mv.answers.contains(&resolved) {
                    mv.answers.push(resolved);
                }
            } else {
                dropped_answers += 1;
            }
        }
        if mv.answers.is_empty() && matches!(mv.act, Act::Claim | Act::Since) {
            mv.relation = None;
        }
    }
    Ok(DebaterReply {
        argument,
        moves,
        confidence,
        position,
        dropped_answers,
    })
}

/// Parses debater replies for `speak`: moves get ids under the turn's prefix and may answer
/// any argument already in the transcript.
pub struct DebaterReplies;

impl ReplyParser for DebaterReplies {
    fn parse(&self, reply: &Value, transcript: &Transcript<'_>) -> Result<Reply, Unusable> {
        let key = transcript.key;
        let known = transcript.move_ids();
        let reply =
            validate_debater_reply(reply, &move_prefix(&key.seat, key.round, key.phase), &known)?;
        Ok(Reply {
            note: (reply.dropped_answers > 0).then(|| {
                format!(
                    "{} answer(s) pointed at no known argument and were dropped",
                    reply.dropped_answers
                )
            }),
            content: reply.argument,
            moves: reply.moves,
            confidence: reply.confidence,
            data: Some(json!({"position": reply.position})),
        })
    }
}

impl ReplyShape for DebaterReplies {
    fn name(&self) -> &'static str {
        DEBATER_SCHEMA
    }

    fn schema(&self) -> Value {
        debater_schema()
    }

    fn stream_field(&self) -> Option<&'static str> {
        Some(PROSE_FIELD)
    }
}

fn strings(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|v| match v {
                Value::String(s) => Some(s.trim().to_string()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            })
            .filter(|s| !s.is_empty())
            .collect(),
        Some(Value::String(s)) if !s.trim().is_empty() => vec![s.trim().to_string()],
        _ => Vec::new(),
    }
}

fn clip(text: &str) -> String {
    crate::protocol::text::clip(text, MAX_TEXT_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(ids: &[&str]) -> HashSet<String> {
        ids.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn moves_get_moot_ids_and_local_answers_resolve() {
        let reply = json!({
            "argument": "Redis wins on latency.",
            "moves": [
                {"id": "m1", "act": "claim", "text": "Latency matters most"},
                {"id": "m2", "act": "since", "text": "Use Redis", "premises": ["in-memory"], "answers": ["m1"], "relation": "support"},
                {"act": "claim", "text": "Postgres is slower", "answers": ["B1.2", "Z9.9"], "relation": "rebut"},
                {"act": "why", "text": "why is ops cost high?", "answers": ["B1.1"]}
            ],
            "confidence": 1.7,
            "position": "Use Redis"
        });
        let parsed = validate_debater_reply(&reply, "A2.r", &known(&["B1.1", "B1.2"])).unwrap();
        let ids: Vec<&str> = parsed.moves.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, vec!["A2.r1", "A2.r2", "A2.r3", "A2.r4"]);
        assert_eq!(parsed.moves[1].answers, vec!["A2.r1"]);
        assert_eq!(parsed.moves[1].relation, Some(Relation::Support));
        assert_eq!(parsed.moves[2].answers, vec!["B1.2"]);
        assert_eq!(parsed.dropped_answers, 1);
        assert_eq!(parsed.confidence, Some(1.0));
        assert_eq!(parsed.position, "Use Redis");
    }

    #[test]
    fn invalid_replies_name_what_is_wrong() {
        let none = known(&[]);
        for (reply, named) in [
            (json!({"moves": []}), "argument"),
            (
                json!({"argument": "x", "moves": [{"act": "shout", "text": "y"}]}),
                "shout",
            ),
            (
                json!({"argument": "x", "moves": [{"act": "since", "text": "y"}]}),
                "premises",
            ),
            (json!([1]), "object"),
        ] {
            let err = validate_debater_reply(&reply, "A1.", &none).unwrap_err();
            assert!(err.contains(named), "{reply}: {err}");
        }
    }

    #[test]
    fn an_answerless_attack_loses_its_relation() {
        let parsed = validate_debater_reply(
            &json!({"argument": "x", "moves": [{"act": "claim", "text": "y", "relation": "rebut", "answers": ["nope"]}]}),
            "A1.",
            &known(&[]),
        )
        .unwrap();
        assert_eq!(parsed.moves[0].relation, None);
        assert!(parsed.moves[0].answers.is_empty());
    }
}
