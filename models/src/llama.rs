//! [`LlamaEngine`]: GGUF models through llama.cpp.
//!
//! Layout: the model (`Send + Sync`) is shared; one dedicated OS thread owns the one
//! `LlamaContext` (which is `!Send`) and runs every sequence in it, one batch per step (see
//! [`crate::batcher`]). `generate` admits a request on a blocking thread (`spawn_blocking`, so
//! no async worker renders a template or compiles a grammar): it renders the template,
//! tokenizes, checks the per-sequence context limit and compiles the grammar exactly once,
//! moving the compiled sampler into the job; then it puts the job on a bounded FIFO queue. The
//! head of the queue goes to the free sequence that shares the longest prefix with it, so an
//! agent conversation keeps landing on the sequence that already holds its history; it
//! evaluates only the tokens after the shared prefix (or copies a longer one another sequence
//! holds). Events flow back through a bounded channel per generation; a closed channel (the
//! `Generation` was dropped) stops the sequence before its next token.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::Instant;

use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use tokio::sync::mpsc;

use crate::attention::{self, Attention};
use crate::batcher::{
    BatcherConfig, EVENT_BUFFER, FINAL_EVENT, Job, Sched, Shared, engine_main, lock,
};
use crate::engine::{
    BoxFuture, ChatMessage, Engine, EngineError, GenerateRequest, Generation, GrammarSpec,
    MAX_TOP_LOGPROBS, ModelInfo, Progress, ProgressGuard, Prompt, TemplateSource, ToolSpec,
};
use crate::gguf::{self, GgufError, GgufInfo};
use crate::gpu::{self, Offload};
pub use crate::lookup::{LOOKUP_AUTO_MAX_SEQS, Lookup};
use crate::profile::{Profile, ProfileError};
use crate::sampler::CompiledGrammar;
use crate::template::{CHATML_TEMPLATE, ChatTemplate, TemplateError};

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
    /// Threads of the context; defaults to the available parallelism.
    pub threads: Option<u32>,
    /// Cells of the whole context, which every slot's sequence draws from (llama-server's
    /// `-c`); defaults to `n_ctx_seq` times the slots.
    pub n_ctx: Option<u32>,
    /// Cells one sequence may hold (the longest prompt plus reply one request can have);
    /// defaults to `n_ctx` divided among the slots when `n_ctx` is given, else to the
    /// profile's context, else 4096, capped by the training context. Larger than an equal
    /// share, requests wait in the queue while the others' reservations fill the context.
    pub n_ctx_seq: Option<u32>,
    /// Tokens decoded per step at most (llama.cpp's batch).
    pub n_batch: u32,
    /// Prompt tokens one step evaluates while other sequences are generating: the most a
    /// newly admitted prompt delays them per step.
    pub prefill_chunk: u32,
    /// Sequences generating at once in the one context.
    pub slots: u32,
    /// Lookup decoding: drafting a generating sequence's next tokens from n-grams of its
    /// prompt and reply, verified in the same batch (output unchanged).
    pub lookup: Lookup,
    /// Tokens one draft holds at most.
    pub lookup_max: u32,
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
    /// Flash attention and the KV cache's element types (llama-server's `--flash-attn`,
    /// `--cache-type-k`, `--cache-type-v`); llama.cpp's defaults: auto, f16, f16.
    pub attention: Attention,
}

impl LoadOptions {
    pub fn new(path: impl Into<PathBuf>) -> LoadOptions {
        LoadOptions {
            path: path.into(),
            id: None,
            gpu_layers: 0,
            threads: None,
            n_ctx: None,
            n_ctx_seq: None,
            n_batch: 512,
            prefill_chunk: 256,
            slots: 1,
            lookup: Lookup::Auto,
            lookup_max: 8,
            queue_capacity: 64,
            profile: None,
            swa_full: false,
            write_stall: std::time::Duration::from_secs(30),
            attention: Attention::default(),
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

/// The context's cells in all and those one sequence may hold, from the options, the
/// profile's context and the training context (see [`LoadOptions::n_ctx`] and
/// [`LoadOptions::n_ctx_seq`]).
fn context_sizes(
    opts: &LoadOptions,
    profile_n_ctx: Option<u32>,
    n_ctx_train: Option<u32>,
) -> Result<(u32, u32), LoadError> {
    if opts.n_ctx == Some(0) || opts.n_ctx_seq == Some(0) {
        return Err(LoadError::InvalidOption(
            "n_ctx must be at least 1".to_owned(),
        ));
    }
    let slots = opts.slots.max(1);
    let per_seq = match (opts.n_ctx_seq, opts.n_ctx) {
        (Some(seq), total) => seq.min(total.unwrap_or(u32::MAX)),
        (None, Some(total)) => (total / slots).max(1),
        (None, None) => {
            let want = profile_n_ctx.unwrap_or(DEFAULT_N_CTX);
            n_ctx_train.map_or(want, |t| want.min(t))
        }
    };
    if let Some(train) = n_ctx_train
        && per_seq > train
    {
        return Err(LoadError::ContextTooLarge {
            path: opts.path.clone(),
            requested: per_seq,
            n_ctx_train: train,
        });
    }
    let total = opts.n_ctx.unwrap_or_else(|| per_seq.saturating_mul(slots));
    Ok((total, per_seq))
}

/// A grammar as admission compiles it.
#[derive(Debug, Clone)]
struct GrammarJob {
    gbnf: String,
    root: String,
    /// `Some` for lazy grammars.
    triggers: Option<Vec<String>>,
}

/// Grammars compiled in this process (a test checks that a request compiles its grammar once).
static GRAMMAR_COMPILATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many grammars this process has compiled; for tests only.
#[doc(hidden)]
pub fn grammar_compilations() -> u64 {
    GRAMMAR_COMPILATIONS.load(Ordering::Relaxed)
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
        attention::check(&opts.attention).map_err(LoadError::InvalidOption)?;
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
        let (n_ctx_total, n_ctx) = context_sizes(&opts, profile.n_ctx, n_ctx_train)?;

        let backend = backend()?;
        tracing::info!(path = %path.display(), %architecture, profile = %profile.name, n_ctx_total, n_ctx_seq = n_ctx, attention = %opts.attention, "loading model");
        let offload = Offload::plan(opts.gpu_layers, gpu::BUILT_BACKENDS, &gpu::devices());
        if offload.is_unmet() {
            tracing::warn!("{offload}");
        } else if opts.gpu_layers > 0 {
            tracing::info!("{offload}");
        }
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

        let threads = opts
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get() as u32));
        let n_swa = gguf
            .sliding_window()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|&n| n > 0);
        let shared = Arc::new(Shared {
            sched: Mutex::new(Sched::new(opts.slots as usize, n_ctx_total as usize)),
            wake: Condvar::new(),
            split_steps: std::sync::atomic::AtomicU64::new(0),
        });
        let cfg = BatcherConfig {
            n_ctx_total,
            n_ctx_seq: n_ctx,
            n_batch: opts.n_batch.min(n_ctx_total),
            prefill_chunk: opts.prefill_chunk.max(1),
            n_seqs: opts.slots,
            threads,
            n_swa: if opts.swa_full { None } else { n_swa },
            swa_full: opts.swa_full,
            write_stall: opts.write_stall,
            lookup: opts.lookup,
            lookup_max: opts.lookup_max,
            attention: opts.attention,
            split_wide_steps: crate::batcher::splits_wide_steps(
                offload.all_on_cpu(),
                opts.attention.flash_attn,
            ),
        };
        let (ready_tx, ready_rx) = std::sync::mpsc::sync_channel(1);
        let model_w = Arc::clone(&model);
        let shared_w = Arc::clone(&shared);
        let handle = std::thread::Builder::new()
            .name("bellows-engine".to_owned())
            .spawn(move || engine_main(backend, model_w, shared_w, cfg, ready_tx))
            .map_err(LoadError::Thread)?;
        let mut workers = vec![handle];
        let ready = ready_rx
            .recv()
            .unwrap_or_else(|_| Err("the engine thread exited".to_owned()));
        if let Err(mut reason) = ready {
            shutdown(&shared, &mut workers);
            if !opts.attention.is_default() {
                // llama.cpp refuses some combinations per model (a cache type whose block does
                // not divide the head size) with only a log line.
                reason.push_str(&format!(
                    " (with {}: llama.cpp's log above says what it refused)",
                    opts.attention
                ));
            }
            return Err(LoadError::Context {
                path,
                n_ctx: n_ctx_total,
                reason,
            });
        }

        let id = opts.id.clone().unwrap_or_else(|| {
            path.file_stem()
                .map_or_else(|| "model".to_owned(), |s| s.to_string_lossy().into_owned())
        });
        let info = ModelInfo {
            id,
            n_ctx_train: n_ctx_train.unwrap_or(n_ctx),
            n_ctx,
            n_ctx_total,
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

    /// The tokens each slot's sequence holds now, as of its last finished job (for tests and
    /// diagnostics).
    pub fn slot_caches(&self) -> Vec<Vec<i32>> {
        lock(&self.shared.sched)
            .seqs
            .iter()
            .map(|s| s.cached.iter().map(|t| t.0).collect())
            .collect()
    }

    /// Steps so far that decoded their generated tokens and their prompt chunks as two batches
    /// (for tests and diagnostics).
    #[doc(hidden)]
    pub fn split_steps(&self) -> u64 {
        self.shared.split_steps.load(Ordering::Relaxed)
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
            let n_ctx = self.info.n_ctx as usize;
            let reserve = max_tokens.map_or(n_ctx, |m| (tokens.len() + m as usize).min(n_ctx));
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
                reserve,
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
                if s.idle() == 0 && s.queue.len() >= self.queue_capacity {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{GenEvent, Sampling, StopReason};

    fn tiny_engine() -> LlamaEngine {
        let path = std::env::var_os("BELLOWS_TINY_GGUF")
            .expect("BELLOWS_TINY_GGUF is not set: eval \"$(scripts/models-env.sh)\" first");
        let mut opts = LoadOptions::new(path);
        opts.threads = Some(1);
        opts.n_ctx = Some(256);
        LlamaEngine::load(opts).expect("load the tiny GGUF")
    }

    /// Queues tokens straight onto the sequences, past admission, which would never let an
    /// out-of-vocabulary token through.
    fn inject(e: &LlamaEngine, tokens: Vec<LlamaToken>) -> mpsc::Receiver<GenEvent> {
        inject_for(e, tokens, 4, None)
    }

    fn inject_for(
        e: &LlamaEngine,
        tokens: Vec<LlamaToken>,
        max_tokens: u32,
        grammar: Option<CompiledGrammar>,
    ) -> mpsc::Receiver<GenEvent> {
        let (tx, rx) = mpsc::channel(EVENT_BUFFER + FINAL_EVENT);
        let reserve = tokens.len() + max_tokens as usize;
        let job = Job {
            tokens,
            sampling: Sampling::default(),
            grammar,
            max_tokens: Some(max_tokens),
            stop: Vec::new(),
            logprobs: None,
            reserve,
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

    fn collect(rx: &mut mpsc::Receiver<GenEvent>) -> (Vec<i32>, Option<GenEvent>) {
        let mut tokens = Vec::new();
        let mut last = None;
        while let Some(ev) = rx.blocking_recv() {
            if let GenEvent::Text { tokens: t, .. } = &ev {
                tokens.extend(t);
            }
            last = Some(ev);
        }
        (tokens, last)
    }

    #[test]
    fn a_bad_sequence_in_a_batch_fails_alone_and_the_others_go_on() {
        let mut opts = LoadOptions::new(
            std::env::var_os("BELLOWS_TINY_GGUF")
                .expect("BELLOWS_TINY_GGUF is not set: eval \"$(scripts/models-env.sh)\" first"),
        );
        opts.threads = Some(1);
        opts.n_ctx = Some(4096);
        opts.slots = 2;
        let e = LlamaEngine::load(opts).expect("load the tiny GGUF");
        let good = e
            .admission
            .tokenize_prompt("a story about a lighthouse keeper");
        // Letters without end, so the good sequence is still generating when the bad one
        // comes.
        let endless = || {
            let spec = GrammarSpec::Strict {
                gbnf: "root ::= [a-z] root".to_owned(),
                root: "root".to_owned(),
            };
            Some(e.admission.compile(&spec).expect("grammar"))
        };
        let (want, _) = collect(&mut inject_for(&e, good.clone(), 1900, endless()));

        let mut rx = inject_for(&e, good, 1900, endless());
        // Once the good sequence generates, a prompt with an out-of-vocabulary token joins its
        // batch.
        let first = rx.blocking_recv();
        let mut tokens = match first {
            Some(GenEvent::Text { tokens, .. }) => tokens,
            other => panic!("{other:?}"),
        };
        // Read on, so the good sequence never sits out a step for want of a reader.
        let reader = std::thread::spawn(move || collect(&mut rx));
        // A long one (64 tokens or more with the good token) is decoded in a batch of its own
        // after the good token's (a split step); a short one shares the good token's batch.
        let long = "a line of a pasted file\n".repeat(12);
        for (text, split) in [(long.as_str(), true), ("another prompt", false)] {
            let mut bad = e.admission.tokenize_prompt(text);
            bad.push(LlamaToken(e.info.n_vocab as i32 + 7));
            let splits = e.split_steps();
            let (_, bad_end) = collect(&mut inject_for(&e, bad, 4, None));
            match bad_end {
                Some(GenEvent::Failed { error, .. }) => {
                    assert!(error.contains("prompt evaluation failed"), "{error}")
                }
                other => panic!("expected Failed, got {other:?}"),
            }
            assert_eq!(e.split_steps() > splits, split, "{text:?}");
        }
        let (rest, good_end) = reader.join().expect("the reader");
        tokens.extend(rest);
        assert!(
            matches!(
                good_end,
                Some(GenEvent::Done {
                    reason: StopReason::MaxTokens,
                    ..
                })
            ),
            "{good_end:?}"
        );
        assert_eq!(tokens, want, "the good sequence's tokens changed");
    }
}
