//! Checks a JSON value against the subset of JSON Schema moot's reply schemas use (type, enum,
//! const, anyOf, properties, required, additionalProperties, items, lengths, bounds).

use serde_json::Value;

/// `Ok` when `value` satisfies `schema`; otherwise where and how it does not.
pub fn validate(value: &Value, schema: &Value) -> Result<(), String> {
    check(value, schema, "$")
}

fn check(value: &Value, schema: &Value, path: &str) -> Result<(), String> {
    let Value::Object(map) = schema else {
        return match schema {
            Value::Bool(false) => Err(format!("{path}: no value is allowed here")),
            _ => Ok(()),
        };
    };
    let fail = |problem: String| Err(format!("{path}: {problem}"));
    if let Some(options) = map.get("enum").and_then(Value::as_array)
        && !options.contains(value)
    {
        return fail(format!(
            "{value} is not one of {}",
            Value::Array(options.clone())
        ));
    }
    if let Some(constant) = map.get("const")
        && constant != value
    {
        return fail(format!("{value} is not {constant}"));
    }
    if let Some(options) = map.get("anyOf").and_then(Value::as_array)
        && !options
            .iter()
            .any(|option| check(value, option, path).is_ok())
    {
        return fail(format!("{value} matches none of the `anyOf` options"));
    }
    if let Some(kind) = map.get("type") {
        let kinds: Vec<&str> = match kind {
            Value::String(name) => vec![name.as_str()],
            Value::Array(names) => names.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        if !kinds.iter().any(|kind| has_type(value, kind)) {
            return fail(format!("expected {}, found {value}", kinds.join(" or ")));
        }
    }
    match value {
        Value::String(text) => {
            let length = text.chars().count() as u64;
            if let Some(max) = map.get("maxLength").and_then(Value::as_u64)
                && length > max
            {
                return fail(format!("{length} characters, at most {max} allowed"));
            }
            if let Some(min) = map.get("minLength").and_then(Value::as_u64)
                && length < min
            {
                return fail(format!("{length} characters, at least {min} needed"));
            }
        }
        Value::Number(number) => {
            let number = number.as_f64().unwrap_or(f64::NAN);
            if let Some(min) = map.get("minimum").and_then(Value::as_f64)
                && number < min
            {
                return fail(format!("{number} is below the minimum {min}"));
            }
            if let Some(max) = map.get("maximum").and_then(Value::as_f64)
                && number > max
            {
                return fail(format!("{number} is above the maximum {max}"));
            }
        }
        Value::Array(items) => {
            let count = items.len() as u64;
            if let Some(max) = map.get("maxItems").and_then(Value::as_u64)
                && count > max
            {
                return fail(format!("{count} items, at most {max} allowed"));
            }
            if let Some(min) = map.get("minItems").and_then(Value::as_u64)
                && count < min
            {
                return fail(format!("{count} items, at least {min} needed"));
            }
            if let Some(item_schema) = map.get("items") {
                for (index, item) in items.iter().enumerate() {
                    check(item, item_schema, &format!("{path}[{index}]"))?;
                }
            }
        }
        Value::Object(members) => {
            let properties = map.get("properties").and_then(Value::as_object);
            for name in map
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if !members.contains_key(name) {
                    return fail(format!("the required property `{name}` is missing"));
                }
            }
            for (name, member) in members {
                match properties.and_then(|p| p.get(name)) {
                    Some(member_schema) => check(member, member_schema, &format!("{path}.{name}"))?,
                    None if map.get("additionalProperties") == Some(&Value::Bool(false)) => {
                        return fail(format!("the property `{name}` is not allowed"));
                    }
                    None => {}
                }
            }
        }
        _ => {}
    }
    Ok(())
}

fn has_type(value: &Value, kind: &str) -> bool {
    match kind {
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => value.is_i64() || value.is_u64(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_the_path_of_the_first_problem() {
        let schema = crate::engine::moves::debater_schema();
        let good = json!({"argument": "a", "moves": [{"act": "claim", "text": "t"}], "confidence": 0.5, "position": "p"});
        assert_eq!(validate(&good, &schema), Ok(()));
        let bad_act = json!({"argument": "a", "moves": [{"act": "shout", "text": "t"}], "confidence": 0.5, "position": "p"});
        let error = validate(&bad_act, &schema).unwrap_err();
        assert!(
            error.starts_with("$.moves[0]:") && error.contains("anyOf"),
            "{error}"
        );
        let since_alone = json!({"argument": "a", "moves": [{"act": "since", "text": "t"}], "confidence": 0.5, "position": "p"});
        assert!(
            validate(&since_alone, &schema).is_err(),
            "a since needs its premises"
        );
        let missing = json!({"argument": "a", "moves": [], "position": "p"});
        assert!(
            validate(&missing, &schema)
                .unwrap_err()
                .contains("confidence")
        );
        let high = json!({"argument": "a", "moves": [{"act": "claim", "text": "t"}], "confidence": 1.5, "position": "p"});
        assert!(validate(&high, &schema).unwrap_err().contains("maximum"));
    }

    #[test]
    fn integers_lengths_and_closed_objects() {
        assert!(validate(&json!(2.5), &json!({"type": "integer"})).is_err());
        assert!(validate(&json!(2), &json!({"type": "integer"})).is_ok());
        assert!(validate(&json!("héllo"), &json!({"type": "string", "maxLength": 5})).is_ok());
        assert!(validate(&json!("héllo!"), &json!({"type": "string", "maxLength": 5})).is_err());
        let closed = json!({"type": "object", "properties": {}, "additionalProperties": false});
        assert!(validate(&json!({"x": 1}), &closed).is_err());
        assert!(validate(&json!(null), &json!({"type": ["string", "null"]})).is_ok());
    }
}
