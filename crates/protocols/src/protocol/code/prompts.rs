//! The code debate's prompt text: each role's system prompt (the role's focus from its
//! template, and the data rule), and the blue team's ask.

use super::replies::CATEGORIES;
use crate::code::record::Reflection;
use crate::code::roles;
use crate::protocol::text::DATA_RULE;

/// What the role template says a role attends to.
fn focus(role: &str) -> &'static str {
    roles::find(role).map_or("", |r| r.focus)
}

/// The Generator, before any code: its questions by category.
pub(super) fn questions_system() -> String {
    format!(
        "You are the Generator in a code debate, before writing any code. Ask what you must \
         know to get it right, by category ({}), most important first; say `simple` when the \
         task needs no questions, and how confident you are (0–1) that you understand it. {DATA_RULE}",
        CATEGORIES.join(", ")
    )
}

/// The Designer, answering the Generator's questions for the person.
pub(super) fn answers_system() -> String {
    format!(
        "You are the Designer in a code debate, standing in for the person who asked: answer the \
         Generator's questions from the task and the project's files only. Where they do not say, \
         choose the conventional answer and say it is your assumption; list what stays ambiguous. {DATA_RULE}"
    )
}

/// A critic (`name`, one of the role templates) criticising the latest version.
pub(super) fn critic_system(name: &str) -> String {
    format!(
        "You are the {name} in a code debate. {} Criticise specifically; quote the code you mean. {DATA_RULE}",
        focus(name)
    )
}

/// The Judge, reviewing the critiques before the next version.
pub(super) fn review_system() -> String {
    format!(
        "You are the Judge of a code debate, reviewing the critiques before the next version. \
         Say which points must be answered, which may be left and why, weighing them against \
         the tests. {DATA_RULE}"
    )
}

/// The Judge, scoring every version against the rubric.
pub(super) fn scores_system() -> String {
    format!(
        "You are the Judge of a code debate. Score every version objectively against the rubric, 0–1 per criterion. {DATA_RULE}"
    )
}

/// The Generator, writing a version.
pub(super) fn generator_system() -> String {
    format!(
        "You are the Generator in a code debate. {} Write whole files; paths are \
         relative to the project root. You never run commands: moot runs the tests. {DATA_RULE}",
        focus("Generator")
    )
}

/// The Generator, reflecting on a failed attempt.
pub(super) fn reflection_system() -> String {
    format!("You are the Generator in a code debate, reflecting on a failed attempt. {DATA_RULE}")
}

/// The red team, attacking the latest version.
pub(super) fn red_team_system() -> String {
    format!(
        "You are the red team of a code debate: break the code with adversarial inputs, edge cases, injection and stress cases, as runnable tests where you can. Report only what you have not reported before; none when you find nothing new. {DATA_RULE}"
    )
}

/// What blue is asked in round `round`, the attacks `listed` one a line.
pub(super) fn blue_team_ask(round: u32, listed: &str) -> String {
    format!(
        "You are the blue team (round {round}): harden the code against these attacks, keeping it passing its tests:\n{listed}"
    )
}

/// The reflections on earlier attempts, for the next attempt and the next reflection (the
/// note's Reflexion reads them all); nothing when there are none.
pub(super) fn earlier_reflections(reflections: &[Reflection]) -> String {
    if reflections.is_empty() {
        return String::new();
    }
    let mut text = String::from("\n\nReflections on earlier attempts:\n");
    for r in reflections {
        text.push_str(&format!(
            "- attempt {}: root cause: {}; what went wrong: {}; change next: {}\n",
            r.attempt, r.root_cause, r.went_wrong, r.change_next
        ));
    }
    text
}
