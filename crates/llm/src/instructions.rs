//! How a request asks for JSON in words: the schema's whole text for a provider that may not
//! hold the reply to it, or a field list for one whose sampler does (the embedded model's
//! grammar), which then needs only what each field means.

use serde_json::Value;
use std::collections::HashSet;
use std::fmt::Write as _;

const ONE_OBJECT: &str =
    "Reply with exactly one JSON object and nothing else (no code fences, no prose around it).";

/// A system prompt with the words that ask for its reply's schema after it, as every request
/// for a structured reply carries them.
pub fn system_asking(system: &str, words: &str) -> String {
    format!("{system}\n\n{words}")
}

/// The instruction that asks for JSON matching `schema`, its whole text included: what a
/// provider that takes no schema, or may not keep to one, needs to follow it.
pub fn json_instructions(name: &str, schema: &Value) -> String {
    format!("{ONE_OBJECT} It must match this JSON schema, named {name}:\n{schema}")
}

/// The same request as a list of fields, one a line, with their types, bounds and
/// descriptions but none of JSON Schema's syntax: for a provider whose sampler admits only
/// replies that match the schema. On the default model a debater's system prompt is then 594
/// tokens instead of 821, and each token a seat writes attends to every one of them.
pub fn field_instructions(name: &str, schema: &Value) -> String {
    let mut text = format!("{ONE_OBJECT} It is {name}");
    // A description said once is not said again (the alternatives of a move share most).
    let mut said = HashSet::new();
    if object_fields(schema).is_some() {
        text.push_str(", with these fields in this order (one marked ? may be left out):");
        list_fields(&mut text, 0, schema, &mut said);
    } else {
        let _ = write!(text, ": {}", Shape::of(schema).summary);
        describe(&mut text, schema, &mut said);
    }
    text
}

/// What a schema says a value is, in words, and the objects it holds whose fields are
/// listed below it.
struct Shape<'a> {
    summary: String,
    nested: Vec<&'a Value>,
}

impl<'a> Shape<'a> {
    fn of(schema: &'a Value) -> Shape<'a> {
        if let Some(value) = schema.get("const") {
            return Shape::words(value.to_string());
        }
        if let Some(values) = schema.get("enum").and_then(Value::as_array) {
            let values: Vec<String> = values.iter().map(Value::to_string).collect();
            return Shape::words(values.join(" | "));
        }
        if let Some(options) = alternatives(schema) {
            if options.iter().all(|o| object_fields(o).is_some()) {
                return Shape {
                    summary: "one of these objects".into(),
                    nested: options.iter().collect(),
                };
            }
            let words: Vec<String> = options.iter().map(|o| Shape::of(o).summary).collect();
            return Shape::words(words.join(", or "));
        }
        if object_fields(schema).is_some() {
            return Shape {
                summary: "an object".into(),
                nested: vec![schema],
            };
        }
        let types: Vec<&str> = match schema.get("type") {
            Some(Value::String(one)) => vec![one.as_str()],
            Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if types.contains(&"array") {
            return Shape::list(schema);
        }
        if types.is_empty() {
            return Shape::words("any JSON value".into());
        }
        let words: Vec<String> = types.iter().map(|t| scalar(t, schema)).collect();
        Shape::words(words.join(" or "))
    }

    fn words(summary: String) -> Shape<'a> {
        Shape {
            summary,
            nested: Vec::new(),
        }
    }

    fn list(schema: &'a Value) -> Shape<'a> {
        let count = bounds(number(schema, "minItems"), number(schema, "maxItems"))
            .map(|b| format!(" of {b}"))
            .unwrap_or_default();
        let Some(items) = schema.get("items") else {
            return Shape::words(format!("a list{count}"));
        };
        let item = Shape::of(items);
        let mut summary = format!("a list{count}, each {}", item.summary);
        // A description of the items (not of the list) goes with them.
        if let Some(description) = description(items) {
            let _ = write!(summary, " ({description})");
        }
        Shape {
            summary,
            nested: item.nested,
        }
    }
}

/// A string, number, integer, boolean or null in words, with its bounds.
fn scalar(kind: &str, schema: &Value) -> String {
    match kind {
        "string" => {
            let (low, high) = (number(schema, "minLength"), number(schema, "maxLength"));
            let mut words = match (low, high) {
                (Some(1), None) => "a non-empty string".to_string(),
                _ => "a string".to_string(),
            };
            // Beside a maximum, a minimum of one character goes without saying.
            let low = low.filter(|&low| low > 1);
            if let Some(length) = bounds(low, high) {
                let _ = write!(words, " of {length} characters");
            }
            if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
                let _ = write!(words, " matching {pattern}");
            }
            words
        }
        "number" | "integer" => {
            let mut words = format!("a{} {kind}", if kind == "integer" { "n" } else { "" });
            let at = |key| schema.get(key).filter(|v| v.is_number());
            match (at("minimum"), at("maximum")) {
                (Some(low), Some(high)) => {
                    let _ = write!(words, " from {low} to {high}");
                }
                (Some(low), None) => {
                    let _ = write!(words, " of at least {low}");
                }
                (None, Some(high)) => {
                    let _ = write!(words, " of at most {high}");
                }
                (None, None) => {}
            }
            words
        }
        "boolean" => "true or false".into(),
        "null" => "null".into(),
        other => format!("a {other}"),
    }
}

/// A count the schema sets (`minItems`, `maxLength`, …).
fn number(schema: &Value, key: &str) -> Option<u64> {
    schema.get(key).and_then(Value::as_u64)
}

/// "1 to 6", "at most 3", "at least 2", or nothing when there is no bound (a lower bound of 0
/// is none).
fn bounds(low: Option<u64>, high: Option<u64>) -> Option<String> {
    match (low.unwrap_or(0), high) {
        (low, Some(high)) if low == high => Some(format!("exactly {high}")),
        (0, Some(high)) => Some(format!("at most {high}")),
        (low, Some(high)) => Some(format!("{low} to {high}")),
        (0, None) => None,
        (low, None) => Some(format!("at least {low}")),
    }
}

/// A field of an object schema: its name, whether it may be left out, and its schema.
type Field<'a> = (&'a str, bool, &'a Value);

/// An object schema's fields in order.
fn object_fields(schema: &Value) -> Option<Vec<Field<'_>>> {
    let properties = schema.get("properties")?.as_object()?;
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    Some(
        properties
            .iter()
            .map(|(key, field)| (key.as_str(), !required.contains(&key.as_str()), field))
            .collect(),
    )
}

fn alternatives(schema: &Value) -> Option<&Vec<Value>> {
    schema
        .get("anyOf")
        .or_else(|| schema.get("oneOf"))
        .and_then(Value::as_array)
}

fn description(schema: &Value) -> Option<&str> {
    schema
        .get("description")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|d| !d.is_empty())
}

/// Appends " — description" unless the same words were said before.
fn describe(text: &mut String, schema: &Value, said: &mut HashSet<String>) {
    if let Some(description) = description(schema)
        && said.insert(description.to_string())
    {
        let _ = write!(text, " — {description}");
    }
}

/// The fields of `schema` as lines at `depth`, each followed by those of the objects it holds.
fn list_fields(text: &mut String, depth: usize, schema: &Value, said: &mut HashSet<String>) {
    list_these(text, depth, object_fields(schema).unwrap_or_default(), said);
}

/// `fields` as lines at `depth`, each followed by those of the objects it holds.
fn list_these(text: &mut String, depth: usize, fields: Vec<Field<'_>>, said: &mut HashSet<String>) {
    let indent = "  ".repeat(depth);
    for (key, optional, field) in fields {
        let shape = Shape::of(field);
        let _ = write!(
            text,
            "\n{indent}- {}: {}",
            name(key, optional),
            shape.summary
        );
        describe(text, field, said);
        match shape.nested.as_slice() {
            [] => {}
            [only] => list_fields(text, depth + 1, only, said),
            several => list_alternatives(text, depth + 1, several, said),
        }
    }
}

/// Objects a value may be, numbered; a field an earlier one listed alike is only named.
fn list_alternatives(
    text: &mut String,
    depth: usize,
    options: &[&Value],
    said: &mut HashSet<String>,
) {
    let indent = "  ".repeat(depth);
    let mut listed: Vec<(String, String)> = Vec::new();
    for (index, option) in options.iter().enumerate() {
        let fields = object_fields(option).unwrap_or_default();
        let known = |&(key, optional, field): &Field<'_>| {
            listed.contains(&(name(key, optional), Shape::of(field).summary))
        };
        let (same, new): (Vec<Field<'_>>, Vec<Field<'_>>) = fields.into_iter().partition(known);
        let _ = write!(text, "\n{indent}{}. an object", index + 1);
        if !same.is_empty() {
            let names: Vec<String> = same.iter().map(|&(k, o, _)| name(k, o)).collect();
            let _ = write!(text, " with {} as above", names.join(", "));
        }
        if !new.is_empty() {
            text.push_str(if same.is_empty() { ":" } else { ", and:" });
        }
        describe(text, option, said);
        listed.extend(
            new.iter()
                .map(|&(k, o, field)| (name(k, o), Shape::of(field).summary)),
        );
        list_these(text, depth + 1, new, said);
    }
}

/// A field's name, marked `?` when it may be left out.
fn name(key: &str, optional: bool) -> String {
    format!("{key}{}", if optional { "?" } else { "" })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_whole_schema_is_spelled_out_for_providers_that_may_not_keep_to_it() {
        let schema = json!({"type": "object", "properties": {"x": {"type": "integer"}}});
        let text = json_instructions("moot_x", &schema);
        assert!(text.starts_with(ONE_OBJECT), "{text}");
        assert!(
            text.ends_with(&format!("named moot_x:\n{schema}")),
            "{text}"
        );
    }

    #[test]
    fn fields_are_listed_in_order_with_types_bounds_and_descriptions() {
        let schema = json!({
            "type": "object",
            "properties": {
                "argument": {"type": "string", "minLength": 1, "maxLength": 1600, "description": "Your argument."},
                "moves": {"type": "array", "minItems": 1, "maxItems": 6, "items": {"anyOf": [
                    {"type": "object", "properties": {
                        "id": {"type": "string", "maxLength": 16, "description": "A local id."},
                        "act": {"type": "string", "enum": ["claim", "why"]}
                    }, "required": ["act"]},
                    {"type": "object", "properties": {
                        "id": {"type": "string", "maxLength": 16, "description": "A local id."},
                        "act": {"type": "string", "const": "since"},
                        "premises": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3}
                    }, "required": ["act", "premises"]}
                ]}},
                "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                "ready": {"type": "boolean"},
                "note": {"type": ["string", "null"]}
            },
            "required": ["argument", "moves", "confidence", "ready"]
        });
        let text = field_instructions("moot_argument", &schema);
        let expected = format!(
            "{ONE_OBJECT} It is moot_argument, with these fields in this order (one marked ? may \
             be left out):\n\
             - argument: a string of at most 1600 characters — Your argument.\n\
             - moves: a list of 1 to 6, each one of these objects\n  \
               1. an object:\n    \
                 - id?: a string of at most 16 characters — A local id.\n    \
                 - act: \"claim\" | \"why\"\n  \
               2. an object with id? as above, and:\n    \
                 - act: \"since\"\n    \
                 - premises: a list of 1 to 3, each a string\n\
             - confidence: a number from 0 to 1\n\
             - ready: true or false\n\
             - note?: a string or null"
        );
        assert_eq!(text, expected);
    }

    #[test]
    fn a_schema_that_is_not_an_object_is_said_in_one_line() {
        let schema =
            json!({"type": "array", "items": {"type": "integer", "minimum": 1}, "maxItems": 2});
        assert_eq!(
            field_instructions("moot_ids", &schema),
            format!(
                "{ONE_OBJECT} It is moot_ids: a list of at most 2, each an integer of at least 1"
            )
        );
    }
}
