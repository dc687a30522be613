//! The layering inside the session crate: every `crate::` import of every module (unit tests
//! aside) is an edge allowed here, and the allowed edges form no cycle. The crates below it
//! (the domain, the OS crate, the journal, the providers, the engine and its protocol seam)
//! are re-exported under their module names, so the edges to them are listed too.

#[path = "../../../tests/support/layering.rs"]
mod layering;

use std::path::{Path, PathBuf};

/// This crate's sources.
fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Each top-level module of this crate and the modules it may import, read downwards.
const ALLOWED: &[(&str, &[&str])] = &[
    // Running one debate.
    (
        "session",
        &[
            "debate",
            "engine",
            "protocol",
            "store",
            "llm",
            "providers",
            "config",
            "decision",
            "catalog",
            "vote",
            "lessons",
            "sanitize",
            "report",
            "live",
        ],
    ),
    // The audit trail read back and verified by a re-run.
    (
        "audit",
        &[
            "debate", "session", "store", "sanitize", "protocol", "decision",
        ],
    ),
    // Reading stored debates back.
    ("replay", &["debate", "store", "session", "llm", "live"]),
    // A running debate's events on a socket, and a viewer's end of it.
    ("live", &["debate", "sanitize"]),
    // A stored debate rendered: markdown, JSON, YAML, and its argument map as a diagram.
    (
        "report",
        &["debate", "argue", "store", "sanitize", "diagram"],
    ),
    ("headless", &["debate", "session", "signals", "live"]),
    // A server's debates listed and followed over its API (`moot attach`, the history); a
    // listed debate reads as the journal's own summary.
    ("remote", &["debate", "llm", "sanitize", "signals", "store"]),
    // Which lessons a debate is given, and how they read.
    ("lessons", &["debate", "store", "sanitize"]),
    // A debate drawn as Mermaid or DOT, from its derived views and event log.
    ("diagram", &["debate", "argue", "sanitize"]),
    ("providers", &["config", "llm", "sanitize"]),
    ("config", &["engine", "llm", "catalog", "place"]),
];

/// Every import an allowed edge, every allowed edge used, no cycle.
#[test]
fn the_layering_holds() {
    layering::holds(&src(), ALLOWED);
}
