//! A lesson one debate wrote for the next ones (design note 004, Reflexion's verbal memory).

use serde::{Deserialize, Serialize};

/// A stored lesson, with the debate it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lesson {
    pub id: i64,
    /// The debate that wrote it.
    pub source: String,
    /// That debate's question.
    pub question: String,
    /// The lesson itself, general enough to help another debate.
    pub text: String,
    /// Whether it comes from what went `right` or `wrong`.
    pub went: String,
    /// What to do differently (or again) next time.
    pub advice: String,
    /// How sure the moderator is of it, 0–1.
    pub confidence: f64,
    pub created_at: String,
}

/// A lesson as the reflection step writes it, before it is stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LessonDraft {
    pub text: String,
    pub went: String,
    pub advice: String,
    pub confidence: f64,
}
