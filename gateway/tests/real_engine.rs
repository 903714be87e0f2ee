//! The gateway over the real llama.cpp engine, on the tiny random-weight GGUF (noise output,
//! milliseconds per token): grammars reach the engine, real token counts, cancellation frees
//! the only slot. Needs `scripts/fetch-models.sh tiny` (or `$BELLOWS_TINY_GGUF`).

#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use gateway::config::ServeArgs;
use gateway::state::AppState;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn start_tiny(ctx: u32) -> (TestServer, String) {
    start_tiny_slots(ctx, 1).await
}

async fn start_tiny_slots(ctx: u32, slots: u32) -> (TestServer, String) {
    start_tiny_with(ServeArgs {
        ctx: Some(ctx),
        parallel: Some(slots),
        ..ServeArgs::default()
    })
    .await
}

/// The tiny model with `args`, one thread.
async fn start_tiny_with(args: ServeArgs) -> (TestServer, String) {
    let args = ServeArgs {
        model: Some(tiny().to_string_lossy().into_owned()),
        threads: Some(1),
        ..args
    };
    let (engine, defaults) = gateway::serve::load_engine(&args.resolve().unwrap()).unwrap();
    let id = engine.info().id.clone();
    (
        start_state(AppState::new(engine).with_defaults(defaults)).await,
        id,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forced_tool_call_on_a_noise_model_still_decodes() {
    let (server, _) = start_tiny(2048).await;
    let tools = r#""tools":[{"type":"function","function":{"name":"pick","parameters":{"type":"object","properties":{"colour":{"enum":["red","green","blue"]}},"required":["colour"]}}}]"#;
    for choice in [
        r#""required""#,
        r#"{"type":"function","function":{"name":"pick"}}"#,
    ] {
        for stream in [false, true] {
            let body = format!(
                r#"{{"messages":[{{"role":"user","content":"pick one"}}],{tools},"tool_choice":{choice},"max_tokens":600,"stream":{stream}}}"#
            );
            let r = server.post("/v1/chat/completions", &body).await;
            assert_eq!(r.status, 200, "{}", r.text());
            let (name, args, finish) = if stream {
                let events = r.events();
                let mut name = String::new();
                let mut args = String::new();
                let mut finish = Value::Null;
                for e in &events {
                    if let Some(d) = e["choices"][0]["delta"]["tool_calls"].get(0) {
                        if let Some(n) = d["function"]["name"].as_str() {
                            name = n.to_owned();
                        }
                        args.push_str(d["function"]["arguments"].as_str().unwrap_or_default());
                    }
                    if !e["choices"][0]["finish_reason"].is_null() {
                        finish = e["choices"][0]["finish_reason"].clone();
                    }
                }
                (name, args, finish)
            } else {
                let v = r.json();
                let call = &v["choices"][0]["message"]["tool_calls"][0];
                (
                    call["function"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    call["function"]["arguments"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    v["choices"][0]["finish_reason"].clone(),
                )
            };
            assert_eq!(
                finish,
                "tool_calls",
                "{choice} stream={stream}: {}",
                r.text()
            );
            assert_eq!(name, "pick");
            let args: Value = serde_json::from_str(&args).unwrap();
            assert!(
                ["red", "green", "blue"].contains(&args["colour"].as_str().unwrap()),
                "{args}"
            );
        }
    }
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_response_format_is_enforced_and_bad_schemas_are_400() {
    let (server, _) = start_tiny(512).await;
    let body = r#"{"messages":[{"role":"user","content":"x"}],"max_tokens":64,"response_format":{"type":"json_schema","json_schema":{"name":"c","schema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"],"additionalProperties":false}}}}"#;
    let v = server.post("/v1/chat/completions", body).await.json();
    let content: Value =
        serde_json::from_str(v["choices"][0]["message"]["content"].as_str().unwrap()).unwrap();
    assert!(content["ok"].is_boolean(), "{content}");

    let bad = r##"{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"c","schema":{"type":"object","properties":{"a":{"$ref":"#/nowhere"}}}}}}"##;
    let r = server.post("/v1/chat/completions", bad).await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(
        ["invalid_schema", "invalid_grammar"].contains(&r.error_code().as_str()),
        "{}",
        r.text()
    );
    // The server still serves.
    let r = server
        .post("/v1/chat/completions", &chat_body_for(r#""max_tokens":4"#))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    server.stop().await.unwrap();
}

/// Lookup decoding's drafts are counted in `/metrics`: with `--lookup on` a reply that must
/// copy its prompt (a schema holding the prompt's sentence as a constant) drafts, and some
/// drafts are taken; with `--lookup off` nothing is drafted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookup_drafts_are_counted_in_metrics() {
    let sentence = "the quick brown fox jumps over the lazy dog and the quick brown fox sleeps";
    let body = format!(
        r#"{{"messages":[{{"role":"user","content":"Repeat: {sentence}"}}],"max_tokens":200,"temperature":0,"response_format":{{"type":"json_schema","json_schema":{{"name":"c","schema":{{"type":"object","properties":{{"say":{{"const":"{sentence}"}}}},"required":["say"],"additionalProperties":false}}}}}}}}"#
    );
    for (lookup, drafts) in [(models::Lookup::On, true), (models::Lookup::Off, false)] {
        let (server, _) = start_tiny_with(ServeArgs {
            ctx: Some(512),
            lookup: Some(lookup),
            ..ServeArgs::default()
        })
        .await;
        let v = server.post("/v1/chat/completions", &body).await.json();
        let content: Value =
            serde_json::from_str(v["choices"][0]["message"]["content"].as_str().unwrap()).unwrap();
        assert_eq!(content["say"], sentence, "{v}");
        let drafted = server.metric("bellows_lookup_draft_tokens_total").await;
        let taken = server.metric("bellows_lookup_accepted_tokens_total").await;
        let generated = server.metric("bellows_generated_tokens_total").await;
        if drafts {
            assert!(taken >= 4.0 && taken <= drafted, "{taken} of {drafted}");
            assert!(taken < generated, "{taken} taken, {generated} generated");
        } else {
            assert_eq!((drafted, taken), (0.0, 0.0));
        }
        server.stop().await.unwrap();
    }
}

fn chat_body_for(extra: &str) -> String {
    format!(r#"{{"messages":[{{"role":"user","content":"hello"}}],{extra}}}"#)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_token_counts_limits_and_tokenize() {
    let (server, id) = start_tiny(128).await;
    let r = server
        .post("/tokenize", r#"{"content":"hello world"}"#)
        .await;
    let n = r.json()["tokens"].as_array().unwrap().len();
    assert!(n >= 2, "{}", r.text());

    let body = chat_body_for(r#""max_tokens":5"#);
    let v = server.post("/v1/chat/completions", &body).await.json();
    assert_eq!(v["model"], id.as_str());
    assert!(v["usage"]["prompt_tokens"].as_u64().unwrap() > 2, "{v}");
    assert!(
        v["usage"]["completion_tokens"].as_u64().unwrap() <= 5,
        "{v}"
    );

    // The same conversation again: its prompt is served from the slot's cache.
    let v = server.post("/v1/chat/completions", &body).await.json();
    let cached = v["usage"]["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap();
    assert!(cached > 0, "{v}");
    assert!(server.metric("bellows_cached_prompt_tokens_total").await >= cached as f64);

    let long = format!(
        r#"{{"messages":[{{"role":"user","content":"{}"}}]}}"#,
        "hello ".repeat(300)
    );
    let r = server.post("/v1/chat/completions", &long).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.error_code(), "context_length_exceeded");
    let msg = r.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(msg.contains("128"), "{msg}");
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_stream_frees_the_only_slot() {
    let (server, _) = start_tiny(2048).await;
    // Greedy decoding is deterministic: left alone, this request generates `full` tokens.
    const GREEDY: &str = r#""max_tokens":1900,"temperature":0"#;
    let v = server
        .post("/v1/chat/completions", &chat_body_for(GREEDY))
        .await
        .json();
    let full = v["usage"]["completion_tokens"].as_u64().unwrap() as f64;
    assert!(full > 20.0, "{v}");
    assert_eq!(server.metric("bellows_generated_tokens_total").await, full);

    let body = chat_body_for(&format!(r#"{GREEDY},"stream":true"#));
    let mut s = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let req = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    // Wait for the first streamed token (the event after the role event): the generation is
    // under way. Then hang up.
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while String::from_utf8_lossy(&seen).matches("data: ").count() < 2 {
        let n = tokio::time::timeout(std::time::Duration::from_secs(60), s.read(&mut buf))
            .await
            .expect("the stream starts")
            .unwrap();
        assert!(
            n > 0,
            "closed before any event: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buf[..n]);
    }
    assert!(!String::from_utf8_lossy(&seen).contains("[DONE]"));
    drop(s);
    assert_eq!(
        wait_metric(&server, "bellows_cancellations_total", 1.0).await,
        1.0
    );
    // The engine's count for the cancelled request arrives once its slot let go of it, and it
    // is short of the `full` tokens the request would have made: the engine stopped (had it
    // carried on, the count would arrive only at its end, as `full`).
    let total = wait_metric_above(&server, "bellows_generated_tokens_total", full).await;
    let cancelled = total - full;
    assert!(
        cancelled >= 1.0 && cancelled < full,
        "total {total}, full {full}"
    );
    // With one slot, this request is served by the slot the cancelled one let go of.
    let r = server
        .post("/v1/chat/completions", &chat_body_for(r#""max_tokens":3"#))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(server.metric("bellows_busy_slots").await, 0.0);
    server.stop().await.unwrap();
}

/// `n` on the real engine, with more choices than slots (one waits in the queue): every
/// choice completes, the prompt is counted once, and seeded choices at temperature 1 differ.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_choices_share_the_slots() {
    let (server, _) = start_tiny_slots(512, 2).await;
    let one = server
        .post("/v1/chat/completions", &chat_body_for(r#""max_tokens":4"#))
        .await
        .json();
    let prompt = one["usage"]["prompt_tokens"].as_u64().unwrap();
    const SAMPLED: &str = r#""n":3,"seed":7,"temperature":1,"max_tokens":12"#;
    let v = server
        .post("/v1/chat/completions", &chat_body_for(SAMPLED))
        .await
        .json();
    let choices = v["choices"].as_array().unwrap();
    assert_eq!(choices.len(), 3, "{v}");
    let texts: Vec<&str> = choices
        .iter()
        .map(|c| c["message"]["content"].as_str().unwrap())
        .collect();
    assert!(
        texts[0] != texts[1] || texts[1] != texts[2],
        "three seeds, one sample: {v}"
    );
    assert_eq!(v["usage"]["prompt_tokens"], prompt, "{v}");
    let completion = v["usage"]["completion_tokens"].as_u64().unwrap();
    assert!((3..=36).contains(&completion), "{v}");
    assert_eq!(v["usage"]["total_tokens"], prompt + completion);

    let r = server
        .post(
            "/v1/chat/completions",
            &chat_body_for(&format!(r#"{SAMPLED},"stream":true"#)),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.text().matches("[DONE]").count(), 1);
    let events = r.events();
    for i in 0..3 {
        let finishes = events
            .iter()
            .filter(|e| {
                e["choices"][0]["index"] == i && !e["choices"][0]["finish_reason"].is_null()
            })
            .count();
        assert_eq!(finishes, 1, "choice {i}");
    }
    assert_eq!(server.metric("bellows_busy_slots").await, 0.0);
    assert_eq!(server.metric("bellows_queue_depth").await, 0.0);
    server.stop().await.unwrap();
}

/// `ignore_eos` holds on every request that sends it, and only on those. The logit bias
/// makes `<|im_end|>` (the tiny vocabulary's last token, id 264: scripts/make-tiny-gguf.py)
/// the certain pick, so a reply without `ignore_eos` ends at once; with it, each of two
/// requests in a row (and a streamed one) generates exactly `max_tokens` tokens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ignore_eos_holds_on_every_request() {
    let (server, _) = start_tiny(512).await;
    const EOS_FIRST: &str = r#""max_tokens":24,"temperature":0,"logit_bias":{"264":100}"#;
    let ends = |v: &Value| {
        (
            v["usage"]["completion_tokens"].as_u64().unwrap(),
            v["choices"][0]["finish_reason"]
                .as_str()
                .unwrap()
                .to_owned(),
        )
    };
    let plain = chat_body_for(EOS_FIRST);
    let v = server.post("/v1/chat/completions", &plain).await.json();
    assert_eq!(ends(&v), (1, "stop".to_owned()), "{v}");

    let ignoring = chat_body_for(&format!(r#"{EOS_FIRST},"ignore_eos":true"#));
    for _ in 0..2 {
        let v = server.post("/v1/chat/completions", &ignoring).await.json();
        assert_eq!(ends(&v), (24, "length".to_owned()), "{v}");
    }
    let streamed = chat_body_for(&format!(
        r#"{EOS_FIRST},"ignore_eos":true,"stream":true,"stream_options":{{"include_usage":true}}"#
    ));
    let events = server
        .post("/v1/chat/completions", &streamed)
        .await
        .events();
    let usage = events.iter().find(|e| e["usage"].is_object()).unwrap();
    assert_eq!(usage["usage"]["completion_tokens"], 24, "{events:?}");
    assert!(
        events
            .iter()
            .any(|e| e["choices"][0]["finish_reason"] == "length"),
        "{events:?}"
    );

    // The legacy endpoint takes it too.
    let v = server
        .post(
            "/v1/completions",
            r#"{"prompt":"hello","max_tokens":24,"temperature":0,"logit_bias":{"264":100},"ignore_eos":true}"#,
        )
        .await
        .json();
    assert_eq!(ends(&v), (24, "length".to_owned()), "{v}");

    // And it is not kept: the next request without it ends at the end token again.
    let v = server.post("/v1/chat/completions", &plain).await.json();
    assert_eq!(ends(&v), (1, "stop".to_owned()), "{v}");
    server.stop().await.unwrap();
}
