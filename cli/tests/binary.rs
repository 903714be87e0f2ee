//! The `bellows serve` binary: `--help`, settings from a config file and the environment,
//! serving the tiny GGUF, and a graceful exit on SIGTERM; `bellows devices`.

#![allow(clippy::unwrap_used)]

// The gateway's test harness (in-process server, raw HTTP client), shared rather than copied.
#[path = "../../gateway/tests/common/mod.rs"]
mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;

fn bellows() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bellows"))
}

#[test]
fn help_explains_every_setting() {
    let out = bellows().args(["serve", "--help"]).output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    for flag in [
        "--model",
        "--host",
        "--port",
        "--api-key",
        "--parallel",
        "--ctx",
        "--threads",
        "--gpu-layers",
        "--flash-attn",
        "--cache-type-k",
        "--cache-type-v",
        "--profile",
        "--config",
        "BELLOWS_MODEL",
        "BELLOWS_API_KEY",
        "--upstream",
        "--upstream-key",
        "--upstream-model",
        "--upstream-parallel",
        "--upstream-idle-timeout-secs",
        "BELLOWS_UPSTREAM",
    ] {
        assert!(help.contains(flag), "{flag} missing from:\n{help}");
    }
}

#[test]
fn a_bad_config_file_is_refused_with_its_path() {
    let dir = std::env::temp_dir().join(format!("bellows-bin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("bad.toml");
    std::fs::write(&cfg, "prot = 1\n").unwrap();
    let out = bellows()
        .args(["serve", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml") && err.contains("prot"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_from_config_and_env_then_exits_cleanly_on_sigterm() {
    let dir = std::env::temp_dir().join(format!("bellows-bin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("serve.toml");
    std::fs::write(
        &cfg,
        format!(
            "model = {:?}\nport = 0\nctx = 256\nthreads = 1\napi_key = \"from-file\"\ngpu_layers = 3\n",
            tiny()
        ),
    )
    .unwrap();
    let mut child = bellows()
        .args(["serve", "--config"])
        .arg(&cfg)
        .env("BELLOWS_API_KEY", "from-env")
        .env("RUST_LOG", "info")
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
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the server logs its address");
        log.push_str(&line);
        log.push('\n');
        if let Some(rest) = line.split("listening on http://").nth(1) {
            break rest.split('/').next().unwrap().parse().unwrap();
        }
    };

    // The environment beats the file.
    let r = request(
        addr,
        "GET",
        "/v1/models",
        &[("authorization", "Bearer from-file")],
        b"",
    )
    .await;
    assert_eq!(r.status, 401);
    let r = request(
        addr,
        "GET",
        "/v1/models",
        &[("authorization", "Bearer from-env")],
        b"",
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let body = r#"{"messages":[{"role":"user","content":"hi"}],"max_tokens":4}"#;
    let r = request(
        addr,
        "POST",
        "/v1/chat/completions",
        &[("authorization", "Bearer from-env")],
        body.as_bytes(),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());

    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let mut exited = None;
    for _ in 0..200 {
        if let Some(s) = child.try_wait().unwrap() {
            exited = Some(s);
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    while let Ok(line) = rx.recv_timeout(Duration::from_millis(200)) {
        log.push_str(&line);
        log.push('\n');
    }
    let Some(status) = exited else {
        let _ = child.kill();
        panic!("no exit after SIGTERM:\n{log}");
    };
    assert!(status.success(), "{status}:\n{log}");
    assert!(
        log.contains("SIGTERM received") && log.contains("server stopped"),
        "{log}"
    );
    // Layers asked of a binary without a GPU back end: said, not silently dropped.
    assert!(
        log.contains("--gpu-layers 3 asked for, but this binary has no GPU back end"),
        "{log}"
    );
}

/// `bellows devices` on this (CPU) build: the CPU device, and why `--gpu-layers` would keep
/// every layer on it.
#[test]
fn devices_lists_the_cpu_and_says_this_build_has_no_gpu_back_end() {
    let out = bellows().arg("devices").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.split_whitespace().next() == Some("CPU")),
        "no CPU device line:\n{text}"
    );
    assert!(!lines.iter().any(|l| l.starts_with("GPU")), "{text}");
    assert_eq!(
        lines.last().copied(),
        Some(
            "This binary has no GPU back end: every layer stays on the CPU (build with \
             `cargo build --release -p cli --features cuda`, or vulkan, or metal)"
        ),
        "{text}"
    );
}
