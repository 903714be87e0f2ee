//! What every request handler shares.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use models::Engine;

use crate::config::DEFAULT_MAX_BODY_BYTES;
use crate::defaults::Defaults;
use crate::ids::IdGen;
use crate::metrics::Metrics;
use crate::upstream::Pool;

#[derive(Debug)]
pub struct AppState {
    pub engine: Arc<dyn Engine>,
    pub metrics: Metrics,
    /// When set, every endpoint but `/health` needs `Authorization: Bearer <key>`.
    pub api_key: Option<String>,
    pub max_body_bytes: usize,
    pub ids: IdGen,
    /// Unix time the server started; the `created` of the model card.
    pub started: u64,
    pub defaults: Defaults,
    /// Other names `/v1/models` lists for the model (`--alias`). Any name is served.
    pub aliases: Vec<String>,
    /// How long a stream may wait for a client that stopped reading before it is cancelled.
    pub write_stall: std::time::Duration,
    /// The upstream pool when the engine is one (`--upstream`): `/v1/models` lists what the
    /// upstreams serve.
    pub upstream: Option<Arc<Pool>>,
}

impl AppState {
    pub fn new(engine: Arc<dyn Engine>) -> AppState {
        AppState {
            engine,
            metrics: Metrics::new(),
            api_key: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            ids: IdGen::new(),
            started: unix_now(),
            defaults: Defaults::default(),
            aliases: Vec::new(),
            write_stall: crate::config::DEFAULT_WRITE_STALL,
            upstream: None,
        }
    }

    /// The server's metrics are `metrics` (which an upstream pool already registered into).
    pub fn with_metrics(mut self, metrics: Metrics) -> AppState {
        self.metrics = metrics;
        self
    }

    pub fn with_upstream(mut self, pool: Arc<Pool>) -> AppState {
        self.upstream = Some(pool);
        self
    }

    pub fn with_aliases(mut self, aliases: Vec<String>) -> AppState {
        self.aliases = aliases;
        self
    }

    pub fn with_write_stall(mut self, stall: std::time::Duration) -> AppState {
        self.write_stall = stall;
        self
    }

    pub fn with_api_key(mut self, key: Option<String>) -> AppState {
        self.api_key = key.filter(|k| !k.is_empty());
        self
    }

    pub fn with_defaults(mut self, defaults: Defaults) -> AppState {
        self.defaults = defaults;
        self
    }

    pub fn with_ids(mut self, ids: IdGen) -> AppState {
        self.ids = ids;
        self
    }

    pub fn with_max_body_bytes(mut self, limit: usize) -> AppState {
        self.max_body_bytes = limit;
        self
    }
}

/// Seconds since the Unix epoch (0 if the clock is before it).
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
