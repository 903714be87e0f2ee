//! One JSON call object, `{"name": …, "arguments": {…}}`, parsed as it streams, shared by every
//! JSON-based native format (Hermes, Llama 3, Mistral, bare JSON, the marker lists, OpenAI
//! deltas). [`Keys`] says which keys name the tool and hold its arguments, for the formats
//! that spell them otherwise (Command R7B's `tool_name`/`parameters`, Apertus' `{"f": {…}}`).
//!
//! The object is read character by character. `ToolCallStart` goes out once the tool name is
//! certain and known to the registry (for unwrapped objects, only once the arguments key has
//! also been seen, so a look-alike object is rejected before anything is emitted). Arguments
//! of client tools stream as they arrive; a builtin's arguments are normalised by the registry
//! (spec key order, aliases, whole lines), so they go out in one fragment when validated.

use serde_json::Value;

use super::json::{JsonError, Push, ValueParser, parse_whole};
use crate::action::ActionProposal;
use crate::event::{Event, FailureKind, RepairKind};
use crate::format::{Ctx, FormatId};
use crate::registry::Registry;

/// The canonical name a written tool name resolves to, and whether it is a builtin. Names
/// match exactly, or case-insensitively as the registry's validation does.
pub fn resolve_name(reg: &Registry, name: &str) -> Option<(String, bool)> {
    reg.resolve_name(name)
}

/// How a call object is read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallOpts {
    /// Inside a wrapper (`<tool_call>`, `[TOOL_CALLS]`, `<|python_tag|>`) that already says
    /// "this is a call": odd keys are skipped and malformations are failures. Unwrapped
    /// objects are rejected back to prose instead, as long as nothing was emitted.
    pub wrapped: bool,
    /// The format that proposals are attributed to.
    pub format: FormatId,
    /// `"parameters"` is this format's own arguments key (Llama 3), not a repair.
    pub parameters_native: bool,
    /// Which keys hold the tool's name and its arguments.
    pub keys: Keys,
}

/// The keys of a call object: which one names the tool and which holds its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Keys {
    /// `{"name": f, "arguments": {…}}`: every JSON format but the two below.
    Named,
    /// Command R7B: `{"tool_call_id": "0", "tool_name": f, "parameters": {…}}`; the id is
    /// skipped, and `"parameters"` is the format's own key.
    ToolName,
    /// Apertus: `{"f": {…}}`, the tool's name as the object's only key and the arguments
    /// object as its value. The name and the arguments key are certain at once, when the
    /// key's closing quote is read.
    NameIsKey,
}

/// Why a call object stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallErr {
    /// Not a call after all; nothing was emitted.
    Reject,
    /// A committed call that failed.
    Fail(FailureKind),
}

impl CallErr {
    /// The outcome to emit for a call that stopped with this error, or `None` when a call
    /// that never started is handed back as prose. A rejection after the call started (its
    /// `ToolCallStart` is out) can no longer be prose, so it is an `invalid_json` failure.
    pub(crate) fn into_outcome(self, index: Option<usize>) -> Option<Outcome> {
        match self {
            CallErr::Reject if index.is_none() => None,
            CallErr::Reject => Some(Outcome::Failure {
                index,
                kind: FailureKind::InvalidJson,
            }),
            CallErr::Fail(kind) => Some(Outcome::Failure { index, kind }),
        }
    }
}

/// The end of one call: a proposal, or a failure, not yet emitted (the wrapper may still add
/// repairs, and a failure's raw text is the wrapper's).
#[derive(Debug)]
pub(crate) enum Outcome {
    Proposal {
        index: usize,
        proposal: ActionProposal,
    },
    Failure {
        index: Option<usize>,
        kind: FailureKind,
    },
}

impl Outcome {
    /// Emits the outcome with the wrapper's repairs appended and its raw text.
    pub fn emit(self, extra: &[RepairKind], raw: &str, out: &mut Vec<Event>) {
        match self {
            Outcome::Proposal {
                index,
                mut proposal,
            } => {
                proposal.repairs.extend_from_slice(extra);
                out.push(Event::Proposal { index, proposal });
            }
            Outcome::Failure { index, kind } => out.push(Event::Failure {
                index,
                kind,
                raw: raw.to_owned(),
            }),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Name,
    Args,
    /// `"type"`: Llama 3.1 writes `"type": "function"` before the name.
    Type,
    /// `"function": {"name": …, "arguments": …}`: the OpenAI `tool_calls` item shape.
    Function,
    Skip,
}

#[derive(Debug)]
enum St {
    Open,
    Key { first: bool },
    InKey(ValueParser),
    Colon(Slot),
    Value(Slot, Option<ValueParser>),
    CommaOrEnd,
    Done,
}

/// One call object being read.
#[derive(Debug)]
pub(crate) struct CallObject {
    opts: CallOpts,
    st: St,
    name: Option<String>,
    args: Option<Value>,
    args_key_seen: bool,
    args_before_name: bool,
    parameters_key: bool,
    nested_function: bool,
    python: bool,
    close_tags: usize,
    index: Option<usize>,
    /// Stream argument fragments as they come (client tools).
    stream: bool,
    streamed: String,
    pending: String,
}

impl CallObject {
    pub fn new(opts: CallOpts) -> Box<CallObject> {
        Box::new(CallObject {
            opts,
            st: St::Open,
            name: None,
            args: None,
            args_key_seen: false,
            args_before_name: false,
            parameters_key: false,
            nested_function: false,
            python: false,
            close_tags: 0,
            index: None,
            stream: false,
            streamed: String::new(),
            pending: String::new(),
        })
    }

    /// The call index, once `ToolCallStart` went out.
    pub fn index(&self) -> Option<usize> {
        self.index
    }

    /// True right after a top-level value closed (before `,` or `}`).
    pub fn value_closed(&self) -> bool {
        matches!(self.st, St::CommaOrEnd)
    }

    /// True when nothing has been emitted for this call, so it can still be rejected.
    pub fn uncommitted(&self) -> bool {
        self.index.is_none()
    }

    fn invalid(&self) -> CallErr {
        if !self.opts.wrapped && self.index.is_none() {
            CallErr::Reject
        } else {
            CallErr::Fail(FailureKind::InvalidJson)
        }
    }

    /// Marks the call as started by the caller, who already emitted `ToolCallStart` for
    /// `index` (an XML `<function=name>` tag whose body turned out to be JSON).
    pub fn adopt_start(&mut self, index: usize, builtin: bool) {
        self.index = Some(index);
        self.stream = !builtin;
    }

    fn maybe_start(&mut self, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) {
        if self.index.is_some() || (!self.opts.wrapped && !self.args_key_seen) {
            return;
        }
        let Some(name) = &self.name else { return };
        let Some((canon, builtin)) = resolve_name(ctx.registry, name) else {
            return;
        };
        let index = ctx.take_index();
        self.index = Some(index);
        self.stream = !builtin;
        out.push(Event::ToolCallStart { index, name: canon });
    }

    /// Emits the argument text produced so far, for a started client-tool call.
    pub fn flush(&mut self, out: &mut Vec<Event>) {
        if let Some(index) = self.index
            && self.stream
            && !self.pending.is_empty()
        {
            let fragment = std::mem::take(&mut self.pending);
            self.streamed.push_str(&fragment);
            out.push(Event::ArgsDelta { index, fragment });
        }
    }

    /// Reads one character. `Ok(Push::Complete)` when the object's `}` was read.
    pub fn push(
        &mut self,
        c: char,
        ctx: &mut Ctx<'_>,
        out: &mut Vec<Event>,
    ) -> Result<Push, CallErr> {
        let r = self.push_char(c, ctx, out);
        if r.is_err() {
            // Arguments read before the error go out before the failure the caller emits,
            // whatever the chunking (a chunk end would have flushed them already).
            self.flush(out);
        }
        r
    }

    fn push_char(
        &mut self,
        c: char,
        ctx: &mut Ctx<'_>,
        out: &mut Vec<Event>,
    ) -> Result<Push, CallErr> {
        match &mut self.st {
            St::Done => Err(self.invalid()),
            St::Open => {
                if c.is_whitespace() {
                    Ok(Push::More)
                } else if c == '{' {
                    self.st = St::Key { first: true };
                    Ok(Push::More)
                } else {
                    Err(self.invalid())
                }
            }
            St::Key { first } => {
                if c.is_whitespace() {
                    return Ok(Push::More);
                }
                if c == '}' && (*first || self.opts.wrapped) {
                    self.st = St::Done;
                    return Ok(Push::Complete);
                }
                if c == '"' || c == '\'' {
                    let mut p = ValueParser::new(false);
                    p.push(c).map_err(|_| self.invalid())?;
                    self.st = St::InKey(p);
                    return Ok(Push::More);
                }
                Err(self.invalid())
            }
            St::InKey(p) => match p.push(c) {
                Ok(Push::More) => Ok(Push::More),
                Ok(_) => {
                    self.python |= p.python;
                    let key = match p.take_value() {
                        Some(Value::String(k)) => k,
                        _ => return Err(self.invalid()),
                    };
                    let slot = if self.opts.keys == Keys::NameIsKey {
                        self.name_key(&key)?
                    } else {
                        self.slot_for(&key)?
                    };
                    if slot == Slot::Args {
                        if self.args_key_seen {
                            return Err(self.invalid());
                        }
                        self.args_key_seen = true;
                        if self.name.is_none() {
                            self.args_before_name = true;
                        }
                        self.maybe_start(ctx, out);
                    }
                    self.st = St::Colon(slot);
                    Ok(Push::More)
                }
                Err(_) => Err(self.invalid()),
            },
            St::Colon(slot) => {
                if c.is_whitespace() {
                    Ok(Push::More)
                } else if c == ':' {
                    self.st = St::Value(*slot, None);
                    Ok(Push::More)
                } else {
                    Err(self.invalid())
                }
            }
            St::Value(slot, parser) => {
                let slot = *slot;
                if parser.is_none() {
                    if c.is_whitespace() {
                        return Ok(Push::More);
                    }
                    // Keyed by the tool's name, the value is the arguments object itself:
                    // anything else is not this shape.
                    if self.opts.keys == Keys::NameIsKey && c != '{' {
                        return Err(self.invalid());
                    }
                    // Only an object streams; a string is arguments written as a string and
                    // is re-parsed whole when it closes.
                    *parser = Some(ValueParser::new(slot == Slot::Args && c == '{'));
                }
                let Some(p) = parser.as_mut() else {
                    return Err(self.invalid());
                };
                let r = p.push(c);
                if slot == Slot::Args {
                    p.drain_out_into(&mut self.pending);
                }
                let r = match r {
                    Ok(r) => r,
                    Err(_) => return Err(self.invalid()),
                };
                if r == Push::More {
                    return Ok(Push::More);
                }
                let v = p.take_value();
                self.python |= p.python;
                self.close_tags += p.close_tags_in_strings;
                self.st = St::CommaOrEnd;
                self.value_done(slot, v, ctx, out)?;
                if r == Push::CompleteBefore {
                    return self.push_char(c, ctx, out);
                }
                Ok(Push::More)
            }
            St::CommaOrEnd => {
                if c.is_whitespace() {
                    Ok(Push::More)
                } else if c == ',' {
                    self.st = St::Key { first: false };
                    Ok(Push::More)
                } else if c == '}' {
                    self.st = St::Done;
                    Ok(Push::Complete)
                } else {
                    Err(self.invalid())
                }
            }
        }
    }

    fn slot_for(&mut self, key: &str) -> Result<Slot, CallErr> {
        let named = self.opts.keys == Keys::Named;
        match key {
            "name" if named => self.name_slot(),
            "tool_name" if !named => self.name_slot(),
            "arguments" if named => Ok(Slot::Args),
            "parameters" => {
                if !self.opts.parameters_native {
                    self.parameters_key = true;
                }
                Ok(Slot::Args)
            }
            "tool_call_id" if !named => Ok(Slot::Skip),
            "type" if named => Ok(Slot::Type),
            "function" if named && self.name.is_none() && !self.args_key_seen => Ok(Slot::Function),
            // An unwrapped object must look like a call from its first key on: anything else
            // (`{"status": …}`, a schema with a `description`) is prose until it has started.
            _ if !self.opts.wrapped && self.index.is_none() => Err(CallErr::Reject),
            _ => Ok(Slot::Skip),
        }
    }

    fn name_slot(&self) -> Result<Slot, CallErr> {
        if self.name.is_some() {
            return Err(self.invalid());
        }
        Ok(Slot::Name)
    }

    /// [`Keys::NameIsKey`]: the object's one key is the tool's name, and its value the
    /// arguments. A second key is not this shape.
    fn name_key(&mut self, key: &str) -> Result<Slot, CallErr> {
        let name = key.trim();
        if self.name.is_some() || name.is_empty() {
            return Err(self.invalid());
        }
        self.name = Some(name.to_owned());
        Ok(Slot::Args)
    }

    fn value_done(
        &mut self,
        slot: Slot,
        v: Option<Value>,
        ctx: &mut Ctx<'_>,
        out: &mut Vec<Event>,
    ) -> Result<(), CallErr> {
        match slot {
            Slot::Name => match v {
                Some(Value::String(n)) if !n.trim().is_empty() => {
                    self.name = Some(n.trim().to_owned());
                    self.maybe_start(ctx, out);
                    Ok(())
                }
                _ if !self.opts.wrapped && self.index.is_none() => Err(CallErr::Reject),
                _ => Err(CallErr::Fail(FailureKind::MissingName)),
            },
            Slot::Args => {
                self.args = v;
                Ok(())
            }
            Slot::Type => match v {
                Some(Value::String(t)) if t == "function" => Ok(()),
                // `{"type": "object", …}` is a schema, not a call.
                _ if !self.opts.wrapped && self.index.is_none() => Err(CallErr::Reject),
                _ => Ok(()),
            },
            Slot::Function => {
                // Only a bare call object counts: one with a `description` or anything else
                // beside name and arguments is a tool schema echoed back, not a call.
                let call = match &v {
                    Some(Value::Object(m))
                        if m.keys()
                            .all(|k| matches!(k.as_str(), "name" | "arguments" | "parameters")) =>
                    {
                        m.get("name").and_then(Value::as_str).map(|n| {
                            let args = m.get("arguments").or_else(|| m.get("parameters"));
                            (n.trim().to_owned(), args.cloned())
                        })
                    }
                    _ => None,
                };
                match call {
                    Some((name, args)) if !name.is_empty() && args.is_some() => {
                        self.name = Some(name);
                        self.args = args;
                        self.args_key_seen = true;
                        self.nested_function = true;
                        self.maybe_start(ctx, out);
                        Ok(())
                    }
                    _ if !self.opts.wrapped && self.index.is_none() => Err(CallErr::Reject),
                    _ => Ok(()),
                }
            }
            Slot::Skip => Ok(()),
        }
    }

    /// The object's `}` was read: validate and finish the call.
    pub fn conclude(
        &mut self,
        ctx: &mut Ctx<'_>,
        out: &mut Vec<Event>,
    ) -> Result<Outcome, CallErr> {
        let r = self.conclude_with(Vec::new(), ctx, out);
        if r.is_err() {
            self.flush(out);
        }
        r
    }

    fn conclude_with(
        &mut self,
        mut repairs: Vec<RepairKind>,
        ctx: &mut Ctx<'_>,
        out: &mut Vec<Event>,
    ) -> Result<Outcome, CallErr> {
        let Some(name) = self.name.clone() else {
            if self.opts.wrapped {
                return Err(CallErr::Fail(FailureKind::MissingName));
            }
            return Err(CallErr::Reject);
        };
        if !self.opts.wrapped && !self.args_key_seen {
            return Err(CallErr::Reject);
        }
        let mut args = self
            .args
            .take()
            .unwrap_or_else(|| Value::Object(Default::default()));
        if let Value::String(s) = &args {
            match parse_whole(s) {
                Ok((v @ Value::Object(_), python)) => {
                    self.python |= python;
                    repairs.push(RepairKind::ArgumentsAsString);
                    args = v;
                }
                _ => return Err(self.fail(FailureKind::BadArguments)),
            }
        }
        if self.python {
            repairs.insert(0, RepairKind::PythonLiteral);
        }
        if self.args_before_name {
            repairs.push(RepairKind::ArgumentsBeforeName);
        }
        if self.parameters_key {
            repairs.push(RepairKind::ParametersKey);
        }
        if self.nested_function {
            repairs.push(RepairKind::NestedFunction);
        }
        for _ in 0..self.close_tags {
            repairs.push(RepairKind::CloseTagInString);
        }
        if resolve_name(ctx.registry, &name).is_none() {
            return Err(CallErr::Fail(FailureKind::UnknownTool));
        }
        match ctx.registry.validate(&name, &args) {
            Ok((action, reg_repairs)) => {
                repairs.extend(reg_repairs);
                let proposal = ActionProposal {
                    action,
                    repairs,
                    format: self.opts.format,
                };
                if self.index.is_none() {
                    self.args_key_seen = true;
                    self.maybe_start(ctx, out);
                }
                let Some(index) = self.index else {
                    return Err(CallErr::Fail(FailureKind::UnknownTool));
                };
                self.flush(out);
                let canonical = proposal.arguments_json();
                // Streamed text is the compact form of exactly these arguments for a client
                // tool, so the canonical form extends it; a builtin streamed nothing yet.
                if let Some(rest) = canonical.strip_prefix(self.streamed.as_str())
                    && !rest.is_empty()
                {
                    out.push(Event::ArgsDelta {
                        index,
                        fragment: rest.to_owned(),
                    });
                }
                self.streamed = canonical;
                Ok(Outcome::Proposal { index, proposal })
            }
            Err(kind) => Err(self.fail(kind)),
        }
    }

    fn fail(&self, kind: FailureKind) -> CallErr {
        CallErr::Fail(kind)
    }

    /// Turns an error into the outcome to emit, or `None` for a rejection.
    pub fn outcome_of(&self, e: CallErr) -> Option<Outcome> {
        e.into_outcome(self.index)
    }

    /// End of stream inside the object: close it if only closing brackets are missing.
    pub fn finish(&mut self, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Result<Outcome, CallErr> {
        let r = self.finish_object(ctx, out);
        if r.is_err() {
            self.flush(out);
        }
        r
    }

    fn finish_object(
        &mut self,
        ctx: &mut Ctx<'_>,
        out: &mut Vec<Event>,
    ) -> Result<Outcome, CallErr> {
        let truncated = || CallErr::Fail(FailureKind::TruncatedJson);
        let st = std::mem::replace(&mut self.st, St::Done);
        match st {
            St::CommaOrEnd => {}
            St::Value(slot, Some(mut p)) => {
                let r = p.finish();
                if slot == Slot::Args {
                    p.drain_out_into(&mut self.pending);
                }
                let closed = match r {
                    Ok(n) => n,
                    Err(JsonError::Truncated | JsonError::Invalid) => {
                        return Err(if !self.opts.wrapped && self.index.is_none() {
                            CallErr::Reject
                        } else {
                            truncated()
                        });
                    }
                };
                // A number or word at the very end is complete only if its value was closed
                // by a bracket: a bare scalar could have been cut mid-token.
                let v = p.take_value();
                self.python |= p.python;
                self.close_tags += p.close_tags_in_strings;
                if closed == 0 && slot == Slot::Args {
                    return Err(truncated());
                }
                self.value_done(slot, v, ctx, out)?;
                if closed == 0 {
                    return Err(truncated());
                }
            }
            _ => {
                return Err(if !self.opts.wrapped && self.index.is_none() {
                    CallErr::Reject
                } else {
                    truncated()
                });
            }
        }
        self.conclude_with(vec![RepairKind::UnclosedJson], ctx, out)
    }
}
