//! Hermes / Qwen2.5 `<tool_call>{json}</tool_call>`, and Qwen3-Coder's
//! `<tool_call><function=…>…</function></tool_call>`: one detector owns `<tool_call>`, and the
//! first thing inside decides the body (`{` one JSON call, `[` a list of them, `<function=` an
//! XML call, a name a GLM-4.5 call whose `<arg_key>`s follow; anything else is prose that
//! mentions the tag). A GLM-4.5 call ends with `</tool_call>` itself.
//!
//! The machine also reads the wrappers of [`super::xml_wrapped`] (Seed-OSS, MiniMax-M2), which
//! hold one or more XML calls of their dialect and nothing else.
//!
//! After the call, a bounded tail looks for `</tool_call>`: junk before it (an extra `}`, a
//! stray token) is `trailing_after_call`; another `<tool_call>`, the end of stream or
//! [`TAIL_MAX`] bytes without it are `missing_close_tag`, and the tail goes back to prose.
//! Another `{` right after the call is a second call inside the same wrapper.

use super::call::{CallObject, CallOpts, Keys, Outcome};
use super::json::Push;
use super::qwen3_xml::{GLM, QWEN3, XmlCall, XmlTags};
use super::{Driven, Eos, Flow, Machine, detect_literal};
use crate::event::{Event, RepairKind};
use crate::format::{Ctx, Detect, Format, FormatId, Position};

/// A wrapper around calls, and what it holds.
#[derive(Debug)]
pub(crate) struct Wrapper {
    pub open: &'static str,
    pub close: &'static str,
    /// The XML calls it may hold (each opened by `tags.function`).
    pub tags: &'static XmlTags,
    /// Hermes' own `<tool_call>`: it may also hold a JSON call or list (fenced or not), or a
    /// GLM-4.5 call; the XML call of the other wrappers is all they hold, one or more.
    pub hermes: bool,
}

/// Hermes' and Qwen3-Coder's `<tool_call>`.
pub(crate) const TOOL_CALL: Wrapper = Wrapper {
    open: "<tool_call>",
    close: "</tool_call>",
    tags: &QWEN3,
    hermes: true,
};
/// How many bytes after a call are searched for its `</tool_call>`.
pub const TAIL_MAX: usize = 96;
/// Whitespace allowed between `<tool_call>` and the call.
const LEAD_MAX: usize = 256;

/// The `<tool_call>` detector (Hermes JSON and Qwen3 XML bodies).
#[derive(Debug)]
pub struct ToolCallTag {
    id: FormatId,
    text_mode: bool,
}

impl ToolCallTag {
    pub fn new(id: FormatId, text_mode: bool) -> ToolCallTag {
        ToolCallTag { id, text_mode }
    }
}

impl Format for ToolCallTag {
    fn id(&self) -> FormatId {
        self.id
    }
    fn trigger_bytes(&self) -> &'static [u8] {
        b"<"
    }
    fn line_start_bytes(&self) -> &'static [u8] {
        b""
    }
    fn detect(&self, s: &str, at: Position, _ctx: &Ctx<'_>) -> Detect {
        match detect_literal(s, TOOL_CALL.open, at) {
            None => Detect::NeedMore,
            Some(false) => Detect::No,
            Some(true) => Detect::Start(HermesMachine::boxed(&TOOL_CALL, self.text_mode)),
        }
    }
}

#[derive(Debug)]
enum ListSt {
    ElemOrEnd,
    Elem,
    CommaOrEnd,
}

#[derive(Debug)]
enum H {
    Trigger {
        left: usize,
    },
    Inner {
        ws: usize,
        lit: usize,
    },
    /// A code-fence line (```` ```json ````) between `<tool_call>` and the call.
    FenceLead {
        buf: String,
    },
    Call(Box<CallObject>),
    List {
        st: ListSt,
        call: Option<Box<CallObject>>,
    },
    Xml(Box<XmlCall>),
    Tail {
        buf: String,
        after_json: bool,
    },
}

#[derive(Debug)]
pub(crate) struct HermesMachine {
    w: &'static Wrapper,
    st: H,
    text_mode: bool,
    /// A concluded call waiting for the wrapper's end (which may add repairs).
    /// The last call concluded, not yet emitted (the wrapper may add repairs to it), and how
    /// many bytes of the machine's raw text were read when it concluded (its own text, when
    /// another call follows it and it is a failure).
    pending: Option<(Outcome, usize)>,
    committed: bool,
    /// The call was wrapped in a code fence inside the tags.
    fenced: bool,
}

fn opts() -> CallOpts {
    CallOpts {
        wrapped: true,
        format: FormatId::Hermes,
        parameters_native: false,
        keys: Keys::Named,
    }
}

impl HermesMachine {
    /// A body for a construct that starts with `w.open`.
    pub(crate) fn boxed(w: &'static Wrapper, text_mode: bool) -> Box<dyn crate::format::Body> {
        Driven::boxed(HermesMachine::new(w, text_mode))
    }

    fn new(w: &'static Wrapper, text_mode: bool) -> HermesMachine {
        HermesMachine {
            w,
            st: H::Trigger { left: w.open.len() },
            text_mode,
            pending: None,
            committed: false,
            fenced: false,
        }
    }

    fn extra(&self, ctx: &Ctx<'_>, mut more: Vec<RepairKind>) -> Vec<RepairKind> {
        if self.fenced {
            more.push(RepairKind::FencedJson);
        }
        if self.text_mode && !ctx.auto {
            more.push(RepairKind::NativeInTextMode);
        }
        more
    }

    /// Queues a concluded call, emitting the one queued before it.
    fn queue(&mut self, o: Outcome, raw: &str, out: &mut Vec<Event>, ctx: &Ctx<'_>) {
        self.committed = true;
        // The turn decoder accounts a failure's text as read, and a proposal's as all read
        // so far, so the queued call's own text starts after what its predecessor claimed.
        let claimed = self.emit_before_next(raw, ctx, out);
        self.pending = Some((o, raw.len() - claimed));
    }

    /// Emits the queued call because another call follows it: a failure carries only the
    /// text read up to its end. Returns how much of `raw` the emitted event claimed.
    fn emit_before_next(&mut self, raw: &str, ctx: &Ctx<'_>, out: &mut Vec<Event>) -> usize {
        match self.pending.take() {
            Some((o @ Outcome::Failure { .. }, len)) => {
                o.emit(&[], &raw[..len], out);
                len
            }
            Some((o, _)) => {
                o.emit(&self.extra(ctx, Vec::new()), raw, out);
                raw.len()
            }
            None => 0,
        }
    }

    fn emit_pending(
        &mut self,
        repairs: Vec<RepairKind>,
        raw: &str,
        ctx: &Ctx<'_>,
        out: &mut Vec<Event>,
    ) {
        if let Some((o, _)) = self.pending.take() {
            o.emit(&self.extra(ctx, repairs), raw, out);
        }
    }

    /// A call inside the wrapper failed: emit what is queued and the failure, and give the
    /// failing character back to prose.
    fn fail(&mut self, o: Option<Outcome>, raw: &str, ctx: &Ctx<'_>, out: &mut Vec<Event>) -> Flow {
        let claimed = self.emit_before_next(raw, ctx, out);
        match o {
            Some(o) => {
                o.emit(&[], &raw[claimed.min(raw.len())..], out);
                Flow::DoneBefore
            }
            None if self.committed => Flow::DoneBefore,
            None => Flow::Reject,
        }
    }
}

impl Machine for HermesMachine {
    fn push(&mut self, c: char, raw: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Flow {
        match &mut self.st {
            H::Trigger { left } => {
                *left -= 1;
                if *left == 0 {
                    self.st = H::Inner { ws: 0, lit: 0 };
                }
                Flow::More
            }
            H::Inner { ws, lit } => {
                let function = self.w.tags.function;
                if *lit > 0 {
                    if function[*lit..].starts_with(c) {
                        *lit += c.len_utf8();
                        if *lit == function.len() {
                            self.committed = true;
                            self.st = H::Xml(Box::new(XmlCall::with_tags(true, self.w.tags)));
                        }
                        return Flow::More;
                    }
                    return Flow::Reject;
                }
                if c.is_whitespace() {
                    *ws += 1;
                    return if *ws > LEAD_MAX {
                        Flow::Reject
                    } else {
                        Flow::More
                    };
                }
                if !self.w.hermes && c != '<' {
                    return Flow::Reject;
                }
                match c {
                    // GLM-4.5: the tool's name right after the tag. Nothing is committed until
                    // its first `<arg_key>` or the end tag shows it is a call.
                    c if c.is_ascii_alphabetic() || c == '_' => {
                        let mut x = Box::new(XmlCall::with_tags(false, &GLM));
                        let r = x.push(c, ctx, out);
                        self.st = H::Xml(x);
                        match r {
                            Ok(_) => Flow::More,
                            Err(_) => Flow::Reject,
                        }
                    }
                    '{' => {
                        let mut call = CallObject::new(opts());
                        let _ = call.push(c, ctx, out);
                        self.committed = true;
                        self.st = H::Call(call);
                        Flow::More
                    }
                    '[' => {
                        self.committed = true;
                        self.st = H::List {
                            st: ListSt::ElemOrEnd,
                            call: None,
                        };
                        Flow::More
                    }
                    '<' => {
                        *lit = 1;
                        Flow::More
                    }
                    '`' if !self.fenced => {
                        self.st = H::FenceLead { buf: c.to_string() };
                        Flow::More
                    }
                    _ => Flow::Reject,
                }
            }
            H::FenceLead { buf } => {
                if c == '\n' {
                    let lang = buf.trim_end().strip_prefix("```");
                    if matches!(lang, Some("" | "json" | "JSON")) {
                        self.fenced = true;
                        self.st = H::Inner { ws: 0, lit: 0 };
                        return Flow::More;
                    }
                    return Flow::Reject;
                }
                buf.push(c);
                if buf.len() > 12 {
                    return Flow::Reject;
                }
                Flow::More
            }
            H::Call(call) => match call.push(c, ctx, out) {
                Ok(Push::More) => Flow::More,
                Ok(_) => {
                    let r = call.conclude(ctx, out);
                    let o = match r {
                        Ok(o) => Some(o),
                        Err(e) => call.outcome_of(e),
                    };
                    if let Some(o) = o {
                        self.queue(o, raw, out, ctx);
                    }
                    self.st = H::Tail {
                        buf: String::new(),
                        after_json: true,
                    };
                    Flow::More
                }
                Err(e) => {
                    let o = call.outcome_of(e);
                    self.fail(o, raw, ctx, out)
                }
            },
            H::List { st, call } => {
                if let Some(obj) = call {
                    return match obj.push(c, ctx, out) {
                        Ok(Push::More) => Flow::More,
                        Ok(_) => {
                            let o = match obj.conclude(ctx, out) {
                                Ok(o) => Some(o),
                                Err(e) => obj.outcome_of(e),
                            };
                            *call = None;
                            *st = ListSt::CommaOrEnd;
                            if let Some(o) = o {
                                self.queue(o, raw, out, ctx);
                            }
                            Flow::More
                        }
                        Err(e) => {
                            let o = obj.outcome_of(e);
                            self.fail(o, raw, ctx, out)
                        }
                    };
                }
                if c.is_whitespace() {
                    return Flow::More;
                }
                match (&st, c) {
                    (ListSt::ElemOrEnd | ListSt::Elem, '{') => {
                        // Another call follows, so the one before it is complete.
                        self.emit_before_next(raw, ctx, out);
                        let H::List { call, .. } = &mut self.st else {
                            return Flow::More;
                        };
                        let mut obj = CallObject::new(opts());
                        let _ = obj.push(c, ctx, out);
                        *call = Some(obj);
                        Flow::More
                    }
                    (ListSt::ElemOrEnd | ListSt::CommaOrEnd, ']') => {
                        self.st = H::Tail {
                            buf: String::new(),
                            after_json: false,
                        };
                        Flow::More
                    }
                    (ListSt::CommaOrEnd, ',') => {
                        *st = ListSt::Elem;
                        Flow::More
                    }
                    _ => {
                        let o = Some(Outcome::Failure {
                            index: None,
                            kind: crate::event::FailureKind::InvalidJson,
                        });
                        self.fail(o, raw, ctx, out)
                    }
                }
            }
            H::Xml(x) => {
                let r = x.push(c, ctx, out);
                self.committed |= !x.uncommitted();
                match r {
                    Ok(false) => Flow::More,
                    Ok(true) => {
                        let o = match x.conclude(ctx, out) {
                            Ok(o) => Some(o),
                            Err(e) => x.outcome_of(e),
                        };
                        let whole = x.ends_wrapper();
                        if let Some(o) = o {
                            self.queue(o, raw, out, ctx);
                        }
                        if whole {
                            // The call's end tag was the wrapper's.
                            self.emit_pending(Vec::new(), raw, ctx, out);
                            return Flow::Done;
                        }
                        self.st = H::Tail {
                            buf: String::new(),
                            after_json: false,
                        };
                        Flow::More
                    }
                    Err(e) => {
                        let o = x.outcome_of(e);
                        self.fail(o, raw, ctx, out)
                    }
                }
            }
            H::Tail { buf, after_json } => {
                if *after_json && c == '{' && buf.trim().is_empty() {
                    // A second call inside the same wrapper: the first is complete.
                    self.emit_before_next(raw, ctx, out);
                    let mut call = CallObject::new(opts());
                    let _ = call.push(c, ctx, out);
                    self.st = H::Call(call);
                    return Flow::More;
                }
                buf.push(c);
                if !self.w.hermes && buf.trim_start() == self.w.tags.function {
                    // Another call inside the same wrapper: the one before it is complete.
                    self.emit_before_next(raw, ctx, out);
                    self.st = H::Xml(Box::new(XmlCall::with_tags(true, self.w.tags)));
                    return Flow::More;
                }
                if let Some(junk) = buf.strip_suffix(self.w.close) {
                    // The closing fence of a fenced call is part of the repair, not junk.
                    let junk = if self.fenced {
                        junk.trim().trim_end_matches('`')
                    } else {
                        junk
                    };
                    let repairs = if junk.trim().is_empty() {
                        Vec::new()
                    } else {
                        vec![RepairKind::TrailingAfterCall]
                    };
                    self.emit_pending(repairs, raw, ctx, out);
                    return Flow::Done;
                }
                if buf.ends_with(self.w.open) || buf.len() > TAIL_MAX {
                    let held = std::mem::take(buf);
                    self.emit_pending(vec![RepairKind::MissingCloseTag], raw, ctx, out);
                    return Flow::Ended {
                        held,
                        line_start: false,
                    };
                }
                Flow::More
            }
        }
    }

    fn eos(&mut self, raw: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Eos {
        let st = std::mem::replace(
            &mut self.st,
            H::Tail {
                buf: String::new(),
                after_json: false,
            },
        );
        match st {
            H::Trigger { .. } | H::Inner { .. } | H::FenceLead { .. } => Eos::Reject,
            H::Call(mut call)
            | H::List {
                call: Some(mut call),
                ..
            } => {
                let o = match call.finish(ctx, out) {
                    Ok(o) => Some(o),
                    Err(e) => call.outcome_of(e),
                };
                match o {
                    Some(o @ Outcome::Proposal { .. }) => {
                        self.queue(o, raw, out, ctx);
                        self.emit_pending(vec![RepairKind::MissingCloseTag], raw, ctx, out);
                    }
                    other => {
                        self.emit_pending(Vec::new(), raw, ctx, out);
                        if let Some(o) = other {
                            o.emit(&[], raw, out);
                        }
                    }
                }
                Eos::Closed(None)
            }
            H::List { call: None, .. } => {
                self.emit_pending(vec![RepairKind::MissingCloseTag], raw, ctx, out);
                Eos::Closed(None)
            }
            H::Xml(x) if !self.committed && x.uncommitted() => Eos::Reject,
            H::Xml(mut x) => {
                match x.eos(ctx, out) {
                    Ok(o) => {
                        self.queue(o, raw, out, ctx);
                        // A GLM-4.5 call's missing end tag is the wrapper's, counted once.
                        let wrapper = if x.ends_wrapper() {
                            Vec::new()
                        } else {
                            vec![RepairKind::MissingCloseTag]
                        };
                        self.emit_pending(wrapper, raw, ctx, out);
                    }
                    Err(e) => {
                        self.emit_pending(Vec::new(), raw, ctx, out);
                        if let Some(o) = x.outcome_of(e) {
                            o.emit(&[], raw, out);
                        }
                    }
                }
                Eos::Closed(None)
            }
            H::Tail { buf, .. } => {
                self.emit_pending(vec![RepairKind::MissingCloseTag], raw, ctx, out);
                Eos::Closed(if buf.is_empty() { None } else { Some(buf) })
            }
        }
    }

    fn flush(&mut self, out: &mut Vec<Event>) {
        match &mut self.st {
            H::Call(call)
            | H::List {
                call: Some(call), ..
            } => call.flush(out),
            _ => {}
        }
    }

    fn uncommitted(&self) -> bool {
        !self.committed
    }

    fn open_index(&self) -> Option<usize> {
        match &self.st {
            H::Call(call)
            | H::List {
                call: Some(call), ..
            } => call.index(),
            H::Xml(x) => x.index(),
            _ => None,
        }
    }
}
