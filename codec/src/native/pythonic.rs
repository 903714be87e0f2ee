//! Pythonic calls (Llama 3.2 / 4 style): a line that is a Python list of calls with keyword
//! arguments, `[read(path="a.py"), grep(pattern='x', path=None)]`.
//!
//! A list at line start is just as often Python code (`[print(x) for x in xs]`), so nothing is
//! emitted until the closing `]` proves the whole line is calls to known tools with keyword
//! arguments only; anything else goes back to prose. The arguments are a Python literal
//! rewritten whole, so each call's start, arguments and proposal go out together.
//!
//! The same machine reads the pythonic bodies after the start markers of
//! [`super::marker_list`]: LFM2's and Llama 4's lists (followed by an optional end marker) and
//! Olmo 3's calls one per line, without brackets, up to `</function_calls>`, and MiniCPM3's
//! calls one per line in a ```` ```python ```` fence (the end of stream after a complete call
//! is `missing_close_tag`). The same rule holds there: nothing goes out
//! until the body closes, and only when every call names a declared tool.

use serde_json::{Map, Value};

use super::call::resolve_name;
use super::json::{Push, ValueParser};
use super::{Driven, Eos, Flow, Machine};
use crate::action::ActionProposal;
use crate::event::{Event, FailureKind, RepairKind};
use crate::format::{Body, Ctx, Detect, Format, FormatId, Position};

const NAME_MAX: usize = 128;
/// The most blanks between `[` and the first call's name.
const LEAD_MAX: usize = 64;

fn ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.'
}

/// The line-start `[ident(` detector.
#[derive(Debug)]
pub struct Pythonic {
    text_mode: bool,
}

impl Pythonic {
    pub fn new(text_mode: bool) -> Pythonic {
        Pythonic { text_mode }
    }
}

/// `[`, optional spaces, an identifier, `(`. `None`: need more.
fn shape(s: &str, at: Position) -> Option<bool> {
    let b = s.as_bytes();
    let more = if at.eos { Some(false) } else { None };
    if b.first() != Some(&b'[') {
        return Some(false);
    }
    let mut i = 1;
    // Bounded, so a held `[` followed by a long run of blanks is decided within a fixed
    // look-ahead instead of being re-scanned on every feed.
    while i < b.len() && b[i] == b' ' {
        i += 1;
        if i > LEAD_MAX {
            return Some(false);
        }
    }
    let Some(&c) = b.get(i) else { return more };
    if !ident_start(c) {
        return Some(false);
    }
    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'.') {
        i += 1;
        if i > NAME_MAX {
            return Some(false);
        }
    }
    match b.get(i) {
        None => more,
        Some(b'(') => Some(true),
        Some(_) => Some(false),
    }
}

impl Format for Pythonic {
    fn id(&self) -> FormatId {
        FormatId::Pythonic
    }
    fn trigger_bytes(&self) -> &'static [u8] {
        b""
    }
    fn line_start_bytes(&self) -> &'static [u8] {
        b"["
    }
    fn detect(&self, s: &str, at: Position, _ctx: &Ctx<'_>) -> Detect {
        if !at.line_start {
            return Detect::No;
        }
        match shape(s, at) {
            None => Detect::NeedMore,
            Some(false) => Detect::No,
            Some(true) => Detect::Start(boxed(PyMachine {
                st: P::Open,
                calls: Vec::new(),
                text_mode: self.text_mode,
                format: FormatId::Pythonic,
                lines: false,
                close: None,
                after_lines: None,
                repairs: Vec::new(),
            })),
        }
    }
}

#[derive(Debug)]
enum P {
    /// A start marker and the blanks after it, already seen by the detector.
    Lead {
        left: usize,
    },
    Open,
    /// Before a call's name (after `[` or `,`).
    CallStart,
    Name(String),
    /// After `(` or `,` inside the call: a keyword or `)`.
    ArgStart {
        after_comma: bool,
    },
    ArgName(String),
    Eq,
    Val(ValueParser),
    AfterVal,
    AfterCall,
    /// The end marker of calls one per line, read up to this point.
    Close(String),
    /// After the list's `]`: blanks, then its end marker, if it comes.
    Tail(String),
}

#[derive(Debug)]
struct PyCall {
    name: String,
    args: Map<String, Value>,
    pending_key: Option<String>,
    /// Where the call's text starts in the construct's raw text (0 for the first, which
    /// owns the `[`); it runs up to the next call's start (the last one owns the `]`).
    start: usize,
}

/// A pythonic call list as a [`Machine`]: a line-start `[f(a=1)]`, or the body after a start
/// marker of [`super::marker_list`].
#[derive(Debug)]
pub(crate) struct PyMachine {
    st: P,
    calls: Vec<PyCall>,
    text_mode: bool,
    /// The format proposals are attributed to.
    format: FormatId,
    /// Calls one per line, without brackets, up to `close` (Olmo 3).
    lines: bool,
    /// The end marker that may follow the body (with `lines`: the one that ends the lines).
    close: Option<&'static str>,
    /// With `lines`: an end marker that may follow `close` (after a fenced block, the row's
    /// own end marker).
    after_lines: Option<&'static str>,
    /// Repairs of the construct, given to its last call.
    repairs: Vec<RepairKind>,
}

/// A [`PyMachine`] as a [`Body`].
pub(crate) fn boxed(m: PyMachine) -> Box<dyn Body> {
    Driven::boxed(m)
}

impl PyMachine {
    /// The body after a start marker: its list's `[` (with `lines`, its first call's name) is
    /// `lead` bytes on, and `close` may follow it.
    pub(crate) fn marker(
        format: FormatId,
        text_mode: bool,
        lead: usize,
        lines: bool,
        close: Option<&'static str>,
    ) -> PyMachine {
        let next = if lines { P::CallStart } else { P::Open };
        PyMachine {
            st: if lead > 0 {
                P::Lead { left: lead }
            } else {
                next
            },
            calls: Vec::new(),
            text_mode,
            format,
            lines,
            close,
            after_lines: None,
            repairs: Vec::new(),
        }
    }

    /// Calls one per line in a code fence after a start marker: the fence's closing ```` ``` ````
    /// ends them, and `close` may follow it.
    pub(crate) fn fenced(
        format: FormatId,
        text_mode: bool,
        lead: usize,
        close: Option<&'static str>,
    ) -> PyMachine {
        let mut m = PyMachine::marker(format, text_mode, lead, true, Some("```"));
        m.after_lines = close;
        m
    }

    /// Whether `c` could begin the end of calls one per line.
    fn closes_lines(&self, c: char) -> bool {
        self.close.is_some_and(|close| close.starts_with(c))
    }

    /// Whether `c` continues the end marker of calls one per line, read into `buf`.
    fn close_step(
        &mut self,
        mut buf: String,
        c: char,
        raw: &str,
        ctx: &mut Ctx<'_>,
        out: &mut Vec<Event>,
    ) -> Flow {
        let close = self.close.unwrap_or_default();
        buf.push(c);
        if buf == close {
            self.conclude(raw, ctx, out);
            if let Some(after) = self.after_lines.take() {
                self.close = Some(after);
                self.st = P::Tail(String::new());
                return Flow::More;
            }
            return Flow::Done;
        }
        if close.starts_with(buf.as_str()) {
            self.st = P::Close(buf);
            return Flow::More;
        }
        Flow::Reject
    }

    /// The closing `]`: every call is a known tool with keyword arguments; emit them all.
    fn conclude(&mut self, raw: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) {
        let calls = std::mem::take(&mut self.calls);
        let last = calls.len().saturating_sub(1);
        let ends: Vec<usize> = calls
            .iter()
            .skip(1)
            .map(|c| c.start)
            .chain([raw.len()])
            .collect();
        for (k, (call, end)) in calls.into_iter().zip(ends).enumerate() {
            // Each failure carries its own call's text, so no byte is reported twice.
            let own = raw.get(call.start..end).unwrap_or(raw);
            let args = Value::Object(call.args);
            match ctx.registry.validate(&call.name, &args) {
                Ok((action, reg_repairs)) => {
                    let mut repairs = reg_repairs;
                    if k == last {
                        repairs.extend(self.repairs.iter().copied());
                    }
                    if self.text_mode && !ctx.auto {
                        repairs.push(RepairKind::NativeInTextMode);
                    }
                    let proposal = ActionProposal {
                        action,
                        repairs,
                        format: self.format,
                    };
                    super::emit_whole(ctx, out, proposal);
                }
                Err(kind) => out.push(Event::Failure {
                    index: None,
                    kind,
                    raw: own.to_owned(),
                }),
            }
        }
    }

    fn current(&mut self) -> Option<&mut PyCall> {
        self.calls.last_mut()
    }
}

impl Machine for PyMachine {
    fn push(&mut self, c: char, raw: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Flow {
        match &mut self.st {
            P::Lead { left } => {
                *left = left.saturating_sub(c.len_utf8());
                if *left == 0 {
                    self.st = if self.lines { P::CallStart } else { P::Open };
                }
                Flow::More
            }
            P::Open => {
                self.st = P::CallStart;
                Flow::More
            }
            P::Close(buf) => {
                let buf = std::mem::take(buf);
                self.close_step(buf, c, raw, ctx, out)
            }
            P::Tail(buf) => {
                let close = self.close.unwrap_or_default();
                buf.push(c);
                let t = buf.trim_start();
                if t == close {
                    return Flow::Done;
                }
                if close.starts_with(t) && buf.len() < 64 {
                    return Flow::More;
                }
                Flow::Ended {
                    held: std::mem::take(buf),
                    line_start: false,
                }
            }
            P::CallStart => {
                // A list's calls may sit one per line (`[f(a=1),\n g(b=2)]`).
                if c.is_whitespace() {
                    return Flow::More;
                }
                if self.lines && self.closes_lines(c) && !self.calls.is_empty() {
                    return self.close_step(String::new(), c, raw, ctx, out);
                }
                if c.is_ascii_alphabetic() || c == '_' {
                    self.st = P::Name(c.to_string());
                    return Flow::More;
                }
                Flow::Reject
            }
            P::Name(name) => {
                if ident_char(c) && name.len() < NAME_MAX {
                    name.push(c);
                    return Flow::More;
                }
                if c != '(' {
                    return Flow::Reject;
                }
                let name = std::mem::take(name);
                // Python code calls functions too: only known tools make a call list.
                if resolve_name(ctx.registry, &name).is_none() {
                    return Flow::Reject;
                }
                let start = if self.calls.is_empty() {
                    0
                } else {
                    // The name is ASCII: it and the `(` are its last bytes of raw text.
                    raw.len().saturating_sub(name.len() + 1)
                };
                self.calls.push(PyCall {
                    name,
                    args: Map::new(),
                    pending_key: None,
                    start,
                });
                self.st = P::ArgStart { after_comma: false };
                Flow::More
            }
            P::ArgStart { after_comma } => {
                if c.is_whitespace() {
                    return Flow::More;
                }
                if c == ')' {
                    let _ = after_comma;
                    self.st = P::AfterCall;
                    return Flow::More;
                }
                if c.is_ascii_alphabetic() || c == '_' {
                    self.st = P::ArgName(c.to_string());
                    return Flow::More;
                }
                Flow::Reject
            }
            P::ArgName(name) => {
                if (c.is_ascii_alphanumeric() || c == '_') && name.len() < NAME_MAX {
                    name.push(c);
                    return Flow::More;
                }
                let name = std::mem::take(name);
                let Some(call) = self.current() else {
                    return Flow::Reject;
                };
                if call.args.contains_key(&name) {
                    return Flow::Reject;
                }
                call.pending_key = Some(name);
                self.st = P::Eq;
                self.push(c, raw, ctx, out)
            }
            P::Eq => {
                if c == ' ' {
                    Flow::More
                } else if c == '=' {
                    self.st = P::Val(ValueParser::new(false));
                    Flow::More
                } else {
                    Flow::Reject
                }
            }
            P::Val(p) => {
                if p.is_empty() && c.is_whitespace() {
                    return Flow::More;
                }
                let r = match p.push(c) {
                    Ok(r) => r,
                    Err(_) => return Flow::Reject,
                };
                if r == Push::More {
                    return Flow::More;
                }
                let Some(v) = p.take_value() else {
                    return Flow::Reject;
                };
                let Some(call) = self.current() else {
                    return Flow::Reject;
                };
                let Some(k) = call.pending_key.take() else {
                    return Flow::Reject;
                };
                call.args.insert(k, v);
                self.st = P::AfterVal;
                if r == Push::CompleteBefore {
                    return self.push(c, raw, ctx, out);
                }
                Flow::More
            }
            P::AfterVal => {
                if c.is_whitespace() {
                    Flow::More
                } else if c == ',' {
                    self.st = P::ArgStart { after_comma: true };
                    Flow::More
                } else if c == ')' {
                    self.st = P::AfterCall;
                    Flow::More
                } else {
                    Flow::Reject
                }
            }
            P::AfterCall if self.lines => {
                if c == '\n' {
                    self.st = P::CallStart;
                    Flow::More
                } else if c == ' ' || c == '\t' || c == '\r' {
                    Flow::More
                } else if self.closes_lines(c) {
                    self.close_step(String::new(), c, raw, ctx, out)
                } else {
                    Flow::Reject
                }
            }
            P::AfterCall => {
                if c.is_whitespace() {
                    Flow::More
                } else if c == ',' {
                    self.st = P::CallStart;
                    Flow::More
                } else if c == ']' {
                    self.conclude(raw, ctx, out);
                    if self.close.is_some() {
                        self.st = P::Tail(String::new());
                        return Flow::More;
                    }
                    Flow::Done
                } else {
                    Flow::Reject
                }
            }
        }
    }

    fn eos(&mut self, raw: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Eos {
        match std::mem::replace(&mut self.st, P::Open) {
            P::Tail(buf) => Eos::Closed((!buf.is_empty()).then_some(buf)),
            // Calls one per line, the last one complete: only the end marker is missing.
            P::AfterCall | P::CallStart | P::Close(_) if self.lines && !self.calls.is_empty() => {
                self.repairs.push(RepairKind::MissingCloseTag);
                self.conclude(raw, ctx, out);
                Eos::Closed(None)
            }
            // Without its `]` the line is not known to be a call list.
            _ => Eos::Reject,
        }
    }

    fn flush(&mut self, _out: &mut Vec<Event>) {}

    fn uncommitted(&self) -> bool {
        // Only after the closing `]` (then only the end marker is looked for) is anything out.
        !matches!(self.st, P::Tail(_))
    }

    fn open_index(&self) -> Option<usize> {
        None
    }
}

// A call that validated to a failure still counts as an attempt, reported with its kind.
const _: FailureKind = FailureKind::BadArguments;
