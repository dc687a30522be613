//! The bipolar argumentation framework of a debate and its gradual scores.

use crate::debate::{Act, Relation, Turn};
use serde::Serialize;
use std::collections::HashMap;

/// A node of the graph: a `claim` or a `φ since S` move.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct Argument {
    pub id: String,
    pub seat: String,
    pub round: u32,
    pub text: String,
    pub score: f64,
    /// Withdrawn by its own seat; it keeps its place but no longer attacks or supports.
    pub retracted: bool,
    /// Struck by the moderator as weak (a formal dialogue's ruling): it keeps its place, scores
    /// 0, and no longer attacks or supports.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub struck: bool,
    /// Seats that conceded it.
    pub conceded_by: Vec<String>,
    /// Ids of `why` moves that challenged it.
    pub challenged_by: Vec<String>,
}

/// An attack (rebut, undercut) or support between two arguments.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct Edge {
    pub from: String,
    pub to: String,
    pub kind: Relation,
}

#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, Default)]
pub struct ArgumentGraph {
    pub arguments: Vec<Argument>,
    pub relations: Vec<Edge>,
}

impl Argument {
    /// Out of the reckoning: retracted by its seat or struck by the moderator.
    pub fn withdrawn(&self) -> bool {
        self.retracted || self.struck
    }

    /// How it was withdrawn, as a label says it: `retracted`, `struck`; `None` while it stands.
    pub fn withdrawal(&self) -> Option<&'static str> {
        match (self.retracted, self.struck) {
            (true, _) => Some("retracted"),
            (false, true) => Some("struck"),
            _ => None,
        }
    }

    /// ` (retracted)`, ` (struck)`, or nothing while it stands: for after its text or score.
    pub fn withdrawn_note(&self) -> String {
        self.withdrawal()
            .map(|how| format!(" ({how})"))
            .unwrap_or_default()
    }

    /// `, retracted`, `, struck`, or nothing while it stands: for inside a parenthesis.
    pub fn withdrawn_clause(&self) -> String {
        self.withdrawal()
            .map(|how| format!(", {how}"))
            .unwrap_or_default()
    }
}

impl ArgumentGraph {
    pub fn get(&self, id: &str) -> Option<&Argument> {
        self.arguments.iter().find(|a| a.id == id)
    }

    /// Argument positions by id.
    pub fn index(&self) -> HashMap<&str, usize> {
        self.arguments
            .iter()
            .enumerate()
            .map(|(i, a)| (a.id.as_str(), i))
            .collect()
    }

    /// Every relation as (answering, answered) positions.
    pub fn edge_positions(&self) -> Vec<(usize, usize)> {
        let index = self.index();
        self.relations
            .iter()
            .filter_map(|e| Some((*index.get(e.from.as_str())?, *index.get(e.to.as_str())?)))
            .collect()
    }
}

crate::debate::vocabulary! {
    /// An indirect relation of the bipolar framework (design note 002).
    pub enum IndirectKind {
        /// X supports Y and Y attacks Z: X indirectly attacks Z.
        SupportedAttack,
        /// X attacks Y and Y supports Z: X indirectly weakens Z.
        SecondaryAttack,
    }
}

/// X reaches Z through Y.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct IndirectRelation {
    pub from: String,
    pub via: String,
    pub to: String,
    pub kind: IndirectKind,
}

/// The indirect attacks that the direct relations imply, in relation order, each once. A
/// retracted argument exerts no influence, so it starts or carries none; an argument never
/// indirectly attacks itself.
pub fn indirect_relations(graph: &ArgumentGraph) -> Vec<IndirectRelation> {
    let withdrawn = |id: &str| graph.get(id).is_none_or(Argument::withdrawn);
    let live: Vec<&Edge> = graph
        .relations
        .iter()
        .filter(|e| !withdrawn(&e.from) && !withdrawn(&e.to))
        .collect();
    let attacks = |kind: Relation| kind != Relation::Support;
    let mut found: Vec<IndirectRelation> = Vec::new();
    for first in &live {
        for second in live.iter().filter(|e| e.from == first.to) {
            let kind = match (first.kind, second.kind) {
                (Relation::Support, k) if attacks(k) => IndirectKind::SupportedAttack,
                (k, Relation::Support) if attacks(k) => IndirectKind::SecondaryAttack,
                _ => continue,
            };
            if first.from == second.to {
                continue;
            }
            let relation = IndirectRelation {
                from: first.from.clone(),
                via: first.to.clone(),
                to: second.to.clone(),
                kind,
            };
            if !found.contains(&relation) {
                found.push(relation);
            }
        }
    }
    found
}

/// Builds the graph from the turns' moves and scores it.
pub fn argument_graph(turns: &[Turn]) -> ArgumentGraph {
    let mut graph = ArgumentGraph::default();
    let mut index: HashMap<String, usize> = HashMap::new();
    for turn in turns {
        for mv in &turn.moves {
            if matches!(mv.act, Act::Claim | Act::Since) {
                let text = if mv.premises.is_empty() {
                    mv.text.trim().to_string()
                } else {
                    format!("{} since {}", mv.text.trim(), mv.premises.join("; "))
                };
                index.insert(mv.id.clone(), graph.arguments.len());
                graph.arguments.push(Argument {
                    id: mv.id.clone(),
                    seat: turn.seat.clone(),
                    round: turn.round,
                    text,
                    score: 0.5,
                    retracted: false,
                    struck: false,
                    conceded_by: Vec::new(),
                    challenged_by: Vec::new(),
                });
            }
        }
    }
    for turn in turns {
        for mv in &turn.moves {
            for target in &mv.answers {
                let Some(&to) = index.get(target) else {
                    continue;
                };
                match mv.act {
                    Act::Claim | Act::Since => {
                        if let Some(kind) = mv.relation
                            && target != &mv.id
                        {
                            graph.relations.push(Edge {
                                from: mv.id.clone(),
                                to: target.clone(),
                                kind,
                            });
                        }
                    }
                    Act::Concede => {
                        let by = &mut graph.arguments[to].conceded_by;
                        if !by.contains(&turn.seat) {
                            by.push(turn.seat.clone());
                        }
                    }
                    Act::Retract => {
                        if graph.arguments[to].seat == turn.seat {
                            graph.arguments[to].retracted = true;
                        }
                    }
                    Act::Why => graph.arguments[to].challenged_by.push(mv.id.clone()),
                }
            }
        }
    }
    // The moderator's rulings strike arguments after they were made; a struck one weighs
    // nothing and scores nothing.
    // Striking a `since` strikes its reasons with it (`P3.1` under `P3`): they were its case.
    for ruled in crate::debate::Ruling::struck_in(turns) {
        let premise = format!("{}.", ruled.id);
        for argument in &mut graph.arguments {
            if argument.id == ruled.id || argument.id.starts_with(&premise) {
                argument.struck = true;
            }
        }
    }
    let scores = gradual_scores(&graph);
    for (argument, score) in graph.arguments.iter_mut().zip(scores) {
        argument.score = if argument.struck { 0.0 } else { score };
    }
    graph
}

/// Gradual semantics of the formal-dialogue design: every argument starts at 0.5; each
/// supporter adds 0.2 × its score, each rebutter subtracts 0.3 × its score, each undercutter
/// 0.4 × its score; the result is clamped to [0, 1]. Iterates (all scores from the previous
/// pass) until the largest change is below 1e-6 or 100 passes. Retracted and struck arguments
/// exert no influence.
pub fn gradual_scores(graph: &ArgumentGraph) -> Vec<f64> {
    const BASE: f64 = 0.5;
    const EPSILON: f64 = 1e-6;
    const MAX_PASSES: usize = 100;
    let index = graph.index();
    // (target, source, weight) with the sign folded into the weight.
    let influences: Vec<(usize, usize, f64)> = graph
        .relations
        .iter()
        .filter_map(|edge| {
            let from = *index.get(edge.from.as_str())?;
            let to = *index.get(edge.to.as_str())?;
            if graph.arguments[from].withdrawn() {
                return None;
            }
            let weight = match edge.kind {
                Relation::Support => 0.2,
                Relation::Rebut => -0.3,
                Relation::Undercut => -0.4,
            };
            Some((to, from, weight))
        })
        .collect();
    // Floating-point sums depend on their order: each target adds its sources in the order
    // of their ids, so the scores are the same whichever order the turns arrived in (a live
    // run and an audit's re-run of it must agree to the last bit).
    let mut influences = influences;
    influences.sort_by(|a, b| {
        graph.arguments[a.1]
            .id
            .cmp(&graph.arguments[b.1].id)
            .then(a.0.cmp(&b.0))
    });
    let mut scores = vec![BASE; graph.arguments.len()];
    for _ in 0..MAX_PASSES {
        let mut next = vec![BASE; scores.len()];
        for &(to, from, weight) in &influences {
            next[to] += weight * scores[from];
        }
        let mut largest_change: f64 = 0.0;
        for (value, old) in next.iter_mut().zip(&scores) {
            *value = value.clamp(0.0, 1.0);
            largest_change = largest_change.max((*value - old).abs());
        }
        scores = next;
        if largest_change < EPSILON {
            break;
        }
    }
    scores
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A score is the same to the last bit whatever order the supporting turns arrived in
    /// (N11: a live run and its re-run summed 0.2 × 0.864 + 0.2 × 0.8 + 0.2 × 0.832 in
    /// different orders and parted by one ULP).
    #[test]
    fn scores_do_not_depend_on_the_order_turns_arrived_in() {
        let claim = |id: &str, answers: &[&str]| {
            argument(
                id,
                "X",
                answers,
                (!answers.is_empty()).then_some(Relation::Support),
            )
        };
        // O1 supported by O2 (three supporters, one of them supported twice), O3 (three) and
        // O4 (three, one of them supported once): 0.864, 0.8 and 0.832.
        let a = turn("A", vec![claim("O1", &[])]);
        let b = turn(
            "B",
            vec![
                claim("O2", &["O1"]),
                claim("O2.1", &["O2"]),
                claim("O2.2", &["O2"]),
                claim("O2.3", &["O2"]),
                claim("O5", &["O2.3"]),
                claim("O7", &["O2.3"]),
                claim("O5.1", &["O5"]),
                claim("O5.2", &["O5"]),
                claim("O5.3", &["O5"]),
                claim("O7.1", &["O7"]),
                claim("O7.2", &["O7"]),
                claim("O7.3", &["O7"]),
            ],
        );
        let c = turn(
            "C",
            vec![
                claim("O3", &["O1"]),
                claim("O3.1", &["O3"]),
                claim("O3.2", &["O3"]),
                claim("O3.3", &["O3"]),
            ],
        );
        let d = turn(
            "D",
            vec![
                claim("O4", &["O1"]),
                claim("O4.1", &["O4"]),
                claim("O4.2", &["O4"]),
                claim("O4.3", &["O4"]),
                claim("O6", &["O4.2"]),
                claim("O6.1", &["O6"]),
                claim("O6.2", &["O6"]),
                claim("O6.3", &["O6"]),
            ],
        );
        let score = |turns: &[Turn]| argument_graph(turns).get("O1").unwrap().score.to_bits();
        let first = score(&[a.clone(), b.clone(), c.clone(), d.clone()]);
        for order in [
            [a.clone(), c.clone(), b.clone(), d.clone()],
            [a.clone(), d.clone(), c.clone(), b.clone()],
            [a.clone(), c.clone(), d.clone(), b.clone()],
        ] {
            assert_eq!(score(&order), first);
        }
    }
    use crate::debate::{Move, Phase};

    fn argument(id: &str, _seat: &str, answers: &[&str], relation: Option<Relation>) -> Move {
        Move {
            id: id.into(),
            act: Act::Claim,
            text: format!("text of {id}"),
            premises: vec![],
            answers: answers.iter().map(|s| s.to_string()).collect(),
            relation,
        }
    }

    fn turn(seat: &str, moves: Vec<Move>) -> Turn {
        Turn {
            moves,
            ..Turn::fixture(seat, 1, Phase::Argument)
        }
    }

    fn score(graph: &ArgumentGraph, id: &str) -> f64 {
        graph.get(id).unwrap().score
    }

    #[test]
    fn a_lone_argument_scores_the_base() {
        let graph = argument_graph(&[turn("A", vec![argument("a", "A", &[], None)])]);
        assert_eq!(score(&graph, "a"), 0.5);
    }

    #[test]
    fn one_supporter_one_rebutter_one_undercutter_by_hand() {
        // b supports a, c rebuts a, d undercuts a; b, c, d are unattacked (0.5 each).
        // a = 0.5 + 0.2*0.5 - 0.3*0.5 - 0.4*0.5 = 0.25
        let graph = argument_graph(&[
            turn(
                "A",
                vec![
                    argument("a", "A", &[], None),
                    argument("b", "A", &["a"], Some(Relation::Support)),
                ],
            ),
            turn(
                "B",
                vec![
                    argument("c", "B", &["a"], Some(Relation::Rebut)),
                    argument("d", "B", &["a"], Some(Relation::Undercut)),
                ],
            ),
        ]);
        assert!((score(&graph, "a") - 0.25).abs() < 1e-9);
        assert_eq!(score(&graph, "b"), 0.5);
        assert_eq!(graph.relations.len(), 3);
    }

    #[test]
    fn chains_propagate_and_clamp() {
        // c undercuts b, b rebuts a: c = 0.5, b = 0.5 - 0.4*0.5 = 0.3, a = 0.5 - 0.3*0.3 = 0.41
        let graph = argument_graph(&[
            turn("A", vec![argument("a", "A", &[], None)]),
            turn("B", vec![argument("b", "B", &["a"], Some(Relation::Rebut))]),
            turn(
                "A",
                vec![argument("c", "A", &["b"], Some(Relation::Undercut))],
            ),
        ]);
        assert!((score(&graph, "b") - 0.3).abs() < 1e-9);
        assert!((score(&graph, "a") - 0.41).abs() < 1e-9);
        // Five supporters push past 1 and are clamped: 0.5 + 5*0.2*0.5 = 1.0
        let mut moves = vec![argument("t", "A", &[], None)];
        for i in 0..6 {
            moves.push(argument(
                &format!("s{i}"),
                "A",
                &["t"],
                Some(Relation::Support),
            ));
        }
        let graph = argument_graph(&[turn("A", moves)]);
        assert_eq!(score(&graph, "t"), 1.0);
    }

    #[test]
    fn mutual_attack_converges_to_the_fixed_point() {
        // a and b rebut each other: x = 0.5 - 0.3x  =>  x = 0.5/1.3
        let graph = argument_graph(&[
            turn("A", vec![argument("a", "A", &["b"], Some(Relation::Rebut))]),
            turn("B", vec![argument("b", "B", &["a"], Some(Relation::Rebut))]),
        ]);
        let expected = 0.5 / 1.3;
        assert!(
            (score(&graph, "a") - expected).abs() < 1e-5,
            "{}",
            score(&graph, "a")
        );
        assert!((score(&graph, "b") - expected).abs() < 1e-5);
    }

    #[test]
    fn retracted_attackers_lose_their_force_and_concessions_are_recorded() {
        let mut retract = argument("r", "B", &["b"], None);
        retract.act = Act::Retract;
        let mut concede = argument("k", "B", &["a"], None);
        concede.act = Act::Concede;
        let mut why = argument("w", "B", &["a"], None);
        why.act = Act::Why;
        let graph = argument_graph(&[
            turn("A", vec![argument("a", "A", &[], None)]),
            turn("B", vec![argument("b", "B", &["a"], Some(Relation::Rebut))]),
            turn("B", vec![retract, concede, why]),
        ]);
        assert_eq!(score(&graph, "a"), 0.5);
        assert!(graph.get("b").unwrap().retracted);
        assert_eq!(graph.get("a").unwrap().conceded_by, vec!["B".to_string()]);
        assert_eq!(graph.get("a").unwrap().challenged_by, vec!["w".to_string()]);
        // Only claims and since-moves are arguments.
        assert_eq!(graph.arguments.len(), 2);
    }

    #[test]
    fn indirect_relations_on_a_hand_built_graph() {
        // s supports a; a rebuts t; u undercuts s; t supports v; w rebuts t.
        // supported attack: s → t (via a).
        // secondary attacks: u → a (via s), a → v (via t), w → v (via t).
        let retracted = argument("x", "B", &["a"], Some(Relation::Support));
        let mut withdraw = argument("xr", "B", &["x"], None);
        withdraw.act = Act::Retract;
        let graph = argument_graph(&[
            turn(
                "A",
                vec![
                    argument("t", "B", &[], None),
                    argument("a", "A", &["t"], Some(Relation::Rebut)),
                    argument("s", "A", &["a"], Some(Relation::Support)),
                ],
            ),
            turn(
                "B",
                vec![
                    argument("v", "B", &[], None),
                    argument("u", "B", &["s"], Some(Relation::Undercut)),
                    argument("w", "B", &["t"], Some(Relation::Rebut)),
                    retracted,
                ],
            ),
            turn("B", vec![withdraw]),
        ]);
        let mut graph = graph;
        graph.relations.push(Edge {
            from: "t".into(),
            to: "v".into(),
            kind: Relation::Support,
        });
        let relations = indirect_relations(&graph);
        let found: Vec<(&str, &str, &str, IndirectKind)> = relations
            .iter()
            .map(|r| (r.from.as_str(), r.via.as_str(), r.to.as_str(), r.kind))
            .collect();
        let expect = |f, v, t, k| found.contains(&(f, v, t, k));
        assert!(
            expect("s", "a", "t", IndirectKind::SupportedAttack),
            "{found:?}"
        );
        assert!(
            expect("u", "s", "a", IndirectKind::SecondaryAttack),
            "{found:?}"
        );
        assert!(
            expect("a", "t", "v", IndirectKind::SecondaryAttack),
            "{found:?}"
        );
        assert!(
            expect("w", "t", "v", IndirectKind::SecondaryAttack),
            "{found:?}"
        );
        // x is retracted: its support of a (which rebuts t) carries no supported attack.
        assert!(!found.iter().any(|r| r.0 == "x"), "{found:?}");
        assert_eq!(found.len(), 4, "{found:?}");
    }

    #[test]
    fn answers_to_unknown_ids_make_no_edges() {
        let graph = argument_graph(&[turn(
            "A",
            vec![argument("a", "A", &["nope"], Some(Relation::Rebut))],
        )]);
        assert!(graph.relations.is_empty());
    }
}
