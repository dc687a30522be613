//! The arena's typed result: its turns as the arena files them, the rubric scores beside the
//! gradual ones, the moderator's picks, and the record's markdown.

use super::seats::Member;
use super::{Order, RUBRIC, Topology};
use crate::arena::{self, Persona, ScoringInfo};
use crate::argue::argument_graph;
use crate::debate::{Phase, Turn, TurnStatus};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::fmt::Write as _;

/// One argument as the arena files it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ArenaTurn {
    pub turn_number: u32,
    pub round: u32,
    pub phase: Phase,
    pub seat: String,
    pub agent_id: String,
    pub status: TurnStatus,
    pub argument: arena::Argument,
}

/// A moderator's rubric score of one argument, beside its gradual score.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RubricScore {
    pub turn_number: u32,
    pub agent_id: String,
    pub criteria: Map<String, Value>,
    pub score: f64,
    pub reason: String,
    /// The mean gradual score of the turn's own arguments (its speech acts), if it made any.
    pub gradual: Option<f64>,
}

/// The moderator's order for a round, with a reason per pick.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Pick {
    pub round: u32,
    pub agent_id: String,
    pub reason: String,
}

/// The arena's typed result (`show --json` names it `arena_result`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ArenaResult {
    pub debate_id: String,
    pub topic: String,
    pub personas: Vec<Persona>,
    pub turns: Vec<ArenaTurn>,
    pub order: Order,
    pub picks: Vec<Pick>,
    pub scoring: Option<ScoringInfo>,
    pub scores: Vec<RubricScore>,
    pub summary: String,
    /// The closing vote (`--vote`), when asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub votes: Option<crate::debate::VoteView>,
    /// What each seat saw of the others.
    #[serde(default)]
    pub topology: Topology,
    /// Who moderated (results from before `--moderator` were moot's model's).
    #[serde(default, skip_serializing_if = "super::Moderator::is_model")]
    pub moderator: super::Moderator,
    pub rounds: u32,
    pub notes: Vec<String>,
    pub date: String,
}

impl ArenaResult {
    /// The uniform outcome: the closing vote's winner when one was taken, else the seat with
    /// the best mean rubric score. The consensus score is the winner's share of first places,
    /// or without a vote 1 − the gap between the best and the worst seat's mean score.
    pub fn resolution(&self) -> crate::debate::Resolution {
        if let Some(votes) = self.votes.as_ref().filter(|v| v.winner.is_some()) {
            return crate::debate::Resolution {
                winner: votes.winner_label(),
                method: format!("{} vote", votes.method),
                final_consensus_score: votes.first_place_share(),
            };
        }
        let means = self.seat_means();
        let best = means.iter().max_by(|a, b| a.1.total_cmp(&b.1)).cloned();
        let worst = means.iter().map(|(_, m)| *m).fold(f64::INFINITY, f64::min);
        match best {
            Some((role, top)) => crate::debate::Resolution {
                winner: Some(role),
                method: "mean rubric score".into(),
                final_consensus_score: 1.0 - (top - worst),
            },
            None => crate::debate::Resolution {
                winner: None,
                method: "no scores were given".into(),
                final_consensus_score: 0.0,
            },
        }
    }

    /// How sure the result is, from what ranks the positions (never a fixed level): a vote by
    /// its winner's share of first places (two thirds or more High, over half Medium), a
    /// moderator's rubric scores by the best seat's lead over the next (Medium at 0.15 or
    /// more: one scorer, so never High), and nothing ranking them Low.
    pub fn confidence(&self) -> crate::debate::Confidence {
        use crate::debate::Confidence;
        if let Some(votes) = self.votes.as_ref().filter(|v| v.winner.is_some()) {
            let share = votes.first_place_share();
            return if share >= 2.0 / 3.0 - 1e-9 {
                Confidence::High
            } else if share > 0.5 {
                Confidence::Medium
            } else {
                Confidence::Low
            };
        }
        let mut means: Vec<f64> = self.seat_means().into_iter().map(|(_, m)| m).collect();
        means.sort_by(|a, b| b.total_cmp(a));
        match means.as_slice() {
            [best, next, ..] if best - next >= 0.15 => Confidence::Medium,
            _ => Confidence::Low,
        }
    }

    /// The result of an arena directory written by hand and imported (003-N6): its personas,
    /// turns (`turns`: each journaled turn with the agent who spoke it) and scores as read,
    /// with no vote; its outcome and confidence are then computed as a run's are, from the
    /// scores, never assumed.
    pub fn imported(
        debate_id: &str,
        read: &arena::ArenaDebate,
        turns: &[(&Turn, &str)],
        summary: &str,
        from: &str,
    ) -> ArenaResult {
        let scores: Vec<RubricScore> = read
            .scores
            .iter()
            .flat_map(|s| &s.scores)
            .map(|score| RubricScore {
                turn_number: score.turn_number,
                agent_id: score.agent_id.clone(),
                criteria: Map::new(),
                score: score.score,
                reason: score.reason.clone(),
                gradual: score.gradual,
            })
            .collect();
        ArenaResult {
            debate_id: debate_id.to_string(),
            topic: read.manifest.topic.clone(),
            // Every participant, whether or not the directory gave it a persona file.
            personas: read
                .manifest
                .participants
                .iter()
                .map(|participant| {
                    read.personas
                        .iter()
                        .find(|p| p.agent_id == participant.agent_id)
                        .cloned()
                        .unwrap_or_else(|| arena::Persona {
                            role_name: participant.role_name.clone(),
                            stance_summary: participant.stance.clone(),
                            debate_id: read.manifest.debate_id.clone(),
                            instructions: String::new(),
                            background_context: String::new(),
                            agent_id: participant.agent_id.clone(),
                            extra: Map::new(),
                        })
                })
                .collect(),
            turns: turns
                .iter()
                .enumerate()
                .map(|(i, (turn, agent))| arena_turn_of(turn, agent, i as u32 + 1))
                .collect(),
            order: super::Order::RoundRobin,
            picks: Vec::new(),
            scoring: read.scores.as_ref().map(|s| s.scoring_info.clone()),
            scores,
            summary: summary.to_string(),
            votes: None,
            topology: Topology::default(),
            moderator: super::Moderator::default(),
            rounds: turns.iter().map(|(t, _)| t.round).max().unwrap_or(0),
            notes: vec![format!(
                "Imported from the arena directory {from}, written by hand: moot ran none of it, \
                 and its outcome is computed from the scores it holds."
            )],
            date: crate::debate::today(),
        }
    }

    /// Each scored seat's role and mean rubric score, in seat order.
    fn seat_means(&self) -> Vec<(String, f64)> {
        self.personas
            .iter()
            .filter_map(|persona| {
                let scores: Vec<f64> = self
                    .scores
                    .iter()
                    .filter(|s| s.agent_id == persona.agent_id)
                    .map(|s| s.score)
                    .collect();
                (!scores.is_empty()).then(|| {
                    (
                        persona.role_name.clone(),
                        scores.iter().sum::<f64>() / scores.len() as f64,
                    )
                })
            })
            .collect()
    }

    pub fn to_markdown(&self) -> String {
        let mut out = format!(
            "# Arena: {}\n\n**Debate:** {} · **Rounds:** {} · **Order:** {}\n\n",
            self.topic.trim(),
            self.debate_id,
            self.rounds,
            match self.order {
                Order::RoundRobin => "round-robin",
                Order::Moderator => "moderator",
            }
        );
        // Said only when it is not moot's model, so records from before read as they did.
        match &self.moderator {
            super::Moderator::Model => {}
            super::Moderator::Seat(role) => {
                // Only what it did (B7): the order is its own only when it chose it, and it
                // scored only when there are scores.
                let did: Vec<&str> = [
                    (self.order == Order::Moderator).then_some("ordered"),
                    (!self.scores.is_empty()).then_some("scored"),
                    Some("summarised"),
                ]
                .into_iter()
                .flatten()
                .collect();
                let _ = writeln!(
                    out,
                    "**Moderator:** {role}, a participant (it {} its own turns with the others)\n",
                    said_in_prose(&did)
                );
            }
            super::Moderator::System => out.push_str(
                "**Moderator:** the system (moot, with no model call: round-robin, unscored, the summary built from the turns)\n\n",
            ),
        }
        out.push_str("## Participants\n\n");
        for p in &self.personas {
            let (role, agent, stance) = (&p.role_name, &p.agent_id, p.stance_summary.trim());
            let _ = writeln!(out, "- **{role}** (`{agent}`): {stance}");
        }
        let _ = writeln!(out, "\n## Summary\n\n{}\n", self.summary.trim());
        out.push_str(&scores_table(&self.scores));
        if let Some(votes) = &self.votes {
            out.push_str(&votes.to_markdown());
            out.push('\n');
        }
        out.push_str("## Transcript\n\n");
        for t in &self.turns {
            let _ = writeln!(
                out,
                "### Turn {} — {} (round {}, {})\n",
                t.turn_number,
                self.personas
                    .iter()
                    .find(|p| p.agent_id == t.agent_id)
                    .map_or(t.agent_id.as_str(), |p| p.role_name.as_str()),
                t.round,
                phase_name(t.phase)
            );
            match t.status {
                TurnStatus::TimedOut => out.push_str("*(missed the turn's time limit)*\n\n"),
                TurnStatus::Failed => out.push_str("*(no reply)*\n\n"),
                _ => {
                    let _ = writeln!(out, "{}\n", t.argument.argument_text.trim());
                    if !t.argument.references.is_empty() {
                        let _ = writeln!(out, "References: {}\n", t.argument.references.join("; "));
                    }
                }
            }
        }
        if !self.picks.is_empty() {
            out.push_str("## Turn order\n\n");
            for pick in &self.picks {
                let _ = writeln!(
                    out,
                    "- round {}: {} — {}",
                    pick.round, pick.agent_id, pick.reason
                );
            }
            out.push('\n');
        }
        if !self.notes.is_empty() {
            out.push_str("## Notes\n\n");
            for note in &self.notes {
                let _ = writeln!(out, "- {note}");
            }
        }
        out
    }
}

/// The rubric scores as a markdown section (empty without scores).
pub(super) fn scores_table(scores: &[RubricScore]) -> String {
    if scores.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "## Scores\n\nRubric: {} (0–1 each); the moderator's score beside the mean gradual score of the turn's own arguments.\n\n| Turn | Agent | Rubric score | Gradual | Reason |\n|---|---|---|---|---|\n",
        RUBRIC.join(", ")
    );
    for s in scores {
        let _ = writeln!(
            out,
            "| {} | {} | {:.2} | {} | {} |",
            s.turn_number,
            s.agent_id,
            s.score,
            s.gradual
                .map_or_else(|| "—".to_string(), |g| format!("{g:.2}")),
            s.reason.replace('|', "\\|").replace('\n', " ")
        );
    }
    out.push('\n');
    out
}

pub(super) fn phase_name(phase: Phase) -> &'static str {
    match phase {
        Phase::Opening => "opening",
        Phase::Closing => "closing",
        _ => "rebuttal",
    }
}

/// Sets each score's gradual score: the mean score of its turn's own arguments in the graph
/// of every turn so far.
pub(super) fn with_gradual(scores: &mut [RubricScore], turns: &[ArenaTurn], journal: &[Turn]) {
    let graph = argument_graph(journal);
    for score in scores {
        if let Some(turn) = turns.iter().find(|t| t.turn_number == score.turn_number) {
            let own: Vec<f64> = turn_argument_ids(turn)
                .iter()
                .filter_map(|id| graph.get(id).map(|a| a.score))
                .collect();
            score.gradual = (!own.is_empty()).then(|| own.iter().sum::<f64>() / own.len() as f64);
        }
    }
}

/// The ids of the arguments (claims and since-moves) a turn made.
fn turn_argument_ids(turn: &ArenaTurn) -> Vec<String> {
    turn.argument
        .metadata
        .get("moot")
        .and_then(|m| m.get("moves"))
        .and_then(Value::as_array)
        .map(|moves| {
            moves
                .iter()
                .filter(|m| {
                    matches!(
                        m.get("act").and_then(Value::as_str),
                        Some("claim" | "since")
                    )
                })
                .filter_map(|m| m.get("id").and_then(Value::as_str).map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The arena file of a journaled turn.
pub(super) fn arena_turn(turn: &Turn, member: &Member, number: u32) -> ArenaTurn {
    arena_turn_of(turn, &member.persona.agent_id, number)
}

/// The arena file of a journaled turn spoken by `agent_id`.
fn arena_turn_of(turn: &Turn, agent_id: &str, number: u32) -> ArenaTurn {
    let data = turn.data.clone().unwrap_or(Value::Null);
    let references = crate::arena::said_references(&data);
    let mut metadata = Map::new();
    if let Some(confidence) = turn.confidence {
        metadata.insert("confidence".into(), json!(confidence));
    }
    if let Some(tone) = crate::arena::said_tone(&data) {
        metadata.insert("tone".into(), json!(tone));
    }
    metadata.insert(
        "moot".into(),
        json!({
            "round": turn.round,
            "phase": phase_name(turn.phase),
            "seat": turn.seat,
            "status": turn.status,
            "moves": turn.moves,
        }),
    );
    ArenaTurn {
        turn_number: number,
        round: turn.round,
        phase: turn.phase,
        seat: turn.seat.clone(),
        agent_id: agent_id.to_string(),
        status: turn.status,
        argument: arena::Argument {
            turn_number: number,
            agent_id: agent_id.to_string(),
            timestamp_utc: crate::debate::now_rfc3339(),
            argument_text: turn.content.clone(),
            references,
            metadata,
            extra: Map::new(),
        },
    }
}

/// `a`, `a and b`, `a, b and c`.
pub(super) fn said_in_prose(words: &[&str]) -> String {
    match words {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}
