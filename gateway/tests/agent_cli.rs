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
    let out = bellows(&["agent", "x", "--approval", "sometimes"]);
    assert!(!out.status.success(), "an unknown approval mode is refused");
}
