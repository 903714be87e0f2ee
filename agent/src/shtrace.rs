//! The shell side of [`crate::trace`]: which functions of the repository's shell scripts a
//! task's wrong `sh`/`bash` command runs, in the order it first calls them, and — where a
//! call's output is captured whole into a variable (`pa=$(patch "$v")`) — what it printed
//! (`patch 1.2.3 printed 2`). fix-bump-sh: `sh test.sh` fails on `bump.sh 1.2.3 patch`; the
//! 1.5B changed bump.sh's `+ 1` to `+ 2`, making up for semver.sh's `patch`, which cuts the
//! minor field, so the shipped test passed and the hidden versions did not. Shown
//! `minor 1.2.3 printed 2` beside `patch 1.2.3 printed 2`, the fault has a place.
//!
//! How: the command runs in a scratch copy twice, plainly and traced. Traced, `sh` and `bash`
//! found on `PATH` are bash with xtrace switched on by `BASH_ENV` (`sh` in POSIX mode with
//! `xpg_echo`, echoing as dash does), each trace line naming its process, depth, file and
//! line (`PS4`), written to a file of the copy (`BASH_XTRACEFD`) so the command's own output
//! is untouched. A script run by its path (`./run.sh`) is run through the interpreter its
//! first line names. The trace is kept only when the traced run printed and exited exactly as
//! the plain one: bash standing in for dash changed nothing the command shows. A value is
//! told only where the line that assigns it is `NAME=$(FUNC args)` and nothing else, so the
//! value is the call's whole output.

use std::collections::HashMap;
use std::path::PathBuf;

use crate::trace::{Call, Function};
use crate::workspace::{RunOutput, Workspace};

/// Where the traced shells write their trace, in the scratch copy's root.
const TRACE_FILE: &str = ".bellows-shell-trace";

/// Bytes of trace read at most: a loop's thousand iterations add nothing past its first.
const MAX_TRACE_BYTES: usize = 4 << 20;

/// Separates the fields `PS4` puts before each traced command.
const SEP: char = '\u{1f}';

/// Calls kept per function, as [`crate::trace`] keeps them.
const MAX_CALLS: usize = 3;

/// Started by the launcher with `BASH_ENV` pointing here; `{ROOT}` is the scratch copy.
const ENV_FILE: &str = r#"exec {BELLOWS_XFD}>>'{ROOT}/.bellows-shell-trace'
BASH_XTRACEFD=$BELLOWS_XFD
PS4=$'+\037$$\037${BASH_SOURCE[0]}\037${LINENO}\037${FUNCNAME[0]}\037'
if [ -n "$BELLOWS_AS_SH" ]; then set -o posix; shopt -s xpg_echo; fi
unset BELLOWS_AS_SH
set -x
"#;

/// Puts the shims first on `PATH`, points `BASH_ENV` at the env file, and runs the command.
const LAUNCH: &str = r#"d=$0 f=$1; shift; export PATH="$d:$PATH" BASH_ENV="$f"; exec "$@""#;

/// The first `bash` on `PATH`.
fn bash() -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join("bash"))
        .find(|p| p.is_file())
}

/// `argv` as a shell command the tracer knows: `sh FILE args`, `bash FILE args`, `sh -c
/// CODE`, or a repository script run by its path whose first line names sh or bash (run
/// through that interpreter, by name, so the shims take it).
fn shell_argv(ws: &Workspace, argv: &[String]) -> Option<Vec<String>> {
    let (program, rest) = argv.split_first()?;
    let name = program.rsplit('/').next()?;
    let interpreter = match name {
        "sh" | "dash" => "sh",
        "bash" => "bash",
        _ => {
            let text = ws.read(program.trim_start_matches("./")).ok()??;
            let first = String::from_utf8_lossy(&text)
                .lines()
                .next()?
                .trim()
                .to_owned();
            let shebang = first.strip_prefix("#!")?;
            let last = shebang.split_whitespace().last()?;
            let interpreter = match last.rsplit('/').next()? {
                "sh" | "dash" => "sh",
                "bash" => "bash",
                _ => return None,
            };
            let mut out = vec![interpreter.to_owned(), program.clone()];
            out.extend(rest.iter().cloned());
            return Some(out);
        }
    };
    let first = rest.first()?;
    let runs_a_file = !first.starts_with('-') && ws.read(first).ok()?.is_some();
    if !(runs_a_file || first == "-c") {
        return None;
    }
    let mut out = vec![interpreter.to_owned()];
    out.extend(rest.iter().cloned());
    Some(out)
}

/// The shell functions the repository defines (`f() {`, `function f`, at the start of a
/// line of a `.sh`/`.bash` file or one with no extension), with the file of each; the first
/// definition of a name wins.
fn definitions(ws: &Workspace) -> HashMap<String, String> {
    let mut defs = HashMap::new();
    let Ok(files) = ws.files("") else {
        return defs;
    };
    for path in files.iter().take(2000) {
        let file = path.rsplit('/').next().unwrap_or(path);
        let shell = match file.rsplit_once('.') {
            Some((_, ext)) => ext == "sh" || ext == "bash",
            None => true,
        };
        if !shell {
            continue;
        }
        let Ok(Some(bytes)) = ws.read(path) else {
            continue;
        };
        if bytes.len() > 256 * 1024 {
            continue;
        }
        for line in String::from_utf8_lossy(&bytes).lines() {
            if let Some(name) = crate::splice::shell_def(line) {
                defs.entry(name).or_insert_with(|| path.clone());
            }
        }
    }
    defs
}

/// The functions of the repository `argv` runs, in the order first called, with their first
/// calls (those whose output a variable captured whole come first, with what they printed);
/// empty when it is no shell command the tracer knows, no bash is found, the traced run
/// shows anything otherwise than the plain one, or it calls no function of the repository.
pub fn functions(ws: &Workspace, argv: &[String]) -> Vec<Function> {
    traced(ws, argv).unwrap_or_default()
}

fn traced(ws: &Workspace, argv: &[String]) -> Option<Vec<Function>> {
    let command = shell_argv(ws, argv)?;
    let defs = definitions(ws);
    if defs.is_empty() {
        return None;
    }
    let bash = bash()?;
    let (plain_dir, plain) = crate::probe::scratch_copy(ws)?;
    let (traced_dir, scratch) = crate::probe::scratch_copy(ws)?;
    let root = scratch.root().to_str()?.to_owned();
    if root.contains('\'') {
        return None;
    }
    let bash_path = bash.to_str()?;
    let (tools, env_file) = shims(bash_path, &root)?;
    let mut launch = vec![
        bash_path.to_owned(),
        "-c".to_owned(),
        LAUNCH.to_owned(),
        tools.path().to_str()?.to_owned(),
        env_file.to_str()?.to_owned(),
    ];
    launch.extend(command.iter().cloned());
    let want = plain.run(&command).ok()?;
    let got = scratch.run(&launch).ok()?;
    let shown = |out: &RunOutput, dir: &tempfile::TempDir| {
        let root = dir.path().to_string_lossy().into_owned();
        (out.code, out.timed_out, out.output.replace(&root, ""))
    };
    if want.timed_out || shown(&want, &plain_dir) != shown(&got, &traced_dir) {
        return None;
    }
    let bytes = scratch.read(TRACE_FILE).ok()??;
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_TRACE_BYTES)]).into_owned();
    let mut sources: HashMap<String, Option<Vec<String>>> = HashMap::new();
    let mut source = |file: &str, line: usize| -> Option<String> {
        let rel = file
            .strip_prefix(&root)
            .map_or(file, |r| r.trim_start_matches('/'))
            .trim_start_matches("./")
            .to_owned();
        sources
            .entry(rel.clone())
            .or_insert_with(|| {
                let bytes = scratch.read(&rel).ok()??;
                Some(
                    String::from_utf8_lossy(&bytes)
                        .lines()
                        .map(str::to_owned)
                        .collect(),
                )
            })
            .as_ref()?
            .get(line.checked_sub(1)?)
            .cloned()
    };
    let found = calls(&text, &defs, &mut source);
    (!found.is_empty()).then_some(found)
}

/// A temporary directory holding the `sh` and `bash` shims (bash at `bash_path`, `sh` asking
/// for POSIX mode) and the env file that switches xtrace on into `root`'s trace file; the
/// env file's path with it.
fn shims(bash_path: &str, root: &str) -> Option<(tempfile::TempDir, PathBuf)> {
    let tools = tempfile::Builder::new()
        .prefix("bellows-shtrace-")
        .tempdir()
        .ok()?;
    for (shim, as_sh) in [("sh", "1"), ("bash", "")] {
        let path = tools.path().join(shim);
        let text = format!("#!/bin/sh\nexport BELLOWS_AS_SH={as_sh}\nexec '{bash_path}' \"$@\"\n");
        std::fs::write(&path, text).ok()?;
        let mut perms = std::fs::metadata(&path).ok()?.permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&path, perms).ok()?;
    }
    let env_file = tools.path().join("env");
    std::fs::write(&env_file, ENV_FILE.replace("{ROOT}", root)).ok()?;
    Some((tools, env_file))
}

/// One traced command: how deep in command substitutions and subshells, which process, the
/// file and line it comes from, the function running it (empty at a script's top level), and
/// the command as bash shows it.
#[derive(Debug)]
struct Entry<'a> {
    depth: usize,
    pid: &'a str,
    file: &'a str,
    line: usize,
    function: &'a str,
    text: String,
}

/// The entries of a trace; a line that starts no entry continues the one before (a value
/// holding a newline).
fn entries(text: &str) -> Vec<Entry<'_>> {
    let mut out: Vec<Entry<'_>> = Vec::new();
    for raw in text.strip_suffix('\n').unwrap_or(text).split('\n') {
        match entry(raw) {
            Some(e) => out.push(e),
            None => {
                if let Some(last) = out.last_mut() {
                    last.text.push('\n');
                    last.text.push_str(raw);
                }
            }
        }
    }
    out
}

fn entry(raw: &str) -> Option<Entry<'_>> {
    let depth = raw.chars().take_while(|&c| c == '+').count();
    let mut fields = raw[depth..].strip_prefix(SEP)?.splitn(5, SEP);
    let (pid, file, line) = (fields.next()?, fields.next()?, fields.next()?);
    let (function, text) = (fields.next()?, fields.next()?);
    if depth == 0 || pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(Entry {
        depth,
        pid,
        file,
        line: line.parse().ok()?,
        function,
        text: text.to_owned(),
    })
}

/// `text` without a leading `local`, `export`, `readonly` or `declare`.
fn without_declaration(text: &str) -> &str {
    ["local ", "export ", "readonly ", "declare "]
        .iter()
        .find_map(|k| text.strip_prefix(k))
        .unwrap_or(text)
}

/// `NAME=VALUE` as bash traces an assignment (after `local`, `export`, `readonly` or
/// `declare`), the value without the quotes bash puts around it.
fn assignment(text: &str) -> Option<(&str, String)> {
    let text = without_declaration(text);
    let (name, value) = text.split_once('=')?;
    let ident = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ident {
        return None;
    }
    let unquoted = value
        .strip_prefix('\'')
        .and_then(|v| v.strip_suffix('\''))
        .filter(|v| !v.contains('\''));
    Some((name, unquoted.unwrap_or(value).to_owned()))
}

/// The function whose whole output the source line `line` assigns to `var`:
/// `var=$(f args)`, `local var="$(f "$1")"`, nothing else on the line but a comment. `None`
/// for a pipe, a list, a redirection, a second substitution or text around it.
fn captured_call<'a>(line: &'a str, var: &str) -> Option<&'a str> {
    let s = line.trim();
    let s = without_declaration(s);
    let s = s.strip_prefix(var)?.strip_prefix('=')?;
    let (quoted, s) = match s.strip_prefix('"') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let s = s.strip_prefix("$(")?;
    let close = s.find(')')?;
    let (inner, after) = (&s[..close], &s[close + 1..]);
    if inner.contains(['|', ';', '&', '<', '>', '`', '(']) {
        return None;
    }
    let after = if quoted {
        after.strip_prefix('"')?
    } else {
        after
    };
    let after = after.trim_start();
    if !(after.is_empty() || after.starts_with('#')) {
        return None;
    }
    inner.split_whitespace().next()
}

/// One call seen in the trace.
struct Seen<'a> {
    name: &'a str,
    args: &'a str,
    pid: &'a str,
    depth: usize,
    printed: Option<String>,
    ran: Vec<String>,
    /// What the body's own `echo`/`printf` lines printed, while nothing else the body ran
    /// could have printed too (`None` once something could); `said` tells whether one ran.
    echoed: Option<String>,
    said: bool,
}

/// Commands a function body may run beside its `echo`/`printf` lines and still have printed
/// only what those printed: tests, reads and shell bookkeeping, which print nothing.
const QUIET: &[&str] = &[
    "[", "[[", "test", "read", "return", "shift", ":", "true", "false", "local", "set", "unset",
    "((",
];

/// The words of a command as bash's trace writes it: plain, `'quoted'`, `$'with\nescapes'`,
/// and `\'` between quotes, run together. `None` for anything else.
fn trace_words(text: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek() == Some(&' ') {
            chars.next();
        }
        if chars.peek().is_none() {
            return Some(out);
        }
        let mut word = String::new();
        while let Some(&c) = chars.peek() {
            match c {
                ' ' => break,
                '\'' => {
                    chars.next();
                    loop {
                        match chars.next()? {
                            '\'' => break,
                            c => word.push(c),
                        }
                    }
                }
                '$' => {
                    chars.next();
                    if chars.peek() != Some(&'\'') {
                        word.push('$');
                        continue;
                    }
                    chars.next();
                    loop {
                        match chars.next()? {
                            '\'' => break,
                            '\\' => word.push(match chars.next()? {
                                'n' => '\n',
                                't' => '\t',
                                c @ ('\\' | '\'' | '"') => c,
                                _ => return None,
                            }),
                            c => word.push(c),
                        }
                    }
                }
                '\\' => {
                    chars.next();
                    word.push(chars.next()?);
                }
                '"' => return None,
                c => {
                    chars.next();
                    word.push(c);
                }
            }
        }
        out.push(word);
    }
}

/// What `printf FORMAT ARGS…` prints, for formats of `%s`, `%d`, `%%` (with a width and `-`)
/// and `\n`/`\t`/`\\`, the format reused while arguments are left, as printf does; `None`
/// for any other directive or escape.
fn printf_output(format: &str, args: &[String]) -> Option<String> {
    let mut out = String::new();
    let mut next = 0;
    loop {
        let before = next;
        let mut chars = format.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' => out.push(match chars.next()? {
                    'n' => '\n',
                    't' => '\t',
                    '\\' => '\\',
                    _ => return None,
                }),
                '%' => {
                    if chars.peek() == Some(&'%') {
                        chars.next();
                        out.push('%');
                        continue;
                    }
                    let left = chars.peek() == Some(&'-');
                    if left {
                        chars.next();
                    }
                    let mut width = String::new();
                    while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                        width.push(*d);
                        chars.next();
                    }
                    let width: usize = if width.is_empty() {
                        0
                    } else {
                        width.parse().ok()?
                    };
                    let kind = chars.next()?;
                    let arg = args.get(next).map_or("", String::as_str);
                    next += 1;
                    let value = match kind {
                        's' => arg.to_owned(),
                        'd' | 'i' => {
                            let n: i64 = if arg.is_empty() { 0 } else { arg.parse().ok()? };
                            n.to_string()
                        }
                        _ => return None,
                    };
                    let pad = " ".repeat(width.saturating_sub(value.chars().count()));
                    if left {
                        out.push_str(&value);
                        out.push_str(&pad);
                    } else {
                        out.push_str(&pad);
                        out.push_str(&value);
                    }
                }
                c => out.push(c),
            }
        }
        if next >= args.len() || next == before {
            return Some(out);
        }
    }
}

/// What an `echo`/`printf` line of a function body printed, from its trace (`words`), when
/// its source line (`line`) neither redirects nor pipes it; `None` when that is not known.
fn said(words: &[String], line: &str) -> Option<String> {
    if line.contains(['>', '|', '`']) || line.contains("$(") {
        return None;
    }
    let (first, rest) = words.split_first()?;
    match first.as_str() {
        "printf" => {
            let (format, args) = rest.split_first()?;
            printf_output(format, args)
        }
        "echo" => {
            if rest.iter().any(|w| w.contains('\\') || w.starts_with('-')) {
                return None;
            }
            Some(format!("{}\n", rest.join(" ")))
        }
        _ => None,
    }
}

/// Commands that change files: what a function ran of these is shown with its call, the
/// order of moves being what a rotation gets wrong (`mv -f app.log.1 app.log.2; mv -f
/// app.log.2 app.log.3`).
const FILE_COMMANDS: &[&str] = &[
    "mv", "cp", "rm", "mkdir", "rmdir", "ln", "touch", "chmod", "tar", "gzip", "gunzip",
    "truncate", "install",
];

/// Commands kept per call.
const MAX_RAN: usize = 6;

/// The functions of `defs` the trace calls, in the order first called, each with its first
/// distinct calls — those with what they printed first; `source` gives a file's line.
fn calls(
    text: &str,
    defs: &HashMap<String, String>,
    source: &mut dyn FnMut(&str, usize) -> Option<String>,
) -> Vec<Function> {
    let entries = entries(text);
    let mut seen: Vec<Seen<'_>> = Vec::new();
    for e in &entries {
        let (first, args) = e.text.split_once(' ').unwrap_or((&e.text, ""));
        // The call whose body this entry is a command of: it runs at its call's depth, in its
        // call's process.
        let body_of = |c: &Seen<'_>| c.pid == e.pid && c.depth == e.depth && c.name == e.function;
        if !e.function.is_empty() && assignment(&e.text).is_none() {
            let printed = match first {
                "echo" | "printf" => {
                    let line = source(e.file, e.line).unwrap_or_default();
                    trace_words(&e.text).and_then(|w| said(&w, &line))
                }
                _ if QUIET.contains(&first) => Some(String::new()),
                _ => None,
            };
            if let Some(call) = seen.iter_mut().rev().find(|c| body_of(c)) {
                match (printed, call.echoed.as_mut()) {
                    (Some(p), Some(so_far)) => {
                        call.said |= matches!(first, "echo" | "printf");
                        so_far.push_str(&p);
                    }
                    _ => call.echoed = None,
                }
            }
        }
        if defs.contains_key(first) {
            seen.push(Seen {
                name: first,
                args,
                pid: e.pid,
                depth: e.depth,
                printed: None,
                ran: Vec::new(),
                echoed: Some(String::new()),
                said: false,
            });
            continue;
        }
        if FILE_COMMANDS.contains(&first) && !e.function.is_empty() {
            // The function's own body runs at its call's depth, in its call's process.
            let call = seen
                .iter_mut()
                .rev()
                .find(|c| c.pid == e.pid && c.depth == e.depth && c.name == e.function);
            if let Some(call) = call.filter(|c| c.ran.len() < MAX_RAN) {
                call.ran.push(e.text.clone());
            }
            continue;
        }
        let Some((var, value)) = assignment(&e.text) else {
            continue;
        };
        let Some(line) = source(e.file, e.line) else {
            continue;
        };
        let Some(function) = captured_call(&line, var) else {
            continue;
        };
        let call = seen
            .iter_mut()
            .rev()
            .find(|c| c.pid == e.pid && c.depth == e.depth + 1 && c.name == function);
        if let Some(call) = call.filter(|c| c.printed.is_none()) {
            call.printed = Some(value);
        }
    }
    let mut out: Vec<Function> = Vec::new();
    for c in &seen {
        let i = match out.iter().position(|f| f.name == c.name) {
            Some(i) => i,
            None => {
                out.push(Function {
                    path: defs[c.name].clone(),
                    name: c.name.to_owned(),
                    calls: Vec::new(),
                    callers: Vec::new(),
                    count: 0,
                });
                out.len() - 1
            }
        };
        // A value captured whole, else what the body's own echo and printf lines printed
        // when nothing else it ran could print: `base_name photos/ printed nothing`, where
        // the call sits inside a printf's arguments and no line captures it alone.
        let echoed = c
            .echoed
            .as_deref()
            .filter(|_| c.said)
            .map(|t| t.trim_end_matches('\n').to_owned());
        out[i].count += 1;
        let call = Call {
            args: c.args.to_owned(),
            returned: c.printed.clone().or(echoed),
            raised: None,
            ran: c.ran.clone(),
            caller: None,
            locals: Vec::new(),
        };
        let calls = &mut out[i].calls;
        if calls.contains(&call) {
            continue;
        }
        // Calls that show something first: they are what says where a value goes wrong.
        let shows = |k: &Call| k.returned.is_some() || !k.ran.is_empty();
        let unkept = calls.iter().position(|k| !shows(k));
        match (shows(&call), unkept) {
            (true, Some(j)) => {
                calls.insert(j, call);
                calls.truncate(MAX_CALLS);
            }
            _ if calls.len() < MAX_CALLS => calls.push(call),
            _ => {}
        }
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

    /// The first message's lines for `functions`, run by the shell command `command`.
    fn section(command: &str, functions: Vec<Function>) -> String {
        crate::trace::section(&[crate::trace::Traced {
            command: command.to_owned(),
            functions,
            shell: true,
        }])
    }

    const SEMVER: &str = "# Helpers.\n\nmajor() { echo \"$1\" | cut -d. -f1; }\nminor() { echo \"$1\" | cut -d. -f2; }\npatch() { echo \"$1\" | cut -d. -f2; }\n";
    const BUMP: &str = "#!/bin/sh\n. ./semver.sh\nv=$1\nma=$(major \"$v\")\nmi=$(minor \"$v\")\npa=$(patch \"$v\")\nlabel=\"v$(major \"$v\")\"\necho \"$ma.$mi.$((pa + 1))\"\n";
    const TEST: &str = "#!/bin/sh\ncheck() {\n  got=$(sh bump.sh \"$1\")\n  [ \"$got\" = \"$2\" ] || { echo \"FAIL: got '$got', want '$2'\"; exit 1; }\n}\ncheck 1.2.3 1.2.4\ncheck 4.5.6 4.5.7\necho ok\n";

    #[test]
    fn each_shell_function_shows_what_its_captured_calls_printed() {
        let (_dir, ws) =
            crate::testing::repo(&[("semver.sh", SEMVER), ("bump.sh", BUMP), ("test.sh", TEST)]);
        let got = functions(&ws, &argv(&["sh", "test.sh"]));
        let names: Vec<(&str, &str)> = got
            .iter()
            .map(|f| (f.name.as_str(), f.path.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("check", "test.sh"),
                ("major", "semver.sh"),
                ("minor", "semver.sh"),
                ("patch", "semver.sh")
            ]
        );
        let call = |args: &str, printed: Option<&str>| Call {
            args: args.to_owned(),
            returned: printed.map(str::to_owned),
            raised: None,
            ran: Vec::new(),
            caller: None,
            locals: Vec::new(),
        };
        // `check` is called, its output kept by nobody; the test stops at the first failure.
        assert_eq!(got[0].calls, [call("1.2.3 1.2.4", None)]);
        // `major`'s second call is inside `"v$(major "$v")"`: text around it, no value.
        assert_eq!(
            got[1].calls,
            [call("1.2.3", Some("1")), call("1.2.3", None)]
        );
        assert_eq!(got[2].calls, [call("1.2.3", Some("2"))]);
        assert_eq!(got[3].calls, [call("1.2.3", Some("2"))]);
        let s = section("sh test.sh", got);
        assert!(
            s.contains("them: check (test.sh), major (semver.sh), minor (semver.sh), patch (semver.sh).\nWhat they were called with, and what they printed or did (the first calls):\n    major 1.2.3 printed 1\n    minor 1.2.3 printed 2\n    patch 1.2.3 printed 2\n"),
            "{s}"
        );
        // The copies are thrown away: the repository has no trace file.
        assert!(ws.read(TRACE_FILE).unwrap().is_none());
        // A script run by its path goes through the interpreter its first line names.
        let by_path = functions(&ws, &argv(&["./bump.sh", "0.9.9"]));
        assert_eq!(by_path[2].calls, [call("0.9.9", Some("9"))]);
    }

    #[test]
    fn nothing_is_traced_where_bash_would_show_otherwise_than_sh_or_no_function_runs() {
        let (_dir, ws) = crate::testing::repo(&[
            ("semver.sh", SEMVER),
            ("bump.sh", BUMP),
            // dash's `echo` reads `\c` as "stop here"; bash in POSIX mode with xpg_echo too.
            (
                "esc.sh",
                "f() { echo \"$1\\c\"; }\nx=$(f a)\necho \"[$x]\"\n",
            ),
            // A shell that tells itself apart: the traced run prints otherwise.
            (
                "which.sh",
                "f() { echo \"$1\"; }\nx=$(f a)\necho \"${BASH_VERSION:+bash}\"\n",
            ),
            ("plain.sh", "echo hello\n"),
        ]);
        let got = functions(&ws, &argv(&["sh", "esc.sh"]));
        assert_eq!(got[0].calls[0].returned.as_deref(), Some("a"));
        assert!(functions(&ws, &argv(&["sh", "which.sh"])).is_empty());
        assert!(functions(&ws, &argv(&["sh", "plain.sh"])).is_empty());
        for other in [
            &["python3", "bump.sh"][..],
            &["sh"],
            &["sh", "missing.sh"],
            &["./semver.sh"],
        ] {
            assert!(functions(&ws, &argv(other)).is_empty(), "{other:?}");
        }
    }

    #[test]
    fn a_function_that_changes_files_shows_the_commands_it_ran() {
        let (_dir, ws) = crate::testing::repo(&[
            (
                "logrot.sh",
                "shift_logs() {\n    i=1\n    while [ \"$i\" -lt \"$2\" ]; do\n        if [ -f \"$1.$i\" ]; then\n            mv -f \"$1.$i\" \"$1.$((i + 1))\"\n        fi\n        i=$((i + 1))\n    done\n}\n",
            ),
            (
                "rotate.sh",
                "#!/bin/sh\n. ./logrot.sh\nshift_logs \"$1\" 5\nmv -f \"$1\" \"$1.1\"\necho rotated\n",
            ),
            ("app.log", "new\n"),
            ("app.log.1", "one\n"),
            ("app.log.2", "two\n"),
        ]);
        let got = functions(&ws, &argv(&["sh", "rotate.sh", "app.log"]));
        assert_eq!(got.len(), 1, "{got:?}");
        // The moves in the order run (each one moving the file the one before moved); the
        // script's own `mv`, outside any function, is nobody's.
        assert_eq!(
            got[0].calls[0].ran,
            [
                "mv -f app.log.1 app.log.2",
                "mv -f app.log.2 app.log.3",
                "mv -f app.log.3 app.log.4",
                "mv -f app.log.4 app.log.5"
            ]
        );
        let s = section("sh rotate.sh app.log", got);
        assert!(
            s.contains("    shift_logs app.log 5 ran mv -f app.log.1 app.log.2; mv -f app.log.2 app.log.3; mv"),
            "{s}"
        );
        // The repository's files are as they were.
        assert_eq!(ws.read("app.log.1").unwrap().unwrap(), b"one\n");
    }

    /// archive-dir-sh: `base_name` runs inside printf's arguments, where no line captures it
    /// alone; its own printf line says what it printed, `photos/` giving nothing.
    #[test]
    fn a_function_that_only_echoes_shows_what_it_printed() {
        const PATHS: &str = "base_name() {\n    printf '%s\\n' \"${1##*/}\"\n}\n\narchive_path() {\n    printf '%s/%s.tar\\n' \"$2\" \"$(base_name \"$1\")\"\n}\n\nwarn() {\n    echo \"warning: $1\" >&2\n}\n\nshout() {\n    [ -n \"$1\" ] || return 1\n    local up\n    echo \"$1\" | tr a-z A-Z\n}\n\ngreet() {\n    echo hello \"$1\"\n    base_name \"$1\"\n}\n";
        const ARCHIVE: &str = "#!/bin/sh\n. ./paths.sh\nout=$(archive_path \"$1\" backups)\nwarn \"$out\"\nshout \"$out\"\ngreet \"$1\"\necho \"archived $1 to $out\"\n";
        let (_dir, ws) = crate::testing::repo(&[("paths.sh", PATHS), ("archive.sh", ARCHIVE)]);
        let got = functions(&ws, &argv(&["sh", "archive.sh", "photos/"]));
        let printed = |name: &str| -> Vec<Option<String>> {
            got.iter()
                .find(|f| f.name == name)
                .unwrap()
                .calls
                .iter()
                .map(|c| c.returned.clone())
                .collect()
        };
        // Captured whole by its line: as before.
        assert_eq!(printed("archive_path"), [Some("backups/.tar".to_owned())]);
        // Its printf's arguments: the empty base name, shown as printed nothing.
        assert_eq!(printed("base_name"), [Some(String::new())]);
        // Redirected, piped, or beside another call that prints: not known, not told.
        assert_eq!(printed("warn"), [None]);
        assert_eq!(printed("shout"), [None]);
        assert_eq!(printed("greet"), [None]);
        let shown = section("sh archive.sh photos/", got);
        assert!(
            shown.contains("base_name photos/ printed nothing"),
            "{shown}"
        );
    }

    #[test]
    fn trace_words_and_printf_formats_are_read_as_the_shell_does() {
        let words = |t: &str| trace_words(t).map(|w| w.join("|"));
        assert_eq!(words("printf '%s\\n' ''").as_deref(), Some("printf|%s\\n|"));
        assert_eq!(words("echo 'a b' c").as_deref(), Some("echo|a b|c"));
        assert_eq!(words("echo 'it'\\''s'").as_deref(), Some("echo|it's"));
        assert_eq!(words("echo $'a\\nb'").as_deref(), Some("echo|a\nb"));
        assert_eq!(words("echo 'open"), None);
        let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            printf_output("%s/%s.tar\\n", &args(&["backups", ""])).as_deref(),
            Some("backups/.tar\n")
        );
        // The format reused while arguments are left; widths; %%; a number.
        assert_eq!(
            printf_output("%s\\n", &args(&["a", "b"])).as_deref(),
            Some("a\nb\n")
        );
        assert_eq!(
            printf_output("[%-4s|%3d] 100%%", &args(&["ab", "7"])).as_deref(),
            Some("[ab  |  7] 100%")
        );
        assert_eq!(printf_output("%x", &args(&["1"])), None);
        assert_eq!(printf_output("%d", &args(&["seven"])), None);
        // A line that redirects or pipes says nothing of what the function printed.
        let w = args(&["echo", "x"]);
        assert_eq!(said(&w, "echo x").as_deref(), Some("x\n"));
        assert_eq!(said(&w, "echo x >&2"), None);
        assert_eq!(said(&w, "echo x | tr x y"), None);
    }

    #[test]
    fn a_value_is_told_only_where_the_line_captures_one_call_whole() {
        for (line, want) in [
            ("pa=$(patch \"$v\")", Some("patch")),
            ("  local pa=\"$(patch $1)\"  # the third", Some("patch")),
            ("export pa=$(patch)", Some("patch")),
            ("pa=$(patch \"$v\" | tr -d .)", None),
            ("pa=x$(patch \"$v\")", None),
            ("pa=$(patch \"$v\")$(minor \"$v\")", None),
            ("pa=$(patch \"$v\") && echo", None),
            ("pa=$(patch \"$v\" 2>/dev/null)", None),
            ("other=$(patch \"$v\")", None),
        ] {
            assert_eq!(captured_call(line, "pa"), want, "{line}");
        }
        assert_eq!(assignment("local x='a b'"), Some(("x", "a b".to_owned())));
        assert_eq!(assignment("x="), Some(("x", String::new())));
        assert_eq!(assignment("'[' a = b ']'"), None);
        assert_eq!(assignment("9x=1"), None);
    }

    #[test]
    fn a_value_holding_a_newline_continues_its_entry() {
        let s = SEP;
        let text = format!(
            "++{s}7{s}main.sh{s}2{s}{s}f a\n++{s}7{s}lib.sh{s}1{s}f{s}echo one\n+{s}7{s}main.sh{s}2{s}{s}x='one\ntwo'\n+{s}8{s}other.sh{s}1{s}{s}f b\n"
        );
        let defs: HashMap<String, String> = [("f".to_owned(), "lib.sh".to_owned())].into();
        let mut source = |file: &str, line: usize| {
            (file == "main.sh" && line == 2).then(|| "x=$(f a)".to_owned())
        };
        let got = calls(&text, &defs, &mut source);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].calls[0].returned.as_deref(), Some("one\ntwo"));
        // The same function in another process, not captured: after the captured one.
        assert_eq!(got[0].calls[1].args, "b");
        assert_eq!(got[0].calls[1].returned, None);
        // Shown on one line, its lines as `\n`; the call whose output nobody kept not at all.
        let s = section("sh main.sh", got);
        assert!(
            s.ends_with("(the first calls):\n    f a printed \"one\\ntwo\"\n"),
            "{s}"
        );
    }
}
