//! One integration test on the real default model: SmolLM2-135M-Instruct, greedy.

mod common;

use common::{assert_same_but_for_ties, model_path, run};
use models::{
    ChatMessage, Engine, GenerateRequest, LlamaEngine, LoadOptions, Prompt, Sampling, StopReason,
};

/// A one-word question SmolLM2 answers greedily ("Paris").
fn capital_question() -> GenerateRequest {
    GenerateRequest {
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
    }
}

#[tokio::test]
async fn smollm2_answers_a_short_question() {
    let mut opts = LoadOptions::new(model_path("BELLOWS_SMOLLM2_GGUF"));
    opts.threads = Some(2);
    opts.n_ctx = Some(1024);
    let e = LlamaEngine::load(opts).expect("load SmolLM2");
    assert_eq!(e.info().profile, "smollm2-135m-instruct");
    let req = capital_question();
    let out = run(&e, req.clone()).await;
    assert!(out.text.contains("Paris"), "{:?}", out.text);
    assert_eq!(out.reason, StopReason::Eog, "{out:?}");
    assert!(!out.text.contains("<|im_end|>"));

    // The same question again reuses the whole prompt but its last token.
    let again = run(&e, req).await;
    assert_eq!(again.timings.cached_tokens, again.prompt_tokens - 1);
    assert!(again.text.contains("Paris"), "{:?}", again.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn smollm2_batched_replies_equal_sequential_ones() {
    let load = |slots: u32| {
        let mut opts = LoadOptions::new(model_path("BELLOWS_SMOLLM2_GGUF"));
        opts.threads = Some(2);
        opts.n_ctx = Some(1024 * slots);
        opts.slots = slots;
        std::sync::Arc::new(LlamaEngine::load(opts).expect("load SmolLM2"))
    };
    let questions = [
        "Name three primary colours.",
        "What is two plus two?",
        "Write one sentence about the sea.",
        "Which planet is the largest?",
    ];
    let request = |q: &str| GenerateRequest {
        prompt: Prompt::Chat {
            messages: vec![ChatMessage::new("user", q)],
            tools: vec![],
        },
        sampling: Sampling::default(),
        max_tokens: Some(24),
        stop: vec![],
        grammar: None,
        // Two alternatives per token, so a near tie can be told from a wrong token.
        logprobs: Some(2),
    };
    let one = load(1);
    let mut want = Vec::new();
    for q in questions {
        want.push(run(one.as_ref(), request(q)).await);
    }
    drop(one);
    let four = load(4);
    let tasks: Vec<_> = questions
        .iter()
        .map(|q| {
            let (e, r) = (std::sync::Arc::clone(&four), request(q));
            tokio::spawn(async move { run(e.as_ref(), r).await })
        })
        .collect();
    for (i, t) in tasks.into_iter().enumerate() {
        let got = t.await.expect("task");
        assert_same_but_for_ties(&got, &want[i], &format!("{:?}", questions[i]));
    }
}

#[tokio::test]
async fn smollm2_lookup_decoding_keeps_the_reply_and_accepts_copied_tokens() {
    let load = |lookup: models::Lookup| {
        let mut opts = LoadOptions::new(model_path("BELLOWS_SMOLLM2_GGUF"));
        opts.threads = Some(2);
        opts.n_ctx = Some(1024);
        opts.lookup = lookup;
        LlamaEngine::load(opts).expect("load SmolLM2")
    };
    let text = "def area(width, height):\n    return width * height\n\n\ndef perimeter(width, height):\n    return 2 * (width + height)\n";
    let req = GenerateRequest {
        prompt: Prompt::Chat {
            messages: vec![ChatMessage::new(
                "user",
                format!("Copy this Python code exactly, in a code block:\n\n{text}"),
            )],
            tools: vec![],
        },
        sampling: Sampling::default(),
        max_tokens: Some(80),
        stop: vec![],
        grammar: None,
        logprobs: None,
    };
    let off = run(&load(models::Lookup::Off), req.clone()).await;
    let on = run(&load(models::Lookup::On), req).await;
    assert_eq!(on.tokens, off.tokens, "{:?} vs {:?}", on.text, off.text);
    assert!(
        on.timings.draft_accepted > 10,
        "{} of {} drafted tokens accepted; reply {:?}",
        on.timings.draft_accepted,
        on.timings.draft_tokens,
        on.text
    );
}

/// A quantized KV cache (q8_0 keys and values, flash attention left to llama.cpp, which turns
/// it on for the quantized V cache) still answers the question.
#[tokio::test]
async fn smollm2_answers_with_a_q8_0_kv_cache() {
    let mut opts = LoadOptions::new(model_path("BELLOWS_SMOLLM2_GGUF"));
    opts.threads = Some(2);
    opts.n_ctx = Some(512);
    opts.attention = models::Attention {
        flash_attn: models::FlashAttn::Auto,
        cache_type_k: models::CacheType::Q8_0,
        cache_type_v: models::CacheType::Q8_0,
    };
    let e = LlamaEngine::load(opts).expect("load SmolLM2 with a q8_0 cache");
    let req = capital_question();
    let out = run(&e, req).await;
    assert!(out.text.contains("Paris"), "{:?}", out.text);
}
