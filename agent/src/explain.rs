//! Failures a small model's change causes and cannot read its way out of, explained beside
//! the output that shows them.
//!
//! The 1.5B on book-year-field added `year: int` to the `Book` dataclass; every call of
//! `Book(title, author)` in the repository's test then failed with `TypeError:
//! Book.__init__() missing 1 required positional argument: 'year'`, and the model answered
//! DONE to each failing check, four times in a row. The traceback names the parameter; what
//! the model misses is that its own change made it required. Only a parameter the session
//! wrote is explained: nothing is said of code it did not touch.

use std::collections::{BTreeMap, BTreeSet};

use crate::workspace::Workspace;

/// A call that left out parameters, as Python's `TypeError` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingArgs {
    /// The function or class called (`Book` for `Book.__init__()`).
    pub callee: String,
    pub names: Vec<String>,
}

/// The first `TypeError: NAME() missing N required (positional|keyword-only) argument(s): 'a'
/// [, 'b'] [and 'c']` of `output`.
pub fn missing_args(output: &str) -> Option<MissingArgs> {
    output.lines().find_map(|line| {
        let rest = line.trim().strip_prefix("TypeError: ")?;
        let (callee, rest) = rest.split_once("() missing ")?;
        let (_, names) = rest.split_once(':')?;
        if !rest.contains(" required ") {
            return None;
        }
        let callee = callee
            .strip_suffix(".__init__")
            .unwrap_or(callee)
            .rsplit('.')
            .next()
            .unwrap_or(callee)
            .to_owned();
        let names: Vec<String> = names
            .split('\'')
            .skip(1)
            .step_by(2)
            .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_alphanumeric() || c == '_'))
            .map(str::to_owned)
            .collect();
        (!names.is_empty() && !callee.is_empty()).then_some(MissingArgs { callee, names })
    })
}

/// Whether `line` declares `name` without a default: a dataclass field (`name: T`) or a
/// parameter of a `def` line (`name` or `name: T`, followed by `,` or `)`).
fn declares_required(line: &str, name: &str) -> bool {
    let t = line.trim();
    if let Some(rest) = t.strip_prefix(name)
        && let Some(ty) = rest.trim_start().strip_prefix(':')
    {
        return !ty.contains('=') && !t.starts_with("def ");
    }
    let Some((_, params)) = t
        .strip_prefix("def ")
        .or_else(|| t.strip_prefix("async def "))
        .and_then(|r| r.split_once('('))
    else {
        return false;
    };
    params.split(',').any(|p| {
        let p = p.trim().trim_end_matches([')', ':']).trim();
        let head = p.split([':', '=']).next().unwrap_or("").trim();
        head == name && !p.contains('=')
    })
}

/// The hint for a check or command output that shows a call missing a parameter the
/// session itself made required (a line of a changed Python file, not there before, that
/// declares it without a default). `None` for anything else.
pub fn missing_args_hint(
    output: &str,
    ws: &Workspace,
    changed: &BTreeSet<String>,
    originals: &BTreeMap<String, Option<Vec<u8>>>,
) -> Option<String> {
    let missing = missing_args(output)?;
    let mut declared: Vec<(&str, &String)> = Vec::new();
    for path in changed.iter().filter(|p| p.ends_with(".py")) {
        let Some((text, before)) = crate::imports::written(ws, path, originals) else {
            continue;
        };
        for name in &missing.names {
            let wrote = text
                .lines()
                .any(|l| !before.contains(l) && declares_required(l, name));
            if wrote && !declared.iter().any(|(_, n)| *n == name) {
                declared.push((path.as_str(), name));
            }
        }
    }
    let (path, _) = declared.first()?;
    let names: Vec<String> = declared.iter().map(|(_, n)| format!("`{n}`")).collect();
    Some(format!(
        "`{}` is called without {} above, and your change to {path} made {} required: give {} \
         a default (`name: int = None` for a field, `name=None` for a parameter) so that calls \
         which leave it out still work, and handle that default where it is used",
        missing.callee,
        names.join(" and "),
        if names.len() == 1 { "it" } else { "them" },
        if names.len() == 1 { "it" } else { "each" },
    ))
}

/// The fixed words of each text `task` quotes in double quotes: runs of two words or more
/// that are not placeholders (a word in capitals such as `FILE` or `N`, a number). `"would
/// remove FILE"` gives `would remove`; `"N files would be removed"` gives `files would be
/// removed`.
fn quoted_runs(task: &str) -> Vec<String> {
    let mut out = Vec::new();
    for quoted in task.split('"').skip(1).step_by(2) {
        let mut run: Vec<&str> = Vec::new();
        let words = quoted.split_whitespace().map(Some).chain([None]);
        for w in words {
            let fixed = w.filter(|w| {
                w.chars().any(char::is_lowercase) && !w.chars().any(|c| c.is_ascii_digit())
            });
            match fixed {
                Some(w) => run.push(w),
                None => {
                    if run.len() >= 2 {
                        out.push(run.join(" "));
                    }
                    run.clear();
                }
            }
        }
    }
    out
}

/// The hint for a failing check whose output shows a text the task says an option it adds
/// prints, while the check's own file runs the script the task names without that option:
/// the new behaviour leaked into the old one. The 1.5B on clean-dry-run-sh (add `-n`, print
/// "would remove FILE"), told only that `sh test.sh` failed with `FAIL: would remove …`,
/// changed `removed` to `would remove` for every run, attempt after attempt, and never made
/// it depend on `-n`. `check_files`: each file the check runs, with its content; `before`:
/// what the files the session changed held before it — a text one of them held already is
/// not new, and not said to have leaked.
pub fn option_leaked(
    task: &str,
    output: &str,
    check_files: &[(&str, &str)],
    before: &[&str],
) -> Option<String> {
    let option = crate::asks::names_to_add(task)
        .into_iter()
        .find(|n| n.starts_with('-'))?;
    let leaked = quoted_runs(task).into_iter().find(|run| {
        output.contains(run.as_str()) && !before.iter().any(|b| b.contains(run.as_str()))
    })?;
    let scripts: Vec<&str> = task
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric() && c != '_' && c != '.'))
        .filter(|w| w.ends_with(".sh") || w.ends_with(".py"))
        .collect();
    let has_option = |line: &str| {
        line.split(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '(' | ')'))
            .any(|w| w == option)
    };
    let scripts = &scripts;
    let runs: Vec<_> = check_files
        .iter()
        .flat_map(|(path, text)| {
            text.lines().enumerate().filter_map(move |(n, line)| {
                let script = scripts.iter().find(|s| {
                    line.split(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '(' | '/'))
                        .any(|w| w == **s)
                })?;
                (!line.trim_start().starts_with('#')).then_some((
                    *path,
                    n + 1,
                    line.trim(),
                    *script,
                ))
            })
        })
        .collect();
    // Every line of the check that runs the script leaves the option out.
    if runs.iter().any(|(_, _, line, _)| has_option(line)) {
        return None;
    }
    let (path, n, line, script) = *runs.first()?;
    // The script first: told `test.sh runs clean.sh without -n`, the 1.5B wrote test.sh
    // with -n added, turn after turn (refused as the check's file).
    Some(format!(
        "{script} printed \"{leaked}\" without {option}: {path} runs it so (line {n}: \
         `{line}`), and {path} stays as it is. Without {option}, {script} must do and print \
         what it did before; only with {option} should it print \"{leaked}\""
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::testing::repo;

    #[test]
    fn an_option_s_text_printed_by_a_check_run_without_it_is_explained() {
        let task = "Add a -n option to clean.sh for a dry run: print \"would remove FILE\" for \
                    each file it would delete, end with \"N files would be removed\", and \
                    delete nothing.";
        assert_eq!(
            quoted_runs(task),
            ["would remove", "files would be removed"]
        );
        let test =
            "#!/bin/sh\n# runs sh clean.sh on a tree\nout=$(sh clean.sh \"$d/src\") || exit 1\n";
        let out = "FAIL: would remove /tmp/x/src/main.o\n3 files would be removed\n";
        let hint = option_leaked(task, out, &[("test.sh", test)], &[]).unwrap();
        assert!(
            hint.starts_with(
                "clean.sh printed \"would remove\" without -n: test.sh runs it so (line 3: \
                 `out=$(sh clean.sh"
            ),
            "{hint}"
        );
        // Output without the option's text, a check that runs the option itself, a check
        // that never runs the script, a task that adds no option: nothing to explain.
        let check = [("test.sh", test)];
        assert_eq!(option_leaked(task, "FAIL: left ./a.o", &check, &[]), None);
        let with = test.replace("sh clean.sh", "sh clean.sh -n");
        assert_eq!(
            option_leaked(task, out, &[("test.sh", with.as_str())], &[]),
            None
        );
        assert_eq!(
            option_leaked(task, out, &[("test.sh", "echo ok\n")], &[]),
            None
        );
        let no_option = "Make clean.sh print \"would remove FILE\" for each file.";
        assert_eq!(option_leaked(no_option, out, &check, &[]), None);
        // A text the script printed before the session has not leaked from the option.
        let said = "echo \"would remove $f\"\n";
        let hint = option_leaked(task, out, &check, &[said]).unwrap();
        assert!(
            hint.starts_with("clean.sh printed \"files would be removed\""),
            "{hint}"
        );
        let both = "echo \"would remove $f\"\necho \"$n files would be removed\"\n";
        assert_eq!(option_leaked(task, out, &check, &[both]), None);
    }

    #[test]
    fn python_type_errors_name_the_callee_and_the_parameters() {
        let one = "Traceback (most recent call last):\n  File \"t.py\", line 9\nTypeError: Book.__init__() missing 1 required positional argument: 'year'\n";
        assert_eq!(
            missing_args(one),
            Some(MissingArgs {
                callee: "Book".to_owned(),
                names: vec!["year".to_owned()],
            })
        );
        let two = "TypeError: plan() missing 2 required positional arguments: 'a' and 'b'";
        assert_eq!(missing_args(two).unwrap().names, ["a", "b"]);
        let three = "TypeError: m.f() missing 3 required keyword-only arguments: 'x', 'y', and 'z'";
        let m = missing_args(three).unwrap();
        assert_eq!((m.callee.as_str(), m.names.len()), ("f", 3));
        assert_eq!(missing_args("TypeError: unsupported operand"), None);
        assert_eq!(missing_args("ValueError: f() missing 1 required"), None);
    }

    #[test]
    fn only_a_parameter_the_session_made_required_is_explained() {
        let before = "from dataclasses import dataclass\n\n\n@dataclass\nclass Book:\n    title: str\n    author: str\n";
        let required = before.replace("author: str\n", "author: str\n    year: int\n");
        let defaulted = before.replace("author: str\n", "author: str\n    year: int = None\n");
        let out = "TypeError: Book.__init__() missing 1 required positional argument: 'year'";
        let changed: BTreeSet<String> = ["catalog.py".to_owned()].into();
        let originals: BTreeMap<String, Option<Vec<u8>>> =
            [("catalog.py".to_owned(), Some(before.as_bytes().to_vec()))].into();
        let (_dir, ws) = repo(&[("catalog.py", required.as_str())]);
        let hint = missing_args_hint(out, &ws, &changed, &originals).unwrap();
        assert!(
            hint.contains("`Book` is called without `year`")
                && hint.contains("your change to catalog.py made it required"),
            "{hint}"
        );
        // With a default, or a field that was there before the session: nothing said.
        let (_dir, ws) = repo(&[("catalog.py", defaulted.as_str())]);
        assert_eq!(missing_args_hint(out, &ws, &changed, &originals), None);
        let originals_had: BTreeMap<String, Option<Vec<u8>>> =
            [("catalog.py".to_owned(), Some(required.as_bytes().to_vec()))].into();
        let (_dir, ws) = repo(&[("catalog.py", required.as_str())]);
        assert_eq!(missing_args_hint(out, &ws, &changed, &originals_had), None);
    }

    #[test]
    fn def_lines_declare_parameters_with_or_without_defaults() {
        assert!(declares_required("def plan(duration, label):", "label"));
        assert!(declares_required(
            "def plan(duration, label: str):",
            "label"
        ));
        assert!(!declares_required(
            "def plan(duration, label=\"timer\"):",
            "label"
        ));
        assert!(!declares_required("def plan(duration):", "label"));
        assert!(declares_required("    year: int", "year"));
        assert!(!declares_required("    year: int = 0", "year"));
        assert!(!declares_required("    years: int", "year"));
    }
}
