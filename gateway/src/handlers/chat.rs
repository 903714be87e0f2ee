//! `POST /v1/chat/completions`.

use std::sync::Arc;

use bytes::Bytes;
use hyper::{Response, StatusCode};

use crate::api::request::ChatCompletionRequest;
use crate::api::response::{
    AssistantMessage, ChatChoice, ChatCompletion, ChatLogprobs, FailureExt, FunctionCall,
    MessageExt, TokenLogprobOut, ToolCall, ToolCallExt,
};
use crate::body::{self, Body};
use crate::choices::{self, Choices, Tally};
use crate::error::ApiError;
use crate::reply::{Finish, Out, Step};
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
    let admitted = choices::admit(
        state,
        valid.generate,
        valid.n,
        valid.tools,
        valid.max_tokens_param,
    )
    .await?;
    let id = state.ids.response_id("chatcmpl");
    let created = unix_now();
    if valid.stream {
        let framing = ChatChunks {
            id,
            created,
            model,
            include_usage: valid.include_usage,
        };
        return Ok(super::stream::respond(state, admitted, framing));
    }
    let completion = collect(admitted.start(), id, created, model, valid.logprobs).await?;
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

/// One choice's message, as its outputs arrive.
#[derive(Debug, Default)]
struct Message {
    content: String,
    reasoning: String,
    token_logprobs: Vec<TokenLogprobOut>,
    calls: Vec<Pending>,
    failures: Vec<FailureExt>,
    finish: Option<Finish>,
}

impl Message {
    fn push(&mut self, outs: Vec<Out>) {
        for o in outs {
            match o {
                Out::Content(t) => self.content.push_str(&t),
                Out::Reasoning(t) => self.reasoning.push_str(&t),
                Out::Logprobs(entries) => self
                    .token_logprobs
                    .extend(entries.iter().map(TokenLogprobOut::from_engine)),
                Out::CallStart { index, id, name } => self.calls.push(Pending {
                    index,
                    id,
                    name,
                    arguments: String::new(),
                    ext: None,
                    done: false,
                }),
                Out::CallArgs { index, fragment } => {
                    if let Some(c) = self.calls.iter_mut().find(|c| c.index == index) {
                        c.arguments.push_str(&fragment);
                    }
                }
                Out::CallDone { index, ext } => {
                    if let Some(c) = self.calls.iter_mut().find(|c| c.index == index) {
                        c.done = true;
                        c.ext = ext;
                    }
                }
                Out::CallFailed { index, kind } => {
                    self.failures.push(FailureExt { index, kind });
                }
            }
        }
    }

    fn into_choice(self, index: u32, finish: Finish, logprobs: bool) -> ChatChoice {
        // A call that failed after its name was streamed is dropped: its raw text is in
        // `content`.
        let tool_calls: Vec<ToolCall> = self
            .calls
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
        let content = if tool_calls.is_empty() || !self.content.trim().is_empty() {
            Some(self.content)
        } else {
            None
        };
        let failures = self.failures;
        ChatChoice {
            index,
            message: AssistantMessage {
                role: "assistant",
                content,
                reasoning_content: (!self.reasoning.is_empty()).then_some(self.reasoning),
                tool_calls,
                refusal: None,
                bellows: (!failures.is_empty()).then_some(MessageExt { failures }),
            },
            finish_reason: finish.reason,
            logprobs: logprobs.then_some(ChatLogprobs {
                content: self.token_logprobs,
            }),
        }
    }
}

async fn collect(
    mut choices: Choices,
    id: String,
    created: u64,
    model: String,
    logprobs: bool,
) -> Result<ChatCompletion, ApiError> {
    let mut messages: Vec<Message> = (0..choices.len()).map(|_| Message::default()).collect();
    while let Some((index, step)) = choices.next().await {
        let Some(message) = messages.get_mut(index as usize) else {
            continue;
        };
        match step {
            Ok(Step::Out(outs)) => message.push(outs),
            Ok(Step::Finished(f)) => message.finish = Some(f),
            Err(e) => {
                choices.withdraw();
                return Err(e);
            }
        }
    }
    let mut tally = Tally::new(choices.len());
    let mut usage = None;
    let mut out = Vec::with_capacity(messages.len());
    for (index, m) in (0u32..).zip(messages) {
        let Some(finish) = m.finish else {
            return Err(ApiError::Engine("the reply ended without finishing".into()));
        };
        usage = tally.finished(finish.usage);
        out.push(m.into_choice(index, finish, logprobs));
    }
    Ok(ChatCompletion {
        id,
        object: "chat.completion",
        created,
        model,
        choices: out,
        usage: usage.unwrap_or_default(),
    })
}
