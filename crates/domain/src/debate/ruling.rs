//! The moderator's ruling on a round of a formal dialogue, as its turn's `data` keeps it: the
//! arguments struck as weak (design note 002, "the Moderator rejects weak arguments") and the
//! moves that attack the speaker instead of the argument ("no ad hominem").

use super::{Phase, Turn};
use serde::{Deserialize, Serialize};

/// One move the moderator ruled on, the side that made it, and why.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Ruled {
    /// The move's id (`P3`, `O2.1`).
    pub id: String,
    /// The side that made it (`PRO`, `OPP`).
    pub side: String,
    pub reason: String,
}

/// What the moderator ruled after one round.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Ruling {
    /// Arguments struck as weak: they keep their place in the record but carry no weight, and
    /// their line is closed.
    #[serde(default)]
    pub struck: Vec<Ruled>,
    /// Moves that attack the speaker rather than the argument: each counts as a violation.
    #[serde(default)]
    pub ad_hominem: Vec<Ruled>,
}

impl Ruling {
    /// The ruling a turn carries, when it is a moderator's ruling with a readable one.
    pub fn of(turn: &Turn) -> Option<Ruling> {
        if turn.phase != Phase::Ruling {
            return None;
        }
        turn.data
            .as_ref()
            .and_then(|data| serde_json::from_value(data.clone()).ok())
    }

    /// Every argument struck in these turns, by id.
    pub fn struck_in(turns: &[Turn]) -> Vec<Ruled> {
        turns
            .iter()
            .filter_map(Ruling::of)
            .flat_map(|ruling| ruling.struck)
            .collect()
    }

    /// Whether `turn` is a ruling that says anything about `side`'s moves, read in place (the
    /// workbench asks this of every turn each frame; nothing is copied or parsed).
    pub fn turn_names(turn: &Turn, side: &str) -> bool {
        if turn.phase != Phase::Ruling {
            return false;
        }
        let Some(data) = &turn.data else {
            return false;
        };
        ["struck", "ad_hominem"].iter().any(|field| {
            data[*field]
                .as_array()
                .is_some_and(|ruled| ruled.iter().any(|r| r["side"] == side))
        })
    }

    pub fn is_empty(&self) -> bool {
        self.struck.is_empty() && self.ad_hominem.is_empty()
    }

    /// The ruling on `side`'s moves as lines a person reads: "P3 struck as weak: …".
    pub fn lines_for(&self, side: &str) -> Vec<String> {
        let struck = self
            .struck
            .iter()
            .filter(|r| r.side == side)
            .map(|r| format!("{} struck as weak: {}", r.id, r.reason));
        let attacks = self.ad_hominem.iter().filter(|r| r.side == side).map(|r| {
            format!(
                "{} attacks the speaker, not the argument: {}",
                r.id, r.reason
            )
        });
        struck.chain(attacks).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::debate::TurnKey;

    fn ruled(id: &str, side: &str) -> Ruled {
        Ruled {
            id: id.into(),
            side: side.into(),
            reason: "no evidence".into(),
        }
    }

    #[test]
    fn a_ruling_is_read_only_from_a_ruling_turn_and_names_its_sides() {
        let ruling = Ruling {
            struck: vec![ruled("P3", "PRO")],
            ad_hominem: vec![ruled("O4", "OPP")],
        };
        let mut turn = Turn::pending(TurnKey::new(1, Phase::Ruling, "moderator"), "p", "m");
        turn.data = serde_json::to_value(&ruling).ok();
        assert_eq!(Ruling::of(&turn), Some(ruling.clone()));
        assert_eq!(
            Ruling::struck_in(std::slice::from_ref(&turn)),
            ruling.struck
        );
        assert!(Ruling::turn_names(&turn, "PRO") && Ruling::turn_names(&turn, "OPP"));
        assert!(!Ruling::turn_names(&turn, "MOD"));
        assert_eq!(ruling.lines_for("PRO"), ["P3 struck as weak: no evidence"]);
        assert_eq!(
            ruling.lines_for("OPP"),
            ["O4 attacks the speaker, not the argument: no evidence"]
        );
        let mut other = turn.clone();
        other.phase = Phase::Verdict;
        assert_eq!(Ruling::of(&other), None);
    }
}
