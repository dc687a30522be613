//! The side panels: each seat's commitment store, and the argument map (arguments layered by
//! round with their scores, each followed by the relations that point at it).

use crate::debate::Relation;
use crate::tui::app::App;
use crate::tui::theme::Theme;
use crate::tui::wrap::wrap;
use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

pub fn draw(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let areas: Vec<Rect> = match (app.panels.commitments, app.panels.map) {
        (true, true) => Layout::default()
            .direction(Direction::Vertical)
            .constraints([Constraint::Percentage(45), Constraint::Percentage(55)])
            .split(area)
            .to_vec(),
        _ => vec![area],
    };
    let mut next = areas.into_iter();
    if app.panels.commitments
        && let Some(area) = next.next()
    {
        commitments(frame, area, app, theme);
    }
    if app.panels.map
        && let Some(area) = next.next()
    {
        map(frame, area, app, theme);
    }
}

fn panel<'a>(title: &'a str, theme: &Theme) -> Block<'a> {
    Block::default()
        .borders(Borders::ALL)
        .border_set(theme.border_set())
        .border_style(theme.border)
        .title(Span::styled(format!(" {title} "), theme.accent))
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

fn relation_glyph(kind: Relation, theme: &Theme) -> (&'static str, ratatui::style::Style) {
    match (kind, theme.ascii) {
        (Relation::Support, false) => ("⇐ supports", theme.support),
        (Relation::Rebut, false) => ("✕ rebuts", theme.rebut),
        (Relation::Undercut, false) => ("↯ undercuts", theme.undercut),
        (Relation::Support, true) => ("<= supports", theme.support),
        (Relation::Rebut, true) => ("x  rebuts", theme.rebut),
        (Relation::Undercut, true) => ("~> undercuts", theme.undercut),
    }
}

fn map(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let block = panel("Argument map", theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let graph = &app.view.graph;
    let width = inner.width.saturating_sub(1) as usize;
    let mut lines = Vec::new();
    let mut round = 0;
    for argument in &graph.arguments {
        if argument.round != round {
            round = argument.round;
            lines.push(Line::styled(format!("round {round}"), theme.dim));
        }
        let seat_index = app
            .view
            .seats
            .iter()
            .position(|s| s.id == argument.seat)
            .unwrap_or(0);
        let score_style = if argument.score >= 0.5 {
            theme.support
        } else {
            theme.rebut
        };
        let mut head = vec![
            Span::styled(
                format!("[{}] ", argument.id),
                theme.seat(seat_index).add_modifier(Modifier::BOLD),
            ),
            Span::styled(format!("{:.2} ", argument.score), score_style),
        ];
        if argument.retracted {
            head.push(Span::styled("retracted ", theme.dim));
        }
        if !argument.conceded_by.is_empty() {
            head.push(Span::styled(
                format!("conceded by {} ", argument.conceded_by.join(",")),
                theme.support,
            ));
        }
        let text_width = width.saturating_sub(
            head.iter()
                .map(|s| s.content.chars().count())
                .sum::<usize>(),
        );
        let text: String = argument.text.chars().take(text_width.max(8)).collect();
        head.push(Span::styled(
            text,
            if argument.retracted {
                theme.dim.add_modifier(Modifier::CROSSED_OUT)
            } else {
                theme.text
            },
        ));
        lines.push(Line::from(head));
        for edge in graph.relations.iter().filter(|e| e.to == argument.id) {
            let (glyph, style) = relation_glyph(edge.kind, theme);
            lines.push(Line::from(vec![
                Span::styled(format!("   {glyph} "), style),
                Span::styled(format!("by {}", edge.from), theme.dim),
            ]));
        }
    }
    if lines.is_empty() {
        lines.push(Line::styled("No arguments yet.", theme.dim));
    }
    let overflow = lines.len().saturating_sub(inner.height as usize);
    frame.render_widget(Paragraph::new(lines).scroll((overflow as u16, 0)), inner);
}
