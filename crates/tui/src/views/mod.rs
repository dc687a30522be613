//! Drawing: pure functions of the app state per screen region, composed here.

use crate::debate::Named as _;
mod ask;
pub mod history;
pub mod pane;
pub mod side;

use super::app::{App, Modal};
use super::keymap::{Command, Keymap, Scope};
use super::theme::Theme;
use crate::debate::{AskKind, DebateStatus, FlagKind, SidePanel};
use crate::wrap::wrap;
use ask::{answer_lines, ask, ask_items, editor, editor_items, turn_editor_dock};
use pane::PaneCache;
use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Tabs};

/// Caches kept across frames, owned by the loop beside the app.
#[derive(Default)]
pub struct Caches {
    pub panes: Vec<PaneCache>,
    pub synthesis: Option<RenderedSynthesis>,
}

/// The synthesis rendered for one width, with the sections open and the document it was
/// rendered from.
pub struct RenderedSynthesis {
    width: usize,
    expanded: Vec<bool>,
    generation: u64,
    lines: Vec<Line<'static>>,
}

/// The screen commands worth a place in the footer, with the word the footer uses; `?` lists
/// the rest.
const FOOTER: [(Command, &str); 5] = [
    (Command::Help, "help"),
    (Command::FocusNext, "next pane"),
    (Command::Synthesis, "synthesis"),
    (Command::ToggleMap, "map"),
    (Command::Quit, "quit"),
];

/// Below this width the seats show as tabs, one at a time.
const NARROW: u16 = 100;
/// From this width the side panels sit beside the panes.
pub(crate) const SIDE_BY_SIDE: u16 = 120;

pub fn draw(frame: &mut Frame, app: &mut App, caches: &mut Caches, theme: &Theme) {
    let area = frame.area();
    if too_small(frame) {
        return;
    }
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(2),
            Constraint::Min(3),
            Constraint::Length(strip_height(area)),
            Constraint::Length(1),
        ])
        .split(area);
    header(frame, rows[0], app, theme);
    // A person's turn is written in a dock below the panes, which stay in sight: a rebuttal
    // answers what they say (seed review 002/003 #19).
    let turn_editor = matches!(
        &app.modal,
        Modal::Editor {
            writing: crate::app::Writing::Turn,
            ..
        }
    );
    let (panes, dock) = if turn_editor && rows[1].height >= 14 {
        let dock = (rows[1].height * 2 / 5).clamp(9, 16);
        let split = Layout::default()
            .direction(Direction::Vertical)
            .constraints([Constraint::Min(5), Constraint::Length(dock)])
            .split(rows[1]);
        (split[0], Some(split[1]))
    } else {
        (rows[1], None)
    };
    body(frame, panes, app, caches, theme);
    strip(frame, rows[2], app, theme);
    footer(frame, rows[3], app, theme);
    match dock {
        Some(dock) => turn_editor_dock(frame, dock, app, theme),
        None => draw_modal(frame, area, app, caches, theme),
    }
    if theme.ascii {
        asciify(frame.buffer_mut());
    }
}

/// Below 20×6 nothing fits: says so instead of drawing, and tells the caller to stop.
pub(crate) fn too_small(frame: &mut Frame) -> bool {
    let area = frame.area();
    let small = area.width < 20 || area.height < 6;
    if small {
        frame.render_widget(Paragraph::new("moot: enlarge the terminal"), area);
    }
    small
}

/// Replaces the workbench's own glyphs (box drawing, arrows, bullets) with ASCII, for
/// terminals without Unicode box drawing. Other text is left as it is.
pub fn asciify(buffer: &mut ratatui::buffer::Buffer) {
    const GLYPHS: &[(&str, &str)] = &[
        ("─", "-"),
        ("│", "|"),
        ("╭", "+"),
        ("╮", "+"),
        ("╰", "+"),
        ("╯", "+"),
        ("┌", "+"),
        ("┐", "+"),
        ("└", "+"),
        ("┘", "+"),
        ("├", "+"),
        ("┤", "+"),
        ("·", "-"),
        ("●", "*"),
        ("•", "*"),
        ("✓", "+"),
        ("→", ">"),
        ("←", "<"),
        ("↑", "^"),
        ("↓", "v"),
        ("⇐", "<"),
        ("✕", "x"),
        ("↯", "~"),
        ("‹", "<"),
        ("›", ">"),
        ("▏", "|"),
        ("…", "."),
        ("—", "-"),
        ("–", "-"),
    ];
    for cell in buffer.content.iter_mut() {
        if let Some((_, ascii)) = GLYPHS.iter().find(|(glyph, _)| cell.symbol() == *glyph) {
            cell.set_symbol(ascii);
        }
    }
}

fn draw_modal(frame: &mut Frame, area: Rect, app: &mut App, caches: &mut Caches, theme: &Theme) {
    match &app.modal {
        Modal::Ask => ask(frame, area, app, theme),
        Modal::Editor { .. } => editor(frame, area, app, theme),
        Modal::Help(scroll) => help(frame, area, app, *scroll, theme),
        Modal::Synthesis { scroll, expanded } => {
            let (asked, expanded) = (*scroll, expanded.clone());
            let shown = synthesis(frame, area, app, caches, asked, &expanded, theme);
            // Scrolling stops at the end: the view keeps where it could go, so the next key
            // up moves at once (seed review 002/003 #10).
            if let Modal::Synthesis { scroll, .. } = &mut app.modal {
                *scroll = shown;
            }
        }
        Modal::None => failure(frame, area, app, theme),
    }
}

/// A debate that failed says why in full where the person is looking (U3): the strip has room
/// for a line of it, and the reason (a refused key, a server that is not there) is what
/// they must act on.
fn failure(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let (DebateStatus::Failed, Some(error)) = (app.view.status, app.view.error.as_deref()) else {
        return;
    };
    let width = area.width.saturating_sub(4).min(76);
    let inner = width.saturating_sub(2) as usize;
    let mut lines: Vec<Line> = wrap(error, inner)
        .into_iter()
        .map(|l| Line::styled(l, theme.error))
        .collect();
    lines.push(Line::default());
    let leave = app.keymap.key(Scope::Screen, Command::Quit);
    let resume = format!(
        "{leave} leaves; once that is fixed, moot resume {} goes on where it stopped.",
        app.view.id
    );
    lines.extend(
        wrap(&resume, inner)
            .into_iter()
            .map(|l| Line::styled(l, theme.dim)),
    );
    let room = area.height.saturating_sub(4);
    let height = (lines.len() as u16 + 2).min(room.max(3));
    let rect = centered(area, width, height);
    frame.render_widget(Clear, rect);
    let block = modal_block("The debate failed", theme);
    let content = block.inner(rect);
    frame.render_widget(block, rect);
    frame.render_widget(Paragraph::new(lines), content);
}

/// `text` wrapped to `width`, at most `lines` of it, the last cut with "…" when more remains.
fn fit(text: &str, width: usize, lines: usize) -> Vec<String> {
    if text.trim().is_empty() || lines == 0 {
        return Vec::new();
    }
    let mut wrapped = wrap(text, width);
    if wrapped.len() > lines {
        wrapped.truncate(lines);
        if let Some(last) = wrapped.last_mut() {
            let keep = width.saturating_sub(1);
            if last.chars().count() > keep {
                *last = last.chars().take(keep).collect();
            }
            last.push('…');
        }
    }
    wrapped
}

fn strip_height(area: Rect) -> u16 {
    if area.height >= 30 {
        4
    } else if area.height >= 14 {
        3
    } else {
        0
    }
}

/// US dollars per million input and output tokens, for models whose list price is known.
const PRICES: &[(&str, f64, f64)] = &[
    ("gpt-4o-mini", 0.15, 0.60),
    ("gpt-4o", 2.50, 10.00),
    ("gpt-4.1-mini", 0.40, 1.60),
    ("gpt-4.1", 2.00, 8.00),
    ("claude-sonnet-4", 3.00, 15.00),
    ("claude-haiku-4", 1.00, 5.00),
    ("claude-opus-4", 15.00, 75.00),
];

/// An estimate from list prices; None for models not listed (local ones cost nothing here).
fn estimated_cost(model: &str, tokens_in: u64, tokens_out: u64) -> Option<f64> {
    let (_, input, output) = PRICES
        .iter()
        .find(|(prefix, _, _)| model.starts_with(prefix))?;
    Some((tokens_in as f64 * input + tokens_out as f64 * output) / 1_000_000.0)
}

/// What a debate is doing before its rounds are known: starting, analysing the question, or
/// proposing a panel's options.
fn before_rounds(view: &crate::state::DebateView) -> &'static str {
    if view
        .checkpoint
        .as_ref()
        .is_some_and(|ask| ask.kind == AskKind::Options)
    {
        return "the options to settle";
    }
    match view.moderator.speaking.map(|(_, phase)| phase) {
        Some(crate::debate::Phase::Options) => "proposing the options",
        Some(_) => "analysing",
        None if view.id.is_empty() => "starting",
        None => "analysing",
    }
}

fn header(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let view = &app.view;
    let status_style = match view.status {
        DebateStatus::Failed => theme.error,
        DebateStatus::Paused | DebateStatus::Cancelled | DebateStatus::Interrupted => theme.warning,
        _ => theme.accent,
    };
    let mut round = if view.max_rounds > 0 {
        format!(
            "{} {} of {}",
            view.presentation.round_name, view.round, view.max_rounds
        )
    } else {
        before_rounds(view).to_string()
    };
    match &view.stage {
        // Before the rounds are known the stage says it all (seed review 000/001 #10: a panel
        // at its options read "analysing").
        Some(stage) if view.max_rounds == 0 => round = stage.to_string(),
        Some(stage) => round = format!("{stage} · {round}"),
        None => {}
    }
    let mut tokens = format!(
        "{}{} tok in · {} out",
        if view.tokens_estimated { "~" } else { "" },
        view.tokens_in,
        view.tokens_out
    );
    if let Some(cost) = estimated_cost(&view.model, view.tokens_in, view.tokens_out) {
        tokens.push_str(&format!(" · ~${cost:.3}"));
    }
    if let Some(seconds) = app.elapsed() {
        tokens.push_str(&format!(" · {}:{:02}", seconds / 60, seconds % 60));
    }
    let line1 = Line::from(vec![
        Span::styled(" moot ", theme.accent.add_modifier(Modifier::REVERSED)),
        Span::raw(" "),
        Span::styled(
            view.question.clone(),
            theme.text.add_modifier(Modifier::BOLD),
        ),
    ]);
    let mut meta = vec![
        Span::styled(format!(" {} ", view.status), status_style),
        Span::styled(
            format!("· {} · {round} · {tokens}", view.protocol),
            theme.dim,
        ),
    ];
    if !view.model.is_empty() {
        meta.push(Span::styled(
            format!(" · {} {}", view.provider, view.model),
            theme.dim,
        ));
        if view.caveat.is_some() {
            meta.push(Span::styled(" (demo model, not an advisor)", theme.warning));
        }
    }
    if !view.id.is_empty() {
        meta.push(Span::styled(format!(" · {}", view.id), theme.dim));
    }
    if app.read_only {
        meta.push(Span::styled(" · replay", theme.warning));
    }
    if let Some(watching) = &app.watching {
        meta.push(Span::styled(format!(" · {watching}"), theme.warning));
    }
    frame.render_widget(Paragraph::new(vec![line1, Line::from(meta)]), area);
}

fn body(frame: &mut Frame, area: Rect, app: &mut App, caches: &mut Caches, theme: &Theme) {
    app.map.boxes.clear();
    let side_visible = side::any_shown(app, area);
    app.side_off_screen = area.width < SIDE_BY_SIDE;
    if app.panels.maximized && side_visible {
        side::draw(frame, area, app, theme);
        return;
    }
    let (panes_area, side_area) = if side_visible && area.width >= SIDE_BY_SIDE {
        let columns = Layout::default()
            .direction(Direction::Horizontal)
            .constraints([Constraint::Percentage(68), Constraint::Percentage(32)])
            .split(area);
        (columns[0], Some(columns[1]))
    } else {
        (area, None)
    };
    panes(frame, panes_area, app, caches, theme);
    if let Some(side_area) = side_area {
        side::draw(frame, side_area, app, theme);
    }
}

fn panes(frame: &mut Frame, area: Rect, app: &mut App, caches: &mut Caches, theme: &Theme) {
    app.pane_areas.clear();
    let count = app.view.seats.len();
    if count == 0 {
        let text = match &app.view.clarification {
            Some(question) => format!("The moderator asks: {question}"),
            None if app.view.error.is_some() => String::new(),
            None => app.view.presentation.opening.clone(),
        };
        let block = Block::default()
            .borders(Borders::ALL)
            .border_set(theme.border_set())
            .border_style(theme.border);
        let inner = block.inner(area);
        frame.render_widget(block, area);
        frame.render_widget(
            Paragraph::new(wrap(&text, inner.width as usize).join("\n")).style(theme.dim),
            inner,
        );
        return;
    }
    if area.width <= NARROW {
        let titles: Vec<Line> = app
            .view
            .seats
            .iter()
            .enumerate()
            .map(|(i, s)| Line::styled(format!("{} {}", s.id, s.perspective), theme.seat(i)))
            .collect();
        let rows = Layout::default()
            .direction(Direction::Vertical)
            .constraints([Constraint::Length(1), Constraint::Min(1)])
            .split(area);
        frame.render_widget(
            Tabs::new(titles)
                .select(app.focus)
                .highlight_style(theme.focus.add_modifier(Modifier::REVERSED))
                .divider("|"),
            rows[0],
        );
        let focus = app.focus.min(count - 1);
        pane::draw(frame, rows[1], app, focus, &mut caches.panes, theme);
        return;
    }
    let cells: Vec<Rect> = if count == 4 && area.width < 200 {
        let halves = Layout::default()
            .direction(Direction::Vertical)
            .constraints([Constraint::Percentage(50), Constraint::Percentage(50)])
            .split(area);
        halves
            .iter()
            .flat_map(|half| {
                Layout::default()
                    .direction(Direction::Horizontal)
                    .constraints([Constraint::Percentage(50), Constraint::Percentage(50)])
                    .split(*half)
                    .to_vec()
            })
            .collect()
    } else {
        Layout::default()
            .direction(Direction::Horizontal)
            .constraints(vec![Constraint::Ratio(1, count as u32); count])
            .split(area)
            .to_vec()
    };
    for (index, cell) in cells.into_iter().enumerate() {
        pane::draw(frame, cell, app, index, &mut caches.panes, theme);
    }
}

/// The strip's first line: who of the moderator speaks now, the round's check or verdict,
/// and the round's flags.
fn strip_spans(app: &App, theme: &Theme) -> Vec<Span<'static>> {
    let view = &app.view;
    let mut spans = vec![Span::styled(" moderator ", theme.accent)];
    if let Some((round, phase)) = view.moderator.speaking {
        // Round 0 is before the rounds (the options, the analysis, the reflection): no
        // "of round 0".
        let of_round = if round == 0 {
            String::new()
        } else {
            format!(" of round {round}")
        };
        spans.push(Span::styled(
            format!(
                "{} {}{of_round} ",
                theme.spinner(app.spinner),
                phase.as_str()
            ),
            theme.dim,
        ));
    }
    if let Some(headline) = &view.strip.headline {
        spans.push(Span::styled(
            format!("{headline} "),
            theme.text.add_modifier(Modifier::BOLD),
        ));
    } else if let Some(convergence) = &view.strip.convergence {
        spans.push(Span::styled(
            format!(
                "round {}: {} → {} ",
                view.strip.round,
                convergence.assessment.to_string().replace('_', " "),
                convergence.decision
            ),
            theme.text.add_modifier(Modifier::BOLD),
        ));
    }
    let flags: Vec<String> = view
        .seats
        .iter()
        .zip(&view.activity)
        .flat_map(|(seat, activity)| {
            activity
                .flags
                .iter()
                .filter(|(round, _, _)| *round == view.round)
                .map(move |(_, kind, _)| format!("{} {}", seat.id, kind.as_str().replace('_', " ")))
        })
        .chain(
            // The moderator's overrule has its own line below; what else moot flagged of the
            // round as a whole (a hollow agreement) is named beside the seats' flags.
            view.moderator
                .flags
                .iter()
                .filter(|(round, kind, _)| *round == view.round && *kind != FlagKind::Unsupported)
                .map(|(_, kind, _)| kind.as_str().replace('_', " ")),
        )
        .collect();
    if !flags.is_empty() {
        spans.push(Span::styled(
            format!("flags: {} ", flags.join(", ")),
            theme.warning,
        ));
    }
    spans
}

fn strip(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    if area.height == 0 {
        return;
    }
    let view = &app.view;
    let spans = strip_spans(app, theme);
    let mut lines = vec![Line::from(spans)];
    let width = area.width.saturating_sub(2) as usize;
    // Below the first line: the moderator's newest word, then moot's note on the round (an
    // overrule, a hollow agreement), each given lines of its own so neither pushes the other
    // out (seed review 000/001 #11).
    let room = area.height.saturating_sub(2) as usize;
    let overruled = view
        .strip
        .convergence
        .as_ref()
        .and_then(|c| c.overruled.as_deref())
        .filter(|_| view.strip.round == view.round);
    let hollow = view.hollow_agreement(view.round);
    let (note, word) = match (overruled, hollow) {
        (Some(reason), _) => (Some(format!("moot: {reason}.")), "overruled "),
        (None, Some(detail)) => (Some(format!("moot: {detail}.")), "hollow "),
        (None, None) => (None, ""),
    };
    let note_lines = usize::from(note.is_some() && room >= 2);
    if note.is_some() && note_lines == 0 {
        // No line to spare: the first says it in a word, the notices in full.
        if let Some(first) = lines.first_mut() {
            first.push_span(Span::styled(word, theme.warning));
        }
    }
    let (said, style) = match (&view.error, &view.strip.pose) {
        (Some(error), _) => (error.clone(), theme.error),
        // A round the moderator has opened but not yet summed up: its opening is the news.
        (None, Some((round, pose))) if *round > view.strip.round => {
            let pose = pose.trim();
            let named = pose.to_lowercase().starts_with(&format!("round {round}"));
            let said = if named {
                pose.to_string()
            } else {
                format!("round {round}: {pose}")
            };
            (said, theme.text)
        }
        (None, _) => (view.strip.summary.clone(), theme.text),
    };
    let said_lines = room - note_lines;
    lines.extend(
        fit(&said, width, said_lines)
            .into_iter()
            .map(|l| Line::styled(format!(" {l}"), style)),
    );
    if let Some(note) = note.filter(|_| note_lines > 0) {
        lines.extend(
            fit(&note, width, note_lines)
                .into_iter()
                .map(|l| Line::styled(format!(" {l}"), theme.warning)),
        );
    }
    let block = Block::default()
        .borders(Borders::TOP)
        .border_set(theme.border_set())
        .border_style(theme.border);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    frame.render_widget(Paragraph::new(lines), inner);
}

fn footer(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    if let Some(notice) = &app.notice {
        frame.render_widget(
            Paragraph::new(Line::styled(format!(" {notice}"), theme.warning)),
            area,
        );
        return;
    }
    let keymap = &app.keymap;
    // The keys of the layer on top, so the footer never offers a key that means something
    // else there.
    let items: Vec<(Scope, Command, String)> = match (&app.modal, app.ask_scope()) {
        (Modal::Editor { .. }, _) => editor_items(keymap),
        (Modal::Ask, Some(scope)) | (Modal::Synthesis { .. }, Some(scope @ Scope::Approval)) => {
            ask_items(app, scope)
                .into_iter()
                .map(|(command, what)| (scope, command, what))
                .collect()
        }
        (Modal::Synthesis { .. }, _) => [
            (Command::ToggleArguments, "arguments"),
            (Command::Copy, "copy"),
            (Command::WriteFollowUp, "follow-up issue"),
            (Command::Back, "close"),
        ]
        .iter()
        .filter(|(command, _)| offers(app, *command))
        .map(|(command, what)| (Scope::Synthesis, *command, what.to_string()))
        .collect(),
        (Modal::Help(_), _) => vec![(Scope::Help, Command::Back, "close".to_string())],
        _ => FOOTER
            .iter()
            .map(|(command, what)| {
                let what = match command {
                    // "synthesis", "result": what this protocol calls its outcome.
                    Command::Synthesis => app.view.presentation.outcome_title.to_lowercase(),
                    // A protocol with standings shows them alone in the side panel.
                    Command::ToggleMap
                        if app.view.presentation.panels.contains(&SidePanel::Standings) =>
                    {
                        "options".to_string()
                    }
                    _ => what.to_string(),
                };
                (Scope::Screen, *command, what)
            })
            .collect(),
    };
    let mut spans = Vec::new();
    for (scope, command, what) in items {
        // One key each: the footer is a reminder; `?` lists every key.
        let keys = keymap.key(scope, command);
        if keys.is_empty() {
            continue;
        }
        spans.push(Span::styled(format!(" {keys} "), theme.accent));
        spans.push(Span::styled(format!("{what} "), theme.dim));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// Whether a key is worth offering for this debate: a protocol without follow-up drafts
/// offers no key to write one.
fn offers(app: &App, command: Command) -> bool {
    command != Command::WriteFollowUp || app.view.presentation.follow_up
}

pub(crate) fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let width = width.min(area.width);
    let height = height.min(area.height);
    Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    }
}

pub(crate) fn modal_block<'a>(title: &'a str, theme: &Theme) -> Block<'a> {
    titled_block(title, theme).border_style(theme.accent)
}

/// A bordered block with `title` in the accent colour, its border the theme's.
pub(crate) fn titled_block<'a>(title: &'a str, theme: &Theme) -> Block<'a> {
    Block::default()
        .borders(Borders::ALL)
        .border_set(theme.border_set())
        .border_style(theme.border)
        .title(Span::styled(format!(" {title} "), theme.accent))
}

/// The key list, by scope, straight from the keymap; `scopes` picks which screens' keys.
pub(crate) fn key_list(
    frame: &mut Frame,
    area: Rect,
    keymap: &Keymap,
    scopes: &[Scope],
    scroll: u16,
    theme: &Theme,
) {
    let sections: Vec<KeySection> = scopes
        .iter()
        .map(|scope| KeySection {
            heading: scope.heading().to_string(),
            keys: keymap
                .scope(*scope)
                .map(|b| (b.label(), b.help.to_string()))
                .collect(),
        })
        .collect();
    key_modal(frame, area, keymap, &sections, scroll, theme);
}

/// A heading of the key list and its keys (label, what it does).
pub(crate) struct KeySection {
    pub heading: String,
    pub keys: Vec<(String, String)>,
}

/// The key list's modal: its sections, scrolled on a small terminal.
fn key_modal(
    frame: &mut Frame,
    area: Rect,
    keymap: &Keymap,
    sections: &[KeySection],
    scroll: u16,
    theme: &Theme,
) {
    let mut lines = Vec::new();
    let mut widest = 0;
    for section in sections.iter().filter(|s| !s.keys.is_empty()) {
        widest = widest.max(section.heading.chars().count().saturating_sub(14));
        lines.push(Line::styled(section.heading.clone(), theme.accent));
        for (label, help) in &section.keys {
            widest = widest.max(help.chars().count());
            lines.push(Line::from(vec![
                Span::styled(format!("  {label:<12}"), theme.focus),
                Span::raw(help.clone()),
            ]));
        }
    }
    let rect = centered(area, widest as u16 + 18, lines.len() as u16 + 2);
    frame.render_widget(Clear, rect);
    let hint = format!(
        " {} {} scroll · {} or {} closes ",
        keymap.key(Scope::Screen, Command::ScrollUp),
        keymap.key(Scope::Screen, Command::ScrollDown),
        keymap.key(Scope::Screen, Command::Help),
        keymap.key(Scope::Help, Command::Back),
    );
    let block = modal_block("Keys", theme).title_bottom(Line::styled(hint, theme.dim));
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    // On a small terminal the list scrolls; it cannot scroll past its end.
    let top = (scroll as usize).min(lines.len().saturating_sub(inner.height as usize));
    frame.render_widget(Paragraph::new(lines).scroll((top as u16, 0)), inner);
}

/// The scopes the live screen's `?` can list, in that order.
pub const LIVE_HELP: [Scope; 8] = [
    Scope::Screen,
    Scope::Checkpoint,
    Scope::Conclusion,
    Scope::Editor,
    Scope::Synthesis,
    Scope::Approval,
    Scope::Choice,
    Scope::Help,
];

/// The side panel a live-screen command acts on, if any.
fn panel_of(command: Command) -> Option<SidePanel> {
    Some(match command {
        Command::ToggleCommitments => SidePanel::Commitments,
        Command::ToggleContext
        | Command::NextFact
        | Command::PreviousFact
        | Command::OpenSource => SidePanel::Context,
        Command::ToggleTopology => SidePanel::Topology,
        Command::ToggleLessons => SidePanel::Lessons,
        Command::ToggleVotes => SidePanel::Votes,
        Command::ToggleScores => SidePanel::Scores,
        Command::ToggleTests => SidePanel::Tests,
        Command::ToggleVersions => SidePanel::Versions,
        Command::ToggleMap
        | Command::NextArgument
        | Command::PreviousArgument
        | Command::ZoomIn
        | Command::ZoomOut
        | Command::MapUp
        | Command::MapDown
        | Command::HighlightSeat => SidePanel::Map,
        _ => return None,
    })
}

/// The live screen's key list for what is on it now (U15): first the keys of the question that
/// waits, then the screen's keys this debate can use (no code-debate or shared-context keys
/// where there are none; `q` says what it does here), then the other moments' keys.
fn live_key_sections(app: &App) -> Vec<KeySection> {
    let keymap = &app.keymap;
    let presentation = &app.view.presentation;
    let stack = presentation.stack();
    let code = presentation.panels.contains(&SidePanel::Versions);
    let usable = |command: Command| match panel_of(command) {
        None => true,
        Some(SidePanel::Tests | SidePanel::Versions) => code,
        // The panel's standings take the map's key; the map's other keys have nothing to act on.
        Some(SidePanel::Map) if stack.contains(&SidePanel::Standings) => {
            command == Command::ToggleMap
        }
        Some(panel) => stack.contains(&panel),
    };
    let section = |scope: Scope, heading: String| KeySection {
        heading,
        keys: keymap
            .scope(scope)
            .filter(|b| scope != Scope::Screen || usable(b.command))
            .map(|b| {
                let help = match (b.command, &app.watching) {
                    (Command::Quit, Some(_)) => {
                        "leave; the debate goes on where it runs".to_string()
                    }
                    (Command::Quit, None) if app.read_only => "leave the replay".to_string(),
                    _ => b.help.to_string(),
                };
                (b.label(), help)
            })
            .collect(),
    };
    let now = app.ask_scope().filter(|_| !app.read_only);
    let mut sections = Vec::new();
    if let Some(scope) = now {
        sections.push(section(
            scope,
            format!("Now: {}", scope.heading().to_lowercase()),
        ));
    }
    sections.push(section(Scope::Screen, Scope::Screen.heading().to_string()));
    for scope in LIVE_HELP {
        let asks = matches!(
            scope,
            Scope::Checkpoint | Scope::Conclusion | Scope::Editor | Scope::Approval | Scope::Choice
        );
        if Some(scope) == now || scope == Scope::Screen || (asks && app.read_only) {
            continue;
        }
        sections.push(section(scope, scope.heading().to_string()));
    }
    sections
}

fn help(frame: &mut Frame, area: Rect, app: &App, scroll: u16, theme: &Theme) {
    key_modal(
        frame,
        area,
        &app.keymap,
        &live_key_sections(app),
        scroll,
        theme,
    );
}

/// The decision document, then (when expanded) every perspective's full arguments.
fn synthesis_markdown(app: &App, expanded: &[bool]) -> String {
    let mut markdown = app
        .view
        .synthesis
        .as_ref()
        .map(|s| s.markdown.clone())
        .unwrap_or_default();
    let section_keys = app
        .keymap
        .binding(Scope::Synthesis, Command::ToggleSection)
        .map(|b| b.keys.clone())
        .unwrap_or_default();
    for (index, seat) in app.view.seats.iter().enumerate() {
        let heading = format!("{} {}: full arguments", seat.id, seat.perspective);
        if !expanded.get(index).copied().unwrap_or(false) {
            // A closed section: its heading and the key that opens it.
            let opener = match section_keys.get(index) {
                Some(key) => format!(" (press {})", super::keymap::key_name(*key)),
                None => String::new(),
            };
            markdown.push_str(&format!("\n\n---\n\n**▸ {heading}**{opener}\n"));
            continue;
        }
        markdown.push_str(&format!("\n\n---\n\n## ▾ {heading}\n"));
        for turn in app.view.turns.iter().filter(|t| t.seat == seat.id) {
            markdown.push_str(&format!(
                "\n### Round {} · {}\n\n{}\n",
                turn.round,
                turn.phase.as_str(),
                turn.content.trim()
            ));
        }
    }
    markdown
}

/// The synthesis view's bottom line: where the document is, and the keys it offers (or the
/// latest notice).
fn synthesis_hint(app: &App, expanded: &[bool]) -> String {
    let document = app.view.synthesis.as_ref();
    let draft = document.is_some_and(|d| d.draft);
    let place = match document.and_then(|d| d.path.clone()) {
        Some(path) => path,
        // A contested panel's draft waits for the person's choice, not for an approval.
        None if draft && app.pending() == Some(AskKind::Choice) => {
            "draft, awaiting your choice".into()
        }
        None if draft => "draft, awaiting approval".into(),
        None => "not written to a file".into(),
    };
    let offered: Vec<(Command, &str)> = [
        (
            Command::ToggleArguments,
            if expanded.iter().all(|e| *e) {
                "hide arguments"
            } else {
                "show arguments"
            },
        ),
        (Command::Copy, "copy"),
        (Command::Pager, "pager"),
        (Command::Editor, "editor"),
        (Command::WriteFollowUp, "follow-up issue"),
        (Command::Back, "close"),
    ]
    .into_iter()
    .filter(|(command, _)| offers(app, *command))
    .collect();
    let keys = app.keymap.line(Scope::Synthesis, &offered);
    app.notice
        .clone()
        .unwrap_or_else(|| format!("{place} · {keys}"))
}

/// Draws the outcome view scrolled to `scroll` lines, or as far as its end allows; returns
/// where it is scrolled to.
fn synthesis(
    frame: &mut Frame,
    area: Rect,
    app: &App,
    caches: &mut Caches,
    scroll: u16,
    expanded: &[bool],
    theme: &Theme,
) -> u16 {
    let rect = Rect {
        x: area.x + 1,
        y: area.y + 1,
        width: area.width.saturating_sub(2),
        height: area.height.saturating_sub(2),
    };
    frame.render_widget(Clear, rect);
    let document = app.view.synthesis.as_ref();
    let hint = synthesis_hint(app, expanded);
    let block = modal_block(&app.view.presentation.outcome_title, theme)
        .title_bottom(Line::styled(format!(" {hint} "), theme.dim));
    let mut inner = block.inner(rect);
    frame.render_widget(block, rect);
    // While its approval waits, the answers sit on the first line of the view.
    if let Some(Scope::Approval) = app.ask_scope() {
        let lead = Span::styled(
            if app.pending() == Some(AskKind::RevisedApproval) {
                "The revised synthesis:"
            } else {
                "Approve this synthesis?"
            },
            theme.accent.add_modifier(Modifier::BOLD),
        );
        let lines = answer_lines(
            app,
            Scope::Approval,
            Some(lead),
            inner.width as usize,
            theme,
        );
        let height = (lines.len() as u16).min(inner.height);
        frame.render_widget(Paragraph::new(lines), Rect { height, ..inner });
        inner.y += height;
        inner.height = inner.height.saturating_sub(height);
    } else if document.is_some_and(|d| !d.draft)
        && app.view.presentation.follow_up
        && inner.height > 2
    {
        // The design note's follow-up: offered once the decision is final.
        let line = match &app.view.follow_up {
            Some(path) => Line::styled(format!("Follow-up issue draft: {path}"), theme.dim),
            None => Line::styled(
                format!(
                    "Create a follow-up issue draft from this decision? [{}]",
                    app.keymap.key(Scope::Synthesis, Command::WriteFollowUp)
                ),
                theme.accent,
            ),
        };
        frame.render_widget(Paragraph::new(line), Rect { height: 1, ..inner });
        inner.y += 1;
        inner.height -= 1;
    }
    let width = inner.width.saturating_sub(1) as usize;
    let fresh = caches.synthesis.as_ref().is_some_and(|c| {
        c.width == width && c.expanded.as_slice() == expanded && c.generation == app.view.generation
    });
    if !fresh {
        let lines = super::markdown::render(
            &synthesis_markdown(app, expanded),
            width,
            theme,
            theme.depth,
        );
        caches.synthesis = Some(RenderedSynthesis {
            width,
            expanded: expanded.to_vec(),
            generation: app.view.generation,
            lines,
        });
    }
    let Some(RenderedSynthesis { lines, .. }) = &caches.synthesis else {
        return scroll;
    };
    let top = (scroll as usize).min(lines.len().saturating_sub(inner.height as usize));
    let visible: Vec<Line> = lines
        .iter()
        .skip(top)
        .take(inner.height as usize)
        .cloned()
        .collect();
    frame.render_widget(Paragraph::new(visible), inner);
    top as u16
}
