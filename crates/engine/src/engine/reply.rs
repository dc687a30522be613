//! How a structured reply becomes a turn: the protocol hands `speak` a parser that sees the
//! reply and the transcript so far and returns typed data, or names what is wrong so that the
//! engine can ask for one repair. The engine itself knows no reply shapes.

use crate::debate::{Move, Turn, TurnKey};
use serde_json::Value;

/// What a parser made of a reply: the turn's prose, moves and data.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reply {
    pub content: String,
    pub moves: Vec<Move>,
    pub confidence: Option<f64>,
    /// The validated structured reply, kept with the turn.
    pub data: Option<Value>,
    /// Something worth recording about the reply (answers dropped, say).
    pub note: Option<String>,
}

/// What a parser may consult: whose turn this is, and everything said before it.
pub struct Transcript<'a> {
    pub key: &'a TurnKey,
    pub turns: &'a [Turn],
    /// True when this is the reply to the one repair request: a parser that refused the first
    /// reply may now keep what is usable and record the rest (there is no further request).
    pub repair: bool,
}

impl Transcript<'_> {
    /// The id of every move already in the journal.
    pub fn move_ids(&self) -> std::collections::HashSet<String> {
        self.turns
            .iter()
            .flat_map(|t| t.moves.iter().map(|m| m.id.clone()))
            .collect()
    }
}

/// Turns a JSON reply into a `Reply`, or says (in a sentence the model can act on) why it
/// cannot be used; that sentence goes back to the model in the one repair request.
pub trait ReplyParser: Send + Sync {
    fn parse(&self, reply: &Value, transcript: &Transcript<'_>) -> Result<Reply, Unusable>;
}

/// Why a structured reply cannot be used, in a sentence the model can act on: it goes back
/// to the model in the one repair request, and into the turn's note when the repair fails
/// too. `unusable!` builds one as `format!` builds a string.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unusable(pub String);

/// The reason reads as the sentence it is.
impl std::ops::Deref for Unusable {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl From<String> for Unusable {
    fn from(message: String) -> Unusable {
        Unusable(message)
    }
}

impl From<&str> for Unusable {
    fn from(message: &str) -> Unusable {
        Unusable(message.to_string())
    }
}

impl From<crate::llm::structured::NotJson> for Unusable {
    fn from(problem: crate::llm::structured::NotJson) -> Unusable {
        Unusable(problem.to_string())
    }
}

/// An `Unusable` reply's reason, written as with `format!`.
#[macro_export]
macro_rules! unusable {
    ($($arg:tt)*) => {
        $crate::engine::Unusable(format!($($arg)*))
    };
}

/// A structured reply's whole shape in one place: the name its schema goes by (the stand-in
/// server answers by it), the schema offered to the model, the prose field shown while it
/// streams, and the parser that reads it. Keeping them together is what stops a schema from
/// offering replies its parser refuses.
pub trait ReplyShape: ReplyParser + 'static {
    /// The schema's name, sent with the request.
    fn name(&self) -> &'static str;
    /// The JSON schema the reply must follow.
    fn schema(&self) -> Value;
    /// The prose field shown while the reply streams, and kept as the turn's text when the
    /// parser keeps none of its own.
    fn stream_field(&self) -> Option<&'static str> {
        None
    }
}

/// Validates a moderator's structured reply, returning the value to keep or why it is unusable.
pub type Validator = fn(&Value) -> Result<Value, Unusable>;

/// A reply shape read by a plain validator. Each is made by one constructor beside its
/// validator (`moderated::replies::analysis_reply()`, say), which names the schema and the validator
/// together; the named prose field becomes the turn's text.
pub struct Checked {
    name: &'static str,
    schema: Value,
    validator: Validator,
    prose_field: Option<&'static str>,
}

impl Checked {
    /// The shape called `name`, offering `schema`, read by `validator`.
    pub fn new(
        name: &'static str,
        schema: Value,
        validator: Validator,
        prose_field: Option<&'static str>,
    ) -> Checked {
        Checked {
            name,
            schema,
            validator,
            prose_field,
        }
    }
}

impl ReplyShape for Checked {
    fn name(&self) -> &'static str {
        self.name
    }

    fn schema(&self) -> Value {
        self.schema.clone()
    }

    fn stream_field(&self) -> Option<&'static str> {
        self.prose_field
    }
}

impl ReplyParser for Checked {
    fn parse(&self, reply: &Value, _: &Transcript<'_>) -> Result<Reply, Unusable> {
        let data = (self.validator)(reply)?;
        let content = self
            .prose_field
            .and_then(|field| data.get(field))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        Ok(Reply {
            content,
            data: Some(data),
            ..Reply::default()
        })
    }
}
/// A reply's string field `name`, trimmed: None when it is absent, not a string, or blank.
pub fn text_field<'v>(reply: &'v Value, name: &str) -> Option<&'v str> {
    reply
        .get(name)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}
