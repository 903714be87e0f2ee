//! Shared helpers for the models integration tests.
//!
//! Models are located through environment variables that `scripts/models-env.sh` prints
//! (`eval "$(scripts/models-env.sh)"` before `cargo test --release -p models`). A missing
//! variable or file fails the test with that instruction instead of skipping silently.

#![allow(dead_code)]

use std::path::PathBuf;

use models::{Engine, GenEvent, GenerateRequest, Prompt, Sampling, StopReason, Timings};

/// The path in `var`, which must name an existing file.
pub fn model_path(var: &str) -> PathBuf {
    let Some(path) = std::env::var_os(var) else {
        panic!(
            "{var} is not set: run `eval \"$(scripts/models-env.sh)\"` in the repository root \
             before `cargo test --release -p models`"
        );
    };
    let path = PathBuf::from(path);
    assert!(
        path.is_file(),
        "{var}={} does not exist: run scripts/fetch-models.sh to fetch or generate it",
        path.display()
    );
    path
}

/// The tiny random-weight GGUF (scripts/make-tiny-gguf.py).
pub fn tiny() -> PathBuf {
    model_path("BELLOWS_TINY_GGUF")
}

/// A greedy text request.
pub fn text_request(prompt: &str, max_tokens: u32) -> GenerateRequest {
    GenerateRequest {
        prompt: Prompt::Text(prompt.to_owned()),
        sampling: Sampling::default(),
        max_tokens: Some(max_tokens),
        stop: Vec::new(),
        grammar: None,
        logprobs: None,
    }
}

/// A finished generation.
#[derive(Debug, Clone)]
pub struct Output {
    pub text: String,
    pub pieces: Vec<String>,
    pub tokens: Vec<i32>,
    pub reason: StopReason,
    pub timings: Timings,
    pub prompt_tokens: u32,
}

/// Runs a request to completion.
pub async fn run(engine: &dyn Engine, req: GenerateRequest) -> Output {
    let mut generation = engine.generate(req).await.expect("generate");
    let prompt_tokens = generation.prompt_tokens;
    let mut out = Output {
        text: String::new(),
        pieces: Vec::new(),
        tokens: Vec::new(),
        reason: StopReason::Cancelled,
        timings: Timings::default(),
        prompt_tokens,
    };
    let mut done = false;
    while let Some(ev) = generation.next().await {
        assert!(!done, "an event after Done");
        match ev {
            GenEvent::Text { piece, tokens, .. } => {
                assert!(!piece.is_empty(), "empty text piece");
                out.text.push_str(&piece);
                out.pieces.push(piece);
                out.tokens.extend(tokens);
            }
            GenEvent::Done { reason, timings } => {
                out.reason = reason;
                out.timings = timings;
                done = true;
            }
            GenEvent::Failed { error, .. } => panic!("the engine failed: {error}"),
        }
    }
    assert!(done, "the stream ended without Done");
    out
}
