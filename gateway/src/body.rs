//! Response bodies: a whole JSON document, or a stream of byte chunks fed through a bounded
//! channel (server-sent events).

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Frame;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Response, StatusCode};
use tokio::sync::mpsc;

/// The body type of every response.
pub type Body = BoxBody<Bytes, Infallible>;

/// Frames waiting to be written per streaming response. Small, so a client that stops reading
/// stops generation within a few tokens instead of buffering the whole reply.
pub const STREAM_BUFFER: usize = 4;

/// A body fed by a channel; it ends when the sender is dropped. When the client goes away,
/// hyper drops the body, the receiver closes, and the producer's next send fails.
#[derive(Debug)]
pub struct ChannelBody {
    rx: mpsc::Receiver<Bytes>,
}

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.rx.poll_recv(cx).map(|o| o.map(|b| Ok(Frame::data(b))))
    }
}

/// A body that runs a closure once it is dropped: when hyper has written it whole, or when
/// the client went away.
struct Finally {
    inner: Body,
    on_drop: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl hyper::body::Body for Finally {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Finally {
    fn drop(&mut self) {
        if let Some(f) = self.on_drop.take() {
            f();
        }
    }
}

/// `body`, calling `on_drop` when it has been written or abandoned (for a stream: its real end).
pub fn finally(body: Body, on_drop: impl FnOnce() + Send + Sync + 'static) -> Body {
    Finally {
        inner: body,
        on_drop: Some(Box::new(on_drop)),
    }
    .boxed()
}

/// A streaming body and the sender that feeds it.
pub fn channel() -> (mpsc::Sender<Bytes>, Body) {
    let (tx, rx) = mpsc::channel(STREAM_BUFFER);
    (tx, ChannelBody { rx }.boxed())
}

pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed()
}

/// A JSON response. Serializing the gateway's own response types cannot fail.
pub fn json<T: serde::Serialize>(status: StatusCode, value: &T) -> Response<Body> {
    let bytes = serde_json::to_vec(value).unwrap_or_default();
    with_type(status, full(bytes), "application/json")
}

pub fn with_type(status: StatusCode, body: Body, content_type: &'static str) -> Response<Body> {
    let mut resp = Response::new(body);
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}

/// The response head of a server-sent event stream.
pub fn sse(body: Body) -> Response<Body> {
    let mut resp = with_type(StatusCode::OK, body, "text/event-stream");
    resp.headers_mut()
        .insert("cache-control", HeaderValue::from_static("no-cache"));
    resp
}
