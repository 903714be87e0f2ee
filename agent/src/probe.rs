//! The task's own commands. A task written by a person often names the command that shows
//! what is wrong — "`python3 cli.py --count 3` prints only 2 lines", "sh linecount.sh 'a b.txt'
//! fails with …" — and that command is the cheapest evidence there is of whether a change did
//! anything. The session runs each such command (a *probe*) on a throwaway copy of the
//! repository (a command may write files; the session's tree never sees them): before the
//! first turn, where the output joins the first message (the model sees the symptom, not only
//! its description); after every turn that changed files, where the new output is fed back;
//! and at DONE, which is refused (`unchanged_output`) while every command the task calls wrong
//! still prints exactly what it printed before the session changed anything.
//!
//! Which commands: a span in backticks that starts with an interpreter (`python3`, `sh`, `bash`,
//! `node`, …) and names a file of the repository, or starts with `./FILE`; and, outside
//! backticks, an interpreter followed by a repository file (`python3 app.py crashes …`: the
//! command is the two words). Shell syntax (pipes, redirections, `$(…)`) is never run: probes
//! run without a shell. A probe the task calls wrong (a *symptom*) is one whose sentence, or
//! the next, says so: "fails", "crashes", "prints only", "should", … — and not "still" or "keep"
//! in its own sentence ("`python3 app.py` must keep working" is not a symptom). Only symptoms
//! can refuse a DONE, and only when a run before the change finished in time.
//!
//! A symptom the task says *fails* or *crashes*, whose run before the change did (it exited
//! non-zero), also refuses a DONE while it still fails the way the task describes
//! (`still_failing`): a test script (`sh test.sh`, `python3 test_stats.py`) that still exits
//! non-zero, a Python traceback still printed, or an error message the task quotes ("fails
//! with "cat: shopping: No such file or directory"") still in the output. A changed output
//! is not a fixed one: the 1.5B, told `sh test.sh fails`, changed the script so that the
//! test failed on another line, and said DONE (benches/README.md, session 9).

use std::path::Path;
use std::time::Duration;

use crate::workspace::{EntryKind, Workspace};

/// Probes taken from one task at most.
const MAX_PROBES: usize = 3;

/// How long one probe may run.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Characters of a probe's output kept (head and tail).
pub(crate) const OUTPUT_CHARS: usize = 1200;

/// A repository larger than this (files, bytes) is not copied to run probes.
const MAX_COPY_FILES: usize = 2000;
const MAX_COPY_BYTES: u64 = 32 * 1024 * 1024;

/// Programs a probe may start with; a `./FILE` of the repository is the other way.
pub(crate) const INTERPRETERS: &[&str] = &[
    "python", "python3", "sh", "bash", "dash", "node", "ruby", "perl", "php",
];

/// Words that make a sentence naming a command call the command's present behaviour wrong.
const SYMPTOM_WORDS: &[&str] = &[
    "fails",
    "fail",
    "failed",
    "failing",
    "crash",
    "crashes",
    "crashed",
    "error",
    "errors",
    "exception",
    "traceback",
    "wrong",
    "instead",
    "only",
    "nothing",
    "stray",
    "broken",
    "should",
    "incorrect",
    "bug",
    "missing",
    "never",
    "doesn't",
    "isn't",
    "won't",
    "cannot",
    "can't",
];

/// Words that say a command fails: its sentence holding one makes a symptom a failure
/// ([`Probe::fails`]).
const FAIL_WORDS: &[&str] = &[
    "fails", "fail", "failed", "failing", "crash", "crashes", "crashed",
];

/// What Python prints for an uncaught exception.
const TRACEBACK: &str = "Traceback (most recent call last)";

/// What a run prints when it failed for want of something outside the repository.
const MACHINE_FAILURES: &[&str] = &[
    "ModuleNotFoundError: No module named",
    "command not found",
    ": not found",
    "can't open file",
];

/// Words that make a command's sentence ask for its behaviour to stay.
const KEEP_WORDS: &[&str] = &["still", "keep", "keeps", "unchanged", "same"];

/// One command the task names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Probe {
    /// As the task writes it (shown to the model).
    pub command: String,
    pub argv: Vec<String>,
    /// The task calls what it does now wrong.
    pub symptom: bool,
    /// The task says it fails or crashes (a symptom whose sentence says so).
    pub fails: bool,
    /// Texts the task quotes in the command's sentence and the next (in double quotes):
    /// the error a failing command prints, when its run before the change printed one, or
    /// the output the task calls stray ([`stray_printed`]).
    pub quoted: Vec<String>,
    /// Not named by the task: a test script of the repository the session found
    /// ([`crate::found`]).
    pub found: bool,
    /// Not named by the task: one of its commands without an option the task adds and the
    /// program does not know yet ([`without_new_options`]). What it printed before the
    /// session, it must print after (`default_changed`).
    pub keep: bool,
    /// Not named as a command: a script the task names, run alone by its interpreter
    /// ([`crate::targets::scripts_alone`]). If it printed something before the session, it
    /// must print something after (`output_lost`).
    pub plain: bool,
    /// Not named by the task: a command it says fails, run on another file of the
    /// repository ([`siblings`]); also [`Probe::keep`]. What it printed before the session,
    /// it must print after (`regressed`).
    pub sibling: bool,
    /// The task lets the command end in an error once done (`should reject it with a clear
    /// error and exit 1`): a failing command then need not exit 0, only stop crashing.
    pub error_ok: bool,
}

impl Probe {
    /// A command whose behaviour must stay ([`Probe::keep`]), shown as a shell would quote
    /// it; `None` when it cannot be written so.
    pub(crate) fn to_keep(argv: Vec<String>) -> Option<Probe> {
        let command = shlex::try_join(argv.iter().map(String::as_str)).ok()?;
        Some(Probe {
            command,
            argv,
            symptom: false,
            fails: false,
            quoted: Vec::new(),
            found: false,
            keep: true,
            plain: false,
            sibling: false,
            error_ok: false,
        })
    }
}

/// What one probe printed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProbeRun {
    pub command: String,
    /// The exit code; `None` when it timed out or was ended by a signal.
    pub code: Option<i32>,
    pub timed_out: bool,
    /// stdout then stderr, head and tail kept.
    pub output: String,
}

impl ProbeRun {
    /// The same result: exit code and output, byte for byte.
    pub fn same_as(&self, other: &ProbeRun) -> bool {
        self.code == other.code && self.timed_out == other.timed_out && self.output == other.output
    }

    /// `(exit 0)`, `(exit 1)`, `(timed out)`, `(ended by a signal)`.
    pub(crate) fn status(&self) -> String {
        match (self.timed_out, self.code) {
            (true, _) => format!("timed out after {}s", PROBE_TIMEOUT.as_secs()),
            (false, Some(c)) => format!("exit {c}"),
            (false, None) => "ended by a signal".to_owned(),
        }
    }

    /// The output as a fenced block, or a line saying there is none.
    pub(crate) fn shown(&self) -> String {
        if self.output.trim().is_empty() {
            "(no output)".to_owned()
        } else {
            format!("```\n{}\n```", self.output.trim_end())
        }
    }

    /// `$ COMMAND (STATUS)` and the output, as a refusal shows a run.
    pub(crate) fn as_shown(&self) -> String {
        format!("$ {} ({})\n{}", self.command, self.status(), self.shown())
    }
}

/// The commands `task` names that can run in `ws` (see the module's documentation), at most
/// [`MAX_PROBES`], without `skip` (the session's own check, which runs anyway).
pub fn commands(task: &str, ws: &Workspace, skip: Option<&[String]>) -> Vec<Probe> {
    let mut out: Vec<Probe> = Vec::new();
    let mut push = |argv: Vec<String>, command: String, at: usize| {
        if out.len() >= MAX_PROBES
            || skip.is_some_and(|s| s == argv.as_slice())
            || out.iter().any(|p| p.argv == argv)
        {
            return;
        }
        let symptom = is_symptom(task, at) || value_called_wrong(task, &command).is_some();
        let fails = symptom && says_it_fails(task, at);
        let stray = symptom && says_it_is_stray(task, at);
        let error_ok = allows_error(&sentence_words(task, at));
        out.push(Probe {
            command,
            argv,
            symptom,
            fails,
            error_ok,
            quoted: if fails || stray {
                quoted_near(task, at)
            } else {
                Vec::new()
            },
            found: false,
            keep: false,
            plain: false,
            sibling: false,
        });
    };
    // In backticks: the whole span, split as a shell would split words.
    let mut quoted = Vec::new();
    let mut rest = task;
    let mut offset = 0;
    while let Some(open) = rest.find('`') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('`') else { break };
        let span = &after[..close];
        let start = offset + open + 1;
        quoted.push(start..start + span.len());
        if !span.contains('\n')
            && let Some(argv) = runnable(span, ws)
        {
            push(argv, span.to_owned(), start);
        }
        let consumed = open + 1 + close + 1;
        offset += consumed;
        rest = &rest[consumed..];
    }
    // A Python call the task writes, of a function a file of the repository defines.
    for (at, argv, command) in python_calls(task, ws) {
        push(argv, command, at);
    }
    // In prose: an interpreter, then a repository file, and nothing more.
    let words = word_spans(task);
    for pair in words.windows(2) {
        let [(a, first), (_, second)] = pair else {
            continue;
        };
        if quoted.iter().any(|q| q.contains(a)) || !INTERPRETERS.contains(first) {
            continue;
        }
        let file = second.trim_end_matches([',', '.', ';', ':', ')', '!', '?']);
        if is_repo_file(ws, file) {
            push(
                vec![(*first).to_owned(), file.to_owned()],
                format!("{first} {file}"),
                *a,
            );
        }
    }
    // Each command without an option the task adds: the behaviour it must keep.
    let derived = without_new_options(task, ws, &out);
    out.extend(derived);
    let derived = siblings(ws, &out);
    out.extend(derived);
    out
}

/// For each command the task says fails (`sh linecount.sh 'shopping list.txt'` fails with
/// …) and that takes a file of the repository besides its script, the same command on
/// another file beside it with the same extension (`sh linecount.sh todo.txt`): a case that
/// may have worked all along. If it did, a fix leaves what it prints as it was
/// ([`Probe::sibling`], refused as `regressed`): asked to make linecount.sh work with names
/// that contain spaces, the 0.5B rewrote it into a script that no longer printed the quoted
/// error and printed something else for every file. One that does not succeed before the
/// session is dropped after its first run ([`crate::found::keep_useful`]).
fn siblings(ws: &Workspace, probes: &[Probe]) -> Vec<Probe> {
    let mut out: Vec<Probe> = Vec::new();
    for p in probes.iter().filter(|p| p.fails && !p.found && !p.keep) {
        let Some(program) = p.argv.first() else {
            continue;
        };
        // The script: the program itself (`./x.sh`), or an interpreter's first file.
        let first_data = if INTERPRETERS.contains(&program.as_str()) {
            2
        } else {
            1
        };
        let Some((i, file)) = p
            .argv
            .iter()
            .enumerate()
            .skip(first_data)
            .find(|(_, a)| is_repo_file(ws, a))
        else {
            continue;
        };
        let Some(other) = sibling_file(ws, file) else {
            continue;
        };
        let mut argv = p.argv.clone();
        argv[i] = other;
        if probes.iter().chain(&out).any(|q| q.argv == argv) {
            continue;
        }
        out.extend(Probe::to_keep(argv).map(|q| Probe { sibling: true, ..q }));
    }
    out
}

/// The first file (by name) in the directory of `file` with its extension, other than it;
/// `None` when `file` has no extension or no such file is there.
fn sibling_file(ws: &Workspace, file: &str) -> Option<String> {
    let path = Path::new(file);
    let ext = path.extension()?.to_str()?;
    let dir = path
        .parent()
        .map(|d| d.to_string_lossy().into_owned())
        .unwrap_or_default();
    let listed = ws.files(if dir.is_empty() { "." } else { &dir }).ok()?;
    listed.into_iter().find(|f| {
        let p = Path::new(f);
        f != file
            && p.parent()
                .map(|d| d.to_string_lossy().into_owned())
                .unwrap_or_default()
                == dir
            && p.extension().and_then(|e| e.to_str()) == Some(ext)
    })
}

/// Words of a task that add something to a program.
const ADDING_WORDS: &[&str] = &[
    "add",
    "adds",
    "adding",
    "new",
    "support",
    "supports",
    "introduce",
    "implement",
    "accept",
    "accepts",
];

/// For a task that adds something (see [`ADDING_WORDS`]), each of `probes`' commands that
/// passes an option its script does not mention yet (`--shout` in `python3 greet.py --shout
/// bob`, `-c` in `sh todo.sh -c notes.txt`), run without that option: what the program did
/// before the option existed, which adding it must leave as it was. The 1.5B made add-flag-sh
/// count lines also without `-c` and said DONE. A derived command that does not succeed on
/// the repository as it is (the option took a value, now a stray argument) is dropped after
/// its first run ([`crate::found::keep_useful`]).
fn without_new_options(task: &str, ws: &Workspace, probes: &[Probe]) -> Vec<Probe> {
    if !words_of(task)
        .iter()
        .any(|w| ADDING_WORDS.contains(&w.as_str()))
    {
        return Vec::new();
    }
    let mut out: Vec<Probe> = Vec::new();
    for p in probes.iter().filter(|p| !p.found && !p.keep) {
        let script = match p.argv.first() {
            Some(first) if first.starts_with("./") => Some(&first[2..]),
            _ => p
                .argv
                .iter()
                .skip(1)
                .find(|a| is_repo_file(ws, a))
                .map(String::as_str),
        };
        let Some(text) = script
            .and_then(|f| ws.read(f).ok().flatten())
            .map(|b| String::from_utf8_lossy(&b).into_owned())
        else {
            continue;
        };
        let new_option = |a: &String| {
            let name = a.split('=').next().unwrap_or(a);
            name.len() >= 2
                && name.starts_with('-')
                && name != "--"
                && name
                    .trim_start_matches('-')
                    .starts_with(|c: char| c.is_ascii_alphabetic())
                && !text.contains(name)
        };
        let argv: Vec<String> = p.argv.iter().filter(|a| !new_option(a)).cloned().collect();
        if argv.len() == p.argv.len() || out.iter().any(|q| q.argv == argv) {
            continue;
        }
        if probes.iter().any(|q| q.argv == argv) {
            continue;
        }
        out.extend(Probe::to_keep(argv));
    }
    out
}

/// The commands that must keep their behaviour ([`Probe::keep`]) and print otherwise now
/// than before the session: each with its run before and now.
pub fn defaults_changed<'r>(
    probes: &[Probe],
    before: &'r [ProbeRun],
    now: &'r [ProbeRun],
) -> Vec<(&'r ProbeRun, &'r ProbeRun)> {
    printed_otherwise(probes.iter().filter(|p| p.keep && !p.sibling), before, now)
}

/// Each of `probes` that succeeded before the session and prints otherwise now, with its
/// run before and now. A run that reported a failure about its own input or a shell error
/// did not succeed, whatever its status (a loop's script exits as its last command did): a
/// task's illustration `sh count.sh a.txt b.txt`, of files the repository does not have,
/// has no behaviour to keep.
fn printed_otherwise<'p, 'r>(
    probes: impl Iterator<Item = &'p Probe>,
    before: &'r [ProbeRun],
    now: &'r [ProbeRun],
) -> Vec<(&'r ProbeRun, &'r ProbeRun)> {
    probes
        .filter_map(|p| {
            let b = before.iter().find(|r| r.command == p.command)?;
            let n = now.iter().find(|r| r.command == p.command)?;
            let failed = failure_about_input(&p.argv, &b.output).is_some()
                || shell_error(&p.argv, &b.output).is_some();
            (!b.timed_out && b.code == Some(0) && !failed && !n.same_as(b)).then_some((b, n))
        })
        .collect()
}

/// Each (run before, run now) pair shown one after the other, as a refusal's output.
pub(crate) fn before_and_now(pairs: &[(&ProbeRun, &ProbeRun)]) -> String {
    let mut output = String::new();
    for (b, n) in pairs {
        output.push_str(&format!(
            "before your change:\n{}\nnow:\n{}\n",
            b.as_shown(),
            n.as_shown()
        ));
    }
    output.trim_end().to_owned()
}

/// The observation of a DONE refused because a command without the option the task adds
/// does not do what it did (`default_changed`).
pub fn default_refusal(changed: &[(&ProbeRun, &ProbeRun)]) -> crate::act::Observation {
    let output = before_and_now(changed);
    let names: Vec<&ProbeRun> = changed.iter().map(|(_, n)| *n).collect();
    crate::act::Observation::error(
        format!(
            "DONE refused: without the new option, {} does not print what it printed before \
             your change; the task adds an option, and without it the program must work as it did",
            command_names(&names)
        ),
        Some("make the new behaviour happen only when the option is given, then DONE"),
    )
    .with_output(output)
}

/// The commands run on another file than the failing one ([`Probe::sibling`]) that worked
/// before the session and print otherwise now: each with its run before and now.
pub fn regressed<'r>(
    probes: &[Probe],
    before: &'r [ProbeRun],
    now: &'r [ProbeRun],
) -> Vec<(&'r ProbeRun, &'r ProbeRun)> {
    printed_otherwise(probes.iter().filter(|p| p.sibling), before, now)
}

/// The observation of a DONE refused because a case that worked before the session prints
/// otherwise now (`regressed`).
pub fn regressed_refusal(changed: &[(&ProbeRun, &ProbeRun)]) -> crate::act::Observation {
    let names: Vec<&ProbeRun> = changed.iter().map(|(_, n)| *n).collect();
    crate::act::Observation::error(
        format!(
            "DONE refused: {} worked before your change and prints otherwise now; a fix for \
             the failing case must leave the cases that worked as they were",
            command_names(&names)
        ),
        Some("change only what makes the failing case fail, keeping the rest of the program, then DONE"),
    )
    .with_output(before_and_now(changed))
}

/// The calls `task` writes of a top-level Python function of the repository, with literal
/// arguments only (`summary([])`, `mean([1, 2])`, `slug("A b")`; not `square(x)`, whose `x`
/// is no value), each as (offset, argv, command): `python3 -c` importing the function from
/// the file that defines it (one the task names first) and printing what the call returns.
/// "`summary([])` crashes with ZeroDivisionError" then shows the traceback before the first
/// turn, and a DONE that leaves it is refused like any failing command.
fn python_calls(task: &str, ws: &Workspace) -> Vec<(usize, Vec<String>, String)> {
    let py: Vec<String> = ws
        .files("")
        .unwrap_or_default()
        .into_iter()
        .filter(|p| p.ends_with(".py"))
        .collect();
    if py.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let bytes = task.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        if !(bytes[i].is_ascii_alphabetic() || bytes[i] == b'_')
            || (i > 0
                && (bytes[i - 1].is_ascii_alphanumeric() || matches!(bytes[i - 1], b'_' | b'.')))
        {
            i += 1;
            continue;
        }
        while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
            i += 1;
        }
        if bytes.get(i) != Some(&b'(') {
            continue;
        }
        let Some(close) = closing_paren(&task[i..]) else {
            continue;
        };
        let name = &task[start..i];
        let args = &task[i + 1..i + close];
        i += close + 1;
        // `merge()` with nothing between the brackets names the function in prose (`add
        // tests for merge()`); it is not a call the task makes.
        if args.trim().is_empty() || !literal_args(args) {
            continue;
        }
        let Some(file) = defining_file(task, ws, &py, name) else {
            continue;
        };
        let (dir, module) = match file.rsplit_once('/') {
            Some((d, f)) => (d, f),
            None => ("", file.as_str()),
        };
        let module = module.trim_end_matches(".py");
        let path = if dir.is_empty() {
            String::new()
        } else {
            format!("import sys; sys.path.insert(0, {dir:?}); ")
        };
        let code = format!("{path}from {module} import {name}; print({name}({args}))");
        let command = format!("python3 -c '{code}'");
        out.push((
            start,
            vec!["python3".to_owned(), "-c".to_owned(), code],
            command,
        ));
    }
    out
}

/// The length of `s` (which starts with `(`) up to its matching `)`, quotes respected; `None`
/// when it does not close on the same line.
fn closing_paren(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    for (k, c) in s.char_indices() {
        match (quote, c) {
            (_, '\n') => return None,
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '(' | '[' | '{') => depth += 1,
            (None, ')' | ']' | '}') => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return (c == ')').then_some(k);
                }
            }
            _ => {}
        }
    }
    None
}

/// Arguments made of literals only: numbers, strings, lists, tuples and dicts of them,
/// `True`, `False`, `None` — nothing that names a variable or calls anything.
fn literal_args(args: &str) -> bool {
    let mut rest = String::new();
    let mut quote: Option<char> = None;
    for c in args.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, c) => rest.push(c),
        }
    }
    if quote.is_some() {
        return false;
    }
    rest.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .all(|w| {
            matches!(w, "True" | "False" | "None")
                || w.chars().all(|c| c.is_ascii_digit() || c == '_')
                || (w.starts_with(|c: char| c.is_ascii_digit())
                    && w.chars().all(|c| c.is_ascii_alphanumeric()))
        })
        && rest
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || " \t_[]{}(),:.-+".contains(c))
}

/// The Python file of `py` that defines `name` at its top level (`def name(`): one the task
/// names if any does, else the only one.
fn defining_file(task: &str, ws: &Workspace, py: &[String], name: &str) -> Option<String> {
    let def = format!("def {name}(");
    let defines: Vec<&String> = py
        .iter()
        .filter(|p| {
            ws.read(p).ok().flatten().is_some_and(|b| {
                String::from_utf8_lossy(&b)
                    .lines()
                    .any(|l| l.starts_with(&def))
            })
        })
        .collect();
    defines
        .iter()
        .find(|p| task.contains(p.as_str()))
        .or_else(|| (defines.len() == 1).then(|| &defines[0]))
        .map(|p| (*p).clone())
}

/// The words of `text` split at whitespace, each with its byte offset.
pub(crate) fn word_spans(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (c.is_whitespace(), start) {
            (true, Some(s)) => {
                out.push((s, &text[s..i]));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, &text[s..]));
    }
    out
}

/// `span` split into argv when it is a command a probe may run.
fn runnable(span: &str, ws: &Workspace) -> Option<Vec<String>> {
    // Shell syntax needs a shell, and a probe runs without one.
    if span.contains(['|', '>', '<', ';', '&', '$', '`', '*', '?']) {
        return None;
    }
    let argv = shlex::split(span.trim())?;
    let (program, args) = argv.split_first()?;
    let ok = if let Some(file) = program.strip_prefix("./") {
        is_repo_file(ws, file)
    } else {
        INTERPRETERS.contains(&program.as_str()) && args.iter().any(|a| is_repo_file(ws, a))
    };
    ok.then_some(argv)
}

/// `rel` is a regular file inside the repository.
pub(crate) fn is_repo_file(ws: &Workspace, rel: &str) -> bool {
    !rel.is_empty()
        && !rel.starts_with('-')
        && !Path::new(rel).is_absolute()
        && !rel.split('/').any(|c| c == "..")
        && ws
            .resolve_nofollow(rel)
            .ok()
            .and_then(|p| std::fs::symlink_metadata(p).ok())
            .is_some_and(|m| m.is_file())
}

/// The sentence holding byte `at` of `task`, and the next, call what happens wrong, and the
/// sentence itself does not ask for it to stay.
fn is_symptom(task: &str, at: usize) -> bool {
    let bounds = sentence_bounds(task);
    let Some(k) = bounds.iter().position(|r| r.contains(&at)) else {
        return false;
    };
    let own = words_of(&task[bounds[k].clone()]);
    if own.iter().any(|w| KEEP_WORDS.contains(&w.as_str()))
        || own
            .windows(2)
            .any(|p| p == ["as", "now"] || p == ["as", "before"])
    {
        return false;
    }
    let next = bounds
        .get(k + 1)
        .map(|r| words_of(&task[r.clone()]))
        .unwrap_or_default();
    own.iter()
        .chain(&next)
        .any(|w| SYMPTOM_WORDS.contains(&w.as_str()))
        || own
            .windows(2)
            .chain(next.windows(2))
            .any(|p| p == ["does", "not"] || p == ["is", "not"])
}

/// The words of the sentence holding byte `at` of `task`, and of the next.
fn sentence_words(task: &str, at: usize) -> Vec<String> {
    let bounds = sentence_bounds(task);
    let Some(k) = bounds.iter().position(|r| r.contains(&at)) else {
        return Vec::new();
    };
    let mut words = words_of(&task[bounds[k].clone()]);
    if let Some(r) = bounds.get(k + 1) {
        words.extend(words_of(&task[r.clone()]));
    }
    words
}

/// The sentence holding byte `at` of `task`, or the next, says the command fails or crashes.
fn says_it_fails(task: &str, at: usize) -> bool {
    sentence_words(task, at)
        .iter()
        .any(|w| FAIL_WORDS.contains(&w.as_str()))
}

/// The words of a command's sentences (`words`, lower-cased) let it end in an error once
/// the work is done: the task asks for a refusal, a usage message or an exit status other
/// than 0 (`should reject the file with a clear error`, `exit 2`, `non-zero`). Without
/// them, a command the task says fails must end with status 0 ([`still_failing`]).
fn allows_error(words: &[String]) -> bool {
    const SINGLE: &[&str] = &[
        "nonzero",
        "reject",
        "rejects",
        "rejected",
        "rejecting",
        "refuse",
        "refuses",
        "refused",
        "refusing",
        "usage",
        "warn",
        "warns",
        "warning",
    ];
    const BEFORE_ERROR: &[&str] = &[
        "an",
        "clear",
        "helpful",
        "friendly",
        "proper",
        "readable",
        "meaningful",
        "short",
    ];
    // Said of what should be, not of what happens now (`it fails with exit 1`).
    const DESIRE: &[&str] = &[
        "should", "must", "instead", "want", "wanted", "expect", "expected", "need", "needs",
        "ought", "rather", "supposed",
    ];
    let desire = words.iter().any(|w| DESIRE.contains(&w.as_str()));
    let status = |w: &str| w.parse::<u32>().is_ok_and(|n| n != 0);
    words.iter().any(|w| SINGLE.contains(&w.as_str()))
        || desire
            && words.windows(2).any(|p| {
                let (a, b) = (p[0].as_str(), p[1].as_str());
                (matches!(a, "exit" | "exits" | "status" | "code") && status(b))
                    || (a == "non" && b == "zero")
                    || (a == "error" && matches!(b, "message" | "messages"))
                    || (BEFORE_ERROR.contains(&a) && matches!(b, "error" | "errors"))
            })
}

/// Words that call output unwanted: the texts a sentence holding one quotes are what the
/// command must stop printing ([`stray_printed`]).
const STRAY_WORDS: &[&str] = &[
    "stray",
    "extra",
    "unwanted",
    "spurious",
    "superfluous",
    "leftover",
    "debug",
];

/// The sentence holding byte `at` of `task`, or the next, calls some output unwanted.
fn says_it_is_stray(task: &str, at: usize) -> bool {
    sentence_words(task, at)
        .iter()
        .any(|w| STRAY_WORDS.contains(&w.as_str()))
}

/// `output` holds `quoted`: as it is, or — for a text ending in `...` or `…`, which stands
/// for what varies (`"words: ..."`) — as the start of one of its lines (its part before the
/// dots, at least three characters).
pub(crate) fn prints(output: &str, quoted: &str) -> bool {
    let pattern = quoted
        .strip_suffix("...")
        .or_else(|| quoted.strip_suffix('…'))
        .map(str::trim);
    match pattern {
        Some(prefix) if prefix.chars().count() >= 3 => {
            output.lines().any(|l| l.trim_start().starts_with(prefix))
        }
        Some(_) => false,
        None => output.contains(quoted),
    }
}

/// The commands whose output the task calls stray or unwanted and quotes
/// ([`STRAY_WORDS`]), that printed a quoted text before and still print it: each with the
/// text. The 0.5B, told `python3 report.py` prints two stray lines ("words: ..." and
/// "longest: ..."), renamed the first line's label and said DONE.
pub fn stray_printed<'r>(
    probes: &[Probe],
    before: &[ProbeRun],
    now: &'r [ProbeRun],
) -> Vec<(&'r ProbeRun, String)> {
    probes
        .iter()
        .filter(|p| p.symptom && !p.fails && !p.quoted.is_empty())
        .filter_map(|p| {
            let b = before.iter().find(|r| r.command == p.command)?;
            let n = now.iter().find(|r| r.command == p.command)?;
            let q = p
                .quoted
                .iter()
                .find(|q| prints(&b.output, q) && prints(&n.output, q))?;
            Some((n, q.clone()))
        })
        .collect()
}

/// The observation of a DONE refused because a command still prints what the task calls
/// stray (`stray_output`).
pub fn stray_refusal(stray: &[(&ProbeRun, String)]) -> crate::act::Observation {
    let said: Vec<String> = stray
        .iter()
        .map(|(r, q)| format!("`{}` still prints \"{q}\"", r.command))
        .collect();
    runs_refusal(
        stray.iter().map(|(r, _)| *r),
        format!(
            "DONE refused: {}, which the task says must not be printed",
            said.join("; ")
        ),
        "change the code so that this is no longer printed (the task says why it is), then \
         DONE",
    )
}

/// The double-quoted texts (straight or curly quotes, 6 characters or more) of the sentence
/// holding byte `at` of `task` and of the next.
pub(crate) fn quoted_near(task: &str, at: usize) -> Vec<String> {
    let bounds = sentence_bounds(task);
    let Some(k) = bounds.iter().position(|r| r.contains(&at)) else {
        return Vec::new();
    };
    let end = bounds.get(k + 1).unwrap_or(&bounds[k]).end;
    let text = &task[bounds[k].start..end];
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find(['"', '\u{201c}']) {
        let after = &rest[open + rest[open..].chars().next().map_or(1, char::len_utf8)..];
        let Some(close) = after.find(['"', '\u{201d}']) else {
            break;
        };
        let inner = after[..close].trim();
        if inner.chars().count() >= 6 {
            out.push(inner.to_owned());
        }
        rest = &after[close + after[close..].chars().next().map_or(1, char::len_utf8)..];
    }
    out
}

/// The text of the sentence of `task` that writes `probe`'s command and of the next one, when
/// the command is one the task names as a symptom (not a found test or a derived run).
pub(crate) fn symptom_sentences<'t>(task: &'t str, probe: &Probe) -> Option<&'t str> {
    if !probe.symptom || probe.found || probe.keep || probe.plain || probe.sibling {
        return None;
    }
    let at = task.find(&probe.command)?;
    let bounds = sentence_bounds(task);
    let k = bounds.iter().position(|r| r.contains(&at))?;
    let end = bounds.get(k + 1).unwrap_or(&bounds[k]).end;
    Some(&task[bounds[k].start..end])
}

/// Words by which a task says what a command prints now.
const SAYS_WORDS: &[&str] = &[
    "says", "prints", "gives", "shows", "returns", "outputs", "reports", "sets", "writes",
    "displays", "answers", "computes",
];

/// Words that end what a task says a command prints now and call it wrong.
const BUT_WORDS: &[&str] = &["but", "instead", "although", "though", "yet", "whereas"];

/// The words of the sentence that writes `command`, after it, with the positions of the
/// first word that says what it prints ([`SAYS_WORDS`]) and the first `but`/`instead` after
/// that ([`BUT_WORDS`]).
fn says_but<'t>(task: &'t str, command: &str) -> Option<(Vec<&'t str>, usize, usize)> {
    let at = task.find(command)?;
    let sentence = sentence_bounds(task)
        .into_iter()
        .find(|r| r.contains(&at))?;
    let words: Vec<&str> = word_spans(&task[at + command.len()..sentence.end])
        .into_iter()
        .map(|(_, w)| w)
        .collect();
    let says = words
        .iter()
        .position(|w| SAYS_WORDS.contains(&plain(w).as_str()))?;
    let but = (says + 1..words.len()).find(|&k| BUT_WORDS.contains(&plain(words[k]).as_str()))?;
    Some((words, says, but))
}

/// A word without the punctuation around it, in lower case.
fn plain(w: &str) -> String {
    w.trim_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase()
}

/// The value the task says `command` prints now and calls wrong: after a word that says so
/// ([`SAYS_WORDS`]), the run of words with a digit (joined, outer brackets and punctuation
/// off) right before `but`/`instead` ([`BUT_WORDS`]), else a path-like word there (a `/` or
/// a `.`: `writes backups/.tar instead of …`), in the sentence that writes the
/// command ([`crate::expect::wrong_value`]). Such a sentence makes the command a symptom by
/// itself ([`commands`]: `` `sh latest.sh` says the latest release is v1.9.2, but v1.10.0 is
/// newer`` holds none of the words that mark one otherwise).
pub(crate) fn value_called_wrong(task: &str, command: &str) -> Option<String> {
    let (words, says, but) = says_but(task, command)?;
    let run: Vec<&str> = words[says + 1..but]
        .iter()
        .rev()
        .take_while(|w| w.chars().any(|c| c.is_ascii_digit()))
        .copied()
        .collect();
    let mut text = run.into_iter().rev().collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        // No number: a path or file name right before `but`/`instead` is the value
        // (`writes backups/.tar instead of backups/photos.tar`; the 1.5B on archive-dir-sh
        // made the script print more around `backups/.tar`, and no rule saw it stay).
        let last = words[says + 1..but].last().copied().unwrap_or_default();
        let word = last
            .trim_end_matches([',', ';', ':', '.'])
            .trim_matches(['"', '`', '\'']);
        let path_like = word.contains(['/', '.'])
            && word.chars().any(char::is_alphanumeric)
            && !word.starts_with('(');
        if path_like {
            text = word.to_owned();
        }
    }
    let text = text
        .trim_end_matches([',', ';', ':', '.'])
        .trim_matches(['"', '`', '\''])
        .strip_prefix('(')
        .and_then(|t| t.strip_suffix(')'))
        .map_or(text.trim_end_matches([',', ';', ':', '.']), |t| t)
        .trim_matches(['"', '`', '\''])
        .to_owned();
    (!text.is_empty()).then_some(text)
}

/// Every value in what the task says `command` prints now and calls wrong (the words with a
/// digit between the word that says so and `but`/`instead`, punctuation and brackets off):
/// `sets the timer for 1800 s (0:30:00) instead of …` gives `1800` and `0:30:00`, where
/// [`value_called_wrong`] gives the last run only. Empty when the task calls none wrong.
pub(crate) fn values_called_wrong(task: &str, command: &str) -> Vec<String> {
    let Some((words, says, but)) = says_but(task, command) else {
        return Vec::new();
    };
    words[says + 1..but]
        .iter()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .filter(|w| w.chars().any(|c| c.is_ascii_digit()))
        .map(str::to_owned)
        .collect()
}

/// The value the task gives as right where it calls `command`'s value wrong
/// ([`value_called_wrong`]): the word right after `but`/`instead` (after `of`, `it is`), when
/// it has a digit or is a path. `` `sh latest.sh` says the latest release is v1.9.2, but
/// v1.10.0 is newer`` gives `v1.10.0`; `writes backups/.tar instead of backups/photos.tar`
/// gives `backups/photos.tar`; `… but it puts 2024-03-09 above …` gives nothing (what follows
/// `but` there is the wrong behaviour, not a value).
pub(crate) fn value_called_right(task: &str, command: &str) -> Option<String> {
    value_called_wrong(task, command)?;
    let (words, _, but) = says_but(task, command)?;
    let next = words[but + 1..]
        .iter()
        .find(|w| !matches!(plain(w).as_str(), "of" | "it" | "is" | "should" | "be"))?;
    let word = next
        .trim_end_matches([',', ';', ':', '.', '!', '?'])
        .trim_matches(['"', '`', '\'', '(', ')']);
    let value = word.chars().any(|c| c.is_ascii_digit())
        || (word.contains(['/', '.']) && word.chars().any(char::is_alphanumeric));
    (value && !word.is_empty()).then(|| word.to_owned())
}

/// Byte ranges of the sentences of `text`: a `.`, `!` or `?` followed by whitespace (not the
/// dot of `cli.py`), or a line break, ends one.
pub(crate) fn sentence_bounds(text: &str) -> Vec<std::ops::Range<usize>> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_code = false;
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'`' {
            in_code = !in_code;
        }
        let end = b == b'\n'
            || (!in_code
                && matches!(b, b'.' | b'!' | b'?')
                && bytes.get(i + 1).is_none_or(|n| n.is_ascii_whitespace()));
        if end {
            out.push(start..i + 1);
            start = i + 1;
        }
    }
    if start < text.len() {
        out.push(start..text.len());
    }
    out
}

/// The lower-cased words of `text` (letters and apostrophes).
fn words_of(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Runs every probe on a throwaway copy of `ws`'s files (made once, removed after), confined
/// as `ws` confines its commands. Empty when there is nothing to run, the repository is too
/// large to copy, or the copy or the confinement fails: probes are evidence, never a gate
/// that stops a session.
pub fn run_all(ws: &Workspace, probes: &[Probe]) -> Vec<ProbeRun> {
    if probes.is_empty() {
        return Vec::new();
    }
    let Some((_dir, scratch)) = scratch_copy(ws) else {
        return Vec::new();
    };
    probes
        .iter()
        .filter_map(|p| {
            let out = scratch.run(&p.argv).ok()?;
            Some(ProbeRun {
                command: p.command.clone(),
                code: out.code,
                timed_out: out.timed_out,
                output: crate::observe::head_tail(&out.output, OUTPUT_CHARS, None),
            })
        })
        .collect()
}

/// A copy of `ws`'s regular files (modes kept; links, `.git` and `.bellows` left out) in a
/// fresh temporary directory, as a workspace confined like `ws`.
pub(crate) fn scratch_copy(ws: &Workspace) -> Option<(tempfile::TempDir, Workspace)> {
    let entries = ws.entries("").ok()?;
    if entries.len() > MAX_COPY_FILES {
        return None;
    }
    let dir = tempfile::Builder::new()
        .prefix("bellows-probe-")
        .tempdir()
        .ok()?;
    let mut total = 0u64;
    for e in entries.iter().filter(|e| e.kind == EntryKind::File) {
        let from = ws.resolve_nofollow(&e.path).ok()?;
        let meta = std::fs::symlink_metadata(&from).ok()?;
        total += meta.len();
        if total > MAX_COPY_BYTES {
            return None;
        }
        let to = dir.path().join(&e.path);
        std::fs::create_dir_all(to.parent()?).ok()?;
        std::fs::copy(&from, &to).ok()?;
    }
    let mut scratch = Workspace::new(dir.path()).ok()?;
    scratch.confinement = ws.confinement;
    scratch.run_timeout = PROBE_TIMEOUT.min(ws.run_timeout);
    scratch.output_cap = ws.output_cap;
    Some((dir, scratch))
}

/// The start context's section: what each command prints on the repository as it is.
pub fn before_section(runs: &[ProbeRun]) -> String {
    let mut out = String::new();
    for r in runs {
        out.push_str(&format!(
            "Running `{}` on the files as they are now ({}):\n{}\n",
            r.command,
            r.status(),
            r.shown()
        ));
    }
    out
}

/// `message` with `section` after the first line that holds `task` (the task as the first
/// message states it), or at its end.
pub fn insert_after_task(message: &str, task: &str, section: &str) -> String {
    if section.is_empty() {
        return message.to_owned();
    }
    let at = message
        .find(task.trim())
        .map(|i| i + task.trim().len())
        .map(|i| message[i..].find('\n').map_or(message.len(), |n| i + n + 1));
    match at {
        Some(i) => format!(
            "{}\n{}\n{}",
            message[..i].trim_end_matches('\n'),
            section.trim_end(),
            &message[i..]
        ),
        None => format!("{}\n\n{}", message.trim_end(), section.trim_end()),
    }
}

/// The symptoms whose output is as it was before the session changed anything: `Some`
/// (non-empty) only when every symptom with a finished run before is unchanged now.
pub fn unchanged_symptoms<'r>(
    probes: &[Probe],
    before: &[ProbeRun],
    now: &'r [ProbeRun],
) -> Option<Vec<&'r ProbeRun>> {
    let mut same = Vec::new();
    for p in probes.iter().filter(|p| p.symptom) {
        let Some(b) = before.iter().find(|r| r.command == p.command) else {
            continue;
        };
        if b.timed_out {
            continue;
        }
        let n = now.iter().find(|r| r.command == p.command)?;
        if !n.same_as(b) {
            return None;
        }
        same.push(n);
    }
    (!same.is_empty()).then_some(same)
}

/// The failing symptoms that still fail (see the module's documentation): each with why,
/// for those whose run before the change finished and failed.
pub fn still_failing<'r>(
    probes: &[Probe],
    before: &[ProbeRun],
    now: &'r [ProbeRun],
) -> Vec<(&'r ProbeRun, String)> {
    let mut out = Vec::new();
    for p in probes.iter().filter(|p| p.fails || must_pass(p, before)) {
        let Some(b) = before.iter().find(|r| r.command == p.command) else {
            continue;
        };
        // A loop's script exits as its last command did: an error the task quotes, printed
        // before, is the failure even when the exit code was 0.
        let quoted_before = p.quoted.iter().any(|q| b.output.contains(q.as_str()));
        if b.timed_out || (b.code == Some(0) && !quoted_before) {
            continue;
        }
        let Some(n) = now.iter().find(|r| r.command == p.command) else {
            continue;
        };
        let why = if p.found && n.code != Some(0) {
            Some(format!(
                "the repository's test failed before your change and still fails ({})",
                n.status()
            ))
        } else if is_test(&p.argv) && n.code != Some(0) {
            Some(format!("the test still fails ({})", n.status()))
        } else if b.output.contains(TRACEBACK) && n.output.contains(TRACEBACK) {
            Some("it still ends in a Python traceback".to_owned())
        } else {
            p.quoted
                .iter()
                .filter(|q| b.output.contains(q.as_str()))
                .find_map(|q| {
                    // The error itself, as another program words it too: `cat: shopping: No
                    // such file or directory` after `wc -l < "$f"` reads `sh: cannot open
                    // shopping: No such file or directory` (the 1.5B's wrong fix on
                    // quote-filenames-sh).
                    if n.output.contains(q.as_str()) {
                        return Some(q.clone());
                    }
                    error_tail_in(error_tail(q), &n.output)
                })
                .map(|t| format!("it still prints \"{t}\""))
                .or_else(|| {
                    shell_error(&p.argv, &n.output)
                        .map(|l| format!("it now stops on a shell error: \"{}\"", l.trim_end()))
                })
                .or_else(|| {
                    failure_about_input(&p.argv, &n.output)
                        .map(|l| format!("it still reports a failure: \"{}\"", l.trim()))
                })
                .or_else(|| {
                    // The general rule under the particular ones above: a command the task
                    // says fails must end well once the work is done — no traceback, and
                    // status 0 unless the task lets it end in an error. Changing how it
                    // fails (another message, another input) is not fixing it.
                    if !p.fails {
                        None
                    } else if n.output.contains(TRACEBACK) {
                        Some("it still ends in a Python traceback".to_owned())
                    } else if !p.error_ok && n.code != Some(0) {
                        Some(format!("it still fails ({})", n.status()))
                    } else {
                        None
                    }
                })
        };
        if let Some(why) = why {
            out.push((n, why));
        }
    }
    out
}

/// The part of a quoted error message after its last `: ` (the reason, as `strerror` and
/// most tools put it last), when it is long enough to name an error: `No such file or
/// directory`, `Permission denied`. Empty otherwise.
/// Phrases with which programs (and small models' rewrites of them) report a failure.
const FAILURE_PHRASES: &[&str] = &[
    "not found",
    "no such file",
    "cannot open",
    "can't open",
    "does not exist",
    "doesn't exist",
    "permission denied",
    "failed to",
    "unable to",
    "illegal",
    "invalid",
    "unbound variable",
    "syntax error",
];

/// A line of `output` that reports a failure ([`FAILURE_PHRASES`]) about one of the command's
/// arguments (a word of three letters or more of one, the script's own name aside): the 1.5B
/// made linecount.sh print `File not found: shopping` for `'shopping list.txt'`, exit 0, and
/// said DONE.
fn failure_about_input<'o>(argv: &[String], output: &'o str) -> Option<&'o str> {
    let words: Vec<String> = argv
        .iter()
        .skip(2)
        .filter(|a| !a.starts_with('-'))
        .flat_map(|a| {
            a.split(|c: char| !c.is_alphanumeric())
                .filter(|w| w.chars().count() >= 3)
                .map(str::to_lowercase)
                .collect::<Vec<_>>()
        })
        .collect();
    output.lines().find(|l| {
        let lower = l.to_lowercase();
        FAILURE_PHRASES.iter().any(|f| lower.contains(f))
            && lower
                .split(|c: char| !c.is_alphanumeric())
                .any(|w| words.iter().any(|x| x == w))
    })
}

/// A line of `output` in which the shell reports an error in the command's script
/// (`linecount.sh: 6: [: Illegal number:` from dash, `./x.sh: line 6: …` from bash): the
/// 1.5B's rewrite of quote-filenames-sh no longer printed the quoted error, printed this for
/// the file with spaces, and exited 0.
fn shell_error<'o>(argv: &[String], output: &'o str) -> Option<&'o str> {
    let script = argv.iter().take(2).find(|a| a.ends_with(".sh"))?;
    output.lines().find(|l| {
        let Some(rest) = l
            .strip_prefix(script.as_str())
            .and_then(|r| r.strip_prefix(": "))
        else {
            return false;
        };
        let rest = rest.strip_prefix("line ").unwrap_or(rest);
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        digits > 0 && rest[digits..].starts_with(':')
    })
}

fn error_tail(quoted: &str) -> &str {
    match quoted.rsplit_once(": ") {
        Some((_, tail)) if tail.trim().len() >= 12 && tail.contains(' ') => tail.trim(),
        _ => "",
    }
}

/// The longest leading words of `tail`, at least 12 characters, that `output` holds: dash
/// shortens `No such file or directory` to `No such file`.
fn error_tail_in(tail: &str, output: &str) -> Option<String> {
    let words: Vec<&str> = tail.split_whitespace().collect();
    (1..=words.len())
        .rev()
        .map(|k| words[..k].join(" "))
        .take_while(|p| p.len() >= 12)
        .find(|p| output.contains(p.as_str()))
}

/// Errors that say the code itself is broken (a name, an attribute, an import, the syntax), which no task
/// asks a program to end in.
const BROKEN_CODE: &[&str] = &[
    "NameError:",
    "UnboundLocalError:",
    // `'str' object has no attribute 'date'`: the 0.5B on orders-newest-first wrote
    // by_customer's body into newest_first, report.py crashed so, and the DONE was taken.
    "AttributeError:",
    "SyntaxError:",
    "IndentationError:",
    "TabError:",
    "ImportError:",
    "ModuleNotFoundError:",
    // Commands run with nothing on stdin: a program that now reads it crashes so. The 0.5B
    // on fix-count-flag replaced argparse with `int(input())` and its implied DONE was taken.
    "EOFError:",
];

/// What a shell reports of a script's own broken code ([`shell_error`]'s lines that say so):
/// a command or function that does not exist, or the syntax.
const BROKEN_SHELL: &[&str] = &["not found", "yntax error", "unexpected"];

/// What [`now_broken`] says of a command that finished before and now runs until stopped.
const HANGS: &str = "it now never finishes (stopped after the time limit), and it finished \
     before: a function that calls itself, or a loop that never ends";

/// The task's commands (and the repository's tests) that ran before the session without a
/// broken-code error ([`BROKEN_CODE`], or a shell's [`BROKEN_SHELL`] line about the
/// command's script) and end in one now, each with the error's line: the 0.5B removed
/// `import argparse` from cli.py, the command the task names crashed with a NameError, and
/// its DONE was taken because the output had changed; the 1.5B made archive.sh call a
/// function it never defined (`archive.sh: 13: ensure_dir_middle: not found`), the same.
/// A command that finished before and now runs until it is stopped is broken too: the 1.5B
/// made archive_path call itself, `sh archive.sh photos/` hung, and its implied DONE was taken.
///
/// So is a Python command that exited 0 without a traceback before and now ends in an
/// uncaught exception of any other type, unless `task` asks for one (names its type, or
/// speaks of raising or an exception): a program the task does not ask to fail must not
/// crash after the change. The 1.5B on long-money-format wrote `{money(x):.2f}` over a
/// string, `python3 report.py sales.csv` ended in a ValueError, and its implied DONE was taken.
pub fn now_broken<'r>(
    probes: &[Probe],
    before: &[ProbeRun],
    now: &'r [ProbeRun],
    task: &str,
) -> Vec<(&'r ProbeRun, String)> {
    let broken = |argv: &[String], out: &str| -> Option<String> {
        let python = out
            .contains(TRACEBACK)
            .then(|| {
                out.lines()
                    .rev()
                    .find(|l| BROKEN_CODE.iter().any(|e| l.trim_start().starts_with(e)))
            })
            .flatten();
        let shell =
            || shell_error(argv, out).filter(|l| BROKEN_SHELL.iter().any(|w| l.contains(w)));
        python.or_else(shell).map(|l| l.trim().to_owned())
    };
    probes
        .iter()
        .filter_map(|p| {
            let b = before.iter().find(|r| r.command == p.command)?;
            let n = now.iter().find(|r| r.command == p.command)?;
            if b.timed_out || broken(&p.argv, &b.output).is_some() {
                return None;
            }
            if n.timed_out {
                return Some((n, HANGS.to_owned()));
            }
            let clean_before = b.code == Some(0) && !b.output.contains(TRACEBACK);
            broken(&p.argv, &n.output)
                .or_else(|| {
                    clean_before
                        .then(|| uncaught(&n.output))
                        .flatten()
                        .filter(|(kind, _)| !asks_exception(task, kind))
                        .map(|(_, line)| line.to_owned())
                })
                .map(|e| (n, e))
        })
        .collect()
}

/// The exception a Python traceback in `output` ends in: its type (`ValueError`,
/// `settings.SettingsError` as `SettingsError`) and its line.
fn uncaught(output: &str) -> Option<(&str, &str)> {
    let at = output.rfind(TRACEBACK)?;
    output[at..].lines().rev().find_map(|l| {
        if l.starts_with([' ', '\t']) {
            return None;
        }
        let head = l.split(':').next()?.trim_end();
        let ident = !head.is_empty()
            && head.split('.').all(|w| {
                w.starts_with(|c: char| c.is_alphabetic() || c == '_')
                    && w.chars().all(|c| c.is_alphanumeric() || c == '_')
            });
        let kind = head.rsplit('.').next()?;
        (ident && (kind.ends_with("Error") || kind.ends_with("Exception")))
            .then(|| (kind, l.trim()))
    })
}

/// Whether `task` asks for an exception of type `kind`: it names the type, or speaks of
/// raising or of an exception.
fn asks_exception(task: &str, kind: &str) -> bool {
    let lower = task.to_lowercase();
    task.contains(kind)
        || ["raise", "exception", "traceback"]
            .iter()
            .any(|w| lower.contains(w))
}

/// The observation of a DONE refused because a command now crashes on broken code
/// (`now_broken`).
pub fn broken_code_refusal(broken: &[(&ProbeRun, String)]) -> crate::act::Observation {
    let said: Vec<String> = broken
        .iter()
        .map(|(r, e)| format!("`{}`: {e}", r.command))
        .collect();
    runs_refusal(
        broken.iter().map(|(r, _)| *r),
        format!(
            "DONE refused: your change broke the code, it did not crash this way before ({})",
            said.join("; ")
        ),
        "put back what the error says is missing (an import, a name, a definition), or undo \
         the call or loop that never ends, and keep the rest of the file as it was, then DONE",
    )
}

/// The run failed for want of something outside the repository (see [`MACHINE_FAILURES`]).
pub fn machine_failure(run: &ProbeRun) -> bool {
    run.code != Some(0) && MACHINE_FAILURES.iter().any(|m| run.output.contains(m))
}

/// A found test that failed before the session, for a reason of the repository's: the
/// session must make it pass.
pub fn must_pass(probe: &Probe, before: &[ProbeRun]) -> bool {
    probe.found
        && before.iter().any(|b| {
            b.command == probe.command && !b.timed_out && b.code != Some(0) && !machine_failure(b)
        })
}

/// The script `argv` runs is a test: its file name starts with `test` or ends with `_test`
/// or `_tests` before the extension (`test.sh`, `test_stats.py`, `run_tests.sh`; not
/// `latest.py`).
pub fn is_test(argv: &[String]) -> bool {
    let script = match argv.first() {
        Some(p) if p.starts_with("./") => Some(p.as_str()),
        _ => argv
            .iter()
            .skip(1)
            .find(|a| !a.starts_with('-'))
            .map(String::as_str),
    };
    let Some(script) = script else {
        return false;
    };
    let name = script.rsplit('/').next().unwrap_or(script).to_lowercase();
    let stem = name.split('.').next().unwrap_or(&name);
    stem.starts_with("test")
        || ["_test", "_tests", "-test", "-tests"]
            .iter()
            .any(|end| stem.ends_with(end))
}

/// The observation of a DONE refused because a command the task says fails still fails
/// (`still_failing`).
pub fn failing_refusal(failing: &[(&ProbeRun, String)]) -> crate::act::Observation {
    let said: Vec<String> = failing
        .iter()
        .map(|(r, why)| format!("`{}`: {why}", r.command))
        .collect();
    runs_refusal(
        failing.iter().map(|(r, _)| *r),
        format!(
            "DONE refused: the task says this fails, and it still does ({})",
            said.join("; ")
        ),
        "read the output, change the code that fails, then DONE",
    )
}

/// A DONE refused: `summary`, `hint`, and the output of each of `runs` as [`ProbeRun::as_shown`].
pub(crate) fn runs_refusal<'r>(
    runs: impl IntoIterator<Item = &'r ProbeRun>,
    summary: String,
    hint: &str,
) -> crate::act::Observation {
    let output = runs
        .into_iter()
        .map(ProbeRun::as_shown)
        .collect::<Vec<_>>()
        .join("\n");
    crate::act::Observation::error(summary, Some(hint)).with_output(output)
}

/// A command the task calls wrong (a symptom), nothing else about it known: unit tests'.
#[cfg(test)]
pub(crate) fn symptom(command: &str) -> Probe {
    Probe {
        command: command.to_owned(),
        argv: shlex::split(command).unwrap_or_default(),
        symptom: true,
        fails: false,
        quoted: Vec::new(),
        found: false,
        keep: false,
        plain: false,
        sibling: false,
        error_ok: false,
    }
}

/// [`runs_refusal`] for a refusal that says one thing of each item of `left` (`said`, joined
/// by "; " after `lead`) and shows each item's run.
pub(crate) fn each_refusal<'r, T>(
    left: &'r [T],
    run: impl Fn(&'r T) -> &'r ProbeRun,
    said: impl Fn(&T) -> String,
    lead: &str,
    hint: &str,
) -> crate::act::Observation {
    let told: Vec<String> = left.iter().map(said).collect();
    runs_refusal(
        left.iter().map(run),
        format!("{lead}{}", told.join("; ")),
        hint,
    )
}

/// The commands of `runs` in backticks, joined by "and".
pub(crate) fn command_names(runs: &[&ProbeRun]) -> String {
    runs.iter()
        .map(|r| format!("`{}`", r.command))
        .collect::<Vec<_>>()
        .join(" and ")
}

/// What the model is told after a change: each command's output now, and whether it is the
/// same as before the session's changes. `ok` is false when a symptom did not change, or a
/// command now crashes ([`now_broken`], which reads `task`).
pub fn after_change(
    probes: &[Probe],
    before: &[ProbeRun],
    now: &[ProbeRun],
    task: &str,
) -> crate::act::Observation {
    let mut output = String::new();
    let mut stuck = Vec::new();
    for r in now {
        let probe = probes.iter().find(|p| p.command == r.command);
        let same = before
            .iter()
            .find(|b| b.command == r.command)
            .is_some_and(|b| b.same_as(r));
        let note = if same {
            if probe.is_some_and(|p| p.symptom) {
                stuck.push(format!("`{}`", r.command));
            }
            ", the same as before your change"
        } else {
            ""
        };
        output.push_str(&format!(
            "$ {} ({}{note})\n{}\n",
            r.command,
            r.status(),
            r.shown()
        ));
    }
    let names: Vec<String> = now.iter().map(|r| format!("`{}`", r.command)).collect();
    // A test the session found is the repository's, not the task's.
    let whose = match (
        probes.iter().any(|p| p.found),
        probes.iter().any(|p| !p.found),
    ) {
        (true, true) => "the task's commands and the repository's tests",
        (true, false) => "the repository's test",
        _ => "the task's command",
    };
    let mut obs = crate::act::Observation::ok(
        format!("after your change, {whose} {} prints:", names.join(", ")),
        output.trim_end().to_owned(),
    );
    let failing = still_failing(probes, before, now);
    if stuck.is_empty() && !failing.is_empty() {
        let said: Vec<String> = failing
            .iter()
            .map(|(r, why)| format!("`{}`: {why}", r.command))
            .collect();
        obs.ok = false;
        obs.hint = Some(format!(
            "the task says this fails, and it still does ({}): change the code that fails",
            said.join("; ")
        ));
    }
    if !stuck.is_empty() {
        obs.ok = false;
        obs.hint = Some(format!(
            "the task says what {} prints is wrong, and your change left it as it was: change \
             the code that produces it",
            stuck.join(", ")
        ));
    }
    let broken = now_broken(probes, before, now, task);
    if let Some((r, e)) = broken.first() {
        obs.ok = false;
        obs.hint = Some(format!(
            "your change broke the code: `{}` now ends in {e}; put back what is missing",
            r.command
        ));
    }
    let stray = stray_printed(probes, before, now);
    if let (true, Some((r, q))) = (obs.ok, stray.first()) {
        obs.ok = false;
        obs.hint = Some(format!(
            "`{}` still prints \"{q}\", which the task says must not be printed",
            r.command
        ));
    }
    let changed = defaults_changed(probes, before, now);
    if obs.ok && !changed.is_empty() {
        let names: Vec<&ProbeRun> = changed.iter().map(|(_, n)| *n).collect();
        obs.ok = false;
        obs.hint = Some(format!(
            "without the new option, {} prints otherwise than before your change: make the \
             new behaviour happen only when the option is given",
            command_names(&names)
        ));
    }
    obs
}

/// The observation of a DONE refused because the task's commands print what they printed
/// before (`unchanged_output`).
pub fn refusal(same: &[&ProbeRun]) -> crate::act::Observation {
    runs_refusal(
        same.iter().copied(),
        format!(
            "DONE refused: {} still prints exactly what it printed before your change, and the \
             task says that is wrong",
            command_names(same)
        ),
        "change the code so that the command does what the task asks, then DONE",
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::testing::repo;

    fn argvs(probes: &[Probe]) -> Vec<(String, bool)> {
        probes
            .iter()
            .map(|p| (p.argv.join(" | "), p.symptom))
            .collect()
    }

    #[test]
    fn a_failure_reported_about_the_commands_input_is_seen() {
        let argv: Vec<String> = ["sh", "linecount.sh", "shopping list.txt"]
            .map(str::to_owned)
            .to_vec();
        let out = "File not found: shopping\nFile not found: list.txt\n";
        assert_eq!(
            failure_about_input(&argv, out),
            Some("File not found: shopping")
        );
        // The fix's output, a failure about something else, a word of the script's name: none.
        for out in [
            "3 shopping list.txt\n",
            "warning: config not found\n",
            "linecount: 3 lines\n",
        ] {
            assert_eq!(failure_about_input(&argv, out), None, "{out}");
        }
    }

    #[test]
    fn shell_errors_of_the_commands_script_are_seen() {
        let argv = |s: &str| s.split(' ').map(str::to_owned).collect::<Vec<_>>();
        let dash = "linecount.sh: 6: [: Illegal number: \n2 todo.txt\n";
        assert_eq!(
            shell_error(&argv("sh linecount.sh x.txt"), dash),
            Some("linecount.sh: 6: [: Illegal number: ")
        );
        let bash = "./count.sh: line 3: n: unbound variable\n";
        assert_eq!(
            shell_error(&argv("./count.sh a"), bash),
            Some("./count.sh: line 3: n: unbound variable")
        );
        // Another program's message, the script's own words, a Python command: none.
        for (cmd, out) in [
            (
                "sh linecount.sh x.txt",
                "cat: shopping: No such file or directory\n",
            ),
            ("sh linecount.sh x.txt", "linecount.sh: counts lines: 3\n"),
            ("python3 app.py", "app.py: 3: oops\n"),
        ] {
            assert_eq!(shell_error(&argv(cmd), out), None, "{out}");
        }
    }

    #[test]
    fn a_command_with_an_option_the_task_adds_is_also_run_without_it() {
        let (_dir, ws) = repo(&[
            ("greet.py", "import sys\nprint('Hello, ' + sys.argv[-1])\n"),
            (
                "cli.py",
                "import sys\nif '--count' in sys.argv:\n    pass\n",
            ),
        ]);
        let keep = |task: &str| -> Vec<String> {
            commands(task, &ws, None)
                .into_iter()
                .filter(|p| p.keep)
                .map(|p| p.command)
                .collect()
        };
        assert_eq!(
            keep("Add a --shout flag: `python3 greet.py --shout 'Ann Lee'` prints HELLO, ANN LEE."),
            ["python3 greet.py 'Ann Lee'"]
        );
        assert_eq!(
            keep("Add --name=X support: `python3 greet.py --name=Bo x`."),
            ["python3 greet.py x"]
        );
        // An option the script already mentions, or a task that adds nothing: none.
        assert!(keep("Add a default: `python3 cli.py --count 3` prints 3 lines.").is_empty());
        assert!(keep("`python3 greet.py --shout bob` should shout.").is_empty());
    }

    #[test]
    fn commands_in_backticks_are_split_as_words_and_need_a_repository_file() {
        let (_d, ws) = repo(&[("cli.py", ""), ("shopping list.txt", ""), ("lines.sh", "")]);
        let task = "`python3 cli.py --count 3` prints only 2 lines, and `python3 cli.py` prints \
                    nothing. `sh lines.sh 'shopping list.txt'` fails too. `python3 other.py` \
                    and `ls -l` and `python3 cli.py | wc -l` are not run.";
        assert_eq!(
            argvs(&commands(task, &ws, None)),
            vec![
                ("python3 | cli.py | --count | 3".to_owned(), true),
                ("python3 | cli.py".to_owned(), true),
                ("sh | lines.sh | shopping list.txt".to_owned(), true),
            ]
        );
    }

    #[test]
    fn a_command_in_prose_is_the_interpreter_and_the_file_only() {
        let (_d, ws) = repo(&[("app.py", ""), ("test_x.py", "")]);
        let task = "python3 app.py crashes because config.json is missing. Run python3 \
                    test_x.py when done.";
        let probes = commands(
            task,
            &ws,
            Some(&["python3".to_owned(), "test_x.py".to_owned()]),
        );
        assert_eq!(argvs(&probes), vec![("python3 | app.py".to_owned(), true)]);
    }

    #[test]
    fn symptoms_are_told_from_commands_that_must_keep_working() {
        let (_d, ws) = repo(&[("a.py", ""), ("b.py", ""), ("c.py", ""), ("receipt.py", "")]);
        let keep = commands(
            "Add square() to a.py; `python3 a.py` must keep working as now.",
            &ws,
            None,
        );
        assert_eq!(argvs(&keep), vec![("python3 | a.py".to_owned(), false)]);
        let plain = commands("`python3 b.py` prints the total.", &ws, None);
        assert_eq!(argvs(&plain), vec![("python3 | b.py".to_owned(), false)]);
        // The symptom is in the next sentence.
        let next = commands(
            "`python3 receipt.py` prints amounts like \"$3.5\". Every amount should have two \
             decimals.",
            &ws,
            None,
        );
        assert_eq!(
            argvs(&next),
            vec![("python3 | receipt.py".to_owned(), true)]
        );
        let still = commands("`python3 c.py` still prints the old name.", &ws, None);
        assert!(!still[0].symptom, "{still:?}");
        // A value the command prints, then `but`: latest-release-sh, whose DONE on
        // `vv1.9.2` was taken because no word marked the sentence a symptom.
        let called_wrong = commands(
            "`python3 b.py` says the latest release is v1.9.2, but v1.10.0 is newer.",
            &ws,
            None,
        );
        assert_eq!(
            argvs(&called_wrong),
            vec![("python3 | b.py".to_owned(), true)]
        );
    }

    #[test]
    fn an_executable_of_the_repository_is_a_command_and_a_path_outside_is_not() {
        let (_d, ws) = repo(&[("run.sh", "")]);
        let probes = commands(
            "`./run.sh --fast` fails. `sh ../run.sh` and `sh /etc/passwd`.",
            &ws,
            None,
        );
        assert_eq!(argvs(&probes), vec![("./run.sh | --fast".to_owned(), true)]);
    }

    #[test]
    fn the_section_goes_after_the_line_that_states_the_task() {
        let runs = [ProbeRun {
            command: "python3 a.py".to_owned(),
            code: Some(0),
            timed_out: false,
            output: "hi\n".to_owned(),
        }];
        let section = before_section(&runs);
        let message = insert_after_task(
            "Task: fix a.py\n\nfiles…\nThe task again: fix a.py\n",
            "fix a.py",
            &section,
        );
        assert_eq!(
            message,
            "Task: fix a.py\nRunning `python3 a.py` on the files as they are now (exit 0):\n```\nhi\n```\n\nfiles…\nThe task again: fix a.py\n"
        );
        assert_eq!(
            insert_after_task("no task here", "fix", &section),
            format!("no task here\n\n{}", section.trim_end())
        );
    }

    #[test]
    fn probes_run_on_a_copy_that_the_repository_never_sees() {
        let script = "import sys\nopen('made.txt', 'w').write('x')\nprint('args', sys.argv[1:])\n\
                      print('y' * 5000)\n";
        let (dir, mut ws) = repo(&[("tool.py", script)]);
        ws.confinement = crate::sandbox::Confinement::Unconfined;
        let probes = commands("`python3 tool.py --n 2` fails.", &ws, None);
        if !crate::testing::prereq::python3() {
            return;
        }
        let runs = run_all(&ws, &probes);
        assert_eq!(runs[0].code, Some(0));
        assert!(
            runs[0].output.starts_with("args ['--n', '2']\n"),
            "{}",
            runs[0].output
        );
        // Long output keeps its head and tail.
        assert!(runs[0].output.len() < 2000, "{}", runs[0].output.len());
        assert!(!dir.path().join("made.txt").exists());
        // Run again, nothing changed: the same output.
        assert!(run_all(&ws, &probes)[0].same_as(&runs[0]));
    }

    #[test]
    fn only_every_unchanged_symptom_refuses() {
        let probe = |c: &str, symptom| Probe {
            symptom,
            ..super::symptom(c)
        };
        let run = |c: &str, out: &str| ProbeRun {
            command: c.to_owned(),
            code: Some(0),
            timed_out: false,
            output: out.to_owned(),
        };
        let probes = [probe("a", true), probe("b", true), probe("c", false)];
        let before = [run("a", "1"), run("b", "2"), run("c", "3")];
        let same = unchanged_symptoms(&probes, &before, &before).expect("all the same");
        assert_eq!(same.len(), 2);
        // One symptom changed: the change did something the task asked about.
        let now = [run("a", "1"), run("b", "22"), run("c", "3")];
        assert!(unchanged_symptoms(&probes, &before, &now).is_none());
        // A command that is not a symptom never refuses.
        assert!(unchanged_symptoms(&[probe("c", false)], &before, &before).is_none());
        // Nor one that timed out before.
        let slow = [ProbeRun {
            timed_out: true,
            code: None,
            ..run("a", "")
        }];
        assert!(unchanged_symptoms(&[probe("a", true)], &slow, &slow).is_none());
        let obs = after_change(&probes, &before, &now, "");
        assert!(!obs.ok);
        assert!(obs.hint.unwrap().contains("`a`"));
        assert!(
            obs.output.contains("$ b (exit 0)\n```\n22\n```"),
            "{}",
            obs.output
        );
    }

    #[test]
    fn a_command_the_task_says_fails_is_told_with_the_error_it_quotes() {
        let (_d, ws) = repo(&[("test.sh", ""), ("linecount.sh", ""), ("a.py", "")]);
        let probes = commands(
            "`sh linecount.sh 'shopping list.txt'` fails with \"cat: shopping: No such file or \
             directory\". sh test.sh fails. `python3 a.py` prints \"Hello, World\" instead.",
            &ws,
            None,
        );
        let got: Vec<(bool, Vec<String>)> =
            probes.iter().map(|p| (p.fails, p.quoted.clone())).collect();
        assert_eq!(
            got,
            vec![
                (
                    true,
                    vec!["cat: shopping: No such file or directory".to_owned()]
                ),
                // Not a failure: a wrong output, whose quote is no error to look for.
                (false, Vec::new()),
                // The next sentence's quote: it counts only if the test printed it before.
                (true, vec!["Hello, World".to_owned()]),
            ]
        );
        assert!(is_test(&probes[2].argv));
        assert!(!is_test(&probes[0].argv));
        assert!(is_test(&["./run_tests.sh".to_owned()]));
        assert!(is_test(&[
            "python3".to_owned(),
            "tests/stats_test.py".to_owned()
        ]));
        assert!(!is_test(&["python3".to_owned(), "latest.py".to_owned()]));
    }

    #[test]
    fn a_python_call_the_task_writes_is_run_with_literal_arguments_only() {
        let (_d, ws) = repo(&[
            (
                "scores.py",
                "def average(xs):\n    return sum(xs) / len(xs)\n\n\ndef summary(xs):\n    \
                 return f\"{len(xs)} scores, average {average(xs):.1f}\"\n",
            ),
            ("lib/mathx.py", "def square(x):\n    return x * x\n"),
        ]);
        let probes = commands(
            "summary([]) in scores.py crashes with ZeroDivisionError. square(x) and \
             square(3) and os.remove(\"a\") and average(open(\"f\")) and nothere(1). Add \
             tests for average() too.",
            &ws,
            None,
        );
        let got: Vec<(&str, bool)> = probes
            .iter()
            .map(|p| (p.argv[2].as_str(), p.fails))
            .collect();
        assert_eq!(
            got,
            vec![
                ("from scores import summary; print(summary([]))", true),
                (
                    "import sys; sys.path.insert(0, \"lib\"); from mathx import square; \
                     print(square(3))",
                    false
                ),
            ]
        );
        let runs = run_all(&ws, &probes[..1]);
        assert_eq!(runs[0].code, Some(1));
        assert!(
            runs[0].output.contains("ZeroDivisionError"),
            "{}",
            runs[0].output
        );
        assert!(literal_args(
            "[1, -2.5, 'a b', {\"k\": (None, True)}], 0x1f"
        ));
        assert!(!literal_args("x") && !literal_args("open('f')") && !literal_args("'a"));
    }

    #[test]
    fn a_command_that_failed_on_its_input_before_has_no_behaviour_to_keep() {
        let keep = |argv: &[&str]| Probe {
            command: argv.join(" "),
            argv: argv.iter().map(|a| (*a).to_owned()).collect(),
            keep: true,
            ..Probe::default()
        };
        let run = |p: &Probe, out: &str| ProbeRun {
            command: p.command.clone(),
            code: Some(0),
            timed_out: false,
            output: out.to_owned(),
        };
        let missing = keep(&["sh", "count.sh", "a.txt", "b.txt"]);
        let real = keep(&["sh", "count.sh", "notes.txt"]);
        let probes = [missing.clone(), real.clone()];
        let before = [
            run(
                &missing,
                "count.sh: 7: cannot open a.txt: No such file\n0 total\n",
            ),
            run(&real, "3 notes.txt\n3 total\n"),
        ];
        let now = [
            run(
                &missing,
                "count.sh: 12: cannot open a.txt: No such file\n0 total\n",
            ),
            run(&real, "3 total\n"),
        ];
        let changed: Vec<&str> = defaults_changed(&probes, &before, &now)
            .iter()
            .map(|(b, _)| b.command.as_str())
            .collect();
        assert_eq!(changed, vec!["sh count.sh notes.txt"]);
    }

    #[test]
    fn a_task_may_let_a_command_end_in_an_error() {
        let w = |t: &str| words_of(t);
        for t in [
            "It should print a clear error and exit 1.",
            "Reject the file with a usage message.",
            "It should exit with a non-zero status.",
            "it must exit 2 on bad input",
            "print an error message instead",
            "It crashes instead of rejecting the line.",
        ] {
            assert!(allows_error(&w(t)), "{t}");
        }
        for t in [
            "`python3 app.py` crashes with a KeyError.",
            "It fails with exit 1 on the sample file.",
            "The error is in parse.",
            "it should exit 0",
        ] {
            assert!(!allows_error(&w(t)), "{t}");
        }
    }

    #[test]
    fn a_failing_command_must_stop_failing_the_way_the_task_says() {
        let failing = |argv: &[&str], quoted: &[&str]| Probe {
            command: argv.join(" "),
            argv: argv.iter().map(|a| (*a).to_owned()).collect(),
            symptom: true,
            fails: true,
            quoted: quoted.iter().map(|q| (*q).to_owned()).collect(),
            found: false,
            keep: false,
            plain: false,
            sibling: false,
            error_ok: false,
        };
        let run = |p: &Probe, code: i32, out: &str| ProbeRun {
            command: p.command.clone(),
            code: Some(code),
            timed_out: false,
            output: out.to_owned(),
        };
        let test = failing(&["sh", "test.sh"], &[]);
        let app = failing(&["python3", "app.py"], &[]);
        let cat = failing(&["sh", "count.sh", "a b"], &["cat: a: No such file"]);
        let probes = [test.clone(), app.clone(), cat.clone()];
        let tb = "Traceback (most recent call last):\n  KeyError: 'port'";
        let before = [
            run(&test, 1, "FAIL line 3"),
            run(&app, 1, tb),
            run(&cat, 1, "cat: a: No such file\ncat: b: No such file"),
        ];
        // A different failure of each is still a failure.
        let now = [
            run(&test, 1, "FAIL line 5"),
            run(
                &app,
                1,
                "Traceback (most recent call last):\n  KeyError: 'workers'",
            ),
            run(&cat, 1, "cat: a: No such file"),
        ];
        let why: Vec<String> = still_failing(&probes, &before, &now)
            .into_iter()
            .map(|(_, w)| w)
            .collect();
        assert_eq!(
            why,
            vec![
                "the test still fails (exit 1)".to_owned(),
                "it still ends in a Python traceback".to_owned(),
                "it still prints \"cat: a: No such file\"".to_owned(),
            ]
        );
        let obs = after_change(&probes, &before, &now, "");
        assert!(!obs.ok && obs.hint.unwrap().contains("still fails"));
        assert!(
            failing_refusal(&still_failing(&probes, &before, &now))
                .summary
                .starts_with("DONE refused")
        );
        // The script exits 1 with a message of its own instead of its crash: another way of
        // failing, still refused; where the task lets it end in an error, that is the fix.
        let fixed = [
            run(&test, 0, "ok"),
            run(&app, 1, "config.json: no port"),
            run(&cat, 0, "3 a b"),
        ];
        let why: Vec<String> = still_failing(&probes, &before, &fixed)
            .into_iter()
            .map(|(_, w)| w)
            .collect();
        assert_eq!(why, vec!["it still fails (exit 1)".to_owned()]);
        let lenient = [
            test.clone(),
            Probe {
                error_ok: true,
                ..app.clone()
            },
            cat.clone(),
        ];
        assert!(still_failing(&lenient, &before, &fixed).is_empty());
        // Fixed: the test passes, the script runs, the quoted error is gone.
        let fixed = [
            run(&test, 0, "ok"),
            run(&app, 0, "port 8080"),
            run(&cat, 0, "3 a b"),
        ];
        assert!(still_failing(&probes, &before, &fixed).is_empty());
        // A command that did not fail before (or timed out) is never held to it.
        let passing = [run(&test, 0, "ok"), run(&app, 0, ""), run(&cat, 0, "")];
        assert!(still_failing(&probes, &passing, &now).is_empty());

        // The quoted error printed by a script that exits 0 (its loop's last command did),
        // then the same error as another program words it: still failing.
        let quoted = "cat: shopping: No such file or directory";
        let lines = failing(&["sh", "linecount.sh", "shopping list.txt"], &[quoted]);
        let before = [run(&lines, 0, &format!("{quoted}\n0 shopping"))];
        let reworded = [run(
            &lines,
            0,
            "linecount.sh: 5: cannot open shopping: No such file\n0 shopping",
        )];
        let why: Vec<String> = still_failing(std::slice::from_ref(&lines), &before, &reworded)
            .into_iter()
            .map(|(_, w)| w)
            .collect();
        assert_eq!(why, ["it still prints \"No such file\""]);
        let fixed = [run(&lines, 0, "3 shopping list.txt")];
        assert!(still_failing(std::slice::from_ref(&lines), &before, &fixed).is_empty());
    }

    #[test]
    fn a_command_that_now_crashes_on_broken_code_is_told() {
        let probe = symptom;
        let run = |c: &str, code: i32, out: &str| ProbeRun {
            command: c.to_owned(),
            code: Some(code),
            timed_out: false,
            output: out.to_owned(),
        };
        let cli = probe("python3 cli.py --count 3");
        let before = [run(&cli.command, 0, "hello\nhello")];
        let crash = "Traceback (most recent call last):\n  File \"cli.py\", line 2\nNameError: name 'argparse' is not defined";
        let now = [run(&cli.command, 1, crash)];
        let found = now_broken(std::slice::from_ref(&cli), &before, &now, "");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].1, "NameError: name 'argparse' is not defined");
        let obs = broken_code_refusal(&found);
        assert!(
            obs.summary
                .starts_with("DONE refused: your change broke the code")
        );
        assert!(!after_change(std::slice::from_ref(&cli), &before, &now, "").ok);
        // Any other uncaught exception after a clean run: broken, unless the task asks for
        // one (names its type, or speaks of raising); one that was there before is not this.
        let value = [run(
            &cli.command,
            1,
            "Traceback (most recent call last):\n  File \"cli.py\", line 3\n    x: bad\nconf.SettingsError: bad port\n",
        )];
        let found = now_broken(
            std::slice::from_ref(&cli),
            &before,
            &value,
            "print it twice",
        );
        assert_eq!(found[0].1, "conf.SettingsError: bad port");
        for task in [
            "a bad port should stop it with SettingsError",
            "Raise an error on a bad port",
            "an exception for a bad port",
        ] {
            assert!(
                now_broken(std::slice::from_ref(&cli), &before, &value, task).is_empty(),
                "{task}"
            );
        }
        // Not clean before (a non-zero exit): the exception may be the symptom's kind.
        let failing = [run(&cli.command, 2, "usage: cli.py")];
        assert!(now_broken(std::slice::from_ref(&cli), &failing, &value, "").is_empty());
        assert!(now_broken(std::slice::from_ref(&cli), &now, &now, "").is_empty());
        // Output that merely looks like an exception line, with no traceback: not this.
        let printed = [run(&cli.command, 0, "ValueError: shown as data\n")];
        assert!(now_broken(std::slice::from_ref(&cli), &before, &printed, "").is_empty());
        let attr = [run(
            &cli.command,
            1,
            "Traceback (most recent call last):\nAttributeError: 'str' object has no attribute 'date'",
        )];
        let found = now_broken(std::slice::from_ref(&cli), &before, &attr, "");
        assert_eq!(
            found[0].1,
            "AttributeError: 'str' object has no attribute 'date'"
        );
        let eof = [run(
            &cli.command,
            1,
            "Traceback (most recent call last):\nEOFError: EOF when reading a line",
        )];
        let found = now_broken(std::slice::from_ref(&cli), &before, &eof, "");
        assert_eq!(found[0].1, "EOFError: EOF when reading a line");
        // A shell script that now calls a function it never defined (dash, then bash), or
        // has a syntax error; an error about the data, or one there before, is not this.
        let sh = probe("sh archive.sh photos/");
        let before = [run(&sh.command, 0, "archived photos/ to backups/.tar")];
        for (out, line) in [
            (
                "archive.sh: 13: ensure_dir_middle: not found",
                "archive.sh: 13: ensure_dir_middle: not found",
            ),
            (
                "archive.sh: line 13: ensure_dir_middle: command not found",
                "archive.sh: line 13: ensure_dir_middle: command not found",
            ),
            (
                "archive.sh: 9: Syntax error: \"fi\" unexpected",
                "archive.sh: 9: Syntax error: \"fi\" unexpected",
            ),
        ] {
            let now = [run(&sh.command, 2, out)];
            let found = now_broken(std::slice::from_ref(&sh), &before, &now, "");
            assert_eq!(found.len(), 1, "{out}");
            assert_eq!(found[0].1, line);
        }
        let data = [run(&sh.command, 2, "archive.sh: 6: [: Illegal number: x")];
        assert!(now_broken(std::slice::from_ref(&sh), &before, &data, "").is_empty());
        let other = [run(&sh.command, 1, "tar: photos: Cannot stat: not found")];
        assert!(now_broken(std::slice::from_ref(&sh), &before, &other, "").is_empty());
        let was = [run(&sh.command, 2, "archive.sh: 13: f: not found")];
        assert!(now_broken(std::slice::from_ref(&sh), &was, &was, "").is_empty());
        // A command that finished and now hangs (archive_path calling itself); one that hung
        // before already is not this.
        let hung = [ProbeRun {
            command: sh.command.clone(),
            code: None,
            timed_out: true,
            output: String::new(),
        }];
        let found = now_broken(std::slice::from_ref(&sh), &before, &hung, "");
        assert_eq!(found.len(), 1);
        assert!(found[0].1.starts_with("it now never finishes"));
        assert!(now_broken(std::slice::from_ref(&sh), &hung, &hung, "").is_empty());
    }

    #[test]
    fn output_the_task_calls_stray_must_stop_being_printed() {
        let (_dir, ws) = repo(&[("report.py", "print('x')\n"), ("textstats.py", "")]);
        let task = "`python3 report.py` prints two stray lines (\"words: ...\" and \"longest: \
                    ...\") before its own output. Make the demo run only when textstats.py is run \
                    directly.";
        let probes = commands(task, &ws, None);
        assert_eq!(probes.len(), 1);
        assert!(probes[0].symptom && !probes[0].fails);
        assert_eq!(probes[0].quoted, ["words: ...", "longest: ..."]);
        let run = |output: &str| ProbeRun {
            command: "python3 report.py".to_owned(),
            code: Some(0),
            timed_out: false,
            output: output.to_owned(),
        };
        let before = [run("words: 4\nlongest: quick\ntotal words: 5\n")];
        // The label renamed: "longest: quick" still starts a line.
        let renamed = [run("total words: 4\nlongest: quick\ntotal words: 5\n")];
        let stray = stray_printed(&probes, &before, &renamed);
        assert_eq!(stray.len(), 1);
        assert_eq!(stray[0].1, "longest: ...");
        assert!(
            stray_refusal(&stray)
                .summary
                .contains("still prints \"longest: ...\"")
        );
        let obs = after_change(&probes, &before, &renamed, "");
        assert!(!obs.ok && obs.hint.unwrap().contains("longest: ..."));
        // Fixed: neither starts a line any more ("total words: 5" holds "words:" inside).
        assert!(stray_printed(&probes, &before, &[run("total words: 5\n")]).is_empty());
        // Without a word calling it stray, a quoted text is no such demand.
        let plain = commands(
            "`python3 report.py` should print \"total words: ...\".",
            &ws,
            None,
        );
        assert!(plain[0].quoted.is_empty());
        assert!(prints("a\n  words: 4\n", "words: ...") && !prints("a words: 4", "words: ..."));
        assert!(!prints("ab", "..."));
    }
}
