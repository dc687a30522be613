//! `moot mcp`: the debates as a Model Context Protocol server's tools, for the coding agents
//! people make design decisions in: convene a debate, follow it, answer what it waits at,
//! read its decision, list and search the journal. The tools are the HTTP API's own steps
//! (`routes`), under the same allow-list and limits; the protocol itself (JSON-RPC, the
//! handshake, the transport) is the official Rust SDK's.

use super::Server;
use super::request::NewDebate;
use super::routes::{self, ApiError, CheckpointAnswer, Face, ListQuery, Review};
use crate::debate::Named as _;
use crate::debate::{AskKind, DebateStatus, GateDecision, Stage};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{
    ContentBlock, Implementation, InitializeResult, IntoContents, ListResourceTemplatesResult,
    ListResourcesResult, PaginatedRequestParams, ProgressNotificationParam, ProgressToken,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, RequestMetaObject,
    Resource, ResourceContents, ResourceTemplate, ServerCapabilities,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::Arc;

/// The most characters of a turn `debate_status` shows.
const TURN_SHOWN: usize = 400;
/// How many of the latest turns `debate_status` shows.
const TURNS_SHOWN: usize = 6;
/// The longest `debate_status` waits: under the minute most clients give a call.
const LONGEST_WAIT_SECONDS: u64 = 50;
/// How often a wait looks in the journal for what the debate did.
const WAIT_POLL: std::time::Duration = std::time::Duration::from_millis(200);

/// A whole number from 0, as JSON Schema says one: schemars's `uint32` and `uint64` formats
/// are none of the standard's, and validators (the MCP Inspector's among them) warn of them.
fn count(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "integer", "minimum": 0})
}

/// `count`, or left out.
fn optional_count(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": ["integer", "null"], "minimum": 0})
}

/// What a tool refuses, said as an MCP tool error: what was wrong and how to fix it.
#[derive(Debug)]
pub(super) struct Refused(String);

impl IntoContents for Refused {
    fn into_contents(self) -> Vec<ContentBlock> {
        vec![ContentBlock::text(self.0)]
    }
}

impl From<ApiError> for Refused {
    fn from(error: ApiError) -> Refused {
        Refused(error.message().to_string())
    }
}

impl From<crate::store::StoreError> for Refused {
    fn from(error: crate::store::StoreError) -> Refused {
        Refused::from(ApiError::from(error))
    }
}

/// Who answers a debate's checkpoints.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(super) enum Checkpoints {
    /// None are asked: the debate runs to its end.
    None,
    /// The person, from another terminal: `moot open ID` shows the debate and takes the
    /// answer (the caller may answer too).
    #[default]
    Person,
    /// The caller, with `answer_checkpoint` (the person may answer too).
    Caller,
}

/// `convene_debate`'s input: the HTTP API's allow-list, as an agent gives it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Convene {
    /// The decision to debate, in a few sentences.
    question: String,
    /// moderated (the default), panel, dialogue or arena; code debates are not run here.
    protocol: Option<String>,
    /// A panel's options, each as "A: label — description".
    #[serde(default)]
    options: Vec<String>,
    /// The most rounds (1 to 20).
    #[schemars(schema_with = "optional_count")]
    max_rounds: Option<u32>,
    /// How many perspectives argue (2 to 4), when none are named.
    #[schemars(schema_with = "optional_count")]
    seats: Option<u32>,
    /// The perspectives to seat, by name from moot's catalog.
    perspectives: Option<Vec<String>>,
    /// Who answers the checkpoints after each round: none, person (the default) or caller.
    #[serde(default)]
    checkpoints: Checkpoints,
    /// Approval gates: after_round, before_synthesis.
    gates: Option<Vec<String>>,
    /// A provider configured for this moot (`[providers.NAME]`); never a URL.
    provider: Option<String>,
}

/// A debate convened: its id, and how the person follows and steers it.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct Convened {
    id: String,
    /// The command the person runs in a terminal to watch the debate live and answer it.
    watch: String,
    /// Who answers its checkpoints.
    checkpoints: Checkpoints,
}

/// A debate, named by its id (or an unambiguous prefix of it).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct DebateId {
    id: String,
}

/// `debate_status`'s input.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct StatusAsked {
    id: String,
    /// Wait up to this many seconds (at most 50) for the debate to need an answer or to end,
    /// with a progress notification for each step it takes meanwhile (when the call carries
    /// a progress token). 0, the default: answer at once.
    #[serde(default)]
    #[schemars(schema_with = "count")]
    wait_seconds: u64,
}

/// One of a debate's latest turns, shortened.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct TurnShown {
    #[schemars(schema_with = "count")]
    round: u32,
    phase: String,
    seat: String,
    text: String,
}

/// Where a debate stands.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct Status {
    id: String,
    question: String,
    protocol: String,
    /// running, paused, completed, failed, interrupted.
    status: String,
    /// What it is doing or waits at, in words.
    stage: Option<String>,
    /// What it waits for, and how to give it; none when it waits for nothing.
    waiting_for: Option<String>,
    latest_turns: Vec<TurnShown>,
}

/// An answer to what a debate waits at.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Answer {
    id: String,
    /// At a checkpoint: continue, guide, end, accept, revise, reject or choose; at a gate:
    /// approve or reject.
    answer: String,
    /// The guidance (guide), the revision asked for (revise), the option chosen (choose) or
    /// why a gate is rejected.
    text: Option<String>,
}

/// An answer taken.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct Answered {
    id: String,
    /// What was answered: continue, guide, end, accept, revise, reject, choose; approved or
    /// rejected at a gate.
    answered: String,
    /// Where the debate waited: the checkpoint, or the gate.
    at: String,
}

impl From<routes::Answered> for Answered {
    fn from(taken: routes::Answered) -> Answered {
        Answered {
            id: taken.id,
            answered: taken.answered.into(),
            at: taken.at,
        }
    }
}

impl From<routes::Settled> for Answered {
    fn from(settled: routes::Settled) -> Answered {
        Answered {
            id: settled.id,
            answered: settled.decision.into(),
            at: settled.gate,
        }
    }
}

/// A debate's decision record.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct Decision {
    id: String,
    status: String,
    confidence: Option<String>,
    /// The record as markdown: recommendation, confidence, tensions, dissent, and the
    /// journal's receipt.
    record: String,
}

/// Which debates to list.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Listing {
    /// running, paused, completed, failed or interrupted.
    status: Option<String>,
    protocol: Option<String>,
    /// The most listed (default 200).
    #[schemars(schema_with = "optional_count")]
    limit: Option<u64>,
}

/// A full-text search of the journal.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Search {
    query: String,
    #[schemars(schema_with = "optional_count")]
    limit: Option<u64>,
}

/// Debates as `moot list --json` gives them.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct Debates {
    debates: Vec<Value>,
}

/// The MCP face of a server: its tools over the debates it runs and the journal.
#[derive(Clone)]
pub(super) struct Tools {
    server: Arc<Server>,
    tool_router: ToolRouter<Tools>,
}

#[tool_router]
impl Tools {
    pub(super) fn new(server: Arc<Server>) -> Tools {
        Tools {
            server,
            tool_router: Self::tool_router(),
        }
    }

    /// Starts a debate and returns at once with its id; the debate runs in this server, and
    /// the person can watch and steer it live with `moot open ID`.
    #[tool(
        description = "Convene a structured debate between several LLM perspectives on a design decision. Returns at once with the debate's id; the person can watch it live and answer its checkpoints with `moot open ID` in a terminal. Follow it with debate_status, answer with answer_checkpoint, read the result with get_decision."
    )]
    async fn convene_debate(
        &self,
        Parameters(given): Parameters<Convene>,
        peer: Peer<RoleServer>,
    ) -> Result<Json<Convened>, Refused> {
        let checkpoints = given.checkpoints;
        let request = new_debate(given, &agent(&peer))?;
        let id = routes::start(&self.server, request).await?;
        Ok(Json(Convened {
            watch: format!("moot open {id}"),
            id,
            checkpoints,
        }))
    }

    /// Where a debate stands: its stage, what it waits for, its latest turns in short.
    #[tool(
        description = "Where a debate stands: its status and stage, what it waits for (a checkpoint or a gate, and how to answer it), and its latest turns in short."
    )]
    async fn debate_status(
        &self,
        Parameters(asked): Parameters<StatusAsked>,
        meta: RequestMetaObject,
        peer: Peer<RoleServer>,
    ) -> Result<Json<Status>, Refused> {
        let store = &self.server.store;
        let mut debate = store.debate(&asked.id)?;
        if asked.wait_seconds > 0 {
            let wait = std::time::Duration::from_secs(asked.wait_seconds.min(LONGEST_WAIT_SECONDS));
            let progress = meta.get_progress_token().map(|token| (token, peer));
            self.wait_for_attention(&debate.id, wait, progress.as_ref())
                .await?;
            debate = store.debate(&debate.id)?;
        }
        let turns = store.turns(&debate.id)?;
        let latest_turns = turns
            .iter()
            .rev()
            .filter(|turn| !turn.content.trim().is_empty())
            .take(TURNS_SHOWN)
            .map(|turn| TurnShown {
                round: turn.round,
                phase: turn.phase.to_string(),
                seat: turn.seat.clone(),
                text: shortened(&crate::sanitize::clean(&turn.content)),
            })
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        let waiting_for = match (&debate.status, &debate.stage) {
            (DebateStatus::Running, Some(stage)) => waiting_words(stage, &debate.id),
            _ => None,
        };
        Ok(Json(Status {
            question: debate.question.clone(),
            protocol: debate.protocol.clone(),
            status: debate.status.to_string(),
            stage: debate.stage.as_ref().map(ToString::to_string),
            waiting_for,
            latest_turns,
            id: debate.id,
        }))
    }

    /// Answers the checkpoint or the gate a debate waits at.
    #[tool(
        description = "Answer what a debate waits at. At a checkpoint after a round: continue, guide (text: what the next round must address), end; at a conclusion: accept, continue, guide; at a synthesis to approve: accept, revise (text), reject; at a choice: choose (text: the option). At an approval gate: approve, or reject (text: why). Refused when the debate waits for another kind of answer."
    )]
    async fn answer_checkpoint(
        &self,
        Parameters(given): Parameters<Answer>,
        peer: Peer<RoleServer>,
    ) -> Result<Json<Answered>, Refused> {
        let who = agent(&peer);
        let debate = self.server.store.debate(&given.id)?;
        let at_gate =
            debate.status == DebateStatus::Running && debate.stage.as_ref().is_some_and(is_gate);
        let word = given.answer.trim().to_ascii_lowercase();
        if at_gate {
            let decision = match word.as_str() {
                "approve" => GateDecision::Approved,
                "reject" => GateDecision::Rejected,
                other => {
                    return Err(Refused(format!(
                        "answer: {} waits at an approval gate; answer approve, or reject with text saying why (not {other:?})",
                        debate.id
                    )));
                }
            };
            let review = Review {
                reviewer: who,
                reason: given.text,
            };
            let settled =
                routes::settle_gate(&self.server, &debate.id, review, decision, Face::Mcp)?;
            return Ok(Json(settled.into()));
        }
        if word == "approve" {
            return Err(Refused(format!(
                "answer: {} waits at no approval gate; at a checkpoint answer continue, guide, end, accept, revise, reject or choose",
                debate.id
            )));
        }
        let answer = CheckpointAnswer {
            answer: word,
            text: given.text,
        };
        let by = format!("{who} via MCP");
        let taken = routes::answer(&self.server, &debate.id, &answer, &by)?;
        Ok(Json(taken.into()))
    }

    /// A debate's decision record.
    #[tool(
        description = "The decision record of a finished debate: recommendation, confidence, tensions, dissent, and the journal's receipt (verify it with `moot audit ID --verify`)."
    )]
    async fn get_decision(
        &self,
        Parameters(DebateId { id }): Parameters<DebateId>,
    ) -> Result<Json<Decision>, Refused> {
        let debate = self.server.store.debate(&id)?;
        let record = routes::record_markdown(&self.server, &debate.id)?;
        Ok(Json(Decision {
            status: debate.status.to_string(),
            confidence: debate.confidence.map(|c| c.to_string()),
            record,
            id: debate.id,
        }))
    }

    /// The journal's debates, newest first.
    #[tool(
        description = "The debates in moot's journal, newest first, optionally by status or protocol."
    )]
    async fn list_debates(
        &self,
        Parameters(given): Parameters<Listing>,
    ) -> Result<Json<Debates>, Refused> {
        let query = ListQuery {
            status: given.status,
            protocol: given.protocol,
            q: None,
            limit: given.limit,
        };
        Ok(listed(routes::listing(&self.server, &query)?))
    }

    /// The journal's debates whose text matches a full-text query.
    #[tool(
        description = "Search moot's journal by full text (questions, turns, guidance); the debates that match, newest first."
    )]
    async fn search_debates(
        &self,
        Parameters(given): Parameters<Search>,
    ) -> Result<Json<Debates>, Refused> {
        if given.query.trim().is_empty() {
            return Err(Refused("query: give the words to search for".into()));
        }
        let query = ListQuery {
            q: Some(given.query),
            limit: given.limit,
            ..ListQuery::default()
        };
        Ok(listed(routes::listing(&self.server, &query)?))
    }
}

impl Tools {
    /// Waits (for `wait` at most) until debate `id` needs an answer or stops running, telling
    /// `progress`'s client of each step the debate journals meanwhile.
    async fn wait_for_attention(
        &self,
        id: &str,
        wait: std::time::Duration,
        progress: Option<&(ProgressToken, Peer<RoleServer>)>,
    ) -> Result<(), Refused> {
        let store = &self.server.store;
        let deadline = tokio::time::Instant::now() + wait;
        let mut seen = store.last_event_seq(id)?;
        let mut told = 0u32;
        // A shared journal tells of each commit; SQLite is looked at every WAIT_POLL.
        let mut journaled = self.server.journaled.as_ref().map(|told| told.subscribe());
        loop {
            let debate = store.debate(id)?;
            let asking = debate
                .stage
                .as_ref()
                .is_some_and(|stage| waiting_words(stage, id).is_some());
            if debate.status != DebateStatus::Running || asking {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Ok(());
            }
            match journaled.as_mut() {
                Some(word) => {
                    tokio::select! {
                        () = routes::journaled_for(word, id) => {}
                        () = tokio::time::sleep(routes::UNTOLD) => {}
                    }
                }
                None => tokio::time::sleep(WAIT_POLL).await,
            }
            for (seq, event) in store.events_after(id, seen)? {
                seen = seq;
                let (Some((token, peer)), Some(step)) = (progress, step_words(&event)) else {
                    continue;
                };
                told += 1;
                let note = ProgressNotificationParam::new(token.clone(), f64::from(told))
                    .with_message(step);
                // A client that has gone only misses the note.
                let _ = peer.notify_progress(note).await;
            }
        }
    }
}

/// A journaled step of a debate as a progress note says it; none for the rest.
fn step_words(event: &crate::debate::Event) -> Option<String> {
    use crate::debate::Event;
    match event {
        Event::TurnCompleted {
            round, phase, seat, ..
        } => Some(format!("round {round}: {seat} · {phase}")),
        Event::Checkpoint { round, kind, .. } => {
            Some(format!("round {round}: waits at {}", kind.as_str()))
        }
        Event::DebateCompleted { status, .. } => Some(format!("the debate is {status}")),
        _ => None,
    }
}

/// The resources' URIs: a debate's record, and its argument map in Mermaid.
const RECORD_URI: &str = "moot://debates/{id}/record";
const MAP_URI: &str = "moot://debates/{id}/map";
/// How many of the newest debates `resources/list` names.
const RESOURCES_LISTED: usize = 50;

/// What a resource URI names: a debate and which of its views.
fn resource_of(uri: &str) -> Option<(&str, View)> {
    let rest = uri.strip_prefix("moot://debates/")?;
    let (id, view) = rest.split_once('/')?;
    let view = match view {
        "record" => View::Record,
        "map" => View::Map,
        _ => return None,
    };
    (!id.is_empty()).then_some((id, view))
}

/// A debate's views offered as resources.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum View {
    Record,
    Map,
}

impl Tools {
    /// The text of `view` of debate `id`, and its MIME type.
    fn read_view(&self, id: &str, view: View) -> Result<(String, &'static str), Refused> {
        match view {
            View::Record => Ok((routes::record_markdown(&self.server, id)?, "text/markdown")),
            View::Map => {
                let store = &self.server.store;
                let document = crate::session::document(&self.server.host.protocols, store, id)?;
                let events = store.events(&document.debate.id)?;
                let mermaid = crate::diagram::Language::Mermaid;
                let text = crate::report::argument_map(&document, &events, mermaid);
                Ok((text, "text/vnd.mermaid"))
            }
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Tools {
    async fn list_resources(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let debates = self
            .server
            .store
            .list(RESOURCES_LISTED)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let mut resources = Vec::new();
        for debate in debates {
            let title = crate::sanitize::clean(&debate.question);
            if debate.status == DebateStatus::Completed {
                let uri = RECORD_URI.replace("{id}", &debate.id);
                resources.push(
                    Resource::new(uri, format!("{} record", debate.id))
                        .with_description(format!("The decision record of: {title}"))
                        .with_mime_type("text/markdown"),
                );
            }
            let uri = MAP_URI.replace("{id}", &debate.id);
            resources.push(
                Resource::new(uri, format!("{} map", debate.id))
                    .with_description(format!("The argument map (Mermaid) of: {title}"))
                    .with_mime_type("text/vnd.mermaid"),
            );
        }
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn list_resource_templates(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new(RECORD_URI, "record")
                .with_description("A finished debate's decision record")
                .with_mime_type("text/markdown"),
            ResourceTemplate::new(MAP_URI, "map")
                .with_description("A debate's argument map, in Mermaid")
                .with_mime_type("text/vnd.mermaid"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let Some((id, view)) = resource_of(&request.uri) else {
            return Err(ErrorData::invalid_params(
                format!(
                    "{}: moot's resources are {RECORD_URI} and {MAP_URI}",
                    request.uri
                ),
                None,
            ));
        };
        let (text, mime) = self
            .read_view(id, view)
            .map_err(|Refused(why)| ErrorData::resource_not_found(why, None))?;
        let contents = ResourceContents::TextResourceContents {
            uri: request.uri,
            mime_type: Some(mime.into()),
            text,
            meta: None,
        };
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    fn get_info(&self) -> InitializeResult {
        let mut info = InitializeResult::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        );
        info.server_info = Implementation::new("moot", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(
            "moot convenes structured debates between LLM perspectives on a decision. Convene one with convene_debate; it returns at once. The person can watch and steer it live with `moot open ID`. Poll debate_status, answer checkpoints with answer_checkpoint, and read the result with get_decision."
                .into(),
        );
        info
    }
}

/// The tools as a Streamable HTTP service, for `moot serve` to mount behind its token. Each
/// client session gets its own `Tools` over the one server. Hosts are checked as the SDK
/// checks them (loopback only) unless the server listens beyond this machine, where its token
/// (chosen, not generated) is the guard.
pub(super) fn over_http(
    server: Arc<Server>,
) -> rmcp::transport::streamable_http_server::StreamableHttpService<
    Tools,
    rmcp::transport::streamable_http_server::session::local::LocalSessionManager,
> {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };
    let beyond_this_machine = server
        .args
        .listen
        .parse::<std::net::SocketAddr>()
        .is_ok_and(|addr| !addr.ip().is_loopback());
    let mut config = StreamableHttpServerConfig::default();
    if beyond_this_machine {
        config.allowed_hosts.clear();
    }
    StreamableHttpService::new(
        move || Ok(Tools::new(server.clone())),
        Default::default(),
        config,
    )
}

/// Who asks, as the journal records it: `agent:NAME` from the client's handshake.
fn agent(peer: &Peer<RoleServer>) -> String {
    let given = peer
        .peer_info()
        .map(|info| info.client_info.name.clone())
        .unwrap_or_default();
    // The name is the client's to choose: only what is safe in a journal line is kept.
    let name: String = given
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || "-_.".contains(*c))
        .take(64)
        .collect();
    format!("agent:{}", if name.is_empty() { "mcp" } else { &name })
}

/// The HTTP API's request for `given`, checked by the same allow-list.
fn new_debate(given: Convene, agent: &str) -> Result<NewDebate, Refused> {
    let mut body = json!({
        "question": given.question,
        "checkpoints": given.checkpoints != Checkpoints::None,
        "initiated_by": agent,
    });
    let fields = [
        ("protocol", given.protocol.map(Value::from)),
        (
            "options",
            (!given.options.is_empty()).then(|| Value::from(given.options)),
        ),
        ("max_rounds", given.max_rounds.map(Value::from)),
        (
            "perspectives",
            given
                .perspectives
                .map(Value::from)
                .or(given.seats.map(Value::from)),
        ),
        ("gates", given.gates.map(Value::from)),
        ("provider", given.provider.map(Value::from)),
    ];
    for (name, value) in fields {
        if let Some(value) = value {
            body[name] = value;
        }
    }
    serde_json::from_value(body).map_err(|e| Refused(e.to_string()))
}

/// Whether a debate at `stage` waits at an approval gate.
fn is_gate(stage: &Stage) -> bool {
    matches!(
        stage,
        Stage::AtGate { .. }
            | Stage::Asking {
                kind: AskKind::Gate,
                ..
            }
    )
}

/// What a debate at `stage` waits for, and how to give it; none when it waits for no answer.
fn waiting_words(stage: &Stage, id: &str) -> Option<String> {
    let how = match stage {
        stage if is_gate(stage) => "answer_checkpoint with approve, or reject and text",
        Stage::Asking {
            kind: AskKind::Turn,
            ..
        } => "a person's turn, written in the workbench",
        Stage::Asking { .. } => "answer_checkpoint",
        _ => return None,
    };
    Some(format!(
        "{stage} — answer with {how}, or the person with `moot open {id}`"
    ))
}

/// `text` cut to `TURN_SHOWN` characters, marked when cut.
fn shortened(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(TURN_SHOWN) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

/// The listing as the tools return it.
fn listed(debates: Vec<crate::session::Listed>) -> Json<Debates> {
    let debates = debates
        .iter()
        .map(|debate| serde_json::to_value(debate).unwrap_or_default())
        .collect();
    Json(Debates { debates })
}
