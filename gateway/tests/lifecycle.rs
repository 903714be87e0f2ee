//! Concurrency, client disconnects, authentication and graceful shutdown, over loopback.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use gateway::state::AppState;
use models::{Script, ScriptedEngine};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

const TEXT: &str = "The quick brown fox jumps over the lazy dog.";

fn slow(text: &str, chunk: usize, delay_ms: u64) -> Script {
    Script {
        delay: Duration::from_millis(delay_ms),
        ..Script::chunked(text, chunk)
    }
}

fn content_of(events: &[serde_json::Value]) -> String {
    common::delta_text(events, "content")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_concurrent_streams_all_complete() {
    let engine = Arc::new(ScriptedEngine::new(MODEL, slow(TEXT, 4, 5)));
    let server = start_engine(engine).await;
    let addr = server.addr;
    let body = chat_body(r#""stream":true,"stream_options":{"include_usage":true}"#);
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let body = body.clone();
        tasks.push(tokio::spawn(async move {
            request(addr, "POST", "/v1/chat/completions", &[], body.as_bytes()).await
        }));
    }
    let mut ids = std::collections::HashSet::new();
    for t in tasks {
        let r = t.await.unwrap();
        assert_eq!(r.status, 200);
        let text = r.text();
        assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
        let events = r.events();
        assert_eq!(content_of(&events), TEXT);
        let finish = &events[events.len() - 2];
        assert_eq!(finish["choices"][0]["finish_reason"], "stop");
        assert_eq!(events.last().unwrap()["usage"]["completion_tokens"], 11);
        // Every event of one stream carries that stream's id, and ids differ across streams.
        let id = events[0]["id"].as_str().unwrap().to_owned();
        assert!(events.iter().all(|e| e["id"] == id.as_str()));
        assert!(ids.insert(id));
    }
    assert_eq!(
        server
            .metric(r#"bellows_requests_total{endpoint="chat_completions",status="200"}"#)
            .await,
        16.0
    );
    assert_eq!(server.metric("bellows_busy_slots").await, 0.0);
    assert_eq!(server.metric("bellows_cancellations_total").await, 0.0);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_client_that_disconnects_cancels_its_generation_and_frees_the_slot() {
    // 400 pieces at 10 ms: four seconds if nobody cancelled it.
    let long = "tok ".repeat(400);
    let engine = Arc::new(ScriptedEngine::new(MODEL, slow(&long, 4, 10)));
    let server = start_engine(engine).await;

    let mut s = open(
        server.addr,
        "/v1/chat/completions",
        &chat_body(r#""stream":true"#),
    )
    .await;
    let seen = read_until(&mut s, "data: ", 3).await;
    assert!(seen.starts_with("HTTP/1.1 200"), "{seen}");
    assert_eq!(server.metric("bellows_busy_slots").await, 1.0);
    drop(s);
    assert_eq!(
        wait_metric(&server, "bellows_cancellations_total", 1.0).await,
        1.0
    );
    assert_eq!(wait_metric(&server, "bellows_busy_slots", 0.0).await, 0.0);
    // The engine's own count for the cancelled request arrives once it let go of the work, and
    // it is short of the 400 pieces the script holds: the engine stopped. (Had it carried on,
    // the count would arrive only at its end, as 400.)
    let generated = wait_metric_above(&server, "bellows_generated_tokens_total", 0.0).await;
    assert!((2.0..400.0).contains(&generated), "{generated}");
    assert!(server.metric("bellows_prompt_tokens_total").await > 0.0);

    // The same holds for a non-streamed request whose client gives up.
    let s = open(server.addr, "/v1/chat/completions", &chat_body("")).await;
    assert_eq!(wait_metric(&server, "bellows_busy_slots", 1.0).await, 1.0);
    drop(s);
    assert_eq!(
        wait_metric(&server, "bellows_cancellations_total", 2.0).await,
        2.0
    );
    assert_eq!(wait_metric(&server, "bellows_busy_slots", 0.0).await, 0.0);
    assert_eq!(server.metric("bellows_queue_depth").await, 0.0);
    let both = wait_metric_above(&server, "bellows_generated_tokens_total", generated).await;
    assert!(both - generated < 400.0, "{both} after {generated}");

    // And the server still serves.
    let r = server.get("/health").await;
    assert_eq!(r.status, 200);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn api_key_protects_everything_but_health() {
    let engine = Arc::new(ScriptedEngine::new(MODEL, Script::chunked("ok", 3)));
    let state = AppState::new(engine).with_api_key(Some("sekret".into()));
    let server = start_state(state).await;
    let addr = server.addr;

    assert_eq!(server.get("/health").await.status, 200);
    for (method, path, body) in [
        ("GET", "/v1/models", ""),
        ("GET", "/metrics", ""),
        ("POST", "/tokenize", r#"{"content":"a"}"#),
        ("POST", "/v1/completions", r#"{"prompt":"a"}"#),
        (
            "POST",
            "/v1/chat/completions",
            r#"{"messages":[{"role":"user","content":"a"}]}"#,
        ),
    ] {
        let none = request(addr, method, path, &[], body.as_bytes()).await;
        assert_eq!(none.status, 401, "{path} without a key");
        assert_eq!(none.error_code(), "invalid_api_key");
        assert_eq!(none.json()["error"]["type"], "authentication_error");
        assert_eq!(none.header("www-authenticate"), Some("Bearer"));
        let wrong = request(
            addr,
            method,
            path,
            &[("authorization", "Bearer sekreT")],
            body.as_bytes(),
        )
        .await;
        assert_eq!(wrong.status, 401, "{path} with a wrong key");
        let basic = request(
            addr,
            method,
            path,
            &[("authorization", "sekret")],
            body.as_bytes(),
        )
        .await;
        assert_eq!(basic.status, 401, "{path} with no Bearer scheme");
        let right = request(
            addr,
            method,
            path,
            &[("authorization", "Bearer sekret")],
            body.as_bytes(),
        )
        .await;
        assert_eq!(right.status, 200, "{path} with the key: {}", right.text());
    }
    server.stop().await.unwrap();
}

#[tokio::test]
async fn graceful_shutdown_finishes_in_flight_streams_and_refuses_new_connections() {
    let engine = Arc::new(ScriptedEngine::new(MODEL, slow(TEXT, 2, 20)));
    let mut server = start_engine(engine).await;
    let addr = server.addr;
    let body = chat_body(r#""stream":true"#);
    let in_flight = tokio::spawn(async move {
        request(addr, "POST", "/v1/chat/completions", &[], body.as_bytes()).await
    });
    // An idle keep-alive connection must not hold the shutdown up either.
    let mut idle = TcpStream::connect(addr).await.unwrap();
    assert_eq!(wait_metric(&server, "bellows_busy_slots", 1.0).await, 1.0);

    server.begin_stop();
    server.join().await.unwrap();

    let r = in_flight.await.unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(content_of(&r.events()), TEXT);
    assert!(r.text().ends_with("data: [DONE]\n\n"));
    let mut buf = [0u8; 16];
    let n = tokio::time::timeout(Duration::from_secs(5), idle.read(&mut buf)).await;
    assert!(
        matches!(n, Ok(Ok(0)) | Ok(Err(_))),
        "idle connection closed: {n:?}"
    );
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "listener is closed"
    );
}
