//! Raw request → validated request: every rule about what a request may ask for lives here.
//!
//! The engine only ever sees a [`ValidChat`] or [`ValidCompletion`]; each rejection is an
//! [`ApiError`] that names the parameter at fault.

use models::{ChatMessage, GenerateRequest, GrammarSpec, ModelInfo, Prompt, Sampling};
use serde::de::DeserializeOwned;

use crate::api::request::{
    ChatCompletionRequest, CompletionPrompt, CompletionRequest, Message, MessageContent,
    ResponseFormat, Role, Stop, StreamOptions,
};
use crate::error::ApiError;
use crate::state::Defaults;
use crate::tools::{self, ToolPlan};

/// At most this many stop strings, so matching stays cheap.
pub const MAX_STOP_STRINGS: usize = 16;
/// `/v1/completions` generates this many tokens when `max_tokens` is absent (OpenAI's default).
pub const COMPLETIONS_DEFAULT_MAX_TOKENS: u32 = 16;

/// A chat request the engine can run.
#[derive(Debug)]
pub struct ValidChat {
    pub generate: GenerateRequest,
    pub stream: bool,
    pub include_usage: bool,
    /// How the reply is decoded into tool calls (or not).
    pub tools: ToolPlan,
}

/// A text completion request the engine can run.
#[derive(Debug)]
pub struct ValidCompletion {
    pub generate: GenerateRequest,
    pub stream: bool,
    pub include_usage: bool,
}

/// Parses a JSON body; a syntax error is `invalid_json`, a wrong type or value names the path
/// of the offending field (`messages[1].role`).
pub fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let value: T = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        match inner.classify() {
            serde_json::error::Category::Data => data_error(path, &inner),
            _ => ApiError::InvalidJson(inner.to_string()),
        }
    })?;
    de.end().map_err(|e| ApiError::InvalidJson(e.to_string()))?;
    Ok(value)
}

fn data_error(path: String, inner: &serde_json::Error) -> ApiError {
    let message = inner.to_string();
    // serde reports a missing field at its parent's path, with the name in backticks.
    if let Some(rest) = message.strip_prefix("missing field `") {
        let field = rest.split('`').next().unwrap_or_default();
        let param = if path == "." {
            field.to_owned()
        } else {
            format!("{path}.{field}")
        };
        return ApiError::MissingField { param };
    }
    // Drop serde_json's " at line 1 column 40" suffix: the parameter path says where.
    let message = match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message,
    };
    let param = if path == "." { "body".to_owned() } else { path };
    ApiError::InvalidValue { param, message }
}

/// Checks a chat request against the model and turns it into an engine request.
pub fn chat(
    raw: ChatCompletionRequest,
    info: &ModelInfo,
    defaults: &Defaults,
) -> Result<ValidChat, ApiError> {
    check_model(raw.model.as_deref(), info)?;
    check_n(raw.n)?;
    if raw.logprobs == Some(true) {
        return Err(ApiError::unsupported(
            "logprobs",
            "log probabilities are not served",
        ));
    }
    let stream = raw.stream.unwrap_or(false);
    let include_usage = stream_usage(stream, raw.stream_options.as_ref())?;
    if raw.messages.is_empty() {
        return Err(ApiError::invalid(
            "messages",
            "at least one message is required",
        ));
    }
    let mut messages = Vec::with_capacity(raw.messages.len() + 1);
    for (i, m) in raw.messages.iter().enumerate() {
        messages.push(message(i, m)?);
    }
    let grammar_from_format = match &raw.response_format {
        None | Some(ResponseFormat::Text) => None,
        Some(ResponseFormat::JsonObject) => Some(GrammarSpec::JsonSchema(
            serde_json::json!({"type": "object"}),
        )),
        Some(ResponseFormat::JsonSchema { json_schema }) => {
            let schema = json_schema.schema.clone().unwrap_or(serde_json::json!({}));
            if !(schema.is_object() || schema.is_boolean()) {
                return Err(ApiError::InvalidSchema(
                    "`response_format.json_schema.schema` must be a JSON object".into(),
                ));
            }
            Some(GrammarSpec::JsonSchema(schema))
        }
    };
    let plan = tools::plan(
        raw.tools.as_deref(),
        raw.tool_choice.as_ref(),
        raw.bellows.as_ref(),
        defaults.native_mode,
    )?;
    if grammar_from_format.is_some() && plan.decodes() {
        return Err(ApiError::unsupported(
            "response_format",
            "a JSON response_format cannot be combined with tools unless tool_choice is \"none\"",
        ));
    }
    if let Some(system) = plan.system_prompt() {
        prepend_system(&mut messages, system);
    }
    let max_tokens = max_tokens(raw.max_completion_tokens.or(raw.max_tokens), info, None)?;
    let generate = GenerateRequest {
        prompt: Prompt::Chat {
            messages,
            tools: plan.template_tools(),
        },
        sampling: sampling(&defaults.sampling, raw.temperature, raw.top_p, raw.seed)?,
        max_tokens,
        stop: stop(raw.stop.as_ref())?,
        grammar: grammar_from_format.or_else(|| plan.grammar()),
    };
    Ok(ValidChat {
        generate,
        stream,
        include_usage,
        tools: plan,
    })
}

/// Checks a text completion request and turns it into an engine request.
pub fn completion(
    raw: CompletionRequest,
    info: &ModelInfo,
    defaults: &Defaults,
) -> Result<ValidCompletion, ApiError> {
    check_model(raw.model.as_deref(), info)?;
    check_n(raw.n)?;
    if raw.best_of.is_some_and(|b| b != 1) {
        return Err(ApiError::unsupported(
            "best_of",
            "only best_of = 1 is served",
        ));
    }
    if raw.echo == Some(true) {
        return Err(ApiError::unsupported(
            "echo",
            "echoing the prompt is not served",
        ));
    }
    if raw.suffix.as_deref().is_some_and(|s| !s.is_empty()) {
        return Err(ApiError::unsupported(
            "suffix",
            "fill-in-the-middle is not served",
        ));
    }
    if raw.logprobs.is_some() {
        return Err(ApiError::unsupported(
            "logprobs",
            "log probabilities are not served",
        ));
    }
    let stream = raw.stream.unwrap_or(false);
    let include_usage = stream_usage(stream, raw.stream_options.as_ref())?;
    let prompt = match raw.prompt {
        CompletionPrompt::One(p) => p,
        CompletionPrompt::Many(mut v) if v.len() == 1 => v.remove(0),
        CompletionPrompt::Many(_) => {
            return Err(ApiError::unsupported(
                "prompt",
                "only a single prompt per request",
            ));
        }
    };
    if prompt.is_empty() {
        return Err(ApiError::invalid("prompt", "the prompt must not be empty"));
    }
    let max_tokens = max_tokens(raw.max_tokens, info, Some(COMPLETIONS_DEFAULT_MAX_TOKENS))?;
    let generate = GenerateRequest {
        prompt: Prompt::Text(prompt),
        sampling: sampling(&defaults.sampling, raw.temperature, raw.top_p, raw.seed)?,
        max_tokens,
        stop: stop(raw.stop.as_ref())?,
        grammar: None,
    };
    Ok(ValidCompletion {
        generate,
        stream,
        include_usage,
    })
}

fn check_model(model: Option<&str>, info: &ModelInfo) -> Result<(), ApiError> {
    match model {
        Some(m) if m != info.id => Err(ApiError::ModelNotFound(m.to_owned(), info.id.clone())),
        _ => Ok(()),
    }
}

fn check_n(n: Option<u32>) -> Result<(), ApiError> {
    match n {
        None | Some(1) => Ok(()),
        Some(n) => Err(ApiError::unsupported(
            "n",
            format!("n = {n}; only one choice is served"),
        )),
    }
}

fn stream_usage(stream: bool, opts: Option<&StreamOptions>) -> Result<bool, ApiError> {
    match opts {
        None => Ok(false),
        Some(_) if !stream => Err(ApiError::invalid(
            "stream_options",
            "stream_options is only allowed when stream is true",
        )),
        Some(o) => Ok(o.include_usage.unwrap_or(false)),
    }
}

fn message(i: usize, m: &Message) -> Result<ChatMessage, ApiError> {
    let mut content = match &m.content {
        None => String::new(),
        Some(MessageContent::Text(t)) => t.clone(),
        Some(MessageContent::Parts(parts)) => {
            let mut s = String::new();
            for (j, p) in parts.iter().enumerate() {
                match (p.kind.as_str(), &p.text) {
                    ("text", Some(t)) => s.push_str(t),
                    ("text", None) => {
                        return Err(ApiError::MissingField {
                            param: format!("messages[{i}].content[{j}].text"),
                        });
                    }
                    (other, _) => {
                        return Err(ApiError::unsupported(
                            format!("messages[{i}].content[{j}].type"),
                            format!("content parts of type {other:?} are not served; use text"),
                        ));
                    }
                }
            }
            s
        }
    };
    let calls = m.tool_calls.as_deref().unwrap_or_default();
    match m.role {
        Role::Assistant => {
            for (j, c) in calls.iter().enumerate() {
                let args: serde_json::Value =
                    serde_json::from_str(&c.function.arguments).map_err(|e| {
                        ApiError::invalid(
                            format!("messages[{i}].tool_calls[{j}].function.arguments"),
                            format!("not a JSON-encoded string: {e}"),
                        )
                    })?;
                content.push_str(&tools::render_past_call(&c.function.name, &args));
            }
        }
        _ if !calls.is_empty() => {
            return Err(ApiError::invalid(
                format!("messages[{i}].tool_calls"),
                "only assistant messages carry tool_calls",
            ));
        }
        Role::Tool if m.tool_call_id.is_none() => {
            return Err(ApiError::MissingField {
                param: format!("messages[{i}].tool_call_id"),
            });
        }
        Role::User | Role::Tool if m.content.is_none() => {
            return Err(ApiError::MissingField {
                param: format!("messages[{i}].content"),
            });
        }
        _ => {}
    }
    // Templates know `system`; `developer` is OpenAI's newer name for the same thing.
    let role = match m.role {
        Role::Developer => "system",
        r => r.as_str(),
    };
    Ok(ChatMessage {
        role: role.to_owned(),
        content,
    })
}

fn prepend_system(messages: &mut Vec<ChatMessage>, text: String) {
    match messages.first_mut() {
        Some(first) if first.role == "system" => {
            first.content = format!("{text}\n\n{}", first.content);
        }
        _ => messages.insert(
            0,
            ChatMessage {
                role: "system".to_owned(),
                content: text,
            },
        ),
    }
}

fn max_tokens(given: Option<u32>, info: &ModelInfo, default: Option<u32>) -> Result<u32, ApiError> {
    match given {
        Some(0) => Err(ApiError::invalid("max_tokens", "must be at least 1")),
        // More than the context can never be generated; the engine stops at a full context.
        Some(n) => Ok(n.min(info.n_ctx)),
        None => Ok(default.unwrap_or(info.n_ctx)),
    }
}

fn sampling(
    base: &Sampling,
    temp: Option<f32>,
    top_p: Option<f32>,
    seed: Option<i64>,
) -> Result<Sampling, ApiError> {
    let mut s = base.clone();
    if let Some(t) = temp {
        if !(0.0..=2.0).contains(&t) {
            return Err(ApiError::invalid(
                "temperature",
                format!("{t} is not in [0, 2]"),
            ));
        }
        s.temperature = t;
    }
    if let Some(p) = top_p {
        if !(p > 0.0 && p <= 1.0) {
            return Err(ApiError::invalid("top_p", format!("{p} is not in (0, 1]")));
        }
        s.top_p = p;
    }
    if let Some(seed) = seed {
        // OpenAI seeds are 64-bit; llama.cpp's are 32-bit. Folding keeps distinct seeds
        // mostly distinct and equal seeds equal, which is all a seed promises.
        s.seed = (seed as u64 ^ (seed as u64 >> 32)) as u32;
    }
    Ok(s)
}

fn stop(stop: Option<&Stop>) -> Result<Vec<String>, ApiError> {
    let list = match stop {
        None => return Ok(Vec::new()),
        Some(Stop::One(s)) => vec![s.clone()],
        Some(Stop::Many(v)) => v.clone(),
    };
    if list.len() > MAX_STOP_STRINGS {
        return Err(ApiError::invalid(
            "stop",
            format!("{} stop strings; at most {MAX_STOP_STRINGS}", list.len()),
        ));
    }
    if list.iter().any(String::is_empty) {
        return Err(ApiError::invalid("stop", "stop strings must not be empty"));
    }
    Ok(list)
}
