//! JSON schema to GBNF: a grammar that only admits JSON values valid against the schema, with
//! strings and arrays bounded so that a small model can neither nest without end nor write a
//! reply much longer than its token budget. Used by the embedded model's constrained sampler.

use serde_json::Value;
use std::fmt::Write as _;

/// A grammar over characters: `rules[0]` is the root.
#[derive(Debug, Clone, PartialEq)]
pub struct Grammar {
    rules: Vec<Rule>,
}

#[derive(Debug, Clone, PartialEq)]
struct Rule {
    name: String,
    body: Expr,
}

/// A grammar expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Literal(String),
    /// One character in (or, negated, outside) the inclusive ranges.
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
    /// Another rule, by index.
    Ref(usize),
    Seq(Vec<Expr>),
    Alt(Vec<Expr>),
    Repeat {
        expr: Box<Expr>,
        min: u32,
        max: u32,
    },
}

/// Why a schema cannot be turned into a grammar; the caller then samples unconstrained.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("cannot constrain replies to this schema at {path}: {problem}")]
pub struct GrammarError {
    pub path: String,
    pub problem: String,
}

impl GrammarError {
    fn at(path: &str, problem: impl Into<String>) -> GrammarError {
        GrammarError {
            path: path.to_string(),
            problem: problem.into(),
        }
    }
}

/// A schema's object: its keywords and their values.
type Object = serde_json::Map<String, Value>;

/// Where in the schema a value stands: its path (for errors and rule names, `$.moves[].act`)
/// and how deep it is nested.
struct Node {
    path: String,
    depth: usize,
}

impl Node {
    fn root() -> Node {
        Node {
            path: "$".into(),
            depth: 0,
        }
    }

    /// The node one step in: `step` is `[]`, `.key` or `.anyOf[i]`.
    fn child(&self, step: &str) -> Node {
        Node {
            path: format!("{}{step}", self.path),
            depth: self.depth + 1,
        }
    }
}

/// Deepest nesting of objects and arrays a grammar admits.
const MAX_DEPTH: usize = 6;
/// No string is bounded below this length, however small the budget.
const MIN_STRING_CHARS: u32 = 24;
/// The least part of a declared bound a small budget keeps.
const MIN_FRACTION: f64 = 0.05;
/// Arrays without `maxItems` hold at most this many items.
const DEFAULT_MAX_ITEMS: u32 = 6;
/// Spaces of indentation allowed after a newline between tokens.
const MAX_INDENT: u32 = 8;
/// Digits allowed in an unbounded number's integer and fraction parts.
const MAX_DIGITS: u32 = 12;
/// Integer ranges up to this size are spelled out as alternatives.
const MAX_ENUMERATED_RANGE: i64 = 64;

impl Grammar {
    /// A grammar for `schema` whose longest sentence stays within about `max_chars` characters
    /// where the schema's required parts allow it.
    ///
    /// Declared bounds (`maxLength`, `maxItems`) size their fields; what the schema leaves
    /// unbounded shares the budget. When the longest sentence is too long, both shrink by the
    /// same factor, so an array gives up items as its strings give up length and a declared
    /// prose field keeps its weight against the rest, rather than every string falling to the
    /// floor while an array keeps all its items.
    pub fn from_schema(schema: &Value, max_chars: usize) -> Result<Grammar, GrammarError> {
        // Undeclared fields share `max_chars` scaled by the same fraction as declared bounds.
        let at = |fraction: f64| {
            let share = ((max_chars as f64 * fraction) as usize).max(MIN_STRING_CHARS as usize);
            Builder::build(schema, share, fraction)
        };
        let whole = at(1.0)?;
        if whole.max_len() <= max_chars {
            return Ok(whole);
        }
        // The largest fraction whose longest sentence fits, to within 1 %; when even the
        // floors do not fit, the smallest.
        let (mut fits, mut too_long) = (MIN_FRACTION, 1.0);
        let mut best = None;
        while too_long - fits > 0.01 {
            let middle = (fits + too_long) / 2.0;
            let grammar = at(middle)?;
            if grammar.max_len() <= max_chars {
                (fits, best) = (middle, Some(grammar));
            } else {
                too_long = middle;
            }
        }
        match best {
            Some(grammar) => Ok(grammar),
            None => at(MIN_FRACTION),
        }
    }

    /// The grammar in llama.cpp's GBNF notation, root rule named `root`.
    pub fn to_gbnf(&self) -> String {
        let mut out = String::new();
        for rule in &self.rules {
            let _ = writeln!(
                out,
                "{} ::= {}",
                rule.name,
                self.gbnf_expr(&rule.body, false)
            );
        }
        out
    }

    fn gbnf_expr(&self, expr: &Expr, nested: bool) -> String {
        match expr {
            Expr::Literal(text) => gbnf_literal(text),
            Expr::Class { negated, ranges } => gbnf_class(*negated, ranges),
            Expr::Ref(index) => self.rules[*index].name.clone(),
            Expr::Seq(items) => self.gbnf_group(items, " ", nested, true),
            Expr::Alt(options) => self.gbnf_group(options, " | ", nested, false),
            Expr::Repeat { expr, min, max } => {
                let inner = match expr.as_ref() {
                    Expr::Literal(_) | Expr::Class { .. } | Expr::Ref(_) => {
                        self.gbnf_expr(expr, true)
                    }
                    other => format!("({})", self.gbnf_expr(other, false)),
                };
                match (min, max) {
                    (0, 1) => format!("{inner}?"),
                    (min, max) if min == max => format!("{inner}{{{min}}}"),
                    (min, max) => format!("{inner}{{{min},{max}}}"),
                }
            }
        }
    }

    /// Parts joined by `separator`, in parentheses when nested among others.
    fn gbnf_group(
        &self,
        parts: &[Expr],
        separator: &str,
        nested: bool,
        nest_parts: bool,
    ) -> String {
        let body = parts
            .iter()
            .map(|part| self.gbnf_expr(part, nest_parts))
            .collect::<Vec<_>>()
            .join(separator);
        if nested && parts.len() > 1 {
            format!("({body})")
        } else {
            body
        }
    }

    /// The length in characters of the longest sentence.
    pub fn max_len(&self) -> usize {
        let mut memo = vec![None; self.rules.len()];
        self.expr_max_len(&Expr::Ref(0), &mut memo)
    }

    fn expr_max_len(&self, expr: &Expr, memo: &mut Vec<Option<usize>>) -> usize {
        match expr {
            Expr::Literal(text) => text.chars().count(),
            Expr::Class { .. } => 1,
            Expr::Ref(index) => {
                if let Some(known) = memo[*index] {
                    return known;
                }
                // Rules never recurse (the builder only refers to rules it already made).
                let length = self.expr_max_len(&self.rules[*index].body, memo);
                memo[*index] = Some(length);
                length
            }
            Expr::Seq(items) => items.iter().map(|item| self.expr_max_len(item, memo)).sum(),
            Expr::Alt(options) => options
                .iter()
                .map(|option| self.expr_max_len(option, memo))
                .max()
                .unwrap_or(0),
            Expr::Repeat { expr, max, .. } => self.expr_max_len(expr, memo) * *max as usize,
        }
    }

    /// Whether the grammar admits `text` whole. For tests: it carries the set of positions the
    /// text could have reached through each expression, so alternatives and bounded repeats
    /// need no backtracking.
    #[cfg(any(test, feature = "fixtures"))]
    pub fn accepts(&self, text: &str) -> bool {
        let chars: Vec<char> = text.chars().collect();
        let ends = self.reach(&Expr::Ref(0), &chars, std::collections::BTreeSet::from([0]));
        ends.contains(&chars.len())
    }

    #[cfg(any(test, feature = "fixtures"))]
    fn reach(
        &self,
        expr: &Expr,
        text: &[char],
        from: std::collections::BTreeSet<usize>,
    ) -> std::collections::BTreeSet<usize> {
        match expr {
            Expr::Literal(literal) => {
                let literal: Vec<char> = literal.chars().collect();
                from.into_iter()
                    .filter(|&at| text[at..].starts_with(&literal))
                    .map(|at| at + literal.len())
                    .collect()
            }
            Expr::Class { negated, ranges } => from
                .into_iter()
                .filter(|&at| {
                    text.get(at).is_some_and(|c| {
                        ranges.iter().any(|(low, high)| (*low..=*high).contains(c)) != *negated
                    })
                })
                .map(|at| at + 1)
                .collect(),
            Expr::Ref(index) => self.reach(&self.rules[*index].body, text, from),
            Expr::Seq(items) => items
                .iter()
                .fold(from, |reached, item| self.reach(item, text, reached)),
            Expr::Alt(options) => options
                .iter()
                .flat_map(|option| self.reach(option, text, from.clone()))
                .collect(),
            Expr::Repeat { expr, min, max } => {
                let mut reached = from;
                let mut ends = std::collections::BTreeSet::new();
                for count in 0..=*max {
                    if count >= *min {
                        ends.extend(reached.iter().copied());
                    }
                    if count == *max || reached.is_empty() {
                        break;
                    }
                    reached = self.reach(expr, text, reached);
                }
                ends
            }
        }
    }

    /// One random sentence of the grammar; `next` yields random numbers. For tests.
    #[cfg(any(test, feature = "fixtures"))]
    pub fn sample(&self, next: &mut dyn FnMut() -> u64) -> String {
        let mut out = String::new();
        self.sample_expr(&Expr::Ref(0), next, &mut out);
        out
    }

    #[cfg(any(test, feature = "fixtures"))]
    fn sample_expr(&self, expr: &Expr, next: &mut dyn FnMut() -> u64, out: &mut String) {
        match expr {
            Expr::Literal(text) => out.push_str(text),
            Expr::Class { negated, ranges } => out.push(sample_class(*negated, ranges, next())),
            Expr::Ref(index) => self.sample_expr(&self.rules[*index].body, next, out),
            Expr::Seq(items) => {
                for item in items {
                    self.sample_expr(item, next, out);
                }
            }
            Expr::Alt(options) => {
                let pick = (next() % options.len() as u64) as usize;
                self.sample_expr(&options[pick], next, out);
            }
            Expr::Repeat { expr, min, max } => {
                // Favour the bounds, where the mistakes live.
                let count = match next() % 4 {
                    0 => *min,
                    1 => *max,
                    _ => min + (next() % (u64::from(max - min) + 1)) as u32,
                };
                for _ in 0..count {
                    self.sample_expr(expr, next, out);
                }
            }
        }
    }
}

/// Characters a sampled negated class draws from: ASCII, accents, CJK, emoji, JSON's specials.
#[cfg(any(test, feature = "fixtures"))]
const SAMPLE_CHARS: &[char] = &[
    'a', 'Z', '0', ' ', '"', '\\', '/', '{', '}', '[', ']', ',', ':', 'é', '漢', '🦀', '\u{7f}',
    '\n', '\t', '\u{1}',
];

#[cfg(any(test, feature = "fixtures"))]
fn sample_class(negated: bool, ranges: &[(char, char)], random: u64) -> char {
    let inside = |c: char| ranges.iter().any(|(low, high)| (*low..=*high).contains(&c));
    if negated {
        let allowed: Vec<char> = SAMPLE_CHARS
            .iter()
            .copied()
            .filter(|c| !inside(*c))
            .collect();
        allowed[(random % allowed.len() as u64) as usize]
    } else {
        let (low, high) = ranges[(random % ranges.len() as u64) as usize];
        let span = high as u64 - low as u64 + 1;
        let mut code = low as u64 + (random >> 8) % span;
        while char::from_u32(code as u32).is_none() {
            code -= 1;
        }
        char::from_u32(code as u32).unwrap_or(low)
    }
}

fn gbnf_literal(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn gbnf_class(negated: bool, ranges: &[(char, char)]) -> String {
    let escape = |c: char| match c {
        ']' | '[' | '\\' | '^' | '-' | '"' => format!("\\{c}"),
        c if (c as u32) < 0x20 || c as u32 == 0x7f => format!("\\x{:02X}", c as u32),
        c => c.to_string(),
    };
    let mut out = String::from("[");
    if negated {
        out.push('^');
    }
    for (low, high) in ranges {
        out.push_str(&escape(*low));
        if high != low {
            out.push('-');
            out.push_str(&escape(*high));
        }
    }
    out.push(']');
    out
}

fn class(ranges: &[(char, char)]) -> Expr {
    Expr::Class {
        negated: false,
        ranges: ranges.to_vec(),
    }
}

fn lit(text: &str) -> Expr {
    Expr::Literal(text.to_string())
}

fn repeat(expr: Expr, min: u32, max: u32) -> Expr {
    Expr::Repeat {
        expr: Box::new(expr),
        min,
        max,
    }
}

fn optional(expr: Expr) -> Expr {
    repeat(expr, 0, 1)
}

struct Builder {
    /// The part of the schema's declared bounds (`maxLength`, `maxItems`) kept.
    fraction: f64,
    rules: Vec<Rule>,
    ws: Option<usize>,
    string_char: Option<usize>,
}

impl Builder {
    fn build(schema: &Value, share: usize, fraction: f64) -> Result<Grammar, GrammarError> {
        let mut builder = Builder {
            fraction,
            rules: vec![Rule {
                name: "root".into(),
                body: Expr::Seq(vec![]),
            }],
            ws: None,
            string_char: None,
        };
        let body = builder.value(schema, share, &Node::root())?;
        builder.rules[0].body = body;
        Ok(Grammar {
            rules: builder.rules,
        })
    }

    /// A declared string length, scaled, but never below the floor (or the declaration).
    fn scaled_length(&self, declared: u32) -> u32 {
        ((declared as f64 * self.fraction).ceil() as u32).max(declared.min(MIN_STRING_CHARS))
    }

    /// A declared item count, scaled; an array that may hold items keeps at least one.
    fn scaled_items(&self, declared: u32) -> u32 {
        ((declared as f64 * self.fraction).ceil() as u32).min(declared)
    }

    fn add_rule(&mut self, name: &str, body: Expr) -> usize {
        let base: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .collect::<String>()
            .trim_matches('-')
            .to_string();
        let base = if base.is_empty() { "r".into() } else { base };
        let mut candidate = base.clone();
        let mut suffix = 2;
        while self.rules.iter().any(|rule| rule.name == candidate) {
            candidate = format!("{base}-{suffix}");
            suffix += 1;
        }
        self.rules.push(Rule {
            name: candidate,
            body,
        });
        self.rules.len() - 1
    }

    fn ws(&mut self) -> Expr {
        let index = match self.ws {
            Some(index) => index,
            None => {
                // Nothing, a space, or one newline and its indentation, as a JSON formatter
                // writes: a run of newlines is valid JSON too, but a small model can spend
                // tokens on it without end.
                let body = optional(Expr::Alt(vec![
                    lit(" "),
                    Expr::Seq(vec![lit("\n"), repeat(class(&[(' ', ' ')]), 0, MAX_INDENT)]),
                ]));
                let index = self.add_rule("ws", body);
                self.ws = Some(index);
                index
            }
        };
        Expr::Ref(index)
    }

    /// One character inside a JSON string: anything but quote, backslash and controls, or a
    /// short escape. `\u` escapes are left out: a lone surrogate would not parse.
    fn string_char(&mut self) -> Expr {
        let index = match self.string_char {
            Some(index) => index,
            None => {
                let body = Expr::Alt(vec![
                    Expr::Class {
                        negated: true,
                        ranges: vec![('"', '"'), ('\\', '\\'), ('\u{0}', '\u{1f}')],
                    },
                    Expr::Seq(vec![
                        lit("\\"),
                        class(&[
                            ('"', '"'),
                            ('\\', '\\'),
                            ('/', '/'),
                            ('b', 'b'),
                            ('f', 'f'),
                            ('n', 'n'),
                            ('r', 'r'),
                            ('t', 't'),
                        ]),
                    ]),
                ]);
                let index = self.add_rule("char", body);
                self.string_char = Some(index);
                index
            }
        };
        Expr::Ref(index)
    }

    fn value(&mut self, schema: &Value, share: usize, at: &Node) -> Result<Expr, GrammarError> {
        let fail = |problem: &str| GrammarError::at(&at.path, problem);
        if at.depth > MAX_DEPTH {
            return Err(fail("nested deeper than the grammar allows"));
        }
        let Value::Object(map) = schema else {
            return match schema {
                Value::Bool(true) => Ok(self.scalar_any()),
                _ => Err(fail("a schema must be an object")),
            };
        };
        for keyword in ["pattern", "format", "oneOf", "allOf", "not", "$ref", "if"] {
            if map.contains_key(keyword) {
                return Err(fail(&format!("`{keyword}` is not supported")));
            }
        }
        if let Some(options) = map.get("enum") {
            let Some(options) = options.as_array().filter(|o| !o.is_empty()) else {
                return Err(fail("`enum` must be a non-empty array"));
            };
            return Ok(Expr::Alt(
                options
                    .iter()
                    .map(|v| Expr::Literal(v.to_string()))
                    .collect(),
            ));
        }
        if let Some(constant) = map.get("const") {
            return Ok(Expr::Literal(constant.to_string()));
        }
        if let Some(options) = map.get("anyOf") {
            let Some(options) = options.as_array().filter(|o| !o.is_empty()) else {
                return Err(fail("`anyOf` must be a non-empty array"));
            };
            let mut alternatives = Vec::new();
            for (index, option) in options.iter().enumerate() {
                let option_at = at.child(&format!(".anyOf[{index}]"));
                alternatives.push(self.value(option, share, &option_at)?);
            }
            return Ok(Expr::Alt(alternatives));
        }
        let types: Vec<&str> = match map.get("type") {
            None => return Ok(self.scalar_any()),
            Some(Value::String(name)) => vec![name.as_str()],
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
            Some(_) => return Err(fail("`type` must be a string or an array of strings")),
        };
        let mut alternatives = Vec::new();
        for kind in types {
            alternatives.push(match kind {
                "string" => self.string(map, share),
                "integer" | "number" => number(map, kind == "integer").map_err(fail)?,
                "boolean" => Expr::Alt(vec![lit("true"), lit("false")]),
                "null" => lit("null"),
                "array" => self.array(map, share, at)?,
                "object" => self.object(map, share, at)?,
                other => return Err(fail(&format!("unknown type `{other}`"))),
            });
        }
        Ok(if alternatives.len() == 1 {
            alternatives.remove(0)
        } else {
            Expr::Alt(alternatives)
        })
    }

    /// Any scalar: what an unconstrained schema gets without letting it nest.
    fn scalar_any(&mut self) -> Expr {
        let string_char = self.string_char();
        Expr::Alt(vec![
            Expr::Seq(vec![lit("\""), repeat(string_char, 0, 64), lit("\"")]),
            number(&serde_json::Map::new(), false).unwrap_or_else(|_| lit("0")),
            lit("true"),
            lit("false"),
            lit("null"),
        ])
    }

    fn string(&mut self, map: &Object, share: usize) -> Expr {
        let min = map.get("minLength").and_then(Value::as_u64).unwrap_or(0) as u32;
        let max = match declared_length(map) {
            Some(declared) => self.scaled_length(declared),
            None => (share as u32).max(MIN_STRING_CHARS),
        }
        .max(min);
        let string_char = self.string_char();
        if min == 0 {
            return Expr::Seq(vec![lit("\""), repeat(string_char, 0, max), lit("\"")]);
        }
        // A required string starts with something visible: a lone space would pass the schema
        // but say nothing.
        let visible = Expr::Class {
            negated: true,
            ranges: vec![('"', '"'), ('\\', '\\'), ('\u{0}', ' ')],
        };
        Expr::Seq(vec![
            lit("\""),
            visible,
            repeat(string_char, min - 1, max - 1),
            lit("\""),
        ])
    }

    fn array(&mut self, map: &Object, share: usize, at: &Node) -> Result<Expr, GrammarError> {
        let min = map.get("minItems").and_then(Value::as_u64).unwrap_or(0) as u32;
        let declared = map
            .get("maxItems")
            .and_then(Value::as_u64)
            .map_or(DEFAULT_MAX_ITEMS, |n| n as u32);
        // Small budgets buy fewer items, each with a fair share.
        let affordable = (share as u32 / MIN_STRING_CHARS).max(1);
        let max = self.scaled_items(declared).min(affordable).max(min);
        let item_schema = map.get("items").cloned().unwrap_or(Value::Bool(true));
        let item_share = share / max.max(1) as usize;
        let item = self.value(&item_schema, item_share, &at.child("[]"))?;
        let item_rule = self.add_rule(&format!("{}-item", at.path), item);
        let ws = self.ws();
        let separated = Expr::Seq(vec![lit(","), ws.clone(), Expr::Ref(item_rule)]);
        let body = if max == 0 {
            Expr::Seq(vec![])
        } else if min == 0 {
            optional(Expr::Seq(vec![
                Expr::Ref(item_rule),
                repeat(separated, 0, max - 1),
            ]))
        } else {
            Expr::Seq(vec![
                Expr::Ref(item_rule),
                repeat(separated, min - 1, max - 1),
            ])
        };
        Ok(Expr::Seq(vec![lit("["), ws.clone(), body, ws, lit("]")]))
    }

    fn object(&mut self, map: &Object, share: usize, at: &Node) -> Result<Expr, GrammarError> {
        let path = at.path.as_str();
        let empty = serde_json::Map::new();
        let properties = match map.get("properties") {
            None => &empty,
            Some(Value::Object(properties)) => properties,
            Some(_) => return Err(GrammarError::at(path, "`properties` must be an object")),
        };
        let required: Vec<&str> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if let Some(missing) = required
            .iter()
            .find(|name| !properties.contains_key(**name))
        {
            return Err(GrammarError::at(
                path,
                format!("required property `{missing}` is not among the properties"),
            ));
        }
        // A string with a declared length is sized by it and takes no share.
        let open = properties
            .values()
            .filter(|schema| is_open_ended(schema) && !is_sized_string(schema))
            .count()
            .max(1);
        let ws = self.ws();
        // (key-value expression, required) in schema order: the order the model writes them.
        let mut members = Vec::new();
        for (key, schema) in properties {
            let member_at = at.child(&format!(".{key}"));
            let value = self.value(schema, share / open, &member_at)?;
            // `"key": value`, the one way formatters write a member.
            let member = Expr::Seq(vec![
                Expr::Literal(Value::String(key.clone()).to_string()),
                lit(":"),
                optional(lit(" ")),
                value,
            ]);
            let rule = self.add_rule(&format!("{}-kv", member_at.path), member);
            members.push((Expr::Ref(rule), required.contains(&key.as_str())));
        }
        // after[i]: members i.. once something was written (each needs a leading comma);
        // first[i]: members i.. when nothing was written yet.
        let mut after = Expr::Seq(vec![]);
        let mut first = Expr::Seq(vec![]);
        for (member, is_required) in members.into_iter().rev() {
            let with_comma = Expr::Seq(vec![lit(","), ws.clone(), member.clone()]);
            let new_after = if is_required {
                Expr::Seq(vec![with_comma, after.clone()])
            } else {
                Expr::Seq(vec![optional(with_comma), after.clone()])
            };
            let new_first = if is_required {
                Expr::Seq(vec![member, after.clone()])
            } else {
                Expr::Alt(vec![Expr::Seq(vec![member, after.clone()]), first])
            };
            let after_rule = self.add_rule(&format!("{path}-rest"), new_after);
            after = Expr::Ref(after_rule);
            first = new_first;
        }
        Ok(Expr::Seq(vec![lit("{"), ws.clone(), first, ws, lit("}")]))
    }
}

/// A string's declared `maxLength`.
fn declared_length(map: &Object) -> Option<u32> {
    map.get("maxLength")
        .and_then(Value::as_u64)
        .map(|n| n.min(u32::MAX as u64) as u32)
}

/// A string schema that declares its own length.
fn is_sized_string(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("string")
        && schema.as_object().and_then(declared_length).is_some()
}

/// Strings, arrays and objects share the budget; scalars cost little.
fn is_open_ended(schema: &Value) -> bool {
    if schema.get("enum").is_some() || schema.get("const").is_some() {
        return false;
    }
    match schema.get("type") {
        Some(Value::String(kind)) => matches!(kind.as_str(), "string" | "array" | "object"),
        Some(Value::Array(kinds)) => kinds
            .iter()
            .any(|k| matches!(k.as_str(), Some("string" | "array" | "object"))),
        _ => true,
    }
}

/// Numbers: small integer ranges spelled out, `[a, b]` ranges with whole bounds built from
/// their integer parts, otherwise bounded digit runs (non-negative when the minimum is 0 or
/// more). Other bounds are refused rather than admitting values that would not validate.
fn number(map: &Object, integer: bool) -> Result<Expr, &'static str> {
    let minimum = map.get("minimum").and_then(Value::as_f64);
    let maximum = map.get("maximum").and_then(Value::as_f64);
    if map.contains_key("exclusiveMinimum") || map.contains_key("exclusiveMaximum") {
        return Err("exclusive bounds are not supported");
    }
    let digit = || class(&[('0', '9')]);
    let fraction = || optional(Expr::Seq(vec![lit("."), repeat(digit(), 1, 4)]));
    let whole = |value: f64| value.fract() == 0.0 && value.abs() < 1e15;
    match (minimum, maximum) {
        (Some(low), Some(high)) if low > high => Err("`minimum` is above `maximum`"),
        (Some(low), Some(high))
            if whole(low) && whole(high) && (high - low) as i64 <= MAX_ENUMERATED_RANGE =>
        {
            let (low, high) = (low as i64, high as i64);
            let mut options: Vec<Expr> = Vec::new();
            for value in low..=high {
                let text = value.to_string();
                if integer || value == high {
                    options.push(Expr::Literal(text));
                } else if value < 0 {
                    // -0.5 lies between -1 and 0, so a negative part's fraction belongs to the
                    // integer below it; keep negative ranges to whole numbers.
                    options.push(Expr::Literal(text));
                } else {
                    options.push(Expr::Seq(vec![Expr::Literal(text), fraction()]));
                }
            }
            if !integer {
                options.push(Expr::Literal(format!("{high}.0")));
            }
            Ok(Expr::Alt(options))
        }
        (Some(_), Some(_)) => Err("only whole-number bounds up to 64 apart are supported"),
        (Some(0.0), None) => {
            let magnitude = Expr::Alt(vec![
                lit("0"),
                Expr::Seq(vec![class(&[('1', '9')]), repeat(digit(), 0, MAX_DIGITS)]),
            ]);
            Ok(if integer {
                magnitude
            } else {
                Expr::Seq(vec![magnitude, fraction()])
            })
        }
        (None, None) => {
            let nonzero = Expr::Seq(vec![class(&[('1', '9')]), repeat(digit(), 0, MAX_DIGITS)]);
            if integer {
                // "-0" parses as the float -0.0, which is no integer.
                Ok(Expr::Alt(vec![
                    lit("0"),
                    Expr::Seq(vec![optional(lit("-")), nonzero]),
                ]))
            } else {
                let magnitude = Expr::Alt(vec![lit("0"), nonzero]);
                Ok(Expr::Seq(vec![optional(lit("-")), magnitude, fraction()]))
            }
        }
        _ => Err("a one-sided bound other than `minimum: 0` is not supported"),
    }
}

/// A small deterministic source of randomness, for sampling a grammar in tests.
#[cfg(any(test, feature = "fixtures"))]
pub fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Whether `value` is valid under `schema`, by the JSON Schema spec.
    fn validate(value: &Value, schema: &Value) -> Result<(), String> {
        let validator = jsonschema::validator_for(schema).map_err(|e| e.to_string())?;
        validator.validate(value).map_err(|e| e.to_string())
    }

    use super::xorshift;

    #[test]
    fn gbnf_names_every_rule_once_and_escapes_literals() {
        let schema = json!({
            "type": "object",
            "properties": {"say \"hi\"": {"type": "string", "enum": ["a\\b", "c\nd"]}},
            "required": ["say \"hi\""]
        });
        let gbnf = Grammar::from_schema(&schema, 200).unwrap().to_gbnf();
        assert!(gbnf.starts_with("root ::= "), "{gbnf}");
        assert!(gbnf.contains(r#""\"say \\\"hi\\\"\"""#), "{gbnf}");
        assert!(gbnf.contains(r#""\"c\\nd\"""#), "{gbnf}");
        let names: Vec<&str> = gbnf
            .lines()
            .map(|l| l.split(" ::= ").next().unwrap())
            .collect();
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(names.len(), unique.len());
    }

    #[test]
    fn unsupported_keywords_are_refused_with_their_path() {
        let schema =
            json!({"type": "object", "properties": {"x": {"type": "string", "pattern": "a+"}}});
        let error = Grammar::from_schema(&schema, 200).unwrap_err();
        assert_eq!(error.path, "$.x");
        assert!(error.problem.contains("pattern"));
        let schema = json!({"type": "number", "minimum": 0.5, "maximum": 2});
        assert!(Grammar::from_schema(&schema, 200).is_err());
    }

    #[test]
    fn arrays_respect_max_items_and_objects_skip_only_optional_members() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a": {"type": "integer", "minimum": 2, "maximum": 4},
                "b": {"type": "array", "items": {"type": "boolean"}, "minItems": 1, "maxItems": 2},
                "c": {"type": "null"}
            },
            "required": ["b"]
        });
        let grammar = Grammar::from_schema(&schema, 400).unwrap();
        let mut seen_without_a = false;
        for seed in 0..200 {
            let value: Value = serde_json::from_str(&grammar.sample(&mut xorshift(seed))).unwrap();
            let items = value["b"].as_array().unwrap().len();
            assert!((1..=2).contains(&items));
            seen_without_a |= value.get("a").is_none();
        }
        assert!(seen_without_a, "an optional member is sometimes left out");
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        fn leaf() -> impl Strategy<Value = Value> {
            prop_oneof![
                (proptest::option::of(0u64..40)).prop_map(|max| match max {
                    Some(max) => json!({"type": "string", "maxLength": max}),
                    None => json!({"type": "string"}),
                }),
                (1u64..4).prop_map(
                    |min| json!({"type": "string", "minLength": min, "maxLength": min + 5})
                ),
                Just(json!({"type": "boolean"})),
                Just(json!({"type": "null"})),
                Just(json!({"type": "number"})),
                Just(json!({"type": "integer"})),
                Just(json!({"type": "number", "minimum": 0, "maximum": 1})),
                Just(json!({"type": "integer", "minimum": 0})),
                (-5i64..5, 0i64..=64).prop_map(
                    |(low, span)| json!({"type": "integer", "minimum": low, "maximum": low + span})
                ),
                (-3i64..3, 0i64..5).prop_map(
                    |(low, span)| json!({"type": "number", "minimum": low, "maximum": low + span})
                ),
                Just(json!({"type": "string", "enum": ["x", "y \"z\"", "ü"]})),
                Just(json!({"type": ["string", "null"]})),
                Just(json!({"anyOf": [{"type": "boolean"}, {"type": "string", "maxLength": 3}]})),
            ]
        }

        fn schema() -> impl Strategy<Value = Value> {
            leaf().prop_recursive(4, 24, 4, |inner| {
                prop_oneof![
                    (inner.clone(), proptest::option::of(0u64..4), proptest::option::of(0u64..8))
                        .prop_map(|(items, min, max)| {
                            let mut schema = json!({"type": "array", "items": items});
                            if let Some(min) = min {
                                schema["minItems"] = json!(min);
                            }
                            if let Some(max) = max {
                                schema["maxItems"] = json!(max.max(min.unwrap_or(0)));
                            }
                            schema
                        }),
                    proptest::collection::vec((inner, any::<bool>()), 0..4).prop_map(|members| {
                        let mut properties = serde_json::Map::new();
                        let mut required = Vec::new();
                        for (index, (member, is_required)) in members.into_iter().enumerate() {
                            let key = format!("k{index}");
                            if is_required {
                                required.push(json!(key));
                            }
                            properties.insert(key, member);
                        }
                        json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
                    }),
                ]
            })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(300))]

            #[test]
            fn any_sentence_of_the_grammar_parses_and_validates(
                schema in schema(),
                budget in 50usize..3000,
                seed in any::<u64>(),
            ) {
                let grammar = Grammar::from_schema(&schema, budget).unwrap();
                let mut next = xorshift(seed);
                for _ in 0..8 {
                    let text = grammar.sample(&mut next);
                    let value: Value = serde_json::from_str(&text)
                        .map_err(|e| TestCaseError::fail(format!("{e}: {text}\n{}", grammar.to_gbnf())))?;
                    validate(&value, &schema)
                        .map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
                    prop_assert!(text.chars().count() <= grammar.max_len());
                }
            }
        }
    }
}
