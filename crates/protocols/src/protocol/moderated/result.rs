//! The end of a moderated debate: the closing vote, the moderator's synthesis (built from the
//! journal's commitments and argument map), the person's approval or revision, the outcome.

use super::moderation::{Moderation, SynthesisBasis};
use super::prompts::{self, SynthesisInput};
use super::replies;
use super::verdict::{self};
use crate::argue::{argument_graph, commitment_stores};
use crate::debate::{
    Approval, ApprovalStatus, AskKind, Control, ConvergenceSignal, Event, MODERATOR, Phase, Seat,
    Synthesis, Turn, TurnKey, TurnStatus,
};
use crate::engine::{CheckpointOutcome, Context, EngineError, Speech};
use crate::protocol::Outcome;
use crate::protocol::kit::{self};
use tokio::time::Instant;

/// How this protocol's run ends, its result typed.
type Ending = crate::protocol::Ending<crate::debate::Synthesis>;

/// Characters of the recommendation that name the winner in the uniform outcome.
const WINNER_CHARS: usize = 160;

/// The text without its argument citations (`[A2.1]`), which name moves, not the winner.
fn without_citations(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let cited = rest[open + 1..]
            .find(']')
            .map(|close| &rest[open + 1..open + 1 + close]);
        match cited.filter(|id| {
            id.starts_with(|c: char| c.is_ascii_uppercase())
                && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '.')
        }) {
            Some(id) => {
                out.push_str(&rest[..open]);
                rest = &rest[open + id.len() + 2..];
            }
            None => {
                out.push_str(&rest[..=open]);
                rest = &rest[open + 1..];
            }
        }
    }
    out.push_str(rest);
    let words: Vec<&str> = out.split_whitespace().collect();
    words.join(" ").replace(" .", ".").replace(" ,", ",")
}

/// The uniform outcome of a moderated debate: the closing vote's winner when one was taken,
/// else the synthesis's recommendation (its first sentence). The consensus score is the
/// winner's share of first places, or without a vote the share of the synthesis's points that
/// are agreements rather than tensions (0 with neither).
pub(super) fn resolution(synthesis: &Synthesis) -> crate::debate::Resolution {
    if let Some(votes) = synthesis.votes.as_ref().filter(|v| v.winner.is_some()) {
        return crate::debate::Resolution {
            winner: votes.winner_label(),
            method: format!("{} vote", votes.method),
            final_consensus_score: votes.first_place_share(),
        };
    }
    let recommendation = without_citations(&synthesis.recommendation);
    let first = recommendation
        .split_inclusive(". ")
        .next()
        .unwrap_or(&recommendation)
        .trim();
    let agreed = synthesis.agreements.len();
    let points = agreed + synthesis.tensions.len();
    crate::debate::Resolution {
        winner: (!first.is_empty()).then(|| crate::protocol::text::clip(first, WINNER_CHARS)),
        method: "the moderator's synthesis".into(),
        final_consensus_score: if points == 0 {
            0.0
        } else {
            agreed as f64 / points as f64
        },
    }
}

impl Moderation<'_> {
    /// Step 5: The moderator's synthesis over everything said, and what it is built from.
    pub(super) async fn synthesise(
        &mut self,
        signal: ConvergenceSignal,
    ) -> Result<SynthesisBasis, EngineError> {
        let ctx = self.ctx;
        let turns = ctx.turns();
        let graph = argument_graph(&turns);
        let seat_ids: Vec<String> = self.seats.iter().map(|s| s.id.clone()).collect();
        let stores = commitment_stores(&seat_ids, &turns);
        let concessions = verdict::concessions(&turns, &graph);
        let positions: Vec<(String, String)> = self
            .seats
            .iter()
            .filter_map(|s| {
                let memory = self.memory.get(&s.id)?;
                Some((s.id.clone(), memory.last_position.clone()?))
            })
            .collect();
        let turn = ctx
            .speak(synthesis_speech(
                TurnKey::new(self.rounds_run, Phase::Synthesis, MODERATOR),
                &self.seats,
                prompts::synthesis_prompt(&SynthesisInput {
                    question: &self.clarified,
                    seats: &self.seats,
                    rounds: self.rounds_run,
                    summaries: &self.summaries,
                    guidance: &self.guidance,
                    graph: &graph,
                    positions: &positions,
                    concessions: &concessions,
                    ending: signal.describe(),
                }),
                Instant::now() + self.common.round_timeout,
            ))
            .await?;
        for member in self.roster.members().iter().filter(|m| m.active()) {
            let failed_turns = turns
                .iter()
                .filter(|t| t.seat == member.seat.id && !t.status.spoke())
                .count();
            if failed_turns > 0 {
                self.notes.push(format!(
                    "Seat {} ({}) missed {failed_turns} turn(s) to failures or timeouts.",
                    member.seat.id, member.seat.perspective
                ));
            }
        }
        let provider = ctx.seat_provider(MODERATOR);
        if let Some(caveat) = provider.caveat() {
            self.notes.push(caveat.into());
        }
        // A server's model is learned from its first reply: a debate resumed with every reply
        // already journaled names it as the journal does (the last turn that provider
        // answered), as an audit's re-run does.
        let model = match provider.model() {
            "server default" => ctx
                .turns()
                .iter()
                .rev()
                .find(|t| t.provider == provider.kind().to_string() && !t.model.is_empty())
                .map_or_else(|| "server default".to_string(), |t| t.model.clone()),
            known => known.to_string(),
        };
        Ok(SynthesisBasis {
            turn,
            turns,
            graph,
            stores,
            positions,
            signal,
            provider: format!("{} / {model}", provider.kind()),
        })
    }

    /// The synthesis a moderator turn (the synthesis or its revision) makes.
    /// The closing vote (`--vote`): every seat still at the table ranks the positions the
    /// seats last took.
    pub(super) async fn vote(&mut self) -> Result<(), EngineError> {
        let Some(method) = self.common.vote else {
            return Ok(());
        };
        let voters: Vec<Seat> = self
            .seats
            .iter()
            .filter(|s| self.roster.is_active(&s.id))
            .cloned()
            .collect();
        let candidates: Vec<(String, String)> = voters
            .iter()
            .map(|s| {
                let position = self
                    .memory
                    .get(&s.id)
                    .and_then(|m| m.last_position.clone())
                    .filter(|p| !p.trim().is_empty())
                    .unwrap_or_else(|| s.stance.clone());
                (s.id.clone(), format!("{} — {}", s.perspective, position))
            })
            .collect();
        if candidates.len() < 2 {
            return Ok(());
        }
        let so_far = self
            .summaries
            .iter()
            .map(|(round, summary)| format!("Round {round}: {summary}"))
            .collect::<Vec<_>>()
            .join("\n");
        let (_, view) = kit::closing_vote(
            self.ctx,
            self.common,
            method,
            self.rounds_run,
            &voters,
            &candidates,
            &so_far,
        )
        .await?;
        self.votes = Some(view);
        Ok(())
    }

    fn build(&self, basis: &SynthesisBasis, turn: &Turn) -> Synthesis {
        let mut synthesis = self.build_without_votes(basis, turn);
        synthesis.votes = self.votes.clone();
        synthesis.guidance = self.guidance.clone();
        match self.topology {
            kit::Topology::Mesh => {}
            kit::Topology::Star => synthesis.notes.push(
                "Topology: star — each seat saw only its own arguments and the moderator's summaries."
                    .into(),
            ),
            kit::Topology::Chain => synthesis.notes.push(
                "Topology: chain — each seat saw only its own arguments and the seat's before it."
                    .into(),
            ),
            kit::Topology::Tree => synthesis.notes.push(
                "Topology: tree — the moderator as root handed each team a sub-question; a leaf saw \
                 its team only through its lead's summaries, a lead its team and the root's summaries."
                    .into(),
            ),
        }
        synthesis
    }

    fn build_without_votes(&self, basis: &SynthesisBasis, turn: &Turn) -> Synthesis {
        verdict::build_synthesis(verdict::SynthesisParts {
            debate_id: &self.ctx.debate_id,
            question: &self.question,
            seats: &self.seats,
            rounds: self.rounds_run,
            data: turn.data.as_ref().filter(|_| turn.status == TurnStatus::Ok),
            turns: &basis.turns,
            graph: &basis.graph,
            stores: &basis.stores,
            signal: basis.signal,
            positions: &basis.positions,
            notes: self.notes.clone(),
            provider: &basis.provider,
        })
    }

    /// Step 6: The person approves the synthesis, or asks for one revision of it; the outcome.
    pub(super) async fn approve(&self, basis: SynthesisBasis) -> Result<Ending, EngineError> {
        let ctx = self.ctx;
        let rounds = self.rounds_run;
        let mut synthesis = self.build(&basis, &basis.turn);
        let approval = match present(ctx, rounds, AskKind::Approval, &synthesis).await? {
            CheckpointOutcome::TimedOut => return Ok(Ending::Paused),
            CheckpointOutcome::Unasked => Approval {
                status: ApprovalStatus::Unapproved,
                by: "nobody".into(),
                note: Some("nobody was asked to approve it (checkpoints were off)".into()),
            },
            CheckpointOutcome::Answered {
                control: Control::Accept,
                by,
            } => Approval {
                status: ApprovalStatus::Approved,
                by,
                note: None,
            },
            CheckpointOutcome::Answered {
                control: Control::Revise(request),
                by,
            } => {
                let revision = ctx
                    .speak(synthesis_speech(
                        TurnKey::new(rounds, Phase::Revision, MODERATOR),
                        &self.seats,
                        prompts::revision_prompt(&synthesis.to_markdown(), &request),
                        Instant::now() + self.common.round_timeout,
                    ))
                    .await?;
                let revised = revision.status == TurnStatus::Ok;
                if revised {
                    synthesis = self.build(&basis, &revision);
                } else {
                    synthesis.notes.push(
                        "The moderator's revision was unusable; this is its first synthesis."
                            .into(),
                    );
                }
                match present(ctx, rounds, AskKind::RevisedApproval, &synthesis).await? {
                    CheckpointOutcome::TimedOut => return Ok(Ending::Paused),
                    CheckpointOutcome::Answered {
                        control: Control::Accept,
                        by: approver,
                    } if !revised => Approval {
                        status: ApprovalStatus::Approved,
                        note: Some(format!(
                            "{by} asked for a revision (“{request}”) the moderator could not \
                             produce; the first synthesis was approved"
                        )),
                        by: approver,
                    },
                    CheckpointOutcome::Answered {
                        control: Control::Accept,
                        ..
                    } => Approval {
                        status: ApprovalStatus::Revised,
                        by,
                        note: Some(request),
                    },
                    CheckpointOutcome::Answered { by: approver, .. } => Approval {
                        status: ApprovalStatus::Unapproved,
                        note: Some(format!(
                            "{by} asked for a revision (“{request}”) and {approver} left it unapproved"
                        )),
                        by: approver,
                    },
                    CheckpointOutcome::Unasked => Approval {
                        status: ApprovalStatus::Unapproved,
                        note: Some(format!("{by} asked for a revision (“{request}”)")),
                        by,
                    },
                }
            }
            CheckpointOutcome::Answered { by, .. } => Approval {
                status: ApprovalStatus::Unapproved,
                note: Some(format!("left unapproved by {by}")),
                by,
            },
        };
        synthesis.approval = Some(approval);
        Ok(Ending::Concluded(Box::new(Outcome {
            markdown: synthesis.to_markdown(),
            confidence: synthesis.confidence,
            section: None,
            date: synthesis.date.clone(),
            data: synthesis,
        })))
    }
}

/// The moderator's synthesis (or its revision) of the debate among `seats`, as a structured
/// reply.
fn synthesis_speech(key: TurnKey, seats: &[Seat], prompt: String, deadline: Instant) -> Speech {
    kit::ask(
        key,
        prompts::moderator_system(),
        prompt,
        replies::synthesis_reply(seats),
        kit::Limits::new(2000, deadline),
    )
}

/// Shows the synthesis as a draft and asks the person about it (with checkpoints off nobody
/// is asked, and no draft is shown).
async fn present(
    ctx: &Context,
    round: u32,
    kind: AskKind,
    synthesis: &Synthesis,
) -> Result<CheckpointOutcome, EngineError> {
    if ctx.settings.checkpoints {
        ctx.emit(Event::Synthesis {
            markdown: synthesis.to_markdown(),
            confidence: synthesis.confidence,
            path: None,
            draft: true,
        });
    }
    ctx.ask(round, kind, None).await
}

/// The follow-up a moderated debate offers: an issue draft from its synthesis, written next to
/// the record.
pub(super) fn follow_up_markdown(
    synthesis: &Synthesis,
    record: Option<&std::path::Path>,
) -> String {
    use crate::debate::Named as _;
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(out, "# Implement decision: {}\n", synthesis.title);
    let _ = writeln!(out, "## Context\n");
    let _ = writeln!(
        out,
        "A moot debate ({}, {} round(s), perspectives: {}) considered:\n\n> {}\n",
        synthesis.debate_id,
        synthesis.rounds,
        synthesis.perspectives.join(", "),
        synthesis.question.trim().replace('\n', "\n> ")
    );
    if let Some(record) = record {
        let _ = writeln!(out, "Decision record: `{}`\n", record.display());
    }
    let _ = writeln!(out, "## Decision\n\n{}\n", synthesis.recommendation.trim());
    let _ = writeln!(out, "**Confidence:** {}\n", synthesis.confidence.as_str());
    if !synthesis.caveats.is_empty() {
        let _ = writeln!(out, "Caveats:\n");
        for caveat in &synthesis.caveats {
            let _ = writeln!(out, "- {caveat}");
        }
        out.push('\n');
    }
    let _ = writeln!(out, "## Action Items\n");
    if synthesis.action_items.is_empty() {
        let _ = writeln!(
            out,
            "- [ ] Turn the recommendation above into concrete tasks"
        );
    }
    for item in &synthesis.action_items {
        let _ = writeln!(out, "- [ ] {item}");
    }
    if !synthesis.tensions.is_empty() {
        let _ = writeln!(out, "\n## Open Tensions to Watch\n");
        for tension in &synthesis.tensions {
            let _ = writeln!(out, "- {tension}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_winner_is_the_recommendations_first_sentence_without_its_citations() {
        assert_eq!(
            without_citations("Use Redis [A2.1] [B1.r1] for sessions. Revisit [later]."),
            "Use Redis for sessions. Revisit [later]."
        );
        let synthesis = Synthesis {
            recommendation: "Use Redis [A2.1] for sessions. Then measure.".into(),
            agreements: vec!["both want speed".into()],
            tensions: vec!["cost".into(), "ops".into(), "risk".into()],
            ..Synthesis::sample()
        };
        let read = resolution(&synthesis);
        assert_eq!(read.winner.as_deref(), Some("Use Redis for sessions."));
        assert_eq!(read.method, "the moderator's synthesis");
        assert_eq!(read.final_consensus_score, 0.25);
    }
}
