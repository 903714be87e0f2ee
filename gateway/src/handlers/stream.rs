//! The streaming loop shared by both generating endpoints.

use std::sync::Arc;

use hyper::Response;

use crate::body::{self, Body};
use crate::reply::{Step, Turn};
use crate::sse::{self, Framing};
use crate::state::AppState;

/// Starts a task that drives `turn` and writes its events; returns the SSE response at once.
///
/// The task stops as soon as the client goes away (the body's receiver closes): dropping the
/// turn drops the engine's [`models::Generation`], which cancels the work and frees the slot.
pub fn respond(state: &Arc<AppState>, mut turn: Turn, framing: impl Framing) -> Response<Body> {
    let (tx, body) = body::channel();
    let metrics = state.metrics.clone();
    tokio::spawn(async move {
        if let Some(head) = framing.head()
            && tx.send(head).await.is_err()
        {
            return;
        }
        loop {
            let step = tokio::select! {
                step = turn.next() => step,
                () = tx.closed() => return,
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
                if tx.send(frame).await.is_err() {
                    return;
                }
            }
        }
    });
    body::sse(body)
}
