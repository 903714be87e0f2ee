//! `bellows agent bench`: a suite of small repository tasks, each run as a session on a fresh
//! copy of its starting files with approval `auto`, then checked by the task's own script.
//!
//! A task is a folder: `repo/` (the starting files), `task.md` (the task as a user would type
//! it), `verify.sh` (hidden from the model: exit 0 iff the task is done; run with `sh` in the
//! session's copy; only it decides *solved*), optionally `oracle.jsonl` (one JSON string per
//! line: the scripted reply of each turn, for `--engine oracle`) and optionally `check` (one
//! command line, such as `python3 test_stats.py`: the check the model may see and run, like a
//! repository's test suite). With a `check` the session runs it after DONE (`--verify`), and a
//! failure is fed back to the model; `--no-check` leaves it out. The figures of a session are
//! read back from its journal, the same records undo reads.
//!
//! With `--attempts N` a task runs as `bellows agent --attempts N` does ([`crate::attempts`]):
//! up to N attempts, each in an isolated copy inside the task's copy, stopping at the first
//! whose check passes (all N without a check, which then vote). `verify.sh` judges every
//! attempt in its own copy, so the report has pass@1 (attempt 1 alone) and *solved within N*
//! (any attempt) beside *solved* (the attempt the checker or the vote chose).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::attempts::{Attempt, Choice, Unwatched, Watcher};
use crate::config::Config;
use crate::policy::{ApprovalMode, Policy};
use crate::run::StopReason;
use crate::view::{Event, Quiet};
use crate::workspace::Workspace;

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} line {line}: not a JSON string ({error})")]
    Oracle {
        path: PathBuf,
        line: usize,
        error: String,
    },
    #[error("{path}: {error}")]
    Check { path: PathBuf, error: CheckError },
    #[error("no tasks (folders with task.md) under {0}")]
    NoTasks(PathBuf),
    #[error("task {0} has no oracle.jsonl, so the oracle engine cannot run it")]
    NoOracle(String),
    #[error("task {task}: {source}")]
    Session {
        task: String,
        source: Box<crate::attempts::AttemptError>,
    },
    #[error("task {task}: {source}")]
    Attempts {
        task: String,
        source: Box<crate::attempts::AttemptsError>,
    },
    #[error("task {task}: {source}")]
    Journal {
        task: String,
        source: crate::journal::JournalError,
    },
    #[error(transparent)]
    Workspace(#[from] crate::workspace::WorkspaceError),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> BenchError + '_ {
    move |source| BenchError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Why a task's `check` file is not one command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    #[error("the check is empty; write one command line, e.g. `python3 test_stats.py`")]
    Empty,
    #[error("the check holds more than one line; write one command line")]
    Lines,
    #[error("{}", split_message(*.0))]
    Split(codec::registry::SplitError),
}

fn split_message(e: codec::registry::SplitError) -> &'static str {
    use codec::registry::SplitError;
    match e {
        SplitError::Unclosed => "a quote or a trailing backslash is not closed",
        SplitError::ShellSyntax => {
            "shell syntax (`|`, `&`, `;`, `<`, `>`, `` ` ``, `$(`, `(`, `)`) is not a command: \
             the check runs without a shell (write `sh -c '...'` for one)"
        }
        SplitError::Newline => "the line holds a newline",
    }
}

/// Parses a `check` file: one command line, split as a RUN line is (POSIX quoting, no shell).
pub fn parse_check(text: &str) -> Result<Vec<String>, CheckError> {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let line = lines.next().ok_or(CheckError::Empty)?;
    if lines.next().is_some() {
        return Err(CheckError::Lines);
    }
    match codec::registry::split_argv(line) {
        Ok(argv) if argv.is_empty() => Err(CheckError::Empty),
        Ok(argv) => Ok(argv),
        Err(e) => Err(CheckError::Split(e)),
    }
}

/// One task of the suite.
#[derive(Debug, Clone)]
pub struct Task {
    pub name: String,
    pub dir: PathBuf,
    pub prompt: String,
    /// The oracle's reply for each turn, in order; `None` when the folder has no
    /// `oracle.jsonl` (only a model can run the task).
    pub oracle: Option<Vec<String>>,
    /// The visible check (the `check` file's argv), run after DONE unless `--no-check`.
    pub check: Option<Vec<String>>,
}

impl Task {
    pub fn load(dir: &Path) -> Result<Task, BenchError> {
        let read = |name: &str| {
            let p = dir.join(name);
            std::fs::read_to_string(&p).map_err(io(&p))
        };
        let prompt = read("task.md")?.trim().to_owned();
        let path = dir.join("oracle.jsonl");
        let oracle = if path.exists() {
            let mut oracle = Vec::new();
            for (k, line) in read("oracle.jsonl")?.lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                let reply: String = serde_json::from_str(line).map_err(|e| BenchError::Oracle {
                    path: path.clone(),
                    line: k + 1,
                    error: e.to_string(),
                })?;
                oracle.push(reply);
            }
            Some(oracle)
        } else {
            None
        };
        let path = dir.join("check");
        let check = if path.exists() {
            let argv =
                parse_check(&read("check")?).map_err(|error| BenchError::Check { path, error })?;
            Some(argv)
        } else {
            None
        };
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(Task {
            name,
            dir: dir.to_owned(),
            prompt,
            oracle,
            check,
        })
    }
}

/// The oracle: a scripted engine that replays the task's `oracle.jsonl`, one reply per turn,
/// then writes prose without an action. It must solve every task that has one; it tests the
/// harness. A task without `oracle.jsonl` is [`BenchError::NoOracle`] (the CLI skips it and
/// says so).
pub fn oracle_engine(task: &Task) -> Result<models::ScriptedEngine, BenchError> {
    let replies = task
        .oracle
        .as_ref()
        .ok_or_else(|| BenchError::NoOracle(task.name.clone()))?;
    let engine = models::ScriptedEngine::new(
        "oracle",
        models::Script::chunked("The oracle has nothing more to say.\n", 8),
    );
    for reply in replies {
        engine.push(models::Script::chunked(reply, 8));
    }
    Ok(engine)
}

/// Every task folder (one holding `task.md`) directly under `dir`, sorted by name.
pub fn load_suite(dir: &Path) -> Result<Vec<Task>, BenchError> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io(dir))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("task.md").is_file())
        .collect();
    dirs.sort();
    if dirs.is_empty() {
        return Err(BenchError::NoTasks(dir.to_owned()));
    }
    dirs.iter().map(|d| Task::load(d)).collect()
}

/// What one task's attempts did. `reason` and `verified` are the chosen attempt's (the first
/// attempt's when none was chosen); the counts are summed over every attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskResult {
    pub name: String,
    /// The copy the session ran in: removed afterwards unless [`BenchConfig::keep`].
    pub copy: PathBuf,
    /// How the session ended; `None` when it failed (the engine, the journal).
    pub reason: Option<StopReason>,
    /// `verify.sh` passed on the session's final tree.
    pub verified: bool,
    /// Attempts run, of `allowed`.
    pub attempts: u32,
    pub allowed: u32,
    /// The attempt chosen (numbered from 1): the first whose check passed, else the vote's.
    pub chosen: Option<u32>,
    /// Attempt 1 alone solved the task (DONE, and `verify.sh` passed in its copy).
    pub pass1: bool,
    /// Some attempt solved it, chosen or not.
    pub within: bool,
    /// DONEs the visible check rejected (fed back to the model).
    pub check_rejected: u32,
    pub turns: u32,
    pub prompt_tokens: u64,
    pub generated_tokens: u64,
    /// Prompt tokens not served from the engine's prefix cache.
    pub evaluated_tokens: u64,
    /// Replies with at least one action that reached the executor: not an echo of the help
    /// text, not a DONE refused as premature (`codec::echo::Acting`, the definition
    /// `bellows eval --generate` uses for conversion).
    pub acted: u32,
    pub replies: u32,
    /// SEARCH/REPLACE and decoder repairs over all proposals.
    pub repairs: u32,
    /// DONE refused as too early: nothing had succeeded yet (`premature_done`), or the tree
    /// was as it started (`no_change`).
    pub premature_done: u32,
    /// Actions refused as echoes of the protocol's help text.
    pub echoes: u32,
    /// DONEs refused because what the task states is not so yet ([`DONE_REFUSALS`]).
    pub done_refused: u32,
    /// Replies cut because they repeated a block of lines (failure kind `repetition`).
    pub repetitions: u32,
    /// Per refusal kind (`check` for the visible check), the refused DONEs whose tree
    /// `verify.sh` judged and how many of those trees it passes: a right answer refused
    /// ([`crate::view::Event::Witnessed`]).
    pub witnessed: std::collections::BTreeMap<String, Witnessed>,
    pub wall: Duration,
}

/// Refused DONEs of one kind whose tree `verify.sh` judged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Witnessed {
    pub refused: u32,
    /// Of those, trees `verify.sh` passes.
    pub right: u32,
}

/// Refusal kinds that come after the agent changed the tree itself (`rename_finished`: a
/// rename the session began, finished by the agent and shown before the DONE is taken), so
/// the witness judges the agent's tree, not the model's: counted per kind, never as a right
/// answer refused.
pub const AGENT_FINISHED: &[&str] = &["rename_finished"];

impl TaskResult {
    /// Refused DONEs whose tree `verify.sh` passes, over every kind but [`AGENT_FINISHED`].
    pub fn right_refused(&self) -> u32 {
        self.wronged().map(|(_, w)| w.right).sum()
    }

    /// The kinds whose refusals held a right answer back, with their counts.
    fn wronged(&self) -> impl Iterator<Item = (&String, &Witnessed)> {
        self.witnessed
            .iter()
            .filter(|(k, w)| w.right > 0 && !AGENT_FINISHED.contains(&k.as_str()))
    }
}

/// The bench's [`crate::config::DoneWitness`]: the task's hidden `verify.sh`, run with `sh`
/// on a throwaway copy of the tree (confined like the session's commands), so its side
/// effects never reach the session.
#[derive(Debug)]
struct VerifyWitness {
    script: PathBuf,
}

impl crate::config::DoneWitness for VerifyWitness {
    fn passes(&self, ws: &Workspace) -> Option<bool> {
        let (_dir, copy) = crate::probe::scratch_copy(ws)?;
        let out = copy
            .run(&["sh".to_owned(), self.script.display().to_string()])
            .ok()?;
        Some(out.code == Some(0))
    }
}

/// The refusals of a DONE that read the task's words, its commands or the session's own
/// files (lint, a copy left, a test changed, a file to delete left, a file or name or text
/// missing, a definition to delete left, a command's output unchanged or still failing, a
/// test that passed before failing).
pub const DONE_REFUSALS: &[&str] = &[
    "lint",
    "copy_left",
    "check_changed",
    "file_left",
    "file_missing",
    "rename_incomplete",
    "definition_left",
    "content_missing",
    "name_missing",
    "unchanged_output",
    "still_failing",
    "test_broken",
    "given_changed",
    "named_left",
    "tests_not_added",
];

impl TaskResult {
    /// A result with no counts yet: the journal's tally fills them in.
    pub fn new(name: &str, reason: StopReason, verified: bool, turns: u32) -> TaskResult {
        TaskResult {
            name: name.to_owned(),
            copy: PathBuf::new(),
            reason: Some(reason),
            verified,
            attempts: 1,
            allowed: 1,
            chosen: None,
            pass1: false,
            within: false,
            check_rejected: 0,
            turns,
            prompt_tokens: 0,
            generated_tokens: 0,
            evaluated_tokens: 0,
            acted: 0,
            replies: 0,
            repairs: 0,
            premature_done: 0,
            echoes: 0,
            done_refused: 0,
            repetitions: 0,
            witnessed: std::collections::BTreeMap::new(),
            wall: Duration::ZERO,
        }
    }

    /// DONE, and `verify.sh` agrees.
    pub fn solved(&self) -> bool {
        self.done() && self.verified
    }

    /// DONE, but `verify.sh` fails.
    pub fn false_success(&self) -> bool {
        self.done() && !self.verified
    }

    fn done(&self) -> bool {
        matches!(self.reason, Some(StopReason::Done | StopReason::Verified))
    }

    /// The stop column: the stop reason, or `error` for a failed session.
    pub fn stop(&self) -> &'static str {
        self.reason.map_or("error", StopReason::as_str)
    }

    /// Adds `other`'s turns, tokens, conversions, refusals and check rejections to these.
    fn add_counts(&mut self, other: &TaskResult) {
        self.turns += other.turns;
        self.prompt_tokens += other.prompt_tokens;
        self.generated_tokens += other.generated_tokens;
        self.evaluated_tokens += other.evaluated_tokens;
        self.acted += other.acted;
        self.replies += other.replies;
        self.repairs += other.repairs;
        self.premature_done += other.premature_done;
        self.echoes += other.echoes;
        self.done_refused += other.done_refused;
        self.repetitions += other.repetitions;
        self.check_rejected += other.check_rejected;
        for (why, w) in &other.witnessed {
            let mine = self.witnessed.entry(why.clone()).or_default();
            mine.refused += w.refused;
            mine.right += w.right;
        }
    }
}

/// Session settings every task shares; the task text and approval `auto` are per task.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    pub session: Config,
    /// Keep each task's copy (under the system temp dir) instead of removing it.
    pub keep: bool,
    /// How each task's commands (its `verify.sh` included) are confined.
    pub confinement: crate::sandbox::Confinement,
    /// Attempts per task (at least 1): `--attempts`.
    pub attempts: u32,
    /// Run without the tasks' visible checks: `--no-check`.
    pub no_check: bool,
}

impl BenchConfig {
    /// One attempt per task, with the tasks' checks, copies removed.
    pub fn new(session: Config, confinement: crate::sandbox::Confinement) -> BenchConfig {
        BenchConfig {
            session,
            keep: false,
            confinement,
            attempts: 1,
            no_check: false,
        }
    }
}

/// Runs `task` on `engine` in a fresh copy of its `repo/` and checks it with `verify.sh`.
pub async fn run_task(
    engine: &dyn models::Engine,
    task: &Task,
    bench: &BenchConfig,
) -> Result<TaskResult, BenchError> {
    run_task_watched(engine, task, bench, &mut Quiet, &mut Unwatched).await
}

/// [`run_task`], showing each session's events to `view` and telling `watcher` as each
/// attempt starts and ends (`bellows agent bench` shows where it is with them).
pub async fn run_task_watched(
    engine: &dyn models::Engine,
    task: &Task,
    bench: &BenchConfig,
    view: &mut dyn crate::view::View,
    watcher: &mut dyn Watcher,
) -> Result<TaskResult, BenchError> {
    // Unique per run, so that tasks run concurrently (tests) never share a copy.
    static RUNS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let copy = std::env::temp_dir().join(format!(
        "bellows-bench-{}-{n}-{}",
        std::process::id(),
        task.name
    ));
    if copy.exists() {
        std::fs::remove_dir_all(&copy).map_err(io(&copy))?;
    }
    // Removed on every way out (a failed session included), unless kept.
    let _scratch = Scratch {
        path: copy.clone(),
        keep: bench.keep,
    };
    copy_tree(&task.dir.join("repo"), &copy)?;
    let mut ws = Workspace::new(&copy)?;
    ws.confinement = bench.confinement;
    let mut cfg = bench.session.clone();
    cfg.task = task.prompt.clone();
    cfg.policy = Policy::new(ApprovalMode::Auto);
    // The visible check is the session's `--verify`: a DONE it rejects is fed back. Whether
    // the task is solved is `verify.sh`'s call alone, after the session.
    cfg.verify = if bench.no_check {
        None
    } else {
        task.check.clone()
    };
    let script = task
        .dir
        .join("verify.sh")
        .canonicalize()
        .map_err(io(&task.dir))?;
    // Every refused DONE's tree is judged too, for the figures: a rule that refuses a
    // right answer shows (the session never hears of it).
    cfg.witness = Some(std::sync::Arc::new(VerifyWitness {
        script: script.clone(),
    }));
    let mut judge = Judge {
        task,
        script,
        judged: Vec::new(),
        error: None,
        outer: watcher,
    };
    let allowed = bench.attempts.max(1);
    let started = Instant::now();
    let attempts =
        crate::attempts::run_attempts(engine, &ws, &cfg, allowed, bench.keep, view, &mut judge)
            .await
            .map_err(|source| BenchError::Attempts {
                task: task.name.clone(),
                source: Box::new(source),
            })?;
    let wall = started.elapsed();
    if let Some(e) = judge.error {
        return Err(e);
    }
    let choice = crate::attempts::choose(&attempts, cfg.verify.is_some(), &cfg.task);
    if attempts.iter().all(|a| a.result.is_err())
        && let Some(Attempt { result: Err(e), .. }) = attempts.into_iter().next()
    {
        // No attempt ran to its end: the harness failed, not the model.
        return Err(BenchError::Session {
            task: task.name.clone(),
            source: Box::new(e),
        });
    }
    Ok(summarize(task, &judge.judged, choice, allowed, copy, wall))
}

/// The task's result from its judged attempts (in the order they ran) and the choice.
fn summarize(
    task: &Task,
    judged: &[TaskResult],
    choice: Choice,
    allowed: u32,
    copy: PathBuf,
    wall: Duration,
) -> TaskResult {
    let shown = choice
        .winner()
        .and_then(|i| judged.get(i))
        .or(judged.first());
    let mut r = TaskResult::new(&task.name, StopReason::MaxTurns, false, 0);
    r.reason = shown.and_then(|j| j.reason);
    r.verified = shown.is_some_and(|j| j.verified);
    for j in judged {
        r.add_counts(j);
    }
    r.copy = copy;
    r.wall = wall;
    r.attempts = judged.len() as u32;
    r.allowed = allowed;
    r.chosen = choice.winner().map(|i| i as u32 + 1);
    r.pass1 = judged.first().is_some_and(TaskResult::solved);
    r.within = judged.iter().any(TaskResult::solved);
    r
}

/// Judges each attempt in its own copy, before the copy goes: `verify.sh`, and the figures
/// of its journal.
struct Judge<'a> {
    task: &'a Task,
    script: PathBuf,
    /// One per attempt, in order.
    judged: Vec<TaskResult>,
    /// The first journal that could not be read.
    error: Option<BenchError>,
    /// The caller's watcher, told of each attempt too.
    outer: &'a mut dyn Watcher,
}

impl Watcher for Judge<'_> {
    fn starting(&mut self, number: u32, of: u32, copy: &Workspace, sampling: &models::Sampling) {
        self.outer.starting(number, of, copy, sampling);
    }

    fn finished(&mut self, attempt: &Attempt, copy: &Workspace) {
        self.outer.finished(attempt, copy);
        let verified = copy
            .run(&["sh".to_owned(), self.script.display().to_string()])
            .is_ok_and(|out| out.code == Some(0));
        let (reason, turns) = match &attempt.result {
            Ok(o) => (Some(o.reason), o.turns),
            Err(_) => (None, 0),
        };
        let mut r = TaskResult::new(&self.task.name, StopReason::MaxTurns, verified, turns);
        r.reason = reason;
        r.wall = attempt.wall;
        // Each copy holds the one session that ran in it (a failed one included).
        let sessions = copy.state_dir().join("sessions");
        let journal = std::fs::read_dir(&sessions)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path().join("journal.jsonl"))
            .find(|p| p.is_file());
        match journal.map(|j| crate::journal::read_events(&j)) {
            Some(Ok(events)) => tally_journal(&events, &mut r),
            Some(Err(source)) => {
                self.error.get_or_insert(BenchError::Journal {
                    task: self.task.name.clone(),
                    source,
                });
            }
            // A session that failed before its journal existed (no room for the reply).
            None => {}
        }
        if reason.is_none() {
            r.turns = r.replies;
        }
        self.judged.push(r);
    }
}

/// A task's copy, removed when dropped unless `keep`.
#[derive(Debug)]
struct Scratch {
    path: PathBuf,
    keep: bool,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// Adds a journal's token counts, conversions and repairs to `r`.
fn tally_journal(events: &[Event], r: &mut TaskResult) {
    use codec::echo::{Acting, Verdict};
    // Per turn, how its proposals came out. A proposal is judged by what the journal records
    // next: a refusal (echo, premature DONE, policy) or anything else (it reached the executor).
    let mut turns = std::collections::BTreeMap::<u32, Acting>::new();
    let mut pending: Option<u32> = None;
    for e in events {
        if let Some(turn) = pending.take() {
            let verdict = match e {
                Event::Refused { why, .. } if why == "echo" => Verdict::Echo,
                Event::Refused { .. } => Verdict::Refused,
                _ => Verdict::Acts,
            };
            turns.entry(turn).or_default().count(verdict);
        }
        match e {
            Event::Reply {
                prompt_tokens,
                cached_tokens,
                generated_tokens,
                ..
            } => {
                r.replies += 1;
                r.prompt_tokens += u64::from(*prompt_tokens);
                r.generated_tokens += u64::from(*generated_tokens);
                r.evaluated_tokens += u64::from(prompt_tokens.saturating_sub(*cached_tokens));
            }
            // The check the model wrote first cost tokens too, in no turn.
            Event::OwnCheck {
                prompt_tokens,
                cached_tokens,
                generated_tokens,
                ..
            } => {
                r.prompt_tokens += u64::from(*prompt_tokens);
                r.generated_tokens += u64::from(*generated_tokens);
                r.evaluated_tokens += u64::from(prompt_tokens.saturating_sub(*cached_tokens));
            }
            Event::Proposal { turn, repairs, .. } => {
                pending = Some(*turn);
                r.repairs += repairs.len() as u32;
            }
            // Both refuse a DONE as too early: before anything succeeded (plan mode), or on
            // the tree as it started.
            Event::Refused { why, .. } if why == "premature_done" || why == "no_change" => {
                r.premature_done += 1
            }
            Event::Refused { why, .. } if why == "echo" => r.echoes += 1,
            Event::Refused { why, .. } if DONE_REFUSALS.contains(&why.as_str()) => {
                r.done_refused += 1
            }
            Event::Witnessed { why, passes, .. } => {
                let w = r.witnessed.entry(why.clone()).or_default();
                w.refused += 1;
                w.right += u32::from(*passes);
            }
            Event::Malformed { kind, .. } if kind == "repetition" => r.repetitions += 1,
            Event::Verify {
                ok: false,
                after_change: false,
                ..
            } => r.check_rejected += 1,
            _ => {}
        }
    }
    if let Some(turn) = pending {
        turns.entry(turn).or_default().count(Verdict::Acts);
    }
    r.acted = turns.values().filter(|a| a.acted()).count() as u32;
}

/// Copies a directory tree: files keep their mode bits, and symbolic links are copied as
/// links with the same target (never followed, so a link to a directory is not walked and a
/// dangling one is kept as it is).
pub fn copy_tree(from: &Path, to: &Path) -> Result<(), BenchError> {
    std::fs::create_dir_all(to).map_err(io(to))?;
    for e in std::fs::read_dir(from).map_err(io(from))? {
        let e = e.map_err(io(from))?;
        let (src, dst) = (e.path(), to.join(e.file_name()));
        // `DirEntry::file_type` does not follow links.
        let kind = e.file_type().map_err(io(&src))?;
        if kind.is_symlink() {
            let target = std::fs::read_link(&src).map_err(io(&src))?;
            std::os::unix::fs::symlink(&target, &dst).map_err(io(&dst))?;
        } else if kind.is_dir() {
            copy_tree(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst).map_err(io(&src))?;
        }
    }
    Ok(())
}

/// The per-task table and the totals, ending with `solved S/N, false successes F`.
///
/// `tries` is the attempts run, `pick` the one chosen (`-`: none qualified), `p@1` whether
/// attempt 1 alone solved the task, `chk` the DONEs its visible check rejected; the result,
/// `stop` and `early`…`repairs` describe the chosen attempt and all attempts summed
/// respectively. *Solved* counts the chosen attempts that `verify.sh` passes; a false success
/// is a chosen attempt whose accepted DONE `verify.sh` fails.
pub fn report(results: &[TaskResult]) -> String {
    let mut s = format!(
        "{:<24} {:<7} {:>5} {:>4} {:>3} {:>3} {:>5} {:>7} {:>6} {:>6} {:>7} {:>7} {:>5} {:>5} {:>7} {:<9}\n",
        "task",
        "result",
        "tries",
        "pick",
        "p@1",
        "chk",
        "turns",
        "prompt",
        "gen",
        "eval",
        "wall_s",
        "act",
        "echo",
        "early",
        "repairs",
        "stop"
    );
    let line = |name: &str, result: &str, r: &TaskResult, pick: &str, p1: &str, stop: &str| {
        format!(
            "{:<24} {:<7} {:>5} {:>4} {:>3} {:>3} {:>5} {:>7} {:>6} {:>6} {:>7.1} {:>7} {:>5} {:>5} {:>7} {:<9}\n",
            name,
            result,
            r.attempts,
            pick,
            p1,
            r.check_rejected,
            r.turns,
            r.prompt_tokens,
            r.generated_tokens,
            r.evaluated_tokens,
            r.wall.as_secs_f64(),
            format!("{}/{}", r.acted, r.replies),
            r.echoes,
            r.premature_done,
            r.repairs,
            stop,
        )
    };
    let mut total = TaskResult::new("total", StopReason::Done, true, 0);
    total.attempts = 0;
    let mut reasons = std::collections::BTreeMap::<&str, u32>::new();
    for r in results {
        let result = if r.solved() {
            "solved"
        } else if r.false_success() {
            "FALSE"
        } else if r.verified {
            "tree-ok"
        } else {
            "no"
        };
        let pick = r.chosen.map_or("-".to_owned(), |n| n.to_string());
        let p1 = if r.pass1 { "y" } else { "n" };
        s.push_str(&line(&r.name, result, r, &pick, p1, r.stop()));
        total.add_counts(r);
        total.attempts += r.attempts;
        total.wall += r.wall;
        *reasons.entry(r.stop()).or_default() += 1;
    }
    let n = results.len();
    let count = |f: fn(&TaskResult) -> bool| results.iter().filter(|r| f(r)).count();
    let (solved, false_successes) = (count(TaskResult::solved), count(TaskResult::false_success));
    let (pass1, within) = (count(|r| r.pass1), count(|r| r.within));
    let allowed = results.iter().map(|r| r.allowed).max().unwrap_or(1);
    s.push_str(line("total", "", &total, "", &pass1.to_string(), "").trim_end());
    s.push('\n');
    let reasons: Vec<String> = reasons.iter().map(|(k, v)| format!("{k} {v}")).collect();
    s.push_str(&format!("stop reasons: {}\n", reasons.join(", ")));
    s.push_str(&format!(
        "refused: premature_done {}, echo {}, DONE while the task's words or commands say it \
         is not done {}; DONEs rejected by the check {}; replies cut for repeating {}\n",
        total.premature_done,
        total.echoes,
        total.done_refused,
        total.check_rejected,
        total.repetitions
    ));
    // Each refusal kind's record against the hidden check: `kind refused/right`, where right
    // counts the refused trees `verify.sh` passes.
    if !total.witnessed.is_empty() {
        let kinds: Vec<String> = total
            .witnessed
            .iter()
            .map(|(k, w)| format!("{k} {}/{}", w.refused, w.right))
            .collect();
        s.push_str(&format!(
            "refused DONEs judged by verify.sh (kind refused/on a tree it passes): {}\n",
            kinds.join(", ")
        ));
        let wronged: Vec<String> = results
            .iter()
            .filter(|r| r.right_refused() > 0)
            .map(|r| {
                let kinds: Vec<String> = r
                    .wronged()
                    .map(|(k, w)| format!("{k} {}", w.right))
                    .collect();
                format!("{} ({})", r.name, kinds.join(", "))
            })
            .collect();
        s.push_str(&format!(
            "right answers refused: {} in {} task{}{}{}\n",
            total.right_refused(),
            wronged.len(),
            if wronged.len() == 1 { "" } else { "s" },
            if wronged.is_empty() { "" } else { ": " },
            wronged.join(", ")
        ));
    }
    s.push_str(&format!(
        "pass@1 {pass1}/{n}, solved within {allowed} attempt{} {within}/{n}, attempts run {}\n",
        if allowed == 1 { "" } else { "s" },
        total.attempts
    ));
    s.push_str(&format!(
        "solved {solved}/{n}, false successes {false_successes}\n"
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_tally_counts_tokens_conversions_and_repairs() {
        let reply = |turn, prompt_tokens, cached_tokens, generated_tokens| Event::Reply {
            turn,
            raw: String::new(),
            prompt_tokens,
            cached_tokens,
            generated_tokens,
        };
        let refused = |turn, why: &str| Event::Refused {
            turn,
            why: why.to_owned(),
        };
        let events = [
            reply(1, 100, 0, 10),
            Event::Proposal {
                turn: 1,
                action: serde_json::Value::Null,
                text: String::new(),
                repairs: vec!["indent".to_owned()],
            },
            refused(1, "premature_done"),
            refused(2, "echo"),
            refused(2, "still_failing"),
            refused(2, "check_file"),
            reply(2, 150, 120, 5),
        ];
        let mut r = TaskResult::new("", StopReason::Stall, false, 2);
        tally_journal(&events, &mut r);
        assert_eq!(
            (r.prompt_tokens, r.generated_tokens, r.evaluated_tokens),
            (250, 15, 130)
        );
        // The one proposal was refused as a premature DONE: no reply acted.
        assert_eq!((r.acted, r.replies, r.repairs), (0, 2, 1));
        assert_eq!((r.premature_done, r.echoes), (1, 1));
        // A DONE the task's commands held back counts; a refused change is no DONE.
        assert_eq!(r.done_refused, 1);
        assert!(!r.solved() && !r.false_success());
        // A proposal followed by anything but a refusal reached the executor, and one that
        // ends the journal did too.
        let proposal = |turn| Event::Proposal {
            turn,
            action: serde_json::Value::Null,
            text: String::new(),
            repairs: Vec::new(),
        };
        let mut more = events.to_vec();
        more.extend([
            reply(3, 10, 0, 1),
            proposal(3),
            refused(3, "echo"),
            proposal(3),
            Event::Preview {
                turn: 3,
                shown: String::new(),
            },
            reply(4, 10, 0, 1),
            proposal(4),
        ]);
        let mut r = TaskResult::new("", StopReason::Stall, false, 4);
        tally_journal(&more, &mut r);
        assert_eq!((r.acted, r.replies, r.echoes), (2, 4, 2));
    }

    #[test]
    fn witnessed_refusals_count_per_kind_and_an_agent_finished_tree_is_no_right_answer_refused() {
        let w = |why: &str, passes| Event::Witnessed {
            turn: 1,
            why: why.to_owned(),
            passes,
        };
        let events = [
            w("unchanged_output", false),
            w("unchanged_output", true),
            w("check", false),
            w("rename_finished", true),
        ];
        let mut r = TaskResult::new("t", StopReason::Done, true, 2);
        tally_journal(&events, &mut r);
        let get = |k: &str| r.witnessed.get(k).copied().unwrap_or_default();
        assert_eq!(
            get("unchanged_output"),
            Witnessed {
                refused: 2,
                right: 1
            }
        );
        assert_eq!(
            get("check"),
            Witnessed {
                refused: 1,
                right: 0
            }
        );
        assert_eq!(
            get("rename_finished"),
            Witnessed {
                refused: 1,
                right: 1
            }
        );
        // The agent's own finished rename passing is not a right answer held back.
        assert_eq!(r.right_refused(), 1);
        let report = report(std::slice::from_ref(&r));
        assert!(
            report.contains("right answers refused: 1 in 1 task: t (unchanged_output 1)\n"),
            "{report}"
        );
        assert!(report.contains("rename_finished 1/1"), "{report}");
    }
}
