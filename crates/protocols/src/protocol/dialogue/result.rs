//! What a dialogue concludes: the `DialogueResult` (the computed verdict, the moderator's
//! reading, the participants, the violations) and the report in the note's format.

use super::replies::{ModeratorVerdict, Violation};
use super::rules::headline;
use super::verdict::*;
use crate::argue::IndirectKind;
use crate::debate::Named as _;
use crate::debate::{Act, Confidence, Fact, Phase, Relation, Ruling, Turn, TurnStatus};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt::Write as _;

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
    /// The uniform outcome: the computed winner (none for a draw) by its rule; the consensus
    /// score is the overlap of the sides' final commitment stores (shared ÷ all, 0–1).
    pub fn resolution(&self) -> crate::debate::Resolution {
        let c = &self.computed;
        let winner = (c.winner != "DRAW").then(|| c.winner.clone());
        let method = match (c.decided_by.as_str(), &winner) {
            ("concession", _) => "concession of the other side's thesis",
            ("retraction", _) => "retraction of its own thesis",
            (_, None) => "argument scores (a draw)",
            _ => "argument scores",
        };
        let held = |side: &str| -> std::collections::BTreeSet<String> {
            c.commitment_stores
                .iter()
                .filter(|s| s.seat == side)
                .flat_map(|s| s.commitments.iter())
                .map(|k| crate::argue::commitments::normalize(&k.text))
                .collect()
        };
        let (pro, opp) = (held("PRO"), held("OPP"));
        let all = pro.union(&opp).count();
        let shared = pro.intersection(&opp).count();
        crate::debate::Resolution {
            winner,
            method: method.into(),
            final_consensus_score: if all == 0 {
                0.0
            } else {
                shared as f64 / all as f64
            },
        }
    }

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
            let (role, persona, bias) = (&p.role, &p.persona, &p.bias);
            let model = p.model.as_ref().map(|m| format!(" ({m})"));
            let model = model.unwrap_or_default();
            let _ = writeln!(out, "- **{role}** {persona} — bias: {bias}{model}");
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
        for turn in turns.iter() {
            if let Some(ruling) = Ruling::of(turn).filter(|r| !r.is_empty()) {
                for side in ["PRO", "OPP"] {
                    for line in ruling.lines_for(side) {
                        let _ = writeln!(out, "**MOD** ruled {side}'s {line}  ");
                    }
                }
                out.push('\n');
                continue;
            }
            if !turn.phase.is_debater() {
                continue;
            }
            if turn.phase == Phase::Lapse {
                for mv in &turn.moves {
                    let (seat, id, text) = (&turn.seat, &mv.id, &mv.text);
                    let headline = headline(mv);
                    let target = headline.split_once(" → ").map(|(_, t)| format!(" → {t}"));
                    let target = target.unwrap_or_default();
                    let _ = writeln!(
                        out,
                        "**{seat} [{id}]** `retract` \"{text}\"{target} — imposed by the rules: a why went unanswered past its grace  "
                    );
                }
                out.push('\n');
                continue;
            }
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
            let (held, retracted) = (list(&store.commitments), list(&store.retractions));
            let _ = writeln!(out, "| {} | {held} | {retracted} |", store.seat);
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
                a.withdrawn_note(),
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
            let (from, to, via) = (&r.from, &r.to, &r.via);
            let _ = writeln!(
                out,
                "| {from} | {to} | Indirect attack | {class} (via {via}) |"
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
        // The heading names the record's winner, the computed one, whatever the moderator
        // read (seed review 002/003 #3); the rule that decided it follows.
        let _ = writeln!(
            out,
            "\n### Winner: **{}** (Score: PRO {:.2} vs OPP {:.2})\n\n{}",
            c.winner,
            c.pro.score,
            c.opp.score,
            winner_rule(c)
        );
        match &self.moderator {
            Some(m) => {
                if m.winner != c.winner {
                    let _ = writeln!(
                        out,
                        "The moderator named {}; its reading follows, and the computed verdict is the record's.\n",
                        m.winner
                    );
                }
                let _ = writeln!(out, "### Rationale\n\n{}\n", m.rationale);
                let _ = writeln!(out, "### Strongest Surviving Arguments\n");
                if c.survived.is_empty() {
                    let _ = writeln!(
                        out,
                        "- none: no argument scored above {}, so none stands as strongest",
                        super::verdict::SURVIVES
                    );
                } else if m.strongest.is_empty() {
                    let _ = writeln!(out, "- (none named)");
                }
                let standing = m
                    .strongest
                    .iter()
                    .filter(|id| c.survived.iter().any(|a| &a.id == *id));
                for (n, id) in standing.enumerate() {
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
                    "The moderator gave no usable verdict; the computed one stands."
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
        if !c.struck.is_empty() {
            let struck: Vec<String> = c
                .struck
                .iter()
                .map(|r| format!("{} ({}): {}", r.id, r.side, r.reason))
                .collect();
            let _ = writeln!(
                out,
                "- **Struck by the moderator as weak (scored 0):** {}",
                struck.join("; ")
            );
        }
        if !c.lapsed.is_empty() {
            let _ = writeln!(
                out,
                "- **Retracted for a why left unanswered past its grace:** {}",
                c.lapsed.join(", ")
            );
        }
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

/// The rule that decided the computed winner, in a sentence; when the side scores and the
/// surviving arguments point different ways, it says why the scores decide.
fn winner_rule(c: &Computed) -> String {
    match c.decided_by.as_str() {
        "concession" => {
            "Rule: a side that concedes the other's thesis loses, whatever the scores.\n".into()
        }
        "retraction" => {
            "Rule: a side that withdraws its own thesis loses, whatever the scores.\n".into()
        }
        _ => {
            let mut rule = String::from(
                "Rule: the side whose thesis stands stronger after every attack and support (its \
                 gradual score) wins.",
            );
            let surviving = |side: &str| c.survived.iter().filter(|a| a.side == side).count();
            let loser = if c.winner == "PRO" { "OPP" } else { "PRO" };
            let (won, lost) = (surviving(&c.winner), surviving(loser));
            if lost > won {
                let _ = write!(
                    rule,
                    " {loser} has more surviving arguments ({lost} to {won}), but an argument \
                     counts through what it does to a thesis, not by number."
                );
            }
            rule.push('\n');
            rule
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::dialogue::rules::tests::opening;

    /// Seed review 002/003 #3: the winner's rule is said, and explained when the surviving
    /// arguments favour the side that lost on the scores.
    #[test]
    fn the_winner_rule_explains_scores_against_surviving_arguments() {
        let turns = opening();
        let mut computed = compute(&["PRO".into(), "OPP".into()], &turns, 0);
        let argument = |id: &str, side: &str| ScoredArgument {
            id: id.into(),
            side: side.into(),
            text: String::new(),
            score: 0.6,
        };
        computed.winner = "PRO".into();
        computed.decided_by = "scores".into();
        computed.survived = vec![
            argument("P2", "PRO"),
            argument("O2", "OPP"),
            argument("O3", "OPP"),
        ];
        let rule = winner_rule(&computed);
        assert!(
            rule.starts_with("Rule: the side whose thesis stands stronger"),
            "{rule}"
        );
        assert!(
            rule.contains("OPP has more surviving arguments (2 to 1), but an argument counts through what it does to a thesis"),
            "{rule}"
        );
        computed.survived.truncate(1);
        assert!(!winner_rule(&computed).contains("more surviving"));
        computed.decided_by = "concession".into();
        assert!(winner_rule(&computed).contains("concedes the other's thesis loses"));
    }

    #[test]
    fn the_uniform_outcome_is_the_computed_winner_and_the_overlap_of_the_stores() {
        use crate::argue::{Commitment, CommitmentStore};
        let mut computed = compute(&["PRO".into(), "OPP".into()], &opening(), 0);
        let store = |seat: &str, texts: &[&str]| CommitmentStore {
            seat: seat.into(),
            commitments: texts
                .iter()
                .map(|t| Commitment {
                    text: t.to_string(),
                    move_id: "X".into(),
                    conceded: false,
                })
                .collect(),
            retractions: vec![],
        };
        // One shared of three held: 1/3.
        computed.commitment_stores = vec![
            store("PRO", &["Adopt tower", "Tower is maintained"]),
            store("OPP", &["tower is maintained.", "Keep the loop"]),
        ];
        computed.winner = "OPP".into();
        computed.decided_by = "concession".into();
        let result = DialogueResult {
            debate_id: "DEB-x".into(),
            topic: "t".into(),
            focus: None,
            participants: vec![],
            context: vec![],
            computed,
            moderator: None,
            disagreement: None,
            violations: vec![],
            votes: None,
            rounds: 1,
            notes: vec![],
            date: String::new(),
        };
        let read = result.resolution();
        assert_eq!(read.winner.as_deref(), Some("OPP"));
        assert_eq!(read.method, "concession of the other side's thesis");
        assert!(
            (read.final_consensus_score - 1.0 / 3.0).abs() < 1e-9,
            "{read:?}"
        );
        let mut draw = result.clone();
        draw.computed.winner = "DRAW".into();
        draw.computed.decided_by = "scores".into();
        let read = draw.resolution();
        assert_eq!(
            (read.winner, read.method.as_str()),
            (None, "argument scores (a draw)")
        );
    }
}
