//! Whole-file blocks: a path on a line of its own, then a fenced code block holding the file's
//! complete new content. Weak models edit best this way (aider's edit leaderboard: the
//! "whole" format beats diffs for small models), but a path followed by code is also how any
//! model *shows* a file, so this dialect is never part of [`TextFormat`](super::TextFormat)'s
//! detection: only a caller that asked the model for whole files (the agent's `whole`
//! protocol) splits a finished reply with [`split`].
//!
//! Rules:
//! * The header is the last non-blank line before the opening fence, with at most one blank
//!   line between them, and must be a lone path (decorated as aider allows: `**a.py**`,
//!   `` `a.py` ``, `a.py:`, `### a.py`, or after `File:` or `FILE `). A fence without such a header is
//!   text.
//! * Inside the block, a fence with an info string (```` ```sh ````) opens a nested fence
//!   (a README's examples) and a bare fence closes the innermost one; the bare fence at depth
//!   zero closes the block. A bare fence that *opens* an example inside a Markdown file is
//!   read as the end of the file (documented, and why the agent shows the diff it wrote).
//! * A block still open when the reply ended is a [`FailureKind::TruncatedFile`] when the reply
//!   was cut (the token limit): a truncated file is never written. When the model itself
//!   stopped, the end of the reply closes it — unless nothing followed the opening fence
//!   ([`FailureKind::EmptyUnclosedFile`]): a reply that stops at `a.py` and a fence says
//!   nothing of emptying a.py (an explicitly empty file is an opened and closed fence).
//! * A block whose body opens with a SEARCH marker (blank lines aside) is an edit block
//!   under its path, aider's diff format, not the file's content: it stays text, for the
//!   text protocol's decoder to read as an edit with its repairs.
//! * Lines that stand for omitted code (`# ... rest of the file unchanged`) are reported in
//!   [`WholeFile::elision`]: whether the original file holds the same line is the caller's
//!   call, since the codec never sees files.

use crate::repair::FailureKind;

use super::markers::{Marker, classify, fence_info, is_closing_fence, strip_cr};
use super::verbs::{lone_path, path_like, strip_decoration};

/// One file's complete new content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WholeFile {
    pub path: String,
    /// Every line of the block, each ending in a newline.
    pub content: String,
    /// The first line that looks like a placeholder for omitted code, trimmed.
    pub elision: Option<String>,
}

/// A reply, split: the text between blocks (to decode as the text protocol), the blocks, and
/// blocks that could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece<'a> {
    Text(&'a str),
    File(WholeFile),
    Failure { kind: FailureKind, raw: String },
}

/// Splits a finished reply into text and whole-file blocks, in order. `cut` says the reply
/// ended because of its token limit, not because the model stopped.
pub fn split(reply: &str, cut: bool) -> Vec<Piece<'_>> {
    split_known(reply, cut, &|_| false)
}

/// [`split`], where a header may also be a bare word that `known` says is a file of the
/// repository or a dotfile name (`.gitignore`, `Makefile` when it exists): names a lone line
/// of prose could not otherwise be told from.
pub fn split_known<'r>(reply: &'r str, cut: bool, known: &dyn Fn(&str) -> bool) -> Vec<Piece<'r>> {
    let lines = line_spans(reply);
    let mut pieces = Vec::new();
    // Start of the text not yet handed out.
    let mut text_from = 0;
    let mut i = 0;
    while i < lines.len() {
        let (start, end) = lines[i];
        let line = strip_cr(reply[start..end].trim_end_matches('\n').as_bytes());
        if fence_info(line).is_none() {
            i += 1;
            continue;
        }
        let ticks = line.iter().take_while(|&&c| c == b'`').count();
        let (body_end, close) = block_end(reply, &lines, i + 1, ticks);
        let Some((header_start, path)) = header_before(reply, &lines, i, known) else {
            // A code block in prose: skipped whole, so its closing fence never passes for
            // the opening of a block after a path-like last line.
            i = close.map_or(lines.len(), |c| c + 1);
            continue;
        };
        let body_from = end;
        if opens_with_search(&reply[body_from..body_end]) {
            // An edit block under the path (aider's diff format), not the file's content:
            // it stays text, where the text protocol's decoder reads it as an edit.
            i = close.map_or(lines.len(), |c| c + 1);
            continue;
        }
        if header_start > text_from {
            pieces.push(Piece::Text(&reply[text_from..header_start]));
        }
        match close {
            Some(close_line) => {
                let content = normalise(&reply[body_from..body_end]);
                pieces.push(Piece::File(WholeFile {
                    path,
                    elision: elision(&content),
                    content,
                }));
                text_from = lines[close_line].1;
                i = close_line + 1;
            }
            None if cut => {
                pieces.push(Piece::Failure {
                    kind: FailureKind::TruncatedFile,
                    raw: reply[header_start..].to_owned(),
                });
                return pieces;
            }
            None if reply[body_from..].trim().is_empty() => {
                pieces.push(Piece::Failure {
                    kind: FailureKind::EmptyUnclosedFile,
                    raw: reply[header_start..].to_owned(),
                });
                return pieces;
            }
            None => {
                let content = normalise(&reply[body_from..]);
                pieces.push(Piece::File(WholeFile {
                    path,
                    elision: elision(&content),
                    content,
                }));
                return pieces;
            }
        }
    }
    if text_from < reply.len() {
        pieces.push(Piece::Text(&reply[text_from..]));
    }
    pieces
}

/// Whether a block's body opens (blank lines aside) with a SEARCH marker, the tolerated
/// spellings included (`<<<<<<< SEARCH`, `<<<<< SEARCH`): no file begins so, and writing the
/// block as the file would put the markers in it.
fn opens_with_search(body: &str) -> bool {
    body.lines()
        .map(|l| strip_cr(l.as_bytes()))
        .find(|l| !l.iter().all(u8::is_ascii_whitespace))
        .and_then(classify)
        .is_some_and(|(m, _)| matches!(m, Marker::Search))
}

/// `[start, end)` of each line, its newline included.
fn line_spans(s: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    for (k, c) in s.char_indices() {
        if c == '\n' {
            out.push((start, k + 1));
            start = k + 1;
        }
    }
    if start < s.len() {
        out.push((start, s.len()));
    }
    out
}

/// The header of the fence on line `fence`: where it starts and the path it names.
fn header_before(
    reply: &str,
    lines: &[(usize, usize)],
    fence: usize,
    known: &dyn Fn(&str) -> bool,
) -> Option<(usize, String)> {
    let mut k = fence.checked_sub(1)?;
    let blank = |k: usize| reply[lines[k].0..lines[k].1].trim().is_empty();
    if blank(k) {
        k = k.checked_sub(1)?;
        if blank(k) {
            return None;
        }
    }
    let (start, end) = lines[k];
    let text = reply[start..end].trim_end_matches(['\n', '\r']);
    let text = text.trim_start();
    let text = [
        "File:",
        "file:",
        "FILE:",
        "Filename:",
        "filename:",
        "Path:",
        "path:",
        // A verb of the model's own making, in the protocol's capitals (`FILE a.py`).
        "FILE ",
    ]
    .iter()
    .find_map(|p| text.strip_prefix(p))
    .map_or(text, str::trim_start);
    let path = lone_path(text).or_else(|| {
        let p = strip_decoration(text);
        let dotfile = p.len() > 1 && p.starts_with('.') && !p.ends_with('.');
        (path_like(p) && (dotfile || known(p))).then_some(p)
    })?;
    Some((start, path.to_owned()))
}

/// The end of a block's body (the start of its closing fence line) and the closing line's
/// index, or `None` when the reply ends first.
fn block_end(
    reply: &str,
    lines: &[(usize, usize)],
    from: usize,
    ticks: usize,
) -> (usize, Option<usize>) {
    let mut depth = 0usize;
    for (k, &(start, end)) in lines.iter().enumerate().skip(from) {
        let line = strip_cr(reply[start..end].trim_end_matches('\n').as_bytes());
        if is_closing_fence(line) {
            let n = line.iter().take_while(|&&c| c == b'`').count();
            if depth == 0 && n >= ticks {
                return (start, Some(k));
            }
            depth = depth.saturating_sub(1);
        } else if fence_info(line).is_some_and(|i| !i.is_empty()) {
            depth += 1;
        }
    }
    (reply.len(), None)
}

/// CRLF becomes LF, and a last line gets its newline.
fn normalise(body: &str) -> String {
    let mut s = body.replace("\r\n", "\n");
    if !s.is_empty() && !s.ends_with('\n') {
        s.push('\n');
    }
    s
}

/// Phrases that, in a comment or alone on a line, stand for code left out.
const ELISIONS: &[&str] = &[
    "rest of",
    "existing code",
    "remains the same",
    "remain the same",
    "unchanged",
    "same as before",
    "as before",
    "previous code",
    "other code",
    "code here",
    "omitted",
];

/// The first line that reads as a placeholder for omitted code: `...` alone, or a comment
/// holding `...` or one of [`ELISIONS`].
fn elision(content: &str) -> Option<String> {
    content.lines().map(str::trim).find_map(|t| {
        let comment = ["#", "//", "/*", "<!--", "--", ";"]
            .iter()
            .find_map(|c| t.strip_prefix(c));
        let placeholder = match comment {
            Some(rest) => {
                let rest = rest.to_ascii_lowercase();
                rest.contains("...")
                    || rest.contains('…')
                    || ELISIONS.iter().any(|e| rest.contains(e))
            }
            None => t == "..." || t == "…",
        };
        placeholder.then(|| t.to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(pieces: &[Piece<'_>]) -> Vec<(String, String)> {
        pieces
            .iter()
            .filter_map(|p| match p {
                Piece::File(f) => Some((f.path.clone(), f.content.clone())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_path_line_and_a_fence_are_one_file_and_the_rest_is_text() {
        let reply = "Here is the fix.\n\nstats.py\n```python\ndef mean(xs):\n    return sum(xs) / len(xs)\n```\nDONE fixed\n";
        let pieces = split(reply, false);
        assert_eq!(
            pieces,
            vec![
                Piece::Text("Here is the fix.\n\n"),
                Piece::File(WholeFile {
                    path: "stats.py".into(),
                    content: "def mean(xs):\n    return sum(xs) / len(xs)\n".into(),
                    elision: None,
                }),
                Piece::Text("DONE fixed\n"),
            ]
        );
    }

    #[test]
    fn decorated_headers_and_one_blank_line_are_accepted() {
        for header in [
            "**a.py**",
            "`a.py`",
            "a.py:",
            "### a.py",
            "File: a.py",
            "FILE a.py",
        ] {
            for gap in ["", "\n"] {
                let reply = format!("{header}\n{gap}```\nx = 1\n```\n");
                assert_eq!(
                    files(&split(&reply, false)),
                    vec![("a.py".into(), "x = 1\n".into())],
                    "{header:?}"
                );
            }
        }
    }

    #[test]
    fn a_block_that_opens_with_a_search_marker_is_an_edit_left_as_text() {
        let edit =
            "a.py\n```python\n\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n```\n";
        for (reply, cut) in [
            (format!("Fix:\n{edit}DONE\n"), false),
            (format!("{edit}b.py\n```\ny = 1\n```\n"), false),
            // Unclosed and cut: the text decoder names that failure, not this split.
            ("a.py\n```\n<<<<< SEARCH\nx = 1\n".to_owned(), true),
        ] {
            let pieces = split(&reply, cut);
            let text: String = pieces
                .iter()
                .filter_map(|p| match p {
                    Piece::Text(t) => Some(*t),
                    _ => None,
                })
                .collect();
            assert!(text.contains("SEARCH\nx = 1\n"), "{reply:?}: {pieces:?}");
            assert!(
                files(&pieces).iter().all(|(p, _)| p != "a.py"),
                "{reply:?}: {pieces:?}"
            );
        }
        // The file after the edit is still a file.
        let two = format!("{edit}b.py\n```\ny = 1\n```\n");
        let pieces = split(&two, false);
        assert_eq!(files(&pieces), vec![("b.py".into(), "y = 1\n".into())]);
        // A marker further down a file is content (a file may quote one); only the opening
        // line decides.
        let reply = "notes.md\n```\n# Merge markers\n<<<<<<< SEARCH\n```\n";
        assert_eq!(files(&split(reply, false)).len(), 1);
    }

    #[test]
    fn a_fence_without_a_path_header_stays_text_byte_for_byte() {
        for reply in [
            "Run it:\n```sh\npython3 a.py\n```\n",
            "```python\nx = 1\n```\n",
            "the file\n\n\n```\nx\n```\n",
        ] {
            assert_eq!(split(reply, false), vec![Piece::Text(reply)]);
        }
    }

    #[test]
    fn nested_fences_with_a_language_stay_inside_a_markdown_file() {
        let reply = "README.md\n```markdown\n# Tool\n\n```sh\ntool -v\n```\n\nDone.\n```\n";
        assert_eq!(
            files(&split(reply, false)),
            vec![(
                "README.md".into(),
                "# Tool\n\n```sh\ntool -v\n```\n\nDone.\n".into()
            )]
        );
    }

    #[test]
    fn a_block_cut_by_the_token_limit_is_a_failure_and_one_the_model_ended_is_a_file() {
        let reply = "a.py\n```\nx = 1\ny = ";
        assert!(matches!(
            split(reply, true).as_slice(),
            [Piece::Failure {
                kind: FailureKind::TruncatedFile,
                ..
            }]
        ));
        assert_eq!(
            files(&split(reply, false)),
            vec![("a.py".into(), "x = 1\ny = \n".into())]
        );
    }

    #[test]
    fn a_reply_that_stops_at_the_opening_fence_empties_nothing() {
        // The 1.5B replied `notes.txt` and a fence, and stopped: not a request to empty it.
        for reply in [
            "notes.txt\n```",
            "notes.txt\n```\n",
            "notes.txt\n```text\n  \n",
        ] {
            match split(reply, false).as_slice() {
                [Piece::Failure { kind, raw }] => {
                    assert_eq!(*kind, FailureKind::EmptyUnclosedFile);
                    assert_eq!(raw, reply);
                }
                other => panic!("{reply:?}: {other:?}"),
            }
        }
        // An opened and closed fence is an empty file, said outright.
        assert_eq!(
            files(&split("notes.txt\n```\n```\n", false)),
            vec![("notes.txt".into(), String::new())]
        );
        // After another file, the earlier one stands.
        let two = "a.py\n```\nx = 1\n```\nb.py\n```";
        let pieces = split(two, false);
        assert_eq!(files(&pieces), vec![("a.py".into(), "x = 1\n".into())]);
        assert!(matches!(
            pieces.last(),
            Some(Piece::Failure {
                kind: FailureKind::EmptyUnclosedFile,
                ..
            })
        ));
    }

    #[test]
    fn two_files_in_one_reply_and_crlf() {
        let reply = "a.py\r\n```\r\nx = 1\r\n```\r\nb/c.sh\n```bash\necho hi\n```";
        assert_eq!(
            files(&split(reply, false)),
            vec![
                ("a.py".into(), "x = 1\n".into()),
                ("b/c.sh".into(), "echo hi\n".into())
            ]
        );
    }

    #[test]
    fn placeholders_for_omitted_code_are_reported() {
        for (line, found) in [
            ("    # ... rest of the code unchanged", true),
            ("// existing code", true),
            ("...", true),
            ("<!-- unchanged -->", true),
            ("    # add the two numbers", false),
            ("x = [1, 2, 3]  # ...", false),
            ("print('...')", false),
        ] {
            let reply = format!("a.py\n```\ndef f():\n{line}\n```\n");
            let pieces = split(&reply, false);
            let Piece::File(f) = &pieces[0] else {
                panic!("{pieces:?}")
            };
            assert_eq!(f.elision.is_some(), found, "{line:?}");
        }
    }

    #[test]
    fn a_path_inside_a_prose_code_block_is_not_a_header() {
        let reply = "The file:\n```\nstats.py\n```\nthen more words\n```\nx\n```\n";
        assert_eq!(split(reply, false), vec![Piece::Text(reply)]);
    }

    #[test]
    fn dotfiles_and_known_extensionless_files_are_headers_and_other_words_are_not() {
        let reply = ".gitignore\n```\n*.log\n```\nMakefile\n```\nall:\n```\nOutput\n```\nx\n```\n";
        let known = |p: &str| p == "Makefile";
        assert_eq!(
            files(&split_known(reply, false, &known)),
            vec![
                (".gitignore".into(), "*.log\n".into()),
                ("Makefile".into(), "all:\n".into())
            ]
        );
        // Without the repository's word for it, Makefile is prose like Output.
        assert_eq!(files(&split(reply, false)).len(), 1);
    }

    #[test]
    fn an_empty_block_is_an_empty_file() {
        assert_eq!(
            files(&split("empty.txt\n```\n```\n", false)),
            vec![("empty.txt".into(), String::new())]
        );
    }
}
