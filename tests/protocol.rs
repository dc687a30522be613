//! The moderated protocol's guardrails and endings, run through the real session on scripted
//! replies with tokio's paused clock: time limits, checkpoint timeouts, repetition, off-topic
//! mutes, token budgets and a clear winner, deterministically and without waiting.

use moot::config::{Config, TokenBudget};
use moot::debate::{
    Answer, AskKind, Control, ConvergenceSignal, DebateStatus, Event, FlagKind, Phase, TurnStatus,
};
use moot::providers::ProviderSpec;
use moot::session::{self, DebateSettings, Finish, ResumeChanges, Wiring};
use moot::store::Store;
use serde_json::{Value, json};
use std::path::PathBuf;
mod support;

use support::session::answered;
use tokio::sync::mpsc;

const QUESTION: &str = "Should we use Redis or PostgreSQL for caching?";

/// Builds a replay script. Every reply is matched on phase, seat and round.
struct Script {
    replies: Vec<Value>,
    delay_ms: u64,
    one_at_a_time: bool,
}

impl Script {
    fn new() -> Self {
        Script {
            replies: vec![
                json!({"phase": "analysis", "reply": {"domain": "data", "constraints": [], "binary": true, "debaters": 2, "vague": false}}),
            ],
            delay_ms: 0,
            one_at_a_time: false,
        }
    }

    fn push(&mut self, phase: &str, seat: Option<&str>, round: u32, reply: Value) {
        let mut entry = json!({"phase": phase, "round": round, "reply": reply, "chunk_chars": 100000, "delay_ms": self.delay_ms});
        if let Some(seat) = seat {
            entry["seat"] = json!(seat);
        }
        self.replies.push(entry);
    }

    /// A full round: pose, distinct arguments and rebuttals for A and B, and an evaluation.
    fn round(&mut self, round: u32, evaluation: Value) {
        self.push("pose", None, round, json!(format!("Round {round}, go.")));
        for seat in ["A", "B"] {
            self.push("argument", Some(seat), round, json!({
                "argument": format!("Seat {seat} round {round}: fresh point number {} about {}.", round * 11, ["latency", "operations", "cost", "failover", "memory"][round as usize % 5]),
                "moves": [{"act": "claim", "text": format!("{seat} claim {round}")}],
                "confidence": 0.6, "position": format!("{seat} position {round}")
            }));
            self.push(
                "rebuttal",
                Some(seat),
                round,
                json!({
                    "argument": format!("Seat {seat} rebuts in round {round}."),
                    "moves": [], "confidence": 0.6, "position": format!("{seat} position {round}")
                }),
            );
        }
        self.push("evaluation", None, round, evaluation);
    }

    /// Makes `seat`'s rebuttal in `round` concede the argument `target`.
    fn concede(&mut self, round: u32, seat: &str, target: &str) {
        let rebuttal = self
            .replies
            .iter_mut()
            .find(|r| r["phase"] == "rebuttal" && r["seat"] == seat && r["round"] == round)
            .expect("a scripted rebuttal");
        rebuttal["reply"]["moves"] = json!([{"act": "concede", "text": "", "answers": [target]}]);
    }

    fn synthesis(&mut self) {
        self.replies.push(json!({"phase": "synthesis", "reply": {
            "title": "t", "recommendation": "Do the staged plan.", "confidence": "High", "perspectives": [],
            "agreements": [], "tensions": [], "caveats": [], "dissent": ""
        }}));
    }

    fn write(&self) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("script.json");
        std::fs::write(
            &path,
            json!({"model": "script", "replies": self.replies, "one_at_a_time": self.one_at_a_time})
                .to_string(),
        )
        .unwrap();
        (dir, path)
    }
}

fn evaluation(decision: &str) -> Value {
    json!({"summary": "so far", "assessment": "new_ground", "decision": decision, "agreement": false})
}

fn settings(script: &std::path::Path) -> DebateSettings {
    let spec = ProviderSpec::scripted(script);
    let mut settings =
        DebateSettings::from_config(&moot::protocol::builtin(), &Config::default(), spec).unwrap();
    // Lessons are their own tests; a reflection step would change what these count.
    settings.lessons.enabled = false;
    settings.checkpoints = false;
    settings.write_decision = false;
    settings
}

/// Runs a debate to its end, answering checkpoints from `controls`; returns every event.
async fn run(
    store: &Store,
    settings: DebateSettings,
    controls: Vec<Control>,
) -> (Finish, Vec<Event>) {
    answered(controls, "the test", |wiring| {
        session::start(
            moot::launch::host(),
            store.clone(),
            QUESTION,
            settings,
            wiring,
            std::future::pending(),
        )
    })
    .await
}

/// Resumes a stored debate, answered by `answerer` from `controls`; returns every event.
async fn resume(
    store: &Store,
    id: &str,
    controls: Vec<Control>,
    answerer: &str,
) -> (Finish, Vec<Event>) {
    resume_with(store, id, ResumeChanges::default(), controls, answerer).await
}

/// `resume`, with `changes`.
async fn resume_with(
    store: &Store,
    id: &str,
    changes: ResumeChanges,
    controls: Vec<Control>,
    answerer: &str,
) -> (Finish, Vec<Event>) {
    answered(controls, answerer, |wiring| {
        session::resume(
            moot::launch::host(),
            store.clone(),
            id,
            changes,
            wiring,
            std::future::pending(),
        )
    })
    .await
}

fn flags(events: &[Event], kind: FlagKind) -> Vec<(u32, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Flag {
                round,
                seat,
                kind: k,
                ..
            } if *k == kind => Some((*round, seat.clone())),
            _ => None,
        })
        .collect()
}

fn signals(events: &[Event]) -> Vec<ConvergenceSignal> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::RoundCompleted { convergence, .. } => Some(convergence.signal),
            _ => None,
        })
        .collect()
}

/// The final synthesis (not a draft shown for approval).
fn synthesis_markdown(events: &[Event]) -> String {
    events
        .iter()
        .find_map(|e| match e {
            Event::Synthesis {
                markdown,
                draft: false,
                ..
            } => Some(markdown.clone()),
            _ => None,
        })
        .expect("a synthesis")
}

#[tokio::test(start_paused = true)]
async fn the_total_time_limit_ends_the_rounds_and_still_synthesises() {
    let mut script = Script::new();
    script.delay_ms = 400;
    for round in 1..=5 {
        script.round(round, evaluation("continue"));
    }
    script.synthesis();
    let (_dir, path) = script.write();
    let mut settings = settings(&path);
    settings.total_timeout_seconds = 3;
    let store = Store::in_memory().unwrap();
    let (finish, events) = run(&store, settings, vec![]).await;
    assert_eq!(finish.status, DebateStatus::Completed);
    let rounds = events
        .iter()
        .filter(|e| matches!(e, Event::RoundStarted { .. }))
        .count();
    assert!(
        rounds < 5,
        "the limit cut the debate short ({rounds} rounds)"
    );
    let markdown = synthesis_markdown(&events);
    assert!(
        markdown.contains("The total time limit (3 s) ended the debate"),
        "{markdown}"
    );
    // A round already under way when the limit struck times out its turns rather than hang.
    let turns = store.turns(&finish.id).unwrap();
    assert!(turns.iter().any(|t| t.status == TurnStatus::TimedOut));
}

#[tokio::test(start_paused = true)]
async fn a_provider_answering_one_at_a_time_gets_the_round_time_per_seat() {
    // Every reply takes 3 s and the provider serves one request at a time, so a round of two
    // seats (pose, two arguments, two rebuttals, evaluation) needs 18 s: more than the 10 s
    // round limit, within 10 s per seat.
    let mut script = Script::new();
    script.delay_ms = 3000;
    script.one_at_a_time = true;
    script.round(1, evaluation("conclude"));
    script.synthesis();
    let (_dir, path) = script.write();
    let mut settings = settings(&path);
    settings.max_rounds = 1;
    settings.round_timeout_seconds = 10;
    let store = Store::in_memory().unwrap();
    let started = tokio::time::Instant::now();
    let (finish, _events) = run(&store, settings, vec![]).await;
    assert!(started.elapsed() >= std::time::Duration::from_secs(18));
    assert_eq!(finish.status, DebateStatus::Completed);
    let turns = store.turns(&finish.id).unwrap();
    let round_one: Vec<_> = turns.iter().filter(|t| t.round == 1).collect();
    let shape: Vec<_> = round_one
        .iter()
        .map(|t| (t.phase, t.seat.clone(), t.status))
        .collect();
    assert_eq!(
        round_one.len(),
        7,
        "pose, 2 arguments, 2 rebuttals, evaluation, synthesis: {shape:?}"
    );
    for turn in round_one {
        assert_eq!(
            turn.status,
            TurnStatus::Ok,
            "{:?} {}",
            turn.phase,
            turn.seat
        );
    }
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_checkpoint_pauses_and_resume_asks_it_again() {
    let mut script = Script::new();
    script.round(1, evaluation("continue"));
    script.round(2, evaluation("continue"));
    script.synthesis();
    let (_dir, path) = script.write();
    let mut settings = settings(&path);
    settings.checkpoints = true;
    settings.checkpoint_timeout_seconds = 1800;
    settings.max_rounds = 2;
    let store = Store::in_memory().unwrap();
    let (finish, events) = run(&store, settings, vec![]).await;
    assert_eq!(finish.status, DebateStatus::Paused);
    assert!(!finish.interrupted);
    assert!(events.iter().any(|e| matches!(
        e,
        Event::Checkpoint {
            round: 1,
            timeout_seconds: 1800,
            ..
        }
    )));
    assert_eq!(
        store.debate(&finish.id).unwrap().status,
        DebateStatus::Paused
    );

    // Guide round 1, then accept the conclusion at the round limit and approve the synthesis.
    let (resumed, events) = resume(
        &store,
        &finish.id,
        vec![
            Control::Guide("mind the cost".into()),
            Control::Accept,
            Control::Accept,
        ],
        "the test",
    )
    .await;
    assert_eq!(resumed.status, DebateStatus::Completed);
    assert!(events.iter().any(|e| matches!(
        e,
        Event::CheckpointAnswered {
            round: 1,
            decision: Answer::Guide,
            ..
        }
    )));
    let recorded = store.checkpoints(&finish.id).unwrap();
    assert_eq!(recorded[0].control, Control::Guide("mind the cost".into()));
}

/// A resume given a reason (a server taking over a dead replica's debate) journals it as the
/// resumed run's first notice, before anything the run does, however soon the run ends; a
/// resume that is refused journals nothing.
#[tokio::test(start_paused = true)]
async fn a_resume_journals_why_first_and_a_refused_resume_journals_nothing() {
    let mut script = Script::new();
    script.round(1, evaluation("conclude"));
    script.synthesis();
    let (_dir, path) = script.write();
    let mut settings = settings(&path);
    settings.checkpoints = true;
    settings.max_rounds = 1;
    let store = Store::in_memory().unwrap();
    let (paused, _) = run(&store, settings, vec![]).await;
    assert_eq!(paused.status, DebateStatus::Paused);
    let before = store.events(&paused.id).unwrap().len();
    const WHY: &str = "its server stopped: another took it over";
    let changes = ResumeChanges {
        notice: Some(WHY.into()),
        ..ResumeChanges::default()
    };
    let (finish, told) = resume_with(
        &store,
        &paused.id,
        changes.clone(),
        vec![Control::Accept, Control::Accept],
        "the test",
    )
    .await;
    assert_eq!(finish.status, DebateStatus::Completed);
    let kind = |e: &Event| serde_json::to_value(e).unwrap()["type"].to_string();
    let journaled = store.events(&paused.id).unwrap();
    let resumed: Vec<String> = journaled[before..].iter().take(2).map(kind).collect();
    assert_eq!(
        resumed,
        [r#""debate_created""#, r#""notice""#],
        "the resumed run's first events"
    );
    assert!(
        matches!(&journaled[before + 1], Event::Notice { message } if message == WHY),
        "{:?}",
        journaled[before + 1]
    );
    // What the session tells its face is what it journaled.
    assert_eq!(
        told.iter()
            .filter(|e| matches!(e, Event::Notice { message } if message == WHY))
            .count(),
        1
    );

    // A finished debate cannot be resumed: the refusal journals no reason.
    let after = store.events(&paused.id).unwrap().len();
    let refused = session::resume(
        moot::launch::host(),
        store.clone(),
        &paused.id,
        changes,
        Wiring {
            events: mpsc::unbounded_channel().0,
            controls: mpsc::unbounded_channel().1,
            answerer: "the test".into(),
        },
        std::future::pending(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(refused, session::SessionError::NotResumable { .. }),
        "{refused}"
    );
    assert_eq!(store.events(&paused.id).unwrap().len(), after);
}

#[tokio::test(start_paused = true)]
async fn arguments_repeating_the_last_round_are_flagged_and_stagnation_concludes() {
    let mut script = Script::new();
    script.round(1, evaluation("continue"));
    // Round 2: both seats say exactly what they said in round 1.
    script.push("pose", None, 2, json!("Round 2."));
    for seat in ["A", "B"] {
        script.push(
            "argument",
            Some(seat),
            2,
            json!({
                "argument": format!("Seat {seat} round 1: fresh point number 11 about operations."),
                "moves": [], "confidence": 0.5, "position": "same"
            }),
        );
        script.push(
            "rebuttal",
            Some(seat),
            2,
            json!({"argument": "Same again.", "moves": [], "confidence": 0.5, "position": "same"}),
        );
    }
    script.push("evaluation", None, 2, evaluation("continue"));
    script.synthesis();
    let (_dir, path) = script.write();
    let store = Store::in_memory().unwrap();
    let (finish, events) = run(&store, settings(&path), vec![]).await;
    assert_eq!(finish.status, DebateStatus::Completed);
    assert_eq!(
        flags(&events, FlagKind::Repetition),
        vec![(2, "A".to_string()), (2, "B".to_string())]
    );
    assert_eq!(
        signals(&events),
        vec![ConvergenceSignal::None, ConvergenceSignal::Stagnation]
    );
}

#[tokio::test(start_paused = true)]
async fn an_off_topic_seat_is_redirected_then_muted() {
    let mut script = Script::new();
    let off = |_: u32| json!({"summary": "B wanders", "assessment": "new_ground", "decision": "continue", "agreement": false, "off_topic": ["B"]});
    script.round(1, off(1));
    script.round(2, off(2));
    script.push("pose", None, 3, json!("Round 3."));
    script.push("argument", Some("A"), 3, json!({"argument": "Seat A alone in round 3 on durability.", "moves": [], "confidence": 0.5, "position": "A"}));
    script.push(
        "rebuttal",
        Some("A"),
        3,
        json!({"argument": "Nothing to rebut.", "moves": [], "confidence": 0.5, "position": "A"}),
    );
    script.push("evaluation", None, 3, json!({"summary": "done", "assessment": "converging", "decision": "conclude", "agreement": true}));
    script.synthesis();
    let (_dir, path) = script.write();
    let store = Store::in_memory().unwrap();
    let (finish, events) = run(&store, settings(&path), vec![]).await;
    assert_eq!(finish.status, DebateStatus::Completed, "{events:?}");
    assert_eq!(
        flags(&events, FlagKind::OffTopic),
        vec![(1, "B".to_string())]
    );
    assert_eq!(flags(&events, FlagKind::Muted), vec![(2, "B".to_string())]);
    let round3: Vec<String> = store
        .turns(&finish.id)
        .unwrap()
        .into_iter()
        .filter(|t| t.round == 3 && t.phase.is_debater())
        .map(|t| t.seat)
        .collect();
    assert_eq!(round3, vec!["A", "A"]);
    assert!(synthesis_markdown(&events).contains("Seat B (Performance Advocate) was muted"));
}

#[tokio::test(start_paused = true)]
async fn a_spent_token_budget_skips_the_rebuttal() {
    let mut script = Script::new();
    script.push("pose", None, 1, json!("Round 1."));
    let long = "word ".repeat(120);
    for seat in ["A", "B"] {
        script.push("argument", Some(seat), 1, json!({"argument": format!("Seat {seat}: {long}"), "moves": [], "confidence": 0.5, "position": seat}));
    }
    script.push("evaluation", None, 1, json!({"summary": "x", "assessment": "converging", "decision": "conclude", "agreement": true}));
    script.synthesis();
    let (_dir, path) = script.write();
    let mut settings = settings(&path);
    settings.token_budget_per_round = TokenBudget::Limited(150);
    settings.max_rounds = 1;
    let store = Store::in_memory().unwrap();
    let (finish, events) = run(&store, settings, vec![]).await;
    assert_eq!(finish.status, DebateStatus::Completed);
    assert_eq!(
        flags(&events, FlagKind::Budget),
        vec![(1, "A".to_string()), (1, "B".to_string())]
    );
    let turns = store.turns(&finish.id).unwrap();
    assert!(turns.iter().all(|t| t.phase != Phase::Rebuttal));
}

#[tokio::test(start_paused = true)]
async fn a_clear_winner_concludes_with_that_signal() {
    let mut script = Script::new();
    script.round(1, evaluation("continue"));
    script.round(2, json!({"summary": "A dominates", "assessment": "converging", "decision": "conclude", "agreement": false, "leader": "A"}));
    script.concede(2, "B", "A2.1");
    script.synthesis();
    let (_dir, path) = script.write();
    let store = Store::in_memory().unwrap();
    let (finish, events) = run(&store, settings(&path), vec![]).await;
    assert_eq!(finish.status, DebateStatus::Completed);
    assert_eq!(
        signals(&events),
        vec![ConvergenceSignal::None, ConvergenceSignal::ClearWinner]
    );
    assert!(synthesis_markdown(&events).contains("**Confidence:** High"));
}

#[tokio::test(start_paused = true)]
async fn ending_at_the_clarifying_question_cancels_the_debate() {
    let mut script = Script::new();
    script.replies[0] = json!({"phase": "analysis", "reply": {"domain": "general", "constraints": [], "binary": false, "debaters": 3, "vague": true, "clarifying_question": "About what?"}});
    let (_dir, path) = script.write();
    let mut settings = settings(&path);
    settings.checkpoints = true;
    let store = Store::in_memory().unwrap();
    let (finish, events) = run(&store, settings, vec![Control::End]).await;
    assert_eq!(finish.status, DebateStatus::Cancelled);
    assert!(events.iter().any(
        |e| matches!(e, Event::ClarificationRequested { question } if question == "About what?")
    ));
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::DebateStarted { .. }))
    );
}

/// The data of the synthesis the debate concluded with.
fn approval_line(events: &[Event]) -> String {
    synthesis_markdown(events)
        .lines()
        .find(|l| l.starts_with("**Approval:**"))
        .unwrap_or("")
        .to_string()
}

/// A moderator that concludes "agreement" every round while no seat ever concedes: moot sets
/// each conclusion aside with a flag, runs every round, and caps the confidence.
#[tokio::test(start_paused = true)]
async fn a_moderator_that_always_concludes_cannot_end_an_unsettled_debate() {
    let mut script = Script::new();
    let conclude = json!({"summary": "They agree.", "assessment": "converging", "decision": "conclude", "agreement": true, "reason": "consensus"});
    for round in 1..=3 {
        script.round(round, conclude.clone());
    }
    script.synthesis();
    let (_dir, path) = script.write();
    let mut settings = settings(&path);
    settings.max_rounds = 3;
    let store = Store::in_memory().unwrap();
    let (finish, events) = run(&store, settings, vec![]).await;
    assert_eq!(finish.status, DebateStatus::Completed);
    let rounds = events
        .iter()
        .filter(|e| matches!(e, Event::RoundStarted { .. }))
        .count();
    assert_eq!(rounds, 3, "every round runs");
    assert_eq!(
        flags(&events, FlagKind::Unsupported),
        vec![
            (1, "moderator".to_string()),
            (2, "moderator".to_string()),
            (3, "moderator".to_string())
        ]
    );
    assert_eq!(
        signals(&events),
        vec![
            ConvergenceSignal::None,
            ConvergenceSignal::None,
            ConvergenceSignal::MaxRounds
        ]
    );
    let overruled: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::RoundCompleted { convergence, .. } => convergence.overruled.clone(),
            _ => None,
        })
        .collect();
    assert_eq!(overruled.len(), 3);
    assert!(
        overruled[0].contains("no seat has conceded a point"),
        "{overruled:?}"
    );
    // The reason is journaled with the round, so a replay shows it too.
    let journaled = store.events(&finish.id).unwrap();
    assert!(journaled.iter().any(|e| matches!(
        e,
        Event::Flag {
            round: 1,
            kind: FlagKind::Unsupported,
            ..
        }
    )));
    let markdown = synthesis_markdown(&events);
    assert!(markdown.contains("**Confidence:** Low"), "{markdown}");
    assert!(
        markdown.contains("The moderator rated its confidence High; moot lowered it to Low"),
        "{markdown}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_person_accepts_a_conclusion_or_asks_for_one_more_round() {
    let mut script = Script::new();
    script.round(1, evaluation("continue"));
    script.round(2, evaluation("continue"));
    script.round(3, evaluation("continue"));
    script.synthesis();
    let (_dir, path) = script.write();
    let mut settings = settings(&path);
    settings.checkpoints = true;
    settings.max_rounds = 2;
    let store = Store::in_memory().unwrap();
    // Round 1: continue. Round 2 is the limit: the person asks for one more (guided) round;
    // round 3, past the limit, concludes again and is accepted; then the synthesis approved.
    let (finish, events) = run(
        &store,
        settings,
        vec![
            Control::Continue,
            Control::Guide("settle the latency target".into()),
            Control::Accept,
            Control::Accept,
        ],
    )
    .await;
    assert_eq!(finish.status, DebateStatus::Completed, "{events:?}");
    let asked: Vec<(u32, AskKind)> = events
        .iter()
        .filter_map(|e| match e {
            Event::Checkpoint { round, kind, .. } => Some((*round, *kind)),
            _ => None,
        })
        .collect();
    assert_eq!(
        asked,
        vec![
            (1, AskKind::Checkpoint),
            (2, AskKind::Conclusion),
            (3, AskKind::Conclusion),
            (3, AskKind::Approval)
        ]
    );
    assert!(events.iter().any(|e| matches!(
        e,
        Event::RoundStarted {
            round: 3,
            limit: Some(3)
        }
    )));
    let markdown = synthesis_markdown(&events);
    assert!(markdown.contains("**Rounds:** 3"), "{markdown}");
    assert!(
        markdown.contains("The person asked for round 3, beyond the limit of 2."),
        "{markdown}"
    );
    assert_eq!(approval_line(&events), "**Approval:** approved by the test");
    let answers = store.checkpoints(&finish.id).unwrap();
    assert_eq!(answers[1].kind, AskKind::Conclusion);
    assert_eq!(answers[1].answered_by, "the test");
}

#[tokio::test(start_paused = true)]
async fn the_synthesis_is_revised_once_then_approved_or_left_unapproved() {
    let script = |reply_recommendation: &str| {
        let mut script = Script::new();
        script.round(1, evaluation("continue"));
        script.synthesis();
        script.replies.push(json!({"phase": "revision", "reply": {
            "title": "t", "recommendation": reply_recommendation, "confidence": "Medium",
            "perspectives": [], "agreements": [], "tensions": [], "caveats": [], "dissent": ""
        }}));
        script
    };
    for (answer, expected) in [
        (
            Control::Accept,
            "**Approval:** revised once at the request of the test (“weigh the migration cost”), then approved",
        ),
        (
            Control::Reject,
            "**Approval:** unapproved: the test asked for a revision (“weigh the migration cost”) and the test left it unapproved",
        ),
    ] {
        let (_dir, path) = script("Start with PostgreSQL; the migration costs a week.").write();
        let mut settings = settings(&path);
        settings.checkpoints = true;
        settings.max_rounds = 1;
        let store = Store::in_memory().unwrap();
        let (finish, events) = run(
            &store,
            settings,
            vec![
                Control::Accept,
                Control::Revise("weigh the migration cost".into()),
                answer,
            ],
        )
        .await;
        assert_eq!(finish.status, DebateStatus::Completed, "{events:?}");
        assert_eq!(approval_line(&events), expected);
        assert!(synthesis_markdown(&events).contains("the migration costs a week"));
        let drafts = events
            .iter()
            .filter(|e| matches!(e, Event::Synthesis { draft: true, .. }))
            .count();
        assert_eq!(drafts, 2, "the first synthesis and its revision were shown");
        let turns = store.turns(&finish.id).unwrap();
        assert!(turns.iter().any(|t| t.phase == Phase::Revision));
    }
}

#[tokio::test(start_paused = true)]
async fn an_unasked_or_unanswered_approval_says_so() {
    let mut script = Script::new();
    script.round(1, evaluation("continue"));
    script.synthesis();
    let (_dir, path) = script.write();
    // Checkpoints off: nobody was asked.
    let mut unasked = settings(&path);
    unasked.max_rounds = 1;
    let store = Store::in_memory().unwrap();
    let (finish, events) = run(&store, unasked.clone(), vec![]).await;
    assert_eq!(finish.status, DebateStatus::Completed);
    assert_eq!(
        approval_line(&events),
        "**Approval:** unapproved: nobody was asked to approve it (checkpoints were off)"
    );
    // Nobody answers the approval: the debate pauses there, and a resume asks again.
    let mut asked = unasked;
    asked.checkpoints = true;
    let store = Store::in_memory().unwrap();
    let (finish, _) = run(&store, asked, vec![Control::Accept]).await;
    assert_eq!(finish.status, DebateStatus::Paused);
    let stage = store.debate(&finish.id).unwrap().stage.unwrap();
    assert_eq!(
        stage.to_string(),
        "waiting for the synthesis to be approved"
    );
    let (resumed, events) = resume(
        &store,
        &finish.id,
        vec![Control::Reject],
        "bo at the workbench",
    )
    .await;
    assert_eq!(resumed.status, DebateStatus::Completed);
    assert_eq!(
        approval_line(&events),
        "**Approval:** unapproved: left unapproved by bo at the workbench"
    );
}

/// Runs a one-round debate on a journal file while `hold` takes the journal's write lock once
/// seat A's argument is recorded; returns how it finished and every event.
async fn run_with_a_locked_journal(release: bool) -> (Finish, Vec<Event>) {
    let mut script = Script::new();
    // Replies that take (virtual) time, so the debate yields and the lock can be taken.
    script.delay_ms = 50;
    script.round(1, evaluation("continue"));
    script.synthesis();
    let (dir, path) = script.write();
    let mut settings = settings(&path);
    settings.max_rounds = 1;
    let journal = dir.path().join("moot.db");
    // A short busy wait, so each locked attempt costs little real time.
    let store = Store::open_waiting(&journal, std::time::Duration::from_millis(20), false).unwrap();
    let (events, mut events_rx) = mpsc::unbounded_channel();
    let (_controls_tx, controls) = mpsc::unbounded_channel();
    let debate = session::start(
        moot::launch::host(),
        store,
        QUESTION,
        settings,
        Wiring {
            events,
            controls,
            answerer: "the test".into(),
        },
        std::future::pending(),
    );
    let hold = async {
        let mut seen = Vec::new();
        let mut holder: Option<rusqlite::Connection> = None;
        while let Some(event) = events_rx.recv().await {
            let argued = matches!(&event, Event::TurnCompleted { phase: Phase::Argument, seat, .. } if seat == "A");
            let waiting = matches!(&event, Event::Notice { message } if message.contains("locked by another process"));
            seen.push(event);
            if argued && holder.is_none() {
                let connection = rusqlite::Connection::open(&journal).unwrap();
                connection.execute_batch("BEGIN EXCLUSIVE").unwrap();
                holder = Some(connection);
            }
            if waiting && release {
                // Held a little longer (virtual time), then let go.
                tokio::time::sleep(std::time::Duration::from_secs(10)).await;
                if let Some(connection) = holder.take() {
                    connection.execute_batch("COMMIT").unwrap();
                }
            }
        }
        seen
    };
    let (finish, seen) = tokio::join!(debate, hold);
    (finish.unwrap(), seen)
}

#[tokio::test(start_paused = true)]
async fn a_journal_locked_mid_debate_is_waited_for_then_the_debate_goes_on() {
    let (finish, events) = run_with_a_locked_journal(true).await;
    assert_eq!(finish.status, DebateStatus::Completed, "{events:?}");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Notice { message } if message.contains("waiting for it")))
    );
}

#[tokio::test(start_paused = true)]
async fn a_journal_locked_for_good_stops_the_debate_and_says_what_is_true() {
    let (finish, events) = run_with_a_locked_journal(false).await;
    assert_eq!(finish.status, DebateStatus::Failed, "{events:?}");
    assert!(!finish.recorded, "the failure could not be written either");
    let error = finish.error.unwrap();
    assert!(
        error.contains("stayed locked by another process for 120 s")
            && error.contains("what was recorded is kept"),
        "{error}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_follow_up_issue_draft_is_written_once_from_a_concluded_debate() {
    let mut script = Script::new();
    script.round(1, evaluation("continue"));
    script.synthesis();
    let (dir, path) = script.write();
    let mut settings = settings(&path);
    settings.max_rounds = 1;
    settings.write_decision = true;
    settings.decisions_dir = dir.path().join("decisions");
    let store = Store::in_memory().unwrap();
    let (finish, _) = run(&store, settings, vec![]).await;
    let record = store.synthesis(&finish.id).unwrap().unwrap().path.unwrap();
    let draft = session::write_follow_up(&moot::protocol::builtin(), &store, &finish.id).unwrap();
    assert_eq!(draft.parent(), std::path::Path::new(&record).parent());
    assert!(draft.to_str().unwrap().ends_with("-issue.md"), "{draft:?}");
    let text = std::fs::read_to_string(&draft).unwrap();
    assert!(
        text.contains("## Decision")
            && text.contains("Do the staged plan.")
            && text.contains(&record),
        "{text}"
    );
    assert_eq!(
        session::write_follow_up(&moot::protocol::builtin(), &store, &finish.id).unwrap(),
        draft,
        "written once"
    );
    assert_eq!(
        store.synthesis(&finish.id).unwrap().unwrap().follow_up_path,
        Some(draft.display().to_string())
    );
    let files = std::fs::read_dir(dir.path().join("decisions"))
        .unwrap()
        .count();
    assert_eq!(files, 2, "the record and one draft");
}

#[tokio::test(start_paused = true)]
async fn a_revision_the_moderator_cannot_produce_is_not_recorded_as_one() {
    let mut script = Script::new();
    script.round(1, evaluation("continue"));
    script.synthesis();
    // No revision reply: the request fails, and the first synthesis is shown again.
    let (_dir, path) = script.write();
    let mut settings = settings(&path);
    settings.checkpoints = true;
    settings.max_rounds = 1;
    let store = Store::in_memory().unwrap();
    let (finish, events) = run(
        &store,
        settings,
        vec![
            Control::Accept,
            Control::Revise("weigh the migration cost".into()),
            Control::Accept,
        ],
    )
    .await;
    assert_eq!(finish.status, DebateStatus::Completed);
    assert_eq!(
        approval_line(&events),
        "**Approval:** approved by the test (the test asked for a revision (“weigh the migration cost”) the moderator could not produce; the first synthesis was approved)"
    );
    assert!(synthesis_markdown(&events).contains("The moderator's revision was unusable"));
}
