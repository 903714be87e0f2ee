//! Bare call objects that small models write without any wrapper: a line that starts with
//! `{"name": …, "arguments": …}` (keys in either order, `"parameters"` accepted), optionally
//! inside a ```` ```json ```` fence. The same detector owns the line-start call lists and
//! envelopes of [`super::json_list`] (`[{…}, …]`, `{"tool_calls": […]}`,
//! `{"tool_call": {…}}`), which that module explains.
//!
//! Without a wrapper, only the object's shape says it is a call, so the detector is strict:
//! the line must open with `{` and a first key of `name`, `arguments`, `parameters` or `type`
//! (Llama 3.1 writes `"type": "function"` first; any other type rejects); any
//! other key before the call has started (`"description"` in an echoed tool schema,
//! `"status"` in a fabricated tool result) rejects it back to prose, and so does an object
//! without both a name and an arguments key. `ToolCallStart` waits for both.

use super::call::{CallErr, CallObject, CallOpts, Keys, Outcome};
use super::json::Push;
use super::json_list::{ListMachine, list_detect};
use super::{Driven, Eos, Flow, Machine};
use crate::event::{Event, RepairKind};
use crate::format::{Ctx, Detect, Format, FormatId, Position};

const KEYS: &[&str] = &["name", "arguments", "parameters", "type"];
/// The most blanks a detector looks through at one place before answering `No`.
pub(crate) const WS_MAX: usize = 64;

/// Whether `s` starts a call object: `{`, whitespace, a quoted first key from [`KEYS`],
/// whitespace, `:`. `None`: need more bytes.
pub(crate) fn object_detect(s: &str, at: Position) -> Option<bool> {
    let b = s.as_bytes();
    let more = if at.eos { Some(false) } else { None };
    let mut i = 0;
    if b.first() != Some(&b'{') {
        return Some(false);
    }
    i += 1;
    // Looks at no more than `WS_MAX + 1` blanks, so a held candidate re-offered on every feed
    // costs a bounded amount however many blanks follow it.
    let skip_ws = |i: &mut usize| -> bool {
        let start = *i;
        while *i < b.len() && matches!(b[*i], b' ' | b'\t' | b'\r' | b'\n') {
            *i += 1;
            if *i - start > WS_MAX {
                return false;
            }
        }
        true
    };
    if !skip_ws(&mut i) {
        return Some(false);
    }
    let Some(&q) = b.get(i) else { return more };
    if q != b'"' && q != b'\'' {
        return Some(false);
    }
    i += 1;
    let key_start = i;
    while i < b.len() && b[i] != q {
        if i - key_start > 10 || !b[i].is_ascii_lowercase() {
            return Some(false);
        }
        i += 1;
    }
    if i >= b.len() {
        let partial = &s[key_start..];
        return if KEYS.iter().any(|k| k.starts_with(partial)) {
            more
        } else {
            Some(false)
        };
    }
    if !KEYS.contains(&&s[key_start..i]) {
        return Some(false);
    }
    i += 1;
    if !skip_ws(&mut i) {
        return Some(false);
    }
    match b.get(i) {
        None => more,
        Some(b':') => Some(true),
        Some(_) => Some(false),
    }
}

/// Whether `s` starts a fenced call: ```` ```json ````, spaces, a newline, whitespace, then a
/// call object, a call list or an envelope. The text protocol must answer `No` wherever this
/// answers `Start` or `NeedMore`.
pub fn fence_detect(s: &str, at: Position) -> Detect {
    if !s.starts_with('`') {
        return Detect::No;
    }
    line_detect(FormatId::BareJson, false, s, at)
}

/// Where the content of a ```` ```json ```` fence starts: after the fence line, spaces, a
/// newline and blank lines. `Some(Some(n))`: at byte `n` (which exists); `None`: need more.
fn fence_content_start(s: &str, at: Position) -> Option<Option<usize>> {
    const FENCE: &str = "```json";
    let more = if at.eos { Some(None) } else { None };
    if s.len() < FENCE.len() {
        return if FENCE.starts_with(s) {
            more
        } else {
            Some(None)
        };
    }
    if !s.starts_with(FENCE) {
        return Some(None);
    }
    let b = s.as_bytes();
    let mut i = FENCE.len();
    // Blanks after the fence word are bounded like every look-ahead here: past `WS_MAX` the
    // line is not a call fence (and the held bytes are released, not re-scanned forever).
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\r') {
        i += 1;
        if i - FENCE.len() > WS_MAX {
            return Some(None);
        }
    }
    match b.get(i) {
        None => return more,
        Some(b'\n') => i += 1,
        Some(_) => return Some(None),
    }
    let lead = i;
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\r' | b'\n') {
        i += 1;
        if i - lead > WS_MAX {
            return Some(None);
        }
    }
    if i >= b.len() {
        return more;
    }
    Some(Some(i))
}

/// Everything this format starts at a line start: a call object, a call list or an
/// envelope, each bare or after a ```` ```json ```` fence line. The object and the list or
/// envelope triggers are disjoint (`{` and a call key, `[`, `{` and an envelope key), so at
/// most one of the two detectors says yes.
fn line_detect(id: FormatId, text_mode: bool, s: &str, at: Position) -> Detect {
    let fence = if s.starts_with('`') {
        match fence_content_start(s, at) {
            None => return Detect::NeedMore,
            Some(None) => return Detect::No,
            Some(Some(n)) => Some(n),
        }
    } else {
        None
    };
    let n = fence.unwrap_or(0);
    let body = &s[n..];
    match object_detect(body, at) {
        None => return Detect::NeedMore,
        Some(true) => {
            return Detect::Start(Driven::boxed(BareMachine::new(id, text_mode, fence)));
        }
        Some(false) => {}
    }
    match list_detect(body, at) {
        None => Detect::NeedMore,
        Some(None) => Detect::No,
        Some(Some((shape, value))) => Detect::Start(ListMachine::boxed(
            id,
            text_mode,
            shape,
            n + value,
            fence.is_some(),
        )),
    }
}

/// The bare-object detector (line start `{`, and line start ```` ```json ````), which also
/// starts the call lists and envelopes of [`super::json_list`] (line start `[` and `{`).
#[derive(Debug)]
pub struct BareJson {
    id: FormatId,
    text_mode: bool,
}

impl BareJson {
    pub fn new(id: FormatId, text_mode: bool) -> BareJson {
        BareJson { id, text_mode }
    }
}

/// The line-start object detection shared with Llama 3's single-format mode.
pub(crate) fn detect_object(id: FormatId, text_mode: bool, s: &str, at: Position) -> Detect {
    if !at.line_start {
        return Detect::No;
    }
    match object_detect(s, at) {
        None => Detect::NeedMore,
        Some(false) => Detect::No,
        Some(true) => Detect::Start(Driven::boxed(BareMachine::new(id, text_mode, None))),
    }
}

impl Format for BareJson {
    fn id(&self) -> FormatId {
        self.id
    }
    fn trigger_bytes(&self) -> &'static [u8] {
        b""
    }
    fn line_start_bytes(&self) -> &'static [u8] {
        b"{[`"
    }
    fn detect(&self, s: &str, at: Position, _ctx: &Ctx<'_>) -> Detect {
        if !at.line_start {
            return Detect::No;
        }
        line_detect(self.id, self.text_mode, s, at)
    }
}

#[derive(Debug)]
enum B {
    /// Bytes of the fence line (and blank lines) before the object.
    Lead {
        left: usize,
    },
    Call(Box<CallObject>),
    FenceTail {
        buf: String,
    },
}

#[derive(Debug)]
pub(crate) struct BareMachine {
    st: B,
    opts: CallOpts,
    fenced: bool,
    text_mode: bool,
    pending: Option<Outcome>,
}

impl BareMachine {
    pub(crate) fn new(id: FormatId, text_mode: bool, fence_lead: Option<usize>) -> BareMachine {
        let opts = CallOpts {
            wrapped: false,
            format: id,
            parameters_native: id == FormatId::Llama3,
            keys: Keys::Named,
        };
        let call = CallObject::new(opts);
        BareMachine {
            st: match fence_lead {
                Some(n) if n > 0 => B::Lead { left: n },
                _ => B::Call(call),
            },
            opts,
            fenced: fence_lead.is_some(),
            text_mode,
            pending: None,
        }
    }

    fn extra(&self, ctx: &Ctx<'_>, mut v: Vec<RepairKind>) -> Vec<RepairKind> {
        if self.fenced {
            v.push(RepairKind::FencedJson);
        }
        if self.text_mode && !ctx.auto {
            v.push(RepairKind::NativeInTextMode);
        }
        v
    }

    fn opts_of(&self) -> CallOpts {
        self.opts
    }
}

impl Machine for BareMachine {
    fn push(&mut self, c: char, raw: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Flow {
        match &mut self.st {
            B::Lead { left } => {
                *left -= c.len_utf8();
                if *left == 0 {
                    let opts = self.opts_of();
                    self.st = B::Call(CallObject::new(opts));
                }
                Flow::More
            }
            B::Call(call) => match call.push(c, ctx, out) {
                Ok(Push::More) => Flow::More,
                Ok(_) => {
                    let r = call.conclude(ctx, out);
                    let o = match r {
                        Ok(o) => o,
                        Err(e) => match call.outcome_of(e) {
                            None => return Flow::Reject,
                            Some(o) => o,
                        },
                    };
                    if self.fenced {
                        self.pending = Some(o);
                        self.st = B::FenceTail { buf: String::new() };
                        Flow::More
                    } else {
                        o.emit(&self.extra(ctx, Vec::new()), raw, out);
                        Flow::Done
                    }
                }
                Err(CallErr::Reject) if call.uncommitted() => Flow::Reject,
                Err(e) => {
                    if let Some(o) = call.outcome_of(e) {
                        o.emit(&[], raw, out);
                    }
                    Flow::DoneBefore
                }
            },
            B::FenceTail { buf } => {
                buf.push(c);
                let t = buf.trim_start();
                if t == "```" {
                    if let Some(o) = self.pending.take() {
                        o.emit(&self.extra(ctx, Vec::new()), raw, out);
                    }
                    return Flow::Done;
                }
                if "```".starts_with(t) && buf.len() < 64 {
                    return Flow::More;
                }
                let held = std::mem::take(buf);
                if let Some(o) = self.pending.take() {
                    o.emit(&self.extra(ctx, Vec::new()), raw, out);
                }
                Flow::Ended {
                    held,
                    line_start: false,
                }
            }
        }
    }

    fn eos(&mut self, raw: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Eos {
        let st = std::mem::replace(&mut self.st, B::FenceTail { buf: String::new() });
        match st {
            B::Lead { .. } => Eos::Reject,
            B::Call(mut call) => {
                let o = match call.finish(ctx, out) {
                    Ok(o) => o,
                    Err(e) => match call.outcome_of(e) {
                        None => return Eos::Reject,
                        Some(o) => o,
                    },
                };
                o.emit(&self.extra(ctx, Vec::new()), raw, out);
                Eos::Closed(None)
            }
            B::FenceTail { buf } => {
                if let Some(o) = self.pending.take() {
                    o.emit(&self.extra(ctx, Vec::new()), raw, out);
                }
                Eos::Closed(if buf.is_empty() { None } else { Some(buf) })
            }
        }
    }

    fn flush(&mut self, out: &mut Vec<Event>) {
        if let B::Call(call) = &mut self.st {
            call.flush(out);
        }
    }

    fn uncommitted(&self) -> bool {
        match &self.st {
            B::Lead { .. } => true,
            B::Call(call) => call.uncommitted(),
            B::FenceTail { .. } => false,
        }
    }

    fn open_index(&self) -> Option<usize> {
        match &self.st {
            B::Call(call) => call.index(),
            _ => None,
        }
    }
}
