//! The history screen: stored debates with incremental search and a preview, the delete
//! confirmation and the new-debate form.

use super::{centered, modal_block};
use crate::debate::Named as _;
use crate::debate::{Confidence, DebateStatus};
use crate::history::{Field, History};
use crate::keymap::{Command, Scope};
use crate::theme::Theme;
use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, List, ListItem, ListState, Paragraph};

/// The search box's keys, for the footer while typing a search.
const SEARCH_FOOTER: &[(Command, &str)] = &[
    (Command::FinishSearch, "keep the search"),
    (Command::Cancel, "clear it"),
];

/// The delete confirmation's key, for the footer while it asks.
const CONFIRM_FOOTER: &[(Command, &str)] = &[(Command::Confirm, "delete (any other key keeps it)")];

/// The form's keys, for the footer while it is open.
const FORM_FOOTER: &[(Command, &str)] = &[
    (Command::NextField, "next field"),
    (Command::Decrease, ""),
    (Command::Increase, "change"),
    (Command::Toggle, "choose"),
    (Command::SubmitGuidance, "start"),
    (Command::Cancel, "cancel"),
];

/// The history commands worth a place in the footer, with the word it uses.
const FOOTER: &[(Command, &str)] = &[
    (Command::Open, "open"),
    (Command::Resume, "resume"),
    (Command::Delete, "delete"),
    (Command::Search, "search"),
    (Command::NewDebate, "new debate"),
    (Command::Help, "keys"),
    (Command::Quit, "quit"),
];

pub fn draw(frame: &mut Frame, history: &History, theme: &Theme) {
    let area = frame.area();
    if super::too_small(frame) {
        return;
    }
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(1),
            Constraint::Length(1),
            Constraint::Min(3),
            Constraint::Length(1),
        ])
        .split(area);
    header(frame, [rows[0], rows[1]], history, theme);
    let columns = if rows[2].width >= 100 {
        Layout::default()
            .direction(Direction::Horizontal)
            // The list is what is scanned: it gets the wider share (U16).
            .constraints([Constraint::Percentage(62), Constraint::Percentage(38)])
            .split(rows[2])
            .to_vec()
    } else {
        vec![rows[2]]
    };
    list(frame, columns[0], history, theme);
    if let Some(area) = columns.get(1) {
        preview(frame, *area, history, theme);
    }
    // The footer names the keys that work now (U17): under the form or while a search is
    // typed, the list's keys would type characters or do nothing.
    let (scope, keys) = if history.form.is_some() {
        (Scope::Form, FORM_FOOTER)
    } else if history.confirm_delete.is_some() {
        (Scope::Confirm, CONFIRM_FOOTER)
    } else if history.searching {
        (Scope::Search, SEARCH_FOOTER)
    } else {
        (Scope::History, FOOTER)
    };
    let footer = match &history.message {
        Some(message) if scope == Scope::History => {
            Line::styled(format!(" {message}"), theme.warning)
        }
        _ => Line::from(
            keys.iter()
                .flat_map(|(command, what)| {
                    [
                        Span::styled(
                            format!(" {} ", history.keymap.key(scope, *command)),
                            theme.accent,
                        ),
                        Span::styled(format!("{what} "), theme.dim),
                    ]
                })
                .collect::<Vec<_>>(),
        ),
    };
    frame.render_widget(Paragraph::new(footer), rows[3]);
    if let Some(id) = &history.confirm_delete {
        confirm_delete(frame, area, id, history, theme);
    }
    if history.form.is_some() {
        form(frame, area, history, theme);
    }
    if let Some(scroll) = history.help {
        super::key_list(
            frame,
            area,
            &history.keymap,
            &[Scope::History, Scope::Search, Scope::Confirm, Scope::Form],
            scroll,
            theme,
        );
    }
    if theme.ascii {
        super::asciify(frame.buffer_mut());
    }
}

/// The title line and the search line.
fn header(frame: &mut Frame, rows: [Rect; 2], history: &History, theme: &Theme) {
    let mut title = vec![
        Span::styled(" moot ", theme.accent.add_modifier(Modifier::REVERSED)),
        Span::styled(
            match history.rows.len() {
                1 => " history · 1 debate".to_string(),
                n => format!(" history · {n} debates"),
            },
            theme.dim,
        ),
    ];
    if let Some(server) = &history.server {
        let theirs = history.rows.iter().filter(|r| r.on_server).count();
        let answered = server.answered.as_deref() == Some(history.query.as_str());
        title.push(match (&server.problem, answered) {
            (Some(problem), _) => {
                Span::styled(format!(" · @ {}: {problem}", server.base), theme.warning)
            }
            (None, false) => Span::styled(format!(" · @ asking {}…", server.base), theme.dim),
            (None, true) => {
                Span::styled(format!(" · @ {theirs} only on {}", server.base), theme.dim)
            }
        });
    }
    let title = Line::from(title);
    frame.render_widget(Paragraph::new(title), rows[0]);
    let search_key = history.keymap.hint(Scope::History, Command::Search);
    let search = if history.searching || !history.query.is_empty() {
        Line::from(vec![
            Span::styled(format!(" {search_key} "), theme.accent),
            Span::raw(history.query.clone()),
            Span::styled(if history.searching { "▏" } else { "" }, theme.focus),
        ])
    } else {
        Line::styled(
            format!(" {search_key} to search questions, arguments, guidance and syntheses"),
            theme.dim,
        )
    };
    frame.render_widget(Paragraph::new(search), rows[1]);
}

/// The question before a debate is deleted.
fn confirm_delete(frame: &mut Frame, area: Rect, id: &str, history: &History, theme: &Theme) {
    let rect = centered(area, 50, 5);
    frame.render_widget(Clear, rect);
    let block = modal_block("Delete", theme);
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    frame.render_widget(
        Paragraph::new(vec![
            Line::raw(format!("Delete {id} and its journal?")),
            Line::styled(
                format!(
                    "{} deletes · any other key keeps it",
                    history.keymap.hint(Scope::Confirm, Command::Confirm)
                ),
                theme.dim,
            ),
        ]),
        inner,
    );
}

fn status_style(status: DebateStatus, theme: &Theme) -> ratatui::style::Style {
    match status {
        DebateStatus::Completed => theme.support,
        DebateStatus::Failed => theme.error,
        DebateStatus::Paused | DebateStatus::Running | DebateStatus::Interrupted => theme.warning,
        _ => theme.dim,
    }
}

/// The list's columns: status, id (without `DEB-`, which every command takes as a prefix),
/// day, protocol, confidence; the question takes the rest.
const COLUMNS: &str = "STATUS      ID       DAY   PROTOCOL  CONF   QUESTION";

fn list(frame: &mut Frame, area: Rect, history: &History, theme: &Theme) {
    // The column names stand on the list's top border, so they cost no row (U16).
    let block = Block::default()
        .borders(Borders::ALL)
        .border_set(theme.border_set())
        .border_style(theme.border)
        .title(Span::styled(
            format!(
                " {}{COLUMNS} ",
                if history.server.is_some() { "  " } else { "" }
            ),
            theme.dim,
        ));
    let inner_width = block.inner(area).width as usize;
    if history.rows.is_empty() {
        let text = if history.query.is_empty() {
            "No debates yet. Press n to start one."
        } else {
            "Nothing matches."
        };
        frame.render_widget(
            Paragraph::new(Line::styled(text, theme.dim)).block(block),
            area,
        );
        return;
    }
    // Only the rows that can show are built, so a long history costs the same as a short one.
    let height = block.inner(area).height as usize;
    let rows_per_item = if history.query.is_empty() { 1 } else { 2 };
    let visible = (height / rows_per_item).max(1);
    let first = history.selected.saturating_sub(visible - 1);
    let items: Vec<ListItem> = history
        .rows
        .iter()
        .skip(first)
        .take(visible)
        .map(|row| {
            let summary = &row.summary;
            // With a server configured, its debates are marked `@` in a column of their own.
            let marker = match (&history.server, row.on_server) {
                (None, _) => "",
                (Some(_), true) => "@ ",
                (Some(_), false) => "  ",
            };
            let head = format!(
                "{:<12}{:<9}{:<6}{:<10}{:<7}",
                summary.status,
                summary.id.strip_prefix("DEB-").unwrap_or(&summary.id),
                summary.created_at.get(5..10).unwrap_or(&summary.created_at),
                summary.protocol,
                summary.confidence.map_or("-", Confidence::as_str),
            );
            let question_width =
                inner_width.saturating_sub(head.chars().count() + marker.len() + 1);
            let question: String = summary
                .question
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .chars()
                .take(question_width)
                .collect();
            let mut lines = vec![Line::from(vec![
                Span::styled(marker, theme.accent),
                Span::styled(
                    format!("{:<12}", summary.status),
                    status_style(summary.status, theme),
                ),
                Span::styled(head.chars().skip(12).collect::<String>(), theme.dim),
                Span::raw(question),
            ])];
            if let Some(snippet) = &row.snippet {
                let snippet: String = snippet
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
                    .chars()
                    .take(inner_width.saturating_sub(4))
                    .collect();
                lines.push(Line::styled(format!("    {snippet}"), theme.dim));
            }
            ListItem::new(lines)
        })
        .collect();
    let mut state = ListState::default().with_selected(Some(history.selected - first));
    let list = List::new(items)
        .block(block)
        .highlight_style(theme.focus.add_modifier(Modifier::REVERSED));
    frame.render_stateful_widget(list, area, &mut state);
}

fn preview(frame: &mut Frame, area: Rect, history: &History, theme: &Theme) {
    let block = super::titled_block("Preview", theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let Some((_, text)) = &history.preview else {
        return;
    };
    let lines: Vec<Line> = crate::markdown::render(text, inner.width as usize, theme, theme.depth)
        .into_iter()
        .take(inner.height as usize)
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

fn form(frame: &mut Frame, area: Rect, history: &History, theme: &Theme) {
    let Some(form) = &history.form else {
        return;
    };
    let options = history.form_protocol().map_or(0, |p| p.flags.len()) as u16;
    // Above the footer, which names the form's keys.
    let above_footer = Rect {
        height: area.height.saturating_sub(1),
        ..area
    };
    let rect = centered(above_footer, 76, 23 + options.min(10));
    frame.render_widget(Clear, rect);
    // Its keys are in the footer, as every screen's are.
    let block = modal_block("New debate", theme);
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let [
        question_row,
        editor_row,
        protocol_row,
        provider_row,
        model_row,
        count_row,
        seats_row,
        rounds_row,
        checkpoints_row,
        options_area,
        help_row,
        problem_row,
    ] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(3),
        Constraint::Length(2),
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Length(3),
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Min(1),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(inner);
    let label = |field: Field, text: &str| {
        let style = if form.field == field {
            theme.focus.add_modifier(Modifier::BOLD)
        } else {
            theme.dim
        };
        Span::styled(format!("{text:<14}"), style)
    };
    frame.render_widget(
        Paragraph::new(Line::from(label(Field::Question, "Question"))),
        question_row,
    );
    let editor =
        Block::default()
            .borders(Borders::LEFT)
            .border_style(if form.field == Field::Question {
                theme.focus
            } else {
                theme.border
            });
    let editor_area = editor.inner(editor_row);
    frame.render_widget(editor, editor_row);
    frame.render_widget(&form.question, editor_area);
    let protocol = history.form_protocol();
    let mut chosen_protocol = vec![
        label(Field::Protocol, "Protocol"),
        Span::raw(format!(
            "‹ {} ›",
            protocol.map_or("moderated", |p| p.name.as_str())
        )),
    ];
    if let Some(protocol) = protocol {
        chosen_protocol.push(Span::styled(
            format!("  {}", protocol.description),
            theme.dim,
        ));
    }
    frame.render_widget(
        Paragraph::new(Line::from(chosen_protocol)).wrap(ratatui::widgets::Wrap { trim: true }),
        protocol_row,
    );
    let provider = history
        .providers
        .get(form.provider)
        .map_or("the default", |p| p.label.as_str());
    frame.render_widget(
        Paragraph::new(Line::from(vec![
            label(Field::Provider, "Provider"),
            Span::raw(format!("‹ {provider} ›")),
        ])),
        provider_row,
    );
    frame.render_widget(
        Paragraph::new(Line::from(label(Field::Model, "Model"))),
        model_row,
    );
    let model_area = Rect {
        x: model_row.x + 14.min(model_row.width),
        width: model_row.width.saturating_sub(14),
        ..model_row
    };
    frame.render_widget(&form.model, model_area);
    if history.form_seats_perspectives() {
        let perspectives = form
            .perspectives
            .map(|n| n.to_string())
            .unwrap_or_else(|| "auto (from the question)".into());
        frame.render_widget(
            Paragraph::new(Line::from(vec![
                label(Field::Perspectives, "Perspectives"),
                Span::raw(format!("‹ {perspectives} ›")),
            ])),
            count_row,
        );
        let mut seats = vec![label(Field::Seats, "Or choose")];
        for (i, (name, chosen)) in history.catalog.iter().zip(&form.chosen).enumerate() {
            let style = if form.field == Field::Seats && form.cursor == i {
                theme.focus.add_modifier(Modifier::REVERSED)
            } else {
                theme.text
            };
            seats.push(Span::styled(
                format!("[{}] {name}", if *chosen { "x" } else { " " }),
                style,
            ));
            seats.push(Span::raw("  "));
        }
        frame.render_widget(
            Paragraph::new(Line::from(seats)).wrap(ratatui::widgets::Wrap { trim: false }),
            seats_row,
        );
    } else {
        let (name, role) =
            protocol.map_or(("", "seat"), |p| (p.name.as_str(), p.seat_role.as_str()));
        frame.render_widget(
            Paragraph::new(Line::from(vec![
                Span::styled(format!("{:<14}", "Seats"), theme.dim),
                Span::styled(
                    format!("the {name} protocol seats its {role}s ([{name}] in the config)"),
                    theme.dim,
                ),
            ])),
            count_row,
        );
    }
    let rounds = form
        .max_rounds
        .map(|n| n.to_string())
        .unwrap_or_else(|| "the protocol's default".into());
    frame.render_widget(
        Paragraph::new(Line::from(vec![
            label(Field::Rounds, "Max rounds"),
            Span::raw(format!("‹ {rounds} ›")),
        ])),
        rounds_row,
    );
    frame.render_widget(
        Paragraph::new(Line::from(vec![
            label(Field::Checkpoints, "Checkpoints"),
            Span::raw(if form.checkpoints { "on" } else { "off" }),
        ])),
        checkpoints_row,
    );
    options_rows(frame, options_area, help_row, history, theme);
    if let Some(problem) = &form.problem {
        frame.render_widget(
            Paragraph::new(Line::styled(problem.clone(), theme.warning))
                .wrap(ratatui::widgets::Wrap { trim: true }),
            problem_row,
        );
    }
}

/// The chosen protocol's options, a row each (scrolled to keep the focused one in view), and
/// the focused one's help beneath.
fn options_rows(frame: &mut Frame, area: Rect, help: Rect, history: &History, theme: &Theme) {
    let (Some(form), Some(protocol)) = (&history.form, history.form_protocol()) else {
        return;
    };
    let focused = match form.field {
        Field::Flag(index) => Some(index),
        _ => None,
    };
    let visible = area.height.max(1) as usize;
    let first = focused.map_or(0, |f| (f + 1).saturating_sub(visible));
    for (row, (index, flag)) in protocol
        .flags
        .iter()
        .enumerate()
        .skip(first)
        .take(visible)
        .enumerate()
    {
        let line_area = Rect {
            y: area.y + row as u16,
            height: 1,
            ..area
        };
        let style = if focused == Some(index) {
            theme.focus.add_modifier(Modifier::BOLD)
        } else {
            theme.dim
        };
        let name = Span::styled(format!("--{:<12}", flag.name), style);
        let key = format!("{}/{}", protocol.name, flag.name);
        let Some(placeholder) = &flag.value else {
            let on = form.values.contains_key(&key);
            frame.render_widget(
                Paragraph::new(Line::from(vec![
                    name,
                    Span::raw(format!("[{}]", if on { "x" } else { " " })),
                ])),
                line_area,
            );
            continue;
        };
        let label_width = 15.min(line_area.width);
        frame.render_widget(Paragraph::new(Line::from(name)), line_area);
        let input = Rect {
            x: line_area.x + label_width,
            width: line_area.width.saturating_sub(label_width),
            ..line_area
        };
        match form.values.get(&key) {
            Some(line) if focused == Some(index) || !line.is_empty() => {
                frame.render_widget(line, input)
            }
            _ => frame.render_widget(
                Paragraph::new(Line::styled(
                    if flag.repeatable {
                        format!("{placeholder}; …")
                    } else {
                        placeholder.clone()
                    },
                    theme.dim,
                )),
                input,
            ),
        }
    }
    let said = focused
        .and_then(|index| protocol.flags.get(index))
        .map(|flag| flag.help.clone())
        .unwrap_or_else(|| {
            format!(
                "{} option{} for {}: Tab to reach them",
                protocol.flags.len(),
                if protocol.flags.len() == 1 { "" } else { "s" },
                protocol.name
            )
        });
    frame.render_widget(Paragraph::new(Line::styled(said, theme.dim)), help);
}
