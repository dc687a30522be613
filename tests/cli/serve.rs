//! `moot serve`: debates started, followed over SSE and approved over HTTP, and bad requests
//! answered with their status and message, against a server started on a free port.

use crate::*;
use moot::debate::DebateStatus;
use serde_json::json;
use std::io::Read;
use std::net::TcpStream;
use support::serving::{Serving as Served, spawn_until_first_line};

const TOKEN: &str = "serve-test-token-0123456789";

/// `moot serve` in a home, on a free port.
fn serve(home: &Home, server: &StandIn, extra: &[&str]) -> Served {
    Served::start(
        home.command(Some(server))
            .env("MOOT_SERVE_TOKEN", TOKEN)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(extra),
    )
}

/// A response: its status, headers (lowercase names) and body.
struct Reply {
    status: u16,
    body: String,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }

    fn error(&self) -> String {
        self.json()["error"]["message"]
            .as_str()
            .unwrap_or("")
            .to_string()
    }
}

/// One HTTP/1.1 request with `Connection: close`, the body read to its end.
fn http(addr: &str, method: &str, path: &str, token: Option<&str>, body: Option<&str>) -> Reply {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    if let Some(token) = token {
        request.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    if let Some(body) = body {
        request.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    if let Some(body) = body {
        // A server may answer (413) before it has read everything.
        let _ = stream.write_all(body.as_bytes());
    }
    let mut reader = BufReader::new(stream);
    let (status, headers) = head(&mut reader);
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    let mut body = Vec::new();
    if chunked {
        while let Some(chunk) = next_chunk(&mut reader) {
            body.extend(chunk);
        }
    } else {
        let _ = reader.read_to_end(&mut body);
    }
    Reply {
        status,
        body: String::from_utf8_lossy(&body).to_string(),
    }
}

fn head(reader: &mut BufReader<TcpStream>) -> (u16, Vec<(String, String)>) {
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let status = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.push((k.trim().to_lowercase(), v.trim().to_string()));
        }
    }
    (status, headers)
}

/// The next chunk of a chunked body; None at its end.
fn next_chunk(reader: &mut BufReader<TcpStream>) -> Option<Vec<u8>> {
    let mut size = String::new();
    if reader.read_line(&mut size).ok()? == 0 {
        return None;
    }
    let size = usize::from_str_radix(size.trim(), 16).ok()?;
    if size == 0 {
        return None;
    }
    let mut chunk = vec![0; size + 2];
    reader.read_exact(&mut chunk).ok()?;
    chunk.truncate(size);
    Some(chunk)
}

/// One server-sent event: its id, if any, and its data parsed.
#[derive(Debug)]
struct Sent {
    id: Option<i64>,
    data: Value,
}

/// Follows a debate's events (after `last`), calling `on` with each, until the stream ends or
/// `on` says stop; returns what came.
fn follow(addr: &str, id: &str, last: Option<i64>, mut on: impl FnMut(&Sent) -> bool) -> Vec<Sent> {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .unwrap();
    let mut request = format!(
        "GET /v1/debates/{id}/events HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\nAccept: text/event-stream\r\n"
    );
    if let Some(last) = last {
        request.push_str(&format!("Last-Event-ID: {last}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream);
    let (status, headers) = head(&mut reader);
    assert_eq!(status, 200);
    assert!(
        headers
            .iter()
            .any(|(k, v)| k == "content-type" && v.starts_with("text/event-stream"))
    );
    let mut text = String::new();
    let mut sent = Vec::new();
    while let Some(chunk) = next_chunk(&mut reader) {
        text.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = text.find("\n\n") {
            let block: String = text.drain(..end + 2).collect();
            let mut event_id = None;
            let mut data = String::new();
            for line in block.lines() {
                if let Some(value) = line.strip_prefix("id:") {
                    event_id = value.trim().parse().ok();
                } else if let Some(value) = line.strip_prefix("data:") {
                    data.push_str(value.trim_start());
                }
            }
            if data.is_empty() {
                continue; // a heartbeat comment
            }
            let event = Sent {
                id: event_id,
                data: serde_json::from_str(&data).unwrap(),
            };
            let stop = !on(&event);
            sent.push(event);
            if stop {
                return sent;
            }
        }
    }
    sent
}

/// The end-to-end cycle of 004: a panel debate started over HTTP with a `before_synthesis`
/// gate, followed over SSE, approved over HTTP, its record read; then followed again from a
/// `Last-Event-ID` after a dropped stream.
#[test]
fn a_panel_debate_runs_over_http_followed_by_sse_and_its_gate_approved_over_http() {
    let stand_in = StandIn::start_in_background(converging_panel());
    let home = Home::new();
    let served = serve(&home, &stand_in, &[]);
    let addr = served.addr.as_str();
    let health = http(addr, "GET", "/v1/health", None, None);
    assert_eq!(
        (health.status, health.json()["ok"].clone()),
        (200, json!(true))
    );
    let id = start_debate(
        addr,
        json!({
            "question": "Which sync model should the app ship with?",
            "protocol": "panel",
            "options": ["A: Local-first sync", "B: Server-authoritative", "C: Manual export"],
            "gates": ["before_synthesis"],
            "checkpoints": false
        }),
    );
    let mut approved = false;
    let sent = follow(addr, &id, None, |event| {
        if event.data["type"] == "gate_requested" && !approved {
            approved = true;
            // C9: the stream carries what the reviewer weighs, as `GET …/gates` does.
            assert!(
                event.data["artifacts"]
                    .as_object()
                    .is_some_and(|fields| !fields.is_empty()),
                "{}",
                event.data
            );
            let reply = http(
                addr,
                "POST",
                &format!("/v1/debates/{id}/approve"),
                Some(TOKEN),
                Some(r#"{"reviewer": "alice", "reason": "reads well"}"#),
            );
            assert_eq!(reply.status, 200, "{}", reply.body);
            assert_eq!(reply.json()["by"], "alice via HTTP");
        }
        true
    });
    assert!(approved, "the stream showed the gate: {sent:?}");
    let kinds: Vec<&str> = sent
        .iter()
        .map(|e| e.data["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.last(), Some(&"debate_completed"), "{kinds:?}");
    assert!(
        kinds.contains(&"turn_completed") && kinds.contains(&"gate_decided"),
        "{kinds:?}"
    );
    // Journaled events carry the journal's numbers, in order.
    let ids: Vec<i64> = sent.iter().filter_map(|e| e.id).collect();
    assert!(ids.len() >= kinds.iter().filter(|k| **k != "turn_delta").count());
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    let decided = sent
        .iter()
        .find(|e| {
            e.data["type"] == "gate_decided"
                && e.data["by"] != "moot (this debate does not stop here)"
        })
        .unwrap_or_else(|| {
            panic!(
                "{:?}",
                sent.iter()
                    .filter(|e| e.data["type"].as_str().unwrap().starts_with("gate"))
                    .map(|e| &e.data)
                    .collect::<Vec<_>>()
            )
        });
    assert_eq!(decided.data["by"], "alice via HTTP");
    // The record, as the API and the journal have it.
    let record = http(
        addr,
        "GET",
        &format!("/v1/debates/{id}/record"),
        Some(TOKEN),
        None,
    );
    assert_eq!(record.status, 200);
    assert!(
        record
            .body
            .contains("**Result:** winner A: Local-first sync")
            && record.body.contains("initiated by server"),
        "{}",
        record.body
    );
    let shown = http(addr, "GET", &format!("/v1/debates/{id}"), Some(TOKEN), None).json();
    assert_eq!(shown["initiated_by"], "server");
    assert_eq!(shown["status"], "completed");
    let gates = http(
        addr,
        "GET",
        &format!("/v1/debates/{id}/gates"),
        Some(TOKEN),
        None,
    )
    .json();
    assert!(
        gates
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["decided_by"] == "alice via HTTP")
    );
    let listed = http(
        addr,
        "GET",
        "/v1/debates?protocol=panel&q=sync",
        Some(TOKEN),
        None,
    )
    .json();
    assert_eq!(listed[0]["id"], id.as_str());
    assert_eq!(
        http(addr, "GET", "/v1/debates?protocol=arena", Some(TOKEN), None).json(),
        json!([])
    );
    // A client that dropped its stream resumes after the last event it had.
    let middle = ids[ids.len() / 2];
    let again = follow(addr, &id, Some(middle), |_| true);
    let first = again.iter().find_map(|e| e.id).unwrap();
    assert!(first > middle, "{first} after {middle}");
    assert_eq!(
        again.iter().filter_map(|e| e.id).collect::<Vec<_>>(),
        ids.iter()
            .copied()
            .filter(|i| *i > middle)
            .collect::<Vec<_>>()
    );
    // The journal verifies: the approval is in it as given.
    drop(served);
    let audit = home.run(None, &["audit", &id, "--verify"]);
    assert!(
        audit.status.success(),
        "{}",
        String::from_utf8_lossy(&audit.stdout)
    );
}

/// Bad requests: each gets its status and message, and nothing is journaled.
#[test]
fn bad_requests_get_their_status_and_message_and_nothing_is_journaled() {
    let stand_in = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    let served = serve(&home, &stand_in, &[]);
    let addr = served.addr.as_str();
    let post = |body: &str| http(addr, "POST", "/v1/debates", Some(TOKEN), Some(body));
    let question = "Should we cache sessions in Redis?";
    let unauthorised = http(addr, "GET", "/v1/debates", None, None);
    assert_eq!(unauthorised.status, 401);
    assert!(
        unauthorised.error().contains("Authorization: Bearer"),
        "{}",
        unauthorised.body
    );
    let wrong = http(
        addr,
        "GET",
        "/v1/debates",
        Some("not-the-token-at-all"),
        None,
    );
    assert_eq!(
        (wrong.status, wrong.error().as_str()),
        (401, "the bearer token is wrong")
    );
    // C10: the scheme is case-insensitive, a 401 names its scheme, and a 405 has a body.
    let raw = |request: String| -> String {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        text
    };
    let lower = raw(format!(
        "GET /v1/debates HTTP/1.1\r\nHost: {addr}\r\nAuthorization: bearer {TOKEN}\r\nConnection: close\r\n\r\n"
    ));
    assert!(lower.starts_with("HTTP/1.1 200"), "{lower}");
    let refused = raw(format!(
        "GET /v1/debates HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    ));
    assert!(
        refused.starts_with("HTTP/1.1 401")
            && refused
                .to_ascii_lowercase()
                .contains("www-authenticate: bearer"),
        "{refused}"
    );
    let wrong_method = http(addr, "DELETE", "/v1/debates/DEB-x", Some(TOKEN), None);
    assert_eq!(wrong_method.status, 405, "{}", wrong_method.body);
    assert!(
        wrong_method.error().contains("does not take that method"),
        "{}",
        wrong_method.body
    );
    let torn = post(r#"{"question": "Redis?"#);
    assert_eq!(torn.status, 400, "{}", torn.body);
    let options: Vec<String> = (0..300).map(|i| format!("O{i}: option {i}")).collect();
    for (body, expected) in [
        (json!({"question": question, "protocol": "jury"}), "jury"),
        (
            json!({"question": question, "options": options}),
            "options: at most 26",
        ),
        (
            json!({"question": question, "base_url": "http://evil.example/v1"}),
            "unknown field `base_url`",
        ),
        (
            json!({"question": question, "test": "rm -rf /"}),
            "unknown field `test`",
        ),
        (
            json!({"question": question, "context": "/etc"}),
            "unknown field `context`",
        ),
        (
            json!({"question": question, "script": "/tmp/s.json"}),
            "unknown field `script`",
        ),
        (
            json!({"question": question, "protocol": "code"}),
            "project directory",
        ),
        (json!({"question": question, "max_rounds": 99}), "99"),
        (json!({"question": "  "}), "question: the question is empty"),
        // C10: said in the request's terms, not the command line's.
        (
            json!({"question": question, "options": ["A: One", "B: Two"]}),
            "options is a flag of the panel protocol, not of moderated; add \"protocol\": \"panel\"",
        ),
        (
            json!({"question": question, "vote": "--script=/etc/passwd"}),
            "vote",
        ),
        (
            json!({"question": question, "provider": null}),
            "provider: null is not a value",
        ),
        (
            json!({"question": question, "initiated_by": "server"}),
            "initiated_by: moot records `server` itself",
        ),
        (
            json!({"question": question, "initiated_by": "agent:two words"}),
            "initiated_by: agent name",
        ),
    ] {
        let reply = post(&body.to_string());
        assert_eq!(reply.status, 400, "{body}: {}", reply.body);
        assert!(reply.error().contains(expected), "{body}: {}", reply.body);
        // (A code debate is sent to the command line on purpose, named as a command; a value
        // given is quoted back as it was.)
        assert!(
            !reply
                .error()
                .replace("`moot --protocol code`", "")
                .replace("--script=/etc/passwd", "")
                .contains("--"),
            "no command-line spelling: {body}: {}",
            reply.body
        );
    }
    let huge = format!(r#"{{"question": "{}"}}"#, "x".repeat(1024 * 1024));
    assert_eq!(post(&huge).status, 413);
    let unknown = http(addr, "GET", "/v1/debates/DEB-nothere1", Some(TOKEN), None);
    assert_eq!(unknown.status, 404);
    assert!(
        unknown.error().contains("no debate DEB-nothere1"),
        "{}",
        unknown.body
    );
    assert_eq!(
        http(addr, "GET", "/v2/nothing", Some(TOKEN), None).status,
        404
    );
    assert_eq!(
        http(addr, "GET", "/v1/debates", Some(TOKEN), None).json(),
        json!([]),
        "nothing journaled"
    );
    // A finished debate waits at no gate and no checkpoint.
    let created =
        post(&json!({"question": question, "max_rounds": 1, "checkpoints": false}).to_string());
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.json()["id"].as_str().unwrap().to_string();
    follow(addr, &id, None, |_| true);
    let approve = http(
        addr,
        "POST",
        &format!("/v1/debates/{id}/approve"),
        Some(TOKEN),
        Some(r#"{"reviewer": "bob"}"#),
    );
    assert_eq!(approve.status, 409);
    assert!(
        approve.error().contains("waits at no gate"),
        "{}",
        approve.body
    );
    let answer = http(
        addr,
        "POST",
        &format!("/v1/debates/{id}/checkpoint"),
        Some(TOKEN),
        Some(r#"{"answer": "continue"}"#),
    );
    assert_eq!(answer.status, 409);
    let reject = http(
        addr,
        "POST",
        &format!("/v1/debates/{id}/reject"),
        Some(TOKEN),
        Some(r#"{"reviewer": "bob"}"#),
    );
    assert_eq!(
        (reject.status, reject.error().as_str()),
        (400, "reason: a rejection says why")
    );
    drop(served);
    // Beyond this machine, only with a token the person chose.
    let refused = home
        .command(Some(&stand_in))
        .args(["serve", "--listen", "0.0.0.0:0"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("needs a token you chose"),
        "{}",
        stderr(&refused)
    );
}

/// A checkpoint of a debate the server runs waits for its answer over HTTP: guidance given
/// with a POST reaches the next round, and who gave it is journaled.
#[test]
fn a_checkpoint_waits_for_its_answer_over_http() {
    let stand_in = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    let served = serve(&home, &stand_in, &[]);
    let addr = served.addr.as_str();
    let id = start_debate(
        addr,
        json!({"question": "Should we cache sessions in Redis?", "max_rounds": 2}),
    );
    let mut answered = 0;
    let sent = follow(addr, &id, None, |event| {
        if event.data["type"] == "checkpoint" {
            // The stage is journaled a moment after the question: ask until it is.
            let deadline = Instant::now() + Duration::from_secs(20);
            let (answer, text) = if answered == 0 {
                ("guide", "Weigh the cost of running Redis")
            } else {
                ("accept", "")
            };
            loop {
                let reply = http(
                    addr,
                    "POST",
                    &format!("/v1/debates/{id}/checkpoint"),
                    Some(TOKEN),
                    Some(&json!({"answer": answer, "text": text}).to_string()),
                );
                if reply.status == 200 {
                    break;
                }
                assert_eq!(reply.status, 409, "{}", reply.body);
                assert!(Instant::now() < deadline, "{}", reply.body);
                std::thread::sleep(Duration::from_millis(50));
            }
            answered += 1;
        }
        true
    });
    assert!(answered >= 1, "{sent:?}");
    let kinds: Vec<&str> = sent
        .iter()
        .map(|e| e.data["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.last(), Some(&"debate_completed"), "{kinds:?}");
    let shown = http(addr, "GET", &format!("/v1/debates/{id}"), Some(TOKEN), None).json();
    let checkpoint = &shown["checkpoints"][0];
    assert_eq!(checkpoint["decision"], "guide");
    assert_eq!(checkpoint["guidance"], "Weigh the cost of running Redis");
    assert_eq!(checkpoint["answered_by"], "the API via HTTP");
    assert!(
        stand_in.seen().iter().any(|s| s
            .body
            .to_string()
            .contains("Weigh the cost of running Redis")),
        "the guidance reached the seats"
    );
}

/// Starts a debate over the API and returns its id.
fn start_debate(addr: &str, body: Value) -> String {
    let created = http(
        addr,
        "POST",
        "/v1/debates",
        Some(TOKEN),
        Some(&body.to_string()),
    );
    assert_eq!(created.status, 201, "{}", created.body);
    created.json()["id"].as_str().unwrap().to_string()
}

/// The debates of `GET /v1/debates` with a status, by id.
fn statuses(addr: &str) -> Vec<(String, String)> {
    http(addr, "GET", "/v1/debates?limit=1000", Some(TOKEN), None)
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["id"].as_str().unwrap().to_string(),
                d["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Every turn of a debate by its key, from the journal.
fn turn_keys(home: &Home, id: &str) -> Vec<support::serving::TurnKey> {
    support::serving::turn_keys_of(&show_json(home, id))
}

/// A completed debate whose journal lacks its closing event (written, before they were one
/// write, apart from the status a server killed between them had already set) still ends
/// its event stream: after everything the journal holds, with the ending its row gives.
#[test]
fn a_completed_debate_missing_its_closing_event_still_ends_its_stream() {
    let stand_in = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    let served = serve(&home, &stand_in, &[]);
    let id = start_debate(
        &served.addr,
        json!({"question": support::serving::question(0), "max_rounds": 1, "checkpoints": false}),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while !statuses(&served.addr)
        .iter()
        .any(|(i, s)| *i == id && s == "completed")
    {
        assert!(Instant::now() < deadline, "{id} never completed");
        std::thread::sleep(Duration::from_millis(20));
    }
    let journal = rusqlite::Connection::open(home.database()).unwrap();
    let removed = journal
        .execute(
            "DELETE FROM events WHERE debate_id = ?1 AND kind = 'debate_completed'",
            [&id],
        )
        .unwrap();
    assert_eq!(removed, 1);
    // Followed on a thread, so that a stream that never ends fails the test instead of
    // holding it (the server's keep-alives outlast any read timeout).
    let (sent, received) = std::sync::mpsc::channel();
    let addr = served.addr.clone();
    let followed = id.clone();
    std::thread::spawn(move || {
        let _ = sent.send(follow(&addr, &followed, None, |_| true));
    });
    let events = received
        .recv_timeout(Duration::from_secs(60))
        .expect("the event stream of a completed debate never ended");
    let last = events.last().unwrap();
    assert_eq!(last.data["type"], "debate_completed");
    assert_eq!(last.data["status"], "completed");
    assert!(
        last.id.is_none(),
        "the ending comes from the row, not the journal"
    );
    assert!(
        events.len() > 5,
        "the journal's events came first: {events:?}"
    );
}

/// A server killed with SIGKILL mid-round and started again resumes the debates it was
/// running: all complete, none loses a journaled turn or journals one twice, each verifies;
/// a debate started from the command line and stopped is left alone.
#[test]
fn a_killed_server_resumes_its_debates_when_it_starts_again() {
    let stand_in = StandIn::start_in_background(Behaviour {
        latency: Duration::from_millis(150),
        ..Behaviour::default()
    });
    let home = Home::new();
    let served = serve(&home, &stand_in, &[]);
    let addr = served.addr.clone();
    // C12: the first names its caller; it is the server's to resume all the same.
    let ids: Vec<String> = (0..20)
        .map(|i| {
            let mut body = json!({"question": support::serving::question(i), "max_rounds": 2, "checkpoints": false});
            if i == 0 {
                body["initiated_by"] = json!("agent:ci-bot");
            }
            start_debate(&addr, body)
        })
        .collect();
    // Mid-round: once every debate has journaled a turn and none has finished.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let started = ids
            .iter()
            .filter(|id| !turn_keys(&home, id).is_empty())
            .count();
        if started == ids.len() {
            break;
        }
        assert!(Instant::now() < deadline, "only {started} debates spoke");
        std::thread::sleep(Duration::from_millis(20));
    }
    // A debate started from the command line, killed too: not the server's to resume.
    let (mut by_hand, first) = spawn_until_first_line(home.command(Some(&stand_in)).args([
        "--headless",
        "--no-checkpoints",
        "--max-rounds",
        "2",
        "Should the CLI cache in Redis?",
    ]));
    let by_hand_id = serde_json::from_str::<Value>(&first).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    by_hand.kill().unwrap();
    by_hand.wait().unwrap();
    let mut served = served;
    // SIGKILL: no shutdown, no lease released.
    served.child.kill().unwrap();
    served.child.wait().unwrap();
    // Which debates the kill caught running, from the journal (under load some may have
    // finished first): each of those is the restarted server's to resume.
    let listed = home.run(None, &["list", "--json", "--limit", "1000"]);
    let caught: Vec<String> = serde_json::from_slice::<Value>(&listed.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["status"] == "running" || d["status"] == "interrupted")
        .filter_map(|d| d["id"].as_str().map(str::to_string))
        .filter(|id| ids.contains(id))
        .collect();
    assert!(
        !caught.is_empty(),
        "the kill caught no debate running; the test shows nothing"
    );
    let before: Vec<Vec<support::serving::TurnKey>> =
        ids.iter().map(|id| turn_keys(&home, id)).collect();
    let asked_before = stand_in.seen().len();
    let again = serve(&home, &stand_in, &[]);
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let listed = statuses(&again.addr);
        let done = ids
            .iter()
            .filter(|id| listed.iter().any(|(i, s)| i == *id && s == "completed"))
            .count();
        if done == ids.len() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{done} of {} completed: {listed:?}",
            ids.len()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // No turn journaled before the kill was asked of the provider again.
    let resumed = &stand_in.seen()[asked_before..];
    // The check below tells debates apart by their questions; it means something only if
    // their requests after the restart are found that way.
    assert!(
        resumed
            .iter()
            .any(|seen| support::serving::debate_of(seen, ids.len()).is_some()),
        "no request after the restart carried a debate's question"
    );
    let again_asked = support::serving::asked_again(resumed, &before);
    assert!(
        again_asked.is_empty(),
        "asked again for turns journaled before the kill: {again_asked:?}"
    );
    for (id, before) in ids.iter().zip(&before) {
        let after = turn_keys(&home, id);
        for key in before {
            assert!(after.contains(key), "{id} lost {key:?}");
        }
        let mut unique = after.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(
            unique.len(),
            after.len(),
            "{id} journaled a turn twice: {after:?}"
        );
        let events = http(
            &again.addr,
            "GET",
            &format!("/v1/debates/{id}"),
            Some(TOKEN),
            None,
        );
        assert_eq!(events.status, 200);
        let audit = home.run(None, &["audit", id, "--verify"]);
        assert!(
            audit.status.success(),
            "{id}: {}",
            String::from_utf8_lossy(&audit.stdout)
        );
    }
    assert_eq!(show_json(&home, &ids[0])["initiated_by"], "agent:ci-bot");
    assert_eq!(show_json(&home, &ids[1])["initiated_by"], "server");
    // Killed mid-round: every debate it was running says it was resumed.
    let resumed = caught
        .iter()
        .filter(|id| {
            follow(&again.addr, id, None, |_| true).iter().any(|e| {
                e.data["type"] == "notice"
                    && e.data["message"]
                        .as_str()
                        .unwrap()
                        .contains("moot serve restarted")
            })
        })
        .count();
    assert_eq!(
        resumed,
        caught.len(),
        "only {resumed} of the {} caught running say they were resumed",
        caught.len()
    );
    let listed = statuses(&again.addr);
    let left = listed.iter().find(|(id, _)| *id == by_hand_id).unwrap();
    assert_eq!(
        left.1, "interrupted",
        "a command-line debate is not the server's to resume"
    );
}

/// A hundred debates at once in one server while 30 % of provider calls fail: all complete,
/// each journal verifies, and none holds another's turns (every debate's requests carried its
/// own question, and no debate journaled a step twice). The wall time beside one debate's is
/// `benches/serve.rs`'s.
#[test]
fn a_hundred_debates_run_at_once_in_one_server_without_crossing_under_faults() {
    let stand_in = StandIn::start_in_background(Behaviour {
        fault_rate: 0.3,
        ..Behaviour::default()
    });
    let home = Home::new();
    // Retries enough that a call failing at 30 % almost never fails for good (0.3^8).
    home.write_config("[retry]\nmax_attempts = 8\nbase_delay_ms = 2\nmax_delay_ms = 10\n");
    let served = serve(&home, &stand_in, &[]);
    let addr = served.addr.as_str();
    let question = |i: usize| format!("Should service number {i} cache in Redis or PostgreSQL?");
    let ids: Vec<String> = (0..100)
        .map(|i| {
            start_debate(
                addr,
                json!({"question": question(i), "max_rounds": 1, "checkpoints": false}),
            )
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(480);
    loop {
        let listed = statuses(addr);
        let ended: Vec<&(String, String)> = listed
            .iter()
            .filter(|(_, s)| s != "running" && s != "pending")
            .collect();
        if ended.len() == ids.len() {
            assert!(
                ended.iter().all(|(_, s)| s == "completed"),
                "not all completed: {ended:?}"
            );
            break;
        }
        assert!(Instant::now() < deadline, "{} of 100 ended", ended.len());
        std::thread::sleep(Duration::from_millis(100));
    }
    let shapes: Vec<Vec<(u64, String, String)>> = ids
        .iter()
        .map(|id| {
            let mut keys = turn_keys(&home, id);
            keys.sort();
            keys
        })
        .collect();
    for (id, keys) in ids.iter().zip(&shapes) {
        let mut unique = keys.clone();
        unique.dedup();
        assert_eq!(&unique, keys, "{id} journaled a step twice");
    }
    // Each debate's requests name its own question; a share of them failed and were retried.
    let seen = stand_in.seen();
    let failed = seen.iter().filter(|s| s.status == 500).count();
    assert!(
        failed * 5 > seen.len(),
        "{failed} of {} calls failed",
        seen.len()
    );
    let per_question: Vec<usize> = (0..100)
        .map(|i| {
            let asked = question(i);
            seen.iter()
                .filter(|s| s.body.to_string().contains(&asked))
                .count()
        })
        .collect();
    assert!(per_question.iter().all(|n| *n > 0), "{per_question:?}");
    // Every journal verifies (four audits at a time).
    std::thread::scope(|scope| {
        for part in ids.chunks(25) {
            let home = &home;
            scope.spawn(move || {
                for id in part {
                    let audit = home.run(None, &["audit", id, "--verify"]);
                    assert!(
                        audit.status.success(),
                        "{id}: {}",
                        String::from_utf8_lossy(&audit.stdout)
                    );
                }
            });
        }
    });
    let record = http(
        addr,
        "GET",
        &format!("/v1/debates/{}/record", ids[57]),
        Some(TOKEN),
        None,
    );
    assert!(record.body.contains(&question(57)), "{}", record.body);
}

/// A debate whose provider never answers is flagged as stalled once the watchdog's limit has
/// passed with no progress: in its events (what it waits on) and in the list's stage.
#[test]
fn the_watchdog_flags_a_debate_that_makes_no_progress() {
    let stand_in = StandIn::start_in_background(Behaviour {
        latency: Duration::from_secs(3600),
        ..Behaviour::default()
    });
    let home = Home::new();
    let served = serve(&home, &stand_in, &["--stall-seconds", "1"]);
    let addr = served.addr.as_str();
    let id = start_debate(
        addr,
        json!({"question": "Should we cache sessions in Redis?", "checkpoints": false}),
    );
    let sent = follow(addr, &id, None, |event| {
        !(event.data["type"] == "flag" && event.data["kind"] == "stalled")
    });
    let flag = &sent.last().unwrap().data;
    assert_eq!(flag["kind"], "stalled", "{sent:?}");
    let detail = flag["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("no progress for") && detail.contains("moderator's analysis"),
        "{detail}"
    );
    let listed = http(addr, "GET", "/v1/debates", Some(TOKEN), None).json();
    assert_eq!(listed[0]["stage"]["at"], "stalled", "{listed}");
    assert!(
        listed[0]["stage"]["waiting_on"]
            .as_str()
            .unwrap()
            .contains("analysis")
    );
    let shown = home.run(None, &["list"]);
    assert!(
        String::from_utf8_lossy(&shown.stdout).contains("stalled: no progress for"),
        "{}",
        String::from_utf8_lossy(&shown.stdout)
    );
}

/// A profile with fallbacks: when it keeps failing past its retries the next one serves the
/// turn and the rest of the debate, and the journal says which served each turn.
#[test]
fn a_failing_provider_falls_back_to_the_next_and_the_journal_says_so() {
    let failing = StandIn::start_in_background(Behaviour::default());
    failing.fault(FaultRule::new(Fault::ServerError).times(10_000));
    let backup = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    home.write_config(&format!(
        "provider = \"primary\"\n\n[retry]\nmax_attempts = 2\nbase_delay_ms = 5\nmax_delay_ms = 20\n\n\
         [providers.primary]\nkind = \"openai\"\nbase_url = \"{}\"\nmodel = \"primary-model\"\nfallback = [\"backup\"]\n\n\
         [providers.backup]\nkind = \"openai\"\nbase_url = \"{}\"\nmodel = \"backup-model\"\n",
        failing.openai_base(),
        backup.openai_base()
    ));
    let output = home.run(
        None,
        &[
            "--headless",
            "--no-checkpoints",
            "--max-rounds",
            "1",
            "Should we cache sessions in Redis?",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let id = of_type(&events(&output), "debate_created")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let turns = show_json(&home, &id)["turns"].as_array().unwrap().clone();
    assert!(!turns.is_empty());
    for turn in &turns {
        let model = turn["model"].as_str().unwrap();
        assert!(model.ends_with("(fallback backup)"), "{model}");
        assert_eq!(turn["status"], "ok", "{turn}");
    }
    assert!(!failing.seen().is_empty(), "the primary was tried first");
    assert!(!backup.seen().is_empty());
    let record = show_json(&home, &id)["synthesis"]["markdown"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        record.contains("served by a fallback provider after the first failed past its retries"),
        "{}",
        &record[record.len().saturating_sub(700)..]
    );
}

/// A debate cancelled over the API stops where it is and is resumed with a POST; a client whose
/// stream dropped mid-debate picks it up after the last event it had, with no event twice.
#[test]
fn a_cancelled_debate_resumes_over_the_api_and_a_dropped_stream_picks_up_where_it_was() {
    let stand_in = StandIn::start_in_background(Behaviour {
        latency: Duration::from_millis(100),
        ..Behaviour::default()
    });
    let home = Home::new();
    let served = serve(&home, &stand_in, &[]);
    let addr = served.addr.as_str();
    let id = start_debate(
        addr,
        json!({"question": "Should we cache sessions in Redis?", "max_rounds": 2, "checkpoints": false}),
    );
    // A stream dropped while the debate runs: five events taken, then the connection gone.
    let mut taken = 0;
    let first = follow(addr, &id, None, |_| {
        taken += 1;
        taken < 5
    });
    let last = first.iter().filter_map(|e| e.id).max().unwrap();
    let cancelled = http(
        addr,
        "POST",
        &format!("/v1/debates/{id}/cancel"),
        Some(TOKEN),
        None,
    );
    assert_eq!(cancelled.status, 202, "{}", cancelled.body);
    let deadline = Instant::now() + Duration::from_secs(30);
    let stopped = loop {
        let status = statuses(addr)
            .into_iter()
            .find(|(i, _)| *i == id)
            .map(|(_, s)| s)
            .unwrap();
        if status != "running" {
            break status;
        }
        assert!(Instant::now() < deadline, "it did not stop");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_ne!(stopped, "completed", "cancelled before its end");
    let resumed = http(
        addr,
        "POST",
        &format!("/v1/debates/{id}/resume"),
        Some(TOKEN),
        None,
    );
    assert_eq!(resumed.status, 202, "{}", resumed.body);
    let twice = http(
        addr,
        "POST",
        &format!("/v1/debates/{id}/resume"),
        Some(TOKEN),
        None,
    );
    assert_eq!(twice.status, 409, "{}", twice.body);
    // The rest, after the last event the dropped stream had: none of those again.
    let rest = follow(addr, &id, Some(last), |_| true);
    let ids: Vec<i64> = rest.iter().filter_map(|e| e.id).collect();
    assert!(ids.iter().all(|i| *i > last), "{last} then {ids:?}");
    assert_eq!(rest.last().unwrap().data["type"], "debate_completed");
    assert_eq!(rest.last().unwrap().data["status"], "completed");
    let done = http(
        addr,
        "POST",
        &format!("/v1/debates/{id}/resume"),
        Some(TOKEN),
        None,
    );
    assert_eq!(done.status, 409);
    assert!(done.error().contains("is completed"), "{}", done.body);
    let audit = home.run(None, &["audit", &id, "--verify"]);
    assert!(
        audit.status.success(),
        "{}",
        String::from_utf8_lossy(&audit.stdout)
    );
}

/// Waits (thirty seconds at most) until `id` is `status` in the server's list.
fn until_status(addr: &str, id: &str, status: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !statuses(addr).iter().any(|(i, s)| i == id && s == status) {
        assert!(Instant::now() < deadline, "{id} never became {status}");
        std::thread::yield_now();
    }
}

/// P3: the server checks the protocol that runs, not the request's field: with `protocol =
/// "code"` in its config a request naming none is refused, and with `"dialogue"` the debate
/// gathers nothing from the server's directory. No record lands in the server's working
/// directory unless `[serve] decisions_dir` names a directory, which is then used.
#[test]
fn a_servers_config_cannot_make_it_run_code_or_read_its_directory_and_records_go_where_it_says() {
    let stand_in = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    std::fs::create_dir_all(home.path().join("src")).unwrap();
    std::fs::write(
        home.path().join("src/cache.rs"),
        "// Redis caching for the session store\nfn cache() {}\n",
    )
    .unwrap();
    home.write_config("protocol = \"code\"\n");
    let served = serve(&home, &stand_in, &[]);
    let refused = http(
        served.addr.as_str(),
        "POST",
        "/v1/debates",
        Some(TOKEN),
        Some(r#"{"question": "Make app.py print 2", "checkpoints": false, "max_rounds": 1}"#),
    );
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(
        refused.error().contains("a server runs none"),
        "{}",
        refused.body
    );
    drop(served);

    home.write_config("protocol = \"dialogue\"\n");
    let served = serve(&home, &stand_in, &[]);
    let addr = served.addr.as_str();
    let id = start_debate(
        addr,
        json!({"question": "Should the session cache use Redis?", "checkpoints": false, "max_rounds": 1}),
    );
    until_status(addr, &id, "completed");
    let shown = show_json(&home, &id);
    assert_eq!(shown["protocol"], "dialogue");
    assert!(
        shown["config"]["protocol_settings"]["context"].is_null(),
        "no context gathered: {}",
        shown["config"]["protocol_settings"]["context"]
    );
    assert!(
        !home.path().join("docs").exists(),
        "a record was written into the server's directory"
    );
    let record = http(
        addr,
        "GET",
        &format!("/v1/debates/{id}/record"),
        Some(TOKEN),
        None,
    );
    assert_eq!(
        record.status, 200,
        "the journal keeps the record: {}",
        record.body
    );
    drop(served);

    home.write_config("[serve]\ndecisions_dir = \"records\"\n");
    let served = serve(&home, &stand_in, &[]);
    let addr = served.addr.as_str();
    let id = start_debate(
        addr,
        json!({"question": "Should we cache sessions in Redis?", "checkpoints": false, "max_rounds": 1}),
    );
    until_status(addr, &id, "completed");
    let written: Vec<_> = std::fs::read_dir(home.path().join("records"))
        .unwrap()
        .collect();
    assert_eq!(written.len(), 1, "{written:?}");
    assert!(!home.path().join("docs").exists());
}

/// P4: a code debate started (and stopped) on the command line is not resumed over HTTP: 409,
/// saying where to resume it, and no hook runs.
#[test]
fn a_code_debate_is_never_resumed_over_http() {
    let stand_in = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    calc_project(&home);
    // Stopped by its provider: a closed port fails it at its first call, resumable.
    let stopped = home
        .command(None)
        .env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
        .env("OPENAI_API_KEY", "sk-x")
        .args([
            "--headless",
            "--no-checkpoints",
            "--protocol",
            "code",
            "--test",
            "sh test.sh",
            "Make calc.sh add its two arguments",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(stopped.status.code(), Some(1), "{}", stderr(&stopped));
    let id = of_type(&events(&stopped), "debate_created")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let served = serve(&home, &stand_in, &[]);
    let refused = http(
        served.addr.as_str(),
        "POST",
        &format!("/v1/debates/{id}/resume"),
        Some(TOKEN),
        None,
    );
    assert_eq!(refused.status, 409, "{}", refused.body);
    assert!(
        refused
            .error()
            .contains(&format!("resume it with `moot resume {id}`")),
        "{}",
        refused.body
    );
    assert!(
        stand_in.seen().is_empty(),
        "nothing of it ran: {:?}",
        stand_in.seen().len()
    );
    assert_eq!(show_json(&home, &id)["status"], "failed");
}

/// C1/P5: a debate holds its place under `--max-debates` from the moment it is accepted, so a
/// burst of sixteen POSTs against a limit of two gets exactly two 201s and fourteen 429s; and a
/// resume takes a place too.
#[test]
fn admission_is_counted_when_a_debate_is_accepted_and_a_resume_counts_too() {
    let stand_in = StandIn::start_in_background(Behaviour {
        latency: Duration::from_millis(1500),
        ..Behaviour::default()
    });
    let home = Home::new();
    let served = serve(&home, &stand_in, &["--max-debates", "2"]);
    let addr = served.addr.clone();
    let start = std::sync::Arc::new(std::sync::Barrier::new(16));
    let burst: Vec<_> = (0..16)
        .map(|i| {
            let (addr, start) = (addr.clone(), start.clone());
            std::thread::spawn(move || {
                let body = json!({"question": format!("Burst {i}: should the queue be slow?"), "max_rounds": 3, "checkpoints": false});
                start.wait();
                let reply = http(&addr, "POST", "/v1/debates", Some(TOKEN), Some(&body.to_string()));
                (reply.status, reply.body)
            })
        })
        .collect();
    let replies: Vec<(u16, String)> = burst.into_iter().map(|t| t.join().unwrap()).collect();
    let accepted: Vec<&String> = replies
        .iter()
        .filter(|(s, _)| *s == 201)
        .map(|(_, b)| b)
        .collect();
    let refused: Vec<&String> = replies
        .iter()
        .filter(|(s, _)| *s == 429)
        .map(|(_, b)| b)
        .collect();
    assert_eq!((accepted.len(), refused.len()), (2, 14), "{replies:?}");
    assert!(refused[0].contains("--max-debates"), "{}", refused[0]);
    // A refusal journals nothing, so a load balancer may hand the request to another replica.
    let listed = statuses(&addr);
    assert_eq!(listed.len(), 2, "{listed:?}");
    let running = listed.iter().filter(|(_, s)| s == "running").count();
    assert_eq!(running, 2);
    // One stopped: its place comes back once its thread lets go, and a new debate takes it.
    let first: Value = serde_json::from_str(accepted[0]).unwrap();
    let first = first["id"].as_str().unwrap().to_string();
    let cancelled = http(
        &addr,
        "POST",
        &format!("/v1/debates/{first}/cancel"),
        Some(TOKEN),
        None,
    );
    assert_eq!(cancelled.status, 202, "{}", cancelled.body);
    let body = json!({"question": "Should the third debate wait its turn?", "max_rounds": 3, "checkpoints": false}).to_string();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let created = http(&addr, "POST", "/v1/debates", Some(TOKEN), Some(&body));
        if created.status == 201 {
            break;
        }
        assert_eq!(created.status, 429, "{}", created.body);
        assert!(
            Instant::now() < deadline,
            "the cancelled debate never gave its place back"
        );
        std::thread::yield_now();
    }
    // Two are running again, so resuming the stopped one is refused like a new debate.
    let resumed = http(
        &addr,
        "POST",
        &format!("/v1/debates/{first}/resume"),
        Some(TOKEN),
        None,
    );
    assert_eq!(resumed.status, 429, "{}", resumed.body);
    assert!(
        resumed.error().contains("--max-debates"),
        "{}",
        resumed.body
    );
    // P13: an id that names several debates is the client's mistake (400), not the server's.
    let ambiguous = http(&addr, "GET", "/v1/debates/D", Some(TOKEN), None);
    assert_eq!(ambiguous.status, 409, "{}", ambiguous.body);
    assert!(
        ambiguous.error().contains("give more of the id"),
        "{}",
        ambiguous.body
    );
}

/// POSTs `body` to `path` until the debate stands where the answer goes (409 until then, for
/// twenty seconds at most) and returns the first other reply.
fn post_when_waiting(addr: &str, path: &str, body: &str) -> Reply {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let reply = http(addr, "POST", path, Some(TOKEN), Some(body));
        if reply.status != 409 || Instant::now() >= deadline {
            return reply;
        }
        std::thread::yield_now();
    }
}

/// C2: an answer of the wrong kind is refused where it arrives (400, naming the answers that
/// would do) and journals nothing, so the right answer sent next is taken.
#[test]
fn a_checkpoint_answer_of_the_wrong_kind_is_refused_on_arrival_and_leaves_the_question_open() {
    let stand_in = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    let served = serve(&home, &stand_in, &[]);
    let addr = served.addr.as_str();
    let id = start_debate(
        addr,
        json!({"question": "Should we adopt property-based testing?", "max_rounds": 2}),
    );
    let path = format!("/v1/debates/{id}/checkpoint");
    let mut refused = None;
    let sent = follow(addr, &id, None, |event| {
        if event.data["type"] == "checkpoint" {
            if refused.is_none() {
                // C10: a malformed answer is named in the request's terms.
                for (body, expected) in [
                    (r#"{"answer": "guide"}"#, "text: `guide` needs its text"),
                    (
                        r#"{"answer": "g", "text": "x"}"#,
                        "answer: \"g\" is not an answer",
                    ),
                    (
                        r#"{"answer": "continue", "text": "x"}"#,
                        "text: `continue` takes no text",
                    ),
                ] {
                    let malformed = post_when_waiting(addr, &path, body);
                    assert_eq!(malformed.status, 400, "{body}: {}", malformed.body);
                    assert!(
                        malformed.error().contains(expected),
                        "{body}: {}",
                        malformed.body
                    );
                }
                let wrong = post_when_waiting(addr, &path, r#"{"answer": "choose", "text": "Z"}"#);
                refused = Some((wrong.status, wrong.error()));
            }
            let right = post_when_waiting(addr, &path, r#"{"answer": "continue"}"#);
            let right = if right.status == 400 {
                // A conclusion takes `accept`, not `continue`'s default meaning.
                post_when_waiting(addr, &path, r#"{"answer": "accept"}"#)
            } else {
                right
            };
            assert_eq!(right.status, 200, "{}", right.body);
        }
        true
    });
    let (status, message) = refused.expect("the debate asked");
    assert_eq!(status, 400, "{message}");
    assert!(
        message.contains("`choose` does not answer this question") && message.contains("continue"),
        "{message}"
    );
    assert_eq!(sent.last().unwrap().data["type"], "debate_completed");
    let shown = http(addr, "GET", &format!("/v1/debates/{id}"), Some(TOKEN), None).json();
    assert!(
        shown["checkpoints"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["decision"] != "choose"),
        "{}",
        shown["checkpoints"]
    );
}

/// C3: a gate is decided only while its debate waits there. Once the debate is stopped, an
/// approval is refused (409) and nothing is journaled; resumed, the debate asks again, and the
/// decision then given is journaled and streamed as `gate_decided`.
#[test]
fn a_gate_is_decided_only_while_its_debate_waits_and_the_decision_is_always_evented() {
    let stand_in = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    let served = serve(&home, &stand_in, &[]);
    let addr = served.addr.as_str();
    let id = start_debate(
        addr,
        json!({"question": "Should we adopt a service mesh now?", "max_rounds": 2, "gates": ["after_round"], "checkpoints": false}),
    );
    let mut gate = String::new();
    follow(addr, &id, None, |event| {
        if event.data["type"] == "gate_requested" {
            gate = event.data["gate"].as_str().unwrap().to_string();
            return false;
        }
        true
    });
    assert!(!gate.is_empty(), "the debate reached no gate");
    let cancelled = http(
        addr,
        "POST",
        &format!("/v1/debates/{id}/cancel"),
        Some(TOKEN),
        None,
    );
    assert_eq!(cancelled.status, 202, "{}", cancelled.body);
    let deadline = Instant::now() + Duration::from_secs(30);
    while statuses(addr)
        .iter()
        .any(|(i, s)| *i == id && s == "running")
    {
        assert!(Instant::now() < deadline, "it did not stop");
        std::thread::yield_now();
    }
    let approve = format!("/v1/debates/{id}/approve");
    let late = http(
        addr,
        "POST",
        &approve,
        Some(TOKEN),
        Some(r#"{"reviewer": "mallory"}"#),
    );
    assert_eq!(late.status, 409, "{}", late.body);
    assert!(
        late.error().contains("waits at no gate now"),
        "{}",
        late.body
    );
    let cli = home.run(None, &["approve", &id]);
    assert_eq!(
        cli.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&cli.stderr)
    );
    let gates = http(
        addr,
        "GET",
        &format!("/v1/debates/{id}/gates"),
        Some(TOKEN),
        None,
    )
    .json();
    assert!(gates[0]["decision"].is_null(), "{gates}");
    let resumed = http(
        addr,
        "POST",
        &format!("/v1/debates/{id}/resume"),
        Some(TOKEN),
        None,
    );
    assert_eq!(resumed.status, 202, "{}", resumed.body);
    let approved = post_when_waiting(addr, &approve, r#"{"reviewer": "alice"}"#);
    assert_eq!(approved.status, 200, "{}", approved.body);
    assert_eq!(approved.json()["gate"], gate.as_str());
    // Any later gate (after round 2) is approved as it comes.
    let sent = follow(addr, &id, None, |event| {
        if event.data["type"] == "gate_requested" && event.data["gate"] != gate.as_str() {
            let later = post_when_waiting(addr, &approve, r#"{"reviewer": "alice"}"#);
            assert!(matches!(later.status, 200 | 409), "{}", later.body);
        }
        true
    });
    let decided: Vec<&Value> = sent
        .iter()
        .filter(|e| e.data["type"] == "gate_decided" && e.data["gate"] == gate.as_str())
        .map(|e| &e.data)
        .collect();
    assert_eq!(decided.len(), 1, "{decided:?}");
    assert_eq!(decided[0]["by"], "alice via HTTP");
    assert_eq!(sent.last().unwrap().data["type"], "debate_completed");
}

/// The statuses `assets/openapi.yaml` lists for each route and method, read from its lines
/// (`  /…:` under the server's `/v1`, `    post:`, `        '409': …`).
fn documented_statuses() -> std::collections::HashMap<(String, String), Vec<u16>> {
    let spec = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/openapi.yaml"))
        .unwrap();
    let mut listed: std::collections::HashMap<(String, String), Vec<u16>> = Default::default();
    let (mut path, mut method) = (String::new(), String::new());
    for line in spec.lines() {
        if let Some(p) = line.strip_prefix("  /").and_then(|l| l.strip_suffix(':')) {
            path = format!("/v1/{p}");
        } else if let Some(m) = line.strip_prefix("    ").and_then(|l| l.strip_suffix(':'))
            && ["get", "post", "put", "delete"].contains(&m)
        {
            method = m.to_uppercase();
        } else if let Some(rest) = line.strip_prefix("        '")
            && let Some(code) = rest.get(..3).and_then(|c| c.parse::<u16>().ok())
        {
            listed
                .entry((path.clone(), method.clone()))
                .or_default()
                .push(code);
        }
    }
    listed
}

/// P13, C10: every status the server answers a route with is one `assets/openapi.yaml` lists
/// for that route: each documented way a request can fail, tried against a running server (a
/// contract check in the spirit of schemathesis, which is not in the suite).
#[test]
fn every_status_the_server_sends_is_one_the_openapi_file_lists() {
    let stand_in = StandIn::start_in_background(Behaviour::default());
    let home = Home::new();
    let served = serve(&home, &stand_in, &[]);
    let addr = served.addr.as_str();
    let listed = documented_statuses();
    let body = json!({"question": "Should we cache sessions in Redis?", "max_rounds": 1, "checkpoints": false}).to_string();
    let id = start_debate(addr, serde_json::from_str(&body).unwrap());
    start_debate(
        addr,
        json!({"question": "Should we shard the queue?", "max_rounds": 1, "checkpoints": false}),
    );
    // One that waits at its first checkpoint, so it runs with no record yet.
    let waiting = start_debate(
        addr,
        json!({"question": "Should we adopt gRPC?", "max_rounds": 2}),
    );
    until_status(addr, &id, "completed");
    let big = format!("{{\"question\": \"{}\"}}", "x".repeat(300 * 1024));
    let d = |tail: &str| format!("/v1/debates/{id}{tail}");
    let none = |tail: &str| format!("/v1/debates/DEB-nosuch99{tail}");
    type Case<'a> = (
        &'a str,
        &'a str,
        String,
        Option<&'a str>,
        Option<String>,
        u16,
    );
    let cases: Vec<Case> = vec![
        (
            "/v1/debates",
            "POST",
            "/v1/debates".into(),
            None,
            Some(body.clone()),
            401,
        ),
        (
            "/v1/debates",
            "POST",
            "/v1/debates".into(),
            Some(TOKEN),
            Some("{".into()),
            400,
        ),
        (
            "/v1/debates",
            "POST",
            "/v1/debates".into(),
            Some(TOKEN),
            Some(big),
            413,
        ),
        (
            "/v1/debates",
            "GET",
            "/v1/debates?status=bogus".into(),
            Some(TOKEN),
            None,
            400,
        ),
        (
            "/v1/debates",
            "POST",
            "/v1/debates".into(),
            Some(TOKEN),
            Some(json!({"question": "Which cache?", "provider": "elsewhere"}).to_string()),
            409,
        ),
        (
            "/v1/debates",
            "GET",
            "/v1/debates?limit=10001".into(),
            Some(TOKEN),
            None,
            400,
        ),
        (
            "/v1/debates",
            "GET",
            "/v1/debates?limit=-1".into(),
            Some(TOKEN),
            None,
            400,
        ),
        (
            "/v1/debates/{id}/record",
            "GET",
            format!("/v1/debates/{waiting}/record"),
            Some(TOKEN),
            None,
            409,
        ),
        ("/v1/debates/{id}", "GET", none(""), Some(TOKEN), None, 404),
        (
            "/v1/debates/{id}",
            "GET",
            "/v1/debates/D".into(),
            Some(TOKEN),
            None,
            409,
        ),
        ("/v1/debates/{id}", "GET", d(""), None, None, 401),
        (
            "/v1/debates/{id}/record",
            "GET",
            none("/record"),
            Some(TOKEN),
            None,
            404,
        ),
        (
            "/v1/debates/{id}/checkpoint",
            "POST",
            d("/checkpoint"),
            Some(TOKEN),
            Some(r#"{"answer": "continue"}"#.into()),
            409,
        ),
        (
            "/v1/debates/{id}/checkpoint",
            "POST",
            d("/checkpoint"),
            Some(TOKEN),
            Some("{}".into()),
            400,
        ),
        (
            "/v1/debates/{id}/checkpoint",
            "POST",
            none("/checkpoint"),
            Some(TOKEN),
            Some(r#"{"answer": "continue"}"#.into()),
            404,
        ),
        (
            "/v1/debates/{id}/approve",
            "POST",
            d("/approve"),
            Some(TOKEN),
            Some(r#"{"reviewer": "ana"}"#.into()),
            409,
        ),
        (
            "/v1/debates/{id}/approve",
            "POST",
            d("/approve"),
            Some(TOKEN),
            Some(r#"{"reviewer": " "}"#.into()),
            400,
        ),
        (
            "/v1/debates/{id}/approve",
            "POST",
            none("/approve"),
            Some(TOKEN),
            Some(r#"{"reviewer": "ana"}"#.into()),
            404,
        ),
        (
            "/v1/debates/{id}/reject",
            "POST",
            d("/reject"),
            Some(TOKEN),
            Some(r#"{"reviewer": "ana"}"#.into()),
            400,
        ),
        (
            "/v1/debates/{id}/reject",
            "POST",
            none("/reject"),
            Some(TOKEN),
            Some(r#"{"reviewer": "ana", "reason": "no"}"#.into()),
            404,
        ),
        (
            "/v1/debates/{id}/gates",
            "GET",
            none("/gates"),
            Some(TOKEN),
            None,
            404,
        ),
        (
            "/v1/debates/{id}/audit",
            "GET",
            d("/audit"),
            Some(TOKEN),
            None,
            200,
        ),
        (
            "/v1/debates/{id}/audit",
            "GET",
            none("/audit"),
            Some(TOKEN),
            None,
            404,
        ),
        (
            "/v1/debates/{id}/events",
            "GET",
            none("/events"),
            Some(TOKEN),
            None,
            404,
        ),
        (
            "/v1/debates/{id}/events",
            "GET",
            d("/events"),
            None,
            None,
            401,
        ),
        (
            "/v1/debates/{id}/resume",
            "POST",
            d("/resume"),
            Some(TOKEN),
            None,
            409,
        ),
        (
            "/v1/debates/{id}/resume",
            "POST",
            none("/resume"),
            Some(TOKEN),
            None,
            404,
        ),
        (
            "/v1/debates/{id}/cancel",
            "POST",
            d("/cancel"),
            Some(TOKEN),
            None,
            409,
        ),
        (
            "/v1/debates/{id}/cancel",
            "POST",
            none("/cancel"),
            Some(TOKEN),
            None,
            404,
        ),
    ];
    for (route, method, path, token, body, expected) in cases {
        let reply = http(addr, method, &path, token, body.as_deref());
        assert_eq!(reply.status, expected, "{method} {path}: {}", reply.body);
        let documented = listed
            .get(&(route.to_string(), method.to_string()))
            .unwrap_or_else(|| panic!("{method} {route} is not in assets/openapi.yaml"));
        assert!(
            documented.contains(&reply.status),
            "{method} {route} answered {} (documented: {documented:?}): {}",
            reply.status,
            reply.body
        );
        if reply.status >= 400 {
            assert!(!reply.error().is_empty(), "{method} {path}: {}", reply.body);
        }
    }
    // C12: the trail over HTTP is the one `moot audit --json` prints.
    let trail = http(addr, "GET", &d("/audit"), Some(TOKEN), None).json();
    let printed = home.run(None, &["audit", &id, "--json"]);
    let printed: Value = serde_json::from_slice(&printed.stdout).unwrap();
    assert_eq!(trail["entries"], printed["entries"]);
    assert_eq!(trail["chain"]["entries"], printed["chain"]["entries"]);
    assert!(!trail["entries"].as_array().unwrap().is_empty());
}

/// Two `moot serve` replicas on one PostgreSQL journal (issue 73), each in a home of its own
/// as two hosts would be: a debate started on A is followed over SSE on B, which reads it from
/// the shared journal, in order and with no gap; its gate, requested on A, is approved with a
/// POST to B, and the debate goes on to its end on A; both list it, and it verifies.
#[test]
fn a_gate_requested_on_one_replica_is_approved_on_another_sharing_its_postgres_journal() {
    let Some(postgres) = crate::postgres_server::Postgres::start() else {
        return;
    };
    let url = postgres.database();
    let stand_in = StandIn::start_in_background(converging_panel());
    let (home_a, home_b) = (Home::new(), Home::new());
    let replica_a = serve(&home_a, &stand_in, &["--journal", &url]);
    let replica_b = serve(&home_b, &stand_in, &["--journal", &url]);
    let (a, b) = (replica_a.addr.as_str(), replica_b.addr.as_str());
    let id = start_debate(
        a,
        json!({
            "question": "Which sync model should the app ship with?",
            "protocol": "panel",
            "options": ["A: Local-first sync", "B: Server-authoritative", "C: Manual export"],
            "gates": ["before_synthesis"],
            "checkpoints": false
        }),
    );
    let mut approved = false;
    let sent = follow(b, &id, None, |event| {
        if event.data["type"] == "gate_requested" && !approved {
            approved = true;
            let reply = http(
                b,
                "POST",
                &format!("/v1/debates/{id}/approve"),
                Some(TOKEN),
                Some(r#"{"reviewer": "bob", "reason": "approved from the other replica"}"#),
            );
            assert_eq!(reply.status, 200, "{}", reply.body);
        }
        true
    });
    assert!(approved, "B's stream showed the gate A requested: {sent:?}");
    let kinds: Vec<&str> = sent
        .iter()
        .map(|e| e.data["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.last(), Some(&"debate_completed"), "{kinds:?}");
    assert!(
        sent.iter()
            .any(|e| e.data["type"] == "gate_decided" && e.data["by"] == "bob via HTTP"),
        "{kinds:?}"
    );
    // B saw every journaled event of the debate, in order, none missing.
    let ids: Vec<i64> = sent.iter().filter_map(|e| e.id).collect();
    assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "{ids:?}");
    let journaled = home_b.run(None, &["show", &id, "--json", "--journal", &url]);
    let shown: Value = serde_json::from_slice(&journaled.stdout).unwrap();
    assert_eq!(shown["status"], "completed");
    for replica in [a, b] {
        let listed = http(replica, "GET", "/v1/debates", Some(TOKEN), None).json();
        assert_eq!(listed[0]["id"], id.as_str(), "{listed}");
    }
    // A cancel sent to B of a debate A runs (waiting at its checkpoint) reaches it there.
    let waiting = start_debate(
        a,
        json!({"question": "Should we cache sessions in Redis?", "max_rounds": 2}),
    );
    follow(b, &waiting, None, |e| e.data["type"] != "checkpoint");
    let cancelled = http(
        b,
        "POST",
        &format!("/v1/debates/{waiting}/cancel"),
        Some(TOKEN),
        None,
    );
    assert_eq!(cancelled.status, 202, "{}", cancelled.body);
    assert_eq!(cancelled.json()["elsewhere"], true);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let status = http(
            b,
            "GET",
            &format!("/v1/debates/{waiting}"),
            Some(TOKEN),
            None,
        )
        .json()["status"]
            .clone();
        if status == "paused" {
            break;
        }
        assert!(Instant::now() < deadline, "still {status} after the cancel");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop((replica_a, replica_b));
    let audit = home_b.run(None, &["audit", &id, "--verify", "--journal", &url]);
    assert!(
        audit.status.success(),
        "{}",
        String::from_utf8_lossy(&audit.stdout)
    );
}

/// A stream on one replica of a debate another runs sends each event as the journal commits
/// it (the journal's `NOTIFY`), not when it next looks (every 2 s): each time the debate
/// waits at a checkpoint and the test answers it on A, B sends the next event within a
/// second.
#[test]
fn a_replica_streams_another_replicas_events_as_they_commit() {
    let Some(postgres) = crate::postgres_server::Postgres::start() else {
        return;
    };
    let url = postgres.database();
    let stand_in = StandIn::start_in_background(Behaviour::default());
    let (home_a, home_b) = (Home::new(), Home::new());
    let replica_a = serve(&home_a, &stand_in, &["--journal", &url]);
    let replica_b = serve(&home_b, &stand_in, &["--journal", &url]);
    let (a, b) = (replica_a.addr.clone(), replica_b.addr.as_str());
    let id = start_debate(
        &a,
        json!({"question": "Should we cache sessions in Redis?", "max_rounds": 4,
               "lessons": false}),
    );
    let mut answered: Option<Instant> = None;
    let mut waits = Vec::new();
    follow(b, &id, None, |event| {
        if let Some(at) = answered.take() {
            waits.push(at.elapsed());
        }
        if event.data["type"] == "checkpoint" {
            // Between rounds, go on; at the moderator's conclusion, accept it.
            let answer = match event.data["kind"].as_str() {
                Some("checkpoint") => r#"{"answer": "continue"}"#,
                _ => r#"{"answer": "accept"}"#,
            };
            let reply = http(
                &a,
                "POST",
                &format!("/v1/debates/{id}/checkpoint"),
                Some(TOKEN),
                Some(answer),
            );
            assert_eq!(reply.status, 200, "{}", reply.body);
            answered = Some(Instant::now());
        }
        event.data["type"] != "debate_completed"
    });
    assert!(waits.len() >= 3, "{} checkpoints answered", waits.len());
    assert!(
        waits.iter().all(|wait| *wait < Duration::from_secs(1)),
        "B waited {waits:?} for A's next event after each answer"
    );
}

/// `moot serve` in `home` on the journal at `url`, its leases naming `host` (as a replica on
/// a machine of its own would: another host's death is seen only by its silence).
/// What it says on stderr goes to `errors.log` in its home (`said_by`).
fn replica(home: &Home, stand_in: &StandIn, url: &str, host: &str) -> Served {
    replica_of(home.command(Some(stand_in)), home, url, host)
}

/// `replica`, run by `command` (moot itself, or moot under a shifted clock).
fn replica_of(mut command: std::process::Command, home: &Home, url: &str, host: &str) -> Served {
    let errors = std::fs::File::create(home.path().join("errors.log")).unwrap();
    Served::start_saying_errors_to(
        command
            .env("MOOT_SERVE_TOKEN", TOKEN)
            .env("MOOT_HOST", host)
            .args(["serve", "--listen", "127.0.0.1:0", "--journal", url]),
        errors.into(),
    )
}

/// Replicas on hosts whose clocks disagree: one whose wall clock runs 40 s behind the others'
/// (and the journal server's) keeps the debate it runs while it renews its lease. Nobody
/// reads it as interrupted and no other replica takes it over, because a heartbeat is stamped
/// and judged by the journal server's clock, not by each host's own. Its takeover is 3 s,
/// so a heartbeat judged by the other host's clock would read as 40 s old and dead.
#[test]
fn a_replica_whose_clock_is_behind_keeps_its_debates_while_it_renews_them() {
    let Some(postgres) = crate::postgres_server::Postgres::start() else {
        return;
    };
    let url = postgres.database();
    let stand_in = StandIn::start_in_background(Behaviour {
        latency: Duration::from_millis(300),
        ..Behaviour::default()
    });
    let homes = [Home::new(), Home::new()];
    for home in &homes {
        home.write_config("[serve]\ntakeover_seconds = 3\n");
    }
    let behind = replica_of(
        homes[0].command_at_shifted_clock("-40s", Some(&stand_in)),
        &homes[0],
        &url,
        "replica-behind",
    );
    let _other = replica(&homes[1], &stand_in, &url, "replica-on-time");
    let id = start_debate(
        &behind.addr,
        json!({"question": "Should we cache sessions in Redis?", "max_rounds": 2,
               "checkpoints": false, "lessons": false}),
    );
    let journal = moot::store::Store::connect(&url, &homes[1].path().join("unused.db")).unwrap();
    let started = Instant::now();
    let mut looks = 0;
    loop {
        let status = journal.debate(&id).unwrap().status;
        if status == DebateStatus::Completed {
            break;
        }
        looks += 1;
        assert_eq!(
            status,
            DebateStatus::Running,
            "{:.1} s in, look {looks}; the replicas said:\n{}",
            started.elapsed().as_secs_f64(),
            said_by(&homes)
        );
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "it never completed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // It ran across several heartbeats and takeover scans (each half a second here).
    assert!(
        started.elapsed() > Duration::from_secs(3),
        "over in {:?}",
        started.elapsed()
    );
    assert!(
        !support::serving::says_taken_over(&journal, &id),
        "taken over from a live replica"
    );
    let said = said_by(&homes);
    assert!(!said.contains("went on elsewhere"), "{said}");
}

/// What the replicas in `homes` said on stderr, each under its home's name.
fn said_by(homes: &[Home]) -> String {
    support::serving::errors_logged(homes.iter().map(Home::path))
}

/// Replicas share the work (issue 73): three replicas on one PostgreSQL journal, each as if
/// on a host of its own; 100 debates started round-robin; one replica killed (SIGKILL: no
/// lease released) once every debate has spoken. Its debates are taken over by the others
/// once its heartbeat stops; all 100 complete with no turn lost, none journaled twice and
/// none asked of the provider again; each taken over says so; every chain holds; and a
/// follower on a surviving replica of each debate the dead one ran saw every event the
/// journal holds for it, in order, across the takeover.
#[test]
fn a_killed_replicas_debates_are_taken_over_by_the_others_on_the_same_journal() {
    let Some(postgres) = crate::postgres_server::Postgres::start() else {
        return;
    };
    let url = postgres.database();
    let stand_in = StandIn::start_in_background(Behaviour {
        latency: Duration::from_millis(150),
        ..Behaviour::default()
    });
    let homes = [Home::new(), Home::new(), Home::new()];
    for home in &homes {
        home.write_config("[serve]\ntakeover_seconds = 3\n");
    }
    let mut replicas: Vec<Served> = homes
        .iter()
        .zip(["replica-a", "replica-b", "replica-c"])
        .map(|(home, host)| replica(home, &stand_in, &url, host))
        .collect();
    let addrs: Vec<String> = replicas.iter().map(|r| r.addr.clone()).collect();
    const DEBATES: usize = 100;
    let ids: Vec<String> = (0..DEBATES)
        .map(|i| {
            start_debate(
                &addrs[i % 3],
                json!({"question": support::serving::question(i), "max_rounds": 2,
                       "checkpoints": false, "lessons": false}),
            )
        })
        .collect();
    // Replica B follows every debate A runs, from the shared journal, while A runs it and
    // after.
    let followers: Vec<_> = ids
        .iter()
        .step_by(3)
        .map(|id| {
            let (b, id) = (addrs[1].clone(), id.clone());
            std::thread::spawn(move || {
                follow(&b, &id, None, |e| e.data["type"] != "debate_completed")
            })
        })
        .collect();
    let journal = moot::store::Store::connect(&url, &homes[1].path().join("unused.db")).unwrap();
    // Mid-round: once every debate has journaled a turn.
    let deadline = Instant::now() + Duration::from_secs(120);
    while ids
        .iter()
        .any(|id| support::serving::turn_keys_in(&journal, id).is_empty())
    {
        assert!(Instant::now() < deadline, "the debates never spoke");
        std::thread::sleep(Duration::from_millis(20));
    }
    let before: Vec<Vec<support::serving::TurnKey>> = ids
        .iter()
        .map(|id| support::serving::turn_keys_in(&journal, id))
        .collect();
    let asked_before = stand_in.seen().len();
    crate::postgres_server::kill_replica(&url, &mut replicas[0].child, "replica-a");
    let running_on_a: Vec<&String> = ids
        .iter()
        .step_by(3)
        .filter(|id| journal.debate(id).unwrap().status == DebateStatus::Running)
        .collect();
    assert!(
        !running_on_a.is_empty(),
        "the kill came after A's debates had ended"
    );
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        let done = ids
            .iter()
            .filter(|id| journal.debate(id).unwrap().status == DebateStatus::Completed)
            .count();
        if done == DEBATES {
            break;
        }
        assert!(Instant::now() < deadline, "{done} of {DEBATES} completed");
        std::thread::sleep(Duration::from_millis(50));
    }
    let resumed = &stand_in.seen()[asked_before..];
    let again = support::serving::asked_again(resumed, &before);
    assert!(
        again.is_empty(),
        "asked again for journaled turns: {again:?}"
    );
    for (id, before) in ids.iter().zip(&before) {
        let after = support::serving::turn_keys_in(&journal, id);
        for key in before {
            assert!(after.contains(key), "{id} lost {key:?}");
        }
        let mut unique = after.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(
            unique.len(),
            after.len(),
            "{id} journaled a turn twice: {after:?}"
        );
        assert!(
            journal.check_chain(id).unwrap().holds(),
            "{id}'s chain breaks"
        );
    }
    for id in &running_on_a {
        assert!(
            support::serving::says_taken_over(&journal, id),
            "{id} does not say it was taken over; its last events, newest first: {:?}; \
             the replicas said:\n{}",
            support::serving::last_event_kinds(&journal, id, 6),
            said_by(&homes)
        );
    }
    let audit = homes[2].run(
        None,
        &["audit", running_on_a[0], "--verify", "--journal", &url],
    );
    assert!(
        audit.status.success(),
        "{}",
        String::from_utf8_lossy(&audit.stdout)
    );
    // Each follower saw every journaled event of its debate, in order, across the takeover.
    for (follower, id) in followers.into_iter().zip(ids.iter().step_by(3)) {
        let seen: Vec<i64> = follower
            .join()
            .unwrap()
            .iter()
            .filter_map(|e| e.id)
            .collect();
        let journaled: Vec<i64> = journal
            .events_after(id, 0)
            .unwrap()
            .into_iter()
            .map(|(seq, _)| seq)
            .collect();
        assert_eq!(
            seen, journaled,
            "the follower of {id} missed events, or saw them out of order"
        );
    }
}

/// A replica that finds its lease held by another (one that took it for dead: a stall, a
/// partition) stops running the debate at its next heartbeat and writes nothing more to it:
/// no turn, no event, no "paused"; the debate goes on under its new holder alone.
#[test]
fn a_replica_that_lost_a_debates_lease_stops_writing_to_it() {
    let Some(postgres) = crate::postgres_server::Postgres::start() else {
        return;
    };
    let url = postgres.database();
    let stand_in = StandIn::start_in_background(Behaviour {
        latency: Duration::from_millis(300),
        ..Behaviour::default()
    });
    let home = Home::new();
    home.write_config("[serve]\ntakeover_seconds = 3\n");
    let mut child = home
        .command(Some(&stand_in))
        .env("MOOT_SERVE_TOKEN", TOKEN)
        .env("MOOT_HOST", "replica-a")
        .args(["serve", "--listen", "127.0.0.1:0", "--journal", &url])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut first,
    )
    .unwrap();
    let addr = first
        .trim()
        .strip_prefix("moot serve: listening on http://")
        .unwrap_or_else(|| panic!("moot serve said {first:?}"))
        .to_string();
    let said = {
        let (tell, said) = std::sync::mpsc::channel::<String>();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in
                std::io::BufRead::lines(std::io::BufReader::new(stderr)).map_while(Result::ok)
            {
                let _ = tell.send(line);
            }
        });
        said
    };
    let id = start_debate(
        &addr,
        json!({"question": "Should we cache sessions in Redis?", "max_rounds": 3,
               "checkpoints": false, "lessons": false}),
    );
    let journal = moot::store::Store::connect(&url, &home.path().join("unused.db")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while support::serving::turn_keys_in(&journal, &id).is_empty() {
        assert!(Instant::now() < deadline, "the debate never spoke");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Another replica takes the lease (as one that judged A dead would), and keeps it.
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let steal = |client: &mut postgres::Client| {
        client
            .execute(
                "UPDATE debates SET lease_pid = 4242, lease_host = 'replica-z',
                    lease_at = extract(epoch from now())::bigint,
                    lease_since = extract(epoch from now())::bigint, lease_ttl = 60
                 WHERE id = $1",
                &[&id],
            )
            .unwrap();
    };
    steal(&mut client);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let line = said
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("replica A never said it stopped");
        if line.contains(&id) && line.contains("went on elsewhere") {
            break;
        }
    }
    // It stopped without a word to the journal: no pause, no ending; the new holder's.
    let events = journal.events(&id).unwrap();
    assert!(
        !events.iter().any(|e| matches!(e,
            moot::debate::Event::Notice { message } if message.contains("paused"))
            || matches!(e, moot::debate::Event::DebateCompleted { .. })),
        "A wrote its stop to the journal: {events:?}"
    );
    let asked = stand_in.seen().len();
    let turns = journal.turns(&id).unwrap().len();
    // Its debate's thread has ended: killing A now changes nothing the journal holds.
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(journal.turns(&id).unwrap().len(), turns);
    assert_eq!(journal.events(&id).unwrap(), events);
    assert_eq!(stand_in.seen().len(), asked);
    assert_eq!(journal.debate(&id).unwrap().status, DebateStatus::Running);
}
