//! The dialogue's verdict: first what the journal computes (side scores, surviving arguments,
//! concessions, unanswered whys, commitment stores, quality metrics), then the moderator's
//! reading of it, checked; and the report in the note's format.

use super::rules::{Kind, Side, State, Violation, headline};
use crate::argue::{
    Argument, CommitmentStore, Edge, IndirectKind, IndirectRelation, argument_graph,
    commitment_stores, indirect_relations,
};
use crate::debate::Named as _;
use crate::debate::{Act, Confidence, Fact, Phase, Relation, Turn, TurnStatus};
use crate::engine::Unusable;
use crate::engine::unusable;
use crate::engine::{Reply, ReplyParser, ReplyShape, Transcript};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::fmt::Write as _;

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
        .filter(|a| !a.retracted && a.score > SURVIVES)
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
    let debater: Vec<Turn> = turns
        .iter()
        .filter(|t| t.phase.is_debater())
        .cloned()
        .collect();
    let state = State::from_turns(&debater);
    let graph = argument_graph(&debater);
    let indirect = indirect_relations(&graph);
    let score_of = |id: &str| {
        graph
            .get(id)
            .map_or(0.0, |a| if a.retracted { 0.0 } else { a.score })
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
        None => SideScore {
            side: "OPP".into(),
            score: 1.0 - pro.score,
            basis: "1 − PRO's thesis score (OPP opened with `why` and holds no thesis)".into(),
            thesis: None,
        },
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
    }
}

/// The moderator's reading of the computed verdict.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ModeratorVerdict {
    pub winner: String,
    pub rationale: String,
    pub strongest: Vec<String>,
    pub losing_points: Vec<String>,
    pub consensus: String,
    pub revisit: Vec<String>,
}

pub const VERDICT_SCHEMA: &str = "moot_dialogue_verdict";

pub fn verdict_schema(ids: &[String]) -> Value {
    let line = json!({"type": "string", "minLength": 1});
    json!({
        "type": "object",
        "properties": {
            "rationale": {"type": "string", "minLength": 1, "description": "Why the winner's arguments were stronger, citing argument ids such as P2 or O3."},
            "winner": {"type": "string", "enum": ["PRO", "OPP", "DRAW"]},
            "strongest": {"type": "array", "maxItems": 4, "items": {"type": "string", "enum": ids}, "description": "Ids of the strongest surviving arguments, strongest first."},
            "losing_points": {"type": "array", "maxItems": 4, "items": line, "description": "Valid points of the losing side, citing ids."},
            "consensus": {"type": "string", "minLength": 1, "description": "A practical recommendation that takes in the best of both sides."},
            "revisit": {"type": "array", "minItems": 1, "maxItems": 4, "items": line, "description": "What new evidence or change would reopen this decision."}
        },
        "required": ["rationale", "winner", "strongest", "losing_points", "consensus", "revisit"]
    })
}

/// Checks the moderator's verdict: a known winner, a rationale that cites at least one
/// argument, cited ids that exist (unknown ones dropped and noted).
pub struct VerdictReplies {
    pub ids: Vec<String>,
    /// What `strongest` may name: the arguments that survived (all of them when none did).
    pub surviving: Vec<String>,
}

impl ReplyShape for VerdictReplies {
    fn name(&self) -> &'static str {
        VERDICT_SCHEMA
    }

    fn schema(&self) -> Value {
        verdict_schema(&self.surviving)
    }

    fn stream_field(&self) -> Option<&'static str> {
        Some("rationale")
    }
}

impl ReplyParser for VerdictReplies {
    fn parse(&self, reply: &Value, _: &Transcript<'_>) -> Result<Reply, Unusable> {
        let text = |name: &str| {
            reply
                .get(name)
                .and_then(Value::as_str)
                .map(str::trim)
                .unwrap_or("")
                .to_string()
        };
        let lines = |name: &str| -> Vec<String> {
            reply
                .get(name)
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .filter_map(Value::as_str)
                        .map(|s| s.trim().to_string())
                        .filter(|s| !s.is_empty())
                        .collect()
                })
                .unwrap_or_default()
        };
        let winner = text("winner").to_uppercase();
        if !["PRO", "OPP", "DRAW"].contains(&winner.as_str()) {
            return Err(unusable!(
                "`winner` must be PRO, OPP or DRAW, not {winner:?}"
            ));
        }
        let rationale = text("rationale");
        if rationale.is_empty() {
            return Err("`rationale` must say why, citing argument ids".into());
        }
        if !self.ids.is_empty() && !self.ids.iter().any(|id| cites(&rationale, id)) {
            return Err(unusable!(
                "the rationale cites no argument; name the ids it rests on (such as {})",
                self.ids
                    .iter()
                    .take(3)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let consensus = text("consensus");
        if consensus.is_empty() {
            return Err("`consensus` must give a practical recommendation".into());
        }
        let cited = lines("strongest");
        let strongest: Vec<String> = cited
            .iter()
            .filter(|id| self.surviving.contains(id))
            .cloned()
            .collect();
        let verdict = ModeratorVerdict {
            winner,
            rationale: rationale.clone(),
            strongest,
            losing_points: lines("losing_points"),
            consensus,
            revisit: lines("revisit"),
        };
        Ok(Reply {
            note: (verdict.strongest.len() < cited.len()).then(|| {
                format!(
                    "{} cited id(s) named no argument and were dropped",
                    cited.len() - verdict.strongest.len()
                )
            }),
            content: rationale,
            data: serde_json::to_value(&verdict).ok(),
            ..Reply::default()
        })
    }
}

/// Whether `text` names `id` as a word (P2 in "P2," but not in "P21").
fn cites(text: &str, id: &str) -> bool {
    text.match_indices(id).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + id.len()..].chars().next();
        before.is_none_or(|c| !c.is_alphanumeric()) && after.is_none_or(|c| !c.is_alphanumeric())
    })
}

/// A rejected move and where it was made.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RecordedViolation {
    pub round: u32,
    pub side: String,
    #[serde(flatten)]
    pub violation: Violation,
}

/// A seat of the dialogue as the record names it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Participant {
    /// `PRO`, `OPP`, `MOD`.
    pub role: String,
    pub persona: String,
    pub bias: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// The dialogue's typed result (`show --json` names it `dialogue_verdict`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DialogueResult {
    pub debate_id: String,
    pub topic: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub focus: Option<String>,
    pub participants: Vec<Participant>,
    pub context: Vec<Fact>,
    pub computed: Computed,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moderator: Option<ModeratorVerdict>,
    /// Set when the moderator's winner is not the computed one: both stand in the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disagreement: Option<String>,
    /// Moves the rules rejected, by round and side.
    pub violations: Vec<RecordedViolation>,
    /// The closing vote of both sides (`--vote`), when asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub votes: Option<crate::debate::VoteView>,
    pub rounds: u32,
    pub notes: Vec<String>,
    pub date: String,
}

impl DialogueResult {
    /// How sure the record can be: a surrender is decisive; otherwise by the margin, lowered
    /// when the moderator reads it the other way.
    pub fn confidence(&self) -> Confidence {
        if self.disagreement.is_some() {
            return Confidence::Low;
        }
        if self.computed.decided_by != "scores" {
            return Confidence::High;
        }
        match (self.computed.pro.score - self.computed.opp.score).abs() {
            m if m >= 0.2 => Confidence::High,
            m if m >= 0.05 => Confidence::Medium,
            _ => Confidence::Low,
        }
    }

    /// The report in the note's format, section for section.
    pub fn to_markdown(&self, turns: &[Turn]) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# Debate: \"{}\"\n", self.topic.trim());
        let _ = writeln!(
            out,
            "**Debate:** {} · **Protocol:** formal dialogue · **Rounds of argumentation:** {}\n",
            self.debate_id, self.rounds
        );
        if let Some(focus) = &self.focus {
            let _ = writeln!(out, "**Focus:** {focus}\n");
        }
        let _ = writeln!(out, "## Participants\n");
        for p in &self.participants {
            let _ = writeln!(
                out,
                "- **{}** {} — bias: {}{}",
                p.role,
                p.persona,
                p.bias,
                p.model
                    .as_ref()
                    .map(|m| format!(" ({m})"))
                    .unwrap_or_default()
            );
        }
        let _ = writeln!(out, "\n## Shared Context (K)\n");
        if self.context.is_empty() {
            let _ = writeln!(out, "- (none gathered)");
        }
        for fact in &self.context {
            let _ = writeln!(out, "- {} (`{}`)", fact.text, fact.source);
        }
        let _ = writeln!(out, "\n---\n\n## Transcript");
        self.transcript(&mut out, turns);
        self.stores(&mut out);
        self.framework(&mut out);
        self.verdict(&mut out);
        if !self.notes.is_empty() {
            let _ = writeln!(out, "\n## Notes\n");
            for note in &self.notes {
                let _ = writeln!(out, "- {note}");
            }
        }
        out
    }

    fn transcript(&self, out: &mut String, turns: &[Turn]) {
        let mut heading = None;
        for turn in turns.iter().filter(|t| t.phase.is_debater()) {
            let this = (turn.round, turn.phase);
            if heading != Some(this) {
                heading = Some(this);
                let title = match turn.phase {
                    Phase::Opening => "Opening".to_string(),
                    Phase::Closing => "Closing".to_string(),
                    _ => "Argumentation".to_string(),
                };
                let _ = writeln!(out, "\n### Round {}: {title}\n", turn.round);
            }
            let side = &turn.seat;
            if turn.moves.is_empty() {
                let status = match turn.status {
                    TurnStatus::Ok => "no move".to_string(),
                    other => other.as_str().replace('_', " "),
                };
                let _ = writeln!(out, "**{side}** ({status})");
            }
            for mv in turn.moves.iter().filter(|m| !m.id.contains('.')) {
                let shown = match mv.act {
                    Act::Since => {
                        let premises: Vec<String> = mv
                            .premises
                            .iter()
                            .enumerate()
                            .map(|(i, p)| format!("{}.{} \"{}\"", mv.id, i + 1, p))
                            .collect();
                        format!("`since` \"{}\" ← {{{}}}", mv.text, premises.join(", "))
                    }
                    act => format!("`{}` \"{}\"", act.as_str(), mv.text),
                };
                let target = headline(mv)
                    .split_once(" → ")
                    .map(|(_, t)| format!(" → {t}"))
                    .unwrap_or_default();
                let _ = writeln!(out, "**{side} [{}]** {shown}{target}  ", mv.id);
            }
            if let Some(data) = &turn.data
                && let Some(rejected) = data.get("violations").and_then(Value::as_array)
            {
                for v in rejected {
                    let _ = writeln!(
                        out,
                        "⚠ rejected: {} — {}  ",
                        v.get("attempted").and_then(Value::as_str).unwrap_or(""),
                        v.get("rule").and_then(Value::as_str).unwrap_or("")
                    );
                }
            }
            let prose = turn.content.trim();
            if !prose.is_empty() {
                out.push('\n');
                for line in prose.lines() {
                    let _ = writeln!(out, "> {line}");
                }
            }
            out.push('\n');
        }
    }

    fn stores(&self, out: &mut String) {
        let _ = writeln!(out, "---\n\n## Commitment Stores (Final State)\n");
        let _ = writeln!(out, "| Agent | Commitments | Retractions |");
        let _ = writeln!(out, "|-------|-------------|-------------|");
        for store in &self.computed.commitment_stores {
            let list = |items: &[crate::argue::Commitment]| {
                let texts: Vec<String> = items
                    .iter()
                    .map(|c| format!("{} ({})", cell(&c.text), c.move_id))
                    .collect();
                format!("{{{}}}", texts.join("; "))
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                store.seat,
                list(&store.commitments),
                list(&store.retractions)
            );
        }
    }

    fn framework(&self, out: &mut String) {
        let c = &self.computed;
        let _ = writeln!(out, "\n---\n\n## Argumentation Framework\n");
        let _ = writeln!(out, "### Arguments\n");
        let _ = writeln!(out, "| ID | Content | Source | Score |");
        let _ = writeln!(out, "|----|---------|--------|-------|");
        for a in &c.arguments {
            let _ = writeln!(
                out,
                "| {} | {}{} | {} | {:.2} |",
                a.id,
                cell(&a.text),
                if a.retracted { " (retracted)" } else { "" },
                a.seat,
                a.score
            );
        }
        let _ = writeln!(out, "\n### Relations\n");
        let _ = writeln!(out, "| From | To | Type | Classification |");
        let _ = writeln!(out, "|------|----|------|----------------|");
        for e in &c.relations {
            let (kind, class) = match e.kind {
                Relation::Support => ("Support", "Direct"),
                Relation::Rebut => ("Attack", "Rebutting"),
                Relation::Undercut => ("Attack", "Undercutting"),
            };
            let _ = writeln!(out, "| {} | {} | {kind} | {class} |", e.from, e.to);
        }
        for r in &c.indirect {
            let class = match r.kind {
                IndirectKind::SupportedAttack => "Supported attack",
                IndirectKind::SecondaryAttack => "Secondary attack",
            };
            let _ = writeln!(
                out,
                "| {} | {} | Indirect attack | {class} (via {}) |",
                r.from, r.to, r.via
            );
        }
        let graph = crate::argue::ArgumentGraph {
            arguments: c.arguments.clone(),
            relations: c.relations.clone(),
        };
        let _ = writeln!(
            out,
            "\n### Argument Map (ASCII)\n\n```\n{}```",
            crate::argue::map::outline(&graph, 48)
        );
    }

    /// The moderator's reading beside the computed verdict (or that it gave none).
    fn moderator_section(&self, out: &mut String) {
        let c = &self.computed;
        match &self.moderator {
            Some(m) => {
                let _ = writeln!(
                    out,
                    "\n### Winner: **{}** (Score: PRO {:.2} vs OPP {:.2})\n",
                    m.winner, c.pro.score, c.opp.score
                );
                let _ = writeln!(out, "### Rationale\n\n{}\n", m.rationale);
                let _ = writeln!(out, "### Strongest Surviving Arguments\n");
                if m.strongest.is_empty() {
                    let _ = writeln!(out, "- (none named)");
                }
                for (n, id) in m.strongest.iter().enumerate() {
                    let text = c
                        .arguments
                        .iter()
                        .find(|a| &a.id == id)
                        .map(|a| a.text.as_str())
                        .unwrap_or("");
                    let _ = writeln!(out, "{}. {id}: {text}", n + 1);
                }
                let _ = writeln!(out, "\n### Valid Points from Losing Side\n");
                for (n, point) in m.losing_points.iter().enumerate() {
                    let _ = writeln!(out, "{}. {point}", n + 1);
                }
                let _ = writeln!(out, "\n### Consensus Solution\n\n{}\n", m.consensus);
                let _ = writeln!(out, "### Conditions for Revisiting\n");
                for condition in &m.revisit {
                    let _ = writeln!(out, "- {condition}");
                }
            }
            None => {
                let _ = writeln!(
                    out,
                    "\n### Winner: **{}** (Score: PRO {:.2} vs OPP {:.2})\n\nThe moderator gave no usable verdict; the computed one stands.",
                    c.winner, c.pro.score, c.opp.score
                );
            }
        }
    }

    fn verdict(&self, out: &mut String) {
        let c = &self.computed;
        let _ = writeln!(out, "\n---\n\n## Verdict\n");
        let _ = writeln!(out, "### Computed from the journal\n");
        let how = match (c.decided_by.as_str(), &c.decisive_move) {
            ("concession", Some(id)) => {
                format!("by concession ({id} conceded the other side's thesis)")
            }
            ("retraction", Some(id)) => format!("by retraction ({id} withdrew its own thesis)"),
            _ => "by the scores".to_string(),
        };
        let _ = writeln!(
            out,
            "- **Winner:** {} {how}\n- **Side scores:** PRO {:.2} ({}) · OPP {:.2} ({})",
            c.winner, c.pro.score, c.pro.basis, c.opp.score, c.opp.basis
        );
        let survived: Vec<String> = c
            .survived
            .iter()
            .map(|a| format!("{} ({}, {:.2})", a.id, a.side, a.score))
            .collect();
        let _ = writeln!(
            out,
            "- **Surviving arguments (score > {SURVIVES}):** {}",
            or_none(&survived, ", ")
        );
        let conceded: Vec<String> = c
            .concessions
            .iter()
            .map(|k| {
                format!(
                    "{} {} conceded {} \"{}\"",
                    k.side, k.move_id, k.conceded, k.text
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "- **Concessions that weaken a side:** {}",
            or_none(&conceded, "; ")
        );
        let open: Vec<String> = c
            .unaddressed
            .iter()
            .map(|w| {
                format!(
                    "{} ({} asked why {} \"{}\")",
                    w.id, w.asked_by, w.target, w.text
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "- **Unaddressed critical questions:** {}",
            or_none(&open, "; ")
        );
        if let Some(flag) = &self.disagreement {
            let _ = writeln!(out, "\n> ⚑ **Disagreement:** {flag}");
        }
        self.moderator_section(out);
        if let Some(votes) = &self.votes {
            let _ = write!(out, "\n#{}", votes.to_markdown());
        }
        let m = &c.metrics;
        let _ = writeln!(
            out,
            "\n### Debate Quality Metrics\n\n- Arguments raised: {}\n- Attacks: {} ({} rebuts, {} undercuts; {} indirect)\n- Supports: {}\n- Concessions made: {}\n- Retractions: {}\n- Protocol violations: {}\n- Unaddressed whys: {}",
            m.arguments,
            m.attacks,
            m.rebuts,
            m.undercuts,
            m.indirect_attacks,
            m.supports,
            m.concessions,
            m.retractions,
            m.violations,
            m.unaddressed_whys
        );
    }
}

/// The items joined, or "none".
fn or_none(items: &[String], separator: &str) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items.join(separator)
    }
}

/// Text fit for one table cell (escape sequences are stripped where the record is written and
/// shown, as for every protocol's outcome).
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::dialogue::rules::tests::{mv, since, turn};

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
            turn(
                "PRO",
                0,
                Phase::Opening,
                vec![mv("P1", Act::Claim, "adopt tower", &[], None)],
            ),
            turn(
                "OPP",
                0,
                Phase::Opening,
                vec![mv("O1", Act::Claim, "keep the loop", &["P1"], Some(Rebut))],
            ),
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

    #[test]
    fn an_opp_that_opened_with_why_scores_the_complement() {
        let turns = vec![
            turn(
                "PRO",
                0,
                Phase::Opening,
                vec![mv("P1", Act::Claim, "adopt tower", &[], None)],
            ),
            turn(
                "OPP",
                0,
                Phase::Opening,
                vec![mv("O1", Act::Why, "adopt tower", &["P1"], None)],
            ),
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
        let good = json!({"winner": "opp", "rationale": "O1 stands; P2.1 was conceded.", "strongest": ["O1", "Q9"], "losing_points": ["P1 is simpler"], "consensus": "Keep the loop, add jitter.", "revisit": ["if tower gains Retry-After"]});
        let reply = parser.parse(&good, &transcript).unwrap();
        let verdict: ModeratorVerdict = serde_json::from_value(reply.data.unwrap()).unwrap();
        assert_eq!(verdict.winner, "OPP");
        assert_eq!(verdict.strongest, vec!["O1"]);
        assert!(reply.note.unwrap().contains("1 cited id"));
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
    use super::*;
    use crate::protocol::dialogue::rules::tests::{mv, since, turn};

    #[test]
    fn the_report_follows_the_note_section_for_section() {
        let mut turns = vec![
            turn(
                "PRO",
                0,
                Phase::Opening,
                vec![mv("P1", Act::Claim, "adopt tower", &[], None)],
            ),
            turn(
                "OPP",
                0,
                Phase::Opening,
                vec![mv(
                    "O1",
                    Act::Claim,
                    "keep the loop",
                    &["P1"],
                    Some(Relation::Rebut),
                )],
            ),
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
