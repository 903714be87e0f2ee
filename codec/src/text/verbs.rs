//! Verb lines: the verbs, what a path or a program may look like (and the English words and
//! placeholders that may not), POSIX word splitting, the verb-line parser and the [`VerbLine`]
//! body; also [`emit`] and [`fail`], which both of the text protocol's bodies report with.

use super::markers::MAX_LOOKAHEAD_LINE;
use crate::action::{Action, ActionProposal};
use crate::event::{Event, FailureKind, RepairKind};
use crate::format::{Body, Ctx, FormatId, MAX_HELD, Step, push_text};

/// The verbs of the text protocol.
pub const VERBS: [&str; 11] = [
    "READ", "LIST", "GLOB", "GREP", "RUN", "DELETE", "MKDIR", "MOVE", "DONE", "EDIT", "CREATE",
];

pub(super) use crate::words::{BARE_FILE_NAMES, FUNCTION_WORDS, PLACEHOLDERS, STOPWORDS};

pub(super) fn is_path_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric()
        || matches!(c, b'.' | b'_' | b'/' | b'-' | b'~' | b'+' | b'@')
        || c >= 0x80
}

/// Could a partial line (no newline yet) still become a lone path line?
pub(super) fn could_be_path_line(p: &[u8]) -> bool {
    p.len() <= MAX_LOOKAHEAD_LINE
        && p.iter().all(|&c| {
            is_path_byte(c) || matches!(c, b'`' | b'*' | b':' | b'#' | b' ' | b'\t' | b'\r')
        })
}

/// A lone, possibly decorated path line (without newline or CR): the path.
pub(super) fn lone_path(content: &str) -> Option<&str> {
    let p = strip_decoration(content);
    (content.len() <= MAX_LOOKAHEAD_LINE && strong_path(p)).then_some(p)
}

/// A lone path line's path (decorated as [`strip_decoration`] allows): a [`strong_path`], a
/// dotfile (`.gitignore`, `.env`) or one of the extensionless names projects keep at their
/// root ([`BARE_FILE_NAMES`]: `Makefile`, `Dockerfile`). Aider takes any lone line there as a
/// file name (`strip_filename` in `aider/coders/editblock_coder.py`); a word that is neither is
/// as likely a heading or a sentence, so it stays prose.
pub(super) fn path_line_name(content: &str) -> Option<&str> {
    let p = strip_decoration(content);
    (content.len() <= MAX_LOOKAHEAD_LINE && names_a_file(p)).then_some(p)
}

/// See [`path_line_name`].
pub(super) fn names_a_file(p: &str) -> bool {
    let dotfile = p.len() > 1 && p.starts_with('.') && p.as_bytes()[1].is_ascii_alphabetic();
    strong_path(p) || (path_like(p) && (dotfile || BARE_FILE_NAMES.contains(&p)))
}

/// `**src/a.py**`, `` `src/a.py` ``, `src/a.py:`, `### src/a.py` → `src/a.py`.
pub(super) fn strip_decoration(s: &str) -> &str {
    let s = s.trim_end_matches([' ', '\t']);
    let s = match s.strip_prefix('#') {
        Some(h) => h.trim_start_matches('#').trim_start_matches([' ', '\t']),
        None => s,
    };
    let s = s.strip_suffix(':').unwrap_or(s);
    s.trim_matches(['`', '*'])
}

/// A word that can be a path: path characters only, no trailing sentence punctuation, not an
/// English function word or a placeholder.
pub(super) fn path_like(w: &str) -> bool {
    !w.is_empty()
        && w.len() <= 4096
        && w.bytes().all(is_path_byte)
        && !w.starts_with('-')
        && (w == "." || w == ".." || !w.ends_with('.'))
        && w.bytes()
            .any(|c| c.is_ascii_alphanumeric() || c == b'.' || c >= 0x80)
        && !is_stopword(w)
        && !(w.len() <= 16 && PLACEHOLDERS.contains(&w))
}

/// A path with a directory separator or an extension: what a lone line must be to be taken
/// for a file name.
pub(super) fn strong_path(w: &str) -> bool {
    path_like(w)
        && (w.contains('/') || w.trim_start_matches('.').contains('.'))
        && w.bytes().any(|c| c.is_ascii_alphabetic())
}

/// A bare word the decoder reads as prose, not as an argument: an English stopword or one of
/// the protocol's placeholders. `render` quotes such words so they round-trip.
pub(crate) fn reads_as_prose(w: &str) -> bool {
    is_stopword(w) || PLACEHOLDERS.iter().any(|p| p.eq_ignore_ascii_case(w))
}

pub(super) fn is_stopword(w: &str) -> bool {
    // Stopwords are short and all letters; paths (with `.` or `/`) skip the table.
    w.len() <= 12
        && w.bytes().all(|c| c.is_ascii_alphabetic())
        && STOPWORDS.iter().any(|s| s.eq_ignore_ascii_case(w))
}

/// POSIX word splitting (quotes and backslashes, no expansion). `Err` on an unclosed quote.
/// Each word comes with whether any part of it was quoted.
pub(super) fn split_words(s: &str) -> Result<Vec<(String, bool)>, ()> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quoted = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if in_word {
                    words.push((std::mem::take(&mut cur), quoted));
                    in_word = false;
                    quoted = false;
                }
            }
            '\'' => {
                in_word = true;
                quoted = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => cur.push(c),
                        None => return Err(()),
                    }
                }
            }
            '"' => {
                in_word = true;
                quoted = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => cur.push(c),
                            Some(c) => {
                                cur.push('\\');
                                cur.push(c);
                            }
                            None => return Err(()),
                        },
                        Some(c) => cur.push(c),
                        None => return Err(()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => cur.push(c),
                    None => return Err(()),
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push((cur, quoted));
    }
    Ok(words)
}

/// A path argument: quoted words are taken as written; bare ones must look like a path.
pub(super) fn path_word(w: &(String, bool)) -> bool {
    if w.1 {
        !w.0.is_empty() && !w.0.contains('\n')
    } else {
        path_like(&w.0)
    }
}

/// What a verb line turned out to be.
#[derive(Debug, PartialEq)]
pub(super) enum VerbParse {
    Action(Action),
    /// A sentence or the protocol's own documentation.
    Prose,
    /// Clearly an attempted action that does not parse.
    Bad,
}

/// What an `EDIT`/`CREATE` line turned out to be.
#[derive(Debug, PartialEq)]
pub(super) enum HeaderParse {
    Header {
        create: bool,
        path: String,
    },
    /// The protocol's own help line (`EDIT path  then one or more blocks of this form:`):
    /// it and the example block that follows it are documentation.
    Doc,
    Prose,
    Bad,
}

/// Splits `VERB rest` (line without newline or CR).
pub(super) fn split_verb(line: &str) -> Option<(&'static str, &str)> {
    let v = VERBS.iter().find(|v| line.starts_with(**v))?;
    let rest = &line[v.len()..];
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    Some((v, rest.trim_matches([' ', '\t'])))
}

/// The decision for a lone path argument shared by path verbs.
pub(super) fn one_path(rest: &str) -> Result<String, VerbParse> {
    let Ok(words) = split_words(rest) else {
        return Err(VerbParse::Prose);
    };
    match words.as_slice() {
        [] => Err(VerbParse::Bad),
        [w] if path_word(w) => Ok(w.0.clone()),
        [_] => Err(VerbParse::Prose),
        ws if ws.iter().all(|w| !w.1 && strong_path(&w.0)) => Err(VerbParse::Bad),
        _ => Err(VerbParse::Prose),
    }
}

pub(super) fn parse_header(line: &str) -> Option<HeaderParse> {
    let (verb, rest) = split_verb(line)?;
    let create = match verb {
        "EDIT" => false,
        "CREATE" => true,
        _ => return None,
    };
    if rest.split_whitespace().next() == Some("path") {
        return Some(HeaderParse::Doc);
    }
    Some(match one_path(rest) {
        Ok(path) => HeaderParse::Header { create, path },
        Err(VerbParse::Bad) => HeaderParse::Bad,
        Err(_) => HeaderParse::Prose,
    })
}

/// Parses a non-block verb line (without newline or CR).
pub(super) fn parse_verb_line(line: &str) -> VerbParse {
    let Some((verb, rest)) = split_verb(line) else {
        return VerbParse::Prose;
    };
    let path_action = |f: fn(String) -> Action| match one_path(rest) {
        Ok(p) => VerbParse::Action(f(p)),
        Err(e) => e,
    };
    match verb {
        "READ" => parse_read(rest),
        "LIST" => {
            if rest.is_empty() {
                VerbParse::Action(Action::List { path: ".".into() })
            } else {
                path_action(|path| Action::List { path })
            }
        }
        "DELETE" => path_action(|path| Action::Delete { path }),
        "MKDIR" => path_action(|path| Action::Mkdir { path }),
        "GLOB" => parse_glob(rest),
        "GREP" => parse_grep(rest),
        "RUN" => parse_run(rest),
        "MOVE" => parse_move(rest),
        "DONE" => parse_done(rest),
        _ => VerbParse::Prose,
    }
}

pub(super) fn parse_read(rest: &str) -> VerbParse {
    let Ok(words) = split_words(rest) else {
        return VerbParse::Prose;
    };
    let [w] = words.as_slice() else {
        return match one_path(rest) {
            Err(e) => e,
            Ok(_) => VerbParse::Prose,
        };
    };
    if path_word(w) {
        return VerbParse::Action(Action::Read {
            path: w.0.clone(),
            start: None,
            end: None,
        });
    }
    // `path:start-end`: the suffix after the last colon is a line range.
    let Some((path, range)) = w.0.rsplit_once(':') else {
        return VerbParse::Prose;
    };
    let path_ok = if w.1 {
        !path.is_empty()
    } else {
        path_like(path)
    };
    if !path_ok {
        return VerbParse::Prose;
    }
    if !range.bytes().all(|c| c.is_ascii_digit() || c == b'-') {
        return if strong_path(path) {
            VerbParse::Bad
        } else {
            VerbParse::Prose
        };
    }
    let Some((a, b)) = range.split_once('-') else {
        return VerbParse::Bad;
    };
    match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(start), Ok(end)) if start >= 1 && start <= end => VerbParse::Action(Action::Read {
            path: path.to_owned(),
            start: Some(start),
            end: Some(end),
        }),
        _ => VerbParse::Bad,
    }
}

pub(super) fn glob_like(w: &str) -> bool {
    !w.is_empty()
        && w.bytes().all(|c| {
            is_path_byte(c) || matches!(c, b'*' | b'?' | b'[' | b']' | b'{' | b'}' | b'!' | b',')
        })
        && !w.ends_with(['.', ','])
        && !is_stopword(w)
        && !PLACEHOLDERS.contains(&w)
}

pub(super) fn parse_glob(rest: &str) -> VerbParse {
    let Ok(words) = split_words(rest) else {
        return VerbParse::Prose;
    };
    match words.as_slice() {
        [] => VerbParse::Bad,
        [(w, true)] if !w.is_empty() => VerbParse::Action(Action::Glob { pattern: w.clone() }),
        [(w, false)] if glob_like(w) => VerbParse::Action(Action::Glob { pattern: w.clone() }),
        _ => VerbParse::Prose,
    }
}

pub(super) fn parse_grep(rest: &str) -> VerbParse {
    let Ok(words) = split_words(rest) else {
        return VerbParse::Prose;
    };
    let pattern_ok = |w: &(String, bool)| {
        if w.1 {
            !w.0.is_empty()
        } else {
            !is_stopword(&w.0)
                && !PLACEHOLDERS.contains(&w.0.as_str())
                && !w.0.ends_with(['.', ':'])
        }
    };
    match words.iter().position(|w| w.0 == "--" && !w.1) {
        Some(k) => match (&words[..k], &words[k + 1..]) {
            ([p], [path]) if pattern_ok(p) && path_word(path) => VerbParse::Action(Action::Grep {
                pattern: p.0.clone(),
                path: Some(path.0.clone()),
            }),
            // `GREP fn main -- src`: the explicit `--` marks a command, so unquoted words
            // before it are one pattern, joined as the protocol's single spaces.
            (ps, [path])
                if ps.len() > 1
                    && ps.iter().all(|w| !w.1 && !is_stopword(&w.0))
                    && path_word(path) =>
            {
                let pattern = ps
                    .iter()
                    .map(|w| w.0.as_str())
                    .collect::<Vec<_>>()
                    .join(" ");
                VerbParse::Action(Action::Grep {
                    pattern,
                    path: Some(path.0.clone()),
                })
            }
            ([p], _) if pattern_ok(p) => VerbParse::Bad,
            _ => VerbParse::Prose,
        },
        None => match words.as_slice() {
            [] => VerbParse::Bad,
            [p] if pattern_ok(p) => VerbParse::Action(Action::Grep {
                pattern: p.0.clone(),
                path: None,
            }),
            _ => VerbParse::Prose,
        },
    }
}

pub(super) fn parse_run(rest: &str) -> VerbParse {
    let first = rest.split_whitespace().next().unwrap_or("");
    // A quoted program is taken as written; a bare one must look like a program.
    let first_ok = first.starts_with(['\'', '"']) || program_like(first);
    if rest.is_empty() {
        return VerbParse::Bad;
    }
    if !first_ok {
        return VerbParse::Prose;
    }
    // A line that ends like a sentence, or reads like one, is prose.
    if rest.ends_with(['.', ':', '!', '?', ',']) {
        return VerbParse::Prose;
    }
    // Only bare words count: a quoted word is an argument as written (`-m 'fix the bug'`), and
    // quoting may hold blanks of any kind. A line whose quotes do not pair (an apostrophe in
    // a sentence) is judged by its blank-separated words.
    let sentence = match split_words(rest) {
        Ok(words) => {
            let bare = || words.iter().filter(|w| !w.1).map(|w| w.0.as_str());
            bare().filter(|w| is_stopword(w)).count() >= 2
                || words.iter().skip(1).any(|w| !w.1 && is_function_word(&w.0))
        }
        Err(()) => {
            rest.split_whitespace().filter(|w| is_stopword(w)).count() >= 2
                || rest.split_whitespace().skip(1).any(is_function_word)
        }
    };
    if sentence {
        return VerbParse::Prose;
    }
    // The registry's splitter: POSIX quoting, and shell syntax (pipes, redirections) is an
    // error, because without a shell it would mean something else.
    match crate::registry::split_argv(rest) {
        Ok(argv) if !argv.is_empty() => VerbParse::Action(Action::Run { argv }),
        _ => VerbParse::Bad,
    }
}

/// Words that make a RUN line read as a sentence (`RUN tests to see`). A command that needs
/// one as an argument quotes it, as the canonical renderer does.
pub(super) fn is_function_word(w: &str) -> bool {
    w.len() <= 6 && FUNCTION_WORDS.iter().any(|s| s.eq_ignore_ascii_case(w))
}

pub(super) fn program_like(w: &str) -> bool {
    !w.is_empty()
        && w.bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'/' | b'+' | b'-'))
        && !w.starts_with('-')
        && !w.ends_with(['.', ':'])
        && !is_stopword(w)
        && !PLACEHOLDERS.contains(&w)
}

pub(super) fn parse_move(rest: &str) -> VerbParse {
    let Ok(words) = split_words(rest) else {
        return VerbParse::Prose;
    };
    match words.as_slice() {
        // The help line's own placeholders.
        [(a, false), _, (b, false)] if a == "src" && b == "dst" => VerbParse::Prose,
        [a, (arrow, false), b] if arrow == "->" => {
            if path_word(a) && path_word(b) {
                VerbParse::Action(Action::Move {
                    from: a.0.clone(),
                    to: b.0.clone(),
                })
            } else if PLACEHOLDERS.contains(&a.0.as_str()) || PLACEHOLDERS.contains(&b.0.as_str()) {
                VerbParse::Prose
            } else {
                VerbParse::Bad
            }
        }
        ws if ws.iter().any(|w| w.0 == "->" && !w.1) => {
            if ws.len() <= 4 && ws.iter().all(|w| w.0 == "->" || path_word(w)) {
                VerbParse::Bad
            } else {
                VerbParse::Prose
            }
        }
        ws if !ws.is_empty() && ws.len() <= 2 && ws.iter().all(|w| !w.1 && strong_path(&w.0)) => {
            VerbParse::Bad
        }
        [] => VerbParse::Bad,
        _ => VerbParse::Prose,
    }
}

pub(super) fn parse_done(rest: &str) -> VerbParse {
    let first = rest.split_whitespace().next().unwrap_or("");
    if first == "summary" {
        return VerbParse::Prose;
    }
    VerbParse::Action(Action::Done {
        summary: rest.to_owned(),
    })
}

/// Emits a text-protocol proposal with the next index.
pub(super) fn emit(
    action: Action,
    repairs: Vec<RepairKind>,
    ctx: &mut Ctx<'_>,
    out: &mut Vec<Event>,
) {
    let index = ctx.take_index();
    out.push(Event::Proposal {
        index,
        proposal: ActionProposal {
            action,
            repairs,
            format: FormatId::Text,
        },
    });
}

pub(super) fn fail(kind: FailureKind, raw: String, out: &mut Vec<Event>) {
    out.push(Event::Failure {
        index: None,
        kind,
        raw,
    });
}

/// A single verb line (everything but `EDIT`/`CREATE`), held until its newline.
#[derive(Debug)]
pub(super) struct VerbLine {
    pub(super) line: String,
}

impl VerbLine {
    /// Decides the finished line; returns it back when it is prose.
    fn decide(&mut self, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Option<String> {
        let raw = std::mem::take(&mut self.line);
        let body = raw.strip_suffix('\n').unwrap_or(&raw);
        let (body, cr) = match body.strip_suffix('\r') {
            Some(b) => (b, true),
            None => (body, false),
        };
        match parse_verb_line(body.trim_end_matches([' ', '\t'])) {
            VerbParse::Action(a) => {
                let repairs = if cr {
                    vec![RepairKind::Crlf]
                } else {
                    Vec::new()
                };
                emit(a, repairs, ctx, out);
                None
            }
            VerbParse::Bad => {
                fail(FailureKind::BadVerbLine, raw, out);
                None
            }
            VerbParse::Prose => Some(raw),
        }
    }
}

impl Body for VerbLine {
    fn feed(&mut self, s: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Step {
        match s.bytes().position(|c| c == b'\n') {
            Some(k) => {
                self.line.push_str(&s[..=k]);
                let rest = s.len() - k - 1;
                match self.decide(ctx, out) {
                    None => Step::Done { consumed: k + 1 },
                    Some(held) => Step::Reject { held, rest },
                }
            }
            None => {
                self.line.push_str(s);
                if self.line.len() > MAX_HELD {
                    fail(FailureKind::TooLong, std::mem::take(&mut self.line), out);
                    // Treat the overlong line as consumed: it was released in the failure.
                    return Step::Done { consumed: s.len() };
                }
                Step::NeedMore
            }
        }
    }

    fn finish(&mut self, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Option<String> {
        // A prose line at the end of the stream is released as text here: what `finish`
        // hands back is scanned from its first byte and would start this body again.
        if let Some(prose) = self.decide(ctx, out) {
            push_text(out, &prose);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verb_lines_parse_or_read_as_prose() {
        let read = |p: &str| Action::Read {
            path: p.into(),
            start: None,
            end: None,
        };
        assert_eq!(
            parse_verb_line("READ calc.py"),
            VerbParse::Action(read("calc.py"))
        );
        assert_eq!(
            parse_verb_line("READ src/a.rs:3-10"),
            VerbParse::Action(Action::Read {
                path: "src/a.rs".into(),
                start: Some(3),
                end: Some(10)
            })
        );
        assert_eq!(parse_verb_line("READ the file"), VerbParse::Prose);
        assert_eq!(parse_verb_line("READ it"), VerbParse::Prose);
        assert_eq!(
            parse_verb_line("READ path[:start-end]  show a file or a line range"),
            VerbParse::Prose
        );
        assert_eq!(parse_verb_line("READ a.py:x-y"), VerbParse::Bad);
        assert_eq!(
            parse_verb_line("LIST"),
            VerbParse::Action(Action::List { path: ".".into() })
        );
        assert_eq!(
            parse_verb_line("LIST [dir]  list a directory"),
            VerbParse::Prose
        );
        assert_eq!(
            parse_verb_line("RUN python -m pytest 'tests/a b.py'"),
            VerbParse::Action(Action::Run {
                argv: vec![
                    "python".into(),
                    "-m".into(),
                    "pytest".into(),
                    "tests/a b.py".into()
                ]
            })
        );
        assert_eq!(
            parse_verb_line("RUN program args  run a program (no shell)"),
            VerbParse::Prose
        );
        assert_eq!(
            parse_verb_line("RUN the tests to check it"),
            VerbParse::Prose
        );
        // Quoted words are arguments, whatever they say or whatever blanks they hold.
        assert_eq!(
            parse_verb_line("RUN git commit -m 'fix the bug'"),
            VerbParse::Action(Action::Run {
                argv: vec![
                    "git".into(),
                    "commit".into(),
                    "-m".into(),
                    "fix the bug".into()
                ]
            })
        );
        assert_eq!(
            parse_verb_line("RUN '\u{b}a\u{b}' '\ta\t'"),
            VerbParse::Action(Action::Run {
                argv: vec!["\u{b}a\u{b}".into(), "\ta\t".into()]
            })
        );
        assert_eq!(
            parse_verb_line("RUN 'make' and see if it works"),
            VerbParse::Prose
        );
        assert_eq!(
            parse_verb_line("RUN tests to see if it's ok"),
            VerbParse::Prose
        );
        assert_eq!(parse_verb_line("RUN echo 'oops"), VerbParse::Bad);
        assert_eq!(
            parse_verb_line("MOVE a.py -> b/a.py"),
            VerbParse::Action(Action::Move {
                from: "a.py".into(),
                to: "b/a.py".into()
            })
        );
        assert_eq!(parse_verb_line("MOVE a.py"), VerbParse::Bad);
        assert_eq!(
            parse_verb_line("MOVE on to the next step"),
            VerbParse::Prose
        );
        assert_eq!(
            parse_verb_line("DONE summary  when the task is finished"),
            VerbParse::Prose
        );
        assert_eq!(
            parse_verb_line("DONE fixed average"),
            VerbParse::Action(Action::Done {
                summary: "fixed average".into()
            })
        );
        assert_eq!(
            parse_verb_line("GREP 'def average' -- calc.py"),
            VerbParse::Action(Action::Grep {
                pattern: "def average".into(),
                path: Some("calc.py".into())
            })
        );
        assert_eq!(
            parse_verb_line("GREP pattern [-- path]  search file contents"),
            VerbParse::Prose
        );
        assert_eq!(
            parse_verb_line("GREP fn main -- src"),
            VerbParse::Action(Action::Grep {
                pattern: "fn main".into(),
                path: Some("src".into())
            })
        );
        assert_eq!(
            parse_verb_line("GREP for the word -- src"),
            VerbParse::Prose
        );
        assert_eq!(
            parse_verb_line("GLOB pattern  find files by name"),
            VerbParse::Prose
        );
        assert_eq!(
            parse_verb_line("GLOB **/*.py"),
            VerbParse::Action(Action::Glob {
                pattern: "**/*.py".into()
            })
        );
    }

    #[test]
    fn words_split_like_posix() {
        let w = split_words(r#"a 'b c' "d \"e\"" f\ g"#)
            .map(|v| v.into_iter().map(|w| w.0).collect::<Vec<_>>());
        assert_eq!(
            w,
            Ok(vec![
                "a".to_owned(),
                "b c".into(),
                "d \"e\"".into(),
                "f g".into()
            ])
        );
        assert!(split_words("'open").is_err());
    }
}
