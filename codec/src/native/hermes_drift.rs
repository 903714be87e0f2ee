//! Hermes drift: the Hermes call object `{"name": f, "arguments": {…}}` in another wrapper
//! than `<tool_call>`, and the attribute form `<function name="f">{…}</function>`, as
//! llama.cpp's Hermes 2 Pro parser accepts them (`common_chat_parse_hermes_2_pro` in
//! `common/chat.cpp`: its open tags `<function_call>`, `<tool>`, `<tools>`, `<response>`,
//! `<json>`, `<xml>`, `<JSON>`, each before `{"name"`, and `<function name="f">` before a
//! JSON arguments object; written from its description, nothing copied). A ```` ```json ````
//! fence inside `<tool_call>` is read by [`super::hermes`] itself (`fenced_json`).
//!
//! # Why this is `hermes` and not a format of its own
//!
//! These are the same model family writing the same call object: only the wrapper drifted
//! (small models trained on ChatML tool prompts echo the prompt's `<tools>` tag, or the
//! `<function_call>` of older templates). A profile that names `hermes` means "this model
//! writes Hermes calls", and the drift should decode under it; the proposals say `hermes`,
//! and each carries the `hermes_wrapper` repair, so how often a model drifts is counted
//! rather than hidden. The detector is a separate [`Format`] (as qwen3_xml's bare
//! `<function=` is) because its triggers and its strictness differ from `<tool_call>`'s.
//!
//! # Never a false call
//!
//! `<tool>`, `<tools>`, `<json>`, `<response>` and `<xml>` are common words in prose and in
//! HTML-ish text, so a wrapper says nothing by itself. The object after it is read as an
//! *unwrapped* call object (its first key must be a call's, `ToolCallStart` waits for both
//! the name and the arguments key), and a call that does not name a declared tool (builtin or
//! client) is not decoded at all: whatever the object held, every byte goes back to prose —
//! no failure, no `unknown_tool`. Only a call to a declared tool starts, and from then on its
//! malformations are failures as usual. For `<function name="f">` the name is known at the
//! tag; the call starts only when `f` is declared and the tag is followed (past blanks) by
//! `{` and then a quoted key or `}`, and otherwise the tag is prose.
//!
//! # Triggers
//!
//! Each wrapper's open tag, and `<function name="`, matched anywhere. They part from the other
//! formats' triggers at a byte one of them cannot hold: `<tool>`/`<tools>` from hermes'
//! `<tool_call>` and marker_list's `<tool_calls>` at the byte after `<tool`;
//! `<function_call>`, `<function name="` and qwen3_xml's `<function=` at the byte after
//! `<function`. A test checks every pair.
//!
//! After the call, blanks and the matching close tag are part of the construct; without the
//! close tag the call carries `missing_close_tag` and what followed goes back to prose.

use super::call::{CallErr, CallObject, CallOpts, Keys, Outcome, resolve_name};
use super::json::Push;
use super::{Driven, Eos, Flow, Machine, detect_literal};
use crate::event::{Event, RepairKind};
use crate::format::{Ctx, Detect, Format, FormatId, Position};

/// The wrapper tags around a call object, each with its close tag.
pub const WRAPPERS: &[(&str, &str)] = &[
    ("<function_call>", "</function_call>"),
    ("<tool>", "</tool>"),
    ("<tools>", "</tools>"),
    ("<response>", "</response>"),
    ("<json>", "</json>"),
    ("<xml>", "</xml>"),
    ("<JSON>", "</JSON>"),
];
/// The attribute form's opening, up to the name.
pub const FUNCTION_NAME: &str = "<function name=\"";
const FUNCTION_CLOSE: &str = "</function>";
const MAX_NAME: usize = 128;
/// Blanks allowed between a tag and the call, and after the call before its close tag.
const WS_MAX: usize = 64;

fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')
}

/// The detector of every drifted wrapper.
#[derive(Debug)]
pub struct HermesDrift {
    text_mode: bool,
}

impl HermesDrift {
    pub fn new(text_mode: bool) -> HermesDrift {
        HermesDrift { text_mode }
    }

    fn start(&self, open: &str, close: &'static str, st: D) -> Detect {
        Detect::Start(Driven::boxed(DriftMachine {
            st: D::Trigger {
                left: open.len(),
                next: Box::new(st),
            },
            close,
            text_mode: self.text_mode,
            pending: None,
        }))
    }
}

impl Format for HermesDrift {
    fn id(&self) -> FormatId {
        FormatId::Hermes
    }
    fn trigger_bytes(&self) -> &'static [u8] {
        b"<"
    }
    fn line_start_bytes(&self) -> &'static [u8] {
        b""
    }
    fn detect(&self, s: &str, at: Position, _ctx: &Ctx<'_>) -> Detect {
        let mut more = false;
        for &(open, close) in WRAPPERS {
            match detect_literal(s, open, at) {
                Some(true) => return self.start(open, close, D::Lead { ws: 0 }),
                None => more = true,
                Some(false) => {}
            }
        }
        match detect_literal(s, FUNCTION_NAME, at) {
            Some(true) => self.start(FUNCTION_NAME, FUNCTION_CLOSE, D::Name(String::new())),
            None => Detect::NeedMore,
            Some(false) if more => Detect::NeedMore,
            Some(false) => Detect::No,
        }
    }
}

#[derive(Debug)]
enum D {
    /// The trigger, `left` bytes of it still to read; then `next`.
    Trigger { left: usize, next: Box<D> },
    /// After a wrapper tag: blanks, then the call object's `{`.
    Lead { ws: usize },
    /// The call object, read unwrapped.
    Object(Box<CallObject>),
    /// `<function name="`: the name, up to its `"`.
    Name(String),
    /// After the name's `"`: `>`, blanks, then `{`.
    Tag {
        name: String,
        brace: bool,
        ws: usize,
    },
    /// After `<function name="f">` and `{`: blanks, then a quoted key or `}` says this is an
    /// arguments object. `held` is what was read since the `{`.
    ArgsOpen { name: String, held: String },
    /// The arguments of `<function name="f">`, inside the call object they stand for.
    Args(Box<CallObject>),
    /// After the call: blanks, then the close tag.
    Tail { buf: String },
}

#[derive(Debug)]
struct DriftMachine {
    st: D,
    close: &'static str,
    text_mode: bool,
    /// The concluded call, emitted when its close tag comes (or does not).
    pending: Option<Outcome>,
}

fn opts(wrapped: bool) -> CallOpts {
    CallOpts {
        wrapped,
        format: FormatId::Hermes,
        parameters_native: false,
        keys: Keys::Named,
    }
}

/// A call that never started (no declared tool named) is prose, whatever stopped it.
fn started(o: Option<Outcome>) -> Option<Outcome> {
    match o {
        Some(Outcome::Failure { index: None, .. }) | None => None,
        o => o,
    }
}

impl DriftMachine {
    fn extra(&self, ctx: &Ctx<'_>, more: &[RepairKind]) -> Vec<RepairKind> {
        let mut v = vec![RepairKind::HermesWrapper];
        v.extend_from_slice(more);
        if self.text_mode && !ctx.auto {
            v.push(RepairKind::NativeInTextMode);
        }
        v
    }

    fn emit_pending(
        &mut self,
        repairs: &[RepairKind],
        raw: &str,
        ctx: &Ctx<'_>,
        out: &mut Vec<Event>,
    ) {
        if let Some(o) = self.pending.take() {
            o.emit(&self.extra(ctx, repairs), raw, out);
        }
    }

    /// A call stopped by `e` before its end: a started call fails (the character goes back to
    /// prose); one that never started is prose.
    fn stop(call: &CallObject, e: CallErr, raw: &str, out: &mut Vec<Event>) -> Flow {
        match started(call.outcome_of(e)) {
            Some(o) => {
                o.emit(&[], raw, out);
                Flow::DoneBefore
            }
            None => Flow::Reject,
        }
    }

    /// The call object's `}` was read: conclude it and look for the close tag.
    fn concluded(&mut self, o: Option<Outcome>) -> Flow {
        match started(o) {
            Some(o) => {
                self.pending = Some(o);
                self.st = D::Tail { buf: String::new() };
                Flow::More
            }
            None => Flow::Reject,
        }
    }

    /// `<function name="f">{` then `held` (blanks and a quoted key's quote, or `}`): the call
    /// starts, as the object `{"name": "f", "arguments": {…}}`.
    fn start_args(
        &mut self,
        name: &str,
        held: &str,
        ctx: &mut Ctx<'_>,
        out: &mut Vec<Event>,
    ) -> Flow {
        let mut call = CallObject::new(opts(true));
        // The name's characters are `name_char`s, so it needs no escaping in JSON.
        let prefix = format!("{{\"name\":\"{name}\",\"arguments\":{{");
        for ch in prefix.chars().chain(held.chars()) {
            if call.push(ch, ctx, out).is_err() {
                return Flow::Reject;
            }
        }
        self.st = D::Args(call);
        self.args_closed(ctx, out)
    }

    /// After a character of `<function name="f">`'s arguments: when they closed, the call
    /// object they stand for closes too.
    fn args_closed(&mut self, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Flow {
        let D::Args(call) = &mut self.st else {
            return Flow::More;
        };
        if !call.value_closed() {
            return Flow::More;
        }
        let o = match call.push('}', ctx, out) {
            Ok(Push::Complete) => match call.conclude(ctx, out) {
                Ok(o) => Some(o),
                Err(e) => call.outcome_of(e),
            },
            Ok(_) => None,
            Err(e) => call.outcome_of(e),
        };
        self.concluded(o)
    }
}

impl Machine for DriftMachine {
    fn push(&mut self, c: char, raw: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Flow {
        match &mut self.st {
            D::Trigger { left, next } => {
                *left -= c.len_utf8();
                if *left == 0 {
                    self.st = std::mem::replace(next.as_mut(), D::Lead { ws: 0 });
                }
                Flow::More
            }
            D::Lead { ws } => {
                if c.is_whitespace() {
                    *ws += 1;
                    return if *ws > WS_MAX {
                        Flow::Reject
                    } else {
                        Flow::More
                    };
                }
                if c != '{' {
                    return Flow::Reject;
                }
                let mut call = CallObject::new(opts(false));
                if call.push(c, ctx, out).is_err() {
                    return Flow::Reject;
                }
                self.st = D::Object(call);
                Flow::More
            }
            D::Object(call) => match call.push(c, ctx, out) {
                Ok(Push::More) => Flow::More,
                Ok(_) => {
                    let o = match call.conclude(ctx, out) {
                        Ok(o) => Some(o),
                        Err(e) => call.outcome_of(e),
                    };
                    self.concluded(o)
                }
                Err(e) => Self::stop(call, e, raw, out),
            },
            D::Name(buf) => {
                if name_char(c) && buf.len() < MAX_NAME {
                    buf.push(c);
                    return Flow::More;
                }
                if c != '"' || buf.is_empty() {
                    return Flow::Reject;
                }
                let name = std::mem::take(buf);
                self.st = D::Tag {
                    name,
                    brace: false,
                    ws: 0,
                };
                Flow::More
            }
            D::Tag { name, brace, ws } => {
                if !*brace {
                    if c != '>' {
                        return Flow::Reject;
                    }
                    *brace = true;
                    return Flow::More;
                }
                if c.is_whitespace() {
                    *ws += 1;
                    return if *ws > WS_MAX {
                        Flow::Reject
                    } else {
                        Flow::More
                    };
                }
                // Only a declared tool's tag can start a call.
                if c != '{' || resolve_name(ctx.registry, name).is_none() {
                    return Flow::Reject;
                }
                let name = std::mem::take(name);
                self.st = D::ArgsOpen {
                    name,
                    held: String::new(),
                };
                Flow::More
            }
            D::ArgsOpen { name, held } => {
                held.push(c);
                if c.is_whitespace() {
                    return if held.len() > WS_MAX {
                        Flow::Reject
                    } else {
                        Flow::More
                    };
                }
                if !matches!(c, '"' | '\'' | '}') {
                    return Flow::Reject;
                }
                let (name, held) = (std::mem::take(name), std::mem::take(held));
                self.start_args(&name, &held, ctx, out)
            }
            D::Args(call) => match call.push(c, ctx, out) {
                Ok(_) => self.args_closed(ctx, out),
                Err(e) => Self::stop(call, e, raw, out),
            },
            D::Tail { buf } => {
                buf.push(c);
                let t = buf.trim_start();
                if t == self.close {
                    self.emit_pending(&[], raw, ctx, out);
                    return Flow::Done;
                }
                if self.close.starts_with(t) && buf.len() <= WS_MAX {
                    return Flow::More;
                }
                let held = std::mem::take(buf);
                self.emit_pending(&[RepairKind::MissingCloseTag], raw, ctx, out);
                Flow::Ended {
                    held,
                    line_start: false,
                }
            }
        }
    }

    fn eos(&mut self, raw: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Eos {
        let st = std::mem::replace(&mut self.st, D::Tail { buf: String::new() });
        match st {
            D::Object(mut call) | D::Args(mut call) => {
                let o = match call.finish(ctx, out) {
                    Ok(o) => Some(o),
                    Err(e) => call.outcome_of(e),
                };
                match started(o) {
                    Some(o @ Outcome::Proposal { .. }) => {
                        o.emit(&self.extra(ctx, &[RepairKind::MissingCloseTag]), raw, out);
                    }
                    Some(o) => o.emit(&[], raw, out),
                    None => return Eos::Reject,
                }
                Eos::Closed(None)
            }
            D::Tail { buf } => {
                self.emit_pending(&[RepairKind::MissingCloseTag], raw, ctx, out);
                Eos::Closed(if buf.is_empty() { None } else { Some(buf) })
            }
            _ => Eos::Reject,
        }
    }

    fn flush(&mut self, out: &mut Vec<Event>) {
        if let D::Object(call) | D::Args(call) = &mut self.st {
            call.flush(out);
        }
    }

    fn uncommitted(&self) -> bool {
        match &self.st {
            D::Object(call) | D::Args(call) => call.uncommitted(),
            D::Tail { .. } => self.pending.is_none(),
            _ => true,
        }
    }

    fn open_index(&self) -> Option<usize> {
        match &self.st {
            D::Object(call) | D::Args(call) => call.index(),
            _ => None,
        }
    }
}
