//! The arena run through the real session on scripted replies, with tokio's paused clock:
//! round-robin and moderator order, personas from the moderator, the catalog and a file, a
//! turn that misses its time limit, rubric scores beside gradual scores, and the arena
//! directory kept written while it runs.

use moot::arena;
use moot::debate::{DebateStatus, Event, Phase, TurnStatus};
use moot::protocol::arena::ArenaResult;
use moot::session::{self, DebateSettings, Finish};
use moot::store::Store;
use serde_json::{Value, json};
use std::path::Path;
mod support;

use support::session::answered;

const TOPIC: &str = "Adopt a 4-day work week";

struct Script(Vec<Value>);

impl Script {
    fn new() -> Self {
        Script(Vec::new())
    }

    fn push(
        &mut self,
        phase: &str,
        seat: &str,
        round: u32,
        reply: Value,
        delay_ms: u64,
    ) -> &mut Self {
        self.0.push(json!({"phase": phase, "seat": seat, "round": round, "reply": reply, "chunk_chars": 100000, "delay_ms": delay_ms}));
        self
    }

    /// The moderator's personas for roles the catalog does not know.
    fn personas(&mut self, roles: &[&str]) -> &mut Self {
        let personas: Vec<Value> = roles
            .iter()
            .map(|r| json!({"role_name": r, "stance_summary": format!("{r}'s stance"), "instructions": format!("Argue as {r}."), "background_context": ""}))
            .collect();
        self.push("analysis", "moderator", 0, json!({"personas": personas}), 0)
    }

    fn argue(&mut self, phase: &str, seat: &str, round: u32, responds_to: &[u32]) -> &mut Self {
        self.push(
            phase,
            seat,
            round,
            json!({
                "argument_text": format!("{seat} in round {round}: the pilot data says so."),
                "responds_to": responds_to,
                "references": ["data: the 2022 pilot"],
                "tone": "measured",
                "confidence": 0.7,
                "moves": [{"act": "claim", "text": format!("{seat} claim {round}")}]
            }),
            0,
        )
    }

    fn summary(&mut self, round: u32) -> &mut Self {
        self.push(
            "synthesis",
            "moderator",
            round,
            json!("Both seats argued from the pilot; see turns 1 and 2."),
            0,
        )
    }

    fn write(&self, path: &Path) {
        std::fs::write(
            path,
            json!({"model": "script", "replies": self.0}).to_string(),
        )
        .unwrap();
    }
}

fn settings(script: &Path, flags: &[(&str, &[&str])], cwd: &Path) -> DebateSettings {
    support::session::scripted_settings("arena", script, cwd, flags, None, TOPIC)
}

async fn run(
    store: &Store,
    script: &Script,
    flags: &[(&str, &[&str])],
    cwd: &Path,
) -> (Finish, Vec<Event>, ArenaResult) {
    let path = cwd.join("script.json");
    script.write(&path);
    let settings = settings(&path, flags, cwd);
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
    let stored = store
        .synthesis(&finish.id)
        .unwrap()
        .expect("a stored result");
    assert_eq!(stored.section.as_deref(), Some("arena_result"));
    let result: ArenaResult = serde_json::from_value(stored.data).unwrap();
    (finish, events, result)
}

#[tokio::test(start_paused = true)]
async fn four_rounds_round_robin_with_moderator_personas_and_the_arena_directory_written_live() {
    let store = Store::in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut script = Script::new();
    script
        .personas(&["Proponent", "Skeptic"])
        .argue("opening", "A", 1, &[])
        .argue("opening", "B", 1, &[])
        .argue("rebuttal", "A", 2, &[2])
        .argue("rebuttal", "B", 2, &[3])
        .argue("rebuttal", "A", 3, &[4])
        .argue("rebuttal", "B", 3, &[5])
        .argue("closing", "A", 4, &[6])
        .argue("closing", "B", 4, &[7])
        .summary(4);
    let arena_dir = dir.path().join("debates");
    let (finish, _, result) = run(
        &store,
        &script,
        &[
            ("seat", &["Proponent", "Skeptic"]),
            ("arena-dir", &[arena_dir.to_str().unwrap()]),
        ],
        dir.path(),
    )
    .await;
    let phases: Vec<(u32, Phase, String)> = store
        .turns(&finish.id)
        .unwrap()
        .into_iter()
        .map(|t| (t.round, t.phase, t.seat))
        .collect();
    assert_eq!(phases.len(), 10, "{phases:?}");
    assert_eq!(phases[1], (1, Phase::Opening, "A".to_string()));
    assert_eq!(phases[3], (2, Phase::Rebuttal, "A".to_string()));
    assert_eq!(phases[8], (4, Phase::Closing, "B".to_string()));
    let numbers: Vec<u32> = result.turns.iter().map(|t| t.turn_number).collect();
    assert_eq!(numbers, (1..=8).collect::<Vec<_>>());
    assert_eq!(
        result.turns[2].argument.references,
        vec!["turn:2", "data: the 2022 pilot"]
    );
    assert_eq!(result.turns[0].argument.metadata["tone"], "measured");
    assert_eq!(result.personas[1].agent_id, "skeptic");
    assert_eq!(result.personas[1].stance_summary, "Skeptic's stance");
    // The directory, in the note's layout, as the journal says.
    let written = arena::read(&arena_dir.join(&finish.id)).unwrap();
    assert_eq!(written.manifest.status, arena::ArenaStatus::Closed);
    assert_eq!(written.manifest.participants.len(), 2);
    assert_eq!(written.turns.len(), 8);
    assert_eq!(written.turns[3].agent_id, "skeptic");
    assert_eq!(
        written.turns[3].argument_text,
        "B in round 2: the pilot data says so."
    );
    assert_eq!(written.personas.len(), 2);
    assert!(written.summary.unwrap().contains("turns 1 and 2"));
    assert!(written.protocol_md.contains("round-robin"));
    assert!(
        arena_dir
            .join(&finish.id)
            .join("personas/proponent_persona.md")
            .is_file()
    );
}

#[tokio::test(start_paused = true)]
async fn the_moderator_orders_each_round_a_missed_turn_is_recorded_and_arguments_are_scored() {
    let store = Store::in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // The Security Advocate's persona comes from the catalog; the Skeptic's from a file.
    std::fs::write(dir.path().join("skeptic.toml"), "role_name = \"Skeptic\"\nagent_id = \"doubter\"\nstance_summary = \"Doubt it.\"\ninstructions = \"Ask for numbers.\"\n").unwrap();
    let order = |first: &str, second: &str| {
        json!({"order": {
            first: {"place": 1, "reason": format!("{first} has most to answer")},
            second: {"place": 2, "reason": "then the other"}
        }})
    };
    let score = |turns: &[u32]| {
        let keyed: serde_json::Map<String, Value> = turns
            .iter()
            .map(|n| (format!("turn_{n}"), json!({"evidence": 0.8, "relevance": 0.6, "responsiveness": 0.4, "stance_adherence": 1.0, "score": 0.1, "reason": "cites the pilot"})))
            .collect();
        json!({"scores": keyed})
    };
    let mut script = Script::new();
    script
        .push("pose", "moderator", 1, order("doubter", "security_advocate"), 0)
        .argue("opening", "B", 1, &[])
        .argue("opening", "A", 1, &[])
        .push("evaluation", "moderator", 1, score(&[1, 2]), 0)
        .push("pose", "moderator", 2, order("security_advocate", "doubter"), 0)
        .argue("rebuttal", "A", 2, &[1])
        // The doubter's closing-round reply arrives long after its time limit.
        .push("rebuttal", "B", 2, json!({"argument_text": "late", "responds_to": [3], "references": [], "confidence": 0.5, "moves": []}), 400_000)
        .push("evaluation", "moderator", 2, score(&[3]), 0)
        .push("pose", "moderator", 3, order("doubter", "security_advocate"), 0)
        .argue("closing", "B", 3, &[3])
        .argue("closing", "A", 3, &[5])
        .push("evaluation", "moderator", 3, score(&[5, 6]), 0)
        .summary(3);
    let (finish, _, result) = run(
        &store,
        &script,
        &[
            ("seat", &["Security Advocate", "Skeptic"]),
            ("persona", &["skeptic.toml"]),
            ("order", &["moderator"]),
            ("rounds", &["3"]),
            ("score", &[""]),
        ],
        dir.path(),
    )
    .await;
    assert_eq!(result.personas[0].role_name, "Security Advocate");
    assert!(
        result.personas[0].instructions.contains("attack surface"),
        "{:?}",
        result.personas[0]
    );
    assert_eq!(result.personas[1].agent_id, "doubter");
    let speakers: Vec<&str> = result.turns.iter().map(|t| t.agent_id.as_str()).collect();
    assert_eq!(
        speakers,
        vec![
            "doubter",
            "security_advocate",
            "security_advocate",
            "doubter",
            "doubter",
            "security_advocate"
        ]
    );
    assert_eq!(result.picks.len(), 6);
    assert_eq!(result.picks[0].reason, "doubter has most to answer");
    assert_eq!(result.turns[3].status, TurnStatus::TimedOut);
    assert_eq!(
        result.turns[3].argument.metadata["moot"]["status"],
        "timed_out"
    );
    let journaled = store.turns(&finish.id).unwrap();
    assert!(
        journaled
            .iter()
            .any(|t| t.round == 2 && t.seat == "B" && t.status == TurnStatus::TimedOut)
    );
    // The score is the mean of the rubric, whatever number the moderator wrote; the gradual
    // score of the turn's own claim stands beside it.
    assert_eq!(result.scores.len(), 5, "the missed turn is not scored");
    let first = &result.scores[0];
    assert!((first.score - 0.7).abs() < 1e-9, "{first:?}");
    assert_eq!(first.gradual, Some(0.5));
    let record = store.synthesis(&finish.id).unwrap().unwrap().markdown;
    assert!(
        record.contains("| 1 | doubter | 0.70 | 0.50 | cites the pilot |"),
        "{record}"
    );
    assert!(
        record.contains("*(missed the turn's time limit)*"),
        "{record}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_rebuttal_that_names_no_turn_is_repaired_once() {
    let store = Store::in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut script = Script::new();
    script
        .personas(&["Proponent", "Skeptic"])
        .argue("opening", "A", 1, &[])
        .argue("opening", "B", 1, &[])
        .argue("closing", "A", 2, &[])
        .argue("closing", "A", 2, &[9])
        .argue("closing", "B", 2, &[3])
        .summary(2);
    // A's first closing names nothing, its repair names a turn that does not exist: fallback.
    let (finish, events, _) = run(&store, &script, &[("rounds", &["2"])], dir.path()).await;
    let retries: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::Retry { seat, reason, .. } if seat == "A" => Some(reason.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(retries.len(), 1);
    assert!(
        retries[0].contains("must name the turns it answers"),
        "{}",
        retries[0]
    );
    let closing = store
        .turns(&finish.id)
        .unwrap()
        .into_iter()
        .find(|t| t.round == 2 && t.seat == "A")
        .unwrap();
    assert_eq!(closing.status, TurnStatus::Fallback);
    assert!(
        closing
            .note
            .unwrap()
            .contains("turn 9, which does not exist")
    );
}

/// Seed review 002/003 #7: scores that cannot be read, even after a repair, are said to have
/// failed in the record (and so in summary.md), not left as a silent empty list.
#[tokio::test(start_paused = true)]
async fn scores_that_fall_back_are_said_to_have_failed() {
    let store = Store::in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let garbage = json!({"scores": "I would rather not."});
    let mut script = Script::new();
    script
        .personas(&["Proponent", "Skeptic"])
        .argue("opening", "A", 1, &[])
        .argue("opening", "B", 1, &[])
        .push("evaluation", "moderator", 1, garbage.clone(), 0)
        .push("evaluation", "moderator", 1, garbage, 0)
        .argue("closing", "A", 2, &[2])
        .argue("closing", "B", 2, &[1])
        .push("evaluation", "moderator", 2, json!({"scores": {"turn_3": {"evidence": 1, "relevance": 1, "responsiveness": 1, "stance_adherence": 1, "reason": "r"}, "turn_4": {"evidence": 1, "relevance": 1, "responsiveness": 1, "stance_adherence": 1, "reason": "r"}}}), 0)
        .summary(2);
    let (finish, _, result) = run(
        &store,
        &script,
        &[("rounds", &["2"]), ("score", &[""])],
        dir.path(),
    )
    .await;
    assert_eq!(result.scores.len(), 2, "round 2 is scored");
    let said = "Round 1's scores could not be read, even after a repair request; its arguments are unscored.";
    assert!(result.notes.iter().any(|n| n == said), "{:?}", result.notes);
    let record = store.synthesis(&finish.id).unwrap().unwrap().markdown;
    assert!(record.contains(said), "{record}");
}

/// Issue 24 item 3: a person's arena turn can be written from another terminal following the
/// debate: the answer goes into the journal, and the running arena takes it as the seat's
/// turn, with who wrote it, while its own face answers nothing.
#[tokio::test(start_paused = true)]
async fn a_persons_turn_is_answered_from_another_terminal_through_the_journal() {
    let store = Store::in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut script = Script::new();
    script
        .personas(&["Proponent", "Skeptic"])
        .argue("opening", "A", 1, &[])
        .argue("closing", "A", 2, &[])
        .summary(2);
    let elsewhere = store.clone();
    let (finish, _, result) = run_watched(
        &store,
        &script,
        &[
            ("seat", &["Proponent", "human:Skeptic"]),
            ("rounds", &["2"]),
        ],
        dir.path(),
        vec![],
        move |event| {
            // Answered under the turn's own number, as a follower does.
            let Event::TurnRequested {
                round, turn_number, ..
            } = event
            else {
                return;
            };
            let id = elsewhere.list(1).unwrap()[0].id.clone();
            let words = format!("From the other terminal, round {round}: turn 1 has no data.");
            assert_eq!(
                elsewhere
                    .record_remote_answer(
                        &id,
                        *turn_number,
                        moot::debate::AskKind::Turn,
                        &moot::debate::Control::Guide(words),
                        "bo at another workbench",
                    )
                    .unwrap(),
                moot::store::RemoteAnswer::Recorded
            );
        },
    )
    .await;
    let skeptic: Vec<&moot::protocol::arena::ArenaTurn> = result
        .turns
        .iter()
        .filter(|t| t.agent_id == "skeptic")
        .collect();
    assert_eq!(skeptic.len(), 2);
    assert_eq!(
        skeptic[0].argument.argument_text,
        "From the other terminal, round 1: turn 1 has no data."
    );
    let journaled = store
        .turns(&finish.id)
        .unwrap()
        .into_iter()
        .find(|t| t.seat == "B" && t.round == 1)
        .unwrap();
    assert_eq!(
        (journaled.provider.as_str(), journaled.model.as_str()),
        ("person", "bo at another workbench")
    );
}

/// Runs an arena whose events a `watcher` sees as they come (to answer for an outside seat).
async fn run_watched(
    store: &Store,
    script: &Script,
    flags: &[(&str, &[&str])],
    cwd: &Path,
    controls: Vec<moot::debate::Control>,
    watcher: impl Fn(&Event) + Send + 'static,
) -> (Finish, Vec<Event>, ArenaResult) {
    let path = cwd.join("script.json");
    script.write(&path);
    let settings = settings(&path, flags, cwd);
    let (events_tx, mut events_rx) = tokio::sync::mpsc::unbounded_channel();
    let (controls_tx, controls_rx) = tokio::sync::mpsc::unbounded_channel();
    for control in controls {
        controls_tx.send(control).unwrap();
    }
    let collector = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Some(event) = events_rx.recv().await {
            watcher(&event);
            seen.push(event);
        }
        seen
    });
    let finish = session::start(
        moot::launch::host(),
        store.clone(),
        TOPIC,
        settings,
        moot::session::Wiring {
            events: events_tx,
            controls: controls_rx,
            answerer: "ana at the keyboard".into(),
        },
        std::future::pending(),
    )
    .await
    .unwrap();
    drop(controls_tx);
    let events = collector.await.unwrap();
    assert_eq!(finish.status, DebateStatus::Completed, "{events:?}");
    let stored = store.synthesis(&finish.id).unwrap().unwrap();
    (finish, events, serde_json::from_value(stored.data).unwrap())
}

#[tokio::test(start_paused = true)]
async fn a_person_plays_a_seat_passes_once_and_misses_a_turn() {
    use moot::debate::Control;
    let store = Store::in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut script = Script::new();
    script
        .personas(&["Proponent", "Skeptic"])
        .argue("opening", "A", 1, &[])
        .argue("rebuttal", "A", 2, &[2])
        .argue("closing", "A", 3, &[4])
        .summary(3);
    // The Skeptic is the person: an opening, then a pass; the closing is never written.
    let controls = vec![
        Control::Guide("Where is the data? Turn 1 cites none.".into()),
        Control::End,
    ];
    let (finish, events, result) = run_watched(
        &store,
        &script,
        &[
            ("seat", &["Proponent", "human:Skeptic"]),
            ("rounds", &["3"]),
            ("arena-dir", &["arenas"]),
        ],
        dir.path(),
        controls,
        |_| {},
    )
    .await;
    // Seed review 002/003 #8: the person's seat has joined once it spoke, and an export says
    // who played it.
    let live = moot::arena::read(&dir.path().join("arenas").join(&finish.id)).unwrap();
    let seat = |manifest: &moot::arena::Manifest, id: &str| {
        let p = manifest
            .participants
            .iter()
            .find(|p| p.agent_id == id)
            .unwrap();
        (p.kind.clone(), p.joined)
    };
    assert_eq!(seat(&live.manifest, "skeptic"), ("human".to_string(), true));
    let exported =
        moot::commands::as_arena_directory(&moot::report::document(&store, &finish.id).unwrap());
    assert_eq!(
        seat(&exported.manifest, "skeptic"),
        ("human".to_string(), true)
    );
    assert_eq!(
        seat(&exported.manifest, "proponent"),
        ("model".to_string(), true)
    );
    // Each turn carries the time the journal took it, and an import keeps it.
    let journal_times = store.turn_times(&finish.id).unwrap();
    let spoken_times: Vec<String> = store
        .turns(&finish.id)
        .unwrap()
        .iter()
        .zip(&journal_times)
        .filter(|(t, _)| t.seat != "moderator")
        .map(|(_, at)| at.clone())
        .collect();
    let exported_times: Vec<String> = exported
        .turns
        .iter()
        .map(|t| t.timestamp_utc.clone())
        .collect();
    assert_eq!(exported_times, spoken_times);
    let out = tempfile::tempdir().unwrap();
    moot::arena::ArenaDir::create(out.path(), &finish.id)
        .unwrap()
        .write_all(&exported)
        .unwrap();
    let other = Store::in_memory().unwrap();
    moot::commands::import(&other, &out.path().join(&finish.id)).unwrap();
    assert_eq!(other.turn_times(&finish.id).unwrap(), journal_times);
    let requested: Vec<(u32, String)> = events
        .iter()
        .filter_map(|e| match e {
            Event::TurnRequested {
                turn_number, by, ..
            } => Some((*turn_number, by.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        requested,
        vec![
            (2, "person".into()),
            (4, "person".into()),
            (6, "person".into())
        ]
    );
    let skeptic: Vec<&moot::protocol::arena::ArenaTurn> = result
        .turns
        .iter()
        .filter(|t| t.agent_id == "skeptic")
        .collect();
    assert_eq!(
        skeptic[0].argument.argument_text,
        "Where is the data? Turn 1 cites none."
    );
    assert_eq!(skeptic[0].argument.references, vec!["turn:1"]);
    assert_eq!(skeptic[1].argument.argument_text, "");
    assert_eq!(skeptic[2].status, TurnStatus::TimedOut);
    let journaled = store.turns(&finish.id).unwrap();
    let first = journaled
        .iter()
        .find(|t| t.seat == "B" && t.round == 1)
        .unwrap();
    assert_eq!(
        (first.provider.as_str(), first.model.as_str()),
        ("person", "ana at the keyboard")
    );
    assert_eq!(
        journaled
            .iter()
            .find(|t| t.seat == "B" && t.round == 2)
            .unwrap()
            .note
            .as_deref(),
        Some("the person passed this turn")
    );
}

#[tokio::test(start_paused = true)]
async fn an_outside_agent_answers_through_the_directory_and_a_bad_file_is_set_aside() {
    let store = Store::in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let arena_dir = dir.path().join("debates");
    let mut script = Script::new();
    script
        .personas(&["Proponent", "reviewer"])
        .argue("opening", "A", 1, &[])
        .argue("closing", "A", 2, &[2])
        .summary(2);
    let root = arena_dir.clone();
    // The outside agent: on each request, first a file for the wrong turn, then its answer.
    let watcher = move |event: &Event| {
        if let Event::TurnRequested {
            turn_number, by, ..
        } = event
            && by == "outside"
        {
            let id = std::fs::read_dir(&root)
                .unwrap()
                .next()
                .unwrap()
                .unwrap()
                .path();
            let transcript = id.join("transcript");
            std::fs::write(transcript.join(format!("turn_{turn_number}_reviewer_1.json")), r#"{"turn_number": 99, "agent_id": "reviewer", "timestamp_utc": "t", "argument_text": "wrong turn"}"#).unwrap();
            std::fs::write(
                transcript.join(format!("turn_{turn_number}_reviewer_2.json")),
                json!({"turn_number": turn_number, "agent_id": "reviewer", "timestamp_utc": "2026-11-22T19:00:00Z", "argument_text": format!("Reviewer, turn {turn_number}: the pilot was one team."), "references": ["turn:1", "data: one team of 12"], "metadata": {"confidence": 0.4}}).to_string(),
            )
            .unwrap();
        }
    };
    let (finish, events, result) = run_watched(
        &store,
        &script,
        &[
            ("seat", &["Proponent", "outside:reviewer"]),
            ("rounds", &["2"]),
            ("arena-dir", &[arena_dir.to_str().unwrap()]),
        ],
        dir.path(),
        vec![],
        watcher,
    )
    .await;
    let reviewer: Vec<&moot::protocol::arena::ArenaTurn> = result
        .turns
        .iter()
        .filter(|t| t.agent_id == "reviewer")
        .collect();
    assert_eq!(reviewer.len(), 2);
    assert_eq!(
        reviewer[0].argument.argument_text,
        "Reviewer, turn 2: the pilot was one team."
    );
    assert_eq!(
        reviewer[0].argument.references,
        vec!["turn:1", "data: one team of 12"]
    );
    assert!(events.iter().any(|e| matches!(e, Event::Notice { message } if message.contains("set aside") && message.contains("turn 99"))));
    let written = arena::read(&arena_dir.join(&finish.id)).unwrap();
    assert!(
        written.manifest.turn_requested.is_none(),
        "the request is cleared once answered"
    );
    assert_eq!(written.manifest.participants[1].kind, "outside");
    // The accepted file is moot's acknowledged copy; the bad one is set aside.
    let acknowledged = written.turns.iter().find(|t| t.turn_number == 2).unwrap();
    assert_eq!(acknowledged.metadata["moot"]["status"], "ok");
    assert!(
        std::fs::read_dir(arena_dir.join(&finish.id).join("transcript"))
            .unwrap()
            .any(|e| e
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".rejected"))
    );
}

#[tokio::test(start_paused = true)]
async fn a_resume_replays_every_turn_the_persons_too_without_asking_again() {
    use moot::debate::Control;
    use moot::session::ResumeChanges;
    let store = Store::in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("script.json");
    let mut script = Script::new();
    script
        .personas(&["Proponent", "Skeptic"])
        .argue("opening", "A", 1, &[]);
    // The Proponent's closing is slow: the debate is interrupted while it waits.
    script.push("closing", "A", 2, json!({"argument_text": "late", "responds_to": [2], "references": [], "confidence": 0.5, "moves": []}), 100_000);
    script.write(&path);
    let settings = settings(
        &path,
        &[
            ("seat", &["Proponent", "human:Skeptic"]),
            ("rounds", &["2"]),
        ],
        dir.path(),
    );
    let interrupt = tokio::time::sleep(std::time::Duration::from_secs(50));
    let (finish, _) = answered(
        vec![Control::Guide("Where is the data? Turn 1 has none.".into())],
        "ana",
        |wiring| {
            session::start(
                moot::launch::host(),
                store.clone(),
                TOPIC,
                settings,
                wiring,
                interrupt,
            )
        },
    )
    .await;
    assert_eq!(finish.status, DebateStatus::Paused);
    let before: Vec<(u32, Phase, String, String)> = store
        .turns(&finish.id)
        .unwrap()
        .into_iter()
        .map(|t| (t.round, t.phase, t.seat, t.content))
        .collect();
    assert_eq!(
        before.len(),
        3,
        "personas, A's opening, the person's opening: {before:?}"
    );

    let mut rest = Script::new();
    rest.argue("closing", "A", 2, &[2]).summary(2);
    rest.write(&path);
    // The person answers only the closing; the opening is replayed, never asked again.
    let (finish, events) = answered(
        vec![Control::Guide("Run a second pilot.".into())],
        "ana",
        |wiring| {
            session::resume(
                moot::launch::host(),
                store.clone(),
                &finish.id,
                ResumeChanges::default(),
                wiring,
                std::future::pending(),
            )
        },
    )
    .await;
    assert_eq!(finish.status, DebateStatus::Completed, "{events:?}");
    let replayed = events
        .iter()
        .filter(|e| matches!(e, Event::TurnCompleted { replayed: true, .. }))
        .count();
    assert_eq!(replayed, 3);
    let asked = events
        .iter()
        .filter(|e| matches!(e, Event::Checkpoint { .. }))
        .count();
    assert_eq!(asked, 1, "only the closing is asked");
    let after: Vec<(u32, Phase, String, String)> = store
        .turns(&finish.id)
        .unwrap()
        .into_iter()
        .map(|t| (t.round, t.phase, t.seat, t.content))
        .collect();
    assert_eq!(&after[..3], &before[..]);
    let result: ArenaResult =
        serde_json::from_value(store.synthesis(&finish.id).unwrap().unwrap().data).unwrap();
    let skeptic: Vec<&str> = result
        .turns
        .iter()
        .filter(|t| t.agent_id == "skeptic")
        .map(|t| t.argument.argument_text.as_str())
        .collect();
    assert_eq!(
        skeptic,
        vec!["Where is the data? Turn 1 has none.", "Run a second pilot."]
    );
}
