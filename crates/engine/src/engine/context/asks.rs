//! Asking the person: checkpoints, clarifications, choices, a person's turn and approval
//! gates, each answered once and journaled, served from the journal on resume.

use super::*;
use crate::debate::GateDecision;

/// How often a waiting gate looks in the journal for a decision made elsewhere.
const GATE_POLL: Duration = Duration::from_millis(500);

/// Why an answer does not fit the question: what to tell the person, who may answer again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

/// A check a typed answer must pass (the options a person typed must be usable, say).
pub type AnswerCheck<'a> = &'a (dyn Fn(&Control) -> Result<(), Refusal> + Sync);

/// How often a waiting question looks in the journal for an answer given elsewhere (at most
/// four times a second).
const ANSWER_POLL: Duration = Duration::from_millis(250);

/// An answer, and where it came from.
enum Answer {
    /// From this face (the workbench, stdin, the default): journaled here.
    Here(Control),
    /// From another process, already in the journal with who gave it.
    Elsewhere { control: Control, by: String },
}

/// Whether `control` answers `kind` (one of `choices`, when there are any, and passing
/// `check`); else what to tell the person.
fn fits(
    kind: AskKind,
    choices: &[(String, String)],
    check: AnswerCheck<'_>,
    control: &Control,
) -> Result<(), Refusal> {
    if let Some(problem) = kind.refusal(control, choices) {
        return Err(Refusal(problem));
    }
    check(control)
}

/// How an approval gate was settled.
#[derive(Debug, Clone, PartialEq)]
pub enum GateOutcome {
    Approved {
        by: String,
    },
    Rejected {
        by: String,
        reason: String,
    },
    /// Nobody decided in time: the debate pauses, and a resume asks again.
    TimedOut,
}

impl GateOutcome {
    /// The answer it amounts to, for the faces' question to close.
    fn control(&self) -> Control {
        match self {
            GateOutcome::Rejected { reason, .. } => Control::Decline(reason.clone()),
            _ => Control::Accept,
        }
    }
}

/// The outcome of asking the person something.
#[derive(Debug, Clone, PartialEq)]
pub enum CheckpointOutcome {
    /// `by` is who answered (the face's answerer, journaled with the answer).
    Answered { control: Control, by: String },
    /// Checkpoints are off: nobody was asked.
    Unasked,
    /// Nobody answered in time: the debate pauses and can be resumed.
    TimedOut,
}

pub(super) fn answered(round: u32, kind: AskKind, control: &Control) -> Event {
    Event::CheckpointAnswered {
        round,
        decision: control.answer(),
        guidance: control.guidance().map(str::to_string),
        kind,
    }
}

/// Where the debate stands once `event` has happened, for the ones that move it.
pub(super) fn stage_of(event: &Event) -> Option<Stage> {
    match event {
        Event::TurnStarted {
            phase: Phase::Analysis,
            ..
        } => Some(Stage::Analysing),
        Event::RoundStarted { round, .. } => Some(Stage::Round { round: *round }),
        Event::ClarificationRequested { .. } => Some(Stage::Asking {
            kind: AskKind::Clarification,
            round: 0,
        }),
        Event::GateRequested { point, round, .. } => Some(Stage::AtGate {
            point: point.clone(),
            round: *round,
        }),
        // A gate's question follows its request, which already says where it stands.
        Event::Checkpoint {
            kind: AskKind::Gate,
            ..
        } => None,
        Event::Checkpoint { round, kind, .. } => Some(Stage::Asking {
            kind: *kind,
            round: *round,
        }),
        Event::TurnStarted { phase, .. } if phase.is_closing() => Some(Stage::Synthesising),
        _ => None,
    }
}

impl Context {
    /// Waits at a between-rounds checkpoint (or replays the recorded answer).
    pub async fn checkpoint(&self, round: u32) -> Result<CheckpointOutcome, EngineError> {
        self.ask(round, AskKind::Checkpoint, None).await
    }

    /// Asks the human a clarifying question (the moderator's before round 1 is `round` 0; a
    /// code debate asks up to three rounds of them); a guide answer is the reply.
    pub async fn clarify(
        &self,
        round: u32,
        question: &str,
    ) -> Result<CheckpointOutcome, EngineError> {
        if let Some(recorded) = self.recorded_answer(round, AskKind::Clarification) {
            if let CheckpointOutcome::Answered { control, .. } = &recorded {
                self.emit(answered(round, AskKind::Clarification, control));
            }
            return Ok(recorded);
        }
        self.emit(Event::ClarificationRequested {
            question: question.to_string(),
        });
        // The event names no round, so its stage says round 0; a later question (a code
        // debate asks up to three) says its own, where an answer from elsewhere is looked up.
        if round != 0 {
            let kind = AskKind::Clarification;
            self.append(Append::Stage(Stage::Asking { kind, round }));
        }
        self.ask(round, AskKind::Clarification, None).await
    }

    fn recorded_answer(&self, round: u32, kind: AskKind) -> Option<CheckpointOutcome> {
        self.recorded_answers
            .iter()
            .find(|r| r.round == round && r.kind == kind)
            .map(|r| CheckpointOutcome::Answered {
                control: r.control.clone(),
                by: r.answered_by.clone(),
            })
    }

    /// The answer the journal holds to `kind` after `round`, without serving it: for a step
    /// that decides from it whether to replay or ask again.
    pub fn recorded_control(&self, round: u32, kind: AskKind) -> Option<Control> {
        match self.recorded_answer(round, kind)? {
            CheckpointOutcome::Answered { control, .. } => Some(control),
            _ => None,
        }
    }

    /// Asks the person `kind` after `round` (or replays the recorded answer), journaling the
    /// answer with who gave it. An answer that does not fit the question is refused with a
    /// notice and the question stays open.
    pub async fn ask(
        &self,
        round: u32,
        kind: AskKind,
        detail: Option<String>,
    ) -> Result<CheckpointOutcome, EngineError> {
        self.put(round, kind, detail, Vec::new(), &|_| Ok(())).await
    }

    /// `ask`, showing `proposed` (id, label) beside the question, where a typed answer
    /// (guidance) must pass `check`: one that does not is refused with a notice saying why,
    /// and the question stays open for another.
    pub async fn ask_checked(
        &self,
        round: u32,
        kind: AskKind,
        detail: Option<String>,
        proposed: Vec<(String, String)>,
        check: &(dyn Fn(&str) -> Result<(), Refusal> + Sync),
    ) -> Result<CheckpointOutcome, EngineError> {
        let typed = |control: &Control| match control {
            Control::Guide(text) => check(text),
            _ => Ok(()),
        };
        self.put(round, kind, detail, proposed, &typed).await
    }

    /// Asks the person to pick one of `choices` (id, label) after `round`, or leave it open
    /// (`Reject`); an id that is not among them is refused with a notice.
    pub async fn choose(
        &self,
        round: u32,
        detail: String,
        choices: Vec<(String, String)>,
    ) -> Result<CheckpointOutcome, EngineError> {
        self.put(round, AskKind::Choice, Some(detail), choices, &|_| Ok(()))
            .await
    }

    async fn put(
        &self,
        round: u32,
        kind: AskKind,
        detail: Option<String>,
        choices: Vec<(String, String)>,
        check: AnswerCheck<'_>,
    ) -> Result<CheckpointOutcome, EngineError> {
        if let Some(recorded) = self.recorded_answer(round, kind) {
            if let CheckpointOutcome::Answered { control, .. } = &recorded {
                self.emit(answered(round, kind, control));
            }
            return Ok(recorded);
        }
        if !self.settings.checkpoints {
            return Ok(CheckpointOutcome::Unasked);
        }
        if kind != AskKind::Clarification {
            self.emit(Event::Checkpoint {
                round,
                timeout_seconds: self.settings.checkpoint_timeout.as_secs(),
                kind,
                detail,
                choices: choices.clone(),
            });
        }
        let deadline = tokio::time::Instant::now() + self.settings.checkpoint_timeout;
        let answered_now = self
            .await_answer(kind, &choices, check, deadline, Some(round))
            .await;
        let Some(answered_now) = answered_now else {
            self.note_unanswered(
                format!("nobody answered ({})", Stage::Asking { kind, round }),
                self.settings.checkpoint_timeout,
            );
            return Ok(CheckpointOutcome::TimedOut);
        };
        let (answer, by) = match answered_now {
            Answer::Here(answer) => {
                let by = self.answerer.clone();
                self.journal(|store| {
                    store.record_checkpoint(&self.debate_id, round, kind, &answer, &by)
                })
                .await?;
                (answer, by)
            }
            // Another process journaled it already.
            Answer::Elsewhere { control, by } => (control, by),
        };
        // Every answer is announced, a clarification's too (seed review 000/001 #14: headless
        // printed none for it).
        self.emit(answered(round, kind, &answer));
        Ok(CheckpointOutcome::Answered {
            control: answer,
            by,
        })
    }

    /// Asks the person for the words of a seat they play (`AskKind::Turn`), whatever the
    /// checkpoint setting, for at most `timeout`. The answer is not journaled as one: the turn
    /// it becomes is (`record`), so a resume serves the turn and never asks again. An answer
    /// from another terminal is looked for under `turn`, the turn's own number, since two
    /// seats a person plays speak in the same round.
    pub async fn ask_turn(
        &self,
        round: u32,
        turn: u32,
        detail: String,
        timeout: Duration,
    ) -> Result<CheckpointOutcome, EngineError> {
        self.emit(Event::Checkpoint {
            round,
            timeout_seconds: timeout.as_secs(),
            kind: AskKind::Turn,
            detail: Some(detail),
            choices: Vec::new(),
        });
        let deadline = tokio::time::Instant::now() + timeout;
        let Some(answered_now) = self
            .await_answer(AskKind::Turn, &[], &|_| Ok(()), deadline, Some(turn))
            .await
        else {
            return Ok(CheckpointOutcome::TimedOut);
        };
        let (answer, by) = match answered_now {
            Answer::Here(answer) => (answer, self.answerer.clone()),
            Answer::Elsewhere { control, by } => (control, by),
        };
        self.emit(answered(round, AskKind::Turn, &answer));
        Ok(CheckpointOutcome::Answered {
            control: answer,
            by,
        })
    }

    /// Stops at an approval gate (`point` after `round`) until it is settled: by the person
    /// here (approve, or reject with a reason), by `moot approve` / `moot reject` from another
    /// process (read from the journal), or by the timeout, which pauses the debate (a resume
    /// asks again). With gates off (`active` false) it is approved at once and recorded so.
    pub async fn gate(
        &self,
        point: &str,
        round: u32,
        summary: String,
        artifacts: Value,
        active: bool,
        timeout: Duration,
    ) -> Result<GateOutcome, EngineError> {
        let base = format!("{point}:{round}");
        // A gate that timed out is asked again on resume, under the next attempt's name.
        let earlier = self.store.gates(&self.debate_id)?;
        let attempts = earlier
            .iter()
            .filter(|g| g.gate == base || g.gate.starts_with(&format!("{base}#")))
            .count();
        let latest = earlier
            .iter()
            .rfind(|g| g.gate == base || g.gate.starts_with(&format!("{base}#")));
        let gate = match latest {
            Some(record) if record.decision != Some(GateDecision::TimedOut) => record.gate.clone(),
            Some(_) => format!("{base}#{}", attempts + 1),
            None => base,
        };
        self.journal(|store| {
            store.request_gate(&self.debate_id, &gate, point, round, &summary, &artifacts)
        })
        .await?;
        if let Some(settled) = self.settled(&gate)? {
            // Decided while the debate was stopped (a decision that raced its cancel): the
            // decision is said now, so every follower and the audit see it.
            if active && !self.gate_announced(&gate)? {
                self.announce_gate(&gate, &settled);
            }
            return Ok(settled);
        }
        if !active {
            // Recorded, not announced: with gates off, or this point not among them, nothing waits.
            return self
                .settle(
                    &gate,
                    GateDecision::Approved,
                    "moot (this debate does not stop here)",
                    None,
                    false,
                )
                .await;
        }
        self.emit(Event::GateRequested {
            gate: gate.clone(),
            point: point.to_string(),
            round,
            summary: summary.clone(),
            timeout_seconds: timeout.as_secs(),
            artifacts: artifacts.clone(),
        });
        self.emit(Event::Checkpoint {
            round,
            timeout_seconds: timeout.as_secs(),
            kind: AskKind::Gate,
            detail: Some(summary),
            choices: Vec::new(),
        });
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(settled) = self.settled(&gate)? {
                // Another process decided: announced here, and the question here is closed.
                self.announce_gate(&gate, &settled);
                if let GateOutcome::Approved { .. } | GateOutcome::Rejected { .. } = &settled {
                    self.emit(answered(round, AskKind::Gate, &settled.control()));
                }
                return Ok(settled);
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                self.settle(&gate, GateDecision::TimedOut, "the timeout", None, true)
                    .await?;
                self.note_unanswered(
                    format!(
                        "nobody decided the approval gate {} ({gate})",
                        crate::debate::gate_place(point, round)
                    ),
                    timeout,
                );
                return Ok(GateOutcome::TimedOut);
            }
            let slice = (now + GATE_POLL).min(deadline);
            if let Some(Answer::Here(control)) = self
                .await_answer(AskKind::Gate, &[], &|_| Ok(()), slice, None)
                .await
            {
                let (decision, reason) = match &control {
                    Control::Decline(reason) => (GateDecision::Rejected, Some(reason.clone())),
                    _ => (GateDecision::Approved, None),
                };
                let by = self.answerer.clone();
                let outcome = self
                    .settle(&gate, decision, &by, reason.as_deref(), true)
                    .await?;
                self.emit(answered(round, AskKind::Gate, &outcome.control()));
                return Ok(outcome);
            }
        }
    }

    /// Whether the journal holds the event that says how `gate` was decided.
    fn gate_announced(&self, gate: &str) -> Result<bool, EngineError> {
        Ok(self.store.events(&self.debate_id)?.iter().any(
            |event| matches!(event, Event::GateDecided { gate: decided, .. } if decided == gate),
        ))
    }

    /// A gate's decision, if one is journaled.
    fn settled(&self, gate: &str) -> Result<Option<GateOutcome>, EngineError> {
        let Some(record) = self.store.gate(&self.debate_id, gate)? else {
            return Ok(None);
        };
        let by = record.decided_by.clone().unwrap_or_default();
        Ok(match record.decision {
            Some(GateDecision::Approved) => Some(GateOutcome::Approved { by }),
            Some(GateDecision::Rejected) => Some(GateOutcome::Rejected {
                by,
                reason: record.reason.unwrap_or_default(),
            }),
            Some(GateDecision::TimedOut) => Some(GateOutcome::TimedOut),
            None => None,
        })
    }

    /// Journals a gate's decision (unless another process settled it first: then that one
    /// stands) and announces it.
    async fn settle(
        &self,
        gate: &str,
        decision: GateDecision,
        by: &str,
        reason: Option<&str>,
        announce: bool,
    ) -> Result<GateOutcome, EngineError> {
        self.journal(|store| store.decide_gate(&self.debate_id, gate, decision, by, reason))
            .await?;
        let outcome = self.settled(gate)?.unwrap_or(GateOutcome::TimedOut);
        if announce {
            self.announce_gate(gate, &outcome);
        }
        Ok(outcome)
    }

    fn announce_gate(&self, gate: &str, outcome: &GateOutcome) {
        let (decision, by, reason) = match outcome {
            GateOutcome::Approved { by } => (GateDecision::Approved, by.clone(), None),
            GateOutcome::Rejected { by, reason } => {
                (GateDecision::Rejected, by.clone(), Some(reason.clone()))
            }
            GateOutcome::TimedOut => (GateDecision::TimedOut, "the timeout".to_string(), None),
        };
        self.emit(Event::GateDecided {
            gate: gate.to_string(),
            decision,
            by,
            reason,
        });
    }

    /// The first control that answers `kind` before `deadline` (ones that do not are refused
    /// with a notice); `None` when time runs out.
    /// Waits for an answer to `kind` until `deadline`: from this face's controls, or, when
    /// `elsewhere` names the round asked, from another process through the journal (a viewer,
    /// `moot approve`), looked for at most four times a second. An answer that does not fit
    /// is refused with a notice and the question stays open.
    async fn await_answer(
        &self,
        kind: AskKind,
        choices: &[(String, String)],
        check: AnswerCheck<'_>,
        deadline: tokio::time::Instant,
        elsewhere: Option<u32>,
    ) -> Option<Answer> {
        let mut controls = self.controls.lock().await;
        let mut closed = false;
        let mut refused_elsewhere = false;
        loop {
            let slice = match elsewhere {
                Some(_) => (tokio::time::Instant::now() + ANSWER_POLL).min(deadline),
                None => deadline,
            };
            let received = if closed {
                tokio::time::sleep_until(slice).await;
                None
            } else {
                match tokio::time::timeout_at(slice, controls.recv()).await {
                    Ok(Some(control)) => Some(control),
                    Ok(None) => {
                        closed = true;
                        if let Some(fallback) = kind.default_answer() {
                            self.emit(Event::Notice {
                                message: format!(
                                    "no more answers can arrive; taking `{}`",
                                    fallback.answer()
                                ),
                            });
                            return Some(Answer::Here(fallback));
                        }
                        // Nobody answers for the person: the question waits out its time (for
                        // another terminal, or the timeout).
                        None
                    }
                    Err(_) => None,
                }
            };
            if let Some(control) = received {
                match fits(kind, choices, check, &control) {
                    Ok(()) => return Some(Answer::Here(control)),
                    Err(Refusal(problem)) => self.emit(Event::Notice { message: problem }),
                }
                continue;
            }
            if let Some(round) = elsewhere
                && let Ok(Some(found)) = self.store.checkpoint_answer(&self.debate_id, round, kind)
            {
                match fits(kind, choices, check, &found.control) {
                    Ok(()) => {
                        return Some(Answer::Elsewhere {
                            control: found.control,
                            by: found.answered_by,
                        });
                    }
                    Err(Refusal(problem)) if !refused_elsewhere => {
                        refused_elsewhere = true;
                        self.emit(Event::Notice {
                            message: format!(
                                "an answer from another terminal was refused: {problem}"
                            ),
                        });
                    }
                    Err(_) => {}
                }
            }
            if tokio::time::Instant::now() >= deadline {
                return None;
            }
        }
    }
}
