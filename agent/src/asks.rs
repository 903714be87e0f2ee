//! What a task's words ask for that can be checked without running anything: the files it
//! says to delete. A small model asked to delete a file rewrites another one and says it is
//! done (the 0.5B on delete-file); a DONE while a file the task deletes is still there is
//! refused (`file_left`). Only a file that is the object of "delete"/"remove" counts: the word,
//! then at most three words (`the obsolete file`), then a path of the repository, with no `in`,
//! `from` or `of` between — `remove the print in app.py` asks for no file to go.

use crate::probe::{is_repo_file, word_spans};
use crate::workspace::Workspace;

const DELETE_WORDS: &[&str] = &["delete", "remove", "rm"];
const NEGATIONS: &[&str] = &["not", "never", "don't", "dont", "doesn't", "without", "no"];
const NOT_THE_FILE: &[&str] = &["in", "from", "of", "inside", "within", "at", "to", "and"];

/// The repository files `task` says to delete that are in `ws` now.
pub fn files_to_delete(task: &str, ws: &Workspace) -> Vec<String> {
    let words: Vec<&str> = word_spans(task)
        .into_iter()
        .map(|(_, w)| {
            w.trim_matches(|c: char| matches!(c, '`' | '"' | '\'' | '(' | ')' | '*'))
                .trim_end_matches([',', '.', ';', ':', '!', '?', '`', '"', '\''])
        })
        .collect();
    let mut out: Vec<String> = Vec::new();
    for (k, w) in words.iter().enumerate() {
        let negated = k > 0 && NEGATIONS.contains(&words[k - 1].to_lowercase().as_str());
        if negated || !DELETE_WORDS.contains(&w.to_lowercase().as_str()) {
            continue;
        }
        for next in words.iter().skip(k + 1).take(4) {
            let path = next.strip_prefix("./").unwrap_or(next);
            if is_repo_file(ws, path) {
                if !out.iter().any(|p| p == path) {
                    out.push(path.to_owned());
                }
                break;
            }
            if NOT_THE_FILE.contains(&next.to_lowercase().as_str()) {
                break;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::files_to_delete;
    use crate::testing::repo;

    #[test]
    fn a_file_is_to_delete_only_as_the_object_of_delete_or_remove() {
        let (_dir, ws) = repo(&[
            ("old_notes.txt", "x\n"),
            ("app.py", "print(1)\n"),
            ("docs/a.md", "a\n"),
        ]);
        let f = |task: &str| files_to_delete(task, &ws);
        assert_eq!(
            f("Delete the obsolete file old_notes.txt."),
            ["old_notes.txt"]
        );
        assert_eq!(f("Remove `docs/a.md`, nothing uses it."), ["docs/a.md"]);
        assert_eq!(f("rm ./old_notes.txt please"), ["old_notes.txt"]);
        // Something inside a file, or a file that is not there: nothing to delete.
        assert!(f("Remove the debug print in app.py.").is_empty());
        assert!(f("Delete legacy_parse from app.py.").is_empty());
        assert!(f("Delete gone.txt.").is_empty());
        assert!(f("Fix app.py so that it does not delete old_notes.txt").is_empty());
    }
}
