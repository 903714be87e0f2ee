//! A symptom "fixed" in the program's input instead of its code: the task names a command
//! whose output is wrong, and all the session changed is data files (`tags.txt`,
//! `settings.ini`) that the repository's code reads by name and the task does not name.
//!
//! The 1.5B on latest-release-sh changed the tag `v1.9.2` in tags.txt to `v1.9.3`, so that
//! `sh latest.sh` printed something else and the check (which tests only the helpers) passed;
//! on backoff-cap it raised `retries` in settings.ini. A task that reports wrong output on
//! the repository's own data takes the data as given: the DONE is refused, the files left
//! as the model wrote them, and the model is told which code reads the file.

use crate::workspace::Workspace;

/// Extensions of files a program reads as data.
pub(crate) const DATA: &[&str] = &[
    "txt", "csv", "tsv", "ini", "cfg", "conf", "json", "yaml", "yml", "toml", "log", "dat", "xml",
    "env", "list",
];

/// Extensions of source files (the code that may read a data file by its name).
pub(crate) const CODE: &[&str] = &[
    "py", "sh", "bash", "zsh", "js", "mjs", "cjs", "ts", "rb", "pl", "php", "go", "rs", "c", "h",
    "cc", "cpp", "hpp", "java", "kt", "lua", "awk",
];

pub(crate) fn ext(path: &str) -> Option<&str> {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.rsplit_once('.').map(|(_, e)| e)
}

fn name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// A data file the session changed, and the code files that read it by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    pub path: String,
    pub readers: Vec<String>,
}

/// When the task names a command (`commands`: it reports a symptom), and every file the
/// session changed that was there before (`modified`: their paths, each now different from
/// how it started) is a data file the task does not name and some code file of `ws` names:
/// those files. Empty otherwise — a new file, a code file, or a data file the task names among
/// the changes.
pub fn only_inputs_changed(
    task: &str,
    ws: &Workspace,
    modified: &[String],
    created: &[String],
    commands: bool,
) -> Vec<Input> {
    if !commands || modified.is_empty() || !created.is_empty() {
        return Vec::new();
    }
    let code: Vec<(String, String)> = ws
        .files("")
        .unwrap_or_default()
        .into_iter()
        .filter(|f| ext(f).is_some_and(|e| CODE.contains(&e)))
        .filter_map(|f| {
            let text = String::from_utf8(ws.read(&f).ok().flatten()?).ok()?;
            Some((f, text))
        })
        .collect();
    let mut out = Vec::new();
    for path in modified {
        let data = ext(path).is_some_and(|e| DATA.contains(&e.to_ascii_lowercase().as_str()));
        if !data || task.contains(name(path)) {
            return Vec::new();
        }
        let readers: Vec<String> = code
            .iter()
            .filter(|(_, text)| text.contains(name(path)))
            .map(|(f, _)| f.clone())
            .collect();
        if readers.is_empty() {
            return Vec::new();
        }
        out.push(Input {
            path: path.clone(),
            readers,
        });
    }
    out
}

/// Whether `path`, an existing file a change would write, is a data file no code file of `ws`
/// names and `task` does not name, where the task names a command whose output it calls wrong
/// (`symptom`): such a file cannot be what makes the command print otherwise, and a small
/// model shown every file writes over it (the 1.5B on archive-dir-sh wrote archive.sh into
/// photos/cover.txt and `DONE` into notes/todo.txt). A data file the code reads by name is
/// left to [`only_inputs_changed`] at DONE.
pub fn unread_data(task: &str, ws: &Workspace, path: &str, symptom: bool) -> bool {
    let data = ext(path).is_some_and(|e| DATA.contains(&e.to_ascii_lowercase().as_str()));
    if !symptom || !data || task.contains(name(path)) {
        return false;
    }
    let read = ws.files("").unwrap_or_default().into_iter().any(|f| {
        ext(&f).is_some_and(|e| CODE.contains(&e))
            && ws
                .read(&f)
                .ok()
                .flatten()
                .is_some_and(|b| String::from_utf8_lossy(&b).contains(name(path)))
    });
    !read
}

/// What the model is told of a change refused by [`unread_data`].
pub fn unread_refusal(path: &str) -> crate::act::Observation {
    crate::act::Observation::error(
        format!(
            "{path} not written: it is data that no program of the repository reads by name, \
             and the task neither names it nor asks for it to change"
        ),
        Some(
            "leave the data as it is: the task's command prints the wrong thing because of its \
             code; write the code file that needs the change",
        ),
    )
}

/// The refusal's words: (summary, hint).
pub fn refusal(inputs: &[Input]) -> (String, String) {
    let files: Vec<&str> = inputs.iter().map(|i| i.path.as_str()).collect();
    let mut readers: Vec<&str> = inputs
        .iter()
        .flat_map(|i| i.readers.iter().map(String::as_str))
        .collect();
    readers.sort_unstable();
    readers.dedup();
    (
        format!(
            "you changed only {}, the input that {} read{}; the task says the program's output \
             is wrong on its own data, so the fix belongs in the code",
            files.join(", "),
            readers.join(", "),
            if readers.len() == 1 { "s" } else { "" }
        ),
        format!(
            "write {} back as it was, then change the code that computes the output ({} or \
             the files it uses): its path on a line by itself, then its complete new content \
             in a fenced code block",
            files.join(", "),
            readers.join(", ")
        ),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::testing::repo as ws;

    #[test]
    fn a_data_file_the_code_reads_changed_alone_is_an_input_edit() {
        let (_d, w) = ws(&[
            ("latest.sh", "file=${1:-tags.txt}\nsort \"$file\"\n"),
            ("tags.txt", "v1.9.3\nv1.10.0\n"),
            ("notes.txt", "nothing reads me\n"),
        ]);
        let task = "`sh latest.sh` says the latest release is v1.9.2, but v1.10.0 is newer.";
        let tags = vec!["tags.txt".to_owned()];
        let found = only_inputs_changed(task, &w, &tags, &[], true);
        assert_eq!(
            found,
            [Input {
                path: "tags.txt".to_owned(),
                readers: vec!["latest.sh".to_owned()]
            }]
        );
        // A data file no code reads, written over in a task about a command's output:
        // refused at once; one the code reads, or the task names, or any in a task without
        // a symptom, is not.
        assert!(unread_data(task, &w, "notes.txt", true));
        assert!(!unread_data(task, &w, "tags.txt", true));
        assert!(!unread_data(task, &w, "notes.txt", false));
        assert!(!unread_data("Fix notes.txt.", &w, "notes.txt", true));
        assert!(!unread_data(task, &w, "latest.sh", true));
        let (summary, hint) = refusal(&found);
        assert!(summary.contains("tags.txt, the input that latest.sh reads"));
        assert!(hint.starts_with("write tags.txt back as it was"));
        // No command named: no symptom to judge by.
        assert!(only_inputs_changed(task, &w, &tags, &[], false).is_empty());
        // The task names the data file: it may be the fix.
        let named = "Fix the typo in tags.txt: `sh latest.sh` prints v1.9.2.";
        assert!(only_inputs_changed(named, &w, &tags, &[], true).is_empty());
        // Code changed too, or a file no code reads, or a new file: not only inputs.
        let both = vec!["tags.txt".to_owned(), "latest.sh".to_owned()];
        assert!(only_inputs_changed(task, &w, &both, &[], true).is_empty());
        let unread = vec!["notes.txt".to_owned()];
        assert!(only_inputs_changed(task, &w, &unread, &[], true).is_empty());
        assert!(only_inputs_changed(task, &w, &tags, &["new.py".to_owned()], true).is_empty());
    }
}
