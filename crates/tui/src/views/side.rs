//! The side panels, one `SideView` each, stacked in the order the protocol's presentation
//! lists them: the shared context K, each seat's commitment store, the argument map
//! (arguments layered by round with their scores, each followed by the relations that point at
//! it), standings, votes, scores, lessons, the topology and a code debate's hooks and versions.

use crate::app::{App, MapDrawing, MapKey};
use crate::debate::{Relation, SidePanel};
use crate::keymap::{Command, Scope};
use crate::theme::Theme;
use crate::wrap::wrap;
use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};

/// How much of the column a panel asks for. Whatever panel shows last takes what is left.
enum Height {
    /// Its rows of content plus `border`, at most `1/share` of what is left.
    Rows {
        rows: usize,
        border: u16,
        share: u16,
    },
    /// This percentage of what is left.
    Part(u16),
}

/// One side panel: the room it asks for (None when it has nothing to show now) and how it
/// draws. The column is the presentation's panels in its order, each the person has not
/// hidden.
trait SideView: Sync {
    fn height(&self, app: &App, area: Rect) -> Option<Height>;
    fn draw(&self, frame: &mut Frame, area: Rect, app: &mut App, theme: &Theme);
}

/// The view that draws `panel`.
fn view_of(panel: SidePanel) -> &'static dyn SideView {
    match panel {
        SidePanel::Topology => &TopologyView,
        SidePanel::Lessons => &LessonsView,
        SidePanel::Votes => &VotesView,
        SidePanel::Scores => &ScoresView,
        SidePanel::Context => &ContextView,
        SidePanel::Commitments => &CommitmentsView,
        SidePanel::Map => &MapPanel,
        SidePanel::Standings => &StandingsView,
        SidePanel::Tests => &TestsView,
        SidePanel::Versions => &VersionsView,
    }
}

/// Who sees whom (a topology other than mesh).
struct TopologyView;
impl SideView for TopologyView {
    fn height(&self, app: &App, _: Rect) -> Option<Height> {
        let view = app.view.topology.as_ref()?;
        Some(Height::Rows {
            rows: view.sees.len(),
            border: 2,
            share: 3,
        })
    }
    fn draw(&self, frame: &mut Frame, area: Rect, app: &mut App, theme: &Theme) {
        topology(frame, area, app, theme);
    }
}

/// The hook runs, version by version: a code debate's (its versions beside) from the start,
/// any other debate's once one ran.
struct TestsView;
impl SideView for TestsView {
    fn height(&self, app: &App, _: Rect) -> Option<Height> {
        let code = app.view.presentation.panels.contains(&SidePanel::Versions);
        (code || !app.view.hooks.is_empty()).then(|| Height::Rows {
            rows: app.view.hooks.len().max(1),
            border: 2,
            share: 3,
        })
    }
    fn draw(&self, frame: &mut Frame, area: Rect, app: &mut App, theme: &Theme) {
        hooks(frame, area, app, theme);
    }
}

/// A code debate's versions, the latest one's diff highlighted.
struct VersionsView;
impl SideView for VersionsView {
    fn height(&self, _: &App, _: Rect) -> Option<Height> {
        Some(Height::Part(60))
    }
    fn draw(&self, frame: &mut Frame, area: Rect, app: &mut App, theme: &Theme) {
        versions(frame, area, app, theme);
    }
}

/// The lessons this debate was given.
struct LessonsView;
impl SideView for LessonsView {
    fn height(&self, app: &App, area: Rect) -> Option<Height> {
        if app.view.lessons.is_empty() {
            return None;
        }
        let width = area.width.saturating_sub(2) as usize;
        let rows = app
            .view
            .lessons
            .iter()
            .map(|l| wrap(&format!("L{} {}", l.id, l.text), width).len() + 1)
            .sum();
        Some(Height::Rows {
            rows,
            border: 2,
            share: 3,
        })
    }
    fn draw(&self, frame: &mut Frame, area: Rect, app: &mut App, theme: &Theme) {
        lessons(frame, area, app, theme);
    }
}

/// The closing vote.
struct VotesView;
impl SideView for VotesView {
    fn height(&self, app: &App, _: Rect) -> Option<Height> {
        let votes = app.view.votes.as_ref()?;
        Some(Height::Rows {
            rows: votes.candidates.len(),
            border: 4,
            share: 2,
        })
    }
    fn draw(&self, frame: &mut Frame, area: Rect, app: &mut App, theme: &Theme) {
        votes(frame, area, app, theme);
    }
}

/// The rubric scores.
struct ScoresView;
impl SideView for ScoresView {
    fn height(&self, app: &App, _: Rect) -> Option<Height> {
        (!app.view.scores.is_empty()).then_some(Height::Rows {
            rows: app.view.scores.len(),
            border: 3,
            share: 2,
        })
    }
    fn draw(&self, frame: &mut Frame, area: Rect, app: &mut App, theme: &Theme) {
        scores(frame, area, app, theme);
    }
}

/// The shared context K.
struct ContextView;
impl SideView for ContextView {
    fn height(&self, _: &App, _: Rect) -> Option<Height> {
        Some(Height::Part(30))
    }
    fn draw(&self, frame: &mut Frame, area: Rect, app: &mut App, theme: &Theme) {
        context(frame, area, app, theme);
    }
}

/// Each seat's commitment store.
struct CommitmentsView;
impl SideView for CommitmentsView {
    fn height(&self, _: &App, _: Rect) -> Option<Height> {
        Some(Height::Part(45))
    }
    fn draw(&self, frame: &mut Frame, area: Rect, app: &mut App, theme: &Theme) {
        commitments(frame, area, app, theme);
    }
}

/// The argument map.
struct MapPanel;
impl SideView for MapPanel {
    fn height(&self, _: &App, _: Rect) -> Option<Height> {
        Some(Height::Part(55))
    }
    fn draw(&self, frame: &mut Frame, area: Rect, app: &mut App, theme: &Theme) {
        map(frame, area, app, theme);
    }
}

/// The candidates of a panel debate with their backers per round.
struct StandingsView;
impl SideView for StandingsView {
    fn height(&self, _: &App, _: Rect) -> Option<Height> {
        Some(Height::Part(60))
    }
    fn draw(&self, frame: &mut Frame, area: Rect, app: &mut App, theme: &Theme) {
        standings(frame, area, app, theme);
    }
}

/// The panels that show now, top to bottom, with the room each asks for (lazily, so a caller
/// that needs only the first sizes no more).
fn shown(app: &App, area: Rect) -> impl Iterator<Item = (&'static dyn SideView, Height)> + '_ {
    app.view
        .presentation
        .stack()
        .into_iter()
        .filter(|panel| app.panels.shows(*panel))
        .filter_map(move |panel| {
            let view = view_of(panel);
            view.height(app, area).map(|height| (view, height))
        })
}

/// Whether any side panel has something to show that the person has not hidden (it stops
/// at the first that has).
pub fn any_shown(app: &App, area: Rect) -> bool {
    shown(app, area).next().is_some()
}

pub fn draw(frame: &mut Frame, area: Rect, app: &mut App, theme: &Theme) {
    let panels: Vec<_> = shown(app, area).collect();
    let last = panels.len().saturating_sub(1);
    let mut area = area;
    for (i, (view, height)) in panels.into_iter().enumerate() {
        let constraints = match height {
            _ if i == last => [Constraint::Percentage(100), Constraint::Percentage(0)],
            Height::Part(part) => [
                Constraint::Percentage(part),
                Constraint::Percentage(100 - part),
            ],
            Height::Rows {
                rows,
                border,
                share,
            } => [
                Constraint::Length((rows as u16 + border).min(area.height / share)),
                Constraint::Min(0),
            ],
        };
        let [top, rest] = split(area, constraints);
        view.draw(frame, top, app, theme);
        area = rest;
    }
}

/// `area` cut in two, top to bottom, by `constraints`.
fn split(area: Rect, constraints: [Constraint; 2]) -> [Rect; 2] {
    Layout::default()
        .direction(Direction::Vertical)
        .constraints(constraints)
        .areas(area)
}

/// The candidates with a bar of their backers per round, the round's check, and every change.
fn standings(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let block = panel("Options", theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let width = inner.width as usize;
    let mut lines: Vec<Line> = Vec::new();
    let Some(view) = &app.view.standings else {
        lines.push(Line::styled(
            "Waiting for the first round's recommendations…",
            theme.dim,
        ));
        frame.render_widget(Paragraph::new(lines), inner);
        return;
    };
    let seat_index = |id: &str| app.view.seats.iter().position(|s| s.id == id).unwrap_or(0);
    let total = app.view.seats.len().max(1);
    for standing in &view.standings {
        for (i, line) in wrap(&format!("{} {}", standing.id, standing.label), width)
            .into_iter()
            .enumerate()
        {
            let style = if i == 0 {
                theme.text.add_modifier(Modifier::BOLD)
            } else {
                theme.text
            };
            lines.push(Line::styled(line, style));
        }
        for (round, backers) in standing.backers.iter().enumerate() {
            let bar_room = width.saturating_sub(12).max(1);
            let filled = (backers.len() * bar_room / total).max(usize::from(!backers.is_empty()));
            let mut spans = vec![Span::styled(format!(" r{} ", round + 1), theme.dim)];
            spans.push(Span::styled("█".repeat(filled), theme.accent));
            spans.push(Span::raw(format!(" {}", backers.len())));
            for backer in backers {
                spans.push(Span::styled(
                    format!(" {backer}"),
                    theme.seat(seat_index(backer)),
                ));
            }
            lines.push(Line::from(spans));
        }
    }
    lines.push(Line::default());
    for line in wrap(&view.headline, width) {
        lines.push(Line::styled(line, theme.accent));
    }
    if !view.changes.is_empty() {
        lines.push(Line::default());
        lines.push(Line::styled(
            "Change log",
            theme.dim.add_modifier(Modifier::BOLD),
        ));
        for change in &view.changes {
            lines.extend(
                wrap(change, width)
                    .into_iter()
                    .map(|l| Line::styled(l, theme.text)),
            );
        }
    }
    frame.render_widget(Paragraph::new(lines), inner);
}

/// Who sees whom: one line a seat, with the seats whose turns it is shown (a star's seats see
/// the moderator's summaries).
fn topology(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let Some(view) = &app.view.topology else {
        return;
    };
    let title = format!("Topology: {}", view.name);
    let block = panel(&title, theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let arrow = if theme.ascii { "<-" } else { "←" };
    let seat_index = |id: &str| app.view.seats.iter().position(|s| s.id == id).unwrap_or(0);
    let lines: Vec<Line> = view
        .sees
        .iter()
        .map(|(viewer, seen)| {
            let mut spans = vec![Span::styled(
                format!("{viewer} {arrow} "),
                theme.seat(seat_index(viewer)),
            )];
            if seen.is_empty() {
                spans.push(Span::styled("the moderator's summaries", theme.dim));
            }
            for (i, other) in seen.iter().enumerate() {
                if i > 0 {
                    spans.push(Span::styled(", ", theme.dim));
                }
                // A tree names how a seat is seen: "A (lead's summary)", "moderator (root)".
                let id = other.split(" (").next().unwrap_or(other);
                let style = if app.view.seats.iter().any(|s| s.id == id) {
                    theme.seat(seat_index(id))
                } else {
                    theme.dim
                };
                spans.push(Span::styled(other.clone(), style));
            }
            Line::from(spans)
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

/// A code debate's tests: one line a hook run, newest last, passed or failed.
fn hooks(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let block = panel("Tests", theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if app.view.hooks.is_empty() {
        frame.render_widget(
            Paragraph::new(Line::styled("No hook has run yet.", theme.dim)),
            inner,
        );
        return;
    }
    let (pass, fail) = if theme.ascii {
        ("ok", "!!")
    } else {
        ("✓", "✗")
    };
    let shown = app.view.hooks.len().saturating_sub(inner.height as usize);
    let lines: Vec<Line> = app.view.hooks[shown..]
        .iter()
        .map(|(version, summary, passed)| {
            Line::from(vec![
                Span::styled(
                    format!("{} ", if *passed { pass } else { fail }),
                    if *passed { theme.accent } else { theme.warning },
                ),
                Span::styled(format!("v{version} {summary}"), theme.text),
            ])
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

/// A code debate's versions, newest last, then the newest one's diff highlighted (syntect's
/// diff syntax), cut to the panel's height.
fn versions(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let block = panel("Versions", theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let Some(latest) = app.view.versions.last() else {
        frame.render_widget(
            Paragraph::new(Line::styled("No version is written yet.", theme.dim)),
            inner,
        );
        return;
    };
    let (pass, fail, untested) = if theme.ascii {
        ("ok", "!!", "--")
    } else {
        ("✓", "✗", "·")
    };
    let width = inner.width as usize;
    // The list takes at most half the panel; the diff the rest.
    let listed = app
        .view
        .versions
        .len()
        .min(inner.height as usize / 2)
        .max(1);
    let mut lines: Vec<Line> = app.view.versions[app.view.versions.len() - listed..]
        .iter()
        .map(|v| {
            let (mark, style) = match v.passes {
                Some(true) => (pass, theme.accent),
                Some(false) => (fail, theme.warning),
                None => (untested, theme.dim),
            };
            let text: String = format!(
                "v{} {} · {}",
                v.number,
                v.phase.replace('_', "-"),
                v.summary
            )
            .chars()
            .take(width.saturating_sub(3))
            .collect();
            Line::from(vec![
                Span::styled(format!("{mark} "), style),
                Span::styled(text, theme.text),
            ])
        })
        .collect();
    // The newest change: a version that changed nothing points at the one that did.
    let changed = app.view.versions.iter().rev().find(|v| !v.diff.is_empty());
    let heading = match changed {
        Some(v) if v.number == latest.number => format!("diff to v{}", v.number),
        Some(v) => format!("v{} changed nothing; diff to v{}", latest.number, v.number),
        None => "no version changed a file".to_string(),
    };
    lines.push(Line::styled(
        heading,
        theme.dim.add_modifier(Modifier::BOLD),
    ));
    if let Some(v) = changed {
        let fence = format!("```diff\n{}\n```", v.diff.trim_end());
        lines.extend(crate::markdown::render(&fence, width, theme, theme.depth));
    }
    frame.render_widget(Paragraph::new(lines), inner);
}

/// Lessons from earlier debates: each with its id and source, as the seats were given them.
fn lessons(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let block = panel("Lessons from earlier debates", theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let width = inner.width as usize;
    let mut lines: Vec<Line> = Vec::new();
    for lesson in &app.view.lessons {
        let head = format!("L{} ", lesson.id);
        for (i, line) in wrap(&format!("{head}{}", lesson.text), width)
            .into_iter()
            .enumerate()
        {
            lines.push(Line::styled(
                line,
                if i == 0 { theme.text } else { theme.dim },
            ));
        }
        lines.push(Line::styled(
            format!(
                "   from {} · {:.0}%",
                lesson.source,
                lesson.confidence * 100.0
            ),
            theme.dim,
        ));
    }
    frame.render_widget(Paragraph::new(lines), inner);
}

/// The closing vote: a bar of points per candidate, the winner marked, how it was decided.
fn votes(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let Some(votes) = &app.view.votes else { return };
    let block = panel("Votes", theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let width = inner.width as usize;
    let most = votes.points.iter().copied().fold(0.0, f64::max).max(1.0);
    let mut lines: Vec<Line> = Vec::new();
    for (i, (id, label)) in votes.candidates.iter().enumerate() {
        let points = votes.points.get(i).copied().unwrap_or(0.0);
        let won = votes.winner.as_deref() == Some(id.as_str());
        let label_width = (width / 3).clamp(8, 24);
        let label: String = label.chars().take(label_width).collect();
        let head = format!("{} {label:<label_width$} ", if won { "★" } else { " " });
        let room = width.saturating_sub(head.chars().count() + 6).max(1);
        let filled = ((points / most) * room as f64).round() as usize;
        lines.push(Line::from(vec![
            Span::styled(head, if won { theme.accent } else { theme.text }),
            Span::styled("█".repeat(filled), theme.accent),
            Span::styled(format!(" {points:.1}"), theme.dim),
        ]));
    }
    let outcome = match (&votes.winner, votes.consensus_reached) {
        (Some(winner), true) => format!("{}: {winner}", votes.method),
        _ => format!("{}: no consensus", votes.method),
    };
    let mut tail = outcome;
    if votes.fallback_used {
        tail.push_str(" (Condorcet cycle: Borda decided)");
    }
    if let Some(tie) = &votes.tie {
        tail.push_str(&format!(" · tie: {tie}"));
    }
    for line in wrap(&tail, width) {
        lines.push(Line::styled(line, theme.dim));
    }
    frame.render_widget(Paragraph::new(lines), inner);
}

/// The rubric scores: one line a scored argument, its gradual score beside it.
fn scores(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let block = panel("Scores (rubric · gradual)", theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let seat_index = |id: &str| app.view.seats.iter().position(|s| s.id == id).unwrap_or(0);
    let width = inner.width as usize;
    let lines: Vec<Line> = app
        .view
        .scores
        .iter()
        .rev()
        .map(|s| {
            let head = format!(
                "#{:<3}{:<3} {:.2} · {} ",
                s.turn_number,
                s.seat,
                s.score,
                s.gradual.map_or("—".to_string(), |g| format!("{g:.2}"))
            );
            let room = width.saturating_sub(head.chars().count());
            let reason: String = s.reason.chars().take(room).collect();
            Line::from(vec![
                Span::styled(head, theme.seat(seat_index(&s.seat))),
                Span::styled(reason, theme.dim),
            ])
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

/// K: each fact with its source; the selected one (`(` `)`) opens with `o`.
fn context(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let key = |command| app.keymap.key(Scope::Screen, command);
    let hint = format!(
        "{} {} select · {} open",
        key(Command::PreviousFact),
        key(Command::NextFact),
        key(Command::OpenSource)
    );
    let block =
        panel("Context (K)", theme).title_bottom(Line::styled(format!(" {hint} "), theme.dim));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let width = inner.width as usize;
    let mut lines: Vec<Line> = Vec::new();
    let Some(k) = &app.view.shared_context else {
        lines.push(Line::styled(
            "Gathering facts from the codebase…",
            theme.dim,
        ));
        frame.render_widget(Paragraph::new(lines), inner);
        return;
    };
    if k.facts.is_empty() {
        lines.push(Line::styled("No shared facts.", theme.dim));
    }
    let bullet = if theme.ascii { "*" } else { "•" };
    let mut selected_line = 0;
    for (index, fact) in k.facts.iter().enumerate() {
        let selected = app.panels.fact == Some(index);
        if selected {
            selected_line = lines.len();
        }
        let style = if selected { theme.focus } else { theme.text };
        for (i, line) in wrap(&format!("{bullet} {}", fact.text), width)
            .into_iter()
            .enumerate()
        {
            lines.push(Line::styled(
                if i == 0 { line } else { format!("  {line}") },
                style,
            ));
        }
        lines.push(Line::styled(format!("  {}", fact.source), theme.dim));
    }
    for note in &k.notes {
        for line in wrap(note, width) {
            lines.push(Line::styled(line, theme.warning));
        }
    }
    // Keep the selected fact in view.
    let height = inner.height as usize;
    let scroll = selected_line.saturating_sub(height.saturating_sub(3));
    frame.render_widget(
        Paragraph::new(lines).scroll((u16::try_from(scroll).unwrap_or(u16::MAX), 0)),
        inner,
    );
}

fn panel<'a>(title: &'a str, theme: &Theme) -> Block<'a> {
    super::titled_block(title, theme)
}

fn commitments(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let block = panel("Commitments", theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let width = inner.width.saturating_sub(2) as usize;
    let mut lines = Vec::new();
    for (index, store) in app.view.commitments.iter().enumerate() {
        let name = app
            .view
            .seat(&store.seat)
            .map(|s| s.perspective.clone())
            .unwrap_or_default();
        lines.push(Line::styled(
            format!("{} {name}", store.seat),
            theme.seat(index).add_modifier(Modifier::BOLD),
        ));
        for commitment in &store.commitments {
            let marker = if commitment.conceded { "✓ " } else { "• " };
            let marker = if theme.ascii {
                if commitment.conceded { "+ " } else { "* " }
            } else {
                marker
            };
            for (i, line) in wrap(&commitment.text, width).into_iter().enumerate() {
                let prefix = if i == 0 { marker } else { "  " };
                let style = if commitment.conceded {
                    theme.support
                } else {
                    theme.text
                };
                lines.push(Line::styled(format!("{prefix}{line}"), style));
            }
        }
        for retraction in &store.retractions {
            for line in wrap(&retraction.text, width) {
                lines.push(Line::styled(
                    format!("  {line}"),
                    theme.dim.add_modifier(Modifier::CROSSED_OUT),
                ));
            }
        }
    }
    if lines.is_empty() {
        lines.push(Line::styled("No commitments yet.", theme.dim));
    }
    let overflow = lines.len().saturating_sub(inner.height as usize);
    frame.render_widget(Paragraph::new(lines).scroll((overflow as u16, 0)), inner);
}

/// A character grid the map is drawn on before the visible window is cut out of it.
struct Canvas {
    width: usize,
    cells: Vec<Vec<(char, ratatui::style::Style)>>,
}

impl Canvas {
    fn new(width: usize, height: usize) -> Canvas {
        Canvas {
            width,
            cells: vec![vec![(' ', ratatui::style::Style::default()); width]; height],
        }
    }

    fn put(&mut self, x: usize, y: usize, c: char, style: ratatui::style::Style) {
        if let Some(row) = self.cells.get_mut(y)
            && x < self.width
        {
            row[x] = (c, style);
        }
    }

    fn text(&mut self, x: usize, y: usize, text: &str, max: usize, style: ratatui::style::Style) {
        for (i, c) in text.chars().take(max).enumerate() {
            self.put(x + i, y, c, style);
        }
    }
}

/// Line glyphs per relation: (horizontal, vertical), so kinds differ without colour too.
fn strokes(kind: Relation) -> (char, char) {
    match kind {
        Relation::Support => ('─', '│'),
        Relation::Rebut => ('━', '┃'),
        Relation::Undercut => ('┄', '┆'),
    }
}

fn relation_style(kind: Relation, theme: &Theme) -> ratatui::style::Style {
    match kind {
        Relation::Support => theme.support,
        Relation::Rebut => theme.rebut,
        Relation::Undercut => theme.undercut,
    }
}

/// Arguments on the path through `selected`: everything it answers and everything answering
/// it, transitively.
fn path_through(graph: &crate::argue::ArgumentGraph, selected: usize) -> Vec<bool> {
    let edges = graph.edge_positions();
    let mut on = vec![false; graph.arguments.len()];
    if selected >= on.len() {
        return on;
    }
    on[selected] = true;
    for upward in [true, false] {
        let mut frontier = vec![selected];
        while let Some(node) = frontier.pop() {
            for &(from, to) in &edges {
                let next = if upward && from == node {
                    to
                } else if !upward && to == node {
                    from
                } else {
                    continue;
                };
                if !on[next] || next == selected {
                    if !on[next] {
                        frontier.push(next);
                    }
                    on[next] = true;
                }
            }
        }
    }
    on
}

fn map(frame: &mut Frame, area: Rect, app: &mut App, theme: &Theme) {
    let zoom = app.map.zoom;
    let title = format!("Argument map · zoom {} ", zoom + 1);
    let key = |command| app.keymap.key(Scope::Screen, command);
    let hint = format!(
        "{} {} select · {} {} zoom · {} {} scroll · {} seat",
        key(Command::PreviousArgument),
        key(Command::NextArgument),
        key(Command::ZoomIn),
        key(Command::ZoomOut),
        key(Command::MapUp),
        key(Command::MapDown),
        key(Command::HighlightSeat),
    );
    let block = panel(&title, theme).title_bottom(Line::styled(format!(" {hint} "), theme.dim));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let key = MapKey {
        scroll_back: app.map.scroll_back,
        generation: app.view.generation,
        zoom,
        selected: app.map.selected,
        seat: app.map.seat,
        area: inner,
    };
    if let Some(drawn) = &app.map.drawn
        && drawn.key == key
    {
        frame.render_widget(Paragraph::new(drawn.lines.clone()), inner);
        app.map.boxes = drawn.boxes.clone();
        return;
    }
    app.map.boxes.clear();
    let graph = &app.view.graph;
    if graph.arguments.is_empty() {
        frame.render_widget(
            Paragraph::new(Line::styled("No arguments yet.", theme.dim)),
            inner,
        );
        return;
    }
    let layout = crate::argue::map::layout(graph);
    let (box_width, box_height) = match zoom {
        0 => (12usize, 1usize),
        1 => (22, 3),
        _ => (30, 4),
    };
    let gap = 2;
    let widest = layout.layers.iter().map(Vec::len).max().unwrap_or(1);
    let canvas_width = widest * (box_width + gap) + 1;
    let canvas_height = layout.layers.len() * (box_height + gap);
    let mut canvas = Canvas::new(canvas_width, canvas_height);
    let origin = |index: usize| {
        let (layer, position) = layout.places[index];
        (1 + position * (box_width + gap), layer * (box_height + gap))
    };
    let index = graph.index();
    let on_path = app.map.selected.map(|s| path_through(graph, s));
    let highlight_seat = app
        .map
        .seat
        .and_then(|s| app.view.seats.get(s))
        .map(|s| s.id.clone());
    // Edges first; boxes drawn over them.
    for edge in &graph.relations {
        let (Some(&from), Some(&to)) = (index.get(edge.from.as_str()), index.get(edge.to.as_str()))
        else {
            continue;
        };
        let (fx, fy) = origin(from);
        let (tx, ty) = origin(to);
        if fy <= ty {
            continue;
        }
        let (horizontal, vertical) = strokes(edge.kind);
        let mut style = relation_style(edge.kind, theme);
        if let Some(path) = &on_path
            && !(path[from] && path[to])
        {
            style = theme.dim;
        }
        let child_x = fx + box_width / 2;
        let parent_x = tx + box_width / 2;
        let arrow_row = ty + box_height;
        let turn_row = arrow_row + 1;
        for y in turn_row..fy {
            canvas.put(child_x, y, vertical, style);
        }
        for x in child_x.min(parent_x)..=child_x.max(parent_x) {
            canvas.put(x, turn_row, horizontal, style);
        }
        let head = if theme.ascii { '^' } else { '▲' };
        canvas.put(parent_x, arrow_row, head, style);
    }
    for (i, argument) in graph.arguments.iter().enumerate() {
        let (x, y) = origin(i);
        let seat_index = app
            .view
            .seats
            .iter()
            .position(|s| s.id == argument.seat)
            .unwrap_or(0);
        let mut style = theme.seat(seat_index);
        let dimmed = highlight_seat
            .as_ref()
            .is_some_and(|seat| *seat != argument.seat)
            || on_path.as_ref().is_some_and(|path| !path[i]);
        if dimmed {
            style = theme.dim;
        }
        if app.map.selected == Some(i) {
            style = style.add_modifier(Modifier::REVERSED);
        }
        let score = format!("{:.2}", argument.score);
        let label = format!("{} {}", argument.id, score.trim_start_matches('0'));
        let text_style = if argument.withdrawn() {
            theme.dim.add_modifier(Modifier::CROSSED_OUT)
        } else if dimmed {
            theme.dim
        } else {
            theme.text
        };
        if box_height == 1 {
            canvas.text(x, y, &format!("[{label}]"), box_width, style);
        } else {
            let (h, v, corners) = ('─', '│', ['╭', '╮', '╰', '╯']);
            canvas.put(x, y, corners[0], style);
            for dx in 1..box_width - 1 {
                canvas.put(x + dx, y, h, style);
                canvas.put(x + dx, y + box_height - 1, h, style);
            }
            canvas.put(x + box_width - 1, y, corners[1], style);
            canvas.put(x, y + box_height - 1, corners[2], style);
            canvas.put(x + box_width - 1, y + box_height - 1, corners[3], style);
            canvas.text(
                x + 1,
                y,
                &label,
                box_width - 2,
                style.add_modifier(Modifier::BOLD),
            );
            let text: Vec<char> = argument.text.chars().collect();
            let line_width = box_width - 2;
            for row in 0..box_height - 2 {
                canvas.put(x, y + 1 + row, v, style);
                canvas.put(x + box_width - 1, y + 1 + row, v, style);
                let piece: String = text
                    .iter()
                    .skip(row * line_width)
                    .take(line_width)
                    .collect();
                canvas.text(x + 1, y + 1 + row, &piece, line_width, text_style);
            }
        }
    }
    // The window: follow the newest layer unless an argument is selected.
    let height = inner.height as usize;
    let width = inner.width as usize;
    let (focus_x, focus_y) = match app.map.selected {
        Some(i) if i < graph.arguments.len() => origin(i),
        _ => (0, canvas_height),
    };
    let top = if app.map.selected.is_some() {
        focus_y
            .saturating_sub(height / 3)
            .min(canvas_height.saturating_sub(height))
    } else {
        let newest = canvas_height.saturating_sub(height);
        app.map.scroll_back = app.map.scroll_back.min(newest);
        newest - app.map.scroll_back
    };
    let left = if focus_x + box_width > width {
        (focus_x + box_width).saturating_sub(width)
    } else {
        0
    };
    let lines: Vec<Line> = canvas
        .cells
        .iter()
        .skip(top)
        .take(height)
        .map(|row| {
            Line::from(
                row.iter()
                    .skip(left)
                    .take(width)
                    .map(|(c, style)| Span::styled(c.to_string(), *style))
                    .collect::<Vec<_>>(),
            )
        })
        .collect();
    frame.render_widget(Paragraph::new(lines.clone()), inner);
    let mut boxes = Vec::new();
    for i in 0..graph.arguments.len() {
        let (x, y) = origin(i);
        if y >= top && y < top + height && x >= left && x < left + width {
            let rect = Rect::new(
                inner.x + (x - left) as u16,
                inner.y + (y - top) as u16,
                box_width.min(left + width - x) as u16,
                1,
            );
            boxes.push((i, rect));
        }
    }
    app.map.boxes = boxes.clone();
    app.map.drawn = Some(MapDrawing { key, lines, boxes });
}
