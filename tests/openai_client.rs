//! The official `openai` Python client, unmodified, against bellows over loopback: chat
//! non-stream and stream, and tool calls in both, on the scripted engine (exact values) and on
//! SmolLM2-135M (real generation, forced tool calls).
//!
//! Needs `tests/python/setup.sh` to have created `tests/python/.venv`, and the SmolLM2 GGUF
//! (`scripts/fetch-models.sh smollm2`; `$BELLOWS_SMOLLM2_GGUF` overrides the cache path).

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use gateway::server::Server;
use gateway::state::AppState;
use models::{Script, ScriptedEngine};

const BAD_CALL: &str =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": 5}}\n</tool_call>";
const HERMES_CALL: &str = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}\n</tool_call>";

fn python() -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/.venv/bin/python");
    assert!(
        p.is_file(),
        "{} is missing: run tests/python/setup.sh first",
        p.display()
    );
    p
}

/// Serves `state` on 127.0.0.1:0 while the Python client runs `mode`; returns its output.
async fn run_client(state: AppState, mode: &str) -> String {
    let model = state.engine.info().id.clone();
    let server = Server::bind("127.0.0.1:0", state).await.unwrap();
    let base = format!("http://{}/v1", server.local_addr().unwrap());
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.run(async move {
        let _ = stop_rx.await;
    }));
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/openai_client.py");
    let py = python();
    let mode = mode.to_owned();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(py)
            .arg(script)
            .arg(mode)
            .env("BELLOWS_TEST_BASE_URL", base)
            .env("BELLOWS_TEST_MODEL", model)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let _ = stop_tx.send(());
    serving.await.unwrap().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "python client failed:\n{stdout}\n{stderr}"
    );
    stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_python_client_on_the_scripted_engine() {
    let engine = Arc::new(ScriptedEngine::new(
        "scripted-model",
        Script::chunked("unused", 4),
    ));
    for script in [
        Script::chunked("Hello from bellows.", 5),
        Script::chunked("Streaming works fine.", 3),
        Script::chunked(HERMES_CALL, 7),
        Script::chunked(HERMES_CALL, 1),
        Script::chunked("It is sunny in Paris.", 6),
        Script::chunked("a time", 2),
        Script::chunked("Served under any name.", 4),
        Script::chunked(BAD_CALL, 1),
    ] {
        engine.push(script);
    }
    let out = run_client(AppState::new(engine.clone()), "scripted").await;
    for check in [
        "chat non-stream",
        "chat stream",
        "tools non-stream",
        "tools stream",
        "any model name",
        "invalid call withheld",
        "errors",
    ] {
        assert!(out.contains(&format!("ok: {check}")), "{out}");
    }
    // The tool result reached the prompt of the follow-up request.
    let seen = engine.seen.lock().unwrap().clone();
    let models::Prompt::Chat { messages, .. } = &seen[4].prompt else {
        panic!("chat prompt")
    };
    assert_eq!(messages.last().unwrap().content, "sunny, 21 C");
    // …with the id of the call it answers, as the client sent it back.
    let id = messages
        .last()
        .unwrap()
        .tool_call_id
        .as_deref()
        .unwrap_or("");
    assert!(id.starts_with("call_"), "{id:?}");
}

fn smollm2() -> String {
    let path = std::env::var("BELLOWS_SMOLLM2_GGUF")
        .ok()
        .filter(|p| !p.is_empty());
    let path = path.map(PathBuf::from).unwrap_or_else(|| {
        gateway::serve::resolve_model(Some("smollm2"))
            .unwrap_or_else(|e| panic!("{e}; run scripts/fetch-models.sh smollm2"))
    });
    path.to_string_lossy().into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_python_client_on_smollm2() {
    let args = gateway::config::ServeArgs {
        model: Some(smollm2()),
        ctx: Some(2048),
        // One thread: llama.cpp's spinning worker threads slow down badly when the machine's
        // cores are shared with a parallel test run.
        threads: Some(1),
        ..Default::default()
    };
    let cfg = args.resolve().unwrap();
    let (engine, defaults) = gateway::serve::load_engine(&cfg).unwrap();
    let out = run_client(AppState::new(engine).with_defaults(defaults), "real").await;
    assert!(
        out.contains("ok: real forced tool call (stream=True)"),
        "{out}"
    );
}
