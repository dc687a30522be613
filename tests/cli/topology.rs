//! Topologies and trees: what each seat saw, as the prompts the stand-in received show.

use crate::*;

#[test]
fn an_arena_topology_decides_what_each_seat_saw_as_its_prompts_show() {
    let seats = ["Proponent", "Skeptic", "Ethics Advisor"];
    let prompts = |topology: &str| -> Vec<(String, u32, String)> {
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
                seats[0],
                "--seat",
                seats[1],
                "--seat",
                seats[2],
                "--rounds",
                "2",
                "--topology",
                topology,
                "Adopt a 4-day work week",
            ],
        );
        assert!(output.status.success(), "{}", stderr(&output));
        // Who sees whom is announced for the workbench to draw (not for a mesh).
        let announced = of_type(&events(&output), "topology").len();
        assert_eq!(announced, usize::from(topology != "mesh"));
        server
            .seen()
            .into_iter()
            .filter(|s| s.kind == "arena_argument")
            .map(|s| {
                let text = s.body["messages"].to_string();
                let round = if text.contains("Round 2 of 2") { 2 } else { 1 };
                (s.seat.unwrap_or_default(), round, text)
            })
            .collect()
    };
    let saw = |prompts: &[(String, u32, String)],
               seat: &str,
               round: u32,
               other: &str,
               other_round: u32| {
        let (_, _, text) = prompts
            .iter()
            .find(|(s, r, _)| s == seat && *r == round)
            .unwrap_or_else(|| panic!("no prompt for {seat} in round {round}"));
        text.contains(&format!("Seat {other} in round {other_round}"))
    };
    // Chain: each seat sees the one before it (the first sees the last), and nobody else.
    let chain = prompts("chain");
    assert!(
        !saw(&chain, "Proponent", 1, "Skeptic", 1)
            && !saw(&chain, "Proponent", 1, "Ethics Advisor", 1)
    );
    assert!(saw(&chain, "Skeptic", 1, "Proponent", 1));
    assert!(
        saw(&chain, "Ethics Advisor", 1, "Skeptic", 1)
            && !saw(&chain, "Ethics Advisor", 1, "Proponent", 1)
    );
    assert!(
        saw(&chain, "Proponent", 2, "Ethics Advisor", 1)
            && !saw(&chain, "Proponent", 2, "Skeptic", 1)
    );
    // Star: seats see no other seat's words, only the moderator's summary of round 1.
    let star = prompts("star");
    for seat in seats {
        for other in seats.iter().filter(|o| **o != seat) {
            assert!(
                !saw(&star, seat, 1, other, 1) && !saw(&star, seat, 2, other, 1),
                "{seat} saw {other}"
            );
        }
        let (_, _, text) = star.iter().find(|(s, r, _)| s == seat && *r == 2).unwrap();
        assert!(
            text.contains("The moderator's summaries of each round") && text.contains("2022 pilot"),
            "{seat}: {text}"
        );
    }
    // Mesh: everyone sees everything before it.
    let mesh = prompts("mesh");
    assert!(
        saw(&mesh, "Ethics Advisor", 1, "Proponent", 1)
            && saw(&mesh, "Ethics Advisor", 1, "Skeptic", 1)
    );
    assert!(saw(&mesh, "Proponent", 2, "Skeptic", 1));
}

#[test]
fn a_moderated_topology_decides_whose_arguments_each_rebuttal_saw() {
    let rebuttals = |topology: &str| -> Vec<(String, String)> {
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
                "--topology",
                topology,
                QUESTION,
            ],
        );
        assert!(output.status.success(), "{}", stderr(&output));
        // The record says which topology the seats argued under.
        let record = final_synthesis(&events(&output))["markdown"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(
            record.contains(&format!("Topology: {topology}")),
            topology != "mesh",
            "{record}"
        );
        server
            .seen()
            .into_iter()
            .filter(|s| s.kind == "rebuttal")
            .map(|s| (s.seat.unwrap_or_default(), s.body["messages"].to_string()))
            .collect()
    };
    let saw = |prompts: &[(String, String)], seat: &str, other: &str| {
        let (_, text) = prompts
            .iter()
            .find(|(s, _)| s == seat)
            .unwrap_or_else(|| panic!("no rebuttal of {seat}"));
        text.contains(&format!("Seat {other}, round 1:"))
    };
    let mesh = rebuttals("mesh");
    assert!(saw(&mesh, "C", "A") && saw(&mesh, "C", "B") && saw(&mesh, "A", "C"));
    let chain = rebuttals("chain");
    assert!(
        saw(&chain, "C", "B") && !saw(&chain, "C", "A"),
        "C sees only B"
    );
    assert!(
        saw(&chain, "A", "C") && !saw(&chain, "A", "B"),
        "A sees only C, the last"
    );
    let star = rebuttals("star");
    for (seat, others) in [("A", ["B", "C"]), ("B", ["A", "C"]), ("C", ["A", "B"])] {
        for other in others {
            assert!(!saw(&star, seat, other), "{seat} saw {other} in a star");
        }
    }
    // The panel and the dialogue have no topology.
    let home = Home::new();
    let output = home.run(
        None,
        &[
            "--headless",
            "--protocol",
            "dialogue",
            "--topology",
            "star",
            QUESTION,
        ],
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("--topology is a flag of the"),
        "{}",
        stderr(&output)
    );
}

/// Seed review 004 #10: in a chain (and a tree) the seats may not see each other, so the
/// moderator's round-2 opening, which every seat reads, is asked without its summary of the
/// seats' arguments; a mesh's still carries it.
#[test]
fn a_chains_round_opening_carries_no_summary_of_the_seats() {
    let opening = |topology: &str| -> String {
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
                "--no-lessons",
                "--max-rounds",
                "2",
                "--topology",
                topology,
                QUESTION,
            ],
        );
        assert!(output.status.success(), "{}", stderr(&output));
        server
            .seen()
            .into_iter()
            .find(|s| s.kind == "pose" && s.round == 2)
            .map(|s| s.body.to_string())
            .unwrap_or_else(|| panic!("no round-2 opening in a {topology}"))
    };
    let chain = opening("chain");
    assert!(!chain.contains("Your summary of the last round"), "{chain}");
    assert!(
        chain.contains("without reporting what any seat argued"),
        "{chain}"
    );
    let mesh = opening("mesh");
    assert!(mesh.contains("Your summary of the last round"), "{mesh}");
}

/// The request bodies the stand-in saw of one kind of turn from one seat in one round.
pub(crate) fn prompts_of(server: &StandIn, kind: &str, seat: &str, round: u32) -> Vec<String> {
    server
        .seen()
        .iter()
        .filter(|s| s.kind == kind && s.seat.as_deref() == Some(seat) && s.round == round)
        .map(|s| s.body.to_string())
        .collect()
}

/// An arena as a tree (cpde): the root hands each team its sub-question; in round two a leaf
/// sees only its own turns and its lead's summary, a lead its team's turns and the root's
/// summary, never the other team's turns. Proven from the prompts the stand-in received.
#[test]
pub(crate) fn a_tree_arena_shows_each_seat_only_what_its_place_in_the_tree_allows() {
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
            "--seat",
            "Security Advocate",
            "--rounds",
            "3",
            "--topology",
            "tree",
            "Adopt a 4-day work week",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events = events(&output);
    let topology = of_type(&events, "topology");
    assert_eq!(topology[0]["topology"], "tree");
    assert_eq!(
        topology[0]["sees"][1],
        serde_json::json!(["B", ["A (lead's summary)"]])
    );
    assert_eq!(
        topology[0]["sees"][0],
        serde_json::json!(["A", ["B", "moderator (root)"]])
    );
    // One plan by the root, then per round two lead summaries and the root's (rounds 1–2).
    let kinds: Vec<String> = server.seen().iter().map(|s| s.kind.clone()).collect();
    assert_eq!(kinds.iter().filter(|k| *k == "plan").count(), 1);
    assert_eq!(kinds.iter().filter(|k| *k == "lead_summary").count(), 4);
    assert_eq!(kinds.iter().filter(|k| *k == "root_summary").count(), 2);
    let raw = |role: &str| format!("Seat {role} in round 1");
    let one = |seat: &str| {
        let prompts = prompts_of(&server, "arena_argument", seat, 2);
        assert_eq!(prompts.len(), 1, "{seat}");
        prompts[0].clone()
    };
    // The stand-in files an arena's turns under its role.
    let (a, b, c, d) = (
        one("Proponent"),
        one("Skeptic"),
        one("Ethics Advisor"),
        one("Security Advocate"),
    );
    // Leads follow the phase's concern (rebuttals: finding the weak points): in round two the
    // Skeptic leads team 1 and the Security Advocate team 2, and the faces are told.
    assert!(
        of_type(&events, "notice").iter().any(|n| n["message"]
            == "tree: Skeptic (B) leads team 1 for the rebuttal phase: its role fits finding the weak points"),
        "{events:?}"
    );
    assert_eq!(
        topology[1]["sees"][0],
        serde_json::json!(["A", ["B (lead's summary)"]])
    );
    // A leaf: itself and its lead's summary, nobody else's words.
    assert!(
        a.contains(&raw("Proponent")) && a.contains("LEAD-SUMMARY-1"),
        "{a}"
    );
    for other in ["Skeptic", "Ethics Advisor", "Security Advocate"] {
        assert!(!a.contains(&raw(other)), "A saw {other}: {a}");
    }
    assert!(
        !a.contains("ROOT-SUMMARY") && !a.contains("LEAD-SUMMARY-2"),
        "{a}"
    );
    assert!(
        c.contains("LEAD-SUMMARY-2") && !c.contains("LEAD-SUMMARY-1"),
        "{c}"
    );
    // A lead: its team's words and the root's summary, not the other team's.
    assert!(
        b.contains(&raw("Proponent")) && b.contains(&raw("Skeptic")),
        "{b}"
    );
    assert!(b.contains("ROOT-SUMMARY"), "{b}");
    assert!(
        !b.contains(&raw("Ethics Advisor")) && !b.contains(&raw("Security Advocate")),
        "{b}"
    );
    assert!(
        d.contains(&raw("Ethics Advisor")) && !d.contains(&raw("Skeptic")),
        "{d}"
    );
    // Each team works on the root's sub-question for it.
    assert!(
        a.contains("Root sub-question 1") && b.contains("Root sub-question 1"),
        "{b}"
    );
    assert!(
        c.contains("Root sub-question 2") && !c.contains("Root sub-question 1"),
        "{c}"
    );
    // Round two's summary of team 1 is the Skeptic's, its lead then.
    assert_eq!(prompts_of(&server, "lead_summary", "B", 2).len(), 1);
    // The lead's summary was asked with its team's turns only.
    let summary = &prompts_of(&server, "lead_summary", "A", 1)[0];
    assert!(summary.contains(&raw("Skeptic")) && !summary.contains(&raw("Ethics Advisor")));
    let id = of_type(&events, "debate_completed")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (code, text) = audit(&home, &[&id, "--verify"]);
    assert_eq!(code, Some(0), "{text}");
}

/// A moderated tree planned by the leads (dpde), reconciled by the root; a lead whose summary
/// keeps failing hands its team to the sibling lead, who then sees them.
#[test]
fn a_moderated_tree_plans_by_its_leads_and_hands_a_failed_leads_team_to_a_sibling() {
    let server = StandIn::start_in_background(Behaviour {
        debaters: 4,
        ..Behaviour::default()
    });
    server.fault(
        FaultRule::new(Fault::ServerError)
            .kind("lead_summary")
            .seat("A")
            .round(1)
            .times(10),
    );
    let home = Home::new();
    let output = home.run(
        Some(&server),
        &[
            "--headless",
            "--no-checkpoints",
            "--perspectives",
            "4",
            "--max-rounds",
            "2",
            "--topology",
            "tree",
            "--planning",
            "dpde",
            QUESTION,
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events = events(&output);
    // Two leads proposed, the root reconciled, every seat got the reconciled question.
    assert_eq!(
        server
            .seen()
            .iter()
            .filter(|s| s.kind == "lead_plan")
            .count(),
        2
    );
    let plans: Vec<String> = server
        .seen()
        .iter()
        .filter(|s| s.kind == "plan")
        .map(|s| s.body.to_string())
        .collect();
    assert_eq!(plans.len(), 1);
    assert!(plans[0].contains("Team 1 proposes") && plans[0].contains("Team 2 proposes"));
    // Teams by role: Operational Simplicity (A) with Simplicity Advocate (D), Performance (B)
    // with Future Flexibility (C); never a role with one it pulls against.
    let trees = of_type(&events, "topology");
    assert_eq!(
        trees[0]["sees"][0],
        serde_json::json!(["A", ["D", "moderator (root)"]])
    );
    assert_eq!(trees[0]["sees"][2][0], "B");
    let said = |text: &str| {
        of_type(&events, "notice")
            .iter()
            .any(|n| n["message"].as_str().unwrap().contains(text))
    };
    assert!(said("Planning: dpde, as --planning asked."), "{events:?}");
    let b1 = &prompts_of(&server, "argument", "B", 1)[0];
    assert!(b1.contains("Reconciled sub-question 2"), "{b1}");
    // A's summary failed in round 1: its team went to B, whose round-2 prompt sees A's words.
    assert!(
        said("A failed as a lead in round 1; its team was handed to B's team"),
        "{events:?}"
    );
    assert_eq!(trees.len(), 2, "announced again after the hand-over");
    assert_eq!(trees[1]["sees"][0][0], "B");
    let b2 = &prompts_of(&server, "argument", "B", 2)[0];
    assert!(
        b2.contains("A1.1"),
        "B now leads A and sees its arguments: {b2}"
    );
    let d2 = &prompts_of(&server, "argument", "D", 2)[0];
    assert!(
        !d2.contains("B1.1") && !d2.contains("A1.1"),
        "a leaf sees no one's arguments: {d2}"
    );
    let record = final_synthesis(&events)["markdown"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(record.contains("Topology: tree"), "{record}");
    assert!(record.contains("handed to B's team"), "{record}");
    assert!(
        record.contains("Planning: dpde, as --planning asked."),
        "{record}"
    );
}

#[test]
fn tree_planning_needs_a_tree_and_a_known_plan() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    for (extra, expected) in [
        (
            &["--planning", "dpde"][..],
            "--planning plans a tree: add --topology tree",
        ),
        (
            &["--topology", "tree", "--planning", "both"][..],
            "--planning both: use auto (chosen from the question), cpde",
        ),
        (&["--topology", "ring"][..], "use mesh, star, chain or tree"),
    ] {
        let message = refused(&home, &server, "moderated", extra, QUESTION);
        assert!(message.contains(expected), "{extra:?}: {message}");
    }
}

/// `--planning auto` (the default) reads the question: one deliverable is planned by the root
/// (cpde), independent parts by the leads (dpde); the choice and its reason are journaled and
/// in the record.
#[test]
fn auto_planning_picks_cpde_or_dpde_from_the_question_and_says_why() {
    let server = StandIn::start_in_background(Behaviour {
        debaters: 4,
        ..Behaviour::default()
    });
    let home = Home::new();
    let run = |question: &str| {
        let before = server.seen().len();
        let output = home.run(
            Some(&server),
            &[
                "--headless",
                "--no-checkpoints",
                "--perspectives",
                "4",
                "--max-rounds",
                "1",
                "--topology",
                "tree",
                question,
            ],
        );
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let proposals = server.seen()[before..]
            .iter()
            .filter(|s| s.kind == "lead_plan")
            .count();
        (events(&output), proposals)
    };
    let notice = |events: &[Value]| -> String {
        of_type(events, "notice")
            .iter()
            .filter_map(|n| n["message"].as_str())
            .find(|m| m.starts_with("Planning:"))
            .unwrap_or_default()
            .to_string()
    };
    let (one, proposals) = run(QUESTION);
    assert_eq!(proposals, 0, "the root plans alone");
    assert!(
        notice(&one).starts_with(
            "Planning: cpde, chosen automatically: the question asks for one deliverable"
        ),
        "{}",
        notice(&one)
    );
    let (parts, proposals) = run(
        "Should we use Redis or PostgreSQL for caching; and decide how we monitor the cache in production?",
    );
    assert_eq!(proposals, 2, "each lead proposes its team's part");
    let said = notice(&parts);
    assert!(
        said.starts_with(
            "Planning: dpde, chosen automatically: the question has 2 independent parts"
        ),
        "{said}"
    );
    let id = of_type(&parts, "debate_started")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let shown = show_json(&home, &id);
    assert_eq!(shown["config"]["protocol_settings"]["planning"], "dpde");
    assert!(
        shown["config"]["protocol_settings"]["planning_reason"]
            .as_str()
            .unwrap()
            .contains("2 independent parts")
    );
    let record = shown["synthesis"]["markdown"].as_str().unwrap();
    assert!(record.contains(&said), "{record}");
}
