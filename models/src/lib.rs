//! `models`: everything that turns a prompt into tokens.
//!
//! * [`engine`] — the [`Engine`] trait (generation as a stream of events) and its request and
//!   event types; [`ScriptedEngine`], which replays given text for gateway and harness tests.
//! * [`llama`] — [`LlamaEngine`], GGUF models through llama.cpp: one thread per slot owns a
//!   context, prompt-cache prefix reuse, the grammar fast path.
//! * [`gguf`] — checks a GGUF's header, metadata and size before llama.cpp sees it.
//! * [`detok`] — UTF-8 assembly across tokens and stop strings across pieces.
//! * [`template`] — chat templates rendered with minijinja.
//! * [`profile`] — per-model profiles (`models/profiles/*.toml`).
//!
//! This is the only crate that touches llama-cpp-2, and it knows nothing of HTTP.

pub mod detok;
pub mod engine;
pub mod gguf;
pub mod llama;
pub mod profile;
pub mod scripted;
pub mod template;

pub use engine::{
    ChatMessage, DRY_MAX_ALLOWED_LENGTH, DRY_MAX_BREAKER_BYTES, DRY_MAX_BREAKERS, Dry, DryInvalid,
    Engine, EngineError, GenEvent, GenerateRequest, Generation, GrammarSpec, MAX_TOP_LOGPROBS,
    ModelInfo, Progress, ProgressGuard, Prompt, Sampling, StopReason, TemplateSource, TimeoutPhase,
    Timings, TokenLogprob, ToolSpec, TopLogprob, UpstreamError, UpstreamFailure,
};
pub use llama::{LlamaEngine, LoadError, LoadOptions};
pub use profile::{GrammarMode, Profile, ProfileError, ReasoningSpec};
pub use scripted::{Script, ScriptedEngine};
pub use template::{ChatTemplate, TemplateError};
