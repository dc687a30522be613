//! The journal on PostgreSQL and `moot serve` replicas that share it (issue 73), against a real
//! PostgreSQL server the bench starts itself and the stand-in answering every call after 100 ms:
//! the latency of journaling one turn, SQLite beside PostgreSQL; the wall time of 300 debates
//! on three replicas beside 100 on one (goal ≤ 1.2), first with everything sharing this
//! machine's cores, then (where control groups can be made) with PostgreSQL and each replica
//! on a CPU budget that stands for a host of its own; and, with three replicas running 100
//! debates started round-robin, one killed (SIGKILL) mid-way: how soon the others took its
//! debates over (goal ≤ takeover_seconds + 2 s), whether all 100 completed, and how many turns
//! were lost, journaled twice or asked of the provider again, and whether each verifies.
//! `cargo bench --bench replicas` (it says so and stops where no PostgreSQL is installed).

#[path = "../tests/support/postgres.rs"]
mod postgres_server;
#[path = "../tests/support/mod.rs"]
mod support;

use moot::debate::{DebateStatus, Phase, Turn, TurnKey};
use moot::store::Store;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};
use support::serving::Serving;
use support::{Behaviour, StandIn};

const TOKEN: &str = "bench-token-0123456789abcdef";
/// `[serve] takeover_seconds` of the replicas in the takeover run (the default).
const TAKEOVER_SECONDS: u64 = 15;

/// Starts debate `i` (`serving::question(i)`) of `rounds` rounds; its id.
fn start(addr: &str, i: usize, rounds: u32) -> String {
    support::serving::start(addr, TOKEN, i, rounds)
}

/// Reads a debate's event stream to its end (the server ends it after `debate_completed`).
fn stream_to_end(addr: &str, id: &str) {
    let mut stream = TcpStream::connect(addr).unwrap();
    let text = format!(
        "GET /v1/debates/{id}/events HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAuthorization: Bearer {TOKEN}\r\n\r\n"
    );
    stream.write_all(text.as_bytes()).unwrap();
    let mut body = String::new();
    let _ = stream.read_to_string(&mut body);
}

/// `moot serve` on a free port with the journal at `url`, its own files in `home`, its leases
/// naming `host` (as on a machine of its own: its death is seen by its silence, not its pid).
fn replica(home: &std::path::Path, stand_in: &StandIn, url: &str, host: &str) -> Serving {
    std::fs::write(
        home.join("config.toml"),
        format!("[lessons]\nenabled = false\n[serve]\ntakeover_seconds = {TAKEOVER_SECONDS}\n"),
    )
    .unwrap();
    let errors = std::fs::File::create(home.join("errors.log")).unwrap();
    Serving::start_saying_errors_to(
        Command::new(env!("CARGO_BIN_EXE_moot"))
            .current_dir(home)
            .env("MOOT_HOME", home.join("moot-home"))
            .env("MOOT_CONFIG", home.join("config.toml"))
            .env("XDG_DATA_HOME", home.join("data"))
            .env("OPENAI_BASE_URL", stand_in.openai_base())
            .env("MOOT_SERVE_TOKEN", TOKEN)
            .env("MOOT_HOST", host)
            .args(["serve", "--listen", "127.0.0.1:0", "--max-debates", "1000"])
            .args(["--journal", url]),
        errors.into(),
    )
}

/// `count` one-round debates started at once, round-robin over `replicas`, followed each on
/// the replica that took it until it ends: the wall time.
fn run_at_once(replicas: &[String], count: usize, base: usize) -> f64 {
    let started = Instant::now();
    std::thread::scope(|scope| {
        let runs: Vec<_> = (0..count)
            .map(|i| {
                let addr = replicas[i % replicas.len()].as_str();
                scope.spawn(move || {
                    let id = start(addr, base + i, 1);
                    stream_to_end(addr, &id);
                })
            })
            .collect();
        for run in runs {
            run.join().unwrap();
        }
    });
    started.elapsed().as_secs_f64()
}

/// A turn of realistic size: ~1.2 KB of prose.
fn turn(round: u32) -> Turn {
    let mut turn = Turn::pending(TurnKey::new(round, Phase::Argument, "A"), "openai", "m");
    turn.content = "Redis keeps hot keys in memory with predictable sub-millisecond reads, while \
        PostgreSQL would need an unlogged table and careful vacuuming to come close. "
        .repeat(8);
    turn.tokens_in = 1400;
    turn.tokens_out = 320;
    turn
}

/// The median and 95th percentile of journaling 400 turns, one after another, in `store`.
fn turn_latency(store: &Store) -> (f64, f64) {
    store
        .create_debate(&moot::store::running_debate("DEB-latency"))
        .unwrap();
    let mut took: Vec<f64> = (1..=400)
        .map(|round| {
            let started = Instant::now();
            store.record_turn("DEB-latency", &turn(round)).unwrap();
            started.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    took.sort_by(f64::total_cmp);
    (took[took.len() / 2], took[took.len() * 95 / 100])
}

/// CPU seconds (user and system) the processes `pids` have used so far.
fn cpu_seconds(pids: &[u32]) -> f64 {
    pids.iter()
        .map(|pid| stat_seconds(&format!("/proc/{pid}/stat"), false))
        .sum()
}

/// CPU seconds the PostgreSQL server has used so far: its postmaster with the backends it has
/// reaped, and those still running.
fn postgres_cpu_seconds(postgres: &postgres_server::Postgres) -> f64 {
    let master = postgres.postmaster_pid();
    stat_seconds(&format!("/proc/{master}/stat"), true)
        + children_of(master)
            .iter()
            .map(|child| stat_seconds(&format!("/proc/{child}/stat"), false))
            .sum::<f64>()
}

/// The processes whose parent is `pid`, read from `/proc`.
fn children_of(pid: u32) -> Vec<u32> {
    let mut children = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(text) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let parent = text
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
        if parent == Some(pid)
            && let Ok(child) = entry.file_name().to_string_lossy().parse()
        {
            children.push(child);
        }
    }
    children
}

/// utime + stime of a `/proc/PID/stat` (with the reaped children's, `children`), in seconds.
fn stat_seconds(path: &str, children: bool) -> f64 {
    let Ok(text) = std::fs::read_to_string(path) else {
        return 0.0;
    };
    let Some((_, rest)) = text.rsplit_once(')') else {
        return 0.0;
    };
    // Fields 14–17 (utime, stime, cutime, cstime), counted from the pid; these start at 3.
    let fields: Vec<f64> = rest
        .split_whitespace()
        .skip(14 - 3)
        .take(4)
        .filter_map(|f| f.parse().ok())
        .collect();
    let ticks: f64 = fields.iter().take(if children { 4 } else { 2 }).sum();
    // SAFETY: sysconf reads a constant of the system and touches no memory of ours.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    ticks / per_second
}

/// Runs 100 one-round debates on one replica, then 300 on three (fresh replicas on a fresh
/// database), and prints the wall times, their ratio and the CPU each debate cost. With
/// `budgets`, PostgreSQL and each replica run on a CPU budget of their own.
fn scaling(postgres: &postgres_server::Postgres, stand_in: &StandIn, budgets: Option<&Budgets>) {
    let url = postgres.database();
    if let Some(budgets) = budgets {
        budgets.database.admit_tree(postgres.postmaster_pid());
    }
    let homes: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let replicas: Vec<Serving> = homes
        .iter()
        .enumerate()
        .map(|(i, home)| replica(home.path(), stand_in, &url, &format!("replica-{i}")))
        .collect();
    if let Some(budgets) = budgets {
        for (host, replica) in budgets.replicas.iter().zip(&replicas) {
            host.admit_tree(replica.pid());
        }
    }
    let addrs: Vec<String> = replicas.iter().map(|r| r.addr.clone()).collect();
    let pids: Vec<u32> = replicas.iter().map(Serving::pid).collect();
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    // Transactions that wrote, read off the server's transaction ids (each read takes one).
    let mut written = || -> f64 {
        let id: i64 = client
            .query_one("SELECT txid_current()", &[])
            .unwrap()
            .get(0);
        id as f64
    };
    let cpu = || (cpu_seconds(&pids), postgres_cpu_seconds(postgres));
    let (start_one, ids_one) = (cpu(), written());
    let one = run_at_once(&addrs[..1], 100, 0);
    let (after_one, ids_after_one) = (cpu(), written());
    let three = run_at_once(&addrs, 300, 1000);
    let (after_three, ids_after_three) = (cpu(), written());
    let placed = match budgets {
        None => "all three replicas, PostgreSQL and the stand-in on this machine's 2 cores".into(),
        Some(_) => format!(
            "each replica on a host of {REPLICA_CORES} core, PostgreSQL on one of {DATABASE_CORES}, \
             the stand-in and clients on what is left"
        ),
    };
    println!(
        "300 debates on three replicas {three:.2} s ÷ 100 on one {one:.2} s = {:.2} (goal ≤ 1.2; {placed})",
        three / one
    );
    let per_debate = |from: f64, to: f64, count: f64| (to - from) * 1000.0 / count;
    let (replica_one, replica_three) = (
        per_debate(start_one.0, after_one.0, 100.0),
        per_debate(after_one.0, after_three.0, 300.0),
    );
    let busy = |from: f64, to: f64, wall: f64| (to - from) / wall * 100.0;
    println!(
        "CPU per debate: replicas {replica_one:.1} ms on one, {replica_three:.1} ms on three (ratio {:.2}) · PostgreSQL {:.1} ms on one, {:.1} ms on three (busy {:.0} % of a core, then {:.0} %)",
        replica_three / replica_one,
        per_debate(start_one.1, after_one.1, 100.0),
        per_debate(after_one.1, after_three.1, 300.0),
        busy(start_one.1, after_one.1, one),
        busy(after_one.1, after_three.1, three),
    );
    println!(
        "transactions per debate: {:.1} on one, {:.1} on three",
        (ids_after_one - ids_one - 1.0) / 100.0,
        (ids_after_three - ids_after_one - 1.0) / 300.0,
    );
    drop(replicas);
    if let Some(budgets) = budgets {
        budgets.database.release();
    }
}

/// How much of a core stands for a replica's host, and for the database's: a database host
/// four times a replica's (say 8 cores beside 2), and with three replicas the whole machine
/// but a quarter of a core for the stand-in and the clients.
const REPLICA_CORES: f64 = 0.25;
const DATABASE_CORES: f64 = 1.0;

/// The CPU budgets that stand for hosts of their own on this one machine.
struct Budgets {
    database: Budget,
    replicas: [Budget; 3],
}

impl Budgets {
    fn new() -> Result<Budgets, String> {
        Ok(Budgets {
            database: Budget::new("database", DATABASE_CORES)?,
            replicas: [
                Budget::new("replica-0", REPLICA_CORES)?,
                Budget::new("replica-1", REPLICA_CORES)?,
                Budget::new("replica-2", REPLICA_CORES)?,
            ],
        })
    }
}

/// A control group whose processes share at most `cores` of CPU time (cgroup v1's CFS quota,
/// or v2's `cpu.max`); its processes go back to the root group when it is dropped.
struct Budget {
    dir: std::path::PathBuf,
    root: std::path::PathBuf,
}

impl Budget {
    fn new(name: &str, cores: f64) -> Result<Budget, String> {
        const PERIOD: u64 = 100_000;
        let quota = (cores * PERIOD as f64) as u64;
        let v1 = std::path::Path::new("/sys/fs/cgroup/cpu");
        let (root, limits) = if v1.join("cpu.cfs_quota_us").exists() {
            (
                v1.to_path_buf(),
                vec![
                    ("cpu.cfs_period_us", PERIOD.to_string()),
                    ("cpu.cfs_quota_us", quota.to_string()),
                ],
            )
        } else {
            let v2 = std::path::Path::new("/sys/fs/cgroup");
            std::fs::write(v2.join("cgroup.subtree_control"), "+cpu").map_err(|e| {
                format!("no cgroup v1 cpu controller, and v2's would not take +cpu: {e}")
            })?;
            (
                v2.to_path_buf(),
                vec![("cpu.max", format!("{quota} {PERIOD}"))],
            )
        };
        let dir = root.join(format!("moot-bench-{}-{name}", std::process::id()));
        std::fs::create_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let budget = Budget { dir, root };
        for (file, value) in limits {
            std::fs::write(budget.dir.join(file), value)
                .map_err(|e| format!("{}: {e}", budget.dir.join(file).display()))?;
        }
        Ok(budget)
    }

    /// Moves process `pid` and its children (PostgreSQL's backends) into the group; what
    /// they start later is born in it.
    fn admit_tree(&self, pid: u32) {
        let mut pids = vec![pid];
        pids.extend(children_of(pid));
        for pid in pids {
            let _ = std::fs::write(self.dir.join("cgroup.procs"), pid.to_string());
        }
    }

    /// Moves every process in the group back to the root group.
    fn release(&self) {
        let procs = std::fs::read_to_string(self.dir.join("cgroup.procs")).unwrap_or_default();
        for pid in procs.lines() {
            let _ = std::fs::write(self.root.join("cgroup.procs"), pid);
        }
    }
}

impl Drop for Budget {
    fn drop(&mut self) {
        self.release();
        let _ = std::fs::remove_dir(&self.dir);
    }
}

fn main() {
    let Some(postgres) = postgres_server::Postgres::start() else {
        println!("no PostgreSQL server programs here: nothing measured");
        return;
    };
    let dir = tempfile::tempdir().unwrap();

    // 1. Journaling a turn.
    let sqlite = Store::open(&dir.path().join("moot.db")).unwrap();
    let (sqlite_median, sqlite_p95) = turn_latency(&sqlite);
    let pg = Store::connect(&postgres.database(), &dir.path().join("unused.db")).unwrap();
    let (pg_median, pg_p95) = turn_latency(&pg);
    println!(
        "journal a turn (chained, 400 in a row): SQLite median {sqlite_median:.2} ms, p95 {sqlite_p95:.2} ms · PostgreSQL (Unix socket, fsync off as the bench's server runs) median {pg_median:.2} ms, p95 {pg_p95:.2} ms"
    );

    let stand_in = StandIn::start_in_background(Behaviour {
        latency: Duration::from_millis(100),
        ..Behaviour::default()
    });

    // 2. 300 debates on three replicas beside 100 on one: all on this machine's 2 cores, then
    // each process on a CPU budget standing for a host of its own.
    scaling(&postgres, &stand_in, None);
    match Budgets::new() {
        Ok(budgets) => scaling(&postgres, &stand_in, Some(&budgets)),
        Err(why) => println!("hosts of their own not measured: {why}"),
    }

    // 3. One of three replicas killed with 100 two-round debates started round-robin.
    let url = postgres.database();
    let homes: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut replicas: Vec<Serving> = homes
        .iter()
        .enumerate()
        .map(|(i, home)| replica(home.path(), &stand_in, &url, &format!("replica-{i}")))
        .collect();
    let addrs: Vec<String> = replicas.iter().map(|r| r.addr.clone()).collect();
    let ids: Vec<String> = (0..100)
        .map(|i| start(&addrs[i % 3], 5000 + i, 2))
        .collect();
    let journal = Store::connect(&url, &dir.path().join("unused.db")).unwrap();
    let keys = |id: &str| support::serving::turn_keys_in(&journal, id);
    let deadline = Instant::now() + Duration::from_secs(120);
    while ids.iter().any(|id| keys(id).is_empty()) {
        assert!(Instant::now() < deadline, "the debates never spoke");
        std::thread::sleep(Duration::from_millis(20));
    }
    let before: Vec<Vec<support::serving::TurnKey>> = ids.iter().map(|id| keys(id)).collect();
    let asked_before = stand_in.seen().len();
    let killed = Instant::now();
    postgres_server::kill_replica(&url, &mut replicas[0].child, "replica-0");
    // The killed replica's unfinished debates (it took every third): on other hosts, its
    // leases read as held until their heartbeat runs out.
    let orphans: Vec<&String> = ids
        .iter()
        .step_by(3)
        .filter(|id| {
            journal
                .debate(id)
                .is_ok_and(|d| d.status == DebateStatus::Running)
        })
        .collect();
    let taken = |id: &str| support::serving::says_taken_over(&journal, id);
    let deadline = killed + Duration::from_secs(120);
    while orphans.iter().any(|id| !taken(id)) {
        if Instant::now() >= deadline {
            for id in orphans.iter().filter(|id| !taken(id)) {
                let status = journal.debate(id).map(|d| d.status);
                let last = support::serving::last_event_kinds(&journal, id, 8);
                eprintln!("{id} not taken over: {status:?}, last events {last:?}");
            }
            eprintln!(
                "{}",
                support::serving::errors_logged(homes.iter().map(tempfile::TempDir::path))
            );
            panic!("the orphans were never taken over");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let taken_over = killed.elapsed().as_secs_f64();
    while ids.iter().any(|id| {
        journal
            .debate(id)
            .is_ok_and(|d| d.status != DebateStatus::Completed)
    }) {
        assert!(Instant::now() < deadline, "not every debate completed");
        std::thread::sleep(Duration::from_millis(50));
    }
    let completed = killed.elapsed().as_secs_f64();
    let lost: usize = ids
        .iter()
        .zip(&before)
        .map(|(id, before)| {
            let after = keys(id);
            before.iter().filter(|key| !after.contains(key)).count()
        })
        .sum();
    let twice: usize = ids
        .iter()
        .map(|id| {
            let mut after = keys(id);
            let all = after.len();
            after.sort();
            after.dedup();
            all - after.len()
        })
        .sum();
    let asked_again =
        support::serving::asked_again(&stand_in.seen()[asked_before..], &before).len();
    let verified = ids
        .iter()
        .filter(|id| journal.check_chain(id).is_ok_and(|c| c.holds()))
        .count();
    println!(
        "takeover: 3 replicas, 100 debates round-robin, one killed with {} of them running on it · all taken over {taken_over:.2} s after the kill (goal ≤ {} s) · all 100 completed {completed:.2} s after it · turns lost {lost}, journaled twice {twice}, asked of the provider again {asked_again} · chains that hold {verified}/100",
        orphans.len(),
        TAKEOVER_SECONDS + 2
    );
}
