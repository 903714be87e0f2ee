//! `--attempts N` on the scripted engine: the checker picks the first attempt that passes,
//! without a check the attempts vote by their changes, failures (all attempts, an engine
//! error, isolation, promotion) leave the real tree as it was and no copy behind, and the
//! winner is asked for as one diff outside `auto`.

#![allow(clippy::unwrap_used)] // Tests fail loudly on the first surprise.

mod common;

use std::path::Path;

use agent::attempts::{
    self, Attempt, AttemptError, AttemptsError, Choice, Report, Settled, Unwatched, Watcher,
};
use agent::isolate::Change;
use agent::view::Quiet;
use agent::{AgentError, Approval, ApprovalMode, Config, Policy, ScriptedApprover, Workspace};
use models::{Script, ScriptedEngine};

/// A fresh repository under the system temp dir holding `a.txt`, removed when dropped.
fn repo(name: &str) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix(&format!("bellows-attempts-{name}-"))
        .tempdir()
        .unwrap();
    std::fs::write(dir.path().join("a.txt"), "old\n").unwrap();
    dir
}

/// A one-slot engine that replays `replies` in order (attempts take them one after another),
/// then says something with no action.
fn engine(replies: &[Script]) -> ScriptedEngine {
    let e = ScriptedEngine::new("scripted", Script::chunked("Let me think.\n", 5)).with_slots(1);
    for r in replies {
        e.push(r.clone());
    }
    e
}

/// An attempt's reply that rewrites `a.txt` to `text`.
fn edit(text: &str) -> Script {
    Script::chunked(
        &format!("EDIT a.txt\n<<<<<<< SEARCH\nold\n=======\n{text}\n>>>>>>> REPLACE\n"),
        7,
    )
}

fn done() -> Script {
    Script::chunked("DONE edited\n", 4)
}

/// Three turns a session: a wrong edit, a DONE the check rejects, a second DONE it rejects
/// again ends the attempt at max_turns.
fn cfg(mode: ApprovalMode, check: bool) -> Config {
    let mut c = Config::new("put right into a.txt", Policy::new(mode));
    c.max_turns = 3;
    c.reply_reserve = 200;
    if check {
        c.verify = Some(["grep", "-q", "right", "a.txt"].map(str::to_owned).to_vec());
    }
    c
}

fn run(
    e: &ScriptedEngine,
    dir: &Path,
    cfg: &Config,
    n: u32,
    keep: bool,
    approver: &mut ScriptedApprover,
    watcher: &mut dyn Watcher,
) -> Result<Report, AttemptsError> {
    let ws = Workspace::new(dir).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(attempts::attempt(
        e, &ws, cfg, n, keep, approver, &mut Quiet, watcher,
    ))
}

fn read(dir: &Path, path: &str) -> String {
    std::fs::read_to_string(dir.join(path)).unwrap()
}

/// What is left under `.bellows/isolated/`: no copy and no base record once settled.
fn copies_left(dir: &Path) -> Vec<String> {
    match std::fs::read_dir(dir.join(".bellows/isolated")) {
        Ok(rd) => rd
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// The real tree's files, `.bellows` aside.
fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != ".bellows")
        .collect();
    names.sort();
    names
}

#[test]
fn the_first_attempt_whose_check_passes_wins_and_only_its_change_is_promoted() {
    let dir = repo("checked");
    // Attempt 1 edits wrongly (the check after the change fails) and its DONEs are
    // rejected; attempt 2 passes; attempt 3 never runs.
    let e = engine(&[edit("wrong"), done(), done(), edit("right"), done()]);
    let c = cfg(ApprovalMode::Auto, true);
    let report = run(
        &e,
        dir.path(),
        &c,
        3,
        false,
        &mut ScriptedApprover::default(),
        &mut Unwatched,
    )
    .unwrap();
    assert_eq!(report.attempts.len(), 2, "{}", report.summary());
    assert_eq!(report.choice, Choice::Checked { index: 1 });
    assert!(!report.attempts[0].passed() && report.attempts[1].passed());
    assert_eq!(
        report.settled,
        Settled::Promoted(vec![Change::Write("a.txt".to_owned())])
    );
    assert_eq!(read(dir.path(), "a.txt"), "right\n");
    assert_eq!(files(dir.path()), ["a.txt"]);
    assert!(
        copies_left(dir.path()).is_empty(),
        "{:?}",
        copies_left(dir.path())
    );
    for a in &report.attempts {
        assert!(!a.root.exists(), "{} left behind", a.root.display());
    }
    // Attempt 1 sampled greedily with the first seed (its third turn warmer, after a
    // rejected DONE made no progress, with a seed of its own), attempt 2 hotter with the next.
    let seen = e.seen.lock().unwrap();
    let sampling: Vec<(f32, Option<u32>)> = seen
        .iter()
        .map(|r| (r.sampling.temperature, r.sampling.seed))
        .collect();
    let (s1, s2) = (attempts::DEFAULT_SEED, attempts::DEFAULT_SEED + 1);
    assert_eq!(
        sampling,
        [
            (0.0, Some(s1)),
            (0.0, Some(s1)),
            (agent::config::DEFAULT_STUCK_TEMPERATURE, Some(s1 + 3)),
            (0.4, Some(s2)),
            (0.4, Some(s2))
        ]
    );
    assert!(
        report
            .summary()
            .contains("chosen: attempt 2 of 2, the first whose check passed")
    );
}

#[test]
fn without_a_check_the_majority_change_wins_and_the_report_says_how_many_agreed() {
    let dir = repo("vote");
    let e = engine(&[edit("B"), done(), edit("A"), done(), edit("A"), done()]);
    let c = cfg(ApprovalMode::Auto, false);
    let report = run(
        &e,
        dir.path(),
        &c,
        3,
        false,
        &mut ScriptedApprover::default(),
        &mut Unwatched,
    )
    .unwrap();
    assert_eq!(report.attempts.len(), 3);
    assert!(report.attempts.iter().all(Attempt::done));
    assert_eq!(
        report.choice,
        Choice::Voted {
            index: 1,
            agreed: 2,
            of: 3
        }
    );
    assert!(
        report
            .summary()
            .contains("chosen: attempt 2, 2/3 attempts agreed"),
        "{}",
        report.summary()
    );
    assert_eq!(read(dir.path(), "a.txt"), "A\n");
    assert!(copies_left(dir.path()).is_empty());
    // Temperatures follow the schedule.
    let temps: Vec<f32> = e
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.sampling.temperature)
        .collect();
    assert_eq!(temps, [0.0, 0.0, 0.4, 0.4, 0.7, 0.7]);
}

/// With the models' own checks (`--own-check`), results are ranked first by how many of
/// the attempts' checks they pass (the generated-tests vote of CodeT): two attempts agree on
/// a wrong change their checks reject (each DONE taken when said again), the third writes the
/// change every check passes, and it wins over the larger group.
#[test]
fn the_result_that_passes_most_of_the_attempts_own_checks_wins() {
    if !common::landlock() {
        return;
    }
    let dir = repo("codet");
    let check = || {
        Script::chunked(
            "```sh\ngrep -qx right a.txt || { echo no; exit 1; }\n```\n",
            9,
        )
    };
    let e = engine(&[
        check(),
        edit("wrong"),
        done(),
        done(),
        check(),
        edit("wrong"),
        done(),
        done(),
        check(),
        edit("right"),
        done(),
    ]);
    let mut c = cfg(ApprovalMode::Auto, false);
    c.own_check = true;
    let report = run(
        &e,
        dir.path(),
        &c,
        3,
        false,
        &mut ScriptedApprover::default(),
        &mut Unwatched,
    )
    .unwrap();
    let passed: Vec<usize> = report.attempts.iter().map(|a| a.checks_passed).collect();
    assert_eq!(passed, [0, 0, 3]);
    assert_eq!(
        report.choice,
        Choice::Voted {
            index: 2,
            agreed: 1,
            of: 3
        }
    );
    assert_eq!(read(dir.path(), "a.txt"), "right\n");
}

#[test]
fn a_tie_goes_to_the_earliest_group_and_attempts_without_done_do_not_vote() {
    let dir = repo("tie");
    // Attempt 1 edits but never says DONE (it stalls on the engine's prose); 2 and 3 differ.
    let e = engine(&[
        edit("C"),
        Script::chunked("thinking\n", 3),
        Script::chunked("thinking\n", 3),
        edit("B"),
        done(),
        edit("A"),
        done(),
    ]);
    let c = cfg(ApprovalMode::Auto, false);
    let report = run(
        &e,
        dir.path(),
        &c,
        3,
        false,
        &mut ScriptedApprover::default(),
        &mut Unwatched,
    )
    .unwrap();
    assert!(!report.attempts[0].done(), "{}", report.summary());
    assert_eq!(
        report.choice,
        Choice::Voted {
            index: 1,
            agreed: 1,
            of: 3
        }
    );
    assert_eq!(read(dir.path(), "a.txt"), "B\n");
    assert!(copies_left(dir.path()).is_empty());
}

#[test]
fn when_every_attempt_fails_nothing_is_promoted_and_no_copy_is_left() {
    let dir = repo("all-fail");
    let e = engine(&[edit("wrong"), done(), done(), edit("worse"), done(), done()]);
    let c = cfg(ApprovalMode::Auto, true);
    let report = run(
        &e,
        dir.path(),
        &c,
        2,
        false,
        &mut ScriptedApprover::default(),
        &mut Unwatched,
    )
    .unwrap();
    assert_eq!(report.attempts.len(), 2);
    assert_eq!(report.choice, Choice::Nothing);
    assert_eq!(report.settled, Settled::Nothing);
    assert_eq!(read(dir.path(), "a.txt"), "old\n");
    assert_eq!(files(dir.path()), ["a.txt"]);
    assert!(copies_left(dir.path()).is_empty());
    assert!(
        report
            .summary()
            .contains("no attempt of 2 passed its check")
    );
}

#[test]
fn an_engine_error_in_one_attempt_does_not_stop_the_others() {
    let dir = repo("engine-error");
    let e = engine(&[
        Script::failing("EDIT a.t", 3, "decode failed"),
        edit("right"),
        done(),
    ]);
    let c = cfg(ApprovalMode::Auto, true);
    let report = run(
        &e,
        dir.path(),
        &c,
        3,
        false,
        &mut ScriptedApprover::default(),
        &mut Unwatched,
    )
    .unwrap();
    assert_eq!(report.attempts.len(), 2);
    assert!(matches!(
        &report.attempts[0].result,
        Err(AttemptError::Session(AgentError::Generation(m))) if m == "decode failed"
    ));
    assert!(report.summary().contains("attempt 1 (temperature 0, seed"));
    assert_eq!(report.choice, Choice::Checked { index: 1 });
    assert_eq!(read(dir.path(), "a.txt"), "right\n");
    assert!(copies_left(dir.path()).is_empty());
}

#[test]
fn outside_auto_the_winner_is_asked_for_as_one_diff() {
    for (answer, expected) in [(Approval::No, "old\n"), (Approval::Yes, "right\n")] {
        let dir = repo("ask");
        let e = engine(&[edit("right"), done()]);
        let c = cfg(ApprovalMode::Ask, true);
        let mut approver = ScriptedApprover::new([answer]);
        let report = run(&e, dir.path(), &c, 2, false, &mut approver, &mut Unwatched).unwrap();
        // The attempt's own edit was not asked about (its copy is disposable); only the
        // promotion was, with the winner's diff against the real tree.
        assert_eq!(approver.asked.len(), 1, "{:?}", approver.asked);
        let (tool, shown) = &approver.asked[0];
        assert_eq!(tool, "promote");
        assert!(
            shown.contains("--- a/a.txt") && shown.contains("-old") && shown.contains("+right"),
            "{shown}"
        );
        let settled = if answer == Approval::Yes {
            Settled::Promoted(vec![Change::Write("a.txt".to_owned())])
        } else {
            Settled::Declined
        };
        assert_eq!(report.settled, settled);
        assert_eq!(read(dir.path(), "a.txt"), expected);
        assert!(copies_left(dir.path()).is_empty());
    }
}

#[test]
fn keep_attempts_leaves_every_copy_for_promote_or_discard() {
    let dir = repo("keep");
    let e = engine(&[edit("A"), done(), edit("B"), done()]);
    let c = cfg(ApprovalMode::Auto, false);
    let report = run(
        &e,
        dir.path(),
        &c,
        2,
        true,
        &mut ScriptedApprover::default(),
        &mut Unwatched,
    )
    .unwrap();
    assert_eq!(read(dir.path(), "a.txt"), "A\n");
    assert_eq!(report.kept.len(), 2);
    let ws = Workspace::new(dir.path()).unwrap();
    for a in &report.attempts {
        assert!(a.root.is_dir());
        agent::isolate::discard(&ws, &a.copy).unwrap();
    }
    assert!(copies_left(dir.path()).is_empty());
}

/// Runs `f` on the real tree after attempt `after` ends.
struct After<F: FnMut(&Path)> {
    after: u32,
    real: std::path::PathBuf,
    f: F,
}

impl<F: FnMut(&Path)> Watcher for After<F> {
    fn finished(&mut self, attempt: &Attempt, _copy: &Workspace) {
        if attempt.number == self.after {
            (self.f)(&self.real);
        }
    }
}

#[test]
fn a_failed_isolation_removes_the_copies_made_before_it() {
    let dir = repo("isolate-fails");
    let e = engine(&[edit("A"), done()]);
    let c = cfg(ApprovalMode::Auto, false);
    // After attempt 1, a link leaving the repository appears in the real tree: attempt 2's
    // isolation refuses it.
    let mut watcher = After {
        after: 1,
        real: dir.path().to_owned(),
        f: |real: &Path| std::os::unix::fs::symlink("/etc/hostname", real.join("out")).unwrap(),
    };
    let err = run(
        &e,
        dir.path(),
        &c,
        2,
        false,
        &mut ScriptedApprover::default(),
        &mut watcher,
    )
    .unwrap_err();
    assert!(
        matches!(err, AttemptsError::Isolate { number: 2, ref left, .. } if left.is_empty()),
        "{err}"
    );
    assert_eq!(read(dir.path(), "a.txt"), "old\n");
    assert!(
        copies_left(dir.path()).is_empty(),
        "{:?}",
        copies_left(dir.path())
    );
}

#[test]
fn a_failed_promotion_keeps_the_winner_and_removes_the_rest() {
    let dir = repo("promote-fails");
    let e = engine(&[edit("A"), done(), edit("A"), done()]);
    let c = cfg(ApprovalMode::Auto, false);
    // The user changes a.txt while attempt 2 runs: promoting would lose that.
    let mut watcher = After {
        after: 2,
        real: dir.path().to_owned(),
        f: |real: &Path| std::fs::write(real.join("a.txt"), "mine\n").unwrap(),
    };
    let err = run(
        &e,
        dir.path(),
        &c,
        2,
        false,
        &mut ScriptedApprover::default(),
        &mut watcher,
    )
    .unwrap_err();
    let AttemptsError::Promote {
        number, copy, left, ..
    } = &err
    else {
        panic!("{err}");
    };
    assert_eq!((*number, left.len()), (1, 0));
    assert!(
        err.to_string()
            .contains(&format!("bellows agent promote {copy}"))
    );
    assert_eq!(read(dir.path(), "a.txt"), "mine\n");
    // Only the winner's copy (and its base record) is left.
    let mut left = copies_left(dir.path());
    left.sort();
    assert_eq!(left, [copy.clone(), format!("{copy}.base.json")]);
    agent::isolate::discard(&Workspace::new(dir.path()).unwrap(), copy).unwrap();
    assert!(copies_left(dir.path()).is_empty());
}

#[test]
fn in_a_git_repository_each_attempt_is_a_worktree_and_none_stays_registered() {
    let dir = repo("git");
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t", "-C"])
            .arg(dir.path())
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "start"]);
    let e = engine(&[edit("wrong"), done(), done(), edit("right"), done()]);
    let c = cfg(ApprovalMode::Auto, true);
    let report = run(
        &e,
        dir.path(),
        &c,
        2,
        false,
        &mut ScriptedApprover::default(),
        &mut Unwatched,
    )
    .unwrap();
    assert_eq!(report.choice, Choice::Checked { index: 1 });
    assert_eq!(read(dir.path(), "a.txt"), "right\n");
    let worktrees = git(&["worktree", "list", "--porcelain"]);
    assert_eq!(worktrees.matches("worktree ").count(), 1, "{worktrees}");
    assert!(copies_left(dir.path()).is_empty());
}

#[test]
fn the_temperature_schedule_rises_goes_round_and_never_cools_a_hot_profile() {
    let temps: Vec<f32> = (1..=8).map(|k| attempts::temperature(k, 0.0)).collect();
    assert_eq!(temps, [0.0, 0.4, 0.7, 0.9, 0.4, 0.7, 0.9, 0.4]);
    let hot: Vec<f32> = (1..=3).map(|k| attempts::temperature(k, 0.8)).collect();
    assert_eq!(hot, [0.8, 0.8, 0.8]);
    let base = models::Sampling {
        seed: Some(7),
        top_k: 40,
        ..models::Sampling::default()
    };
    let s3 = attempts::sampling(&base, 3);
    assert_eq!((s3.temperature, s3.seed, s3.top_k), (0.7, Some(9), 40));
}

/// Among results that tie, the one that changed the file the task names wins over one that
/// changed another file, though it ran later. (The other file is one the repository has: a
/// session whose only change is a new file the task does not name may not say DONE at all,
/// `named_unchanged`.)
#[test]
fn a_tie_goes_to_the_change_of_the_file_the_task_names() {
    let dir = repo("tie-named");
    std::fs::write(dir.path().join("b.txt"), "b\n").unwrap();
    let other = Script::chunked(
        "CREATE b.txt\n<<<<<<< SEARCH\n=======\nright\n>>>>>>> REPLACE\n",
        7,
    );
    let e = engine(&[other, done(), edit("right"), done()]);
    let mut c = cfg(ApprovalMode::Auto, false);
    // Worded so that a.txt is named but not as the place of a change: where it is (`put right
    // into a.txt`), the first attempt's DONE is refused (`named_left`) and nothing ties.
    c.task = "a.txt should say right".to_owned();
    let report = run(
        &e,
        dir.path(),
        &c,
        2,
        false,
        &mut ScriptedApprover::default(),
        &mut Unwatched,
    )
    .unwrap();
    assert!(
        report.attempts.iter().all(Attempt::done),
        "{}",
        report.summary()
    );
    assert_eq!(
        report.choice,
        Choice::Voted {
            index: 1,
            agreed: 1,
            of: 2
        }
    );
    assert_eq!(read(dir.path(), "a.txt"), "right\n");
    assert_eq!(read(dir.path(), "b.txt"), "b\n");
}

/// A four-slot engine whose attempts run side by side: the attempt sampling at `winner`'s
/// temperature edits `a.txt` right and says DONE; every other one thinks slowly, without end.
fn side_by_side_engine(winner: Option<f32>) -> ScriptedEngine {
    ScriptedEngine::new("scripted", Script::chunked("unused\n", 5))
        .with_slots(4)
        .responding(Box::new(move |req| {
            let turn = match &req.prompt {
                models::Prompt::Chat { messages, .. } => {
                    messages.iter().filter(|m| m.role == "assistant").count()
                }
                models::Prompt::Text(t) => t.matches("assistant").count(),
            };
            if Some(req.sampling.temperature) == winner {
                if turn == 0 { edit("right") } else { done() }
            } else {
                Script {
                    delay: std::time::Duration::from_millis(300),
                    ..Script::chunked("Let me think about it some more.\n", 4)
                }
            }
        }))
}

#[test]
fn attempts_run_side_by_side_and_one_that_passes_stops_the_others() {
    let dir = repo("side-by-side");
    // Attempt 2 samples at 0.4 and passes on its second turn; attempts 1, 3 and 4 would
    // think for many turns, and are stopped once it has passed.
    let e = side_by_side_engine(Some(0.4));
    let mut c = cfg(ApprovalMode::Auto, true);
    c.max_turns = 30;
    let started = std::time::Instant::now();
    let report = run(
        &e,
        dir.path(),
        &c,
        4,
        false,
        &mut ScriptedApprover::default(),
        &mut Unwatched,
    )
    .unwrap();
    assert_eq!(report.attempts.len(), 4, "{}", report.summary());
    assert_eq!(report.choice, Choice::Checked { index: 1 });
    for (i, a) in report.attempts.iter().enumerate() {
        assert_eq!(a.number, i as u32 + 1);
        if i != 1 {
            assert_eq!(
                a.reason(),
                Some(agent::StopReason::Quit),
                "attempt {} went on: {}",
                a.number,
                a.summary()
            );
        }
    }
    // One after another, attempt 1 alone would have thought for 30 slow turns first.
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    assert_eq!(read(dir.path(), "a.txt"), "right\n");
    assert!(copies_left(dir.path()).is_empty());
}

/// Fires the run's interrupt as the last attempt of the first wave starts.
struct CtrlC(agent::Interrupt, u32);

impl Watcher for CtrlC {
    fn starting(&mut self, number: u32, _of: u32, _copy: &Workspace, _s: &models::Sampling) {
        if number == self.1 {
            self.0.fire();
        }
    }
}

#[test]
fn ctrl_c_stops_every_attempt_running_side_by_side_and_keeps_their_copies() {
    let dir = repo("side-by-side-interrupt");
    let e = side_by_side_engine(None);
    let mut c = cfg(ApprovalMode::Auto, true);
    c.max_turns = 30;
    let mut watcher = CtrlC(c.interrupt.clone(), 3);
    let report = run(
        &e,
        dir.path(),
        &c,
        3,
        false,
        &mut ScriptedApprover::default(),
        &mut watcher,
    )
    .unwrap();
    assert_eq!(report.attempts.len(), 3);
    assert!(
        report
            .attempts
            .iter()
            .all(|a| a.reason() == Some(agent::StopReason::Quit)),
        "{}",
        report.summary()
    );
    assert_eq!(report.settled, Settled::Nothing);
    assert_eq!(read(dir.path(), "a.txt"), "old\n");
    assert_eq!(report.kept.len(), 3, "an interrupted run keeps its copies");
}
