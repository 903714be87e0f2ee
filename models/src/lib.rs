//! `models`: everything that turns a prompt into tokens.
//!
//! * [`engine`] — the [`Engine`] trait (generation as a stream of events) and its request and
//!   event types; [`ScriptedEngine`], which replays given text for gateway and harness tests.
//!
//! This is the only crate that touches llama-cpp-2, and it knows nothing of HTTP.

pub mod engine;
pub mod scripted;

pub use engine::{
    ChatMessage, Engine, EngineError, GenEvent, GenerateRequest, Generation, GrammarSpec,
    ModelInfo, Prompt, Sampling, StopReason, Timings, ToolSpec,
};
pub use scripted::{Script, ScriptedEngine};
