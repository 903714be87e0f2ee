//! Set-up the agent's integration tests share: temporary repositories, scripted engines,
//! sessions run and resumed to their end, and what the journal and the engine saw.

#![allow(dead_code)] // Each test binary uses its own share of these.

use std::path::Path;

use agent::view::Quiet;
use agent::{Config, Event, Outcome, ScriptedApprover, Workspace};
use models::{Prompt, Script, ScriptedEngine};

/// A fresh repository under the system temp dir with the given files, removed when dropped.
pub fn repo(name: &str, files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix(&format!("bellows-test-{name}-"))
        .tempdir()
        .unwrap();
    for (path, text) in files {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    dir
}

/// An engine that replays `replies` in order, then says something with no action.
pub fn engine<S: AsRef<str>>(replies: &[S]) -> ScriptedEngine {
    let e = ScriptedEngine::new("scripted", Script::chunked("Let me think about it.\n", 5));
    for r in replies {
        e.push(Script::chunked(r.as_ref(), 3));
    }
    e
}

pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Runs a session in `dir` to its stop, approving nothing it is asked.
pub fn session(engine: &ScriptedEngine, dir: &Path, cfg: &Config) -> Outcome {
    let ws = Workspace::new(dir).unwrap();
    let mut approver = ScriptedApprover::default();
    rt().block_on(agent::run(engine, &ws, cfg, &mut approver, &mut Quiet))
        .unwrap()
}

/// Runs a session in `dir` to its stop, approving the first `yes` things it is asked and
/// nothing after.
pub fn session_approving(engine: &ScriptedEngine, dir: &Path, cfg: &Config, yes: usize) -> Outcome {
    let ws = Workspace::new(dir).unwrap();
    let mut approver = ScriptedApprover::new(std::iter::repeat_n(agent::Approval::Yes, yes));
    rt().block_on(agent::run(engine, &ws, cfg, &mut approver, &mut Quiet))
        .unwrap()
}

/// Resumes session `id` in `dir` to its stop.
pub fn resume(engine: &ScriptedEngine, dir: &Path, cfg: &Config, id: &str) -> Outcome {
    let ws = Workspace::new(dir).unwrap();
    let mut approver = ScriptedApprover::default();
    rt().block_on(agent::resume(
        engine,
        &ws,
        cfg,
        id,
        &mut approver,
        &mut Quiet,
    ))
    .unwrap()
}

/// Where session `session`'s journal is.
pub fn journal_path(dir: &Path, session: &str) -> std::path::PathBuf {
    dir.join(".bellows/sessions")
        .join(session)
        .join("journal.jsonl")
}

/// The session's events, through the one typed reader.
pub fn events(dir: &Path, session: &str) -> Vec<Event> {
    agent::journal::read_events(&journal_path(dir, session)).unwrap()
}

/// The text of every prompt the engine saw, its messages joined, one string per prompt.
pub fn prompts(engine: &ScriptedEngine) -> Vec<String> {
    engine
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|r| match &r.prompt {
            Prompt::Chat { messages, .. } => messages
                .iter()
                .map(|m| format!("<{}>{}", m.role, m.content))
                .collect::<String>(),
            Prompt::Text(t) => t.clone(),
        })
        .collect()
}

/// The reasons of the actions session `session` refused, in order.
pub fn refusals(dir: &Path, session: &str) -> Vec<String> {
    events(dir, session)
        .into_iter()
        .filter_map(|e| match e {
            Event::Refused { why, .. } => Some(why),
            _ => None,
        })
        .collect()
}

pub mod prereq;

/// `python3` runs here; where it does not, the test is skipped through [`prereq`] (a failure
/// under `BELLOWS_NO_SKIP=1`).
#[track_caller]
pub fn have_python() -> bool {
    prereq::python3()
}

/// The kernel confines commands (Landlock); where it cannot, RUN runs nothing and the test is
/// skipped through [`prereq`].
#[track_caller]
pub fn landlock() -> bool {
    prereq::landlock(!matches!(
        agent::sandbox::Confinement::default(),
        agent::sandbox::Confinement::Refused(_)
    ))
}

/// Commands can run here: `python3` is installed and the kernel confines commands (a probe
/// of the task's commands runs confined like RUN, and runs nothing where it cannot be).
#[track_caller]
pub fn python_runs_confined() -> bool {
    have_python() && landlock()
}

/// A session in the whole protocol, approval `auto`, 4 turns, 400 tokens kept for a reply.
pub fn whole_cfg(task: &str) -> Config {
    let mut c = Config::new(task, agent::Policy::new(agent::ApprovalMode::Auto));
    c.protocol = agent::Protocol::Whole;
    c.max_turns = 4;
    c.reply_reserve = 400;
    c
}

/// A whole-file block of a Python file: its path, then its content fenced.
pub fn python_block(path: &str, text: &str) -> String {
    format!("{path}\n```python\n{text}```\n")
}
