//! The history screen's state: stored debates, incremental full-text search, a preview, delete
//! with confirmation, and the new-debate form. Pure: the loop does the journal I/O it asks for.

use super::keymap;
use crate::store::{DebateSummary, SearchHit};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui_textarea::{TextArea, WrapMode};

/// A new debate as the form describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct NewDebate {
    pub question: String,
    /// None: decided from the question.
    pub perspectives: Option<u32>,
    /// Perspectives chosen by name (they override the count).
    pub named: Vec<String>,
    pub max_rounds: u32,
    pub checkpoints: bool,
}

/// The fields of the form, in tab order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Question,
    Perspectives,
    Seats,
    Rounds,
    Checkpoints,
}

pub struct NewDebateForm {
    pub question: TextArea<'static>,
    pub perspectives: Option<u32>,
    /// Per catalog perspective, whether it is chosen; `cursor` is the one the keys act on.
    pub chosen: Vec<bool>,
    pub cursor: usize,
    pub max_rounds: u32,
    pub checkpoints: bool,
    pub field: Field,
    pub problem: Option<String>,
}

impl NewDebateForm {
    fn new(max_rounds: u32, catalog: usize) -> Self {
        let mut question = TextArea::default();
        question.set_wrap_mode(WrapMode::Word);
        question.set_placeholder_text("Should we use Redis or PostgreSQL for caching?");
        NewDebateForm {
            question,
            perspectives: None,
            chosen: vec![false; catalog],
            cursor: 0,
            max_rounds,
            checkpoints: true,
            field: Field::Question,
            problem: None,
        }
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
    Start(NewDebate),
    Quit,
}

/// Rows loaded at a time.
pub const PAGE: usize = 200;

/// A row of the list: a debate, and why it matched a search.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub summary: DebateSummary,
    pub snippet: Option<String>,
}

pub struct History {
    pub rows: Vec<Row>,
    pub query: String,
    /// Typing goes to the search box.
    pub searching: bool,
    pub selected: usize,
    /// (id, text) of the preview of the selected debate, filled by the loop.
    pub preview: Option<(String, String)>,
    pub confirm_delete: Option<String>,
    pub form: Option<NewDebateForm>,
    pub default_rounds: u32,
    /// The perspective catalog's names, for the form.
    pub catalog: Vec<String>,
    /// How many rows are loaded; grows as the selection nears the end, so a long history
    /// loads page by page.
    pub limit: usize,
    pub message: Option<String>,
    pub dirty: bool,
}

impl History {
    pub fn new(default_rounds: u32) -> Self {
        History {
            rows: Vec::new(),
            query: String::new(),
            searching: false,
            selected: 0,
            preview: None,
            confirm_delete: None,
            form: None,
            default_rounds,
            catalog: Vec::new(),
            limit: PAGE,
            message: None,
            dirty: true,
        }
    }

    /// Replaces the list with everything stored, or with the search hits.
    pub fn show(&mut self, summaries: Vec<DebateSummary>, hits: Option<Vec<SearchHit>>) {
        self.rows = match hits {
            None => summaries
                .into_iter()
                .map(|summary| Row {
                    summary,
                    snippet: None,
                })
                .collect(),
            Some(hits) => hits
                .into_iter()
                .map(|hit| Row {
                    summary: DebateSummary {
                        id: hit.id,
                        question: hit.question,
                        protocol: hit.protocol,
                        status: hit.status,
                        confidence: hit.confidence,
                        updated_at: hit.created_at.clone(),
                        created_at: hit.created_at,
                        rounds: 0,
                    },
                    snippet: Some(hit.snippet),
                })
                .collect(),
        };
        self.selected = self.selected.min(self.rows.len().saturating_sub(1));
        self.dirty = true;
    }

    pub fn selected_id(&self) -> Option<&str> {
        self.rows.get(self.selected).map(|r| r.summary.id.as_str())
    }

    pub fn on_key(&mut self, key: KeyEvent) -> Option<HistoryEffect> {
        self.dirty = true;
        self.message = None;
        if self.form.is_some() {
            return self.on_form_key(key);
        }
        if let Some(id) = self.confirm_delete.take() {
            return matches!(key.code, KeyCode::Char('y') | KeyCode::Char('Y'))
                .then_some(HistoryEffect::Delete(id));
        }
        if self.searching {
            match key.code {
                KeyCode::Esc => {
                    self.searching = false;
                    if !self.query.is_empty() {
                        self.query.clear();
                        return Some(HistoryEffect::Refresh);
                    }
                    return None;
                }
                KeyCode::Enter | KeyCode::Down => {
                    self.searching = false;
                    return None;
                }
                KeyCode::Backspace => {
                    self.query.pop();
                    return Some(HistoryEffect::Refresh);
                }
                KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                    self.query.push(c);
                    self.selected = 0;
                    return Some(HistoryEffect::Refresh);
                }
                _ => return None,
            }
        }
        match key.code {
            KeyCode::Char('q') | KeyCode::Esc => Some(HistoryEffect::Quit),
            KeyCode::Char('/') => {
                self.searching = true;
                None
            }
            KeyCode::Down | KeyCode::Char('j') => {
                self.selected = (self.selected + 1).min(self.rows.len().saturating_sub(1));
                self.more_if_at_end()
            }
            KeyCode::PageDown => {
                self.selected = (self.selected + 20).min(self.rows.len().saturating_sub(1));
                self.more_if_at_end()
            }
            KeyCode::PageUp => {
                self.selected = self.selected.saturating_sub(20);
                None
            }
            KeyCode::Up | KeyCode::Char('k') => {
                self.selected = self.selected.saturating_sub(1);
                None
            }
            KeyCode::Home | KeyCode::Char('g') => {
                self.selected = 0;
                None
            }
            KeyCode::End | KeyCode::Char('G') => {
                self.selected = self.rows.len().saturating_sub(1);
                self.more_if_at_end()
            }
            KeyCode::Enter | KeyCode::Char('o') => self
                .selected_id()
                .map(|id| HistoryEffect::Open(id.to_string())),
            KeyCode::Char('r') => {
                let row = self.rows.get(self.selected)?;
                if matches!(
                    row.summary.status.as_str(),
                    "paused" | "running" | "failed" | "pending"
                ) {
                    Some(HistoryEffect::Resume(row.summary.id.clone()))
                } else {
                    self.message = Some(format!(
                        "{} is {}; only paused, interrupted or failed debates resume",
                        row.summary.id, row.summary.status
                    ));
                    None
                }
            }
            KeyCode::Char('d') | KeyCode::Delete => {
                self.confirm_delete = self.selected_id().map(str::to_string);
                None
            }
            KeyCode::Char('n') => {
                self.form = Some(NewDebateForm::new(self.default_rounds, self.catalog.len()));
                None
            }
            _ => None,
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
        let form = self.form.as_mut()?;
        if key.code == KeyCode::Esc {
            self.form = None;
            return None;
        }
        if keymap::lookup(keymap::Scope::Editor, &key) == Some(keymap::Command::SubmitGuidance) {
            let question = form.question.lines().join("\n").trim().to_string();
            if question.is_empty() {
                form.problem = Some("Write the question first.".into());
                return None;
            }
            let named: Vec<String> = self
                .catalog
                .iter()
                .zip(&form.chosen)
                .filter(|(_, chosen)| **chosen)
                .map(|(name, _)| name.clone())
                .collect();
            if named.len() > 4 || named.len() == 1 {
                form.problem =
                    Some("Choose 2 to 4 perspectives, or none to let the moderator pick.".into());
                return None;
            }
            let debate = NewDebate {
                question,
                named,
                perspectives: form.perspectives,
                max_rounds: form.max_rounds,
                checkpoints: form.checkpoints,
            };
            self.form = None;
            return Some(HistoryEffect::Start(debate));
        }
        let fields = [
            Field::Question,
            Field::Perspectives,
            Field::Seats,
            Field::Rounds,
            Field::Checkpoints,
        ];
        let position = fields.iter().position(|f| *f == form.field).unwrap_or(0);
        match key.code {
            KeyCode::Tab => form.field = fields[(position + 1) % fields.len()],
            KeyCode::BackTab => form.field = fields[(position + fields.len() - 1) % fields.len()],
            _ => match form.field {
                Field::Question => {
                    form.question.input(key);
                }
                Field::Perspectives => match key.code {
                    KeyCode::Right | KeyCode::Char('+') | KeyCode::Char('l') => {
                        form.perspectives = match form.perspectives {
                            None => Some(2),
                            Some(n) if n < 4 => Some(n + 1),
                            _ => None,
                        }
                    }
                    KeyCode::Left | KeyCode::Char('-') | KeyCode::Char('h') => {
                        form.perspectives = match form.perspectives {
                            None => Some(4),
                            Some(2) => None,
                            Some(n) => Some(n - 1),
                        }
                    }
                    _ => {}
                },
                Field::Seats => match key.code {
                    KeyCode::Right | KeyCode::Down | KeyCode::Char('l') | KeyCode::Char('j') => {
                        form.cursor = (form.cursor + 1).min(form.chosen.len().saturating_sub(1))
                    }
                    KeyCode::Left | KeyCode::Up | KeyCode::Char('h') | KeyCode::Char('k') => {
                        form.cursor = form.cursor.saturating_sub(1)
                    }
                    KeyCode::Char(' ') | KeyCode::Enter => {
                        if let Some(chosen) = form.chosen.get_mut(form.cursor) {
                            *chosen = !*chosen;
                        }
                    }
                    _ => {}
                },
                Field::Rounds => match key.code {
                    KeyCode::Right | KeyCode::Char('+') | KeyCode::Char('l') => {
                        form.max_rounds = (form.max_rounds + 1).min(20)
                    }
                    KeyCode::Left | KeyCode::Char('-') | KeyCode::Char('h') => {
                        form.max_rounds = form.max_rounds.saturating_sub(1).max(1)
                    }
                    _ => {}
                },
                Field::Checkpoints => {
                    if matches!(
                        key.code,
                        KeyCode::Left
                            | KeyCode::Right
                            | KeyCode::Char(' ')
                            | KeyCode::Char('h')
                            | KeyCode::Char('l')
                    ) {
                        form.checkpoints = !form.checkpoints;
                    }
                }
            },
        }
        None
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
            status: status.into(),
            confidence: None,
            created_at: "2026-11-22T00:00:00Z".into(),
            updated_at: "2026-11-22T00:00:00Z".into(),
            rounds: 1,
        }
    }

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn search_is_incremental_and_rows_follow_hits() {
        let mut history = History::new(5);
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
                snippet: "[r]edis".into(),
                status: "paused".into(),
                protocol: "moderated".into(),
                confidence: None,
                created_at: "2026-11-22T00:00:00Z".into(),
            }]),
        );
        assert_eq!(history.rows.len(), 1);
        assert_eq!(history.rows[0].snippet.as_deref(), Some("[r]edis"));
        assert_eq!(
            history.on_key(key(KeyCode::Esc)),
            Some(HistoryEffect::Refresh),
            "Esc clears the search"
        );
        assert!(history.query.is_empty());
    }

    #[test]
    fn a_long_history_loads_page_by_page() {
        let mut history = History::new(5);
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
        let mut history = History::new(5);
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

    #[test]
    fn the_form_seats_chosen_perspectives() {
        let mut history = History::new(5);
        history.catalog = vec![
            "Performance Advocate".into(),
            "Simplicity Advocate".into(),
            "Security Advocate".into(),
        ];
        history.on_key(key(KeyCode::Char('n')));
        for c in "Add SSO?".chars() {
            history.on_key(key(KeyCode::Char(c)));
        }
        history.on_key(key(KeyCode::Tab));
        history.on_key(key(KeyCode::Tab));
        history.on_key(key(KeyCode::Char(' ')));
        let submit = KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL);
        assert_eq!(
            history.on_key(submit),
            None,
            "one perspective is not a debate"
        );
        history.on_key(key(KeyCode::Down));
        history.on_key(key(KeyCode::Down));
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

    #[test]
    fn the_new_debate_form_builds_a_debate() {
        let mut history = History::new(5);
        history.on_key(key(KeyCode::Char('n')));
        let submit = KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL);
        assert_eq!(history.on_key(submit), None, "an empty question is refused");
        assert!(history.form.as_ref().unwrap().problem.is_some());
        for c in "Monolith or services?".chars() {
            history.on_key(key(KeyCode::Char(c)));
        }
        history.on_key(key(KeyCode::Tab));
        history.on_key(key(KeyCode::Right));
        history.on_key(key(KeyCode::Right));
        history.on_key(key(KeyCode::Tab));
        history.on_key(key(KeyCode::Tab));
        history.on_key(key(KeyCode::Left));
        history.on_key(key(KeyCode::Tab));
        history.on_key(key(KeyCode::Char(' ')));
        assert_eq!(
            history.on_key(submit),
            Some(HistoryEffect::Start(NewDebate {
                question: "Monolith or services?".into(),
                named: vec![],
                perspectives: Some(3),
                max_rounds: 4,
                checkpoints: false,
            }))
        );
    }
}
