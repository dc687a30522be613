//! The code debate's structured replies, each schema beside the validator that reads it:
//! the Generator's questions, code and reflections, the Designer's answers, the red team's
//! attacks and the Judge's scores. Every reply gets a `text` made from its fields, for its pane.

use crate::code::reply;
use crate::code::versions::Quality;
use crate::engine::Checked;
use crate::engine::Unusable;
use crate::engine::unusable;
use serde_json::{Value, json};

/// The Generator's clarifying questions, by category, and (when the debate was given files in
/// git) the files whose history and blame it wants to read: named from `files`, never chosen.
pub fn questions_reply(files: &[String]) -> Checked {
    let question = json!({
        "type": "object",
        "properties": {
            "category": {"type": "string", "enum": CATEGORIES},
            "question": {"type": "string"},
            "priority": {"type": "string", "enum": ["high", "medium", "low"]}
        },
        "required": ["category", "question", "priority"]
    });
    let mut schema = json!({
        "type": "object",
        "properties": {
            "simple": {"type": "boolean"},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "questions": {"type": "array", "maxItems": 5, "items": question}
        },
        "required": ["simple", "confidence", "questions"]
    });
    if !files.is_empty() {
        schema["properties"]["history"] = json!({
            "type": "array",
            "maxItems": MOST_HISTORIES.min(files.len()),
            "items": {"type": "string", "enum": files},
            "description": "Files whose git history and blame you want to read before writing (may be empty)."
        });
        if let Some(required) = schema["required"].as_array_mut() {
            required.push(json!("history"));
        }
    }
    Checked::new(
        "moot_code_questions",
        schema,
        validate_questions,
        Some("text"),
    )
}

/// The most files whose history one round of questions may ask for.
pub const MOST_HISTORIES: usize = 3;

/// The Designer's answers to them, with what stays ambiguous.
pub fn answers_reply() -> Checked {
    let schema = json!({
        "type": "object",
        "properties": {
            "answers": {"type": "array", "items": {
                "type": "object",
                "properties": {"question": {"type": "string"}, "answer": {"type": "string"}},
                "required": ["question", "answer"]
            }},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "remaining_ambiguities": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["answers", "confidence", "remaining_ambiguities"]
    });
    Checked::new("moot_code_answers", schema, validate_answers, Some("text"))
}

/// The Judge's rubric for each of the versions `numbers`.
pub fn scores_reply(numbers: &[u32]) -> Checked {
    let criterion = json!({"type": "number", "minimum": 0, "maximum": 1});
    let schema = json!({
        "type": "object",
        "properties": {"scores": {"type": "array", "items": {
            "type": "object",
            "properties": {
                "version": {"type": "integer", "enum": numbers},
                "correctness": criterion, "maintainability": criterion, "performance": criterion,
                "security": criterion, "tests": criterion
            },
            "required": ["version", "correctness", "maintainability", "performance", "security", "tests"]
        }}},
        "required": ["scores"]
    });
    Checked::new("moot_code_scores", schema, validate_scores, Some("text"))
}

/// The Generator's code: whole files and a summary.
pub fn code_reply() -> Checked {
    Checked::new("moot_code", reply::schema(), validate_code, Some("summary"))
}

/// The Generator's reflection on a failed attempt.
pub fn reflection_reply() -> Checked {
    let schema = json!({
        "type": "object",
        "properties": {
            "root_cause": {"type": "string"},
            "went_wrong": {"type": "string"},
            "change_next": {"type": "string"},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1}
        },
        "required": ["root_cause", "went_wrong", "change_next", "confidence"]
    });
    Checked::new(
        "moot_code_reflection",
        schema,
        validate_reflection,
        Some("text"),
    )
}

/// The red team's attacks, as runnable tests where it can.
pub fn attacks_reply() -> Checked {
    let schema = json!({
        "type": "object",
        "properties": {"attacks": {"type": "array", "maxItems": 5, "items": {
            "type": "object",
            "properties": {
                "attack": {"type": "string"},
                "test_path": {"type": "string"},
                "test_content": {"type": "string"}
            },
            "required": ["attack"]
        }}},
        "required": ["attacks"]
    });
    Checked::new("moot_attacks", schema, validate_attacks, Some("text"))
}

pub const CATEGORIES: [&str; 5] = [
    "requirements",
    "constraints",
    "edge_cases",
    "performance",
    "integration",
];

fn validate_questions(reply: &Value) -> Result<Value, Unusable> {
    if !reply.get("simple").is_some_and(Value::is_boolean) {
        return Err("`simple` must be true or false".into());
    }
    if let Some(history) = reply.get("history")
        && !history
            .as_array()
            .is_some_and(|files| files.iter().all(Value::is_string))
    {
        return Err("`history` must be a list of the files offered".into());
    }
    if !reply
        .get("confidence")
        .and_then(Value::as_f64)
        .is_some_and(|c| (0.0..=1.0).contains(&c))
    {
        return Err("`confidence` is a number 0–1".into());
    }
    for question in reply
        .get("questions")
        .and_then(Value::as_array)
        .ok_or("`questions` must be a list")?
    {
        let category = question["category"].as_str().unwrap_or("");
        if !CATEGORIES.contains(&category) {
            return Err(unusable!(
                "a question's `category` is one of {}, not {category:?}",
                CATEGORIES.join(", ")
            ));
        }
        if question["question"]
            .as_str()
            .is_none_or(|q| q.trim().is_empty())
        {
            return Err("every question needs its `question`".into());
        }
    }
    let text: String = reply["questions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|q| {
            format!(
                "- [{}] {}\n",
                q["category"].as_str().unwrap_or("").replace('_', " "),
                q["question"].as_str().unwrap_or("").trim()
            )
        })
        .collect();
    Ok(with_text(
        reply,
        if text.is_empty() {
            format!(
                "No questions (confidence {:.0} %).",
                reply["confidence"].as_f64().unwrap_or(0.0) * 100.0
            )
        } else {
            text
        },
    ))
}

fn validate_answers(reply: &Value) -> Result<Value, Unusable> {
    let answers = reply
        .get("answers")
        .and_then(Value::as_array)
        .ok_or("`answers` must be a list")?;
    if answers
        .iter()
        .any(|a| a["answer"].as_str().is_none_or(|t| t.trim().is_empty()))
    {
        return Err("every answer needs its `answer`".into());
    }
    let text: String = answers
        .iter()
        .map(|a| {
            format!(
                "- {} → {}\n",
                a["question"].as_str().unwrap_or("").trim(),
                a["answer"].as_str().unwrap_or("").trim()
            )
        })
        .collect();
    Ok(with_text(reply, text))
}

/// The reply with `text`, what its pane shows, made from its fields (models write no prose
/// for these replies).
pub fn with_text(reply: &Value, text: String) -> Value {
    let mut reply = reply.clone();
    if let Some(map) = reply.as_object_mut() {
        map.insert("text".into(), Value::String(text));
    }
    reply
}

fn validate_scores(reply: &Value) -> Result<Value, Unusable> {
    reply
        .get("scores")
        .and_then(Value::as_array)
        .ok_or("`scores` must be a list, one per version")?;
    let text: String = scores_of(Some(reply))
        .iter()
        .map(|(n, q)| format!("- v{n}: {:.2}\n", q.score()))
        .collect();
    Ok(with_text(reply, text))
}

/// The Judge's scores as its turn's data holds them: (version, rubric).
pub fn scores_of(data: Option<&Value>) -> Vec<(u32, Quality)> {
    data.and_then(|d| d.get("scores"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|item| {
            let number = u32::try_from(item["version"].as_u64()?).ok()?;
            let get = |f: &str| item[f].as_f64().unwrap_or(0.0).clamp(0.0, 1.0);
            Some((
                number,
                Quality {
                    correctness: get("correctness"),
                    maintainability: get("maintainability"),
                    performance: get("performance"),
                    security: get("security"),
                    tests: get("tests"),
                },
            ))
        })
        .collect()
}

fn validate_code(reply: &Value) -> Result<Value, Unusable> {
    let parsed = reply::parse(reply).map_err(|e| Unusable(e.to_string()))?;
    serde_json::to_value(parsed).map_err(|e| unusable!("{e}"))
}

fn validate_reflection(reply: &Value) -> Result<Value, Unusable> {
    for field in ["root_cause", "went_wrong", "change_next"] {
        if reply
            .get(field)
            .and_then(Value::as_str)
            .is_none_or(|s| s.trim().is_empty())
        {
            return Err(unusable!("`{field}` is needed"));
        }
    }
    if !reply
        .get("confidence")
        .and_then(Value::as_f64)
        .is_some_and(|c| (0.0..=1.0).contains(&c))
    {
        return Err("`confidence` is a number 0–1".into());
    }
    let field = |f: &str| reply[f].as_str().unwrap_or("").trim().to_string();
    Ok(with_text(
        reply,
        format!(
            "- Root cause: {}\n- What went wrong: {}\n- Next: {}",
            field("root_cause"),
            field("went_wrong"),
            field("change_next")
        ),
    ))
}

fn validate_attacks(reply: &Value) -> Result<Value, Unusable> {
    reply
        .get("attacks")
        .and_then(Value::as_array)
        .ok_or("`attacks` must be a list")?;
    let text: String = reply["attacks"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| format!("- {}\n", a["attack"].as_str().unwrap_or("").trim()))
        .collect();
    Ok(with_text(
        reply,
        if text.is_empty() {
            "Nothing new to attack.".into()
        } else {
            text
        },
    ))
}
