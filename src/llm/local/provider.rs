//! The embedded model: llama.cpp runs a GGUF chat model in-process on one worker thread per
//! loaded model, shared by every seat; requests queue in arrival order, stream token by token
//! into the `Provider` trait, and structured replies are sampled under the schema's grammar.

use super::LocalSettings;
use super::gguf::{self, GgufError};
use super::models::{DEMONSTRATION_NOTE, is_demonstration_model};
use crate::llm::grammar::Grammar;
use crate::llm::provider::{
    ChatRequest, Completion, FinishReason, LlmError, Provider, ProviderKind, TextSink, Usage,
};
use futures_util::future::BoxFuture;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use std::collections::VecDeque;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak, mpsc};
use std::time::Instant;

/// Why the embedded model could not be opened; each names the file and what to do.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LocalError {
    #[error("{source}: run `moot model pull` for the default model, or `moot model add PATH`")]
    Unusable {
        #[source]
        source: GgufError,
    },
    #[error("cannot start llama.cpp: {0}")]
    Backend(String),
    #[error(
        "llama.cpp could not load {path} ({detail}). Its architecture may be one this build of \
         llama.cpp does not know, or the file is damaged: run `moot model pull` again, or choose \
         another model with --model"
    )]
    Load { path: String, detail: String },
    #[error(
        "llama.cpp could not make a {size}-token context for {path} ({detail}): lower `context` \
         in [providers.local]"
    )]
    Context {
        path: String,
        size: u32,
        detail: String,
    },
    #[error("the chat template {0:?} contains a NUL byte")]
    TemplateName(String),
    #[error(
        "{path} carries no chat template: set `chat_template = \"chatml\"` (or llama3, \
         mistral-v7, …) in [providers.local]"
    )]
    NoTemplate { path: String },
    #[error("the model thread {0}")]
    Thread(&'static str),
}

/// What the worker tells the waiting request.
enum WorkerEvent {
    Text(String),
    Done(Completion, Timings),
    Failed(LlmError),
}

/// How long the phases of one request took on the worker.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Timings {
    pub prompt_tokens: usize,
    /// Prompt tokens found already in the cache and not evaluated again.
    pub reused_tokens: usize,
    pub prompt_ms: f64,
    pub generated_tokens: usize,
    pub generation_ms: f64,
    /// From the job leaving the queue to the first token's text.
    pub first_token_ms: f64,
    /// Tokens for which the grammar refused all the likeliest candidates and judged a wider set.
    pub grammar_fallbacks: usize,
    /// llama.cpp's own count of this request: prompt tokens it evaluated and how long it took,
    /// and tokens it generated and how long their evaluation took.
    pub llama_prompt_tokens: usize,
    pub llama_prompt_ms: f64,
    pub llama_generated_tokens: usize,
    pub llama_generation_ms: f64,
}

struct Job {
    system: String,
    messages: Vec<(String, String)>,
    grammar: Option<String>,
    max_tokens: u32,
    temperature: f32,
    top_k: usize,
    top_p: f32,
    repeat_penalty: f32,
    events: tokio::sync::mpsc::UnboundedSender<WorkerEvent>,
    cancel: Arc<AtomicBool>,
}

/// What was loaded, for the UI, errors and benchmarks.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedModel {
    pub name: String,
    pub path: PathBuf,
    pub architecture: String,
    pub context: u32,
    pub trained_context: u32,
    pub threads: u32,
    pub parameters: u64,
    pub bytes: u64,
}

/// One loaded model and the queue in front of its worker thread.
struct Engine {
    jobs: Mutex<mpsc::Sender<Job>>,
    loaded: LoadedModel,
}

/// What makes two loads the same: the file and what shapes its context.
type EngineKey = (PathBuf, Option<u32>, Option<u32>, Option<String>);

/// Models already loaded in this process, so that every seat shares one.
static ENGINES: Mutex<Vec<(EngineKey, Weak<Engine>)>> = Mutex::new(Vec::new());

/// llama.cpp's warnings and errors, most recent last: its own messages explain load failures.
static LOG: Mutex<VecDeque<String>> = Mutex::new(VecDeque::new());

unsafe extern "C" fn capture_log(
    level: llama_cpp_sys_2::ggml_log_level,
    text: *const std::os::raw::c_char,
    _user: *mut std::os::raw::c_void,
) {
    // ggml levels: 3 warn, 4 error, 5 continues the previous line. The rest is chatter that
    // must not reach the terminal the workbench draws on.
    if text.is_null() || !(3..=5).contains(&level) {
        return;
    }
    // SAFETY: llama.cpp passes a NUL-terminated string that lives for the call.
    let line = unsafe { std::ffi::CStr::from_ptr(text) }
        .to_string_lossy()
        .trim_end()
        .to_string();
    if let Ok(mut log) = LOG.lock() {
        if level == 5
            && let Some(last) = log.back_mut()
        {
            last.push_str(&line);
            return;
        }
        if log.len() == 16 {
            log.pop_front();
        }
        log.push_back(line);
    }
}

fn recent_log() -> String {
    LOG.lock()
        .map(|log| {
            log.iter()
                .rev()
                .take(3)
                .rev()
                .cloned()
                .collect::<Vec<_>>()
                .join("; ")
        })
        .unwrap_or_default()
}

fn backend() -> Result<&'static LlamaBackend, LocalError> {
    static BACKEND: OnceLock<Result<LlamaBackend, LocalError>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            // SAFETY: the callback is a plain function that only touches a mutex-guarded buffer.
            unsafe { llama_cpp_sys_2::llama_log_set(Some(capture_log), std::ptr::null_mut()) };
            LlamaBackend::init().map_err(|e| LocalError::Backend(e.to_string()))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// The model's worker, loading it on first use; later callers with the same file and settings
/// share it.
fn engine(path: &Path, settings: &LocalSettings) -> Result<Arc<Engine>, LocalError> {
    let key = (
        path.to_path_buf(),
        settings.context,
        settings.threads,
        settings.chat_template.clone(),
    );
    let mut engines = ENGINES
        .lock()
        .map_err(|_| LocalError::Thread("registry is poisoned"))?;
    engines.retain(|(_, engine)| engine.strong_count() > 0);
    if let Some(engine) = engines
        .iter()
        .find(|(k, _)| *k == key)
        .and_then(|(_, engine)| engine.upgrade())
    {
        return Ok(engine);
    }
    // A clear word on a missing, truncated or foreign file before llama.cpp gets it.
    gguf::inspect(path).map_err(|source| LocalError::Unusable { source })?;
    let (jobs, queue) = mpsc::channel::<Job>();
    let (ready, loaded) = mpsc::sync_channel(1);
    let worker_path = path.to_path_buf();
    let worker_settings = settings.clone();
    std::thread::Builder::new()
        .name("moot-local-model".into())
        .spawn(move || run_worker(&worker_path, &worker_settings, ready, queue))
        .map_err(|_| LocalError::Thread("could not be started"))?;
    let loaded = loaded
        .recv()
        .map_err(|_| LocalError::Thread("stopped while loading"))??;
    let engine = Arc::new(Engine {
        jobs: Mutex::new(jobs),
        loaded,
    });
    engines.push((key, Arc::downgrade(&engine)));
    Ok(engine)
}

fn run_worker(
    path: &Path,
    settings: &LocalSettings,
    ready: mpsc::SyncSender<Result<LoadedModel, LocalError>>,
    queue: mpsc::Receiver<Job>,
) {
    let model = match load_model(path) {
        Ok(model) => model,
        Err(problem) => {
            let _ = ready.send(Err(problem));
            return;
        }
    };
    let (mut context, template, info) = match prepare(&model, path, settings) {
        Ok(prepared) => prepared,
        Err(problem) => {
            let _ = ready.send(Err(problem));
            return;
        }
    };
    let _ = ready.send(Ok(info.clone()));
    let mut cache = Vec::new();
    // Ends when every provider sharing this model is gone and the channel closes.
    while let Ok(job) = queue.recv() {
        if job.cancel.load(Ordering::SeqCst) || job.events.is_closed() {
            continue;
        }
        match generate(&model, &mut context, &template, &info, &mut cache, &job) {
            Ok((completion, timings)) => {
                let _ = job.events.send(WorkerEvent::Done(completion, timings));
            }
            Err(error) => {
                // The cache may hold a half-evaluated prompt: start the next request clean.
                cache.clear();
                context.clear_kv_cache();
                let _ = job.events.send(WorkerEvent::Failed(error));
            }
        }
    }
}

fn default_threads() -> u32 {
    std::thread::available_parallelism().map_or(2, |n| n.get() as u32)
}

fn load_model(path: &Path) -> Result<LlamaModel, LocalError> {
    let backend = backend()?;
    LlamaModel::load_from_file(backend, path, &LlamaModelParams::default()).map_err(|e| {
        let log = recent_log();
        LocalError::Load {
            path: path.display().to_string(),
            detail: if log.is_empty() {
                e.to_string()
            } else {
                format!("{e}: {log}")
            },
        }
    })
}

/// The context (its KV cache sized by the settings) and chat template for a loaded model.
fn prepare<'m>(
    model: &'m LlamaModel,
    path: &Path,
    settings: &LocalSettings,
) -> Result<(LlamaContext<'m>, LlamaChatTemplate, LoadedModel), LocalError> {
    let backend = backend()?;
    let shown = path.display();
    let trained_context = model.n_ctx_train();
    let context_size = settings
        .context
        .unwrap_or_else(|| trained_context.clamp(512, 4096));
    let threads = settings.threads.unwrap_or_else(default_threads);
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(context_size))
        .with_n_batch(512)
        .with_n_threads(threads as i32)
        .with_n_threads_batch(threads as i32)
        // llama.cpp's own timings, reported beside ours by the benchmark.
        .with_no_perf(false);
    let context = model
        .new_context(backend, params)
        .map_err(|e| LocalError::Context {
            path: shown.to_string(),
            size: context_size,
            detail: e.to_string(),
        })?;
    let template = match &settings.chat_template {
        Some(name) => {
            LlamaChatTemplate::new(name).map_err(|_| LocalError::TemplateName(name.clone()))?
        }
        None => model
            .chat_template(None)
            .map_err(|_| LocalError::NoTemplate {
                path: shown.to_string(),
            })?,
    };
    let info = LoadedModel {
        name: path
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_else(|| "model".into()),
        path: path.to_path_buf(),
        architecture: model
            .meta_val_str("general.architecture")
            .unwrap_or_default(),
        context: context_size,
        trained_context,
        threads,
        parameters: model.n_params(),
        bytes: model.size(),
    };
    Ok((context, template, info))
}

/// How many of the likeliest tokens sampling considers.
const DEFAULT_TOP_K: usize = 40;

/// How many the grammar judges when it refuses all of the first `top_k`.
const WIDE_K: usize = 1024;

/// The `k` tokens with the highest logits, best first.
fn top_candidates(logits: &[f32], k: usize) -> LlamaTokenDataArray {
    let by_logit = |a: &(f32, usize), b: &(f32, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    let best: Vec<(f32, usize)> = if k <= 64 {
        // One pass with a short sorted list: no allocation the size of the vocabulary.
        let mut best: Vec<(f32, usize)> = Vec::with_capacity(k + 1);
        for (index, &logit) in logits.iter().enumerate() {
            if best.len() == k && logit <= best[k - 1].0 {
                continue;
            }
            let at = best.partition_point(|(other, _)| *other >= logit);
            best.insert(at, (logit, index));
            best.truncate(k);
        }
        best
    } else {
        let mut all: Vec<(f32, usize)> = logits.iter().copied().zip(0..).collect();
        if all.len() > k {
            all.select_nth_unstable_by(k, by_logit);
            all.truncate(k);
        }
        all.sort_unstable_by(by_logit);
        all
    };
    LlamaTokenDataArray::new(
        best.into_iter()
            .map(|(logit, index)| LlamaTokenData::new(LlamaToken::new(index as i32), logit, 0.0))
            .collect(),
        true,
    )
}

/// Penalises the candidates and keeps those the grammar allows. Refused tokens are dropped, not
/// left at -inf: the samplers after it trust a sorted array's first entry to be the likeliest.
fn admit(
    candidates: &mut LlamaTokenDataArray,
    penalties: &mut LlamaSampler,
    grammar: &mut LlamaSampler,
) {
    penalties.apply(candidates);
    grammar.apply(candidates);
    candidates.data.retain(|d| d.logit().is_finite());
}

/// Bytes of a token stream turned into text without splitting a UTF-8 sequence.
#[derive(Default)]
struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let valid = match std::str::from_utf8(&self.pending) {
            Ok(_) => self.pending.len(),
            // An incomplete sequence at the end waits for the next token; an invalid one is
            // replaced, so the stream never stalls.
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => {
                let text = String::from_utf8_lossy(&self.pending).into_owned();
                self.pending.clear();
                return text;
            }
        };
        let text = String::from_utf8_lossy(&self.pending[..valid]).into_owned();
        self.pending.drain(..valid);
        text
    }
}

fn fatal(problem: impl std::fmt::Display) -> LlmError {
    LlmError::Fatal(problem.to_string())
}

/// Runs one request: template, prompt evaluation reusing the cached prefix, then sampling
/// token by token under the grammar, streaming text to the requester.
fn generate(
    model: &LlamaModel,
    context: &mut LlamaContext<'_>,
    template: &LlamaChatTemplate,
    info: &LoadedModel,
    cache: &mut Vec<LlamaToken>,
    job: &Job,
) -> Result<(Completion, Timings), LlmError> {
    let started = Instant::now();
    context.reset_timings();
    let without_nul = |text: &str| text.replace('\0', "");
    let mut chat = Vec::with_capacity(job.messages.len() + 1);
    if !job.system.is_empty() {
        chat.push(LlamaChatMessage::new("system".into(), without_nul(&job.system)).map_err(fatal)?);
    }
    for (role, content) in &job.messages {
        chat.push(LlamaChatMessage::new(role.clone(), without_nul(content)).map_err(fatal)?);
    }
    let prompt = model.apply_chat_template(template, &chat, true).map_err(|e| {
        fatal(format!(
            "the chat template of {} could not be applied ({e}): set `chat_template = \"chatml\"` \
             (or llama3, mistral-v7, …) in [providers.local]",
            info.name
        ))
    })?;
    let vocab = model.vocab();
    let mut tokens = vocab.tokenize(prompt.as_bytes(), true, true);
    // Templates that spell out the BOS token would otherwise get it twice.
    if tokens.len() >= 2 && tokens[0] == vocab.bos() && tokens[1] == vocab.bos() {
        tokens.remove(0);
    }
    let context_size = context.n_ctx() as usize;
    if tokens.len() + 16 > context_size {
        return Err(fatal(format!(
            "the prompt is {} tokens but the local model's context holds {context_size}: raise \
             `context` in [providers.local] (this model was trained on {}), or end the debate \
             sooner",
            tokens.len(),
            info.trained_context
        )));
    }
    let budget = (job.max_tokens as usize).min(context_size - tokens.len());

    // Keep the longest cached prefix; at least the last prompt token is evaluated for logits.
    let mut reused = cache
        .iter()
        .zip(&tokens)
        .take_while(|(cached, new)| cached == new)
        .count()
        .min(tokens.len() - 1);
    if !matches!(
        context.clear_kv_cache_seq(Some(0), Some(reused as u32), None),
        Ok(true)
    ) {
        context.clear_kv_cache();
        reused = 0;
    }
    cache.truncate(reused);
    let batch_size = context.n_batch() as usize;
    let mut batch = LlamaBatch::new(batch_size.max(1), 1);
    let mut last_logits = 0;
    for (chunk_index, chunk) in tokens[reused..].chunks(batch_size).enumerate() {
        if job.events.is_closed() || job.cancel.load(Ordering::SeqCst) {
            return Err(fatal("cancelled"));
        }
        batch.clear();
        let base = reused + chunk_index * batch_size;
        for (offset, token) in chunk.iter().enumerate() {
            let position = base + offset;
            let is_last = position == tokens.len() - 1;
            batch
                .add(*token, position as i32, &[0], is_last)
                .map_err(fatal)?;
            if is_last {
                last_logits = offset as i32;
            }
        }
        context.decode(&mut batch).map_err(|e| {
            fatal(format!(
                "llama.cpp failed evaluating the prompt ({e}): {}",
                recent_log()
            ))
        })?;
        cache.extend_from_slice(chunk);
    }
    let prompt_done = Instant::now();

    let mut grammar = match &job.grammar {
        Some(gbnf) => Some(LlamaSampler::grammar(model, gbnf, "root").map_err(|e| {
            fatal(format!(
                "llama.cpp refused the reply grammar ({e}): {}",
                recent_log()
            ))
        })?),
        None => None,
    };
    let mut penalties = LlamaSampler::penalties(model.n_vocab(), 64, job.repeat_penalty, 0.0, 0.0);
    let seed = getrandom::u32().unwrap_or(0x5eed);
    let mut tail = LlamaSampler::chain_simple([
        LlamaSampler::top_p(job.top_p, 1),
        LlamaSampler::temp(job.temperature),
        LlamaSampler::dist(seed),
    ]);
    let mut text = String::new();
    let mut stream = Utf8Stream::default();
    let mut generated = 0usize;
    let mut first_token_ms = 0.0;
    let mut finish = FinishReason::Length;
    let mut position = tokens.len();
    let mut grammar_fallbacks = 0;
    while generated < budget {
        if job.events.is_closed() || job.cancel.load(Ordering::SeqCst) {
            return Err(fatal("cancelled"));
        }
        // The likeliest few, picked straight from the logits: building and penalising an array
        // of the whole vocabulary every token costs more than the model's own step here.
        let mut candidates = top_candidates(context.get_logits_ith(last_logits), job.top_k);
        match grammar.as_mut() {
            None => penalties.apply(&mut candidates),
            Some(grammar) => {
                // The grammar judges those first; only when it refuses them all is the whole
                // vocabulary (slow to check) given to it.
                admit(&mut candidates, &mut penalties, grammar);
                if candidates.data.is_empty() {
                    // Mostly the fixed parts, such as a property's name the model did not
                    // expect: a wider net usually holds them, and costs a fraction of the whole.
                    grammar_fallbacks += 1;
                    candidates = top_candidates(context.get_logits_ith(last_logits), WIDE_K);
                    admit(&mut candidates, &mut penalties, grammar);
                }
                if candidates.data.is_empty() {
                    candidates = context.token_data_array_ith(last_logits);
                    admit(&mut candidates, &mut penalties, grammar);
                    candidates.sorted = false;
                }
                candidates.selected = None;
            }
        }
        tail.apply(&mut candidates);
        let Some(token) = candidates.selected_token() else {
            return Err(fatal(
                "the sampler chose no token (the grammar admits none)",
            ));
        };
        if let Some(grammar) = grammar.as_mut() {
            grammar.accept(token);
        }
        penalties.accept(token);
        tail.accept(token);
        if vocab.is_eog(token) {
            finish = FinishReason::Stop;
            break;
        }
        let piece = stream.push(&vocab.token_to_piece(token, false, None));
        if generated == 0 {
            first_token_ms = started.elapsed().as_secs_f64() * 1000.0;
        }
        generated += 1;
        if !piece.is_empty() {
            text.push_str(&piece);
            let _ = job.events.send(WorkerEvent::Text(piece));
        }
        batch.clear();
        batch
            .add(token, position as i32, &[0], true)
            .map_err(fatal)?;
        context.decode(&mut batch).map_err(|e| {
            fatal(format!(
                "llama.cpp failed generating ({e}): {}",
                recent_log()
            ))
        })?;
        cache.push(token);
        position += 1;
        last_logits = 0;
    }
    let llama = context.timings();
    let timings = Timings {
        llama_prompt_tokens: llama.n_p_eval().max(0) as usize,
        llama_prompt_ms: llama.t_p_eval_ms(),
        llama_generated_tokens: llama.n_eval().max(0) as usize,
        llama_generation_ms: llama.t_eval_ms(),
        grammar_fallbacks,
        prompt_tokens: tokens.len(),
        reused_tokens: reused,
        prompt_ms: (prompt_done - started).as_secs_f64() * 1000.0,
        generated_tokens: generated,
        generation_ms: prompt_done.elapsed().as_secs_f64() * 1000.0,
        first_token_ms,
    };
    Ok((
        Completion {
            text,
            usage: Some(Usage {
                input: tokens.len() as u64,
                output: generated as u64,
            }),
            model: info.name.clone(),
            finish,
        },
        timings,
    ))
}

/// The provider face of an embedded model.
pub struct LocalProvider {
    engine: Arc<Engine>,
    settings: LocalSettings,
}

/// Characters of JSON a reply may hold per token of budget: bounds the grammar's strings.
const CHARS_PER_TOKEN: usize = 3;

impl LocalProvider {
    /// Loads (or shares) the model at `path`; errors name the file and the fix.
    pub fn open(path: &Path, settings: &LocalSettings) -> Result<LocalProvider, LocalError> {
        Ok(LocalProvider {
            engine: engine(path, settings)?,
            settings: settings.clone(),
        })
    }

    pub fn loaded(&self) -> &LoadedModel {
        &self.engine.loaded
    }

    /// Runs one request and also returns the worker's timings (for benchmarks).
    pub async fn complete_timed(
        &self,
        request: &ChatRequest,
        on_text: TextSink<'_>,
    ) -> Result<(Completion, Timings), LlmError> {
        let max_tokens = request
            .max_tokens
            .unwrap_or(self.settings.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS))
            .min(self.settings.max_tokens.unwrap_or(u32::MAX));
        let grammar = match &request.reply {
            Some(format) => Some(
                Grammar::from_schema(&format.schema, max_tokens as usize * CHARS_PER_TOKEN)
                    .map_err(fatal)?
                    .to_gbnf(),
            ),
            None => None,
        };
        let (events, mut receiver) = tokio::sync::mpsc::unbounded_channel();
        let cancel = Arc::new(AtomicBool::new(false));
        // Dropping this future (a timeout, a paused debate) stops the worker at the next token.
        let _cancel_on_drop = CancelOnDrop(cancel.clone());
        let job = Job {
            system: request.system.clone(),
            messages: request
                .messages
                .iter()
                .map(|m| (m.role.to_string(), m.content.clone()))
                .collect(),
            grammar,
            max_tokens,
            temperature: request.temperature.unwrap_or(0.6),
            top_k: self
                .settings
                .top_k
                .unwrap_or(DEFAULT_TOP_K as u32)
                .clamp(1, 1000) as usize,
            top_p: self.settings.top_p.unwrap_or(0.95).clamp(0.01, 1.0),
            repeat_penalty: self.settings.repeat_penalty.unwrap_or(1.1).clamp(1.0, 2.0),
            events,
            cancel,
        };
        self.engine
            .jobs
            .lock()
            .map_err(|_| fatal("the model queue is poisoned"))?
            .send(job)
            .map_err(|_| fatal("the local model's worker has stopped"))?;
        while let Some(event) = receiver.recv().await {
            match event {
                WorkerEvent::Text(piece) => on_text(&piece),
                WorkerEvent::Done(completion, timings) => return Ok((completion, timings)),
                WorkerEvent::Failed(error) => return Err(error),
            }
        }
        Err(fatal("the local model's worker stopped mid-reply"))
    }
}

/// Replies are capped here when neither the request nor the settings say otherwise.
const DEFAULT_MAX_TOKENS: u32 = 700;

struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl Provider for LocalProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Local
    }

    fn caveat(&self) -> Option<&'static str> {
        is_demonstration_model(self.model()).then_some(DEMONSTRATION_NOTE)
    }

    fn answers_one_at_a_time(&self) -> bool {
        true
    }

    fn model(&self) -> &str {
        &self.engine.loaded.name
    }

    fn endpoint(&self) -> String {
        format!("the embedded model {}", self.engine.loaded.path.display())
    }

    fn configure_hint(&self) -> String {
        "run `moot model list` to see the models on this machine, `moot model pull` for the default"
            .into()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_text: TextSink<'a>,
    ) -> BoxFuture<'a, Result<Completion, LlmError>> {
        Box::pin(async move {
            self.complete_timed(request, on_text)
                .await
                .map(|(completion, _)| completion)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gguf_llama_cpp_cannot_load_is_named_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("odd.gguf");
        std::fs::write(
            &path,
            super::super::gguf::tests::tiny_gguf("no-such-architecture", 16),
        )
        .unwrap();
        let error = LocalProvider::open(&path, &LocalSettings::default())
            .err()
            .unwrap()
            .to_string();
        assert!(error.contains("llama.cpp could not load"), "{error}");
        assert!(
            error.contains("odd.gguf") && error.contains("architecture"),
            "{error}"
        );
        assert!(
            error.contains("no-such-architecture"),
            "llama.cpp's own reason: {error}"
        );
    }

    #[test]
    fn the_top_candidates_are_the_highest_logits_in_order() {
        let logits = [0.5, 3.0, -1.0, 2.0, 3.0, 0.0];
        let top = top_candidates(&logits, 3);
        let picked: Vec<(i32, f32)> = top.data.iter().map(|d| (d.id().0, d.logit())).collect();
        assert_eq!(picked, vec![(1, 3.0), (4, 3.0), (3, 2.0)]);
        assert!(top.sorted);
        assert_eq!(top_candidates(&logits[..2], 3).data.len(), 2);
    }

    #[test]
    fn both_ways_of_picking_agree() {
        let logits: Vec<f32> = (0..5000)
            .map(|i| ((i * 7919) % 4999) as f32 / 10.0)
            .collect();
        let narrow = top_candidates(&logits, 40);
        let wide = top_candidates(&logits, 1000);
        assert_eq!(narrow.data[..], wide.data[..40]);
        assert!(wide.data.windows(2).all(|w| w[0].logit() >= w[1].logit()));
    }

    #[test]
    fn utf8_sequences_split_across_tokens_are_held_back() {
        let mut stream = Utf8Stream::default();
        let crab = "🦀".as_bytes();
        assert_eq!(stream.push(&crab[..2]), "");
        assert_eq!(stream.push(&crab[2..]), "🦀");
        assert_eq!(stream.push(b"ok"), "ok");
        assert_eq!(stream.push(&[0xff, b'a']), "\u{fffd}a");
    }
}
