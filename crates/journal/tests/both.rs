//! The journal's behaviour that is not SQLite's own, run on both journals: each scenario
//! takes the one handle every command holds (`Store`) on a SQLite file and on a real
//! PostgreSQL server the test starts itself, with a raw connection to each for what a
//! scenario must break by hand. (What is SQLite's own, its WAL, its connections, its group
//! commit and its files, is tested beside it in `src/store`.)

#[path = "../../../tests/support/postgres.rs"]
mod server;

mod common;

use common::debate;

use moot_domain::debate::{Confidence, DebateStatus, Event, Phase, Stage, Turn, TurnKey};
use moot_journal::store::{
    AuditKind, AuditPlace, Entry, Store, StoreError, StoredSynthesis, sha256_hex,
};
use server::Postgres;

/// A raw connection beside a journal, for breaking it as a person or a bug might.
enum Raw {
    Sqlite(rusqlite::Connection),
    Postgres(postgres::Client),
}

impl Raw {
    /// Runs the statements given for this journal's dialect.
    fn run(&mut self, sqlite: &str, postgres: &str) {
        match self {
            Raw::Sqlite(connection) => connection.execute_batch(sqlite).unwrap(),
            Raw::Postgres(client) => client.batch_execute(postgres).unwrap(),
        }
    }

    /// Sets every audit body to `bytes`.
    fn set_audit_bodies(&mut self, bytes: &[u8]) {
        match self {
            Raw::Sqlite(connection) => {
                connection
                    .execute("UPDATE audit SET body = ?1", [bytes])
                    .unwrap();
            }
            Raw::Postgres(client) => {
                client
                    .execute("UPDATE audit SET body = $1", &[&bytes])
                    .unwrap();
            }
        }
    }
}

/// One journal of each kind, each with its raw connection and a name for messages.
struct Journals {
    dir: tempfile::TempDir,
    _server: Option<Postgres>,
    /// The PostgreSQL journal's URL.
    url: Option<String>,
    each: Vec<(&'static str, Store, Raw)>,
}

/// A SQLite journal in a new file and, unless `MOOT_TEST_POSTGRES=skip` says there is no
/// server here (printed), one on a new PostgreSQL server.
fn journals() -> Journals {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("moot.db");
    let sqlite = Store::open(&path).unwrap();
    let mut each = vec![(
        "SQLite",
        sqlite,
        Raw::Sqlite(rusqlite::Connection::open(&path).unwrap()),
    )];
    let server = Postgres::start();
    let url = server.as_ref().map(Postgres::database);
    if let Some(url) = &url {
        let pg = Store::connect(url, &dir.path().join("beside.db")).unwrap();
        let raw = postgres::Client::connect(url, postgres::NoTls).unwrap();
        each.push(("PostgreSQL", pg, Raw::Postgres(raw)));
    }
    Journals {
        dir,
        _server: server,
        url,
        each,
    }
}

fn place() -> AuditPlace {
    AuditPlace {
        round: 1,
        phase: "argument".into(),
        seat: "A".into(),
        attempt: 1,
        provider: "openai".into(),
        model: "m".into(),
    }
}

/// A synthesis written again replaces the searchable text of the first, which no longer
/// matches.
#[test]
fn a_synthesis_written_again_replaces_what_search_finds() {
    for (name, store, _) in journals().each {
        store.create_debate(&debate("DEB-synth001")).unwrap();
        let written = |markdown: &str| StoredSynthesis {
            markdown: markdown.into(),
            data: serde_json::json!({}),
            confidence: Confidence::High,
            path: None,
            follow_up_path: None,
            section: None,
        };
        let synthesis_hits = |word: &str| {
            store
                .search(word, 10)
                .unwrap()
                .into_iter()
                .filter(|hit| hit.kind == "synthesis")
                .count()
        };
        store
            .save_synthesis("DEB-synth001", &written("Choose quokkas for the cache"))
            .unwrap();
        assert_eq!(synthesis_hits("quokkas"), 1, "{name}");
        store
            .save_synthesis("DEB-synth001", &written("Choose wombats for the cache"))
            .unwrap();
        assert_eq!(
            synthesis_hits("quokkas"),
            0,
            "{name}: the first still matches"
        );
        assert_eq!(synthesis_hits("wombats"), 1, "{name}");
    }
}

/// Numbers come back bit for bit (a re-run must compute what the live run computed): a
/// turn's confidence and the scores in its data.
#[test]
fn numbers_survive_the_journal_bit_for_bit() {
    for (name, store, _) in journals().each {
        store.create_debate(&debate("DEB-floats01")).unwrap();
        let values = [0.999_200_000_000_000_1, 0.1 + 0.2, 1.0 / 3.0, 5e-324];
        for (n, value) in values.iter().enumerate() {
            let mut turn =
                Turn::pending(TurnKey::new(1, Phase::Argument, format!("S{n}")), "p", "m");
            turn.confidence = Some(*value);
            turn.data = Some(serde_json::json!({"score": value}));
            store.record_turn("DEB-floats01", &turn).unwrap();
        }
        for (turn, value) in store.turns("DEB-floats01").unwrap().iter().zip(values) {
            assert_eq!(
                turn.confidence.unwrap().to_bits(),
                value.to_bits(),
                "{name}"
            );
            let score = turn.data.as_ref().unwrap()["score"].as_f64().unwrap();
            assert_eq!(score.to_bits(), value.to_bits(), "{name}");
        }
    }
}

/// Entries appended together land together, each chained, the audit body redacted; a batch
/// that fails part-way leaves nothing of itself behind.
#[test]
fn entries_appended_together_are_all_written_and_chained_or_none_is() {
    for (name, store, _) in journals().each {
        store.create_debate(&debate("DEB-append01")).unwrap();
        let event = Event::Notice {
            message: "the key sk-abcdefghijklmnopqrstuvwx stays out".into(),
        };
        let body = serde_json::json!({"said": "sk-abcdefghijklmnopqrstuvwx"});
        let stage = Stage::Synthesising;
        let entries = [
            Entry::Event(&event),
            Entry::Audit {
                kind: AuditKind::Event,
                place: &place(),
                body: &body,
                keep_body: true,
            },
            Entry::Stage(&stage),
        ];
        store.append("DEB-append01", &entries).unwrap();
        assert_eq!(
            store.events_after("DEB-append01", 0).unwrap().len(),
            1,
            "{name}"
        );
        let audit = store.audit("DEB-append01").unwrap();
        assert_eq!(audit.len(), 1, "{name}");
        assert!(audit[0].damage.is_none(), "{name}");
        assert!(
            !audit[0]
                .body
                .as_ref()
                .unwrap()
                .to_string()
                .contains("sk-abc"),
            "{name}"
        );
        assert_eq!(
            store.debate("DEB-append01").unwrap().stage,
            Some(Stage::Synthesising),
            "{name}"
        );
        let chain = store.check_chain("DEB-append01").unwrap();
        assert!(chain.holds(), "{name}: {:?}", chain.problem);
        let before = chain.entries;
        // An unknown debate breaks the batch: nothing of it is kept.
        assert!(store.append("DEB-nosuch001", &entries).is_err(), "{name}");
        assert_eq!(
            store.check_chain("DEB-append01").unwrap().entries,
            before,
            "{name}"
        );
        assert!(
            store.events_after("DEB-nosuch001", 0).unwrap().is_empty(),
            "{name}"
        );
    }
}

/// A debate's ending is one write: its closing event and the status in its row, both or
/// neither; a journal that refuses the event keeps the status it had.
#[test]
fn a_debates_closing_event_and_its_status_are_written_together() {
    for (name, store, mut raw) in journals().each {
        let id = "DEB-ending01";
        store.create_debate(&debate(id)).unwrap();
        let closing = Event::DebateCompleted {
            id: id.into(),
            status: DebateStatus::Completed,
        };
        let ending = [
            Entry::Status {
                status: DebateStatus::Completed,
                error: None,
            },
            Entry::Event(&closing),
        ];
        raw.run(
            "CREATE TRIGGER refuse BEFORE INSERT ON events
             BEGIN SELECT RAISE(ABORT, 'refused'); END;",
            "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS
                 $$ BEGIN RAISE EXCEPTION 'refused'; END $$;
             CREATE TRIGGER refuse BEFORE INSERT ON events
                 FOR EACH ROW EXECUTE FUNCTION refuse();",
        );
        assert!(store.append(id, &ending).is_err(), "{name}");
        let stored = store.debate(id).unwrap();
        assert_ne!(stored.status, DebateStatus::Completed, "{name}");
        assert!(stored.finished_at.is_none(), "{name}");
        raw.run("DROP TRIGGER refuse", "DROP TRIGGER refuse ON events");
        store.append(id, &ending).unwrap();
        let stored = store.debate(id).unwrap();
        assert_eq!(stored.status, DebateStatus::Completed, "{name}");
        assert!(stored.finished_at.is_some(), "{name}");
        let events = store.events_after(id, 0).unwrap();
        assert_eq!(events.last().map(|(_, e)| e), Some(&closing), "{name}");
    }
}

/// Appends from many threads at once each land once, in each debate's order, and every
/// debate's chain holds.
#[test]
fn appends_from_many_debates_at_once_each_land_once_in_order() {
    for (name, store, _) in journals().each {
        let ids: Vec<String> = (0..8).map(|i| format!("DEB-together{i}")).collect();
        for id in &ids {
            store.create_debate(&debate(id)).unwrap();
        }
        std::thread::scope(|scope| {
            for id in &ids {
                let store = store.clone();
                scope.spawn(move || {
                    for n in 0..25 {
                        let event = Event::Notice {
                            message: format!("{id} {n}"),
                        };
                        let body = serde_json::json!({"n": n});
                        let entries = [
                            Entry::Event(&event),
                            Entry::Audit {
                                kind: AuditKind::Event,
                                place: &place(),
                                body: &body,
                                keep_body: true,
                            },
                        ];
                        store.append(id, &entries).unwrap();
                    }
                });
            }
        });
        for id in &ids {
            let said: Vec<String> = store
                .events_after(id, 0)
                .unwrap()
                .into_iter()
                .map(|(_, event)| match event {
                    Event::Notice { message } => message,
                    other => panic!("{other:?}"),
                })
                .collect();
            let expected: Vec<String> = (0..25).map(|n| format!("{id} {n}")).collect();
            assert_eq!(said, expected, "{name}");
            assert_eq!(store.audit(id).unwrap().len(), 25, "{name}");
            let chain = store.check_chain(id).unwrap();
            assert!(chain.holds(), "{name} {id}: {:?}", chain.problem);
            // The debate's own row, then 25 events and 25 audit entries.
            assert_eq!(chain.entries, 51, "{name}");
        }
    }
}

/// An audit body is kept compressed with its hash and its secrets redacted, or its hash
/// alone; one changed after the fact is reported as not matching its hash.
#[test]
fn audit_bodies_round_trip_redacted_and_a_changed_one_is_reported() {
    moot_domain::sanitize::register_secret("audit-secret-0123456789");
    for (name, store, mut raw) in journals().each {
        store.create_debate(&debate("DEB-audit1")).unwrap();
        let body = serde_json::json!({"system": "be brief", "key": "audit-secret-0123456789"});
        store
            .record_audit("DEB-audit1", AuditKind::Request, &place(), &body, true)
            .unwrap();
        store
            .record_audit("DEB-audit1", AuditKind::Response, &place(), &body, false)
            .unwrap();
        let entries = store.audit("DEB-audit1").unwrap();
        assert_eq!(entries.len(), 2, "{name}");
        let kept = &entries[0];
        assert_eq!(kept.kind, AuditKind::Request, "{name}");
        assert_eq!(kept.body.as_ref().unwrap()["key"], "[redacted]", "{name}");
        assert_eq!(
            kept.sha256,
            sha256_hex(&kept.body.as_ref().unwrap().to_string()),
            "{name}"
        );
        assert!(kept.damage.is_none(), "{name}");
        assert_eq!(entries[1].sha256, kept.sha256, "{name}: the same hash");
        assert!(entries[1].body.is_none(), "{name}: no body");

        let mut forged =
            flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut forged, br#"{"key":"[redacted]","system":"be long"}"#)
            .unwrap();
        raw.set_audit_bodies(&forged.finish().unwrap());
        assert_eq!(
            store.audit("DEB-audit1").unwrap()[0].damage.as_deref(),
            Some("the stored body does not match its hash"),
            "{name}"
        );
    }
}

/// A journal written by a newer moot (a schema version past every migration this one knows)
/// is refused, saying so, and left as it is.
#[test]
fn a_newer_schema_is_refused() {
    let journals = journals();
    for (name, store, mut raw) in journals.each {
        raw.run(
            "PRAGMA user_version = 99",
            "UPDATE moot_schema SET version = 99",
        );
        let opened = match (&raw, &journals.url) {
            (Raw::Postgres(_), Some(url)) => {
                Store::connect(url, &journals.dir.path().join("beside.db"))
            }
            _ => Store::open(store.path()),
        };
        let error = opened
            .err()
            .unwrap_or_else(|| panic!("{name}: a newer journal was opened"));
        assert!(
            matches!(error, StoreError::TooNew { found: 99, .. }),
            "{name}: {error}"
        );
    }
}
