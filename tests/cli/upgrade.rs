//! A journal written by the release before the floor plan (`tests/fixtures/journal-414e6bf`):
//! what it completed still verifies from its journal, and what it paused or left interrupted
//! resumes to the end under the current moot.

use crate::*;

/// The fixture's debates by status and how they stopped, as `moot list --json` reads them.
fn fixture_debates(home: &Home) -> Vec<(String, String, String)> {
    let output = home.run(None, &["list", "--json", "--limit", "100"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let rows: Value = serde_json::from_slice(&output.stdout).unwrap();
    rows.as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let field = |name: &str| row[name].as_str().unwrap_or_default().to_string();
            (field("id"), field("status"), field("protocol"))
        })
        .collect()
}

#[test]
fn a_journal_from_the_release_before_verifies_and_resumes() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    let journal = home.path().join("moot-home");
    std::fs::create_dir_all(&journal).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/journal-414e6bf");
    std::fs::copy(fixture.join("moot.db"), journal.join("moot.db")).unwrap();
    let debates = fixture_debates(&home);
    let count = |status: &str| debates.iter().filter(|(_, s, _)| s == status).count();
    assert_eq!(
        (count("completed"), count("paused"), count("interrupted")),
        (5, 7, 2),
        "{debates:?}"
    );
    let mut protocols: Vec<&str> = debates
        .iter()
        .filter(|(_, s, _)| s == "completed")
        .map(|(_, _, p)| p.as_str())
        .collect();
    protocols.sort();
    assert_eq!(
        protocols,
        ["arena", "code", "dialogue", "moderated", "panel"]
    );

    // Completed, and paused at a gate: the journal alone reproduces how each stands.
    let gate_paused: Vec<&String> = debates
        .iter()
        .filter(|(id, s, _)| {
            s == "paused" && show_json(&home, id)["stage"].to_string().contains("gate")
        })
        .map(|(id, _, _)| id)
        .collect();
    assert_eq!(gate_paused.len(), 4, "{debates:?}");
    for (id, status, protocol) in &debates {
        if status != "completed" && !gate_paused.contains(&id) {
            continue;
        }
        let output = home.run(None, &["audit", id, "--verify"]);
        let text = String::from_utf8_lossy(&output.stdout).to_string();
        assert_eq!(
            output.status.code(),
            Some(0),
            "{protocol} {id}: {text}{}",
            stderr(&output)
        );
        assert!(
            text.contains("the journal alone reproduces"),
            "{protocol} {id}: {text}"
        );
    }

    // Paused at a checkpoint, or interrupted: resumed, each runs to the end.
    for (id, status, protocol) in &debates {
        if status == "completed" || gate_paused.contains(&id) {
            continue;
        }
        // The journal names the server it was made on, long gone: the resume names this one.
        let output = home.run(
            None,
            &[
                "resume",
                id,
                "--headless",
                "--no-checkpoints",
                "--provider",
                "openai",
                "--base-url",
                &server.openai_base(),
            ],
        );
        assert_eq!(
            output.status.code(),
            Some(0),
            "{protocol} {id} ({status}): {}",
            stderr(&output)
        );
        assert_eq!(
            show_json(&home, id)["status"],
            "completed",
            "{protocol} {id}"
        );
    }
}
