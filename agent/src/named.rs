//! Files the task asks to change, and tests it asks to add: checked at DONE against what the
//! session changed.
//!
//! Two general properties, read from the task's structure:
//! - **Every file the task names as the place of a change is changed.** A file is named so
//!   when it follows an imperative change verb in the same clause (`update config.json,
//!   client.py and the README`), by path or by its role (`the README`); files a clause names
//!   for another reason — the subject of a symptom, a file read or imported, one given as a
//!   model to follow (`like`, `from`), a test the work must pass, a file the task keeps — are
//!   not. A small model that renames a setting in three of the five places a task lists, or
//!   edits an unrelated file and leaves the README it was asked to update, is told which
//!   file it left.
//! - **A task that asks for tests gets more tests.** Where the task asks to add or write
//!   tests, the repository's test files hold more test cases (test functions and assertions)
//!   than before; widening an assertion the file had is not adding a test.

use std::collections::BTreeMap;

use crate::probe::{Probe, is_repo_file, is_test, sentence_bounds, word_spans};
use crate::targets::bare;
use crate::workspace::Workspace;

/// Verbs that make the files after them, in their clause, places of a change.
const CHANGE_VERBS: &[&str] = &[
    "update", "edit", "modify", "change", "rename", "document", "mention", "add", "put", "fix",
    "correct", "replace", "describe", "list", "set", "bump", "raise", "lower", "extend", "adjust",
    "move",
];

/// Words just before a file that make it a place of the change: the verb's object (`update
/// the file config.json`), a preposition of place (`in`, `to`, `into`), or the next item of
/// a list (`and`, a comma, another file). A file after any other word is part of a phrase
/// about something else (`the options resize.py accepts`, `a copy of helpers.py`).
const PLACE_BEFORE: &[&str] = &[
    "in", "to", "into", "inside", "within", "and", "the", "file", "files", "script", "module",
    "also", "both", "its", "your", "this",
];

/// Words that end the run of places after a change verb: what follows is a reason, a
/// condition, a model to follow or a file used, not a place of the change.
const CLAUSE_STOPS: &[&str] = &[
    "so",
    "because",
    "when",
    "while",
    "which",
    "that",
    "where",
    "if",
    "since",
    "until",
    "after",
    "before",
    "like",
    "as",
    "than",
    "from",
    "using",
    "via",
    "uses",
    "use",
    "reads",
    "read",
    "calls",
    "call",
    "imports",
    "import",
    "loads",
    "load",
    "parses",
    "passes",
    "pass",
    "works",
    "work",
    "runs",
    "run",
    "but",
    "instead",
    "except",
    "without",
    "by",
    "through",
    "keep",
    "keeps",
    "leave",
    "still",
    "then",
    "also",
    "whose",
    "who",
    "what",
    "how",
    "crashes",
    "fails",
    "prints",
    "shows",
    "gives",
    "returns",
    "match",
    "matches",
    "matching",
    "reflect",
    "reflects",
    "according",
    "consistent",
    "per",
    "agree",
    "agrees",
    "accepts",
    "supports",
];

/// Words before a change verb that negate it.
const NEGATORS: &[&str] = &["not", "don't", "dont", "never", "without", "no"];

/// Names a README file can have.
fn is_readme(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path).to_lowercase();
    name == "readme" || name.starts_with("readme.")
}

/// The repository's top-level README files.
fn readmes(ws: &Workspace) -> Vec<String> {
    ws.files("")
        .unwrap_or_default()
        .into_iter()
        .filter(|f| !f.contains('/') && is_readme(f))
        .collect()
}

/// The files `task` names as places of a change (see the module's documentation), each
/// once, in the order named; files in `skip` (given files, the session's check's files) and
/// the files its commands run (`probes`) are left out, and test files unless the task asks
/// for tests.
pub fn places(task: &str, ws: &Workspace, probes: &[Probe], skip: &[String]) -> Vec<String> {
    let tests_asked = asks_for_tests(task);
    let in_commands = |f: &str| probes.iter().any(|p| p.argv.iter().any(|a| bare(a) == f));
    let mut out: Vec<String> = Vec::new();
    for range in sentence_bounds(task) {
        let sentence = &task[range];
        let written: Vec<&str> = word_spans(sentence)
            .into_iter()
            .filter(|(_, w)| !w.starts_with('`') || w.ends_with('`'))
            .map(|(_, w)| w)
            .collect();
        let raw: Vec<&str> = written.iter().map(|w| bare(w)).collect();
        let mut open = false;
        for (k, w) in raw.iter().enumerate() {
            let lower = w.to_lowercase();
            if CHANGE_VERBS.contains(&lower.as_str()) {
                let negated = raw[..k]
                    .iter()
                    .rev()
                    .take(2)
                    .any(|p| NEGATORS.contains(&p.to_lowercase().as_str()));
                open = !negated;
                continue;
            }
            if CLAUSE_STOPS.contains(&lower.as_str()) {
                open = false;
                continue;
            }
            if !open || k == 0 {
                continue;
            }
            let prev = raw[k - 1];
            let placed = written[k - 1].ends_with(',')
                || CHANGE_VERBS.contains(&prev.to_lowercase().as_str())
                || PLACE_BEFORE.contains(&prev.to_lowercase().as_str())
                || is_repo_file(ws, prev);
            if !placed {
                continue;
            }
            let files: Vec<String> = if lower == "readme" {
                readmes(ws)
            } else if is_repo_file(ws, w) {
                vec![(*w).to_owned()]
            } else {
                Vec::new()
            };
            for f in files {
                let test = is_test(&[format!("./{f}")]);
                if out.contains(&f)
                    || skip.contains(&f)
                    || in_commands(&f)
                    || (test && !tests_asked)
                {
                    continue;
                }
                out.push(f);
            }
        }
    }
    out
}

/// The places of [`places`] the session left as they were: not in `changed` (every path
/// the session wrote, made, moved or deleted), or written back byte for byte
/// (`originals`: each changed file's first content).
pub fn left(
    ws: &Workspace,
    places: &[String],
    changed: &[String],
    originals: &BTreeMap<String, Option<Vec<u8>>>,
) -> Vec<String> {
    places
        .iter()
        .filter(|p| {
            !changed.contains(p)
                || matches!(originals.get(*p), Some(Some(before))
                    if ws.read(p).ok().flatten().as_deref() == Some(before.as_slice()))
        })
        .cloned()
        .collect()
}

/// The observation of a DONE refused because a file the task names as a place of change
/// was left (`named_left`).
pub fn refusal(left: &[String]) -> crate::act::Observation {
    let names = left.join(", ");
    crate::act::Observation::error(
        format!("DONE refused: the task asks for a change in {names}, and you have not changed it"),
        Some(&format!(
            "make the change the task asks in {names} too, keeping what else it has, then DONE"
        )),
    )
}

/// The task asks for tests to be added or written (`add tests that cover`, `write a unit
/// test for`, `cover … with tests`).
pub fn asks_for_tests(task: &str) -> bool {
    const VERBS: &[&str] = &["add", "write", "create", "extend", "cover", "covering"];
    for range in sentence_bounds(task) {
        let words: Vec<String> = word_spans(&task[range])
            .into_iter()
            .map(|(_, w)| bare(w).to_lowercase())
            .collect();
        let verb = words.iter().position(|w| VERBS.contains(&w.as_str()));
        let test = words
            .iter()
            .rposition(|w| matches!(w.as_str(), "test" | "tests" | "test-case" | "testcase"));
        if let (Some(v), Some(t)) = (verb, test)
            && (v < t || words[v].starts_with("cover"))
            && !words[..v]
                .iter()
                .rev()
                .take(2)
                .any(|p| NEGATORS.contains(&p.as_str()))
        {
            return true;
        }
    }
    false
}

/// Test cases in a test file's text: test functions (`def test…`, a shell function whose
/// name starts with `test`) and assertion lines.
fn cases(text: &str) -> usize {
    text.lines()
        .map(str::trim_start)
        .filter(|l| !l.starts_with('#'))
        .filter(|l| {
            l.starts_with("def test")
                || l.starts_with("async def test")
                || l.contains("assert")
                || (l.starts_with("test") && l.contains("()"))
        })
        .count()
}

/// Where the task asks for tests: the test cases of the repository's test files before the
/// session (`originals` for the files it changed; a file it made had none) and now, when
/// there are not more now. `None` when the task asks for no tests or tests were added.
pub fn tests_not_added(
    task: &str,
    ws: &Workspace,
    changed: &[String],
    originals: &BTreeMap<String, Option<Vec<u8>>>,
) -> Option<(usize, usize)> {
    if !asks_for_tests(task) {
        return None;
    }
    let count = |bytes: Option<&[u8]>| bytes.map_or(0, |b| cases(&String::from_utf8_lossy(b)));
    let test_file = |f: &str| is_test(&[format!("./{f}")]);
    let mut now = 0;
    let mut before = 0;
    for f in ws.files("").unwrap_or_default() {
        if !test_file(&f) {
            continue;
        }
        let text = ws.read(&f).ok().flatten();
        now += count(text.as_deref());
        before += if changed.contains(&f) {
            match originals.get(&f) {
                Some(pre) => count(pre.as_deref()),
                None => count(text.as_deref()),
            }
        } else {
            count(text.as_deref())
        };
    }
    // Test files the session deleted held cases too.
    for (f, pre) in originals {
        if test_file(f) && ws.read(f).ok().flatten().is_none() {
            before += count(pre.as_deref());
        }
    }
    (now <= before).then_some((before, now))
}

/// The observation of a DONE refused because the task asks for tests and none was added
/// (`tests_not_added`).
pub fn tests_refusal((before, now): (usize, usize)) -> crate::act::Observation {
    crate::act::Observation::error(
        format!(
            "DONE refused: the task asks for tests, and the test files hold {now} test cases \
             (test functions and assertions), {before} before your change"
        ),
        Some(
            "add new test functions or assertions for what the task names, each checking one \
             case, keeping the tests that are there",
        ),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::testing::repo;

    fn files() -> (tempfile::TempDir, Workspace) {
        repo(&[
            ("config.json", "{}\n"),
            ("client.py", "x\n"),
            ("health.py", "y\n"),
            ("README.md", "r\n"),
            ("test_client.py", "def test_a():\n    assert 1\n"),
            ("settings.ini", "s\n"),
            ("report.py", "z\n"),
        ])
    }

    #[test]
    fn files_after_a_change_verb_are_places_and_files_a_clause_uses_are_not() {
        let (_d, ws) = files();
        let cases: &[(&str, &[&str])] = &[
            (
                "Rename the key in config.json, client.py and the README.",
                &["config.json", "client.py", "README.md"],
            ),
            (
                "Fix client.py so that it reads settings.ini right.",
                &["client.py"],
            ),
            (
                "Fix the bug in client.py so that test_client.py passes.",
                &["client.py"],
            ),
            ("report.py crashes; fix it.", &[]),
            (
                "Add a --json flag to report.py like the one in client.py.",
                &["report.py"],
            ),
            (
                "Update README.md to match the options report.py accepts.",
                &["README.md"],
            ),
            (
                "Update the README with the flags report.py takes.",
                &["README.md"],
            ),
            ("Update health.py. Do not change README.md.", &["health.py"]),
            (
                "Add a test for parse to test_client.py.",
                &["test_client.py"],
            ),
        ];
        for (task, want) in cases {
            assert_eq!(places(task, &ws, &[], &[]), want.to_vec(), "{task}");
        }
    }

    #[test]
    fn files_skipped_or_run_by_a_command_are_not_places() {
        let (_d, ws) = files();
        let task = "Update `python3 report.py` and config.json.";
        let probes = crate::probe::commands(task, &ws, None);
        assert_eq!(
            places(task, &ws, &probes, &[]),
            vec!["config.json".to_owned()]
        );
        assert!(places(task, &ws, &probes, &["config.json".to_owned()]).is_empty());
    }

    #[test]
    fn a_place_left_or_written_back_is_left() {
        let (_d, ws) = files();
        let places = vec!["client.py".to_owned(), "README.md".to_owned()];
        let mut originals = BTreeMap::new();
        originals.insert("client.py".to_owned(), Some(b"x\n".to_vec()));
        // client.py written back as it was, README.md never touched.
        let changed = vec!["client.py".to_owned()];
        assert_eq!(left(&ws, &places, &changed, &originals), places);
        std::fs::write(ws.root().join("client.py"), "x = 1\n").unwrap();
        assert_eq!(
            left(&ws, &places, &changed, &originals),
            vec!["README.md".to_owned()]
        );
        let obs = refusal(&["README.md".to_owned()]);
        assert!(!obs.ok && obs.summary.contains("README.md"));
    }

    #[test]
    fn a_task_asking_for_tests_needs_more_test_cases() {
        let (_d, ws) = files();
        let task = "Add tests that cover the retry limit.";
        assert!(asks_for_tests(task));
        assert!(!asks_for_tests("Fix client.py; the tests must pass."));
        assert!(!asks_for_tests("Fix client.py without adding tests."));
        let mut originals = BTreeMap::new();
        originals.insert(
            "test_client.py".to_owned(),
            Some(b"def test_a():\n    assert 1\n".to_vec()),
        );
        let changed = vec!["test_client.py".to_owned()];
        // An assertion widened: as many cases as before.
        std::fs::write(
            ws.root().join("test_client.py"),
            "def test_a():\n    assert 1 or 2\n",
        )
        .unwrap();
        assert_eq!(
            tests_not_added(task, &ws, &changed, &originals),
            Some((2, 2))
        );
        std::fs::write(
            ws.root().join("test_client.py"),
            "def test_a():\n    assert 1\n\ndef test_b():\n    assert 2\n",
        )
        .unwrap();
        assert_eq!(tests_not_added(task, &ws, &changed, &originals), None);
        assert_eq!(
            tests_not_added("Fix client.py.", &ws, &[], &originals),
            None
        );
    }
}
