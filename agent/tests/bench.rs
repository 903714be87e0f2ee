//! The task benchmark's harness: the oracle (each task's scripted replies) must solve every
//! task of `benches/agent-tasks` with no false success, and a DONE that `verify.sh` rejects
//! must count as a false success.

#![allow(clippy::unwrap_used)] // Tests fail loudly on the first surprise.

use std::path::PathBuf;

use agent::bench::{self, BenchConfig, Task};
use agent::{ApprovalMode, Config, Policy, StopReason};

fn suite_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../benches/agent-tasks")
}

fn config() -> BenchConfig {
    let mut session = Config::new("", Policy::new(ApprovalMode::Ask));
    session.max_turns = 12;
    session.reply_reserve = 512;
    BenchConfig {
        session,
        keep: false,
        confinement: Default::default(),
    }
}

fn run(task: &Task) -> bench::TaskResult {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let engine = bench::oracle_engine(task);
    rt.block_on(bench::run_task(&engine, task, &config()))
        .unwrap()
}

#[test]
fn the_oracle_solves_every_task_without_a_false_success() {
    let tasks = bench::load_suite(&suite_dir()).unwrap();
    assert!(tasks.len() >= 12, "{} tasks", tasks.len());
    let results: Vec<_> = tasks.iter().map(run).collect();
    let report = bench::report(&results);
    for (task, r) in tasks.iter().zip(&results) {
        assert!(r.solved(), "{} not solved:\n{report}", task.name);
        assert_eq!(
            r.turns as usize,
            task.oracle.len(),
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
    let engine = bench::oracle_engine(&task);
    assert!(
        rt.block_on(bench::run_task(&engine, &failing, &cfg))
            .is_err()
    );
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
        // A look first: a DONE before any action succeeded is refused as premature.
        t.oracle = vec![
            "LIST\n".to_owned(),
            "Nothing to do.\nDONE nothing\n".to_owned(),
        ];
        let r = run(&t);
        assert_eq!(r.reason, StopReason::Done, "{}", task.name);
        assert!(!r.verified, "{}: verify.sh passes untouched", task.name);
        assert!(r.false_success() && !r.solved(), "{}", task.name);
    }
}

#[test]
fn a_session_without_done_is_neither_solved_nor_a_false_success() {
    let task = Task::load(&suite_dir().join("create-file")).unwrap();
    let mut t = task.clone();
    // The right file, but no DONE: the session stalls on the fallback prose.
    t.oracle.pop();
    let r = run(&t);
    assert_eq!(r.reason, StopReason::Stall);
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
            t.oracle = vec![
                format!("DELETE {name}\n"),
                format!("CREATE {name}\n<<<<<<< SEARCH\n=======\n{passing}\n>>>>>>> REPLACE\n"),
                "DONE the tests pass\n".to_owned(),
            ];
            let r = run(&t);
            assert_eq!(r.reason, StopReason::Done, "{}: {name}", task.name);
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
