//! The panel's prompt text: the options in each judge's own order, the judge's system prompt
//! and the question every judge reads.

use super::seats::Seated;
use super::settings::{Judge, PanelOption, PanelSettings};
use crate::protocol::text::{DATA_RULE, fenced};
use std::fmt::Write as _;

/// A deterministic shuffle of the options for one judge (from the debate and the judge, so a
/// resume shows the same order).
pub(super) fn order_for(debate_id: &str, judge: &str, options: &[PanelOption]) -> Vec<String> {
    let mut state: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in debate_id.bytes().chain(judge.bytes()) {
        state ^= u64::from(byte);
        state = state.wrapping_mul(0x0100_0000_01b3);
    }
    let mut ids: Vec<String> = options.iter().map(|o| o.id.clone()).collect();
    for index in (1..ids.len()).rev() {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let pick = ((state >> 33) % (index as u64 + 1)) as usize;
        ids.swap(index, pick);
    }
    ids
}

pub(super) fn options_text(options: &[PanelOption], order: &[String]) -> String {
    order
        .iter()
        .filter_map(|id| options.iter().find(|o| &o.id == id))
        .map(|o| format!("- [{}] {}{}", o.id, o.label, o.dashed_description()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The options as a list in their own order.
pub(super) fn listed(options: &[PanelOption]) -> String {
    let ids: Vec<String> = options.iter().map(|o| o.id.clone()).collect();
    options_text(options, &ids)
}

/// What a judge shows of itself to the others: its name, or `Judge N` when anonymous.
pub(super) fn shown_name(seated: &[Seated], index: usize, anonymous: bool) -> String {
    if anonymous {
        format!("Judge {}", index + 1)
    } else {
        seated[index].judge.name.clone()
    }
}

/// A judge's system prompt; `kit::ask` appends the reply schema. The stance is quoted whole
/// ("Your stance: optimistic: maximise user value"), since a configured one can begin with any
/// word ("with a optimistic … stance" read wrong; seed review 000/001 #14).
pub(super) fn judge_system(judge: &Judge) -> String {
    format!(
        "You are the {} judge on a decision panel. Your stance, which you must keep: {}. {}\n\n\
         {DATA_RULE}",
        judge.name, judge.stance, judge.instruction
    )
}

pub(super) fn base_prompt(
    question: &str,
    settings: &PanelSettings,
    options: &[PanelOption],
    order: &[String],
) -> String {
    let mut prompt = format!(
        "Question: {question}\n\nOptions:\n{}\n",
        options_text(options, order)
    );
    if !settings.context.is_empty() {
        let _ = write!(prompt, "\nSpec context:\n{}\n", settings.context);
    }
    prompt
}

/// A judge's request for one round: alone with the options in round 1; from round 2 its own
/// previous position against those of the judges it sees (`visible`), to challenge.
pub(super) fn round_prompt(
    base: String,
    settings: &PanelSettings,
    seated: &[Seated],
    index: usize,
    visible: &[usize],
    round: u32,
    ranked: bool,
) -> String {
    let judge = &seated[index];
    let mut prompt = format!("Round {round} of at most {}.\n{base}", settings.max_rounds);
    if round == 1 {
        prompt.push_str(
            "\nEvaluate every option from your stance, then recommend exactly one. You work alone: \
             no other judge's view is available to you.",
        );
    } else {
        // A judge whose reply could not be read is told so, not "option none" (A5).
        let previous = match judge.recommended.as_deref() {
            Some(option) => format!("Your previous recommendation: option {option}."),
            None => "Your previous reply could not be read, so you have no recommendation on \
                     the table: make one now."
                .to_string(),
        };
        let _ = write!(
            prompt,
            "\n{previous}\n{}\n\nThe other judges' positions:\n",
            fenced(
                &shown_name(seated, index, settings.anonymous),
                "reasoning",
                &judge.reasoning
            )
        );
        for &other in visible {
            let them = &seated[other];
            let name = shown_name(seated, other, settings.anonymous);
            let _ = write!(
                prompt,
                "\n{name} recommends option {}:\n{}\n",
                them.recommended.as_deref().unwrap_or("none"),
                fenced(&name, "reasoning", &them.reasoning)
            );
        }
        prompt.push_str(
            "\nChallenge each other judge's position with a specific counter-argument (one per \
             judge), then defend your recommendation or revise it. If you change it, say in \
             change_reason exactly what convinced you; otherwise leave change_reason empty.",
        );
    }
    if ranked {
        prompt.push_str(
            "\nAlso rank every option, best first (your recommendation first), and say how \
             confident you are in that ranking (0–1): the panel is decided by a vote on \
             the rankings.",
        );
    }
    prompt
}
