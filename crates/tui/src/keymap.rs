//! Every command the workbench knows, in every scope (live screen, modals, history, form), with
//! its keys and help text. `Keymap` is one value built from the defaults and `[ui.keys]`, passed
//! to every screen: key handling, footers, modal hints and the `?` overlay all read it, so what
//! the screen says is what the keys do.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::collections::BTreeMap;

/// Something the user can ask for. Its config name (`[ui.keys]`) is its snake_case name.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    strum::EnumIter,
    strum::IntoStaticStr,
    strum::EnumString,
)]
#[strum(serialize_all = "snake_case")]
pub enum Command {
    Quit,
    Help,
    Back,
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
    ToggleContext,
    ToggleTopology,
    ToggleLessons,
    ToggleVotes,
    ToggleScores,
    ToggleTests,
    ToggleVersions,
    NextFact,
    PreviousFact,
    OpenSource,
    Maximize,
    Synthesis,
    SeatTokens,
    CopyTurn,
    ZoomIn,
    ZoomOut,
    MapUp,
    MapDown,
    NextArgument,
    PreviousArgument,
    HighlightSeat,
    Continue,
    Guide,
    End,
    Accept,
    Revise,
    Reject,
    SubmitGuidance,
    Cancel,
    NextChoice,
    PreviousChoice,
    Choose,
    ToggleArguments,
    ToggleSection,
    Copy,
    Pager,
    Editor,
    WriteFollowUp,
    Open,
    Resume,
    Delete,
    Confirm,
    Search,
    FinishSearch,
    NewDebate,
    NextField,
    PreviousField,
    Increase,
    Decrease,
    Toggle,
}

impl Command {
    /// The name `[ui.keys]` uses.
    pub fn name(self) -> &'static str {
        self.into()
    }
}

/// Where a binding applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::EnumIter)]
pub enum Scope {
    /// The live screen (also while a question waits).
    Screen,
    /// Between rounds.
    Checkpoint,
    /// The moderator proposes to conclude.
    Conclusion,
    /// The synthesis awaits approval.
    Approval,
    /// A contested result waits for the person to pick an option (letters pick).
    Choice,
    /// The guidance (or revision) editor.
    Editor,
    /// The synthesis view.
    Synthesis,
    /// The key list.
    Help,
    /// The history screen.
    History,
    /// Typing a history search.
    Search,
    /// Confirming a deletion.
    Confirm,
    /// The new-debate form.
    Form,
}

impl Scope {
    /// The heading of this scope in the key list.
    pub fn heading(self) -> &'static str {
        match self {
            Scope::Screen => "Anywhere on the live screen",
            Scope::Checkpoint => "At a checkpoint",
            Scope::Conclusion => "When the moderator proposes to conclude",
            Scope::Approval => "Approving the synthesis",
            Scope::Choice => "Choosing an option of a contested result",
            Scope::Editor => "Writing guidance or a revision request",
            Scope::Synthesis => "In the synthesis",
            Scope::Help => "In this list",
            Scope::History => "In the history",
            Scope::Search => "Searching the history",
            Scope::Confirm => "Confirming a deletion",
            Scope::Form => "In the new-debate form",
        }
    }
}

type Key = (KeyCode, KeyModifiers);

const NONE: KeyModifiers = KeyModifiers::NONE;
const CTRL: KeyModifiers = KeyModifiers::CONTROL;
const SHIFT: KeyModifiers = KeyModifiers::SHIFT;

const fn c(ch: char) -> Key {
    (KeyCode::Char(ch), NONE)
}

/// The default keys of a command in a scope, and what it does there.
struct Default {
    scope: Scope,
    command: Command,
    keys: &'static [Key],
    help: &'static str,
}

const fn bind(scope: Scope, command: Command, keys: &'static [Key], help: &'static str) -> Default {
    Default {
        scope,
        command,
        keys,
        help,
    }
}

use Command as C;
use Scope as S;

/// The default keymap, in the order the key list shows it.
const DEFAULTS: &[Default] = &[
    bind(S::Screen, C::Help, &[c('?')], "this list of keys"),
    bind(
        S::Screen,
        C::FocusNext,
        &[(KeyCode::Tab, NONE), (KeyCode::Right, NONE), c('l')],
        "focus the next pane",
    ),
    bind(
        S::Screen,
        C::FocusPrev,
        &[(KeyCode::BackTab, SHIFT), (KeyCode::Left, NONE), c('h')],
        "focus the previous pane",
    ),
    bind(
        S::Screen,
        C::ScrollDown,
        &[(KeyCode::Down, NONE), c('j')],
        "scroll down",
    ),
    bind(
        S::Screen,
        C::ScrollUp,
        &[(KeyCode::Up, NONE), c('k')],
        "scroll up",
    ),
    bind(
        S::Screen,
        C::PageDown,
        &[(KeyCode::PageDown, NONE), (KeyCode::Char('d'), CTRL)],
        "scroll a page down",
    ),
    bind(
        S::Screen,
        C::PageUp,
        &[(KeyCode::PageUp, NONE), (KeyCode::Char('u'), CTRL)],
        "scroll a page up",
    ),
    bind(
        S::Screen,
        C::Top,
        &[c('g'), (KeyCode::Home, NONE)],
        "scroll to the top",
    ),
    bind(
        S::Screen,
        C::Bottom,
        &[c('G'), (KeyCode::End, NONE)],
        "follow the newest text",
    ),
    bind(
        S::Screen,
        C::Synthesis,
        &[c('s')],
        "open or close the synthesis",
    ),
    bind(
        S::Screen,
        C::ToggleCommitments,
        &[c('m')],
        "show or hide the commitment stores",
    ),
    bind(
        S::Screen,
        C::ToggleMap,
        &[c('a')],
        "show or hide the argument map (a panel debate's options)",
    ),
    bind(
        S::Screen,
        C::ToggleContext,
        &[c('x')],
        "show or hide the shared context K",
    ),
    bind(
        S::Screen,
        C::ToggleTopology,
        &[c('T')],
        "show or hide who sees whom (a topology other than mesh)",
    ),
    bind(
        S::Screen,
        C::ToggleLessons,
        &[c('L')],
        "show or hide the lessons the seats were given",
    ),
    bind(
        S::Screen,
        C::ToggleVotes,
        &[c('V')],
        "show or hide the closing vote",
    ),
    bind(
        S::Screen,
        C::ToggleScores,
        &[c('S')],
        "show or hide the rubric scores",
    ),
    bind(
        S::Screen,
        C::ToggleTests,
        &[c('H')],
        "show or hide a code debate's hook runs",
    ),
    bind(
        S::Screen,
        C::ToggleVersions,
        &[c('D')],
        "show or hide a code debate's versions and their diffs",
    ),
    bind(
        S::Screen,
        C::NextFact,
        &[c(')')],
        "select the next fact of the shared context",
    ),
    bind(
        S::Screen,
        C::PreviousFact,
        &[c('(')],
        "select the previous fact of the shared context",
    ),
    bind(
        S::Screen,
        C::OpenSource,
        &[c('o')],
        "open the selected fact's source file in $PAGER at its line",
    ),
    bind(
        S::Screen,
        C::Maximize,
        &[c('z')],
        "maximise the side panels, or restore",
    ),
    bind(
        S::Screen,
        C::NextArgument,
        &[c(']')],
        "select the next argument on the map and light its path",
    ),
    bind(
        S::Screen,
        C::PreviousArgument,
        &[c('[')],
        "select the previous argument on the map",
    ),
    bind(S::Screen, C::ZoomIn, &[c('+'), c('=')], "zoom the map in"),
    bind(S::Screen, C::ZoomOut, &[c('-')], "zoom the map out"),
    bind(
        S::Screen,
        C::MapUp,
        &[c('K')],
        "scroll the map up (towards the first arguments)",
    ),
    bind(
        S::Screen,
        C::MapDown,
        &[c('J')],
        "scroll the map down (back to following the newest)",
    ),
    bind(
        S::Screen,
        C::HighlightSeat,
        &[c('v')],
        "highlight one seat's arguments on the map (cycles)",
    ),
    bind(
        S::Screen,
        C::SeatTokens,
        &[c('t')],
        "show or hide each seat's tokens",
    ),
    bind(
        S::Screen,
        C::CopyTurn,
        &[c('y')],
        "copy the focused seat's latest turn (OSC 52)",
    ),
    bind(
        S::Screen,
        C::Quit,
        &[c('q'), (KeyCode::Char('c'), CTRL)],
        "quit (a running debate pauses; moot resume ID)",
    ),
    bind(
        S::Checkpoint,
        C::Continue,
        &[c('c')],
        "continue to the next round",
    ),
    bind(
        S::Checkpoint,
        C::Guide,
        &[c('g')],
        "guide: write what the next round must address",
    ),
    bind(
        S::Checkpoint,
        C::End,
        &[c('e')],
        "end the debate and synthesise",
    ),
    bind(
        S::Conclusion,
        C::Accept,
        &[c('a')],
        "accept the conclusion and synthesise",
    ),
    bind(S::Conclusion, C::Continue, &[c('c')], "one more round"),
    bind(
        S::Conclusion,
        C::Guide,
        &[c('g')],
        "one more round, guided: write what it must address",
    ),
    bind(S::Approval, C::Accept, &[c('a')], "approve the synthesis"),
    bind(
        S::Approval,
        C::Revise,
        &[c('r')],
        "ask for one revision: write what it must address",
    ),
    bind(S::Approval, C::Reject, &[c('n')], "leave it unapproved"),
    bind(
        S::Choice,
        C::NextChoice,
        &[(KeyCode::Down, NONE), c('j')],
        "select the next option",
    ),
    bind(
        S::Choice,
        C::PreviousChoice,
        &[(KeyCode::Up, NONE), c('k')],
        "select the previous option",
    ),
    bind(
        S::Choice,
        C::Choose,
        &[(KeyCode::Enter, NONE)],
        "choose the selected option",
    ),
    bind(
        S::Choice,
        C::Reject,
        &[(KeyCode::Esc, NONE)],
        "leave the choice open (moot decide ID OPTION later)",
    ),
    bind(
        S::Editor,
        C::SubmitGuidance,
        &[(KeyCode::Char('s'), CTRL)],
        "send",
    ),
    bind(S::Editor, C::Cancel, &[(KeyCode::Esc, NONE)], "back"),
    bind(
        S::Synthesis,
        C::ToggleArguments,
        &[c('f')],
        "show or hide every perspective's full arguments",
    ),
    bind(
        S::Synthesis,
        C::ToggleSection,
        &[c('1'), c('2'), c('3'), c('4')],
        "show or hide one perspective's full arguments",
    ),
    bind(
        S::Synthesis,
        C::Copy,
        &[c('y')],
        "copy the document (OSC 52, works over SSH)",
    ),
    bind(S::Synthesis, C::Pager, &[c('o')], "open it in $PAGER"),
    bind(S::Synthesis, C::Editor, &[c('E')], "open it in $EDITOR"),
    bind(
        S::Synthesis,
        C::WriteFollowUp,
        &[c('w')],
        "create a follow-up issue draft from this decision",
    ),
    bind(S::Synthesis, C::Back, &[(KeyCode::Esc, NONE)], "close"),
    bind(S::Help, C::Back, &[(KeyCode::Esc, NONE)], "close"),
    bind(
        S::History,
        C::ScrollDown,
        &[(KeyCode::Down, NONE), c('j')],
        "select the next debate",
    ),
    bind(
        S::History,
        C::ScrollUp,
        &[(KeyCode::Up, NONE), c('k')],
        "select the previous debate",
    ),
    bind(
        S::History,
        C::PageDown,
        &[(KeyCode::PageDown, NONE), (KeyCode::Char('d'), CTRL)],
        "a page down",
    ),
    bind(
        S::History,
        C::PageUp,
        &[(KeyCode::PageUp, NONE), (KeyCode::Char('u'), CTRL)],
        "a page up",
    ),
    bind(
        S::History,
        C::Top,
        &[c('g'), (KeyCode::Home, NONE)],
        "the newest debate",
    ),
    bind(
        S::History,
        C::Bottom,
        &[c('G'), (KeyCode::End, NONE)],
        "the oldest debate",
    ),
    bind(
        S::History,
        C::Open,
        &[(KeyCode::Enter, NONE), c('o')],
        "open it, replayed read-only",
    ),
    bind(
        S::History,
        C::Resume,
        &[c('r')],
        "resume a paused, interrupted or failed debate",
    ),
    bind(
        S::History,
        C::Delete,
        &[c('d'), (KeyCode::Delete, NONE)],
        "delete it (asks first)",
    ),
    bind(
        S::History,
        C::Search,
        &[c('/')],
        "search questions, arguments, guidance and syntheses",
    ),
    bind(S::History, C::NewDebate, &[c('n')], "start a new debate"),
    bind(S::History, C::Help, &[c('?')], "this list of keys"),
    bind(S::History, C::Quit, &[c('q')], "quit"),
    bind(
        S::History,
        C::Back,
        &[(KeyCode::Esc, NONE)],
        "clear a kept search, else quit",
    ),
    bind(
        S::Search,
        C::FinishSearch,
        &[(KeyCode::Enter, NONE), (KeyCode::Down, NONE)],
        "keep the search and pick from it",
    ),
    bind(
        S::Search,
        C::Cancel,
        &[(KeyCode::Esc, NONE)],
        "clear the search",
    ),
    bind(
        S::Confirm,
        C::Confirm,
        &[c('y')],
        "delete it (any other key keeps it)",
    ),
    bind(S::Form, C::NextField, &[(KeyCode::Tab, NONE)], "next field"),
    bind(
        S::Form,
        C::PreviousField,
        &[(KeyCode::BackTab, SHIFT)],
        "previous field",
    ),
    bind(
        S::Form,
        C::Increase,
        &[(KeyCode::Right, NONE), c('+')],
        "more (or the next choice)",
    ),
    bind(
        S::Form,
        C::Decrease,
        &[(KeyCode::Left, NONE), c('-')],
        "fewer (or the previous choice)",
    ),
    bind(
        S::Form,
        C::Toggle,
        &[c(' ')],
        "choose or drop a perspective; checkpoints on or off",
    ),
    bind(
        S::Form,
        C::SubmitGuidance,
        &[(KeyCode::Char('s'), CTRL)],
        "start the debate",
    ),
    bind(S::Form, C::Cancel, &[(KeyCode::Esc, NONE)], "cancel"),
];

/// One command's keys in one scope.
#[derive(Debug, Clone, PartialEq)]
pub struct Binding {
    pub scope: Scope,
    pub command: Command,
    pub keys: Vec<Key>,
    pub help: &'static str,
}

impl Binding {
    /// The keys as the screen shows them: `c`, `Ctrl-S`, `Tab → l`.
    pub fn label(&self) -> String {
        self.keys
            .iter()
            .map(|key| key_name(*key))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A `[ui.keys]` entry that cannot be used, and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum KeymapError {
    #[error("{name:?} is not a command; known: {known}")]
    UnknownCommand { name: String, known: String },
    #[error("{0:?} needs at least one key")]
    NoKeys(String),
    #[error(
        "{key:?} is not a key: use a character, ctrl-x, shift-tab, esc, enter, up, pgdown, f1…"
    )]
    BadKey { key: String },
    #[error("{key} would mean both {first} and {second} ({where_}); give one of them another key")]
    Clash {
        key: String,
        first: &'static str,
        second: &'static str,
        where_: &'static str,
    },
}

/// Every binding of every scope, after the user's rebindings.
#[derive(Debug, Clone, PartialEq)]
pub struct Keymap {
    bindings: Vec<Binding>,
}

impl std::default::Default for Keymap {
    fn default() -> Self {
        Keymap {
            bindings: DEFAULTS
                .iter()
                .map(|d| Binding {
                    scope: d.scope,
                    command: d.command,
                    keys: d.keys.to_vec(),
                    help: d.help,
                })
                .collect(),
        }
    }
}

impl Keymap {
    /// The defaults with `[ui.keys]` applied: a command given keys there gets exactly those
    /// keys, in every scope it is bound in.
    pub fn new(rebound: &BTreeMap<String, Vec<String>>) -> Result<Keymap, KeymapError> {
        let mut keymap = Keymap::default();
        for (name, keys) in rebound {
            let command: Command = name.parse().map_err(|_| KeymapError::UnknownCommand {
                name: name.clone(),
                known: <Command as strum::IntoEnumIterator>::iter()
                    .map(Command::name)
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
            if keys.is_empty() {
                return Err(KeymapError::NoKeys(name.clone()));
            }
            let parsed = keys
                .iter()
                .map(|k| parse_key(k))
                .collect::<Result<Vec<_>, _>>()?;
            for binding in keymap.bindings.iter_mut().filter(|b| b.command == command) {
                binding.keys = parsed.clone();
            }
        }
        keymap.check_clashes()?;
        Ok(keymap)
    }

    /// Two commands of one scope on one key would make one of them unreachable.
    fn check_clashes(&self) -> Result<(), KeymapError> {
        for (i, first) in self.bindings.iter().enumerate() {
            for second in self.bindings[i + 1..]
                .iter()
                .filter(|b| b.scope == first.scope && b.command != first.command)
            {
                if let Some(key) = first
                    .keys
                    .iter()
                    .find(|k| second.keys.iter().any(|o| same_key(**k, *o)))
                {
                    return Err(KeymapError::Clash {
                        key: key_name(*key),
                        first: first.command.name(),
                        second: second.command.name(),
                        where_: first.scope.heading(),
                    });
                }
            }
        }
        Ok(())
    }

    /// The command a key means in a scope, if any.
    pub fn lookup(&self, scope: Scope, key: &KeyEvent) -> Option<Command> {
        self.find(scope, key).map(|(command, _)| command)
    }

    /// The command a key means in a scope and which of its keys it was (the first, second…),
    /// for commands whose keys each pick something (`1`–`4` pick a section).
    pub fn find(&self, scope: Scope, key: &KeyEvent) -> Option<(Command, usize)> {
        self.bindings
            .iter()
            .filter(|b| b.scope == scope)
            .find_map(|b| {
                b.keys
                    .iter()
                    .position(|k| same_key(*k, (key.code, key.modifiers)))
                    .map(|index| (b.command, index))
            })
    }

    /// A command's binding in a scope.
    pub fn binding(&self, scope: Scope, command: Command) -> Option<&Binding> {
        self.bindings
            .iter()
            .find(|b| b.scope == scope && b.command == command)
    }

    /// The keys of a command in a scope, as shown (empty when it has none there).
    pub fn hint(&self, scope: Scope, command: Command) -> String {
        self.binding(scope, command)
            .map(Binding::label)
            .unwrap_or_default()
    }

    /// How far a key scrolls a list or a document in a scope: a line or `page` lines, up
    /// (negative) or down; None for a key that does not scroll.
    pub fn scroll(&self, scope: Scope, key: &KeyEvent, page: i32) -> Option<i32> {
        match self.lookup(scope, key)? {
            Command::ScrollDown => Some(1),
            Command::ScrollUp => Some(-1),
            Command::PageDown => Some(page),
            Command::PageUp => Some(-page),
            _ => None,
        }
    }

    /// The first key of a command in a scope, as shown (empty when it has none there): for
    /// places with room for one key only.
    pub fn key(&self, scope: Scope, command: Command) -> String {
        self.binding(scope, command)
            .and_then(|b| b.keys.first())
            .map(|key| key_name(*key))
            .unwrap_or_default()
    }

    /// The bindings of a scope, in key-list order.
    pub fn scope(&self, scope: Scope) -> impl Iterator<Item = &Binding> {
        self.bindings.iter().filter(move |b| b.scope == scope)
    }

    /// `[keys] what · [keys] what`, for a modal's or a title's hint line, from the bindings of
    /// these commands in this scope (with the text given here, fitted to the place).
    pub fn line(&self, scope: Scope, items: &[(Command, &str)]) -> String {
        items
            .iter()
            .filter_map(|(command, what)| {
                let keys = self.hint(scope, *command);
                (!keys.is_empty()).then(|| format!("{keys} {what}"))
            })
            .collect::<Vec<_>>()
            .join(" · ")
    }
}

/// Two keys are the same when code and modifiers match, ignoring Shift: terminals disagree on
/// whether `G` arrives with Shift.
fn same_key(a: Key, b: Key) -> bool {
    a.0 == b.0 && a.1 - SHIFT == b.1 - SHIFT
}

/// How a key is written on screen.
pub fn key_name((code, modifiers): Key) -> String {
    let base = match code {
        KeyCode::Char(' ') => "Space".to_string(),
        KeyCode::Char(ch) if modifiers.contains(CTRL) => ch.to_ascii_uppercase().to_string(),
        KeyCode::Char(ch) => ch.to_string(),
        KeyCode::Tab => "Tab".into(),
        KeyCode::BackTab => "S-Tab".into(),
        KeyCode::Enter => "Enter".into(),
        KeyCode::Esc => "Esc".into(),
        KeyCode::Up => "↑".into(),
        KeyCode::Down => "↓".into(),
        KeyCode::Left => "←".into(),
        KeyCode::Right => "→".into(),
        KeyCode::PageUp => "PgUp".into(),
        KeyCode::PageDown => "PgDn".into(),
        KeyCode::Home => "Home".into(),
        KeyCode::End => "End".into(),
        KeyCode::Delete => "Del".into(),
        KeyCode::Backspace => "Backspace".into(),
        KeyCode::F(n) => format!("F{n}"),
        other => format!("{other:?}"),
    };
    let mut name = String::new();
    if modifiers.contains(CTRL) {
        name.push_str("Ctrl-");
    }
    if modifiers.contains(KeyModifiers::ALT) {
        name.push_str("Alt-");
    }
    name + &base
}

/// Parses a key such as `q`, `G`, `ctrl-s`, `shift-tab`, `esc`, `pgdown`, `f1`, `space`.
pub fn parse_key(text: &str) -> Result<Key, KeymapError> {
    let bad = || KeymapError::BadKey {
        key: text.to_string(),
    };
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
            KeyCode::F(f[1..].parse().map_err(|_| bad())?)
        }
        _ => {
            let mut chars = rest.chars();
            match (chars.next(), chars.next()) {
                (Some(ch), None) => KeyCode::Char(ch),
                _ => return Err(bad()),
            }
        }
    };
    Ok((code, modifiers))
}

#[cfg(test)]
mod tests {
    use super::*;
    use strum::IntoEnumIterator;

    fn key(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    #[test]
    fn keys_resolve_per_scope() {
        let keymap = Keymap::default();
        assert_eq!(
            keymap.lookup(Scope::Checkpoint, &key(KeyCode::Char('g'), NONE)),
            Some(Command::Guide)
        );
        assert_eq!(
            keymap.lookup(Scope::Screen, &key(KeyCode::Char('g'), NONE)),
            Some(Command::Top)
        );
        assert_eq!(
            keymap.lookup(Scope::Editor, &key(KeyCode::Char('s'), CTRL)),
            Some(Command::SubmitGuidance)
        );
        assert_eq!(
            keymap.lookup(Scope::Screen, &key(KeyCode::Char('c'), CTRL)),
            Some(Command::Quit)
        );
        assert_eq!(
            keymap.lookup(Scope::Screen, &key(KeyCode::Char('?'), SHIFT)),
            Some(Command::Help)
        );
        assert_eq!(
            keymap.find(Scope::Synthesis, &key(KeyCode::Char('3'), NONE)),
            Some((Command::ToggleSection, 2))
        );
        assert_eq!(
            keymap.lookup(Scope::Screen, &key(KeyCode::Char('Q'), SHIFT)),
            None
        );
    }

    #[test]
    fn keys_parse_and_print_the_same_way() {
        assert_eq!(parse_key("q"), Ok((KeyCode::Char('q'), NONE)));
        assert_eq!(parse_key("ctrl-s"), Ok((KeyCode::Char('s'), CTRL)));
        assert_eq!(parse_key("shift-tab"), Ok((KeyCode::BackTab, SHIFT)));
        assert_eq!(parse_key("PgDown"), Ok((KeyCode::PageDown, NONE)));
        assert_eq!(parse_key("f5"), Ok((KeyCode::F(5), NONE)));
        assert!(parse_key("ctrl-banana").is_err());
        assert_eq!(key_name((KeyCode::Char('s'), CTRL)), "Ctrl-S");
        assert_eq!(key_name((KeyCode::Char(' '), NONE)), "Space");
        assert_eq!(Command::SubmitGuidance.name(), "submit_guidance");
        assert_eq!("write_follow_up".parse(), Ok(Command::WriteFollowUp));
    }

    #[test]
    fn every_command_has_a_key_and_help_somewhere() {
        let keymap = Keymap::default();
        for command in Command::iter() {
            let bindings: Vec<&Binding> = keymap
                .bindings
                .iter()
                .filter(|b| b.command == command)
                .collect();
            assert!(!bindings.is_empty(), "{command:?} has no binding");
            for binding in bindings {
                assert!(
                    !binding.keys.is_empty() && !binding.help.is_empty(),
                    "{binding:?}"
                );
            }
        }
        for scope in Scope::iter() {
            assert!(
                keymap.scope(scope).next().is_some(),
                "{scope:?} has no keys"
            );
        }
        assert_eq!(keymap.check_clashes(), Ok(()), "the defaults never clash");
    }

    #[test]
    fn a_rebinding_changes_every_scope_and_every_hint() {
        let rebound = BTreeMap::from([
            ("end".to_string(), vec!["x".to_string()]),
            ("continue".to_string(), vec!["space".to_string()]),
        ]);
        let keymap = Keymap::new(&rebound).unwrap();
        assert_eq!(
            keymap.lookup(Scope::Checkpoint, &key(KeyCode::Char('x'), NONE)),
            Some(Command::End)
        );
        assert_eq!(
            keymap.lookup(Scope::Checkpoint, &key(KeyCode::Char('e'), NONE)),
            None
        );
        assert_eq!(
            keymap.lookup(Scope::Conclusion, &key(KeyCode::Char(' '), NONE)),
            Some(Command::Continue),
            "one command, the same keys in every scope"
        );
        assert_eq!(
            keymap.line(
                Scope::Checkpoint,
                &[(Command::Continue, "continue"), (Command::End, "end")]
            ),
            "Space continue · x end"
        );
    }

    #[test]
    fn bad_rebindings_say_what_is_wrong() {
        let one = |name: &str, keys: &[&str]| {
            Keymap::new(&BTreeMap::from([(
                name.to_string(),
                keys.iter().map(|k| k.to_string()).collect(),
            )]))
        };
        let error = one("shout", &["x"]).unwrap_err().to_string();
        assert!(
            error.contains("not a command") && error.contains("write_follow_up"),
            "{error}"
        );
        assert!(
            one("end", &[])
                .unwrap_err()
                .to_string()
                .contains("at least one key")
        );
        assert!(one("end", &["ctrl-banana"]).is_err());
        let error = one("end", &["c"]).unwrap_err().to_string();
        assert!(
            error.contains("both") && error.contains("continue") && error.contains("end"),
            "{error}"
        );
    }
}
