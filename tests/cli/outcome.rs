//! One outcome shape for every protocol (design note 004): `outcome {winner, method,
//! confidence}`, `final_consensus_score` and `initiated_by` in `show --json`, `list --json`
//! and the record, beside each protocol's own fields.

use crate::*;

/// The uniform outcome of a row of `list --json` or a `show --json` document, checked for its
/// shape; returned for the caller's own checks.
fn uniform(value: &Value, what: &str) -> (Option<String>, String, String, f64) {
    let outcome = &value["outcome"];
    let method = outcome["method"]
        .as_str()
        .unwrap_or_else(|| panic!("{what}: no method in {value}"));
    assert!(!method.trim().is_empty(), "{what}: an empty method");
    let confidence = outcome["confidence"]
        .as_str()
        .unwrap_or_else(|| panic!("{what}: {outcome}"));
    assert!(
        ["High", "Medium", "Low", "Requires input"].contains(&confidence),
        "{what}: {confidence}"
    );
    let score = value["final_consensus_score"]
        .as_f64()
        .unwrap_or_else(|| panic!("{what}: no final_consensus_score"));
    assert!((0.0..=1.0).contains(&score), "{what}: {score}");
    (
        outcome["winner"].as_str().map(str::to_string),
        method.to_string(),
        confidence.to_string(),
        score,
    )
}

#[test]
fn every_protocol_reads_its_result_into_one_outcome_shape_beside_its_own() {
    let home = Home::new();
    let journal = home.path().join("moot-home");
    std::fs::create_dir_all(&journal).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/journal-414e6bf");
    std::fs::copy(fixture.join("moot.db"), journal.join("moot.db")).unwrap();
    let output = home.run(None, &["list", "--json", "--limit", "100"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let rows: Value = serde_json::from_slice(&output.stdout).unwrap();
    let mut seen = Vec::new();
    for row in rows.as_array().unwrap() {
        let (id, protocol) = (
            row["id"].as_str().unwrap(),
            row["protocol"].as_str().unwrap(),
        );
        if row["status"] != "completed" {
            assert!(
                row.get("outcome").is_none(),
                "{id}: no result, no outcome: {row}"
            );
            continue;
        }
        let listed = uniform(row, id);
        let shown = show_json(&home, id);
        assert_eq!(uniform(&shown, id), listed, "{id}: list and show agree");
        // The journal from before moot recorded who started a debate says nothing of it.
        assert!(row.get("initiated_by").is_none(), "{row}");
        let (winner, method, confidence, _) = listed;
        assert_eq!(
            confidence,
            shown["synthesis"]["confidence"].as_str().unwrap(),
            "{id}: the confidence is the journal's"
        );
        match protocol {
            "panel" => {
                // 001's own outcome stays RECOMMENDED or CONTESTED, beside the uniform one.
                let own = shown["debate_result"]["outcome"]
                    .as_str()
                    .unwrap_or("RECOMMENDED");
                assert!(["RECOMMENDED", "CONTESTED"].contains(&own), "{own}");
                assert!(
                    method.starts_with("consensus at")
                        || method.contains("choice")
                        || method.contains("contested"),
                    "{method}"
                );
            }
            "dialogue" => {
                assert!(
                    winner.as_deref().is_none_or(|w| w == "PRO" || w == "OPP"),
                    "{winner:?}"
                );
                assert_eq!(
                    winner.as_deref().unwrap_or("DRAW"),
                    shown["dialogue_verdict"]["computed"]["winner"]
                        .as_str()
                        .unwrap()
                );
            }
            "code" => assert!(
                winner.as_deref().is_none_or(|w| w.starts_with("version ")),
                "{winner:?}"
            ),
            _ => {}
        }
        seen.push(protocol.to_string());
    }
    seen.sort();
    seen.dedup();
    assert_eq!(seen, ["arena", "code", "dialogue", "moderated", "panel"]);
}

#[test]
fn a_new_debate_records_who_started_it_and_its_record_carries_the_result_line() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    let question = "Should we cache sessions in Redis or PostgreSQL?";
    let run = |extra: &[&str]| {
        let mut args = vec!["--headless", "--no-checkpoints", "--max-rounds", "1"];
        args.extend_from_slice(extra);
        args.push(question);
        let output = home.run(Some(&server), &args);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        of_type(&events(&output), "debate_started")[0]["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let headless = run(&[]);
    let agent = run(&["--initiated-by", "agent:ci-bot"]);
    let shown = show_json(&home, &headless);
    assert_eq!(shown["initiated_by"], "stdin");
    let (_, method, confidence, score) = uniform(&shown, &headless);
    assert_eq!(method, "the moderator's synthesis");
    assert_eq!(show_json(&home, &agent)["initiated_by"], "agent:ci-bot");
    // The record's closing line says the same as the JSON.
    let record = shown["synthesis"]["markdown"].as_str().unwrap();
    let line = format!(
        "**Result:** winner {} · method {method} · confidence {confidence} · final consensus score {score:.2} · initiated by stdin",
        shown["outcome"]["winner"].as_str().unwrap()
    );
    assert!(record.contains(&line), "{line}\nnot in\n{record}");
    let file = home
        .decisions()
        .into_iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .find(|text| text.contains(&headless))
        .unwrap();
    assert!(file.contains(&line), "{file}");
    // The line is moot's, beside the protocol's document: the journal still reproduces it.
    let audit = home.run(None, &["audit", &headless, "--verify"]);
    assert_eq!(
        audit.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&audit.stdout)
    );
    let listed: Value =
        serde_json::from_slice(&home.run(None, &["list", "--json"]).stdout).unwrap();
    let row = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == agent.as_str())
        .unwrap();
    assert_eq!(row["initiated_by"], "agent:ci-bot");
    uniform(row, &agent);
    // Who else starts a debate is moot's to say, not a flag's.
    for claimed in ["person", "server", "agent:", "robot"] {
        let output = home.run(
            Some(&server),
            &["--headless", "--initiated-by", claimed, question],
        );
        assert_eq!(output.status.code(), Some(2), "{claimed}");
        assert!(
            stderr(&output).contains("agent:NAME") || stderr(&output).contains("agent name"),
            "{}",
            stderr(&output)
        );
    }
}
