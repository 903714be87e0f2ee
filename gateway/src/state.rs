//! What every request handler shares.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use models::{Engine, Sampling};

use crate::config::DEFAULT_MAX_BODY_BYTES;
use crate::ids::IdGen;
use crate::metrics::Metrics;

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
}

/// What the model's profile decides for requests that do not say.
#[derive(Debug, Clone)]
pub struct Defaults {
    /// Sampling for fields a request leaves out.
    pub sampling: Sampling,
    /// How replies to requests with client tools are decoded.
    pub native_mode: codec::Mode,
}

impl Default for Defaults {
    fn default() -> Self {
        Defaults {
            sampling: Sampling::default(),
            native_mode: codec::Mode::Auto,
        }
    }
}

impl Defaults {
    /// From a profile's `protocol` (`text` or a native format name) and sampling. A `text`
    /// profile decodes client tool calls in `auto` mode, which reads every in-band format.
    pub fn from_profile(protocol: &str, sampling: Sampling) -> Defaults {
        let native_mode = match codec::format::FormatId::parse(protocol) {
            Some(codec::format::FormatId::Text) | None => codec::Mode::Auto,
            Some(f) => codec::Mode::Only(f),
        };
        Defaults {
            sampling,
            native_mode,
        }
    }
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
        }
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
