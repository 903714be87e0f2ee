//! The task's own commands ([`agent::probe`]) and the imports a session breaks
//! ([`agent::imports`]): a DONE is refused while the command the task calls wrong prints what
//! it printed before, while a moved module is still imported from where it was, or while a
//! file the task asked to move is still there beside its copy — live, after a resume, and not
//! at all when switched off.

#![allow(clippy::unwrap_used)] // Tests fail loudly on the first surprise.

mod common;

use agent::StopReason;
use common::{
    engine, events, prompts, python_block, python_runs_confined, refusals, repo, resume, session,
    whole_cfg,
};

const CLI: &str = "import sys\nn = 1\nif '--count' in sys.argv:\n    n = int(sys.argv[sys.argv.index('--count') + 1])\nfor i in range(1, n):\n    print('hello')\n";
const COSMETIC: &str = "import sys\n\nn = 1  # how many\nif '--count' in sys.argv:\n    n = int(sys.argv[sys.argv.index('--count') + 1])\nfor i in range(1, n):\n    print('hello')\n";
const FIXED: &str = "import sys\nn = 1\nif '--count' in sys.argv:\n    n = int(sys.argv[sys.argv.index('--count') + 1])\nfor i in range(n):\n    print('hello')\n";
const TASK: &str =
    "`python3 cli.py --count 3` prints only 2 lines. It should print hello --count times.";

/// The first message shows what the command prints; a change that leaves its output as it
/// was is told so, and its DONE is refused (`unchanged_output`); the real fix's DONE is taken.
/// The probes never write into the repository.
#[test]
fn done_is_refused_while_the_tasks_command_prints_what_it_did() {
    if !python_runs_confined() {
        return;
    }
    let dir = repo("probe-live", &[("cli.py", CLI)]);
    let cosmetic = format!("{}DONE", python_block("cli.py", COSMETIC));
    let fixed = format!("{}DONE", python_block("cli.py", FIXED));
    let e = engine(&[cosmetic.as_str(), fixed.as_str()]);
    let out = session(&e, dir.path(), &whole_cfg(TASK));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(out.turns, 2);
    assert_eq!(refusals(dir.path(), &out.session), ["unchanged_output"]);
    let p = prompts(&e);
    assert!(
        p[0].contains(
            "Running `python3 cli.py --count 3` on the files as they are now (exit 0):\n```\nhello\nhello\n```"
        ),
        "{}",
        p[0]
    );
    assert!(
        p[1].contains("DONE refused: `python3 cli.py --count 3` still prints exactly"),
        "{}",
        p[1]
    );
    assert!(
        p[1].contains("$ python3 cli.py --count 3 (exit 0, the same as before your change)"),
        "{}",
        p[1]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("cli.py")).unwrap(),
        FIXED
    );
    let files: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| !n.starts_with('.'))
        .collect();
    assert_eq!(files, ["cli.py"]);
}

/// A resumed session judges its DONE against what the command printed when the session
/// first started (kept in the journal), not against the tree it resumes on.
#[test]
fn a_resumed_session_compares_with_the_first_runs_output() {
    if !python_runs_confined() {
        return;
    }
    let dir = repo("probe-resume", &[("cli.py", CLI)]);
    let e = engine(&[python_block("cli.py", COSMETIC)]);
    let mut c = whole_cfg(TASK);
    c.max_turns = 1;
    let first = session(&e, dir.path(), &c);
    assert_eq!(first.reason, StopReason::MaxTurns);
    let fixed = format!("{}DONE", python_block("cli.py", FIXED));
    let e2 = engine(&["DONE", fixed.as_str()]);
    c.max_turns = 3;
    let out = resume(&e2, dir.path(), &c, &first.session);
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &first.session), ["unchanged_output"]);
}

/// `probes = false` runs nothing: the first message has no command output and the cosmetic
/// change's DONE is taken. A command the task asks to keep working never refuses.
#[test]
fn probes_off_or_a_command_to_keep_hold_nothing_back() {
    if !python_runs_confined() {
        return;
    }
    let dir = repo("probe-off", &[("cli.py", CLI)]);
    let cosmetic = format!("{}DONE", python_block("cli.py", COSMETIC));
    let e = engine(&[cosmetic.as_str()]);
    let mut c = whole_cfg(TASK);
    c.probes = false;
    let out = session(&e, dir.path(), &c);
    assert_eq!(out.reason, StopReason::Done);
    assert!(!prompts(&e)[0].contains("Running `"));

    let dir = repo("probe-keep", &[("cli.py", CLI)]);
    let e = engine(&[cosmetic.as_str()]);
    let c =
        whole_cfg("Add a comment to cli.py; `python3 cli.py --count 3` must keep working as now.");
    let out = session(&e, dir.path(), &c);
    assert_eq!(out.reason, StopReason::Done);
    assert!(prompts(&e)[0].contains("Running `python3 cli.py --count 3`"));
}

/// A module moved while another file still imports it from where it was: told with the
/// move, and the DONE is refused until the import follows it.
#[test]
fn a_moved_module_still_imported_holds_back_done() {
    let main = "import helpers\n\nprint(helpers.shout('hi'))\n";
    let helpers = "def shout(s):\n    return s.upper()\n";
    let dir = repo(
        "imports-move",
        &[("main.py", main), ("helpers.py", helpers)],
    );
    let moved = "MOVE helpers.py -> lib/helpers.py\nDONE";
    let fixed = format!(
        "{}DONE",
        python_block(
            "main.py",
            "from lib import helpers\n\nprint(helpers.shout('hi'))\n"
        )
    );
    let e = engine(&[moved, fixed.as_str()]);
    let out = session(
        &e,
        dir.path(),
        &whole_cfg("Move helpers.py into a new directory lib/."),
    );
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["lint"]);
    let p = &prompts(&e)[1];
    assert!(
        p.contains("main.py line 1 imports helpers, but helpers.py no longer exists"),
        "{p}"
    );
    assert!(
        p.contains("DONE refused: main.py line 1 imports helpers"),
        "{p}"
    );
    assert!(dir.path().join("lib/helpers.py").exists());
}

/// A move done as a copy (the new file written, the old one left): told with the change, and
/// when the task asks to move, the DONE is refused (`copy_left`) until the original goes.
#[test]
fn a_move_done_as_a_copy_holds_back_done_until_the_original_goes() {
    let helpers = "def helper():\n    return 42\n";
    let dir = repo(
        "copy-left",
        &[("helpers.py", helpers), ("README.md", "r\n")],
    );
    let copy = format!("{}DONE", python_block("lib/helpers.py", helpers));
    let e = engine(&[copy.as_str(), "DELETE helpers.py\nDONE"]);
    let c = whole_cfg("Move helpers.py into a new directory lib/ (as lib/helpers.py).");
    let out = session(&e, dir.path(), &c);
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["copy_left"]);
    let p = &prompts(&e)[1];
    assert!(
        p.contains("note: lib/helpers.py is an exact copy of helpers.py, which is still there"),
        "{p}"
    );
    assert!(p.contains("reply DELETE helpers.py"), "{p}");
    assert!(!dir.path().join("helpers.py").exists());

    // A task that does not ask to move: the copy is told, never refused.
    let dir = repo("copy-kept", &[("helpers.py", helpers)]);
    let e = engine(&[copy.as_str()]);
    let out = session(
        &e,
        dir.path(),
        &whole_cfg("Put a copy of helpers.py in lib/."),
    );
    assert_eq!(out.reason, StopReason::Done);
    assert!(refusals(dir.path(), &out.session).is_empty());
}

const GREET: &str = "echo helo\n";
const TEST_GREET: &str =
    "[ \"$(sh greet.sh)\" = hello ] || { echo \"greet.sh says $(sh greet.sh)\"; exit 1; }\n";

/// A test the task says fails must pass at DONE: a change that makes it fail another way is
/// refused (`still_failing`, though its output changed), the test itself cannot be edited to
/// pass (`check_file`, with no check configured), and the fix is taken. A resumed session
/// holds its DONE to the same test.
#[test]
fn a_test_the_task_says_fails_must_pass_and_stays_as_it_is() {
    if !python_runs_confined() {
        return;
    }
    let task = "sh test_greet.sh fails. Fix greet.sh.";
    let files = [("greet.sh", GREET), ("test_greet.sh", TEST_GREET)];
    let dir = repo("probe-failing", &files);
    let wrong = format!("{}DONE", python_block("greet.sh", "echo hullo\n"));
    let cheat = format!("{}DONE", python_block("test_greet.sh", "exit 0\n"));
    let fixed = format!("{}DONE", python_block("greet.sh", "echo hello\n"));
    let e = engine(&[wrong.as_str(), cheat.as_str(), fixed.as_str()]);
    let out = session(&e, dir.path(), &whole_cfg(task));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(
        refusals(dir.path(), &out.session),
        ["still_failing", "check_file", "still_failing"]
    );
    let p = prompts(&e);
    assert!(
        p[1].contains(
            "DONE refused: the task says this fails, and it still does (`sh test_greet.sh`: the \
             test still fails (exit 1))"
        ),
        "{}",
        p[1]
    );
    assert!(p[1].contains("greet.sh says hullo"), "{}", p[1]);
    assert!(
        p[2].contains("test_greet.sh not changed: it is a test the task runs (`sh test_greet.sh`)"),
        "{}",
        p[2]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("test_greet.sh")).unwrap(),
        TEST_GREET
    );

    let dir = repo("probe-failing-resume", &files);
    let mut c = whole_cfg(task);
    c.max_turns = 1;
    let first = session(&engine(&[wrong.as_str()]), dir.path(), &c);
    assert_eq!(first.reason, StopReason::MaxTurns);
    c.max_turns = 3;
    let out = resume(
        &engine(&["DONE", fixed.as_str()]),
        dir.path(),
        &c,
        &first.session,
    );
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(
        refusals(dir.path(), &first.session),
        ["still_failing", "still_failing"]
    );
}

/// A Python call the task writes runs before the first turn, and a DONE is refused while it
/// still ends in a traceback: the check the task's own test misses.
#[test]
fn a_call_the_task_says_crashes_must_stop_crashing() {
    if !python_runs_confined() {
        return;
    }
    let scores = "def average(xs):\n    return sum(xs) / len(xs)\n\n\ndef summary(xs):\n    return f\"{len(xs)} scores, average {average(xs):.1f}\"\n";
    let half = scores.replace(
        "def summary(xs):",
        "def summary(xs):\n    \"\"\"Sum up.\"\"\"",
    );
    let fixed = scores.replace(
        "return sum(xs) / len(xs)",
        "return sum(xs) / len(xs) if xs else 0",
    );
    let dir = repo("probe-call", &[("scores.py", scores)]);
    let task = "summary([]) in scores.py crashes with ZeroDivisionError. The average of an empty \
                list should be 0.";
    let half = format!("{}DONE", python_block("scores.py", &half));
    let fixed = format!("{}DONE", python_block("scores.py", &fixed));
    let e = engine(&[half.as_str(), fixed.as_str()]);
    let out = session(&e, dir.path(), &whole_cfg(task));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["still_failing"]);
    let p = prompts(&e);
    assert!(
        p[0].contains("Running `python3 -c 'from scores import summary; print(summary([]))'`"),
        "{}",
        p[0]
    );
    assert!(p[0].contains("ZeroDivisionError"), "{}", p[0]);
    assert!(
        p[1].contains("it still ends in a Python traceback"),
        "{}",
        p[1]
    );
}

const TODO: &str = "#!/bin/sh\nfile=$1\ngrep -n TODO \"$file\"\n";
const NOTES: &str = "milk\nTODO call\nbank\nTODO pay\n";
/// Counts always, with or without `-c`: the 1.5B's wrong fix on add-flag-sh.
const ALWAYS_COUNTS: &str = "#!/bin/sh\n[ \"$1\" = -c ] && shift\ngrep -c TODO \"$1\"\n";
const COUNTS_WITH_C: &str =
    "#!/bin/sh\nif [ \"$1\" = -c ]; then\n  grep -c TODO \"$2\"\nelse\n  grep -n TODO \"$1\"\nfi\n";

/// A task that adds an option: its command without the option (one the script does not
/// know yet) is run too, and a DONE is refused while it prints otherwise than before
/// (`default_changed`), with both runs shown; the change that keeps it is taken.
#[test]
fn done_is_refused_while_the_command_without_the_new_option_prints_otherwise() {
    if !common::landlock() {
        return;
    }
    let dir = repo("probe-default", &[("todo.sh", TODO), ("notes.txt", NOTES)]);
    let block = |text: &str| format!("todo.sh\n```sh\n{text}```\nDONE");
    let (wrong, right) = (block(ALWAYS_COUNTS), block(COUNTS_WITH_C));
    let e = engine(&[wrong.as_str(), right.as_str()]);
    let task = "Add a -c option to todo.sh: `sh todo.sh -c notes.txt` should print only the \
                number of TODO lines.";
    let out = session(&e, dir.path(), &whole_cfg(task));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["default_changed"]);
    let p = prompts(&e);
    assert!(
        p[0].contains("Running `sh todo.sh notes.txt` on the files as they are now (exit 0):\n```\n2:TODO call\n4:TODO pay\n```"),
        "{}",
        p[0]
    );
    assert!(
        p[1].contains("DONE refused: without the new option, `sh todo.sh notes.txt` does not print what it printed"),
        "{}",
        p[1]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("todo.sh")).unwrap(),
        COUNTS_WITH_C
    );

    // Without a word that adds, or with an option the script knows, nothing is derived.
    let dir = repo(
        "probe-default-none",
        &[("todo.sh", TODO), ("notes.txt", NOTES)],
    );
    let e = engine(&[wrong.as_str()]);
    let task = "`sh todo.sh -n notes.txt` should print only the number of TODO lines.";
    let out = session(&e, dir.path(), &whole_cfg(task));
    assert_eq!(out.reason, StopReason::Done);
    assert!(refusals(dir.path(), &out.session).is_empty());
}

const COUNTS_ALL_LINES: &str =
    "#!/bin/sh\nif [ \"$1\" = -c ]; then\n  wc -l < \"$2\"\nelse\n  grep -n TODO \"$1\"\nfi\n";

/// A task that says what its command prints once done (`(2 for notes.txt)`): a change whose
/// run prints something else is refused (`expected_output`; the 1.5B on add-flag-sh printed
/// 1), the run shown, the script left as written; the change that prints 2 is taken.
#[test]
fn done_is_refused_while_the_command_does_not_print_what_the_task_says() {
    if !common::landlock() {
        return;
    }
    let dir = repo("probe-expected", &[("todo.sh", TODO), ("notes.txt", NOTES)]);
    let block = |text: &str| format!("todo.sh\n```sh\n{text}```\nDONE");
    let (wrong, right) = (block(COUNTS_ALL_LINES), block(COUNTS_WITH_C));
    let e = engine(&[wrong.as_str(), right.as_str()]);
    let task = "Add a -c option to todo.sh: `sh todo.sh -c notes.txt` should print only the \
                number of TODO lines (2 for notes.txt).";
    let out = session(&e, dir.path(), &whole_cfg(task));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["expected_output"]);
    let told = &prompts(&e)[1];
    assert!(
        told.contains("DONE refused: the task says `sh todo.sh -c notes.txt` should print only \"2\", and it does not"),
        "{told}"
    );
    assert!(
        told.contains("$ sh todo.sh -c notes.txt (exit 0)\n```\n4\n```"),
        "{told}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("todo.sh")).unwrap(),
        COUNTS_WITH_C
    );
}

const LINECOUNT: &str =
    "#!/bin/sh\nfor f in $@; do\n  n=$(cat $f | wc -l)\n  echo \"$n $f\"\ndone\n";
const COUNTS_ONLY: &str = "#!/bin/sh\nfor f in \"$@\"; do\n  wc -l < \"$f\"\ndone\n";
const QUOTED: &str =
    "#!/bin/sh\nfor f in \"$@\"; do\n  n=$(wc -l < \"$f\")\n  echo \"$n $f\"\ndone\n";
const SHELL_ERROR: &str = "#!/bin/sh\nfor f in $@; do n=$(wc -l \"$f\" 2>/dev/null | cut -d' ' -f1)\n  if [ \"$n\" -gt 0 ]; then echo \"$n $f\"; fi\ndone\n";
const NOT_FOUND: &str = "#!/bin/sh\nfor f in $@; do\n  if [ -f \"$f\" ]; then\n    echo \"$(wc -l < \"$f\") $f\"\n  else\n    echo \"File not found: $f\"\n  fi\ndone\n";
const SPACES_TASK: &str = "`sh linecount.sh 'shopping list.txt'` fails with \"cat: shopping: No such file or directory\". Make linecount.sh work with file names that contain spaces.";

/// A command the task says fails: a rewrite that stops the quoted error but stops on a shell
/// error instead, or reports the input not found in its own words, is still failing (the
/// 1.5B on quote-filenames-sh, twice); run on another file
/// beside the failing one, a case that worked before, a rewrite that prints otherwise for
/// it is refused (`regressed`; the 0.5B on quote-filenames-sh), with both runs shown, the
/// files left as the model wrote them; the fix that keeps it is taken.
#[test]
fn a_fix_that_changes_what_a_working_case_prints_is_refused() {
    if !common::landlock() {
        return;
    }
    let files = [
        ("linecount.sh", LINECOUNT),
        ("shopping list.txt", "milk\neggs\nbread\n"),
        ("todo.txt", "one\ntwo\n"),
    ];
    let dir = repo("probe-sibling", &files);
    let block = |text: &str| format!("linecount.sh\n```sh\n{text}```\nDONE");
    let (erring, masking) = (block(SHELL_ERROR), block(NOT_FOUND));
    let (wrong, right) = (block(COUNTS_ONLY), block(QUOTED));
    let e = engine(&[
        erring.as_str(),
        masking.as_str(),
        wrong.as_str(),
        right.as_str(),
    ]);
    let out = session(&e, dir.path(), &whole_cfg(SPACES_TASK));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(
        refusals(dir.path(), &out.session),
        ["still_failing", "still_failing", "regressed"]
    );
    let p = prompts(&e);
    assert!(
        p[1].contains("it now stops on a shell error: \"linecount.sh: 3: [: Illegal number:"),
        "{}",
        p[1]
    );
    assert!(
        p[2].contains("it still reports a failure: \"File not found: shopping\""),
        "{}",
        p[2]
    );
    let p = &p[2..];
    assert!(
        p[0].contains("Running `sh linecount.sh todo.txt` on the files as they are now (exit 0):\n```\n2 todo.txt\n```"),
        "{}",
        p[0]
    );
    assert!(
        p[1].contains("DONE refused: `sh linecount.sh todo.txt` worked before your change and prints otherwise now"),
        "{}",
        p[1]
    );
    assert!(
        p[1].contains("now:\n$ sh linecount.sh todo.txt (exit 0)\n```\n2\n```"),
        "{}",
        p[1]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("linecount.sh")).unwrap(),
        QUOTED
    );

    // A command the task does not say fails has no sibling: the same rewrite is taken.
    let dir = repo("probe-sibling-none", &files);
    let e = engine(&[wrong.as_str()]);
    let task = "`sh linecount.sh 'shopping list.txt'` should print only the number of lines.";
    let out = session(&e, dir.path(), &whole_cfg(task));
    assert_eq!(out.reason, StopReason::Done);
    assert!(refusals(dir.path(), &out.session).is_empty());
    assert!(!prompts(&e)[0].contains("todo.txt`"));
}

const GREET_PY: &str = "import argparse\n\nparser = argparse.ArgumentParser()\nparser.add_argument(\"name\")\nargs = parser.parse_args()\nprint(f\"Hello, {args.name}\")\n";
const SHOUTS_ALWAYS: &str = "import argparse\n\nparser = argparse.ArgumentParser()\nparser.add_argument(\"name\")\nparser.add_argument(\"--shout\", action=\"store_true\")\nargs = parser.parse_args()\nprint(f\"HELLO, {args.name.upper()}\")\n";
const SHOUTS_WHEN_ASKED: &str = "import argparse\n\nparser = argparse.ArgumentParser()\nparser.add_argument(\"name\")\nparser.add_argument(\"--shout\", action=\"store_true\")\nargs = parser.parse_args()\ng = f\"Hello, {args.name}\"\nprint(g.upper() if args.shout else g)\n";

/// A task that adds a long option to a script and writes no command: the script is run
/// plainly too (alone, and with one word), the runs that worked before must print the same
/// after, so a change that shouts always is refused (`default_changed`; the 0.5B on add-flag).
#[test]
fn a_script_the_task_adds_an_option_to_keeps_its_plain_behaviour() {
    if !python_runs_confined() {
        return;
    }
    let dir = repo("probe-plain", &[("greet.py", GREET_PY)]);
    let (wrong, right) = (
        format!("{}DONE", python_block("greet.py", SHOUTS_ALWAYS)),
        format!("{}DONE", python_block("greet.py", SHOUTS_WHEN_ASKED)),
    );
    let e = engine(&[wrong.as_str(), right.as_str()]);
    let task = "Add a --shout flag to greet.py that prints the greeting in upper case.";
    let out = session(&e, dir.path(), &whole_cfg(task));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["default_changed"]);
    let p = prompts(&e);
    // `python3 greet.py` fails without its name: dropped; with one word it worked.
    assert!(!p[0].contains("Running `python3 greet.py` "), "{}", p[0]);
    assert!(
        p[0].contains("Running `python3 greet.py x` on the files as they are now (exit 0):\n```\nHello, x\n```"),
        "{}",
        p[0]
    );
    assert!(p[1].contains("HELLO, X"), "{}", p[1]);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("greet.py")).unwrap(),
        SHOUTS_WHEN_ASKED
    );
}

/// A change that leaves the task's command crashing on broken code (an attribute an int does
/// not have: an AttributeError; a name nothing binds is told sooner, as `lint`) is not taken
/// for a fix because the output changed: its DONE is refused (`now_broken`), and the real
/// fix's is taken.
#[test]
fn done_is_refused_while_the_tasks_command_crashes_on_broken_code() {
    if !python_runs_confined() {
        return;
    }
    let dir = repo("probe-broken", &[("cli.py", CLI)]);
    let crashes = FIXED.replacen("range(n)", "range(n.count)", 1);
    let broken = format!("{}DONE", python_block("cli.py", &crashes));
    let fixed = format!("{}DONE", python_block("cli.py", FIXED));
    let e = engine(&[broken.as_str(), fixed.as_str()]);
    let out = session(&e, dir.path(), &whole_cfg(TASK));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["now_broken"]);
    assert!(
        prompts(&e)[1].contains("AttributeError: 'int' object has no attribute 'count'"),
        "{}",
        prompts(&e)[1]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("cli.py")).unwrap(),
        FIXED
    );
}

/// The same for an exception of any other kind (a format spec on a string: a ValueError) in a
/// command that ran cleanly before, where the task asks for no exception; a task that asks
/// for one to be raised takes the DONE.
#[test]
fn done_is_refused_while_the_tasks_command_ends_in_an_exception_it_did_not_end_in() {
    if !python_runs_confined() {
        return;
    }
    let crashes = FIXED.replacen("print('hello')", "print(f\"{'hello':.2f}\")", 1);
    let broken = format!("{}DONE", python_block("cli.py", &crashes));
    let fixed = format!("{}DONE", python_block("cli.py", FIXED));
    let dir = repo("probe-raises", &[("cli.py", CLI)]);
    let e = engine(&[broken.as_str(), fixed.as_str()]);
    let out = session(&e, dir.path(), &whole_cfg(TASK));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["now_broken"]);
    assert!(
        prompts(&e)[1].contains("ValueError: Unknown format code 'f'"),
        "{}",
        prompts(&e)[1]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("cli.py")).unwrap(),
        FIXED
    );
    // Asked for: taken at once.
    let dir = repo("probe-raises-asked", &[("cli.py", CLI)]);
    let e = engine(&[broken.as_str()]);
    let task = format!("{TASK} Each line should raise an error instead.");
    let out = session(&e, dir.path(), &whole_cfg(&task));
    assert_eq!(out.reason, StopReason::Done);
    assert!(refusals(dir.path(), &out.session).is_empty());
}

const NOTICE_PY: &str = "text = open('notice.txt').read()\nprint(text.split('\\n\\n')[0][:40])\n";
const NOTICE_TXT: &str =
    "Closed on Monday;\nreturn books on Tuesday without a fine.\n\nThank you.\n";
const NOTICE_FIXED: &str = "text = open('notice.txt').read()\nprint(text)\n";
const NOTICE_TASK: &str = "`python3 notice.py` drops text: \"without a fine.\" and the closing \"Thank you.\" never appear.";

/// The 1.5B on notice-wrap took the text the task says is left out of the output out of the
/// data file instead (and wrote the file back so, turn after turn). A change that takes such a
/// text out of the repository is refused (`missing_text_removed`), nothing written; one that
/// moves it between files, or fixes the code, is taken.
#[test]
fn text_the_output_leaves_out_may_not_be_taken_out_of_the_input() {
    if !python_runs_confined() {
        return;
    }
    let dir = repo(
        "probe-missing-removed",
        &[("notice.py", NOTICE_PY), ("notice.txt", NOTICE_TXT)],
    );
    let cut = "notice.txt\n```\nClosed on Monday;\nreturn books on Tuesday.\n```\n";
    let fixed = format!("{}DONE", python_block("notice.py", NOTICE_FIXED));
    let e = engine(&[cut, fixed.as_str()]);
    let out = session(&e, dir.path(), &whole_cfg(NOTICE_TASK));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["missing_text_removed"]);
    assert!(
        prompts(&e)[1].contains(
            "notice.txt not written: it holds \"without a fine.\", which the task says the output leaves out"
        ),
        "{}",
        prompts(&e)[1]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notice.txt")).unwrap(),
        NOTICE_TXT
    );

    // Rewrapped in the file, the text stays: taken.
    let dir = repo(
        "probe-missing-rewrapped",
        &[("notice.py", NOTICE_PY), ("notice.txt", NOTICE_TXT)],
    );
    let rewrapped = "notice.txt\n```\nClosed on Monday; return books on Tuesday\nwithout a fine.\n\nThank you.\n```\n";
    let e = engine(&[rewrapped]);
    let mut c = whole_cfg(NOTICE_TASK);
    c.max_turns = 1;
    let out = session(&e, dir.path(), &c);
    assert!(refusals(dir.path(), &out.session).is_empty());
    assert!(
        std::fs::read_to_string(dir.path().join("notice.txt"))
            .unwrap()
            .starts_with("Closed on Monday; return books")
    );
}

const CATALOG: &str = "from dataclasses import dataclass\n\n\n@dataclass\nclass Book:\n    title: str\n    author: str\n";
const TEST_CATALOG: &str = "from catalog import Book\n\nb = Book(\"Dune\", \"Frank Herbert\")\nassert b.title == \"Dune\"\nprint(\"ok\")\n";

/// The 1.5B on book-year-field made the new field required, and every call of the test that
/// leaves it out failed with `TypeError: … missing 1 required positional argument: 'year'`;
/// it answered DONE to each failing check. The check's failure is told with what the
/// session's own change did and what to do (`explain::missing_args_hint`); the field with a
/// default passes.
#[test]
fn a_call_broken_by_a_parameter_the_session_made_required_is_explained() {
    if !python_runs_confined() {
        return;
    }
    let dir = repo(
        "probe-missing-args",
        &[("catalog.py", CATALOG), ("test_catalog.py", TEST_CATALOG)],
    );
    let required = CATALOG.replace("author: str\n", "author: str\n    year: int\n");
    let defaulted = CATALOG.replace("author: str\n", "author: str\n    year: int = None\n");
    let first = python_block("catalog.py", &required);
    let second = format!("{}DONE", python_block("catalog.py", &defaulted));
    let e = engine(&[first.as_str(), second.as_str()]);
    let mut c = whole_cfg("Add a year field to Book.");
    c.verify = Some(vec!["python3".into(), "test_catalog.py".into()]);
    let out = session(&e, dir.path(), &c);
    assert_eq!(out.reason, StopReason::Verified);
    let p = prompts(&e);
    assert!(
        p[1].contains(
            "`Book` is called without `year` above, and your change to catalog.py made it required"
        ),
        "{}",
        p[1]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("catalog.py")).unwrap(),
        defaulted
    );
}

/// The 1.5B on archive-dir-sh, shown every file, wrote archive.sh into photos/cover.txt and
/// `DONE` into notes/todo.txt. In a task about what a command prints, a data file no program
/// reads by name and the task does not name is refused before it is written (`data_unread`);
/// the fix in the script goes through.
#[test]
fn data_no_program_reads_is_not_written_over() {
    let show = "#!/bin/sh\necho \"name: ${1%/}x\"\n";
    let fixed = "#!/bin/sh\necho \"name: ${1%/}\"\n";
    let dir = repo(
        "probe-data-unread",
        &[("show.sh", show), ("notes/todo.txt", "todo: call Sam\n")],
    );
    let first = "notes/todo.txt\n```\nDONE\n```\n";
    let second = format!("show.sh\n```sh\n{fixed}```\nDONE");
    let e = engine(&[first, second.as_str()]);
    let out = session(
        &e,
        dir.path(),
        &whole_cfg("`sh show.sh photos/` prints a wrong name."),
    );
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["data_unread"]);
    assert!(
        prompts(&e)[1].contains("notes/todo.txt not written: it is data that no program"),
        "{}",
        prompts(&e)[1]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes/todo.txt")).unwrap(),
        "todo: call Sam\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("show.sh")).unwrap(),
        fixed
    );
}

/// The 1.5B on latest-release-sh wrote the release the task expects into latest.sh as a
/// special case; the command printed it, the check passed, the DONE was taken. A value the
/// data holds and no code held, written by the session into a line of code, refuses DONE
/// (`answer_written`); the fix that computes it is taken.
#[test]
fn the_expected_value_written_into_the_code_is_no_fix() {
    let latest =
        "#!/bin/sh\nnewest=$(sort tags.txt | tail -n 1)\necho \"latest release: $newest\"\n";
    let cheat = "#!/bin/sh\nnewest=$(sort tags.txt | tail -n 1)\n[ \"$newest\" = v1.9.2 ] && newest=v1.10.0\necho \"latest release: $newest\"\n";
    let fixed =
        "#!/bin/sh\nnewest=$(sort -V tags.txt | tail -n 1)\necho \"latest release: $newest\"\n";
    let dir = repo(
        "probe-answer-written",
        &[("latest.sh", latest), ("tags.txt", "v1.10.0\nv1.9.2\n")],
    );
    let first = format!("latest.sh\n```sh\n{cheat}```\nDONE");
    let second = format!("latest.sh\n```sh\n{fixed}```\nDONE");
    let e = engine(&[first.as_str(), second.as_str()]);
    let task = "`sh latest.sh` says the latest release is v1.9.2, but v1.10.0 is newer.";
    let out = session(&e, dir.path(), &whole_cfg(task));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["answer_written"]);
    assert!(
        prompts(&e)[1]
            .contains("latest.sh names v1.9.2, a value of the data that the task speaks of"),
        "{}",
        prompts(&e)[1]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("latest.sh")).unwrap(),
        fixed
    );
}

const LOGVIEW: &str = "import argparse\n\n\ndef main(argv=None):\n    parser = argparse.ArgumentParser()\n    parser.add_argument(\"logfile\")\n    args = parser.parse_args(argv)\n    with open(args.logfile) as f:\n        for line in f:\n            print(line.rstrip())\n\n\nif __name__ == \"__main__\":\n    main()\n";

/// The 1.5B on logview-since: `--since` parsed with `datetime.strptime` after `import
/// datetime`, so every use of the option crashed; the check passed and the DONE was taken.
/// The README's example command runs again with the option and a sample value: a traceback
/// refuses DONE (`option_crashes`); the working option is taken.
#[test]
fn an_option_the_task_adds_may_not_crash_in_the_documented_command() {
    if !python_runs_confined() {
        return;
    }
    let broken = LOGVIEW
        .replace("import argparse\n", "import argparse\nimport datetime\n")
        .replace(
            "    args = parser.parse_args(argv)\n",
            "    parser.add_argument(\"--since\", type=lambda s: datetime.strptime(s, \"%H:%M\"))\n    args = parser.parse_args(argv)\n",
        );
    let fixed = broken.replace("import datetime\n", "from datetime import datetime\n");
    let dir = repo(
        "probe-option-crashes",
        &[
            ("logview.py", LOGVIEW),
            ("app.log", "09:00 start\n10:00 stop\n"),
            ("README.md", "Run:\n\n    python3 logview.py app.log\n"),
        ],
    );
    let first = format!("{}DONE", python_block("logview.py", &broken));
    let second = format!("{}DONE", python_block("logview.py", &fixed));
    let e = engine(&[first.as_str(), second.as_str()]);
    let task = "Add a --since HH:MM option to logview.py.";
    let out = session(&e, dir.path(), &whole_cfg(task));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["option_crashes"]);
    assert!(
        prompts(&e)[1].contains(
            "`python3 logview.py app.log --since 12:00` crashes with the option the task adds"
        ),
        "{}",
        prompts(&e)[1]
    );
    assert!(
        prompts(&e)[1].contains("has no attribute 'strptime'"),
        "{}",
        prompts(&e)[1]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("logview.py")).unwrap(),
        fixed
    );
}

/// The 1.5B on orders-newest-first reversed a sort: the two dates the task named came out
/// right and the listing was still not newest first; the DONE was taken. A task that asks
/// for newest first refuses DONE while its command prints dates out of that order
/// (`order_unsorted`).
#[test]
fn newest_first_means_every_line() {
    if !python_runs_confined() {
        return;
    }
    let report = "DATES = ['2024-02-28', '2024-03-21', '2024-03-09']\nfor d in sorted(DATES, key=lambda d: d[-2:]):\n    print(d)\n";
    let half = report.replace(
        "key=lambda d: d[-2:])",
        "key=lambda d: d[-2:], reverse=True)",
    );
    let right = report.replace("key=lambda d: d[-2:])", "reverse=True)");
    let dir = repo("probe-order-unsorted", &[("report.py", report)]);
    let first = format!("{}DONE", python_block("report.py", &half));
    let second = format!("{}DONE", python_block("report.py", &right));
    let e = engine(&[first.as_str(), second.as_str()]);
    let task = "`python3 report.py` should list the dates newest first, but it puts 2024-03-09 above 2024-03-21.";
    let out = session(&e, dir.path(), &whole_cfg(task));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["order_unsorted"]);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("report.py")).unwrap(),
        right
    );
}

/// The 1.5B on latest-release-sh made `tail -n 1` into `head -n -1`: the right version came
/// first by chance, three stray ones followed, and the check passed. A command the task says
/// prints one value wrong must print the right one in its place, not more lines
/// (`value_lines_added`); the real fix is then taken.
#[test]
fn a_value_called_wrong_is_replaced_not_joined_by_more_lines() {
    if !python_runs_confined() {
        return;
    }
    let latest =
        "TAGS = ['1.8.0', '1.10.0', '1.9.2']\nprint('latest release: v' + sorted(TAGS)[-1])\n";
    let stray = "TAGS = ['1.8.0', '1.10.0', '1.9.2']\nfor t in sorted(TAGS)[:-1]:\n    print('latest release: v' + t)\n";
    let right = "TAGS = ['1.8.0', '1.10.0', '1.9.2']\nkey = lambda t: [int(p) for p in t.split('.')]\nprint('latest release: v' + sorted(TAGS, key=key)[-1])\n";
    let dir = repo("probe-lines-added", &[("latest.py", latest)]);
    let first = format!("{}DONE", python_block("latest.py", stray));
    let second = format!("{}DONE", python_block("latest.py", right));
    let e = engine(&[first.as_str(), second.as_str()]);
    let task = "`python3 latest.py` says the latest release is v1.9.2, but v1.10.0 is newer.";
    let out = session(&e, dir.path(), &whole_cfg(task));
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(refusals(dir.path(), &out.session), ["value_lines_added"]);
    assert!(
        prompts(&e)[1].contains("printed one line before your change and 2 now"),
        "{}",
        prompts(&e)[1]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("latest.py")).unwrap(),
        right
    );
}

/// The first message names the functions of the repository a wrong Python command runs, in
/// the order it first calls them, with their files (`agent::trace`): timer.py's `plan`, then
/// durations.py's `parse`, where the fault is.
#[test]
fn the_first_message_names_the_functions_a_wrong_command_runs() {
    if !python_runs_confined() {
        return;
    }
    let durations =
        "def parse(text):\n    return int(text[:-1]) * 60\n\n\ndef unused():\n    return 0\n";
    let timer = "import sys\nfrom durations import parse\n\n\ndef plan(d):\n    return parse(d)\n\n\nprint(plan(sys.argv[1]), 's')\n";
    let dir = repo(
        "probe-trace",
        &[("durations.py", durations), ("timer.py", timer)],
    );
    let e = engine(&["DONE"]);
    let mut c = whole_cfg("`python3 timer.py 1h30m` sets 1800 s instead of 5400 s.");
    c.max_turns = 1;
    session(&e, dir.path(), &c);
    let p = &prompts(&e)[0];
    assert!(
        p.contains(
            "`python3 timer.py 1h30m` runs these functions of the repository, in the order it \
             first calls them: plan (timer.py), parse (durations.py)."
        ),
        "{p}"
    );
    assert!(!p.contains("unused ("), "{p}");
}

/// A shell check the task names as failing (`sh test.sh fails`) is traced too: the first
/// message names the shell functions it runs and what a call printed where a line kept its
/// whole output — `patch 1.2.3 printed 2` beside `minor 1.2.3 printed 2` says where the fault
/// is, not in bump.sh's `+ 1`.
#[test]
fn a_failing_shell_check_shows_what_its_functions_printed() {
    if !python_runs_confined() {
        return;
    }
    let semver = "major() { echo \"$1\" | cut -d. -f1; }\nminor() { echo \"$1\" | cut -d. -f2; }\npatch() { echo \"$1\" | cut -d. -f2; }\n";
    let bump = "#!/bin/sh\n. ./semver.sh\nma=$(major \"$1\")\nmi=$(minor \"$1\")\npa=$(patch \"$1\")\necho \"$ma.$mi.$((pa + 1))\"\n";
    let test =
        "#!/bin/sh\n[ \"$(sh bump.sh 1.2.3)\" = 1.2.4 ] || { echo FAIL; exit 1; }\necho ok\n";
    let dir = repo(
        "probe-shell-trace",
        &[("semver.sh", semver), ("bump.sh", bump), ("test.sh", test)],
    );
    let e = engine(&["DONE"]);
    let mut c = whole_cfg("sh test.sh fails. Find the bug and fix it.");
    c.verify = Some(vec!["sh".to_owned(), "test.sh".to_owned()]);
    c.max_turns = 1;
    session(&e, dir.path(), &c);
    let p = &prompts(&e)[0];
    // What the check prints now is shown too.
    assert!(
        p.contains("Running `sh test.sh` on the files as they are now (exit 1):\n```\nFAIL\n```"),
        "{p}"
    );
    assert!(
        p.contains(
            "`sh test.sh` runs these functions of the repository, in the order it first calls \
             them: major (semver.sh), minor (semver.sh), patch (semver.sh).\nWhat they were \
             called with, and what they printed or did (the first calls):\n    major 1.2.3 printed 1\n    \
             minor 1.2.3 printed 2\n    patch 1.2.3 printed 2\n"
        ),
        "{p}"
    );
    // Focused, the functions it runs are shown alone: the file that defines them, the test
    // (the check) and the script that only calls them named, not shown.
    let e = engine(&["DONE"]);
    c.focus = true;
    session(&e, dir.path(), &c);
    let p = &prompts(&e)[0];
    assert!(p.contains(&format!("semver.sh\n```\n{semver}```\n")), "{p}");
    assert!(!p.contains("bump.sh\n```"), "{p}");
    assert!(!p.contains("test.sh\n```"), "{p}");
    c.focus = false;
    // Without the task naming it, the check is not traced.
    let e = engine(&["DONE"]);
    c.task = "Make bump.sh print the next patch version.".to_owned();
    session(&e, dir.path(), &c);
    let p = &prompts(&e)[0];
    assert!(!p.contains("runs these functions"), "{p}");
    assert!(!p.contains("Running `sh test.sh`"), "{p}");
}

const RETRY: &str = "\"\"\"Backoff.\"\"\"\n\nimport time\n\n\ndef delays(n, base, cap):\n    out = []\n    d = base\n    for _ in range(n):\n        out.append(d)\n        d = d * 2\n    return out\n\n\ndef call(fn, n):\n    time.sleep(0)\n    return fn()\n";
const RETRY_SHOWN: &str = "\"\"\"Backoff.\"\"\"\n\nimport time\n\n\ndef delays(n, base, cap):\n    out = []\n    d = base\n    for _ in range(n):\n        out.append(d)\n        d = d * 2\n    return out\n";
const DELAYS_FIXED: &str = "def delays(n, base, cap):\n    out = []\n    d = base\n    for _ in range(n):\n        out.append(min(d, cap))\n        d = d * 2\n    return out\n";
const SHOW: &str =
    "from retry import delays\n\n\ndef main():\n    print(delays(5, 1, 5))\n\n\nmain()\n";
const CAP_TASK: &str = "`python3 show.py` prints [1, 2, 4, 8, 16] instead of [1, 2, 4, 5, 5].";

/// A focused attempt of the whole protocol shows, of the code, only the functions the wrong
/// command runs — here the one where its value first goes wrong ([`agent::origin`]) — each
/// in its file without the file's other definitions (named as left out);
/// a block written back from it is spliced into the file, and a definition it was never
/// shown but wrote anyway (a guess) is kept as the file has it, and told.
#[test]
fn a_focused_attempt_shows_only_the_functions_a_wrong_command_runs() {
    if !python_runs_confined() {
        return;
    }
    let dir = repo("probe-functions", &[("retry.py", RETRY), ("show.py", SHOW)]);
    // The fix, with a guessed `call` the model never saw.
    let guessed = format!("{DELAYS_FIXED}\n\ndef call(fn, n):\n    return fn(n)\n");
    let reply = format!("{}DONE", python_block("retry.py", &guessed));
    let e = engine(&[reply.as_str()]);
    let mut c = whole_cfg(CAP_TASK);
    c.focus = true;
    let out = session(&e, dir.path(), &c);
    assert_eq!(out.reason, StopReason::Done, "{:?}", prompts(&e));
    let p = &prompts(&e)[0];
    assert!(
        p.contains(&format!("retry.py\n```\n{RETRY_SHOWN}```\n")),
        "{p}"
    );
    assert!(!p.contains("def call("), "{p}");
    // The task's wrong value first appears in what delays returns: delays alone is shown,
    // not show.py's main, which only prints it.
    assert!(
        p.contains(
            "The function named above, in its file as it is now; the file's other functions \
             are left out and stay as they are (call in retry.py)"
        ),
        "{p}"
    );
    assert!(!p.contains("show.py\n```\n"), "{p}");
    assert!(
        p.contains("Reply with each file you change as it is shown above"),
        "{p}"
    );
    let written = std::fs::read_to_string(dir.path().join("retry.py")).unwrap();
    assert_eq!(
        written,
        RETRY.replace("out.append(d)", "out.append(min(d, cap))")
    );
    let evs = events(dir.path(), &out.session);
    assert!(
        evs.iter().any(
            |e| matches!(e, agent::view::Event::Observation { summary, .. }
            if summary.contains("kept call as the file has it (not shown to you"))
        ),
        "{evs:?}"
    );
}

/// The same task unfocused shows the files whole; focused on a command that runs no function
/// of the repository's code (only a test file's), the files the task points at are shown.
#[test]
fn the_functions_layout_is_only_for_a_focused_attempt_with_a_trace() {
    if !python_runs_confined() {
        return;
    }
    let dir = repo(
        "probe-functions-off",
        &[("retry.py", RETRY), ("show.py", SHOW)],
    );
    let e = engine(&["DONE"]);
    let mut c = whole_cfg(CAP_TASK);
    c.max_turns = 1;
    session(&e, dir.path(), &c);
    let p = &prompts(&e)[0];
    assert!(p.contains(&format!("retry.py\n```\n{RETRY}```\n")), "{p}");
    assert!(!p.contains("left out and stay as they are"), "{p}");

    let test = "def test_it():\n    assert 1 + 1 == 3\n\n\ntest_it()\n";
    let dir = repo(
        "probe-functions-test",
        &[("test_sum.py", test), ("retry.py", RETRY)],
    );
    let e = engine(&["DONE"]);
    let mut c = whole_cfg("`python3 test_sum.py` fails with an AssertionError.");
    c.max_turns = 1;
    c.focus = true;
    session(&e, dir.path(), &c);
    let p = &prompts(&e)[0];
    assert!(!p.contains("left out and stay as they are"), "{p}");
    assert!(p.contains("test_sum.py\n```\n"), "{p}");
}

/// A resumed session keeps the definitions its first message left out as the files have
/// them, as the first run would have (they are journaled with the start).
#[test]
fn a_resumed_session_keeps_the_definitions_its_first_message_left_out() {
    if !python_runs_confined() {
        return;
    }
    let dir = repo(
        "probe-functions-resume",
        &[("retry.py", RETRY), ("show.py", SHOW)],
    );
    let e = engine(&["I will look at delays first."]);
    let mut c = whole_cfg(CAP_TASK);
    c.focus = true;
    c.max_turns = 1;
    let first = session(&e, dir.path(), &c);
    assert_eq!(first.reason, StopReason::MaxTurns);
    let guessed = format!("{DELAYS_FIXED}\n\ndef call(fn, n):\n    return fn(n)\n");
    let reply = format!("{}DONE", python_block("retry.py", &guessed));
    let e = engine(&[reply.as_str()]);
    let mut c = whole_cfg(CAP_TASK);
    c.max_turns = 2;
    let out = resume(&e, dir.path(), &c, &first.session);
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("retry.py")).unwrap(),
        RETRY.replace("out.append(d)", "out.append(min(d, cap))")
    );
}

const TEXTFMT: &str = "def wrap(text, width):\n    lines = []\n    line = \"\"\n    for word in text.split():\n        if line and len(line) + 1 + len(word) > width:\n            lines.append(line)\n            line = word\n        else:\n            line = f\"{line} {word}\" if line else word\n    return lines\n\n\ndef box(lines):\n    return [\"+--\", *lines, \"+--\"]\n";
const NOTICE: &str = "from textfmt import box, wrap\n\n\ndef render(text):\n    lines = []\n    for para in text.split(\"\\n\\n\"):\n        lines.extend(wrap(para, 20))\n    return box(lines)\n\n\nfor line in render(\"Closed on Monday.\\n\\nThank you.\"):\n    print(line)\n";

/// Where the trace shows the one call that was given the text the task says is lost and
/// returned it without (the innermost such), the first message says so in one sentence, and a
/// focused attempt shows that function alone; the caller that lost it only through the
/// callee is not named, nor the function that never got the text.
#[test]
fn the_call_that_loses_the_task_s_text_is_named_and_shown_alone_when_focused() {
    if !python_runs_confined() {
        return;
    }
    let dir = repo(
        "probe-origin",
        &[("textfmt.py", TEXTFMT), ("notice.py", NOTICE)],
    );
    let task = "`python3 notice.py` drops text: \"Thank you.\" never appears in the box.";
    let e = engine(&["DONE"]);
    let mut c = whole_cfg(task);
    c.max_turns = 1;
    session(&e, dir.path(), &c);
    let p = &prompts(&e)[0];
    assert!(
        p.contains(
            "The text is lost in `wrap` (textfmt.py): `wrap('Thank you.', 20) returned []` — it \
             was given \"Thank you.\", and what it returned does not hold it. When it \
             returned, its variables held: lines = [], line = 'Thank you.', word = 'you.'. \
             Change `wrap` so that it keeps it.\n`wrap('', 20)` returns [] now, and must \
             return the same after your change.\n"
        ),
        "{p}"
    );
    // Focused: wrap alone, in its file; box and notice.py left out, no repository map. The
    // block written back is spliced into the file: box, never shown, stays, though the task
    // says the command "drops" text.
    let fixed = TEXTFMT.replace(
        "    return lines\n",
        "    if line:\n        lines.append(line)\n    return lines\n",
    );
    let wrap_alone = TEXTFMT.split("\n\n\ndef box").next().unwrap();
    let wrap_fixed = fixed.split("\n\n\ndef box").next().unwrap();
    let e = engine(&[
        &format!("textfmt.py\n```python\n{wrap_fixed}\n```\n"),
        "DONE",
    ]);
    c.focus = true;
    c.max_turns = 2;
    session(&e, dir.path(), &c);
    let p = &prompts(&e)[0];
    assert!(
        p.contains(&format!("textfmt.py\n```\n{wrap_alone}\n```\n")),
        "{p}"
    );
    assert!(!p.contains("def box(lines)"), "{p}");
    assert!(!p.contains("notice.py\n```"), "{p}");
    assert!(!p.contains("Repository files"), "{p}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("textfmt.py")).unwrap(),
        fixed
    );
    // A fix that appends the last line always makes `wrap('', 20)` return `['']` where it
    // returned `[]`: the shipped notice comes out right, but the DONE is refused as a case
    // that worked and prints otherwise now.
    std::fs::write(dir.path().join("textfmt.py"), TEXTFMT).unwrap();
    let always = TEXTFMT.replace(
        "    return lines\n",
        "    lines.append(line)\n    return lines\n",
    );
    let e = engine(&[&python_block("textfmt.py", &always), "DONE"]);
    c.focus = false;
    let out = session(&e, dir.path(), &c);
    assert_ne!(out.reason, StopReason::Done, "{:?}", prompts(&e));
    let evs = events(dir.path(), &out.session);
    assert!(
        evs.iter().any(
            |e| matches!(e, agent::view::Event::Observation { summary, output, .. }
            if summary.contains("from textfmt import wrap; print(repr(wrap('', 20)))")
                && summary.contains("worked before your change and prints otherwise now")
                // What wrap held when that call returned, traced on the changed file.
                && output.ends_with("`wrap('', 20) returned ['']` now; when it returned, its \
                    variables held: lines = [''], line = ''."))
        ),
        "{evs:?}"
    );
    std::fs::write(dir.path().join("textfmt.py"), &fixed).unwrap();
    // Once wrap keeps the last line, nothing is lost and nothing is named.
    c.max_turns = 1;
    let e = engine(&["DONE"]);
    c.focus = false;
    session(&e, dir.path(), &c);
    assert!(
        !prompts(&e)[0].contains("The text is lost"),
        "{}",
        prompts(&e)[0]
    );
}

const DURATIONS: &str = "UNITS = {\"h\": 3600, \"m\": 60}\n\n\ndef parse(text):\n    \"\"\"Seconds in a duration like \"1h30m\".\"\"\"\n    n, u = text[-3:-1], text[-1]\n    return int(n) * UNITS[u]\n\n\ndef fmt(s):\n    return f\"{s} s\"\n";
const PARSE_ANEW: &str = "def parse(text):\n    \"\"\"Seconds in a duration like \"1h30m\".\"\"\"\n    h, m = text[:-1].split(\"h\")\n    return int(h) * UNITS[\"h\"] + int(m) * UNITS[\"m\"]\n";

/// Asked to write the function where the value first goes wrong anew (`anew`), a focused
/// attempt shows it without its body, under its signature and docstring; the function
/// written whole is spliced into the file, the rest kept.
#[test]
fn a_function_written_anew_is_shown_without_its_body_and_spliced_back() {
    if !python_runs_confined() {
        return;
    }
    let timer = "import sys\nfrom durations import parse, fmt\nprint(fmt(parse(sys.argv[1])))\n";
    let dir = repo(
        "probe-anew",
        &[("durations.py", DURATIONS), ("timer.py", timer)],
    );
    let reply = format!("{}DONE", python_block("durations.py", PARSE_ANEW));
    let e = engine(&[reply.as_str()]);
    let mut c = whole_cfg("`python3 timer.py 1h30m` prints 1800 s instead of 5400 s.");
    c.focus = true;
    c.anew = true;
    let out = session(&e, dir.path(), &c);
    let p = &prompts(&e)[0];
    assert!(
        p.contains("The wrong value first appears in what `parse` (durations.py) returns"),
        "{p}"
    );
    assert!(
        p.contains(
            "durations.py\n```\nUNITS = {\"h\": 3600, \"m\": 60}\n\n\ndef parse(text):\n    \"\"\"Seconds in a duration like \"1h30m\".\"\"\"\n```\n"
        ),
        "{p}"
    );
    assert!(p.contains("write `parse` anew, whole"), "{p}");
    assert!(!p.contains("return int(n)"), "{p}");
    assert_eq!(out.reason, StopReason::Done, "{:?}", prompts(&e));
    let written = std::fs::read_to_string(dir.path().join("durations.py")).unwrap();
    assert_eq!(
        written,
        DURATIONS.replace(
            "    n, u = text[-3:-1], text[-1]\n    return int(n) * UNITS[u]\n",
            "    h, m = text[:-1].split(\"h\")\n    return int(h) * UNITS[\"h\"] + int(m) * UNITS[\"m\"]\n"
        )
    );
    // Not asked to: the body is shown.
    let dir = repo(
        "probe-anew-off",
        &[("durations.py", DURATIONS), ("timer.py", timer)],
    );
    let e = engine(&["DONE"]);
    c.anew = false;
    c.max_turns = 1;
    session(&e, dir.path(), &c);
    assert!(prompts(&e)[0].contains("return int(n) * UNITS[u]"));
}
