//! Drawing: pure functions of the app state per screen region, composed here.

pub mod history;
pub mod pane;
pub mod side;

use super::app::{App, Modal};
use super::keymap::{self, Scope};
use super::theme::Theme;
use crate::tui::wrap::wrap;
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
    /// The rendered synthesis: (width, sections open, turns seen, lines).
    pub synthesis: Option<(usize, Vec<bool>, u64, Vec<Line<'static>>)>,
}

/// The screen commands worth a place in the footer; `?` lists the rest.
const FOOTER: [keymap::Command; 5] = [
    keymap::Command::Help,
    keymap::Command::FocusNext,
    keymap::Command::Synthesis,
    keymap::Command::ToggleMap,
    keymap::Command::Quit,
];

/// Below this width the seats show as tabs, one at a time.
const NARROW: u16 = 100;
/// From this width the side panels sit beside the panes.
const SIDE_BY_SIDE: u16 = 120;

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
    body(frame, rows[1], app, caches, theme);
    strip(frame, rows[2], app, theme);
    footer(frame, rows[3], app, theme);
    draw_modal(frame, area, app, caches, theme);
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
        Modal::Checkpoint => checkpoint(frame, area, app, theme),
        Modal::Guide(_) => guide(frame, area, app, theme),
        Modal::Help(scroll) => help(frame, area, *scroll, theme),
        Modal::Synthesis { scroll, expanded } => {
            let (scroll, expanded) = (*scroll, expanded.clone());
            synthesis(frame, area, app, caches, scroll, &expanded, theme)
        }
        Modal::None => {}
    }
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

fn header(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let view = &app.view;
    let status_style = match view.status.as_str() {
        "failed" => theme.error,
        "paused" | "cancelled" => theme.warning,
        _ => theme.accent,
    };
    let round = if view.max_rounds > 0 {
        format!("round {} of {}", view.round, view.max_rounds)
    } else {
        "analysing".to_string()
    };
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
        if crate::models::is_demonstration_model(&view.model) {
            meta.push(Span::styled(" (demo model, not an advisor)", theme.warning));
        }
    }
    if !view.id.is_empty() {
        meta.push(Span::styled(format!(" · {}", view.id), theme.dim));
    }
    if app.read_only {
        meta.push(Span::styled(" · replay", theme.warning));
    }
    frame.render_widget(Paragraph::new(vec![line1, Line::from(meta)]), area);
}

fn body(frame: &mut Frame, area: Rect, app: &mut App, caches: &mut Caches, theme: &Theme) {
    app.map.boxes.clear();
    let side_visible = app.panels.commitments || app.panels.map;
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
            None => "The moderator is reading the question…".to_string(),
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

fn strip(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    if area.height == 0 {
        return;
    }
    let view = &app.view;
    let mut spans = vec![Span::styled(" moderator ", theme.accent)];
    if let Some((round, phase)) = view.moderator.speaking {
        spans.push(Span::styled(
            format!(
                "{} {} of round {round} ",
                theme.spinner(app.spinner),
                phase.as_str()
            ),
            theme.dim,
        ));
    }
    if let Some(convergence) = &view.strip.convergence {
        spans.push(Span::styled(
            format!(
                "round {}: {} → {} ",
                view.strip.round,
                convergence.assessment.replace('_', " "),
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
                .map(move |(_, kind, _)| {
                    let kind = serde_json::to_value(kind)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default();
                    format!("{} {}", seat.id, kind.replace('_', " "))
                })
        })
        .collect();
    if !flags.is_empty() {
        spans.push(Span::styled(
            format!("flags: {} ", flags.join(", ")),
            theme.warning,
        ));
    }
    let mut lines = vec![Line::from(spans)];
    let text = match (&view.error, view.strip.summary.is_empty()) {
        (Some(error), _) => vec![Line::styled(error.clone(), theme.error)],
        (None, false) => wrap(&view.strip.summary, area.width.saturating_sub(2) as usize)
            .into_iter()
            .map(|l| Line::styled(format!(" {l}"), theme.text))
            .collect(),
        (None, true) => Vec::new(),
    };
    lines.extend(text);
    let block = Block::default()
        .borders(Borders::TOP)
        .border_set(theme.border_set())
        .border_style(theme.border);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    frame.render_widget(Paragraph::new(lines), inner);
}

fn footer(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let scope = match app.modal {
        Modal::Checkpoint => Scope::Checkpoint,
        Modal::Guide(_) => Scope::Editor,
        _ => Scope::Screen,
    };
    if let Some(notice) = &app.notice {
        frame.render_widget(
            Paragraph::new(Line::styled(format!(" {notice}"), theme.warning)),
            area,
        );
        return;
    }
    let mut spans = Vec::new();
    for (command, label, help) in keymap::hints(scope) {
        if scope == Scope::Screen && !FOOTER.contains(&command) {
            continue;
        }
        let short = help.split([':', '(']).next().unwrap_or(help).trim();
        spans.push(Span::styled(format!(" {label} "), theme.accent));
        spans.push(Span::styled(format!("{short} "), theme.dim));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
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
    Block::default()
        .borders(Borders::ALL)
        .border_set(theme.border_set())
        .border_style(theme.accent)
        .title(Span::styled(format!(" {title} "), theme.accent))
}

fn checkpoint(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let rect = centered(area, 64, 9);
    frame.render_widget(Clear, rect);
    let (title, question) = match (&app.view.clarification, app.view.checkpoint) {
        (Some(question), _) => ("The moderator asks".to_string(), question.clone()),
        (None, Some((round, timeout))) => (
            format!("Round {round} complete"),
            format!(
                "Continue, guide the next round, or end the debate. Unanswered, it pauses in {} min.",
                timeout / 60
            ),
        ),
        _ => ("Checkpoint".to_string(), String::new()),
    };
    let block = modal_block(&title, theme);
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let mut lines: Vec<Line> = wrap(&question, inner.width as usize)
        .into_iter()
        .map(Line::from)
        .collect();
    lines.push(Line::default());
    lines.push(Line::from(vec![
        Span::styled("[C]", theme.accent),
        Span::raw("ontinue   "),
        Span::styled("[G]", theme.accent),
        Span::raw(if app.view.clarification.is_some() {
            "ive an answer   "
        } else {
            "uide   "
        }),
        Span::styled("[E]", theme.accent),
        Span::raw("nd"),
    ]));
    lines.push(Line::styled(
        "The panes still scroll (↑↓ Tab) while this waits.",
        theme.dim,
    ));
    frame.render_widget(Paragraph::new(lines), inner);
}

fn guide(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let rect = centered(area, 72, 12);
    frame.render_widget(Clear, rect);
    let block = modal_block("Guidance for the next round", theme)
        .title_bottom(Line::styled(" Ctrl-S send · Esc back ", theme.dim));
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    if let Modal::Guide(editor) = &app.modal {
        frame.render_widget(&**editor, inner);
    }
}

fn help(frame: &mut Frame, area: Rect, scroll: u16, theme: &Theme) {
    let rows = keymap::BINDINGS.len() as u16 + 8;
    let widest = keymap::BINDINGS
        .iter()
        .map(|b| b.help.chars().count())
        .max()
        .unwrap_or(40) as u16;
    let rect = centered(area, widest + 16, rows);
    frame.render_widget(Clear, rect);
    let block = modal_block("Keys", theme)
        .title_bottom(Line::styled(" ↑↓ scroll · ? or Esc closes ", theme.dim));
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let mut lines = Vec::new();
    for (scope, heading) in [
        (Scope::Screen, "Anywhere"),
        (Scope::Checkpoint, "At a checkpoint"),
        (Scope::Editor, "Writing guidance"),
        (Scope::Synthesis, "In the synthesis"),
    ] {
        lines.push(Line::styled(heading, theme.accent));
        for binding in keymap::BINDINGS.iter().filter(|b| b.scope == scope) {
            lines.push(Line::from(vec![
                Span::styled(format!("  {:<10}", keymap::label(binding)), theme.focus),
                Span::raw(binding.help),
            ]));
        }
    }
    // On a small terminal the list scrolls; it cannot scroll past its end.
    let top = (scroll as usize).min(lines.len().saturating_sub(inner.height as usize));
    frame.render_widget(Paragraph::new(lines).scroll((top as u16, 0)), inner);
}

/// The decision document, then (when expanded) every perspective's full arguments.
fn synthesis_markdown(app: &App, expanded: &[bool]) -> String {
    let mut markdown = app
        .view
        .synthesis
        .as_ref()
        .map(|(m, _, _)| m.clone())
        .unwrap_or_default();
    for (index, seat) in app.view.seats.iter().enumerate() {
        let heading = format!("{} {}: full arguments", seat.id, seat.perspective);
        if !expanded.get(index).copied().unwrap_or(false) {
            // A closed section: its heading and the key that opens it.
            markdown.push_str(&format!(
                "\n\n---\n\n**▸ {heading}** (press {})\n",
                index + 1
            ));
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

fn synthesis(
    frame: &mut Frame,
    area: Rect,
    app: &App,
    caches: &mut Caches,
    scroll: u16,
    expanded: &[bool],
    theme: &Theme,
) {
    let rect = Rect {
        x: area.x + 1,
        y: area.y + 1,
        width: area.width.saturating_sub(2),
        height: area.height.saturating_sub(2),
    };
    frame.render_widget(Clear, rect);
    let path = app.view.synthesis.as_ref().and_then(|(_, _, p)| p.clone());
    let hint = app.notice.clone().unwrap_or_else(|| {
        format!(
            "{} · f {} arguments · y copy · o pager · E editor · Esc",
            path.unwrap_or_else(|| "not written to a file".into()),
            if expanded.iter().all(|e| *e) {
                "hide"
            } else {
                "show"
            }
        )
    });
    let block =
        modal_block("Synthesis", theme).title_bottom(Line::styled(format!(" {hint} "), theme.dim));
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let width = inner.width.saturating_sub(1) as usize;
    let fresh = matches!(&caches.synthesis, Some((w, e, g, _)) if *w == width && e.as_slice() == expanded && *g == app.view.generation);
    if !fresh {
        let lines = super::markdown::render(
            &synthesis_markdown(app, expanded),
            width,
            theme,
            theme.depth,
        );
        caches.synthesis = Some((width, expanded.to_vec(), app.view.generation, lines));
    }
    let Some((_, _, _, lines)) = &caches.synthesis else {
        return;
    };
    let top = (scroll as usize).min(lines.len().saturating_sub(1));
    let visible: Vec<Line> = lines
        .iter()
        .skip(top)
        .take(inner.height as usize)
        .cloned()
        .collect();
    frame.render_widget(Paragraph::new(visible), inner);
}
