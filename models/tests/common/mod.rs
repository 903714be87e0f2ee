//! Shared helpers for the models integration tests.
//!
//! Models are located through environment variables that `scripts/models-env.sh` prints
//! (`eval "$(scripts/models-env.sh)"` before `cargo test --release -p models`). A missing
//! variable or file fails the test with that instruction instead of skipping silently.

#![allow(dead_code)]

use std::path::PathBuf;

use models::{
    Engine, GenEvent, GenerateRequest, Prompt, Sampling, StopReason, Timings, TokenLogprob,
};

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
    /// One entry per token when the request asked for log probabilities.
    pub logprobs: Vec<TokenLogprob>,
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
        logprobs: Vec::new(),
        reason: StopReason::Cancelled,
        timings: Timings::default(),
        prompt_tokens,
    };
    let mut done = false;
    while let Some(ev) = generation.next().await {
        assert!(!done, "an event after Done");
        match ev {
            GenEvent::Text {
                piece,
                tokens,
                logprobs,
            } => {
                assert!(!piece.is_empty(), "empty text piece");
                out.text.push_str(&piece);
                out.pieces.push(piece);
                out.tokens.extend(tokens);
                out.logprobs.extend(logprobs);
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

/// How close a reference's two most likely tokens must be for another batch shape to pick the
/// other one. llama.cpp's kernels sum in an order that depends on how many tokens a batch
/// holds, so logits differ in their last bits between batch shapes (it is not
/// batch-invariant). Measured on the tiny GGUF: a token's log probability moved by up to
/// 0.003 between a one-sequence and an eight-sequence batch, and a tie 0.001 apart flipped.
pub const TIE: f32 = 0.01;

/// How far a token's log probability may drift between batch shapes before they part.
pub const DRIFT: f32 = 0.01;

/// Asserts that `got` equals the reference `want` token for token, except that from a
/// position where one of them had its two most likely tokens tied within [`TIE`] they may
/// part; up to there each token's log probability agrees within [`DRIFT`]. Both must have
/// asked for at least two alternatives per token.
pub fn assert_same_but_for_ties(got: &Output, want: &Output, what: &str) {
    for o in [got, want] {
        assert_eq!(o.logprobs.len(), o.tokens.len(), "{what}: ask for logprobs");
    }
    let k = (0..got.tokens.len().max(want.tokens.len()))
        .find(|&i| got.tokens.get(i) != want.tokens.get(i));
    let Some(k) = k else {
        assert_eq!(
            got.reason, want.reason,
            "{what}: same tokens, another ending"
        );
        assert_eq!(got.text, want.text, "{what}");
        return;
    };
    for i in 0..k {
        let (a, b) = (got.logprobs[i].logprob, want.logprobs[i].logprob);
        assert!(
            (a - b).abs() <= DRIFT,
            "{what}: token {i}'s log probability {a} against {b}"
        );
    }
    let gap = |o: &Output| {
        o.logprobs.get(k).map(|lp| {
            assert!(lp.top.len() >= 2, "{what}: ask for two alternatives");
            lp.top[0].logprob - lp.top[1].logprob
        })
    };
    let gaps = (gap(want), gap(got));
    assert!(
        [gaps.0, gaps.1].into_iter().flatten().any(|g| g <= TIE),
        "{what}: the sequences part at token {k} with no near tie there (gaps {gaps:?})\n  got:  {:?} {:?}\n  want: {:?} {:?}",
        got.tokens,
        got.reason,
        want.tokens,
        want.reason
    );
}
