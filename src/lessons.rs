//! Lessons across debates: which stored lessons a new question should be given (full-text
//! similarity on the question's key terms), and how they read in the seats' prompts and in the
//! record.

use crate::debate::Lesson;
use crate::store::{Store, StoreError};

/// The preference `moot lessons off` / `on` sets.
pub const PREFERENCE: &str = "lessons";

/// Whether the person turned lessons off for every debate (`moot lessons off`).
pub fn turned_off(store: &Store) -> Result<bool, StoreError> {
    Ok(store.preference(PREFERENCE)?.as_deref() == Some("off"))
}

/// The lessons most relevant to `question`, at most `limit`: those sharing at least two of its
/// key terms (one, when it has fewer than three), most shared first, then the newest.
pub fn relevant(store: &Store, question: &str, limit: usize) -> Result<Vec<Lesson>, StoreError> {
    let terms = crate::gather::key_terms(question);
    if terms.is_empty() || limit == 0 {
        return Ok(Vec::new());
    }
    let needed = if terms.len() < 3 { 1 } else { 2 };
    let mut matched: Vec<(Lesson, usize)> = store
        .lessons_matching(&terms)?
        .into_iter()
        .filter(|(_, shared)| *shared >= needed)
        .collect();
    matched.sort_by(|(a, x), (b, y)| y.cmp(x).then(b.id.cmp(&a.id)));
    Ok(matched
        .into_iter()
        .take(limit)
        .map(|(lesson, _)| lesson)
        .collect())
}

/// Cosine similarity; 0 for vectors of different lengths or no length.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() || a.is_empty() {
        return 0.0;
    }
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    let norm = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let denominator = norm(a) * norm(b);
    if denominator == 0.0 {
        0.0
    } else {
        dot / denominator
    }
}

/// The lessons whose source question's embedding (by `model`) is at least `similarity` from
/// the new question's, most similar first, at most `limit`. None when no stored lesson has an
/// embedding by that model (full text decides then).
pub fn nearest(
    store: &Store,
    question: &[f32],
    model: &str,
    similarity: f64,
    limit: usize,
) -> Result<Option<Vec<Lesson>>, StoreError> {
    let embedded = store.lesson_embeddings(model)?;
    if embedded.is_empty() {
        return Ok(None);
    }
    let mut scored: Vec<(f64, Lesson)> = embedded
        .into_iter()
        .map(|(lesson, vector)| (cosine(question, &vector), lesson))
        .filter(|(score, _)| *score >= similarity)
        .collect();
    scored.sort_by(|(a, x), (b, y)| b.total_cmp(a).then(y.id.cmp(&x.id)));
    Ok(Some(
        scored
            .into_iter()
            .take(limit)
            .map(|(_, lesson)| lesson)
            .collect(),
    ))
}

/// What every seat is told of the lessons, appended to its system prompt.
pub fn preamble(lessons: &[Lesson]) -> Option<String> {
    if lessons.is_empty() {
        return None;
    }
    let mut text = String::from(
        "Lessons from earlier debates (what went right or wrong there; weigh them, they are \
         advice, not instructions):\n",
    );
    for lesson in lessons {
        text.push_str(&format!(
            "- L{}: {} Next time: {}\n",
            lesson.id,
            lesson.text.trim(),
            lesson.advice.trim()
        ));
    }
    Some(text)
}

/// The record's section citing the lessons the debate was given, and how they were matched.
pub fn record_section(lessons: &[Lesson], matched_by: &str) -> String {
    if lessons.is_empty() {
        return String::new();
    }
    let mut text = format!(
        "\n## Lessons From Earlier Debates\n\nMatched to this question by {matched_by}.\n\n"
    );
    for lesson in lessons {
        text.push_str(&format!(
            "- **L{}** ({}, went {}, confidence {:.0}%): {} *Next time:* {}\n",
            lesson.id,
            lesson.source,
            lesson.went,
            lesson.confidence * 100.0,
            lesson.text.trim(),
            lesson.advice.trim()
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::debate::LessonDraft;

    fn learn(store: &Store, id: &str, question: &str, text: &str) {
        store
            .add_lessons(
                id,
                question,
                &[LessonDraft {
                    text: text.into(),
                    went: "wrong".into(),
                    advice: "Benchmark first.".into(),
                    confidence: 0.8,
                }],
                100,
            )
            .unwrap();
    }

    #[test]
    fn a_related_question_gets_the_lesson_and_an_unrelated_one_does_not() {
        let store = Store::in_memory().unwrap();
        learn(
            &store,
            "DEB-a",
            "Should we use Redis or PostgreSQL for caching?",
            "Latency claims went unmeasured.",
        );
        learn(
            &store,
            "DEB-b",
            "Which font should the marketing site use?",
            "Taste decided too early.",
        );
        let related = relevant(&store, "Should we cache user sessions in Redis?", 3).unwrap();
        assert_eq!(related.len(), 1);
        assert_eq!(related[0].source, "DEB-a");
        assert!(
            relevant(&store, "How do we version the public API?", 3)
                .unwrap()
                .is_empty()
        );
        // One shared word of many is not enough.
        assert!(
            relevant(&store, "Redis pub/sub or NATS for chat fan-out events?", 3)
                .unwrap()
                .is_empty()
        );
        let preamble = preamble(&related).unwrap();
        assert!(preamble.contains(&format!(
            "L{}: Latency claims went unmeasured. Next time: Benchmark first.",
            related[0].id
        )));
        assert!(
            record_section(&related, "full text").contains("(DEB-a, went wrong, confidence 80%)")
        );
        assert_eq!(record_section(&[], "full text"), "");
    }

    #[test]
    fn the_nearest_lessons_by_embedding_pass_the_similarity_bar() {
        let store = Store::in_memory().unwrap();
        learn(&store, "DEB-a", "Redis for caching?", "Measure.");
        learn(&store, "DEB-b", "Which font?", "Taste.");
        let ids: Vec<i64> = store.lessons().unwrap().iter().map(|l| l.id).collect();
        assert_eq!(
            nearest(&store, &[1.0, 0.0], "m", 0.5, 3).unwrap(),
            None,
            "none embedded yet"
        );
        store
            .set_lesson_embedding(ids[1], "m", &[1.0, 0.0])
            .unwrap();
        store
            .set_lesson_embedding(ids[0], "m", &[0.0, 1.0])
            .unwrap();
        let near = nearest(&store, &[0.9, 0.1], "m", 0.5, 3).unwrap().unwrap();
        assert_eq!(near.len(), 1);
        assert_eq!(near[0].source, "DEB-a");
        assert_eq!(nearest(&store, &[0.9, 0.1], "other", 0.5, 3).unwrap(), None);
        assert!((cosine(&[1.0, 0.0], &[1.0, 0.0]) - 1.0).abs() < 1e-9);
        assert_eq!(cosine(&[1.0], &[1.0, 0.0]), 0.0);
    }
}
