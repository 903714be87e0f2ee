//! `bellows agent` on the command line: argument errors, undo, the oracle bench, Ctrl-C (on
//! the tiny noise model) and one real-model session (SmolLM2, `$BELLOWS_SMOLLM2_GGUF`).

#![allow(clippy::unwrap_used)]

#[path = "../../gateway/tests/common/mod.rs"]
mod common;
#[path = "../../agent/tests/common/prereq.rs"]
mod prereq;

use std::path::{Path, PathBuf};
use std::process::Command;

fn bellows(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_bellows"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn agent_needs_a_task_and_undo_needs_a_session() {
    let dir = tempfile::TempDir::new().unwrap();
    let repo = dir.path().to_str().unwrap();
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
        "agent",
        "bench",
        suite,
        "--engine",
        "oracle",
        "--only",
        "rename-function",
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
    // Where the bench is, as plain lines on stderr (not a terminal here), never on stdout.
    let stderr = String::from_utf8_lossy(&out.stderr);
    for want in [
        "progress: task 1/1 rename-function · 0 tokens · ",
        "progress: task 1/1 rename-function · attempt 1/1 · 0 tokens · ",
        "progress: task 1/1 rename-function · attempt 1/1 · turn 1 · 0 tokens · ",
        "progress: task 1/1 rename-function · attempt 1/1 · turn 2 · ",
    ] {
        assert!(stderr.contains(want), "{want:?} missing from:\n{stderr}");
    }
    assert!(!stdout.contains("progress:"), "{stdout}");
}

/// The README's quickstart, second command, with the oracle's scripted replies instead of
/// the model (`scripts/agent.sh example --oracle`, the binary under test instead of a build):
/// the approval line, progress, the diff and the check passing, the shipped example untouched.
#[test]
fn the_quickstart_example_is_solved_with_the_oracle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let calc = root.join("examples/calc/repo/calc.py");
    let before = std::fs::read_to_string(&calc).unwrap();
    let out = Command::new(root.join("scripts/agent.sh"))
        .args(["example", "--oracle"])
        .env("BELLOWS_BIN", env!("CARGO_BIN_EXE_bellows"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    for want in [
        "stopped: verified after 4 turns",
        "agent.sh: what the agent changed:",
        "-    return a - b\n+    return a + b\n",
        "agent.sh: the check, python3 test_calc.py:\nok\nagent.sh: the check passes\n",
    ] {
        assert!(stdout.contains(want), "{want:?} missing from:\n{stdout}");
    }
    for want in [
        "approval: auto (edits and commands unasked, commands in the sandbox; --approval); \
         change it with --approval plan|ask|edits|auto",
        "progress: turn 4 · ",
    ] {
        assert!(stderr.contains(want), "{want:?} missing from:\n{stderr}");
    }
    assert_eq!(std::fs::read_to_string(&calc).unwrap(), before);
}

/// Run from a script, the agent says at once which approval mode holds (read-only `plan`
/// unless told) and how to change it; a profile with agent-bench figures is summarised.
#[test]
fn a_non_interactive_run_names_its_approval_mode_and_the_profiles_figures() {
    let repo = git_repo(&[("a.txt", "a\n")]);
    let oracle = repo.path().join("oracle.jsonl");
    std::fs::write(&oracle, "\"DONE nothing to do\\n\"\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_bellows"))
        .args(["agent", "look around", "--repo"])
        .arg(repo.path())
        .arg("--oracle")
        .arg(&oracle)
        .args(["--max-turns", "1"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "approval: plan (read-only: no edits, no commands; stdin is not a terminal); \
             change it with --approval plan|ask|edits|auto"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("progress: turn 1 · 0 tokens · "),
        "{stderr}"
    );

    let model = common::tiny().to_string_lossy().into_owned();
    let out = Command::new(env!("CARGO_BIN_EXE_bellows"))
        .args(["agent", "look around", "--repo"])
        .arg(repo.path())
        .args([
            "--model",
            &model,
            "--profile",
            "qwen2.5-coder-1.5b-instruct",
        ])
        .args(["--approval", "plan", "--max-turns", "1", "--ctx", "1024"])
        .args(["--reply-reserve", "64", "--threads", "1"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "profile qwen2.5-coder-1.5b-instruct: agent bench benches/agent-tasks: solved \
             24/29, pass@1 22/29 (4 attempts, 0 false successes; 2026-12-06, bellows 0.1.0)"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("approval: plan (read-only: no edits, no commands; --approval)"));
}

#[test]
fn promote_needs_an_isolated_copy() {
    let dir = tempfile::TempDir::new().unwrap();
    let out = bellows(&[
        "agent",
        "promote",
        "nope",
        "--repo",
        dir.path().to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no isolated copy nope"));
    for discard in ["discard", "cleanup"] {
        let repo = dir.path().to_str().unwrap();
        let out = bellows(&["agent", discard, "nope", "--repo", repo]);
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("no isolated copy nope"));
    }
}

/// SmolLM2 from `$BELLOWS_SMOLLM2_GGUF` (as the benches take it), else the fetched default.
fn smollm2() -> String {
    let path = std::env::var("BELLOWS_SMOLLM2_GGUF")
        .ok()
        .filter(|p| !p.is_empty());
    let path = path.map(PathBuf::from).unwrap_or_else(|| {
        gateway::serve::resolve_model(Some("smollm2")).unwrap_or_else(|e| {
            panic!(
                "BELLOWS_SMOLLM2_GGUF is not set and {e}; run \
                 `eval \"$(scripts/models-env.sh)\"` (or scripts/fetch-models.sh) first"
            )
        })
    });
    path.to_string_lossy().into_owned()
}

/// A temporary git repository with one committed file.
fn git_repo(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::TempDir::new().unwrap();
    for (path, text) in files {
        std::fs::write(dir.path().join(path), text).unwrap();
    }
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-qm", "start"]);
    dir
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-C"])
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// The journal of the only session under `repo`, each line parsed (a line that does not parse
/// fails the test).
fn only_journal(repo: &Path) -> Vec<serde_json::Value> {
    let sessions: Vec<_> = std::fs::read_dir(repo.join(".bellows/sessions"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(sessions.len(), 1);
    let text = std::fs::read_to_string(sessions[0].path().join("journal.jsonl")).unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

const STOP_REASONS: [&str; 7] = [
    "done",
    "verified",
    "max_turns",
    "stall",
    "loop",
    "budget",
    "user_quit",
];

/// The issue's real-model check: SmolLM2 under the strict grammar for at most three turns
/// ends with a named stop reason and leaves a valid journal.
#[test]
fn a_real_smollm2_session_ends_with_a_stop_reason_and_a_valid_journal() {
    let repo = git_repo(&[("hello.py", "print('hello')\n")]);
    let model = smollm2();
    let out = bellows(&[
        "agent",
        "Change hello.py so that it prints goodbye.",
        "--repo",
        repo.path().to_str().unwrap(),
        "--model",
        &model,
        "--grammar",
        "strict",
        "--max-turns",
        "3",
        "--approval",
        "auto",
        "--reply-reserve",
        "96",
        "--ctx",
        "1024",
        "--threads",
        "1",
        "--json",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.code().is_some_and(|c| c == 0 || c == 1),
        "{out:?}"
    );
    // The --json view and the journal agree on the stop.
    let last: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["event"], "stop", "{stdout}");
    let j = only_journal(repo.path());
    assert_eq!(j[0]["event"], "start");
    assert_eq!(j.last().unwrap(), &last);
    let reason = last["reason"].as_str().unwrap();
    assert!(STOP_REASONS.contains(&reason), "{reason}");
    let turns = last["turns"].as_u64().unwrap();
    assert!((1..=3).contains(&turns), "{turns}");
    // A prompt and a reply record for every turn, in order.
    for kind in ["prompt", "reply"] {
        let seen: Vec<u64> = j
            .iter()
            .filter(|e| e["event"] == kind)
            .map(|e| e["turn"].as_u64().unwrap())
            .collect();
        assert_eq!(seen, (1..=turns).collect::<Vec<_>>(), "{kind}");
    }
    for e in j.iter().filter(|e| e["event"] == "reply") {
        assert!(e["generated_tokens"].as_u64().unwrap() <= 96);
        assert!(e["prompt_tokens"].as_u64().unwrap() > 0);
    }
    assert_eq!(j.iter().filter(|e| e["event"] == "stop").count(), 1);
}

/// SIGINT to a running session: the generation halts, the session stops as `user_quit` and
/// the summary is journaled and shown. The noise model never finishes on its own here (no
/// turn or stall limit it could reach), so only the interrupt can end it.
#[test]
fn ctrl_c_stops_a_session_as_user_quit_with_its_summary() {
    use std::io::BufRead;
    let repo = git_repo(&[("a.txt", "a\n")]);
    let model = common::tiny().to_string_lossy().into_owned();
    let mut child = Command::new(env!("CARGO_BIN_EXE_bellows"))
        .args([
            "agent",
            "say hello",
            "--repo",
            repo.path().to_str().unwrap(),
            "--model",
            &model,
            "--approval",
            "auto",
            "--grammar",
            "off",
            "--max-turns",
            "1000000",
            "--stall-turns",
            "1000000",
            "--loop-repeats",
            "1000000",
            "--reply-reserve",
            "200",
            "--ctx",
            "2048",
            "--threads",
            "1",
            "--json",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // A watchdog, so that a broken handler fails the test instead of hanging it.
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if done_rx
            .recv_timeout(std::time::Duration::from_secs(120))
            .is_err()
        {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    });
    let mut lines = Vec::new();
    let mut sent = false;
    for line in std::io::BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        // Once a reply is in, the session (and its handler) is running.
        if !sent && line.contains(r#""event":"reply""#) {
            let status = Command::new("kill")
                .args(["-INT", &pid.to_string()])
                .status()
                .unwrap();
            assert!(status.success());
            sent = true;
        }
        lines.push(line);
    }
    let status = child.wait().unwrap();
    let _ = done_tx.send(());
    watchdog.join().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(sent, "no reply seen: {stderr}");
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("interrupted: stopping the session"),
        "{stderr}"
    );
    let last: serde_json::Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    assert_eq!(last["event"], "stop");
    assert_eq!(last["reason"], "user_quit");
    let j = only_journal(repo.path());
    assert_eq!(j.last().unwrap(), &last);
}

/// Whether a process whose command line is exactly `args` is running (read from /proc).
fn running(args: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read(e.path().join("cmdline"))
            .is_ok_and(|c| String::from_utf8_lossy(&c).replace('\0', " ").trim() == args)
    })
}

/// SIGTERM to a bench whose task runs a command that started a background process: bellows
/// ends the command's whole process group before it exits, so nothing it started is left
/// running, orphaned.
#[test]
fn sigterm_ends_the_commands_a_bench_is_running() {
    if !prereq::landlock(!matches!(
        agent::sandbox::Confinement::default(),
        agent::sandbox::Confinement::Refused(_)
    )) {
        return; // RUN runs nothing where the kernel cannot confine it.
    }
    let suite = tempfile::TempDir::new().unwrap();
    let task = suite.path().join("slow");
    std::fs::create_dir_all(task.join("repo")).unwrap();
    std::fs::write(task.join("task.md"), "Run slow.sh.\n").unwrap();
    std::fs::write(task.join("verify.sh"), "exit 1\n").unwrap();
    // The marker is a sleep nothing else runs: its own process, in the command's group.
    std::fs::write(task.join("repo/slow.sh"), "sleep 271.5 &\nwait\n").unwrap();
    std::fs::write(
        task.join("oracle.jsonl"),
        "\"RUN sh slow.sh\\n\"\n\"DONE\\n\"\n",
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_bellows"))
        .args([
            "agent",
            "bench",
            suite.path().to_str().unwrap(),
            "--engine",
            "oracle",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while !running("sleep 271.5") {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "the task's command never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143), "{status:?}");
    let ended = std::time::Instant::now();
    while running("sleep 271.5") {
        assert!(
            ended.elapsed() < std::time::Duration::from_secs(5),
            "the command's background process outlived bellows"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
