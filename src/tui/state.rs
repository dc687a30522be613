//! The workbench's picture of one debate: a pure fold over engine events. A live debate and
//! one replayed from the journal go through the same fold, so they look the same.

use crate::argue::{ArgumentGraph, CommitmentStore, argument_graph, commitment_stores};
use crate::debate::{Convergence, Event, FlagKind, MODERATOR, Phase, Seat, Turn};
use crate::sanitize;

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
}

/// The moderator's latest word.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModeratorStrip {
    pub round: u32,
    pub convergence: Option<Convergence>,
    pub summary: String,
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
    /// running | paused | completed | failed | cancelled
    pub status: String,
    pub turns: Vec<Turn>,
    /// Activity per seat, in `seats` order; the moderator's is `moderator`.
    pub activity: Vec<SeatActivity>,
    pub moderator: SeatActivity,
    pub strip: ModeratorStrip,
    /// The checkpoint waiting for an answer: (round, timeout seconds).
    pub checkpoint: Option<(u32, u64)>,
    pub clarification: Option<String>,
    pub guidance: Vec<(u32, String)>,
    pub synthesis: Option<(String, String, Option<String>)>,
    pub notices: Vec<String>,
    pub error: Option<String>,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub tokens_estimated: bool,
    /// Derived from `turns` whenever a turn lands.
    pub commitments: Vec<CommitmentStore>,
    pub graph: ArgumentGraph,
    /// Bumped whenever a turn lands, so views can cache per generation.
    pub generation: u64,
}

impl DebateView {
    pub fn new() -> Self {
        DebateView {
            status: "running".into(),
            ..Self::default()
        }
    }

    /// The activity slot of a seat id (or the moderator's).
    fn activity_mut(&mut self, seat: &str) -> Option<&mut SeatActivity> {
        if seat == MODERATOR {
            return Some(&mut self.moderator);
        }
        let index = self.seats.iter().position(|s| s.id == seat)?;
        self.activity.get_mut(index)
    }

    pub fn activity_of(&self, seat: &str) -> Option<&SeatActivity> {
        if seat == MODERATOR {
            return Some(&self.moderator);
        }
        let index = self.seats.iter().position(|s| s.id == seat)?;
        self.activity.get(index)
    }

    /// Folds one event in. Model text is sanitized here, once, before anything draws it.
    pub fn apply(&mut self, event: &Event) {
        match event {
            Event::DebateCreated {
                id,
                question,
                protocol,
                ..
            } => {
                self.id = id.clone();
                self.question = sanitize::clean(question);
                self.protocol = protocol.clone();
                self.status = "running".into();
                self.error = None;
            }
            Event::ClarificationRequested { question } => {
                self.clarification = Some(sanitize::clean(question));
            }
            Event::DebateStarted {
                seats,
                max_rounds,
                provider,
                model,
                ..
            } => {
                self.clarification = None;
                self.seats = seats
                    .iter()
                    .map(|s| Seat {
                        perspective: sanitize::clean(&s.perspective),
                        ..s.clone()
                    })
                    .collect();
                self.activity = vec![SeatActivity::default(); seats.len()];
                self.max_rounds = *max_rounds;
                self.provider = provider.clone();
                self.model = sanitize::clean(model);
            }
            Event::RoundStarted { round } => self.round = *round,
            Event::TurnStarted { round, phase, seat } => {
                if let Some(activity) = self.activity_mut(seat) {
                    activity.speaking = Some((*round, *phase));
                    activity.streaming.clear();
                    activity.retries = 0;
                    activity.last_retry = None;
                }
            }
            Event::TurnDelta { seat, text, .. } => {
                if let Some(activity) = self.activity_mut(seat) {
                    activity.streaming.push_str(&sanitize::clean(text));
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
                }
                self.tokens_in += tokens_in;
                self.tokens_out += tokens_out;
                self.tokens_estimated |= *tokens_estimated;
                self.turns.push(Turn {
                    round: *round,
                    phase: *phase,
                    seat: seat.clone(),
                    content: sanitize::clean(content),
                    moves: moves
                        .iter()
                        .map(|m| crate::debate::Move {
                            text: sanitize::clean(&m.text),
                            premises: m.premises.iter().map(|p| sanitize::clean(p)).collect(),
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
                    note: note.as_deref().map(sanitize::clean),
                });
                if phase.is_debater() {
                    self.derive();
                }
                self.generation += 1;
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
            Event::Notice { message } => self.notices.push(sanitize::clean(message)),
            Event::RoundCompleted {
                round,
                convergence,
                summary,
            } => {
                self.strip = ModeratorStrip {
                    round: *round,
                    convergence: Some(convergence.clone()),
                    summary: sanitize::clean(summary),
                };
            }
            Event::Checkpoint {
                round,
                timeout_seconds,
            } => self.checkpoint = Some((*round, *timeout_seconds)),
            Event::CheckpointAnswered {
                round, guidance, ..
            } => {
                self.checkpoint = None;
                if let Some(guidance) = guidance {
                    self.guidance.push((*round, sanitize::clean(guidance)));
                }
            }
            Event::Synthesis {
                markdown,
                confidence,
                path,
            } => {
                self.synthesis =
                    Some((sanitize::clean(markdown), confidence.clone(), path.clone()));
            }
            Event::FollowUp { path } => self.notices.push(format!("follow-up issue draft: {path}")),
            Event::DebateCompleted { status, .. } => {
                self.status = status.clone();
                self.checkpoint = None;
                self.moderator.speaking = None;
                for activity in &mut self.activity {
                    activity.speaking = None;
                }
            }
            Event::Error { message } => self.error = Some(sanitize::clean(message)),
        }
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
        matches!(
            self.status.as_str(),
            "completed" | "failed" | "cancelled" | "paused"
        )
    }
}
