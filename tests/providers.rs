//! Providers and the engine's speak path against the stand-in server on 127.0.0.1: SSE
//! streaming, usage, 429 with Retry-After, 500, cut streams, malformed chunks, refused
//! response formats, garbage and half JSON, hangs, and Anthropic's wire format.

mod support;

use moot::debate::{Debate, DebateStatus, Event, Phase, TurnKey, TurnStatus, now_rfc3339};
use moot::engine::{Context, EngineSettings, Replay, ReplyKind, Seating, Speech, Wiring};
use moot::llm::anthropic::AnthropicProvider;
use moot::llm::endpoint::Endpoint;
use moot::llm::instructions::json_instructions;
use moot::llm::openai::OpenAiProvider;
use moot::llm::{
    CapabilityCache, ChatMessage, ChatRequest, FinishReason, LlmError, Provider, ReplyFormat,
    RequestLabel, RetryPolicy, StructuredMode,
};
use moot::protocol::moves::{DebaterReplies, debater_schema};
use moot::store::Store;
use std::sync::Arc;
use std::time::Duration;
use support::{Behaviour, Fault, FaultRule, SchemaSupport, StandIn};
use tokio::sync::mpsc;

fn client() -> reqwest::Client {
    moot::llm::http_client().unwrap()
}

fn openai(server: &StandIn, caps: &Arc<CapabilityCache>) -> Arc<dyn Provider> {
    let endpoint = Endpoint::new(
        client(),
        &server.openai_base(),
        Some("sk-test-secret".into()),
        "stand-in-model",
        caps.clone(),
        Duration::from_secs(5),
    );
    Arc::new(OpenAiProvider::new(endpoint, "set OPENAI_BASE_URL".into()))
}

fn anthropic(server: &StandIn) -> Arc<dyn Provider> {
    Arc::new(AnthropicProvider::new(Endpoint::new(
        client(),
        &server.anthropic_base(),
        Some("ant-test-key".into()),
        "claude-stand-in",
        Arc::new(CapabilityCache::default()),
        Duration::from_secs(5),
    )))
}

fn argument_request() -> ChatRequest {
    ChatRequest {
        label: RequestLabel {
            round: 1,
            phase: Phase::Argument,
            seat: "A".into(),
            perspective: Some("Performance Advocate".into()),
            request: "moot_argument",
        },
        system: json_instructions("moot_argument", &debater_schema()),
        messages: vec![ChatMessage::user(
            "Question: x\nRound 1 of at most 3. You are seat A.\n",
        )],
        reply: Some(ReplyFormat {
            name: "moot_argument".into(),
            schema: debater_schema(),
        }),
        max_tokens: Some(500),
        temperature: None,
        reply_bytes: None,
    }
}

async fn complete(
    provider: &dyn Provider,
    request: &ChatRequest,
) -> (Result<moot::llm::Completion, LlmError>, String) {
    let mut streamed = String::new();
    let mut sink = |piece: &str| streamed.push_str(piece);
    let result = provider.complete(request, &mut sink).await;
    (result, streamed)
}

/// The stand-in answers what it was taught and refuses anything else by name, so a new prompt
/// cannot pass a test on a reply meant for another request.
#[tokio::test]
async fn the_stand_in_refuses_a_request_it_does_not_know() {
    let server = StandIn::start(Behaviour::default()).await;
    let caps = Arc::new(CapabilityCache::default());
    let provider = openai(&server, &caps);
    let mut request = argument_request();
    request.reply = Some(ReplyFormat {
        name: "moot_mystery".into(),
        schema: serde_json::json!({"type": "object"}),
    });
    request.system = json_instructions("moot_mystery", &serde_json::json!({"type": "object"}));
    let (result, _) = complete(provider.as_ref(), &request).await;
    let error = result
        .expect_err("an unknown schema is refused")
        .to_string();
    assert!(
        error.contains("no reply for a request with schema moot_mystery"),
        "{error}"
    );
    let mut prose = argument_request();
    prose.reply = None;
    prose.system = "You are a poet.".into();
    let (result, _) = complete(provider.as_ref(), &prose).await;
    let error = result
        .expect_err("prose that is not a pose is refused")
        .to_string();
    assert!(error.contains("not a moderator pose"), "{error}");
    let kinds: Vec<(String, u16)> = server
        .seen()
        .iter()
        .map(|s| (s.kind.clone(), s.status))
        .collect();
    assert_eq!(
        kinds,
        vec![("unknown".to_string(), 400), ("unknown".to_string(), 400)]
    );
}

#[tokio::test]
async fn openai_streams_sse_with_usage_and_the_schema() {
    let server = StandIn::start(Behaviour::default()).await;
    let caps = Arc::new(CapabilityCache::default());
    let provider = openai(&server, &caps);
    let (result, streamed) = complete(provider.as_ref(), &argument_request()).await;
    let completion = result.unwrap();
    assert_eq!(streamed, completion.text);
    let value: serde_json::Value = serde_json::from_str(&completion.text).unwrap();
    assert!(
        value["argument"]
            .as_str()
            .unwrap()
            .starts_with("Seat A, round 1")
    );
    let usage = completion.usage.expect("usage streamed");
    assert!(usage.input > 0 && usage.output > 0);
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].body["response_format"]["type"], "json_schema");
    assert_eq!(seen[0].body["stream"], true);
    assert_eq!(seen[0].body["max_tokens"], 500);
    assert!(
        seen[0]
            .headers
            .iter()
            .any(|(k, v)| k == "authorization" && v == "Bearer sk-test-secret")
    );
}

#[tokio::test]
async fn openai_reports_429_500_cut_and_malformed_as_retryable_errors() {
    let server = StandIn::start(Behaviour::default()).await;
    let caps = Arc::new(CapabilityCache::default());
    let provider = openai(&server, &caps);
    server.fault(FaultRule::new(Fault::RateLimit("2".into())));
    let (result, _) = complete(provider.as_ref(), &argument_request()).await;
    let error = result.unwrap_err();
    assert_eq!(
        error,
        LlmError::RateLimited {
            retry_after: Some(Duration::from_secs(2))
        }
    );
    assert!(error.is_retryable());

    server.fault(FaultRule::new(Fault::ServerError));
    let (result, _) = complete(provider.as_ref(), &argument_request()).await;
    assert!(matches!(
        result.unwrap_err(),
        LlmError::Server { status: 500, .. }
    ));

    server.fault(FaultRule::new(Fault::CutStream));
    let (result, streamed) = complete(provider.as_ref(), &argument_request()).await;
    assert_eq!(result.unwrap_err(), LlmError::StreamCut);
    assert!(
        !streamed.is_empty(),
        "part of the reply streamed before the cut"
    );

    server.fault(FaultRule::new(Fault::MalformedChunk));
    let (result, _) = complete(provider.as_ref(), &argument_request()).await;
    assert!(matches!(result.unwrap_err(), LlmError::Malformed(_)));
}

/// A reply past its byte cap (16 bytes per `max_tokens` token here: 8,000) is cut there and
/// ends `Capped`, from ordinary deltas and from one line that never ends alike, for both wire
/// protocols (N6); `[limits] reply_bytes` sets the cap instead.
#[tokio::test]
async fn a_flooding_server_is_cut_at_the_reply_cap() {
    let server = StandIn::start(Behaviour::default()).await;
    let caps = Arc::new(CapabilityCache::default());
    let request = argument_request();
    assert_eq!(request.reply_cap(), 8_000);
    for provider in [openai(&server, &caps), anthropic(&server)] {
        server.fault(FaultRule::new(Fault::Flood {
            bytes: 2_000_000,
            one_line: false,
        }));
        let (result, streamed) = complete(provider.as_ref(), &request).await;
        let completion = result.unwrap();
        assert_eq!(completion.finish, FinishReason::Capped);
        assert_eq!(completion.text.len(), 8_000);
        assert_eq!(streamed, completion.text);

        server.fault(FaultRule::new(Fault::Flood {
            bytes: 200_000_000,
            one_line: true,
        }));
        let (result, _) = complete(provider.as_ref(), &request).await;
        let completion = result.unwrap();
        assert_eq!(completion.finish, FinishReason::Capped);
        assert!(completion.text.is_empty());
    }
    let configured = ChatRequest {
        reply_bytes: Some(100),
        ..argument_request()
    };
    server.fault(FaultRule::new(Fault::Flood {
        bytes: 50_000,
        one_line: false,
    }));
    let (result, _) = complete(openai(&server, &caps).as_ref(), &configured).await;
    assert_eq!(result.unwrap().text.len(), 100);
}

/// P7: an error body, an embeddings reply (refused or not) and a model list are read only up
/// to a cap, however long the server makes them: of 400 MB bodies the client takes what fits
/// its cap and the sockets' buffers, then hangs up.
#[tokio::test]
async fn huge_error_bodies_embeddings_and_model_lists_are_read_only_to_a_cap() {
    const HUGE: usize = 400_000_000;
    /// What a client may take of one huge body: its cap (at most a few MiB here) and what the
    /// kernel's socket buffers hold on both sides.
    const TAKEN: usize = 48 * 1024 * 1024;
    let server = StandIn::start(Behaviour {
        huge_bodies: Some(HUGE),
        ..Behaviour::default()
    })
    .await;
    let caps = Arc::new(CapabilityCache::default());
    let request = argument_request();
    for provider in [openai(&server, &caps), anthropic(&server)] {
        let before = server.huge_sent();
        server.fault(FaultRule::new(Fault::HugeError { bytes: HUGE }));
        let (result, _) = complete(provider.as_ref(), &request).await;
        assert!(
            matches!(result, Err(LlmError::Server { status: 500, .. })),
            "{result:?}"
        );
        let taken = server.huge_sent() - before;
        assert!(
            taken < TAKEN,
            "{} took {taken} bytes of an error body",
            provider.kind()
        );
    }
    let provider = openai(&server, &caps);
    let before = server.huge_sent();
    let refused = provider.embed(&["fail".to_string()], Some("embed")).await;
    assert!(
        matches!(refused, Err(LlmError::Server { status: 500, .. })),
        "{refused:?}"
    );
    let long = provider.embed(&["a text".to_string()], Some("embed")).await;
    assert!(
        matches!(&long, Err(LlmError::Malformed(m)) if m.contains("longer than")),
        "{long:?}"
    );
    let taken = server.huge_sent() - before;
    assert!(taken < 2 * TAKEN, "the embeddings took {taken} bytes");
    // No model configured: it is asked of `GET /models`, whose huge list is cut and given up
    // on; the request goes on with a default name.
    let endpoint = Endpoint::new(
        client(),
        &server.openai_base(),
        Some("sk-test-secret".into()),
        "",
        caps.clone(),
        Duration::from_secs(5),
    );
    let discovering: Arc<dyn Provider> =
        Arc::new(OpenAiProvider::new(endpoint, "set OPENAI_BASE_URL".into()));
    let before = server.huge_sent();
    let (result, _) = complete(discovering.as_ref(), &request).await;
    assert!(result.is_ok(), "{result:?}");
    let taken = server.huge_sent() - before;
    assert!(taken < TAKEN, "the model list took {taken} bytes");
}

#[tokio::test]
async fn refused_response_formats_degrade_step_by_step_and_are_remembered() {
    let server = StandIn::start(Behaviour {
        schema_support: SchemaSupport::ObjectOnly,
        ..Behaviour::default()
    })
    .await;
    let caps = Arc::new(CapabilityCache::default());
    let provider = openai(&server, &caps);
    let shape = |seen: &support::Seen| {
        (
            seen.body["response_format"]["type"]
                .as_str()
                .map(str::to_string),
            seen.body["response_format"].get("schema").is_some(),
        )
    };
    let (result, _) = complete(provider.as_ref(), &argument_request()).await;
    assert!(result.is_ok());
    let shapes: Vec<_> = server.seen().iter().map(shape).collect();
    assert_eq!(
        shapes,
        vec![
            (Some("json_schema".into()), false),
            (Some("json_object".into()), true)
        ],
        "json_schema refused, then json_object carrying the schema"
    );
    // The next request goes straight to what worked.
    let (result, _) = complete(provider.as_ref(), &argument_request()).await;
    assert!(result.is_ok());
    assert_eq!(server.seen().len(), 3);
    assert_eq!(shape(&server.seen()[2]), (Some("json_object".into()), true));
    assert_eq!(caps.learned()[0].1.mode, StructuredMode::JsonObjectSchema);

    server.set_behaviour(|b| b.schema_support = SchemaSupport::PlainObject);
    let (result, _) = complete(provider.as_ref(), &argument_request()).await;
    assert!(result.is_ok());
    assert_eq!(
        shape(server.seen().last().unwrap()),
        (Some("json_object".into()), false)
    );
    assert_eq!(caps.learned()[0].1.mode, StructuredMode::JsonObject);

    server.set_behaviour(|b| b.schema_support = SchemaSupport::None);
    let (result, _) = complete(provider.as_ref(), &argument_request()).await;
    assert!(result.is_ok());
    let last = server.seen().pop().unwrap();
    assert!(
        last.body.get("response_format").is_none(),
        "instructions only at the end"
    );
    assert_eq!(caps.learned()[0].1.mode, StructuredMode::Instructions);
}

/// A llama.cpp-based server that cannot compile the reply's schema into a grammar: one that
/// says so (a 500 "failed to parse grammar") is asked without the schema at once; one that dies
/// with the connection open is given one chance, then asked in plain JSON mode, which is then
/// remembered. A server that fails whatever it is asked keeps being sent the schema.
#[tokio::test]
async fn a_server_that_falls_over_the_schema_is_asked_in_plain_json_mode() {
    let shape = |seen: &support::Seen| {
        (
            seen.body["response_format"]["type"]
                .as_str()
                .map(str::to_string),
            seen.body["response_format"].get("schema").is_some()
                || seen.body["response_format"].get("json_schema").is_some(),
        )
    };
    let plain = (Some("json_object".to_string()), false);

    let server = StandIn::start(Behaviour {
        schema_support: SchemaSupport::GrammarFails,
        ..Behaviour::default()
    })
    .await;
    let caps = Arc::new(CapabilityCache::default());
    let provider = openai(&server, &caps);
    let (result, streamed) = complete(provider.as_ref(), &argument_request()).await;
    assert!(result.is_ok(), "{result:?}");
    assert!(streamed.contains("argument"), "{streamed}");
    let shapes: Vec<_> = server.seen().iter().map(shape).collect();
    assert_eq!(
        shapes,
        vec![
            (Some("json_schema".into()), true),
            (Some("json_object".into()), true),
            plain.clone()
        ],
        "a refusal naming the grammar steps down until no schema is sent"
    );
    assert_eq!(caps.learned()[0].1.mode, StructuredMode::JsonObject);

    let server = StandIn::start(Behaviour {
        schema_support: SchemaSupport::DiesOnSchema,
        ..Behaviour::default()
    })
    .await;
    let caps = Arc::new(CapabilityCache::default());
    let provider = openai(&server, &caps);
    let (first, _) = complete(provider.as_ref(), &argument_request()).await;
    let first = first.unwrap_err();
    assert!(
        first.is_retryable(),
        "a connection that died is retried: {first:?}"
    );
    assert_eq!(server.seen().len(), 1, "one death is left to the retries");
    let (second, _) = complete(provider.as_ref(), &argument_request()).await;
    assert!(second.is_err());
    let (third, streamed) = complete(provider.as_ref(), &argument_request()).await;
    assert!(third.is_ok(), "{third:?}");
    assert!(streamed.contains("argument"), "{streamed}");
    let shapes: Vec<_> = server.seen().iter().map(shape).collect();
    assert_eq!(
        shapes,
        vec![
            (Some("json_schema".into()), true),
            (Some("json_schema".into()), true),
            plain.clone()
        ],
        "after a second death in a row, the next attempt goes without the schema"
    );
    let (fourth, _) = complete(provider.as_ref(), &argument_request()).await;
    assert!(fourth.is_ok());
    assert_eq!(shape(server.seen().last().unwrap()), plain, "remembered");
    assert_eq!(caps.learned()[0].1.mode, StructuredMode::JsonObject);

    // A server that fails every request: the schema was not at fault, so it is kept.
    let server = StandIn::start(Behaviour::default()).await;
    server.fault(FaultRule::new(Fault::ServerError).times(3));
    let caps = Arc::new(CapabilityCache::default());
    let provider = openai(&server, &caps);
    for _ in 0..3 {
        let (result, _) = complete(provider.as_ref(), &argument_request()).await;
        assert!(matches!(result, Err(LlmError::Server { status: 500, .. })));
    }
    let shapes: Vec<_> = server.seen().iter().map(shape).collect();
    assert_eq!(
        shapes,
        vec![
            (Some("json_schema".into()), true),
            (Some("json_schema".into()), true),
            plain
        ]
    );
    let (result, _) = complete(provider.as_ref(), &argument_request()).await;
    assert!(result.is_ok());
    assert_eq!(
        shape(server.seen().last().unwrap()),
        (Some("json_schema".into()), true),
        "plain JSON failed too, so the schema is sent again"
    );
    assert!(
        caps.learned()
            .iter()
            .all(|(_, learned)| learned.mode == StructuredMode::JsonSchema)
    );
}

#[tokio::test]
async fn anthropic_streams_tool_input_json_with_usage() {
    let server = StandIn::start(Behaviour::default()).await;
    let provider = anthropic(&server);
    let (result, streamed) = complete(provider.as_ref(), &argument_request()).await;
    let completion = result.unwrap();
    assert_eq!(streamed, completion.text);
    let value: serde_json::Value = serde_json::from_str(&completion.text).unwrap();
    assert!(value["moves"].as_array().unwrap().len() >= 2);
    let usage = completion.usage.unwrap();
    assert!(usage.input > 0 && usage.output > 0);
    let seen = server.seen();
    assert_eq!(seen[0].path, "/v1/messages");
    assert_eq!(seen[0].body["tool_choice"]["name"], "moot_argument");
    assert_eq!(seen[0].body["max_tokens"], 500);
    assert!(
        seen[0]
            .headers
            .iter()
            .any(|(k, v)| k == "x-api-key" && v == "ant-test-key")
    );
    assert!(
        seen[0]
            .headers
            .iter()
            .any(|(k, v)| k == "anthropic-version" && v == "2023-06-01")
    );
}

/// An Anthropic endpoint that refuses tools is asked again with the schema in the
/// instructions, and the next request goes that way at once.
#[tokio::test]
async fn anthropic_without_tools_is_asked_by_instructions_and_it_is_remembered() {
    let server = StandIn::start(Behaviour {
        schema_support: SchemaSupport::None,
        ..Behaviour::default()
    })
    .await;
    let provider = anthropic(&server);
    for _ in 0..2 {
        let (result, _) = complete(provider.as_ref(), &argument_request()).await;
        let value: serde_json::Value = serde_json::from_str(&result.unwrap().text).unwrap();
        assert!(value["argument"].as_str().is_some_and(|a| !a.is_empty()));
    }
    let asked: Vec<(bool, u16)> = server
        .seen()
        .iter()
        .map(|seen| (seen.body.get("tools").is_some(), seen.status))
        .collect();
    assert_eq!(asked, vec![(true, 400), (false, 200), (false, 200)]);
}

#[tokio::test]
async fn anthropic_faults_map_to_the_same_errors() {
    let server = StandIn::start(Behaviour::default()).await;
    let provider = anthropic(&server);
    server.fault(FaultRule::new(Fault::RateLimit("1".into())));
    let (result, _) = complete(provider.as_ref(), &argument_request()).await;
    assert_eq!(
        result.unwrap_err(),
        LlmError::RateLimited {
            retry_after: Some(Duration::from_secs(1))
        }
    );
    server.fault(FaultRule::new(Fault::CutStream));
    let (result, _) = complete(provider.as_ref(), &argument_request()).await;
    assert_eq!(result.unwrap_err(), LlmError::StreamCut);
    server.fault(FaultRule::new(Fault::MalformedChunk));
    let (result, _) = complete(provider.as_ref(), &argument_request()).await;
    assert!(matches!(result.unwrap_err(), LlmError::Malformed(_)));
    server.fault(FaultRule::new(Fault::ServerError));
    let (result, _) = complete(provider.as_ref(), &argument_request()).await;
    assert!(matches!(
        result.unwrap_err(),
        LlmError::Server { status: 500, .. }
    ));
}

/// A context over an in-memory journal with one debate row, and its event stream.
fn context(
    provider: Arc<dyn Provider>,
    retry: RetryPolicy,
) -> (Context, mpsc::UnboundedReceiver<Event>, Store) {
    let store = Store::in_memory().unwrap();
    let now = now_rfc3339();
    store
        .create_debate(&Debate {
            id: "DEB-test".into(),
            question: "q".into(),
            protocol: "moderated".into(),
            status: DebateStatus::Running,
            config: serde_json::json!({}),
            seats: vec![],
            created_at: now.clone(),
            updated_at: now,
            finished_at: None,
            confidence: None,
            error: None,
            stage: None,
        })
        .unwrap();
    let (events, events_rx) = mpsc::unbounded_channel();
    let (_controls_tx, controls) = mpsc::unbounded_channel();
    let ctx = Context::new(
        "DEB-test".into(),
        store.clone(),
        Wiring {
            events,
            controls,
            answerer: "the test".into(),
        },
        Seating::all(provider),
        EngineSettings::unattended(retry),
        Replay::default(),
    );
    (ctx, events_rx, store)
}

fn fast_retry() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(5),
        max_delay: Duration::from_secs(5),
    }
}

fn speech(deadline: Option<tokio::time::Instant>) -> Speech {
    let schema = debater_schema();
    Speech {
        key: TurnKey::new(1, Phase::Argument, "A"),
        perspective: Some("Performance Advocate".into()),
        system: json_instructions("moot_argument", &debater_schema()),
        prompt: "Question: x\nRound 1 of at most 3. You are seat A.\n".into(),
        kind: ReplyKind::Structured {
            parser: std::sync::Arc::new(DebaterReplies),
            stream_field: Some(moot::protocol::moves::PROSE_FIELD),
        },
        schema_name: "moot_argument",
        schema: Some(schema),
        max_tokens: None,
        deadline,
    }
}

fn drain(rx: &mut mpsc::UnboundedReceiver<Event>) -> Vec<Event> {
    let mut events = Vec::new();
    while let Ok(event) = rx.try_recv() {
        events.push(event);
    }
    events
}

#[tokio::test]
async fn speak_retries_after_retry_after_and_streams_prose_not_json() {
    let server = StandIn::start(Behaviour::default()).await;
    server.fault(FaultRule::new(Fault::RateLimit("1".into())));
    server.fault(FaultRule::new(Fault::CutStream));
    let (ctx, mut rx, store) = context(
        openai(&server, &Arc::new(CapabilityCache::default())),
        fast_retry(),
    );
    let turn = ctx.speak(speech(None)).await.unwrap();
    assert_eq!(turn.status, TurnStatus::Ok);
    assert!(turn.content.starts_with("Seat A, round 1"));
    assert_eq!(turn.moves[0].id, "A1.1");
    assert_eq!(turn.moves[1].answers, vec!["A1.1"]);
    assert!(
        turn.tokens_estimated,
        "the cut attempt's cost can only be estimated"
    );
    let events = drain(&mut rx);
    let retries: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::Retry {
                attempt,
                reason,
                delay_ms,
                ..
            } => Some((*attempt, reason.clone(), *delay_ms)),
            _ => None,
        })
        .collect();
    assert_eq!(retries.len(), 2);
    assert_eq!(retries[0], (2, "rate limited (429)".to_string(), 1000));
    assert_eq!(retries[1].1, "stream cut mid-way");
    // The prose that streamed after the last retry is exactly the turn's content, and no
    // delta ever carried JSON syntax.
    let last_retry = events
        .iter()
        .rposition(|e| matches!(e, Event::Retry { .. }))
        .unwrap();
    let prose: String = events[last_retry..]
        .iter()
        .filter_map(|e| match e {
            Event::TurnDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(prose, turn.content);
    for event in &events {
        if let Event::TurnDelta { text, .. } = event {
            assert!(
                !text.contains("\"moves\"") && !text.contains('{'),
                "raw JSON streamed: {text}"
            );
        }
    }
    // Journaled before the completion event was sent.
    assert!(matches!(events.last(), Some(Event::TurnCompleted { .. })));
    assert_eq!(store.turns("DEB-test").unwrap(), vec![turn]);
    assert_eq!(server.seen().len(), 3);
}

#[tokio::test]
async fn garbage_gets_one_repair_then_a_recorded_fallback() {
    let server = StandIn::start(Behaviour::default()).await;
    server.fault(FaultRule::new(Fault::Garbage).times(2));
    let (ctx, mut rx, _store) = context(
        openai(&server, &Arc::new(CapabilityCache::default())),
        fast_retry(),
    );
    let turn = ctx.speak(speech(None)).await.unwrap();
    assert_eq!(turn.status, TurnStatus::Fallback);
    assert_eq!(turn.content, "I would rather not answer in JSON today.");
    assert!(turn.moves.is_empty());
    assert!(
        turn.note.as_deref().unwrap().contains("no JSON object"),
        "{:?}",
        turn.note
    );
    let seen = server.seen();
    assert_eq!(seen.len(), 2, "one repair request, no more");
    let repair = seen[1].body["messages"].as_array().unwrap();
    assert!(
        repair.last().unwrap()["content"]
            .as_str()
            .unwrap()
            .contains("could not be used: the reply contains no JSON object")
    );
    assert!(
        drain(&mut rx).iter().any(
            |e| matches!(e, Event::Retry { reason, .. } if reason.starts_with("unusable reply"))
        )
    );
}

/// A flooded turn is kept, marked `truncated` with the cap in its note, and journaled as such:
/// the debate goes on with it (N6).
#[tokio::test]
async fn a_reply_past_its_cap_is_kept_as_a_truncated_turn() {
    let server = StandIn::start(Behaviour::default()).await;
    server.fault(FaultRule::new(Fault::Flood {
        bytes: 5_000_000,
        one_line: false,
    }));
    let (ctx, _rx, store) = context(
        openai(&server, &Arc::new(CapabilityCache::default())),
        fast_retry(),
    );
    let turn = ctx.speak(speech(None)).await.unwrap();
    assert_eq!(turn.status, TurnStatus::Truncated, "{turn:?}");
    assert!(turn.status.spoke());
    let note = turn.note.as_deref().unwrap();
    assert!(note.contains("bytes ([limits] reply_bytes)"), "{note}");
    let stored = store.turns(&ctx.debate_id).unwrap();
    assert_eq!(stored.last().unwrap().status, TurnStatus::Truncated);
    assert!(stored.last().unwrap().content.len() <= 16 * 4096);
}

#[tokio::test]
async fn an_invalid_reply_is_repaired_and_half_json_is_closed() {
    let server = StandIn::start(Behaviour::default()).await;
    server.fault(FaultRule::new(Fault::Invalid));
    let (ctx, _rx, _store) = context(
        openai(&server, &Arc::new(CapabilityCache::default())),
        fast_retry(),
    );
    let turn = ctx.speak(speech(None)).await.unwrap();
    assert_eq!(turn.status, TurnStatus::Ok);
    assert_eq!(server.seen().len(), 2);

    let server = StandIn::start(Behaviour::default()).await;
    server.fault(FaultRule::new(Fault::HalfJson));
    let (ctx, _rx, _store) = context(
        openai(&server, &Arc::new(CapabilityCache::default())),
        fast_retry(),
    );
    let turn = ctx.speak(speech(None)).await.unwrap();
    assert!(turn.status.spoke(), "{turn:?}");
    assert!(turn.content.starts_with("Seat A"));
}

#[tokio::test]
async fn a_missing_usage_is_estimated_and_marked() {
    let server = StandIn::start(Behaviour {
        usage: false,
        ..Behaviour::default()
    })
    .await;
    let (ctx, _rx, _store) = context(
        openai(&server, &Arc::new(CapabilityCache::default())),
        fast_retry(),
    );
    let turn = ctx.speak(speech(None)).await.unwrap();
    assert!(turn.tokens_estimated);
    assert!(turn.tokens_in > 0 && turn.tokens_out > 0);
}

#[tokio::test]
async fn a_hung_provider_times_out_at_the_deadline_and_exhausted_retries_fail() {
    let server = StandIn::start(Behaviour::default()).await;
    server.fault(FaultRule::new(Fault::Hang));
    let (ctx, _rx, _store) = context(
        openai(&server, &Arc::new(CapabilityCache::default())),
        fast_retry(),
    );
    let deadline = tokio::time::Instant::now() + Duration::from_millis(300);
    let turn = ctx.speak(speech(Some(deadline))).await.unwrap();
    assert_eq!(turn.status, TurnStatus::TimedOut);

    let server = StandIn::start(Behaviour::default()).await;
    server.fault(FaultRule::new(Fault::ServerError).times(3));
    let (ctx, _rx, _store) = context(
        openai(&server, &Arc::new(CapabilityCache::default())),
        fast_retry(),
    );
    let turn = ctx.speak(speech(None)).await.unwrap();
    assert_eq!(turn.status, TurnStatus::Failed);
    assert!(turn.note.unwrap().contains("500"));
    assert_eq!(server.seen().len(), 3, "bounded attempts");
}

#[tokio::test]
async fn recorded_turns_are_served_from_the_journal() {
    let server = StandIn::start(Behaviour::default()).await;
    let (ctx, _rx, store) = context(
        openai(&server, &Arc::new(CapabilityCache::default())),
        fast_retry(),
    );
    let first = ctx.speak(speech(None)).await.unwrap();
    assert!(!first.tokens_estimated, "usage came from the server");
    let recorded = store.turns("DEB-test").unwrap();
    let (events, mut rx) = mpsc::unbounded_channel();
    let (_tx, controls) = mpsc::unbounded_channel();
    let again = Context::new(
        "DEB-test".into(),
        store.clone(),
        Wiring {
            events,
            controls,
            answerer: "the test".into(),
        },
        Seating::all(openai(&server, &Arc::new(CapabilityCache::default()))),
        EngineSettings::unattended(fast_retry()),
        Replay {
            turns: recorded,
            answers: vec![],
            events: vec![],
        },
    );
    let replayed = again.speak(speech(None)).await.unwrap();
    assert_eq!(replayed, first);
    assert_eq!(server.seen().len(), 1, "no second provider call");
    assert!(matches!(
        rx.try_recv().unwrap(),
        Event::TurnCompleted { replayed: true, .. }
    ));
}

#[tokio::test]
async fn a_server_that_cuts_concurrent_streams_is_learned_and_queued() {
    let server = StandIn::start(Behaviour {
        cut_concurrent: true,
        chunk_delay: Duration::from_millis(2),
        ..Behaviour::default()
    })
    .await;
    let caps = Arc::new(CapabilityCache::default());
    let (ctx, _rx, _store) = context(openai(&server, &caps), fast_retry());
    let mut second = speech(None);
    second.key = TurnKey::new(1, Phase::Argument, "B");
    second.prompt = "Question: x\nRound 1 of at most 3. You are seat B.\n".into();
    let turns = ctx.speak_all(vec![speech(None), second]).await.unwrap();
    assert!(
        turns.iter().all(|t| t.status == TurnStatus::Ok),
        "{turns:?}"
    );
    assert!(
        caps.learned()[0].1.serial,
        "the endpoint is now served one request at a time"
    );
    // Once learned, requests no longer overlap, so none is cut.
    let before = server.seen().len();
    let turns = ctx
        .speak_all(vec![
            Speech {
                key: TurnKey::new(2, Phase::Argument, "A"),
                ..speech(None)
            },
            Speech {
                key: TurnKey::new(2, Phase::Argument, "B"),
                ..speech(None)
            },
        ])
        .await
        .unwrap();
    assert!(turns.iter().all(|t| t.status == TurnStatus::Ok));
    assert_eq!(server.seen().len() - before, 2, "no retries needed");
}
