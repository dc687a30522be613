//! `moot mcp` driven as a coding agent drives it: the real binary over its stdin and stdout,
//! MCP's JSON-RPC written and read line by line, against the stand-in provider; the person's
//! side from a second process (`moot approve`).

use crate::support::{Behaviour, StandIn};
use crate::*;
use serde_json::{Value, json};
use std::io::Write;
use std::process::{Child, ChildStdin, Stdio};
use std::time::{Duration, Instant};

/// A client of `moot mcp`: the child, the requests written to it, the replies read from it.
struct Agent {
    child: Child,
    stdin: ChildStdin,
    replies: EventLines,
    next_id: u64,
}

impl Agent {
    /// Starts `moot mcp` and goes through the handshake as client `name`.
    fn start(home: &Home, server: &StandIn, name: &str) -> Agent {
        let mut child = home
            .command(Some(server))
            .arg("mcp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let replies = EventLines::new(child.stdout.take().unwrap());
        let mut agent = Agent {
            child,
            stdin,
            replies,
            next_id: 0,
        };
        let init = agent.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": name, "version": "1.0"}
            }),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "moot", "{init}");
        assert!(
            init["result"]["capabilities"]["tools"].is_object(),
            "{init}"
        );
        agent.write(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        agent
    }

    fn write(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a request and waits (60 s at most) for its reply; notifications on the way are
    /// passed over.
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.request_noting(method, params).0
    }

    /// Sends a request and waits (60 s at most) for its reply, keeping the notifications the
    /// server sent on the way.
    fn request_noting(&mut self, method: &str, params: Value) -> (Value, Vec<Value>) {
        self.next_id += 1;
        let id = self.next_id;
        self.write(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut notes = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .replies
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no reply to {method} within 60 s"));
            let reply: Value = serde_json::from_str(&line).unwrap();
            if reply["id"] == id {
                return (reply, notes);
            }
            if reply["id"].is_null() {
                notes.push(reply);
            }
        }
    }

    /// Calls a tool; its result (`content`, `structuredContent`, `isError`).
    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let reply = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        assert!(reply["error"].is_null(), "{tool}: {reply}");
        reply["result"].clone()
    }

    /// A tool's structured result, which must not be an error.
    fn answer(&mut self, tool: &str, arguments: Value) -> Value {
        let result = self.call(tool, arguments);
        assert_eq!(result["isError"], false, "{tool}: {result}");
        result["structuredContent"].clone()
    }

    /// A tool's error text, which it must be.
    fn refusal(&mut self, tool: &str, arguments: Value) -> String {
        let result = self.call(tool, arguments);
        assert_eq!(result["isError"], true, "{tool} was not refused: {result}");
        result["content"][0]["text"].as_str().unwrap().to_string()
    }

    /// Polls `debate_status` until `done` holds of it (60 s at most).
    fn status_until(&mut self, id: &str, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let status = self.answer("debate_status", json!({"id": id}));
            if done(&status) {
                return status;
            }
            assert!(Instant::now() < deadline, "debate_status: {status}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn close(mut self) {
        drop(self.stdin);
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.child.try_wait().unwrap().is_none() {
            assert!(
                Instant::now() < deadline,
                "moot mcp did not end with its input"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

const QUESTION: &str = "Should we use Redis or PostgreSQL for caching?";

/// A stand-in that takes a moment over each reply, so a round's turns land while a client
/// waits on `debate_status` (and are told as progress), not all before it asks.
fn paced() -> Behaviour {
    Behaviour {
        latency: Duration::from_millis(100),
        ..Behaviour::default()
    }
}

/// The issue's walk: list the tools (each with its schemas), convene a moderated debate whose
/// checkpoints the person answers, follow it with debate_status while the person answers from
/// another terminal (`moot approve`), read the decision, and verify it from the journal.
#[test]
fn an_agent_convenes_a_debate_the_person_steers_and_reads_its_decision() {
    let server = StandIn::start_in_background(paced());
    let home = Home::new();
    home.write_config("");
    let mut agent = Agent::start(&home, &server, "test-agent");
    let tools = agent.request("tools/list", json!({}))["result"]["tools"].clone();
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for wanted in [
        "convene_debate",
        "debate_status",
        "answer_checkpoint",
        "get_decision",
        "list_debates",
        "search_debates",
    ] {
        assert!(names.contains(&wanted), "{wanted} missing from {names:?}");
    }
    for tool in tools.as_array().unwrap() {
        // schemars's own integer formats are no standard's; validators warn of them.
        assert!(!tool.to_string().contains("\"format\":\"uint"), "{tool}");
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        assert_eq!(tool["outputSchema"]["type"], "object", "{tool}");
        assert!(
            tool["description"].as_str().is_some_and(|d| d.len() > 40),
            "{tool}"
        );
    }
    let convened = agent.answer(
        "convene_debate",
        json!({"question": QUESTION, "checkpoints": "person", "max_rounds": 2}),
    );
    let id = convened["id"].as_str().unwrap().to_string();
    assert_eq!(convened["watch"], format!("moot open {id}"));
    // Waiting for the first checkpoint, the call reports the debate's steps as progress.
    let (waited, notes) = agent.request_noting(
        "tools/call",
        json!({
            "name": "debate_status",
            "arguments": {"id": id, "wait_seconds": 45},
            "_meta": {"progressToken": "steps-1"}
        }),
    );
    let waited = &waited["result"]["structuredContent"];
    assert!(waited["waiting_for"].is_string(), "{waited}");
    let progress: Vec<&Value> = notes
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .collect();
    assert!(!progress.is_empty(), "no progress while waiting: {notes:?}");
    assert!(
        progress
            .iter()
            .all(|n| n["params"]["progressToken"] == "steps-1"),
        "{progress:?}"
    );
    assert!(
        progress
            .iter()
            .any(|n| n["params"]["message"].as_str().unwrap().contains("round 1")),
        "{progress:?}"
    );
    let mut answered = 0;
    let ended = loop {
        let status = agent.status_until(&id, |s| {
            s["waiting_for"].is_string() || s["status"] != "running"
        });
        if status["status"] != "running" {
            break status;
        }
        assert!(
            status["waiting_for"]
                .as_str()
                .unwrap()
                .contains(&format!("moot open {id}")),
            "{status}"
        );
        // The person answers from another terminal.
        let approve = home.run(None, &["approve", &id]);
        assert_eq!(approve.status.code(), Some(0), "{}", stderr(&approve));
        answered += 1;
        assert!(answered < 6, "too many questions: {status}");
        agent.status_until(&id, |s| {
            s["stage"] != status["stage"] || s["status"] != "running"
        });
    };
    assert_eq!(ended["status"], "completed", "{ended}");
    assert!(answered >= 1, "the person was never asked");
    assert!(!ended["latest_turns"].as_array().unwrap().is_empty());
    let decision = agent.answer("get_decision", json!({"id": id}));
    let record = decision["record"].as_str().unwrap();
    assert!(record.contains("## Recommendation"), "{record}");
    assert!(record.contains("*Journal receipt:*"), "{record}");
    let listed = agent.answer("list_debates", json!({}));
    assert_eq!(listed["debates"][0]["id"], id.as_str());
    // The record and the argument map, as resources a client can attach.
    let resources = agent.request("resources/list", json!({}))["result"]["resources"].clone();
    let uris: Vec<&str> = resources
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    let record_uri = format!("moot://debates/{id}/record");
    let map_uri = format!("moot://debates/{id}/map");
    assert!(
        uris.contains(&record_uri.as_str()) && uris.contains(&map_uri.as_str()),
        "{uris:?}"
    );
    let read = |agent: &mut Agent, uri: &str| {
        agent.request("resources/read", json!({"uri": uri}))["result"]["contents"][0].clone()
    };
    let map = read(&mut agent, &map_uri);
    assert_eq!(map["mimeType"], "text/vnd.mermaid");
    assert!(
        map["text"].as_str().unwrap().starts_with("flowchart"),
        "{map}"
    );
    let attached = read(&mut agent, &record_uri);
    assert_eq!(attached["text"], decision["record"]);
    let wrong = agent.request(
        "resources/read",
        json!({"uri": "moot://debates/DEB-nothere1/map"}),
    );
    assert!(
        wrong["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no debate"),
        "{wrong}"
    );
    let found = agent.answer("search_debates", json!({"query": "Redis"}));
    assert_eq!(found["debates"].as_array().unwrap().len(), 1);
    agent.close();
    let verify = home.run(None, &["audit", &id, "--verify"]);
    assert_eq!(verify.status.code(), Some(0), "{}", stderr(&verify));
    let shown = show_json(&home, &id);
    assert_eq!(shown["initiated_by"], "agent:test-agent");
    let by = shown["checkpoints"][0]["answered_by"].as_str().unwrap();
    assert!(by.ends_with("from another terminal"), "{by}");
}

/// Bad input is a tool error that names the fix, and nothing is journaled.
#[test]
fn bad_input_is_a_tool_error_naming_the_fix_and_journals_nothing() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    home.write_config("");
    let mut agent = Agent::start(&home, &server, "test-agent");
    let unknown = agent.refusal(
        "convene_debate",
        json!({"question": QUESTION, "protocol": "duel"}),
    );
    assert!(
        unknown.contains("duel") && unknown.contains("moderated"),
        "{unknown}"
    );
    let code = agent.refusal(
        "convene_debate",
        json!({"question": QUESTION, "protocol": "code"}),
    );
    assert!(code.contains("moot --protocol code"), "{code}");
    let huge = "why ".repeat(10 * 1024 * 1024 / 4);
    let long = agent.refusal("convene_debate", json!({"question": huge}));
    assert!(long.contains("characters long"), "{long}");
    let missing = agent.refusal("debate_status", json!({"id": "DEB-nothere1"}));
    assert!(missing.contains("no debate DEB-nothere1"), "{missing}");
    let nothing = agent.refusal("get_decision", json!({"id": "DEB-nothere1"}));
    assert!(nothing.contains("no debate"), "{nothing}");
    assert_eq!(
        agent.answer("list_debates", json!({}))["debates"],
        json!([]),
        "nothing was journaled"
    );
    // A finished debate waits for nothing: an answer to it is refused, said why.
    let id = agent.answer(
        "convene_debate",
        json!({"question": QUESTION, "checkpoints": "none", "max_rounds": 1}),
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    agent.status_until(&id, |s| s["status"] != "running");
    let late = agent.refusal("answer_checkpoint", json!({"id": id, "answer": "continue"}));
    assert!(late.contains("waits at no checkpoint"), "{late}");
    // An answer's text is bounded: a stdio request has no body limit.
    let long = agent.refusal(
        "answer_checkpoint",
        json!({"id": id, "answer": "guide", "text": "weigh ".repeat(20_000)}),
    );
    assert!(long.contains("text: 120000 characters"), "{long}");
    let gate = agent.refusal("answer_checkpoint", json!({"id": id, "answer": "approve"}));
    assert!(gate.contains("waits at no approval gate"), "{gate}");
    agent.close();
}

/// A debate still running when the agent closes the server stops where it is, journaled as
/// paused (not left running), and `moot resume` takes it to its end.
#[test]
fn a_debate_left_running_when_the_agent_goes_stops_and_resumes() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    home.write_config("");
    let mut agent = Agent::start(&home, &server, "test-agent");
    let id = agent.answer(
        "convene_debate",
        json!({"question": QUESTION, "checkpoints": "person", "max_rounds": 2}),
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    agent.status_until(&id, |s| s["waiting_for"].is_string());
    agent.close();
    // Stopped as Ctrl-C stops a debate (paused, its events saying so), not merely left with a
    // dead lease.
    assert_eq!(show_json(&home, &id)["status"], "paused");
    let resumed = home.run(
        Some(&server),
        &["resume", &id, "--headless", "--no-checkpoints"],
    );
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    assert_eq!(show_json(&home, &id)["status"], "completed");
}

/// Runs tests/mcp/agent.py (the official MCP Python SDK) in `home` with `extra` arguments after
/// the binary's path (none: stdio; a URL and a token: Streamable HTTP), and judges its walk:
/// the debate completed with the person's answers, progress reached the SDK, the record carries
/// its receipt and verifies. Returns the debate's id.
fn python_walk(home: &Home, server: &StandIn, extra: &[&str]) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = root.join("target/mcp-client/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup-mcp-client (scripts/test does)",
        python.display()
    );
    let mut command = home.prepared(std::process::Command::new(&python), Some(server));
    let walked = command
        .arg(root.join("tests/mcp/agent.py"))
        .arg(env!("CARGO_BIN_EXE_moot"))
        .args(extra)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        walked.status.success(),
        "the Python agent failed:\n{}",
        stderr(&walked)
    );
    let stdout = String::from_utf8_lossy(&walked.stdout);
    let seen: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(seen["status"], "completed", "{seen}");
    assert!(seen["answered"].as_u64().unwrap() >= 1, "{seen}");
    assert!(
        !seen["progress"].as_array().unwrap().is_empty(),
        "no progress notification reached the SDK: {seen}"
    );
    assert!(
        seen["record"]
            .as_str()
            .unwrap()
            .contains("*Journal receipt:*")
    );
    let id = seen["id"].as_str().unwrap().to_string();
    assert_eq!(seen["listed"][0], id.as_str());
    let verify = home.run(None, &["audit", &id, "--verify"]);
    assert_eq!(verify.status.code(), Some(0), "{}", stderr(&verify));
    id
}

/// The issue's walk with the official MCP Python SDK as the client over stdio: every tool's
/// schemas and structured outputs validate, progress notifications arrive while it waits, the
/// person answers from a second process, and the decision verifies.
#[test]
fn the_official_python_sdk_walks_a_debate_the_person_steers() {
    let server = StandIn::start_in_background(paced());
    let home = Home::new();
    home.write_config("");
    let id = python_walk(&home, &server, &[]);
    assert_eq!(show_json(&home, &id)["initiated_by"], "agent:mcp");
}

/// The same walk over Streamable HTTP, at `moot serve`'s /mcp behind its token; without the
/// token the endpoint answers 401.
#[test]
fn the_official_python_sdk_walks_it_over_streamable_http_behind_the_token() {
    const TOKEN: &str = "mcp-over-http-token-0123456789";
    let server = StandIn::start_in_background(paced());
    let home = Home::new();
    home.write_config("");
    let served = support::serving::Serving::start(
        home.command(Some(&server))
            .env("MOOT_SERVE_TOKEN", TOKEN)
            .args(["serve", "--listen", "127.0.0.1:0"]),
    );
    let url = format!("http://{}/mcp", served.addr);
    let id = python_walk(&home, &server, &[&url, TOKEN]);
    assert_eq!(show_json(&home, &id)["initiated_by"], "agent:mcp");
    let refused = python_refused(&home, &server, &url, "not-the-token");
    assert!(refused.contains("error response"), "{refused}");
    // What it was refused with: the API's 401, the MCP endpoint as every other route.
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}"#;
    let status = status_line(&served.addr, initialize, None);
    assert!(status.contains(" 401 "), "{status}");
    let status = status_line(&served.addr, initialize, Some(TOKEN));
    assert!(status.contains(" 200 "), "{status}");
}

/// The status line `moot serve` answers a POST of `body` to /mcp with, with `token` or none.
fn status_line(addr: &str, body: &str, token: Option<&str>) -> String {
    use std::io::{BufRead, BufReader};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let authorization = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{authorization}\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line).unwrap();
    line
}

/// What the Python agent says when the server refuses it.
fn python_refused(home: &Home, server: &StandIn, url: &str, token: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = root.join("target/mcp-client/bin/python");
    let output = home
        .prepared(std::process::Command::new(&python), Some(server))
        .arg(root.join("tests/mcp/agent.py"))
        .arg(env!("CARGO_BIN_EXE_moot"))
        .args([url, token])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success(), "a wrong token was let in");
    stderr(&output)
}

/// At an approval gate the agent approves or rejects (with why); a checkpoint's answer there
/// is refused, saying what fits, and an approval lets the debate finish.
#[test]
fn an_agent_settles_a_gate_and_is_told_what_fits() {
    let server = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    home.write_config("");
    let mut agent = Agent::start(&home, &server, "gatekeeper");
    let id = agent.answer(
        "convene_debate",
        json!({
            "question": QUESTION,
            "checkpoints": "none",
            "max_rounds": 1,
            "gates": ["before_synthesis"]
        }),
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    let waiting = agent.status_until(&id, |s| s["waiting_for"].is_string());
    assert!(
        waiting["waiting_for"].as_str().unwrap().contains("approve"),
        "{waiting}"
    );
    let wrong = agent.refusal("answer_checkpoint", json!({"id": id, "answer": "continue"}));
    assert!(
        wrong.contains("approval gate") && wrong.contains("approve"),
        "{wrong}"
    );
    let bare = agent.refusal("answer_checkpoint", json!({"id": id, "answer": "reject"}));
    assert!(bare.contains("a rejection says why"), "{bare}");
    let approved = agent.answer("answer_checkpoint", json!({"id": id, "answer": "approve"}));
    assert_eq!(approved["answered"], "approved", "{approved}");
    let ended = agent.status_until(&id, |s| s["status"] != "running");
    assert_eq!(ended["status"], "completed", "{ended}");
    agent.close();
    let gates = show_json(&home, &id)["gates"].clone();
    assert!(
        gates.to_string().contains("gatekeeper via MCP"),
        "the gate names who decided: {gates}"
    );
}
