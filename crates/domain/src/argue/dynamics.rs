//! How seats changed their minds in a debate, read from its moves alone: every concession and
//! retraction (a shift), whether a new argument had reached the seat since it last held its
//! ground (a support of the side it moved to, or an attack on its own arguments), shifts to
//! what most of the other seats already held with no such argument (conformity), shifts to the
//! first speaker beside chance (anchoring), and agreement reached with no new argument at all
//! (hollow agreement). Pure functions of the turns: never of wording.

use crate::debate::{Act, MODERATOR, Phase, Relation, Turn};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};

/// One seat giving ground: a concession of others' arguments or a retraction of its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Shift {
    pub seat: String,
    pub round: u32,
    pub act: Act,
    /// The arguments conceded or retracted.
    pub targets: Vec<String>,
    /// The round of the seat's last turn before this one in which it gave no such ground.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_in_round: Option<u32>,
    /// The new arguments since then that bear on it (supports of the side it moved to,
    /// attacks on its own arguments), by id; none makes the shift unargued.
    pub new_arguments: Vec<String>,
    /// Unargued, and to arguments more than half of the other seats already held.
    pub to_majority: bool,
}

impl Shift {
    pub fn argued(&self) -> bool {
        !self.new_arguments.is_empty()
    }
}

/// Concessions to the first seat that argued, beside what chance would give.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Anchoring {
    pub first_speaker: String,
    /// Concessions by the other seats.
    pub concessions: usize,
    /// How many of them conceded the first speaker's arguments.
    pub to_first_speaker: usize,
    /// How many would have, had each conceding seat picked among the others at random.
    pub by_chance: f64,
}

/// Seats that converged with no new argument since they last held their ground.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HollowAgreement {
    /// The round the agreement came in.
    pub round: u32,
    /// The seats that gave ground then.
    pub seats: Vec<String>,
    /// The earliest round in which one of them last held its ground.
    pub held_in_round: Option<u32>,
}

impl HollowAgreement {
    /// One sentence for an event, a note or a prompt.
    pub fn describe(&self) -> String {
        let seats = match self.seats.as_slice() {
            [one] => format!("seat {one}"),
            many => format!(
                "seats {} and {}",
                many[..many.len() - 1].join(", "),
                many[many.len() - 1]
            ),
        };
        let since = self
            .held_in_round
            .map(|round| format!(" since they last held their ground in round {round}"))
            .unwrap_or_default();
        format!(
            "hollow agreement: {seats} gave ground in round {} with no new support or rebuttal{since}",
            self.round
        )
    }
}

/// What the debate's moves show of its seats changing their minds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Dynamics {
    pub shifts: Vec<Shift>,
    /// Shifts with no new argument behind them.
    pub unargued: usize,
    /// Unargued shifts to what most of the other seats held (conformity).
    pub to_majority: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchoring: Option<Anchoring>,
}

impl Dynamics {
    /// A line for a record: empty when no seat gave ground.
    pub fn summary(&self) -> String {
        if self.shifts.is_empty() {
            return String::new();
        }
        let mut line = format!(
            "{} shift{} of position ({} with no new argument behind {}, {} of those to what most other seats held)",
            self.shifts.len(),
            plural(self.shifts.len()),
            self.unargued,
            if self.unargued == 1 { "it" } else { "them" },
            self.to_majority
        );
        if let Some(anchor) = self.anchoring.as_ref().filter(|a| a.concessions > 0) {
            line.push_str(&format!(
                "; {} of {} concession{} went to the first speaker, seat {} ({:.1} by chance)",
                anchor.to_first_speaker,
                anchor.concessions,
                plural(anchor.concessions),
                anchor.first_speaker,
                anchor.by_chance
            ));
        }
        line
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// When a turn was said: turns of one round and phase speak at once (a parallel phase), so
/// none of them saw the others; the moment is where the first of them stands in the journal.
fn moments(turns: &[Turn]) -> Vec<usize> {
    let mut first: HashMap<(u32, Phase), usize> = HashMap::new();
    turns
        .iter()
        .enumerate()
        .map(|(index, turn)| *first.entry((turn.round, turn.phase)).or_insert(index))
        .collect()
}

/// Who said each argument (a claim or a since), by id, and at which moment.
type Authors<'a> = HashMap<&'a str, (&'a str, usize)>;

/// A seat's own turn: not the moderator's, and not moot's lapse on its behalf.
fn seats_turn(turn: &Turn) -> bool {
    turn.seat != MODERATOR && turn.phase != Phase::Lapse && turn.status.spoke()
}

/// Every shift of the debate, in journal order, and what the moves show around them.
pub fn dynamics(turns: &[Turn]) -> Dynamics {
    let moment = moments(turns);
    // Who made each argument, and when.
    let mut author: Authors = HashMap::new();
    for (index, turn) in turns.iter().enumerate() {
        for mv in turn
            .moves
            .iter()
            .filter(|m| matches!(m.act, Act::Claim | Act::Since))
        {
            author.insert(mv.id.as_str(), (turn.seat.as_str(), moment[index]));
        }
    }
    let seats: BTreeSet<&str> = turns
        .iter()
        .filter(|t| seats_turn(t))
        .map(|t| t.seat.as_str())
        .collect();
    // Who conceded each argument so far, and when.
    let mut conceded: HashMap<&str, Vec<(&str, usize)>> = HashMap::new();
    let mut shifts = Vec::new();
    for (index, turn) in turns.iter().enumerate() {
        if !seats_turn(turn) {
            continue;
        }
        for act in [Act::Concede, Act::Retract] {
            let targets: Vec<&str> = turn
                .moves
                .iter()
                .filter(|m| m.act == act)
                .flat_map(|m| &m.answers)
                .map(String::as_str)
                .filter(|id| {
                    author.get(id).is_some_and(|(by, _)| match act {
                        Act::Concede => *by != turn.seat,
                        _ => *by == turn.seat,
                    })
                })
                .collect();
            if targets.is_empty() {
                continue;
            }
            let held = last_held(turns, &moment, index, act);
            let since = held.map_or(0, |h| moment[h]);
            // The side moved to: the authors of what it conceded (its own arguments, for a
            // retraction, are what was attacked).
            let sides: BTreeSet<&str> = targets
                .iter()
                .filter_map(|id| author.get(id))
                .map(|(by, _)| *by)
                .collect();
            let shifting = Shifting {
                seat: &turn.seat,
                act,
                targets: &targets,
                sides,
            };
            let new_arguments = bearing_on(turns, &moment, &author, (index, since), &shifting);
            let to_majority = act == Act::Concede
                && new_arguments.is_empty()
                && targets.iter().all(|id| {
                    let mut holders: BTreeSet<&str> = conceded
                        .get(id)
                        .into_iter()
                        .flatten()
                        .filter(|(_, when)| *when < moment[index])
                        .map(|(by, _)| *by)
                        .collect();
                    if let Some((by, _)) = author.get(id) {
                        holders.insert(by);
                    }
                    holders.remove(turn.seat.as_str());
                    let others = seats.len().saturating_sub(1);
                    holders.len() * 2 > others
                });
            if act == Act::Concede {
                for id in &targets {
                    conceded
                        .entry(id)
                        .or_default()
                        .push((turn.seat.as_str(), moment[index]));
                }
            }
            shifts.push(Shift {
                seat: turn.seat.clone(),
                round: turn.round,
                act,
                targets: targets.iter().map(|id| id.to_string()).collect(),
                held_in_round: held.map(|h| turns[h].round),
                new_arguments,
                to_majority,
            });
        }
    }
    let anchoring = anchoring(turns, &moment, &shifts, &author, seats.len());
    Dynamics {
        unargued: shifts.iter().filter(|s| !s.argued()).count(),
        to_majority: shifts.iter().filter(|s| s.to_majority).count(),
        shifts,
        anchoring,
    }
}

/// The seat's last turn before `index`, said earlier (not in the same parallel phase), in
/// which it gave no ground of this kind.
fn last_held(turns: &[Turn], moment: &[usize], index: usize, act: Act) -> Option<usize> {
    let seat = &turns[index].seat;
    (0..index).rev().find(|&earlier| {
        let turn = &turns[earlier];
        &turn.seat == seat
            && seats_turn(turn)
            && moment[earlier] < moment[index]
            && !turn.moves.iter().any(|m| m.act == act)
    })
}

/// A seat giving ground, as `bearing_on` weighs it.
struct Shifting<'a> {
    seat: &'a str,
    act: Act,
    /// What it conceded or retracted.
    targets: &'a [&'a str],
    /// The seats whose arguments it conceded.
    sides: BTreeSet<&'a str>,
}

/// Arguments by other seats the shifting seat had not seen when it last held its ground
/// (said at or after that moment) and had seen by its shift (said at an earlier moment), that
/// support the side it moved to, attack its own arguments, or are what it conceded.
fn bearing_on(
    turns: &[Turn],
    moment: &[usize],
    author: &Authors<'_>,
    (index, since): (usize, usize),
    shift: &Shifting<'_>,
) -> Vec<String> {
    let seat = shift.seat;
    let mut found = Vec::new();
    for (earlier, turn) in turns.iter().enumerate().take(index) {
        if turn.seat == seat
            || !seats_turn(turn)
            || moment[earlier] < since
            || moment[earlier] >= moment[index]
        {
            continue;
        }
        for mv in turn
            .moves
            .iter()
            .filter(|m| matches!(m.act, Act::Claim | Act::Since))
        {
            let bears = mv.answers.iter().any(|target| {
                let Some((target_seat, _)) = author.get(target.as_str()) else {
                    return false;
                };
                match mv.relation {
                    Some(Relation::Support) => {
                        shift.act == Act::Concede && shift.sides.contains(target_seat)
                    }
                    Some(Relation::Rebut | Relation::Undercut) => *target_seat == seat,
                    None => false,
                }
            });
            // A reason given for a side's claim is a new support of that side.
            let reasoned = shift.act == Act::Concede
                && !mv.premises.is_empty()
                && shift.sides.contains(turn.seat.as_str());
            // An argument conceded the first time the seat could weigh it is itself new.
            let conceded_when_new =
                shift.act == Act::Concede && shift.targets.contains(&mv.id.as_str());
            if bears || reasoned || conceded_when_new {
                found.push(mv.id.clone());
            }
        }
    }
    found
}

/// Concessions to the first seat that argued, beside chance; none with fewer than three
/// seats (with two, every concession goes to the other).
fn anchoring(
    turns: &[Turn],
    moment: &[usize],
    shifts: &[Shift],
    author: &Authors<'_>,
    seats: usize,
) -> Option<Anchoring> {
    if seats < 3 {
        return None;
    }
    let first_speaker = turns
        .iter()
        .enumerate()
        .filter(|(_, t)| {
            seats_turn(t)
                && t.moves
                    .iter()
                    .any(|m| matches!(m.act, Act::Claim | Act::Since))
        })
        .min_by(|(a, ta), (b, tb)| moment[*a].cmp(&moment[*b]).then(ta.seat.cmp(&tb.seat)))
        .map(|(_, t)| t.seat.clone())?;
    let conceding: Vec<&Shift> = shifts
        .iter()
        .filter(|s| s.act == Act::Concede && s.seat != first_speaker)
        .collect();
    Some(Anchoring {
        concessions: conceding.len(),
        to_first_speaker: conceding
            .iter()
            .filter(|s| {
                s.targets.iter().any(|id| {
                    author
                        .get(id.as_str())
                        .is_some_and(|(by, _)| *by == first_speaker)
                })
            })
            .count(),
        by_chance: conceding.len() as f64 / (seats - 1) as f64,
        first_speaker,
    })
}

/// The agreement called after `round` is hollow when seats gave ground in it (or, with none
/// in it, in the last round any did) and no shift of theirs had a new argument behind it.
pub fn hollow_agreement(turns: &[Turn], round: u32) -> Option<HollowAgreement> {
    let dynamics = dynamics(turns);
    let last = dynamics
        .shifts
        .iter()
        .map(|s| s.round)
        .filter(|r| *r <= round)
        .max()?;
    let closing: Vec<&Shift> = dynamics.shifts.iter().filter(|s| s.round == last).collect();
    if closing.iter().any(|s| s.argued()) {
        return None;
    }
    let seats: BTreeSet<String> = closing.iter().map(|s| s.seat.clone()).collect();
    Some(HollowAgreement {
        round: last,
        seats: seats.into_iter().collect(),
        held_in_round: closing.iter().filter_map(|s| s.held_in_round).min(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::debate::Move;

    fn said(id: &str, act: Act, answers: &[&str], relation: Option<Relation>) -> Move {
        Move {
            id: id.into(),
            act,
            text: format!("text of {id}"),
            premises: vec![],
            answers: answers.iter().map(|s| s.to_string()).collect(),
            relation,
        }
    }

    fn claim(id: &str) -> Move {
        said(id, Act::Claim, &[], None)
    }

    fn attack(id: &str, target: &str) -> Move {
        said(id, Act::Claim, &[target], Some(Relation::Rebut))
    }

    fn support(id: &str, target: &str) -> Move {
        said(id, Act::Since, &[target], Some(Relation::Support))
    }

    fn concede(target: &str) -> Move {
        said("", Act::Concede, &[target], None)
    }

    fn turn(seat: &str, round: u32, phase: Phase, moves: Vec<Move>) -> Turn {
        Turn {
            moves,
            ..Turn::fixture(seat, round, phase)
        }
    }

    /// Round 1: A and B claim, then rebut each other. Round 2: they argue again with
    /// `round_two` each, then concede each other's claim in the rebuttals.
    fn converging(round_two: impl Fn(&str, &str) -> Vec<Move>) -> Vec<Turn> {
        vec![
            turn("A", 1, Phase::Argument, vec![claim("A1")]),
            turn("B", 1, Phase::Argument, vec![claim("B1")]),
            turn("A", 1, Phase::Rebuttal, vec![attack("A2", "B1")]),
            turn("B", 1, Phase::Rebuttal, vec![attack("B2", "A1")]),
            turn(MODERATOR, 1, Phase::Evaluation, vec![]),
            turn("A", 2, Phase::Argument, round_two("A", "B")),
            turn("B", 2, Phase::Argument, round_two("B", "A")),
            turn("A", 2, Phase::Rebuttal, vec![concede("B1")]),
            turn("B", 2, Phase::Rebuttal, vec![concede("A1")]),
        ]
    }

    #[test]
    fn agreement_with_nothing_new_since_the_seats_held_their_ground_is_hollow() {
        let turns = converging(|_, _| vec![]);
        let dynamics = dynamics(&turns);
        assert_eq!(dynamics.shifts.len(), 2);
        assert_eq!(dynamics.unargued, 2);
        assert_eq!(dynamics.shifts[0].held_in_round, Some(2));
        let hollow = hollow_agreement(&turns, 2).expect("hollow");
        assert_eq!(hollow.seats, ["A", "B"]);
        assert_eq!(hollow.round, 2);
        assert_eq!(
            hollow.describe(),
            "hollow agreement: seats A and B gave ground in round 2 with no new support or \
             rebuttal since they last held their ground in round 2"
        );
    }

    #[test]
    fn a_new_support_of_the_side_conceded_to_makes_it_argued() {
        // Each seat's round 2 brings a reason for its own claim: the other sees it, then
        // concedes.
        let turns = converging(|me, _| vec![support(&format!("{me}3"), &format!("{me}1"))]);
        let dynamics = dynamics(&turns);
        assert_eq!(dynamics.unargued, 0);
        assert_eq!(dynamics.shifts[0].new_arguments, ["B3"]);
        assert_eq!(hollow_agreement(&turns, 2), None);
    }

    #[test]
    fn a_new_attack_on_the_seats_own_argument_makes_it_argued() {
        let turns = converging(|me, other| vec![attack(&format!("{me}3"), &format!("{other}1"))]);
        assert_eq!(dynamics(&turns).shifts[0].new_arguments, ["B3"]);
        assert_eq!(hollow_agreement(&turns, 2), None);
    }

    #[test]
    fn what_a_seat_could_not_have_seen_does_not_count_and_what_it_first_weighs_does() {
        // B's support is said in the same parallel phase as A's concession: A never saw it.
        // B's claim, said beside A's round-1 claim, A weighs for the first time in round 2:
        // conceding it then answers something new.
        let turns = vec![
            turn("A", 1, Phase::Argument, vec![claim("A1")]),
            turn("B", 1, Phase::Argument, vec![claim("B1")]),
            turn("B", 2, Phase::Argument, vec![support("B3", "B1")]),
            turn("A", 2, Phase::Argument, vec![concede("B1")]),
        ];
        let found = dynamics(&turns);
        assert_eq!(found.shifts[0].new_arguments, ["B1"]);
        assert_eq!(found.shifts[0].held_in_round, Some(1));
        assert_eq!(hollow_agreement(&turns, 2), None);
        // Conceded in the very step it was said: nothing A had read.
        let turns = vec![
            turn(
                "B",
                1,
                Phase::Argument,
                vec![claim("B1"), support("B2", "B1")],
            ),
            turn("A", 1, Phase::Argument, vec![concede("B1")]),
        ];
        assert!(dynamics(&turns).shifts[0].new_arguments.is_empty());
        assert!(hollow_agreement(&turns, 1).is_some());
    }

    #[test]
    fn unargued_concessions_to_what_most_others_hold_are_conformity_and_the_first_speaker_is_counted()
     {
        // A claims first; B concedes it with a reason before it (argued); C holds its ground
        // in round 2, having seen that reason, then concedes with nothing new: A and B hold
        // it, 2 of C's 2 others.
        let turns = vec![
            turn("A", 1, Phase::Argument, vec![claim("A1")]),
            turn("B", 1, Phase::Argument, vec![claim("B1")]),
            turn("C", 1, Phase::Argument, vec![claim("C1")]),
            turn("A", 1, Phase::Rebuttal, vec![support("A2", "A1")]),
            turn("B", 2, Phase::Argument, vec![concede("A1")]),
            turn("C", 2, Phase::Argument, vec![claim("C3")]),
            turn("C", 3, Phase::Argument, vec![concede("A1")]),
        ];
        let dynamics = dynamics(&turns);
        assert_eq!(dynamics.shifts.len(), 2);
        assert!(dynamics.shifts[0].argued());
        assert!(!dynamics.shifts[0].to_majority);
        assert!(!dynamics.shifts[1].argued());
        assert!(dynamics.shifts[1].to_majority);
        assert_eq!((dynamics.unargued, dynamics.to_majority), (1, 1));
        let anchoring = dynamics.anchoring.clone().expect("three seats");
        assert_eq!(anchoring.first_speaker, "A");
        assert_eq!((anchoring.concessions, anchoring.to_first_speaker), (2, 2));
        assert!((anchoring.by_chance - 1.0).abs() < 1e-9);
        assert_eq!(
            dynamics.summary(),
            "2 shifts of position (1 with no new argument behind it, 1 of those to what most \
             other seats held); 2 of 2 concessions went to the first speaker, seat A (1.0 by chance)"
        );
    }

    #[test]
    fn no_shift_means_no_hollow_agreement_and_no_summary() {
        let turns = vec![
            turn("A", 1, Phase::Argument, vec![claim("A1")]),
            turn("B", 1, Phase::Argument, vec![attack("B1", "A1")]),
        ];
        assert_eq!(hollow_agreement(&turns, 1), None);
        assert_eq!(dynamics(&turns).summary(), "");
        // A seat conceding its own argument is no concession; a lapse is moot's, not the seat's.
        let turns = vec![
            turn("A", 1, Phase::Argument, vec![claim("A1"), concede("A1")]),
            turn(
                "B",
                1,
                Phase::Lapse,
                vec![said("", Act::Retract, &["B1"], None)],
            ),
        ];
        assert!(dynamics(&turns).shifts.is_empty());
    }
}
