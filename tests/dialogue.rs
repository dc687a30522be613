//! The formal dialogue run through the real session on scripted replies, with tokio's paused
//! clock: a clean dialogue, a repaired and a rejected illegal move, a retraction after `why`, a
//! concession that ends it, a model that only breaks the rules, and a resume that replays K and
//! every move.

use moot::debate::{DebateStatus, Event, GateDecision, Phase, TurnStatus};
use moot::protocol::dialogue::DialogueSettings;
use moot::protocol::dialogue::result::DialogueResult;
use moot::session::{self, DebateSettings, Finish, ResumeChanges};
use moot::store::Store;
use serde_json::{Value, json};
use std::path::Path;
mod support;

use support::session::answered;

const TOPIC: &str = "We should replace our hand-rolled retry loop with tower's retry layer";

/// A script of replies matched on phase, seat and round; a key given twice answers the first
/// request and then the repair request.
struct Script(Vec<Value>);

impl Script {
    fn new() -> Self {
        Script(vec![
            json!({"phase": "context", "seat": "moderator", "round": 0, "reply": {
                "facts": [
                    {"fact": "The client retries in a hand-written loop.", "source": "src/client.rs:1"},
                    {"fact": "A model made this source up.", "source": "/etc/passwd:1"}
                ]
            }}),
        ])
    }

    fn say(&mut self, phase: &str, seat: &str, round: u32, moves: Value) -> &mut Self {
        self.0.push(
            json!({"phase": phase, "seat": seat, "round": round, "chunk_chars": 100000,
            "reply": {"argument": format!("{seat} speaks in round {round}."), "moves": moves}}),
        );
        self
    }

    fn delayed(
        &mut self,
        phase: &str,
        seat: &str,
        round: u32,
        moves: Value,
        delay_ms: u64,
    ) -> &mut Self {
        self.0.push(
            json!({"phase": phase, "seat": seat, "round": round, "delay_ms": delay_ms,
            "reply": {"argument": format!("{seat} speaks in round {round}."), "moves": moves}}),
        );
        self
    }

    fn opening(&mut self) -> &mut Self {
        self.say(
            "opening",
            "PRO",
            0,
            json!([{"act": "claim", "text": "Adopt tower's retry layer"}]),
        )
        .say(
            "opening",
            "OPP",
            0,
            json!([{"act": "claim", "target": "P1", "text": "Keep the hand-rolled loop"}]),
        )
    }

    /// PRO's first round: reasons for its thesis.
    fn maintained(&mut self) -> &mut Self {
        self.say(
            "argument",
            "PRO",
            1,
            json!([{"act": "since", "target": "P1", "premises": ["tower is maintained"]}]),
        )
    }

    fn verdict(&mut self, round: u32, winner: &str) -> &mut Self {
        self.0.push(
            json!({"phase": "verdict", "seat": "moderator", "round": round, "reply": {
                "rationale": format!("{winner} holds up: see P1 and O1."),
                "winner": winner,
                "strongest": ["P1"],
                "losing_points": ["O1 is simpler to read"],
                "consensus": "Adopt tower behind a feature flag and keep the loop's tests.",
                "revisit": ["if tower stops honouring Retry-After"]
            }}),
        );
        self
    }

    /// The clean two-round dialogue of the first test, up to its closing.
    fn clean(&mut self) -> &mut Self {
        self.opening()
            .say("argument", "PRO", 1, json!([{"act": "since", "target": "P1", "premises": ["tower is maintained by the tokio team", "the loop has no jitter"]}]))
            .say("argument", "OPP", 1, json!([
                {"act": "why", "target": "P2.2"},
                {"act": "claim", "target": "P2", "text": "maintenance is not our bottleneck", "attack": "undercut"}
            ]))
            .say("argument", "PRO", 2, json!([
                {"act": "why", "target": "O3"},
                {"act": "since", "target": "O2", "premises": ["the loop sleeps a fixed 100 ms"]}
            ]))
            .say("argument", "OPP", 2, json!([
                {"act": "since", "target": "P3", "premises": ["the last incidents came from configuration"]},
                {"act": "why", "target": "P4.1"}
            ]))
    }

    /// The moderator strikes `id` as weak in its ruling on `round`.
    fn strike(&mut self, round: u32, id: &str, flag: &[&str]) -> &mut Self {
        let flagged: Vec<Value> = flag
            .iter()
            .map(|id| json!({"id": id, "reason": "it calls the other side lazy"}))
            .collect();
        self.0.push(
            json!({"phase": "ruling", "seat": "moderator", "round": round, "reply": {
                "reasoning": format!("{id} rests on nothing in K."),
                "struck": [{"id": id, "reason": "it cites no evidence"}],
                "ad_hominem": flagged
            }}),
        );
        self
    }

    /// Written with a ruling that strikes and flags nothing for every round not ruled on above.
    fn write(&self, path: &Path) {
        let mut replies = self.0.clone();
        replies.push(
            json!({"phase": "ruling", "seat": "moderator", "repeat": true, "reply": {
                "reasoning": "The round is argued on its merits.", "struck": [], "ad_hominem": []
            }}),
        );
        std::fs::write(
            path,
            json!({"model": "script", "replies": replies}).to_string(),
        )
        .unwrap();
    }
}

/// A small codebase to gather K from.
fn codebase() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("src/client.rs"),
        "// the hand-rolled retry loop\nfn call() { loop { retry(); } }\n",
    )
    .unwrap();
    dir
}

fn settings(script: &Path, cwd: &Path, max_rounds: u32) -> DebateSettings {
    support::session::scripted_settings("dialogue", script, cwd, &[], Some(max_rounds), TOPIC)
}

async fn run(
    store: &Store,
    script: &Script,
    max_rounds: u32,
) -> (Finish, Vec<Event>, DialogueResult) {
    run_with(store, script, max_rounds, |_| {}).await
}

/// `run`, with the settings changed first (a vote, gates).
async fn run_with(
    store: &Store,
    script: &Script,
    max_rounds: u32,
    change: impl FnOnce(&mut DebateSettings),
) -> (Finish, Vec<Event>, DialogueResult) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("script.json");
    script.write(&path);
    let code = codebase();
    let mut settings = settings(&path, code.path(), max_rounds);
    change(&mut settings);
    let (finish, events) = answered(vec![], "test", |wiring| {
        session::start(
            moot::launch::host(),
            store.clone(),
            TOPIC,
            settings,
            wiring,
            std::future::pending(),
        )
    })
    .await;
    assert_eq!(finish.status, DebateStatus::Completed, "{events:?}");
    let result = result(store, &finish.id);
    (finish, events, result)
}

fn result(store: &Store, id: &str) -> DialogueResult {
    let stored = store.synthesis(id).unwrap().expect("a stored verdict");
    assert_eq!(stored.section.as_deref(), Some("dialogue_verdict"));
    serde_json::from_value(stored.data).unwrap()
}

fn keys(store: &Store, id: &str) -> Vec<(u32, Phase, String)> {
    store
        .turns(id)
        .unwrap()
        .into_iter()
        .map(|t| (t.round, t.phase, t.seat))
        .collect()
}

fn moves_of(store: &Store, id: &str) -> Vec<String> {
    store
        .turns(id)
        .unwrap()
        .iter()
        .flat_map(|t| {
            t.moves
                .iter()
                .map(|m| format!("{} {} {:?}", m.id, m.act, m.answers))
        })
        .collect()
}

fn violations(events: &[Event]) -> Vec<(u32, String, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Violation { round, seat, rule } => Some((*round, seat.clone(), rule.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_clean_dialogue_runs_opening_rounds_closing_and_a_scored_verdict() {
    let store = Store::in_memory().unwrap();
    let mut script = Script::new();
    script
        .clean()
        .say(
            "closing",
            "PRO",
            3,
            json!([{"act": "concede", "target": "O4.1"}]),
        )
        .say("closing", "OPP", 3, json!([]))
        .verdict(3, "OPP");
    let (finish, events, result) = run(&store, &script, 2).await;
    let order: Vec<(u32, Phase, String)> = keys(&store, &finish.id);
    let expected = [
        (0, Phase::Context, "moderator"),
        (0, Phase::Opening, "PRO"),
        (0, Phase::Opening, "OPP"),
        (1, Phase::Argument, "PRO"),
        (1, Phase::Argument, "OPP"),
        (1, Phase::Ruling, "moderator"),
        (2, Phase::Argument, "PRO"),
        (2, Phase::Argument, "OPP"),
        (2, Phase::Ruling, "moderator"),
        (3, Phase::Closing, "PRO"),
        (3, Phase::Closing, "OPP"),
        (3, Phase::Verdict, "moderator"),
    ];
    assert_eq!(
        order,
        expected
            .iter()
            .map(|(r, p, s)| (*r, *p, s.to_string()))
            .collect::<Vec<_>>()
    );
    assert!(violations(&events).is_empty(), "{:?}", violations(&events));
    // K: the made-up source was dropped; the real one opens at its line.
    let context = events.iter().find_map(|e| match e {
        Event::SharedContext { facts, .. } => Some(facts.clone()),
        _ => None,
    });
    let facts = context.expect("K announced");
    assert_eq!(facts.len(), 1);
    assert_eq!(facts[0].file, Some(("src/client.rs".to_string(), 1)));
    assert_eq!(result.context, facts);
    // Ids, premises and answers as the rules journal them.
    let moves = moves_of(&store, &finish.id);
    assert!(
        moves.contains(&"P2 since [\"P1\"]".to_string()),
        "{moves:?}"
    );
    assert!(
        moves.contains(&"P2.2 claim [\"P2\"]".to_string()),
        "{moves:?}"
    );
    assert!(
        moves.contains(&"O4 since [\"O3\", \"P3\"]".to_string()),
        "{moves:?}"
    );
    let c = &result.computed;
    assert_eq!(c.decided_by, "scores");
    let expected_winner = if (c.pro.score - c.opp.score).abs() < 0.01 {
        "DRAW"
    } else if c.pro.score > c.opp.score {
        "PRO"
    } else {
        "OPP"
    };
    assert_eq!(c.winner, expected_winner);
    assert_eq!(c.metrics.violations, 0);
    assert_eq!(c.metrics.undercuts, 1);
    assert_eq!(c.metrics.concessions, 1);
    let open: Vec<&str> = c.unaddressed.iter().map(|w| w.id.as_str()).collect();
    assert_eq!(open, vec!["O5"], "PRO never answered why P4.1");
    // Both numbers and the moderator's reading are in the record, in the note's sections.
    let record = store.synthesis(&finish.id).unwrap().unwrap().markdown;
    for section in [
        "## Participants",
        "## Shared Context (K)",
        "### Round 0: Opening",
        "### Round 1: Argumentation",
        "### Round 3: Closing",
        "## Commitment Stores (Final State)",
        "### Arguments",
        "### Relations",
        "### Argument Map (ASCII)",
        "### Debate Quality Metrics",
        "### Consensus Solution",
        "### Conditions for Revisiting",
        "**PRO [P1]** `claim` \"Adopt tower's retry layer\"",
        "bias: prefers solutions that ship fast",
    ] {
        assert!(
            record.contains(section),
            "{section} missing from:\n{record}"
        );
    }
    assert!(
        record.contains(&format!("PRO {:.2}", c.pro.score))
            && record.contains(&format!("OPP {:.2}", c.opp.score))
    );
    assert_eq!(result.disagreement.is_some(), c.winner != "OPP");
}

#[tokio::test(start_paused = true)]
async fn an_illegal_move_is_repaired_once_and_then_rejected_and_counted() {
    // OPP's first round-1 reply answers PRO's premise with `since` (illegal); its repair is
    // legal. In round 2 PRO breaks the rules twice: the move is rejected and counted.
    let store = Store::in_memory().unwrap();
    let mut script = Script::new();
    script
        .opening()
        .maintained()
        .say("argument", "OPP", 1, json!([{"act": "since", "target": "P2.1", "premises": ["no"]}]))
        .say("argument", "OPP", 1, json!([{"act": "why", "target": "P2.1"}]))
        .say("argument", "PRO", 2, json!([{"act": "why", "target": "P2"}]))
        .say("argument", "PRO", 2, json!([{"act": "concede", "target": "O2"}, {"act": "since", "target": "O2", "premises": ["40 releases"]}]))
        .say("argument", "OPP", 2, json!([{"act": "why", "target": "P3.1"}]))
        .say("closing", "PRO", 3, json!([]))
        .say("closing", "OPP", 3, json!([]))
        .verdict(3, "PRO");
    let (finish, events, result) = run(&store, &script, 2).await;
    let repairs: Vec<&String> = events
        .iter()
        .filter_map(|e| match e {
            Event::Retry {
                seat,
                round: 1,
                reason,
                ..
            } if seat == "OPP" => Some(reason),
            _ => None,
        })
        .collect();
    assert_eq!(repairs.len(), 1);
    assert!(
        repairs[0].contains("claim → why / claim ¬φ / concede"),
        "{}",
        repairs[0]
    );
    let found = violations(&events);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!((found[0].0, found[0].1.as_str()), (2, "PRO"));
    assert!(
        found[0].2.contains("why → since / retract"),
        "{}",
        found[0].2
    );
    assert_eq!(result.computed.metrics.violations, 1);
    assert_eq!(result.violations[0].violation.attempted, "concede O2");
    // The legal move of the repaired reply was kept.
    let pro2 = store
        .turns(&finish.id)
        .unwrap()
        .into_iter()
        .find(|t| t.round == 2 && t.seat == "PRO")
        .unwrap();
    assert_eq!(pro2.status, TurnStatus::Ok);
    assert_eq!(pro2.moves[0].id, "P3");
    let record = store.synthesis(&finish.id).unwrap().unwrap().markdown;
    assert!(record.contains("⚠ rejected: concede O2"), "{record}");
    assert!(record.contains("- Protocol violations: 1"));
}

#[tokio::test(start_paused = true)]
async fn a_retraction_after_why_closes_the_line_and_is_recorded() {
    let store = Store::in_memory().unwrap();
    let mut script = Script::new();
    script
        .opening()
        .say("argument", "PRO", 1, json!([{"act": "since", "target": "P1", "premises": ["tower is faster", "tower is maintained"]}]))
        .say("argument", "OPP", 1, json!([{"act": "why", "target": "P2.1"}]))
        .say("closing", "PRO", 2, json!([{"act": "retract", "target": "O2"}]))
        .say("closing", "OPP", 2, json!([]))
        .verdict(2, "PRO");
    let (_, _, result) = run(&store, &script, 1).await;
    let pro = result
        .computed
        .commitment_stores
        .iter()
        .find(|s| s.seat == "PRO")
        .unwrap();
    assert!(
        pro.retractions.iter().any(|r| r.text == "tower is faster"),
        "{pro:?}"
    );
    assert!(!pro.commitments.iter().any(|c| c.text == "tower is faster"));
    assert!(
        result.computed.unaddressed.is_empty(),
        "the retraction answered O2"
    );
    assert_eq!(result.computed.metrics.retractions, 1);
    let retracted = result
        .computed
        .arguments
        .iter()
        .find(|a| a.id == "P2.1")
        .unwrap();
    assert!(retracted.retracted);
}

#[tokio::test(start_paused = true)]
async fn the_moderator_strikes_a_weak_argument_flags_an_attack_on_the_speaker_and_a_lapsed_why_retracts()
 {
    let store = Store::in_memory().unwrap();
    let mut script = Script::new();
    script
        .opening()
        .maintained()
        // O2 asks why P2.1; O3 attacks PRO instead of its argument.
        .say(
            "argument",
            "OPP",
            1,
            json!([
                {"act": "why", "target": "P2.1"},
                {"act": "claim", "target": "P1", "text": "PRO's team never tests anything"}
            ]),
        )
        .strike(1, "O3", &["O3"])
        // PRO leaves O2 unanswered in round 2: past the grace of one round, P2.1 is retracted.
        .say(
            "argument",
            "PRO",
            2,
            json!([{"act": "claim", "target": "O1", "text": "the loop has no backoff"}]),
        )
        .say(
            "argument",
            "OPP",
            2,
            json!([{"act": "why", "target": "P3"}]),
        )
        .say("closing", "PRO", 3, json!([]))
        .say("closing", "OPP", 3, json!([]))
        .verdict(3, "PRO");
    let (finish, events, result) = run(&store, &script, 2).await;
    let order = keys(&store, &finish.id);
    let at = |key: (u32, Phase, &str)| {
        order
            .iter()
            .position(|(r, p, s)| (*r, *p, s.as_str()) == key)
            .unwrap_or_else(|| panic!("no {key:?} in {order:?}"))
    };
    assert!(at((1, Phase::Argument, "OPP")) < at((1, Phase::Ruling, "moderator")));
    assert!(at((2, Phase::Lapse, "PRO")) < at((2, Phase::Ruling, "moderator")));
    assert!(!order.iter().any(|(r, p, _)| *p == Phase::Lapse && *r == 1));

    // The strike: journaled with its reason, O3 scores 0 and weighs nothing.
    let o3 = result
        .computed
        .arguments
        .iter()
        .find(|a| a.id == "O3")
        .unwrap();
    assert!(o3.struck && o3.score == 0.0, "{o3:?}");
    assert_eq!(result.computed.struck.len(), 1);
    assert_eq!(result.computed.struck[0].reason, "it cites no evidence");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Ruled { round: 1, ruling } if ruling.struck[0].id == "O3"))
    );
    // The attack on the speaker: a violation of OPP's, counted.
    let flagged: Vec<_> = violations(&events)
        .into_iter()
        .filter(|(_, _, rule)| rule.starts_with("no ad hominem"))
        .collect();
    assert_eq!(flagged.len(), 1, "{flagged:?}");
    assert_eq!((flagged[0].0, flagged[0].1.as_str()), (1, "OPP"));
    assert_eq!(result.computed.metrics.violations, 1);
    assert_eq!(result.violations[0].violation.attempted, "O3");
    // The lapse: P2.1 retracted by a move that answers O2, recorded as the rules'.
    let lapse = store
        .turns(&finish.id)
        .unwrap()
        .into_iter()
        .find(|t| t.phase == Phase::Lapse)
        .unwrap();
    assert_eq!(lapse.provider, "moot");
    assert_eq!(lapse.moves[0].answers, ["P2.1", "O2"]);
    let retracted = &lapse.moves[0].id;
    assert_eq!(result.computed.lapsed, std::slice::from_ref(retracted));
    assert!(
        result
            .computed
            .arguments
            .iter()
            .find(|a| a.id == "P2.1")
            .unwrap()
            .retracted
    );
    assert!(result.computed.unaddressed.iter().all(|w| w.id != "O2"));
    assert_eq!(result.computed.metrics.retractions, 1);
    // O4, asked in round 2, had no round left to be answered in: still open, not lapsed.
    assert!(result.computed.unaddressed.iter().any(|w| w.id == "O4"));
    // The record says all three.
    let markdown = store.synthesis(&finish.id).unwrap().unwrap().markdown;
    for said in [
        "**MOD** ruled OPP's O3 struck as weak: it cites no evidence",
        "**MOD** ruled OPP's O3 attacks the speaker, not the argument: it calls the other side lazy",
        "imposed by the rules: a why went unanswered past its grace",
        "- **Struck by the moderator as weak (scored 0):** O3 (OPP): it cites no evidence",
        "| O3 | PRO's team never tests anything (struck) | OPP | 0.00 |",
    ] {
        assert!(markdown.contains(said), "{said:?} not in\n{markdown}");
    }
}

#[tokio::test(start_paused = true)]
async fn conceding_the_thesis_ends_the_dialogue_at_once() {
    let store = Store::in_memory().unwrap();
    let mut script = Script::new();
    script
        .opening()
        .maintained()
        .say(
            "argument",
            "OPP",
            1,
            json!([{"act": "concede", "target": "P1"}]),
        )
        .verdict(1, "PRO");
    let (finish, events, result) = run(&store, &script, 3).await;
    assert_eq!(result.computed.winner, "PRO");
    assert_eq!(result.computed.decided_by, "concession");
    assert_eq!(result.computed.decisive_move.as_deref(), Some("O2"));
    assert_eq!(result.rounds, 1);
    assert!(
        !keys(&store, &finish.id)
            .iter()
            .any(|(r, p, _)| *r > 1 || *p == Phase::Closing)
    );
    assert!(events.iter().any(|e| matches!(e, Event::RoundCompleted { convergence, .. } if convergence.reason.contains("OPP gave up its thesis"))));
    assert_eq!(result.confidence(), moot::debate::Confidence::High);
}

#[tokio::test(start_paused = true)]
async fn a_model_that_only_breaks_the_rules_still_reaches_a_verdict_from_the_scores() {
    let store = Store::in_memory().unwrap();
    let mut script = Script::new();
    script.opening();
    // Every argumentation and closing reply, and its repair, answers its own side's moves.
    for (round, phase) in [(1, "argument"), (2, "argument"), (3, "closing")] {
        for seat in ["PRO", "OPP"] {
            let own = if seat == "PRO" { "P1" } else { "O1" };
            for _ in 0..2 {
                script.say(
                    phase,
                    seat,
                    round,
                    json!([{"act": "concede", "target": own}]),
                );
            }
        }
    }
    script.0.push(json!({"phase": "verdict", "seat": "moderator", "round": 3, "repeat": true, "reply": "I refuse to use JSON."}));
    let (finish, events, result) = run(&store, &script, 2).await;
    assert_eq!(violations(&events).len(), 6);
    assert_eq!(result.computed.metrics.violations, 6);
    assert_eq!(result.computed.decided_by, "scores");
    assert!(result.moderator.is_none());
    // O1 rebuts P1 and nothing else moved: OPP 0.50, PRO 0.35.
    assert_eq!(result.computed.winner, "OPP");
    assert!((result.computed.pro.score - 0.35).abs() < 1e-6);
    let record = store.synthesis(&finish.id).unwrap().unwrap().markdown;
    assert!(
        record.contains("The moderator gave no usable verdict; the computed one stands."),
        "{record}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_resume_mid_argumentation_replays_k_and_every_move_without_asking_again() {
    let store = Store::in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("script.json");
    let mut script = Script::new();
    script
        .opening()
        .maintained()
        .say(
            "argument",
            "OPP",
            1,
            json!([{"act": "why", "target": "P2.1"}]),
        )
        .delayed(
            "argument",
            "PRO",
            2,
            json!([{"act": "since", "target": "O2", "premises": ["40 releases"]}]),
            100_000,
        );
    script.write(&path);
    let code = codebase();
    let first = settings(&path, code.path(), 2);
    let interrupt = tokio::time::sleep(std::time::Duration::from_secs(50));
    let (finish, before) = answered(vec![], "test", |wiring| {
        session::start(
            moot::launch::host(),
            store.clone(),
            TOPIC,
            first,
            wiring,
            interrupt,
        )
    })
    .await;
    assert_eq!(finish.status, DebateStatus::Paused);
    let moves_before = moves_of(&store, &finish.id);
    assert_eq!(store.turns(&finish.id).unwrap().len(), 6);

    // The context, the first four turns and round 1's ruling are not in this script: asking
    // again would fail.
    let mut rest = Script(Vec::new());
    rest.say(
        "argument",
        "PRO",
        2,
        json!([{"act": "since", "target": "O2", "premises": ["40 releases"]}]),
    )
    .say(
        "argument",
        "OPP",
        2,
        json!([{"act": "concede", "target": "P3.1"}]),
    )
    .say("closing", "PRO", 3, json!([]))
    .say("closing", "OPP", 3, json!([]))
    .verdict(3, "PRO");
    rest.write(&path);
    // A file appearing in the codebase now must not change K: it is never gathered again.
    std::fs::write(code.path().join("src/retry_budget.rs"), "// retry budget\n").unwrap();
    let (finish, after) = answered(vec![], "test", |wiring| {
        session::resume(
            moot::launch::host(),
            store.clone(),
            &finish.id,
            ResumeChanges::default(),
            wiring,
            std::future::pending(),
        )
    })
    .await;
    assert_eq!(finish.status, DebateStatus::Completed, "{after:?}");
    let k = |events: &[Event]| {
        events.iter().find_map(|e| match e {
            Event::SharedContext { facts, .. } => Some(facts.clone()),
            _ => None,
        })
    };
    assert_eq!(k(&after), k(&before), "K replayed as it was");
    let replayed = after
        .iter()
        .filter(|e| matches!(e, Event::TurnCompleted { replayed: true, .. }))
        .count();
    assert_eq!(replayed, 6);
    let moves_after = moves_of(&store, &finish.id);
    assert_eq!(&moves_after[..moves_before.len()], &moves_before[..]);
    let result = result(&store, &finish.id);
    assert_eq!(result.computed.concessions.len(), 1);
    // A replay from the journal shows K and every move, like the live run.
    let mut view = moot::tui::state::DebateView::new();
    for event in
        moot::replay::journal_events(&moot::protocol::builtin(), &store, &finish.id).unwrap()
    {
        view.apply(&event);
    }
    assert_eq!(view.shared_context.unwrap().facts, k(&before).unwrap());
    assert_eq!(
        view.turns.iter().filter(|t| t.phase.is_debater()).count(),
        8
    );
    let settings: DialogueSettings = serde_json::from_value(
        store.debate(&finish.id).unwrap().config["protocol_settings"].clone(),
    )
    .unwrap_or_else(|_| panic!("{}", store.debate(&finish.id).unwrap().config));
    assert!(
        settings
            .context
            .unwrap()
            .code
            .iter()
            .all(|e| e.path != "src/retry_budget.rs")
    );
}

#[tokio::test(start_paused = true)]
async fn a_closing_vote_is_counted_and_a_condorcet_tie_falls_back_to_borda_on_the_record() {
    let store = Store::in_memory().unwrap();
    let mut script = Script::new();
    script
        .opening()
        .maintained()
        .say(
            "argument",
            "OPP",
            1,
            json!([{"act": "why", "target": "P2.1"}]),
        )
        .say("closing", "PRO", 2, json!([]))
        .say("closing", "OPP", 2, json!([]));
    // Each side ranks its own thesis first: one vote each way.
    script.0.push(json!({"phase": "vote", "seat": "PRO", "round": 2, "reply": {"ranking": ["PRO", "OPP"], "confidence": 0.8}}));
    // OPP's first ballot leaves PRO out; its repair is whole.
    script.0.push(json!({"phase": "vote", "seat": "OPP", "round": 2, "reply": {"ranking": ["OPP"], "confidence": 0.6}}));
    script.0.push(json!({"phase": "vote", "seat": "OPP", "round": 2, "reply": {"ranking": ["OPP", "PRO"], "confidence": 0.6}}));
    script.verdict(2, "PRO");
    let (finish, events, result) = run_with(&store, &script, 1, |settings| {
        settings.vote = Some(moot::vote::Method::Condorcet)
    })
    .await;
    let counted = events.iter().find_map(|e| match e {
        Event::Votes { votes, .. } => Some(votes.clone()),
        _ => None,
    });
    let votes = counted.expect("the vote was announced");
    assert!(votes.fallback_used, "{votes:?}");
    assert_eq!(votes.winner.as_deref(), Some("PRO"));
    assert!(
        votes.tie.as_deref().unwrap().contains("earlier candidate"),
        "{votes:?}"
    );
    assert_eq!(
        votes.ballots[1],
        (
            "OPP".to_string(),
            vec!["OPP".to_string(), "PRO".to_string()]
        )
    );
    assert!(events.iter().any(|e| matches!(e, Event::Retry { seat, reason, .. } if seat == "OPP" && reason.contains("leaves out PRO"))));
    assert_eq!(result.votes, Some(votes));
    let record = store.synthesis(&finish.id).unwrap().unwrap().markdown;
    assert!(
        record.contains("## Votes")
            && record.contains("The pairwise count had a cycle: Borda decided."),
        "{record}"
    );
    let phases: Vec<Phase> = store
        .turns(&finish.id)
        .unwrap()
        .iter()
        .map(|t| t.phase)
        .collect();
    assert_eq!(phases.iter().filter(|p| **p == Phase::Vote).count(), 2);
}

fn gated(path: &Path, code: &Path, minutes: u64) -> DebateSettings {
    let mut settings = settings(path, code, 1);
    settings.gates = moot::config::GatesConfig {
        enabled: true,
        points: vec!["after_round".into()],
        timeout_minutes: minutes,
        timeout_seconds: None,
    };
    settings
}

fn short_script() -> Script {
    let mut script = Script::new();
    script
        .opening()
        .maintained()
        .say(
            "argument",
            "OPP",
            1,
            json!([{"act": "why", "target": "P2.1"}]),
        )
        .say("closing", "PRO", 2, json!([]))
        .say("closing", "OPP", 2, json!([]))
        .verdict(2, "PRO");
    script
}

#[tokio::test(start_paused = true)]
async fn an_approval_gate_is_approved_rejected_or_left_to_time_out_and_asked_again() {
    use moot::debate::Control;
    use moot::session::ResumeChanges;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("script.json");
    let code = codebase();

    // Approved: the debate goes on; the decision is journaled with who made it.
    let store = Store::in_memory().unwrap();
    short_script().write(&path);
    let (finish, events) = answered(vec![Control::Accept], "ana", |wiring| {
        session::start(
            moot::launch::host(),
            store.clone(),
            TOPIC,
            gated(&path, code.path(), 30),
            wiring,
            std::future::pending(),
        )
    })
    .await;
    assert_eq!(finish.status, DebateStatus::Completed);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::GateRequested { gate, .. } if gate == "after_round:1"))
    );
    let gates = store.gates(&finish.id).unwrap();
    let after = gates.iter().find(|g| g.gate == "after_round:1").unwrap();
    assert_eq!(
        (after.decision, after.decided_by.as_deref()),
        (Some(GateDecision::Approved), Some("ana"))
    );
    // The point not configured passes on its own, recorded as such.
    let before = gates
        .iter()
        .find(|g| g.point == "before_synthesis")
        .unwrap();
    assert_eq!(
        before.decided_by.as_deref(),
        Some("moot (this debate does not stop here)")
    );

    // Rejected: the debate stops there, the reason kept.
    let store = Store::in_memory().unwrap();
    short_script().write(&path);
    let (finish, _) = answered(
        vec![Control::Decline("the premises are untested".into())],
        "ana",
        |wiring| {
            session::start(
                moot::launch::host(),
                store.clone(),
                TOPIC,
                gated(&path, code.path(), 30),
                wiring,
                std::future::pending(),
            )
        },
    )
    .await;
    assert_eq!(finish.status, DebateStatus::Cancelled);
    let rejected = &store.gates(&finish.id).unwrap()[0];
    assert_eq!(
        (rejected.decision, rejected.reason.as_deref()),
        (
            Some(GateDecision::Rejected),
            Some("the premises are untested")
        )
    );
    assert!(
        store.synthesis(&finish.id).unwrap().is_none(),
        "no verdict after a rejection"
    );
    // C8: a rejected debate stands at no gate any more.
    assert_eq!(store.debate(&finish.id).unwrap().stage, None);

    // Unanswered: paused at the timeout; a resume asks again and goes on once approved.
    let store = Store::in_memory().unwrap();
    short_script().write(&path);
    let (finish, _) = answered(vec![], "ana", |wiring| {
        session::start(
            moot::launch::host(),
            store.clone(),
            TOPIC,
            gated(&path, code.path(), 1),
            wiring,
            std::future::pending(),
        )
    })
    .await;
    assert_eq!(finish.status, DebateStatus::Paused);
    assert_eq!(
        store.gates(&finish.id).unwrap()[0].decision,
        Some(GateDecision::TimedOut)
    );
    let mut rest = short_script();
    rest.0
        .retain(|r| r["phase"] == "closing" || r["phase"] == "verdict");
    rest.write(&path);
    let (finish, _) = answered(vec![Control::Accept], "ana", |wiring| {
        session::resume(
            moot::launch::host(),
            store.clone(),
            &finish.id,
            ResumeChanges::default(),
            wiring,
            std::future::pending(),
        )
    })
    .await;
    assert_eq!(finish.status, DebateStatus::Completed);
    let names: Vec<(String, Option<GateDecision>)> = store
        .gates(&finish.id)
        .unwrap()
        .into_iter()
        .map(|g| (g.gate, g.decision))
        .collect();
    assert!(
        names.contains(&("after_round:1#2".to_string(), Some(GateDecision::Approved))),
        "{names:?}"
    );
}

/// B11: a turn that fails to parse is not the side's choice. PRO's round-1 reply cannot be
/// read (even after its repair), so OPP's opening why is not read as left unanswered: nothing
/// lapses, PRO answers in round 2, and the result says PRO could not answer in round 1.
#[tokio::test(start_paused = true)]
async fn a_turn_that_fails_to_parse_is_not_read_as_leaving_a_why_unanswered() {
    let store = Store::in_memory().unwrap();
    let mut script = Script::new();
    script
        .say(
            "opening",
            "PRO",
            0,
            json!([{"act": "claim", "text": "Adopt tower's retry layer"}]),
        )
        .say("opening", "OPP", 0, json!([{"act": "why", "target": "P1"}]));
    script.0.push(
        json!({"phase": "argument", "seat": "PRO", "round": 1, "repeat": true,
        "reply": "upstream error: 503 Service Unavailable"}),
    );
    script
        .say("argument", "OPP", 1, json!([]))
        .say(
            "argument",
            "PRO",
            2,
            json!([{"act": "since", "target": "P1", "premises": ["tower is maintained"]}]),
        )
        .say("argument", "OPP", 2, json!([]))
        .say("closing", "PRO", 3, json!([]))
        .say("closing", "OPP", 3, json!([]))
        .verdict(3, "PRO");
    let (finish, _events, result) = run(&store, &script, 2).await;
    let turns = store.turns(&finish.id).unwrap();
    let failed = turns
        .iter()
        .find(|t| t.round == 1 && t.seat == "PRO" && t.phase == Phase::Argument)
        .unwrap();
    assert_eq!(failed.status, moot::debate::TurnStatus::Fallback);
    assert!(
        !turns.iter().any(|t| t.phase == Phase::Lapse),
        "{:?}",
        keys(&store, &finish.id)
    );
    assert!(
        turns
            .iter()
            .any(|t| t.round == 2 && t.seat == "PRO" && t.phase == Phase::Argument),
        "the dialogue went on to round 2"
    );
    assert!(result.computed.lapsed.is_empty());
    assert_ne!(result.computed.decided_by, "retraction of its own thesis");
    assert!(
        result
            .notes
            .iter()
            .any(|n| n.starts_with("PRO could not answer in round 1")),
        "{:?}",
        result.notes
    );
}

/// B1: with no argument above 0.5, "Strongest Surviving Arguments" names none, though the
/// moderator offers the argument it struck and a retracted premise: the schema offers nothing
/// to name, and the record says why the list is empty.
#[tokio::test(start_paused = true)]
async fn with_nothing_surviving_no_argument_is_listed_as_strongest() {
    let store = Store::in_memory().unwrap();
    let mut script = Script::new();
    script
        .opening()
        .maintained()
        .say(
            "argument",
            "OPP",
            1,
            json!([
                {"act": "why", "target": "P2.1"},
                {"act": "claim", "target": "P1", "text": "PRO's team never tests anything"}
            ]),
        )
        .strike(1, "O3", &["O3"])
        .say(
            "argument",
            "PRO",
            2,
            json!([{"act": "claim", "target": "O1", "text": "the loop has no backoff"}]),
        )
        .say(
            "argument",
            "OPP",
            2,
            json!([{"act": "why", "target": "P3"}]),
        )
        .say("closing", "PRO", 3, json!([]))
        .say("closing", "OPP", 3, json!([]));
    script.0.push(
        json!({"phase": "verdict", "seat": "moderator", "round": 3, "reply": {
            "rationale": "PRO holds up: see P1 and O3.",
            "winner": "PRO",
            "strongest": ["O3", "P2.1"],
            "losing_points": ["O1 is simpler to read"],
            "consensus": "Adopt tower behind a feature flag.",
            "revisit": ["if tower stops honouring Retry-After"]
        }}),
    );
    let (finish, _events, result) = run(&store, &script, 2).await;
    assert!(
        result.computed.survived.is_empty(),
        "{:?}",
        result.computed.survived
    );
    let markdown = store.synthesis(&finish.id).unwrap().unwrap().markdown;
    let strongest = markdown
        .split("### Strongest Surviving Arguments")
        .nth(1)
        .and_then(|rest| rest.split("###").next())
        .unwrap_or_else(|| panic!("{markdown}"));
    assert!(
        strongest.contains("- none: no argument scored above 0.5"),
        "{strongest}"
    );
    assert!(
        !strongest.contains("O3") && !strongest.contains("P2.1"),
        "{strongest}"
    );
    // What the moderator was offered to name: nothing.
    let asked = store
        .audit(&finish.id)
        .unwrap()
        .into_iter()
        .filter(|e| e.place.phase == "verdict" && e.body.is_some())
        .map(|e| e.body.unwrap().to_string())
        .find(|b| b.contains("moot_dialogue_verdict"))
        .expect("the verdict request is in the audit trail");
    assert!(asked.contains(r#""maxItems":0"#), "{asked}");
}
