//! `bellows agent` on the command line, without a model: argument errors and undo.

#![allow(clippy::unwrap_used)]

use std::process::Command;

fn bellows(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_bellows"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn agent_needs_a_task_and_undo_needs_a_session() {
    let dir = std::env::temp_dir().join(format!("bellows-agent-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let repo = dir.to_str().unwrap();
    let out = bellows(&["agent", "--repo", repo]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("a TASK is required"));
    let out = bellows(&["agent", "undo", "--repo", repo]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no session journal"));
    let out = bellows(&["agent", "--resume", "nope", "--repo", repo]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no session journal"));
    let out = bellows(&["agent", "x", "--approval", "sometimes"]);
    assert!(!out.status.success(), "an unknown approval mode is refused");
}

#[test]
fn agent_bench_with_the_oracle_reports_solved_tasks() {
    let suite = concat!(env!("CARGO_MANIFEST_DIR"), "/../benches/agent-tasks");
    let out = bellows(&[
        "agent", "bench", suite, "--engine", "oracle", "--only", "rename",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("rename-function          solved"),
        "{stdout}"
    );
    assert!(
        stdout.ends_with("solved 1/1, false successes 0\n"),
        "{stdout}"
    );
}

#[test]
fn promote_needs_an_isolated_copy() {
    let dir = std::env::temp_dir().join(format!("bellows-agent-promote-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let out = bellows(&["agent", "promote", "nope", "--repo", dir.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no isolated copy nope"));
}
