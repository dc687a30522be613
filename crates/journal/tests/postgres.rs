//! The journal on a real PostgreSQL server the test starts itself (`initdb` and `pg_ctl` into
//! a temporary directory, a Unix socket), beside the same calls on SQLite.

#[path = "../../../tests/support/postgres.rs"]
mod server;

mod common;

use common::debate;

use server::Postgres;

/// The harness itself: a server starts as an unprivileged user, takes connections on its
/// socket alone, gives each test a database of its own, and stops when dropped.
#[test]
fn a_real_server_starts_in_a_temporary_directory_and_hands_out_databases() {
    let Some(server) = Postgres::start() else {
        return;
    };
    let (first, second) = (server.database(), server.database());
    assert_ne!(first, second);
    let mut client = postgres::Client::connect(&first, postgres::NoTls).unwrap();
    let row = client
        .query_one(
            "SELECT current_database(), current_setting('listen_addresses')",
            &[],
        )
        .unwrap();
    let (database, listening): (String, String) = (row.get(0), row.get(1));
    assert!(first.ends_with(&format!(
        "/{database}?host={}&port=5432",
        server.socket_dir().display()
    )));
    assert_eq!(listening, "", "no TCP port: the socket alone");
    let socket = server.socket_dir().to_path_buf();
    drop(client);
    drop(server);
    assert!(
        !socket.exists(),
        "the server stopped and its directory went with it"
    );
}

use moot_domain::debate::{DebateStatus, Event, Phase, Stage, Turn, TurnKey, TurnStatus};
use moot_journal::store::{PgJournal, Store};

/// Three turns as a debate writes them: text, moves, data, a confidence, a note, a failure.
fn turns() -> Vec<Turn> {
    let mut first = Turn::pending(TurnKey::new(1, Phase::Argument, "A"), "openai", "m");
    first.content = "Redis keeps sessions close; é and 😀 survive the trip.".into();
    first.confidence = Some(0.75);
    first.tokens_in = 120;
    first.tokens_out = 48;
    first.latency_ms = 812;
    let mut second = Turn::pending(TurnKey::new(1, Phase::Argument, "B"), "openai", "m");
    second.content = "PostgreSQL is already there.".into();
    second.data = Some(serde_json::json!({"moves": 2, "nested": {"k": [1, 2.5, null]}}));
    second.tokens_estimated = true;
    let mut third = Turn::pending(TurnKey::new(1, Phase::Rebuttal, "A"), "openai", "m");
    third.status = TurnStatus::Failed;
    third.note = Some("the provider failed".into());
    vec![first, second, third]
}

fn events() -> Vec<Event> {
    (1..=3)
        .map(|n| Event::Notice {
            message: format!("notice {n}"),
        })
        .collect()
}

/// The same debate journaled in SQLite and in PostgreSQL reads back the same, and its chain
/// holds in both with the same head: a debate verifies the same in either journal.
#[test]
fn a_debate_journaled_in_postgres_reads_and_chains_as_in_sqlite() {
    let Some(server) = Postgres::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Store::open(&dir.path().join("moot.db")).unwrap();
    let pg = PgJournal::connect(&server.database()).unwrap();
    let id = "DEB-pgsame01";
    sqlite.create_debate(&debate(id)).unwrap();
    pg.create_debate(&debate(id)).unwrap();
    for (n, turn) in turns().iter().enumerate() {
        let at = format!("2026-12-03T00:00:0{n}Z");
        sqlite.record_turn_at(id, turn, &at).unwrap();
        pg.record_turn_at(id, turn, &at).unwrap();
    }
    for event in events() {
        sqlite.record_event(id, &event).unwrap();
        pg.record_event(id, &event).unwrap();
    }
    let stage = Stage::Round { round: 2 };
    sqlite.set_stage(id, stage.clone()).unwrap();
    pg.set_stage(id, stage).unwrap();

    assert_eq!(pg.turns(id).unwrap(), sqlite.turns(id).unwrap());
    assert_eq!(pg.turns(id).unwrap(), turns());
    assert_eq!(pg.events(id).unwrap(), sqlite.events(id).unwrap());
    assert_eq!(
        pg.events_after(id, 1).unwrap(),
        sqlite.events_after(id, 1).unwrap()
    );
    assert_eq!(pg.last_event_seq(id).unwrap(), 3);
    let (from_pg, from_sqlite) = (pg.debate("deb-PGSAME").unwrap(), sqlite.debate(id).unwrap());
    assert_eq!(from_pg.question, from_sqlite.question);
    assert_eq!(from_pg.config, from_sqlite.config);
    assert_eq!(from_pg.stage, from_sqlite.stage);
    assert_eq!(
        from_pg.status, from_sqlite.status,
        "no live lease in either: interrupted"
    );

    let (checked_pg, checked_sqlite) =
        (pg.check_chain(id).unwrap(), sqlite.check_chain(id).unwrap());
    assert!(checked_pg.holds(), "{checked_pg:?}");
    assert!(checked_sqlite.holds(), "{checked_sqlite:?}");
    assert_eq!(checked_pg.entries, 1 + 3 + 3);
    assert_eq!(
        (checked_pg.entries, &checked_pg.head),
        (checked_sqlite.entries, &checked_sqlite.head),
        "the same rows chain to the same head in both journals"
    );
    assert_eq!(
        pg.chain_head(id).unwrap().unwrap().hash,
        checked_pg.head.unwrap()
    );

    pg.set_status(id, DebateStatus::Completed, None).unwrap();
    let done = pg.debate(id).unwrap();
    assert_eq!(done.status, DebateStatus::Completed);
    assert!(done.finished_at.is_some() && done.stage.is_none());
    assert!(matches!(
        pg.debate("DEB-nosuch"),
        Err(moot_journal::store::StoreError::NotFound(_))
    ));
}

/// An edit, a deletion or an addition made behind the journal's back shows in PostgreSQL's
/// chain as it does in SQLite's, named by the row's place.
#[test]
fn a_quiet_edit_in_postgres_breaks_the_chain_at_its_place() {
    let Some(server) = Postgres::start() else {
        return;
    };
    let url = server.database();
    let pg = PgJournal::connect(&url).unwrap();
    let id = "DEB-pgforge1";
    pg.create_debate(&debate(id)).unwrap();
    for turn in turns() {
        pg.record_turn(id, &turn).unwrap();
    }
    for event in events() {
        pg.record_event(id, &event).unwrap();
    }
    assert!(pg.check_chain(id).unwrap().holds());
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let tamper = |client: &mut postgres::Client, sql: &str| {
        client.batch_execute(sql).unwrap();
    };
    tamper(
        &mut client,
        "UPDATE turns SET content = 'forged' WHERE seat = 'B'",
    );
    let broken = pg.check_chain(id).unwrap();
    assert_eq!(
        broken.problem.as_deref(),
        Some("turns: round 1 argument B no longer matches what was chained (entry 3)"),
        "{broken:?}"
    );
    tamper(
        &mut client,
        "UPDATE turns SET content = 'PostgreSQL is already there.' WHERE seat = 'B';
         DELETE FROM events WHERE seq = 2",
    );
    let broken = pg.check_chain(id).unwrap();
    assert!(
        broken
            .problem
            .as_deref()
            .is_some_and(|p| p.contains("is missing from the journal (chained as entry 6")),
        "{broken:?}"
    );
}

/// Two handles on one journal (two replicas, say) appending to one debate at once: each
/// append waits for the debate's row, so the log has no gap and the chain no fork.
#[test]
fn two_writers_on_one_debate_append_one_at_a_time() {
    let Some(server) = Postgres::start() else {
        return;
    };
    let url = server.database();
    let (one, other) = (
        PgJournal::connect(&url).unwrap(),
        PgJournal::connect(&url).unwrap(),
    );
    let id = "DEB-pgtwo001";
    one.create_debate(&debate(id)).unwrap();
    let write = |journal: PgJournal, from: &'static str| {
        std::thread::spawn(move || {
            for n in 0..40 {
                journal
                    .record_event(
                        id,
                        &Event::Notice {
                            message: format!("{from} {n}"),
                        },
                    )
                    .unwrap();
            }
        })
    };
    let (a, b) = (write(one.clone(), "one"), write(other.clone(), "other"));
    a.join().unwrap();
    b.join().unwrap();
    let numbered = other.events_after(id, 0).unwrap();
    let seqs: Vec<i64> = numbered.iter().map(|(seq, _)| *seq).collect();
    assert_eq!(seqs, (1..=80).collect::<Vec<_>>());
    let checked = one.check_chain(id).unwrap();
    assert!(checked.holds(), "{checked:?}");
    assert_eq!(checked.entries, 81);
}

/// A server that is not there is a clear error naming it, and never its password.
#[test]
fn an_unreachable_server_is_named_without_its_password() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!(
        "postgres://moot:hunter2secret@/moot?host={}&connect_timeout=2",
        dir.path().display()
    );
    let error = PgJournal::connect(&url).unwrap_err().to_string();
    assert!(error.contains("cannot open the journal"), "{error}");
    assert!(!error.contains("hunter2secret"), "{error}");
}

/// Runs the same call on both journals and expects the same answer.
macro_rules! both {
    ($sqlite:expr, $pg:expr, |$j:ident| $call:expr) => {{
        let from_sqlite = {
            let $j = &$sqlite;
            $call.unwrap()
        };
        let from_pg = {
            let $j = &$pg;
            $call.unwrap()
        };
        assert_eq!(from_pg, from_sqlite, "{}", stringify!($call));
        from_pg
    }};
}

/// Everything else a debate keeps — answers (a second remote answer refused, one that does
/// not fit named), the record written twice, gates settled once whichever handle settles
/// them, bench runs, learned shapes, new settings and seats, failed turns discarded for a
/// resume — reads back from PostgreSQL as from SQLite, and both chains hold.
#[test]
fn answers_records_gates_and_bench_runs_read_back_as_in_sqlite() {
    use moot_domain::debate::{AskKind, Confidence, Control, GateDecision, Seat};
    use moot_journal::store::{AuditKind, AuditPlace, Entry, RemoteAnswer, StoredSynthesis};
    let Some(server) = Postgres::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Store::open(&dir.path().join("moot.db")).unwrap();
    let url = server.database();
    let (pg, replica) = (
        PgJournal::connect(&url).unwrap(),
        PgJournal::connect(&url).unwrap(),
    );
    let id = "DEB-pgrest01";
    sqlite.create_debate(&debate(id)).unwrap();
    pg.create_debate(&debate(id)).unwrap();
    for turn in turns() {
        sqlite.record_turn(id, &turn).unwrap();
        pg.record_turn(id, &turn).unwrap();
    }

    both!(sqlite, pg, |j| j.record_checkpoint(
        id,
        1,
        AskKind::Checkpoint,
        &Control::Guide("measure p99".into()),
        "ada at the workbench"
    ));
    both!(sqlite, pg, |j| j.record_checkpoint(
        id,
        1,
        AskKind::Checkpoint,
        &Control::Continue,
        "ada at the workbench"
    ));
    assert_eq!(
        both!(sqlite, pg, |j| j.record_remote_answer(
            id,
            2,
            AskKind::Conclusion,
            &Control::Accept,
            "api"
        )),
        RemoteAnswer::Recorded
    );
    assert_eq!(
        both!(sqlite, replica, |j| j.record_remote_answer(
            id,
            2,
            AskKind::Conclusion,
            &Control::Continue,
            "api"
        )),
        RemoteAnswer::AnsweredAlready
    );
    assert!(matches!(
        both!(sqlite, pg, |j| j.record_remote_answer(
            id,
            3,
            AskKind::Conclusion,
            &Control::Choose("Z".into()),
            "api"
        )),
        RemoteAnswer::DoesNotFit(_)
    ));
    both!(sqlite, pg, |j| j.checkpoints(id));
    assert_eq!(
        both!(sqlite, pg, |j| j.checkpoint_answer(
            id,
            1,
            AskKind::Checkpoint
        ))
        .unwrap()
        .control,
        Control::Continue
    );

    let record = |markdown: &str| StoredSynthesis {
        markdown: markdown.into(),
        data: serde_json::json!({"recommendation": "PostgreSQL"}),
        confidence: Confidence::Medium,
        path: Some("decisions/0001.md".into()),
        follow_up_path: None,
        section: None,
    };
    both!(sqlite, pg, |j| j.save_synthesis(id, &record("# First")));
    both!(sqlite, pg, |j| j.save_synthesis(id, &record("# Second")));
    both!(sqlite, pg, |j| j.set_follow_up(id, "issues/follow-up.md"));
    assert_eq!(
        both!(sqlite, pg, |j| j.synthesis(id)).unwrap().markdown,
        "# Second"
    );
    assert_eq!(
        both!(sqlite, pg, |j| j.stored_confidence(id)),
        Some("Medium".to_string())
    );

    let artifacts = serde_json::json!({"draft": "# Second"});
    both!(sqlite, pg, |j| j.request_gate(
        id,
        "before_synthesis:2",
        "before_synthesis",
        2,
        "the record",
        &artifacts
    ));
    both!(sqlite, pg, |j| j.request_gate(
        id,
        "before_synthesis:2",
        "before_synthesis",
        2,
        "asked again",
        &artifacts
    ));
    assert!(both!(sqlite, replica, |j| j.decide_gate(
        id,
        "before_synthesis:2",
        GateDecision::Approved,
        "bob via the API",
        None
    )));
    assert!(!both!(sqlite, pg, |j| j.decide_gate(
        id,
        "before_synthesis:2",
        GateDecision::Rejected,
        "eve",
        Some("late")
    )));
    let gates = pg.gates(id).unwrap();
    assert_eq!(gates.len(), 1);
    assert_eq!(gates[0].summary, "the record");
    assert_eq!(gates[0].decided_by.as_deref(), Some("bob via the API"));
    let (from_pg, from_sqlite) = (pg.gates(id).unwrap(), sqlite.gates(id).unwrap());
    assert_eq!(
        (from_pg[0].decision, &from_pg[0].gate, &from_pg[0].artifacts),
        (
            from_sqlite[0].decision,
            &from_sqlite[0].gate,
            &from_sqlite[0].artifacts
        )
    );
    assert_eq!(
        pg.gate(id, "before_synthesis:2").unwrap().unwrap().gate,
        "before_synthesis:2"
    );

    both!(sqlite, pg, |j| j.create_bench_run(
        "BENCH-pg",
        &serde_json::json!({"set": "words"})
    ));
    both!(sqlite, pg, |j| j.record_bench_result(
        "BENCH-pg",
        1,
        "debate",
        &serde_json::json!({"correct": false})
    ));
    both!(sqlite, pg, |j| j.record_bench_result(
        "BENCH-pg",
        1,
        "debate",
        &serde_json::json!({"correct": true})
    ));
    both!(sqlite, pg, |j| j.record_bench_result(
        "BENCH-pg",
        0,
        "single",
        &serde_json::json!({"correct": true})
    ));
    assert_eq!(both!(sqlite, pg, |j| j.bench_results("BENCH-pg")).len(), 2);
    both!(sqlite, pg, |j| j.bench_run("BENCH-pg"));
    let shapes = vec![(
        "http://127.0.0.1/v1".to_string(),
        "{\"schema\":true}".to_string(),
    )];
    both!(sqlite, pg, |j| j.save_capabilities(&shapes));
    assert_eq!(both!(sqlite, pg, |j| j.load_capabilities()), shapes);

    // A cancel filed for the replica that runs the debate, taken once.
    assert!(both!(sqlite, pg, |j| j.request_cancel(id, "the API")));
    assert!(!both!(sqlite, replica, |j| j.request_cancel(id, "again")));
    assert_eq!(
        both!(sqlite, replica, |j| j.cancel_requests()),
        vec![id.to_string()]
    );
    assert_eq!(
        both!(sqlite, pg, |j| j.take_cancel_request(id)),
        Some("the API".to_string())
    );
    assert_eq!(both!(sqlite, replica, |j| j.take_cancel_request(id)), None);
    assert!(both!(sqlite, pg, |j| j.cancel_requests()).is_empty());
    both!(sqlite, pg, |j| j
        .set_config(id, &serde_json::json!({"max_rounds": 3})));
    let seat = Seat {
        id: "A".into(),
        perspective: "Operator".into(),
        priorities: vec!["uptime".into()],
        trade_offs: "speed".into(),
        stance: "keep it simple".into(),
        provider: None,
        model: None,
    };
    both!(sqlite, pg, |j| j.set_seats(id, std::slice::from_ref(&seat)));
    assert_eq!(pg.debate(id).unwrap().seats, vec![seat]);
    assert_eq!(both!(sqlite, pg, |j| j.discard_trailing_failures(id)), 1);
    assert_eq!(both!(sqlite, pg, |j| j.turns(id)).len(), 2);
    assert_eq!(pg.turn_times(id).unwrap().len(), 2);
    both!(sqlite, pg, |j| j.annotations(id));

    // The audit trail and an append of several entries at once.
    let place = AuditPlace {
        round: 1,
        phase: "argument".into(),
        seat: "A".into(),
        attempt: 1,
        provider: "openai".into(),
        model: "m".into(),
    };
    let body =
        serde_json::json!({"messages": ["Authorization: Bearer sk-live-0123456789abcdef0123"]});
    both!(sqlite, pg, |j| j.record_audit(
        id,
        AuditKind::Request,
        &place,
        &body,
        true
    ));
    both!(sqlite, pg, |j| j.record_audit(
        id,
        AuditKind::Response,
        &place,
        &serde_json::json!({"text": "ok"}),
        false
    ));
    let ended = Event::Notice {
        message: "done".into(),
    };
    both!(sqlite, pg, |j| j.append(
        id,
        &[
            Entry::Stage(&Stage::Round { round: 3 }),
            Entry::Event(&ended),
            Entry::Status {
                status: DebateStatus::Completed,
                error: None,
            },
        ]
    ));
    let read = |entries: Vec<moot_journal::store::AuditEntry>| {
        entries
            .into_iter()
            .map(|e| (e.seq, e.kind, e.place, e.sha256, e.size, e.body, e.damage))
            .collect::<Vec<_>>()
    };
    let trail = read(pg.audit(id).unwrap());
    assert_eq!(trail, read(sqlite.audit(id).unwrap()));
    assert!(
        !format!("{trail:?}").contains("sk-live-0123456789abcdef0123"),
        "a key never lands in the journal: {trail:?}"
    );
    assert_eq!(trail[1].5, None, "the body was not kept");
    assert_eq!(pg.debate(id).unwrap().status, DebateStatus::Completed);
    assert_eq!(pg.events(id).unwrap().last(), Some(&ended));

    let (checked_pg, checked_sqlite) =
        (pg.check_chain(id).unwrap(), sqlite.check_chain(id).unwrap());
    assert!(checked_pg.holds(), "{checked_pg:?}");
    assert!(checked_sqlite.holds(), "{checked_sqlite:?}");
    assert_eq!(checked_pg.entries, checked_sqlite.entries);
    assert_eq!(
        pg.chain_entry(id, checked_pg.entries).unwrap(),
        checked_pg.head
    );
}

/// Listing, searching and deleting, and lessons (matched by stemmed words, evicted past the
/// capacity, their removal chained in their debate) and preferences, read the same from
/// PostgreSQL as from SQLite.
#[test]
fn the_history_its_search_and_lessons_read_as_in_sqlite() {
    use moot_domain::debate::LessonDraft;
    let Some(server) = Postgres::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Store::open(&dir.path().join("moot.db")).unwrap();
    let pg = PgJournal::connect(&server.database()).unwrap();
    for (id, question, at) in [
        (
            "DEB-pghist01",
            "Should we cache sessions in Redis?",
            "2026-12-01T00:00:00Z",
        ),
        (
            "DEB-pghist02",
            "Which queue for the billing jobs?",
            "2026-12-02T00:00:00Z",
        ),
    ] {
        let mut made = debate(id);
        made.question = question.into();
        made.created_at = at.into();
        sqlite.create_debate(&made).unwrap();
        pg.create_debate(&made).unwrap();
    }
    for turn in turns() {
        sqlite.record_turn("DEB-pghist01", &turn).unwrap();
        pg.record_turn("DEB-pghist01", &turn).unwrap();
    }
    let listed = both!(sqlite, pg, |j| j.list(10));
    assert_eq!(listed[0].id, "DEB-pghist02", "newest first");
    assert_eq!(listed[1].rounds, 1);
    assert_eq!(pg.list(1).unwrap().len(), 1);

    let found = |hits: Vec<moot_journal::store::SearchHit>| {
        hits.into_iter()
            .map(|h| (h.id, h.kind, h.snippet.contains('[')))
            .collect::<Vec<_>>()
    };
    for asked in ["redis cach", "postgres", "billing"] {
        let (from_pg, from_sqlite) = (
            found(pg.search(asked, 10).unwrap()),
            found(sqlite.search(asked, 10).unwrap()),
        );
        assert_eq!(from_pg, from_sqlite, "{asked}");
        assert_eq!(from_pg.len(), 1, "{asked}: {from_pg:?}");
    }
    let hit = &pg.search("redis", 5).unwrap()[0];
    assert!(hit.snippet.contains("[Redis]"), "{}", hit.snippet);
    assert!(both!(sqlite, pg, |j| j.search("' OR 1=1 --", 5)).is_empty());

    let draft = |text: &str| LessonDraft {
        text: text.into(),
        went: "right".into(),
        advice: "Measure the hit rate first.".into(),
        confidence: 0.8,
    };
    let id = "DEB-pghist01";
    let question = "Should we cache sessions in Redis?";
    let added = both!(sqlite, pg, |j| j.add_lessons(
        id,
        question,
        &[
            draft("Caching pays off when reads dominate."),
            draft("Queues need back-pressure.")
        ],
        2
    ));
    assert_eq!(added.len(), 2);
    both!(sqlite, pg, |j| j.add_lessons(
        id,
        question,
        &[draft("A third lesson evicts the first.")],
        2
    ));
    let kept = both!(sqlite, pg, |j| j.lessons());
    assert_eq!(kept.len(), 2);
    assert_eq!(kept[0].text, "A third lesson evicts the first.");
    let matched = both!(sqlite, pg, |j| j
        .lessons_matching(&["caching".to_string(), "queue".to_string()]));
    // Both match "caching" by their source question's "cache"; the queue lesson "queue" too.
    let counts: Vec<(&str, usize)> = matched.iter().map(|(l, n)| (l.text.as_str(), *n)).collect();
    assert_eq!(
        counts,
        [
            ("Queues need back-pressure.", 2),
            ("A third lesson evicts the first.", 1)
        ]
    );
    both!(sqlite, pg, |j| j.set_lesson_embedding(
        kept[0].id,
        "embed-1",
        &[0.5, -1.0]
    ));
    assert_eq!(
        both!(sqlite, pg, |j| j.lesson_embeddings("embed-1"))[0].1,
        vec![0.5, -1.0]
    );
    assert!(both!(sqlite, pg, |j| j.remove_lesson(kept[1].id)));
    assert!(!both!(sqlite, pg, |j| j.remove_lesson(kept[1].id)));
    both!(sqlite, pg, |j| j.set_preference("lessons", "off"));
    assert_eq!(
        both!(sqlite, pg, |j| j.preference("lessons")),
        Some("off".to_string())
    );
    assert_eq!(both!(sqlite, pg, |j| j.preference("nothing")), None);
    let checked = pg.check_chain(id).unwrap();
    assert!(checked.holds(), "{checked:?}");
    assert_eq!(checked.entries, sqlite.check_chain(id).unwrap().entries);

    both!(sqlite, pg, |j| j.delete("DEB-pghist02"));
    assert_eq!(both!(sqlite, pg, |j| j.list(10)).len(), 1);
    assert!(pg.search("billing", 5).unwrap().is_empty());
    assert!(matches!(
        pg.delete("DEB-pghist02"),
        Err(moot_journal::store::StoreError::NotFound(_))
    ));
}

/// The lease in the debate's row: one holder at a time; a holder whose process is gone, or
/// that stopped renewing on another host, is taken over; of two replicas that reach for a
/// free debate at once exactly one gets it.
#[test]
fn a_lease_in_postgres_has_one_holder_and_a_dead_ones_is_taken_over() {
    let Some(server) = Postgres::start() else {
        return;
    };
    let url = server.database();
    let (one, other) = (
        PgJournal::connect(&url).unwrap(),
        PgJournal::connect(&url).unwrap(),
    );
    let id = "DEB-pglease1";
    let mut running = debate(id);
    running.status = DebateStatus::Running;
    one.create_debate(&running).unwrap();
    assert_eq!(one.debate(id).unwrap().status, DebateStatus::Interrupted);
    let guard = one.acquire_lease(id, 20).unwrap();
    assert_eq!(other.debate(id).unwrap().status, DebateStatus::Running);
    assert!(matches!(
        other.acquire_lease(id, 20),
        Err(moot_journal::store::StoreError::InUse { .. })
    ));
    one.renew_lease(id).unwrap();
    one.release_lease(id).unwrap();
    drop(guard);
    let _again = other.acquire_lease(id, 20).unwrap();
    other.release_lease(id).unwrap();

    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let set_lease = |client: &mut postgres::Client, pid: i64, host: &str, age: i64| {
        client
            .execute(
                "UPDATE debates SET lease_pid = $2, lease_host = $3,
                    lease_at = extract(epoch from now())::bigint - $4,
                    lease_since = extract(epoch from now())::bigint - $4 - 1
                 WHERE id = $1",
                &[&id, &pid, &host, &age],
            )
            .unwrap();
    };
    let here = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string();
    // A process on this host that has ended.
    let mut ended = std::process::Command::new("true").spawn().unwrap();
    let gone = i64::from(ended.id());
    ended.wait().unwrap();
    set_lease(&mut client, gone, &here, 0);
    assert_eq!(one.debate(id).unwrap().status, DebateStatus::Interrupted);
    one.acquire_lease(id, 20).unwrap();
    one.release_lease(id).unwrap();
    // Another host's replica: alive while it renews, taken over once it has not for a while.
    set_lease(&mut client, 4242, "replica-b.example", 2);
    assert_eq!(one.debate(id).unwrap().status, DebateStatus::Running);
    assert!(one.acquire_lease(id, 20).is_err());
    set_lease(&mut client, 4242, "replica-b.example", 120);
    assert_eq!(one.debate(id).unwrap().status, DebateStatus::Interrupted);
    // A lease lasts as long as its holder said (its replica's takeover time): seven seconds
    // of silence (six, as the server's clock rounds) end a five-second one, not the default
    // twenty.
    set_lease(&mut client, 4242, "replica-b.example", 7);
    assert_eq!(one.debate(id).unwrap().status, DebateStatus::Running);
    client
        .execute("UPDATE debates SET lease_ttl = 5 WHERE id = $1", &[&id])
        .unwrap();
    assert_eq!(one.debate(id).unwrap().status, DebateStatus::Interrupted);
    one.acquire_lease(id, 7).unwrap();
    let ttl: Option<i64> = client
        .query_one("SELECT lease_ttl FROM debates WHERE id = $1", &[&id])
        .unwrap()
        .get(0);
    assert_eq!(ttl, Some(7), "the holder's heartbeat lasts what it said");
    one.release_lease(id).unwrap();

    // Two replicas reach for it at once: one wins.
    let reach =
        |journal: PgJournal| std::thread::spawn(move || journal.acquire_lease(id, 20).is_ok());
    let (a, b) = (reach(one.clone()), reach(other.clone()));
    let won = [a.join().unwrap(), b.join().unwrap()];
    assert_eq!(won.iter().filter(|w| **w).count(), 1, "{won:?}");
}

/// A whole SQLite journal copied to PostgreSQL and back to a new SQLite file: every debate
/// arrives row for row and its chain checks there with the head it had (SQLite's in-row links
/// become `chain` entries and back), a second copy finds them there already, and a debate
/// copied in goes on being written with numbers past the ones it brought.
#[test]
fn a_journal_copied_to_postgres_and_back_verifies_with_the_same_heads() {
    use moot_domain::debate::{AskKind, Control, GateDecision, LessonDraft};
    let Some(server) = Postgres::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Store::open(&dir.path().join("moot.db")).unwrap();
    for id in ["DEB-pgcopy01", "DEB-pgcopy02"] {
        sqlite.create_debate(&debate(id)).unwrap();
        for turn in turns() {
            sqlite.record_turn(id, &turn).unwrap();
        }
        for event in events() {
            sqlite.record_event(id, &event).unwrap();
        }
        sqlite
            .record_checkpoint(id, 1, AskKind::Checkpoint, &Control::Continue, "ada")
            .unwrap();
        sqlite
            .request_gate(
                id,
                "after_round:1",
                "after_round",
                1,
                "s",
                &serde_json::json!({}),
            )
            .unwrap();
        sqlite
            .decide_gate(id, "after_round:1", GateDecision::Approved, "bob", None)
            .unwrap();
        let draft = LessonDraft {
            text: "Measure first.".into(),
            went: "right".into(),
            advice: "Benchmark.".into(),
            confidence: 0.5,
        };
        sqlite.add_lessons(id, "Q?", &[draft], 10).unwrap();
    }
    sqlite.set_preference("lessons", "off").unwrap();
    sqlite
        .create_bench_run("BENCH-copy", &serde_json::json!({"set": "words"}))
        .unwrap();
    sqlite
        .record_bench_result(
            "BENCH-copy",
            0,
            "single",
            &serde_json::json!({"correct": true}),
        )
        .unwrap();

    let pg = Store::connect(&server.database(), &dir.path().join("unused.db")).unwrap();
    let mut heard = Vec::new();
    let report = sqlite
        .copy_into(&pg, &mut |id, outcome| {
            heard.push((
                id.to_string(),
                matches!(outcome, moot_journal::store::Copied::Verified(_)),
            ))
        })
        .unwrap();
    assert!(report.passed(), "{report:?}");
    assert_eq!(report.copied.len(), 2);
    assert_eq!(heard.len(), 2);
    for id in ["DEB-pgcopy01", "DEB-pgcopy02"] {
        let (here, there) = (sqlite.check_chain(id).unwrap(), pg.check_chain(id).unwrap());
        assert!(there.holds(), "{there:?}");
        assert_eq!((there.entries, &there.head), (here.entries, &here.head));
        assert_eq!(pg.turns(id).unwrap(), sqlite.turns(id).unwrap());
        assert_eq!(
            pg.events_after(id, 0).unwrap(),
            sqlite.events_after(id, 0).unwrap()
        );
        assert_eq!(pg.gates(id).unwrap(), sqlite.gates(id).unwrap());
        assert_eq!(pg.checkpoints(id).unwrap(), sqlite.checkpoints(id).unwrap());
    }
    assert_eq!(pg.lessons().unwrap(), sqlite.lessons().unwrap());
    assert_eq!(pg.preference("lessons").unwrap().as_deref(), Some("off"));
    assert_eq!(
        pg.bench_results("BENCH-copy").unwrap(),
        sqlite.bench_results("BENCH-copy").unwrap()
    );
    assert_eq!(
        pg.search("benchmark", 5).unwrap().len(),
        0,
        "lessons are not debate passages"
    );
    assert_eq!(pg.search("Redis", 5).unwrap().len(), 2);

    // Again: nothing copied twice.
    let again = sqlite.copy_into(&pg, &mut |_, _| {}).unwrap();
    assert_eq!(
        (again.copied.len(), again.already.len()),
        (0, 2),
        "{again:?}"
    );

    // A copied debate goes on in PostgreSQL past the numbers it brought, its chain intact.
    let last = pg.last_event_seq("DEB-pgcopy02").unwrap();
    pg.record_event(
        "DEB-pgcopy02",
        &Event::Notice {
            message: "resumed".into(),
        },
    )
    .unwrap();
    assert!(pg.last_event_seq("DEB-pgcopy02").unwrap() > last);
    assert!(pg.check_chain("DEB-pgcopy02").unwrap().holds());

    // And back to a new SQLite file.
    let back = Store::open(&dir.path().join("back.db")).unwrap();
    let report = pg.copy_into(&back, &mut |_, _| {}).unwrap();
    assert!(report.passed(), "{report:?}");
    for id in ["DEB-pgcopy01", "DEB-pgcopy02"] {
        let (there, back_here) = (pg.check_chain(id).unwrap(), back.check_chain(id).unwrap());
        assert!(back_here.holds(), "{back_here:?}");
        assert_eq!(back_here.head, there.head);
        assert_eq!(back.events(id).unwrap(), pg.events(id).unwrap());
    }
    // The copy back is written on in SQLite's own way, its chain still whole.
    back.record_event(
        "DEB-pgcopy01",
        &Event::Notice {
            message: "later".into(),
        },
    )
    .unwrap();
    assert!(back.check_chain("DEB-pgcopy01").unwrap().holds());
}

/// A server restarted under a running journal (an upgrade, a failover) costs it nothing: the
/// next call opens its connection again and goes on where the chain stood.
#[test]
fn a_journal_goes_on_after_its_server_restarts() {
    let Some(server) = Postgres::start() else {
        return;
    };
    let journal = PgJournal::connect(&server.database()).unwrap();
    journal.create_debate(&debate("DEB-restart")).unwrap();
    journal.record_event("DEB-restart", &events()[0]).unwrap();
    server.restart();
    journal
        .record_event("DEB-restart", &events()[1])
        .expect("the write after a restart goes through");
    assert_eq!(journal.events("DEB-restart").unwrap(), events()[..2]);
    assert!(journal.check_chain("DEB-restart").unwrap().holds());
}

/// Every journal handle on the server is told of a debate with new events as the write that
/// journals them commits, whichever host wrote it; a write without events tells nobody.
#[test]
fn a_commit_that_journals_events_is_told_to_every_listener() {
    let Some(server) = Postgres::start() else {
        return;
    };
    let url = server.database();
    let (writer, reader) = (
        PgJournal::connect(&url).unwrap(),
        PgJournal::connect(&url).unwrap(),
    );
    let (told, heard) = std::sync::mpsc::channel::<Option<String>>();
    reader.watch_events(move |id| {
        let _ = told.send(id.map(str::to_string));
    });
    let wait = std::time::Duration::from_secs(20);
    assert_eq!(
        heard.recv_timeout(wait).unwrap(),
        None,
        "a new listener may have missed anything"
    );
    writer.create_debate(&debate("DEB-told")).unwrap();
    writer
        .set_stage("DEB-told", Stage::Round { round: 1 })
        .unwrap();
    writer.record_event("DEB-told", &events()[0]).unwrap();
    assert_eq!(
        heard.recv_timeout(wait).unwrap().as_deref(),
        Some("DEB-told"),
        "the event's commit is told, and nothing before it"
    );
    writer
        .set_status("DEB-told", DebateStatus::Completed, None)
        .unwrap();
    assert_eq!(
        heard.recv_timeout(wait).unwrap().as_deref(),
        Some("DEB-told"),
        "a debate's ending is told"
    );
    // A restart loses the notifications sent meanwhile: the listener hears `None` again.
    server.restart();
    assert_eq!(heard.recv_timeout(wait).unwrap(), None);
    writer.record_event("DEB-told", &events()[1]).unwrap();
    assert_eq!(
        heard.recv_timeout(wait).unwrap().as_deref(),
        Some("DEB-told")
    );
}

/// Many debates writing at once through one handle are not held in a single line: the
/// handle opens more connections (as many as `MOST`) and every chain still holds.
#[test]
fn debates_writing_at_once_share_the_handles_connections_named_for_their_process() {
    let Some(server) = Postgres::start() else {
        return;
    };
    let url = server.database();
    let journal = PgJournal::connect(&url).unwrap();
    std::thread::scope(|scope| {
        for n in 0..8 {
            let journal = journal.clone();
            scope.spawn(move || {
                let id = format!("DEB-many{n}");
                journal.create_debate(&debate(&id)).unwrap();
                for event in events().iter().cycle().take(30) {
                    journal.record_event(&id, event).unwrap();
                }
            });
        }
    });
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let connections: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
             AND pid <> pg_backend_pid()",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(
        (2..=4).contains(&connections),
        "{connections} connections: more than one, at most four"
    );
    // Named for the process and host that hold them, unless the URL names them.
    let named = |client: &mut postgres::Client, name: &str| -> i64 {
        client
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE $1",
                &[&name],
            )
            .unwrap()
            .get(0)
    };
    let ours = format!("moot {}@%", std::process::id());
    assert_eq!(named(&mut client, &ours), connections, "named {ours:?}");
    let by_url = PgJournal::connect(&format!("{url}&application_name=nightly-report")).unwrap();
    assert_eq!(by_url.list(100).unwrap().len(), 8);
    assert_eq!(named(&mut client, "nightly-report"), 1);
    for n in 0..8 {
        let id = format!("DEB-many{n}");
        assert_eq!(journal.events(&id).unwrap().len(), 30);
        assert!(journal.check_chain(&id).unwrap().holds());
    }
}

/// A journal on a server reached over TCP speaks TLS as the URL's `sslmode` asks, as libpq
/// would: `require` encrypts; `verify-full` with the server's root (`sslrootcert`) checks its
/// certificate and name and goes on; without that root, or at a name the certificate does
/// not hold, it refuses, saying why; `verify-ca` checks the chain and not the name.
#[test]
fn a_journal_over_tcp_speaks_tls_as_its_sslmode_asks() {
    let Some(server) = Postgres::with_tls() else {
        return;
    };
    let encrypted = |url: &str| {
        let journal = PgJournal::connect(url).unwrap_or_else(|e| panic!("{url}: {e}"));
        journal.create_debate(&debate("DEB-tls")).ok();
        journal.ssl_in_use().unwrap()
    };
    let root = server.certificate().display().to_string();
    assert!(encrypted(
        &server.database_over_tcp("localhost", "sslmode=require")
    ));
    assert!(
        encrypted(&server.database_over_tcp("localhost", "")),
        "prefer, the default, encrypts when offered"
    );
    assert!(!encrypted(
        &server.database_over_tcp("localhost", "sslmode=disable")
    ));
    assert!(encrypted(&server.database_over_tcp(
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={root}")
    )));
    assert!(encrypted(&server.database_over_tcp(
        "127.0.0.1",
        &format!("sslmode=verify-ca&sslrootcert={root}")
    )));
    let refused = |url: String| match PgJournal::connect(&url) {
        Ok(_) => panic!("{url} was taken"),
        Err(error) => error.to_string(),
    };
    let unknown_root = refused(server.database_over_tcp("localhost", "sslmode=verify-full"));
    assert!(
        unknown_root.to_lowercase().contains("certificate"),
        "{unknown_root}"
    );
    let wrong_name = refused(server.database_over_tcp(
        "127.0.0.1",
        &format!("sslmode=verify-full&sslrootcert={root}"),
    ));
    assert!(
        wrong_name.to_lowercase().contains("certificate"),
        "{wrong_name}"
    );
}

/// Gives debate `id`'s lease to another process (pid 4242 on `replica-z`), its heartbeat
/// `age` seconds old, behind the journal's back.
fn lease_to_another(client: &mut impl postgres::GenericClient, id: &str, age: i64) {
    client
        .execute(
            "UPDATE debates SET lease_pid = 4242, lease_host = 'replica-z',
                lease_at = extract(epoch from now())::bigint - $2,
                lease_since = extract(epoch from now())::bigint - $2, lease_ttl = 20
             WHERE id = $1",
            &[&id, &age],
        )
        .unwrap();
}

/// A process whose lease another took (a replica taken for dead that still runs) writes
/// nothing more to the debate: each write is refused, naming the holder now; a process that
/// never held it writes as before (an answer sent to another replica); and once the other is
/// gone the first may take the debate again and write.
#[test]
fn a_write_from_a_holder_whose_lease_was_taken_is_refused() {
    let Some(server) = Postgres::start() else {
        return;
    };
    let url = server.database();
    let (one, other) = (
        PgJournal::connect(&url).unwrap(),
        PgJournal::connect(&url).unwrap(),
    );
    let id = "DEB-fenced01";
    one.create_debate(&debate(id)).unwrap();
    let _lease = one.acquire_lease(id, 20).unwrap();
    let said = events();
    one.record_event(id, &said[0]).unwrap();
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    lease_to_another(&mut client, id, 0);
    match one.record_event(id, &said[1]) {
        Err(moot_journal::store::StoreError::LeaseLost { pid, host, .. }) => {
            assert_eq!((pid, host.as_str()), (4242, "replica-z"));
        }
        other => panic!("the write went on: {other:?}"),
    }
    assert_eq!(
        one.events(id).unwrap(),
        said[..1],
        "nothing of the refused write"
    );
    other.record_event(id, &said[1]).unwrap();
    lease_to_another(&mut client, id, 600);
    let _again = one.acquire_lease(id, 20).unwrap();
    one.record_event(id, &said[2]).unwrap();
    assert_eq!(one.events(id).unwrap(), said);
    assert!(one.check_chain(id).unwrap().holds());
}

/// Writes queued at one moment commit together (one transaction for several debates' writes),
/// and each still ends as its own. 12 debates written at once: the server assigns fewer
/// transactions than there were writes, and every write lands, in order, chained. Then again
/// with 4 of them written by a holder whose lease another took: every write to those is
/// refused and leaves nothing, and every other write lands as before.
#[test]
fn writes_queued_together_commit_together_and_each_ends_as_its_own() {
    let Some(server) = Postgres::start() else {
        return;
    };
    let url = server.database();
    let journal = PgJournal::connect(&url).unwrap();
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    const EACH: usize = 40;
    let said: Vec<Event> = events().iter().cycle().take(EACH).cloned().collect();
    let write_all = |ids: &[String], refused: &[&String]| {
        std::thread::scope(|scope| {
            for id in ids {
                let (journal, refused, said) = (journal.clone(), refused.contains(&id), &said);
                scope.spawn(move || {
                    for event in said {
                        match journal.record_event(id, event) {
                            Ok(()) => assert!(!refused, "{id}: a write went on without its lease"),
                            Err(moot_journal::store::StoreError::LeaseLost { .. }) if refused => {}
                            Err(error) => panic!("{id}: {error}"),
                        }
                    }
                });
            }
        });
    };
    let debates = |prefix: &str| -> Vec<String> {
        let ids: Vec<String> = (0..12).map(|n| format!("DEB-{prefix}{n:02}")).collect();
        for id in &ids {
            journal.create_debate(&debate(id)).unwrap();
        }
        ids
    };

    let ids = debates("group");
    let transactions = |client: &mut postgres::Client| -> i64 {
        client
            .query_one("SELECT txid_current()", &[])
            .unwrap()
            .get(0)
    };
    let before = transactions(&mut client);
    write_all(&ids, &[]);
    // Each `txid_current` takes one too.
    let assigned = transactions(&mut client) - before - 1;
    let writes = (ids.len() * EACH) as i64;
    assert!(
        assigned < writes * 3 / 4,
        "{assigned} transactions for {writes} writes: too few were committed together"
    );
    for id in &ids {
        assert_eq!(
            journal.events(id).unwrap(),
            said,
            "{id}: its writes, in order"
        );
        assert!(journal.check_chain(id).unwrap().holds(), "{id}'s chain");
    }

    let ids = debates("fenced");
    let leases: Vec<_> = ids
        .iter()
        .map(|id| journal.acquire_lease(id, 20).unwrap())
        .collect();
    let taken: Vec<&String> = ids.iter().step_by(3).collect();
    for id in &taken {
        lease_to_another(&mut client, id, 0);
    }
    write_all(&ids, &taken);
    for id in &ids {
        let written = journal.events(id).unwrap();
        if taken.contains(&id) {
            assert!(written.is_empty(), "{id}: a refused write left something");
        } else {
            assert_eq!(written, said, "{id}: its writes, in order");
        }
        assert!(journal.check_chain(id).unwrap().holds(), "{id}'s chain");
    }
    drop(leases);
}

/// Whether a write is fenced by the lease is judged when it runs, under the row's lock, not
/// when it was asked for: a write asked for while this process held the lease, which waits
/// for the row while the lease is given up and another holder takes the row, goes through as
/// any non-holder's would (a replica's last word on a debate it ran to its end and let go).
#[test]
fn a_write_is_fenced_by_the_lease_as_it_stands_when_the_write_runs() {
    let Some(server) = Postgres::start() else {
        return;
    };
    let url = server.database();
    let journal = PgJournal::connect(&url).unwrap();
    let id = "DEB-letgo001";
    journal.create_debate(&debate(id)).unwrap();
    let _lease = journal.acquire_lease(id, 20).unwrap();
    let mut holder = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let mut row = holder.transaction().unwrap();
    row.execute("SELECT 1 FROM debates WHERE id = $1 FOR UPDATE", &[&id])
        .unwrap();
    let mut watcher = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let waiting = |watcher: &mut postgres::Client| -> i64 {
        watcher
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'",
                &[],
            )
            .unwrap()
            .get(0)
    };
    let said = events();
    std::thread::scope(|scope| {
        let (writer, releaser, first) = (journal.clone(), journal.clone(), &said[0]);
        let written = scope.spawn(move || writer.record_event(id, first));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while waiting(&mut watcher) < 1 {
            assert!(
                std::time::Instant::now() < deadline,
                "the write never waited"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        // Given up while the write waits (the release's own update waits for the row too).
        let released = scope.spawn(move || releaser.release_lease(id));
        while waiting(&mut watcher) < 2 {
            assert!(
                std::time::Instant::now() < deadline,
                "the release never waited"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        lease_to_another(&mut row, id, 0);
        row.commit().unwrap();
        written
            .join()
            .unwrap()
            .expect("the write of a process that let the lease go");
        released.join().unwrap().unwrap();
    });
    assert_eq!(journal.events(id).unwrap(), said[..1]);
    assert!(journal.check_chain(id).unwrap().holds());
}

/// Debates that store lessons at once on one journal, each evicting the oldest past the
/// capacity, as replicas finishing together do: every lesson beyond the capacity goes, each
/// removal is noted once in its source's chain, and every chain holds.
#[test]
fn lessons_stored_at_once_by_many_debates_evict_each_old_one_once() {
    use moot_domain::debate::LessonDraft;
    let Some(server) = Postgres::start() else {
        return;
    };
    let url = server.database();
    const DEBATES: usize = 8;
    const CAPACITY: usize = 5;
    let ids: Vec<String> = (0..DEBATES).map(|i| format!("DEB-pgevict{i}")).collect();
    let pg = PgJournal::connect(&url).unwrap();
    for id in &ids {
        pg.create_debate(&debate(id)).unwrap();
    }
    let start = std::sync::Arc::new(std::sync::Barrier::new(DEBATES));
    let writers: Vec<_> = ids
        .iter()
        .map(|id| {
            let (url, id, start) = (url.clone(), id.clone(), start.clone());
            std::thread::spawn(move || {
                // A handle of its own, as each replica has.
                let journal = PgJournal::connect(&url).unwrap();
                start.wait();
                for round in 0..6 {
                    let drafts: Vec<LessonDraft> = (0..2)
                        .map(|n| LessonDraft {
                            text: format!("{id} lesson {round}.{n}"),
                            went: "right".into(),
                            advice: "Measure first.".into(),
                            confidence: 0.5,
                        })
                        .collect();
                    journal
                        .add_lessons(&id, "Should we cache?", &drafts, CAPACITY)
                        .unwrap();
                    journal
                        .record_event(
                            &id,
                            &Event::Notice {
                                message: format!("round {round}"),
                            },
                        )
                        .unwrap();
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    assert_eq!(pg.lessons().unwrap().len(), CAPACITY);
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    for id in &ids {
        let check = pg.check_chain(id).unwrap();
        assert!(check.holds(), "{id}'s chain breaks: {check:?}");
    }
    // Each of the 96 lessons was added once and, unless kept, removed once: two entries in
    // its source's chain, one for one still kept.
    let entries: i64 = client
        .query_one("SELECT count(*) FROM chain WHERE facet = 'lesson'", &[])
        .unwrap()
        .get(0);
    let stored = (DEBATES * 6 * 2) as i64;
    assert_eq!(entries, stored * 2 - CAPACITY as i64);
}

/// Replicas started together on an empty database: every one opens the journal, and the
/// schema is made once (one version row, every step applied once).
#[test]
fn replicas_opening_an_empty_database_at_once_make_its_schema_once() {
    let Some(server) = Postgres::start() else {
        return;
    };
    for _ in 0..3 {
        let url = server.database();
        const REPLICAS: usize = 8;
        let start = std::sync::Arc::new(std::sync::Barrier::new(REPLICAS));
        let opened: Vec<_> = (0..REPLICAS)
            .map(|_| {
                let (url, start) = (url.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    PgJournal::connect(&url)
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                })
            })
            .collect();
        for replica in opened {
            replica.join().unwrap().unwrap();
        }
        let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        let rows = client
            .query("SELECT version FROM moot_schema", &[])
            .unwrap();
        assert_eq!(rows.len(), 1, "one version row");
        let version: i64 = rows[0].get(0);
        assert!(version >= 15, "every step applied: {version}");
    }
}
