//! The rules of the persuasion dialogue (design note 002): what each move may answer, which
//! lines are still open, what a side owes the other, and which moves are legal now (the
//! reply that offers only those, and its parser, are `replies`).

use crate::debate::Named as _;
use crate::debate::{Act, Move, Phase, Relation, Turn, TurnStatus};
use std::collections::{BTreeSet, HashMap};

/// The most moves one turn may make.
pub const MAX_MOVES: usize = 3;
/// The most reasons one `since` may give.
pub const MAX_PREMISES: usize = 4;
pub(super) const MAX_TEXT_CHARS: usize = 400;

/// The field whose prose streams while a side speaks.
pub const PROSE_FIELD: &str = "argument";

/// The two sides of the dialogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    Pro,
    Opp,
}

impl Side {
    /// The seat id the journal keeps.
    pub fn seat(self) -> &'static str {
        match self {
            Side::Pro => "PRO",
            Side::Opp => "OPP",
        }
    }

    /// The letter its move ids start with.
    pub fn letter(self) -> char {
        match self {
            Side::Pro => 'P',
            Side::Opp => 'O',
        }
    }

    /// What the side does, said of it: "argues FOR the thesis" (its seat's stance).
    pub fn stance(self) -> &'static str {
        match self {
            Side::Pro => "argues FOR the thesis",
            Side::Opp => "argues AGAINST the thesis",
        }
    }

    /// What the side does, said to it: "argue FOR the thesis".
    pub fn your_stance(self) -> &'static str {
        match self {
            Side::Pro => "argue FOR the thesis",
            Side::Opp => "argue AGAINST the thesis",
        }
    }

    pub fn other(self) -> Side {
        match self {
            Side::Pro => Side::Opp,
            Side::Opp => Side::Pro,
        }
    }

    pub fn of_seat(seat: &str) -> Option<Side> {
        match seat {
            "PRO" => Some(Side::Pro),
            "OPP" => Some(Side::Opp),
            _ => None,
        }
    }
}

/// What kind of thing a move id names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A bare `claim`: a proposition with no reasons of its own.
    Claim,
    /// One reason of a `since`: a proposition.
    Premise,
    /// A `φ since S` argument as a whole.
    Since,
    Why,
    Concede,
    Retract,
}

/// One id of the dialogue and what it stands for.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub id: String,
    pub side: Side,
    pub kind: Kind,
    pub text: String,
    pub round: u32,
    pub phase: Phase,
    /// What it answers: the target of a why, concede, retract or attack; for a `since`, the
    /// proposition it gives reasons for.
    pub target: Option<String>,
}

/// The dialogue as it stands: every id, and which lines are open.
#[derive(Debug, Clone, Default)]
pub struct State {
    pub nodes: Vec<Node>,
    index: HashMap<String, usize>,
    /// (side, id) pairs: that side conceded that id.
    conceded: BTreeSet<(String, String)>,
    /// Propositions withdrawn by their own side.
    retracted: BTreeSet<String>,
    /// Arguments the moderator struck as weak, with its reason.
    struck: HashMap<String, String>,
    /// `why` ids answered (by `since` or `retract`).
    answered: BTreeSet<String>,
    /// Moves made per side, for the next id.
    counts: HashMap<&'static str, usize>,
    /// (side, round) pairs: that side took its turn in that round, with a reply the dialogue
    /// could read. A turn that failed, timed out or fell back to prose was not the side's
    /// choice, so no rule reads it as one.
    spoke: BTreeSet<(&'static str, u32)>,
}

/// Why a move is not allowed, in a sentence the model can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Rule(pub String);

/// The rule reads as the sentence it is.
impl std::ops::Deref for Rule {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl From<String> for Rule {
    fn from(sentence: String) -> Rule {
        Rule(sentence)
    }
}

impl From<&str> for Rule {
    fn from(sentence: &str) -> Rule {
        Rule(sentence.to_string())
    }
}

/// A `Rule` a move broke, written as with `format!`.
macro_rules! broken {
    ($($arg:tt)*) => {
        $crate::protocol::dialogue::rules::Rule(format!($($arg)*))
    };
}
pub(super) use broken;

impl State {
    /// Folds every move of the dialogue's turns, in order, and the moderator's rulings.
    pub fn from_turns(turns: &[Turn]) -> State {
        let mut state = State::default();
        for turn in turns {
            if let Some(ruling) = crate::debate::Ruling::of(turn) {
                for ruled in ruling.struck {
                    state.struck.insert(ruled.id, ruled.reason);
                }
                continue;
            }
            if !turn.phase.is_debater() {
                continue;
            }
            let Some(side) = Side::of_seat(&turn.seat) else {
                continue;
            };
            if turn.phase != Phase::Lapse
                && matches!(turn.status, TurnStatus::Ok | TurnStatus::Truncated)
            {
                state.spoke.insert((side.seat(), turn.round));
            }
            for mv in &turn.moves {
                state.record(side, turn.round, turn.phase, mv);
            }
        }
        state
    }

    pub fn get(&self, id: &str) -> Option<&Node> {
        self.index.get(id).map(|&i| &self.nodes[i])
    }

    fn push(&mut self, node: Node) {
        self.index.insert(node.id.clone(), self.nodes.len());
        self.nodes.push(node);
    }

    /// Adds one journaled move (and, for a `since`, its premises) to the state.
    pub(super) fn record(&mut self, side: Side, round: u32, phase: Phase, mv: &Move) {
        // A premise is journaled as a claim answering its `since`: `P3.1` under `P3`.
        let is_premise = mv.id.contains('.');
        if !is_premise {
            *self.counts.entry(side.seat()).or_default() += 1;
        }
        let first = mv.answers.first().cloned();
        let kind = match mv.act {
            Act::Claim if is_premise => Kind::Premise,
            Act::Claim => Kind::Claim,
            Act::Since => Kind::Since,
            Act::Why => Kind::Why,
            Act::Concede => Kind::Concede,
            Act::Retract => Kind::Retract,
        };
        match mv.act {
            Act::Concede => {
                for id in &mv.answers {
                    self.conceded.insert((side.seat().to_string(), id.clone()));
                }
            }
            Act::Retract => {
                for id in &mv.answers {
                    match self.get(id).map(|n| n.kind) {
                        Some(Kind::Why) => {
                            self.answered.insert(id.clone());
                        }
                        Some(_) => {
                            self.retracted.insert(id.clone());
                            // Retracting a proposition answers every why against it.
                            let whys: Vec<String> = self.whys_against(id);
                            self.answered.extend(whys);
                        }
                        None => {}
                    }
                }
            }
            Act::Since => {
                for id in &mv.answers {
                    if self.get(id).is_some_and(|n| n.kind == Kind::Why) {
                        self.answered.insert(id.clone());
                    } else {
                        let whys = self.whys_against(id);
                        self.answered.extend(whys);
                    }
                }
            }
            _ => {}
        }
        let target = match mv.act {
            // A since is filed under the proposition it supports, not the why it answers.
            Act::Since => mv
                .answers
                .iter()
                .find(|id| self.get(id).is_some_and(|n| n.kind != Kind::Why))
                .cloned()
                .or(first),
            _ => first,
        };
        self.push(Node {
            id: mv.id.clone(),
            side,
            kind,
            text: mv.text.clone(),
            round,
            phase,
            target,
        });
    }

    fn whys_against(&self, id: &str) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|n| n.kind == Kind::Why && n.target.as_deref() == Some(id))
            .map(|n| n.id.clone())
            .collect()
    }

    /// Whether `id` is a proposition (or argument) that still stands: not retracted, not
    /// struck, and (for a premise) its argument neither.
    pub fn stands(&self, id: &str) -> bool {
        let out = |id: &str| self.retracted.contains(id) || self.struck.contains_key(id);
        !out(id)
            && self
                .get(id)
                .and_then(|n| n.target.as_ref().filter(|_| n.kind == Kind::Premise))
                .is_none_or(|parent| !out(parent))
    }

    /// Why the moderator struck `id` (or, for a premise, its argument), if it did.
    pub fn struck(&self, id: &str) -> Option<&str> {
        let parent = self
            .get(id)
            .filter(|n| n.kind == Kind::Premise)
            .and_then(|n| n.target.as_deref());
        std::iter::once(id)
            .chain(parent)
            .find_map(|id| self.struck.get(id))
            .map(String::as_str)
    }

    fn conceded_by(&self, side: Side, id: &str) -> bool {
        self.conceded
            .contains(&(side.seat().to_string(), id.to_string()))
    }

    /// A `why` still waiting for its answer.
    /// A `why` whose asker has since conceded what it questioned is settled, not open (seed
    /// review 002/003 #15).
    pub fn is_open_why(&self, id: &str) -> bool {
        let Some(why) = self.get(id).filter(|n| n.kind == Kind::Why) else {
            return false;
        };
        !self.answered.contains(id)
            && why
                .target
                .as_deref()
                .is_some_and(|t| self.stands(t) && !self.conceded_by(why.side, t))
    }

    /// Every `why` never answered: the unaddressed critical questions.
    pub fn open_whys(&self) -> Vec<&Node> {
        self.nodes
            .iter()
            .filter(|n| self.is_open_why(&n.id))
            .collect()
    }

    /// How many turns `side` took, with a reply the dialogue could read, in the rounds after
    /// `after` up to and including `through`.
    pub fn turns_taken(&self, side: Side, after: u32, through: u32) -> u32 {
        if after >= through {
            return 0;
        }
        self.spoke
            .range((side.seat(), after + 1)..=(side.seat(), through))
            .count() as u32
    }

    /// The next id for a move of `side`.
    pub fn next_id(&self, side: Side) -> String {
        format!(
            "{}{}",
            side.letter(),
            self.counts.get(side.seat()).copied().unwrap_or(0) + 1
        )
    }

    /// The bare claims `side` must challenge (or concede) on this turn: the other side's
    /// claims from its latest argumentation turn that are still standing and unanswered.
    pub fn obligations(&self, side: Side) -> Vec<&Node> {
        let other = side.other();
        let Some(latest) = self
            .nodes
            .iter()
            .filter(|n| n.side == other && n.phase == Phase::Argument)
            .map(|n| n.round)
            .max()
        else {
            return Vec::new();
        };
        self.nodes
            .iter()
            .filter(|n| {
                n.side == other
                    && n.kind == Kind::Claim
                    && n.phase == Phase::Argument
                    && n.round == latest
                    && self.stands(&n.id)
                    && !self.conceded_by(side, &n.id)
                    && self.whys_by(side, &n.id).is_empty()
            })
            .collect()
    }

    fn whys_by(&self, side: Side, id: &str) -> Vec<&Node> {
        self.nodes
            .iter()
            .filter(|n| n.kind == Kind::Why && n.side == side && n.target.as_deref() == Some(id))
            .collect()
    }

    /// The ids `side` may answer with `act` now, in the dialogue's order.
    pub fn targets(&self, side: Side, act: Act) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|n| self.check(side, act, &n.id).is_ok())
            .map(|n| n.id.clone())
            .collect()
    }

    /// Whether `side` may answer `target` with `act`: the validity table of the note, with
    /// the rule that forbids it otherwise.
    pub fn check(&self, side: Side, act: Act, target: &str) -> Result<(), Rule> {
        let node = self
            .get(target)
            .ok_or_else(|| format!("there is no move {target} to answer"))?;
        let own = node.side == side;
        let is_proposition = matches!(node.kind, Kind::Claim | Kind::Premise | Kind::Since);
        if matches!(node.kind, Kind::Concede | Kind::Retract) {
            return Err(broken!(
                "{target} is a `{}`, which closes its line: nothing answers it",
                if node.kind == Kind::Concede {
                    "concede"
                } else {
                    "retract"
                }
            ));
        }
        if is_proposition && !self.stands(target) {
            if let Some(reason) = self.struck(target) {
                return Err(broken!(
                    "{target} was struck by the moderator as weak ({reason}): its line is closed"
                ));
            }
            return Err(broken!("{target} was retracted: its line is closed"));
        }
        match act {
            Act::Why | Act::Claim | Act::Concede => {
                if own {
                    return Err(broken!(
                        "{target} is your own move: `{}` answers the other side's claims",
                        act.as_str()
                    ));
                }
                if node.kind == Kind::Why {
                    return Err(broken!(
                        "{target} is a `why` against you: answer it with `since` (your reasons) \
                         or `retract` (rule: why → since / retract)"
                    ));
                }
                if self.conceded_by(side, target) {
                    return Err(broken!("you conceded {target}: its line is closed for you"));
                }
                if act == Act::Why && node.kind == Kind::Since {
                    return Err(broken!(
                        "{target} already gives its reasons: challenge one of them \
                         ({target}.1, …) with `why`, or attack the inference with a `claim` \
                         (rule: since → why ψ / concede ψ, ψ ∈ S)"
                    ));
                }
                if act == Act::Why && !self.whys_by(side, target).is_empty() {
                    return Err(broken!(
                        "you already asked why {target}: wait for the answer"
                    ));
                }
                Ok(())
            }
            Act::Since | Act::Retract => {
                if node.kind == Kind::Why {
                    if own {
                        return Err(broken!(
                            "{target} is your own `why`: the other side answers it"
                        ));
                    }
                    if !self.is_open_why(target) {
                        return Err(broken!("{target} was answered already"));
                    }
                    return Ok(());
                }
                if !own {
                    return Err(broken!(
                        "{target} is the other side's {}: answer it with `why`, `claim` (¬φ) or \
                         `concede` (rule: claim → why / claim ¬φ / concede); `{}` answers a \
                         `why` against you or stands by your own claim",
                        kind_name(node.kind),
                        act.as_str()
                    ));
                }
                if act == Act::Since && node.kind == Kind::Since {
                    return Err(broken!(
                        "{target} already gives its reasons: give reasons for one of its \
                         premises ({target}.1, …) instead"
                    ));
                }
                Ok(())
            }
        }
    }

    /// The relation an answering claim has to its target.
    pub(super) fn attack_relation(
        &self,
        target: &str,
        asked: Option<&str>,
    ) -> Result<Relation, Rule> {
        let on_since = self.get(target).is_some_and(|n| n.kind == Kind::Since);
        match asked.map(str::trim) {
            None | Some("") => Ok(if on_since {
                Relation::Undercut
            } else {
                Relation::Rebut
            }),
            Some("rebut") => Ok(Relation::Rebut),
            Some("undercut") if on_since => Ok(Relation::Undercut),
            Some("undercut") => Err(broken!(
                "an undercut attacks the inference of a `since` argument; {target} is a single \
                 proposition, so a claim against it is a rebut"
            )),
            Some(other) => Err(broken!("attack {other:?} is neither rebut nor undercut")),
        }
    }
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Claim => "claim",
        Kind::Premise => "premise",
        Kind::Since => "argument",
        Kind::Why => "why",
        Kind::Concede => "concession",
        Kind::Retract => "retraction",
    }
}

/// Which turn a reply is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Round 0: PRO states its thesis; OPP claims its negation or asks why.
    Opening,
    /// Rounds 1..N.
    Argument,
    /// The last word: concessions and retractions only, or nothing.
    Closing,
}

impl Stage {
    pub fn phase(self) -> Phase {
        match self {
            Stage::Opening => Phase::Opening,
            Stage::Argument => Phase::Argument,
            Stage::Closing => Phase::Closing,
        }
    }

    /// The acts a side may make at this stage.
    pub(super) fn acts(self, side: Side) -> &'static [Act] {
        match (self, side) {
            (Stage::Opening, Side::Pro) => &[Act::Claim],
            (Stage::Opening, Side::Opp) => &[Act::Claim, Act::Why],
            (Stage::Argument, _) => &[Act::Since, Act::Why, Act::Claim, Act::Concede, Act::Retract],
            (Stage::Closing, _) => &[Act::Concede, Act::Retract],
        }
    }

    pub(super) fn moves_allowed(self) -> (usize, usize) {
        match self {
            Stage::Opening => (1, 1),
            Stage::Argument => (1, MAX_MOVES),
            Stage::Closing => (0, MAX_MOVES),
        }
    }
}

/// The targets each act may take on a turn.
pub fn legal(state: &State, side: Side, stage: Stage) -> Vec<(Act, Vec<String>)> {
    stage
        .acts(side)
        .iter()
        .filter_map(|&act| {
            if stage == Stage::Opening && side == Side::Pro {
                return Some((act, Vec::new()));
            }
            let mut targets = state.targets(side, act);
            if stage == Stage::Opening {
                // OPP answers the thesis, nothing else.
                targets.retain(|t| t == "P1");
            }
            (!targets.is_empty()).then_some((act, targets))
        })
        .collect()
}

/// The move as the workbench and the report show it: `P3 since {P3.1, P3.2} → O2`.
pub fn headline(mv: &Move) -> String {
    let answers = if mv.answers.is_empty() {
        String::new()
    } else {
        let shown = match mv.act {
            // A since or retract answering a why shows the why; the proposition follows.
            Act::Since | Act::Retract if mv.answers.len() > 1 => mv.answers[1..].join(", "),
            _ => mv.answers.join(", "),
        };
        format!(" → {shown}")
    };
    match mv.act {
        Act::Since => {
            let premises: Vec<String> = (1..=mv.premises.len())
                .map(|i| format!("{}.{i}", mv.id))
                .collect();
            format!("{} since {{{}}}{answers}", mv.id, premises.join(", "))
        }
        _ => format!("{} {}{answers}", mv.id, mv.act.as_str()),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::replies::*;
    use super::*;
    use serde_json::{Value, json};

    pub(crate) fn mv(
        id: &str,
        act: Act,
        text: &str,
        answers: &[&str],
        relation: Option<Relation>,
    ) -> Move {
        Move {
            id: id.into(),
            act,
            text: text.into(),
            premises: Vec::new(),
            answers: answers.iter().map(|s| s.to_string()).collect(),
            relation,
        }
    }

    pub(crate) fn since(id: &str, text: &str, premises: &[&str], answers: &[&str]) -> Vec<Move> {
        let mut moves = vec![Move {
            premises: premises.iter().map(|s| s.to_string()).collect(),
            ..mv(id, Act::Since, text, answers, Some(Relation::Support))
        }];
        for (i, p) in premises.iter().enumerate() {
            moves.push(mv(
                &format!("{id}.{}", i + 1),
                Act::Claim,
                p,
                &[id],
                Some(Relation::Support),
            ));
        }
        moves
    }

    pub(crate) fn turn(seat: &str, round: u32, phase: Phase, moves: Vec<Move>) -> Turn {
        Turn {
            moves,
            ..Turn::fixture(seat, round, phase)
        }
    }

    /// A dialogue with one of every kind of id on each side (see the table test).
    fn every_kind() -> Vec<Turn> {
        use Relation::*;
        let mut pro1 = since("P2", "φ", &["a", "b"], &["P1"]);
        pro1.push(mv("P3", Act::Why, "¬φ", &["O1"], None));
        pro1.push(mv("P4", Act::Claim, "x", &["O1"], Some(Rebut)));
        let mut opp1 = since("O2", "¬φ", &["c"], &["O1"]);
        opp1.extend([
            mv("O3", Act::Why, "a", &["P2.1"], None),
            mv("O4", Act::Concede, "x", &["P4"], None),
            mv("O5", Act::Claim, "y", &["P1"], Some(Rebut)),
            mv("O6", Act::Retract, "y", &["O5"], None),
        ]);
        vec![
            pro_thesis("φ"),
            opp_rebuts("¬φ"),
            turn("PRO", 1, Phase::Argument, pro1),
            turn("OPP", 1, Phase::Argument, opp1),
            turn(
                "PRO",
                2,
                Phase::Argument,
                vec![
                    mv("P5", Act::Concede, "¬φ", &["O2"], None),
                    mv("P6", Act::Claim, "z", &["O2"], Some(Undercut)),
                    mv("P7", Act::Retract, "z", &["P6"], None),
                    mv("P8", Act::Why, "c", &["O2.1"], None),
                ],
            ),
        ]
    }

    #[test]
    fn the_validity_table_every_act_against_every_kind_of_move() {
        let state = State::from_turns(&every_kind());
        use Act::*;
        let table: &[(&str, &[Act], &str)] = &[
            ("P1", &[Why, Claim, Concede], "the other side's claim"),
            (
                "P2",
                &[Claim, Concede],
                "the other side's since: attack or concede, its premises take the whys",
            ),
            (
                "P2.1",
                &[Claim, Concede],
                "a premise OPP already asked why of",
            ),
            ("P2.2", &[Why, Claim, Concede], "a fresh premise"),
            ("P3", &[], "a why already answered (O2 gave reasons for O1)"),
            ("P8", &[Since, Retract], "an open why against OPP"),
            ("P4", &[], "a claim OPP conceded"),
            ("P5", &[], "a concede closes its line"),
            ("P6", &[], "a claim its side retracted"),
            ("P7", &[], "a retract closes its line"),
            ("O1", &[Since, Retract], "OPP's own claim"),
            (
                "O2",
                &[Retract],
                "OPP's own since: retract it, its premises take more reasons",
            ),
            ("O2.1", &[Since, Retract], "OPP's own premise"),
            ("O3", &[], "OPP's own why"),
            ("O4", &[], "OPP's own concede"),
            ("O5", &[], "OPP's own retracted claim"),
            ("O6", &[], "OPP's own retract"),
        ];
        for (target, legal, what) in table {
            for act in [Claim, Why, Concede, Retract, Since] {
                let verdict = state.check(Side::Opp, act, target);
                assert_eq!(
                    verdict.is_ok(),
                    legal.contains(&act),
                    "{} against {target} ({what}): {verdict:?}",
                    act.as_str()
                );
                if let Err(rule) = verdict {
                    assert!(!rule.is_empty());
                }
            }
        }
        assert!(
            state
                .check(Side::Opp, Why, "Z9")
                .unwrap_err()
                .contains("no move Z9")
        );
        // The rules name the note's table when a reply goes the wrong way.
        let rule = state.check(Side::Opp, Since, "P1").unwrap_err();
        assert!(rule.contains("claim → why / claim ¬φ / concede"), "{rule}");
        let rule = state.check(Side::Opp, Claim, "P8").unwrap_err();
        assert!(rule.contains("why → since / retract"), "{rule}");
        let rule = state.check(Side::Opp, Why, "P2").unwrap_err();
        assert!(rule.contains("since → why ψ"), "{rule}");
    }

    #[test]
    fn open_whys_and_next_ids_follow_the_journal() {
        let state = State::from_turns(&every_kind());
        let open: Vec<&str> = state.open_whys().iter().map(|n| n.id.as_str()).collect();
        // O3 asks why P2.1 (unanswered); P3 was answered by O2; P8 is fresh.
        assert_eq!(open, vec!["O3", "P8"]);
        assert_eq!(state.next_id(Side::Pro), "P9");
        assert_eq!(state.next_id(Side::Opp), "O7");
        // OPP concedes what its O3 asked about: the question is settled, not left unaddressed.
        let mut turns = every_kind();
        turns.push(turn(
            "OPP",
            4,
            Phase::Argument,
            vec![mv("O7", Act::Concede, "", &["P2.1"], None)],
        ));
        let state = State::from_turns(&turns);
        let open: Vec<&str> = state.open_whys().iter().map(|n| n.id.as_str()).collect();
        assert_eq!(open, vec!["P8"]);
    }

    fn reply(moves: Value) -> Value {
        json!({"argument": "Because.", "moves": moves})
    }

    /// A side's turn at a stage of a round, in a state: where the tests check replies.
    struct At<'a> {
        state: &'a State,
        side: Side,
        stage: Stage,
        round: u32,
    }

    fn at(state: &State, side: Side, stage: Stage, round: u32) -> At<'_> {
        At {
            state,
            side,
            stage,
            round,
        }
    }

    impl At<'_> {
        /// Checks `moves` as this turn's reply, refusing any illegal move.
        fn strict(&self, moves: Value) -> Result<Checked, crate::engine::Unusable> {
            self.check(moves, false)
        }

        /// As `strict`, but an illegal move is recorded as a violation instead of refused.
        fn lenient(&self, moves: Value) -> Result<Checked, crate::engine::Unusable> {
            self.check(moves, true)
        }

        fn check(&self, moves: Value, lenient: bool) -> Result<Checked, crate::engine::Unusable> {
            let (state, side, stage, round) = (self.state, self.side, self.stage, self.round);
            check_reply(&reply(moves), state, side, stage, round, lenient)
        }
    }

    /// PRO's opening turn: its thesis P1.
    pub(crate) fn pro_thesis(text: &str) -> Turn {
        turn(
            "PRO",
            0,
            Phase::Opening,
            vec![mv("P1", Act::Claim, text, &[], None)],
        )
    }

    /// OPP's opening turn: its thesis O1, rebutting P1.
    pub(crate) fn opp_rebuts(text: &str) -> Turn {
        let rebuttal = mv("O1", Act::Claim, text, &["P1"], Some(Relation::Rebut));
        turn("OPP", 0, Phase::Opening, vec![rebuttal])
    }

    /// OPP's opening turn when it holds no thesis: a `why` of P1.
    pub(crate) fn opp_asks_why(text: &str) -> Turn {
        turn(
            "OPP",
            0,
            Phase::Opening,
            vec![mv("O1", Act::Why, text, &["P1"], None)],
        )
    }

    /// PRO's thesis and OPP's rebuttal of it: the opening most tests start from.
    pub(crate) fn opening() -> Vec<Turn> {
        vec![pro_thesis("Adopt tower"), opp_rebuts("Keep the loop")]
    }

    /// The opening, then PRO's first argument: its thesis since `premises` (P2, P2.1, …).
    fn argued(premises: &[&str]) -> Vec<Turn> {
        let mut turns = opening();
        let argument = since("P2", "Adopt tower", premises, &["P1"]);
        turns.push(turn("PRO", 1, Phase::Argument, argument));
        turns
    }

    #[test]
    fn the_opening_takes_one_thesis_then_its_negation_or_a_why() {
        let empty = State::default();
        let thesis = at(&empty, Side::Pro, Stage::Opening, 0)
            .strict(json!([{"act": "claim", "text": "Adopt tower"}]))
            .unwrap();
        assert_eq!(thesis.moves[0].id, "P1");
        let err = at(&empty, Side::Pro, Stage::Opening, 0)
            .strict(json!([{"act": "why", "target": "X"}]))
            .unwrap_err();
        assert!(err.contains("PRO states its thesis"), "{err}");
        let state = State::from_turns(&opening()[..1]);
        let why = at(&state, Side::Opp, Stage::Opening, 0)
            .strict(json!([{"act": "why", "target": "P1"}]))
            .unwrap();
        assert_eq!(why.moves[0].answers, vec!["P1"]);
        let err = at(&state, Side::Opp, Stage::Opening, 0)
            .strict(json!([{"act": "concede", "target": "P1"}]))
            .unwrap_err();
        assert!(err.contains("OPP answers the thesis"), "{err}");
        let err = at(&state, Side::Opp, Stage::Opening, 0)
            .strict(json!([]))
            .unwrap_err();
        assert!(err.contains("at least 1"), "{err}");
    }

    #[test]
    fn a_since_brings_its_premises_as_arguments_and_answers_the_why() {
        let mut turns = argued(&["it is maintained"]);
        turns.push(turn(
            "OPP",
            1,
            Phase::Argument,
            vec![mv("O2", Act::Why, "it is maintained", &["P2.1"], None)],
        ));
        let state = State::from_turns(&turns);
        let checked = at(&state, Side::Pro, Stage::Argument, 2).strict(json!([{"act": "since", "target": "O2", "premises": ["40 releases in 2025", "tokio team"]}])).unwrap();
        let ids: Vec<&str> = checked.moves.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, vec!["P3", "P3.1", "P3.2"]);
        assert_eq!(checked.moves[0].text, "it is maintained");
        assert_eq!(checked.moves[0].answers, vec!["P2.1", "O2"]);
        assert_eq!(headline(&checked.moves[0]), "P3 since {P3.1, P3.2} → O2");
        assert_eq!(checked.moves[1].answers, vec!["P3"]);
        turns.push(turn("PRO", 2, Phase::Argument, checked.moves));
        assert!(State::from_turns(&turns).open_whys().is_empty());
    }

    /// Seed review 002/003 #1: retracting a since-argument names the argument withdrawn, its
    /// reasons included, never its bare conclusion (which read as retracting the thesis).
    #[test]
    fn retracting_an_argument_names_the_argument_not_its_conclusion() {
        let mut turns = opening();
        turns.push(turn(
            "PRO",
            1,
            Phase::Argument,
            since(
                "P2",
                "Adopt tower",
                &["less code", "it is maintained"],
                &["P1"],
            ),
        ));
        let state = State::from_turns(&turns);
        let checked = at(&state, Side::Pro, Stage::Argument, 2)
            .strict(json!([{"act": "retract", "target": "P2"}]))
            .unwrap();
        assert_eq!(
            checked.moves[0].text,
            "Adopt tower since less code; it is maintained"
        );
        assert_eq!(checked.moves[0].answers, vec!["P2"]);
        let plain = at(&state, Side::Pro, Stage::Argument, 2)
            .strict(json!([{"act": "retract", "target": "P2.1"}]))
            .unwrap();
        assert_eq!(plain.moves[0].text, "less code");
    }

    #[test]
    fn an_illegal_move_is_refused_strictly_then_recorded_leniently() {
        let turns = argued(&["fewer bugs"]);
        let state = State::from_turns(&turns);
        let bad = json!([
            {"act": "since", "target": "P2.1", "premises": ["no"]},
            {"act": "why", "target": "P2.1"}
        ]);
        let err = at(&state, Side::Opp, Stage::Argument, 1)
            .strict(bad.clone())
            .unwrap_err();
        assert!(
            err.starts_with("move 1:") && err.contains("claim → why"),
            "{err}"
        );
        let kept = at(&state, Side::Opp, Stage::Argument, 1)
            .lenient(bad)
            .unwrap();
        assert_eq!(kept.moves.len(), 1);
        assert_eq!(kept.moves[0].act, Act::Why);
        assert_eq!(kept.moves[0].id, "O2");
        assert_eq!(kept.violations.len(), 1);
        assert!(kept.violations[0].attempted.starts_with("since P2.1"));
        // Within one reply the state moves on: conceding then challenging the same point fails.
        let err = at(&state, Side::Opp, Stage::Argument, 1)
            .strict(json!([{"act": "concede", "target": "P2.1"}, {"act": "why", "target": "P2.1"}]))
            .unwrap_err();
        assert!(err.contains("move 2") && err.contains("conceded"), "{err}");
        let err = at(&state, Side::Opp, Stage::Argument, 1).strict(json!([{"act": "why", "target": "P2.1"}, {"act": "concede", "target": "P2"}, {"act": "claim", "target": "P1", "text": "no"}, {"act": "claim", "target": "P2", "text": "no"}])).unwrap_err();
        assert!(err.contains("at most 3"), "{err}");
    }

    #[test]
    fn a_bare_claim_must_be_challenged_on_the_next_turn() {
        let mut turns = opening();
        turns.push(turn(
            "PRO",
            1,
            Phase::Argument,
            vec![mv(
                "P2",
                Act::Claim,
                "the loop has bugs",
                &["O1"],
                Some(Relation::Rebut),
            )],
        ));
        let state = State::from_turns(&turns);
        assert_eq!(
            state
                .obligations(Side::Opp)
                .iter()
                .map(|n| n.id.as_str())
                .collect::<Vec<_>>(),
            vec!["P2"]
        );
        let ignoring = json!([{"act": "claim", "target": "P1", "text": "tower adds a dependency"}]);
        let err = at(&state, Side::Opp, Stage::Argument, 1)
            .strict(ignoring.clone())
            .unwrap_err();
        assert!(err.contains("P2 is a bare claim"), "{err}");
        let kept = at(&state, Side::Opp, Stage::Argument, 1)
            .lenient(ignoring)
            .unwrap();
        assert_eq!(kept.moves.len(), 1);
        assert!(kept.violations[0].rule.contains("P2 is a bare claim"));
        for answer in [
            json!({"act": "why", "target": "P2"}),
            json!({"act": "concede", "target": "P2"}),
        ] {
            assert!(
                at(&state, Side::Opp, Stage::Argument, 1)
                    .strict(json!([answer]))
                    .is_ok()
            );
        }
        // The opening theses oblige nothing: they are what the dialogue is about.
        assert!(
            State::from_turns(&opening())
                .obligations(Side::Pro)
                .is_empty()
        );
    }

    #[test]
    fn undercuts_only_hit_inferences_and_the_closing_takes_concessions_only() {
        let turns = argued(&["fewer bugs"]);
        let state = State::from_turns(&turns);
        let on_since = at(&state, Side::Opp, Stage::Argument, 1).strict(json!([{"act": "claim", "target": "P2", "text": "bugs are not the issue"}, {"act": "why", "target": "P2.1"}])).unwrap();
        assert_eq!(on_since.moves[0].relation, Some(Relation::Undercut));
        let err = at(&state, Side::Opp, Stage::Argument, 1)
            .strict(json!([{"act": "claim", "target": "P2.1", "text": "no", "attack": "undercut"}]))
            .unwrap_err();
        assert!(err.contains("undercut attacks the inference"), "{err}");
        let err = at(&state, Side::Opp, Stage::Closing, 3)
            .strict(json!([{"act": "why", "target": "P2.1"}]))
            .unwrap_err();
        assert!(
            err.contains("closing round records concessions and retractions only"),
            "{err}"
        );
        assert!(
            at(&state, Side::Opp, Stage::Closing, 3)
                .strict(json!([]))
                .is_ok()
        );
    }

    #[test]
    fn the_schema_offers_only_the_moves_legal_now() {
        let state = State::from_turns(&every_kind());
        let schema = reply_schema(&state, Side::Opp, Stage::Argument);
        let shapes = schema["properties"]["moves"]["items"]["anyOf"]
            .as_array()
            .unwrap();
        let targets = |act: &str| -> Vec<String> {
            shapes
                .iter()
                .find(|s| s["properties"]["act"]["const"] == act)
                .map(|s| serde_json::from_value(s["properties"]["target"]["enum"].clone()).unwrap())
                .unwrap_or_default()
        };
        assert_eq!(targets("why"), vec!["P1", "P2.2"]);
        assert_eq!(targets("since"), vec!["O1", "O2.1", "P8"]);
        assert_eq!(targets("retract"), vec!["O1", "O2", "O2.1", "P8"]);
        assert_eq!(targets("concede"), vec!["P1", "P2", "P2.1", "P2.2"]);
        // Seed review 002/003 #7: undercut is offered only against an argument with reasons.
        let claims = shapes
            .iter()
            .filter(|s| s["properties"]["act"]["const"] == "claim")
            .count();
        assert_eq!(claims, 2, "plain claims and arguments apart");
        for claim in shapes
            .iter()
            .filter(|s| s["properties"]["act"]["const"] == "claim")
        {
            let undercuts = claim["properties"]["attack"]["enum"]
                .as_array()
                .unwrap()
                .iter()
                .any(|a| a == "undercut");
            for target in claim["properties"]["target"]["enum"].as_array().unwrap() {
                let since = state
                    .get(target.as_str().unwrap())
                    .is_some_and(|n| n.kind == Kind::Since);
                assert_eq!(undercuts, since, "{target}: {claim}");
            }
        }
        let closing = reply_schema(&state, Side::Opp, Stage::Closing);
        let acts: Vec<&str> = closing["properties"]["moves"]["items"]["anyOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["properties"]["act"]["const"].as_str().unwrap())
            .collect();
        assert_eq!(acts, vec!["concede", "retract"]);
        assert_eq!(closing["properties"]["moves"]["minItems"], 0);
        let opening = reply_schema(&State::default(), Side::Pro, Stage::Opening);
        assert_eq!(opening["properties"]["moves"]["maxItems"], 1);
    }
}
