//! The engine abstraction: a prompt goes in, a stream of [`GenEvent`]s comes out.
//!
//! `generate` does all validation that can fail *before* the first token (tokenizing, context
//! limits, grammar compilation, queue admission) and returns those failures as `Err`, so the
//! HTTP layer can answer with a status code before it commits to a streaming response. After
//! that, the [`Generation`] stream yields pieces and exactly one final [`GenEvent::Done`].
//! Dropping the `Generation` cancels it: the owning worker stops within one token.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;

/// A boxed future, so `Engine` stays object-safe (`Arc<dyn Engine>`).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A chat message as the template sees it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
    /// For a `tool` message: the id of the call it answers, so templates (and models) can match
    /// results of parallel calls to their calls.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For a `tool` message: the name of the tool that produced it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl ChatMessage {
    /// A message with a role and text only.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: role.into(),
            content: content.into(),
            tool_call_id: None,
            name: None,
        }
    }
}

/// A tool as the chat template's `tools` variable sees it (OpenAI function shape).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
}

/// What to generate from.
#[derive(Debug, Clone, PartialEq)]
pub enum Prompt {
    /// Raw text, tokenized as-is (special tokens parsed).
    Text(String),
    /// Chat messages rendered through the model's (or profile's) chat template.
    Chat {
        messages: Vec<ChatMessage>,
        tools: Vec<ToolSpec>,
    },
}

/// Sampling parameters. `temperature == 0.0` is greedy.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampling {
    pub temperature: f32,
    pub top_p: f32,
    pub top_k: i32,
    pub min_p: f32,
    /// Multiplicative penalty on recently generated tokens (llama.cpp's `repeat_penalty`);
    /// 1.0 is off.
    pub repeat_penalty: f32,
    /// OpenAI's `frequency_penalty`: subtracted once per earlier occurrence; 0.0 is off.
    pub frequency_penalty: f32,
    /// OpenAI's `presence_penalty`: subtracted once if the token occurred at all; 0.0 is off.
    pub presence_penalty: f32,
    /// The sampler's seed. `None` draws a fresh random seed for each generation, so retries
    /// at a temperature above zero give different samples.
    pub seed: Option<u32>,
    /// Added to a token's logit before sampling (OpenAI's `logit_bias`, token id → bias);
    /// `f32::NEG_INFINITY` bans the token.
    pub logit_bias: Vec<(i32, f32)>,
    /// llama.cpp's DRY sampler; off by default.
    pub dry: Dry,
    /// llama-server's and vLLM's `ignore_eos`: every end-of-generation token of the
    /// vocabulary is banned (logit -inf), so generation runs to `max_tokens`, a stop string or
    /// the context's end. Serving benchmarks send it to get replies of a fixed length.
    pub ignore_eos: bool,
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling {
            temperature: 0.0,
            top_p: 1.0,
            top_k: 0,
            min_p: 0.0,
            repeat_penalty: 1.0,
            frequency_penalty: 0.0,
            presence_penalty: 0.0,
            seed: None,
            logit_bias: Vec::new(),
            dry: Dry::default(),
            ignore_eos: false,
        }
    }
}

/// At most this many DRY sequence breakers: llama.cpp scans the whole vocabulary for each one
/// when it builds the sampler, once per generation.
pub const DRY_MAX_BREAKERS: usize = 16;
/// The longest DRY sequence breaker, in bytes. llama.cpp truncates longer ones to 40
/// characters (`MAX_CHAR_LEN` in `llama_sampler_init_dry`); we refuse them instead.
pub const DRY_MAX_BREAKER_BYTES: usize = 40;
/// The largest `allowed_length`: a repeat this long is a whole paragraph, and a larger value
/// only turns the sampler off in a way that looks on.
pub const DRY_MAX_ALLOWED_LENGTH: i32 = 1024;

/// llama.cpp's DRY ("don't repeat yourself") sampler, by p-e-w. A token that would extend a
/// sequence already seen in the reply by one more token, where the sequence is at least
/// `allowed_length` tokens long, has `multiplier * base^(length - allowed_length)` subtracted
/// from its logit. A sequence breaker (a string; each token that contains it) ends the
/// sequences that run through it, so that repeated punctuation or line structure is not
/// punished.
///
/// The fields and defaults are llama-server's request fields (`tools/server/README.md`:
/// `dry_multiplier` 0.0 = off, `dry_base` 1.75, `dry_allowed_length` 2,
/// `dry_penalty_last_n`, `dry_sequence_breakers` `["\n", ":", "\"", "*"]`), with two
/// differences, both deliberate:
/// - `penalty_last_n` defaults to -1, the whole context (llama-server's `common.h` default is
///   64). llama-server turns -1 into the slot's context size before the sampler sees it, and so
///   does the engine (`llama_sampler_init_dry` itself clamps negative values to 0, off).
/// - The sampler sees the reply only, not the prompt (llama-server also feeds it the prompt):
///   an edit or a SEARCH block copies lines from the prompt verbatim, and DRY over the prompt
///   would push the model off exactly those copies. The loops it is for (one block repeated
///   until the context is full) happen inside a reply.
///
/// llama.cpp's sampler does nothing when `base < 1` and llama-server silently replaces such a
/// base with 1.75; [`Dry::check`] refuses it instead.
#[derive(Debug, Clone, PartialEq)]
pub struct Dry {
    /// Scales the penalty; 0.0 is off.
    pub multiplier: f32,
    /// The penalty grows by this factor for each token past `allowed_length`; at least 1.
    pub base: f32,
    /// Repeats up to this many tokens long are free.
    pub allowed_length: i32,
    /// How many of the last tokens are scanned for repeats: -1 the whole context, 0 off.
    pub penalty_last_n: i32,
    /// Strings that end a repeat; llama.cpp's defaults are a newline, `:`, `"` and `*`.
    pub sequence_breakers: Vec<String>,
}

impl Default for Dry {
    fn default() -> Self {
        Dry {
            multiplier: 0.0,
            base: 1.75,
            allowed_length: 2,
            penalty_last_n: -1,
            sequence_breakers: ["\n", ":", "\"", "*"].map(str::to_owned).to_vec(),
        }
    }
}

/// A DRY setting out of range: the field, as the request field and profile key name it
/// (`dry_base`), and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DryInvalid {
    pub field: &'static str,
    pub message: String,
}

impl Dry {
    /// Whether the sampler changes anything: a positive multiplier and a window.
    pub fn is_on(&self) -> bool {
        self.multiplier > 0.0 && self.penalty_last_n != 0
    }

    /// Checks every field against the ranges served; the gateway and the profile loader both
    /// call it, so a request and a profile obey the same rules.
    pub fn check(&self) -> Result<(), DryInvalid> {
        let bad = |field, message: String| Err(DryInvalid { field, message });
        // Range checks, so that NaN is refused as well.
        if !(self.multiplier >= 0.0 && self.multiplier.is_finite()) {
            return bad(
                "dry_multiplier",
                format!("{} is not a finite number >= 0", self.multiplier),
            );
        }
        if !(self.base >= 1.0 && self.base.is_finite()) {
            return bad(
                "dry_base",
                format!(
                    "{} is not a finite number >= 1 (llama.cpp's DRY does nothing below 1)",
                    self.base
                ),
            );
        }
        if !(0..=DRY_MAX_ALLOWED_LENGTH).contains(&self.allowed_length) {
            return bad(
                "dry_allowed_length",
                format!(
                    "{} is not in [0, {DRY_MAX_ALLOWED_LENGTH}]",
                    self.allowed_length
                ),
            );
        }
        if self.penalty_last_n < -1 {
            return bad(
                "dry_penalty_last_n",
                format!(
                    "{} is below -1 (-1 is the whole context, 0 is off)",
                    self.penalty_last_n
                ),
            );
        }
        let breakers = &self.sequence_breakers;
        if breakers.len() > DRY_MAX_BREAKERS {
            return bad(
                "dry_sequence_breakers",
                format!(
                    "{} sequence breakers; at most {DRY_MAX_BREAKERS}",
                    breakers.len()
                ),
            );
        }
        for b in breakers {
            if b.is_empty() || b.len() > DRY_MAX_BREAKER_BYTES || b.contains('\0') {
                return bad(
                    "dry_sequence_breakers",
                    format!(
                        "{b:?}: a sequence breaker is 1 to {DRY_MAX_BREAKER_BYTES} bytes \
                         without NUL"
                    ),
                );
            }
        }
        Ok(())
    }
}

/// A grammar constraining generation.
#[derive(Debug, Clone, PartialEq)]
pub enum GrammarSpec {
    /// GBNF, enforced from the first token.
    Strict { gbnf: String, root: String },
    /// GBNF that switches on when one of `triggers` appears in the output.
    Lazy {
        gbnf: String,
        root: String,
        triggers: Vec<String>,
    },
    /// A JSON schema, converted to GBNF by the engine and enforced strictly.
    JsonSchema(serde_json::Value),
    /// Free text until `trigger` appears in the output; from there the grammar admits the
    /// trigger, whitespace, one JSON value valid against `schema`, whitespace and `close`
    /// (llama.cpp's lazy grammar, as llama-server uses for tool calls: a model may answer in
    /// prose, but a call it opens is always well-formed).
    LazyJsonSchema {
        schema: serde_json::Value,
        trigger: String,
        close: String,
    },
}

/// One generation request.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateRequest {
    pub prompt: Prompt,
    pub sampling: Sampling,
    /// At most this many generated tokens; `None` generates until the context is full. When
    /// given, the prompt plus `max_tokens` must fit in the context, else `generate` answers
    /// [`EngineError::ContextExceeded`] (a reply must not end silently at "length").
    pub max_tokens: Option<u32>,
    /// Stop strings: generation ends before the first occurrence; it never reaches the output.
    pub stop: Vec<String>,
    pub grammar: Option<GrammarSpec>,
    /// Log probabilities: `Some(n)` reports each generated token's log probability and the
    /// `n` most likely alternatives (`0..=MAX_TOP_LOGPROBS`) in [`GenEvent::Text::logprobs`].
    pub logprobs: Option<u32>,
}

/// The most alternatives [`GenerateRequest::logprobs`] may ask for (OpenAI's limit).
pub const MAX_TOP_LOGPROBS: u32 = 20;

/// One generated token's log probability, with the most likely alternatives when asked.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenLogprob {
    pub token: i32,
    /// The token's text as bytes (a token may hold part of a UTF-8 character).
    pub bytes: Vec<u8>,
    /// Natural log of the token's probability under the model's distribution: the softmax
    /// of the raw logits plus logit bias, before penalties, temperature, truncation and any
    /// grammar, as OpenAI reports it.
    pub logprob: f32,
    /// The most likely tokens at this position, most likely first.
    pub top: Vec<TopLogprob>,
}

/// An alternative token at one position.
#[derive(Debug, Clone, PartialEq)]
pub struct TopLogprob {
    pub token: i32,
    pub bytes: Vec<u8>,
    pub logprob: f32,
}

/// Why generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// An end-of-generation token.
    Eog,
    /// A stop string.
    Stop,
    /// `max_tokens` reached.
    MaxTokens,
    /// The context filled up.
    ContextFull,
    /// The consumer went away, or stopped reading for longer than the engine's write-stall
    /// bound.
    Cancelled,
}

impl StopReason {
    pub const fn as_str(self) -> &'static str {
        match self {
            StopReason::Eog => "eog",
            StopReason::Stop => "stop",
            StopReason::MaxTokens => "max_tokens",
            StopReason::ContextFull => "context_full",
            StopReason::Cancelled => "cancelled",
        }
    }
}

/// Counts and durations of one generation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timings {
    /// Tokens in the prompt.
    pub prompt_tokens: u32,
    /// Prompt tokens reused from the slot's cache (not evaluated again).
    pub cached_tokens: u32,
    /// Tokens generated.
    pub generated_tokens: u32,
    /// Time spent evaluating the uncached part of the prompt.
    pub prompt_eval: Duration,
    /// Time from request admission to the first generated piece.
    pub time_to_first_token: Duration,
    /// Time spent generating after the first token.
    pub generation: Duration,
    /// Tokens drafted by lookup decoding and verified alongside the sampled ones.
    pub draft_tokens: u32,
    /// Drafted tokens the sampler agreed with (generated without a step of their own).
    pub draft_accepted: u32,
}

/// One event of a generation stream.
#[derive(Debug, Clone, PartialEq)]
pub enum GenEvent {
    /// A piece of valid UTF-8 text and the token ids that produced it (a piece may span
    /// several tokens when a character was split across them). `logprobs` has one entry per
    /// token when the request asked for them, and is empty otherwise.
    Text {
        piece: String,
        tokens: Vec<i32>,
        logprobs: Vec<TokenLogprob>,
    },
    /// The end; the last event of a generation that ran to a stop.
    Done {
        reason: StopReason,
        timings: Timings,
    },
    /// The engine failed mid-generation (a llama.cpp decode error, a grammar that would not
    /// compile on the slot): the last event of a generation that did not. Never dressed up as
    /// a stop or a length limit.
    Failed { error: String, timings: Timings },
}

/// A running generation. Dropping it cancels the work.
#[derive(Debug)]
pub struct Generation {
    pub events: mpsc::Receiver<GenEvent>,
    /// Prompt length in tokens, known before the first piece.
    pub prompt_tokens: u32,
    /// Set by [`Generation::halt`]; the engine checks it before each token.
    pub halt: Arc<AtomicBool>,
    /// Tokens the engine has generated and reused so far, updated as it goes: a consumer that
    /// drops the stream (the client went away) still learns what the request cost.
    pub progress: Arc<Progress>,
    /// The typed cause behind a [`GenEvent::Failed`], when the engine has one: a remote
    /// engine sets its [`UpstreamError`] here before it sends that event, so a consumer can
    /// answer a broken upstream stream as the gateway error it is (the event's text stays the
    /// same for everyone else).
    pub cause: Arc<std::sync::OnceLock<UpstreamError>>,
}

/// Live counts of one generation, kept by the engine while it runs, and a signal when the
/// engine is done with it (finished, cancelled or refused at shutdown).
#[derive(Debug, Default)]
pub struct Progress {
    generated: AtomicU32,
    cached: AtomicU32,
    done: AtomicBool,
    notify: tokio::sync::Notify,
}

/// Held by the engine for one generation; marks its [`Progress`] done when dropped, whatever
/// way the work ended.
#[derive(Debug)]
pub struct ProgressGuard(pub Arc<Progress>);

impl std::ops::Deref for ProgressGuard {
    type Target = Progress;
    fn deref(&self) -> &Progress {
        &self.0
    }
}

impl Drop for ProgressGuard {
    fn drop(&mut self) {
        self.0.done.store(true, Ordering::Release);
        self.0.notify.notify_waiters();
    }
}

impl Progress {
    /// Waits until the engine is done with this generation; the counts are final then.
    pub async fn finished(&self) {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.done.load(Ordering::Acquire) {
                return;
            }
            notified.await;
        }
    }

    /// Whether the engine is done with this generation.
    pub fn is_finished(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }

    pub fn set_generated(&self, n: u32) {
        self.generated.store(n, Ordering::Relaxed);
    }
    pub fn set_cached(&self, n: u32) {
        self.cached.store(n, Ordering::Relaxed);
    }
    /// Tokens generated so far.
    pub fn generated(&self) -> u32 {
        self.generated.load(Ordering::Relaxed)
    }
    /// Prompt tokens reused from the cache.
    pub fn cached(&self) -> u32 {
        self.cached.load(Ordering::Relaxed)
    }
}

impl Generation {
    /// A generation reading `events`, halted through `halt`.
    pub fn new(
        events: mpsc::Receiver<GenEvent>,
        prompt_tokens: u32,
        halt: Arc<AtomicBool>,
    ) -> Self {
        Generation {
            events,
            prompt_tokens,
            halt,
            progress: Arc::new(Progress::default()),
            cause: Arc::default(),
        }
    }

    /// The same generation, reporting its counts through `progress`.
    pub fn with_progress(mut self, progress: Arc<Progress>) -> Self {
        self.progress = progress;
        self
    }

    /// Asks the engine to stop generating as if a stop string had matched: no token after the
    /// current one is generated, and the stream still ends with [`GenEvent::Done`] (reason
    /// [`StopReason::Stop`]) and its timings. A consumer that has what it wanted (one tool
    /// call, the turn's action limit) uses this instead of dropping the stream, which would
    /// lose the accounting.
    pub fn halt(&self) {
        self.halt.store(true, Ordering::Relaxed);
    }

    /// The next event, or `None` once the stream has ended.
    pub async fn next(&mut self) -> Option<GenEvent> {
        self.events.recv().await
    }
}

/// What a loaded model is.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelInfo {
    /// The name clients use (`/v1/models`, the `model` field).
    pub id: String,
    /// Training context length from the GGUF metadata.
    pub n_ctx_train: u32,
    /// Context one request may use: its prompt plus its reply (the per-sequence limit).
    pub n_ctx: u32,
    /// Context of all slots together (the KV cells they share).
    pub n_ctx_total: u32,
    /// Tokens in the vocabulary (valid token ids are `0..n_vocab`).
    pub n_vocab: u32,
    /// Number of parallel slots.
    pub slots: u32,
    /// The profile in force (its file stem, or "generic").
    pub profile: String,
}

/// Errors of the engine layer.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("the prompt is {prompt_tokens} tokens but the context holds {n_ctx}")]
    PromptTooLong { prompt_tokens: u32, n_ctx: u32 },
    #[error(
        "the prompt ({prompt_tokens} tokens) plus max_tokens ({max_tokens}) exceeds the context of {n_ctx} tokens"
    )]
    ContextExceeded {
        prompt_tokens: u32,
        max_tokens: u32,
        n_ctx: u32,
    },
    #[error("the request queue is full ({capacity} waiting)")]
    QueueFull { capacity: usize },
    #[error("invalid grammar: {0}")]
    InvalidGrammar(String),
    #[error("invalid JSON schema: {0}")]
    InvalidSchema(String),
    #[error("chat template failed: {0}")]
    Template(String),
    #[error("tokenization failed: {0}")]
    Tokenize(String),
    #[error("the engine has shut down")]
    ShutDown,
    #[error("engine failure: {0}")]
    Backend(String),
    /// A remote engine (an OpenAI-compatible server bellows fronts) failed or refused.
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
}

/// A failure of a remote engine: which one (its name from the configuration) and what went
/// wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("upstream {upstream}: {failure}")]
pub struct UpstreamError {
    pub upstream: String,
    pub failure: UpstreamFailure,
}

/// What went wrong with a remote engine.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum UpstreamFailure {
    /// No connection: refused, unreachable, reset before an answer.
    #[error("cannot connect: {reason}")]
    Connect { reason: String },
    /// The upstream answered with an error status (its message, shortened).
    #[error("answered status {status}: {message}")]
    Refused { status: u16, message: String },
    /// Nothing arrived within the bound for this phase.
    #[error("{phase} after {} ms", after.as_millis())]
    Timeout {
        phase: TimeoutPhase,
        after: Duration,
    },
    /// The upstream sent something that is not the protocol: a malformed event stream or
    /// JSON, or a stream that ended before it finished.
    #[error("protocol error: {reason}")]
    Protocol { reason: String },
    /// The request needs something this upstream cannot do (a grammar through a chat-only
    /// API, log probabilities); `param` is the request field at fault.
    #[error("cannot serve `{param}`: {reason}")]
    Unsupported { param: &'static str, reason: String },
}

impl UpstreamFailure {
    /// Whether another upstream could serve the same request: the failure was this
    /// upstream's, not the request's.
    pub fn is_retryable(&self) -> bool {
        match self {
            UpstreamFailure::Connect { .. }
            | UpstreamFailure::Timeout { .. }
            | UpstreamFailure::Protocol { .. } => true,
            UpstreamFailure::Refused { status, .. } => *status >= 500 || *status == 429,
            UpstreamFailure::Unsupported { .. } => false,
        }
    }
}

/// Which wait timed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutPhase {
    /// Opening the connection.
    Connect,
    /// From sending the request to the first generated text (prompt evaluation included).
    FirstByte,
    /// Between two pieces of a running stream.
    Idle,
}

impl std::fmt::Display for TimeoutPhase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TimeoutPhase::Connect => "no connection",
            TimeoutPhase::FirstByte => "no first token",
            TimeoutPhase::Idle => "the stream went quiet",
        })
    }
}

/// The chat template an engine renders with, and the special-token texts it is given: what a
/// client needs to render a conversation exactly as the engine would (llama-server's
/// `/props` publishes the same).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateSource {
    pub source: String,
    pub bos_token: String,
    pub eos_token: String,
}

/// A model that generates. Implemented by the llama.cpp engine and [`crate::ScriptedEngine`].
pub trait Engine: Send + Sync + std::fmt::Debug {
    fn info(&self) -> &ModelInfo;
    /// Admit a request: validate it, queue it, and return its event stream.
    fn generate(&self, req: GenerateRequest) -> BoxFuture<'_, Result<Generation, EngineError>>;
    /// Tokenize text as the model would (special tokens parsed).
    fn tokenize(&self, text: &str) -> Result<Vec<i32>, EngineError>;
    /// Whether the chat template shows the `tools` variable to the model (probed once, at
    /// load). When it does not, a caller must describe tools some other way (a system
    /// message) or they silently vanish.
    fn renders_tools(&self) -> bool;
    /// Render chat messages (and tools) into the prompt text the model will see.
    fn render_chat(
        &self,
        messages: &[ChatMessage],
        tools: &[ToolSpec],
    ) -> Result<String, EngineError>;
    /// The chat template `render_chat` uses, when the engine renders with a Jinja template
    /// it can show; `None` for engines that render some other way.
    fn chat_template(&self) -> Option<TemplateSource> {
        None
    }
}

/// A shared engine is an engine, so a caller holding `Arc<dyn Engine>` (a model chosen at run
/// time: loaded here, or remote) passes it where `&dyn Engine` is wanted.
impl<E: Engine + ?Sized> Engine for Arc<E> {
    fn info(&self) -> &ModelInfo {
        (**self).info()
    }
    fn generate(&self, req: GenerateRequest) -> BoxFuture<'_, Result<Generation, EngineError>> {
        (**self).generate(req)
    }
    fn tokenize(&self, text: &str) -> Result<Vec<i32>, EngineError> {
        (**self).tokenize(text)
    }
    fn renders_tools(&self) -> bool {
        (**self).renders_tools()
    }
    fn render_chat(
        &self,
        messages: &[ChatMessage],
        tools: &[ToolSpec],
    ) -> Result<String, EngineError> {
        (**self).render_chat(messages, tools)
    }
    fn chat_template(&self) -> Option<TemplateSource> {
        (**self).chat_template()
    }
}
