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
//!   `READ a.py:x`, `RUN 'unclosed`) is a [`FailureKind::BadVerbLine`].
//! * A block starts only at a SEARCH marker line at the start of a line (or a fence line whose
//!   next line is one, or an aider-style path line followed by such a fence or marker). Markers
//!   quoted inside a sentence are prose. Fences are backticks or the tag fences aider falls back
//!   to (`<source>` … `</source>`, see [`TAG_FENCES`]); a path line may be decorated as aider
//!   allows (`**a.py**`, `` `a.py` ``, `a.py:`, `### a.py`).
//! * Only the first divider between SEARCH and REPLACE splits them. A later divider line in the
//!   REPLACE part is undecided until what follows shows what it was: content when the block's
//!   REPLACE marker comes (a setext heading, a conflict-looking file), the end of the REPLACE
//!   part — as aider reads it — when a SEARCH marker or the end of the stream comes first
//!   ([`RepairKind::DividerClosesReplace`]); the lines after it are then prose again. Markers
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
//! handed back to the scanner with [`Step::Ended`].

use crate::action::{Action, ActionProposal, Block};
use crate::event::{Event, FailureKind, RepairKind};
use crate::format::{Body, Ctx, Detect, Format, FormatId, Position, Step};
use crate::turn::{MAX_HELD, push_text};

/// The verbs of the text protocol.
pub const VERBS: [&str; 11] = [
    "READ", "LIST", "GLOB", "GREP", "RUN", "DELETE", "MKDIR", "MOVE", "DONE", "EDIT", "CREATE",
];

/// The longest first line (path line, fence line, marker line) the detector will wait for.
const MAX_LOOKAHEAD_LINE: usize = 512;

/// Words that are the protocol's placeholders in its own help text.
const PLACEHOLDERS: &[&str] = &[
    "path",
    "dir",
    "pattern",
    "summary",
    "program",
    "args",
    "argv",
    "argv...",
    "file",
    "path[:start-end]",
    "[dir]",
    "[path]",
];

/// English words that are not plausible file names or programs after a verb.
const STOPWORDS: &[&str] = &[
    "a",
    "an",
    "the",
    "it",
    "its",
    "this",
    "that",
    "these",
    "those",
    "them",
    "they",
    "and",
    "or",
    "to",
    "of",
    "in",
    "on",
    "for",
    "with",
    "is",
    "are",
    "be",
    "will",
    "you",
    "your",
    "my",
    "me",
    "we",
    "our",
    "i",
    "if",
    "then",
    "now",
    "next",
    "first",
    "again",
    "all",
    "more",
    "everything",
    "something",
    "anything",
    "nothing",
    "here",
    "there",
    "below",
    "above",
    "carefully",
    "please",
    "following",
    "some",
    "any",
    "each",
    "every",
    "as",
    "at",
    "by",
    "from",
    "into",
    "so",
    "not",
    "no",
    "yes",
    "ok",
    "okay",
    "can",
    "should",
    "would",
    "could",
    "must",
    "may",
    "might",
    "do",
    "does",
    "did",
    "was",
    "were",
    "has",
    "have",
    "had",
    "which",
    "what",
    "how",
    "why",
    "when",
    "where",
    "who",
    "same",
    "other",
    "another",
    "out",
    "up",
];

/// Fence info strings whose contents are scanned as usual rather than passed through as code.
const TRANSPARENT_FENCES: &[&str] = &[
    "",
    "json",
    "jsonc",
    "json5",
    "bash",
    "sh",
    "shell",
    "zsh",
    "console",
    "terminal",
    "text",
    "txt",
    "plaintext",
    "plain",
    "xml",
    "tool_call",
    "tool_code",
    "tool_calls",
    "markdown",
    "md",
    "diff",
    "patch",
];

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
            b'`' => detect_fence(b, at.eos),
            b'A'..=b'Z' => match detect_verb(b, at.eos) {
                Some(d) => d,
                None => detect_path_line(b, at.eos),
            },
            _ => detect_path_line(b, at.eos),
        }
    }
}

/// A three-valued answer about a line that may not have arrived whole.
#[derive(Debug, PartialEq, Eq)]
enum Look<T> {
    No,
    More,
    Yes(T),
}

/// The line of `b` starting at `from`: `(line without its newline, index after the newline)`,
/// or `None` when the newline has not arrived (at end of stream the rest is the line).
fn line_at(b: &[u8], from: usize, eos: bool) -> Option<(&[u8], usize)> {
    let rest = b.get(from..)?;
    match rest.iter().position(|&c| c == b'\n') {
        Some(k) => Some((&rest[..k], from + k + 1)),
        None if eos => Some((rest, b.len())),
        None => None,
    }
}

fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
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

/// Is the line at `from` a SEARCH marker?
fn search_marker_at(b: &[u8], from: usize, eos: bool) -> Look<u8> {
    match line_at(b, from, eos) {
        // Complete lines obey the same length bounds as incomplete ones, so the answer
        // cannot depend on how much of the line had arrived (chunk invariance).
        Some((line, _)) if line.len() > 64 => Look::No,
        Some((line, _)) => match classify(strip_cr(line)) {
            Some((Marker::Search, r)) => Look::Yes(r),
            _ => Look::No,
        },
        None => {
            let rest = &b[from.min(b.len())..];
            if rest.len() <= 64 && could_be_search_marker(rest) {
                Look::More
            } else {
                Look::No
            }
        }
    }
}

/// Is the line at `from` an opening fence? Yields its info string.
fn fence_at(b: &[u8], from: usize, eos: bool) -> Look<&str> {
    match line_at(b, from, eos) {
        Some((line, _)) if line.len() > MAX_LOOKAHEAD_LINE => Look::No,
        Some((line, _)) => match fence_info(strip_cr(line)) {
            Some(info) => Look::Yes(info),
            None => Look::No,
        },
        None => {
            let rest = &b[from.min(b.len())..];
            let ticks = rest.iter().take_while(|&&c| c == b'`').count();
            if rest.len() > MAX_LOOKAHEAD_LINE || (ticks < rest.len() && ticks < 3) {
                Look::No
            } else {
                Look::More
            }
        }
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

fn is_path_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric()
        || matches!(c, b'.' | b'_' | b'/' | b'-' | b'~' | b'+' | b'@')
        || c >= 0x80
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
    if !strong_path(strip_decoration(line)) || line.len() > MAX_LOOKAHEAD_LINE {
        return Detect::No;
    }
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

/// A backtick fence line with no info string: it may close a fence as well as open one.
fn is_bare_fence(line: &[u8]) -> bool {
    fence_info(strip_cr(line)) == Some("")
}

/// Could a partial line (no newline yet) still become a lone path line?
fn could_be_path_line(p: &[u8]) -> bool {
    p.len() <= MAX_LOOKAHEAD_LINE
        && p.iter().all(|&c| {
            is_path_byte(c) || matches!(c, b'`' | b'*' | b':' | b'#' | b' ' | b'\t' | b'\r')
        })
}

/// A lone, possibly decorated path line (without newline or CR): the path.
fn lone_path(content: &str) -> Option<&str> {
    let p = strip_decoration(content);
    (content.len() <= MAX_LOOKAHEAD_LINE && strong_path(p)).then_some(p)
}

/// `**src/a.py**`, `` `src/a.py` ``, `src/a.py:`, `### src/a.py` → `src/a.py`.
fn strip_decoration(s: &str) -> &str {
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
fn path_like(w: &str) -> bool {
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
fn strong_path(w: &str) -> bool {
    path_like(w)
        && (w.contains('/') || w.trim_start_matches('.').contains('.'))
        && w.bytes().any(|c| c.is_ascii_alphabetic())
}

/// A bare word the decoder reads as prose, not as an argument: an English stopword or one of
/// the protocol's placeholders. `render` quotes such words so they round-trip.
pub(crate) fn reads_as_prose(w: &str) -> bool {
    is_stopword(w) || PLACEHOLDERS.iter().any(|p| p.eq_ignore_ascii_case(w))
}

fn is_stopword(w: &str) -> bool {
    // Stopwords are short and all letters; paths (with `.` or `/`) skip the table.
    w.len() <= 12
        && w.bytes().all(|c| c.is_ascii_alphabetic())
        && STOPWORDS.iter().any(|s| s.eq_ignore_ascii_case(w))
}

/// Which of the three block lines a line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marker {
    Search,
    Divider,
    Replace,
}

const R_DIRECTION: u8 = 1;
const R_COUNT: u8 = 2;
const R_CASE: u8 = 4;
const R_RUN_TOGETHER: u8 = 8;
const R_TRAILING: u8 = 16;
const R_DIVIDER: u8 = 32;
const R_ANGLE: u8 = 64;

/// Expands a repair bit set into kinds, in a fixed order.
fn push_marker_repairs(bits: u8, out: &mut Vec<RepairKind>) {
    const ORDER: [(u8, RepairKind); 7] = [
        (R_DIRECTION, RepairKind::MarkerArrowDirection),
        (R_COUNT, RepairKind::MarkerArrowCount),
        (R_CASE, RepairKind::MarkerCase),
        (R_RUN_TOGETHER, RepairKind::MarkerRunTogether),
        (R_DIVIDER, RepairKind::DividerLength),
        (R_TRAILING, RepairKind::MarkerTrailingSpace),
        (R_ANGLE, RepairKind::MarkerTrailingAngle),
    ];
    for (bit, kind) in ORDER {
        if bits & bit != 0 {
            out.push(kind);
        }
    }
}

/// Classifies a line (without newline or CR) as a marker, with the repairs its spelling needs.
fn classify(line: &[u8]) -> Option<(Marker, u8)> {
    let t = trim_end_blank(line);
    if t.is_empty() || t.len() > 40 {
        return None;
    }
    let mut r = if t.len() < line.len() { R_TRAILING } else { 0 };
    if t.iter().all(|&c| c == b'=') {
        if !(3..=9).contains(&t.len()) {
            return None;
        }
        if t.len() != 7 {
            r |= R_DIVIDER;
        }
        return Some((Marker::Divider, r));
    }
    let arrow = t[0];
    if arrow != b'<' && arrow != b'>' {
        return None;
    }
    let n = t.iter().take_while(|&&c| c == arrow).count();
    if !(3..=9).contains(&n) {
        return None;
    }
    if n != 7 {
        r |= R_COUNT;
    }
    let rest = &t[n..];
    let mut word = match rest.strip_prefix(b" ") {
        Some(w) => w,
        None => {
            r |= R_RUN_TOGETHER;
            rest
        }
    };
    // `<<<<<<< SEARCH>` (aider's SEARCH pattern takes an optional `>`).
    if let Some(w) = word.strip_suffix(b">")
        && w.eq_ignore_ascii_case(b"SEARCH")
    {
        word = w;
        r |= R_ANGLE;
    }
    let marker = if word.eq_ignore_ascii_case(b"SEARCH") {
        if word != b"SEARCH" {
            r |= R_CASE;
        }
        Marker::Search
    } else if word.eq_ignore_ascii_case(b"REPLACE") {
        if word != b"REPLACE" {
            r |= R_CASE;
        }
        Marker::Replace
    } else {
        return None;
    };
    let canonical = if marker == Marker::Search { b'<' } else { b'>' };
    if arrow != canonical {
        r |= R_DIRECTION;
    }
    Some((marker, r))
}

fn trim_end_blank(line: &[u8]) -> &[u8] {
    let n = line
        .iter()
        .rposition(|&c| c != b' ' && c != b'\t')
        .map_or(0, |k| k + 1);
    &line[..n]
}

/// Could these bytes (no newline yet) grow into a SEARCH marker line?
fn could_be_search_marker(p: &[u8]) -> bool {
    let Some(&arrow) = p.first() else { return true };
    if arrow != b'<' && arrow != b'>' {
        return false;
    }
    let n = p.iter().take_while(|&&c| c == arrow).count();
    if n > 9 {
        return false;
    }
    let mut rest = &p[n..];
    if let Some(r) = rest.strip_prefix(b" ") {
        rest = r;
    }
    let letters = rest.iter().take_while(|c| c.is_ascii_alphabetic()).count();
    let (word, tail) = rest.split_at(letters);
    let w = b"SEARCH";
    if word.len() > w.len() || !w[..word.len()].eq_ignore_ascii_case(word) {
        return false;
    }
    if !tail.is_empty() && word.len() != w.len() {
        return false;
    }
    let tail = tail.strip_prefix(b">").unwrap_or(tail);
    tail.iter().all(|&c| matches!(c, b' ' | b'\t' | b'\r'))
}

/// The info string of an opening fence line (three or more backticks).
fn fence_info(line: &[u8]) -> Option<&str> {
    let ticks = line.iter().take_while(|&&c| c == b'`').count();
    if ticks < 3 {
        return None;
    }
    let info = std::str::from_utf8(&line[ticks..]).ok()?.trim();
    if info.contains('`') || info.contains(' ') {
        return None;
    }
    Some(info)
}

/// A closing fence: three or more backticks and nothing else.
fn is_closing_fence(line: &[u8]) -> bool {
    let t = trim_end_blank(strip_cr(line));
    t.len() >= 3 && t.iter().all(|&c| c == b'`')
}

fn could_be_closing_fence(p: &[u8]) -> bool {
    let ticks = p.iter().take_while(|&&c| c == b'`').count();
    ticks == p.len()
        || (ticks >= 3
            && p[ticks..]
                .iter()
                .all(|&c| matches!(c, b' ' | b'\t' | b'\r')))
}

/// The tag fences aider switches to when a file itself holds triple backticks
/// (`all_fences` in aider's `aider/coders/base_coder.py`): `<source>` … `</source>` and the
/// like. As there, the opening tag may carry a language word (`<source>python`).
const TAG_FENCES: &[&str] = &["source", "code", "pre", "codeblock", "sourcecode"];

/// How an open fence closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fence {
    /// Three or more backticks.
    Ticks,
    /// `</tag>` for one of [`TAG_FENCES`].
    Tag(&'static str),
}

/// An opening tag-fence line: `<source>` or `<source>python` (a language word, no blanks).
fn tag_fence_open(line: &[u8]) -> Option<&'static str> {
    let t = trim_end_blank(line).strip_prefix(b"<")?;
    TAG_FENCES.iter().copied().find(|tag| {
        t.strip_prefix(tag.as_bytes())
            .and_then(|r| r.strip_prefix(b">"))
            .is_some_and(|info| {
                info.iter()
                    .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'_' | b'#'))
            })
    })
}

/// The closing line of a tag fence: `</source>`.
fn is_tag_fence_close(line: &[u8], tag: &str) -> bool {
    trim_end_blank(line)
        .strip_prefix(b"</")
        .and_then(|r| r.strip_prefix(tag.as_bytes()))
        .is_some_and(|r| r == b">")
}

/// Is the line at `from` an opening tag fence?
fn tag_fence_at(b: &[u8], from: usize, eos: bool) -> Look<()> {
    match line_at(b, from, eos) {
        Some((line, _)) if line.len() > MAX_LOOKAHEAD_LINE => Look::No,
        Some((line, _)) => match tag_fence_open(strip_cr(line)) {
            Some(_) => Look::Yes(()),
            None => Look::No,
        },
        None => {
            let rest = &b[from.min(b.len())..];
            if could_be_tag_fence(rest) {
                Look::More
            } else {
                Look::No
            }
        }
    }
}

/// Could these bytes (no newline yet) grow into an opening or closing tag-fence line?
fn could_be_tag_fence(p: &[u8]) -> bool {
    if p.len() > MAX_LOOKAHEAD_LINE {
        return false;
    }
    let Some(t) = p.strip_prefix(b"<") else {
        return p.is_empty();
    };
    let t = t.strip_prefix(b"/").unwrap_or(t);
    TAG_FENCES.iter().any(|tag| {
        let tag = tag.as_bytes();
        if t.len() <= tag.len() {
            tag.starts_with(t)
        } else {
            t.starts_with(tag) && t[tag.len()] == b'>'
        }
    })
}

/// Is the line at `from` an opening fence of either kind?
fn any_fence_at(b: &[u8], from: usize, eos: bool) -> Look<()> {
    match (fence_at(b, from, eos), tag_fence_at(b, from, eos)) {
        (Look::Yes(_), _) | (_, Look::Yes(())) => Look::Yes(()),
        (Look::More, _) | (_, Look::More) => Look::More,
        _ => Look::No,
    }
}

/// POSIX word splitting (quotes and backslashes, no expansion). `Err` on an unclosed quote.
/// Each word comes with whether any part of it was quoted.
fn split_words(s: &str) -> Result<Vec<(String, bool)>, ()> {
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
fn path_word(w: &(String, bool)) -> bool {
    if w.1 {
        !w.0.is_empty() && !w.0.contains('\n')
    } else {
        path_like(&w.0)
    }
}

/// What a verb line turned out to be.
#[derive(Debug, PartialEq)]
enum VerbParse {
    Action(Action),
    /// A sentence or the protocol's own documentation.
    Prose,
    /// Clearly an attempted action that does not parse.
    Bad,
}

/// What an `EDIT`/`CREATE` line turned out to be.
#[derive(Debug, PartialEq)]
enum HeaderParse {
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
fn split_verb(line: &str) -> Option<(&'static str, &str)> {
    let v = VERBS.iter().find(|v| line.starts_with(**v))?;
    let rest = &line[v.len()..];
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    Some((v, rest.trim_matches([' ', '\t'])))
}

/// The decision for a lone path argument shared by path verbs.
fn one_path(rest: &str) -> Result<String, VerbParse> {
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

fn parse_header(line: &str) -> Option<HeaderParse> {
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
fn parse_verb_line(line: &str) -> VerbParse {
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

fn parse_read(rest: &str) -> VerbParse {
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

fn glob_like(w: &str) -> bool {
    !w.is_empty()
        && w.bytes().all(|c| {
            is_path_byte(c) || matches!(c, b'*' | b'?' | b'[' | b']' | b'{' | b'}' | b'!' | b',')
        })
        && !w.ends_with(['.', ','])
        && !is_stopword(w)
        && !PLACEHOLDERS.contains(&w)
}

fn parse_glob(rest: &str) -> VerbParse {
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

fn parse_grep(rest: &str) -> VerbParse {
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

fn parse_run(rest: &str) -> VerbParse {
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
    if rest.split_whitespace().filter(|w| is_stopword(w)).count() >= 2
        || rest.split_whitespace().skip(1).any(is_function_word)
    {
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
fn is_function_word(w: &str) -> bool {
    const WORDS: &[&str] = &[
        "the", "a", "an", "to", "and", "it", "its", "this", "that", "these", "those", "you",
        "your", "we", "our", "will", "should", "would", "could", "is", "are", "be", "if", "so",
        "then", "of", "with", "for",
    ];
    w.len() <= 6 && WORDS.iter().any(|s| s.eq_ignore_ascii_case(w))
}

fn program_like(w: &str) -> bool {
    !w.is_empty()
        && w.bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'/' | b'+' | b'-'))
        && !w.starts_with('-')
        && !w.ends_with(['.', ':'])
        && !is_stopword(w)
        && !PLACEHOLDERS.contains(&w)
}

fn parse_move(rest: &str) -> VerbParse {
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

fn parse_done(rest: &str) -> VerbParse {
    let first = rest.split_whitespace().next().unwrap_or("");
    if first == "summary" {
        return VerbParse::Prose;
    }
    VerbParse::Action(Action::Done {
        summary: rest.to_owned(),
    })
}

/// Emits a text-protocol proposal with the next index.
fn emit(action: Action, repairs: Vec<RepairKind>, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) {
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

fn fail(kind: FailureKind, raw: String, out: &mut Vec<Event>) {
    out.push(Event::Failure {
        index: None,
        kind,
        raw,
    });
}

/// A single verb line (everything but `EDIT`/`CREATE`), held until its newline.
#[derive(Debug)]
struct VerbLine {
    line: String,
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

/// Where an edit group got its path from.
#[derive(Debug)]
enum Header {
    None,
    /// A help line echoed back: the group is documentation and ends as text.
    Doc,
    Verb {
        create: bool,
        path: String,
    },
    Fence(String),
    PathLine(String),
    /// What the group consumed turned out to be prose (a code fence holding a file name with
    /// no block after it): it ends as text.
    Prose,
}

/// The state of an edit group, one line at a time.
#[derive(Debug)]
enum GroupState {
    /// The first line is an `EDIT`/`CREATE` header.
    HeaderLine,
    /// The first line is an aider-style path line.
    PathLine,
    /// The first line is an opening fence.
    FenceLine,
    /// At the start of a line, outside a block: a SEARCH marker, a fence or a header may come.
    Between,
    /// Inside the SEARCH part.
    Search { search: String },
    /// Inside the REPLACE part.
    Replace { search: String, replace: String },
    /// After a divider line inside the REPLACE part. Aider ends a REPLACE part at a divider as
    /// well as at a REPLACE marker (`find_original_update_blocks` in
    /// `aider/coders/editblock_coder.py`), so the divider may be the block's end, or content
    /// (a setext heading, a conflict-looking file). A REPLACE marker decides for content; a
    /// SEARCH marker or the end of the stream decide for the end. `bits` are
    /// the divider's spelling repairs; `after` holds the whole lines since it, not yet in
    /// `raw`.
    ReplaceOrEnd {
        search: String,
        replace: String,
        divider: String,
        bits: u8,
        after: String,
    },
    /// A language fence whose first line is a lone path: the fence may only hold the file name
    /// for the block after it (aider's `find_filename` looks back through fence lines; Deepseek
    /// Coder writes "```python", "a.py", "```", "```python", then the marker). `closed` once
    /// the fence's closing line came; the next fence line is then `pending_fence`.
    FencedPath { path: String, closed: bool },
    /// A code fence without markers: lines pass through as text to the closing fence.
    /// `mid_line` is true when the current line is known not to be the closing fence.
    PassThrough { mid_line: bool },
}

/// An `EDIT`/`CREATE` group, a fenced block or a headerless block: one or more
/// SEARCH/REPLACE blocks for one file.
#[derive(Debug)]
struct Group {
    state: GroupState,
    header: Header,
    /// Every line consumed into the group, for a failure's `raw`.
    raw: String,
    /// The current line, without its newline, while it arrives.
    line: String,
    /// Where the current line began in the current input, when it began there.
    line_from: Option<usize>,
    /// An opening fence line between blocks, held until the next line shows a block follows.
    pending_fence: Option<(String, Fence)>,
    /// Whole lines the group consumed but does not own, handed back to the scanner as prose
    /// when it ends (the lines after a divider that turned out to close a REPLACE part).
    handback: String,
    repairs: Vec<RepairKind>,
    blocks: Vec<Block>,
    /// The fence the current block sits in, until its closing line.
    fence: Option<Fence>,
    /// The opening fence named a programming language (its code passes through if no block).
    language_fence: bool,
    crlf: bool,
    /// Whether the line being handled ended in a newline (false only at end of stream).
    eol: bool,
}

/// What handling one line decided.
enum Flow {
    Continue,
    /// The group is over; the current line belongs to it (`true`) or is lookahead (`false`).
    End {
        line_consumed: bool,
    },
    /// Not an action at all: re-read everything consumed as prose.
    Reject,
    /// A language fence whose first line is not a block: it is code, passed through as text.
    PassThrough,
}

impl Group {
    fn new(state: GroupState) -> Group {
        Group {
            state,
            header: Header::None,
            raw: String::with_capacity(256),
            line: String::new(),
            line_from: Some(0),
            pending_fence: None,
            handback: String::new(),
            repairs: Vec::new(),
            blocks: Vec::new(),
            fence: None,
            language_fence: false,
            crlf: false,
            eol: true,
        }
    }

    fn take_line_into_raw(&mut self, line: &str) {
        self.raw.push_str(line);
        if self.eol {
            self.raw.push('\n');
        }
    }

    /// Handles one whole line (without its newline).
    fn on_line(&mut self, line: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Flow {
        let bytes = strip_cr(line.as_bytes());
        let cr = bytes.len() < line.len();
        // `bytes` is `line` minus a final CR, so the cut is on a char boundary.
        let content = &line[..bytes.len()];
        match &mut self.state {
            GroupState::HeaderLine => match parse_header(content.trim_end_matches([' ', '\t'])) {
                Some(HeaderParse::Header { create, path }) => {
                    self.header = Header::Verb { create, path };
                    self.crlf |= cr;
                    self.take_line_into_raw(line);
                    self.state = GroupState::Between;
                    Flow::Continue
                }
                Some(HeaderParse::Doc) => {
                    ctx.last_edit_path = None;
                    self.header = Header::Doc;
                    self.take_line_into_raw(line);
                    self.state = GroupState::Between;
                    Flow::Continue
                }
                Some(HeaderParse::Bad) => {
                    // A broken header must not let later blocks inherit an older path.
                    ctx.last_edit_path = None;
                    self.take_line_into_raw(line);
                    fail(FailureKind::BadVerbLine, std::mem::take(&mut self.raw), out);
                    Flow::End {
                        line_consumed: true,
                    }
                }
                _ => {
                    ctx.last_edit_path = None;
                    self.take_line_into_raw(line);
                    Flow::Reject
                }
            },
            GroupState::PathLine => {
                self.header = Header::PathLine(strip_decoration(content).to_owned());
                self.repairs.push(RepairKind::PathBeforeFence);
                self.crlf |= cr;
                self.take_line_into_raw(line);
                self.state = GroupState::Between;
                Flow::Continue
            }
            GroupState::FenceLine if tag_fence_open(bytes).is_some() => {
                self.fence = tag_fence_open(bytes).map(Fence::Tag);
                self.repairs.push(RepairKind::FencedBlock);
                self.crlf |= cr;
                self.take_line_into_raw(line);
                self.state = GroupState::Between;
                Flow::Continue
            }
            GroupState::FenceLine => {
                let info = fence_info(bytes).unwrap_or("");
                if strong_path(info) {
                    self.header = Header::Fence(info.to_owned());
                    self.repairs.push(RepairKind::PathOnFence);
                } else {
                    self.language_fence =
                        !TRANSPARENT_FENCES.contains(&info.to_ascii_lowercase().as_str());
                }
                self.fence = Some(Fence::Ticks);
                self.repairs.push(RepairKind::FencedBlock);
                self.crlf |= cr;
                self.take_line_into_raw(line);
                self.state = GroupState::Between;
                Flow::Continue
            }
            GroupState::Between => self.between(line, content, cr),
            GroupState::Search { search } => match classify(bytes) {
                Some((Marker::Divider, r)) => {
                    push_marker_repairs(r, &mut self.repairs);
                    let search = std::mem::take(search);
                    let replace = String::with_capacity(search.len() + 32);
                    self.state = GroupState::Replace { search, replace };
                    self.crlf |= cr;
                    self.take_line_into_raw(line);
                    Flow::Continue
                }
                Some((Marker::Replace, _)) => {
                    self.take_line_into_raw(line);
                    ctx.last_edit_path = None;
                    let raw = std::mem::take(&mut self.raw);
                    if matches!(self.header, Header::Doc) {
                        push_text(out, &raw);
                    } else {
                        fail(FailureKind::MissingDivider, raw, out);
                    }
                    Flow::End {
                        line_consumed: true,
                    }
                }
                _ => {
                    search.push_str(content);
                    search.push('\n');
                    self.crlf |= cr;
                    self.take_line_into_raw(line);
                    Flow::Continue
                }
            },
            GroupState::Replace { search, replace } => {
                match classify(bytes) {
                    Some((Marker::Divider, bits)) => {
                        self.state = GroupState::ReplaceOrEnd {
                            search: std::mem::take(search),
                            replace: std::mem::take(replace),
                            divider: line.to_owned(),
                            bits,
                            after: String::new(),
                        };
                        // The divider belongs to the group whichever way it is decided.
                        self.crlf |= cr;
                        self.take_line_into_raw(line);
                        return Flow::Continue;
                    }
                    Some((Marker::Replace, r)) => {
                        push_marker_repairs(r, &mut self.repairs);
                        let block = Block {
                            search: std::mem::take(search),
                            replace: std::mem::take(replace),
                        };
                        self.blocks.push(block);
                        self.state = GroupState::Between;
                    }
                    _ => match content.strip_suffix(">>>>>>> REPLACE") {
                        // The last line ran into the marker: `x = 1>>>>>>> REPLACE`.
                        Some(body) if closes_run_together(content) => {
                            replace.push_str(body);
                            replace.push('\n');
                            self.repairs.push(RepairKind::MissingFinalNewline);
                            let block = Block {
                                search: std::mem::take(search),
                                replace: std::mem::take(replace),
                            };
                            self.blocks.push(block);
                            self.state = GroupState::Between;
                        }
                        _ => {
                            replace.push_str(content);
                            replace.push('\n');
                        }
                    },
                }
                self.crlf |= cr;
                self.take_line_into_raw(line);
                Flow::Continue
            }
            GroupState::FencedPath { path, closed } => {
                if !*closed {
                    if is_closing_fence(bytes) {
                        *closed = true;
                        // That fence wrapped the file name, not a block.
                        self.fence = None;
                        self.repairs.retain(|r| *r != RepairKind::FencedBlock);
                        self.crlf |= cr;
                        self.take_line_into_raw(line);
                        return Flow::Continue;
                    }
                    // More code in the fence: it was code all along.
                    return Flow::PassThrough;
                }
                let search = matches!(classify(bytes), Some((Marker::Search, _)));
                match self.pending_fence.take() {
                    None => {
                        let kind = match fence_info(bytes) {
                            Some(i) if !strong_path(i) => Some(Fence::Ticks),
                            Some(_) => None,
                            None => tag_fence_open(bytes).map(Fence::Tag),
                        };
                        if let Some(kind) = kind {
                            self.pending_fence = Some((line.to_owned(), kind));
                            return Flow::Continue;
                        }
                    }
                    Some((f, kind)) if search => {
                        let path = std::mem::take(path);
                        self.header = Header::PathLine(path);
                        self.repairs.push(RepairKind::PathBeforeFence);
                        self.language_fence = false;
                        self.state = GroupState::Between;
                        self.pending_fence = Some((f, kind));
                        return self.between(line, content, cr);
                    }
                    Some(pending) => self.pending_fence = Some(pending),
                }
                // No block follows: the fence and its file name were prose.
                push_text(out, &std::mem::take(&mut self.raw));
                self.header = Header::Prose;
                self.state = GroupState::Between;
                Flow::End {
                    line_consumed: false,
                }
            }
            GroupState::ReplaceOrEnd { after, .. } => {
                let closes = matches!(classify(bytes), Some((Marker::Replace, _)))
                    || closes_run_together(content);
                if closes {
                    // The divider and the lines after it were content.
                    self.fold_divider();
                    return self.on_line(line, ctx, out);
                }
                // Only structure ends the block here: a fence line, a header or prose can all be
                // REPLACE content (a README's setext heading followed by a code fence).
                let ends = matches!(classify(bytes), Some((Marker::Search, _)));
                if !ends {
                    after.push_str(line);
                    if self.eol {
                        after.push('\n');
                    }
                    return Flow::Continue;
                }
                let after = self.end_at_divider();
                if after.is_empty() {
                    // Nothing between: the next block follows, as after a REPLACE marker.
                    return self.between(line, content, cr);
                }
                self.handback = after;
                Flow::End {
                    line_consumed: false,
                }
            }
            GroupState::PassThrough { .. } => Flow::Continue,
        }
    }

    /// `ReplaceOrEnd` → `Replace`: the divider line and the lines after it are REPLACE content.
    fn fold_divider(&mut self) {
        let state = std::mem::replace(&mut self.state, GroupState::Between);
        let GroupState::ReplaceOrEnd {
            search,
            mut replace,
            divider,
            after,
            ..
        } = state
        else {
            self.state = state;
            return;
        };
        for l in std::iter::once(divider.as_str()).chain(after.split_terminator('\n')) {
            let c = strip_cr(l.as_bytes());
            self.crlf |= c.len() < l.len();
            // `c` is `l` minus a final CR, so the cut is on a char boundary.
            replace.push_str(&l[..c.len()]);
            replace.push('\n');
        }
        self.raw.push_str(&after);
        self.state = GroupState::Replace { search, replace };
    }

    /// `ReplaceOrEnd` → `Between`: the divider closed the block. Returns the lines after it,
    /// which are not the group's.
    fn end_at_divider(&mut self) -> String {
        let state = std::mem::replace(&mut self.state, GroupState::Between);
        let GroupState::ReplaceOrEnd {
            search,
            replace,
            bits,
            after,
            ..
        } = state
        else {
            self.state = state;
            return String::new();
        };
        push_marker_repairs(bits, &mut self.repairs);
        self.repairs.push(RepairKind::DividerClosesReplace);
        self.blocks.push(Block { search, replace });
        after
    }

    /// A line between blocks (or before the first one).
    fn between(&mut self, line: &str, content: &str, cr: bool) -> Flow {
        let bytes = content.as_bytes();
        let marker = classify(bytes);
        if self.language_fence
            && self.blocks.is_empty()
            && matches!(self.header, Header::None)
            && !matches!(marker, Some((Marker::Search, _)))
        {
            if let Some(path) = lone_path(content) {
                self.state = GroupState::FencedPath {
                    path: path.to_owned(),
                    closed: false,
                };
                self.crlf |= cr;
                self.take_line_into_raw(line);
                return Flow::Continue;
            }
            return Flow::PassThrough;
        }
        if let Some((Marker::Search, r)) = marker {
            if let Some((f, kind)) = self.pending_fence.take() {
                self.fence = Some(kind);
                self.repairs.push(RepairKind::FencedBlock);
                self.take_line_into_raw(&f);
            }
            push_marker_repairs(r, &mut self.repairs);
            self.crlf |= cr;
            self.take_line_into_raw(line);
            self.state = GroupState::Search {
                search: String::new(),
            };
            return Flow::Continue;
        }
        if let Some((f, _)) = &mut self.pending_fence {
            // After a path line, a bare fence (closing the path's own fence) may be followed
            // by the block's opening fence: aider looks back through both.
            let second = match fence_info(bytes) {
                Some(i) if !strong_path(i) => Some(Fence::Ticks),
                Some(_) => None,
                None => tag_fence_open(bytes).map(Fence::Tag),
            };
            if let Some(kind) = second
                && matches!(self.header, Header::PathLine(_))
                && self.blocks.is_empty()
                && !f.contains('\n')
                && is_bare_fence(f.as_bytes())
            {
                f.push('\n');
                f.push_str(line);
                self.pending_fence = self.pending_fence.take().map(|(f, _)| (f, kind));
                return Flow::Continue;
            }
            return Flow::End {
                line_consumed: false,
            };
        }
        if self.fence.is_some_and(|f| closes_fence(bytes, f)) {
            self.fence = None;
            self.take_line_into_raw(line);
            return Flow::Continue;
        }
        if self.fence.is_none() {
            let kind = match fence_info(bytes) {
                Some(i) if !strong_path(i) => Some(Fence::Ticks),
                Some(_) => None,
                None => tag_fence_open(bytes).map(Fence::Tag),
            };
            if let Some(kind) = kind {
                self.pending_fence = Some((line.to_owned(), kind));
                return Flow::Continue;
            }
        }
        let before_first = self.blocks.is_empty();
        if before_first
            && matches!(self.header, Header::Verb { .. })
            && bytes.iter().all(|&c| c == b' ' || c == b'\t')
        {
            self.take_line_into_raw(line);
            return Flow::Continue;
        }
        // Inside a fence that carries no path yet, the header may come first.
        let header = if before_first && self.fence.is_some() && matches!(self.header, Header::None)
        {
            parse_header(content.trim_end_matches([' ', '\t']))
        } else {
            None
        };
        if let Some(HeaderParse::Header { create, path }) = header {
            self.header = Header::Verb { create, path };
            self.crlf |= cr;
            self.take_line_into_raw(line);
            return Flow::Continue;
        }
        Flow::End {
            line_consumed: false,
        }
    }

    /// Whether a partial line in `Between` can still continue the group.
    fn could_continue(&self, partial: &[u8]) -> bool {
        if self.pending_fence.is_some() {
            return could_be_search_marker(partial);
        }
        if partial.len() > MAX_LOOKAHEAD_LINE {
            return false;
        }
        could_be_search_marker(partial)
            || partial.first().is_none_or(|&c| c == b'`')
            || could_be_tag_fence(partial)
            || (self.blocks.is_empty()
                && (partial.iter().all(|&c| matches!(c, b' ' | b'\t' | b'\r'))
                    || b"EDIT".starts_with(&partial[..partial.len().min(4)])
                    || b"CREATE".starts_with(&partial[..partial.len().min(6)])
                    || partial.starts_with(b"EDIT ")
                    || partial.starts_with(b"CREATE ")))
    }

    /// Closes the group: a proposal for its blocks, or a failure.
    fn close(&mut self, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) {
        let raw = std::mem::take(&mut self.raw);
        if matches!(self.header, Header::Doc | Header::Prose) {
            push_text(out, &raw);
            return;
        }
        let blocks = std::mem::take(&mut self.blocks);
        let mut repairs = std::mem::take(&mut self.repairs);
        if self.crlf {
            repairs.push(RepairKind::Crlf);
        }
        if blocks.is_empty() {
            fail(FailureKind::BadBlockCount, raw, out);
            return;
        }
        let header = std::mem::replace(&mut self.header, Header::None);
        let (path, verb) = match header {
            Header::Verb { create, path } => (path, Some(create)),
            Header::Fence(p) | Header::PathLine(p) => (p, None),
            Header::Doc | Header::Prose => return,
            Header::None => match ctx.last_edit_path.clone() {
                Some(p) => {
                    repairs.push(RepairKind::InheritedPath);
                    (p, None)
                }
                None => {
                    fail(FailureKind::MissingPath, raw, out);
                    return;
                }
            },
        };
        // Only a `CREATE` header yields `create`: an empty SEARCH part anywhere else is an
        // append (or a new file), never a whole-file overwrite.
        let action = match verb {
            Some(true) if blocks.len() > 1 => {
                fail(FailureKind::BadBlockCount, raw, out);
                return;
            }
            Some(true) if blocks[0].search.is_empty() => Action::Create {
                path: path.clone(),
                content: blocks_content(blocks),
            },
            Some(true) => {
                repairs.push(RepairKind::EditCreateSwap);
                Action::Edit {
                    path: path.clone(),
                    blocks,
                }
            }
            _ => {
                let empty = blocks.iter().filter(|b| b.search.is_empty());
                repairs.extend(empty.map(|_| RepairKind::EmptySearchEdit));
                Action::Edit {
                    path: path.clone(),
                    blocks,
                }
            }
        };
        ctx.last_edit_path = Some(path);
        emit(action, repairs, ctx, out);
    }

    /// Text consumed by a language fence that turned out to be plain code.
    fn become_pass_through(&mut self, line: &str, out: &mut Vec<Event>) {
        let mut t = std::mem::take(&mut self.raw);
        t.push_str(line);
        if self.eol {
            t.push('\n');
        }
        push_text(out, &t);
        self.state = GroupState::PassThrough { mid_line: false };
    }

    /// Feeds code-fence contents through as text; `Some(consumed)` when the fence closed.
    fn pass_through(&mut self, s: &str, i: &mut usize, out: &mut Vec<Event>) -> Option<usize> {
        let GroupState::PassThrough { mid_line } = &mut self.state else {
            return None;
        };
        while *i < s.len() {
            let rest = &s[*i..];
            let nl = rest.bytes().position(|c| c == b'\n');
            if *mid_line {
                let end = nl.map_or(rest.len(), |k| k + 1);
                push_text(out, &rest[..end]);
                *i += end;
                *mid_line = nl.is_none();
                continue;
            }
            match nl {
                Some(k) => {
                    self.line.push_str(&rest[..k]);
                    let line = std::mem::take(&mut self.line);
                    push_text(out, &line);
                    push_text(out, "\n");
                    *i += k + 1;
                    if is_closing_fence(line.as_bytes()) {
                        return Some(*i);
                    }
                }
                None => {
                    self.line.push_str(rest);
                    *i = s.len();
                    if !could_be_closing_fence(self.line.as_bytes()) {
                        let line = std::mem::take(&mut self.line);
                        push_text(out, &line);
                        *mid_line = true;
                    }
                }
            }
        }
        None
    }
}

/// A REPLACE part's last line run into its marker: `x = 1>>>>>>> REPLACE`.
fn closes_run_together(content: &str) -> bool {
    content
        .strip_suffix(">>>>>>> REPLACE")
        .is_some_and(|body| !body.is_empty() && !body.ends_with(['>', ' ']))
}

/// Does `line` close a block's `fence`?
fn closes_fence(line: &[u8], fence: Fence) -> bool {
    match fence {
        Fence::Ticks => is_closing_fence(line),
        Fence::Tag(tag) => is_tag_fence_close(line, tag),
    }
}

/// The content of a `CREATE`: the replace part of its one block.
fn blocks_content(mut blocks: Vec<Block>) -> String {
    blocks.pop().map(|b| b.replace).unwrap_or_default()
}

impl Body for Group {
    fn feed(&mut self, s: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Step {
        let mut i = 0;
        if self.line.is_empty() && self.line_from.is_none() {
            self.line_from = Some(0);
        }
        while i < s.len() {
            if matches!(self.state, GroupState::PassThrough { .. }) {
                match self.pass_through(s, &mut i, out) {
                    Some(consumed) => return Step::Done { consumed },
                    None => return Step::NeedMore,
                }
            }
            let rest = &s[i..];
            let Some(k) = rest.bytes().position(|c| c == b'\n') else {
                self.line.push_str(rest);
                i = s.len();
                if self.held_len() + self.line.len() > MAX_HELD {
                    let mut raw = self.take_held();
                    raw.push_str(&std::mem::take(&mut self.line));
                    fail(FailureKind::TooLong, raw, out);
                    return Step::Done { consumed: s.len() };
                }
                if matches!(self.state, GroupState::Between)
                    && self.language_fence
                    && self.blocks.is_empty()
                    && matches!(self.header, Header::None)
                {
                    if !could_be_search_marker(self.line.as_bytes())
                        && !could_be_path_line(self.line.as_bytes())
                    {
                        // A language fence whose first line cannot be a marker: code.
                        push_text(out, &std::mem::take(&mut self.raw));
                        // The line may still be the closing fence: keep it until it is known.
                        let mid_line = !could_be_closing_fence(self.line.as_bytes());
                        if mid_line {
                            push_text(out, &std::mem::take(&mut self.line));
                        }
                        self.state = GroupState::PassThrough { mid_line };
                    }
                    continue;
                }
                if matches!(self.state, GroupState::Between)
                    && !self.could_continue(self.line.as_bytes())
                {
                    // The group is over before this partial line: hand it back.
                    self.close(ctx, out);
                    return self.unread(s, i);
                }
                continue;
            };
            let line_from = self.line_from;
            // A line that arrived whole is borrowed from the input; only a line assembled
            // across feeds is owned.
            let line: std::borrow::Cow<'_, str> = if self.line.is_empty() {
                std::borrow::Cow::Borrowed(&rest[..k])
            } else {
                let mut l = std::mem::take(&mut self.line);
                l.push_str(&rest[..k]);
                std::borrow::Cow::Owned(l)
            };
            i += k + 1;
            let flow = self.on_line(&line, ctx, out);
            self.line_from = Some(i);
            match flow {
                Flow::Continue if self.held_len() > MAX_HELD => {
                    // Past the cap the group is given up; what it held goes out in the failure
                    // and the rest of the stream is prose again.
                    let raw = self.take_held();
                    fail(FailureKind::TooLong, raw, out);
                    return Step::Done { consumed: i };
                }
                Flow::Continue => {}
                Flow::PassThrough => {
                    self.become_pass_through(&line, out);
                    if is_closing_fence(line.as_bytes()) {
                        return Step::Done { consumed: i };
                    }
                }
                Flow::End {
                    line_consumed: true,
                } => {
                    return Step::Done { consumed: i };
                }
                Flow::End {
                    line_consumed: false,
                } => {
                    self.close(ctx, out);
                    let mut unread = self.take_lookahead();
                    match (unread.as_mut(), line_from) {
                        (None, Some(from)) => return Step::Done { consumed: from },
                        (Some(u), _) => {
                            u.push_str(&line);
                            u.push('\n');
                        }
                        (None, None) => {
                            let mut u = line.into_owned();
                            u.push('\n');
                            unread = Some(u);
                        }
                    }
                    return Step::Ended {
                        held: unread.unwrap_or_default(),
                        line_start: true,
                        rest: s.len() - i,
                    };
                }
                Flow::Reject => {
                    return Step::Reject {
                        held: std::mem::take(&mut self.raw),
                        rest: s.len() - i,
                    };
                }
            }
        }
        // A line still arriving began in an earlier input from now on.
        self.line_from = None;
        Step::NeedMore
    }

    fn finish(&mut self, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Option<String> {
        if let GroupState::PassThrough { .. } = self.state {
            push_text(out, &std::mem::take(&mut self.line));
            return None;
        }
        let mut back = None;
        self.eol = false;
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            match self.on_line(&line, ctx, out) {
                Flow::Continue => {}
                Flow::End {
                    line_consumed: true,
                } => return None,
                Flow::PassThrough => {
                    self.become_pass_through(&line, out);
                    return None;
                }
                Flow::End {
                    line_consumed: false,
                } => back = Some(line),
                Flow::Reject => {
                    push_text(out, &std::mem::take(&mut self.raw));
                    return None;
                }
            }
        }
        if matches!(self.state, GroupState::ReplaceOrEnd { .. }) {
            // The stream ended after a divider with no REPLACE marker: it closed the block.
            self.handback = self.end_at_divider();
        }
        if let Some(mut u) = self.take_lookahead() {
            if let Some(b) = back.take() {
                u.push_str(&b);
            }
            back = Some(u);
        }
        match std::mem::replace(&mut self.state, GroupState::Between) {
            GroupState::Search { .. } | GroupState::Replace { .. } => {
                let mut raw = std::mem::take(&mut self.raw);
                if let Some(b) = back.take() {
                    raw.push_str(&b);
                }
                ctx.last_edit_path = None;
                if matches!(self.header, Header::Doc) {
                    push_text(out, &raw);
                } else {
                    fail(FailureKind::TruncatedBlock, raw, out);
                }
                None
            }
            GroupState::HeaderLine | GroupState::PathLine | GroupState::FenceLine => {
                let mut raw = std::mem::take(&mut self.raw);
                if let Some(b) = back.take() {
                    raw.push_str(&b);
                }
                push_text(out, &raw);
                None
            }
            GroupState::Between => {
                if self.language_fence
                    && self.blocks.is_empty()
                    && matches!(self.header, Header::None)
                {
                    // A language fence that ended before any line: it was code.
                    push_text(out, &std::mem::take(&mut self.raw));
                    return back;
                }
                self.close(ctx, out);
                back
            }
            GroupState::FencedPath { closed, .. } => {
                // The stream ended before a block: the fence and its file name were prose.
                // What follows a closed fence is read again; an open fence's rest is code.
                push_text(out, &std::mem::take(&mut self.raw));
                if closed {
                    back
                } else {
                    if let Some(b) = back {
                        push_text(out, &b);
                    }
                    None
                }
            }
            // Decided above: the divider closed the block.
            GroupState::ReplaceOrEnd { .. } | GroupState::PassThrough { .. } => None,
        }
    }
}

impl Group {
    /// Whole lines held past the group's end (a pending fence line, or the lines after a
    /// divider that closed a REPLACE part), each with its newline, to be read again as prose.
    fn take_lookahead(&mut self) -> Option<String> {
        let mut u = std::mem::take(&mut self.handback);
        if let Some((f, _)) = self.pending_fence.take() {
            u.push_str(&f);
            u.push('\n');
        }
        (!u.is_empty()).then_some(u)
    }

    /// Bytes held: `raw` plus the lines held after a divider in the REPLACE part.
    fn held_len(&self) -> usize {
        match &self.state {
            GroupState::ReplaceOrEnd { after, .. } => self.raw.len() + after.len(),
            _ => self.raw.len(),
        }
    }

    /// Everything held, for a `too_long` failure.
    fn take_held(&mut self) -> String {
        let mut raw = std::mem::take(&mut self.raw);
        if let GroupState::ReplaceOrEnd { after, .. } = &mut self.state {
            raw.push_str(&std::mem::take(after));
        }
        raw
    }

    /// Ends the group before the partial line in `self.line` (and any pending fence line).
    fn unread(&mut self, s: &str, i: usize) -> Step {
        let partial = std::mem::take(&mut self.line);
        match (self.take_lookahead(), self.line_from) {
            (None, Some(from)) => Step::Done { consumed: from },
            (Some(mut f), _) => {
                f.push_str(&partial);
                Step::Ended {
                    held: f,
                    line_start: true,
                    rest: s.len() - i,
                }
            }
            (None, None) => Step::Ended {
                held: partial,
                line_start: true,
                rest: s.len() - i,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_classify_with_their_repairs() {
        assert_eq!(classify(b"<<<<<<< SEARCH"), Some((Marker::Search, 0)));
        assert_eq!(
            classify(b">>>>>>> SEARCH"),
            Some((Marker::Search, R_DIRECTION))
        );
        assert_eq!(
            classify(b"<<<< search  "),
            Some((Marker::Search, R_COUNT | R_CASE | R_TRAILING))
        );
        assert_eq!(
            classify(b"<<<<<<<SEARCH"),
            Some((Marker::Search, R_RUN_TOGETHER))
        );
        assert_eq!(classify(b"====="), Some((Marker::Divider, R_DIVIDER)));
        assert_eq!(classify(b"=="), None);
        assert_eq!(classify(b"<<<<<<<<<< SEARCH"), None);
        assert_eq!(classify(b"<<<<<<< HEAD"), None);
        assert_eq!(classify(b"<<<<<<<  SEARCH"), None);
        assert_eq!(
            classify(b"<<<<<<< SEARCH>"),
            Some((Marker::Search, R_ANGLE))
        );
        assert_eq!(classify(b"<<<<<<< SEARCH >"), None);
        assert_eq!(classify(b">>>>>>> REPLACE>"), None);
    }

    #[test]
    fn tag_fences_open_and_close() {
        assert_eq!(tag_fence_open(b"<source>"), Some("source"));
        assert_eq!(tag_fence_open(b"<source>python  "), Some("source"));
        assert_eq!(tag_fence_open(b"<sourcecode>"), Some("sourcecode"));
        assert_eq!(tag_fence_open(b"<code>x</code>"), None);
        assert_eq!(tag_fence_open(b"<div>"), None);
        assert!(is_tag_fence_close(b"</pre> ", "pre"));
        assert!(!is_tag_fence_close(b"</pre>", "code"));
        assert!(could_be_tag_fence(b"<sou"));
        assert!(could_be_tag_fence(b"</codeb"));
        assert!(could_be_tag_fence(b"<source>py"));
        assert!(!could_be_tag_fence(b"<tool_call>"));
    }

    #[test]
    fn search_marker_prefixes() {
        assert!(could_be_search_marker(b"<<<"));
        assert!(could_be_search_marker(b"<<<<<<< SEA"));
        assert!(could_be_search_marker(b"<<<<<<< search "));
        assert!(could_be_search_marker(b"<<<<<<< SEARCH>"));
        assert!(!could_be_search_marker(b"<<<<<<< HEAD"));
        assert!(!could_be_search_marker(b"<p>"));
    }

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
