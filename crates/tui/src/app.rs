//! The workbench's state and how it reacts: engine events fold into the debate view, keys
//! become commands (through the one `Keymap`), commands become effects (controls for the
//! engine, quitting). No I/O here.

use super::keymap::{Command, Keymap, Scope};
use super::state::DebateView;
use crate::debate::{AskKind, Control, Event, SidePanel};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use ratatui_textarea::{TextArea, WrapMode};
use std::sync::Arc;

/// What the app asks the loop to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    Control(Control),
    Quit,
    /// Put this text on the clipboard (OSC 52, so it works over SSH).
    Copy(String),
    /// Show the synthesis in $PAGER, or open it in $EDITOR: its record file if it was
    /// written, else a temporary copy.
    Page {
        markdown: String,
        path: Option<String>,
    },
    Edit {
        markdown: String,
        path: Option<String>,
    },
    /// Write the follow-up issue draft of this debate's decision.
    WriteFollowUp(String),
    /// Show a cited source file in $PAGER at a line; `root` is the directory the debate
    /// gathered under and `path` a path gathering found inside it.
    OpenSource {
        root: String,
        path: String,
        line: u32,
    },
}

/// What the text editor's words are for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Writing {
    /// Guidance for the next round (at a checkpoint or a conclusion).
    Guidance,
    /// The options a panel judges, in place of the moderator's.
    Options,
    /// The answer to the moderator's clarifying question.
    Answer,
    /// What the revised synthesis must address.
    Revision,
    /// The words of a seat the person plays.
    Turn,
    /// Why an approval gate is rejected.
    Rejection,
}

impl Writing {
    pub fn title(self) -> &'static str {
        match self {
            Writing::Guidance => "Guidance for the next round",
            Writing::Options => "Options",
            Writing::Answer => "Your answer",
            Writing::Revision => "What must the revised synthesis address?",
            Writing::Turn => "Your turn: what your seat says",
            Writing::Rejection => "Why is this gate rejected?",
        }
    }

    fn control(self, text: String) -> Control {
        match self {
            Writing::Guidance | Writing::Options | Writing::Answer | Writing::Turn => {
                Control::Guide(text)
            }
            Writing::Revision => Control::Revise(text),
            Writing::Rejection => Control::Decline(text),
        }
    }
}

/// The layer on top of the live screen, if any.
pub enum Modal {
    None,
    /// A question waits (checkpoint, conclusion, clarification): its keys come first.
    Ask,
    Editor {
        writing: Writing,
        text: Box<TextArea<'static>>,
    },
    /// The key list, scrolled by this many lines (it is longer than a small terminal).
    Help(u16),
    /// `expanded` holds, per seat, whether its full arguments show under the document. While
    /// an approval waits, its keys come first here.
    Synthesis {
        scroll: u16,
        expanded: Vec<bool>,
    },
}

/// Whether `command` shows or hides a side panel.
fn toggles_a_side_panel(command: Command) -> bool {
    matches!(
        command,
        Command::ToggleCommitments
            | Command::ToggleMap
            | Command::ToggleContext
            | Command::ToggleTopology
            | Command::ToggleLessons
            | Command::ToggleVotes
            | Command::ToggleScores
            | Command::ToggleTests
            | Command::ToggleVersions
    )
}

/// Which side panels show: each has its own flag, and its own key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Panels {
    /// One bit per `SidePanel` the person hid.
    hidden: u16,
    /// The selected fact of K, which `o` opens.
    pub fact: Option<usize>,
    /// The side panels take the whole body.
    pub maximized: bool,
}

impl Panels {
    fn bit(panel: SidePanel) -> u16 {
        1 << (panel as u16)
    }

    /// Whether the person left `panel` showing.
    pub fn shows(&self, panel: SidePanel) -> bool {
        self.hidden & Self::bit(panel) == 0
    }

    /// Shows `panel` if hidden, hides it if shown.
    pub fn toggle(&mut self, panel: SidePanel) {
        self.hidden ^= Self::bit(panel);
    }

    pub fn show(&mut self, panel: SidePanel) {
        self.hidden &= !Self::bit(panel);
    }
}

/// The argument map's view state.
#[derive(Debug, Clone, Default)]
pub struct MapView {
    /// 0 compact, 1 boxes, 2 wide boxes.
    pub zoom: usize,
    /// The selected argument (index into the graph); its path is highlighted.
    pub selected: Option<usize>,
    /// A seat whose arguments stand out (index into the seats).
    pub seat: Option<usize>,
    /// Rows scrolled up from the newest layer; 0 follows the newest arguments.
    pub scroll_back: usize,
    /// Where each visible argument was drawn, for the mouse.
    pub boxes: Vec<(usize, ratatui::layout::Rect)>,
    /// The last drawing and what it was drawn from, so an unchanged map is not laid out again.
    pub drawn: Option<MapDrawing>,
}

/// A drawn map: what it was drawn from, its lines, and where each argument landed.
#[derive(Debug, Clone)]
pub struct MapDrawing {
    pub key: MapKey,
    pub lines: Vec<ratatui::text::Line<'static>>,
    pub boxes: Vec<(usize, ratatui::layout::Rect)>,
}

/// Everything the map drawing depends on: when one of these changes, the map is laid out
/// again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapKey {
    pub scroll_back: usize,
    /// The view's generation: it moves with every event that changes the graph.
    pub generation: u64,
    pub zoom: usize,
    pub selected: Option<usize>,
    pub seat: Option<usize>,
    pub area: ratatui::layout::Rect,
}

pub struct App {
    pub view: DebateView,
    /// The option selected while a choice waits (an index into its choices).
    pub choice: usize,
    /// Every key and hint of every screen and modal.
    pub keymap: Arc<Keymap>,
    pub map: MapView,
    /// The focused pane (seat index).
    pub focus: usize,
    /// Per pane: None follows the newest text; Some(n) is n lines from the top.
    pub scroll: Vec<Option<usize>>,
    pub panels: Panels,
    pub modal: Modal,
    /// Opened from history: nothing can be sent to an engine.
    pub read_only: bool,
    /// Frames of the spinner, advanced by ticks while something streams.
    pub spinner: usize,
    pub dirty: bool,
    /// Screen height of a pane, from the last draw, for page scrolling.
    pub page: usize,
    /// A short message for the footer (copied, opened…), cleared by the next key.
    pub notice: Option<String>,
    /// When this live debate started on screen; None for replays (and snapshots).
    pub started: Option<std::time::Instant>,
    /// Seconds shown in the header, so a tick redraws only when it changes.
    shown_seconds: u64,
    /// Pane titles carry each seat's token counts.
    pub seat_tokens: bool,
    /// Where each seat's pane was drawn last, for the mouse.
    pub pane_areas: Vec<(usize, ratatui::layout::Rect)>,
    /// Per pane, the first line shown at the last draw, where scrolling starts from.
    shown_from: Vec<usize>,
    /// When a seat's turn was requested from outside moot, for its countdown.
    pub requested_at: Vec<(String, std::time::Instant)>,
    /// The earlier turns a person's turn may answer, while its editor is open.
    pub turn_pick: Option<TurnPick>,
    /// The words last sent from an editor, kept so that an answer the debate refuses can be
    /// mended rather than typed again.
    sent: Option<(Writing, String)>,
    /// Words typed into an editor that was closed unsent (Esc, Ctrl-C, a pause): opening that
    /// editor again brings them back, and a pause keeps them in the journal for the resume.
    pub draft: Option<(Writing, String)>,
    /// The last frame was too narrow for the side panels beside the panes (set by the draw):
    /// a panel's key then says where they went instead of changing what cannot be seen.
    pub side_off_screen: bool,
    /// Another process runs this debate and this screen follows it ("live", "attached to
    /// URL"): the header says so, and leaving leaves the debate running.
    pub watching: Option<String>,
    /// An answer that cannot be taken back, pressed once: pressing it again sends it, any
    /// other key drops it (U6: `a` is the map's key on the screen and "accept" at a
    /// conclusion; `e` ends a debate at a checkpoint and cancels it at a clarification).
    armed: Option<Command>,
}

/// The turns a person's arena turn answers, picked beside its editor: a rebuttal must name
/// them, and picking is surer than typing `turn 3`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnPick {
    /// The turns spoken before this one: 1 … n (this one is n + 1).
    pub earlier: u32,
    pub picked: std::collections::BTreeSet<u32>,
    /// The turn the keys act on.
    pub cursor: u32,
    /// Whether the keys act on the list (else on the text).
    pub focused: bool,
}

impl TurnPick {
    /// What the submitted text says about the turns picked, when it does not name them yet:
    /// the arena reads `turn N` in a person's words as the turns answered.
    fn named_in(&self, text: &str) -> String {
        let lower = text.to_lowercase();
        let unnamed: Vec<String> = self
            .picked
            .iter()
            .filter(|n| !lower.contains(&format!("turn {n}")) && !lower.contains(&format!("#{n}")))
            .map(|n| format!("turn {n}"))
            .collect();
        if unnamed.is_empty() {
            text.to_string()
        } else {
            format!("{text}\n\n(Answering {}.)", unnamed.join(", "))
        }
    }
}

impl App {
    /// An app on the default keys.
    pub fn new(read_only: bool) -> Self {
        App::with_keymap(read_only, Arc::new(Keymap::default()))
    }

    pub fn with_keymap(read_only: bool, keymap: Arc<Keymap>) -> Self {
        App {
            view: DebateView::new(),
            keymap,
            map: MapView {
                zoom: 1,
                ..MapView::default()
            },
            focus: 0,
            scroll: Vec::new(),
            panels: Panels {
                hidden: 0,
                fact: None,
                maximized: false,
            },
            choice: 0,
            modal: Modal::None,
            read_only,
            spinner: 0,
            dirty: true,
            page: 10,
            notice: None,
            started: None,
            shown_seconds: 0,
            seat_tokens: false,
            pane_areas: Vec::new(),
            shown_from: Vec::new(),
            requested_at: Vec::new(),
            turn_pick: None,
            sent: None,
            draft: None,
            side_off_screen: false,
            watching: None,
            armed: None,
        }
    }

    pub fn on_event(&mut self, event: &Event) {
        self.view.apply(event);
        if matches!(event, Event::DebateCreated { .. }) && !self.read_only && self.started.is_none()
        {
            self.started = Some(std::time::Instant::now());
        }
        if self.scroll.len() != self.view.seats.len() {
            self.scroll.resize(self.view.seats.len(), None);
        }
        match event {
            Event::Checkpoint { kind, .. } if !self.read_only => match kind {
                AskKind::Approval | AskKind::RevisedApproval => self.open_synthesis(),
                // A seat the person plays: the editor opens in place, the panes beside it.
                AskKind::Turn => {
                    self.modal = Modal::Editor {
                        writing: Writing::Turn,
                        text: Box::new(editor(Writing::Turn)),
                    }
                }
                AskKind::Choice => {
                    self.choice = 0;
                    self.modal = Modal::Ask;
                }
                _ if !matches!(self.modal, Modal::Editor { .. }) => self.modal = Modal::Ask,
                _ => {}
            },
            Event::ClarificationRequested { .. } if !self.read_only => self.modal = Modal::Ask,
            Event::TurnRequested {
                seat,
                by,
                turn_number,
                ..
            } if !self.read_only => {
                // The person answers what was said: the panes stay where they are (their own
                // pane is empty), and the earlier turns can be picked beside the editor.
                if by == crate::debate::PERSON {
                    // The pane in front is the latest other seat's: what is most likely
                    // answered.
                    let latest = self
                        .view
                        .turns
                        .iter()
                        .rev()
                        .find(|t| t.seat != *seat && t.seat != crate::debate::MODERATOR)
                        .and_then(|t| self.view.seats.iter().position(|s| s.id == t.seat));
                    if let Some(index) = latest {
                        self.focus = index;
                    }
                    self.turn_pick = Some(TurnPick {
                        earlier: turn_number.saturating_sub(1),
                        cursor: turn_number.saturating_sub(1).max(1),
                        ..TurnPick::default()
                    });
                }
                self.requested_at.retain(|(s, _)| s != seat);
                self.requested_at
                    .push((seat.clone(), std::time::Instant::now()));
            }
            Event::CheckpointAnswered { .. }
            | Event::DebateStarted { .. }
            | Event::DebateCompleted { .. } => {
                if matches!(self.modal, Modal::Ask | Modal::Editor { .. }) {
                    self.modal = Modal::None;
                }
            }
            _ => {}
        }
        self.dirty = true;
    }

    /// The question waiting for an answer, if any (never in a read-only replay).
    pub fn pending(&self) -> Option<AskKind> {
        if self.read_only {
            return None;
        }
        if self.view.clarification.is_some() {
            return Some(AskKind::Clarification);
        }
        self.view.checkpoint.as_ref().map(|ask| ask.kind)
    }

    /// The keys of the question waiting, if any.
    pub fn ask_scope(&self) -> Option<Scope> {
        Some(match self.pending()? {
            AskKind::Clarification | AskKind::Checkpoint => Scope::Checkpoint,
            AskKind::Conclusion => Scope::Conclusion,
            AskKind::Approval | AskKind::RevisedApproval | AskKind::Gate => Scope::Approval,
            AskKind::Options | AskKind::Turn => Scope::Checkpoint,
            AskKind::Choice => Scope::Choice,
        })
    }

    fn open_synthesis(&mut self) {
        if !matches!(self.modal, Modal::Synthesis { .. }) {
            self.modal = Modal::Synthesis {
                scroll: 0,
                expanded: vec![false; self.view.seats.len()],
            };
        }
    }

    /// Seconds since the debate started, while it runs.
    pub fn elapsed(&self) -> Option<u64> {
        (!self.view.is_finished()).then_some(())?;
        self.started.map(|s| s.elapsed().as_secs())
    }

    /// Advances the spinner; only worth a redraw while something is being spoken.
    pub fn on_tick(&mut self) {
        if let Some(seconds) = self.elapsed()
            && seconds != self.shown_seconds
        {
            self.shown_seconds = seconds;
            self.dirty = true;
        }
        let busy = self.view.moderator.speaking.is_some()
            || self.view.activity.iter().any(|a| a.speaking.is_some());
        if busy {
            self.spinner = self.spinner.wrapping_add(1);
            self.dirty = true;
        }
    }

    /// The wheel scrolls the pane under the pointer (or the synthesis); a click focuses a pane.
    pub fn on_mouse(&mut self, mouse: MouseEvent) {
        let under = self
            .pane_areas
            .iter()
            .find(|(_, area)| {
                area.contains(ratatui::layout::Position::new(mouse.column, mouse.row))
            })
            .map(|(index, _)| *index);
        match mouse.kind {
            MouseEventKind::ScrollUp | MouseEventKind::ScrollDown => {
                let delta: isize = if mouse.kind == MouseEventKind::ScrollUp {
                    -3
                } else {
                    3
                };
                if let Modal::Synthesis { scroll, .. } = &mut self.modal {
                    *scroll = (*scroll as isize + delta).max(0) as u16;
                } else if let Some(index) = under {
                    self.focus = index;
                    self.scroll_by(delta);
                }
            }
            MouseEventKind::Down(MouseButton::Left) => {
                let position = ratatui::layout::Position::new(mouse.column, mouse.row);
                if let Some((argument, _)) = self
                    .map
                    .boxes
                    .iter()
                    .find(|(_, area)| area.contains(position))
                {
                    // Clicking the selected argument again clears the selection.
                    self.map.selected = (self.map.selected != Some(*argument)).then_some(*argument);
                } else if let Some(index) = under {
                    self.focus = index;
                }
            }
            _ => return,
        }
        self.dirty = true;
    }

    pub fn on_resize(&mut self) {
        self.dirty = true;
    }

    pub fn on_key(&mut self, key: KeyEvent) -> Option<Effect> {
        self.dirty = true;
        self.notice = None;
        let armed = self.armed.take();
        let keymap = self.keymap.clone();
        if let Modal::Editor { writing, text } = &mut self.modal {
            let writing = *writing;
            // A person's turn: Tab moves between the text and the turns it answers, which
            // the form's keys pick (← → choose, Space picks).
            if writing == Writing::Turn
                && let Some(pick) = self.turn_pick.as_mut()
                && pick.earlier > 0
            {
                let form = keymap.lookup(Scope::Form, &key);
                if form == Some(Command::NextField) {
                    pick.focused = !pick.focused;
                    return None;
                }
                if pick.focused && keymap.lookup(Scope::Editor, &key).is_none() {
                    match form {
                        Some(Command::Increase) => {
                            pick.cursor = (pick.cursor + 1).min(pick.earlier)
                        }
                        Some(Command::Decrease) => {
                            pick.cursor = pick.cursor.saturating_sub(1).max(1)
                        }
                        Some(Command::Toggle) if !pick.picked.remove(&pick.cursor) => {
                            pick.picked.insert(pick.cursor);
                        }
                        _ => {}
                    }
                    return None;
                }
            }
            return match keymap.lookup(Scope::Editor, &key) {
                Some(Command::SubmitGuidance) => {
                    let mut words = text.lines().join("\n").trim().to_string();
                    if words.is_empty() {
                        return None;
                    }
                    // The pick stays: a follower answers the turn under its number.
                    if writing == Writing::Turn
                        && let Some(pick) = &self.turn_pick
                    {
                        words = pick.named_in(&words);
                    }
                    self.modal = self.resting_modal();
                    self.draft = None;
                    self.sent = Some((writing, words.clone()));
                    Some(Effect::Control(writing.control(words)))
                }
                Some(Command::Cancel) => {
                    self.keep_draft();
                    None
                }
                _ => {
                    text.input(key);
                    None
                }
            };
        }
        if matches!(self.modal, Modal::Ask)
            && let Some(scope) = self.ask_scope()
            && let Some(command) = keymap.lookup(scope, &key)
        {
            return self.answer(command, armed);
        }
        if let Modal::Help(scroll) = &mut self.modal {
            if keymap.lookup(Scope::Help, &key) == Some(Command::Back) {
                self.modal = self.resting_modal();
                return None;
            }
            // The list scrolls with the screen's scrolling keys.
            if let Some(step) = keymap.scroll(Scope::Screen, &key, 10) {
                *scroll = (*scroll as i32 + step).max(0) as u16;
                return None;
            }
        }
        if matches!(self.modal, Modal::Synthesis { .. }) {
            if self.ask_scope() == Some(Scope::Approval)
                && let Some(command) = keymap.lookup(Scope::Approval, &key)
            {
                return self.answer(command, armed);
            }
            if let Some((command, index)) = keymap.find(Scope::Synthesis, &key) {
                return self.in_synthesis(command, index);
            }
            let page = self.page as i32;
            if let Modal::Synthesis { scroll, .. } = &mut self.modal {
                let step = match keymap.lookup(Scope::Screen, &key) {
                    Some(Command::Top) => Some(-i32::from(*scroll)),
                    _ => keymap.scroll(Scope::Screen, &key, page),
                };
                if let Some(step) = step {
                    *scroll = (*scroll as i32 + step).max(0) as u16;
                    return None;
                }
            }
        }
        let command = keymap.lookup(Scope::Screen, &key)?;
        self.run(command)
    }

    /// Answers the question waiting with `command`, or opens the editor for its words.
    /// Moves the selection of a waiting choice, or chooses the selected option.
    fn in_choice(&mut self, command: Command) -> Option<Effect> {
        let count = self
            .view
            .checkpoint
            .as_ref()
            .map_or(0, |ask| ask.choices.len());
        match command {
            Command::NextChoice => self.choice = (self.choice + 1).min(count.saturating_sub(1)),
            Command::PreviousChoice => self.choice = self.choice.saturating_sub(1),
            _ => {
                let (id, _) = self.view.checkpoint.as_ref()?.choices.get(self.choice)?;
                let control = Control::Choose(id.clone());
                self.modal = Modal::None;
                return Some(Effect::Control(control));
            }
        }
        None
    }

    fn answer(&mut self, command: Command, armed: Option<Command>) -> Option<Effect> {
        let pending = self.pending()?;
        let final_answer = match (command, pending) {
            (Command::End, AskKind::Clarification) => Some("cancel the debate"),
            (Command::End, AskKind::Checkpoint | AskKind::Conclusion) => {
                Some("end the debate and synthesise")
            }
            (Command::Accept, AskKind::Conclusion) => Some("accept the conclusion and synthesise"),
            _ => None,
        };
        if let Some(what) = final_answer
            && armed != Some(command)
        {
            let scope = self.ask_scope()?;
            self.armed = Some(command);
            self.notice = Some(format!(
                "press {} again to {what}; any other key goes back",
                self.keymap.key(scope, command)
            ));
            return None;
        }
        if pending == AskKind::Choice
            && matches!(
                command,
                Command::NextChoice | Command::PreviousChoice | Command::Choose
            )
        {
            return self.in_choice(command);
        }
        let writing = match (command, pending) {
            (Command::Guide, AskKind::Clarification) => Some(Writing::Answer),
            (Command::Guide, AskKind::Turn) => Some(Writing::Turn),
            (Command::Revise | Command::Reject, AskKind::Gate) => Some(Writing::Rejection),
            (Command::Guide, AskKind::Options) => Some(Writing::Options),
            (Command::Guide, _) => Some(Writing::Guidance),
            (Command::Revise, AskKind::Approval) => Some(Writing::Revision),
            _ => None,
        };
        if let Some(writing) = writing {
            let mut text = editor(writing);
            // Words the debate refused come back to be mended (A6); a draft closed unsent
            // comes back as it was left (U4).
            let refused = self
                .view
                .checkpoint
                .as_ref()
                .is_some_and(|ask| ask.refused.is_some());
            if let Some((_, words)) = self.draft.take_if(|(kept, _)| *kept == writing) {
                text.insert_str(words);
            } else if let Some((sent, words)) = &self.sent
                && *sent == writing
                && refused
            {
                text.insert_str(words);
            }
            self.modal = Modal::Editor {
                writing,
                text: Box::new(text),
            };
            return None;
        }
        let control = match command {
            Command::Continue => Control::Continue,
            Command::End => Control::End,
            Command::Accept => Control::Accept,
            Command::Reject => Control::Reject,
            _ => return None,
        };
        if !pending.accepts(&control) {
            return None;
        }
        let nothing_proposed = self
            .view
            .checkpoint
            .as_ref()
            .is_some_and(|ask| ask.choices.is_empty());
        if pending == AskKind::Options && control == Control::Continue && nothing_proposed {
            // There is nothing to go on with: the options must be typed first.
            return None;
        }
        if matches!(self.modal, Modal::Ask) {
            self.modal = Modal::None;
        }
        Some(Effect::Control(control))
    }

    /// A synthesis-view command; `index` is which of its keys was pressed.
    fn in_synthesis(&mut self, command: Command, index: usize) -> Option<Effect> {
        let document = self
            .view
            .synthesis
            .as_ref()
            .map(|s| (s.markdown.clone(), s.path.clone()));
        let Modal::Synthesis { expanded, .. } = &mut self.modal else {
            return None;
        };
        match command {
            Command::Back => self.modal = self.resting_modal_without_synthesis(),
            Command::ToggleArguments => {
                let all = !expanded.iter().all(|e| *e);
                expanded.iter_mut().for_each(|e| *e = all);
            }
            Command::ToggleSection => {
                if let Some(open) = expanded.get_mut(index) {
                    *open = !*open;
                }
            }
            Command::Copy => return document.map(|(markdown, _)| Effect::Copy(markdown)),
            Command::Pager => {
                return document.map(|(markdown, path)| Effect::Page { markdown, path });
            }
            Command::Editor => {
                return document.map(|(markdown, path)| Effect::Edit { markdown, path });
            }
            Command::WriteFollowUp if !self.view.presentation.follow_up => {
                self.notice = Some("this protocol's result offers no follow-up issue draft".into());
            }
            Command::WriteFollowUp => {
                let final_record = self.view.synthesis.as_ref().is_some_and(|s| !s.draft);
                if final_record && !self.view.id.is_empty() {
                    return Some(Effect::WriteFollowUp(self.view.id.clone()));
                }
                self.notice =
                    Some("the decision is not final yet: approve it first, then press w".into());
            }
            _ => {}
        }
        None
    }

    fn run(&mut self, command: Command) -> Option<Effect> {
        let panes = self.view.seats.len().max(1);
        if self.side_off_screen && !self.panels.maximized && toggles_a_side_panel(command) {
            self.notice = Some(format!(
                "the side panels show beside the panes from {} columns; {} shows them full screen",
                crate::views::SIDE_BY_SIDE,
                self.keymap.key(Scope::Screen, Command::Maximize)
            ));
            return None;
        }
        match command {
            Command::Quit => return Some(Effect::Quit),
            Command::Help => {
                self.modal = match self.modal {
                    Modal::Help(_) => self.resting_modal(),
                    _ => Modal::Help(0),
                }
            }
            Command::FocusNext => self.focus = (self.focus + 1) % panes,
            Command::FocusPrev => self.focus = (self.focus + panes - 1) % panes,
            Command::ScrollUp => self.scroll_by(-1),
            Command::ScrollDown => self.scroll_by(1),
            Command::PageUp => self.scroll_by(-(self.page as isize)),
            Command::PageDown => self.scroll_by(self.page as isize),
            Command::Top => {
                if let Some(slot) = self.scroll.get_mut(self.focus) {
                    *slot = Some(0);
                }
            }
            Command::Bottom => {
                if let Some(slot) = self.scroll.get_mut(self.focus) {
                    *slot = None;
                }
            }
            Command::ToggleCommitments => self.panels.toggle(SidePanel::Commitments),
            Command::ToggleContext => self.panels.toggle(SidePanel::Context),
            Command::ToggleTopology => self.panels.toggle(SidePanel::Topology),
            Command::ToggleLessons => self.panels.toggle(SidePanel::Lessons),
            Command::ToggleVotes => self.panels.toggle(SidePanel::Votes),
            Command::ToggleScores => self.panels.toggle(SidePanel::Scores),
            Command::ToggleTests => self.panels.toggle(SidePanel::Tests),
            Command::ToggleVersions => self.panels.toggle(SidePanel::Versions),
            Command::NextFact | Command::PreviousFact => {
                let count = self
                    .view
                    .shared_context
                    .as_ref()
                    .map_or(0, |k| k.facts.len());
                if count > 0 {
                    self.panels.show(SidePanel::Context);
                    self.panels.fact =
                        Some(match (self.panels.fact, command == Command::NextFact) {
                            (None, true) => 0,
                            (None, false) => count - 1,
                            (Some(i), true) => (i + 1) % count,
                            (Some(i), false) => (i + count - 1) % count,
                        });
                }
            }
            Command::OpenSource => {
                let Some(context) = &self.view.shared_context else {
                    self.notice = Some("this debate gathered no shared context".into());
                    return None;
                };
                let fact = context.facts.get(self.panels.fact.unwrap_or(0));
                match fact.and_then(|f| f.file.clone()) {
                    Some((path, line)) => {
                        return Some(Effect::OpenSource {
                            root: context.root.clone(),
                            path,
                            line,
                        });
                    }
                    None => {
                        self.notice = Some(match fact {
                            Some(f) => format!("{} is not a file to open", f.source),
                            None => "no fact to open".into(),
                        })
                    }
                }
            }
            Command::SeatTokens => self.seat_tokens = !self.seat_tokens,
            Command::CopyTurn => {
                let seat = self.view.seats.get(self.focus).map(|s| s.id.clone())?;
                let turn = self
                    .view
                    .turns
                    .iter()
                    .rev()
                    .find(|t| t.seat == seat && !t.content.is_empty())?;
                return Some(Effect::Copy(turn.content.clone()));
            }
            Command::ZoomIn => self.map.zoom = (self.map.zoom + 1).min(2),
            Command::MapUp => {
                self.map.selected = None;
                self.map.scroll_back += 3;
            }
            Command::MapDown => {
                self.map.selected = None;
                self.map.scroll_back = self.map.scroll_back.saturating_sub(3);
            }
            Command::ZoomOut => self.map.zoom = self.map.zoom.saturating_sub(1),
            Command::NextArgument | Command::PreviousArgument => {
                let count = self.view.graph.arguments.len();
                if count > 0 {
                    self.map.selected = Some(
                        match (self.map.selected, command == Command::NextArgument) {
                            (None, true) => 0,
                            (None, false) => count - 1,
                            (Some(i), true) => (i + 1) % count,
                            (Some(i), false) => (i + count - 1) % count,
                        },
                    );
                }
            }
            Command::HighlightSeat => {
                let seats = self.view.seats.len();
                self.map.seat = match self.map.seat {
                    None if seats > 0 => Some(0),
                    Some(i) if i + 1 < seats => Some(i + 1),
                    _ => None,
                };
            }
            Command::ToggleMap
                if self
                    .view
                    .presentation
                    .panels
                    .contains(&SidePanel::Standings) =>
            {
                // The standings take the map's place, and its key.
                self.panels.toggle(SidePanel::Standings);
            }
            Command::ToggleMap => self.panels.toggle(SidePanel::Map),
            Command::Maximize => {
                self.panels.maximized = !self.panels.maximized;
                // Maximising nothing would show nothing: the hidden panels come back.
                if self.panels.maximized
                    && self
                        .view
                        .presentation
                        .stack()
                        .iter()
                        .all(|p| !self.panels.shows(*p))
                {
                    self.panels = Panels {
                        hidden: 0,
                        ..self.panels
                    };
                }
            }
            Command::Synthesis => match self.modal {
                Modal::Synthesis { .. } => self.modal = self.resting_modal_without_synthesis(),
                _ if self.view.synthesis.is_some() => self.open_synthesis(),
                _ => self.modal = self.resting_modal(),
            },
            // The other commands belong to modals and the history, handled there.
            _ => {}
        }
        None
    }

    /// The modal to return to when an overlay closes: the question still waiting, if any.
    fn resting_modal(&self) -> Modal {
        match self.pending() {
            // Only the synthesis's own approval rests on the synthesis; an approval gate is a
            // question of its own (after a rejection there is no synthesis to show).
            Some(AskKind::Approval | AskKind::RevisedApproval) => Modal::Synthesis {
                scroll: 0,
                expanded: vec![false; self.view.seats.len()],
            },
            Some(_) => Modal::Ask,
            None => Modal::None,
        }
    }

    /// Leaving the synthesis: back to a waiting question that is not its approval.
    fn resting_modal_without_synthesis(&self) -> Modal {
        match self.pending() {
            Some(AskKind::Approval | AskKind::RevisedApproval) | None => Modal::None,
            Some(_) => Modal::Ask,
        }
    }

    /// Scrolls the focused pane; `total` lines are known only at draw time, so an offset past
    /// the end is clamped there, and scrolling down to the end resumes following.
    fn scroll_by(&mut self, delta: isize) {
        let shown = self.shown_from.get(self.focus).copied().unwrap_or(0);
        let Some(slot) = self.scroll.get_mut(self.focus) else {
            return;
        };
        let current = slot.unwrap_or(shown);
        let next = (current as isize + delta).max(0) as usize;
        *slot = Some(next);
    }

    /// Pasted text goes to the editor when it is open.
    pub fn on_paste(&mut self, text: &str) {
        if let Modal::Editor { text: editor, .. } = &mut self.modal {
            editor.insert_str(text);
            self.dirty = true;
        }
    }

    /// Called by the pane view with the pane's line count: clamps the offset and switches
    /// back to following when the end is reached.
    pub fn settle_scroll(&mut self, pane: usize, total: usize, height: usize) -> usize {
        let last_start = total.saturating_sub(height);
        let start = self.clamp_scroll(pane, last_start);
        if self.shown_from.len() <= pane {
            self.shown_from.resize(pane + 1, 0);
        }
        self.shown_from[pane] = start;
        start
    }

    fn clamp_scroll(&mut self, pane: usize, last_start: usize) -> usize {
        match self.scroll.get(pane).copied().flatten() {
            None => last_start,
            Some(offset) if offset >= last_start => {
                if let Some(slot) = self.scroll.get_mut(pane) {
                    *slot = None;
                }
                last_start
            }
            Some(offset) => offset,
        }
    }
}

fn editor(writing: Writing) -> TextArea<'static> {
    let mut editor = TextArea::default();
    editor.set_wrap_mode(WrapMode::Word);
    editor.set_placeholder_text(match writing {
        Writing::Guidance => "What must the next round address?",
        Writing::Options => "One option a line or separated by `;`: `A: label — description`",
        Writing::Answer => "Answer what was asked",
        Writing::Revision => "What must the revised synthesis address?",
        Writing::Turn => "Make your case, as your seat would",
        Writing::Rejection => "What is wrong, and what should happen instead",
    });
    editor
}

impl App {
    /// Closes an open editor, keeping what it holds as the draft its next opening brings
    /// back (nothing typed, nothing kept).
    pub fn keep_draft(&mut self) {
        if let Modal::Editor { writing, text } = &self.modal {
            let words = text.lines().join("\n");
            if !words.trim().is_empty() {
                self.draft = Some((*writing, words));
                // The key that opened this editor opens it again.
                let (scope, command) = match writing {
                    Writing::Revision => (Scope::Approval, Command::Revise),
                    Writing::Rejection => (Scope::Approval, Command::Reject),
                    _ => (Scope::Checkpoint, Command::Guide),
                };
                self.notice = Some(format!(
                    "draft kept: {} opens it again",
                    self.keymap.key(scope, command)
                ));
            }
            self.modal = self.resting_modal();
            self.dirty = true;
        }
    }

    /// The terminal's interrupt (Ctrl-C): in an editor it closes the editor and keeps the draft
    /// (U4); anywhere else it leaves, as `Effect::Quit`.
    pub fn interrupt(&mut self) -> Option<Effect> {
        if matches!(self.modal, Modal::Editor { .. }) {
            self.keep_draft();
            return None;
        }
        Some(Effect::Quit)
    }
}

/// Whether a key is the terminal's suspend (raw mode delivers Ctrl-Z as a key).
pub fn is_suspend(key: &KeyEvent) -> bool {
    key.code == KeyCode::Char('z') && key.modifiers.contains(KeyModifiers::CONTROL)
}

/// Whether a key is the terminal's interrupt (raw mode delivers Ctrl-C as a key).
pub fn is_interrupt(key: &KeyEvent) -> bool {
    key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::debate::{Phase, Seat};

    fn key(c: char) -> KeyEvent {
        KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
    }

    fn started(app: &mut App) {
        app.on_event(&Event::DebateStarted {
            id: "DEB-x".into(),
            question: "q".into(),
            protocol: "moderated".into(),
            seats: ["A", "B"]
                .iter()
                .map(|id| Seat {
                    id: id.to_string(),
                    perspective: format!("P{id}"),
                    priorities: vec![],
                    trade_offs: String::new(),
                    stance: String::new(),
                    provider: None,
                    model: None,
                })
                .collect(),
            max_rounds: 3,
            provider: "openai".into(),
            model: "m".into(),
            caveat: None,
            presentation: Default::default(),
        });
    }

    /// Seed review 000/001 #10: the editor for a panel's own options is titled "Options", not
    /// "Guidance for the next round".
    #[test]
    fn the_options_editor_is_titled_options() {
        let mut app = App::new(false);
        started(&mut app);
        app.on_event(&checkpoint(0, AskKind::Options));
        assert_eq!(app.on_key(key('g')), None);
        match &app.modal {
            Modal::Editor { writing, .. } => {
                assert_eq!(*writing, Writing::Options);
                assert_eq!(writing.title(), "Options");
            }
            _ => panic!("expected the editor"),
        }
    }

    fn checkpoint(round: u32, kind: AskKind) -> Event {
        Event::Checkpoint {
            round,
            timeout_seconds: 60,
            kind,
            detail: None,
            choices: vec![],
        }
    }

    #[test]
    fn the_checkpoint_answers_continue_guide_and_end() {
        let mut app = App::new(false);
        started(&mut app);
        app.on_event(&checkpoint(1, AskKind::Checkpoint));
        assert!(matches!(app.modal, Modal::Ask));
        assert_eq!(
            app.on_key(key('c')),
            Some(Effect::Control(Control::Continue))
        );
        assert!(matches!(app.modal, Modal::None));

        app.on_event(&checkpoint(2, AskKind::Checkpoint));
        assert_eq!(app.on_key(key('g')), None);
        assert!(matches!(app.modal, Modal::Editor { .. }));
        for c in "Focus on cost".chars() {
            assert_eq!(app.on_key(key(c)), None, "typing is text, not commands");
        }
        let submit = KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL);
        assert_eq!(
            app.on_key(submit),
            Some(Effect::Control(Control::Guide("Focus on cost".into())))
        );

        app.on_event(&checkpoint(3, AskKind::Checkpoint));
        app.on_key(key('g'));
        app.on_key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
        assert!(
            matches!(app.modal, Modal::Ask),
            "Esc returns to the checkpoint"
        );
        // Ending cannot be taken back: the first e asks, another key drops it, a second e ends.
        assert_eq!(app.on_key(key('e')), None);
        assert_eq!(
            app.notice.as_deref(),
            Some("press e again to end the debate and synthesise; any other key goes back")
        );
        assert_eq!(app.on_key(key('j')), None);
        assert_eq!(app.on_key(key('e')), None, "the j dropped the first e");
        assert_eq!(app.on_key(key('e')), Some(Effect::Control(Control::End)));
    }

    /// U4: Ctrl-C in an editor closes it and keeps the draft for the next `g` (Esc too);
    /// Ctrl-C anywhere else leaves.
    #[test]
    fn ctrl_c_in_an_editor_keeps_the_draft_and_only_elsewhere_leaves() {
        let mut app = App::new(false);
        started(&mut app);
        app.on_event(&checkpoint(1, AskKind::Checkpoint));
        app.on_key(key('g'));
        for c in "Weigh the migration".chars() {
            app.on_key(key(c));
        }
        assert_eq!(app.interrupt(), None, "Ctrl-C in the editor does not leave");
        assert!(matches!(app.modal, Modal::Ask), "back at the question");
        assert_eq!(
            app.draft,
            Some((Writing::Guidance, "Weigh the migration".to_string()))
        );
        assert!(
            app.notice
                .as_deref()
                .is_some_and(|n| n.contains("draft kept"))
        );
        app.on_key(key('g'));
        match &app.modal {
            Modal::Editor { text, .. } => {
                assert_eq!(text.lines().join("\n"), "Weigh the migration")
            }
            _ => panic!("expected the editor"),
        }
        assert_eq!(app.draft, None, "the draft is in the editor now");
        app.on_key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
        assert!(app.draft.is_some(), "Esc keeps it too");
        app.on_key(key('g'));
        let submit = KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL);
        assert_eq!(
            app.on_key(submit),
            Some(Effect::Control(Control::Guide(
                "Weigh the migration".into()
            )))
        );
        assert_eq!(app.draft, None, "sent, nothing kept");
        assert_eq!(
            app.interrupt(),
            Some(Effect::Quit),
            "outside an editor Ctrl-C leaves"
        );
    }

    #[test]
    fn panes_scroll_and_focus_while_the_checkpoint_waits() {
        let mut app = App::new(false);
        started(&mut app);
        app.on_event(&checkpoint(1, AskKind::Checkpoint));
        assert_eq!(app.on_key(key('l')), None);
        assert_eq!(app.focus, 1);
        assert_eq!(
            app.settle_scroll(1, 100, 10),
            90,
            "following shows the last lines"
        );
        app.on_key(key('k'));
        assert!(app.scroll[1].is_some(), "scrolling up leaves follow mode");
        assert!(matches!(app.modal, Modal::Ask), "the modal still waits");
        assert_eq!(app.settle_scroll(1, 100, 10), 89);
        app.on_key(KeyEvent::new(KeyCode::End, KeyModifiers::NONE));
        assert_eq!(app.scroll[1], None);
    }

    #[test]
    fn read_only_replays_never_open_the_checkpoint_and_quit_is_an_effect() {
        let mut app = App::new(true);
        started(&mut app);
        app.on_event(&checkpoint(1, AskKind::Checkpoint));
        assert!(matches!(app.modal, Modal::None));
        assert_eq!(app.on_key(key('q')), Some(Effect::Quit));
        assert!(is_interrupt(&KeyEvent::new(
            KeyCode::Char('c'),
            KeyModifiers::CONTROL
        )));
    }

    #[test]
    fn the_synthesis_copies_pages_and_expands() {
        let mut app = App::new(true);
        started(&mut app);
        app.on_event(&Event::Synthesis {
            markdown: "# Decision".into(),
            confidence: crate::debate::Confidence::High,
            path: Some("docs/decisions/x.md".into()),
            draft: false,
        });
        app.on_key(key('s'));
        let open = |app: &App| match &app.modal {
            Modal::Synthesis { expanded, .. } => expanded.clone(),
            _ => panic!("the synthesis is not open"),
        };
        assert_eq!(open(&app), vec![false, false]);
        app.on_key(key('2'));
        assert_eq!(open(&app), vec![false, true]);
        app.on_key(key('f'));
        assert_eq!(open(&app), vec![true, true]);
        assert_eq!(
            app.on_key(key('y')),
            Some(Effect::Copy("# Decision".into()))
        );
        assert_eq!(
            app.on_key(key('o')),
            Some(Effect::Page {
                markdown: "# Decision".into(),
                path: Some("docs/decisions/x.md".into())
            })
        );
        assert_eq!(
            app.on_key(key('w')),
            Some(Effect::WriteFollowUp("DEB-x".into())),
            "the follow-up is offered from the synthesis view"
        );
        assert_eq!(
            app.on_key(key('q')),
            Some(Effect::Quit),
            "screen keys still work"
        );
    }

    #[test]
    fn a_conclusion_is_accepted_overruled_or_guided() {
        let mut app = App::new(false);
        started(&mut app);
        app.on_event(&checkpoint(2, AskKind::Conclusion));
        assert!(matches!(app.modal, Modal::Ask));
        assert_eq!(
            app.on_key(key('e')),
            None,
            "end is not an answer to a conclusion"
        );
        assert_eq!(
            app.on_key(key('c')),
            Some(Effect::Control(Control::Continue)),
            "one more round"
        );
        app.on_event(&checkpoint(3, AskKind::Conclusion));
        // `a` is the map's key on the screen: at a conclusion it asks before accepting (U6).
        assert_eq!(app.on_key(key('a')), None);
        assert_eq!(app.on_key(key('a')), Some(Effect::Control(Control::Accept)));
        assert!(
            app.panels.shows(SidePanel::Map),
            "a answers the question, it does not toggle the map"
        );
    }

    #[test]
    fn the_synthesis_is_approved_or_revised_once() {
        let mut app = App::new(false);
        started(&mut app);
        app.on_event(&Event::Synthesis {
            markdown: "# Decision".into(),
            confidence: crate::debate::Confidence::Medium,
            path: None,
            draft: true,
        });
        app.on_event(&checkpoint(2, AskKind::Approval));
        assert!(
            matches!(app.modal, Modal::Synthesis { .. }),
            "the draft opens to be read"
        );
        assert_eq!(
            app.on_key(key('w')),
            None,
            "a draft is no decision to follow up"
        );
        assert!(
            app.notice
                .as_deref()
                .unwrap_or("")
                .contains("approve it first")
        );
        assert_eq!(app.on_key(key('r')), None);
        assert!(matches!(
            app.modal,
            Modal::Editor {
                writing: Writing::Revision,
                ..
            }
        ));
        app.on_paste("Weigh the migration cost");
        let submit = KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL);
        assert_eq!(
            app.on_key(submit),
            Some(Effect::Control(Control::Revise(
                "Weigh the migration cost".into()
            )))
        );
        app.on_event(&Event::CheckpointAnswered {
            round: 2,
            decision: crate::debate::Answer::Revise,
            guidance: Some("Weigh the migration cost".into()),
            kind: AskKind::Approval,
        });
        app.on_event(&checkpoint(2, AskKind::RevisedApproval));
        assert_eq!(app.on_key(key('r')), None, "one revision only");
        assert!(matches!(app.modal, Modal::Synthesis { .. }));
        assert_eq!(app.on_key(key('n')), Some(Effect::Control(Control::Reject)));
    }

    #[test]
    fn rejecting_a_gate_opens_no_synthesis() {
        let mut app = App::new(false);
        started(&mut app);
        app.on_event(&checkpoint(1, AskKind::Gate));
        assert!(matches!(app.modal, Modal::Ask));
        app.on_key(key('r'));
        assert!(matches!(app.modal, Modal::Editor { .. }));
        app.on_paste("The cost numbers are missing");
        let submit = KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL);
        assert_eq!(
            app.on_key(submit),
            Some(Effect::Control(Control::Decline(
                "The cost numbers are missing".into()
            )))
        );
        assert!(
            !matches!(app.modal, Modal::Synthesis { .. }),
            "the gate is not the synthesis's approval"
        );
        app.on_event(&Event::CheckpointAnswered {
            round: 1,
            decision: crate::debate::Answer::Decline,
            guidance: Some("The cost numbers are missing".into()),
            kind: AskKind::Gate,
        });
        app.on_event(&Event::DebateCompleted {
            id: "DEB-x".into(),
            status: crate::debate::DebateStatus::Cancelled,
        });
        assert!(matches!(app.modal, Modal::None));
    }

    #[test]
    fn rebound_keys_answer_the_modals() {
        let rebound = std::collections::BTreeMap::from([
            ("end".to_string(), vec!["x".to_string()]),
            ("accept".to_string(), vec!["y".to_string()]),
        ]);
        let mut app = App::with_keymap(false, Arc::new(Keymap::new(&rebound).unwrap()));
        started(&mut app);
        app.on_event(&checkpoint(1, AskKind::Checkpoint));
        assert_eq!(app.on_key(key('e')), None);
        assert_eq!(app.on_key(key('x')), None, "asks first");
        assert_eq!(app.on_key(key('x')), Some(Effect::Control(Control::End)));
        app.on_event(&checkpoint(2, AskKind::Conclusion));
        assert_eq!(app.on_key(key('y')), None, "asks first");
        assert!(app.notice.as_deref().unwrap().contains("press y again"));
        assert_eq!(app.on_key(key('y')), Some(Effect::Control(Control::Accept)));
    }

    #[test]
    fn the_wheel_scrolls_the_pane_under_the_pointer_and_a_click_focuses() {
        let mut app = App::new(false);
        started(&mut app);
        app.pane_areas = vec![
            (0, ratatui::layout::Rect::new(0, 0, 40, 20)),
            (1, ratatui::layout::Rect::new(40, 0, 40, 20)),
        ];
        app.settle_scroll(1, 100, 10);
        let mouse = |kind, column| MouseEvent {
            kind,
            column,
            row: 5,
            modifiers: KeyModifiers::NONE,
        };
        app.on_mouse(mouse(MouseEventKind::ScrollUp, 50));
        assert_eq!(app.focus, 1);
        assert_eq!(app.scroll[1], Some(87));
        app.on_mouse(mouse(MouseEventKind::Down(MouseButton::Left), 3));
        assert_eq!(app.focus, 0);
    }

    #[test]
    fn the_map_selects_zooms_and_highlights_a_seat() {
        let mut app = App::new(false);
        started(&mut app);
        for (seat, id) in [("A", "A1.1"), ("B", "B1.1")] {
            let turn = crate::debate::Turn {
                content: "x".into(),
                moves: vec![crate::debate::Move {
                    id: id.into(),
                    act: crate::debate::Act::Claim,
                    text: "t".into(),
                    premises: vec![],
                    answers: vec![],
                    relation: None,
                }],
                ..crate::debate::Turn::fixture(seat, 1, Phase::Argument)
            };
            app.on_event(&turn.completed_event(false));
        }
        app.on_key(key(']'));
        assert_eq!(app.map.selected, Some(0));
        app.on_key(key('['));
        assert_eq!(app.map.selected, Some(1), "wraps around");
        for _ in 0..5 {
            app.on_key(key('+'));
        }
        assert_eq!(app.map.zoom, 2);
        for _ in 0..5 {
            app.on_key(key('-'));
        }
        assert_eq!(app.map.zoom, 0);
        app.on_key(key('v'));
        assert_eq!(app.map.seat, Some(0));
        app.on_key(key('v'));
        app.on_key(key('v'));
        assert_eq!(app.map.seat, None, "cycles back to no highlight");
        app.on_key(KeyEvent::new(KeyCode::Char('K'), KeyModifiers::SHIFT));
        assert_eq!(
            (app.map.scroll_back, app.map.selected),
            (3, None),
            "scrolling leaves the selection"
        );
        app.on_key(KeyEvent::new(KeyCode::Char('J'), KeyModifiers::SHIFT));
        assert_eq!(app.map.scroll_back, 0, "back to following the newest");
    }

    #[test]
    fn a_paste_lands_in_the_guidance_editor_and_y_copies_the_focused_turn() {
        let mut app = App::new(false);
        started(&mut app);
        let turn = crate::debate::Turn {
            content: "Seat A's argument".into(),
            ..crate::debate::Turn::fixture("A", 1, Phase::Argument)
        };
        app.on_event(&turn.completed_event(false));
        assert_eq!(
            app.on_key(key('y')),
            Some(Effect::Copy("Seat A's argument".into()))
        );
        app.on_event(&checkpoint(1, AskKind::Checkpoint));
        app.on_key(key('g'));
        app.on_paste("two lines\nof pasted guidance");
        let submit = KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL);
        assert_eq!(
            app.on_key(submit),
            Some(Effect::Control(Control::Guide(
                "two lines\nof pasted guidance".into()
            )))
        );
    }

    #[test]
    fn the_spinner_only_turns_while_someone_speaks() {
        let mut app = App::new(false);
        started(&mut app);
        app.dirty = false;
        app.on_tick();
        assert!(!app.dirty, "idle: no redraw");
        app.on_event(&Event::TurnStarted {
            round: 1,
            phase: Phase::Argument,
            seat: "A".into(),
        });
        app.dirty = false;
        app.on_tick();
        assert!(app.dirty);
    }
}
