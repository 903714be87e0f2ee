//! The text protocol: verb lines and SEARCH/REPLACE blocks, as a [`Format`] and its bodies.
//!
//! # What counts as an action
//!
//! A false decode is worse than a failure, so the rules are strict about *starting* an action
//! and lenient only about spelling once the intent is unambiguous:
//!
//! * A verb line is an UPPERCASE verb at the very start of a line followed by a space, a tab
//!   or the end of the line. Its arguments are split with POSIX quoting (no shell). A path
//!   argument must look like a path: one word of path characters, not an English function word
//!   ("READ the file", "READ it") and not one of the protocol's own placeholders — the help
//!   lines small models echo back (`READ path[:start-end]  show a file…`, `DONE summary  when
//!   the task is finished`) are documentation, not actions. A verb line that reads as a
//!   sentence is prose; one that clearly meant an action but does not parse (`MOVE a.py`,
//!   `READ a.py:x`, `RUN 'unclosed`) is a [`FailureKind::BadVerbLine`](crate::event::FailureKind::BadVerbLine).
//! * A block starts only at a SEARCH marker line at the start of a line (or a fence line whose
//!   next line is one, or an aider-style path line followed by such a fence or marker). Markers
//!   quoted inside a sentence are prose. Fences are backticks or the tag fences aider falls back
//!   to (`<source>` … `</source>`, see `markers::TAG_FENCES`); a path line may be decorated as aider
//!   allows (`**a.py**`, `` `a.py` ``, `a.py:`, `### a.py`).
//! * Only the first divider between SEARCH and REPLACE splits them. A later divider line in the
//!   REPLACE part is undecided until what follows shows what it was: content when the block's
//!   REPLACE marker comes (a setext heading, a conflict-looking file), the end of the REPLACE
//!   part — as aider reads it — when a SEARCH marker or the end of the stream comes first
//!   ([`RepairKind::DividerClosesReplace`](crate::event::RepairKind::DividerClosesReplace)); the lines after it are then prose again. Markers
//!   must start their line: aider also takes indented ones, but an indented `=======` in a
//!   SEARCH part (an RST underline in a docstring) would then split it.
//! * A code fence whose info string names a programming language (```` ```python ````,
//!   ```` ```dockerfile ````) and whose first line is not a SEARCH marker is code: it is passed
//!   through as text to its closing fence, so `RUN` in a Dockerfile or `{` in JavaScript never
//!   becomes an action. Fences with no info string, or `json`, `bash`, `text`, `xml`,
//!   `tool_code`…, are transparent: what is inside is scanned as usual.
//!
//! # When a proposal is emitted
//!
//! A verb line's proposal is emitted at its newline (or the end of the stream). An `EDIT` /
//! `CREATE` group is emitted when the line after its last REPLACE marker (and closing fence)
//! shows that no further block follows — as soon as its first byte cannot begin a SEARCH marker
//! or a fence — or at the end of the stream. That line of lookahead is held inside the body and
//! handed back to the scanner with [`Step::Ended`](crate::format::Step::Ended).
//!
//! # Layout
//!
//! * `markers` — line recognisers: SEARCH/REPLACE markers and dividers with the spellings they
//!   repair, code fences (backticks and aider's tag fences), and `Look`, the
//!   three-valued answer about a line that may not have arrived whole.
//! * `verbs` — the verbs, what a path or a program may look like, POSIX word splitting, the
//!   verb-line parser and the `VerbLine` body.
//! * `block` — the edit-group body: one or more SEARCH/REPLACE blocks for one file, one line
//!   at a time.
//! * this file — [`TextFormat`]: detection, which decides where a body starts.

mod block;
mod markers;
mod verbs;
pub mod whole;

use block::{Group, GroupState};
use markers::{
    Look, MAX_LOOKAHEAD_LINE, TRANSPARENT_FENCES, any_fence_at, blank_line_at, fence_at,
    is_bare_fence, line_at, search_marker_at, strip_cr, tag_fence_at,
};
pub use verbs::VERBS;
pub(crate) use verbs::reads_as_prose;
use verbs::{
    HeaderParse, VerbLine, is_path_byte, names_a_file, parse_header, strip_decoration, strong_path,
};

use crate::format::{Ctx, Detect, Format, FormatId, Position};

/// bellows' text protocol.
#[derive(Debug, Default, Clone, Copy)]
pub struct TextFormat;

/// Line-start bytes: verbs and path lines (letters, digits, path punctuation, a heading's `#`),
/// markers, fences (backticks and aider's `<source>` tags).
const LINE_START_BYTES: &[u8] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789./_~*<>`#";

impl Format for TextFormat {
    fn id(&self) -> FormatId {
        FormatId::Text
    }

    fn trigger_bytes(&self) -> &'static [u8] {
        b""
    }

    fn line_start_bytes(&self) -> &'static [u8] {
        LINE_START_BYTES
    }

    fn detect(&self, s: &str, at: Position, ctx: &Ctx<'_>) -> Detect {
        // Every construct of the text protocol is a builtin action: in a registry without
        // builtins its bytes are prose, and are not even held.
        if !at.line_start || s.is_empty() || !ctx.registry.has_builtins() {
            return Detect::No;
        }
        let b = s.as_bytes();
        match b[0] {
            b'<' | b'>' => match (search_marker_at(b, 0, at.eos), detect_tag_fence(b, at.eos)) {
                (Look::Yes(_), _) => Detect::Start(Box::new(Group::new(GroupState::Between))),
                (_, d @ Detect::Start(_)) => d,
                (Look::More, _) | (_, Detect::NeedMore) => Detect::NeedMore,
                (Look::No, Detect::No) => Detect::No,
            },
            // A backtick opens a fence, or decorates a path line (`` `a.py` ``).
            b'`' => match detect_fence(b, at.eos) {
                Detect::No => detect_path_line(b, at.eos),
                d => d,
            },
            b'A'..=b'Z' => match detect_verb(b, at.eos) {
                Some(d) => d,
                None => detect_path_line(b, at.eos),
            },
            _ => detect_path_line(b, at.eos),
        }
    }
}

fn detect_verb(b: &[u8], eos: bool) -> Option<Detect> {
    let mut prefix = false;
    for v in VERBS {
        let v = v.as_bytes();
        if b.len() < v.len() {
            prefix |= v.starts_with(b);
            continue;
        }
        if !b.starts_with(v) {
            continue;
        }
        return match b.get(v.len()) {
            None if eos => Some(start_verb(v)),
            None => Some(Detect::NeedMore),
            Some(b' ' | b'\t' | b'\n' | b'\r') => Some(start_verb(v)),
            Some(_) => None,
        };
    }
    if prefix && !eos {
        Some(Detect::NeedMore)
    } else {
        None
    }
}

fn start_verb(v: &[u8]) -> Detect {
    if v == b"EDIT" || v == b"CREATE" {
        Detect::Start(Box::new(Group::new(GroupState::HeaderLine)))
    } else {
        Detect::Start(Box::new(VerbLine {
            line: String::new(),
        }))
    }
}

/// Is the line at `from` an `EDIT path` / `CREATE path` header?
fn header_at(b: &[u8], from: usize, eos: bool) -> Look<()> {
    match line_at(b, from, eos) {
        Some((line, _)) if line.len() > MAX_LOOKAHEAD_LINE => Look::No,
        Some((line, _)) => match std::str::from_utf8(strip_cr(line)) {
            Ok(l) if matches!(parse_header(l), Some(HeaderParse::Header { .. })) => Look::Yes(()),
            _ => Look::No,
        },
        None => {
            let rest = &b[from.min(b.len())..];
            let maybe = |v: &[u8]| {
                if rest.len() <= v.len() {
                    v.starts_with(rest)
                } else {
                    rest.starts_with(v) && rest[v.len()] == b' '
                }
            };
            if rest.len() <= MAX_LOOKAHEAD_LINE && (maybe(b"EDIT") || maybe(b"CREATE")) {
                Look::More
            } else {
                Look::No
            }
        }
    }
}

fn detect_fence(b: &[u8], eos: bool) -> Detect {
    let (info, next) = match fence_at(b, 0, eos) {
        Look::Yes(info) => match line_at(b, 0, eos) {
            Some((_, next)) => (info, next),
            None => return Detect::No,
        },
        Look::More => return Detect::NeedMore,
        Look::No => return Detect::No,
    };
    let language =
        !strong_path(info) && !TRANSPARENT_FENCES.contains(&info.to_ascii_lowercase().as_str());
    if language {
        // A language fence is claimed at once: its body decides between block and code.
        return Detect::Start(Box::new(Group::new(GroupState::FenceLine)));
    }
    match search_marker_at(b, next, eos) {
        Look::Yes(_) => return Detect::Start(Box::new(Group::new(GroupState::FenceLine))),
        Look::More => return Detect::NeedMore,
        Look::No => {}
    }
    if strong_path(info) {
        return Detect::No;
    }
    match header_at(b, next, eos) {
        Look::Yes(()) => Detect::Start(Box::new(Group::new(GroupState::FenceLine))),
        Look::More => Detect::NeedMore,
        Look::No => Detect::No,
    }
}

/// An aider tag fence (`<source>`) whose next line is a SEARCH marker.
fn detect_tag_fence(b: &[u8], eos: bool) -> Detect {
    match tag_fence_at(b, 0, eos) {
        Look::Yes(()) => {}
        Look::More => return Detect::NeedMore,
        Look::No => return Detect::No,
    }
    let Some((_, next)) = line_at(b, 0, eos) else {
        return Detect::NeedMore;
    };
    match search_marker_at(b, next, eos) {
        Look::Yes(_) => Detect::Start(Box::new(Group::new(GroupState::FenceLine))),
        Look::More => Detect::NeedMore,
        Look::No => Detect::No,
    }
}

/// An aider-style path line: a lone path, then a fence and a SEARCH marker (or the marker).
fn detect_path_line(b: &[u8], eos: bool) -> Detect {
    // Decide on the first byte a path line cannot contain (in prose, the first space), so a
    // line is not scanned to its end just to learn it is a sentence.
    let path_or_decoration = |c: u8| is_path_byte(c) || matches!(c, b'`' | b'*' | b':' | b'\r');
    // A markdown heading's `#`s and the blanks after them may come first (aider strips them
    // from a file name: `strip_filename` in `aider/coders/editblock_coder.py`).
    let hashes = b.iter().take_while(|&&c| c == b'#').count();
    let lead = if hashes == 0 {
        0
    } else {
        hashes
            + b[hashes..]
                .iter()
                .take_while(|&&c| c == b' ' || c == b'\t')
                .count()
    };
    let k = b
        .iter()
        .take(MAX_LOOKAHEAD_LINE + 1)
        .skip(lead)
        .position(|&c| !path_or_decoration(c))
        .map(|k| k + lead);
    match k {
        Some(k) if b[k] == b'\n' => {}
        Some(_) => return Detect::No,
        None if b.len() > MAX_LOOKAHEAD_LINE => return Detect::No,
        None if !eos => return Detect::NeedMore,
        None => {}
    }
    let Some((line, next)) = line_at(b, 0, eos) else {
        return Detect::NeedMore;
    };
    let Ok(line) = std::str::from_utf8(strip_cr(line)) else {
        return Detect::No;
    };
    if !names_a_file(strip_decoration(line)) || line.len() > MAX_LOOKAHEAD_LINE {
        return Detect::No;
    }
    // One blank line may separate the path from its fence or marker ("a.py", "", "```css",
    // then the marker: seen in aider chat histories). Aider's `find_filename` stops at a
    // blank line and falls back to the previous block's file; taking the path named right
    // there is the reading that cannot edit the wrong file.
    let next = match blank_line_at(b, next, eos) {
        Look::Yes(after) => after,
        Look::More => return Detect::NeedMore,
        Look::No => next,
    };
    match search_marker_at(b, next, eos) {
        Look::Yes(_) => return Detect::Start(Box::new(Group::new(GroupState::PathLine))),
        Look::More => return Detect::NeedMore,
        Look::No => {}
    }
    match any_fence_at(b, next, eos) {
        Look::Yes(()) => {}
        Look::More => return Detect::NeedMore,
        Look::No => return Detect::No,
    }
    let Some((fence, after)) = line_at(b, next, eos) else {
        return Detect::NeedMore;
    };
    match search_marker_at(b, after, eos) {
        Look::Yes(_) => return Detect::Start(Box::new(Group::new(GroupState::PathLine))),
        Look::More => return Detect::NeedMore,
        Look::No => {}
    }
    // Aider looks back through fence lines for the file name, up to three lines above the
    // marker (`find_filename`): the path may have been closed into a fence of its own, as in
    // "a.py", "```", "```python", then the marker.
    if !is_bare_fence(fence) {
        return Detect::No;
    }
    match any_fence_at(b, after, eos) {
        Look::Yes(()) => {}
        Look::More => return Detect::NeedMore,
        Look::No => return Detect::No,
    }
    let Some((_, marker)) = line_at(b, after, eos) else {
        return Detect::NeedMore;
    };
    match search_marker_at(b, marker, eos) {
        Look::Yes(_) => Detect::Start(Box::new(Group::new(GroupState::PathLine))),
        Look::More => Detect::NeedMore,
        Look::No => Detect::No,
    }
}
