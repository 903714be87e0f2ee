//! The endpoints over real loopback HTTP, on the scripted engine: bodies, SSE framing (byte
//! for byte), usage and metrics.

#![allow(clippy::unwrap_used)]

mod common;

use common::*;

#[tokio::test]
async fn health_models_and_tokenize_answer() {
    let (server, _engine) = start("Hello world").await;
    let r = server.get("/health").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["status"], "ok");

    let r = server.get("/v1/models").await;
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["object"], "list");
    assert_eq!(v["data"][0]["id"], MODEL);
    assert_eq!(v["data"][0]["object"], "model");

    let r = server.get(&format!("/v1/models/{MODEL}")).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["id"], MODEL);

    let r = server
        .post("/tokenize", r#"{"content":"one two three"}"#)
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["tokens"], serde_json::json!([0, 1, 2]));
    server.stop().await.unwrap();
}

#[tokio::test]
async fn chat_non_stream_returns_content_and_usage() {
    let (server, engine) = start("Hello world").await;
    let r = server
        .post(
            "/v1/chat/completions",
            &chat_body(r#""max_tokens":50,"seed":7"#),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("content-type"), Some("application/json"));
    let expected = format!(
        concat!(
            r#"{{"id":"chatcmpl-0000000000000000","object":"chat.completion","created":0,"#,
            r#""model":"{}","choices":[{{"index":0,"message":{{"role":"assistant","#,
            r#""content":"Hello world","refusal":null}},"finish_reason":"stop","logprobs":null}}],"#,
            r#""usage":{{"prompt_tokens":4,"completion_tokens":4,"total_tokens":8,"#,
            r#""prompt_tokens_details":{{"cached_tokens":0}}}}}}"#
        ),
        MODEL
    );
    assert_eq!(zero_created(&r.text()), expected);
    let seen = engine.seen.lock().unwrap().clone();
    assert_eq!(seen[0].max_tokens, Some(50));
    assert_eq!(seen[0].sampling.seed, Some(7));
    server.stop().await.unwrap();
}

#[tokio::test]
async fn chat_stream_is_framed_byte_for_byte() {
    let (server, _engine) = start("Hello world").await;
    let body = chat_body(r#""stream":true,"stream_options":{"include_usage":true}"#);
    let r = server.post("/v1/chat/completions", &body).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    let head = format!(
        r#"data: {{"id":"chatcmpl-0000000000000000","object":"chat.completion.chunk","created":0,"model":"{MODEL}","choices":["#
    );
    let mut expected = String::new();
    let mut event = |choices: &str, usage: &str| {
        expected.push_str(&head);
        expected.push_str(choices);
        expected.push_str(&format!(r#"],"usage":{usage}}}"#));
        expected.push_str("\n\n");
    };
    event(
        r#"{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null,"logprobs":null}"#,
        "null",
    );
    for piece in ["Hel", "lo ", "wor", "ld"] {
        event(
            &format!(
                r#"{{"index":0,"delta":{{"content":"{piece}"}},"finish_reason":null,"logprobs":null}}"#
            ),
            "null",
        );
    }
    event(
        r#"{"index":0,"delta":{},"finish_reason":"stop","logprobs":null}"#,
        "null",
    );
    event(
        "",
        r#"{"prompt_tokens":4,"completion_tokens":4,"total_tokens":8,"prompt_tokens_details":{"cached_tokens":0}}"#,
    );
    expected.push_str("data: [DONE]\n\n");
    assert_eq!(zero_created(&r.text()), expected);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn chat_stream_without_usage_has_no_usage_field() {
    let (server, _engine) = start("Hi").await;
    let r = server
        .post("/v1/chat/completions", &chat_body(r#""stream":true"#))
        .await;
    let text = r.text();
    assert!(!text.contains("usage"), "{text}");
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
    let events = r.events();
    assert_eq!(
        events.last().unwrap()["choices"][0]["finish_reason"],
        "stop"
    );
    server.stop().await.unwrap();
}

#[tokio::test]
async fn max_tokens_ends_with_length() {
    let (server, _engine) = start("one two three four five six").await;
    let r = server
        .post(
            "/v1/chat/completions",
            &chat_body(r#""max_completion_tokens":2"#),
        )
        .await;
    let v = r.json();
    assert_eq!(v["choices"][0]["finish_reason"], "length");
    assert_eq!(v["choices"][0]["message"]["content"], "one tw");
    assert_eq!(v["usage"]["completion_tokens"], 2);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn completions_stream_and_non_stream() {
    let (server, engine) = start("Hello world").await;
    let r = server
        .post(
            "/v1/completions",
            &format!(r#"{{"model":"{MODEL}","prompt":"Say","max_tokens":9}}"#),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    assert_eq!(v["object"], "text_completion");
    assert_eq!(v["choices"][0]["text"], "Hello world");
    assert_eq!(v["usage"]["prompt_tokens"], 1);
    assert!(
        matches!(engine.seen.lock().unwrap()[0].prompt, models::Prompt::Text(ref t) if t == "Say")
    );

    let r = server
        .post(
            "/v1/completions",
            r#"{"prompt":["Say"],"stream":true,"stream_options":{"include_usage":true}}"#,
        )
        .await;
    let text = zero_created(&r.text());
    let expected_first = format!(
        "data: {{\"id\":\"cmpl-0000000000000001\",\"object\":\"text_completion\",\"created\":0,\"model\":\"{MODEL}\",\"choices\":[{{\"index\":0,\"text\":\"Hel\",\"logprobs\":null,\"finish_reason\":null}}]}}\n\n"
    );
    assert!(text.starts_with(&expected_first), "{text}");
    let events = r.events();
    let joined: String = events
        .iter()
        .map(|e| e["choices"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(joined, "Hello world");
    let last = events.last().unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], "stop");
    assert_eq!(last["usage"]["completion_tokens"], 4);
    assert!(text.ends_with("data: [DONE]\n\n"));
    server.stop().await.unwrap();
}

#[tokio::test]
async fn metrics_count_requests_tokens_and_latency() {
    let (server, _engine) = start("Hello world").await;
    for _ in 0..2 {
        let r = server.post("/v1/chat/completions", &chat_body("")).await;
        assert_eq!(r.status, 200);
    }
    let _ = server.post("/v1/chat/completions", "{").await;
    let m = server.metrics().await;
    let get = |s: &str| gateway::metrics::sample(&m, s).unwrap_or_else(|| panic!("{s}\n{m}"));
    assert_eq!(
        get(r#"bellows_requests_total{endpoint="chat_completions",status="200"}"#),
        2.0
    );
    assert_eq!(
        get(r#"bellows_requests_total{endpoint="chat_completions",status="400"}"#),
        1.0
    );
    assert_eq!(get(r#"bellows_errors_total{kind="invalid_json"}"#), 1.0);
    assert_eq!(get("bellows_prompt_tokens_total"), 8.0);
    assert_eq!(get("bellows_generated_tokens_total"), 8.0);
    assert_eq!(get("bellows_cached_prompt_tokens_total"), 0.0);
    assert_eq!(get("bellows_time_to_first_token_seconds_count"), 2.0);
    // Four pieces per reply: the first is time-to-first-token, the other three are per-token.
    assert_eq!(get("bellows_token_latency_seconds_count"), 6.0);
    assert_eq!(get("bellows_queue_depth"), 0.0);
    assert_eq!(get("bellows_busy_slots"), 0.0);
    assert_eq!(get("bellows_cancellations_total"), 0.0);
    server.stop().await.unwrap();
}
