//! `moot serve` started by a test or a benchmark: its address read from the line it prints
//! first, and the server killed when dropped, so a failing test leaves none running.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};

pub struct Serving {
    pub child: Child,
    /// `host:port`, as it printed it.
    pub addr: String,
}

impl Serving {
    /// Spawns `command` (a `moot serve --listen 127.0.0.1:0 …`) and waits for its address.
    pub fn start(command: &mut Command) -> Serving {
        Serving::start_saying_errors_to(command, Stdio::null())
    }

    /// `start`, its errors written to `errors` (a file a failing test shows).
    pub fn start_saying_errors_to(command: &mut Command, errors: Stdio) -> Serving {
        let (child, first) = spawn_with_errors_to(command, errors);
        let addr = first
            .trim()
            .strip_prefix("moot serve: listening on http://")
            .unwrap_or_else(|| panic!("moot serve said {first:?}"))
            .to_string();
        Serving { child, addr }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

/// Spawns `command` with no input and its errors dropped, and reads the first line it prints
/// (the rest of its output is not read).
pub fn spawn_until_first_line(command: &mut Command) -> (Child, String) {
    spawn_with_errors_to(command, Stdio::null())
}

/// `spawn_until_first_line`, its errors written to `errors`.
fn spawn_with_errors_to(command: &mut Command, errors: Stdio) -> (Child, String) {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(errors)
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    (child, first)
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A journaled turn by its key: round, phase, seat.
pub type TurnKey = (u64, String, String);

/// The turns debate `id` has journaled, by key, read from the journal itself.
#[allow(
    dead_code,
    reason = "the replica tests and bench use it; other serving tests do not"
)]
pub fn turn_keys_in(journal: &moot::store::Store, id: &str) -> Vec<TurnKey> {
    journal
        .turns(id)
        .unwrap()
        .iter()
        .map(|t| (u64::from(t.round), t.phase.to_string(), t.seat.clone()))
        .collect()
}

/// Whether debate `id`'s journal says a replica took it over from a dead one.
#[allow(
    dead_code,
    reason = "the replica tests and bench use it; other serving tests do not"
)]
pub fn says_taken_over(journal: &moot::store::Store, id: &str) -> bool {
    journal.events(id).is_ok_and(|events| {
        events.iter().any(|e| {
            matches!(e, moot::debate::Event::Notice { message }
                if message.contains("took it over where its journal left it"))
        })
    })
}

/// The kinds of debate `id`'s last `n` events, newest first: where it stood, for a failing
/// check to show.
#[allow(
    dead_code,
    reason = "the replica tests and bench use it; other serving tests do not"
)]
pub fn last_event_kinds(journal: &moot::store::Store, id: &str, n: usize) -> Vec<String> {
    journal
        .events(id)
        .unwrap_or_default()
        .iter()
        .rev()
        .take(n)
        .map(|e| serde_json::to_value(e).unwrap()["type"].to_string())
        .collect()
}

/// What the servers started in `dirs` wrote to `errors.log` there, each under its
/// directory's name, for a failing check to show.
#[allow(
    dead_code,
    reason = "the replica tests and bench use it; other serving tests do not"
)]
pub fn errors_logged<'a>(dirs: impl IntoIterator<Item = &'a std::path::Path>) -> String {
    dirs.into_iter()
        .map(|dir| {
            let said = std::fs::read_to_string(dir.join("errors.log")).unwrap_or_default();
            format!("--- {}:\n{said}", dir.display())
        })
        .collect()
}

/// The turns a `moot show --json` document (or `GET /v1/debates/{id}`) lists, by key.
pub fn turn_keys_of(shown: &Value) -> Vec<TurnKey> {
    shown["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["round"].as_u64().unwrap(),
                t["phase"].as_str().unwrap().to_string(),
                t["seat"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Debate `i`'s question in the serve tests and benchmark. Every request of that debate
/// carries its [`mark`], whatever the moderator makes of the rest.
pub fn question(i: usize) -> String {
    format!("{} in Redis or PostgreSQL?", mark(i))
}

/// What tells debate `i`'s requests apart (no mark is part of another's).
fn mark(i: usize) -> String {
    format!("Should service {i} cache")
}

/// Which of debates `0..count` a request served, by the [`question`] it carries.
pub fn debate_of(seen: &super::Seen, count: usize) -> Option<usize> {
    let text = seen.body.to_string();
    (0..count).find(|&i| text.contains(mark(i).as_str()))
}

/// The requests of `seen` that asked the provider again for a turn journaled before: debate
/// `i` asked [`question`]`(i)` and had journaled `before[i]`; a moderator's request names no
/// seat. Each as its debate's index and the key.
pub fn asked_again(seen: &[super::Seen], before: &[Vec<TurnKey>]) -> Vec<(usize, TurnKey)> {
    seen.iter()
        .filter_map(|seen| {
            let debate = debate_of(seen, before.len())?;
            let key = (
                u64::from(seen.round),
                seen.kind.clone(),
                seen.seat.clone().unwrap_or_else(|| "moderator".into()),
            );
            before[debate].contains(&key).then_some((debate, key))
        })
        .collect()
}

/// One request to a server at `addr` with bearer `token` (`Connection: close`): its status
/// and body.
pub fn request(
    addr: &str,
    token: &str,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> (u16, String) {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    let mut text = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAuthorization: Bearer {token}\r\n"
    );
    if let Some(body) = body {
        text.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ));
    } else {
        text.push_str("\r\n");
    }
    stream.write_all(text.as_bytes()).unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    let status = reply.split_whitespace().nth(1).unwrap().parse().unwrap();
    let body = reply
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

/// Starts debate `i` ([`question`]`(i)`) of `rounds` rounds, no checkpoints or lessons; its id.
pub fn start(addr: &str, token: &str, i: usize, rounds: u32) -> String {
    let body = serde_json::json!({
        "question": question(i),
        "max_rounds": rounds,
        "checkpoints": false,
        "lessons": false,
    })
    .to_string();
    let (status, reply) = request(addr, token, "POST", "/v1/debates", Some(&body));
    assert_eq!(status, 201, "{reply}");
    let at = reply.find("DEB-").unwrap();
    reply[at..at + 12].to_string()
}
