//! End-to-end sessions on the scripted engine, in temporary repositories: every stop reason,
//! the act pipeline's refusals and conflicts, confinement, budget compaction, the journal and
//! undo.

#![allow(clippy::unwrap_used)] // Tests fail loudly on the first surprise.

use std::path::{Path, PathBuf};
use std::time::Duration;

use agent::policy::Verdict;
use agent::view::Quiet;
use agent::{
    Approval, ApprovalMode, Approver, Config, Outcome, Policy, ScriptedApprover, StopReason,
    Workspace,
};
use codec::Action;
use models::{Prompt, Script, ScriptedEngine};

/// A temporary repository, removed when the test drops it (pass or fail).
#[derive(Debug)]
struct Repo(tempfile::TempDir);

impl std::ops::Deref for Repo {
    type Target = Path;
    fn deref(&self) -> &Path {
        self.0.path()
    }
}

impl AsRef<Path> for Repo {
    fn as_ref(&self) -> &Path {
        self.0.path()
    }
}

/// A fresh repository under the system temp dir with the given files.
fn repo(name: &str, files: &[(&str, &str)]) -> Repo {
    let dir = tempfile::Builder::new()
        .prefix(&format!("bellows-agent-{name}-"))
        .tempdir()
        .unwrap();
    for (path, text) in files {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    Repo(dir)
}

/// An engine that replays `replies` in order, then says something with no action.
fn engine(replies: &[&str]) -> ScriptedEngine {
    let e = ScriptedEngine::new("scripted", Script::chunked("Let me think about it.\n", 5));
    for r in replies {
        e.push(Script::chunked(r, 3));
    }
    e
}

fn cfg(mode: ApprovalMode) -> Config {
    let mut c = Config::new("fix the bug", Policy::new(mode));
    c.max_turns = 8;
    c.reply_reserve = 200;
    c
}

fn session(
    engine: &ScriptedEngine,
    dir: &Path,
    cfg: &Config,
    approver: &mut dyn Approver,
) -> Outcome {
    let ws = Workspace::new(dir).unwrap();
    session_in(engine, &ws, cfg, approver)
}

fn session_in(
    engine: &ScriptedEngine,
    ws: &Workspace,
    cfg: &Config,
    approver: &mut dyn Approver,
) -> Outcome {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(agent::run(engine, ws, cfg, approver, &mut Quiet))
        .unwrap()
}

/// The session's journal events, parsed.
fn journal(dir: &Path, outcome: &Outcome) -> Vec<serde_json::Value> {
    let path = dir
        .join(".bellows/sessions")
        .join(&outcome.session)
        .join("journal.jsonl");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn events<'j>(j: &'j [serde_json::Value], kind: &str) -> Vec<&'j serde_json::Value> {
    j.iter().filter(|e| e["event"] == kind).collect()
}

/// The user messages of every prompt the engine saw, joined.
fn prompts(engine: &ScriptedEngine) -> Vec<String> {
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

const EDIT_A: &str =
    "I will fix it.\nEDIT a.txt\n<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n";

/// A change that is no fix: a DONE after it is not refused for want of a change.
const NOTE: &str = "CREATE notes.txt\n<<<<<<< SEARCH\n=======\nlooked\n>>>>>>> REPLACE\n";

/// The session ended because nothing had changed: its one DONE was refused (`no_change`)
/// and it stalled after.
fn refused_unchanged(out: &Outcome) {
    assert_eq!(
        (out.reason, out.no_change),
        (StopReason::Stall, 1),
        "{out:?}"
    );
}

#[test]
fn done_stops_after_an_edit_is_committed_atomically() {
    let dir = repo("done", &[("a.txt", "keep\nold\n")]);
    let e = engine(&[EDIT_A, "DONE fixed it\n"]);
    let out = session(
        &e,
        &dir,
        &cfg(ApprovalMode::Auto),
        &mut ScriptedApprover::default(),
    );
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(out.turns, 2);
    assert_eq!(
        std::fs::read_to_string(dir.join("a.txt")).unwrap(),
        "keep\nnew\n"
    );
    let j = journal(&dir, &out);
    let commit = events(&j, "commit");
    assert_eq!(commit.len(), 1);
    assert_eq!(commit[0]["path"], "a.txt");
    assert_ne!(commit[0]["pre_sha256"], commit[0]["post_sha256"]);
    assert_eq!(events(&j, "stop")[0]["reason"], "done");
    // The second prompt carries the first turn's observation (the diff), as untrusted output.
    let p = prompts(&e);
    assert!(p[1].contains("changed a.txt") && p[1].contains("<output>\n--- a/a.txt"));
    // No temporary file is left behind.
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}"); // a.txt and .bellows
}

#[test]
fn failing_verify_is_fed_back_as_a_false_success_then_verified() {
    let dir = repo("verify", &[("a.txt", "old\n")]);
    let e = engine(&[NOTE, "DONE already fine\n", EDIT_A, "DONE now\n"]);
    let mut c = cfg(ApprovalMode::Auto);
    c.verify = Some(vec![
        "grep".into(),
        "-q".into(),
        "new".into(),
        "a.txt".into(),
    ]);
    let out = session(&e, &dir, &c, &mut ScriptedApprover::default());
    assert_eq!(out.reason, StopReason::Verified);
    assert_eq!(out.false_successes, 1);
    assert_eq!(out.turns, 4);
    assert!(prompts(&e)[2].contains("DONE (already fine) rejected"));
}

#[test]
fn done_before_any_action_succeeded_is_refused_as_premature_in_plan_mode() {
    // In modes that allow changes the `no_change` rule supersedes this one (tests/harness.rs).
    let dir = repo("premature", &[("a.txt", "old\n")]);
    // A DONE on turn 1, a DONE after a failed read: both refused; a DONE after a read that
    // succeeded ends the session.
    let e = engine(&[
        "DONE all good\n",
        "READ missing.txt\n",
        "DONE still\n",
        "READ a.txt\n",
        "DONE read it\n",
    ]);
    let mut c = cfg(ApprovalMode::Plan);
    c.stall_turns = 5;
    let out = session(&e, &dir, &c, &mut ScriptedApprover::default());
    assert_eq!((out.reason, out.turns), (StopReason::Done, 5));
    assert_eq!(out.premature_done, 2);
    let p = prompts(&e);
    assert!(
        p[1].contains("DONE refused: nothing has been done yet"),
        "{}",
        p[1]
    );
    assert!(p[3].contains("DONE refused: nothing has been done yet"));
    let j = journal(&dir, &out);
    let refused: Vec<_> = events(&j, "refused")
        .iter()
        .map(|r| (r["turn"].clone(), r["why"].clone()))
        .collect();
    assert_eq!(
        refused,
        [
            (serde_json::json!(1), serde_json::json!("premature_done")),
            (serde_json::json!(3), serde_json::json!("premature_done")),
        ]
    );
    assert_eq!(events(&j, "stop")[0]["premature_done"], 2);

    // A model that only ever says DONE is not done: it stalls, with every DONE counted.
    let e = engine(&["DONE\n", "DONE\n", "DONE\n"]);
    let mut c = cfg(ApprovalMode::Plan);
    c.stall_turns = 3;
    let out = session(&e, &dir, &c, &mut ScriptedApprover::default());
    assert_eq!(
        (out.reason, out.turns, out.premature_done),
        (StopReason::Stall, 3, 3)
    );
}

#[test]
fn max_turns_stops_the_session() {
    let dir = repo("maxturns", &[("a.txt", "old\n")]);
    let e = engine(&["LIST\n", "READ a.txt\n", "GLOB *.txt\n"]);
    let mut c = cfg(ApprovalMode::Auto);
    c.max_turns = 2;
    let out = session(&e, &dir, &c, &mut ScriptedApprover::default());
    assert_eq!(out.reason, StopReason::MaxTurns);
    assert_eq!(out.turns, 2);
    assert_eq!(e.seen.lock().unwrap().len(), 2);
}

#[test]
fn turns_without_a_valid_action_stall() {
    let dir = repo("stall", &[("a.txt", "old\n")]);
    let e = engine(&["LIST\n"]);
    let mut c = cfg(ApprovalMode::Auto);
    c.stall_turns = 2;
    let out = session(&e, &dir, &c, &mut ScriptedApprover::default());
    assert_eq!(out.reason, StopReason::Stall);
    assert_eq!(out.turns, 3, "one valid turn, then two without an action");
    assert!(prompts(&e)[2].contains("no command found"));
}

#[test]
fn the_same_action_and_result_repeated_is_a_loop() {
    let dir = repo("loop", &[("a.txt", "old\n")]);
    let e = engine(&["READ a.txt\n", "READ a.txt\n", "READ a.txt\n", "DONE\n"]);
    let out = session(
        &e,
        &dir,
        &cfg(ApprovalMode::Auto),
        &mut ScriptedApprover::default(),
    );
    assert_eq!(out.reason, StopReason::Loop);
    assert_eq!(out.turns, 3);
}

#[test]
fn token_budget_and_an_unfittable_prompt_stop_on_budget() {
    let dir = repo("budget", &[("a.txt", "old\n")]);
    let e = engine(&["LIST\n", "LIST a\n"]);
    let mut c = cfg(ApprovalMode::Auto);
    c.token_budget = Some(1);
    let out = session(&e, &dir, &c, &mut ScriptedApprover::default());
    assert_eq!(out.reason, StopReason::Budget);
    assert_eq!(out.turns, 1);
    assert!(out.tokens >= 1);

    // A context too small for the system prompt and task alone: no generation at all.
    let e = engine(&["LIST\n"]).with_ctx(260);
    let out = session(
        &e,
        &dir,
        &cfg(ApprovalMode::Auto),
        &mut ScriptedApprover::default(),
    );
    assert_eq!(out.reason, StopReason::Budget);
    assert!(e.seen.lock().unwrap().is_empty());
}

#[test]
fn user_quit_stops_without_writing() {
    let dir = repo("quit", &[("a.txt", "old\n")]);
    let e = engine(&[EDIT_A]);
    let mut approver = ScriptedApprover::new([Approval::Quit]);
    let out = session(&e, &dir, &cfg(ApprovalMode::Ask), &mut approver);
    assert_eq!(out.reason, StopReason::Quit);
    assert_eq!(std::fs::read_to_string(dir.join("a.txt")).unwrap(), "old\n");
    assert_eq!(approver.asked.len(), 1);
    assert!(
        approver.asked[0].1.contains("-old\n+new\n"),
        "the preview is a diff"
    );
}

/// Presses Ctrl-C as soon as the reply's first prose shows.
#[derive(Debug)]
struct CtrlC(agent::Interrupt);

impl agent::View for CtrlC {
    fn show(&mut self, event: &agent::Event) {
        if matches!(event, agent::Event::Prose { .. }) {
            self.0.fire();
        }
    }
}

#[test]
fn ctrl_c_halts_generation_and_stops_as_user_quit_with_a_summary() {
    let dir = repo("ctrlc", &[("a.txt", "old\n")]);
    let reply = "I will look around first.\n".repeat(40) + "DELETE a.txt\n";
    let e = engine(&[reply.as_str(), "DONE\n"]);
    let c = cfg(ApprovalMode::Auto);
    let mut view = CtrlC(c.interrupt.clone());
    let ws = Workspace::new(&dir).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let out = rt
        .block_on(agent::run(
            &e,
            &ws,
            &c,
            &mut ScriptedApprover::default(),
            &mut view,
        ))
        .unwrap();
    assert_eq!((out.reason, out.turns), (StopReason::Quit, 1));
    assert!(dir.join("a.txt").exists(), "nothing acted on after Ctrl-C");
    let j = journal(&dir, &out);
    // Generation was halted: far fewer pieces than the script holds (3 bytes each).
    let reply_ev = events(&j, "reply")[0];
    let generated = reply_ev["generated_tokens"].as_u64().unwrap();
    assert!(generated < reply.len() as u64 / 3 / 4, "{generated} tokens");
    assert!(events(&j, "proposal").is_empty());
    let stop = events(&j, "stop");
    assert_eq!(stop.len(), 1);
    assert_eq!(stop[0]["reason"], "user_quit");
    assert_eq!(e.seen.lock().unwrap().len(), 1);
    // The second Ctrl-C is told apart (the command line exits at once on it).
    assert!(c.interrupt.fire());
}

#[test]
fn a_declined_action_becomes_an_observation_not_an_exit() {
    let dir = repo("declined", &[("a.txt", "old\n")]);
    let e = engine(&[EDIT_A, "LIST\n", "DONE\n"]);
    let mut approver = ScriptedApprover::new([Approval::No]);
    let out = session(&e, &dir, &cfg(ApprovalMode::Ask), &mut approver);
    // The declined edit changed nothing, so the DONE is refused.
    refused_unchanged(&out);
    assert_eq!(std::fs::read_to_string(dir.join("a.txt")).unwrap(), "old\n");
    assert!(prompts(&e)[1].contains("the user declined"));
}

/// Changes the file between preview and commit, as another editor would.
#[derive(Debug)]
struct Meddler(PathBuf);

impl Approver for Meddler {
    fn approve(&mut self, _: &Action, _: &str) -> Approval {
        std::fs::write(&self.0, "old\nmeddled\n").unwrap();
        Approval::Yes
    }
}

#[test]
fn revalidation_refuses_a_file_changed_since_the_preview() {
    let dir = repo("conflict", &[("a.txt", "old\n")]);
    let e = engine(&[EDIT_A, "LIST\n", "DONE\n"]);
    let mut meddler = Meddler(dir.join("a.txt"));
    let out = session(&e, &dir, &cfg(ApprovalMode::Ask), &mut meddler);
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(
        std::fs::read_to_string(dir.join("a.txt")).unwrap(),
        "old\nmeddled\n"
    );
    assert!(prompts(&e)[1].contains("changed since the preview; nothing was written"));
    // The commit was journaled before its write, then marked failed before any step (it
    // touched nothing), so undo finds nothing of it to restore.
    let j = journal(&dir, &out);
    assert_eq!(events(&j, "commit").len(), 1);
    assert_eq!(events(&j, "commit_failed").len(), 1);
    let ws = Workspace::new(&dir).unwrap();
    assert!(agent::undo(&ws, None, 1, false).unwrap().is_empty());
}

#[test]
fn each_confinement_escape_is_refused() {
    let outside = repo("outside", &[("secret.txt", "s\n")]);
    let dir = repo(
        "confine",
        &[("a.txt", "old\n"), (".git/config", "[core]\n")],
    );
    std::os::unix::fs::symlink(&outside, dir.join("link")).unwrap();
    let ws = Workspace::new(&dir).unwrap();
    for bad in [
        "../x",
        "/etc/passwd",
        ".git/config",
        ".bellows/x",
        "link/secret.txt",
        "a/../../x",
        "",
    ] {
        let err = ws.resolve(bad).unwrap_err();
        assert!(err.is_escape(), "{bad}: {err}");
    }
    assert!(ws.resolve("new/dir/file.txt").is_ok());
    // End to end, in auto mode: nothing leaves the repository.
    let e = engine(&[
        "CREATE ../escape.txt\n<<<<<<< SEARCH\n=======\nx\n>>>>>>> REPLACE\n",
        "READ link/secret.txt\n",
        "DELETE .git/config\n",
        "LIST\n",
        "DONE\n",
    ]);
    let out = session(
        &e,
        &dir,
        &cfg(ApprovalMode::Auto),
        &mut ScriptedApprover::default(),
    );
    refused_unchanged(&out);
    assert!(!dir.parent().unwrap().join("escape.txt").exists());
    assert!(dir.join(".git/config").exists());
    let p = prompts(&e);
    assert!(p[1].contains("leaves the repository"));
    assert!(p[2].contains("outside the repository through a symbolic link"));
    assert!(p[3].contains("inside .git/"));
}

#[test]
fn run_has_a_timeout_an_output_cap_and_a_scrubbed_environment() {
    let dir = repo("run", &[]);
    let mut ws = Workspace::new(&dir).unwrap();
    ws.run_timeout = Duration::from_millis(300);
    ws.output_cap = 100;
    let out = ws.run(&["sleep".into(), "5".into()]).unwrap();
    assert!(out.timed_out);
    assert_eq!(out.code, None);
    // A background process holding the output pipe is ended with the command's group.
    let sh = |script: &str| vec!["sh".to_owned(), "-c".to_owned(), script.to_owned()];
    let out = ws.run(&sh("sleep 30 & echo started")).unwrap();
    assert_eq!((out.code, out.output.as_str()), (Some(0), "started\n"));
    let out = ws.run(&sh("sleep 30 & sleep 30")).unwrap();
    assert!(out.timed_out);
    let out = ws.run(&["seq".into(), "1".into(), "1000".into()]).unwrap();
    assert!(out.truncated && out.output.len() <= 100);
    let out = ws.run(&["env".into()]).unwrap();
    let mut keys: Vec<&str> = out
        .output
        .lines()
        .filter_map(|l| l.split('=').next())
        .collect();
    keys.sort();
    assert!(
        keys.iter().all(|k| [
            "HOME",
            "LANG",
            "PATH",
            "PYTHONDONTWRITEBYTECODE",
            "TMPDIR",
            "TMP",
            "TEMP"
        ]
        .contains(k)),
        "{keys:?}"
    );
    // Ctrl-C ends a running command at once, as if by a signal.
    let out = ws
        .run_until(&["sleep".into(), "5".into()], &|| true)
        .unwrap();
    assert_eq!((out.code, out.timed_out), (None, false));
    // And a timeout seen by the loop is an observation.
    let e = engine(&["RUN sleep 5\n", "LIST\n", "DONE\n"]);
    let out = session_in(
        &e,
        &ws,
        &cfg(ApprovalMode::Auto),
        &mut ScriptedApprover::default(),
    );
    refused_unchanged(&out);
    assert!(prompts(&e)[1].contains("timed out after"));
}

#[test]
fn help_text_echoes_are_refused_and_counted() {
    let dir = repo("echo", &[("path", "not to be read\n")]);
    // A change first, so that a DONE taken from the help text would be accepted.
    let e = engine(&[
        NOTE,
        "READ path\n",
        "RUN program args\n",
        "DONE summary\n",
        "<tool_call>{\"name\": \"read\", \"arguments\": {\"path\": \"path\"}}</tool_call>\n",
        "LIST\n",
        "DONE\n",
    ]);
    let mut c = cfg(ApprovalMode::Auto);
    c.stall_turns = 5;
    let out = session(&e, &dir, &c, &mut ScriptedApprover::default());
    assert_eq!(out.echoes, 4);
    assert_eq!(
        out.reason,
        StopReason::Done,
        "DONE summary was not taken as DONE"
    );
    // The journal counts each echo as the session does.
    let j = journal(&dir, &out);
    let refused = events(&j, "refused");
    assert_eq!(refused.iter().filter(|r| r["why"] == "echo").count(), 4);

    assert_eq!(out.turns, 7);
    let p = prompts(&e);
    assert!(p[2].contains("example from the instructions"));
    assert!(
        p[5].contains("example from the instructions"),
        "the native echo too"
    );
    assert!(!p.concat().contains("not to be read"));

    // The system prompt's example block, written back, is an echo too (SmolLM2-135M does it).
    let e = engine(&[
        "CREATE new.py\n<<<<<<< SEARCH\n=======\nthe new lines\n>>>>>>> REPLACE\n",
        "EDIT path.py\n<<<<<<< SEARCH\nexact lines copied from the file\n=======\nx\n>>>>>>> REPLACE\n",
        "LIST\n",
        "DONE\n",
    ]);
    let out = session(
        &e,
        &dir,
        &cfg(ApprovalMode::Auto),
        &mut ScriptedApprover::default(),
    );
    assert_eq!(out.echoes, 2);
    refused_unchanged(&out);
    assert!(!dir.join("new.py").exists());

    // Echoes count towards a stall: they are not valid actions.
    let e = engine(&["READ path\n", "LIST dir\n"]);
    let mut c = cfg(ApprovalMode::Auto);
    c.stall_turns = 2;
    let out = session(&e, &dir, &c, &mut ScriptedApprover::default());
    assert_eq!((out.reason, out.echoes), (StopReason::Stall, 2));

    // The help text written back, two lines in one reply: two echoes, in the journal too.
    let help: String = codec::registry::BUILTINS
        .iter()
        .filter(|t| t.name == "read" || t.name == "grep")
        .map(|t| format!("{}  {}\n", t.syntax, t.hint))
        .collect();
    let e = engine(&[help.as_str(), "LIST\n", "DONE\n"]);
    let out = session(
        &e,
        &dir,
        &cfg(ApprovalMode::Auto),
        &mut ScriptedApprover::default(),
    );
    assert_eq!(out.echoes, 2, "{help}");
    refused_unchanged(&out);
    let j = journal(&dir, &out);
    let refused = events(&j, "refused");
    assert_eq!(refused.iter().filter(|r| r["why"] == "echo").count(), 2);
}

#[test]
fn plan_mode_refuses_an_edit_and_offers_only_reads() {
    let dir = repo("plan", &[("a.txt", "old\n")]);
    let e = engine(&[EDIT_A, "READ a.txt\n", "DONE looked\n"]);
    let mut c = cfg(ApprovalMode::Plan);
    c.grammar = agent::GrammarChoice::Strict;
    let out = session(&e, &dir, &c, &mut ScriptedApprover::default());
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(std::fs::read_to_string(dir.join("a.txt")).unwrap(), "old\n");
    let p = prompts(&e);
    assert!(p[1].contains("edit is not allowed in plan mode"));
    assert!(!p[0].contains("EDIT path") && p[0].contains("READ path"));
    let seen = e.seen.lock().unwrap();
    let Some(models::GrammarSpec::Strict { gbnf, .. }) = &seen[0].grammar else {
        panic!("strict grammar expected");
    };
    let action = gbnf.lines().find(|l| l.starts_with("action ::=")).unwrap();
    assert!(
        action.contains("read-action") && !action.contains("edit-action"),
        "{action}"
    );
    let policy = Policy::new(ApprovalMode::Plan);
    let run = Action::Run {
        argv: vec!["ls".into()],
    };
    assert_eq!(policy.verdict(&run), Verdict::Refuse);
}

#[test]
fn edits_mode_asks_for_runs_unless_allowed() {
    let mut p = Policy::new(ApprovalMode::Edits);
    p.allow_run = vec!["cargo test *".parse().unwrap()];
    let run = |argv: &[&str]| Action::Run {
        argv: argv.iter().map(|s| s.to_string()).collect(),
    };
    assert_eq!(
        p.verdict(&run(&["cargo", "test", "-p", "x"])),
        Verdict::Allow
    );
    assert_eq!(p.verdict(&run(&["rm", "-rf", "x"])), Verdict::Ask);
    let edit = Action::Delete { path: "x".into() };
    assert_eq!(p.verdict(&edit), Verdict::Allow);
    assert_eq!(Policy::new(ApprovalMode::Ask).verdict(&edit), Verdict::Ask);
}

#[test]
fn the_action_limit_halts_generation() {
    let dir = repo("halt", &[("a.txt", "old\n"), ("b.txt", "b\n")]);
    let reply = "READ a.txt\nREAD b.txt\nLIST\nGLOB *\n";
    let e = engine(&[reply, "DONE\n"]);
    let out = session(
        &e,
        &dir,
        &cfg(ApprovalMode::Auto),
        &mut ScriptedApprover::default(),
    );
    let j = journal(&dir, &out);
    let first_turn: Vec<_> = events(&j, "proposal")
        .into_iter()
        .filter(|p| p["turn"] == 1)
        .collect();
    assert_eq!(first_turn.len(), 1);
    let reply_ev = events(&j, "reply")[0];
    assert!(reply_ev["raw"].as_str().unwrap().len() < reply.len());
    assert!(reply_ev["generated_tokens"].as_u64().unwrap() < (reply.len() as u64).div_ceil(3));
}

#[test]
fn small_context_compacts_old_turns_into_digests_and_keeps_system_and_task() {
    let long: String = (0..400).map(|i| format!("word{i} ")).collect::<String>() + "\n";
    let dir = repo("compact", &[("big.txt", long.as_str()), ("a.txt", "old\n")]);
    let replies: Vec<String> = (0..6)
        .map(|i| format!("READ big.txt:1-{}\n", i + 1))
        .collect();
    let replies: Vec<&str> = replies.iter().map(String::as_str).collect();
    let e = engine(&replies).with_ctx(900);
    let mut c = cfg(ApprovalMode::Auto);
    c.max_turns = 6;
    c.reply_reserve = 100;
    let out = session(&e, &dir, &c, &mut ScriptedApprover::default());
    // The scripted engine refuses a prompt over its context, so six turns prove every prompt fit.
    assert_eq!(out.reason, StopReason::MaxTurns);
    let p = prompts(&e);
    assert_eq!(p.len(), 6);
    let last = &p[5];
    assert!(
        last.contains("Earlier turns, in brief:\nturn 1: READ big.txt:1-1 → ok"),
        "{last}"
    );
    assert!(last.contains("Task: fix the bug") && last.contains("You are a coding agent"));
    // The long observation was cut to head and tail, and saved whole as an artifact.
    assert!(p[1].contains("characters omitted; whole output in .bellows/artifacts/"));
    let artifacts = std::fs::read_dir(dir.join(".bellows/artifacts"))
        .unwrap()
        .count();
    assert!(artifacts >= 1);
    let j = journal(&dir, &out);
    let compacted = events(&j, "prompt")
        .iter()
        .any(|e| e["digested"].as_u64().unwrap() > 0);
    assert!(compacted);
}

#[test]
fn compaction_comes_in_batches_so_most_prompts_extend_the_previous_one() {
    // Twenty reads of 60 words each under a 900-token context: compaction is needed several
    // times over.
    let files: Vec<(String, String)> = (0..20)
        .map(|i| {
            let text: String = (0..60).map(|w| format!("f{i}w{w} ")).collect();
            (format!("f{i}.txt"), text + "\n")
        })
        .collect();
    let files: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let dir = repo("prefix", &files);
    let replies: Vec<String> = (0..20).map(|i| format!("READ f{i}.txt\n")).collect();
    let replies: Vec<&str> = replies.iter().map(String::as_str).collect();
    let e = engine(&replies).with_ctx(900);
    let mut c = cfg(ApprovalMode::Auto);
    c.max_turns = 20;
    c.reply_reserve = 100;
    let out = session(&e, &dir, &c, &mut ScriptedApprover::default());
    assert_eq!((out.reason, out.turns), (StopReason::MaxTurns, 20));
    // Each prompt as the engine renders it, less the generation prompt.
    let rendered: Vec<String> = e
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|r| match &r.prompt {
            Prompt::Chat { messages, tools } => {
                let text = models::Engine::render_chat(&e, messages, tools).unwrap();
                text.strip_suffix("<|im_start|>assistant\n")
                    .unwrap()
                    .to_owned()
            }
            Prompt::Text(t) => t.clone(),
        })
        .collect();
    let kept = rendered
        .windows(2)
        .filter(|w| w[1].starts_with(&w[0]))
        .count();
    let j = journal(&dir, &out);
    let compactions = events(&j, "prompt")
        .windows(2)
        .filter(|w| w[0]["digested"] != w[1]["digested"] || w[0]["dropped"] != w[1]["dropped"])
        .count();
    eprintln!("{compactions} compactions, {kept} of 19 prompts extend the previous one");
    assert!(compactions >= 3, "{compactions} compactions");
    // Only a compaction changes the prefix, and compactions are batched: most turns append.
    // (Compacting one turn at a time, every turn from the first overflow on changed it.)
    assert_eq!(kept, 19 - compactions);
    assert!(kept >= 13, "{kept} of 19 prompts extend the previous one");
    // Every prompt fit, and the evaluated tokens per turn are reported.
    for p in events(&j, "prompt") {
        assert!(p["prompt_tokens"].as_u64().unwrap() <= 800);
    }
    assert_eq!(events(&j, "reply").len(), 20);
    assert!(
        events(&j, "reply")
            .iter()
            .all(|r| r["cached_tokens"].is_u64())
    );
}

#[test]
fn undo_restores_pre_images_and_refuses_files_changed_since() {
    let dir = repo("undo", &[("a.txt", "old\n"), ("gone.txt", "bye\n")]);
    let e = engine(&[
        EDIT_A,
        "CREATE n.txt\n<<<<<<< SEARCH\n=======\nfresh\n>>>>>>> REPLACE\n",
        "DELETE gone.txt\n",
        "DONE\n",
    ]);
    let mut c = cfg(ApprovalMode::Auto);
    c.task = "fix the bug and delete gone.txt".to_owned();
    let out = session(&e, &dir, &c, &mut ScriptedApprover::default());
    assert_eq!(out.reason, StopReason::Done);
    assert!(dir.join("n.txt").exists() && !dir.join("gone.txt").exists());
    let ws = Workspace::new(&dir).unwrap();
    // Two steps: the delete, then the create.
    let restored = agent::undo(&ws, None, 2, false).unwrap();
    assert_eq!(restored, vec!["gone.txt", "n.txt"]);
    assert_eq!(
        std::fs::read_to_string(dir.join("gone.txt")).unwrap(),
        "bye\n"
    );
    assert!(!dir.join("n.txt").exists());
    // The edit is next; a change made since refuses it unless forced.
    std::fs::write(dir.join("a.txt"), "new\nmine\n").unwrap();
    let err = agent::undo(&ws, Some(&out.session), 1, false).unwrap_err();
    assert!(err.to_string().contains("changed since commit 1"), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.join("a.txt")).unwrap(),
        "new\nmine\n"
    );
    agent::undo(&ws, Some(&out.session), 1, true).unwrap();
    assert_eq!(std::fs::read_to_string(dir.join("a.txt")).unwrap(), "old\n");
    // Nothing is left to undo.
    assert!(agent::undo(&ws, None, 1, false).unwrap().is_empty());
}

#[test]
fn secrets_in_output_are_redacted_before_the_model_sees_them() {
    let dir = repo(
        "redact",
        &[(
            ".env",
            "OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwxyz\nDEBUG=1\n",
        )],
    );
    let e = engine(&["READ .env\n", "DONE\n"]);
    let out = session(
        &e,
        &dir,
        &cfg(ApprovalMode::Plan),
        &mut ScriptedApprover::default(),
    );
    assert_eq!(out.reason, StopReason::Done);
    let p = prompts(&e);
    assert!(p[1].contains("OPENAI_API_KEY=[REDACTED]") && p[1].contains("DEBUG=1"));
    assert!(!p[1].contains("abcdefghij"));
}

#[test]
fn move_mkdir_and_a_whitespace_repair_are_committed_journaled_and_undone() {
    use std::os::unix::fs::PermissionsExt;
    let dir = repo("move", &[("run.sh", "echo  hi\n"), ("m.txt", "m\n")]);
    std::fs::set_permissions(dir.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let e = engine(&[
        "EDIT run.sh\n<<<<<<< SEARCH\necho hi\n=======\necho bye\n>>>>>>> REPLACE\n",
        "MKDIR out/deep\n",
        "MOVE m.txt -> out/deep/m.txt\n",
        "DONE\n",
    ]);
    let out = session(
        &e,
        &dir,
        &cfg(ApprovalMode::Auto),
        &mut ScriptedApprover::default(),
    );
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(
        std::fs::read_to_string(dir.join("run.sh")).unwrap(),
        "echo bye\n"
    );
    let mode = std::fs::metadata(dir.join("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(
        mode & 0o777,
        0o755,
        "mode bits are kept across the atomic write"
    );
    assert!(dir.join("out/deep/m.txt").exists() && !dir.join("m.txt").exists());
    let j = journal(&dir, &out);
    let commits = events(&j, "commit");
    assert_eq!(
        commits[0]["repairs"],
        serde_json::json!(["search_whitespace"])
    );
    assert!(prompts(&e)[1].contains("SEARCH matched after repair: search_whitespace"));
    // The move is one commit of two files; one undo step restores both.
    let ws = Workspace::new(&dir).unwrap();
    let restored = agent::undo(&ws, None, 1, false).unwrap();
    assert_eq!(restored.len(), 2);
    assert!(dir.join("m.txt").exists() && !dir.join("out/deep/m.txt").exists());
}

#[test]
fn undo_removes_the_directories_a_session_made_only_when_empty() {
    let dir = repo("undo-mkdir", &[("a.txt", "a\n")]);
    let e = engine(&[
        "MKDIR build/logs\n",
        "CREATE src/new/b.txt\n<<<<<<< SEARCH\n=======\nb\n>>>>>>> REPLACE\n",
        "MKDIR build\n",
        "DONE\n",
    ]);
    let out = session(
        &e,
        &dir,
        &cfg(ApprovalMode::Auto),
        &mut ScriptedApprover::default(),
    );
    assert_eq!(out.reason, StopReason::Done);
    assert!(dir.join("build/logs").is_dir() && dir.join("src/new/b.txt").is_file());
    let j = journal(&dir, &out);
    let made: Vec<_> = events(&j, "commit_dir")
        .iter()
        .map(|d| {
            (
                d["id"].as_u64().unwrap(),
                d["path"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    // An existing directory (the second MKDIR build) is not recorded as made.
    assert_eq!(
        made,
        [
            (1, "build".to_owned()),
            (1, "build/logs".to_owned()),
            (2, "src".to_owned()),
            (2, "src/new".to_owned()),
        ]
    );
    let ws = Workspace::new(&dir).unwrap();
    // The newest MKDIR made nothing, so it is no undo step; the create is undone with the
    // directories it made.
    let restored = agent::undo(&ws, None, 1, false).unwrap();
    assert_eq!(restored, ["src/new/b.txt", "src/new/", "src/"]);
    assert!(!dir.join("src").exists());
    // A file the session did not put there refuses the MKDIR's undo and stays.
    std::fs::write(dir.join("build/logs/mine.txt"), "mine\n").unwrap();
    let err = agent::undo(&ws, None, 1, false).unwrap_err();
    assert!(
        err.to_string().contains("build/logs/mine.txt") && err.to_string().contains("--force"),
        "{err}"
    );
    assert!(dir.join("build/logs/mine.txt").is_file());
    // --force leaves the directory (and its parent) with the file, and the undo moves on.
    let restored = agent::undo(&ws, None, 1, true).unwrap();
    assert_eq!(
        restored,
        ["build/logs/ (kept: not empty)", "build/ (kept: not empty)"]
    );
    assert!(dir.join("build/logs/mine.txt").is_file());
    assert!(agent::undo(&ws, None, 1, false).unwrap().is_empty());
    // Emptied by hand, a fresh MKDIR's undo removes it.
    let e = engine(&["MKDIR empty/one\n", "LIST\n", "DONE\n"]);
    session(
        &e,
        &dir,
        &cfg(ApprovalMode::Auto),
        &mut ScriptedApprover::default(),
    );
    assert!(dir.join("empty/one").is_dir());
    let restored = agent::undo(&ws, None, 1, false).unwrap();
    assert_eq!(restored, ["empty/one/", "empty/"]);
    assert!(!dir.join("empty").exists());
}

#[test]
fn a_moved_or_deleted_file_keeps_its_mode_bits_and_undo_restores_them() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let dir = repo(
        "move-mode",
        &[("run.sh", "echo hi\n"), ("x.sh", "echo x\n")],
    );
    for f in ["run.sh", "x.sh"] {
        std::fs::set_permissions(dir.join(f), std::fs::Permissions::from_mode(0o750)).unwrap();
    }
    let e = engine(&["MOVE run.sh -> bin/run.sh\n", "DELETE x.sh\n", "DONE\n"]);
    let out = session(
        &e,
        &dir,
        &cfg(ApprovalMode::Auto),
        &mut ScriptedApprover::default(),
    );
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(
        mode(&dir.join("bin/run.sh")),
        0o750,
        "the moved file stays executable"
    );
    let ws = Workspace::new(&dir).unwrap();
    agent::undo(&ws, None, 2, false).unwrap();
    assert_eq!(
        mode(&dir.join("x.sh")),
        0o750,
        "undo of a delete restores the mode"
    );
    assert_eq!(
        mode(&dir.join("run.sh")),
        0o750,
        "undo of a move restores the mode"
    );
    assert!(!dir.join("bin").exists());
}

#[test]
fn glob_patterns_match_names_at_any_depth_and_paths_with_double_star() {
    use agent::workspace::glob_match;
    assert!(glob_match("*.rs", "src/deep/lib.rs"));
    assert!(glob_match("src/**/*.rs", "src/a/b/lib.rs"));
    assert!(glob_match("src/**/*.rs", "src/lib.rs"));
    assert!(!glob_match("src/*.rs", "src/a/lib.rs"));
    assert!(glob_match("a?c.txt", "abc.txt") && !glob_match("a?c.txt", "ac.txt"));
}

#[test]
fn a_malformed_command_is_told_to_the_model_by_kind() {
    let dir = repo("malformed", &[("a.txt", "old\n")]);
    let e = engine(&["MOVE a.txt\n", "LIST\n", "DONE\n"]);
    let out = session(
        &e,
        &dir,
        &cfg(ApprovalMode::Auto),
        &mut ScriptedApprover::default(),
    );
    refused_unchanged(&out);
    assert!(prompts(&e)[1].contains("a command could not be read (bad_verb_line)"));
    assert_eq!(events(&journal(&dir, &out), "malformed").len(), 1);
}

#[test]
fn resume_rebuilds_the_history_from_the_journal_and_appends_to_it() {
    const EDIT_B: &str = "EDIT a.txt\n<<<<<<< SEARCH\nnew\n=======\nnewer\n>>>>>>> REPLACE\n";
    let files = [("a.txt", "keep\nold\n")];
    // The same replies, once uninterrupted and once cut after turn 1 and resumed.
    let whole_dir = repo("resume-whole", &files);
    let whole = engine(&[EDIT_A, "READ a.txt\n", EDIT_B, "DONE\n"]);
    let c = cfg(ApprovalMode::Auto);
    let out = session(&whole, &whole_dir, &c, &mut ScriptedApprover::default());
    assert_eq!((out.reason, out.turns), (StopReason::Done, 4));

    let dir = repo("resume", &files);
    let first = engine(&[EDIT_A, "READ a.txt\n"]);
    let mut c1 = cfg(ApprovalMode::Auto);
    c1.max_turns = 2;
    let cut = session(&first, &dir, &c1, &mut ScriptedApprover::default());
    assert_eq!((cut.reason, cut.turns), (StopReason::MaxTurns, 2));

    let rest = engine(&[EDIT_B, "DONE\n"]);
    let mut c2 = cfg(ApprovalMode::Auto);
    c2.task = "a task the journal overrides".to_owned();
    let ws = Workspace::new(&dir).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let out = rt
        .block_on(agent::resume(
            &rest,
            &ws,
            &c2,
            &cut.session,
            &mut ScriptedApprover::default(),
            &mut Quiet,
        ))
        .unwrap();
    assert_eq!(out.session, cut.session, "the same session continues");
    assert_eq!((out.reason, out.turns), (StopReason::Done, 4));
    assert_eq!(
        std::fs::read_to_string(dir.join("a.txt")).unwrap(),
        "keep\nnewer\n"
    );
    // The resumed prompt is the one the uninterrupted session saw at turn 3: the journal's
    // task, both earlier replies and their observations.
    assert_eq!(prompts(&rest)[0], prompts(&whole)[2]);
    assert!(!prompts(&rest)[0].contains("overrides"));
    // One journal: the first run's events, then the resume's; commit ids keep counting, so
    // undo can tell the two edits apart.
    let j = journal(&dir, &out);
    assert_eq!(events(&j, "resume")[0]["after_turn"], 2);
    let ids: Vec<_> = events(&j, "commit")
        .iter()
        .map(|c| c["id"].clone())
        .collect();
    assert_eq!(ids, [1, 2]);
    assert_eq!(events(&j, "stop").len(), 2);
    agent::undo(&ws, Some(&cut.session), 1, false).unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.join("a.txt")).unwrap(),
        "keep\nnew\n"
    );
    // An unknown session is refused; so is a name that is no session id at all (ids are
    // checked for their shape now, so "no-such-session" is refused as not an id).
    for (id, why) in [
        ("1700000000-1-0", "no session journal"),
        ("no-such-session", "is not a session id"),
    ] {
        let err = rt
            .block_on(agent::resume(
                &rest,
                &ws,
                &c2,
                id,
                &mut ScriptedApprover::default(),
                &mut Quiet,
            ))
            .unwrap_err();
        assert!(err.to_string().contains(why), "{err}");
    }
}

/// Resumes session `id` in `dir` on `engine`.
fn resume_in(engine: &ScriptedEngine, dir: &Path, cfg: &Config, id: &str) -> Outcome {
    let ws = Workspace::new(dir).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(agent::resume(
        engine,
        &ws,
        cfg,
        id,
        &mut ScriptedApprover::default(),
        &mut Quiet,
    ))
    .unwrap()
}

#[test]
fn resume_keeps_the_stall_and_loop_counts() {
    // Stall: one valid turn, two without an action, cut by max turns; one more turn without
    // an action after the resume is the third in a row.
    let dir = repo("resume-stall", &[("a.txt", "old\n")]);
    let first = engine(&["LIST\n"]);
    let mut c = cfg(ApprovalMode::Auto);
    c.stall_turns = 3;
    c.max_turns = 3;
    let cut = session(&first, &dir, &c, &mut ScriptedApprover::default());
    assert_eq!((cut.reason, cut.turns), (StopReason::MaxTurns, 3));
    c.max_turns = 5;
    let out = resume_in(&engine(&[]), &dir, &c, &cut.session);
    assert_eq!((out.reason, out.turns), (StopReason::Stall, 4));

    // Loop: the same read twice, cut; the third identical read after the resume is a loop.
    // An echo in between does not break the run of identical actions, as it does not live.
    let dir = repo("resume-loop", &[("a.txt", "old\n")]);
    let first = engine(&["READ a.txt\n", "READ path\n", "READ a.txt\n"]);
    let mut c = cfg(ApprovalMode::Auto);
    c.max_turns = 3;
    let cut = session(&first, &dir, &c, &mut ScriptedApprover::default());
    assert_eq!((cut.reason, cut.echoes), (StopReason::MaxTurns, 1));
    c.max_turns = 5;
    let out = resume_in(&engine(&["READ a.txt\n", "LIST\n"]), &dir, &c, &cut.session);
    assert_eq!(
        (out.reason, out.turns, out.echoes),
        (StopReason::Loop, 4, 1)
    );

    // And a resumed session remembers that an action succeeded: in plan mode, DONE is not
    // premature.
    c.policy = Policy::new(ApprovalMode::Plan);
    let out = resume_in(&engine(&["DONE read it\n"]), &dir, &c, &cut.session);
    assert_eq!((out.reason, out.premature_done), (StopReason::Done, 0));
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-C"])
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn in_a_git_repository_isolate_is_a_worktree_with_the_uncommitted_changes() {
    use agent::isolate::{self, Change};
    use std::os::unix::fs::PermissionsExt;
    let dir = repo(
        "isolate-git",
        &[
            ("a.txt", "keep\nold\n"),
            ("b.txt", "b\n"),
            ("run.sh", "echo hi\n"),
            (".gitignore", "*.log\n"),
        ],
    );
    std::fs::set_permissions(dir.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    git(&dir, &["init", "-q"]);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "start"]);
    // Uncommitted: a staged edit, a deletion, an untracked file, an ignored one.
    std::fs::write(dir.join("a.txt"), "keep\nold\nstaged\n").unwrap();
    git(&dir, &["add", "a.txt"]);
    std::fs::remove_file(dir.join("b.txt")).unwrap();
    std::fs::write(dir.join("new.txt"), "untracked\n").unwrap();
    std::fs::write(dir.join("build.log"), "ignored\n").unwrap();
    let ws = Workspace::new(&dir).unwrap();
    let (id, copy) = isolate::isolate(&ws).unwrap();
    let wt = copy.root().to_path_buf();
    assert!(wt.join(".git").is_file(), "a worktree, not a copy");
    assert!(git(&dir, &["worktree", "list"]).contains(&id));
    assert_eq!(
        git(&wt, &["rev-parse", "HEAD"]),
        git(&dir, &["rev-parse", "HEAD"])
    );
    assert_eq!(
        std::fs::read_to_string(wt.join("a.txt")).unwrap(),
        "keep\nold\nstaged\n"
    );
    assert!(!wt.join("b.txt").exists() && !wt.join("build.log").exists());
    assert_eq!(
        std::fs::read_to_string(wt.join("new.txt")).unwrap(),
        "untracked\n"
    );
    let mode = std::fs::metadata(wt.join("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755);
    assert!(isolate::changes(&ws, &id).unwrap().is_empty());

    // A session in the worktree; promote applies its diff to the real tree.
    let e = engine(&[
        "EDIT a.txt\n<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n",
        "DONE\n",
    ]);
    let out = session_in(
        &e,
        &copy,
        &cfg(ApprovalMode::Auto),
        &mut ScriptedApprover::default(),
    );
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(
        std::fs::read_to_string(dir.join("a.txt")).unwrap(),
        "keep\nold\nstaged\n"
    );
    assert_eq!(
        isolate::promote(&ws, &id, false).unwrap(),
        [Change::Write("a.txt".into())]
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("a.txt")).unwrap(),
        "keep\nnew\nstaged\n"
    );
    // Discarding removes the worktree from git too.
    assert!(isolate::discard(&ws, &id).unwrap());
    assert!(!wt.exists());
    assert!(!git(&dir, &["worktree", "list"]).contains(&id));
    assert!(isolate::discard(&ws, &id).is_err());
}

#[test]
fn an_isolated_session_leaves_the_tree_alone_until_promoted() {
    use agent::isolate::{self, Change};
    let dir = repo(
        "isolate",
        &[
            ("a.txt", "keep\nold\n"),
            ("c.txt", "doomed\n"),
            ("d.txt", "same\n"),
        ],
    );
    let ws = Workspace::new(&dir).unwrap();
    let (id, copy) = isolate::isolate(&ws).unwrap();
    assert!(copy.root().starts_with(dir.join(".bellows/isolated")));
    let e = engine(&[
        EDIT_A,
        "CREATE sub/b.txt\n<<<<<<< SEARCH\n=======\nfresh\n>>>>>>> REPLACE\n",
        "DELETE c.txt\n",
        "DONE\n",
    ]);
    let mut c = cfg(ApprovalMode::Auto);
    c.task = "fix the bug; c.txt is obsolete".to_owned();
    let out = session_in(&e, &copy, &c, &mut ScriptedApprover::default());
    assert_eq!(out.reason, StopReason::Done);
    // The real tree is untouched; the copy has the changes.
    assert_eq!(
        std::fs::read_to_string(dir.join("a.txt")).unwrap(),
        "keep\nold\n"
    );
    assert!(dir.join("c.txt").exists() && !dir.join("sub/b.txt").exists());
    let expected = vec![
        Change::Write("a.txt".into()),
        Change::Delete("c.txt".into()),
        Change::Write("sub/b.txt".into()),
    ];
    assert_eq!(isolate::changes(&ws, &id).unwrap(), expected);

    // A file changed in the real tree since the copy refuses the whole promotion.
    std::fs::write(dir.join("c.txt"), "edited meanwhile\n").unwrap();
    let err = isolate::promote(&ws, &id, false).unwrap_err();
    assert!(err.to_string().contains("c.txt"), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.join("a.txt")).unwrap(),
        "keep\nold\n"
    );
    assert!(
        !dir.join("sub/b.txt").exists(),
        "nothing written when refused"
    );

    std::fs::write(dir.join("c.txt"), "doomed\n").unwrap();
    assert_eq!(isolate::promote(&ws, &id, false).unwrap(), expected);
    assert_eq!(
        std::fs::read_to_string(dir.join("a.txt")).unwrap(),
        "keep\nnew\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("sub/b.txt")).unwrap(),
        "fresh\n"
    );
    assert!(!dir.join("c.txt").exists());
    assert_eq!(
        std::fs::read_to_string(dir.join("d.txt")).unwrap(),
        "same\n"
    );
    assert!(isolate::promote(&ws, "no-such-copy", false).is_err());
    // Outside git the copy is a plain copy; discarding removes it.
    assert!(!copy.root().join(".git").exists());
    assert!(!isolate::discard(&ws, &id).unwrap());
    assert!(!copy.root().exists());
}
