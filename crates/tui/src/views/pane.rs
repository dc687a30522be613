//! One seat's pane: its turns with round and phase separators, the text streaming now, a
//! spinner while it waits, retry and status markers. Finished turns are wrapped once and
//! cached; only the streaming tail is wrapped per frame.

use crate::app::App;
use crate::debate::Named as _;
use crate::debate::{Presentation, Ruling, Seat, Turn, TurnStatus};
use crate::keymap::{Command, Scope};
use crate::state::SeatActivity;
use crate::theme::Theme;
use crate::wrap::wrap;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

/// The wrapped lines of a seat's finished turns at one width.
#[derive(Debug, Default, Clone)]
pub struct PaneCache {
    width: usize,
    turns: usize,
    /// How many of the person's guidance entries are in `lines`.
    guided: usize,
    /// The round of the last turn in `lines`.
    round: u32,
    lines: Vec<Line<'static>>,
}

impl PaneCache {
    /// Brings the cache up to date with the seat's turns, wrapping only what is new.
    fn refresh<'a>(
        &mut self,
        turns: impl Iterator<Item = (Option<u32>, &'a Turn)>,
        guidance: &[(u32, String)],
        presentation: &Presentation,
        seat: &str,
        width: usize,
        theme: &Theme,
    ) {
        if width != self.width {
            *self = PaneCache {
                width,
                ..PaneCache::default()
            };
        }
        for (number, turn) in turns.skip(self.turns) {
            // The person's guidance stands where it was given: after its round's turns,
            // before the next round's.
            self.guide(guidance, turn.round, width, theme);
            self.round = self.round.max(turn.round);
            match Ruling::of(turn) {
                Some(ruling) => self.lines.extend(ruling_lines(&ruling, seat, width, theme)),
                None => self
                    .lines
                    .extend(turn_lines(turn, number, presentation, width, theme)),
            }
            self.turns += 1;
        }
        // Guidance given after the turns shown so far (the round is over) shows at once.
        self.guide(guidance, self.round + 1, width, theme);
    }

    /// Adds the guidance entries not yet shown that were given before round `before` (U5).
    fn guide(&mut self, guidance: &[(u32, String)], before: u32, width: usize, theme: &Theme) {
        while let Some((round, words)) = guidance.get(self.guided) {
            if *round >= before {
                break;
            }
            self.lines.push(separator(
                &format!("your guidance after round {round}"),
                width,
                theme,
            ));
            self.lines.extend(
                wrap(words, width)
                    .into_iter()
                    .map(|l| Line::styled(l, theme.accent)),
            );
            self.guided += 1;
        }
    }
}

fn separator(label: &str, width: usize, theme: &Theme) -> Line<'static> {
    let rule = if theme.ascii { "-" } else { "─" };
    let text = format!("{rule}{rule} {label} ");
    let fill = width.saturating_sub(unicode_width::UnicodeWidthStr::width(text.as_str()));
    Line::styled(format!("{text}{}", rule.repeat(fill)), theme.dim)
}

/// The moderator's ruling on this seat's moves: what it struck and what it flagged.
fn ruling_lines(ruling: &Ruling, seat: &str, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let mut lines = vec![separator("the moderator's ruling", width, theme)];
    for line in ruling.lines_for(seat) {
        let mark = if theme.ascii { "x" } else { "✗" };
        lines.extend(
            wrap(&format!("{mark} {line}"), width)
                .into_iter()
                .map(|l| Line::styled(l, theme.warning)),
        );
    }
    lines
}

fn turn_lines(
    turn: &Turn,
    number: Option<u32>,
    presentation: &Presentation,
    width: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let step = presentation.step_label(turn.round, turn.phase);
    let label = match number {
        Some(number) => format!("turn {number} · {step}"),
        None => step,
    };
    let mut lines = vec![separator(&label, width, theme)];
    match turn.status {
        TurnStatus::Ok => {}
        TurnStatus::Fallback => lines.extend(
            crate::wrap::wrap(
                "[fallback: its reply could not be read; the prose is kept]",
                width,
            )
            .into_iter()
            .map(|line| Line::styled(line, theme.warning)),
        ),
        TurnStatus::TimedOut => lines.push(Line::styled("[timed out]", theme.warning)),
        TurnStatus::Truncated => {
            lines.push(Line::styled("[truncated at its byte cap]", theme.warning))
        }
        TurnStatus::Failed => lines.push(Line::styled(
            format!("[failed: {}]", turn.note.as_deref().unwrap_or("no reply")),
            theme.error,
        )),
    }
    // Prose is markdown; rendered once per width, since the cache keeps the result.
    lines.extend(crate::markdown::render(
        turn.content.trim(),
        width,
        theme,
        theme.depth,
    ));
    if turn.status == TurnStatus::Ok
        && let Some(note) = &turn.note
    {
        lines.extend(
            wrap(&format!("⚠ {note}"), width)
                .into_iter()
                .map(|l| Line::styled(l, theme.warning)),
        );
    }
    // A premise journaled as its own argument (`P3.1` under `P3`) is shown inside its since.
    let is_premise_of = |premise: &crate::debate::Move, since: &crate::debate::Move| {
        premise.id.starts_with(&format!("{}.", since.id)) && premise.answers == [since.id.clone()]
    };
    for mv in &turn.moves {
        if turn.moves.iter().any(|parent| is_premise_of(mv, parent)) {
            continue;
        }
        let premises: Vec<&crate::debate::Move> =
            turn.moves.iter().filter(|m| is_premise_of(m, mv)).collect();
        if !premises.is_empty() {
            // `P3 since {P3.1, P3.2} → O2`, then the proposition and each reason.
            let ids: Vec<&str> = premises.iter().map(|p| p.id.as_str()).collect();
            let head = format!(
                "{} since {{{}}} → {}",
                mv.id,
                ids.join(", "),
                mv.answers.join(", ")
            );
            lines.extend(
                wrap(&head, width)
                    .into_iter()
                    .map(|l| Line::styled(l, theme.accent)),
            );
            lines.extend(
                wrap(&format!("  {}", mv.text), width)
                    .into_iter()
                    .map(|l| Line::styled(l, theme.dim)),
            );
            for premise in premises {
                lines.extend(
                    wrap(&format!("  {} {}", premise.id, premise.text), width)
                        .into_iter()
                        .map(|l| Line::styled(l, theme.dim)),
                );
            }
            continue;
        }
        let relation = match (&mv.relation, mv.answers.is_empty()) {
            (Some(relation), false) => format!(" {} {}", relation.as_str(), mv.answers.join(",")),
            (None, false) => format!(" → {}", mv.answers.join(",")),
            _ => String::new(),
        };
        let text = format!("{} {} {}{relation}", mv.id, mv.act.as_str(), mv.text);
        lines.extend(
            wrap(&text, width)
                .into_iter()
                .map(|l| Line::styled(l, theme.dim)),
        );
    }
    lines
}

/// The title: perspective, priorities, and the seat's state.
#[allow(clippy::too_many_arguments)]
fn title(
    width: usize,
    seat: &Seat,
    activity: &SeatActivity,
    index: usize,
    focused: bool,
    theme: &Theme,
    spinner: usize,
    tokens: Option<(u64, u64)>,
    waited: Option<u64>,
) -> Line<'static> {
    let mut spans = vec![Span::styled(
        format!(" {} {} ", seat.id, seat.perspective),
        theme.seat(index).add_modifier(Modifier::BOLD),
    )];
    if !seat.priorities.is_empty() {
        spans.push(Span::styled(
            format!("({}) ", seat.priorities.join(", ")),
            theme.dim,
        ));
    }
    // A seat moot's model does not play says who does.
    match seat.provider.as_deref() {
        Some(crate::debate::PERSON) => spans.push(Span::styled("[you] ", theme.focus)),
        Some(crate::debate::OUTSIDE) => spans.push(Span::styled("[outside] ", theme.warning)),
        _ => {}
    }
    if activity.dropped {
        spans.push(Span::styled("[dropped] ", theme.error));
    } else if activity.muted {
        spans.push(Span::styled("[muted] ", theme.warning));
    }
    if activity.speaking.is_some() {
        spans.push(Span::styled(
            format!("{} ", theme.spinner(spinner)),
            theme.accent,
        ));
    }
    if let Some((by, timeout)) = &activity.requested {
        let who = if by == crate::debate::PERSON {
            "your turn"
        } else {
            "awaited"
        };
        let left = waited
            .map(|w| timeout.saturating_sub(w))
            .unwrap_or(*timeout);
        spans.push(Span::styled(
            format!("{who} {}:{:02} ", left / 60, left % 60),
            theme.accent,
        ));
    }
    if !activity.violations.is_empty() {
        spans.push(Span::styled(
            // A rejected move and a move the moderator flagged alike break a rule.
            format!(
                "⚠ {} violation{} ",
                activity.violations.len(),
                if activity.violations.len() == 1 {
                    ""
                } else {
                    "s"
                }
            ),
            theme.warning,
        ));
    }
    if activity.retries > 0 {
        spans.push(Span::styled(
            format!("retry {} ", activity.retries),
            theme.warning,
        ));
    }
    if focused {
        spans.push(Span::styled("● ", theme.focus));
    }
    if let Some((tokens_in, tokens_out)) = tokens {
        spans.push(Span::styled(
            format!("{tokens_in}↑ {tokens_out}↓ "),
            theme.dim,
        ));
    }
    fit_title(spans, width)
}

/// Shortens the seat's name (its priorities first) so that the state badges after it stay
/// in view however long a perspective or persona is.
fn fit_title(mut spans: Vec<Span<'static>>, width: usize) -> Line<'static> {
    use unicode_width::UnicodeWidthStr;
    let room = width.saturating_sub(2);
    let total = |spans: &[Span]| spans.iter().map(|s| s.content.width()).sum::<usize>();
    if total(&spans) <= room {
        return Line::from(spans);
    }
    if spans.len() > 1 && spans[1].content.starts_with('(') {
        spans.remove(1);
    }
    let badges: usize = spans.iter().skip(1).map(|s| s.content.width()).sum();
    let name_room = room.saturating_sub(badges);
    if spans[0].content.width() > name_room {
        let mut name: String = String::new();
        for c in spans[0].content.chars() {
            if name.width() + 2 >= name_room {
                break;
            }
            name.push(c);
        }
        name.push_str("… ");
        spans[0].content = name.into();
    }
    Line::from(spans)
}

/// The turns a seat's pane shows, with their numbers when the protocol numbers them: its own,
/// and the moderator's rulings that name its moves (shown where the moves are).
fn pane_turns<'a>(
    turns: &'a [Turn],
    seat: &'a str,
    numbered: bool,
) -> impl Iterator<Item = (Option<u32>, &'a Turn)> + 'a {
    let ruled = move |t: &Turn| Ruling::turn_names(t, seat);
    turns
        .iter()
        .filter(move |t| t.seat != crate::debate::MODERATOR || ruled(t))
        // Numbered in the order the seats spoke, the moderator's turns aside, as the arena
        // numbers them: a rebuttal names the turns it answers by these.
        .scan(0u32, |spoken, t| {
            let number = (t.seat != crate::debate::MODERATOR).then(|| {
                *spoken += 1;
                *spoken
            });
            Some((number, t))
        })
        .filter(move |(_, t)| t.seat == seat || ruled(t))
        .map(move |(number, t)| (number.filter(|_| numbered), t))
}

/// What follows a pane's settled turns while its seat speaks: the step it speaks in, then the
/// reply streaming so far, or a spinner while it thinks (or retries, and why).
fn speaking_tail(
    app: &App,
    activity: &SeatActivity,
    width: usize,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let mut tail: Vec<Line<'static>> = Vec::new();
    let Some((round, phase)) = activity.speaking else {
        return tail;
    };
    tail.push(separator(
        &app.view.presentation.step_label(round, phase),
        width,
        theme,
    ));
    if activity.streaming.is_empty() {
        let waiting = match &activity.last_retry {
            Some(reason) => format!("{} retrying: {reason}", theme.spinner(app.spinner)),
            None => format!("{} thinking…", theme.spinner(app.spinner)),
        };
        tail.push(Line::styled(waiting, theme.dim));
    } else {
        tail.extend(
            wrap(&activity.streaming, width)
                .into_iter()
                .map(|l| Line::styled(l, theme.text)),
        );
    }
    tail
}

pub fn draw(
    frame: &mut Frame,
    area: Rect,
    app: &mut App,
    index: usize,
    caches: &mut Vec<PaneCache>,
    theme: &Theme,
) {
    let Some(seat) = app.view.seats.get(index).cloned() else {
        return;
    };
    let activity = app.view.activity.get(index).cloned().unwrap_or_default();
    let focused = app.focus == index;
    app.pane_areas.retain(|(i, _)| *i != index);
    app.pane_areas.push((index, area));
    let block = Block::default()
        .borders(Borders::ALL)
        .border_set(theme.border_set())
        .border_style(if focused { theme.focus } else { theme.border })
        .title(title(
            area.width as usize,
            &seat,
            &activity,
            index,
            focused,
            theme,
            app.spinner,
            app.seat_tokens.then(|| {
                app.view
                    .turns
                    .iter()
                    .filter(|t| t.seat == seat.id)
                    .fold((0, 0), |(i, o), t| (i + t.tokens_in, o + t.tokens_out))
            }),
            app.requested_at
                .iter()
                .find(|(s, _)| *s == seat.id)
                .map(|(_, at)| at.elapsed().as_secs()),
        ));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if inner.width == 0 || inner.height == 0 {
        return;
    }
    let width = inner.width as usize;
    if caches.len() <= index {
        caches.resize(index + 1, PaneCache::default());
    }
    let cache = &mut caches[index];
    cache.refresh(
        pane_turns(
            &app.view.turns,
            &seat.id,
            app.view.presentation.numbered_turns,
        ),
        &app.view.guidance,
        &app.view.presentation,
        &seat.id,
        width,
        theme,
    );
    let tail = speaking_tail(app, &activity, width, theme);
    let total = cache.lines.len() + tail.len();
    let height = inner.height as usize;
    app.page = height.saturating_sub(1).max(1);
    let start = app.settle_scroll(index, total, height);
    // Scrolled back while text keeps arriving: the border says how much is below and the
    // key that follows the newest again (U12).
    let below = total.saturating_sub(start + height);
    if app.scroll.get(index).is_some_and(Option::is_some) && below > 0 && area.height > 2 {
        let marker = format!(
            " ↓ {below} more line{} · {} follows ",
            if below == 1 { "" } else { "s" },
            app.keymap.key(Scope::Screen, Command::Bottom)
        );
        let width = (marker.chars().count() as u16).min(area.width.saturating_sub(2));
        let spot = Rect {
            x: area.x + area.width.saturating_sub(width + 1),
            y: area.y + area.height - 1,
            width,
            height: 1,
        };
        frame.render_widget(Paragraph::new(Line::styled(marker, theme.warning)), spot);
    }
    let visible: Vec<Line<'static>> = cache
        .lines
        .iter()
        .chain(tail.iter())
        .skip(start)
        .take(height)
        .cloned()
        .collect();
    if visible.is_empty() {
        let idle = if app.view.is_finished() {
            ""
        } else {
            "waiting for the first round…"
        };
        frame.render_widget(Paragraph::new(Line::styled(idle, theme.dim)), inner);
        return;
    }
    frame.render_widget(Paragraph::new(visible).style(Style::default()), inner);
}
