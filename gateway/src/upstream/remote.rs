//! One upstream server: what it serves (found by asking it), and one generation on it.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use hyper::Method;
use hyper::body::Incoming;
use models::{
    ChatTemplate, EngineError, GenEvent, GenerateRequest, Generation, GrammarSpec, Progress,
    ProgressGuard, Prompt, StopReason, TemplateSource, TimeoutPhase, Timings, UpstreamError,
    UpstreamFailure,
};
use tokio::sync::mpsc;

use super::http::{self, ConnGuard, DOCUMENT_LIMIT, Target, Timeouts};
use super::sse::{SseEvent, SseReader};
use super::translate::{ChunkError, Translator};
use crate::api::upstream::{
    Props, UpChatRequest, UpCompletionRequest, UpFunction, UpMessage, UpModelList, UpParams,
    UpStreamOptions, UpTokenize, UpTokens, UpTool,
};
use crate::metrics::UpstreamMetrics;

/// Events buffered between an upstream stream and its consumer.
const EVENT_BUFFER: usize = 16;
/// How long the first piece waits for the prompt's token count once it has arrived.
const COUNT_GRACE: Duration = Duration::from_millis(250);

/// How bellows talks to an upstream.
#[derive(Debug)]
pub enum Api {
    /// `/v1/completions` with the prompt rendered here through the upstream's own chat
    /// template (from its `/props`), so bellows' prompts, tool presentation and decoding are
    /// the same as on a local model.
    Completions {
        template: Arc<ChatTemplate>,
        source: TemplateSource,
    },
    /// `/v1/chat/completions` with messages and tools, for servers that do not publish their
    /// template (Ollama, vLLM, hosted APIs).
    Chat,
}

/// What an upstream said about itself.
#[derive(Debug)]
pub struct Found {
    /// The models it lists.
    pub models: Vec<String>,
    /// The model requests name: the configured one, else the first listed.
    pub model: String,
    pub api: Api,
    pub n_ctx: Option<u32>,
    pub n_vocab: Option<u32>,
}

impl Found {
    /// What the log says of it: the model, the endpoint used, the context size.
    fn described(&self) -> (String, &'static str, Option<u32>) {
        let api = match self.api {
            Api::Completions { .. } => "completions",
            Api::Chat => "chat",
        };
        (self.model.clone(), api, self.n_ctx)
    }
}

/// One configured upstream.
#[derive(Debug)]
pub struct Remote {
    /// The URL as configured: the upstream's name in logs, errors and metric labels.
    pub name: String,
    target: Target,
    key: Option<String>,
    model: Option<String>,
    pub timeouts: Timeouts,
    /// Requests sent to it at once, at most.
    pub cap: u32,
    inflight: AtomicU32,
    healthy: AtomicBool,
    found: RwLock<Option<Arc<Found>>>,
    metrics: UpstreamMetrics,
}

/// A place in an upstream's concurrency cap, given back when dropped.
#[derive(Debug)]
pub struct Slot(Arc<Remote>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.inflight.fetch_sub(1, Ordering::AcqRel);
        self.0.metrics.set_inflight(&self.0.name, self.0.inflight());
    }
}

impl Remote {
    pub fn new(
        name: String,
        target: Target,
        key: Option<String>,
        model: Option<String>,
        timeouts: Timeouts,
        cap: u32,
        metrics: UpstreamMetrics,
    ) -> Remote {
        Remote {
            name,
            target,
            key,
            model,
            timeouts,
            cap,
            inflight: AtomicU32::new(0),
            healthy: AtomicBool::new(false),
            found: RwLock::new(None),
            metrics,
        }
    }

    pub fn inflight(&self) -> u32 {
        self.inflight.load(Ordering::Acquire)
    }

    pub fn is_healthy(&self) -> bool {
        self.healthy.load(Ordering::Acquire)
    }

    pub fn set_healthy(&self, yes: bool) {
        let was = self.healthy.swap(yes, Ordering::AcqRel);
        if was != yes {
            if yes {
                tracing::info!(upstream = %self.name, "upstream is healthy");
            } else {
                tracing::warn!(upstream = %self.name, "upstream is unhealthy");
            }
        }
        self.metrics.set_healthy(&self.name, yes);
    }

    /// What discovery found, if it ran.
    pub fn found(&self) -> Option<Arc<Found>> {
        self.found.read().ok().and_then(|f| f.clone())
    }

    /// Takes a place under the cap, if one is free.
    pub fn try_acquire(self: &Arc<Self>) -> Option<Slot> {
        let mut now = self.inflight.load(Ordering::Acquire);
        loop {
            if now >= self.cap {
                return None;
            }
            match self
                .inflight
                .compare_exchange(now, now + 1, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    self.metrics.set_inflight(&self.name, now + 1);
                    return Some(Slot(Arc::clone(self)));
                }
                Err(actual) => now = actual,
            }
        }
    }

    fn error(&self, failure: UpstreamFailure) -> UpstreamError {
        UpstreamError {
            upstream: self.name.clone(),
            failure,
        }
    }

    async fn get_document<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<T, UpstreamFailure> {
        let method = if body.is_some() {
            Method::POST
        } else {
            Method::GET
        };
        let t = self.timeouts;
        let open = http::send(
            &self.target,
            self.key.as_deref(),
            method,
            path,
            body,
            t.connect,
            t.first_byte,
        )
        .await?;
        if !open.response.status().is_success() {
            return Err(http::refused(open, t.idle).await);
        }
        let (_, bytes) = http::read_body(open, DOCUMENT_LIMIT, t.idle).await?;
        serde_json::from_slice(&bytes).map_err(|e| UpstreamFailure::Protocol {
            reason: format!("{path}: {e}"),
        })
    }

    /// Asks the upstream what it serves (`/v1/models`) and whether it publishes its chat
    /// template (`/props`), and remembers the answer. The health check: an upstream that
    /// answers is healthy.
    pub async fn discover(&self) -> Result<Arc<Found>, UpstreamError> {
        let result = self.discover_inner().await;
        match &result {
            Ok(found) => {
                self.set_healthy(true);
                let before = self.found().map(|f| f.described());
                // Told once, and again only when the answer changes (the health check asks
                // every few seconds).
                let now = found.described();
                if before.as_ref() != Some(&now) {
                    let (model, api, n_ctx) = now;
                    tracing::info!(upstream = %self.name, model = %model, api, n_ctx = ?n_ctx, "upstream found");
                }
                if let Ok(mut slot) = self.found.write() {
                    *slot = Some(Arc::clone(found));
                }
            }
            Err(_) => self.set_healthy(false),
        }
        result.map_err(|f| self.error(f))
    }

    async fn discover_inner(&self) -> Result<Arc<Found>, UpstreamFailure> {
        let list: UpModelList = self.get_document("/v1/models", None).await?;
        let models: Vec<String> = list.data.iter().map(|m| m.id.clone()).collect();
        let model = match (&self.model, models.first()) {
            (Some(m), _) => m.clone(),
            (None, Some(m)) => m.clone(),
            (None, None) => {
                return Err(UpstreamFailure::Protocol {
                    reason: "/v1/models lists no model; name one with --upstream-model".into(),
                });
            }
        };
        let listed = list.data.iter().find(|m| m.id == model);
        let meta = listed.and_then(|m| m.meta);
        let mut n_ctx = listed
            .and_then(|m| m.max_model_len)
            .or(meta.and_then(|m| m.n_ctx_train));
        let n_vocab = meta.and_then(|m| m.n_vocab);
        // `/props` is optional: a server without it gets chat completions.
        let props: Option<Props> = match self.get_document("/props", None).await {
            Ok(p) => Some(p),
            Err(UpstreamFailure::Refused { .. } | UpstreamFailure::Protocol { .. }) => None,
            Err(e) => return Err(e),
        };
        if let Some(n) = props
            .as_ref()
            .and_then(|p| p.default_generation_settings)
            .and_then(|g| g.n_ctx)
        {
            n_ctx = Some(n);
        }
        let api = match props {
            Some(Props {
                chat_template: Some(source),
                bos_token,
                eos_token,
                ..
            }) if !source.trim().is_empty() => {
                let source = TemplateSource {
                    source,
                    bos_token: bos_token.unwrap_or_default(),
                    eos_token: eos_token.unwrap_or_default(),
                };
                match ChatTemplate::new(&source.source, &source.bos_token, &source.eos_token) {
                    Ok(t) => Api::Completions {
                        template: Arc::new(t),
                        source,
                    },
                    Err(e) => {
                        tracing::warn!(
                            upstream = %self.name,
                            error = %e,
                            "the upstream's chat template does not compile here; using its chat endpoint"
                        );
                        Api::Chat
                    }
                }
            }
            _ => Api::Chat,
        };
        Ok(Arc::new(Found {
            models,
            model,
            api,
            n_ctx,
            n_vocab,
        }))
    }

    /// Token ids from the upstream's `/tokenize` (llama-server and bellows serve it).
    pub async fn tokenize(&self, text: &str) -> Result<Vec<i32>, UpstreamError> {
        let body = serde_json::to_vec(&UpTokenize { content: text }).unwrap_or_default();
        let tokens: UpTokens = self
            .get_document("/tokenize", Some(body))
            .await
            .map_err(|f| self.error(f))?;
        Ok(tokens.tokens)
    }

    /// Starts `req` on this upstream and waits for its first text: every failure before it
    /// is an `Err` (so the pool can try another upstream before the client saw a byte).
    pub async fn start(
        self: &Arc<Self>,
        req: &GenerateRequest,
        slot: Slot,
    ) -> Result<Generation, EngineError> {
        let found = match self.found() {
            Some(f) => f,
            None => self.discover().await?,
        };
        let (path, body, prompt) = request_body(&found, req).map_err(|f| self.error(f))?;
        let started = Instant::now();
        // The prompt's length, known before the first piece as the trait promises: the
        // upstream's tokenizer counts the text bellows rendered, alongside the generation
        // request so that it adds no latency (a chat-only upstream renders itself: unknown,
        // 0, until its usage arrives with the last chunk).
        let counting = prompt.map(|text| {
            let me = Arc::clone(self);
            tokio::spawn(async move { me.tokenize(&text).await.map(|t| t.len() as u32) })
        });
        let t = self.timeouts;
        let open = http::send(
            &self.target,
            self.key.as_deref(),
            Method::POST,
            path,
            Some(body),
            t.connect,
            t.first_byte,
        )
        .await
        .map_err(|f| self.error(f))?;
        if !open.response.status().is_success() {
            return Err(self.error(http::refused(open, t.idle).await).into());
        }
        let http::Open { response, conn } = open;
        let mut reading = Reading {
            body: response.into_body(),
            sse: SseReader::new(),
            tr: Translator::new(),
            done: false,
        };
        let first_within = t.first_byte.saturating_sub(started.elapsed());
        let first = reading
            .next(first_within, TimeoutPhase::FirstByte)
            .await
            .map_err(|f| self.error(f))?;
        let first_at = Instant::now();
        let prompt_tokens = match counting {
            Some(count) => match tokio::time::timeout(COUNT_GRACE, count).await {
                Ok(Ok(Ok(n))) => n,
                _ => 0,
            },
            None => 0,
        };
        let (tx, rx) = mpsc::channel(EVENT_BUFFER);
        let generation = Generation::new(rx, prompt_tokens, Arc::default());
        let progress = Arc::new(Progress::default());
        let generation = generation.with_progress(Arc::clone(&progress));
        let pump = Pump {
            remote: Arc::clone(self),
            reading,
            tx,
            halt: Arc::clone(&generation.halt),
            cause: Arc::clone(&generation.cause),
            progress: ProgressGuard(progress),
            slot: Some(slot),
            conn: Some(conn),
            started,
            first_at,
            prompt_tokens,
        };
        tokio::spawn(pump.run(first));
        Ok(generation)
    }
}

/// The endpoint and JSON body for `req` on an upstream.
/// The endpoint, the JSON body for `req` on an upstream, and the prompt text when bellows
/// rendered it.
fn request_body(
    found: &Found,
    req: &GenerateRequest,
) -> Result<(&'static str, Vec<u8>, Option<String>), UpstreamFailure> {
    let unsupported = |param, reason: &str| UpstreamFailure::Unsupported {
        param,
        reason: reason.to_owned(),
    };
    if req.logprobs.is_some() {
        return Err(unsupported(
            "logprobs",
            "log probabilities are not forwarded to upstreams",
        ));
    }
    let s = &req.sampling;
    let mut params = UpParams {
        stream: true,
        stream_options: UpStreamOptions {
            include_usage: true,
        },
        max_tokens: req.max_tokens,
        temperature: s.temperature,
        top_p: s.top_p,
        top_k: (s.top_k > 0).then_some(s.top_k),
        min_p: (s.min_p > 0.0).then_some(s.min_p),
        repeat_penalty: (s.repeat_penalty != 1.0).then_some(s.repeat_penalty),
        frequency_penalty: (s.frequency_penalty != 0.0).then_some(s.frequency_penalty),
        presence_penalty: (s.presence_penalty != 0.0).then_some(s.presence_penalty),
        seed: s.seed,
        stop: req.stop.clone(),
        logit_bias: s
            .logit_bias
            .iter()
            .map(|(t, b)| {
                let bias = if b.is_finite() { f64::from(*b) } else { -100.0 };
                (t.to_string(), serde_json::json!(bias))
            })
            .collect(),
        ignore_eos: s.ignore_eos,
        grammar: None,
        json_schema: None,
    };
    match &found.api {
        Api::Completions { template, .. } => {
            match &req.grammar {
                None => {}
                Some(GrammarSpec::Strict { gbnf, root }) if root == "root" => {
                    params.grammar = Some(gbnf.clone());
                }
                Some(GrammarSpec::JsonSchema(schema)) => params.json_schema = Some(schema.clone()),
                Some(_) => {
                    return Err(unsupported(
                        "grammar",
                        "only strict grammars rooted at `root` and JSON schemas are forwarded",
                    ));
                }
            }
            let rendered;
            let prompt = match &req.prompt {
                Prompt::Text(t) => t.as_str(),
                Prompt::Chat { messages, tools } => {
                    rendered = template.render(messages, tools, true).map_err(|e| {
                        UpstreamFailure::Unsupported {
                            param: "messages",
                            reason: format!("the upstream's chat template: {e}"),
                        }
                    })?;
                    rendered.as_str()
                }
            };
            let body = UpCompletionRequest {
                model: &found.model,
                prompt,
                params,
            };
            Ok((
                "/v1/completions",
                serde_json::to_vec(&body).unwrap_or_default(),
                Some(prompt.to_owned()),
            ))
        }
        Api::Chat => {
            let response_format = match &req.grammar {
                None => None,
                Some(GrammarSpec::JsonSchema(schema)) => Some(serde_json::json!({
                    "type": "json_schema",
                    "json_schema": {"name": "response", "schema": schema},
                })),
                // A chat API cannot be held to a grammar, and a plan that relies on one
                // streams call arguments before they validate.
                Some(_) => {
                    return Err(unsupported(
                        "tool_choice",
                        "this upstream has only a chat endpoint, which cannot enforce the \
                         grammar that \"required\" or a named tool needs",
                    ));
                }
            };
            let Prompt::Chat { messages, tools } = &req.prompt else {
                return Err(unsupported(
                    "prompt",
                    "raw-text prompts need an upstream with /v1/completions and /props",
                ));
            };
            let body = UpChatRequest {
                model: &found.model,
                messages: messages
                    .iter()
                    .map(|m| UpMessage {
                        role: &m.role,
                        content: &m.content,
                        tool_call_id: m.tool_call_id.as_deref(),
                        name: m.name.as_deref(),
                    })
                    .collect(),
                tools: tools
                    .iter()
                    .map(|t| UpTool {
                        kind: "function",
                        function: UpFunction {
                            name: &t.name,
                            description: &t.description,
                            parameters: &t.parameters,
                        },
                    })
                    .collect(),
                response_format,
                params,
            };
            Ok((
                "/v1/chat/completions",
                serde_json::to_vec(&body).unwrap_or_default(),
                None,
            ))
        }
    }
}

/// An upstream response stream being read.
#[derive(Debug)]
struct Reading {
    body: Incoming,
    sse: SseReader,
    tr: Translator,
    done: bool,
}

impl Reading {
    /// The next text, or `None` at a proper end of stream. Each read waits at most `within`.
    async fn next(
        &mut self,
        within: Duration,
        phase: TimeoutPhase,
    ) -> Result<Option<String>, UpstreamFailure> {
        loop {
            if self.done {
                let rest = self.tr.end();
                return Ok((!rest.is_empty()).then_some(rest));
            }
            let frame = tokio::time::timeout(within, self.body.frame())
                .await
                .map_err(|_| UpstreamFailure::Timeout {
                    phase,
                    after: within,
                })?;
            let protocol = |reason: String| UpstreamFailure::Protocol { reason };
            let (events, eof) = match frame {
                None => (
                    self.sse.finish().map_err(|e| protocol(e.to_string()))?,
                    true,
                ),
                Some(Err(e)) => return Err(protocol(format!("the stream broke: {e}"))),
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => (
                        self.sse.feed(&data).map_err(|e| protocol(e.to_string()))?,
                        false,
                    ),
                    Err(_) => continue,
                },
            };
            let mut text = String::new();
            for event in events {
                match event {
                    SseEvent::Done => self.done = true,
                    SseEvent::Data(_) if self.done => {}
                    SseEvent::Data(d) => match self.tr.chunk(&d) {
                        Ok(t) => text.push_str(&t),
                        Err(ChunkError::Malformed(m)) => {
                            return Err(protocol(format!("malformed event: {m}")));
                        }
                        Err(ChunkError::Reported(m)) => {
                            return Err(protocol(format!("the upstream reported: {m}")));
                        }
                    },
                }
            }
            if eof && !self.done {
                // Some servers end the stream after the finish reason without `[DONE]`.
                if self.tr.finish.is_none() {
                    return Err(protocol(
                        "the stream ended before the reply finished".to_owned(),
                    ));
                }
                self.done = true;
            }
            if !text.is_empty() {
                return Ok(Some(text));
            }
        }
    }
}

/// Moves one upstream stream into its generation's channel.
#[derive(Debug)]
struct Pump {
    remote: Arc<Remote>,
    reading: Reading,
    tx: mpsc::Sender<GenEvent>,
    halt: Arc<AtomicBool>,
    /// Where a failure's typed cause goes before the `Failed` event.
    cause: Arc<std::sync::OnceLock<UpstreamError>>,
    progress: ProgressGuard,
    // Held until the stream ends: the cap place, and the connection (aborted on drop, which
    // is how a cancelled request reaches the upstream). Both are let go before the last
    // event is sent, so a caller that starts its next request on seeing it finds the place
    // free.
    slot: Option<Slot>,
    conn: Option<ConnGuard>,
    started: Instant,
    first_at: Instant,
    /// The prompt's length as counted before the first piece, until usage says.
    prompt_tokens: u32,
}

impl Pump {
    async fn run(mut self, first: Option<String>) {
        let mut next = first;
        loop {
            let Some(piece) = next.take() else {
                let reason = self.reading.tr.finish.unwrap_or(StopReason::Eog);
                self.release();
                let _ = self.tx.send(self.done(reason)).await;
                self.remote.metrics.outcome(&self.remote.name, "ok");
                return;
            };
            self.progress.set_generated(self.reading.tr.pieces);
            let event = GenEvent::Text {
                piece,
                tokens: Vec::new(),
                logprobs: Vec::new(),
            };
            if self.tx.send(event).await.is_err() {
                self.remote.metrics.outcome(&self.remote.name, "cancelled");
                return;
            }
            if self.halt.load(Ordering::Relaxed) {
                // Dropping the connection stops the upstream; the stream still ends as a stop.
                self.release();
                let _ = self.tx.send(self.done(StopReason::Stop)).await;
                self.remote.metrics.outcome(&self.remote.name, "ok");
                return;
            }
            let idle = self.remote.timeouts.idle;
            let read = tokio::select! {
                () = self.tx.closed() => {
                    self.remote.metrics.outcome(&self.remote.name, "cancelled");
                    return;
                }
                r = self.reading.next(idle, TimeoutPhase::Idle) => r,
            };
            match read {
                Ok(n) => next = n,
                Err(failure) => {
                    let error = UpstreamError {
                        upstream: self.remote.name.clone(),
                        failure,
                    };
                    tracing::warn!(error = %error, "upstream stream failed");
                    self.remote
                        .metrics
                        .outcome(&self.remote.name, outcome_label(&error.failure));
                    let timings = self.timings();
                    self.release();
                    let _ = self.cause.set(error.clone());
                    let _ = self
                        .tx
                        .send(GenEvent::Failed {
                            error: error.to_string(),
                            timings,
                        })
                        .await;
                    return;
                }
            }
        }
    }

    /// Closes the connection and gives the cap place back.
    fn release(&mut self) {
        self.conn.take();
        self.slot.take();
    }

    fn timings(&self) -> Timings {
        let usage = self.reading.tr.usage;
        Timings {
            prompt_tokens: usage.map_or(self.prompt_tokens, |u| u.prompt_tokens),
            cached_tokens: usage
                .and_then(|u| u.prompt_tokens_details)
                .map_or(0, |d| d.cached_tokens),
            generated_tokens: usage.map_or(self.reading.tr.pieces, |u| u.completion_tokens),
            prompt_eval: Duration::ZERO,
            time_to_first_token: self.first_at.duration_since(self.started),
            generation: self.first_at.elapsed(),
            ..Timings::default()
        }
    }

    fn done(&self, reason: StopReason) -> GenEvent {
        let timings = self.timings();
        self.progress.set_generated(timings.generated_tokens);
        self.progress.set_cached(timings.cached_tokens);
        GenEvent::Done { reason, timings }
    }
}

/// The metric label of a failure: a fixed set.
pub fn outcome_label(f: &UpstreamFailure) -> &'static str {
    match f {
        UpstreamFailure::Connect { .. } => "connect",
        UpstreamFailure::Refused { .. } => "refused",
        UpstreamFailure::Timeout { .. } => "timeout",
        UpstreamFailure::Protocol { .. } => "protocol",
        UpstreamFailure::Unsupported { .. } => "unsupported",
    }
}
