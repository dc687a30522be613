//! The dialogue's replies: the per-turn reply (the schema that offers only the moves legal
//! now, and the strict-then-lenient parser that enforces the rules on what came back; what it
//! cannot keep is a violation, journaled with the turn), and the moderator's verdict, checked
//! against what the journal computed.

use super::rules::*;
use super::verdict::SURVIVES;
use crate::debate::Named;
use crate::debate::{Act, Move, Relation};
use crate::engine::text_field;
use crate::engine::{Reply, ReplyParser, ReplyShape, Transcript, Unusable, unusable};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The reply schema for one turn: only the acts legal now, each against its open targets.
pub fn reply_schema(state: &State, side: Side, stage: Stage) -> Value {
    let text =
        json!({"type": "string", "minLength": 1, "description": "The proposition, one sentence."});
    let mut shapes = Vec::new();
    for (act, targets) in legal(state, side, stage) {
        let target = json!({"type": "string", "enum": targets});
        let shape = match act {
            Act::Claim if targets.is_empty() => json!({
                "type": "object",
                "properties": {"act": {"type": "string", "const": "claim"}, "text": text},
                "required": ["act", "text"]
            }),
            Act::Claim => {
                // Only an argument with reasons (a since) has an inference to undercut; a
                // plain claim can only be rebutted (seed review 002/003 #7: the schema offered
                // undercut on every claim, and the parser refused it).
                let (inferences, plain): (Vec<&String>, Vec<&String>) = targets
                    .iter()
                    .partition(|t| state.get(t).is_some_and(|n| n.kind == Kind::Since));
                for (group, attacks) in [
                    (plain, json!(["rebut"])),
                    (inferences, json!(["rebut", "undercut"])),
                ] {
                    if group.is_empty() {
                        continue;
                    }
                    shapes.push(json!({
                        "type": "object",
                        "properties": {
                            "act": {"type": "string", "const": "claim"},
                            "target": {"type": "string", "enum": group},
                            "text": text,
                            "attack": {"type": "string", "enum": attacks, "description": "rebut: your claim contradicts the target; undercut: it breaks the target's inference from its reasons."}
                        },
                        "required": ["act", "target", "text"]
                    }));
                }
                continue;
            }
            Act::Since => json!({
                "type": "object",
                "properties": {
                    "act": {"type": "string", "const": "since"},
                    "target": target,
                    "premises": {"type": "array", "minItems": 1, "maxItems": MAX_PREMISES, "items": text, "description": "The reasons S, one proposition each."}
                },
                "required": ["act", "target", "premises"]
            }),
            Act::Why => json!({
                "type": "object",
                "properties": {"act": {"type": "string", "const": "why"}, "target": target},
                "required": ["act", "target"]
            }),
            Act::Concede => json!({
                "type": "object",
                "properties": {"act": {"type": "string", "const": "concede"}, "target": target},
                "required": ["act", "target"]
            }),
            Act::Retract => json!({
                "type": "object",
                "properties": {"act": {"type": "string", "const": "retract"}, "target": target},
                "required": ["act", "target"]
            }),
        };
        shapes.push(shape);
    }
    let (fewest, most) = stage.moves_allowed();
    let fewest = if shapes.is_empty() { 0 } else { fewest };
    let moves = if shapes.is_empty() {
        json!({"type": "array", "maxItems": 0, "items": {"type": "object"}})
    } else {
        json!({"type": "array", "minItems": fewest, "maxItems": most, "items": {"anyOf": shapes}})
    };
    json!({
        "type": "object",
        "properties": {
            PROSE_FIELD: {"type": "string", "minLength": 1, "description": "What you say, as markdown prose, citing ids."},
            "moves": moves
        },
        "required": [PROSE_FIELD, "moves"]
    })
}

/// A move that was refused, with the rule it broke.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Violation {
    /// The move as the model wrote it, in a line.
    pub attempted: String,
    pub rule: String,
}

/// A reply read against the rules.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    pub argument: String,
    pub moves: Vec<Move>,
    pub violations: Vec<Violation>,
}

/// Reads a reply: every move checked against the state as the earlier moves of the same reply
/// leave it. `lenient` keeps the legal moves and records the rest; otherwise the first broken
/// rule is the error (for the repair request).
pub fn check_reply(
    value: &Value,
    state: &State,
    side: Side,
    stage: Stage,
    round: u32,
    lenient: bool,
) -> Result<Checked, Unusable> {
    let super::super::moves::Opened {
        argument,
        moves: raw,
        ..
    } = super::super::moves::argument_and_moves(value, ": what you say")?;
    let mut state = state.clone();
    let mut checked = Checked {
        argument,
        moves: Vec::new(),
        violations: Vec::new(),
    };
    let (fewest, most) = stage.moves_allowed();
    let refuse = |checked: &mut Checked, attempted: String, rule: String| -> Result<(), Unusable> {
        if lenient {
            checked.violations.push(Violation { attempted, rule });
            Ok(())
        } else {
            Err(Unusable(rule))
        }
    };
    for (index, item) in raw.iter().enumerate() {
        let attempted = describe_raw(item);
        if index >= most {
            refuse(
                &mut checked,
                attempted,
                format!(
                    "this turn takes at most {most} move(s); move {} is one too many",
                    index + 1
                ),
            )?;
            continue;
        }
        match one_move(item, &state, side, stage) {
            Ok(moves) => {
                for mv in &moves {
                    state.record(side, round, stage.phase(), mv);
                }
                checked.moves.extend(moves);
            }
            Err(rule) => refuse(
                &mut checked,
                attempted,
                format!("move {}: {rule}", index + 1),
            )?,
        }
    }
    let made = checked.moves.iter().filter(|m| !m.id.contains('.')).count();
    let legal_now = legal(&state, side, stage);
    // A turn whose moves were all rejected broke those rules already; only an empty one is
    // short of the minimum on its own.
    if made < fewest && !legal_now.is_empty() && checked.violations.is_empty() {
        refuse(
            &mut checked,
            "(no valid move)".into(),
            format!(
                "this turn needs at least {fewest} valid move; legal now: {}",
                summary(&legal_now)
            ),
        )?;
    }
    if stage == Stage::Argument {
        for owed in state.obligations(side) {
            refuse(
                &mut checked,
                "(no answer)".into(),
                format!(
                    "{} is a bare claim with no reasons: challenge it with `why` (or concede it) \
                     on this turn; an unsupported assertion may not pass unchallenged",
                    owed.id
                ),
            )?;
        }
    }
    Ok(checked)
}

/// One move of a reply, checked, with the journal moves it becomes (a `since` brings its
/// premises as claims `P3.1`, `P3.2` supporting it, so that each reason is an argument of the
/// framework that can be challenged, attacked or conceded on its own).
fn one_move(item: &Value, state: &State, side: Side, stage: Stage) -> Result<Vec<Move>, Rule> {
    let object = item.as_object().ok_or("each move must be an object")?;
    let word = object
        .get("act")
        .and_then(Value::as_str)
        .map_or("", str::trim);
    let Some(act) = Act::parse(word) else {
        return Err(broken!(
            "act {word:?} is not a speech act; use claim, why, concede, retract or since"
        ));
    };
    let allowed = stage.acts(side);
    if !allowed.contains(&act) {
        return Err(Rule(match stage {
            Stage::Opening if side == Side::Pro => {
                "the opening: PRO states its thesis with one `claim`".to_string()
            }
            Stage::Opening => {
                "the opening: OPP answers the thesis P1 with `claim` (¬φ) or `why`".to_string()
            }
            Stage::Closing => format!(
                "the closing round records concessions and retractions only; `{}` is not one",
                act.as_str()
            ),
            Stage::Argument => format!("`{}` is not allowed here", act.as_str()),
        }));
    }
    let text = clip(
        object
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim(),
    );
    let target = object
        .get("target")
        .and_then(Value::as_str)
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty());
    let id = state.next_id(side);
    if stage == Stage::Opening && side == Side::Pro {
        if text.is_empty() {
            return Err("the thesis needs a `text`: the proposition φ".into());
        }
        return Ok(vec![plain(id, Act::Claim, text, Vec::new(), None)]);
    }
    let target = target.ok_or_else(|| {
        format!(
            "`{}` needs a `target`: the id of the move it answers",
            act.as_str()
        )
    })?;
    if stage == Stage::Opening && target != "P1" {
        return Err(broken!("the opening answers the thesis P1, not {target}"));
    }
    state.check(side, act, &target)?;
    let node = state.get(&target).ok_or("unknown target")?;
    Ok(match act {
        Act::Why => vec![plain(id, Act::Why, node.text.clone(), vec![target], None)],
        Act::Concede => vec![plain(
            id,
            Act::Concede,
            node.text.clone(),
            vec![target],
            None,
        )],
        Act::Claim => {
            if text.is_empty() {
                return Err("a `claim` needs a `text`: the proposition you assert".into());
            }
            let relation =
                state.attack_relation(&target, object.get("attack").and_then(Value::as_str))?;
            vec![plain(id, Act::Claim, text, vec![target], Some(relation))]
        }
        Act::Retract => {
            // Retracting in answer to a why withdraws the proposition it challenged.
            let answers = match node.kind {
                Kind::Why => {
                    let challenged = node.target.clone().unwrap_or_default();
                    vec![challenged, target]
                }
                _ => vec![target],
            };
            let text = withdrawn_text(state, &answers[0]);
            vec![plain(id, Act::Retract, text, answers, None)]
        }
        Act::Since => since_moves(object, state, id, target, node)?,
    })
}

/// A `since` move: the argument from its premises (at most `MAX_PREMISES`) to what it
/// supports (the proposition a why challenged, when it answers one), and a claim a premise.
fn since_moves(
    object: &serde_json::Map<String, Value>,
    state: &State,
    id: String,
    target: String,
    node: &Node,
) -> Result<Vec<Move>, Rule> {
    let premises: Vec<String> = match object.get("premises") {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(|p| clip(p.trim()))
            .filter(|p| !p.is_empty())
            .collect(),
        _ => Vec::new(),
    };
    if premises.is_empty() {
        return Err("`since` gives no `premises`: list the reasons S".into());
    }
    if premises.len() > MAX_PREMISES {
        return Err(broken!("`since` takes at most {MAX_PREMISES} premises"));
    }
    let (supported, answers) = match node.kind {
        Kind::Why => {
            let challenged = node.target.clone().unwrap_or_default();
            (challenged.clone(), vec![challenged, target])
        }
        _ => (target.clone(), vec![target]),
    };
    let conclusion = state
        .get(&supported)
        .map(|n| n.text.clone())
        .unwrap_or_default();
    let mut moves = vec![Move {
        id: id.clone(),
        act: Act::Since,
        text: conclusion,
        premises: premises.clone(),
        answers,
        relation: Some(Relation::Support),
    }];
    for (i, premise) in premises.into_iter().enumerate() {
        moves.push(plain(
            format!("{id}.{}", i + 1),
            Act::Claim,
            premise,
            vec![id.clone()],
            Some(Relation::Support),
        ));
    }
    Ok(moves)
}

/// What a retraction of `withdrawn` reads as. A since-argument's text is its conclusion; the
/// transcript names the argument withdrawn, its reasons included, so it never reads as a
/// retracted conclusion (seed review 002/003 #1).
fn withdrawn_text(state: &State, withdrawn: &str) -> String {
    match state.get(withdrawn) {
        Some(n) if n.kind == Kind::Since => {
            let reasons: Vec<&str> = state
                .nodes
                .iter()
                .filter(|p| p.target.as_deref() == Some(withdrawn))
                .filter(|p| p.id.starts_with(&format!("{withdrawn}.")))
                .map(|p| p.text.as_str())
                .collect();
            format!("{} since {}", n.text, reasons.join("; "))
        }
        Some(n) => n.text.clone(),
        None => String::new(),
    }
}

fn plain(
    id: String,
    act: Act,
    text: String,
    answers: Vec<String>,
    relation: Option<Relation>,
) -> Move {
    Move {
        id,
        act,
        text,
        premises: Vec::new(),
        answers,
        relation,
    }
}

/// What is legal now, in a line for a prompt or a repair request.
pub fn summary(legal: &[(Act, Vec<String>)]) -> String {
    legal
        .iter()
        .map(|(act, targets)| {
            if targets.is_empty() {
                act.as_str().to_string()
            } else {
                format!("{} → {}", act.as_str(), targets.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn describe_raw(item: &Value) -> String {
    let field = |name: &str| item.get(name).and_then(Value::as_str).unwrap_or("").trim();
    let line = format!("{} {} {}", field("act"), field("target"), field("text"));
    clip(
        line.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .as_str(),
    )
}

fn clip(text: &str) -> String {
    crate::protocol::text::clip(text, MAX_TEXT_CHARS)
}

/// The parser `speak` uses for a side's turn: strict on the first reply (the broken rule goes
/// back in the repair request), lenient on the repaired one (legal moves kept, the rest
/// recorded as violations in the turn's data).
pub struct DialogueReplies {
    pub side: Side,
    pub stage: Stage,
    /// The moves open to the side at this stage, as the schema offers them.
    schema: Value,
}

/// The schema name of a side's reply.
pub const MOVE_SCHEMA: &str = "moot_dialogue_move";

impl DialogueReplies {
    /// The reply of `side` at `stage`, offering only the moves the state allows.
    pub fn new(state: &State, side: Side, stage: Stage) -> DialogueReplies {
        DialogueReplies {
            side,
            stage,
            schema: reply_schema(state, side, stage),
        }
    }
}

impl ReplyShape for DialogueReplies {
    fn name(&self) -> &'static str {
        MOVE_SCHEMA
    }

    fn schema(&self) -> Value {
        self.schema.clone()
    }

    fn stream_field(&self) -> Option<&'static str> {
        Some(PROSE_FIELD)
    }
}

impl ReplyParser for DialogueReplies {
    fn parse(&self, reply: &Value, transcript: &Transcript<'_>) -> Result<Reply, Unusable> {
        let state = State::from_turns(transcript.turns);
        let checked = check_reply(
            reply,
            &state,
            self.side,
            self.stage,
            transcript.key.round,
            transcript.repair,
        )
        .map_err(|rule| {
            format!(
                "{rule}. Legal now: {}",
                summary(&legal(&state, self.side, self.stage))
            )
        })?;
        let note = (!checked.violations.is_empty()).then(|| {
            format!(
                "{} move(s) rejected after the repair request: {}",
                checked.violations.len(),
                checked
                    .violations
                    .iter()
                    .map(|v| v.rule.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        });
        Ok(Reply {
            content: checked.argument,
            moves: checked.moves,
            confidence: None,
            data: (!checked.violations.is_empty())
                .then(|| json!({"violations": checked.violations})),
            note,
        })
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
    let strongest = if ids.is_empty() {
        json!({"type": "array", "maxItems": 0, "items": {"type": "string"}, "description": "No argument survived (every score is 0.5 or less): leave this empty."})
    } else {
        json!({"type": "array", "maxItems": 4, "items": {"type": "string", "enum": ids}, "description": "Ids of the strongest surviving arguments, strongest first."})
    };
    json!({
        "type": "object",
        "properties": {
            "rationale": {"type": "string", "minLength": 1, "description": "Why the winner's arguments were stronger, citing argument ids such as P2 or O3."},
            "winner": {"type": "string", "enum": ["PRO", "OPP", "DRAW"]},
            "strongest": strongest,
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
    /// What `strongest` may name: the arguments that survived (none when none did).
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
        let text = |name: &str| text_field(reply, name).unwrap_or("").to_string();
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
        // Said apart: an argument that did not survive is not an id that names nothing
        // (seed review 002/003 #15: O1 at exactly 0.50 read as naming no argument).
        let dropped: Vec<&String> = cited
            .iter()
            .filter(|id| !self.surviving.contains(id))
            .collect();
        let (fallen, unknown): (Vec<&String>, Vec<&String>) =
            dropped.into_iter().partition(|id| self.ids.contains(id));
        let mut said = Vec::new();
        if !fallen.is_empty() {
            said.push(format!(
                "{} named as strongest did not survive (a score of {SURVIVES} or less) and {} left out",
                join_ids(&fallen),
                if fallen.len() == 1 { "was" } else { "were" }
            ));
        }
        if !unknown.is_empty() {
            said.push(format!(
                "{} named no argument and {} dropped",
                join_ids(&unknown),
                if unknown.len() == 1 { "was" } else { "were" }
            ));
        }
        Ok(Reply {
            note: (!said.is_empty()).then(|| said.join("; ")),
            content: rationale,
            data: serde_json::to_value(&verdict).ok(),
            ..Reply::default()
        })
    }
}

fn join_ids(ids: &[&String]) -> String {
    ids.iter()
        .map(|id| id.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether `text` names `id` as a word (P2 in "P2," but not in "P21").
pub(super) fn cites(text: &str, id: &str) -> bool {
    text.match_indices(id).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + id.len()..].chars().next();
        before.is_none_or(|c| !c.is_alphanumeric()) && after.is_none_or(|c| !c.is_alphanumeric())
    })
}
