//! The files the check runs ([`agent::checkfiles`]) are read-only to the session: a change to
//! the test is refused and nothing is written, a test put back as it was is taken, a DONE is
//! refused while a command left the test changed, and a resumed session keeps the test the
//! first run protected.

#![allow(clippy::unwrap_used)] // Tests fail loudly on the first surprise.

mod common;

use agent::{ApprovalMode, Config, Event, Policy, Protocol, StopReason};
use common::{engine, events, prompts, refusals, repo, resume, session};

const TEST: &str = "[ \"$(sh count.sh)\" = ok ]\n";
const COUNT: &str = "echo wrong\n";

fn cfg() -> Config {
    let mut c = Config::new(
        "sh test.sh fails. Fix count.sh.",
        Policy::new(ApprovalMode::Auto),
    );
    c.protocol = Protocol::Whole;
    c.max_turns = 4;
    c.reply_reserve = 400;
    c.verify = Some(vec!["sh".into(), "test.sh".into()]);
    c
}

fn block(path: &str, text: &str) -> String {
    format!("{path}\n```sh\n{text}```\n")
}

fn read(dir: &tempfile::TempDir, path: &str) -> String {
    std::fs::read_to_string(dir.path().join(path)).unwrap()
}

/// A model that rewrites the test so that it passes is refused before anything is written and
/// told why; the real fix then passes the check.
#[test]
fn a_change_to_the_checks_test_is_refused_and_the_fix_is_taken() {
    let dir = repo("check-file", &[("test.sh", TEST), ("count.sh", COUNT)]);
    let cheat = block("test.sh", "exit 0\n");
    let fix = format!("{}DONE", block("count.sh", "echo ok\n"));
    let e = engine(&[cheat.as_str(), fix.as_str()]);
    let out = session(&e, dir.path(), &cfg());
    assert_eq!(out.reason, StopReason::Verified);
    assert_eq!(read(&dir, "test.sh"), TEST);
    assert_eq!(read(&dir, "count.sh"), "echo ok\n");
    assert_eq!(refusals(dir.path(), &out.session), ["check_file"]);
    let p = prompts(&e);
    assert!(
        p[1].contains("test.sh not changed: it is a test the task runs (`sh test.sh`)"),
        "{}",
        p[1]
    );
    // Journaled as it was when the session started.
    let start = events(dir.path(), &out.session).into_iter().next().unwrap();
    let Event::Start { check_files, .. } = start else {
        panic!("a start event")
    };
    assert_eq!(check_files.len(), 1);
    assert_eq!(check_files[0].path, "test.sh");
}

/// Deleting or moving the test is a change to it too; a file the task asks to change is not
/// protected.
#[test]
fn deleting_the_test_is_refused_but_a_test_the_task_names_may_change() {
    let dir = repo(
        "check-file-delete",
        &[("test.sh", TEST), ("count.sh", COUNT)],
    );
    let e = engine(&["DELETE test.sh\n", "MOVE test.sh -> old.sh\n"]);
    let mut c = cfg();
    c.max_turns = 2;
    let out = session(&e, dir.path(), &c);
    assert_eq!(read(&dir, "test.sh"), TEST);
    assert!(!dir.path().join("old.sh").exists());
    assert_eq!(
        refusals(dir.path(), &out.session),
        ["check_file", "check_file"]
    );

    let dir = repo(
        "check-file-named",
        &[("test.sh", TEST), ("count.sh", COUNT)],
    );
    let e = engine(&[block("test.sh", "[ \"$(sh count.sh)\" = wrong ]\n") + "DONE"]);
    let mut c = cfg();
    c.task = "test.sh expects the wrong word: make test.sh expect `wrong`.".into();
    let out = session(&e, dir.path(), &c);
    assert_eq!(out.reason, StopReason::Verified);
    assert!(refusals(dir.path(), &out.session).is_empty());
}

/// A resumed session protects the test its first run protected, as it was then.
#[test]
fn a_resumed_session_keeps_the_test_protected() {
    let dir = repo(
        "check-file-resume",
        &[("test.sh", TEST), ("count.sh", COUNT)],
    );
    let mut c = cfg();
    c.max_turns = 1;
    let e = engine(&["Let me look first."]);
    let first = session(&e, dir.path(), &c);
    let e = engine(&[block("test.sh", "exit 0\n")]);
    let out = resume(&e, dir.path(), &c, &first.session);
    assert_eq!(out.session, first.session);
    assert_eq!(read(&dir, "test.sh"), TEST);
    assert_eq!(refusals(dir.path(), &out.session), ["check_file"]);
}

/// A test a command changed refuses DONE (the check would pass on it) until it is put back as
/// it was, which is a change the session may make.
#[test]
fn done_is_refused_while_a_command_left_the_test_changed() {
    if !common::landlock() {
        return; // RUN runs nothing where the kernel cannot confine it.
    }
    let dir = repo(
        "check-file-run",
        &[
            ("test.sh", TEST),
            ("count.sh", COUNT),
            ("pass.sh", "exit 0\n"),
        ],
    );
    let restore = format!("{}DONE", block("test.sh", TEST));
    let fix = format!("{}DONE", block("count.sh", "echo ok\n"));
    let e = engine(&["RUN cp pass.sh test.sh\n", "DONE", &restore, &fix]);
    let mut c = cfg();
    c.max_turns = 5;
    let out = session(&e, dir.path(), &c);
    assert_eq!(out.reason, StopReason::Verified);
    assert_eq!(read(&dir, "test.sh"), TEST);
    let why = refusals(dir.path(), &out.session);
    assert_eq!(why[0], "check_changed", "{why:?}");
    assert!(!why.contains(&"check_file".to_owned()), "{why:?}");
}

/// The 1.5B on clean-dry-run-sh: asked for a -n dry run that prints "would remove FILE", it
/// printed that on every run, and the check, which runs clean.sh without -n, failed with
/// `would remove …`; told only that, it kept the change attempt after attempt. The failure is
/// explained beside the output (the check's line that runs clean.sh without -n), and the fix
/// that makes the text depend on -n is taken.
#[test]
fn a_new_option_s_text_printed_without_the_option_is_explained_beside_the_check() {
    const CLEAN: &str = "while getopts v opt; do\n    case $opt in\n        v) V=1 ;;\n    esac\ndone\nshift $((OPTIND - 1))\nfor f in \"$1\"/*.o; do\n    echo \"removed $f\"\n    rm -f \"$f\"\ndone\n";
    const TEST: &str = "#!/bin/sh\nd=$(mktemp -d)\necho x >\"$d/a.o\"\nout=$(sh clean.sh \"$d\")\n[ \"$out\" = \"removed $d/a.o\" ] || { echo \"FAIL: $out\"; exit 1; }\n[ ! -e \"$d/a.o\" ] || { echo \"FAIL: a.o left\"; exit 1; }\necho ok\n";
    let dir = repo(
        "check-option-leaked",
        &[("clean.sh", CLEAN), ("test.sh", TEST)],
    );
    let leaked = CLEAN.replace("getopts v opt", "getopts vn opt").replace(
        "echo \"removed $f\"\n    rm -f \"$f\"",
        "echo \"would remove $f\"",
    );
    let right = CLEAN
        .replace("getopts v opt", "getopts vn opt")
        .replace("        v) V=1 ;;\n", "        v) V=1 ;;\n        n) DRY=1 ;;\n")
        .replace(
            "    echo \"removed $f\"\n    rm -f \"$f\"\n",
            "    if [ \"$DRY\" = 1 ]; then echo \"would remove $f\"; continue; fi\n    echo \"removed $f\"\n    rm -f \"$f\"\n",
        );
    let first = block("clean.sh", &leaked);
    let second = format!("{}DONE", block("clean.sh", &right));
    let e = engine(&[first.as_str(), second.as_str()]);
    let mut c = cfg();
    c.task = "Add a -n option to clean.sh for a dry run: print \"would remove FILE\" for each \
              file it would delete, and delete nothing."
        .to_owned();
    let out = session(&e, dir.path(), &c);
    assert_eq!(out.reason, StopReason::Verified);
    assert_eq!(read(&dir, "clean.sh"), right);
    let p = &prompts(&e)[1];
    assert!(p.contains("FAIL: would remove"), "{p}");
    assert!(
        p.contains(
            "clean.sh printed \"would remove\" without -n: test.sh runs it so (line 4: `out=$(sh \
             clean.sh \"$d\")`), and test.sh stays as it is. Without -n, clean.sh must do and \
             print what it did before; only with -n should it print \"would remove\""
        ),
        "{p}"
    );
}
