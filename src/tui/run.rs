//! The terminal loop: raw mode and the alternate screen, restored on every exit path (return,
//! error, panic, SIGTERM, SIGHUP); engine events and keys drained as they come; a frame drawn
//! only when something changed, at most ~60 a second, inside a synchronized update.

use super::app::{App, Effect, is_interrupt};
use super::history::{History, HistoryEffect, NewDebate};
use super::theme::Theme;
use super::views::{self, Caches};
use crate::debate::{Control, DebateStatus, Event};
use crate::headless;
use crate::session::{self, DebateSettings, Finish, SessionError, Wiring};
use crate::store::Store;
use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
    Event as TermEvent, EventStream, KeyEventKind,
};
use crossterm::execute;
use crossterm::terminal::{
    BeginSynchronizedUpdate, EndSynchronizedUpdate, EnterAlternateScreen, LeaveAlternateScreen,
    disable_raw_mode, enable_raw_mode,
};
use futures_util::StreamExt;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use std::future::Future;
use std::io::{Stdout, stdout};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

const FRAME: Duration = Duration::from_millis(16);
const TICK: Duration = Duration::from_millis(100);

/// Puts the terminal back: cooked mode, main screen, visible cursor. Safe to call twice.
pub fn restore_terminal() {
    let _ = disable_raw_mode();
    let _ = execute!(
        stdout(),
        DisableBracketedPaste,
        DisableMouseCapture,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
}

/// Whether the workbench takes the mouse (wheel scrolling, click to focus); `[ui] mouse`.
static MOUSE: AtomicBool = AtomicBool::new(true);

pub fn set_mouse(enabled: bool) {
    MOUSE.store(enabled, Ordering::SeqCst);
}

/// Restores the terminal when dropped, whatever the exit path.
struct TerminalGuard;

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore_terminal();
    }
}

fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // Leave the alternate screen first, or the message is lost with it.
            restore_terminal();
            previous(info);
        }));
    });
}

fn enter() -> std::io::Result<(TerminalGuard, Terminal<CrosstermBackend<Stdout>>)> {
    install_panic_hook();
    enable_raw_mode()?;
    let guard = TerminalGuard;
    execute!(
        stdout(),
        EnterAlternateScreen,
        crossterm::cursor::Hide,
        EnableBracketedPaste
    )?;
    if MOUSE.load(Ordering::SeqCst) {
        execute!(stdout(), EnableMouseCapture)?;
    }
    let terminal = Terminal::new(CrosstermBackend::new(stdout()))?;
    Ok((guard, terminal))
}

fn draw(
    terminal: &mut Terminal<CrosstermBackend<Stdout>>,
    app: &mut App,
    caches: &mut Caches,
    theme: &Theme,
) {
    let _ = execute!(terminal.backend_mut(), BeginSynchronizedUpdate);
    let _ = terminal.draw(|frame| views::draw(frame, app, caches, theme));
    let _ = execute!(terminal.backend_mut(), EndSynchronizedUpdate);
    app.dirty = false;
}

type Term = Terminal<CrosstermBackend<Stdout>>;

/// SIGTERM, SIGHUP or SIGINT, heard once for the whole workbench whatever screen is up.
#[derive(Clone)]
struct Shutdown {
    notify: std::sync::Arc<tokio::sync::Notify>,
    requested: std::sync::Arc<AtomicBool>,
}

impl Shutdown {
    fn listen() -> Shutdown {
        let shutdown = Shutdown {
            notify: std::sync::Arc::new(tokio::sync::Notify::new()),
            requested: std::sync::Arc::new(AtomicBool::new(false)),
        };
        let signalled = shutdown.clone();
        tokio::spawn(async move {
            crate::headless::interrupted().await;
            signalled.requested.store(true, Ordering::SeqCst);
            signalled.notify.notify_waiters();
        });
        shutdown
    }

    fn requested(&self) -> bool {
        self.requested.load(Ordering::SeqCst)
    }

    /// Resolves when a signal arrives (at once if one already has).
    async fn wait(&self) {
        let notified = self.notify.notified();
        if self.requested() {
            return;
        }
        notified.await;
    }
}

/// Base64 (standard alphabet, padded), for OSC 52.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = (chunk[0] as u32) << 16
            | (*chunk.get(1).unwrap_or(&0) as u32) << 8
            | *chunk.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The OSC 52 sequence that puts `text` on the terminal's clipboard (also over SSH).
pub fn osc52(text: &str) -> String {
    format!("\u{1b}]52;c;{}\u{7}", base64(text.as_bytes()))
}

/// Copies, pages or edits, leaving the screen for an outside program and coming back.
fn perform(terminal: &mut Term, app: &mut App, effect: Effect) {
    use std::io::Write;
    match effect {
        Effect::Copy(text) => {
            let mut out = stdout();
            let _ = out
                .write_all(osc52(&text).as_bytes())
                .and_then(|_| out.flush());
            app.notice = Some(format!(
                "copied {} characters (OSC 52)",
                text.chars().count()
            ));
        }
        Effect::Page { markdown, path } => outside(terminal, app, "PAGER", "less", &markdown, path),
        Effect::Edit { markdown, path } => outside(terminal, app, "EDITOR", "vi", &markdown, path),
        Effect::Control(_) | Effect::Quit => {}
    }
    app.dirty = true;
}

fn outside(
    terminal: &mut Term,
    app: &mut App,
    variable: &str,
    fallback: &str,
    markdown: &str,
    path: Option<String>,
) {
    let file = match path.filter(|p| std::path::Path::new(p).exists()) {
        Some(path) => std::path::PathBuf::from(path),
        None => {
            let file =
                std::env::temp_dir().join(format!("moot-synthesis-{}.md", std::process::id()));
            if let Err(e) = std::fs::write(&file, crate::sanitize::clean(markdown)) {
                app.notice = Some(format!("cannot write {}: {e}", file.display()));
                return;
            }
            file
        }
    };
    let program = std::env::var(variable)
        .ok()
        .filter(|p| !p.trim().is_empty())
        .unwrap_or_else(|| fallback.to_string());
    let mut words = program.split_whitespace();
    let Some(command) = words.next() else {
        return;
    };
    restore_terminal();
    let status = std::process::Command::new(command)
        .args(words)
        .arg(&file)
        .status();
    let _ = enable_raw_mode();
    let _ = execute!(stdout(), EnterAlternateScreen, crossterm::cursor::Hide);
    if MOUSE.load(Ordering::SeqCst) {
        let _ = execute!(stdout(), EnableMouseCapture);
    }
    let _ = terminal.clear();
    app.notice = Some(match status {
        Ok(_) => format!("back from {command}"),
        Err(e) => format!("cannot run {command} (${variable}): {e}"),
    });
}

/// Where the workbench opens.
pub enum Start {
    History,
    Live {
        question: String,
        settings: Box<DebateSettings>,
    },
    Replay(String),
}

/// Runs the workbench from `start` until the user leaves, moving between history, live
/// debates and replays on one terminal. Returns the exit code.
pub async fn workbench(
    store: Store,
    theme: Theme,
    start: Start,
    settings_for: impl Fn(&NewDebate) -> Result<DebateSettings, String>,
    default_rounds: u32,
    catalog: Vec<String>,
) -> Result<i32, SessionError> {
    let (_guard, mut terminal) =
        enter().map_err(|e| SessionError::Runtime(format!("cannot open the terminal: {e}")))?;
    let mut keys = EventStream::new();
    let shutdown = Shutdown::listen();
    let back_to_history = matches!(start, Start::History);
    let mut next = Some(start);
    let mut history = History::new(default_rounds);
    history.catalog = catalog;
    let mut code = 0;
    let mut last: Option<(String, DebateStatus)> = None;
    while let Some(screen) = next.take().filter(|_| !shutdown.requested()) {
        match screen {
            Start::History => {
                match history_screen(
                    &mut terminal,
                    &mut keys,
                    &shutdown,
                    &store,
                    &mut history,
                    &theme,
                )
                .await
                {
                    HistoryEffect::Open(id) => next = Some(Start::Replay(id)),
                    HistoryEffect::Resume(id) => {
                        let journal = store.clone();
                        let result = live_screen(
                            &mut terminal,
                            &mut keys,
                            &shutdown,
                            &theme,
                            |wiring, interrupt| {
                                session::resume(journal, &id, None, wiring, interrupt)
                            },
                        )
                        .await;
                        code = headless::exit_code(&result);
                        last = remember(&result);
                        history.message = outcome_line(&result);
                        next = Some(Start::History);
                    }
                    HistoryEffect::Start(debate) => match settings_for(&debate) {
                        Ok(settings) => {
                            next = Some(Start::Live {
                                question: debate.question,
                                settings: Box::new(settings),
                            })
                        }
                        Err(problem) => {
                            history.message = Some(problem);
                            next = Some(Start::History);
                        }
                    },
                    _ => {}
                }
            }
            Start::Live { question, settings } => {
                let journal = store.clone();
                let result = live_screen(
                    &mut terminal,
                    &mut keys,
                    &shutdown,
                    &theme,
                    |wiring, interrupt| {
                        session::start(journal, &question, *settings, wiring, interrupt)
                    },
                )
                .await;
                code = headless::exit_code(&result);
                last = remember(&result);
                history.message = outcome_line(&result);
                if back_to_history {
                    next = Some(Start::History);
                }
            }
            Start::Replay(id) => {
                match crate::replay::journal_events(&store, &id) {
                    Ok(events) => {
                        replay_screen(&mut terminal, &mut keys, &shutdown, &theme, events).await
                    }
                    Err(e) => history.message = Some(e.to_string()),
                }
                if back_to_history {
                    next = Some(Start::History);
                }
            }
        }
    }
    drop(terminal);
    restore_terminal();
    if let Some((id, status)) = last {
        let record = store
            .synthesis(&id)
            .ok()
            .flatten()
            .and_then(|s| s.path)
            .map(|p| format!("; decision record {p}"))
            .unwrap_or_default();
        match status {
            DebateStatus::Paused => {
                eprintln!("moot: {id} is paused; continue with: moot resume {id}")
            }
            status => eprintln!("moot: {id} {status}{record}"),
        }
    }
    Ok(code)
}

fn remember(result: &Result<Finish, SessionError>) -> Option<(String, DebateStatus)> {
    result.as_ref().ok().map(|f| (f.id.clone(), f.status))
}

fn outcome_line(result: &Result<Finish, SessionError>) -> Option<String> {
    Some(match result {
        Ok(finish) => match &finish.error {
            Some(error) => format!("{} failed: {error}", finish.id),
            None => format!("{} {}", finish.id, finish.status),
        },
        Err(error) => error.to_string(),
    })
}

/// A live debate until the user leaves. Quitting (or Ctrl-C, SIGTERM, SIGHUP) while it runs
/// pauses it in the journal.
async fn live_screen<F, Fut>(
    terminal: &mut Term,
    keys: &mut EventStream,
    shutdown: &Shutdown,
    theme: &Theme,
    session: F,
) -> Result<Finish, SessionError>
where
    F: FnOnce(Wiring, std::pin::Pin<Box<dyn Future<Output = ()>>>) -> Fut,
    Fut: Future<Output = Result<Finish, SessionError>>,
{
    let (events_tx, mut events_rx) = mpsc::unbounded_channel::<Event>();
    let (controls_tx, controls_rx) = mpsc::unbounded_channel::<Control>();
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let interrupt: std::pin::Pin<Box<dyn Future<Output = ()>>> = Box::pin(async move {
        let _ = stop_rx.await;
    });
    let mut app = App::new(false);
    let mut caches = Caches::default();
    let mut tick = tokio::time::interval(TICK);
    let mut session = std::pin::pin!(session(
        Wiring {
            events: events_tx,
            controls: controls_rx
        },
        interrupt
    ));
    let mut stop = Some(stop_tx);
    let mut finished: Option<Result<Finish, SessionError>> = None;
    let mut events_open = true;
    let mut last_frame = Instant::now() - FRAME;
    loop {
        if app.dirty && last_frame.elapsed() >= FRAME {
            draw(terminal, &mut app, &mut caches, theme);
            last_frame = Instant::now();
        }
        let next_frame = last_frame + FRAME;
        tokio::select! {
            event = events_rx.recv(), if events_open => {
                match event {
                    Some(event) => {
                        app.on_event(&event);
                        // Drain what is queued, then draw once.
                        while let Ok(event) = events_rx.try_recv() {
                            app.on_event(&event);
                        }
                    }
                    // Every sender is gone (the debate ended): stop polling a closed channel,
                    // or the loop would spin.
                    None => events_open = false,
                }
            }
            result = &mut session, if finished.is_none() => {
                while let Ok(event) = events_rx.try_recv() {
                    app.on_event(&event);
                }
                let leave = shutdown.requested() || stop.is_none();
                finished = Some(result);
                app.dirty = true;
                if leave {
                    break;
                }
            }
            key = keys.next() => match key {
                Some(Ok(TermEvent::Key(key))) if key.kind != KeyEventKind::Release => {
                    let effect = if is_interrupt(&key) { Some(Effect::Quit) } else { app.on_key(key) };
                    match effect {
                        Some(Effect::Control(control)) => { let _ = controls_tx.send(control); }
                        Some(effect @ (Effect::Copy(_) | Effect::Page { .. } | Effect::Edit { .. })) => perform(terminal, &mut app, effect),
                        Some(Effect::Quit) => {
                            if finished.is_some() {
                                break;
                            }
                            // Ask the session to pause; the loop ends when it has.
                            if let Some(stop) = stop.take() {
                                let _ = stop.send(());
                            }
                        }
                        None => {}
                    }
                }
                Some(Ok(TermEvent::Resize(_, _))) => app.on_resize(),
                Some(Ok(TermEvent::Mouse(mouse))) => app.on_mouse(mouse),
                Some(Ok(TermEvent::Paste(text))) => app.on_paste(&text),
                Some(Ok(_)) => {}
                // The terminal went away: pause and leave.
                Some(Err(_)) | None => {
                    if finished.is_some() {
                        break;
                    }
                    if let Some(stop) = stop.take() {
                        let _ = stop.send(());
                    }
                }
            },
            _ = tick.tick() => app.on_tick(),
            _ = tokio::time::sleep_until(next_frame), if app.dirty => {}
            // A signal pauses a running debate (the loop leaves once it has) or just leaves.
            _ = shutdown.wait(), if stop.is_some() || finished.is_some() => {
                if finished.is_some() {
                    break;
                }
                if let Some(stop) = stop.take() {
                    let _ = stop.send(());
                }
            }
        }
    }
    finished.unwrap_or_else(|| {
        Err(SessionError::Runtime(
            "the workbench closed before the debate ended".into(),
        ))
    })
}

/// A stored debate, replayed from the journal, read-only, until the user leaves.
async fn replay_screen(
    terminal: &mut Term,
    keys: &mut EventStream,
    shutdown: &Shutdown,
    theme: &Theme,
    events: Vec<Event>,
) {
    let mut app = App::new(true);
    for event in &events {
        app.on_event(event);
    }
    let mut caches = Caches::default();
    loop {
        if app.dirty {
            draw(terminal, &mut app, &mut caches, theme);
        }
        tokio::select! {
            key = keys.next() => match key {
                Some(Ok(TermEvent::Key(key))) if key.kind != KeyEventKind::Release => {
                    if is_interrupt(&key) {
                        break;
                    }
                    match app.on_key(key) {
                        Some(Effect::Quit) => break,
                        Some(effect) => perform(terminal, &mut app, effect),
                        None => {}
                    }
                }
                Some(Ok(TermEvent::Resize(_, _))) => app.on_resize(),
                Some(Ok(TermEvent::Mouse(mouse))) => app.on_mouse(mouse),
                Some(Ok(_)) => {}
                Some(Err(_)) | None => break,
            },
            _ = shutdown.wait() => break,
        }
    }
}

/// Loads the list (or the search hits) and the selected debate's preview.
pub fn refresh_history(store: &Store, history: &mut History) {
    let hits = if history.query.trim().is_empty() {
        None
    } else {
        Some(
            store
                .search(&history.query, history.limit)
                .unwrap_or_default(),
        )
    };
    // Search hits carry what a row shows, so the list is read only when not searching.
    let summaries = if hits.is_some() {
        Vec::new()
    } else {
        store.list(history.limit).unwrap_or_default()
    };
    history.show(summaries, hits);
}

fn load_preview(store: &Store, history: &mut History) {
    let Some(id) = history.selected_id().map(str::to_string) else {
        history.preview = None;
        return;
    };
    if history
        .preview
        .as_ref()
        .is_some_and(|(shown, _)| *shown == id)
    {
        return;
    }
    let text = match store.synthesis(&id) {
        Ok(Some(synthesis)) => crate::sanitize::clean(&synthesis.markdown),
        _ => match store.debate(&id) {
            Ok(debate) => {
                let seats: Vec<String> = debate
                    .seats
                    .iter()
                    .map(|s| format!("{} {}", s.id, s.perspective))
                    .collect();
                format!(
                    "{}\n\nstatus: {}\nseats: {}\n{}",
                    crate::sanitize::clean(&debate.question),
                    debate.status,
                    if seats.is_empty() {
                        "not assigned".to_string()
                    } else {
                        seats.join(", ")
                    },
                    debate
                        .error
                        .as_deref()
                        .map(crate::sanitize::clean)
                        .unwrap_or_default()
                )
            }
            Err(e) => e.to_string(),
        },
    };
    history.preview = Some((id, text));
}

/// The history screen until the user picks something to do.
async fn history_screen(
    terminal: &mut Term,
    keys: &mut EventStream,
    shutdown: &Shutdown,
    store: &Store,
    history: &mut History,
    theme: &Theme,
) -> HistoryEffect {
    refresh_history(store, history);
    loop {
        if history.dirty {
            load_preview(store, history);
            let _ = execute!(terminal.backend_mut(), BeginSynchronizedUpdate);
            let _ = terminal.draw(|frame| views::history::draw(frame, history, theme));
            let _ = execute!(terminal.backend_mut(), EndSynchronizedUpdate);
            history.dirty = false;
        }
        tokio::select! {
            key = keys.next() => match key {
                Some(Ok(TermEvent::Key(key))) if key.kind != KeyEventKind::Release => {
                    if is_interrupt(&key) {
                        return HistoryEffect::Quit;
                    }
                    match history.on_key(key) {
                        Some(HistoryEffect::Refresh) => refresh_history(store, history),
                        Some(HistoryEffect::Delete(id)) => {
                            history.message = Some(match store.delete(&id) {
                                Ok(()) => format!("deleted {id}"),
                                Err(e) => e.to_string(),
                            });
                            history.preview = None;
                            refresh_history(store, history);
                        }
                        Some(effect) => return effect,
                        None => {}
                    }
                }
                Some(Ok(TermEvent::Resize(_, _))) => history.dirty = true,
                Some(Ok(_)) => {}
                Some(Err(_)) | None => return HistoryEffect::Quit,
            },
            _ = shutdown.wait() => return HistoryEffect::Quit,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn osc52_carries_base64() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64("é✓".as_bytes()), "w6ninJM=");
        assert_eq!(osc52("hi"), "\u{1b}]52;c;aGk=\u{7}");
    }
}
