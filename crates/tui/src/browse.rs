//! The history screen's loop: the list read from the journal (and from the configured
//! server, `[serve] url`, without holding up a key), the selected debate's preview, and what a
//! picked row leads to.

use super::app::{is_interrupt, is_suspend};
use super::history::{History, HistoryEffect, NewDebate, Row, ServerRows};
use super::run::{Run, Shutdown, Start, Term, draw_synchronized};
use super::theme::Theme;
use super::views;
use crate::remote::{RemoteError, Server};
use crate::session::{DebateSettings, SessionError};
use crate::store::{DebateSummary, Store};
use crossterm::event::Event as TermEvent;
use crossterm::event::{EventStream, KeyEventKind};
use futures_util::StreamExt;
use tokio::sync::mpsc;

/// The server the history lists too (`[serve] url`): where it is, and a client for it or why
/// there is none (no token, say).
pub struct Served {
    pub base: String,
    pub client: Result<Server, RemoteError>,
}

impl Served {
    /// The history's view of it before it has answered (or with why it cannot be asked).
    pub(super) fn rows(&self) -> ServerRows {
        ServerRows {
            base: self.base.clone(),
            problem: self.client.as_ref().err().map(ToString::to_string),
            ..ServerRows::default()
        }
    }
}

/// How often the history reads its lists again while it sits open, so a running debate's
/// status (here or on the server) moves on screen.
const RELOAD: std::time::Duration = std::time::Duration::from_secs(3);

/// A server's answer to one query, tagged with that query so a late answer to an older one
/// is dropped.
type Listing = (String, Result<Vec<DebateSummary>, RemoteError>);

/// Asks `server` for its debates matching the history's query, answering on `answers`.
fn ask_server(
    server: Option<&Server>,
    history: &mut History,
    answers: &mpsc::UnboundedSender<Listing>,
) {
    let (Some(server), Some(_)) = (server, history.server.as_ref()) else {
        return;
    };
    let (server, query, limit, answers) = (
        server.clone(),
        history.query.clone(),
        history.limit,
        answers.clone(),
    );
    tokio::spawn(async move {
        let listed = server.list(&query, limit).await;
        let _ = answers.send((query, listed));
    });
}

/// What the preview shows of a debate only the server holds: where it stands, and how to
/// reach it.
fn server_preview(history: &History, row: &Row) -> String {
    let summary = &row.summary;
    let base = history.server.as_ref().map_or("", |s| s.base.as_str());
    let stage = summary
        .stage
        .as_ref()
        .map(|stage| format!(", {stage}"))
        .unwrap_or_default();
    let resume = if summary.status.is_resumable() {
        ", r asks it to resume"
    } else {
        ""
    };
    format!(
        "{}\n\nstatus: {}{stage}\n\nprotocol: {} · round(s): {}\n\n*On the server at {base}:* Enter follows it over the API{resume}.",
        summary.question, summary.status, summary.protocol, summary.rounds
    )
}

/// The debate a server row leads to: asked to resume first when `resume`, then followed. A
/// server that refuses or cannot be reached sends the person back to the history, told why.
pub(super) async fn attach(
    served: Option<&Served>,
    id: &str,
    resume: bool,
    history: &mut History,
) -> Start {
    let server = match served.map(|s| &s.client) {
        Some(Ok(server)) => server,
        Some(Err(why)) => {
            history.message = Some(why.to_string());
            return Start::History;
        }
        None => {
            history.message = Some("no server is configured ([serve] url)".into());
            return Start::History;
        }
    };
    if resume && let Err(e) = server.resume(id).await {
        history.message = Some(e.to_string());
        return Start::History;
    }
    match server.attach(id).await {
        Ok(remote) => Start::Attach(Box::new(remote)),
        Err(e) => {
            history.message = Some(e.to_string());
            Start::History
        }
    }
}

/// The screen after the history: the debate opened, resumed or started from the form (a form
/// whose settings are refused goes back to the history with the reason).
pub(super) fn after_history(
    effect: HistoryEffect,
    history: &mut History,
    settings_for: &impl Fn(&NewDebate) -> Result<DebateSettings, SessionError>,
) -> Option<Start> {
    match effect {
        HistoryEffect::Open(id) => Some(Start::Replay(id)),
        HistoryEffect::Resume(id) => Some(Start::Live(Run::Resume {
            id,
            changes: Box::default(),
        })),
        HistoryEffect::Start(debate) => match settings_for(&debate) {
            Ok(settings) => {
                history.form = None;
                Some(Start::Live(Run::New {
                    question: debate.question,
                    settings: Box::new(settings),
                }))
            }
            // The form stays open with what was wrong, as the command line would say it.
            Err(problem) => {
                let problem = problem.to_string();
                match history.form.as_mut() {
                    Some(form) => form.problem = Some(problem),
                    None => history.message = Some(problem),
                }
                Some(Start::History)
            }
        },
        _ => None,
    }
}

/// Loads the list (or the search hits) and the selected debate's preview.
pub fn refresh_history(store: &Store, history: &mut History) {
    let hits = if history.query.trim().is_empty() {
        None
    } else {
        Some(
            store
                .search(&history.query, history.limit)
                .unwrap_or_default(),
        )
    };
    // Search hits carry what a row shows, so the list is read only when not searching.
    let summaries = if hits.is_some() {
        Vec::new()
    } else {
        store.list(history.limit).unwrap_or_default()
    };
    history.show(summaries, hits);
}

fn load_preview(store: &Store, history: &mut History) {
    if let Some(row) = history.selected_row().filter(|r| r.on_server) {
        let id = row.summary.id.clone();
        let text = server_preview(history, row);
        history.preview = Some((id, text));
        return;
    }
    let Some(id) = history.selected_id().map(str::to_string) else {
        history.preview = None;
        return;
    };
    if history
        .preview
        .as_ref()
        .is_some_and(|(shown, _)| *shown == id)
    {
        return;
    }
    let text = preview_text(store, &id);
    history.preview = Some((id, text));
}

/// What the history's preview shows of debate `id`: its record with where its files went, or
/// where it stands.
fn preview_text(store: &Store, id: &str) -> String {
    match store.synthesis(id) {
        // Where its files went first: the preview shows the top of a long record only
        // (seed review 000/001 #11: the follow-up draft was nowhere to be seen).
        Ok(Some(synthesis)) => {
            let mut text = String::new();
            for (what, path) in [
                ("Decision record", &synthesis.path),
                ("Follow-up issue draft", &synthesis.follow_up_path),
            ] {
                if let Some(path) = path {
                    text.push_str(&format!("*{what}:* `{}`\n\n", crate::sanitize::clean(path)));
                }
            }
            text.push_str(&crate::sanitize::clean(&synthesis.markdown));
            text
        }
        _ => match store.debate(id) {
            Ok(debate) => {
                let seats: Vec<String> = debate
                    .seats
                    .iter()
                    .map(|s| format!("{} {}", s.id, crate::sanitize::clean(&s.perspective)))
                    .collect();
                let running = debate.status == crate::debate::DebateStatus::Running;
                format!(
                    "{}\n\nstatus: {}{}{}\n\nseats: {}\n\n{}",
                    crate::sanitize::clean(&debate.question),
                    debate.status,
                    debate
                        .stage
                        .map(|stage| match running {
                            true => format!(", {stage}"),
                            false => format!(", stopped {stage}"),
                        })
                        .unwrap_or_default(),
                    if running {
                        " (another process runs it: Enter follows it live)"
                    } else {
                        ""
                    },
                    if seats.is_empty() {
                        "not assigned".to_string()
                    } else {
                        seats.join(", ")
                    },
                    debate
                        .error
                        .as_deref()
                        .map(crate::sanitize::clean)
                        .unwrap_or_default()
                )
            }
            Err(e) => e.to_string(),
        },
    }
}

/// The history screen until the user picks something to do. The configured server's list
/// is asked for beside each reload and merged in when it answers.
pub(super) async fn history_screen(
    terminal: &mut Term,
    keys: &mut EventStream,
    shutdown: &Shutdown,
    store: &Store,
    history: &mut History,
    theme: &Theme,
    served: Option<&Served>,
) -> HistoryEffect {
    let server = served.and_then(|s| s.client.as_ref().ok());
    let (answers, mut answered) = mpsc::unbounded_channel::<Listing>();
    let refresh = |history: &mut History| {
        refresh_history(store, history);
        ask_server(server, history, &answers);
    };
    refresh(history);
    // Coming back from another screen, the history is drawn whether or not its rows changed.
    history.dirty = true;
    let mut reload = tokio::time::interval_at(tokio::time::Instant::now() + RELOAD, RELOAD);
    loop {
        if history.dirty {
            load_preview(store, history);
            draw_synchronized(terminal, |frame| {
                views::history::draw(frame, history, theme)
            });
            history.dirty = false;
        }
        tokio::select! {
            key = keys.next() => match key {
                Some(Ok(TermEvent::Key(key))) if key.kind != KeyEventKind::Release => {
                    if is_interrupt(&key) {
                        return HistoryEffect::Quit;
                    }
                    if is_suspend(&key) {
                        super::run::suspend(terminal);
                        history.dirty = true;
                        continue;
                    }
                    match history.on_key(key) {
                        Some(HistoryEffect::Refresh) => refresh(history),
                        Some(HistoryEffect::Delete(id)) => {
                            history.message = Some(match store.delete(&id) {
                                Ok(()) => format!("deleted {id}"),
                                Err(e) => e.to_string(),
                            });
                            history.preview = None;
                            refresh(history);
                        }
                        Some(effect) => return effect,
                        None => {}
                    }
                }
                Some(Ok(TermEvent::Resize(_, _))) => history.dirty = true,
                Some(Ok(_)) => {}
                Some(Err(_)) | None => return HistoryEffect::Quit,
            },
            _ = reload.tick() => {
                let before = history.rows.clone();
                history.keeping_selection(refresh);
                // What the preview says of a debate that moved on is read again.
                if history.rows != before {
                    history.preview = None;
                }
            }
            Some((query, listed)) = answered.recv() => {
                if query == history.query {
                    history.show_server(listed);
                }
            }
            _ = shutdown.wait() => return HistoryEffect::Quit,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seed review 000/001 #11: the preview names the record and the follow-up draft first,
    /// since it shows only the top of a long record.
    #[test]
    fn the_preview_names_the_record_and_the_follow_up_draft_first() {
        let store = Store::in_memory().unwrap();
        let debate = crate::store::running_debate("DEB-preview1");
        store.create_debate(&debate).unwrap();
        let synthesis = crate::store::StoredSynthesis {
            markdown: "# Decision\n\nUse PostgreSQL.".into(),
            data: serde_json::Value::Null,
            confidence: crate::debate::Confidence::High,
            path: Some("docs/decisions/2026-11-25-cache.md".into()),
            follow_up_path: Some("docs/decisions/2026-11-25-cache-issue.md".into()),
            section: None,
        };
        store.save_synthesis(&debate.id, &synthesis).unwrap();
        let text = preview_text(&store, &debate.id);
        assert!(
            text.starts_with(
                "*Decision record:* `docs/decisions/2026-11-25-cache.md`\n\n*Follow-up issue draft:* `docs/decisions/2026-11-25-cache-issue.md`\n\n# Decision"
            ),
            "{text}"
        );
    }
}
