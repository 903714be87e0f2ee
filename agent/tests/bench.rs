//! The task benchmark's harness: the oracle (each task's scripted replies) must solve every
//! task of `benches/agent-tasks` and `benches/agent-tasks-hard` with no false success, and a DONE that `verify.sh` rejects
//! must count as a false success. A task's visible check feeds a DONE it rejects back to the
//! model; `--attempts` reports pass@1 and solved within N beside solved.

#![allow(clippy::unwrap_used)] // Tests fail loudly on the first surprise.

use std::path::{Path, PathBuf};

use agent::bench::{self, BenchConfig, BenchError, Task};
use agent::{ApprovalMode, Config, Policy, StopReason};

fn suite_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../benches/agent-tasks")
}

fn config() -> BenchConfig {
    let mut session = Config::new("", Policy::new(ApprovalMode::Ask));
    session.max_turns = 12;
    session.reply_reserve = 512;
    BenchConfig::new(session, Default::default())
}

/// Without the tasks' visible checks, and without running the commands a task names (which
/// would refuse these tests' deliberate non-fixes): a DONE is accepted as it comes.
fn unchecked() -> BenchConfig {
    let mut c = config();
    c.no_check = true;
    c.session.probes = false;
    c
}

fn run(task: &Task) -> bench::TaskResult {
    run_with(task, &config())
}

fn run_with(task: &Task, cfg: &BenchConfig) -> bench::TaskResult {
    let engine = bench::oracle_engine(task).unwrap();
    run_on(&engine, task, cfg).unwrap()
}

fn run_on(
    engine: &models::ScriptedEngine,
    task: &Task,
    cfg: &BenchConfig,
) -> Result<bench::TaskResult, BenchError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(bench::run_task(engine, task, cfg))
}

#[test]
fn the_oracle_solves_every_task_without_a_false_success() {
    oracle_solves_suite(&suite_dir(), 24);
}

#[test]
fn the_oracle_solves_every_hard_task_without_a_false_success() {
    oracle_solves_suite(&suite_dir().with_file_name("agent-tasks-hard"), 12);
}

#[test]
fn the_oracle_solves_every_long_file_task_without_a_false_success() {
    oracle_solves_suite(&suite_dir().with_file_name("agent-tasks-long"), 4);
}

fn oracle_solves_suite(dir: &Path, at_least: usize) {
    // Tasks without oracle.jsonl are for models only.
    let tasks: Vec<Task> = bench::load_suite(dir)
        .unwrap()
        .into_iter()
        .filter(|t| t.oracle.is_some())
        .collect();
    assert!(tasks.len() >= at_least, "{} tasks", tasks.len());
    let results: Vec<_> = tasks.iter().map(run).collect();
    let report = bench::report(&results);
    for (task, r) in tasks.iter().zip(&results) {
        assert!(r.solved(), "{} not solved:\n{report}", task.name);
        assert!(
            r.pass1 && r.within && r.check_rejected == 0,
            "{}",
            task.name
        );
        assert_eq!(
            r.turns as usize,
            task.oracle.as_ref().unwrap().len(),
            "{}: every oracle reply is one turn",
            task.name
        );
        assert_eq!(
            r.acted, r.turns,
            "{}: every oracle reply decodes",
            task.name
        );
    }
    assert!(
        report.ends_with(&format!(
            "solved {n}/{n}, false successes 0\n",
            n = tasks.len()
        )),
        "{report}"
    );
}

#[test]
fn a_task_copy_is_removed_afterwards_unless_kept() {
    let task = Task::load(&suite_dir().join("create-file")).unwrap();
    let r = run(&task);
    assert!(r.copy.starts_with(std::env::temp_dir()));
    assert!(!r.copy.exists(), "{} left behind", r.copy.display());
    // A session that fails (no room for the reply) leaves nothing either. (A name of its
    // own, as other tests run tasks concurrently.)
    let mut failing = task.clone();
    failing.name = "copy-check-failing".to_owned();
    let mut cfg = config();
    cfg.session.reply_reserve = 1_000_000;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let engine = bench::oracle_engine(&task).unwrap();
    assert!(matches!(
        rt.block_on(bench::run_task(&engine, &failing, &cfg)),
        Err(BenchError::Session { .. })
    ));
    let left: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .ends_with("-copy-check-failing")
        })
        .collect();
    assert!(left.is_empty(), "a failed session left its copy: {left:?}");
    // --keep keeps it.
    let mut cfg = config();
    cfg.keep = true;
    let r = rt.block_on(bench::run_task(&engine, &task, &cfg)).unwrap();
    assert!(r.copy.is_dir());
    std::fs::remove_dir_all(&r.copy).unwrap();
}

#[test]
fn every_task_starts_unsolved() {
    // A verify.sh that already passes on the starting files would make its task free.
    for task in bench::load_suite(&suite_dir()).unwrap() {
        let mut t = task.clone();
        // A change that is no fix first: a DONE while the repository is untouched is
        // refused (`no_change`).
        t.oracle = Some(vec![
            NOTE.to_owned(),
            "Nothing else to do.\nDONE nothing\n".to_owned(),
        ]);
        // Unchecked, so that the DONE is accepted whatever the task's check says.
        let r = run_with(&t, &unchecked());
        assert_eq!(r.reason, Some(StopReason::Done), "{}", task.name);
        assert!(!r.verified, "{}: verify.sh passes untouched", task.name);
        assert!(r.false_success() && !r.solved(), "{}", task.name);
    }
}

#[test]
fn a_session_without_done_is_neither_solved_nor_a_false_success() {
    let task = Task::load(&suite_dir().join("create-file")).unwrap();
    let mut t = task.clone();
    // The right file, but no DONE: the session stalls on the fallback prose.
    t.oracle.as_mut().unwrap().pop();
    let r = run(&t);
    assert_eq!(r.reason, Some(StopReason::Stall));
    assert!(r.verified && !r.solved() && !r.false_success());
    let report = bench::report(&[r]);
    assert!(report.contains("tree-ok") && report.ends_with("solved 0/1, false successes 0\n"));
}

#[test]
fn rewriting_a_tasks_test_file_does_not_solve_it() {
    // The model can edit every file of its copy, tests included: a verify.sh that runs the
    // copy's test must also check that the test is the one the task shipped.
    let mut checked = 0;
    for task in bench::load_suite(&suite_dir()).unwrap() {
        let tests: Vec<String> = std::fs::read_dir(task.dir.join("repo"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("test"))
            .collect();
        for name in tests {
            // A test that always passes, in the file's own language.
            let passing = match name.rsplit_once('.') {
                Some((_, "py")) => "print(\"ok\")",
                _ => "echo ok",
            };
            let mut t = task.clone();
            t.oracle = Some(vec![
                format!("DELETE {name}\n"),
                format!("CREATE {name}\n<<<<<<< SEARCH\n=======\n{passing}\n>>>>>>> REPLACE\n"),
                "DONE the tests pass\n".to_owned(),
            ]);
            // Unchecked: a check that runs the rewritten test would pass it too.
            let r = run_with(&t, &unchecked());
            assert_eq!(r.reason, Some(StopReason::Done), "{}: {name}", task.name);
            assert!(
                r.false_success() && !r.verified,
                "{}: replacing {name} with a test that always passes solved the task",
                task.name
            );
            checked += 1;
        }
    }
    assert!(checked >= 2, "only {checked} task test files found");
}

/// A task folder under the system temp dir (removed when dropped): `greet.sh` says `helo`
/// where its test wants `hello`. `check` and `oracle` are written when given.
fn greet_task(check: Option<&str>, oracle: Option<&[&str]>) -> (tempfile::TempDir, Task) {
    let dir = tempfile::Builder::new()
        .prefix("bellows-bench-task-")
        .tempdir()
        .unwrap();
    let write = |path: &str, text: &str| {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write("repo/greet.sh", "echo helo\n");
    write(
        "repo/test_greet.sh",
        "[ \"$(sh greet.sh)\" = hello ] || { echo \"greet.sh says $(sh greet.sh)\"; exit 1; }\n",
    );
    write("task.md", "sh test_greet.sh fails. Fix greet.sh.\n");
    write(
        "verify.sh",
        "grep -qx 'echo hello' greet.sh && sh test_greet.sh\n",
    );
    if let Some(check) = check {
        write("check", &format!("{check}\n"));
    }
    if let Some(replies) = oracle {
        let lines: Vec<String> = replies
            .iter()
            .map(|r| serde_json::to_string(r).unwrap())
            .collect();
        write("oracle.jsonl", &(lines.join("\n") + "\n"));
    }
    let task = Task::load(dir.path()).unwrap();
    (dir, task)
}

const FIX: &str =
    "EDIT greet.sh\n<<<<<<< SEARCH\necho helo\n=======\necho hello\n>>>>>>> REPLACE\n";

/// A change that fixes nothing: a DONE after it reaches the check (a DONE while the
/// repository is untouched is refused before any check runs).
const NOTE: &str = "CREATE notes.txt\n<<<<<<< SEARCH\n=======\nlooked at it\n>>>>>>> REPLACE\n";

/// A change of greet.sh that fixes nothing: the DONE after it reaches the check (one after
/// a new file alone, with greet.sh untouched, is refused before: `object_unchanged`).
const WRONG_FIX: &str =
    "EDIT greet.sh\n<<<<<<< SEARCH\necho helo\n=======\necho helo\n# greets\n>>>>>>> REPLACE\n";

/// No copy of the task folder `task` is left under the system temp dir.
fn no_copies_left(task: &Path) {
    let name = task.file_name().unwrap().to_string_lossy().into_owned();
    let left: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.starts_with("bellows-bench-") && n.ends_with(&name) && n != name
        })
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn a_tasks_check_feeds_a_premature_done_back_and_the_session_then_solves_it() {
    let oracle = [WRONG_FIX, "DONE it greets\n", FIX, "DONE fixed the typo\n"];
    let (dir, task) = greet_task(Some("sh test_greet.sh"), Some(&oracle));
    assert_eq!(
        task.check.as_deref(),
        Some(&["sh".to_owned(), "test_greet.sh".to_owned()][..])
    );
    let engine = bench::oracle_engine(&task).unwrap();
    let r = run_on(&engine, &task, &config()).unwrap();
    assert_eq!((r.reason, r.turns), (Some(StopReason::Verified), 4));
    assert!(r.solved() && !r.false_success());
    assert_eq!(r.check_rejected, 1);
    // The model was told why: the check's failure, its output included.
    let seen = engine.seen.lock().unwrap();
    let third = format!("{:?}", seen[2].prompt);
    assert!(
        third.contains("DONE (it greets) rejected") && third.contains("greet.sh says helo"),
        "{third}"
    );
    let report = bench::report(&[r]);
    assert!(report.contains("DONEs rejected by the check 1"), "{report}");
    // Without the check the first DONE is accepted: a false success, and not one the check
    // rejected.
    let r = run_with(&task, &unchecked());
    assert_eq!(r.reason, Some(StopReason::Done));
    assert!(r.false_success() && r.check_rejected == 0);
    let report = bench::report(&[r]);
    assert!(
        report.ends_with("solved 0/1, false successes 1\n"),
        "{report}"
    );
    no_copies_left(dir.path());
}

#[test]
fn a_task_without_an_oracle_loads_and_runs_on_a_model_but_not_on_the_oracle() {
    let (dir, task) = greet_task(None, None);
    assert!(task.oracle.is_none() && task.check.is_none());
    assert!(matches!(
        bench::oracle_engine(&task),
        Err(BenchError::NoOracle(ref name)) if *name == task.name
    ));
    // Any other engine runs it.
    let engine =
        models::ScriptedEngine::new("model", models::Script::chunked("hmm\n", 4)).with_slots(1);
    for reply in [FIX, "DONE fixed\n"] {
        engine.push(models::Script::chunked(reply, 5));
    }
    let r = run_on(&engine, &task, &config()).unwrap();
    assert!(r.solved(), "{}", bench::report(&[r]));
    no_copies_left(dir.path());
}

#[test]
fn a_check_that_is_not_one_command_line_is_refused_naming_its_file() {
    for (check, why) in [
        ("sh test_greet.sh | tee out", "shell syntax"),
        ("'sh test_greet.sh", "not closed"),
        ("sh a\nsh b", "more than one line"),
        ("   ", "empty"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("task.md"), "t\n").unwrap();
        std::fs::write(dir.path().join("check"), check).unwrap();
        let err = Task::load(dir.path()).unwrap_err();
        assert!(matches!(err, BenchError::Check { .. }), "{err}");
        let msg = err.to_string();
        assert!(
            msg.contains(&dir.path().join("check").display().to_string()) && msg.contains(why),
            "{check:?}: {msg}"
        );
    }
}

#[test]
fn attempts_stop_at_the_first_passing_check_and_report_pass_at_1_apart() {
    let (dir, task) = greet_task(Some("sh test_greet.sh"), None);
    // Attempt 1 says DONE untouched (rejected), then stalls; attempt 2 fixes it; attempt 3
    // never runs.
    let engine =
        models::ScriptedEngine::new("model", models::Script::chunked("hmm\n", 4)).with_slots(1);
    for reply in [
        WRONG_FIX,
        "DONE looks fine\n",
        "hmm\n",
        "hmm\n",
        "hmm\n",
        FIX,
        "DONE fixed\n",
    ] {
        engine.push(models::Script::chunked(reply, 5));
    }
    let mut cfg = config();
    cfg.attempts = 3;
    let r = run_on(&engine, &task, &cfg).unwrap();
    let report = bench::report(std::slice::from_ref(&r));
    assert_eq!(
        (r.attempts, r.allowed, r.chosen),
        (2, 3, Some(2)),
        "{report}"
    );
    assert!(r.solved() && !r.pass1 && r.within && !r.false_success());
    assert_eq!(r.reason, Some(StopReason::Verified));
    // Turns and tokens are both attempts'.
    assert_eq!((r.turns, r.check_rejected, r.replies), (7, 1, 7));
    assert!(
        report.contains("pass@1 0/1, solved within 3 attempts 1/1, attempts run 2"),
        "{report}"
    );
    assert!(report.ends_with("solved 1/1, false successes 0\n"));
    no_copies_left(dir.path());
}

/// Without a check and without the repository's own tests, attempts vote; with its tests
/// found (`test_greet.sh`, which fails before and after the wrong change), the wrong DONEs are
/// refused and never vote.
#[test]
fn without_a_check_attempts_vote_and_a_wrong_majority_is_a_false_success() {
    let wrong = "EDIT greet.sh\n<<<<<<< SEARCH\necho helo\n=======\necho hullo\n>>>>>>> REPLACE\n";
    for (replies, found, solved) in [
        // One wrong, two right: the right change wins the vote, though attempt 1 failed.
        ([wrong, FIX, FIX], false, true),
        // Two wrong, one right: the wrong change wins; solved within 3, not solved.
        ([wrong, wrong, FIX], false, false),
        // The same, the repository's test found: only the right change says DONE.
        ([wrong, wrong, FIX], true, true),
    ] {
        let (dir, _) = greet_task(None, None);
        // A task that names no command: had it said `sh test_greet.sh fails`, the wrong
        // change would be refused at DONE (`still_failing`) and never vote.
        std::fs::write(
            dir.path().join("task.md"),
            "greet.sh misspells hello. Fix it.\n",
        )
        .unwrap();
        let task = Task::load(dir.path()).unwrap();
        let engine =
            models::ScriptedEngine::new("model", models::Script::chunked("hmm\n", 4)).with_slots(1);
        for reply in replies {
            engine.push(models::Script::chunked(reply, 5));
            engine.push(models::Script::chunked("DONE fixed\n", 5));
        }
        let mut cfg = config();
        cfg.attempts = 3;
        cfg.session.found_tests = found;
        // An edit, then DONE: a refused DONE ends the attempt there, so the next attempt
        // takes the next scripted edit.
        cfg.session.max_turns = 2;
        let r = run_on(&engine, &task, &cfg).unwrap();
        let report = bench::report(std::slice::from_ref(&r));
        assert_eq!(r.attempts, 3, "{report}");
        assert!(!r.pass1 && r.within, "{report}");
        assert_eq!(
            (r.solved(), r.false_success()),
            (solved, !solved),
            "{report}"
        );
        assert_eq!(
            r.chosen,
            Some(match (found, solved) {
                (false, true) => 2,
                (false, false) => 1,
                (true, _) => 3,
            })
        );
        no_copies_left(dir.path());
    }
}

/// Every refused DONE's tree is judged by the task's hidden `verify.sh` for the figures
/// (`Event::Witnessed`): a DONE the check rejects on a tree `verify.sh` fails is a right
/// refusal; the same DONE under a `verify.sh` that passes it is a right answer refused, named
/// with its task and kind in the report.
#[test]
fn refused_dones_are_judged_by_the_hidden_check_and_right_answers_refused_are_named() {
    let oracle = [WRONG_FIX, "DONE it greets\n", FIX, "DONE fixed the typo\n"];
    for (verify, right) in [(None, 0), (Some("exit 0\n"), 1)] {
        let (dir, task) = greet_task(Some("sh test_greet.sh"), Some(&oracle));
        if let Some(v) = verify {
            std::fs::write(dir.path().join("verify.sh"), v).unwrap();
        }
        let engine = bench::oracle_engine(&task).unwrap();
        let r = run_on(&engine, &task, &config()).unwrap();
        assert_eq!(r.reason, Some(StopReason::Verified));
        let check = r.witnessed.get("check").copied().unwrap_or_default();
        assert_eq!((check.refused, check.right), (1, right));
        assert_eq!(r.right_refused(), right);
        let report = bench::report(std::slice::from_ref(&r));
        assert!(
            report.contains(&format!(
                "refused DONEs judged by verify.sh (kind refused/on a tree it passes): check 1/{right}\n"
            )),
            "{report}"
        );
        let named = if right == 1 {
            format!(
                "right answers refused: 1 in 1 task: {} (check 1)\n",
                task.name
            )
        } else {
            "right answers refused: 0 in 0 tasks\n".to_owned()
        };
        assert!(report.contains(&named), "{report}");
        // The judging ran on a copy: the session's tree holds nothing of it.
        no_copies_left(dir.path());
    }
}
