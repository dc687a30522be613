//! Voting methods of design note 004: plurality, Borda, Condorcet (with a Borda fallback on a
//! cycle), unanimous, weighted, threshold, and the automatic choice among them by the number
//! of voters. Pure: ballots in, a tally out, ties broken by a stated rule that the tally
//! records.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// How the votes are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Most first places.
    Plurality,
    /// Rank 1 of N gets N−1 points … rank N gets 0; most points.
    Borda,
    /// The candidate that beats every other head to head; Borda on a cycle.
    Condorcet,
    /// Every voter's first place is the same one.
    Unanimous,
    /// First places weighted by the voter's confidence and weight.
    Weighted,
    /// The largest share of first places, if it reaches the threshold.
    Threshold,
    /// Unanimous under 3 voters, weighted for 3–5, Borda for 6 or more.
    Auto,
}

impl Method {
    pub const ALL: [Method; 7] = [
        Method::Plurality,
        Method::Borda,
        Method::Condorcet,
        Method::Unanimous,
        Method::Weighted,
        Method::Threshold,
        Method::Auto,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Method::Plurality => "plurality",
            Method::Borda => "borda",
            Method::Condorcet => "condorcet",
            Method::Unanimous => "unanimous",
            Method::Weighted => "weighted",
            Method::Threshold => "threshold",
            Method::Auto => "auto",
        }
    }

    /// Parses a method's name, or says which names there are.
    pub fn parse(text: &str) -> Result<Method, VoteError> {
        let text = text.trim().to_lowercase();
        Method::ALL
            .into_iter()
            .find(|m| m.name() == text)
            .ok_or(VoteError::UnknownMethod(text))
    }

    /// The method `auto` stands for with this many voters.
    pub fn resolve(self, voters: usize) -> Method {
        match self {
            Method::Auto if voters < 3 => Method::Unanimous,
            Method::Auto if voters <= 5 => Method::Weighted,
            Method::Auto => Method::Borda,
            other => other,
        }
    }
}

/// A voting word or share that cannot be used, said with what would be.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VoteError {
    #[error("unknown voting method {0:?}; use one of {methods}", methods = Method::ALL.map(Method::name).join(", "))]
    UnknownMethod(String),
    #[error("consensus_threshold must be more than 0.5 and at most 1, not {0}")]
    Threshold(f64),
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One voter's ranking, best first (it may leave candidates out; an empty one abstains).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ballot {
    pub voter: String,
    pub ranking: Vec<String>,
    /// 0–1.
    pub confidence: f64,
    /// The voter's weight from config (1 unless said otherwise).
    pub weight: f64,
}

impl Ballot {
    pub fn new(voter: &str, ranking: &[&str]) -> Ballot {
        Ballot {
            voter: voter.to_string(),
            ranking: ranking.iter().map(|s| s.to_string()).collect(),
            confidence: 1.0,
            weight: 1.0,
        }
    }
}

/// A share as a fraction, compared in whole numbers (0.67 from config is 2/3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Share {
    pub numerator: u32,
    pub denominator: u32,
}

impl Share {
    pub const TWO_THIRDS: Share = Share {
        numerator: 2,
        denominator: 3,
    };

    /// Whether `count` of `total` reaches it.
    pub fn reached(self, count: usize, total: usize) -> bool {
        total > 0
            && count as u64 * u64::from(self.denominator)
                >= u64::from(self.numerator) * total as u64
    }

    /// The fraction a decimal from config means: the simplest fraction with a denominator up
    /// to 12 within half a hundredth of it (0.67 is two thirds, as the notes intend), else the
    /// decimal in thousandths. Must lie in (0.5, 1].
    pub fn from_decimal(value: f64) -> Result<Share, VoteError> {
        if !(value > 0.5 && value <= 1.0) {
            return Err(VoteError::Threshold(value));
        }
        for denominator in 1..=12u32 {
            let numerator = (value * f64::from(denominator)).round() as u32;
            let fraction = f64::from(numerator) / f64::from(denominator);
            if (fraction - value).abs() < 0.005 && fraction > 0.5 {
                return Ok(Share {
                    numerator,
                    denominator,
                });
            }
        }
        Ok(Share {
            numerator: (value * 1000.0).round() as u32,
            denominator: 1000,
        })
    }
}

impl std::fmt::Display for Share {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.numerator, self.denominator)
    }
}

/// How a tie was broken.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TieBreak {
    pub tied: Vec<String>,
    pub rule: String,
    pub chosen: String,
}

/// The count and its outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tally {
    /// The method asked for, and the one that counted (`auto` resolved).
    pub requested: Method,
    pub method: Method,
    pub candidates: Vec<String>,
    pub winner: Option<String>,
    pub consensus_reached: bool,
    /// Points per candidate, in candidate order: first places (plurality, threshold,
    /// unanimous), weighted first places, or Borda points (Borda, and Condorcet's fallback).
    pub points: Vec<f64>,
    /// Condorcet's pairwise matrix: `matrix[i][j]` voters rank candidate i above j.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matrix: Option<Vec<Vec<u32>>>,
    /// Condorcet found a cycle and Borda decided.
    #[serde(default)]
    pub fallback_used: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tie: Option<TieBreak>,
    /// Unanimous without agreement: each voter's first place.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disagreements: Vec<(String, String)>,
    /// Voters whose ballots named no candidate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub abstentions: Vec<String>,
    pub voters: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<Share>,
}

/// The stated tie-break: more first places, then more Borda points, then the earlier
/// candidate in the order they were put forward.
pub const TIE_RULE: &str =
    "more first places, then more Borda points, then the earlier candidate in the given order";

/// Counts `ballots` over `candidates` by `method`. Unknown and repeated candidates in a
/// ballot are dropped (the first mention counts); a ballot left empty abstains.
pub fn tally(method: Method, candidates: &[String], ballots: &[Ballot], threshold: Share) -> Tally {
    let index: HashMap<&str, usize> = candidates
        .iter()
        .enumerate()
        .map(|(i, c)| (c.as_str(), i))
        .collect();
    let mut abstentions = Vec::new();
    // Each valid ballot as candidate positions, best first.
    let mut clean: Vec<(&Ballot, Vec<usize>)> = Vec::new();
    for ballot in ballots {
        let mut seen = vec![false; candidates.len()];
        let ranking: Vec<usize> = ballot
            .ranking
            .iter()
            .filter_map(|c| index.get(c.trim()).copied())
            .filter(|&i| !std::mem::replace(&mut seen[i], true))
            .collect();
        if ranking.is_empty() {
            abstentions.push(ballot.voter.clone());
        } else {
            clean.push((ballot, ranking));
        }
    }
    let voters = clean.len();
    let resolved = method.resolve(voters);
    let n = candidates.len();
    let firsts: Vec<f64> = {
        let mut counts = vec![0.0; n];
        for (_, ranking) in &clean {
            counts[ranking[0]] += 1.0;
        }
        counts
    };
    let borda: Vec<f64> = {
        let mut points = vec![0.0; n];
        for (_, ranking) in &clean {
            for (rank, &c) in ranking.iter().enumerate() {
                points[c] += (n - 1 - rank) as f64;
            }
        }
        points
    };
    let mut out = Tally {
        requested: method,
        method: resolved,
        candidates: candidates.to_vec(),
        winner: None,
        consensus_reached: false,
        points: firsts.clone(),
        matrix: None,
        fallback_used: false,
        tie: None,
        disagreements: Vec::new(),
        abstentions,
        voters,
        threshold: None,
    };
    if n == 0 || voters == 0 {
        return out;
    }
    let pick = |points: &[f64], out: &mut Tally| {
        let best = points.iter().copied().fold(f64::MIN, f64::max);
        let tied: Vec<usize> = (0..n)
            .filter(|&i| (points[i] - best).abs() < 1e-9)
            .collect();
        let chosen = if tied.len() == 1 {
            tied[0]
        } else {
            let chosen = *tied
                .iter()
                .max_by(|&&a, &&b| {
                    firsts[a]
                        .total_cmp(&firsts[b])
                        .then(borda[a].total_cmp(&borda[b]))
                        .then(b.cmp(&a))
                })
                .unwrap_or(&tied[0]);
            out.tie = Some(TieBreak {
                tied: tied.iter().map(|&i| candidates[i].clone()).collect(),
                rule: TIE_RULE.into(),
                chosen: candidates[chosen].clone(),
            });
            chosen
        };
        out.winner = Some(candidates[chosen].clone());
        out.consensus_reached = true;
    };
    match resolved {
        // `Auto` is resolved above and never reaches here.
        Method::Plurality | Method::Auto => pick(&firsts, &mut out),
        Method::Borda => {
            out.points = borda.clone();
            pick(&borda, &mut out);
        }
        Method::Weighted => {
            let mut weighted = vec![0.0; n];
            for (ballot, ranking) in &clean {
                weighted[ranking[0]] += ballot.confidence.clamp(0.0, 1.0) * ballot.weight.max(0.0);
            }
            out.points = weighted.clone();
            pick(&weighted, &mut out);
        }
        Method::Unanimous => {
            let first = clean[0].1[0];
            if clean.iter().all(|(_, r)| r[0] == first) {
                out.winner = Some(candidates[first].clone());
                out.consensus_reached = true;
            } else {
                out.disagreements = clean
                    .iter()
                    .map(|(b, r)| (b.voter.clone(), candidates[r[0]].clone()))
                    .collect();
            }
        }
        Method::Threshold => {
            out.threshold = Some(threshold);
            let best = firsts.iter().copied().fold(0.0, f64::max);
            let leaders: Vec<usize> = (0..n).filter(|&i| firsts[i] == best).collect();
            // A tie for the largest share is no consensus: nobody holds it alone.
            if leaders.len() == 1 && threshold.reached(best as usize, voters) {
                out.winner = Some(candidates[leaders[0]].clone());
                out.consensus_reached = true;
            }
        }
        Method::Condorcet => {
            let mut matrix = vec![vec![0u32; n]; n];
            let mut position = vec![usize::MAX; n];
            for (_, ranking) in &clean {
                position.iter_mut().for_each(|p| *p = usize::MAX);
                for (rank, &c) in ranking.iter().enumerate() {
                    position[c] = rank;
                }
                // Ranked above unranked; two unranked candidates are not compared.
                for (rank, &a) in ranking.iter().enumerate() {
                    let row = &mut matrix[a];
                    for (b, cell) in row.iter_mut().enumerate() {
                        if position[b] > rank {
                            *cell += 1;
                        }
                    }
                }
            }
            let beats_all = (0..n).find(|&i| (0..n).all(|j| j == i || matrix[i][j] > matrix[j][i]));
            out.matrix = Some(matrix);
            match beats_all {
                Some(winner) => {
                    out.winner = Some(candidates[winner].clone());
                    out.consensus_reached = true;
                }
                None => {
                    out.fallback_used = true;
                    out.points = borda.clone();
                    pick(&borda, &mut out);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidates(ids: &[&str]) -> Vec<String> {
        ids.iter().map(|s| s.to_string()).collect()
    }

    fn count(method: Method, ids: &[&str], ballots: &[Ballot]) -> Tally {
        tally(method, &candidates(ids), ballots, Share::TWO_THIRDS)
    }

    #[test]
    fn every_method_on_one_table() {
        // Five voters over A, B, C: A leads on first places, B is everyone's second choice.
        let ballots = vec![
            Ballot::new("v1", &["A", "B", "C"]),
            Ballot::new("v2", &["A", "B", "C"]),
            Ballot::new("v3", &["C", "B", "A"]),
            Ballot::new("v4", &["B", "C", "A"]),
            Ballot::new("v5", &["C", "B", "A"]),
        ];
        let cases: &[(Method, Option<&str>, bool)] = &[
            // A and C have two first places each; C wins the tie on Borda points (A 4, C 5).
            (Method::Plurality, Some("C"), true),
            // Borda: A 4, B 6, C 5.
            (Method::Borda, Some("B"), true),
            // B beats A 3–2 and C 3–2 head to head.
            (Method::Condorcet, Some("B"), true),
            (Method::Unanimous, None, false),
            (Method::Threshold, None, false),
            // Five voters: auto is weighted, which with equal confidence is plurality.
            (Method::Auto, Some("C"), true),
        ];
        for (method, winner, consensus) in cases {
            let t = count(*method, &["A", "B", "C"], &ballots);
            assert_eq!(t.winner.as_deref(), *winner, "{method:?}: {t:?}");
            assert_eq!(t.consensus_reached, *consensus, "{method:?}");
            assert_eq!(t.voters, 5);
        }
        let borda = count(Method::Borda, &["A", "B", "C"], &ballots);
        assert_eq!(borda.points, vec![4.0, 6.0, 5.0]);
        let plurality = count(Method::Plurality, &["A", "B", "C"], &ballots);
        let tie = plurality.tie.unwrap();
        assert_eq!(
            (tie.tied, tie.chosen),
            (candidates(&["A", "C"]), "C".to_string())
        );
        let condorcet = count(Method::Condorcet, &["A", "B", "C"], &ballots);
        let m = condorcet.matrix.unwrap();
        assert_eq!((m[1][0], m[0][1], m[1][2], m[2][1]), (3, 2, 3, 2));
        assert!(!condorcet.fallback_used);
        assert_eq!(
            count(Method::Auto, &["A", "B", "C"], &ballots).method,
            Method::Weighted
        );
        let unanimous = count(Method::Unanimous, &["A", "B", "C"], &ballots);
        assert_eq!(unanimous.disagreements.len(), 5);
        assert_eq!(
            unanimous.disagreements[2],
            ("v3".to_string(), "C".to_string())
        );
    }

    #[test]
    fn a_condorcet_cycle_falls_back_to_borda_and_says_so() {
        // Rock-paper-scissors: A > B > C > A, 2 to 1 each.
        let ballots = vec![
            Ballot::new("v1", &["A", "B", "C"]),
            Ballot::new("v2", &["B", "C", "A"]),
            Ballot::new("v3", &["C", "A", "B"]),
        ];
        let t = count(Method::Condorcet, &["A", "B", "C"], &ballots);
        assert!(t.fallback_used);
        // Borda ties all three at 3; first places tie too; the earliest candidate wins.
        assert_eq!(t.points, vec![3.0, 3.0, 3.0]);
        assert_eq!(t.winner.as_deref(), Some("A"));
        assert_eq!(t.tie.unwrap().rule, TIE_RULE);
    }

    #[test]
    fn weighted_counts_confidence_and_weight() {
        let mut sure = Ballot::new("lead", &["B"]);
        sure.confidence = 0.9;
        sure.weight = 2.0;
        let mut unsure = Ballot::new("a", &["A"]);
        unsure.confidence = 0.5;
        let t = count(
            Method::Weighted,
            &["A", "B"],
            &[unsure.clone(), unsure, sure],
        );
        assert_eq!(t.points, vec![1.0, 1.8]);
        assert_eq!(t.winner.as_deref(), Some("B"));
    }

    #[test]
    fn threshold_is_an_exact_share_and_a_tie_is_no_consensus() {
        let two_of_three = [
            Ballot::new("r", &["A"]),
            Ballot::new("v", &["A"]),
            Ballot::new("e", &["B"]),
        ];
        let t = count(Method::Threshold, &["A", "B"], &two_of_three);
        assert_eq!(
            (t.winner.as_deref(), t.consensus_reached),
            (Some("A"), true)
        );
        let three_quarters = Share {
            numerator: 3,
            denominator: 4,
        };
        let t = tally(
            Method::Threshold,
            &candidates(&["A", "B"]),
            &two_of_three,
            three_quarters,
        );
        assert_eq!(t.winner, None);
        let tie = [Ballot::new("r", &["A"]), Ballot::new("v", &["B"])];
        assert_eq!(count(Method::Threshold, &["A", "B"], &tie).winner, None);
    }

    #[test]
    fn abstentions_unknown_and_repeated_candidates_and_empty_elections() {
        let ballots = vec![
            Ballot::new("blank", &[]),
            Ballot::new("stranger", &["Z"]),
            Ballot::new("echo", &["B", "B", "A"]),
            Ballot::new("partial", &["A"]),
        ];
        let t = count(Method::Borda, &["A", "B", "C"], &ballots);
        assert_eq!(t.abstentions, vec!["blank", "stranger"]);
        assert_eq!(t.voters, 2);
        // echo ranks B then A (its second B dropped): B 2, A 1; partial ranks A first: A +2.
        assert_eq!(t.points, vec![3.0, 2.0, 0.0]);
        let none = count(Method::Plurality, &["A"], &[Ballot::new("blank", &[])]);
        assert_eq!((none.winner, none.consensus_reached), (None, false));
        assert_eq!(count(Method::Condorcet, &[], &ballots).winner, None);
    }

    #[test]
    fn auto_picks_by_the_number_of_voters() {
        assert_eq!(Method::Auto.resolve(2), Method::Unanimous);
        assert_eq!(Method::Auto.resolve(3), Method::Weighted);
        assert_eq!(Method::Auto.resolve(5), Method::Weighted);
        assert_eq!(Method::Auto.resolve(6), Method::Borda);
        let two = [Ballot::new("a", &["A", "B"]), Ballot::new("b", &["A", "B"])];
        let t = count(Method::Auto, &["A", "B"], &two);
        assert_eq!(
            (t.method, t.winner.as_deref()),
            (Method::Unanimous, Some("A"))
        );
        assert!(Method::parse("Borda").is_ok());
        let err = Method::parse("instant-runoff").unwrap_err().to_string();
        assert!(
            err.contains("plurality, borda, condorcet, unanimous, weighted, threshold, auto"),
            "{err}"
        );
    }

    #[test]
    fn ranked_above_unranked_in_the_pairwise_matrix() {
        let t = count(
            Method::Condorcet,
            &["A", "B", "C"],
            &[Ballot::new("v", &["B"])],
        );
        let m = t.matrix.unwrap();
        assert_eq!((m[1][0], m[1][2], m[0][2], m[2][0]), (1, 1, 0, 0));
        assert_eq!(t.winner.as_deref(), Some("B"));
    }
}
