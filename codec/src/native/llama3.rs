//! Llama 3.x: `<|python_tag|>{"name": …, "parameters": …}` (several calls separated by `;`),
//! and in the `llama3` single-format mode also a bare `{"name": …, "parameters": …}` line
//! (in `auto` that line belongs to [`super::bare_json`], which accepts either key).
//!
//! After `<|python_tag|>`, anything but a JSON object (Llama's built-in tools write Python
//! there, `brave_search.call(query=…)`) is not a JSON call and goes back to prose.

use super::bare_json::detect_object;
use super::call::{CallObject, CallOpts, Keys, Outcome};
use super::json::Push;
use super::{Driven, Eos, Flow, Machine, detect_literal};
use crate::event::{Event, RepairKind};
use crate::format::{Ctx, Detect, Format, FormatId, Position};

const TAG: &str = "<|python_tag|>";
const LEAD_MAX: usize = 256;

/// The `<|python_tag|>` detector; with `line_objects`, also the line-start object trigger.
#[derive(Debug)]
pub struct PythonTag {
    line_objects: bool,
    text_mode: bool,
}

impl PythonTag {
    pub fn new(line_objects: bool, text_mode: bool) -> PythonTag {
        PythonTag {
            line_objects,
            text_mode,
        }
    }
}

impl Format for PythonTag {
    fn id(&self) -> FormatId {
        FormatId::Llama3
    }
    fn trigger_bytes(&self) -> &'static [u8] {
        b"<"
    }
    fn line_start_bytes(&self) -> &'static [u8] {
        if self.line_objects { b"{" } else { b"" }
    }
    fn detect(&self, s: &str, at: Position, _ctx: &Ctx<'_>) -> Detect {
        if self.line_objects && s.starts_with('{') {
            return detect_object(FormatId::Llama3, self.text_mode, s, at);
        }
        match detect_literal(s, TAG, at) {
            None => Detect::NeedMore,
            Some(false) => Detect::No,
            Some(true) => Detect::Start(Driven::boxed(TagMachine {
                st: T::Trigger { left: TAG.len() },
                text_mode: self.text_mode,
                pending: None,
            })),
        }
    }
}

fn opts() -> CallOpts {
    CallOpts {
        wrapped: true,
        format: FormatId::Llama3,
        parameters_native: true,
        keys: Keys::Named,
    }
}

#[derive(Debug)]
enum T {
    Trigger {
        left: usize,
    },
    Lead {
        ws: usize,
        after_semicolon: bool,
    },
    Call(Box<CallObject>),
    /// After a call: `;` and another call, or the end.
    Tail {
        buf: String,
    },
}

#[derive(Debug)]
struct TagMachine {
    st: T,
    text_mode: bool,
    pending: Option<Outcome>,
}

impl TagMachine {
    fn extra(&self, ctx: &Ctx<'_>) -> Vec<RepairKind> {
        if self.text_mode && !ctx.auto {
            vec![RepairKind::NativeInTextMode]
        } else {
            Vec::new()
        }
    }

    fn emit_pending(&mut self, raw: &str, ctx: &Ctx<'_>, out: &mut Vec<Event>) {
        if let Some(o) = self.pending.take() {
            o.emit(&self.extra(ctx), raw, out);
        }
    }
}

impl Machine for TagMachine {
    fn push(&mut self, c: char, raw: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Flow {
        match &mut self.st {
            T::Trigger { left } => {
                *left -= c.len_utf8();
                if *left == 0 {
                    self.st = T::Lead {
                        ws: 0,
                        after_semicolon: false,
                    };
                }
                Flow::More
            }
            T::Lead {
                ws,
                after_semicolon,
            } => {
                if c.is_whitespace() && *ws < LEAD_MAX {
                    *ws += 1;
                    return Flow::More;
                }
                if c == '{' {
                    let mut call = CallObject::new(opts());
                    let _ = call.push(c, ctx, out);
                    self.st = T::Call(call);
                    return Flow::More;
                }
                if *after_semicolon {
                    // `;` then no call: the calls ended at the `;`.
                    self.emit_pending(raw, ctx, out);
                    return Flow::DoneBefore;
                }
                Flow::Reject
            }
            T::Call(call) => match call.push(c, ctx, out) {
                Ok(Push::More) => Flow::More,
                Ok(_) => {
                    let o = match call.conclude(ctx, out) {
                        Ok(o) => Some(o),
                        Err(e) => call.outcome_of(e),
                    };
                    self.emit_pending(raw, ctx, out);
                    self.pending = o;
                    self.st = T::Tail { buf: String::new() };
                    Flow::More
                }
                Err(e) => {
                    let o = call.outcome_of(e);
                    self.emit_pending(raw, ctx, out);
                    if let Some(o) = o {
                        o.emit(&[], raw, out);
                    }
                    Flow::DoneBefore
                }
            },
            T::Tail { buf } => {
                if c == ';' && buf.trim().is_empty() {
                    self.emit_pending(raw, ctx, out);
                    self.st = T::Lead {
                        ws: 0,
                        after_semicolon: true,
                    };
                    return Flow::More;
                }
                buf.push(c);
                if c.is_whitespace() && buf.len() < LEAD_MAX {
                    return Flow::More;
                }
                let held = std::mem::take(buf);
                self.emit_pending(raw, ctx, out);
                Flow::Ended {
                    held,
                    line_start: false,
                }
            }
        }
    }

    fn eos(&mut self, raw: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Eos {
        let st = std::mem::replace(&mut self.st, T::Tail { buf: String::new() });
        match st {
            T::Trigger { .. } => Eos::Reject,
            T::Lead {
                after_semicolon: false,
                ..
            } => Eos::Reject,
            T::Lead { .. } => {
                self.emit_pending(raw, ctx, out);
                Eos::Closed(None)
            }
            T::Call(mut call) => {
                let o = match call.finish(ctx, out) {
                    Ok(o) => Some(o),
                    Err(e) => call.outcome_of(e),
                };
                self.emit_pending(raw, ctx, out);
                if let Some(o) = o {
                    o.emit(&self.extra(ctx), raw, out);
                }
                Eos::Closed(None)
            }
            T::Tail { buf } => {
                self.emit_pending(raw, ctx, out);
                Eos::Closed(if buf.is_empty() { None } else { Some(buf) })
            }
        }
    }

    fn flush(&mut self, out: &mut Vec<Event>) {
        if let T::Call(call) = &mut self.st {
            call.flush(out);
        }
    }

    fn uncommitted(&self) -> bool {
        matches!(
            self.st,
            T::Trigger { .. }
                | T::Lead {
                    after_semicolon: false,
                    ..
                }
        )
    }

    fn open_index(&self) -> Option<usize> {
        match &self.st {
            T::Call(call) => call.index(),
            _ => None,
        }
    }
}
