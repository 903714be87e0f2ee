//! `POST /v1/completions`: raw text in, text out, no chat template and no tool decoding.

use std::sync::Arc;

use bytes::Bytes;
use hyper::{Response, StatusCode};

use crate::api::request::CompletionRequest;
use crate::api::response::{Completion, CompletionChoice, CompletionLogprobs};
use crate::body::{self, Body};
use crate::choices::{self, Tally};
use crate::error::ApiError;
use crate::reply::{Finish, Out, Step};
use crate::sse::CompletionChunks;
use crate::state::{AppState, unix_now};
use crate::tools::ToolPlan;
use crate::validate;

/// One choice's text, as its outputs arrive.
#[derive(Debug, Default)]
struct Text {
    text: String,
    logprobs: CompletionLogprobs,
    /// The text's length so far, for the log probabilities' offsets.
    offset: u32,
    finish: Option<Finish>,
}

pub async fn handle(state: &Arc<AppState>, body: Bytes) -> Result<Response<Body>, ApiError> {
    let raw: CompletionRequest = validate::parse(&body)?;
    let info = state.engine.info();
    let valid = validate::completion(raw, info, &state.defaults)?;
    let model = valid.model.clone().unwrap_or_else(|| info.id.clone());
    let admitted = choices::admit(
        state,
        valid.generate,
        valid.n,
        ToolPlan::none(),
        "max_tokens",
    )
    .await?;
    let id = state.ids.response_id("cmpl");
    let created = unix_now();
    if valid.stream {
        let framing = CompletionChunks {
            id,
            created,
            model,
            include_usage: valid.include_usage,
        };
        return Ok(super::stream::respond(state, admitted, framing));
    }
    let mut choices = admitted.start();
    let mut texts: Vec<Text> = (0..choices.len()).map(|_| Text::default()).collect();
    while let Some((index, step)) = choices.next().await {
        let Some(t) = texts.get_mut(index as usize) else {
            continue;
        };
        match step {
            Ok(Step::Out(outs)) => {
                for o in outs {
                    match o {
                        Out::Content(s) => t.text.push_str(&s),
                        Out::Logprobs(entries) => t.logprobs.extend(&entries, &mut t.offset),
                        _ => {}
                    }
                }
            }
            Ok(Step::Finished(f)) => t.finish = Some(f),
            Err(e) => {
                choices.withdraw();
                return Err(e);
            }
        }
    }
    let mut tally = Tally::new(choices.len());
    let mut usage = None;
    let mut out = Vec::with_capacity(texts.len());
    for (index, t) in (0u32..).zip(texts) {
        let Some(finish) = t.finish else {
            return Err(ApiError::Engine("the reply ended without finishing".into()));
        };
        usage = tally.finished(finish.usage);
        out.push(CompletionChoice {
            index,
            text: t.text,
            logprobs: valid.logprobs.then_some(t.logprobs),
            finish_reason: Some(finish.reason),
        });
    }
    let completion = Completion {
        id,
        object: "text_completion",
        created,
        model,
        choices: out,
        usage: Some(usage.unwrap_or_default()),
    };
    Ok(body::json(StatusCode::OK, &completion))
}
