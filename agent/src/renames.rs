//! A name the task renames (`Rename the setting `timeout` to `timeout_seconds` everywhere`),
//! checked at DONE: once the new name is in some file, no file may still use the old one
//! where a name stands — quoted (`"timeout"`, `'timeout'`, `` `timeout` ``), called
//! (`timeout(`), as an attribute (`.timeout`), defined or imported (`def timeout`,
//! `import timeout`) or set at the start of a line (`timeout = 5`, `timeout: 5`). The word in
//! prose (`(timeout 5 s)`) is not a use. Test files are left out: a test may keep the old
//! name to show it is refused.
//!
//! The 1.5B on rename-config-key renamed the key in config.json and config.py and said DONE
//! with client.py, health.py and README.md still reading `timeout`. Like the rest of
//! [`crate::asks`], the rule refuses a DONE (fed back, never a stop). Where writes are
//! unasked, the loop first finishes a rename the session began ([`finish`]) — the one place
//! a DONE rule changes files, by the same positions it judges, in one undoable commit.

use crate::probe::word_spans;
use crate::workspace::Workspace;

/// Words between `rename` and the old name that are not the name.
const KINDS: &[&str] = &[
    "the",
    "a",
    "setting",
    "settings",
    "key",
    "config",
    "configuration",
    "option",
    "function",
    "method",
    "class",
    "variable",
    "field",
    "constant",
    "parameter",
    "argument",
    "attribute",
    "property",
    "column",
    "flag",
];

/// The largest file read for leftovers.
const MAX_BYTES: usize = 64 * 1024;

fn ident(w: &str) -> bool {
    w.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn bare(w: &str) -> &str {
    w.trim_matches(|c: char| matches!(c, '`' | '"' | '\'' | '(' | ')' | ',' | '.' | ';' | ':'))
}

/// (old, new) when `task` says `rename [kind] OLD to NEW` with both names identifiers (not
/// files: a path with an extension is a move, [`crate::asks::rename_left`]'s).
pub fn asked(task: &str) -> Option<(String, String)> {
    let words: Vec<&str> = word_spans(task).into_iter().map(|(_, w)| w).collect();
    let lower: Vec<String> = words.iter().map(|w| bare(w).to_lowercase()).collect();
    let at = lower.iter().position(|w| w == "rename")?;
    let to = (at + 1..(at + 6).min(words.len())).find(|&j| lower[j] == "to")?;
    let old = (at + 1..to)
        .map(|j| bare(words[j]))
        .rfind(|w| ident(w) && !KINDS.contains(&w.to_lowercase().as_str()))?;
    let new = bare(words.get(to + 1)?);
    (ident(new) && old != new).then(|| (old.to_owned(), new.to_owned()))
}

/// Whether `line` uses `name` where a name stands (see the module's documentation).
fn uses(line: &str, name: &str) -> bool {
    !use_spans(line, name).is_empty()
}

/// Byte offsets where `line` uses `name` where a name stands.
fn use_spans(line: &str, name: &str) -> Vec<usize> {
    let idc = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut at: Vec<usize> = line.match_indices(name).map(|(i, _)| i).collect();
    at.retain(|&i| {
        let before = line[..i].chars().next_back();
        let after = line[i + name.len()..].chars().next();
        if before.is_some_and(|c| idc(c) || c == '-') || after.is_some_and(|c| idc(c) || c == '-') {
            return false;
        }
        let quoted = matches!(
            (before, after),
            (Some('"'), Some('"')) | (Some('\''), Some('\'')) | (Some('`'), Some('`'))
        );
        let head = line[..i].trim_end();
        let called = after == Some('(') || before == Some('.');
        let defined = ["def", "class", "import", "function"]
            .iter()
            .any(|k| head.ends_with(k) && head.len() < i);
        let set = line[..i].trim().is_empty()
            && line[i + name.len()..].trim_start().starts_with(['=', ':']);
        quoted || called || defined || set
    });
    at
}

/// `line` with the `len` bytes at each of `spans` (ascending, apart) replaced by `with`.
fn replaced_at(line: &str, spans: &[usize], len: usize, with: &str) -> String {
    let mut out = line.to_owned();
    for &i in spans.iter().rev() {
        out.replace_range(i..i + len, with);
    }
    out
}

/// One file as finishing a rename leaves it ([`finish`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    pub path: String,
    pub before: String,
    pub after: String,
    /// Lines (from 1) where the old name still stood and now reads the new one.
    pub renamed: Vec<usize>,
    /// Lines (from 1) where the session's rename had reached a word of printed text, put
    /// back as the word it was ([`in_prose`]).
    pub restored: Vec<usize>,
}

/// The rename `task` asks for, finished the way the DONE rules judge it: in every file
/// (test files and files over [`MAX_BYTES`] left out), each place the old name still stands
/// as a name ([`left`]) reads the new one, and in each code file the session changed
/// (`originals`), a word of printed text its rename reached is put back ([`in_prose`]).
/// Only once the session has begun the rename (some file has the new name): the model
/// decides that the rename is the change, this only completes it. Empty when nothing is
/// left to do.
///
/// The 1.5B on rename-config-key renamed the key in one or two files per turn and the word
/// in `(timeout 5 s, …)` with it; told each leftover (`name_left`, `name_in_prose`) with the
/// line to write, it wrote the same lines back until its turns ran out, in every attempt of
/// sessions 23–25. An IDE's rename does this mechanically; so does this.
pub fn finish(
    task: &str,
    ws: &Workspace,
    originals: &std::collections::BTreeMap<String, Option<Vec<u8>>>,
) -> Vec<Finished> {
    let Some((old, new)) = asked(task) else {
        return Vec::new();
    };
    let files = rename_files(task, ws);
    if !files.iter().any(|(_, t)| t.contains(new.as_str())) {
        return Vec::new();
    }
    let word = old.chars().all(|c| c.is_ascii_lowercase());
    // `x.old` is renamed only where the repository defines the new name: `cfg.get(…)` is a
    // dict's method, whatever `get` the task renames, until some file has `def fetch`.
    let defined = files.iter().any(|(_, t)| {
        t.lines().any(|l| {
            let l = l.trim_start();
            ["def ", "class ", "function ", "self."].iter().any(|k| {
                l.strip_prefix(k).is_some_and(|rest| {
                    rest.strip_prefix(new.as_str())
                        .is_some_and(|r| !r.starts_with(|c: char| c.is_alphanumeric() || c == '_'))
                })
            })
        })
    });
    let mut out = Vec::new();
    for (path, text) in files {
        let ext = path.rsplit_once('.').map_or("", |(_, e)| e);
        let before_lines: std::collections::BTreeSet<String> = match originals.get(&path) {
            Some(Some(b)) if word && !DOCUMENTS.contains(&ext) => String::from_utf8_lossy(b)
                .lines()
                .map(str::to_owned)
                .collect(),
            _ => std::collections::BTreeSet::new(),
        };
        let (mut renamed, mut restored) = (Vec::new(), Vec::new());
        let mut lines: Vec<String> = Vec::new();
        for (k, line) in text.split_inclusive('\n').enumerate() {
            let mut line = line.to_owned();
            let prose = in_literal_prose(&line, &new);
            if !prose.is_empty() {
                let was = line
                    .trim_end_matches(['\n', '\r'])
                    .replace(new.as_str(), &old);
                if before_lines.contains(&was) && !in_literal_prose(&was, &old).is_empty() {
                    line = replaced_at(&line, &prose, new.len(), &old);
                    restored.push(k + 1);
                }
            }
            let mut spans = use_spans(&line, &old);
            spans.retain(|&i| defined || !line[..i].ends_with('.'));
            if !spans.is_empty() {
                line = replaced_at(&line, &spans, old.len(), &new);
                renamed.push(k + 1);
            }
            lines.push(line);
        }
        if renamed.is_empty() && restored.is_empty() {
            continue;
        }
        out.push(Finished {
            path,
            before: text,
            after: lines.concat(),
            renamed,
            restored,
        });
    }
    out
}

/// Words that carry a rename to every file.
const WIDE: &[&str] = &[
    "everywhere",
    "all",
    "every",
    "across",
    "throughout",
    "codebase",
    "repository",
    "project",
];

/// The files a rename of `task` reaches, of `files`: `None` for all of them; the files the
/// task names when it names some and no word of [`WIDE`] (`Rename the variable data to
/// records in report.py` reaches report.py alone).
fn in_scope(task: &str, files: &[String]) -> Option<Vec<String>> {
    let words: Vec<String> = word_spans(task)
        .into_iter()
        .map(|(_, w)| bare(w).to_owned())
        .collect();
    if words
        .iter()
        .any(|w| WIDE.contains(&w.to_lowercase().as_str()))
    {
        return None;
    }
    let named: Vec<String> = files
        .iter()
        .filter(|f| words.contains(f))
        .cloned()
        .collect();
    (!named.is_empty()).then_some(named)
}

/// The files a rename reads: the repository's (tests and files over [`MAX_BYTES`] left
/// out), within the task's scope ([`in_scope`]), with their text.
fn rename_files(task: &str, ws: &Workspace) -> Vec<(String, String)> {
    let all = ws.files("").unwrap_or_default();
    let scope = in_scope(task, &all);
    all.into_iter()
        .filter(|f| scope.as_ref().is_none_or(|s| s.contains(f)))
        .filter(|f| !crate::probe::is_test(&[format!("./{f}")]))
        .filter_map(|f| {
            let bytes = ws.read(&f).ok().flatten()?;
            (bytes.len() <= MAX_BYTES).then_some(())?;
            Some((f, String::from_utf8(bytes).ok()?))
        })
        .collect()
}

/// Each file of `ws` (test files left out) that still uses `old` where a name stands, with
/// its first such line (number from 1, and text), when `task` renames `old` to `new` and some
/// file has `new`. Empty otherwise.
pub fn left(task: &str, ws: &Workspace) -> Vec<(String, usize, String)> {
    let Some((old, new)) = asked(task) else {
        return Vec::new();
    };
    let files = rename_files(task, ws);
    if !files.iter().any(|(_, t)| t.contains(new.as_str())) {
        return Vec::new();
    }
    files
        .iter()
        .filter_map(|(f, text)| {
            let (k, line) = text.lines().enumerate().find(|(_, l)| uses(l, &old))?;
            Some((f.clone(), k + 1, line.trim().to_owned()))
        })
        .collect()
}

/// Extensions of files whose words are the document's, where a rename may reach prose.
const DOCUMENTS: &[&str] = &["md", "rst", "txt", "adoc", "html"];

/// Byte offsets where `name` stands as a word inside a string literal of `line` and not
/// where a name stands ([`uses`]): `(timeout 5 s, …)` in an f-string the program prints. A
/// quote count before the word tells a literal, roughly, as a line of code has it.
fn in_literal_prose(line: &str, name: &str) -> Vec<usize> {
    let idc = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    line.match_indices(name)
        .map(|(i, _)| i)
        .filter(|&i| {
            let before = line[..i].chars().next_back();
            let after = line[i + name.len()..].chars().next();
            if before.is_some_and(idc) || after.is_some_and(idc) {
                return false;
            }
            let quoted = matches!(
                (before, after),
                (Some('"'), Some('"')) | (Some('\''), Some('\'')) | (Some('`'), Some('`'))
            );
            let head = &line[..i];
            let inside = head.matches('"').count() % 2 == 1 || head.matches('\'').count() % 2 == 1;
            inside
                && !quoted
                && before != Some('.')
                && !matches!(after, Some('(' | '[' | '=' | '{' | '}'))
                && before != Some('{')
        })
        .collect()
}

/// The first line of a code file the session changed where the rename `task` asks for
/// reached a word of text inside a string (what the program prints), which held the old name
/// as prose before: `(file, line number, the line, the line with those words put back)`. The 1.5B on rename-config-key renamed
/// the key everywhere and also the word of `(timeout 5 s, 2 retries)` that client.py prints;
/// the task renames a name, not the words shown to a user. Only an old name that is an
/// ordinary lowercase word is judged, and documents are left out (a README's prose may name
/// the setting).
pub fn in_prose(
    task: &str,
    ws: &Workspace,
    originals: &std::collections::BTreeMap<String, Option<Vec<u8>>>,
) -> Option<(String, usize, String, String)> {
    let (old, new) = asked(task)?;
    // An old name that is an ordinary word (`timeout`) is that word in a sentence; one shaped
    // like code (`get_data`, `maxRetries`, `v2`) names the code even in a message.
    if !old.chars().all(|c| c.is_ascii_lowercase()) {
        return None;
    }
    for (path, before) in originals {
        let ext = path.rsplit_once('.').map_or("", |(_, e)| e);
        if DOCUMENTS.contains(&ext) || crate::probe::is_test(&[format!("./{path}")]) {
            continue;
        }
        let Some(before) = before.as_deref().and_then(|b| std::str::from_utf8(b).ok()) else {
            continue;
        };
        let Some(now) = ws.read(path).ok().flatten() else {
            continue;
        };
        let Ok(now) = String::from_utf8(now) else {
            continue;
        };
        let old_lines: std::collections::BTreeSet<&str> = before.lines().collect();
        for (k, line) in now.lines().enumerate() {
            let prose = in_literal_prose(line, &new);
            if prose.is_empty() {
                continue;
            }
            // The line as it was, every new name put back: the session's rename reached a
            // word the old line held as prose.
            let was = line.replace(new.as_str(), &old);
            if old_lines.contains(was.as_str()) && !in_literal_prose(&was, &old).is_empty() {
                // The words alone put back, the names left renamed: the line as the task
                // wants it, for the model to copy (the 1.5B, told only what was wrong, wrote
                // the same line back turn after turn).
                let mut fixed = line.to_owned();
                for &i in prose.iter().rev() {
                    fixed.replace_range(i..i + new.len(), &old);
                }
                return Some((
                    path.clone(),
                    k + 1,
                    line.trim().to_owned(),
                    fixed.trim().to_owned(),
                ));
            }
        }
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::testing::repo;

    #[test]
    fn a_rename_that_reaches_the_words_a_program_prints_is_found() {
        use std::collections::BTreeMap;
        let task = "Rename the setting `timeout` to `timeout_seconds` everywhere.";
        let client = "def plan(cfg):\n    return f\"(timeout {cfg['timeout']} s)\"\n";
        let (_d, ws) = repo(&[
            (
                "client.py",
                "def plan(cfg):\n    return f\"(timeout_seconds {cfg['timeout_seconds']} s)\"\n",
            ),
            ("README.md", "the timeout_seconds setting\n"),
        ]);
        let mut originals = BTreeMap::new();
        originals.insert("client.py".to_owned(), Some(client.as_bytes().to_vec()));
        originals.insert(
            "README.md".to_owned(),
            Some(b"the timeout setting\n".to_vec()),
        );
        let got = in_prose(task, &ws, &originals).unwrap();
        assert_eq!((got.0.as_str(), got.1), ("client.py", 2));
        // The line to write: the word put back, the subscript's name left renamed.
        assert_eq!(got.3, "return f\"(timeout {cfg['timeout_seconds']} s)\"");
        // The name renamed where it stands (quoted, the subscript) and the word kept: fine.
        std::fs::write(
            ws.root().join("client.py"),
            "def plan(cfg):\n    return f\"(timeout {cfg['timeout_seconds']} s)\"\n",
        )
        .unwrap();
        assert!(in_prose(task, &ws, &originals).is_none());
        // A message that was already prose with the new name: not the session's rename.
        originals.insert(
            "client.py".to_owned(),
            Some(b"x = \"(timeout_seconds 5)\"\n".to_vec()),
        );
        std::fs::write(ws.root().join("client.py"), "x = \"(timeout_seconds 5)\"\n").unwrap();
        assert!(in_prose(task, &ws, &originals).is_none());
        // A name shaped like code, in a message, names the code: not judged.
        let task = "Rename the function `get_data` to `fetch_data` everywhere.";
        originals.insert(
            "client.py".to_owned(),
            Some(b"print(\"(get_data failed)\")\n".to_vec()),
        );
        std::fs::write(
            ws.root().join("client.py"),
            "print(\"(fetch_data failed)\")\n",
        )
        .unwrap();
        assert!(in_prose(task, &ws, &originals).is_none());
        // No rename asked: nothing.
        assert!(in_prose("Make the timeout longer.", &ws, &originals).is_none());
    }

    #[test]
    fn a_begun_rename_is_finished_where_a_name_stands_and_printed_words_put_back() {
        use std::collections::BTreeMap;
        let task = "Rename the setting `timeout` to `timeout_seconds` everywhere.";
        let client = "def plan(cfg):\n    return f\"(timeout {cfg['timeout']} s)\"\n";
        let over = client.replace("timeout", "timeout_seconds");
        let health = "def worst(cfg):\n    # the timeout, per try\n    return 3 * cfg.get(\"timeout\", 10)\n";
        let files = [
            ("config.json", "{\"timeout_seconds\": 5}\n"),
            ("client.py", over.as_str()),
            ("health.py", health),
            ("README.md", "| `timeout` | 10 |\nthe timeout of one try\n"),
            ("test_config.py", "json.dump({\"timeout\": 3}, f)\n"),
        ];
        let (_d, ws) = repo(&files);
        let mut originals = BTreeMap::new();
        originals.insert("client.py".to_owned(), Some(client.as_bytes().to_vec()));
        originals.insert(
            "config.json".to_owned(),
            Some(b"{\"timeout\": 5}\n".to_vec()),
        );
        let done = finish(task, &ws, &originals);
        let got: Vec<(&str, &str, &[usize], &[usize])> = done
            .iter()
            .map(|f| {
                (
                    f.path.as_str(),
                    f.after.as_str(),
                    f.renamed.as_slice(),
                    f.restored.as_slice(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (
                    "README.md",
                    "| `timeout_seconds` | 10 |\nthe timeout of one try\n",
                    &[1][..],
                    &[][..]
                ),
                (
                    "client.py",
                    "def plan(cfg):\n    return f\"(timeout {cfg['timeout_seconds']} s)\"\n",
                    &[][..],
                    &[2][..]
                ),
                (
                    "health.py",
                    "def worst(cfg):\n    # the timeout, per try\n    return 3 * cfg.get(\"timeout_seconds\", 10)\n",
                    &[3][..],
                    &[][..]
                ),
            ]
        );
        assert_eq!(done[1].before, over);
        // Finished, the rules that judge a DONE find nothing left.
        for f in &done {
            std::fs::write(ws.root().join(&f.path), &f.after).unwrap();
        }
        assert!(left(task, &ws).is_empty());
        assert!(in_prose(task, &ws, &originals).is_none());
        assert!(finish(task, &ws, &originals).is_empty());
        // Not begun (no file has the new name), or no rename asked: nothing is done.
        let (_d, ws) = repo(&[("config.json", "{\"timeout\": 5}\n"), ("health.py", health)]);
        assert!(finish(task, &ws, &BTreeMap::new()).is_empty());
        let (_d, ws) = repo(&files);
        assert!(finish("Make the timeout longer.", &ws, &originals).is_empty());
        // A method of the same name is another's until the repository defines the new one.
        let task = "Rename the function `get` to `fetch` everywhere.";
        let (_d, ws) = repo(&[
            ("store.py", "def fetch(key):\n    return key\n"),
            (
                "app.py",
                "import store\nx = store.get('a')\ny = {}.get('b')\n",
            ),
        ]);
        let done = finish(task, &ws, &BTreeMap::new());
        assert_eq!(done.len(), 1);
        // Defined: every `.get` is taken for it, a dict's too (the text cannot tell them).
        assert_eq!(
            done[0].after,
            "import store\nx = store.fetch('a')\ny = {}.fetch('b')\n"
        );
        let (_d, ws) = repo(&[
            ("store.py", "FETCH = 1\nget = lambda key: key  # to fetch\n"),
            (
                "app.py",
                "import store\nx = store.get('a')\ny = {}.get('b')\n",
            ),
        ]);
        let done = finish(task, &ws, &BTreeMap::new());
        assert_eq!(done.len(), 1, "{done:?}");
        assert_eq!(done[0].path, "store.py");
        assert_eq!(
            done[0].after,
            "FETCH = 1\nfetch = lambda key: key  # to fetch\n"
        );
    }

    #[test]
    fn a_rename_in_the_files_a_task_names_reaches_those_alone() {
        let (_d, ws) = repo(&[
            (
                "report.py",
                "def read_all():\n    return []\n\n\nrows = load()\n",
            ),
            ("store.py", "def load():\n    return {\"load\": 1}\n"),
        ]);
        let task = "Rename the function load to read_all in report.py.";
        let found: Vec<String> = left(task, &ws).into_iter().map(|(f, _, _)| f).collect();
        assert_eq!(found, ["report.py"]);
        let done = finish(task, &ws, &std::collections::BTreeMap::new());
        assert_eq!(done.len(), 1);
        assert_eq!(
            done[0].after,
            "def read_all():\n    return []\n\n\nrows = read_all()\n"
        );
        // Everywhere: every file.
        let task = "Rename the function load to read_all everywhere (report.py and the rest).";
        let found: Vec<String> = left(task, &ws).into_iter().map(|(f, _, _)| f).collect();
        assert_eq!(found, ["report.py", "store.py"]);
    }

    #[test]
    fn the_names_of_a_rename_are_read_beside_to() {
        let pair = |a: &str, b: &str| Some((a.to_owned(), b.to_owned()));
        assert_eq!(
            asked("Rename the setting `timeout` to `timeout_seconds` everywhere (config.json)."),
            pair("timeout", "timeout_seconds")
        );
        assert_eq!(
            asked("Rename the function get_data to fetch_data in all files."),
            pair("get_data", "fetch_data")
        );
        assert_eq!(asked("Rename utils.py to helpers.py."), None);
        assert_eq!(asked("Make the timeout longer."), None);
    }

    #[test]
    fn a_name_left_where_a_name_stands_is_found_and_prose_is_not() {
        let task = "Rename the setting `timeout` to `timeout_seconds` everywhere.";
        let (_d, ws) = repo(&[
            ("config.json", "{\"timeout_seconds\": 5}\n"),
            (
                "client.py",
                "x = 1\nprint(f\"(timeout {cfg['timeout']} s)\")\n",
            ),
            ("health.py", "t = cfg.get(\"timeout_seconds\", 10)\n"),
            ("README.md", "| `timeout` | 10 |\n"),
            ("notes.txt", "the timeout is long\n"),
            ("settings.ini", "timeout = 5\n"),
            ("test_config.py", "json.dump({\"timeout\": 3}, f)\n"),
        ]);
        let found = left(task, &ws);
        let files: Vec<&str> = found.iter().map(|(f, _, _)| f.as_str()).collect();
        assert_eq!(files, ["README.md", "client.py", "settings.ini"]);
        assert_eq!(found[1].1, 2);
        // No file has the new name yet: not this rule's to say.
        let (_d, ws) = repo(&[("config.json", "{\"timeout\": 5}\n")]);
        assert!(left(task, &ws).is_empty());
        // Called, an attribute, defined.
        for line in [
            "get_data(x)",
            "m.get_data",
            "def get_data():",
            "from m import get_data",
        ] {
            assert!(uses(line, "get_data"), "{line}");
        }
        assert!(!uses("get_data_all(x)", "get_data"));
        assert!(!uses("# we get data here", "get_data"));
    }
}
