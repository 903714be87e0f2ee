//! LlamaEngine on the tiny random-weight GGUF: loading, generation, stop strings, UTF-8,
//! prompt cache, slot routing, cancellation, queueing and grammars.

mod common;

use common::{Output, run, text_request, tiny};
use models::{
    Engine, EngineError, GenEvent, GrammarSpec, LlamaEngine, LoadOptions, Sampling, StopReason,
};

fn engine(slots: u32) -> LlamaEngine {
    let mut opts = LoadOptions::new(tiny());
    opts.threads = Some(1);
    opts.n_ctx = Some(2048);
    opts.slots = slots;
    LlamaEngine::load(opts).expect("load the tiny GGUF")
}

const PROMPT: &str =
    "<|im_start|>user\nhello there, tell me a story<|im_end|>\n<|im_start|>assistant\n";

#[tokio::test]
async fn loads_and_generates_up_to_max_tokens() {
    let e = engine(1);
    assert_eq!(e.info().n_ctx, 2048);
    assert_eq!(e.info().n_ctx_train, 2048);
    assert_eq!(e.info().profile, "generic");
    let out = run(&e, text_request(PROMPT, 40)).await;
    assert_eq!(out.reason, StopReason::MaxTokens, "{out:?}");
    assert_eq!(out.timings.generated_tokens, 40);
    assert_eq!(
        out.prompt_tokens,
        e.tokenize(PROMPT).expect("tokenize").len() as u32
    );
    assert_eq!(out.timings.prompt_tokens, out.prompt_tokens);
    assert_eq!(out.timings.cached_tokens, 0);
    // The streamed text is exactly the detokenized token stream: no byte lost or duplicated
    // when characters straddle tokens.
    assert_eq!(out.text, e.detokenize(&out.tokens));
}

#[tokio::test]
async fn progress_is_reported_while_loading() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    let mut opts = LoadOptions::new(tiny());
    opts.n_ctx = Some(256);
    let _e = LlamaEngine::load_with_progress(opts, move |p| sink.lock().expect("lock").push(p))
        .expect("load");
    let seen = seen.lock().expect("lock");
    assert!(!seen.is_empty(), "no progress reported");
    assert_eq!(seen.last().copied(), Some(1.0));
}

#[tokio::test]
async fn stop_string_ends_generation_and_is_never_emitted() {
    let reference = run(&engine(1), text_request(PROMPT, 60)).await;
    // Take a stop string from the middle of what the model says anyway.
    let chars: Vec<char> = reference.text.chars().collect();
    assert!(
        chars.len() > 12,
        "too little text to cut: {:?}",
        reference.text
    );
    let stop: String = chars[8..11].iter().collect();
    let expected = &reference.text[..reference.text.find(&stop).expect("stop occurs")];

    let mut req = text_request(PROMPT, 60);
    req.stop = vec![stop.clone()];
    let out = run(&engine(1), req).await;
    assert_eq!(out.reason, StopReason::Stop);
    assert_eq!(out.text, expected);
}

#[tokio::test]
async fn prompt_cache_evaluates_only_the_suffix_and_matches_a_cold_run() {
    let e = engine(1);
    let first = run(&e, text_request(PROMPT, 20)).await;
    assert_eq!(first.timings.cached_tokens, 0);

    // The next turn extends the first prompt. It starts with a special token, so the first
    // prompt's tokens stay a prefix of the second's.
    let second_prompt = format!(
        "{PROMPT}<|im_end|>\n<|im_start|>user\nand then?<|im_end|>\n<|im_start|>assistant\n"
    );
    let second_tokens = e.tokenize(&second_prompt).expect("tokenize");
    let first_tokens = e.tokenize(PROMPT).expect("tokenize");
    assert!(second_tokens.starts_with(&first_tokens));
    let cache = e.slot_caches()[0].clone();
    let shared = cache
        .iter()
        .zip(&second_tokens)
        .take_while(|(a, b)| a == b)
        .count();
    assert_eq!(
        shared,
        first_tokens.len(),
        "the cache holds the first prompt, then the reply"
    );

    let warm = run(&e, text_request(&second_prompt, 20)).await;
    assert_eq!(warm.timings.cached_tokens as usize, shared);
    assert_eq!(warm.prompt_tokens as usize, second_tokens.len());

    let cold = run(&engine(1), text_request(&second_prompt, 20)).await;
    assert_eq!(cold.timings.cached_tokens, 0);
    assert_eq!(warm.reason, cold.reason);
    assert_eq!(warm.timings.generated_tokens, cold.timings.generated_tokens);
    assert_eq!(warm.text, cold.text, "cached and cold greedy runs differ");
}

#[tokio::test]
async fn identical_prompt_reuses_all_but_the_last_token() {
    let e = engine(1);
    let a = run(&e, text_request(PROMPT, 5)).await;
    let b = run(&e, text_request(PROMPT, 5)).await;
    assert_eq!(b.timings.cached_tokens, a.prompt_tokens - 1);
    assert_eq!(a.text, b.text);
}

#[tokio::test]
async fn requests_go_to_the_slot_holding_their_prefix() {
    let e = engine(2);
    let conv_a = "<|im_start|>user\nfirst conversation about apples<|im_end|>\n";
    let conv_b = "<|im_start|>user\nsecond conversation, on bicycles<|im_end|>\n";
    run(&e, text_request(conv_a, 4)).await;
    run(&e, text_request(conv_b, 4)).await;
    let caches = e.slot_caches();
    let ta = e.tokenize(conv_a).expect("tokenize");
    let tb = e.tokenize(conv_b).expect("tokenize");
    // The second conversation went to the empty slot instead of evicting the first.
    assert!(caches[0].starts_with(&ta), "slot 0 holds conversation A");
    assert!(caches[1].starts_with(&tb), "slot 1 holds conversation B");

    let next_b = run(&e, text_request(&format!("{conv_b}more about bicycles"), 4)).await;
    assert!(
        next_b.timings.cached_tokens as usize >= tb.len() - 1,
        "{:?}",
        next_b.timings
    );
    let next_a = run(&e, text_request(&format!("{conv_a}more about apples"), 4)).await;
    assert!(
        next_a.timings.cached_tokens as usize >= ta.len() - 1,
        "{:?}",
        next_a.timings
    );
    assert!(e.slot_caches()[0].starts_with(&ta));
    assert!(e.slot_caches()[1].starts_with(&tb));
}

/// A grammar that never lets the model end, so only max_tokens or cancellation stops it.
fn endless() -> GrammarSpec {
    GrammarSpec::Strict {
        gbnf: "root ::= [a-z] root".to_owned(),
        root: "root".to_owned(),
    }
}

/// Polls until `f` holds; the engine's slots finish on their own threads.
async fn eventually(what: &str, f: impl Fn() -> bool) {
    for _ in 0..2000 {
        if f() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    panic!("timed out waiting until {what}");
}

#[tokio::test]
async fn dropping_the_generation_cancels_it() {
    let reference = run(&engine(1), grammar_request(endless(), 1500)).await;
    assert_eq!(
        reference.reason,
        StopReason::MaxTokens,
        "left alone it runs to max_tokens"
    );
    assert_eq!(reference.timings.generated_tokens, 1500);

    let e = engine(1);
    let mut g = e
        .generate(grammar_request(endless(), 1500))
        .await
        .expect("generate");
    let prompt_tokens = g.prompt_tokens as usize;
    assert!(matches!(g.next().await, Some(GenEvent::Text { .. })));
    drop(g);
    // The slot publishes its cache when the job ends: the prompt plus what was generated
    // before the drop took effect. The slot may run ahead of the reader by the event buffer
    // (64 events) and then stops at its next token.
    eventually("the cancelled job ends", || !e.slot_caches()[0].is_empty()).await;
    let generated = e.slot_caches()[0].len() - prompt_tokens;
    assert!(
        generated <= 1 + 64 + 1,
        "cancellation took {generated} tokens"
    );
    // The slot is free for the next request.
    let after = run(&e, text_request(PROMPT, 2)).await;
    assert_eq!(after.timings.generated_tokens, 2);
}

#[tokio::test]
async fn a_full_queue_refuses_new_requests() {
    let mut opts = LoadOptions::new(tiny());
    opts.threads = Some(1);
    opts.n_ctx = Some(2048);
    opts.queue_capacity = 1;
    let e = LlamaEngine::load(opts).expect("load");
    // The first occupies the slot (and blocks once its unread events fill the buffer), the
    // second waits in the queue, the third finds the queue full.
    let g1 = e.generate(text_request(PROMPT, 1500)).await.expect("first");
    let g2 = e.generate(text_request(PROMPT, 10)).await.expect("second");
    match e.generate(text_request(PROMPT, 10)).await {
        Err(EngineError::QueueFull { capacity: 1 }) => {}
        other => panic!("expected QueueFull, got {other:?}"),
    }
    drop(g1);
    drop(g2);
    // Once the cancelled requests have left the slot and the queue, requests are admitted.
    let mut admitted = None;
    for _ in 0..2000 {
        match e.generate(text_request(PROMPT, 3)).await {
            Ok(g) => {
                admitted = Some(g);
                break;
            }
            Err(EngineError::QueueFull { .. }) => {
                tokio::time::sleep(std::time::Duration::from_millis(5)).await
            }
            Err(other) => panic!("{other}"),
        }
    }
    let mut g = admitted.expect("admitted once the queue drained");
    let mut generated = 0;
    while let Some(ev) = g.next().await {
        if let GenEvent::Done { timings, .. } = ev {
            generated = timings.generated_tokens;
        }
    }
    assert_eq!(generated, 3);
}

#[tokio::test]
async fn prompt_longer_than_the_context_is_refused_with_both_counts() {
    let mut opts = LoadOptions::new(tiny());
    opts.n_ctx = Some(64);
    let e = LlamaEngine::load(opts).expect("load");
    let long = "word ".repeat(100);
    let n = e.tokenize(&long).expect("tokenize").len() as u32;
    match e.generate(text_request(&long, 4)).await {
        Err(
            err @ EngineError::PromptTooLong {
                prompt_tokens,
                n_ctx: 64,
            },
        ) => {
            assert_eq!(prompt_tokens, n);
            let msg = err.to_string();
            assert!(msg.contains(&n.to_string()) && msg.contains("64"), "{msg}");
        }
        other => panic!("expected PromptTooLong, got {other:?}"),
    }
}

#[tokio::test]
async fn generation_stops_when_the_context_fills() {
    let mut opts = LoadOptions::new(tiny());
    opts.n_ctx = Some(48);
    let e = LlamaEngine::load(opts).expect("load");
    let mut req = text_request(PROMPT, 1);
    req.max_tokens = None;
    let out = run(&e, req).await;
    assert_eq!(out.reason, StopReason::ContextFull, "{out:?}");
    assert!(out.prompt_tokens + out.timings.generated_tokens <= 49);
}

fn grammar_request(grammar: GrammarSpec, max_tokens: u32) -> models::GenerateRequest {
    let mut req = text_request(PROMPT, max_tokens);
    req.grammar = Some(grammar);
    req
}

#[tokio::test]
async fn strict_grammar_output_parses() {
    let e = engine(1);
    let gbnf = r#"root ::= ("yes" | "no") "." [0-9] [0-9]?"#.to_owned();
    for seed in 0..4 {
        let mut req = grammar_request(
            GrammarSpec::Strict {
                gbnf: gbnf.clone(),
                root: "root".to_owned(),
            },
            50,
        );
        req.sampling = Sampling {
            temperature: 1.0,
            seed: Some(seed),
            ..Sampling::default()
        };
        let out = run(&e, req).await;
        let t = out.text.as_str();
        let body = t
            .strip_prefix("yes.")
            .or_else(|| t.strip_prefix("no."))
            .unwrap_or_else(|| panic!("{t:?}"));
        assert!(
            !body.is_empty() && body.len() <= 2 && body.bytes().all(|b| b.is_ascii_digit()),
            "{t:?}"
        );
        assert_eq!(
            out.reason,
            StopReason::Eog,
            "the grammar ends the output: {out:?}"
        );
    }
}

#[tokio::test]
async fn lazy_grammar_switches_on_at_its_trigger() {
    let e = engine(1);
    let gbnf = r#"root ::= "@" [0-9] [0-9] [0-9]"#.to_owned();
    let mut req = grammar_request(
        GrammarSpec::Lazy {
            gbnf,
            root: "root".to_owned(),
            triggers: vec!["@".to_owned()],
        },
        1500,
    );
    req.sampling = Sampling {
        temperature: 1.0,
        seed: Some(7),
        ..Sampling::default()
    };
    let out = run(&e, req).await;
    let at = out
        .text
        .find('@')
        .unwrap_or_else(|| panic!("no trigger in {:?}", out.text));
    let tail = &out.text[at..];
    assert_eq!(tail.len(), 4, "{tail:?}");
    assert!(tail[1..].bytes().all(|b| b.is_ascii_digit()), "{tail:?}");
    assert_eq!(out.reason, StopReason::Eog);
}

#[tokio::test]
async fn json_schema_output_parses_and_fits_the_schema() {
    let e = engine(1);
    let schema = serde_json::json!({
        "type": "object",
        "properties": { "ok": { "type": "boolean" }, "n": { "type": "integer", "minimum": 0, "maximum": 9 } },
        "required": ["ok", "n"],
        "additionalProperties": false
    });
    for seed in 0..3 {
        let mut req = grammar_request(GrammarSpec::JsonSchema(schema.clone()), 200);
        req.sampling = Sampling {
            temperature: 1.0,
            seed: Some(seed),
            ..Sampling::default()
        };
        let out = run(&e, req).await;
        let v: serde_json::Value =
            serde_json::from_str(&out.text).unwrap_or_else(|err| panic!("{err}: {:?}", out.text));
        assert!(v["ok"].is_boolean(), "{v}");
        assert!(v["n"].as_u64().is_some_and(|n| n <= 9), "{v}");
    }
}

#[tokio::test]
async fn invalid_grammar_and_schema_are_refused_before_streaming() {
    let e = engine(1);
    let bad = grammar_request(
        GrammarSpec::Strict {
            gbnf: "root ::= (\"a\"".to_owned(),
            root: "root".to_owned(),
        },
        5,
    );
    assert!(matches!(
        e.generate(bad).await,
        Err(EngineError::InvalidGrammar(_))
    ));
    let no_root = grammar_request(
        GrammarSpec::Strict {
            gbnf: "start ::= \"a\"".to_owned(),
            root: "root".to_owned(),
        },
        5,
    );
    assert!(matches!(
        e.generate(no_root).await,
        Err(EngineError::InvalidGrammar(_))
    ));
    let lazy_no_trigger = grammar_request(
        GrammarSpec::Lazy {
            gbnf: "root ::= \"a\"".to_owned(),
            root: "root".to_owned(),
            triggers: vec![],
        },
        5,
    );
    assert!(matches!(
        e.generate(lazy_no_trigger).await,
        Err(EngineError::InvalidGrammar(_))
    ));
    let bad_schema = grammar_request(
        GrammarSpec::JsonSchema(serde_json::json!({"$ref": "#/definitions/missing"})),
        5,
    );
    assert!(matches!(
        e.generate(bad_schema).await,
        Err(EngineError::InvalidSchema(_))
    ));
    // The engine still works afterwards.
    let out: Output = run(&e, text_request(PROMPT, 2)).await;
    assert_eq!(out.timings.generated_tokens, 2);
}

#[tokio::test]
async fn chat_prompts_render_through_the_gguf_template() {
    let e = engine(1);
    let messages = vec![
        models::ChatMessage::new("system".to_owned(), "Be brief.".to_owned()),
        models::ChatMessage::new("user".to_owned(), "Hi".to_owned()),
    ];
    let text = e.render_chat(&messages, &[]).expect("render");
    assert_eq!(
        text,
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    );
    let req = models::GenerateRequest {
        prompt: models::Prompt::Chat {
            messages,
            tools: vec![],
        },
        ..text_request("", 3)
    };
    let out = run(&e, req).await;
    assert_eq!(
        out.prompt_tokens as usize,
        e.tokenize(&text).expect("tokenize").len()
    );
}

#[tokio::test]
async fn empty_prompt_is_refused() {
    let e = engine(1);
    assert!(matches!(
        e.generate(text_request("", 3)).await,
        Err(EngineError::Tokenize(_))
    ));
}

#[tokio::test]
async fn seeded_sampling_is_reproducible_and_odd_values_are_harmless() {
    let sampling = |seed| Sampling {
        temperature: 0.9,
        top_p: 0.95,
        top_k: 40,
        min_p: 0.05,
        repeat_penalty: 1.1,
        seed: Some(seed),
        ..Sampling::default()
    };
    let mut req = text_request(PROMPT, 40);
    req.sampling = sampling(1);
    let a = run(&engine(1), req.clone()).await;
    let b = run(&engine(1), req.clone()).await;
    assert_eq!(a.text, b.text, "the same seed gives the same text");
    let mut outputs = std::collections::BTreeSet::new();
    for seed in 1..5 {
        req.sampling = sampling(seed);
        outputs.insert(run(&engine(1), req.clone()).await.tokens);
    }
    assert!(outputs.len() > 1, "different seeds give different samples");

    req.sampling = Sampling {
        temperature: f32::NAN,
        top_p: f32::NAN,
        top_k: -3,
        min_p: 7.0,
        repeat_penalty: -1.0,
        frequency_penalty: f32::NAN,
        presence_penalty: f32::INFINITY,
        seed: Some(0),
        logit_bias: Vec::new(),
        dry: models::Dry::default(),
        ignore_eos: false,
    };
    let odd = run(&engine(1), req).await;
    assert_eq!(odd.timings.generated_tokens, 40);
}

#[tokio::test]
async fn a_consumer_that_stops_reading_is_cancelled_after_the_write_stall() {
    let mut opts = LoadOptions::new(tiny());
    opts.threads = Some(1);
    opts.n_ctx = Some(2048);
    opts.write_stall = std::time::Duration::from_millis(200);
    let e = LlamaEngine::load(opts).expect("load");
    // Never read: the slot fills the 64-event buffer and then finds no room.
    let mut stalled = e
        .generate(grammar_request(endless(), 1500))
        .await
        .expect("generate");
    // On a one-slot engine this runs only once the stalled generation has left the slot.
    // The timeout guards against a hang (the old behaviour); it measures nothing.
    let after = tokio::time::timeout(
        std::time::Duration::from_secs(120),
        run(&e, text_request(PROMPT, 3)),
    )
    .await
    .expect("the stalled generation never freed the slot");
    assert_eq!(after.timings.generated_tokens, 3);
    // The stalled stream holds what fit in its buffer, then says it was cancelled.
    let mut pieces = 0;
    let mut end = None;
    while let Some(ev) = stalled.next().await {
        match ev {
            GenEvent::Text { .. } => pieces += 1,
            GenEvent::Done { reason, timings } => end = Some((reason, timings)),
            GenEvent::Failed { error, .. } => panic!("{error}"),
        }
    }
    assert_eq!(pieces, 64, "the buffer filled, then the slot gave up");
    let (reason, timings) = end.expect("a stalled stream still ends with Done");
    assert_eq!(reason, StopReason::Cancelled);
    assert!(timings.generated_tokens < 1500, "{timings:?}");
}

/// Every `Text` event of a request, in order.
async fn text_events(e: &LlamaEngine, req: models::GenerateRequest) -> Vec<GenEvent> {
    let mut g = e.generate(req).await.expect("generate");
    let mut out = Vec::new();
    while let Some(ev) = g.next().await {
        match ev {
            GenEvent::Text { .. } => out.push(ev),
            GenEvent::Done { .. } => {}
            GenEvent::Failed { error, .. } => panic!("{error}"),
        }
    }
    out
}

#[tokio::test]
async fn logprobs_score_each_token_with_sorted_alternatives() {
    let e = engine(1);
    for (n, sampling) in [
        (5, Sampling::default()),
        (0, Sampling::default()),
        (
            3,
            Sampling {
                temperature: 1.0,
                seed: Some(3),
                ..Sampling::default()
            },
        ),
    ] {
        let greedy = sampling.temperature == 0.0;
        let mut req = text_request(PROMPT, 30);
        req.sampling = sampling;
        req.logprobs = Some(n);
        let events = text_events(&e, req).await;
        let mut scored = 0;
        let (mut all_bytes, mut all_tokens) = (Vec::new(), Vec::new());
        for ev in &events {
            let GenEvent::Text {
                tokens, logprobs, ..
            } = ev
            else {
                unreachable!()
            };
            assert_eq!(logprobs.len(), tokens.len(), "one entry per token");
            for (lp, &t) in logprobs.iter().zip(tokens) {
                scored += 1;
                assert_eq!(lp.token, t);
                all_bytes.extend_from_slice(&lp.bytes);
                all_tokens.push(t);
                assert!(lp.logprob <= 0.0 && lp.logprob.is_finite(), "{lp:?}");
                assert_eq!(lp.top.len(), n as usize, "{lp:?}");
                assert!(
                    lp.top.windows(2).all(|w| w[0].logprob >= w[1].logprob),
                    "{lp:?}"
                );
                assert!(lp.top.iter().all(|x| x.logprob <= 0.0), "{lp:?}");
                if greedy && n > 0 {
                    assert_eq!(lp.top[0].token, t, "greedy picks the most likely: {lp:?}");
                    assert_eq!(lp.top[0].logprob, lp.logprob);
                } else if let Some(first) = lp.top.first() {
                    assert!(first.logprob >= lp.logprob, "{lp:?}");
                }
            }
        }
        assert!(scored > 0);
        assert_eq!(
            String::from_utf8_lossy(&all_bytes),
            e.detokenize(&all_tokens),
            "each entry carries its token's bytes"
        );
    }

    // Without logprobs, entries are empty.
    for ev in text_events(&e, text_request(PROMPT, 10)).await {
        let GenEvent::Text { logprobs, .. } = ev else {
            unreachable!()
        };
        assert!(logprobs.is_empty());
    }
}

/// The token that completes a lazy grammar's trigger can carry text the grammar refuses (a
/// trigger `e` inside a word): llama.cpp then has no parse state left, and applying the grammar
/// again aborted the process. The generation must go on, unconstrained, to its end.
#[tokio::test]
async fn a_lazy_trigger_inside_a_token_the_grammar_refuses_does_not_abort() {
    let e = engine(1);
    let mut triggered = 0;
    for seed in 0..6 {
        let mut req = grammar_request(
            GrammarSpec::Lazy {
                gbnf: r#"root ::= "e" [0-9] [0-9] [0-9]"#.to_owned(),
                root: "root".to_owned(),
                triggers: vec!["e".to_owned()],
            },
            120,
        );
        req.sampling = Sampling {
            temperature: 1.0,
            seed: Some(seed),
            ..Sampling::default()
        };
        let out = run(&e, req).await;
        triggered += usize::from(out.text.contains('e'));
    }
    // Random weights write plenty of `e`s inside longer tokens.
    assert!(
        triggered >= 3,
        "the trigger fired in {triggered} of 6 replies"
    );
}

fn engine_with_attention(attention: models::Attention) -> Result<LlamaEngine, models::LoadError> {
    let mut opts = LoadOptions::new(tiny());
    opts.threads = Some(1);
    opts.n_ctx = Some(512);
    opts.attention = attention;
    LlamaEngine::load(opts)
}

/// `--flash-attn` and the float cache types reach llama.cpp: a context is made and generates
/// with each (the tiny model's 16-wide heads take every float type, flash attention or not).
#[tokio::test]
async fn flash_attention_and_float_cache_types_generate() {
    use models::{Attention, CacheType, FlashAttn};
    for (flash_attn, k, v) in [
        (FlashAttn::Off, CacheType::F16, CacheType::F16),
        (FlashAttn::On, CacheType::F16, CacheType::F16),
        (FlashAttn::On, CacheType::F32, CacheType::F32),
        (FlashAttn::Off, CacheType::Bf16, CacheType::F32),
    ] {
        let a = Attention {
            flash_attn,
            cache_type_k: k,
            cache_type_v: v,
        };
        let e = engine_with_attention(a).unwrap_or_else(|err| panic!("{a}: {err}"));
        let out = run(&e, text_request(PROMPT, 8)).await;
        assert_eq!(out.timings.generated_tokens, 8, "{a}: {out:?}");
    }
}

/// What llama.cpp would refuse is refused first or named: a quantized V cache without flash
/// attention (every model), and a quantized cache whose block does not divide this model's
/// 16-wide heads (llama.cpp's own refusal, with the settings in the error).
#[test]
fn impossible_attention_settings_are_refused_with_the_settings_named() {
    use models::{Attention, CacheType, FlashAttn, LoadError};
    let Err(err) = engine_with_attention(Attention {
        flash_attn: FlashAttn::Off,
        cache_type_k: CacheType::F16,
        cache_type_v: CacheType::Q8_0,
    }) else {
        panic!("a quantized V cache without flash attention is refused");
    };
    assert!(matches!(err, LoadError::InvalidOption(_)), "{err:?}");
    assert!(err.to_string().contains("--cache-type-v q8_0"), "{err}");

    let Err(err) = engine_with_attention(Attention {
        flash_attn: FlashAttn::Auto,
        cache_type_k: CacheType::Q8_0,
        cache_type_v: CacheType::Q8_0,
    }) else {
        panic!("q8_0's 32-wide blocks do not divide 16-wide heads");
    };
    assert!(matches!(err, LoadError::Context { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("--flash-attn auto --cache-type-k q8_0 --cache-type-v q8_0"),
        "{err}"
    );
}

/// An idle sequence's cache is parked in host memory while another runs, and restored when its
/// conversation comes back: the prefix is reused and the reply is the one an engine that never
/// parked it gives.
#[tokio::test]
async fn a_parked_cache_comes_back_and_gives_the_same_reply() {
    let conv_a = "<|im_start|>user\nfirst conversation about apples<|im_end|>\n";
    let conv_b = "<|im_start|>user\nsecond conversation, on bicycles<|im_end|>\n";
    let next_a = format!("{conv_a}more about apples, and pears");

    // One slot: A's cache stays in the context between its two turns.
    let one = engine(1);
    run(&one, text_request(conv_a, 4)).await;
    let kept = run(&one, text_request(&next_a, 24)).await;

    // Two slots: B's turn parks A's cache; A's next turn brings it back.
    let two = engine(2);
    run(&two, text_request(conv_a, 4)).await;
    run(&two, text_request(conv_b, 4)).await;
    let restored = run(&two, text_request(&next_a, 24)).await;

    assert!(kept.timings.cached_tokens > 0, "{:?}", kept.timings);
    assert_eq!(restored.timings.cached_tokens, kept.timings.cached_tokens);
    assert_eq!(restored.tokens, kept.tokens);
    // B's cache, parked in turn, is still routed to and reused.
    let next_b = run(&two, text_request(&format!("{conv_b}more on bicycles"), 4)).await;
    let tb = two.tokenize(conv_b).expect("tokenize");
    assert!(
        next_b.timings.cached_tokens as usize >= tb.len() - 1,
        "{:?}",
        next_b.timings
    );
}

/// A parked cache that no longer fits beside another idle one (the first restore fails for
/// want of cells) is restored once that one is parked in turn, and the reply equals a cold
/// run's.
#[tokio::test]
async fn a_parked_cache_in_a_full_context_is_restored_after_the_others_are_parked() {
    let long = |topic: &str| {
        format!(
            "<|im_start|>user\n{}<|im_end|>\n",
            format!("tell me about {topic}, ").repeat(6)
        )
    };
    let (conv_a, conv_b) = (long("apples"), long("bicycles"));
    let mut opts = LoadOptions::new(tiny());
    opts.threads = Some(1);
    opts.slots = 2;
    opts.n_ctx = Some(256);
    opts.n_ctx_seq = Some(256);
    let e = LlamaEngine::load(opts).expect("load the tiny GGUF");
    let ta = e.tokenize(&conv_a).expect("tokenize").len();
    let tb = e.tokenize(&conv_b).expect("tokenize").len();
    assert!(
        ta + tb > 256 - 16,
        "the two caches must not fit side by side: {ta} + {tb}"
    );

    run(&e, text_request(&conv_a, 4)).await;
    run(&e, text_request(&conv_b, 4)).await;
    let next_a = format!("{conv_a}more about apples");
    let again = run(&e, text_request(&next_a, 8)).await;
    let mut cold_opts = LoadOptions::new(tiny());
    cold_opts.threads = Some(1);
    cold_opts.n_ctx = Some(256);
    let cold = run(
        &LlamaEngine::load(cold_opts).expect("load"),
        text_request(&next_a, 8),
    )
    .await;
    assert!(
        again.timings.cached_tokens as usize >= ta - 1,
        "A's cache was not restored: {:?}",
        again.timings
    );
    assert_eq!(again.reason, cold.reason);
    assert_eq!(again.text, cold.text, "{:?}", again.timings);
}

/// The real back-end registry: every build has the CPU back end, and it is no offload target.
#[test]
fn this_process_reports_the_cpu_device() {
    models::llama::backend().expect("backend initialises");
    let found = models::gpu::devices();
    assert!(
        found.iter().any(|d| !d.is_offload_target()),
        "no CPU device among {found:?}"
    );
}

/// A parked cache that shares only a few tokens with the new prompt (fewer than the engine's
/// restore threshold, 32) is dropped, not copied back in and cut: the prompt reuses at most
/// what another sequence's cells give, and the reply is a cold run's.
#[tokio::test]
async fn a_parked_cache_sharing_a_few_tokens_is_dropped_not_restored() {
    let conv_a = "<|im_start|>user\nabout apples and pears in the orchard<|im_end|>\n";
    let conv_b = format!(
        "<|im_start|>system\n{}<|im_end|>\n<|im_start|>user\nbicycles<|im_end|>\n",
        "a long system text about many things, ".repeat(4)
    );
    let conv_c = "<|im_start|>user\nabout apples, then nothing else at all<|im_end|>\n";
    let e = engine(2);
    run(&e, text_request(conv_a, 4)).await;
    run(&e, text_request(&conv_b, 4)).await; // parks A
    let ta = e.tokenize(conv_a).expect("tokenize");
    let tb = e.tokenize(&conv_b).expect("tokenize");
    let tc = e.tokenize(conv_c).expect("tokenize");
    let shared_a = ta.iter().zip(&tc).take_while(|(x, y)| x == y).count();
    let shared_b = tb.iter().zip(&tc).take_while(|(x, y)| x == y).count();
    assert!(
        shared_a > shared_b && shared_a < 32,
        "the prompts must share a few tokens with A, fewer with B: {shared_a}, {shared_b}"
    );

    let out = run(&e, text_request(conv_c, 8)).await;
    // C lands on A's sequence (it gains most there), but A's cache is not brought back.
    assert!(e.slot_caches()[0].starts_with(&tc), "C ran on A's sequence");
    assert!(
        (out.timings.cached_tokens as usize) <= shared_b,
        "a {shared_a}-token prefix was restored: {:?}",
        out.timings
    );
    let cold = run(&engine(1), text_request(conv_c, 8)).await;
    assert_eq!(out.text, cold.text);
}
