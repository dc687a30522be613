//! Lessons around a debate: the ones it is given (cited, matched by words or embeddings) and
//! the ones it leaves.

use super::{DebateSettings, LessonSettings, SessionError};
use crate::debate::{Debate, Event};
use crate::engine::Context;
use crate::llm::Provider;
use crate::protocol::{self, Outcome};
use crate::store::Store;
use std::sync::Arc;
use std::time::Duration;

/// The outcome with the lessons its debate was given cited in its record.
pub(super) fn cite_lessons(mut outcome: Outcome, lessons: &LessonSettings) -> Outcome {
    outcome.markdown.push_str(&crate::lessons::record_section(
        &lessons.given,
        &lessons.matched_by,
    ));
    outcome
}

/// The lessons a new debate is given: by embeddings of the question when the provider offers
/// them and stored lessons were embedded by the same model, else by full text.
pub(super) async fn relevant_lessons(
    store: &Store,
    question: &str,
    lessons: &LessonSettings,
    provider: &Arc<dyn Provider>,
    deadline: Duration,
) -> Result<(Vec<crate::debate::Lesson>, String), SessionError> {
    // A server that never answers the embedding leaves full text to decide.
    let embedded = tokio::time::timeout(
        deadline,
        embed_question(provider.as_ref(), question, lessons),
    )
    .await
    .ok()
    .flatten();
    if let Some((name, vector)) = embedded
        && let Some(found) = crate::lessons::nearest(
            store,
            &vector,
            &name,
            lessons.similarity,
            lessons.per_debate,
        )?
    {
        return Ok((found, format!("embeddings ({name})")));
    }
    Ok((
        crate::lessons::relevant(store, question, lessons.per_debate)?,
        "full text".into(),
    ))
}

/// A debate that has just ended, with everything the lessons step reads of it.
#[derive(Clone, Copy)]
pub(super) struct Ended<'a> {
    pub ctx: &'a Context,
    pub store: &'a Store,
    pub protocol: &'a dyn protocol::Protocol,
    pub debate: &'a Debate,
    pub settings: &'a DebateSettings,
    pub outcome: &'a Outcome,
}

/// The reflection step: the moderator writes the debate's lessons, stored for later debates.
/// It is a courtesy to the next debate, so a failure is told, never fatal to this one.
pub(super) async fn learn(ended: Ended<'_>) {
    let Ended {
        ctx,
        store,
        protocol,
        debate,
        settings,
        outcome,
    } = ended;
    if let Some(reason) = ended.unlearnable() {
        ctx.announce(Event::Notice {
            message: format!("no lessons were written: {reason}"),
        });
        return;
    }
    let focus = protocol.lesson_focus();
    let drafts =
        match protocol::reflect::reflect(ctx, &debate.question, &outcome.markdown, focus).await {
            Ok(drafts) => drafts,
            Err(error) => {
                ctx.announce(Event::Notice {
                    message: format!("no lessons were written: {error}"),
                });
                return;
            }
        };
    // A resume that concludes again must not store the same lessons twice.
    let written = store
        .lessons()
        .is_ok_and(|all| all.iter().any(|l| l.source == debate.id));
    if drafts.is_empty() || written {
        return;
    }
    // A lesson reaches later debates' prompts: one that addresses the model instead of the
    // problem is refused, and the refusal is journaled with its reason.
    let mut kept = Vec::new();
    for draft in drafts {
        let refused =
            crate::lessons::refusal(&draft.text).or_else(|| crate::lessons::refusal(&draft.advice));
        match refused {
            None => kept.push(draft),
            Some(reason) => ctx.announce(Event::LessonRefused {
                lesson: crate::sanitize::clean(&format!(
                    "{} Next time: {}",
                    draft.text, draft.advice
                )),
                reason,
            }),
        }
    }
    let drafts = kept;
    if drafts.is_empty() {
        return;
    }
    match store.add_lessons(
        &debate.id,
        &debate.question,
        &drafts,
        settings.lessons.capacity,
    ) {
        Ok(learned) => {
            embed_lessons(ctx, store, &debate.question, &settings.lessons, &learned).await;
            ctx.announce(Event::Notice {
                message: format!(
                    "{} lesson{} written for later debates ({}); `moot lessons list` shows them",
                    learned.len(),
                    if learned.len() == 1 { "" } else { "s" },
                    learned
                        .iter()
                        .map(|l| format!("L{}", l.id))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })
        }
        Err(error) => ctx.announce(Event::Notice {
            message: format!("the lessons could not be stored: {error}"),
        }),
    }
}

impl Ended<'_> {
    /// Why a finished debate should teach later ones nothing, if it should not: it did not end
    /// well (a conclusion set aside as unsupported or overruled by the person, a synthesis the
    /// person rejected, an outcome its protocol calls unsettled), or it ran on the demonstration
    /// model, whose lessons are noise, without the person asking for them.
    fn unlearnable(&self) -> Option<String> {
        let provider = self.ctx.seat_provider(crate::debate::MODERATOR);
        if provider.caveat().is_some() && !self.settings.lessons.from_demonstration_model {
            return Some(format!(
                "{} is a demonstration model, whose lessons are noise (set [lessons] \
             from_demonstration_model = true to keep them anyway)",
                provider.model()
            ));
        }
        let events = self.store.events(&self.debate.id).unwrap_or_default();
        if events.iter().any(|event| {
            matches!(
                event,
                Event::Flag {
                    kind: crate::debate::FlagKind::Unsupported,
                    ..
                }
            )
        }) {
            return Some("a conclusion was set aside as unsupported by the moves".into());
        }
        let answers = self.store.checkpoints(&self.debate.id).unwrap_or_default();
        use crate::debate::{Answer, AskKind};
        if answers.iter().any(|a| {
            (a.kind == AskKind::Conclusion && a.control.answer() != Answer::Accept)
                || (matches!(a.kind, AskKind::Approval | AskKind::RevisedApproval)
                    && a.control.answer() == Answer::Reject)
        }) {
            return Some("the person overruled the conclusion or rejected the synthesis".into());
        }
        self.protocol.unsettled(&self.outcome.data)
    }
}

/// Embeds the source question of new lessons, when the provider offers embeddings, so later
/// debates can match them by meaning. Without embeddings they are matched by full text.
async fn embed_lessons(
    ctx: &Context,
    store: &Store,
    question: &str,
    lessons: &LessonSettings,
    learned: &[crate::debate::Lesson],
) {
    let provider = ctx.seat_provider(crate::debate::MODERATOR);
    if let Some((name, vector)) = embed_question(provider.as_ref(), question, lessons).await {
        for lesson in learned {
            let _ = store.set_lesson_embedding(lesson.id, &name, &vector);
        }
    }
}

/// A question's embedding and the model that made it, when the provider offers embeddings.
async fn embed_question(
    provider: &dyn Provider,
    question: &str,
    lessons: &LessonSettings,
) -> Option<(String, Vec<f32>)> {
    let model = lessons.embedding_model.as_deref();
    let vector = provider
        .embed(&[question.to_string()], model)
        .await
        .ok()??
        .into_iter()
        .next()?;
    Some((model.unwrap_or(provider.model()).to_string(), vector))
}
