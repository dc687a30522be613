//! What the journal's hash chain costs: journaling one turn with the chain against the same
//! write without it (target: at most 1.1×), and checking the whole chain of a 4-round debate
//! (target: at most 100 ms). File-backed journals, as a debate writes them.
//! `cargo bench --bench chain`.

use moot::debate::{Debate, DebateStatus, Move, Phase, Turn, TurnKey, now_rfc3339};
use moot::store::{AuditKind, AuditPlace, Store};

fn main() {
    divan::main();
}

fn debate(store: &Store, id: &str) {
    store
        .create_debate(&Debate {
            id: id.into(),
            question: "Should we use Redis or PostgreSQL for caching?".into(),
            protocol: "moderated".into(),
            status: DebateStatus::Running,
            config: serde_json::json!({"max_rounds": 4, "provider": {"kind": "openai"}}),
            seats: Vec::new(),
            created_at: now_rfc3339(),
            updated_at: now_rfc3339(),
            finished_at: None,
            confidence: None,
            error: None,
            stage: None,
        })
        .unwrap();
}

/// A debater's turn of realistic size: ~1.2 KB of prose and three moves.
fn turn(round: u32, phase: Phase, seat: &str) -> Turn {
    let mut turn = Turn::pending(TurnKey::new(round, phase, seat), "openai", "gpt-4o-mini");
    turn.content = "Redis keeps hot keys in memory with predictable sub-millisecond reads, while \
        PostgreSQL would need an unlogged table and careful vacuuming to come close. "
        .repeat(8);
    turn.moves = (1..=3)
        .map(|i| Move {
            id: format!("{seat}{round}.{i}"),
            act: moot::debate::Act::Claim,
            text: format!("Claim {i}: eviction policy matters more than raw latency."),
            premises: Vec::new(),
            answers: Vec::new(),
            relation: None,
        })
        .collect();
    turn.confidence = Some(0.7);
    turn.tokens_in = 1400;
    turn.tokens_out = 320;
    turn.latency_ms = 2100;
    turn
}

/// Journaling one turn, chained as debates write it or not: the ratio is the chain's cost.
#[divan::bench(args = [false, true], sample_count = 2000)]
fn journal_a_turn(bencher: divan::Bencher, chained: bool) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("moot.db")).unwrap();
    debate(&store, "DEB-bench");
    let mut round = 0u32;
    bencher.bench_local(|| {
        round += 1;
        let turn = turn(round, Phase::Argument, "A");
        if chained {
            store.record_turn("DEB-bench", &turn).unwrap();
        } else {
            store
                .record_turn_unchained_for_benchmark("DEB-bench", &turn)
                .unwrap();
        }
    });
}

/// A 4-round, 3-seat debate as the journal holds it: its turns, two events per turn and one
/// per round, and a request and response in the audit trail per turn.
fn four_rounds(store: &Store, id: &str) {
    debate(store, id);
    for round in 1..=4 {
        let mut speakers: Vec<(Phase, &str)> = vec![(Phase::Pose, "moderator")];
        for seat in ["A", "B", "C"] {
            speakers.push((Phase::Argument, seat));
            speakers.push((Phase::Rebuttal, seat));
        }
        speakers.push((Phase::Evaluation, "moderator"));
        for (phase, seat) in speakers {
            let turn = turn(round, phase, seat);
            let place = AuditPlace {
                round,
                phase: phase.to_string(),
                seat: seat.into(),
                attempt: 1,
                provider: "openai".into(),
                model: "gpt-4o-mini".into(),
            };
            let body = serde_json::json!({"system": "You argue.", "messages": [turn.content]});
            store
                .record_audit(id, AuditKind::Request, &place, &body, true)
                .unwrap();
            store
                .record_audit(id, AuditKind::Response, &place, &body, true)
                .unwrap();
            store
                .record_event(
                    id,
                    &moot::debate::Event::TurnStarted {
                        round,
                        phase,
                        seat: seat.into(),
                    },
                )
                .unwrap();
            store.record_turn(id, &turn).unwrap();
            store
                .record_event(id, &turn.completed_event(false))
                .unwrap();
        }
        store
            .record_event(
                id,
                &moot::debate::Event::Notice {
                    message: format!("round {round} is over"),
                },
            )
            .unwrap();
    }
}

/// Checking the chain of a finished 4-round debate against every row it covers.
#[divan::bench]
fn check_a_four_round_chain(bencher: divan::Bencher) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("moot.db")).unwrap();
    four_rounds(&store, "DEB-four");
    let check = store.check_chain("DEB-four").unwrap();
    assert!(check.holds() && check.entries > 150, "{check:?}");
    bencher.bench_local(|| store.check_chain("DEB-four").unwrap());
}
