//! The dialogue's verdict as the journal computes it: side scores, surviving arguments,
//! concessions, unanswered whys, commitment stores, quality metrics (the moderator's reading
//! of it is a reply, `replies`; the report, `result`).

use super::rules::{Kind, Side, State};
use crate::argue::{
    Argument, CommitmentStore, Edge, IndirectRelation, argument_graph, commitment_stores,
    indirect_relations,
};
use crate::debate::{Act, Phase, Relation, Turn};
use serde::{Deserialize, Serialize};

/// An argument above this score survived.
pub const SURVIVES: f64 = 0.5;
/// Side scores closer than this are a draw.
pub const DRAW_MARGIN: f64 = 0.01;

/// A side's score and what it rests on.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SideScore {
    pub side: String,
    /// The argument the score is read from (its thesis), if the side stated one.
    pub thesis: Option<String>,
    pub score: f64,
    /// How it was read, in a clause.
    pub basis: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ScoredArgument {
    pub id: String,
    pub side: String,
    pub text: String,
    pub score: f64,
}

/// A concession that weakens the side that made it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Concession {
    pub side: String,
    pub move_id: String,
    pub conceded: String,
    pub text: String,
}

/// A `why` never answered: an unaddressed critical question.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct OpenWhy {
    pub id: String,
    pub asked_by: String,
    pub target: String,
    pub text: String,
}

/// The note's quality metrics.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Metrics {
    pub arguments: usize,
    pub attacks: usize,
    pub rebuts: usize,
    pub undercuts: usize,
    pub supports: usize,
    pub indirect_attacks: usize,
    pub concessions: usize,
    pub retractions: usize,
    pub violations: usize,
    pub unaddressed_whys: usize,
}

/// What the journal says, before any model weighs in.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Computed {
    pub pro: SideScore,
    pub opp: SideScore,
    /// `PRO`, `OPP` or `DRAW`.
    pub winner: String,
    /// `concession`, `retraction` or `scores`.
    pub decided_by: String,
    /// The move that settled it, when a concession or retraction did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decisive_move: Option<String>,
    pub survived: Vec<ScoredArgument>,
    pub concessions: Vec<Concession>,
    pub unaddressed: Vec<OpenWhy>,
    pub commitment_stores: Vec<CommitmentStore>,
    pub arguments: Vec<Argument>,
    pub relations: Vec<Edge>,
    pub indirect: Vec<IndirectRelation>,
    pub metrics: Metrics,
    /// Arguments the moderator struck as weak, with its reasons.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub struck: Vec<crate::debate::Ruled>,
    /// Retractions the rules imposed for whys left unanswered past their grace: the move ids.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lapsed: Vec<String>,
}

/// A side that gave up its thesis: (the side, by concession or retraction, the move).
pub fn surrender(state: &State) -> Option<(Side, &'static str, String)> {
    let thesis = |side: Side| thesis_of(state, side);
    for node in &state.nodes {
        let other = node.side.other();
        match node.kind {
            Kind::Concede if node.target.is_some() && node.target == thesis(other) => {
                return Some((node.side, "concession", node.id.clone()));
            }
            Kind::Retract if node.target.is_some() && node.target == thesis(node.side) => {
                return Some((node.side, "retraction", node.id.clone()));
            }
            _ => {}
        }
    }
    None
}

/// A side's thesis: PRO's opening claim φ; OPP's opening claim ¬φ, if it made one (an OPP
/// that opened with `why φ` holds no thesis of its own).
pub fn thesis_of(state: &State, side: Side) -> Option<String> {
    state
        .nodes
        .iter()
        .find(|n| n.side == side && n.phase == Phase::Opening && n.kind == Kind::Claim)
        .map(|n| n.id.clone())
}

/// The arguments that survive (not retracted, scoring above the line), strongest first.
fn survivors(graph: &crate::argue::ArgumentGraph) -> Vec<ScoredArgument> {
    let mut list: Vec<ScoredArgument> = graph
        .arguments
        .iter()
        .filter(|a| !a.withdrawn() && a.score > SURVIVES)
        .map(|a| ScoredArgument {
            id: a.id.clone(),
            side: a.seat.clone(),
            text: a.text.clone(),
            score: a.score,
        })
        .collect();
    list.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.id.cmp(&b.id)));
    list
}

/// Every concession made, by whom and of what.
fn concessions(state: &State) -> Vec<Concession> {
    state
        .nodes
        .iter()
        .filter(|n| n.kind == Kind::Concede)
        .map(|n| Concession {
            side: n.side.seat().into(),
            move_id: n.id.clone(),
            conceded: n.target.clone().unwrap_or_default(),
            text: n.text.clone(),
        })
        .collect()
}

/// Every `why` still open at the end.
fn unaddressed(state: &State) -> Vec<OpenWhy> {
    state
        .open_whys()
        .into_iter()
        .map(|n| OpenWhy {
            id: n.id.clone(),
            asked_by: n.side.seat().into(),
            target: n.target.clone().unwrap_or_default(),
            text: n.text.clone(),
        })
        .collect()
}

/// Computes the verdict from the dialogue's turns and the number of rejected moves.
pub fn compute(seats: &[String], turns: &[Turn], violations: usize) -> Computed {
    // The moves, and the moderator's rulings that strike some of them.
    let debater: Vec<Turn> = turns
        .iter()
        .filter(|t| t.phase.is_debater() || t.phase == Phase::Ruling)
        .cloned()
        .collect();
    let state = State::from_turns(&debater);
    let graph = argument_graph(&debater);
    let indirect = indirect_relations(&graph);
    let score_of = |id: &str| {
        graph
            .get(id)
            .map_or(0.0, |a| if a.withdrawn() { 0.0 } else { a.score })
    };
    let pro_thesis = thesis_of(&state, Side::Pro);
    let opp_thesis = thesis_of(&state, Side::Opp);
    let pro = SideScore {
        side: "PRO".into(),
        score: pro_thesis.as_deref().map_or(0.0, score_of),
        basis: match &pro_thesis {
            Some(id) => format!("the score of its thesis {id}"),
            None => "no thesis was stated".into(),
        },
        thesis: pro_thesis.clone(),
    };
    let opp = match &opp_thesis {
        Some(id) => SideScore {
            side: "OPP".into(),
            score: score_of(id),
            basis: format!("the score of its thesis {id}"),
            thesis: Some(id.clone()),
        },
        None => {
            // Why OPP holds no thesis, as the journal says it (seed review 002/003 #9: an
            // opening refused twice read as a `why`).
            let opened_with_why = state
                .nodes
                .iter()
                .any(|n| n.side == Side::Opp && n.phase == Phase::Opening && n.kind == Kind::Why);
            let why = if opened_with_why {
                "OPP opened with `why` and holds no thesis"
            } else {
                "OPP's opening was not accepted, so it holds no thesis"
            };
            SideScore {
                side: "OPP".into(),
                score: 1.0 - pro.score,
                basis: format!("1 − PRO's thesis score ({why})"),
                thesis: None,
            }
        }
    };
    let (winner, decided_by, decisive_move) = match surrender(&state) {
        Some((loser, how, id)) => (loser.other().seat().to_string(), how.to_string(), Some(id)),
        None if (pro.score - opp.score).abs() < DRAW_MARGIN => {
            ("DRAW".into(), "scores".into(), None)
        }
        None if pro.score > opp.score => ("PRO".into(), "scores".into(), None),
        None => ("OPP".into(), "scores".into(), None),
    };
    let survived = survivors(&graph);
    let concessions = concessions(&state);
    let unaddressed = unaddressed(&state);
    let count = |kind: Relation| graph.relations.iter().filter(|e| e.kind == kind).count();
    let moves = || debater.iter().flat_map(|t| t.moves.iter());
    let metrics = Metrics {
        arguments: graph.arguments.len(),
        attacks: count(Relation::Rebut) + count(Relation::Undercut),
        rebuts: count(Relation::Rebut),
        undercuts: count(Relation::Undercut),
        supports: count(Relation::Support),
        indirect_attacks: indirect.len(),
        concessions: moves().filter(|m| m.act == Act::Concede).count(),
        retractions: moves().filter(|m| m.act == Act::Retract).count(),
        violations,
        unaddressed_whys: unaddressed.len(),
    };
    Computed {
        pro,
        opp,
        winner,
        decided_by,
        decisive_move,
        survived,
        concessions,
        unaddressed,
        commitment_stores: commitment_stores(seats, &debater),
        arguments: graph.arguments.clone(),
        relations: graph.relations.clone(),
        indirect,
        metrics,
        struck: crate::debate::Ruling::struck_in(turns),
        lapsed: debater
            .iter()
            .filter(|t| t.phase == Phase::Lapse)
            .flat_map(|t| t.moves.iter().map(|m| m.id.clone()))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::replies::*;
    use super::*;
    use crate::argue::IndirectKind;
    use crate::engine::{ReplyParser, Transcript};
    use crate::protocol::dialogue::rules::tests::*;
    use serde_json::json;

    fn seats() -> Vec<String> {
        vec!["PRO".into(), "OPP".into()]
    }

    /// A debate small enough to score by hand (see the comments in the test).
    fn hand_computed() -> Vec<Turn> {
        use Relation::*;
        let mut opp1 = vec![mv(
            "O2",
            Act::Claim,
            "retries are not idempotent",
            &["P2"],
            Some(Undercut),
        )];
        opp1.extend(since("O3", "keep the loop", &["it is 40 lines"], &["O1"]));
        vec![
            pro_thesis("adopt tower"),
            opp_rebuts("keep the loop"),
            turn(
                "PRO",
                1,
                Phase::Argument,
                since("P2", "adopt tower", &["tower is maintained"], &["P1"]),
            ),
            turn("OPP", 1, Phase::Argument, opp1),
            turn(
                "PRO",
                2,
                Phase::Argument,
                vec![mv(
                    "P3",
                    Act::Why,
                    "retries are not idempotent",
                    &["O2"],
                    None,
                )],
            ),
            turn(
                "OPP",
                3,
                Phase::Closing,
                vec![mv(
                    "O4",
                    Act::Concede,
                    "tower is maintained",
                    &["P2.1"],
                    None,
                )],
            ),
        ]
    }

    #[test]
    fn side_scores_survivors_and_metrics_of_a_hand_computed_debate() {
        let computed = compute(&seats(), &hand_computed(), 2);
        // Unattacked: O2 = P2.1 = O3.1 = 0.5. O3 = 0.5 + 0.2·0.5 = 0.6; O1 = 0.5 + 0.2·0.6 = 0.62.
        // P2 = 0.5 + 0.2·0.5 − 0.4·0.5 = 0.4; P1 = 0.5 − 0.3·0.62 + 0.2·0.4 = 0.394.
        assert!(
            (computed.pro.score - 0.394).abs() < 1e-6,
            "{:?}",
            computed.pro
        );
        assert!(
            (computed.opp.score - 0.62).abs() < 1e-6,
            "{:?}",
            computed.opp
        );
        assert_eq!(computed.pro.thesis.as_deref(), Some("P1"));
        assert_eq!(computed.opp.thesis.as_deref(), Some("O1"));
        assert_eq!(
            (computed.winner.as_str(), computed.decided_by.as_str()),
            ("OPP", "scores")
        );
        let survived: Vec<&str> = computed.survived.iter().map(|a| a.id.as_str()).collect();
        assert_eq!(survived, vec!["O1", "O3"]);
        assert_eq!(computed.concessions.len(), 1);
        assert_eq!(
            (
                computed.concessions[0].side.as_str(),
                computed.concessions[0].conceded.as_str()
            ),
            ("OPP", "P2.1")
        );
        assert_eq!(computed.unaddressed.len(), 1);
        assert_eq!(
            (
                computed.unaddressed[0].id.as_str(),
                computed.unaddressed[0].target.as_str()
            ),
            ("P3", "O2")
        );
        assert_eq!(
            computed.metrics,
            Metrics {
                arguments: 7,
                attacks: 2,
                rebuts: 1,
                undercuts: 1,
                supports: 4,
                indirect_attacks: 2,
                concessions: 1,
                retractions: 0,
                violations: 2,
                unaddressed_whys: 1,
            }
        );
        let indirect: Vec<(&str, &str, IndirectKind)> = computed
            .indirect
            .iter()
            .map(|r| (r.from.as_str(), r.to.as_str(), r.kind))
            .collect();
        assert!(
            indirect.contains(&("O3", "P1", IndirectKind::SupportedAttack)),
            "{indirect:?}"
        );
        assert!(
            indirect.contains(&("O2", "P1", IndirectKind::SecondaryAttack)),
            "{indirect:?}"
        );
        let opp = computed
            .commitment_stores
            .iter()
            .find(|s| s.seat == "OPP")
            .unwrap();
        assert!(
            opp.commitments
                .iter()
                .any(|c| c.text == "tower is maintained" && c.conceded)
        );
    }

    #[test]
    fn conceding_the_other_thesis_or_retracting_ones_own_decides_it() {
        let mut turns = hand_computed();
        turns.push(turn(
            "OPP",
            3,
            Phase::Closing,
            vec![mv("O5", Act::Concede, "adopt tower", &["P1"], None)],
        ));
        let computed = compute(&seats(), &turns, 0);
        assert_eq!(
            (
                computed.winner.as_str(),
                computed.decided_by.as_str(),
                computed.decisive_move.as_deref()
            ),
            ("PRO", "concession", Some("O5"))
        );
        let mut turns = hand_computed();
        turns.push(turn(
            "PRO",
            3,
            Phase::Closing,
            vec![mv("P4", Act::Retract, "adopt tower", &["P1"], None)],
        ));
        let computed = compute(&seats(), &turns, 0);
        assert_eq!(
            (computed.winner.as_str(), computed.decided_by.as_str()),
            ("OPP", "retraction")
        );
        assert_eq!(computed.pro.score, 0.0, "a retracted thesis scores nothing");
    }

    /// Seed review 002/003 #9: an OPP whose opening was refused holds no thesis, and the
    /// basis says so rather than that it asked why.
    #[test]
    fn an_opp_whose_opening_was_refused_is_not_said_to_have_asked_why() {
        let turns = vec![
            pro_thesis("adopt tower"),
            turn("OPP", 0, Phase::Opening, vec![]),
        ];
        let computed = compute(&seats(), &turns, 1);
        assert_eq!(
            computed.opp.basis,
            "1 − PRO's thesis score (OPP's opening was not accepted, so it holds no thesis)"
        );
    }

    #[test]
    fn an_opp_that_opened_with_why_scores_the_complement() {
        let turns = vec![
            pro_thesis("adopt tower"),
            opp_asks_why("adopt tower"),
            turn(
                "PRO",
                1,
                Phase::Argument,
                since("P2", "adopt tower", &["less code"], &["P1", "O1"]),
            ),
        ];
        let computed = compute(&seats(), &turns, 0);
        // P2 = 0.5 + 0.2·0.5 = 0.6 supports P1: 0.5 + 0.2·0.6 = 0.62; OPP = 1 − 0.62.
        assert!((computed.pro.score - 0.62).abs() < 1e-6);
        assert!((computed.opp.score - 0.38).abs() < 1e-6);
        assert_eq!(computed.opp.thesis, None);
        assert!(computed.opp.basis.contains("OPP opened with `why`"));
        assert_eq!(computed.winner, "PRO");
        assert!(
            computed.unaddressed.is_empty(),
            "the since answered the why"
        );
    }

    #[test]
    fn the_moderator_must_cite_arguments_and_name_a_known_winner() {
        let parser = VerdictReplies {
            ids: vec!["P1".into(), "O1".into(), "P2.1".into()],
            surviving: vec!["O1".into()],
        };
        let key = crate::debate::TurnKey::new(3, Phase::Verdict, "moderator");
        let transcript = Transcript {
            key: &key,
            turns: &[],
            repair: false,
        };
        let good = json!({"winner": "opp", "rationale": "O1 stands; P2.1 was conceded.", "strongest": ["O1", "Q9", "P1"], "losing_points": ["P1 is simpler"], "consensus": "Keep the loop, add jitter.", "revisit": ["if tower gains Retry-After"]});
        let reply = parser.parse(&good, &transcript).unwrap();
        let verdict: ModeratorVerdict = serde_json::from_value(reply.data.unwrap()).unwrap();
        assert_eq!(verdict.winner, "OPP");
        assert_eq!(verdict.strongest, vec!["O1"]);
        // Seed review 002/003 #15: a fallen argument is not an id that names nothing.
        assert_eq!(
            reply.note.as_deref(),
            Some(
                "P1 named as strongest did not survive (a score of 0.5 or less) and was left out; \
                 Q9 named no argument and was dropped"
            )
        );
        let mut uncited = good.clone();
        uncited["rationale"] = json!("OPP was more convincing overall.");
        assert!(
            parser
                .parse(&uncited, &transcript)
                .unwrap_err()
                .contains("cites no argument")
        );
        let mut nobody = good.clone();
        nobody["winner"] = json!("MOD");
        assert!(
            parser
                .parse(&nobody, &transcript)
                .unwrap_err()
                .contains("PRO, OPP or DRAW")
        );
        assert!(cites("see P2.1, then", "P2.1") && !cites("P21 wins", "P2"));
    }
}

#[cfg(test)]
mod report {
    use super::super::replies::*;
    use super::super::result::*;
    use super::*;
    use crate::debate::{Confidence, Fact};
    use crate::protocol::dialogue::rules::tests::*;
    use serde_json::json;

    #[test]
    fn the_report_follows_the_note_section_for_section() {
        let mut turns = vec![
            pro_thesis("adopt tower"),
            opp_rebuts("keep the loop"),
            turn(
                "PRO",
                1,
                Phase::Argument,
                since(
                    "P2",
                    "adopt tower",
                    &["tower is maintained", "the loop has no jitter"],
                    &["P1"],
                ),
            ),
            turn(
                "OPP",
                1,
                Phase::Argument,
                vec![
                    mv("O2", Act::Why, "the loop has no jitter", &["P2.2"], None),
                    mv(
                        "O3",
                        Act::Claim,
                        "maintenance is not the bottleneck",
                        &["P2"],
                        Some(Relation::Undercut),
                    ),
                ],
            ),
            turn(
                "PRO",
                2,
                Phase::Closing,
                vec![mv(
                    "P3",
                    Act::Retract,
                    "the loop has no jitter",
                    &["P2.2", "O2"],
                    None,
                )],
            ),
        ];
        turns[3].data = Some(
            json!({"violations": [{"attempted": "since P2.1 no", "rule": "move 1: P2.1 is the other side's premise"}]}),
        );
        turns[1].content = "Our loop works.\nIt is forty lines.".into();
        let computed = compute(&["PRO".into(), "OPP".into()], &turns, 1);
        let result = DialogueResult {
            debate_id: "DEB-report01".into(),
            topic: "Adopt tower's retry layer".into(),
            focus: Some("Security Advocate".into()),
            participants: vec![
                Participant {
                    role: "PRO".into(),
                    persona: "Pragmatic engineer".into(),
                    bias: "ships fast".into(),
                    model: None,
                },
                Participant {
                    role: "OPP".into(),
                    persona: "Cautious architect".into(),
                    bias: "minimises risk".into(),
                    model: Some("second-model".into()),
                },
                Participant {
                    role: "MOD".into(),
                    persona: "Neutral staff engineer".into(),
                    bias: "none".into(),
                    model: None,
                },
            ],
            context: vec![Fact {
                text: "The loop sleeps 100 ms.".into(),
                source: "src/client.rs:3".into(),
                file: Some(("src/client.rs".into(), 3)),
            }],
            disagreement: Some("the moderator names PRO, but the computed verdict is OPP".into()),
            moderator: Some(ModeratorVerdict {
                winner: "PRO".into(),
                rationale: "P2.1 stands unchallenged.".into(),
                strongest: vec!["P2.1".into()],
                losing_points: vec!["O3: maintenance is not the bottleneck".into()],
                consensus: "Adopt tower behind a flag.".into(),
                revisit: vec!["if tower drops Retry-After".into()],
            }),
            computed,
            violations: vec![RecordedViolation {
                round: 1,
                side: "OPP".into(),
                violation: Violation {
                    attempted: "since P2.1 no".into(),
                    rule: "move 1: P2.1 is the other side's premise".into(),
                },
            }],
            votes: None,
            rounds: 1,
            notes: vec!["Context: not a git work tree".into()],
            date: "2026-11-22".into(),
        };
        insta::assert_snapshot!(result.to_markdown(&turns));
        assert_eq!(
            result.confidence(),
            Confidence::Low,
            "a disagreement lowers it"
        );
    }
}
