//! How a shell script that reads no options takes a new one, told in the first message where
//! the task adds one. Asked to add `-c` to todo.sh (`sh todo.sh -c notes.txt` prints the
//! count), a script that reads only `$1`, the 1.5B replaced the script's behaviour with the
//! count, moved `-c` after the file in the usage line, or wrote the file back as it was — in
//! every attempt of session 27 (benches/README.md). Shown the shape of an option read before
//! the arguments, with the line where the script first reads `$1`, it has the idiom to copy.
//!
//! Said only where the task adds an option ([`crate::asks::names_to_add`]) to a shell script
//! it names that has no option handling yet: no `getopts` (whose option letters
//! [`crate::asks::getopts_without`] mends), no `case` on an argument, no test of `$1` against
//! an option, and no mention of the option itself.

use crate::workspace::Workspace;

/// The first message's note for each shell script `task` names that should take an option
/// it adds and reads none yet; `None` where there is none.
pub fn note(task: &str, ws: &Workspace) -> Option<String> {
    let options: Vec<String> = crate::asks::names_to_add(task)
        .into_iter()
        .filter(|n| n.starts_with('-'))
        .collect();
    let option = options.first()?;
    let mut out = String::new();
    for (path, text) in crate::targets::named_texts(task, ws) {
        if !is_shell(&path, &text) || reads_options(&text, option) {
            continue;
        }
        let Some(first) = first_argument_line(&text) else {
            continue;
        };
        let line = text.lines().nth(first - 1).unwrap_or_default().trim();
        let var = variable(option);
        out.push_str(&format!(
            "{path} reads no options yet: its arguments are $1, $2, …, first read on line \
             {first} (`{line}`). A sh script takes {option} before its other arguments this \
             way, placed above line {first}, so that the `shift` comes before any line reads \
             $1:\n```sh\n{var}=0\nif [ \"$1\" = \"{option}\" ]; then\n  {var}=1\n  \
             shift\nfi\n```\nAfter the `shift`, $1 is the argument it was without {option}; \
             then test `[ \"${var}\" = 1 ]` where the script should act differently, and keep \
             everything else as it is.\n"
        ));
    }
    (!out.is_empty()).then_some(out)
}

/// For a task that adds an option, a shell script it names that tests `$1` against the
/// option after an earlier line has read `$1`: that line took the option for the argument.
/// The sentence says both lines. The 1.5B put `if [ "$1" = "-c" ]; then … shift` after
/// `file=$1`, so `file` held `-c`, and said DONE four times in a row while the count was
/// wrong (session 28).
pub fn read_before_test(task: &str, ws: &Workspace) -> Option<String> {
    let option = crate::asks::names_to_add(task)
        .into_iter()
        .find(|n| n.starts_with('-'))?;
    crate::targets::named_texts(task, ws)
        .into_iter()
        .filter(|(path, text)| is_shell(path, text))
        .find_map(|(path, text)| {
            let lines: Vec<&str> = text.lines().collect();
            let test = lines.iter().position(|l| {
                let c = code(l);
                (c.contains("\"$1\"") || c.contains("$1 ")) && c.contains(&option)
            })?;
            let read = first_argument_line(&text)? - 1;
            (read < test).then(|| {
                format!(
                    "{path} line {} `{}` reads $1 before line {} `{}` tests it for {option}: \
                     given {option}, that line takes {option} itself for the argument. Test \
                     and `shift` {option} first, above line {}.",
                    read + 1,
                    lines[read].trim(),
                    test + 1,
                    lines[test].trim(),
                    read + 1
                )
            })
        })
}

/// A shell script: `.sh`/`.bash`, or a `#!` line naming sh or bash.
pub(crate) fn is_shell(path: &str, text: &str) -> bool {
    if path.ends_with(".sh") || path.ends_with(".bash") {
        return true;
    }
    text.lines().next().is_some_and(|l| {
        l.starts_with("#!")
            && l.split(['/', ' '])
                .any(|w| matches!(w, "sh" | "bash" | "dash"))
    })
}

/// Whether `text` already reads options: `getopts`, a `case` on an argument, `$1` tested
/// against a word that starts with `-`, a `shift` (arguments consumed one by one), or the
/// option itself anywhere outside a comment.
fn reads_options(text: &str, option: &str) -> bool {
    text.lines().map(code).any(|l| {
        l.contains("getopts")
            || l.contains(option)
            || (l.contains("case ") && l.contains('$'))
            || l.split_whitespace().any(|w| w == "shift")
            || (l.contains("\"$1\"") && l.contains("\"-"))
    })
}

/// The line without a comment (a `#` at the start or after a space).
fn code(line: &str) -> &str {
    let t = line.trim_start();
    if t.starts_with('#') {
        return "";
    }
    match line.find(" #") {
        Some(at) => &line[..at],
        None => line,
    }
}

/// The first line (1-based) whose code reads an argument: `$1`…`$9`, `${1`, `$@`, `$*`.
fn first_argument_line(text: &str) -> Option<usize> {
    text.lines()
        .position(|l| {
            let c = code(l);
            c.match_indices('$').any(|(at, _)| {
                let rest = &c[at + 1..];
                rest.starts_with(|ch: char| ch.is_ascii_digit() && ch != '0')
                    || rest.starts_with("{1")
                    || rest.starts_with('@')
                    || rest.starts_with('*')
            })
        })
        .map(|k| k + 1)
}

/// A variable name for `option`: `-c` → `opt_c`, `--dry-run` → `dry_run`.
fn variable(option: &str) -> String {
    let bare = option.trim_start_matches('-').replace('-', "_");
    if bare.len() == 1 {
        format!("opt_{bare}")
    } else {
        bare
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const TODO: &str = "#!/bin/sh\n# Usage: sh todo.sh FILE\nfile=$1\nif [ -z \"$file\" ]; then\n  exit 2\nfi\ngrep -n TODO \"$file\"\n";

    #[test]
    fn a_script_without_options_is_told_the_shape_and_the_line() {
        let (_d, ws) = crate::testing::repo(&[("todo.sh", TODO), ("notes.txt", "TODO a\n")]);
        let task = "Add a -c option to todo.sh: `sh todo.sh -c notes.txt` should print only the number of TODO lines.";
        let n = note(task, &ws).unwrap();
        assert!(n.starts_with("todo.sh reads no options yet"), "{n}");
        assert!(n.contains("first read on line 3 (`file=$1`)"), "{n}");
        assert!(
            n.contains("opt_c=0\nif [ \"$1\" = \"-c\" ]; then\n  opt_c=1\n  shift\nfi\n"),
            "{n}"
        );
        assert_eq!(n.matches("reads no options yet").count(), 1, "{n}");
        let long = note("Add a --dry-run flag to todo.sh.", &ws).unwrap();
        assert!(long.contains("dry_run=0"), "{long}");
    }

    #[test]
    fn scripts_that_read_options_and_tasks_that_add_none_are_not_told() {
        let getopts =
            "#!/bin/sh\nwhile getopts v opt; do :; done\nshift $((OPTIND-1))\nrm \"$1\"\n";
        let case = "#!/bin/sh\ncase \"$1\" in\n  -v) v=1 ;;\nesac\necho \"$2\"\n";
        let (_d, ws) =
            crate::testing::repo(&[("a.sh", getopts), ("b.sh", case), ("todo.sh", TODO)]);
        assert_eq!(note("Add a -n option to a.sh.", &ws), None);
        assert_eq!(note("Add a -n option to b.sh.", &ws), None);
        assert_eq!(note("Fix the usage message of todo.sh.", &ws), None);
        // A Python file the task names is not a shell script.
        let (_d, ws) = crate::testing::repo(&[("todo.py", "import sys\nprint(sys.argv[1])\n")]);
        assert_eq!(note("Add a -c option to todo.py.", &ws), None);
    }

    #[test]
    fn an_option_tested_after_the_argument_was_read_is_told() {
        let late = "#!/bin/sh\nfile=$1\nif [ \"$1\" = \"-c\" ]; then\n  opt_c=1\n  shift\nfi\ngrep -c TODO \"$file\"\n";
        let early = "#!/bin/sh\nif [ \"$1\" = \"-c\" ]; then\n  opt_c=1\n  shift\nfi\nfile=$1\ngrep -c TODO \"$file\"\n";
        let task = "Add a -c option to todo.sh.";
        let (_d, ws) = crate::testing::repo(&[("todo.sh", late)]);
        assert_eq!(
            read_before_test(task, &ws).as_deref(),
            Some(
                "todo.sh line 2 `file=$1` reads $1 before line 3 `if [ \"$1\" = \"-c\" ]; then` \
                 tests it for -c: given -c, that line takes -c itself for the argument. Test and \
                 `shift` -c first, above line 2."
            )
        );
        let (_d, ws) = crate::testing::repo(&[("todo.sh", early)]);
        assert_eq!(read_before_test(task, &ws), None);
        assert_eq!(read_before_test("Fix todo.sh.", &ws), None);
    }

    #[test]
    fn argument_lines_and_comments() {
        assert_eq!(
            first_argument_line("# uses $1\nx=1\necho \"${1:-a}\"\n"),
            Some(3)
        );
        assert_eq!(
            first_argument_line("for f in \"$@\"; do :; done\n"),
            Some(1)
        );
        assert_eq!(first_argument_line("echo $0 $HOME\n"), None);
        assert!(!reads_options("# -c counts\ncat \"$1\"\n", "-c"));
        assert!(reads_options("[ \"$1\" = \"-v\" ] && v=1\n", "-c"));
    }
}
