//! Response bodies and stream chunks as the gateway sends them.

use serde::Serialize;

/// Token accounting, shared by every endpoint that generates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
    pub total_tokens: u32,
    pub prompt_tokens_details: PromptTokensDetails,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PromptTokensDetails {
    /// Prompt tokens reused from the slot's prompt cache.
    pub cached_tokens: u32,
}

impl Usage {
    pub fn new(prompt_tokens: u32, cached_tokens: u32, completion_tokens: u32) -> Usage {
        Usage {
            prompt_tokens,
            completion_tokens,
            total_tokens: prompt_tokens + completion_tokens,
            prompt_tokens_details: PromptTokensDetails { cached_tokens },
        }
    }

    /// This usage with another choice of the same request added, as OpenAI counts `n`: the
    /// prompt, which the choices share, once; the completion tokens summed. The cached part
    /// of the prompt is the least any choice reused, so it never claims more reuse than the
    /// request got.
    pub fn with_choice(self, other: Usage) -> Usage {
        let prompt_tokens = self.prompt_tokens.max(other.prompt_tokens);
        let completion_tokens = self.completion_tokens + other.completion_tokens;
        Usage {
            prompt_tokens,
            completion_tokens,
            total_tokens: prompt_tokens + completion_tokens,
            prompt_tokens_details: PromptTokensDetails {
                cached_tokens: self
                    .prompt_tokens_details
                    .cached_tokens
                    .min(other.prompt_tokens_details.cached_tokens),
            },
        }
    }
}

/// Why a choice ended, in OpenAI's vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    Length,
    ToolCalls,
}

/// A non-streamed chat completion.
#[derive(Debug, Clone, Serialize)]
pub struct ChatCompletion {
    pub id: String,
    pub object: &'static str,
    pub created: u64,
    pub model: String,
    pub choices: Vec<ChatChoice>,
    pub usage: Usage,
}

#[derive(Debug, Clone, Serialize)]
pub struct ChatChoice {
    pub index: u32,
    pub message: AssistantMessage,
    pub finish_reason: FinishReason,
    pub logprobs: Option<ChatLogprobs>,
}

/// A chat choice's (or chunk's) log probabilities: one entry per generated token.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ChatLogprobs {
    pub content: Vec<TokenLogprobOut>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenLogprobOut {
    pub token: String,
    pub logprob: f32,
    pub bytes: Vec<u8>,
    pub top_logprobs: Vec<TopLogprobOut>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TopLogprobOut {
    pub token: String,
    pub logprob: f32,
    pub bytes: Vec<u8>,
}

/// A text completion's log probabilities, in the legacy completions shape.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CompletionLogprobs {
    pub tokens: Vec<String>,
    pub token_logprobs: Vec<f32>,
    pub top_logprobs: Vec<serde_json::Map<String, serde_json::Value>>,
    pub text_offset: Vec<u32>,
}

#[derive(Debug, Clone, Serialize)]
pub struct AssistantMessage {
    pub role: &'static str,
    pub content: Option<String>,
    /// The model's reasoning (`<think>…</think>`), apart from its answer, as llama-server,
    /// vLLM and DeepSeek's API return it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    pub refusal: Option<String>,
    /// Calls whose name was certain but which then failed to decode (bellows extension);
    /// their raw text is part of `content`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bellows: Option<MessageExt>,
}

/// A complete tool call.
#[derive(Debug, Clone, Serialize)]
pub struct ToolCall {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub function: FunctionCall,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bellows: Option<ToolCallExt>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FunctionCall {
    pub name: String,
    pub arguments: String,
}

/// The bellows extension on a tool call: how the proposal was obtained.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolCallExt {
    /// The format the model wrote the call in (`text`, `hermes`, …).
    pub format: &'static str,
    /// Every repair applied, one entry per occurrence, in order.
    pub repairs: Vec<&'static str>,
}

/// The bellows extension on a message: decode failures of the turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MessageExt {
    pub failures: Vec<FailureExt>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FailureExt {
    /// The stream index of the call, when its name had already been sent.
    pub index: Option<u32>,
    pub kind: &'static str,
}

/// One chunk of a streamed chat completion.
#[derive(Debug, Clone, Serialize)]
pub struct ChatCompletionChunk {
    pub id: String,
    pub object: &'static str,
    pub created: u64,
    pub model: String,
    pub choices: Vec<ChunkChoice>,
    /// Present (possibly `null`) only when the client asked for usage, as OpenAI does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Option<Usage>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ChunkChoice {
    pub index: u32,
    pub delta: Delta,
    pub finish_reason: Option<FinishReason>,
    pub logprobs: Option<ChatLogprobs>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Delta {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallDelta>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bellows: Option<MessageExt>,
}

/// A fragment of a streamed tool call: the first for an index carries `id`, `type` and the
/// name; later ones carry argument fragments.
#[derive(Debug, Clone, Serialize)]
pub struct ToolCallDelta {
    pub index: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function: Option<FunctionDelta>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bellows: Option<ToolCallExt>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FunctionDelta {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub arguments: String,
}

/// A non-streamed text completion.
#[derive(Debug, Clone, Serialize)]
pub struct Completion {
    pub id: String,
    pub object: &'static str,
    pub created: u64,
    pub model: String,
    pub choices: Vec<CompletionChoice>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CompletionChoice {
    pub index: u32,
    pub text: String,
    pub logprobs: Option<CompletionLogprobs>,
    pub finish_reason: Option<FinishReason>,
}

/// `GET /v1/models`.
#[derive(Debug, Clone, Serialize)]
pub struct ModelList {
    pub object: &'static str,
    pub data: Vec<ModelCard>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ModelCard {
    pub id: String,
    pub object: &'static str,
    pub created: u64,
    pub owned_by: &'static str,
    /// bellows extension: the context one request may use and all slots' together, the
    /// slots, and the profile in force.
    pub bellows: ModelCardExt,
}

#[derive(Debug, Clone, Serialize)]
pub struct ModelCardExt {
    /// Context one request may use (prompt plus reply; `--ctx-per-seq`).
    pub n_ctx: u32,
    /// Context of all slots together (`--ctx`).
    pub n_ctx_total: u32,
    pub n_ctx_train: u32,
    pub slots: u32,
    pub profile: String,
    /// The name of the loaded model when this card is an alias.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alias_of: Option<String>,
    /// The profile's measured conversion rate (`bellows tune`), when it was measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversion_rate: Option<f64>,
    /// Everything the profile's `[measured]` table holds, when it holds anything.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured: Option<models::profile::Measured>,
    /// The tool-call format client tool calls are decoded in (`text`: every in-band format),
    /// and what chose it (`profile NAME`, `chat template: …`, `default`).
    pub tool_format: &'static str,
    pub tool_format_from: String,
}

/// `POST /tokenize`.
#[derive(Debug, Clone, Serialize)]
pub struct TokenizeResponse {
    pub tokens: Vec<i32>,
}

/// `GET /health`.
#[derive(Debug, Clone, Serialize)]
pub struct Health {
    pub status: &'static str,
    pub model: String,
}

/// OpenAI's error envelope.
#[derive(Debug, Clone, Serialize)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Clone, Serialize)]
pub struct ErrorDetail {
    pub message: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub param: Option<String>,
    pub code: &'static str,
}

impl TokenLogprobOut {
    /// The wire form of an engine logprob entry.
    pub fn from_engine(t: &models::TokenLogprob) -> TokenLogprobOut {
        TokenLogprobOut {
            token: String::from_utf8_lossy(&t.bytes).into_owned(),
            logprob: t.logprob,
            bytes: t.bytes.clone(),
            top_logprobs: t
                .top
                .iter()
                .map(|a| TopLogprobOut {
                    token: String::from_utf8_lossy(&a.bytes).into_owned(),
                    logprob: a.logprob,
                    bytes: a.bytes.clone(),
                })
                .collect(),
        }
    }
}

impl CompletionLogprobs {
    /// Appends engine entries; `offset` is the text length before them, advanced per token.
    pub fn extend(&mut self, entries: &[models::TokenLogprob], offset: &mut u32) {
        for t in entries {
            let token = String::from_utf8_lossy(&t.bytes).into_owned();
            self.text_offset.push(*offset);
            *offset += t.bytes.len() as u32;
            self.tokens.push(token);
            self.token_logprobs.push(t.logprob);
            let mut top = serde_json::Map::new();
            for a in &t.top {
                top.insert(
                    String::from_utf8_lossy(&a.bytes).into_owned(),
                    serde_json::json!(a.logprob),
                );
            }
            self.top_logprobs.push(top);
        }
    }
}
