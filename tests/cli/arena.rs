//! The arena end to end, and every debate through the arena directory layout: export, import, outside and person seats.

use crate::*;

#[test]
fn any_debate_exports_as_an_arena_directory_and_imports_back_the_same() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    dialogue_codebase(&home);
    let output = home.run(
        Some(&server),
        &[
            "--headless",
            "--no-checkpoints",
            "--protocol",
            "dialogue",
            "--max-rounds",
            "1",
            DIALOGUE_TOPIC,
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let id = of_type(&events(&output), "debate_started")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let out = home.path().join("arena-out");
    let export = home.run(
        None,
        &[
            "export",
            &id,
            "--format",
            "arena",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(export.status.success(), "{}", stderr(&export));
    let dir = out.join(&id);
    for file in [
        "manifest.json",
        "protocol.md",
        "personas/pragmatic_engineer_focused_on_delivery_and_simplicity_persona.json",
        "summary.md",
    ] {
        assert!(dir.join(file).is_file(), "{file} missing");
    }
    let transcript: Vec<String> = std::fs::read_dir(dir.join("transcript"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        transcript.len(),
        6,
        "opening, one round and closing, two sides: {transcript:?}"
    );
    assert!(
        transcript
            .iter()
            .any(|f| f.starts_with("turn_1_pragmatic_engineer") && f.ends_with(".json")),
        "{transcript:?}"
    );
    // Seed review 002/003 #18: a seat of a debate of another protocol is found by its
    // journal id, and a seat that is not there is listed by that id.
    let persona = home.run(None, &["arena", "persona", &id, "PRO", "--json"]);
    assert!(persona.status.success(), "{}", stderr(&persona));
    let persona: serde_json::Value = serde_json::from_slice(&persona.stdout).unwrap();
    assert!(
        persona["agent_id"]
            .as_str()
            .unwrap()
            .starts_with("pragmatic_engineer"),
        "{persona}"
    );
    let missing = home.run(None, &["arena", "persona", &id, "NOBODY"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        stderr(&missing).contains("PRO (") && stderr(&missing).contains("OPP ("),
        "{}",
        stderr(&missing)
    );
    // Exporting over an existing directory is refused.
    let again = home.run(
        None,
        &[
            "export",
            &id,
            "--format",
            "arena",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(again.status.code(), Some(2));
    let missing = home.run(None, &["export", &id, "--format", "arena"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("--out DIR"));

    // Into another journal, and back out as the same debate.
    let other = Home::new();
    let import = other.run(None, &["import", dir.to_str().unwrap()]);
    assert!(import.status.success(), "{}", stderr(&import));
    assert_same_debate(
        &show_json(&home, &id),
        &show_json(&other, &id),
        "dialogue_verdict",
    );
    // B4: who started it survives the round trip.
    assert_eq!(show_json(&home, &id)["initiated_by"], "stdin");
    assert_eq!(show_json(&other, &id)["initiated_by"], "stdin");
    // Imported twice: refused, the journal untouched.
    let twice = other.run(None, &["import", dir.to_str().unwrap()]);
    assert_eq!(twice.status.code(), Some(2));
    assert!(stderr(&twice).contains("already in the journal"));
    // A replay of the import shows every turn; search finds it.
    let search = other.run(None, &["search", "tower"]);
    assert!(String::from_utf8_lossy(&search.stdout).contains(&id));
}

#[test]
fn a_hand_written_arena_directory_imports_and_bad_ones_are_named() {
    let home = Home::new();
    let dir = home.path().join("DEB-hand0001");
    std::fs::create_dir_all(dir.join("personas")).unwrap();
    std::fs::create_dir_all(dir.join("transcript")).unwrap();
    std::fs::write(dir.join("manifest.json"), r#"{"debate_id": "DEB-hand0001", "topic": "Adopt a 4-day work week", "proposal_ref": "PROP-7", "participants": [], "protocol": "arena-v1", "status": "closed", "created_utc": "2026-11-01T10:00:00Z", "updated_utc": "2026-11-01T11:00:00Z", "moderator_id": "ModeratorAgent", "scoring_info": {"scale": "1-10", "rubric": ["evidence"]}, "owner": "ops team"}"#).unwrap();
    std::fs::write(dir.join("personas/skeptic_persona.json"), r#"{"agent_id": "skeptic", "debate_id": "DEB-hand0001", "role_name": "Skeptic", "stance_summary": "Doubt it", "instructions": "Ask for data", "background_context": "Dream.OS", "favourite_colour": "teal"}"#).unwrap();
    std::fs::write(dir.join("scores.json"), r#"{"debate_id": "DEB-hand0001", "scoring_info": {"scale": "1-10", "rubric": ["evidence"]}, "scores": [{"turn_number": 2, "agent_id": "proponent", "score": 0.7, "reason": "a pilot"}]}"#).unwrap();
    std::fs::write(dir.join("transcript/turn_1_skeptic_20261101T100500Z.json"), r#"{"turn_number": 1, "agent_id": "skeptic", "timestamp_utc": "2026-11-01T10:05:00Z", "argument_text": "Where is the productivity data?", "references": ["data: none yet"], "metadata": {"tone": "dry"}}"#).unwrap();
    std::fs::write(dir.join("transcript/turn_2_proponent_20261101T101000Z.json"), r#"{"turn_number": 2, "agent_id": "proponent", "timestamp_utc": "2026-11-01T10:10:00Z", "argument_text": "The 2022 pilot.", "references": ["turn:1"]}"#).unwrap();
    std::fs::write(dir.join("summary.md"), "# Summary\n\nData first.\n").unwrap();
    let outside = home.path().join("elsewhere.json");
    std::fs::write(&outside, r#"{"turn_number": 9, "agent_id": "skeptic", "timestamp_utc": "t", "argument_text": "SECRET"}"#).unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("transcript/turn_9_skeptic_x.json")).unwrap();
    let import = home.run(None, &["import", dir.to_str().unwrap()]);
    assert!(import.status.success(), "{}", stderr(&import));
    // A linked turn file is not read, and the import says so (seed review 002/003 #20).
    assert!(
        stderr(&import).contains(
            "turn_9_skeptic_x.json: not a plain file (a link or a directory), so not read"
        ),
        "{}",
        stderr(&import)
    );
    let shown = show_json(&home, "DEB-hand0001");
    assert_eq!(shown["protocol"], "arena");
    assert_eq!(shown["status"], "completed");
    assert_eq!(
        shown["seats"].as_array().unwrap().len(),
        2,
        "a seat per persona, and one for the agent without a persona"
    );
    assert_eq!(shown["turns"][1]["content"], "The 2022 pilot.");
    assert_eq!(shown["turns"][0]["data"]["metadata"]["tone"], "dry");

    // Exported again, it reads as it came (seed review 002/003 #5: "unknown fields kept").
    let out = home.path().join("again");
    let export = home.run(
        None,
        &[
            "export",
            "DEB-hand0001",
            "--format",
            "arena",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(export.status.success(), "{}", stderr(&export));
    let json = |path: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(out.join("DEB-hand0001").join(path)).unwrap())
            .unwrap()
    };
    let original = |path: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(dir.join(path)).unwrap()).unwrap()
    };
    assert_eq!(json("manifest.json"), original("manifest.json"));
    assert_eq!(
        json("personas/skeptic_persona.json"),
        original("personas/skeptic_persona.json")
    );
    assert_eq!(json("scores.json"), original("scores.json"));
    let turns: Vec<String> = std::fs::read_dir(out.join("DEB-hand0001/transcript"))
        .unwrap()
        .map(|e| e.unwrap().path().display().to_string())
        .collect();
    let first = turns
        .iter()
        .find(|t| t.contains("turn_1_skeptic"))
        .expect("turn 1");
    let first: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(first).unwrap()).unwrap();
    assert_eq!(
        first,
        original("transcript/turn_1_skeptic_20261101T100500Z.json")
    );

    // Broken directories: a clear error naming the file, nothing journaled.
    let broken = home.path().join("DEB-broken01");
    std::fs::create_dir_all(broken.join("transcript")).unwrap();
    let missing = home.run(None, &["import", broken.to_str().unwrap()]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        stderr(&missing).contains("manifest.json"),
        "{}",
        stderr(&missing)
    );
    std::fs::write(broken.join("manifest.json"), r#"{"debate_id": "DEB-broken01", "topic": "x", "participants": [], "protocol": "arena", "status": "open", "created_utc": "t", "updated_utc": "t"}"#).unwrap();
    std::fs::write(
        broken.join("transcript/turn_1_a_1.json"),
        "{\"turn_number\": 1, \"agent_id\": ",
    )
    .unwrap();
    let torn = home.run(None, &["import", broken.to_str().unwrap()]);
    assert_eq!(torn.status.code(), Some(2));
    assert!(
        stderr(&torn).contains("turn_1_a_1.json"),
        "{}",
        stderr(&torn)
    );
    let list = home.run(None, &["list", "--json"]);
    assert!(!String::from_utf8_lossy(&list.stdout).contains("DEB-broken01"));
}

#[test]
fn a_moderated_debate_and_a_panel_round_trip_through_the_arena_layout_too() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    let other = Home::new();
    for args in [
        vec![
            "--headless",
            "--no-checkpoints",
            "--max-rounds",
            "2",
            QUESTION,
        ],
        vec![
            "--headless",
            "--no-checkpoints",
            "--protocol",
            "panel",
            "--option",
            "A: Ship now",
            "--option",
            "B: Wait",
            PANEL_QUESTION,
        ],
    ] {
        let output = home.run(Some(&server), &args);
        assert!(output.status.success(), "{}", stderr(&output));
        let id = of_type(&events(&output), "debate_created")[0]["id"]
            .as_str()
            .unwrap()
            .to_string();
        let out = home.path().join("arena-out");
        let export = home.run(
            None,
            &[
                "export",
                &id,
                "--format",
                "arena",
                "--out",
                out.to_str().unwrap(),
            ],
        );
        assert!(export.status.success(), "{}", stderr(&export));
        let import = other.run(None, &["import", out.join(&id).to_str().unwrap()]);
        assert!(import.status.success(), "{}", stderr(&import));
        assert_same_debate(
            &show_json(&home, &id),
            &show_json(&other, &id),
            "debate_result",
        );
    }
}

#[test]
fn an_arena_runs_headless_with_scores_moderator_order_and_its_directory_written() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    let output = home.run(
        Some(&server),
        &[
            "--headless",
            "--no-checkpoints",
            "--protocol",
            "arena",
            "--seat",
            "Proponent",
            "--seat",
            "Skeptic",
            "--seat",
            "Ethics Advisor",
            "--rounds",
            "3",
            "--order",
            "moderator",
            "--score",
            "--arena-dir",
            "debates",
            "Adopt a 4-day work week",
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let events = events(&output);
    let id = of_type(&events, "debate_started")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let phases: Vec<String> = of_type(&events, "turn_completed")
        .iter()
        .filter(|e| e["seat"] != "moderator")
        .map(|e| e["phase"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        phases,
        [
            "opening", "opening", "opening", "rebuttal", "rebuttal", "rebuttal", "closing",
            "closing", "closing"
        ]
    );
    let result = show_json(&home, &id)["arena_result"].clone();
    assert_eq!(result["scores"].as_array().unwrap().len(), 9);
    assert!((result["scores"][0]["score"].as_f64().unwrap() - 0.75).abs() < 1e-9);
    assert_eq!(result["picks"].as_array().unwrap().len(), 9);
    // Round 2's order is the moderator's (reversed by the stand-in), not round-robin.
    let round2: Vec<&str> = result["turns"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["round"] == 2)
        .map(|t| t["agent_id"].as_str().unwrap())
        .collect();
    assert_eq!(round2, ["ethics_advisor", "skeptic", "proponent"]);
    let dir = home.path().join("debates").join(&id);
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["status"], "closed");
    assert_eq!(manifest["participants"].as_array().unwrap().len(), 3);
    assert_eq!(manifest["scoring_info"]["rubric"][0], "evidence");
    assert_eq!(
        std::fs::read_dir(dir.join("transcript")).unwrap().count(),
        9
    );
    let scores: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("scores.json")).unwrap()).unwrap();
    assert_eq!(scores["scores"].as_array().unwrap().len(), 9);
    // B5: the exported directory lists each turn's references and tone as the live one does.
    let turns_in = |dir: &std::path::Path| -> Vec<(Value, Value)> {
        let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(dir.join("transcript"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        files
            .iter()
            .map(|f| {
                let turn: Value =
                    serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
                (turn["references"].clone(), turn["metadata"]["tone"].clone())
            })
            .collect()
    };
    let live = turns_in(&dir);
    assert!(
        live.iter().all(
            |(refs, tone)| refs.as_array().is_some_and(|r| !r.is_empty()) && tone == "measured"
        ),
        "{live:?}"
    );
    let exported = home.path().join("exported");
    let export = home.run(
        None,
        &[
            "export",
            &id,
            "--format",
            "arena",
            "--out",
            exported.to_str().unwrap(),
        ],
    );
    assert!(export.status.success(), "{}", stderr(&export));
    assert_eq!(turns_in(&exported.join(&id)), live);
    let summary = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        summary.contains("2022 pilot") && summary.contains("| 1 | proponent | 0.75 |"),
        "the summary carries the scores: {summary}"
    );
    assert!(dir.join("personas/ethics_advisor_persona.json").is_file());
    // Bad arena input: exit 2, nothing sent.
    let before = server.seen().len();
    // Seed review 002/003 #20: a persona's unknown key, or an agent id that cannot name a
    // file, is refused, not silently dropped or rewritten.
    std::fs::write(
        home.path().join("typo.toml"),
        "role_name = \"Skeptic\"\nstance_sumary = \"Doubt it\"\n",
    )
    .unwrap();
    std::fs::write(
        home.path().join("escape.json"),
        r#"{"role_name": "Skeptic", "agent_id": "../../x"}"#,
    )
    .unwrap();
    for (args, expected) in [
        (vec!["--seat", "Solo"], "2–6 roles"),
        (
            vec!["--seat", "A", "--seat", "a"],
            "already has a seat (--seat A)",
        ),
        // Whoever plays it, a role seats once (seed review 002/003 #12).
        (
            vec!["--seat", "Skeptic", "--seat", "human:Skeptic"],
            "--seat human:Skeptic: the role \"Skeptic\" already has a seat (--seat Skeptic)",
        ),
        (
            vec![
                "--seat",
                "Ethics Advisor",
                "--seat",
                "outside:ethics-advisor",
            ],
            "already has a seat (--seat Ethics Advisor)",
        ),
        // B2: a word before the colon that names nobody is refused, not made a model seat.
        (
            vec!["--seat", "Proponent", "--seat", "huamn:Skeptic"],
            "--seat huamn:Skeptic: \"huamn\" is not who plays a seat; write human:ROLE (you), outside:ROLE (an agent through the arena directory) or model:ROLE, or the role alone for a model (did you mean human:Skeptic?)",
        ),
        (
            vec!["--seat", "Proponent", "--seat", "robot:Skeptic"],
            "\"robot\" is not who plays a seat",
        ),
        (vec!["--rounds", "1"], "2–10 rounds"),
        (vec!["--order", "random"], "round-robin or moderator"),
        (vec!["--topology", "ring"], "use mesh, star, chain or tree"),
        (vec!["--planning", "dpde"], "--planning plans a tree"),
        (vec!["--persona", "nope.json"], "--persona nope.json"),
        (
            vec!["--persona", "typo.toml"],
            "--persona typo.toml:2:1: unknown field `stance_sumary`",
        ),
        (
            vec!["--persona", "escape.json"],
            "agent_id \"../../x\" cannot name the persona's files",
        ),
    ] {
        let message = refused(&home, &server, "arena", &args, "Adopt a 4-day work week");
        assert!(message.contains(expected), "{args:?}: {message}");
    }
    assert_eq!(server.seen().len(), before);
}

#[test]
fn an_arena_is_moderated_by_a_participant_or_by_moot_itself_as_the_manifest_says() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    let topic = "Adopt a 4-day work week";
    let arena = |extra: &[&str]| {
        let mut args = vec![
            "--headless",
            "--no-checkpoints",
            "--protocol",
            "arena",
            "--seat",
            "Proponent",
            "--seat",
            "Skeptic",
            "--rounds",
            "2",
        ];
        args.extend_from_slice(extra);
        args.push(topic);
        let output = home.run(Some(&server), &args);
        assert!(output.status.success(), "{}", stderr(&output));
        of_type(&events(&output), "debate_started")[0]["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let moderators = |from: usize| -> Vec<(String, String)> {
        server.seen()[from..]
            .iter()
            .filter(|s| ["arena_order", "arena_scores", "arena_summary"].contains(&s.kind.as_str()))
            .map(|s| (s.kind.clone(), s.body.to_string()))
            .collect()
    };
    let manifest = |dir: &str, id: &str| -> Value {
        let path = home.path().join(dir).join(id).join("manifest.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    };

    // B7: a participant that only summarises (round-robin, unscored) is not said to have
    // ordered or scored anything.
    let summarising = arena(&["--moderator", "seat:skeptic"]);
    let record = home.run(None, &["show", &summarising, "--markdown"]);
    let record = String::from_utf8_lossy(&record.stdout);
    assert!(
        record.contains("a participant (it summarised its own turns with the others)")
            && record.contains("Skeptic moderated as well as argued: it summarised its own turns"),
        "{record}"
    );
    // A participant moderates: the order, the scores and the summary are asked of it, as it.
    let before = server.seen().len();
    let chaired = arena(&[
        "--moderator",
        "seat:skeptic",
        "--order",
        "moderator",
        "--score",
        "--arena-dir",
        "chaired",
    ]);
    let asked = moderators(before);
    let kinds: Vec<&str> = asked.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "arena_order",
            "arena_scores",
            "arena_order",
            "arena_scores",
            "arena_summary"
        ]
    );
    for (kind, body) in &asked {
        assert!(
            body.contains("You are Skeptic, one of the participants of this debate arena, and you also moderate it"),
            "{kind}: {body}"
        );
    }
    assert_eq!(manifest("chaired", &chaired)["moderator_id"], "skeptic");
    let shown = show_json(&home, &chaired);
    assert_eq!(shown["arena_result"]["moderator"], "seat:Skeptic");
    let record = shown["synthesis"]["markdown"].as_str().unwrap();
    assert!(
        record.contains("**Moderator:** Skeptic, a participant"),
        "{record}"
    );

    // moot moderates: no model call of the moderator's at all, a summary built from the turns,
    // and a star's seats read moot's own digest of the round before.
    let before = server.seen().len();
    let system = arena(&[
        "--moderator",
        "system",
        "--topology",
        "star",
        "--arena-dir",
        "system",
    ]);
    assert!(moderators(before).is_empty(), "{:?}", moderators(before));
    // B3: with no model as the moderator, nothing but the seats' turns is asked of a model,
    // personas included (neither seat is in the catalog or given a --persona file).
    let asked: Vec<String> = server.seen()[before..]
        .iter()
        .map(|s| s.kind.clone())
        // `models` is the provider's model list, read before any request.
        .filter(|k| k != "arena_argument" && k != "models")
        .collect();
    assert!(asked.is_empty(), "{asked:?}");
    let notes = home.run(None, &["show", &system, "--markdown"]);
    assert!(
        String::from_utf8_lossy(&notes.stdout)
            .contains("moot wrote plain personas for Proponent, Skeptic"),
        "{}",
        String::from_utf8_lossy(&notes.stdout)
    );
    assert_eq!(manifest("system", &system)["moderator_id"], "system");
    // Nothing ranks an unscored arena's positions without a vote: its confidence says so,
    // rather than a fixed Medium (issue 68, 003-N6).
    assert_eq!(show_json(&home, &system)["confidence"], "Low");
    let summary =
        std::fs::read_to_string(home.path().join("system").join(&system).join("summary.md"))
            .unwrap();
    assert!(
        summary.contains("moot summarised the arena itself, with no model call: 4 of 4 turns")
            && summary.contains("- Turn 1 — Proponent (opening, round 1):"),
        "{summary}"
    );
    let round_two = server.seen()[before..]
        .iter()
        .filter(|s| s.kind == "arena_argument")
        .skip(2)
        .map(|s| s.body.to_string())
        .collect::<Vec<_>>();
    assert_eq!(round_two.len(), 2);
    assert!(
        round_two
            .iter()
            .all(|b| b.contains("moot summarised round 1 itself")),
        "{round_two:?}"
    );
    let exported = home.path().join("exported");
    let output = home.run(
        None,
        &[
            "export",
            &system,
            "--format",
            "arena",
            "--out",
            exported.to_str().unwrap(),
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let again: Value = serde_json::from_str(
        &std::fs::read_to_string(exported.join(&system).join("manifest.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(again["moderator_id"], "system");
    for id in [&chaired, &system] {
        let audit = home.run(None, &["audit", id, "--verify"]);
        assert!(
            audit.status.success(),
            "{}",
            String::from_utf8_lossy(&audit.stdout)
        );
    }

    // What cannot moderate is refused, with nothing sent.
    let before = server.seen().len();
    for (args, expected) in [
        (
            vec!["--moderator", "human"],
            "use model, system or seat:ROLE",
        ),
        (
            vec!["--moderator", "seat:Nobody"],
            "no seat has that role (the seats are Proponent, Skeptic)",
        ),
        (vec!["--moderator", "system", "--score"], "no model call"),
        (
            vec!["--moderator", "system", "--order", "moderator"],
            "no model call",
        ),
        (
            vec![
                "--seat",
                "Proponent",
                "--seat",
                "human:Skeptic",
                "--moderator",
                "seat:Skeptic",
            ],
            "played by a human",
        ),
    ] {
        let message = refused(&home, &server, "arena", &args, topic);
        assert!(message.contains(expected), "{args:?}: {message}");
    }
    assert_eq!(server.seen().len(), before);
}

#[test]
fn an_outside_seat_is_answered_by_another_process_and_bad_submissions_are_refused() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    let (mut child, mut reader) = home.spawn(
        &server,
        &[
            "--headless",
            "--no-checkpoints",
            "--protocol",
            "arena",
            "--seat",
            "Proponent",
            "--seat",
            "outside:reviewer",
            "--rounds",
            "2",
            "--arena-dir",
            "debates",
            "Adopt a 4-day work week",
        ],
    );
    let seen = read_until(&mut reader, |e| e["type"] == "turn_requested");
    let id = seen.iter().find(|e| e["type"] == "debate_created").unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(seen.last().unwrap()["turn_number"], 2);
    assert_eq!(seen.last().unwrap()["by"], "outside");
    let arena = |args: &[&str]| {
        let mut all = vec!["arena"];
        all.extend_from_slice(args);
        home.run(None, &all)
    };
    // What an outside agent reads first.
    let info: Value = serde_json::from_slice(&arena(&["info", &id, "--json"]).stdout).unwrap();
    assert_eq!(info["turn_requested"]["agent_id"], "reviewer");
    assert_eq!(info["participants"][1]["joined"], false);
    let persona: Value =
        serde_json::from_slice(&arena(&["persona", &id, "reviewer", "--json"]).stdout).unwrap();
    assert_eq!(persona["role_name"], "reviewer");
    let transcript: Value =
        serde_json::from_slice(&arena(&["transcript", &id, "--json"]).stdout).unwrap();
    assert_eq!(transcript.as_array().unwrap().len(), 1);

    // Joins from ten processes at once while the debate itself writes: the lock holds, no
    // manifest is torn and no change is lost.
    let joins: Vec<std::process::Child> = (0..10)
        .map(|i| {
            home.command(None)
                .args([
                    "arena",
                    "join",
                    &id,
                    "--seat",
                    if i % 2 == 0 { "reviewer" } else { "proponent" },
                    "--json",
                ])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for join in joins {
        let output = join.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let info: Value = serde_json::from_slice(&arena(&["info", &id, "--json"]).stdout).unwrap();
    assert_eq!(info["participants"][1]["joined"], true);
    assert_eq!(
        info["turn_requested"]["turn_number"], 2,
        "the debate's own request survived the joins"
    );

    // Bad submissions: refused with exit 2, nothing filed.
    let file = |name: &str, text: &str| {
        let path = home.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    };
    let good = file(
        "good.json",
        r#"{"argument_text": "The pilot was one team of twelve.", "references": ["turn:1", "data: n=12"], "metadata": {"confidence": 0.5}}"#,
    );
    let wrong = file("wrong.json", r#"{"turn_number": 7, "argument_text": "x"}"#);
    let torn = file("torn.json", r#"{"argument_text": "#);
    let empty = file("empty.json", r#"{"argument_text": "  "}"#);
    let big = file(
        "big.json",
        &format!("{{\"argument_text\": \"{}\"}}", "x".repeat(1_100_000)),
    );
    let refusals = [
        (
            vec!["--seat", "proponent", "--file", good.as_str()],
            "it is not proponent's turn",
        ),
        (
            vec!["--seat", "nobody", "--file", good.as_str()],
            "has no seat \"nobody\"",
        ),
        (
            vec!["--seat", "reviewer", "--file", wrong.as_str()],
            "turn_number 7 is not the turn",
        ),
        (
            vec!["--seat", "reviewer", "--file", torn.as_str()],
            "line 1, column",
        ),
        (
            vec!["--seat", "reviewer", "--file", empty.as_str()],
            "`argument_text` is empty",
        ),
        (
            vec!["--seat", "reviewer", "--file", big.as_str()],
            "a turn takes at most",
        ),
    ];
    for (args, expected) in refusals {
        let mut all = vec!["submit", id.as_str()];
        all.extend(args.iter().copied());
        let output = arena(&all);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains(expected),
            "{args:?}: {}",
            stderr(&output)
        );
    }
    let transcript_dir = home.path().join("debates").join(&id).join("transcript");
    assert_eq!(
        std::fs::read_dir(&transcript_dir).unwrap().count(),
        1,
        "nothing filed by a refusal"
    );

    // The real answer, from another process; then the closing turn the same way.
    let submit = arena(&[
        "submit", &id, "--seat", "reviewer", "--file", &good, "--json",
    ]);
    assert!(submit.status.success(), "{}", stderr(&submit));
    let answer: Value = serde_json::from_slice(&submit.stdout).unwrap();
    assert_eq!(
        (answer["turn_number"].as_u64(), answer["agent_id"].as_str()),
        (Some(2), Some("reviewer"))
    );
    // A retry names its turn: unpinned, it would be filed as whatever turn the debate asks
    // for next, and by now the debate may already be asking for the reviewer's closing turn.
    let retry = file(
        "retry.json",
        r#"{"turn_number": 2, "argument_text": "The pilot was one team of twelve."}"#,
    );
    let twice = arena(&["submit", &id, "--seat", "reviewer", "--file", &retry]);
    assert_eq!(
        twice.status.code(),
        Some(2),
        "the same turn cannot be submitted twice: {}",
        stderr(&twice)
    );
    // Which refusal depends on how far the debate got: turn 2 not yet taken in, no turn asked
    // for (turn 2 taken in, turn 3 not yet asked), turn 3 being the other seat's, or turn 4
    // asked for.
    assert!(
        [
            "already",
            "waits for no turn now",
            "it is not reviewer's turn",
            "turn_number 2 is not the turn"
        ]
        .iter()
        .any(|reason| stderr(&twice).contains(reason)),
        "{}",
        stderr(&twice)
    );
    let seen = read_until(&mut reader, |e| e["type"] == "turn_requested");
    assert_eq!(seen.last().unwrap()["turn_number"], 4);
    let closing = file(
        "closing.json",
        r#"{"argument_text": "Run a second pilot before deciding.", "references": ["turn:3"]}"#,
    );
    assert!(
        arena(&["submit", &id, "--seat", "reviewer", "--file", &closing])
            .status
            .success()
    );
    let rest = read_until(&mut reader, |e| e["type"] == "debate_completed");
    assert_eq!(rest.last().unwrap()["status"], "completed");
    assert!(child.wait().unwrap().success());

    let result = show_json(&home, &id)["arena_result"].clone();
    let reviewer: Vec<&Value> = result["turns"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["agent_id"] == "reviewer")
        .collect();
    assert_eq!(
        reviewer[0]["argument"]["argument_text"],
        "The pilot was one team of twelve."
    );
    assert_eq!(reviewer[1]["argument"]["references"][0], "turn:3");
    let since: Value = serde_json::from_slice(
        &arena(&[
            "transcript",
            &id,
            "--seat",
            "reviewer",
            "--since",
            "2",
            "--json",
        ])
        .stdout,
    )
    .unwrap();
    assert_eq!(since.as_array().unwrap().len(), 1);
    let closed = arena(&["submit", &id, "--seat", "reviewer", "--file", &closing]);
    assert_eq!(closed.status.code(), Some(2));
    assert!(stderr(&closed).contains("is closed"), "{}", stderr(&closed));
    // An outside seat needs the directory it speaks through.
    let output = home.run(
        Some(&server),
        &[
            "--headless",
            "--protocol",
            "arena",
            "--seat",
            "A",
            "--seat",
            "outside:b",
            "x",
        ],
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("--arena-dir"));
}

#[test]
fn a_person_plays_an_arena_seat_headless_from_stdin() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    let args = [
        "--headless",
        "--checkpoints",
        "stdin",
        "--protocol",
        "arena",
        "--seat",
        "Proponent",
        "--seat",
        "human:Skeptic",
        "--rounds",
        "2",
        "Adopt a 4-day work week",
    ];
    let output = home.run_with_stdin(
        Some(&server),
        &args,
        "g Where is the data? Turn 1 cites one pilot.\ne\n",
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let events = events(&output);
    let requested = of_type(&events, "turn_requested");
    assert_eq!(requested.len(), 2);
    assert_eq!(
        (
            requested[0]["by"].as_str(),
            requested[0]["turn_number"].as_u64()
        ),
        (Some("person"), Some(2))
    );
    let asked = of_type(&events, "checkpoint");
    assert_eq!(asked[0]["kind"], "turn");
    let id = of_type(&events, "debate_started")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let result = show_json(&home, &id)["arena_result"].clone();
    let skeptic: Vec<&Value> = result["turns"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["agent_id"] == "skeptic")
        .collect();
    assert_eq!(
        skeptic[0]["argument"]["argument_text"],
        "Where is the data? Turn 1 cites one pilot."
    );
    assert_eq!(
        skeptic[1]["argument"]["argument_text"], "",
        "e passes the turn"
    );
    // Without --checkpoints stdin nobody speaks for the person: both turns pass.
    let output = home.run(
        Some(&server),
        &[
            "--headless",
            "--protocol",
            "arena",
            "--seat",
            "Proponent",
            "--seat",
            "human:Skeptic",
            "--rounds",
            "2",
            "Adopt a 4-day work week",
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let auto = self::events(&output);
    let id = of_type(&auto, "debate_started")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let turns = show_json(&home, &id)["turns"].clone();
    let passed = turns
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["seat"] == "B" && t["note"] == "the person passed this turn")
        .count();
    assert_eq!(passed, 2);
}

/// B9: a directory written from note 003's description imports: participants given by id
/// (their roles and stances from the manifest's maps), times under `timestamps`, scoring
/// without a rubric, scores without reasons or their own scoring_info, and a persona as
/// `personas/<agent>_persona.md`; unknown fields (`scoring_info.method`, `custom_field`) are
/// kept when it is exported again.
#[test]
fn a_directory_written_from_note_003_imports_and_keeps_what_moot_does_not_know() {
    let home = Home::new();
    let dir = home.path().join("hand").join("debate-042");
    std::fs::create_dir_all(dir.join("personas")).unwrap();
    std::fs::create_dir_all(dir.join("transcript")).unwrap();
    std::fs::write(
        dir.join("manifest.json"),
        r#"{"debate_id": "debate-042", "topic": "Adopt event sourcing for orders", "proposal_ref": "PROP-0042",
            "participants": ["agent-alpha", "agent-beta", "agent-gamma"],
            "roles": {"agent-alpha": "Proponent", "agent-beta": "Skeptic", "agent-gamma": "Ethics Advisor"},
            "stances": {"agent-alpha": "for", "agent-beta": "against", "agent-gamma": "neutral"},
            "protocol": "simple-turn-based-v1", "status": "closed",
            "timestamps": {"created_utc": "2025-04-01T10:00:00Z", "closed_utc": "2025-04-01T11:00:00Z"},
            "moderator_id": "ModeratorAgent",
            "scoring_info": {"method": "moderator-rubric", "scale": "1-10"},
            "custom_field": {"team": "orders"}}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("personas/agent-gamma_persona.md"),
        "# Ethics Advisor\n\nWeigh who bears the cost of every design.\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("transcript/turn_1_agent-alpha.json"),
        r#"{"turn_number": 1, "agent_id": "agent-alpha", "timestamp_utc": "2025-04-01T10:05:00Z", "argument_text": "An audit log for free.", "references": [], "metadata": {}}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("transcript/turn_2_agent-beta.json"),
        r#"{"turn_number": 2, "agent_id": "agent-beta", "timestamp_utc": "2025-04-01T10:10:00Z", "argument_text": "Replays cost hours.", "references": ["turn:1"], "metadata": {}}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("scores.json"),
        r#"{"debate_id": "debate-042", "scores": [{"turn_number": 1, "agent_id": "agent-alpha", "score": 0.7}, {"turn_number": 2, "agent_id": "agent-beta", "score": 0.3}]}"#,
    )
    .unwrap();
    std::fs::write(dir.join("summary.md"), "Alpha carried it.\n").unwrap();
    let import = home.run(None, &["import", dir.to_str().unwrap()]);
    assert!(import.status.success(), "{}", stderr(&import));
    let listed = home.run(None, &["list", "--json"]);
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let id = listed[0]["id"].as_str().unwrap().to_string();
    let shown = show_json(&home, &id);
    // 003-N6: the outcome is computed from the scores (a participant without a persona file
    // counts), and says the same confidence as the list.
    assert_eq!(
        shown["outcome"]["winner"], "Proponent",
        "{}",
        shown["outcome"]
    );
    assert_eq!(shown["outcome"]["method"], "mean rubric score");
    assert_eq!(shown["outcome"]["confidence"], "Medium");
    assert_eq!(listed[0]["confidence"], shown["outcome"]["confidence"]);
    let seats: Vec<(String, String)> = shown["seats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["perspective"].as_str().unwrap_or("").to_string(),
                s["stance"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert!(
        seats.iter().any(|(role, _)| role == "Ethics Advisor")
            && seats.iter().any(|(role, _)| role == "Skeptic"),
        "{seats:?}"
    );
    let out = home.path().join("again");
    let export = home.run(
        None,
        &[
            "export",
            &id,
            "--format",
            "arena",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(export.status.success(), "{}", stderr(&export));
    let exported = std::fs::read_dir(&out)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(exported.join("manifest.json")).unwrap())
            .unwrap();
    assert_eq!(
        manifest["scoring_info"]["method"], "moderator-rubric",
        "{manifest}"
    );
    assert_eq!(manifest["custom_field"]["team"], "orders", "{manifest}");
    assert_eq!(
        manifest["created_utc"], "2025-04-01T10:00:00Z",
        "{manifest}"
    );
    let gamma: Value = serde_json::from_str(
        &std::fs::read_to_string(exported.join("personas/agent-gamma_persona.json")).unwrap(),
    )
    .unwrap();
    assert!(
        gamma["instructions"]
            .as_str()
            .unwrap()
            .contains("Weigh who bears the cost"),
        "{gamma}"
    );
    // The accepted shape, as written down, holds both the hand-written files and moot's own.
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/assets/arena-directory.schema.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let holds = |part: &str, file: &std::path::Path| {
        let mut shape = schema.clone();
        shape["$ref"] = serde_json::json!(format!("#/$defs/{part}"));
        let validator = jsonschema::validator_for(&shape).unwrap();
        let instance: Value =
            serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&instance)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{}: {errors:?}", file.display());
    };
    for root in [&dir, &exported] {
        holds("manifest", &root.join("manifest.json"));
        holds("scores", &root.join("scores.json"));
        for entry in std::fs::read_dir(root.join("transcript")).unwrap() {
            holds("argument", &entry.unwrap().path());
        }
    }
    holds(
        "persona",
        &exported.join("personas/agent-gamma_persona.json"),
    );
    let mut manifest_shape = schema.clone();
    manifest_shape["$ref"] = serde_json::json!("#/$defs/manifest");
    assert!(
        !jsonschema::validator_for(&manifest_shape)
            .unwrap()
            .is_valid(&serde_json::json!({"topic": "no id, no participants"})),
        "the schema refuses a manifest without its required fields"
    );
    // B8: verify on an imported debate says it was imported and checks its chain.
    let verified = home.run(None, &["audit", &id, "--verify"]);
    let text = String::from_utf8_lossy(&verified.stdout).to_string() + &stderr(&verified);
    assert_eq!(verified.status.code(), Some(0), "{text}");
    assert!(text.contains("imported"), "{text}");
}

/// `--blind-first`: every opening is given before its seat reads any other; the rebuttals read
/// them all. Without it, the second seat's opening reads the first's.
#[test]
fn a_blind_first_round_hides_the_openings_from_each_other_until_round_two() {
    for blind in [false, true] {
        let server = StandIn::start_in_background(Behaviour::default());
        let home = Home::new();
        let mut args = vec![
            "--headless",
            "--no-checkpoints",
            "--protocol",
            "arena",
            "--seat",
            "Proponent",
            "--seat",
            "Skeptic",
            "--rounds",
            "2",
            "Adopt a 4-day work week",
        ];
        if blind {
            args.insert(0, "--blind-first");
        }
        let output = home.run(Some(&server), &args);
        assert!(output.status.success(), "{}", stderr(&output));
        let arguments: Vec<(u32, String)> = server
            .seen()
            .into_iter()
            .filter(|s| s.kind == "arena_argument")
            .map(|s| (s.round, s.body.to_string()))
            .collect();
        assert_eq!(arguments.len(), 4, "two seats, two rounds");
        let (_, second_opening) = &arguments[1];
        assert_eq!(
            second_opening.contains("You have seen no argument yet."),
            blind,
            "blind {blind}: {second_opening}"
        );
        for (round, prompt) in &arguments[2..] {
            assert_eq!(*round, 2);
            assert!(prompt.contains("The transcript you see"), "{prompt}");
        }
        let events = events(&output);
        let id = of_type(&events, "debate_started")[0]["id"]
            .as_str()
            .unwrap()
            .to_string();
        let settings = &show_json(&home, &id)["config"]["protocol_settings"];
        assert_eq!(
            settings["blind_first"].as_bool().unwrap_or(false),
            blind,
            "{settings}"
        );
    }
}
