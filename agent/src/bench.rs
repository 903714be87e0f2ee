//! `bellows agent bench`: a suite of small repository tasks, each run as a session on a fresh
//! copy of its starting files with approval `auto`, then checked by the task's own script.
//!
//! A task is a folder: `repo/` (the starting files), `task.md` (the task as a user would type
//! it), `verify.sh` (exit 0 iff the task is done; run with `sh` in the session's copy) and
//! `oracle.jsonl` (one JSON string per line: the scripted reply of each turn). The figures of
//! a session are read back from its journal, the same records undo reads.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::policy::{ApprovalMode, Policy, ScriptedApprover};
use crate::run::{AgentError, Config, StopReason};
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
    #[error("no tasks (folders with task.md) under {0}")]
    NoTasks(PathBuf),
    #[error("task {task}: {source}")]
    Session { task: String, source: AgentError },
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

/// One task of the suite.
#[derive(Debug, Clone)]
pub struct Task {
    pub name: String,
    pub dir: PathBuf,
    pub prompt: String,
    /// The oracle's reply for each turn, in order.
    pub oracle: Vec<String>,
}

impl Task {
    pub fn load(dir: &Path) -> Result<Task, BenchError> {
        let read = |name: &str| {
            let p = dir.join(name);
            std::fs::read_to_string(&p).map_err(io(&p))
        };
        let prompt = read("task.md")?.trim().to_owned();
        let path = dir.join("oracle.jsonl");
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
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(Task {
            name,
            dir: dir.to_owned(),
            prompt,
            oracle,
        })
    }
}

/// The oracle: a scripted engine that replays the task's `oracle.jsonl`, one reply per turn,
/// then writes prose without an action. It must solve every task; it tests the harness.
pub fn oracle_engine(task: &Task) -> models::ScriptedEngine {
    let engine = models::ScriptedEngine::new(
        "oracle",
        models::Script::chunked("The oracle has nothing more to say.\n", 8),
    );
    for reply in &task.oracle {
        engine.push(models::Script::chunked(reply, 8));
    }
    engine
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

/// What one task's session did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskResult {
    pub name: String,
    /// The copy the session ran in: removed afterwards unless [`BenchConfig::keep`].
    pub copy: PathBuf,
    pub reason: StopReason,
    /// `verify.sh` passed on the session's final tree.
    pub verified: bool,
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
    /// DONE refused because nothing had succeeded yet.
    pub premature_done: u32,
    /// Actions refused as echoes of the protocol's help text.
    pub echoes: u32,
    pub wall: Duration,
}

impl TaskResult {
    /// A result with no counts yet: the journal's tally fills them in.
    pub fn new(name: &str, reason: StopReason, verified: bool, turns: u32) -> TaskResult {
        TaskResult {
            name: name.to_owned(),
            copy: PathBuf::new(),
            reason,
            verified,
            turns,
            prompt_tokens: 0,
            generated_tokens: 0,
            evaluated_tokens: 0,
            acted: 0,
            replies: 0,
            repairs: 0,
            premature_done: 0,
            echoes: 0,
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
        matches!(self.reason, StopReason::Done | StopReason::Verified)
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
}

/// Runs `task` on `engine` in a fresh copy of its `repo/` and checks it with `verify.sh`.
pub async fn run_task(
    engine: &dyn models::Engine,
    task: &Task,
    bench: &BenchConfig,
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
    // The bench judges DONE itself, after the session, so `--verify` plays no part.
    cfg.verify = None;
    let started = Instant::now();
    let outcome = crate::run::run(
        engine,
        &ws,
        &cfg,
        &mut ScriptedApprover::default(),
        &mut Quiet,
    )
    .await
    .map_err(|source| BenchError::Session {
        task: task.name.clone(),
        source,
    })?;
    let wall = started.elapsed();
    let script = task
        .dir
        .join("verify.sh")
        .canonicalize()
        .map_err(io(&task.dir))?;
    let verified = ws
        .run(&["sh".to_owned(), script.display().to_string()])
        .is_ok_and(|out| out.code == Some(0));
    let journal = ws
        .state_dir()
        .join("sessions")
        .join(&outcome.session)
        .join("journal.jsonl");
    let events = crate::journal::read_events(&journal).map_err(|source| BenchError::Journal {
        task: task.name.clone(),
        source,
    })?;
    let mut r = TaskResult {
        copy: copy.clone(),
        wall,
        ..TaskResult::new(&task.name, outcome.reason, verified, outcome.turns)
    };
    tally_journal(&events, &mut r);
    Ok(r)
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
            Event::Proposal { turn, repairs, .. } => {
                pending = Some(*turn);
                r.repairs += repairs.len() as u32;
            }
            Event::Refused { why, .. } if why == "premature_done" => r.premature_done += 1,
            Event::Refused { why, .. } if why == "echo" => r.echoes += 1,
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
pub fn report(results: &[TaskResult]) -> String {
    let mut s = format!(
        "{:<24} {:<7} {:>5} {:>7} {:>6} {:>6} {:>7} {:>7} {:>5} {:>5} {:>7} {:<9}\n",
        "task",
        "result",
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
    let line = |name: &str, result: &str, r: &TaskResult, stop: &str| {
        format!(
            "{:<24} {:<7} {:>5} {:>7} {:>6} {:>6} {:>7.1} {:>7} {:>5} {:>5} {:>7} {:<9}\n",
            name,
            result,
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
        s.push_str(&line(&r.name, result, r, r.reason.as_str()));
        total.turns += r.turns;
        total.prompt_tokens += r.prompt_tokens;
        total.generated_tokens += r.generated_tokens;
        total.evaluated_tokens += r.evaluated_tokens;
        total.acted += r.acted;
        total.replies += r.replies;
        total.repairs += r.repairs;
        total.premature_done += r.premature_done;
        total.echoes += r.echoes;
        total.wall += r.wall;
        *reasons.entry(r.reason.as_str()).or_default() += 1;
    }
    let solved = results.iter().filter(|r| r.solved()).count();
    let false_successes = results.iter().filter(|r| r.false_success()).count();
    s.push_str(line("total", "", &total, "").trim_end());
    s.push('\n');
    let reasons: Vec<String> = reasons.iter().map(|(k, v)| format!("{k} {v}")).collect();
    s.push_str(&format!("stop reasons: {}\n", reasons.join(", ")));
    s.push_str(&format!(
        "refused: premature_done {}, echo {}\n",
        total.premature_done, total.echoes
    ));
    s.push_str(&format!(
        "solved {solved}/{}, false successes {false_successes}\n",
        results.len()
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
}
