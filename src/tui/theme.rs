//! Colours and glyphs of the workbench.

use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::border;

#[derive(Debug, Clone)]
pub struct Theme {
    pub text: Style,
    pub dim: Style,
    pub accent: Style,
    pub border: Style,
    pub focus: Style,
    pub seats: [Color; 4],
    pub support: Style,
    pub rebut: Style,
    pub undercut: Style,
    pub warning: Style,
    pub error: Style,
    pub ascii: bool,
}

impl Theme {
    pub fn dark() -> Theme {
        Theme {
            text: Style::default(),
            dim: Style::default().fg(Color::DarkGray),
            accent: Style::default()
                .fg(Color::Cyan)
                .add_modifier(Modifier::BOLD),
            border: Style::default().fg(Color::DarkGray),
            focus: Style::default().fg(Color::Yellow),
            seats: [
                Color::LightBlue,
                Color::LightMagenta,
                Color::LightGreen,
                Color::LightYellow,
            ],
            support: Style::default().fg(Color::Green),
            rebut: Style::default().fg(Color::Red),
            undercut: Style::default().fg(Color::Yellow),
            warning: Style::default().fg(Color::Yellow),
            error: Style::default().fg(Color::Red).add_modifier(Modifier::BOLD),
            ascii: false,
        }
    }

    pub fn with_ascii(mut self, ascii: bool) -> Theme {
        self.ascii = ascii;
        self
    }

    pub fn seat(&self, index: usize) -> Style {
        Style::default().fg(self.seats[index % self.seats.len()])
    }

    pub fn border_set(&self) -> border::Set<'static> {
        if self.ascii {
            border::Set {
                top_left: "+",
                top_right: "+",
                bottom_left: "+",
                bottom_right: "+",
                vertical_left: "|",
                vertical_right: "|",
                horizontal_top: "-",
                horizontal_bottom: "-",
            }
        } else {
            border::ROUNDED
        }
    }

    pub fn spinner(&self, frame: usize) -> &'static str {
        const UNICODE: [&str; 8] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧"];
        const ASCII: [&str; 4] = ["-", "\\", "|", "/"];
        if self.ascii {
            ASCII[frame % ASCII.len()]
        } else {
            UNICODE[frame % UNICODE.len()]
        }
    }
}
