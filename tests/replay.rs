//! A debate replayed from the journal folds into the same picture as it did live.

use moot::config::Config;
use moot::debate::{Control, DebateStatus, Event};
use moot::providers::ProviderSpec;
use moot::session::{self, DebateSettings, Wiring};
use moot::store::Store;
use moot::tui::state::DebateView;
use std::path::PathBuf;
use tokio::sync::mpsc;

fn demo_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("assets/demo/redis-vs-postgres.json")
}

fn fold(events: &[Event]) -> DebateView {
    let mut view = DebateView::new();
    for event in events {
        view.apply(event);
    }
    view
}

#[tokio::test(start_paused = true)]
async fn a_replayed_debate_folds_into_what_the_live_run_showed() {
    let spec = ProviderSpec::scripted(demo_script());
    let mut settings =
        DebateSettings::from_config(&moot::protocol::builtin(), &Config::default(), spec).unwrap();
    // Lessons are their own tests; a reflection step would change what these count.
    settings.lessons.enabled = false;
    settings.write_decision = false;
    let store = Store::in_memory().unwrap();
    let (events_tx, mut events_rx) = mpsc::unbounded_channel();
    let (controls_tx, controls) = mpsc::unbounded_channel();
    // Guide round 1, accept the moderator's conclusion after round 2, approve the synthesis.
    for control in [
        Control::Guide("Weigh our on-call load".into()),
        Control::Accept,
        Control::Accept,
    ] {
        controls_tx.send(control).unwrap();
    }
    let finish = session::start(
        moot::launch::host(),
        store.clone(),
        "Should we use Redis or PostgreSQL for caching?",
        settings,
        Wiring {
            events: events_tx,
            controls,
            answerer: "ana at the workbench".into(),
        },
        std::future::pending(),
    )
    .await
    .unwrap();
    let mut live_events = Vec::new();
    while let Ok(event) = events_rx.try_recv() {
        live_events.push(event);
    }
    let live = fold(&live_events);
    let replayed = fold(
        &moot::replay::journal_events(&moot::protocol::builtin(), &store, &finish.id).unwrap(),
    );

    assert_eq!(live.status, DebateStatus::Completed);
    let record = &live.synthesis.as_ref().unwrap().markdown;
    assert!(
        record.contains("**Approval:** approved by ana at the workbench"),
        "{record}"
    );
    assert_eq!(replayed.id, live.id);
    assert_eq!(replayed.question, live.question);
    assert_eq!(replayed.seats, live.seats);
    assert_eq!(replayed.max_rounds, live.max_rounds);
    assert_eq!(replayed.round, live.round);
    assert_eq!(replayed.status, live.status);
    assert_eq!(replayed.turns, live.turns);
    assert_eq!(replayed.strip, live.strip);
    assert_eq!(replayed.guidance, live.guidance);
    assert_eq!(
        replayed.guidance,
        vec![(1, "Weigh our on-call load".to_string())]
    );
    assert_eq!(replayed.synthesis, live.synthesis);
    assert_eq!(replayed.commitments, live.commitments);
    assert_eq!(replayed.graph, live.graph);
    assert_eq!(
        (replayed.tokens_in, replayed.tokens_out),
        (live.tokens_in, live.tokens_out)
    );
    let flags = |v: &DebateView| {
        v.activity
            .iter()
            .map(|a| (a.muted, a.dropped, a.flags.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(flags(&replayed), flags(&live));
    assert!(replayed.graph.arguments.len() >= 6);

    // And the screens drawn from the two are the same, but for the replay marker.
    for (width, height) in [(80, 24), (120, 40), (200, 60)] {
        let live_screen = screen(live.clone(), false, width, height);
        let replay_screen = screen(replayed.clone(), true, width, height);
        assert_eq!(
            replay_screen.replace(" · replay", ""),
            live_screen,
            "{width}x{height}"
        );
    }
}

fn screen(view: DebateView, read_only: bool, width: u16, height: u16) -> String {
    use moot::tui::app::App;
    use moot::tui::theme::Theme;
    use moot::tui::views::{self, Caches};
    use ratatui::{Terminal, backend::TestBackend};
    let mut app = App::new(read_only);
    app.scroll = vec![None; view.seats.len()];
    app.view = view;
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|frame| views::draw(frame, &mut app, &mut Caches::default(), &Theme::dark()))
        .unwrap();
    let buffer = terminal.backend().buffer().clone();
    (0..height)
        .map(|y| {
            (0..width)
                .map(|x| buffer[(x, y)].symbol().to_string())
                .collect::<String>()
                .trim_end()
                .to_string()
                + "\n"
        })
        .collect()
}
