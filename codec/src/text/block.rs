//! The edit-group body: one or more SEARCH/REPLACE blocks for one file (under an `EDIT` /
//! `CREATE` header, an aider-style path line, a fence, or inheriting the last path), decided one
//! line at a time by [`GroupState`].

use super::markers::{
    Fence, MAX_LOOKAHEAD_LINE, Marker, TRANSPARENT_FENCES, classify, closes_fence,
    could_be_closing_fence, could_be_search_marker, could_be_tag_fence, fence_info, is_bare_fence,
    is_closing_fence, push_marker_repairs, strip_cr, tag_fence_open,
};
use super::verbs::{
    HeaderParse, could_be_path_line, emit, fail, parse_header, path_line_name, strip_decoration,
    strong_path,
};
use crate::action::{Action, Block};
use crate::event::{Event, FailureKind, RepairKind};
use crate::format::{Body, Ctx, MAX_HELD, Step, push_text};

/// Where an edit group got its path from.
#[derive(Debug)]
pub(super) enum Header {
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
pub(super) enum GroupState {
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
pub(super) struct Group {
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
    /// Whether the last line of `pending_fence` ended in a newline: a fence line that is the
    /// stream's last, unterminated line gets none back (nothing is added to the input).
    fence_eol: bool,
}

/// What handling one line decided.
pub(super) enum Flow {
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
    pub(super) fn new(state: GroupState) -> Group {
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
            fence_eol: true,
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
                    if matches!(classify(bytes), Some((Marker::Search, _))) {
                        // The path was the fence's first line and the block follows it in the
                        // same fence: aider reads the line before the marker as the file name
                        // (`find_filename`), whichever side of the fence it is on.
                        let path = std::mem::take(path);
                        self.header = Header::PathLine(path);
                        self.repairs.push(RepairKind::PathBeforeFence);
                        self.language_fence = false;
                        self.state = GroupState::Between;
                        return self.between(line, content, cr);
                    }
                    // More code in the fence: it was code all along.
                    return Flow::PassThrough;
                }
                let search = matches!(classify(bytes), Some((Marker::Search, _)));
                match self.pending_fence.take() {
                    None => {
                        let kind = opening_fence(bytes);
                        if let Some(kind) = kind {
                            self.pending_fence = Some((line.to_owned(), kind));
                            self.fence_eol = self.eol;
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
            GroupState::ReplaceOrEnd { after, replace, .. } => {
                let marker = match classify(bytes) {
                    Some((Marker::Replace, r)) => Some(r),
                    _ => None,
                };
                // A divider right before the REPLACE marker, in aider's dialect (a path line or
                // fence, not the protocol's own `EDIT`/`CREATE` header), where it cannot
                // underline a heading: the model closed the block twice. Aider's parser ends the
                // REPLACE part at the divider; so does this, and the marker closes the block.
                // Under an `EDIT` header the same text is the canonical rendering of a
                // replacement whose last line is a divider, so there it stays content.
                if let Some(r) = marker
                    && after.is_empty()
                    && !matches!(self.header, Header::Verb { .. })
                    && !can_underline(replace)
                {
                    self.end_at_divider();
                    // The marker did come: this is its own repair, not a divider in its place.
                    if self.repairs.last() == Some(&RepairKind::DividerClosesReplace) {
                        self.repairs.pop();
                    }
                    self.repairs.push(RepairKind::DividerBeforeReplace);
                    push_marker_repairs(r, &mut self.repairs);
                    self.crlf |= cr;
                    self.take_line_into_raw(line);
                    return Flow::Continue;
                }
                let closes = marker.is_some() || closes_run_together(content);
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
            if let Some(path) = path_line_name(content) {
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
                self.raw.push_str(&f);
                if self.fence_eol {
                    self.raw.push('\n');
                }
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
            let second = opening_fence(bytes);
            if let Some(kind) = second
                && matches!(self.header, Header::PathLine(_))
                && self.blocks.is_empty()
                && !f.contains('\n')
                && is_bare_fence(f.as_bytes())
            {
                f.push('\n');
                f.push_str(line);
                self.pending_fence = self.pending_fence.take().map(|(f, _)| (f, kind));
                self.fence_eol = self.eol;
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
            let kind = opening_fence(bytes);
            if let Some(kind) = kind {
                self.pending_fence = Some((line.to_owned(), kind));
                self.fence_eol = self.eol;
                return Flow::Continue;
            }
        }
        let before_first = self.blocks.is_empty();
        // Blank lines after a header, or the one blank line detection let through after a path
        // line, come before the first block.
        if before_first
            && matches!(self.header, Header::Verb { .. } | Header::PathLine(_))
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
/// Whether a divider line after this REPLACE text could be a setext heading's underline (and
/// so content): only under a line of paragraph text — not blank, not indented as code (four
/// columns or a tab, as CommonMark reads it), and not the start of the part.
fn can_underline(replace: &str) -> bool {
    let Some(last) = replace
        .strip_suffix('\n')
        .map(|r| r.rsplit('\n').next().unwrap_or(r))
    else {
        return false;
    };
    let last = last.strip_suffix('\r').unwrap_or(last);
    !last.trim().is_empty() && !last.starts_with("    ") && !last.starts_with('\t')
}

pub(super) fn closes_run_together(content: &str) -> bool {
    content
        .strip_suffix(">>>>>>> REPLACE")
        .is_some_and(|body| !body.is_empty() && !body.ends_with(['>', ' ']))
}

/// The content of a `CREATE`: the replace part of its one block.
pub(super) fn blocks_content(mut blocks: Vec<Block>) -> String {
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
            if self.fence_eol {
                u.push('\n');
            }
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

/// The fence a line opens, if any: backticks (with at most a language word, not a path on the
/// fence line itself) or an aider-style tag fence such as `<source>`.
fn opening_fence(bytes: &[u8]) -> Option<Fence> {
    match fence_info(bytes) {
        Some(i) if !strong_path(i) => Some(Fence::Ticks),
        Some(_) => None,
        None => tag_fence_open(bytes).map(Fence::Tag),
    }
}
