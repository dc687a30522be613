//! Votes that end a debate or decide a panel, weights, and gates decided from another terminal.

use crate::*;

#[test]
fn vote_ends_a_moderated_debate_with_every_seat_ranking_and_bad_methods_exit_2() {
    let server = StandIn::start_in_background(Behaviour {
        debaters: 3,
        ..Behaviour::default()
    });
    let home = Home::new();
    let output = home.run(
        Some(&server),
        &[
            "--headless",
            "--no-checkpoints",
            "--max-rounds",
            "1",
            "--vote",
            "borda",
            QUESTION,
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let events = events(&output);
    let votes = of_type(&events, "votes");
    assert_eq!(votes.len(), 1);
    let view = &votes[0]["votes"];
    assert_eq!(view["method"], "borda");
    assert_eq!(view["ballots"].as_array().unwrap().len(), 3);
    // Three full rankings of three positions: 3 × (2 + 1 + 0) Borda points in all.
    let total: f64 = view["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_f64().unwrap())
        .sum();
    assert_eq!(total, 9.0);
    assert!(view["winner"].is_string());
    let id = of_type(&events, "debate_started")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let shown = show_json(&home, &id);
    assert_eq!(shown["synthesis"]["data"]["votes"], *view);
    let voted = shown["turns"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["phase"] == "vote")
        .count();
    assert_eq!(voted, 3);
    assert!(
        shown["synthesis"]["markdown"]
            .as_str()
            .unwrap()
            .contains("## Votes")
    );

    let before = server.seen().len();
    let output = home.run(
        Some(&server),
        &["--headless", "--vote", "instant-runoff", QUESTION],
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("unknown voting method \"instant-runoff\""),
        "{}",
        stderr(&output)
    );
    home.write_config("provider = \"openai\"\nvote = \"approval\"\n");
    let output = home.run(Some(&server), &["--headless", QUESTION]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("config.toml:2:1: vote: unknown voting method"),
        "{}",
        stderr(&output)
    );
    assert_eq!(
        server.seen().len(),
        before,
        "nothing was sent for a bad method"
    );
}

#[test]
fn a_gate_is_decided_from_another_terminal_while_the_debate_waits() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    home.write_config("[retry]\nmax_attempts = 3\nbase_delay_ms = 5\nmax_delay_ms = 50\n\n[gates]\nenabled = true\npoints = [\"after_round\"]\n");
    let run = |question: &str| {
        // stdin stays open and silent: only another terminal can decide.
        let mut child = home
            .command(Some(&server))
            .args([
                "--headless",
                "--checkpoints",
                "stdin",
                "--max-rounds",
                "2",
                question,
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let reader = EventLines::new(child.stdout.take().unwrap());
        (child, stdin, reader)
    };
    let (mut child, mut stdin, mut reader) = run(QUESTION);
    // The round's own checkpoint is answered on stdin; the gate after it is not.
    let seen = read_until(&mut reader, |e| e["type"] == "checkpoint");
    let id = seen[0]["id"].as_str().unwrap().to_string();
    stdin.as_mut().unwrap().write_all(b"c\n").unwrap();
    let seen = read_until(&mut reader, |e| e["type"] == "gate_requested");
    assert_eq!(seen.last().unwrap()["gate"], "after_round:1");
    // C9: after a round the reviewer weighs the moderator's reading and each seat's moves.
    let artifacts = &seen.last().unwrap()["artifacts"];
    assert!(
        artifacts["moderator"]
            .as_str()
            .is_some_and(|m| !m.is_empty())
            && artifacts["moves"]
                .as_object()
                .is_some_and(|m| !m.is_empty()),
        "{artifacts}"
    );
    let listed = home.run(None, &["gates", &id]);
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("waiting"),
        "{}",
        String::from_utf8_lossy(&listed.stdout)
    );
    let approve = home.run(None, &["approve", &id]);
    assert!(approve.status.success(), "{}", stderr(&approve));
    let seen = read_until(&mut reader, |e| e["type"] == "gate_decided");
    let decided = seen.last().unwrap();
    assert_eq!(decided["decision"], "approved");
    assert!(
        decided["by"]
            .as_str()
            .unwrap()
            .ends_with("from another terminal")
    );
    // Round 2's gate (its checkpoint answered first, if it asks one), rejected from the other
    // terminal: the debate stops there.
    loop {
        let seen = read_until(&mut reader, |e| {
            e["type"] == "gate_requested" || e["type"] == "checkpoint"
        });
        if seen.last().unwrap()["type"] == "gate_requested" {
            break;
        }
        stdin.as_mut().unwrap().write_all(b"c\n").unwrap();
    }
    let reject = home.run(
        None,
        &["reject", &id, "--reason", "stop: the numbers are made up"],
    );
    assert!(reject.status.success(), "{}", stderr(&reject));
    let rest = read_until(&mut reader, |e| e["type"] == "debate_completed");
    assert_eq!(rest.last().unwrap()["status"], "cancelled");
    drop(stdin);
    child.wait().unwrap();
    let gates: Value =
        serde_json::from_slice(&home.run(None, &["gates", &id, "--json"]).stdout).unwrap();
    assert_eq!(gates[1]["decision"], "rejected");
    assert_eq!(gates[1]["reason"], "stop: the numbers are made up");
    // Who rejected it and why are in `show` and `show --json` too.
    let shown = String::from_utf8_lossy(&home.run(None, &["show", &id]).stdout).to_string();
    assert!(
        shown.contains("approval gate after round 2 (after_round:2): rejected by moot-tester from another terminal: stop: the numbers are made up"),
        "{shown}"
    );
    let document = show_json(&home, &id);
    assert_eq!(
        document["gates"][1]["reason"],
        "stop: the numbers are made up"
    );
    // Nothing waits now: deciding again is refused.
    let again = home.run(None, &["approve", &id]);
    assert_eq!(again.status.code(), Some(2));
    assert!(
        stderr(&again).contains("waits at no gate"),
        "{}",
        stderr(&again)
    );
    // A gate at a point the protocol has not: exit 2, located.
    home.write_config("[gates]\nenabled = true\npoints = [\"before_apply\"]\n");
    let output = home.run(Some(&server), &["--headless", QUESTION]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains(
            "config.toml:3:1: [gates] \"before_apply\" is not a gate of the moderated protocol"
        ),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_weighted_vote_counts_confidence_and_the_seat_weights_from_config() {
    let server = StandIn::start_in_background(Behaviour {
        debaters: 3,
        ..Behaviour::default()
    });
    let home = Home::new();
    home.write_config("[vote_weights]\nB = 3.0\n");
    let output = home.run(
        Some(&server),
        &[
            "--headless",
            "--no-checkpoints",
            "--max-rounds",
            "1",
            "--vote",
            "weighted",
            QUESTION,
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let events = events(&output);
    let view = &of_type(&events, "votes")[0]["votes"];
    // Every seat votes for itself with confidence 0.7; B's ballot weighs three times.
    let points: Vec<f64> = view["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p.as_f64().unwrap() * 100.0).round() / 100.0)
        .collect();
    assert_eq!(points, vec![0.7, 2.1, 0.7]);
    assert_eq!(view["winner"], "B");
    home.write_config("[vote_weights]\nB = -1.0\n");
    let output = home.run(
        Some(&server),
        &["--headless", "--vote", "weighted", QUESTION],
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output)
            .contains("config.toml:2:1: [vote_weights] \"B\" = -1: a weight is a number 0 or more"),
        "{}",
        stderr(&output)
    );
}

/// With `--vote`, every judge ranks every option and the method decides: a panel split three
/// ways on first places is decided by Borda points in round one.
#[test]
fn a_ranked_vote_decides_a_split_panel_on_full_rankings() {
    let server = StandIn::start_in_background(split_panel());
    let home = Home::new();
    let id = finished_debate(
        &home,
        &server,
        &[
            "--headless",
            "--no-checkpoints",
            "--protocol",
            "panel",
            "--vote",
            "borda",
            "--option",
            "A: Local-first sync",
            "--option",
            "B: Online only",
            "--option",
            "C: Limited offline",
            PANEL_QUESTION,
        ],
    );
    // Each judge was asked to rank all three.
    let asked: Vec<String> = requests_since(&server, 0)
        .into_iter()
        .filter(|b| b.contains("moot_recommendation") || b.contains("recommendation"))
        .collect();
    assert!(
        asked.iter().any(|b| b.contains("rank every option")),
        "{asked:?}"
    );
    let result = show_json(&home, &id)["debate_result"].clone();
    // R: A B C, V: B A C, E: C A B → Borda A 4, B 3, C 2.
    assert_eq!(result["consensus"], true, "{result}");
    assert_eq!(result["recommended_option"], "A", "{result}");
    assert_eq!(result["rounds"], 1);
    assert_eq!(
        result["decided_by"], "borda: A 4.0 · B 3.0 · C 2.0",
        "{result}"
    );
    let record = home.run(None, &["show", &id, "--markdown"]);
    assert!(
        String::from_utf8_lossy(&record.stdout).contains("decided by borda: A 4.0"),
        "{}",
        String::from_utf8_lossy(&record.stdout)
    );
    // Without a vote the same panel finds no consensus.
    let plain = home.run(
        Some(&server),
        &[
            "--headless",
            "--no-checkpoints",
            "--protocol",
            "panel",
            "--option",
            "A: Local-first sync",
            "--option",
            "B: Online only",
            "--option",
            "C: Limited offline",
            PANEL_QUESTION,
        ],
    );
    let plain_id = of_type(&events(&plain), "debate_completed")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        show_json(&home, &plain_id)["debate_result"]["consensus"],
        false
    );
}
