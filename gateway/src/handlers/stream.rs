//! The streaming loop shared by both generating endpoints.

use std::sync::Arc;

use bytes::Bytes;
use hyper::Response;

use crate::body::{self, Body};
use crate::choices::{Admitted, Tally};
use crate::reply::Step;
use crate::sse::{self, Framing};
use crate::state::AppState;

/// Starts a task that drives the request's choices and writes their events, interleaved as
/// they arrive; returns the SSE response at once.
///
/// The task stops as soon as the client goes away (the body's receiver closes), or when the
/// client stops reading for longer than the write-stall bound (the body's small buffer stays
/// full): dropping the choices drops every engine [`models::Generation`], which cancels the
/// work and frees the slots. An error in any choice ends the stream with an error event (and
/// no `[DONE]`), as it does with one choice; the other choices are dropped.
pub fn respond(state: &Arc<AppState>, admitted: Admitted, framing: impl Framing) -> Response<Body> {
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
        for index in 0..admitted.len() {
            if let Some(head) = framing.head(index)
                && !send(head).await
            {
                return;
            }
        }
        let mut tally = Tally::new(admitted.len());
        let mut choices = admitted.start();
        loop {
            let next = tokio::select! {
                next = choices.next() => next,
                () = &mut closed => return,
            };
            let frames = match next {
                Some((index, Ok(Step::Out(outs)))) => framing.frame(index, outs),
                Some((index, Ok(Step::Finished(finish)))) => {
                    framing.close(index, finish.reason, tally.finished(finish.usage))
                }
                Some((_, Err(e))) => {
                    tracing::warn!(error = %e, "generation failed mid-stream");
                    metrics.error(&e);
                    choices.withdraw();
                    let _ = send(sse::error_event(&e)).await;
                    return;
                }
                // Every choice ended.
                None => return,
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
