//! Native tool-call formats: Hermes / Qwen2.5 `<tool_call>{json}</tool_call>` (and GLM-4.5's
//! `<tool_call>f<arg_key>…` inside the same tag), Qwen3-Coder XML (`<function=…><parameter=…>`,
//! also in Seed-OSS's and MiniMax-M2's wrappers: one table, [`xml_wrapped`]), Llama 3
//! (`<|python_tag|>` and bare `{"name", "parameters"}` lines), Mistral `[TOOL_CALLS]`, pythonic
//! `[f(a=1)]`, bare `{"name", "arguments"}` objects,
//! lists of them and `{"tool_calls": […]}` / `{"tool_call": {…}}` envelopes (optionally in a
//! ```json fence; [`bare_json`], [`json_list`]), a known body after a start marker
//! (`<tool_calls>`, `<TOOLCALL>`, `<|tools_prefix|>`, `<|START_ACTION|>`, `<|tool_call|>`,
//! `functools`, `<|action_start|><|plugin|>`, `<|tool_call_start|>`, `<|python_start|>`,
//! `<function_calls>`: one table, [`marker_list`]), Gemma's `call:f{a:<escape>v<escape>}` between
//! FunctionGemma's or Gemma 4's markers ([`gemma_call`]), the Hermes call object in the
//! wrappers small models drift to (`<tools>`, `<function_call>`, `<function name="f">`, …;
//! [`hermes_drift`]), calls between section markers (DeepSeek R1/V3/V3.1's
//! `<｜tool▁calls▁begin｜>`, Kimi K2's `<|tool_calls_section_begin|>`: one table, [`section`]),
//! gpt-oss's harmony messages ([`harmony`]), and OpenAI `tool_calls` stream deltas ([`openai`]).
//!
//! # Triggers
//!
//! Every in-band format answers [`Format::detect`] at candidate positions. Their triggers are
//! disjoint, so at most one format says yes anywhere and the order they are asked in never
//! matters (a test checks every pair on every trigger):
//!
//! | format | trigger | where |
//! |---|---|---|
//! | hermes (+ qwen3_xml) | `<tool_call>` | anywhere; the body then sees `{`/`[` (JSON), `<function=` (XML) or a name (GLM-4.5, a call only once `<arg_key>` or `</tool_call>` follows the name) |
//! | qwen3_xml | `<function=` | anywhere (the XML call without its `<tool_call>` wrapper) |
//! | llama3 | `<\|python_tag\|>` | anywhere |
//! | mistral | `[TOOL_CALLS]` | anywhere |
//! | pythonic | `[` ident `(` | line start |
//! | pythonic (bare) | blanks, then a declared tool's dotted name and `(`, or `[` and one (after at least one blank); in a registry without builtins also a ```` ``` ````/```` ```python ```` fence whose first line is such a call line | line start ([`bare_call`]) |
//! | bare_json | `{` ws `"name"`/`"arguments"`/`"parameters"`/`"type"` ws `:` | line start |
//! | bare_json (list) | `[` ws, then the object trigger above | line start |
//! | bare_json (envelope) | `{` ws `"tool_calls"`/`"tool_call"` ws `:` | line start |
//! | bare_json | ```` ```json ```` ws newline ws, then any of the three triggers above | line start |
//! | marker_list | `<tool_calls>`, `<TOOLCALL>`, `<\|tools_prefix\|>`, `<\|START_ACTION\|>`, `<\|tool_call\|>` | anywhere |
//! | marker_list | `functools[` | line start |
//! | marker_list | `<\|action_start\|><\|plugin\|>` | anywhere |
//! | marker_list | `<\|tool_call_start\|>`, `<\|python_start\|>`, then blanks, `[`, blanks, a name's first letter (LFM2: or `{`; or a ```` ```python ```` line, blanks and a name's first letter) | anywhere |
//! | marker_list | `<function_calls>`, then blanks and a name's first letter | anywhere |
//! | qwen3_xml (wrapped) | `<seed:tool_call>`, `<minimax:tool_call>` | anywhere |
//! | bare_json (name line) | a declared tool's name, newline, blanks, `{` | the reply's first line only ([`Position::reply_start`]); a call only when the object ends the reply |
//! | gemma_call | `<start_function_call>`, `<\|tool_call>` | anywhere |
//! | hermes (drift) | `<function_call>`, `<tool>`, `<tools>`, `<response>`, `<json>`, `<xml>`, `<JSON>`, `<function name="` | anywhere; decoded only when a call to a declared tool follows |
//! | section_calls | `<｜tool▁calls▁begin｜>` (U+FF5C, U+2581), `<\|tool_calls_section_begin\|>` | anywhere |
//! | harmony | `<\|channel\|>`, `<\|start\|>assistant` | anywhere; a call only with a `functions.` recipient |
//!
//! In the single-format mode `llama3`, [`format`] also gives Llama 3 the line-start object
//! trigger (its native form is `{"name": …, "parameters": …}` on a line of its own); in `auto`
//! that trigger belongs to bare_json, which accepts either key. The list trigger differs from
//! pythonic's in the byte after `[` and its blanks (`{`, not an identifier) and from Mistral's
//! (`T`); the envelope's first key is none of the object's. `<tool_calls>` and hermes'
//! `<tool_call>` share the prefix `<tool_call`: both answer `NeedMore` up to it and the next
//! byte (`s` or `>`) makes one say `Start` and the other `No`; `<|tool_call|>` parts from
//! `<|python_tag|>` at its third byte and from gemma_call's `<|tool_call>` at its last. The
//! drifted Hermes wrappers part the same way: `<tool>` and `<tools>` from `<tool_call>` and
//! `<tool_calls>` at the byte after `<tool`, `<function_call>` and `<function name="` from
//! qwen3_xml's `<function=` at the byte after `<function`. Kimi's `<|tool_calls_section_begin|>`
//! parts from `<|tool_call|>` and `<|tool_call>` at the byte after `<|tool_call` (`s`), and from
//! Apertus' `<|tools_prefix|>` at the byte after `<|tool` (`_`); harmony's `<|start|>` from
//! Command R7B's `<|START_ACTION|>` at its third byte; DeepSeek's markers are the only
//! triggers whose second byte is not ASCII. LFM2's `<|tool_call_start|>` parts from
//! `<|tool_call|>`, `<|tool_call>` and Kimi's section marker at the byte after `<|tool_call`,
//! Olmo's `<function_calls>` from `<function_call>` at the byte after `<function_call`;
//! `<seed:` and `<minimax:` share their second byte with no other trigger, and Mistral's v11
//! `[TOOL_CALLS]f{` is the same `[TOOL_CALLS]` trigger. The text protocol's triggers
//! (uppercase verbs, `<<<`/`===`/`>>>` markers, fences, path lines) start with other bytes
//! or part from these at a byte they cannot hold (a path line never holds the `[` of
//! `functools[`), except the ```` ```json ```` fence: the text protocol must answer `No` where
//! [`bare_json::fence_detect`] answers `Start` or `NeedMore` (a fence whose first line opens
//! a call object belongs to bare_json).
//!
//! # Streaming
//!
//! A call emits `ToolCallStart` once its name is certain and known, then `ArgsDelta`
//! fragments, then one `Proposal` or `Failure`. Client tools' arguments stream as they are
//! read; a builtin's arguments are normalised by the registry (spec key order, aliases, whole
//! lines), so they go out in one fragment when validated. Either way the concatenation is
//! `ActionProposal::arguments_json()`. Each body reads every byte once and holds at most
//! [`MAX_HELD`] bytes (then `too_long`).

pub mod bare_call;
pub mod bare_json;
mod call;
pub mod gemma_call;
pub mod harmony;
pub mod hermes;
pub mod hermes_drift;
pub mod json;
pub mod json_list;
pub mod llama3;
pub mod marker_list;
pub mod mistral;
pub mod name_line;
pub mod openai;
pub mod pythonic;
pub mod qwen3_xml;
pub mod section;
pub mod xml_wrapped;

use crate::event::{Event, FailureKind};
use crate::format::{Body, Ctx, Format, FormatId, Position, Step};

pub use call::resolve_name;

/// The most bytes one construct may hold (its raw text, kept for failures and rejection).
pub const MAX_HELD: usize = 1 << 20;

/// Every in-band native format for `auto` mode; their triggers are disjoint.
pub fn formats() -> Vec<Box<dyn Format>> {
    vec![
        Box::new(hermes::ToolCallTag::new(FormatId::Hermes, false)),
        Box::new(qwen3_xml::BareFunction::new(false)),
        Box::new(llama3::PythonTag::new(false, false)),
        Box::new(mistral::Mistral::new(false)),
        Box::new(pythonic::Pythonic::new(false)),
        Box::new(bare_call::BareCall::new(false)),
        Box::new(bare_json::BareJson::new(FormatId::BareJson, false)),
        Box::new(marker_list::MarkerList::new(false)),
        Box::new(gemma_call::GemmaCall::new(false)),
        Box::new(hermes_drift::HermesDrift::new(false)),
        Box::new(section::SectionCalls::new(false)),
        Box::new(harmony::Harmony::new(false)),
        Box::new(xml_wrapped::XmlWrapped::new(false)),
        Box::new(name_line::NameLine::new(false)),
    ]
}

/// The same formats for the text protocol's single-format mode: a call decoded there carries
/// the `native_in_text_mode` repair (the model was asked for the text protocol).
pub fn text_mode_formats() -> Vec<Box<dyn Format>> {
    vec![
        Box::new(hermes::ToolCallTag::new(FormatId::Hermes, true)),
        Box::new(qwen3_xml::BareFunction::new(true)),
        Box::new(llama3::PythonTag::new(false, true)),
        Box::new(mistral::Mistral::new(true)),
        Box::new(pythonic::Pythonic::new(true)),
        Box::new(bare_call::BareCall::new(true)),
        Box::new(bare_json::BareJson::new(FormatId::BareJson, true)),
        Box::new(marker_list::MarkerList::new(true)),
        Box::new(gemma_call::GemmaCall::new(true)),
        Box::new(hermes_drift::HermesDrift::new(true)),
        Box::new(section::SectionCalls::new(true)),
        Box::new(harmony::Harmony::new(true)),
        Box::new(xml_wrapped::XmlWrapped::new(true)),
        Box::new(name_line::NameLine::new(true)),
    ]
}

/// The detectors of one format's single-format mode; `None` for `text` and `openai` (the
/// latter is not in-band text: see [`openai::DeltaDecoder`]).
pub fn format(id: FormatId) -> Option<Box<dyn Format>> {
    match id {
        FormatId::Hermes | FormatId::Qwen3Xml => {
            Some(Box::new(hermes::ToolCallTag::new(id, false)))
        }
        FormatId::Llama3 => Some(Box::new(llama3::PythonTag::new(true, false))),
        FormatId::Mistral => Some(Box::new(mistral::Mistral::new(false))),
        FormatId::Pythonic => Some(Box::new(pythonic::Pythonic::new(false))),
        FormatId::BareJson => Some(Box::new(bare_json::BareJson::new(id, false))),
        FormatId::MarkerList => Some(Box::new(marker_list::MarkerList::new(false))),
        FormatId::GemmaCall => Some(Box::new(gemma_call::GemmaCall::new(false))),
        FormatId::SectionCalls => Some(Box::new(section::SectionCalls::new(false))),
        FormatId::Harmony => Some(Box::new(harmony::Harmony::new(false))),
        FormatId::Text | FormatId::OpenAi => None,
    }
}

/// Every format a single-format mode enables: for `qwen3_xml` also the unwrapped
/// `<function=` trigger and the other wrappers of XML calls (Seed-OSS, MiniMax-M2), for
/// `hermes` also the drifted wrappers.
pub fn mode_formats(id: FormatId) -> Vec<Box<dyn Format>> {
    let mut v: Vec<Box<dyn Format>> = format(id).into_iter().collect();
    match id {
        FormatId::Qwen3Xml => {
            v.push(Box::new(qwen3_xml::BareFunction::new(false)));
            v.push(Box::new(xml_wrapped::XmlWrapped::new(false)));
        }
        FormatId::Hermes => v.push(Box::new(hermes_drift::HermesDrift::new(false))),
        FormatId::BareJson => v.push(Box::new(name_line::NameLine::new(false))),
        FormatId::Pythonic => v.push(Box::new(bare_call::BareCall::new(false))),
        _ => {}
    }
    v
}

/// A call decoded whole at once (its name and arguments known together): its start, its
/// arguments in one delta and the proposal, under the next index of `ctx`.
pub(crate) fn emit_whole(
    ctx: &mut Ctx<'_>,
    out: &mut Vec<Event>,
    proposal: crate::action::ActionProposal,
) {
    let index = ctx.take_index();
    out.push(Event::ToolCallStart {
        index,
        name: proposal.action.name().to_owned(),
    });
    out.push(Event::ArgsDelta {
        index,
        fragment: proposal.arguments_json(),
    });
    out.push(Event::Proposal { index, proposal });
}

/// Matches a literal trigger at the start of `s`.
pub(crate) fn detect_literal(s: &str, lit: &str, at: Position) -> Option<bool> {
    if s.starts_with(lit) {
        Some(true)
    } else if lit.starts_with(s) && !at.eos {
        None
    } else {
        Some(false)
    }
}

/// The first of `rows` whose literal (`open`) starts `s`: `Some(Ok(row))`; `Some(Err(()))`
/// when none does yet but one still could (more bytes needed); `None` when none can.
pub(crate) fn detect_row<'t, T>(
    s: &str,
    at: Position,
    rows: &'t [T],
    open: impl Fn(&T) -> &str,
) -> Option<Result<&'t T, ()>> {
    let mut more = false;
    for row in rows {
        match detect_literal(s, open(row), at) {
            Some(true) => return Some(Ok(row)),
            None => more = true,
            Some(false) => {}
        }
    }
    more.then_some(Err(()))
}

/// The result of one character read by a [`Machine`].
#[derive(Debug)]
pub(crate) enum Flow {
    More,
    /// The construct ends with this character.
    Done,
    /// The construct ended just before this character, which goes back to prose.
    DoneBefore,
    /// Not this construct; everything read goes back to prose.
    Reject,
    /// The construct ended earlier; `held` (read after its end, this character included)
    /// goes back to prose.
    Ended {
        held: String,
        line_start: bool,
    },
    /// The machine emitted everything read so far (as prose or reasoning, not as calls) but
    /// the last `keep` bytes, which it still holds; the construct goes on. Nothing emitted
    /// before is ever part of a failure's raw text, and the bytes held stay bounded.
    Claimed {
        keep: usize,
    },
}

/// What a machine does at end of stream.
#[derive(Debug)]
pub(crate) enum Eos {
    /// Finished (events emitted); these bytes go back to prose.
    Closed(Option<String>),
    /// Not this construct.
    Reject,
}

/// A format's construct as a character-at-a-time state machine; [`Driven`] turns it into a
/// [`Body`] (chunking, raw-text bookkeeping, the byte cap).
///
/// `raw` is the construct's text read since its last closed call, `c` included: a failure
/// carries it (or, when another call of the same wrapper is already under way, a prefix of it
/// up to the failed call's end). [`Driven`] takes bytes that go back to prose off a failure's
/// raw text, puts pending argument fragments before the closing event, and releases text that
/// no call claimed as prose, so every byte is reported once.
pub(crate) trait Machine: std::fmt::Debug + Send {
    fn push(&mut self, c: char, raw: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Flow;
    fn eos(&mut self, raw: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Eos;
    /// Emits argument text read so far (called at the end of every `feed`).
    fn flush(&mut self, out: &mut Vec<Event>);
    /// Nothing emitted yet, so the construct may still be rejected.
    fn uncommitted(&self) -> bool;
    /// The index of the call in progress, if its start was emitted.
    fn open_index(&self) -> Option<usize>;
}

/// A [`Machine`] driven as a [`Body`].
#[derive(Debug)]
pub(crate) struct Driven<M> {
    m: M,
    raw: String,
    /// How much of `raw` belongs to calls already closed: a machine sees only the rest, so
    /// the failures of several calls in one wrapper each carry their own text, once.
    taken: usize,
    /// The last call closed was a proposal (trailing markup is its span, not prose).
    last_proposal: bool,
    /// The construct failed as `too_long`; the rest is ignored until it ends.
    dead: bool,
}

impl<M: Machine + 'static> Driven<M> {
    pub fn boxed(m: M) -> Box<dyn Body> {
        Box::new(Driven {
            m,
            raw: String::new(),
            taken: 0,
            last_proposal: false,
            dead: false,
        })
    }
}

/// A `Proposal` or a started call's `Failure`.
fn closes_call(e: &Event) -> bool {
    matches!(
        e,
        Event::Proposal { .. } | Event::Failure { index: Some(_), .. }
    )
}

/// Takes the last `n` bytes of `raw` (which go back to prose) off the last failure in
/// `events` when its text ends where `raw` does.
fn trim_failure_raw(events: &mut [Event], raw: &str, n: usize) {
    let last = events
        .iter_mut()
        .rev()
        .find(|e| matches!(e, Event::Failure { .. }));
    if let Some(Event::Failure { raw: r, .. }) = last
        && n > 0
        && r.len() >= n
        && raw.ends_with(r.as_str())
        && r.is_char_boundary(r.len() - n)
    {
        r.truncate(r.len() - n);
    }
}

impl<M: Machine> Driven<M> {
    /// After a character (or the end of stream) produced events from `mark` on: if a call
    /// closed, the raw text up to `end` is accounted for (a failure carries it; a proposal's
    /// construct spans it), and later failures of the same wrapper carry only what follows.
    ///
    /// Closing events are taken in order, so several failures emitted by one character (the
    /// held elements of a call list, released when its first call starts) each claim their
    /// own text.
    fn settle(&mut self, mark: usize, end: usize, out: &[Event]) {
        let closing = out[mark..]
            .iter()
            .filter(|e| matches!(e, Event::Proposal { .. } | Event::Failure { .. }));
        for e in closing {
            let open = &self.raw[self.taken..end.max(self.taken)];
            self.taken = match e {
                // A failure that carries only the start of the text read (the next call of
                // its wrapper is under way) claims just that.
                Event::Failure { raw, .. }
                    if raw.len() < open.len()
                        && open.starts_with(raw.as_str())
                        && !open.ends_with(raw.as_str()) =>
                {
                    self.taken + raw.len()
                }
                _ => end,
            };
            self.last_proposal = matches!(e, Event::Proposal { .. });
        }
    }

    /// The construct ended at `end`. Raw text read after its last failure (a wrapper's
    /// closing `]` or tag), or in a construct that closed no call at all (an empty list), was
    /// not decoded into anything: it goes out as prose rather than vanish. After a proposal
    /// it is that proposal's closing markup.
    fn release_unclaimed(&mut self, end: usize, out: &mut Vec<Event>) {
        if self.taken < end && !self.last_proposal {
            crate::format::push_text(out, &self.raw[self.taken..end]);
        }
        self.taken = end.max(self.taken);
    }

    /// Emits argument text still pending after a character that closed the construct. It
    /// was read before the call closed, so it goes before the call's `Proposal`/`Failure`
    /// (pushed since `mark`), never after: nothing follows a closed call.
    fn flush_before_close(&mut self, mark: usize, out: &mut Vec<Event>) {
        let mut pending = Vec::new();
        self.m.flush(&mut pending);
        if pending.is_empty() {
            return;
        }
        let close = out[mark..].iter().position(closes_call);
        match close {
            Some(k) => {
                out.splice(mark + k..mark + k, pending);
            }
            None => out.extend(pending),
        }
    }
}

impl<M: Machine> Body for Driven<M> {
    fn feed(&mut self, s: &str, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Step {
        for (i, c) in s.char_indices() {
            let after = i + c.len_utf8();
            if self.dead {
                return Step::Done { consumed: i };
            }
            self.raw.push(c);
            if self.raw.len() > MAX_HELD {
                if self.m.uncommitted() {
                    return Step::Reject {
                        held: std::mem::take(&mut self.raw),
                        rest: s.len() - after,
                    };
                }
                self.m.flush(out);
                out.push(Event::Failure {
                    index: self.m.open_index(),
                    kind: FailureKind::TooLong,
                    raw: self.raw.split_off(self.taken),
                });
                self.dead = true;
                return Step::Done { consumed: after };
            }
            let mark = out.len();
            let flow = self.m.push(c, &self.raw[self.taken..], ctx, out);
            match flow {
                Flow::More => {
                    self.settle(mark, self.raw.len(), out);
                }
                Flow::Claimed { keep } => {
                    let cut = self.raw.len().saturating_sub(keep);
                    self.raw.drain(..cut);
                    self.taken = 0;
                    self.last_proposal = false;
                }
                Flow::Done => {
                    self.flush_before_close(mark, out);
                    self.settle(mark, self.raw.len(), out);
                    self.release_unclaimed(self.raw.len(), out);
                    return Step::Done { consumed: after };
                }
                Flow::DoneBefore => {
                    // The character goes back to prose, so it is no part of a failure's raw
                    // text: machines fail with the raw read so far, this character included.
                    trim_failure_raw(&mut out[mark..], &self.raw[self.taken..], c.len_utf8());
                    self.raw.pop();
                    self.flush_before_close(mark, out);
                    self.settle(mark, self.raw.len(), out);
                    self.release_unclaimed(self.raw.len(), out);
                    return Step::Done { consumed: i };
                }
                Flow::Reject => {
                    return Step::Reject {
                        held: std::mem::take(&mut self.raw),
                        rest: s.len() - after,
                    };
                }
                Flow::Ended { held, line_start } => {
                    // Likewise the look-ahead handed back is prose, not failure text.
                    trim_failure_raw(&mut out[mark..], &self.raw[self.taken..], held.len());
                    self.flush_before_close(mark, out);
                    let end = self.raw.len().saturating_sub(held.len()).max(self.taken);
                    self.settle(mark, end, out);
                    self.release_unclaimed(end, out);
                    return Step::Ended {
                        held,
                        line_start,
                        rest: s.len() - after,
                    };
                }
            }
        }
        self.m.flush(out);
        Step::NeedMore
    }

    fn finish(&mut self, ctx: &mut Ctx<'_>, out: &mut Vec<Event>) -> Option<String> {
        if self.dead {
            return None;
        }
        let mark = out.len();
        match self.m.eos(&self.raw[self.taken..], ctx, out) {
            Eos::Closed(held) => {
                let back = held.as_deref().map_or(0, str::len);
                trim_failure_raw(&mut out[mark..], &self.raw[self.taken..], back);
                let end = self.raw.len().saturating_sub(back).max(self.taken);
                self.settle(mark, end, out);
                self.release_unclaimed(end, out);
                held
            }
            Eos::Reject => Some(std::mem::take(&mut self.raw)),
        }
    }
}

#[cfg(test)]
mod tests;
