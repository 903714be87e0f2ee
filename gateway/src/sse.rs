//! Server-sent event framing of OpenAI streams: `data: <json>\n\n` per chunk, then
//! `data: [DONE]\n\n`. An error after the stream started is one `data: {"error": …}` event.
//!
//! With several choices (`n`), each chunk carries one choice's `index`; every choice has its
//! own first chunk (chat: the role) and its own finish chunk, and the request's usage (when
//! asked for) and `[DONE]` come once, after the last choice finished.

use bytes::Bytes;

use crate::api::response::{
    ChatCompletionChunk, ChatLogprobs, ChunkChoice, Completion, CompletionChoice,
    CompletionLogprobs, Delta, FailureExt, FinishReason, FunctionDelta, MessageExt,
    TokenLogprobOut, ToolCallDelta, Usage,
};
use crate::error::ApiError;
use crate::reply::Out;

pub const DONE: &[u8] = b"data: [DONE]\n\n";

/// One event carrying a JSON document.
pub fn event<T: serde::Serialize>(value: &T) -> Bytes {
    let mut buf = b"data: ".to_vec();
    // The gateway's own response types always serialize.
    if serde_json::to_writer(&mut buf, value).is_err() {
        buf.truncate(6);
        buf.extend_from_slice(b"{}");
    }
    buf.extend_from_slice(b"\n\n");
    Bytes::from(buf)
}

pub fn error_event(err: &ApiError) -> Bytes {
    event(&err.body())
}

/// Turns reply outputs into chat completion chunks.
#[derive(Debug)]
pub struct ChatChunks {
    pub id: String,
    pub created: u64,
    pub model: String,
    pub include_usage: bool,
}

impl ChatChunks {
    fn chunk(&self, index: u32, delta: Delta, finish: Option<FinishReason>) -> Bytes {
        self.chunk_with(index, delta, finish, None)
    }

    fn chunk_with(
        &self,
        index: u32,
        delta: Delta,
        finish: Option<FinishReason>,
        logprobs: Option<ChatLogprobs>,
    ) -> Bytes {
        event(&ChatCompletionChunk {
            id: self.id.clone(),
            object: "chat.completion.chunk",
            created: self.created,
            model: self.model.clone(),
            choices: vec![ChunkChoice {
                index,
                delta,
                finish_reason: finish,
                logprobs,
            }],
            usage: self.include_usage.then_some(None),
        })
    }

    /// The first event of choice `index`: the assistant role.
    pub fn head(&self, index: u32) -> Bytes {
        self.chunk(
            index,
            Delta {
                role: Some("assistant"),
                content: Some(String::new()),
                ..Delta::default()
            },
            None,
        )
    }

    /// One event per output of choice `index`.
    pub fn outs(&self, index: u32, outs: Vec<Out>) -> Vec<Bytes> {
        // Named apart: the `index` of a call output below is the call's, not the choice's.
        let choice = index;
        outs.into_iter()
            .filter_map(|o| {
                let delta = match o {
                    Out::Content(text) => Delta {
                        content: Some(text),
                        ..Delta::default()
                    },
                    Out::Reasoning(text) => Delta {
                        reasoning_content: Some(text),
                        ..Delta::default()
                    },
                    Out::Logprobs(entries) => {
                        let content = entries.iter().map(TokenLogprobOut::from_engine).collect();
                        return Some(self.chunk_with(
                            choice,
                            Delta::default(),
                            None,
                            Some(ChatLogprobs { content }),
                        ));
                    }
                    Out::CallStart { index, id, name } => call_delta(ToolCallDelta {
                        index,
                        id: Some(id),
                        kind: Some("function"),
                        function: Some(FunctionDelta {
                            name: Some(name),
                            arguments: String::new(),
                        }),
                        bellows: None,
                    }),
                    Out::CallArgs { index, fragment } => call_delta(ToolCallDelta {
                        index,
                        id: None,
                        kind: None,
                        function: Some(FunctionDelta {
                            name: None,
                            arguments: fragment,
                        }),
                        bellows: None,
                    }),
                    Out::CallDone { ext: None, .. } => return None,
                    Out::CallDone {
                        index,
                        ext: Some(ext),
                    } => call_delta(ToolCallDelta {
                        index,
                        id: None,
                        kind: None,
                        function: None,
                        bellows: Some(ext),
                    }),
                    Out::CallFailed { index, kind } => Delta {
                        bellows: Some(MessageExt {
                            failures: vec![FailureExt { index, kind }],
                        }),
                        ..Delta::default()
                    },
                };
                Some(self.chunk(choice, delta, None))
            })
            .collect()
    }

    /// The closing events of choice `index`: its finish reason; then, when `last` holds the
    /// request's usage (this was the last choice to finish), the usage when asked for and
    /// `[DONE]`.
    pub fn tail(&self, index: u32, reason: FinishReason, last: Option<Usage>) -> Vec<Bytes> {
        let mut v = vec![self.chunk(index, Delta::default(), Some(reason))];
        let Some(usage) = last else {
            return v;
        };
        if self.include_usage {
            v.push(event(&ChatCompletionChunk {
                id: self.id.clone(),
                object: "chat.completion.chunk",
                created: self.created,
                model: self.model.clone(),
                choices: Vec::new(),
                usage: Some(Some(usage)),
            }));
        }
        v.push(Bytes::from_static(DONE));
        v
    }
}

fn call_delta(d: ToolCallDelta) -> Delta {
    Delta {
        tool_calls: vec![d],
        ..Delta::default()
    }
}

/// Turns reply outputs into text completion chunks.
#[derive(Debug)]
pub struct CompletionChunks {
    pub id: String,
    pub created: u64,
    pub model: String,
    pub include_usage: bool,
}

impl CompletionChunks {
    fn chunk(
        &self,
        index: u32,
        text: String,
        finish: Option<FinishReason>,
        usage: Option<Usage>,
    ) -> Bytes {
        self.chunk_with(index, text, finish, usage, None)
    }

    fn chunk_with(
        &self,
        index: u32,
        text: String,
        finish: Option<FinishReason>,
        usage: Option<Usage>,
        logprobs: Option<CompletionLogprobs>,
    ) -> Bytes {
        event(&Completion {
            id: self.id.clone(),
            object: "text_completion",
            created: self.created,
            model: self.model.clone(),
            choices: vec![CompletionChoice {
                index,
                text,
                logprobs,
                finish_reason: finish,
            }],
            usage,
        })
    }

    /// One event per output of choice `index` (text and log probabilities only).
    pub fn outs(&self, index: u32, outs: Vec<Out>) -> Vec<Bytes> {
        outs.into_iter()
            .filter_map(|o| match o {
                Out::Content(text) => Some(self.chunk(index, text, None, None)),
                Out::Logprobs(entries) => {
                    let mut lp = CompletionLogprobs::default();
                    // Offsets restart per chunk: each chunk describes its own tokens.
                    lp.extend(&entries, &mut 0);
                    Some(self.chunk_with(index, String::new(), None, None, Some(lp)))
                }
                _ => None,
            })
            .collect()
    }

    /// The closing events of choice `index`: its finish reason; when `last` holds the
    /// request's usage (this was the last choice to finish), that chunk also carries the
    /// usage when asked for, and `[DONE]` follows.
    pub fn tail(&self, index: u32, reason: FinishReason, last: Option<Usage>) -> Vec<Bytes> {
        let usage = last.filter(|_| self.include_usage);
        let mut v = vec![self.chunk(index, String::new(), Some(reason), usage)];
        if last.is_some() {
            v.push(Bytes::from_static(DONE));
        }
        v
    }
}

/// A way of framing a reply's outputs, choice by choice, so one streaming loop serves both
/// endpoints.
pub trait Framing: Send + 'static {
    /// Events before any output of choice `index`.
    fn head(&self, index: u32) -> Option<Bytes>;
    /// Events for outputs of choice `index`.
    fn frame(&self, index: u32, outs: Vec<Out>) -> Vec<Bytes>;
    /// Events that end choice `index`; `last` is the request's usage when it was the last
    /// choice to finish, and then these events end the stream.
    fn close(&self, index: u32, reason: FinishReason, last: Option<Usage>) -> Vec<Bytes>;
}

impl Framing for ChatChunks {
    fn head(&self, index: u32) -> Option<Bytes> {
        Some(ChatChunks::head(self, index))
    }
    fn frame(&self, index: u32, outs: Vec<Out>) -> Vec<Bytes> {
        self.outs(index, outs)
    }
    fn close(&self, index: u32, reason: FinishReason, last: Option<Usage>) -> Vec<Bytes> {
        self.tail(index, reason, last)
    }
}

impl Framing for CompletionChunks {
    fn head(&self, _index: u32) -> Option<Bytes> {
        None
    }
    fn frame(&self, index: u32, outs: Vec<Out>) -> Vec<Bytes> {
        self.outs(index, outs)
    }
    fn close(&self, index: u32, reason: FinishReason, last: Option<Usage>) -> Vec<Bytes> {
        self.tail(index, reason, last)
    }
}
