//! Syntax checks of the files a session writes: Python (`compile()` in `python3`, which parses
//! without running anything), shell (`bash -n`) and JSON (parsed here). A small model often
//! writes a file that does not parse — an unclosed bracket, a stray diff line — and says DONE;
//! aider lints every file it edits for the same reason (`--auto-lint`, on by default). The
//! loop appends a failure to the observation of the change that caused it, and refuses a DONE
//! while a changed file fails (`lint` refusals), so no task is called finished on a file that
//! cannot even be loaded.
//!
//! A checker that is not installed checks nothing (never an error), and a file that did not
//! parse before the session changed it is never held against the model
//! ([`Tally::lint_exempt`](crate::record::Tally)).

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one checker may take before it is killed and the file counts as checked.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Parses the source on stdin as Python, without running it; prints `line N: message` and
/// exits 1 when it does not parse.
const PYTHON: &str = r#"import sys
src = sys.stdin.buffer.read()
try:
    compile(src, sys.argv[1], "exec", dont_inherit=True)
except SyntaxError as e:
    text = (e.text or "").strip()
    print("line %s: %s%s" % (e.lineno, e.msg, (": " + text) if text else ""))
    sys.exit(1)
except ValueError as e:
    print(e)
    sys.exit(1)
"#;

/// Which checker a file gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Checker {
    Python,
    Shell,
    Json,
}

/// The checker for `path` with content `bytes`: by extension, else by a `#!` line.
fn checker(path: &str, bytes: &[u8]) -> Option<Checker> {
    let ext = std::path::Path::new(path)
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("py") => return Some(Checker::Python),
        Some("sh" | "bash") => return Some(Checker::Shell),
        Some("json") => return Some(Checker::Json),
        Some(_) => return None,
        None => {}
    }
    let first = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    let first = std::str::from_utf8(first).ok()?.trim_end();
    let interpreter = first.strip_prefix("#!")?;
    let mut words = interpreter.split_whitespace();
    let program = words.next()?.rsplit('/').next()?;
    let program = if program == "env" {
        words.find(|w| !w.starts_with('-'))?
    } else {
        program
    };
    match program {
        "sh" | "bash" | "dash" => Some(Checker::Shell),
        p if p.starts_with("python") => Some(Checker::Python),
        _ => None,
    }
}

/// Why `bytes`, the content of `path`, does not parse: `None` when it parses, when no checker
/// applies, or when the checker cannot run.
pub fn check(path: &str, bytes: &[u8]) -> Option<String> {
    match checker(path, bytes)? {
        Checker::Json => serde_json::from_slice::<serde_json::Value>(bytes)
            .err()
            .map(|e| e.to_string()),
        Checker::Python => run(Command::new("python3").args(["-c", PYTHON, path]), bytes),
        Checker::Shell => run(Command::new("bash").arg("-n"), bytes)
            // bash names itself and its stdin; the line number is what the model can use.
            .map(|m| m.replace("bash: ", "")),
    }
}

/// Runs a checker with `input` on stdin: its first lines of output when it exits non-zero,
/// `None` when it exits 0, cannot start, or runs past [`TIMEOUT`].
pub(crate) fn run(cmd: &mut Command, input: &[u8]) -> Option<String> {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .spawn()
        .ok()?;
    // Small files; a checker that stops reading early only shortens its own input.
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(input);
    }
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let out = child.wait_with_output().ok()?;
                if status.success() {
                    return None;
                }
                let text = String::from_utf8_lossy(&out.stdout).into_owned()
                    + &String::from_utf8_lossy(&out.stderr);
                let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
                return Some(if lines.is_empty() {
                    format!("the checker exited with {status}")
                } else {
                    lines[..lines.len().min(4)].join("\n")
                });
            }
            Ok(None) if start.elapsed() < TIMEOUT => {
                std::thread::sleep(Duration::from_millis(5));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

/// The observation text for `failures` (path, message): what does not parse and what to do.
pub fn describe(failures: &[(String, String)]) -> String {
    failures
        .iter()
        .map(|(path, why)| format!("{path} does not parse: {why}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkers_are_chosen_by_extension_then_by_the_interpreter_line() {
        assert_eq!(checker("a.py", b""), Some(Checker::Python));
        assert_eq!(checker("x/b.SH", b""), Some(Checker::Shell));
        assert_eq!(checker("c.json", b""), Some(Checker::Json));
        assert_eq!(checker("README.md", b"#!/bin/sh\n"), None);
        assert_eq!(checker("run", b"#!/bin/sh\necho"), Some(Checker::Shell));
        assert_eq!(
            checker("tool", b"#!/usr/bin/env -S python3 -u\n"),
            Some(Checker::Python)
        );
        assert_eq!(checker("tool", b"#!/usr/bin/env node\n"), None);
        assert_eq!(checker("notes", b"plain text\n"), None);
    }

    #[test]
    fn json_that_does_not_parse_is_told_with_its_position() {
        assert_eq!(check("c.json", b"{\"a\": 1}\n"), None);
        let why = check("c.json", b"{\"a\": 1,}\n").expect("a trailing comma fails");
        assert!(why.contains("line 1"), "{why}");
    }

    #[test]
    fn python_is_parsed_not_run() {
        if !crate::testing::prereq::python3() {
            return;
        }
        // Running this would fail (and write a file); parsing it succeeds.
        let ok = b"open('/tmp/should-not-exist-bellows-lint', 'w')\nraise SystemExit(3)\n";
        assert_eq!(check("a.py", ok), None);
        assert!(!std::path::Path::new("/tmp/should-not-exist-bellows-lint").exists());
        let why = check("a.py", b"def f(:\n    return 1\n").expect("a syntax error");
        assert!(why.starts_with("line 1:"), "{why}");
        // A diff pasted into a file is the common case.
        let why = check("a.py", b"x = 1\n-y = 2\n+y = 3\n").expect("a diff line");
        assert!(why.starts_with("line 2:"), "{why}");
    }

    #[test]
    fn shell_is_checked_with_bash_n() {
        if !crate::testing::prereq::bash() {
            return;
        }
        assert_eq!(check("a.sh", b"if true; then echo hi; fi\n"), None);
        let why = check("a.sh", b"if true; then\n  echo hi\n").expect("no fi");
        assert!(why.contains("line"), "{why}");
        assert!(!why.starts_with("bash:"), "{why}");
    }
}
