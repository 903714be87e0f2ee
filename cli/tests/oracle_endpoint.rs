//! `bellows agent --endpoint` completes the oracle task suite through a remote engine.
//!
//! A scripted OpenAI-compatible server, written here, replays each task's `oracle.jsonl` as
//! streamed completions, one reply per generation request. The engine is the one
//! `--endpoint` builds (`cli::endpoint::engine`: the gateway's upstream `Pool`, discovery
//! included), and every task runs through `agent::bench::run_task` with the settings of
//! `bellows agent bench --engine oracle`, so the HTTP hop is the only difference from the
//! in-process oracle bench (`agent/tests/bench.rs`), and the results must be the same: every
//! task solved, no false success, one request per oracle reply, every reply acted on.
//!
//! Two servers: one like llama-server or bellows, which publishes its chat template at
//! `/props` (prompts are rendered here and sent to `/v1/completions`), and one like vLLM,
//! without `/props` (messages go to `/v1/chat/completions`). Both count tokens at
//! `/tokenize`, which the agent measures its prompt with. Each answer is written in slices
//! of a few bytes, so events, lines and JSON are split across reads.

#![allow(clippy::unwrap_used)] // Tests fail loudly on the first surprise.

#[path = "../../agent/tests/common/prereq.rs"]
mod prereq;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent::bench::{self, BenchConfig, Task};
use agent::sandbox::Confinement;
use agent::{ApprovalMode, Config, GrammarChoice, Policy};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The one model the server lists.
const MODEL: &str = "oracle-model";
/// The context the server states: the reply reserve is then the oracle bench's 1024.
const N_CTX: u32 = 8192;
/// What the server says once a task's replies are spent (the in-process oracle's last words).
const NOTHING_MORE: &str = "The oracle has nothing more to say.\n";
/// Characters per streamed piece, as `agent::bench::oracle_engine` chunks its replies.
const PIECE_CHARS: usize = 8;
/// Bytes per write of an answer: a prime, so slices fall anywhere in an event.
const WRITE_BYTES: usize = 61;

/// Which OpenAI API the server offers for generations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Api {
    /// `/props` with a chat template, and `/v1/completions` (llama-server, bellows).
    Completions,
    /// No `/props`, and `/v1/chat/completions` (vLLM).
    Chat,
}

impl Api {
    fn path(self) -> &'static str {
        match self {
            Api::Completions => "/v1/completions",
            Api::Chat => "/v1/chat/completions",
        }
    }
}

/// What the server replays and what it saw, for the task loaded now.
#[derive(Debug, Default)]
struct Script {
    replies: VecDeque<String>,
    /// Every request since the task was loaded: (path, JSON body or `Null`).
    requests: Vec<(String, Value)>,
}

/// A scripted OpenAI-compatible server on 127.0.0.1, on a runtime of its own (so that the
/// agent's synchronous `/tokenize` calls, which block a worker of the bench's runtime, never
/// wait on it).
struct OracleServer {
    addr: SocketAddr,
    script: Arc<Mutex<Script>>,
    _runtime: tokio::runtime::Runtime,
}

impl OracleServer {
    /// A server offering `api`, and `/tokenize` (llama-server's: `{"content"}` in,
    /// `{"tokens"}` out) if `tokenize`.
    fn start(api: Api, tokenize: bool) -> OracleServer {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap();
        let script = Arc::new(Mutex::new(Script::default()));
        let shared = Arc::clone(&script);
        runtime.spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                tokio::spawn(answer(sock, api, tokenize, Arc::clone(&shared)));
            }
        });
        OracleServer {
            addr,
            script,
            _runtime: runtime,
        }
    }

    fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Replays `replies` from the next generation on, forgetting what was seen before.
    fn load(&self, replies: &[String]) {
        let mut s = self.script.lock().unwrap();
        s.replies = replies.iter().cloned().collect();
        s.requests.clear();
    }

    /// The replies left and the requests seen since [`OracleServer::load`].
    fn take(&self) -> (usize, Vec<(String, Value)>) {
        let mut s = self.script.lock().unwrap();
        (s.replies.len(), std::mem::take(&mut s.requests))
    }
}

/// Reads one request: (method, path, body). `None` when the client went away.
async fn read_request(sock: &mut TcpStream) -> Option<(String, String, Vec<u8>)> {
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
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut words = head.split_whitespace();
    let method = words.next()?.to_owned();
    let path = words.next()?.to_owned();
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
    Some((method, path, buf[head_end..head_end + len].to_vec()))
}

/// The server's token count of `text`: about one token per four bytes, as for English.
fn count(text: &str) -> u32 {
    text.len().div_ceil(4) as u32
}

fn json_response(status: u16, body: &Value) -> Vec<u8> {
    let body = body.to_string();
    format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn not_found() -> Vec<u8> {
    json_response(
        404,
        &json!({"error": {"message": "not found", "type": "not_found_error"}}),
    )
}

/// Answers one connection's request.
async fn answer(mut sock: TcpStream, api: Api, tokenize: bool, script: Arc<Mutex<Script>>) {
    let Some((method, path, body)) = read_request(&mut sock).await else {
        return;
    };
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    script
        .lock()
        .unwrap()
        .requests
        .push((path.clone(), request.clone()));
    let out = match (method.as_str(), path.as_str()) {
        ("GET", "/v1/models") => json_response(
            200,
            &json!({"object": "list", "data": [{
                "id": MODEL,
                "object": "model",
                "owned_by": "oracle",
                "max_model_len": N_CTX,
                "meta": {"n_ctx_train": N_CTX, "n_vocab": 32000},
            }]}),
        ),
        ("GET", "/props") if api == Api::Completions => json_response(
            200,
            &json!({
                "chat_template": models::template::CHATML_TEMPLATE,
                "bos_token": "",
                "eos_token": "<|im_end|>",
                "default_generation_settings": {"n_ctx": N_CTX},
                "total_slots": 1,
            }),
        ),
        ("POST", "/tokenize") if tokenize => {
            let n = count(request["content"].as_str().unwrap_or_default());
            json_response(200, &json!({"tokens": (0..n).collect::<Vec<u32>>()}))
        }
        ("POST", p) if p == api.path() => {
            let reply = script.lock().unwrap().replies.pop_front();
            stream(api, &request, reply.as_deref().unwrap_or(NOTHING_MORE))
        }
        _ => not_found(),
    };
    for slice in out.chunks(WRITE_BYTES) {
        // The agent closes the connection once it has the turn's action.
        if sock.write_all(slice).await.is_err() {
            return;
        }
    }
    let _ = sock.shutdown().await;
}

/// `reply` as an OpenAI event stream: a chunk per piece, the finish reason, the usage (asked
/// for with `stream_options.include_usage`), `[DONE]`.
fn stream(api: Api, request: &Value, reply: &str) -> Vec<u8> {
    let prompt_tokens = match api {
        Api::Completions => count(request["prompt"].as_str().unwrap_or_default()),
        Api::Chat => request["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| count(m["content"].as_str().unwrap_or_default()))
            .sum(),
    };
    let chunk = |text: &str, finish: Option<&str>| match api {
        Api::Completions => json!({
            "id": "cmpl-oracle",
            "object": "text_completion",
            "model": MODEL,
            "choices": [{"index": 0, "text": text, "finish_reason": finish}],
        }),
        Api::Chat => json!({
            "id": "chatcmpl-oracle",
            "object": "chat.completion.chunk",
            "model": MODEL,
            "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}],
        }),
    };
    let chars: Vec<char> = reply.chars().collect();
    let pieces: Vec<String> = chars
        .chunks(PIECE_CHARS)
        .map(|c| c.iter().collect())
        .collect();
    let mut events: Vec<Value> = pieces.iter().map(|p| chunk(p, None)).collect();
    events.push(chunk("", Some("stop")));
    events.push(json!({
        "id": "oracle",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": pieces.len(),
            "total_tokens": prompt_tokens as usize + pieces.len(),
        },
    }));
    let mut out =
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\
        connection: close\r\n\r\n"
            .to_vec();
    for e in events {
        out.extend_from_slice(format!("data: {e}\n\n").as_bytes());
    }
    out.extend_from_slice(b"data: [DONE]\n\n");
    out
}

/// The tasks of `benches/agent-tasks` that have an oracle.
fn suite() -> Vec<Task> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../benches/agent-tasks");
    let tasks: Vec<Task> = bench::load_suite(&dir)
        .unwrap()
        .into_iter()
        .filter(|t| t.oracle.is_some())
        .collect();
    assert!(tasks.len() >= 12, "{} tasks", tasks.len());
    tasks
}

/// Runs `tasks` through a server offering `api` (and `/tokenize` if `tokenize`), checked as
/// the in-process oracle bench is.
fn solves_through(api: Api, tokenize: bool, tasks: &[Task]) {
    // As `bellows agent bench` chooses, without flags.
    let confinement = Confinement::for_kernel(false, false);
    if !prereq::landlock(!matches!(confinement, Confinement::Refused(_))) {
        return;
    }
    let server = OracleServer::start(api, tokenize);

    // The engine `bellows agent --endpoint URL` builds, with no --profile or --model.
    let endpoint = cli::endpoint::EndpointArgs {
        endpoint: Some(server.url()),
        ..Default::default()
    };
    let model = cli::model::ModelArgs {
        model: None,
        profile: None,
        ctx: None,
        threads: None,
        gpu_layers: 0,
        flash_attn: models::FlashAttn::default(),
        cache_type_k: models::CacheType::default(),
        cache_type_v: models::CacheType::default(),
    };
    let (engine, profile) =
        cli::endpoint::engine(&endpoint, &model, cli::agent_cmd::AGENT_MODEL, 1).unwrap();
    assert_eq!(profile.name, "generic");
    assert_eq!(engine.info().id, MODEL);
    assert_eq!(
        engine.info().n_ctx,
        N_CTX,
        "the context came from the server"
    );
    assert_eq!(
        engine.chat_template().is_some(),
        api == Api::Completions,
        "the template is used exactly where the server publishes one"
    );
    let (_, discovery) = server.take();
    let asked: Vec<&str> = discovery.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(asked, ["/v1/models", "/props"]);

    // The session settings of `bellows agent bench --engine oracle`...
    let mut session = Config::new("", Policy::new(ApprovalMode::Auto));
    session.max_turns = 8;
    session.reply_reserve = 1024;
    session.actions_per_turn = 1;
    session.found_tests = true;
    // ...with the profile applied as `bellows agent --endpoint` applies it: the generic
    // profile's text protocol, no grammar, default sampling and full prompt change nothing.
    session.grammar = match profile.grammar {
        models::GrammarMode::Off => GrammarChoice::Off,
        models::GrammarMode::Lazy => GrammarChoice::Lazy,
        models::GrammarMode::Strict => GrammarChoice::Strict,
    };
    session.sampling = profile.sampling.clone();
    session.prompt_style = codec::registry::PromptStyle::parse(&profile.prompt).unwrap();
    session.protocol = agent::Protocol::parse(&profile.agent_protocol).unwrap();
    session.actions_per_turn = match profile.actions_per_turn {
        Some(0) => usize::MAX,
        Some(n) => n as usize,
        None => session.actions_per_turn,
    };
    session.reply_reserve = session.reply_reserve.min(engine.info().n_ctx / 4);
    assert_eq!(session.grammar, GrammarChoice::Off);
    assert_eq!(session.protocol, agent::Protocol::Text);
    assert_eq!((session.actions_per_turn, session.reply_reserve), (1, 1024));
    let bench_cfg = BenchConfig::new(session, confinement);

    // As the CLI's bench runs its tasks.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut results = Vec::new();
    let mut problems = Vec::new();
    for task in tasks {
        let oracle = task.oracle.as_ref().unwrap();
        server.load(oracle);
        let r = match runtime.block_on(bench::run_task(engine.as_ref(), task, &bench_cfg)) {
            Ok(r) => r,
            Err(e) => {
                problems.push(format!("{}: the session failed: {e}", task.name));
                server.take();
                continue;
            }
        };
        let (left, requests) = server.take();
        let generations: Vec<&Value> = requests
            .iter()
            .filter(|(p, _)| p.starts_with("/v1/") && p.ends_with("completions"))
            .map(|(p, body)| {
                assert_eq!(p, api.path(), "{}: a generation went to {p}", task.name);
                body
            })
            .collect();
        let mut problem = |what: String| problems.push(format!("{}: {what}", task.name));
        if !r.solved() {
            problem(format!(
                "not solved (stop {}, verify {})",
                r.stop(),
                r.verified
            ));
        }
        if r.false_success() {
            problem("a false success".to_owned());
        }
        if generations.is_empty() {
            problem("the server saw no generation".to_owned());
        }
        if generations.len() != oracle.len() || left != 0 {
            problem(format!(
                "{} generations for {} oracle replies ({left} left unplayed)",
                generations.len(),
                oracle.len()
            ));
        }
        if (r.turns, r.acted) != (oracle.len() as u32, oracle.len() as u32) {
            problem(format!(
                "{} turns, {} acted, for {} oracle replies",
                r.turns,
                r.acted,
                oracle.len()
            ));
        }
        if !r.pass1 || r.check_rejected != 0 {
            problem(format!(
                "pass@1 {}, {} DONEs rejected by the check",
                r.pass1, r.check_rejected
            ));
        }
        // Every generation asked for a stream with usage, of the listed model, and the first
        // one carried the task.
        for g in &generations {
            if g["model"] != MODEL
                || g["stream"] != true
                || g["stream_options"]["include_usage"] != true
            {
                problem(format!("a generation request of the wrong shape: {g}"));
            }
        }
        if let Some(first) = generations.first() {
            let prompt = match api {
                Api::Completions => first["prompt"].as_str().unwrap_or_default().to_owned(),
                Api::Chat => first["messages"].to_string(),
            };
            let needle = match api {
                Api::Completions => task.prompt.clone(),
                Api::Chat => Value::String(task.prompt.clone()).to_string(),
            };
            let needle = needle.trim_matches('"');
            if !prompt.contains(needle) {
                problem(format!("the first prompt lacks the task: {prompt}"));
            }
        }
        // The generated count reached the journal (it is the server's usage, or the pieces
        // read when the agent stopped the stream first).
        if r.generated_tokens == 0 {
            problem("no generated tokens were recorded".to_owned());
        }
        results.push(r);
    }
    let report = bench::report(&results);
    eprint!("{report}");
    assert!(problems.is_empty(), "{}\n{report}", problems.join("\n"));
    assert!(
        report.ends_with(&format!(
            "solved {n}/{n}, false successes 0\n",
            n = tasks.len()
        )),
        "{report}"
    );
    // The prompt's length reached the journal: the server's usage, or (rendered here) its
    // `/tokenize` count. (A chat-only server's usage can be lost to a stream the agent
    // stopped, so a turn may record none.)
    let prompt_tokens: u64 = results.iter().map(|r| r.prompt_tokens).sum();
    assert!(prompt_tokens > 0, "no prompt tokens were recorded");
}

#[test]
fn the_oracle_suite_is_solved_through_a_server_that_publishes_its_template() {
    solves_through(Api::Completions, true, &suite());
}

#[test]
fn the_oracle_suite_is_solved_through_a_chat_only_server() {
    solves_through(Api::Chat, true, &suite());
}

/// Ollama has no `/tokenize`, and vLLM's takes `{"prompt"}`, not llama-server's
/// `{"content"}`. The agent measures every prompt with `Engine::tokenize`; where that fails,
/// `agent::history::measure_with` estimates the count from the prompt's bytes (it once counted
/// a failure as too long, and the session stopped as `budget` before its first generation).
#[test]
fn a_task_is_solved_through_a_server_without_tokenize() {
    let task: Vec<Task> = suite()
        .into_iter()
        .filter(|t| t.name == "create-file")
        .collect();
    solves_through(Api::Chat, false, &task);
}
