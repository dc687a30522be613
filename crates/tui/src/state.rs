//! The workbench's picture of one debate: a pure fold over engine events. A live debate and
//! one replayed from the journal go through the same fold, so they look the same.

use crate::argue::{ArgumentGraph, CommitmentStore, argument_graph, commitment_stores};
use crate::debate::{
    Answer, AskKind, Confidence, Convergence, DebateStatus, Event, FlagKind, MODERATOR, Phase,
    Presentation, Seat, Standing, Turn,
};
use crate::sanitize;

/// One version of a code debate as the Versions panel shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct VersionView {
    pub number: u32,
    pub phase: String,
    pub summary: String,
    pub passes: Option<bool>,
    pub diff: String,
}

/// What a seat's pane shows beyond its finished turns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SeatActivity {
    /// The phase being spoken now, while a turn streams.
    pub speaking: Option<(u32, Phase)>,
    /// Prose streamed so far for the turn being spoken (sanitized).
    pub streaming: String,
    /// Retries of the current turn.
    pub retries: u32,
    pub last_retry: Option<String>,
    pub muted: bool,
    pub dropped: bool,
    pub flags: Vec<(u32, FlagKind, String)>,
    /// Moves of this seat the dialogue's rules rejected: (round, the rule broken).
    pub violations: Vec<(u32, String)>,
    /// Waiting for this seat's words from outside moot: who (`person`, `outside`) and the
    /// turn's time limit in seconds.
    pub requested: Option<(String, u64)>,
}

/// A topology: its name, and each seat with the seats whose turns it is shown.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TopologyView {
    pub name: String,
    pub sees: Vec<(String, Vec<String>)>,
}

/// The shared context K of a debate that gathered one (sanitized).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SharedContextView {
    /// The directory it was gathered under; cited files open relative to it.
    pub root: String,
    pub facts: Vec<crate::debate::Fact>,
    pub notes: Vec<String>,
}

/// The moderator's latest word.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModeratorStrip {
    pub round: u32,
    /// The round's check in a line, for protocols that say it themselves (the panel's
    /// consensus check).
    pub headline: Option<String>,
    pub convergence: Option<Convergence>,
    pub summary: String,
    /// The moderator's opening of the latest round it opened (round, words): shown until
    /// that round's own summary lands (seed review 000/001 #11).
    pub pose: Option<(u32, String)>,
}

/// A question the debate waits on the person for.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingAsk {
    pub round: u32,
    pub kind: AskKind,
    pub timeout_seconds: u64,
    /// What the person is asked to weigh (sanitized).
    pub detail: Option<String>,
    /// The options to pick from, for a choice: (id, label), sanitized.
    pub choices: Vec<(String, String)>,
    /// Why the last answer given was refused (the question stays open for another).
    pub refused: Option<String>,
}

/// An approval gate as its question shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct GateView {
    pub point: String,
    pub round: u32,
    /// What the reviewer weighs beside the summary, a line a field (sanitized).
    pub artifacts: Vec<(String, String)>,
}

/// The standings panel: candidates and their backers per round, the round's check, and every
/// change of mind.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StandingsView {
    pub round: u32,
    pub headline: String,
    pub standings: Vec<Standing>,
    pub changes: Vec<String>,
}

/// The synthesis as last announced: a draft awaiting approval, or the final record.
#[derive(Debug, Clone, PartialEq)]
pub struct SynthesisDocument {
    pub markdown: String,
    pub confidence: Confidence,
    pub path: Option<String>,
    pub draft: bool,
}

/// Everything the live screen draws, folded from events.
#[derive(Debug, Clone, Default)]
pub struct DebateView {
    pub id: String,
    pub question: String,
    pub protocol: String,
    pub provider: String,
    pub model: String,
    pub seats: Vec<Seat>,
    pub max_rounds: u32,
    pub round: u32,
    pub status: DebateStatus,
    /// What the header says about the provider (a demonstration model), if anything.
    pub caveat: Option<String>,
    pub turns: Vec<Turn>,
    /// Activity per seat, in `seats` order; the moderator's is `moderator`.
    pub activity: Vec<SeatActivity>,
    pub moderator: SeatActivity,
    pub strip: ModeratorStrip,
    /// How the protocol asks to be shown.
    pub presentation: Presentation,
    pub standings: Option<StandingsView>,
    pub shared_context: Option<SharedContextView>,
    /// Rubric scores of arguments, when the protocol scores them (sanitized).
    pub scores: Vec<crate::debate::TurnScore>,
    /// The named phase a protocol said it is in (a code debate's), for the header.
    pub stage: Option<String>,
    /// A code debate's versions as they are settled (sanitized).
    pub versions: Vec<VersionView>,
    /// A code debate's hook runs: version, summary, passed.
    pub hooks: Vec<(u32, String, bool)>,
    /// The closing vote, once counted (sanitized).
    pub votes: Option<crate::debate::VoteView>,
    /// Lessons from earlier debates this one's seats were given.
    pub lessons: Vec<crate::debate::Lesson>,
    /// Who sees whom, when not everyone sees everyone.
    pub topology: Option<TopologyView>,
    /// The question waiting for the person's answer.
    pub checkpoint: Option<PendingAsk>,
    /// The approval gate waiting, if any: where it stands and what the reviewer weighs.
    pub gate: Option<GateView>,
    pub clarification: Option<String>,
    pub guidance: Vec<(u32, String)>,
    /// The follow-up issue draft written from the decision, once written.
    pub follow_up: Option<String>,
    /// The revision the person asked of the synthesis, once asked.
    pub revision_request: Option<String>,
    pub synthesis: Option<SynthesisDocument>,
    pub notices: Vec<String>,
    pub error: Option<String>,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub tokens_estimated: bool,
    /// Derived from `turns` whenever a turn lands.
    pub commitments: Vec<CommitmentStore>,
    pub graph: ArgumentGraph,
    /// Bumped whenever a turn or a synthesis lands, so views can cache per generation.
    pub generation: u64,
}

impl DebateView {
    pub fn new() -> Self {
        DebateView::default()
    }

    /// The activity slot of a seat id (or the moderator's).
    /// Whether `seat` (or the moderator) is speaking now: a stream delta for one that is not
    /// belongs to a turn already shown whole.
    pub fn speaking(&self, seat: &str) -> bool {
        if seat == MODERATOR {
            return self.moderator.speaking.is_some();
        }
        self.seats
            .iter()
            .position(|s| s.id == seat)
            .and_then(|index| self.activity.get(index))
            .is_some_and(|activity| activity.speaking.is_some())
    }

    /// What moot said of a hollow agreement in `round`, if it flagged one.
    pub fn hollow_agreement(&self, round: u32) -> Option<&str> {
        self.moderator
            .flags
            .iter()
            .rev()
            .find(|(at, kind, _)| *at == round && *kind == crate::debate::FlagKind::HollowAgreement)
            .map(|(_, _, detail)| detail.as_str())
    }

    fn activity_mut(&mut self, seat: &str) -> Option<&mut SeatActivity> {
        if seat == MODERATOR {
            return Some(&mut self.moderator);
        }
        let index = self.seats.iter().position(|s| s.id == seat)?;
        self.activity.get_mut(index)
    }

    /// Folds one event in. Model text is sanitized here, once, at the boundary, before any
    /// concern folds it and anything draws it.
    pub fn apply(&mut self, event: &Event) {
        let event = sanitized(event);
        let _ = self.fold_debate(&event)
            || self.fold_rounds(&event)
            || self.fold_turns(&event)
            || self.fold_asks(&event)
            || self.fold_panels(&event)
            || self.fold_outcome(&event);
    }

    /// What is known before the first event arrives (the question, the protocol and how it is
    /// shown), so the first frame is the protocol's own layout, not the default one while the
    /// session sets up (seed review 000/001 #10).
    pub fn expecting(&mut self, question: &str, protocol: &str, presentation: Presentation) {
        self.question = sanitize::clean(question);
        self.protocol = protocol.to_string();
        self.presentation = presentation;
    }

    /// The debate itself: created, started, where it stands, how it ended, what it says aside. False when the event is not of this concern.
    fn fold_debate(&mut self, event: &Event) -> bool {
        match event {
            Event::DebateCreated {
                id,
                question,
                protocol,
                presentation,
                ..
            } => {
                self.id = id.clone();
                self.question = question.to_string();
                self.protocol = protocol.clone();
                self.presentation = presentation.clone();
                self.status = DebateStatus::Running;
                self.error = None;
            }
            Event::DebateStarted {
                id,
                seats,
                max_rounds,
                provider,
                model,
                caveat,
                presentation,
                ..
            } => {
                self.presentation = presentation.clone();
                self.caveat = caveat.as_deref().map(str::to_string);
                self.id = id.clone();
                self.clarification = None;
                self.seats = seats
                    .iter()
                    .map(|s| Seat {
                        perspective: s.perspective.to_string(),
                        ..s.clone()
                    })
                    .collect();
                self.activity = vec![SeatActivity::default(); seats.len()];
                self.max_rounds = *max_rounds;
                self.provider = provider.clone();
                self.model = model.to_string();
            }
            Event::Notice { message } => {
                // A notice while a question waits is what became of the answer just given (a
                // refusal saying why): shown in the question, not lost (A6).
                if let Some(ask) = self.checkpoint.as_mut() {
                    ask.refused = Some(message.to_string());
                }
                self.notices.push(message.to_string());
            }
            Event::LessonRefused { lesson, reason } => self
                .notices
                .push(format!("a lesson was refused ({reason}): {lesson}")),
            Event::Stage { name } => {
                self.stage = Some(name.to_string());
                self.generation += 1;
            }
            Event::FollowUp { path } => self.follow_up = Some(path.to_string()),
            Event::DebateCompleted { status, .. } => {
                self.status = *status;
                self.checkpoint = None;
                self.moderator.speaking = None;
                for activity in &mut self.activity {
                    activity.speaking = None;
                }
            }
            Event::Error { message } => self.error = Some(message.to_string()),
            _ => return false,
        }
        true
    }

    /// What the person is asked (clarification, a turn, a gate, a checkpoint) and what they answered. False when the event is not of this concern.
    fn fold_asks(&mut self, event: &Event) -> bool {
        match event {
            Event::ClarificationRequested { question } => {
                self.clarification = Some(question.to_string());
            }
            Event::TurnRequested {
                seat,
                by,
                timeout_seconds,
                ..
            } => {
                if let Some(activity) = self.activity_mut(seat) {
                    activity.requested = Some((by.clone(), *timeout_seconds));
                }
                self.generation += 1;
            }
            Event::GateRequested {
                gate,
                point,
                round,
                summary,
                artifacts,
                ..
            } => {
                self.notices.push(format!(
                    "approval gate {gate}: {}",
                    summary.lines().next().unwrap_or("")
                ));
                self.gate = Some(GateView {
                    point: point.to_string(),
                    round: *round,
                    artifacts: artifact_fields(artifacts),
                });
            }
            Event::GateDecided {
                gate,
                decision,
                by,
                reason,
            } => {
                self.gate = None;
                let reason = reason
                    .as_deref()
                    .map(|r| format!(" — {r}"))
                    .unwrap_or_default();
                self.notices
                    .push(format!("gate {gate} {decision} by {by}{reason}"));
            }
            Event::Checkpoint {
                round,
                timeout_seconds,
                kind,
                detail,
                choices,
            } => {
                self.checkpoint = Some(PendingAsk {
                    round: *round,
                    kind: *kind,
                    timeout_seconds: *timeout_seconds,
                    detail: detail.as_deref().map(str::to_string),
                    choices: choices
                        .iter()
                        .map(|(id, label)| (id.to_string(), label.to_string()))
                        .collect(),
                    refused: None,
                })
            }
            Event::CheckpointAnswered {
                kind: AskKind::Clarification,
                ..
            } => {
                // The answer is the debate's context, not guidance for a round.
                self.clarification = None;
            }
            Event::CheckpointAnswered {
                round,
                guidance,
                decision,
                ..
            } => {
                self.checkpoint = None;
                match (decision, guidance) {
                    (Answer::Guide, Some(guidance)) => {
                        self.guidance.push((*round, guidance.to_string()))
                    }
                    (Answer::Revise, Some(request)) => {
                        self.revision_request = Some(request.to_string())
                    }
                    _ => {}
                }
            }
            _ => return false,
        }
        true
    }

    /// Rounds: started, retried, flagged, broken rules, completed. False when the event is not of this concern.
    fn fold_rounds(&mut self, event: &Event) -> bool {
        match event {
            Event::RoundStarted { round, limit } => {
                self.round = *round;
                if let Some(limit) = limit {
                    self.max_rounds = *limit;
                }
            }
            Event::Retry {
                seat,
                attempt,
                reason,
                ..
            } => {
                if let Some(activity) = self.activity_mut(seat) {
                    // What streamed before a retry is void.
                    activity.streaming.clear();
                    activity.retries = attempt.saturating_sub(1);
                    activity.last_retry = Some(reason.clone());
                }
            }
            Event::Flag {
                round,
                seat,
                kind,
                detail,
            } => {
                if let Some(activity) = self.activity_mut(seat) {
                    match kind {
                        FlagKind::Muted => activity.muted = true,
                        FlagKind::Dropped => activity.dropped = true,
                        _ => {}
                    }
                    activity.flags.push((*round, *kind, detail.clone()));
                }
            }
            Event::Ruled { round, ruling } => {
                // The ruling turn arrived without its data (turn events carry none): attach
                // it, so the graph and the panes read the strikes as the journal has them.
                if let Some(turn) =
                    self.turns.iter_mut().rev().find(|t| {
                        t.round == *round && t.phase == Phase::Ruling && t.seat == MODERATOR
                    })
                {
                    turn.data = serde_json::to_value(ruling).ok();
                }
                self.derive();
                self.generation += 1;
            }
            Event::Violation { round, seat, rule } => {
                if let Some(activity) = self.activity_mut(seat) {
                    activity.violations.push((*round, rule.to_string()));
                }
                self.generation += 1;
            }
            Event::RoundCompleted {
                round,
                convergence,
                summary,
            } => {
                self.strip = ModeratorStrip {
                    headline: None,
                    round: *round,
                    convergence: Some(convergence.clone()),
                    summary: summary.to_string(),
                    pose: self.strip.pose.take(),
                };
            }
            _ => return false,
        }
        true
    }

    /// Turns: who speaks, what streams, what landed. False when the event is not of this concern.
    fn fold_turns(&mut self, event: &Event) -> bool {
        match event {
            Event::TurnStarted { round, phase, seat } => {
                // A clarifying question asked after the seats are up is answered once a turn
                // starts again.
                self.clarification = None;
                if let Some(activity) = self.activity_mut(seat) {
                    activity.speaking = Some((*round, *phase));
                    activity.streaming.clear();
                    activity.retries = 0;
                    activity.last_retry = None;
                }
            }
            Event::TurnDelta { seat, text, .. } => {
                if let Some(activity) = self.activity_mut(seat) {
                    activity.streaming.push_str(text);
                }
            }
            Event::TurnCompleted {
                round,
                phase,
                seat,
                content,
                moves,
                confidence,
                tokens_in,
                tokens_out,
                tokens_estimated,
                latency_ms,
                provider,
                model,
                status,
                note,
                ..
            } => {
                if let Some(activity) = self.activity_mut(seat) {
                    activity.speaking = None;
                    activity.streaming.clear();
                    activity.requested = None;
                }
                self.tokens_in += tokens_in;
                self.tokens_out += tokens_out;
                self.tokens_estimated |= *tokens_estimated;
                self.turns.push(Turn {
                    round: *round,
                    phase: *phase,
                    seat: seat.clone(),
                    content: content.to_string(),
                    moves: moves
                        .iter()
                        .map(|m| crate::debate::Move {
                            text: m.text.to_string(),
                            premises: m.premises.iter().map(|p| p.to_string()).collect(),
                            ..m.clone()
                        })
                        .collect(),
                    confidence: *confidence,
                    tokens_in: *tokens_in,
                    tokens_out: *tokens_out,
                    tokens_estimated: *tokens_estimated,
                    latency_ms: *latency_ms,
                    provider: provider.clone(),
                    model: model.clone(),
                    status: *status,
                    data: None,
                    note: note.as_deref().map(str::to_string),
                });
                if *phase == Phase::Pose && seat == MODERATOR && !content.trim().is_empty() {
                    self.strip.pose = Some((*round, content.to_string()));
                }
                if phase.is_debater() {
                    self.derive();
                }
                self.generation += 1;
            }
            _ => return false,
        }
        true
    }

    /// What the side panels show: K, the topology, lessons, votes, scores, standings. False when the event is not of this concern.
    fn fold_panels(&mut self, event: &Event) -> bool {
        match event {
            Event::SharedContext { root, facts, notes } => {
                self.shared_context = Some(SharedContextView {
                    root: root.clone(),
                    facts: facts
                        .iter()
                        .map(|f| crate::debate::Fact {
                            text: f.text.to_string(),
                            source: f.source.to_string(),
                            file: f.file.clone(),
                        })
                        .collect(),
                    notes: notes.iter().map(|n| n.to_string()).collect(),
                });
                self.generation += 1;
            }
            Event::Topology { topology, sees } => {
                self.topology = Some(TopologyView {
                    name: topology.to_string(),
                    sees: sees.clone(),
                });
                self.generation += 1;
            }
            Event::Lessons { lessons } => {
                self.lessons = lessons
                    .iter()
                    .map(|lesson| crate::debate::Lesson {
                        text: lesson.text.to_string(),
                        advice: lesson.advice.to_string(),
                        question: lesson.question.to_string(),
                        ..lesson.clone()
                    })
                    .collect();
                self.generation += 1;
            }
            Event::Votes { votes, .. } => {
                let mut votes = votes.clone();
                for (_, label) in &mut votes.candidates {
                    *label = label.to_string();
                }
                votes.tie = votes.tie.as_deref().map(str::to_string);
                self.votes = Some(votes);
                self.generation += 1;
            }
            Event::Scores { scores, .. } => {
                self.scores = scores
                    .iter()
                    .map(|s| crate::debate::TurnScore {
                        seat: s.seat.to_string(),
                        reason: s.reason.to_string(),
                        ..s.clone()
                    })
                    .collect();
                self.generation += 1;
            }
            Event::Standings {
                round,
                headline,
                standings,
                changes,
            } => {
                let headline = headline.to_string();
                self.strip.round = *round;
                self.strip.headline = Some(headline.clone());
                self.standings = Some(StandingsView {
                    round: *round,
                    headline,
                    standings: standings
                        .iter()
                        .map(|s| Standing {
                            id: s.id.to_string(),
                            label: s.label.to_string(),
                            backers: s.backers.clone(),
                        })
                        .collect(),
                    changes: changes.iter().map(|c| c.to_string()).collect(),
                });
            }
            _ => return false,
        }
        true
    }

    /// What a debate produces beside its turns: a code debate's versions and hook runs, the synthesis. False when the event is not of this concern.
    fn fold_outcome(&mut self, event: &Event) -> bool {
        match event {
            Event::Version {
                number,
                phase,
                summary,
                passes,
                diff,
            } => {
                let view = VersionView {
                    number: *number,
                    phase: phase.to_string(),
                    summary: summary.to_string(),
                    passes: *passes,
                    diff: diff.to_string(),
                };
                // A version announced again (it lost its pass at convergence) is updated.
                match self.versions.iter_mut().find(|v| v.number == *number) {
                    Some(shown) => *shown = view,
                    None => self.versions.push(view),
                }
                self.generation += 1;
            }
            Event::Hooks { version, results } => {
                for (summary, passed) in results {
                    self.hooks.push((*version, summary.to_string(), *passed));
                }
                self.generation += 1;
            }
            Event::Synthesis {
                markdown,
                confidence,
                path,
                draft,
            } => {
                self.synthesis = Some(SynthesisDocument {
                    markdown: markdown.to_string(),
                    confidence: *confidence,
                    path: path.as_deref().map(str::to_string),
                    draft: *draft,
                });
                // Views cached per generation draw the new document.
                self.generation += 1;
            }
            _ => return false,
        }
        true
    }

    fn derive(&mut self) {
        let ids: Vec<String> = self.seats.iter().map(|s| s.id.clone()).collect();
        self.commitments = commitment_stores(&ids, &self.turns);
        self.graph = argument_graph(&self.turns);
    }

    /// The seat a turn belongs to, by id.
    pub fn seat(&self, id: &str) -> Option<&Seat> {
        self.seats.iter().find(|s| s.id == id)
    }

    pub fn is_finished(&self) -> bool {
        self.status.is_finished()
    }
}
/// An event with every string in it made safe to draw (escapes, controls and bidi overrides
/// gone, secrets redacted). A streamed delta, the most frequent event, is cleaned in place;
/// any other goes through its JSON form, as headless prints it.
fn sanitized(event: &Event) -> Event {
    if let Event::TurnDelta {
        round,
        phase,
        seat,
        text,
    } = event
    {
        return Event::TurnDelta {
            round: *round,
            phase: *phase,
            seat: seat.clone(),
            text: sanitize::clean(text),
        };
    }
    let Ok(mut value) = serde_json::to_value(event) else {
        return withheld();
    };
    sanitize::clean_json(&mut value);
    from_cleaned(value)
}

/// The event the cleaned JSON describes. One that cannot be read back is withheld, never shown
/// as it came (the sanitizer fails closed): the journal and `moot show` still have it.
fn from_cleaned(value: serde_json::Value) -> Event {
    serde_json::from_value(value).unwrap_or_else(|_| withheld())
}

/// What is shown in place of an event that could not be made safe to draw.
fn withheld() -> Event {
    Event::Notice {
        message:
            "an event could not be made safe to show, so it is left out here; `moot show` has it"
                .into(),
    }
}

/// A gate's artifacts as fields to show, one line each: the summary and round the question
/// already says are left out; text as it is, lists joined, anything deeper as compact JSON.
fn artifact_fields(artifacts: &serde_json::Value) -> Vec<(String, String)> {
    /// Past this a field's value is cut: the question is a modal; `moot gates ID --json` has
    /// it whole.
    const LONGEST: usize = 240;
    let Some(fields) = artifacts.as_object() else {
        return Vec::new();
    };
    let shown = |value: &serde_json::Value| -> String {
        let text = match value {
            serde_json::Value::String(text) => text.clone(),
            serde_json::Value::Array(items)
                if items.iter().all(|i| !i.is_object() && !i.is_array()) =>
            {
                items
                    .iter()
                    .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_string))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
            other => other.to_string(),
        };
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        match flat.char_indices().nth(LONGEST) {
            Some((cut, _)) => format!("{}…", &flat[..cut]),
            None => flat,
        }
    };
    fields
        .iter()
        .filter(|(key, value)| !matches!(key.as_str(), "round" | "summary") && !value.is_null())
        .map(|(key, value)| (key.replace('_', " "), shown(value)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 70: the sanitizer fails closed. An event whose cleaned form could not be read back
    /// was drawn as it came, escapes and all; now a notice stands in for it.
    #[test]
    fn an_event_that_cannot_be_cleaned_is_withheld_not_drawn_raw() {
        let unreadable = serde_json::json!({"type": "turn_delta", "text": "\u{1b}[2Jboo"});
        assert_eq!(from_cleaned(unreadable), withheld());
        let notice = Event::Notice {
            message: "fine\u{1b}[2J".into(),
        };
        assert_eq!(
            sanitized(&notice),
            Event::Notice {
                message: "fine".into()
            }
        );
    }
}
