//! An option the task adds, run the way its documentation runs the program: once done, it
//! must not crash.
//!
//! The 1.5B on logview-since added `--since` with `type=lambda s: datetime.strptime(s,
//! "%H:%M")` after `import datetime`: the module has no `strptime`, so every use of the option
//! ended in a traceback. The check (the repository's tests of the filters) passed and the
//! DONE was taken; nothing ever ran the option. At DONE, each example command of the
//! repository's documents that runs the script the option is added to, and succeeds as it is,
//! runs again with the option and a sample of the value the task writes after it (`--since
//! HH:MM` → `--since 12:00`); a Python traceback there refuses DONE (`option_crashes`). A
//! value form with no sample here, or no example, holds nothing back.

use crate::probe::{Probe, ProbeRun};
use crate::workspace::Workspace;

/// What Python prints for an uncaught exception.
const TRACEBACK: &str = "Traceback (most recent call last)";

/// A sample for the value form the task writes after an option, `None` for a form with
/// none here. A flag (`--shout flag`) takes no value: `Some(None)`.
fn sample(form: &str) -> Option<Option<&'static str>> {
    let f = form.trim_matches(|c: char| matches!(c, '`' | '"' | '\'' | ',' | '.' | '(' | ')'));
    let lower = f.to_lowercase();
    if matches!(lower.as_str(), "flag" | "switch" | "option") {
        return Some(None);
    }
    if !f.chars().any(|c| c.is_ascii_uppercase()) || f.chars().any(|c| c.is_ascii_lowercase()) {
        return None;
    }
    let value = match f {
        f if f.contains("HH:MM:SS") => "12:00:00",
        f if f.contains("HH:MM") => "12:00",
        f if f.contains("YYYY-MM-DD") || f == "DATE" => "2024-01-01",
        "N" | "NUM" | "NUMBER" | "COUNT" | "INT" | "LINES" | "WIDTH" | "SIZE" | "LIMIT"
        | "DAYS" | "SECONDS" | "MINUTES" | "HOURS" | "DEPTH" => "2",
        _ => return None,
    };
    Some(Some(value))
}

/// The long options `task` adds, each with the words it takes (`["--since", "12:00"]`).
fn options_with_samples(task: &str) -> Vec<Vec<String>> {
    let words: Vec<&str> = task.split_whitespace().collect();
    let bare = |w: &str| {
        w.trim_matches(|c: char| matches!(c, '`' | '"' | '\'' | ',' | '.' | '(' | ')' | ':'))
            .to_owned()
    };
    let adds = words.iter().any(|w| {
        matches!(
            bare(w).to_lowercase().as_str(),
            "add" | "adds" | "new" | "support" | "accept" | "accepts"
        )
    });
    let mut options: Vec<String> = Vec::new();
    for w in &words {
        let o = bare(w);
        let name_ok = o.strip_prefix("--").is_some_and(|n| {
            n.chars().next().is_some_and(|c| c.is_ascii_lowercase())
                && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        });
        if adds && name_ok && !options.contains(&o) {
            options.push(o);
        }
    }
    let mut out: Vec<Vec<String>> = Vec::new();
    for option in options {
        let Some(k) = words.iter().position(|w| bare(w) == option) else {
            continue;
        };
        let Some(form) = words.get(k + 1) else {
            continue;
        };
        match sample(form) {
            Some(Some(v)) => out.push(vec![option, v.to_owned()]),
            Some(None) => out.push(vec![option]),
            None => {}
        }
    }
    out
}

/// The example commands of the repository's top-level documents (`*.md`, `*.txt`, `*.rst`)
/// that run one of `scripts` by its interpreter: a line that is the command (after blanks,
/// `$ ` and backticks), with no shell syntax.
fn documented(ws: &Workspace, scripts: &[String]) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    for doc in ws
        .files("")
        .unwrap_or_default()
        .iter()
        .filter(|f| !f.contains('/') && [".md", ".txt", ".rst"].iter().any(|e| f.ends_with(e)))
    {
        let Some(text) = ws.read(doc).ok().flatten() else {
            continue;
        };
        for line in String::from_utf8_lossy(&text).lines() {
            let l = line
                .trim()
                .trim_start_matches("$ ")
                .trim_matches('`')
                .trim();
            if l.contains(['|', '>', '<', ';', '&', '$', '`']) {
                continue;
            }
            let Some(argv) = shlex::split(l) else {
                continue;
            };
            let runs = argv.len() >= 2
                && crate::asks::interpreter(&argv[1]) == Some(argv[0].as_str())
                && scripts.contains(&argv[1]);
            if runs && !out.contains(&argv) {
                out.push(argv);
            }
        }
    }
    out
}

/// The runs of the options `task` adds that crash ([`TRACEBACK`]) where the same command
/// without them succeeds: at most four commands are run.
pub fn crashing(task: &str, ws: &Workspace) -> Vec<ProbeRun> {
    let options = options_with_samples(task);
    if options.is_empty() {
        return Vec::new();
    }
    let scripts: Vec<String> = task
        .split_whitespace()
        .map(crate::targets::bare)
        .filter(|w| crate::asks::interpreter(w).is_some())
        .filter(|w| ws.resolve(w).is_ok_and(|p| p.is_file()))
        .map(str::to_owned)
        .collect();
    let mut pairs: Vec<(Probe, Probe)> = Vec::new();
    for base in documented(ws, &scripts) {
        for option in &options {
            let with: Vec<String> = if base.contains(&option[0]) {
                base.clone()
            } else {
                base.iter().chain(option).cloned().collect()
            };
            let without: Vec<String> = if base.contains(&option[0]) {
                let at = base.iter().position(|a| *a == option[0]).unwrap_or(0);
                base[..at]
                    .iter()
                    .chain(base.iter().skip(at + option.len()))
                    .cloned()
                    .collect()
            } else {
                base.clone()
            };
            if let (Some(a), Some(b)) = (Probe::to_keep(without), Probe::to_keep(with))
                && !pairs.iter().any(|(_, w)| w.command == b.command)
            {
                pairs.push((a, b));
            }
        }
        if pairs.len() >= 2 {
            break;
        }
    }
    let probes: Vec<Probe> = pairs
        .iter()
        .flat_map(|(a, b)| [a.clone(), b.clone()])
        .collect();
    let runs = crate::probe::run_all(ws, &probes);
    let found = |c: &str| runs.iter().find(|r| r.command == c);
    pairs
        .iter()
        .filter_map(|(a, b)| {
            let (ran, with) = (found(&a.command)?, found(&b.command)?);
            (ran.code == Some(0) && with.output.contains(TRACEBACK)).then(|| with.clone())
        })
        .collect()
}

/// The observation of a DONE refused by [`crashing`] (`option_crashes`).
pub fn refusal(runs: &[ProbeRun]) -> crate::act::Observation {
    let last = runs[0]
        .output
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_owned();
    crate::probe::runs_refusal(
        runs.iter(),
        format!(
            "DONE refused: `{}` crashes with the option the task adds (a sample value): {last}",
            runs[0].command
        ),
        "fix the error the traceback ends with, so that the option works as the task says, \
         then DONE",
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::testing::repo;

    #[test]
    fn value_forms_have_samples_and_flags_none() {
        assert_eq!(sample("HH:MM"), Some(Some("12:00")));
        assert_eq!(sample("`N`"), Some(Some("2")));
        assert_eq!(sample("flag"), Some(None));
        assert_eq!(sample("PATTERN"), None);
        assert_eq!(sample("that"), None);
        let task = "Add a --since HH:MM option to logview.py that shows only the entries at or \
                    after that time of day.";
        assert_eq!(options_with_samples(task), [vec!["--since", "12:00"]]);
        assert!(options_with_samples("Fix --since HH:MM in logview.py.").is_empty());
    }

    #[test]
    fn documented_commands_of_the_script_are_read_from_the_documents() {
        let (_d, ws) = repo(&[
            ("logview.py", ""),
            (
                "README.md",
                "Run:\n\n    python3 logview.py app.log --level WARN\n$ python3 logview.py app.log\n`python3 other.py x`\npython3 logview.py app.log | head\n",
            ),
        ]);
        let found = documented(&ws, &["logview.py".to_owned()]);
        assert_eq!(
            found,
            [
                vec!["python3", "logview.py", "app.log", "--level", "WARN"],
                vec!["python3", "logview.py", "app.log"],
            ]
        );
    }
}
