//! The commands that are not a debate: each file one family, all reading or deciding what the
//! journal holds and printing it. `Failure` is what they return: a message and its exit code.

mod arena;
mod code;
mod gates;
mod history;
mod lessons;
mod models;
mod prune;

pub use arena::{arena, export as as_arena_directory, import};
pub use code::code;
pub use gates::{decide, decide_gate, gates};
pub use history::{audit, export, list, search, show};
pub use lessons::lessons;
pub use models::{models, perspectives, protocols};

use crate::sanitize;
use std::io::Write;

/// A command's failure: the message and the exit code it deserves.
#[derive(Debug)]
pub struct Failure {
    pub message: String,
    pub code: i32,
}

impl Failure {
    pub fn usage(message: impl Into<String>) -> Self {
        Failure {
            message: message.into(),
            code: 2,
        }
    }

    pub fn runtime(message: impl Into<String>) -> Self {
        Failure {
            message: message.into(),
            code: 1,
        }
    }
}

/// A session's refusal is a usage error (exit 2) when the person can fix it by asking
/// differently, else a failure at run time (exit 1).
impl From<crate::session::SessionError> for Failure {
    fn from(error: crate::session::SessionError) -> Self {
        if error.is_usage() {
            Failure::usage(error.to_string())
        } else {
            Failure::runtime(error.to_string())
        }
    }
}

impl From<crate::store::StoreError> for Failure {
    fn from(error: crate::store::StoreError) -> Self {
        use crate::store::StoreError::*;
        let code = match error {
            NotFound(_) | Ambiguous { .. } | InUse { .. } => 2,
            _ => 1,
        };
        Failure {
            message: error.to_string(),
            code,
        }
    }
}

pub(super) fn print(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    // A closed pipe is not an error worth reporting.
    let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
    Ok(())
}

/// `value` as pretty JSON on stdout, every string in it sanitized.
pub(super) fn print_json(value: &impl serde::Serialize) -> Result<(), Failure> {
    let mut value = serde_json::to_value(value).unwrap_or_default();
    sanitize::clean_json(&mut value);
    print(&format!(
        "{}\n",
        serde_json::to_string_pretty(&value).unwrap_or_default()
    ))
}

pub(super) fn one_line(text: &str, width: usize) -> String {
    let flat = sanitize::clean(text)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if flat.chars().count() <= width {
        flat
    } else {
        format!(
            "{}…",
            flat.chars()
                .take(width.saturating_sub(1))
                .collect::<String>()
        )
    }
}
