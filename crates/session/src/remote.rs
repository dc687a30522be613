//! A debate `moot serve` runs, followed from another machine (`moot attach`): its events read
//! from the API's SSE stream (resumed after a dropped connection with `Last-Event-ID`), and the
//! person's answers sent back as the API's POSTs.

use crate::debate::{AskKind, Control, DebateStatus, Event};
use crate::store::DebateSummary;
use std::time::Duration;

/// Why a server's debate cannot be followed, said with what to do.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("cannot reach {url}: {detail}")]
    Unreachable { url: String, detail: String },
    #[error("{url} refused: {status} {message}")]
    Refused {
        url: String,
        status: u16,
        message: String,
    },
    #[error(transparent)]
    Http(#[from] crate::llm::HttpSetupError),
    /// No token to send it (the reason says where one was looked for).
    #[error("{0}")]
    Token(String),
}

/// How long to wait before reconnecting a stream the server dropped.
const RECONNECT: Duration = Duration::from_millis(500);

/// How many times in a row a lost stream is opened again before the debate is given up.
const REOPENINGS: u32 = 20;

/// A server `moot serve` runs, as a client reaches it: its address and token.
#[derive(Clone)]
pub struct Server {
    client: reqwest::Client,
    base: String,
    token: String,
}

impl Server {
    pub fn new(base: &str, token: &str) -> Result<Server, RemoteError> {
        Ok(Server {
            client: crate::llm::http_client()?,
            base: base.trim_end_matches('/').to_string(),
            token: token.to_string(),
        })
    }

    /// Where the server is, as configured.
    pub fn base(&self) -> &str {
        &self.base
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn send(
        &self,
        url: String,
        request: reqwest::RequestBuilder,
    ) -> Result<serde_json::Value, RemoteError> {
        let response = request
            .bearer_auth(&self.token)
            .send()
            .await
            .map_err(|e| unreachable(&url, &e))?;
        read_reply(url, response).await
    }

    async fn get(&self, path: &str) -> Result<serde_json::Value, RemoteError> {
        let url = self.url(path);
        self.send(url.clone(), self.client.get(&url)).await
    }

    async fn post(
        &self,
        path: &str,
        body: serde_json::Value,
    ) -> Result<serde_json::Value, RemoteError> {
        let url = self.url(path);
        self.send(url.clone(), self.client.post(&url).json(&body))
            .await
    }

    /// The server's debates, newest first (`GET /v1/debates`), at most `limit` of them; with
    /// a `query`, only those its full-text search finds.
    pub async fn list(&self, query: &str, limit: usize) -> Result<Vec<DebateSummary>, RemoteError> {
        let url = self.url("/v1/debates");
        let mut address = reqwest::Url::parse(&url).map_err(|e| RemoteError::Unreachable {
            url: url.clone(),
            detail: e.to_string(),
        })?;
        address
            .query_pairs_mut()
            .append_pair("limit", &limit.to_string());
        if !query.trim().is_empty() {
            address.query_pairs_mut().append_pair("q", query.trim());
        }
        let listed = self.send(url.clone(), self.client.get(address)).await?;
        serde_json::from_value(listed).map_err(|e| RemoteError::Unreachable {
            url,
            detail: format!("the list is not moot's: {e}"),
        })
    }

    /// Asks the server to resume debate `id` (`POST /v1/debates/{id}/resume`).
    pub async fn resume(&self, id: &str) -> Result<(), RemoteError> {
        self.post(&format!("/v1/debates/{id}/resume"), serde_json::json!({}))
            .await
            .map(|_| ())
    }

    /// Debate `id` as it runs, once the server has said it has it (its stream is opened by
    /// the first `next`).
    pub async fn attach(&self, id: &str) -> Result<Remote, RemoteError> {
        let shown = self.get(&format!("/v1/debates/{id}")).await?;
        let id = shown.get("id").and_then(|v| v.as_str()).unwrap_or(id);
        Ok(Remote::new(self.clone(), id))
    }
}

/// A server's debate as it runs.
pub struct Remote {
    server: Server,
    pub id: String,
    /// The last journaled event taken (`Last-Event-ID`).
    last: i64,
    /// The event stream, opened on the runtime that reads it (a connection belongs to the
    /// runtime that made it).
    response: Option<reqwest::Response>,
    /// When a lost stream is next opened; kept across calls, since a caller may drop a call to
    /// `next` (a key pressed meanwhile) and call again.
    reopen_at: Option<tokio::time::Instant>,
    failed_opens: u32,
    buffer: String,
    done: bool,
}

impl Remote {
    /// The server the debate runs on, as configured.
    pub fn server_base(&self) -> &str {
        self.server.base()
    }

    /// Checks that the server has debate `id` (its stream is opened by the first `next`).
    pub async fn connect(base: &str, token: &str, id: &str) -> Result<Remote, RemoteError> {
        let checked = Server::new(base, token)?.attach(id).await?;
        // A fresh client for the runtime that will read the stream.
        Ok(Remote::new(Server::new(base, token)?, &checked.id))
    }

    fn new(server: Server, id: &str) -> Remote {
        Remote {
            server,
            id: id.to_string(),
            last: 0,
            response: None,
            reopen_at: None,
            failed_opens: 0,
            buffer: String::new(),
            done: false,
        }
    }

    async fn open(&mut self) -> Result<(), RemoteError> {
        let url = self.server.url(&format!("/v1/debates/{}/events", self.id));
        let response = self
            .server
            .client
            .get(&url)
            .bearer_auth(&self.server.token)
            .header("Last-Event-ID", self.last.to_string())
            .send()
            .await
            .map_err(|e| unreachable(&url, &e))?;
        if !response.status().is_success() {
            return Err(refused(url, response).await);
        }
        self.response = Some(response);
        Ok(())
    }

    /// What happened next; `None` once the debate has ended (or the server cannot be reached
    /// again).
    pub async fn next(&mut self) -> Option<Vec<Event>> {
        loop {
            if self.done {
                return None;
            }
            let events = self.parse();
            if !events.is_empty() {
                return Some(events);
            }
            let Some(response) = self.response.as_mut() else {
                // Opened (again) after the last event taken.
                if let Some(at) = self.reopen_at {
                    tokio::time::sleep_until(at).await;
                }
                match self.open().await {
                    Ok(()) => {
                        self.reopen_at = None;
                        self.failed_opens = 0;
                    }
                    Err(_) => {
                        self.failed_opens += 1;
                        self.done = self.failed_opens > REOPENINGS;
                        self.reopen_at = Some(tokio::time::Instant::now() + RECONNECT);
                    }
                }
                continue;
            };
            match response.chunk().await {
                Ok(Some(bytes)) => self.buffer.push_str(&String::from_utf8_lossy(&bytes)),
                // Dropped: opened again after the last event taken, unless it ended.
                _ => {
                    self.response = None;
                    self.reopen_at = Some(tokio::time::Instant::now() + RECONNECT);
                }
            }
        }
    }

    /// The complete server-sent events in the buffer, as moot's events.
    fn parse(&mut self) -> Vec<Event> {
        let mut events = Vec::new();
        while let Some(end) = self.buffer.find("\n\n") {
            let block: String = self.buffer.drain(..end + 2).collect();
            let mut data = String::new();
            for line in block.lines() {
                if let Some(id) = line.strip_prefix("id:") {
                    if let Ok(id) = id.trim().parse() {
                        self.last = id;
                    }
                } else if let Some(value) = line.strip_prefix("data:") {
                    data.push_str(value.trim_start());
                }
            }
            let Ok(event) = serde_json::from_str::<Event>(&data) else {
                continue;
            };
            if let Event::DebateCompleted { status, .. } = &event
                && *status != DebateStatus::Paused
            {
                self.done = true;
            }
            events.push(event);
        }
        events
    }

    /// Sends the person's answer to what the debate waits at (`kind`); false when it was
    /// answered a moment ago.
    pub async fn answer(&self, kind: AskKind, control: Control) -> Result<bool, RemoteError> {
        let by = crate::signals::user();
        let id = &self.id;
        let (path, body) = match (kind, control) {
            (AskKind::Gate, Control::Decline(reason)) => (
                format!("/v1/debates/{id}/reject"),
                serde_json::json!({"reviewer": by, "reason": reason}),
            ),
            (AskKind::Gate, _) => (
                format!("/v1/debates/{id}/approve"),
                serde_json::json!({"reviewer": by}),
            ),
            (_, control) => {
                let text = match &control {
                    Control::Guide(t) | Control::Revise(t) | Control::Choose(t) => t.clone(),
                    _ => String::new(),
                };
                (
                    format!("/v1/debates/{id}/checkpoint"),
                    serde_json::json!({"answer": control.answer().to_string(), "text": text}),
                )
            }
        };
        match self.server.post(&path, body).await {
            Ok(_) => Ok(true),
            Err(RemoteError::Refused { status: 409, .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

async fn read_reply(
    url: String,
    response: reqwest::Response,
) -> Result<serde_json::Value, RemoteError> {
    if !response.status().is_success() {
        return Err(refused(url, response).await);
    }
    let (body, cut) = crate::llm::http::body_capped(response, LARGEST_REPLY)
        .await
        .map_err(|e| unreachable(&url, &e))?;
    if cut {
        return Err(RemoteError::Unreachable {
            url,
            detail: format!("its reply is longer than {LARGEST_REPLY} bytes"),
        });
    }
    serde_json::from_slice(&body).map_err(|e| RemoteError::Unreachable {
        url,
        detail: format!("its reply is not JSON: {e}"),
    })
}

/// The most bytes of a server's reply moot reads (a debate shown whole is the largest).
const LARGEST_REPLY: usize = 64 * 1024 * 1024;
/// The most bytes of a refusal's body moot reads.
const LARGEST_REFUSAL: usize = 64 * 1024;

/// `url` could not be read, said with the innermost cause ("Connection refused"), which
/// reqwest's own message ("error sending request for url …") leaves out.
fn unreachable(url: &str, error: &reqwest::Error) -> RemoteError {
    let mut cause: &dyn std::error::Error = error;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    RemoteError::Unreachable {
        url: url.to_string(),
        detail: cause.to_string(),
    }
}

async fn refused(url: String, response: reqwest::Response) -> RemoteError {
    let status = response.status().as_u16();
    let body: serde_json::Value =
        match crate::llm::http::body_capped(response, LARGEST_REFUSAL).await {
            Ok((bytes, _)) => serde_json::from_slice(&bytes).unwrap_or_default(),
            Err(_) => serde_json::Value::Null,
        };
    RemoteError::Refused {
        url,
        status,
        message: crate::sanitize::clean(body["error"]["message"].as_str().unwrap_or("")),
    }
}
