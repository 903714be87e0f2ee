//! Request bodies as clients send them.
//!
//! Types here describe the *shape* of a request only. Whether the values make sense together
//! (a named tool that exists, a temperature in range, `n` within its cap) is decided in
//! [`crate::validate`], so every rule lives in one place and names the offending parameter.

use serde::Deserialize;

/// `POST /v1/chat/completions`.
#[derive(Debug, Clone, Deserialize)]
pub struct ChatCompletionRequest {
    /// Optional here because many local clients omit it; when given it must name the model.
    #[serde(default)]
    pub model: Option<String>,
    pub messages: Vec<Message>,
    #[serde(default)]
    pub tools: Option<Vec<Tool>>,
    #[serde(default)]
    pub tool_choice: Option<ToolChoice>,
    #[serde(default)]
    pub parallel_tool_calls: Option<bool>,
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    #[serde(default)]
    pub stop: Option<Stop>,
    #[serde(default)]
    pub max_tokens: Option<u32>,
    #[serde(default)]
    pub max_completion_tokens: Option<u32>,
    #[serde(default)]
    pub temperature: Option<f32>,
    #[serde(default)]
    pub top_p: Option<f32>,
    #[serde(default)]
    pub seed: Option<i64>,
    #[serde(default)]
    pub n: Option<u32>,
    #[serde(default)]
    pub stream: Option<bool>,
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
    #[serde(default)]
    pub logprobs: Option<bool>,
    #[serde(default)]
    pub top_logprobs: Option<u32>,
    #[serde(default)]
    pub frequency_penalty: Option<f32>,
    #[serde(default)]
    pub presence_penalty: Option<f32>,
    /// Token id (as a string) → bias in `[-100, 100]`.
    #[serde(default)]
    pub logit_bias: Option<serde_json::Map<String, serde_json::Value>>,
    /// llama-server's and vLLM's extension: never end at an end-of-generation token.
    #[serde(default)]
    pub ignore_eos: Option<bool>,
    /// llama-server's extension: a GBNF grammar constraining the reply.
    #[serde(default)]
    pub grammar: Option<String>,
    /// llama-server's DRY sampler fields; [`crate::validate`] checks their ranges.
    #[serde(default)]
    pub dry_multiplier: Option<f32>,
    #[serde(default)]
    pub dry_base: Option<f32>,
    #[serde(default)]
    pub dry_allowed_length: Option<i32>,
    #[serde(default)]
    pub dry_penalty_last_n: Option<i32>,
    #[serde(default)]
    pub dry_sequence_breakers: Option<Vec<String>>,
    /// The bellows extension object.
    #[serde(default)]
    pub bellows: Option<BellowsOptions>,
}

/// `POST /v1/completions` (the legacy text completion endpoint).
#[derive(Debug, Clone, Deserialize)]
pub struct CompletionRequest {
    #[serde(default)]
    pub model: Option<String>,
    pub prompt: CompletionPrompt,
    #[serde(default)]
    pub stop: Option<Stop>,
    #[serde(default)]
    pub max_tokens: Option<u32>,
    #[serde(default)]
    pub temperature: Option<f32>,
    #[serde(default)]
    pub top_p: Option<f32>,
    #[serde(default)]
    pub seed: Option<i64>,
    #[serde(default)]
    pub n: Option<u32>,
    #[serde(default)]
    pub best_of: Option<u32>,
    #[serde(default)]
    pub echo: Option<bool>,
    #[serde(default)]
    pub suffix: Option<String>,
    #[serde(default)]
    pub logprobs: Option<u32>,
    #[serde(default)]
    pub frequency_penalty: Option<f32>,
    #[serde(default)]
    pub presence_penalty: Option<f32>,
    #[serde(default)]
    pub logit_bias: Option<serde_json::Map<String, serde_json::Value>>,
    /// llama-server's and vLLM's extension: never end at an end-of-generation token.
    #[serde(default)]
    pub ignore_eos: Option<bool>,
    /// llama-server's extension: a GBNF grammar constraining the text.
    #[serde(default)]
    pub grammar: Option<String>,
    /// llama-server's extension: a JSON schema the text must satisfy (what a bellows in
    /// front sends for `response_format` when it renders the prompt itself).
    #[serde(default)]
    pub json_schema: Option<serde_json::Value>,
    /// llama-server's DRY sampler fields; [`crate::validate`] checks their ranges.
    #[serde(default)]
    pub dry_multiplier: Option<f32>,
    #[serde(default)]
    pub dry_base: Option<f32>,
    #[serde(default)]
    pub dry_allowed_length: Option<i32>,
    #[serde(default)]
    pub dry_penalty_last_n: Option<i32>,
    #[serde(default)]
    pub dry_sequence_breakers: Option<Vec<String>>,
    #[serde(default)]
    pub stream: Option<bool>,
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
}

/// The `prompt` of a completion request: one string, or a batch of them (only a batch of one
/// is served).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum CompletionPrompt {
    One(String),
    Many(Vec<String>),
}

/// `POST /tokenize` (llama-server's shape).
#[derive(Debug, Clone, Deserialize)]
pub struct TokenizeRequest {
    pub content: String,
}

/// One chat message. Fields that only some roles use are optional; [`crate::validate`] checks
/// that each role has what it needs.
#[derive(Debug, Clone, Deserialize)]
pub struct Message {
    pub role: Role,
    #[serde(default)]
    pub content: Option<MessageContent>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub tool_calls: Option<Vec<ToolCallIn>>,
    #[serde(default)]
    pub tool_call_id: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    Developer,
    User,
    Assistant,
    Tool,
}

impl Role {
    pub const fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::Developer => "developer",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// Message content: a plain string or a list of typed parts.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum MessageContent {
    Text(String),
    Parts(Vec<ContentPart>),
}

/// One content part. Only `text` parts can be served by a text-only model; the type is kept
/// as a string so other kinds reach validation and get a precise error.
#[derive(Debug, Clone, Deserialize)]
pub struct ContentPart {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub text: Option<String>,
}

/// A tool call in an earlier assistant message.
#[derive(Debug, Clone, Deserialize)]
pub struct ToolCallIn {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    pub function: FunctionCallIn,
}

#[derive(Debug, Clone, Deserialize)]
pub struct FunctionCallIn {
    pub name: String,
    /// A JSON-encoded string, as OpenAI sends it.
    pub arguments: String,
}

/// A declared tool.
#[derive(Debug, Clone, Deserialize)]
pub struct Tool {
    #[serde(rename = "type")]
    pub kind: String,
    pub function: FunctionDef,
}

#[derive(Debug, Clone, Deserialize)]
pub struct FunctionDef {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub parameters: Option<serde_json::Value>,
    #[serde(default)]
    pub strict: Option<bool>,
}

/// `tool_choice`: a mode string or a named function.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ToolChoice {
    Mode(ToolChoiceMode),
    Named(NamedToolChoice),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoiceMode {
    None,
    Auto,
    Required,
}

#[derive(Debug, Clone, Deserialize)]
pub struct NamedToolChoice {
    #[serde(rename = "type")]
    pub kind: String,
    pub function: NamedFunction,
}

#[derive(Debug, Clone, Deserialize)]
pub struct NamedFunction {
    pub name: String,
}

/// `response_format`.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResponseFormat {
    Text,
    JsonObject,
    JsonSchema { json_schema: JsonSchemaFormat },
}

#[derive(Debug, Clone, Deserialize)]
pub struct JsonSchemaFormat {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub schema: Option<serde_json::Value>,
    #[serde(default)]
    pub strict: Option<bool>,
}

/// `stop`: one string or several.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Stop {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Clone, Deserialize)]
pub struct StreamOptions {
    #[serde(default)]
    pub include_usage: Option<bool>,
}

/// The bellows extension: `"bellows": {"protocol": "text"}`.
#[derive(Debug, Clone, Deserialize)]
pub struct BellowsOptions {
    #[serde(default)]
    pub protocol: Option<ProtocolChoice>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProtocolChoice {
    /// bellows' text protocol: the model is taught the verbs, proposals come back as calls.
    Text,
    /// The default: client tools rendered by the chat template or the profile's format.
    Native,
}
