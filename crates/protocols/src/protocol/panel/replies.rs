//! The panel's structured replies, each with its schema beside its parser: the moderator's
//! options, and a judge's recommendation or challenge.

use super::prompts::listed;
use super::settings::{PanelOption, check_options};
use super::{CHALLENGE_SCHEMA, OPTIONS_SCHEMA, RECOMMENDATION_SCHEMA};
use crate::debate::TurnStatus;
use crate::engine::Unusable;
use crate::engine::text_field;
use crate::engine::unusable;
use crate::engine::{Reply, ReplyParser, ReplyShape, Transcript};
use serde_json::{Value, json};

fn option_ids(options: &[String]) -> Vec<Value> {
    options.iter().map(|id| json!(id)).collect()
}

fn options_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "options": {
                "type": "array", "minItems": 2, "maxItems": 4,
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "enum": ["A", "B", "C", "D"]},
                        "label": {"type": "string", "maxLength": 80},
                        "description": {"type": "string", "maxLength": 300}
                    },
                    "required": ["id", "label", "description"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["options"],
        "additionalProperties": false
    })
}

fn recommendation_schema(options: &[String]) -> Value {
    json!({
        "type": "object",
        "properties": {
            "reasoning": {"type": "string", "maxLength": 2000},
            "assessments": {
                "type": "array", "minItems": options.len(), "maxItems": options.len(),
                "description": format!("One assessment of each option, each option once: {}.", options.join(", ")),
                "items": {
                    "type": "object",
                    "properties": {
                        "option": {"type": "string", "enum": option_ids(options)},
                        "assessment": {"type": "string", "maxLength": 400}
                    },
                    "required": ["option", "assessment"],
                    "additionalProperties": false
                }
            },
            "recommended": {"type": "string", "enum": option_ids(options)},
            "perspective": {"type": "string", "maxLength": 160}
        },
        "required": ["reasoning", "assessments", "recommended", "perspective"],
        "additionalProperties": false
    })
}

/// A judge's schema with every option to rank and a confidence, for a ranked vote.
fn with_ranking(mut schema: Value, options: &[String]) -> Value {
    let ids = option_ids(options);
    schema["properties"]["ranking"] = json!({
        "type": "array", "minItems": ids.len(), "maxItems": ids.len(),
        "items": {"type": "string", "enum": ids},
        "description": "Every option once, best first; your recommendation first."
    });
    schema["properties"]["confidence"] = json!({"type": "number", "minimum": 0, "maximum": 1});
    if let Some(required) = schema["required"].as_array_mut() {
        required.push(json!("ranking"));
        required.push(json!("confidence"));
    }
    schema
}

fn challenge_schema(options: &[String], others: &[String]) -> Value {
    json!({
        "type": "object",
        "properties": {
            "reasoning": {"type": "string", "maxLength": 2000},
            "challenges": {
                "type": "array", "minItems": others.len(), "maxItems": others.len(),
                "items": {
                    "type": "object",
                    "properties": {
                        "judge": {"type": "string", "enum": others},
                        "counter_argument": {"type": "string", "maxLength": 600}
                    },
                    "required": ["judge", "counter_argument"],
                    "additionalProperties": false
                }
            },
            "recommended": {"type": "string", "enum": option_ids(options)},
            "change_reason": {"type": "string", "maxLength": 600},
            "perspective": {"type": "string", "maxLength": 160}
        },
        "required": ["reasoning", "challenges", "recommended", "change_reason", "perspective"],
        "additionalProperties": false
    })
}

/// The moderator's proposed options.
pub(super) struct OptionsReplies;

impl ReplyShape for OptionsReplies {
    fn name(&self) -> &'static str {
        OPTIONS_SCHEMA
    }

    fn schema(&self) -> Value {
        options_schema()
    }
}

impl ReplyParser for OptionsReplies {
    fn parse(&self, reply: &Value, _: &Transcript<'_>) -> Result<Reply, Unusable> {
        let options: Vec<PanelOption> = serde_json::from_value(
            reply.get("options").cloned().unwrap_or(Value::Null),
        )
        .map_err(|e| format!("`options` must be a list of {{id, label, description}}: {e}"))?;
        let mut options: Vec<PanelOption> = options
            .into_iter()
            .map(|o| PanelOption {
                id: o.id.trim().to_uppercase(),
                ..o
            })
            .collect();
        options.truncate(4);
        check_options(&options)?;
        if options.len() < 2 {
            return Err("propose at least two options".into());
        }
        Ok(Reply {
            content: listed(&options),
            data: Some(json!({"options": options})),
            ..Reply::default()
        })
    }
}

/// A judge's recommendation (round 1) or challenge (later rounds): the recommended option must
/// be one of the options; a challenge must answer every other judge, and a changed
/// recommendation must say what convinced it.
pub(super) struct JudgeReplies {
    /// Every option's id.
    pub(super) options: Vec<String>,
    /// The options in the order this judge sees them.
    pub(super) order: Vec<String>,
    /// True from round 2, when the judges challenge each other.
    pub(super) challenge: bool,
    /// The other judges this one must challenge (empty in round 1).
    pub(super) others: Vec<String>,
    pub(super) require_reason: bool,
    /// Every option must be ranked, the recommendation first, with a confidence.
    pub(super) ranked: bool,
}

impl ReplyShape for JudgeReplies {
    fn name(&self) -> &'static str {
        if self.challenge {
            CHALLENGE_SCHEMA
        } else {
            RECOMMENDATION_SCHEMA
        }
    }

    fn schema(&self) -> Value {
        let schema = if self.challenge {
            challenge_schema(&self.options, &self.others)
        } else {
            recommendation_schema(&self.options)
        };
        if self.ranked {
            with_ranking(schema, &self.options)
        } else {
            schema
        }
    }

    fn stream_field(&self) -> Option<&'static str> {
        Some("reasoning")
    }
}

impl JudgeReplies {
    /// The ranking a ranked vote needs: every option once, the recommendation first, with a
    /// confidence 0–1.
    fn ranking(&self, reply: &Value, recommended: &str) -> Result<(Vec<String>, f64), Unusable> {
        let ranking: Vec<String> = reply
            .get("ranking")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(|s| s.trim().to_uppercase()))
            .collect();
        let mut sorted = ranking.clone();
        sorted.sort();
        sorted.dedup();
        let mut all = self.options.clone();
        all.sort();
        if sorted != all || ranking.len() != all.len() {
            return Err(unusable!(
                "`ranking` must list every option once ({}), best first",
                self.options.join(", ")
            ));
        }
        if ranking.first().map(String::as_str) != Some(recommended) {
            return Err(unusable!(
                "`ranking` must start with your recommendation {recommended}"
            ));
        }
        let confidence = reply
            .get("confidence")
            .and_then(Value::as_f64)
            .filter(|c| (0.0..=1.0).contains(c))
            .ok_or("`confidence` must be a number from 0 to 1")?;
        Ok((ranking, confidence))
    }

    /// Every option assessed, none twice (seed review 000/001 #6: a judge that assessed C
    /// three times was taken as having weighed A and B).
    fn assessed_once_each(&self, assessments: &[Value]) -> Result<(), Unusable> {
        let assessed: Vec<String> = assessments
            .iter()
            .filter_map(|a| text_field(a, "option"))
            .map(str::to_uppercase)
            .collect();
        let missing: Vec<&str> = self
            .options
            .iter()
            .filter(|o| !assessed.contains(o))
            .map(String::as_str)
            .collect();
        let mut repeated: Vec<&str> = assessed
            .iter()
            .enumerate()
            .filter(|(i, o)| assessed[..*i].contains(o))
            .map(|(_, o)| o.as_str())
            .collect();
        repeated.dedup();
        if missing.is_empty() && repeated.is_empty() {
            return Ok(());
        }
        Err(unusable!(
            "`assessments` must assess every option once ({}); missing: {}; assessed more than once: {}",
            self.options.join(", "),
            if missing.is_empty() {
                "none".into()
            } else {
                missing.join(", ")
            },
            if repeated.is_empty() {
                "none".into()
            } else {
                repeated.join(", ")
            }
        ))
    }

    /// A challenge round's reply: one counter-argument to each other judge, and a changed
    /// recommendation explained.
    fn challenges(
        &self,
        reply: &Value,
        transcript: &Transcript<'_>,
        recommended: &str,
        data: &mut Value,
    ) -> Result<(), Unusable> {
        let text = |field: &str| text_field(reply, field).unwrap_or("").to_string();
        let challenges = reply
            .get("challenges")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let answered: Vec<String> = challenges
            .iter()
            .filter(|c| {
                c.get("counter_argument")
                    .and_then(Value::as_str)
                    .is_some_and(|t| !t.trim().is_empty())
            })
            .filter_map(|c| c.get("judge").and_then(Value::as_str).map(str::to_string))
            .collect();
        let missing: Vec<&String> = self
            .others
            .iter()
            .filter(|o| !answered.contains(o))
            .collect();
        if !missing.is_empty() {
            return Err(unusable!(
                "`challenges` must hold one specific counter-argument to each other judge; missing: {}",
                missing
                    .iter()
                    .map(|m| m.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        data["challenges"] = Value::Array(challenges);
        let previous = transcript
            .turns
            .iter()
            .rev()
            .filter(|t| {
                t.seat == transcript.key.seat
                    && t.round < transcript.key.round
                    && t.status == TurnStatus::Ok
            })
            .find_map(|t| {
                t.data
                    .as_ref()?
                    .get("recommended")?
                    .as_str()
                    .map(str::to_string)
            });
        let reason = text("change_reason");
        if let Some(previous) = previous.filter(|p| p != recommended) {
            if self.require_reason && reason.split_whitespace().count() < 3 {
                return Err(unusable!(
                    "you changed your recommendation from {previous} to {recommended}; say exactly \
                     what convinced you in `change_reason`"
                ));
            }
            data["changed_from"] = json!(previous);
            data["change_reason"] = json!(reason);
        }
        Ok(())
    }
}

impl ReplyParser for JudgeReplies {
    fn parse(&self, reply: &Value, transcript: &Transcript<'_>) -> Result<Reply, Unusable> {
        let text = |field: &str| text_field(reply, field).unwrap_or("").to_string();
        let recommended = text("recommended").to_uppercase();
        if !self.options.contains(&recommended) {
            return Err(unusable!(
                "`recommended` must be one of {}, not {:?}",
                self.options.join(", "),
                recommended
            ));
        }
        let reasoning = text("reasoning");
        if reasoning.is_empty() {
            return Err("`reasoning` is empty: explain the recommendation".into());
        }
        let mut data = json!({
            "recommended": recommended,
            "perspective": text("perspective"),
            "order": self.order,
        });
        if self.ranked {
            let (ranking, confidence) = self.ranking(reply, &recommended)?;
            data["ranking"] = json!(ranking);
            data["confidence"] = json!(confidence);
        }
        match reply.get("assessments").and_then(Value::as_array) {
            Some(assessments) => {
                self.assessed_once_each(assessments)?;
                data["assessments"] = Value::Array(assessments.clone());
            }
            // The evaluation round asks for every option assessed; a reply without them is
            // repaired, not taken as an evaluation it is not.
            None if !self.challenge => {
                return Err(unusable!(
                    "`assessments` is missing: assess every option once ({}) before recommending one",
                    self.options.join(", ")
                ));
            }
            None => {}
        }
        if !self.others.is_empty() {
            self.challenges(reply, transcript, &recommended, &mut data)?;
        }
        Ok(Reply {
            content: reasoning,
            data: Some(data),
            ..Reply::default()
        })
    }
}
