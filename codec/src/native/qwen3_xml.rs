//! Qwen3-Coder XML calls: `<function=name>` then `<parameter=p>value</parameter>`… then
//! `</function>`, normally inside `<tool_call>` (read by [`super::hermes`]) and also seen
//! without the wrapper (the [`BareFunction`] trigger).
//!
//! The same reader takes the other spellings of "a name, then keyed text values" as tag
//! dialects (`XmlTags`): Seed-OSS writes Qwen3's tags in its own wrapper, MiniMax-M2
//! `<invoke name="f"><parameter name="p">v</parameter></invoke>` (both wrappers:
//! [`super::xml_wrapped`]), GLM-4.5 `f\n<arg_key>p</arg_key>\n<arg_value>v</arg_value>` inside
//! `<tool_call>` (sources: GLM-4.5's chat template, llama.cpp's `GLM_4_5` format). A GLM call
//! starts only at its first `<arg_key>` (or `</tool_call>`, for a call without arguments): a
//! word after `<tool_call>` is not a call until then, and goes back to prose.
//!
//! Parameter values are text. They are typed by the tool's schema the only way that needs no
//! guess: the registry validates them as strings first, and only if that fails, again with
//! every value that parses as a non-string JSON value (`5`, `true`, `[…]`) in its parsed form.
//! Either the schema accepts one of the two, or the call fails as `bad_arguments`.
//! Arguments therefore go out in one fragment, when the call is validated.

use serde_json::{Map, Value};

use super::call::{CallErr, CallObject, CallOpts, Keys, Outcome, resolve_name};
use super::json::parse_whole;
use super::{Driven, Eos, Flow, Machine, detect_literal};
use crate::action::ActionProposal;
use crate::event::{Event, FailureKind, RepairKind};
use crate::format::{Ctx, Detect, Format, FormatId, Position};

const FUNCTION: &str = "<function=";
const MAX_NAME: usize = 128;

/// How one dialect of XML calls spells its tags. A call is `function` name `name_end`, then
/// per argument `parameter` key `param_name_end` [blanks `value_open`] value `end_parameter`,
/// then `end_function`.
#[derive(Debug)]
pub(crate) struct XmlTags {
    /// What opens a call, read before this machine starts (empty: the name comes first).
    pub function: &'static str,
    /// What ends the name. A `\n` ending may also be a blank, or be left out before the next
    /// `<`.
    pub name_end: &'static str,
    pub parameter: &'static str,
    pub param_name_end: &'static str,
    /// What opens each value after its key and optional blanks (empty: the value follows the
    /// key's end directly).
    pub value_open: &'static str,
    pub end_parameter: &'static str,
    pub end_function: &'static str,
    /// The call starts (and can no longer be prose) only when its first `parameter` or its
    /// `end_function` is read, not when its name ends: the name alone could be any word.
    pub late_start: bool,
}

/// Qwen3-Coder and Seed-OSS: `<function=f><parameter=a>v</parameter></function>`.
pub(crate) const QWEN3: XmlTags = XmlTags {
    function: FUNCTION,
    name_end: ">",
    parameter: "<parameter=",
    param_name_end: ">",
    value_open: "",
    end_parameter: "</parameter>",
    end_function: "</function>",
    late_start: false,
};

/// MiniMax-M2: `<invoke name="f"><parameter name="a">v</parameter></invoke>`.
pub(crate) const MINIMAX: XmlTags = XmlTags {
    function: "<invoke name=\"",
    name_end: "\">",
    parameter: "<parameter name=\"",
    param_name_end: "\">",
    value_open: "",
    end_parameter: "</parameter>",
    end_function: "</invoke>",
    late_start: false,
};

/// GLM-4.5 inside `<tool_call>`: `f\n<arg_key>a</arg_key>\n<arg_value>v</arg_value>\n</tool_call>`;
/// the call ends with the wrapper's own end tag.
pub(crate) const GLM: XmlTags = XmlTags {
    function: "",
    name_end: "\n",
    parameter: "<arg_key>",
    param_name_end: "</arg_key>",
    value_open: "<arg_value>",
    end_parameter: "</arg_value>",
    end_function: "</tool_call>",
    late_start: true,
};

#[derive(Debug)]
enum X {
    Name(String),
    Between(String),
    ParamName(String),
    /// Between a key's end and its value's `value_open`.
    ValueOpen {
        name: String,
        buf: String,
    },
    Value {
        name: String,
        val: String,
    },
    /// `<function=name>{json}</function>` (Llama 3.1's function tag): the JSON arguments.
    Json(Box<CallObject>),
    /// After the JSON arguments: whitespace, then `</function>`.
    JsonTail(String),
    Done,
}

/// One XML call, read after its `<function=`.
#[derive(Debug)]
pub(crate) struct XmlCall {
    tags: &'static XmlTags,
    wrapped: bool,
    /// A `late_start` call whose first parameter or end tag was read.
    started: bool,
    st: X,
    name: Option<String>,
    index: Option<usize>,
    params: Vec<(String, String)>,
    repairs: Vec<RepairKind>,
    /// The outcome of a JSON-bodied call, decided when its arguments closed.
    json_outcome: Option<Result<Outcome, CallErr>>,
}

fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')
}

/// Strips the newline that conventionally follows `>` and precedes `</parameter>`. A value
/// on one line loses all surrounding whitespace (models indent it to the tag's depth); a
/// multi-line value keeps its own indentation.
fn trim_value(v: &str) -> String {
    if !v.trim().contains('\n') {
        return v.trim().to_owned();
    }
    let v = v.strip_prefix('\n').unwrap_or(v);
    let v = v.strip_suffix('\n').unwrap_or(v);
    v.to_owned()
}

impl XmlCall {
    pub fn new(wrapped: bool) -> XmlCall {
        XmlCall::with_tags(wrapped, &QWEN3)
    }

    /// A call of another dialect, read after its `tags.function`.
    pub fn with_tags(wrapped: bool, tags: &'static XmlTags) -> XmlCall {
        XmlCall {
            tags,
            started: false,
            wrapped,
            st: X::Name(String::new()),
            name: None,
            index: None,
            params: Vec::new(),
            repairs: Vec::new(),
            json_outcome: None,
        }
    }

    pub fn index(&self) -> Option<usize> {
        self.index
    }

    fn invalid(&self) -> CallErr {
        if self.uncommitted() {
            CallErr::Reject
        } else {
            CallErr::Fail(FailureKind::InvalidJson)
        }
    }

    /// Nothing says yet that this is a call: an unwrapped call before its name ended, or a
    /// `late_start` call before its first parameter or end tag.
    pub fn uncommitted(&self) -> bool {
        if self.tags.late_start {
            !self.started
        } else {
            !self.wrapped && self.index.is_none() && self.name.is_none()
        }
    }

    /// The call ends with its wrapper's end tag (GLM-4.5), so no other follows.
    pub fn ends_wrapper(&self) -> bool {
        self.tags.late_start
    }

    /// Emits the start of a call whose name resolves to a declared tool.
    fn start(&mut self, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) {
        if self.index.is_some() {
            return;
        }
        let Some(name) = &self.name else { return };
        if let Some((canon, _)) = resolve_name(ctx.registry, name) {
            let index = ctx.take_index();
            self.index = Some(index);
            out.push(Event::ToolCallStart { index, name: canon });
        }
    }

    /// A literal of the call's body was completed: a `late_start` call starts here.
    fn commit(&mut self, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) {
        if self.tags.late_start && !self.started {
            self.started = true;
            self.start(ctx, out);
        }
    }

    /// Reads one character; `Ok(true)` when `</function>` completed the call.
    pub fn push(
        &mut self,
        c: char,
        ctx: &mut Ctx<'_>,
        out: &mut Vec<Event>,
    ) -> Result<bool, CallErr> {
        match &mut self.st {
            X::Done => Err(self.invalid()),
            X::Name(buf) => {
                let tags = self.tags;
                // A name ended by a line break may also end at a blank, or run into the next
                // tag (GLM-4.5 writes `<tool_call>f <arg_key>` and `<tool_call>f<arg_key>` too).
                let early = tags.name_end == "\n"
                    && (c == '<' || c == ' ' || c == '\t' || c == '\r')
                    && !buf.is_empty();
                if early || c.len_utf8() == 1 && tags.name_end.contains(c) {
                    buf.push(c);
                }
                let named = if early {
                    buf.pop();
                    Some(std::mem::take(buf))
                } else {
                    buf.strip_suffix(tags.name_end).map(str::to_owned)
                };
                if let Some(name) = named {
                    buf.clear();
                    if name.is_empty() || !name.chars().all(name_char) {
                        return Err(if self.wrapped && !tags.late_start && !name.is_empty() {
                            CallErr::Fail(FailureKind::InvalidJson)
                        } else if self.wrapped && !tags.late_start {
                            CallErr::Fail(FailureKind::MissingName)
                        } else {
                            CallErr::Reject
                        });
                    }
                    self.name = Some(name);
                    if !tags.late_start {
                        self.start(ctx, out);
                    }
                    self.st = X::Between(String::new());
                    if early && c == '<' {
                        return self.push(c, ctx, out);
                    }
                    Ok(false)
                } else if (name_char(c) || tags.name_end.contains(c)) && buf.len() < MAX_NAME {
                    if !tags.name_end.contains(c) {
                        buf.push(c);
                    }
                    Ok(false)
                } else {
                    Err(self.invalid())
                }
            }
            X::Between(buf) => {
                if buf.is_empty() && c.is_whitespace() {
                    return Ok(false);
                }
                if buf.is_empty() && c == '{' && self.params.is_empty() {
                    return self.start_json(ctx, out);
                }
                buf.push(c);
                let tags = self.tags;
                if buf == tags.parameter {
                    self.st = X::ParamName(String::new());
                    self.commit(ctx, out);
                    Ok(false)
                } else if buf == tags.end_function {
                    // `<tool_call>word</tool_call>` names no declared tool and shows no
                    // argument: nothing says it is a call.
                    let declared = self
                        .name
                        .as_deref()
                        .is_some_and(|n| resolve_name(ctx.registry, n).is_some());
                    if tags.late_start && !self.started && !declared {
                        return Err(CallErr::Reject);
                    }
                    self.st = X::Done;
                    self.commit(ctx, out);
                    Ok(true)
                } else if tags.parameter.starts_with(buf.as_str())
                    || tags.end_function.starts_with(buf.as_str())
                {
                    Ok(false)
                } else {
                    Err(self.invalid())
                }
            }
            X::Json(call) => {
                let r = call.push(c, ctx, out);
                call.flush(out);
                match r {
                    Ok(_) if call.value_closed() => {
                        let _ = call.push('}', ctx, out);
                        let outcome = call.conclude(ctx, out);
                        self.json_outcome = Some(outcome);
                        self.st = X::JsonTail(String::new());
                        Ok(false)
                    }
                    Ok(_) => Ok(false),
                    Err(e) => Err(e),
                }
            }
            X::JsonTail(buf) => {
                if buf.is_empty() && c.is_whitespace() {
                    return Ok(false);
                }
                buf.push(c);
                if buf == self.tags.end_function {
                    self.st = X::Done;
                    Ok(true)
                } else if self.tags.end_function.starts_with(buf.as_str()) {
                    Ok(false)
                } else {
                    Err(CallErr::Fail(FailureKind::InvalidJson))
                }
            }
            X::ParamName(buf) => {
                let tags = self.tags;
                buf.push(c);
                if let Some(name) = buf.strip_suffix(tags.param_name_end) {
                    if name.is_empty() || !name.chars().all(name_char) {
                        return Err(self.invalid());
                    }
                    let name = name.to_owned();
                    self.st = if tags.value_open.is_empty() {
                        X::Value {
                            name,
                            val: String::new(),
                        }
                    } else {
                        X::ValueOpen {
                            name,
                            buf: String::new(),
                        }
                    };
                    Ok(false)
                } else if (name_char(c) || tags.param_name_end.contains(c)) && buf.len() < MAX_NAME
                {
                    Ok(false)
                } else {
                    Err(self.invalid())
                }
            }
            X::ValueOpen { name, buf } => {
                if buf.is_empty() && c.is_whitespace() {
                    return Ok(false);
                }
                buf.push(c);
                if buf == self.tags.value_open {
                    let name = std::mem::take(name);
                    self.st = X::Value {
                        name,
                        val: String::new(),
                    };
                    Ok(false)
                } else if self.tags.value_open.starts_with(buf.as_str()) {
                    Ok(false)
                } else {
                    Err(self.invalid())
                }
            }
            X::Value { name, val } => {
                val.push(c);
                let tags = self.tags;
                if let Some(v) = val.strip_suffix(tags.end_parameter) {
                    let v = trim_value(v);
                    let name = std::mem::take(name);
                    self.add_param(name, v)?;
                    self.st = X::Between(String::new());
                    Ok(false)
                } else if let Some(v) = val.strip_suffix(tags.end_function) {
                    let v = trim_value(v);
                    let name = std::mem::take(name);
                    self.add_param(name, v)?;
                    self.repairs.push(RepairKind::MissingCloseTag);
                    self.st = X::Done;
                    Ok(true)
                } else {
                    Ok(false)
                }
            }
        }
    }

    /// The body after `<function=name>` is a JSON object: read it as that call's arguments.
    fn start_json(&mut self, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Result<bool, CallErr> {
        let Some(name) = self.name.clone() else {
            return Err(self.invalid());
        };
        let opts = CallOpts {
            wrapped: true,
            format: FormatId::Llama3,
            parameters_native: true,
            keys: Keys::Named,
        };
        let mut call = CallObject::new(opts);
        if let Some(index) = self.index {
            let builtin = resolve_name(ctx.registry, &name).is_some_and(|(_, b)| b);
            call.adopt_start(index, builtin);
        }
        // The name's characters are `name_char`s, so it needs no escaping in JSON.
        for ch in format!("{{\"name\":\"{name}\",\"arguments\":{{").chars() {
            call.push(ch, ctx, out)?;
        }
        self.st = X::Json(call);
        Ok(false)
    }

    fn add_param(&mut self, name: String, v: String) -> Result<(), CallErr> {
        if self.params.iter().any(|(n, _)| *n == name) {
            return Err(CallErr::Fail(FailureKind::BadArguments));
        }
        self.params.push((name, v));
        Ok(())
    }

    /// Validates the finished call.
    pub fn conclude(
        &mut self,
        ctx: &mut Ctx<'_>,
        out: &mut Vec<Event>,
    ) -> Result<Outcome, CallErr> {
        if let Some(outcome) = self.json_outcome.take() {
            return outcome;
        }
        let Some(name) = self.name.clone() else {
            return Err(CallErr::Fail(FailureKind::MissingName));
        };
        if resolve_name(ctx.registry, &name).is_none() {
            return Err(CallErr::Fail(FailureKind::UnknownTool));
        }
        let as_strings: Map<String, Value> = self
            .params
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        let mut result = ctx.registry.validate(&name, &Value::Object(as_strings));
        if result == Err(FailureKind::BadArguments) {
            let typed: Map<String, Value> = self
                .params
                .iter()
                .map(|(k, v)| {
                    let typed = match parse_whole(v) {
                        Ok((parsed, false)) if !parsed.is_string() => parsed,
                        _ => Value::String(v.clone()),
                    };
                    (k.clone(), typed)
                })
                .collect();
            result = ctx.registry.validate(&name, &Value::Object(typed));
        }
        let (action, reg_repairs) = result.map_err(CallErr::Fail)?;
        let mut repairs = std::mem::take(&mut self.repairs);
        repairs.extend(reg_repairs);
        let proposal = ActionProposal {
            action,
            repairs,
            format: FormatId::Qwen3Xml,
        };
        let index = match self.index {
            Some(i) => i,
            None => {
                let i = ctx.take_index();
                out.push(Event::ToolCallStart {
                    index: i,
                    name: proposal.action.name().to_owned(),
                });
                self.index = Some(i);
                i
            }
        };
        out.push(Event::ArgsDelta {
            index,
            fragment: proposal.arguments_json(),
        });
        Ok(Outcome::Proposal { index, proposal })
    }

    /// End of stream: a call whose last parameter closed lacks only `</function>`.
    pub fn eos(&mut self, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Result<Outcome, CallErr> {
        match &self.st {
            X::Done => self.conclude(ctx, out),
            X::Between(buf)
                if !self.uncommitted()
                    && (buf.is_empty() || self.tags.end_function.starts_with(buf.as_str())) =>
            {
                self.repairs.push(RepairKind::MissingCloseTag);
                self.conclude(ctx, out)
            }
            _ if self.uncommitted() => Err(CallErr::Reject),
            _ => Err(CallErr::Fail(FailureKind::TruncatedJson)),
        }
    }

    pub fn outcome_of(&self, e: CallErr) -> Option<Outcome> {
        e.into_outcome(self.index)
    }
}

/// The `<function=` trigger: a Qwen3 XML call without its `<tool_call>` wrapper.
#[derive(Debug)]
pub struct BareFunction {
    text_mode: bool,
}

impl BareFunction {
    pub fn new(text_mode: bool) -> BareFunction {
        BareFunction { text_mode }
    }
}

impl Format for BareFunction {
    fn id(&self) -> FormatId {
        FormatId::Qwen3Xml
    }
    fn trigger_bytes(&self) -> &'static [u8] {
        b"<"
    }
    fn line_start_bytes(&self) -> &'static [u8] {
        b""
    }
    fn detect(&self, s: &str, at: Position, _ctx: &Ctx<'_>) -> Detect {
        match detect_literal(s, FUNCTION, at) {
            None => Detect::NeedMore,
            Some(false) => Detect::No,
            Some(true) => Detect::Start(Driven::boxed(BareMachine {
                left: FUNCTION.len(),
                call: XmlCall::new(false),
                text_mode: self.text_mode,
            })),
        }
    }
}

#[derive(Debug)]
struct BareMachine {
    left: usize,
    call: XmlCall,
    text_mode: bool,
}

impl BareMachine {
    fn extra(&self, ctx: &Ctx<'_>) -> Vec<RepairKind> {
        if self.text_mode && !ctx.auto {
            vec![RepairKind::NativeInTextMode]
        } else {
            Vec::new()
        }
    }
}

impl Machine for BareMachine {
    fn push(&mut self, c: char, raw: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Flow {
        if self.left > 0 {
            self.left -= 1;
            return Flow::More;
        }
        match self.call.push(c, ctx, out) {
            Ok(false) => Flow::More,
            Ok(true) => {
                let extra = self.extra(ctx);
                match self.call.conclude(ctx, out) {
                    Ok(o) => o.emit(&extra, raw, out),
                    Err(e) => {
                        if let Some(o) = self.call.outcome_of(e) {
                            o.emit(&[], raw, out);
                        }
                    }
                }
                Flow::Done
            }
            Err(e) => match self.call.outcome_of(e) {
                None => Flow::Reject,
                Some(o) => {
                    o.emit(&[], raw, out);
                    Flow::DoneBefore
                }
            },
        }
    }

    fn eos(&mut self, raw: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Eos {
        if self.left > 0 {
            return Eos::Reject;
        }
        let extra = self.extra(ctx);
        match self.call.eos(ctx, out) {
            Ok(o) => {
                o.emit(&extra, raw, out);
                Eos::Closed(None)
            }
            Err(e) => match self.call.outcome_of(e) {
                None => Eos::Reject,
                Some(o) => {
                    o.emit(&[], raw, out);
                    Eos::Closed(None)
                }
            },
        }
    }

    fn flush(&mut self, _out: &mut Vec<Event>) {}

    fn uncommitted(&self) -> bool {
        self.call.index().is_none()
    }

    fn open_index(&self) -> Option<usize> {
        self.call.index()
    }
}
