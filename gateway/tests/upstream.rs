//! bellows in front of upstreams (`--upstream`): a real bellows on the tiny GGUF over HTTP,
//! scripted bellows servers, and a fault-injecting upstream written here (refuses, 500s,
//! hangs before the first byte, goes quiet mid-stream, drops mid-stream, sends malformed
//! SSE). Every fault is a typed error, the gateway stays up, failover happens only before the
//! first byte, and a client that goes away cancels the upstream's request.

#![allow(clippy::unwrap_used)]

mod common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use gateway::config::ServeArgs;
use gateway::metrics::Metrics;
use gateway::state::AppState;
use gateway::upstream::{Pool, Timeouts, UpstreamConfig};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the fault upstream does with a generation request.
#[derive(Debug, Clone)]
enum Fault {
    /// Streams these chat-completion deltas (JSON objects for `choices[0].delta`), then a
    /// finish reason and `[DONE]`.
    Deltas(Vec<Value>, &'static str),
    /// Closes the connection without answering.
    Close,
    /// Answers this status with an OpenAI error body.
    Status(u16),
    /// Reads the request and never answers.
    Hang,
    /// Sends one piece, then nothing, keeping the connection open.
    QuietAfterOne,
    /// Sends one piece, then closes the connection.
    DropAfterOne,
    /// Sends an event that is not JSON.
    Malformed,
    /// Sends a piece every 20 ms until the client goes away.
    Endless,
}

/// A fault-injecting OpenAI upstream. It lists one model, has no `/props` (so bellows uses its
/// chat endpoint), and records the generation requests it got and the streams it saw end
/// because the client went away.
struct FaultServer {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Value>>>,
    client_gone: Arc<AtomicUsize>,
}

impl FaultServer {
    async fn start(fault: Fault) -> FaultServer {
        FaultServer::start_on("127.0.0.1:0", fault).await
    }

    async fn start_on(addr: &str, fault: Fault) -> FaultServer {
        let listener = TcpListener::bind(addr).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let client_gone = Arc::new(AtomicUsize::new(0));
        let (reqs, gone) = (requests.clone(), client_gone.clone());
        tokio::spawn(async move {
            loop {
                let Ok((sock, _)) = listener.accept().await else {
                    return;
                };
                let (fault, reqs, gone) = (fault.clone(), reqs.clone(), gone.clone());
                tokio::spawn(async move { serve_fault(sock, fault, reqs, gone).await });
            }
        });
        FaultServer {
            addr,
            requests,
            client_gone,
        }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn generations(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
}

/// Reads one request: (path, body).
async fn read_request(sock: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    let head_end = loop {
        let n = sock.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let path = head.split_whitespace().nth(1)?.to_owned();
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    while buf.len() < head_end + len {
        let n = sock.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
    }
    Some((path, buf[head_end..head_end + len].to_vec()))
}

fn json_response(status: u16, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

const SSE_HEAD: &[u8] =
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";

fn delta_event(delta: &Value, finish: Option<&str>) -> Vec<u8> {
    let chunk = serde_json::json!({
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
    });
    format!("data: {chunk}\n\n").into_bytes()
}

async fn serve_fault(
    mut sock: TcpStream,
    fault: Fault,
    reqs: Arc<Mutex<Vec<Value>>>,
    gone: Arc<AtomicUsize>,
) {
    let Some((path, body)) = read_request(&mut sock).await else {
        return;
    };
    match path.as_str() {
        "/v1/models" => {
            let _ = sock
                .write_all(&json_response(
                    200,
                    r#"{"object":"list","data":[{"id":"fault-model","object":"model"}]}"#,
                ))
                .await;
            return;
        }
        "/v1/chat/completions" | "/v1/completions" => {}
        _ => {
            let _ = sock
                .write_all(&json_response(404, r#"{"error":{"message":"no route"}}"#))
                .await;
            return;
        }
    }
    reqs.lock()
        .unwrap()
        .push(serde_json::from_slice(&body).unwrap_or(Value::Null));
    let piece = serde_json::json!({"content": "Hello"});
    match fault {
        Fault::Deltas(deltas, finish) => {
            let mut out = SSE_HEAD.to_vec();
            for d in &deltas {
                out.extend(delta_event(d, None));
            }
            out.extend(delta_event(&serde_json::json!({}), Some(finish)));
            out.extend(
                b"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":5}}\n\ndata: [DONE]\n\n",
            );
            let _ = sock.write_all(&out).await;
        }
        Fault::Close => {}
        Fault::Status(status) => {
            let _ = sock
                .write_all(&json_response(
                    status,
                    r#"{"error":{"message":"injected failure","type":"server_error"}}"#,
                ))
                .await;
        }
        Fault::Hang => {
            tokio::time::sleep(Duration::from_secs(60)).await;
        }
        Fault::QuietAfterOne => {
            let mut out = SSE_HEAD.to_vec();
            out.extend(delta_event(&piece, None));
            let _ = sock.write_all(&out).await;
            tokio::time::sleep(Duration::from_secs(60)).await;
        }
        Fault::DropAfterOne => {
            let mut out = SSE_HEAD.to_vec();
            out.extend(delta_event(&piece, None));
            let _ = sock.write_all(&out).await;
        }
        Fault::Malformed => {
            let mut out = SSE_HEAD.to_vec();
            out.extend(b"data: {\"choices\": [{\"delta\": \n\n");
            let _ = sock.write_all(&out).await;
        }
        Fault::Endless => {
            if sock.write_all(SSE_HEAD).await.is_err() {
                return;
            }
            loop {
                if sock.write_all(&delta_event(&piece, None)).await.is_err() {
                    gone.fetch_add(1, Ordering::SeqCst);
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

fn quick_timeouts() -> Timeouts {
    Timeouts {
        connect: Duration::from_secs(2),
        first_byte: Duration::from_millis(400),
        idle: Duration::from_millis(400),
    }
}

fn upstream(url: String, parallel: u32) -> UpstreamConfig {
    UpstreamConfig {
        parallel,
        timeouts: quick_timeouts(),
        ..UpstreamConfig::new(url)
    }
}

/// A bellows gateway in front of `upstreams`.
async fn front(upstreams: Vec<UpstreamConfig>) -> (TestServer, Arc<Pool>) {
    let metrics = Metrics::new();
    let names: Vec<String> = upstreams.iter().map(|u| u.url.clone()).collect();
    let pool = Arc::new(
        Pool::connect(upstreams, metrics.upstreams(&names))
            .await
            .unwrap(),
    );
    let state = AppState::new(pool.clone())
        .with_metrics(metrics)
        .with_upstream(pool.clone());
    (start_state(state).await, pool)
}

/// A port nothing listens on.
async fn closed_port() -> String {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    format!("http://{addr}")
}

fn outcome(url: &str, outcome: &str) -> String {
    format!(r#"bellows_upstream_requests_total{{outcome="{outcome}",upstream="{url}"}}"#)
}

fn stream_body() -> String {
    chat_body(r#""stream":true,"max_tokens":16"#)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_is_a_typed_error_and_the_gateway_stays_up() {
    let cases: Vec<(Fault, u16, &str)> = vec![
        (Fault::Close, 502, "upstream_unreachable"),
        (Fault::Status(500), 502, "upstream_error"),
        (Fault::Status(503), 503, "upstream_busy"),
        (Fault::Status(400), 400, "upstream_rejected"),
        (Fault::Hang, 504, "upstream_timeout"),
        (Fault::Malformed, 502, "upstream_error"),
    ];
    for (fault, status, code) in cases {
        let up = FaultServer::start(fault.clone()).await;
        let (server, _) = front(vec![upstream(up.url(), 2)]).await;
        for body in [chat_body(r#""max_tokens":16"#), stream_body()] {
            let r = server.post("/v1/chat/completions", &body).await;
            assert_eq!(r.status, status, "{fault:?}: {}", r.text());
            assert_eq!(r.error_code(), code, "{fault:?}");
            let message = r.json()["error"]["message"].as_str().unwrap().to_owned();
            assert!(
                !message.contains(&up.addr.to_string()),
                "the upstream's address stays in the logs: {message}"
            );
        }
        assert_eq!(server.get("/health").await.status, 200, "{fault:?}");
        assert_eq!(
            server
                .metric(&format!(r#"bellows_errors_total{{kind="{code}"}}"#))
                .await,
            2.0,
            "{fault:?}"
        );
        server.stop().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_after_the_first_byte_end_the_stream_with_an_error_event() {
    for (fault, says, code, status) in [
        (
            Fault::DropAfterOne,
            "ended before the reply finished",
            "upstream_error",
            502,
        ),
        (Fault::QuietAfterOne, "went quiet", "upstream_timeout", 504),
    ] {
        let up = FaultServer::start(fault.clone()).await;
        let spare = FaultServer::start(Fault::Deltas(vec![], "stop")).await;
        let (server, _) = front(vec![upstream(up.url(), 2), upstream(spare.url(), 2)]).await;
        let r = server.post("/v1/chat/completions", &stream_body()).await;
        assert_eq!(r.status, 200, "{fault:?}");
        let text = r.text();
        assert!(
            text.contains("Hello"),
            "{fault:?}: the first piece went out: {text}"
        );
        let last = text.split("\n\n").filter(|e| !e.is_empty()).last().unwrap();
        assert!(
            last.contains("\"error\"") && last.contains(says),
            "{fault:?}: {last}"
        );
        let event: Value = serde_json::from_str(last.strip_prefix("data: ").unwrap()).unwrap();
        assert_eq!(event["error"]["code"], code, "{fault:?}");
        // Not streamed: the whole answer is the typed gateway error.
        let r = server
            .post("/v1/chat/completions", &chat_body(r#""max_tokens":16"#))
            .await;
        assert_eq!(r.status, status, "{fault:?}: {}", r.text());
        assert_eq!(r.error_code(), code);
        // Bytes had reached the client: no failover.
        assert_eq!(spare.generations(), 0, "{fault:?}");
        assert_eq!(server.get("/health").await.status, 200);
        server.stop().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_before_the_first_byte_fail_over_to_the_next_upstream() {
    let broken = FaultServer::start(Fault::Status(500)).await;
    let hanging = FaultServer::start(Fault::Hang).await;
    let closing = FaultServer::start(Fault::Close).await;
    let good = FaultServer::start(Fault::Deltas(
        vec![serde_json::json!({"content": "from the good one"})],
        "stop",
    ))
    .await;
    let dead = closed_port().await;
    let urls = [
        dead.clone(),
        broken.url(),
        hanging.url(),
        closing.url(),
        good.url(),
    ];
    let (server, pool) = front(urls.iter().map(|u| upstream(u.clone(), 1)).collect()).await;
    // The dead one did not answer discovery: unhealthy, tried last.
    let health = pool.health();
    assert_eq!(health[0], (dead.clone(), false));
    assert!(health[1..].iter().all(|(_, h)| *h), "{health:?}");

    let r = server
        .post("/v1/chat/completions", &chat_body(r#""max_tokens":16"#))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.json()["choices"][0]["message"]["content"],
        "from the good one"
    );
    let usage = &r.json()["usage"];
    assert_eq!(
        (
            usage["prompt_tokens"].as_u64(),
            usage["completion_tokens"].as_u64()
        ),
        (Some(11), Some(5))
    );
    for (u, kind) in [
        (&broken.url(), "refused"),
        (&hanging.url(), "timeout"),
        (&closing.url(), "connect"),
    ] {
        assert_eq!(server.metric(&outcome(u, kind)).await, 1.0, "{u}");
        assert_eq!(
            server
                .metric(&format!(
                    r#"bellows_upstream_failovers_total{{upstream="{u}"}}"#
                ))
                .await,
            1.0
        );
    }
    assert_eq!(server.metric(&outcome(&good.url(), "ok")).await, 1.0);
    assert_eq!(server.metric(&outcome(&dead, "connect")).await, 0.0);
    assert_eq!(
        server
            .metric(&format!(r#"bellows_upstream_healthy{{upstream="{dead}"}}"#))
            .await,
        0.0
    );
    // A request that only the upstream refuses as bad is not retried elsewhere.
    let rejecting = FaultServer::start(Fault::Status(400)).await;
    let spare = FaultServer::start(Fault::Deltas(vec![], "stop")).await;
    let (server2, _) = front(vec![upstream(rejecting.url(), 1), upstream(spare.url(), 1)]).await;
    let r = server2
        .post("/v1/chat/completions", &chat_body(r#""max_tokens":16"#))
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(spare.generations(), 0);
    server.stop().await.unwrap();
    server2.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_cancels_the_upstream_request() {
    let up = FaultServer::start(Fault::Endless).await;
    let (server, _) = front(vec![upstream(up.url(), 1)]).await;
    let body = stream_body();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut sock = TcpStream::connect(server.addr).await.unwrap();
    sock.write_all(head.as_bytes()).await.unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 1024];
    while !String::from_utf8_lossy(&seen).contains("Hello") {
        let n = sock.read(&mut buf).await.unwrap();
        assert!(n > 0, "the stream started");
        seen.extend_from_slice(&buf[..n]);
    }
    assert_eq!(
        server
            .metric(&format!(
                r#"bellows_upstream_inflight{{upstream="{}"}}"#,
                up.url()
            ))
            .await,
        1.0
    );
    drop(sock);
    // Bounded wait: the upstream sees its connection close.
    for _ in 0..400 {
        if up.client_gone.load(Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(up.client_gone.load(Ordering::SeqCst), 1);
    let inflight = format!(r#"bellows_upstream_inflight{{upstream="{}"}}"#, up.url());
    assert_eq!(wait_metric(&server, &inflight, 0.0).await, 0.0);
    assert_eq!(
        wait_metric(&server, &outcome(&up.url(), "cancelled"), 1.0).await,
        1.0
    );
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn least_busy_routing_under_each_upstreams_cap() {
    let a = FaultServer::start(Fault::Endless).await;
    let b = FaultServer::start(Fault::Endless).await;
    let (server, _) = front(vec![upstream(a.url(), 1), upstream(b.url(), 1)]).await;
    let open = |server_addr: SocketAddr| async move {
        let body = stream_body();
        let head = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let mut sock = TcpStream::connect(server_addr).await.unwrap();
        sock.write_all(head.as_bytes()).await.unwrap();
        let mut buf = [0u8; 1024];
        let n = sock.read(&mut buf).await.unwrap();
        assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
        sock
    };
    let first = open(server.addr).await;
    let second = open(server.addr).await;
    assert_eq!((a.generations(), b.generations()), (1, 1));
    // Both at their cap of one: the next request is refused as busy.
    let r = server.post("/v1/chat/completions", &stream_body()).await;
    assert_eq!(r.status, 503, "{}", r.text());
    assert_eq!(r.error_code(), "queue_full");
    assert!(r.header("retry-after").is_some());
    drop(first);
    drop(second);
    server.stop().await.unwrap();
}

/// `n` through upstreams: one upstream generation per choice (each with its own seed, none
/// asking the upstream for `n`), the prompt counted once; more choices than the upstreams
/// run at once is refused up front (the pool does not queue), not answered busy forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_choices_are_one_upstream_generation_each() {
    let a = FaultServer::start(Fault::Deltas(
        vec![serde_json::json!({"content": "Hello"})],
        "stop",
    ))
    .await;
    let b = FaultServer::start(Fault::Deltas(
        vec![serde_json::json!({"content": "Hello"})],
        "stop",
    ))
    .await;
    let (server, _) = front(vec![upstream(a.url(), 2), upstream(b.url(), 2)]).await;
    for stream in [false, true] {
        let extra = if stream {
            r#","stream":true,"stream_options":{"include_usage":true}"#
        } else {
            ""
        };
        let body = chat_body(&format!(r#""n":3,"seed":5,"max_tokens":16{extra}"#));
        let r = server.post("/v1/chat/completions", &body).await;
        assert_eq!(r.status, 200, "{}", r.text());
        let (contents, usage) = if stream {
            let events = r.events();
            let mut contents = vec![String::new(); 3];
            for e in &events {
                if let Some(c) = e["choices"].get(0) {
                    let i = c["index"].as_u64().unwrap() as usize;
                    contents[i].push_str(c["delta"]["content"].as_str().unwrap_or_default());
                }
            }
            (contents, events.last().unwrap()["usage"].clone())
        } else {
            let v = r.json();
            let contents = (0..3)
                .map(|i| {
                    assert_eq!(v["choices"][i]["index"], i);
                    v["choices"][i]["message"]["content"]
                        .as_str()
                        .unwrap()
                        .to_owned()
                })
                .collect();
            (contents, v["usage"].clone())
        };
        assert_eq!(contents, ["Hello", "Hello", "Hello"], "{}", r.text());
        // The fault upstream reports 11 prompt and 5 completion tokens per generation.
        assert_eq!(usage["prompt_tokens"], 11, "{usage}");
        assert_eq!(usage["completion_tokens"], 15, "{usage}");
        assert_eq!(usage["total_tokens"], 26, "{usage}");
    }
    let mut sent: Vec<Value> = a.requests.lock().unwrap().clone();
    sent.extend(b.requests.lock().unwrap().iter().cloned());
    assert_eq!(sent.len(), 6);
    let mut seeds: Vec<u64> = sent.iter().map(|s| s["seed"].as_u64().unwrap()).collect();
    seeds.sort_unstable();
    assert_eq!(seeds, [5, 5, 6, 6, 7, 7]);
    assert!(sent.iter().all(|s| s.get("n").is_none()), "{sent:?}");

    // Four places in all: five choices could never be admitted together.
    let r = server
        .post(
            "/v1/chat/completions",
            &chat_body(r#""n":5,"max_tokens":16"#),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["error"]["param"], "n");
    assert_eq!(a.generations() + b.generations(), 6);
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_are_decoded_from_an_upstream_that_ignores_tools_or_sends_them_natively() {
    let tools = r#""tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}],"max_tokens":64"#;
    let in_content = FaultServer::start(Fault::Deltas(
        vec![serde_json::json!({
            "content": "<tool_call>{\"name\": \"get_weather\", \"arguments\": {'city': 'Paris'}}</tool_call>"
        })],
        "stop",
    ))
    .await;
    let native = FaultServer::start(Fault::Deltas(
        vec![
            serde_json::json!({"tool_calls": [{"index": 0, "id": "x", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":"}}]}),
            serde_json::json!({"tool_calls": [{"index": 0, "function": {"arguments": " \"Paris\"}"}}]}),
        ],
        "tool_calls",
    ))
    .await;
    for up in [&in_content, &native] {
        let (server, _) = front(vec![upstream(up.url(), 1)]).await;
        for stream in [false, true] {
            let body = chat_body(&format!(r#"{tools},"stream":{stream}"#));
            let r = server.post("/v1/chat/completions", &body).await;
            assert_eq!(r.status, 200, "{}", r.text());
            let (name, args, finish) = if stream {
                let mut name = String::new();
                let mut args = String::new();
                let mut finish = Value::Null;
                for e in r.events() {
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
                let j = r.json();
                let call = &j["choices"][0]["message"]["tool_calls"][0]["function"];
                (
                    call["name"].as_str().unwrap_or_default().to_owned(),
                    call["arguments"].as_str().unwrap_or_default().to_owned(),
                    j["choices"][0]["finish_reason"].clone(),
                )
            };
            assert_eq!(name, "get_weather", "{}", r.text());
            let args: Value = serde_json::from_str(&args).unwrap();
            assert_eq!(args, serde_json::json!({"city": "Paris"}));
            assert_eq!(finish, "tool_calls");
        }
        // The chat endpoint got the tools natively.
        let sent = up.requests.lock().unwrap()[0].clone();
        assert_eq!(
            sent["tools"][0]["function"]["name"], "get_weather",
            "{sent}"
        );
        assert_eq!(sent["model"], "fault-model");
        assert_eq!(sent["stream"], true);
        server.stop().await.unwrap();
    }
    // The Python-literal arguments were repaired and counted (on a fresh front, so the
    // count is this request's alone).
    let (server, _) = front(vec![upstream(in_content.url(), 1)]).await;
    let r = server.post("/v1/chat/completions", &chat_body(tools)).await;
    assert_eq!(r.status, 200);
    assert_eq!(
        server
            .metric(r#"bellows_repairs_total{kind="python_literal"}"#)
            .await,
        1.0
    );
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_chat_only_upstream_cannot_do_is_refused_by_name() {
    let up = FaultServer::start(Fault::Deltas(vec![], "stop")).await;
    let (server, _) = front(vec![upstream(up.url(), 1)]).await;
    let r = server
        .post("/v1/completions", r#"{"prompt":"hello","max_tokens":4}"#)
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.error_code(), "upstream_unsupported");
    let r = server
        .post(
            "/v1/chat/completions",
            &chat_body(r#""logprobs":true,"max_tokens":4"#),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["error"]["param"], "logprobs");
    assert_eq!(up.generations(), 0);
    server.stop().await.unwrap();
}

/// A real bellows on the tiny GGUF, served over HTTP, and a second one in front of it.
async fn start_tiny_bellows() -> TestServer {
    let args = ServeArgs {
        model: Some(tiny().to_string_lossy().into_owned()),
        ctx: Some(1024),
        threads: Some(1),
        parallel: Some(1),
        ..ServeArgs::default()
    };
    let (engine, defaults) = gateway::serve::load_engine(&args.resolve().unwrap()).unwrap();
    start_state(AppState::new(engine).with_defaults(defaults)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_bellows_upstream_is_sent_prompts_rendered_here() {
    let back = start_tiny_bellows().await;
    let back_url = format!("http://{}/v1", back.addr);
    let props = back.get("/props").await.json();
    assert!(
        props["chat_template"]
            .as_str()
            .unwrap()
            .contains("im_start")
    );
    assert_eq!(props["default_generation_settings"]["n_ctx"], 1024);

    let (server, pool) = front(vec![upstream(back_url.clone(), 1)]).await;
    // The template came from /props: the front renders as the back does.
    let messages = [models::ChatMessage::new("user", "hi")];
    use models::Engine;
    assert_eq!(
        pool.render_chat(&messages, &[]).unwrap(),
        back.state.engine.render_chat(&messages, &[]).unwrap()
    );
    assert_eq!(
        pool.info().n_ctx,
        1024,
        "the context size came from the upstream"
    );
    let listed = server.get("/v1/models").await.json();
    let back_id = back.state.engine.info().id.clone();
    assert!(
        listed["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["id"] == back_id.as_str()),
        "{listed}"
    );

    for stream in [false, true] {
        let options = if stream {
            r#","stream_options":{"include_usage":true}"#
        } else {
            ""
        };
        let body = format!(
            r#"{{"messages":[{{"role":"user","content":"hi"}}],"max_tokens":8,"temperature":0,"stream":{stream}{options}}}"#
        );
        let r = server.post("/v1/chat/completions", &body).await;
        assert_eq!(r.status, 200, "{}", r.text());
        let usage = if stream {
            let events = r.events();
            events.last().unwrap()["usage"].clone()
        } else {
            r.json()["usage"].clone()
        };
        // Token counts are the upstream's: the rendered prompt is several tokens.
        assert!(usage["prompt_tokens"].as_u64().unwrap() > 3, "{usage}");
        assert!(usage["completion_tokens"].as_u64().unwrap() >= 1, "{usage}");
    }
    // The back end served raw completions (the prompt rendered in front), never chat.
    assert_eq!(
        back.metric(r#"bellows_requests_total{endpoint="completions",status="200"}"#)
            .await,
        2.0
    );
    assert_eq!(
        back.metric(r#"bellows_requests_total{endpoint="chat_completions",status="200"}"#)
            .await,
        0.0
    );
    // A JSON response_format reaches the back end as llama-server's `json_schema`, which
    // bellows' /v1/completions enforces: even the noise model answers schema-valid JSON.
    let body = r#"{"messages":[{"role":"user","content":"colour?"}],"max_tokens":200,"response_format":{"type":"json_schema","json_schema":{"name":"c","schema":{"type":"object","properties":{"c":{"enum":["red","green"]}},"required":["c"],"additionalProperties":false}}}}"#;
    let r = server.post("/v1/chat/completions", body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let content = r.json()["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    let answer: Value = serde_json::from_str(&content).unwrap_or_else(|e| panic!("{e}: {content}"));
    assert!(answer["c"] == "red" || answer["c"] == "green", "{answer}");
    // The prompt's length is known before the first piece (counted by the upstream's
    // tokenizer alongside the request), as the Engine trait promises.
    let rendered = pool.render_chat(&messages, &[]).unwrap();
    let mut generation = pool
        .generate(models::GenerateRequest {
            prompt: models::Prompt::Chat {
                messages: messages.to_vec(),
                tools: Vec::new(),
            },
            sampling: models::Sampling::default(),
            max_tokens: Some(4),
            stop: Vec::new(),
            grammar: None,
            logprobs: None,
        })
        .await
        .unwrap();
    let counted = back.state.engine.tokenize(&rendered).unwrap().len() as u32;
    assert!(counted > 3);
    assert_eq!(generation.prompt_tokens, counted);
    while let Some(event) = generation.next().await {
        if let models::GenEvent::Done { timings, .. } = event {
            assert!(timings.prompt_tokens >= counted, "{timings:?}");
        }
    }
    // Tokenize goes to the upstream's tokenizer.
    assert_eq!(
        pool.tokenize("hello world").unwrap(),
        back.state.engine.tokenize("hello world").unwrap()
    );
    // The back end going away is a typed error; the front stays up and says so.
    back.stop().await.unwrap();
    let r = server
        .post("/v1/chat/completions", &chat_body(r#""max_tokens":4"#))
        .await;
    assert_eq!(r.status, 502, "{}", r.text());
    assert_eq!(r.error_code(), "upstream_unreachable");
    pool.check_health().await;
    assert_eq!(pool.health(), vec![(back_url, false)]);
    assert_eq!(server.get("/health").await.status, 200);
    server.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_comes_up_later_is_found_by_the_health_checks() {
    let late = closed_port().await;
    let good = FaultServer::start(Fault::Deltas(
        vec![serde_json::json!({"content": "first"})],
        "stop",
    ))
    .await;
    let (server, pool) = front(vec![upstream(late.clone(), 1), upstream(good.url(), 1)]).await;
    assert_eq!(pool.health()[0], (late.clone(), false));
    let series = format!(r#"bellows_upstream_healthy{{upstream="{late}"}}"#);
    assert_eq!(server.metric(&series).await, 0.0);
    // It starts listening: the next round of health checks finds it, and as the healthy
    // first upstream it takes the next request.
    let up = FaultServer::start_on(
        late.strip_prefix("http://").unwrap(),
        Fault::Deltas(vec![serde_json::json!({"content": "late"})], "stop"),
    )
    .await;
    pool.check_health().await;
    assert_eq!(pool.health()[0], (late.clone(), true));
    assert_eq!(server.metric(&series).await, 1.0);
    let r = server
        .post("/v1/chat/completions", &chat_body(r#""max_tokens":4"#))
        .await;
    assert_eq!(r.json()["choices"][0]["message"]["content"], "late");
    assert_eq!(up.generations(), 1);
    assert_eq!(good.generations(), 0);
    server.stop().await.unwrap();
}

#[test]
fn a_profile_for_upstreams_keeps_its_protocol_but_not_a_lazy_grammar() {
    let d = gateway::serve::upstream_defaults(Some("qwen2.5-coder-1.5b-instruct")).unwrap();
    assert_eq!(d.protocol, codec::format::FormatId::Hermes);
    assert_eq!(d.grammar, models::GrammarMode::Off);
    let local = gateway::defaults::Defaults::of_profile(
        &models::Profile::named("qwen2.5-coder-1.5b-instruct").unwrap(),
    );
    assert_eq!(
        local.grammar,
        models::GrammarMode::Lazy,
        "the profile itself is lazy"
    );
    let generic = gateway::serve::upstream_defaults(None).unwrap();
    assert_eq!(generic.protocol, codec::format::FormatId::Text);
    assert!(gateway::serve::upstream_defaults(Some("no-such-profile")).is_err());
}
