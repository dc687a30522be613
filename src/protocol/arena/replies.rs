//! The arena's structured replies, each with its schema beside its parser: the moderator's
//! personas, order and rubric scores, and a seat's argument.

use super::{ARGUMENT_SCHEMA, ORDER_SCHEMA, PERSONAS_SCHEMA, RUBRIC, SCORES_SCHEMA};
use crate::engine::Unusable;
use crate::engine::text_field;
use crate::engine::unusable;
use crate::engine::{Reply, ReplyParser, ReplyShape, Transcript};
use crate::protocol::moves::{debater_schema, move_prefix, validate_debater_reply};
use serde_json::{Map, Value, json};

/// The moderator's personas for the roles given by name only: one each, with a stance and
/// instructions.
pub(super) struct PersonasReply {
    /// The roles that need one.
    pub(super) missing: Vec<String>,
}

impl ReplyShape for PersonasReply {
    fn name(&self) -> &'static str {
        PERSONAS_SCHEMA
    }

    fn schema(&self) -> Value {
        let line = json!({"type": "string", "minLength": 1});
        json!({
            "type": "object",
            "properties": {
                "personas": {
                    "type": "array",
                    "minItems": self.missing.len(),
                    "maxItems": self.missing.len(),
                    "items": {
                        "type": "object",
                        "properties": {
                            "role_name": {"type": "string", "enum": self.missing},
                            "stance_summary": line,
                            "instructions": line,
                            "background_context": {"type": "string"}
                        },
                        "required": ["role_name", "stance_summary", "instructions", "background_context"]
                    }
                }
            },
            "required": ["personas"]
        })
    }
}

impl ReplyParser for PersonasReply {
    fn parse(&self, reply: &Value, _: &Transcript<'_>) -> Result<Reply, Unusable> {
        let items = reply
            .get("personas")
            .and_then(Value::as_array)
            .ok_or("`personas` must be an array")?;
        for (i, item) in items.iter().enumerate() {
            for field in ["role_name", "stance_summary", "instructions"] {
                if item
                    .get(field)
                    .and_then(Value::as_str)
                    .is_none_or(|s| s.trim().is_empty())
                {
                    return Err(unusable!("persona {} has no `{field}`", i + 1));
                }
            }
        }
        Ok(Reply {
            data: Some(reply.clone()),
            ..Reply::default()
        })
    }
}

impl ReplyShape for ArgumentReplies {
    fn name(&self) -> &'static str {
        ARGUMENT_SCHEMA
    }

    fn schema(&self) -> Value {
        argument_schema(&self.earlier, self.rebuttal)
    }

    fn stream_field(&self) -> Option<&'static str> {
        Some("argument_text")
    }
}

/// The argument schema: the note's argument fields, with the debater's speech acts.
fn argument_schema(earlier: &[u32], rebuttal: bool) -> Value {
    let moves = debater_schema()["properties"]["moves"].clone();
    let mut responds = json!({"type": "array", "items": {"type": "integer"}, "description": "Turn numbers of the earlier arguments this one answers."});
    if rebuttal && !earlier.is_empty() {
        responds["minItems"] = json!(1);
    }
    json!({
        "type": "object",
        "properties": {
            "argument_text": {"type": "string", "minLength": 1, "description": "Your statement, as markdown prose."},
            "responds_to": responds,
            "references": {"type": "array", "maxItems": 8, "items": {"type": "string", "minLength": 1}, "description": "Sources, data points, or earlier turns as turn:N."},
            "tone": {"type": "string", "description": "The tone, in a word."},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "moves": moves
        },
        "required": ["argument_text", "responds_to", "references", "confidence", "moves"]
    })
}

/// Reads an arena argument: the debater's moves validated as for every protocol, the turns it
/// answers checked against the transcript, the rest kept for the arena file.
pub(super) struct ArgumentReplies {
    /// Turn numbers that exist so far.
    pub(super) earlier: Vec<u32>,
    pub(super) rebuttal: bool,
}

impl ReplyParser for ArgumentReplies {
    fn parse(&self, reply: &Value, transcript: &Transcript<'_>) -> Result<Reply, Unusable> {
        let text = text_field(reply, "argument_text")
            .ok_or("`argument_text` must be a non-empty string: your statement")?;
        let responds: Vec<u32> = reply
            .get("responds_to")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_u64)
                    .map(|n| n as u32)
                    .collect()
            })
            .unwrap_or_default();
        if let Some(unknown) = responds.iter().find(|n| !self.earlier.contains(n)) {
            return Err(unusable!(
                "`responds_to` names turn {unknown}, which does not exist; earlier turns are {:?}",
                self.earlier
            ));
        }
        if self.rebuttal && !self.earlier.is_empty() && responds.is_empty() {
            return Err("a rebuttal must name the turns it answers in `responds_to`".into());
        }
        let key = transcript.key;
        let known = transcript.move_ids();
        let debater = json!({
            "argument": text,
            "moves": reply.get("moves").cloned().unwrap_or(Value::Null),
            "confidence": reply.get("confidence").cloned().unwrap_or(Value::Null),
            "position": ""
        });
        let parsed = validate_debater_reply(
            &debater,
            &move_prefix(&key.seat, key.round, key.phase),
            &known,
        )?;
        let references: Vec<String> = reply
            .get("references")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .take(8)
                    .collect()
            })
            .unwrap_or_default();
        Ok(Reply {
            content: parsed.argument,
            moves: parsed.moves,
            confidence: parsed.confidence,
            data: Some(json!({
                "responds_to": responds,
                "references": references,
                "tone": reply.get("tone").and_then(Value::as_str).unwrap_or("").trim(),
            })),
            note: (parsed.dropped_answers > 0).then(|| {
                format!(
                    "{} answer(s) pointed at no known argument and were dropped",
                    parsed.dropped_answers
                )
            }),
        })
    }
}

/// Checks the moderator's order: every seat exactly once.
pub(super) struct OrderReplies {
    /// Every seat's agent id.
    pub(super) ids: Vec<String>,
}

impl ReplyShape for OrderReplies {
    fn name(&self) -> &'static str {
        ORDER_SCHEMA
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "order": {
                    "type": "array",
                    "minItems": self.ids.len(),
                    "maxItems": self.ids.len(),
                    "items": {
                        "type": "object",
                        "properties": {
                            "agent_id": {"type": "string", "enum": self.ids},
                            "reason": {"type": "string", "minLength": 1}
                        },
                        "required": ["agent_id", "reason"]
                    }
                }
            },
            "required": ["order"]
        })
    }
}

impl ReplyParser for OrderReplies {
    fn parse(&self, reply: &Value, _: &Transcript<'_>) -> Result<Reply, Unusable> {
        let items = reply
            .get("order")
            .and_then(Value::as_array)
            .ok_or("`order` must be an array")?;
        let mut order: Vec<(String, String)> = Vec::new();
        for item in items {
            let id = item
                .get("agent_id")
                .and_then(Value::as_str)
                .unwrap_or("")
                .trim()
                .to_string();
            let reason = item
                .get("reason")
                .and_then(Value::as_str)
                .unwrap_or("")
                .trim()
                .to_string();
            if !self.ids.contains(&id) {
                return Err(unusable!(
                    "{id:?} is no seat; the seats are {}",
                    self.ids.join(", ")
                ));
            }
            if order.iter().any(|(seen, _)| *seen == id) {
                return Err(unusable!(
                    "{id} is ordered twice; every seat speaks once a round"
                ));
            }
            if reason.is_empty() {
                return Err(unusable!("give a reason for picking {id}"));
            }
            order.push((id, reason));
        }
        if order.len() != self.ids.len() {
            return Err(unusable!("order all {} seats", self.ids.len()));
        }
        Ok(Reply {
            content: order
                .iter()
                .map(|(id, reason)| format!("{id}: {reason}"))
                .collect::<Vec<_>>()
                .join("\n"),
            data: Some(json!({"order": order})),
            ..Reply::default()
        })
    }
}

/// Checks the moderator's scores: every argument once, each criterion in [0, 1], a reason;
/// the score is the mean of the criteria (so it is never a number the model made up apart).
pub(super) struct ScoreReplies {
    /// The turn numbers of the round's arguments.
    pub(super) numbers: Vec<u32>,
}

impl ReplyShape for ScoreReplies {
    fn name(&self) -> &'static str {
        SCORES_SCHEMA
    }

    fn schema(&self) -> Value {
        let unit = json!({"type": "number", "minimum": 0, "maximum": 1});
        let mut properties = Map::new();
        for name in RUBRIC {
            properties.insert(name.into(), unit.clone());
        }
        properties.insert(
            "turn_number".into(),
            json!({"type": "integer", "enum": self.numbers}),
        );
        properties.insert(
            "reason".into(),
            json!({"type": "string", "minLength": 1, "description": "One line."}),
        );
        let mut required: Vec<&str> = vec!["turn_number"];
        required.extend(RUBRIC);
        required.push("reason");
        json!({
            "type": "object",
            "properties": {
                "scores": {"type": "array", "minItems": self.numbers.len(), "maxItems": self.numbers.len(), "items": {"type": "object", "properties": properties, "required": required}}
            },
            "required": ["scores"]
        })
    }
}

impl ReplyParser for ScoreReplies {
    fn parse(&self, reply: &Value, _: &Transcript<'_>) -> Result<Reply, Unusable> {
        let items = reply
            .get("scores")
            .and_then(Value::as_array)
            .ok_or("`scores` must be an array")?;
        let mut seen = Vec::new();
        let mut kept = Vec::new();
        for item in items {
            let number = item
                .get("turn_number")
                .and_then(Value::as_u64)
                .ok_or("every score needs its `turn_number`")? as u32;
            if !self.numbers.contains(&number) {
                return Err(unusable!(
                    "turn {number} is not one of this round's arguments ({:?})",
                    self.numbers
                ));
            }
            if seen.contains(&number) {
                return Err(unusable!("turn {number} is scored twice"));
            }
            seen.push(number);
            let mut total = 0.0;
            let mut entry = item.clone();
            for criterion in RUBRIC {
                let value = item
                    .get(criterion)
                    .and_then(Value::as_f64)
                    .filter(|v| (0.0..=1.0).contains(v))
                    .ok_or_else(|| {
                        format!("turn {number}: `{criterion}` must be a number from 0 to 1")
                    })?;
                total += value;
            }
            if item
                .get("reason")
                .and_then(Value::as_str)
                .is_none_or(|r| r.trim().is_empty())
            {
                return Err(unusable!("turn {number}: give a one-line `reason`"));
            }
            entry["score"] = json!(total / RUBRIC.len() as f64);
            kept.push(entry);
        }
        if seen.len() != self.numbers.len() {
            return Err(unusable!(
                "score every argument of the round: {:?}",
                self.numbers
            ));
        }
        Ok(Reply {
            content: kept
                .iter()
                .map(|s| {
                    format!(
                        "turn {}: {:.2} — {}",
                        s["turn_number"],
                        s["score"].as_f64().unwrap_or(0.0),
                        s["reason"].as_str().unwrap_or("")
                    )
                })
                .collect::<Vec<_>>()
                .join("\n"),
            data: Some(json!({"scores": kept})),
            ..Reply::default()
        })
    }
}

/// Turn numbers a person's text names (`turn 3`, `#3`) among the earlier turns.
pub(super) fn named_turns(text: &str, earlier: &[u32]) -> Vec<u32> {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '#'))
        .filter(|w| !w.is_empty())
        .collect();
    let mut named = Vec::new();
    for (i, word) in words.iter().enumerate() {
        let number = match word.strip_prefix('#') {
            Some(n) => n.parse::<u32>().ok(),
            None if *word == "turn" => words.get(i + 1).and_then(|n| n.parse::<u32>().ok()),
            None => None,
        };
        if let Some(n) = number.filter(|n| earlier.contains(n) && !named.contains(n)) {
            named.push(n);
        }
    }
    named
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_persons_text_names_the_turns_it_answers() {
        assert_eq!(
            named_turns(
                "As turn 2 said, and #1 too; turn 9 is not here.",
                &[1, 2, 3]
            ),
            vec![2, 1]
        );
        assert!(named_turns("No numbers.", &[1]).is_empty());
    }
}
