//! Commitment stores of the persuasion dialogue, folded from the moves of every turn.

use crate::debate::{Act, Turn};
use serde::Serialize;
use std::collections::{HashMap, HashSet};

/// One proposition a seat is (or was) publicly committed to.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct Commitment {
    pub text: String,
    /// The move that added it (or, for a retraction, the move that withdrew it).
    pub move_id: String,
    /// True when the seat took it on by conceding another seat's point.
    pub conceded: bool,
}

/// A seat's current commitments and what it has retracted.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct CommitmentStore {
    pub seat: String,
    pub commitments: Vec<Commitment>,
    pub retractions: Vec<Commitment>,
}

/// Applies the effect rules, in journal order: `claim φ` and `concede φ` add φ; `φ since S`
/// adds φ and every premise in S; `retract φ` removes φ; `why φ` changes nothing.
pub fn commitment_stores(seats: &[String], turns: &[Turn]) -> Vec<CommitmentStore> {
    let mut stores: Vec<Folding> = seats.iter().map(|seat| Folding::new(seat)).collect();
    // Every move's proposition and act by id, so moves that answer by id can be resolved.
    let texts: HashMap<&str, &str> = turns
        .iter()
        .flat_map(|t| t.moves.iter().map(|m| (m.id.as_str(), m.text.as_str())))
        .collect();
    let acts: HashMap<&str, Act> = turns
        .iter()
        .flat_map(|t| t.moves.iter().map(|m| (m.id.as_str(), m.act)))
        .collect();
    for turn in turns {
        let Some(store) = stores.iter_mut().find(|s| s.seat == turn.seat) else {
            continue;
        };
        for mv in &turn.moves {
            match mv.act {
                Act::Claim => store.add(&mv.text, &mv.id, false),
                Act::Concede => {
                    if mv.text.trim().is_empty() {
                        // Conceding an argument by id commits to that argument's proposition.
                        for id in &mv.answers {
                            if let Some(text) = texts.get(id.as_str()) {
                                store.add(text, &mv.id, true);
                            }
                        }
                    } else {
                        store.add(&mv.text, &mv.id, true);
                    }
                }
                Act::Since => {
                    store.add(&mv.text, &mv.id, false);
                    for premise in &mv.premises {
                        store.add(premise, &mv.id, false);
                    }
                }
                Act::Retract => {
                    // Retracting a since-argument withdraws the argument: what that move
                    // asserted, not its conclusion where the side holds it by an earlier move
                    // (seed review 002/003 #1: retracting one reason withdrew the thesis). A
                    // retraction's own text is its target's, so it counts only for a plain one.
                    let of_argument = |id: &String| acts.get(id.as_str()) == Some(&Act::Since);
                    let mut targets: HashSet<String> = HashSet::new();
                    if !mv.answers.iter().any(of_argument) {
                        targets.insert(normalize(&mv.text));
                    }
                    for id in &mv.answers {
                        match acts.get(id.as_str()) {
                            // A why is the other side's question, not a commitment.
                            Some(Act::Why) => continue,
                            Some(Act::Since) => {}
                            _ => {
                                if let Some(text) = texts.get(id.as_str()) {
                                    targets.insert(normalize(text));
                                }
                            }
                        }
                        targets.extend(
                            store
                                .held
                                .iter()
                                .filter(|h| &h.commitment.move_id == id)
                                .map(|h| h.key.clone()),
                        );
                    }
                    store.retract(&targets, &mv.id);
                }
                Act::Why => {}
            }
        }
    }
    stores.into_iter().map(Folding::finish).collect()
}

/// A commitment with its normalized key, so matching does not re-normalize every time.
struct Held {
    key: String,
    commitment: Commitment,
}

/// A store while the moves are folded into it.
struct Folding {
    seat: String,
    held: Vec<Held>,
    keys: HashSet<String>,
    retractions: Vec<Held>,
}

impl Folding {
    fn new(seat: &str) -> Self {
        Folding {
            seat: seat.to_string(),
            held: Vec::new(),
            keys: HashSet::new(),
            retractions: Vec::new(),
        }
    }

    fn add(&mut self, text: &str, move_id: &str, conceded: bool) {
        let key = normalize(text);
        if key.is_empty() || self.keys.contains(&key) {
            return;
        }
        // Taking a proposition on again undoes an earlier retraction of it.
        self.retractions.retain(|r| r.key != key);
        self.keys.insert(key.clone());
        self.held.push(Held {
            key,
            commitment: Commitment {
                text: text.trim().to_string(),
                move_id: move_id.to_string(),
                conceded,
            },
        });
    }

    fn retract(&mut self, targets: &HashSet<String>, move_id: &str) {
        if !targets.iter().any(|t| self.keys.contains(t)) {
            return;
        }
        let (gone, kept): (Vec<Held>, Vec<Held>) = std::mem::take(&mut self.held)
            .into_iter()
            .partition(|h| targets.contains(&h.key));
        self.held = kept;
        for held in gone {
            self.keys.remove(&held.key);
            self.retractions.push(Held {
                key: held.key,
                commitment: Commitment {
                    text: held.commitment.text,
                    move_id: move_id.to_string(),
                    conceded: false,
                },
            });
        }
    }

    fn finish(self) -> CommitmentStore {
        CommitmentStore {
            seat: self.seat,
            commitments: self.held.into_iter().map(|h| h.commitment).collect(),
            retractions: self.retractions.into_iter().map(|h| h.commitment).collect(),
        }
    }
}

/// Case- and whitespace-insensitive form used to match propositions.
pub fn normalize(text: &str) -> String {
    text.split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| c.is_ascii_punctuation())
                .to_lowercase()
        })
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::debate::{Move, Phase, Relation};

    fn mv(id: &str, act: Act, text: &str) -> Move {
        Move {
            id: id.into(),
            act,
            text: text.into(),
            premises: vec![],
            answers: vec![],
            relation: None,
        }
    }

    fn turn(seat: &str, round: u32, moves: Vec<Move>) -> Turn {
        Turn {
            moves,
            ..Turn::fixture(seat, round, Phase::Argument)
        }
    }

    fn texts(store: &CommitmentStore) -> Vec<&str> {
        store.commitments.iter().map(|c| c.text.as_str()).collect()
    }

    #[test]
    fn claim_since_concede_retract_and_why_follow_the_effect_rules() {
        let mut since = mv("A1.2", Act::Since, "Redis is faster");
        since.premises = vec!["it is in memory".into(), "it avoids disk".into()];
        let mut concede = mv("B1.r1", Act::Concede, "");
        concede.answers = vec!["A1.1".into()];
        concede.relation = Some(Relation::Support);
        let mut why = mv("B1.r2", Act::Why, "it avoids disk");
        why.answers = vec!["A1.2".into()];
        let turns = vec![
            turn(
                "A",
                1,
                vec![mv("A1.1", Act::Claim, "Caching needs low latency"), since],
            ),
            turn("B", 1, vec![mv("B1.1", Act::Claim, "Fewer services win")]),
            turn("B", 1, vec![concede, why]),
            turn("A", 2, vec![mv("A2.1", Act::Retract, "It avoids disk.")]),
        ];
        let stores = commitment_stores(&["A".into(), "B".into()], &turns);
        assert_eq!(
            texts(&stores[0]),
            vec![
                "Caching needs low latency",
                "Redis is faster",
                "it is in memory"
            ]
        );
        assert_eq!(stores[0].retractions.len(), 1);
        assert_eq!(stores[0].retractions[0].text, "it avoids disk");
        assert_eq!(stores[0].retractions[0].move_id, "A2.1");
        // B conceded A1.1 by id, and its why added nothing.
        assert_eq!(
            texts(&stores[1]),
            vec!["Fewer services win", "Caching needs low latency"]
        );
        assert!(stores[1].commitments[1].conceded);
        assert!(stores[1].retractions.is_empty());
    }

    #[test]
    fn retract_by_id_drops_a_since_argument_and_its_premises() {
        let mut since = mv("A1.1", Act::Since, "Use Postgres");
        since.premises = vec!["we run it already".into()];
        let mut retract = mv("A2.1", Act::Retract, "");
        retract.answers = vec!["A1.1".into()];
        let turns = vec![turn("A", 1, vec![since]), turn("A", 2, vec![retract])];
        let stores = commitment_stores(&["A".into()], &turns);
        assert!(stores[0].commitments.is_empty());
        assert_eq!(stores[0].retractions.len(), 2);
    }

    /// Seed review 002/003 #1: PRO's thesis P1 stands by its own claim; retracting the since
    /// P3 that argued for it withdraws P3's reasons, not the thesis.
    #[test]
    fn retracting_an_argument_keeps_a_thesis_held_by_its_own_claim() {
        let mut since = mv("P3", Act::Since, "Adopt tower");
        since.premises = vec!["less code".into()];
        let mut retract = mv("P4", Act::Retract, "Adopt tower");
        retract.answers = vec!["P3".into()];
        let turns = vec![
            turn("PRO", 0, vec![mv("P1", Act::Claim, "Adopt tower")]),
            turn("PRO", 1, vec![since]),
            turn("PRO", 2, vec![retract]),
        ];
        let stores = commitment_stores(&["PRO".into()], &turns);
        assert_eq!(texts(&stores[0]), vec!["Adopt tower"]);
        let retracted: Vec<&str> = stores[0]
            .retractions
            .iter()
            .map(|c| c.text.as_str())
            .collect();
        assert_eq!(retracted, ["less code"]);
    }

    #[test]
    fn claiming_again_undoes_a_retraction_and_duplicates_are_kept_once() {
        let turns = vec![
            turn("A", 1, vec![mv("A1.1", Act::Claim, "X holds")]),
            turn("A", 1, vec![mv("A1.2", Act::Claim, "x holds!")]),
            turn("A", 2, vec![mv("A2.1", Act::Retract, "X holds")]),
            turn("A", 3, vec![mv("A3.1", Act::Claim, "X holds")]),
        ];
        let stores = commitment_stores(&["A".into()], &turns);
        assert_eq!(texts(&stores[0]), vec!["X holds"]);
        assert!(stores[0].retractions.is_empty());
    }
}
