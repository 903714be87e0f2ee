//! Mistral: `[TOOL_CALLS]` followed by a JSON list of call objects (`[{…}, {…}]`), a single
//! object, or the v11 form `name[ARGS]{json}` (optionally `name[CALL_ID]id[ARGS]{json}`), or
//! `name{json}` without `[ARGS]` (the first v11 tokenizers; vLLM's `mistral` tool parser splits
//! such a call at its first `{`). Each v11 call has its own `[TOOL_CALLS]`.
//!
//! The v11 form is read by the same call-object parser as the others: its name and
//! arguments are fed to it as the object `{"name": "…", "arguments": {json}}` they mean, so
//! arguments stream and validate exactly as in the JSON forms.

use super::call::{CallObject, CallOpts, Keys, Outcome};
use super::json::Push;
use super::{Driven, Eos, Flow, Machine, detect_literal};
use crate::event::{Event, FailureKind, RepairKind};
use crate::format::{Ctx, Detect, Format, FormatId, Position};

const TAG: &str = "[TOOL_CALLS]";
const ARGS: &str = "[ARGS]";
const CALL_ID: &str = "[CALL_ID]";
const LEAD_MAX: usize = 256;
const NAME_MAX: usize = 128;

/// The `[TOOL_CALLS]` detector.
#[derive(Debug)]
pub struct Mistral {
    text_mode: bool,
}

impl Mistral {
    pub fn new(text_mode: bool) -> Mistral {
        Mistral { text_mode }
    }
}

impl Format for Mistral {
    fn id(&self) -> FormatId {
        FormatId::Mistral
    }
    fn trigger_bytes(&self) -> &'static [u8] {
        b"["
    }
    fn line_start_bytes(&self) -> &'static [u8] {
        b""
    }
    fn detect(&self, s: &str, at: Position, _ctx: &Ctx<'_>) -> Detect {
        match detect_literal(s, TAG, at) {
            None => Detect::NeedMore,
            Some(false) => Detect::No,
            Some(true) => Detect::Start(Driven::boxed(MistralMachine {
                st: M::Trigger { left: TAG.len() },
                text_mode: self.text_mode,
                failed: None,
            })),
        }
    }
}

fn opts() -> CallOpts {
    CallOpts {
        wrapped: true,
        format: FormatId::Mistral,
        parameters_native: false,
        keys: Keys::Named,
    }
}

#[derive(Debug)]
enum ListSt {
    ElemOrEnd,
    Elem,
    CommaOrEnd,
}

#[derive(Debug)]
enum M {
    Trigger {
        left: usize,
    },
    Lead {
        ws: usize,
    },
    /// A single object.
    Call(Box<CallObject>),
    List {
        st: ListSt,
        call: Option<Box<CallObject>>,
    },
    /// v11: the tool name, up to `[`.
    Name(String),
    /// v11: after the name, `[ARGS]` or `[CALL_ID]…[ARGS]`.
    Marker {
        name: String,
        buf: String,
        in_id: bool,
    },
    /// v11: the arguments object, fed into a call object.
    Args(Box<CallObject>),
}

#[derive(Debug)]
struct MistralMachine {
    st: M,
    text_mode: bool,
    /// A list element that failed, held until the list goes on or ends so that its raw text
    /// runs to the next element (or takes the closing `]`), and how much raw text was read
    /// when it failed.
    failed: Option<(Outcome, usize)>,
}

impl MistralMachine {
    fn extra(&self, ctx: &Ctx<'_>) -> Vec<RepairKind> {
        if self.text_mode && !ctx.auto {
            vec![RepairKind::NativeInTextMode]
        } else {
            Vec::new()
        }
    }

    fn conclude(&self, call: &mut CallObject, raw: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) {
        let o = match call.conclude(ctx, out) {
            Ok(o) => Some(o),
            Err(e) => call.outcome_of(e),
        };
        if let Some(o) = o {
            o.emit(&self.extra(ctx), raw, out);
        }
    }

    fn fail(call: &CallObject, e: super::call::CallErr, raw: &str, out: &mut Vec<Event>) -> Flow {
        if let Some(o) = call.outcome_of(e) {
            o.emit(&[], raw, out);
        }
        Flow::DoneBefore
    }

    /// Emits a held failure because the list goes on: it carries the text read up to its
    /// end. Returns how much of `raw` it claimed.
    fn emit_failed_before_next(&mut self, raw: &str, out: &mut Vec<Event>) -> usize {
        match self.failed.take() {
            Some((o, len)) => {
                o.emit(&[], &raw[..len.min(raw.len())], out);
                len.min(raw.len())
            }
            None => 0,
        }
    }

    /// A v11 call whose `name` was read: a call object fed `{"name": "…", "arguments":`, ready
    /// for the arguments object.
    fn v11_call(name: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Box<CallObject> {
        // The name goes in as a JSON string; its characters need no escaping.
        let mut call = CallObject::new(opts());
        let prefix = format!("{{\"name\":\"{name}\",\"arguments\":");
        for ch in prefix.chars() {
            let _ = call.push(ch, ctx, out);
        }
        call
    }

    /// Emits a held failure at the end of the list, with everything read.
    fn emit_failed(&mut self, raw: &str, out: &mut Vec<Event>) {
        if let Some((o, _)) = self.failed.take() {
            o.emit(&[], raw, out);
        }
    }
}

fn emit_outcome(o: Option<Outcome>, extra: &[RepairKind], raw: &str, out: &mut Vec<Event>) {
    if let Some(o) = o {
        o.emit(extra, raw, out);
    }
}

impl Machine for MistralMachine {
    fn push(&mut self, c: char, raw: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Flow {
        match &mut self.st {
            M::Trigger { left } => {
                *left -= c.len_utf8();
                if *left == 0 {
                    self.st = M::Lead { ws: 0 };
                }
                Flow::More
            }
            M::Lead { ws } => {
                if c.is_whitespace() && *ws < LEAD_MAX {
                    *ws += 1;
                    return Flow::More;
                }
                match c {
                    '{' => {
                        let mut call = CallObject::new(opts());
                        let _ = call.push(c, ctx, out);
                        self.st = M::Call(call);
                        Flow::More
                    }
                    '[' => {
                        self.st = M::List {
                            st: ListSt::ElemOrEnd,
                            call: None,
                        };
                        Flow::More
                    }
                    c if c.is_ascii_alphanumeric() || c == '_' => {
                        self.st = M::Name(c.to_string());
                        Flow::More
                    }
                    _ => Flow::Reject,
                }
            }
            M::Call(call) => match call.push(c, ctx, out) {
                Ok(Push::More) => Flow::More,
                Ok(_) => {
                    let mut call = std::mem::replace(call, CallObject::new(opts()));
                    self.conclude(&mut call, raw, ctx, out);
                    Flow::Done
                }
                Err(e) => Self::fail(call, e, raw, out),
            },
            M::List { st, call } => {
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
                            match o {
                                Some(o @ Outcome::Failure { .. }) => {
                                    self.failed = Some((o, raw.len()));
                                }
                                o => {
                                    let extra = self.extra(ctx);
                                    emit_outcome(o, &extra, raw, out);
                                }
                            }
                            Flow::More
                        }
                        Err(e) => {
                            let o = obj.outcome_of(e);
                            let claimed = self.emit_failed_before_next(raw, out);
                            if let Some(o) = o {
                                o.emit(&[], &raw[claimed..], out);
                            }
                            Flow::DoneBefore
                        }
                    };
                }
                if c.is_whitespace() {
                    return Flow::More;
                }
                match (&st, c) {
                    (ListSt::ElemOrEnd | ListSt::Elem, '{') => {
                        let mut obj = CallObject::new(opts());
                        let _ = obj.push(c, ctx, out);
                        *call = Some(obj);
                        self.emit_failed_before_next(raw, out);
                        Flow::More
                    }
                    (ListSt::ElemOrEnd | ListSt::CommaOrEnd, ']') => {
                        self.emit_failed(raw, out);
                        Flow::Done
                    }
                    (ListSt::CommaOrEnd, ',') => {
                        *st = ListSt::Elem;
                        Flow::More
                    }
                    (ListSt::ElemOrEnd, _) => Flow::Reject,
                    _ => {
                        let claimed = self.emit_failed_before_next(raw, out);
                        out.push(Event::Failure {
                            index: None,
                            kind: FailureKind::InvalidJson,
                            raw: raw[claimed..].to_owned(),
                        });
                        Flow::DoneBefore
                    }
                }
            }
            M::Name(name) => {
                if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                    if name.len() >= NAME_MAX {
                        return Flow::Reject;
                    }
                    name.push(c);
                    return Flow::More;
                }
                if c == '{' && !name.is_empty() {
                    // v11 without `[ARGS]`: the arguments object follows the name directly.
                    let name = std::mem::take(name);
                    self.st = M::Args(Self::v11_call(&name, ctx, out));
                    return self.push(c, raw, ctx, out);
                }
                if c == '[' {
                    let name = std::mem::take(name);
                    self.st = M::Marker {
                        name,
                        buf: "[".to_owned(),
                        in_id: false,
                    };
                    return Flow::More;
                }
                Flow::Reject
            }
            M::Marker { name, buf, in_id } => {
                if *in_id {
                    // The call id runs up to the next `[`.
                    if c == '[' {
                        *in_id = false;
                        buf.push(c);
                    }
                    return if buf.len() > NAME_MAX {
                        Flow::Reject
                    } else {
                        Flow::More
                    };
                }
                buf.push(c);
                if buf == ARGS {
                    let call = Self::v11_call(name, ctx, out);
                    self.st = M::Args(call);
                    return Flow::More;
                }
                if buf == CALL_ID {
                    buf.clear();
                    *in_id = true;
                    return Flow::More;
                }
                if ARGS.starts_with(buf.as_str()) || CALL_ID.starts_with(buf.as_str()) {
                    return Flow::More;
                }
                Flow::Reject
            }
            M::Args(call) => match call.push(c, ctx, out) {
                Ok(_) if call.value_closed() => {
                    let _ = call.push('}', ctx, out);
                    let mut call = std::mem::replace(call, CallObject::new(opts()));
                    self.conclude(&mut call, raw, ctx, out);
                    Flow::Done
                }
                Ok(_) => Flow::More,
                Err(e) => Self::fail(call, e, raw, out),
            },
        }
    }

    fn eos(&mut self, raw: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Eos {
        let st = std::mem::replace(&mut self.st, M::Lead { ws: 0 });
        let extra = self.extra(ctx);
        match st {
            M::Call(mut call)
            | M::List {
                call: Some(mut call),
                ..
            }
            | M::Args(mut call) => {
                let o = match call.finish(ctx, out) {
                    Ok(o) => Some(o),
                    Err(e) => call.outcome_of(e),
                };
                emit_outcome(o, &extra, raw, out);
                Eos::Closed(None)
            }
            M::List { .. } => {
                self.emit_failed(raw, out);
                Eos::Closed(None)
            }
            _ => Eos::Reject,
        }
    }

    fn flush(&mut self, out: &mut Vec<Event>) {
        match &mut self.st {
            M::Call(call)
            | M::List {
                call: Some(call), ..
            }
            | M::Args(call) => call.flush(out),
            _ => {}
        }
    }

    fn uncommitted(&self) -> bool {
        match &self.st {
            M::Call(call)
            | M::List {
                call: Some(call), ..
            }
            | M::Args(call) => call.uncommitted(),
            _ => true,
        }
    }

    fn open_index(&self) -> Option<usize> {
        match &self.st {
            M::Call(call)
            | M::List {
                call: Some(call), ..
            }
            | M::Args(call) => call.index(),
            _ => None,
        }
    }
}
