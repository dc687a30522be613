//! The journal on a real PostgreSQL server the test starts itself (`initdb` and `pg_ctl` into
//! a temporary directory, a Unix socket), beside the same calls on SQLite.

#[path = "../../../tests/support/postgres.rs"]
mod server;

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
        "/{database}?host={}",
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

use moot_domain::debate::{Debate, DebateStatus, Event, Phase, Stage, Turn, TurnKey, TurnStatus};
use moot_journal::store::{PgJournal, Store};

fn debate(id: &str) -> Debate {
    Debate {
        id: id.into(),
        question: "Should we cache sessions in Redis?".into(),
        protocol: "moderated".into(),
        status: DebateStatus::Running,
        config: serde_json::json!({"max_rounds": 2}),
        seats: Vec::new(),
        created_at: "2026-12-03T00:00:00Z".into(),
        updated_at: "2026-12-03T00:00:00Z".into(),
        finished_at: None,
        confidence: None,
        error: None,
        stage: None,
    }
}

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
