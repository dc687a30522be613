//! The terminal loop: raw mode and the alternate screen, restored on every exit path (return,
//! error, panic, SIGTERM, SIGHUP); engine events and keys drained as they come; a frame drawn
//! only when something changed, at most ~60 a second, inside a synchronized update.

use super::app::{App, Effect, is_interrupt};
use super::theme::Theme;
use super::views::{self, Caches};
use crate::debate::{Control, Event};
use crate::session::{Finish, SessionError, Wiring};
use crossterm::event::{Event as TermEvent, EventStream, KeyEventKind};
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
    let _ = execute!(stdout(), LeaveAlternateScreen, crossterm::cursor::Show);
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
    execute!(stdout(), EnterAlternateScreen, crossterm::cursor::Hide)?;
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

/// Runs a live debate in the workbench until the user leaves. Quitting (or Ctrl-C, SIGTERM,
/// SIGHUP) while it runs pauses it in the journal.
pub async fn live<F, Fut>(theme: Theme, session: F) -> Result<Finish, SessionError>
where
    F: FnOnce(Wiring, std::pin::Pin<Box<dyn Future<Output = ()>>>) -> Fut,
    Fut: Future<Output = Result<Finish, SessionError>>,
{
    let (events_tx, mut events_rx) = mpsc::unbounded_channel::<Event>();
    let (controls_tx, controls_rx) = mpsc::unbounded_channel::<Control>();
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let signalled = std::sync::Arc::new(AtomicBool::new(false));
    let flag = signalled.clone();
    let interrupt: std::pin::Pin<Box<dyn Future<Output = ()>>> = Box::pin(async move {
        tokio::select! {
            _ = stop_rx => {}
            _ = crate::headless::interrupted() => flag.store(true, Ordering::SeqCst),
        }
    });
    let (_guard, mut terminal) =
        enter().map_err(|e| SessionError::Runtime(format!("cannot open the terminal: {e}")))?;
    let mut app = App::new(false);
    let mut caches = Caches::default();
    let mut keys = EventStream::new();
    let mut tick = tokio::time::interval(TICK);
    let mut session = std::pin::pin!(session(
        Wiring {
            events: events_tx,
            controls: controls_rx,
        },
        interrupt
    ));
    let mut stop = Some(stop_tx);
    let mut finished: Option<Result<Finish, SessionError>> = None;
    let mut last_frame = Instant::now() - FRAME;
    loop {
        if app.dirty && last_frame.elapsed() >= FRAME {
            draw(&mut terminal, &mut app, &mut caches, &theme);
            last_frame = Instant::now();
        }
        let next_frame = last_frame + FRAME;
        tokio::select! {
            event = events_rx.recv() => {
                if let Some(event) = event {
                    app.on_event(&event);
                    // Drain what is queued, then draw once.
                    while let Ok(event) = events_rx.try_recv() {
                        app.on_event(&event);
                    }
                }
            }
            result = &mut session, if finished.is_none() => {
                while let Ok(event) = events_rx.try_recv() {
                    app.on_event(&event);
                }
                let leave = signalled.load(Ordering::SeqCst) || stop.is_none();
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
        }
    }
    drop(terminal);
    restore_terminal();
    finished.unwrap_or_else(|| {
        Err(SessionError::Runtime(
            "the workbench closed before the debate ended".into(),
        ))
    })
}

/// Shows a stored debate, replayed from the journal, read-only, until the user leaves.
pub async fn replay(theme: Theme, events: Vec<Event>) -> std::io::Result<()> {
    let (_guard, mut terminal) = enter()?;
    let mut app = App::new(true);
    for event in &events {
        app.on_event(event);
    }
    let mut caches = Caches::default();
    let mut keys = EventStream::new();
    loop {
        if app.dirty {
            draw(&mut terminal, &mut app, &mut caches, &theme);
        }
        tokio::select! {
            key = keys.next() => match key {
                Some(Ok(TermEvent::Key(key))) if key.kind != KeyEventKind::Release => {
                    if is_interrupt(&key) || app.on_key(key) == Some(Effect::Quit) {
                        break;
                    }
                }
                Some(Ok(TermEvent::Resize(_, _))) => app.on_resize(),
                Some(Ok(_)) => {}
                Some(Err(_)) | None => break,
            },
            _ = crate::headless::interrupted() => break,
        }
    }
    drop(terminal);
    restore_terminal();
    Ok(())
}
