//! The dialogue's prompt text: the moderator's and each side's system prompts, and a side's
//! request for its turn.

use super::DialogueSettings;
use super::replies;
use super::rules::{self, Side, Stage, State};
use super::seats::Speaker;
use super::verdict::{self};
use crate::debate::{Fact, Phase, Ruling, Turn};
use crate::protocol::text::{DATA_RULE, fenced};
use std::fmt::Write as _;

/// Prose of earlier turns quoted in a prompt, per turn.
const QUOTED_CHARS: usize = 600;

pub(super) fn moderator_system(settings: &DialogueSettings) -> String {
    format!(
        "You are MOD, the moderator of a formal persuasion dialogue: {}. Your bias: {}. You \
         weigh argument strength, not rhetoric, and account for each side's declared bias. {DATA_RULE}",
        settings.moderator.persona, settings.moderator.bias
    )
}

pub(super) fn side_system(settings: &DialogueSettings, speaker: &Speaker, topic: &str) -> String {
    let mut system = format!(
        "You are {side} in a formal persuasion dialogue about a technical decision. Your persona: \
         {persona}. Your bias, declared to everyone: {bias}. You {stance}: \"{topic}\".\n",
        side = speaker.side.seat(),
        persona = speaker.persona.persona,
        bias = speaker.persona.bias,
        // Said to the side ("You argue"), not of it as its seat's stance is ("argues").
        stance = speaker.side.your_stance(),
    );
    if let Some(focus) = &settings.focus {
        let _ = writeln!(
            system,
            "Both sides argue from the viewpoint of a {focus}: judge every point by what it means for that role."
        );
    }
    system.push_str(
        "\nEvery move is a speech act that answers an earlier move by its id:\n\
         - claim φ: assert something. It is answered with why, a counter-claim, or concede.\n\
         - why φ: ask for the reasons. It is answered with since (the reasons) or retract.\n\
         - since: give the reasons S for a proposition of yours that was challenged, or that you \
           stand by; each reason gets an id (P3.1, …) and can itself be challenged or conceded.\n\
         - concede: admit the other side's point. retract: withdraw your own. Both close a line.\n\
         A bare claim with no reasons must be challenged with why on the next turn.\n\
         Steel-man the other side; back claims with evidence, citing the shared context's sources; \
         concede honestly what you cannot defend and retract what you cannot support; prefer \
         undercutting a weak inference to a flat contradiction; attack arguments, never people.\n",
    );
    system.push_str(DATA_RULE);
    system
}

/// What a side's turn is asked from.
pub(super) struct SideTurn<'a> {
    pub(super) settings: &'a DialogueSettings,
    pub(super) topic: &'a str,
    pub(super) facts: &'a [Fact],
    pub(super) guidance: &'a [String],
    pub(super) turns: &'a [Turn],
    pub(super) state: &'a State,
    pub(super) side: Side,
    pub(super) stage: Stage,
    pub(super) round: u32,
}

/// A side's request for its turn: the thesis, K, the dialogue so far, the person's guidance,
/// what it owes, and the moves legal now.
pub(super) fn side_prompt(input: &SideTurn<'_>) -> String {
    let SideTurn {
        settings,
        topic,
        facts,
        guidance,
        turns,
        state,
        side,
        stage,
        round,
    } = *input;
    let legal = rules::legal(state, side, stage);
    let mut prompt = format!("Thesis φ: {topic}\n");
    if !facts.is_empty() {
        prompt.push_str("\nShared context K (facts both sides may cite by source):\n");
        for fact in facts {
            let _ = writeln!(prompt, "- {} [{}]", fact.text, fact.source);
        }
    }
    dialogue_so_far(&mut prompt, settings, turns);
    for text in guidance {
        let _ = writeln!(
            prompt,
            "\nThe person watching asks both sides to address: {text}"
        );
    }
    let open: Vec<String> = state
        .open_whys()
        .into_iter()
        .filter(|w| w.side != side)
        .map(|w| format!("{} (why {})", w.id, w.target.as_deref().unwrap_or("?")))
        .collect();
    if !open.is_empty() {
        let _ = writeln!(
            prompt,
            "\nWhys against you still open: {}. Answer each with `since` or `retract`: a why \
             left unanswered for {} round(s) after the round it was asked counts as a retraction \
             of what it questioned.",
            open.join(", "),
            settings.why_grace
        );
    }
    let owed: Vec<String> = state
        .obligations(side)
        .iter()
        .map(|n| n.id.clone())
        .collect();
    if stage == Stage::Argument && !owed.is_empty() {
        let _ = writeln!(
            prompt,
            "You must challenge these bare claims with `why` (or concede them) on this turn: {}.",
            owed.join(", ")
        );
    }
    let task = match (stage, side) {
        (Stage::Opening, Side::Pro) => {
            "This is the opening. State the thesis φ with one `claim` and say why it matters.".to_string()
        }
        (Stage::Opening, Side::Opp) => {
            "This is the opening. Answer the thesis P1 with one move: `claim` its negation ¬φ, or ask `why`.".to_string()
        }
        (Stage::Argument, _) => format!(
            "Round {round} of {} of argumentation. Make 1 to {} moves, each answering an open move by its id.",
            settings.max_rounds,
            rules::MAX_MOVES
        ),
        (Stage::Closing, _) => "This is the closing round. Give your final statement; record any concessions and retractions as moves (or make none).".to_string(),
    };
    let _ = writeln!(
        prompt,
        "\n{task}\nLegal moves now: {}.",
        replies::summary(&legal)
    );
    prompt
}

/// The dialogue so far, as a side reads it: every move, each turn's prose, the moderator's
/// rulings and the retractions the rules imposed.
fn dialogue_so_far(prompt: &mut String, settings: &DialogueSettings, turns: &[Turn]) {
    if turns.iter().any(|t| t.phase.is_debater()) {
        prompt.push_str("\nThe dialogue so far:\n");
        for turn in turns.iter() {
            if let Some(ruling) = Ruling::of(turn).filter(|r| !r.is_empty()) {
                let _ = writeln!(prompt, "\nRound {}, the moderator's ruling:", turn.round);
                for side in ["PRO", "OPP"] {
                    for line in ruling.lines_for(side) {
                        let _ = writeln!(prompt, "  {side}'s {line}");
                    }
                }
                continue;
            }
            if !turn.phase.is_debater() {
                continue;
            }
            let _ = writeln!(
                prompt,
                "\nRound {} ({}), {}:",
                turn.round, turn.phase, turn.seat
            );
            for mv in &turn.moves {
                let _ = writeln!(prompt, "  {} — \"{}\"", rules::headline(mv), mv.text);
            }
            if turn.phase == Phase::Lapse {
                let _ = writeln!(
                    prompt,
                    "  (recorded by the rules: a why went unanswered past its grace of {} round(s))",
                    settings.why_grace
                );
                continue;
            }
            let quoted: String = turn.content.chars().take(QUOTED_CHARS).collect();
            if !quoted.trim().is_empty() {
                let _ = writeln!(prompt, "{}", fenced(&turn.seat, "argument", &quoted));
            }
        }
    }
}

/// The moderator's request for its verdict: the sides' declared biases (which its system prompt
/// tells it to account for), the moves, the arguments with their gradual scores, and the
/// computed verdict it reads.
pub(super) fn verdict_prompt(
    settings: &DialogueSettings,
    topic: &str,
    computed: &verdict::Computed,
    turns: &[Turn],
) -> String {
    let mut prompt = format!(
        "Thesis φ: {topic}\n\nDeclared biases:\n- PRO ({}): {}\n- OPP ({}): {}\n\nThe dialogue:\n",
        settings.pro.persona, settings.pro.bias, settings.opp.persona, settings.opp.bias
    );
    for turn in turns.iter().filter(|t| t.phase.is_debater()) {
        for mv in &turn.moves {
            let _ = writeln!(
                prompt,
                "{} {} — \"{}\"",
                turn.seat,
                rules::headline(mv),
                mv.text
            );
        }
    }
    prompt.push_str("\nArguments with their gradual scores:\n");
    for a in &computed.arguments {
        let (id, seat, score, text) = (&a.id, &a.seat, a.score, &a.text);
        let withdrawn = a.withdrawn_clause();
        let _ = writeln!(prompt, "- {id} ({seat}, {score:.2}{withdrawn}): {text}");
    }
    let _ = write!(
        prompt,
        "\nComputed: PRO {:.2} ({}), OPP {:.2} ({}); winner {} by {}. Unaddressed whys: {}. \
         Concessions: {}.\n\nRender your verdict: the winner (you may disagree with the scores, \
         and must then say why), a rationale citing argument ids, the strongest surviving \
         arguments, the valid points of the losing side, a consensus solution that takes the \
         best of both, and the conditions under which to revisit the decision.",
        computed.pro.score,
        computed.pro.basis,
        computed.opp.score,
        computed.opp.basis,
        computed.winner,
        computed.decided_by,
        computed.metrics.unaddressed_whys,
        computed.metrics.concessions
    );
    prompt
}
