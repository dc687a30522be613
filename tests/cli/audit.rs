//! The audit trail: `audit --verify` reproduces every protocol from its journal and fails loudly on a changed one.

use crate::*;

/// Runs one headless debate and returns its id.
pub(crate) fn finished_debate(home: &Home, server: &StandIn, args: &[&str]) -> String {
    let output = home.run(Some(server), args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    of_type(&events(&output), "debate_completed")[0]["id"]
        .as_str()
        .unwrap()
        .to_string()
}

pub(crate) fn audit(home: &Home, args: &[&str]) -> (Option<i32>, String) {
    let output = home.run(None, &[&["audit"], args].concat());
    let mut text = String::from_utf8_lossy(&output.stdout).to_string();
    text.push_str(&stderr(&output));
    (output.status.code(), text)
}

/// Every protocol's debate is reproduced by re-running it over the journal alone, and the
/// trail holds every request as sent and every reply, hashed.
#[test]
fn audit_verify_reproduces_every_protocol_from_its_journal() {
    let server = StandIn::start_in_background(converging_panel());
    let home = Home::new();
    // Lessons on: the record cites what a debate was given, and the re-run must agree.
    home.write_config(
        "[retry]\nmax_attempts = 3\nbase_delay_ms = 5\nmax_delay_ms = 50\n[lessons]\nenabled = true\n",
    );
    dialogue_codebase(&home);
    let runs: [&[&str]; 4] = [
        &[
            "--headless",
            "--no-checkpoints",
            "--max-rounds",
            "2",
            "--vote",
            "borda",
            QUESTION,
        ],
        &[
            "--headless",
            "--no-checkpoints",
            "--protocol",
            "panel",
            "--option",
            "A: Local-first sync",
            "--option",
            "B: Online only",
            PANEL_QUESTION,
        ],
        &[
            "--headless",
            "--no-checkpoints",
            "--protocol",
            "dialogue",
            "--max-rounds",
            "1",
            DIALOGUE_TOPIC,
        ],
        &[
            "--headless",
            "--no-checkpoints",
            "--protocol",
            "arena",
            "--rounds",
            "3",
            "--score",
            "--topology",
            "star",
            "Adopt a 4-day work week",
        ],
    ];
    for args in runs {
        let id = finished_debate(&home, &server, args);
        let (code, text) = audit(&home, &[&id, "--verify"]);
        assert_eq!(code, Some(0), "{args:?}: {text}");
        assert!(text.contains("ok   outcome"), "{text}");
        assert!(text.contains("the journal alone reproduces"), "{text}");
        // The re-run reads no clock that matters: days later or long before, it agrees.
        for shift in ["+3d", "-400d"] {
            let shifted = home
                .command_at_shifted_clock(shift, None)
                .args(["audit", &id, "--verify"])
                .stdin(Stdio::null())
                .output()
                .unwrap();
            assert_eq!(
                shifted.status.code(),
                Some(0),
                "{args:?} at {shift}: {}{}",
                String::from_utf8_lossy(&shifted.stdout),
                stderr(&shifted)
            );
        }
        let (code, json) = audit(&home, &[&id, "--json"]);
        assert_eq!(code, Some(0), "{json}");
        let trail: Value = serde_json::from_str(&json).unwrap();
        let entries = trail["entries"].as_array().unwrap();
        let requests: Vec<&Value> = entries.iter().filter(|e| e["kind"] == "request").collect();
        let responses = entries.iter().filter(|e| e["kind"] == "response").count();
        assert_eq!(requests.len(), responses, "{args:?}");
        // One request per model call the stand-in saw… across all debates so far.
        assert!(!requests.is_empty());
        let first = &requests[0]["body"];
        assert!(first["system"].as_str().unwrap().len() > 20, "{first}");
        assert!(first["messages"][0]["content"].is_string(), "{first}");
        assert_eq!(requests[0]["sha256"].as_str().unwrap().len(), 64);
    }
    // The votes of the moderated debate are in its trail.
    let moderated = home.run(None, &["list", "--json"]);
    let list: Value = serde_json::from_slice(&moderated.stdout).unwrap();
    let first_id = list.as_array().unwrap().last().unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, text) = audit(&home, &[&first_id]);
    assert!(text.contains("event    votes"), "{text}");
    assert!(
        text.contains("[system]") && text.contains(QUESTION),
        "{text}"
    );
    let chat_requests = server
        .seen()
        .iter()
        .filter(|s| s.path.ends_with("/chat/completions"))
        .count();
    assert_eq!(
        chat_requests,
        {
            let all: usize = list
                .as_array()
                .unwrap()
                .iter()
                .map(|d| {
                    let (_, json) = audit(&home, &[d["id"].as_str().unwrap(), "--json"]);
                    let trail: Value = serde_json::from_str(&json).unwrap();
                    trail["entries"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter(|e| e["kind"] == "request")
                        .count()
                })
                .sum();
            all
        },
        "every request the server saw is in a trail"
    );
}

/// A trail whose journal was changed after the fact fails loudly: a forged body by its hash,
/// a missing turn by the request the re-run had to make, and `audit = false` keeps hashes only.
#[test]
fn audit_verify_fails_loudly_on_a_changed_journal() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    home.write_config("audit = false\n");
    let id = finished_debate(
        &home,
        &server,
        &[
            "--headless",
            "--no-checkpoints",
            "--max-rounds",
            "2",
            QUESTION,
        ],
    );
    let (code, json) = audit(&home, &[&id, "--json"]);
    assert_eq!(code, Some(0));
    let trail: Value = serde_json::from_str(&json).unwrap();
    assert!(
        trail["entries"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["body"].is_null() && e["sha256"].as_str().unwrap().len() == 64)
    );
    let (code, text) = audit(&home, &[&id, "--verify"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("kept as hashes only"), "{text}");

    home.write_config("");
    let id = finished_debate(
        &home,
        &server,
        &[
            "--headless",
            "--no-checkpoints",
            "--max-rounds",
            "2",
            QUESTION,
        ],
    );
    let journal = rusqlite::Connection::open(home.database()).unwrap();
    // A forged reply body.
    let forged = {
        use std::io::Write as _;
        let mut encoder =
            flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(br#"{"text":"forged"}"#).unwrap();
        encoder.finish().unwrap()
    };
    journal
        .execute(
            "UPDATE audit SET body = ?1 WHERE seq = (SELECT max(seq) FROM audit WHERE debate_id = ?2 AND kind = 'response')",
            rusqlite::params![forged, id],
        )
        .unwrap();
    // A turn taken out of the journal.
    journal
        .execute(
            "DELETE FROM turns WHERE debate_id = ?1 AND phase = 'synthesis'",
            rusqlite::params![id],
        )
        .unwrap();
    drop(journal);
    let (code, text) = audit(&home, &[&id, "--verify"]);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("FAIL hashes") && text.contains("does not match its hash"),
        "{text}"
    );
    assert!(
        text.contains("FAIL journal") && text.contains("synthesis moderator"),
        "{text}"
    );
    assert!(text.contains("DIVERGED"), "{text}");
    // A running or unknown debate is a usage error.
    let (code, text) = audit(&home, &["DEB-nope", "--verify"]);
    assert_eq!(code, Some(2), "{text}");
}

/// Every request body the server saw from the `from`-th on, as text.
pub(crate) fn requests_since(server: &StandIn, from: usize) -> Vec<String> {
    server
        .seen()
        .iter()
        .skip(from)
        .filter(|s| s.path.ends_with("/chat/completions"))
        .map(|s| s.body.to_string())
        .collect()
}
