//! The OpenAI wire types as bellows sends and reads them when it is the *client* of an
//! upstream server (llama-server, vLLM, Ollama, another bellows): the request bodies it sends
//! and the answers, stream chunks and discovery documents it reads. Reading is lenient:
//! every field is optional and unknown fields are ignored, because each server fills in a
//! different subset.

use serde::{Deserialize, Serialize};

/// `POST /v1/completions` with a prompt bellows rendered itself. The fields past the OpenAI
/// ones are llama-server's extensions (another bellows reads `grammar` too; a server that does
/// not know a field ignores it).
#[derive(Debug, Clone, Serialize)]
pub struct UpCompletionRequest<'a> {
    pub model: &'a str,
    pub prompt: &'a str,
    #[serde(flatten)]
    pub params: UpParams,
}

/// `POST /v1/chat/completions` for an upstream that renders the conversation itself.
#[derive(Debug, Clone, Serialize)]
pub struct UpChatRequest<'a> {
    pub model: &'a str,
    pub messages: Vec<UpMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<UpTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_format: Option<serde_json::Value>,
    #[serde(flatten)]
    pub params: UpParams,
}

/// The sampling and stopping fields both endpoints share.
#[derive(Debug, Clone, Serialize)]
pub struct UpParams {
    pub stream: bool,
    pub stream_options: UpStreamOptions,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    pub temperature: f32,
    pub top_p: f32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_k: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_p: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeat_penalty: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frequency_penalty: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// Token id (as a string key) to bias.
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    pub logit_bias: serde_json::Map<String, serde_json::Value>,
    /// llama-server's and vLLM's `ignore_eos`, sent only when set.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub ignore_eos: bool,
    /// llama-server's (and bellows') GBNF grammar.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grammar: Option<String>,
    /// llama-server's JSON-schema constraint on `/v1/completions`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub json_schema: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct UpStreamOptions {
    pub include_usage: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct UpMessage<'a> {
    pub role: &'a str,
    pub content: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<&'a str>,
}

#[derive(Debug, Clone, Serialize)]
pub struct UpTool<'a> {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub function: UpFunction<'a>,
}

#[derive(Debug, Clone, Serialize)]
pub struct UpFunction<'a> {
    pub name: &'a str,
    pub description: &'a str,
    pub parameters: &'a serde_json::Value,
}

/// One `data:` event of either endpoint's stream.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct UpChunk {
    #[serde(default)]
    pub choices: Vec<UpChoice>,
    #[serde(default)]
    pub usage: Option<UpUsage>,
    /// Some servers put an error object into the stream instead of an HTTP status.
    #[serde(default)]
    pub error: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct UpChoice {
    /// `/v1/completions`.
    #[serde(default)]
    pub text: Option<String>,
    /// `/v1/chat/completions`.
    #[serde(default)]
    pub delta: Option<UpDelta>,
    #[serde(default)]
    pub finish_reason: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct UpDelta {
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default)]
    pub tool_calls: Option<Vec<UpToolCallDelta>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct UpToolCallDelta {
    #[serde(default)]
    pub index: Option<u32>,
    #[serde(default)]
    pub function: Option<UpFunctionDelta>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct UpFunctionDelta {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub arguments: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub struct UpUsage {
    #[serde(default)]
    pub prompt_tokens: u32,
    #[serde(default)]
    pub completion_tokens: u32,
    #[serde(default)]
    pub prompt_tokens_details: Option<UpPromptDetails>,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub struct UpPromptDetails {
    #[serde(default)]
    pub cached_tokens: u32,
}

/// `GET /v1/models`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct UpModelList {
    #[serde(default)]
    pub data: Vec<UpModel>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct UpModel {
    pub id: String,
    /// vLLM's context length.
    #[serde(default)]
    pub max_model_len: Option<u32>,
    /// llama-server's model facts.
    #[serde(default)]
    pub meta: Option<UpModelMeta>,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub struct UpModelMeta {
    #[serde(default)]
    pub n_vocab: Option<u32>,
    #[serde(default)]
    pub n_ctx_train: Option<u32>,
}

/// `GET /props`, llama-server's server facts (bellows serves the same shape).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct Props {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_template: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bos_token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eos_token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_generation_settings: Option<PropsGeneration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_slots: Option<u32>,
}

#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize)]
pub struct PropsGeneration {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n_ctx: Option<u32>,
}

/// `POST /tokenize` as llama-server and bellows take it, and their answer.
#[derive(Debug, Clone, Serialize)]
pub struct UpTokenize<'a> {
    pub content: &'a str,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct UpTokens {
    #[serde(default)]
    pub tokens: Vec<i32>,
}

/// An OpenAI-shaped error body: `{"error": {"message": …}}`, or llama-server's variants.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct UpErrorBody {
    #[serde(default)]
    pub error: Option<serde_json::Value>,
}
