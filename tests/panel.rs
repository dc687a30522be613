//! The judges' panel run through the real session on scripted replies with tokio's paused
//! clock: consensus in round 1, a change of mind in round 2, a contested result and its
//! choice, a timed-out judge, an unreadable judge, a tie, and a resume in the middle of round 2.

use moot::config::Config;
use moot::debate::{Control, DebateStatus, Event, Phase, TurnStatus};
use moot::protocol::panel::{PanelResult, PanelSettings, parse_option};
use moot::providers::ProviderSpec;
use moot::session::{self, DebateSettings, Finish, ResumeChanges};
use moot::store::Store;
use serde_json::{Value, json};
use std::path::Path;
mod support;

use support::session::answered;

/// Who answers the queued controls, as the journal records it.
const ANSWERER: &str = "ana at the workbench";

const QUESTION: &str = "How much offline support should v1 have?";

/// A judge's round-1 reply recommending `option`.
fn recommend(option: &str, why: &str) -> Value {
    json!({
        "reasoning": format!("{why} The risk, the user value and the effort all point to {option}."),
        "assessments": [
            {"option": "A", "assessment": "full offline"},
            {"option": "B", "assessment": "online only"},
            {"option": "C", "assessment": "read-only cache"}
        ],
        "recommended": option,
        "perspective": format!("{option} is the sound choice")
    })
}

/// A judge's round-2 reply: challenges to `others`, then `option` (with `reason` if changed).
fn challenge(others: &[&str], option: &str, reason: &str) -> Value {
    json!({
        "reasoning": format!("Weighing the risk, the user value and the effort again, {option} holds."),
        "challenges": others.iter().map(|o| json!({"judge": o, "counter_argument": format!("{o} ignores how sync bugs surface after weeks of real use")})).collect::<Vec<_>>(),
        "recommended": option,
        "change_reason": reason,
        "perspective": format!("{option} after the challenges")
    })
}

struct Script(Vec<Value>);

/// Three judges for three options in both rounds.
fn contested() -> Script {
    let mut script = Script::new();
    script
        .round1("A", "B", "C")
        .reply(
            "challenge",
            "R",
            2,
            challenge(&["Value", "Effort"], "A", ""),
        )
        .reply("challenge", "V", 2, challenge(&["Risk", "Effort"], "B", ""))
        .reply("challenge", "E", 2, challenge(&["Risk", "Value"], "C", ""));
    script
}

impl Script {
    fn new() -> Self {
        Script(Vec::new())
    }

    fn reply(&mut self, phase: &str, seat: &str, round: u32, reply: Value) -> &mut Self {
        self.0.push(json!({"phase": phase, "seat": seat, "round": round, "reply": reply, "chunk_chars": 100000}));
        self
    }

    fn delayed(
        &mut self,
        phase: &str,
        seat: &str,
        round: u32,
        reply: Value,
        delay_ms: u64,
    ) -> &mut Self {
        self.0.push(json!({"phase": phase, "seat": seat, "round": round, "reply": reply, "delay_ms": delay_ms}));
        self
    }

    fn round1(&mut self, r: &str, v: &str, e: &str) -> &mut Self {
        self.reply("recommendation", "R", 1, recommend(r, "Risk first."))
            .reply("recommendation", "V", 1, recommend(v, "Users first."))
            .reply("recommendation", "E", 1, recommend(e, "Effort first."))
    }

    fn write(&self, path: &Path) {
        std::fs::write(
            path,
            json!({"model": "script", "replies": self.0}).to_string(),
        )
        .unwrap();
    }
}

fn settings(script: &Path, checkpoints: bool) -> DebateSettings {
    let mut settings = DebateSettings::from_config(
        &moot::protocol::builtin(),
        &Config::default(),
        ProviderSpec::scripted(script),
    )
    .unwrap();
    // Lessons are their own tests; a reflection step would change what these count.
    settings.lessons.enabled = false;
    settings.checkpoints = checkpoints;
    settings.write_decision = false;
    settings.protocol = "panel".into();
    let options = [
        "A: Local-first sync — full offline editing",
        "B: Online only",
        "C: Limited offline — read-only cache",
    ]
    .iter()
    .map(|o| parse_option(o).unwrap())
    .collect();
    let panel = PanelSettings {
        options,
        judges: Vec::new(),
        context: String::new(),
        context_cut: Vec::new(),
        max_rounds: 2,
        consensus_threshold: moot::protocol::panel::Threshold::TWO_THIRDS,
        timeout_per_judge: 120,
        require_stance_maintenance: true,
        require_change_documentation: true,
        anonymous: false,
        blind_first: false,
    };
    settings.protocol_settings = with_default_judges(panel);
    settings
}

/// The panel's settings with its default judges, as the protocol itself makes them.
fn with_default_judges(mut panel: PanelSettings) -> Value {
    let defaults: PanelSettings = serde_json::from_value(
        moot::protocol::builtin()
            .named("panel")
            .unwrap()
            .settings(&moot::protocol::SettingsInput {
                flags: &[(
                    "option".to_string(),
                    vec!["A: a".to_string(), "B: b".to_string()],
                )]
                .into_iter()
                .collect(),
                table: None,
                config_path: None,
                cwd: Path::new("."),
                max_rounds: None,
                question: None,
                perspectives: &[],
                outside: false,
                resolve_provider: &|_, _| Ok(Value::Null),
            })
            .unwrap(),
    )
    .unwrap();
    panel.judges = defaults.judges;
    serde_json::to_value(panel).unwrap()
}

async fn run(
    store: &Store,
    script: &Script,
    checkpoints: bool,
    controls: Vec<Control>,
) -> (Finish, Vec<Event>, PanelResult) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("script.json");
    script.write(&path);
    let settings = settings(&path, checkpoints);
    let (finish, events) = answered(controls, ANSWERER, |wiring| {
        session::start(
            moot::launch::host(),
            store.clone(),
            QUESTION,
            settings,
            wiring,
            std::future::pending(),
        )
    })
    .await;
    let result = result(store, &finish.id);
    (finish, events, result)
}

fn result(store: &Store, id: &str) -> PanelResult {
    let stored = store.synthesis(id).unwrap().expect("a stored result");
    assert_eq!(stored.section.as_deref(), Some("debate_result"));
    serde_json::from_value(stored.data).unwrap()
}

/// A panel started on the script at `path`, until `interrupt` (pending: never).
async fn start_on(
    store: &Store,
    path: &Path,
    interrupt: impl std::future::Future<Output = ()>,
) -> Finish {
    answered(vec![], ANSWERER, |wiring| {
        session::start(
            moot::launch::host(),
            store.clone(),
            QUESTION,
            settings(path, false),
            wiring,
            interrupt,
        )
    })
    .await
    .0
}

/// The debate `id` resumed as it was stored, with its events.
async fn resume(store: &Store, id: &str) -> (Finish, Vec<Event>) {
    answered(vec![], ANSWERER, |wiring| {
        session::resume(
            moot::launch::host(),
            store.clone(),
            id,
            ResumeChanges::default(),
            wiring,
            std::future::pending(),
        )
    })
    .await
}

fn phases(store: &Store, id: &str) -> Vec<(u32, Phase, String)> {
    store
        .turns(id)
        .unwrap()
        .into_iter()
        .map(|t| (t.round, t.phase, t.seat))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn consensus_in_round_one_skips_round_two() {
    let store = Store::in_memory().unwrap();
    let mut script = Script::new();
    script.round1("A", "A", "C");
    let (finish, events, result) = run(&store, &script, false, vec![]).await;
    assert_eq!(finish.status, DebateStatus::Completed);
    assert!(result.consensus);
    assert_eq!(result.recommended_option.as_deref(), Some("A"));
    assert_eq!(result.confidence, "HIGH");
    assert_eq!(
        result.perspectives.keys().collect::<Vec<_>>(),
        ["effort", "risk", "value"]
    );
    assert!(
        result.perspectives["risk"].starts_with("Option A - "),
        "{:?}",
        result.perspectives
    );
    assert!(result.change_log.is_empty());
    assert!(
        phases(&store, &finish.id)
            .iter()
            .all(|(round, phase, _)| *round == 1 && *phase == Phase::Recommendation)
    );
    let headline = events.iter().find_map(|e| match e {
        Event::Standings { headline, .. } => Some(headline.clone()),
        _ => None,
    });
    assert_eq!(
        headline.as_deref(),
        Some("round 1: consensus on A (2 of 3 ≥ 2/3) — A 2 · B 0 · C 1")
    );
    let record = store.synthesis(&finish.id).unwrap().unwrap().markdown;
    assert!(
        record.contains("**Outcome:** RECOMMENDED — option A: Local-first sync"),
        "{record}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_change_in_round_two_reaches_consensus_and_is_logged() {
    let store = Store::in_memory().unwrap();
    let mut script = Script::new();
    script
        .round1("A", "B", "C")
        .reply(
            "challenge",
            "R",
            2,
            challenge(&["Value", "Effort"], "A", ""),
        )
        // A change without a reason gets one repair request naming the rule.
        .reply("challenge", "V", 2, challenge(&["Risk", "Effort"], "A", ""))
        .reply(
            "challenge",
            "V",
            2,
            challenge(
                &["Risk", "Effort"],
                "A",
                "Convinced by the effort judge's ROI analysis",
            ),
        )
        .reply("challenge", "E", 2, challenge(&["Risk", "Value"], "C", ""));
    let (finish, events, result) = run(&store, &script, false, vec![]).await;
    assert!(result.consensus, "{result:?}");
    assert_eq!(result.recommended_option.as_deref(), Some("A"));
    assert_eq!(result.change_log.len(), 1);
    let change = &result.change_log[0];
    assert_eq!(
        (
            change.judge.as_str(),
            change.round,
            change.from.as_str(),
            change.to.as_str()
        ),
        ("value", 2, "B", "A")
    );
    assert_eq!(
        change.reason,
        "Convinced by the effort judge's ROI analysis"
    );
    assert!(
        result.perspectives["value"].ends_with("(changed from B)"),
        "{:?}",
        result.perspectives
    );
    assert!(events.iter().any(|e| matches!(e, Event::Retry { seat, reason, .. } if seat == "V" && reason.contains("say exactly what convinced you"))));
    let yaml = moot::report::to_yaml(&moot::report::document(&store, &finish.id).unwrap()).unwrap();
    assert!(
        yaml.starts_with("debate_result:\n  question_id: "),
        "{yaml}"
    );
    assert!(yaml.contains("  change_log:\n    - judge: \"value\"\n      round: 2\n      from: \"B\"\n      to: \"A\"\n"), "{yaml}");
}

#[tokio::test(start_paused = true)]
async fn three_different_options_are_contested_and_the_person_chooses() {
    let store = Store::in_memory().unwrap();
    let script = contested();
    // A letter that is not an option is refused; the next answer counts.
    let (finish, events, result) = run(
        &store,
        &script,
        true,
        vec![Control::Choose("Z".into()), Control::Choose("B".into())],
    )
    .await;
    assert_eq!(finish.status, DebateStatus::Completed);
    assert!(!result.consensus);
    assert_eq!(result.outcome.as_deref(), Some("CONTESTED"));
    // Chosen by the person: low, as every face says (A3).
    assert_eq!(result.confidence, "LOW");
    assert_eq!(result.distribution["A"], ["risk"]);
    assert_eq!(result.distribution["B"], ["value"]);
    assert_eq!(result.distribution["C"], ["effort"]);
    assert!(
        result.perspectives["risk_favors"].starts_with("Option A - \""),
        "{:?}",
        result.perspectives
    );
    assert!(
        result
            .user_prompt
            .as_deref()
            .unwrap()
            .contains("[B] Online only")
    );
    let chosen = result.chosen.expect("a choice");
    assert_eq!(
        (chosen.option.as_str(), chosen.by.as_str()),
        ("B", "ana at the workbench")
    );
    assert!(events.iter().any(
        |e| matches!(e, Event::Notice { message } if message.contains("there is no option \"Z\""))
    ));
    // Chosen: the input it required is given (seed review 000/001 #14: `moot list` kept
    // "Requires input").
    assert_eq!(
        store.debate(&finish.id).unwrap().confidence,
        Some(moot::debate::Confidence::Low)
    );
}

#[tokio::test(start_paused = true)]
async fn a_contested_result_left_open_is_decided_later() {
    let store = Store::in_memory().unwrap();
    let script = contested();
    let (finish, _, open) = run(&store, &script, true, vec![Control::Reject]).await;
    assert!(open.chosen.is_none());
    assert!(
        store
            .synthesis(&finish.id)
            .unwrap()
            .unwrap()
            .markdown
            .contains("**Chosen:** not yet")
    );
    let by = "bo on the command line";
    let refused = session::decide(
        &moot::protocol::builtin(),
        &store,
        &finish.id,
        "Q",
        by,
        false,
    )
    .err()
    .unwrap();
    assert!(
        refused.to_string().contains("there is no option \"Q\""),
        "{refused}"
    );
    let markdown = |decided: session::Decided| match decided {
        session::Decided::Settled { markdown, .. } => markdown,
        session::Decided::Answered { .. } | session::Decided::Sent { .. } => {
            panic!("a finished debate is settled")
        }
    };
    let decided = markdown(
        session::decide(
            &moot::protocol::builtin(),
            &store,
            &finish.id,
            "c",
            by,
            false,
        )
        .unwrap(),
    );
    assert!(
        decided.contains("**Chosen:** option C: Limited offline by bo on the command line"),
        "{decided}"
    );
    assert_eq!(result(&store, &finish.id).chosen.unwrap().option, "C");
    let stored = store.synthesis(&finish.id).unwrap().unwrap();
    assert_eq!(
        stored.confidence,
        moot::debate::Confidence::Low,
        "the input was given"
    );

    // Seed review 000/001 #7: deciding again needs --force, and every decision stays.
    let again = session::decide(
        &moot::protocol::builtin(),
        &store,
        &finish.id,
        "B",
        by,
        false,
    )
    .err()
    .unwrap();
    assert!(
        again
            .to_string()
            .contains("decided already (option C by bo on the command line)")
            && again.to_string().contains("--force"),
        "{again}"
    );
    markdown(
        session::decide(
            &moot::protocol::builtin(),
            &store,
            &finish.id,
            "B",
            by,
            true,
        )
        .unwrap(),
    );
    assert_eq!(result(&store, &finish.id).chosen.unwrap().option, "B");
    let decisions: Vec<_> = store
        .audit(&finish.id)
        .unwrap()
        .into_iter()
        .filter(|entry| entry.place.phase == "decide")
        .map(|entry| {
            let body = entry.body.unwrap();
            (body["decided"].clone(), body["replaces"].clone())
        })
        .collect();
    assert_eq!(
        decisions,
        vec![(json!("C"), Value::Null), (json!("B"), json!("C"))]
    );
    let announced = store
        .events(&finish.id)
        .unwrap()
        .into_iter()
        .filter(|e| {
            matches!(
                e,
                Event::CheckpointAnswered {
                    guidance: Some(_),
                    kind: moot::debate::AskKind::Choice,
                    ..
                }
            )
        })
        .count();
    assert_eq!(announced, 2, "each decision is in the event log");
    // The choice is filed where the panel asks it, so the journal alone reproduces it.
    let answer = store.checkpoints(&finish.id).unwrap();
    assert_eq!((answer.len(), answer[0].round), (1, 2));
    let verification = moot::audit::verify(&moot::protocol::builtin(), &store, &finish.id)
        .await
        .unwrap();
    assert!(verification.passed(), "{}", verification.to_text());
}

/// Seed review 000/001 #8: a debate paused at its choice is decided with `moot decide`: the
/// answer is journaled where the panel waits, and a resume finishes it with no new request.
#[tokio::test(start_paused = true)]
async fn a_debate_paused_at_its_choice_is_decided_and_finished_by_a_resume() {
    let store = Store::in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("script.json");
    contested().write(&path);
    let settings = settings(&path, true);
    let answers = vec![Control::Continue];
    let (finish, _) = answered(answers, ANSWERER, |wiring| {
        session::start(
            moot::launch::host(),
            store.clone(),
            QUESTION,
            settings,
            wiring,
            std::future::pending(),
        )
    })
    .await;
    assert_eq!(finish.status, DebateStatus::Paused);
    let wrong = session::decide(
        &moot::protocol::builtin(),
        &store,
        &finish.id,
        "Z",
        "bo",
        false,
    )
    .err()
    .unwrap();
    assert!(
        wrong.to_string().contains("choose one of A, B, C"),
        "{wrong}"
    );
    match session::decide(
        &moot::protocol::builtin(),
        &store,
        &finish.id,
        "b",
        "bo",
        false,
    )
    .unwrap()
    {
        session::Decided::Answered { round } => assert_eq!(round, 2),
        other => panic!("a paused debate has no result to settle: {other:?}"),
    }
    let turns = store.turns(&finish.id).unwrap().len();
    let (finish, _) = resume(&store, &finish.id).await;
    assert_eq!(finish.status, DebateStatus::Completed, "{:?}", finish.error);
    assert_eq!(
        store.turns(&finish.id).unwrap().len(),
        turns,
        "nothing asked again"
    );
    let chosen = result(&store, &finish.id).chosen.unwrap();
    assert_eq!((chosen.option.as_str(), chosen.by.as_str()), ("B", "bo"));
}

#[tokio::test(start_paused = true)]
async fn a_judge_that_times_out_is_left_out_and_the_result_says_so() {
    let store = Store::in_memory().unwrap();
    let mut script = Script::new();
    script
        .reply("recommendation", "R", 1, recommend("A", "Risk first."))
        .reply("recommendation", "V", 1, recommend("A", "Users first."))
        .delayed(
            "recommendation",
            "E",
            1,
            recommend("C", "Too late."),
            200_000,
        );
    let (_, _, result) = run(&store, &script, false, vec![]).await;
    assert!(result.consensus, "2 of the 2 judges left agree: {result:?}");
    assert!(
        result
            .notes
            .iter()
            .any(|n| n == "Effort judge timed out — only 2 perspectives available"),
        "{:?}",
        result.notes
    );
    assert!(!result.perspectives.contains_key("effort"));
    assert_eq!(
        result.notes.iter().filter(|n| n.contains("Effort")).count(),
        1,
        "the judge left out is named once: {:?}",
        result.notes
    );
}

/// Seed review 000/001 #2: with fewer than two judges left the panel has nobody to weigh
/// against anybody, so it fails (resumably) instead of completing as CONTESTED with one or no
/// voter; a resume asks the judges that timed out again, and the panel completes.
#[tokio::test(start_paused = true)]
async fn a_panel_left_with_one_judge_fails_and_a_resume_asks_the_others_again() {
    let store = Store::in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("script.json");
    let mut script = Script::new();
    script
        .reply("recommendation", "R", 1, recommend("A", "Risk first."))
        .delayed("recommendation", "V", 1, recommend("A", "Late."), 200_000)
        .delayed("recommendation", "E", 1, recommend("C", "Late."), 200_000);
    script.write(&path);
    let finish = start_on(&store, &path, std::future::pending()).await;
    assert_eq!(finish.status, DebateStatus::Failed);
    let debate = store.debate(&finish.id).unwrap();
    let error = debate.error.unwrap_or_default();
    assert!(
        error.contains(
            "only 1 of 3 judges answered in round 1 (Value judge timed out, Effort judge timed out)"
        ) && error.contains("moot resume"),
        "{error}"
    );
    assert!(
        store.synthesis(&finish.id).unwrap().is_none(),
        "no CONTESTED result"
    );

    let mut again = Script::new();
    again
        .reply("recommendation", "V", 1, recommend("A", "Users first."))
        .reply("recommendation", "E", 1, recommend("A", "Effort first."));
    again.write(&path);
    let (finish, _) = resume(&store, &finish.id).await;
    assert_eq!(finish.status, DebateStatus::Completed);
    let result = result(&store, &finish.id);
    assert!(result.consensus, "{result:?}");
    assert_eq!(result.voters, 3);
}

/// Seed review 000/001 #6: a judge must assess every option once; one that assessed C three
/// times gets a repair request naming what it missed, and its repaired reply is taken.
#[tokio::test(start_paused = true)]
async fn a_judge_must_assess_every_option_once() {
    let store = Store::in_memory().unwrap();
    let mut lopsided = recommend("A", "Risk first.");
    lopsided["assessments"] = json!([
        {"option": "C", "assessment": "cache"},
        {"option": "C", "assessment": "cache again"},
        {"option": "C", "assessment": "and again"}
    ]);
    let mut script = Script::new();
    script
        .reply("recommendation", "R", 1, lopsided)
        .round1("A", "A", "A");
    let (finish, events, result) = run(&store, &script, false, vec![]).await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Retry { seat, reason, .. }
        if seat == "R" && reason.contains("missing: A, B; assessed more than once: C"))),
        "the repair names what is missing"
    );
    assert!(result.consensus, "{result:?}");
    let risk = store
        .turns(&finish.id)
        .unwrap()
        .into_iter()
        .find(|t| t.seat == "R")
        .unwrap();
    let assessed: Vec<String> = risk.data.unwrap()["assessments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["option"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(assessed, ["A", "B", "C"]);
}

#[tokio::test(start_paused = true)]
async fn an_unreadable_judge_counts_as_no_recommendation_and_a_tie_is_contested() {
    let store = Store::in_memory().unwrap();
    let garbage = json!("I refuse to answer in JSON.");
    let mut script = Script::new();
    script
        .reply("recommendation", "R", 1, recommend("A", "Risk first."))
        .reply("recommendation", "V", 1, recommend("B", "Users first."))
        .reply("recommendation", "E", 1, garbage.clone())
        .reply("recommendation", "E", 1, garbage.clone())
        .reply(
            "challenge",
            "R",
            2,
            challenge(&["Value", "Effort"], "A", ""),
        )
        .reply("challenge", "V", 2, challenge(&["Risk", "Effort"], "B", ""))
        .reply("challenge", "E", 2, garbage.clone())
        .reply("challenge", "E", 2, garbage);
    let (finish, events, result) = run(&store, &script, false, vec![]).await;
    let turns = store.turns(&finish.id).unwrap();
    assert!(
        turns
            .iter()
            .filter(|t| t.seat == "E")
            .all(|t| t.status == TurnStatus::Fallback)
    );
    // One each for A and B: a tie is no consensus.
    assert!(!result.consensus);
    assert_eq!(result.distribution["A"], ["risk"]);
    assert_eq!(result.distribution["B"], ["value"]);
    assert!(result.distribution["C"].is_empty());
    assert!(
        result
            .notes
            .iter()
            .any(|n| n.contains("Effort judge's round-1 reply could not be read")),
        "{:?}",
        result.notes
    );
    assert!(events.iter().any(|e| matches!(e, Event::Standings { round: 2, headline, .. } if headline.starts_with("round 2: no consensus (needs 2/3 of 2 valid)"))));
    // Every judge's case is in the result, the unreadable one's prose quoted as such.
    assert_eq!(
        result.perspectives["effort_favors"],
        "No readable recommendation - \"I refuse to answer in JSON.\""
    );
}

/// Seed review 000/001 #13: a judge whose round-2 reply cannot be read keeps its round-1
/// recommendation and case, so the contested result has no gap and "Judges disagreed" rests
/// on three readable recommendations, not one.
#[tokio::test(start_paused = true)]
async fn an_unreadable_round_two_reply_keeps_the_judges_earlier_recommendation() {
    let store = Store::in_memory().unwrap();
    let garbage = json!("I refuse to answer in JSON.");
    let mut script = Script::new();
    script
        .round1("A", "B", "C")
        .reply("challenge", "R", 2, garbage.clone())
        .reply("challenge", "R", 2, garbage.clone())
        .reply("challenge", "V", 2, challenge(&["Risk", "Effort"], "B", ""))
        .reply("challenge", "E", 2, garbage.clone())
        .reply("challenge", "E", 2, garbage);
    let (_, _, result) = run(&store, &script, false, vec![]).await;
    assert!(!result.consensus);
    assert_eq!(result.voters, 3);
    assert_eq!(result.distribution["A"], ["risk"]);
    assert_eq!(result.distribution["C"], ["effort"]);
    for judge in ["risk", "value", "effort"] {
        let case = &result.perspectives[&format!("{judge}_favors")];
        assert!(case.starts_with("Option "), "{judge}: {case}");
    }
    assert!(
        result.perspectives["risk_favors"].contains("Risk first."),
        "the round-1 case stands: {:?}",
        result.perspectives
    );
    assert!(
        result
            .notes
            .iter()
            .any(|n| n == "Risk judge's round-2 reply could not be read; its earlier recommendation (A) stands."),
        "{:?}",
        result.notes
    );
    let prompt = result.user_prompt.unwrap();
    assert!(prompt.starts_with("Judges disagreed"), "{prompt}");
    // A4: one option a line, so the record and the result view list them apart.
    assert!(
        prompt.contains("\n\n- [A] ") && prompt.contains("\n- [B] "),
        "{prompt}"
    );
}

/// With one readable recommendation there is nobody to disagree with: the prompt says so.
#[tokio::test(start_paused = true)]
async fn a_contested_prompt_with_one_readable_recommendation_does_not_say_disagreed() {
    let store = Store::in_memory().unwrap();
    let garbage = json!("I refuse to answer in JSON.");
    let mut script = Script::new();
    script.reply("recommendation", "R", 1, recommend("A", "Risk first."));
    for seat in ["V", "E"] {
        for round in [1, 2] {
            let phase = if round == 1 {
                "recommendation"
            } else {
                "challenge"
            };
            script.reply(phase, seat, round, garbage.clone()).reply(
                phase,
                seat,
                round,
                garbage.clone(),
            );
        }
    }
    script.reply(
        "challenge",
        "R",
        2,
        challenge(&["Value", "Effort"], "A", ""),
    );
    let (_, _, result) = run(&store, &script, false, vec![]).await;
    assert!(!result.consensus);
    assert_eq!(result.voters, 1);
    let prompt = result.user_prompt.unwrap();
    assert!(
        prompt.starts_with("Only one judge's recommendation could be read"),
        "{prompt}"
    );
    assert!(!prompt.contains("disagreed"), "{prompt}");
    assert_eq!(result.perspectives.len(), 3, "{:?}", result.perspectives);
}

#[tokio::test(start_paused = true)]
async fn a_panel_killed_in_round_two_resumes_where_it_stopped() {
    let store = Store::in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("script.json");
    let mut script = Script::new();
    script
        .round1("A", "B", "C")
        .reply(
            "challenge",
            "R",
            2,
            challenge(&["Value", "Effort"], "A", ""),
        )
        .reply(
            "challenge",
            "V",
            2,
            challenge(
                &["Risk", "Effort"],
                "A",
                "The risk judge showed sync bugs surface late",
            ),
        )
        .delayed(
            "challenge",
            "E",
            2,
            challenge(&["Risk", "Value"], "C", ""),
            100_000,
        );
    script.write(&path);
    let interrupt = tokio::time::sleep(std::time::Duration::from_secs(50));
    let finish = start_on(&store, &path, interrupt).await;
    assert_eq!(finish.status, DebateStatus::Paused);
    let before = store.turns(&finish.id).unwrap().len();
    assert_eq!(
        before,
        5,
        "round 1 and two round-2 turns: {:?}",
        phases(&store, &finish.id)
    );

    // Only Effort's round-2 turn is asked again.
    let mut again = Script::new();
    again.reply(
        "challenge",
        "E",
        2,
        challenge(
            &["Risk", "Value"],
            "A",
            "Two judges showed the cache is the cheaper risk",
        ),
    );
    again.write(&path);
    let (finish, events) = resume(&store, &finish.id).await;
    assert_eq!(finish.status, DebateStatus::Completed);
    let replayed = events
        .iter()
        .filter(|e| matches!(e, Event::TurnCompleted { replayed: true, .. }))
        .count();
    assert_eq!(replayed, 5);
    let result = result(&store, &finish.id);
    assert!(result.consensus);
    assert_eq!(result.change_log.len(), 2);
    // The log holds each turn once, so a replay shows what happened once.
    let logged = store.events(&finish.id).unwrap();
    let completed = logged
        .iter()
        .filter(|e| matches!(e, Event::TurnCompleted { .. }))
        .count();
    assert_eq!(completed, 6, "{logged:?}");
    let view = replay_view(&store, &finish.id);
    assert_eq!(view.turns.len(), 6);
    assert_eq!(view.presentation.outcome_title, "Result");
    assert!(
        view.standings
            .unwrap()
            .headline
            .starts_with("round 2: consensus on A")
    );
}

fn replay_view(store: &Store, id: &str) -> moot::tui::state::DebateView {
    let mut view = moot::tui::state::DebateView::new();
    for event in moot::replay::journal_events(&moot::protocol::builtin(), store, id).unwrap() {
        view.apply(&event);
    }
    view
}

/// Settings with no options given, so the moderator proposes them.
fn proposing(script: &Path, checkpoints: bool) -> DebateSettings {
    let mut settings = settings(script, checkpoints);
    let mut panel: PanelSettings = serde_json::from_value(settings.protocol_settings).unwrap();
    panel.options.clear();
    settings.protocol_settings = serde_json::to_value(panel).unwrap();
    settings
}

/// A script whose moderator proposes nothing usable, twice (the reply and its repair).
fn unusable_proposal() -> Script {
    let mut script = Script::new();
    script
        .reply("options", "moderator", 0, json!({"options": []}))
        .reply(
            "options",
            "moderator",
            0,
            json!({"options": [{"id": "A", "label": "Only one"}]}),
        );
    script
}

/// The moderator's usable proposal of the three options `recommend` assesses, at its
/// `attempt` (a proposal asked again after an unusable one is numbered after it).
fn usable_proposal(script: &mut Script, attempt: u32) -> &mut Script {
    script.reply(
        "options",
        "moderator",
        attempt,
        json!({"options": [
            {"id": "A", "label": "Local-first sync", "description": "full offline editing"},
            {"id": "B", "label": "Online only", "description": ""},
            {"id": "C", "label": "Limited offline", "description": "read-only cache"}
        ]}),
    )
}

/// `store`'s debate `id` resumed with `changes`, answering with `controls`.
async fn resume_with(
    store: &Store,
    id: &str,
    changes: ResumeChanges,
    controls: Vec<Control>,
) -> (Finish, Vec<Event>) {
    answered(controls, ANSWERER, |wiring| {
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

/// Starts a proposing panel on `script` with `controls` queued.
async fn start_proposing(
    store: &Store,
    path: &Path,
    script: &Script,
    checkpoints: bool,
    controls: Vec<Control>,
) -> (Finish, Vec<Event>) {
    script.write(path);
    let settings = proposing(path, checkpoints);
    answered(controls, ANSWERER, |wiring| {
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

/// Seed review 000/001 #1: an unusable proposal fails the debate with the way out, and a
/// plain resume asks the moderator again instead of replaying the dead end.
#[tokio::test(start_paused = true)]
async fn a_resume_after_an_unusable_proposal_asks_the_moderator_again() {
    let store = Store::in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("script.json");
    let (finish, _) = start_proposing(&store, &path, &unusable_proposal(), false, vec![]).await;
    assert_eq!(finish.status, DebateStatus::Failed);
    let error = store.debate(&finish.id).unwrap().error.unwrap_or_default();
    assert!(
        error.contains(&format!("moot resume {}", finish.id)) && error.contains("--option"),
        "{error}"
    );

    let mut again = Script::new();
    usable_proposal(&mut again, 1).round1("A", "A", "B");
    again.write(&path);
    let (finish, events) = resume(&store, &finish.id).await;
    assert_eq!(finish.status, DebateStatus::Completed, "{:?}", finish.error);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Notice { message } if message.contains("asking again")))
    );
    let proposals = phases(&store, &finish.id)
        .into_iter()
        .filter(|(_, phase, _)| *phase == Phase::Options)
        .count();
    assert_eq!(
        proposals, 2,
        "the dead end stays in the journal beside the new proposal"
    );
    let result = result(&store, &finish.id);
    assert_eq!(result.recommended_option.as_deref(), Some("A"));
    assert_eq!(result.options.len(), 3);

    // Re-run from the journal alone, the newer proposal is served and the result agrees.
    let verification = moot::audit::verify(&moot::protocol::builtin(), &store, &finish.id)
        .await
        .unwrap();
    assert!(verification.passed(), "{}", verification.to_text());
}

/// Seed review 000/001 #1: `moot resume --option` gives the options the moderator could not,
/// and the panel goes on with them without asking the moderator again.
#[tokio::test(start_paused = true)]
async fn a_resume_with_options_rescues_an_unusable_proposal() {
    let store = Store::in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("script.json");
    let (finish, _) = start_proposing(&store, &path, &unusable_proposal(), false, vec![]).await;
    assert_eq!(finish.status, DebateStatus::Failed);

    let mut again = Script::new();
    again.round1("C", "C", "B");
    again.write(&path);
    let changes = ResumeChanges {
        options: vec![
            "A: Local-first sync — full offline editing".into(),
            "B: Online only".into(),
            "C: Limited offline — read-only cache".into(),
        ],
        ..ResumeChanges::default()
    };
    let (finish, _) = resume_with(&store, &finish.id, changes, vec![]).await;
    assert_eq!(finish.status, DebateStatus::Completed, "{:?}", finish.error);
    let proposals = phases(&store, &finish.id)
        .into_iter()
        .filter(|(_, phase, _)| *phase == Phase::Options)
        .count();
    assert_eq!(proposals, 1, "the moderator is not asked again");
    let result = result(&store, &finish.id);
    assert_eq!(result.recommended_option.as_deref(), Some("C"));
    assert_eq!(result.options[2].label, "Limited offline");
    let verification = moot::audit::verify(&moot::protocol::builtin(), &store, &finish.id)
        .await
        .unwrap();
    assert!(verification.passed(), "{}", verification.to_text());

    // Settled options cannot change: the judges of this one have spoken.
    let refused = moot::session::check_resume(
        &moot::protocol::builtin(),
        &store,
        &finish.id,
        &ResumeChanges {
            options: vec!["A: x".into(), "B: y".into()],
            ..ResumeChanges::default()
        },
    )
    .unwrap_err();
    assert!(
        refused.to_string().contains("cannot change on resume"),
        "{refused}"
    );
}

/// Seed review 000/001 #1: at the options step with nothing usable proposed, the question
/// offers no options (the workbench then asks for them typed), typed options that cannot be
/// used are refused with a notice and the question stays open, and usable ones are judged.
#[tokio::test(start_paused = true)]
async fn typed_options_rescue_an_unusable_proposal_at_the_checkpoint() {
    let store = Store::in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("script.json");
    let mut script = unusable_proposal();
    script.round1("B", "B", "B");
    let controls = vec![
        Control::Guide("A: only one".into()),
        Control::Guide("A: Local-first sync\nB: Online only\nC: Limited offline".into()),
        // The round-1 checkpoint and the rest.
        Control::Continue,
        Control::Continue,
        Control::Continue,
    ];
    let (finish, events) = start_proposing(&store, &path, &script, true, controls).await;
    assert_eq!(finish.status, DebateStatus::Completed, "{:?}", finish.error);
    let asked = events
        .iter()
        .find_map(|e| match e {
            Event::Checkpoint {
                kind: moot::debate::AskKind::Options,
                detail,
                choices,
                ..
            } => Some((detail.clone().unwrap_or_default(), choices.clone())),
            _ => None,
        })
        .expect("the options question");
    assert!(asked.0.contains("no usable options"), "{}", asked.0);
    assert!(asked.1.is_empty());
    assert!(events.iter().any(|e| matches!(
        e,
        Event::Notice { message } if message.contains("those options cannot be used (at least two options are needed)")
    )));
    let result = result(&store, &finish.id);
    assert_eq!(result.recommended_option.as_deref(), Some("B"));
    assert_eq!(result.options.len(), 3);
}

/// An answer journaled by an older moot (`continue` on nothing usable) is not replayed into
/// the same failure: the resume asks the moderator again and the person again.
#[tokio::test(start_paused = true)]
async fn a_continue_on_an_unusable_proposal_is_asked_again_on_resume() {
    let store = Store::in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("script.json");
    let (finish, _) = start_proposing(
        &store,
        &path,
        &unusable_proposal(),
        true,
        vec![Control::Continue],
    )
    .await;
    assert_eq!(finish.status, DebateStatus::Failed);

    let mut again = Script::new();
    usable_proposal(&mut again, 1).round1("A", "A", "A");
    again.write(&path);
    let changes = ResumeChanges::default();
    let answers = vec![Control::Continue, Control::Continue, Control::Continue];
    let (finish, _) = resume_with(&store, &finish.id, changes, answers).await;
    assert_eq!(finish.status, DebateStatus::Completed, "{:?}", finish.error);
    assert_eq!(
        result(&store, &finish.id).recommended_option.as_deref(),
        Some("A")
    );
}

/// A result an older moot wrote is verified against today's reading of its journal: where the
/// new result version reads differently, `audit --verify` names it without calling it a
/// divergence; a difference under the same version is one.
#[tokio::test(start_paused = true)]
async fn verify_names_a_difference_of_result_version_without_failing_on_it() {
    let store = Store::in_memory().unwrap();
    let (finish, _, _) = run(&store, &contested(), false, vec![]).await;
    let mut stored = store.synthesis(&finish.id).unwrap().unwrap();
    stored.markdown = stored
        .markdown
        .replace("**Outcome:**", "**Outcome (older wording):**");
    stored.data["result_version"] = json!(1);
    store.save_synthesis(&finish.id, &stored).unwrap();
    let text = moot::audit::verify(&moot::protocol::builtin(), &store, &finish.id)
        .await
        .unwrap()
        .to_text();
    assert!(
        text.contains("ok   outcome   recorded by result version 1; this moot writes version 4"),
        "{text}"
    );
    stored.data["result_version"] = json!(4);
    store.save_synthesis(&finish.id, &stored).unwrap();
    let text = moot::audit::verify(&moot::protocol::builtin(), &store, &finish.id)
        .await
        .unwrap()
        .to_text();
    assert!(text.contains("FAIL outcome   the record differs"), "{text}");
}

/// A5: a judge with no readable reply keeps its line in a consensus result too, and its
/// round-2 prompt says its reply could not be read instead of "option none".
#[tokio::test(start_paused = true)]
async fn a_judge_with_no_readable_reply_keeps_its_line_in_a_consensus_result() {
    let store = Store::in_memory().unwrap();
    let garbage = json!("I refuse to answer in JSON.");
    let mut script = Script::new();
    script
        .reply("recommendation", "R", 1, recommend("A", "Risk first."))
        .reply("recommendation", "V", 1, recommend("B", "Users first."))
        .reply("recommendation", "E", 1, garbage.clone())
        .reply("recommendation", "E", 1, garbage.clone())
        .reply(
            "challenge",
            "R",
            2,
            challenge(&["Value", "Effort"], "A", ""),
        )
        .reply(
            "challenge",
            "V",
            2,
            challenge(
                &["Risk", "Effort"],
                "A",
                "Risk's case on outages convinced me.",
            ),
        )
        .reply("challenge", "E", 2, garbage.clone())
        .reply("challenge", "E", 2, garbage);
    let (finish, _, result) = run(&store, &script, false, vec![]).await;
    assert!(result.consensus, "{result:?}");
    assert_eq!(
        result.perspectives["effort"],
        "No readable recommendation - \"I refuse to answer in JSON.\""
    );
    let asked: Vec<String> = store
        .audit(&finish.id)
        .unwrap()
        .into_iter()
        .filter(|e| e.place.seat == "E" && e.place.round == 2 && e.body.is_some())
        .map(|e| e.body.unwrap().to_string())
        .collect();
    assert!(
        asked
            .iter()
            .any(|b| b.contains("Your previous reply could not be read")),
        "{asked:?}"
    );
    assert!(
        !asked.iter().any(|b| b.contains("option none")),
        "{asked:?}"
    );
}
