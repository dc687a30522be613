//! The arena's prompt text: what a seat sees of the transcript under its topology, and what
//! each phase asks of it.

use super::Topology;
use super::result::{ArenaTurn, RubricScore, phase_name};
use super::seats::Member;
use super::settings::Moderator;
use crate::arena::Persona;
use crate::debate::{Phase, TurnStatus};
use crate::protocol::text::{DATA_RULE, fenced};
use crate::protocol::tree::{self, Tree};
use std::fmt::Write as _;

/// The transcript as a seat reads it: every earlier turn with its number and author.
/// What `member` sees before it speaks, by the topology: every turn (mesh), its own turns and
/// the moderator's summary of each round (star), or its own turns and those of the seat
/// before it (chain). Only the turns it sees can be named in `responds_to`'s prompt.
pub(super) fn seen_by(
    topology: Topology,
    member: &Member,
    members: &[Member],
    turns: &[ArenaTurn],
    sight: &Sight,
) -> String {
    let viewer = member.seat.id.as_str();
    let index = members
        .iter()
        .position(|m| m.seat.id == member.seat.id)
        .unwrap_or(0);
    let order: Vec<String> = members.iter().map(|m| m.seat.id.clone()).collect();
    let visible: Vec<ArenaTurn> = turns
        .iter()
        .filter(|t| match &sight.tree {
            Some(tree) => tree.sees(viewer, &t.seat),
            None => topology.sees(&order, viewer, &t.seat),
        })
        .cloned()
        .collect();
    let mut out = if visible.is_empty() {
        "You have seen no argument yet.".to_string()
    } else {
        format!(
            "The transcript you see:{}",
            transcript_text(members, &visible)
        )
    };
    if let Some(tree) = &sight.tree {
        let names = |id: &str| role_of(members, id);
        out.push_str(&tree::told(tree, viewer, &sight.escalations, &names));
    }
    if topology == Topology::Star && !sight.digests.is_empty() {
        out.push_str("\nThe moderator's summaries of each round:\n");
        for (round, digest) in &sight.digests {
            let _ = writeln!(
                out,
                "Round {round}: {}",
                fenced("moderator", "summary", digest)
            );
        }
    }
    if topology == Topology::Chain {
        let _ = write!(
            out,
            "\n(You see only your own turns and those of {}, the seat before you.)",
            members[(index + members.len() - 1) % members.len()]
                .persona
                .role_name
        );
    }
    out
}

/// What the topology shows seats beyond turns.
#[derive(Default)]
pub(super) struct Sight {
    /// The moderator's summary of each round (star).
    pub(super) digests: Vec<(u32, String)>,
    /// The tree's teams, each lead's summary of its team's round, and the root's summary of
    /// the leads' escalations.
    pub(super) tree: Option<Tree>,
    pub(super) escalations: tree::Escalations,
}

pub(super) fn role_of(members: &[Member], id: &str) -> String {
    members
        .iter()
        .find(|m| m.seat.id == id)
        .map_or(id.to_string(), |m| {
            format!("{} ({id})", m.persona.role_name)
        })
}

/// What moot writes itself when it moderates (`--moderator system`): who spoke, and each
/// turn's opening sentence, in order. No model reads or weighs anything.
pub(super) fn system_summary(members: &[Member], turns: &[ArenaTurn], what: &str) -> String {
    let spoke = turns.iter().filter(|t| t.status.spoke()).count();
    let mut out = format!(
        "moot summarised {what} itself, with no model call: {spoke} of {} turns spoken by {} seats, in round-robin order, unscored.\n",
        turns.len(),
        members.len()
    );
    for t in turns {
        let role = members
            .iter()
            .find(|m| m.persona.agent_id == t.agent_id)
            .map_or(t.agent_id.as_str(), |m| m.persona.role_name.as_str());
        let said = match t.status {
            TurnStatus::TimedOut => "(missed the time limit)".to_string(),
            TurnStatus::Failed => "(no reply)".to_string(),
            _ => {
                let text = t.argument.argument_text.trim();
                let first = text.split_inclusive(". ").next().unwrap_or(text).trim();
                crate::protocol::text::clip(first, 200)
            }
        };
        let _ = writeln!(
            out,
            "- Turn {} — {role} ({}, round {}): {said}",
            t.turn_number,
            phase_name(t.phase),
            t.round
        );
    }
    out
}

pub(super) fn transcript_text(members: &[Member], turns: &[ArenaTurn]) -> String {
    let mut out = String::new();
    for t in turns {
        let role = members
            .iter()
            .find(|m| m.persona.agent_id == t.agent_id)
            .map_or(t.agent_id.as_str(), |m| m.persona.role_name.as_str());
        let _ = writeln!(
            out,
            "\nTurn {} — {role} ({}, round {}):",
            t.turn_number,
            phase_name(t.phase),
            t.round
        );
        match t.status {
            TurnStatus::TimedOut => out.push_str("(missed the time limit)\n"),
            TurnStatus::Failed => out.push_str("(no reply)\n"),
            _ => {
                let _ = writeln!(
                    out,
                    "{}",
                    fenced(&t.agent_id, "argument", &t.argument.argument_text)
                );
            }
        }
    }
    out
}

/// What a phase asks of a seat, in a sentence.
pub(super) fn task_of(phase: Phase) -> &'static str {
    match phase {
        Phase::Opening => "Give your opening statement: your position and your strongest reasons.",
        Phase::Closing => {
            "Give your closing statement: your final position, what you concede, and why your case stands."
        }
        _ => {
            "Give your rebuttal: answer earlier arguments and name the turns you answer (\"turn 3\")."
        }
    }
}

/// A seat's system prompt: its persona, and how the arena argues.
pub(super) fn seat_system(persona: &Persona) -> String {
    format!(
        "You are {} in a debate arena. Your stance: {}\nInstructions: {}\n{}Stay in your role; \
         argue from evidence; attack arguments, not people. {DATA_RULE}",
        persona.role_name,
        persona.stance_summary,
        persona.instructions,
        if persona.background_context.trim().is_empty() {
            String::new()
        } else {
            format!("Background: {}\n", persona.background_context)
        }
    )
}

/// A seat's request for its turn: the round, what it has seen, and its phase's task.
pub(super) fn seat_prompt(
    topic: &str,
    round: u32,
    rounds: u32,
    phase: Phase,
    seen: &str,
) -> String {
    let task = match phase {
        Phase::Opening => {
            "Give your opening statement: your position on the topic and your strongest reasons."
        }
        Phase::Closing => {
            "Give your closing statement: your final position, what you concede, and why your case stands."
        }
        _ => {
            "Give your rebuttal: answer the previous arguments, naming the turns you answer in `responds_to`."
        }
    };
    format!(
        "Topic: {topic}\nRound {round} of {rounds} ({}).\n{seen}\n{task}",
        phase_name(phase),
    )
}

/// The moderator as it summarises a round or the whole arena.
pub(super) fn summariser_system(moderator: &Moderator) -> String {
    format!(
        "{}. You summarise fairly and take no side. {DATA_RULE}",
        who_moderates(moderator)
    )
}

/// The moderator as it orders a round's speakers.
pub(super) fn order_system(moderator: &Moderator) -> String {
    format!(
        "{}: you manage turns and take no side. {DATA_RULE}",
        who_moderates(moderator)
    )
}

/// The moderator as it scores arguments.
pub(super) fn scorer_system(moderator: &Moderator) -> String {
    format!(
        "{}. You score arguments by the rubric, not by whether you agree. {DATA_RULE}",
        who_moderates(moderator)
    )
}

/// Who the moderator's calls speak as: moot's neutral moderator, or a participant that also
/// moderates (told that its own turns are weighed like the others').
fn who_moderates(moderator: &Moderator) -> String {
    match moderator {
        Moderator::Seat(role) => format!(
            "You are {role}, one of the participants of this debate arena, and you also moderate it (your own turns are weighed exactly like anyone else's)"
        ),
        _ => "You are the moderator of a debate arena".to_string(),
    }
}

/// A round summarised in a line a seat, for a star's seats to read.
pub(super) fn digest_prompt(topic: &str, round: u32, transcript: &str) -> String {
    format!(
        "Topic: {topic}\nRound {round}:{transcript}\n\nSummarise each seat's argument of this round in one line, naming the seat, for the seats to read instead of the transcript."
    )
}

/// The moderator's request to order a round's speakers.
pub(super) fn order_prompt(
    topic: &str,
    round: u32,
    members: &[Member],
    turns: &[ArenaTurn],
) -> String {
    format!(
        "Topic: {topic}\nRound {round}. Seats: {}.\n{}\nDecide who speaks in this round and in \
         which order: every seat once, the one with most to answer first. Give a reason for each.",
        members
            .iter()
            .map(|m| format!("{} ({})", m.persona.agent_id, m.persona.role_name))
            .collect::<Vec<_>>()
            .join(", "),
        if turns.is_empty() {
            String::new()
        } else {
            format!("The transcript so far:{}", transcript_text(members, turns))
        }
    )
}

/// The moderator's request to score a round's arguments on the rubric.
pub(super) fn scores_prompt(topic: &str, round: u32, transcript: &str) -> String {
    format!(
        "Topic: {topic}\nScore each argument of round {round} from 0 to 1 on every criterion of the \
         rubric — evidence (claims backed by sources or data), relevance (to the topic), \
         responsiveness (answers what it names), stance_adherence (argues its persona's stance) — \
         with a one-line reason.\n{transcript}"
    )
}

/// The moderator's request for the arena's closing summary.
pub(super) fn summary_prompt(topic: &str, transcript: &str, scores: &[RubricScore]) -> String {
    let mut prompt = format!(
        "Topic: {topic}\nThe debate:{transcript}\n\nSummarise it for a reader who was not there: each \
         seat's final position, the strongest arguments (cite turn numbers), where they agree, \
         what stays open, and what a decision-maker should take from it. Markdown, under 400 words."
    );
    if !scores.is_empty() {
        prompt.push_str("\nRubric scores: ");
        for s in scores {
            let _ = write!(prompt, "turn {} {:.2}; ", s.turn_number, s.score);
        }
    }
    prompt
}
