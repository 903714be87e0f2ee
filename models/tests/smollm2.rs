//! One integration test on the real default model: SmolLM2-135M-Instruct, greedy.

mod common;

use common::{model_path, run};
use models::{
    ChatMessage, Engine, GenerateRequest, LlamaEngine, LoadOptions, Prompt, Sampling, StopReason,
};

#[tokio::test]
async fn smollm2_answers_a_short_question() {
    let mut opts = LoadOptions::new(model_path("BELLOWS_SMOLLM2_GGUF"));
    opts.threads = Some(2);
    opts.n_ctx = Some(1024);
    let e = LlamaEngine::load(opts).expect("load SmolLM2");
    assert_eq!(e.info().profile, "smollm2-135m-instruct");
    let req = GenerateRequest {
        prompt: Prompt::Chat {
            messages: vec![ChatMessage::new(
                "user".to_owned(),
                "What is the capital of France? Answer in one word.".to_owned(),
            )],
            tools: vec![],
        },
        sampling: Sampling::default(),
        max_tokens: Some(24),
        stop: vec![],
        grammar: None,
        logprobs: None,
    };
    let out = run(&e, req.clone()).await;
    assert!(out.text.contains("Paris"), "{:?}", out.text);
    assert_eq!(out.reason, StopReason::Eog, "{out:?}");
    assert!(!out.text.contains("<|im_end|>"));

    // The same question again reuses the whole prompt but its last token.
    let again = run(&e, req).await;
    assert_eq!(again.timings.cached_tokens, again.prompt_tokens - 1);
    assert!(again.text.contains("Paris"), "{:?}", again.text);
}
