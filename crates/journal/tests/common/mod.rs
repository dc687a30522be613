//! What the journal's integration tests share: a debate to journal.

use moot_domain::debate::{Debate, DebateStatus};

/// A running moderated debate `id` with nothing journaled yet.
pub fn debate(id: &str) -> Debate {
    Debate {
        id: id.into(),
        question: "Should we cache sessions in Redis?".into(),
        protocol: "moderated".into(),
        status: DebateStatus::Running,
        config: serde_json::json!({"max_rounds": 2}),
        seats: Vec::new(),
        created_at: "2026-12-03T00:00:00Z".into(),
        updated_at: "2026-12-03T00:00:00Z".into(),
        finished_at: None,
        confidence: None,
        error: None,
        stage: None,
    }
}
