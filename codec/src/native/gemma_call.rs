//! Gemma's `call:` form, one table of two dialects:
//!
//! | families | written |
//! |---|---|
//! | FunctionGemma (270M) | `<start_function_call>call:f{a:<escape>v<escape>,n:3}<end_function_call>` |
//! | Gemma 4 | `<\|tool_call>call:f{a:<\|"\|>v<\|"\|>,n:3}<tool_call\|>` |
//!
//! Sources: Google's FunctionGemma model card and its "formatting and best practices" page
//! (the six control tokens, `<escape>` around every string value); vLLM's `functiongemma` and
//! `gemma4` tool parsers (bare keys, strings between the quote token, numbers, `true`/`false`
//! and nested `{…}`/`[…]` written bare, one call per start/end pair, several pairs in a row for
//! parallel calls). Nothing is copied from them.
//!
//! # Reading the arguments
//!
//! After the start marker come `call:`, the tool's name and `{`. The name is certain at that
//! `{`: the call is committed there, and `ToolCallStart` goes out if the name is declared.
//! The arguments are a brace-delimited `key:value` list. [`Transcoder`] turns them into JSON
//! text one character at a time (a bare key becomes a quoted one, a string between quote
//! tokens a JSON string, escaped as serde_json escapes it; brackets, commas, numbers and words
//! pass through) and feeds that text to the shared call-object parser of `call.rs`, as if the
//! model had written `{"name": "f", "arguments": {…}}`. So the literals are checked by the same
//! lenient JSON parser as every other format's (`True`/`None` are `python_literal`, a bare
//! word that is no literal is `invalid_json`: a value the model did not quote is not guessed
//! to be a string), builtin arguments are validated by the registry, and a cut-off call is
//! closed only when nothing but closing brackets is missing (`unclosed_json`).
//!
//! # Streaming
//!
//! A client tool's arguments stream per character, as every JSON format's do: the transcoder
//! holds back only the bytes that may begin a quote token (a `<` inside a string, up to the
//! token's length), so each fragment is final, and the fragments concatenate to the canonical
//! arguments JSON. A builtin's arguments go out in one fragment when validated.
//!
//! # End marker, triggers, traps
//!
//! The end marker is looked for after the call's `}`, past blanks; without it the call is
//! complete anyway and carries `missing_close_tag`, and what followed goes back to prose. The
//! start markers are special tokens, matched anywhere; `<|tool_call>` and marker_list's Granite
//! `<|tool_call|>` share `<|tool_call` and part at the next byte (`>` or `|`). A start marker
//! not followed (past blanks) by `call:` and a name and `{` is prose that names the token. A
//! declared response or declaration echoed back (`<start_function_response>response:f{…}`) is
//! no trigger at all.

use super::call::{CallErr, CallObject, CallOpts, Keys, Outcome};
use super::json::{Push, escape_into};
use super::{Driven, Eos, Flow, Machine, detect_row};
use crate::event::{Event, FailureKind, RepairKind};
use crate::format::{Ctx, Detect, Format, FormatId, Position};

/// One dialect of the form.
#[derive(Debug, Clone, Copy)]
pub struct Dialect {
    /// The model families that write it.
    pub families: &'static str,
    /// The start marker.
    pub open: &'static str,
    /// The end marker (may be missing: `missing_close_tag`).
    pub close: &'static str,
    /// The token written before and after every string. It starts with `<` and holds no
    /// other `<`, so a divergence inside a string never hides the start of another one (a
    /// test checks both).
    pub quote: &'static str,
}

/// Every dialect. Their start markers are disjoint (a test checks every pair).
pub const DIALECTS: &[Dialect] = &[
    Dialect {
        families: "FunctionGemma",
        open: "<start_function_call>",
        close: "<end_function_call>",
        quote: "<escape>",
    },
    Dialect {
        families: "Gemma 4",
        open: "<|tool_call>",
        close: "<tool_call|>",
        quote: "<|\"|>",
    },
];

const CALL: &str = "call:";
const MAX_NAME: usize = 128;
/// Blanks allowed between the start marker and `call:`, and after the call before its end
/// marker.
const WS_MAX: usize = 64;

fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')
}

/// The detector of both dialects.
#[derive(Debug)]
pub struct GemmaCall {
    text_mode: bool,
}

impl GemmaCall {
    pub fn new(text_mode: bool) -> GemmaCall {
        GemmaCall { text_mode }
    }
}

impl Format for GemmaCall {
    fn id(&self) -> FormatId {
        FormatId::GemmaCall
    }
    fn trigger_bytes(&self) -> &'static [u8] {
        b"<"
    }
    fn line_start_bytes(&self) -> &'static [u8] {
        b""
    }
    fn detect(&self, s: &str, at: Position, _ctx: &Ctx<'_>) -> Detect {
        match detect_row(s, at, DIALECTS, |d| d.open) {
            Some(Ok(d)) => Detect::Start(Driven::boxed(GemmaMachine {
                st: G::Trigger { left: d.open.len() },
                dialect: d,
                text_mode: self.text_mode,
                pending: None,
            })),
            Some(Err(())) => Detect::NeedMore,
            None => Detect::No,
        }
    }
}

/// What comes next inside one container of the arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Container {
    Object,
    Array,
}

#[derive(Debug)]
enum Lex {
    /// Between tokens; `key`: a key comes next (after an object's `{` or `,`).
    Idle { key: bool },
    /// A bare key being read.
    Key(String),
    /// After a key: blanks, then `:`.
    Colon,
    /// A `<` where a string may open: the quote token being matched.
    Open { key: bool, held: String },
    /// Inside a string; `held` may be the start of the closing quote token.
    Str { key: bool, held: String },
}

/// Gemma's arguments syntax to JSON text, one character at a time. It knows only what JSON
/// would read differently (bare keys, quote-token strings); the JSON parser it feeds checks
/// everything else.
#[derive(Debug)]
pub(crate) struct Transcoder {
    quote: &'static str,
    /// The containers open inside the arguments object (which is the first).
    stack: Vec<Container>,
    lex: Lex,
    /// The last token was a comma (a value or key must follow).
    after_comma: bool,
}

/// Not Gemma's arguments syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Malformed;

impl Transcoder {
    /// The transcoder for the arguments after their opening `{` (already written as JSON).
    pub fn new(quote: &'static str) -> Transcoder {
        Transcoder {
            quote,
            stack: vec![Container::Object],
            lex: Lex::Idle { key: true },
            after_comma: false,
        }
    }

    /// Reads one character, appending its JSON to `out`. `Ok(true)` when it closed the
    /// arguments object.
    pub fn push(&mut self, c: char, out: &mut String) -> Result<bool, Malformed> {
        match &mut self.lex {
            Lex::Idle { key } => {
                let key = *key;
                self.idle(c, key, out)
            }
            Lex::Key(buf) => {
                if name_char(c) && buf.len() < MAX_NAME {
                    buf.push(c);
                    return Ok(false);
                }
                if c != ':' && !c.is_whitespace() {
                    return Err(Malformed);
                }
                out.push('"');
                buf.chars().for_each(|k| escape_into(out, k));
                out.push('"');
                self.lex = Lex::Colon;
                if c == ':' {
                    out.push(':');
                    self.lex = Lex::Idle { key: false };
                }
                Ok(false)
            }
            Lex::Colon => match c {
                ':' => {
                    out.push(':');
                    self.lex = Lex::Idle { key: false };
                    Ok(false)
                }
                c if c.is_whitespace() => Ok(false),
                _ => Err(Malformed),
            },
            Lex::Open { key, held } => {
                held.push(c);
                if held == self.quote {
                    out.push('"');
                    self.lex = Lex::Str {
                        key: *key,
                        held: String::new(),
                    };
                    Ok(false)
                } else if self.quote.starts_with(held.as_str()) {
                    Ok(false)
                } else {
                    Err(Malformed)
                }
            }
            Lex::Str { key, held } => {
                if held.is_empty() {
                    if c == '<' {
                        held.push(c);
                    } else {
                        escape_into(out, c);
                    }
                    return Ok(false);
                }
                held.push(c);
                if held == self.quote {
                    out.push('"');
                    self.lex = if *key {
                        Lex::Colon
                    } else {
                        Lex::Idle { key: false }
                    };
                    return Ok(false);
                }
                if !self.quote.starts_with(held.as_str()) {
                    // Not the quote token: the held bytes are content. The quote token holds
                    // no `<` but its first, so only this last character can start another.
                    held.pop();
                    held.chars().for_each(|h| escape_into(out, h));
                    held.clear();
                    if c == '<' {
                        held.push(c);
                    } else {
                        escape_into(out, c);
                    }
                }
                Ok(false)
            }
        }
    }

    fn idle(&mut self, c: char, key: bool, out: &mut String) -> Result<bool, Malformed> {
        if c.is_whitespace() {
            // Kept: a blank ends a number or a word.
            out.push(c);
            return Ok(false);
        }
        let top = self.stack.last().copied();
        let comma = std::mem::replace(&mut self.after_comma, false);
        match c {
            '<' => {
                self.lex = Lex::Open {
                    key,
                    held: c.to_string(),
                };
            }
            c if key && name_char(c) => self.lex = Lex::Key(c.to_string()),
            '}' if top == Some(Container::Object) && !comma => {
                out.push(c);
                self.stack.pop();
                self.lex = Lex::Idle { key: false };
                return Ok(self.stack.is_empty());
            }
            _ if key => return Err(Malformed),
            '{' => {
                out.push(c);
                self.stack.push(Container::Object);
                self.lex = Lex::Idle { key: true };
            }
            '[' => {
                out.push(c);
                self.stack.push(Container::Array);
            }
            ']' if top == Some(Container::Array) && !comma => {
                out.push(c);
                self.stack.pop();
            }
            ',' if !comma => {
                out.push(c);
                self.after_comma = true;
                self.lex = Lex::Idle {
                    key: top == Some(Container::Object),
                };
            }
            // Strings are written between quote tokens; a JSON or Python quote is not this
            // syntax, and neither is a stray separator.
            '"' | '\'' | ':' | ',' | '}' | ']' => return Err(Malformed),
            // Numbers and words: the JSON parser checks them.
            _ => out.push(c),
        }
        Ok(false)
    }

    /// Whether the stream may end here and the arguments be closed by brackets alone: not
    /// inside a key or a string, and not right after a comma.
    pub fn can_close(&self) -> bool {
        matches!(self.lex, Lex::Idle { .. }) && !self.after_comma
    }
}

#[derive(Debug)]
enum G {
    /// The start marker, `left` bytes of it still to read.
    Trigger { left: usize },
    /// Blanks, then `call:` (`lit` bytes of it read).
    Call { ws: usize, lit: usize },
    /// The tool's name, up to `{`.
    Name(String),
    /// The arguments, fed as JSON to the call object.
    Args {
        call: Box<CallObject>,
        args: Transcoder,
    },
    /// After the call: blanks, then the end marker.
    Tail { buf: String },
}

#[derive(Debug)]
struct GemmaMachine {
    st: G,
    dialect: &'static Dialect,
    text_mode: bool,
    /// The concluded call, emitted when its end marker comes (or does not).
    pending: Option<Outcome>,
}

fn opts() -> CallOpts {
    CallOpts {
        wrapped: true,
        format: FormatId::GemmaCall,
        parameters_native: false,
        keys: Keys::Named,
    }
}

/// What one character did to the arguments.
enum ArgStep {
    More,
    Closed(Option<Outcome>),
    Failed(CallErr),
}

impl GemmaMachine {
    fn extra(&self, ctx: &Ctx<'_>, mut more: Vec<RepairKind>) -> Vec<RepairKind> {
        if self.text_mode && !ctx.auto {
            more.push(RepairKind::NativeInTextMode);
        }
        more
    }

    fn emit_pending(
        &mut self,
        repairs: Vec<RepairKind>,
        raw: &str,
        ctx: &Ctx<'_>,
        out: &mut Vec<Event>,
    ) {
        if let Some(o) = self.pending.take() {
            o.emit(&self.extra(ctx, repairs), raw, out);
        }
    }

    /// `{` after the name: the call is committed, and starts if the name is declared.
    fn start_args(&mut self, name: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Flow {
        let mut call = CallObject::new(opts());
        // The name's characters are `name_char`s, so it needs no escaping in JSON.
        for ch in format!("{{\"name\":\"{name}\",\"arguments\":{{").chars() {
            if call.push(ch, ctx, out).is_err() {
                return Flow::Reject;
            }
        }
        self.st = G::Args {
            call,
            args: Transcoder::new(self.dialect.quote),
        };
        Flow::More
    }

    fn args_step(
        call: &mut CallObject,
        args: &mut Transcoder,
        c: char,
        ctx: &mut Ctx<'_>,
        out: &mut Vec<Event>,
    ) -> ArgStep {
        let mut json = String::new();
        let closed = match args.push(c, &mut json) {
            Ok(closed) => closed,
            Err(Malformed) => {
                call.flush(out);
                return ArgStep::Failed(CallErr::Fail(FailureKind::InvalidJson));
            }
        };
        for ch in json.chars() {
            if let Err(e) = call.push(ch, ctx, out) {
                return ArgStep::Failed(e);
            }
        }
        if !closed {
            return ArgStep::More;
        }
        match call.push('}', ctx, out) {
            Ok(Push::Complete) => {}
            Ok(_) => return ArgStep::Failed(CallErr::Fail(FailureKind::InvalidJson)),
            Err(e) => return ArgStep::Failed(e),
        }
        ArgStep::Closed(match call.conclude(ctx, out) {
            Ok(o) => Some(o),
            Err(e) => call.outcome_of(e),
        })
    }
}

impl Machine for GemmaMachine {
    fn push(&mut self, c: char, raw: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Flow {
        match &mut self.st {
            G::Trigger { left } => {
                *left -= c.len_utf8();
                if *left == 0 {
                    self.st = G::Call { ws: 0, lit: 0 };
                }
                Flow::More
            }
            G::Call { ws, lit } => {
                if *lit == 0 && c.is_whitespace() {
                    *ws += 1;
                    return if *ws > WS_MAX {
                        Flow::Reject
                    } else {
                        Flow::More
                    };
                }
                if !CALL[*lit..].starts_with(c) {
                    return Flow::Reject;
                }
                *lit += 1;
                if *lit == CALL.len() {
                    self.st = G::Name(String::new());
                }
                Flow::More
            }
            G::Name(buf) => {
                if name_char(c) && buf.len() < MAX_NAME {
                    buf.push(c);
                    return Flow::More;
                }
                if c != '{' || buf.is_empty() {
                    return Flow::Reject;
                }
                let name = std::mem::take(buf);
                self.start_args(&name, ctx, out)
            }
            G::Args { call, args } => match Self::args_step(call, args, c, ctx, out) {
                ArgStep::More => Flow::More,
                ArgStep::Closed(o) => {
                    self.pending = o;
                    self.st = G::Tail { buf: String::new() };
                    Flow::More
                }
                ArgStep::Failed(e) => match call.outcome_of(e) {
                    Some(o) => {
                        o.emit(&[], raw, out);
                        Flow::DoneBefore
                    }
                    None => Flow::Reject,
                },
            },
            G::Tail { buf } => {
                buf.push(c);
                let t = buf.trim_start();
                if t == self.dialect.close {
                    self.emit_pending(Vec::new(), raw, ctx, out);
                    return Flow::Done;
                }
                if self.dialect.close.starts_with(t) && buf.len() <= WS_MAX {
                    return Flow::More;
                }
                let held = std::mem::take(buf);
                self.emit_pending(vec![RepairKind::MissingCloseTag], raw, ctx, out);
                Flow::Ended {
                    held,
                    line_start: false,
                }
            }
        }
    }

    fn eos(&mut self, raw: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Eos {
        let st = std::mem::replace(&mut self.st, G::Tail { buf: String::new() });
        match st {
            G::Trigger { .. } | G::Call { .. } | G::Name(_) => Eos::Reject,
            G::Args { mut call, args } => {
                let o = if args.can_close() {
                    match call.finish(ctx, out) {
                        Ok(o) => Some(o),
                        Err(e) => call.outcome_of(e),
                    }
                } else {
                    // Cut inside a key or a string, or after a comma: more than brackets is
                    // missing.
                    call.flush(out);
                    Some(Outcome::Failure {
                        index: call.index(),
                        kind: FailureKind::TruncatedJson,
                    })
                };
                match o {
                    Some(o @ Outcome::Proposal { .. }) => {
                        o.emit(
                            &self.extra(ctx, vec![RepairKind::MissingCloseTag]),
                            raw,
                            out,
                        );
                    }
                    Some(o) => o.emit(&[], raw, out),
                    None => return Eos::Reject,
                }
                Eos::Closed(None)
            }
            G::Tail { buf } => {
                self.emit_pending(vec![RepairKind::MissingCloseTag], raw, ctx, out);
                Eos::Closed(if buf.is_empty() { None } else { Some(buf) })
            }
        }
    }

    fn flush(&mut self, out: &mut Vec<Event>) {
        if let G::Args { call, .. } = &mut self.st {
            call.flush(out);
        }
    }

    fn uncommitted(&self) -> bool {
        match &self.st {
            G::Args { call, .. } => call.uncommitted(),
            G::Tail { .. } => self.pending.is_none(),
            _ => true,
        }
    }

    fn open_index(&self) -> Option<usize> {
        match &self.st {
            G::Args { call, .. } => call.index(),
            _ => None,
        }
    }
}
