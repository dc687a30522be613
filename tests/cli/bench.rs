//! `moot bench`: single model, self-consistency and debate arms, resume, bad input, any protocol.

use crate::*;

/// What the stand-in is scripted to do on Du et al.'s arithmetic: alone it errs on problems
/// whose numbers sum to a multiple of three; after reading other agents it is always right.
pub(crate) fn stand_in_errs_alone(question: &str) -> bool {
    let expression = question
        .trim_start_matches("What is the result of ")
        .split('?')
        .next()
        .unwrap();
    let sum: i64 = expression
        .split(['+', '*', '-'])
        .map(|n| n.parse::<i64>().unwrap())
        .sum();
    sum % 3 == 0
}

/// Takes `arm`'s results on the problems `which` (an SQL list) out of run `id`, as an
/// interrupted run leaves them, and resumes the run: how many requests the stand-in had seen
/// before, and what the resume printed (it succeeded).
fn resume_without(
    home: &Home,
    server: &StandIn,
    id: &str,
    arm: &str,
    which: &str,
    out: &std::path::Path,
) -> (usize, std::process::Output) {
    let journal = rusqlite::Connection::open(home.database()).unwrap();
    journal
        .execute(
            &format!(
                "DELETE FROM bench_results WHERE run_id = ?1 AND arm = ?2 AND problem IN ({which})"
            ),
            rusqlite::params![id, arm],
        )
        .unwrap();
    drop(journal);
    let before = server.seen().len();
    let resumed = home.run(
        Some(server),
        &[
            "bench",
            "--resume",
            id,
            "--json",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    (before, resumed)
}

/// `moot bench` on the stand-in with a fixed seed: every arm counted right, the debate's
/// second round reads the others, self-consistency spends the debate's tokens, the reports are
/// written, and an interrupted run resumes asking only what is missing.
#[test]
pub(crate) fn bench_compares_single_self_consistency_and_debate_and_resumes() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    let out = home.path().join("reports");
    let output = home.run(
        Some(&server),
        &[
            "bench",
            "--problems",
            "9",
            "--seed",
            "2",
            "--jobs",
            "3",
            "--json",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let id = report["id"].as_str().unwrap().to_string();
    assert!(stderr(&output).contains(&format!("moot bench --resume {id}")));
    let problems = report["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 9);
    let errs: usize = problems
        .iter()
        .filter(|p| stand_in_errs_alone(p["question"].as_str().unwrap()))
        .count();
    assert!(
        errs > 0 && errs < 9,
        "seed 2 should mix easy and hard problems: {errs}"
    );
    let arm = |name: &str| {
        report["arms"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["arm"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(arm("single")["correct"], 9 - errs);
    assert_eq!(arm("self_consistency")["correct"], 9 - errs);
    assert_eq!(arm("debate")["correct"], 9);
    assert_eq!(arm("debate")["total"], 9);
    let (low, high) = (
        arm("debate")["ci_low"].as_f64().unwrap(),
        arm("debate")["ci_high"].as_f64().unwrap(),
    );
    assert!(low > 0.6 && high == 1.0, "{low} {high}");
    // Debate or vote: the first round's own majority errs where every agent alone errs; the
    // second round turns each of those seats from wrong to right, none the other way, and
    // none towards the others' (wrong) majority.
    let dynamics = &report["dynamics"];
    assert_eq!(
        dynamics["first_round_vote"]["correct"],
        9 - errs,
        "{dynamics}"
    );
    assert_eq!(dynamics["first_round_vote"]["total"], 9);
    assert_eq!(dynamics["transitions"], 9 * 3);
    assert_eq!(dynamics["changed"], 3 * errs);
    assert_eq!(dynamics["wrong_to_right"], 3 * errs);
    assert_eq!(dynamics["right_to_wrong"], 0);
    assert_eq!(dynamics["to_majority"], 0);
    // Anchoring: in round 1 the other two seats give the first seat's answer everywhere (each
    // agent alone answers alike); by round 2 only where that first answer was right.
    assert_eq!(dynamics["first_speaker"]["compared"], 9 * 2);
    assert_eq!(dynamics["first_speaker"]["agreed_first_round"], 9 * 2);
    assert_eq!(
        dynamics["first_speaker"]["agreed_last_round"],
        2 * (9 - errs)
    );
    for name in ["single", "self_consistency", "debate"] {
        let arm = arm(name);
        let per_1k = arm["correct_per_1k_tokens"].as_f64().unwrap();
        let expected = arm["correct"].as_f64().unwrap() * 1000.0 / arm["tokens"].as_f64().unwrap();
        assert!((per_1k - expected).abs() < 1e-9, "{name}: {arm}");
    }
    for problem in problems {
        let results = &problem["results"];
        let debate = &results["debate"];
        assert_eq!(debate["rounds"].as_array().unwrap().len(), 2);
        assert_eq!(debate["rounds"][1].as_array().unwrap().len(), 3);
        assert!(
            results["self_consistency"]["tokens"].as_u64() >= debate["tokens"].as_u64(),
            "self-consistency draws up to the debate's budget: {results}"
        );
        let drawn: usize = results["self_consistency"]["rounds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|round| round.as_array().unwrap().len())
            .sum();
        assert_eq!(
            results["self_consistency"]["samples"], drawn,
            "the samples drawn are counted: {results}"
        );
        assert_eq!(results["single"]["rounds"][0].as_array().unwrap().len(), 1);
    }
    // Round two shows each agent the other two's solutions.
    let second_round: Vec<String> = requests_since(&server, 0)
        .into_iter()
        .filter(|body| body.contains("These are the solutions to the problem from other agents"))
        .collect();
    assert_eq!(second_round.len(), 9 * 3);
    assert!(
        second_round
            .iter()
            .all(|b| b.matches("One agent solution").count() == 2)
    );
    // The reports are written.
    let markdown = std::fs::read_to_string(out.join(format!("{id}.md"))).unwrap();
    assert!(markdown.contains("| debate | 9/9 = 100.0 %"), "{markdown}");
    assert!(markdown.contains("| self-consistency |"), "{markdown}");
    assert!(markdown.contains("right / 1k tokens"), "{markdown}");
    assert!(
        markdown.contains(&format!(
            "## Debate or vote\n\nThe majority of the debate's own first round (no extra call): {}/9",
            9 - errs
        )),
        "{markdown}"
    );
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join(format!("{id}.json"))).unwrap())
            .unwrap();
    assert_eq!(written["arms"], report["arms"]);

    // Interrupted: two problems' single answers never landed. A resume asks for those alone.
    let (before, resumed) = resume_without(&home, &server, &id, "single", "2, 5", &out);
    assert_eq!(requests_since(&server, before).len(), 2);
    let again: Value = serde_json::from_slice(&resumed.stdout).unwrap();
    assert_eq!(again["arms"][0]["correct"], report["arms"][0]["correct"]);
    let asked = |report: &Value| -> Vec<(Value, Value)> {
        report["problems"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p["question"].clone(),
                    p["results"]["single"]["answer"].clone(),
                )
            })
            .collect()
    };
    assert!(
        asked(&again) == asked(&report),
        "the same problems, answered alike again"
    );
}

#[test]
fn bad_bench_input_is_a_usage_error_with_the_line_named() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    let dataset = home.path().join("set.jsonl");
    let check = |text: &str, expected: &str| {
        std::fs::write(&dataset, text).unwrap();
        let output = home.run(
            Some(&server),
            &["bench", "--dataset", dataset.to_str().unwrap()],
        );
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        assert!(stderr(&output).contains(expected), "{}", stderr(&output));
    };
    // A blank line is no error (seed review 004 #14); a bad one after it is named by number.
    check(
        "{\"question\": \"2+2?\", \"answer\": 4}\n\n{\"question\": \"x\"}\n",
        "set.jsonl:3: needs a non-empty \"question\"",
    );
    check(
        "{\"question\": \"2+2?\", \"answer\": 4}\n{\"question\": \"x\",",
        "set.jsonl:2:",
    );
    check(
        "{\"question\": \"2+2?\"}\n",
        "set.jsonl:1: needs a non-empty \"question\"",
    );
    check("", "has no problems");
    for (args, expected) in [
        (
            &["bench", "--arms", "single,vote"][..],
            "unknown arm \"vote\"",
        ),
        (
            &["bench", "--resume", "BENCH-nope"][..],
            "there is no bench run BENCH-nope",
        ),
        (&["bench", "--problems", "0"][..], "--problems"),
        (&["bench", "--set", "trivia"][..], "--set"),
    ] {
        let output = home.run(Some(&server), args);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(stderr(&output).contains(expected), "{}", stderr(&output));
    }
    assert!(server.seen().is_empty(), "nothing was sent");
}

/// `--protocol moderated`: the debate arm is a real moderated debate per problem, journaled,
/// its answer read from the record's recommendation.
#[test]
fn the_bench_debate_arm_can_be_any_protocol() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    let output = home.run(
        Some(&server),
        &[
            "bench",
            "--protocol",
            "moderated",
            "--arms",
            "debate",
            "--problems",
            "2",
            "--seed",
            "2",
            "--json",
            "--out",
            home.path().to_str().unwrap(),
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["protocol"], "moderated");
    assert_eq!(report["arms"][0]["correct"], 2, "{report}");
    let debates = home.run(None, &["list", "--json"]);
    let list: Value = serde_json::from_slice(&debates.stdout).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 2);
    assert!(
        list[0]["question"]
            .as_str()
            .unwrap()
            .starts_with("What is the result of")
    );
    let reply = report["problems"][0]["results"]["debate"]["rounds"][0][0]["reply"]
        .as_str()
        .unwrap();
    assert!(
        reply.starts_with("DEB-") && reply.contains("Answer:"),
        "{reply}"
    );
    let unknown = home.run(Some(&server), &["bench", "--protocol", "jury"]);
    assert_eq!(unknown.status.code(), Some(2));
}

/// `moot bench --set code` on the stand-in: the three arms write code for the bundled
/// problems, the hidden tests run on each arm's code in the sandbox, and pass@1 shows the
/// debate's exchange fixing what one answer got wrong.
#[test]
fn bench_code_runs_every_arm_against_hidden_tests_in_the_sandbox() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    let out = home.path().join("reports");
    let output = home.run(
        Some(&server),
        &[
            "bench",
            "--set",
            "code",
            "--json",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["set"], "code");
    let arm = |name: &str| {
        report["arms"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["arm"] == name)
            .unwrap()
            .clone()
    };
    // Alone the stand-in forgets backoff's cap and max_of's loop; the exchange fixes both.
    for (name, passed) in [("single", 3), ("self_consistency", 3), ("debate", 5)] {
        let summary = arm(name);
        assert_eq!(
            (summary["correct"].as_u64(), summary["total"].as_u64()),
            (Some(passed), Some(5)),
            "{name}: {summary}"
        );
        assert!(
            summary["sandbox"].as_str().is_some_and(|s| !s.is_empty()),
            "{name}: the tests ran boxed: {summary}"
        );
        assert!(summary["test_runtime_ms"].as_u64().is_some(), "{summary}");
    }
    let backoff = report["problems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["question"].as_str().unwrap().contains("`backoff`"))
        .unwrap();
    let single = &backoff["results"]["single"];
    assert_eq!(single["correct"], false);
    assert!(
        single["answer"].as_str().unwrap().contains("1 << ($1 - 1)"),
        "{single}"
    );
    assert_eq!(backoff["results"]["debate"]["check"]["passed"], true);
    // The model never saw the hidden tests.
    assert!(
        requests_since(&server, 0)
            .iter()
            .all(|body| !body.contains("backoff 20 100")),
        "the tests stay hidden"
    );
    let id = report["id"].as_str().unwrap();
    let markdown = std::fs::read_to_string(out.join(format!("{id}.md"))).unwrap();
    assert!(
        markdown.contains("| arm | pass@1 |") && markdown.contains("| debate | 5/5 = 100.0 %"),
        "{markdown}"
    );
    assert!(
        markdown.contains("Hidden tests, run on each arm's code in the sandbox"),
        "{markdown}"
    );

    // A HumanEval-shaped file is read as such; a bad line is named.
    let dataset = home.path().join("humaneval.jsonl");
    std::fs::write(
        &dataset,
        "{\"task_id\": \"HumanEval/0\", \"prompt\": \"def inc(x):\\n    \\\"\\\"\\\"x + 1\\\"\\\"\\\"\\n\", \"entry_point\": \"inc\", \"canonical_solution\": \"    return x + 1\\n\", \"test\": \"def check(candidate):\\n    assert candidate(1) == 2\\n\"}\n{\"task_id\": \"HumanEval/1\", \"prompt\": \"x\", \"entry_point\": \"not a name\", \"test\": \"t\"}\n",
    )
    .unwrap();
    let refused = home.run(
        Some(&server),
        &[
            "bench",
            "--set",
            "code",
            "--dataset",
            dataset.to_str().unwrap(),
        ],
    );
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused)
            .contains("humaneval.jsonl:2: \"entry_point\" \"not a name\" is not a function name"),
        "{}",
        stderr(&refused)
    );
    // Without the bad line, the HumanEval problem runs: Python, the prompt's stub, the code, the
    // tests' `check(inc)`, in the sandbox.
    std::fs::write(
        &dataset,
        "{\"task_id\": \"HumanEval/0\", \"prompt\": \"def inc(x):\\n    \\\"\\\"\\\"x + 1\\\"\\\"\\\"\\n\", \"entry_point\": \"inc\", \"test\": \"def check(candidate):\\n    assert candidate(1) == 2\\n    assert candidate(-1) == 0\\n\"}\n",
    )
    .unwrap();
    let output = home.run(
        Some(&server),
        &[
            "bench",
            "--set",
            "code",
            "--dataset",
            dataset.to_str().unwrap(),
            "--arms",
            "single",
            "--json",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let single = &report["problems"][0]["results"]["single"];
    assert_eq!(single["correct"], true, "{single}");
    assert!(single["check"]["sandbox"].as_str().is_some(), "{single}");
    let refused = home.run(
        Some(&server),
        &["bench", "--set", "code", "--protocol", "moderated"],
    );
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("drop --protocol"),
        "{}",
        stderr(&refused)
    );
}

/// `moot bench --set choice`: multiple-choice questions scored by letter, the bundled ones and
/// an MMLU-shaped file whose answers are indexes.
#[test]
fn bench_choice_scores_letters_from_the_bundled_set_and_an_mmlu_shaped_file() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    let out = home.path().join("reports");
    let output = home.run(
        Some(&server),
        &[
            "bench",
            "--set",
            "choice",
            "--arms",
            "single",
            "--json",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    // The stand-in picks the longest choice: right on 6 of the 10 bundled questions.
    assert_eq!(report["arms"][0]["correct"], 6, "{}", report["arms"]);
    assert_eq!(report["arms"][0]["total"], 10);
    let first = &report["problems"][0];
    assert_eq!(first["answer"], "C");
    assert_eq!(first["results"]["single"]["answer"], "C");
    assert!(
        requests_since(&server, 0)
            .iter()
            .any(|body| body.contains("C. The 99th percentile latency")
                && body.contains("`Answer: <letter>`")),
        "the choices are lettered and the letter asked for"
    );
    let dataset = home.path().join("mmlu.jsonl");
    std::fs::write(
        &dataset,
        "{\"question\": \"Which is a prime?\", \"subject\": \"math\", \"choices\": [\"4\", \"6\", \"7\", \"8\"], \"answer\": 2}\n{\"question\": \"Pick one\", \"choices\": [\"only\"], \"answer\": 0}\n",
    )
    .unwrap();
    let refused = home.run(
        Some(&server),
        &[
            "bench",
            "--set",
            "choice",
            "--dataset",
            dataset.to_str().unwrap(),
        ],
    );
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("mmlu.jsonl:2: \"choices\" must be 2–26"),
        "{}",
        stderr(&refused)
    );
    std::fs::write(
        &dataset,
        "{\"question\": \"Which is a prime?\", \"subject\": \"math\", \"choices\": [\"4\", \"6\", \"7\", \"8\"], \"answer\": 2}\n",
    )
    .unwrap();
    let output = home.run(
        Some(&server),
        &[
            "bench",
            "--set",
            "choice",
            "--dataset",
            dataset.to_str().unwrap(),
            "--arms",
            "single",
            "--json",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        report["problems"][0]["answer"], "C",
        "index 2 is the letter C"
    );
}

/// `--blind-first` with `--protocol` adds a blind-first arm beside the protocol's debate: the
/// same debates with no rebuttal asked in round 1, said in the report; `--seat-model` adds a
/// mixed arm whose debates seat that seat on its model. Without a protocol, or with one that
/// has no blind round or seats its own debaters, they are refused.
#[test]
fn the_bench_measures_a_protocols_blind_first_round_and_mixed_seats_as_arms() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    home.write_config("");
    let output = home.run(
        Some(&server),
        &[
            "bench",
            "--protocol",
            "moderated",
            "--blind-first",
            "--seat-model",
            "B=openai:oracle-model",
            "--arms",
            "debate,blind-first,mixed",
            "--problems",
            "1",
            "--rounds",
            "2",
            "--out",
            home.path().to_str().unwrap(),
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let shown = String::from_utf8_lossy(&output.stdout);
    assert!(
        shown.contains("debate: the moderated protocol, 3 seats, at most 2 rounds; blind-first: the same debate with a blind first round; mixed: the same debate with its seats on A: "),
        "{shown}"
    );
    assert!(shown.contains("B: openai:oracle-model"), "{shown}");
    for arm in ["debate", "blind-first", "mixed"] {
        assert!(shown.contains(&format!("| {arm} | 1/1")), "{arm}: {shown}");
    }
    // Three debates journaled, one per arm: the blind one alone asks no rebuttal in round 1,
    // the mixed one alone seats B on its own model.
    let list: Value = serde_json::from_slice(&home.run(None, &["list", "--json"]).stdout).unwrap();
    let debates: Vec<Value> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|d| show_json(&home, d["id"].as_str().unwrap()))
        .collect();
    assert_eq!(debates.len(), 3);
    let rebuts_in_round_1 = |debate: &Value| {
        debate["turns"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["phase"] == "rebuttal" && t["round"] == 1)
    };
    let blind: Vec<&Value> = debates
        .iter()
        .filter(|d| d["config"]["protocol_settings"]["blind_first"] == true)
        .collect();
    assert_eq!(blind.len(), 1);
    assert!(!rebuts_in_round_1(blind[0]));
    assert_eq!(debates.iter().filter(|d| rebuts_in_round_1(d)).count(), 2);
    let mixed: Vec<&Value> = debates
        .iter()
        .filter(|d| d["seats"].to_string().contains("oracle-model"))
        .collect();
    assert_eq!(mixed.len(), 1, "{debates:?}");
    assert!(
        mixed[0]["config"]["protocol_settings"]["blind_first"] != true,
        "the mixed arm is the debate as it is, seats aside"
    );
    for (refused, says) in [
        (vec!["bench", "--blind-first"], "--protocol moderated"),
        (vec!["bench", "--arms", "single,blind-first"], "--protocol"),
        (
            vec!["bench", "--blind-first", "--protocol", "dialogue"],
            "not of dialogue",
        ),
        (
            vec![
                "bench",
                "--blind-first",
                "--protocol",
                "moderated",
                "--arms",
                "debate",
            ],
            "add blind-first to --arms",
        ),
        (
            vec!["bench", "--seat-model", "A=openai:x", "--protocol", "panel"],
            "seats its own debaters",
        ),
    ] {
        let output = home.run(Some(&server), &refused);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{refused:?}: {}",
            stderr(&output)
        );
        assert!(stderr(&output).contains(says), "{}", stderr(&output));
    }
}

/// `--seat-model` puts Du et al.'s seats on models of their own as a mixed arm beside the
/// debate. The stand-in's oracle model answers right alone where the stand-in's own errs, so on
/// the hard problems the mixed first round's vote is right (two of three seats) while the
/// single-model first round's is wrong, the third seat alone goes from wrong to right, and it
/// goes to the others' majority. Bad seats and an arm without its flag are refused; a resume
/// asks the oracle again.
#[test]
fn the_bench_measures_seats_on_mixed_models_as_an_arm() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    home.write_config("");
    let out = home.path().join("reports");
    let output = home.run(
        Some(&server),
        &[
            "bench",
            "--problems",
            "9",
            "--seed",
            "2",
            "--jobs",
            "3",
            "--seat-model",
            "A=openai:oracle-model",
            "--seat-model",
            "b=openai:oracle-model",
            "--json",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let id = report["id"].as_str().unwrap().to_string();
    let errs = report["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| stand_in_errs_alone(p["question"].as_str().unwrap()))
        .count();
    assert!(errs > 0 && errs < 9, "{errs}");
    let arms: Vec<&str> = report["arms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["arm"].as_str().unwrap())
        .collect();
    assert_eq!(arms, ["single", "self_consistency", "debate", "mixed"]);
    assert_eq!(report["arms"][3]["correct"], 9);
    let seats = report["mixed_seats"].as_array().unwrap();
    assert_eq!(seats[0], "A: openai / oracle-model");
    assert_eq!(seats[1], "B: openai / oracle-model");
    assert!(
        seats[2].as_str().unwrap().starts_with("C: ") && !seats[2].to_string().contains("oracle"),
        "{seats:?}"
    );
    let (debate, mixed) = (&report["dynamics"], &report["mixed_dynamics"]);
    assert_eq!(debate["first_round_vote"]["correct"], 9 - errs);
    assert_eq!(mixed["first_round_vote"]["correct"], 9, "{mixed}");
    assert_eq!(mixed["transitions"], 9 * 3);
    assert_eq!(mixed["wrong_to_right"], errs);
    assert_eq!(mixed["right_to_wrong"], 0);
    assert_eq!(mixed["to_majority"], errs);
    // The oracle was asked by two seats of the mixed arm in both rounds, and nowhere else: on
    // a hard problem the mixed arm's first two seats answered right alone, its third did not.
    let oracle = server
        .seen()
        .into_iter()
        .filter(|s| s.body["model"] == ORACLE_MODEL)
        .count();
    assert_eq!(oracle, 9 * 2 * 2);
    for problem in report["problems"].as_array().unwrap() {
        let first: Vec<bool> = problem["results"]["mixed"]["rounds"][0]
            .as_array()
            .unwrap()
            .iter()
            .map(|call| call["answer"] == problem["answer"])
            .collect();
        let hard = stand_in_errs_alone(problem["question"].as_str().unwrap());
        assert_eq!(first, [true, true, !hard], "{problem}");
    }
    let markdown = std::fs::read_to_string(out.join(format!("{id}.md"))).unwrap();
    assert!(
        markdown.contains("mixed: the same debate with its seats on A: openai / oracle-model, B: openai / oracle-model, C: "),
        "{markdown}"
    );
    assert!(markdown.contains("| mixed | 9/9 = 100.0 %"), "{markdown}");
    assert!(
        markdown.contains("## Mixed models: debate or vote\n\nThe majority of the mixed debate's own first round (no extra call): 9/9"),
        "{markdown}"
    );

    // A resume asks the mixed arm's seats on the models the run was started with.
    let (before, _) = resume_without(&home, &server, &id, "mixed", "4", &out);
    let asked: Vec<Value> = server.seen()[before..]
        .iter()
        .filter(|s| s.path.ends_with("/chat/completions"))
        .map(|s| s.body["model"].clone())
        .collect();
    assert_eq!(asked.len(), 3 * 2, "{asked:?}");
    assert_eq!(asked.iter().filter(|m| *m == ORACLE_MODEL).count(), 2 * 2);

    for (refused, says) in [
        (
            vec!["bench", "--arms", "single,mixed"],
            "--seat-model SEAT=",
        ),
        (vec!["bench", "--seat-model", "D=openai:x"], "A, B, C"),
        (vec!["bench", "--seat-model", "A"], "SEAT=PROVIDER[:MODEL]"),
        (
            vec!["bench", "--seat-model", "A=nosuchprofile"],
            "nosuchprofile",
        ),
        (
            vec!["bench", "--seat-model", "A=openai:x", "--arms", "single"],
            "add mixed to --arms",
        ),
    ] {
        let output = home.run(Some(&server), &refused);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{refused:?}: {}",
            stderr(&output)
        );
        assert!(stderr(&output).contains(says), "{}", stderr(&output));
    }
}
