//! JSON call lists and envelopes written without a special-token wrapper, part of the
//! `bare_json` format:
//!
//! * a list of call objects, `[{"name": "f", "arguments": {…}}, …]`, at the start of a line
//!   (also right after a `</think>` block that opened the reply), as xLAM-2 and Hammer write
//!   it (sources: the xLAM-2 and Hammer 2.x model cards, and vLLM's `xlam` tool parser, which
//!   accepts the bare list, the list in a ```` ```json ```` fence, and the list after
//!   `</think>`);
//! * the envelopes `{"tool_calls": [{…}, …]}` (xLAM-1, and llama.cpp's generic format when
//!   parallel calls are on, each call then carrying an `"id"` after its arguments) and
//!   `{"tool_call": {…}}` (llama.cpp's generic format otherwise). llama.cpp falls back to the
//!   generic format for every chat template without tool syntax, SmolLM2's among them (source:
//!   `common_chat_params_init_generic` and `common_chat_parse_generic` in llama.cpp's
//!   `common/chat.cpp`, whose grammar is one of these two objects or `{"response": "…"}`).
//!
//! Either may sit in a ```` ```json ```` fence (the `fenced_json` repair, as for a bare object).
//! Each element is the call object that `call.rs` reads: `"arguments"` or `"parameters"` (the
//! `parameters_key` repair), arguments as an object or as a JSON-encoded string (the
//! `arguments_as_string` repair), keys in either order, the OpenAI item shape.
//!
//! # Why this is `bare_json`, not a format of its own
//!
//! These are the same constructs as a bare call object — JSON call objects with no wrapper
//! token, recognised by their shape at the start of a line, read by the same call-object
//! parser, with the same repairs and the same ```` ```json ```` fence — differing only in the
//! brackets around the objects. One detector therefore owns every line-start JSON trigger and
//! the fence, so the question "which format owns ```` ```json ```` here" has one answer, the
//! text protocol's contract with [`super::bare_json::fence_detect`] stays one function, and a
//! profile or `--mode bare_json` that names the wrapperless JSON family gets all of it. The
//! triggers themselves stay disjoint from the bare object's: a list opens with `[` (the
//! object with `{`), an envelope's first key is `tool_calls`/`tool_call` (the object's is
//! `name`, `arguments`, `parameters` or `type`).
//!
//! # Never a false call
//!
//! A list of objects is also what plain data looks like (`[{"name": "Alice", "age": 3}]`), so
//! a list or envelope is *uncommitted* until one of its elements starts a call: names a tool
//! the registry declares and has an arguments key (the bare object's rule). Until then nothing
//! is emitted; an element that is not call-shaped, or the end of the list with no call
//! started, hands every byte back as prose. Elements that name an undeclared tool are held as
//! `unknown_tool` failures, each with its own text, and go out just before the first call that
//! starts; if none starts they were prose all along. Once committed, a malformed element is a
//! failure, as in the other list formats.
//!
//! # Marker lists
//!
//! [`super::marker_list`] drives the same machine for a list that follows a start marker
//! (`<tool_calls>`, `<TOOLCALL>`, …). There the elements may spell their keys otherwise (the
//! `Keys` of `call.rs`), an end marker may follow the list, and the marker itself says "these
//! are calls": a list whose elements are all call-shaped is a call list even when none of them
//! names a declared tool, so they end as `unknown_tool` failures instead of prose.

use super::bare_json::{WS_MAX, object_detect};
use super::call::{CallObject, CallOpts, Keys, Outcome};
use super::json::Push;
use super::{Driven, Eos, Flow, Machine};
use crate::event::{Event, FailureKind, RepairKind};
use crate::format::{Body, Ctx, FormatId, Position};

/// Blanks allowed between an envelope's `:` and its value.
const LEAD_MAX: usize = 256;
/// The envelope keys, and the shape each one's value has.
const ENVELOPES: &[(&str, Shape)] = &[("tool_calls", Shape::Calls), ("tool_call", Shape::Call)];

/// What a line opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// `[{…}, …]`: xLAM-2, Hammer.
    List,
    /// `{"tool_calls": [{…}, …]}`: xLAM-1, llama.cpp's generic format with parallel calls.
    Calls,
    /// `{"tool_call": {…}}`: llama.cpp's generic format, one call.
    Call,
    /// One call object after a start marker, `"parameters"` its own arguments key: InternLM's
    /// `<|action_start|><|plugin|>{…}` (see [`super::marker_list`]).
    Object,
}

fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// Skips blanks from `*i`; false when there are more than [`WS_MAX`] of them, so a held
/// candidate followed by a long run of blanks is decided within a bounded look-ahead.
fn skip_blanks(b: &[u8], i: &mut usize) -> bool {
    let start = *i;
    while *i < b.len() && is_blank(b[*i]) {
        *i += 1;
        if *i - start > WS_MAX {
            return false;
        }
    }
    true
}

/// Whether `s` opens a call list (`[`, blanks, then a call object's opening as
/// [`object_detect`] sees it) or an envelope (`{`, blanks, a quoted `tool_calls`/`tool_call`,
/// blanks, `:`). `Some(Some((shape, n)))`: yes, and the list's `[` (or the envelope's value,
/// after blanks) is at byte `n`. `None`: need more bytes.
pub(crate) fn list_detect(s: &str, at: Position) -> Option<Option<(Shape, usize)>> {
    let b = s.as_bytes();
    let more = if at.eos { Some(None) } else { None };
    match b.first() {
        Some(b'[') => {
            let mut i = 1;
            if !skip_blanks(b, &mut i) {
                return Some(None);
            }
            if i >= b.len() {
                return more;
            }
            match object_detect(&s[i..], at) {
                None => more,
                Some(false) => Some(None),
                Some(true) => Some(Some((Shape::List, 0))),
            }
        }
        Some(b'{') => envelope_detect(s, at),
        _ => Some(None),
    }
}

fn envelope_detect(s: &str, at: Position) -> Option<Option<(Shape, usize)>> {
    let b = s.as_bytes();
    let more = if at.eos { Some(None) } else { None };
    let mut i = 1;
    if !skip_blanks(b, &mut i) {
        return Some(None);
    }
    let Some(&q) = b.get(i) else { return more };
    if q != b'"' && q != b'\'' {
        return Some(None);
    }
    i += 1;
    let key_start = i;
    while i < b.len() && b[i] != q {
        if i - key_start >= 10 || !(b[i].is_ascii_lowercase() || b[i] == b'_') {
            return Some(None);
        }
        i += 1;
    }
    if i >= b.len() {
        let partial = &s[key_start..];
        return if ENVELOPES.iter().any(|(k, _)| k.starts_with(partial)) {
            more
        } else {
            Some(None)
        };
    }
    let key = &s[key_start..i];
    let Some(&(_, shape)) = ENVELOPES.iter().find(|(k, _)| *k == key) else {
        return Some(None);
    };
    i += 1;
    if !skip_blanks(b, &mut i) {
        return Some(None);
    }
    match b.get(i) {
        None => more,
        Some(b':') => Some(Some((shape, i + 1))),
        Some(_) => Some(None),
    }
}

#[derive(Debug)]
enum ListSt {
    ElemOrEnd,
    Elem,
    CommaOrEnd,
}

#[derive(Debug)]
enum L {
    /// Bytes before the value (a fence line, an envelope's key), already seen by the
    /// detector.
    Lead { left: usize },
    /// Before the value: blanks, then `[` (a list) or `{` (the one call of `tool_call`).
    Open { ws: usize },
    /// Inside the list, between elements.
    Between(ListSt),
    /// One call object.
    Elem(Box<CallObject>),
    /// After an envelope's value: blanks, then its `}`.
    EnvClose { ws: usize },
    /// After the construct's JSON: blanks, then its closing fence or end marker, if it comes.
    Tail { buf: String },
}

/// A call list or envelope as a [`Machine`].
#[derive(Debug)]
pub(crate) struct ListMachine {
    st: L,
    shape: Shape,
    format: FormatId,
    /// The keys of each element.
    keys: Keys,
    fenced: bool,
    /// What may close the construct after its JSON: the fence's ```` ``` ````, or a marker
    /// list's end marker.
    tail: Option<&'static str>,
    /// A start marker opened the construct (see [`super::marker_list`]): the model said "these
    /// are calls", so a list whose elements are all call-shaped is one even when none names a
    /// declared tool (each is an `unknown_tool` failure at the list's end, not prose).
    marker: bool,
    text_mode: bool,
    /// A call of the construct has started: nothing can be handed back as prose any more.
    committed: bool,
    /// Elements that failed, not yet emitted, each with how much raw text had been read
    /// when it ended: before the commit every `unknown_tool` element, after it the last
    /// failed element (held so that its text runs to the next element, or takes the
    /// closing bracket).
    failed: Vec<(Outcome, usize)>,
}

impl ListMachine {
    /// A body for a construct of `shape` whose value starts after `lead` bytes.
    pub(crate) fn boxed(
        format: FormatId,
        text_mode: bool,
        shape: Shape,
        lead: usize,
        fenced: bool,
    ) -> Box<dyn Body> {
        let mut m = ListMachine::new(format, text_mode, shape, lead);
        m.fenced = fenced;
        m.tail = fenced.then_some("```");
        Driven::boxed(m)
    }

    /// A body for a marker list: the list (or, for [`Shape::Object`], the one call object)
    /// starts after the `lead` bytes of its start marker, its elements have `keys`, and
    /// `close` may follow it.
    pub(crate) fn boxed_marker(
        format: FormatId,
        text_mode: bool,
        lead: usize,
        shape: Shape,
        keys: Keys,
        close: Option<&'static str>,
    ) -> Box<dyn Body> {
        let mut m = ListMachine::new(format, text_mode, shape, lead);
        m.keys = keys;
        m.tail = close;
        m.marker = true;
        Driven::boxed(m)
    }

    fn new(format: FormatId, text_mode: bool, shape: Shape, lead: usize) -> ListMachine {
        ListMachine {
            st: if lead > 0 {
                L::Lead { left: lead }
            } else {
                L::Open { ws: 0 }
            },
            shape,
            format,
            keys: Keys::Named,
            fenced: false,
            tail: None,
            marker: false,
            text_mode,
            committed: false,
            failed: Vec::new(),
        }
    }

    fn opts(&self) -> CallOpts {
        CallOpts {
            wrapped: false,
            format: self.format,
            parameters_native: self.keys == Keys::ToolName || self.shape == Shape::Object,
            keys: self.keys,
        }
    }

    /// Whether the construct is a call list now that it ends (its JSON is complete, or the
    /// stream ended): a call started, or a marker list held call-shaped elements.
    fn commit_at_end(&mut self) -> bool {
        self.committed |= self.marker && !self.failed.is_empty();
        self.committed
    }

    fn extra(&self, ctx: &Ctx<'_>) -> Vec<RepairKind> {
        let mut v = Vec::new();
        if self.fenced {
            v.push(RepairKind::FencedJson);
        }
        if self.text_mode && !ctx.auto {
            v.push(RepairKind::NativeInTextMode);
        }
        v
    }

    /// Emits the held failures in order, each with its own text; with `take_rest` the last
    /// one also takes everything read after it (the list's closing bracket). Returns how much
    /// of `raw` they claimed.
    fn emit_failed(&mut self, take_rest: bool, raw: &str, out: &mut Vec<Event>) -> usize {
        let n = self.failed.len();
        let mut from = 0;
        for (k, (o, len)) in self.failed.drain(..).enumerate() {
            let to = if take_rest && k + 1 == n {
                raw.len()
            } else {
                len.clamp(from, raw.len())
            };
            o.emit(&[], &raw[from..to], out);
            from = to;
        }
        from
    }

    /// Moves the events a call object produced into `out`. The first `ToolCallStart`
    /// commits the construct, and the failures held until then go out before it.
    fn take_events(&mut self, events: Vec<Event>, raw: &str, out: &mut Vec<Event>) {
        if !self.committed
            && events
                .iter()
                .any(|e| matches!(e, Event::ToolCallStart { .. }))
        {
            self.committed = true;
            self.emit_failed(false, raw, out);
        }
        out.extend(events);
    }

    /// A committed construct went wrong at this character: the held failures go out, then
    /// `o` with the rest of the text, and the character goes back to prose.
    fn fail_here(&mut self, o: Outcome, raw: &str, out: &mut Vec<Event>) -> Flow {
        let claimed = self.emit_failed(false, raw, out);
        o.emit(&[], &raw[claimed..], out);
        Flow::DoneBefore
    }

    /// The JSON of the construct is complete (the list's `]` or the envelope's `}`).
    fn end(&mut self, raw: &str, out: &mut Vec<Event>) -> Flow {
        if !self.commit_at_end() {
            return Flow::Reject;
        }
        self.emit_failed(true, raw, out);
        if self.tail.is_some() {
            self.st = L::Tail { buf: String::new() };
            Flow::More
        } else {
            Flow::Done
        }
    }

    /// After the list's `]`: an envelope still waits for its `}`.
    fn list_closed(&mut self, raw: &str, out: &mut Vec<Event>) -> Flow {
        if self.shape == Shape::Calls {
            if !self.committed {
                return Flow::Reject;
            }
            self.st = L::EnvClose { ws: 0 };
            return Flow::More;
        }
        self.end(raw, out)
    }

    /// A call object's `}` was read: conclude it.
    fn element_done(
        &mut self,
        mut call: Box<CallObject>,
        raw: &str,
        ctx: &mut Ctx<'_>,
        out: &mut Vec<Event>,
    ) -> Flow {
        let mut events = Vec::new();
        let r = call.conclude(ctx, &mut events);
        self.take_events(events, raw, out);
        let o = match r {
            Ok(o) => Some(o),
            Err(e) => call.outcome_of(e),
        };
        match o {
            Some(o @ Outcome::Proposal { .. }) => {
                let extra = self.extra(ctx);
                o.emit(&extra, raw, out);
            }
            Some(o @ Outcome::Failure { .. }) => self.failed.push((o, raw.len())),
            // Not a call at all (no name, or no arguments key).
            None if !self.committed => return Flow::Reject,
            None => {
                let o = Outcome::Failure {
                    index: None,
                    kind: FailureKind::InvalidJson,
                };
                self.failed.push((o, raw.len()));
            }
        }
        if self.shape == Shape::Object {
            return self.end(raw, out);
        }
        if self.shape == Shape::Call {
            if !self.committed {
                return Flow::Reject;
            }
            self.st = L::EnvClose { ws: 0 };
        } else {
            self.st = L::Between(ListSt::CommaOrEnd);
        }
        Flow::More
    }

    fn new_element(&self, c: char, ctx: &mut Ctx<'_>) -> L {
        let mut call = CallObject::new(self.opts());
        // `{` opens the object and emits nothing.
        let _ = call.push(c, ctx, &mut Vec::new());
        L::Elem(call)
    }
}

impl Machine for ListMachine {
    fn push(&mut self, c: char, raw: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Flow {
        let st = std::mem::replace(&mut self.st, L::Open { ws: 0 });
        match st {
            L::Lead { left } => {
                let left = left.saturating_sub(c.len_utf8());
                self.st = if left == 0 {
                    L::Open { ws: 0 }
                } else {
                    L::Lead { left }
                };
                Flow::More
            }
            L::Open { ws } => {
                if c.is_whitespace() {
                    self.st = L::Open { ws: ws + 1 };
                    return if ws >= LEAD_MAX {
                        Flow::Reject
                    } else {
                        Flow::More
                    };
                }
                match (self.shape, c) {
                    (Shape::List | Shape::Calls, '[') => {
                        self.st = L::Between(ListSt::ElemOrEnd);
                        Flow::More
                    }
                    (Shape::Call | Shape::Object, '{') => {
                        self.st = self.new_element(c, ctx);
                        Flow::More
                    }
                    _ => Flow::Reject,
                }
            }
            L::Between(ls) => {
                if c.is_whitespace() {
                    self.st = L::Between(ls);
                    return Flow::More;
                }
                match (ls, c) {
                    (ListSt::ElemOrEnd | ListSt::Elem, '{') => {
                        if self.committed {
                            // Another element follows, so the failed one before it is complete.
                            self.emit_failed(false, raw, out);
                        }
                        self.st = self.new_element(c, ctx);
                        Flow::More
                    }
                    (ListSt::ElemOrEnd | ListSt::CommaOrEnd, ']') => self.list_closed(raw, out),
                    (ListSt::CommaOrEnd, ',') => {
                        self.st = L::Between(ListSt::Elem);
                        Flow::More
                    }
                    _ if !self.committed => Flow::Reject,
                    _ => self.fail_here(
                        Outcome::Failure {
                            index: None,
                            kind: FailureKind::InvalidJson,
                        },
                        raw,
                        out,
                    ),
                }
            }
            L::Elem(mut call) => {
                let mut events = Vec::new();
                let r = call.push(c, ctx, &mut events);
                self.take_events(events, raw, out);
                match r {
                    Ok(Push::More) => {
                        self.st = L::Elem(call);
                        Flow::More
                    }
                    Ok(_) => self.element_done(call, raw, ctx, out),
                    Err(_) if !self.committed => Flow::Reject,
                    Err(e) => {
                        let o = call.outcome_of(e).unwrap_or(Outcome::Failure {
                            index: None,
                            kind: FailureKind::InvalidJson,
                        });
                        self.fail_here(o, raw, out)
                    }
                }
            }
            L::EnvClose { ws } => {
                if c == '}' {
                    return self.end(raw, out);
                }
                if c.is_whitespace() && ws < WS_MAX {
                    self.st = L::EnvClose { ws: ws + 1 };
                    return Flow::More;
                }
                // Something else after the envelope's value (another key): the calls are
                // decoded, and the rest is prose.
                self.emit_failed(true, raw, out);
                Flow::DoneBefore
            }
            L::Tail { mut buf } => {
                let close = self.tail.unwrap_or_default();
                buf.push(c);
                let t = buf.trim_start();
                if t == close {
                    return Flow::Done;
                }
                if close.starts_with(t) && buf.len() < 64 {
                    self.st = L::Tail { buf };
                    return Flow::More;
                }
                Flow::Ended {
                    held: buf,
                    line_start: false,
                }
            }
        }
    }

    fn eos(&mut self, raw: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Eos {
        let st = std::mem::replace(&mut self.st, L::Open { ws: 0 });
        match st {
            L::Elem(mut call) => {
                let mut events = Vec::new();
                let r = call.finish(ctx, &mut events);
                self.take_events(events, raw, out);
                let o = match r {
                    Ok(o) => Some(o),
                    Err(e) => call.outcome_of(e),
                };
                // In a marker list, an element cut off after naming an undeclared tool with
                // its arguments key is call-shaped, as the held ones are.
                self.committed |= self.marker
                    && matches!(
                        o,
                        Some(Outcome::Failure {
                            kind: FailureKind::UnknownTool,
                            ..
                        })
                    );
                if !self.commit_at_end() {
                    return Eos::Reject;
                }
                match o {
                    Some(o @ Outcome::Proposal { .. }) => {
                        self.emit_failed(false, raw, out);
                        o.emit(&self.extra(ctx), raw, out);
                    }
                    o => {
                        let o = o.unwrap_or(Outcome::Failure {
                            index: None,
                            kind: FailureKind::TruncatedJson,
                        });
                        let claimed = self.emit_failed(false, raw, out);
                        o.emit(&[], &raw[claimed..], out);
                    }
                }
                Eos::Closed(None)
            }
            _ if !self.commit_at_end() => Eos::Reject,
            L::Tail { buf } => Eos::Closed(if buf.is_empty() { None } else { Some(buf) }),
            // A committed list or envelope left open: its calls are complete.
            _ => {
                self.emit_failed(true, raw, out);
                Eos::Closed(None)
            }
        }
    }

    fn flush(&mut self, out: &mut Vec<Event>) {
        if let L::Elem(call) = &mut self.st {
            call.flush(out);
        }
    }

    fn uncommitted(&self) -> bool {
        !self.committed
    }

    fn open_index(&self) -> Option<usize> {
        match &self.st {
            L::Elem(call) => call.index(),
            _ => None,
        }
    }
}
