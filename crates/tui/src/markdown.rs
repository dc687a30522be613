//! Markdown (pulldown-cmark) into styled, wrapped ratatui lines: headings, lists, emphasis,
//! tables, quotes, links, and fenced code highlighted by syntect in the terminal's colours.

use super::theme::{Depth, Theme, fit};
use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use std::sync::OnceLock;
use syntect::easy::HighlightLines;
use syntect::highlighting::ThemeSet;
use syntect::parsing::SyntaxSet;
use unicode_width::UnicodeWidthStr;

/// Syntaxes and themes load once, and only if a document has code.
fn syntect() -> &'static (SyntaxSet, ThemeSet) {
    static SETS: OnceLock<(SyntaxSet, ThemeSet)> = OnceLock::new();
    SETS.get_or_init(|| {
        (
            SyntaxSet::load_defaults_newlines(),
            ThemeSet::load_defaults(),
        )
    })
}

struct Renderer<'t> {
    theme: &'t Theme,
    depth: Depth,
    width: usize,
    lines: Vec<Line<'static>>,
    /// Styled words of the paragraph being built.
    spans: Vec<Span<'static>>,
    styles: Vec<Style>,
    /// (ordered, next number) per open list.
    lists: Vec<(bool, u64)>,
    quote: usize,
    item_start: bool,
    link: Option<String>,
    code: Option<(String, String)>,
    table: Option<Vec<Vec<String>>>,
    cell: Option<String>,
}

impl Renderer<'_> {
    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or(self.theme.text)
    }

    fn prefix(&self, first: bool) -> String {
        let mut prefix = "│ ".repeat(self.quote);
        let depth = self.lists.len();
        if depth > 0 {
            prefix.push_str(&"  ".repeat(depth - 1));
            if first && self.item_start {
                let (ordered, number) = self.lists[depth - 1];
                prefix.push_str(&if ordered {
                    format!("{number}. ")
                } else if self.theme.ascii {
                    "* ".into()
                } else {
                    "• ".into()
                });
            } else {
                prefix.push_str("  ");
            }
        }
        prefix
    }

    /// Wraps the pending spans into lines under the current prefixes.
    fn flush(&mut self) {
        if self.spans.is_empty() {
            return;
        }
        let spans = std::mem::take(&mut self.spans);
        let first_prefix = self.prefix(true);
        let rest_prefix = self.prefix(false);
        self.item_start = false;
        let prefix_span = |prefix: &str| {
            (!prefix.is_empty()).then(|| Span::styled(prefix.to_string(), self.theme.dim))
        };
        // Words are cut at spaces only: a word the parser delivered in pieces (a citation
        // `[A1.2]` arrives as `[`, `A1.2`, `]`) stays whole on one line.
        let mut words: Vec<Vec<Span<'static>>> = vec![Vec::new()];
        for span in spans {
            for (i, piece) in span.content.split(' ').enumerate() {
                if i > 0 {
                    words.push(Vec::new());
                }
                if !piece.is_empty()
                    && let Some(word) = words.last_mut()
                {
                    word.push(Span::styled(piece.to_string(), span.style));
                }
            }
        }
        words.retain(|word| !word.is_empty());
        let mut line: Vec<Span<'static>> = prefix_span(&first_prefix).into_iter().collect();
        let mut used = first_prefix.width();
        let mut first = true;
        for word in words {
            let width: usize = word.iter().map(|s| s.content.width()).sum();
            let space = usize::from(!first);
            if used + space + width > self.width && used > rest_prefix.width() {
                self.lines.push(Line::from(std::mem::take(&mut line)));
                line.extend(prefix_span(&rest_prefix));
                used = rest_prefix.width();
            } else if !first {
                line.push(Span::raw(" "));
                used += 1;
            }
            first = false;
            used += width;
            line.extend(word);
        }
        self.lines.push(Line::from(line));
    }

    fn blank(&mut self) {
        if self.lines.last().is_some_and(|l| !l.spans.is_empty()) {
            self.lines.push(Line::default());
        }
    }

    fn text(&mut self, text: &str) {
        if let Some(cell) = &mut self.cell {
            cell.push_str(text);
            return;
        }
        if let Some((_, code)) = &mut self.code {
            code.push_str(text);
            return;
        }
        let style = self.style();
        self.spans.push(Span::styled(text.to_string(), style));
    }

    fn code_block(&mut self, language: &str, code: &str) {
        let (syntaxes, themes) = syntect();
        let syntax = syntaxes
            .find_syntax_by_token(language)
            .unwrap_or_else(|| syntaxes.find_syntax_plain_text());
        let mut highlighter = HighlightLines::new(syntax, &themes.themes["base16-ocean.dark"]);
        for source_line in code.lines() {
            let mut spans = vec![Span::styled("  ", self.theme.dim)];
            match highlighter.highlight_line(source_line, syntaxes) {
                Ok(ranges) => {
                    for (style, piece) in ranges {
                        let color =
                            Color::Rgb(style.foreground.r, style.foreground.g, style.foreground.b);
                        let styled = match fit(color, self.depth) {
                            Some(color) => Style::default().fg(color),
                            None => self.theme.text,
                        };
                        spans.push(Span::styled(piece.to_string(), styled));
                    }
                }
                Err(_) => spans.push(Span::styled(source_line.to_string(), self.theme.text)),
            }
            self.lines.push(Line::from(spans));
        }
    }

    fn table(&mut self, rows: Vec<Vec<String>>) {
        let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
        let mut widths = vec![0; columns];
        for row in &rows {
            for (i, cell) in row.iter().enumerate() {
                widths[i] = widths[i].max(cell.width());
            }
        }
        let separator = if self.theme.ascii { " | " } else { " │ " };
        for (index, row) in rows.iter().enumerate() {
            let text = row
                .iter()
                .enumerate()
                .map(|(i, cell)| {
                    format!(
                        "{cell}{}",
                        " ".repeat(widths[i].saturating_sub(cell.width()))
                    )
                })
                .collect::<Vec<_>>()
                .join(separator);
            let style = if index == 0 {
                self.theme.text.add_modifier(Modifier::BOLD)
            } else {
                self.theme.text
            };
            let clipped: String = text.chars().take(self.width).collect();
            self.lines.push(Line::styled(clipped, style));
            if index == 0 {
                let rule = if self.theme.ascii { "-" } else { "─" };
                self.lines.push(Line::styled(
                    rule.repeat(text.width().min(self.width)),
                    self.theme.dim,
                ));
            }
        }
    }
}

/// Renders markdown at `width` columns.
pub fn render(markdown: &str, width: usize, theme: &Theme, depth: Depth) -> Vec<Line<'static>> {
    let markdown = super::wrap::without_variation_selectors(markdown);
    let mut r = Renderer {
        theme,
        depth,
        width: width.max(10),
        lines: Vec::new(),
        spans: Vec::new(),
        styles: Vec::new(),
        lists: Vec::new(),
        quote: 0,
        item_start: false,
        link: None,
        code: None,
        table: None,
        cell: None,
    };
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    for event in Parser::new_ext(&markdown, options) {
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                r.flush();
                r.blank();
                let style = match level {
                    HeadingLevel::H1 => theme
                        .accent
                        .add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
                    HeadingLevel::H2 => theme.accent.add_modifier(Modifier::BOLD),
                    _ => theme.text.add_modifier(Modifier::BOLD),
                };
                r.styles.push(style);
            }
            Event::End(TagEnd::Heading(_)) => {
                r.flush();
                r.styles.pop();
                r.lines.push(Line::default());
            }
            Event::Start(Tag::Paragraph) => {}
            Event::End(TagEnd::Paragraph) => {
                r.flush();
                if r.lists.is_empty() {
                    r.lines.push(Line::default());
                }
            }
            Event::Start(Tag::Emphasis) => r.styles.push(r.style().add_modifier(Modifier::ITALIC)),
            Event::Start(Tag::Strong) => r.styles.push(r.style().add_modifier(Modifier::BOLD)),
            Event::Start(Tag::Strikethrough) => {
                r.styles.push(r.style().add_modifier(Modifier::CROSSED_OUT))
            }
            Event::End(TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough) => {
                r.styles.pop();
            }
            Event::Start(Tag::Link { dest_url, .. }) => {
                r.link = Some(dest_url.to_string());
                r.styles.push(r.style().add_modifier(Modifier::UNDERLINED));
            }
            Event::End(TagEnd::Link) => {
                r.styles.pop();
                if let Some(url) = r.link.take() {
                    r.spans.push(Span::styled(format!(" ({url})"), theme.dim));
                }
            }
            Event::Start(Tag::BlockQuote(_)) => {
                r.flush();
                r.quote += 1;
            }
            Event::End(TagEnd::BlockQuote(_)) => {
                r.flush();
                r.quote = r.quote.saturating_sub(1);
            }
            Event::Start(Tag::List(start)) => {
                r.flush();
                r.lists.push((start.is_some(), start.unwrap_or(1)));
            }
            Event::End(TagEnd::List(_)) => {
                r.flush();
                r.lists.pop();
                if r.lists.is_empty() {
                    r.lines.push(Line::default());
                }
            }
            Event::Start(Tag::Item) => {
                r.flush();
                r.item_start = true;
            }
            Event::End(TagEnd::Item) => {
                r.flush();
                if let Some((true, number)) = r.lists.last_mut() {
                    *number += 1;
                }
            }
            Event::Start(Tag::CodeBlock(kind)) => {
                r.flush();
                let language = match kind {
                    CodeBlockKind::Fenced(language) => language.to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                r.code = Some((language, String::new()));
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some((language, code)) = r.code.take() {
                    r.code_block(&language, &code);
                    r.lines.push(Line::default());
                }
            }
            Event::Start(Tag::Table(_)) => {
                r.flush();
                r.table = Some(Vec::new());
            }
            Event::End(TagEnd::Table) => {
                if let Some(rows) = r.table.take() {
                    r.table(rows);
                    r.lines.push(Line::default());
                }
            }
            Event::Start(Tag::TableHead | Tag::TableRow) => {
                if let Some(table) = &mut r.table {
                    table.push(Vec::new());
                }
            }
            Event::Start(Tag::TableCell) => r.cell = Some(String::new()),
            Event::End(TagEnd::TableCell) => {
                if let (Some(cell), Some(table)) = (r.cell.take(), &mut r.table)
                    && let Some(row) = table.last_mut()
                {
                    row.push(cell);
                }
            }
            Event::Text(text) => r.text(&text),
            Event::Code(code) => {
                if let Some(cell) = &mut r.cell {
                    cell.push_str(&code);
                } else {
                    r.spans.push(Span::styled(code.to_string(), theme.focus));
                }
            }
            Event::SoftBreak => r.text(" "),
            Event::HardBreak => r.flush(),
            Event::Rule => {
                r.flush();
                let rule = if theme.ascii { "-" } else { "─" };
                r.lines.push(Line::styled(rule.repeat(r.width), theme.dim));
            }
            _ => {}
        }
    }
    r.flush();
    while r.lines.last().is_some_and(|l| l.spans.is_empty()) {
        r.lines.pop();
    }
    r.lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: &[Line]) -> Vec<String> {
        lines
            .iter()
            .map(|l| {
                l.spans
                    .iter()
                    .map(|s| s.content.as_ref())
                    .collect::<String>()
            })
            .collect()
    }

    #[test]
    fn headings_lists_quotes_links_and_tables_render() {
        let markdown = "# Decision: Cache\n\n**Confidence:** High and *sure*\n\n- one\n- two wraps around the line\n\n1. first\n2. second\n\n> quoted\n\nSee [docs](https://x.test).\n\n| A | B |\n|---|---|\n| x | yy |\n";
        let lines = render(markdown, 20, &Theme::dark(), Depth::TrueColor);
        let text = plain(&lines);
        assert_eq!(text[0], "Decision: Cache");
        assert!(
            lines[0].spans[0]
                .style
                .add_modifier
                .contains(Modifier::UNDERLINED)
        );
        assert!(
            text.contains(&"Confidence: High and".to_string()),
            "{text:?}"
        );
        assert!(text.contains(&"• one".to_string()));
        assert!(
            text.contains(&"• two wraps around".to_string())
                && text.contains(&"  the line".to_string()),
            "{text:?}"
        );
        assert!(text.contains(&"1. first".to_string()) && text.contains(&"2. second".to_string()));
        assert!(text.contains(&"│ quoted".to_string()));
        assert!(
            text.iter().any(|l| l.contains("(https://x.test)")),
            "{text:?}"
        );
        assert!(
            text.contains(&"A │ B ".to_string()) && text.contains(&"x │ yy".to_string()),
            "{text:?}"
        );
    }

    /// A4: the layout's width of every line is what a terminal that counts each character
    /// draws, even for an emoji asked for by a variation selector, so a border stays put.
    #[test]
    fn an_emoji_variation_selector_never_makes_a_line_wider_than_laid_out() {
        use unicode_width::UnicodeWidthChar;
        let markdown =
            "## Your decision\n\n⚠️ Judges disagreed ✔️ on this question.\n\n- [A] One\n";
        let lines = render(markdown, 40, &Theme::dark(), Depth::TrueColor);
        for line in &lines {
            let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
            let drawn: usize = text.chars().map(|c| c.width().unwrap_or(0)).sum();
            assert_eq!(line.width(), drawn, "{text:?}");
        }
        let wrapped = super::super::wrap::wrap("⚠️ careful", 20);
        assert_eq!(wrapped, vec!["⚠ careful"]);
    }

    #[test]
    fn a_citation_never_wraps_between_its_bracket_and_its_id() {
        let markdown = "Start with PostgreSQL behind an interface [A2.2] and watch it [B1.r1].";
        for width in 10..60 {
            let text = plain(&render(markdown, width, &Theme::dark(), Depth::TrueColor));
            for line in &text {
                assert!(!line.ends_with('['), "width {width}: {text:?}");
                assert!(
                    !line
                        .trim_start()
                        .starts_with(|c: char| c == ']' || c.is_ascii_digit()),
                    "width {width}: {text:?}"
                );
            }
            let joined = text.join(" ");
            assert!(
                joined.contains("[A2.2]") && joined.contains("[B1.r1]"),
                "width {width}: {text:?}"
            );
        }
    }

    #[test]
    fn fenced_code_is_highlighted_and_fits_the_depth() {
        let markdown = "```rust\nfn main() { let x = 1; }\n```\n";
        let lines = render(markdown, 40, &Theme::dark(), Depth::Ansi16);
        assert_eq!(plain(&lines), vec!["  fn main() { let x = 1; }"]);
        let colours: Vec<Color> = lines[0].spans.iter().filter_map(|s| s.style.fg).collect();
        assert!(colours.len() > 2, "highlighted in several colours");
        assert!(
            colours
                .iter()
                .all(|c| !matches!(c, Color::Rgb(..) | Color::Indexed(_))),
            "16 colours only: {colours:?}"
        );
        let plain_lines = render(
            markdown,
            40,
            &Theme::named("dark", Depth::None).unwrap(),
            Depth::None,
        );
        assert!(
            plain_lines[0]
                .spans
                .iter()
                .all(|s| s.style.fg.is_none() || s.style.fg == Some(Color::Reset))
        );
    }
}
