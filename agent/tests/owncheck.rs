//! The check the model writes first (`Config::own_check`): asked for before the first
//! change, kept only when it fails on the files as they are, shown in the first message, run
//! on a throwaway copy after each change and at DONE, journaled, and kept on resume. Every
//! path is played with scripted replies: a script kept, one sent back because it passes
//! already, none kept at all, and a user's own check, which always wins.

#![allow(clippy::unwrap_used)] // Tests fail loudly on the first surprise.

mod common;

use agent::{Config, Event, StopReason};
use common::{engine, events, landlock, prompts, repo, session};

const HELLO: &str = "echo \"Hello, world\"\n";
const HELLO_WRONG: &str = "echo \"Hi, world\"\n";
const HELLO_RIGHT: &str = "echo \"Hello, Ada\"\n";
const TASK: &str = "Make the greeting personal: greet Ada instead of the world.";

const CHECK: &str = "```sh\nout=$(sh hello.sh)\n[ \"$out\" = \"Hello, Ada\" ] || { echo \"got: $out\"; exit 1; }\n```\n";
const CHECK_PASSING: &str = "```sh\nsh hello.sh | grep -q Hello\n```\n";

fn cfg() -> Config {
    let mut c = common::whole_cfg(TASK);
    c.own_check = true;
    c.max_turns = 4;
    c
}

fn sh_block(path: &str, text: &str) -> String {
    format!("{path}\n```sh\n{text}```\n")
}

fn verdicts(dir: &std::path::Path, session: &str) -> Vec<String> {
    events(dir, session)
        .into_iter()
        .filter_map(|e| match e {
            Event::OwnCheck { verdict, .. } => Some(verdict),
            _ => None,
        })
        .collect()
}

fn verifies(dir: &std::path::Path, session: &str) -> Vec<bool> {
    events(dir, session)
        .into_iter()
        .filter_map(|e| match e {
            Event::Verify {
                ok,
                after_change: false,
                ..
            } => Some(ok),
            _ => None,
        })
        .collect()
}

/// The script fails on the files as they are, so it is kept: the first message shows it and
/// what it printed; a DONE on a change it rejects is refused with its output, and the right
/// change is verified by it. The repository never holds the script.
#[test]
fn a_check_that_fails_now_holds_done_to_it() {
    if !landlock() {
        return;
    }
    let dir = repo("own-kept", &[("hello.sh", HELLO)]);
    let wrong = format!("{}DONE", sh_block("hello.sh", HELLO_WRONG));
    let right = format!("{}DONE", sh_block("hello.sh", HELLO_RIGHT));
    let e = engine(&[CHECK, wrong.as_str(), right.as_str()]);
    let out = session(&e, dir.path(), &cfg());
    assert_eq!(out.reason, StopReason::Verified);
    assert_eq!(verdicts(dir.path(), &out.session), ["kept"]);
    assert_eq!(verifies(dir.path(), &out.session), [false, true]);
    let p = prompts(&e);
    assert!(
        p[0].contains("write a short shell script"),
        "the script is asked for first: {}",
        p[0]
    );
    assert!(p[1].contains("Your check of the task"), "{}", p[1]);
    assert!(p[1].contains("got: Hello, world"), "{}", p[1]);
    assert!(
        p[2].contains("got: Hi, world"),
        "the refusal shows why: {}",
        p[2]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("hello.sh")).unwrap(),
        HELLO_RIGHT
    );
    assert!(!dir.path().join(agent::owncheck::SH_FILE).exists());
}

/// A script that passes on the files as they are tests nothing: the model is told so and
/// asked again, and the second script, which fails now, is kept.
#[test]
fn a_check_that_passes_already_is_sent_back() {
    if !landlock() {
        return;
    }
    let dir = repo("own-again", &[("hello.sh", HELLO)]);
    let right = format!("{}DONE", sh_block("hello.sh", HELLO_RIGHT));
    let e = engine(&[CHECK_PASSING, CHECK, right.as_str()]);
    let out = session(&e, dir.path(), &cfg());
    assert_eq!(out.reason, StopReason::Verified);
    assert_eq!(
        verdicts(dir.path(), &out.session),
        ["passes_already", "kept"]
    );
    let p = prompts(&e);
    assert!(p[1].contains("passes on the files as they are"), "{}", p[1]);
}

/// No script is kept after the tries run out: the session goes on without a check, and its
/// DONE ends it as any unchecked DONE does; the journal keeps each reply's verdict.
#[test]
fn without_a_kept_check_the_session_goes_on_unchecked() {
    if !landlock() {
        return;
    }
    let dir = repo("own-none", &[("hello.sh", HELLO)]);
    let right = format!("{}DONE", sh_block("hello.sh", HELLO_RIGHT));
    let e = engine(&[CHECK_PASSING, "I would test it by hand.", right.as_str()]);
    let out = session(&e, dir.path(), &cfg());
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(
        verdicts(dir.path(), &out.session),
        ["passes_already", "no_script"]
    );
    assert!(verifies(dir.path(), &out.session).is_empty());
    assert!(!prompts(&e)[2].contains("Your check of the task"));
}

/// A user's check is the check: nothing is asked of the model.
#[test]
fn a_users_check_wins() {
    if !landlock() {
        return;
    }
    let dir = repo(
        "own-user",
        &[
            ("hello.sh", HELLO),
            ("test.sh", "[ \"$(sh hello.sh)\" = \"Hello, Ada\" ]\n"),
        ],
    );
    let right = format!("{}DONE", sh_block("hello.sh", HELLO_RIGHT));
    let e = engine(&[right.as_str()]);
    let mut c = cfg();
    c.verify = Some(vec!["sh".to_owned(), "test.sh".to_owned()]);
    let out = session(&e, dir.path(), &c);
    assert_eq!(out.reason, StopReason::Verified);
    assert!(verdicts(dir.path(), &out.session).is_empty());
    assert!(!prompts(&e)[0].contains("write a short shell script"));
}

/// A resumed session keeps the check its first run kept: a DONE the check rejects is still
/// refused after the resume, and the right change is verified by it.
#[test]
fn a_resumed_session_keeps_its_check() {
    if !landlock() {
        return;
    }
    let dir = repo("own-resume", &[("hello.sh", HELLO)]);
    let wrong = format!("{}DONE", sh_block("hello.sh", HELLO_WRONG));
    let e = engine(&[CHECK, wrong.as_str()]);
    let mut c = cfg();
    c.max_turns = 1;
    let first = session(&e, dir.path(), &c);
    assert_eq!(first.reason, StopReason::MaxTurns);
    let right = format!("{}DONE", sh_block("hello.sh", HELLO_RIGHT));
    let e = engine(&[wrong.as_str(), right.as_str()]);
    c.max_turns = 4;
    let out = common::resume(&e, dir.path(), &c, &first.session);
    assert_eq!(out.reason, StopReason::Verified);
    assert_eq!(verifies(dir.path(), &out.session), [false, false, true]);
}

/// The model's check is evidence, not proof: a DONE it rejects is refused once, and a DONE
/// said again on the same tree, the check failing the same way, is taken — stopped `done`,
/// not `verified`. A DONE after another change is judged afresh.
#[test]
fn a_done_said_again_over_the_same_failure_is_taken_unverified() {
    if !landlock() {
        return;
    }
    let dir = repo("own-insist", &[("hello.sh", HELLO)]);
    // The script wants a "!" the task never asked for.
    let strict = "```sh\n[ \"$(sh hello.sh)\" = \"Hello, Ada!\" ] || { echo \"got: $(sh hello.sh)\"; exit 1; }\n```\n";
    let wrong = format!("{}DONE", sh_block("hello.sh", HELLO_WRONG));
    let right = format!("{}DONE", sh_block("hello.sh", HELLO_RIGHT));
    let e = engine(&[strict, wrong.as_str(), right.as_str(), "DONE"]);
    let out = session(&e, dir.path(), &cfg());
    assert_eq!(out.reason, StopReason::Done);
    // Refused after the wrong change, refused after the right one (another failure), and
    // taken when said again over that same failure.
    assert_eq!(verifies(dir.path(), &out.session), [false, false, false]);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("hello.sh")).unwrap(),
        HELLO_RIGHT
    );
}

/// The engine fails while the script is asked for: the session ends with the generation's
/// error before anything is written — the repository as it was, no journal started.
#[test]
fn a_failed_generation_of_the_script_leaves_the_repository_as_it_was() {
    let dir = repo("own-fail", &[("hello.sh", HELLO)]);
    let e = models::ScriptedEngine::new("scripted", models::Script::chunked("unused\n", 5));
    e.push(models::Script::failing("```sh\nexit", 3, "device lost"));
    let ws = agent::Workspace::new(dir.path()).unwrap();
    let mut approver = agent::ScriptedApprover::default();
    let err = common::rt()
        .block_on(agent::run(
            &e,
            &ws,
            &cfg(),
            &mut approver,
            &mut agent::view::Quiet,
        ))
        .unwrap_err();
    assert!(err.to_string().contains("device lost"), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("hello.sh")).unwrap(),
        HELLO
    );
    assert!(!dir.path().join(".bellows/sessions").exists());
}

/// The script is model output: it runs confined like RUN, and a write outside its copy of
/// the repository is denied by the kernel (the script is kept — it fails — and nothing lands).
#[test]
fn the_script_cannot_write_outside_its_copy() {
    if !landlock() {
        return;
    }
    let dir = repo("own-escape", &[("hello.sh", HELLO)]);
    let outside = dir.path().with_file_name(format!(
        "{}-outside",
        dir.path().file_name().unwrap().to_string_lossy()
    ));
    let script = format!(
        "```sh\necho escaped > '{}'\nexit 1\n```\n",
        outside.display()
    );
    let right = format!("{}DONE", sh_block("hello.sh", HELLO_RIGHT));
    let e = engine(&[script.as_str(), right.as_str(), "DONE"]);
    let out = session(&e, dir.path(), &cfg());
    assert_eq!(verdicts(dir.path(), &out.session), ["kept"]);
    assert!(!outside.exists(), "{} was written", outside.display());
}
