//! The routes of `moot serve`: JSON in and out (errors as `{"error": {"code", "message"}}`),
//! the events of a debate as SSE.

use super::request::NewDebate;
use super::{Live, Server, auth};
use crate::debate::Named as _;
use crate::debate::{AskKind, Control, DebateStatus, Event, GateDecision, Stage};
use crate::store::{RemoteAnswer, StoreError};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;

/// The largest request body taken.
const BODY_LIMIT: usize = 256 * 1024;
/// The longest text an answer carries (guidance, a revision asked for, a gate's reason): a
/// few paragraphs. MCP's stdio has no body limit, and every word is journaled and prompted.
const MOST_ANSWER_CHARS: usize = 8_000;

/// Refuses an answer's text longer than `MOST_ANSWER_CHARS`, naming its field.
fn bounded(field: &str, text: Option<&str>) -> Result<(), ApiError> {
    match text.map(|t| t.chars().count()) {
        Some(chars) if chars > MOST_ANSWER_CHARS => Err(ApiError::bad(format!(
            "{field}: {chars} characters; an answer's text takes at most {MOST_ANSWER_CHARS}"
        ))),
        _ => Ok(()),
    }
}
/// How long a client waits before asking again when the server runs all it may.
const RETRY_AFTER_SECONDS: u64 = 5;
/// The longest any request but an event stream takes.
const REQUEST_LIMIT: Duration = Duration::from_secs(60);
/// How often an event stream looks in the journal for what is new when nothing wakes it (a
/// debate another process runs, or one that has just ended here).
const POLL: Duration = Duration::from_millis(200);
/// How long such a stream waits for word from a shared journal (which tells it of every
/// event) before it looks anyway.
pub(super) const UNTOLD: Duration = Duration::from_secs(2);

pub(super) fn router(server: Arc<Server>) -> Router {
    // Every request but the event stream (which lasts as long as its debate) is answered
    // within REQUEST_LIMIT, or with a 408.
    let bounded = Router::new()
        .route("/v1/debates", post(create).get(list))
        .route("/v1/debates/{id}", get(show))
        .route("/v1/debates/{id}/record", get(record))
        .route("/v1/debates/{id}/checkpoint", post(checkpoint))
        .route("/v1/debates/{id}/approve", post(approve))
        .route("/v1/debates/{id}/reject", post(reject))
        .route("/v1/debates/{id}/gates", get(gates))
        .route("/v1/debates/{id}/audit", get(audit))
        .route("/v1/debates/{id}/cancel", post(cancel))
        .route("/v1/debates/{id}/resume", post(resume))
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            REQUEST_LIMIT,
        ));
    let guarded = Router::new()
        .route("/v1/debates/{id}/events", get(events))
        .merge(bounded)
        // The MCP tools over Streamable HTTP, behind the same token (`moot mcp` is stdio).
        .nest_service("/mcp", super::mcp::over_http(server.clone()))
        .route_layer(middleware::from_fn_with_state(
            server.clone(),
            require_token,
        ));
    Router::new()
        .route("/v1/health", get(health))
        .merge(guarded)
        .fallback(|| async {
            ApiError::new(
                StatusCode::NOT_FOUND,
                "not_found",
                "no such route: the API is under /v1 (see assets/openapi.yaml)",
            )
        })
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(middleware::map_response(method_not_allowed_as_json))
        .with_state(server)
}

/// A 405 says what it says in the API's own error shape, not with an empty body.
async fn method_not_allowed_as_json(response: Response) -> Response {
    if response.status() != StatusCode::METHOD_NOT_ALLOWED {
        return response;
    }
    let allow = response.headers().get(header::ALLOW).cloned();
    let mut answer = ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!(
            "this route does not take that method; it takes {}",
            allow
                .as_ref()
                .and_then(|a| a.to_str().ok())
                .unwrap_or("another")
        ),
    )
    .into_response();
    if let Some(allow) = allow {
        answer.headers_mut().insert(header::ALLOW, allow);
    }
    answer
}

/// An error as the API says it (and as `moot mcp` says it, as a tool error).
pub(super) struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    retry_after: Option<u64>,
}

impl ApiError {
    /// What was wrong and what to do, as the caller is told.
    pub(super) fn message(&self) -> &str {
        &self.message
    }

    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: crate::sanitize::clean(&message.into()),
            retry_after: None,
        }
    }

    fn bad(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    fn conflict(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::CONFLICT, "conflict", message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = Json(json!({"error": {"code": self.code, "message": self.message}}));
        let mut response = (self.status, body).into_response();
        if let Some(seconds) = self.retry_after
            && let Ok(value) = HeaderValue::from_str(&seconds.to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        response
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> ApiError {
        match error {
            StoreError::NotFound(id) => ApiError::new(
                StatusCode::NOT_FOUND,
                "not_found",
                format!("there is no debate {id}"),
            ),
            // The prefix the client gave names several debates as the journal stands now (it
            // may have named one before more were started): a conflict with the journal's
            // state, answered with the candidates; give more of the id.
            ambiguous @ StoreError::Ambiguous { .. } => {
                ApiError::new(StatusCode::CONFLICT, "ambiguous", ambiguous.to_string())
            }
            other => ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "journal",
                other.to_string(),
            ),
        }
    }
}

/// A route's JSON body, whatever content type the client sent (`curl -d` sends a form's):
/// too large is 413, anything else that does not read is 400 with where it went wrong.
fn parsed<T: serde::de::DeserializeOwned>(
    body: Result<Bytes, BytesRejection>,
) -> Result<T, ApiError> {
    let bytes = body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "too_large",
                format!("the request body is over {} KiB", BODY_LIMIT / 1024),
            )
        } else {
            ApiError::bad(rejection.body_text())
        }
    })?;
    let value: Value = serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::bad(format!("the body is not the JSON this route takes: {e}")))?;
    // A field is given or left out: `null` is neither, and the API's schema has no nulls.
    if let Some(fields) = value.as_object()
        && let Some((name, _)) = fields.iter().find(|(_, v)| v.is_null())
    {
        return Err(ApiError::bad(format!(
            "{name}: null is not a value; give one, or leave the field out"
        )));
    }
    serde_json::from_value(value)
        .map_err(|e| ApiError::bad(format!("the body is not the JSON this route takes: {e}")))
}

async fn require_token(
    State(server): State<Arc<Server>>,
    request: Request,
    next: Next,
) -> Response {
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        // The scheme is case-insensitive (RFC 7235): `bearer …` is as good as `Bearer …`.
        .and_then(|v| {
            let (scheme, token) = v.trim_start().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then_some(token)
        });
    let refused = match given {
        Some(token) if auth::matches(token.trim(), &server.token) => {
            return next.run(request).await;
        }
        Some(_) => "the bearer token is wrong",
        None => "send the token as `Authorization: Bearer …` (moot serve printed where it is)",
    };
    let mut response =
        ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", refused).into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"moot\""),
    );
    response
}

async fn health() -> Json<Value> {
    Json(json!({"ok": true, "version": env!("CARGO_PKG_VERSION")}))
}

/// `POST /v1/debates`: checks the request as the command line would, starts the debate in this
/// process, and answers with its id once the journal holds it.
async fn create(
    State(server): State<Arc<Server>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let request: NewDebate = parsed(body)?;
    let id = start(&server, request).await?;
    Ok((StatusCode::CREATED, Json(json!({"id": id}))))
}

/// Starts the debate `request` asks for in this process, as the command line would assemble
/// it, and gives its id once the journal holds it.
pub(super) async fn start(server: &Arc<Server>, request: NewDebate) -> Result<String, ApiError> {
    let place = admitted(server)?;
    let settings = request
        .settings(
            &server.host.protocols,
            &server.config,
            &server.args.provider,
        )
        .map_err(|refused| match refused {
            super::request::NotHere::Refused(refused) => ApiError::bad(refused.0),
            super::request::NotHere::NotConfigured(why) => {
                ApiError::new(StatusCode::CONFLICT, "not_configured", why)
            }
        })?;
    super::run::spawn(
        server,
        super::run::Start::New {
            question: request.question.trim().to_string(),
            settings: Box::new(settings),
        },
        place,
    )
    .await
    .map_err(|e| ApiError::bad(e.to_string()))
}

/// A place for one more debate, or the 429 that says the server runs as many as it may.
fn admitted(server: &Arc<Server>) -> Result<super::Admitted, ApiError> {
    server.admit().ok_or_else(|| {
        let mut refused = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "busy",
            format!(
                "{} debates are running, the most this server runs at once (--max-debates)",
                server.args.max_debates
            ),
        );
        refused.retry_after = Some(RETRY_AFTER_SECONDS);
        refused
    })
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct ListQuery {
    pub(super) status: Option<String>,
    pub(super) protocol: Option<String>,
    pub(super) q: Option<String>,
    pub(super) limit: Option<u64>,
}

/// `GET /v1/debates`: `moot list --json`, filtered.
async fn list(
    State(server): State<Arc<Server>>,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    // A query that does not read is said as JSON, like every other refusal (not axum's text).
    let Query(query) = query.map_err(|rejection| {
        ApiError::bad(format!(
            "query: {}",
            rejection
                .body_text()
                .trim_start_matches("Failed to deserialize query string: ")
        ))
    })?;
    let listed = listing(&server, &query)?;
    Ok(Json(serde_json::to_value(listed).unwrap_or_default()))
}

/// The debates `query` picks, as `moot list --json` gives them.
pub(super) fn listing(
    server: &Server,
    query: &ListQuery,
) -> Result<Vec<crate::session::Listed>, ApiError> {
    const MOST_LISTED: u64 = 10_000;
    if let Some(limit) = query.limit.filter(|l| *l > MOST_LISTED) {
        return Err(ApiError::bad(format!(
            "limit: at most {MOST_LISTED}, not {limit}"
        )));
    }
    let store = &server.store;
    let mut debates = store.list(query.limit.unwrap_or(200) as usize)?;
    if let Some(status) = &query.status {
        if DebateStatus::parse(status).is_none() {
            return Err(ApiError::bad(format!(
                "status: {status:?} is not a debate status"
            )));
        }
        debates.retain(|d| d.status.as_str() == status);
    }
    if let Some(protocol) = query.protocol.as_ref().filter(|p| !p.is_empty()) {
        debates.retain(|d| &d.protocol == protocol);
    }
    if let Some(text) = query.q.as_deref().filter(|q| !q.trim().is_empty()) {
        let hits: std::collections::HashSet<String> = store
            .search(text, 10_000)?
            .into_iter()
            .map(|h| h.id)
            .collect();
        debates.retain(|d| hits.contains(&d.id));
    }
    let listed = crate::session::listed(&server.host.protocols, store, debates)?;
    Ok(listed)
}

/// `GET /v1/debates/{id}`: `moot show --json`.
async fn show(
    State(server): State<Arc<Server>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    server.store.debate(&id)?;
    let document = crate::session::document(&server.host.protocols, &server.store, &id)?;
    Ok((
        [(header::CONTENT_TYPE, "application/json")],
        crate::report::to_json(&document),
    )
        .into_response())
}

/// `GET /v1/debates/{id}/record`: the markdown record.
async fn record(
    State(server): State<Arc<Server>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    Ok((
        [(header::CONTENT_TYPE, "text/markdown; charset=utf-8")],
        record_markdown(&server, &id)?,
    )
        .into_response())
}

/// Debate `id`'s decision record as markdown, cleaned for a terminal.
pub(super) fn record_markdown(server: &Server, id: &str) -> Result<String, ApiError> {
    let debate = server.store.debate(id)?;
    // The debate is there, its record not yet: a conflict with its state, not a missing thing.
    let stored = server.store.synthesis(&debate.id)?.ok_or_else(|| {
        ApiError::new(
            StatusCode::CONFLICT,
            "no_record",
            format!("{} has no record yet: it is {}", debate.id, debate.status),
        )
    })?;
    Ok(crate::sanitize::clean(&stored.markdown))
}

/// An event as the stream sends it: its NDJSON line, with the journal's number when it has one.
fn sse(seq: Option<i64>, event: &Event) -> SseEvent {
    let line = crate::live::event_line(event);
    let sent = SseEvent::default().data(line.trim_end());
    match seq {
        Some(seq) => sent.id(seq.to_string()),
        None => sent,
    }
}

/// Where one client's event stream stands.
struct Stream {
    store: crate::store::Store,
    id: String,
    after: i64,
    live: Option<(tokio::sync::broadcast::Receiver<Live>, Arc<AtomicU64>)>,
    /// Word from a shared journal of debates with new events, for one another replica runs.
    journaled: Option<tokio::sync::broadcast::Receiver<Option<Arc<str>>>>,
    pending: VecDeque<SseEvent>,
    /// The journal may hold events not yet sent: a journaled event woke the stream, or the
    /// wait ran out. A delta does not, so streaming a reply costs no journal reads.
    stale: bool,
    /// How many journaled events had been passed on when the last journal read began: the
    /// read sent each of them, so their wake-ups (an event and its companions come in a
    /// burst) cost no read of their own.
    covered: u64,
    /// Its row says it ended, which nobody here is running: the next read of the journal
    /// that finds nothing new ends the stream, with the ending the row gives when the journal
    /// never journaled one (a journal from before the two were written together, whose writer
    /// was killed between them).
    ended: Option<crate::debate::Debate>,
    done: bool,
}

/// Returns once the shared journal tells of new events for debate `id`, or that some word may
/// have been missed.
pub(super) async fn journaled_for(
    told: &mut tokio::sync::broadcast::Receiver<Option<Arc<str>>>,
    id: &str,
) {
    loop {
        match told.recv().await {
            Ok(Some(debate)) if &*debate != id => continue,
            Ok(_) | Err(RecvError::Lagged(_)) => return,
            // The journal no longer tells: the stream looks every UNTOLD.
            Err(RecvError::Closed) => std::future::pending::<()>().await,
        }
    }
}

/// `GET /v1/debates/{id}/events`: every journaled event after `Last-Event-ID` (all of them
/// without one), each with its number, then the live ones as they are journaled, with the
/// stream's deltas of a debate this server runs between them; it ends after the debate
/// completes (a paused one's stays open).
async fn events(
    State(server): State<Arc<Server>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Sse<impl futures_util::Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let debate = server.store.debate(&id)?;
    let after = match headers.get("last-event-id").and_then(|v| v.to_str().ok()) {
        Some(given) => given
            .trim()
            .parse::<i64>()
            .ok()
            .filter(|n| *n >= 0)
            .ok_or_else(|| {
                ApiError::bad(format!("Last-Event-ID {given:?} is not an event number"))
            })?,
        None => 0,
    };
    let live = server
        .running()
        .get(&debate.id)
        .map(|running| (running.live.subscribe(), running.journaled.clone()));
    let start = Stream {
        store: server.store.clone(),
        id: debate.id,
        after,
        live,
        // Taken before the journal is first read, so no word after that read is missed.
        journaled: server.journaled.as_ref().map(|told| told.subscribe()),
        pending: VecDeque::new(),
        stale: true,
        covered: 0,
        ended: None,
        done: false,
    };
    let stream = futures_util::stream::unfold(start, |mut at| async move {
        loop {
            if let Some(next) = at.pending.pop_front() {
                return Some((Ok(next), at));
            }
            if at.done {
                return None;
            }
            let fresh = match std::mem::take(&mut at.stale) {
                true => {
                    if let Some((_, journaled)) = &at.live {
                        at.covered = journaled.load(Ordering::Acquire);
                    }
                    at.store.events_after(&at.id, at.after)
                }
                false => Ok(Vec::new()),
            };
            let fresh = fresh.unwrap_or_else(|e| {
                at.done = true;
                at.pending
                    .push_back(SseEvent::default().event("error").data(e.to_string()));
                Vec::new()
            });
            for (seq, event) in fresh {
                at.after = seq;
                if let Event::DebateCompleted { status, .. } = &event
                    && *status != DebateStatus::Paused
                {
                    at.done = true;
                }
                at.pending.push_back(sse(Some(seq), &event));
            }
            if !at.pending.is_empty() {
                continue;
            }
            if let Some(debate) = at.ended.take() {
                at.done = true;
                at.pending
                    .extend(debate.ending().iter().map(|e| sse(None, e)));
                continue;
            }
            match at.live.as_mut() {
                Some((live, _)) => {
                    tokio::select! {
                        told = live.recv() => match told {
                            Ok(Live::Delta(event)) => {
                                at.pending.push_back(sse(None, &event));
                            }
                            // Journaled: read from the journal, numbered, on the next pass.
                            Ok(Live::Journaled(n)) => at.stale = n > at.covered,
                            Err(RecvError::Lagged(_)) => at.stale = true,
                            // The debate ended here: the journal carries on alone.
                            Err(RecvError::Closed) => {
                                at.live = None;
                                at.stale = true;
                            }
                        },
                        // What this server journals for its own debate wakes the stream at
                        // once; anything else (another replica's answer, a cancel) is looked
                        // for every POLL, or every UNTOLD where other replicas' writes come
                        // to it as the journal's word.
                        _ = tokio::time::sleep(if at.journaled.is_some() { UNTOLD } else { POLL }) => {
                            at.stale = true;
                        }
                    }
                }
                None => {
                    match at.store.debate(&at.id) {
                        Ok(debate) if debate.status.has_ended() => at.ended = Some(debate),
                        _ => match at.journaled.as_mut() {
                            Some(told) => {
                                tokio::select! {
                                    () = journaled_for(told, &at.id) => {}
                                    () = tokio::time::sleep(UNTOLD) => {}
                                }
                            }
                            None => tokio::time::sleep(POLL).await,
                        },
                    }
                    at.stale = true;
                }
            }
        }
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CheckpointAnswer {
    pub(super) answer: String,
    pub(super) text: Option<String>,
}

/// `POST /v1/debates/{id}/checkpoint`: answers what the debate waits at, through the journal.
async fn checkpoint(
    State(server): State<Arc<Server>>,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let given: CheckpointAnswer = parsed(body)?;
    let answered = answer(&server, &id, &given, "the API via HTTP")?;
    Ok(Json(serde_json::to_value(answered).unwrap_or_default()))
}

/// An answer taken at a checkpoint: the debate, what was answered, where it waited.
#[derive(Debug, serde::Serialize)]
pub(super) struct Answered {
    pub(super) id: String,
    pub(super) answered: &'static str,
    pub(super) at: String,
}

/// A gate settled: the debate, the gate, the decision, who decided.
#[derive(Debug, serde::Serialize)]
pub(super) struct Settled {
    pub(super) id: String,
    pub(super) gate: String,
    pub(super) decision: &'static str,
    pub(super) by: String,
}

/// The face a gate is settled through, as the record names it, and the name of the field it
/// takes a rejection's reason in.
#[derive(Debug, Clone, Copy)]
pub(super) enum Face {
    Http,
    Mcp,
}

impl Face {
    fn name(self) -> &'static str {
        match self {
            Face::Http => "HTTP",
            Face::Mcp => "MCP",
        }
    }

    fn reason_field(self) -> &'static str {
        match self {
            Face::Http => "reason",
            Face::Mcp => "text",
        }
    }
}

/// Answers the checkpoint debate `id` waits at with `given`, through the journal, recorded as
/// answered `by`.
pub(super) fn answer(
    server: &Server,
    id: &str,
    given: &CheckpointAnswer,
    by: &str,
) -> Result<Answered, ApiError> {
    bounded("text", given.text.as_deref())?;
    let debate = server.store.debate(id)?;
    let (kind, round) = match (&debate.status, &debate.stage) {
        (DebateStatus::Running, Some(Stage::Asking { kind, round })) => (*kind, *round),
        _ => {
            return Err(ApiError::conflict(format!(
                "{} waits at no checkpoint now",
                debate.id
            )));
        }
    };
    if matches!(kind, AskKind::Gate | AskKind::Turn) {
        return Err(ApiError::conflict(format!(
            "{} waits at {}: {}",
            debate.id,
            Stage::Asking { kind, round },
            if kind == AskKind::Gate {
                "approve or reject it (POST …/approve, …/reject)"
            } else {
                "a person's turn is written from the workbench"
            }
        )));
    }
    // Checked in the request's own terms (C10: not stdin's `g Focus on…`), then read as
    // stdin and `moot approve` read an answer: the word, then its text.
    let word = given.answer.trim().to_ascii_lowercase();
    let text = given.text.as_deref().unwrap_or("").trim();
    const ANSWERS: [&str; 7] = [
        "continue", "guide", "end", "accept", "revise", "reject", "choose",
    ];
    if !ANSWERS.contains(&word.as_str()) {
        return Err(ApiError::bad(format!(
            "answer: {word:?} is not an answer; use one of {}",
            ANSWERS.join(", ")
        )));
    }
    match (word.as_str(), text.is_empty()) {
        ("guide" | "revise" | "choose", true) => {
            return Err(ApiError::bad(format!(
                "text: `{word}` needs its text (the guidance, the revision asked for, or the option chosen)"
            )));
        }
        ("continue" | "end" | "accept", false) => {
            return Err(ApiError::bad(format!("text: `{word}` takes no text")));
        }
        _ => {}
    }
    let control = Control::parse_line(&format!("{word} {text}"))
        .map_err(|e| ApiError::bad(format!("answer: {e}")))?;
    match server
        .store
        .record_remote_answer(&debate.id, round, kind, &control, by)?
    {
        RemoteAnswer::Recorded => {}
        RemoteAnswer::AnsweredAlready => {
            return Err(ApiError::conflict(format!(
                "that question of {} was answered a moment ago",
                debate.id
            )));
        }
        RemoteAnswer::DoesNotFit(why) => return Err(ApiError::bad(format!("answer: {why}"))),
    }
    Ok(Answered {
        id: debate.id,
        answered: control.answer().as_str(),
        at: Stage::Asking { kind, round }.to_string(),
    })
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Review {
    pub(super) reviewer: String,
    pub(super) reason: Option<String>,
}

/// Settles the gate a debate waits at (004's approval gates), recorded as `reviewer via
/// HTTP`.
fn decide(
    server: &Server,
    id: &str,
    review: Review,
    decision: GateDecision,
) -> Result<Json<Value>, ApiError> {
    let settled = settle_gate(server, id, review, decision, Face::Http)?;
    Ok(Json(serde_json::to_value(settled).unwrap_or_default()))
}

/// Settles the gate debate `id` waits at, recorded as `reviewer via {face}`.
pub(super) fn settle_gate(
    server: &Server,
    id: &str,
    review: Review,
    decision: GateDecision,
    face: Face,
) -> Result<Settled, ApiError> {
    bounded(face.reason_field(), review.reason.as_deref())?;
    let reviewer = review.reviewer.trim();
    if reviewer.is_empty() {
        return Err(ApiError::bad("reviewer: say who decides"));
    }
    let reason = review
        .reason
        .as_deref()
        .map(str::trim)
        .filter(|r| !r.is_empty());
    if decision == GateDecision::Rejected && reason.is_none() {
        return Err(ApiError::bad(format!(
            "{}: a rejection says why",
            face.reason_field()
        )));
    }
    let debate = server.store.debate(id)?;
    let Some(waiting) = server.store.waiting_gate(&debate)? else {
        return Err(ApiError::conflict(format!(
            "{} waits at no gate now ({}); a gate is decided while its debate waits there, and a stopped debate asks again when resumed",
            debate.id, debate.status
        )));
    };
    let by = format!("{reviewer} via {}", face.name());
    if !server
        .store
        .decide_gate(&debate.id, &waiting.gate, decision, &by, reason)?
    {
        return Err(ApiError::conflict(format!(
            "the gate {} was decided a moment ago",
            waiting.gate
        )));
    }
    Ok(Settled {
        id: debate.id,
        gate: waiting.gate,
        decision: decision.as_str(),
        by,
    })
}

async fn approve(
    State(server): State<Arc<Server>>,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let review: Review = parsed(body)?;
    decide(&server, &id, review, GateDecision::Approved)
}

async fn reject(
    State(server): State<Arc<Server>>,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let review: Review = parsed(body)?;
    decide(&server, &id, review, GateDecision::Rejected)
}

/// `GET /v1/debates/{id}/gates`: every gate the debate reached, with its decision.
async fn gates(
    State(server): State<Arc<Server>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let debate = server.store.debate(&id)?;
    Ok(Json(
        serde_json::to_value(server.store.gates(&debate.id)?).unwrap_or_default(),
    ))
}

/// `GET /v1/debates/{id}/audit`: the audit trail as `moot audit ID --json` gives it (every
/// request and reply, hashed, and the chain's check), note 004's `GetAuditTrail`.
async fn audit(
    State(server): State<Arc<Server>>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let debate = server.store.debate(&id)?;
    let entries = server.store.audit(&debate.id)?;
    let chain = server.store.check_chain(&debate.id)?;
    Ok(Json(json!({
        "id": debate.id,
        "question": debate.question,
        "protocol": debate.protocol,
        "chain": chain,
        "entries": entries,
    })))
}

/// `POST /v1/debates/{id}/cancel`: interrupts a debate this server runs (it stops where it
/// is and can be resumed, as after Ctrl-C); on a shared journal, one another replica runs,
/// through the journal.
async fn cancel(
    State(server): State<Arc<Server>>,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let debate = server.store.debate(&id)?;
    let sender = server
        .running()
        .get_mut(&debate.id)
        .and_then(|running| running.cancel.take());
    match sender {
        Some(sender) => {
            let _ = sender.send(());
            Ok((
                StatusCode::ACCEPTED,
                Json(json!({"id": debate.id, "stopping": true})),
            ))
        }
        // Run by another replica on the shared journal: filed there, taken by that replica.
        None if server.store.is_shared() && debate.status == DebateStatus::Running => {
            server.store.request_cancel(&debate.id, "the API")?;
            Ok((
                StatusCode::ACCEPTED,
                Json(json!({"id": debate.id, "stopping": true, "elsewhere": true})),
            ))
        }
        None => Err(ApiError::conflict(format!(
            "{} is not running in this server ({})",
            debate.id, debate.status
        ))),
    }
}

/// `POST /v1/debates/{id}/resume`: picks a paused, failed or interrupted debate up in this
/// server where its journal left it.
async fn resume(
    State(server): State<Arc<Server>>,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let mut debate = server.store.debate(&id)?;
    // A debate that has just stopped is let go by its thread a moment after the journal says
    // so: waited for, a few seconds at most.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while server.running().contains_key(&debate.id) {
        if debate.status == DebateStatus::Running || tokio::time::Instant::now() >= deadline {
            return Err(ApiError::conflict(format!(
                "{} is running in this server",
                debate.id
            )));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        debate = server.store.debate(&id)?;
    }
    if !debate.status.is_resumable() {
        return Err(ApiError::conflict(format!(
            "{} is {}; only a paused, failed or interrupted debate can be resumed",
            debate.id, debate.status
        )));
    }
    // A code debate runs model-written code in its project: never on a server (P4).
    if debate.protocol == "code" {
        return Err(ApiError::conflict(format!(
            "{id} is a code debate: it runs model-written code in its project directory, and a server runs none; resume it with `moot resume {id}` on the machine that holds the project",
            id = debate.id
        )));
    }
    let place = admitted(&server)?;
    let id = super::run::spawn(
        &server,
        super::run::Start::Resume {
            id: debate.id,
            why: None,
        },
        place,
    )
    .await
    .map_err(|e| ApiError::conflict(e.to_string()))?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"id": id, "resumed": true})),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::debate::Phase;
    use axum::body::BodyDataStream;
    use futures_util::StreamExt;

    /// A server running debate `id`, whose events the test passes on by hand as `run` does.
    fn server_running(id: &str) -> Arc<Server> {
        let store = crate::store::Store::in_memory().unwrap();
        store
            .create_debate(&crate::store::running_debate(id))
            .unwrap();
        let server = Arc::new(Server {
            store,
            host: crate::session::Host::new(crate::protocol::builtin()),
            config: crate::config::Config::default(),
            args: super::super::ServeOptions {
                listen: "127.0.0.1:0".into(),
                token_file: None,
                max_debates: 256,
                stall_seconds: None,
                provider: Default::default(),
            },
            token: "t".repeat(32),
            running: std::sync::Mutex::new(std::collections::HashMap::new()),
            admitted: Default::default(),
            journaled: None,
        });
        let (live, _) = tokio::sync::broadcast::channel(16);
        server.running().insert(
            id.to_string(),
            super::super::Running {
                cancel: None,
                live,
                journaled: Arc::default(),
                progress: Arc::new(std::sync::Mutex::new(
                    super::super::watchdog::Progress::new(),
                )),
            },
        );
        server
    }

    /// What `run` does with an event the debate journaled: counts it and passes it on.
    fn journal_and_pass_on(server: &Server, id: &str, message: &str) {
        let notice = Event::Notice {
            message: message.into(),
        };
        server.store.record_event(id, &notice).unwrap();
        let running = server.running();
        let running = &running[id];
        let count = running.journaled.fetch_add(1, Ordering::AcqRel) + 1;
        running.live.send(Live::Journaled(count)).unwrap();
    }

    /// The stream's next frame, and how long (in the test's paused time) it took to come.
    async fn next_frame(body: &mut BodyDataStream) -> (String, Duration) {
        let started = tokio::time::Instant::now();
        let frame = tokio::time::timeout(Duration::from_secs(5), body.next())
            .await
            .expect("a frame within 5 s")
            .unwrap()
            .unwrap();
        (
            String::from_utf8(frame.to_vec()).unwrap(),
            started.elapsed(),
        )
    }

    /// A journaled event reaches a following client as soon as it is passed on, with its
    /// number, and so do the events of a burst read together; a delta comes as it is; an event
    /// journaled elsewhere (no wake-up) comes at the next look at the journal.
    #[tokio::test(start_paused = true)]
    async fn journaled_events_are_sent_when_passed_on_and_found_by_polling_otherwise() {
        let id = "DEB-stream01";
        let server = server_running(id);
        let Ok(stream) = events(
            State(server.clone()),
            Path(id.to_string()),
            HeaderMap::new(),
        )
        .await
        else {
            panic!("the stream did not open");
        };
        let mut body = stream.into_response().into_body().into_data_stream();
        // Nothing journaled yet: the stream reads the journal and waits.
        let waiting = tokio::time::timeout(Duration::from_millis(50), body.next()).await;
        assert!(waiting.is_err(), "a frame came from an empty journal");

        journal_and_pass_on(&server, id, "notice 1");
        let (first, waited) = next_frame(&mut body).await;
        assert!(
            first.contains("notice 1") && first.contains("id: "),
            "{first}"
        );
        assert!(waited < POLL, "the event waited {waited:?} for a poll");

        journal_and_pass_on(&server, id, "notice 2");
        journal_and_pass_on(&server, id, "notice 3");
        let (second, waited_2) = next_frame(&mut body).await;
        let (third, waited_3) = next_frame(&mut body).await;
        assert!(
            second.contains("notice 2") && third.contains("notice 3"),
            "{second}{third}"
        );
        assert!(waited_2 + waited_3 < POLL, "a burst waited for a poll");

        let live = server.running()[id].live.clone();
        live.send(Live::Delta(Box::new(Event::TurnDelta {
            seat: "A".into(),
            round: 1,
            phase: Phase::Argument,
            text: "streamed".into(),
        })))
        .unwrap();
        let (delta, waited) = next_frame(&mut body).await;
        assert!(
            delta.contains("streamed") && !delta.contains("id: "),
            "{delta}"
        );
        assert!(waited < POLL);

        let elsewhere = Event::Notice {
            message: "from elsewhere".into(),
        };
        server.store.record_event(id, &elsewhere).unwrap();
        let (found, waited) = next_frame(&mut body).await;
        assert!(found.contains("from elsewhere"), "{found}");
        assert!(waited >= POLL, "found after {waited:?} with no wake-up");
    }
}
