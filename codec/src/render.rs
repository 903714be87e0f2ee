//! Canonical text-protocol rendering: the inverse of decoding.
//!
//! `render(a)` prints one action in bellows' text protocol, ending in a newline, in the one
//! spelling the decoder reads back without any repair: `decode(render(a)) == a`.
//!
//! How the syntax carries awkward values. A verb line's arguments are words split with POSIX
//! quoting (no shell), and the text decoder takes a *bare* word for an argument only when it
//! cannot be English (a sentence after a verb is prose, not an action). So:
//!
//! * **A path is written bare when it looks like one** (path characters only, not ending in a
//!   `.`, not an English function word or one of the protocol's placeholders such as `path`),
//!   and in single quotes otherwise: `READ calc.py`, `READ 'my notes.txt'`, `LIST 'src'`? no —
//!   `src` is a placeholder word, so it is quoted, while `LIST lib` is not. A `'` inside quotes
//!   is written `'\''`.
//! * **READ ranges** are `:start-end` after a bare path, with `1 <= start <= end`. A range with
//!   only one end, a zero start, a reversed range, or a range on a path that needs quotes has no
//!   text form: `READ` cannot express it, and such a proposal does not round-trip.
//! * **GLOB and GREP patterns** are one word each, quoted when they contain blanks, quotes or
//!   other characters that are not pattern-like; `GREP pattern -- path`.
//! * **RUN words** are bare when they are plain (`[A-Za-z0-9_@%+=:,./-]`, not English, not
//!   ending like a sentence) and single-quoted otherwise. No shell ever runs them.
//! * **MOVE** is `MOVE from -> to`, each side one word.
//! * **DONE** takes the rest of the line as written; a summary with leading or trailing blanks,
//!   or whose first word is `summary` (the help line small models echo), does not round-trip.
//! * **Block bodies** are whole lines. A body line that is itself a marker line
//!   (`>>>>>>> REPLACE`, `<<<<<<< SEARCH`, and their repairable spellings), a divider line in a
//!   SEARCH part, or a fence line, cannot be told apart from the structure; the protocol has no
//!   escape for it. `=======` lines inside a REPLACE part are content and do round-trip.
//! * **An edit block with an empty SEARCH part** (append, or create the file when missing) is
//!   written as itself under `EDIT`; decoding it always reports `empty_search_edit`, once per
//!   such block, so the decoded proposal is the one the decoder would have produced. Only
//!   `CREATE` decodes to `create`.
//! * **Nothing single-line may contain a newline**, quoted or not.
//! * **Client tools** have no verb: they are rendered as a Hermes-style
//!   `<tool_call>{"name": …, "arguments": …}</tool_call>` line, as the system prompt teaches.
//!
//! The round-trip property test (`codec/tests/roundtrip.rs`) generates only values outside
//! these exceptions, deliberately.

use std::fmt::Write as _;

use crate::action::{Action, Block};

/// The canonical text-protocol form of `action`, ending in `\n`.
pub fn render(action: &Action) -> String {
    let mut out = String::new();
    render_into(action, &mut out);
    out
}

/// Appends the canonical form of `action` to `out`.
pub fn render_into(action: &Action, out: &mut String) {
    match action {
        Action::Read { path, start, end } => {
            out.push_str("READ ");
            path_word(path, out);
            if let (Some(s), Some(e)) = (start, end) {
                let _ = write!(out, ":{s}-{e}");
            }
            out.push('\n');
        }
        Action::List { path } => {
            out.push_str("LIST ");
            path_word(path, out);
            out.push('\n');
        }
        Action::Glob { pattern } => {
            out.push_str("GLOB ");
            pattern_word(pattern, out);
            out.push('\n');
        }
        Action::Grep { pattern, path } => {
            out.push_str("GREP ");
            pattern_word(pattern, out);
            if let Some(path) = path {
                out.push_str(" -- ");
                path_word(path, out);
            }
            out.push('\n');
        }
        Action::Run { argv } => {
            out.push_str("RUN ");
            out.push_str(&quote_argv(argv));
            out.push('\n');
        }
        Action::Delete { path } => {
            out.push_str("DELETE ");
            path_word(path, out);
            out.push('\n');
        }
        Action::Mkdir { path } => {
            out.push_str("MKDIR ");
            path_word(path, out);
            out.push('\n');
        }
        Action::Move { from, to } => {
            out.push_str("MOVE ");
            path_word(from, out);
            out.push_str(" -> ");
            path_word(to, out);
            out.push('\n');
        }
        Action::Edit { path, blocks } => {
            out.push_str("EDIT ");
            path_word(path, out);
            out.push('\n');
            for b in blocks {
                block(out, b);
            }
        }
        Action::Create { path, content } => {
            out.push_str("CREATE ");
            path_word(path, out);
            out.push('\n');
            block(
                out,
                &Block {
                    search: String::new(),
                    replace: content.clone(),
                },
            );
        }
        Action::Done { summary } => {
            out.push_str("DONE");
            if !summary.is_empty() {
                out.push(' ');
                out.push_str(summary);
            }
            out.push('\n');
        }
        Action::Client { name, arguments } => {
            let call = serde_json::json!({ "name": name, "arguments": arguments });
            let _ = writeln!(out, "<tool_call>{call}</tool_call>");
        }
    }
}

fn block(out: &mut String, b: &Block) {
    out.push_str("<<<<<<< SEARCH\n");
    body(out, &b.search);
    out.push_str("=======\n");
    body(out, &b.replace);
    out.push_str(">>>>>>> REPLACE\n");
}

/// A body of whole lines; a non-canonical body without its final newline gets one, which is
/// what decoding it would do (with a `missing_final_newline` repair).
fn body(out: &mut String, s: &str) {
    out.push_str(s);
    if !s.is_empty() && !s.ends_with('\n') {
        out.push('\n');
    }
}

/// Words the text decoder takes for prose when written bare after a verb (English words, the
/// protocol's placeholders), plus the words of its own syntax; such words are quoted. The
/// decoder's lists are shared, so the two cannot drift apart.
const SYNTAX_WORDS: &[&str] = &["src", "dst", "to", "from"];

fn prose_word(w: &str) -> bool {
    crate::text::reads_as_prose(w) || SYNTAX_WORDS.iter().any(|p| p.eq_ignore_ascii_case(w))
}

fn is_path_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"._/-~+@".contains(&c) || c >= 0x80
}

/// A path the decoder takes bare.
fn bare_path(w: &str) -> bool {
    !w.is_empty()
        && w.bytes().all(is_path_byte)
        && !w.starts_with('-')
        && (w == "." || w == ".." || !w.ends_with('.'))
        && w.bytes()
            .any(|c| c.is_ascii_alphanumeric() || c == b'.' || c >= 0x80)
        && !prose_word(w)
}

/// A GLOB or GREP pattern the decoder takes bare.
fn bare_pattern(w: &str) -> bool {
    !w.is_empty()
        && w.bytes()
            .all(|c| is_path_byte(c) || b"*?[]{},".contains(&c))
        && !w.starts_with('-')
        && !w.ends_with(['.', ',', ':'])
        && !prose_word(w)
}

/// A RUN word written bare: plain characters, not English, not ending like a sentence, and not
/// starting with a dash when it is the program.
fn bare_run_word(w: &str, first: bool) -> bool {
    !w.is_empty()
        && w.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_@%+=:,./-".contains(&b))
        && !w.ends_with(['.', ':', ',', '!', '?'])
        && !(first && (w.starts_with('-') || w.bytes().any(|b| b"@%=:,".contains(&b))))
        && !prose_word(w)
}

fn path_word(w: &str, out: &mut String) {
    if bare_path(w) {
        out.push_str(w)
    } else {
        single_quote(w, out)
    }
}

fn pattern_word(w: &str, out: &mut String) {
    if bare_pattern(w) {
        out.push_str(w)
    } else {
        single_quote(w, out)
    }
}

/// `'…'`, with each `'` inside written `'\''`.
fn single_quote(w: &str, out: &mut String) {
    out.push('\'');
    for c in w.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
}

/// `argv` joined with POSIX quoting, as `RUN` writes it.
pub fn quote_argv(argv: &[String]) -> String {
    let mut out = String::new();
    for (i, w) in argv.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        if bare_run_word(w, i == 0) {
            out.push_str(w)
        } else {
            single_quote(w, &mut out)
        }
    }
    out
}
