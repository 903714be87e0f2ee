//! Files the task gives: what the work must leave exactly as it found it.
//!
//! A task hands some files over as they are. The input of a command it says fails or prints
//! the wrong thing (`python3 report.py sales.csv` crashes) is the data the code must cope
//! with; a file it says to keep (`without changing test_stats.py`, `leave config.json
//! alone`) or calls good (`orders.csv is a normal export`) is not the place for the fix.
//! A small model whose code change does not work often edits such a file instead, until the
//! command succeeds or fails differently, and says DONE. The property checked at DONE is
//! general: every file the task gives is byte for byte what it was when the session started.
//! Which files those are is read from the task's structure — the arguments of its commands,
//! and the files a keeping clause governs — never from one task's nouns.

use crate::probe::{Probe, is_repo_file, sentence_bounds, word_spans};
use crate::targets::bare;
use crate::workspace::Workspace;

/// Verbs whose object, when it is a file, is one the task asks to change.
const CHANGE_VERBS: &[&str] = &[
    "fix",
    "fixes",
    "update",
    "edit",
    "modify",
    "change",
    "correct",
    "repair",
    "clean",
    "rewrite",
    "regenerate",
    "rename",
    "delete",
    "remove",
    "move",
    "replace",
    "add",
    "append",
    "extend",
];

/// Phrases after which the files named, up to the clause's end, are to be kept.
const KEEP_BEFORE: &[&[&str]] = &[
    &["without", "changing"],
    &["without", "touching"],
    &["without", "modifying"],
    &["without", "editing"],
    &["don't", "change"],
    &["don't", "touch"],
    &["don't", "modify"],
    &["don't", "edit"],
    &["do", "not", "change"],
    &["do", "not", "touch"],
    &["do", "not", "modify"],
    &["do", "not", "edit"],
    &["must", "not", "change"],
    &["should", "not", "change"],
    &["leave"],
    &["keep"],
];

/// Words that, after a file, say the file is good as it is (`orders.csv is valid`, `data.txt
/// is a normal export`, `test.sh stays as it is`).
const GOOD_AFTER: &[&[&str]] = &[
    &["is", "valid"],
    &["are", "valid"],
    &["is", "correct"],
    &["are", "correct"],
    &["is", "fine"],
    &["are", "fine"],
    &["is", "right"],
    &["is", "well-formed"],
    &["is", "a", "normal"],
    &["is", "a", "valid"],
    &["is", "an", "ordinary"],
    &["is", "a", "real"],
    &["is", "not", "the", "problem"],
    &["stays"],
    &["must", "stay"],
    &["should", "stay"],
    &["as", "it", "is"],
    &["unchanged"],
    &["alone"],
];

/// Words that end the clause a keeping phrase governs.
const CLAUSE_ENDS: &[&str] = &["but", "and", "then", "so", "because", "while", "instead"];

/// The files of `ws` that `task` gives, found before the session changes anything: the
/// non-script arguments of the task's own commands that it calls wrong (`probes` with
/// [`Probe::symptom`]), and the files a keeping clause names. A file the task also asks to
/// change (the object of a change verb outside its commands) is not given.
pub fn files(task: &str, ws: &Workspace, probes: &[Probe]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut add = |f: &str| {
        if !out.iter().any(|o| o == f) {
            out.push(f.to_owned());
        }
    };
    for p in probes.iter().filter(|p| p.symptom && !p.found) {
        for a in p.argv.iter().skip(2) {
            let a = bare(a);
            if is_repo_file(ws, a) && !is_code(a) && !asked_to_change(task, a) {
                add(a);
            }
        }
    }
    for f in kept_by_clause(task, ws) {
        add(&f);
    }
    out
}

/// `path` is a program rather than data: a test that a command runs is not an input.
fn is_code(path: &str) -> bool {
    crate::inputs::ext(path).is_some_and(|e| crate::inputs::CODE.contains(&e))
}

/// The lower-cased words of a sentence with their byte offsets, as `bare` leaves them.
fn words(sentence: &str) -> Vec<(usize, String)> {
    word_spans(sentence)
        .into_iter()
        .map(|(at, w)| (at, bare(w).to_lowercase()))
        .filter(|(_, w)| !w.is_empty())
        .collect()
}

fn starts_with(words: &[(usize, String)], at: usize, phrase: &[&str]) -> bool {
    phrase.len() + at <= words.len()
        && phrase
            .iter()
            .zip(&words[at..])
            .all(|(p, (_, w))| *p == w.as_str())
}

/// Some sentence of `task`, outside backticks, has a change verb whose object (the verb,
/// then at most three words, stopping at a clause end) is `file`.
fn asked_to_change(task: &str, file: &str) -> bool {
    let lower_file = file.to_lowercase();
    for range in sentence_bounds(task) {
        let ws = words(&task[range]);
        for (k, (_, w)) in ws.iter().enumerate() {
            if !CHANGE_VERBS.contains(&w.as_str()) || negated(&ws, k) {
                continue;
            }
            for (_, o) in ws.iter().skip(k + 1).take(4) {
                if CLAUSE_ENDS.contains(&o.as_str()) {
                    break;
                }
                if *o == lower_file {
                    return true;
                }
            }
        }
    }
    false
}

/// The word at `k` follows a negation (`don't change`, `without changing`).
fn negated(ws: &[(usize, String)], k: usize) -> bool {
    ws[..k]
        .iter()
        .rev()
        .take(2)
        .any(|(_, w)| matches!(w.as_str(), "not" | "don't" | "without" | "never" | "no"))
}

/// Files a keeping clause names: after a phrase of [`KEEP_BEFORE`] up to the clause's end,
/// or just before a phrase of [`GOOD_AFTER`].
fn kept_by_clause(task: &str, ws: &Workspace) -> Vec<String> {
    let mut out = Vec::new();
    for range in sentence_bounds(task) {
        let sentence = &task[range];
        let raw: Vec<&str> = word_spans(sentence)
            .into_iter()
            .map(|(_, w)| bare(w))
            .collect();
        let lower = words(sentence);
        if raw.len() != lower.len() {
            continue;
        }
        for k in 0..lower.len() {
            if let Some(phrase) = KEEP_BEFORE.iter().find(|p| starts_with(&lower, k, p)) {
                for (j, w) in raw.iter().enumerate().skip(k + phrase.len()) {
                    if CLAUSE_ENDS.contains(&lower[j].1.as_str()) {
                        break;
                    }
                    if is_repo_file(ws, w) {
                        out.push((*w).to_owned());
                    }
                }
            }
            if GOOD_AFTER.iter().any(|p| starts_with(&lower, k, p)) {
                // The file the clause is about: the nearest one before it, within three words.
                if let Some(w) = raw[..k].iter().rev().take(3).find(|w| is_repo_file(ws, w)) {
                    out.push((*w).to_owned());
                }
            }
        }
    }
    out
}

/// The files of `given` whose content now differs from `before` (each file's content when
/// the session started; a file gone counts as changed).
pub fn changed<'g>(
    ws: &Workspace,
    given: &'g [(String, Option<Vec<u8>>)],
) -> Vec<&'g (String, Option<Vec<u8>>)> {
    given
        .iter()
        .filter(|(path, before)| ws.read(path).ok().flatten() != *before)
        .collect()
}

/// The observation of a DONE refused because a file the task gives was changed
/// (`given_changed`): the files, and what to do instead.
pub fn refusal(changed: &[&(String, Option<Vec<u8>>)]) -> crate::act::Observation {
    let names: Vec<&str> = changed.iter().map(|(p, _)| p.as_str()).collect();
    let names = names.join(", ");
    let mut shown = String::new();
    for (path, before) in changed {
        if let Some(text) = before
            .as_deref()
            .and_then(|b| std::str::from_utf8(b).ok())
            .filter(|t| t.len() <= 2000)
        {
            shown.push_str(&format!(
                "{path} as it was:\n```\n{}\n```\n",
                text.trim_end()
            ));
        }
    }
    crate::act::Observation::error(
        format!(
            "DONE refused: the task gives {names} as it is (an input of its command, or a file \
             it says to keep), and you changed it"
        ),
        Some(&format!(
            "write {names} back exactly as it was and make the change in the code instead"
        )),
    )
    .with_output(shown)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::testing::repo;

    fn ws(files: &[(&str, &str)]) -> (tempfile::TempDir, Workspace) {
        repo(files)
    }

    #[test]
    fn the_input_of_a_failing_command_is_given_and_its_script_is_not() {
        let (_d, ws) = ws(&[
            ("report.py", "import sys\n"),
            ("sales.csv", "a,b\n"),
            ("other.csv", "a\n"),
        ]);
        let task = "`python3 report.py sales.csv` crashes with a KeyError on a normal export.";
        let probes = crate::probe::commands(task, &ws, None);
        assert_eq!(files(task, &ws, &probes), vec!["sales.csv".to_owned()]);
    }

    #[test]
    fn an_input_the_task_asks_to_fix_is_not_given() {
        let (_d, ws) = ws(&[("load.py", "x\n"), ("config.json", "{\n")]);
        let task = "`python3 load.py config.json` fails. Fix config.json, it has a stray brace.";
        let probes = crate::probe::commands(task, &ws, None);
        assert!(files(task, &ws, &probes).is_empty());
    }

    #[test]
    fn files_a_clause_keeps_are_given_and_the_others_are_not() {
        let (_d, ws) = ws(&[
            ("stats.py", "x\n"),
            ("test_stats.py", "y\n"),
            ("orders.csv", "z\n"),
            ("README.md", "r\n"),
        ]);
        let cases: &[(&str, &[&str])] = &[
            (
                "Fix stats.py without changing test_stats.py.",
                &["test_stats.py"],
            ),
            (
                "Make the totals right; orders.csv is valid.",
                &["orders.csv"],
            ),
            ("Leave README.md alone and fix stats.py.", &["README.md"]),
            ("Fix stats.py and update README.md.", &[]),
            (
                "Don't touch orders.csv or test_stats.py, but fix stats.py.",
                &["orders.csv", "test_stats.py"],
            ),
        ];
        for (task, want) in cases {
            let got = files(task, &ws, &[]);
            assert_eq!(got, want.to_vec(), "{task}");
        }
    }

    #[test]
    fn a_given_file_written_otherwise_is_changed_and_one_written_back_is_not() {
        let (_d, ws) = ws(&[("sales.csv", "a,b\n1,2\n")]);
        let given = vec![("sales.csv".to_owned(), Some(b"a,b\n1,2\n".to_vec()))];
        assert!(changed(&ws, &given).is_empty());
        std::fs::write(ws.root().join("sales.csv"), "a,b\n").unwrap();
        let now = changed(&ws, &given);
        assert_eq!(now.len(), 1);
        let obs = refusal(&now);
        assert!(!obs.ok);
        assert!(obs.summary.contains("sales.csv"), "{}", obs.summary);
        assert!(obs.output.contains("1,2"), "{}", obs.output);
        std::fs::write(ws.root().join("sales.csv"), "a,b\n1,2\n").unwrap();
        assert!(changed(&ws, &given).is_empty());
    }
}
