//! Structured replies from models that may not follow instructions: tolerant JSON extraction,
//! repair of replies cut mid-way, and streaming one string field's prose out of partial JSON.

use serde_json::Value;

/// Why a reply holds no JSON object moot can read, in words a model can act on.
#[derive(Debug, thiserror::Error)]
pub enum NotJson {
    #[error("the reply was empty")]
    Empty,
    #[error("the reply contains no JSON object")]
    NoObject,
    #[error("the JSON object does not parse: {0}")]
    Malformed(serde_json::Error),
    #[error("the JSON object is cut off and cannot be closed: {0}")]
    CutOff(serde_json::Error),
}

/// Finds the JSON object in a reply: the whole text, a fenced block, or the first balanced
/// object after leading prose. A reply cut mid-object is closed and parsed if possible.
pub fn extract_json(text: &str) -> Result<Value, NotJson> {
    match extract_strict(text) {
        // Models often put raw newlines or tabs inside strings; escape them and try again.
        Err(problem) if text.chars().any(|c| c.is_control() && c != ' ') => {
            extract_strict(&escape_raw_controls(text)).map_err(|_| problem)
        }
        result => result,
    }
}

/// Escapes control characters that stand raw inside JSON strings.
fn escape_raw_controls(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut in_string = false;
    let mut escaped = false;
    for c in text.chars() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                '\n' => {
                    out.push_str("\\n");
                    continue;
                }
                '\r' => {
                    out.push_str("\\r");
                    continue;
                }
                '\t' => {
                    out.push_str("\\t");
                    continue;
                }
                c if c.is_control() => {
                    out.push_str(&format!("\\u{:04x}", c as u32));
                    continue;
                }
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
        }
        out.push(c);
    }
    out
}

fn extract_strict(text: &str) -> Result<Value, NotJson> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(NotJson::Empty);
    }
    if let Ok(value @ Value::Object(_)) = serde_json::from_str::<Value>(trimmed) {
        return Ok(value);
    }
    let unfenced = strip_fences(trimmed);
    if let Ok(value @ Value::Object(_)) = serde_json::from_str::<Value>(unfenced) {
        return Ok(value);
    }
    let Some(start) = unfenced.find('{') else {
        return Err(NotJson::NoObject);
    };
    let candidate = &unfenced[start..];
    match balanced_end(candidate) {
        Some(end) => serde_json::from_str::<Value>(&candidate[..end]).map_err(NotJson::Malformed),
        None => {
            let closed = close_truncated(candidate);
            serde_json::from_str::<Value>(&closed).map_err(NotJson::CutOff)
        }
    }
}

fn strip_fences(text: &str) -> &str {
    let Some(open) = text.find("```") else {
        return text;
    };
    let after = &text[open + 3..];
    let body_start = after.find('\n').map(|i| i + 1).unwrap_or(0);
    let body = &after[body_start..];
    match body.find("```") {
        Some(close) => body[..close].trim(),
        None => body.trim(),
    }
}

/// The byte length of the first balanced `{...}` at the start of `text`, if it closes.
fn balanced_end(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' | '[' => depth += 1,
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// Closes an object cut off mid-way: ends an open string, drops a dangling key or comma,
/// and closes every open bracket.
pub fn close_truncated(text: &str) -> String {
    let (stack, in_string, escaped, ends) = scan(text);
    let mut out = text.to_string();
    if escaped {
        out.pop();
    }
    if in_string {
        out.push('"');
    }
    let direct = finish(out, stack);
    if serde_json::from_str::<Value>(&direct).is_ok() {
        return direct;
    }
    // Cut inside a key, a number or a literal: go back to where a value had just ended.
    for (at, stack) in ends.into_iter().rev().take(64) {
        let candidate = finish(text[..at].to_string(), stack);
        if serde_json::from_str::<Value>(&candidate).is_ok() {
            return candidate;
        }
    }
    direct
}

/// Open brackets (as their closers), whether the text ends inside a string or right after a
/// backslash, and the points (with the open brackets there) just after a bracket or a string.
type Scan = (Vec<char>, bool, bool, Vec<(usize, Vec<char>)>);

fn scan(text: &str) -> Scan {
    let mut stack = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    let mut ends = Vec::new();
    for (at, c) in text.char_indices() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => {
                    in_string = false;
                    ends.push((at + 1, stack.clone()));
                }
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => stack.push('}'),
            '[' => stack.push(']'),
            '}' | ']' => {
                stack.pop();
            }
            _ => {}
        }
        if matches!(c, '{' | '[' | '}' | ']') {
            ends.push((at + 1, stack.clone()));
        }
    }
    (stack, in_string, escaped, ends)
}

/// Drops a trailing comma or a key whose value never came, then closes the brackets.
fn finish(mut out: String, mut stack: Vec<char>) -> String {
    loop {
        let trimmed = out.trim_end();
        let dangling_key = trimmed.ends_with(':');
        if trimmed.ends_with(',') || dangling_key {
            let cut = trimmed.len() - 1;
            out.truncate(cut);
            if dangling_key {
                // Drop the key whose value never came.
                if let Some(key_start) = out
                    .trim_end()
                    .rfind('"')
                    .and_then(|end| out[..end].rfind('"'))
                {
                    out.truncate(key_start);
                }
            }
            continue;
        }
        break;
    }
    while let Some(close) = stack.pop() {
        out.push(close);
    }
    out
}

/// Pulls the decoded value of one top-level string field out of JSON as it streams, so the
/// prose can be shown while the model is still writing; never yields JSON syntax.
#[derive(Debug)]
pub struct FieldStreamer {
    pattern: String,
    buffer: String,
    state: FieldState,
    pending_escape: String,
}

#[derive(Debug, PartialEq)]
enum FieldState {
    Searching,
    Inside,
    Done,
}

impl FieldStreamer {
    pub fn new(field: &str) -> Self {
        FieldStreamer {
            pattern: format!("\"{field}\""),
            buffer: String::new(),
            state: FieldState::Searching,
            pending_escape: String::new(),
        }
    }

    /// Forgets everything seen, for a retried attempt.
    pub fn reset(&mut self) {
        self.buffer.clear();
        self.pending_escape.clear();
        self.state = FieldState::Searching;
    }

    /// Feeds raw reply text; returns the newly decoded prose (possibly empty).
    pub fn feed(&mut self, chunk: &str) -> String {
        let mut out = String::new();
        match self.state {
            FieldState::Done => return out,
            FieldState::Searching => {
                self.buffer.push_str(chunk);
                let Some(rest) = self.find_value_start() else {
                    // Keep only a tail long enough to hold a split pattern.
                    let keep = self.pattern.len() + 16;
                    if self.buffer.len() > keep * 4 {
                        let mut cut = self.buffer.len() - keep;
                        while !self.buffer.is_char_boundary(cut) {
                            cut -= 1;
                        }
                        self.buffer.drain(..cut);
                    }
                    return out;
                };
                self.state = FieldState::Inside;
                self.buffer.clear();
                self.decode(&rest, &mut out);
            }
            FieldState::Inside => self.decode(chunk, &mut out),
        }
        out
    }

    /// After the pattern, optional whitespace, a colon, whitespace and an opening quote.
    fn find_value_start(&self) -> Option<String> {
        let mut from = 0;
        while let Some(pos) = self.buffer[from..].find(&self.pattern) {
            let after = &self.buffer[from + pos + self.pattern.len()..];
            let rest = after.trim_start();
            if let Some(rest) = rest.strip_prefix(':') {
                let rest = rest.trim_start();
                if let Some(value) = rest.strip_prefix('"') {
                    return Some(value.to_string());
                }
                if rest.is_empty() {
                    return None;
                }
            } else if rest.is_empty() {
                return None;
            }
            from += pos + 1;
        }
        None
    }

    fn decode(&mut self, text: &str, out: &mut String) {
        for c in text.chars() {
            if self.state == FieldState::Done {
                return;
            }
            if !self.pending_escape.is_empty() {
                self.pending_escape.push(c);
                if let Some(decoded) = decode_escape(&self.pending_escape) {
                    out.push_str(&decoded);
                    self.pending_escape.clear();
                }
                continue;
            }
            match c {
                '\\' => self.pending_escape.push(c),
                '"' => self.state = FieldState::Done,
                c => out.push(c),
            }
        }
    }
}

/// Decodes a complete escape such as `\n` or `\u00e9`; None while more characters are needed.
fn decode_escape(escape: &str) -> Option<String> {
    let mut chars = escape.chars().skip(1);
    let kind = chars.next()?;
    Some(match kind {
        'n' => "\n".into(),
        't' => "\t".into(),
        'r' => String::new(),
        'b' | 'f' => String::new(),
        'u' => {
            let hex: String = chars.collect();
            if hex.len() < 4 {
                return None;
            }
            let code = u32::from_str_radix(&hex[..4], 16).ok();
            // Surrogate pairs arrive as two escapes; a lone half decodes to the replacement.
            code.and_then(char::from_u32)
                .map(String::from)
                .unwrap_or_else(|| "\u{fffd}".into())
        }
        other => other.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn extracts_from_fences_and_leading_prose() {
        assert_eq!(extract_json(r#"{"a":1}"#).unwrap(), json!({"a":1}));
        assert_eq!(
            extract_json("Sure! Here it is:\n```json\n{\"a\": [1, 2]}\n```\nHope that helps")
                .unwrap(),
            json!({"a": [1, 2]})
        );
        assert_eq!(
            extract_json("My reply: {\"a\": \"}\"} and some trailing words").unwrap(),
            json!({"a": "}"})
        );
        assert!(extract_json("no json here").is_err());
        assert!(extract_json("   ").is_err());
    }

    #[test]
    fn raw_control_characters_inside_strings_are_tolerated() {
        assert_eq!(
            extract_json("{\"a\": \"line one\nline two\tend\"}").unwrap(),
            json!({"a": "line one\nline two\tend"})
        );
        assert!(extract_json("{\"a\": 1}\n").is_ok());
    }

    #[test]
    fn replies_cut_inside_a_key_a_number_or_a_literal_still_close() {
        for cut in [
            r#"{"argument": "x", "moves": [{"act": "claim", "text": "t"}], "confidence": 1.0, "p"#,
            r#"{"argument": "x", "moves": [{"act": "claim", "text": "t"}], "position""#,
            r#"{"argument": "x", "confidence": 0."#,
            r#"{"argument": "x", "agreement": tru"#,
            r#"{"argument": "x", "moves": [{"act": "claim", "te"#,
        ] {
            let value = extract_json(cut).unwrap_or_else(|e| panic!("{e}: {cut}"));
            assert_eq!(value["argument"], "x", "{cut}");
        }
    }

    #[test]
    fn truncated_objects_are_closed() {
        assert_eq!(
            extract_json(
                r#"{"argument": "Redis is fast", "moves": [{"act": "claim", "text": "low lat"#
            )
            .unwrap(),
            json!({"argument": "Redis is fast", "moves": [{"act": "claim", "text": "low lat"}]})
        );
        assert_eq!(
            extract_json(r#"{"argument": "x", "confidence":"#).unwrap(),
            json!({"argument": "x"})
        );
        assert_eq!(extract_json(r#"{"a": "b\"#).unwrap(), json!({"a": "b"}));
        assert_eq!(extract_json(r#"{"a": 1,"#).unwrap(), json!({"a": 1}));
    }

    #[test]
    fn field_streamer_yields_only_prose_across_any_chunking() {
        let raw =
            r#"{"argument": "Line one\nSays \"hi\" \u00e9!", "moves": [{"text": "argument"}]}"#;
        for size in 1..raw.len() {
            let mut streamer = FieldStreamer::new("argument");
            let mut out = String::new();
            let chars: Vec<char> = raw.chars().collect();
            for piece in chars.chunks(size) {
                out.push_str(&streamer.feed(&piece.iter().collect::<String>()));
            }
            assert_eq!(out, "Line one\nSays \"hi\" é!", "chunk size {size}");
        }
    }

    #[test]
    fn field_streamer_ignores_the_name_inside_other_strings() {
        let mut streamer = FieldStreamer::new("argument");
        let out = streamer.feed(r#"{"note": "the \"argument\": \"no\"", "argument": "yes"}"#);
        assert_eq!(out, "yes");
        streamer.reset();
        assert_eq!(streamer.feed(r#"{"argument":"again"}"#), "again");
    }
}
