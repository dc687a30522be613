//! The history screen's state: stored debates, incremental full-text search, a preview, delete
//! with confirmation, and the new-debate form. Pure: the loop does the journal I/O it asks for.

use super::keymap::{Command, Keymap, Scope};
use crate::remote::RemoteError;
use crate::sanitize;
use crate::session::DebateRequest;
use crate::store::{DebateSummary, SearchHit};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui_textarea::{TextArea, WrapMode};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A new debate as the form describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct NewDebate {
    pub question: String,
    /// The protocol's registered name.
    pub protocol: String,
    /// None: decided from the question.
    pub perspectives: Option<u32>,
    /// Perspectives chosen by name (they override the count).
    pub named: Vec<String>,
    /// None: the protocol's default (from config, or its own).
    pub max_rounds: Option<u32>,
    pub checkpoints: bool,
    /// A config profile or preset chosen in the form; `None`: the one the command line and
    /// config settle on.
    pub provider: Option<String>,
    /// A model typed in the form; `None`: the provider's own.
    pub model: Option<String>,
    /// The protocol's options as its flags take them (`option` → its values; a switch turned
    /// on has one empty value), `vote` and `gates` among them; checked as the command line's.
    pub flags: BTreeMap<String, Vec<String>>,
}

impl NewDebate {
    /// The request this form asks for, over what the command line asked (`base`): the form's
    /// fields win; the command line's protocol options go with the protocol it named
    /// (`configured`), never to another; its provider's URL and script stay with its provider.
    pub fn request(&self, base: &DebateRequest, configured: &str) -> DebateRequest {
        let mut request = base.clone();
        if self.protocol != configured {
            request.protocol_flags.clear();
        }
        request.protocol = Some(self.protocol.clone());
        request.max_rounds = self.max_rounds.or(base.max_rounds);
        request.perspectives = self.perspectives;
        // Off in the form is off; on keeps a `--checkpoints MODE` that turned them on.
        request.checkpoints = if self.checkpoints {
            base.checkpoints.filter(|&on| on)
        } else {
            Some(false)
        };
        request.named_perspectives = self.named.clone();
        request.question = self.question.clone();
        if let Some(provider) = &self.provider
            && base.provider.provider.as_ref() != Some(provider)
        {
            request.provider = crate::providers::ProviderFlags {
                provider: Some(provider.clone()),
                ..Default::default()
            };
        }
        if let Some(model) = &self.model {
            request.provider.model = Some(model.clone());
        }
        // The form's options are the command line's, checked by the same assembly.
        let mut flags = self.flags.clone();
        if let Some(focus) = flags.remove("perspective") {
            request.named_perspectives = focus;
        }
        if let Some(vote) = flags.remove("vote") {
            request.vote = vote.into_iter().next();
        }
        if let Some(gates) = flags.remove("gates") {
            request.gates = Some(DebateRequest::gate_points(&gates));
        }
        if !flags.is_empty() {
            request.protocol_flags = flags;
        }
        request
    }
}

/// One option the form offers for a protocol: one of its flags, or a run flag every protocol
/// takes (`vote`, `gates`).
#[derive(Debug, Clone, PartialEq)]
pub struct FlagChoice {
    pub name: String,
    /// The value's placeholder; `None` for a switch.
    pub value: Option<String>,
    pub help: String,
    /// Several values, separated by `;` in the form.
    pub repeatable: bool,
}

/// A protocol the form offers, as the registry declares it.
#[derive(Debug, Clone, PartialEq)]
pub struct ProtocolChoice {
    pub name: String,
    pub description: String,
    /// What it calls a seat.
    pub seat_role: String,
    /// Only protocols that seat the catalog's perspectives take them from the form.
    pub seats_from_catalog: bool,
    /// The options the form offers for it.
    pub flags: Vec<FlagChoice>,
}

/// A provider the form offers: the one `moot QUESTION` would use here, a config profile, or a
/// preset.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderChoice {
    /// The profile or preset's name; `None` for the default.
    pub name: Option<String>,
    /// What the form shows for it (the default says which provider it settles on and why).
    pub label: String,
    /// Its model when none is typed; empty when the server is asked for it.
    pub model: String,
}

impl ProviderChoice {
    /// What the model line shows while nothing is typed: the model this provider would use.
    fn model_hint(&self) -> String {
        match self.model.as_str() {
            "" => "the server's model".to_string(),
            model => model.to_string(),
        }
    }
}

impl ProtocolChoice {
    fn seats_perspectives(&self) -> bool {
        self.seats_from_catalog
    }
}

/// The fields of the form, in tab order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Question,
    Protocol,
    Provider,
    Model,
    Perspectives,
    Seats,
    Rounds,
    Checkpoints,
    /// The protocol's option at this index of its `flags`.
    Flag(usize),
}

pub struct NewDebateForm {
    pub question: TextArea<'static>,
    /// Index into `History::protocols`.
    pub protocol: usize,
    /// Index into `History::providers`; 0 is the default.
    pub provider: usize,
    /// The model typed for the chosen provider (empty: its own).
    pub model: TextArea<'static>,
    pub perspectives: Option<u32>,
    /// Per catalog perspective, whether it is chosen; `cursor` is the one the keys act on.
    pub chosen: Vec<bool>,
    pub cursor: usize,
    pub max_rounds: Option<u32>,
    pub checkpoints: bool,
    pub field: Field,
    pub problem: Option<String>,
    /// What is typed for each protocol's options (`protocol/flag` → a line; a switch is on
    /// when present), kept while the protocol is switched back and forth.
    pub values: BTreeMap<String, TextArea<'static>>,
}

impl NewDebateForm {
    fn new(protocol: usize, catalog: usize) -> Self {
        let mut question = TextArea::default();
        question.set_wrap_mode(WrapMode::Word);
        question.set_placeholder_text("Should we use Redis or PostgreSQL for caching?");
        let mut model = TextArea::default();
        // The question has the focus, and the only cursor, first.
        model.set_cursor_style(ratatui::style::Style::default());
        NewDebateForm {
            question,
            protocol,
            provider: 0,
            model,
            perspectives: None,
            chosen: vec![false; catalog],
            cursor: 0,
            max_rounds: None,
            checkpoints: true,
            field: Field::Question,
            problem: None,
            values: BTreeMap::new(),
        }
    }

    /// Only the focused field's line shows a cursor: an unfocused one drawn with its own
    /// cursor reads as a second place typing would go.
    fn show_cursor_in_focus(&mut self, protocol: &str, flags: &[FlagChoice]) {
        let shown = |focused: bool| {
            if focused {
                ratatui::style::Style::default().add_modifier(ratatui::style::Modifier::REVERSED)
            } else {
                ratatui::style::Style::default()
            }
        };
        self.question
            .set_cursor_style(shown(self.field == Field::Question));
        self.model
            .set_cursor_style(shown(self.field == Field::Model));
        for (index, flag) in flags.iter().enumerate() {
            if let Some(line) = self.values.get_mut(&format!("{protocol}/{}", flag.name)) {
                line.set_cursor_style(shown(self.field == Field::Flag(index)));
            }
        }
    }

    /// The line typed for option `flag` of `protocol`, made when first needed.
    pub fn value_mut(&mut self, protocol: &str, flag: &FlagChoice) -> &mut TextArea<'static> {
        self.values
            .entry(format!("{protocol}/{}", flag.name))
            .or_insert_with(|| {
                let mut line = TextArea::default();
                if let Some(placeholder) = &flag.value {
                    line.set_placeholder_text(placeholder.clone());
                }
                line
            })
    }

    /// What is typed for option `flag` of `protocol` (empty when nothing).
    pub fn value(&self, protocol: &str, flag: &str) -> String {
        self.values
            .get(&format!("{protocol}/{flag}"))
            .map(|line| line.lines().join(" ").trim().to_string())
            .unwrap_or_default()
    }
}

/// What the history screen asks the loop to do.
#[derive(Debug, Clone, PartialEq)]
pub enum HistoryEffect {
    /// Run the search for the current query (or list everything if it is empty).
    Refresh,
    Open(String),
    Resume(String),
    Delete(String),
    /// Follow a debate the configured server runs (`moot attach`), asking it to resume the
    /// debate first when `resume`.
    Attach {
        id: String,
        resume: bool,
    },
    Start(NewDebate),
    Quit,
}

/// Rows loaded at a time.
pub const PAGE: usize = 200;

/// A row of the list: a debate, why it matched a search, and whether the configured server
/// holds it (and this machine's journal does not).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub summary: DebateSummary,
    pub snippet: Option<String>,
    pub on_server: bool,
}

/// The server whose debates the history lists beside the journal's (`[serve] url`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ServerRows {
    /// Where it is, as configured.
    pub base: String,
    /// Its debates for the current query, sanitized, once it has answered.
    pub rows: Vec<Row>,
    /// Why its list could not be read, when it could not.
    pub problem: Option<String>,
    /// The query its last answer was for (rows or a problem); another one is still being
    /// asked.
    pub answered: Option<String>,
}

pub struct History {
    /// Every key and hint of the history, the form and the key list.
    pub keymap: Arc<Keymap>,
    /// The key list, open and scrolled by this many lines.
    pub help: Option<u16>,
    pub rows: Vec<Row>,
    pub query: String,
    /// Typing goes to the search box.
    pub searching: bool,
    pub selected: usize,
    /// (id, text) of the preview of the selected debate, filled by the loop.
    pub preview: Option<(String, String)>,
    pub confirm_delete: Option<String>,
    pub form: Option<NewDebateForm>,
    /// The perspective catalog's names, for the form.
    pub catalog: Vec<String>,
    /// The registered protocols, and the one the form starts on.
    pub protocols: Vec<ProtocolChoice>,
    /// The providers the form offers, the default first.
    pub providers: Vec<ProviderChoice>,
    pub default_protocol: usize,
    /// How many rows are loaded; grows as the selection nears the end, so a long history
    /// loads page by page.
    pub limit: usize,
    pub message: Option<String>,
    pub dirty: bool,
    /// The configured server's debates, listed after this journal's own.
    pub server: Option<ServerRows>,
    /// This journal's rows, kept apart so the server's can be merged in when they arrive.
    local: Vec<Row>,
}

impl History {
    pub fn new(keymap: Arc<Keymap>) -> Self {
        History {
            keymap,
            help: None,
            rows: Vec::new(),
            query: String::new(),
            searching: false,
            selected: 0,
            preview: None,
            confirm_delete: None,
            form: None,
            catalog: Vec::new(),
            protocols: Vec::new(),
            providers: Vec::new(),
            default_protocol: 0,
            limit: PAGE,
            message: None,
            dirty: true,
            server: None,
            local: Vec::new(),
        }
    }

    /// Replaces the list with everything stored, or with the search hits. What a row shows
    /// is sanitized here, once, before anything draws it.
    pub fn show(&mut self, summaries: Vec<DebateSummary>, hits: Option<Vec<SearchHit>>) {
        self.local = match hits {
            None => summaries
                .into_iter()
                .map(|summary| Row {
                    summary: DebateSummary {
                        question: sanitize::clean(&summary.question),
                        ..summary
                    },
                    snippet: None,
                    on_server: false,
                })
                .collect(),
            Some(hits) => hits
                .into_iter()
                .map(|hit| Row {
                    summary: DebateSummary {
                        id: hit.id,
                        question: sanitize::clean(&hit.question),
                        protocol: hit.protocol,
                        status: hit.status,
                        confidence: hit.confidence,
                        updated_at: hit.created_at.clone(),
                        created_at: hit.created_at,
                        rounds: 0,
                        stage: None,
                    },
                    snippet: Some(sanitize::clean(&hit.snippet)),
                    on_server: false,
                })
                .collect(),
        };
        self.merge();
    }

    /// Runs `change` on the list and keeps the cursor on the debate it was on, if it is still
    /// listed: rows that arrive or move never slide another debate under the cursor.
    pub fn keeping_selection(&mut self, change: impl FnOnce(&mut History)) {
        let was = self.selected_id().map(str::to_string);
        change(self);
        if let Some(at) = was.and_then(|id| self.rows.iter().position(|r| r.summary.id == id)) {
            self.selected = at;
        }
    }

    /// The server's answer for the current query: its debates, or why they could not be read.
    pub fn show_server(&mut self, listed: Result<Vec<DebateSummary>, RemoteError>) {
        self.keeping_selection(|history| history.take_server(listed));
    }

    fn take_server(&mut self, listed: Result<Vec<DebateSummary>, RemoteError>) {
        let Some(server) = self.server.as_mut() else {
            return;
        };
        server.answered = Some(self.query.clone());
        match listed {
            Ok(summaries) => {
                server.problem = None;
                server.rows = summaries
                    .into_iter()
                    .map(|summary| Row {
                        summary: DebateSummary {
                            id: sanitize::clean(&summary.id),
                            question: sanitize::clean(&summary.question),
                            protocol: sanitize::clean(&summary.protocol),
                            ..summary
                        },
                        snippet: None,
                        on_server: true,
                    })
                    .collect();
            }
            // What was listed before stays, under the problem.
            Err(problem) => server.problem = Some(sanitize::clean(&problem.to_string())),
        }
        self.merge();
    }

    /// The rows shown: this journal's, with the server's that it does not hold (a server on
    /// this machine shares its journal) in time order, or after the hits of a search.
    fn merge(&mut self) {
        let mut rows = self.local.clone();
        if let Some(server) = &self.server {
            let known: std::collections::HashSet<&str> =
                self.local.iter().map(|r| r.summary.id.as_str()).collect();
            let theirs = server
                .rows
                .iter()
                .filter(|r| !known.contains(r.summary.id.as_str()));
            rows.extend(theirs.cloned());
            if self.query.trim().is_empty() {
                // Newest first, as the journal lists them; stable, so ties keep their order.
                rows.sort_by(|a, b| b.summary.created_at.cmp(&a.summary.created_at));
            }
        }
        // A reload that finds the list as it was draws nothing.
        if rows != self.rows {
            self.rows = rows;
            self.dirty = true;
        }
        self.selected = self.selected.min(self.rows.len().saturating_sub(1));
    }

    /// The selected row.
    pub fn selected_row(&self) -> Option<&Row> {
        self.rows.get(self.selected)
    }

    pub fn selected_id(&self) -> Option<&str> {
        self.rows.get(self.selected).map(|r| r.summary.id.as_str())
    }

    /// A key while the search line is open: typing edits the query, Esc clears it, Enter
    /// keeps it.
    fn on_search_key(&mut self, key: KeyEvent) -> Option<HistoryEffect> {
        match self.keymap.lookup(Scope::Search, &key) {
            Some(Command::Cancel) => {
                self.searching = false;
                if !self.query.is_empty() {
                    self.query.clear();
                    return Some(HistoryEffect::Refresh);
                }
                return None;
            }
            Some(Command::FinishSearch) => {
                self.searching = false;
                return None;
            }
            _ => {}
        }
        match key.code {
            KeyCode::Backspace => {
                self.query.pop();
                Some(HistoryEffect::Refresh)
            }
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                self.query.push(c);
                self.selected = 0;
                Some(HistoryEffect::Refresh)
            }
            _ => None,
        }
    }

    pub fn on_key(&mut self, key: KeyEvent) -> Option<HistoryEffect> {
        self.dirty = true;
        self.message = None;
        let keymap = self.keymap.clone();
        if self.form.is_some() {
            return self.on_form_key(key);
        }
        if let Some(scroll) = &mut self.help {
            match keymap.scroll(Scope::History, &key, 10) {
                Some(step) => *scroll = (*scroll as i32 + step).max(0) as u16,
                // Any other key closes the list.
                None => self.help = None,
            }
            return None;
        }
        if let Some(id) = self.confirm_delete.take() {
            return (keymap.lookup(Scope::Confirm, &key) == Some(Command::Confirm))
                .then_some(HistoryEffect::Delete(id));
        }
        if self.searching {
            return self.on_search_key(key);
        }
        let last = self.rows.len().saturating_sub(1);
        match keymap.lookup(Scope::History, &key)? {
            Command::Quit => Some(HistoryEffect::Quit),
            // Esc takes back the last thing done first: a kept search (U7), then the screen.
            Command::Back if !self.query.is_empty() => {
                self.query.clear();
                self.selected = 0;
                Some(HistoryEffect::Refresh)
            }
            Command::Back => Some(HistoryEffect::Quit),
            Command::Help => {
                self.help = Some(0);
                None
            }
            Command::Search => {
                self.searching = true;
                None
            }
            Command::ScrollDown => {
                self.selected = (self.selected + 1).min(last);
                self.more_if_at_end()
            }
            Command::PageDown => {
                self.selected = (self.selected + 20).min(last);
                self.more_if_at_end()
            }
            Command::PageUp => {
                self.selected = self.selected.saturating_sub(20);
                None
            }
            Command::ScrollUp => {
                self.selected = self.selected.saturating_sub(1);
                None
            }
            Command::Top => {
                self.selected = 0;
                None
            }
            Command::Bottom => {
                self.selected = last;
                self.more_if_at_end()
            }
            Command::Open => {
                let row = self.rows.get(self.selected)?;
                let id = row.summary.id.clone();
                Some(match row.on_server {
                    true => HistoryEffect::Attach { id, resume: false },
                    false => HistoryEffect::Open(id),
                })
            }
            Command::Resume => self.resume_selected(),
            Command::Delete => {
                self.ask_to_delete_selected();
                None
            }
            Command::NewDebate => {
                let mut form = NewDebateForm::new(self.default_protocol, self.catalog.len());
                if let Some(default) = self.providers.first() {
                    form.model.set_placeholder_text(default.model_hint());
                }
                self.form = Some(form);
                None
            }
            _ => None,
        }
    }

    /// Resumes the selected debate (on its server, when it is one's), or says why it cannot.
    fn resume_selected(&mut self) -> Option<HistoryEffect> {
        let row = self.rows.get(self.selected)?;
        if row.summary.status.is_resumable() && row.on_server {
            let id = row.summary.id.clone();
            Some(HistoryEffect::Attach { id, resume: true })
        } else if row.summary.status.is_resumable() {
            Some(HistoryEffect::Resume(row.summary.id.clone()))
        } else {
            self.message = Some(format!(
                "{} is {}; only paused, interrupted or failed debates resume",
                row.summary.id, row.summary.status
            ));
            None
        }
    }

    /// Asks to confirm deleting the selected debate; one in a server's journal is not deleted
    /// from here, which is said.
    fn ask_to_delete_selected(&mut self) {
        let Some(row) = self.rows.get(self.selected) else {
            return;
        };
        if row.on_server {
            let server = self.server.as_ref().map_or("", |s| s.base.as_str());
            self.message = Some(format!(
                "{} is in the journal of the server at {server}; it is not deleted from here",
                row.summary.id
            ));
        } else {
            self.confirm_delete = Some(row.summary.id.clone());
        }
    }

    /// At the last loaded row of a full page, asks for the next page.
    fn more_if_at_end(&mut self) -> Option<HistoryEffect> {
        if self.selected + 1 >= self.rows.len() && self.rows.len() >= self.limit {
            self.limit += PAGE;
            return Some(HistoryEffect::Refresh);
        }
        None
    }

    fn on_form_key(&mut self, key: KeyEvent) -> Option<HistoryEffect> {
        let command = self.keymap.lookup(Scope::Form, &key);
        let seats_perspectives = self.form_seats_perspectives();
        let protocols = self.protocols.len();
        let providers = self.providers.len().max(1);
        let model_hint = |index: usize| {
            self.providers
                .get(index)
                .map(ProviderChoice::model_hint)
                .unwrap_or_default()
        };
        let (protocol_name, flags) = self
            .form_protocol()
            .map(|p| (p.name.clone(), p.flags.clone()))
            .unwrap_or_default();
        let form = self.form.as_mut()?;
        match command {
            Some(Command::Cancel) => {
                self.form = None;
                return None;
            }
            Some(Command::SubmitGuidance) => return self.submit_form(),
            _ => {}
        }
        let fields = form_fields(seats_perspectives, flags.len());
        let position = fields.iter().position(|f| *f == form.field).unwrap_or(0);
        match (command, form.field) {
            (Some(Command::NextField), _) => form.field = fields[(position + 1) % fields.len()],
            (Some(Command::PreviousField), _) => {
                form.field = fields[(position + fields.len() - 1) % fields.len()]
            }
            // The question is text: every other key types into it.
            (_, Field::Question) => {
                form.question.input(key);
            }
            // A switch flips; a value is a line every other key types into.
            (command, Field::Flag(index)) => {
                let flag = flags.get(index)?;
                if flag.value.is_none() {
                    if matches!(
                        command,
                        Some(Command::Toggle | Command::Increase | Command::Decrease)
                    ) {
                        let key = format!("{protocol_name}/{}", flag.name);
                        if form.values.remove(&key).is_none() {
                            form.values.insert(key, TextArea::default());
                        }
                    }
                } else if !matches!(key.code, KeyCode::Enter) {
                    form.value_mut(&protocol_name, flag).input(key);
                }
            }
            // A model is a line: Enter does not end it.
            (_, Field::Model) if !matches!(key.code, KeyCode::Enter) => {
                form.model.input(key);
            }
            (_, Field::Model) => {}
            (Some(Command::Increase | Command::Toggle), Field::Provider) => {
                form.provider = (form.provider + 1) % providers;
                form.model.set_placeholder_text(model_hint(form.provider));
            }
            (Some(Command::Decrease), Field::Provider) => {
                form.provider = (form.provider + providers - 1) % providers;
                form.model.set_placeholder_text(model_hint(form.provider));
            }
            (Some(Command::Increase | Command::Toggle), Field::Protocol) => {
                form.protocol = (form.protocol + 1) % protocols.max(1)
            }
            (Some(Command::Decrease), Field::Protocol) => {
                form.protocol = (form.protocol + protocols.max(1) - 1) % protocols.max(1)
            }
            (Some(Command::Increase), Field::Perspectives) => {
                form.perspectives = more_perspectives(form.perspectives)
            }
            (Some(Command::Decrease), Field::Perspectives) => {
                form.perspectives = fewer_perspectives(form.perspectives)
            }
            (Some(Command::Increase), Field::Seats) => {
                form.cursor = (form.cursor + 1).min(form.chosen.len().saturating_sub(1))
            }
            (Some(Command::Decrease), Field::Seats) => form.cursor = form.cursor.saturating_sub(1),
            (Some(Command::Toggle), Field::Seats) => {
                if let Some(chosen) = form.chosen.get_mut(form.cursor) {
                    *chosen = !*chosen;
                }
            }
            // From the protocol's default up to 20, and back down to the default.
            (Some(Command::Increase), Field::Rounds) => {
                form.max_rounds = Some(form.max_rounds.map_or(1, |n| (n + 1).min(20)))
            }
            (Some(Command::Decrease), Field::Rounds) => {
                form.max_rounds = form
                    .max_rounds
                    .and_then(|n| n.checked_sub(1))
                    .filter(|n| *n > 0)
            }
            (Some(Command::Toggle | Command::Increase | Command::Decrease), Field::Checkpoints) => {
                form.checkpoints = !form.checkpoints
            }
            _ => {}
        }
        form.show_cursor_in_focus(&protocol_name, &flags);
        None
    }

    /// The protocol the form has chosen.
    pub fn form_protocol(&self) -> Option<&ProtocolChoice> {
        self.protocols.get(self.form.as_ref()?.protocol)
    }

    /// Whether the chosen protocol seats perspectives (true when no protocols are known).
    pub fn form_seats_perspectives(&self) -> bool {
        self.form_protocol()
            .is_none_or(ProtocolChoice::seats_perspectives)
    }

    fn submit_form(&mut self) -> Option<HistoryEffect> {
        let seats_perspectives = self.form_seats_perspectives();
        let protocol = self
            .form_protocol()
            .map(|p| p.name.clone())
            .unwrap_or_else(|| "moderated".into());
        let form = self.form.as_mut()?;
        let question = form.question.lines().join("\n").trim().to_string();
        if question.is_empty() {
            form.problem = Some("Write the question first.".into());
            return None;
        }
        let named: Vec<String> = self
            .catalog
            .iter()
            .zip(&form.chosen)
            .filter(|(_, chosen)| **chosen && seats_perspectives)
            .map(|(name, _)| name.clone())
            .collect();
        if named.len() > 4 || named.len() == 1 {
            form.problem =
                Some("Choose 2 to 4 perspectives, or none to let the moderator pick.".into());
            return None;
        }
        if let Some(count) = form.perspectives
            && !named.is_empty()
            && count as usize != named.len()
        {
            form.problem = Some(format!(
                "{} perspectives are chosen but the count says {count}: set the count to auto, or choose {count}.",
                named.len()
            ));
            return None;
        }
        let offered = self
            .protocols
            .iter()
            .find(|p| p.name == protocol)
            .map(|p| p.flags.clone())
            .unwrap_or_default();
        let form = self.form.as_mut()?;
        let mut flags = BTreeMap::new();
        for flag in &offered {
            let key = format!("{protocol}/{}", flag.name);
            if flag.value.is_none() {
                if form.values.contains_key(&key) {
                    flags.insert(flag.name.clone(), vec![String::new()]);
                }
                continue;
            }
            let typed = form.value(&protocol, &flag.name);
            let values: Vec<String> = if flag.repeatable {
                typed
                    .split(';')
                    .map(str::trim)
                    .filter(|v| !v.is_empty())
                    .map(str::to_string)
                    .collect()
            } else {
                Some(typed).filter(|v| !v.is_empty()).into_iter().collect()
            };
            if !values.is_empty() {
                flags.insert(flag.name.clone(), values);
            }
        }
        form.problem = None;
        let provider = self
            .providers
            .get(form.provider)
            .and_then(|p| p.name.clone());
        let model = Some(form.model.lines().join(" ").trim().to_string()).filter(|m| !m.is_empty());
        // The form stays until the debate's settings are accepted (a refusal is shown in it).
        Some(HistoryEffect::Start(NewDebate {
            question,
            protocol,
            named,
            perspectives: form.perspectives.filter(|_| seats_perspectives),
            max_rounds: form.max_rounds,
            checkpoints: form.checkpoints,
            provider,
            model,
            flags,
        }))
    }
}

/// The form's fields in the order Tab walks them: perspectives are offered only to a protocol
/// that seats them, then the protocol's own flags.
fn form_fields(seats_perspectives: bool, flags: usize) -> Vec<Field> {
    [
        Field::Question,
        Field::Protocol,
        Field::Provider,
        Field::Model,
        Field::Perspectives,
        Field::Seats,
        Field::Rounds,
        Field::Checkpoints,
    ]
    .into_iter()
    .filter(|f| seats_perspectives || !matches!(f, Field::Perspectives | Field::Seats))
    .chain((0..flags).map(Field::Flag))
    .collect()
}

/// One perspective more: from the moderator's choice to 2, up to 4, then back to its choice.
fn more_perspectives(now: Option<u32>) -> Option<u32> {
    match now {
        None => Some(2),
        Some(n) if n < 4 => Some(n + 1),
        _ => None,
    }
}

/// One perspective fewer: from the moderator's choice to 4, down to 2, then back to its choice.
fn fewer_perspectives(now: Option<u32>) -> Option<u32> {
    match now {
        None => Some(4),
        Some(2) => None,
        Some(n) => Some(n - 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(id: &str, status: &str) -> DebateSummary {
        DebateSummary {
            id: id.into(),
            question: format!("question {id}"),
            protocol: "moderated".into(),
            status: status.parse().unwrap(),
            confidence: None,
            created_at: "2026-11-22T00:00:00Z".into(),
            updated_at: "2026-11-22T00:00:00Z".into(),
            rounds: 1,
            stage: None,
        }
    }

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn search_is_incremental_and_rows_follow_hits() {
        let mut history = History::new(Arc::new(Keymap::default()));
        history.show(
            vec![summary("DEB-a", "completed"), summary("DEB-b", "paused")],
            None,
        );
        assert_eq!(history.on_key(key(KeyCode::Char('/'))), None);
        assert_eq!(
            history.on_key(key(KeyCode::Char('r'))),
            Some(HistoryEffect::Refresh)
        );
        assert_eq!(history.query, "r");
        history.show(
            vec![summary("DEB-a", "completed"), summary("DEB-b", "paused")],
            Some(vec![SearchHit {
                id: "DEB-b".into(),
                question: String::new(),
                kind: "turn".into(),
                snippet: "[r]edis \u{202e}gnissim".into(),
                status: crate::debate::DebateStatus::Paused,
                protocol: "moderated".into(),
                confidence: None,
                created_at: "2026-11-22T00:00:00Z".into(),
            }]),
        );
        assert_eq!(history.rows.len(), 1);
        assert_eq!(
            history.rows[0].snippet.as_deref(),
            Some("[r]edis gnissim"),
            "snippets are sanitized, bidi overrides included"
        );
        assert_eq!(
            history.on_key(key(KeyCode::Esc)),
            Some(HistoryEffect::Refresh),
            "Esc clears the search"
        );
        assert!(history.query.is_empty());
        // U7: a search kept with Enter is cleared by Esc before Esc leaves.
        history.on_key(key(KeyCode::Char('/')));
        history.on_key(key(KeyCode::Char('r')));
        assert_eq!(history.on_key(key(KeyCode::Enter)), None, "kept");
        assert!(!history.searching);
        assert_eq!(
            history.on_key(key(KeyCode::Esc)),
            Some(HistoryEffect::Refresh),
            "Esc clears a kept search"
        );
        assert!(history.query.is_empty());
        assert_eq!(
            history.on_key(key(KeyCode::Esc)),
            Some(HistoryEffect::Quit),
            "then Esc leaves"
        );
        assert_eq!(
            history.on_key(key(KeyCode::Char('q'))),
            Some(HistoryEffect::Quit)
        );
    }

    #[test]
    fn a_long_history_loads_page_by_page() {
        let mut history = History::new(Arc::new(Keymap::default()));
        let page: Vec<DebateSummary> = (0..PAGE)
            .map(|i| summary(&format!("DEB-{i}"), "completed"))
            .collect();
        history.show(page, None);
        assert_eq!(history.on_key(key(KeyCode::Char('j'))), None);
        assert_eq!(
            history.on_key(key(KeyCode::End)),
            Some(HistoryEffect::Refresh),
            "the end of a full page loads more"
        );
        assert_eq!(history.limit, 2 * PAGE);
    }

    #[test]
    fn open_resume_and_delete_with_confirmation() {
        let mut history = History::new(Arc::new(Keymap::default()));
        history.show(
            vec![summary("DEB-a", "completed"), summary("DEB-b", "paused")],
            None,
        );
        assert_eq!(
            history.on_key(key(KeyCode::Enter)),
            Some(HistoryEffect::Open("DEB-a".into()))
        );
        assert_eq!(
            history.on_key(key(KeyCode::Char('r'))),
            None,
            "a completed debate does not resume"
        );
        assert!(history.message.is_some());
        history.on_key(key(KeyCode::Char('j')));
        assert_eq!(
            history.on_key(key(KeyCode::Char('r'))),
            Some(HistoryEffect::Resume("DEB-b".into()))
        );
        assert_eq!(history.on_key(key(KeyCode::Char('d'))), None);
        assert_eq!(
            history.on_key(key(KeyCode::Char('n'))),
            None,
            "anything but y keeps it"
        );
        history.on_key(key(KeyCode::Char('d')));
        assert_eq!(
            history.on_key(key(KeyCode::Char('y'))),
            Some(HistoryEffect::Delete("DEB-b".into()))
        );
    }

    /// With `[serve] url` set, the server's debates join the list in time order, marked as the
    /// server's; one this journal also holds shows once, as its own. Enter on a server row
    /// attaches, r asks the server to resume a paused one, d is refused; a server that stops
    /// answering keeps what it listed, with why.
    #[test]
    fn a_servers_debates_join_the_history_and_lead_to_it() {
        let mut history = History::new(Arc::new(Keymap::default()));
        history.server = Some(ServerRows {
            base: "http://build:7878".into(),
            ..ServerRows::default()
        });
        let at = |id: &str, status: &str, created: &str| DebateSummary {
            created_at: created.into(),
            ..summary(id, status)
        };
        history.show(
            vec![
                at("DEB-local2", "completed", "2026-11-24T00:00:00Z"),
                at("DEB-shared", "completed", "2026-11-22T00:00:00Z"),
            ],
            None,
        );
        assert!(history.rows.iter().all(|r| !r.on_server));
        history.show_server(Ok(vec![
            at("DEB-served3", "paused", "2026-11-25T00:00:00Z"),
            at("DEB-shared", "completed", "2026-11-22T00:00:00Z"),
            DebateSummary {
                question: "evil \u{1b}]52;c;x\u{7}question".into(),
                ..at("DEB-served1", "completed", "2026-11-23T00:00:00Z")
            },
        ]));
        let listed: Vec<(&str, bool)> = history
            .rows
            .iter()
            .map(|r| (r.summary.id.as_str(), r.on_server))
            .collect();
        assert_eq!(
            listed,
            [
                ("DEB-served3", true),
                ("DEB-local2", false),
                ("DEB-served1", true),
                ("DEB-shared", false),
            ]
        );
        assert!(!history.rows[2].summary.question.contains('\u{1b}'));
        // The cursor stayed on the debate it was on while the server's rows arrived above it.
        assert_eq!(history.selected_id(), Some("DEB-local2"));
        history.on_key(key(KeyCode::Char('k')));
        assert_eq!(
            history.on_key(key(KeyCode::Char('r'))),
            Some(HistoryEffect::Attach {
                id: "DEB-served3".into(),
                resume: true
            })
        );
        assert_eq!(history.on_key(key(KeyCode::Char('d'))), None);
        assert!(history.confirm_delete.is_none());
        let said = history.message.clone().unwrap();
        assert!(
            said.contains("http://build:7878") && said.contains("not deleted"),
            "{said}"
        );
        history.on_key(key(KeyCode::Char('j')));
        history.on_key(key(KeyCode::Char('j')));
        assert_eq!(
            history.on_key(key(KeyCode::Enter)),
            Some(HistoryEffect::Attach {
                id: "DEB-served1".into(),
                resume: false
            })
        );
        history.on_key(key(KeyCode::Char('j')));
        assert_eq!(
            history.on_key(key(KeyCode::Enter)),
            Some(HistoryEffect::Open("DEB-shared".into()))
        );
        history.show_server(Err(RemoteError::Unreachable {
            url: "http://build:7878".into(),
            detail: "refused".into(),
        }));
        let server = history.server.as_ref().unwrap();
        assert_eq!(
            server.problem.as_deref(),
            Some("cannot reach http://build:7878: refused")
        );
        assert_eq!(history.rows.iter().filter(|r| r.on_server).count(), 2);
    }

    #[test]
    fn the_form_seats_chosen_perspectives() {
        let mut history = History::new(Arc::new(Keymap::default()));
        history.catalog = vec![
            "Performance Advocate".into(),
            "Simplicity Advocate".into(),
            "Security Advocate".into(),
        ];
        history.on_key(key(KeyCode::Char('n')));
        for c in "Add SSO?".chars() {
            history.on_key(key(KeyCode::Char(c)));
        }
        // Question → protocol → provider → model → perspectives → seats.
        history.on_key(key(KeyCode::Tab));
        history.on_key(key(KeyCode::Tab));
        history.on_key(key(KeyCode::Tab));
        history.on_key(key(KeyCode::Tab));
        history.on_key(key(KeyCode::Tab));
        history.on_key(key(KeyCode::Char(' ')));
        let submit = KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL);
        assert_eq!(
            history.on_key(submit),
            None,
            "one perspective is not a debate"
        );
        history.on_key(key(KeyCode::Right));
        history.on_key(key(KeyCode::Right));
        history.on_key(key(KeyCode::Char(' ')));
        match history.on_key(submit) {
            Some(HistoryEffect::Start(debate)) => {
                assert_eq!(
                    debate.named,
                    vec![
                        "Performance Advocate".to_string(),
                        "Security Advocate".to_string()
                    ]
                )
            }
            other => panic!("{other:?}"),
        }
    }

    fn protocols() -> Vec<ProtocolChoice> {
        let choice = |name: &str, seat_role: &str, flags: Vec<FlagChoice>| ProtocolChoice {
            name: name.into(),
            description: format!("the {name} protocol"),
            seat_role: seat_role.into(),
            seats_from_catalog: seat_role == "perspective",
            flags,
        };
        let flag = |name: &str, value: Option<&str>, repeatable: bool| FlagChoice {
            name: name.into(),
            value: value.map(str::to_string),
            help: format!("the {name} flag"),
            repeatable,
        };
        vec![
            choice("moderated", "perspective", vec![]),
            choice(
                "panel",
                "judge",
                vec![
                    flag("option", Some("ID: label — description"), true),
                    flag("anonymous", None, false),
                    flag("vote", Some("method"), false),
                ],
            ),
        ]
    }

    /// Issue 24 item 2: the form sets a protocol's own options as its flags take them
    /// (repeatable values separated by `;`, switches toggled), kept per protocol.
    #[test]
    fn the_form_sets_a_protocols_options() {
        let mut history = History::new(Arc::new(Keymap::default()));
        history.protocols = protocols();
        history.default_protocol = 1;
        history.on_key(key(KeyCode::Char('n')));
        for c in "Offline in v1?".chars() {
            history.on_key(key(KeyCode::Char(c)));
        }
        // Question → protocol → provider → model → rounds → checkpoints → the panel's options.
        for _ in 0..6 {
            history.on_key(key(KeyCode::Tab));
        }
        assert_eq!(history.form.as_ref().unwrap().field, Field::Flag(0));
        for c in "A: Local-first; B: Online only".chars() {
            history.on_key(key(KeyCode::Char(c)));
        }
        history.on_key(key(KeyCode::Tab));
        history.on_key(key(KeyCode::Char(' ')));
        history.on_key(key(KeyCode::Tab));
        for c in "borda".chars() {
            history.on_key(key(KeyCode::Char(c)));
        }
        let submit = KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL);
        let Some(HistoryEffect::Start(debate)) = history.on_key(submit) else {
            panic!("the form should start the debate");
        };
        assert_eq!(
            debate.flags,
            BTreeMap::from([
                ("anonymous".to_string(), vec![String::new()]),
                (
                    "option".to_string(),
                    vec!["A: Local-first".to_string(), "B: Online only".to_string()]
                ),
                ("vote".to_string(), vec!["borda".to_string()]),
            ])
        );
        assert!(
            history.form.is_some(),
            "the form stays until the loop accepts the settings"
        );
    }

    #[test]
    fn the_form_offers_every_protocol_and_perspectives_only_where_they_are_seated() {
        let mut history = History::new(Arc::new(Keymap::default()));
        history.catalog = vec!["Performance Advocate".into(), "Security Advocate".into()];
        history.protocols = protocols();
        history.default_protocol = 1;
        history.on_key(key(KeyCode::Char('n')));
        assert_eq!(
            history.form_protocol().unwrap().name,
            "panel",
            "starts on the configured"
        );
        for c in "Offline in v1?".chars() {
            history.on_key(key(KeyCode::Char(c)));
        }
        history.on_key(key(KeyCode::Tab));
        assert_eq!(history.form.as_ref().unwrap().field, Field::Protocol);
        for _ in 0..3 {
            history.on_key(key(KeyCode::Tab));
        }
        assert_eq!(
            history.form.as_ref().unwrap().field,
            Field::Rounds,
            "a panel seats judges: the perspective fields are skipped"
        );
        history.on_key(key(KeyCode::Right));
        let submit = KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL);
        assert_eq!(
            history.on_key(submit),
            Some(HistoryEffect::Start(NewDebate {
                question: "Offline in v1?".into(),
                protocol: "panel".into(),
                named: vec![],
                perspectives: None,
                max_rounds: Some(1),
                checkpoints: true,
                provider: None,
                model: None,
                flags: BTreeMap::new(),
            }))
        );
        // The loop closes the form once the settings are accepted.
        history.form = None;
        history.on_key(key(KeyCode::Char('n')));
        history.on_key(key(KeyCode::Tab));
        history.on_key(key(KeyCode::Left));
        assert_eq!(history.form_protocol().unwrap().name, "moderated");
        for _ in 0..3 {
            history.on_key(key(KeyCode::Tab));
        }
        assert_eq!(history.form.as_ref().unwrap().field, Field::Perspectives);
        for _ in 0..3 {
            history.on_key(key(KeyCode::BackTab));
        }
        assert_eq!(history.form.as_ref().unwrap().field, Field::Protocol);
        history.on_key(key(KeyCode::Right));
        history.on_key(key(KeyCode::Right));
        assert_eq!(
            history.form_protocol().unwrap().name,
            "moderated",
            "wraps around"
        );
    }

    #[test]
    fn the_new_debate_form_builds_a_debate() {
        let mut history = History::new(Arc::new(Keymap::default()));
        history.protocols = protocols();
        history.on_key(key(KeyCode::Char('n')));
        let submit = KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL);
        assert_eq!(history.on_key(submit), None, "an empty question is refused");
        assert!(history.form.as_ref().unwrap().problem.is_some());
        for c in "Monolith or services?".chars() {
            history.on_key(key(KeyCode::Char(c)));
        }
        history.on_key(key(KeyCode::Tab));
        history.on_key(key(KeyCode::Tab));
        history.on_key(key(KeyCode::Tab));
        history.on_key(key(KeyCode::Tab));
        history.on_key(key(KeyCode::Right));
        history.on_key(key(KeyCode::Right));
        history.on_key(key(KeyCode::Tab));
        history.on_key(key(KeyCode::Tab));
        for _ in 0..5 {
            history.on_key(key(KeyCode::Right));
        }
        history.on_key(key(KeyCode::Left));
        history.on_key(key(KeyCode::Tab));
        history.on_key(key(KeyCode::Char(' ')));
        assert_eq!(
            history.on_key(submit),
            Some(HistoryEffect::Start(NewDebate {
                question: "Monolith or services?".into(),
                protocol: "moderated".into(),
                named: vec![],
                perspectives: Some(3),
                max_rounds: Some(4),
                checkpoints: false,
                provider: None,
                model: None,
                flags: BTreeMap::new(),
            }))
        );
    }

    #[test]
    fn the_history_keys_follow_a_rebinding() {
        let rebound = std::collections::BTreeMap::from([
            ("resume".to_string(), vec!["R".to_string()]),
            ("confirm".to_string(), vec!["Y".to_string()]),
        ]);
        let mut history = History::new(Arc::new(Keymap::new(&rebound).unwrap()));
        history.show(vec![summary("DEB-b", "paused")], None);
        assert_eq!(history.on_key(key(KeyCode::Char('r'))), None);
        assert_eq!(
            history.on_key(key(KeyCode::Char('R'))),
            Some(HistoryEffect::Resume("DEB-b".into()))
        );
        history.on_key(key(KeyCode::Char('d')));
        assert_eq!(
            history.on_key(key(KeyCode::Char('y'))),
            None,
            "y no longer confirms"
        );
        history.on_key(key(KeyCode::Char('d')));
        assert_eq!(
            history.on_key(key(KeyCode::Char('Y'))),
            Some(HistoryEffect::Delete("DEB-b".into()))
        );
        history.on_key(key(KeyCode::Char('?')));
        assert_eq!(history.help, Some(0), "? opens the key list");
        history.on_key(key(KeyCode::Char('x')));
        assert_eq!(history.help, None);
    }

    #[test]
    fn a_count_that_contradicts_the_chosen_perspectives_is_refused() {
        let mut history = History::new(Arc::new(Keymap::default()));
        history.catalog = vec!["A".into(), "B".into(), "C".into()];
        history.on_key(key(KeyCode::Char('n')));
        history.on_key(key(KeyCode::Char('q')));
        history.on_key(key(KeyCode::Tab));
        history.on_key(key(KeyCode::Tab));
        history.on_key(key(KeyCode::Tab));
        history.on_key(key(KeyCode::Tab));
        history.on_key(key(KeyCode::Right)); // count 2
        history.on_key(key(KeyCode::Tab));
        for _ in 0..3 {
            history.on_key(key(KeyCode::Char(' ')));
            history.on_key(key(KeyCode::Right));
        }
        let submit = KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL);
        assert_eq!(history.on_key(submit), None);
        let problem = history.form.as_ref().unwrap().problem.clone().unwrap();
        assert!(
            problem.contains("3 perspectives are chosen but the count says 2"),
            "{problem}"
        );
    }

    /// Issue 69 U9: the form chooses a provider (the default first, wrapping both ways) and a
    /// model; neither chosen, the debate takes the command line's and config's.
    #[test]
    fn the_form_chooses_a_provider_and_a_model() {
        let choice = |name: Option<&str>, model: &str| ProviderChoice {
            name: name.map(str::to_string),
            label: name.unwrap_or("the default").to_string(),
            model: model.into(),
        };
        let mut history = History::new(Arc::new(Keymap::default()));
        history.protocols = protocols();
        history.providers = vec![
            choice(None, "m"),
            choice(Some("standin"), "profile-model"),
            choice(Some("openai"), ""),
        ];
        let submit = KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL);
        history.on_key(key(KeyCode::Char('n')));
        history.on_key(key(KeyCode::Char('q')));
        let Some(HistoryEffect::Start(debate)) = history.on_key(submit) else {
            panic!("the form should start the debate");
        };
        assert_eq!((debate.provider, debate.model), (None, None));
        history.form = None;
        history.on_key(key(KeyCode::Char('n')));
        history.on_key(key(KeyCode::Char('q')));
        history.on_key(key(KeyCode::Tab));
        history.on_key(key(KeyCode::Tab));
        assert_eq!(history.form.as_ref().unwrap().field, Field::Provider);
        history.on_key(key(KeyCode::Left));
        assert_eq!(
            history.form.as_ref().unwrap().provider,
            2,
            "wraps to the last"
        );
        history.on_key(key(KeyCode::Right));
        history.on_key(key(KeyCode::Right));
        assert_eq!(history.form.as_ref().unwrap().provider, 1);
        history.on_key(key(KeyCode::Tab));
        assert_eq!(history.form.as_ref().unwrap().field, Field::Model);
        for c in "typed-model".chars() {
            history.on_key(key(KeyCode::Char(c)));
        }
        history.on_key(key(KeyCode::Enter));
        let Some(HistoryEffect::Start(debate)) = history.on_key(submit) else {
            panic!("the form should start the debate");
        };
        assert_eq!(
            (debate.provider.as_deref(), debate.model.as_deref()),
            (Some("standin"), Some("typed-model"))
        );
    }

    /// The form's request over the command line's: the form's fields win, the command line's
    /// protocol options stay with the protocol it named, and its provider's URL and script
    /// stay with its provider.
    #[test]
    fn the_forms_request_keeps_only_what_belongs_to_what_it_chose() {
        let base = DebateRequest {
            protocol: Some("panel".into()),
            protocol_flags: [("option".to_string(), vec!["A: a".to_string()])].into(),
            max_rounds: Some(4),
            provider: crate::providers::ProviderFlags {
                provider: Some("mock".into()),
                base_url: Some("http://127.0.0.1:9/v1".into()),
                ..Default::default()
            },
            ..DebateRequest::new("from the command line")
        };
        let form = NewDebate {
            question: "Tabs or spaces?".into(),
            protocol: "arena".into(),
            perspectives: None,
            named: Vec::new(),
            max_rounds: None,
            checkpoints: false,
            provider: Some("ollama".into()),
            model: Some("qwen3".into()),
            flags: [("vote".to_string(), vec!["borda".to_string()])].into(),
        };
        let request = form.request(&base, "panel");
        assert_eq!(request.question, "Tabs or spaces?");
        assert_eq!(request.protocol.as_deref(), Some("arena"));
        assert!(
            request.protocol_flags.is_empty(),
            "{:?}",
            request.protocol_flags
        );
        assert_eq!(request.max_rounds, Some(4));
        assert_eq!(request.checkpoints, Some(false));
        assert_eq!(request.vote.as_deref(), Some("borda"));
        assert_eq!(request.provider.provider.as_deref(), Some("ollama"));
        assert_eq!(request.provider.model.as_deref(), Some("qwen3"));
        assert_eq!(request.provider.base_url, None);
        // The protocol the command line named keeps its options.
        let same = NewDebate {
            protocol: "panel".into(),
            flags: Default::default(),
            provider: None,
            ..form
        };
        let request = same.request(&base, "panel");
        assert_eq!(request.protocol_flags, base.protocol_flags);
        assert_eq!(request.provider.base_url, base.provider.base_url);
        // Checkpoints on in the form keep the command line's `--checkpoints MODE`.
        let asked_for = DebateRequest {
            checkpoints: Some(true),
            ..base.clone()
        };
        let on = NewDebate {
            checkpoints: true,
            ..same
        };
        assert_eq!(on.request(&asked_for, "panel").checkpoints, Some(true));
    }
}
