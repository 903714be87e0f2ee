//! Server-sent event framing of OpenAI streams: `data: <json>\n\n` per chunk, then
//! `data: [DONE]\n\n`. An error after the stream started is one `data: {"error": …}` event.

use bytes::Bytes;

use crate::api::response::{
    ChatCompletionChunk, ChatLogprobs, ChunkChoice, Completion, CompletionChoice,
    CompletionLogprobs, Delta, FailureExt, FunctionDelta, MessageExt, TokenLogprobOut,
    ToolCallDelta, Usage,
};
use crate::error::ApiError;
use crate::reply::{Finish, Out};

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
    fn chunk(&self, delta: Delta, finish: Option<Finish>) -> Bytes {
        self.chunk_with(delta, finish, None)
    }

    fn chunk_with(
        &self,
        delta: Delta,
        finish: Option<Finish>,
        logprobs: Option<ChatLogprobs>,
    ) -> Bytes {
        event(&ChatCompletionChunk {
            id: self.id.clone(),
            object: "chat.completion.chunk",
            created: self.created,
            model: self.model.clone(),
            choices: vec![ChunkChoice {
                index: 0,
                delta,
                finish_reason: finish.map(|f| f.reason),
                logprobs,
            }],
            usage: self.include_usage.then_some(None),
        })
    }

    /// The first event: the assistant role.
    pub fn head(&self) -> Bytes {
        self.chunk(
            Delta {
                role: Some("assistant"),
                content: Some(String::new()),
                ..Delta::default()
            },
            None,
        )
    }

    /// One event per output.
    pub fn outs(&self, outs: Vec<Out>) -> Vec<Bytes> {
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
                Some(self.chunk(delta, None))
            })
            .collect()
    }

    /// The closing events: finish reason, usage when asked for, `[DONE]`.
    pub fn tail(&self, finish: Finish) -> Vec<Bytes> {
        let mut v = vec![self.chunk(Delta::default(), Some(finish))];
        if self.include_usage {
            v.push(event(&ChatCompletionChunk {
                id: self.id.clone(),
                object: "chat.completion.chunk",
                created: self.created,
                model: self.model.clone(),
                choices: Vec::new(),
                usage: Some(Some(finish.usage)),
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
    fn chunk(&self, text: String, finish: Option<Finish>, usage: Option<Usage>) -> Bytes {
        self.chunk_with(text, finish, usage, None)
    }

    fn chunk_with(
        &self,
        text: String,
        finish: Option<Finish>,
        usage: Option<Usage>,
        logprobs: Option<CompletionLogprobs>,
    ) -> Bytes {
        event(&Completion {
            id: self.id.clone(),
            object: "text_completion",
            created: self.created,
            model: self.model.clone(),
            choices: vec![CompletionChoice {
                index: 0,
                text,
                logprobs,
                finish_reason: finish.map(|f| f.reason),
            }],
            usage,
        })
    }

    pub fn outs(&self, outs: Vec<Out>) -> Vec<Bytes> {
        outs.into_iter()
            .filter_map(|o| match o {
                Out::Content(text) => Some(self.chunk(text, None, None)),
                Out::Logprobs(entries) => {
                    let mut lp = CompletionLogprobs::default();
                    // Offsets restart per chunk: each chunk describes its own tokens.
                    lp.extend(&entries, &mut 0);
                    Some(self.chunk_with(String::new(), None, None, Some(lp)))
                }
                _ => None,
            })
            .collect()
    }

    pub fn tail(&self, finish: Finish) -> Vec<Bytes> {
        let usage = self.include_usage.then_some(finish.usage);
        vec![
            self.chunk(String::new(), Some(finish), usage),
            Bytes::from_static(DONE),
        ]
    }
}

/// A way of framing one reply's outputs, so one streaming loop serves both endpoints.
pub trait Framing: Send + 'static {
    /// Events before any output.
    fn head(&self) -> Option<Bytes>;
    fn frame(&self, outs: Vec<Out>) -> Vec<Bytes>;
    fn close(&self, finish: Finish) -> Vec<Bytes>;
}

impl Framing for ChatChunks {
    fn head(&self) -> Option<Bytes> {
        Some(ChatChunks::head(self))
    }
    fn frame(&self, outs: Vec<Out>) -> Vec<Bytes> {
        self.outs(outs)
    }
    fn close(&self, finish: Finish) -> Vec<Bytes> {
        self.tail(finish)
    }
}

impl Framing for CompletionChunks {
    fn head(&self) -> Option<Bytes> {
        None
    }
    fn frame(&self, outs: Vec<Out>) -> Vec<Bytes> {
        self.outs(outs)
    }
    fn close(&self, finish: Finish) -> Vec<Bytes> {
        self.tail(finish)
    }
}
