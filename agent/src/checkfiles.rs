//! The files the session's check runs (`--verify`, a bench task's `check`): the tests the
//! check means. A small model whose fix does not pass them edits or empties the test instead,
//! and the check then passes on unchanged code (issue #19's 0.5B bench: three false successes
//! through a check that passed). So a file the check names, that exists when the session
//! starts, is read-only to the session: a change to it is refused before anything is written,
//! and a DONE is refused while a command has left it changed. A change that only updates its
//! imports (a module renamed across the repository) is the exception: it asserts nothing.
//!
//! A task that names the file itself (not only as a command to run: `fix the assertion in
//! test_x.py`) asks for it to change, and then it is not protected. Nothing here runs a
//! command: the check's words and the task's words are read.

use crate::probe::{INTERPRETERS, is_repo_file, word_spans};
use crate::workspace::Workspace;

/// One file the check names, and its content's sha256 when the session first started.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CheckFile {
    pub path: String,
    pub sha256: String,
    /// The content itself (UTF-8 and at most [`MAX_KEPT`] bytes), so that a change of its
    /// imports alone can be told from a change to the test, also after a resume. Without it,
    /// any change is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The command that runs it: the check, or a test the task says fails
    /// ([`crate::probe::Probe::fails`]). Journals from before it was kept have none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub run_by: String,
}

/// The largest test whose content is kept (and journaled).
const MAX_KEPT: usize = 64 * 1024;

impl CheckFile {
    /// Whether `now` (`None`: the file is gone) is this file as it was, or it with only its
    /// imports changed.
    pub fn allows(&self, now: Option<&[u8]>) -> bool {
        if now.is_some_and(|b| crate::act::sha256(b) == self.sha256) {
            return true;
        }
        self.content
            .as_deref()
            .is_some_and(|was| imports_only(was.as_bytes(), now))
    }
}

/// The files `check` names that exist in `ws` and that `task` does not ask to change.
pub fn protected(task: &str, ws: &Workspace, check: Option<&[String]>) -> Vec<CheckFile> {
    let Some(check) = check else {
        return Vec::new();
    };
    let mut out: Vec<CheckFile> = Vec::new();
    for path in named_files(check, ws) {
        if out.iter().any(|f| f.path == path) || asks_to_change(task, &path) {
            continue;
        }
        let Ok(Some(bytes)) = ws.read(&path) else {
            continue;
        };
        out.push(CheckFile {
            sha256: crate::act::sha256(&bytes),
            content: String::from_utf8(bytes)
                .ok()
                .filter(|t| t.len() <= MAX_KEPT),
            path,
            run_by: shlex::try_join(check.iter().map(String::as_str))
                .unwrap_or_else(|_| check.join(" ")),
        });
    }
    out
}

/// The repository files the check runs: its program when that is a repository file
/// (`./test.sh`), the script an interpreter runs (`python3 test_a.py`, `sh tests/run.sh`), the
/// module of `-m` (`python3 -m test_a` names `test_a.py`; `-m unittest` names no file of the
/// repository), and the files a test runner is given (`pytest test_a.py`,
/// `python3 -m pytest test_a.py`). The other arguments are data, not tests: `grep -q x a.py`
/// protects nothing.
fn named_files(check: &[String], ws: &Workspace) -> Vec<String> {
    let mut out = Vec::new();
    let Some((program, args)) = check.split_first() else {
        return out;
    };
    let local = |w: &str| w.strip_prefix("./").unwrap_or(w).to_owned();
    let program = local(program);
    if is_repo_file(ws, &program) {
        out.push(program.clone());
    }
    let name = program.rsplit('/').next().unwrap_or(&program);
    let runner = |w: &str| matches!(w, "pytest" | "py.test");
    if runner(name) {
        out.extend(
            args.iter()
                .map(|a| local(a))
                .filter(|a| is_repo_file(ws, a)),
        );
        return out;
    }
    if !INTERPRETERS.contains(&name) {
        return out;
    }
    let mut words = args.iter();
    while let Some(word) = words.next() {
        if word == "-m" {
            let Some(module) = words.next() else { break };
            if runner(module) {
                out.extend(words.map(|a| local(a)).filter(|a| is_repo_file(ws, a)));
                break;
            }
            let file = format!("{}.py", module.replace('.', "/"));
            if is_repo_file(ws, &file) {
                out.push(file);
            }
            break;
        }
        if word.starts_with('-') {
            continue;
        }
        let file = local(word);
        if is_repo_file(ws, &file) {
            out.push(file);
        }
        break;
    }
    out
}

/// `task` names `path` other than as the file an interpreter runs (`sh test.sh fails` runs it;
/// `update test_a.py` names it).
fn asks_to_change(task: &str, path: &str) -> bool {
    let words: Vec<&str> = word_spans(task)
        .into_iter()
        .map(|(_, w)| w.trim_matches(|c: char| matches!(c, '`' | '"' | '\'' | '(' | ')')))
        .map(|w| w.trim_end_matches([',', '.', ';', ':', '!', '?']))
        .collect();
    words.iter().enumerate().any(|(k, w)| {
        let w = w.strip_prefix("./").unwrap_or(w);
        let ran = k > 0 && INTERPRETERS.contains(&words[k - 1]);
        w == path && !ran
    })
}

/// Whether a change from `pre` to `post` of a protected file only updates its imports: every
/// line it removes or adds is an import (`import m`, `from m import f`, a shell's `. ./lib.sh`
/// or `source lib.sh`). A rename or move across the repository must update the test's imports
/// too, and an import line asserts nothing, so such a change is allowed; a deleted test is not.
pub fn imports_only(pre: &[u8], post: Option<&[u8]>) -> bool {
    let (Ok(pre), Some(Ok(post))) = (std::str::from_utf8(pre), post.map(std::str::from_utf8))
    else {
        return false;
    };
    let mut removed: Vec<&str> = pre.lines().collect();
    let mut added = Vec::new();
    for line in post.lines() {
        match removed.iter().position(|l| *l == line) {
            Some(k) => {
                removed.remove(k);
            }
            None => added.push(line),
        }
    }
    let import = |line: &&str| {
        let t = line.trim_start();
        t.starts_with("import ")
            || (t.starts_with("from ") && t.contains(" import "))
            || t.starts_with(". ")
            || t.starts_with("source ")
    };
    !(removed.is_empty() && added.is_empty()) && removed.iter().chain(&added).all(import)
}

/// The protected files whose content is no longer what it was (other than in its imports).
pub fn changed<'f>(ws: &Workspace, files: &'f [CheckFile]) -> Vec<&'f CheckFile> {
    files
        .iter()
        .filter(|f| !f.allows(ws.read(&f.path).ok().flatten().as_deref()))
        .collect()
}

/// What the model is told when a change would touch a protected file, run by `command`.
pub fn refusal(path: &str, command: &str) -> crate::act::Observation {
    crate::act::Observation::error(
        format!(
            "{path} not changed: it is a test the task runs (`{command}`), and it must test \
             your change to the code, not a changed test"
        ),
        Some("leave the test as it is and change the code it tests, so that the check passes"),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::testing::repo;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn the_files_a_check_runs_are_protected_unless_the_task_asks_to_change_them() {
        let (_dir, ws) = repo(&[
            ("test.sh", "sh count.sh 3\n"),
            ("count.sh", "seq 0 $1\n"),
            ("test_a.py", "import a\n"),
            ("a.py", "x = 1\n"),
            ("tests/run.sh", "true\n"),
        ]);
        let paths = |task: &str, check: &str| -> Vec<String> {
            protected(task, &ws, Some(&argv(check)))
                .into_iter()
                .map(|f| f.path)
                .collect()
        };
        // Run by the task's own words: still the check's, protected.
        assert_eq!(
            paths("sh test.sh fails. Fix count.sh.", "sh test.sh"),
            ["test.sh"]
        );
        assert_eq!(paths("Fix a.py.", "./test.sh"), ["test.sh"]);
        assert_eq!(paths("Fix a.py.", "python3 -m test_a"), ["test_a.py"]);
        assert_eq!(
            paths("Fix a.py.", "python3 -m unittest"),
            Vec::<String>::new()
        );
        assert_eq!(
            paths("Fix it.", "sh tests/run.sh --quick"),
            ["tests/run.sh"]
        );
        assert_eq!(
            paths("Fix it.", "python3 -m pytest test_a.py"),
            ["test_a.py"]
        );
        assert_eq!(paths("Fix it.", "pytest -q test_a.py"), ["test_a.py"]);
        // What a command only reads is the code under test, not a test.
        assert!(paths("Fix a.py.", "grep -q x a.py").is_empty());
        assert_eq!(paths("Fix it.", "sh test.sh a.py"), ["test.sh"]);
        // Named as a file to change: not protected.
        assert!(paths("Fix the assertion in test_a.py.", "python3 test_a.py").is_empty());
        assert!(paths("Update `test.sh` for the new output.", "sh test.sh").is_empty());
        // A file the check names that does not exist yet is the session's to write.
        assert!(paths("Write test_b.py.", "python3 test_b.py").is_empty());
        // No check, nothing protected.
        assert!(protected("Fix a.py.", &ws, None).is_empty());
    }

    #[test]
    fn a_change_of_imports_alone_is_told_from_a_change_to_the_test() {
        let test = b"from strutil import slugify\n\nassert slugify('A b') == 'a-b'\n";
        let renamed = b"from text_utils import slugify\n\nassert slugify('A b') == 'a-b'\n";
        assert!(imports_only(test, Some(renamed)));
        let weakened = b"from text_utils import slugify\n\nassert True\n";
        assert!(!imports_only(test, Some(weakened)));
        assert!(!imports_only(test, None));
        assert!(!imports_only(test, Some(test)));
        assert!(imports_only(
            b". ./a.sh\n[ x = x ]\n",
            Some(b". ./b.sh\n[ x = x ]\n")
        ));
    }

    #[test]
    fn a_protected_file_changed_or_removed_is_reported() {
        let (_dir, ws) = repo(&[("test.sh", "true\n"), ("a.sh", "x\n")]);
        let files = protected("Fix a.sh.", &ws, Some(&argv("sh test.sh")));
        assert!(changed(&ws, &files).is_empty());
        std::fs::write(ws.root().join("test.sh"), "exit 0\n").unwrap();
        assert_eq!(changed(&ws, &files).len(), 1);
        std::fs::write(ws.root().join("test.sh"), ". ./lib.sh\ntrue\n").unwrap();
        assert!(
            changed(&ws, &files).is_empty(),
            "an import added is allowed"
        );
        std::fs::remove_file(ws.root().join("test.sh")).unwrap();
        assert_eq!(changed(&ws, &files).len(), 1);
    }
}
