//! The journal on PostgreSQL from the command line (issue 73): a debate run with `--journal
//! postgres://…` (or `[journal] url`) lands on the server, not in the local SQLite file, and
//! every command that reads the journal reads it there; a URL moot cannot open is refused.

use crate::postgres_server::Postgres;
use crate::*;

/// A headless debate journaled on a real PostgreSQL server: listed, shown, searched and
/// verified (its chain and its re-run from the journal alone) through `--journal`, and through
/// `[journal] url` in config; the local journal stays empty.
#[test]
fn a_debate_journaled_on_postgres_is_listed_shown_and_verified_there() {
    let Some(server) = Postgres::start() else {
        return;
    };
    let url = server.database();
    let stand_in = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    let output = home.run(
        Some(&stand_in),
        &[
            "--headless",
            "--no-checkpoints",
            "--max-rounds",
            "2",
            "--journal",
            &url,
            QUESTION,
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let id = events(&output)[0]["id"].as_str().unwrap().to_string();

    let listed: Value = serde_json::from_slice(
        &home
            .run(None, &["list", "--json", "--journal", &url])
            .stdout,
    )
    .unwrap();
    assert_eq!(listed[0]["id"], id.as_str(), "{listed}");
    assert_eq!(listed[0]["status"], "completed");
    let shown = home.run(None, &["show", &id, "--json", "--journal", &url]);
    assert!(shown.status.success(), "{}", stderr(&shown));
    let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert!(
        shown["turns"].as_array().is_some_and(|t| t.len() >= 4),
        "{shown}"
    );
    let found = home.run(None, &["search", "Redis", "--json", "--journal", &url]);
    assert!(
        String::from_utf8_lossy(&found.stdout).contains(&id),
        "{}",
        String::from_utf8_lossy(&found.stdout)
    );
    let verified = home.run(None, &["audit", &id, "--verify", "--journal", &url]);
    assert_eq!(
        verified.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&verified.stdout),
        stderr(&verified)
    );

    // Nothing of it in the local journal.
    let local: Value = serde_json::from_slice(&home.run(None, &["list", "--json"]).stdout).unwrap();
    assert_eq!(local, serde_json::json!([]), "{local}");

    // `[journal] url` in config does what the flag does.
    home.write_config(&format!("[journal]\nurl = \"{url}\"\n"));
    let listed: Value =
        serde_json::from_slice(&home.run(None, &["list", "--json"]).stdout).unwrap();
    assert_eq!(listed[0]["id"], id.as_str());

    // A URL moot cannot open is a usage error naming where it came from, with nothing run.
    home.write_config("[journal]\nurl = \"mysql://root:hunter2@db/moot\"\n");
    let refused = home.run(None, &["list"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("[journal] url in"),
        "{}",
        stderr(&refused)
    );
    assert!(
        stderr(&refused).contains("postgres://"),
        "{}",
        stderr(&refused)
    );
    assert!(
        !stderr(&refused).contains("hunter2"),
        "{}",
        stderr(&refused)
    );
}

/// `moot journal copy`: a debate run on the local SQLite journal is copied to PostgreSQL, each
/// debate's chain checked there (a line each), verified there by `audit --verify`, and copied
/// back to a new SQLite file; a second copy finds it there; a target moot cannot write into is
/// refused before anything is copied.
#[test]
fn journal_copy_moves_every_debate_to_postgres_and_back_verified() {
    let Some(server) = Postgres::start() else {
        return;
    };
    let url = server.database();
    let stand_in = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    let output = home.run(
        Some(&stand_in),
        &[
            "--headless",
            "--no-checkpoints",
            "--max-rounds",
            "1",
            QUESTION,
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let id = events(&output)[0]["id"].as_str().unwrap().to_string();

    let copied = home.run(None, &["journal", "copy", "--to", &url]);
    let said = String::from_utf8_lossy(&copied.stdout).to_string();
    assert_eq!(copied.status.code(), Some(0), "{said}{}", stderr(&copied));
    assert!(
        said.contains(&format!("ok   {id}  chain verified at sha256:")),
        "{said}"
    );
    assert!(said.contains("1 copied to postgres://"), "{said}");
    assert!(!said.contains(":hunter2"), "{said}");
    let verified = home.run(None, &["audit", &id, "--verify", "--journal", &url]);
    assert_eq!(
        verified.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&verified.stdout)
    );
    let again = home.run(None, &["journal", "copy", "--to", &url]);
    assert!(
        String::from_utf8_lossy(&again.stdout).contains(&format!("--   {id}  there already")),
        "{}",
        String::from_utf8_lossy(&again.stdout)
    );
    assert!(String::from_utf8_lossy(&again.stdout).contains("1 there already"));

    let back = home.path().join("back.db");
    let returned = home.run(
        None,
        &[
            "journal",
            "copy",
            "--to",
            back.to_str().unwrap(),
            "--journal",
            &url,
        ],
    );
    assert_eq!(
        returned.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&returned.stdout),
        stderr(&returned)
    );
    assert!(back.is_file());
    for (to, says) in [
        (back.to_str().unwrap().to_string(), "is there already"),
        ("mysql://root:hunter2@db/moot".to_string(), "postgres://"),
    ] {
        let refused = home.run(None, &["journal", "copy", "--to", &to]);
        assert_eq!(refused.status.code(), Some(2), "{to}: {}", stderr(&refused));
        assert!(stderr(&refused).contains(says), "{}", stderr(&refused));
        assert!(
            !stderr(&refused).contains("hunter2"),
            "{}",
            stderr(&refused)
        );
    }
}
