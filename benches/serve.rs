//! `moot serve` under load, against the stand-in server answering every call after 100 ms: the
//! wall time of 100 debates started at once beside one debate's (five pairs, the median ratio
//! reported), and the server's resident memory while they run and after; then 500 debates one
//! after another, memory after the 50th and after the last (the leak check of design note
//! 004); last, a server killed (SIGKILL) with 20 debates mid-round and started again: how soon
//! it listens, how soon its debates are done, and how many turns journaled before the kill
//! were lost or asked of the provider again.
//! `cargo bench --bench serve` (`MOOT_SOAK=0` skips the soak).

#[path = "../tests/support/mod.rs"]
mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};
use support::serving::Serving;
use support::{Behaviour, StandIn};

const TOKEN: &str = "bench-token-0123456789abcdef";

/// How many times one debate and then a hundred at once are timed.
const PAIRS: usize = 5;

fn request(addr: &str, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
    support::serving::request(addr, TOKEN, method, path, body)
}

/// Starts debate `i` (`serving::question(i)`) of `rounds` rounds; its id.
fn start(addr: &str, i: usize, rounds: u32) -> String {
    support::serving::start(addr, TOKEN, i, rounds)
}

/// Waits for every debate of `ids` to end, each followed on its own event stream (which the
/// server ends after `debate_completed`), sampling the server's resident memory meanwhile.
/// Following the streams, rather than polling the list, adds no load of its own beyond what a
/// client watching its debate adds, and sees each end the moment it comes. Whether they
/// completed is checked apart (`completed`), outside the time measured. Returns when the last
/// stream ended (the memory sampler may take up to a sample's interval longer to stop).
fn wait(addr: &str, ids: &[String], rss: &mut Vec<u64>, pid: u32) -> Instant {
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        let sampler = scope.spawn(|| {
            let mut samples = Vec::new();
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                samples.push(resident_kib(pid));
                std::thread::sleep(Duration::from_millis(50));
            }
            samples
        });
        let followers: Vec<_> = ids
            .iter()
            .map(|id| scope.spawn(move || stream_events(addr, id)))
            .collect();
        for follower in followers {
            assert!(
                follower.join().unwrap() > 0,
                "a debate's stream carried nothing"
            );
        }
        let ended = Instant::now();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        rss.extend(sampler.join().unwrap());
        ended
    })
}

/// The server's list of completed debates, as its JSON text.
fn listed_completed(addr: &str) -> String {
    request(
        addr,
        "GET",
        "/v1/debates?status=completed&limit=10000",
        None,
    )
    .1
}

/// Checks that every debate of `ids` completed, in one listing: the list grows with the
/// journal, so reading it after each debate would slow later ones.
fn completed(addr: &str, ids: &[String]) {
    let listed = listed_completed(addr);
    for id in ids {
        assert!(listed.contains(id.as_str()), "{id} did not complete");
    }
}

/// Reads a finished debate's event stream to its end; the events it carried.
fn stream_events(addr: &str, id: &str) -> usize {
    let mut stream = TcpStream::connect(addr).unwrap();
    let text = format!(
        "GET /v1/debates/{id}/events HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAuthorization: Bearer {TOKEN}\r\n\r\n"
    );
    stream.write_all(text.as_bytes()).unwrap();
    let mut body = String::new();
    stream.read_to_string(&mut body).unwrap();
    body.matches("\ndata: ").count() + usize::from(body.starts_with("data: "))
}

fn resident_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

/// CPU seconds process `pid` has used (user and system), from /proc.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command name (which may hold spaces) start after its ')'.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks: f64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i).and_then(|f| f.parse::<f64>().ok()))
        .sum();
    ticks / 100.0
}

/// `moot serve` on a free port with its journal and config in `home`, answered by `stand_in`.
fn serve_command(home: &std::path::Path, stand_in: &StandIn) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_moot"));
    command
        .current_dir(home)
        .env("MOOT_HOME", home.join("moot-home"))
        .env("MOOT_CONFIG", home.join("config.toml"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env("OPENAI_BASE_URL", stand_in.openai_base())
        .env("MOOT_SERVE_TOKEN", TOKEN)
        .args(["serve", "--listen", "127.0.0.1:0", "--max-debates", "1000"]);
    command
}

/// A fresh home whose config turns lessons off.
fn bench_home() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "[lessons]\nenabled = false\n",
    )
    .unwrap();
    home
}

/// The journaled turns of debate `id` (round, phase, seat), as the server shows them.
fn turn_keys(addr: &str, id: &str) -> Vec<support::serving::TurnKey> {
    let (status, body) = request(addr, "GET", &format!("/v1/debates/{id}"), None);
    assert_eq!(status, 200, "{body}");
    support::serving::turn_keys_of(&serde_json::from_str(&body).unwrap())
}

/// Polls `done` every 20 ms until it holds, for at most `limit`.
fn poll_until(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "{what} took over {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// 20 two-round debates, the server killed with SIGKILL once each has journaled an argument
/// and started again on the same journal.
fn restart(stand_in: &StandIn) {
    let home = bench_home();
    let mut first = Serving::start(&mut serve_command(home.path(), stand_in));
    let ids: Vec<String> = (0..20).map(|i| start(&first.addr, i, 2)).collect();
    // Mid-round: every debate has journaled an argument of round 1.
    poll_until(
        Duration::from_secs(60),
        "every debate's first argument",
        || {
            ids.iter().all(|id| {
                turn_keys(&first.addr, id)
                    .iter()
                    .any(|(round, phase, _)| *round == 1 && phase == "argument")
            })
        },
    );
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    // What the killed server left in the journal, read before anything resumes.
    let before: Vec<Vec<support::serving::TurnKey>> = {
        let journal = rusqlite::Connection::open(home.path().join("moot-home/moot.db")).unwrap();
        let mut query = journal
            .prepare("SELECT round, phase, seat FROM turns WHERE debate_id = ?1")
            .unwrap();
        ids.iter()
            .map(|id| {
                query
                    .query_map([id], |row| {
                        Ok((row.get::<_, u32>(0)? as u64, row.get(1)?, row.get(2)?))
                    })
                    .unwrap()
                    .collect::<Result<_, _>>()
                    .unwrap()
            })
            .collect()
    };
    let journaled: usize = before.iter().map(Vec::len).sum();
    let asked_before = stand_in.seen().len();
    let killed = Instant::now();
    let again = Serving::start(&mut serve_command(home.path(), stand_in));
    let listening = killed.elapsed();
    poll_until(Duration::from_secs(120), "the resumed debates", || {
        let listed = listed_completed(&again.addr);
        ids.iter().all(|id| listed.contains(id.as_str()))
    });
    let completed = killed.elapsed();
    let lost: usize = ids
        .iter()
        .zip(&before)
        .map(|(id, before)| {
            let after = turn_keys(&again.addr, id);
            before.iter().filter(|key| !after.contains(key)).count()
        })
        .sum();
    let asked_again =
        support::serving::asked_again(&stand_in.seen()[asked_before..], &before).len();
    println!(
        "restart: killed with 20 debates mid-round ({journaled} turns journaled) · listening again {:.0} ms after it started · all 20 completed {:.2} s after it started · turns lost {lost}, asked of the provider again {asked_again}",
        listening.as_secs_f64() * 1000.0,
        completed.as_secs_f64()
    );
}

fn main() {
    let stand_in = StandIn::start_in_background(Behaviour {
        latency: Duration::from_millis(100),
        ..Behaviour::default()
    });
    let home = bench_home();
    // Killed when the bench ends however it ends (a panic or a closed pipe included).
    let child = Serving::start(&mut serve_command(home.path(), &stand_in));
    let addr = child.addr.clone();
    let pid = child.pid();
    let mut rss = Vec::new();

    // One debate, then a hundred at once, paired five times: the machine's speed drifts
    // between runs by more than the margin measured, so each ratio compares runs taken
    // seconds apart and the median is reported beside the spread.
    let mut pairs = Vec::new();
    let mut peak = 0;
    let mut many = Vec::new();
    for pair in 0..PAIRS {
        let started = Instant::now();
        let one = vec![start(&addr, pair * 1000, 1)];
        let single = (wait(&addr, &one, &mut rss, pid) - started).as_secs_f64();
        completed(&addr, &one);

        let cpu_before = cpu_seconds(pid);
        let own_before = cpu_seconds(std::process::id());
        let started = Instant::now();
        // Started as a hundred clients would start them: at once.
        many = std::thread::scope(|scope| {
            let started: Vec<_> = (1..=100)
                .map(|i| {
                    let addr = addr.as_str();
                    scope.spawn(move || start(addr, pair * 1000 + i, 1))
                })
                .collect();
            started.into_iter().map(|h| h.join().unwrap()).collect()
        });
        rss.clear();
        let hundred = (wait(&addr, &many, &mut rss, pid) - started).as_secs_f64();
        let cpu = cpu_seconds(pid) - cpu_before;
        let own = cpu_seconds(std::process::id()) - own_before;
        completed(&addr, &many);
        peak = peak.max(rss.iter().copied().max().unwrap_or(0));
        println!(
            "pair {}: one debate {single:.2} s · 100 at once {hundred:.2} s · ratio {:.2} · CPU for the 100: server {cpu:.2} s, the stand-in and clients {own:.2} s · RSS after {:.1} MiB",
            pair + 1,
            hundred / single,
            resident_kib(pid) as f64 / 1024.0
        );
        pairs.push(hundred / single);
    }
    pairs.sort_by(f64::total_cmp);
    println!(
        "100 at once ÷ one debate: median {:.2} of {PAIRS} pairs ({:.2}–{:.2}; target ≤ 1.5) · peak RSS {:.1} MiB while 100 ran, {:.1} MiB after",
        pairs[PAIRS / 2],
        pairs[0],
        pairs[PAIRS - 1],
        peak as f64 / 1024.0,
        resident_kib(pid) as f64 / 1024.0
    );

    // SSE throughput: 100 clients each read a finished debate's whole stream at once.
    let target = many[0].clone();
    let started = Instant::now();
    let counts: Vec<usize> = std::thread::scope(|scope| {
        let readers: Vec<_> = (0..100)
            .map(|_| {
                let (addr, target) = (addr.as_str(), target.as_str());
                scope.spawn(move || stream_events(addr, target))
            })
            .collect();
        readers.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let total: usize = counts.iter().sum();
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "SSE: 100 clients read {total} events ({} each) in {elapsed:.2} s: {:.0} events/s",
        counts[0],
        total as f64 / elapsed
    );

    if std::env::var("MOOT_SOAK").as_deref() != Ok("0") {
        // The soak measures memory, not waiting: the stand-in answers at once.
        stand_in.set_behaviour(|b| b.latency = Duration::ZERO);
        let mut after_50 = 0;
        let mut soaked = Vec::new();
        let started = Instant::now();
        for i in 0..500 {
            let id = vec![start(&addr, 10_000 + i, 1)];
            wait(&addr, &id, &mut Vec::new(), pid);
            soaked.extend(id);
            if i + 1 == 50 {
                after_50 = resident_kib(pid);
            }
        }
        let after_500 = resident_kib(pid);
        completed(&addr, &soaked);
        println!(
            "soak: 500 debates one after another in {:.0} s · RSS after the 50th {:.1} MiB, after the 500th {:.1} MiB · ratio {:.3} (target ≤ 1.2)",
            started.elapsed().as_secs_f64(),
            after_50 as f64 / 1024.0,
            after_500 as f64 / 1024.0,
            after_500 as f64 / after_50.max(1) as f64
        );
    }
    drop(child);
    stand_in.set_behaviour(|b| b.latency = Duration::from_millis(100));
    restart(&stand_in);
}
