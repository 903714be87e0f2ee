//! What a task's words ask for that can be checked without running anything: the files it
//! says to delete, the files it says to create, and the renames it asks for. A small model asked to delete a file rewrites another one and says it is
//! done (the 0.5B on delete-file); a DONE while a file the task deletes is still there is
//! refused (`file_left`). Only a file that is the object of "delete"/"remove" counts: the word,
//! then at most three words (`the obsolete file`), then a path of the repository, with no `in`,
//! `from` or `of` between — `remove the print in app.py` asks for no file to go.

use crate::probe::{is_repo_file, word_spans};
use crate::workspace::Workspace;

/// The task's words, split at whitespace, without the quotes, brackets and trailing
/// punctuation around them.
fn task_words(task: &str) -> Vec<&str> {
    word_spans(task)
        .into_iter()
        .map(|(_, w)| {
            w.trim_matches(|c: char| matches!(c, '`' | '"' | '\'' | '(' | ')'))
                .trim_end_matches([',', '.', ';', ':', '!', '?', '`', '"', '\''])
        })
        .collect()
}

/// Something (a file, a directory, a link) is at `path` in `ws`.
fn exists(ws: &Workspace, path: &str) -> bool {
    ws.resolve_nofollow(path)
        .ok()
        .is_some_and(|p| std::fs::symlink_metadata(p).is_ok())
}

const DELETE_WORDS: &[&str] = &["delete", "remove", "rm"];
const NEGATIONS: &[&str] = &["not", "never", "don't", "dont", "doesn't", "without", "no"];
const NOT_THE_FILE: &[&str] = &["in", "from", "of", "inside", "within", "at", "to", "and"];

/// The repository files `task` says to delete that are in `ws` now.
pub fn files_to_delete(task: &str, ws: &Workspace) -> Vec<String> {
    // Bold (`**old.txt**`) is decoration here; a `*` is kept where it could be a pattern.
    let words: Vec<&str> = task_words(task)
        .into_iter()
        .map(|w| w.trim_matches('*'))
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

const CREATE_WORDS: &[&str] = &["create", "add", "write"];
/// Words after which the path named is not the file to create: a directory's content, a file
/// something goes into.
const NOT_CREATED: &[&str] = &[
    "in",
    "from",
    "of",
    "inside",
    "within",
    "at",
    "to",
    "and",
    "into",
    "directory",
    "folder",
    "containing",
    "under",
    "for",
];

/// The files `task` says to create (`Create config.json with …`, `Write a file hello.txt`) that
/// are not in `ws` now: the word, then at most four words, then a file name (a name with an
/// extension, or a path with a `/`), with none of [`NOT_CREATED`] between. A DONE while one is
/// missing is refused (`file_missing`): a model asked for config.json rewrote app.py to write
/// it when run.
pub fn files_to_create(task: &str, ws: &Workspace) -> Vec<String> {
    let words = task_words(task);
    let mut out: Vec<String> = Vec::new();
    for (k, w) in words.iter().enumerate() {
        let negated = k > 0 && NEGATIONS.contains(&words[k - 1].to_lowercase().as_str());
        if negated || !CREATE_WORDS.contains(&w.to_lowercase().as_str()) {
            continue;
        }
        for next in words.iter().skip(k + 1).take(5) {
            if NOT_CREATED.contains(&next.to_lowercase().as_str()) {
                break;
            }
            let path = next.strip_prefix("./").unwrap_or(next);
            if !file_name_like(path) {
                continue;
            }
            if !exists(ws, path) && !out.iter().any(|p| p == path) {
                out.push(path.to_owned());
            }
            break;
        }
    }
    out
}

/// The renames and moves `task` asks for, as (from, to): `rename|move`, at most three words,
/// a repository file, then `to`/`as`/`->`/`into` and, within two words, a file name. A DONE is
/// refused (`rename_incomplete`) while `from` is still there or `to` is not: a model that
/// updates every import to the new name but leaves the module where it was has renamed
/// nothing.
pub fn renames(task: &str, ws: &Workspace) -> Vec<(String, String)> {
    let words = task_words(task);
    let mut out = Vec::new();
    for (k, w) in words.iter().enumerate() {
        if !matches!(w.to_lowercase().as_str(), "rename" | "move") {
            continue;
        }
        let Some(at) = (k + 1..(k + 5).min(words.len())).find(|&j| {
            let p = words[j].strip_prefix("./").unwrap_or(words[j]);
            is_repo_file(ws, p) || file_name_like(p) && words[j].contains('.')
        }) else {
            continue;
        };
        let from = words[at].strip_prefix("./").unwrap_or(words[at]);
        let Some(link) = words.get(at + 1) else {
            continue;
        };
        if !matches!(link.to_lowercase().as_str(), "to" | "as" | "->" | "into") {
            continue;
        }
        let to = words
            .iter()
            .skip(at + 2)
            .take(2)
            .map(|w| w.strip_prefix("./").unwrap_or(w))
            .find(|w| file_name_like(w));
        if let Some(to) = to
            && from != to
        {
            out.push((from.to_owned(), to.to_owned()));
        }
    }
    out
}

/// The first rename of `task` not done in `ws`: (from, to, what is wrong).
pub fn rename_left(task: &str, ws: &Workspace) -> Option<(String, String)> {
    renames(task, ws)
        .into_iter()
        .find(|(from, to)| exists(ws, from) || !exists(ws, to))
}

/// A word that names a file: a relative path of plain characters whose last part has a name
/// and an extension starting with a letter (`config.json`, `docs/a.md`), never a pattern.
fn file_name_like(word: &str) -> bool {
    let plain = word
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'));
    let last = word.rsplit('/').next().unwrap_or(word);
    let ext_ok = last.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && ext.len() <= 8
            && ext.starts_with(|c: char| c.is_ascii_alphabetic())
            && ext.chars().all(|c| c.is_ascii_alphanumeric())
    });
    plain && ext_ok && !word.starts_with('/') && !word.split('/').any(|c| c == "..")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::{files_to_create, files_to_delete, rename_left, renames};
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

    #[test]
    fn a_rename_is_done_when_the_old_file_is_gone_and_the_new_one_is_there() {
        let (dir, ws) = repo(&[("strutil.py", "x = 1\n"), ("app.py", "import strutil\n")]);
        let task = "Rename the module strutil.py to text_utils.py and update everything.";
        assert_eq!(
            renames(task, &ws),
            [("strutil.py".to_owned(), "text_utils.py".to_owned())]
        );
        assert!(rename_left(task, &ws).is_some());
        std::fs::write(dir.path().join("text_utils.py"), "x = 1\n").unwrap();
        assert!(
            rename_left(task, &ws).is_some(),
            "the old one is still there"
        );
        std::fs::remove_file(dir.path().join("strutil.py")).unwrap();
        assert!(rename_left(task, &ws).is_none());
        // A function renamed is no file renamed.
        assert!(renames("Rename the function slugify to make_slug in app.py", &ws).is_empty());
        assert_eq!(
            renames("Move app.py into src/app.py.", &ws),
            [("app.py".to_owned(), "src/app.py".to_owned())]
        );
    }

    #[test]
    fn a_file_is_to_create_only_as_the_object_of_create_add_or_write() {
        let (_dir, ws) = repo(&[("app.py", "print(1)\n"), (".gitignore", "a\n")]);
        let f = |task: &str| files_to_create(task, &ws);
        assert_eq!(
            f(
                "python3 app.py crashes because config.json is missing. Create config.json with name demo."
            ),
            ["config.json"]
        );
        assert_eq!(
            f("Create a file hello.txt containing one line"),
            ["hello.txt"]
        );
        assert_eq!(
            f("Write a unit test file test_slug.py for slugify"),
            ["test_slug.py"]
        );
        // Already there, a pattern, something added to a file, a file inside a directory.
        assert!(f("Add a --shout flag to app.py").is_empty());
        assert!(f("Add the line *.log at the end of .gitignore.").is_empty());
        assert!(f("Add version 1.2.3 to the changelog").is_empty());
        assert!(f("Create a directory docs containing a file index.md").is_empty());
        assert!(f("Add a function square(x) to mathx.py").is_empty());
    }
}
