//! What protocols share on top of the engine: the speeches of moderators and seats with their
//! reply schemas, a roster of seats that guardrails mute and drop, and which turns a seat may
//! see.

use super::moves::DebaterReplies;
use super::text;
use crate::debate::{Event, FlagKind, Seat, Turn, TurnKey};
use crate::engine::{Context, ReplyKind, ReplyShape, Speech};
use serde_json::Value;
use tokio::time::Instant;

/// How long and how far a speech may run.
#[derive(Debug, Clone, Copy, Default)]
pub struct Limits {
    pub max_tokens: Option<u32>,
    /// The speech gives up (status timed_out) at this instant.
    pub deadline: Option<Instant>,
}

impl Limits {
    /// At most `max_tokens`, until `deadline`.
    pub fn new(max_tokens: u32, deadline: Instant) -> Limits {
        Limits {
            max_tokens: Some(max_tokens),
            deadline: Some(deadline),
        }
    }
}

/// A speech whose reply is JSON of `shape`: its schema is offered (the engine appends the
/// words that ask for it to `system`, as the provider wants them), its parser reads the reply.
pub fn ask<S: ReplyShape>(
    key: TurnKey,
    system: String,
    prompt: String,
    shape: S,
    limits: Limits,
) -> Speech {
    let schema_name = shape.name();
    let schema = shape.schema();
    let stream_field = shape.stream_field();
    Speech {
        key,
        perspective: None,
        system,
        prompt,
        kind: ReplyKind::Structured {
            parser: std::sync::Arc::new(shape),
            stream_field,
        },
        schema_name,
        schema: Some(schema),
        max_tokens: limits.max_tokens,
        deadline: limits.deadline,
    }
}

/// A protocol's stored settings read back for a run; `what` names them in the error ("the
/// arena's").
pub fn stored<T: serde::de::DeserializeOwned>(
    settings: &Value,
    what: &str,
) -> Result<T, crate::engine::EngineError> {
    serde_json::from_value(settings.clone()).map_err(|e| {
        crate::engine::EngineError::Setup(format!("{what} stored settings cannot be read: {e}"))
    })
}

/// A moderator's free markdown, streamed as it comes.
pub fn prose_speech(
    key: TurnKey,
    name: &'static str,
    system: String,
    prompt: String,
    max_tokens: Option<u32>,
    deadline: Instant,
) -> Speech {
    Speech {
        key,
        perspective: None,
        system,
        prompt,
        kind: ReplyKind::Prose,
        schema_name: name,
        schema: None,
        max_tokens,
        deadline: Some(deadline),
    }
}

/// A seat's argument with its speech acts (`moot_argument`), the reply the commitment
/// stores and the argument map are built from.
pub fn debater_speech(
    key: TurnKey,
    seat: &Seat,
    prompt: String,
    max_tokens: Option<u32>,
    deadline: Instant,
) -> Speech {
    let shape = DebaterReplies;
    let schema = shape.schema();
    Speech {
        key,
        perspective: Some(seat.perspective.clone()),
        // The same for every seat, the words asking for the schema after it (see
        // `text::debater_system`); the prompt says who the seat is.
        system: text::debater_system(),
        prompt,
        schema_name: shape.name(),
        kind: ReplyKind::Structured {
            stream_field: shape.stream_field(),
            parser: std::sync::Arc::new(shape),
        },
        schema: Some(schema),
        max_tokens,
        deadline: Some(deadline),
    }
}

/// The seats take their places: journaled, then announced with the protocol's looks
/// (`DebateStarted`). Returns what every record should say about the moderator's provider (a
/// demonstration model, say), if anything.
pub async fn seat_and_start(
    ctx: &Context,
    protocol: &dyn super::Protocol,
    question: &str,
    seats: &[Seat],
    max_rounds: u32,
) -> Result<Option<String>, crate::engine::EngineError> {
    ctx.journal(|store| store.set_seats(&ctx.debate_id, seats))
        .await?;
    let provider = ctx.seat_provider(crate::debate::MODERATOR);
    ctx.emit(Event::DebateStarted {
        id: ctx.debate_id.clone(),
        question: question.to_string(),
        protocol: protocol.name().to_string(),
        seats: seats.to_vec(),
        max_rounds,
        provider: provider.kind().to_string(),
        model: provider.model().to_string(),
        caveat: provider.caveat().map(str::to_string),
        presentation: protocol.presentation(),
    });
    Ok(provider.caveat().map(str::to_string))
}

/// Puts `seat` on its own provider, from the snapshot its settings resolved (a judge or a
/// side given a provider in config), and notes the provider and model on the seat.
pub fn seat_on_own_provider(
    ctx: &Context,
    common: &super::Common,
    seat: &mut Seat,
    spec: &Value,
) -> Result<(), crate::engine::EngineError> {
    let provider =
        (common.providers)(spec).map_err(|e| crate::engine::EngineError::Setup(e.to_string()))?;
    seat.provider = Some(provider.kind().to_string());
    seat.model = Some(provider.model().to_string());
    ctx.seat_on(seat, provider);
    Ok(())
}

/// A seat and what the guardrails hold against it.
#[derive(Debug, Clone)]
pub struct Member {
    pub seat: Seat,
    muted: bool,
    /// Why it was left out, once it was.
    dropped: Option<String>,
    failures_in_a_row: u32,
    off_topic_strikes: u32,
}

impl Member {
    pub fn active(&self) -> bool {
        !self.muted && self.dropped.is_none()
    }

    /// Why it was left out, if it was.
    pub fn dropped(&self) -> Option<&str> {
        self.dropped.as_deref()
    }
}

/// The seats of a debate and which of them still speak: a seat that fails too often in a row
/// is dropped, one that strays off the question is redirected, then muted. Every change is a
/// flag in the journal and a line in the outcome's notes.
#[derive(Debug, Clone)]
pub struct SeatRoster {
    members: Vec<Member>,
}

impl SeatRoster {
    pub fn new(seats: &[Seat]) -> SeatRoster {
        SeatRoster {
            members: seats
                .iter()
                .map(|seat| Member {
                    seat: seat.clone(),
                    muted: false,
                    dropped: None,
                    failures_in_a_row: 0,
                    off_topic_strikes: 0,
                })
                .collect(),
        }
    }

    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// Every seat, speaking or not, in seat order.
    pub fn seats(&self) -> Vec<Seat> {
        self.members.iter().map(|m| m.seat.clone()).collect()
    }

    /// The seats that still speak, in seat order.
    pub fn active(&self) -> Vec<Seat> {
        self.members
            .iter()
            .filter(|m| m.active())
            .map(|m| m.seat.clone())
            .collect()
    }

    pub fn is_active(&self, id: &str) -> bool {
        self.member(id).is_some_and(Member::active)
    }

    pub fn member(&self, id: &str) -> Option<&Member> {
        self.members.iter().find(|m| m.seat.id == id)
    }

    /// Leaves a seat out for good: `reason` is what the outcome says of it, `note` the line
    /// it adds to the notes.
    pub fn drop_seat(&mut self, id: &str, reason: &str, note: String, notes: &mut Vec<String>) {
        if let Some(member) = self.members.iter_mut().find(|m| m.seat.id == id) {
            member.dropped = Some(reason.to_string());
            notes.push(note);
        }
    }

    /// Counts one seat's round: a seat that spoke in every one of its `turns` starts over, one
    /// that failed (or was never heard) `limit` rounds in a row is dropped, with a flag. True
    /// when it was dropped now.
    pub fn tally(
        &mut self,
        ctx: &Context,
        round: u32,
        id: &str,
        turns: &[Turn],
        limit: u32,
        notes: &mut Vec<String>,
    ) -> bool {
        let Some(member) = self.members.iter_mut().find(|m| m.seat.id == id) else {
            return false;
        };
        let mine: Vec<&Turn> = turns.iter().filter(|t| t.seat == id).collect();
        if !mine.is_empty() && mine.iter().all(|t| t.status.spoke()) {
            member.failures_in_a_row = 0;
            return false;
        }
        member.failures_in_a_row += 1;
        if member.failures_in_a_row < limit {
            return false;
        }
        let seat = member.seat.clone();
        self.drop_seat(
            id,
            "kept failing",
            format!(
                "Seat {} ({}) was dropped after repeated failures.",
                seat.id, seat.perspective
            ),
            notes,
        );
        ctx.emit(Event::Flag {
            round,
            seat: seat.id.clone(),
            kind: FlagKind::Dropped,
            detail: format!(
                "{} failed or timed out twice in a row; the debate goes on without it",
                seat.perspective
            ),
        });
        true
    }

    /// Seats the moderator found off the question: redirected the first time (returned, for
    /// the next round's opening), muted the second; a seat back on the question starts over.
    pub fn off_topic(
        &mut self,
        ctx: &Context,
        round: u32,
        strayed: &[String],
        notes: &mut Vec<String>,
    ) -> Vec<Seat> {
        let mut redirect = Vec::new();
        for member in self.members.iter_mut().filter(|m| m.active()) {
            if !strayed.contains(&member.seat.id) {
                member.off_topic_strikes = 0;
                continue;
            }
            member.off_topic_strikes += 1;
            let (kind, detail) = if member.off_topic_strikes >= 2 {
                member.muted = true;
                notes.push(format!(
                    "Seat {} ({}) was muted for arguing off the question.",
                    member.seat.id, member.seat.perspective
                ));
                (FlagKind::Muted, "off the question twice; muted")
            } else {
                redirect.push(member.seat.clone());
                (
                    FlagKind::OffTopic,
                    "off the question; the moderator will redirect it",
                )
            };
            ctx.emit(Event::Flag {
                round,
                seat: member.seat.id.clone(),
                kind,
                detail: detail.into(),
            });
        }
        redirect
    }
}

/// Which of the other seats' turns a seat sees when it speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Visibility {
    /// Nobody else's words: isolated, independent judgements.
    Isolated,
    /// Everything every seat has said.
    All,
}

impl Visibility {
    /// Whether `viewer` sees what `speaker` said.
    pub fn sees(self, viewer: &str, speaker: &str) -> bool {
        match self {
            Visibility::Isolated => viewer == speaker,
            Visibility::All => true,
        }
    }
}

/// An approval gate's stop: where the debate stands, its round, and what the reviewer is shown.
pub struct Stop {
    pub point: &'static str,
    pub round: u32,
    pub summary: String,
    pub artifacts: Value,
}

impl Stop {
    /// The stop after each round of argument.
    pub fn after_round(round: u32, summary: String, artifacts: Value) -> Self {
        Stop {
            point: "after_round",
            round,
            summary,
            artifacts,
        }
    }

    /// The stop before the synthesis is written.
    pub fn before_synthesis(round: u32, summary: String, artifacts: Value) -> Self {
        Stop {
            point: "before_synthesis",
            round,
            summary,
            artifacts,
        }
    }
}

/// Stops at the approval gate `stop` when the debate's `[gates]` name its point (approved at
/// once, and recorded so, when they do not): `None` goes on; a rejection cancels the debate; a
/// timeout pauses it (a resume asks again).
pub async fn gate<R>(
    ctx: &Context,
    common: &super::Common,
    stop: Stop,
) -> Result<Option<super::Ending<R>>, crate::engine::EngineError> {
    Ok(match gate_outcome(ctx, common, stop).await? {
        crate::engine::GateOutcome::Approved { .. } => None,
        crate::engine::GateOutcome::Rejected { .. } => Some(super::Ending::Cancelled),
        crate::engine::GateOutcome::TimedOut => Some(super::Ending::Paused),
    })
}

/// Whether the debate's `[gates]` (or `--gates`) stop at `point`.
pub fn gate_active(common: &super::Common, point: &str) -> bool {
    common.gates.enabled && common.gates.points.iter().any(|p| p == point)
}

/// The gate `stop`, asked with the debate's timeout (approved at once when its point is not
/// active): how it was settled, for a protocol that does more than go on or stop.
pub async fn gate_outcome(
    ctx: &Context,
    common: &super::Common,
    stop: Stop,
) -> Result<crate::engine::GateOutcome, crate::engine::EngineError> {
    let active = gate_active(common, stop.point);
    let timeout = common.gates.timeout();
    ctx.gate(
        stop.point,
        stop.round,
        stop.summary,
        stop.artifacts,
        active,
        timeout,
    )
    .await
}

/// The schema name of a closing vote's ballot.
pub const VOTE_SCHEMA: &str = "moot_vote";

/// A closing vote: every seat ranks the positions on the table (in parallel, each its own
/// journaled turn in the `vote` phase), and the ballots are counted by `method`. A ballot that
/// leaves a position out or names one twice gets one repair request, then abstains. The count
/// is announced (`Votes`) and returned with the view the faces and records show.
pub async fn closing_vote(
    ctx: &Context,
    common: &super::Common,
    method: crate::vote::Method,
    round: u32,
    voters: &[Seat],
    candidates: &[(String, String)],
    debate_so_far: &str,
) -> Result<(crate::vote::Tally, crate::debate::VoteView), crate::engine::EngineError> {
    let ids: Vec<String> = candidates.iter().map(|(id, _)| id.clone()).collect();
    let positions: String = candidates
        .iter()
        .map(|(id, label)| format!("{id}: {label}\n"))
        .collect();
    let deadline = Instant::now()
        + common
            .round_timeout
            .saturating_mul(ctx.queued_turn_slots(voters));
    let speeches = voters
        .iter()
        .map(|seat| {
            ask(
                TurnKey::new(round, crate::debate::Phase::Vote, seat.id.clone()),
                format!(
                    "You are {} ({}). The debate is over: rank the positions on the table by how \
                     well they answer the question, on the arguments made, not by who made them. {}",
                    seat.perspective,
                    seat.id,
                    text::DATA_RULE
                ),
                format!(
                    "Question: {}\n\n{debate_so_far}\n\nThe positions on the table:\n{positions}\nRank all of them, best first, and say how confident you are (0–1).",
                    common.question.trim()
                ),
                BallotReplies { ids: ids.clone() },
                Limits::new(300, deadline),
            )
            .by(seat.perspective.clone())
        })
        .collect();
    let turns = ctx.speak_all(speeches).await?;
    let ballots: Vec<crate::vote::Ballot> = voters
        .iter()
        .map(|seat| {
            let data = turns
                .iter()
                .find(|t| t.seat == seat.id && t.status == crate::debate::TurnStatus::Ok)
                .and_then(|t| t.data.clone());
            crate::vote::Ballot {
                voter: seat.id.clone(),
                ranking: data
                    .as_ref()
                    .and_then(|d| serde_json::from_value(d.get("ranking")?.clone()).ok())
                    .unwrap_or_default(),
                confidence: data
                    .as_ref()
                    .and_then(|d| d.get("confidence")?.as_f64())
                    .unwrap_or(0.0),
                weight: common
                    .vote_weights
                    .iter()
                    .find(|(name, _)| {
                        name.eq_ignore_ascii_case(&seat.perspective) || **name == seat.id
                    })
                    .map_or(1.0, |(_, w)| *w),
            }
        })
        .collect();
    let tally = crate::vote::tally(method, &ids, &ballots, crate::vote::Share::TWO_THIRDS);
    let view = crate::debate::VoteView {
        method: if tally.method == tally.requested {
            tally.method.to_string()
        } else {
            format!("{} ({})", tally.method, tally.requested)
        },
        candidates: candidates.to_vec(),
        points: tally.points.clone(),
        winner: tally.winner.clone(),
        consensus_reached: tally.consensus_reached,
        fallback_used: tally.fallback_used,
        tie: tally.tie.as_ref().map(|t| {
            format!(
                "{} tied; {} chosen by {}",
                t.tied.join(", "),
                t.chosen,
                t.rule
            )
        }),
        ballots: ballots
            .iter()
            .map(|b| (b.voter.clone(), b.ranking.clone()))
            .collect(),
        abstentions: tally.abstentions.clone(),
    };
    ctx.emit(Event::Votes {
        round,
        votes: view.clone(),
    });
    Ok((tally, view))
}

/// Checks a ballot: every position exactly once.
struct BallotReplies {
    ids: Vec<String>,
}

impl ReplyShape for BallotReplies {
    fn name(&self) -> &'static str {
        VOTE_SCHEMA
    }

    fn schema(&self) -> Value {
        serde_json::json!({
            "type": "object",
            "properties": {
                "ranking": {
                    "type": "array",
                    "minItems": self.ids.len(),
                    "maxItems": self.ids.len(),
                    "items": {"type": "string", "enum": self.ids},
                    "description": "Every position's id once, the one you find best first."
                },
                "confidence": {"type": "number", "minimum": 0, "maximum": 1}
            },
            "required": ["ranking", "confidence"]
        })
    }
}

impl crate::engine::ReplyParser for BallotReplies {
    fn parse(
        &self,
        reply: &Value,
        _: &crate::engine::Transcript<'_>,
    ) -> Result<crate::engine::Reply, crate::engine::Unusable> {
        let ranking: Vec<String> = reply
            .get("ranking")
            .and_then(Value::as_array)
            .ok_or("`ranking` must be an array of position ids")?
            .iter()
            .map(|v| v.as_str().unwrap_or("").trim().to_string())
            .collect();
        for (i, id) in ranking.iter().enumerate() {
            if !self.ids.contains(id) {
                return Err(crate::engine::unusable!(
                    "{id:?} is no position; the positions are {}",
                    self.ids.join(", ")
                ));
            }
            if ranking[..i].contains(id) {
                return Err(crate::engine::unusable!(
                    "{id} is ranked twice; rank each position once"
                ));
            }
        }
        if let Some(missing) = self.ids.iter().find(|id| !ranking.contains(id)) {
            return Err(crate::engine::unusable!(
                "the ranking leaves out {missing}; rank every position"
            ));
        }
        let confidence = reply
            .get("confidence")
            .and_then(Value::as_f64)
            .filter(|c| c.is_finite())
            .map(|c| c.clamp(0.0, 1.0));
        Ok(crate::engine::Reply {
            content: format!("Ranks {}", ranking.join(" > ")),
            confidence,
            data: Some(
                serde_json::json!({"ranking": ranking, "confidence": confidence.unwrap_or(0.5)}),
            ),
            ..crate::engine::Reply::default()
        })
    }
}

/// What each seat sees of the others' turns (design note 004's topologies).
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Topology {
    /// Every seat sees every turn.
    #[default]
    Mesh,
    /// Seats see only the moderator's summary of each round (and their own turns).
    Star,
    /// Each seat sees only the seat before it (the first, the last), and its own turns.
    Chain,
    /// Teams under the moderator as root: a leaf sees its siblings through its lead's summary,
    /// a lead its team and the root's summary (`protocol::tree`).
    Tree,
}

impl Topology {
    /// `--topology` as given (mesh when absent).
    pub fn from_flag(given: Option<&str>) -> Result<Topology, super::BadFlag> {
        match given.map(str::trim) {
            None | Some("mesh") => Ok(Topology::Mesh),
            Some("star") => Ok(Topology::Star),
            Some("chain") => Ok(Topology::Chain),
            Some("tree") => Ok(Topology::Tree),
            Some(other) => Err(super::BadFlag {
                flag: "topology",
                given: other.to_string(),
                choices: "mesh, star, chain or tree",
            }),
        }
    }

    /// Whether `viewer` sees what `speaker` said, the seats in speaking order `order`.
    pub fn sees(self, order: &[String], viewer: &str, speaker: &str) -> bool {
        if viewer == speaker {
            return true;
        }
        match self {
            Topology::Mesh => true,
            // A tree's leads see their team: the protocol asks `tree::Tree::sees`.
            Topology::Star | Topology::Tree => false,
            Topology::Chain => order
                .iter()
                .position(|s| s == viewer)
                .is_some_and(|i| order[(i + order.len() - 1) % order.len()] == speaker),
        }
    }
}

/// Announces a topology other than mesh (the workbench draws it).
pub fn announce_topology(ctx: &Context, topology: Topology, seats: &[Seat]) {
    // A tree announces itself with its teams (`tree::announce`).
    if matches!(topology, Topology::Mesh | Topology::Tree) {
        return;
    }
    let order: Vec<String> = seats.iter().map(|s| s.id.clone()).collect();
    let sees = order
        .iter()
        .map(|viewer| {
            let seen = order
                .iter()
                .filter(|other| *other != viewer && topology.sees(&order, viewer, other))
                .cloned()
                .collect();
            (viewer.clone(), seen)
        })
        .collect();
    ctx.emit(Event::Topology {
        topology: match topology {
            Topology::Mesh => "mesh",
            Topology::Star => "star",
            Topology::Chain => "chain",
            Topology::Tree => "tree",
        }
        .into(),
        sees,
    });
}

/// The flag of the protocols whose first round could otherwise let a seat read another's
/// answer before giving its own (first-speaker anchoring).
pub const BLIND_FIRST_FLAG: super::Flag = super::Flag::switch(
    "blind-first",
    "A blind first round: every seat answers before it reads any other seat's answer (the exchange starts in round 2)",
);

/// The flag every protocol with seats that see each other declares.
pub const TOPOLOGY_FLAG: super::Flag = super::Flag {
    name: "topology",
    value: Some("mesh|star|chain|tree"),
    help: "What each seat sees of the others: everything, the moderator's summary of each round, only the seat before it, or a tree of teams (a leaf sees its lead's summary, a lead its team and the root's)",
    repeatable: false,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn isolated_seats_see_only_themselves_and_all_see_everyone() {
        assert!(Visibility::Isolated.sees("A", "A"));
        assert!(!Visibility::Isolated.sees("A", "B"));
        assert!(Visibility::All.sees("A", "B"));
    }
}
