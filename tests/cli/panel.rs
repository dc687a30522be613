//! The judges' panel end to end: options, judges, a contested result decided later, resume.

use crate::*;

pub(crate) const PANEL_QUESTION: &str = "How much offline support should v1 have?";

/// Judges that split three ways in round 1 and meet on A in round 2 (Value changes its mind).
pub(crate) fn converging_panel() -> Behaviour {
    Behaviour {
        panel_votes: vec![("R", vec!["A"]), ("V", vec!["B", "A"]), ("E", vec!["C"])],
        ..Behaviour::default()
    }
}

/// Judges that stay three ways apart in every round.
pub(crate) fn split_panel() -> Behaviour {
    Behaviour {
        panel_votes: vec![("R", vec!["A"]), ("V", vec!["B"]), ("E", vec!["C"])],
        ..Behaviour::default()
    }
}

/// What the panel's judges were asked, by seat, for one kind of request.
pub(crate) fn judge_prompts(server: &StandIn, kind: &str) -> Vec<(String, String)> {
    server
        .seen()
        .iter()
        .filter(|s| s.kind == kind)
        .map(|s| (s.seat.clone().unwrap_or_default(), s.body.to_string()))
        .collect()
}

#[test]
fn a_panel_runs_end_to_end_headless_and_shows_its_result() {
    let server = StandIn::start_in_background(converging_panel());
    let home = Home::new();
    std::fs::create_dir_all(home.path().join("docs")).unwrap();
    std::fs::write(
        home.path().join("docs/spec.md"),
        "Field teams edit notes in basements with no signal.\n",
    )
    .unwrap();
    let output = home.run(
        Some(&server),
        &[
            "--headless",
            "--no-checkpoints",
            "--protocol",
            "panel",
            "--option",
            "A: Local-first sync — full offline editing",
            "--option",
            "B: Online only",
            "--option",
            "C: Limited offline — read-only cache",
            "--context",
            "docs/spec.md",
            PANEL_QUESTION,
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events = events(&output);
    let started = of_type(&events, "debate_started")[0];
    assert_eq!(started["protocol"], "panel");
    let judges: Vec<&str> = started["seats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["perspective"].as_str().unwrap())
        .collect();
    assert_eq!(judges, vec!["Risk", "Value", "Effort"]);
    let phases: Vec<(u64, &str)> = of_type(&events, "turn_completed")
        .iter()
        .map(|t| (t["round"].as_u64().unwrap(), t["phase"].as_str().unwrap()))
        .collect();
    assert_eq!(
        phases
            .iter()
            .filter(|p| **p == (1, "recommendation"))
            .count(),
        3
    );
    assert_eq!(phases.iter().filter(|p| **p == (2, "challenge")).count(), 3);
    assert!(
        phases.iter().all(|(_, phase)| *phase != "options"),
        "options were given: the moderator proposes none"
    );
    // Each round's judges run in parallel: all three start before any finishes.
    for (round, phase) in [(1, "recommendation"), (2, "challenge")] {
        let of_round = |kind: &str| -> Vec<usize> {
            events
                .iter()
                .enumerate()
                .filter(|(_, e)| e["type"] == kind && e["round"] == round && e["phase"] == phase)
                .map(|(i, _)| i)
                .collect()
        };
        assert!(
            of_round("turn_started").into_iter().max()
                < of_round("turn_completed").into_iter().min(),
            "round {round} judges ran one after another"
        );
    }
    let standings = of_type(&events, "standings");
    assert_eq!(standings.len(), 2);
    assert!(
        standings[0]["headline"]
            .as_str()
            .unwrap()
            .contains("no consensus"),
        "{}",
        standings[0]["headline"]
    );
    assert_eq!(
        standings[1]["standings"][0]["backers"][1],
        serde_json::json!(["R", "V"])
    );

    // Round 1 is isolated: no judge's prompt carries another judge or its words; round 2
    // carries them all (so the check above could fail).
    let round_one = judge_prompts(&server, "recommendation");
    assert_eq!(round_one.len(), 3);
    for (seat, prompt) in &round_one {
        assert!(
            prompt.contains("Field teams edit notes in basements"),
            "no context: {prompt}"
        );
        // The context file is named as given, never by its absolute path (seed review
        // 000/001 #14).
        assert!(
            prompt.contains("## docs/spec.md")
                && !prompt.contains(&home.path().display().to_string()),
            "{prompt}"
        );
        for other in ["Risk", "Value", "Effort"]
            .iter()
            .filter(|o| !o.starts_with(seat.as_str()))
        {
            assert!(
                !prompt.contains(&format!("{other} judge")),
                "{seat} saw {other}: {prompt}"
            );
            assert!(
                !prompt.contains(&format!("The {} judge weighs", &other[..1])),
                "{seat} saw {other}'s words"
            );
        }
    }
    let round_two = judge_prompts(&server, "challenge");
    assert_eq!(round_two.len(), 3);
    for (seat, prompt) in &round_two {
        for other in ["R", "V", "E"].iter().filter(|o| **o != seat) {
            assert!(
                prompt.contains(&format!("The {other} judge weighs")),
                "{seat} did not see {other}"
            );
        }
    }

    let id = of_type(&events, "debate_completed")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let shown = show_json(&home, &id);
    assert_eq!(shown["protocol"], "panel");
    // Seed review 000/001 #14: a completed debate no longer says it stands at a round.
    assert!(shown["stage"].is_null(), "{}", shown["stage"]);
    let result = &shown["debate_result"];
    assert_eq!(result["question_id"], id);
    assert_eq!(result["consensus"], true);
    assert_eq!(result["recommended_option"], "A");
    assert_eq!(result["confidence"], "HIGH");
    assert_eq!(result["perspectives"].as_object().unwrap().len(), 3);
    let changes = result["change_log"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0]["judge"], "value");
    assert_eq!(
        (changes[0]["from"].as_str(), changes[0]["to"].as_str()),
        (Some("B"), Some("A"))
    );
    assert!(
        changes[0]["reason"]
            .as_str()
            .unwrap()
            .contains("cannot ship on time")
    );
    let list: Value = serde_json::from_slice(&home.run(None, &["list", "--json"]).stdout).unwrap();
    assert_eq!(list[0]["protocol"], "panel");
    let text = String::from_utf8_lossy(&home.run(None, &["list"]).stdout).to_string();
    let mut lines = text.lines();
    assert!(lines.next().unwrap().contains("  PROTOCOL  CONF"), "{text}");
    assert!(
        lines.next().unwrap().contains("  panel     High "),
        "{text}"
    );
    let record = std::fs::read_to_string(&home.decisions()[0]).unwrap();
    assert!(
        record.contains("RECOMMENDED — option A: Local-first sync"),
        "{record}"
    );
    let yaml = home.run(None, &["export", &id, "--format", "yaml"]);
    assert!(yaml.status.success(), "{}", stderr(&yaml));
    let yaml = String::from_utf8_lossy(&yaml.stdout);
    assert!(
        yaml.contains("debate_result:") && yaml.contains("recommended_option: \"A\""),
        "{yaml}"
    );
}

#[test]
fn a_panel_without_options_judges_the_moderators_and_a_contested_one_is_decided_later() {
    let server = StandIn::start_in_background(split_panel());
    let home = Home::new();
    let output = home.run(
        Some(&server),
        &[
            "--headless",
            "--no-checkpoints",
            "--protocol",
            "panel",
            "--max-rounds",
            "1",
            PANEL_QUESTION,
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let kinds: Vec<String> = server
        .seen()
        .iter()
        .map(|s| s.kind.clone())
        .filter(|kind| kind != "models")
        .collect();
    assert_eq!(kinds[0], "panel_options", "{kinds:?}");
    assert!(
        !kinds.iter().any(|k| k == "challenge"),
        "--max-rounds 1 runs no challenge round: {kinds:?}"
    );
    let events = events(&output);
    let id = of_type(&events, "debate_completed")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let result = show_json(&home, &id)["debate_result"].clone();
    let labels: Vec<&str> = result["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["label"].as_str().unwrap())
        .collect();
    assert_eq!(
        labels,
        vec!["Local-first sync", "Online only", "Limited offline"]
    );
    assert_eq!(result["outcome"], "CONTESTED");
    assert_eq!(result["rounds"], 1);
    assert_eq!(result["confidence"], "REQUIRES_INPUT");
    assert_eq!(result["distribution"]["B"], serde_json::json!(["value"]));
    assert!(result.get("chosen").is_none(), "nobody was asked: {result}");
    assert_eq!(
        result["result_version"], 4,
        "a stored result says its version"
    );

    let unknown = home.run(None, &["decide", &id, "Z"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(stderr(&unknown).contains("Z"), "{}", stderr(&unknown));
    let recorded_in = |output: &std::process::Output| {
        let stdout = String::from_utf8_lossy(&output.stdout).to_string();
        let path = stdout
            .lines()
            .find_map(|line| line.strip_prefix("Recorded in "))
            .unwrap_or_else(|| panic!("no record path: {stdout}"));
        std::path::PathBuf::from(path)
    };
    let decided = home.run(None, &["decide", &id, "b"]);
    assert_eq!(decided.status.code(), Some(0), "{}", stderr(&decided));
    let record = recorded_in(&decided);
    let records = |dir: &std::path::Path| std::fs::read_dir(dir).unwrap().count();
    let folder = record.parent().unwrap().to_path_buf();
    assert_eq!(
        records(&folder),
        1,
        "the contested record, untouched, is rewritten as decided in place"
    );
    assert!(
        std::fs::read_to_string(&record)
            .unwrap()
            .contains("**Chosen:** option B")
    );
    let result = show_json(&home, &id)["debate_result"].clone();
    assert_eq!(result["chosen"]["option"], "B");
    // Seed review 000/001 #7: a second decision needs --force; a record the person edited is
    // never overwritten, the decided one goes beside it.
    let again = home.run(None, &["decide", &id, "c"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(stderr(&again).contains("--force"), "{}", stderr(&again));
    // A7 (a): an option the result does not offer is named as such, decided before or not.
    let unknown_again = home.run(None, &["decide", &id, "Z"]);
    assert_eq!(unknown_again.status.code(), Some(2));
    assert!(
        stderr(&unknown_again).contains("\"Z\"") && !stderr(&unknown_again).contains("--force"),
        "{}",
        stderr(&unknown_again)
    );
    let mut edited = std::fs::read_to_string(&record).unwrap();
    edited.push_str("\nReviewed by the team.\n");
    std::fs::write(&record, &edited).unwrap();
    let forced = home.run(None, &["decide", &id, "c", "--force"]);
    assert_eq!(forced.status.code(), Some(0), "{}", stderr(&forced));
    assert_ne!(recorded_in(&forced), record);
    assert_eq!(std::fs::read_to_string(&record).unwrap(), edited);
    assert_eq!(records(&folder), 2);
    let audit = home.run(None, &["audit", &id, "--verify"]);
    assert_eq!(
        audit.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&audit.stdout)
    );
    let result = show_json(&home, &id)["debate_result"].clone();
    assert_eq!(result["chosen"]["option"], "C");
    assert_eq!(
        result["result_version"], 4,
        "a decided result keeps its version"
    );
    let markdown = home.run(None, &["show", &id, "--markdown"]);
    assert!(
        String::from_utf8_lossy(&markdown.stdout).contains("Online only"),
        "{}",
        String::from_utf8_lossy(&markdown.stdout)
    );
    // A3: one confidence everywhere once the person has chosen.
    assert!(
        String::from_utf8_lossy(&markdown.stdout)
            .contains("**Confidence:** LOW (the judges were split; the person chose option C)"),
        "{}",
        String::from_utf8_lossy(&markdown.stdout)
    );
    assert_eq!(show_json(&home, &id)["confidence"], "Low");
    assert_eq!(result["confidence"], "LOW");
}

#[test]
fn a_contested_panel_reads_the_choice_from_stdin() {
    let server = StandIn::start_in_background(split_panel());
    let home = Home::new();
    let output = home.run_with_stdin(
        Some(&server),
        &[
            "--headless",
            "--checkpoints",
            "stdin",
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
        "continue\nchoose C\n",
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events = events(&output);
    let asks = of_type(&events, "checkpoint");
    let choice = asks
        .iter()
        .find(|a| !a["choices"].as_array().unwrap().is_empty())
        .expect("a choice asked");
    assert_eq!(choice["choices"].as_array().unwrap().len(), 3);
    let id = of_type(&events, "debate_completed")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let result = show_json(&home, &id)["debate_result"].clone();
    assert_eq!(result["chosen"]["option"], "C", "{result}");
}

#[test]
fn a_judge_can_sit_on_its_own_provider_and_protocol_can_come_from_config() {
    let main = StandIn::start_in_background(Behaviour::default());
    let second = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    home.write_config(&format!(
        "protocol = \"panel\"\n\n[providers.second]\nkind = \"openai\"\nbase_url = \"{}\"\nmodel = \"second-model\"\n\n\
         [panel]\nmax_rounds = 1\n\n\
         [[panel.options]]\nid = \"A\"\nlabel = \"Ship now\"\n\n[[panel.options]]\nid = \"B\"\nlabel = \"Wait a quarter\"\n\n\
         [[panel.judges]]\nname = \"Security\"\nstance = \"skeptical\"\ninstruction = \"Minimise attack surface.\"\nprovider = \"second\"\n\n\
         [[panel.judges]]\nname = \"Growth\"\nstance = \"optimistic\"\ninstruction = \"Maximise adoption.\"\n",
        second.openai_base()
    ));
    let output = home.run(
        Some(&main),
        &["--headless", "--no-checkpoints", PANEL_QUESTION],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events = events(&output);
    let started = of_type(&events, "debate_started")[0];
    assert_eq!(started["protocol"], "panel");
    let seats = started["seats"].as_array().unwrap();
    assert_eq!(seats[0]["perspective"], "Security");
    assert_eq!(seats[0]["model"], "second-model");
    assert!(seats[1].get("model").is_none());
    let asked = |server: &StandIn| -> Vec<(String, Option<String>)> {
        server
            .seen()
            .iter()
            .filter(|s| s.kind != "models")
            .map(|s| (s.kind.clone(), s.seat.clone()))
            .collect()
    };
    assert_eq!(
        asked(&second),
        vec![("recommendation".to_string(), Some("S".to_string()))]
    );
    assert_eq!(
        asked(&main),
        vec![("recommendation".to_string(), Some("G".to_string()))]
    );
    let id = of_type(&events, "debate_completed")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let result = show_json(&home, &id)["debate_result"].clone();
    assert_eq!(
        result["recommended_option"], "A",
        "both judges pick the first option: {result}"
    );
    assert_eq!(result["rounds"], 1);
}

#[test]
fn bad_panel_input_is_a_usage_error_with_exit_2() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    let panel = |extra: &[&str]| refused(&home, &server, "panel", extra, PANEL_QUESTION);
    let message = panel(&["--option", "A: One", "--option", "a: Two"]);
    assert!(message.contains("option id A is given twice"), "{message}");
    let message = panel(&["--option", "A:", "--option", "B: Two"]);
    assert!(message.contains("label"), "{message}");
    let message = panel(&["--option", "A: Only"]);
    assert!(message.contains("only one option (A)"), "{message}");
    let many: Vec<String> = (0..27u8)
        .map(|i| format!("{}: option {i}", char::from(b'A' + i % 26)))
        .collect();
    let mut args: Vec<&str> = Vec::new();
    for option in &many {
        args.extend(["--option", option.as_str()]);
    }
    let message = panel(&args);
    assert!(
        message.contains("27 options given; a panel takes at most 26"),
        "{message}"
    );
    let message = panel(&[
        "--option",
        "A: One",
        "--option",
        "B: Two",
        "--context",
        "nowhere/spec.md",
    ]);
    assert!(message.contains("nowhere/spec.md"), "{message}");

    home.write_config("[panel]\nmax_rounds = 2\nconsensus_threshold = 0.4\n");
    let message = panel(&["--option", "A: One", "--option", "B: Two"]);
    assert!(
        message.contains("config.toml:3:") && message.contains("consensus_threshold"),
        "{message}"
    );
    home.write_config("[panel]\nconsensus_threshold = 1.5\n");
    let message = panel(&["--option", "A: One", "--option", "B: Two"]);
    assert!(
        message.contains("config.toml:2:1:")
            && message.contains("must be more than 0.5 and at most 1, not 1.5"),
        "{message}"
    );
    // A value of the wrong type or sign is placed at the value itself (A7 b), not the header.
    home.write_config("[panel]\nmax_rounds = 2\ntimeout_per_judge = -1\n");
    let message = panel(&["--option", "A: One", "--option", "B: Two"]);
    assert!(
        message.contains("config.toml:3:21: [panel] invalid value: integer `-1`"),
        "{message}"
    );
    // A typo in the panel's table is refused whichever protocol runs, and nothing is sent.
    home.write_config("[panel]\nmax_rounds = 2\nconsensus_treshold = 0.6\n");
    let before = server.seen().len();
    let message = refused(&home, &server, "moderated", &[], QUESTION);
    assert!(
        message.contains("config.toml:3:1: [panel]") && message.contains("consensus_treshold"),
        "the typo's own line (issue 23 item 4): {message}"
    );
    assert_eq!(
        server.seen().len(),
        before,
        "nothing is sent for a refused config"
    );
    home.write_config("[panle]\nmax_rounds = 2\n");
    let message = panel(&["--option", "A: One", "--option", "B: Two"]);
    assert!(
        message.contains("config.toml:1:") && message.contains("panle"),
        "{message}"
    );
    // A single option from the config is located in it (seed review 000/001 #14).
    home.write_config(
        "[panel]\nmax_rounds = 2\n\n[[panel.options]]\nid = \"A\"\nlabel = \"One\"\n",
    );
    let message = panel(&[]);
    assert!(
        message.contains("config.toml:4:1: [panel] only one option (A)"),
        "{message}"
    );
    // An unknown protocol named in the config is located there (seed review 000/001 #14).
    home.write_config("provider = \"openai\"\nprotocol = \"panell\"\n");
    let message = refused(&home, &server, "moderated", &[], QUESTION);
    assert!(
        message.contains("config.toml:2:1: protocol:") && message.contains("panell"),
        "{message}"
    );
    home.write_config("");

    let output = home.run(
        Some(&server),
        &["--headless", "--protocol", "jury", QUESTION],
    );
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(
        message.contains("jury") && message.contains("panel") && message.contains("moderated"),
        "{message}"
    );
    let output = home.run(
        Some(&server),
        &["--headless", "--option", "A: One", QUESTION],
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("--protocol panel"),
        "{}",
        stderr(&output)
    );
    assert!(server.seen().is_empty(), "no bad input reached a provider");
}

#[test]
fn a_killed_panel_resumes_in_round_two_after_retries_with_its_words_sanitized() {
    let server = StandIn::start_in_background(converging_panel());
    // Round 1: Risk is rate limited once (retried) and writes escape sequences.
    server.fault(
        FaultRule::new(Fault::RateLimit("0".into()))
            .kind("recommendation")
            .seat("R"),
    );
    server.fault(
        FaultRule::new(Fault::Escapes)
            .kind("recommendation")
            .seat("V"),
    );
    // Round 2: two challenges never come back, so the process is mid-round when killed.
    server.fault(FaultRule::new(Fault::Hang).kind("challenge").times(2));
    let home = Home::new();
    let args = [
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
    ];
    let (mut child, mut reader) = home.spawn(&server, &args);
    let before = read_until(&mut reader, |e| {
        e["type"] == "round_started" && e["round"] == 2
    });
    let id = before[0]["id"].as_str().unwrap().to_string();
    assert!(
        of_type(&before, "retry")
            .iter()
            .any(|r| r["seat"] == "R" && r["reason"].as_str().unwrap().contains("429")),
        "the rate-limited judge was retried: {before:?}"
    );
    for event in &before {
        assert!(
            !event.to_string().contains("\\u001b"),
            "escape reached stdout: {event}"
        );
    }
    assert!(
        server
            .seen()
            .iter()
            .any(|s| s.seat.as_deref() == Some("V") && s.fault == Some(Fault::Escapes)),
        "Value's reply carried escape sequences"
    );
    let value = of_type(&before, "turn_completed")
        .into_iter()
        .find(|t| t["seat"] == "V")
        .expect("Value's round-1 turn");
    assert!(
        value["content"]
            .as_str()
            .unwrap()
            .starts_with("The V judge weighs"),
        "the escape sequences were stripped whole: {value}"
    );
    await_requests(&server, 3, |s| s.kind == "challenge");
    child.kill().unwrap();
    child.wait().unwrap();
    let requests_before = server.seen().len();

    // Its options were given at the start: a resume cannot change them (exit 2, nothing sent).
    let output = home.run(
        Some(&server),
        &["resume", &id, "--option", "A: One", "--option", "B: Two"],
    );
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("it was started with its options (A, B, C)"),
        "{}",
        stderr(&output)
    );
    assert_eq!(server.seen().len(), requests_before);

    let output = home.run(Some(&server), &["resume", &id]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events = events(&output);
    let replayed: Vec<&Value> = of_type(&events, "turn_completed")
        .into_iter()
        .filter(|e| e["replayed"] == true)
        .collect();
    assert!(
        replayed
            .iter()
            .filter(|t| t["phase"] == "recommendation")
            .count()
            == 3,
        "round 1 came from the journal: {replayed:?}"
    );
    let fresh: Vec<String> = server.seen()[requests_before..]
        .iter()
        .filter(|s| s.kind != "models")
        .map(|s| s.kind.clone())
        .collect();
    assert!(
        !fresh.is_empty() && fresh.iter().all(|k| *k == "challenge"),
        "only round 2 was asked again: {fresh:?}"
    );
    let result = show_json(&home, &id)["debate_result"].clone();
    assert_eq!(result["recommended_option"], "A", "{result}");
    let turns = show_json(&home, &id)["turns"].as_array().unwrap().clone();
    assert_eq!(
        turns
            .iter()
            .filter(|t| t["phase"] == "recommendation")
            .count(),
        3,
        "no duplicate turns in the journal"
    );
    let shown = String::from_utf8_lossy(&home.run(None, &["show", &id]).stdout).to_string();
    assert!(!shown.contains('\u{1b}'), "escape sequences reached show");
}

/// Two `show --json` documents of the same debate agree on all that an arena round trip keeps
/// (the protocol's own section named by `section`).
pub(crate) fn assert_same_debate(before: &Value, after: &Value, section: &str) {
    for field in [
        "id",
        "question",
        "protocol",
        "status",
        "seats",
        "turns",
        "commitments",
        "arguments",
        "relations",
        section,
    ] {
        assert_eq!(
            before[field], after[field],
            "{field} differs after the round trip"
        );
    }
    assert_eq!(
        before["synthesis"]["markdown"],
        after["synthesis"]["markdown"]
    );
}

/// Seed review 000/001 #9: run flags a protocol does not read are refused, naming the flag,
/// before anything is sent; a protocol that reads them takes them.
#[test]
fn run_flags_a_protocol_does_not_read_are_refused_not_dropped() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    let options = ["--option", "A: One", "--option", "B: Two"];
    for (flag, named) in [
        (&["--perspective", "Security Advocate"][..], "--perspective"),
        (&["--perspectives", "4"][..], "--perspectives"),
        (&["--follow-up"][..], "--follow-up"),
    ] {
        let extra: Vec<&str> = options.iter().chain(flag).copied().collect();
        let message = refused(&home, &server, "panel", &extra, "Which one?");
        assert!(
            message.contains(named) && message.contains("panel"),
            "{flag:?}: {message}"
        );
    }
    assert!(server.seen().is_empty(), "nothing was sent");
    // The dialogue reads --perspective as its focus, and a moderated debate seats it.
    let output = home.run(
        Some(&server),
        &[
            "--headless",
            "--no-checkpoints",
            "--no-lessons",
            "--max-rounds",
            "1",
            "--perspective",
            "Security Advocate",
            "--follow-up",
            "Should we add SSO?",
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
}

/// Seed review 000/001 #8: a panel paused at its choice is decided with `moot decide`, which
/// journals the answer and finishes the debate without asking a model anything more.
#[test]
fn moot_decide_finishes_a_panel_paused_at_its_choice() {
    let server = StandIn::start_in_background(split_panel());
    let home = Home::new();
    // Stdin stays open and silent after the round's answer, as a person who walked away.
    let mut child = home
        .command(Some(&server))
        .args([
            "--headless",
            "--checkpoints",
            "stdin",
            "--checkpoint-timeout",
            "1",
            "--no-lessons",
            "--protocol",
            "panel",
            "--option",
            "A: Local-first sync",
            "--option",
            "B: Online only",
            "--option",
            "C: Limited offline",
            PANEL_QUESTION,
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    std::io::Write::write_all(&mut stdin, b"continue\n").unwrap();
    let output = child.wait_with_output().unwrap();
    drop(stdin);
    assert_eq!(output.status.code(), Some(3), "paused: {}", stderr(&output));
    let id = of_type(&events(&output), "debate_created")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let requests = server.seen().len();
    let decided = home.run(None, &["decide", &id, "c"]);
    assert_eq!(decided.status.code(), Some(0), "{}", stderr(&decided));
    let stdout = String::from_utf8_lossy(&decided.stdout);
    assert!(
        stdout.contains("**Chosen:** option C: Limited offline"),
        "{stdout}"
    );
    assert_eq!(server.seen().len(), requests, "nothing asked again");
    let shown = show_json(&home, &id);
    assert_eq!(shown["status"], "completed");
    assert_eq!(shown["debate_result"]["chosen"]["option"], "C");
}

/// A1: a panel waiting at its choice under `--checkpoints wait` is answered from the command
/// line: `moot decide ID OPTION` journals the answer for the running debate, which takes it
/// and finishes with that choice; an option it does not offer is refused with exit 2.
#[test]
fn a_running_panel_waiting_at_its_choice_is_decided_from_the_command_line() {
    let server = StandIn::start_in_background(split_panel());
    let home = Home::new();
    let running = home
        .command(Some(&server))
        .args([
            "--headless",
            "--checkpoints",
            "wait",
            "--checkpoint-timeout",
            "120",
            "--protocol",
            "panel",
            "--max-rounds",
            "1",
            PANEL_QUESTION,
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Every other question is approved from the command line as it comes; the choice is
    // what `decide` answers.
    let deadline = Instant::now() + Duration::from_secs(60);
    let id = loop {
        let listed = home.run(None, &["list", "--json"]);
        let listed: Value = serde_json::from_slice(&listed.stdout).unwrap_or(Value::Null);
        if let Some(debate) = listed.as_array().and_then(|a| a.first())
            && debate["stage"]["at"] == "asking"
        {
            let id = debate["id"].as_str().unwrap().to_string();
            if debate["stage"]["kind"] == "choice" {
                break id;
            }
            let approved = home.run(None, &["approve", &id]);
            assert!(
                matches!(approved.status.code(), Some(0 | 2)),
                "{}",
                stderr(&approved)
            );
        }
        assert!(
            Instant::now() < deadline,
            "the panel never waited at its choice: {listed}"
        );
        std::thread::yield_now();
    };
    let unknown = home.run(None, &["decide", &id, "Z"]);
    assert_eq!(unknown.status.code(), Some(2), "{}", stderr(&unknown));
    assert!(
        stderr(&unknown).contains("there is no option \"Z\""),
        "{}",
        stderr(&unknown)
    );
    let decided = home.run(None, &["decide", &id, "b"]);
    assert_eq!(decided.status.code(), Some(0), "{}", stderr(&decided));
    assert!(
        String::from_utf8_lossy(&decided.stdout).contains("answered option B to"),
        "{}",
        String::from_utf8_lossy(&decided.stdout)
    );
    let finished = running.wait_with_output().unwrap();
    assert_eq!(finished.status.code(), Some(0), "{}", stderr(&finished));
    let result = show_json(&home, &id)["debate_result"].clone();
    assert_eq!(result["chosen"]["option"], "B", "{result}");
}

/// `--blind-first` asks a panel for what it always does: round 1's recommendations are given
/// before any judge reads another's (checked in the prompts, against round 2's, which carry
/// them), and the record says the first round was blind. The dialogue, whose opposing side
/// must answer the thesis it is given, refuses it naming every protocol that has it.
#[test]
fn a_panel_takes_blind_first_and_its_first_round_is_blind() {
    let server = StandIn::start_in_background(converging_panel());
    let home = Home::new();
    let output = home.run(
        Some(&server),
        &[
            "--headless",
            "--no-checkpoints",
            "--protocol",
            "panel",
            "--blind-first",
            "--option",
            "A: Local-first sync",
            "--option",
            "B: Online only",
            "--option",
            "C: Limited offline",
            PANEL_QUESTION,
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    for (seat, prompt) in judge_prompts(&server, "recommendation") {
        for other in ["R", "V", "E"].iter().filter(|o| **o != seat) {
            assert!(
                !prompt.contains(&format!("The {other} judge weighs")),
                "{seat} read {other} in round 1: {prompt}"
            );
        }
    }
    let round_two = judge_prompts(&server, "challenge");
    assert!(
        round_two.iter().all(|(seat, prompt)| ["R", "V", "E"]
            .iter()
            .filter(|o| **o != seat)
            .all(|other| prompt.contains(&format!("The {other} judge weighs")))),
        "round 2 reads the others"
    );
    let events = events(&output);
    let record = final_synthesis(&events)["markdown"].as_str().unwrap();
    assert!(
        record.contains("Round 1 was blind (--blind-first), as a panel's always is"),
        "{record}"
    );
    let id = of_type(&events, "debate_completed")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        show_json(&home, &id)["config"]["protocol_settings"]["blind_first"],
        true
    );
    let refused = home.run(
        Some(&server),
        &[
            "--headless",
            "--protocol",
            "dialogue",
            "--blind-first",
            PANEL_QUESTION,
        ],
    );
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains(
            "--blind-first is a flag of the moderated, panel, arena or code protocol, not of dialogue"
        ),
        "{}",
        stderr(&refused)
    );
}
