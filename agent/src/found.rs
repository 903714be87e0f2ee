//! The repository's own tests, found when the session has no check. A user who asks
//! `bellows agent "fix the rounding in receipt.py"` without `--verify` still has the
//! repository's `test_receipt.py`; a change that breaks it, or leaves the test that the bug
//! fails still failing, is not finished. The session finds such test scripts by name, runs
//! them as probes ([`crate::probe`]) on a throwaway copy before the first turn and after every
//! change, and at DONE:
//! - a test that passed before the session and fails now refuses it (`test_broken`; this holds
//!   for a test the task names too);
//! - a found test that failed before and still fails refuses it (`still_failing`), unless it
//!   failed for want of something outside the repository (a module not installed, a program
//!   not found): that failure is the machine's, not the task's.
//!
//! A found test that cannot tell anything here — it timed out, or failed for want of a module
//! or program before the session changed anything — is dropped before the first message.
//! The failing ones are then read-only to the session, like the check's files (unless the
//! task names them as files to change): editing a test until it passes proves nothing.
//!
//! What counts as a test script: a `.py` or `.sh` file at the repository's top level or one
//! directory down whose name says test (`test_x.py`, `x_test.py`, `test.sh`, `tests/run_tests.sh`;
//! [`crate::probe::is_test`]). A Python file must do something when run as a script (a
//! top-level `assert`, or a `__main__` block); a pytest-only module would pass without running
//! anything, and one that imports pytest needs what may not be installed. At most
//! [`MAX_FOUND`], shallowest first.

use crate::probe::{Probe, ProbeRun};
use crate::workspace::{EntryKind, Workspace};

/// Test scripts taken from one repository at most.
pub const MAX_FOUND: usize = 2;

/// Files of a repository larger than this are not searched for tests.
const MAX_FILES: usize = 2000;

/// A Python test file larger than this is not read to see whether it runs as a script.
const MAX_TEST_BYTES: u64 = 256 * 1024;

/// The test scripts of `ws` (see the module's documentation), as probes that are not symptoms:
/// `found` is set, and none of them is a command of `named` (the task's own probes).
pub fn tests(ws: &Workspace, named: &[Probe]) -> Vec<Probe> {
    let Ok(entries) = ws.entries("") else {
        return Vec::new();
    };
    if entries.len() > MAX_FILES {
        return Vec::new();
    }
    let mut candidates: Vec<(usize, Vec<String>)> = entries
        .iter()
        .filter(|e| e.kind == EntryKind::File)
        .filter(|e| e.path.matches('/').count() <= 1)
        .filter_map(|e| Some((e.path.matches('/').count(), argv_for(ws, &e.path)?)))
        .filter(|(_, argv)| crate::probe::is_test(argv))
        .filter(|(_, argv)| !named.iter().any(|p| &p.argv == argv))
        .collect();
    // Shallowest first, then by path (entries come sorted by path).
    candidates.sort_by_key(|(depth, _)| *depth);
    candidates
        .into_iter()
        .take(MAX_FOUND)
        .map(|(_, argv)| Probe {
            command: argv.join(" "),
            argv,
            symptom: false,
            fails: false,
            quoted: Vec::new(),
            found: true,
            keep: false,
            plain: false,
            sibling: false,
            error_ok: false,
        })
        .collect()
}

/// How `path` runs as a test script: `python3 PATH` for a Python file that does something
/// as a script, `sh PATH` (or `bash PATH`, when its first line asks for bash) for a shell file.
fn argv_for(ws: &Workspace, path: &str) -> Option<Vec<String>> {
    if path.contains(char::is_whitespace) {
        return None;
    }
    let full = ws.resolve_nofollow(path).ok()?;
    if std::fs::metadata(&full).ok()?.len() > MAX_TEST_BYTES {
        return None;
    }
    if path.ends_with(".py") {
        let text = String::from_utf8(ws.read(path).ok()??).ok()?;
        return runs_as_script(&text).then(|| vec!["python3".to_owned(), path.to_owned()]);
    }
    if path.ends_with(".sh") {
        let text = String::from_utf8(ws.read(path).ok()??).ok()?;
        let shell = match text.lines().next() {
            Some(first) if first.starts_with("#!") && first.contains("bash") => "bash",
            _ => "sh",
        };
        return Some(vec![shell.to_owned(), path.to_owned()]);
    }
    None
}

/// The Python test file a command runs as a script (`python3 test_slug.py`) when it defines
/// tests (`def test_…`, a `TestCase` class) and runs none of them: no `unittest.main()`,
/// `pytest.main(`, `__main__` block, top-level `assert` or top-level call. Such a script
/// exits 0 whatever the code does, so a check made of it passes on anything: the 0.5B wrote
/// test_slug.py as a TestCase without `unittest.main()`, the check `python3 test_slug.py`
/// passed, and the test caught no broken slugify.
pub fn runs_no_tests(ws: &Workspace, argv: &[String]) -> Option<String> {
    let (file, text) = python_test_script(ws, argv)?;
    let defines_tests = text.lines().any(|l| {
        let t = l.trim_start();
        t.starts_with("def test") || (t.starts_with("class ") && t.contains("TestCase"))
    });
    let runs = text.contains("unittest.main(")
        || text.contains("pytest.main(")
        || text.lines().any(|l| {
            let top = !l.starts_with([' ', '\t']);
            let call = l
                .split_once('(')
                .is_some_and(|(head, _)| callee(head.trim()));
            top && (l.starts_with("if __name__")
                || l.starts_with("assert ")
                || (call && !l.starts_with("def ") && !l.starts_with("class ")))
        });
    (defines_tests && !runs).then_some(file)
}

/// The Python test file a command runs as a script when nothing in it can fail: no
/// `assert` (statement or method), no `raise`, no `exit(`, no `fail(`. It exits 0 whatever
/// the code does: the 0.5B wrote test_slug.py as a copy of slug.py, and the check `python3
/// test_slug.py` passed.
pub fn checks_nothing(ws: &Workspace, argv: &[String]) -> Option<String> {
    let (file, text) = python_test_script(ws, argv)?;
    let can_fail = ["assert", "raise", "exit(", "fail(", "Error("]
        .iter()
        .any(|w| text.contains(w));
    (!can_fail).then_some(file)
}

/// The test file a `python` command runs as a script (`python3 test_slug.py`), and its text.
fn python_test_script(ws: &Workspace, argv: &[String]) -> Option<(String, String)> {
    let (program, args) = argv.split_first()?;
    if !program.starts_with("python") {
        return None;
    }
    let file = args.iter().find(|a| !a.starts_with('-'))?;
    if !file.ends_with(".py") || !crate::probe::is_test(argv) {
        return None;
    }
    let text = String::from_utf8(ws.read(file).ok()??).ok()?;
    Some((file.clone(), text))
}

/// A name a call could start with: `main`, `test_a`, `suite.run`.
fn callee(head: &str) -> bool {
    head.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && head
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.'))
}

/// A Python file that tests something when run as `python3 FILE`: a top-level `assert` or a
/// `__main__` block, and no pytest import.
fn runs_as_script(text: &str) -> bool {
    let imports_pytest = text.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with("import pytest") || l.starts_with("from pytest")
    });
    let acts = text
        .lines()
        .any(|l| l.starts_with("assert ") || l.starts_with("if __name__"));
    acts && !imports_pytest
}

/// `probes` and their runs `before`, less the found tests that could not tell anything: one
/// that did not run, ran out of time, or failed for want of something outside the repository
/// (`python3 tests/test_a.py` whose imports need the repository's root on the path). Shown,
/// such a failure would only lead the model to "fix" it. Less, too, the commands without a
/// new option that did not succeed as the repository is, and the scripts run alone that did
/// not succeed or printed nothing ([`Probe::plain`]).
pub fn keep_useful(probes: Vec<Probe>, before: Vec<ProbeRun>) -> (Vec<Probe>, Vec<ProbeRun>) {
    let run = |p: &Probe| before.iter().find(|r| r.command == p.command);
    // A command without a new option must have worked as it was, else it shows nothing to
    // keep ([`Probe::keep`]).
    let useless = |p: &Probe| {
        (p.found && run(p).is_none_or(|r| r.timed_out || crate::probe::machine_failure(r)))
            || (p.keep && run(p).is_none_or(|r| r.timed_out || r.code != Some(0)))
            || (p.plain
                && run(p)
                    .is_none_or(|r| r.timed_out || r.code != Some(0) || r.output.trim().is_empty()))
    };
    let (dropped, kept): (Vec<Probe>, Vec<Probe>) = probes.into_iter().partition(useless);
    let before = before
        .into_iter()
        .filter(|r| !dropped.iter().any(|p| p.command == r.command))
        .collect();
    (kept, before)
}

/// The probes whose output must stay as it was ([`Probe::keep`]), run a second time on the
/// same files: one that prints otherwise (a time, a process id, a random number) tells
/// nothing about a change and is dropped with its run.
pub fn steady(
    ws: &crate::workspace::Workspace,
    probes: Vec<Probe>,
    before: Vec<ProbeRun>,
) -> (Vec<Probe>, Vec<ProbeRun>) {
    let kept: Vec<Probe> = probes.iter().filter(|p| p.keep).cloned().collect();
    if kept.is_empty() {
        return (probes, before);
    }
    let again = crate::probe::run_all(ws, &kept);
    let find = |runs: &[ProbeRun], p: &Probe| runs.iter().find(|r| r.command == p.command).cloned();
    let unsteady = |p: &Probe| {
        p.keep
            && match (find(&before, p), find(&again, p)) {
                (Some(a), Some(b)) => !a.same_as(&b),
                _ => false,
            }
    };
    let (dropped, kept): (Vec<Probe>, Vec<Probe>) = probes.into_iter().partition(unsteady);
    let before = before
        .into_iter()
        .filter(|r| !dropped.iter().any(|p| p.command == r.command))
        .collect();
    (kept, before)
}

/// The tests (named by the task or found) that passed before the session and do not now,
/// each with its run now.
pub fn broken<'r>(probes: &[Probe], before: &[ProbeRun], now: &'r [ProbeRun]) -> Vec<&'r ProbeRun> {
    probes
        .iter()
        .filter(|p| crate::probe::is_test(&p.argv))
        .filter(|p| {
            before
                .iter()
                .any(|b| b.command == p.command && !b.timed_out && b.code == Some(0))
        })
        .filter_map(|p| now.iter().find(|n| n.command == p.command))
        .filter(|n| n.code != Some(0))
        .collect()
}

/// The observation of a DONE refused because a test that passed before fails now
/// (`test_broken`).
pub fn broken_refusal(broken: &[&ProbeRun]) -> crate::act::Observation {
    crate::probe::runs_refusal(
        broken.iter().copied(),
        format!(
            "DONE refused: {} passed before your change and fails now",
            crate::probe::command_names(broken)
        ),
        "read the output, fix the code your change broke, then DONE",
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::testing::repo;

    fn commands(probes: &[Probe]) -> Vec<String> {
        probes.iter().map(|p| p.command.clone()).collect()
    }

    #[test]
    fn test_scripts_are_found_by_name_and_run_as_scripts() {
        let (_d, ws) = repo(&[
            ("money.py", "def f():\n    return 1\n"),
            ("test_money.py", "from money import f\nassert f() == 1\n"),
            ("tests/test_deep.sh", "#!/bin/bash\necho ok\n"),
            ("tests/deeper/test_far.py", "assert True\n"),
            ("latest.py", "assert True\n"),
        ]);
        assert_eq!(
            commands(&tests(&ws, &[])),
            ["python3 test_money.py", "bash tests/test_deep.sh"]
        );
        // A command the task names is its own probe, not a found one.
        let named = tests(&ws, &[]);
        assert_eq!(
            commands(&tests(&ws, &named[..1])),
            ["bash tests/test_deep.sh"]
        );
    }

    #[test]
    fn a_python_test_that_runs_nothing_as_a_script_is_not_taken() {
        let (_d, ws) = repo(&[
            ("test_a.py", "def test_a():\n    assert 1 == 1\n"),
            ("test_b.py", "import pytest\n\nassert True\n"),
            (
                "test_c.py",
                "import unittest\n\nclass T(unittest.TestCase):\n    def test(self):\n        \
                 self.assertTrue(True)\n\nif __name__ == \"__main__\":\n    unittest.main()\n",
            ),
        ]);
        assert_eq!(commands(&tests(&ws, &[])), ["python3 test_c.py"]);
    }

    fn run(command: &str, code: i32, output: &str) -> ProbeRun {
        ProbeRun {
            command: command.to_owned(),
            code: Some(code),
            timed_out: false,
            output: output.to_owned(),
        }
    }

    fn found(command: &str) -> Probe {
        Probe {
            command: command.to_owned(),
            argv: command.split(' ').map(str::to_owned).collect(),
            symptom: false,
            fails: false,
            quoted: Vec::new(),
            found: true,
            keep: false,
            plain: false,
            sibling: false,
            error_ok: false,
        }
    }

    #[test]
    fn a_test_that_passed_before_and_fails_now_is_broken() {
        let probes = [found("python3 test_a.py"), found("sh test.sh")];
        let before = [
            run("python3 test_a.py", 0, "ok"),
            run("sh test.sh", 1, "FAIL"),
        ];
        let now = [
            run("python3 test_a.py", 1, "AssertionError"),
            run("sh test.sh", 1, "FAIL"),
        ];
        let broken_now = broken(&probes, &before, &now);
        assert_eq!(broken_now.len(), 1);
        assert_eq!(broken_now[0].command, "python3 test_a.py");
        assert!(broken(&probes, &before, &before).is_empty());
        let obs = broken_refusal(&broken_now);
        assert!(!obs.ok);
        assert!(
            obs.summary.contains("passed before your change"),
            "{}",
            obs.summary
        );
        assert!(obs.output.contains("AssertionError"), "{}", obs.output);
        // A command that is no test never counts as broken: a change may be asked to make it
        // fail.
        let app = Probe {
            found: false,
            keep: false,
            plain: false,
            sibling: false,
            ..found("python3 app.py")
        };
        let before = [run("python3 app.py", 0, "")];
        let now = [run("python3 app.py", 1, "")];
        assert!(broken(&[app], &before, &now).is_empty());
    }

    #[test]
    fn a_failing_found_test_must_pass_unless_the_machine_lacks_something() {
        let test = found("python3 test_a.py");
        assert!(crate::probe::must_pass(
            &test,
            &[run("python3 test_a.py", 1, "AssertionError")]
        ));
        assert!(!crate::probe::must_pass(
            &test,
            &[run("python3 test_a.py", 0, "ok")]
        ));
        assert!(!crate::probe::must_pass(
            &test,
            &[run(
                "python3 test_a.py",
                1,
                "ModuleNotFoundError: No module named 'numpy'"
            )]
        ));
        // A test the task names follows the task's words, not this rule.
        let named = Probe {
            found: false,
            keep: false,
            plain: false,
            sibling: false,
            ..test.clone()
        };
        assert!(!crate::probe::must_pass(
            &named,
            &[run("python3 test_a.py", 1, "x")]
        ));
    }

    #[test]
    fn a_found_test_that_cannot_run_here_is_dropped() {
        let probes = vec![
            found("python3 tests/test_a.py"),
            found("sh test.sh"),
            found("python3 test_slow.py"),
            Probe {
                found: false,
                keep: false,
                plain: false,
                sibling: false,
                ..found("python3 app.py")
            },
        ];
        let before = vec![
            run(
                "python3 tests/test_a.py",
                1,
                "ModuleNotFoundError: No module named 'app'",
            ),
            run("sh test.sh", 1, "FAIL"),
            ProbeRun {
                timed_out: true,
                code: None,
                ..run("python3 test_slow.py", 0, "")
            },
            run(
                "python3 app.py",
                1,
                "ModuleNotFoundError: No module named 'yaml'",
            ),
        ];
        let (kept, runs) = keep_useful(probes, before);
        assert_eq!(commands(&kept), ["sh test.sh", "python3 app.py"]);
        let ran: Vec<&str> = runs.iter().map(|r| r.command.as_str()).collect();
        assert_eq!(ran, ["sh test.sh", "python3 app.py"]);
    }

    #[test]
    fn a_command_to_keep_that_prints_otherwise_each_run_is_dropped() {
        if !crate::testing::landlock() {
            return;
        }
        let (_dir, ws) = crate::testing::repo(&[
            // A fresh random id per run (a process id would not do: under a PID namespace
            // each command's shell is the same number).
            ("id.sh", "cat /proc/sys/kernel/random/uuid\n"),
            ("same.sh", "echo same\n"),
        ]);
        let derived = |c: &str| Probe {
            found: false,
            keep: true,
            plain: false,
            sibling: true,
            ..found(c)
        };
        let probes = vec![derived("sh id.sh"), derived("sh same.sh")];
        let before = crate::probe::run_all(&ws, &probes);
        assert_eq!(before.len(), 2);
        let (kept, runs) = steady(&ws, probes, before);
        assert_eq!(commands(&kept), ["sh same.sh"]);
        assert_eq!(runs.len(), 1);
    }

    #[test]
    fn a_command_without_a_new_option_is_kept_only_if_it_worked() {
        let derived = |c: &str| Probe {
            found: false,
            keep: true,
            plain: false,
            sibling: false,
            ..found(c)
        };
        let probes = vec![derived("python3 cli.py 3"), derived("python3 greet.py bob")];
        let before = vec![
            run("python3 cli.py 3", 2, "error: unrecognized arguments: 3"),
            run("python3 greet.py bob", 0, "Hello, bob"),
        ];
        let (kept, runs) = keep_useful(probes, before);
        assert_eq!(commands(&kept), ["python3 greet.py bob"]);
        assert_eq!(runs.len(), 1);
    }
}
