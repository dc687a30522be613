//! The moderator's structured replies (analysis, round evaluation, synthesis): their schemas
//! and validators. Model output only changes the debate through these validated fields.

use crate::debate::Named as _;
use crate::debate::Seat;
use crate::engine::Checked;
use crate::engine::Unusable;
use crate::engine::text_field;
use crate::protocol::text::clip;
use serde_json::{Value, json};

pub const ANALYSIS_SCHEMA: &str = "moot_analysis";
pub const EVALUATION_SCHEMA: &str = "moot_evaluation";
pub const SYNTHESIS_SCHEMA: &str = "moot_synthesis";

/// The moderator's analysis of the question, read by `validate_analysis`.
pub fn analysis_reply() -> Checked {
    Checked::new(ANALYSIS_SCHEMA, analysis_schema(), validate_analysis, None)
}

/// The moderator's evaluation of a round among `seats`, its summary shown as it streams.
pub fn evaluation_reply(seats: &[Seat]) -> Checked {
    Checked::new(
        EVALUATION_SCHEMA,
        evaluation_schema(seats),
        validate_evaluation,
        Some("summary"),
    )
}

/// The moderator's synthesis of a debate among `seats`, its recommendation shown as it
/// streams.
pub fn synthesis_reply(seats: &[Seat]) -> Checked {
    Checked::new(
        SYNTHESIS_SCHEMA,
        synthesis_schema(seats),
        validate_synthesis,
        Some("recommendation"),
    )
}

pub fn analysis_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "domain": {"type": "string", "minLength": 1, "description": "architecture, data, security, ux, operations, performance or general"},
            "constraints": {"type": "array", "items": {"type": "string"}, "maxItems": 5, "description": "Implicit constraints heard in the question, e.g. 'we need to ship fast'."},
            "binary": {"type": "boolean", "description": "True if the question is a choice between two options or a yes/no question."},
            "debaters": {"type": "integer", "minimum": 2, "maximum": 4},
            "vague": {"type": "boolean", "description": "True only if the question is too vague to debate."},
            "clarifying_question": {"type": "string", "description": "If vague: one question to ask the human. Else empty."}
        },
        "required": ["domain", "constraints", "binary", "debaters", "vague"]
    })
}

pub fn validate_analysis(value: &Value) -> Result<Value, Unusable> {
    let object = value.as_object().ok_or("the reply must be a JSON object")?;
    let domain = text_field(value, "domain").ok_or("`domain` must be a non-empty string")?;
    let debaters = object
        .get("debaters")
        .and_then(Value::as_u64)
        .filter(|n| (2..=4).contains(n))
        .ok_or("`debaters` must be 2, 3 or 4")?;
    let constraints = string_list(object.get("constraints"), 5);
    let binary = object
        .get("binary")
        .and_then(Value::as_bool)
        .unwrap_or(debaters == 2);
    let vague = object
        .get("vague")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let clarifying = text_field(value, "clarifying_question");
    let summary = format!(
        "Domain: {}. {}, {debaters} debaters.{}",
        clip(domain, 40),
        if binary {
            "A binary choice"
        } else {
            "A multi-faceted question"
        },
        if constraints.is_empty() {
            String::new()
        } else {
            format!(" Constraints: {}.", constraints.join("; "))
        }
    );
    Ok(json!({
        "summary": summary,
        "domain": clip(domain, 40),
        "constraints": constraints,
        "binary": binary,
        "debaters": debaters,
        "vague": vague,
        "clarifying_question": clarifying.map(|q| clip(q, 300)),
    }))
}

// How long the evaluation's prose may run, as its schema declares: the grammar the embedded
// model samples under shares the reply's budget by these weights, and without them gave the
// summary too small a share to hold the 120 words its description asks for.
/// A round's summary: about 120 words.
const SUMMARY_CHARS: usize = 700;
/// What the debaters must clarify next round.
const CLARIFICATION_CHARS: usize = 300;
/// Why the moderator decided as it did, one sentence.
const REASON_CHARS: usize = 200;

pub fn evaluation_schema(seats: &[Seat]) -> Value {
    let ids: Vec<&str> = seats.iter().map(|s| s.id.as_str()).collect();
    // The leader is a seat, or nobody.
    let mut leaders = ids.clone();
    leaders.push("");
    json!({
        "type": "object",
        "properties": {
            "summary": {"type": "string", "minLength": 1, "maxLength": SUMMARY_CHARS, "description": "The round in at most 120 words: where each perspective stands and what is unresolved. Cite argument ids like [A1.2]."},
            "assessment": {"type": "string", "enum": ["converging", "stagnating", "new_ground"]},
            "decision": {"type": "string", "enum": ["continue", "clarify", "conclude"]},
            "agreement": {"type": "boolean", "description": "True if the perspectives now recommend the same thing."},
            "leader": {"type": "string", "enum": leaders, "description": "Seat id of a perspective that clearly dominates, else empty."},
            "off_topic": {"type": "array", "items": {"type": "string", "enum": ids}, "maxItems": ids.len(), "description": "Seat ids that argued beside the question."},
            "clarification": {"type": "string", "maxLength": CLARIFICATION_CHARS, "description": "If decision is clarify: what the debaters must clarify next round."},
            "reason": {"type": "string", "maxLength": REASON_CHARS, "description": "Why you decided as you did, one sentence."}
        },
        "required": ["summary", "assessment", "decision", "agreement"]
    })
}

pub fn validate_evaluation(value: &Value) -> Result<Value, Unusable> {
    let object = value.as_object().ok_or("the reply must be a JSON object")?;
    let summary = text_field(value, "summary").ok_or("`summary` must be a non-empty string")?;
    let assessment = one_of(
        object.get("assessment"),
        &["converging", "stagnating", "new_ground"],
    )
    .ok_or("`assessment` must be converging, stagnating or new_ground")?;
    let decision = one_of(object.get("decision"), &["continue", "clarify", "conclude"])
        .ok_or("`decision` must be continue, clarify or conclude")?;
    let seat_id = |v: &str| {
        let v = v.trim().trim_start_matches("Seat ").trim();
        (v.len() == 1 && v.chars().all(|c| c.is_ascii_uppercase())).then(|| v.to_string())
    };
    let leader = object
        .get("leader")
        .and_then(Value::as_str)
        .and_then(seat_id);
    let off_topic: Vec<String> = string_list(object.get("off_topic"), 4)
        .iter()
        .filter_map(|s| seat_id(s))
        .collect();
    Ok(json!({
        "summary": clip(summary, 2000),
        "assessment": assessment,
        "decision": decision,
        "agreement": object.get("agreement").and_then(Value::as_bool).unwrap_or(false),
        "leader": leader,
        "off_topic": off_topic,
        "clarification": object.get("clarification").and_then(Value::as_str).map(|c| clip(c.trim(), 400)).filter(|c| !c.is_empty()),
        "reason": object.get("reason").and_then(Value::as_str).map(|r| clip(r.trim(), 400)).unwrap_or_default(),
    }))
}

// What a synthesis holds, as its schema declares: a decision record's worth (the demo
// debate's record fits). The grammar the embedded model samples under shares the reply's
// budget by these weights; with none, six items a list took the shares, leaving a record
// like the demo's no room. A provider that reads the schema only as advice is clipped by the
// validator at its own, looser limits.
/// The recommendation: about 100 words.
const RECOMMENDATION_CHARS: usize = 600;
const TITLE_CHARS: usize = 80;
/// The strongest disagreement, a sentence or two.
const DISSENT_CHARS: usize = 240;
/// One item of a list (an agreement, a tension, a key argument): a sentence.
const ITEM_CHARS: usize = 120;
/// Agreements, tensions, caveats and action items each.
const LIST_ITEMS: usize = 4;
const KEY_ARGUMENTS: usize = 3;
const TRADE_OFFS: usize = 2;

/// The synthesis asks for one entry per seat, keyed by its id: a model held to the schema
/// then writes each perspective once, where free names and a free count had the default
/// model write a two-seat debate three perspectives named with fragments of arguments, which
/// matched no seat. Ids, not the perspectives' names, so that the schema's words in the system
/// prompt are the same in every debate with as many seats, and its cache is kept
/// (`llm::local::openings`).
pub fn synthesis_schema(seats: &[Seat]) -> Value {
    let list = |items: usize| json!({"type": "array", "items": {"type": "string", "maxLength": ITEM_CHARS}, "maxItems": items});
    let perspective = json!({
        "type": "object",
        "properties": {
            "key_arguments": list(KEY_ARGUMENTS),
            "trade_offs_accepted": list(TRADE_OFFS)
        },
        "required": ["key_arguments", "trade_offs_accepted"]
    });
    let ids: Vec<&str> = seats.iter().map(|s| s.id.as_str()).collect();
    let perspectives: serde_json::Map<String, Value> = ids
        .iter()
        .map(|id| (id.to_string(), perspective.clone()))
        .collect();
    json!({
        "type": "object",
        "properties": {
            "recommendation": {"type": "string", "minLength": 1, "maxLength": RECOMMENDATION_CHARS, "description": "What to do and why, citing argument ids like [A2.1]."},
            "title": {"type": "string", "maxLength": TITLE_CHARS, "description": "The decision topic in a few words."},
            "confidence": {"type": "string", "enum": ["High", "Medium", "Low"]},
            "perspectives": {
                "type": "object",
                "properties": perspectives,
                "required": ids,
                "description": "Each seat's perspective, by seat id."
            },
            "agreements": list(LIST_ITEMS),
            "tensions": list(LIST_ITEMS),
            "caveats": list(LIST_ITEMS),
            "dissent": {"type": "string", "maxLength": DISSENT_CHARS, "description": "The strongest disagreement with the recommendation, or empty."},
            "action_items": list(LIST_ITEMS)
        },
        "required": ["recommendation", "title", "confidence", "perspectives", "agreements", "tensions", "caveats", "dissent"]
    })
}

pub fn validate_synthesis(value: &Value) -> Result<Value, Unusable> {
    let object = value.as_object().ok_or("the reply must be a JSON object")?;
    let recommendation =
        text_field(value, "recommendation").ok_or("`recommendation` must be a non-empty string")?;
    let confidence = object
        .get("confidence")
        .and_then(Value::as_str)
        .and_then(crate::debate::Confidence::parse)
        .ok_or("`confidence` must be High, Medium or Low")?;
    let perspective = |name: &str, p: &Value| {
        let name = name.trim();
        (!name.is_empty()).then(|| {
            json!({
                "name": clip(name, 80),
                "key_arguments": string_list(p.get("key_arguments"), 6),
                "trade_offs_accepted": string_list(p.get("trade_offs_accepted"), 4),
            })
        })
    };
    // Keyed by seat id, as the schema asks; or a list of entries named by perspective, as
    // providers that read the schema only as advice (and replies journaled before it asked for
    // keys) may give. The record matches either to its seat.
    let perspectives: Vec<Value> = match object.get("perspectives") {
        Some(Value::Object(by_name)) => by_name
            .iter()
            .filter_map(|(name, p)| perspective(name, p))
            .collect(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|p| perspective(p.get("name").and_then(Value::as_str)?, p))
            .collect(),
        _ => {
            return Err(
                "`perspectives` must map each seat id to {key_arguments, trade_offs_accepted}"
                    .into(),
            );
        }
    };
    Ok(json!({
        "recommendation": clip(recommendation, 4000),
        "title": object.get("title").and_then(Value::as_str).map(|t| clip(t.trim(), 120)).unwrap_or_default(),
        "confidence": confidence.as_str(),
        "perspectives": perspectives,
        "agreements": string_list(object.get("agreements"), 8),
        "tensions": string_list(object.get("tensions"), 8),
        "caveats": string_list(object.get("caveats"), 6),
        "dissent": object.get("dissent").and_then(Value::as_str).map(|d| clip(d.trim(), 1500)).unwrap_or_default(),
        "action_items": string_list(object.get("action_items"), 8),
    }))
}

fn one_of(value: Option<&Value>, allowed: &[&str]) -> Option<String> {
    let text = value?
        .as_str()?
        .trim()
        .to_ascii_lowercase()
        .replace([' ', '-'], "_");
    allowed.contains(&text.as_str()).then_some(text)
}

/// A list of non-empty strings, at most `max`, each clipped.
pub fn string_list(value: Option<&Value>, max: usize) -> Vec<String> {
    match value {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .take(max)
            .map(|s| clip(s, 500))
            .collect(),
        Some(Value::String(s)) if !s.trim().is_empty() => vec![clip(s.trim(), 500)],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seats(perspectives: &[&str]) -> Vec<Seat> {
        ["A", "B", "C", "D"]
            .iter()
            .zip(perspectives)
            .map(|(id, perspective)| Seat::fixture(id, perspective))
            .collect()
    }

    #[test]
    fn analysis_needs_a_domain_and_a_seat_count() {
        let ok = validate_analysis(
            &json!({"domain": "data", "debaters": 3, "constraints": ["ship fast", 4]}),
        )
        .unwrap();
        assert_eq!(ok["debaters"], 3);
        assert_eq!(ok["constraints"], json!(["ship fast"]));
        assert!(validate_analysis(&json!({"domain": "data", "debaters": 7})).is_err());
        assert!(validate_analysis(&json!({"debaters": 2})).is_err());
    }

    #[test]
    fn evaluation_normalises_enums_and_seat_ids() {
        let ok = validate_evaluation(&json!({
            "summary": "x", "assessment": "New ground", "decision": "Continue",
            "agreement": false, "leader": "Seat B", "off_topic": ["C", "moderator"]
        }))
        .unwrap();
        assert_eq!(ok["assessment"], "new_ground");
        assert_eq!(ok["leader"], "B");
        assert_eq!(ok["off_topic"], json!(["C"]));
        assert!(
            validate_evaluation(
                &json!({"summary": "x", "assessment": "meh", "decision": "continue"})
            )
            .is_err()
        );
    }

    #[test]
    fn synthesis_requires_recommendation_confidence_and_perspectives() {
        let ok = validate_synthesis(&json!({
            "recommendation": "Use Postgres", "confidence": "medium", "title": "Cache",
            "perspectives": [{"name": "Performance Advocate", "key_arguments": ["fast [A1.1]"], "trade_offs_accepted": []}],
            "agreements": [], "tensions": ["speed vs ops"], "caveats": [], "dissent": ""
        }))
        .unwrap();
        assert_eq!(ok["confidence"], "Medium");
        assert!(
            validate_synthesis(
                &json!({"recommendation": "x", "confidence": "sure", "perspectives": []})
            )
            .is_err()
        );
        assert!(validate_synthesis(&json!({"recommendation": "x", "confidence": "Low"})).is_err());
    }

    /// A string the validator refuses empty is one the schema, and so the grammar a local
    /// model samples under, refuses empty too: else a small model writes `""`, the reply is
    /// refused and the turn is generated again (seen on the moderator's evaluation).
    #[test]
    fn the_strings_a_validator_needs_non_empty_are_non_empty_in_the_schema() {
        let analysis = json!({"domain": "data", "debaters": 3});
        let evaluation = json!({"summary": "x", "assessment": "converging", "decision": "continue", "agreement": false});
        let synthesis = json!({
            "recommendation": "x", "confidence": "Low", "title": "t",
            "perspectives": [{"name": "P", "key_arguments": [], "trade_offs_accepted": []}],
            "agreements": [], "tensions": [], "caveats": [], "dissent": ""
        });
        type Validator = fn(&Value) -> Result<Value, Unusable>;
        let cases: [(Value, &str, Value, Validator); 3] = [
            (analysis_schema(), "domain", analysis, validate_analysis),
            (
                evaluation_schema(&seats(&["P", "Q"])),
                "summary",
                evaluation,
                validate_evaluation,
            ),
            (
                synthesis_schema(&seats(&["P", "Q"])),
                "recommendation",
                synthesis,
                validate_synthesis,
            ),
        ];
        for (schema, field, mut reply, validate) in cases {
            assert!(
                validate(&reply).is_ok(),
                "{field}: the sample reply is valid"
            );
            reply[field] = json!("  ");
            assert!(validate(&reply).is_err(), "{field}: blank is refused");
            assert_eq!(schema["properties"][field]["minLength"], 1, "{field}");
            assert!(
                schema["required"]
                    .as_array()
                    .unwrap()
                    .contains(&json!(field)),
                "{field} is required"
            );
        }
    }

    /// The synthesis asks for each seat's perspective once, by seat id; the evaluation names
    /// only the round's seats. The schemas' words depend on how many seats there are, not on
    /// their perspectives, so that two debates with as many seats share the moderator's system
    /// prompt (and its kept cache).
    #[test]
    fn the_moderators_replies_are_asked_per_seat() {
        let two = seats(&["Performance Advocate", "Operations Pragmatist"]);
        let schema = synthesis_schema(&two);
        let perspectives = &schema["properties"]["perspectives"];
        assert_eq!(perspectives["required"], json!(["A", "B"]));
        assert_eq!(
            perspectives["properties"]
                .as_object()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            ["A", "B"]
        );
        assert_eq!(
            schema,
            synthesis_schema(&seats(&["Security Reviewer", "Cost Analyst"])),
            "the same words for any two perspectives"
        );
        assert_ne!(schema, synthesis_schema(&seats(&["P", "Q", "R"])));
        let evaluation = evaluation_schema(&seats(&["P", "Q", "R"]));
        assert_eq!(
            evaluation["properties"]["leader"]["enum"],
            json!(["A", "B", "C", ""])
        );
        assert_eq!(
            evaluation["properties"]["off_topic"]["items"]["enum"],
            json!(["A", "B", "C"])
        );
    }

    /// A good record fits the per-seat shape: the demo debate's evaluations and synthesis
    /// (written by a capable model) are admitted by the grammars the embedded model samples
    /// under, at the budgets the moderator asks with.
    #[test]
    fn a_good_record_is_admitted_by_the_moderators_grammars() {
        let demo: Value = serde_json::from_str(include_str!(
            "../../../../../assets/demo/redis-vs-postgres.json"
        ))
        .unwrap();
        let replies = demo["replies"].as_array().unwrap();
        let phase = |name: &'static str| replies.iter().filter(move |r| r["phase"] == name);
        let two = seats(&["Operational Simplicity", "Performance Advocate"]);
        // The budgets the moderator asks with (800 and 2000 tokens), three characters a token.
        let evaluation =
            crate::llm::grammar::Grammar::from_schema(&evaluation_schema(&two), 2400).unwrap();
        for reply in phase("evaluation") {
            let text = reply["reply"].to_string();
            assert!(evaluation.accepts(&text), "refused: {text}");
        }
        let synthesis =
            crate::llm::grammar::Grammar::from_schema(&synthesis_schema(&two), 6000).unwrap();
        let mut reply = phase("synthesis").next().unwrap()["reply"].clone();
        // Keyed by seat, as the schema asks, and its fields in the schema's order.
        let listed = reply["perspectives"].as_array().unwrap().clone();
        let mut keyed = serde_json::Map::new();
        for (seat, perspective) in ["A", "B"].iter().zip(listed) {
            keyed.insert(
                seat.to_string(),
                json!({"key_arguments": perspective["key_arguments"], "trade_offs_accepted": perspective["trade_offs_accepted"]}),
            );
        }
        reply["perspectives"] = Value::Object(keyed);
        let ordered: serde_json::Map<String, Value> = synthesis_schema(&two)["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(|key| (key.clone(), reply[key].clone()))
            .collect();
        let text = Value::Object(ordered).to_string();
        assert!(synthesis.accepts(&text), "refused: {text}");
        // A third perspective, or one under a name, is not.
        let mut third = reply.clone();
        third["perspectives"]["C"] = third["perspectives"]["A"].clone();
        assert!(!synthesis.accepts(&third.to_string()));
    }

    #[test]
    fn a_synthesis_keyed_by_seat_and_one_listed_by_name_both_validate() {
        let keyed = validate_synthesis(&json!({
            "recommendation": "Use Postgres", "confidence": "Low", "title": "Cache",
            "perspectives": {
                "A": {"key_arguments": ["fast [A1.1]"], "trade_offs_accepted": ["ops"]},
                "B": {"key_arguments": [], "trade_offs_accepted": []}
            },
            "agreements": [], "tensions": [], "caveats": [], "dissent": ""
        }))
        .unwrap();
        assert_eq!(
            keyed["perspectives"],
            json!([
                {"name": "A", "key_arguments": ["fast [A1.1]"], "trade_offs_accepted": ["ops"]},
                {"name": "B", "key_arguments": [], "trade_offs_accepted": []}
            ])
        );
        let listed = validate_synthesis(&json!({
            "recommendation": "Use Postgres", "confidence": "Low",
            "perspectives": [{"name": "Performance Advocate", "key_arguments": ["fast"], "trade_offs_accepted": []}]
        }))
        .unwrap();
        assert_eq!(listed["perspectives"][0]["name"], "Performance Advocate");
        assert!(
            validate_synthesis(
                &json!({"recommendation": "x", "confidence": "Low", "perspectives": "A"})
            )
            .is_err()
        );
    }
}
