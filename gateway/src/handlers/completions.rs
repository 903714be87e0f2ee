//! `POST /v1/completions`: raw text in, text out, no chat template and no tool decoding.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use hyper::{Response, StatusCode};

use crate::api::request::CompletionRequest;
use crate::api::response::{Completion, CompletionChoice, CompletionLogprobs};
use crate::body::{self, Body};
use crate::error::ApiError;
use crate::reply::{Inflight, Out, Step, Turn};
use crate::sse::CompletionChunks;
use crate::state::{AppState, unix_now};
use crate::tools::ToolPlan;
use crate::validate;

pub async fn handle(state: &Arc<AppState>, body: Bytes) -> Result<Response<Body>, ApiError> {
    let raw: CompletionRequest = validate::parse(&body)?;
    let info = state.engine.info();
    let valid = validate::completion(raw, info, &state.defaults)?;
    let model = valid.model.clone().unwrap_or_else(|| info.id.clone());
    let started = Instant::now();
    let mut inflight = Inflight::queued(&state.metrics);
    let generation = match state.engine.generate(valid.generate).await {
        Ok(g) => g,
        Err(e) => {
            inflight.settle();
            return Err(ApiError::from_engine(e, "max_tokens"));
        }
    };
    let mut turn = Turn::new(
        generation,
        ToolPlan::none(),
        &state.metrics,
        inflight,
        state.ids.clone(),
        started,
    );
    let id = state.ids.response_id("cmpl");
    let created = unix_now();
    if valid.stream {
        let framing = CompletionChunks {
            id,
            created,
            model,
            include_usage: valid.include_usage,
        };
        return Ok(super::stream::respond(state, turn, framing));
    }
    let mut text = String::new();
    let mut logprobs = CompletionLogprobs::default();
    let mut offset = 0;
    let finish = loop {
        match turn.next().await? {
            Some(Step::Out(outs)) => {
                for o in outs {
                    match o {
                        Out::Content(t) => text.push_str(&t),
                        Out::Logprobs(entries) => logprobs.extend(&entries, &mut offset),
                        _ => {}
                    }
                }
            }
            Some(Step::Finished(f)) => break f,
            None => return Err(ApiError::Engine("the reply ended without finishing".into())),
        }
    };
    let completion = Completion {
        id,
        object: "text_completion",
        created,
        model,
        choices: vec![CompletionChoice {
            index: 0,
            text,
            logprobs: valid.logprobs.then_some(logprobs),
            finish_reason: Some(finish.reason),
        }],
        usage: Some(finish.usage),
    };
    Ok(body::json(StatusCode::OK, &completion))
}
