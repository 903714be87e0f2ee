//! `Config::restate` (`--restate`): after the first turn the prompt is the first message made
//! again from the files as they are, with what came of the earlier replies told in sentences
//! inside it — no earlier reply and no `[error]`/`<output>` lines for a small model to copy.

#![allow(clippy::unwrap_used)] // Tests fail loudly on the first surprise.

mod common;

use agent::{Config, StopReason};
use common::{engine, prompts, repo, resume, session};

const STATS: &str = "def mean(xs):\n    total = 0\n    for i in range(1, len(xs)):\n        total += xs[i]\n    return total / len(xs)\n";
const HALF: &str = "def mean(xs):\n    total = 0\n    for i in range(1, len(xs)):\n        total += xs[i]\n    return total / 2\n";
const FIXED: &str = "def mean(xs):\n    total = 0\n    for i in range(0, len(xs)):\n        total += xs[i]\n    return total / len(xs)\n";

fn cfg(task: &str) -> Config {
    let mut c = common::whole_cfg(task);
    c.max_turns = 6;
    c.restate = true;
    c
}

/// The check that passes once stats.py's loop starts at 0.
fn fixed_check() -> Vec<String> {
    [
        "sh",
        "-c",
        "grep -q 'range(0,' stats.py || { echo 'loop starts at 1'; exit 1; }",
    ]
    .map(String::from)
    .to_vec()
}

#[test]
fn each_turn_after_the_first_is_the_first_message_made_again() {
    let dir = repo("restate-fix", &[("stats.py", STATS)]);
    let wrong = format!("stats.py\n```python\n{HALF}```\n");
    let right = format!("stats.py\n```python\n{FIXED}```\n");
    let e = engine(&[
        wrong.as_str(),
        "I think it is fine now.",
        right.as_str(),
        "DONE",
    ]);
    let mut c = cfg("mean in stats.py skips the first element");
    c.verify = Some(fixed_check());
    let out = session(&e, dir.path(), &c);
    assert_eq!(out.reason, StopReason::Verified);
    let p = prompts(&e);
    assert_eq!(p.len(), 4);
    for later in &p[1..] {
        // One user message: no earlier reply, no results in the conversation's format.
        assert!(!later.contains("<assistant>"), "{later}");
        assert_eq!(later.matches("<user>").count(), 1, "{later}");
        let user = later.split("<user>").nth(1).unwrap();
        assert!(
            !user.contains("[error]") && !user.contains("<output>"),
            "{user}"
        );
        assert!(
            !user.contains("[ok]") && !user.contains("\nhint:"),
            "{user}"
        );
        // The task again closes it, as it closes the first message.
        assert!(
            later.trim_end().ends_with("in a fenced code block."),
            "{later}"
        );
        assert!(
            later.contains("What came of your earlier replies"),
            "{later}"
        );
    }
    // The file as the first reply left it, and the check's output, fenced, in sentences.
    assert!(
        p[1].contains(&format!("stats.py\n```\n{HALF}```")),
        "{}",
        p[1]
    );
    assert!(!p[1].contains(STATS), "{}", p[1]);
    assert!(p[1].contains("loop starts at 1"), "{}", p[1]);
    assert!(p[1].contains("What to do now:"), "{}", p[1]);
    // The second reply wrote nothing: told so, with a line for each earlier turn.
    assert!(p[2].contains("- turn 1: "), "{}", p[2]);
    assert!(p[2].contains("- turn 2: "), "{}", p[2]);
    assert!(p[2].contains("no file block and no command"), "{}", p[2]);
    assert!(!p[2].contains("I think it is fine now"), "{}", p[2]);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("stats.py")).unwrap(),
        FIXED
    );
}

/// A resumed session restates too: its prompt is made from the files as they are, and the
/// journal's turns are told, not replayed.
#[test]
fn a_resumed_session_restates_from_the_files_as_they_are() {
    let dir = repo("restate-resume", &[("stats.py", STATS)]);
    let wrong = format!("stats.py\n```python\n{HALF}```\n");
    let e = engine(&[wrong.as_str()]);
    let mut c = cfg("mean in stats.py skips the first element");
    c.max_turns = 1;
    let out = session(&e, dir.path(), &c);
    assert_eq!(out.reason, StopReason::MaxTurns);
    let right = format!("stats.py\n```python\n{FIXED}```\nDONE");
    let e = engine(&[right.as_str()]);
    let out = resume(&e, dir.path(), &c, &out.session);
    assert_eq!(out.reason, StopReason::Done);
    let p = prompts(&e);
    assert!(!p[0].contains("<assistant>"), "{}", p[0]);
    assert!(
        p[0].contains(&format!("stats.py\n```\n{HALF}```")),
        "{}",
        p[0]
    );
    assert!(p[0].contains("- turn 1: "), "{}", p[0]);
}

/// In the files-apart layout the earlier replies are told with the files, and the task's
/// message stays last and alone.
#[test]
fn with_the_files_apart_the_task_stays_last_and_alone() {
    let dir = repo("restate-apart", &[("stats.py", STATS)]);
    let wrong = format!("stats.py\n```python\n{HALF}```\n");
    let right = format!("stats.py\n```python\n{FIXED}```\nDONE");
    let e = engine(&[wrong.as_str(), right.as_str()]);
    let mut c = cfg("mean in stats.py skips the first element");
    c.files_apart = true;
    let out = session(&e, dir.path(), &c);
    assert_eq!(out.reason, StopReason::Done);
    let p = prompts(&e);
    let last_user = p[1].rsplit("<user>").next().unwrap();
    assert!(
        last_user.starts_with("mean in stats.py skips the first element"),
        "{last_user}"
    );
    assert!(!last_user.contains("What came of"), "{last_user}");
    let files = p[1].split("<user>").nth(1).unwrap();
    assert!(
        files.contains("What came of your earlier replies"),
        "{files}"
    );
    assert!(
        files.contains(&format!("stats.py\n```\n{HALF}```")),
        "{files}"
    );
}
