//! Which functions of the repository a task's wrong command runs, in the order it first calls
//! them: localisation from a symptom, without a model call. A task like "`python3 timer.py
//! 1h30m tea` sets 1800 s" names a script, but the fault is in a function another file defines
//! (`parse` in durations.py); the 1.5B rewrote timer.py turn after turn (timer-durations,
//! every attempt). The first message says what the command runs — `plan (timer.py), parse
//! (durations.py), format_hms (durations.py)` — so the functions that can be at fault are
//! named, with their files. Then each one's first calls, with their arguments and what they
//! returned or raised (`parse('1h30m') returned 1800`, `wrap('Thank you.', 36) returned []`,
//! `packs_needed(3, 10, 12) returned 0`): where a value first goes wrong is where the fault is,
//! which the names alone do not say.
//!
//! Python commands only (`python3 FILE args`, `python3 -c CODE args`), run once at the start
//! in a scratch copy of the repository, confined as every command is, under a trace hook
//! (`sys.settrace`, values shortened by `reprlib`) that records each call into a function of a
//! file inside the copy. Nothing is traced when
//! the command is no Python, the copy cannot be made, or it calls no function of the
//! repository; the section is then empty.

use crate::workspace::Workspace;

/// At most this many functions are named per command.
const MAX_FUNCTIONS: usize = 12;

/// Where the tracer writes what it saw, in the scratch copy's root.
const CALLS_FILE: &str = ".bellows-calls";

/// Runs the command (`file` or `code` mode, then the target and its arguments) and writes,
/// for each function of a file inside the working directory in the order first called, one
/// JSON line to the file named by its first argument — its path, its name, and its first
/// three calls: the arguments (less `self`/`cls`), and what it returned or the
/// exception it raised, each shortened by `reprlib`, and the function of the repository that
/// made the call (`path:name`; none from a module's top level) and its other local variables
/// when it returned; then every function that
/// called it and how often it ran — also when the command raises or exits. A raise is told from a `return None` by the event before the frame's `return`: an
/// `exception` with no line run after it.
const TRACER: &str = r#"import json, os, reprlib, runpy, sys
out, mode, target = sys.argv[1], sys.argv[2], sys.argv[3]
root = os.getcwd()
class Short(reprlib.Repr):
    # An object's own repr cut at its end, not in its middle: the fields stay whole.
    def repr_instance(self, x, level):
        s = object.__repr__(x) if type(x).__repr__ is object.__repr__ else repr(x)
        return s if len(s) <= self.maxother else s[: self.maxother - 1] + "…"
rp = Short()
rp.maxstring, rp.maxother, rp.maxlong, rp.maxlevel = 90, 100, 40, 3
rp.maxlist = rp.maxtuple = rp.maxset = rp.maxdict = 8
seen, callers, counts = {}, {}, {}
def show(v):
    try:
        return rp.repr(v)
    except Exception:
        return "?"
def watch(entry, params):
    last = [None]
    def local(frame, event, arg):
        if event == "exception":
            last[0] = arg[0].__name__
        elif event == "return":
            if last[0] is not None and arg is None:
                entry["raised"] = last[0]
            else:
                entry["returned"] = show(arg)
            kept = [(k, v) for k, v in frame.f_locals.items()
                    if k not in params and not k.startswith("__")
                    and not callable(v) and type(v).__name__ != "module"]
            entry["locals"] = [[k, show(v)] for k, v in kept[:8]]
            return None
        else:
            last[0] = None
        return local
    return local
def key_of(co):
    # Functions only (CO_OPTIMIZED): a class body runs as a call of the class's name.
    if not co.co_flags & 1 or co.co_name.startswith("<") or co.co_filename.startswith("<"):
        return None
    f = os.path.abspath(co.co_filename)
    if not f.startswith(root + os.sep):
        return None
    return (os.path.relpath(f, root), co.co_name)
def caller_of(frame):
    f = frame.f_back
    while f is not None:
        k = key_of(f.f_code)
        if k is not None:
            return k[0] + ":" + k[1]
        f = f.f_back
    return None
def trace(frame, event, arg):
    if event != "call":
        return None
    co = frame.f_code
    key = key_of(co)
    if key is None:
        return None
    if key not in seen and len(seen) >= 64:
        return None
    kept = seen.setdefault(key, [])
    caller = caller_of(frame)
    who = callers.setdefault(key, [])
    if caller is not None and caller not in who:
        who.append(caller)
    counts[key] = counts.get(key, 0) + 1
    if len(kept) >= 3:
        return None
    n = co.co_argcount + co.co_kwonlyargcount
    names = list(co.co_varnames[:n])
    if co.co_flags & 4:
        names.append(co.co_varnames[n])
        n += 1
    if co.co_flags & 8:
        names.append(co.co_varnames[n])
    args = []
    for i, name in enumerate(names):
        if i == 0 and name in ("self", "cls") or name not in frame.f_locals:
            continue
        args.append(show(frame.f_locals[name]))
    entry = {"args": ", ".join(args), "caller": caller}
    kept.append(entry)
    return watch(entry, set(names))
if mode == "file":
    sys.argv = [target] + sys.argv[4:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
else:
    sys.argv = ["-c"] + sys.argv[4:]
    sys.path.insert(0, root)
sys.settrace(trace)
try:
    if mode == "file":
        runpy.run_path(target, run_name="__main__")
    else:
        exec(compile(target, "<string>", "exec"), {"__name__": "__main__"})
finally:
    sys.settrace(None)
    with open(out, "w") as fh:
        for (path, name), kept in seen.items():
            fh.write(json.dumps({"path": path, "name": name, "calls": kept,
                                 "callers": callers.get((path, name), []),
                                 "count": counts.get((path, name), 0)}) + "\n")
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

/// A function of the repository a command ran, and its first calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    pub path: String,
    pub name: String,
    pub calls: Vec<Call>,
    /// The functions of the repository that called it (`path:name`), each once, in the
    /// order first seen; empty where that is not known (shell).
    pub callers: Vec<String>,
    /// How many times it ran: more than `calls.len()` when calls were left out.
    pub count: usize,
}

impl Function {
    /// `path:name`, as [`Call::caller`] and [`Function::callers`] name a function.
    pub fn key(&self) -> String {
        format!("{}:{}", self.path, self.name)
    }
}

/// One call: its arguments as Python shows them (shortened), and what it returned, or the
/// exception it raised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub args: String,
    pub returned: Option<String>,
    pub raised: Option<String>,
    /// A shell function's commands that change files (`mv -f app.log.1 app.log.2`), in the
    /// order run ([`crate::shtrace`]); empty for Python.
    pub ran: Vec<String>,
    /// The function of the repository that made the call (`path:name`), where known.
    pub caller: Option<String>,
    /// Its local variables other than its parameters as they were when it returned, each
    /// shortened as the values are (Python; at most eight).
    pub locals: Vec<(String, String)>,
}

impl Call {
    /// `parse('1h30m') returned 1800`; an object's address (`at 0x7f…`) left out, so that
    /// two runs read the same.
    pub(crate) fn line(&self, name: &str) -> String {
        let outcome = match (&self.returned, &self.raised) {
            (_, Some(e)) => format!(" raised {e}"),
            (Some(v), None) => format!(" returned {v}"),
            (None, None) => " did not return".to_owned(),
        };
        let outcome = cut(&outcome, MAX_RESULT);
        without_addresses(&format!("{name}({}){outcome}", cut(&self.args, MAX_ARGS)))
    }

    /// `patch 1.2.3 printed 2`, `shift_logs app.log 5 ran mv -f app.log.1 app.log.2; …`: a
    /// shell function's call whose output a variable kept, or that changed files
    /// ([`crate::shtrace`]); `None` for one that shows neither.
    fn shell_line(&self, name: &str) -> Option<String> {
        // Lines as `\n` within quotes, so that a listing stays on its call's line.
        let printed = self.returned.as_deref().map(|p| {
            if p.is_empty() {
                "nothing".to_owned()
            } else if p.contains('\n') {
                format!("\"{}\"", cut(&p.replace('\n', "\\n"), MAX_RESULT))
            } else {
                cut(p, MAX_RESULT)
            }
        });
        let ran = (!self.ran.is_empty()).then(|| cut(&self.ran.join("; "), MAX_RESULT));
        let outcome = match (ran, printed) {
            (None, None) => return None,
            (None, Some(p)) => format!("printed {p}"),
            (Some(r), None) => format!("ran {r}"),
            (Some(r), Some(p)) => format!("ran {r}, and printed {p}"),
        };
        let args = cut(&self.args, MAX_ARGS);
        let call = if args.is_empty() {
            name.to_owned()
        } else {
            format!("{name} {args}")
        };
        Some(format!("{call} {outcome}"))
    }
}

/// A call's arguments are cut after this many characters, what it returned after
/// [`MAX_RESULT`]: the value is what tells where a fault is.
const MAX_ARGS: usize = 100;
const MAX_RESULT: usize = 160;

/// A value as the first message shows it: cut after [`MAX_ARGS`] characters, without
/// object addresses.
pub(crate) fn shortened(value: &str) -> String {
    without_addresses(&cut(value, MAX_ARGS))
}

fn cut(text: &str, max: usize) -> String {
    if text.chars().count() > max {
        text.chars().take(max).collect::<String>() + "…"
    } else {
        text.to_owned()
    }
}

/// At most this many calls are shown per command.
const MAX_CALL_LINES: usize = 12;

/// `text` without the ` at 0x…` of Python's default object reprs.
fn without_addresses(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(" at 0x") {
        out.push_str(&rest[..i]);
        let after = &rest[i + " at 0x".len()..];
        let hex = after.chars().take_while(char::is_ascii_hexdigit).count();
        if hex == 0 {
            out.push_str(" at 0x");
        }
        rest = &after[hex..];
    }
    out.push_str(rest);
    out
}

/// The functions of the repository `argv` runs, in the order first called, with their
/// first calls; empty when it is no Python command the tracer knows or nothing could be
/// traced.
pub fn functions(ws: &Workspace, argv: &[String]) -> Vec<Function> {
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
    let text =
        |v: &serde_json::Value, key: &str| v.get(key).and_then(|x| x.as_str()).map(str::to_owned);
    String::from_utf8_lossy(&bytes)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| {
            let calls = v
                .get("calls")?
                .as_array()?
                .iter()
                .map(|c| Call {
                    args: text(c, "args").unwrap_or_default(),
                    returned: text(c, "returned"),
                    raised: text(c, "raised"),
                    ran: Vec::new(),
                    caller: text(c, "caller"),
                    locals: c
                        .get("locals")
                        .and_then(|l| l.as_array())
                        .map(|l| {
                            l.iter()
                                .filter_map(|kv| {
                                    let kv = kv.as_array()?;
                                    Some((
                                        kv.first()?.as_str()?.to_owned(),
                                        kv.get(1)?.as_str()?.to_owned(),
                                    ))
                                })
                                .collect()
                        })
                        .unwrap_or_default(),
                })
                .collect::<Vec<_>>();
            let callers = v
                .get("callers")
                .and_then(|c| c.as_array())
                .map(|c| c.iter().filter_map(|x| x.as_str().map(str::to_owned)))
                .into_iter()
                .flatten()
                .collect();
            let count = v
                .get("count")
                .and_then(serde_json::Value::as_u64)
                .map_or(calls.len(), |n| usize::try_from(n).unwrap_or(usize::MAX));
            Some(Function {
                path: text(&v, "path")?,
                name: text(&v, "name")?,
                calls,
                callers,
                count,
            })
        })
        .collect()
}

/// What one wrong or failing command of the task runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Traced {
    pub command: String,
    pub functions: Vec<Function>,
    /// A shell command ([`crate::shtrace`]): a call's value is what it printed.
    pub shell: bool,
}

/// The first message's lines: for each traced command, the functions of the repository it
/// runs, then their first calls with what each returned or raised — where a value first goes
/// wrong is where the fault is (`parse('1h30m') returned 1800`). Empty when none was traced.
pub fn section(traced: &[Traced]) -> String {
    let mut out = String::new();
    for t in traced {
        let shown: Vec<String> = t
            .functions
            .iter()
            .take(MAX_FUNCTIONS)
            .map(|f| format!("{} ({})", f.name, f.path))
            .collect();
        let more = t.functions.len().saturating_sub(MAX_FUNCTIONS);
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
        // A call made twice alike is said once: a test's `assert mean([2]) == 2, mean([2])`
        // listed `mean([2]) returned 0.0` twice.
        let mut lines: Vec<String> = Vec::new();
        for line in t.functions.iter().flat_map(|f| {
            f.calls.iter().filter_map(|c| match t.shell {
                false => Some(c.line(&f.name)),
                true => c.shell_line(&f.name),
            })
        }) {
            if lines.len() == MAX_CALL_LINES {
                break;
            }
            if !lines.contains(&line) {
                lines.push(line);
            }
        }
        if !lines.is_empty() {
            let what = if t.shell {
                "printed or did"
            } else {
                "returned"
            };
            out.push_str(&format!(
                "What they were called with, and what they {what} (the first calls):\n"
            ));
            for l in lines {
                out.push_str(&format!("    {l}\n"));
            }
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// [`functions`] as `(path, function)`.
    fn calls(ws: &Workspace, argv: &[String]) -> Vec<(String, String)> {
        functions(ws, argv)
            .into_iter()
            .map(|f| (f.path, f.name))
            .collect()
    }

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn a_call_made_twice_alike_is_said_once() {
        let call = |args: &str, returned: &str| Call {
            args: args.to_owned(),
            returned: Some(returned.to_owned()),
            raised: None,
            ran: Vec::new(),
            caller: None,
            locals: Vec::new(),
        };
        let t = Traced {
            command: "python3 test_stats.py".to_owned(),
            functions: vec![Function {
                path: "stats.py".to_owned(),
                name: "mean".to_owned(),
                calls: vec![
                    call("[2]", "0.0"),
                    call("[2]", "0.0"),
                    call("[1, 2, 3]", "1.6666666666666667"),
                ],
                callers: Vec::new(),
                count: 3,
            }],
            shell: false,
        };
        let s = section(&[t]);
        assert!(
            s.ends_with("(the first calls):\n    mean([2]) returned 0.0\n    mean([1, 2, 3]) returned 1.6666666666666667\n"),
            "{s}"
        );
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
    fn each_function_shows_its_first_calls_with_what_they_returned_or_raised() {
        let (_dir, ws) = crate::testing::repo(&[
            (
                "durations.py",
                "def parse(t):\n    if not t[:-1].isdigit():\n        raise ValueError(t)\n    return int(t[:-1]) * 60\n\n\ndef note(t):\n    try:\n        parse(t)\n    except ValueError:\n        pass\n\n\nclass Clock:\n    def tick(self, n, *rest, **opts):\n        return self\n",
            ),
            (
                "timer.py",
                "import sys\nfrom durations import parse, note, Clock\n\nfor t in sys.argv[1:]:\n    try:\n        parse(t)\n    except ValueError:\n        pass\nnote('x')\nClock().tick(1, 2, k=3)\nparse('oops')\n",
            ),
        ]);
        let got = functions(
            &ws,
            &argv(&["python3", "timer.py", "5m", "1h30m", "2m", "9m"]),
        );
        let names: Vec<&str> = got.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["parse", "note", "tick"]);
        let parse = &got[0];
        // The first three calls only, a raise told from a return.
        assert_eq!(parse.calls.len(), 3);
        assert_eq!(parse.calls[0].line("parse"), "parse('5m') returned 300");
        assert_eq!(
            parse.calls[1].line("parse"),
            "parse('1h30m') raised ValueError"
        );
        assert_eq!(parse.calls[2].line("parse"), "parse('2m') returned 120");
        // A function that caught an exception inside and returned None returned None.
        assert_eq!(got[1].calls[0].line("note"), "note('x') returned None");
        // `self` left out, *args and **kwargs shown, an object's address left out.
        let tick = got[2].calls[0].line("tick");
        assert_eq!(
            tick,
            "tick(1, (2,), {'k': 3}) returned <durations.Clock object>"
        );
        let t = Traced {
            command: "python3 timer.py 1h30m".to_owned(),
            functions: got,
            shell: false,
        };
        let s = section(&[t]);
        assert!(
            s.contains("runs these functions of the repository, in the order it first calls them: parse (durations.py), note (durations.py), tick (durations.py).\nWhat they were called with, and what they returned (the first calls):\n    parse('5m') returned 300\n    parse('1h30m') raised ValueError\n"),
            "{s}"
        );
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
