//! The embedded model in a worker process that moot starts and owns, as Ollama runs a runner
//! per model: moot re-executed as `moot __local-worker`, the model loaded there and its
//! sequences batched there as in process, requests and streamed text over its stdin and
//! stdout, one JSON line each. A crash inside llama.cpp or a kernel (a signal, an abort, the
//! OOM killer) ends only the worker: every request in flight fails with what happened, and the
//! next request starts a fresh worker. Without a program to run (a test or a benchmark that
//! never named one), the model runs in process, as `LocalProvider`.
//!
//! One worker serves every provider of the same model and settings, as one in-process engine
//! does: the seats of a round are decoded together.

use super::LocalSettings;
use super::provider::{LocalError, LocalProvider};
use crate::debate::Phase;
use futures_util::future::BoxFuture;
use moot_llm::{
    ChatMessage, ChatRequest, Completion, LlmError, Provider, ProviderKind, ReplyFormat,
    RequestLabel, TextSink,
};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// The hidden subcommand a worker runs as.
pub const SUBCOMMAND: &str = "__local-worker";

/// The program workers run (moot's own binary); none: the model runs in process.
static PROGRAM: OnceLock<PathBuf> = OnceLock::new();

/// Runs the embedded model in workers started from `program` (moot's binary, which serves
/// `SUBCOMMAND`), from now on in this process.
pub fn run_in_workers(program: PathBuf) {
    let _ = PROGRAM.set(program);
}

/// The program workers run, when there is one.
pub fn program() -> Option<&'static Path> {
    PROGRAM.get().map(PathBuf::as_path)
}

/// What the worker is started with (its first line on stdin).
#[derive(Debug, Serialize, Deserialize)]
struct Start {
    path: PathBuf,
    settings: LocalSettings,
    openings: Option<PathBuf>,
    widened: Option<PathBuf>,
    as_stored: bool,
}

/// A request as it crosses to the worker.
#[derive(Debug, Serialize, Deserialize)]
struct WireRequest {
    seat: String,
    system: String,
    messages: Vec<(String, String)>,
    reply: Option<(String, serde_json::Value)>,
    max_tokens: Option<u32>,
    temperature: Option<f32>,
    reply_bytes: Option<usize>,
}

/// What moot sends a worker after its start.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ToWorker {
    Request {
        id: u64,
        request: WireRequest,
    },
    /// The request's caller gave up (a timeout, a pause): stop at the next token.
    Cancel {
        id: u64,
    },
}

/// What a worker says.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum FromWorker {
    /// The model is loaded: its name, and which of moot's kernels this CPU runs.
    Ready {
        model: String,
        kernels: String,
    },
    /// The model could not be loaded: why, as `LocalProvider::open` says it.
    Failed {
        message: String,
    },
    Text {
        id: u64,
        text: String,
    },
    Done {
        id: u64,
        completion: Completion,
    },
    Error {
        id: u64,
        message: String,
    },
}

/// What a request's caller hears from the worker.
enum Heard {
    Text(String),
    Done(Completion),
    Failed(LlmError),
}

/// A worker process and the requests it is answering.
struct Worker {
    child: Mutex<Child>,
    stdin: Mutex<ChildStdin>,
    /// Each request in flight: where its replies go.
    pending: Arc<Mutex<HashMap<u64, tokio::sync::mpsc::UnboundedSender<Heard>>>>,
    /// Why it stopped, once it has.
    died: Arc<Mutex<Option<String>>>,
    model: String,
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The last bytes a worker wrote to stderr, for the message that says why it died.
#[derive(Default)]
struct StderrTail(Mutex<Vec<u8>>);

impl StderrTail {
    fn push(&self, bytes: &[u8]) {
        if let Ok(mut tail) = self.0.lock() {
            tail.extend_from_slice(bytes);
            let excess = tail.len().saturating_sub(2048);
            tail.drain(..excess);
        }
    }

    fn last_line(&self) -> Option<String> {
        let tail = self.0.lock().ok()?;
        let text = crate::sanitize::clean(&String::from_utf8_lossy(&tail));
        text.lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| l.trim().to_string())
    }
}

/// What a worker's end says, in the person's words.
fn death(status: std::process::ExitStatus, said: Option<String>) -> String {
    use std::os::unix::process::ExitStatusExt;
    let how = match (status.signal(), status.code()) {
        (Some(signal), _) => format!("was killed by signal {signal} ({})", signal_name(signal)),
        (None, Some(code)) => format!("exited with status {code}"),
        (None, None) => "stopped".to_string(),
    };
    let said = said
        .map(|line| format!("; its last words: {line}"))
        .unwrap_or_default();
    format!("the embedded model's worker {how}{said}")
}

/// A signal's name as a person reads it.
fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGILL => "illegal instruction",
        libc::SIGSEGV => "segmentation fault",
        libc::SIGBUS => "bus error",
        libc::SIGFPE => "arithmetic error",
        libc::SIGABRT => "aborted",
        libc::SIGKILL => "killed, perhaps by the kernel for want of memory",
        libc::SIGTERM => "terminated",
        _ => "a fatal signal",
    }
}

/// Spawns `command` from one thread that lives as long as moot: the worker's
/// `PR_SET_PDEATHSIG` fires when the thread that forked it ends, and the thread asking for a
/// worker may be a pool's, which ends when idle.
fn spawn_from_a_lasting_thread(command: Command) -> std::io::Result<Child> {
    type Order = (Command, std::sync::mpsc::Sender<std::io::Result<Child>>);
    static SPAWNER: OnceLock<Mutex<std::sync::mpsc::Sender<Order>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (orders, received) = std::sync::mpsc::channel::<Order>();
        // Never joined: it waits for orders until moot exits.
        let _ = std::thread::Builder::new()
            .name("moot-worker-spawner".into())
            .spawn(move || {
                for (mut command, reply) in received {
                    let _ = reply.send(command.spawn());
                }
            });
        Mutex::new(orders)
    });
    let (reply, spawned) = std::sync::mpsc::channel();
    spawner
        .lock()
        .map_err(|_| std::io::Error::other("the workers' spawner is poisoned"))?
        .send((command, reply))
        .map_err(|_| std::io::Error::other("the workers' spawner has stopped"))?;
    spawned
        .recv()
        .map_err(|_| std::io::Error::other("the workers' spawner has stopped"))?
}

impl Worker {
    /// Starts a worker on `start` and waits until its model is loaded.
    fn start(program: &Path, start: &Start) -> Result<Arc<Worker>, LocalError> {
        use std::os::unix::process::CommandExt;
        let backend = |detail: String| LocalError::Backend(detail);
        let mut command = Command::new(program);
        command
            .arg(SUBCOMMAND)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group: Ctrl-C at the terminal is moot's to answer, not the
            // worker's to die of.
            .process_group(0);
        // SAFETY: prctl with plain integers, between fork and exec.
        unsafe {
            command.pre_exec(|| {
                // moot gone (even by SIGKILL): so is its worker.
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = spawn_from_a_lasting_thread(command).map_err(|e| {
            backend(format!(
                "cannot start the embedded model's worker ({}): {e}",
                program.display()
            ))
        })?;
        let (Some(mut stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(backend("the worker's pipes were not made".into()));
        };
        let tail = Arc::new(StderrTail::default());
        {
            let tail = tail.clone();
            std::thread::Builder::new()
                .name("moot-worker-stderr".into())
                .spawn(move || {
                    let mut stderr = stderr;
                    let mut buffer = [0u8; 4096];
                    while let Ok(n) = stderr.read(&mut buffer) {
                        if n == 0 {
                            break;
                        }
                        tail.push(&buffer[..n]);
                    }
                })
                .map_err(|e| backend(e.to_string()))?;
        }
        let line = serde_json::to_string(start).map_err(|e| backend(e.to_string()))?;
        let mut lines = BufReader::new(stdout);
        let mut first = String::new();
        let ready = writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .and_then(|()| lines.read_line(&mut first));
        let model = match (ready, serde_json::from_str::<FromWorker>(&first)) {
            (Ok(n), Ok(FromWorker::Ready { model, .. })) if n > 0 => model,
            (Ok(n), Ok(FromWorker::Failed { message })) if n > 0 => {
                let _ = child.wait();
                return Err(LocalError::Worker(message));
            }
            _ => {
                let _ = child.kill();
                let status = child.wait().map_err(|e| backend(e.to_string()))?;
                return Err(LocalError::Worker(death(status, tail.last_line())));
            }
        };
        let worker = Arc::new(Worker {
            child: Mutex::new(child),
            stdin: Mutex::new(stdin),
            pending: Arc::default(),
            died: Arc::default(),
            model,
        });
        let reader = Arc::downgrade(&worker);
        let pending = worker.pending.clone();
        let died = worker.died.clone();
        std::thread::Builder::new()
            .name("moot-worker-replies".into())
            .spawn(move || read_replies(lines, pending, died, reader, tail))
            .map_err(|e| backend(e.to_string()))?;
        Ok(worker)
    }

    /// Sends a line to the worker; false once it is gone.
    fn send(&self, message: &ToWorker) -> bool {
        let Ok(line) = serde_json::to_string(message) else {
            return false;
        };
        let Ok(mut stdin) = self.stdin.lock() else {
            return false;
        };
        writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .is_ok()
    }

    fn dead(&self) -> Option<String> {
        self.died.lock().ok().and_then(|d| d.clone())
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Ok(mut child) = self.child.lock() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The reader of a worker's replies: each line to the request it answers; at the end (the
/// worker died), why, to every request still waiting, and kept for the next caller to see.
fn read_replies(
    lines: BufReader<std::process::ChildStdout>,
    pending: Arc<Mutex<HashMap<u64, tokio::sync::mpsc::UnboundedSender<Heard>>>>,
    died: Arc<Mutex<Option<String>>>,
    worker: std::sync::Weak<Worker>,
    tail: Arc<StderrTail>,
) {
    for line in lines.lines() {
        let Ok(line) = line else { break };
        let Ok(message) = serde_json::from_str::<FromWorker>(&line) else {
            continue;
        };
        let (id, heard, last) = match message {
            FromWorker::Text { id, text } => (id, Heard::Text(text), false),
            FromWorker::Done { id, completion } => (id, Heard::Done(completion), true),
            FromWorker::Error { id, message } => {
                (id, Heard::Failed(LlmError::Fatal(message)), true)
            }
            FromWorker::Ready { .. } | FromWorker::Failed { .. } => continue,
        };
        let Ok(mut pending) = pending.lock() else {
            break;
        };
        if let Some(sender) = pending.get(&id) {
            let _ = sender.send(heard);
        }
        if last {
            pending.remove(&id);
        }
    }
    // The worker's stdout closed: it has ended, or is about to.
    let status = worker
        .upgrade()
        .and_then(|w| w.child.lock().ok().and_then(|mut c| c.wait().ok()));
    let why = match status {
        Some(status) => death(status, tail.last_line()),
        None => "the embedded model's worker stopped".to_string(),
    };
    if let Ok(mut died) = died.lock() {
        *died = Some(why.clone());
    }
    if let Ok(mut pending) = pending.lock() {
        for (_, sender) in pending.drain() {
            let _ = sender.send(Heard::Failed(LlmError::Fatal(why.clone())));
        }
    }
}

/// The workers of this process, one a model and its settings.
static WORKERS: OnceLock<Mutex<HashMap<String, Arc<WorkerSlot>>>> = OnceLock::new();

/// One model's worker, started again when the last one died.
struct WorkerSlot {
    start: Start,
    program: PathBuf,
    current: Mutex<Option<Arc<Worker>>>,
}

impl WorkerSlot {
    /// The live worker, started (again) if there is none.
    fn worker(&self) -> Result<Arc<Worker>, LocalError> {
        let mut current = self
            .current
            .lock()
            .map_err(|_| LocalError::Backend("the worker's slot is poisoned".into()))?;
        if let Some(worker) = current.as_ref().filter(|w| w.dead().is_none()) {
            return Ok(worker.clone());
        }
        let worker = Worker::start(&self.program, &self.start)?;
        *current = Some(worker.clone());
        Ok(worker)
    }
}

/// The face of an embedded model whose engine runs in a worker process.
pub struct WorkerProvider {
    slot: Arc<WorkerSlot>,
    model: String,
    path: PathBuf,
}

impl WorkerProvider {
    /// The provider for the model at `path`, sharing the worker that already serves it with
    /// these settings, or starting one (which loads the model) and waiting until it is ready.
    pub fn open(
        program: &Path,
        path: &Path,
        settings: &LocalSettings,
    ) -> Result<WorkerProvider, LocalError> {
        // A file llama.cpp should never see is refused here, as in process, before a worker
        // starts for it.
        moot_llm::gguf::inspect(path).map_err(|source| LocalError::Unusable { source })?;
        let start = Start {
            path: path.to_path_buf(),
            settings: settings.clone(),
            openings: settings.openings.clone(),
            widened: settings.widened.clone(),
            as_stored: settings.as_stored,
        };
        let key = serde_json::to_string(&start).unwrap_or_default();
        let slot = {
            let mut workers = WORKERS
                .get_or_init(Mutex::default)
                .lock()
                .map_err(|_| LocalError::Backend("the workers' table is poisoned".into()))?;
            workers
                .entry(key)
                .or_insert_with(|| {
                    Arc::new(WorkerSlot {
                        start,
                        program: program.to_path_buf(),
                        current: Mutex::new(None),
                    })
                })
                .clone()
        };
        let worker = slot.worker()?;
        Ok(WorkerProvider {
            model: worker.model.clone(),
            slot,
            path: path.to_path_buf(),
        })
    }

    async fn ask(
        &self,
        request: &ChatRequest,
        on_text: TextSink<'_>,
    ) -> Result<Completion, LlmError> {
        let slot = self.slot.clone();
        // A fresh worker loads the model: seconds, off the async threads.
        let worker = tokio::task::spawn_blocking(move || slot.worker())
            .await
            .map_err(|e| LlmError::Fatal(e.to_string()))?
            .map_err(|e| LlmError::Fatal(e.to_string()))?;
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let (sender, mut heard) = tokio::sync::mpsc::unbounded_channel();
        if let Ok(mut pending) = worker.pending.lock() {
            pending.insert(id, sender);
        }
        if let Some(why) = worker.dead() {
            return Err(LlmError::Fatal(why));
        }
        let wire = WireRequest {
            seat: request.label.seat.clone(),
            system: request.system.clone(),
            messages: request.role_content_pairs(),
            reply: request
                .reply
                .as_ref()
                .map(|r| (r.name.clone(), r.schema.clone())),
            max_tokens: request.max_tokens,
            temperature: request.temperature,
            reply_bytes: request.reply_bytes,
        };
        // Dropping this future (a timeout, a pause) tells the worker to stop the request.
        let _cancel = CancelOnDrop {
            worker: worker.clone(),
            id,
        };
        if !worker.send(&ToWorker::Request { id, request: wire }) {
            let why = worker
                .dead()
                .unwrap_or_else(|| "the embedded model's worker stopped taking requests".into());
            return Err(LlmError::Fatal(why));
        }
        while let Some(message) = heard.recv().await {
            match message {
                Heard::Text(piece) => on_text(&piece),
                Heard::Done(completion) => return Ok(completion),
                Heard::Failed(error) => return Err(error),
            }
        }
        Err(LlmError::Fatal(worker.dead().unwrap_or_else(|| {
            "the embedded model's worker stopped mid-reply".into()
        })))
    }
}

/// Cancels request `id` in its worker when dropped before it finished.
struct CancelOnDrop {
    worker: Arc<Worker>,
    id: u64,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let still = self
            .worker
            .pending
            .lock()
            .map(|mut p| p.remove(&self.id).is_some())
            .unwrap_or(false);
        if still {
            self.worker.send(&ToWorker::Cancel { id: self.id });
        }
    }
}

impl Provider for WorkerProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Local
    }

    fn caveat(&self) -> Option<&'static str> {
        moot_llm::models::is_demonstration_model(&self.model)
            .then_some(moot_llm::models::DEMONSTRATION_NOTE)
    }

    fn answers_one_at_a_time(&self) -> bool {
        true
    }

    fn schema_instructions(&self, reply: &ReplyFormat) -> String {
        moot_llm::instructions::field_instructions(&reply.name, &reply.schema)
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn endpoint(&self) -> String {
        super::provider::endpoint(&self.path)
    }

    fn configure_hint(&self) -> String {
        super::provider::CONFIGURE_HINT.into()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_text: TextSink<'a>,
    ) -> BoxFuture<'a, Result<Completion, LlmError>> {
        Box::pin(self.ask(request, on_text))
    }
}

/// `moot __local-worker`: loads the model its first stdin line names, says it is ready (or why
/// it is not), then answers requests until stdin closes, each on a task of its own so that the
/// requests in flight are decoded together, as in process.
pub fn serve() -> std::process::ExitCode {
    // A signal that says the worker is broken ends it, as moot then tells: Rust's own handler
    // (for stack overflows) would let a SIGSEGV or SIGBUS sent from outside go by once.
    // SAFETY: signal(2) with the default action, before any thread is started.
    unsafe {
        libc::signal(libc::SIGSEGV, libc::SIG_DFL);
        libc::signal(libc::SIGBUS, libc::SIG_DFL);
    }
    let mut stdin = BufReader::new(std::io::stdin());
    let mut first = String::new();
    if stdin.read_line(&mut first).is_err() {
        return std::process::ExitCode::from(2);
    }
    let Ok(start) = serde_json::from_str::<Start>(&first) else {
        eprintln!("moot: the worker's start line is not moot's");
        return std::process::ExitCode::from(2);
    };
    let (to_moot, mut outgoing) = tokio::sync::mpsc::unbounded_channel::<FromWorker>();
    // The one writer of stdout: a line a message, never two interleaved.
    let writer = std::thread::spawn(move || {
        let mut stdout = std::io::stdout().lock();
        while let Some(message) = outgoing.blocking_recv() {
            let Ok(line) = serde_json::to_string(&message) else {
                continue;
            };
            if writeln!(stdout, "{line}")
                .and_then(|()| stdout.flush())
                .is_err()
            {
                break;
            }
        }
    });
    let settings = LocalSettings {
        openings: start.openings.clone(),
        widened: start.widened.clone(),
        as_stored: start.as_stored,
        ..start.settings.clone()
    };
    let provider = match LocalProvider::open(&start.path, &settings) {
        Ok(provider) => Arc::new(provider),
        Err(e) => {
            let _ = to_moot.send(FromWorker::Failed {
                message: e.to_string(),
            });
            drop(to_moot);
            let _ = writer.join();
            return std::process::ExitCode::from(1);
        }
    };
    let _ = to_moot.send(FromWorker::Ready {
        model: provider.model().to_string(),
        kernels: kernels_here(),
    });
    let Ok(runtime) = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    else {
        return std::process::ExitCode::from(1);
    };
    let running: Arc<Mutex<HashMap<u64, tokio::task::AbortHandle>>> = Arc::default();
    for line in stdin.lines() {
        let Ok(line) = line else { break };
        match serde_json::from_str::<ToWorker>(&line) {
            Ok(ToWorker::Request { id, request }) => {
                let provider = provider.clone();
                let to_moot = to_moot.clone();
                let finished = running.clone();
                let task = runtime.spawn(async move {
                    let request = request.into_request();
                    let mut on_text = |piece: &str| {
                        let _ = to_moot.send(FromWorker::Text {
                            id,
                            text: piece.to_string(),
                        });
                    };
                    let message = match provider.complete(&request, &mut on_text).await {
                        Ok(completion) => FromWorker::Done { id, completion },
                        Err(e) => FromWorker::Error {
                            id,
                            message: e.to_string(),
                        },
                    };
                    let _ = to_moot.send(message);
                    if let Ok(mut finished) = finished.lock() {
                        finished.remove(&id);
                    }
                });
                if let Ok(mut running) = running.lock() {
                    running.insert(id, task.abort_handle());
                }
            }
            // Aborting the task drops its request, which stops at the next token.
            Ok(ToWorker::Cancel { id }) => {
                if let Some(task) = running.lock().ok().and_then(|mut r| r.remove(&id)) {
                    task.abort();
                }
            }
            Err(_) => {}
        }
    }
    // moot closed our stdin: it is done with the model.
    std::process::ExitCode::SUCCESS
}

impl WireRequest {
    fn into_request(self) -> ChatRequest {
        let role = |r: &str| -> &'static str {
            match r {
                "assistant" => "assistant",
                "system" => "system",
                _ => "user",
            }
        };
        ChatRequest {
            label: RequestLabel {
                round: 0,
                phase: Phase::Argument,
                seat: self.seat,
                perspective: None,
                request: "moot_worker",
            },
            system: self.system,
            messages: self
                .messages
                .iter()
                .map(|(r, content)| ChatMessage {
                    role: role(r),
                    content: content.clone(),
                })
                .collect(),
            reply: self
                .reply
                .map(|(name, schema)| ReplyFormat { name, schema }),
            max_tokens: self.max_tokens,
            temperature: self.temperature,
            reply_bytes: self.reply_bytes,
        }
    }
}

/// Which of moot's kernels this CPU runs, in a few words (`q8_0 avx2, attention off`).
pub fn kernels_here() -> String {
    #[cfg(moot_kernel_choice)]
    {
        let row = match moot_q8_0::level() {
            moot_q8_0::Level::Vnni => "vnni",
            moot_q8_0::Level::Avx2 => "avx2",
            moot_q8_0::Level::Portable => "off",
        };
        let attention = if moot_attention::available() {
            "avx512"
        } else {
            "off"
        };
        format!("q8_0 {row}, attention {attention}")
    }
    #[cfg(not(moot_kernel_choice))]
    {
        "none built".to_string()
    }
}
