//! `models`: everything that turns a prompt into tokens.
//!
//! * [`engine`] — the [`Engine`] trait (generation as a stream of events) and its request and
//!   event types; [`ScriptedEngine`], which replays given text for gateway and harness tests.
//! * [`llama`] — [`LlamaEngine`], GGUF models through llama.cpp: loading, admission (template,
//!   tokens, limits, the grammar compiled once), the request queue.
//! * `batcher` — the one thread that owns the context and decodes every sequence in one batch
//!   per step: chunked prefill, prefix reuse and sharing between sequences, back pressure.
//! * `sampler` — a generation's sampler chain, the grammar fast path, log probabilities.
//! * [`attention`] — flash attention and the KV cache's element types, as llama-server names them.
//! * [`gpu`] — where `--gpu-layers` puts layers: the devices llama.cpp's back ends found.
//! * [`gguf`] — checks a GGUF's header, metadata and size before llama.cpp sees it.
//! * [`detok`] — UTF-8 assembly across tokens and stop strings across pieces.
//! * [`template`] — chat templates rendered with minijinja.
//! * [`profile`] — per-model profiles (`models/profiles/*.toml`).
//!
//! This is the only crate that touches llama-cpp-2, and it knows nothing of HTTP.

pub mod attention;
mod batcher;
pub mod detok;
pub mod engine;
pub mod gguf;
pub mod gpu;
pub mod llama;
mod lookup;
pub mod profile;
mod sampler;
pub mod scripted;
pub mod template;

pub use attention::{Attention, CacheType, FlashAttn};
pub use engine::{
    ChatMessage, DRY_MAX_ALLOWED_LENGTH, DRY_MAX_BREAKER_BYTES, DRY_MAX_BREAKERS, Dry, DryInvalid,
    Engine, EngineError, GenEvent, GenerateRequest, Generation, GrammarSpec, MAX_TOP_LOGPROBS,
    ModelInfo, Progress, ProgressGuard, Prompt, Sampling, StopReason, TemplateSource, TimeoutPhase,
    Timings, TokenLogprob, ToolSpec, TopLogprob, UpstreamError, UpstreamFailure,
};
pub use llama::{LOOKUP_AUTO_MAX_SEQS, LlamaEngine, LoadError, LoadOptions, Lookup};
pub use profile::{GrammarMode, Profile, ProfileError, ReasoningSpec};
pub use scripted::{Script, ScriptedEngine};
pub use template::{ChatTemplate, TemplateError};
