//! `moot serve`: the HTTP API of design note 004, on axum over moot's tokio runtime. A POST
//! starts a debate in this process on the same engine, protocols and journal as the command
//! line; its events are followed over SSE, its gates and checkpoints answered with a POST.
//! Every route but `/v1/health` needs the bearer token. `moot mcp` serves the same debates as
//! a Model Context Protocol server's tools over stdio (`mcp`).

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

// The crates below, under the names the modules here use.
use moot_domain::{debate, sanitize};
use moot_journal::store;
use moot_os::{paths, signals};
use moot_session::{config, diagram, live, providers, report, session};
// The protocols moot ships, for unit tests that start debates (the server is handed them).
#[cfg(test)]
use moot_protocols::protocol;

mod auth;
mod mcp;
mod request;
mod routes;
mod run;
mod watchdog;

use crate::config::Config;
use crate::store::Store;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How the server runs, as `moot serve`'s flags give it (the binary builds it from them).
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Where to listen (`127.0.0.1:7878`).
    pub listen: String,
    /// A file holding the bearer token (else MOOT_SERVE_TOKEN, else one generated).
    pub token_file: Option<std::path::PathBuf>,
    /// The most debates running at once.
    pub max_debates: u64,
    /// Seconds without progress before a debate is flagged as stalled (else `[serve]`).
    pub stall_seconds: Option<u64>,
    /// The provider every debate runs on unless a request names a configured one.
    pub provider: crate::providers::ProviderFlags,
}

/// Why the server could not start, said with what to do.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("--listen {given}: not an address and port such as 127.0.0.1:7878")]
    Address { given: String },
    #[error(
        "--listen {addr} reaches beyond this machine, so the API needs a token you chose: set MOOT_SERVE_TOKEN or give --token-file FILE"
    )]
    TokenNeeded { addr: SocketAddr },
    #[error("{0}")]
    Token(String),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("the server stopped: {0}")]
    Stopped(#[source] std::io::Error),
    #[error(transparent)]
    Journal(#[from] crate::store::StoreError),
    /// The MCP session could not start or ended in error.
    #[error("the MCP session stopped: {0}")]
    Mcp(String),
}

/// How often the journal is checkpointed beside the debates' writes.
const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// A debate this server runs: the way to stop it, where its events go as they happen, and
/// how it is getting on (for the watchdog).
struct Running {
    /// Dropped or sent to, it interrupts the debate (`POST …/cancel`).
    cancel: Option<tokio::sync::oneshot::Sender<()>>,
    /// Every event as it happens, for SSE clients.
    live: tokio::sync::broadcast::Sender<Live>,
    /// How many journaled events have been passed on to `live` so far.
    journaled: Arc<std::sync::atomic::AtomicU64>,
    progress: Arc<Mutex<watchdog::Progress>>,
}

/// What a running debate tells its SSE clients as it happens.
#[derive(Debug, Clone)]
enum Live {
    /// A stream delta, passed on as it is (the journal never holds one).
    Delta(Box<crate::debate::Event>),
    /// The `n`th journaled event passed on: a stream reads it from the journal, with its
    /// number, unless a read begun after it was passed on has sent it already.
    Journaled(u64),
}

/// What every request handler shares.
pub(crate) struct Server {
    store: Store,
    /// What its debates run with.
    host: crate::session::Host,
    config: Config,
    args: ServeOptions,
    token: String,
    running: Mutex<HashMap<String, Running>>,
    /// How many debates hold a place under `--max-debates`, counted from the moment a request
    /// is accepted (not from its first event), so a burst cannot slip past the limit.
    admitted: std::sync::atomic::AtomicUsize,
    /// Word from a shared journal of debates with new events (`None`: any may have), so a
    /// stream of a debate another replica runs need not keep looking; none on SQLite.
    journaled: Option<tokio::sync::broadcast::Sender<Option<Arc<str>>>>,
}

impl Server {
    fn new(
        host: crate::session::Host,
        args: ServeOptions,
        config: Config,
        store: Store,
        token: String,
    ) -> Arc<Server> {
        // On a shared journal a lease outlives its last heartbeat by two thirds of the
        // takeover time, and the replicas look every sixth: a dead replica's debates are
        // taken over within it. On SQLite, one host's, the holder's pid tells at once.
        let store = match store.is_shared() {
            true => store.with_lease_ttl(takeover(&config) * 2 / 3),
            false => store,
        };
        let (told, _) = tokio::sync::broadcast::channel(1024);
        let telling = told.clone();
        let journaled = store
            .watch_events(move |id| {
                // Nobody following is nothing to tell.
                let _ = telling.send(id.map(Arc::from));
            })
            .then_some(told);
        Arc::new(Server {
            journaled,
            store,
            host,
            config,
            args,
            token,
            running: Mutex::new(HashMap::new()),
            admitted: Default::default(),
        })
    }

    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<String, Running>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A place for one more debate, or `None` when `--max-debates` are already admitted.
    fn admit(self: &Arc<Self>) -> Option<Admitted> {
        use std::sync::atomic::Ordering;
        let most = self.args.max_debates as usize;
        self.admitted
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |taken| {
                (taken < most).then_some(taken + 1)
            })
            .ok()
            .map(|_| Admitted(self.clone()))
    }

    /// A place for a debate the server must run whatever the limit (one it was running when
    /// it died): counted, never refused.
    fn admit_anyway(self: &Arc<Self>) -> Admitted {
        self.admitted
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        Admitted(self.clone())
    }
}

/// One debate's place under `--max-debates`, given back when the debate's thread is done (or
/// when it could not start).
struct Admitted(Arc<Server>);

impl Drop for Admitted {
    fn drop(&mut self) {
        self.0
            .admitted
            .fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

/// How soon, when `[serve] takeover_seconds` does not say, replicas on a shared journal take
/// over the debates of one that died.
const DEFAULT_TAKEOVER_SECONDS: u64 = 15;

/// How soon replicas take over a dead one's debates (`[serve] takeover_seconds`).
fn takeover(config: &Config) -> Duration {
    Duration::from_secs(
        config
            .serve
            .takeover_seconds
            .unwrap_or(DEFAULT_TAKEOVER_SECONDS)
            .max(1),
    )
}

/// Starts the server and serves until interrupted (Ctrl-C, SIGTERM).
pub fn serve(
    host: crate::session::Host,
    args: ServeOptions,
    config: Config,
    store: Store,
) -> Result<(), ServeError> {
    let addr: SocketAddr = args.listen.parse().map_err(|_| ServeError::Address {
        given: args.listen.clone(),
    })?;
    let token = auth::token(&args, &crate::paths::data_dir())?;
    if !addr.ip().is_loopback() && !token.explicit {
        return Err(ServeError::TokenNeeded { addr });
    }
    if let Some(path) = &token.generated {
        eprintln!(
            "moot serve: the API token is in {} (send it as `Authorization: Bearer …`)",
            path.display()
        );
    }
    // With many debates writing, no one debate's write pays for the WAL's checkpoint.
    let _checkpoints = store.checkpoint_in_background(CHECKPOINT_EVERY)?;
    let server = Server::new(host, args, config, store, token.value);
    let runtime = runtime()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| ServeError::Bind { addr, source })?;
        let local = listener.local_addr().map_err(ServeError::Stopped)?;
        let resumed = run::recover(&server).await;
        if !resumed.is_empty() {
            eprintln!(
                "moot serve: resumed {} debate(s) left running: {}",
                resumed.len(),
                resumed.join(", ")
            );
        }
        tokio::spawn(watchdog::watch(server.clone()));
        // Replicas on one journal take over the debates of one that died.
        if server.store.is_shared() {
            tokio::spawn(run::take_over_orphans(server.clone()));
        }
        // Tests and scripts read where it listens from this line (`--listen 127.0.0.1:0`).
        println!("moot serve: listening on http://{local}");
        axum::serve(listener, routes::router(server.clone()))
            .with_graceful_shutdown(crate::signals::interrupted())
            .await
            .map_err(ServeError::Stopped)
    })
}

/// The runtime the servers' requests run on (each debate runs on a thread of its own).
fn runtime() -> Result<tokio::runtime::Runtime, ServeError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(ServeError::Stopped)
}

/// `moot mcp`: the debates as MCP tools over this process's stdin and stdout, until the client
/// closes them. A debate still running then is paused, as Ctrl-C pauses one, and `moot resume
/// ID` goes on with it. `args.listen` and `args.token_file` are not read: the client that
/// started the process is the only one it talks to.
pub fn mcp_stdio(
    host: crate::session::Host,
    args: ServeOptions,
    config: Config,
    store: Store,
) -> Result<(), ServeError> {
    use rmcp::ServiceExt as _;
    let _checkpoints = store.checkpoint_in_background(CHECKPOINT_EVERY)?;
    let server = Server::new(host, args, config, store, String::new());
    runtime()?.block_on(async move {
        tokio::spawn(watchdog::watch(server.clone()));
        // Replicas on one journal take over the debates of one that died.
        if server.store.is_shared() {
            tokio::spawn(run::take_over_orphans(server.clone()));
        }
        let service = mcp::Tools::new(server.clone())
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| ServeError::Mcp(e.to_string()))?;
        let ended = service.waiting().await;
        server.interrupt_all().await;
        ended
            .map(|_| ())
            .map_err(|e| ServeError::Mcp(e.to_string()))
    })
}

/// How long the debates still running when a server ends get to stop where they are.
const STOPPING: std::time::Duration = std::time::Duration::from_secs(10);

impl Server {
    /// Interrupts every debate this server runs, as Ctrl-C would, and waits (`STOPPING` at
    /// most) for each to journal that it stopped, so each reads as paused and resumes.
    async fn interrupt_all(&self) {
        for running in self.running().values_mut() {
            if let Some(cancel) = running.cancel.take() {
                let _ = cancel.send(());
            }
        }
        let deadline = tokio::time::Instant::now() + STOPPING;
        while !self.running().is_empty() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
}
