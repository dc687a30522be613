//! The modals that ask the person something: a checkpoint's, a conclusion's, a gate's or a
//! choice's question with its answers, the editor for what is typed, and a person's turn
//! written in a dock below the panes.

use super::{centered, modal_block};
use crate::app::{App, Modal};
use crate::debate::AskKind;
use crate::keymap::{Command, Keymap, Scope};
use crate::theme::Theme;
use crate::wrap::wrap;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

/// The editor's keys, as its footer and title show them.
pub(super) fn editor_items(keymap: &Keymap) -> Vec<(Scope, Command, String)> {
    [(Command::SubmitGuidance, "send"), (Command::Cancel, "back")]
        .iter()
        .filter(|(command, _)| keymap.binding(Scope::Editor, *command).is_some())
        .map(|(command, what)| (Scope::Editor, *command, what.to_string()))
        .collect()
}

/// The answers to the question waiting, worded for it.
pub(super) fn ask_items(app: &App, scope: Scope) -> Vec<(Command, String)> {
    let nothing_proposed = app
        .view
        .checkpoint
        .as_ref()
        .is_some_and(|ask| ask.choices.is_empty());
    // moot found the agreement hollow: one more round is a round that challenges it.
    let hollow = app
        .view
        .checkpoint
        .as_ref()
        .is_some_and(|ask| app.view.hollow_agreement(ask.round).is_some());
    let words: &[(Command, &str)] = match app.pending() {
        Some(AskKind::Conclusion) if hollow => &[
            (Command::Accept, "accept and synthesise"),
            (Command::Continue, "a round that challenges it"),
            (Command::Guide, "guide that round"),
        ],
        // Nothing usable to go on with: the options must be typed (seed review 000/001 #1).
        Some(AskKind::Options) if nothing_proposed => &[
            (Command::Guide, "type the options"),
            (Command::End, "cancel the debate"),
        ],
        Some(AskKind::Clarification) => &[
            (Command::Guide, "give an answer"),
            (Command::Continue, "go on without answering"),
            (Command::End, "cancel the debate"),
        ],
        Some(AskKind::Conclusion) => &[
            (Command::Accept, "accept and synthesise"),
            (Command::Continue, "one more round"),
            (Command::Guide, "guide one more round"),
        ],
        Some(AskKind::Approval) => &[
            (Command::Accept, "approve"),
            (Command::Revise, "ask for one revision"),
            (Command::Reject, "leave unapproved"),
        ],
        Some(AskKind::RevisedApproval) => &[
            (Command::Accept, "approve the revision"),
            (Command::Reject, "leave unapproved"),
        ],
        Some(AskKind::Options) => &[
            (Command::Continue, "use these options"),
            (Command::Guide, "give other options"),
            (Command::End, "cancel the debate"),
        ],
        Some(AskKind::Choice) => &[
            (Command::PreviousChoice, "previous"),
            (Command::NextChoice, "next"),
            (Command::Choose, "choose"),
            (Command::Reject, "leave it open"),
        ],
        Some(AskKind::Gate) => &[
            (Command::Accept, "approve"),
            (Command::Revise, "reject, saying why"),
        ],
        Some(AskKind::Turn) => &[
            (Command::Guide, "write your turn"),
            (Command::End, "pass this turn"),
        ],
        _ => &[
            (Command::Continue, "continue"),
            (Command::Guide, "guide"),
            (Command::End, "end"),
        ],
    };
    words
        .iter()
        .filter(|(command, _)| app.keymap.binding(scope, *command).is_some())
        .map(|(command, what)| (*command, what.to_string()))
        .collect()
}

/// `[keys] what   [keys] what` for a modal's answers, flowed onto as many lines of `width`
/// as they need (an answer is never split), after `lead` on the first.
pub(super) fn answer_lines(
    app: &App,
    scope: Scope,
    lead: Option<Span<'static>>,
    width: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let mut spans: Vec<Span<'static>> = lead.into_iter().collect();
    let mut used: usize = spans.iter().map(|s| s.content.chars().count()).sum();
    for (command, what) in ask_items(app, scope) {
        let keys = format!("[{}]", app.keymap.hint(scope, command));
        let text = format!(" {what}");
        let item = keys.chars().count() + text.chars().count();
        let gap = if used == 0 { 0 } else { 3 };
        if used > 0 && used + gap + item > width {
            lines.push(Line::from(std::mem::take(&mut spans)));
            used = 0;
        } else if gap > 0 {
            spans.push(Span::raw("   "));
            used += gap;
        }
        spans.push(Span::styled(keys, theme.accent));
        spans.push(Span::raw(text));
        used += item;
    }
    if !spans.is_empty() {
        lines.push(Line::from(spans));
    }
    lines
}

/// The waiting question's title and text, by what is asked: a clarification, a conclusion to
/// accept, options to judge, a gate, a person's turn, a choice, or the end of a round.
fn title_and_question(app: &App) -> (String, String) {
    let pending = app.view.checkpoint.as_ref();
    let minutes = pending.map_or(30, |p| p.timeout_seconds / 60);
    match (app.pending(), pending) {
        (Some(AskKind::Clarification), _) => (
            if app.view.seats.is_empty() {
                "The moderator asks".to_string()
            } else {
                "Questions before the code is written".to_string()
            },
            app.view.clarification.clone().unwrap_or_default(),
        ),
        (Some(AskKind::Conclusion), Some(ask)) => (
            format!("Round {}: conclude the debate?", ask.round),
            format!(
                "{} Accept it and synthesise, or overrule it with one more round. Unanswered, \
                 it pauses in {minutes} min.",
                ask.detail.clone().unwrap_or_default()
            ),
        ),
        (Some(AskKind::Options), Some(ask)) => (
            "The options to judge".to_string(),
            ask.detail.clone().unwrap_or_default(),
        ),
        (Some(AskKind::Gate), Some(ask)) => {
            // Where the gate stands, from its request (C9: a gate before the synthesis was
            // called "after round N"), and what the reviewer weighs beside the summary.
            let (place, weighed) = match &app.view.gate {
                Some(gate) => (
                    crate::debate::gate_place(&gate.point, gate.round),
                    gate.artifacts
                        .iter()
                        .map(|(field, value)| format!("{field}: {value}\n"))
                        .collect::<String>(),
                ),
                None => (format!("after round {}", ask.round), String::new()),
            };
            (
                format!("Approval gate {place}"),
                format!(
                    "{}\n{weighed}Approve to go on, or reject with a reason to stop here. Unanswered, it pauses in {minutes} min.",
                    ask.detail.clone().unwrap_or_default().trim_end()
                ),
            )
        }
        (Some(AskKind::Turn), Some(ask)) => (
            format!("Round {}: your turn", ask.round),
            format!(
                "{}\nUnanswered, the turn passes in {minutes} min.",
                ask.detail.clone().unwrap_or_default().trim_end()
            ),
        ),
        (Some(AskKind::Choice), Some(ask)) => (
            "The judges disagree: your decision".to_string(),
            ask.detail
                .clone()
                .unwrap_or_default()
                .trim_end()
                .to_string(),
        ),
        (_, Some(ask)) => (
            format!("Round {} complete", ask.round),
            format!(
                "Continue, guide the next round, or end the debate. Unanswered, it pauses in \
                 {minutes} min."
            ),
        ),
        _ => ("Checkpoint".to_string(), String::new()),
    }
}

/// The question waiting, with its answers (and a choice's options), over the screen.
pub(super) fn ask(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let Some(scope) = app.ask_scope() else {
        return;
    };
    let pending = app.view.checkpoint.as_ref();
    let (title, question) = title_and_question(app);
    let width = area.width.saturating_sub(4).min(68);
    let inner_width = width.saturating_sub(2) as usize;
    let mut lines: Vec<Line> = wrap(&question, inner_width)
        .into_iter()
        .map(Line::from)
        .collect();
    lines.push(Line::default());
    if let Some(refused) = pending.and_then(|ask| ask.refused.as_deref()) {
        lines.extend(
            wrap(refused, inner_width)
                .into_iter()
                .map(|l| Line::styled(l, theme.warning)),
        );
        lines.push(Line::default());
    }
    let answers = answer_lines(app, scope, None, inner_width, theme);
    if scope == Scope::Choice {
        // The options, one a line, as many as fit with the question and the keys around them.
        let room = area
            .height
            .saturating_sub(2 + lines.len() as u16 + 1 + answers.len() as u16);
        lines.extend(choice_lines(app, room as usize, inner_width, theme));
        lines.push(Line::default());
        lines.extend(answers);
        let rect = centered(area, width, lines.len() as u16 + 2);
        frame.render_widget(Clear, rect);
        let block = modal_block(&title, theme);
        let inner = block.inner(rect);
        frame.render_widget(block, rect);
        frame.render_widget(Paragraph::new(lines), inner);
        return;
    }
    lines.extend(answers);
    let key = |command| app.keymap.key(Scope::Screen, command);
    let still = format!(
        "The panes still scroll ({} {} {}) while this waits.",
        key(Command::ScrollUp),
        key(Command::ScrollDown),
        key(Command::FocusNext)
    );
    lines.extend(
        wrap(&still, inner_width)
            .into_iter()
            .map(|l| Line::styled(l, theme.dim)),
    );
    let rect = centered(area, width, lines.len() as u16 + 2);
    frame.render_widget(Clear, rect);
    let block = modal_block(&title, theme);
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    frame.render_widget(Paragraph::new(lines), inner);
}

/// The options of a waiting choice, the selected one marked, scrolled so that it shows within
/// `room` lines.
fn choice_lines(app: &App, room: usize, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let Some(ask) = app.view.checkpoint.as_ref() else {
        return Vec::new();
    };
    let room = room.max(1);
    let selected = app.choice.min(ask.choices.len().saturating_sub(1));
    let first = (selected + 1).saturating_sub(room);
    ask.choices
        .iter()
        .enumerate()
        .skip(first)
        .take(room)
        .map(|(i, (id, label))| {
            let text: String = format!("{id}  {label}")
                .chars()
                .take(width.saturating_sub(2))
                .collect();
            if i == selected {
                Line::styled(
                    format!("› {text}"),
                    theme.accent.add_modifier(Modifier::BOLD),
                )
            } else {
                Line::raw(format!("  {text}"))
            }
        })
        .collect()
}

/// The editor for what the person types, over the screen.
pub(super) fn editor(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let Modal::Editor { writing, text } = &app.modal else {
        return;
    };
    let rect = centered(area, 72, 12);
    frame.render_widget(Clear, rect);
    let hint = editor_items(&app.keymap)
        .into_iter()
        .map(|(scope, command, what)| format!("{} {what}", app.keymap.hint(scope, command)))
        .collect::<Vec<_>>()
        .join(" · ");
    let block = modal_block(writing.title(), theme)
        .title_bottom(Line::styled(format!(" {hint} "), theme.dim));
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    frame.render_widget(&**text, inner);
}

/// A person's turn, written below the panes: what the turn is (round, phase, stance), the
/// earlier turns it may answer (picked with the form's keys), then the text.
pub(super) fn turn_editor_dock(frame: &mut Frame, area: Rect, app: &App, theme: &Theme) {
    let Modal::Editor { writing, text } = &app.modal else {
        return;
    };
    frame.render_widget(Clear, area);
    let form_key = |command| app.keymap.key(Scope::Form, command);
    let mut hint = editor_items(&app.keymap)
        .into_iter()
        .map(|(scope, command, what)| format!("{} {what}", app.keymap.hint(scope, command)))
        .collect::<Vec<_>>();
    let pick = app.turn_pick.as_ref().filter(|p| p.earlier > 0);
    if pick.is_some() {
        hint.push(format!(
            "{} text ⇄ turns · {} {} choose · {} pick",
            form_key(Command::NextField),
            form_key(Command::Decrease),
            form_key(Command::Increase),
            form_key(Command::Toggle)
        ));
    }
    let block = modal_block(writing.title(), theme)
        .title_bottom(Line::styled(format!(" {} ", hint.join(" · ")), theme.dim));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let detail = app
        .view
        .checkpoint
        .as_ref()
        .filter(|ask| ask.kind == AskKind::Turn)
        .and_then(|ask| ask.detail.clone())
        .unwrap_or_default();
    let mut lines: Vec<Line> = wrap(detail.trim(), inner.width as usize)
        .into_iter()
        .take(2)
        .map(|l| Line::styled(l, theme.accent))
        .collect();
    if let Some(pick) = pick {
        let mut spans = vec![Span::styled(
            "Answers: ",
            if pick.focused {
                theme.focus.add_modifier(Modifier::BOLD)
            } else {
                theme.dim
            },
        )];
        // The newest turns first in sight: the list ends at the latest.
        let room = (inner.width as usize).saturating_sub(9) / 6;
        let first = pick.earlier.saturating_sub(room as u32).max(1);
        for n in first..=pick.earlier {
            let mark = if pick.picked.contains(&n) { "x" } else { " " };
            let style = if pick.focused && pick.cursor == n {
                theme.focus.add_modifier(Modifier::REVERSED)
            } else if pick.picked.contains(&n) {
                theme.text.add_modifier(Modifier::BOLD)
            } else {
                theme.dim
            };
            spans.push(Span::styled(format!("[{mark}]{n} "), style));
        }
        lines.push(Line::from(spans));
    }
    let head = (lines.len() as u16).min(inner.height.saturating_sub(1));
    frame.render_widget(
        Paragraph::new(lines),
        Rect {
            height: head,
            ..inner
        },
    );
    frame.render_widget(
        &**text,
        Rect {
            y: inner.y + head,
            height: inner.height - head,
            ..inner
        },
    );
}
