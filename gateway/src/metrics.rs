//! Prometheus metrics of one server instance.
//!
//! Each [`Metrics`] owns its own registry (no global state), so tests can run several servers
//! in one process and read exact counts. Every label value comes from a closed set: the
//! [`Endpoint`] enum, HTTP status codes the gateway itself produces, [`ApiError::kind`],
//! [`codec::FormatId::as_str`], [`codec::RepairKind::as_str`] and [`codec::FailureKind::as_str`].
//!
//! A request with `n` choices (see [`crate::choices`]) is one request in
//! `bellows_requests_total`, and `n` generations everywhere the engine's work is counted: the
//! token counters, the queue and slot gauges, per-token latency and cancellations. Time to
//! first token is the request's: observed once, at the first text of any choice.

use std::time::Duration;

use prometheus::{
    Encoder, Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry, TextEncoder,
};

use crate::error::ApiError;

/// The routes, as a closed set of metric labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    ChatCompletions,
    Completions,
    Models,
    Health,
    Metrics,
    Tokenize,
    Props,
    /// Any path the router does not know.
    Other,
}

impl Endpoint {
    pub const ALL: &'static [Endpoint] = &[
        Endpoint::ChatCompletions,
        Endpoint::Completions,
        Endpoint::Models,
        Endpoint::Health,
        Endpoint::Metrics,
        Endpoint::Tokenize,
        Endpoint::Props,
        Endpoint::Other,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Endpoint::ChatCompletions => "chat_completions",
            Endpoint::Completions => "completions",
            Endpoint::Models => "models",
            Endpoint::Health => "health",
            Endpoint::Metrics => "metrics",
            Endpoint::Tokenize => "tokenize",
            Endpoint::Props => "props",
            Endpoint::Other => "other",
        }
    }

    pub fn from_path(path: &str) -> Endpoint {
        match path {
            "/v1/chat/completions" | "/chat/completions" => Endpoint::ChatCompletions,
            "/v1/completions" | "/completions" => Endpoint::Completions,
            "/v1/models" | "/models" => Endpoint::Models,
            "/health" => Endpoint::Health,
            "/metrics" => Endpoint::Metrics,
            "/tokenize" => Endpoint::Tokenize,
            "/props" => Endpoint::Props,
            p if p.starts_with("/v1/models/") || p.starts_with("/models/") => Endpoint::Models,
            _ => Endpoint::Other,
        }
    }
}

/// The status codes the gateway answers with: a closed set of label values.
fn status_label(status: u16) -> &'static str {
    match status {
        200 => "200",
        400 => "400",
        401 => "401",
        404 => "404",
        405 => "405",
        413 => "413",
        500 => "500",
        502 => "502",
        503 => "503",
        504 => "504",
        _ => "other",
    }
}

/// All metrics of one server.
#[derive(Debug, Clone)]
pub struct Metrics {
    registry: Registry,
    requests: IntCounterVec,
    errors: IntCounterVec,
    pub prompt_tokens: IntCounter,
    pub cached_tokens: IntCounter,
    pub generated_tokens: IntCounter,
    pub draft_tokens: IntCounter,
    pub draft_accepted: IntCounter,
    pub ttft: Histogram,
    pub token_latency: Histogram,
    pub queue_depth: IntGauge,
    pub busy_slots: IntGauge,
    pub cancellations: IntCounter,
    proposals: IntCounterVec,
    repairs: IntCounterVec,
    failures: IntCounterVec,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let registry = Registry::new();
        let counter_vec = |name: &str, help: &str, label: &[&str]| {
            let c = IntCounterVec::new(Opts::new(name, help), label)
                .unwrap_or_else(|e| unreachable!("metric {name} is well-formed: {e}"));
            register(&registry, Box::new(c.clone()));
            c
        };
        let counter = |name: &str, help: &str| {
            let c = IntCounter::new(name, help)
                .unwrap_or_else(|e| unreachable!("metric {name} is well-formed: {e}"));
            register(&registry, Box::new(c.clone()));
            c
        };
        let gauge = |name: &str, help: &str| {
            let g = IntGauge::new(name, help)
                .unwrap_or_else(|e| unreachable!("metric {name} is well-formed: {e}"));
            register(&registry, Box::new(g.clone()));
            g
        };
        let histogram = |name: &str, help: &str, buckets: Vec<f64>| {
            let h = Histogram::with_opts(HistogramOpts::new(name, help).buckets(buckets))
                .unwrap_or_else(|e| unreachable!("metric {name} is well-formed: {e}"));
            register(&registry, Box::new(h.clone()));
            h
        };
        let m = Metrics {
            requests: counter_vec(
                "bellows_requests_total",
                "HTTP requests answered, by endpoint and status code.",
                &["endpoint", "status"],
            ),
            errors: counter_vec(
                "bellows_errors_total",
                "Error answers (HTTP errors and mid-stream SSE errors), by kind.",
                &["kind"],
            ),
            prompt_tokens: counter("bellows_prompt_tokens_total", "Prompt tokens submitted."),
            cached_tokens: counter(
                "bellows_cached_prompt_tokens_total",
                "Prompt tokens reused from a slot's prompt cache.",
            ),
            generated_tokens: counter("bellows_generated_tokens_total", "Tokens generated."),
            draft_tokens: counter(
                "bellows_lookup_draft_tokens_total",
                "Tokens drafted by lookup decoding and verified alongside the sampled ones.",
            ),
            draft_accepted: counter(
                "bellows_lookup_accepted_tokens_total",
                "Drafted tokens the sampler agreed with (generated without a step of their own).",
            ),
            ttft: histogram(
                "bellows_time_to_first_token_seconds",
                "Time from request admission to the first generated text.",
                vec![0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0],
            ),
            token_latency: histogram(
                "bellows_token_latency_seconds",
                "Time per generated token after the first.",
                vec![0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0],
            ),
            queue_depth: gauge(
                "bellows_queue_depth",
                "Generations admitted that have not produced their first event yet.",
            ),
            busy_slots: gauge(
                "bellows_busy_slots",
                "Generations currently producing tokens.",
            ),
            cancellations: counter(
                "bellows_cancellations_total",
                "Generations cancelled because the client went away.",
            ),
            proposals: counter_vec(
                "bellows_decoded_proposals_total",
                "Tool calls and actions decoded from model output, by format.",
                &["format"],
            ),
            repairs: counter_vec(
                "bellows_repairs_total",
                "Repairs applied while decoding, by kind.",
                &["kind"],
            ),
            failures: counter_vec(
                "bellows_decode_failures_total",
                "Model output that started an action but could not be decoded, by kind.",
                &["kind"],
            ),
            registry,
        };
        // Pre-register every label value so the exposition always lists them at zero; a
        // dashboard can then tell "never happened" from "not scraped".
        for e in Endpoint::ALL {
            m.requests.with_label_values(&[e.as_str(), "200"]);
        }
        for k in ApiError::KINDS {
            m.errors.with_label_values(&[k]);
        }
        for f in codec::format::FormatId::ALL {
            m.proposals.with_label_values(&[f.as_str()]);
        }
        for r in codec::RepairKind::ALL {
            m.repairs.with_label_values(&[r.as_str()]);
        }
        for f in codec::FailureKind::ALL {
            m.failures.with_label_values(&[f.as_str()]);
        }
        m
    }

    pub fn request(&self, endpoint: Endpoint, status: u16) {
        self.requests
            .with_label_values(&[endpoint.as_str(), status_label(status)])
            .inc();
    }

    pub fn error(&self, err: &ApiError) {
        self.errors.with_label_values(&[err.kind()]).inc();
    }

    pub fn proposal(&self, format: codec::format::FormatId) {
        self.proposals.with_label_values(&[format.as_str()]).inc();
    }

    pub fn repair(&self, kind: codec::RepairKind) {
        self.repairs.with_label_values(&[kind.as_str()]).inc();
    }

    pub fn failure(&self, kind: codec::FailureKind) {
        self.failures.with_label_values(&[kind.as_str()]).inc();
    }

    pub fn observe_ttft(&self, d: Duration) {
        self.ttft.observe(d.as_secs_f64());
    }

    /// Records `tokens` tokens that took `d` together.
    pub fn observe_tokens(&self, d: Duration, tokens: usize) {
        if tokens == 0 {
            return;
        }
        let per = d.as_secs_f64() / tokens as f64;
        for _ in 0..tokens {
            self.token_latency.observe(per);
        }
    }

    /// The per-upstream metrics, registered here under the names given (from the
    /// configuration: the upstreams' URLs as configured). Call it once per registry.
    pub fn upstreams(&self, names: &[String]) -> UpstreamMetrics {
        let vec = |name: &str, help: &str, labels: &[&str]| {
            let c = IntCounterVec::new(Opts::new(name, help), labels)
                .unwrap_or_else(|e| unreachable!("metric {name} is well-formed: {e}"));
            register(&self.registry, Box::new(c.clone()));
            c
        };
        let gauge_vec = |name: &str, help: &str| {
            let g = IntGaugeVec::new(Opts::new(name, help), &["upstream"])
                .unwrap_or_else(|e| unreachable!("metric {name} is well-formed: {e}"));
            register(&self.registry, Box::new(g.clone()));
            g
        };
        let m = UpstreamMetrics {
            names: names.to_vec(),
            requests: vec(
                "bellows_upstream_requests_total",
                "Generations sent to each upstream, by how they ended.",
                &["upstream", "outcome"],
            ),
            failovers: vec(
                "bellows_upstream_failovers_total",
                "Requests moved to another upstream after this one failed before the first token.",
                &["upstream"],
            ),
            inflight: gauge_vec(
                "bellows_upstream_inflight",
                "Generations running on each upstream now.",
            ),
            healthy: gauge_vec(
                "bellows_upstream_healthy",
                "1 when the upstream answered its last health check, else 0.",
            ),
        };
        for n in names {
            for o in UpstreamMetrics::OUTCOMES {
                m.requests.with_label_values(&[n, o]);
            }
            m.failovers.with_label_values(&[n]);
            m.inflight.with_label_values(&[n]);
            m.healthy.with_label_values(&[n]);
        }
        m
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut buf = Vec::new();
        // Encoding into a Vec cannot fail for well-formed metric families.
        if let Err(e) = TextEncoder::new().encode(&self.registry.gather(), &mut buf) {
            tracing::error!(error = %e, "metrics encoding failed");
        }
        String::from_utf8(buf).unwrap_or_default()
    }
}

/// Metrics per upstream. The `upstream` label takes only the configured names: a name not
/// among them is not recorded.
#[derive(Debug, Clone)]
pub struct UpstreamMetrics {
    names: Vec<String>,
    requests: IntCounterVec,
    failovers: IntCounterVec,
    inflight: IntGaugeVec,
    healthy: IntGaugeVec,
}

impl UpstreamMetrics {
    /// How an upstream generation ended: the `outcome` label's fixed set.
    pub const OUTCOMES: &'static [&'static str] = &[
        "ok",
        "cancelled",
        "connect",
        "refused",
        "timeout",
        "protocol",
        "unsupported",
    ];

    fn known(&self, upstream: &str) -> bool {
        self.names.iter().any(|n| n == upstream)
    }

    pub fn outcome(&self, upstream: &str, outcome: &'static str) {
        if self.known(upstream) && Self::OUTCOMES.contains(&outcome) {
            self.requests.with_label_values(&[upstream, outcome]).inc();
        }
    }

    pub fn failover(&self, upstream: &str) {
        if self.known(upstream) {
            self.failovers.with_label_values(&[upstream]).inc();
        }
    }

    pub fn set_inflight(&self, upstream: &str, n: u32) {
        if self.known(upstream) {
            self.inflight
                .with_label_values(&[upstream])
                .set(i64::from(n));
        }
    }

    pub fn set_healthy(&self, upstream: &str, yes: bool) {
        if self.known(upstream) {
            self.healthy
                .with_label_values(&[upstream])
                .set(i64::from(yes));
        }
    }
}

fn register(registry: &Registry, c: Box<dyn prometheus::core::Collector>) {
    if let Err(e) = registry.register(c) {
        unreachable!("each metric is registered once on a fresh registry: {e}");
    }
}

/// Reads one sample's value from a text exposition: `name{labels}` exactly as printed (labels
/// in the order given when registered), e.g. `bellows_requests_total{endpoint="health",status="200"}`.
pub fn sample(exposition: &str, series: &str) -> Option<f64> {
    exposition.lines().find_map(|line| {
        let rest = line.strip_prefix(series)?;
        let value = rest.strip_prefix(' ')?;
        value.trim().parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposition_lists_labels_from_fixed_sets() {
        let m = Metrics::new();
        m.request(Endpoint::Health, 200);
        m.request(Endpoint::Health, 200);
        m.error(&ApiError::Unauthorized);
        m.repair(codec::RepairKind::Crlf);
        let text = m.render();
        assert_eq!(
            sample(
                &text,
                r#"bellows_requests_total{endpoint="health",status="200"}"#
            ),
            Some(2.0)
        );
        assert_eq!(
            sample(&text, r#"bellows_errors_total{kind="invalid_api_key"}"#),
            Some(1.0)
        );
        assert_eq!(
            sample(&text, r#"bellows_repairs_total{kind="crlf"}"#),
            Some(1.0)
        );
        assert_eq!(
            sample(&text, r#"bellows_decode_failures_total{kind="too_long"}"#),
            Some(0.0)
        );
        assert_eq!(status_label(418), "other");
    }
}
