//! OpenAI's `n` on the scripted engine: several choices from one request, chat and
//! completions, streamed and not. The scripted engine hands out queued scripts in the order
//! generations are admitted, so choice `i` replies with the `i`-th script pushed.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use models::engine::BoxFuture;
use models::{
    ChatMessage, Engine, EngineError, GenerateRequest, Generation, ModelInfo, Progress, Script,
    ScriptedEngine, ToolSpec,
};
use serde_json::{Value, json};

/// Script `i` of a request: a distinct text per choice, in 3-byte pieces.
const TEXTS: [&str; 3] = ["alpha one", "beta two three", "gamma"];
/// Their piece counts: what each choice generates.
const PIECES: [u64; 3] = [3, 5, 2];

fn slow(text: &str, chunk: usize, delay_ms: u64) -> Script {
    Script {
        delay: Duration::from_millis(delay_ms),
        ..Script::chunked(text, chunk)
    }
}

/// An engine with one script queued per text, each `delay_ms` per piece.
fn engine_with(texts: &[&str], delay_ms: u64) -> Arc<ScriptedEngine> {
    let engine = scripted("unused fallback");
    for t in texts {
        engine.push(slow(t, 3, delay_ms));
    }
    engine
}

/// The events of a stream grouped by choice index, in order; events without a choice (the
/// usage chunk) are left out.
fn by_index(events: &[Value]) -> BTreeMap<u64, Vec<Value>> {
    let mut out: BTreeMap<u64, Vec<Value>> = BTreeMap::new();
    for e in events {
        let choices = e["choices"].as_array().unwrap();
        assert!(choices.len() <= 1, "one choice per chunk: {e}");
        if let Some(c) = choices.first() {
            out.entry(c["index"].as_u64().unwrap())
                .or_default()
                .push(c.clone());
        }
    }
    out
}

#[tokio::test]
async fn chat_with_n_3_answers_three_choices_with_the_prompt_counted_once() {
    let engine = engine_with(&TEXTS, 0);
    let server = start_engine(engine.clone()).await;
    let r = server
        .post(
            "/v1/chat/completions",
            &chat_body(r#""n":3,"temperature":0.8,"max_tokens":20"#),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    let choices = v["choices"].as_array().unwrap();
    assert_eq!(choices.len(), 3, "{v}");
    for (i, c) in choices.iter().enumerate() {
        assert_eq!(c["index"], i, "{v}");
        assert_eq!(c["message"]["role"], "assistant");
        assert_eq!(c["message"]["content"], TEXTS[i], "{v}");
        assert_eq!(c["finish_reason"], "stop");
    }
    // The prompt ("hi there" in the template: 4 tokens) once; completions summed.
    let completion: u64 = PIECES.iter().sum();
    assert_eq!(v["usage"]["prompt_tokens"], 4, "{v}");
    assert_eq!(v["usage"]["completion_tokens"], completion, "{v}");
    assert_eq!(v["usage"]["total_tokens"], 4 + completion, "{v}");
    assert_eq!(v["usage"]["prompt_tokens_details"]["cached_tokens"], 0);

    // Three generations of the same request reached the engine.
    let seen = engine.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    assert!(seen.iter().all(|s| s.prompt == seen[0].prompt));
    assert!(seen.iter().all(|s| s.max_tokens == Some(20)));

    // Metrics: one request; tokens per generation (the engine's work); time to first token
    // once, for the request; nothing left queued, busy or cancelled.
    let m = server.metrics().await;
    let get = |s: &str| gateway::metrics::sample(&m, s).unwrap_or_else(|| panic!("{s}\n{m}"));
    assert_eq!(
        get(r#"bellows_requests_total{endpoint="chat_completions",status="200"}"#),
        1.0
    );
    assert_eq!(get("bellows_prompt_tokens_total"), 12.0);
    assert_eq!(get("bellows_generated_tokens_total"), completion as f64);
    assert_eq!(get("bellows_time_to_first_token_seconds_count"), 1.0);
    // Every piece after a choice's first is a per-token latency.
    assert_eq!(
        get("bellows_token_latency_seconds_count"),
        (completion - 3) as f64
    );
    assert_eq!(get("bellows_queue_depth"), 0.0);
    assert_eq!(get("bellows_busy_slots"), 0.0);
    assert_eq!(get("bellows_cancellations_total"), 0.0);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn seeds_are_offset_per_choice_and_wrap() {
    let (server, engine) = start("same").await;
    let seeds = |engine: &ScriptedEngine| -> Vec<Option<u32>> {
        let mut seen = engine.seen.lock().unwrap();
        let s = seen.iter().map(|r| r.sampling.seed).collect();
        seen.clear();
        s
    };
    let r = server
        .post(
            "/v1/chat/completions",
            &chat_body(r#""n":3,"seed":41,"temperature":1"#),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(seeds(&engine), [Some(41), Some(42), Some(43)]);

    // u32::MAX folds to itself; the next choices wrap around to 0 and 1.
    let r = server
        .post(
            "/v1/completions",
            r#"{"prompt":"Say","n":3,"seed":4294967295}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(seeds(&engine), [Some(u32::MAX), Some(0), Some(1)]);

    // Without a seed, each generation draws its own.
    let r = server
        .post("/v1/chat/completions", &chat_body(r#""n":2"#))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(seeds(&engine), [None, None]);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn chat_stream_with_n_3_interleaves_choices_and_ends_once() {
    // 20 ms per piece: the choices run side by side and their chunks interleave.
    let engine = engine_with(&TEXTS, 20);
    let server = start_engine(engine).await;
    let r = server
        .post(
            "/v1/chat/completions",
            &chat_body(r#""n":3,"stream":true,"stream_options":{"include_usage":true}"#),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let text = r.text();
    assert_eq!(text.matches("data: [DONE]").count(), 1, "{text}");
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
    let events = r.events();
    let id = events[0]["id"].as_str().unwrap();
    assert!(
        events.iter().all(|e| e["id"] == id),
        "one id for the request"
    );

    let choices = by_index(&events);
    assert_eq!(choices.keys().copied().collect::<Vec<_>>(), [0, 1, 2]);
    for (i, chunks) in &choices {
        let i = *i as usize;
        // Its own role chunk first, its own finish chunk last, and nothing else finishes.
        assert_eq!(chunks[0]["delta"]["role"], "assistant", "choice {i}");
        assert_eq!(
            chunks.last().unwrap()["finish_reason"],
            "stop",
            "choice {i}"
        );
        assert_eq!(
            chunks
                .iter()
                .filter(|c| !c["finish_reason"].is_null())
                .count(),
            1,
            "choice {i}"
        );
        assert_eq!(
            chunks
                .iter()
                .filter(|c| c["delta"]["role"].is_string())
                .count(),
            1,
            "choice {i}"
        );
        let content: String = chunks
            .iter()
            .filter_map(|c| c["delta"]["content"].as_str())
            .collect();
        assert_eq!(content, TEXTS[i], "choice {i}");
    }

    // Interleaved: choice 1 had text out before choice 0's last piece.
    let texts_of = |index: u64| -> Vec<usize> {
        events
            .iter()
            .enumerate()
            .filter(|(_, e)| {
                e["choices"][0]["index"] == index
                    && e["choices"][0]["delta"]["content"]
                        .as_str()
                        .is_some_and(|c| !c.is_empty())
            })
            .map(|(p, _)| p)
            .collect()
    };
    assert!(texts_of(1)[0] < *texts_of(0).last().unwrap(), "{events:?}");

    // One usage chunk, after every choice finished, with the request's totals; every other
    // chunk says `usage: null`.
    let usage: Vec<(usize, &Value)> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| !e["usage"].is_null())
        .collect();
    assert_eq!(usage.len(), 1, "{events:?}");
    let (at, chunk) = usage[0];
    assert_eq!(at, events.len() - 1);
    assert_eq!(chunk["choices"], json!([]));
    let completion: u64 = PIECES.iter().sum();
    assert_eq!(chunk["usage"]["prompt_tokens"], 4);
    assert_eq!(chunk["usage"]["completion_tokens"], completion);
    assert_eq!(chunk["usage"]["total_tokens"], 4 + completion);
    assert!(events[..at].iter().all(|e| e["usage"] == Value::Null));
    server.stop().await.unwrap();
}

#[tokio::test]
async fn completions_with_n_stream_and_not() {
    let engine = engine_with(&TEXTS[..2], 0);
    let server = start_engine(engine.clone()).await;
    let r = server
        .post(
            "/v1/completions",
            r#"{"prompt":"Say it","n":2,"max_tokens":9,"logprobs":1}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    let choices = v["choices"].as_array().unwrap();
    assert_eq!(choices.len(), 2, "{v}");
    for (i, c) in choices.iter().enumerate() {
        assert_eq!(c["index"], i);
        assert_eq!(c["text"], TEXTS[i]);
        assert_eq!(c["finish_reason"], "stop");
        // Each choice's log probabilities are its own tokens, offsets from its own start.
        let tokens: String = c["logprobs"]["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect();
        assert_eq!(tokens, TEXTS[i]);
        assert_eq!(c["logprobs"]["text_offset"][0], 0);
    }
    assert_eq!(v["usage"]["prompt_tokens"], 2);
    assert_eq!(v["usage"]["completion_tokens"], PIECES[0] + PIECES[1]);
    assert_eq!(v["usage"]["total_tokens"], 2 + PIECES[0] + PIECES[1]);

    for t in &TEXTS[..2] {
        engine.push(slow(t, 3, 10));
    }
    let r = server
        .post(
            "/v1/completions",
            r#"{"prompt":"Say it","n":2,"stream":true,"stream_options":{"include_usage":true}}"#,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let text = r.text();
    assert_eq!(text.matches("data: [DONE]").count(), 1, "{text}");
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
    let events = r.events();
    for (i, chunks) in by_index(&events) {
        let joined: String = chunks.iter().map(|c| c["text"].as_str().unwrap()).collect();
        assert_eq!(joined, TEXTS[i as usize]);
        assert_eq!(chunks.last().unwrap()["finish_reason"], "stop");
        assert_eq!(
            chunks
                .iter()
                .filter(|c| !c["finish_reason"].is_null())
                .count(),
            1
        );
    }
    // The usage rides once, on the last finish chunk, as it does with one choice.
    let with_usage: Vec<&Value> = events.iter().filter(|e| e.get("usage").is_some()).collect();
    assert_eq!(with_usage.len(), 1, "{events:?}");
    assert!(std::ptr::eq(with_usage[0], events.last().unwrap()));
    assert_eq!(
        with_usage[0]["usage"]["completion_tokens"],
        PIECES[0] + PIECES[1]
    );
    assert_eq!(with_usage[0]["usage"]["prompt_tokens"], 2);
    server.stop().await.unwrap();
}

const WEATHER_TOOLS: &str = r#""tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}}},{"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{}}}}]"#;
const WEATHER_CALL: &str = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}\n</tool_call>";
const TIME_CALL: &str =
    "Checking.\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>";
const PROSE: &str = "No tool needed: it is sunny.";

/// The tool calls of a stream's choice: (id, name, arguments) per call index.
fn streamed_calls(chunks: &[Value]) -> Vec<(String, String, String)> {
    let mut calls: Vec<(String, String, String)> = Vec::new();
    for c in chunks {
        for d in c["delta"]["tool_calls"].as_array().into_iter().flatten() {
            let i = d["index"].as_u64().unwrap() as usize;
            if i == calls.len() {
                calls.push((
                    d["id"].as_str().unwrap().to_owned(),
                    d["function"]["name"].as_str().unwrap().to_owned(),
                    String::new(),
                ));
            }
            if let Some(a) = d["function"]["arguments"].as_str() {
                calls[i].2.push_str(a);
            }
        }
    }
    calls
}

#[tokio::test]
async fn each_choice_decodes_its_own_tool_calls() {
    let engine = scripted("unused");
    for _ in 0..2 {
        // One byte per piece, so the three decoders' work interleaves.
        for reply in [WEATHER_CALL, PROSE, TIME_CALL] {
            engine.push(Script::chunked(reply, 1));
        }
    }
    let server = start_engine(engine.clone()).await;
    let body = chat_body(&format!(r#"{WEATHER_TOOLS},"n":3"#));
    let r = server.post("/v1/chat/completions", &body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    let c = &v["choices"];
    assert_eq!(c[0]["finish_reason"], "tool_calls", "{v}");
    assert_eq!(c[0]["message"]["content"], Value::Null, "{v}");
    assert_eq!(
        c[0]["message"]["tool_calls"][0]["function"]["name"],
        "get_weather"
    );
    let args: Value = serde_json::from_str(
        c[0]["message"]["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(args, json!({"location": "Paris"}));
    assert_eq!(c[1]["finish_reason"], "stop", "{v}");
    assert_eq!(c[1]["message"]["content"], PROSE);
    assert!(c[1]["message"].get("tool_calls").is_none(), "{v}");
    assert_eq!(c[2]["finish_reason"], "tool_calls", "{v}");
    assert_eq!(c[2]["message"]["content"], "Checking.\n", "{v}");
    assert_eq!(c[2]["message"]["tool_calls"].as_array().unwrap().len(), 1);
    assert_eq!(
        c[2]["message"]["tool_calls"][0]["function"]["name"],
        "get_time"
    );
    assert_ne!(
        c[0]["message"]["tool_calls"][0]["id"],
        c[2]["message"]["tool_calls"][0]["id"]
    );
    assert_eq!(
        server
            .metric(r#"bellows_decoded_proposals_total{format="hermes"}"#)
            .await,
        2.0
    );

    // Streamed: each choice's calls are numbered from 0 in its own chunks.
    let body = chat_body(&format!(r#"{WEATHER_TOOLS},"n":3,"stream":true"#));
    let r = server.post("/v1/chat/completions", &body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let choices = by_index(&r.events());
    let weather = streamed_calls(&choices[&0]);
    assert_eq!(weather.len(), 1, "{choices:?}");
    assert_eq!(weather[0].1, "get_weather");
    assert_eq!(
        serde_json::from_str::<Value>(&weather[0].2).unwrap(),
        json!({"location": "Paris"})
    );
    assert!(streamed_calls(&choices[&1]).is_empty());
    let prose: String = choices[&1]
        .iter()
        .filter_map(|c| c["delta"]["content"].as_str())
        .collect();
    assert_eq!(prose, PROSE);
    let time = streamed_calls(&choices[&2]);
    assert_eq!(time.len(), 1, "{choices:?}");
    assert_eq!(time[0].1, "get_time");
    assert_ne!(weather[0].0, time[0].0, "call ids are distinct");
    let finish = |i: u64| choices[&i].last().unwrap()["finish_reason"].clone();
    assert_eq!(
        [finish(0), finish(1), finish(2)],
        [json!("tool_calls"), json!("stop"), json!("tool_calls")]
    );
    server.stop().await.unwrap();
}

#[tokio::test]
async fn n_out_of_range_is_refused_naming_n_and_the_limit() {
    let (server, engine) = start("ok").await;
    for (path, body) in [
        ("/v1/chat/completions", chat_body(r#""n":0"#)),
        ("/v1/chat/completions", chat_body(r#""n":17"#)),
        ("/v1/completions", r#"{"prompt":"a","n":17}"#.to_owned()),
    ] {
        let r = server.post(path, &body).await;
        assert_eq!(r.status, 400, "{path} {body}");
        let v = r.json();
        assert_eq!(v["error"]["type"], "invalid_request_error");
        assert_eq!(v["error"]["param"], "n");
        let message = v["error"]["message"].as_str().unwrap();
        let given = if body.contains("\"n\":0") {
            "n = 0"
        } else {
            "n = 17"
        };
        assert!(
            message.contains(given) && message.contains("16"),
            "{message}"
        );
    }
    // The cap itself is served.
    let r = server
        .post("/v1/chat/completions", &chat_body(r#""n":16"#))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["choices"].as_array().unwrap().len(), 16);
    assert_eq!(engine.seen.lock().unwrap().len(), 16);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_client_that_disconnects_cancels_every_choice() {
    // 400 pieces at 10 ms: four seconds per choice if nobody cancelled them.
    let long = "tok ".repeat(400);
    let engine = Arc::new(ScriptedEngine::new(MODEL, slow(&long, 4, 10)));
    let server = start_engine(engine).await;

    let mut s = open(
        server.addr,
        "/v1/chat/completions",
        &chat_body(r#""n":3,"stream":true"#),
    )
    .await;
    // Three role chunks, then some text.
    let seen = read_until(&mut s, "data: ", 8).await;
    assert!(seen.starts_with("HTTP/1.1 200"), "{seen}");
    assert_eq!(wait_metric(&server, "bellows_busy_slots", 3.0).await, 3.0);
    drop(s);
    assert_eq!(
        wait_metric(&server, "bellows_cancellations_total", 3.0).await,
        3.0
    );
    assert_eq!(wait_metric(&server, "bellows_busy_slots", 0.0).await, 0.0);
    assert_eq!(server.metric("bellows_queue_depth").await, 0.0);
    // The engine let go of all three well short of their 1200 pieces.
    let generated = wait_metric_above(&server, "bellows_generated_tokens_total", 3.0).await;
    assert!((3.0..1200.0).contains(&generated), "{generated}");

    // A non-streamed request whose client gives up is cancelled whole as well.
    let s = open(
        server.addr,
        "/v1/completions",
        r#"{"prompt":"go","n":2,"max_tokens":500}"#,
    )
    .await;
    assert_eq!(wait_metric(&server, "bellows_busy_slots", 2.0).await, 2.0);
    drop(s);
    assert_eq!(
        wait_metric(&server, "bellows_cancellations_total", 5.0).await,
        5.0
    );
    assert_eq!(wait_metric(&server, "bellows_busy_slots", 0.0).await, 0.0);
    assert_eq!(server.get("/health").await.status, 200);
    server.stop().await.unwrap();
}

/// Admits `admit` generations, then refuses as if its queue were full; keeps the progress of
/// those it admitted, to see when the engine let go of them.
#[derive(Debug)]
struct FillsUp {
    inner: ScriptedEngine,
    admit: usize,
    calls: AtomicUsize,
    admitted: Mutex<Vec<Arc<Progress>>>,
}

impl Engine for FillsUp {
    fn info(&self) -> &ModelInfo {
        self.inner.info()
    }
    fn generate(&self, req: GenerateRequest) -> BoxFuture<'_, Result<Generation, EngineError>> {
        Box::pin(async move {
            if self.calls.fetch_add(1, Ordering::SeqCst) >= self.admit {
                return Err(EngineError::QueueFull { capacity: 8 });
            }
            let g = self.inner.generate(req).await?;
            self.admitted.lock().unwrap().push(Arc::clone(&g.progress));
            Ok(g)
        })
    }
    fn tokenize(&self, text: &str) -> Result<Vec<i32>, EngineError> {
        self.inner.tokenize(text)
    }
    fn renders_tools(&self) -> bool {
        self.inner.renders_tools()
    }
    fn render_chat(&self, m: &[ChatMessage], t: &[ToolSpec]) -> Result<String, EngineError> {
        self.inner.render_chat(m, t)
    }
}

#[tokio::test]
async fn a_choice_that_cannot_be_admitted_refuses_the_request_and_drops_the_others() {
    let long = "tok ".repeat(400);
    let engine = Arc::new(FillsUp {
        inner: ScriptedEngine::new(MODEL, slow(&long, 4, 10)),
        admit: 2,
        calls: AtomicUsize::new(0),
        admitted: Mutex::new(Vec::new()),
    });
    let server = start_engine(engine.clone()).await;
    for stream in [false, true] {
        engine.calls.store(0, Ordering::SeqCst);
        let body = chat_body(&format!(r#""n":3,"stream":{stream}"#));
        let r = server.post("/v1/chat/completions", &body).await;
        assert_eq!(r.status, 503, "{}", r.text());
        assert_eq!(r.error_code(), "queue_full");
        assert_eq!(r.header("retry-after"), Some("1"));
    }
    // The four admitted generations were let go of at once, not after their four seconds.
    let admitted = engine.admitted.lock().unwrap().clone();
    assert_eq!(admitted.len(), 4);
    for p in admitted {
        tokio::time::timeout(Duration::from_secs(2), p.finished())
            .await
            .expect("the engine let go of an admitted choice");
        assert!(p.generated() < 400);
    }
    // A refusal is neither queued, busy nor a client's cancellation.
    assert_eq!(server.metric("bellows_queue_depth").await, 0.0);
    assert_eq!(server.metric("bellows_busy_slots").await, 0.0);
    assert_eq!(server.metric("bellows_cancellations_total").await, 0.0);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_choice_that_fails_fails_the_request_without_counting_cancellations() {
    let long = "tok ".repeat(400);
    let engine = scripted("unused");
    let server = start_engine(engine.clone()).await;
    for stream in [false, true] {
        engine.push(slow(&long, 4, 10));
        engine.push(Script::failing("half a reply", 4, "decode failed"));
        let body = chat_body(&format!(r#""n":2,"stream":{stream}"#));
        let r = server.post("/v1/chat/completions", &body).await;
        if stream {
            assert_eq!(r.status, 200);
            let text = r.text();
            assert!(!text.contains("[DONE]"), "{text}");
            let last = r.events().pop().unwrap();
            assert_eq!(last["error"]["code"], "engine_failure", "{text}");
        } else {
            assert_eq!(r.status, 500, "{}", r.text());
            assert_eq!(r.error_code(), "engine_failure");
        }
    }
    assert_eq!(wait_metric(&server, "bellows_busy_slots", 0.0).await, 0.0);
    assert_eq!(server.metric("bellows_queue_depth").await, 0.0);
    assert_eq!(server.metric("bellows_cancellations_total").await, 0.0);
    assert_eq!(
        server
            .metric(r#"bellows_errors_total{kind="engine_failure"}"#)
            .await,
        2.0
    );
    server.stop().await.unwrap();
}
