//! Test harness: an in-process server on 127.0.0.1:0 over a scripted engine, and a raw
//! HTTP/1.1 client that shows the exact bytes the server sent.

#![allow(dead_code, clippy::unwrap_used)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use gateway::server::Server;
use gateway::state::AppState;
use models::engine::BoxFuture;
use models::{
    ChatMessage, Engine, EngineError, GenerateRequest, Generation, ModelInfo, Script,
    ScriptedEngine, ToolSpec,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub const MODEL: &str = "scripted-model";

pub struct TestServer {
    pub addr: SocketAddr,
    pub state: Arc<AppState>,
    stop: Option<oneshot::Sender<()>>,
    handle: Option<JoinHandle<std::io::Result<()>>>,
}

impl TestServer {
    /// Asks for a graceful shutdown and waits for the server to finish draining.
    pub async fn stop(mut self) -> std::io::Result<()> {
        self.begin_stop();
        self.join().await
    }

    pub fn begin_stop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }

    pub async fn join(&mut self) -> std::io::Result<()> {
        match self.handle.take() {
            Some(h) => h.await.expect("server task does not panic"),
            None => Ok(()),
        }
    }

    pub async fn get(&self, path: &str) -> Resp {
        request(self.addr, "GET", path, &[], b"").await
    }

    pub async fn post(&self, path: &str, body: &str) -> Resp {
        request(
            self.addr,
            "POST",
            path,
            &[("content-type", "application/json")],
            body.as_bytes(),
        )
        .await
    }

    pub async fn metrics(&self) -> String {
        String::from_utf8(self.get("/metrics").await.body).unwrap()
    }

    pub async fn metric(&self, series: &str) -> f64 {
        gateway::metrics::sample(&self.metrics().await, series)
            .unwrap_or_else(|| panic!("no sample {series}"))
    }
}

/// A server over `engine` with sequential ids (so bodies are comparable byte for byte).
pub async fn start_engine(engine: Arc<dyn Engine>) -> TestServer {
    let state = AppState::new(engine).with_ids(gateway::ids::IdGen::sequential());
    start_state(state).await
}

pub async fn start_state(state: AppState) -> TestServer {
    let server = Server::bind("127.0.0.1:0", state)
        .await
        .expect("bind loopback")
        .with_drain_timeout(Duration::from_secs(10));
    let addr = server.local_addr().unwrap();
    let state = Arc::clone(server.state());
    let (tx, rx) = oneshot::channel::<()>();
    let handle = tokio::spawn(server.run(async move {
        let _ = rx.await;
    }));
    TestServer {
        addr,
        state,
        stop: Some(tx),
        handle: Some(handle),
    }
}

/// A scripted engine replying `text` in 3-byte pieces unless scripts are pushed.
pub fn scripted(text: &str) -> Arc<ScriptedEngine> {
    Arc::new(ScriptedEngine::new(MODEL, Script::chunked(text, 3)))
}

pub async fn start(text: &str) -> (TestServer, Arc<ScriptedEngine>) {
    let engine = scripted(text);
    let server = start_engine(engine.clone()).await;
    (server, engine)
}

/// A response as read off the wire.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// The body after de-chunking.
    pub body: Vec<u8>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub fn text(&self) -> String {
        String::from_utf8(self.body.clone()).unwrap()
    }

    /// The `code` of an OpenAI error body.
    pub fn error_code(&self) -> String {
        self.json()["error"]["code"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// The JSON documents of an SSE body, without `[DONE]`.
    pub fn events(&self) -> Vec<serde_json::Value> {
        sse_events(&self.text())
    }
}

/// The text a stream's first choice carried in its deltas' `field` (`content`,
/// `reasoning_content`), joined.
pub fn delta_text(events: &[serde_json::Value], field: &str) -> String {
    events
        .iter()
        .filter_map(|e| e["choices"][0]["delta"][field].as_str())
        .collect()
}

/// The JSON documents of an SSE body, without `[DONE]`. Every frame must be a `data:` event.
pub fn sse_events(text: &str) -> Vec<serde_json::Value> {
    text.split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| {
            e.strip_prefix("data: ")
                .unwrap_or_else(|| panic!("not a data event: {e:?}"))
        })
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

/// One request on a fresh connection (`Connection: close`), read to the end.
pub async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Resp {
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    send_raw(addr, &bytes).await
}

/// Sends raw bytes and parses the response.
pub async fn send_raw(addr: SocketAddr, bytes: &[u8]) -> Resp {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    // The server may answer (413) and close before reading a large body; a failed write is
    // then expected, and the answer is still readable.
    let _ = s.write_all(bytes).await;
    let mut buf = Vec::new();
    // Long enough for a real model's non-streamed reply on a loaded 2-core machine (a 0.5B
    // writing code took over 30 s beside a benchmark); the servers close every answer.
    let _ = tokio::time::timeout(Duration::from_secs(120), s.read_to_end(&mut buf)).await;
    parse_response(&buf)
}

pub fn parse_response(buf: &[u8]) -> Resp {
    let split = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no response head in {:?}", String::from_utf8_lossy(buf)));
    let head = std::str::from_utf8(&buf[..split]).unwrap();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let raw = &buf[split + 4..];
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let body = if chunked { dechunk(raw) } else { raw.to_vec() };
    Resp {
        status,
        headers,
        body,
    }
}

fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(nl) = raw.windows(2).position(|w| w == b"\r\n") {
        let size =
            usize::from_str_radix(std::str::from_utf8(&raw[..nl]).unwrap().trim(), 16).unwrap();
        if size == 0 {
            break;
        }
        out.extend_from_slice(&raw[nl + 2..nl + 2 + size]);
        raw = &raw[nl + 2 + size + 2..];
    }
    out
}

/// A minimal chat body.
pub fn chat_body(extra: &str) -> String {
    let sep = if extra.is_empty() { "" } else { "," };
    format!(
        r#"{{"model":"{MODEL}","messages":[{{"role":"user","content":"hi there"}}]{sep}{extra}}}"#
    )
}

/// Replaces `"created":<digits>` by `"created":0` so bodies compare byte for byte.
pub fn zero_created(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("\"created\":") {
        let (a, b) = rest.split_at(i + 10);
        out.push_str(a);
        let digits = b.bytes().take_while(u8::is_ascii_digit).count();
        out.push('0');
        rest = &b[digits..];
    }
    out.push_str(rest);
    out
}

/// Polls the metrics until `series` has `value` (bounded: about 10 s), returning the last
/// value seen.
pub async fn wait_metric(server: &TestServer, series: &str, value: f64) -> f64 {
    let mut last = f64::NAN;
    for _ in 0..400 {
        last = server.metric(series).await;
        if last == value {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    last
}

/// Polls the metrics until `series` is above `floor` (bounded: about 10 s), returning the last
/// value seen.
pub async fn wait_metric_above(server: &TestServer, series: &str, floor: f64) -> f64 {
    let mut last = f64::NAN;
    for _ in 0..400 {
        last = server.metric(series).await;
        if last > floor {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    last
}

/// An engine that refuses every generation as if its queue were full.
#[derive(Debug)]
pub struct FullEngine {
    pub inner: ScriptedEngine,
}

impl Engine for FullEngine {
    fn info(&self) -> &ModelInfo {
        self.inner.info()
    }
    fn generate(&self, _req: GenerateRequest) -> BoxFuture<'_, Result<Generation, EngineError>> {
        Box::pin(async { Err(EngineError::QueueFull { capacity: 8 }) })
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

/// The tiny random-weight GGUF: `$BELLOWS_TINY_GGUF` when set, else the cached `tiny` (made
/// when missing). Every test of the real engine on noise output finds it here.
pub fn tiny() -> std::path::PathBuf {
    let path = std::env::var("BELLOWS_TINY_GGUF")
        .ok()
        .filter(|p| !p.is_empty());
    path.map(std::path::PathBuf::from).unwrap_or_else(|| {
        gateway::serve::resolve_model(Some("tiny"))
            .unwrap_or_else(|e| panic!("{e}; run scripts/fetch-models.sh tiny"))
    })
}

/// Sends a request on a raw connection and returns the connection.
pub async fn open(addr: std::net::SocketAddr, path: &str, body: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    s
}

/// Reads until `needle` has been seen `times` times (bounded by the stream's end).
pub async fn read_until(s: &mut TcpStream, needle: &str, times: usize) -> String {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while String::from_utf8_lossy(&buf).matches(needle).count() < times {
        let n = tokio::time::timeout(Duration::from_secs(10), s.read(&mut chunk))
            .await
            .expect("the server keeps sending")
            .unwrap();
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8_lossy(&buf).into_owned()
}
