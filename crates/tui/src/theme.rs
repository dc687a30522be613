//! Colours and glyphs of the workbench: themes from themes/*.toml (built in) or a file, colours
//! fitted to the terminal's depth (truecolor, 256, 16), NO_COLOR honoured, ASCII fallbacks.

use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::border;
use serde::Deserialize;
use std::str::FromStr;

/// The built-in themes, by name.
pub const BUILT_IN: [(&str, &str); 4] = [
    ("dark", include_str!("../themes/dark.toml")),
    ("light", include_str!("../themes/light.toml")),
    (
        "high-contrast",
        include_str!("../themes/high-contrast.toml"),
    ),
    ("ansi16", include_str!("../themes/ansi16.toml")),
];

/// How many colours the terminal shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    TrueColor,
    Ansi256,
    Ansi16,
    /// NO_COLOR: styles keep only bold, reverse and the like.
    None,
}

impl Depth {
    /// From NO_COLOR, COLORTERM and TERM.
    pub fn detect() -> Depth {
        let var = |name: &str| std::env::var(name).unwrap_or_default();
        if !var("NO_COLOR").is_empty() {
            Depth::None
        } else if matches!(var("COLORTERM").as_str(), "truecolor" | "24bit") {
            Depth::TrueColor
        } else if var("TERM").contains("256color") {
            Depth::Ansi256
        } else {
            Depth::Ansi16
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ThemeFile {
    text: String,
    dim: String,
    accent: String,
    border: String,
    focus: String,
    seats: [String; 4],
    support: String,
    rebut: String,
    undercut: String,
    warning: String,
    error: String,
}

#[derive(Debug, Clone)]
pub struct Theme {
    pub text: Style,
    pub dim: Style,
    pub accent: Style,
    pub border: Style,
    pub focus: Style,
    pub seats: [Style; 4],
    pub support: Style,
    pub rebut: Style,
    pub undercut: Style,
    pub warning: Style,
    pub error: Style,
    pub ascii: bool,
    /// The colour depth the theme was fitted to.
    pub depth: Depth,
}

/// A theme that cannot be used, and where it is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ThemeError {
    #[error("unknown theme {name:?}: use {known} or a path to a .toml theme")]
    Unknown { name: String, known: String },
    #[error("cannot read the theme {name}: {detail}")]
    Unreadable { name: String, detail: String },
    #[error("{name}:{line}:{column}: {message}")]
    Invalid {
        name: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{name}: {value:?} is not a colour (a name like \"cyan\", \"#rrggbb\" or 0-255)")]
    Colour { name: String, value: String },
}

impl Theme {
    /// The default theme at full colour, for tests and snapshots.
    pub fn dark() -> Theme {
        Theme::named("dark", Depth::TrueColor)
            .unwrap_or_else(|_| unreachable!("the built-in dark theme parses"))
    }

    /// A built-in theme by name, or a theme file by path.
    pub fn named(name: &str, depth: Depth) -> Result<Theme, ThemeError> {
        let text = match BUILT_IN.iter().find(|(n, _)| *n == name) {
            Some((_, text)) => text.to_string(),
            None if name.ends_with(".toml") => {
                std::fs::read_to_string(name).map_err(|e| ThemeError::Unreadable {
                    name: name.to_string(),
                    detail: e.to_string(),
                })?
            }
            None => {
                let names: Vec<&str> = BUILT_IN.iter().map(|(n, _)| *n).collect();
                return Err(ThemeError::Unknown {
                    name: name.to_string(),
                    known: names.join(", "),
                });
            }
        };
        let file: ThemeFile = toml::from_str(&text).map_err(|e| {
            let (line, column) = e
                .span()
                .map(|s| crate::config::line_column(&text, s.start))
                .unwrap_or((1, 1));
            ThemeError::Invalid {
                name: name.to_string(),
                line,
                column,
                message: e.message().trim().to_string(),
            }
        })?;
        let color = |value: &str| -> Result<Style, ThemeError> {
            let parsed = if value == "reset" {
                Color::Reset
            } else {
                Color::from_str(value).map_err(|_| ThemeError::Colour {
                    name: name.to_string(),
                    value: value.to_string(),
                })?
            };
            Ok(match fit(parsed, depth) {
                Some(color) => Style::default().fg(color),
                None => Style::default(),
            })
        };
        let mut seats = [Style::default(); 4];
        for (slot, value) in seats.iter_mut().zip(&file.seats) {
            *slot = color(value)?;
        }
        Ok(Theme {
            text: color(&file.text)?,
            dim: color(&file.dim)?,
            accent: color(&file.accent)?.add_modifier(Modifier::BOLD),
            border: color(&file.border)?,
            focus: color(&file.focus)?,
            seats,
            support: color(&file.support)?,
            rebut: color(&file.rebut)?,
            undercut: color(&file.undercut)?,
            warning: color(&file.warning)?,
            error: color(&file.error)?.add_modifier(Modifier::BOLD),
            ascii: false,
            depth,
        })
    }

    pub fn with_ascii(mut self, ascii: bool) -> Theme {
        self.ascii = ascii;
        self
    }

    pub fn seat(&self, index: usize) -> Style {
        self.seats[index % self.seats.len()]
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

/// A colour the terminal can show: truecolour passes, RGB becomes the nearest of the 256 or
/// 16 palette colours, and NO_COLOR drops it.
pub fn fit(color: Color, depth: Depth) -> Option<Color> {
    match (color, depth) {
        (_, Depth::None) => None,
        (Color::Rgb(r, g, b), Depth::Ansi256) => Some(Color::Indexed(rgb_to_256(r, g, b))),
        (Color::Rgb(r, g, b), Depth::Ansi16) => Some(rgb_to_16(r, g, b)),
        (Color::Indexed(i), Depth::Ansi16) if i >= 16 => {
            let (r, g, b) = index_to_rgb(i);
            Some(rgb_to_16(r, g, b))
        }
        (color, _) => Some(color),
    }
}

fn cube(v: u8) -> u8 {
    if v < 48 {
        0
    } else if v < 115 {
        1
    } else {
        (v - 35) / 40
    }
}

fn rgb_to_256(r: u8, g: u8, b: u8) -> u8 {
    16 + 36 * cube(r) + 6 * cube(g) + cube(b)
}

fn index_to_rgb(i: u8) -> (u8, u8, u8) {
    const LEVELS: [u8; 6] = [0, 95, 135, 175, 215, 255];
    if i >= 232 {
        let v = 8 + (i - 232) * 10;
        return (v, v, v);
    }
    let i = i.saturating_sub(16);
    (
        LEVELS[(i / 36) as usize % 6],
        LEVELS[((i / 6) % 6) as usize],
        LEVELS[(i % 6) as usize],
    )
}

fn rgb_to_16(r: u8, g: u8, b: u8) -> Color {
    const PALETTE: [(Color, (u8, u8, u8)); 16] = [
        (Color::Black, (0, 0, 0)),
        (Color::Red, (128, 0, 0)),
        (Color::Green, (0, 128, 0)),
        (Color::Yellow, (128, 128, 0)),
        (Color::Blue, (0, 0, 128)),
        (Color::Magenta, (128, 0, 128)),
        (Color::Cyan, (0, 128, 128)),
        (Color::Gray, (192, 192, 192)),
        (Color::DarkGray, (128, 128, 128)),
        (Color::LightRed, (255, 0, 0)),
        (Color::LightGreen, (0, 255, 0)),
        (Color::LightYellow, (255, 255, 0)),
        (Color::LightBlue, (0, 0, 255)),
        (Color::LightMagenta, (255, 0, 255)),
        (Color::LightCyan, (0, 255, 255)),
        (Color::White, (255, 255, 255)),
    ];
    let distance = |(pr, pg, pb): (u8, u8, u8)| {
        let d = |a: u8, b: u8| (a as i32 - b as i32).pow(2);
        d(r, pr) + d(g, pg) + d(b, pb)
    };
    PALETTE
        .iter()
        .min_by_key(|(_, rgb)| distance(*rgb))
        .map(|(c, _)| *c)
        .unwrap_or(Color::Reset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_theme_loads_at_every_depth() {
        for (name, _) in BUILT_IN {
            for depth in [Depth::TrueColor, Depth::Ansi256, Depth::Ansi16, Depth::None] {
                Theme::named(name, depth).unwrap_or_else(|e| panic!("{name}: {e}"));
            }
        }
    }

    #[test]
    fn colours_fit_the_terminal() {
        assert_eq!(
            fit(Color::Rgb(0, 95, 135), Depth::TrueColor),
            Some(Color::Rgb(0, 95, 135))
        );
        assert_eq!(
            fit(Color::Rgb(0, 95, 135), Depth::Ansi256),
            Some(Color::Indexed(24))
        );
        assert_eq!(
            fit(Color::Rgb(250, 5, 5), Depth::Ansi16),
            Some(Color::LightRed)
        );
        assert_eq!(
            fit(Color::Indexed(196), Depth::Ansi16),
            Some(Color::LightRed)
        );
        assert_eq!(fit(Color::Cyan, Depth::None), None);
        let plain = Theme::named("light", Depth::None).unwrap();
        assert_eq!(plain.rebut.fg, None, "NO_COLOR leaves no colour");
        assert!(
            plain.accent.add_modifier.contains(Modifier::BOLD),
            "but keeps emphasis"
        );
    }

    #[test]
    fn unknown_themes_and_bad_colours_are_clear_errors() {
        let err = Theme::named("neon", Depth::TrueColor)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown theme \"neon\""));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.toml");
        std::fs::write(
            &path,
            include_str!("../themes/dark.toml").replace("\"cyan\"", "\"sparkly\""),
        )
        .unwrap();
        let err = Theme::named(path.to_str().unwrap(), Depth::TrueColor)
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"sparkly\" is not a colour"), "{err}");
    }
}
