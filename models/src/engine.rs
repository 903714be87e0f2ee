//! The engine abstraction: a prompt goes in, a stream of [`GenEvent`]s comes out.
//!
//! `generate` does all validation that can fail *before* the first token (tokenizing, context
//! limits, grammar compilation, queue admission) and returns those failures as `Err`, so the
//! HTTP layer can answer with a status code before it commits to a streaming response. After
//! that, the [`Generation`] stream yields pieces and exactly one final [`GenEvent::Done`].
//! Dropping the `Generation` cancels it: the owning worker stops within one token.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::sync::mpsc;

/// A boxed future, so `Engine` stays object-safe (`Arc<dyn Engine>`).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A chat message as the template sees it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
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
    pub repeat_penalty: f32,
    pub seed: u32,
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling {
            temperature: 0.0,
            top_p: 1.0,
            top_k: 0,
            min_p: 0.0,
            repeat_penalty: 1.0,
            seed: 0,
        }
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
}

/// One generation request.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateRequest {
    pub prompt: Prompt,
    pub sampling: Sampling,
    pub max_tokens: u32,
    /// Stop strings: generation ends before the first occurrence; it never reaches the output.
    pub stop: Vec<String>,
    pub grammar: Option<GrammarSpec>,
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
    /// The consumer went away.
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
}

/// One event of a generation stream.
#[derive(Debug, Clone, PartialEq)]
pub enum GenEvent {
    /// A piece of valid UTF-8 text and the token ids that produced it (a piece may span
    /// several tokens when a character was split across them).
    Text { piece: String, tokens: Vec<i32> },
    /// The end; always the last event.
    Done {
        reason: StopReason,
        timings: Timings,
    },
}

/// A running generation. Dropping it cancels the work.
#[derive(Debug)]
pub struct Generation {
    pub events: mpsc::Receiver<GenEvent>,
    /// Prompt length in tokens, known before the first piece.
    pub prompt_tokens: u32,
}

impl Generation {
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
    /// Context size of each slot.
    pub n_ctx: u32,
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
}

/// A model that generates. Implemented by the llama.cpp engine and [`crate::ScriptedEngine`].
pub trait Engine: Send + Sync + std::fmt::Debug {
    fn info(&self) -> &ModelInfo;
    /// Admit a request: validate it, queue it, and return its event stream.
    fn generate(&self, req: GenerateRequest) -> BoxFuture<'_, Result<Generation, EngineError>>;
    /// Tokenize text as the model would (special tokens parsed).
    fn tokenize(&self, text: &str) -> Result<Vec<i32>, EngineError>;
    /// Render chat messages (and tools) into the prompt text the model will see.
    fn render_chat(
        &self,
        messages: &[ChatMessage],
        tools: &[ToolSpec],
    ) -> Result<String, EngineError>;
}
