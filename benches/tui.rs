//! Drawing the live screen: 4 panes holding 500 turns and 2 MB of text at 200×60, idle and
//! while a seat streams. `cargo bench --bench tui`.

use moot::debate::{Act, Event, Move, Phase, Relation, Seat, TurnStatus};
use moot::tui::app::App;
use moot::tui::theme::Theme;
use moot::tui::views::{self, Caches};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn main() {
    divan::main();
}

fn big_debate() -> App {
    let mut app = App::new(false);
    let seats: Vec<Seat> = ["A", "B", "C", "D"]
        .iter()
        .map(|id| Seat {
            id: id.to_string(),
            perspective: format!("Perspective {id}"),
            priorities: vec!["latency".into(), "cost".into()],
            trade_offs: String::new(),
            stance: String::new(),
            provider: None,
            model: None,
        })
        .collect();
    app.on_event(&Event::DebateStarted {
        id: "DEB-bench".into(),
        question: "Should we use Redis or PostgreSQL for caching?".into(),
        protocol: "moderated".into(),
        seats,
        max_rounds: 125,
        provider: "openai".into(),
        model: "bench".into(),
        caveat: None,
        presentation: Default::default(),
    });
    let paragraph = "Caching exists to take load off the primary database, and every extra system is a thing to page someone about. ".repeat(37);
    for n in 0..500u32 {
        let round = n / 4 + 1;
        let seat = ["A", "B", "C", "D"][(n % 4) as usize];
        let id = format!("{seat}{round}.1");
        let target = format!(
            "{}{}.1",
            ["D", "A", "B", "C"][(n % 4) as usize],
            round.saturating_sub(1).max(1)
        );
        app.on_event(&Event::TurnCompleted {
            round,
            phase: if n % 8 < 4 {
                Phase::Argument
            } else {
                Phase::Rebuttal
            },
            seat: seat.into(),
            content: paragraph.clone(),
            moves: vec![Move {
                id,
                act: Act::Claim,
                text: "a claim about caching".into(),
                premises: vec![],
                answers: vec![target],
                relation: Some(Relation::Rebut),
            }],
            confidence: None,
            tokens_in: 1000,
            tokens_out: 1000,
            tokens_estimated: false,
            latency_ms: 1,
            provider: "openai".into(),
            model: "bench".into(),
            status: TurnStatus::Ok,
            note: None,
            replayed: false,
        });
    }
    app
}

#[divan::bench(sample_count = 200)]
fn draw_live_screen_4_panes_500_turns_2mb_200x60(bencher: divan::Bencher) {
    let mut app = big_debate();
    let text: usize = app.view.turns.iter().map(|t| t.content.len()).sum();
    assert!(text >= 2_000_000, "{text}");
    let mut terminal = Terminal::new(TestBackend::new(200, 60)).unwrap();
    let mut caches = Caches::default();
    let theme = Theme::dark();
    terminal
        .draw(|frame| views::draw(frame, &mut app, &mut caches, &theme))
        .unwrap();
    bencher.bench_local(|| {
        app.dirty = true;
        terminal
            .draw(|frame| views::draw(frame, &mut app, &mut caches, &theme))
            .unwrap();
    });
}

#[divan::bench(sample_count = 200)]
fn draw_while_a_seat_streams(bencher: divan::Bencher) {
    let mut app = big_debate();
    app.on_event(&Event::TurnStarted {
        round: 126,
        phase: Phase::Argument,
        seat: "A".into(),
    });
    let mut terminal = Terminal::new(TestBackend::new(200, 60)).unwrap();
    let mut caches = Caches::default();
    let theme = Theme::dark();
    terminal
        .draw(|frame| views::draw(frame, &mut app, &mut caches, &theme))
        .unwrap();
    bencher.bench_local(|| {
        app.on_event(&Event::TurnDelta {
            seat: "A".into(),
            round: 126,
            phase: Phase::Argument,
            text: "more streamed words ".into(),
        });
        terminal
            .draw(|frame| views::draw(frame, &mut app, &mut caches, &theme))
            .unwrap();
    });
}

/// A journal of 10 000 debates, each with a question, two turns and a synthesis.
fn ten_thousand() -> (tempfile::TempDir, moot::store::Store) {
    use moot::debate::{Debate, DebateStatus, Turn};
    let dir = tempfile::tempdir().unwrap();
    let store = moot::store::Store::open(&dir.path().join("moot.db")).unwrap();
    let topics = [
        "caching", "queues", "auth", "search", "billing", "plugins", "deploys", "schemas",
    ];
    for n in 0..10_000u32 {
        let topic = topics[n as usize % topics.len()];
        let id = format!("DEB-{n:08}");
        let stamp = format!(
            "2026-{:02}-{:02}T{:02}:{:02}:00Z",
            1 + n % 12,
            1 + n % 28,
            n % 24,
            n % 60
        );
        store
            .create_debate(&Debate {
                id: id.clone(),
                question: format!("Should we change how we handle {topic} number {n}?"),
                protocol: "moderated".into(),
                status: DebateStatus::Completed,
                config: serde_json::json!({}),
                seats: vec![],
                created_at: stamp.clone(),
                updated_at: stamp,
                finished_at: None,
                confidence: Some(moot::debate::Confidence::Medium),
                error: None,
                stage: None,
            })
            .unwrap();
        for seat in ["A", "B"] {
            store
                .record_turn(&id, &Turn {
                    round: 1,
                    phase: Phase::Argument,
                    seat: seat.into(),
                    content: format!("Seat {seat} argues that {topic} needs latency budgets and on-call care, case {n}."),
                    moves: vec![],
                    confidence: None,
                    tokens_in: 1,
                    tokens_out: 1,
                    tokens_estimated: false,
                    latency_ms: 1,
                    provider: "bench".into(),
                    model: "bench".into(),
                    status: TurnStatus::Ok,
                    data: None,
                    note: None,
                })
                .unwrap();
        }
    }
    (dir, store)
}

#[divan::bench(sample_count = 50)]
fn history_list_of_10000_debates(bencher: divan::Bencher) {
    let (_dir, store) = ten_thousand();
    let mut history = moot::tui::history::History::new(Default::default());
    bencher.bench_local(|| moot::tui::run::refresh_history(&store, &mut history));
}

#[divan::bench(sample_count = 50)]
fn history_search_over_10000_debates(bencher: divan::Bencher) {
    let (_dir, store) = ten_thousand();
    let mut history = moot::tui::history::History::new(Default::default());
    history.query = "latency budg".into();
    bencher.bench_local(|| moot::tui::run::refresh_history(&store, &mut history));
}
