//! The embedded model: llama.cpp runs a GGUF chat model in-process on one worker thread per
//! loaded model, shared by every seat. The worker (`batch`) decodes the requests in flight
//! together; here are loading, sampling helpers and the `Provider` face, which streams token by
//! token and samples structured replies under the schema's grammar.

use super::LocalSettings;
use super::batch::Scheduler;
use super::draft::{DEFAULT_DRAFTS, MOST_DRAFTS};
use super::openings::Openings;
use futures_util::TryFutureExt;
use futures_util::future::BoxFuture;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::{KvCacheType, LlamaContextParams};
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatTemplate, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use moot_llm::gguf::{self, GgufError};
use moot_llm::grammar::Grammar;
use moot_llm::models::{DEMONSTRATION_NOTE, is_demonstration_model};
use moot_llm::provider::{
    ChatRequest, Completion, LlmError, Provider, ProviderKind, ReplyFormat, TextSink,
};
use std::collections::VecDeque;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak, mpsc};

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
    /// What the model's worker process said (its own error, or how it died), as it said it.
    #[error("{0}")]
    Worker(String),
}

/// What the worker tells the waiting request.
pub(super) enum WorkerEvent {
    Text(String),
    Done(Completion, Timings),
    Failed(LlmError),
}

/// How long the phases of one request took on the worker.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timings {
    pub prompt_tokens: usize,
    /// Prompt tokens found already in the cache and not evaluated again.
    pub reused_tokens: usize,
    /// Cached tokens of another request that the slot this one took forgot (the slot idle
    /// longest, when no idle one held nothing this prompt would lose).
    pub evicted_tokens: usize,
    /// The most requests llama.cpp computed in one step while this one ran (those in one
    /// batch on consecutive slots).
    pub decoded_together: usize,
    /// The likeliest tokens at the reply's first position with their logits, best first.
    pub first_logits: Vec<(i32, f32)>,
    pub prompt_ms: f64,
    pub generated_tokens: usize,
    pub generation_ms: f64,
    /// From the job leaving the queue to the first token's text.
    pub first_token_ms: f64,
    /// Tokens for which the grammar refused all the likeliest candidates and judged a wider set.
    pub grammar_fallbacks: usize,
    /// Tokens drafted ahead from the reply's context (`draft`), and how many of them the
    /// sampler drew anyway and so were kept.
    pub drafted_tokens: usize,
    pub drafts_kept: usize,
    /// llama.cpp's own count, since the worker was last idle (of every request decoded
    /// together with this one): prompt tokens it evaluated and how long it took, and tokens it
    /// generated and how long their evaluation took.
    pub llama_prompt_tokens: usize,
    pub llama_prompt_ms: f64,
    pub llama_generated_tokens: usize,
    pub llama_generation_ms: f64,
}

/// One request as the worker takes it.
pub(super) struct Job {
    /// Who asks (the request label's seat): a speaker's turns go to the slot its last turn
    /// left, so that other speakers' caches are not evicted for it.
    pub(super) speaker: String,
    pub(super) system: String,
    pub(super) messages: Vec<(String, String)>,
    pub(super) grammar: Option<String>,
    pub(super) max_tokens: u32,
    pub(super) temperature: f32,
    pub(super) top_k: usize,
    pub(super) top_p: f32,
    pub(super) repeat_penalty: f32,
    /// The most tokens drafted ahead a step when this reply is decoded alone (`draft`).
    pub(super) drafts: usize,
    pub(super) events: tokio::sync::mpsc::UnboundedSender<WorkerEvent>,
    pub(super) cancel: Arc<AtomicBool>,
}

/// What was loaded, for the UI, errors and benchmarks.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedModel {
    pub name: String,
    pub path: PathBuf,
    pub architecture: String,
    /// The tokens one sequence (one request, prompt and reply) may hold.
    pub context: u32,
    /// How many requests are decoded together, each in its own sequence of the KV cache.
    pub sequences: u32,
    /// The KV cache's size in tokens: `context` for each sequence.
    pub cache: u32,
    pub trained_context: u32,
    pub threads: u32,
    pub parameters: u64,
    pub bytes: u64,
    /// How the cache is laid out: key and value types, and whether flash attention (moot's
    /// own kernel, where it is on) computes the attention.
    pub cache_layout: String,
}

/// One loaded model and the queue in front of its worker thread.
struct Engine {
    jobs: Mutex<mpsc::Sender<Job>>,
    loaded: LoadedModel,
}

/// What makes two loads the same: the file, the weights read (as stored or widened, and
/// where), and what shapes its context.
type EngineKey = (
    PathBuf,
    Option<u32>,
    Option<u32>,
    Option<u32>,
    Option<String>,
    Option<PathBuf>,
    Option<PathBuf>,
    bool,
);

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

pub(super) fn recent_log() -> String {
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

pub(super) fn backend() -> Result<&'static LlamaBackend, LocalError> {
    static BACKEND: OnceLock<Result<LlamaBackend, LocalError>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            // SAFETY: the callback is a plain function that only touches a mutex-guarded buffer.
            unsafe { llama_cpp_sys_2::llama_log_set(Some(capture_log), std::ptr::null_mut()) };
            #[cfg(moot_kernel_choice)]
            std::hint::black_box((super::kernels::linked(), super::attention::linked()));
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
        settings.sequences,
        settings.threads,
        settings.chat_template.clone(),
        settings.openings.clone(),
        settings.widened.clone(),
        settings.as_stored,
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
    let header = gguf::inspect(path).map_err(|source| LocalError::Unusable { source })?;
    let (jobs, queue) = mpsc::channel::<Job>();
    let (ready, loaded) = mpsc::sync_channel(1);
    let worker_path = path.to_path_buf();
    let worker_settings = settings.clone();
    std::thread::Builder::new()
        .name("moot-local-model".into())
        .spawn(move || run_worker(&worker_path, &header, &worker_settings, ready, queue))
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
    header: &gguf::GgufInfo,
    settings: &LocalSettings,
    ready: mpsc::SyncSender<Result<LoadedModel, LocalError>>,
    queue: mpsc::Receiver<Job>,
) {
    if let Err(problem) = backend() {
        let _ = ready.send(Err(problem));
        return;
    }
    let threads = settings.threads.unwrap_or_else(default_threads);
    let widened = (!settings.as_stored)
        .then(|| {
            let dir = settings
                .widened
                .clone()
                .unwrap_or_else(|| moot_llm::models::widened_dir(&moot_llm::models::models_dir()));
            super::widen::widened(path, header, &dir, threads)
        })
        .flatten();
    // What is loaded; the model keeps the name and path it is stored under.
    let weights = widened.as_deref().unwrap_or(path);
    let model = match load_model(weights) {
        Ok(model) => model,
        Err(problem) => {
            let _ = ready.send(Err(problem));
            return;
        }
    };
    // Dropped before the model (declared after it), and with it the weights' packed copies.
    #[cfg(moot_kernel_choice)]
    let _packed = super::packed_weights::register(weights);
    let (context, template, info) = match prepare(&model, path, settings) {
        Ok(prepared) => prepared,
        Err(problem) => {
            let _ = ready.send(Err(problem));
            return;
        }
    };
    let _ = ready.send(Ok(info.clone()));
    let openings_dir = settings
        .openings
        .clone()
        .unwrap_or_else(|| moot_llm::models::models_dir().join("openings"));
    let openings = Openings::new(
        Some(openings_dir),
        weights,
        info.sequences,
        &info.cache_layout,
    );
    // Ends when every provider sharing this model is gone and the channel closes.
    Scheduler::new(&model, context, template, info, openings).serve(&queue);
}

fn default_threads() -> u32 {
    std::thread::available_parallelism().map_or(2, |n| n.get() as u32)
}

pub(super) fn load_model(path: &Path) -> Result<LlamaModel, LocalError> {
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

/// How a context's attention is computed and its cache laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Attention {
    /// moot's own kernel (`attention`), which llama.cpp reaches through flash attention, over
    /// Q8_0 keys and values: where the build has the kernel and the model's heads fit it.
    Own,
    /// llama.cpp's products and softmax, without flash attention: Q8_0 keys, F16 values.
    Llama,
}

/// Which attention a model gets: moot's own where this build has it for the model's key and
/// value heads (GGUF's `attention.key_length` and `value_length`, the embedding over the
/// heads where those are not given).
fn attention_for(model: &LlamaModel) -> Attention {
    #[cfg(moot_kernel_choice)]
    {
        let architecture = model
            .meta_val_str("general.architecture")
            .unwrap_or_default();
        let shared = u32::try_from(model.n_embd()).unwrap_or(0) / model.n_head().max(1);
        let length = |which: &str| {
            model
                .meta_val_str(&format!("{architecture}.attention.{which}_length"))
                .ok()
                .and_then(|value| value.parse::<u32>().ok())
                .unwrap_or(shared)
        };
        let (key, value) = (length("key"), length("value"));
        if key == value && super::attention::takes(key as usize) {
            return Attention::Own;
        }
    }
    let _ = model;
    Attention::Llama
}

/// How the context is made: `cache` cells in all, a part for each of `sequences`.
fn context_params(
    cache: u32,
    sequences: u32,
    threads: u32,
    attention: Attention,
) -> LlamaContextParams {
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(cache))
        .with_n_seq_max(sequences)
        // A part of the cache per sequence: attention then reads only the sequence's own
        // cells. One shared cache (unified) costs every token attention over every sequence's
        // cells, which made two seats decoded together slower than one after the other.
        .with_kv_unified(false)
        // Keys kept as Q8_0: a step's attention reads every cached key, and Q8_0 keys are a
        // little over half the bytes of F16 ones. Measured without flash attention: 128 tokens
        // after a 1,330-token prompt came at 44 tok/s against 40 with F16 keys (six runs each),
        // and the first token's logits moved by at most 0.2.
        .with_type_k(KvCacheType::Q8_0)
        .with_n_batch(512)
        .with_n_threads(threads as i32)
        .with_n_threads_batch(threads as i32)
        // llama.cpp's own timings, reported beside ours by the benchmark.
        .with_no_perf(false);
    match attention {
        // Flash attention is what llama.cpp calls moot's kernel through (`attention`), and
        // what lets it keep values as Q8_0 (stored by cell rather than transposed): a step
        // reads every cached value too. ARCHITECTURE.md ("The embedded model") has what each
        // layout measured.
        Attention::Own => params
            .with_flash_attention_policy(llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_ENABLED)
            .with_type_v(KvCacheType::Q8_0),
        // llama.cpp's own CPU flash attention (which its default, auto, turns on) is slow to
        // generate over a long cache: on the default model, 96 tokens after a 1,500-token
        // prompt took 5.2 s with it and 1.4 s without. Values stay F16: llama.cpp stores them
        // transposed, and quantized only with flash attention.
        Attention::Llama => params
            .with_flash_attention_policy(llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_DISABLED)
            .with_type_v(KvCacheType::F16),
    }
}

/// How `context_params` lays the cache out (key and value types, attention kernel): what a
/// file of a sequence's cells depends on besides the model and the sequence count.
fn cache_layout(attention: Attention) -> String {
    let params = context_params(1, 1, 1, attention);
    format!(
        "{:?} keys, {:?} values, flash attention {}",
        params.type_k(),
        params.type_v(),
        params.flash_attention_policy()
    )
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
    let sequences = settings.sequences.unwrap_or(DEFAULT_SEQUENCES).clamp(1, 64);
    let cache = context_size.saturating_mul(sequences);
    let threads = settings.threads.unwrap_or_else(default_threads);
    let attention = attention_for(model);
    let params = context_params(cache, sequences, threads, attention);
    let context = model
        .new_context(backend, params)
        .map_err(|e| LocalError::Context {
            path: shown.to_string(),
            size: cache,
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
        sequences,
        cache,
        trained_context,
        threads,
        parameters: model.n_params(),
        bytes: model.size(),
        cache_layout: cache_layout(attention),
    };
    Ok((context, template, info))
}

/// Requests decoded together, and caches kept, when the settings do not say: a default
/// debate's three seats and its moderator, so none of them loses its cache to another between
/// its turns. With three, the moderator's turns took a seat's cache every round and that seat
/// read its prompt again: a 3-round, 3-seat debate at temperature 0 took 140 s with three and
/// 134 s with four, its replies the same. Each has a whole context of cache: 50 MB apiece for
/// the default model at 4 096 tokens (Q8_0 keys and values; 72 MB with F16 values, where
/// moot's attention kernel is not built).
const DEFAULT_SEQUENCES: u32 = 4;

/// How many of the likeliest tokens sampling considers.
const DEFAULT_TOP_K: usize = 40;

/// How many the grammar judges when it refuses all of the first `top_k`.
pub(super) const WIDE_K: usize = 1024;

/// The `k` tokens with the highest logits, best first.
pub(super) fn top_candidates(logits: &[f32], k: usize) -> LlamaTokenDataArray {
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
pub(super) fn admit(
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
pub(super) struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    pub(super) fn push(&mut self, bytes: &[u8]) -> String {
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

pub(super) fn fatal(problem: impl std::fmt::Display) -> LlmError {
    LlmError::Fatal(problem.to_string())
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
            speaker: request.label.seat.clone(),
            system: request.system.clone(),
            messages: request.role_content_pairs(),
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
            drafts: self
                .settings
                .drafts
                .map_or(DEFAULT_DRAFTS, |most| (most as usize).min(MOST_DRAFTS)),
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

/// What an embedded model's errors say to do, in process or in a worker.
pub(super) const CONFIGURE_HINT: &str =
    "run `moot model list` to see the models on this machine, `moot model pull` for the default";

/// Where an embedded model's requests go, as an error names it.
pub(super) fn endpoint(path: &Path) -> String {
    format!("the embedded model {}", path.display())
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

    /// It decodes the requests in flight together, but they share one CPU's compute, so each
    /// takes about as long as if they queued: a round's time limit must allow for that.
    fn answers_one_at_a_time(&self) -> bool {
        true
    }

    /// Every structured reply is sampled under the schema's grammar (a schema with no grammar
    /// is refused), so the model is told what each field means and not the schema's syntax:
    /// fewer tokens to read, and to attend to at every token written.
    fn schema_instructions(&self, reply: &ReplyFormat) -> String {
        moot_llm::instructions::field_instructions(&reply.name, &reply.schema)
    }

    fn model(&self) -> &str {
        &self.engine.loaded.name
    }

    fn endpoint(&self) -> String {
        endpoint(&self.engine.loaded.path)
    }

    fn configure_hint(&self) -> String {
        CONFIGURE_HINT.into()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_text: TextSink<'a>,
    ) -> BoxFuture<'a, Result<Completion, LlmError>> {
        // The timings are for the benchmark; a debate takes the completion alone.
        Box::pin(
            self.complete_timed(request, on_text)
                .map_ok(|(completion, _)| completion),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_context_gives_each_sequence_its_own_cache_of_q8_0_keys_laid_out_for_its_attention() {
        for attention in [Attention::Own, Attention::Llama] {
            let params = context_params(3 * 4096, 3, 2, attention);
            assert_eq!(params.n_ctx().map(NonZeroU32::get), Some(3 * 4096));
            assert_eq!(params.n_seq_max(), 3);
            assert!(!params.kv_unified(), "one cache per sequence");
            assert_eq!(
                params.type_k(),
                KvCacheType::Q8_0,
                "Q8_0 keys: attention over a long cache is cheaper"
            );
        }
        // moot's kernel is reached through flash attention, which also lets values be Q8_0.
        let own = context_params(3 * 4096, 3, 2, Attention::Own);
        assert_eq!(own.type_v(), KvCacheType::Q8_0);
        assert_eq!(
            own.flash_attention_policy(),
            llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_ENABLED
        );
        // Without it, llama.cpp's own flash attention generates over a long cache at a quarter
        // of the speed, and values quantize only with flash attention.
        let llama = context_params(3 * 4096, 3, 2, Attention::Llama);
        assert_eq!(llama.type_v(), KvCacheType::F16);
        assert_eq!(
            llama.flash_attention_policy(),
            llama_cpp_sys_2::LLAMA_FLASH_ATTN_TYPE_DISABLED
        );
        // Openings on disk are told apart by the layout the context uses.
        assert!(
            cache_layout(Attention::Own).starts_with("Q8_0 keys, Q8_0 values, flash attention "),
            "{}",
            cache_layout(Attention::Own)
        );
        assert_ne!(cache_layout(Attention::Own), cache_layout(Attention::Llama));
    }

    /// With debug info, llama-cpp-sys-2 builds llama.cpp as CMake's RelWithDebInfo (-O2),
    /// which read prompts about a fifth slower: release builds must turn it off for that crate.
    #[test]
    fn release_builds_compile_llama_cpp_without_debug_info() {
        let manifest: toml::Value = toml::from_str(include_str!("../../../Cargo.toml")).unwrap();
        let debug = manifest
            .get("profile")
            .and_then(|p| p.get("release"))
            .and_then(|r| r.get("package"))
            .and_then(|p| p.get("llama-cpp-sys-2"))
            .and_then(|l| l.get("debug"));
        assert_eq!(
            debug,
            Some(&toml::Value::Boolean(false)),
            "[profile.release.package.llama-cpp-sys-2] must set debug = false"
        );
    }

    #[test]
    fn a_gguf_llama_cpp_cannot_load_is_named_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("odd.gguf");
        std::fs::write(
            &path,
            moot_llm::gguf::fixtures::tiny_gguf("no-such-architecture", 16),
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
