//! What a task's words ask for that can be checked without running anything: the files it
//! says to delete, the files it says to create, and the renames it asks for. A small model asked to delete a file rewrites another one and says it is
//! done (the 0.5B on delete-file); a DONE while a file the task deletes is still there is
//! refused (`file_left`). Only a file that is the object of "delete"/"remove" counts: the word,
//! then at most three words (`the obsolete file`), then a path of the repository, with no `in`,
//! `from` or `of` between — `remove the print in app.py` asks for no file to go.

use crate::probe::{is_repo_file, sentence_bounds, word_spans};
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

/// Words that name a directory, before or after its name.
const DIRECTORY_WORDS: &[&str] = &["directory", "folder", "dir"];

/// Words beside a directory word that are not its name.
const NOT_A_DIRECTORY: &[&str] = &[
    "a",
    "an",
    "the",
    "new",
    "named",
    "called",
    "with",
    "that",
    "this",
    "same",
    "empty",
    "its",
    "each",
    "every",
    "one",
    "another",
    "containing",
    "in",
    "into",
    "of",
    "inside",
    "under",
];

/// Where `task` places `file`, a bare file name: `D/file` when the sentence that names it
/// names a directory D (`a directory docs containing a file index.md`, `index.md in the docs
/// folder`); else `file` as it is. The 1.5B, told that index.md lacked its text, wrote a top-level index.md.
pub fn placed(task: &str, file: &str) -> String {
    if file.contains('/') {
        return file.to_owned();
    }
    for range in sentence_bounds(task) {
        let words = task_words(&task[range]);
        if !words.contains(&file) {
            continue;
        }
        let plain = |name: &str| {
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '/'))
                && !name.split('/').any(|c| c.is_empty() || c == "..")
                && !NOT_A_DIRECTORY.contains(&name.to_lowercase().as_str())
                && name != file
        };
        let is_dir_word = |w: &str| DIRECTORY_WORDS.contains(&w.to_lowercase().as_str());
        // `directory docs`, or `the docs directory`.
        let dir = words.windows(2).find_map(|p| {
            let (a, b) = (p[0].trim_end_matches('/'), p[1].trim_end_matches('/'));
            if is_dir_word(a) && plain(b) {
                Some(b)
            } else if is_dir_word(b) && plain(a) {
                Some(a)
            } else {
                None
            }
        });
        if let Some(dir) = dir {
            return format!("{dir}/{file}");
        }
    }
    file.to_owned()
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
            let path = placed(task, path);
            if !exists(ws, &path) && !out.contains(&path) {
                out.push(path);
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

/// Words that name what a task adds, beside its name: `a function square(x)`, `a --shout
/// flag`, `a parameter currency`.
const KIND_WORDS: &[&str] = &[
    "function",
    "method",
    "class",
    "parameter",
    "argument",
    "option",
    "flag",
    "field",
    "constant",
    "variable",
    "subcommand",
];

/// Words that are never the name of what is added.
const NOT_A_NAME: &[&str] = &[
    "a", "an", "the", "to", "that", "which", "for", "in", "on", "with", "and", "so", "called",
    "named", "of", "this", "it", "new", "its", "one", "as", "by", "from", "into",
];

/// The names `task` says to add (`Add a function square(x)`, `add a --shout flag`, `Add a
/// parameter currency to …`): after `add`/`create`/`define`/`write`, at most two words, then a
/// kind of thing ([`KIND_WORDS`]) with its name beside it — an identifier after it (called or
/// named, or with its argument list), or an option (`--shout`, `-n`) before or after it (a
/// one-letter one counts only where a file parses it: [`parses_short_option`]). A DONE
/// while no file the session changed holds one of them is refused (`name_missing`): the
/// 0.5B, asked to add square(x), changed `double` to square its argument and said DONE.
pub fn names_to_add(task: &str) -> Vec<String> {
    added(task).into_iter().map(|(name, _)| name).collect()
}

/// [`names_to_add`], each with whether it is a definition (a function, method or class,
/// which a file must define, not only mention).
fn added(task: &str) -> Vec<(String, bool)> {
    let words = task_words(task);
    let lower: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
    let mut out: Vec<(String, bool)> = Vec::new();
    let mut push = |name: &str, defined: bool| {
        if !out.iter().any(|(n, _)| n == name) {
            out.push((name.to_owned(), defined));
        }
    };
    for (k, w) in lower.iter().enumerate() {
        let negated = k > 0 && NEGATIONS.contains(&lower[k - 1].as_str());
        if negated || !matches!(w.as_str(), "add" | "create" | "define" | "write") {
            continue;
        }
        let Some(kind) = (k + 1..(k + 4).min(lower.len())).find(|&j| is_kind(&lower[j])) else {
            // An option with its argument's name before the kind: `Add a --since HH:MM
            // option` (the 0.5B on logview-since changed only filters.py, its check passed,
            // and the attempt stopped as verified with no `--since` anywhere).
            let option = (k + 1..(k + 4).min(words.len()))
                .find(|&j| long_option(words[j]) || short_option(words[j]));
            let kind_after = option
                .and_then(|o| (o + 1..(o + 3).min(lower.len())).find(|&j| is_kind(&lower[j])));
            if let (Some(o), Some(_)) = (option, kind_after) {
                push(words[o], false);
            }
            continue;
        };
        // An option just before the kind: `a --shout flag`, `a -n option`.
        if kind > k + 1 && (long_option(words[kind - 1]) || short_option(words[kind - 1])) {
            push(words[kind - 1], false);
            continue;
        }
        let mut after = kind + 1;
        if lower
            .get(after)
            .is_some_and(|w| matches!(w.as_str(), "called" | "named"))
        {
            after += 1;
        }
        let Some(next) = words.get(after) else {
            continue;
        };
        if long_option(next) || short_option(next) {
            push(next, false);
            continue;
        }
        let name = next.split('(').next().unwrap_or(next);
        if identifier(name) && !NOT_A_NAME.contains(&name.to_lowercase().as_str()) {
            let defined = matches!(
                lower[kind].as_str(),
                "function" | "functions" | "method" | "methods" | "class" | "classes"
            );
            push(name, defined);
        }
    }
    out
}

/// One of [`KIND_WORDS`], or its plural.
fn is_kind(w: &str) -> bool {
    KIND_WORDS.contains(&w) || w.strip_suffix('s').is_some_and(|s| KIND_WORDS.contains(&s))
}

/// `-n`: a dash and one letter.
fn short_option(w: &str) -> bool {
    w.strip_prefix('-')
        .is_some_and(|rest| rest.len() == 1 && rest.starts_with(|c: char| c.is_ascii_alphabetic()))
}

/// `text` parses the one-letter option `-x` (`short`), not only mentions it (`[ -n "$f" ]` is
/// a test, not an option): quoted (`"-n"`, Python's argparse or a comparison), compared to
/// (`[ "$1" = -n ]`), as a `case`
/// pattern (`-n)`, `-n|--dry-run)`), or in a `getopts` option string (`getopts vn opt`).
fn parses_short_option(text: &str, short: &str) -> bool {
    let Some(letter) = short.strip_prefix('-').and_then(|r| r.chars().next()) else {
        return false;
    };
    let quoted = [
        format!("\"{short}\""),
        format!("'{short}'"),
        format!("= {short} "),
        format!("= {short}]"),
    ];
    if quoted.iter().any(|q| text.contains(q.as_str())) {
        return true;
    }
    text.lines().any(|line| {
        let t = line.trim_start();
        let pattern = t
            .split(')')
            .next()
            .is_some_and(|p| !p.contains(' ') && p.split('|').any(|alt| alt == short))
            && t.contains(')');
        let getopts = t
            .split_whitespace()
            .skip_while(|w| *w != "getopts")
            .nth(1)
            .is_some_and(|opts| opts.trim_matches(['"', '\'']).contains(letter));
        pattern || getopts
    })
}

/// A `getopts` line of `files` (paths of `ws`) whose option letters leave out the one-letter
/// option `short`: `(file, line number, the line, the line with the letter added)`, trimmed.
/// The 1.5B on clean-dry-run-sh wrote `while getopts v n opt; do` — `n` there is the variable
/// and `opt` an argument — and, told only that nothing read -n, said DONE three times; the
/// line as it should read is something it can copy. A lone `short` letter written as a word of
/// its own right after the letters is taken into them.
pub fn getopts_without(
    ws: &Workspace,
    files: &[String],
    short: &str,
) -> Option<(String, usize, String, String)> {
    let letter = short.strip_prefix('-').filter(|r| r.len() == 1)?;
    files.iter().find_map(|path| {
        let text = String::from_utf8(ws.read(path).ok().flatten()?).ok()?;
        text.lines().enumerate().find_map(|(k, line)| {
            let t = line.trim();
            let at = t.find("getopts ")?;
            let (head, rest) = t.split_at(at + "getopts ".len());
            let mut words: Vec<&str> = rest.split_whitespace().collect();
            let opts = *words.first()?;
            let plain = opts.trim_matches(['"', '\'']);
            if plain.is_empty()
                || plain.contains(letter)
                || !plain.chars().all(|c| c.is_ascii_alphabetic() || c == ':')
            {
                return None;
            }
            let fixed_opts = match opts.strip_suffix(['"', '\'']) {
                Some(inner) if inner.len() < opts.len() && opts.len() > 1 => {
                    format!("{inner}{letter}{}", &opts[inner.len()..])
                }
                _ => format!("{opts}{letter}"),
            };
            if words.len() >= 3 && words[1] == letter {
                words.remove(1);
            }
            words[0] = &fixed_opts;
            Some((
                path.clone(),
                k + 1,
                t.to_owned(),
                format!("{head}{}", words.join(" ")),
            ))
        })
    })
}

/// `--word` or `--two-words`.
fn long_option(w: &str) -> bool {
    w.strip_prefix("--").is_some_and(|rest| {
        rest.len() >= 2
            && rest.starts_with(|c: char| c.is_ascii_alphabetic())
            && rest
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
    })
}

/// A name a program could define: ASCII letters, digits and `_`, not starting with a digit,
/// two characters or more.
fn identifier(w: &str) -> bool {
    w.len() >= 2
        && w.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// File extensions of prose: a name written there is documented, not added.
const PROSE: &[&str] = &["md", "txt", "rst", "markdown", "adoc"];

/// The names of [`names_to_add`] that no file of `files` (paths of `ws`, prose files left
/// out) has: a function, method or class defined (`def square(`), anything else as a whole
/// word. The 0.5B, asked to add square(x), wrote `def square` into README.md and said DONE.
pub fn names_missing(task: &str, ws: &Workspace, files: &[String]) -> Vec<String> {
    let names = added(task);
    if names.is_empty() {
        return Vec::new();
    }
    let texts: Vec<String> = files
        .iter()
        .filter(|p| {
            !p.rsplit_once('.')
                .is_some_and(|(_, ext)| PROSE.contains(&ext.to_lowercase().as_str()))
        })
        .filter_map(|p| ws.read(p).ok().flatten())
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .collect();
    names
        .into_iter()
        .filter(|(n, defined)| {
            !texts.iter().any(|t| {
                if *defined {
                    crate::whole::definitions(t).contains(n)
                } else if short_option(n) {
                    parses_short_option(t, n)
                } else {
                    holds_word(t, n)
                }
            })
        })
        .map(|(n, _)| n)
        .collect()
}

/// `text` holds `word` with no identifier character on either side: a letter, a digit or
/// `_`, and `-` after it (`--shout-loud` is not `--shout`) or, for an option, before it.
fn holds_word(text: &str, word: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let option = word.starts_with('-');
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        !before.is_some_and(|c| ident(c) || (option && c == '-'))
            && !after.is_some_and(|c| ident(c) || c == '-')
    })
}

/// Words that call code dead: with `delete it` / `remove it`, the task asks for the code
/// it names to go.
const DEAD_WORDS: &[&str] = &["dead", "unused", "obsolete", "uncalled"];

/// The functions and classes `task` says to delete, by name: an identifier within four words
/// after `delete`/`remove` (`Delete legacy_parse`, `remove the old_format function`), or — when
/// the task calls code dead or unused and says `delete it` — the identifier it names. Only a
/// name that could be nothing else counts: one with `_` or a digit, written with `()` or in
/// backticks, or beside `function`/`method`/`class` (`remove the main guard` names no
/// function `main`). A DONE while the repository still defines one is refused
/// (`definition_left`): the 0.5B, told legacy_parse is dead code, wrote a new file and said
/// DONE, and the task's check passed before and after.
pub fn definitions_to_delete(task: &str) -> Vec<String> {
    let spans = word_spans(task);
    let raw: Vec<&str> = spans.iter().map(|(_, w)| *w).collect();
    let words = task_words(task);
    let lower: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
    let distinct = |k: usize| -> Option<String> {
        let w = words[k];
        let name = w.strip_suffix("()").unwrap_or(w);
        if !identifier(name) || NOT_A_NAME.contains(&lower[k].as_str()) || is_kind(&lower[k]) {
            return None;
        }
        let marked = raw[k].contains('`') || w.ends_with("()") || raw[k].contains("()");
        let shaped = name.contains('_') || name.chars().any(|c| c.is_ascii_digit());
        let kind = |j: Option<usize>| {
            j.and_then(|j| lower.get(j))
                .is_some_and(|w| matches!(w.as_str(), "function" | "method" | "class"))
        };
        (marked || shaped || kind(k.checked_sub(1)) || kind(Some(k + 1))).then(|| name.to_owned())
    };
    let mut out: Vec<String> = Vec::new();
    let mut push = |n: String| {
        if !out.contains(&n) {
            out.push(n);
        }
    };
    let mut pronoun = false;
    for (k, w) in lower.iter().enumerate() {
        let negated = k > 0 && NEGATIONS.contains(&lower[k - 1].as_str());
        if negated || !matches!(w.as_str(), "delete" | "remove") {
            continue;
        }
        if lower.get(k + 1).is_some_and(|n| n == "it" || n == "them") {
            pronoun = true;
            continue;
        }
        for (j, next) in lower.iter().enumerate().skip(k + 1).take(4) {
            if NOT_THE_FILE.contains(&next.as_str()) {
                break;
            }
            if let Some(n) = distinct(j) {
                push(n);
            }
        }
    }
    if pronoun && lower.iter().any(|w| DEAD_WORDS.contains(&w.as_str())) {
        let named: Vec<String> = (0..words.len()).filter_map(distinct).collect();
        if let [one] = named.as_slice() {
            push(one.clone());
        }
    }
    out
}

/// The first of [`definitions_to_delete`] that a file of `ws` still defines: (name, file).
pub fn definition_left(task: &str, ws: &Workspace) -> Option<(String, String)> {
    let names = definitions_to_delete(task);
    if names.is_empty() {
        return None;
    }
    let files = ws.files("").unwrap_or_default();
    names.into_iter().find_map(|name| {
        files.iter().find_map(|p| {
            let bytes = ws.read(p).ok().flatten()?;
            let defs = crate::whole::definitions(&String::from_utf8_lossy(&bytes));
            defs.contains(&name).then(|| (name.clone(), p.clone()))
        })
    })
}

/// Words just before a colon that say the text after it is a file's content: `containing
/// the single line: hello, world`, `whose first line is: # Docs`.
const CONTENT_WORDS: &[&str] = &[
    "line",
    "lines",
    "content",
    "contents",
    "text",
    "containing",
    "contains",
    "saying",
    "reads",
];

/// The texts `task` says a file it creates or adds to holds, as (file name, text): a sentence
/// with `create`/`add`/`write`, a file name, then a colon after one of [`CONTENT_WORDS`]
/// (within the three words before it), and the text from the colon to the end of the line
/// (a sentence's closing `.` left out). A DONE while no file of that name holds the text is
/// refused (`content_missing`): the 0.5B, asked for hello.txt containing `hello, world`,
/// wrote a file holding its own name.
pub fn contents_asked(task: &str) -> Vec<(String, String, Fits)> {
    let mut out = Vec::new();
    for line in task.lines() {
        let Some((head, text)) = line.split_once(": ") else {
            continue;
        };
        let words = task_words(head);
        let lower: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
        let creates = lower
            .iter()
            .any(|w| matches!(w.as_str(), "create" | "add" | "write"));
        let says_content = lower
            .iter()
            .rev()
            .take(3)
            .any(|w| CONTENT_WORDS.contains(&w.as_str()));
        let Some(file) = words.iter().rev().find(|w| file_name_like(w)) else {
            continue;
        };
        let text = text.trim();
        let text = text
            .strip_suffix('.')
            .filter(|t| !t.ends_with('.'))
            .unwrap_or(text)
            .trim();
        if creates && says_content && !text.is_empty() {
            // `the line: X` asks for a line that is X; `first line`, for the first.
            let near: Vec<&str> = lower.iter().rev().take(3).map(String::as_str).collect();
            let fits = if near.contains(&"first") && near.iter().any(|w| w.starts_with("line")) {
                Fits::FirstLine
            } else if near.iter().any(|w| w.starts_with("line")) {
                Fits::Line
            } else {
                Fits::Contains
            };
            out.push(((*file).to_owned(), text.to_owned(), fits));
        }
    }
    out
}

/// How a file must hold the text a task gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fits {
    /// Somewhere in it.
    Contains,
    /// As one whole line (surrounding spaces aside).
    Line,
    /// As its first line.
    FirstLine,
}

impl Fits {
    fn holds(self, content: &str, text: &str) -> bool {
        match self {
            Fits::Contains => content.contains(text),
            Fits::Line => content.lines().any(|l| l.trim() == text),
            Fits::FirstLine => content.lines().next().is_some_and(|l| l.trim() == text),
        }
    }
}

/// The first of [`contents_asked`] not so in `ws`: (the file, the text, the files of that
/// name there are). A file of that name is the path itself or one ending in `/NAME`.
pub fn content_missing(task: &str, ws: &Workspace) -> Option<(String, String, Vec<String>)> {
    let asked = contents_asked(task);
    if asked.is_empty() {
        return None;
    }
    let all = ws.files("").unwrap_or_default();
    asked.into_iter().find_map(|(file, text, fits)| {
        let file = placed(task, &file);
        let named: Vec<String> = all
            .iter()
            .filter(|p| **p == file || !file.contains('/') && p.ends_with(&format!("/{file}")))
            .cloned()
            .collect();
        let held = named.iter().any(|p| {
            ws.read(p)
                .ok()
                .flatten()
                .is_some_and(|b| fits.holds(&String::from_utf8_lossy(&b), &text))
        });
        (!held).then_some((file, text, named))
    })
}

/// `path` is what `task` names as a file (a word of it, with an extension: `text_utils.py`),
/// so a MKDIR of it is a mistake: the 1.5B, asked to rename strutil.py to text_utils.py, ran
/// `MKDIR text_utils.py` and could then move nothing onto it.
pub fn names_as_file(task: &str, path: &str) -> bool {
    let path = path.trim_end_matches('/');
    let path = path.strip_prefix("./").unwrap_or(path);
    file_name_like(path)
        && task_words(task)
            .iter()
            .any(|w| w.strip_prefix("./").unwrap_or(w) == path)
}

/// Words of a task that ask for files to go, to move or to be tidied away without naming
/// which.
const GOING_WORDS: &[&str] = &[
    "delete",
    "remove",
    "rm",
    "move",
    "rename",
    "clean",
    "unused",
    "obsolete",
    "dead",
    "drop",
    "prune",
    "replace",
    "merge",
    "split",
    "restructure",
    "reorganize",
    "reorganise",
    "stale",
    "convert",
    "migrate",
];

/// Why a DELETE of `path` is not what `task` asks, if it is not: the task names the files to
/// delete and this is not one of them (the 0.5B, asked to delete old_notes.txt, deleted
/// notes.txt as well), or the task asks for nothing to go (whether it names the file or not:
/// the 1.5B, told notice.txt should be shown whole, deleted notice.txt). A file the task
/// names (its path or its name) may go when the task asks for anything to go.
pub fn delete_unasked(task: &str, path: &str) -> Option<String> {
    let path = path.trim_end_matches('/');
    let path = path.strip_prefix("./").unwrap_or(path);
    let name = path.rsplit('/').next().unwrap_or(path);
    let words: Vec<&str> = task_words(task)
        .into_iter()
        .map(|w| w.trim_matches('*'))
        .map(|w| w.strip_prefix("./").unwrap_or(w))
        .collect();
    // `drops`, `removes`: what a program does (a symptom), not what the task asks.
    let going = words.iter().enumerate().any(|(k, w)| {
        let w = w.to_lowercase();
        let negated = k > 0 && NEGATIONS.contains(&words[k - 1].to_lowercase().as_str());
        let does = |g: &str| w == format!("{g}s") || w == format!("{g}es");
        !negated && GOING_WORDS.iter().any(|g| w.starts_with(g) && !does(g))
    });
    if words.iter().any(|w| *w == path || *w == name) {
        return (!going).then(|| {
            format!("the task names {path} but asks for no file to go; it reads or changes it")
        });
    }
    // The files named after a delete word, whether they are still there or not.
    let mut named: Vec<&str> = Vec::new();
    for (k, w) in words.iter().enumerate() {
        let negated = k > 0 && NEGATIONS.contains(&words[k - 1].to_lowercase().as_str());
        if negated || !DELETE_WORDS.contains(&w.to_lowercase().as_str()) {
            continue;
        }
        for next in words.iter().skip(k + 1).take(4) {
            if file_name_like(next) {
                named.push(next);
                break;
            }
            if NOT_THE_FILE.contains(&next.to_lowercase().as_str()) {
                break;
            }
        }
    }
    if !named.is_empty() {
        return Some(format!(
            "the task says to delete {}, and {path} is not a file it names",
            named.join(", ")
        ));
    }
    (!going).then(|| format!("the task asks for no file to go, and it does not name {path}"))
}

/// Interpreters by a script's extension, for [`run_plainly`].
const BY_EXTENSION: &[(&str, &str)] = &[
    ("py", "python3"),
    ("sh", "sh"),
    ("bash", "bash"),
    ("js", "node"),
    ("rb", "ruby"),
    ("pl", "perl"),
];

/// The interpreter that runs `file`, by its extension ([`BY_EXTENSION`]).
pub(crate) fn interpreter(file: &str) -> Option<&'static str> {
    let ext = file.rsplit_once('.')?.1;
    BY_EXTENSION
        .iter()
        .find(|(e, _)| *e == ext)
        .map(|(_, i)| *i)
}

/// For a task that adds a long option (`Add a --shout flag to greet.py …`) to a script it
/// names and no command of the task runs, the script run the plain ways a user would run it
/// before the option existed: alone, with one word (`x`), with another file the task names.
/// The ones that succeed on the repository as it is are kept ([`crate::found::keep_useful`])
/// and must print the same after (`default_changed`): the 0.5B made greet.py shout always.
pub fn run_plainly(
    task: &str,
    ws: &Workspace,
    probes: &[crate::probe::Probe],
) -> Vec<crate::probe::Probe> {
    let options: Vec<String> = names_to_add(task)
        .into_iter()
        .filter(|n| n.starts_with("--"))
        .collect();
    if options.is_empty() {
        return Vec::new();
    }
    let named: Vec<&str> = crate::probe::word_spans(task)
        .into_iter()
        .map(|(_, w)| {
            w.trim_matches(|c: char| matches!(c, '`' | '"' | '\'' | '(' | ')'))
                .trim_end_matches([',', '.', ';', ':', '!', '?'])
        })
        .filter(|w| is_repo_file(ws, w))
        .collect();
    let mut out: Vec<crate::probe::Probe> = Vec::new();
    for script in &named {
        let Some(interp) = interpreter(script) else {
            continue;
        };
        let ran = probes
            .iter()
            .chain(&out)
            .any(|p| p.argv.iter().any(|a| a == script));
        let text = ws
            .read(script)
            .ok()
            .flatten()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        if ran || options.iter().any(|o| text.contains(o.as_str())) {
            continue;
        }
        let mut candidates: Vec<Vec<&str>> = vec![vec![], vec!["x"]];
        candidates.extend(
            named
                .iter()
                .filter(|f| *f != script && interpreter(f).is_none())
                .take(1)
                .map(|f| vec![*f]),
        );
        for args in candidates {
            let argv: Vec<String> = [interp, script]
                .iter()
                .chain(&args)
                .map(|a| (*a).to_owned())
                .collect();
            out.extend(crate::probe::Probe::to_keep(argv));
        }
    }
    out
}

/// The verb line `task` calls for while what it asks is not done: `DELETE f` for a file it
/// says to delete that is still there, `MOVE a -> b` for a rename not done; as a hint.
pub fn verb_asked(task: &str, ws: &Workspace) -> Option<String> {
    if let Some(f) = files_to_delete(task, ws).first() {
        return Some(format!(
            "the task asks to delete {f}: reply DELETE {f} on a line of its own (no file block \
             for it)"
        ));
    }
    rename_left(task, ws).map(|(from, to)| {
        format!(
            "the task asks to rename {from} to {to}: reply MOVE {from} -> {to} on a line of its \
             own"
        )
    })
}

/// A word that names a file: a relative path of plain characters whose last part has a name
/// and an extension starting with a letter (`config.json`, `docs/a.md`), never a pattern.
pub(crate) fn file_name_like(word: &str) -> bool {
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
    use super::{
        content_missing, contents_asked, definition_left, definitions_to_delete, delete_unasked,
        files_to_create, files_to_delete, getopts_without, names_missing, names_to_add, placed,
        rename_left, renames,
    };
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
    fn a_delete_is_asked_for_when_the_task_names_the_file_or_asks_for_unnamed_files_to_go() {
        let named = "Delete the obsolete file old_notes.txt.";
        assert_eq!(delete_unasked(named, "old_notes.txt"), None);
        assert_eq!(delete_unasked(named, "./old_notes.txt"), None);
        let why = delete_unasked(named, "notes.txt").unwrap();
        assert!(why.contains("delete old_notes.txt"), "{why}");
        // A file the task names in other words may go (a move done as write, then delete).
        assert_eq!(
            delete_unasked("Move util.py into lib/ as lib/util.py.", "util.py"),
            None
        );
        // Unnamed files the task asks to go: the model has to find them.
        assert_eq!(
            delete_unasked("Remove the unused modules.", "legacy.py"),
            None
        );
        // A fix that asks for nothing to go.
        assert!(delete_unasked("Fix the typo in README.md.", "notes.txt").is_some());
        assert!(delete_unasked("Fix the typo in README.md.", "docs/README.md").is_some());
        let notice = "`python3 notice.py` drops text. All of notice.txt should be shown.";
        let why = delete_unasked(notice, "notice.txt").unwrap();
        assert!(
            why.contains("names notice.txt but asks for no file to go"),
            "{why}"
        );
        // `do not delete x.txt` names no file to delete, and asks for nothing to go.
        assert!(delete_unasked("Do not delete x.txt; fix app.py.", "y.txt").is_some());
    }

    #[test]
    fn a_script_the_task_adds_a_long_option_to_is_run_plainly() {
        let (_dir, ws) = repo(&[
            ("greet.py", "import sys\nprint('Hello, ' + sys.argv[-1])\n"),
            (
                "cli.py",
                "import sys\nif '--count' in sys.argv:\n    pass\n",
            ),
        ]);
        let plain = |task: &str| -> Vec<String> {
            super::run_plainly(task, &ws, &[])
                .into_iter()
                .inspect(|p| assert!(p.keep))
                .map(|p| p.command)
                .collect()
        };
        // Those that fail before are dropped at the session's start.
        assert_eq!(
            plain("Add a --shout flag to greet.py that prints the greeting in upper case."),
            ["python3 greet.py", "python3 greet.py x"]
        );
        // An option the script has already, or no option added: nothing to keep.
        assert!(plain("Add a --count option to cli.py.").is_empty());
        assert!(plain("Make greet.py shout.").is_empty());
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

    #[test]
    fn the_names_a_task_adds_are_read_beside_their_kind() {
        let n = |task: &str| names_to_add(task);
        assert_eq!(
            n("Add a function square(x) to mathx.py that returns x times x."),
            ["square"]
        );
        assert_eq!(n("Add a --shout flag to greet.py."), ["--shout"]);
        assert_eq!(n("add a new option --dry-run"), ["--dry-run"]);
        assert_eq!(
            n("Add a parameter currency to format_price in money.py, defaulting to \"USD\"."),
            ["currency"]
        );
        assert_eq!(n("Define a constant called MAX_RETRIES."), ["MAX_RETRIES"]);
        assert_eq!(n("Add a -n option to clean.sh for a dry run"), ["-n"]);
        assert_eq!(n("add an option -q"), ["-q"]);
        // The option's argument named between it and the kind.
        assert_eq!(
            n("Add a --since HH:MM option to logview.py that shows only the entries."),
            ["--since"]
        );
        assert_eq!(n("Add a -k N flag to tail.sh."), ["-k"]);
        assert!(n("Add --since to the docs, then the option list.").is_empty());
        // No name, a negation, no kind: nothing to look for.
        assert!(n("Add a function that doubles its argument.").is_empty());
        assert!(n("Do not add a function square(x).").is_empty());
        assert!(n("Add square to the list.").is_empty());
    }

    #[test]
    fn a_name_counts_only_as_a_whole_word_of_a_changed_file() {
        let (_dir, ws) = repo(&[
            ("mathx.py", "def double(x):\n    return x * x  # square\n"),
            ("greet.py", "p.add_argument(\"--shout-loud\")\n"),
            ("b.py", "def square(x):\n    return x * x\n"),
            ("README.md", "def square(x):\n    return x * x\n"),
        ]);
        let task = "Add a function square(x) to mathx.py.";
        // Mentioned is not defined, and README.md is prose.
        let changed = ["mathx.py".to_owned(), "README.md".to_owned()];
        assert_eq!(names_missing(task, &ws, &changed), ["square"]);
        assert!(names_missing(task, &ws, &["b.py".to_owned()]).is_empty());
        // A parameter is a word of the code.
        let param = "Add a parameter double to the docs.";
        assert!(names_missing(param, &ws, &["mathx.py".to_owned()]).is_empty());
        // `--shout-loud` is not `--shout`.
        let flag = "Add a --shout flag to greet.py.";
        assert_eq!(
            names_missing(flag, &ws, &["greet.py".to_owned()]),
            ["--shout"]
        );
    }

    /// The 1.5B on clean-dry-run-sh: asked for a -n option, it changed what clean.sh prints
    /// and never parsed -n; clean.sh's `[ -n "$f" ]` is a test, not the option.
    #[test]
    fn a_one_letter_option_counts_only_where_it_is_parsed() {
        let (_dir, ws) = repo(&[
            ("test_only.sh", "if [ -n \"$f\" ]; then echo x; fi\n"),
            (
                "getopts.sh",
                "while getopts \"vn\" opt; do\n  case $opt in\n    n) DRY=1 ;;\n  esac\ndone\n",
            ),
            ("case.sh", "case $1 in\n  -n|--dry-run) DRY=1 ;;\nesac\n"),
            ("argparse.py", "p.add_argument('-n', action='store_true')\n"),
            ("compare.sh", "if [ \"$1\" = -n ]; then DRY=1; shift; fi\n"),
        ]);
        let task = "Add a -n option to the script for a dry run.";
        let missing = |f: &str| names_missing(task, &ws, &[f.to_owned()]);
        assert_eq!(missing("test_only.sh"), ["-n"]);
        assert!(missing("getopts.sh").is_empty());
        assert!(missing("case.sh").is_empty());
        assert!(missing("argparse.py").is_empty());
        assert!(missing("compare.sh").is_empty());
    }

    /// The 1.5B's `getopts v n opt`: the line named, and given with the letter among the
    /// others; a quoted option string keeps its quotes; a line that has the letter, none.
    #[test]
    fn a_getopts_line_without_the_letter_is_given_with_it() {
        let (_dir, ws) = repo(&[
            (
                "split.sh",
                "DRY=0\nwhile getopts v n opt; do\n  case $opt in n) DRY=1 ;; esac\ndone\n",
            ),
            ("quoted.sh", "  while getopts \"v:\" opt; do :; done\n"),
            ("has.sh", "while getopts vn opt; do :; done\n"),
            ("none.sh", "echo no options\n"),
        ]);
        let got = |f: &str| getopts_without(&ws, &[f.to_owned()], "-n");
        assert_eq!(
            got("split.sh"),
            Some((
                "split.sh".to_owned(),
                2,
                "while getopts v n opt; do".to_owned(),
                "while getopts vn opt; do".to_owned()
            ))
        );
        assert_eq!(
            got("quoted.sh").unwrap().3,
            "while getopts \"v:n\" opt; do :; done"
        );
        assert!(got("has.sh").is_none());
        assert!(got("none.sh").is_none());
        assert!(getopts_without(&ws, &["split.sh".to_owned()], "--dry-run").is_none());
    }

    #[test]
    fn the_content_a_task_gives_a_file_must_be_in_it() {
        assert_eq!(
            contents_asked("Create a file hello.txt containing the single line: hello, world"),
            [(
                "hello.txt".to_owned(),
                "hello, world".to_owned(),
                super::Fits::Line
            )]
        );
        assert_eq!(
            contents_asked(
                "Create a directory docs containing a file index.md whose first line is: # Docs."
            ),
            [(
                "index.md".to_owned(),
                "# Docs".to_owned(),
                super::Fits::FirstLine
            )]
        );
        // A colon that introduces no content, or no file to create: nothing asked.
        assert!(contents_asked("Write a function in utils.py: it should sort.").is_empty());
        assert!(contents_asked("The first line of a.txt is: x").is_empty());
        let (_dir, ws) = repo(&[
            ("hello.txt", "\nhello.txt\n"),
            ("docs/index.md", "# Docs\n"),
        ]);
        let hello = "Create a file hello.txt containing the single line: hello, world";
        let (file, text, named) = content_missing(hello, &ws).unwrap();
        assert_eq!(
            (file.as_str(), text.as_str(), named),
            ("hello.txt", "hello, world", vec!["hello.txt".to_owned()])
        );
        assert!(
            content_missing(
                "Create docs with a file index.md whose first line is: # Docs",
                &ws
            )
            .is_none()
        );
        let (_, _, none) = content_missing("Add a file a.md containing the line: x", &ws).unwrap();
        assert!(none.is_empty());
        // A line asked for is a whole line: `print("hello, world")` holds the words, not the
        // line; text asked for without `line` may sit inside one.
        let (_d, ws) = repo(&[("hello.txt", "print(\"hello, world\")\n")]);
        assert!(content_missing(hello, &ws).is_some());
        let words = "Create hello.txt with the text: hello, world";
        assert!(content_missing(words, &ws).is_none());
    }

    #[test]
    fn a_definition_is_to_delete_by_a_name_that_could_be_nothing_else() {
        let d = |task: &str| definitions_to_delete(task);
        assert_eq!(
            d(
                "legacy_parse in confparse.py is dead code: nothing calls it any more. Delete it \
               without changing what the program does."
            ),
            ["legacy_parse"]
        );
        assert_eq!(d("Remove the old_format function."), ["old_format"]);
        // Every candidate is kept; only one the repository defines can hold a DONE back.
        assert_eq!(
            d("Remove the shell function old_helper."),
            ["shell", "old_helper"]
        );
        assert_eq!(d("Delete `helper` from util.py."), ["helper"]);
        assert_eq!(d("Remove the function main, nothing uses it."), ["main"]);
        // Not a definition's name, inside something else, or kept.
        assert!(d("Remove the main guard from app.py.").is_empty());
        assert!(d("Remove the debug print in load_config.").is_empty());
        assert!(d("Do not delete legacy_parse.").is_empty());
        assert!(d("Delete it: legacy_parse and new_parse are unused.").is_empty());
        let (_dir, ws) = repo(&[
            (
                "confparse.py",
                "def parse(t):\n    return t\n\n\ndef legacy_parse(t):\n    return t\n",
            ),
            ("lib.sh", "old_helper() {\n  echo x\n}\n"),
        ]);
        assert_eq!(
            definition_left("Delete legacy_parse.", &ws),
            Some(("legacy_parse".to_owned(), "confparse.py".to_owned()))
        );
        assert_eq!(
            definition_left("Remove the shell function old_helper.", &ws),
            Some(("old_helper".to_owned(), "lib.sh".to_owned()))
        );
        assert!(definition_left("Delete new_parse.", &ws).is_none());
    }

    #[test]
    fn a_file_the_task_puts_in_a_directory_is_looked_for_there() {
        let task = "Create a directory docs containing a file index.md whose first line is: # Docs";
        assert_eq!(placed(task, "index.md"), "docs/index.md");
        assert_eq!(
            placed(
                "Add index.md in the docs folder. Keep README.md.",
                "index.md"
            ),
            "docs/index.md"
        );
        // Another sentence's directory, or none, places nothing.
        assert_eq!(
            placed("Make a new directory. Then create index.md.", "index.md"),
            "index.md"
        );
        assert_eq!(placed(task, "docs/index.md"), "docs/index.md");
        let (dir, ws) = repo(&[("README.md", "# project\n")]);
        let create = "Create index.md in the docs folder.";
        assert_eq!(files_to_create(create, &ws), ["docs/index.md"]);
        // The text in a top-level index.md is not the text in docs/index.md.
        std::fs::write(dir.path().join("index.md"), "# Docs\n").unwrap();
        assert_eq!(files_to_create(create, &ws), ["docs/index.md"]);
        let (file, _, named) = content_missing(task, &ws).expect("not where the task puts it");
        assert_eq!((file.as_str(), named.len()), ("docs/index.md", 0));
        std::fs::create_dir(dir.path().join("docs")).unwrap();
        std::fs::write(dir.path().join("docs/index.md"), "# Docs\n").unwrap();
        assert!(files_to_create(create, &ws).is_empty());
        assert!(content_missing(task, &ws).is_none());
    }

    #[test]
    fn a_directory_named_as_a_file_of_the_task_is_a_mistake() {
        let task = "Rename the module strutil.py to text_utils.py and update its imports.";
        assert!(super::names_as_file(task, "text_utils.py"));
        assert!(super::names_as_file(task, "./text_utils.py/"));
        assert!(!super::names_as_file(task, "text_utils"));
        assert!(!super::names_as_file(task, "docs"));
        assert!(!super::names_as_file(
            "Create a directory docs.v2",
            "docs.v3"
        ));
    }
}
