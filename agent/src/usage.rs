//! A document's options against the program it documents, checked at DONE when the task asks
//! for the two to agree: `Update README.md to match the options resize.py actually accepts`.
//!
//! The options are read as text, never guessed: a long option is `--` and a letter and more
//! letters, digits or dashes (`--keep-aspect`), a short one is `-` and one letter standing
//! alone (`-w`). A program has an option when its source holds it; a document names one when
//! a line of it that runs no other program (`pip install --user …`) does. Like the rest of
//! [`crate::asks`], the check only refuses a DONE (fed back, never a stop) and never acts.

use crate::probe::{is_repo_file, word_spans};
use crate::targets::{PROSE, bare};
use crate::workspace::Workspace;

/// Words that make a task about a program's options.
const OPTION_WORDS: &[&str] = &[
    "option",
    "options",
    "flag",
    "flags",
    "argument",
    "arguments",
    "usage",
    "switch",
    "switches",
];

/// Words that ask the document to name every option the program has, not only to lose the
/// ones it no longer has.
const EVERY_WORDS: &[&str] = &[
    "match",
    "matches",
    "accept",
    "accepts",
    "all",
    "every",
    "each",
    "document",
    "documents",
];

/// Programs whose options a document may show beside the one it documents.
const OTHER_PROGRAMS: &[&str] = &[
    "pip", "pip3", "git", "npm", "npx", "yarn", "cargo", "docker", "apt", "apt-get", "brew",
    "curl", "wget", "make", "conda", "uv", "pipx",
];

/// Options any command-line program answers to, written or not.
const ALWAYS: &[&str] = &["--help", "-h"];

/// How a document and its program disagree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mismatch {
    /// The document names an option the program does not have, first on `line` (1-based),
    /// which reads `text` (trimmed).
    Unknown {
        doc: String,
        program: String,
        option: String,
        line: usize,
        text: String,
    },
    /// The program has an option the document does not name.
    Unnamed {
        doc: String,
        program: String,
        option: String,
    },
}

impl Mismatch {
    /// The refusal's sentence.
    pub fn summary(&self) -> String {
        match self {
            Mismatch::Unknown {
                doc,
                program,
                option,
                line,
                text,
            } => format!(
                "the task asks {doc} to match the options of {program}, and {doc} names \
                 {option}, which {program} does not have: line {line} reads `{text}`"
            ),
            Mismatch::Unnamed {
                doc,
                program,
                option,
            } => format!(
                "the task asks {doc} to match the options of {program}, and {program} has \
                 {option}, which {doc} does not name"
            ),
        }
    }

    /// The document to write.
    pub fn doc(&self) -> &str {
        match self {
            Mismatch::Unknown { doc, .. } | Mismatch::Unnamed { doc, .. } => doc,
        }
    }
}

/// A document: a file with a prose extension ([`PROSE`]), or a README without one.
fn is_prose(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    match name.rsplit_once('.') {
        Some((_, ext)) => PROSE.contains(&ext.to_ascii_lowercase().as_str()),
        None => name.eq_ignore_ascii_case("readme"),
    }
}

/// The options written in `text`, in order, each once: `--name` (a letter after the dashes)
/// and `-x` (one letter alone), each at the start of a word or after a quote, bracket or
/// backtick.
fn options_in(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let starts_word = i == 0
            || matches!(
                bytes[i - 1],
                b' ' | b'\t' | b'\n' | b'`' | b'"' | b'\'' | b'(' | b'[' | b'|' | b','
            );
        if bytes[i] != b'-' || !starts_word {
            i += 1;
            continue;
        }
        let long = bytes.get(i + 1) == Some(&b'-');
        let name_start = if long { i + 2 } else { i + 1 };
        let mut end = name_start;
        while end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'-') {
            end += 1;
        }
        let name = &text[name_start..end];
        let ends_word = bytes
            .get(end)
            .is_none_or(|b| !b.is_ascii_alphanumeric() && *b != b'_');
        let fits = ends_word
            && name.starts_with(|c: char| c.is_ascii_alphabetic())
            && !name.ends_with('-')
            && (long || name.len() == 1);
        if fits {
            let option = text[i..end].to_owned();
            if !out.contains(&option) {
                out.push(option);
            }
        }
        i = end.max(i + 1);
    }
    out
}

/// The options a document names for `program` (a repository path): on a line that writes
/// the program's file name, those after it (`python3 resize.py -w 800`, `Usage: resize.py
/// [--width W]`), and on a line that starts with an option, as an option list's entries do
/// (`- \`-w N\`: the new width`, `--scale P  scale by P percent`); a line that runs another
/// program ([`OTHER_PROGRAMS`]: `pip install --user`) names none.
fn named_options(doc: &str, program: &str) -> Vec<String> {
    let name = program.rsplit('/').next().unwrap_or(program);
    let mut out: Vec<String> = Vec::new();
    for line in doc.lines() {
        let other = line
            .split(|c: char| c.is_whitespace() || c == '`' || c == '$')
            .any(|w| OTHER_PROGRAMS.contains(&w));
        if other {
            continue;
        }
        let text = match line.find(name) {
            Some(i) => &line[i + name.len()..],
            None => {
                let t = line.trim_start();
                // A list's bullet or a table's bar, then blanks.
                let entry = match t.strip_prefix(['-', '*', '+', '|']) {
                    Some(r) if r.starts_with(char::is_whitespace) => r.trim_start(),
                    _ => t,
                }
                .trim_start_matches('`');
                if !entry.starts_with('-') {
                    continue;
                }
                line
            }
        };
        for o in options_in(text) {
            if !out.contains(&o) {
                out.push(o);
            }
        }
    }
    out
}

/// `task`'s words, lower case.
fn lower_words(task: &str) -> Vec<String> {
    task.split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .collect()
}

/// The document and the program a task about options names ([`OPTION_WORDS`]): the first
/// repository file of each kind it names.
fn doc_and_program(task: &str, ws: &Workspace) -> Option<(String, String)> {
    if !lower_words(task)
        .iter()
        .any(|w| OPTION_WORDS.contains(&w.as_str()))
    {
        return None;
    }
    let files: Vec<&str> = word_spans(task)
        .into_iter()
        .map(|(_, w)| bare(w))
        .filter(|w| is_repo_file(ws, w))
        .collect();
    let doc = *files.iter().find(|f| is_prose(f))?;
    let program = *files.iter().find(|f| !is_prose(f))?;
    Some((doc.to_owned(), program.to_owned()))
}

/// How the document and the program that `task` names disagree, when it asks for them to
/// agree: the task has a word of [`OPTION_WORDS`] and names a document and a program of the
/// repository (the first of each). Every option the document names must be in the program's
/// source; with a word of [`EVERY_WORDS`], every option the program's source gives an
/// argument parser (in quotes) must be named by the document too. Asked to bring README.md's
/// usage up to date with resize.py, the 0.5B rewrote README.md keeping options resize.py no
/// longer has, and said DONE. `None` when they agree or the task is not such a task.
pub fn mismatch(task: &str, ws: &Workspace) -> Option<Mismatch> {
    let words = lower_words(task);
    let (doc, program) = doc_and_program(task, ws)?;
    let (doc, program) = (doc.as_str(), program.as_str());
    let read = |f: &str| {
        ws.read(f)
            .ok()
            .flatten()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    };
    let (doc_text, source) = (read(doc)?, read(program)?);
    // The program's options: any written in its source (`"--width"` as a parser is given
    // it, a shell script's `-c)` and `= -c`).
    let has = options_in(&source);
    let named = named_options(&doc_text, program);
    if let Some(option) = named
        .iter()
        .find(|o| !ALWAYS.contains(&o.as_str()) && !has.contains(o))
    {
        let (line, text) = doc_text
            .lines()
            .enumerate()
            .find(|(_, l)| options_in(l).contains(option))
            .map(|(k, l)| (k + 1, l.trim().to_owned()))
            .unwrap_or_default();
        return Some(Mismatch::Unknown {
            doc: doc.to_owned(),
            program: program.to_owned(),
            option: option.clone(),
            line,
            text,
        });
    }
    if !words.iter().any(|w| EVERY_WORDS.contains(&w.as_str())) {
        return None;
    }
    let quoted =
        |o: &str| source.contains(&format!("\"{o}\"")) || source.contains(&format!("'{o}'"));
    let unnamed = has
        .iter()
        .filter(|o| o.starts_with("--") && !ALWAYS.contains(&o.as_str()) && quoted(o))
        .find(|o| !named.contains(o))?;
    Some(Mismatch::Unnamed {
        doc: doc.to_owned(),
        program: program.to_owned(),
        option: unnamed.clone(),
    })
}

/// What the program a document should match prints for `--help`, for the first message, where
/// the task asks a document to match a program's options ([`OPTION_WORDS`], a document and a
/// program of the repository named, as [`mismatch`] reads them) and the program is a Python
/// file that builds its options with `argparse`, `optparse` or `click`, which answer
/// `--help` with them all and stop. Run like the task's own commands, in a scratch copy
/// ([`crate::probe::run_all`]). The 1.5B, asked to bring README.md up to date with
/// resize.py, rewrote resize.py or kept `-w` in every attempt of session 27; the help text
/// holds every option as the program takes it. `None` where it does not apply or the run
/// does not exit 0 with output.
pub fn help_note(task: &str, ws: &Workspace) -> Option<String> {
    let (_, program) = doc_and_program(task, ws)?;
    let program = program.as_str();
    let source = String::from_utf8(ws.read(program).ok().flatten()?).ok()?;
    let parser = ["argparse", "optparse", "click"]
        .iter()
        .any(|m| source.contains(&format!("import {m}")));
    if !program.ends_with(".py") || !parser {
        return None;
    }
    let argv = vec![
        "python3".to_owned(),
        program.to_owned(),
        "--help".to_owned(),
    ];
    let probe = crate::probe::Probe {
        command: argv.join(" "),
        argv,
        ..Default::default()
    };
    let run = crate::probe::run_all(ws, std::slice::from_ref(&probe))
        .into_iter()
        .next()?;
    if run.code != Some(0) || run.timed_out || run.output.trim().is_empty() {
        return None;
    }
    Some(format!(
        "`{}` prints the options {program} accepts now:\n{}\n",
        run.command,
        run.shown()
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::testing::repo;

    const RESIZE: &str = "import argparse\n\nparser = argparse.ArgumentParser()\nparser.add_argument(\"image\")\nparser.add_argument(\"--width\", type=int, required=True)\nparser.add_argument(\"--height\", type=int)\nparser.add_argument(\"--keep-aspect\", action=\"store_true\")\n";
    const OLD: &str = "# resize\n\n    python3 resize.py -w 800 -h 600 photo.jpg\n    python3 resize.py --scale 50 photo.jpg\n\n- `-w N`: the new width\n- `--scale P`: scale by P percent\n";
    const TASK: &str = "The usage section of README.md is out of date: the options it shows no longer exist. Update README.md to match the options resize.py actually accepts.";

    #[test]
    fn options_are_read_as_written() {
        assert_eq!(
            options_in(
                "run `x --keep-aspect -w 3 --a-b=4` (-q) or --no-x, not a-b or -- or ---- or -12 or --x-"
            ),
            ["--keep-aspect", "-w", "--a-b", "-q", "--no-x"]
        );
        // Another program's options are not the documented one's, nor the interpreter's, nor
        // a dash in prose.
        assert_eq!(
            named_options(
                "    pip install --user x\n    python3 -B resize.py --width 3\n- `-h N`: the height\n--scale P  by P percent\nRun `python3 -m pytest -q` for the tests.\nA well-known -x in prose.\n",
                "resize.py"
            ),
            ["--width", "-h", "--scale"]
        );
    }

    #[test]
    fn a_document_must_name_the_programs_options_and_no_other() {
        let (_dir, ws) = repo(&[("README.md", OLD), ("resize.py", RESIZE)]);
        let m = mismatch(TASK, &ws).unwrap();
        assert_eq!(
            m,
            Mismatch::Unknown {
                doc: "README.md".into(),
                program: "resize.py".into(),
                option: "-w".into(),
                line: 3,
                text: "python3 resize.py -w 800 -h 600 photo.jpg".into(),
            }
        );
        assert!(m.summary().contains(
            "README.md names -w, which resize.py does not have: line 3 reads `python3 \
             resize.py -w 800 -h 600 photo.jpg`"
        ));
        // The old options gone, one real option left out: told which.
        ws.write_atomic(
            "README.md",
            b"# resize\n\n    python3 resize.py --width 800 --height 600 photo.jpg\n",
        )
        .unwrap();
        let m = mismatch(TASK, &ws).unwrap();
        assert!(
            m.summary()
                .contains("resize.py has --keep-aspect, which README.md does not name"),
            "{}",
            m.summary()
        );
        ws.write_atomic(
            "README.md",
            b"# resize\n\n    python3 resize.py --width 800 --keep-aspect photo.jpg\n\n- `--height N`\n- `-h`, `--help`: this text\n",
        )
        .unwrap();
        assert_eq!(mismatch(TASK, &ws), None);
        // Without a word that asks for every option, one left out is not told.
        ws.write_atomic(
            "README.md",
            b"# resize\n\n    python3 resize.py --width 800 x.jpg\n",
        )
        .unwrap();
        assert_eq!(
            mismatch(
                "Remove the options README.md shows that resize.py no longer has.",
                &ws
            ),
            None
        );
        // A task not about options, or naming no program: nothing.
        let (_dir, ws) = repo(&[("README.md", OLD), ("resize.py", RESIZE)]);
        assert_eq!(
            mismatch("Fix the typo in README.md; resize.py is fine.", &ws),
            None
        );
        assert_eq!(mismatch("Update the usage in README.md.", &ws), None);
    }
    #[test]
    fn the_help_of_an_argparse_program_is_shown_for_a_usage_task() {
        if !crate::testing::prereq::python3() {
            return;
        }
        let with_args = format!("{RESIZE}args = parser.parse_args()\nprint(args.width)\n");
        let (_dir, ws) = repo(&[("README.md", OLD), ("resize.py", &with_args)]);
        let n = help_note(TASK, &ws).unwrap();
        assert!(
            n.starts_with("`python3 resize.py --help` prints the options resize.py accepts now:\n"),
            "{n}"
        );
        assert!(n.contains("--keep-aspect") && n.contains("--width"), "{n}");
        // Nothing run, nothing said: a task not about options; a program that builds no
        // parser; one whose help run fails.
        assert_eq!(
            help_note("Fix the typo in README.md and resize.py.", &ws),
            None
        );
        let plain = "import sys\nprint(sys.argv)\n";
        let (_dir, ws) = repo(&[("README.md", OLD), ("resize.py", plain)]);
        assert_eq!(help_note(TASK, &ws), None);
        let broken = format!("import argparse\nraise SystemExit(3)\n{RESIZE}");
        let (_dir, ws) = repo(&[("README.md", OLD), ("resize.py", &broken)]);
        assert_eq!(help_note(TASK, &ws), None);
    }
}
