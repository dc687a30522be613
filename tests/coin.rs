//! The proof of the protocol seam: "coin", a toy protocol outside moot's `REGISTRY` (two seats
//! call heads or tails in one round; the majority is the result), runs through the engine, the
//! journal, a resume, a replay and `audit --verify`, given to them as a `Registry` value.

use moot::config::Config;
use moot::debate::{Confidence, DebateStatus, Event, Phase, Presentation, Seat, TurnKey};
use moot::engine::Context;
use moot::protocol::{
    Common, Ending, Outcome, Registry, Run, SettingsError, SettingsInput, TypedProtocol, kit,
};
use moot::providers::ProviderSpec;
use moot::session::{self, DebateSettings, Host, ResumeChanges};
use moot::store::Store;
use serde::{Deserialize, Serialize};
use serde_json::json;
mod support;

use support::session::answered;

// ——— The protocol: everything a new protocol must write.

struct Coin;

#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct CoinResult {
    calls: Vec<(String, String)>,
    winner: String,
}

impl TypedProtocol for Coin {
    type Settings = ();
    type Result = CoinResult;

    fn name(&self) -> &'static str {
        "coin"
    }

    fn description(&self) -> &'static str {
        "two seats call a coin; the majority is the result"
    }

    fn settings(&self, _: &SettingsInput<'_>) -> Result<(), SettingsError> {
        Ok(())
    }

    /// The majority call wins; the score is the share of callers who made it.
    fn resolution(&self, result: &CoinResult) -> moot::debate::Resolution {
        let agreeing = result
            .calls
            .iter()
            .filter(|(_, call)| *call == result.winner)
            .count();
        moot::debate::Resolution {
            winner: Some(result.winner.clone()),
            method: "majority of calls".into(),
            final_consensus_score: agreeing as f64 / result.calls.len().max(1) as f64,
        }
    }

    fn presentation(&self) -> Presentation {
        Presentation {
            seat_role: "caller".into(),
            seats_from_catalog: false,
            ..Presentation::default()
        }
    }

    fn run<'a>(&'a self, ctx: &'a Context, common: &'a Common, (): ()) -> Run<'a, CoinResult> {
        Box::pin(async move {
            let seats = [caller("A"), caller("B")];
            kit::seat_and_start(ctx, self, common.question.trim(), &seats, 1).await?;
            ctx.emit(Event::RoundStarted {
                round: 1,
                limit: None,
            });
            let mut calls = Vec::new();
            for seat in &seats {
                let key = TurnKey::new(1, Phase::Argument, seat.id.clone());
                let deadline = tokio::time::Instant::now() + common.round_timeout;
                let speech = kit::prose_speech(
                    key,
                    "moot_coin_call",
                    "Call it.".into(),
                    common.question.clone(),
                    Some(10),
                    deadline,
                );
                let turn = ctx.speak(speech).await?;
                calls.push((seat.id.clone(), turn.content.trim().to_lowercase()));
            }
            let heads = calls.iter().filter(|(_, call)| call == "heads").count();
            let winner = if heads * 2 > calls.len() {
                "heads"
            } else {
                "tails"
            }
            .to_string();
            let result = CoinResult { calls, winner };
            // The result as its own type: the engine's blanket impl stores it as JSON.
            Ok(Ending::Concluded(Box::new(Outcome {
                markdown: format!("# Coin\n\nThe coin says {}.\n", result.winner),
                confidence: Confidence::High,
                data: result,
                section: Some("coin_result".into()),
                date: moot::debate::today(),
            })))
        })
    }
}

// ——— The test.

static COIN: Coin = Coin;

fn caller(id: &str) -> Seat {
    Seat {
        id: id.into(),
        perspective: format!("Caller {id}"),
        priorities: Vec::new(),
        trade_offs: String::new(),
        stance: String::new(),
        provider: None,
        model: None,
    }
}

/// The settings of a coin debate, found in `registry` by the name the config gives, as any
/// protocol's are.
fn settings(registry: &Registry, script: &std::path::Path) -> DebateSettings {
    let config = Config {
        protocol: Some("coin".into()),
        ..Config::default()
    };
    let mut settings =
        DebateSettings::from_config(registry, &config, ProviderSpec::scripted(script)).unwrap();
    assert_eq!(settings.protocol, "coin");
    settings.lessons.enabled = false;
    settings.checkpoints = false;
    settings.write_decision = false;
    settings
}

fn call(seat: &str, said: &str, delay_ms: u64) -> serde_json::Value {
    json!({"phase": "argument", "seat": seat, "round": 1, "reply": said, "delay_ms": delay_ms})
}

#[tokio::test(start_paused = true)]
async fn a_protocol_outside_the_registry_runs_resumes_replays_and_verifies() {
    let registry = moot::protocol::builtin().with(&COIN);
    let store = Store::in_memory().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    // B takes longer than the run is given: the debate is interrupted after A's call.
    let replies = json!([call("A", "heads", 0), call("B", "heads", 100_000)]);
    std::fs::write(&script, json!({"replies": replies}).to_string()).unwrap();
    let interrupt = tokio::time::sleep(std::time::Duration::from_secs(50));
    let (first, _) = answered(vec![], "ana", |wiring| {
        session::start(
            Host::new(registry.clone()),
            store.clone(),
            "Heads or tails?",
            settings(&registry, &script),
            wiring,
            interrupt,
        )
    })
    .await;
    assert_eq!(first.status, DebateStatus::Paused);
    assert_eq!(store.turns(&first.id).unwrap().len(), 1);

    // Without the registry the journal's protocol is unknown, and says so.
    let unknown = session::resume(
        moot::launch::host(),
        store.clone(),
        &first.id,
        ResumeChanges::default(),
        answered_wiring(),
        std::future::pending(),
    )
    .await
    .unwrap_err();
    assert!(unknown.to_string().contains("\"coin\""), "{unknown}");

    // Resumed: A's call comes from the journal, only B is asked.
    let replies = json!([call("B", "tails", 0)]);
    std::fs::write(&script, json!({"replies": replies}).to_string()).unwrap();
    let (done, events) = answered(vec![], "ana", |wiring| {
        session::resume(
            Host::new(registry.clone()),
            store.clone(),
            &first.id,
            ResumeChanges::default(),
            wiring,
            std::future::pending(),
        )
    })
    .await;
    assert_eq!(done.status, DebateStatus::Completed);
    let replayed = events
        .iter()
        .filter(|e| matches!(e, Event::TurnCompleted { replayed: true, .. }))
        .count();
    assert_eq!(replayed, 1);
    let stored = store.synthesis(&done.id).unwrap().unwrap();
    let result: CoinResult = serde_json::from_value(stored.data).unwrap();
    assert_eq!(
        result,
        CoinResult {
            calls: vec![("A".into(), "heads".into()), ("B".into(), "tails".into())],
            winner: "tails".into(),
        }
    );

    // Replayed offline: both calls, under the protocol's own looks.
    let replay = moot::replay::journal_events(&registry, &store, &done.id).unwrap();
    let calls = replay
        .iter()
        .filter(|e| matches!(e, Event::TurnCompleted { .. }))
        .count();
    assert_eq!(calls, 2);
    assert!(replay.iter().any(|e| matches!(
        e,
        Event::DebateStarted { presentation, .. } if presentation.seat_role == "caller"
    )));

    // Verified: re-run from the journal alone, it ends as recorded.
    let verification = moot::audit::verify(&registry, &store, &done.id)
        .await
        .unwrap();
    assert!(verification.passed(), "{}", verification.to_text());
}

/// A wiring nobody listens to, for a call that is refused before anything runs.
fn answered_wiring() -> session::Wiring {
    let (events, _) = tokio::sync::mpsc::unbounded_channel();
    let (_, controls) = tokio::sync::mpsc::unbounded_channel();
    session::Wiring {
        events,
        controls,
        answerer: "ana".into(),
    }
}
