//! Calls between section markers, one table of two families:
//!
//! | families | written |
//! |---|---|
//! | DeepSeek R1, V3 | `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f` ⏎ ```` ```json ```` ⏎ `{…}` ⏎ ```` ``` ````<code><｜tool▁call▁end｜>…<｜tool▁calls▁end｜></code> |
//! | DeepSeek V3.1 | `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{…}<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>` |
//! | Kimi K2 | `<\|tool_calls_section_begin\|><\|tool_call_begin\|>functions.f:0<\|tool_call_argument_begin\|>{…}<\|tool_call_end\|>…<\|tool_calls_section_end\|>` |
//!
//! DeepSeek's markers are single tokens spelled with U+FF5C (full-width vertical line) and
//! U+2581 (the SentencePiece word mark) between ASCII `<` and `>`; the bytes here are those
//! of the tokens, checked by a test.
//!
//! Sources: vLLM's `deepseekv3` and `deepseek_v31` tool parsers (the five markers, the
//! `function` type before the separator and the ```` ```json ```` fence in R1/V3, the name
//! before the separator and bare JSON after it in V3.1) and `kimi_k2` tool parser (the five
//! Kimi markers, the call id `functions.f:N` whose name is the part between the namespace and
//! the colon); llama.cpp's `common/chat.cpp` (`common_chat_parse_deepseek_r1`,
//! `common_chat_parse_deepseek_v3_1`, `common_chat_parse_kimi_k2`), which read the same
//! shapes. Nothing is copied from them.
//!
//! # One table
//!
//! Both families write a section start marker, one or more calls each between a call start
//! and a call end marker, and a section end marker; inside a call, a head that names the tool,
//! a separator token, and the arguments as JSON. A [`Row`] holds the five markers and how the
//! head names the tool ([`Head`]), so both families share one machine, one set of repairs and
//! one trigger table. R1/V3 and V3.1 are one row: they share every marker and differ only in
//! the head (`function` before the separator, or the name), which the machine tells apart
//! after the separator, so the trigger never has to guess.
//!
//! # Streaming
//!
//! The name is certain at the separator (V3.1, Kimi) or at the end of the name's line (R1/V3);
//! there the call is committed, `ToolCallStart` goes out if the name is declared, and the
//! arguments are fed to the call-object parser of `call.rs` as if the model had written
//! `{"name": "f", "arguments": …}`: they stream, validate and repair as every JSON call does
//! (`python_literal`, `arguments_as_string`, `unclosed_json`, …). The call's outcome goes out
//! when its end marker is read.
//!
//! # Never a false call
//!
//! The section start marker is the only trigger (a special token, matched anywhere). It must be
//! followed, past blanks, by a call start marker and a head of the row's shape; anything else
//! before the first call is committed hands every byte back as prose. A call to an undeclared
//! tool inside a well-formed section is an `unknown_tool` failure (the markers say "this is a
//! call"), never a `ToolCallStart`.
//!
//! # Missing markers
//!
//! A call whose end marker does not come (the next call starts, the section ends, prose
//! follows, or the stream ends) is complete anyway once its JSON closed, and carries
//! `missing_close_tag`; so does an R1/V3 call whose closing fence is missing. A missing section
//! end marker is no repair: the calls before it were complete, and what follows is prose.

use super::call::{CallErr, CallObject, CallOpts, Keys, Outcome};
use super::json::Push;
use super::{Driven, Eos, Flow, Machine, detect_row};
use crate::event::{Event, FailureKind, RepairKind};
use crate::format::{Ctx, Detect, Format, FormatId, Position};

/// How a call's head (the text between its start marker and the separator) names the tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Head {
    /// DeepSeek: `function` (the call's type; the name follows the separator on its own line,
    /// then a ```` ```json ```` fence holds the arguments: R1, V3) or the name itself (the
    /// arguments follow the separator: V3.1).
    DeepSeek,
    /// Kimi K2: the call id `functions.f:N` (the namespace may be missing; the index may not).
    Kimi,
}

/// One family of the shape.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    /// The model families that write it.
    pub families: &'static str,
    /// The section start marker: the trigger.
    pub open: &'static str,
    /// A call's start marker.
    pub call_open: &'static str,
    /// The separator between a call's head and its arguments.
    pub sep: &'static str,
    /// A call's end marker (may be missing: `missing_close_tag`).
    pub call_close: &'static str,
    /// The section end marker (may be missing).
    pub close: &'static str,
    pub head: Head,
}

/// Every family. Their triggers are disjoint (a test checks every pair).
pub const ROWS: &[Row] = &[
    Row {
        families: "DeepSeek R1, V3, V3.1",
        open: "<\u{ff5c}tool\u{2581}calls\u{2581}begin\u{ff5c}>",
        call_open: "<\u{ff5c}tool\u{2581}call\u{2581}begin\u{ff5c}>",
        sep: "<\u{ff5c}tool\u{2581}sep\u{ff5c}>",
        call_close: "<\u{ff5c}tool\u{2581}call\u{2581}end\u{ff5c}>",
        close: "<\u{ff5c}tool\u{2581}calls\u{2581}end\u{ff5c}>",
        head: Head::DeepSeek,
    },
    Row {
        families: "Kimi K2",
        open: "<|tool_calls_section_begin|>",
        call_open: "<|tool_call_begin|>",
        sep: "<|tool_call_argument_begin|>",
        call_close: "<|tool_call_end|>",
        close: "<|tool_calls_section_end|>",
        head: Head::Kimi,
    },
];

/// DeepSeek R1/V3's call type, written before the separator.
const TYPE_FUNCTION: &str = "function";
/// Kimi's namespace before the name in a call id.
const KIMI_NAMESPACE: &str = "functions.";
const FENCE_OPEN: &str = "```json";
const FENCE: &str = "```";
const MAX_NAME: usize = 128;
/// Blanks allowed between markers, and bytes a head may hold.
const WS_MAX: usize = 64;
const HEAD_MAX: usize = 256;

/// A tool name as these formats write it. Its characters need no escaping in JSON.
pub(crate) fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')
}

pub(crate) fn valid_name(s: &str) -> bool {
    !s.is_empty() && s.len() <= MAX_NAME && s.chars().all(name_char)
}

/// The detector of every row.
#[derive(Debug)]
pub struct SectionCalls {
    text_mode: bool,
}

impl SectionCalls {
    pub fn new(text_mode: bool) -> SectionCalls {
        SectionCalls { text_mode }
    }
}

impl Format for SectionCalls {
    fn id(&self) -> FormatId {
        FormatId::SectionCalls
    }
    fn trigger_bytes(&self) -> &'static [u8] {
        b"<"
    }
    fn line_start_bytes(&self) -> &'static [u8] {
        b""
    }
    fn detect(&self, s: &str, at: Position, _ctx: &Ctx<'_>) -> Detect {
        match detect_row(s, at, ROWS, |row| row.open) {
            Some(Ok(row)) => Detect::Start(Driven::boxed(SectionMachine {
                st: S::Trigger {
                    left: row.open.len(),
                },
                row,
                text_mode: self.text_mode,
                pending: None,
                emitted: false,
                since: String::new(),
            })),
            Some(Err(())) => Detect::NeedMore,
            None => Detect::No,
        }
    }
}

/// A call's arguments, JSON text fed to the call-object parser after its name. Shared with
/// [`super::harmony`].
#[derive(Debug)]
pub(crate) struct JsonArgs {
    call: Box<CallObject>,
}

/// What one character did to the arguments.
pub(crate) enum ArgStep {
    More,
    /// The arguments closed: the call's outcome (not yet emitted), `None` if it was rejected.
    Closed(Option<Outcome>),
    /// The call failed at this character: its outcome, `None` if nothing was emitted and it
    /// is no call.
    Failed(Option<Outcome>),
}

impl JsonArgs {
    /// The call named `name` (a [`valid_name`]) is committed: `ToolCallStart` goes out if the
    /// name is declared. `None` if the call-object parser refuses the name.
    pub fn start(
        name: &str,
        format: FormatId,
        ctx: &mut Ctx<'_>,
        out: &mut Vec<Event>,
    ) -> Option<JsonArgs> {
        let mut call = CallObject::new(CallOpts {
            wrapped: true,
            format,
            parameters_native: false,
            keys: Keys::Named,
        });
        for ch in format!("{{\"name\":\"{name}\",\"arguments\":").chars() {
            if call.push(ch, ctx, out).is_err() {
                return None;
            }
        }
        Some(JsonArgs { call })
    }

    pub fn push(&mut self, c: char, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> ArgStep {
        if let Err(e) = self.call.push(c, ctx, out) {
            return ArgStep::Failed(self.call.outcome_of(e));
        }
        if !self.call.value_closed() {
            return ArgStep::More;
        }
        match self.call.push('}', ctx, out) {
            Ok(Push::Complete) => {}
            Ok(_) => {
                return ArgStep::Failed(
                    self.call
                        .outcome_of(CallErr::Fail(FailureKind::InvalidJson)),
                );
            }
            Err(e) => return ArgStep::Failed(self.call.outcome_of(e)),
        }
        ArgStep::Closed(match self.call.conclude(ctx, out) {
            Ok(o) => Some(o),
            Err(e) => self.call.outcome_of(e),
        })
    }

    /// End of stream inside the arguments: closed when only brackets are missing.
    pub fn finish(&mut self, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Option<Outcome> {
        match self.call.finish(ctx, out) {
            Ok(o) => Some(o),
            Err(e) => self.call.outcome_of(e),
        }
    }

    pub fn flush(&mut self, out: &mut Vec<Event>) {
        self.call.flush(out);
    }

    pub fn uncommitted(&self) -> bool {
        self.call.uncommitted()
    }

    pub fn index(&self) -> Option<usize> {
        self.call.index()
    }
}

#[derive(Debug)]
enum S {
    /// The section start marker, `left` bytes of it still to read.
    Trigger { left: usize },
    /// Before a call (or after one): blanks, then a call start marker or the section end
    /// marker.
    Between { buf: String },
    /// A call's head, up to the separator.
    Head { buf: String },
    /// DeepSeek R1/V3, after `function` and the separator: the name, its line's end, and the
    /// ```` ```json ```` fence line.
    Typed { buf: String },
    /// The arguments; `fenced`: a ```` ``` ```` line should close them.
    Args { args: JsonArgs, fenced: bool },
    /// After the arguments: blanks, the closing fence if `fenced`, then the call end marker.
    Tail { buf: String, fenced: bool },
}

#[derive(Debug)]
struct SectionMachine {
    st: S,
    row: &'static Row,
    text_mode: bool,
    /// The concluded call, emitted when its end marker comes (or does not).
    pending: Option<Outcome>,
    /// Some outcome went out: the section can no longer be rejected.
    emitted: bool,
    /// The text read since the last call's outcome went out (for prose handed back).
    since: String,
}

/// What a head names.
enum Named {
    /// The tool's name: the arguments follow.
    Name(String),
    /// DeepSeek's `function` type: the name follows on its own line.
    Typed,
}

impl Row {
    fn read_head(&self, head: &str) -> Option<Named> {
        let head = head.trim();
        match self.head {
            Head::DeepSeek if head == TYPE_FUNCTION => Some(Named::Typed),
            Head::DeepSeek => valid_name(head).then(|| Named::Name(head.to_owned())),
            Head::Kimi => {
                let id = head.strip_prefix(KIMI_NAMESPACE).unwrap_or(head);
                let (name, n) = id.rsplit_once(':')?;
                let index_ok = !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit());
                (index_ok && valid_name(name)).then(|| Named::Name(name.to_owned()))
            }
        }
    }
}

/// Where the text after a call's name stands on the way to its ```` ```json ```` fence line.
enum FenceLine {
    More,
    /// The fence line is complete.
    Done,
    /// The arguments start right after the separator (`{`): V3.1 calling a tool named
    /// `function`.
    Bare,
    Bad,
}

/// Reads `buf` (the text after R1/V3's separator) as name, line end and fence line.
fn typed_line(buf: &str) -> (usize, FenceLine) {
    let name_len = buf.find(|c: char| !name_char(c)).unwrap_or(buf.len());
    if name_len == buf.len() {
        return (
            name_len,
            if name_len > MAX_NAME {
                FenceLine::Bad
            } else {
                FenceLine::More
            },
        );
    }
    if name_len == 0 {
        let t = buf.trim_start_matches([' ', '\t']);
        return match t.chars().next() {
            None => (0, FenceLine::More),
            Some('{') => (0, FenceLine::Bare),
            Some(_) => (0, FenceLine::Bad),
        };
    }
    let rest = &buf[name_len..];
    if rest.len() > WS_MAX + FENCE_OPEN.len() {
        return (name_len, FenceLine::Bad);
    }
    let t = rest.trim_start_matches([' ', '\t', '\r', '\n']);
    if t.len() < FENCE_OPEN.len() {
        return (
            name_len,
            if FENCE_OPEN.starts_with(t) {
                FenceLine::More
            } else {
                FenceLine::Bad
            },
        );
    }
    let Some(after) = t.strip_prefix(FENCE_OPEN) else {
        return (name_len, FenceLine::Bad);
    };
    let after = after.trim_start_matches([' ', '\t', '\r']);
    match after {
        "" => (name_len, FenceLine::More),
        "\n" => (name_len, FenceLine::Done),
        _ => (name_len, FenceLine::Bad),
    }
}

/// What the text after a call's arguments is.
enum TailIs {
    More,
    /// The call end marker; `fence_ok`: the closing fence came when one was due.
    CallEnd {
        fence_ok: bool,
    },
    /// The next call's start marker (this call's end marker is missing).
    NextCall,
    /// The section end marker (this call's end marker is missing).
    SectionEnd,
    Other,
}

impl SectionMachine {
    fn extra(&self, ctx: &Ctx<'_>, mut more: Vec<RepairKind>) -> Vec<RepairKind> {
        if self.text_mode && !ctx.auto {
            more.push(RepairKind::NativeInTextMode);
        }
        more
    }

    fn emit(
        &mut self,
        o: Outcome,
        repairs: Vec<RepairKind>,
        raw: &str,
        ctx: &Ctx<'_>,
        out: &mut Vec<Event>,
    ) {
        let repairs = match o {
            Outcome::Proposal { .. } => self.extra(ctx, repairs),
            Outcome::Failure { .. } => Vec::new(),
        };
        o.emit(&repairs, raw, out);
        self.emitted = true;
        self.since.clear();
    }

    fn emit_pending(
        &mut self,
        repairs: Vec<RepairKind>,
        raw: &str,
        ctx: &Ctx<'_>,
        out: &mut Vec<Event>,
    ) {
        if let Some(o) = self.pending.take() {
            self.emit(o, repairs, raw, ctx, out);
        }
    }

    /// Not a call after all: before anything went out every byte is prose again; after, the
    /// text read since the last call is.
    fn give_up(&mut self) -> Flow {
        if self.emitted {
            Flow::Ended {
                held: std::mem::take(&mut self.since),
                line_start: false,
            }
        } else {
            Flow::Reject
        }
    }

    fn start_args(
        &mut self,
        name: &str,
        fenced: bool,
        ctx: &mut Ctx<'_>,
        out: &mut Vec<Event>,
    ) -> Flow {
        match JsonArgs::start(name, FormatId::SectionCalls, ctx, out) {
            Some(args) => {
                self.st = S::Args { args, fenced };
                Flow::More
            }
            None => self.give_up(),
        }
    }

    fn tail_is(&self, buf: &str, fenced: bool) -> TailIs {
        let mut t = buf.trim_start();
        let mut fence_ok = !fenced;
        if fenced {
            if !t.is_empty() && FENCE.starts_with(t) && t.len() < FENCE.len() {
                return TailIs::More;
            }
            if let Some(rest) = t.strip_prefix(FENCE) {
                t = rest.trim_start();
                fence_ok = true;
            }
        }
        if buf.len() > WS_MAX + FENCE.len() + self.row.call_close.len() {
            return TailIs::Other;
        }
        if t == self.row.call_close {
            return TailIs::CallEnd { fence_ok };
        }
        if t == self.row.call_open {
            return TailIs::NextCall;
        }
        if t == self.row.close {
            return TailIs::SectionEnd;
        }
        let markers = [self.row.call_close, self.row.call_open, self.row.close];
        if markers.iter().any(|m| m.starts_with(t)) {
            TailIs::More
        } else {
            TailIs::Other
        }
    }
}

impl Machine for SectionMachine {
    fn push(&mut self, c: char, raw: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Flow {
        self.since.push(c);
        match &mut self.st {
            S::Trigger { left } => {
                *left -= c.len_utf8();
                if *left == 0 {
                    self.st = S::Between { buf: String::new() };
                }
                Flow::More
            }
            S::Between { buf } => {
                buf.push(c);
                let t = buf.trim_start();
                if t == self.row.call_open {
                    self.st = S::Head { buf: String::new() };
                    return Flow::More;
                }
                if t == self.row.close {
                    return Flow::Done;
                }
                let may = t.is_empty()
                    || self.row.call_open.starts_with(t)
                    || self.row.close.starts_with(t);
                if may && buf.len() <= WS_MAX + self.row.close.len() {
                    return Flow::More;
                }
                self.give_up()
            }
            S::Head { buf } => {
                buf.push(c);
                if let Some(head) = buf.strip_suffix(self.row.sep) {
                    return match self.row.read_head(head) {
                        Some(Named::Name(name)) => self.start_args(&name, false, ctx, out),
                        Some(Named::Typed) => {
                            self.st = S::Typed { buf: String::new() };
                            Flow::More
                        }
                        None => self.give_up(),
                    };
                }
                if c == '\n' || buf.len() > HEAD_MAX {
                    return self.give_up();
                }
                Flow::More
            }
            S::Typed { buf } => {
                buf.push(c);
                match typed_line(buf) {
                    (_, FenceLine::More) => Flow::More,
                    (n, FenceLine::Done) => {
                        let name = buf[..n].to_owned();
                        self.start_args(&name, true, ctx, out)
                    }
                    (_, FenceLine::Bare) => {
                        // V3.1 calling a tool named `function`: this `{` opens its arguments.
                        let flow = self.start_args(TYPE_FUNCTION, false, ctx, out);
                        if !matches!(flow, Flow::More) {
                            return flow;
                        }
                        self.push_args(c, raw, ctx, out)
                    }
                    (_, FenceLine::Bad) => self.give_up(),
                }
            }
            S::Args { .. } => self.push_args(c, raw, ctx, out),
            S::Tail { buf, fenced } => {
                buf.push(c);
                let fenced = *fenced;
                let buf = buf.clone();
                match self.tail_is(&buf, fenced) {
                    TailIs::More => Flow::More,
                    TailIs::CallEnd { fence_ok } => {
                        let repairs = if fence_ok {
                            Vec::new()
                        } else {
                            vec![RepairKind::MissingCloseTag]
                        };
                        self.emit_pending(repairs, raw, ctx, out);
                        self.st = S::Between { buf: String::new() };
                        Flow::More
                    }
                    TailIs::NextCall => {
                        // The call's text ends before the next call's start marker.
                        let own = &raw[..raw.len() - buf.trim_start().len()];
                        self.emit_pending(vec![RepairKind::MissingCloseTag], own, ctx, out);
                        self.since = buf.trim_start().to_owned();
                        self.st = S::Head { buf: String::new() };
                        Flow::More
                    }
                    TailIs::SectionEnd => {
                        self.emit_pending(vec![RepairKind::MissingCloseTag], raw, ctx, out);
                        Flow::Done
                    }
                    TailIs::Other => {
                        self.emit_pending(vec![RepairKind::MissingCloseTag], raw, ctx, out);
                        Flow::Ended {
                            held: buf,
                            line_start: false,
                        }
                    }
                }
            }
        }
    }

    fn eos(&mut self, raw: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Eos {
        let st = std::mem::replace(&mut self.st, S::Between { buf: String::new() });
        match st {
            S::Trigger { .. } | S::Between { .. } | S::Head { .. } | S::Typed { .. } => {
                if self.emitted {
                    let since = std::mem::take(&mut self.since);
                    Eos::Closed((!since.is_empty()).then_some(since))
                } else {
                    Eos::Reject
                }
            }
            S::Args { mut args, .. } => {
                match args.finish(ctx, out) {
                    Some(o) => self.emit(o, vec![RepairKind::MissingCloseTag], raw, ctx, out),
                    None if self.emitted => {}
                    None => return Eos::Reject,
                }
                Eos::Closed(None)
            }
            S::Tail { buf, .. } => {
                self.emit_pending(vec![RepairKind::MissingCloseTag], raw, ctx, out);
                Eos::Closed((!buf.is_empty()).then_some(buf))
            }
        }
    }

    fn flush(&mut self, out: &mut Vec<Event>) {
        if let S::Args { args, .. } = &mut self.st {
            args.flush(out);
        }
    }

    fn uncommitted(&self) -> bool {
        !self.emitted
            && self.pending.is_none()
            && match &self.st {
                S::Args { args, .. } => args.uncommitted(),
                _ => true,
            }
    }

    fn open_index(&self) -> Option<usize> {
        match &self.st {
            S::Args { args, .. } => args.index(),
            _ => None,
        }
    }
}

impl SectionMachine {
    fn push_args(&mut self, c: char, raw: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Flow {
        let S::Args { args, fenced } = &mut self.st else {
            return Flow::Reject;
        };
        let fenced = *fenced;
        match args.push(c, ctx, out) {
            ArgStep::More => Flow::More,
            ArgStep::Closed(o) => {
                self.pending = o;
                self.st = S::Tail {
                    buf: String::new(),
                    fenced,
                };
                Flow::More
            }
            ArgStep::Failed(Some(o)) => {
                self.emit(o, Vec::new(), raw, ctx, out);
                Flow::DoneBefore
            }
            ArgStep::Failed(None) => self.give_up(),
        }
    }
}
