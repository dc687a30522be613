//! The terminal loop: raw mode and the alternate screen, restored on every exit path (return,
//! error, panic, SIGTERM, SIGHUP); engine events and keys drained as they come; a frame drawn
//! only when something changed, at most ~60 a second, inside a synchronized update.

use super::app::{App, Effect, is_interrupt, is_suspend};
pub use super::browse::{Served, refresh_history};
use super::browse::{after_history, history_screen};
use super::history::{History, HistoryEffect, NewDebate, ProtocolChoice, ProviderChoice};
use super::keymap::Keymap;
use super::theme::Theme;
use super::views::{self, Caches};
use crate::debate::{Control, DebateStatus, Event};
use crate::session::{self, DebateSettings, Finish, Host, ResumeChanges, SessionError, Wiring};
use crate::store::{RemoteAnswer, Store};
use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
    Event as TermEvent, EventStream, KeyEventKind,
};
use crossterm::terminal::{
    BeginSynchronizedUpdate, EndSynchronizedUpdate, EnterAlternateScreen, LeaveAlternateScreen,
    disable_raw_mode, enable_raw_mode,
};
use crossterm::{execute, queue};
use futures_util::StreamExt;
use ratatui::backend::CrosstermBackend;
use ratatui::{Frame, Terminal};
use std::future::Future;
use std::io::{BufWriter, Stdout, Write, stdout};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Once};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

const FRAME: Duration = Duration::from_millis(16);

/// When a screen is drawn: at once after a key (a burst of keys read together draws once),
/// and at most once a `FRAME` while only stream deltas change it, so typing never waits for
/// the stream's frame and the stream never floods the terminal.
struct Pacer {
    last: Instant,
    urgent: bool,
}

impl Pacer {
    fn new() -> Pacer {
        Pacer {
            last: Instant::now() - FRAME,
            urgent: false,
        }
    }

    /// Whether a changed screen is drawn now.
    fn due(&self) -> bool {
        self.urgent || self.last.elapsed() >= FRAME
    }

    fn drawn(&mut self) {
        self.last = Instant::now();
        self.urgent = false;
    }

    /// A key was handled: the next frame is drawn without waiting.
    fn key(&mut self) {
        self.urgent = true;
    }

    /// When a changed screen is drawn at the latest.
    fn next(&self) -> Instant {
        self.last + FRAME
    }
}

/// A terminal event as a screen's loop takes it: a key for the screen to act on, the
/// terminal gone, or something `App` handles alike on every screen (a resize, the mouse, a
/// paste).
enum Input {
    Key(crossterm::event::KeyEvent),
    Gone,
    Handled,
}

fn input(app: &mut App, event: Option<std::io::Result<TermEvent>>) -> Input {
    match event {
        Some(Ok(TermEvent::Key(key))) if key.kind != KeyEventKind::Release => Input::Key(key),
        Some(Ok(TermEvent::Resize(_, _))) => {
            app.on_resize();
            Input::Handled
        }
        Some(Ok(TermEvent::Mouse(mouse))) => {
            app.on_mouse(mouse);
            Input::Handled
        }
        Some(Ok(TermEvent::Paste(text))) => {
            app.on_paste(&text);
            Input::Handled
        }
        Some(Ok(_)) => Input::Handled,
        Some(Err(_)) | None => Input::Gone,
    }
}

/// The next terminal event if one is already waiting, so keys read together are handled
/// before the frame that shows them. Polled with this task's own waker: crossterm keeps the
/// waker of the first poll that found nothing until an event comes, so a throwaway one (as
/// `now_or_never` gives) would leave the next key unnoticed until something else woke the
/// screen.
async fn waiting(keys: &mut EventStream) -> Option<Option<std::io::Result<TermEvent>>> {
    std::future::poll_fn(|cx| match keys.poll_next_unpin(cx) {
        std::task::Poll::Ready(event) => std::task::Poll::Ready(Some(event)),
        std::task::Poll::Pending => std::task::Poll::Ready(None),
    })
    .await
}
const TICK: Duration = Duration::from_millis(100);

/// Whether the workbench holds the screen (the alternate screen, its modes): what
/// `restore_terminal` gives back, once.
static SCREEN_TAKEN: AtomicBool = AtomicBool::new(false);

/// Puts the terminal back: cooked mode, main screen, visible cursor. Only the first call after
/// the screen was taken writes anything: leaving the alternate screen a second time moves the
/// cursor back to where it was when the screen was taken, so the shell's prompt would write
/// over moot's last message (U2).
pub fn restore_terminal() {
    let _ = disable_raw_mode();
    if !SCREEN_TAKEN.swap(false, Ordering::SeqCst) {
        return;
    }
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

/// A frame's bytes are gathered here and written in one go (most frames fit). Stdout's own
/// buffer holds 1 KiB, so a frame went out in a write per KiB (a new debate's first frame in
/// six), and over SSH in as many small packets.
const FRAME_BUFFER: usize = 1 << 16;

fn enter() -> std::io::Result<(TerminalGuard, Term)> {
    install_panic_hook();
    // Before raw mode: the settings it saves are the shell's.
    crate::fatal::restore_terminal_on_fatal_signals();
    enable_raw_mode()?;
    let guard = TerminalGuard;
    let mut out = BufWriter::with_capacity(FRAME_BUFFER, stdout());
    // Written now, whatever follows: the guard's restoring must come after it.
    take_screen(&mut out)?;
    let terminal = Terminal::new(CrosstermBackend::new(out))?;
    Ok((guard, terminal))
}

/// The workbench's modes, the undoing of `restore_terminal` but for raw mode: the alternate
/// screen, the cursor hidden, bracketed paste, the mouse if taken; in one write.
fn take_screen(out: &mut impl Write) -> std::io::Result<()> {
    SCREEN_TAKEN.store(true, Ordering::SeqCst);
    queue!(
        out,
        EnterAlternateScreen,
        crossterm::cursor::Hide,
        EnableBracketedPaste
    )?;
    if MOUSE.load(Ordering::SeqCst) {
        queue!(out, EnableMouseCapture)?;
    }
    out.flush()
}

fn draw(terminal: &mut Term, app: &mut App, caches: &mut Caches, theme: &Theme) {
    draw_synchronized(terminal, |frame| views::draw(frame, app, caches, theme));
    app.dirty = false;
}

/// Draws a frame inside a synchronized update, so the terminal shows it whole. The update's
/// start is written before anything is rendered: a panic while rendering then leaves nothing
/// buffered to reach the terminal after the panic hook has restored it.
pub(super) fn draw_synchronized(terminal: &mut Term, render: impl FnOnce(&mut Frame)) {
    let _ = execute!(terminal.backend_mut(), BeginSynchronizedUpdate);
    let _ = terminal.draw(render);
    let _ = execute!(terminal.backend_mut(), EndSynchronizedUpdate);
}

pub(super) type Term = Terminal<CrosstermBackend<BufWriter<Stdout>>>;

/// The terminal back from a program the workbench handed it to: raw mode, the modes
/// `enter` takes (bracketed paste too, which `restore_terminal` had turned off), a full redraw.
pub(super) fn take_terminal_back(terminal: &mut Term) {
    let _ = enable_raw_mode();
    let _ = take_screen(terminal.backend_mut());
    // Cleared and forgotten, so the next frame is drawn whole. Not `Terminal::clear`: it asks
    // the terminal where its cursor is first and, with no answer (a terminal that does not
    // answer, a slow link), neither clears nor forgets, and the screen stays blank.
    let _ = crossterm::execute!(
        terminal.backend_mut(),
        crossterm::terminal::Clear(crossterm::terminal::ClearType::All)
    );
    terminal.swap_buffers();
}

/// Ctrl-Z (U13): the terminal goes back to the shell and moot stops, as any terminal program
/// does; `fg` continues it, and the screen is taken back and drawn whole.
pub(super) fn suspend(terminal: &mut Term) {
    restore_terminal();
    crate::fatal::suspend();
    take_terminal_back(terminal);
}

/// SIGTERM, SIGHUP or SIGINT, heard once for the whole workbench whatever screen is up.
#[derive(Clone)]
pub(super) struct Shutdown {
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
            crate::signals::interrupted().await;
            signalled.requested.store(true, Ordering::SeqCst);
            signalled.notify.notify_waiters();
        });
        shutdown
    }

    pub(super) fn requested(&self) -> bool {
        self.requested.load(Ordering::SeqCst)
    }

    /// Resolves when a signal arrives (at once if one already has).
    pub(super) async fn wait(&self) {
        let notified = self.notify.notified();
        if self.requested() {
            return;
        }
        notified.await;
    }
}

/// Copies, pages, edits or writes the follow-up, leaving the screen for an outside program
/// and coming back where one is needed.
fn perform(terminal: &mut Term, app: &mut App, screen: (&Host, &Store), effect: Effect) {
    let (host, store) = screen;
    match effect {
        Effect::Copy(text) => {
            // OSC 52 asks the terminal itself to take the text, so it works over SSH.
            let copied = execute!(
                stdout(),
                crossterm::clipboard::CopyToClipboard::to_clipboard_from(text.as_bytes())
            );
            app.notice = Some(match copied {
                Ok(()) => format!("copied {} characters (OSC 52)", text.chars().count()),
                Err(e) => format!("cannot copy: {e}"),
            });
        }
        Effect::Page { markdown, path } => {
            super::outside::outside(terminal, app, "PAGER", "less", &markdown, path)
        }
        Effect::Edit { markdown, path } => {
            super::outside::outside(terminal, app, "EDITOR", "vi", &markdown, path)
        }
        Effect::OpenSource { root, path, line } => {
            super::outside::open_source(terminal, app, &root, &path, line)
        }
        Effect::WriteFollowUp(id) => match session::write_follow_up(&host.protocols, store, &id) {
            Ok(path) => {
                let path = path.display().to_string();
                app.notice = Some(format!("follow-up issue draft: {path}"));
                app.on_event(&Event::FollowUp { path });
            }
            Err(e) => app.notice = Some(e.to_string()),
        },
        Effect::Control(_) | Effect::Quit => {}
    }
    app.dirty = true;
}

/// Where the workbench opens.
pub enum Start {
    History,
    /// A debate on the live screen.
    Live(Run),
    Replay(String),
    /// A debate a server runs (`moot attach`), followed over its API.
    Attach(Box<crate::remote::Remote>),
}

/// The debate a live screen runs.
pub enum Run {
    New {
        question: String,
        settings: Box<DebateSettings>,
    },
    /// `moot resume ID` (or `r` in the history): it picks up where it stopped.
    Resume {
        id: String,
        changes: Box<ResumeChanges>,
    },
}

impl Run {
    async fn session(
        self,
        host: &Host,
        store: Store,
        wiring: Wiring,
        interrupt: std::pin::Pin<Box<dyn Future<Output = ()>>>,
    ) -> Result<Finish, SessionError> {
        match self {
            Run::New { question, settings } => {
                session::start(host.clone(), store, &question, *settings, wiring, interrupt).await
            }
            Run::Resume { id, changes } => {
                session::resume(host.clone(), store, &id, *changes, wiring, interrupt).await
            }
        }
    }

    /// Shows in `app` what it will run, as far as it is known before it starts: the protocol's
    /// own layout from the first frame, before its first event. A resumed debate is looked up
    /// in `store`; with none (the journal not open yet), only a new one shows.
    fn show_expected(&self, host: &Host, store: Option<&Store>, app: &mut App) {
        let expected = match self {
            Run::New { question, settings } => Some((question.clone(), settings.protocol.clone())),
            Run::Resume { id, .. } => store
                .and_then(|store| store.debate(id).ok())
                .map(|d| (d.question, d.protocol)),
        };
        if let Some((question, protocol)) = expected {
            let presentation = session::presentation(&host.protocols, &protocol);
            app.view.expecting(&question, &protocol, presentation);
        }
    }
}

/// Everything the workbench is set up with, from config and the command line.
pub struct Setup {
    pub theme: Theme,
    pub keymap: Arc<Keymap>,
    /// The perspective catalog's names, for the new-debate form: read once a new debate's
    /// first frame is up, which does not need them.
    pub catalog: Box<dyn FnOnce() -> Vec<String>>,
    /// The registered protocols, and the one the new-debate form starts on (the configured).
    pub protocols: Vec<ProtocolChoice>,
    pub default_protocol: String,
    /// The providers the new-debate form offers, the default first.
    pub providers: Vec<ProviderChoice>,
    /// The server whose debates the history lists too (`[serve] url`).
    pub served: Option<Served>,
    /// What the sessions it starts run with.
    pub host: Host,
}

/// Who answers at the workbench, as the journal records it.
fn answerer() -> String {
    format!("{} at the workbench", crate::signals::user())
}

/// Runs the workbench from `start` until the user leaves, moving between history, live
/// debates and replays on one terminal. Returns the exit code.
pub async fn workbench(
    open_store: impl FnOnce() -> Result<Store, crate::store::StoreError>,
    setup: Setup,
    start: Start,
    settings_for: impl Fn(&NewDebate) -> Result<DebateSettings, SessionError>,
) -> Result<i32, SessionError> {
    let Setup {
        theme,
        keymap,
        catalog,
        protocols,
        default_protocol,
        providers,
        served,
        host,
    } = setup;
    let (_guard, mut terminal) =
        enter().map_err(|e| SessionError::Environment(format!("cannot open the terminal: {e}")))?;
    // A new debate's first frame (its question, its protocol's layout) comes before the
    // journal opens: nothing on it needs the journal. A resumed one's needs it to show more
    // than an empty frame.
    if let Start::Live(run @ Run::New { .. }) = &start {
        let mut app = App::with_keymap(false, keymap.clone());
        run.show_expected(&host, None, &mut app);
        draw(&mut terminal, &mut app, &mut Caches::default(), &theme);
        // The frame is written, but the terminal (or sshd) has yet to read it, and the kernel
        // tends to wake that reader on this core, behind this thread, which goes straight on
        // to open the journal and start the debate: milliseconds of work before the frame
        // shows. Stepping aside once lets the reader show it first (`cargo bench --bench
        // latency`, first frame on two cores, median: 7.6 ms before, 4.4 ms after).
        std::thread::yield_now();
    }
    let store = open_store()?;
    let mut keys = EventStream::new();
    let shutdown = Shutdown::listen();
    let back_to_history = matches!(start, Start::History);
    let mut next = Some(start);
    let mut history = History::new(keymap.clone());
    history.catalog = catalog();
    history.default_protocol = protocols
        .iter()
        .position(|p| p.name == default_protocol)
        .unwrap_or(0);
    history.protocols = protocols;
    history.providers = providers;
    history.server = served.as_ref().map(Served::rows);
    let mut code = 0;
    let mut last: Option<(String, DebateStatus)> = None;
    // What to say on leaving a debate another process runs: that it goes on.
    let mut farewell: Option<String> = None;
    // Every screen but the history's borrows the same terminal, keys and setup.
    macro_rules! screen {
        () => {
            Screen {
                terminal: &mut terminal,
                keys: &mut keys,
                shutdown: &shutdown,
                theme: &theme,
                keymap: &keymap,
                store: &store,
                host: &host,
            }
        };
    }
    while let Some(screen) = next.take().filter(|_| !shutdown.requested()) {
        match screen {
            Start::History => {
                let effect = history_screen(
                    &mut terminal,
                    &mut keys,
                    &shutdown,
                    &store,
                    &mut history,
                    &theme,
                    served.as_ref(),
                )
                .await;
                next = Some(match effect {
                    HistoryEffect::Attach { id, resume } => {
                        super::browse::attach(served.as_ref(), &id, resume, &mut history).await
                    }
                    effect => match after_history(effect, &mut history, &settings_for) {
                        Some(start) => start,
                        None => break,
                    },
                });
                continue;
            }
            Start::Live(run) => {
                let result = live_screen(screen!(), run).await;
                code = session::exit_code(&result);
                last = remember(&result);
                history.message = outcome_line(&result);
            }
            Start::Attach(remote) => {
                let id = remote.id.clone();
                farewell = watch_screen(screen!(), &id, Vec::new(), Followed::Server(remote)).await;
            }
            Start::Replay(id) => match open_stored(screen!(), &id).await {
                Ok(said) => farewell = said,
                Err(e) => history.message = Some(e.to_string()),
            },
        }
        // A screen opened from the history goes back to it.
        if back_to_history {
            next = Some(Start::History);
        }
    }
    drop(terminal);
    restore_terminal();
    say_on_leaving(&store, last, farewell);
    Ok(code)
}

/// What the shell is told once the screen is its own again (drawn over, it would be lost): how
/// the last debate run here stands, or that one left running goes on, and the journal's notices.
fn say_on_leaving(store: &Store, last: Option<(String, DebateStatus)>, farewell: Option<String>) {
    if let Some((id, status)) = last {
        say_how_it_stands(store, &id, status);
    } else if let Some(farewell) = farewell {
        eprintln!("moot: {farewell}");
    }
    for notice in store.notices() {
        eprintln!("moot: {}", crate::sanitize::clean(notice));
    }
}

/// A stored debate: followed live when another process is running it, else replayed. What
/// to say on leaving, when it was left running.
async fn open_stored(
    screen: Screen<'_>,
    id: &str,
) -> Result<Option<String>, crate::store::StoreError> {
    let running = screen
        .store
        .debate(id)
        .is_ok_and(|d| d.status == DebateStatus::Running);
    if running {
        return follow_screen(screen, id).await;
    }
    let events = crate::replay::journal_events(&screen.host.protocols, screen.store, id)?;
    Ok(watch_screen(screen, id, events, Followed::Replayed).await)
}

/// What the terminal says once the workbench has closed on a debate: paused (and how to go
/// on), or how it ended and where its record is.
fn say_how_it_stands(store: &Store, id: &str, status: DebateStatus) {
    let record = store
        .synthesis(id)
        .ok()
        .flatten()
        .and_then(|s| s.path)
        .map(|p| format!("; decision record {p}"))
        .unwrap_or_default();
    match status {
        DebateStatus::Paused | DebateStatus::Interrupted => {
            eprintln!("moot: {id} is paused; continue with: moot resume {id}")
        }
        // The whole reason, and the way back (U3): "failed" alone told nobody what to fix.
        DebateStatus::Failed => {
            let why = store
                .debate(id)
                .ok()
                .and_then(|d| d.error)
                .map(|e| format!(": {}", crate::sanitize::clean(&e)))
                .unwrap_or_default();
            eprintln!(
                "moot: {id} failed{why}\nmoot: once that is fixed, continue with: moot resume {id}"
            )
        }
        status => eprintln!("moot: {id} {status}{record}"),
    }
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

/// What every screen of the workbench draws with and listens to.
struct Screen<'a> {
    terminal: &'a mut Term,
    keys: &'a mut EventStream,
    shutdown: &'a Shutdown,
    theme: &'a Theme,
    keymap: &'a Arc<Keymap>,
    store: &'a Store,
    host: &'a Host,
}

/// Asks the running session to pause, once.
fn pause(stop: &mut Option<oneshot::Sender<()>>) {
    if let Some(stop) = stop.take() {
        let _ = stop.send(());
    }
}

/// Folds every event already queued into the app.
fn drain(events: &mut mpsc::UnboundedReceiver<Event>, app: &mut App) {
    while let Ok(event) = events.try_recv() {
        app.on_event(&event);
    }
}

/// A live debate until the user leaves. Quitting (or Ctrl-C, SIGTERM, SIGHUP) while it runs
/// pauses it in the journal.
async fn live_screen(screen: Screen<'_>, run: Run) -> Result<Finish, SessionError> {
    let Screen {
        terminal,
        keys,
        shutdown,
        theme,
        keymap,
        store,
        host,
    } = screen;
    let (events_tx, mut events_rx) = mpsc::unbounded_channel::<Event>();
    let (controls_tx, controls_rx) = mpsc::unbounded_channel::<Control>();
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let interrupt: std::pin::Pin<Box<dyn Future<Output = ()>>> = Box::pin(async move {
        let _ = stop_rx.await;
    });
    let mut app = App::with_keymap(false, keymap.clone());
    run.show_expected(host, Some(store), &mut app);
    let mut caches = Caches::default();
    let mut tick = tokio::time::interval(TICK);
    let mut session = std::pin::pin!(run.session(
        host,
        store.clone(),
        Wiring {
            events: events_tx,
            controls: controls_rx,
            answerer: answerer(),
        },
        interrupt
    ));
    let mut stop = Some(stop_tx);
    let mut finished: Option<Result<Finish, SessionError>> = None;
    let mut events_open = true;
    let mut pacer = Pacer::new();
    let mut draft_read = false;
    'screen: loop {
        // A draft an earlier screen kept for this debate (a pause, then a resume) comes back
        // once the debate's id is known.
        if !draft_read && !app.view.id.is_empty() {
            draft_read = true;
            restore_draft(store, &mut app);
        }
        if app.dirty && pacer.due() {
            draw(terminal, &mut app, &mut caches, theme);
            pacer.drawn();
        }
        let next_frame = pacer.next();
        tokio::select! {
            event = events_rx.recv(), if events_open => {
                match event {
                    Some(event) => {
                        app.on_event(&event);
                        // Drain what is queued, then draw once.
                        drain(&mut events_rx, &mut app);
                    }
                    // Every sender is gone (the debate ended): stop polling a closed channel,
                    // or the loop would spin.
                    None => events_open = false,
                }
            }
            result = &mut session, if finished.is_none() => {
                drain(&mut events_rx, &mut app);
                let leave = shutdown.requested() || stop.is_none();
                finished = Some(result);
                app.dirty = true;
                if leave {
                    break;
                }
            }
            key = keys.next() => {
                let mut key = Some(key);
                while let Some(next) = key.take() {
                    match input(&mut app, next) {
                        Input::Key(key) => {
                            let ended = finished.is_some();
                            if live_key(key, &mut app, terminal, (host, store), &controls_tx, ended, &mut stop) {
                                break 'screen;
                            }
                        }
                        Input::Handled => {}
                        // The terminal went away: pause and leave.
                        Input::Gone => {
                            if finished.is_some() {
                                break 'screen;
                            }
                            pause(&mut stop);
                            break;
                        }
                    }
                    key = waiting(keys).await;
                }
                pacer.key();
            },
            _ = tick.tick() => app.on_tick(),
            _ = tokio::time::sleep_until(next_frame), if app.dirty => {}
            // A signal pauses a running debate (the loop leaves once it has) or just leaves.
            _ = shutdown.wait(), if stop.is_some() || finished.is_some() => {
                if finished.is_some() {
                    break;
                }
                pause(&mut stop);
            }
        }
    }
    left_live(store, &mut app, finished)
}

/// How a live screen ends: words in an editor left open, or closed unsent, outlive the screen
/// (U4); the session's end, or that the workbench closed before it.
fn left_live(
    store: &Store,
    app: &mut App,
    finished: Option<Result<Finish, SessionError>>,
) -> Result<Finish, SessionError> {
    app.keep_draft();
    keep_draft_for_resume(store, app, app.view.status.is_finished_for_good());
    finished.unwrap_or_else(|| {
        Err(SessionError::Environment(
            "the workbench closed before the debate ended".into(),
        ))
    })
}

/// The preference a debate's unsent draft is kept under between screens.
fn draft_key(id: &str) -> String {
    format!("draft {id}")
}

/// Keeps the screen's unsent draft in the journal for the debate's next screen, unless the
/// debate is over for good (nothing will ask again).
fn keep_draft_for_resume(store: &Store, app: &App, ended: bool) {
    let Some((writing, words)) = app.draft.as_ref().filter(|_| !ended) else {
        return;
    };
    if app.view.id.is_empty() {
        return;
    }
    let kept = serde_json::json!({"writing": writing, "words": words}).to_string();
    let _ = store.set_preference(&draft_key(&app.view.id), &kept);
}

/// Brings back a draft an earlier screen kept for this debate, once.
fn restore_draft(store: &Store, app: &mut App) {
    let key = draft_key(&app.view.id);
    let Ok(Some(kept)) = store.preference(&key) else {
        return;
    };
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(&kept)
        && let Ok(writing) = serde_json::from_value(value["writing"].clone())
        && let Some(words) = value["words"].as_str()
    {
        app.draft = Some((writing, words.to_string()));
    }
    let _ = store.set_preference(&key, "");
}

/// A key on the live screen: a control sent to the debate, an effect performed, or a quit (the
/// debate asked to pause; the screen leaves once it has, or at once if it has ended). True
/// when the screen leaves now.
fn live_key(
    key: crossterm::event::KeyEvent,
    app: &mut App,
    terminal: &mut Term,
    (host, store): (&Host, &Store),
    controls: &mpsc::UnboundedSender<Control>,
    ended: bool,
    stop: &mut Option<oneshot::Sender<()>>,
) -> bool {
    if is_suspend(&key) {
        suspend(terminal);
        app.dirty = true;
        return false;
    }
    let effect = if is_interrupt(&key) {
        app.interrupt()
    } else {
        app.on_key(key)
    };
    match effect {
        Some(Effect::Control(control)) => {
            let _ = controls.send(control);
        }
        Some(Effect::Quit) if ended => return true,
        Some(Effect::Quit) => pause(stop),
        Some(effect) => perform(terminal, app, (host, store), effect),
        None => {}
    }
    false
}

/// A debate another process runs, followed live until the user leaves: its journal so far,
/// then each event as it happens (stream deltas from its socket). What it waits at is
/// answered through the journal, where the running process picks it up; leaving leaves it
/// running.
async fn follow_screen(
    screen: Screen<'_>,
    id: &str,
) -> Result<Option<String>, crate::store::StoreError> {
    let (events, following) =
        crate::replay::follow(&screen.host.protocols, screen.store, id).await?;
    Ok(watch_screen(screen, id, events, Followed::Here(Box::new(following))).await)
}

/// Where a watched debate's events come from and its answers go: this machine's journal, a
/// server's API (`moot attach`), or nowhere: a stored debate replayed read-only.
enum Followed {
    Here(Box<crate::replay::Following>),
    Server(Box<crate::remote::Remote>),
    Replayed,
}

/// Why the person's answer to a followed debate was not sent.
#[derive(Debug, thiserror::Error)]
enum Unsent {
    /// It does not answer the question as asked: why, naming the answers that would.
    #[error("{0}")]
    DoesNotFit(String),
    #[error(transparent)]
    Journal(#[from] crate::store::StoreError),
    #[error(transparent)]
    Server(#[from] crate::remote::RemoteError),
    #[error("a replay takes no answers")]
    Replay,
}

impl Followed {
    /// What the screen says it follows: another process's run, a server's, or nothing (a
    /// replay).
    fn banner(&self) -> Option<String> {
        match self {
            Followed::Here(_) => Some("live: another process runs it".into()),
            Followed::Server(remote) => Some(format!(
                "attached to {}",
                crate::sanitize::clean(remote.server_base())
            )),
            Followed::Replayed => None,
        }
    }

    async fn next(&mut self) -> Option<Vec<Event>> {
        match self {
            Followed::Here(following) => following.next().await,
            Followed::Server(remote) => remote.next().await,
            Followed::Replayed => std::future::pending().await,
        }
    }

    /// Sends the person's answer; false when it was answered a moment ago.
    async fn answer(
        &self,
        store: &Store,
        app: &App,
        id: &str,
        control: Control,
    ) -> Result<bool, Unsent> {
        match self {
            Followed::Here(_) => match answer_elsewhere(store, app, id, control)? {
                RemoteAnswer::Recorded => Ok(true),
                RemoteAnswer::AnsweredAlready => Ok(false),
                RemoteAnswer::DoesNotFit(why) => Err(Unsent::DoesNotFit(why)),
            },
            // The server finds the question's round itself, from where its debate stands.
            Followed::Server(remote) => {
                let Some(kind) = app.pending() else {
                    return Ok(false);
                };
                Ok(remote.answer(kind, control).await?)
            }
            Followed::Replayed => Err(Unsent::Replay),
        }
    }
}

/// A debate running elsewhere, on the live screen: its events as they come, the person's
/// answers sent back, until the user leaves; or a stored one replayed, read-only. Returns what
/// to say on leaving one that still runs: that it goes on, and how to come back (U10).
async fn watch_screen(
    screen: Screen<'_>,
    id: &str,
    events: Vec<Event>,
    mut following: Followed,
) -> Option<String> {
    let read_only = matches!(following, Followed::Replayed);
    let mut app = App::with_keymap(read_only, screen.keymap.clone());
    app.watching = following.banner();
    for event in &events {
        app.on_event(event);
    }
    let mut caches = Caches::default();
    let mut tick = tokio::time::interval(TICK);
    let mut pacer = Pacer::new();
    let mut open = true;
    'screen: loop {
        if app.dirty && pacer.due() {
            draw(screen.terminal, &mut app, &mut caches, screen.theme);
            pacer.drawn();
        }
        let next_frame = pacer.next();
        tokio::select! {
            batch = following.next(), if open => match batch {
                Some(events) => {
                    for event in &events {
                        let stale = matches!(event, Event::TurnDelta { seat, .. } if !app.view.speaking(seat));
                        if !stale {
                            app.on_event(event);
                        }
                    }
                }
                // It stopped running: its ending is shown, and the screen stays.
                None => {
                    open = false;
                    app.dirty = true;
                }
            },
            key = screen.keys.next() => {
                let mut key = Some(key);
                while let Some(next) = key.take() {
                    match input(&mut app, next) {
                        Input::Key(key) => {
                            if is_suspend(&key) {
                                suspend(screen.terminal);
                                app.dirty = true;
                                continue;
                            }
                            let effect = if is_interrupt(&key) {
                                app.interrupt()
                            } else {
                                app.on_key(key)
                            };
                            match effect {
                                Some(Effect::Quit) => break 'screen,
                                Some(Effect::Control(control)) => {
                                    let problem = match following.answer(screen.store, &app, id, control).await {
                                        Ok(true) => None,
                                        Ok(false) => Some("that was answered a moment ago".to_string()),
                                        Err(e) => Some(e.to_string()),
                                    };
                                    if problem.is_some() {
                                        app.notice = problem;
                                        app.dirty = true;
                                    }
                                }
                                Some(effect) => perform(screen.terminal, &mut app, (screen.host, screen.store), effect),
                                None => {}
                            }
                        }
                        Input::Handled => {}
                        Input::Gone => break 'screen,
                    }
                    key = waiting(screen.keys).await;
                }
                pacer.key();
            },
            // A replay has no clock and nothing speaking: it redraws on a key alone.
            _ = tick.tick(), if !read_only => app.on_tick(),
            _ = tokio::time::sleep_until(next_frame), if app.dirty => {}
            _ = screen.shutdown.wait() => break,
        }
    }
    let comes_back = match &following {
        Followed::Here(_) => format!("moot open {id}"),
        Followed::Server(_) => format!("moot attach {id}"),
        Followed::Replayed => return None,
    };
    (open && !app.view.is_finished()).then(|| {
        format!("{id} goes on in the process that runs it; follow it again with: {comes_back}")
    })
}

/// The person's answer to what a followed debate waits at, journaled for the process running
/// it: a gate's decision as `moot approve` / `moot reject` make it, any other answer as the
/// answer to that question. False when the question was answered (or is gone) already.
fn answer_elsewhere(
    store: &Store,
    app: &App,
    id: &str,
    control: Control,
) -> Result<RemoteAnswer, crate::store::StoreError> {
    use crate::debate::{AskKind, Stage};
    let gone = Ok(RemoteAnswer::AnsweredAlready);
    let Some(kind) = app.pending() else {
        return gone;
    };
    let by = format!("{} at another workbench", crate::signals::user());
    let round = match kind {
        AskKind::Gate => {
            let Some(gate) = store.waiting_gate(&store.debate(id)?)? else {
                return gone;
            };
            let (decision, reason) = match &control {
                Control::Decline(reason) => {
                    (crate::debate::GateDecision::Rejected, Some(reason.as_str()))
                }
                _ => (crate::debate::GateDecision::Approved, None),
            };
            return Ok(
                if store.decide_gate(id, &gate.gate, decision, &by, reason)? {
                    RemoteAnswer::Recorded
                } else {
                    RemoteAnswer::AnsweredAlready
                },
            );
        }
        // A person's turn is answered under its own number (two seats may share a round).
        AskKind::Turn => match &app.turn_pick {
            Some(pick) => pick.earlier + 1,
            None => return gone,
        },
        // A clarifying question carries no round on screen: the journal's stage says which.
        AskKind::Clarification => match store.debate(id)?.stage {
            Some(Stage::Asking {
                kind: AskKind::Clarification,
                round,
            }) => round,
            _ => return gone,
        },
        _ => match app.view.checkpoint.as_ref() {
            Some(ask) => ask.round,
            None => return gone,
        },
    };
    store.record_remote_answer(id, round, kind, &control, &by)
}

#[cfg(test)]
mod tests {

    /// U4: a draft left unsent when the screen leaves a paused debate comes back on the
    /// next screen of that debate, once; an ended debate keeps none.
    #[test]
    fn a_draft_outlives_a_pause_and_comes_back_once() {
        let store = Store::in_memory().unwrap();
        let mut app = App::new(false);
        app.view.id = "DEB-draft001".into();
        app.draft = Some((
            super::super::app::Writing::Guidance,
            "Weigh the cost".into(),
        ));
        keep_draft_for_resume(&store, &app, false);
        let mut again = App::new(false);
        again.view.id = "DEB-draft001".into();
        restore_draft(&store, &mut again);
        assert_eq!(
            again.draft,
            Some((
                super::super::app::Writing::Guidance,
                "Weigh the cost".into()
            ))
        );
        let mut third = App::new(false);
        third.view.id = "DEB-draft001".into();
        restore_draft(&store, &mut third);
        assert_eq!(third.draft, None, "given back once");
        keep_draft_for_resume(&store, &app, true);
        restore_draft(&store, &mut third);
        assert_eq!(third.draft, None, "an ended debate keeps no draft");
    }
    use super::*;

    /// Entering and coming back from another program (an editor) take the same modes: coming
    /// back once left bracketed paste off, so a paste arrived as keys.
    #[test]
    fn the_screen_is_taken_with_the_alternate_screen_and_bracketed_paste() {
        let mut written = Vec::new();
        take_screen(&mut written).unwrap();
        let written = String::from_utf8(written).unwrap();
        assert!(
            written.contains("\x1b[?1049h"),
            "alternate screen: {written:?}"
        );
        assert!(written.contains("\x1b[?25l"), "cursor hidden: {written:?}");
        assert!(
            written.contains("\x1b[?2004h"),
            "bracketed paste: {written:?}"
        );
    }

    /// Issue 27 item 3: a key draws the next frame at once, even right after a frame; stream
    /// deltas alone wait out the frame.
    #[tokio::test(start_paused = true)]
    async fn a_key_draws_at_once_and_deltas_wait_for_the_frame() {
        let mut pacer = Pacer::new();
        assert!(pacer.due(), "the first frame is drawn at once");
        pacer.drawn();
        assert!(!pacer.due(), "a delta right after a frame waits");
        tokio::time::advance(FRAME / 2).await;
        assert!(!pacer.due());
        pacer.key();
        assert!(pacer.due(), "a key does not wait");
        pacer.drawn();
        assert!(!pacer.due(), "after the key's frame, deltas wait again");
        assert_eq!(pacer.next(), Instant::now() + FRAME);
        tokio::time::advance(FRAME).await;
        assert!(pacer.due());
    }

    /// Issue 24 item 3: a viewer's answers go into the journal for the running process: a
    /// gate's decision as `moot approve` makes it, any other answer as that question's; a
    /// second answer to the same question is not taken.
    #[test]
    fn a_followers_answers_go_into_the_journal() {
        use crate::debate::{AskKind, Control, Event, GateDecision};
        let store = Store::in_memory().unwrap();
        let debate = crate::store::running_debate("DEB-answer1");
        store.create_debate(&debate).unwrap();
        let mut app = App::new(false);
        let ask = |kind| Event::Checkpoint {
            round: 1,
            timeout_seconds: 60,
            kind,
            detail: None,
            choices: vec![],
        };
        app.on_event(&ask(AskKind::Checkpoint));
        assert_eq!(
            answer_elsewhere(&store, &app, &debate.id, Control::Continue).unwrap(),
            RemoteAnswer::Recorded
        );
        let answer = store
            .checkpoint_answer(&debate.id, 1, AskKind::Checkpoint)
            .unwrap()
            .unwrap();
        assert_eq!(answer.control, Control::Continue);
        assert!(answer.answered_by.ends_with(" at another workbench"));
        assert_eq!(
            answer_elsewhere(&store, &app, &debate.id, Control::End).unwrap(),
            RemoteAnswer::AnsweredAlready,
            "the first answer stands"
        );
        store
            .request_gate(
                &debate.id,
                "after_round:1",
                "after_round",
                1,
                "s",
                &serde_json::json!({}),
            )
            .unwrap();
        app.on_event(&ask(AskKind::Gate));
        let reject = Control::Decline("not yet".into());
        // C3: a gate is decided only while its debate stands at it (and runs: its lease
        // is held).
        let _lease = store.acquire_lease(&debate.id).unwrap();
        assert_eq!(
            answer_elsewhere(&store, &app, &debate.id, reject.clone()).unwrap(),
            RemoteAnswer::AnsweredAlready
        );
        store
            .set_stage(
                &debate.id,
                crate::debate::Stage::AtGate {
                    point: "after_round".into(),
                    round: 1,
                },
            )
            .unwrap();
        assert_eq!(
            answer_elsewhere(&store, &app, &debate.id, reject).unwrap(),
            RemoteAnswer::Recorded
        );
        let gate = store.gate(&debate.id, "after_round:1").unwrap().unwrap();
        assert_eq!(gate.decision, Some(GateDecision::Rejected));
        assert_eq!(gate.reason.as_deref(), Some("not yet"));
        // A person's turn is answered under the turn's own number: two seats a person plays
        // speak in the same round.
        app.on_event(&Event::TurnRequested {
            round: 2,
            phase: crate::debate::Phase::Rebuttal,
            seat: "B".into(),
            turn_number: 4,
            by: crate::debate::PERSON.into(),
            timeout_seconds: 60,
        });
        app.on_event(&Event::Checkpoint {
            round: 2,
            timeout_seconds: 60,
            kind: AskKind::Turn,
            detail: None,
            choices: vec![],
        });
        // C2: an answer that does not fit is refused before anything is journaled.
        let refused = answer_elsewhere(&store, &app, &debate.id, Control::Accept).unwrap();
        assert!(
            matches!(&refused, RemoteAnswer::DoesNotFit(why) if why.contains("does not answer")),
            "{refused:?}"
        );
        let words = Control::Guide("Turn 3 is hearsay.".into());
        assert_eq!(
            answer_elsewhere(&store, &app, &debate.id, words.clone()).unwrap(),
            RemoteAnswer::Recorded
        );
        let turn = store
            .checkpoint_answer(&debate.id, 4, AskKind::Turn)
            .unwrap();
        assert_eq!(turn.map(|t| t.control), Some(words));
        // A clarifying question (a code debate's second, say) is answered under the round
        // the journal's stage names; the screen shows no round for it.
        store
            .set_stage(
                &debate.id,
                crate::debate::Stage::Asking {
                    kind: AskKind::Clarification,
                    round: 2,
                },
            )
            .unwrap();
        app.on_event(&Event::ClarificationRequested {
            question: "Which Postgres version?".into(),
        });
        assert_eq!(
            answer_elsewhere(&store, &app, &debate.id, Control::Continue).unwrap(),
            RemoteAnswer::Recorded
        );
        let clarified = store
            .checkpoint_answer(&debate.id, 2, AskKind::Clarification)
            .unwrap();
        assert_eq!(clarified.map(|c| c.control), Some(Control::Continue));
    }
}
