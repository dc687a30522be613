//! The journal's connections to PostgreSQL: up to `MOST` per process, each on a thread of its
//! own (the blocking client runs a runtime of its own, which may not be started on one of
//! tokio's threads), a new one opened only when every open one is busy, one the server dropped
//! (a restart, a failover, an idle timeout) opened again at its next transaction, and each
//! keeping the statements it has prepared, so a statement is parsed once per connection
//! rather than once per call (each statement of a write is a round trip of its own).

use super::values::{Bind, bound, dialect};
use super::{failed, failed_pg};
use crate::store::StoreError;
use crate::store::chain::ChainHead;
use postgres::{Client, Row, Statement};
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};

/// The most connections one process holds: a serving replica runs many debates, and each
/// journals as it goes; on one connection their writes would wait in a single line.
const MOST: usize = 4;

/// A job for whichever connection takes it first.
pub(super) type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// What opens a connection (the URL, and how to speak TLS to the server it names).
pub(super) type Opener = Arc<dyn Fn() -> Result<Client, postgres::Error> + Send + Sync>;

/// The connections of one journal handle (and its clones).
#[derive(Clone)]
pub(super) struct Pool {
    jobs: mpsc::Sender<Job>,
    shared: Arc<Shared>,
}

struct Shared {
    waiting: Mutex<mpsc::Receiver<Job>>,
    /// Connections waiting for a job.
    idle: AtomicUsize,
    /// Connections open or opening.
    open: AtomicUsize,
    opener: Opener,
}

impl Pool {
    /// The pool, its first connection opened and `first` run on it before anything else (the
    /// schema brought up to date); what `first` says is what opening says.
    pub(super) fn open(
        opener: Opener,
        shown: &str,
        first: impl FnOnce(&mut Client) -> Result<(), StoreError> + Send + 'static,
    ) -> Result<Pool, StoreError> {
        let (jobs, waiting) = mpsc::channel::<Job>();
        let shared = Arc::new(Shared {
            waiting: Mutex::new(waiting),
            idle: AtomicUsize::new(0),
            open: AtomicUsize::new(1),
            opener,
        });
        let (ready, opened) = mpsc::channel::<Result<(), StoreError>>();
        let (serving, name) = (shared.clone(), shown.to_string());
        std::thread::Builder::new()
            .name("moot-journal-pg".into())
            .spawn(move || {
                let connected = (serving.opener)()
                    .map_err(|e| failed_pg(&name, e))
                    .and_then(|mut client| first(&mut client).map(|()| client));
                match connected {
                    Ok(client) => {
                        let _ = ready.send(Ok(()));
                        serve(&serving, Connection::new(client, serving.opener.clone()));
                    }
                    Err(error) => {
                        let _ = ready.send(Err(error));
                    }
                }
            })
            .map_err(|e| failed(shown, e))?;
        opened
            .recv()
            .map_err(|_| failed(shown, "the connection's thread ended"))??;
        Ok(Pool { jobs, shared })
    }

    /// What opens another connection to the same server.
    pub(super) fn opener(&self) -> Opener {
        self.shared.opener.clone()
    }

    /// Hands `job` to the first free connection, opening another when none is free.
    pub(super) fn send(&self, job: Job) -> Result<(), ()> {
        if self.shared.idle.load(Ordering::Acquire) == 0 {
            self.grow();
        }
        self.jobs.send(job).map_err(|_| ())
    }

    /// Opens one more connection, unless `MOST` are open; one that cannot be opened is not
    /// missed: the jobs wait for the open ones.
    fn grow(&self) {
        let open = self.shared.open.load(Ordering::Acquire);
        if open >= MOST
            || self
                .shared
                .open
                .compare_exchange(open, open + 1, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
        {
            return;
        }
        let shared = self.shared.clone();
        let spawned = std::thread::Builder::new()
            .name("moot-journal-pg".into())
            .spawn(move || match (shared.opener)() {
                Ok(client) => serve(&shared, Connection::new(client, shared.opener.clone())),
                Err(_) => {
                    shared.open.fetch_sub(1, Ordering::AcqRel);
                }
            });
        if spawned.is_err() {
            self.shared.open.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// Runs jobs on `connection` until every handle is gone.
fn serve(shared: &Shared, mut connection: Connection) {
    loop {
        shared.idle.fetch_add(1, Ordering::AcqRel);
        let job = match shared.waiting.lock() {
            Ok(waiting) => waiting.recv(),
            Err(_) => return,
        };
        shared.idle.fetch_sub(1, Ordering::AcqRel);
        match job {
            Ok(job) => job(&mut connection),
            Err(_) => return,
        }
    }
}

/// One connection, with the statements prepared on it.
pub(super) struct Connection {
    client: Client,
    prepared: HashMap<String, Statement>,
    opener: Opener,
}

impl Connection {
    fn new(client: Client, opener: Opener) -> Connection {
        Connection {
            client,
            prepared: HashMap::new(),
            opener,
        }
    }

    /// Begins a transaction.
    pub(super) fn begin(&mut self) -> Result<Tx<'_>, postgres::Error> {
        self.begin_with("BEGIN")
    }

    /// Begins a transaction that reads one snapshot of the journal and writes nothing.
    pub(super) fn begin_snapshot(&mut self) -> Result<Tx<'_>, postgres::Error> {
        self.begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
    }

    /// Begins with `how`; a connection the server dropped since its last call is opened
    /// again first (nothing had been sent on it, so nothing is asked twice).
    fn begin_with(&mut self, how: &str) -> Result<Tx<'_>, postgres::Error> {
        if self.client.is_closed() {
            self.reopen()?;
        }
        if let Err(error) = self.client.batch_execute(how) {
            if !self.client.is_closed() {
                return Err(error);
            }
            self.reopen()?;
            self.client.batch_execute(how)?;
        }
        Ok(Tx {
            client: &mut self.client,
            prepared: &mut self.prepared,
            open: true,
            notify: BTreeSet::new(),
            heads: HashMap::new(),
        })
    }

    fn reopen(&mut self) -> Result<(), postgres::Error> {
        self.client = (self.opener)()?;
        self.prepared.clear();
        Ok(())
    }
}

/// The PostgreSQL channel a replica listens on for debates with new events; each
/// notification's payload is a debate's id.
pub const EVENTS_CHANNEL: &str = "moot_events";

/// A transaction on one connection: rolled back unless committed.
pub(super) struct Tx<'a> {
    client: &'a mut Client,
    prepared: &'a mut HashMap<String, Statement>,
    open: bool,
    /// Debates that gained events, told to every listener when this commits.
    notify: BTreeSet<String>,
    /// Where the chain of each debate whose row this transaction holds ends, as read when it
    /// took the row and moved on by each entry it appended: one read per transaction, not
    /// one per entry.
    pub(super) heads: HashMap<String, Option<ChainHead>>,
}

impl Tx<'_> {
    /// `sql` (SQLite's `?N` parameters) prepared on this connection, once.
    fn statement(&mut self, sql: &str) -> Result<Statement, postgres::Error> {
        if let Some(statement) = self.prepared.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(&dialect(sql))?;
        self.prepared.insert(sql.to_string(), statement.clone());
        Ok(statement)
    }

    /// Runs `sql` with `params`; how many rows it changed.
    pub(super) fn execute(
        &mut self,
        sql: &str,
        params: &[rusqlite::types::Value],
    ) -> Result<u64, postgres::Error> {
        let binds: Vec<Bind<'_>> = params.iter().map(Bind).collect();
        let statement = self.statement(sql)?;
        let done = self.client.execute(&statement, &bound(&binds));
        if done.is_err() {
            // A statement the schema changed under (another replica's migration) is
            // prepared again next time.
            self.prepared.remove(sql);
        }
        done
    }

    /// The rows `sql` returns with `params`.
    pub(super) fn query(
        &mut self,
        sql: &str,
        params: &[rusqlite::types::Value],
    ) -> Result<Vec<Row>, postgres::Error> {
        let binds: Vec<Bind<'_>> = params.iter().map(Bind).collect();
        let statement = self.statement(sql)?;
        let rows = self.client.query(&statement, &bound(&binds));
        if rows.is_err() {
            self.prepared.remove(sql);
        }
        rows
    }

    /// Tells every listener, once this commits, that debate `id` has new events.
    pub(super) fn notify(&mut self, id: &str) {
        self.notify.insert(id.to_string());
    }

    /// Commits, with the notifications in the same round trip.
    pub(super) fn commit(mut self) -> Result<(), postgres::Error> {
        let mut sql = String::new();
        for id in std::mem::take(&mut self.notify) {
            sql.push_str(&format!(
                "SELECT pg_notify('{EVENTS_CHANNEL}', '{}');",
                id.replace('\'', "''")
            ));
        }
        sql.push_str("COMMIT");
        self.open = false;
        self.client.batch_execute(&sql)
    }
}

impl Drop for Tx<'_> {
    fn drop(&mut self) {
        if self.open {
            let _ = self.client.batch_execute("ROLLBACK");
        }
    }
}
