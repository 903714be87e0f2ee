//! Line recognisers of the text protocol: SEARCH/REPLACE markers and dividers with the
//! spellings they repair, code fences (backticks and aider's tag fences), and [`Look`], the
//! three-valued answer about a line that may not have arrived whole.

use crate::event::RepairKind;

/// The longest first line (path line, fence line, marker line) the detector will wait for.
pub(super) const MAX_LOOKAHEAD_LINE: usize = 512;

/// Fence info strings whose contents are scanned as usual rather than passed through as code.
pub(super) const TRANSPARENT_FENCES: &[&str] = &[
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

/// A three-valued answer about a line that may not have arrived whole.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Look<T> {
    No,
    More,
    Yes(T),
}

/// The line of `b` starting at `from`: `(line without its newline, index after the newline)`,
/// or `None` when the newline has not arrived (at end of stream the rest is the line).
pub(super) fn line_at(b: &[u8], from: usize, eos: bool) -> Option<(&[u8], usize)> {
    let rest = b.get(from..)?;
    match rest.iter().position(|&c| c == b'\n') {
        Some(k) => Some((&rest[..k], from + k + 1)),
        None if eos => Some((rest, b.len())),
        None => None,
    }
}

pub(super) fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Is the line at `from` a SEARCH marker?
pub(super) fn search_marker_at(b: &[u8], from: usize, eos: bool) -> Look<u8> {
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

/// Is the line at `from` blank (spaces, tabs, a CR)? Yields the index after it.
pub(super) fn blank_line_at(b: &[u8], from: usize, eos: bool) -> Look<usize> {
    let blank = |l: &[u8]| l.iter().all(|&c| matches!(c, b' ' | b'\t' | b'\r'));
    match line_at(b, from, eos) {
        // At the end of the stream there is no line left to be blank.
        Some((line, _)) if line.is_empty() && from >= b.len() => Look::No,
        Some((line, after)) if blank(line) && line.len() <= MAX_LOOKAHEAD_LINE => Look::Yes(after),
        Some(_) => Look::No,
        None => {
            let rest = &b[from.min(b.len())..];
            if rest.len() <= MAX_LOOKAHEAD_LINE && blank(rest) {
                Look::More
            } else {
                Look::No
            }
        }
    }
}

/// Is the line at `from` an opening fence? Yields its info string.
pub(super) fn fence_at(b: &[u8], from: usize, eos: bool) -> Look<&str> {
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

/// A backtick fence line with no info string: it may close a fence as well as open one.
pub(super) fn is_bare_fence(line: &[u8]) -> bool {
    fence_info(strip_cr(line)) == Some("")
}

/// Which of the three block lines a line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Marker {
    Search,
    Divider,
    Replace,
}

pub(super) const R_DIRECTION: u8 = 1;

pub(super) const R_COUNT: u8 = 2;

pub(super) const R_CASE: u8 = 4;

pub(super) const R_RUN_TOGETHER: u8 = 8;

pub(super) const R_TRAILING: u8 = 16;

pub(super) const R_DIVIDER: u8 = 32;

pub(super) const R_ANGLE: u8 = 64;

/// Expands a repair bit set into kinds, in a fixed order.
pub(super) fn push_marker_repairs(bits: u8, out: &mut Vec<RepairKind>) {
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
pub(super) fn classify(line: &[u8]) -> Option<(Marker, u8)> {
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

pub(super) fn trim_end_blank(line: &[u8]) -> &[u8] {
    let n = line
        .iter()
        .rposition(|&c| c != b' ' && c != b'\t')
        .map_or(0, |k| k + 1);
    &line[..n]
}

/// Could these bytes (no newline yet) grow into a SEARCH marker line?
pub(super) fn could_be_search_marker(p: &[u8]) -> bool {
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
pub(super) fn fence_info(line: &[u8]) -> Option<&str> {
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
pub(super) fn is_closing_fence(line: &[u8]) -> bool {
    let t = trim_end_blank(strip_cr(line));
    t.len() >= 3 && t.iter().all(|&c| c == b'`')
}

pub(super) fn could_be_closing_fence(p: &[u8]) -> bool {
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
pub(super) const TAG_FENCES: &[&str] = &["source", "code", "pre", "codeblock", "sourcecode"];

/// How an open fence closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fence {
    /// Three or more backticks.
    Ticks,
    /// `</tag>` for one of [`TAG_FENCES`].
    Tag(&'static str),
}

/// An opening tag-fence line: `<source>` or `<source>python` (a language word, no blanks).
pub(super) fn tag_fence_open(line: &[u8]) -> Option<&'static str> {
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
pub(super) fn is_tag_fence_close(line: &[u8], tag: &str) -> bool {
    trim_end_blank(line)
        .strip_prefix(b"</")
        .and_then(|r| r.strip_prefix(tag.as_bytes()))
        .is_some_and(|r| r == b">")
}

/// Is the line at `from` an opening tag fence?
pub(super) fn tag_fence_at(b: &[u8], from: usize, eos: bool) -> Look<()> {
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
pub(super) fn could_be_tag_fence(p: &[u8]) -> bool {
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
pub(super) fn any_fence_at(b: &[u8], from: usize, eos: bool) -> Look<()> {
    match (fence_at(b, from, eos), tag_fence_at(b, from, eos)) {
        (Look::Yes(_), _) | (_, Look::Yes(())) => Look::Yes(()),
        (Look::More, _) | (_, Look::More) => Look::More,
        _ => Look::No,
    }
}

/// Does `line` close a block's `fence`?
pub(super) fn closes_fence(line: &[u8], fence: Fence) -> bool {
    match fence {
        Fence::Ticks => is_closing_fence(line),
        Fence::Tag(tag) => is_tag_fence_close(line, tag),
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
}
