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
    // A leaf: itself and its lead's summary, nobody else's words.
    assert!(
        b.contains(&raw("Skeptic")) && b.contains("LEAD-SUMMARY-1"),
        "{b}"
    );
    for other in ["Proponent", "Ethics Advisor", "Security Advocate"] {
        assert!(!b.contains(&raw(other)), "B saw {other}: {b}");
    }
    assert!(
        !b.contains("ROOT-SUMMARY") && !b.contains("LEAD-SUMMARY-2"),
        "{b}"
    );
    assert!(
        d.contains("LEAD-SUMMARY-2") && !d.contains("LEAD-SUMMARY-1"),
        "{d}"
    );
    // A lead: its team's words and the root's summary, not the other team's.
    assert!(
        a.contains(&raw("Proponent")) && a.contains(&raw("Skeptic")),
        "{a}"
    );
    assert!(a.contains("ROOT-SUMMARY"), "{a}");
    assert!(
        !a.contains(&raw("Ethics Advisor")) && !a.contains(&raw("Security Advocate")),
        "{a}"
    );
    assert!(
        c.contains(&raw("Security Advocate")) && !c.contains(&raw("Skeptic")),
        "{c}"
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
    let b1 = &prompts_of(&server, "argument", "B", 1)[0];
    assert!(b1.contains("Reconciled sub-question 1"), "{b1}");
    // A's summary failed in round 1: its team went to C, whose round-2 prompt sees B's words.
    let handed = of_type(&events, "notice").iter().any(|n| {
        n["message"]
            .as_str()
            .unwrap()
            .contains("A failed as a lead in round 1; its team was handed to C's team")
    });
    assert!(handed, "{events:?}");
    let trees = of_type(&events, "topology");
    assert_eq!(trees.len(), 2, "announced again after the hand-over");
    assert_eq!(trees[1]["sees"][0][0], "C");
    let c2 = &prompts_of(&server, "argument", "C", 2)[0];
    assert!(
        c2.contains("B1.1"),
        "C now leads B and sees its arguments: {c2}"
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
    assert!(record.contains("handed to C's team"), "{record}");
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
            "--planning both: use cpde",
        ),
        (&["--topology", "ring"][..], "use mesh, star, chain or tree"),
    ] {
        let message = refused(&home, &server, "moderated", extra, QUESTION);
        assert!(message.contains(expected), "{extra:?}: {message}");
    }
}
