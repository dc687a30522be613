//! Commitment stores of the persuasion dialogue, folded from the moves of every turn.

use crate::debate::{Act, Turn};
use serde::Serialize;

/// One proposition a seat is (or was) publicly committed to.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Commitment {
    pub text: String,
    /// The move that added it (or, for a retraction, the move that withdrew it).
    pub move_id: String,
    /// True when the seat took it on by conceding another seat's point.
    pub conceded: bool,
}

/// A seat's current commitments and what it has retracted.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CommitmentStore {
    pub seat: String,
    pub commitments: Vec<Commitment>,
    pub retractions: Vec<Commitment>,
}

/// Applies the effect rules, in journal order: `claim φ` and `concede φ` add φ; `φ since S`
/// adds φ and every premise in S; `retract φ` removes φ; `why φ` changes nothing.
pub fn commitment_stores(seats: &[String], turns: &[Turn]) -> Vec<CommitmentStore> {
    let mut stores: Vec<CommitmentStore> = seats
        .iter()
        .map(|seat| CommitmentStore {
            seat: seat.clone(),
            commitments: Vec::new(),
            retractions: Vec::new(),
        })
        .collect();
    let texts = move_texts(turns);
    for turn in turns {
        let Some(store) = stores.iter_mut().find(|s| s.seat == turn.seat) else {
            continue;
        };
        for mv in &turn.moves {
            match mv.act {
                Act::Claim => store.add(&mv.text, &mv.id, false),
                Act::Concede => {
                    // Conceding an argument by id commits to that argument's proposition.
                    let conceded = mv
                        .answers
                        .iter()
                        .filter_map(|id| texts.iter().find(|(mid, _)| mid == id))
                        .map(|(_, text)| text.clone())
                        .collect::<Vec<_>>();
                    if conceded.is_empty() || !mv.text.trim().is_empty() {
                        store.add(&mv.text, &mv.id, true);
                    }
                    if mv.text.trim().is_empty() {
                        for text in conceded {
                            store.add(&text, &mv.id, true);
                        }
                    }
                }
                Act::Since => {
                    store.add(&mv.text, &mv.id, false);
                    for premise in &mv.premises {
                        store.add(premise, &mv.id, false);
                    }
                }
                Act::Retract => {
                    let mut targets = vec![normalize(&mv.text)];
                    for id in &mv.answers {
                        if let Some((_, text)) = texts.iter().find(|(mid, _)| mid == id) {
                            targets.push(normalize(text));
                        }
                        // Retracting a since-argument by id also drops what it asserted.
                        targets.extend(
                            store
                                .commitments
                                .iter()
                                .filter(|c| &c.move_id == id)
                                .map(|c| normalize(&c.text)),
                        );
                    }
                    store.retract(&targets, &mv.id);
                }
                Act::Why => {}
            }
        }
    }
    stores
}

impl CommitmentStore {
    fn add(&mut self, text: &str, move_id: &str, conceded: bool) {
        let key = normalize(text);
        if key.is_empty() || self.commitments.iter().any(|c| normalize(&c.text) == key) {
            return;
        }
        // Taking a proposition on again undoes an earlier retraction of it.
        self.retractions.retain(|c| normalize(&c.text) != key);
        self.commitments.push(Commitment {
            text: text.trim().to_string(),
            move_id: move_id.to_string(),
            conceded,
        });
    }

    fn retract(&mut self, targets: &[String], move_id: &str) {
        let mut removed = Vec::new();
        self.commitments.retain(|c| {
            let hit = targets.contains(&normalize(&c.text));
            if hit {
                removed.push(c.text.clone());
            }
            !hit
        });
        for text in removed {
            self.retractions.push(Commitment {
                text,
                move_id: move_id.to_string(),
                conceded: false,
            });
        }
    }
}

/// Every move's proposition by id, so moves that answer by id can be resolved.
fn move_texts(turns: &[Turn]) -> Vec<(String, String)> {
    turns
        .iter()
        .flat_map(|t| t.moves.iter().map(|m| (m.id.clone(), m.text.clone())))
        .collect()
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
    use crate::debate::{Move, Phase, Relation, TurnStatus};

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
            round,
            phase: Phase::Argument,
            seat: seat.into(),
            content: String::new(),
            moves,
            confidence: None,
            tokens_in: 0,
            tokens_out: 0,
            tokens_estimated: false,
            latency_ms: 0,
            provider: "test".into(),
            model: "test".into(),
            status: TurnStatus::Ok,
            data: None,
            note: None,
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
