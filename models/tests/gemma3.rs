//! Gemma 3 (sliding-window attention): the profile's turn-format template, and prefix reuse
//! that stays correct once the conversation is longer than the 512-token window.

mod common;

use common::{model_path, run, text_request};
use models::{ChatMessage, Engine, LlamaEngine, LoadOptions, Prompt, StopReason};

#[tokio::test]
async fn gemma3_prefix_cache_is_safe_past_the_sliding_window() {
    let mut opts = LoadOptions::new(model_path("BELLOWS_GEMMA3_GGUF"));
    opts.threads = Some(2);
    opts.n_ctx = Some(2048);
    let e = LlamaEngine::load(opts).expect("load Gemma 3");
    assert_eq!(e.info().profile, "gemma3-270m");
    let rendered = e
        .render_chat(&[ChatMessage::new("user".to_owned(), "Hi".to_owned())], &[])
        .expect("render");
    assert_eq!(
        rendered,
        "<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n"
    );

    // About 1300 tokens: the sliding-window layers keep only the last window plus a batch
    // (about 1024 positions), so the oldest entries get evicted.
    let sentence = "The river rose slowly through the night and the village waited. ";
    let history = sentence.repeat(100);
    let first = format!("{history}\nQuestion: what rose?\nAnswer:");
    let a = run(&e, text_request(&first, 4)).await;
    assert!(a.prompt_tokens > 1200, "{}", a.prompt_tokens);

    // The next turn extends the first prompt: the reused prefix must be one the window
    // still covers, and the answer must match a cold run's behaviour.
    let second = format!("{first} the river\nQuestion: when?\nAnswer:");
    let warm = run(&e, text_request(&second, 6)).await;
    assert!(
        warm.timings.cached_tokens > 0,
        "the prefix was reused: {:?}",
        warm.timings
    );
    let cold_engine = {
        let mut opts = LoadOptions::new(model_path("BELLOWS_GEMMA3_GGUF"));
        opts.threads = Some(2);
        opts.n_ctx = Some(2048);
        LlamaEngine::load(opts).expect("load Gemma 3")
    };
    let cold = run(&cold_engine, text_request(&second, 6)).await;
    assert_eq!(cold.timings.cached_tokens, 0);
    assert_eq!(warm.reason, cold.reason);
    // Float rounding differs between one long batch and a short one; the first words agree.
    let first_word = |s: &str| s.split_whitespace().next().map(str::to_owned);
    assert_eq!(
        first_word(&warm.text),
        first_word(&cold.text),
        "warm {:?} cold {:?}",
        warm.text,
        cold.text
    );

    // A prompt that shares only the first ~400 tokens: those positions' sliding-window
    // entries were evicted, so reusing them would be wrong; the slot re-evaluates instead.
    let diverging = format!("{}\nQuestion: what waited?\nAnswer:", sentence.repeat(30));
    let third = run(&e, text_request(&diverging, 2)).await;
    assert_eq!(third.timings.cached_tokens, 0, "{:?}", third.timings);

    let chat = Prompt::Chat {
        messages: vec![ChatMessage::new("user".to_owned(), "Say hello.".to_owned())],
        tools: vec![],
    };
    let out = run(
        &e,
        models::GenerateRequest {
            prompt: chat,
            ..text_request("", 16)
        },
    )
    .await;
    assert!(matches!(
        out.reason,
        StopReason::Eog | StopReason::Stop | StopReason::MaxTokens
    ));
    assert!(!out.text.contains("<end_of_turn>"));
}
