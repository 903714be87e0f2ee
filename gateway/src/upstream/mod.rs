//! Upstreams: bellows in front of other OpenAI-compatible servers (llama-server, vLLM,
//! Ollama, another bellows), as an [`Engine`] the gateway and the agent use like a local
//! model. The codec, repairs, tool plans and metrics above the engine stay the same.
//!
//! * [`Pool`] is the engine: least-busy routing across the configured upstreams under each
//!   one's concurrency cap, failover to the next upstream for failures that happen before the
//!   first generated text (nothing has reached the client then), and health checks.
//! * [`remote`] is one upstream: discovery (`/v1/models`, `/props`) and one generation —
//!   `/v1/completions` with the prompt rendered here through the upstream's own chat template
//!   when it publishes one, else `/v1/chat/completions` with messages and tools.
//! * [`translate`] turns stream chunks into text (native `tool_calls` become in-band calls the
//!   codec decodes), [`sse`] reads the event stream, [`http`] is the hyper client.

pub mod http;
pub mod remote;
pub mod sse;
pub mod translate;

use std::sync::{Arc, Weak};
use std::time::Duration;

use models::engine::BoxFuture;
use models::template::CHATML_TEMPLATE;
use models::{
    ChatMessage, ChatTemplate, Engine, EngineError, GenerateRequest, Generation, ModelInfo,
    TemplateSource, ToolSpec, UpstreamError,
};

use crate::metrics::UpstreamMetrics;
pub use http::{Target, TargetError, Timeouts};
use remote::{Api, Remote};

/// The context size assumed for an upstream that states none.
pub const DEFAULT_UPSTREAM_CTX: u32 = 4096;
/// Requests sent to one upstream at once, unless configured.
pub const DEFAULT_UPSTREAM_PARALLEL: u32 = 4;

/// One upstream as configured.
#[derive(Debug, Clone, PartialEq)]
pub struct UpstreamConfig {
    /// `http://host:port[/prefix]`; also its name in logs and metric labels.
    pub url: String,
    /// Sent as `Authorization: Bearer KEY`.
    pub key: Option<String>,
    /// The model to request; default: the first the upstream lists.
    pub model: Option<String>,
    /// Requests at once, at most.
    pub parallel: u32,
    pub timeouts: Timeouts,
}

impl UpstreamConfig {
    pub fn new(url: impl Into<String>) -> UpstreamConfig {
        UpstreamConfig {
            url: url.into(),
            key: None,
            model: None,
            parallel: DEFAULT_UPSTREAM_PARALLEL,
            timeouts: Timeouts::default(),
        }
    }
}

/// Why a pool could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    #[error("no upstream configured")]
    Empty,
    #[error("upstream {0}")]
    Target(#[from] TargetError),
    #[error("no upstream answered: {}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    NoneAnswered(Vec<UpstreamError>),
}

/// The upstreams as one engine.
#[derive(Debug)]
pub struct Pool {
    remotes: Vec<Arc<Remote>>,
    info: ModelInfo,
    /// The template conversations are rendered with for callers that ask (`render_chat`):
    /// the first reachable upstream's, else ChatML as an approximation for chat-only
    /// upstreams (which render on their side).
    template: Arc<ChatTemplate>,
    source: Option<TemplateSource>,
    renders_tools: bool,
    metrics: UpstreamMetrics,
}

impl Pool {
    /// Builds the pool and asks every upstream what it serves; at least one must answer. An
    /// upstream that does not is kept, unhealthy, and asked again by the health checks.
    pub async fn connect(
        configs: Vec<UpstreamConfig>,
        metrics: UpstreamMetrics,
    ) -> Result<Pool, PoolError> {
        if configs.is_empty() {
            return Err(PoolError::Empty);
        }
        let mut remotes = Vec::with_capacity(configs.len());
        for c in configs {
            let target = Target::parse(&c.url)?;
            remotes.push(Arc::new(Remote::new(
                c.url,
                target,
                c.key,
                c.model,
                c.timeouts,
                c.parallel.max(1),
                metrics.clone(),
            )));
        }
        let mut errors = Vec::new();
        let mut first = None;
        for r in &remotes {
            match r.discover().await {
                Ok(found) => {
                    if first.is_none() {
                        first = Some(found);
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "upstream did not answer");
                    errors.push(e);
                }
            }
        }
        let Some(found) = first else {
            return Err(PoolError::NoneAnswered(errors));
        };
        let n_ctx = found.n_ctx.unwrap_or(DEFAULT_UPSTREAM_CTX);
        let slots: u32 = remotes.iter().map(|r| r.cap).sum();
        let info = ModelInfo {
            id: found.model.clone(),
            n_ctx_train: n_ctx,
            n_ctx,
            // What each upstream holds is its own business; as many as it serves at once.
            n_ctx_total: n_ctx.saturating_mul(slots.max(1)),
            // Unknown: token ids in `logit_bias` are left for the upstream to check.
            n_vocab: found.n_vocab.unwrap_or(u32::MAX),
            slots,
            profile: "upstream".to_owned(),
        };
        let (template, source, renders_tools) = match &found.api {
            Api::Completions { template, source } => (
                Arc::clone(template),
                Some(source.clone()),
                template.renders_tools(),
            ),
            // The upstream renders the conversation and receives tools natively.
            Api::Chat => (
                Arc::new(
                    ChatTemplate::new(CHATML_TEMPLATE, "", "")
                        .unwrap_or_else(|e| unreachable!("ChatML compiles: {e}")),
                ),
                None,
                true,
            ),
        };
        Ok(Pool {
            remotes,
            info,
            template,
            source,
            renders_tools,
            metrics,
        })
    }

    /// Every model the upstreams list, first upstream first, without repeats.
    pub fn models(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for r in &self.remotes {
            if let Some(f) = r.found() {
                for m in f.models.iter().chain(std::iter::once(&f.model)) {
                    if !out.contains(m) {
                        out.push(m.clone());
                    }
                }
            }
        }
        out
    }

    /// The upstreams' names, as configured.
    pub fn names(&self) -> Vec<String> {
        self.remotes.iter().map(|r| r.name.clone()).collect()
    }

    /// Which upstreams are healthy now, by name.
    pub fn health(&self) -> Vec<(String, bool)> {
        self.remotes
            .iter()
            .map(|r| (r.name.clone(), r.is_healthy()))
            .collect()
    }

    /// Asks every upstream again, every `every`, for as long as the pool lives.
    pub fn spawn_health_checks(self: &Arc<Self>, every: Duration) -> tokio::task::JoinHandle<()> {
        let pool: Weak<Pool> = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                tick.tick().await;
                let Some(pool) = pool.upgrade() else { return };
                pool.check_health().await;
            }
        })
    }

    /// One round of health checks.
    pub async fn check_health(&self) {
        for r in &self.remotes {
            if let Err(e) = r.discover().await {
                tracing::debug!(error = %e, "health check failed");
            }
        }
    }

    /// Upstreams in the order to try: healthy before unhealthy, then the least busy share of
    /// its cap, then configuration order. Full ones are left out.
    fn candidates(&self) -> Vec<&Arc<Remote>> {
        let mut order: Vec<(usize, &Arc<Remote>)> = self
            .remotes
            .iter()
            .enumerate()
            .filter(|(_, r)| r.inflight() < r.cap)
            .collect();
        order.sort_by_key(|(i, r)| {
            (
                !r.is_healthy(),
                u64::from(r.inflight()) * 1_000_000 / u64::from(r.cap),
                *i,
            )
        });
        order.into_iter().map(|(_, r)| r).collect()
    }

    async fn route(&self, req: GenerateRequest) -> Result<Generation, EngineError> {
        let mut last: Option<EngineError> = None;
        let candidates = self.candidates();
        let count = candidates.len();
        for (i, remote) in candidates.into_iter().enumerate() {
            let Some(slot) = remote.try_acquire() else {
                continue;
            };
            match remote.start(&req, slot).await {
                Ok(g) => return Ok(g),
                Err(EngineError::Upstream(e)) => {
                    self.metrics
                        .outcome(&remote.name, remote::outcome_label(&e.failure));
                    if matches!(
                        e.failure,
                        models::UpstreamFailure::Connect { .. }
                            | models::UpstreamFailure::Timeout {
                                phase: models::TimeoutPhase::Connect,
                                ..
                            }
                    ) {
                        remote.set_healthy(false);
                    }
                    if !e.failure.is_retryable() {
                        return Err(e.into());
                    }
                    tracing::warn!(error = %e, "upstream failed before the first token");
                    if i + 1 < count {
                        self.metrics.failover(&remote.name);
                    }
                    last = Some(e.into());
                }
                Err(other) => return Err(other),
            }
        }
        Err(last.unwrap_or(EngineError::QueueFull {
            capacity: self.remotes.iter().map(|r| r.cap as usize).sum(),
        }))
    }
}

impl Engine for Pool {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn generate(&self, req: GenerateRequest) -> BoxFuture<'_, Result<Generation, EngineError>> {
        Box::pin(self.route(req))
    }

    /// The first healthy upstream's `/tokenize`. The trait is synchronous, so the call runs
    /// on a thread of its own with its own runtime and the caller waits (bounded by the
    /// upstream's timeouts).
    fn tokenize(&self, text: &str) -> Result<Vec<i32>, EngineError> {
        let remote = self
            .remotes
            .iter()
            .find(|r| r.is_healthy())
            .unwrap_or(&self.remotes[0]);
        let remote = Arc::clone(remote);
        let text = text.to_owned();
        let worker = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| EngineError::Tokenize(format!("no runtime for /tokenize: {e}")))?;
            rt.block_on(remote.tokenize(&text))
                .map_err(EngineError::from)
        });
        worker
            .join()
            .unwrap_or_else(|_| Err(EngineError::Tokenize("the /tokenize call panicked".into())))
    }

    fn renders_tools(&self) -> bool {
        self.renders_tools
    }

    fn render_chat(
        &self,
        messages: &[ChatMessage],
        tools: &[ToolSpec],
    ) -> Result<String, EngineError> {
        self.template
            .render(messages, tools, true)
            .map_err(|e| EngineError::Template(e.to_string()))
    }

    fn chat_template(&self) -> Option<TemplateSource> {
        self.source.clone()
    }
}
