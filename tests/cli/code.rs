//! Code debates: versions in moot's own git dir, reflexion, hooks, the person's answers, apply, resume.

use crate::*;

/// moot's own git dir for a code debate's versions, beside the journal.
pub(crate) fn versions_git_dir(home: &Home, id: &str) -> PathBuf {
    home.database()
        .parent()
        .unwrap()
        .join("versions")
        .join(format!("{id}.git"))
}

/// A code debate's commits, newest first, from moot's own git dir.
pub(crate) fn versions_log(home: &Home, id: &str) -> String {
    git_in(
        &versions_git_dir(home, id),
        &["log", "--format=%s", &format!("moot/{id}")],
    )
}

pub(crate) fn git_in(dir: &Path, args: &[&str]) -> String {
    let output = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).to_string()
}

/// A small project the test makes: calc.sh subtracts where it should add, and test.sh says so.
pub(crate) fn calc_project(home: &Home) {
    calc_files(home);
    let dir = home.path();
    git_in(dir, &["init", "-q", "-b", "main"]);
    git_in(dir, &["add", "-A"]);
    git_in(dir, &["commit", "-q", "-m", "calc"]);
}

/// calc_project's files, outside git.
pub(crate) fn calc_files(home: &Home) {
    let dir = home.path();
    std::fs::write(
        dir.join(".gitignore"),
        "moot-home/\nxdg-*/\nconfig.toml\nmodels/\ndocs/\n",
    )
    .unwrap();
    std::fs::write(dir.join("calc.sh"), "#!/bin/sh\necho $(( $1 - $2 ))\n").unwrap();
    std::fs::write(
        dir.join("test.sh"),
        "p=0; f=0\n\
         if [ \"$(sh calc.sh 2 3)\" = 5 ]; then p=$((p+1)); else f=$((f+1)); fi\n\
         if [ \"$(sh calc.sh 0 0)\" = 0 ]; then p=$((p+1)); else f=$((f+1)); fi\n\
         if [ $f -eq 0 ]; then echo \"test result: ok. $p passed; $f failed\"; else echo \"test result: FAILED. $p passed; $f failed\"; exit 1; fi\n",
    )
    .unwrap();
}

/// The code debate on the stand-in's scripted replies: two failing attempts, each reflected
/// on (both reflections in the third prompt), a third that passes, critics, an optimised
/// version, red against blue, the Judge's scores, a passing winner; the user's files untouched,
/// every version on the debate's branch, and a path escape refused.
#[test]
pub(crate) fn a_code_debate_reaches_a_passing_version_through_reflexion_in_its_own_worktree() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    calc_project(&home);
    let output = home.run(
        Some(&server),
        &[
            "--headless",
            "--no-checkpoints",
            "--protocol",
            "code",
            "--file",
            "calc.sh",
            "--test",
            "sh test.sh",
            "--red-blue",
            "--seat",
            "performance-analyzer",
            "--seat",
            "Refactorer",
            "--skip",
            "self-check",
            "Make calc.sh add its two arguments",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events = events(&output);
    let id = of_type(&events, "debate_completed")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    // The critics are the ones --seat named; Security still sits, as red.
    let seats: Vec<String> = of_type(&events, "debate_started")[0]["seats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["perspective"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        seats,
        [
            "Generator",
            "PerformanceAnalyzer",
            "Refactorer",
            "Designer",
            "Security",
            "Judge"
        ]
    );
    // The phases, in the note's order, each announced once for the header (seed review 004
    // #14: the proposal was announced again at each attempt).
    let stages: Vec<&str> = of_type(&events, "stage")
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        stages,
        [
            "clarification",
            "proposal",
            "critique",
            "review",
            "optimization",
            "adversarial",
            "convergence"
        ],
        "{stages:?}"
    );
    // Clarification: the Generator asked by category, the Designer answered from the context
    // (headless), and the second round found it confident; the answer is in every later prompt.
    let seen = server.seen();
    assert_eq!(
        seen.iter().filter(|s| s.kind == "code_questions").count(),
        2
    );
    assert_eq!(seen.iter().filter(|s| s.kind == "code_answers").count(), 1);
    // The review read the critiques, and the optimised version read the review.
    let review = seen.iter().find(|s| s.kind == "code_review").unwrap();
    assert!(
        review
            .body
            .to_string()
            .contains("does not check that its arguments are numbers")
    );
    assert!(
        seen.iter().filter(|s| s.kind == "code").any(|s| s
            .body
            .to_string()
            .contains("The Judge's review of them")
            && s.body
                .to_string()
                .contains("Answer the point about non-numeric")),
        "the optimisation prompt carries the review"
    );
    let critics = server
        .seen()
        .iter()
        .filter(|s| s.kind == "critique")
        .count();
    assert_eq!(critics, 2);
    // The hooks' results are announced per version (the Tests panel reads them).
    let hooks = of_type(&events, "hooks");
    assert!(hooks.len() >= 4, "{hooks:?}");
    assert_eq!(hooks[0]["version"], 1);
    assert_eq!(hooks[0]["results"][0][1], false);
    assert!(
        hooks[0]["results"][0][0]
            .as_str()
            .unwrap()
            .starts_with("test: 1 passed, 1 failed"),
        "{hooks:?}"
    );
    assert_eq!(hooks[2]["results"][0][1], true);
    let generations: Vec<String> = server
        .seen()
        .iter()
        .filter(|s| s.kind == "code")
        .map(|s| s.body.to_string())
        .collect();
    assert!(generations.len() >= 4, "{}", generations.len());
    assert!(generations[0].contains("calc.sh") && !generations[0].contains("Reflections"));
    assert!(
        generations
            .iter()
            .all(|g| g.contains("Exit non-zero with a message on stderr")),
        "the clarification is in every version's prompt"
    );
    assert!(
        generations[2].contains("attempt 1: root cause")
            && generations[2].contains("attempt 2: root cause"),
        "{}",
        generations[2]
    );
    let result = show_json(&home, &id)["code_result"].clone();
    let versions = result["versions"].as_array().unwrap();
    assert!(versions.len() >= 4, "{result}");
    assert_eq!(versions[0]["hooks_ok"], false);
    assert_eq!(versions[1]["hooks_ok"], false);
    assert_eq!(versions[2]["hooks_ok"], true);
    let winner = result["winner"].as_u64().unwrap();
    assert!(
        versions[winner as usize - 1]["hooks_ok"] == true,
        "{result}"
    );
    assert!(
        result["winner_reason"]
            .as_str()
            .unwrap()
            .contains("passes its tests")
    );
    assert_eq!(result["reflections"].as_array().unwrap().len(), 2);
    // Seed review 004 #13: the second reflection is given the first.
    let reflections: Vec<String> = server
        .seen()
        .iter()
        .filter(|s| s.kind == "code_reflection")
        .map(|s| s.body.to_string())
        .collect();
    assert_eq!(reflections.len(), 2);
    assert!(!reflections[0].contains("Reflections on earlier attempts"));
    assert!(reflections[1].contains("Reflections on earlier attempts"));
    assert_eq!(
        result["clarifications"][0][2], "the Designer, from the context",
        "{result}"
    );
    assert_eq!(versions[0]["phase"], "proposal");
    assert_eq!(versions[3]["phase"], "optimization");
    assert_eq!(versions[4]["phase"], "defence");
    assert!(
        result["notes"]
            .to_string()
            .contains("whether negative numbers are allowed")
    );
    assert_eq!(result["findings"][0]["test"], "tests/red_nonnumeric.sh");
    assert!(
        result["notes"].to_string().contains("`..`"),
        "the escape was refused: {result}"
    );
    // The user's tree is as it was; moot's own git dir holds a commit per version.
    assert_eq!(
        std::fs::read_to_string(home.path().join("calc.sh")).unwrap(),
        "#!/bin/sh\necho $(( $1 - $2 ))\n"
    );
    assert!(!home.path().join("../escape.sh").exists());
    let log = versions_log(&home, &id);
    // Version 1 rewrote calc.sh as it was: nothing to commit.
    assert!(
        log.contains("moot version 2: multiplies") && log.contains("moot version 3: adds"),
        "{log}"
    );
    let record = final_synthesis(&events)["markdown"]
        .as_str()
        .unwrap()
        .to_string();
    for section in [
        "## Final code",
        "## Versions",
        "## Test history",
        "## Red team findings",
        "## Reflections",
    ] {
        assert!(record.contains(section), "{section}: {record}");
    }
    assert!(
        record.contains("```bash") || record.contains("```text"),
        "{record}"
    );
    // The work tree is gone (no --keep); the user's repository gained no branch and no
    // worktree.
    assert!(!std::env::temp_dir().join(format!("moot-{id}")).exists());
    let trees = git_in(home.path(), &["worktree", "list"]);
    assert_eq!(trees.lines().count(), 1, "{trees}");
    assert_eq!(git_in(home.path(), &["branch", "--list", "moot/*"]), "");

    // moot code versions | diff | apply.
    let listed = home.run(None, &["code", "versions", &id]);
    let listed = String::from_utf8_lossy(&listed.stdout).to_string();
    assert!(
        listed.contains(&format!("★ v{winner}")) && listed.contains("v1   fail"),
        "{listed}"
    );
    // The episodes: two failed attempts, each with its reflection, then the passing one.
    let episodes: Value =
        serde_json::from_slice(&home.run(None, &["code", "episodes", &id, "--json"]).stdout)
            .unwrap();
    let episodes = episodes["episodes"].as_array().unwrap();
    assert_eq!(episodes.len(), 3, "{episodes:?}");
    assert_eq!(episodes[0]["tests"][0]["failed"], 1);
    assert_eq!(
        episodes[1]["reflection"]["root_cause"],
        "the operator in calc.sh is wrong"
    );
    assert!(episodes[2]["reflection"].is_null());
    assert_eq!(episodes[2]["version"]["hooks_ok"], true);
    let listed = home.run(None, &["code", "episodes", &id]);
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("attempt 2 · version 2 · failed"),
        "{}",
        String::from_utf8_lossy(&listed.stdout)
    );
    let diff = home.run(None, &["code", "diff", &id, "1", "3"]);
    let diff = String::from_utf8_lossy(&diff.stdout).to_string();
    assert!(
        diff.contains("-echo $(( $1 - $2 ))") && diff.contains("+echo $(( $1 + $2 ))"),
        "{diff}"
    );
    // The debate's own record (docs/decisions, untracked) does not make the tree dirty; a
    // change to a tracked file does.
    std::fs::write(home.path().join("test.sh"), "exit 0\n").unwrap();
    let dirty = home.run(None, &["code", "apply", &id]);
    assert_eq!(dirty.status.code(), Some(2));
    assert!(stderr(&dirty).contains("uncommitted changes") && stderr(&dirty).contains("--force"));
    assert!(
        std::fs::read_to_string(home.path().join("calc.sh"))
            .unwrap()
            .contains("- $2")
    );
    let applied = home.run(None, &["code", "apply", &id, "--force"]);
    assert_eq!(applied.status.code(), Some(0), "{}", stderr(&applied));
    assert!(
        std::fs::read_to_string(home.path().join("calc.sh"))
            .unwrap()
            .contains("+ $2")
    );
    let missing = home.run(None, &["code", "diff", &id, "1", "99"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("no version 99"));
    // With moot's git dir gone, the journal's files stand in: the same change is shown and
    // applied.
    git_in(home.path(), &["checkout", "-q", "--", "calc.sh", "test.sh"]);
    std::fs::remove_dir_all(versions_git_dir(&home, &id)).unwrap();
    let diff = home.run(None, &["code", "diff", &id, "1", "3"]);
    let diff = String::from_utf8_lossy(&diff.stdout).to_string();
    assert!(
        diff.contains("-echo $(( $1 - $2 ))") && diff.contains("+echo $(( $1 + $2 ))"),
        "{diff}"
    );
    let applied = home.run(None, &["code", "apply", &id]);
    assert_eq!(applied.status.code(), Some(0), "{}", stderr(&applied));
    assert!(
        std::fs::read_to_string(home.path().join("calc.sh"))
            .unwrap()
            .contains("+ $2")
    );
}

/// Outside git, with the person at the checkpoint: they answer the Generator's questions
/// themselves (no Designer); a reflection less sure of its fix than `[code]
/// min_fix_confidence` stops the Reflexion loop; the debate works in a copy, said once;
/// `code diff` and `code apply` read the journal and refuse to overwrite a file changed since;
/// and the failed attempt's reflection becomes a lesson a later code debate is given.
#[test]
pub(crate) fn a_code_debate_outside_git_takes_the_persons_answers_stops_when_unsure_and_leaves_a_lesson()
 {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    home.write_config("[lessons]\nenabled = true\n[code]\nmin_fix_confidence = 0.8\n");
    calc_files(&home);
    let task = "Make calc.sh add its two arguments";
    let mut child = home
        .command(Some(&server))
        .args([
            "--headless",
            "--checkpoints",
            "stdin",
            "--protocol",
            "code",
            "--file",
            "calc.sh",
            "--test",
            "sh test.sh",
            "--skip",
            "self-check",
            task,
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut reader = EventLines::new(child.stdout.take().unwrap());
    let asked = read_until(&mut reader, |e| e["type"] == "clarification_requested");
    let question = asked.last().unwrap()["question"].as_str().unwrap();
    assert!(
        question.contains("[edge cases] What should calc.sh do with a non-numeric argument?"),
        "{question}"
    );
    writeln!(
        stdin,
        "g Print an error on stderr and exit 2 for non-numbers"
    )
    .unwrap();
    let seen_events = read_until(&mut reader, |e| e["type"] == "debate_completed");
    drop(stdin);
    child.wait().unwrap();
    let id = seen_events.last().unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        seen_events.last().unwrap()["status"],
        "completed",
        "{seen_events:?}"
    );

    // The person's answer, not the Designer's, is in every prompt after it.
    let seen = server.seen();
    assert_eq!(seen.iter().filter(|s| s.kind == "code_answers").count(), 0);
    let generations: Vec<String> = seen
        .iter()
        .filter(|s| s.kind == "code")
        .map(|s| s.body.to_string())
        .collect();
    assert_eq!(generations.len(), 2, "one attempt, then the optimisation");
    assert!(
        generations
            .iter()
            .all(|g| g.contains("exit 2 for non-numbers")),
        "{generations:?}"
    );
    let result = show_json(&home, &id)["code_result"].clone();
    assert_eq!(
        result["clarifications"][0][1],
        "Print an error on stderr and exit 2 for non-numbers"
    );
    assert!(
        result["clarifications"][0][2]
            .as_str()
            .unwrap()
            .ends_with("on standard input"),
        "{result}"
    );
    // The reflection was 70 % sure of its fix, under the 80 % asked for: no second attempt.
    assert_eq!(
        seen.iter().filter(|s| s.kind == "code_reflection").count(),
        1
    );
    assert_eq!(result["reflections"].as_array().unwrap().len(), 1);
    let notes = result["notes"].to_string();
    assert!(
        notes.contains("stopped after attempt 1")
            && notes.contains("70 %")
            && notes.contains("80 %"),
        "{notes}"
    );
    let versions = result["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 2, "{result}");
    assert_eq!(versions[0]["hooks_ok"], false);
    assert_eq!(versions[1]["phase"], "optimization");
    assert_eq!(result["winner"], 2);
    assert!(
        versions.iter().all(|v| v["commit"].is_null()),
        "no git, no commits"
    );

    // A copy, said once; the user's file untouched until applied.
    let record = final_synthesis(&seen_events)["markdown"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        record
            .matches("is not a git work tree: the debate worked in a temporary copy.")
            .count(),
        1,
        "{record}"
    );
    assert!(
        record.contains(&format!("moot code apply {id} --version 2")),
        "{record}"
    );
    let original = "#!/bin/sh\necho $(( $1 - $2 ))\n";
    assert_eq!(
        std::fs::read_to_string(home.path().join("calc.sh")).unwrap(),
        original
    );
    let every_event = [asked.clone(), seen_events.clone()].concat();
    assert_eq!(
        of_type(&every_event, "notice")
            .iter()
            .filter(|n| n["message"].as_str().unwrap().contains("temporary copy"))
            .count(),
        1,
        "told once, as it started"
    );
    let listed = home.run(None, &["code", "versions", &id]);
    let listed = String::from_utf8_lossy(&listed.stdout).to_string();
    assert!(
        listed.contains("2 lines") && !listed.contains("(no change)"),
        "{listed}"
    );
    let diff = home.run(None, &["code", "diff", &id, "1", "2"]);
    assert_eq!(diff.status.code(), Some(0), "{}", stderr(&diff));
    let diff = String::from_utf8_lossy(&diff.stdout).to_string();
    assert!(
        diff.contains("-echo $(( $1 - $2 ))") && diff.contains("+echo $(( $1 + $2 ))"),
        "{diff}"
    );
    std::fs::write(home.path().join("calc.sh"), "#!/bin/sh\necho mine\n").unwrap();
    let refused = home.run(None, &["code", "apply", &id]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("calc.sh changed since the debate started")
            && stderr(&refused).contains("--force"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(
        std::fs::read_to_string(home.path().join("calc.sh")).unwrap(),
        "#!/bin/sh\necho mine\n"
    );
    std::fs::write(home.path().join("calc.sh"), original).unwrap();
    let applied = home.run(None, &["code", "apply", &id]);
    assert_eq!(applied.status.code(), Some(0), "{}", stderr(&applied));
    assert!(String::from_utf8_lossy(&applied.stdout).contains("applied version 2"));
    assert_eq!(
        std::fs::read_to_string(home.path().join("calc.sh")).unwrap(),
        "#!/bin/sh\necho $(( $1 + $2 ))\n"
    );
    let test = std::process::Command::new("sh")
        .arg("test.sh")
        .current_dir(home.path())
        .output()
        .unwrap();
    assert!(
        test.status.success(),
        "the applied version passes the tests"
    );

    // The lessons step read the reflection and was asked to generalise it; the lesson it
    // wrote reaches the next code debate on this task.
    let reflecting = seen
        .iter()
        .find(|s| s.kind == "lessons")
        .unwrap()
        .body
        .to_string();
    assert!(
        reflecting.contains("Reflections are the failed attempts")
            && reflecting.contains("the operator in calc.sh is wrong"),
        "{reflecting}"
    );
    let lessons: Value =
        serde_json::from_slice(&home.run(None, &["lessons", "list", "--json"]).stdout).unwrap();
    assert_eq!(lessons.as_array().unwrap().len(), 1, "{lessons}");
    assert_eq!(lessons[0]["source"], id.as_str());
    let before = server.seen().len();
    let again = home.run(
        Some(&server),
        &[
            "--headless",
            "--no-checkpoints",
            "--protocol",
            "code",
            "--test",
            "sh test.sh",
            "--skip",
            "clarification",
            "--skip",
            "self-check",
            "--skip",
            "critique",
            "--max-attempts",
            "1",
            task,
        ],
    );
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    let again_events = events(&again);
    let given = of_type(&again_events, "lessons");
    assert_eq!(given.len(), 1, "{given:?}");
    let generating: Vec<String> = requests_since(&server, before)
        .into_iter()
        .filter(|body| body.contains("in a code debate") && body.contains("Write whole files"))
        .collect();
    assert!(!generating.is_empty());
    assert!(
        generating
            .iter()
            .all(|body| body.contains("Lessons from earlier debates")),
        "{generating:?}"
    );
}

/// Red's test catches a bug in the Judge's favourite: version 3 passes its own tests and
/// scores best, but red's test (written after it) was only run on blue's patch. The
/// convergence hook runs it on version 3, which fails and loses its pass, so blue's version
/// wins; the tree is put back as the last version left it, and red's test is in the record.
#[test]
pub(crate) fn the_convergence_hook_runs_reds_tests_on_an_earlier_favourite_and_blues_patch_wins() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    calc_project(&home);
    // This project's tests run whatever tests/red_*.sh exist.
    std::fs::write(
        home.path().join("test.sh"),
        "p=0; f=0\n\
         if [ \"$(sh calc.sh 2 3)\" = 5 ]; then p=$((p+1)); else f=$((f+1)); fi\n\
         for t in tests/red_*.sh; do [ -f \"$t\" ] || continue; if sh \"$t\"; then p=$((p+1)); else f=$((f+1)); fi; done\n\
         if [ $f -eq 0 ]; then echo \"test result: ok. $p passed; $f failed\"; else echo \"test result: FAILED. $p passed; $f failed\"; exit 1; fi\n",
    )
    .unwrap();
    git_in(home.path(), &["commit", "-q", "-am", "red tests run too"]);
    let output = home.run(
        Some(&server),
        &[
            "--headless",
            "--no-checkpoints",
            "--protocol",
            "code",
            "--file",
            "calc.sh",
            "--test",
            "sh test.sh",
            "--red-blue",
            "--keep",
            "--skip",
            "clarification",
            "--skip",
            "self-check",
            "--skip",
            "critique",
            "Make calc.sh add its two arguments (the Judge prefers version 3)",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events = events(&output);
    let id = of_type(&events, "debate_completed")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let result = show_json(&home, &id)["code_result"].clone();
    let versions = result["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 4, "{result}");
    assert_eq!(versions[3]["phase"], "defence");
    assert_eq!(result["findings"][0]["closed_by"], 4);
    assert_eq!(
        result["findings"][0]["test_content"],
        "if sh calc.sh a 1 >/dev/null 2>&1; then exit 1; fi\n"
    );
    // Version 3 passed its own run, then failed red's test at convergence.
    let tests = result["tests"].as_array().unwrap();
    let v3: Vec<&Value> = tests.iter().filter(|t| t[0] == 3).collect();
    assert_eq!(v3.len(), 2, "{tests:?}");
    assert_eq!(v3[0][1]["name"], "test");
    assert_eq!(v3[0][1]["failed"], 0);
    assert_eq!(v3[1][1]["name"], "test at convergence");
    assert_eq!(v3[1][1]["failed"], 1);
    assert_eq!(versions[2]["hooks_ok"], false);
    assert_eq!(result["winner"], 4, "{result}");
    assert!(
        result["notes"]
            .to_string()
            .contains("At convergence version 3 failed with the red team's tests beside it"),
        "{result}"
    );
    let announced: Vec<&Value> = of_type(&events, "version")
        .into_iter()
        .filter(|v| v["number"] == 3)
        .collect();
    assert_eq!(announced.len(), 2, "settled, then demoted: {announced:?}");
    assert_eq!(announced[0]["passes"], true);
    assert_eq!(announced[1]["passes"], false);
    assert!(
        of_type(&events, "hooks").iter().any(|h| h["version"] == 3
            && h["results"][0][0]
                .as_str()
                .unwrap()
                .starts_with("test at convergence: 1 passed, 1 failed")),
        "the Tests panel is told"
    );
    let record = final_synthesis(&events)["markdown"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        record.contains("Red's test `tests/red_nonnumeric.sh`:")
            && record.contains("Version 4 won"),
        "{record}"
    );
    // The kept tree is as version 4 left it: the check's layout was undone.
    let kept = std::env::temp_dir()
        .join(format!("moot-{id}"))
        .to_string_lossy()
        .into_owned();
    let git_dir = versions_git_dir(&home, &id);
    let status = git_in(
        home.path(),
        &[
            "--git-dir",
            &git_dir.to_string_lossy(),
            "--work-tree",
            &kept,
            "status",
            "--porcelain",
        ],
    );
    assert!(status.trim().is_empty(), "{status}");
    assert!(
        std::fs::read_to_string(Path::new(&kept).join("calc.sh"))
            .unwrap()
            .contains("not a number")
    );
    // An audit re-runs it from the journal: the convergence hook is not run again.
    let verified = home.run(None, &["audit", &id, "--verify"]);
    assert_eq!(verified.status.code(), Some(0), "{}", stderr(&verified));
    std::fs::remove_dir_all(&kept).unwrap();
}

#[test]
fn bad_code_debate_input_is_a_usage_error_with_nothing_sent() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    for (extra, expected) in [
        (
            &["--file", "missing.rs"][..],
            "--file missing.rs: cannot be read",
        ),
        (&["--file", "../outside.rs"][..], "`..`"),
        (&["--file", "/etc/passwd"][..], "absolute"),
        (&["--max-attempts", "0"][..], "--max-attempts takes 1–10"),
        (
            &["--seat", "Wizard"][..],
            "--seat Wizard: no such role; the roles are Generator",
        ),
    ] {
        let message = refused(&home, &server, "code", extra, "Make calc.sh add");
        assert!(message.contains(expected), "{extra:?}: {message}");
    }
    assert!(server.seen().is_empty());
}

/// R22: a code debate stops for approval after its phases when `--gates` names them, each
/// request showing every version and what the phase made; a rejection there ends the debate
/// and nothing touches the user's tree.
#[test]
fn a_code_debate_stops_at_a_gate_after_each_phase_it_names() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    calc_project(&home);
    let mut child = home
        .command(Some(&server))
        .args([
            "--headless",
            "--checkpoints",
            "stdin",
            "--protocol",
            "code",
            "--test",
            "sh test.sh",
            "--red-blue",
            "--skip",
            "clarification",
            "--gates",
            "after_proposal,after_critique,after_adversarial",
            "Make calc.sh add its two arguments",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut reader = EventLines::new(child.stdout.take().unwrap());
    let mut requested = Vec::new();
    for answer in [
        "approve\n",
        "approve\n",
        "reject the attack found a real hole\n",
    ] {
        let seen = read_until(&mut reader, |e| e["type"] == "gate_requested");
        let gate = seen.last().unwrap().clone();
        assert!(
            gate["artifacts"]["versions"]
                .as_array()
                .is_some_and(|v| !v.is_empty()),
            "{gate}"
        );
        requested.push(gate);
        stdin.write_all(answer.as_bytes()).unwrap();
    }
    let rest = read_until(&mut reader, |e| e["type"] == "debate_completed");
    assert_eq!(rest.last().unwrap()["status"], "cancelled");
    drop(stdin);
    child.wait().unwrap();
    let points: Vec<&str> = requested
        .iter()
        .map(|g| g["point"].as_str().unwrap())
        .collect();
    assert_eq!(
        points,
        ["after_proposal", "after_critique", "after_adversarial"]
    );
    assert!(
        requested[1]["artifacts"]["critique"].is_string(),
        "{}",
        requested[1]
    );
    assert!(
        requested[2]["artifacts"]["findings"].is_array(),
        "{}",
        requested[2]
    );
    assert_eq!(
        std::fs::read_to_string(home.path().join("calc.sh")).unwrap(),
        "#!/bin/sh\necho $(( $1 - $2 ))\n",
        "a rejected debate writes nothing to the tree"
    );
}

/// The self-check refines a failing draft from its own test output before the debate sees it
/// (no reflection needed); `--lang` is in every prompt; with `--gates before_apply` the user's
/// tree is untouched until the gate is approved, then the winner is applied to it.
#[test]
pub(crate) fn a_code_debate_self_checks_its_draft_and_applies_the_winner_only_once_approved() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    calc_project(&home);
    let mut child = home
        .command(Some(&server))
        .args([
            "--headless",
            "--checkpoints",
            "stdin",
            "--protocol",
            "code",
            "--test",
            "sh test.sh",
            "--lang",
            "sh",
            "--skip",
            "clarification",
            "--gates",
            "before_apply",
            "--seat",
            "Judge=:judge-model",
            "Make calc.sh add its two arguments",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take();
    let mut reader = EventLines::new(child.stdout.take().unwrap());
    let seen = read_until(&mut reader, |e| e["type"] == "gate_requested");
    let id = seen[0]["id"].as_str().unwrap().to_string();
    let gate = seen.last().unwrap();
    assert!(
        gate["gate"].as_str().unwrap().starts_with("before_apply:"),
        "{gate}"
    );
    // Every version is written and tested, and still nothing touched the user's file.
    let original = "#!/bin/sh\necho $(( $1 - $2 ))\n";
    assert_eq!(
        std::fs::read_to_string(home.path().join("calc.sh")).unwrap(),
        original
    );
    let approve = home.run(None, &["approve", &id]);
    assert!(approve.status.success(), "{}", stderr(&approve));
    let rest = read_until(&mut reader, |e| e["type"] == "debate_completed");
    assert_eq!(rest.last().unwrap()["status"], "completed");
    drop(stdin);
    child.wait().unwrap();
    assert_eq!(
        std::fs::read_to_string(home.path().join("calc.sh")).unwrap(),
        "#!/bin/sh\necho $(( $1 + $2 ))\n",
        "the approved winner was applied"
    );
    let result = show_json(&home, &id)["code_result"].clone();
    let versions = result["versions"].as_array().unwrap();
    assert_eq!(versions[0]["phase"], "self_check");
    assert_eq!(versions[0]["hooks_ok"], false);
    assert_eq!(versions[1]["phase"], "self_check");
    assert_eq!(versions[1]["hooks_ok"], true, "{result}");
    assert_eq!(versions[0]["language"], "sh");
    assert_eq!(
        result["reflections"].as_array().unwrap().len(),
        0,
        "a draft the self-check fixed needs no Reflexion"
    );
    assert!(
        result["notes"]
            .to_string()
            .contains("before_apply: approved; version"),
        "{result}"
    );
    let drafts: Vec<String> = server
        .seen()
        .iter()
        .filter(|s| s.kind == "code")
        .map(|s| s.body.to_string())
        .collect();
    assert!(drafts[0].contains("tests of your own") && drafts[0].contains("Write it in sh"));
    assert!(
        drafts[1].contains("Self-check output of your draft (version 1)")
            && drafts[1].contains("1 passed, 1 failed"),
        "{}",
        drafts[1]
    );
    // The Judge sat on its own model (`--seat Judge=:judge-model`), the Generator on the
    // debate's.
    let seen = server.seen();
    let scoring = seen.iter().find(|s| s.kind == "code_scores").unwrap();
    assert_eq!(scoring.body["model"], "judge-model");
    assert_ne!(
        seen.iter().find(|s| s.kind == "code").unwrap().body["model"],
        "judge-model"
    );
    // An audit re-runs it from the journal alone: the same record, nothing asked, no hook
    // run, nothing applied again.
    let verified = home.run(None, &["audit", &id, "--verify"]);
    assert_eq!(
        verified.status.code(),
        Some(0),
        "{}{}",
        stderr(&verified),
        String::from_utf8_lossy(&verified.stdout)
    );
    assert_eq!(
        std::fs::read_to_string(home.path().join("calc.sh")).unwrap(),
        "#!/bin/sh\necho $(( $1 + $2 ))\n"
    );
    // The gate is on the record with who approved it.
    let gates: Value =
        serde_json::from_slice(&home.run(None, &["gates", &id, "--json"]).stdout).unwrap();
    let applied = gates
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["point"] == "before_apply")
        .unwrap();
    assert_eq!(applied["decision"], "approved");
}

/// Killed mid-debate (the critics never answer) and its work tree deleted: the resume reads
/// every version, commit and hook result from the journal — nothing is asked or run twice —
/// rebuilds the tree from the branch, and finishes on top of it.
#[test]
pub(crate) fn a_killed_code_debate_resumes_from_its_journal_and_rebuilds_its_work_tree() {
    let server = StandIn::start_in_background(Behaviour::default());
    server.fault(FaultRule::new(Fault::Hang).kind("critique").times(2));
    let home = Home::new();
    calc_project(&home);
    // Hooks cannot write outside their tree (the sandbox), so each run is counted by its
    // entry in the audit trail, written as it runs.
    let test = "sh test.sh".to_string();
    let args = [
        "--headless",
        "--no-checkpoints",
        "--protocol",
        "code",
        "--test",
        &test,
        "--skip",
        "self-check",
        "--skip",
        "clarification",
        "Make calc.sh add its two arguments",
    ];
    let (mut child, mut reader) = home.spawn(&server, &args);
    let before = read_until(&mut reader, |e| {
        e["type"] == "stage" && e["name"] == "critique"
    });
    let id = before[0]["id"].as_str().unwrap().to_string();
    await_requests(&server, 2, |s| s.kind == "critique");
    child.kill().unwrap();
    child.wait().unwrap();
    let hook_runs = || -> i64 {
        rusqlite::Connection::open(home.database())
            .unwrap()
            .query_row(
                "SELECT count(*) FROM audit WHERE debate_id = ?1 AND phase = 'hook' AND seat = 'test'",
                [&id],
                |row| row.get(0),
            )
            .unwrap()
    };
    assert_eq!(hook_runs(), 3, "three attempts were tested before the kill");
    let asked_before = server.seen().len();
    let tree = Path::new("/tmp").join(format!("moot-{id}"));
    assert!(tree.is_dir(), "the debate's tree is at {}", tree.display());
    std::fs::remove_dir_all(&tree).unwrap();

    let output = home.run(Some(&server), &["resume", &id]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let fresh: Vec<String> = server.seen()[asked_before..]
        .iter()
        .map(|s| s.kind.clone())
        .collect();
    assert!(
        !fresh
            .iter()
            .any(|k| k == "code_reflection" || k == "code_questions"),
        "{fresh:?}"
    );
    assert_eq!(
        fresh.iter().filter(|k| *k == "code").count(),
        1,
        "only the optimised version is new: {fresh:?}"
    );
    assert_eq!(
        hook_runs(),
        4,
        "the three recorded runs are read, not rerun"
    );
    let result = show_json(&home, &id)["code_result"].clone();
    let versions = result["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 4, "{result}");
    assert_eq!(versions[2]["hooks_ok"], true);
    assert_eq!(versions[3]["phase"], "optimization");
    // One commit per changed version, none twice, version 4 on top of the rebuilt branch.
    let log = versions_log(&home, &id);
    assert_eq!(log.matches("moot version 3:").count(), 1, "{log}");
    assert_eq!(log.matches("moot version 2:").count(), 1, "{log}");
    assert!(!tree.exists(), "the rebuilt tree is removed at the end");
}

/// A hook that hangs is killed at `[code] hook_timeout`, one that floods is cut to
/// `output_cap` (its tail kept); both recorded, and the debate goes on to its result. Writes
/// through a symlinked directory and a command in the reply are refused and recorded.
#[test]
pub(crate) fn hooks_that_hang_or_flood_are_cut_and_escapes_are_refused_while_the_debate_goes_on() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    calc_project(&home);
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), home.path().join("outside")).unwrap();
    git_in(home.path(), &["add", "outside"]);
    git_in(home.path(), &["commit", "-q", "-m", "a link"]);
    home.write_config(
        "[code]\nhook_timeout = 1\noutput_cap = 1024\nskip = [\"clarification\", \"self-check\", \"critique\"]\nmax_attempts = 1\n\n[code.hooks]\nunit = \"sleep 30\"\nlint = \"yes flood | head -c 2000000\"\n",
    );
    let output = home.run(
        Some(&server),
        &[
            "--headless",
            "--no-checkpoints",
            "--protocol",
            "code",
            "Make calc.sh add its two arguments (try the escapes)",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let id = of_type(&events(&output), "debate_completed")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let result = show_json(&home, &id)["code_result"].clone();
    let tests = result["tests"].as_array().unwrap();
    let unit = &tests[0][1];
    assert_eq!(unit["name"], "test");
    assert_eq!(unit["timed_out"], true, "{unit}");
    let lint = &tests[1][1];
    assert_eq!(lint["exit"], 0, "{lint}");
    assert!(lint["dropped"].as_u64().unwrap() > 1_000_000, "{lint}");
    assert!(lint["tail"].as_str().unwrap().len() <= 1024);
    assert_eq!(result["versions"][0]["hooks_ok"], false);
    let record = String::from_utf8_lossy(&home.run(None, &["show", &id]).stdout).to_string();
    assert!(record.contains("killed at its time limit"), "{record}");
    let notes = result["notes"].to_string();
    assert!(notes.contains("passes through a symlink"), "{notes}");
    assert!(notes.contains("never a command"), "{notes}");
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
}

/// Bad code-debate flags and `[code]` settings: exit 2 with what was wrong (the config file's
/// line for config), and nothing sent.
#[test]
fn bad_code_phases_languages_seats_and_config_are_refused_before_anything_is_sent() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    for (extra, expected) in [
        (
            &["--skip", "proposal"][..],
            "--skip \"proposal\" is not a phase that can be left out",
        ),
        (&["--lang", "py thon"][..], "--lang \"py thon\""),
        (
            &["--seat", "Generator="][..],
            "say which provider after `=`",
        ),
        (
            &["--gates", "before_apply"][..],
            "before_apply: not a gate of the moderated protocol",
        ),
    ] {
        let protocol = if extra[0] == "--gates" {
            "moderated"
        } else {
            "code"
        };
        let message = refused(&home, &server, protocol, extra, "Make calc.sh add");
        assert!(message.contains(expected), "{extra:?}: {message}");
    }
    home.write_config("[code]\nmax_attempts = 3\nhook_timeout = 0\n");
    let message = refused(&home, &server, "code", &[], "Make calc.sh add");
    assert!(
        message.contains("config.toml:3") && message.contains("hook_timeout is 1 second to a day"),
        "{message}"
    );
    home.write_config("[code]\nmin_fix_confidence = 1.5\n");
    let message = refused(&home, &server, "code", &[], "Make calc.sh add");
    assert!(
        message.contains("config.toml:2")
            && message.contains("min_fix_confidence is a confidence from 0 to 1, not 1.5"),
        "{message}"
    );
    home.write_config("[code.hooks]\nunitt = \"cargo test\"\n");
    let message = refused(&home, &server, "code", &[], "Make calc.sh add");
    assert!(message.contains("unitt"), "{message}");
    assert!(server.seen().is_empty());
}

// ——— Decisions you can trust: the journal's chain, gates that hold, lessons, secrets ———

/// `moot code prune`: what finished code debates left outside the journal goes (moot's git
/// dir, a kept work tree, an old `moot/DEB-…` branch), what may still be resumed stays, what
/// this journal does not hold by its exact id stays wherever others could have made it (P9:
/// another home's work tree, `moot-DEB-x`, one named by a prefix of a held id), and the
/// journal still shows and diffs every version.
#[test]
fn prune_removes_what_finished_code_debates_left_and_the_journal_still_has_every_version() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    calc_project(&home);
    let temp = home.path().join("tmp");
    std::fs::create_dir_all(&temp).unwrap();
    let run = |args: &[&str]| {
        home.command(Some(&server))
            .env("TMPDIR", &temp)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let output = run(&[
        "--headless",
        "--no-checkpoints",
        "--protocol",
        "code",
        "--file",
        "calc.sh",
        "--test",
        "sh test.sh",
        "--keep",
        "Make calc.sh add its two arguments",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let id = of_type(&events(&output), "debate_completed")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    // The Generator asked for calc.sh's history and blame (the only file it was offered): moot
    // read it from the repository, journaled it, and the code requests carry it.
    let shown = show_json(&home, &id);
    let history = shown["turns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["phase"] == "tool" && t["seat"] == "history")
        .expect("the history read is journaled");
    assert_eq!(history["data"]["requested"], serde_json::json!(["calc.sh"]));
    let read = history["content"].as_str().unwrap();
    assert!(
        read.contains("Recent commits of calc.sh") && read.contains(": calc"),
        "{read}"
    );
    assert!(
        read.contains("Blame (lines") && read.contains("1–2 "),
        "{read}"
    );
    let asked = server
        .seen()
        .into_iter()
        .find(|s| s.kind == "code")
        .expect("a code request");
    assert!(
        asked
            .body
            .to_string()
            .contains("The git history of `calc.sh`, as you asked"),
        "the history reaches the Generator"
    );
    let git_dir = versions_git_dir(&home, &id);
    let tree = temp.join(format!("moot-{id}"));
    assert!(git_dir.is_dir() && tree.is_dir(), "the debate left both");
    // An older debate's branch in the repository, a branch that is not moot's, and what a
    // debate the journal no longer knows left behind.
    git_in(home.path(), &["branch", &format!("moot/{id}")]);
    git_in(home.path(), &["branch", "moot/DEB-legacy01"]);
    git_in(home.path(), &["branch", "moot/feature"]);
    let orphan = git_dir.parent().unwrap().join("DEB-orphan01.git");
    std::fs::create_dir_all(&orphan).unwrap();
    // Work trees this journal does not own: another home's, a made-up id, and one named by
    // a prefix of this debate's id.
    let others: Vec<PathBuf> = ["DEB-otherhome1", "DEB-x", &id[..6]]
        .iter()
        .map(|other| {
            let dir = temp.join(format!("moot-{other}"));
            std::fs::create_dir_all(dir.join("src")).unwrap();
            std::fs::write(dir.join("src/work.txt"), "unsaved work").unwrap();
            dir
        })
        .collect();
    // A link dressed as a leftover is never followed.
    let precious = home.path().join("precious");
    std::fs::create_dir_all(&precious).unwrap();
    std::os::unix::fs::symlink(&precious, temp.join("moot-DEB-linked01")).unwrap();

    // --older-than: all of it is too recent.
    let recent = run(&["code", "prune", "--older-than", "3"]);
    assert_eq!(recent.status.code(), Some(0), "{}", stderr(&recent));
    let said = String::from_utf8_lossy(&recent.stdout).to_string();
    assert!(
        said.contains("nothing to prune") && said.contains("too recently"),
        "{said}"
    );
    assert!(git_dir.is_dir() && orphan.is_dir());
    // --dry-run names all of it and removes none.
    let dry = String::from_utf8_lossy(&run(&["code", "prune", "--dry-run"]).stdout).to_string();
    for expected in [
        format!("would remove moot's git dir {}", git_dir.display()),
        format!("would remove work tree {}", tree.display()),
        format!("would remove branch moot/{id}"),
        "DEB-orphan01 is not in the journal".to_string(),
        "kept: DEB-legacy01 is not in this journal".to_string(),
        "kept: DEB-otherhome1 is not in this journal".to_string(),
        format!("kept: {} is not in this journal", &id[..6]),
    ] {
        assert!(dry.contains(&expected), "{expected}\nnot in\n{dry}");
    }
    assert!(git_dir.is_dir() && tree.is_dir());
    let pruned = run(&["code", "prune"]);
    assert_eq!(pruned.status.code(), Some(0), "{}", stderr(&pruned));
    assert!(!git_dir.exists() && !tree.exists() && !orphan.exists());
    let branches = git_in(home.path(), &["branch", "--format=%(refname:short)"]);
    assert!(!branches.contains(&format!("moot/{id}")), "{branches}");
    assert!(
        branches.contains("moot/feature")
            && branches.contains("main")
            && branches.contains("moot/DEB-legacy01"),
        "{branches}"
    );
    for other in &others {
        assert!(
            other.join("src/work.txt").is_file(),
            "{} was removed",
            other.display()
        );
    }
    assert!(precious.is_dir() && temp.join("moot-DEB-linked01").symlink_metadata().is_ok());
    // The journal still has every version: listed, diffed and applied from it.
    let versions = run(&["code", "versions", &id]);
    assert_eq!(versions.status.code(), Some(0), "{}", stderr(&versions));
    let listed = String::from_utf8_lossy(&versions.stdout).to_string();
    assert!(listed.contains("v1") && listed.contains("pass"), "{listed}");
    let diff = run(&["code", "diff", &id, "1", "2"]);
    assert_eq!(diff.status.code(), Some(0), "{}", stderr(&diff));
    assert!(String::from_utf8_lossy(&diff.stdout).contains("calc.sh"));
    let again = String::from_utf8_lossy(&run(&["code", "prune"]).stdout).to_string();
    assert!(again.contains("nothing to prune"), "{again}");
}

/// `--blind-first` asks a code debate for what it always does: each critic criticises the
/// version before reading any other critic's critique (their prompts carry none, where the
/// review's carries them all), and the record says so.
#[test]
fn a_code_debate_takes_blind_first_and_its_critics_read_no_other_critique() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    calc_project(&home);
    let output = home.run(
        Some(&server),
        &[
            "--headless",
            "--no-checkpoints",
            "--protocol",
            "code",
            "--blind-first",
            "--file",
            "calc.sh",
            "--test",
            "sh test.sh",
            "--skip",
            "self-check",
            "--skip",
            "clarification",
            "Make calc.sh add its two arguments",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let seen = server.seen();
    let critiques: Vec<String> = seen
        .iter()
        .filter(|s| s.kind == "critique")
        .map(|s| s.body.to_string())
        .collect();
    assert_eq!(critiques.len(), 2);
    let said = "does not check that its arguments are numbers";
    assert!(
        critiques
            .iter()
            .all(|c| !c.contains(said) && !c.contains("The critics said")),
        "{critiques:?}"
    );
    let review = seen.iter().find(|s| s.kind == "code_review").unwrap();
    assert!(review.body.to_string().contains(said));
    let events = events(&output);
    let record = final_synthesis(&events)["markdown"].as_str().unwrap();
    assert!(
        record.contains("The critique was blind (--blind-first), as a code debate's always is"),
        "{record}"
    );
}
