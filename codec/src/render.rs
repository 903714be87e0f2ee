//! Canonical text-protocol rendering: the inverse of decoding.
//!
//! `render(a)` prints one action in bellows' text protocol, ending in a newline, in the one
//! spelling the decoder reads back without any repair: `decode(render(a)) == a`.
//!
//! How the syntax carries awkward values (see also [`crate::registry::parse_verb_line`]):
//!
//! * **Paths, patterns and summaries are written bare, never quoted.** A verb line's argument
//!   is the rest of the line, so spaces inside a path need nothing (`READ my notes.txt`);
//!   only leading and trailing blanks are lost. `GREP` splits at the *last* ` -- ` and `MOVE`
//!   at its only ` -> `, so a GREP path may not contain ` -- ` (nor a pattern, when there is no
//!   path) and a MOVE side may not contain ` -> `.
//! * **READ ranges** are a final `:S-E`, `:S-` (to the end) or `:-E` (from the start); a path
//!   that itself ends in such a suffix, read whole, is ambiguous.
//! * **RUN words** use POSIX quoting: a word of only `[A-Za-z0-9_@%+=:,./-]` is written bare,
//!   anything else in single quotes (`'` itself as `'\''`). No shell ever runs it.
//! * **Block bodies** are whole lines. A body line that is itself a marker or divider line
//!   (`>>>>>>> REPLACE`, `=======` in a SEARCH part, and their repairable spellings) cannot be
//!   told apart from the structure; the protocol has no escape for it.
//! * **Nothing single-line may contain a newline.**
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
            let _ = write!(out, "READ {path}");
            match (start, end) {
                (None, None) => {}
                (Some(s), Some(e)) => {
                    let _ = write!(out, ":{s}-{e}");
                }
                (Some(s), None) => {
                    let _ = write!(out, ":{s}-");
                }
                (None, Some(e)) => {
                    let _ = write!(out, ":-{e}");
                }
            }
            out.push('\n');
        }
        Action::List { path } => line(out, "LIST", path),
        Action::Glob { pattern } => line(out, "GLOB", pattern),
        Action::Grep { pattern, path } => {
            let _ = write!(out, "GREP {pattern}");
            if let Some(path) = path {
                let _ = write!(out, " -- {path}");
            }
            out.push('\n');
        }
        Action::Run { argv } => {
            out.push_str("RUN");
            for word in argv {
                out.push(' ');
                quote_word(word, out);
            }
            out.push('\n');
        }
        Action::Delete { path } => line(out, "DELETE", path),
        Action::Mkdir { path } => line(out, "MKDIR", path),
        Action::Move { from, to } => {
            let _ = writeln!(out, "MOVE {from} -> {to}");
        }
        Action::Edit { path, blocks } => {
            let _ = writeln!(out, "EDIT {path}");
            for b in blocks {
                block(out, b);
            }
        }
        Action::Create { path, content } => {
            let _ = writeln!(out, "CREATE {path}");
            block(
                out,
                &Block {
                    search: String::new(),
                    replace: content.clone(),
                },
            );
        }
        Action::Done { summary } => line(out, "DONE", summary),
        Action::Client { name, arguments } => {
            let call = serde_json::json!({ "name": name, "arguments": arguments });
            let _ = writeln!(out, "<tool_call>{call}</tool_call>");
        }
    }
}

/// A verb line whose argument is written bare; an empty argument leaves the verb alone.
fn line(out: &mut String, verb: &str, arg: &str) {
    out.push_str(verb);
    if !arg.is_empty() {
        out.push(' ');
        out.push_str(arg);
    }
    out.push('\n');
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

/// True for a RUN word that needs no quoting.
fn is_bare(word: &str) -> bool {
    !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_@%+=:,./-".contains(&b))
}

/// Appends `word` with POSIX quoting: bare when safe, else single-quoted.
pub fn quote_word(word: &str, out: &mut String) {
    if is_bare(word) {
        out.push_str(word);
        return;
    }
    out.push('\'');
    for c in word.chars() {
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
        quote_word(w, &mut out);
    }
    out
}
