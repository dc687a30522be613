//! The journal's connections to PostgreSQL: up to `MOST` per process, each on a thread of its
//! own (the blocking client runs a runtime of its own, which may not be started on one of
//! tokio's threads), a new one opened only when every open one is busy, one the server dropped
//! (a restart, a failover, an idle timeout) opened again at its next transaction, and each
//! keeping the statements it has prepared, so a statement is parsed once per connection
//! rather than once per call (each statement of a write is a round trip of its own). Writes
//! queued while a connection was busy commit in one transaction (`Job::Write`).

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

/// The most writes one transaction commits together.
const GROUP: usize = 32;

/// A job for whichever connection takes it first.
pub(super) enum Job {
    /// Anything, on the connection as it is.
    Run(Box<dyn FnOnce(&mut Connection) + Send>),
    /// A write to one debate's journal. A connection commits the writes queued while it was
    /// busy in one transaction: the server does one BEGIN, one COMMIT and one flush of its
    /// log for all of them, which is most of what a small write costs it.
    Write(Write),
}

/// What a write does inside its transaction.
pub(super) type WriteWork = dyn Fn(&mut Tx<'_>) -> Result<(), StoreError> + Send;

/// One debate's write, as `Job::Write` carries it.
pub(super) struct Write {
    /// The debate whose row it locks. A transaction of several locks their rows in this
    /// order, so two such transactions never wait for each other.
    pub(super) debate: String,
    /// The write, inside a transaction. If the transaction it shared does not commit, it runs
    /// again alone, so one write's failure is never another's.
    pub(super) work: Box<WriteWork>,
    /// Told how it ended, once.
    pub(super) done: Box<dyn FnOnce(Result<(), StoreError>) + Send>,
}

/// What opens a connection (the URL, and how to speak TLS to the server it names).
pub(super) type Opener = Arc<dyn Fn() -> Result<Client, postgres::Error> + Send + Sync>;

/// The connections of one journal handle (and its clones).
#[derive(Clone)]
pub(super) struct Pool {
    jobs: mpsc::Sender<Job>,
    shared: Arc<Shared>,
}

struct Shared {
    /// The journal as errors name it (its URL without a password).
    shown: String,
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
            shown: shown.to_string(),
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

/// Runs jobs on `connection` until every handle is gone: a write with the writes queued
/// behind it (up to `GROUP`), together; anything else as it comes.
fn serve(shared: &Shared, mut connection: Connection) {
    let mut next = None;
    loop {
        let job = match next.take() {
            Some(job) => job,
            None => {
                shared.idle.fetch_add(1, Ordering::AcqRel);
                let job = match shared.waiting.lock() {
                    Ok(waiting) => waiting.recv(),
                    Err(_) => return,
                };
                shared.idle.fetch_sub(1, Ordering::AcqRel);
                match job {
                    Ok(job) => job,
                    Err(_) => return,
                }
            }
        };
        match job {
            Job::Run(job) => job(&mut connection),
            Job::Write(write) => {
                let mut writes = vec![write];
                // Held by another, the queue is being emptied by it (or is empty, the holder
                // waiting for the next job): there is nothing here to take.
                if let Ok(waiting) = shared.waiting.try_lock() {
                    while writes.len() < GROUP {
                        match waiting.try_recv() {
                            Ok(Job::Write(write)) => writes.push(write),
                            Ok(other) => {
                                next = Some(other);
                                break;
                            }
                            Err(_) => break,
                        }
                    }
                }
                connection.commit_writes(writes, &shared.shown);
            }
        }
    }
}

/// Why writes committed together did not commit.
enum GroupFailed {
    /// The write at this place failed; nothing was committed.
    Write(usize),
    /// Nothing of theirs was committed, and the connection is open: each can run alone.
    RunAlone,
    /// The connection closed as the server was told to commit: whether it did is unknown, so
    /// none runs again.
    Unknown(String),
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
            links: Vec::new(),
        })
    }

    /// Commits `writes`, together when there are several, and tells each how it ended. A
    /// write that fails in the shared transaction is taken out and run alone (its failure,
    /// or its success when the failure was the company's, is its own); the rest try again
    /// together.
    fn commit_writes(&mut self, mut writes: Vec<Write>, shown: &str) {
        writes.sort_by(|a, b| a.debate.cmp(&b.debate));
        while writes.len() > 1 {
            match self.together(&writes) {
                Ok(()) => {
                    for write in writes {
                        (write.done)(Ok(()));
                    }
                    return;
                }
                Err(GroupFailed::Write(at)) => {
                    let write = writes.remove(at);
                    let ended = self.alone(&write, shown);
                    (write.done)(ended);
                }
                Err(GroupFailed::Unknown(why)) => {
                    for write in writes {
                        (write.done)(Err(failed(shown, &why)));
                    }
                    return;
                }
                Err(GroupFailed::RunAlone) => break,
            }
        }
        for write in writes {
            let ended = self.alone(&write, shown);
            (write.done)(ended);
        }
    }

    /// Runs `writes` in one transaction and commits it.
    fn together(&mut self, writes: &[Write]) -> Result<(), GroupFailed> {
        let mut tx = self.begin().map_err(|_| GroupFailed::RunAlone)?;
        for (at, write) in writes.iter().enumerate() {
            (write.work)(&mut tx).map_err(|_| GroupFailed::Write(at))?;
        }
        match tx.commit() {
            Ok(()) => Ok(()),
            Err(error) if self.client.is_closed() => Err(GroupFailed::Unknown(format!(
                "the connection closed as the journal committed ({error}); the debate's \
                 journal says whether its last write is there"
            ))),
            Err(_) => Err(GroupFailed::RunAlone),
        }
    }

    /// Runs `write` in a transaction of its own and commits it.
    fn alone(&mut self, write: &Write, shown: &str) -> Result<(), StoreError> {
        let mut tx = self.begin().map_err(|e| failed_pg(shown, e))?;
        (write.work)(&mut tx)?;
        tx.commit().map_err(|e| failed_pg(shown, e))
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
    /// Chain entries made in this transaction and not yet sent: all of them go in one
    /// statement, before anything that reads the chain and before the commit.
    links: Vec<Link>,
}

/// One entry of a debate's chain, as its row holds it.
pub(super) struct Link {
    pub(super) debate: String,
    pub(super) n: i64,
    pub(super) facet: String,
    pub(super) key: String,
    pub(super) place: String,
    pub(super) content: String,
    pub(super) previous: String,
    pub(super) hash: String,
    pub(super) previous_place: Option<String>,
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

    /// Adds `link` to its debate's chain, with the transaction's other entries.
    pub(super) fn link(&mut self, link: Link) {
        self.links.push(link);
    }

    /// Sends the chain entries made so far, in one statement, when `sql` (about to run) may
    /// read the chain or the transaction is about to commit (`sql` None).
    fn send_links(&mut self, sql: Option<&str>) -> Result<(), postgres::Error> {
        if self.links.is_empty() || sql.is_some_and(|sql| !sql.contains("chain")) {
            return Ok(());
        }
        let links = std::mem::take(&mut self.links);
        let texts = |field: fn(&Link) -> &str| -> Vec<&str> { links.iter().map(field).collect() };
        let numbers: Vec<i64> = links.iter().map(|link| link.n).collect();
        let previous_places: Vec<Option<&str>> = links
            .iter()
            .map(|link| link.previous_place.as_deref())
            .collect();
        let statement = self.statement(
            "INSERT INTO chain (debate_id, n, facet, row_key, place, content, prev, hash,
                upgraded, prev_place)
             SELECT debate_id, n, facet, row_key, place, content, prev, hash, false, prev_place
             FROM unnest(?1::text[], ?2::bigint[], ?3::text[], ?4::text[], ?5::text[],
                ?6::text[], ?7::text[], ?8::text[], ?9::text[])
                AS entry (debate_id, n, facet, row_key, place, content, prev, hash, prev_place)",
        )?;
        self.client
            .execute(
                &statement,
                &[
                    &texts(|link| &link.debate),
                    &numbers,
                    &texts(|link| &link.facet),
                    &texts(|link| &link.key),
                    &texts(|link| &link.place),
                    &texts(|link| &link.content),
                    &texts(|link| &link.previous),
                    &texts(|link| &link.hash),
                    &previous_places,
                ],
            )
            .map(|_| ())
    }

    /// Runs `sql` with `params`; how many rows it changed.
    pub(super) fn execute(
        &mut self,
        sql: &str,
        params: &[rusqlite::types::Value],
    ) -> Result<u64, postgres::Error> {
        self.send_links(Some(sql))?;
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
        self.send_links(Some(sql))?;
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
        self.send_links(None)?;
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
