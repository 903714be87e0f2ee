//! Where a traced value first goes wrong: of the calls [`crate::trace`] recorded for a
//! command the task calls wrong, the innermost one that was given the task's text and returned
//! it lost, or that returned the value the task calls wrong from arguments without it. The
//! trace alone names five functions for notice-wrap and shows `wrap('Thank you.', 36)
//! returned []` among twelve lines; the 1.5B rewrote notice.py and notice.txt, attempt after
//! attempt. Said in one sentence, and a focused attempt shows that function alone.
//!
//! Facts only, never a guess: a call counts where its recorded values show it (a return cut
//! short by `reprlib` is never taken for one that lacks a text), "innermost" means that no
//! call it made counts too, and nothing is said where a function it called ran more often
//! than the trace kept, where one of those calls' values was cut short, or where the
//! innermost calls are of more than one function. Python only: a shell trace does not know
//! who called whom.

use crate::probe::Probe;
use crate::trace::{Call, Function, Traced};

/// What went wrong in the call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wrong {
    /// It was given this text of the task's, and what it returned does not hold it.
    Lost(String),
    /// It returned this value the task calls wrong; its arguments hold none of them.
    Made(String),
}

/// The function where a value first goes wrong, and the call that shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub path: String,
    pub name: String,
    /// The call as the trace shows it: `wrap('Thank you.', 36) returned []`.
    pub call: String,
    /// Its arguments as the trace shows them: `'Thank you.', 36`.
    pub args: String,
    /// Its local variables when it returned ([`Call::locals`]): `line = 'Thank you.'`
    /// beside `lines = []` shows what was left out.
    pub locals: Vec<(String, String)>,
    pub wrong: Wrong,
}

impl Origin {
    /// The first message's sentence.
    pub fn sentence(&self) -> String {
        let (path, name, call) = (&self.path, &self.name, &self.call);
        let (what, change) = match &self.wrong {
            Wrong::Lost(text) => (
                format!(
                    "The text is lost in `{name}` ({path}): `{call}` — it was given \"{text}\", \
                     and what it returned does not hold it."
                ),
                "so that it keeps it",
            ),
            Wrong::Made(value) => (
                format!(
                    "The wrong value first appears in what `{name}` ({path}) returns: `{call}` \
                     — {value} is the value the task calls wrong, and its arguments do not \
                     hold it."
                ),
                "so that it returns the right value",
            ),
        };
        let vars = if self.locals.is_empty() {
            String::new()
        } else {
            let held: Vec<String> = self
                .locals
                .iter()
                .map(|(k, v)| format!("{k} = {}", crate::trace::shortened(v)))
                .collect();
            format!(
                " When it returned, its variables held: {}.",
                held.join(", ")
            )
        };
        format!("{what}{vars} Change `{name}` {change}.\n")
    }
}

/// Where the value of a traced Python command first goes wrong, by the texts the task says
/// it leaves out ([`crate::expect::missing`]) or the values it calls wrong
/// ([`crate::probe::values_called_wrong`]); `None` where the trace does not show one place.
pub fn find(task: &str, probes: &[Probe], traced: &[Traced]) -> Option<Origin> {
    traced.iter().filter(|t| !t.shell).find_map(|t| {
        let probe = probes.iter().find(|p| p.command == t.command)?;
        let lost = crate::expect::missing(task, probe);
        let wrong: Vec<String> = crate::probe::values_called_wrong(task, &probe.command)
            .into_iter()
            .filter(|v| v.chars().count() >= 2)
            .collect();
        innermost(&t.functions, |c| lost_in(c, &lost))
            .or_else(|| innermost(&t.functions, |c| made_in(c, &wrong)))
    })
}

/// `traced` with the origin's function alone, for a focused first message
/// ([`crate::whole::functions_message`]).
pub fn only(traced: &[Traced], origin: &Origin) -> Vec<Traced> {
    traced
        .iter()
        .map(|t| Traced {
            functions: t
                .functions
                .iter()
                .filter(|f| f.path == origin.path && f.name == origin.name)
                .cloned()
                .collect(),
            ..t.clone()
        })
        .filter(|t| !t.functions.is_empty())
        .collect()
}

/// Calls of the origin's function with one text or list argument of its call that held the
/// lost text emptied (`wrap('', 36)` beside `wrap('Thank you.', 36)`), each as a command whose
/// output must stay
/// as it was ([`Probe::sibling`], refused as `regressed`): the task says nothing of them, and
/// a fix for the case it names must leave them as they were. The 1.5B made notice-wrap's
/// `wrap` append its last line always, and `wrap('', 36)` returned `['']` where it returned
/// `[]`; the shipped notice came out right, and the DONE was taken. None where an argument is
/// no literal Python can read back (an object, a value cut short), the module cannot be
/// imported by its path, or the task writes the call itself. The caller keeps those that ran
/// cleanly before the change.
pub fn edge_probes(task: &str, origin: &Origin) -> Vec<Edge> {
    // Only for a text lost, and only the arguments that held it: an argument without the
    // text has none to lose, so a fix has no cause to change what the function makes of it.
    // A wrong value may be wrong for an empty argument too (an off-by-one), and its fix
    // rightly changes that.
    let Wrong::Lost(text) = &origin.wrong else {
        return Vec::new();
    };
    let Some(module) = module_of(&origin.path) else {
        return Vec::new();
    };
    let Some(args) = literal_args(&origin.args) else {
        return Vec::new();
    };
    let mut out: Vec<Edge> = Vec::new();
    for (i, arg) in args.iter().enumerate() {
        if !holds_words(arg, text) {
            continue;
        }
        let empty = match arg.chars().next() {
            Some('\'' | '"') if arg.len() > 2 => "''",
            Some('[') if arg != "[]" => "[]",
            _ => continue,
        };
        let mut varied = args.clone();
        varied[i] = empty.to_owned();
        let call = format!("{}({})", origin.name, varied.join(", "));
        if task.contains(&call) {
            continue;
        }
        let code = format!("from {module} import {}; print(repr({call}))", origin.name);
        let argv = vec!["python3".to_owned(), "-c".to_owned(), code];
        if let Some(p) = Probe::to_keep(argv) {
            out.push(Edge {
                call,
                probe: Probe { sibling: true, ..p },
            });
        }
    }
    out
}

/// An edge call ([`edge_probes`]): the call as Python reads it (`wrap('', 36)`) and the
/// command that prints what it returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    pub call: String,
    pub probe: Probe,
}

/// The first message's line for an edge call ([`edge_probes`]) that ran cleanly before the
/// change, `run` its run: `` `wrap('', 36)` returns [] now, and must return the same after
/// your change.`` — said before the first reply, not only at a refused DONE (the 1.5B, told
/// at DONE, wrote the same always-appending `wrap` again). `None` for an output that is not
/// one short line.
pub fn edge_note(edge: &Edge, run: &crate::probe::ProbeRun) -> Option<String> {
    let call = &edge.call;
    let value = run.output.trim();
    if value.is_empty() || value.contains('\n') || value.chars().count() > 80 {
        return None;
    }
    Some(format!(
        "`{call}` returns {value} now, and must return the same after your change.\n"
    ))
}

/// What the origin's function held when an edge call ([`edge_probes`]) that `commands` name
/// returned, run again under the tracer on the files as they are now: `` `wrap('', 36)`
/// returned [''] now; when it returned, its variables held: lines = [''], line = ''``, one
/// line per such call. The 1.5B, told only that `wrap('', 36)` printed `['']` where it
/// printed `[]`, wrote the same always-appending `wrap` three times over. Empty when none
/// of `commands` is an edge call or nothing could be traced.
pub fn edge_variables(
    ws: &crate::workspace::Workspace,
    task: &str,
    origin: &Origin,
    commands: &[&str],
) -> String {
    let mut out = String::new();
    for p in edge_probes(task, origin)
        .iter()
        .map(|e| &e.probe)
        .filter(|p| commands.contains(&p.command.as_str()))
    {
        let functions = crate::trace::functions(ws, &p.argv);
        let Some(call) = functions
            .iter()
            .find(|f| f.path == origin.path && f.name == origin.name)
            .and_then(|f| f.calls.first())
        else {
            continue;
        };
        let held: Vec<String> = call
            .locals
            .iter()
            .map(|(k, v)| format!("{k} = {}", crate::trace::shortened(v)))
            .collect();
        if held.is_empty() {
            continue;
        }
        out.push_str(&format!(
            "`{}` now; when it returned, its variables held: {}.\n",
            call.line(&origin.name),
            held.join(", ")
        ));
    }
    out
}

/// The module a file of the repository is imported as from its root: `textfmt.py` →
/// `textfmt`, `pkg/fmt.py` → `pkg.fmt`; `None` for a part that is no identifier.
fn module_of(path: &str) -> Option<String> {
    let stem = path.strip_suffix(".py")?;
    let parts: Vec<&str> = stem.split('/').collect();
    let ident = |p: &&str| {
        p.chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
            && p.chars().all(|c| c.is_alphanumeric() || c == '_')
    };
    (parts.iter().all(ident) && parts.last() != Some(&"__init__")).then(|| parts.join("."))
}

/// The arguments of a traced call (`'a, b', [1, 2], 36`) split at their top-level commas,
/// when each is a literal: a text, a list of literals, a number, `True`/`False`/`None`.
/// `None` for anything else — an object, a tuple or mapping (which may be `*args` or
/// `**kwargs`), a value cut short.
fn literal_args(args: &str) -> Option<Vec<String>> {
    if cut_short(args) {
        return None;
    }
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut current = String::new();
    for c in args.chars() {
        if let Some(q) = quote {
            current.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' => quote = Some(c),
            '[' => depth += 1,
            ']' => depth = depth.checked_sub(1)?,
            '(' | '{' | '<' => return None,
            ',' if depth == 0 => {
                out.push(current.trim().to_owned());
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    if quote.is_some() || depth != 0 {
        return None;
    }
    if !current.trim().is_empty() {
        out.push(current.trim().to_owned());
    }
    let literal = |a: &String| {
        let first = a.chars().next();
        matches!(first, Some('\'' | '"' | '['))
            || a.parse::<f64>().is_ok()
            || ["True", "False", "None"].contains(&a.as_str())
    };
    out.iter().all(literal).then_some(out)
}

/// The text of `texts` the call was given and did not return.
fn lost_in(call: &Call, texts: &[String]) -> Option<Wrong> {
    let returned = call.returned.as_deref().filter(|r| !cut_short(r))?;
    if call.raised.is_some() {
        return None;
    }
    texts
        .iter()
        .find(|t| holds_words(&call.args, t) && !holds_words(returned, t))
        .map(|t| Wrong::Lost(t.clone()))
}

/// The value of `values` the call returned from arguments that hold none of them.
fn made_in(call: &Call, values: &[String]) -> Option<Wrong> {
    let returned = call.returned.as_deref()?;
    if call.raised.is_some() || cut_short(&call.args) {
        return None;
    }
    if values
        .iter()
        .any(|v| crate::expect::holds_value(&call.args, v))
    {
        return None;
    }
    values
        .iter()
        .find(|v| crate::expect::holds_value(returned, v))
        .map(|v| Wrong::Made(v.clone()))
}

/// The call that `counts` and that made no call that counts too, where every such call is of
/// one function (the one with the shortest arguments is shown) and what it called was traced
/// whole.
fn innermost(functions: &[Function], counts: impl Fn(&Call) -> Option<Wrong>) -> Option<Origin> {
    let hits: Vec<(&Function, &Call, Wrong)> = functions
        .iter()
        .flat_map(|f| {
            f.calls
                .iter()
                .filter_map(|c| counts(c).map(|w| (f, c, w)))
                .collect::<Vec<_>>()
        })
        .collect();
    let inner: Vec<&(&Function, &Call, Wrong)> = hits
        .iter()
        .filter(|(f, _, _)| {
            let key = f.key();
            !hits
                .iter()
                .any(|(_, c, _)| c.caller.as_deref() == Some(key.as_str()))
        })
        .collect();
    let (f, call, wrong) = inner
        .iter()
        .min_by_key(|(_, c, _)| c.args.chars().count())?;
    if inner.iter().any(|(g, _, _)| g.key() != f.key()) {
        return None;
    }
    // What it called must be known whole: every call kept, none cut short.
    let key = f.key();
    let callees_whole = functions
        .iter()
        .filter(|g| g.callers.contains(&key))
        .all(|g| {
            g.count <= g.calls.len()
                && g.calls
                    .iter()
                    .all(|c| !cut_short(&c.args) && !c.returned.as_deref().is_some_and(cut_short))
        });
    callees_whole.then(|| Origin {
        path: f.path.clone(),
        name: f.name.clone(),
        call: call.line(&f.name),
        args: call.args.clone(),
        locals: call.locals.clone(),
        wrong: wrong.clone(),
    })
}

/// `reprlib` cut the value short (`'abc...xyz'`, `[1, 2, ...]`), or the tracer's own cut (`…`).
fn cut_short(value: &str) -> bool {
    value.contains("...") || value.contains('…')
}

/// The words of `text` (letters and digits, lower case) run in `value` one after another, as
/// Python shows it: `'Tuesday without', 'a fine.'` holds "without a fine.", and an escaped
/// line break (`\n`) parts words as a blank does.
fn holds_words(value: &str, text: &str) -> bool {
    let want = words(text);
    let have = words(&value.replace("\\n", " ").replace("\\t", " "));
    !want.is_empty() && have.windows(want.len()).any(|w| w == want.as_slice())
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn call(args: &str, returned: &str, caller: Option<&str>) -> Call {
        Call {
            args: args.to_owned(),
            returned: Some(returned.to_owned()),
            raised: None,
            ran: Vec::new(),
            caller: caller.map(str::to_owned),
            locals: Vec::new(),
        }
    }

    fn function(path: &str, name: &str, calls: Vec<Call>, callers: &[&str]) -> Function {
        Function {
            path: path.to_owned(),
            name: name.to_owned(),
            count: calls.len(),
            calls,
            callers: callers.iter().map(|c| (*c).to_owned()).collect(),
        }
    }

    fn traced(functions: Vec<Function>) -> Vec<Traced> {
        vec![Traced {
            command: "python3 notice.py".to_owned(),
            functions,
            shell: false,
        }]
    }

    fn notice() -> Vec<Function> {
        vec![
            function(
                "notice.py",
                "render",
                vec![call(
                    "'The library is closed\\n\\nThank you.\\n', 36",
                    "['+---+', '| The library is closed |', '+---+']",
                    None,
                )],
                &[],
            ),
            function(
                "textfmt.py",
                "wrap",
                vec![
                    call(
                        "'The library is closed', 36",
                        "['The library is closed']",
                        Some("notice.py:render"),
                    ),
                    call("'Thank you.', 36", "[]", Some("notice.py:render")),
                ],
                &["notice.py:render"],
            ),
        ]
    }

    const TASK: &str = "`python3 notice.py` drops text: the closing \"Thank you.\" never appears.";

    fn probes() -> Vec<Probe> {
        vec![crate::probe::symptom("python3 notice.py")]
    }

    #[test]
    fn the_innermost_call_that_loses_the_text_is_named() {
        let got = find(TASK, &probes(), &traced(notice())).unwrap();
        assert_eq!(
            (got.path.as_str(), got.name.as_str()),
            ("textfmt.py", "wrap")
        );
        assert_eq!(got.call, "wrap('Thank you.', 36) returned []");
        assert_eq!(got.wrong, Wrong::Lost("Thank you.".to_owned()));
        assert!(got.sentence().contains("lost in `wrap` (textfmt.py)"));
        // The text split over two lines of what it returned is kept, not lost.
        let mut kept = notice();
        kept[1].calls[1] = call(
            "'Thank you.', 6",
            "['Thank', 'you.']",
            Some("notice.py:render"),
        );
        kept[0].calls[0].returned = Some("['| Thank |', '| you. |']".to_owned());
        assert_eq!(find(TASK, &probes(), &traced(kept)), None);
    }

    #[test]
    fn nothing_is_named_where_the_trace_does_not_show_one_place() {
        // The callee ran more often than the trace kept: its other calls may lose the text.
        let mut more = notice();
        more[1].count = 5;
        more[1].calls[1].returned = Some("['Thank you.']".to_owned());
        assert_eq!(find(TASK, &probes(), &traced(more)), None);
        // What the innermost returned was cut short: it may hold the text.
        let mut short = notice();
        short[1].calls[1].returned = Some("['a', 'b', ...]".to_owned());
        assert_eq!(find(TASK, &probes(), &traced(short)), None);
        // Two functions lose it, neither calling the other.
        let mut two = notice();
        two[1].callers.clear();
        for c in &mut two[1].calls {
            c.caller = None;
        }
        assert_eq!(find(TASK, &probes(), &traced(two)), None);
        // A shell trace, or a task that names no text, says nothing.
        let mut shell = traced(notice());
        shell[0].shell = true;
        assert_eq!(find(TASK, &probes(), &shell), None);
        assert_eq!(
            find("`python3 notice.py` is slow.", &probes(), &traced(notice())),
            None
        );
    }

    #[test]
    fn edge_calls_empty_one_text_or_list_argument_at_a_time() {
        let origin = find(TASK, &probes(), &traced(notice())).unwrap();
        let edges = edge_probes(TASK, &origin);
        let commands: Vec<&str> = edges.iter().map(|e| e.probe.command.as_str()).collect();
        assert_eq!(
            commands,
            ["python3 -c \"from textfmt import wrap; print(repr(wrap('', 36)))\""]
        );
        assert_eq!(edges[0].call, "wrap('', 36)");
        assert!(
            edges
                .iter()
                .all(|e| e.probe.sibling && e.probe.keep && !e.probe.symptom)
        );
        let run = |output: &str| crate::probe::ProbeRun {
            command: edges[0].probe.command.clone(),
            code: Some(0),
            timed_out: false,
            output: output.to_owned(),
        };
        assert_eq!(
            edge_note(&edges[0], &run("[]\n")).unwrap(),
            "`wrap('', 36)` returns [] now, and must return the same after your change.\n"
        );
        assert_eq!(edge_note(&edges[0], &run("a\nb\n")), None);
        assert_eq!(edge_note(&edges[0], &run(&"x".repeat(81))), None);
        // The task writing the call itself: it is what the task is about, not an edge.
        let about = format!("{TASK} Also wrap('', 36) is wrong.");
        assert!(edge_probes(&about, &origin).is_empty());
        // Lists, texts with commas and quotes, numbers and None; each emptied on its own.
        assert_eq!(
            literal_args("'a, \\'b', [1, [2, 3]], -4.5, None").unwrap(),
            ["'a, \\'b'", "[1, [2, 3]]", "-4.5", "None"]
        );
        let mut o = origin.clone();
        o.path = "pkg/fmt.py".to_owned();
        o.args = "'Thank you.', ['a', 'Thank', 'you'], ['b'], 2".to_owned();
        let commands: Vec<String> = edge_probes("", &o)
            .into_iter()
            .map(|e| e.probe.command)
            .collect();
        assert_eq!(commands.len(), 2, "{commands:?}");
        assert!(commands[0].contains(
            "from pkg.fmt import wrap; print(repr(wrap('', ['a', 'Thank', 'you'], ['b'], 2)))"
        ));
        assert!(commands[1].contains("wrap('Thank you.', [], ['b'], 2)"));
        // A wrong value: none (an empty argument may be wrong too, and its fix right).
        let mut made = o.clone();
        made.wrong = Wrong::Made("1800".to_owned());
        assert!(edge_probes("", &made).is_empty());
        // Objects, tuples (maybe *args), values cut short, and paths no import names: none.
        for args in [
            "<Clock object>",
            "(2,), {'k': 3}",
            "'abc...xyz', 3",
            "Order(number='1')",
        ] {
            o.path = "fmt.py".to_owned();
            o.args = args.to_owned();
            assert!(edge_probes("", &o).is_empty(), "{args}");
        }
        o.args = "'Thank you.'".to_owned();
        for path in ["my-lib/fmt.py", "fmt.sh", "pkg/__init__.py"] {
            o.path = path.to_owned();
            assert!(edge_probes("", &o).is_empty(), "{path}");
        }
    }

    #[test]
    fn the_wrong_value_is_traced_to_the_call_that_made_it() {
        let task = "`python3 timer.py 1h30m tea` sets the timer for 1800 s (0:30:00) instead of \
                    an hour and a half.";
        let functions = vec![
            function(
                "timer.py",
                "plan",
                vec![call("'1h30m', 'tea'", "'tea: 1800 s (0:30:00)'", None)],
                &[],
            ),
            function(
                "durations.py",
                "parse",
                vec![call("'1h30m'", "1800", Some("timer.py:plan"))],
                &["timer.py:plan"],
            ),
            function(
                "durations.py",
                "format_hms",
                vec![call("1800", "'0:30:00'", Some("timer.py:plan"))],
                &["timer.py:plan"],
            ),
        ];
        let t = vec![Traced {
            command: "python3 timer.py 1h30m tea".to_owned(),
            functions,
            shell: false,
        }];
        let p = vec![crate::probe::symptom("python3 timer.py 1h30m tea")];
        let got = find(task, &p, &t).unwrap();
        assert_eq!(
            (got.name.as_str(), got.wrong.clone()),
            ("parse", Wrong::Made("1800".to_owned()))
        );
        assert!(got.sentence().contains("`parse('1h30m') returned 1800`"));
        // A value a digit longer is another value.
        let mut other = t.clone();
        other[0].functions[1].calls[0].returned = Some("18000".to_owned());
        other[0].functions[0].calls[0].returned = Some("'tea: 18000 s'".to_owned());
        other[0].functions[2].calls[0].args = "18000".to_owned();
        other[0].functions[2].calls[0].returned = Some("'5:00:00'".to_owned());
        assert_eq!(find(task, &p, &other), None);
    }
}
