//! `POST /v1/chat/completions`.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use hyper::{Response, StatusCode};

use crate::api::request::ChatCompletionRequest;
use crate::api::response::{
    AssistantMessage, ChatChoice, ChatCompletion, ChatLogprobs, FailureExt, FunctionCall,
    MessageExt, TokenLogprobOut, ToolCall, ToolCallExt,
};
use crate::body::{self, Body};
use crate::error::ApiError;
use crate::reply::{Inflight, Out, Step, Turn};
use crate::sse::ChatChunks;
use crate::state::{AppState, unix_now};
use crate::{tools, validate};
use models::Prompt;

pub async fn handle(state: &Arc<AppState>, body: Bytes) -> Result<Response<Body>, ApiError> {
    let raw: ChatCompletionRequest = validate::parse(&body)?;
    let info = state.engine.info();
    let mut valid = validate::chat(raw, info, &state.defaults)?;
    if let Prompt::Chat { messages, tools } = &mut valid.generate.prompt {
        tools::fit_to_template(
            messages,
            tools,
            state.engine.renders_tools(),
            state.defaults.tools_presentation,
        );
    }
    // Any model name is served: the answer carries the name the client used.
    let model = valid.model.take().unwrap_or_else(|| info.id.clone());
    let started = Instant::now();
    let mut inflight = Inflight::queued(&state.metrics);
    let generation = match state.engine.generate(valid.generate).await {
        Ok(g) => g,
        Err(e) => {
            inflight.settle();
            return Err(ApiError::from_engine(e, valid.max_tokens_param));
        }
    };
    let turn = Turn::new(
        generation,
        valid.tools,
        &state.metrics,
        inflight,
        state.ids.clone(),
        started,
    );
    let id = state.ids.response_id("chatcmpl");
    let created = unix_now();
    if valid.stream {
        let framing = ChatChunks {
            id,
            created,
            model,
            include_usage: valid.include_usage,
        };
        return Ok(super::stream::respond(state, turn, framing));
    }
    let completion = collect(turn, id, created, model, valid.logprobs).await?;
    Ok(body::json(StatusCode::OK, &completion))
}

/// A call being assembled for a non-streamed answer.
#[derive(Debug)]
struct Pending {
    index: u32,
    id: String,
    name: String,
    arguments: String,
    ext: Option<ToolCallExt>,
    done: bool,
}

async fn collect(
    mut turn: Turn,
    id: String,
    created: u64,
    model: String,
    logprobs: bool,
) -> Result<ChatCompletion, ApiError> {
    let mut content = String::new();
    let mut reasoning = String::new();
    let mut token_logprobs = Vec::new();
    let mut calls: Vec<Pending> = Vec::new();
    let mut failures = Vec::new();
    let finish = loop {
        match turn.next().await? {
            Some(Step::Out(outs)) => {
                for o in outs {
                    match o {
                        Out::Content(t) => content.push_str(&t),
                        Out::Reasoning(t) => reasoning.push_str(&t),
                        Out::Logprobs(entries) => {
                            token_logprobs.extend(entries.iter().map(TokenLogprobOut::from_engine))
                        }
                        Out::CallStart { index, id, name } => calls.push(Pending {
                            index,
                            id,
                            name,
                            arguments: String::new(),
                            ext: None,
                            done: false,
                        }),
                        Out::CallArgs { index, fragment } => {
                            if let Some(c) = calls.iter_mut().find(|c| c.index == index) {
                                c.arguments.push_str(&fragment);
                            }
                        }
                        Out::CallDone { index, ext } => {
                            if let Some(c) = calls.iter_mut().find(|c| c.index == index) {
                                c.done = true;
                                c.ext = ext;
                            }
                        }
                        Out::CallFailed { index, kind } => {
                            failures.push(FailureExt { index, kind });
                        }
                    }
                }
            }
            Some(Step::Finished(f)) => break f,
            None => return Err(ApiError::Engine("the reply ended without finishing".into())),
        }
    };
    // A call that failed after its name was streamed is dropped: its raw text is in `content`.
    let tool_calls: Vec<ToolCall> = calls
        .into_iter()
        .filter(|c| c.done)
        .map(|c| ToolCall {
            id: c.id,
            kind: "function",
            function: FunctionCall {
                name: c.name,
                arguments: c.arguments,
            },
            bellows: c.ext,
        })
        .collect();
    let content = if tool_calls.is_empty() || !content.trim().is_empty() {
        Some(content)
    } else {
        None
    };
    Ok(ChatCompletion {
        id,
        object: "chat.completion",
        created,
        model,
        choices: vec![ChatChoice {
            index: 0,
            message: AssistantMessage {
                role: "assistant",
                content,
                reasoning_content: (!reasoning.is_empty()).then_some(reasoning),
                tool_calls,
                refusal: None,
                bellows: (!failures.is_empty()).then_some(MessageExt { failures }),
            },
            finish_reason: finish.reason,
            logprobs: logprobs.then_some(ChatLogprobs {
                content: token_logprobs,
            }),
        }],
        usage: finish.usage,
    })
}
