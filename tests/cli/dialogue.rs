//! The formal dialogue end to end: shared context, a scored verdict, bad input, personas from config.

use crate::*;

pub(crate) const DIALOGUE_TOPIC: &str =
    "We should replace our hand-rolled retry loop with tower's retry layer";

/// A small git repository in the home directory for a dialogue to gather K from.
pub(crate) fn dialogue_codebase(home: &Home) {
    let root = home.path();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(root.join("docs/adr")).unwrap();
    std::fs::write(
        root.join("src/client.rs"),
        "// the hand-rolled retry loop\nfn call() {\n    loop { retry(); }\n}\n",
    )
    .unwrap();
    std::fs::write(
        root.join("docs/adr/0003-retries.md"),
        "# ADR 3: Retries\n\nEvery retry loop backs off exponentially.\n",
    )
    .unwrap();
    let git = |args: &[&str]| {
        let status = Command::new("git")
            .current_dir(root)
            .args([
                "-c",
                "user.name=moot",
                "-c",
                "user.email=moot@example.invalid",
            ])
            .args(args)
            .env_remove("GIT_DIR")
            .output()
            .unwrap();
        assert!(status.status.success(), "git {args:?}: {status:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "src", "docs"]);
    git(&["commit", "-q", "-m", "Add the retry loop"]);
}

#[test]
fn a_formal_dialogue_runs_end_to_end_with_shared_context_and_a_scored_verdict() {
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
            "2",
            "--perspective",
            "Security Advocate",
            DIALOGUE_TOPIC,
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let events = events(&output);
    // K was gathered from the repository, condensed with real sources, and announced.
    let context = of_type(&events, "shared_context");
    assert_eq!(context.len(), 1);
    let facts = context[0]["facts"].as_array().unwrap();
    assert!(!facts.is_empty(), "{}", context[0]);
    assert!(facts.iter().all(|f| f["file"].is_array()), "{facts:?}");
    assert!(
        facts
            .iter()
            .any(|f| f["source"].as_str().unwrap().starts_with("src/client.rs:")),
        "{facts:?}"
    );
    // Every side's prompt carried K, the focus and the persona's bias.
    let sides: Vec<support::Seen> = server
        .seen()
        .into_iter()
        .filter(|s| s.kind == "dialogue_move")
        .collect();
    assert_eq!(
        sides.len(),
        8,
        "opening, two rounds and closing, two sides each"
    );
    for seen in &sides {
        let text = seen.body.to_string();
        assert!(
            text.contains("Shared context K") && text.contains("src/client.rs:"),
            "no K in a side's prompt"
        );
        assert!(
            text.contains("Security Advocate") && text.contains("Your bias, declared to everyone")
        );
        // Seed review 002/003 #21: spoken to the side, not of it.
        assert!(
            (text.contains("You argue FOR the thesis")
                || text.contains("You argue AGAINST the thesis"))
                && !text.contains("You argues"),
            "the side's stance reads as spoken to it"
        );
    }
    // Seed review 002/003 #13: MOD is shown the biases it is told to account for.
    let verdicts: Vec<support::Seen> = server
        .seen()
        .into_iter()
        .filter(|s| s.kind == "dialogue_verdict")
        .collect();
    assert!(!verdicts.is_empty());
    for seen in &verdicts {
        let text = seen.body.to_string();
        assert!(
            text.contains("Declared biases")
                && text.contains("- PRO (")
                && text.contains("- OPP ("),
            "the verdict request names both sides' biases"
        );
    }
    let completed: Vec<(u64, String, String)> = of_type(&events, "turn_completed")
        .iter()
        .map(|e| {
            (
                e["round"].as_u64().unwrap(),
                e["phase"].as_str().unwrap().to_string(),
                e["seat"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected: Vec<(u64, String, String)> = [
        (0, "context", "moderator"),
        (0, "opening", "PRO"),
        (0, "opening", "OPP"),
        (1, "argument", "PRO"),
        (1, "argument", "OPP"),
        (1, "ruling", "moderator"),
        (2, "argument", "PRO"),
        (2, "argument", "OPP"),
        (2, "ruling", "moderator"),
        (3, "closing", "PRO"),
        (3, "closing", "OPP"),
        (3, "verdict", "moderator"),
    ]
    .iter()
    .map(|(r, p, s)| (*r, p.to_string(), s.to_string()))
    .collect();
    assert_eq!(completed, expected);
    assert!(
        of_type(&events, "violation").is_empty(),
        "the stand-in only makes legal moves"
    );
    let id = of_type(&events, "debate_started")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let shown = show_json(&home, &id);
    let verdict = &shown["dialogue_verdict"];
    let (pro, opp) = (
        verdict["computed"]["pro"]["score"].as_f64().unwrap(),
        verdict["computed"]["opp"]["score"].as_f64().unwrap(),
    );
    let winner = verdict["computed"]["winner"].as_str().unwrap();
    assert_eq!(
        winner,
        if (pro - opp).abs() < 0.01 {
            "DRAW"
        } else if pro > opp {
            "PRO"
        } else {
            "OPP"
        }
    );
    assert_eq!(
        verdict["moderator"]["winner"], winner,
        "the stand-in reads the computed winner"
    );
    assert_eq!(verdict["focus"], "Security Advocate");
    assert!(
        verdict["computed"]["metrics"]["arguments"]
            .as_u64()
            .unwrap()
            >= 6,
        "{verdict}"
    );
    // The report in the note's format, from show --markdown and in the decision record.
    let markdown = home.run(None, &["show", &id, "--markdown"]);
    let markdown = String::from_utf8_lossy(&markdown.stdout).to_string();
    for section in [
        "## Participants",
        "## Shared Context (K)",
        "## Transcript",
        "## Commitment Stores (Final State)",
        "## Argumentation Framework",
        "### Argument Map (ASCII)",
        "## Verdict",
        "### Debate Quality Metrics",
    ] {
        // Seed review 002/003 #17: once, not after a generic copy of the same rounds.
        assert_eq!(
            markdown.matches(section).count(),
            1,
            "{section} not once:\n{markdown}"
        );
    }
    assert!(
        !markdown.contains("\n## Seats\n") && !markdown.contains("\n## Round 0\n"),
        "no generic report beside the note's:\n{markdown}"
    );
    let records = home.decisions();
    assert_eq!(records.len(), 1);
    let record = std::fs::read_to_string(&records[0]).unwrap();
    assert!(record.contains("**PRO [P1]** `claim`"), "{record}");
    let list = home.run(None, &["list"]);
    assert!(String::from_utf8_lossy(&list.stdout).contains("dialogue"));
}

#[test]
fn bad_dialogue_input_is_a_usage_error_with_exit_2_and_nothing_sent() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    let dialogue = |extra: &[&str]| refused(&home, &server, "dialogue", extra, DIALOGUE_TOPIC);
    let message = dialogue(&["--context", "no/such/dir"]);
    assert!(
        message.contains("--context no/such/dir") && message.contains("no such file"),
        "{message}"
    );
    std::fs::create_dir_all(home.path().join("empty")).unwrap();
    let message = dialogue(&["--context", "empty"]);
    assert!(
        message.contains("--context empty: the directory is empty"),
        "{message}"
    );
    let message = dialogue(&["--context", "empty", "--no-context"]);
    assert!(message.contains("contradict"), "{message}");
    let message = dialogue(&["--perspective", "Security", "--perspective", "Cost"]);
    assert!(message.contains("one viewpoint; 2 were given"), "{message}");
    let message = dialogue(&["--max-rounds", "11"]);
    assert!(message.contains("1–10 rounds"), "{message}");
    home.write_config("[dialogue]\nmax_rounds = 2\nwhy_grace = 0\n");
    let message = dialogue(&[]);
    assert!(
        message.contains("config.toml:3:1")
            && message.contains("why_grace: a why may stay unanswered for 1–10 rounds"),
        "{message}"
    );
    home.write_config(
        "protocol = \"dialogue\"\n\n[dialogue]\nmax_rounds = 2\ncontext_budget = 5\n",
    );
    let output = home.run(
        Some(&server),
        &["--headless", "--no-checkpoints", DIALOGUE_TOPIC],
    );
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(
        message.contains("config.toml:5:1") && message.contains("context_budget"),
        "{message}"
    );
    home.write_config("[dialogue.pro]\npersona = \"x\"\nmood = \"grumpy\"\n");
    let output = home.run(
        Some(&server),
        &["--headless", "--protocol", "dialogue", DIALOGUE_TOPIC],
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("mood"), "{}", stderr(&output));
    assert!(server.seen().is_empty(), "nothing was sent for bad input");
}

#[test]
fn the_moderators_ruling_strikes_over_the_wire_and_the_struck_side_is_told() {
    let server = StandIn::start_in_background(Behaviour {
        strike: vec!["P2"],
        ad_hominem: vec!["O2"],
        ..Behaviour::default()
    });
    let home = Home::new();
    home.write_config("[dialogue]\ncontext = false\n");
    let output = home.run(
        Some(&server),
        &[
            "--headless",
            "--no-checkpoints",
            "--protocol",
            "dialogue",
            "--max-rounds",
            "2",
            DIALOGUE_TOPIC,
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let events = events(&output);
    let rulings = server
        .seen()
        .into_iter()
        .filter(|s| s.kind == "dialogue_ruling")
        .collect::<Vec<_>>();
    assert_eq!(rulings.len(), 2, "one ruling per round of argumentation");
    assert!(
        rulings[0]
            .body
            .to_string()
            .contains("Steel-man, not straw-man"),
        "the ruling's request names the rule it enforces"
    );
    let ruled = of_type(&events, "ruled");
    assert_eq!(ruled[0]["ruling"]["struck"][0]["id"], "P2", "{ruled:?}");
    assert_eq!(ruled[0]["ruling"]["ad_hominem"][0]["side"], "OPP");
    assert!(
        of_type(&events, "violation")
            .iter()
            .any(|v| v["seat"] == "OPP" && v["rule"].as_str().unwrap().starts_with("no ad hominem")),
        "{events:?}"
    );
    // PRO's next turn is told what was struck, and why.
    let pro_round_two = server
        .seen()
        .into_iter()
        .find(|s| {
            s.kind == "dialogue_move"
                && s.seat.as_deref() == Some("PRO")
                && s.body.to_string().contains("Round 2 of 2 of argumentation")
        })
        .unwrap();
    assert!(
        pro_round_two
            .body
            .to_string()
            .contains("PRO's P2 struck as weak: it cites no evidence"),
        "{}",
        pro_round_two.body
    );
    let id = of_type(&events, "debate_started")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let verdict = show_json(&home, &id)["dialogue_verdict"].clone();
    assert_eq!(verdict["computed"]["struck"][0]["id"], "P2");
    let p2 = verdict["computed"]["arguments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == "P2")
        .unwrap()
        .clone();
    assert_eq!(
        (p2["struck"].as_bool(), p2["score"].as_f64()),
        (Some(true), Some(0.0))
    );
    let record = std::fs::read_to_string(&home.decisions()[0]).unwrap();
    assert!(
        record.contains("**MOD** ruled PRO's P2 struck as weak"),
        "{record}"
    );
    assert!(record.contains("Protocol violations: 1"), "{record}");
    let audit = home.run(None, &["audit", &id, "--verify"]);
    assert!(audit.status.success(), "{}", stderr(&audit));
}

#[test]
fn dialogue_personas_come_from_config_and_opp_can_sit_on_its_own_model() {
    let main = StandIn::start_in_background(Behaviour::default());
    let second = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    home.write_config(&format!(
        "protocol = \"dialogue\"\n\n[providers.second]\nkind = \"openai\"\nbase_url = \"{}\"\nmodel = \"second-model\"\n\n\
         [dialogue]\nmax_rounds = 1\ncontext = false\n\n\
         [dialogue.opp]\npersona = \"Site reliability engineer\"\nbias = \"prefers fewer moving parts\"\nprovider = \"second\"\n",
        second.openai_base()
    ));
    let output = home.run(
        Some(&main),
        &["--headless", "--no-checkpoints", DIALOGUE_TOPIC],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events = events(&output);
    let started = of_type(&events, "debate_started")[0];
    assert_eq!(started["protocol"], "dialogue");
    let seats = started["seats"].as_array().unwrap();
    assert_eq!(seats[1]["perspective"], "Site reliability engineer");
    assert_eq!(seats[1]["model"], "second-model");
    let asked = |server: &StandIn| -> Vec<(String, Option<String>)> {
        server
            .seen()
            .iter()
            .filter(|s| s.kind != "models")
            .map(|s| (s.kind.clone(), s.seat.clone()))
            .collect()
    };
    // `context = false`: no moderator condensation; OPP's three turns went to its own model.
    let opp = ("dialogue_move".to_string(), Some("OPP".to_string()));
    assert_eq!(asked(&second), vec![opp.clone(), opp.clone(), opp]);
    let on_main = asked(&main);
    assert!(
        on_main
            .iter()
            .all(|(kind, seat)| kind != "dialogue_move" || seat.as_deref() == Some("PRO")),
        "{on_main:?}"
    );
    assert_eq!(on_main.last().unwrap().0, "dialogue_verdict");
    let context = of_type(&events, "shared_context");
    assert!(
        context[0]["notes"][0]
            .as_str()
            .unwrap()
            .contains("--no-context")
    );
    let id = started["id"].as_str().unwrap();
    let record = show_json(&home, id)["dialogue_verdict"].clone();
    assert_eq!(
        record["participants"][1]["persona"],
        "Site reliability engineer"
    );
    assert_eq!(record["participants"][1]["model"], "second-model");
    assert!(
        second
            .seen()
            .iter()
            .any(|s| s.body.to_string().contains("prefers fewer moving parts"))
    );
}
