//! GLM-4-9B's call: the whole reply is the tool's name on a line of its own, then its JSON
//! arguments, `get_weather\n{"city": "Paris"}` (sources: the chat template of
//! THUDM/glm-4-9b-chat, which renders a call as the name, a newline and the arguments' JSON,
//! and the model card's function-call example, whose server splits the reply at its first
//! newline and takes the first line as a call's name when a declared tool has it). Part of the
//! `bare_json` family: a JSON call with no wrapper token.
//!
//! # Never a false call
//!
//! A word on a line and a JSON object on the next is ordinary prose anywhere else, so the
//! shape counts only as a whole reply, and nothing is emitted until the reply ends:
//!
//! * the name line is the reply's first (blanks and a reasoning block may come before it:
//!   [`Position::reply_start`]), and holds a declared tool's name and nothing else;
//! * the next line opens a JSON object (a Python literal is read too, `python_literal`);
//! * after the object's `}` only blanks follow, to the end of the reply;
//! * the arguments validate against the tool's schema.
//!
//! Anything else — prose after the object, an unclosed object, arguments the schema refuses —
//! leaves every byte prose. The call goes out whole at the end of the reply (start, the
//! arguments in one fragment, the proposal).

use serde_json::Value;

use super::call::resolve_name;
use super::json::{Push, ValueParser};
use super::{Driven, Eos, Flow, Machine};
use crate::action::ActionProposal;
use crate::event::{Event, RepairKind};
use crate::format::{Ctx, Detect, Format, FormatId, Position};

const NAME_MAX: usize = 128;
/// Blanks allowed before the arguments' `{` on their line.
const LEAD_MAX: usize = 64;

fn name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')
}

/// The name line then the object's `{`: `Some(Some(name))` when `s` opens with them,
/// `Some(None)` when it does not, `None` when more bytes are needed.
fn shape(s: &str, at: Position) -> Option<Option<&str>> {
    let b = s.as_bytes();
    let more = if at.eos { Some(None) } else { None };
    if !b.first().is_some_and(|&c| name_start(c)) {
        return Some(None);
    }
    let mut i = 0;
    while i < b.len() && name_byte(b[i]) {
        i += 1;
        if i > NAME_MAX {
            return Some(None);
        }
    }
    let name_end = i;
    if b.get(i) == Some(&b'\r') {
        i += 1;
    }
    match b.get(i) {
        None => return more,
        Some(b'\n') => i += 1,
        Some(_) => return Some(None),
    }
    let lead = i;
    while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
        i += 1;
        if i - lead > LEAD_MAX {
            return Some(None);
        }
    }
    match b.get(i) {
        None => more,
        Some(b'{') => Some(Some(&s[..name_end])),
        Some(_) => Some(None),
    }
}

/// The reply-start `name\n{` detector.
#[derive(Debug)]
pub struct NameLine {
    text_mode: bool,
}

impl NameLine {
    pub fn new(text_mode: bool) -> NameLine {
        NameLine { text_mode }
    }
}

impl Format for NameLine {
    fn id(&self) -> FormatId {
        FormatId::BareJson
    }
    fn trigger_bytes(&self) -> &'static [u8] {
        b""
    }
    fn line_start_bytes(&self) -> &'static [u8] {
        b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"
    }
    fn detect(&self, s: &str, at: Position, ctx: &Ctx<'_>) -> Detect {
        if !(at.reply_start && at.line_start) {
            return Detect::No;
        }
        match shape(s, at) {
            None => Detect::NeedMore,
            Some(None) => Detect::No,
            Some(Some(name)) => match resolve_name(ctx.registry, name) {
                None => Detect::No,
                Some(_) => Detect::Start(Driven::boxed(NameMachine {
                    st: N::Name,
                    name: name.to_owned(),
                    text_mode: self.text_mode,
                })),
            },
        }
    }
}

#[derive(Debug)]
enum N {
    /// The name line, already checked by the detector.
    Name,
    /// Blanks before the object's `{`.
    Lead,
    Args(ValueParser),
    /// After the object: blanks only, to the end of the reply.
    Tail(Box<ValueParser>),
}

#[derive(Debug)]
struct NameMachine {
    st: N,
    name: String,
    text_mode: bool,
}

impl Machine for NameMachine {
    fn push(&mut self, c: char, _raw: &str, _ctx: &mut Ctx<'_>, _out: &mut Vec<Event>) -> Flow {
        if matches!(self.st, N::Lead) && c != ' ' && c != '\t' {
            self.st = N::Args(ValueParser::new(false));
        }
        match &mut self.st {
            N::Name => {
                if c == '\n' {
                    self.st = N::Lead;
                }
                Flow::More
            }
            N::Lead => Flow::More,
            N::Args(p) => match p.push(c) {
                Ok(Push::More) => Flow::More,
                Ok(Push::Complete) => {
                    let p = std::mem::replace(p, ValueParser::new(false));
                    self.st = N::Tail(Box::new(p));
                    Flow::More
                }
                // Only an object's own `}` completes it; anything else is not this shape.
                Ok(Push::CompleteBefore) | Err(_) => Flow::Reject,
            },
            N::Tail(_) if c.is_whitespace() => Flow::More,
            N::Tail(_) => Flow::Reject,
        }
    }

    fn eos(&mut self, _raw: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Eos {
        let N::Tail(p) = &mut self.st else {
            return Eos::Reject;
        };
        let python = p.python;
        let Some(args @ Value::Object(_)) = p.take_value() else {
            return Eos::Reject;
        };
        let Ok((action, mut repairs)) = ctx.registry.validate(&self.name, &args) else {
            return Eos::Reject;
        };
        if python {
            repairs.insert(0, RepairKind::PythonLiteral);
        }
        if self.text_mode && !ctx.auto {
            repairs.push(RepairKind::NativeInTextMode);
        }
        let proposal = ActionProposal {
            action,
            repairs,
            format: FormatId::BareJson,
        };
        super::emit_whole(ctx, out, proposal);
        Eos::Closed(None)
    }

    fn flush(&mut self, _out: &mut Vec<Event>) {}

    fn uncommitted(&self) -> bool {
        true
    }

    fn open_index(&self) -> Option<usize> {
        None
    }
}
