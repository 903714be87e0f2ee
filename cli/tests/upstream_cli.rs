//! Two `bellows` processes over real HTTP: `bellows serve --upstream` in front of a `bellows
//! serve` on the tiny GGUF, and `bellows agent --endpoint` on that same server.

#![allow(clippy::unwrap_used)]

#[path = "../../gateway/tests/common/mod.rs"]
mod common;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::request;

/// A `bellows serve` child, killed when dropped.
struct Served {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(args: &[&str]) -> Served {
    let mut child = Command::new(env!("CARGO_BIN_EXE_bellows"))
        .arg("serve")
        .args(["--port", "0"])
        .args(args)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut log = String::new();
    let addr = loop {
        let Ok(line) = rx.recv_timeout(Duration::from_secs(60)) else {
            let _ = child.kill();
            panic!("the server did not log its address:\n{log}");
        };
        log.push_str(&line);
        log.push('\n');
        if let Some(rest) = line.split("listening on http://").nth(1) {
            break rest.split('/').next().unwrap().parse().unwrap();
        }
    };
    Served { child, addr }
}

fn metric(text: &str, series: &str) -> f64 {
    gateway::metrics::sample(text, series).unwrap_or_else(|| panic!("no {series}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_upstream_and_agent_endpoint_run_on_another_bellows_process() {
    let tiny = common::tiny().to_string_lossy().into_owned();
    let back = serve(&["--model", &tiny, "--ctx", "2048", "--threads", "1"]);
    let back_url = format!("http://{}/v1", back.addr);
    let front = serve(&["--upstream", &back_url, "--upstream-health-secs", "1"]);

    let back_models = request(back.addr, "GET", "/v1/models", &[], b"")
        .await
        .json();
    let back_id = back_models["data"][0]["id"].as_str().unwrap().to_owned();
    let listed = request(front.addr, "GET", "/v1/models", &[], b"")
        .await
        .json();
    assert_eq!(listed["data"][0]["id"], back_id.as_str(), "{listed}");

    let body = r#"{"messages":[{"role":"user","content":"hi"}],"max_tokens":8}"#;
    let r = request(
        front.addr,
        "POST",
        "/v1/chat/completions",
        &[("content-type", "application/json")],
        body.as_bytes(),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.json()["usage"]["prompt_tokens"].as_u64().unwrap() > 3);

    // The agent on the back server: it renders with the server's template and runs to a stop.
    let repo = tempfile::TempDir::new().unwrap();
    std::fs::write(repo.path().join("a.txt"), "a\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_bellows"))
        .args([
            "agent",
            "say hello",
            "--repo",
            repo.path().to_str().unwrap(),
            "--endpoint",
            &back_url,
            "--approval",
            "plan",
            "--grammar",
            "off",
            "--max-turns",
            "2",
            "--reply-reserve",
            "48",
            "--json",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.code().is_some_and(|c| c == 0 || c == 1),
        "{out:?}"
    );
    let events: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let start = events.iter().find(|e| e["event"] == "start").unwrap();
    assert_eq!(start["model"], back_id.as_str(), "{start}");
    assert_eq!(
        start["n_ctx"], 2048,
        "the context size came from the server"
    );
    let replies: Vec<_> = events.iter().filter(|e| e["event"] == "reply").collect();
    assert!(!replies.is_empty(), "{stdout}");
    for r in &replies {
        assert!(r["prompt_tokens"].as_u64().unwrap() > 0, "{r}");
    }
    assert_eq!(events.last().unwrap()["event"], "stop", "{stdout}");
    // Every generation reached the back server as a raw completion: the front (one chat) and
    // the agent (one per turn) both rendered the prompt with its template.
    let back_metrics = request(back.addr, "GET", "/metrics", &[], b"").await.text();
    assert_eq!(
        metric(
            &back_metrics,
            r#"bellows_requests_total{endpoint="completions",status="200"}"#
        ),
        1.0 + replies.len() as f64
    );
    assert_eq!(
        metric(
            &back_metrics,
            r#"bellows_requests_total{endpoint="chat_completions",status="200"}"#
        ),
        0.0
    );

    // `eval --generate` on the same server: each prompt line one raw completion there.
    let prompts = repo.path().join("prompts.jsonl");
    std::fs::write(
        &prompts,
        r#"{"id": "read-notes", "messages": [{"role": "user", "content": "Show me notes.txt"}], "expect": [{"name": "read", "arguments": {"path": "notes.txt"}}]}
{"id": "list-src", "messages": [{"role": "user", "content": "What is in src?"}], "expect": [{"name": "list", "arguments": {"path": "src"}}]}
"#,
    )
    .unwrap();
    let corpus = repo.path().join("replies.jsonl");
    let out = Command::new(env!("CARGO_BIN_EXE_bellows"))
        .args(["eval", "--generate"])
        .arg(&prompts)
        .args(["--endpoint", &back_url, "--max-tokens", "24", "--out"])
        .arg(&corpus)
        .env_remove("BELLOWS_MODEL")
        .env_remove("BELLOWS_PROFILE")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&corpus)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{out:?}\n{lines:?}");
    for l in &lines {
        assert_eq!(l["model"], back_id.as_str(), "{l}");
        assert!(l["raw"].is_string(), "{l}");
        assert!(l["prompt_tokens"].as_u64().unwrap() > 0, "{l}");
    }
    let after = request(back.addr, "GET", "/metrics", &[], b"").await.text();
    assert_eq!(
        metric(
            &after,
            r#"bellows_requests_total{endpoint="completions",status="200"}"#
        ),
        3.0 + replies.len() as f64
    );

    // The back server gone: a typed 502, and the front stays up and marks it unhealthy.
    drop(back);
    let r = request(
        front.addr,
        "POST",
        "/v1/chat/completions",
        &[("content-type", "application/json")],
        body.as_bytes(),
    )
    .await;
    assert_eq!(r.status, 502, "{}", r.text());
    assert_eq!(r.error_code(), "upstream_unreachable");
    let health = request(front.addr, "GET", "/health", &[], b"").await;
    assert_eq!(health.status, 200);
    let series = format!(r#"bellows_upstream_healthy{{upstream="{back_url}"}}"#);
    let text = request(front.addr, "GET", "/metrics", &[], b"")
        .await
        .text();
    assert_eq!(metric(&text, &series), 0.0);
}
