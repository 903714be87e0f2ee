//! [`ScriptedEngine`]: replays given text in given chunks. Gateway and harness tests use it
//! to exercise everything above the engine without a GGUF.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use crate::engine::{
    BoxFuture, ChatMessage, Engine, EngineError, GenEvent, GenerateRequest, Generation, ModelInfo,
    Prompt, StopReason, Timings, ToolSpec,
};

/// One scripted reply: the pieces to stream, and the reason to end with.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    pub pieces: Vec<String>,
    pub reason: StopReason,
    /// Delay before each piece, so tests can observe streaming and cancellation.
    pub delay: Duration,
    /// When set, the stream ends with [`GenEvent::Failed`] carrying this error after the last
    /// piece, as a llama.cpp decode error would end it, instead of [`GenEvent::Done`] (a halt
    /// or `max_tokens` that ends the stream earlier still ends it with `Done`).
    pub fail: Option<String>,
}

impl Script {
    /// `text` split into chunks of at most `chunk` bytes (on char boundaries).
    pub fn chunked(text: &str, chunk: usize) -> Script {
        let mut pieces = Vec::new();
        let mut start = 0;
        while start < text.len() {
            let mut end = (start + chunk.max(1)).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            pieces.push(text[start..end].to_owned());
            start = end;
        }
        Script {
            pieces,
            reason: StopReason::Eog,
            delay: Duration::ZERO,
            fail: None,
        }
    }

    /// `text` in chunks of at most `chunk` bytes, then an engine failure with `error`.
    pub fn failing(text: &str, chunk: usize, error: &str) -> Script {
        Script {
            fail: Some(error.to_owned()),
            ..Script::chunked(text, chunk)
        }
    }
}

/// Picks a reply from the request itself (its prompt, grammar, sampling), for tests where
/// what the engine says must depend on how it was asked.
pub type Responder = Box<dyn Fn(&GenerateRequest) -> Script + Send + Sync>;

/// An engine whose replies are given in advance. Requests take scripts in FIFO order; when
/// none is left, the responder (if any) answers, else the `fallback` script is replayed. Prompts are "tokenized" one token per
/// whitespace-separated word, which is enough for limits and usage accounting.
pub struct ScriptedEngine {
    info: ModelInfo,
    renders_tools: bool,
    queue: Mutex<VecDeque<Script>>,
    fallback: Script,
    responder: Option<Responder>,
    /// Requests seen, for assertions.
    pub seen: Mutex<Vec<GenerateRequest>>,
}

impl ScriptedEngine {
    pub fn new(id: &str, fallback: Script) -> ScriptedEngine {
        ScriptedEngine {
            info: ModelInfo {
                id: id.to_owned(),
                n_ctx_train: 8192,
                n_ctx: 2048,
                n_ctx_total: 2048 * 4,
                n_vocab: 32000,
                slots: 4,
                profile: "scripted".to_owned(),
            },
            renders_tools: true,
            queue: Mutex::new(VecDeque::new()),
            fallback,
            responder: None,
            seen: Mutex::new(Vec::new()),
        }
    }

    /// Sets the context size reported and enforced.
    pub fn with_ctx(mut self, n_ctx: u32) -> ScriptedEngine {
        self.info.n_ctx = n_ctx;
        self.info.n_ctx_total = n_ctx.saturating_mul(self.info.slots);
        self
    }

    /// Reports `slots` parallel slots (4 by default); callers that run one request per slot
    /// at once (side-by-side agent attempts) read it.
    pub fn with_slots(mut self, slots: u32) -> ScriptedEngine {
        self.info.slots = slots.max(1);
        self.info.n_ctx_total = self.info.n_ctx.saturating_mul(self.info.slots);
        self
    }

    /// Answers every request the queue does not with `responder(request)`.
    pub fn responding(mut self, responder: Responder) -> ScriptedEngine {
        self.responder = Some(responder);
        self
    }

    /// Makes the engine's "chat template" ignore tools, as many small models' templates do.
    pub fn ignoring_tools(mut self) -> ScriptedEngine {
        self.renders_tools = false;
        self
    }

    /// Queues a script for the next request.
    pub fn push(&self, script: Script) {
        self.queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back(script);
    }

    fn prompt_text(&self, prompt: &Prompt) -> Result<String, EngineError> {
        match prompt {
            Prompt::Text(t) => Ok(t.clone()),
            Prompt::Chat { messages, tools } => self.render_chat(messages, tools),
        }
    }
}

impl std::fmt::Debug for ScriptedEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedEngine")
            .field("info", &self.info)
            .field("renders_tools", &self.renders_tools)
            .field("fallback", &self.fallback)
            .field("responder", &self.responder.is_some())
            .finish_non_exhaustive()
    }
}

impl Engine for ScriptedEngine {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn generate(&self, req: GenerateRequest) -> BoxFuture<'_, Result<Generation, EngineError>> {
        Box::pin(async move {
            let admitted = Instant::now();
            let text = self.prompt_text(&req.prompt)?;
            let prompt_tokens = self.tokenize(&text)?.len() as u32;
            if prompt_tokens >= self.info.n_ctx {
                return Err(EngineError::PromptTooLong {
                    prompt_tokens,
                    n_ctx: self.info.n_ctx,
                });
            }
            if let Some(max_tokens) = req.max_tokens
                && prompt_tokens.saturating_add(max_tokens) > self.info.n_ctx
            {
                return Err(EngineError::ContextExceeded {
                    prompt_tokens,
                    max_tokens,
                    n_ctx: self.info.n_ctx,
                });
            }
            let script = self
                .queue
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .pop_front()
                .unwrap_or_else(|| match &self.responder {
                    Some(respond) => respond(&req),
                    None => self.fallback.clone(),
                });
            self.seen
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(req.clone());
            let (tx, rx) = mpsc::channel(4);
            let halt = Arc::new(AtomicBool::new(false));
            let halted = Arc::clone(&halt);
            let progress = Arc::new(crate::engine::Progress::default());
            let counts = crate::engine::ProgressGuard(Arc::clone(&progress));
            tokio::spawn(async move {
                let mut timings = Timings {
                    prompt_tokens,
                    ..Timings::default()
                };
                let mut reason = script.reason;
                let mut fail = script.fail;
                for (i, piece) in script.pieces.into_iter().enumerate() {
                    if halted.load(Ordering::Relaxed) {
                        reason = StopReason::Stop;
                        fail = None;
                        break;
                    }
                    if req.max_tokens.is_some_and(|m| i as u32 >= m) {
                        reason = StopReason::MaxTokens;
                        fail = None;
                        break;
                    }
                    if !script.delay.is_zero() {
                        tokio::time::sleep(script.delay).await;
                    }
                    if i == 0 {
                        timings.time_to_first_token = admitted.elapsed();
                    }
                    timings.generated_tokens += 1;
                    counts.set_generated(timings.generated_tokens);
                    // A script is certain of its next piece: probability 1 (log 0), and the
                    // piece is the only alternative worth listing.
                    let logprobs = match req.logprobs {
                        None => Vec::new(),
                        Some(n) => vec![crate::engine::TokenLogprob {
                            token: i as i32,
                            bytes: piece.as_bytes().to_vec(),
                            logprob: 0.0,
                            top: (n > 0)
                                .then(|| crate::engine::TopLogprob {
                                    token: i as i32,
                                    bytes: piece.as_bytes().to_vec(),
                                    logprob: 0.0,
                                })
                                .into_iter()
                                .collect(),
                        }],
                    };
                    let ev = GenEvent::Text {
                        piece,
                        tokens: vec![i as i32],
                        logprobs,
                    };
                    if tx.send(ev).await.is_err() {
                        return; // The consumer dropped the generation: cancelled.
                    }
                }
                timings.generation = admitted.elapsed();
                let last = match fail {
                    Some(error) => GenEvent::Failed { error, timings },
                    None => GenEvent::Done { reason, timings },
                };
                let _ = tx.send(last).await;
            });
            Ok(Generation::new(rx, prompt_tokens, halt).with_progress(progress))
        })
    }

    fn tokenize(&self, text: &str) -> Result<Vec<i32>, EngineError> {
        Ok(text
            .split_whitespace()
            .enumerate()
            .map(|(i, _)| i as i32)
            .collect())
    }

    fn renders_tools(&self) -> bool {
        self.renders_tools
    }

    fn render_chat(
        &self,
        messages: &[ChatMessage],
        tools: &[ToolSpec],
    ) -> Result<String, EngineError> {
        let mut out = String::new();
        for t in tools.iter().filter(|_| self.renders_tools) {
            out.push_str(&format!("<|tool|>{} {}\n", t.name, t.parameters));
        }
        for m in messages {
            let from = match (&m.name, &m.tool_call_id) {
                (None, None) => String::new(),
                (name, id) => format!(
                    " [{}{}]",
                    name.as_deref().unwrap_or(""),
                    id.as_deref().map(|i| format!(" {i}")).unwrap_or_default()
                ),
            };
            out.push_str(&format!(
                "<|im_start|>{}{from}\n{}<|im_end|>\n",
                m.role, m.content
            ));
        }
        out.push_str("<|im_start|>assistant\n");
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Sampling;

    fn request(max_tokens: Option<u32>) -> GenerateRequest {
        GenerateRequest {
            prompt: Prompt::Text("hi".to_owned()),
            sampling: Sampling::default(),
            max_tokens,
            stop: Vec::new(),
            grammar: None,
            logprobs: None,
        }
    }

    async fn events(e: &ScriptedEngine, req: GenerateRequest) -> Vec<GenEvent> {
        let mut g = e.generate(req).await.expect("generate");
        let mut out = Vec::new();
        while let Some(ev) = g.next().await {
            out.push(ev);
        }
        out
    }

    #[tokio::test]
    async fn a_failing_script_streams_its_text_then_fails() {
        let e = ScriptedEngine::new("m", Script::chunked("x", 1));
        e.push(Script::failing("abcd", 2, "decode failed"));
        let evs = events(&e, request(None)).await;
        let text: String = evs
            .iter()
            .filter_map(|ev| match ev {
                GenEvent::Text { piece, .. } => Some(piece.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, "abcd");
        match evs.last() {
            Some(GenEvent::Failed { error, timings }) => {
                assert_eq!(error, "decode failed");
                assert_eq!(timings.generated_tokens, 2);
            }
            other => panic!("expected Failed last, got {other:?}"),
        }
        assert!(!evs.iter().any(|ev| matches!(ev, GenEvent::Done { .. })));

        // Cut short by max_tokens, it never reaches the failure.
        e.push(Script::failing("abcd", 2, "decode failed"));
        let evs = events(&e, request(Some(1))).await;
        assert!(matches!(
            evs.last(),
            Some(GenEvent::Done {
                reason: StopReason::MaxTokens,
                ..
            })
        ));
    }

    #[tokio::test]
    async fn scripted_logprobs_are_certain_and_one_per_piece() {
        let e = ScriptedEngine::new("m", Script::chunked("abc", 1));
        let mut req = request(None);
        req.logprobs = Some(2);
        for ev in events(&e, req).await {
            if let GenEvent::Text {
                piece,
                tokens,
                logprobs,
            } = ev
            {
                assert_eq!(logprobs.len(), tokens.len());
                assert_eq!(logprobs[0].bytes, piece.as_bytes());
                assert_eq!(logprobs[0].logprob, 0.0);
                assert_eq!(logprobs[0].top.len(), 1);
                assert_eq!(logprobs[0].top[0].token, tokens[0]);
            }
        }
        for ev in events(&e, request(None)).await {
            if let GenEvent::Text { logprobs, .. } = ev {
                assert!(logprobs.is_empty());
            }
        }
    }
}
