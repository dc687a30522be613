//! Every command the workbench knows, with its keys and help text. The key handling and the
//! `?` overlay both read this one table, so help cannot drift from behaviour.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::sync::OnceLock;

/// Something the user can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Quit,
    Help,
    FocusNext,
    FocusPrev,
    ScrollUp,
    ScrollDown,
    PageUp,
    PageDown,
    Top,
    Bottom,
    ToggleCommitments,
    ToggleMap,
    Maximize,
    Synthesis,
    Continue,
    Guide,
    End,
    SubmitGuidance,
    Cancel,
    ToggleArguments,
    SeatTokens,
    CopyTurn,
    ZoomIn,
    ZoomOut,
    MapUp,
    MapDown,
    NextArgument,
    PreviousArgument,
    HighlightSeat,
    Copy,
    Pager,
    Editor,
}

/// Where a binding applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The live screen (also while the checkpoint waits).
    Screen,
    /// The checkpoint modal.
    Checkpoint,
    /// The guidance editor.
    Editor,
    /// The synthesis view.
    Synthesis,
}

pub struct Binding {
    pub command: Command,
    pub scope: Scope,
    pub keys: &'static [(KeyCode, KeyModifiers)],
    pub label: &'static str,
    pub help: &'static str,
}

const NONE: KeyModifiers = KeyModifiers::NONE;
const CTRL: KeyModifiers = KeyModifiers::CONTROL;
const SHIFT: KeyModifiers = KeyModifiers::SHIFT;

/// The default keymap.
pub const BINDINGS: &[Binding] = &[
    Binding {
        command: Command::MapUp,
        scope: Scope::Screen,
        keys: &[(KeyCode::Char('K'), SHIFT), (KeyCode::Char('K'), NONE)],
        label: "K",
        help: "scroll the map up (towards the first arguments)",
    },
    Binding {
        command: Command::MapDown,
        scope: Scope::Screen,
        keys: &[(KeyCode::Char('J'), SHIFT), (KeyCode::Char('J'), NONE)],
        label: "J",
        help: "scroll the map down (back to following the newest)",
    },
    Binding {
        command: Command::CopyTurn,
        scope: Scope::Screen,
        keys: &[(KeyCode::Char('y'), NONE)],
        label: "y",
        help: "copy the focused seat's latest turn (OSC 52)",
    },
    Binding {
        command: Command::NextArgument,
        scope: Scope::Screen,
        keys: &[(KeyCode::Char(']'), NONE)],
        label: "]",
        help: "select the next argument on the map and light its path",
    },
    Binding {
        command: Command::PreviousArgument,
        scope: Scope::Screen,
        keys: &[(KeyCode::Char('['), NONE)],
        label: "[",
        help: "select the previous argument on the map",
    },
    Binding {
        command: Command::ZoomIn,
        scope: Scope::Screen,
        keys: &[(KeyCode::Char('+'), NONE), (KeyCode::Char('='), NONE)],
        label: "+",
        help: "zoom the map in",
    },
    Binding {
        command: Command::ZoomOut,
        scope: Scope::Screen,
        keys: &[(KeyCode::Char('-'), NONE)],
        label: "-",
        help: "zoom the map out",
    },
    Binding {
        command: Command::HighlightSeat,
        scope: Scope::Screen,
        keys: &[(KeyCode::Char('v'), NONE)],
        label: "v",
        help: "highlight one seat's arguments on the map (cycles)",
    },
    Binding {
        command: Command::SeatTokens,
        scope: Scope::Screen,
        keys: &[(KeyCode::Char('t'), NONE)],
        label: "t",
        help: "show or hide each seat's tokens",
    },
    Binding {
        command: Command::ToggleArguments,
        scope: Scope::Synthesis,
        keys: &[(KeyCode::Char('f'), NONE)],
        label: "f",
        help: "show or hide every perspective's full arguments (1-4: one of them)",
    },
    Binding {
        command: Command::Copy,
        scope: Scope::Synthesis,
        keys: &[(KeyCode::Char('y'), NONE)],
        label: "y",
        help: "copy the document (OSC 52, works over SSH)",
    },
    Binding {
        command: Command::Pager,
        scope: Scope::Synthesis,
        keys: &[(KeyCode::Char('o'), NONE)],
        label: "o",
        help: "open it in $PAGER",
    },
    Binding {
        command: Command::Editor,
        scope: Scope::Synthesis,
        keys: &[(KeyCode::Char('E'), SHIFT), (KeyCode::Char('E'), NONE)],
        label: "E",
        help: "open it in $EDITOR",
    },
    Binding {
        command: Command::Continue,
        scope: Scope::Checkpoint,
        keys: &[(KeyCode::Char('c'), NONE)],
        label: "c",
        help: "continue to the next round",
    },
    Binding {
        command: Command::Guide,
        scope: Scope::Checkpoint,
        keys: &[(KeyCode::Char('g'), NONE)],
        label: "g",
        help: "guide: write what the next round must address",
    },
    Binding {
        command: Command::End,
        scope: Scope::Checkpoint,
        keys: &[(KeyCode::Char('e'), NONE)],
        label: "e",
        help: "end the debate and synthesise",
    },
    Binding {
        command: Command::SubmitGuidance,
        scope: Scope::Editor,
        keys: &[(KeyCode::Char('s'), CTRL)],
        label: "Ctrl-S",
        help: "send the guidance",
    },
    Binding {
        command: Command::Cancel,
        scope: Scope::Editor,
        keys: &[(KeyCode::Esc, NONE)],
        label: "Esc",
        help: "back to the checkpoint",
    },
    Binding {
        command: Command::FocusNext,
        scope: Scope::Screen,
        keys: &[
            (KeyCode::Tab, NONE),
            (KeyCode::Right, NONE),
            (KeyCode::Char('l'), NONE),
        ],
        label: "Tab →",
        help: "focus the next pane",
    },
    Binding {
        command: Command::FocusPrev,
        scope: Scope::Screen,
        keys: &[
            (KeyCode::BackTab, SHIFT),
            (KeyCode::Left, NONE),
            (KeyCode::Char('h'), NONE),
        ],
        label: "S-Tab ←",
        help: "focus the previous pane",
    },
    Binding {
        command: Command::ScrollDown,
        scope: Scope::Screen,
        keys: &[(KeyCode::Down, NONE), (KeyCode::Char('j'), NONE)],
        label: "↓ j",
        help: "scroll down",
    },
    Binding {
        command: Command::ScrollUp,
        scope: Scope::Screen,
        keys: &[(KeyCode::Up, NONE), (KeyCode::Char('k'), NONE)],
        label: "↑ k",
        help: "scroll up",
    },
    Binding {
        command: Command::PageDown,
        scope: Scope::Screen,
        keys: &[(KeyCode::PageDown, NONE), (KeyCode::Char('d'), CTRL)],
        label: "PgDn",
        help: "scroll a page down",
    },
    Binding {
        command: Command::PageUp,
        scope: Scope::Screen,
        keys: &[(KeyCode::PageUp, NONE), (KeyCode::Char('u'), CTRL)],
        label: "PgUp",
        help: "scroll a page up",
    },
    Binding {
        command: Command::Top,
        scope: Scope::Screen,
        keys: &[(KeyCode::Home, NONE), (KeyCode::Char('g'), NONE)],
        label: "g Home",
        help: "scroll to the top",
    },
    Binding {
        command: Command::Bottom,
        scope: Scope::Screen,
        keys: &[
            (KeyCode::End, NONE),
            (KeyCode::Char('G'), SHIFT),
            (KeyCode::Char('G'), NONE),
        ],
        label: "G End",
        help: "follow the newest text",
    },
    Binding {
        command: Command::ToggleCommitments,
        scope: Scope::Screen,
        keys: &[(KeyCode::Char('m'), NONE)],
        label: "m",
        help: "show or hide the commitment stores",
    },
    Binding {
        command: Command::ToggleMap,
        scope: Scope::Screen,
        keys: &[(KeyCode::Char('a'), NONE)],
        label: "a",
        help: "show or hide the argument map",
    },
    Binding {
        command: Command::Maximize,
        scope: Scope::Screen,
        keys: &[(KeyCode::Char('z'), NONE)],
        label: "z",
        help: "maximise the side panels, or restore",
    },
    Binding {
        command: Command::Synthesis,
        scope: Scope::Screen,
        keys: &[(KeyCode::Char('s'), NONE)],
        label: "s",
        help: "open or close the synthesis",
    },
    Binding {
        command: Command::Help,
        scope: Scope::Screen,
        keys: &[(KeyCode::Char('?'), NONE), (KeyCode::Char('?'), SHIFT)],
        label: "?",
        help: "this help",
    },
    Binding {
        command: Command::Quit,
        scope: Scope::Screen,
        keys: &[(KeyCode::Char('q'), NONE), (KeyCode::Char('c'), CTRL)],
        label: "q",
        help: "quit (a running debate pauses; moot resume ID)",
    },
];

/// Keys the user rebound in config.toml (`[ui.keys]`), replacing a command's defaults.
static REBOUND: OnceLock<Vec<Rebinding>> = OnceLock::new();

/// A command, its new keys, and the label the help shows for them.
type Rebinding = (Command, Vec<(KeyCode, KeyModifiers)>, String);

/// The config name of a command: `quit`, `focus_next`, `submit_guidance`…
pub fn name(command: Command) -> String {
    let debug = format!("{command:?}");
    let mut name = String::new();
    for (i, c) in debug.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            name.push('_');
        }
        name.push(c.to_ascii_lowercase());
    }
    name
}

/// Parses a key such as `q`, `G`, `ctrl-s`, `shift-tab`, `esc`, `pgdown`, `f1`.
pub fn parse_key(text: &str) -> Result<(KeyCode, KeyModifiers), String> {
    let mut modifiers = KeyModifiers::NONE;
    let mut rest = text.trim();
    loop {
        let lower = rest.to_ascii_lowercase();
        if let Some(tail) = lower.strip_prefix("ctrl-") {
            modifiers |= KeyModifiers::CONTROL;
            rest = &rest[rest.len() - tail.len()..];
        } else if let Some(tail) = lower.strip_prefix("alt-") {
            modifiers |= KeyModifiers::ALT;
            rest = &rest[rest.len() - tail.len()..];
        } else if let Some(tail) = lower.strip_prefix("shift-") {
            modifiers |= KeyModifiers::SHIFT;
            rest = &rest[rest.len() - tail.len()..];
        } else {
            break;
        }
    }
    let code = match rest.to_ascii_lowercase().as_str() {
        "esc" | "escape" => KeyCode::Esc,
        "enter" | "return" => KeyCode::Enter,
        "tab" if modifiers.contains(KeyModifiers::SHIFT) => KeyCode::BackTab,
        "tab" => KeyCode::Tab,
        "backtab" => KeyCode::BackTab,
        "space" => KeyCode::Char(' '),
        "backspace" => KeyCode::Backspace,
        "delete" | "del" => KeyCode::Delete,
        "up" => KeyCode::Up,
        "down" => KeyCode::Down,
        "left" => KeyCode::Left,
        "right" => KeyCode::Right,
        "home" => KeyCode::Home,
        "end" => KeyCode::End,
        "pgup" | "pageup" => KeyCode::PageUp,
        "pgdown" | "pagedown" => KeyCode::PageDown,
        f if f.len() > 1 && f.starts_with('f') && f[1..].parse::<u8>().is_ok() => {
            KeyCode::F(f[1..].parse().unwrap_or(1))
        }
        _ if rest.chars().count() == 1 => KeyCode::Char(rest.chars().next().unwrap_or(' ')),
        _ => {
            return Err(format!(
                "{text:?} is not a key: use a character, ctrl-x, shift-tab, esc, enter, up, pgdown, f1…"
            ));
        }
    };
    Ok((code, modifiers))
}

/// Installs the user's key bindings (command name → keys) for this process.
pub fn install(bindings: &std::collections::BTreeMap<String, Vec<String>>) -> Result<(), String> {
    let mut rebound = Vec::new();
    for (command_name, keys) in bindings {
        let command = BINDINGS
            .iter()
            .map(|b| b.command)
            .find(|c| name(*c) == *command_name)
            .ok_or_else(|| {
                let mut names: Vec<String> = BINDINGS.iter().map(|b| name(b.command)).collect();
                names.dedup();
                format!(
                    "{command_name:?} is not a command; known: {}",
                    names.join(", ")
                )
            })?;
        if keys.is_empty() {
            return Err(format!("{command_name:?} needs at least one key"));
        }
        let parsed = keys
            .iter()
            .map(|k| parse_key(k))
            .collect::<Result<Vec<_>, _>>()?;
        rebound.push((command, parsed, keys.join(" ")));
    }
    let _ = REBOUND.set(rebound);
    Ok(())
}

fn keys_of(binding: &Binding) -> Vec<(KeyCode, KeyModifiers)> {
    match REBOUND
        .get()
        .and_then(|r| r.iter().find(|(c, _, _)| *c == binding.command))
    {
        Some((_, keys, _)) => keys.clone(),
        None => binding.keys.to_vec(),
    }
}

/// The label shown for a binding's keys, following any rebinding.
pub fn label(binding: &Binding) -> String {
    match REBOUND
        .get()
        .and_then(|r| r.iter().find(|(c, _, _)| *c == binding.command))
    {
        Some((_, _, label)) => label.clone(),
        None => binding.label.to_string(),
    }
}

/// The command a key means in a scope, if any.
pub fn lookup(scope: Scope, key: &KeyEvent) -> Option<Command> {
    BINDINGS
        .iter()
        .filter(|b| b.scope == scope)
        .find(|b| {
            keys_of(b).iter().any(|(code, modifiers)| {
                *code == key.code
                    && (key.modifiers - KeyModifiers::SHIFT == *modifiers - KeyModifiers::SHIFT)
            })
        })
        .map(|b| b.command)
}

/// The bindings of a scope as (command, label, help), in table order.
pub fn hints(scope: Scope) -> Vec<(Command, String, &'static str)> {
    BINDINGS
        .iter()
        .filter(|b| b.scope == scope)
        .map(|b| (b.command, label(b), b.help))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    #[test]
    fn keys_resolve_per_scope() {
        assert_eq!(
            lookup(Scope::Checkpoint, &key(KeyCode::Char('g'), NONE)),
            Some(Command::Guide)
        );
        assert_eq!(
            lookup(Scope::Screen, &key(KeyCode::Char('g'), NONE)),
            Some(Command::Top)
        );
        assert_eq!(
            lookup(Scope::Editor, &key(KeyCode::Char('s'), CTRL)),
            Some(Command::SubmitGuidance)
        );
        assert_eq!(
            lookup(Scope::Screen, &key(KeyCode::Char('c'), CTRL)),
            Some(Command::Quit)
        );
        assert_eq!(
            lookup(Scope::Screen, &key(KeyCode::Char('?'), SHIFT)),
            Some(Command::Help)
        );
        assert_eq!(lookup(Scope::Screen, &key(KeyCode::Char('x'), NONE)), None);
    }

    #[test]
    fn keys_parse_and_names_are_snake_case() {
        assert_eq!(parse_key("q"), Ok((KeyCode::Char('q'), NONE)));
        assert_eq!(parse_key("ctrl-s"), Ok((KeyCode::Char('s'), CTRL)));
        assert_eq!(parse_key("shift-tab"), Ok((KeyCode::BackTab, SHIFT)));
        assert_eq!(parse_key("PgDown"), Ok((KeyCode::PageDown, NONE)));
        assert_eq!(parse_key("f5"), Ok((KeyCode::F(5), NONE)));
        assert!(parse_key("ctrl-banana").is_err());
        assert_eq!(name(Command::SubmitGuidance), "submit_guidance");
        assert_eq!(name(Command::Quit), "quit");
    }

    #[test]
    fn every_command_has_a_key_and_help() {
        for binding in BINDINGS {
            assert!(
                !binding.keys.is_empty() && !binding.help.is_empty() && !binding.label.is_empty()
            );
        }
    }
}
