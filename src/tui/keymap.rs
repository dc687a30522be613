//! Every command the workbench knows, with its keys and help text. The key handling and the
//! `?` overlay both read this one table, so help cannot drift from behaviour.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

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
        help: "show or hide each perspective's full arguments",
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

/// The command a key means in a scope, if any.
pub fn lookup(scope: Scope, key: &KeyEvent) -> Option<Command> {
    BINDINGS
        .iter()
        .filter(|b| b.scope == scope)
        .find(|b| {
            b.keys.iter().any(|(code, modifiers)| {
                *code == key.code
                    && (key.modifiers - KeyModifiers::SHIFT == *modifiers - KeyModifiers::SHIFT)
            })
        })
        .map(|b| b.command)
}

/// The bindings of a scope as (command, label, help), in table order.
pub fn hints(scope: Scope) -> Vec<(Command, &'static str, &'static str)> {
    BINDINGS
        .iter()
        .filter(|b| b.scope == scope)
        .map(|b| (b.command, b.label, b.help))
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
    fn every_command_has_a_key_and_help() {
        for binding in BINDINGS {
            assert!(
                !binding.keys.is_empty() && !binding.help.is_empty() && !binding.label.is_empty()
            );
        }
    }
}
