//! The streaming loop shared by both generating endpoints.

use std::sync::Arc;

use bytes::Bytes;
use hyper::Response;

use crate::body::{self, Body};
use crate::reply::{Step, Turn};
use crate::sse::{self, Framing};
use crate::state::AppState;

/// Starts a task that drives `turn` and writes its events; returns the SSE response at once.
///
/// The task stops as soon as the client goes away (the body's receiver closes), or when the
/// client stops reading for longer than the write-stall bound (the body's small buffer stays
/// full): dropping the turn drops the engine's [`models::Generation`], which cancels the work
/// and frees the slot.
pub fn respond(state: &Arc<AppState>, mut turn: Turn, framing: impl Framing) -> Response<Body> {
    let (tx, body) = body::channel();
    let metrics = state.metrics.clone();
    let stall = state.write_stall;
    let closed = {
        let tx = tx.clone();
        async move { tx.closed().await }
    };
    // False when the client is gone or stalled: the stream ends.
    let send = move |frame: Bytes| {
        let tx = tx.clone();
        async move {
            match tokio::time::timeout(stall, tx.send(frame)).await {
                Ok(sent) => sent.is_ok(),
                Err(_) => {
                    tracing::warn!(
                        stall_ms = stall.as_millis() as u64,
                        "client stopped reading; cancelling the stream"
                    );
                    false
                }
            }
        }
    };
    tokio::spawn(async move {
        tokio::pin!(closed);
        if let Some(head) = framing.head()
            && !send(head).await
        {
            return;
        }
        loop {
            let step = tokio::select! {
                step = turn.next() => step,
                () = &mut closed => return,
            };
            let frames = match step {
                Ok(Some(Step::Out(outs))) => framing.frame(outs),
                Ok(Some(Step::Finished(finish))) => framing.close(finish),
                Ok(None) => return,
                Err(e) => {
                    tracing::warn!(error = %e, "generation failed mid-stream");
                    metrics.error(&e);
                    vec![sse::error_event(&e)]
                }
            };
            for frame in frames {
                if !send(frame).await {
                    return;
                }
            }
        }
    });
    body::sse(body)
}
