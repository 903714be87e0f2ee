//! Which functions of the repository a task's wrong command runs, in the order it first calls
//! them: localisation from a symptom, without a model call. A task like "`python3 timer.py
//! 1h30m tea` sets 1800 s" names a script, but the fault is in a function another file defines
//! (`parse` in durations.py); the 1.5B rewrote timer.py turn after turn (timer-durations,
//! every attempt). The first message says what the command runs — `plan (timer.py), parse
//! (durations.py), format_hms (durations.py)` — so the functions that can be at fault are
//! named, with their files.
//!
//! Python commands only (`python3 FILE args`, `python3 -c CODE args`), run once at the start
//! in a scratch copy of the repository, confined as every command is, under a profiler hook
//! that records each call into a function of a file inside the copy. Nothing is traced when
//! the command is no Python, the copy cannot be made, or it calls no function of the
//! repository; the section is then empty.

use crate::probe::Probe;
use crate::workspace::Workspace;

/// At most this many functions are named per command.
const MAX_FUNCTIONS: usize = 12;

/// Where the tracer writes what it saw, in the scratch copy's root.
const CALLS_FILE: &str = ".bellows-calls";

/// Runs the command (`file` or `code` mode, then the target and its arguments) and writes
/// each `path<TAB>function` it first calls, inside the working directory, to the file named
/// by its first argument — also when the command raises or exits.
const TRACER: &str = r#"import os, runpy, sys
out, mode, target = sys.argv[1], sys.argv[2], sys.argv[3]
root = os.getcwd()
seen = {}
def prof(frame, event, arg):
    if event != "call" or len(seen) >= 64:
        return
    co = frame.f_code
    # Functions only (CO_OPTIMIZED): a class body runs as a call of the class's name.
    if not co.co_flags & 1 or co.co_name.startswith("<") or co.co_filename.startswith("<"):
        return
    f = os.path.abspath(co.co_filename)
    if f.startswith(root + os.sep):
        seen.setdefault((os.path.relpath(f, root), co.co_name), None)
if mode == "file":
    sys.argv = [target] + sys.argv[4:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
else:
    sys.argv = ["-c"] + sys.argv[4:]
    sys.path.insert(0, root)
sys.setprofile(prof)
try:
    if mode == "file":
        runpy.run_path(target, run_name="__main__")
    else:
        exec(compile(target, "<string>", "exec"), {"__name__": "__main__"})
finally:
    sys.setprofile(None)
    with open(out, "w") as fh:
        for path, name in seen:
            fh.write(path + "\t" + name + "\n")
"#;

/// The argv that runs `argv` under the tracer, when it is a Python command of a form it
/// knows: `python3 FILE args` or `python3 -c CODE args`.
fn traced_argv(argv: &[String]) -> Option<Vec<String>> {
    let (program, rest) = argv.split_first()?;
    let name = program.rsplit('/').next()?;
    if !(name == "python" || name.starts_with("python3")) {
        return None;
    }
    let (mode, target, args) = match rest {
        [flag, code, args @ ..] if flag == "-c" => ("code", code, args),
        [file, args @ ..] if file.ends_with(".py") && !file.starts_with('-') => {
            ("file", file, args)
        }
        _ => return None,
    };
    let mut out = vec![
        program.clone(),
        "-c".to_owned(),
        TRACER.to_owned(),
        CALLS_FILE.to_owned(),
        mode.to_owned(),
        target.clone(),
    ];
    out.extend(args.iter().cloned());
    Some(out)
}

/// The functions of the repository `argv` calls, `(path, function)` in the order first
/// called; empty when it is no Python command the tracer knows or nothing could be traced.
pub fn calls(ws: &Workspace, argv: &[String]) -> Vec<(String, String)> {
    let Some(traced) = traced_argv(argv) else {
        return Vec::new();
    };
    let Some((_dir, scratch)) = crate::probe::scratch_copy(ws) else {
        return Vec::new();
    };
    if scratch.run(&traced).is_err() {
        return Vec::new();
    }
    let Ok(Some(bytes)) = scratch.read(CALLS_FILE) else {
        return Vec::new();
    };
    String::from_utf8_lossy(&bytes)
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(p, f)| (p.to_owned(), f.to_owned()))
        .collect()
}

/// What one wrong or failing command of the task runs: the repository's functions,
/// `(path, function)` in the order first called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Traced {
    pub command: String,
    pub calls: Vec<(String, String)>,
}

/// Each command the task calls wrong or failing, traced ([`calls`]); those that ran no
/// function of the repository are left out.
pub fn trace(ws: &Workspace, probes: &[Probe]) -> Vec<Traced> {
    probes
        .iter()
        .filter(|p| (p.symptom || p.fails) && !(p.found || p.keep || p.plain || p.sibling))
        .map(|p| Traced {
            command: p.command.clone(),
            calls: calls(ws, &p.argv),
        })
        .filter(|t| !t.calls.is_empty())
        .collect()
}

/// The first message's lines: for each traced command, the functions of the repository it
/// runs. Empty when none was traced.
pub fn section(traced: &[Traced]) -> String {
    let mut out = String::new();
    for t in traced {
        let shown: Vec<String> = t
            .calls
            .iter()
            .take(MAX_FUNCTIONS)
            .map(|(path, f)| format!("{f} ({path})"))
            .collect();
        let more = t.calls.len().saturating_sub(MAX_FUNCTIONS);
        let tail = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        out.push_str(&format!(
            "`{}` runs these functions of the repository, in the order it first calls them: \
             {}{tail}.\n",
            t.command,
            shown.join(", ")
        ));
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn only_python_files_and_code_are_traced() {
        let t = traced_argv(&argv(&["python3", "timer.py", "1h30m"])).unwrap();
        assert_eq!(t[3..], argv(&[CALLS_FILE, "file", "timer.py", "1h30m"]));
        let t = traced_argv(&argv(&["python3", "-c", "import a", "x"])).unwrap();
        assert_eq!(t[4..], argv(&["code", "import a", "x"]));
        for other in [
            &["sh", "run.sh"][..],
            &["python3", "-m", "pytest"],
            &["python3"],
            &["node", "a.py"],
        ] {
            assert!(traced_argv(&argv(other)).is_none(), "{other:?}");
        }
    }

    #[test]
    fn the_functions_a_command_runs_are_named_in_call_order_even_when_it_fails() {
        let (_dir, ws) = crate::testing::repo(&[
            (
                "lib/durations.py",
                "class Unit:\n    pass\n\ndef parse(t):\n    return helper(t) * 60\n\ndef helper(t):\n    return int(t[:-1])\n\ndef unused():\n    pass\n",
            ),
            (
                "timer.py",
                "import sys\nsys.path.insert(0, 'lib')\nfrom durations import parse\n\ndef plan(d):\n    return parse(d)\n\nassert plan(sys.argv[1]) == 90, 'wrong'\n",
            ),
        ]);
        let got = calls(&ws, &argv(&["python3", "timer.py", "1m"]));
        let want = [
            ("timer.py", "plan"),
            ("lib/durations.py", "parse"),
            ("lib/durations.py", "helper"),
        ];
        assert_eq!(
            got,
            want.map(|(p, f)| (p.to_owned(), f.to_owned())).to_vec()
        );
        // `-c` code: the same, from the repository's root.
        let got = calls(
            &ws,
            &argv(&[
                "python3",
                "-c",
                "import sys; sys.path.insert(0, 'lib'); import durations; durations.parse('2m')",
            ]),
        );
        assert_eq!(got.len(), 2, "{got:?}");
        // The copy is thrown away: the repository has no calls file.
        assert!(ws.read(CALLS_FILE).unwrap().is_none());
        // No Python, nothing.
        assert!(calls(&ws, &argv(&["sh", "-c", "echo hi"])).is_empty());
    }
}
