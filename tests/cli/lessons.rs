//! Lessons: one debate teaching a related one, matched by words or embeddings.

use crate::*;

/// A lesson debate A wrote reaches the prompts and record of a debate on a related question,
/// and not those of an unrelated one; the capacity evicts the oldest; `moot lessons` manages
/// them and `off` / `--no-lessons` stop them.
#[test]
pub(crate) fn a_lesson_from_one_debate_reaches_a_related_debate_and_not_an_unrelated_one() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    home.write_config("[lessons]\nenabled = true\ncapacity = 2\n");
    let run = |question: &str, extra: &[&str]| {
        let before = server.seen().len();
        let args = [
            &["--headless", "--no-checkpoints", "--max-rounds", "1"][..],
            extra,
            &[question],
        ]
        .concat();
        let output = home.run(Some(&server), &args);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        (events(&output), requests_since(&server, before))
    };
    let lessons = || -> Vec<Value> {
        let output = home.run(None, &["lessons", "list", "--json"]);
        serde_json::from_slice(&output.stdout).unwrap()
    };

    // A writes a lesson about its own subject.
    let (a_events, _) = run(QUESTION, &[]);
    let a_id = of_type(&a_events, "debate_completed")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        of_type(&a_events, "lessons").is_empty(),
        "nothing to learn from yet"
    );
    assert!(
        of_type(&a_events, "notice")
            .iter()
            .any(|n| n["message"].as_str().unwrap().contains("1 lesson written")),
        "{a_events:?}"
    );
    let stored = lessons();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0]["source"], a_id.as_str());
    let lesson = stored[0]["text"].as_str().unwrap().to_string();
    assert!(lesson.contains(QUESTION), "{lesson}");
    let lesson_id = stored[0]["id"].as_i64().unwrap();

    // B, on a related question, is given it: announced, in every seat's prompt, cited.
    let (b_events, b_requests) = run("Should we cache user sessions in Redis?", &[]);
    let given = of_type(&b_events, "lessons");
    assert_eq!(given.len(), 1);
    assert_eq!(given[0]["lessons"][0]["id"], lesson_id);
    let debating: Vec<&String> = b_requests
        .iter()
        .filter(|body| body.contains("moot_argument"))
        .collect();
    assert!(!debating.is_empty());
    for body in &debating {
        assert!(body.contains("Lessons from earlier debates"), "{body}");
        assert!(body.contains("latency claims went unmeasured"), "{body}");
    }
    let record = final_synthesis(&b_events)["markdown"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        record.contains("## Lessons From Earlier Debates")
            && record.contains(&format!("**L{lesson_id}** ({a_id}")),
        "{record}"
    );

    // C, on an unrelated question, is given nothing.
    let (c_events, c_requests) = run("Which font should the marketing site use?", &[]);
    assert!(of_type(&c_events, "lessons").is_empty());
    assert!(
        c_requests
            .iter()
            .all(|body| !body.contains("Lessons from earlier debates"))
    );
    assert!(
        !final_synthesis(&c_events)["markdown"]
            .as_str()
            .unwrap()
            .contains("Lessons From")
    );

    // Three debates wrote three lessons; the capacity keeps the two newest.
    let kept: Vec<String> = lessons()
        .iter()
        .map(|l| l["source"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(kept.len(), 2);
    assert!(!kept.contains(&a_id), "the oldest was evicted");

    // show / rm, and mistakes named.
    let newest = lessons()[0]["id"].as_i64().unwrap();
    let shown = home.run(None, &["lessons", "show", &format!("L{newest}")]);
    assert!(String::from_utf8_lossy(&shown.stdout).contains("Next time: Ask each seat"));
    let removed = home.run(None, &["lessons", "rm", &newest.to_string()]);
    assert_eq!(removed.status.code(), Some(0));
    assert_eq!(lessons().len(), 1);
    let missing = home.run(None, &["lessons", "rm", "L999"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("there is no lesson L999"));
    let garbage = home.run(None, &["lessons", "show", "abc"]);
    assert_eq!(garbage.status.code(), Some(2));

    // --no-lessons: nothing given, nothing written.
    let (events, requests) = run(
        "Should we cache the user sessions of the marketing site?",
        &["--no-lessons"],
    );
    assert!(of_type(&events, "lessons").is_empty());
    assert!(
        requests
            .iter()
            .all(|b| !b.contains("Lessons from earlier") && !b.contains("moot_lessons"))
    );
    assert_eq!(lessons().len(), 1);
    // `moot lessons off`: the same for every debate until `on`.
    assert!(home.run(None, &["lessons", "off"]).status.success());
    let (events, requests) = run(
        "Should we cache the user sessions of the marketing site?",
        &[],
    );
    assert!(of_type(&events, "lessons").is_empty());
    assert!(requests.iter().all(|b| !b.contains("moot_lessons")));
    let listed = home.run(None, &["lessons", "list"]);
    assert!(String::from_utf8_lossy(&listed.stdout).contains("lessons are off"));
    assert!(home.run(None, &["lessons", "on"]).status.success());
    let (events, _) = run(
        "Should we cache the user sessions of the marketing site?",
        &[],
    );
    assert_eq!(of_type(&events, "lessons").len(), 1);
}

/// When the provider offers embeddings, lessons are matched by the similarity of their source
/// question to the new one (a question full text would match on two words can be turned
/// away), and the record says how they were matched.
#[test]
pub(crate) fn lessons_are_matched_by_embeddings_when_the_provider_offers_them() {
    let server = StandIn::start_in_background(Behaviour {
        embeddings: true,
        ..Behaviour::default()
    });
    let home = Home::new();
    home.write_config("[lessons]\nenabled = true\n");
    let run = |question: &str| {
        let output = home.run(
            Some(&server),
            &[
                "--headless",
                "--no-checkpoints",
                "--max-rounds",
                "1",
                question,
            ],
        );
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        events(&output)
    };
    run(QUESTION);
    let journal = rusqlite::Connection::open(home.database()).unwrap();
    let (model, size): (String, i64) = journal
        .query_row(
            "SELECT embedding_model, length(embedding) FROM lessons",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap();
    assert_eq!((model.as_str(), size), ("stand-in-model", 64 * 4));
    drop(journal);
    let related = run("Should we cache user sessions in Redis?");
    assert_eq!(of_type(&related, "lessons").len(), 1);
    let record = final_synthesis(&related)["markdown"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        record.contains("Matched to this question by embeddings (stand-in-model)."),
        "{record}"
    );
    // Two shared words would do for full text; by meaning this one is about something else.
    let wordy = run(
        "Redis caching aside, which font, colour palette, typography, spacing, icons and \
         illustrations should the marketing website use?",
    );
    assert!(of_type(&wordy, "lessons").is_empty(), "{wordy:?}");
    assert!(
        server
            .seen()
            .iter()
            .filter(|s| s.kind == "embeddings")
            .count()
            >= 4
    );
}
