//! The reflection step after a debate (design note 004, Reflexion's verbal memory): the
//! moderator reads the finished record and writes up to three lessons general enough to help
//! a later debate on another question.

use super::kit;
use super::text;
use crate::debate::{LessonDraft, MODERATOR, Phase, TurnKey, TurnStatus};
use crate::engine::Unusable;
use crate::engine::unusable;
use crate::engine::{Checked, Context, EngineError};
use serde_json::{Value, json};

const SCHEMA_NAME: &str = "moot_lessons";

/// Longest lesson or advice kept, in characters: a lesson is a sentence, not a transcript.
const LONGEST: usize = 300;

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "lessons": {
                "type": "array",
                "maxItems": 3,
                "items": {
                    "type": "object",
                    "properties": {
                        "lesson": {"type": "string", "description": "What this debate teaches, stated generally (no names, no file contents, no secrets)."},
                        "went": {"type": "string", "enum": ["right", "wrong"]},
                        "advice": {"type": "string", "description": "What to do differently, or again, next time."},
                        "confidence": {"type": "number", "minimum": 0, "maximum": 1}
                    },
                    "required": ["lesson", "went", "advice", "confidence"]
                }
            }
        },
        "required": ["lessons"]
    })
}

fn validate(reply: &Value) -> Result<Value, Unusable> {
    let lessons = reply
        .get("lessons")
        .and_then(Value::as_array)
        .ok_or("`lessons` must be an array")?;
    if lessons.len() > 3 {
        return Err(unusable!("at most 3 lessons, not {}", lessons.len()));
    }
    for (i, lesson) in lessons.iter().enumerate() {
        let text = |field: &str| lesson.get(field).and_then(Value::as_str).unwrap_or("");
        if text("lesson").trim().is_empty() || text("advice").trim().is_empty() {
            return Err(unusable!(
                "lesson {} needs a `lesson` and an `advice`",
                i + 1
            ));
        }
        if !matches!(text("went"), "right" | "wrong") {
            return Err(unusable!("lesson {}: `went` is right or wrong", i + 1));
        }
        if !lesson
            .get("confidence")
            .and_then(Value::as_f64)
            .is_some_and(|c| (0.0..=1.0).contains(&c))
        {
            return Err(unusable!("lesson {}: `confidence` is a number 0–1", i + 1));
        }
    }
    Ok(reply.clone())
}

fn shortened(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(LONGEST) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// Asks the moderator for the debate's lessons (journaled like any turn, so a resume does
/// not ask twice). A reply that cannot be used gives no lessons, not an error.
pub async fn reflect(
    ctx: &Context,
    question: &str,
    record: &str,
    focus: Option<&str>,
) -> Result<Vec<LessonDraft>, EngineError> {
    let focus = focus.map(|f| format!(" {f}")).unwrap_or_default();
    let speech = kit::ask(
        TurnKey::new(0, Phase::Reflection, MODERATOR),
        format!(
            "You are the moderator of a finished debate, writing lessons for future debates \
             on other questions: what went right or wrong in how this one was argued, decided \
             or framed, and what to do differently. A lesson is one or two general sentences; \
             never copy names, file contents, code, numbers from the context or anything \
             secret. Give none rather than a vague one.{focus} {}",
            text::DATA_RULE
        ),
        format!(
            "Question: {}\n\nThe debate's record:\n<record>\n{}\n</record>\n\nWrite at most three lessons.",
            question.trim(),
            record.trim()
        ),
        Checked::new(SCHEMA_NAME, schema(), validate, None),
        kit::Limits {
            max_tokens: Some(500),
            deadline: None,
        },
    );
    let turn = ctx.speak(speech).await?;
    if turn.status != TurnStatus::Ok {
        return Ok(Vec::new());
    }
    Ok(turn
        .data
        .as_ref()
        .and_then(|d| d.get("lessons"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|lesson| LessonDraft {
            text: shortened(lesson["lesson"].as_str().unwrap_or("")),
            went: lesson["went"].as_str().unwrap_or("right").to_string(),
            advice: shortened(lesson["advice"].as_str().unwrap_or("")),
            confidence: lesson["confidence"].as_f64().unwrap_or(0.5),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_validated_and_long_lessons_shortened() {
        let good = json!({"lessons": [{"lesson": "Claims went unmeasured", "went": "wrong", "advice": "Measure", "confidence": 0.7}]});
        assert!(validate(&good).is_ok());
        assert!(
            validate(&json!({"lessons": []})).is_ok(),
            "no lesson is a fine answer"
        );
        let bad_went =
            json!({"lessons": [{"lesson": "x", "went": "meh", "advice": "y", "confidence": 0.5}]});
        assert!(validate(&bad_went).unwrap_err().contains("right or wrong"));
        let no_advice = json!({"lessons": [{"lesson": "x", "went": "right", "advice": " ", "confidence": 0.5}]});
        assert!(validate(&no_advice).is_err());
        let four = json!({"lessons": [good["lessons"][0], good["lessons"][0], good["lessons"][0], good["lessons"][0]]});
        assert!(validate(&four).is_err());
        let long = "a".repeat(400);
        assert_eq!(shortened(&long).chars().count(), LONGEST + 1);
    }
}
