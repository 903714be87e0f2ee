//! [`LlamaEngine`]: GGUF models through llama.cpp.
//!
//! Layout: the model (`Send + Sync`) is shared; each slot is one dedicated OS thread that owns
//! one `LlamaContext` (which is `!Send`) and the tokens whose KV entries it holds. `generate`
//! admits a request on a blocking thread (`spawn_blocking`, so no async worker renders a
//! template or compiles a grammar): it renders the template, tokenizes, checks the context
//! limit and compiles the grammar exactly once, moving the compiled sampler into the job; then
//! it puts the job on a bounded FIFO queue. The head of the queue goes to the idle slot that shares the
//! longest prefix with it, so an agent conversation keeps landing on the slot that already
//! holds its history; that slot evaluates only the tokens after the shared prefix. Events flow
//! back through a bounded channel per generation; a closed channel (the `Generation` was
//! dropped) stops the slot before its next token.

use std::collections::VecDeque;
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::logit_bias::LlamaLogitBias;
use tokio::sync::mpsc;

use crate::detok::{StopMatcher, StopScan, Utf8Assembler};
use crate::engine::{
    BoxFuture, ChatMessage, Dry, Engine, EngineError, GenEvent, GenerateRequest, Generation,
    GrammarSpec, MAX_TOP_LOGPROBS, ModelInfo, Progress, ProgressGuard, Prompt, Sampling,
    StopReason, TemplateSource, Timings, TokenLogprob, ToolSpec, TopLogprob,
};
use crate::gguf::{self, GgufError, GgufInfo};
use crate::profile::{Profile, ProfileError};
use crate::template::{CHATML_TEMPLATE, ChatTemplate, TemplateError};

/// How many recent tokens the repetition, frequency and presence penalties look at.
const PENALTY_LAST_N: i32 = 64;
/// Text events buffered per generation before the slot waits for the consumer. The channel
/// holds one more: a permit kept free for the final `Done` or `Failed`, so a stream cut off by
/// the write-stall bound still ends with `Done { Cancelled }` when its reader comes back.
const EVENT_BUFFER: usize = 64;
/// Context size for models whose profile names none, capped by the training context.
const DEFAULT_N_CTX: u32 = 4096;

/// How to load a model.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadOptions {
    pub path: PathBuf,
    /// The id clients use; defaults to the file stem.
    pub id: Option<String>,
    /// Layers offloaded to the GPU (needs a `cuda`, `vulkan` or `metal` build); 0 is CPU only.
    pub gpu_layers: u32,
    /// Threads per slot; defaults to the available parallelism divided among the slots.
    pub threads: Option<u32>,
    /// Context size per slot; defaults to the profile's, else 4096, capped by training size.
    pub n_ctx: Option<u32>,
    /// Prompt tokens evaluated per llama.cpp batch.
    pub n_batch: u32,
    /// Parallel slots, each with its own context and thread.
    pub slots: u32,
    /// Requests that may wait for a slot before `generate` answers `QueueFull`.
    pub queue_capacity: usize,
    /// A built-in profile name or a `.toml` path; `None` selects by GGUF metadata.
    pub profile: Option<String>,
    /// Keep full-size KV caches for sliding-window layers, so any cached prefix is reusable
    /// (more memory); otherwise a prefix is reused only when the window still covers it.
    pub swa_full: bool,
    /// How long a slot waits on a consumer that stopped reading (its event buffer full)
    /// before cancelling the generation and freeing the slot.
    pub write_stall: std::time::Duration,
}

impl LoadOptions {
    pub fn new(path: impl Into<PathBuf>) -> LoadOptions {
        LoadOptions {
            path: path.into(),
            id: None,
            gpu_layers: 0,
            threads: None,
            n_ctx: None,
            n_batch: 512,
            slots: 1,
            queue_capacity: 64,
            profile: None,
            swa_full: false,
            write_stall: std::time::Duration::from_secs(30),
        }
    }
}

/// Why a model could not be loaded. Every variant names the file or the option at fault.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Gguf(#[from] GgufError),
    #[error("{path}: the GGUF names no architecture (general.architecture is missing)")]
    MissingArchitecture { path: PathBuf },
    #[error("{path}: unsupported architecture '{architecture}' (this llama.cpp does not know it)")]
    UnsupportedArchitecture { path: PathBuf, architecture: String },
    #[error(
        "{path}: a context of {requested} tokens is larger than the model's training context of {n_ctx_train}"
    )]
    ContextTooLarge {
        path: PathBuf,
        requested: u32,
        n_ctx_train: u32,
    },
    #[error("invalid load option: {0}")]
    InvalidOption(String),
    #[error("llama.cpp backend initialisation failed: {0}")]
    Backend(String),
    #[error(
        "{path}: llama.cpp rejected the model (architecture '{architecture}'); see the llama.cpp log for the cause"
    )]
    Rejected { path: PathBuf, architecture: String },
    #[error("{path}: could not create a llama.cpp context of {n_ctx} tokens: {reason}")]
    Context {
        path: PathBuf,
        n_ctx: u32,
        reason: String,
    },
    #[error(transparent)]
    Profile(#[from] ProfileError),
    #[error("{path}: chat template: {source}")]
    Template {
        path: PathBuf,
        source: TemplateError,
    },
    #[error("could not start a slot thread: {0}")]
    Thread(std::io::Error),
}

/// The process-wide llama.cpp backend: `LlamaBackend::init` succeeds once per process.
pub fn backend() -> Result<&'static LlamaBackend, LoadError> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            // llama.cpp logs through `tracing` instead of straight to stderr.
            llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
            LlamaBackend::init().map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| LoadError::Backend(e.clone()))
}

/// Creating contexts in parallel from one model is unsound in llama.cpp (it may write
/// `n_ctx_train`), so slot threads take turns.
static CONTEXT_CREATION: Mutex<()> = Mutex::new(());

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A grammar as admission compiles it.
#[derive(Debug, Clone)]
struct GrammarJob {
    gbnf: String,
    root: String,
    /// `Some` for lazy grammars.
    triggers: Option<Vec<String>>,
}

/// A grammar sampler compiled once at admission and moved into its job: the slot never
/// compiles a grammar.
struct CompiledGrammar(LlamaSampler);

impl std::fmt::Debug for CompiledGrammar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CompiledGrammar")
    }
}

/// Grammars compiled in this process (a test checks that a request compiles its grammar once).
static GRAMMAR_COMPILATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many grammars this process has compiled; for tests only.
#[doc(hidden)]
pub fn grammar_compilations() -> u64 {
    GRAMMAR_COMPILATIONS.load(Ordering::Relaxed)
}

/// A validated request waiting for, or running on, a slot.
#[derive(Debug)]
struct Job {
    tokens: Vec<LlamaToken>,
    sampling: Sampling,
    grammar: Option<CompiledGrammar>,
    /// `None`: until the context is full (which then ends it as `ContextFull`).
    max_tokens: Option<u32>,
    stop: Vec<String>,
    /// `Some(n)`: report each token's log probability and the `n` most likely alternatives.
    logprobs: Option<u32>,
    tx: mpsc::Sender<GenEvent>,
    /// Set by `Generation::halt`: stop as if a stop string had matched.
    halt: Arc<AtomicBool>,
    /// Marks the generation's counts final when the job is dropped.
    progress: ProgressGuard,
    admitted: Instant,
    /// When admission finished and the job was queued (for the first-token breakdown).
    queued: Instant,
}

#[derive(Debug, Default)]
struct SlotState {
    busy: bool,
    /// When the slot last took a job (a dispatch counter), for least-recently-used choice.
    last_used: u64,
    /// The tokens the slot's KV cache holds, as of its last finished job.
    cached: Vec<LlamaToken>,
    mailbox: Option<Job>,
}

#[derive(Debug)]
struct Sched {
    queue: VecDeque<Job>,
    dispatched: u64,
    slots: Vec<SlotState>,
    shutdown: bool,
}

#[derive(Debug)]
struct Shared {
    sched: Mutex<Sched>,
    wake: Condvar,
}

fn common_prefix(a: &[LlamaToken], b: &[LlamaToken]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

impl Sched {
    /// Hands queued jobs, oldest first, to idle slots. A job goes to the idle slot where it
    /// gains most: the cached prefix it reuses minus the cached tokens it would evict (a
    /// conversation that merely shares a system prompt with another slot's does not evict it
    /// while an emptier slot is free); among equals, the least recently used slot.
    fn dispatch(&mut self) -> bool {
        let mut handed = false;
        while let Some(job) = self.queue.front() {
            let best = self
                .slots
                .iter()
                .enumerate()
                .filter(|(_, s)| !s.busy && s.mailbox.is_none())
                .max_by_key(|(i, s)| {
                    let reused = common_prefix(&s.cached, &job.tokens) as i64;
                    let evicted = s.cached.len() as i64 - reused;
                    (
                        reused - evicted,
                        std::cmp::Reverse(s.last_used),
                        std::cmp::Reverse(*i),
                    )
                })
                .map(|(i, _)| i);
            let Some(i) = best else { break };
            let Some(job) = self.queue.pop_front() else {
                break;
            };
            self.dispatched += 1;
            self.slots[i].busy = true;
            self.slots[i].last_used = self.dispatched;
            self.slots[i].mailbox = Some(job);
            handed = true;
        }
        handed
    }
}

/// A GGUF model served through llama.cpp. See the module docs for the threading design.
pub struct LlamaEngine {
    info: ModelInfo,
    model: Arc<LlamaModel>,
    gguf: GgufInfo,
    profile: Profile,
    /// What admission needs, shared with the blocking task that renders, tokenizes and
    /// compiles each request's grammar.
    admission: Arc<Admission>,
    /// Whether the chat template shows `tools` (probed once at load).
    renders_tools: bool,
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    queue_capacity: usize,
}

impl std::fmt::Debug for LlamaEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlamaEngine")
            .field("info", &self.info)
            .field("path", &self.gguf.path)
            .field("profile", &self.profile.name)
            .finish_non_exhaustive()
    }
}

impl LlamaEngine {
    /// Loads a model, logging progress through `tracing`.
    pub fn load(opts: LoadOptions) -> Result<LlamaEngine, LoadError> {
        LlamaEngine::load_with_progress(opts, |_| {})
    }

    /// Loads a model; `progress` receives the load fraction in `0.0..=1.0`.
    pub fn load_with_progress(
        opts: LoadOptions,
        mut progress: impl FnMut(f32) + Send + 'static,
    ) -> Result<LlamaEngine, LoadError> {
        if opts.slots == 0 {
            return Err(LoadError::InvalidOption(
                "slots must be at least 1".to_owned(),
            ));
        }
        if opts.n_batch == 0 {
            return Err(LoadError::InvalidOption(
                "n_batch must be at least 1".to_owned(),
            ));
        }
        if opts.threads == Some(0) {
            return Err(LoadError::InvalidOption(
                "threads must be at least 1".to_owned(),
            ));
        }
        let path = opts.path.clone();

        // Check the file ourselves first: llama.cpp aborts on some malformed files.
        let gguf = gguf::inspect(&path)?;
        let architecture = gguf
            .architecture()
            .ok_or_else(|| LoadError::MissingArchitecture { path: path.clone() })?
            .to_owned();
        if !gguf::SUPPORTED_ARCHITECTURES.contains(&architecture.as_str()) {
            return Err(LoadError::UnsupportedArchitecture { path, architecture });
        }
        let profile = match &opts.profile {
            Some(name) => Profile::named(name)?,
            None => Profile::select(&gguf)?,
        };
        let n_ctx_train = gguf.context_length().and_then(|n| u32::try_from(n).ok());
        let n_ctx = match (opts.n_ctx, n_ctx_train) {
            (Some(requested), Some(train)) if requested > train => {
                return Err(LoadError::ContextTooLarge {
                    path,
                    requested,
                    n_ctx_train: train,
                });
            }
            (Some(requested), _) => requested,
            (None, train) => {
                let want = profile.n_ctx.unwrap_or(DEFAULT_N_CTX);
                train.map_or(want, |t| want.min(t))
            }
        };
        if n_ctx == 0 {
            return Err(LoadError::InvalidOption(
                "n_ctx must be at least 1".to_owned(),
            ));
        }

        let backend = backend()?;
        tracing::info!(path = %path.display(), %architecture, profile = %profile.name, n_ctx, "loading model");
        let mut last_logged = -1i32;
        let params = LlamaModelParams::default()
            .with_n_gpu_layers(opts.gpu_layers)
            .with_progress_callback(move |p: f32| {
                let quarter = (p * 4.0) as i32;
                if quarter > last_logged {
                    last_logged = quarter;
                    tracing::info!(progress = format!("{:.0}%", p * 100.0), "loading model");
                }
                progress(p);
                true
            });
        let started = Instant::now();
        let model = LlamaModel::load_from_file(backend, &path, &params).map_err(|_| {
            LoadError::Rejected {
                path: path.clone(),
                architecture: architecture.clone(),
            }
        })?;
        let model = Arc::new(model);
        tracing::info!(
            elapsed_ms = started.elapsed().as_millis() as u64,
            "model loaded"
        );

        let vocab = model.vocab();
        let piece = |t: LlamaToken| {
            String::from_utf8_lossy(&vocab.token_to_piece(t, true, None)).into_owned()
        };
        let bos_text = if vocab.bos().0 >= 0 {
            piece(vocab.bos())
        } else {
            String::new()
        };
        let eos_text = if vocab.eos().0 >= 0 {
            piece(vocab.eos())
        } else {
            String::new()
        };
        let template_src = match (&profile.chat_template, gguf.chat_template()) {
            (Some(t), _) => t.clone(),
            (None, Some(t)) => t.to_owned(),
            (None, None) => {
                tracing::info!(
                    "the model has no chat template and its profile names none; using ChatML"
                );
                CHATML_TEMPLATE.to_owned()
            }
        };
        let template =
            ChatTemplate::new(&template_src, &bos_text, &eos_text).map_err(|source| {
                LoadError::Template {
                    path: path.clone(),
                    source,
                }
            })?;

        let renders_tools = template.renders_tools();

        // By default the slots share the cores: llama.cpp's OpenMP workers spin while they
        // wait, so more threads than cores in total slows every slot down several times.
        let threads = opts.threads.unwrap_or_else(|| {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
            (cores / opts.slots.max(1)).max(1)
        });
        let n_swa = gguf
            .sliding_window()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|&n| n > 0);
        let shared = Arc::new(Shared {
            sched: Mutex::new(Sched {
                queue: VecDeque::new(),
                dispatched: 0,
                slots: (0..opts.slots).map(|_| SlotState::default()).collect(),
                shutdown: false,
            }),
            wake: Condvar::new(),
        });

        let mut workers = Vec::new();
        for index in 0..opts.slots as usize {
            let cfg = SlotConfig {
                index,
                n_ctx,
                n_batch: opts.n_batch.min(n_ctx),
                threads,
                n_swa: if opts.swa_full { None } else { n_swa },
                swa_full: opts.swa_full,
                write_stall: opts.write_stall,
            };
            let (ready_tx, ready_rx) = std::sync::mpsc::sync_channel(1);
            let model = Arc::clone(&model);
            let shared_w = Arc::clone(&shared);
            let handle = std::thread::Builder::new()
                .name(format!("bellows-slot-{index}"))
                .spawn(move || slot_main(backend, model, shared_w, cfg, ready_tx))
                .map_err(LoadError::Thread)?;
            let ready = ready_rx
                .recv()
                .unwrap_or_else(|_| Err("the slot thread exited".to_owned()));
            workers.push(handle);
            if let Err(reason) = ready {
                shutdown(&shared, &mut workers);
                return Err(LoadError::Context {
                    path,
                    n_ctx,
                    reason,
                });
            }
        }

        let id = opts.id.clone().unwrap_or_else(|| {
            path.file_stem()
                .map_or_else(|| "model".to_owned(), |s| s.to_string_lossy().into_owned())
        });
        let info = ModelInfo {
            id,
            n_ctx_train: n_ctx_train.unwrap_or(n_ctx),
            n_ctx,
            n_vocab: u32::try_from(model.n_vocab()).unwrap_or(0),
            slots: opts.slots,
            profile: profile.name.clone(),
        };
        let admission = Arc::new(Admission {
            model: Arc::clone(&model),
            template,
            template_source: TemplateSource {
                source: template_src,
                bos_token: bos_text.clone(),
                eos_token: eos_text,
            },
            bos_text,
            profile_stop: profile.stop.clone(),
            n_ctx,
        });
        Ok(LlamaEngine {
            info,
            model,
            gguf,
            profile,
            admission,
            renders_tools,
            shared,
            workers,
            queue_capacity: opts.queue_capacity,
        })
    }

    /// The profile in force.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// What the GGUF header says.
    pub fn gguf(&self) -> &GgufInfo {
        &self.gguf
    }

    /// The tokens each slot's cache holds now (for tests and diagnostics).
    pub fn slot_caches(&self) -> Vec<Vec<i32>> {
        lock(&self.shared.sched)
            .slots
            .iter()
            .map(|s| s.cached.iter().map(|t| t.0).collect())
            .collect()
    }

    /// The text of `tokens`, as the stream would have produced it (special tokens omitted,
    /// invalid UTF-8 replaced).
    pub fn detokenize(&self, tokens: &[i32]) -> String {
        let vocab = self.model.vocab();
        let mut bytes = Vec::new();
        for &t in tokens {
            bytes.extend_from_slice(&vocab.token_to_piece(LlamaToken(t), false, None));
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// Everything admission needs, behind an `Arc` so a blocking task can own it.
#[derive(Debug)]
struct Admission {
    model: Arc<LlamaModel>,
    template: ChatTemplate,
    /// The template's source and special tokens, for [`Engine::chat_template`].
    template_source: TemplateSource,
    bos_text: String,
    /// The profile's stop strings, added to every request's.
    profile_stop: Vec<String>,
    n_ctx: u32,
}

/// A request after admission: everything the slot needs, nothing left to fail before the
/// first token.
struct Admitted {
    tokens: Vec<LlamaToken>,
    grammar: Option<CompiledGrammar>,
    max_tokens: Option<u32>,
    stop: Vec<String>,
}

impl Admission {
    /// Renders, tokenizes and checks a request and compiles its grammar. Runs on a blocking
    /// thread: a long template or a large schema must not stall an async worker.
    fn admit(&self, req: &GenerateRequest) -> Result<Admitted, EngineError> {
        let text = match &req.prompt {
            Prompt::Text(t) => std::borrow::Cow::Borrowed(t.as_str()),
            Prompt::Chat { messages, tools } => {
                std::borrow::Cow::Owned(self.render_chat(messages, tools)?)
            }
        };
        let tokens = self.tokenize_prompt(&text);
        if tokens.is_empty() {
            return Err(EngineError::Tokenize("the prompt is empty".to_owned()));
        }
        let prompt_tokens = tokens.len() as u32;
        if prompt_tokens >= self.n_ctx {
            return Err(EngineError::PromptTooLong {
                prompt_tokens,
                n_ctx: self.n_ctx,
            });
        }
        if let Some(max_tokens) = req.max_tokens
            && prompt_tokens.saturating_add(max_tokens) > self.n_ctx
        {
            return Err(EngineError::ContextExceeded {
                prompt_tokens,
                max_tokens,
                n_ctx: self.n_ctx,
            });
        }
        let grammar = req.grammar.as_ref().map(|g| self.compile(g)).transpose()?;
        let mut stop = req.stop.clone();
        for s in &self.profile_stop {
            if !stop.contains(s) {
                stop.push(s.clone());
            }
        }
        Ok(Admitted {
            tokens,
            grammar,
            max_tokens: req.max_tokens,
            stop,
        })
    }

    fn render_chat(
        &self,
        messages: &[ChatMessage],
        tools: &[ToolSpec],
    ) -> Result<String, EngineError> {
        self.template
            .render(messages, tools, true)
            .map_err(|e| EngineError::Template(e.to_string()))
    }

    /// Tokenizes a prompt: special tokens parsed; BOS added when the model wants one and the
    /// text does not already start with it (chat templates often write it themselves).
    fn tokenize_prompt(&self, text: &str) -> Vec<LlamaToken> {
        let vocab = self.model.vocab();
        let add_bos = !(vocab.should_add_bos()
            && !self.bos_text.is_empty()
            && text.starts_with(&self.bos_text));
        vocab.tokenize(text.as_bytes(), add_bos, true)
    }

    /// Compiles a request's grammar, the only time it is compiled: a bad one fails before
    /// anything is queued, and the compiled sampler goes to the slot with the job.
    fn compile(&self, spec: &GrammarSpec) -> Result<CompiledGrammar, EngineError> {
        let job = match spec {
            GrammarSpec::Strict { gbnf, root } => GrammarJob {
                gbnf: gbnf.clone(),
                root: root.clone(),
                triggers: None,
            },
            GrammarSpec::Lazy {
                gbnf,
                root,
                triggers,
            } => {
                if triggers.is_empty() || triggers.iter().any(String::is_empty) {
                    return Err(EngineError::InvalidGrammar(
                        "a lazy grammar needs at least one non-empty trigger".to_owned(),
                    ));
                }
                GrammarJob {
                    gbnf: gbnf.clone(),
                    root: root.clone(),
                    triggers: Some(triggers.clone()),
                }
            }
            GrammarSpec::JsonSchema(schema) => {
                let gbnf = llama_cpp_2::json_schema_to_grammar(&schema.to_string())
                    .map_err(|e| EngineError::InvalidSchema(e.to_string()))?;
                GrammarJob {
                    gbnf,
                    root: "root".to_owned(),
                    triggers: None,
                }
            }
            GrammarSpec::LazyJsonSchema {
                schema,
                trigger,
                close,
            } => {
                if trigger.is_empty() {
                    return Err(EngineError::InvalidGrammar(
                        "a lazy grammar needs a non-empty trigger".to_owned(),
                    ));
                }
                let value = llama_cpp_2::json_schema_to_grammar(&schema.to_string())
                    .map_err(|e| EngineError::InvalidSchema(e.to_string()))?;
                GrammarJob {
                    gbnf: wrap_value_grammar(&value, trigger, close),
                    root: "root".to_owned(),
                    triggers: Some(vec![trigger.clone()]),
                }
            }
        };
        compile_grammar(&self.model, &job).map_err(EngineError::InvalidGrammar)
    }
}

impl Drop for LlamaEngine {
    fn drop(&mut self) {
        shutdown(&self.shared, &mut self.workers);
    }
}

fn shutdown(shared: &Shared, workers: &mut Vec<JoinHandle<()>>) {
    {
        let mut s = lock(&shared.sched);
        s.shutdown = true;
        // Queued requests end here: dropping their senders ends their streams.
        s.queue.clear();
    }
    shared.wake.notify_all();
    for w in workers.drain(..) {
        let _ = w.join();
    }
}

fn compile_grammar(model: &LlamaModel, g: &GrammarJob) -> Result<CompiledGrammar, String> {
    GRAMMAR_COMPILATIONS.fetch_add(1, Ordering::Relaxed);
    let result = match &g.triggers {
        None => LlamaSampler::grammar(model, &g.gbnf, &g.root),
        Some(triggers) => LlamaSampler::grammar_lazy(model, &g.gbnf, &g.root, triggers, &[]),
    };
    result.map(CompiledGrammar).map_err(|e| match e {
        llama_cpp_2::GrammarError::NullGrammar => {
            "llama.cpp could not parse the grammar (or its root rule is missing)".to_owned()
        }
        other => other.to_string(),
    })
}

impl Engine for LlamaEngine {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn generate(&self, req: GenerateRequest) -> BoxFuture<'_, Result<Generation, EngineError>> {
        Box::pin(async move {
            let admitted = Instant::now();
            let admission = Arc::clone(&self.admission);
            let (req, prepared) = tokio::task::spawn_blocking(move || {
                let prepared = admission.admit(&req);
                (req, prepared)
            })
            .await
            .map_err(|e| EngineError::Backend(format!("admission task failed: {e}")))?;
            let Admitted {
                tokens,
                grammar,
                max_tokens,
                stop,
            } = prepared?;
            // More alternatives than OpenAI's limit are not refused here but capped: asking
            // for them is a caller's validation concern, and the cap bounds the work per token.
            let logprobs = req.logprobs.map(|n| n.min(MAX_TOP_LOGPROBS));
            let prompt_tokens = tokens.len() as u32;
            let (tx, rx) = mpsc::channel(EVENT_BUFFER + FINAL_EVENT);
            let halt = Arc::new(AtomicBool::new(false));
            let progress = Arc::new(Progress::default());
            let job = Job {
                halt: Arc::clone(&halt),
                progress: ProgressGuard(Arc::clone(&progress)),
                tokens,
                sampling: req.sampling.clone(),
                grammar,
                max_tokens,
                stop,
                logprobs,
                tx,
                admitted,
                queued: Instant::now(),
            };
            {
                let mut s = lock(&self.shared.sched);
                if s.shutdown {
                    return Err(EngineError::ShutDown);
                }
                // Capacity counts only the waiting: a request for an idle slot never waits.
                let idle = s
                    .slots
                    .iter()
                    .filter(|x| !x.busy && x.mailbox.is_none())
                    .count();
                if idle == 0 && s.queue.len() >= self.queue_capacity {
                    return Err(EngineError::QueueFull {
                        capacity: self.queue_capacity,
                    });
                }
                s.queue.push_back(job);
                s.dispatch();
            }
            self.shared.wake.notify_all();
            Ok(Generation::new(rx, prompt_tokens, halt).with_progress(progress))
        })
    }

    fn tokenize(&self, text: &str) -> Result<Vec<i32>, EngineError> {
        Ok(self
            .model
            .vocab()
            .tokenize(text.as_bytes(), false, true)
            .into_iter()
            .map(|t| t.0)
            .collect())
    }

    fn renders_tools(&self) -> bool {
        self.renders_tools
    }

    fn render_chat(
        &self,
        messages: &[ChatMessage],
        tools: &[ToolSpec],
    ) -> Result<String, EngineError> {
        self.admission.render_chat(messages, tools)
    }

    fn chat_template(&self) -> Option<TemplateSource> {
        Some(self.admission.template_source.clone())
    }
}

/// What a slot thread needs to build its context.
#[derive(Debug, Clone, Copy)]
struct SlotConfig {
    index: usize,
    n_ctx: u32,
    n_batch: u32,
    threads: u32,
    /// The sliding window, when prefix reuse must respect one.
    n_swa: Option<u32>,
    swa_full: bool,
    /// How long an event may wait for room in a full buffer before the job is cancelled.
    write_stall: Duration,
}

type Ready = std::sync::mpsc::SyncSender<Result<(), String>>;

fn slot_main(
    backend: &'static LlamaBackend,
    model: Arc<LlamaModel>,
    shared: Arc<Shared>,
    cfg: SlotConfig,
    ready: Ready,
) {
    let threads = i32::try_from(cfg.threads).unwrap_or(i32::MAX);
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(cfg.n_ctx))
        .with_n_batch(cfg.n_batch)
        .with_n_ubatch(cfg.n_batch)
        .with_n_seq_max(1)
        .with_n_threads(threads)
        .with_n_threads_batch(threads)
        .with_swa_full(cfg.swa_full);
    let ctx = {
        let _turn = lock(&CONTEXT_CREATION);
        model.new_context(backend, params)
    };
    let ctx = match ctx {
        Ok(ctx) => ctx,
        Err(e) => {
            let _ = ready.send(Err(e.to_string()));
            return;
        }
    };
    let _ = ready.send(Ok(()));
    let mut slot = Slot {
        model: &model,
        ctx,
        cached: Vec::new(),
        batch: LlamaBatch::new(cfg.n_batch as usize, 1),
        cfg,
        candidates: Vec::new(),
    };
    loop {
        let job = {
            let mut s = lock(&shared.sched);
            loop {
                if s.shutdown {
                    return;
                }
                if let Some(job) = s.slots[cfg.index].mailbox.take() {
                    break job;
                }
                s = shared.wake.wait(s).unwrap_or_else(PoisonError::into_inner);
            }
        };
        let tx = job.tx.clone();
        let done = slot.run(job);
        // The slot is published idle, with its cache, before `Done` goes out: a client that
        // sends its next turn after `Done` always finds the slot that holds its history free.
        {
            let mut s = lock(&shared.sched);
            let state = &mut s.slots[cfg.index];
            state.cached.clone_from(&slot.cached);
            state.busy = false;
            s.dispatch();
        }
        shared.wake.notify_all();
        if let Some((ending, timings)) = done {
            // Text events leave a permit free for this one, so it goes out at once even after
            // a stall; the bound is only a guard.
            let _ = send_bounded(&tx, ending.event(timings), 0, cfg.write_stall);
        }
    }
}

/// One slot: a context and the tokens whose KV entries it holds (positions `0..cached.len()`).
struct Slot<'m> {
    model: &'m LlamaModel,
    ctx: LlamaContext<'m>,
    cached: Vec<LlamaToken>,
    batch: LlamaBatch<'static>,
    cfg: SlotConfig,
    /// Reused candidate buffer, so sampling does not allocate a vocabulary-sized array per token.
    candidates: Vec<LlamaTokenData>,
}

impl Slot<'_> {
    /// How many cached tokens this prompt can reuse, after making the KV cache agree.
    fn reuse_prefix(&mut self, prompt: &[LlamaToken]) -> usize {
        let mut n = common_prefix(&self.cached, prompt);
        // At least one prompt token must be evaluated to get logits for the first sample.
        if n == prompt.len() {
            n -= 1;
        }
        // With sliding-window attention the cache keeps only the last window of positions;
        // a prefix is reusable only if what was evicted lies entirely before the window the
        // next token will attend to.
        if n > 0
            && let Some(n_swa) = self.cfg.n_swa
        {
            let pos_min = self.ctx.kv_cache_seq_pos_min(0);
            let floor = n.saturating_sub(n_swa as usize);
            if pos_min >= 0 && pos_min as usize > floor {
                tracing::debug!(
                    pos_min,
                    n_common = n,
                    n_swa,
                    "sliding window evicted the prefix; re-evaluating"
                );
                n = 0;
            }
        }
        if n < self.cached.len() {
            let removed = n > 0
                && matches!(
                    self.ctx.clear_kv_cache_seq(Some(0), Some(n as u32), None),
                    Ok(true)
                );
            if !removed {
                self.ctx.clear_kv_cache();
                n = 0;
            }
            self.cached.truncate(n);
        }
        n
    }

    /// Evaluates `tokens` after the cache; logits for the last one only. On a failure the
    /// cache is cleared: KV entries of a failed batch are not trustworthy.
    fn eval(
        &mut self,
        tokens: &[LlamaToken],
        cancelled: impl Fn() -> bool,
    ) -> Result<(), EvalError> {
        let n_batch = self.cfg.n_batch as usize;
        let total = tokens.len();
        for (c, chunk) in tokens.chunks(n_batch).enumerate() {
            if cancelled() {
                return Err(EvalError::Cancelled);
            }
            self.batch.clear();
            for (j, &t) in chunk.iter().enumerate() {
                let pos = (self.cached.len() + j) as i32;
                let last = c * n_batch + j + 1 == total;
                if let Err(e) = self.batch.add(t, pos, &[0], last) {
                    return Err(self.forget(e.to_string()));
                }
            }
            if let Err(e) = self.ctx.decode(&mut self.batch) {
                return Err(self.forget(e.to_string()));
            }
            self.cached.extend_from_slice(chunk);
        }
        Ok(())
    }

    /// Clears the cache after a failed decode and names the failure.
    fn forget(&mut self, error: String) -> EvalError {
        self.ctx.clear_kv_cache();
        self.cached.clear();
        EvalError::Failed(error)
    }

    /// Runs a job; `None` when its consumer was gone before it started.
    fn run(&mut self, mut job: Job) -> Option<(Ending, Timings)> {
        if job.tx.is_closed() {
            return None;
        }
        let mut timings = Timings {
            prompt_tokens: job.tokens.len() as u32,
            ..Timings::default()
        };
        let ending = self.generate(&mut job, &mut timings);
        Some((ending, timings))
    }

    fn generate(&mut self, job: &mut Job, timings: &mut Timings) -> Ending {
        let started = Instant::now();
        let tx = &job.tx;
        let n_common = self.reuse_prefix(&job.tokens);
        timings.cached_tokens = n_common as u32;
        job.progress.set_cached(timings.cached_tokens);
        let eval_start = Instant::now();
        match self.eval(&job.tokens[n_common..], || tx.is_closed()) {
            Ok(()) => {}
            Err(EvalError::Cancelled) => return Ending::Stopped(StopReason::Cancelled),
            Err(EvalError::Failed(e)) => {
                tracing::error!(error = %e, "prompt evaluation failed");
                return Ending::Failed(format!("prompt evaluation failed: {e}"));
            }
        }
        timings.prompt_eval = eval_start.elapsed();

        let mut sampler = JobSampler::new(
            self.model,
            &job.sampling,
            self.cfg.n_ctx,
            job.grammar.take(),
            job.logprobs,
        );
        let vocab = self.model.vocab();
        let mut utf8 = Utf8Assembler::new();
        let mut stops = StopMatcher::new(&job.stop);
        let mut pending: Vec<i32> = Vec::new();
        let mut pending_logprobs: Vec<TokenLogprob> = Vec::new();
        let mut logits_idx = self.batch.n_tokens() - 1;
        let mut gen_start = Instant::now();
        let n_ctx = self.cfg.n_ctx as usize;
        let stall = self.cfg.write_stall;
        let send = |piece: String,
                    tokens: &mut Vec<i32>,
                    logprobs: &mut Vec<TokenLogprob>|
         -> Result<(), Undelivered> {
            if piece.is_empty() {
                return Ok(());
            }
            let ev = GenEvent::Text {
                piece,
                tokens: std::mem::take(tokens),
                logprobs: std::mem::take(logprobs),
            };
            send_bounded(tx, ev, FINAL_EVENT, stall).inspect_err(|why| {
                if *why == Undelivered::Stalled {
                    tracing::warn!(
                        stall_ms = stall.as_millis() as u64,
                        "the consumer stopped reading; cancelling the generation"
                    );
                }
            })
        };

        // A halt ends like a stop string but keeps what was held back: it is real output.
        let mut halted = false;
        let ending = loop {
            if tx.is_closed() {
                break Ending::Stopped(StopReason::Cancelled);
            }
            if job
                .max_tokens
                .is_some_and(|m| timings.generated_tokens >= m)
            {
                break Ending::Stopped(StopReason::MaxTokens);
            }
            if job.halt.load(Ordering::Relaxed) {
                halted = true;
                break Ending::Stopped(StopReason::Stop);
            }
            let (token, scored) = sampler.sample(&self.ctx, logits_idx, &mut self.candidates);
            if timings.generated_tokens == 0 {
                timings.time_to_first_token = job.admitted.elapsed();
                gen_start = Instant::now();
                let us = |d: Duration| d.as_micros() as u64;
                let admission = job.queued.saturating_duration_since(job.admitted);
                let queue = started.saturating_duration_since(job.queued);
                let sample = gen_start
                    .saturating_duration_since(eval_start)
                    .saturating_sub(timings.prompt_eval);
                tracing::debug!(
                    admission_us = us(admission),
                    queue_us = us(queue),
                    prompt_eval_us = us(timings.prompt_eval),
                    first_sample_us = us(sample),
                    ttft_us = us(timings.time_to_first_token),
                    "first token"
                );
            }
            timings.generated_tokens += 1;
            job.progress.set_generated(timings.generated_tokens);
            if vocab.is_eog(token) {
                break Ending::Stopped(StopReason::Eog);
            }
            pending.push(token.0);
            let bytes = vocab.token_to_piece(token, false, None);
            if let Some(scored) = scored {
                pending_logprobs.push(TokenLogprob {
                    token: token.0,
                    bytes: bytes.clone(),
                    logprob: scored.logprob,
                    top: scored
                        .top
                        .into_iter()
                        .map(|(t, logprob)| TopLogprob {
                            token: t.0,
                            bytes: vocab.token_to_piece(t, false, None),
                            logprob,
                        })
                        .collect(),
                });
            }
            let text = utf8.push(&bytes);
            if !text.is_empty() {
                match stops.push(&text) {
                    StopScan::Emit(s) => {
                        if send(s, &mut pending, &mut pending_logprobs).is_err() {
                            break Ending::Stopped(StopReason::Cancelled);
                        }
                    }
                    StopScan::Stopped(s) => {
                        let _ = send(s, &mut pending, &mut pending_logprobs);
                        break Ending::Stopped(StopReason::Stop);
                    }
                }
            }
            if job
                .max_tokens
                .is_some_and(|m| timings.generated_tokens >= m)
            {
                break Ending::Stopped(StopReason::MaxTokens);
            }
            // Every position is used: a real full context, not a failure.
            if self.cached.len() >= n_ctx {
                break Ending::Stopped(StopReason::ContextFull);
            }
            if let Err(EvalError::Failed(e)) = self.eval(&[token], || false) {
                tracing::error!(error = %e, "decoding a generated token failed");
                break Ending::Failed(format!(
                    "decoding generated token {} failed: {e}",
                    timings.generated_tokens
                ));
            }
            logits_idx = 0;
        };

        let mut ending = ending;
        let flush = match &ending {
            Ending::Stopped(StopReason::Stop | StopReason::Cancelled) => halted,
            Ending::Stopped(_) => true,
            // A failed stream ends broken; what was held back is not flushed as if it were
            // the end of a reply.
            Ending::Failed(_) => false,
        };
        if flush {
            // Whatever was held back (a split character, a false start of a stop string) is
            // real output now that nothing more follows.
            let tail = utf8.finish();
            let mut out = String::new();
            match stops.push(&tail) {
                StopScan::Emit(s) => {
                    out.push_str(&s);
                    out.push_str(&stops.finish());
                }
                StopScan::Stopped(s) => {
                    out.push_str(&s);
                    ending = Ending::Stopped(StopReason::Stop);
                }
            }
            let _ = send(out, &mut pending, &mut pending_logprobs);
        }
        if timings.generated_tokens > 0 {
            timings.generation = gen_start.elapsed();
        }
        ending
    }
}

/// Why an event was not delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Undelivered {
    /// The consumer dropped its `Generation`.
    Closed,
    /// The buffer stayed full for the whole write-stall bound.
    Stalled,
}

/// Channel permits that text events leave free for the final event.
const FINAL_EVENT: usize = 1;

/// Sends `ev` once more than `reserve` permits are free, waiting at most `stall` for room, so a
/// slot thread never blocks on a consumer without a bound. (The slot is the only sender, so
/// the free permits it sees cannot shrink before its `try_send`.) It polls with a backoff from
/// 0.2 ms to 10 ms rather than parking on the channel: `blocking_send` has no timeout, and a
/// full buffer means the consumer is already 64 events behind, so a few milliseconds of extra
/// latency cost nothing.
fn send_bounded(
    tx: &mpsc::Sender<GenEvent>,
    ev: GenEvent,
    reserve: usize,
    stall: Duration,
) -> Result<(), Undelivered> {
    let mut ev = ev;
    let mut deadline = None;
    let mut backoff = Duration::from_micros(200);
    loop {
        if tx.is_closed() {
            return Err(Undelivered::Closed);
        }
        let sent = if tx.capacity() > reserve {
            tx.try_send(ev)
        } else {
            Err(mpsc::error::TrySendError::Full(ev))
        };
        match sent {
            Ok(()) => return Ok(()),
            Err(mpsc::error::TrySendError::Closed(_)) => return Err(Undelivered::Closed),
            Err(mpsc::error::TrySendError::Full(back)) => {
                ev = back;
                let now = Instant::now();
                let deadline = *deadline.get_or_insert(now + stall);
                if now >= deadline {
                    return Err(Undelivered::Stalled);
                }
                std::thread::sleep(backoff.min(deadline - now));
                backoff = (backoff * 2).min(Duration::from_millis(10));
            }
        }
    }
}

/// Why evaluating tokens did not complete.
#[derive(Debug)]
enum EvalError {
    /// The consumer went away between batches.
    Cancelled,
    /// llama.cpp refused the batch (the cache has been cleared).
    Failed(String),
}

/// How a job ended on its slot: a stop of some kind, or an engine failure, which is never
/// reported as a stop.
#[derive(Debug, Clone, PartialEq)]
enum Ending {
    Stopped(StopReason),
    Failed(String),
}

impl Ending {
    /// The stream's last event.
    fn event(self, timings: Timings) -> GenEvent {
        match self {
            Ending::Stopped(reason) => GenEvent::Done { reason, timings },
            Ending::Failed(error) => GenEvent::Failed { error, timings },
        }
    }
}

/// The sampler of one generation: an unconstrained chain, and the grammar kept apart for the
/// sample-then-check fast path (llama.cpp's common sampler does the same): sample without the
/// grammar, ask the grammar about the chosen token only, and only when it is rejected apply the
/// grammar to the whole vocabulary and sample again. Checking one token instead of the whole
/// vocabulary is what keeps constrained generation near unconstrained speed.
struct JobSampler {
    chain: LlamaSampler,
    grammar: Option<LlamaSampler>,
    /// Greedy with no penalties: the first pass is a plain argmax over the logits, with no
    /// vocabulary-sized candidate array (262k entries for Gemma) built at all.
    plain_greedy: bool,
    /// `Some(n)`: score each sampled token (log probability and the `n` most likely).
    logprobs: Option<usize>,
    /// The request's logit bias as a dense vector, when logprobs are asked for and a bias
    /// is set: log probabilities are reported after the bias, as OpenAI does.
    dense_bias: Option<Vec<f32>>,
}

/// A sampled token's log probability and the most likely tokens at its position.
#[derive(Debug, Clone, PartialEq)]
struct Scored {
    logprob: f32,
    top: Vec<(LlamaToken, f32)>,
}

/// One pass over a position's logits: a running log-sum-exp and the `k` largest logits (ties
/// keep the lower token id first, as greedy argmax does). The same pass serves as the argmax
/// of plain greedy sampling, and rides along the candidate fill otherwise, so log
/// probabilities cost no extra pass over the vocabulary.
#[derive(Debug)]
struct LogitScan {
    max: f32,
    /// Sum of `exp(logit - max)`.
    sum: f32,
    k: usize,
    /// Descending by logit.
    top: Vec<(LlamaToken, f32)>,
}

impl LogitScan {
    fn new(k: usize) -> LogitScan {
        let k = k.max(1);
        LogitScan {
            max: f32::NEG_INFINITY,
            sum: 0.0,
            k,
            top: Vec::with_capacity(k + 1),
        }
    }

    #[inline]
    fn push(&mut self, id: i32, logit: f32) {
        // A banned (or NaN) logit has probability zero and is never a candidate.
        if logit.is_nan() || logit == f32::NEG_INFINITY {
            return;
        }
        if logit > self.max {
            self.sum = self.sum * (self.max - logit).exp() + 1.0;
            self.max = logit;
        } else {
            self.sum += (logit - self.max).exp();
        }
        if self.top.len() < self.k || self.top.last().is_some_and(|&(_, l)| logit > l) {
            let at = self.top.partition_point(|&(_, l)| l >= logit);
            self.top.insert(at, (LlamaToken(id), logit));
            self.top.truncate(self.k);
        }
    }

    /// `ln(sum(exp(logit)))` over everything pushed.
    fn log_sum_exp(&self) -> f32 {
        self.max + self.sum.ln()
    }

    /// The largest logit's token (the argmax).
    fn best(&self) -> Option<LlamaToken> {
        self.top.first().map(|&(t, _)| t)
    }

    /// Scores `token`, whose biased logit is `logit`, keeping `n` alternatives.
    fn score(&self, logit: f32, n: usize) -> Scored {
        let lse = self.log_sum_exp();
        Scored {
            logprob: logit - lse,
            top: self
                .top
                .iter()
                .take(n)
                .map(|&(t, l)| (t, l - lse))
                .collect(),
        }
    }
}

impl JobSampler {
    fn new(
        model: &LlamaModel,
        s: &Sampling,
        n_ctx: u32,
        grammar: Option<CompiledGrammar>,
        logprobs: Option<u32>,
    ) -> JobSampler {
        // Out-of-range values switch a stage off instead of reaching llama.cpp, where a NaN
        // temperature or a non-positive penalty would make every logit NaN.
        let mut stages = Vec::new();
        if !s.logit_bias.is_empty() {
            let biases: Vec<LlamaLogitBias> = s
                .logit_bias
                .iter()
                .map(|&(t, b)| LlamaLogitBias::new(LlamaToken(t), b))
                .collect();
            stages.push(LlamaSampler::logit_bias(model.n_vocab(), &biases));
        }
        let repeat = if s.repeat_penalty.is_finite() && s.repeat_penalty > 0.0 {
            s.repeat_penalty
        } else {
            1.0
        };
        let finite = |x: f32| if x.is_finite() { x } else { 0.0 };
        let (freq, present) = (finite(s.frequency_penalty), finite(s.presence_penalty));
        if repeat != 1.0 || freq != 0.0 || present != 0.0 {
            stages.push(LlamaSampler::penalties(
                model.n_vocab(),
                PENALTY_LAST_N,
                repeat,
                freq,
                present,
            ));
        }
        if let Some(dry) = dry_stage(model, &s.dry, n_ctx) {
            stages.push(dry);
        }
        if !(s.temperature.is_finite() && s.temperature > 0.0) {
            stages.push(LlamaSampler::greedy());
        } else {
            if s.top_k > 0 {
                stages.push(LlamaSampler::top_k(s.top_k));
            }
            if s.top_p > 0.0 && s.top_p < 1.0 {
                stages.push(LlamaSampler::top_p(s.top_p, 1));
            }
            if s.min_p > 0.0 && s.min_p < 1.0 {
                stages.push(LlamaSampler::min_p(s.min_p, 1));
            }
            stages.push(LlamaSampler::temp(s.temperature));
            stages.push(LlamaSampler::dist(s.seed.unwrap_or_else(random_seed)));
        }
        let plain_greedy = stages.len() == 1 && !(s.temperature.is_finite() && s.temperature > 0.0);
        let dense_bias = match logprobs {
            Some(_) if !s.logit_bias.is_empty() => {
                let mut dense = vec![0.0f32; usize::try_from(model.n_vocab()).unwrap_or(0)];
                for &(t, b) in &s.logit_bias {
                    if let Some(slot) = usize::try_from(t).ok().and_then(|t| dense.get_mut(t)) {
                        *slot += b;
                    }
                }
                Some(dense)
            }
            _ => None,
        };
        JobSampler {
            chain: LlamaSampler::chain_simple(stages),
            grammar: grammar.map(|g| g.0),
            plain_greedy,
            logprobs: logprobs.map(|n| n as usize),
            dense_bias,
        }
    }

    /// Fills `buf` with the position's logits as candidates; `scan`, when given, sees each
    /// (biased) logit in the same pass.
    fn fill(
        ctx: &LlamaContext<'_>,
        idx: i32,
        buf: &mut Vec<LlamaTokenData>,
        scan: Option<(&mut LogitScan, Option<&[f32]>)>,
    ) -> LlamaTokenDataArray {
        let mut data = std::mem::take(buf);
        data.clear();
        let logits = ctx.get_logits_ith(idx);
        match scan {
            None => data.extend(
                logits
                    .iter()
                    .enumerate()
                    .map(|(i, &l)| LlamaTokenData::new(LlamaToken(i as i32), l, 0.0)),
            ),
            Some((scan, bias)) => {
                data.reserve(logits.len());
                for (i, &l) in logits.iter().enumerate() {
                    let biased = bias.map_or(l, |b| l + b[i]);
                    scan.push(i as i32, biased);
                    data.push(LlamaTokenData::new(LlamaToken(i as i32), l, 0.0));
                }
            }
        }
        LlamaTokenDataArray::new(data, false)
    }

    fn pick(chain: &mut LlamaSampler, arr: &mut LlamaTokenDataArray) -> LlamaToken {
        chain.apply(arr);
        match arr.selected_token() {
            Some(t) => t,
            // Every stage selects; this is only a guard against an empty candidate set.
            None => arr
                .data
                .iter()
                .max_by(|a, b| a.logit().total_cmp(&b.logit()))
                .map_or(LlamaToken(0), LlamaTokenData::id),
        }
    }

    /// Samples the next token; with log probabilities asked for, also scores it against the
    /// model's distribution at this position (softmax of the raw logits plus logit bias; before
    /// penalties, temperature, truncation and the grammar).
    fn sample(
        &mut self,
        ctx: &LlamaContext<'_>,
        idx: i32,
        buf: &mut Vec<LlamaTokenData>,
    ) -> (LlamaToken, Option<Scored>) {
        let mut scan = self.logprobs.map(LogitScan::new);
        let bias = self.dense_bias.as_deref();
        // First pass: the unconstrained choice.
        let mut arr = None;
        let mut token = if self.plain_greedy {
            match &mut scan {
                // Plain greedy has no bias, and the scan's best is the argmax.
                Some(scan) => {
                    for (i, &l) in ctx.get_logits_ith(idx).iter().enumerate() {
                        scan.push(i as i32, l);
                    }
                    scan.best().unwrap_or(LlamaToken(0))
                }
                None => argmax(ctx.get_logits_ith(idx)),
            }
        } else {
            let mut a = JobSampler::fill(ctx, idx, buf, scan.as_mut().map(|s| (s, bias)));
            let t = JobSampler::pick(&mut self.chain, &mut a);
            arr = Some(a);
            t
        };
        if let Some(grammar) = &mut self.grammar {
            // Ask the grammar about the chosen token alone.
            let mut one =
                LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 1.0, 0.0)], false);
            grammar.apply(&mut one);
            let rejected = one
                .data
                .first()
                .is_none_or(|d| d.logit() == f32::NEG_INFINITY);
            if rejected {
                // Second pass: the grammar masks the whole vocabulary, then the chain picks.
                if let Some(a) = arr.take() {
                    *buf = a.data;
                }
                let mut a = JobSampler::fill(ctx, idx, buf, None);
                grammar.apply(&mut a);
                token = JobSampler::pick(&mut self.chain, &mut a);
                arr = Some(a);
            }
            // A lazy grammar is blind until its trigger: the token that completes the trigger
            // may carry text the grammar does not admit, and llama.cpp then refuses it and is
            // left with no parse state, where its next `apply` aborts the whole process
            // (`GGML_ASSERT(!stacks.empty())`). So a refused token ends the constraint: the
            // reply goes on unconstrained, and its decoder judges the text as it comes.
            if grammar.try_accept(token).is_err() {
                self.grammar = None;
            }
        }
        if let Some(a) = arr {
            *buf = a.data;
        }
        self.chain.accept(token);
        let scored = scan.map(|scan| {
            let i = token.0 as usize;
            let logit = ctx
                .get_logits_ith(idx)
                .get(i)
                .copied()
                .unwrap_or(f32::NEG_INFINITY)
                + bias.and_then(|b| b.get(i)).copied().unwrap_or(0.0);
            scan.score(logit, self.logprobs.unwrap_or(0))
        });
        (token, scored)
    }
}

/// llama.cpp's DRY sampler for `dry`, or `None` when it would change nothing.
///
/// Its place in the chain is llama.cpp's: `common/sampling.cpp` adds the samplers in the order
/// of `params.samplers`, whose default is `penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;
/// xtc;temperature` (`tools/server/README.md`, `--samplers`), so DRY comes after the penalties
/// and before truncation, temperature and the pick. Greedy sampling therefore picks the
/// argmax of the penalized logits, and the plain-greedy shortcut (which reads the raw logits)
/// is not taken while DRY is on. The grammar's second pass applies the same chain, so DRY
/// also shapes a pick the grammar forced.
///
/// `penalty_last_n` -1 means the whole context, as in llama-server, which turns -1 into the
/// slot's context size itself (`llama_sampler_init_dry` clamps negative values to 0, off); a
/// larger window than the context is clamped to it, as it could never fill and llama.cpp
/// allocates it up front. Out-of-range values that got past validation switch the stage off
/// rather than reaching llama.cpp, and a breaker with a NUL byte (which llama-cpp-2 panics
/// on) is dropped.
fn dry_stage(model: &LlamaModel, dry: &Dry, n_ctx: u32) -> Option<LlamaSampler> {
    if !(dry.is_on() && dry.multiplier.is_finite() && dry.base.is_finite() && dry.base >= 1.0) {
        return None;
    }
    let n_ctx = i32::try_from(n_ctx).unwrap_or(i32::MAX);
    let last_n = match dry.penalty_last_n {
        -1 => n_ctx,
        n if n > 0 => n.min(n_ctx),
        _ => return None,
    };
    let breakers = dry
        .sequence_breakers
        .iter()
        .filter(|b| !b.is_empty() && !b.contains('\0'))
        .map(String::as_bytes);
    Some(LlamaSampler::dry(
        model,
        dry.multiplier,
        dry.base,
        dry.allowed_length.max(0),
        last_n,
        breakers,
    ))
}

/// The GBNF for `open ws value ws close`, where `value` is the grammar llama.cpp generated
/// from a JSON schema (its start rule renamed from `root` to `json-value`). The whitespace is
/// bounded (at most four characters each side), so a model cannot loop on blanks inside a
/// call the grammar has taken over.
fn wrap_value_grammar(value_gbnf: &str, open: &str, close: &str) -> String {
    let literal = |s: &str| serde_json::Value::String(s.to_owned()).to_string();
    let mut out = format!(
        "root ::= {} [ \\t\\n]{{0,4}} json-value [ \\t\\n]{{0,4}} {}\n",
        literal(open),
        literal(close)
    );
    for line in value_gbnf.lines() {
        match line.strip_prefix("root ::=") {
            Some(rest) => out.push_str(&format!("json-value ::={rest}\n")),
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

/// A fresh seed for a request that named none: distinct per call and per process.
fn random_seed() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish() as u32
}

/// The index of the largest logit (the first, on ties), as llama.cpp's greedy sampler picks.
fn argmax(logits: &[f32]) -> LlamaToken {
    let mut best = 0;
    let mut best_logit = f32::NEG_INFINITY;
    for (i, &l) in logits.iter().enumerate() {
        if l > best_logit {
            best = i;
            best_logit = l;
        }
    }
    LlamaToken(best as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny_engine() -> LlamaEngine {
        let path = std::env::var_os("BELLOWS_TINY_GGUF")
            .expect("BELLOWS_TINY_GGUF is not set: eval \"$(scripts/models-env.sh)\" first");
        let mut opts = LoadOptions::new(path);
        opts.threads = Some(1);
        opts.n_ctx = Some(256);
        LlamaEngine::load(opts).expect("load the tiny GGUF")
    }

    /// Queues tokens straight onto the slots, past admission, which would never let an
    /// out-of-vocabulary token through.
    fn inject(e: &LlamaEngine, tokens: Vec<LlamaToken>) -> mpsc::Receiver<GenEvent> {
        let (tx, rx) = mpsc::channel(EVENT_BUFFER + FINAL_EVENT);
        let job = Job {
            tokens,
            sampling: Sampling::default(),
            grammar: None,
            max_tokens: Some(4),
            stop: Vec::new(),
            logprobs: None,
            tx,
            halt: Arc::new(AtomicBool::new(false)),
            progress: ProgressGuard(Arc::new(Progress::default())),
            admitted: Instant::now(),
            queued: Instant::now(),
        };
        {
            let mut s = lock(&e.shared.sched);
            s.queue.push_back(job);
            s.dispatch();
        }
        e.shared.wake.notify_all();
        rx
    }

    #[test]
    fn a_failed_decode_ends_in_failed_not_a_stop_and_clears_the_cache() {
        let e = tiny_engine();
        let good = e.admission.tokenize_prompt("hello there");
        // Warm the cache, so the failure has something to clear.
        let mut rx = inject(&e, good.clone());
        let mut last = None;
        while let Some(ev) = rx.blocking_recv() {
            last = Some(ev);
        }
        assert!(
            matches!(
                last,
                Some(GenEvent::Done {
                    reason: StopReason::MaxTokens,
                    ..
                })
            ),
            "{last:?}"
        );
        assert!(!e.slot_caches()[0].is_empty());

        let mut bad = good;
        bad.push(LlamaToken(e.info.n_vocab as i32 + 7));
        let mut rx = inject(&e, bad);
        let mut events = Vec::new();
        while let Some(ev) = rx.blocking_recv() {
            events.push(ev);
        }
        match events.as_slice() {
            [GenEvent::Failed { error, timings }] => {
                assert!(error.contains("prompt evaluation failed"), "{error}");
                assert_eq!(timings.generated_tokens, 0);
            }
            other => panic!("expected one Failed event, got {other:?}"),
        }
        assert!(e.slot_caches()[0].is_empty(), "the failed cache is cleared");
    }

    #[test]
    fn logit_scan_matches_a_two_pass_softmax_and_argmax() {
        let logits: Vec<f32> = (0..1000)
            .map(|i| ((i * 7919 % 1000) as f32 / 97.0).sin() * 8.0)
            .chain([7.99, f32::NEG_INFINITY, f32::NAN, 7.99])
            .collect();
        let mut scan = LogitScan::new(5);
        for (i, &l) in logits.iter().enumerate() {
            scan.push(i as i32, l);
        }
        let finite: Vec<(usize, f32)> = logits
            .iter()
            .copied()
            .enumerate()
            .filter(|(_, l)| l.is_finite())
            .collect();
        let max = finite.iter().map(|&(_, l)| l).fold(f32::MIN, f32::max);
        let lse = max
            + finite
                .iter()
                .map(|&(_, l)| (l - max).exp())
                .sum::<f32>()
                .ln();
        assert!(
            (scan.log_sum_exp() - lse).abs() < 1e-4,
            "{} vs {lse}",
            scan.log_sum_exp()
        );
        let mut sorted = finite.clone();
        // Descending by logit, lower id first on ties.
        sorted.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let want: Vec<i32> = sorted.iter().take(5).map(|&(i, _)| i as i32).collect();
        let got: Vec<i32> = scan.top.iter().map(|&(t, _)| t.0).collect();
        assert_eq!(got, want);
        assert_eq!(scan.best(), Some(argmax(&logits)));
        let scored = scan.score(logits[want[0] as usize], 3);
        assert_eq!(scored.top.len(), 3);
        assert!(scored.logprob <= 0.0 && scored.logprob == scored.top[0].1);
        assert!(scored.top.windows(2).all(|w| w[0].1 >= w[1].1));
        let total: f32 = finite.iter().map(|&(_, l)| (l - lse).exp()).sum();
        assert!((total - 1.0).abs() < 1e-4);
    }

    #[test]
    fn endings_map_to_their_events() {
        let t = Timings::default();
        assert!(matches!(
            Ending::Stopped(StopReason::ContextFull).event(t.clone()),
            GenEvent::Done {
                reason: StopReason::ContextFull,
                ..
            }
        ));
        assert!(matches!(
            Ending::Failed("boom".to_owned()).event(t),
            GenEvent::Failed { error, .. } if error == "boom"
        ));
    }
}
