//! What protocols share on top of the engine: building the speeches of moderators and seats
//! with their reply schemas.

use super::prompts;
use crate::debate::TurnKey;
use crate::engine::{ReplyKind, ReplyParser, Speech};
use serde_json::Value;
use std::sync::Arc;
use tokio::time::Instant;

/// A speech whose reply is JSON of `schema`, parsed by `parser`; the schema's instructions are
/// appended to `system` for providers that take no schema. `stream_field` is shown while it
/// streams.
#[allow(clippy::too_many_arguments)]
pub fn structured_speech(
    key: TurnKey,
    perspective: Option<String>,
    system: String,
    prompt: String,
    schema_name: &'static str,
    schema: Value,
    parser: Arc<dyn ReplyParser>,
    stream_field: Option<&'static str>,
    max_tokens: Option<u32>,
    deadline: Option<Instant>,
) -> Speech {
    let system = format!(
        "{system}\n\n{}",
        prompts::json_instructions(schema_name, &schema)
    );
    Speech {
        key,
        perspective,
        system,
        prompt,
        kind: ReplyKind::Structured {
            parser,
            stream_field,
        },
        schema_name,
        schema: Some(schema),
        max_tokens,
        deadline,
    }
}
