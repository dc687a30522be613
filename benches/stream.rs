//! Decoding a server's stream when one line never ends: 10, 20 and 40 MB with no newline, fed
//! in 8 KiB chunks as the network hands them over. Target: linear (40 MB at most 5x 10 MB).
//! `cargo bench --bench stream`.
//!
//! One decoder per size decodes the line again and again, so its buffer is already grown:
//! what is timed is the decoding. A fresh decoder also pays the kernel's first touch of new
//! pages, which glibc makes uneven across these sizes (buffers past its 32 MB mmap threshold
//! get fresh pages every time, smaller ones reuse the heap); `a_line_in_a_fresh_decoder`
//! shows that cost beside it.
//!
//! Before them, once: a server on 127.0.0.1 streams a 100 MB reply (as ordinary deltas, then as
//! one line that never ends) to the OpenAI-compatible provider, and the process's peak memory
//! above its baseline is printed (target: under 64 MB; the reply is cut at its byte cap).

use moot::llm::endpoint::Endpoint;
use moot::llm::sse::SseDecoder;
use moot::llm::{
    CapabilityCache, ChatMessage, ChatRequest, Provider, RequestLabel, openai::OpenAiProvider,
};
use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

fn main() {
    for one_line in [false, true] {
        reply_memory(100_000_000, one_line);
    }
    divan::main();
}

/// The process's resident set and its high-water mark, in bytes.
fn memory() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .unwrap_or(0)
            * 1024
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Serves one request with a flood of `bytes`, until the client hangs up.
fn flood(listener: std::net::TcpListener, bytes: usize, one_line: bool) {
    let (mut socket, _) = listener.accept().unwrap();
    let mut request = Vec::new();
    let mut buffer = [0u8; 8192];
    // Headers, then as much body as Content-Length says.
    loop {
        let n = socket.read(&mut buffer).unwrap_or(0);
        request.extend_from_slice(&buffer[..n]);
        let text = String::from_utf8_lossy(&request);
        if let Some(head) = text.find("\r\n\r\n") {
            let length = text[..head]
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                })
                .unwrap_or(0);
            if request.len() >= head + 4 + length || n == 0 {
                break;
            }
        }
        if n == 0 {
            break;
        }
    }
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
    if socket.write_all(head.as_bytes()).is_err() {
        return;
    }
    let piece = "x".repeat(4096);
    let event = format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{piece}\"}}}}]}}\n\n"
    );
    if one_line && socket.write_all(b"data: ").is_err() {
        return;
    }
    let mut sent = 0;
    while sent < bytes {
        let written = if one_line {
            socket.write_all(piece.as_bytes())
        } else {
            socket.write_all(event.as_bytes())
        };
        if written.is_err() {
            return;
        }
        sent += piece.len();
    }
}

fn reply_memory(bytes: usize, one_line: bool) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || flood(listener, bytes, one_line));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let endpoint = Endpoint::new(
        moot::llm::http_client().unwrap(),
        &format!("http://127.0.0.1:{port}/v1"),
        None,
        "flood",
        Arc::new(CapabilityCache::default()),
        Duration::from_secs(30),
    );
    let provider = OpenAiProvider::new(endpoint, String::new());
    // No max_tokens: the largest default cap, 1 MiB.
    let request = ChatRequest {
        label: RequestLabel {
            round: 1,
            phase: moot::debate::Phase::Argument,
            seat: "A".into(),
            perspective: None,
            request: "moot_argument",
        },
        system: "You argue.".into(),
        messages: vec![ChatMessage::user("Flood me.")],
        reply: None,
        max_tokens: None,
        temperature: None,
        reply_bytes: None,
    };
    // Resets the high-water mark to the current resident set.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let (baseline, _) = memory();
    let completion = runtime
        .block_on(provider.complete(&request, &mut |_| {}))
        .unwrap();
    let (_, peak) = memory();
    drop(runtime);
    let _ = server.join();
    eprintln!(
        "a {} MB reply{}: kept {} bytes ({:?}); peak memory {:.1} MB above the baseline",
        bytes / 1_000_000,
        if one_line { " on one line" } else { "" },
        completion.text.len(),
        completion.finish,
        peak.saturating_sub(baseline) as f64 / 1_048_576.0
    );
}

fn decode(decoder: &mut SseDecoder, line: &[u8]) -> usize {
    let mut events = 0;
    for chunk in line.chunks(8 * 1024) {
        events += decoder.feed(chunk).len();
    }
    events + decoder.feed(b"\n\n").len()
}

#[divan::bench(args = [10, 20, 40], sample_count = 40)]
fn a_line_without_end(bencher: divan::Bencher, megabytes: usize) {
    let line = vec![b'x'; megabytes * 1_000_000];
    let mut decoder = SseDecoder::new();
    decode(&mut decoder, &line);
    bencher.bench_local(|| decode(&mut decoder, &line));
}

#[divan::bench(args = [10, 20, 40], sample_count = 10)]
fn a_line_in_a_fresh_decoder(bencher: divan::Bencher, megabytes: usize) {
    let line = vec![b'x'; megabytes * 1_000_000];
    bencher.bench_local(|| decode(&mut SseDecoder::new(), &line));
}
