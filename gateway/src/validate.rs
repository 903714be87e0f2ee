//! Raw request → validated request: every rule about what a request may ask for lives here.
//!
//! The engine only ever sees a [`ValidChat`] or [`ValidCompletion`]; each rejection is an
//! [`ApiError`] that names the parameter at fault.

use models::{
    ChatMessage, GenerateRequest, GrammarSpec, MAX_TOP_LOGPROBS, ModelInfo, Prompt, Sampling,
};
use serde::de::DeserializeOwned;

use crate::api::request::{
    ChatCompletionRequest, CompletionPrompt, CompletionRequest, Message, MessageContent,
    ResponseFormat, Role, Stop, StreamOptions,
};
use crate::defaults::Defaults;
use crate::error::ApiError;
use crate::tools::{self, ToolPlan};

/// At most this many stop strings, so matching stays cheap.
pub const MAX_STOP_STRINGS: usize = 16;
/// `/v1/completions` generates this many tokens when `max_tokens` is absent (OpenAI's default).
pub const COMPLETIONS_DEFAULT_MAX_TOKENS: u32 = 16;
/// The most choices one request may ask for (`n`). Each choice is a generation of its own
/// (a slot, or a place in the queue, while it runs), so the cap bounds what one request can
/// take from everyone else; OpenAI's own limit is higher, but a local server with a few slots
/// gains nothing from more.
pub const MAX_N: u32 = 16;

/// A chat request the engine can run.
#[derive(Debug)]
pub struct ValidChat {
    pub generate: GenerateRequest,
    /// How many choices to generate (`n`), 1 to [`MAX_N`].
    pub n: u32,
    pub stream: bool,
    pub include_usage: bool,
    /// How the reply is decoded into tool calls (or not).
    pub tools: ToolPlan,
    /// The model name to answer with: the one the client sent, else the model's id.
    pub model: Option<String>,
    /// The parameter that set `max_tokens`, for errors that concern it.
    pub max_tokens_param: &'static str,
    /// Whether the client asked for log probabilities.
    pub logprobs: bool,
}

/// A text completion request the engine can run.
#[derive(Debug)]
pub struct ValidCompletion {
    pub generate: GenerateRequest,
    /// How many choices to generate (`n`), 1 to [`MAX_N`].
    pub n: u32,
    pub stream: bool,
    pub include_usage: bool,
    pub model: Option<String>,
    pub logprobs: bool,
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
    let n = check_n(raw.n)?;
    let logprobs = chat_logprobs(raw.logprobs, raw.top_logprobs)?;
    let stream = raw.stream.unwrap_or(false);
    let include_usage = stream_usage(stream, raw.stream_options.as_ref())?;
    if raw.messages.is_empty() {
        return Err(ApiError::invalid(
            "messages",
            "at least one message is required",
        ));
    }
    let plan = tools::plan(
        raw.tools.as_deref(),
        raw.tool_choice.as_ref(),
        raw.parallel_tool_calls,
        raw.bellows.as_ref(),
        defaults,
    )?
    .with_reasoning(defaults);
    let mut messages = Vec::with_capacity(raw.messages.len() + 1);
    for (i, m) in raw.messages.iter().enumerate() {
        messages.push(message(i, m, &plan)?);
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
    if grammar_from_format.is_some() && plan.decodes() {
        return Err(ApiError::unsupported(
            "response_format",
            "a JSON response_format cannot be combined with tools unless tool_choice is \"none\"",
        ));
    }
    let raw_grammar = gbnf_field(raw.grammar.as_deref())?;
    if raw_grammar.is_some() && (plan.decodes() || grammar_from_format.is_some()) {
        return Err(ApiError::unsupported(
            "grammar",
            "a GBNF grammar cannot be combined with tools or a JSON response_format",
        ));
    }
    if let Some(system) = plan.system_prompt() {
        prepend_system(&mut messages, system);
    }
    let (max_tokens_param, max_tokens) = match (raw.max_completion_tokens, raw.max_tokens) {
        (Some(n), _) => ("max_completion_tokens", Some(n)),
        (None, n) => ("max_tokens", n),
    };
    if max_tokens == Some(0) {
        return Err(ApiError::invalid(max_tokens_param, "must be at least 1"));
    }
    let generate = GenerateRequest {
        prompt: Prompt::Chat {
            messages,
            tools: plan.template_tools(),
        },
        sampling: sampling(
            &defaults.sampling,
            &Knobs {
                temperature: raw.temperature,
                top_p: raw.top_p,
                seed: raw.seed,
                frequency_penalty: raw.frequency_penalty,
                presence_penalty: raw.presence_penalty,
                logit_bias: raw.logit_bias.as_ref(),
                ignore_eos: raw.ignore_eos,
                dry_multiplier: raw.dry_multiplier,
                dry_base: raw.dry_base,
                dry_allowed_length: raw.dry_allowed_length,
                dry_penalty_last_n: raw.dry_penalty_last_n,
                dry_sequence_breakers: raw.dry_sequence_breakers.as_deref(),
            },
            info,
        )?,
        max_tokens,
        stop: stop(raw.stop.as_ref())?,
        grammar: raw_grammar
            .or(grammar_from_format)
            .or_else(|| plan.grammar()),
        logprobs,
    };
    Ok(ValidChat {
        generate,
        n,
        stream,
        include_usage,
        tools: plan,
        model: raw.model,
        max_tokens_param,
        logprobs: logprobs.is_some(),
    })
}

/// Checks a text completion request and turns it into an engine request.
pub fn completion(
    raw: CompletionRequest,
    info: &ModelInfo,
    defaults: &Defaults,
) -> Result<ValidCompletion, ApiError> {
    let n = check_n(raw.n)?;
    match raw.best_of {
        None => {}
        Some(b) if b != 1 => {
            return Err(ApiError::unsupported(
                "best_of",
                "only best_of = 1 is served",
            ));
        }
        // OpenAI's rule: the `n` returned are picked among `best_of` candidates, so fewer
        // candidates than choices is a contradiction, not a request to guess at.
        Some(b) if b < n => {
            return Err(ApiError::invalid(
                "best_of",
                format!(
                    "best_of = {b} is less than n = {n}; the n choices are picked among \
                     best_of candidates (omit best_of to get n choices)"
                ),
            ));
        }
        Some(_) => {}
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
    let logprobs = match raw.logprobs {
        None => None,
        Some(n) if n <= MAX_TOP_LOGPROBS => Some(n),
        Some(n) => {
            return Err(ApiError::invalid(
                "logprobs",
                format!("{n} is more than the {MAX_TOP_LOGPROBS} alternatives served"),
            ));
        }
    };
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
    let max_tokens = match raw.max_tokens {
        Some(0) => return Err(ApiError::invalid("max_tokens", "must be at least 1")),
        Some(n) => n,
        None => COMPLETIONS_DEFAULT_MAX_TOKENS,
    };
    let generate = GenerateRequest {
        prompt: Prompt::Text(prompt),
        sampling: sampling(
            &defaults.sampling,
            &Knobs {
                temperature: raw.temperature,
                top_p: raw.top_p,
                seed: raw.seed,
                frequency_penalty: raw.frequency_penalty,
                presence_penalty: raw.presence_penalty,
                logit_bias: raw.logit_bias.as_ref(),
                ignore_eos: raw.ignore_eos,
                dry_multiplier: raw.dry_multiplier,
                dry_base: raw.dry_base,
                dry_allowed_length: raw.dry_allowed_length,
                dry_penalty_last_n: raw.dry_penalty_last_n,
                dry_sequence_breakers: raw.dry_sequence_breakers.as_deref(),
            },
            info,
        )?,
        max_tokens: Some(max_tokens),
        stop: stop(raw.stop.as_ref())?,
        grammar: completion_grammar(raw.grammar.as_deref(), raw.json_schema.as_ref())?,
        logprobs,
    };
    Ok(ValidCompletion {
        generate,
        n,
        stream,
        include_usage,
        model: raw.model,
        logprobs: logprobs.is_some(),
    })
}

/// Chat's `logprobs: true` with `top_logprobs: n` (OpenAI's rule: `top_logprobs` needs
/// `logprobs`).
fn chat_logprobs(logprobs: Option<bool>, top: Option<u32>) -> Result<Option<u32>, ApiError> {
    match (logprobs.unwrap_or(false), top) {
        (false, None) => Ok(None),
        (false, Some(_)) => Err(ApiError::invalid("top_logprobs", "needs `logprobs: true`")),
        (true, Some(n)) if n > MAX_TOP_LOGPROBS => Err(ApiError::invalid(
            "top_logprobs",
            format!("{n} is more than the {MAX_TOP_LOGPROBS} alternatives served"),
        )),
        (true, n) => Ok(Some(n.unwrap_or(0))),
    }
}

/// A completion's constraint: llama-server's `grammar` (GBNF) or `json_schema`, not both.
fn completion_grammar(
    grammar: Option<&str>,
    schema: Option<&serde_json::Value>,
) -> Result<Option<GrammarSpec>, ApiError> {
    let gbnf = gbnf_field(grammar)?;
    match schema {
        None | Some(serde_json::Value::Null) => Ok(gbnf),
        Some(_) if gbnf.is_some() => Err(ApiError::invalid(
            "json_schema",
            "give `grammar` or `json_schema`, not both",
        )),
        Some(s) if s.is_object() || s.is_boolean() => Ok(Some(GrammarSpec::JsonSchema(s.clone()))),
        Some(_) => Err(ApiError::InvalidSchema(
            "`json_schema` must be a JSON object".into(),
        )),
    }
}

/// llama-server's `grammar` field: GBNF whose start rule is `root`.
fn gbnf_field(grammar: Option<&str>) -> Result<Option<GrammarSpec>, ApiError> {
    match grammar {
        None => Ok(None),
        Some(g) if g.trim().is_empty() => Ok(None),
        Some(g) => Ok(Some(GrammarSpec::Strict {
            gbnf: g.to_owned(),
            root: "root".to_owned(),
        })),
    }
}

/// `n`: how many choices, 1 (the default) to [`MAX_N`]. Every other parameter applies to
/// each choice on its own (tools, logprobs, grammars, stop strings), so none is refused
/// alongside it.
fn check_n(n: Option<u32>) -> Result<u32, ApiError> {
    match n {
        None => Ok(1),
        Some(n @ 1..=MAX_N) => Ok(n),
        Some(n) => Err(ApiError::invalid(
            "n",
            format!("n = {n}; the number of choices must be from 1 to {MAX_N}"),
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

fn message(i: usize, m: &Message, plan: &ToolPlan) -> Result<ChatMessage, ApiError> {
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
                content.push_str(&plan.render_past_call(&c.function.name, &args));
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
    let mut out = ChatMessage::new(role, content);
    if m.role == Role::Tool {
        out.tool_call_id.clone_from(&m.tool_call_id);
        out.name.clone_from(&m.name);
    }
    Ok(out)
}

fn prepend_system(messages: &mut Vec<ChatMessage>, text: String) {
    match messages.first_mut() {
        Some(first) if first.role == "system" => {
            first.content = format!("{text}\n\n{}", first.content);
        }
        _ => messages.insert(0, ChatMessage::new("system".to_owned(), text)),
    }
}

/// The sampling knobs a request may set.
struct Knobs<'a> {
    temperature: Option<f32>,
    top_p: Option<f32>,
    seed: Option<i64>,
    frequency_penalty: Option<f32>,
    presence_penalty: Option<f32>,
    logit_bias: Option<&'a serde_json::Map<String, serde_json::Value>>,
    ignore_eos: Option<bool>,
    dry_multiplier: Option<f32>,
    dry_base: Option<f32>,
    dry_allowed_length: Option<i32>,
    dry_penalty_last_n: Option<i32>,
    dry_sequence_breakers: Option<&'a [String]>,
}

fn sampling(base: &Sampling, k: &Knobs<'_>, info: &ModelInfo) -> Result<Sampling, ApiError> {
    let mut s = base.clone();
    if let Some(t) = k.temperature {
        if !(0.0..=2.0).contains(&t) {
            return Err(ApiError::invalid(
                "temperature",
                format!("{t} is not in [0, 2]"),
            ));
        }
        s.temperature = t;
    }
    if let Some(p) = k.top_p {
        if !(p > 0.0 && p <= 1.0) {
            return Err(ApiError::invalid("top_p", format!("{p} is not in (0, 1]")));
        }
        s.top_p = p;
    }
    for (name, value, slot) in [
        (
            "frequency_penalty",
            k.frequency_penalty,
            &mut s.frequency_penalty,
        ),
        (
            "presence_penalty",
            k.presence_penalty,
            &mut s.presence_penalty,
        ),
    ] {
        if let Some(v) = value {
            if !(-2.0..=2.0).contains(&v) {
                return Err(ApiError::invalid(name, format!("{v} is not in [-2, 2]")));
            }
            *slot = v;
        }
    }
    if let Some(seed) = k.seed {
        // OpenAI seeds are 64-bit; llama.cpp's are 32-bit. Folding keeps distinct seeds
        // mostly distinct and equal seeds equal, which is all a seed promises.
        s.seed = Some((seed as u64 ^ (seed as u64 >> 32)) as u32);
    }
    if let Some(bias) = k.logit_bias {
        s.logit_bias = logit_bias(bias, info.n_vocab)?;
    }
    // Per request, never kept: a request without the field generates as the profile says.
    s.ignore_eos = k.ignore_eos.unwrap_or(false);
    // llama-server's DRY fields, each over the profile's value. The profile's own values were
    // checked when it loaded, so a range error here names a field the request set.
    let d = &mut s.dry;
    d.multiplier = k.dry_multiplier.unwrap_or(d.multiplier);
    d.base = k.dry_base.unwrap_or(d.base);
    d.allowed_length = k.dry_allowed_length.unwrap_or(d.allowed_length);
    d.penalty_last_n = k.dry_penalty_last_n.unwrap_or(d.penalty_last_n);
    if let Some(breakers) = k.dry_sequence_breakers {
        d.sequence_breakers = breakers.to_vec();
    }
    d.check()
        .map_err(|e| ApiError::invalid(e.field, e.message))?;
    Ok(s)
}

/// OpenAI's `logit_bias`: token id (a string) → bias in `[-100, 100]`; -100 bans the token.
fn logit_bias(
    map: &serde_json::Map<String, serde_json::Value>,
    n_vocab: u32,
) -> Result<Vec<(i32, f32)>, ApiError> {
    let mut out = Vec::with_capacity(map.len());
    for (key, value) in map {
        let param = || format!("logit_bias.{key}");
        let token: i32 = key
            .parse()
            .ok()
            .filter(|&t: &i32| t >= 0 && (t as u32) < n_vocab)
            .ok_or_else(|| {
                ApiError::invalid(
                    param(),
                    format!("{key:?} is not a token id of this model (0..{n_vocab})"),
                )
            })?;
        let bias = value
            .as_f64()
            .filter(|b| (-100.0..=100.0).contains(b))
            .ok_or_else(|| {
                ApiError::invalid(param(), format!("{value} is not a number in [-100, 100]"))
            })?;
        let bias = if bias <= -100.0 {
            f32::NEG_INFINITY
        } else {
            bias as f32
        };
        out.push((token, bias));
    }
    Ok(out)
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
