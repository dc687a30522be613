//! The dialogue's discipline (design note 002's rules 1, 3 and 8): after each round of
//! argumentation the moderator may strike a weak argument and flags moves that attack the
//! speaker instead of the argument (its ruling: the reply, its prompt, its parser), and a `why`
//! left unanswered past `[dialogue] why_grace` rounds becomes a retraction of what it questioned.

use super::rules::{Kind, Side, State, headline};
use super::verdict::thesis_of;
use crate::debate::{Act, Move, Phase, Ruled, Ruling, Turn};
use crate::engine::{Reply, ReplyParser, ReplyShape, Transcript, Unusable, unusable};
use crate::protocol::text::fenced;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The schema name of the moderator's ruling (the stand-in server answers by it).
pub const RULING_SCHEMA: &str = "moot_dialogue_ruling";

/// The most arguments one ruling may strike, and moves it may flag.
const MOST_STRUCK: usize = 3;
const MOST_FLAGGED: usize = 4;

/// Prose of a turn quoted in the ruling's prompt.
const QUOTED_CHARS: usize = 800;

/// What the moderator may rule on after a round: the arguments it may strike (the round's
/// standing arguments, never a side's thesis) and the moves it may flag (all of the round's).
#[derive(Debug, Clone, PartialEq)]
pub struct RulingReplies {
    pub strikable: Vec<(String, Side)>,
    pub moves: Vec<(String, Side)>,
}

impl RulingReplies {
    /// The candidates of round `round`, as the journal stands.
    pub fn for_round(state: &State, round: u32) -> RulingReplies {
        let theses = [thesis_of(state, Side::Pro), thesis_of(state, Side::Opp)];
        let of_round = |kinds: &[Kind]| -> Vec<(String, Side)> {
            state
                .nodes
                .iter()
                .filter(|n| n.round == round && n.phase == Phase::Argument)
                .filter(|n| kinds.contains(&n.kind))
                .map(|n| (n.id.clone(), n.side))
                .collect()
        };
        let strikable = of_round(&[Kind::Claim, Kind::Since])
            .into_iter()
            .filter(|(id, _)| !theses.iter().flatten().any(|t| t == id))
            .filter(|(id, _)| state.stands(id))
            .collect();
        let moves = of_round(&[
            Kind::Claim,
            Kind::Since,
            Kind::Why,
            Kind::Concede,
            Kind::Retract,
        ]);
        RulingReplies { strikable, moves }
    }

    /// Whether there is anything to rule on.
    pub fn is_empty(&self) -> bool {
        self.moves.is_empty()
    }

    fn side_of(list: &[(String, Side)], id: &str) -> Option<Side> {
        list.iter().find(|(i, _)| i == id).map(|(_, side)| *side)
    }
}

fn ids_item(ids: &[(String, Side)]) -> Value {
    let ids: Vec<&str> = ids.iter().map(|(id, _)| id.as_str()).collect();
    json!({
        "type": "object",
        "properties": {
            "id": {"type": "string", "enum": ids},
            "reason": {"type": "string", "minLength": 1, "description": "Why, in one sentence."}
        },
        "required": ["id", "reason"]
    })
}

impl ReplyShape for RulingReplies {
    fn name(&self) -> &'static str {
        RULING_SCHEMA
    }

    fn schema(&self) -> Value {
        // An empty enum is no schema at all; a list that can hold nothing says the same.
        let list = |ids: &[(String, Side)], most: usize| {
            if ids.is_empty() {
                json!({"type": "array", "maxItems": 0, "items": {"type": "object"}})
            } else {
                json!({"type": "array", "maxItems": most.min(ids.len()), "items": ids_item(ids)})
            }
        };
        json!({
            "type": "object",
            "properties": {
                "reasoning": {"type": "string", "minLength": 1, "description": "Your reading of the round, in two or three sentences."},
                "struck": list(&self.strikable, MOST_STRUCK),
                "ad_hominem": list(&self.moves, MOST_FLAGGED)
            },
            "required": ["reasoning", "struck", "ad_hominem"]
        })
    }

    fn stream_field(&self) -> Option<&'static str> {
        Some("reasoning")
    }
}

impl ReplyParser for RulingReplies {
    fn parse(&self, reply: &Value, transcript: &Transcript<'_>) -> Result<Reply, Unusable> {
        let reasoning = reply
            .get("reasoning")
            .and_then(Value::as_str)
            .map(str::trim)
            .unwrap_or_default();
        if reasoning.is_empty() {
            return Err("`reasoning` must say how you read the round".into());
        }
        let mut dropped: Vec<String> = Vec::new();
        let mut read = |field: &str, offered: &[(String, Side)], what: &str| {
            let mut ruled: Vec<Ruled> = Vec::new();
            for item in reply
                .get(field)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let id = item.get("id").and_then(Value::as_str).unwrap_or("").trim();
                let reason = item
                    .get("reason")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .trim();
                let Some(side) = RulingReplies::side_of(offered, id) else {
                    dropped.push(format!("{field} {id:?} is not {what} of this round"));
                    continue;
                };
                if reason.is_empty() {
                    dropped.push(format!("{field} {id} gives no reason"));
                    continue;
                }
                if ruled.iter().any(|r| r.id == id) {
                    continue;
                }
                ruled.push(Ruled {
                    id: id.to_string(),
                    side: side.seat().to_string(),
                    reason: reason.to_string(),
                });
            }
            ruled
        };
        let struck = read("struck", &self.strikable, "a strikable argument");
        let ad_hominem = read("ad_hominem", &self.moves, "a move");
        if !dropped.is_empty() && !transcript.repair {
            return Err(unusable!(
                "{}. Strike only: {}; flag only: {}",
                dropped.join("; "),
                list_ids(&self.strikable),
                list_ids(&self.moves)
            ));
        }
        let ruling = Ruling { struck, ad_hominem };
        Ok(Reply {
            content: reasoning.to_string(),
            data: serde_json::to_value(&ruling).ok(),
            note: (!dropped.is_empty()).then(|| format!("left out: {}", dropped.join("; "))),
            ..Reply::default()
        })
    }
}

fn list_ids(ids: &[(String, Side)]) -> String {
    if ids.is_empty() {
        return "none".into();
    }
    ids.iter()
        .map(|(id, _)| id.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The moderator's request for its ruling on round `round`: the round's moves and prose, with
/// the two rules it enforces and what it may name.
pub(super) fn ruling_prompt(
    topic: &str,
    turns: &[Turn],
    round: u32,
    replies: &RulingReplies,
) -> String {
    let mut prompt = format!("Thesis φ: {topic}\n\nRound {round} of argumentation:\n");
    for turn in turns
        .iter()
        .filter(|t| t.round == round && t.phase == Phase::Argument)
    {
        let _ = writeln!(prompt, "\n{}:", turn.seat);
        for mv in &turn.moves {
            let _ = writeln!(prompt, "  {} — \"{}\"", headline(mv), mv.text);
        }
        let quoted: String = turn.content.chars().take(QUOTED_CHARS).collect();
        if !quoted.trim().is_empty() {
            let _ = writeln!(prompt, "{}", fenced(&turn.seat, "argument", &quoted));
        }
    }
    let _ = write!(
        prompt,
        "\nRule your round as the moderator, by two of the dialogue's rules:\n\
         1. Steel-man, not straw-man: strike an argument that is weak — unsupported by evidence \
         or the shared context, beside the point, or a distortion of the other side's position. \
         Do not strike an argument because you disagree with it; a struck argument scores 0 and \
         its line is closed. You may strike: {}.\n\
         2. No ad hominem: flag a move that attacks the other side (its competence, motives or \
         persona) instead of its argument. A flagged move counts as a violation. You may flag: {}.\n\
         Most rounds need no ruling: empty lists are the usual answer.",
        list_ids(&replies.strikable),
        list_ids(&replies.moves)
    );
    prompt
}

/// A `why` that went unanswered past its grace, and the side that now retracts what it asked.
#[derive(Debug, Clone, PartialEq)]
pub struct Lapse {
    pub side: Side,
    /// What is retracted.
    pub target: String,
    pub target_text: String,
    /// The whys against it that went unanswered, with the round each was asked in.
    pub whys: Vec<(String, u32)>,
}

/// The whys still open at the end of round `round` that the questioned side has let pass in
/// `grace` or more turns it took since (a turn that failed or fell back is not one: a provider's
/// hiccup is not a choice to stay silent), grouped by what they questioned: each group is one
/// retraction.
pub fn lapses(state: &State, round: u32, grace: u32) -> Vec<Lapse> {
    let mut by_target: BTreeMap<(u8, String), Lapse> = BTreeMap::new();
    for why in state.open_whys() {
        let side = why.side.other();
        if state.turns_taken(side, why.round, round) < grace {
            continue;
        }
        let Some(target) = why.target.clone() else {
            continue;
        };
        let text = state
            .get(&target)
            .map(|n| n.text.clone())
            .unwrap_or_default();
        let order = if side == Side::Pro { 0 } else { 1 };
        by_target
            .entry((order, target.clone()))
            .or_insert_with(|| Lapse {
                side,
                target,
                target_text: text,
                whys: Vec::new(),
            })
            .whys
            .push((why.id.clone(), why.round));
    }
    by_target.into_values().collect()
}

/// The turn moot records for `side`'s lapses in `round`: one `retract` per questioned
/// proposition, answering its whys, with ids that follow the side's own.
pub fn lapse_turn(state: &State, side: Side, round: u32, grace: u32, lapses: &[Lapse]) -> Turn {
    let mut turn = Turn::pending(
        crate::debate::TurnKey::new(round, Phase::Lapse, side.seat()),
        "moot",
        "why_grace",
    );
    let first = state
        .next_id(side)
        .trim_start_matches(side.letter())
        .parse::<usize>()
        .unwrap_or(1);
    let mut said = Vec::new();
    for (number, lapse) in (first..).zip(lapses.iter().filter(|l| l.side == side)) {
        let whys: Vec<String> = lapse
            .whys
            .iter()
            .map(|(id, asked)| format!("{id} (round {asked})"))
            .collect();
        said.push(format!(
            "{} is retracted: {} went unanswered past the grace of {grace} round(s).",
            lapse.target,
            whys.join(", ")
        ));
        // As a side's own retraction in answer to a why: the proposition, then the why(s).
        let answers: Vec<String> = std::iter::once(lapse.target.clone())
            .chain(lapse.whys.iter().map(|(id, _)| id.clone()))
            .collect();
        turn.moves.push(Move {
            id: format!("{}{number}", side.letter()),
            act: Act::Retract,
            text: lapse.target_text.clone(),
            premises: Vec::new(),
            answers,
            relation: None,
        });
    }
    turn.content = said.join("\n");
    turn
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::debate::TurnKey;
    use crate::engine::Transcript;
    use crate::protocol::dialogue::rules::tests::*;
    use crate::protocol::dialogue::verdict;

    /// The opening, PRO's argument P2 since P2.1, and OPP's `why` O2 of that premise.
    fn premise_challenged() -> Vec<Turn> {
        let mut turns = opening();
        let argument = since("P2", "adopt tower", &["tower is maintained"], &["P1"]);
        turns.push(turn("PRO", 1, Phase::Argument, argument));
        let why = mv("O2", Act::Why, "", &["P2.1"], None);
        turns.push(turn("OPP", 1, Phase::Argument, vec![why]));
        turns
    }

    fn transcript<'a>(key: &'a TurnKey, turns: &'a [Turn], repair: bool) -> Transcript<'a> {
        Transcript { key, turns, repair }
    }

    #[test]
    fn the_ruling_offers_the_rounds_arguments_but_never_a_thesis() {
        let turns = premise_challenged();
        let replies = RulingReplies::for_round(&State::from_turns(&turns), 1);
        let strikable: Vec<&str> = replies
            .strikable
            .iter()
            .map(|(id, _)| id.as_str())
            .collect();
        assert_eq!(strikable, ["P2"]);
        let moves: Vec<&str> = replies.moves.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(moves, ["P2", "O2"]);
        let schema = replies.schema();
        assert_eq!(
            schema["properties"]["struck"]["items"]["properties"]["id"]["enum"],
            json!(["P2"])
        );
        // Round 0 holds only the theses: nothing to strike, and nothing of round 0 to flag.
        let opening = RulingReplies::for_round(&State::from_turns(&turns), 0);
        assert!(opening.strikable.is_empty() && opening.is_empty());
    }

    #[test]
    fn a_strike_closes_the_line_and_takes_the_argument_out_of_the_scores() {
        let mut turns = opening();
        turns.push(turn(
            "PRO",
            1,
            Phase::Argument,
            since("P2", "adopt tower", &["tower is maintained"], &["P1"]),
        ));
        let key = TurnKey::new(1, Phase::Ruling, "moderator");
        let replies = RulingReplies::for_round(&State::from_turns(&turns), 1);
        let reply = json!({
            "reasoning": "P2 cites nothing.",
            "struck": [{"id": "P2", "reason": "it cites no evidence"}],
            "ad_hominem": []
        });
        let parsed = replies
            .parse(&reply, &transcript(&key, &turns, false))
            .unwrap();
        let mut ruling_turn = Turn::pending(key, "p", "m");
        ruling_turn.data = parsed.data;
        let before = verdict::compute(&["PRO".into(), "OPP".into()], &turns, 0);
        turns.push(ruling_turn);
        let after = verdict::compute(&["PRO".into(), "OPP".into()], &turns, 0);
        let p2 = after.arguments.iter().find(|a| a.id == "P2").unwrap();
        assert!(p2.struck && p2.score == 0.0, "{p2:?}");
        let premise = after.arguments.iter().find(|a| a.id == "P2.1").unwrap();
        assert!(premise.struck, "a since's reasons fall with it");
        // P2 supported the thesis; struck, it no longer does.
        assert!(after.pro.score < before.pro.score, "{before:?} / {after:?}");
        let state = State::from_turns(&turns);
        let refused = state.check(Side::Opp, Act::Why, "P2.1").unwrap_err();
        assert!(refused.contains("struck by the moderator"), "{refused}");
    }

    #[test]
    fn a_ruling_naming_what_it_may_not_is_asked_again_then_kept_in_part() {
        let mut turns = opening();
        turns.push(turn(
            "PRO",
            1,
            Phase::Argument,
            vec![mv("P2", Act::Claim, "ops are cheap", &["O1"], None)],
        ));
        let key = TurnKey::new(1, Phase::Ruling, "moderator");
        let replies = RulingReplies::for_round(&State::from_turns(&turns), 1);
        let reply = json!({
            "reasoning": "P2 sneers.",
            "struck": [{"id": "P1", "reason": "weak"}],
            "ad_hominem": [{"id": "P2", "reason": "calls OPP lazy"}]
        });
        let first = replies
            .parse(&reply, &transcript(&key, &turns, false))
            .unwrap_err();
        assert!(
            first.contains("\"P1\" is not a strikable argument"),
            "{first}"
        );
        let kept = replies
            .parse(&reply, &transcript(&key, &turns, true))
            .unwrap();
        let ruling: Ruling = serde_json::from_value(kept.data.unwrap()).unwrap();
        assert!(ruling.struck.is_empty());
        assert_eq!(ruling.ad_hominem[0].id, "P2");
        assert_eq!(ruling.ad_hominem[0].side, "PRO");
        assert!(kept.note.unwrap().contains("P1"));
        let empty = replies.parse(
            &json!({"reasoning": " ", "struck": [], "ad_hominem": []}),
            &transcript(&key, &turns, true),
        );
        assert!(empty.is_err());
    }

    #[test]
    fn a_why_unanswered_past_its_grace_becomes_a_retraction_of_what_it_asked() {
        let mut turns = premise_challenged();
        let state = State::from_turns(&turns);
        // Asked in round 1: with a grace of 1, PRO has round 2 to answer.
        assert!(lapses(&state, 1, 1).is_empty());
        turns.push(turn(
            "PRO",
            2,
            Phase::Argument,
            vec![mv("P3", Act::Claim, "keep going", &["O1"], None)],
        ));
        let state = State::from_turns(&turns);
        let lapsed = lapses(&state, 2, 1);
        assert_eq!(lapsed.len(), 1);
        assert_eq!(lapsed[0].side, Side::Pro);
        assert_eq!(lapsed[0].target, "P2.1");
        assert_eq!(lapsed[0].whys, [("O2".to_string(), 1)]);
        // A grace of 2 waits a round longer.
        assert!(lapses(&state, 2, 2).is_empty());
        let recorded = lapse_turn(&state, Side::Pro, 2, 1, &lapsed);
        assert_eq!(recorded.phase, Phase::Lapse);
        assert_eq!(recorded.moves[0].id, "P4");
        assert_eq!(recorded.moves[0].act, Act::Retract);
        assert_eq!(recorded.moves[0].answers, ["P2.1", "O2"]);
        assert!(recorded.content.contains("O2 (round 1) went unanswered"));
        turns.push(recorded);
        let state = State::from_turns(&turns);
        assert!(!state.is_open_why("O2"), "the retraction answers the why");
        let computed = verdict::compute(&["PRO".into(), "OPP".into()], &turns, 0);
        assert_eq!(computed.metrics.retractions, 1);
        let pro = &computed.commitment_stores[0];
        assert!(pro.retractions.iter().any(|c| c.move_id == "P4"), "{pro:?}");
        assert!(lapses(&state, 3, 1).is_empty(), "a lapse is recorded once");
    }

    #[test]
    fn a_thesis_left_unanswered_is_a_surrender_by_retraction() {
        let mut turns = vec![
            pro_thesis("adopt tower"),
            opp_asks_why(""),
            turn(
                "PRO",
                1,
                Phase::Argument,
                vec![mv("P2", Act::Claim, "it is popular", &[], None)],
            ),
        ];
        let state = State::from_turns(&turns);
        let lapsed = lapses(&state, 1, 1);
        assert_eq!(lapsed[0].target, "P1");
        turns.push(lapse_turn(&state, Side::Pro, 1, 1, &lapsed));
        let computed = verdict::compute(&["PRO".into(), "OPP".into()], &turns, 0);
        assert_eq!(computed.winner, "OPP");
        assert_eq!(computed.decided_by, "retraction");
    }
}
