//! [`ApiError`]: the one error type of the HTTP layer.
//!
//! Its [`ApiError::kind`] is a static snake_case name from a closed set. The same name is the
//! `code` of the OpenAI error JSON, the `code` of an SSE error event and the label of the
//! `bellows_errors_total` metric, so a label can never come from request-supplied text.

use hyper::StatusCode;
use models::{EngineError, UpstreamError, UpstreamFailure};

use crate::api::response::{ErrorBody, ErrorDetail};

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("the request body is larger than the {limit}-byte limit")]
    BodyTooLarge { limit: usize },
    #[error("the request body could not be read: {0}")]
    BodyRead(String),
    #[error("the request body is not valid JSON: {0}")]
    InvalidJson(String),
    /// A field has the wrong type or an out-of-range value.
    #[error("invalid value for `{param}`: {message}")]
    InvalidValue { param: String, message: String },
    /// A required field is absent.
    #[error("missing required parameter `{param}`")]
    MissingField { param: String },
    /// A well-formed value the gateway does not serve (`best_of > 1`, image parts, `echo`).
    #[error("unsupported value for `{param}`: {message}")]
    Unsupported { param: String, message: String },
    #[error(
        "the maximum context length is {n_ctx} tokens, but the prompt is {prompt_tokens} \
         tokens; shorten the messages"
    )]
    PromptTooLong { prompt_tokens: u32, n_ctx: u32 },
    /// The prompt fits, but not with the tokens the client asked to generate (llama-server's
    /// `exceed_context_size_error`): a reply must not end silently at "length".
    #[error(
        "the maximum context length is {n_ctx} tokens, but this request needs {}: \
         {prompt_tokens} in the prompt and {max_tokens} from `{param}`; lower `{param}` or \
         shorten the messages", prompt_tokens + max_tokens
    )]
    ContextExceeded {
        prompt_tokens: u32,
        max_tokens: u32,
        n_ctx: u32,
        param: &'static str,
    },
    #[error("invalid grammar: {0}")]
    InvalidGrammar(String),
    #[error("invalid JSON schema: {0}")]
    InvalidSchema(String),
    #[error("missing or invalid API key; send `Authorization: Bearer <key>`")]
    Unauthorized,
    #[error("the server is busy ({capacity} requests already waiting); retry shortly")]
    QueueFull { capacity: usize },
    #[error("no route for {0}")]
    NotFound(String),
    #[error("method {method} is not allowed on {path}")]
    MethodNotAllowed { method: String, path: String },
    #[error("the chat template failed: {0}")]
    Template(String),
    #[error("the server is shutting down")]
    ShuttingDown,
    #[error("engine failure: {0}")]
    Engine(String),
    /// An upstream could not be reached (`--upstream`): 502.
    #[error("the upstream is unreachable: {}", .0.failure)]
    UpstreamUnreachable(UpstreamError),
    /// An upstream answered with a server error, or spoke something other than the
    /// protocol: 502.
    #[error("the upstream failed: {}", .0.failure)]
    UpstreamFailed(UpstreamError),
    /// An upstream is overloaded (429 or 503 there): 503.
    #[error("the upstream is busy: {}", .0.failure)]
    UpstreamBusy(UpstreamError),
    /// An upstream refused the request itself (a 4xx there): 400.
    #[error("the upstream refused the request: {}", .0.failure)]
    UpstreamRejected(UpstreamError),
    /// An upstream did not answer in time: 504.
    #[error("the upstream timed out: {}", .0.failure)]
    UpstreamTimeout(UpstreamError),
    /// The request needs what the upstream cannot do: 400.
    #[error("{}", .0.failure)]
    UpstreamUnsupported(UpstreamError),
}

impl ApiError {
    /// Every kind, for tests and metric pre-registration.
    pub const KINDS: &'static [&'static str] = &[
        "body_too_large",
        "body_read_failed",
        "invalid_json",
        "invalid_value",
        "missing_field",
        "unsupported_parameter",
        "context_length_exceeded",
        "invalid_grammar",
        "invalid_schema",
        "invalid_api_key",
        "queue_full",
        "not_found",
        "method_not_allowed",
        "template_error",
        "shutting_down",
        "engine_failure",
        "upstream_unreachable",
        "upstream_error",
        "upstream_busy",
        "upstream_rejected",
        "upstream_timeout",
        "upstream_unsupported",
    ];

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BodyTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::BodyRead(_)
            | ApiError::InvalidJson(_)
            | ApiError::InvalidValue { .. }
            | ApiError::MissingField { .. }
            | ApiError::Unsupported { .. }
            | ApiError::PromptTooLong { .. }
            | ApiError::ContextExceeded { .. }
            | ApiError::InvalidGrammar(_)
            | ApiError::InvalidSchema(_)
            | ApiError::Template(_)
            | ApiError::UpstreamRejected(_)
            | ApiError::UpstreamUnsupported(_) => StatusCode::BAD_REQUEST,
            ApiError::UpstreamUnreachable(_) | ApiError::UpstreamFailed(_) => {
                StatusCode::BAD_GATEWAY
            }
            ApiError::UpstreamBusy(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::UpstreamTimeout(_) => StatusCode::GATEWAY_TIMEOUT,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::QueueFull { .. } | ApiError::ShuttingDown => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Engine(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The stable name of this error (OpenAI `code`, SSE error code, metrics label).
    pub const fn kind(&self) -> &'static str {
        match self {
            ApiError::BodyTooLarge { .. } => "body_too_large",
            ApiError::BodyRead(_) => "body_read_failed",
            ApiError::InvalidJson(_) => "invalid_json",
            ApiError::InvalidValue { .. } => "invalid_value",
            ApiError::MissingField { .. } => "missing_field",
            ApiError::Unsupported { .. } => "unsupported_parameter",
            ApiError::PromptTooLong { .. } => "context_length_exceeded",
            // OpenAI's code for both: clients look for it to shorten and retry.
            ApiError::ContextExceeded { .. } => "context_length_exceeded",
            ApiError::InvalidGrammar(_) => "invalid_grammar",
            ApiError::InvalidSchema(_) => "invalid_schema",
            ApiError::Unauthorized => "invalid_api_key",
            ApiError::QueueFull { .. } => "queue_full",
            ApiError::NotFound(_) => "not_found",
            ApiError::MethodNotAllowed { .. } => "method_not_allowed",
            ApiError::Template(_) => "template_error",
            ApiError::ShuttingDown => "shutting_down",
            ApiError::Engine(_) => "engine_failure",
            ApiError::UpstreamUnreachable(_) => "upstream_unreachable",
            ApiError::UpstreamFailed(_) => "upstream_error",
            ApiError::UpstreamBusy(_) => "upstream_busy",
            ApiError::UpstreamRejected(_) => "upstream_rejected",
            ApiError::UpstreamTimeout(_) => "upstream_timeout",
            ApiError::UpstreamUnsupported(_) => "upstream_unsupported",
        }
    }

    /// OpenAI's error `type`, derived from the status class.
    pub const fn error_type(&self) -> &'static str {
        match self {
            ApiError::Unauthorized => "authentication_error",
            ApiError::NotFound(_) => "not_found_error",
            ApiError::QueueFull { .. } | ApiError::ShuttingDown | ApiError::UpstreamBusy(_) => {
                "overloaded_error"
            }
            ApiError::Engine(_)
            | ApiError::UpstreamUnreachable(_)
            | ApiError::UpstreamFailed(_)
            | ApiError::UpstreamTimeout(_) => "server_error",
            _ => "invalid_request_error",
        }
    }

    /// The request parameter at fault, when there is one.
    pub fn param(&self) -> Option<String> {
        match self {
            ApiError::InvalidValue { param, .. }
            | ApiError::MissingField { param }
            | ApiError::Unsupported { param, .. } => Some(param.clone()),
            ApiError::ContextExceeded { param, .. } => Some((*param).to_owned()),
            ApiError::PromptTooLong { .. } | ApiError::Template(_) => Some("messages".to_owned()),
            ApiError::UpstreamUnsupported(UpstreamError {
                failure: UpstreamFailure::Unsupported { param, .. },
                ..
            }) => Some((*param).to_owned()),
            _ => None,
        }
    }

    /// Seconds a client should wait before retrying, for 503 answers.
    pub const fn retry_after(&self) -> Option<u32> {
        match self {
            ApiError::QueueFull { .. } | ApiError::ShuttingDown | ApiError::UpstreamBusy(_) => {
                Some(1)
            }
            _ => None,
        }
    }

    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            error: ErrorDetail {
                message: self.to_string(),
                kind: self.error_type(),
                param: self.param(),
                code: self.kind(),
            },
        }
    }

    /// An engine refusal, naming `max_tokens_param` (`max_tokens` or
    /// `max_completion_tokens`, whichever the client sent) where the refusal concerns it.
    pub fn from_engine(e: EngineError, max_tokens_param: &'static str) -> ApiError {
        match ApiError::from(e) {
            ApiError::ContextExceeded {
                prompt_tokens,
                max_tokens,
                n_ctx,
                ..
            } => ApiError::ContextExceeded {
                prompt_tokens,
                max_tokens,
                n_ctx,
                param: max_tokens_param,
            },
            other => other,
        }
    }

    /// An upstream's failure as the answer bellows gives: a 4xx there that is about the
    /// request is the client's (400); an overloaded upstream is 503; a timeout 504; anything
    /// else is a bad gateway (502). The upstream's name stays in the logs.
    pub fn from_upstream(e: UpstreamError) -> ApiError {
        tracing::warn!(error = %e, "upstream failure");
        match &e.failure {
            UpstreamFailure::Connect { .. } => ApiError::UpstreamUnreachable(e),
            UpstreamFailure::Timeout { .. } => ApiError::UpstreamTimeout(e),
            UpstreamFailure::Protocol { .. } => ApiError::UpstreamFailed(e),
            UpstreamFailure::Unsupported { .. } => ApiError::UpstreamUnsupported(e),
            UpstreamFailure::Refused { status, .. } => match status {
                429 | 503 => ApiError::UpstreamBusy(e),
                400 | 404 | 413 | 422 => ApiError::UpstreamRejected(e),
                _ => ApiError::UpstreamFailed(e),
            },
        }
    }

    pub fn invalid(param: impl Into<String>, message: impl Into<String>) -> ApiError {
        ApiError::InvalidValue {
            param: param.into(),
            message: message.into(),
        }
    }

    pub fn unsupported(param: impl Into<String>, message: impl Into<String>) -> ApiError {
        ApiError::Unsupported {
            param: param.into(),
            message: message.into(),
        }
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> ApiError {
        match e {
            EngineError::PromptTooLong {
                prompt_tokens,
                n_ctx,
            } => ApiError::PromptTooLong {
                prompt_tokens,
                n_ctx,
            },
            EngineError::ContextExceeded {
                prompt_tokens,
                max_tokens,
                n_ctx,
            } => ApiError::ContextExceeded {
                prompt_tokens,
                max_tokens,
                n_ctx,
                param: "max_tokens",
            },
            EngineError::QueueFull { capacity } => ApiError::QueueFull { capacity },
            EngineError::InvalidGrammar(m) => ApiError::InvalidGrammar(m),
            EngineError::InvalidSchema(m) => ApiError::InvalidSchema(m),
            EngineError::Template(m) => ApiError::Template(m),
            EngineError::ShutDown => ApiError::ShuttingDown,
            EngineError::Upstream(e) => ApiError::from_upstream(e),
            other => ApiError::Engine(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_table_matches_every_variant() {
        let samples = [
            ApiError::BodyTooLarge { limit: 1 },
            ApiError::BodyRead(String::new()),
            ApiError::InvalidJson(String::new()),
            ApiError::invalid("x", "y"),
            ApiError::MissingField { param: "x".into() },
            ApiError::unsupported("n", "y"),
            ApiError::PromptTooLong {
                prompt_tokens: 9,
                n_ctx: 8,
            },
            ApiError::ContextExceeded {
                prompt_tokens: 9,
                max_tokens: 4,
                n_ctx: 12,
                param: "max_tokens",
            },
            ApiError::InvalidGrammar(String::new()),
            ApiError::InvalidSchema(String::new()),
            ApiError::Unauthorized,
            ApiError::QueueFull { capacity: 1 },
            ApiError::NotFound("/x".into()),
            ApiError::MethodNotAllowed {
                method: "GET".into(),
                path: "/x".into(),
            },
            ApiError::Template(String::new()),
            ApiError::ShuttingDown,
            ApiError::Engine(String::new()),
            ApiError::UpstreamUnreachable(up(UpstreamFailure::Connect {
                reason: String::new(),
            })),
            ApiError::UpstreamFailed(up(UpstreamFailure::Protocol {
                reason: String::new(),
            })),
            ApiError::UpstreamBusy(up(refused(503))),
            ApiError::UpstreamRejected(up(refused(400))),
            ApiError::UpstreamTimeout(up(UpstreamFailure::Timeout {
                phase: models::TimeoutPhase::Idle,
                after: std::time::Duration::from_secs(1),
            })),
            ApiError::UpstreamUnsupported(up(UpstreamFailure::Unsupported {
                param: "logprobs",
                reason: String::new(),
            })),
        ];
        let mut kinds: Vec<&str> = samples.iter().map(ApiError::kind).collect();
        // Both context refusals share OpenAI's `context_length_exceeded`.
        kinds.dedup();
        assert_eq!(kinds, ApiError::KINDS);
        // One sample per variant, in declaration order: this match has no wildcard, so a new
        // variant does not compile until it has a place here (and so in the samples above).
        let position = |e: &ApiError| match e {
            ApiError::BodyTooLarge { .. } => 0,
            ApiError::BodyRead(_) => 1,
            ApiError::InvalidJson(_) => 2,
            ApiError::InvalidValue { .. } => 3,
            ApiError::MissingField { .. } => 4,
            ApiError::Unsupported { .. } => 5,
            ApiError::PromptTooLong { .. } => 6,
            ApiError::ContextExceeded { .. } => 7,
            ApiError::InvalidGrammar(_) => 8,
            ApiError::InvalidSchema(_) => 9,
            ApiError::Unauthorized => 10,
            ApiError::QueueFull { .. } => 11,
            ApiError::NotFound(_) => 12,
            ApiError::MethodNotAllowed { .. } => 13,
            ApiError::Template(_) => 14,
            ApiError::ShuttingDown => 15,
            ApiError::Engine(_) => 16,
            ApiError::UpstreamUnreachable(_) => 17,
            ApiError::UpstreamFailed(_) => 18,
            ApiError::UpstreamBusy(_) => 19,
            ApiError::UpstreamRejected(_) => 20,
            ApiError::UpstreamTimeout(_) => 21,
            ApiError::UpstreamUnsupported(_) => 22,
        };
        let positions: Vec<usize> = samples.iter().map(position).collect();
        assert_eq!(positions, (0..=22).collect::<Vec<_>>());
    }

    fn up(failure: UpstreamFailure) -> UpstreamError {
        UpstreamError {
            upstream: "http://u".into(),
            failure,
        }
    }

    fn refused(status: u16) -> UpstreamFailure {
        UpstreamFailure::Refused {
            status,
            message: String::new(),
        }
    }

    #[test]
    fn upstream_failures_map_to_gateway_statuses() {
        let status = |f| {
            ApiError::from(EngineError::Upstream(up(f)))
                .status()
                .as_u16()
        };
        assert_eq!(
            status(UpstreamFailure::Connect {
                reason: "refused".into()
            }),
            502
        );
        assert_eq!(status(refused(500)), 502);
        assert_eq!(status(refused(503)), 503);
        assert_eq!(status(refused(429)), 503);
        assert_eq!(status(refused(400)), 400);
        assert_eq!(
            status(UpstreamFailure::Timeout {
                phase: models::TimeoutPhase::FirstByte,
                after: std::time::Duration::from_secs(2),
            }),
            504
        );
        assert_eq!(
            status(UpstreamFailure::Protocol {
                reason: "bad".into()
            }),
            502
        );
        let e = ApiError::from(EngineError::Upstream(up(UpstreamFailure::Unsupported {
            param: "logprobs",
            reason: "no".into(),
        })));
        assert_eq!(e.status().as_u16(), 400);
        assert_eq!(e.param().as_deref(), Some("logprobs"));
    }

    #[test]
    fn prompt_too_long_names_both_counts() {
        let e = ApiError::from(EngineError::PromptTooLong {
            prompt_tokens: 5000,
            n_ctx: 2048,
        });
        assert_eq!(e.status(), StatusCode::BAD_REQUEST);
        let msg = e.to_string();
        assert!(msg.contains("5000") && msg.contains("2048"), "{msg}");
    }
}

#[cfg(test)]
mod context_tests {
    use super::*;

    #[test]
    fn prompt_plus_max_tokens_over_the_context_names_both_counts_and_the_parameter_sent() {
        let e = ApiError::from_engine(
            EngineError::ContextExceeded {
                prompt_tokens: 3000,
                max_tokens: 2000,
                n_ctx: 4096,
            },
            "max_completion_tokens",
        );
        assert_eq!(e.status(), StatusCode::BAD_REQUEST);
        let body = e.body();
        assert_eq!(body.error.param.as_deref(), Some("max_completion_tokens"));
        let msg = body.error.message;
        assert!(
            msg.contains("3000") && msg.contains("2000") && msg.contains("4096"),
            "{msg}"
        );
        assert!(msg.contains("`max_completion_tokens`"), "{msg}");
    }
}
