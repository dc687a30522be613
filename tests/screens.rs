//! The workbench's screens drawn into ratatui's TestBackend from a scripted event stream, as
//! insta snapshots at 80×24, 120×40 and 200×60; and resizes from 1×1 to 400×120 never panic.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use moot::debate::{
    Act, Answer, AskKind, Assessment, Confidence, Convergence, ConvergenceSignal, DebateStatus,
    Decision, Event, FlagKind, Move, Phase, Relation, Seat, Standing, TurnStatus,
};
use moot::tui::app::App;
use moot::tui::keymap::{Keymap, Scope};
use moot::tui::theme::Theme;
use moot::tui::views::{self, Caches};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

const SIZES: [(u16, u16); 3] = [(80, 24), (120, 40), (200, 60)];

fn seat(id: &str, perspective: &str, priorities: &[&str]) -> Seat {
    Seat {
        id: id.into(),
        perspective: perspective.into(),
        priorities: priorities.iter().map(|p| p.to_string()).collect(),
        trade_offs: "trade-offs".into(),
        stance: String::new(),
        provider: None,
        model: None,
    }
}

fn completed(round: u32, phase: Phase, seat: &str, content: &str, moves: Vec<Move>) -> Event {
    Event::TurnCompleted {
        round,
        phase,
        seat: seat.into(),
        content: content.into(),
        moves,
        confidence: Some(0.7),
        tokens_in: 900,
        tokens_out: 120,
        tokens_estimated: false,
        latency_ms: 800,
        provider: "openai".into(),
        model: "stand-in".into(),
        status: TurnStatus::Ok,
        note: None,
        replayed: false,
    }
}

fn mv(id: &str, act: Act, text: &str, answers: &[&str], relation: Option<Relation>) -> Move {
    Move {
        id: id.into(),
        act,
        text: text.into(),
        premises: vec![],
        answers: answers.iter().map(|a| a.to_string()).collect(),
        relation,
    }
}

/// A debate paused at the round-1 checkpoint, with seat A streaming nothing and B retrying.
fn round_one() -> Vec<Event> {
    vec![
        Event::DebateCreated { id: "DEB-snap0001".into(), question: "Should we use Redis or PostgreSQL for caching?".into(), protocol: "moderated".into(), resumed: false, presentation: Default::default() },
        Event::DebateStarted {
            id: "DEB-snap0001".into(),
            question: "Should we use Redis or PostgreSQL for caching?".into(),
            protocol: "moderated".into(),
            seats: vec![
                seat("A", "Operational Simplicity", &["debuggability", "monitoring"]),
                seat("B", "Performance Advocate", &["latency", "throughput"]),
            ],
            max_rounds: 3,
            provider: "openai".into(),
            model: "stand-in".into(),
            caveat: None,
            presentation: Default::default(),
        },
        Event::RoundStarted { round: 1, limit: None },
        completed(1, Phase::Pose, "moderator", "Round 1: where do you stand?", vec![]),
        completed(1, Phase::Argument, "A", "Every new datastore is a new thing to page someone about. We already run PostgreSQL with backups and failover drills.\n\nUntil we miss a p99 target, Redis buys speed we cannot measure.", vec![
            mv("A1.1", Act::Claim, "A second datastore adds lasting operational load", &[], None),
        ]),
        completed(1, Phase::Argument, "B", "Caching exists to take load off the primary. Putting the cache in that database means cache traffic competes with the writes it should protect.", vec![
            mv("B1.1", Act::Claim, "A cache inside the primary competes with its load", &[], None),
            mv("B1.2", Act::Claim, "Redis isolates read load", &["A1.1"], Some(Relation::Rebut)),
        ]),
        completed(1, Phase::Rebuttal, "A", "Contention only matters past a load nobody has measured; I concede isolation matters under saturation.", vec![
            mv("A1.r1", Act::Claim, "Contention is unmeasured", &["B1.1"], Some(Relation::Undercut)),
            mv("A1.r2", Act::Concede, "", &["B1.2"], None),
        ]),
        Event::TurnStarted { round: 1, phase: Phase::Rebuttal, seat: "B".into() },
        Event::TurnDelta { seat: "B".into(), round: 1, phase: Phase::Rebuttal, text: "Fair: I cannot name a missed target, but a hand-built".into() },
        Event::Retry { seat: "B".into(), round: 1, phase: Phase::Rebuttal, attempt: 2, reason: "rate limited (429)".into(), delay_ms: 1000 },
        Event::TurnDelta { seat: "B".into(), round: 1, phase: Phase::Rebuttal, text: "Fair: I cannot name a missed target\u{1b}[2J, but".into() },
        Event::Flag { round: 1, seat: "B".into(), kind: FlagKind::Repetition, detail: "64% repeats".into() },
        Event::RoundCompleted {
            round: 1,
            convergence: Convergence { assessment: Assessment::Converging, decision: Decision::Continue, signal: ConvergenceSignal::None, reason: "a concession".into(), overruled: None },
            summary: "A concedes isolation under saturation [B1.2]; B holds that contention is real [B1.1]. Open: the latency target.".into(),
        },
        Event::Checkpoint { round: 1, timeout_seconds: 1800, kind: AskKind::Checkpoint, detail: None, choices: vec![] },
    ]
}

fn render(app: &mut App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    let mut caches = Caches::default();
    terminal
        .draw(|frame| views::draw(frame, app, &mut caches, &Theme::dark()))
        .unwrap();
    let buffer = terminal.backend().buffer().clone();
    let mut text = String::new();
    for y in 0..buffer.area.height {
        let line: String = (0..buffer.area.width)
            .map(|x| buffer[(x, y)].symbol().to_string())
            .collect();
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text
}

fn app_with(events: &[Event]) -> App {
    let mut app = App::new(false);
    for event in events {
        app.on_event(event);
    }
    // The running clock in the header would make snapshots depend on timing.
    app.started = None;
    app
}

#[test]
fn the_live_screen_with_the_checkpoint_modal() {
    for (width, height) in SIZES {
        let mut app = app_with(&round_one());
        let screen = render(&mut app, width, height);
        assert!(
            !screen.contains('\u{1b}'),
            "escape sequences reached the screen"
        );
        insta::assert_snapshot!(format!("live_checkpoint_{width}x{height}"), screen);
    }
}

/// The screen README.md shows: the live debate at its first checkpoint, at a width a README's
/// code block shows whole.
#[test]
fn the_readmes_screen() {
    let mut app = app_with(&round_one());
    insta::assert_snapshot!("readme_120x32", render(&mut app, 120, 32));
}

/// Issue 69 item 10: each capture in `assets/screenshots/` is one of these snapshots, as
/// insta keeps it, so a capture cannot drift from the screen the code draws. After a screen
/// changes (and its snapshot is accepted), `MOOT_WRITE_SCREENSHOTS=1 cargo test --test
/// screens the_screenshots` writes them again.
#[test]
fn the_screenshots_are_the_snapshots() {
    const SCREENSHOTS: &[&str] = &[
        "readme_120x32",
        "live_checkpoint_80x24",
        "live_checkpoint_120x40",
        "live_checkpoint_200x60",
        "guide_120x40",
        "conclusion_120x40",
        "approval_120x40",
        "synthesis_120x40",
        "completed_120x40",
        "help_80x24",
        "map_zoom1_120x40",
        "four_seats_160x40",
        "history_120x40",
        "history_search_120x40",
        "new_debate_120x40",
        "panel_live_120x40",
        "panel_result_120x40",
        "dialogue_live_120x40",
        "arena_live_120x40",
        "code_debate_160x45",
    ];
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let folder = root.join("assets/screenshots");
    let write = std::env::var_os("MOOT_WRITE_SCREENSHOTS").is_some();
    let mut stale = Vec::new();
    for name in SCREENSHOTS {
        let snap =
            std::fs::read_to_string(root.join(format!("tests/snapshots/screens__{name}.snap")))
                .unwrap_or_else(|e| panic!("{name}: no snapshot ({e})"));
        // insta's header is fenced by two `---` lines; the screen follows.
        let screen = snap.splitn(3, "---\n").nth(2).expect("insta's header");
        let file = folder.join(format!("{}.txt", name.replace('_', "-")));
        if write {
            std::fs::write(&file, screen).unwrap();
        } else if std::fs::read_to_string(&file).ok().as_deref() != Some(screen) {
            stale.push(file.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "these captures are not their snapshots: {stale:?}; write them with \
         MOOT_WRITE_SCREENSHOTS=1 cargo test --test screens the_screenshots"
    );
    let kept: Vec<String> = SCREENSHOTS
        .iter()
        .map(|name| format!("{}.txt", name.replace('_', "-")))
        .collect();
    let strays: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !kept.contains(name))
        .collect();
    assert!(
        strays.is_empty(),
        "{strays:?} in assets/screenshots are captures no test writes"
    );
    // The README's screen is the capture, whole.
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let capture = std::fs::read_to_string(folder.join("readme-120x32.txt")).unwrap();
    assert!(
        readme.contains(&format!("```text\n{capture}```")),
        "README.md does not show assets/screenshots/readme-120x32.txt whole in a text block"
    );
}

/// Issue 69 U12: a pane scrolled back from its newest text says so on its border, with the key
/// that follows it again; back at the end, the marker goes.
#[test]
fn a_pane_scrolled_back_says_what_is_below() {
    let events = round_one();
    let mut app = app_with(&events[..events.len() - 1]);
    render(&mut app, 80, 16);
    app.on_key(KeyEvent::new(KeyCode::Home, KeyModifiers::NONE));
    let screen = render(&mut app, 80, 16);
    assert!(
        screen.contains("more lines · G follows"),
        "no marker:\n{screen}"
    );
    app.on_key(KeyEvent::new(KeyCode::End, KeyModifiers::NONE));
    let screen = render(&mut app, 80, 16);
    assert!(!screen.contains("G follows"), "{screen}");
}

/// Issue 69 U11: too narrow for the side panels, their keys say where the panels went (and
/// change nothing that cannot be seen); `z` shows them.
#[test]
fn a_side_panel_key_on_a_narrow_screen_says_where_the_panels_are() {
    let events = round_one();
    let mut app = app_with(&events[..events.len() - 1]);
    render(&mut app, 100, 30);
    app.on_key(KeyEvent::new(KeyCode::Char('m'), KeyModifiers::NONE));
    let screen = render(&mut app, 100, 30);
    assert!(
        screen.contains("from 120 columns; z shows them full screen"),
        "{screen}"
    );
    assert!(app.panels.shows(moot::debate::SidePanel::Commitments));
    app.on_key(KeyEvent::new(KeyCode::Char('z'), KeyModifiers::NONE));
    let screen = render(&mut app, 100, 30);
    assert!(screen.contains("Commitments"), "{screen}");
    // Wide enough, the key does what it says.
    let mut app = app_with(&events[..events.len() - 1]);
    render(&mut app, 160, 40);
    app.on_key(KeyEvent::new(KeyCode::Char('m'), KeyModifiers::NONE));
    assert!(!app.panels.shows(moot::debate::SidePanel::Commitments));
}

#[test]
fn the_guidance_editor() {
    for (width, height) in SIZES {
        let mut app = app_with(&round_one());
        app.on_key(KeyEvent::new(KeyCode::Char('g'), KeyModifiers::NONE));
        for c in "Weigh our on-call load".chars() {
            app.on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
        }
        insta::assert_snapshot!(
            format!("guide_{width}x{height}"),
            render(&mut app, width, height)
        );
    }
}

#[test]
fn the_help_overlay() {
    for (width, height) in SIZES {
        let mut events = round_one();
        events.pop();
        let mut app = app_with(&events);
        app.on_key(KeyEvent::new(KeyCode::Char('?'), KeyModifiers::NONE));
        insta::assert_snapshot!(
            format!("help_{width}x{height}"),
            render(&mut app, width, height)
        );
    }
}

/// U5: the person's guidance stands in the panes where it was given, at once, and before the
/// next round's turns; a replay folds the same events, so it shows there too.
#[test]
fn the_persons_guidance_stands_in_the_panes_where_it_was_given() {
    let mut events = round_one();
    events.push(Event::CheckpointAnswered {
        round: 1,
        decision: Answer::Guide,
        guidance: Some("Weigh the migration cost.\nAnd the team's ops load.".into()),
        kind: AskKind::Checkpoint,
    });
    let mut app = app_with(&events);
    let screen = render(&mut app, 200, 60);
    assert!(
        screen.contains("your guidance after round 1")
            && screen.contains("Weigh the migration cost."),
        "shown as soon as it is given:\n{screen}"
    );
    assert!(screen.contains("And the team's ops load."), "{screen}");
    events.push(Event::RoundStarted {
        round: 2,
        limit: None,
    });
    events.push(completed(
        2,
        Phase::Argument,
        "A",
        "Migration costs a sprint; ops load is flat.",
        vec![],
    ));
    let screen = render(&mut app_with(&events), 200, 60);
    let guided = screen
        .find("your guidance after round 1")
        .expect("still shown");
    let next = screen.find("round 2 · argument").expect("round 2 shown");
    assert!(guided < next, "before the next round's turn:\n{screen}");
}

#[test]
fn the_finished_debate_and_its_synthesis() {
    for (width, height) in SIZES {
        let mut events = round_one();
        events.pop();
        events.push(Event::CheckpointAnswered {
            round: 1,
            decision: Answer::End,
            guidance: None,
            kind: AskKind::Checkpoint,
        });
        events.push(Event::Synthesis {
            markdown: "# Decision: Caching store\n\n**Approval:** approved by ana at the workbench\n\n**Confidence:** Medium\n\n## Recommendation\n\nCache in PostgreSQL behind an interface; move to Redis when p99 exceeds 50 ms.".into(),
            confidence: Confidence::Medium,
            path: Some("docs/decisions/2026-11-22-caching.md".into()),
            draft: false,
        });
        events.push(Event::DebateCompleted {
            id: "DEB-snap0001".into(),
            status: DebateStatus::Completed,
        });
        let mut app = app_with(&events);
        insta::assert_snapshot!(
            format!("completed_{width}x{height}"),
            render(&mut app, width, height)
        );
        app.on_key(KeyEvent::new(KeyCode::Char('s'), KeyModifiers::NONE));
        insta::assert_snapshot!(
            format!("synthesis_{width}x{height}"),
            render(&mut app, width, height)
        );
    }
}

#[test]
fn four_seats_lay_out_as_columns_grid_or_tabs() {
    let mut events = round_one();
    if let Event::DebateStarted { seats, .. } = &mut events[1] {
        seats.push(seat("C", "Future Flexibility", &["extensibility"]));
        seats.push(seat("D", "Security Advocate", &["attack surface"]));
    }
    events.pop();
    for (width, height) in [(80, 24), (160, 40), (220, 60)] {
        let mut app = app_with(&events);
        insta::assert_snapshot!(
            format!("four_seats_{width}x{height}"),
            render(&mut app, width, height)
        );
    }
}

#[test]
fn any_size_from_1x1_to_400x120_draws_without_panicking() {
    let mut app = app_with(&round_one());
    let mut terminal = Terminal::new(TestBackend::new(1, 1)).unwrap();
    let mut caches = Caches::default();
    for (width, height) in [
        (1, 1),
        (2, 1),
        (1, 5),
        (10, 3),
        (19, 5),
        (20, 6),
        (40, 8),
        (79, 23),
        (101, 30),
        (119, 13),
        (400, 120),
        (3, 120),
        (400, 2),
    ] {
        terminal.backend_mut().resize(width, height);
        terminal
            .resize(ratatui::layout::Rect::new(0, 0, width, height))
            .unwrap();
        terminal
            .draw(|frame| views::draw(frame, &mut app, &mut caches, &Theme::dark()))
            .unwrap();
        // Nothing from a previous, larger frame is left behind.
        let buffer = terminal.backend().buffer();
        assert_eq!(buffer.area.width, width);
        assert_eq!(buffer.area.height, height);
    }
}

#[test]
fn the_history_screen_its_search_and_the_new_debate_form() {
    use moot::store::{DebateSummary, SearchHit};
    use moot::tui::history::History;
    let summary =
        |id: &str, status: &str, confidence: Option<&str>, question: &str| DebateSummary {
            id: id.into(),
            question: question.into(),
            protocol: "moderated".into(),
            status: status.parse().unwrap(),
            confidence: confidence.and_then(Confidence::parse),
            created_at: "2026-11-22T10:00:00Z".into(),
            updated_at: "2026-11-22T10:00:00Z".into(),
            rounds: 2,
            stage: None,
        };
    let rows = vec![
        summary(
            "DEB-aaaa1111",
            "completed",
            Some("High"),
            "Should we use Redis or PostgreSQL for caching?",
        ),
        summary(
            "DEB-bbbb2222",
            "paused",
            None,
            "How should we structure the plugin system?",
        ),
        summary("DEB-cccc3333", "failed", None, "Should we add SSO?"),
    ];
    for (width, height) in SIZES {
        let mut history = History::new(std::sync::Arc::new(Keymap::default()));
        history.catalog = moot::catalog::catalog(&[])
            .into_iter()
            .map(|p| p.name)
            .collect();
        history.protocols = moot::launch::protocol_choices();
        history.providers = providers();
        history.show(rows.clone(), None);
        history.preview = Some((
            "DEB-aaaa1111".into(),
            "# Decision: Caching store\n\n**Confidence:** High".into(),
        ));
        let draw = |history: &History| {
            let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
            terminal
                .draw(|frame| views::history::draw(frame, history, &Theme::dark()))
                .unwrap();
            let buffer = terminal.backend().buffer().clone();
            (0..buffer.area.height)
                .map(|y| {
                    (0..buffer.area.width)
                        .map(|x| buffer[(x, y)].symbol().to_string())
                        .collect::<String>()
                        .trim_end()
                        .to_string()
                        + "\n"
                })
                .collect::<String>()
        };
        // U16: named columns, each debate's id, and a count in words.
        let screen = draw(&history);
        assert!(
            screen.contains("STATUS") && screen.contains("QUESTION") && screen.contains("aaaa1111"),
            "{screen}"
        );
        assert!(screen.contains("history · 3 debates"), "{screen}");
        insta::assert_snapshot!(format!("history_{width}x{height}"), screen);
        history.on_key(KeyEvent::new(KeyCode::Char('/'), KeyModifiers::NONE));
        history.on_key(KeyEvent::new(KeyCode::Char('s'), KeyModifiers::NONE));
        history.show(
            rows.clone(),
            Some(vec![SearchHit {
                id: "DEB-cccc3333".into(),
                question: "Should we add SSO?".into(),
                kind: "question".into(),
                snippet: "Should we add [SSO]?".into(),
                status: DebateStatus::Failed,
                protocol: "moderated".into(),
                confidence: None,
                created_at: "2026-11-22T10:00:00Z".into(),
            }]),
        );
        let screen = draw(&history);
        // U17: while a search is typed, the footer names the search's keys, not the list's.
        assert!(
            screen.contains("keep the search") && !screen.contains("d delete"),
            "{screen}"
        );
        insta::assert_snapshot!(format!("history_search_{width}x{height}"), screen);
        history.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
        history.on_key(KeyEvent::new(KeyCode::Char('n'), KeyModifiers::NONE));
        for c in "Monolith or services?".chars() {
            history.on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
        }
        let screen = draw(&history);
        // U9: the form offers the provider and its model; U17: the footer is the form's.
        assert!(
            screen.contains("‹ openai (from the environment) ›") && screen.contains("gpt-4o-mini"),
            "{screen}"
        );
        assert!(
            screen.contains("Ctrl-S start") && !screen.contains("r resume"),
            "{screen}"
        );
        insta::assert_snapshot!(format!("new_debate_{width}x{height}"), screen);
        // The panel seats judges: the form says so in place of the perspective fields.
        history.on_key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE));
        history.on_key(KeyEvent::new(KeyCode::Right, KeyModifiers::NONE));
        insta::assert_snapshot!(format!("new_panel_{width}x{height}"), draw(&history));
    }
}

/// The providers a form offers where `OPENAI_API_KEY` is set and one profile is configured.
fn providers() -> Vec<moot::tui::history::ProviderChoice> {
    use moot::tui::history::ProviderChoice;
    vec![
        ProviderChoice {
            name: None,
            label: "openai (from the environment)".into(),
            model: "gpt-4o-mini".into(),
        },
        ProviderChoice {
            name: Some("office".into()),
            label: "office · http://gpu-box:8000/v1".into(),
            model: "qwen2.5-14b".into(),
        },
    ]
}

/// Issue 24 item 2: every protocol's form, at 80×24 and 120×40, with its own options, the
/// first one focused and typed into, its help beneath.
#[test]
fn every_protocols_form_offers_its_own_options() {
    use moot::tui::history::{Field, History};
    let press = |history: &mut History, code: KeyCode| {
        history.on_key(KeyEvent::new(code, KeyModifiers::NONE));
    };
    let typed = [
        ("moderated", "tree"),
        ("panel", "A: Local-first sync; B: Online only"),
        ("dialogue", "docs/adr"),
        ("arena", "Proponent; human:Skeptic"),
        ("code", "src/lib.rs"),
    ];
    for (width, height) in [(80, 24), (120, 40)] {
        for (protocol, text) in typed {
            let mut history = History::new(std::sync::Arc::new(Keymap::default()));
            history.catalog = moot::catalog::catalog(&[])
                .into_iter()
                .map(|p| p.name)
                .collect();
            history.protocols = moot::launch::protocol_choices();
            history.providers = providers();
            history.default_protocol = history
                .protocols
                .iter()
                .position(|p| p.name == protocol)
                .unwrap();
            history.show(Vec::new(), None);
            press(&mut history, KeyCode::Char('n'));
            for c in "How should we cache sessions?".chars() {
                press(&mut history, KeyCode::Char(c));
            }
            while history.form.as_ref().unwrap().field != Field::Flag(0) {
                press(&mut history, KeyCode::Tab);
            }
            for c in text.chars() {
                press(&mut history, KeyCode::Char(c));
            }
            let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
            terminal
                .draw(|frame| views::history::draw(frame, &history, &Theme::dark()))
                .unwrap();
            let buffer = terminal.backend().buffer().clone();
            let screen: String = (0..buffer.area.height)
                .map(|y| {
                    (0..buffer.area.width)
                        .map(|x| buffer[(x, y)].symbol().to_string())
                        .collect::<String>()
                        .trim_end()
                        .to_string()
                        + "\n"
                })
                .collect();
            let first = &history.form_protocol().unwrap().flags[0];
            assert!(screen.contains(&format!("--{}", first.name)), "{screen}");
            assert!(
                screen.contains(&first.help[..20.min(first.help.len())]),
                "{screen}"
            );
            insta::assert_snapshot!(format!("form_{protocol}_{width}x{height}"), screen);
        }
    }
}

/// Issue 69 U15: `?` lists what works here. On a moderated debate every binding shows except a
/// code debate's and the shared context's, which have nothing to act on; at a checkpoint its
/// keys come first, within the first screenful of 80×24.
#[test]
fn the_help_lists_the_keys_that_work_here_first() {
    let mut app = app_with(&round_one()[..3]);
    app.on_key(KeyEvent::new(KeyCode::Char('?'), KeyModifiers::NONE));
    let screen = render(&mut app, 200, 80);
    let keymap = Keymap::default();
    let elsewhere = [
        "a code debate's",
        "shared context",
        "the selected fact's source",
    ];
    for scope in views::LIVE_HELP {
        assert!(screen.contains(scope.heading()), "help lacks {scope:?}");
        for binding in keymap.scope(scope) {
            let shown = screen.contains(binding.help);
            if elsewhere.iter().any(|e| binding.help.contains(e)) {
                assert!(!shown, "a moderated debate's help lists {:?}", binding.help);
            } else {
                assert!(shown, "help lacks {:?}", binding.help);
            }
        }
    }
    // At the checkpoint, its keys come first, on the first screenful of a small terminal.
    let mut app = app_with(&round_one());
    app.on_key(KeyEvent::new(KeyCode::Char('?'), KeyModifiers::NONE));
    let screen = render(&mut app, 80, 24);
    assert!(
        screen.contains("Now: at a checkpoint") && screen.contains("continue to the next round"),
        "{screen}"
    );
    let now = screen.find("Now: at a checkpoint").unwrap();
    assert!(
        now < screen
            .find("Anywhere on the live screen")
            .unwrap_or(usize::MAX)
    );
    // A code debate's keys show on a code debate.
    let mut app = app_with(&round_one()[..3]);
    app.view
        .presentation
        .panels
        .push(moot::debate::SidePanel::Versions);
    app.on_key(KeyEvent::new(KeyCode::Char('?'), KeyModifiers::NONE));
    let screen = render(&mut app, 200, 80);
    assert!(screen.contains("a code debate's hook runs"), "{screen}");
}

/// U10: a followed debate's `?` says that `q` leaves it running, and its header says it is
/// followed.
#[test]
fn a_followed_debate_says_it_runs_elsewhere() {
    let mut app = app_with(&round_one()[..3]);
    app.watching = Some("live: another process runs it".into());
    let screen = render(&mut app, 120, 40);
    assert!(
        screen.contains("· live: another process runs it"),
        "{screen}"
    );
    app.on_key(KeyEvent::new(KeyCode::Char('?'), KeyModifiers::NONE));
    let screen = render(&mut app, 120, 40);
    assert!(
        screen.contains("leave; the debate goes on where it runs")
            && !screen.contains("a running debate pauses"),
        "{screen}"
    );
}

/// A checkpoint, a conclusion, the guidance editor and the approval, drawn on rebound keys:
/// every hint on screen names the keys that work.
#[test]
fn every_modal_hint_follows_a_rebinding() {
    let rebound = std::collections::BTreeMap::from([
        ("continue".to_string(), vec!["n".to_string()]),
        ("guide".to_string(), vec!["i".to_string()]),
        ("end".to_string(), vec!["x".to_string()]),
        ("accept".to_string(), vec!["y".to_string()]),
        ("revise".to_string(), vec!["v".to_string()]),
        ("reject".to_string(), vec!["u".to_string()]),
        ("submit_guidance".to_string(), vec!["ctrl-g".to_string()]),
        ("scroll_down".to_string(), vec!["down".to_string()]),
    ]);
    let keymap = std::sync::Arc::new(Keymap::new(&rebound).unwrap());
    let mut app = App::with_keymap(false, keymap);
    for event in round_one() {
        app.on_event(&event);
    }
    let screen = render(&mut app, 120, 40);
    assert!(
        screen.contains("[n] continue   [i] guide   [x] end"),
        "the checkpoint modal:\n{screen}"
    );
    assert!(
        !screen.contains("[c]") && !screen.contains("[e]"),
        "{screen}"
    );
    assert!(
        screen.contains(" n continue  i guide  x end"),
        "the footer:\n{screen}"
    );
    app.on_key(KeyEvent::new(KeyCode::Char('i'), KeyModifiers::NONE));
    let screen = render(&mut app, 120, 40);
    assert!(
        screen.contains("Ctrl-G send · Esc back"),
        "the editor:\n{screen}"
    );
    app.on_key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
    app.on_event(&Event::CheckpointAnswered {
        round: 1,
        decision: Answer::Continue,
        guidance: None,
        kind: AskKind::Checkpoint,
    });
    app.on_event(&Event::Checkpoint {
        round: 2,
        timeout_seconds: 1800,
        kind: AskKind::Conclusion,
        detail: Some("The debate would end here: the perspectives reached agreement.".into()),
        choices: vec![],
    });
    let screen = render(&mut app, 120, 40);
    assert!(
        screen.contains("[y] accept and synthesise   [n] one more round")
            && screen.contains("[i] guide one more round"),
        "the conclusion modal:\n{screen}"
    );
    app.on_event(&Event::CheckpointAnswered {
        round: 2,
        decision: Answer::Accept,
        guidance: None,
        kind: AskKind::Conclusion,
    });
    app.on_event(&Event::Synthesis {
        markdown: "# Decision: Caching store\n\n**Confidence:** Medium".into(),
        confidence: Confidence::Medium,
        path: None,
        draft: true,
    });
    app.on_event(&Event::Checkpoint {
        round: 2,
        timeout_seconds: 1800,
        kind: AskKind::Approval,
        detail: None,
        choices: vec![],
    });
    let screen = render(&mut app, 120, 40);
    assert!(
        screen.contains(
            "Approve this synthesis?   [y] approve   [v] ask for one revision   [u] leave unapproved"
        ),
        "the approval:\n{screen}"
    );
    assert!(screen.contains("draft, awaiting approval"), "{screen}");
}

#[test]
fn the_conclusion_and_the_approval_at_each_size() {
    for (width, height) in SIZES {
        let mut events = round_one();
        events.pop();
        events.push(Event::RoundCompleted {
            round: 1,
            convergence: Convergence {
                assessment: Assessment::Converging,
                decision: Decision::Continue,
                signal: ConvergenceSignal::None,
                reason: "both seats concede".into(),
                overruled: Some("the moderator called agreement, but no seat has conceded a point and the seats' commitment stores share no proposition".into()),
            },
            summary: "The seats still disagree on the latency target.".into(),
        });
        events.push(Event::Flag {
            round: 1,
            seat: "moderator".into(),
            kind: FlagKind::Unsupported,
            detail: "no concession".into(),
        });
        events.push(Event::Checkpoint {
            round: 1,
            timeout_seconds: 1800,
            kind: AskKind::Conclusion,
            detail: Some("The debate would end here: the maximum number of rounds was reached without convergence.".into()),
            choices: vec![],
        });
        let mut app = app_with(&events);
        insta::assert_snapshot!(
            format!("conclusion_{width}x{height}"),
            render(&mut app, width, height)
        );
        app.on_event(&Event::CheckpointAnswered {
            round: 1,
            decision: Answer::Accept,
            guidance: None,
            kind: AskKind::Conclusion,
        });
        app.on_event(&Event::Synthesis {
            markdown: "# Decision: Caching store\n\n**Date:** 2026-11-22\n\n**Debate ID:** DEB-snap0001\n\n**Confidence:** Low\n\n**Caveats:** revisit at the p99 target\n\n## Recommendation\n\nCache in PostgreSQL behind an interface [A1.1].".into(),
            confidence: Confidence::Low,
            path: None,
            draft: true,
        });
        app.on_event(&Event::Checkpoint {
            round: 1,
            timeout_seconds: 1800,
            kind: AskKind::Approval,
            detail: None,
            choices: vec![],
        });
        insta::assert_snapshot!(
            format!("approval_{width}x{height}"),
            render(&mut app, width, height)
        );
    }
}

#[test]
fn ascii_mode_draws_no_box_drawing_or_arrows() {
    let mut app = app_with(&round_one());
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    let theme = Theme::dark().with_ascii(true);
    terminal
        .draw(|frame| views::draw(frame, &mut app, &mut Caches::default(), &theme))
        .unwrap();
    let buffer = terminal.backend().buffer();
    for cell in buffer.content.iter() {
        for glyph in ["─", "│", "╭", "╯", "●", "·", "→", "⇐", "↯", "✕", "•"] {
            assert_ne!(cell.symbol(), glyph, "--ascii drew {glyph}");
        }
    }
}

#[test]
fn the_argument_map_with_a_selected_path_and_each_zoom() {
    for zoom in 0..3 {
        let mut events = round_one();
        events.pop();
        let mut app = app_with(&events);
        app.map.zoom = zoom;
        app.on_key(KeyEvent::new(KeyCode::Char(']'), KeyModifiers::NONE));
        app.on_key(KeyEvent::new(KeyCode::Char('z'), KeyModifiers::NONE));
        insta::assert_snapshot!(format!("map_zoom{zoom}_120x40"), render(&mut app, 120, 40));
    }
}

#[test]
fn the_help_scrolls_on_a_small_terminal_to_its_last_key() {
    let mut app = app_with(&round_one()[..3]);
    app.on_key(KeyEvent::new(KeyCode::Char('?'), KeyModifiers::NONE));
    let keymap = Keymap::default();
    let last = keymap.scope(Scope::Approval).last().unwrap();
    assert!(
        !render(&mut app, 80, 24).contains(last.help),
        "the list is longer than 24 rows"
    );
    for _ in 0..12 {
        app.on_key(KeyEvent::new(KeyCode::PageDown, KeyModifiers::NONE));
    }
    assert!(
        render(&mut app, 80, 24).contains(last.help),
        "scrolled to the end"
    );
}

fn judge(id: &str, name: &str, stance: &str) -> Seat {
    Seat {
        stance: stance.into(),
        ..seat(id, name, &[stance])
    }
}

fn standings(round: u32, backers: &[&[&[&str]]], headline: &str, changes: &[&str]) -> Event {
    let options = [
        ("A", "Local-first sync"),
        ("B", "Online only"),
        ("C", "Limited offline"),
    ];
    Event::Standings {
        round,
        headline: headline.into(),
        standings: options
            .iter()
            .zip(backers)
            .map(|((id, label), rounds)| Standing {
                id: id.to_string(),
                label: label.to_string(),
                backers: rounds
                    .iter()
                    .map(|r| r.iter().map(|s| s.to_string()).collect())
                    .collect(),
            })
            .collect(),
        changes: changes.iter().map(|c| c.to_string()).collect(),
    }
}

/// A judges' panel in round 2: round 1 split three ways, Value has moved to A, Effort streams.
fn panel_round_two() -> Vec<Event> {
    let presentation = moot::protocol::builtin()
        .named("panel")
        .unwrap()
        .presentation();
    let question = "How much offline support should v1 have?";
    vec![
        Event::DebateCreated {
            id: "DEB-panel001".into(),
            question: question.into(),
            protocol: "panel".into(),
            resumed: false,
            presentation: presentation.clone(),
        },
        Event::DebateStarted {
            id: "DEB-panel001".into(),
            question: question.into(),
            protocol: "panel".into(),
            seats: vec![
                judge("R", "Risk", "skeptical: minimise risk"),
                judge("V", "Value", "optimistic: maximise user value"),
                judge("E", "Effort", "pragmatic: optimise ROI"),
            ],
            max_rounds: 2,
            provider: "openai".into(),
            model: "stand-in".into(),
            caveat: None,
            presentation,
        },
        Event::RoundStarted {
            round: 1,
            limit: None,
        },
        completed(
            1,
            Phase::Recommendation,
            "R",
            "Sync conflicts are where offline editors fail: merge bugs surface weeks later. **Recommend A** only with a conflict log; otherwise C.",
            vec![],
        ),
        completed(
            1,
            Phase::Recommendation,
            "V",
            "Field teams work in basements with no signal: without editing offline they cannot do their job. **Recommend B** for v1 speed, A next.",
            vec![],
        ),
        completed(
            1,
            Phase::Recommendation,
            "E",
            "A read-only cache covers most of the field need at a tenth of the cost. **Recommend C.**",
            vec![],
        ),
        standings(
            1,
            &[&[&["R"]], &[&["V"]], &[&["E"]]],
            "Round 1: no consensus (largest share 1 of 3; needs 2/3)",
            &[],
        ),
        Event::RoundStarted {
            round: 2,
            limit: None,
        },
        completed(
            2,
            Phase::Challenge,
            "R",
            "Value assumes users tolerate lost edits; Effort assumes a cache is enough for field notes. I hold A with a conflict log.",
            vec![],
        ),
        completed(
            2,
            Phase::Challenge,
            "V",
            "Risk's conflict log answers my worry about lost work; I move to A.",
            vec![],
        ),
        Event::TurnStarted {
            round: 2,
            phase: Phase::Challenge,
            seat: "E".into(),
        },
        Event::TurnDelta {
            seat: "E".into(),
            round: 2,
            phase: Phase::Challenge,
            text: "Risk prices the merge work honestly, but".into(),
        },
    ]
}

/// A7 (d): a judge whose reply fell back is said to have had its reply unread, in words that
/// fit every protocol (judges make no moves).
#[test]
fn a_fallback_turn_says_its_reply_could_not_be_read() {
    let mut events = panel_round_two();
    for event in &mut events {
        if let Event::TurnCompleted { seat, status, .. } = event
            && seat.as_str() == "R"
        {
            *status = TurnStatus::Fallback;
        }
    }
    let screen = render(&mut app_with(&events), 200, 50);
    assert!(
        screen.contains("[fallback: its reply could not be read; the")
            && screen.contains("prose is kept]"),
        "{screen}"
    );
    assert!(!screen.contains("no moves"), "{screen}");
}

#[test]
fn the_panel_live_screen_its_choice_and_its_result() {
    for (width, height) in SIZES {
        let mut app = app_with(&panel_round_two());
        let screen = render(&mut app, width, height);
        let side_panel = width >= 120;
        for expected in ["Risk", "Value", "Effort", "Options"]
            .into_iter()
            .filter(|e| side_panel || *e != "Options")
        {
            assert!(
                screen.contains(expected),
                "{expected} missing at {width}x{height}:\n{screen}"
            );
        }
        insta::assert_snapshot!(format!("panel_live_{width}x{height}"), screen);
        if side_panel {
            // `a` hides the options panel and shows it again.
            app.on_key(KeyEvent::new(KeyCode::Char('a'), KeyModifiers::NONE));
            assert!(!render(&mut app, width, height).contains("╭ Options"));
            app.on_key(KeyEvent::new(KeyCode::Char('a'), KeyModifiers::NONE));
            assert!(render(&mut app, width, height).contains("╭ Options"));
        }

        let mut events = panel_round_two();
        events.push(completed(2, Phase::Challenge, "E", "Risk prices the merge work honestly, but a cache still ships a quarter sooner. I stay with C.", vec![]));
        events.push(standings(
            2,
            &[&[&["R"], &["R", "V"]], &[&["V"], &[]], &[&["E"], &["E"]]],
            "Round 2: no consensus (largest share 2 of 3 for A; needs 3/4)",
            &["value r2: B → A — Risk's conflict log answers the lost-work worry"],
        ));
        events.push(Event::Synthesis {
            markdown: "# Panel result: How much offline support should v1 have?\n\n**Outcome:** CONTESTED\n\n**Confidence:** REQUIRES_INPUT".into(),
            confidence: Confidence::RequiresInput,
            path: None,
            draft: true,
        });
        events.push(Event::Checkpoint {
            round: 2,
            timeout_seconds: 1800,
            kind: AskKind::Choice,
            detail: Some("No option reached 3/4 of the 3 judges (backed: A by risk, value; C by effort). Each judge's case is in the result (s).".into()),
            choices: vec![
                ("A".into(), "Local-first sync".into()),
                ("B".into(), "Online only".into()),
                ("C".into(), "Limited offline".into()),
            ],
        });
        let mut app = app_with(&events);
        insta::assert_snapshot!(
            format!("panel_choice_{width}x{height}"),
            render(&mut app, width, height)
        );

        app.on_event(&Event::CheckpointAnswered {
            round: 2,
            decision: Answer::Choose,
            guidance: Some("A".into()),
            kind: AskKind::Choice,
        });
        app.on_event(&Event::Synthesis {
            markdown: "# Panel result: How much offline support should v1 have?\n\n**Outcome:** CONTESTED — chosen: option A: Local-first sync (by ana at the workbench)\n\n**Confidence:** REQUIRES_INPUT\n\n## Distribution\n\n- A: Local-first sync — risk, value\n- C: Limited offline — effort\n\n## Change log\n\n- value, round 2: B → A — Risk's conflict log answers the lost-work worry".into(),
            confidence: Confidence::RequiresInput,
            path: Some("docs/decisions/2026-11-22-offline-support.md".into()),
            draft: false,
        });
        app.on_event(&Event::DebateCompleted {
            id: "DEB-panel001".into(),
            status: DebateStatus::Completed,
        });
        app.on_key(KeyEvent::new(KeyCode::Char('s'), KeyModifiers::NONE));
        let screen = render(&mut app, width, height);
        assert!(
            screen.contains("Result"),
            "the result view is titled by the protocol:\n{screen}"
        );
        assert!(!screen.contains("Synthesis"), "{screen}");
        insta::assert_snapshot!(format!("panel_result_{width}x{height}"), screen);
    }
}

/// Seed review 000/001 #3 and #4: a choice among 26 options fits 80×24 and 120×40, lists each
/// option once, scrolls to the selection, and no letter picks an option (`q` still quits, it
/// never chooses Q); ↓ and Enter choose.
#[test]
fn a_choice_among_26_options_fits_scrolls_and_is_made_with_enter() {
    use moot::tui::app::Effect;
    let letters: Vec<char> = ('A'..='Z').collect();
    let choice = Event::Checkpoint {
        round: 1,
        timeout_seconds: 1800,
        kind: AskKind::Choice,
        detail: Some("No option reached 2/3 of the 3 judges (backed: A by risk; B by value; C by effort). Each judge's case is in the result (s).".into()),
        choices: letters
            .iter()
            .map(|l| (l.to_string(), format!("Vendor {l}: a plausible offer")))
            .collect(),
    };
    for (width, height) in [(80, 24), (120, 40)] {
        let mut events = round_one();
        events.retain(|e| !matches!(e, Event::Checkpoint { .. }));
        events.push(choice.clone());
        let mut app = app_with(&events);
        let screen = render(&mut app, width, height);
        assert_eq!(
            screen.matches("Vendor A: a plausible offer").count(),
            1,
            "each option once:\n{screen}"
        );
        assert!(screen.contains("leave it open"), "the keys fit:\n{screen}");
        insta::assert_snapshot!(format!("choice_26_options_{width}x{height}"), screen);
        for _ in 0..25 {
            app.on_key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE));
        }
        let screen = render(&mut app, width, height);
        assert!(
            screen.contains("› Z  Vendor Z"),
            "the list scrolls to the selection:\n{screen}"
        );
        if height == 24 {
            assert!(!screen.contains("Vendor A: a plausible offer"), "{screen}");
        }
    }
    let mut events = round_one();
    events.retain(|e| !matches!(e, Event::Checkpoint { .. }));
    events.push(choice);
    let mut app = app_with(&events);
    for letter in ['q', 's', 'a', 'c'] {
        let effect = app.on_key(KeyEvent::new(KeyCode::Char(letter), KeyModifiers::NONE));
        assert!(
            !matches!(
                effect,
                Some(Effect::Control(moot::debate::Control::Choose(_)))
            ),
            "{letter} chose an option: {effect:?}"
        );
        app.modal = moot::tui::app::Modal::Ask;
    }
    app.on_key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE));
    app.on_key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE));
    assert_eq!(
        app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)),
        Some(Effect::Control(moot::debate::Control::Choose("C".into())))
    );
}

/// Seed review 000/001 #10: a contested draft waits for the person's choice, and says so, not
/// "awaiting approval".
#[test]
fn a_contested_draft_awaits_a_choice_not_an_approval() {
    let mut events = round_one();
    events.retain(|e| !matches!(e, Event::Checkpoint { .. }));
    events.push(Event::Synthesis {
        markdown: "# Panel result\n\n**Outcome:** CONTESTED".into(),
        confidence: Confidence::RequiresInput,
        path: None,
        draft: true,
    });
    events.push(Event::Checkpoint {
        round: 1,
        timeout_seconds: 1800,
        kind: AskKind::Choice,
        detail: Some("No option reached 2/3 of the 3 judges.".into()),
        choices: vec![("A".into(), "One".into()), ("B".into(), "Two".into())],
    });
    let mut app = app_with(&events);
    app.on_key(KeyEvent::new(KeyCode::Char('s'), KeyModifiers::NONE));
    let screen = render(&mut app, 120, 40);
    assert!(screen.contains("awaiting your choice"), "{screen}");
    assert!(!screen.contains("awaiting approval"), "{screen}");
}

/// Seed review 000/001 #10: before its first event a panel's screen is the panel's own (the
/// workbench knows what it started), and at its options step the header and strip say so.
#[test]
fn a_panel_opens_as_a_panel_and_its_options_step_says_what_it_is() {
    let presentation = moot::protocol::builtin()
        .named("panel")
        .unwrap()
        .presentation();
    let mut app = App::new(false);
    app.view.expecting(
        "How much offline support should v1 have?",
        "panel",
        presentation,
    );
    app.started = None;
    let screen = render(&mut app, 120, 40);
    assert!(screen.contains("framing the options"), "{screen}");
    assert!(screen.contains("· panel · starting"), "{screen}");
    assert!(!screen.contains("Commitments"), "{screen}");

    let mut events = panel_round_two();
    events.truncate(1);
    events.push(Event::TurnStarted {
        round: 0,
        phase: Phase::Options,
        seat: "moderator".into(),
    });
    let mut app = app_with(&events);
    let screen = render(&mut app, 120, 40);
    assert!(screen.contains("proposing the options"), "{screen}");
    assert!(!screen.contains("analysing"), "{screen}");
    assert!(screen.contains("options "), "{screen}");
    assert!(!screen.contains("of round 0"), "{screen}");
    app.on_event(&Event::Checkpoint {
        round: 0,
        timeout_seconds: 1800,
        kind: AskKind::Options,
        detail: Some("The moderator proposes these options: …".into()),
        choices: vec![("A".into(), "One".into()), ("B".into(), "Two".into())],
    });
    let screen = render(&mut app, 120, 40);
    assert!(
        screen.contains("· panel · the options to settle"),
        "{screen}"
    );
}

/// Seed review 000/001 #11: the moderator's opening of a round shows in its strip until that
/// round's summary replaces it, and an overrule note no longer pushes the summary out.
#[test]
fn the_strip_shows_the_rounds_opening_then_its_summary() {
    let mut events = round_one();
    events.retain(|e| !matches!(e, Event::Checkpoint { .. }));
    events.push(completed(
        2,
        Phase::Pose,
        "moderator",
        "A, answer B's point on lock contention under write bursts.",
        vec![],
    ));
    let mut app = app_with(&events);
    let screen = render(&mut app, 120, 40);
    assert!(
        screen.contains(" round 2: A, answer B's point on lock contention"),
        "{screen}"
    );
    assert!(!screen.contains("The seats still disagree"), "{screen}");
}

/// Seed review 002/003 #10: the outcome view stops scrolling at its end, so the first key
/// back up moves it at once.
#[test]
fn the_outcome_view_stops_scrolling_at_its_end() {
    let mut events = round_one();
    events.retain(|e| !matches!(e, Event::Checkpoint { .. }));
    let markdown: String = (1..=60)
        .map(|n| format!("Line {n} of the verdict.\n\n"))
        .collect();
    events.push(Event::Synthesis {
        markdown,
        confidence: Confidence::High,
        path: None,
        draft: false,
    });
    let mut app = app_with(&events);
    app.on_key(KeyEvent::new(KeyCode::Char('s'), KeyModifiers::NONE));
    for _ in 0..30 {
        app.on_key(KeyEvent::new(KeyCode::PageDown, KeyModifiers::NONE));
    }
    let end = render(&mut app, 120, 40);
    assert!(end.contains("Line 60 of the verdict."), "{end}");
    app.on_key(KeyEvent::new(KeyCode::PageUp, KeyModifiers::NONE));
    let up = render(&mut app, 120, 40);
    assert!(
        !up.contains("Line 60 of the verdict."),
        "one key up moves: {up}"
    );
    assert!(up.contains("of the verdict."), "{up}");
}

/// Seed review 000/001 #1: with no usable options proposed, the options question asks for
/// them typed and offers no way to go on without them; with a proposal, it offers to use it.
#[test]
fn an_options_step_with_nothing_proposed_asks_for_them_typed() {
    let asked = |choices: Vec<(String, String)>| {
        let mut events = panel_round_two();
        events.truncate(1);
        events.push(Event::Checkpoint {
            round: 0,
            timeout_seconds: 1800,
            kind: AskKind::Options,
            detail: Some(
                "The moderator proposed no usable options. Type the options to judge.".into(),
            ),
            choices,
        });
        app_with(&events)
    };
    let mut empty = asked(vec![]);
    let screen = render(&mut empty, 120, 40);
    assert!(screen.contains("type the options"), "{screen}");
    assert!(!screen.contains("use these options"), "{screen}");
    let pressed = empty.on_key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::NONE));
    assert_eq!(pressed, None, "nothing to go on with");
    assert!(render(&mut empty, 120, 40).contains("The options to judge"));
    // A6: typed options the debate refuses come back with the reason in the question, and
    // the words sent come back to be mended.
    empty.on_key(KeyEvent::new(KeyCode::Char('g'), KeyModifiers::NONE));
    for c in "A: Postgres".chars() {
        empty.on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
    }
    let sent = empty.on_key(KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL));
    assert_eq!(
        sent,
        Some(moot::tui::app::Effect::Control(
            moot::debate::Control::Guide("A: Postgres".into())
        ))
    );
    empty.on_event(&Event::Notice {
        message: "those options cannot be used (at least two options are needed); type them again"
            .into(),
    });
    let screen = render(&mut empty, 120, 40);
    assert!(
        screen.contains("The options to judge") && screen.contains("at least two options are"),
        "{screen}"
    );
    empty.on_key(KeyEvent::new(KeyCode::Char('g'), KeyModifiers::NONE));
    let screen = render(&mut empty, 120, 40);
    assert!(screen.contains("A: Postgres"), "{screen}");

    let mut proposed = asked(vec![("A".into(), "One".into()), ("B".into(), "Two".into())]);
    assert!(render(&mut proposed, 120, 40).contains("use these options"));
    let pressed = proposed.on_key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::NONE));
    assert_eq!(
        pressed,
        Some(moot::tui::app::Effect::Control(
            moot::debate::Control::Continue
        ))
    );
}

/// A formal dialogue after its first round of argumentation: K gathered, OPP had a move
/// rejected, the moderator's strip carries the scores.
fn dialogue_round_one() -> Vec<Event> {
    let presentation = moot::protocol::builtin()
        .named("dialogue")
        .unwrap()
        .presentation();
    let side = |id: &str, persona: &str, stance: &str| Seat {
        id: id.into(),
        perspective: persona.into(),
        priorities: vec!["Security Advocate".into()],
        trade_offs: "bias".into(),
        stance: stance.into(),
        provider: None,
        model: None,
    };
    let mut since = mv(
        "P2",
        Act::Since,
        "Adopt tower's retry layer",
        &["P1"],
        Some(Relation::Support),
    );
    since.premises = vec![
        "tower is maintained by the tokio team".into(),
        "the loop has no jitter".into(),
    ];
    vec![
        Event::DebateCreated {
            id: "DEB-dialog01".into(),
            question: "We should replace our hand-rolled retry loop with tower's retry layer"
                .into(),
            protocol: "dialogue".into(),
            resumed: false,
            presentation: presentation.clone(),
        },
        Event::DebateStarted {
            id: "DEB-dialog01".into(),
            question: "We should replace our hand-rolled retry loop with tower's retry layer"
                .into(),
            protocol: "dialogue".into(),
            seats: vec![
                side(
                    "PRO",
                    "Pragmatic engineer focused on delivery and simplicity",
                    "argues FOR the thesis",
                ),
                side(
                    "OPP",
                    "Cautious architect focused on quality and long-term health",
                    "argues AGAINST the thesis",
                ),
            ],
            max_rounds: 2,
            provider: "openai".into(),
            model: "stand-in".into(),
            caveat: None,
            presentation,
        },
        Event::SharedContext {
            root: "/src/myservice".into(),
            facts: vec![
                moot::debate::Fact {
                    text: "The client retries in a hand-written loop with a fixed 100 ms sleep."
                        .into(),
                    source: "src/client.rs:3".into(),
                    file: Some(("src/client.rs".into(), 3)),
                },
                moot::debate::Fact {
                    text: "ADR 3 requires exponential backoff for every retry.".into(),
                    source: "docs/adr/0003-retries.md:3".into(),
                    file: Some(("docs/adr/0003-retries.md".into(), 3)),
                },
                moot::debate::Fact {
                    text: "The loop was added with the billing client.".into(),
                    source: "commit 1a2b3c4".into(),
                    file: None,
                },
            ],
            notes: vec![],
        },
        Event::RoundStarted {
            round: 0,
            limit: None,
        },
        completed(
            0,
            Phase::Opening,
            "PRO",
            "Tower's layer is the maintained way to retry.",
            vec![mv("P1", Act::Claim, "Adopt tower's retry layer", &[], None)],
        ),
        completed(
            0,
            Phase::Opening,
            "OPP",
            "Our loop works; a dependency is a cost.",
            vec![mv(
                "O1",
                Act::Claim,
                "Keep the hand-rolled loop",
                &["P1"],
                Some(Relation::Rebut),
            )],
        ),
        Event::RoundStarted {
            round: 1,
            limit: None,
        },
        completed(
            1,
            Phase::Argument,
            "PRO",
            "Two reasons, both in K.",
            vec![
                since,
                mv(
                    "P2.1",
                    Act::Claim,
                    "tower is maintained by the tokio team",
                    &["P2"],
                    Some(Relation::Support),
                ),
                mv(
                    "P2.2",
                    Act::Claim,
                    "the loop has no jitter",
                    &["P2"],
                    Some(Relation::Support),
                ),
            ],
        ),
        Event::TurnCompleted {
            round: 1,
            phase: Phase::Argument,
            seat: "OPP".into(),
            content: "Why does jitter matter at our volume?".into(),
            moves: vec![mv(
                "O2",
                Act::Why,
                "the loop has no jitter",
                &["P2.2"],
                None,
            )],
            confidence: None,
            tokens_in: 900,
            tokens_out: 120,
            tokens_estimated: false,
            latency_ms: 800,
            provider: "openai".into(),
            model: "stand-in".into(),
            status: TurnStatus::Ok,
            note: Some(
                "1 move(s) rejected after the repair request: move 2: P2 already gives its reasons"
                    .into(),
            ),
            replayed: false,
        },
        Event::Violation {
            round: 1,
            seat: "OPP".into(),
            rule: "move 2: P2 already gives its reasons".into(),
        },
        Event::RoundCompleted {
            round: 1,
            convergence: Convergence {
                assessment: Assessment::NewGround,
                decision: Decision::Continue,
                signal: ConvergenceSignal::None,
                reason: "the sides argue on".into(),
                overruled: None,
            },
            summary: "PRO 0.47 · OPP 0.50 · 1 open why(s) · 1 violation(s)".into(),
        },
    ]
}

#[test]
fn the_dialogue_live_screen_with_context_moves_and_a_rejected_move_then_its_verdict() {
    for (width, height) in SIZES {
        let mut app = app_with(&dialogue_round_one());
        let screen = render(&mut app, width, height);
        let wide = ["⚠ 1 violation ", "O2 why the loop has no jitter → P2.2"];
        for expected in ["PRO", "OPP", "P2 since {P2.1, P2.2} → P1"]
            .into_iter()
            .chain(wide.into_iter().filter(|_| width >= 200))
        {
            assert!(
                screen.contains(expected),
                "{expected} missing at {width}x{height}:\n{screen}"
            );
        }
        if width >= 120 {
            assert!(
                screen.contains("Context (K)") && screen.contains("src/client.rs:3"),
                "{screen}"
            );
        }
        insta::assert_snapshot!(format!("dialogue_live_{width}x{height}"), screen);

        let mut events = dialogue_round_one();
        events.push(Event::Synthesis {
            markdown: "# Debate: \"We should replace our hand-rolled retry loop with tower's retry layer\"\n\n## Verdict\n\n### Computed from the journal\n\n- **Winner:** OPP by the scores\n- **Side scores:** PRO 0.47 (the score of its thesis P1) · OPP 0.50 (the score of its thesis O1)\n\n### Winner: **OPP** (Score: 0.47 vs 0.50)".into(),
            confidence: Confidence::Low,
            path: None,
            draft: false,
        });
        events.push(Event::DebateCompleted {
            id: "DEB-dialog01".into(),
            status: DebateStatus::Completed,
        });
        let mut app = app_with(&events);
        app.on_key(KeyEvent::new(KeyCode::Char('s'), KeyModifiers::NONE));
        let screen = render(&mut app, width, height);
        assert!(
            screen.contains("Verdict") && screen.contains("0.47"),
            "{screen}"
        );
        insta::assert_snapshot!(format!("dialogue_verdict_{width}x{height}"), screen);
    }
}

#[test]
fn the_moderators_ruling_shows_in_the_panes_it_names_and_a_struck_argument_leaves_the_map() {
    let mut events = dialogue_round_one();
    events.pop();
    events.push(completed(
        1,
        Phase::Ruling,
        "moderator",
        "P2 leans on nothing in K; O2 sneers.",
        vec![],
    ));
    let ruled = |id: &str, side: &str, reason: &str| moot::debate::Ruled {
        id: id.into(),
        side: side.into(),
        reason: reason.into(),
    };
    events.push(Event::Ruled {
        round: 1,
        ruling: moot::debate::Ruling {
            struck: vec![ruled(
                "P2",
                "PRO",
                "neither reason is in the shared context",
            )],
            ad_hominem: vec![ruled("O2", "OPP", "it mocks PRO instead of P2.2")],
        },
    });
    events.push(Event::Violation {
        round: 1,
        seat: "OPP".into(),
        rule: "no ad hominem: O2 attacks the speaker, not the argument".into(),
    });
    events.push(Event::RoundStarted {
        round: 2,
        limit: None,
    });
    let mut lapse = mv(
        "P3",
        Act::Retract,
        "the loop has no jitter",
        &["P2.2", "O2"],
        None,
    );
    lapse.relation = None;
    events.push(completed(
        2,
        Phase::Lapse,
        "PRO",
        "P2.2 is retracted: O2 (round 1) went unanswered past the grace of 1 round(s).",
        vec![lapse],
    ));
    let mut app = app_with(&events);
    let graph = &app.view.graph;
    let p2 = graph.get("P2").unwrap();
    assert!(p2.struck && p2.score == 0.0, "{p2:?}");
    assert!(
        graph.get("P2.1").unwrap().struck,
        "its reasons fall with it"
    );
    assert!(graph.get("P2.2").unwrap().retracted);
    let screen = render(&mut app, 200, 50);
    for expected in [
        "the moderator's ruling",
        "✗ P2 struck as weak: neither reason is in the shared context",
        "✗ O2 attacks the speaker, not the argument",
        "round 2 · lapse",
        "P3 retract the loop has no jitter",
        "went unanswered past the grace",
    ] {
        assert!(screen.contains(expected), "{expected} missing:\n{screen}");
    }
    // Each side's pane holds its own part of the ruling, not the other's.
    let pro_pane: String = screen
        .lines()
        .map(|l| l.chars().take(60).collect::<String>())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        pro_pane.contains("P2 struck") && !pro_pane.contains("O2 attacks"),
        "{pro_pane}"
    );
    insta::assert_snapshot!("dialogue_ruling_200x50", screen);
}

#[test]
fn a_fact_of_the_shared_context_opens_only_as_a_file_gathering_found() {
    let mut app = app_with(&dialogue_round_one());
    let key = |c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE);
    // Nothing selected: `o` opens the first fact.
    match app.on_key(key('o')) {
        Some(moot::tui::app::Effect::OpenSource { root, path, line }) => {
            assert_eq!(
                (root.as_str(), path.as_str(), line),
                ("/src/myservice", "src/client.rs", 3)
            );
        }
        _ => panic!("o did not open the first fact"),
    }
    app.on_key(key(')'));
    app.on_key(key(')'));
    match app.on_key(key('o')) {
        Some(moot::tui::app::Effect::OpenSource { path, line, .. }) => {
            assert_eq!((path.as_str(), line), ("docs/adr/0003-retries.md", 3))
        }
        _ => panic!("o did not open the second fact"),
    }
    // A commit is no file: a notice, nothing run.
    app.on_key(key(')'));
    assert!(app.on_key(key('o')).is_none());
    assert!(
        app.notice
            .as_deref()
            .unwrap_or("")
            .contains("commit 1a2b3c4 is not a file"),
        "{:?}",
        app.notice
    );
    // `x` hides the panel and shows it again.
    let screen = render(&mut app, 160, 45);
    assert!(screen.contains("Context (K)"));
    app.on_key(key('x'));
    assert!(!render(&mut app, 160, 45).contains("Context (K)"));
}

/// An arena in its rebuttal round: three seats, one played by an outside agent it now waits
/// for, rubric scores in the side panel.
fn arena_rebuttal() -> Vec<Event> {
    let presentation = moot::protocol::builtin()
        .named("arena")
        .unwrap()
        .presentation();
    let role = |id: &str, name: &str, stance: &str| Seat {
        id: id.into(),
        perspective: name.into(),
        priorities: vec![],
        trade_offs: "argue from data".into(),
        stance: stance.into(),
        provider: None,
        model: None,
    };
    vec![
        Event::DebateCreated {
            id: "DEB-arena001".into(),
            question: "Adopt a 4-day work week".into(),
            protocol: "arena".into(),
            resumed: false,
            presentation: presentation.clone(),
        },
        Event::DebateStarted {
            id: "DEB-arena001".into(),
            question: "Adopt a 4-day work week".into(),
            protocol: "arena".into(),
            seats: vec![
                role("A", "Proponent", "for"),
                Seat {
                    provider: Some(moot::debate::PERSON.into()),
                    ..role("B", "Skeptic", "against")
                },
                Seat {
                    provider: Some(moot::debate::OUTSIDE.into()),
                    ..role("C", "reviewer", "outside view")
                },
            ],
            max_rounds: 3,
            provider: "openai".into(),
            model: "stand-in".into(),
            caveat: None,
            presentation,
        },
        Event::RoundStarted {
            round: 1,
            limit: None,
        },
        completed(
            1,
            Phase::Opening,
            "A",
            "Output per hour rose 20% in the 2022 pilot.",
            vec![mv("A1.1", Act::Claim, "Productivity rises", &[], None)],
        ),
        completed(
            1,
            Phase::Opening,
            "B",
            "One pilot is not evidence.",
            vec![mv(
                "B1.1",
                Act::Claim,
                "The pilot is too small",
                &["A1.1"],
                Some(Relation::Rebut),
            )],
        ),
        completed(
            1,
            Phase::Opening,
            "C",
            "Customer support coverage drops on Fridays.",
            vec![],
        ),
        Event::Scores {
            round: 1,
            scores: vec![
                moot::debate::TurnScore {
                    turn_number: 1,
                    seat: "A".into(),
                    score: 0.78,
                    gradual: Some(0.35),
                    reason: "cites the pilot".into(),
                },
                moot::debate::TurnScore {
                    turn_number: 2,
                    seat: "B".into(),
                    score: 0.63,
                    gradual: Some(0.5),
                    reason: "responsive, no data".into(),
                },
                moot::debate::TurnScore {
                    turn_number: 3,
                    seat: "C".into(),
                    score: 0.55,
                    gradual: None,
                    reason: "relevant, unsupported".into(),
                },
            ],
        },
        Event::RoundStarted {
            round: 2,
            limit: None,
        },
        completed(
            2,
            Phase::Rebuttal,
            "A",
            "Turn 2 ignores the second pilot.",
            vec![],
        ),
        completed(
            2,
            Phase::Rebuttal,
            "B",
            "Turn 4 names a pilot nobody published.",
            vec![],
        ),
        Event::TurnRequested {
            round: 2,
            phase: Phase::Rebuttal,
            seat: "C".into(),
            turn_number: 6,
            by: "outside".into(),
            timeout_seconds: 180,
        },
    ]
}

#[test]
fn the_arena_screen_with_scores_an_outside_seat_waiting_and_a_persons_turn() {
    for (width, height) in SIZES {
        let mut app = app_with(&arena_rebuttal());
        let screen = render(&mut app, width, height);
        assert!(
            screen.contains("round 2 · rebuttal") || width < 120,
            "{screen}"
        );
        if width >= 200 {
            assert!(
                screen.contains("C reviewer [outside] awaited 3:00"),
                "{screen}"
            );
            assert!(screen.contains("B Skeptic [you]"), "{screen}");
            assert!(
                screen.contains("Scores (rubric · gradual)") && screen.contains("0.78 · 0.35"),
                "{screen}"
            );
        }
        insta::assert_snapshot!(format!("arena_live_{width}x{height}"), screen);

        // The person's seat: its turn opens the editor in place.
        let mut events = arena_rebuttal();
        events.push(Event::TurnRequested {
            round: 2,
            phase: Phase::Rebuttal,
            seat: "B".into(),
            turn_number: 6,
            by: "person".into(),
            timeout_seconds: 180,
        });
        events.push(Event::Checkpoint {
            round: 2,
            timeout_seconds: 180,
            kind: AskKind::Turn,
            detail: Some(
                "You play Skeptic (turn 6, round 2, rebuttal). Your stance: against".into(),
            ),
            choices: vec![],
        });
        let mut app = app_with(&events);
        let screen = render(&mut app, width, height);
        assert!(screen.contains("Your turn"), "{screen}");
        // Seed review 002/003 #19 and issue 24 item 2: the editor is docked below the panes,
        // which show each turn's number; the turn's round, phase and stance are in it, and the
        // earlier turns can be picked.
        if height >= 40 {
            assert!(
                screen.contains("turn 4 · round 2"),
                "the panes stay: {screen}"
            );
            assert!(
                screen.contains("You play Skeptic (turn 6, round 2, rebuttal)"),
                "{screen}"
            );
            assert!(
                screen.contains("Answers: [ ]1 [ ]2 [ ]3 [ ]4 [ ]5"),
                "{screen}"
            );
        }
        insta::assert_snapshot!(format!("arena_turn_{width}x{height}"), screen);
        for c in "Turn 4 is hearsay.".chars() {
            app.on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
        }
        // Tab to the turns, pick turn 5 (where the list starts), Tab back.
        app.on_key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE));
        app.on_key(KeyEvent::new(KeyCode::Char(' '), KeyModifiers::NONE));
        if height >= 40 {
            let screen = render(&mut app, width, height);
            assert!(screen.contains("[x]5"), "{screen}");
        }
        app.on_key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE));
        let sent = app.on_key(KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL));
        assert!(
            matches!(sent, Some(moot::tui::app::Effect::Control(moot::debate::Control::Guide(ref text))) if text == "Turn 4 is hearsay.\n\n(Answering turn 5.)"),
            "{:?}",
            sent
        );
    }
}

#[test]
fn the_votes_panel_shows_the_count_the_winner_and_how_it_was_decided() {
    let mut events = dialogue_round_one();
    events.push(Event::Votes {
        round: 3,
        votes: moot::debate::VoteView {
            method: "condorcet".into(),
            candidates: vec![
                ("PRO".into(), "Adopt tower".into()),
                ("OPP".into(), "Keep the loop".into()),
            ],
            points: vec![1.0, 1.0],
            winner: Some("PRO".into()),
            consensus_reached: true,
            fallback_used: true,
            tie: Some("PRO, OPP tied; PRO chosen by the earlier candidate".into()),
            ballots: vec![
                ("PRO".into(), vec!["PRO".into(), "OPP".into()]),
                ("OPP".into(), vec!["OPP".into(), "PRO".into()]),
            ],
            abstentions: vec![],
        },
    });
    let mut app = app_with(&events);
    let screen = render(&mut app, 200, 60);
    assert!(screen.contains("╭ Votes"), "{screen}");
    assert!(screen.contains("★ Adopt tower"), "{screen}");
    assert!(
        screen.contains("condorcet: PRO (Condorcet cycle: Borda decided)"),
        "{screen}"
    );
    insta::assert_snapshot!("votes_panel_200x60", screen);
}

/// The lessons event of a debate given one lesson, L7 from DEB-a1b2c3d4, saying `text`.
fn lessons(text: &str) -> Event {
    Event::Lessons {
        lessons: vec![moot::debate::Lesson {
            id: 7,
            source: "DEB-a1b2c3d4".into(),
            question: "Should we use Redis or PostgreSQL for caching?".into(),
            text: text.into(),
            went: "wrong".into(),
            advice: "Ask each seat for a measurement before round two.".into(),
            confidence: 0.8,
            created_at: "2026-11-21T10:00:00Z".into(),
        }],
    }
}

#[test]
fn the_lessons_panel_shows_what_earlier_debates_taught_with_their_source() {
    let mut events = round_one();
    events.insert(
        1,
        lessons("Latency claims went unmeasured until the end.\u{1b}[31m"),
    );
    let mut app = app_with(&events);
    let screen = render(&mut app, 160, 45);
    assert!(screen.contains("Lessons from earlier debates"), "{screen}");
    assert!(
        screen.contains("L7 Latency claims went unmeasured"),
        "{screen}"
    );
    assert!(screen.contains("from DEB-a1b2c3d4 · 80%"), "{screen}");
    assert!(!screen.contains('\u{1b}'));
    insta::assert_snapshot!("lessons_panel_160x45", screen);
}

/// Side panels stack in the order the protocol's presentation lists them, and each has its
/// own key: hiding the lessons (`L`) leaves the stores and the map, hiding the stores (`m`)
/// leaves the lessons and the map.
#[test]
fn side_panels_follow_the_presentations_order_and_hide_one_at_a_time() {
    use moot::debate::{Presentation, SidePanel};
    let presentation = Presentation {
        panels: vec![SidePanel::Map, SidePanel::Lessons, SidePanel::Commitments],
        ..Presentation::default()
    };
    let mut events = round_one();
    // No checkpoint: its modal would cover the side column.
    events.retain(|e| !matches!(e, Event::Checkpoint { .. }));
    for event in &mut events {
        if let Event::DebateCreated {
            presentation: p, ..
        }
        | Event::DebateStarted {
            presentation: p, ..
        } = event
        {
            *p = presentation.clone();
        }
    }
    events.insert(2, lessons("Latency claims went unmeasured until the end."));
    let mut app = app_with(&events);
    let row_of = |screen: &str, title: &str| screen.lines().position(|l| l.contains(title));
    let screen = render(&mut app, 160, 45);
    let (map, lessons, stores) = (
        row_of(&screen, "Argument map"),
        row_of(&screen, "Lessons from earlier debates"),
        row_of(&screen, "╭ Commitments"),
    );
    assert!(
        matches!((map, lessons, stores), (Some(m), Some(l), Some(c)) if m < l && l < c),
        "map {map:?}, lessons {lessons:?}, stores {stores:?}\n{screen}"
    );
    app.on_key(KeyEvent::new(KeyCode::Char('L'), KeyModifiers::NONE));
    let screen = render(&mut app, 160, 45);
    assert_eq!(
        row_of(&screen, "Lessons from earlier debates"),
        None,
        "{screen}"
    );
    assert!(
        row_of(&screen, "Argument map").is_some() && row_of(&screen, "╭ Commitments").is_some(),
        "{screen}"
    );
    app.on_key(KeyEvent::new(KeyCode::Char('L'), KeyModifiers::NONE));
    app.on_key(KeyEvent::new(KeyCode::Char('m'), KeyModifiers::NONE));
    let screen = render(&mut app, 160, 45);
    assert_eq!(row_of(&screen, "╭ Commitments"), None, "{screen}");
    assert!(
        row_of(&screen, "Argument map").is_some()
            && row_of(&screen, "Lessons from earlier debates").is_some(),
        "{screen}"
    );
}

#[test]
fn a_code_debates_tests_panel_lists_each_hook_run_passed_or_failed() {
    let mut events = round_one();
    events.push(Event::Hooks {
        version: 1,
        results: vec![("test: 1 passed, 1 failed (exit 1, 0.2 s)".into(), false)],
    });
    events.push(Event::Hooks {
        version: 2,
        results: vec![("test: 2 passed, 0 failed (exit 0, 0.2 s)".into(), true)],
    });
    let mut app = app_with(&events);
    let screen = render(&mut app, 160, 45);
    assert!(screen.contains("Tests"), "{screen}");
    assert!(screen.contains("✗ v1 test: 1 passed, 1 failed"), "{screen}");
    assert!(screen.contains("✓ v2 test: 2 passed, 0 failed"), "{screen}");
}

/// A code debate mid-critique: the phase in the header, versions counted as rounds, each
/// seat's turns under version and phase separators, the Tests panel, and the Versions panel
/// with the newest change's diff (model text sanitized).
#[test]
fn a_code_debate_screen_shows_its_phase_versions_tests_and_the_latest_diff() {
    let presentation = moot::debate::Presentation {
        seat_role: "role".into(),
        panels: vec![
            moot::debate::SidePanel::Tests,
            moot::debate::SidePanel::Versions,
        ],
        outcome_title: "Result".into(),
        follow_up: false,
        opening: "Setting up the work tree…".into(),
        round_name: "version".into(),
        rounds_of_their_own: vec![Phase::Clarification, Phase::Attack],
        ..moot::debate::Presentation::default()
    };
    let question = "Make calc.sh add its two arguments";
    let events = vec![
        Event::DebateCreated { id: "DEB-code0001".into(), question: question.into(), protocol: "code".into(), resumed: false, presentation: presentation.clone() },
        Event::DebateStarted {
            id: "DEB-code0001".into(),
            question: question.into(),
            protocol: "code".into(),
            seats: vec![
                seat("G", "Generator", &["Produce complete implementations."]),
                seat("R", "Refactorer", &["Improve structure."]),
                seat("J", "Judge", &["Score against the rubric."]),
            ],
            max_rounds: 4,
            provider: "openai".into(),
            model: "stand-in".into(),
            caveat: None,
            presentation,
        },
        Event::Stage { name: "proposal".into() },
        Event::RoundStarted { round: 1, limit: None },
        completed(1, Phase::Proposal, "G", "subtracts, by mistake", vec![]),
        Event::Hooks { version: 1, results: vec![("test: 1 passed, 1 failed (exit 1, 0.2 s)".into(), false)] },
        Event::Version { number: 1, phase: "proposal".into(), summary: "subtracts, by mistake".into(), passes: Some(false), diff: String::new() },
        completed(1, Phase::Reflection, "G", "- Root cause: the operator is wrong\n- Next: use +", vec![]),
        Event::RoundStarted { round: 2, limit: None },
        completed(2, Phase::Proposal, "G", "adds its arguments", vec![]),
        Event::Hooks { version: 2, results: vec![("test: 2 passed, 0 failed (exit 0, 0.2 s)".into(), true)] },
        Event::Version {
            number: 2,
            phase: "proposal".into(),
            summary: "adds its arguments\u{1b}[2J".into(),
            passes: Some(true),
            diff: "--- a/calc.sh\n+++ b/calc.sh\n@@ -1,2 +1,2 @@\n #!/bin/sh\n-echo $(( $1 - $2 ))\n+echo $(( $1 + $2 ))\n".into(),
        },
        Event::Stage { name: "critique".into() },
        Event::TurnStarted { round: 2, phase: Phase::Critique, seat: "R".into() },
        Event::TurnDelta { seat: "R".into(), round: 2, phase: Phase::Critique, text: "The script does not check".into() },
    ];
    let mut app = app_with(&events);
    let screen = render(&mut app, 160, 45);
    assert!(screen.contains("critique · version 2 of 4"), "{screen}");
    assert!(screen.contains("── version 2 · proposal"), "{screen}");
    assert!(
        screen.contains("✓ v2 proposal · adds its arguments"),
        "{screen}"
    );
    assert!(screen.contains("diff to v2"), "{screen}");
    assert!(screen.contains("+echo $(( $1 + $2 ))"), "{screen}");
    assert!(screen.contains("✗ v1 test: 1 passed, 1 failed"), "{screen}");
    assert!(!screen.contains('\u{1b}'));
    insta::assert_snapshot!("code_debate_160x45", screen);
    // Announced again when the convergence hook takes its pass away: updated, not repeated.
    app.on_event(&Event::Version {
        number: 2,
        phase: "proposal".into(),
        summary: "adds its arguments".into(),
        passes: Some(false),
        diff: "--- a/calc.sh\n+++ b/calc.sh\n".into(),
    });
    let screen = render(&mut app, 160, 45);
    assert!(
        screen.contains("✗ v2 proposal · adds its arguments"),
        "{screen}"
    );
    assert_eq!(screen.matches("v2 proposal").count(), 1, "{screen}");
}

#[test]
fn a_tree_topology_is_drawn_with_who_sees_whom_and_how() {
    let mut events = round_one();
    events.insert(
        1,
        Event::Topology {
            topology: "tree".into(),
            sees: vec![
                ("A".into(), vec!["B".into(), "moderator (root)".into()]),
                ("B".into(), vec!["A (lead's summary)".into()]),
            ],
        },
    );
    let mut app = app_with(&events);
    let screen = render(&mut app, 160, 45);
    assert!(screen.contains("Topology: tree"), "{screen}");
    assert!(screen.contains("A ← B, moderator (root)"), "{screen}");
    assert!(screen.contains("B ← A (lead's summary)"), "{screen}");
}

#[test]
fn an_approval_gate_asks_approve_or_reject_with_a_reason() {
    let mut events = dialogue_round_one();
    events.push(Event::GateRequested {
        gate: "after_round:1".into(),
        point: "after_round".into(),
        round: 1,
        summary: "Round 1: PRO 0.47 · OPP 0.50 · 1 open why(s)".into(),
        timeout_seconds: 1800,
        artifacts: serde_json::json!({"pro": 0.47, "opp": 0.5, "metrics": {"unaddressed_whys": 1}}),
    });
    events.push(Event::Checkpoint {
        round: 1,
        timeout_seconds: 1800,
        kind: AskKind::Gate,
        detail: Some("Round 1: PRO 0.47 · OPP 0.50 · 1 open why(s)".into()),
        choices: vec![],
    });
    let mut app = app_with(&events);
    let screen = render(&mut app, 120, 40);
    assert!(
        screen.contains("Approval gate after round 1") && screen.contains("approve"),
        "{screen}"
    );
    // C9: what the reviewer weighs is in the question, not only in `moot gates --json`.
    assert!(
        screen.contains("pro: 0.47") && screen.contains(r#"metrics: {"unaddressed_whys":1}"#),
        "{screen}"
    );
    insta::assert_snapshot!("gate_120x40", screen);
    // A gate before the synthesis is named so, not "after round N".
    let mut before = events.clone();
    before.truncate(before.len() - 2);
    before.push(Event::GateRequested {
        gate: "before_synthesis:8".into(),
        point: "before_synthesis".into(),
        round: 8,
        summary: "The debate ends after 8 round(s) (max rounds).".into(),
        timeout_seconds: 1800,
        artifacts: serde_json::json!({"votes": null, "signal": "max_rounds"}),
    });
    before.push(Event::Checkpoint {
        round: 8,
        timeout_seconds: 1800,
        kind: AskKind::Gate,
        detail: Some("The debate ends after 8 round(s) (max rounds).".into()),
        choices: vec![],
    });
    let screen = render(&mut app_with(&before), 120, 40);
    assert!(
        screen.contains("Approval gate before the synthesis (round 8)")
            && screen.contains("signal: max_rounds"),
        "{screen}"
    );
    assert!(matches!(
        app.on_key(KeyEvent::new(KeyCode::Char('a'), KeyModifiers::NONE)),
        Some(moot::tui::app::Effect::Control(
            moot::debate::Control::Accept
        ))
    ));
    let mut app = app_with(&events);
    app.on_key(KeyEvent::new(KeyCode::Char('r'), KeyModifiers::NONE));
    assert!(render(&mut app, 120, 40).contains("Why is this gate rejected?"));
    for c in "untested premises".chars() {
        app.on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
    }
    let sent = app.on_key(KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL));
    assert!(
        matches!(sent, Some(moot::tui::app::Effect::Control(moot::debate::Control::Decline(ref r))) if r == "untested premises")
    );
}

#[test]
fn the_topology_is_drawn_as_who_sees_whom() {
    let mut events = arena_rebuttal();
    events.push(Event::Topology {
        topology: "chain".into(),
        sees: vec![
            ("A".into(), vec!["C".into()]),
            ("B".into(), vec!["A".into()]),
            ("C".into(), vec!["B".into()]),
        ],
    });
    let mut app = app_with(&events);
    let screen = render(&mut app, 200, 60);
    assert!(
        screen.contains("Topology: chain") && screen.contains("B ← A") && screen.contains("A ← C"),
        "{screen}"
    );
    insta::assert_snapshot!("topology_200x60", screen);
}

/// Round 1 concluded as agreement; with `hollow`, moot flagged it as the protocol does
/// (before the round's verdict), and the conclusion's detail says so.
fn agreement(hollow: bool) -> Vec<Event> {
    let mut events = round_one();
    events.pop();
    let detail = "hollow agreement: seats A and B gave ground in round 1 with no new support or rebuttal since they last held their ground in round 1";
    if hollow {
        events.push(Event::Flag {
            round: 1,
            seat: "moderator".into(),
            kind: FlagKind::HollowAgreement,
            detail: detail.into(),
        });
    }
    events.push(Event::RoundCompleted {
        round: 1,
        convergence: Convergence {
            assessment: Assessment::Converging,
            decision: Decision::Conclude,
            signal: ConvergenceSignal::Agreement,
            reason: "both seats concede".into(),
            overruled: None,
        },
        summary: "Both seats now back PostgreSQL.".into(),
    });
    let mut said = "The debate would end here: the perspectives reached agreement.".to_string();
    if hollow {
        said.push_str(&format!(" But moot found it a {detail}; its confidence will be capped. One more round challenges the agreement."));
    }
    events.push(Event::Checkpoint {
        round: 1,
        timeout_seconds: 1800,
        kind: AskKind::Conclusion,
        detail: Some(said),
        choices: vec![],
    });
    events
}

#[test]
fn a_hollow_agreement_is_flagged_in_the_strip_and_its_conclusion_offers_a_challenge() {
    for (width, height) in [(80, 24), (120, 40)] {
        let mut app = app_with(&agreement(true));
        let screen = render(&mut app, width, height);
        insta::assert_snapshot!(format!("hollow_agreement_{width}x{height}"), screen);
        assert!(screen.contains("hollow agreement"), "{screen}");
        assert!(screen.contains("a round that challenges it"), "{screen}");
        let mut app = app_with(&agreement(false));
        let screen = render(&mut app, width, height);
        assert!(!screen.contains("hollow"), "{screen}");
        assert!(screen.contains("one more round"), "{screen}");
    }
}
