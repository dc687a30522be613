//! The event stream every face (TUI, headless NDJSON) folds over, and the controls sent back.

use super::model::{DebateStatus, Move, Phase, Seat, TurnStatus};
use super::synthesis::Confidence;
use serde::{Deserialize, Serialize};

/// Something that happened in a debate. Turn events are emitted only after the turn is journaled.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, strum::IntoStaticStr)]
#[serde(tag = "type", rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Event {
    /// The debate exists in the journal; seats are not assigned yet.
    DebateCreated {
        id: String,
        question: String,
        protocol: String,
        resumed: bool,
        /// How the protocol wants to be shown, from the first frame.
        #[serde(default)]
        presentation: super::Presentation,
    },
    /// The moderator asks the human one clarifying question before assigning perspectives.
    ClarificationRequested {
        question: String,
    },
    /// Perspectives are assigned and the rounds are about to begin.
    DebateStarted {
        id: String,
        question: String,
        protocol: String,
        seats: Vec<Seat>,
        max_rounds: u32,
        provider: String,
        model: String,
        /// What every record of this debate should say about its provider (a demonstration
        /// model, say).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        caveat: Option<String>,
        /// How the protocol asks to be shown (moderated's looks when absent).
        #[serde(default)]
        presentation: super::Presentation,
    },
    RoundStarted {
        round: u32,
        /// The round limit, when the person moved it (one more round past the limit).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
    },
    TurnStarted {
        round: u32,
        phase: Phase,
        seat: String,
    },
    /// A piece of prose as it streams (never raw JSON).
    TurnDelta {
        seat: String,
        round: u32,
        phase: Phase,
        text: String,
    },
    TurnCompleted {
        round: u32,
        phase: Phase,
        seat: String,
        content: String,
        moves: Vec<Move>,
        confidence: Option<f64>,
        tokens_in: u64,
        tokens_out: u64,
        tokens_estimated: bool,
        latency_ms: u64,
        provider: String,
        model: String,
        status: TurnStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
        /// True when the turn was served from the journal on resume.
        replayed: bool,
    },
    /// A provider call failed and will be tried again; streamed text of the attempt is void.
    Retry {
        seat: String,
        round: u32,
        phase: Phase,
        attempt: u32,
        reason: String,
        delay_ms: u64,
    },
    /// A guardrail noticed something about a seat.
    Flag {
        round: u32,
        seat: String,
        kind: FlagKind,
        detail: String,
    },
    /// Something the user should know that is not an error (a degraded endpoint, say).
    Notice {
        message: String,
    },
    RoundCompleted {
        round: u32,
        convergence: Convergence,
        summary: String,
    },
    /// Where the candidates stand after a round (the panel's options and their judges), with
    /// the headline of the round's check and every change of mind so far.
    Standings {
        round: u32,
        headline: String,
        standings: Vec<super::Standing>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        changes: Vec<String>,
    },
    /// The shared context K every seat is given: facts with their sources, found under `root`.
    SharedContext {
        root: String,
        facts: Vec<super::Fact>,
        /// What gathering skipped or could not do (no git history, say).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        notes: Vec<String>,
    },
    /// The moderator's rubric scores so far (the arena's `--score`), each beside the gradual
    /// score of the turn's own arguments as it stands.
    Scores {
        round: u32,
        scores: Vec<super::TurnScore>,
    },
    /// Who sees whom (announced when it is not everyone seeing everyone): `topology` is its
    /// name, `sees` each seat with the seats whose turns it is shown.
    Topology {
        topology: String,
        sees: Vec<(String, Vec<String>)>,
    },
    /// A protocol whose steps are named phases rather than numbered rounds (a code debate's
    /// clarification, self-check, proposal…) entered one; shown in the header.
    Stage {
        name: String,
    },
    /// A code debate settled a version: its number, the phase that wrote it, its summary,
    /// whether its hooks passed (None: none ran), and its diff from the version before.
    Version {
        number: u32,
        phase: String,
        summary: String,
        passes: Option<bool>,
        diff: String,
    },
    /// A code debate's hooks ran on a version: each hook's one-line summary and whether it
    /// passed.
    Hooks {
        version: u32,
        results: Vec<(String, bool)>,
    },
    /// Lessons from earlier debates given to this one's seats.
    Lessons {
        lessons: Vec<super::Lesson>,
    },
    /// A lesson this debate drafted was refused: it addressed the model rather than the
    /// problem (or carried a link, a key or an escape sequence).
    LessonRefused {
        lesson: String,
        reason: String,
    },
    /// A closing vote was counted.
    Votes {
        round: u32,
        votes: super::VoteView,
    },
    /// The debate waits at an approval gate until it is approved or rejected (here, or with
    /// `moot approve` / `moot reject` from another terminal) or the timeout pauses it.
    GateRequested {
        gate: String,
        point: String,
        round: u32,
        summary: String,
        timeout_seconds: u64,
        /// What the reviewer weighs beside the summary (standings, scores, votes, the round's
        /// moves), as `moot gates ID --json` lists it; events written before it carry none.
        #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
        artifacts: serde_json::Value,
    },
    /// A gate was settled: `approved`, `rejected` or `timed_out`, by whom and why.
    GateDecided {
        gate: String,
        decision: GateDecision,
        by: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The moderator ruled on a round of a formal dialogue (what its ruling turn keeps):
    /// arguments struck as weak, moves that attack the speaker. Follows that turn.
    Ruled {
        round: u32,
        ruling: super::Ruling,
    },
    /// A move broke the dialogue's rules and was rejected (after one repair request), or the
    /// moderator flagged it as an attack on the speaker.
    Violation {
        round: u32,
        seat: String,
        rule: String,
    },
    /// A seat that is not moot's model is to speak: a person (answered like a question) or an
    /// outside agent (through the arena directory or `moot arena submit`).
    TurnRequested {
        round: u32,
        phase: Phase,
        seat: String,
        turn_number: u32,
        /// `person` or `outside`.
        by: String,
        timeout_seconds: u64,
    },
    /// The debate waits for a Control; `timeout_seconds` later it pauses.
    Checkpoint {
        round: u32,
        timeout_seconds: u64,
        /// What is asked: always written, so a driver can key on it (A7 e); events written
        /// before that have none, and read as a between-rounds checkpoint.
        #[serde(default)]
        kind: AskKind,
        /// What the person is asked to weigh (the conclusion the moderator proposes, say).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
        /// The options to pick from, for a choice: (id, label).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        choices: Vec<(String, String)>,
    },
    CheckpointAnswered {
        round: u32,
        decision: Answer,
        guidance: Option<String>,
        #[serde(default)]
        kind: AskKind,
    },
    Synthesis {
        markdown: String,
        confidence: Confidence,
        path: Option<String>,
        /// A synthesis awaiting the person's approval; the final one follows it.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        draft: bool,
    },
    FollowUp {
        path: String,
    },
    DebateCompleted {
        id: String,
        status: DebateStatus,
    },
    Error {
        message: String,
    },
}

impl Event {
    /// The event's type tag, as in its JSON (`turn_completed`).
    pub fn kind(&self) -> &'static str {
        self.into()
    }
}

impl super::model::Turn {
    /// The event announcing this turn, once it is journaled (or served from the journal).
    pub fn completed_event(&self, replayed: bool) -> Event {
        Event::TurnCompleted {
            round: self.round,
            phase: self.phase,
            seat: self.seat.clone(),
            content: self.content.clone(),
            moves: self.moves.clone(),
            confidence: self.confidence,
            tokens_in: self.tokens_in,
            tokens_out: self.tokens_out,
            tokens_estimated: self.tokens_estimated,
            latency_ms: self.latency_ms,
            provider: self.provider.clone(),
            model: self.model.clone(),
            status: self.status,
            note: self.note.clone(),
            replayed,
        }
    }
}

super::vocabulary! {
    /// How an approval gate was settled.
    pub enum GateDecision {
        Approved,
        Rejected,
        /// Nobody decided within the gate's timeout (the debate paused).
        TimedOut,
    }
}

super::vocabulary! {
    /// What a guardrail flagged.
    pub enum FlagKind {
        Repetition,
        OffTopic,
        Muted,
        Budget,
        Dropped,
        /// The moderator concluded without the support moot measures in the moves.
        Unsupported,
        /// A judge no longer argues from its assigned stance.
        StanceDropped,
        /// A judge agreed with every other judge without challenging any of them.
        Sycophancy,
        /// Seats converged with no new support or rebuttal since they last held their ground
        /// (`argue::hollow_agreement`).
        HollowAgreement,
        /// A debate made no progress past the server's watchdog limit while no person was
        /// asked anything (`[serve] stall_seconds`).
        Stalled,
    }
}

super::vocabulary! {
    /// The moderator's reading of a round.
    pub enum Assessment {
        Converging,
        Stagnating,
        NewGround,
    }
}

super::vocabulary! {
    /// What happens after a round.
    pub enum Decision {
        Continue,
        Clarify,
        Conclude,
    }
}

/// The moderator's judgement at the end of a round, after moot checked it against the moves.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Convergence {
    pub assessment: Assessment,
    pub decision: Decision,
    /// Why the debate ends, when it does.
    pub signal: ConvergenceSignal,
    pub reason: String,
    /// Why moot set aside a conclusion the moves do not support, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overruled: Option<String>,
}

super::vocabulary! {
    /// The reason a debate stops arguing.
    pub enum ConvergenceSignal {
        None,
        Agreement,
        Stagnation,
        ClearWinner,
        MaxRounds,
        HumanEnded,
        TimeLimit,
        NoSeatsLeft,
    }
}

impl ConvergenceSignal {
    /// Why a debate that ended this way ended, as a clause.
    pub fn describe(self) -> &'static str {
        match self {
            ConvergenceSignal::None => "it is still open",
            ConvergenceSignal::Agreement => "the perspectives reached agreement",
            ConvergenceSignal::Stagnation => "the arguments stagnated",
            ConvergenceSignal::ClearWinner => "one perspective clearly prevailed",
            ConvergenceSignal::MaxRounds => {
                "the maximum number of rounds was reached without convergence"
            }
            ConvergenceSignal::HumanEnded => "the human ended it at a checkpoint",
            ConvergenceSignal::TimeLimit => "the total time limit was reached",
            ConvergenceSignal::NoSeatsLeft => "no seat was left able to argue",
        }
    }
}

super::vocabulary! {
    /// What the person is asked, and so which answers make sense.
    #[derive(Hash, Default, strum::EnumIter)]
    pub enum AskKind {
        /// The moderator's clarifying question before any round.
        Clarification,
        /// Between rounds: continue, guide the next one, or end.
        #[default]
        Checkpoint,
        /// The moderator proposes to conclude: accept and synthesise, one more round, or guide.
        Conclusion,
        /// The synthesis is written: approve it, ask for one revision, or leave it unapproved.
        Approval,
        /// The revised synthesis: approve it or leave it unapproved (one revision only).
        RevisedApproval,
        /// The result is contested: the person picks one of the options (or leaves it open).
        Choice,
        /// The options a moderator proposed: continue with them, guide with the options to use
        /// instead (`A: label — description; B: …`), or end.
        Options,
        /// A seat the person plays: its turn's words (`g TEXT`), or pass (`e`).
        Turn,
        /// An approval gate: approve (`approve`), or reject with a reason (`reject REASON`).
        Gate,
    }
}

impl AskKind {
    /// The answers this question takes.
    pub fn answers(self) -> &'static [Answer] {
        match self {
            AskKind::Clarification => &[Answer::Guide, Answer::Continue, Answer::End],
            AskKind::Checkpoint => &[Answer::Continue, Answer::Guide, Answer::End],
            AskKind::Conclusion => &[Answer::Accept, Answer::Continue, Answer::Guide],
            AskKind::Approval => &[Answer::Accept, Answer::Revise, Answer::Reject],
            AskKind::RevisedApproval => &[Answer::Accept, Answer::Reject],
            AskKind::Choice => &[Answer::Choose, Answer::Reject],
            AskKind::Options => &[Answer::Continue, Answer::Guide, Answer::End],
            AskKind::Turn => &[Answer::Guide, Answer::End],
            AskKind::Gate => &[Answer::Accept, Answer::Decline],
        }
    }

    /// Whether `control` answers this question.
    pub fn accepts(self, control: &Control) -> bool {
        self.answers().contains(&control.answer())
    }

    /// Why `control` does not answer this question (asked with `choices`, the options a
    /// choice offers), in words for whoever sent it and naming the answers that would; none
    /// when it does. Every face checks this before an answer is journaled.
    pub fn refusal(self, control: &Control, choices: &[(String, String)]) -> Option<String> {
        if let Control::Choose(id) = control
            && !choices.is_empty()
            && !choices.iter().any(|(known, _)| known == id)
        {
            return Some(format!(
                "there is no option {id:?}; choose one of {}",
                choices
                    .iter()
                    .map(|(id, _)| id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        (!self.accepts(control)).then(|| {
            format!(
                "`{}` does not answer this question; answer with {}",
                control.answer(),
                self.answers()
                    .iter()
                    .map(|a| a.usage())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
    }

    /// The answer given when nobody is asked (headless without `--checkpoints stdin`, or its
    /// input closed); none for an approval gate, which only a person decides.
    pub fn default_answer(self) -> Option<Control> {
        match self {
            AskKind::Clarification | AskKind::Checkpoint => Some(Control::Continue),
            AskKind::Options => Some(Control::Continue),
            // Nobody speaks for the person: the turn passes.
            AskKind::Turn => Some(Control::End),
            // A gate the person turned on holds until a person decides or it times out.
            AskKind::Gate => None,
            AskKind::Conclusion | AskKind::Approval | AskKind::RevisedApproval => {
                Some(Control::Accept)
            }
            // Nobody picks for the person: a contested result stays open.
            AskKind::Choice => Some(Control::Reject),
        }
    }
}

super::vocabulary! {
    /// An answer without its text, as journaled and announced.
    pub enum Answer {
        Continue,
        Guide,
        End,
        Accept,
        Revise,
        Reject,
        Choose,
        /// Reject a gate, with the reason.
        Decline,
    }
}

impl Answer {
    /// What a stdin line for this answer looks like.
    pub fn usage(self) -> &'static str {
        match self {
            Answer::Continue => "`c` (continue)",
            Answer::Guide => "`g TEXT` (guide)",
            Answer::End => "`e` (end)",
            Answer::Accept => "`accept`",
            Answer::Revise => "`revise TEXT`",
            Answer::Reject => "`reject`",
            Answer::Choose => "`choose ID` (an option)",
            Answer::Decline => "`reject REASON` (a gate)",
        }
    }
}

/// An answer line that means nothing, and what to type instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    #[error("that answer needs text: `{0}`")]
    NeedsText(&'static str),
    #[error(
        "unknown answer {0:?}: use `c` (continue), `g TEXT` (guide), `e` (end), `accept` (or \
         `approve`), `revise TEXT`, `reject` (`reject REASON` at a gate) or `choose ID`"
    )]
    Unknown(String),
}

/// What the human (or the stdin script) answers at a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", content = "guidance", rename_all = "snake_case")]
pub enum Control {
    Continue,
    Guide(String),
    End,
    /// Accept the conclusion (synthesise) or approve the synthesis.
    Accept,
    /// Ask the moderator for one revised synthesis that addresses this text.
    Revise(String),
    /// Leave the synthesis unapproved.
    Reject,
    /// Pick this option of a contested result (its id: `A`, `B`…).
    Choose(String),
    /// Reject an approval gate, saying why.
    Decline(String),
}

impl Control {
    pub fn answer(&self) -> Answer {
        match self {
            Control::Continue => Answer::Continue,
            Control::Guide(_) => Answer::Guide,
            Control::End => Answer::End,
            Control::Accept => Answer::Accept,
            Control::Revise(_) => Answer::Revise,
            Control::Reject => Answer::Reject,
            Control::Choose(_) => Answer::Choose,
            Control::Decline(_) => Answer::Decline,
        }
    }

    /// The text that goes with a guide, revise or choose answer.
    pub fn guidance(&self) -> Option<&str> {
        match self {
            Control::Guide(text)
            | Control::Revise(text)
            | Control::Choose(text)
            | Control::Decline(text) => Some(text),
            _ => None,
        }
    }

    /// Parses an answer line: `c`, `g TEXT`, `e`, `accept`, `revise TEXT`, `reject` (or the
    /// one-letter forms and the words in full).
    pub fn parse_line(line: &str) -> Result<Control, AnswerError> {
        let line = line.trim();
        let (head, rest) = match line.split_once(char::is_whitespace) {
            Some((head, rest)) => (head, rest.trim()),
            None => (line, ""),
        };
        match head.to_ascii_lowercase().as_str() {
            "c" | "continue" if rest.is_empty() => Ok(Control::Continue),
            "e" | "end" if rest.is_empty() => Ok(Control::End),
            "a" | "accept" | "approve" if rest.is_empty() => Ok(Control::Accept),
            "reject" if rest.is_empty() => Ok(Control::Reject),
            "reject" => Ok(Control::Decline(rest.to_string())),
            "g" | "guide" if !rest.is_empty() => Ok(Control::Guide(rest.to_string())),
            "r" | "revise" if !rest.is_empty() => Ok(Control::Revise(rest.to_string())),
            "choose" | "pick" if !rest.is_empty() => Ok(Control::Choose(rest.to_uppercase())),
            "choose" | "pick" => Err(AnswerError::NeedsText("choose B")),
            "g" | "guide" => Err(AnswerError::NeedsText("g Focus on our team's experience")),
            "r" | "revise" => Err(AnswerError::NeedsText("revise Weigh the migration cost")),
            _ => Err(AnswerError::Unknown(line.to_string())),
        }
    }

    pub fn from_stored(answer: Answer, guidance: Option<String>) -> Control {
        let text = guidance.unwrap_or_default();
        match answer {
            Answer::Continue => Control::Continue,
            Answer::End => Control::End,
            Answer::Guide => Control::Guide(text),
            Answer::Accept => Control::Accept,
            Answer::Revise => Control::Revise(text),
            Answer::Reject => Control::Reject,
            Answer::Choose => Control::Choose(text),
            Answer::Decline => Control::Decline(text),
        }
    }
}

/// Where a debate is, stored with it so `moot list` can say where a paused one stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "at", rename_all = "snake_case")]
pub enum Stage {
    Analysing,
    Round {
        round: u32,
    },
    Asking {
        kind: AskKind,
        round: u32,
    },
    /// Waiting at the approval gate `point` reached after `round`.
    AtGate {
        point: String,
        round: u32,
    },
    Synthesising,
    /// No progress for `seconds` while no person is asked anything: the server's watchdog saw
    /// it waiting on `waiting_on` (a seat's step, or nothing it can name).
    Stalled {
        seconds: u64,
        waiting_on: String,
    },
}

/// A time limit as a person says it: "45 s", "30 min", "2 h 5 min".
pub fn spoken_duration(seconds: u64) -> String {
    match seconds {
        0..=119 => format!("{seconds} s"),
        120..=7199 if seconds.is_multiple_of(60) => format!("{} min", seconds / 60),
        120..=7199 => format!("{} min {} s", seconds / 60, seconds % 60),
        _ if seconds.is_multiple_of(3600) => format!("{} h", seconds / 3600),
        _ => format!("{} h {} min", seconds / 3600, seconds % 3600 / 60),
    }
}

/// Where an approval gate stands, as a person reads it: "after round 2", "before the
/// synthesis of round 3", "before the winning version is applied".
pub fn gate_place(point: &str, round: u32) -> String {
    match point {
        "after_round" => format!("after round {round}"),
        "before_synthesis" => format!("before the synthesis (round {round})"),
        "before_apply" => "before the winning version is applied".to_string(),
        "after_proposal" => "after the proposals are written and tested".to_string(),
        "after_critique" => "after the critique".to_string(),
        "after_adversarial" => "after the red team's attack".to_string(),
        other => format!("{other} (round {round})"),
    }
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stage::Analysing => f.write_str("analysing the question"),
            Stage::Round { round } => write!(f, "in round {round}"),
            Stage::Asking { kind, round } => match kind {
                AskKind::Clarification => f.write_str("at the clarifying question"),
                AskKind::Checkpoint => write!(f, "at the checkpoint of round {round}"),
                AskKind::Conclusion => write!(f, "at the conclusion of round {round}"),
                AskKind::Approval | AskKind::RevisedApproval => {
                    f.write_str("waiting for the synthesis to be approved")
                }
                AskKind::Choice => f.write_str("waiting for the person to choose an option"),
                AskKind::Options => f.write_str("waiting for the options to be accepted"),
                AskKind::Turn => write!(f, "waiting for a person's turn in round {round}"),
                AskKind::Gate => write!(f, "waiting at an approval gate after round {round}"),
            },
            Stage::AtGate { point, round } => write!(
                f,
                "waiting at the approval gate {} ({point})",
                gate_place(point, *round)
            ),
            Stage::Synthesising => f.write_str("synthesising"),
            Stage::Stalled {
                seconds,
                waiting_on,
            } => write!(
                f,
                "stalled: no progress for {} while waiting on {waiting_on}",
                spoken_duration(*seconds)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoint_lines_parse() {
        assert_eq!(Control::parse_line("c"), Ok(Control::Continue));
        assert_eq!(Control::parse_line(" E "), Ok(Control::End));
        assert_eq!(
            Control::parse_line("g focus on  cost"),
            Ok(Control::Guide("focus on  cost".into()))
        );
        assert!(Control::parse_line("g").is_err());
        assert!(Control::parse_line("x").is_err());
        assert!(Control::parse_line("c now").is_err());
        assert_eq!(Control::parse_line("accept"), Ok(Control::Accept));
        assert_eq!(
            Control::parse_line("revise say more about cost"),
            Ok(Control::Revise("say more about cost".into()))
        );
        assert!(Control::parse_line("revise").is_err());
        assert_eq!(Control::parse_line("reject"), Ok(Control::Reject));
    }

    /// A7 (e): every ask names its kind, a between-rounds checkpoint's too; an event written
    /// before that reads as one.
    #[test]
    fn a_checkpoint_event_always_names_its_kind() {
        let asked = Event::Checkpoint {
            round: 1,
            timeout_seconds: 1800,
            kind: AskKind::Checkpoint,
            detail: None,
            choices: Vec::new(),
        };
        let line = serde_json::to_value(&asked).unwrap();
        assert_eq!(line["kind"], "checkpoint", "{line}");
        let answered = Event::CheckpointAnswered {
            round: 1,
            decision: Answer::Continue,
            guidance: None,
            kind: AskKind::Checkpoint,
        };
        assert_eq!(
            serde_json::to_value(&answered).unwrap()["kind"],
            "checkpoint"
        );
        let older: Event =
            serde_json::from_str(r#"{"type":"checkpoint","round":1,"timeout_seconds":1800}"#)
                .unwrap();
        assert_eq!(older, asked);
    }

    #[test]
    fn durations_read_as_a_person_says_them() {
        assert_eq!(spoken_duration(45), "45 s");
        assert_eq!(spoken_duration(1800), "30 min");
        assert_eq!(spoken_duration(150), "2 min 30 s");
        assert_eq!(spoken_duration(7500), "2 h 5 min");
        assert_eq!(spoken_duration(7200), "2 h");
    }

    #[test]
    fn each_question_takes_its_own_answers() {
        assert!(AskKind::Checkpoint.accepts(&Control::End));
        assert!(!AskKind::Checkpoint.accepts(&Control::Accept));
        assert!(AskKind::Conclusion.accepts(&Control::Accept));
        assert!(AskKind::Approval.accepts(&Control::Revise("x".into())));
        assert!(!AskKind::RevisedApproval.accepts(&Control::Revise("x".into())));
        for kind in <AskKind as strum::IntoEnumIterator>::iter() {
            match kind.default_answer() {
                Some(answer) => assert!(kind.accepts(&answer), "{kind:?}"),
                None => assert_eq!(kind, AskKind::Gate, "only a gate has no default"),
            }
        }
    }

    #[test]
    fn stored_vocabulary_keeps_its_wire_names() {
        let convergence = Convergence {
            assessment: Assessment::NewGround,
            decision: Decision::Continue,
            signal: ConvergenceSignal::ClearWinner,
            reason: "r".into(),
            overruled: None,
        };
        assert_eq!(
            serde_json::to_string(&convergence).unwrap(),
            r#"{"assessment":"new_ground","decision":"continue","signal":"clear_winner","reason":"r"}"#
        );
        let answered = Event::CheckpointAnswered {
            round: 1,
            decision: Answer::Guide,
            guidance: Some("g".into()),
            kind: AskKind::Checkpoint,
        };
        assert_eq!(
            serde_json::to_string(&answered).unwrap(),
            r#"{"type":"checkpoint_answered","round":1,"decision":"guide","guidance":"g","kind":"checkpoint"}"#
        );
        assert_eq!(
            serde_json::to_string(&Stage::Asking {
                kind: AskKind::Checkpoint,
                round: 2
            })
            .unwrap(),
            r#"{"at":"asking","kind":"checkpoint","round":2}"#
        );
    }

    #[test]
    fn events_serialize_with_a_type_tag() {
        let event = Event::RoundStarted {
            round: 2,
            limit: None,
        };
        let json = serde_json::to_string(&event).unwrap();
        assert_eq!(json, r#"{"type":"round_started","round":2}"#);
    }
}
