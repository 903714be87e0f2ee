//! gpt-oss's harmony messages:
//!
//! | message | written |
//! |---|---|
//! | a call | `<\|channel\|>commentary to=functions.f <\|constrain\|>json<\|message\|>{…}<\|call\|>` |
//! | a call, recipient first | `<\|start\|>assistant to=functions.f<\|channel\|>commentary json<\|message\|>{…}<\|call\|>` |
//! | reasoning | `<\|channel\|>analysis<\|message\|>…<\|end\|>` |
//! | prose | `<\|channel\|>final<\|message\|>…<\|return\|>`, `<\|channel\|>commentary<\|message\|>…<\|end\|>` |
//!
//! Sources: OpenAI's harmony response format guide (channels `analysis`, `commentary` and
//! `final`; a function call's recipient `to=functions.f` in the header, its content type
//! after `<|constrain|>`, the call ending in `<|call|>`; every message after the first opening
//! with `<|start|>assistant`); vLLM's `openai` tool parser (a recipient starting with
//! `functions.` is a call, JSON when no content type is given); llama.cpp's
//! `common_chat_parse_gpt_oss` in `common/chat.cpp` (the recipient before or after the
//! channel, `<|constrain|>` optional before the content type, a recipient on the `analysis`
//! channel also a call, `analysis` without one reasoning). Nothing is copied from them.
//!
//! # Why a format of its own
//!
//! Harmony has no section: each message is a header (channel, recipient, content type in
//! either order) closed by `<|message|>`, and what the content is depends on the header as a
//! whole. Nothing in [`super::section`]'s table (section, call and separator markers around a
//! head) describes that, so it is one `FormatId` with its own small header reader.
//!
//! # Triggers
//!
//! `<|channel|>` and `<|start|>assistant`, special tokens matched anywhere. The header is read
//! up to `<|message|>` (at most [`HEADER_MAX`] bytes, on one line) and then decided:
//!
//! * a recipient `functions.f` on the `commentary` or `analysis` channel: a call to `f`. The
//!   name is certain at `<|message|>`; the arguments are JSON, read by the call-object parser
//!   of `call.rs` (so they stream, validate and repair as every JSON call does), and the call
//!   goes out at `<|call|>` (`missing_close_tag` without it);
//! * the `analysis` channel without a recipient: the model's reasoning. Its content streams out
//!   as [`Event::Reasoning`] (the header and `<|end|>` as prose) and is never decoded, so a
//!   call written inside it is no call. It ends at `<|end|>`, or before a `<|start|>` or
//!   `<|channel|>` that comes first;
//! * anything else (`final`, a `commentary` preamble, a builtin recipient such as
//!   `browser.search`, a header that does not parse): prose, every byte handed back.

use super::section::{ArgStep, JsonArgs, name_char};
use super::{Driven, Eos, Flow, Machine, detect_row};
use crate::event::{Event, RepairKind};
use crate::format::{Ctx, Detect, Format, FormatId, Position, push_reasoning, push_text};

/// The triggers.
pub const TRIGGERS: &[&str] = &[START, CHANNEL];
const START: &str = "<|start|>assistant";
const CHANNEL: &str = "<|channel|>";
const MESSAGE: &str = "<|message|>";
const CONSTRAIN: &str = "<|constrain|>";
const CALL_END: &str = "<|call|>";
const END: &str = "<|end|>";
const NAMESPACE: &str = "functions.";
/// The most bytes a header may hold, `<|message|>` included.
pub const HEADER_MAX: usize = 256;
const WS_MAX: usize = 64;
/// Where a reasoning message stops: `<|end|>` (consumed), or the next message's start.
const STOPS: &[&str] = &[END, "<|start|>", CHANNEL];

/// The detector.
#[derive(Debug)]
pub struct Harmony {
    text_mode: bool,
}

impl Harmony {
    pub fn new(text_mode: bool) -> Harmony {
        Harmony { text_mode }
    }
}

impl Format for Harmony {
    fn id(&self) -> FormatId {
        FormatId::Harmony
    }
    fn trigger_bytes(&self) -> &'static [u8] {
        b"<"
    }
    fn line_start_bytes(&self) -> &'static [u8] {
        b""
    }
    fn detect(&self, s: &str, at: Position, _ctx: &Ctx<'_>) -> Detect {
        match detect_row(s, at, TRIGGERS, |t| t) {
            Some(Ok(_)) => Detect::Start(Driven::boxed(HarmonyMachine {
                st: H::Header { buf: String::new() },
                text_mode: self.text_mode,
                pending: None,
            })),
            Some(Err(())) => Detect::NeedMore,
            None => Detect::No,
        }
    }
}

/// What a header says.
#[derive(Debug, PartialEq, Eq)]
enum Said {
    /// A call to this tool.
    Call(String),
    /// The reasoning channel.
    Analysis,
    /// Anything else: prose.
    Other,
}

/// Reads `to=RECIPIENT` after optional blanks; the recipient runs to a blank or `<`.
fn recipient(s: &str) -> Option<(&str, &str)> {
    let r = s.trim_start_matches(' ').strip_prefix("to=")?;
    let end = r.find([' ', '<']).unwrap_or(r.len());
    Some((&r[..end], &r[end..]))
}

/// Decides a header (without `<|message|>`), as llama.cpp's gpt-oss parser reads it.
fn read_header(h: &str) -> Said {
    let s = h.strip_prefix(START).unwrap_or(h);
    let (mut to, s) = match recipient(s) {
        Some((r, rest)) => (Some(r), rest),
        None => (None, s),
    };
    let Some(s) = s.strip_prefix(CHANNEL) else {
        return Said::Other;
    };
    let end = s.find(|c: char| !c.is_ascii_lowercase()).unwrap_or(s.len());
    let (channel, mut s) = s.split_at(end);
    if to.is_none()
        && let Some((r, rest)) = recipient(s)
    {
        to = Some(r);
        s = rest;
    }
    // The content type, `<|constrain|>` optional before it.
    let t = s.trim_start_matches(' ');
    let t = t.strip_prefix(CONSTRAIN).unwrap_or(t).trim_matches(' ');
    if !t
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
    {
        return Said::Other;
    }
    match (channel, to) {
        ("commentary" | "analysis", Some(r)) => match r.strip_prefix(NAMESPACE) {
            Some(name) if !name.is_empty() && name.len() <= 128 && name.chars().all(name_char) => {
                Said::Call(name.to_owned())
            }
            _ => Said::Other,
        },
        ("analysis", None) => Said::Analysis,
        _ => Said::Other,
    }
}

#[derive(Debug)]
enum H {
    /// The header, trigger included, up to `<|message|>`.
    Header { buf: String },
    /// A call's arguments.
    Args { args: JsonArgs },
    /// After the arguments: blanks, then `<|call|>`.
    Tail { buf: String },
    /// Reasoning; `held` may begin a stop marker.
    Analysis { held: String },
}

#[derive(Debug)]
struct HarmonyMachine {
    st: H,
    text_mode: bool,
    /// The concluded call, emitted when `<|call|>` comes (or does not).
    pending: Option<crate::native::call::Outcome>,
}

impl HarmonyMachine {
    fn emit_pending(
        &mut self,
        mut repairs: Vec<RepairKind>,
        raw: &str,
        ctx: &Ctx<'_>,
        out: &mut Vec<Event>,
    ) {
        if let Some(o) = self.pending.take() {
            if self.text_mode && !ctx.auto {
                repairs.push(RepairKind::NativeInTextMode);
            }
            o.emit(&repairs, raw, out);
        }
    }

    fn header(&mut self, c: char, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Flow {
        let H::Header { buf } = &mut self.st else {
            return Flow::Reject;
        };
        buf.push(c);
        let Some(h) = buf.strip_suffix(MESSAGE) else {
            return if c == '\n' || buf.len() >= HEADER_MAX {
                Flow::Reject
            } else {
                Flow::More
            };
        };
        match read_header(h) {
            Said::Call(name) => match JsonArgs::start(&name, FormatId::Harmony, ctx, out) {
                Some(args) => {
                    self.st = H::Args { args };
                    Flow::More
                }
                None => Flow::Reject,
            },
            Said::Analysis => {
                push_text(out, buf);
                self.st = H::Analysis {
                    held: String::new(),
                };
                Flow::Claimed { keep: 0 }
            }
            Said::Other => Flow::Reject,
        }
    }
}

impl Machine for HarmonyMachine {
    fn push(&mut self, c: char, raw: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Flow {
        match &mut self.st {
            H::Header { .. } => self.header(c, ctx, out),
            H::Args { args } => match args.push(c, ctx, out) {
                ArgStep::More => Flow::More,
                ArgStep::Closed(o) => {
                    self.pending = o;
                    self.st = H::Tail { buf: String::new() };
                    Flow::More
                }
                ArgStep::Failed(Some(o)) => {
                    o.emit(&[], raw, out);
                    Flow::DoneBefore
                }
                ArgStep::Failed(None) => Flow::Reject,
            },
            H::Tail { buf } => {
                buf.push(c);
                let t = buf.trim_start();
                if t == CALL_END {
                    self.emit_pending(Vec::new(), raw, ctx, out);
                    return Flow::Done;
                }
                if CALL_END.starts_with(t) && buf.len() <= WS_MAX {
                    return Flow::More;
                }
                let held = std::mem::take(buf);
                self.emit_pending(vec![RepairKind::MissingCloseTag], raw, ctx, out);
                Flow::Ended {
                    held,
                    line_start: false,
                }
            }
            H::Analysis { held } => {
                held.push(c);
                if held == END {
                    return Flow::Done;
                }
                if STOPS[1..].contains(&held.as_str()) {
                    return Flow::Ended {
                        held: std::mem::take(held),
                        line_start: false,
                    };
                }
                if STOPS.iter().any(|m| m.starts_with(held.as_str())) {
                    return Flow::More;
                }
                // Not a stop: reasoning, except a last `<` that may begin one.
                let keep = if c == '<' { 1 } else { 0 };
                push_reasoning(out, &held[..held.len() - keep]);
                held.drain(..held.len() - keep);
                Flow::Claimed { keep }
            }
        }
    }

    fn eos(&mut self, raw: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Eos {
        let st = std::mem::replace(&mut self.st, H::Tail { buf: String::new() });
        match st {
            H::Header { .. } => Eos::Reject,
            H::Args { mut args } => {
                match args.finish(ctx, out) {
                    Some(o) => {
                        self.pending = Some(o);
                        self.emit_pending(vec![RepairKind::MissingCloseTag], raw, ctx, out);
                    }
                    None => return Eos::Reject,
                }
                Eos::Closed(None)
            }
            H::Tail { buf } => {
                self.emit_pending(vec![RepairKind::MissingCloseTag], raw, ctx, out);
                Eos::Closed((!buf.is_empty()).then_some(buf))
            }
            // A reasoning message the stream cut off is reasoning to the end; bytes held as a
            // possible stop marker go back as prose.
            H::Analysis { held } => Eos::Closed((!held.is_empty()).then_some(held)),
        }
    }

    fn flush(&mut self, out: &mut Vec<Event>) {
        if let H::Args { args } = &mut self.st {
            args.flush(out);
        }
    }

    fn uncommitted(&self) -> bool {
        match &self.st {
            H::Header { .. } => true,
            H::Args { args } => args.uncommitted(),
            H::Tail { .. } => self.pending.is_none(),
            H::Analysis { .. } => false,
        }
    }

    fn open_index(&self) -> Option<usize> {
        match &self.st {
            H::Args { args } => args.index(),
            _ => None,
        }
    }
}
