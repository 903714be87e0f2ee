//! Request routing: authentication, body limits, dispatch, error answers, request metrics.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use hyper::header::{AUTHORIZATION, CONTENT_LENGTH, HeaderValue, RETRY_AFTER, WWW_AUTHENTICATE};
use hyper::{HeaderMap, Method, Request, Response};

use crate::body::{self, Body};
use crate::error::ApiError;
use crate::handlers::{chat, completions, info};
use crate::metrics::Endpoint;
use crate::state::AppState;

/// Answers one request. Never fails: every error becomes an OpenAI-shaped error response.
pub async fn route<B>(state: Arc<AppState>, req: Request<B>) -> Result<Response<Body>, Infallible>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let started = Instant::now();
    let path = req.uri().path().to_owned();
    let method = req.method().clone();
    let endpoint = Endpoint::from_path(&path);
    let resp = match dispatch(&state, endpoint, req).await {
        Ok(resp) => resp,
        Err(e) => {
            state.metrics.error(&e);
            tracing::debug!(error = %e, kind = e.kind(), "request refused");
            error_response(&e)
        }
    };
    state.metrics.request(endpoint, resp.status().as_u16());
    let status = resp.status().as_u16();
    let streaming = resp
        .headers()
        .get(hyper::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if !streaming {
        tracing::info!(%method, %path, status, ms = started.elapsed().as_millis() as u64, "request");
        return Ok(resp);
    }
    // A stream is logged when it ends, with its whole duration and time to headers.
    let headers_ms = started.elapsed().as_millis() as u64;
    Ok(resp.map(|b| {
        body::finally(b, move || {
            tracing::info!(
                %method,
                %path,
                status,
                headers_ms,
                ms = started.elapsed().as_millis() as u64,
                "request (stream)"
            );
        })
    }))
}

async fn dispatch<B>(
    state: &Arc<AppState>,
    endpoint: Endpoint,
    req: Request<B>,
) -> Result<Response<Body>, ApiError>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    if endpoint != Endpoint::Health {
        check_auth(state.api_key.as_deref(), req.headers())?;
    }
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    match (endpoint, &method) {
        (Endpoint::ChatCompletions, &Method::POST) => {
            let body = read_body(req, state.max_body_bytes).await?;
            chat::handle(state, body).await
        }
        (Endpoint::Completions, &Method::POST) => {
            let body = read_body(req, state.max_body_bytes).await?;
            completions::handle(state, body).await
        }
        (Endpoint::Tokenize, &Method::POST) => {
            let body = read_body(req, state.max_body_bytes).await?;
            info::tokenize(state, body)
        }
        (Endpoint::Models, &Method::GET) => info::models(state, &path),
        (Endpoint::Health, &Method::GET) => Ok(info::health(state)),
        (Endpoint::Props, &Method::GET) => Ok(info::props(state)),
        (Endpoint::Metrics, &Method::GET) => Ok(info::metrics(state)),
        (Endpoint::Other, _) => Err(ApiError::NotFound(path)),
        _ => Err(ApiError::MethodNotAllowed {
            method: method.to_string(),
            path,
        }),
    }
}

/// Checks `Authorization: Bearer <key>` when a key is configured.
fn check_auth(key: Option<&str>, headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(key) = key else { return Ok(()) };
    let given = headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim);
    match given {
        Some(g) if constant_time_eq(g.as_bytes(), key.as_bytes()) => Ok(()),
        _ => Err(ApiError::Unauthorized),
    }
}

/// Compares without an early exit, so response time does not reveal a key's prefix.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Reads the whole body, refusing one over `limit` bytes before reading it when its declared
/// length already says so.
async fn read_body<B>(req: Request<B>, limit: usize) -> Result<Bytes, ApiError>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(ApiError::BodyTooLarge { limit });
    }
    match Limited::new(req.into_body(), limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => {
            Err(ApiError::BodyTooLarge { limit })
        }
        Err(e) => Err(ApiError::BodyRead(e.to_string())),
    }
}

/// The OpenAI error JSON with the error's status, plus `Retry-After` / `WWW-Authenticate`
/// where they apply.
pub fn error_response(e: &ApiError) -> Response<Body> {
    let mut resp = body::json(e.status(), &e.body());
    if let Some(secs) = e.retry_after() {
        resp.headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from(secs));
    }
    if matches!(e, ApiError::Unauthorized) {
        resp.headers_mut()
            .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_accepts_only_the_exact_bearer_key() {
        let mut h = HeaderMap::new();
        assert!(check_auth(None, &h).is_ok());
        assert!(check_auth(Some("k1"), &h).is_err());
        h.insert(AUTHORIZATION, HeaderValue::from_static("Bearer k2"));
        assert!(check_auth(Some("k1"), &h).is_err());
        h.insert(AUTHORIZATION, HeaderValue::from_static("Bearer k1"));
        assert!(check_auth(Some("k1"), &h).is_ok());
        h.insert(AUTHORIZATION, HeaderValue::from_static("k1"));
        assert!(check_auth(Some("k1"), &h).is_err());
    }
}
