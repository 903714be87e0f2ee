//! A minimal HTTP/1.1 client over hyper for one upstream: one connection per request (so
//! dropping a request closes its connection and the upstream sees the cancellation), bounded
//! waits, and every failure as an [`UpstreamFailure`].

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HOST, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use models::{TimeoutPhase, UpstreamFailure};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

/// The most of an error body kept for the message.
const ERROR_BODY_LIMIT: usize = 4096;
/// The largest discovery document (`/v1/models`, `/props`, `/tokenize`) read.
pub const DOCUMENT_LIMIT: usize = 8 << 20;

/// Where an upstream is: `http://host:port[/prefix]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// `host:port`, for the connection and the `Host` header.
    pub authority: String,
    /// A path prefix the server is mounted under (without a trailing `/v1`), or empty.
    pub prefix: String,
}

/// Why an upstream URL is not one bellows can use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error(
        "{0:?}: only http:// upstreams are supported (put a TLS-terminating proxy beside bellows \
         for https)"
    )]
    Scheme(String),
    #[error("{0:?}: no host")]
    NoHost(String),
}

impl Target {
    /// Parses `http://host[:port][/prefix]`. A trailing `/v1` is dropped (users paste the base
    /// URL clients use), since bellows adds `/v1/...` itself and also reaches `/props`,
    /// `/health` and `/tokenize`, which servers serve at the root.
    pub fn parse(url: &str) -> Result<Target, TargetError> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| TargetError::Scheme(url.to_owned()))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if authority.is_empty() || authority.starts_with(':') {
            return Err(TargetError::NoHost(url.to_owned()));
        }
        let has_port = match authority.rfind(':') {
            Some(i) => !authority[i..].contains(']'),
            None => false,
        };
        let authority = if has_port {
            authority.to_owned()
        } else {
            format!("{authority}:80")
        };
        let path = path.trim_end_matches('/');
        let prefix = path.strip_suffix("/v1").unwrap_or(path).to_owned();
        Ok(Target { authority, prefix })
    }
}

/// Aborts the connection task when dropped: the socket closes and the upstream sees the
/// client go away, whatever state the response was in.
#[derive(Debug)]
pub struct ConnGuard(JoinHandle<()>);

impl Drop for ConnGuard {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A response whose head arrived, with the connection it lives on.
#[derive(Debug)]
pub struct Open {
    pub response: Response<Incoming>,
    pub conn: ConnGuard,
}

/// How long each wait may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    pub connect: Duration,
    /// From sending the request to the first generated text.
    pub first_byte: Duration,
    /// Between two reads of a running stream.
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(5),
            first_byte: Duration::from_secs(120),
            idle: Duration::from_secs(60),
        }
    }
}

/// Sends one request and waits for the response head within `head_within`.
pub async fn send(
    target: &Target,
    key: Option<&str>,
    method: Method,
    path: &str,
    body: Option<Vec<u8>>,
    connect: Duration,
    head_within: Duration,
) -> Result<Open, UpstreamFailure> {
    let stream = match tokio::time::timeout(connect, TcpStream::connect(&target.authority)).await {
        Err(_) => {
            return Err(UpstreamFailure::Timeout {
                phase: TimeoutPhase::Connect,
                after: connect,
            });
        }
        Ok(Err(e)) => {
            return Err(UpstreamFailure::Connect {
                reason: e.to_string(),
            });
        }
        Ok(Ok(s)) => s,
    };
    let _ = stream.set_nodelay(true);
    let exchange = async {
        let (mut sender, conn) =
            hyper::client::conn::http1::handshake::<_, Full<Bytes>>(TokioIo::new(stream))
                .await
                .map_err(|e| UpstreamFailure::Connect {
                    reason: e.to_string(),
                })?;
        let conn = ConnGuard(tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "upstream connection ended");
            }
        }));
        let mut req = Request::builder()
            .method(method)
            .uri(format!("{}{path}", target.prefix))
            .header(HOST, &target.authority)
            .header(ACCEPT, "application/json, text/event-stream");
        if let Some(key) = key
            && let Ok(v) = HeaderValue::from_str(&format!("Bearer {key}"))
        {
            req = req.header(AUTHORIZATION, v);
        }
        let has_body = body.is_some();
        if has_body {
            req = req.header(CONTENT_TYPE, "application/json");
        }
        let req = req
            .body(Full::new(Bytes::from(body.unwrap_or_default())))
            .map_err(|e| UpstreamFailure::Protocol {
                reason: format!("cannot build the request: {e}"),
            })?;
        let response = sender
            .send_request(req)
            .await
            .map_err(|e| UpstreamFailure::Connect {
                reason: format!("the request failed: {e}"),
            })?;
        Ok(Open { response, conn })
    };
    match tokio::time::timeout(head_within, exchange).await {
        Ok(r) => r,
        Err(_) => Err(UpstreamFailure::Timeout {
            phase: TimeoutPhase::FirstByte,
            after: head_within,
        }),
    }
}

/// Reads a whole body of at most `limit` bytes within `within`.
pub async fn read_body(
    open: Open,
    limit: usize,
    within: Duration,
) -> Result<(StatusCode, Bytes), UpstreamFailure> {
    let status = open.response.status();
    let body = http_body_util::Limited::new(open.response.into_body(), limit);
    match tokio::time::timeout(within, body.collect()).await {
        Err(_) => Err(UpstreamFailure::Timeout {
            phase: TimeoutPhase::Idle,
            after: within,
        }),
        Ok(Err(e)) => Err(UpstreamFailure::Protocol {
            reason: format!("reading the body: {e}"),
        }),
        Ok(Ok(c)) => Ok((status, c.to_bytes())),
    }
}

/// An error answer as a failure: the status and the upstream's message (its
/// `error.message`, else the body's start).
pub async fn refused(open: Open, within: Duration) -> UpstreamFailure {
    let status = open.response.status().as_u16();
    let mut bytes = Vec::new();
    let mut body = open.response.into_body();
    let read = async {
        while bytes.len() < ERROR_BODY_LIMIT {
            match body.frame().await {
                Some(Ok(frame)) => {
                    if let Some(d) = frame.data_ref() {
                        bytes.extend_from_slice(d);
                    }
                }
                _ => break,
            }
        }
    };
    let _ = tokio::time::timeout(within, read).await;
    bytes.truncate(ERROR_BODY_LIMIT);
    UpstreamFailure::Refused {
        status,
        message: error_message(&bytes),
    }
}

/// The message of an error body: OpenAI's `{"error": {"message"}}`, `{"error": "text"}`, or
/// the text itself, on one line.
fn error_message(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let parsed: Option<crate::api::upstream::UpErrorBody> = serde_json::from_str(&text).ok();
    let message = match parsed.and_then(|b| b.error) {
        Some(serde_json::Value::String(s)) => s,
        Some(serde_json::Value::Object(o)) => match o.get("message") {
            Some(serde_json::Value::String(s)) => s.clone(),
            _ => serde_json::Value::Object(o).to_string(),
        },
        _ => text.into_owned(),
    };
    let one_line: String = message.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.is_empty() {
        "(no message)".to_owned()
    } else {
        one_line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_to_an_authority_and_a_prefix() {
        let t = Target::parse("http://127.0.0.1:8080/v1/").expect("valid");
        assert_eq!(t.authority, "127.0.0.1:8080");
        assert_eq!(t.prefix, "");
        let t = Target::parse("http://gpu-box/llm/v1").expect("valid");
        assert_eq!(t.authority, "gpu-box:80");
        assert_eq!(t.prefix, "/llm");
        let t = Target::parse("http://[::1]:9000").expect("valid");
        assert_eq!(t.authority, "[::1]:9000");
        assert!(matches!(
            Target::parse("https://api.example.com"),
            Err(TargetError::Scheme(_))
        ));
        assert!(matches!(
            Target::parse("http://:80"),
            Err(TargetError::NoHost(_))
        ));
    }

    #[test]
    fn error_bodies_yield_their_message() {
        assert_eq!(
            error_message(br#"{"error":{"message":"model\n not found","code":404}}"#),
            "model not found"
        );
        assert_eq!(error_message(br#"{"error":"busy"}"#), "busy");
        assert_eq!(
            error_message(b"Internal Server Error"),
            "Internal Server Error"
        );
        assert_eq!(error_message(b""), "(no message)");
    }
}
