//! [`TurnDecoder`]: one incremental decoder for a whole model reply.
//!
//! The decoder is a prose scanner with at most one active [`Body`]. While scanning prose it
//! walks the bytes with a table-driven fast skip: a byte is looked at closely only when it is a
//! newline, a byte some enabled format can trigger on anywhere (`trigger_bytes`), or the first
//! byte of a line that some format can trigger on at line start (`line_start_bytes`). At such a
//! candidate position every interested [`Format`] is asked to [`Format::detect`]; formats are
//! designed so that at most one says `Start` anywhere (a test checks this over all fixtures), so
//! the answer never depends on the order they are asked in.
//!
//! # What is held back, and why
//!
//! Prose is released as [`Event::Text`] as soon as it is scanned, with one exception: when a
//! format answers `NeedMore` at a candidate, the bytes from the candidate on are held, because
//! a later byte could still turn them into the start of an action (a verb line such as `RE` →
//! `READ`, a marker line `<<<<<<< SEA…`, an aider-style path line waiting for its fence, a
//! native tag `<tool_ca…`). Held text is capped at [`MAX_HELD`] bytes; past the cap it is
//! released in a [`FailureKind::TooLong`] failure. Once a body is active, what it holds is its
//! own business (bounded by the same cap in the builtin bodies).
//!
//! # Reasoning
//!
//! Text between reasoning markers is released as [`Event::Reasoning`] and never decoded. By
//! default a decoder knows the marker pairs of every family in [`KNOWN_REASONING_MARKERS`]
//! (`<think>`…`</think>`, `[THINK]`…`[/THINK]`, …); [`TurnDecoder::with_reasoning_markers`]
//! replaces them with one pair (a profile's) or turns reasoning off. A block ends only at the
//! close of the pair whose opener started it: another family's close inside is reasoning text.
//! An opener is recognised in prose only (inside a construct, such as a JSON string or a
//! SEARCH block, it is content), and formats never see bytes from an opener on: a candidate
//! that would need them stays prose, so the outcome does not depend on how the opener was
//! chunked. A possible prefix of a marker at the end of the input is held (fewer bytes than
//! the marker); a block left open at the end is reasoning to the end;
//! [`TurnDecoder::starts_in_reasoning`] starts the reply inside a block of the first pair.
//!
//! # Linear time
//!
//! Prose bytes are scanned once. Held candidate bytes are re-offered to `detect` when more
//! bytes arrive; detectors decide within a bounded prefix (a line or a tag), so that cost is
//! bounded per candidate. A body is fed each byte once; a body that rejects hands its bytes back
//! and they are re-read as prose minus their first character, so every byte is scanned a
//! bounded number of times whatever the chunking.

use std::sync::Arc;

use crate::action::ActionProposal;
use crate::event::{Event, FailureKind};
pub use crate::format::MAX_HELD;
use crate::format::{
    Body, Ctx, Detect, Format, FormatId, Position, Step, push_reasoning, push_text,
};
use crate::registry::Registry;

/// Bytes of what follows that held text is read again with (see `TurnDecoder::run`): larger than
/// any marker or candidate a format decides on, small enough that re-reading held text at
/// every construct stays linear in the input.
const JOIN_WINDOW: usize = 4096;

const SWAR_LO: u64 = 0x0101_0101_0101_0101;
const SWAR_HI: u64 = 0x8080_8080_8080_8080;

/// Which formats a [`TurnDecoder`] looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The text protocol and every in-band native format, in one stream.
    Auto,
    /// One format only. `Only(FormatId::Text)` also decodes native calls written in band (small
    /// models mix them) and marks those proposals with [`RepairKind::NativeInTextMode`].
    Only(FormatId),
}

/// The in-band formats a decoder in `mode` enables, text first.
pub fn formats_for(mode: Mode) -> Vec<Box<dyn Format>> {
    let text = || -> Box<dyn Format> { Box::new(crate::text::TextFormat) };
    match mode {
        Mode::Auto => std::iter::once(text())
            .chain(crate::native::formats())
            .collect(),
        // In text mode native calls are still decoded (small models mix formats); those
        // formats mark their proposals with `native_in_text_mode`.
        Mode::Only(FormatId::Text) => std::iter::once(text())
            .chain(crate::native::text_mode_formats())
            .collect(),
        Mode::Only(id) => crate::native::mode_formats(id),
    }
}

/// Where the scanner stands.
#[derive(Debug)]
enum State {
    /// Scanning prose. `held` is the text from a candidate position on, kept because a format
    /// answered `NeedMore` there; `line_start` says whether the next byte (the first of `held`
    /// when it is not empty) starts a line.
    Prose { held: String, line_start: bool },
    /// A format's body owns the stream. `last` is the last byte fed to it, to know whether
    /// prose resumes at a line start.
    Body {
        body: Box<dyn Body>,
        format: FormatId,
        last: u8,
    },
    /// Inside a reasoning block opened by pair `pair` of the decoder's markers, which only
    /// that pair's close ends. `partial` holds trailing bytes that could begin the close
    /// (fewer than its length); `line_start` is the prose line state to restore after it, so
    /// the block is invisible to the formats.
    Reasoning {
        partial: String,
        line_start: bool,
        pair: usize,
    },
    /// `finish` was called; further input is ignored.
    Finished,
}

/// One pair of markers around a model's reasoning (`<think>` and `</think>` by default). Text
/// between them becomes [`Event::Reasoning`] and is never decoded into actions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReasoningMarkers {
    pub open: String,
    pub close: String,
}

impl Default for ReasoningMarkers {
    fn default() -> ReasoningMarkers {
        ReasoningMarkers::new("<think>", "</think>")
    }
}

impl ReasoningMarkers {
    pub fn new(open: &str, close: &str) -> ReasoningMarkers {
        ReasoningMarkers {
            open: open.to_owned(),
            close: close.to_owned(),
        }
    }

    /// The pairs of [`KNOWN_REASONING_MARKERS`], `<think>` first: what a decoder recognises
    /// unless told otherwise.
    pub fn known() -> Vec<ReasoningMarkers> {
        KNOWN_REASONING_MARKERS
            .iter()
            .map(|&(open, close)| ReasoningMarkers::new(open, close))
            .collect()
    }
}

/// The reasoning markers of the model families bellows knows, `(open, close)`, each read in
/// a public parser or chat template (cited per row; `codec/README.md` lists the same). A
/// decoder recognises all of them unless a profile names its own pair. `<think>` comes first:
/// a reply that starts inside reasoning ([`TurnDecoder::starts_in_reasoning`]) is closed by
/// its close.
pub const KNOWN_REASONING_MARKERS: [(&str, &str); 6] = [
    // Qwen3, DeepSeek-R1 and V3.1, GLM-4.5, MiniMax-M2, Kimi K2, Nemotron v2, Granite, Hermes
    // 2 Pro and llama.cpp's content-only default: `try_parse_reasoning("<think>", "</think>")`
    // and `consume_reasoning_with_xml_tool_calls(…, "<think>", "</think>")` in llama.cpp's
    // `common/chat-parser.cpp` at 05e5139a; SGLang's `Qwen3Detector`
    // (`python/sglang/srt/parser/reasoning_parser.py`).
    ("<think>", "</think>"),
    // Seed-OSS: `common_chat_parse_seed_oss` in the same llama.cpp file; vLLM's
    // `vllm/reasoning/seedoss_reasoning_parser.py`.
    ("<seed:think>", "</seed:think>"),
    // Kimi's thinking models (Kimi-VL-Thinking, kimi-thinking): SGLang's `KimiDetector` in
    // `python/sglang/srt/parser/reasoning_parser.py` at 002e9bfc. (Kimi K2 writes `<think>`.)
    ("\u{25c1}think\u{25b7}", "\u{25c1}/think\u{25b7}"),
    // Magistral and Mistral's reasoning models: `common_chat_parse_magistral` in llama.cpp's
    // `common/chat-parser.cpp`; vLLM's `vllm/reasoning/mistral_reasoning_parser.py`
    // (mistral-common's `begin_think` / `end_think` tokens).
    ("[THINK]", "[/THINK]"),
    // Command R7B and Command A: `common_chat_parse_command_r7b` in llama.cpp's
    // `common/chat-parser.cpp`; vLLM's `vllm/reasoning/cohere_command_reasoning_parser.py`.
    ("<|START_THINKING|>", "<|END_THINKING|>"),
    // Apertus: `common_chat_parse_apertus` in llama.cpp's `common/chat-parser.cpp`; vLLM's
    // `vllm/reasoning/apertus_reasoning_parser.py` at 23232cfa.
    ("<|inner_prefix|>", "<|inner_suffix|>"),
];
// Apriel 1.5's `<thinking>`…`</thinking>` (`common_chat_parse_apriel_1_5` in the same
// llama.cpp file) is left to a profile: `<thinking>` is a tag prose and prompts use for other
// things, and `tests/fixtures/auto/reasoning_lookalikes` keeps it prose by default.

/// A set of bytes a scan stops at. With at most four of them the scan tests eight bytes at a
/// time: a lane equal to a stop byte turns zero under XOR, and the classic zero-byte test
/// finds the lowest such lane exactly.
#[derive(Debug, Clone)]
struct Stops {
    table: [bool; 256],
    /// Each stop byte broadcast to eight lanes; unused lanes repeat one, so the test is
    /// always four fixed comparisons. `None`: more than four stops (or none).
    swar: Option<[u64; 4]>,
}

impl Stops {
    fn new(is_stop: impl Fn(u8) -> bool) -> Stops {
        let mut table = [false; 256];
        for (b, t) in (0u8..=255).zip(table.iter_mut()) {
            *t = is_stop(b);
        }
        let stops: Vec<u8> = (0u8..=255).filter(|&b| table[usize::from(b)]).collect();
        let swar = match stops.as_slice() {
            [first, ..] if stops.len() <= 4 => {
                let mut lanes = [SWAR_LO * u64::from(*first); 4];
                for (lane, &b) in lanes.iter_mut().zip(&stops) {
                    *lane = SWAR_LO * u64::from(b);
                }
                Some(lanes)
            }
            _ => None,
        };
        Stops { table, swar }
    }

    /// The first index from `i` on whose byte is a stop, or `bytes.len()`.
    fn find(&self, bytes: &[u8], mut i: usize) -> usize {
        if let Some(stops) = self.swar {
            while let Some(word) = bytes.get(i..i + 8) {
                let Ok(word) = <[u8; 8]>::try_from(word) else {
                    break;
                };
                let x = u64::from_le_bytes(word);
                let mut hit = 0u64;
                for stop in stops {
                    let v = x ^ stop;
                    hit |= v.wrapping_sub(SWAR_LO) & !v & SWAR_HI;
                }
                if hit != 0 {
                    return i + (hit.trailing_zeros() / 8) as usize;
                }
                i += 8;
            }
        }
        while i < bytes.len() && !self.table[usize::from(bytes[i])] {
            i += 1;
        }
        i.min(bytes.len())
    }
}

/// What the reasoning openers make of the text at one position.
enum Opener {
    /// No opener starts here.
    No,
    /// The text is a proper prefix of an opener (before the end of stream): wait for more.
    Partial,
    /// Pair `k`'s opener starts here.
    Full(usize),
}

/// The incremental decoder for one model reply.
///
/// Feed text deltas with [`TurnDecoder::feed`] (or the allocation-free
/// [`TurnDecoder::feed_into`]) and close with [`TurnDecoder::finish`]. Events are emitted as
/// soon as they are certain and never retracted; the concatenation of events is the same for
/// every way of chunking the same reply (compare with [`trace`]).
#[derive(Debug)]
pub struct TurnDecoder {
    registry: Arc<Registry>,
    mode: Mode,
    formats: Vec<Box<dyn Format>>,
    /// Bit `k` is set when format `k` may trigger on this byte anywhere.
    anywhere: [u32; 256],
    /// Bit `k` is set when format `k` may trigger on this byte at the start of a line.
    at_line_start: [u32; 256],
    /// The bytes the fast skip stops at: a newline or an anywhere-trigger.
    prose_stops: Stops,
    state: State,
    next_index: usize,
    /// [`Ctx::answered`], kept between bodies.
    answered: bool,
    /// [`Ctx::attempted`], kept between bodies.
    attempted: bool,
    last_edit_path: Option<String>,
    /// A buffer kept between feeds so holding a candidate does not allocate each time.
    spare: String,
    /// Reasoning marker pairs recognised in prose; none turns reasoning off.
    reasoning: Vec<ReasoningMarkers>,
    /// The first bytes of the reasoning openers, where a search for one stops.
    opener_stops: Stops,
    /// The scanner has passed prose other than blanks, or a construct started: no candidate
    /// is at the reply's start any more ([`Position::reply_start`]).
    started: bool,
}

/// What one step of [`TurnDecoder::run`] did with the piece it was given.
enum Outcome {
    /// The piece is read up to this offset.
    Advanced(usize),
    /// The piece is read up to `pos`, and `text` must be read before the rest of it.
    Pushback { pos: usize, text: String },
}

impl TurnDecoder {
    /// A decoder for one reply.
    pub fn new(mode: Mode, registry: Arc<Registry>) -> TurnDecoder {
        let mut formats = formats_for(mode);
        // The text protocol decodes only to builtin actions: without builtins it is not enabled.
        if !registry.has_builtins() {
            formats.retain(|f| f.id() != FormatId::Text);
        }
        let mut anywhere = [0u32; 256];
        let mut at_line_start = [0u32; 256];
        for (k, f) in formats.iter().enumerate().take(32) {
            let bit = 1u32 << k;
            // Triggers are ASCII by contract, so a candidate is always on a char boundary;
            // a non-ASCII byte here would be a format bug and is ignored.
            for &b in f.trigger_bytes().iter().filter(|b| b.is_ascii()) {
                anywhere[usize::from(b)] |= bit;
            }
            for &b in f.line_start_bytes().iter().filter(|b| b.is_ascii()) {
                if f.line_start_applies(b, &registry) {
                    at_line_start[usize::from(b)] |= bit;
                }
            }
        }
        let prose_stops = Stops::new(|b| b == b'\n' || anywhere[usize::from(b)] != 0);
        let mut d = TurnDecoder {
            registry,
            mode,
            formats,
            anywhere,
            at_line_start,
            prose_stops,
            state: State::Prose {
                held: String::new(),
                line_start: true,
            },
            next_index: 0,
            answered: false,
            attempted: false,
            last_edit_path: None,
            spare: String::new(),
            reasoning: Vec::new(),
            opener_stops: Stops::new(|_| false),
            started: false,
        };
        d.set_reasoning(ReasoningMarkers::known());
        d
    }

    /// Sets one pair of reasoning markers, as a model profile names them: it replaces the
    /// known families' pairs the decoder starts with. An empty `open` or `close` turns
    /// reasoning off: every byte is then prose.
    pub fn with_reasoning_markers(self, open: &str, close: &str) -> TurnDecoder {
        self.with_reasoning_marker_set([ReasoningMarkers::new(open, close)])
    }

    /// Sets the reasoning marker pairs the decoder recognises (by default
    /// [`ReasoningMarkers::known`]). A pair with an empty marker is left out; with none left,
    /// reasoning is off. Where two openers both match, the longer one opens the block.
    pub fn with_reasoning_marker_set(
        mut self,
        pairs: impl IntoIterator<Item = ReasoningMarkers>,
    ) -> TurnDecoder {
        self.set_reasoning(pairs.into_iter().collect());
        self
    }

    fn set_reasoning(&mut self, mut pairs: Vec<ReasoningMarkers>) {
        pairs.retain(|m| !m.open.is_empty() && !m.close.is_empty());
        let firsts: Vec<u8> = pairs.iter().filter_map(|m| m.open.bytes().next()).collect();
        self.opener_stops = Stops::new(|b| firsts.contains(&b));
        self.reasoning = pairs;
        // A reply set to start inside reasoning stays inside, in the first pair's block.
        if let State::Reasoning { pair, .. } = &mut self.state {
            if self.reasoning.is_empty() {
                self.state = State::Prose {
                    held: String::new(),
                    line_start: true,
                };
            } else {
                *pair = 0;
            }
        }
    }

    /// Whether the reply starts inside a reasoning block, as when the chat template put the
    /// opening marker in the prompt: the block is the first pair's (`<think>` by default), so
    /// only its close ends it. Call before the first `feed`; no effect with reasoning off.
    pub fn starts_in_reasoning(mut self, yes: bool) -> TurnDecoder {
        let untouched = matches!(&self.state, State::Prose { held, .. } if held.is_empty())
            || matches!(&self.state, State::Reasoning { partial, .. } if partial.is_empty());
        if untouched && !self.reasoning.is_empty() {
            self.state = if yes {
                State::Reasoning {
                    partial: String::new(),
                    line_start: true,
                    pair: 0,
                }
            } else {
                State::Prose {
                    held: String::new(),
                    line_start: true,
                }
            };
        }
        self
    }

    /// The first reasoning marker pair in effect (`<think>` by default), if reasoning is on.
    pub fn reasoning_markers(&self) -> Option<&ReasoningMarkers> {
        self.reasoning.first()
    }

    /// Every reasoning marker pair in effect; empty when reasoning is off.
    pub fn reasoning_marker_set(&self) -> &[ReasoningMarkers] {
        &self.reasoning
    }

    /// The mode this decoder was built for.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Feeds one text delta; returns the events it made certain.
    pub fn feed(&mut self, chunk: &str) -> Vec<Event> {
        let mut out = Vec::new();
        self.feed_into(chunk, &mut out);
        out
    }

    /// Feeds one text delta, appending the events it made certain to `out`. Adjacent text is
    /// merged into the last `Text` event of `out`.
    pub fn feed_into(&mut self, chunk: &str, out: &mut Vec<Event>) {
        if matches!(self.state, State::Finished) || chunk.is_empty() {
            return;
        }
        match &mut self.state {
            State::Prose { held, .. } if !held.is_empty() => {
                let mut joined = std::mem::take(held);
                joined.push_str(chunk);
                self.run(&joined, false, out);
                // Keep the buffer: the next candidate held reuses its capacity.
                self.spare = joined;
            }
            _ => self.run(chunk, false, out),
        }
    }

    /// Ends the reply; returns the last events (a truncated construct is closed or failed).
    pub fn finish(&mut self) -> Vec<Event> {
        let mut out = Vec::new();
        self.finish_into(&mut out);
        out
    }

    /// Ends the reply, appending the last events to `out`. Calling it twice is harmless.
    pub fn finish_into(&mut self, out: &mut Vec<Event>) {
        let mut last_back = usize::MAX;
        loop {
            if let State::Prose { held, .. } = &mut self.state {
                let held = std::mem::take(held);
                self.run(&held, true, out);
            }
            let state = std::mem::replace(
                &mut self.state,
                State::Prose {
                    held: String::new(),
                    line_start: false,
                },
            );
            match state {
                State::Body {
                    mut body, format, ..
                } => {
                    let mut ctx = Ctx {
                        registry: &self.registry,
                        next_index: self.next_index,
                        last_edit_path: self.last_edit_path.take(),
                        auto: self.mode == Mode::Auto,
                        answered: self.answered,
                        attempted: self.attempted,
                    };
                    let before = out.len();
                    let back = body.finish(&mut ctx, out);
                    self.next_index = ctx.next_index;
                    self.answered = ctx.answered;
                    self.attempted = ctx.attempted || any_failure(&out[before..]);
                    self.last_edit_path = ctx.last_edit_path.take();
                    if let Some(back) = back {
                        // A body that closed its construct hands back look-ahead past it, which
                        // never starts that construct again: it is scanned from its first byte
                        // (text bodies hand back whole lines; native ones, mid-line text). A
                        // body that emitted nothing rejected: its text starts with its own
                        // trigger, so the first character is skipped, as for `Step::Reject`.
                        // Either way each round reads less than the last, so this ends.
                        let rejected = out.len() == before;
                        let line_start = format == FormatId::Text;
                        self.state = State::Prose {
                            held: String::new(),
                            line_start,
                        };
                        let from = if rejected || back.len() >= last_back {
                            self.skip_first_char(&back, out)
                        } else {
                            0
                        };
                        last_back = back.len();
                        self.run(&back[from..], true, out);
                    }
                    // A body started while re-reading needs finishing too: go round again.
                    if matches!(self.state, State::Body { .. } | State::Reasoning { .. }) {
                        continue;
                    }
                    if matches!(&self.state, State::Prose { held, .. } if !held.is_empty()) {
                        continue;
                    }
                    break;
                }
                State::Prose { held, .. } => {
                    push_text(out, &held);
                    break;
                }
                // An unclosed reasoning block is reasoning to the end.
                State::Reasoning { partial, .. } => {
                    push_reasoning(out, &partial);
                    break;
                }
                State::Finished => break,
            }
        }
        self.state = State::Finished;
    }

    /// Emits the first character of `text` as prose (so the construct it started cannot be
    /// detected again) and returns its length; sets the scanner's line state for what follows.
    fn skip_first_char(&mut self, text: &str, out: &mut Vec<Event>) -> usize {
        let n = text.chars().next().map_or(0, char::len_utf8);
        push_text(out, &text[..n]);
        self.state = State::Prose {
            held: String::new(),
            line_start: text.as_bytes().first() == Some(&b'\n'),
        };
        n
    }

    /// Reads `input` (and any text pushed back while reading it) to the end.
    ///
    /// Text held at a candidate is read again joined with at most [`JOIN_WINDOW`] bytes of
    /// what follows.
    fn run(&mut self, input: &str, eos: bool, out: &mut Vec<Event>) {
        // Pushed-back text is read before the rest of whatever was being read when it came
        // back; the stack keeps that order without copying the input. Each piece also keeps
        // where its next reasoning opener was found, so prose interrupted by constructs is not
        // searched again from every construct's end (that would be quadratic in one feed).
        let mut stack: Vec<(String, usize, Option<usize>)> = Vec::new();
        let mut pos = 0usize;
        let mut input_cut: Option<usize> = None;
        loop {
            let depth = stack.len();
            let (piece, p, mut cut) = match stack.last() {
                Some((t, p, c)) => (t.as_str(), *p, *c),
                None => (input, pos, input_cut),
            };
            if p >= piece.len() {
                if stack.pop().is_none() {
                    break;
                }
                continue;
            }
            // Text held at a candidate is joined with what follows so detectors see it whole.
            let held = match &mut self.state {
                State::Prose { held, .. } if !held.is_empty() => Some(std::mem::take(held)),
                _ => None,
            };
            if let Some(mut joined) = held {
                // Only a window of what follows is joined: the rest is read as it comes, as if
                // the input had been cut there (which decodes the same, the codec's contract).
                // Joining all of it copied the rest of the input at every construct that hands
                // text back (Llama 3's `<|eom_id|>` after each call): quadratic in one feed.
                let mut end = (p + JOIN_WINDOW).min(piece.len());
                while !piece.is_char_boundary(end) {
                    end += 1;
                }
                joined.push_str(&piece[p..end]);
                match stack.last_mut() {
                    Some(top) => top.1 = end,
                    None => pos = end,
                }
                stack.push((joined, 0, None));
                continue;
            }
            let last_piece = if depth == 0 {
                true
            } else {
                pos >= input.len() && stack[..depth - 1].iter().all(|(t, q, _)| *q >= t.len())
            };
            let outcome = self.step(piece, p, eos && last_piece, &mut cut, out);
            match stack.last_mut() {
                Some(top) => top.2 = cut,
                None => input_cut = cut,
            }
            match outcome {
                Outcome::Advanced(q) => match stack.last_mut() {
                    Some(top) => top.1 = q,
                    None => pos = q,
                },
                Outcome::Pushback { pos: q, text } => {
                    match stack.last_mut() {
                        Some(top) => top.1 = q,
                        None => pos = q,
                    }
                    stack.push((text, 0, None));
                }
            }
        }
    }

    /// Reads from `s[p..]` until the piece ends or the scanner's state changes.
    fn step(
        &mut self,
        s: &str,
        p: usize,
        eos: bool,
        cut: &mut Option<usize>,
        out: &mut Vec<Event>,
    ) -> Outcome {
        match &mut self.state {
            State::Prose { .. } => self.scan(s, p, eos, cut, out),
            State::Reasoning { .. } => self.reason(s, p, out),
            State::Body { body, last, .. } => {
                let mut ctx = Ctx {
                    registry: &self.registry,
                    next_index: self.next_index,
                    last_edit_path: self.last_edit_path.take(),
                    auto: self.mode == Mode::Auto,
                    answered: self.answered,
                    attempted: self.attempted,
                };
                let before = out.len();
                let step = body.feed(&s[p..], &mut ctx, out);
                self.next_index = ctx.next_index;
                self.answered = ctx.answered;
                self.attempted = ctx.attempted || any_failure(&out[before..]);
                self.last_edit_path = ctx.last_edit_path.take();
                let prev_last = *last;
                match step {
                    Step::NeedMore => {
                        *last = s.as_bytes().last().copied().unwrap_or(prev_last);
                        Outcome::Advanced(s.len())
                    }
                    Step::Done { consumed } => {
                        let end = (p + consumed).min(s.len());
                        let line_start = if end > p {
                            s.as_bytes()[end - 1] == b'\n'
                        } else {
                            prev_last == b'\n'
                        };
                        self.state = State::Prose {
                            held: String::new(),
                            line_start,
                        };
                        Outcome::Advanced(end)
                    }
                    Step::Ended {
                        held,
                        line_start,
                        rest,
                    } => {
                        self.state = State::Prose {
                            held: String::new(),
                            line_start,
                        };
                        let q = s.len().saturating_sub(rest).max(p);
                        if held.is_empty() {
                            Outcome::Advanced(q)
                        } else {
                            Outcome::Pushback { pos: q, text: held }
                        }
                    }
                    Step::Reject { held, rest } => {
                        let q = s.len().saturating_sub(rest).max(p);
                        if held.is_empty() {
                            // The body looked at nothing: skip the trigger in the input itself.
                            let n = self.skip_first_char(&s[q..], out);
                            Outcome::Advanced(q + n)
                        } else {
                            let n = self.skip_first_char(&held, out);
                            Outcome::Pushback {
                                pos: q,
                                text: held[n..].to_owned(),
                            }
                        }
                    }
                }
            }
            State::Finished => Outcome::Advanced(s.len()),
        }
    }

    /// Scans prose from `s[p..]`: releases text, holds at a `NeedMore`, hands over to a body
    /// at a `Start`.
    fn scan(
        &mut self,
        s: &str,
        p: usize,
        eos: bool,
        cut_cache: &mut Option<usize>,
        out: &mut Vec<Event>,
    ) -> Outcome {
        let State::Prose { line_start, .. } = &self.state else {
            return Outcome::Advanced(p);
        };
        let mut ls = *line_start;
        let bytes = s.as_bytes();
        let mut i = p;
        let mut text_from = p;
        // The first byte of this piece that is not a blank, while the reply has not started:
        // a candidate there is at the reply's start. Found once per call, so checking a
        // candidate costs nothing.
        let lead = if self.started {
            None
        } else {
            Some(
                bytes[p..]
                    .iter()
                    .position(|b| !b.is_ascii_whitespace())
                    .map_or(bytes.len(), |k| p + k),
            )
        };
        // Where a reasoning opener (or, before the end of stream, a prefix of one at the end
        // of the input) starts: formats never see bytes from there on, so whether a candidate
        // before it starts a construct does not depend on how the opener was chunked.
        // A cut found earlier in this piece stays valid while it is ahead: nothing between
        // the position it was searched from and it is an opener.
        let cut = match *cut_cache {
            Some(c) if c >= p => c,
            _ => {
                let c = self.reasoning_cut(s, p, eos);
                *cut_cache = Some(c);
                c
            }
        };
        while i < bytes.len() {
            if i == cut {
                push_text(out, &s[text_from..i]);
                self.started |= lead.is_some_and(|l| l < i);
                if self.reasoning.is_empty() {
                    break;
                }
                if let Opener::Full(k) = self.opener_at(&s[i..], eos) {
                    let len = self.reasoning.get(k).map_or(0, |m| m.open.len());
                    self.state = State::Reasoning {
                        partial: String::new(),
                        line_start: ls,
                        pair: k,
                    };
                    return Outcome::Advanced(i + len);
                }
                // A prefix of the opener at the end of the input: hold it.
                let mut held = std::mem::take(&mut self.spare);
                held.clear();
                held.push_str(&s[i..]);
                self.state = State::Prose {
                    held,
                    line_start: ls,
                };
                return Outcome::Advanced(s.len());
            }
            let b = usize::from(bytes[i]);
            let mask = self.anywhere[b] | if ls { self.at_line_start[b] } else { 0 };
            if mask != 0 {
                let at = Position {
                    line_start: ls,
                    eos: eos && cut == s.len(),
                    reply_start: lead == Some(i),
                };
                let found = match self.detect(&s[i..cut], mask, at) {
                    // A candidate that needs bytes past a complete opener cannot be one: the
                    // reasoning block interrupts it, and it stays prose.
                    Found::NeedMore
                        if matches!(
                            s.get(cut..).map(|rest| self.opener_at(rest, eos)),
                            Some(Opener::Full(_))
                        ) =>
                    {
                        Found::No
                    }
                    f => f,
                };
                match found {
                    Found::No => {}
                    Found::NeedMore => {
                        push_text(out, &s[text_from..i]);
                        self.started |= lead.is_some_and(|l| l < i);
                        if s.len() - i > MAX_HELD {
                            // Give up on this candidate: release what was held, carry on after.
                            out.push(Event::Failure {
                                index: None,
                                kind: FailureKind::TooLong,
                                raw: s[i..].to_owned(),
                            });
                            self.attempted = true;
                            self.state = State::Prose {
                                held: String::new(),
                                line_start: bytes.last() == Some(&b'\n'),
                            };
                        } else {
                            let mut held = std::mem::take(&mut self.spare);
                            held.clear();
                            held.push_str(&s[i..]);
                            self.state = State::Prose {
                                held,
                                line_start: ls,
                            };
                        }
                        return Outcome::Advanced(s.len());
                    }
                    Found::Start(body, format) => {
                        push_text(out, &s[text_from..i]);
                        self.started = true;
                        self.state = State::Body {
                            body,
                            format,
                            last: 0,
                        };
                        return Outcome::Advanced(i);
                    }
                }
            }
            ls = bytes[i] == b'\n';
            i += 1;
            // The fast skip: nothing inside a line needs a closer look unless it is a
            // newline or an anywhere-trigger. A line's first byte is always looked at.
            if !ls {
                i = self.skip_prose(bytes, i).min(cut);
            }
        }
        // Mark where the text ends so it is emitted even if nothing else happens.
        text_from = text_from.min(bytes.len());
        push_text(out, &s[text_from..]);
        self.started |= lead.is_some_and(|l| l < bytes.len());
        self.state = State::Prose {
            held: String::new(),
            line_start: ls,
        };
        Outcome::Advanced(s.len())
    }

    /// The first position from `p` on where a reasoning opener starts in `s`, or, unless at
    /// end of stream, where a proper prefix of one ends the input; `s.len()` if neither. The
    /// search stops only at the openers' first bytes (eight bytes at a time), so prose is
    /// not slowed byte by byte.
    fn reasoning_cut(&self, s: &str, p: usize, eos: bool) -> usize {
        if self.reasoning.is_empty() {
            return s.len();
        }
        let bytes = s.as_bytes();
        let mut from = p;
        loop {
            let i = self.opener_stops.find(bytes, from);
            // An opener's first byte is ASCII or a UTF-8 lead byte, so `i` is a char boundary.
            let Some(rest) = s.get(i..).filter(|r| !r.is_empty()) else {
                return s.len();
            };
            if !matches!(self.opener_at(rest, eos), Opener::No) {
                return i;
            }
            from = i + 1;
        }
    }

    /// Which opener, if any, starts `rest`. A complete opener waits while `rest` could still
    /// grow into a longer one (only before the end of stream, and only for a set whose
    /// openers prefix each other), so the choice never depends on the chunking.
    fn opener_at(&self, rest: &str, eos: bool) -> Opener {
        let mut full: Option<(usize, usize)> = None;
        let mut partial = false;
        for (k, m) in self.reasoning.iter().enumerate() {
            let open = m.open.as_str();
            if rest.starts_with(open) {
                if full.is_none_or(|(_, len)| open.len() > len) {
                    full = Some((k, open.len()));
                }
            } else if !eos && rest.len() < open.len() && open.starts_with(rest) {
                partial = true;
            }
        }
        match full {
            _ if partial => Opener::Partial,
            Some((k, _)) => Opener::Full(k),
            None => Opener::No,
        }
    }

    /// Reads reasoning text from `s[p..]`: releases it up to the close of the block's pair
    /// (holding a possible prefix of it at the end), then returns to prose.
    fn reason(&mut self, s: &str, p: usize, out: &mut Vec<Event>) -> Outcome {
        let State::Reasoning {
            partial,
            line_start,
            pair,
        } = &mut self.state
        else {
            return Outcome::Advanced(p);
        };
        let Some(m) = self.reasoning.get(*pair) else {
            // No such pair (reasoning was turned off): what follows is prose.
            let ls = *line_start;
            self.state = State::Prose {
                held: String::new(),
                line_start: ls,
            };
            return Outcome::Advanced(p);
        };
        let close = m.close.as_str();
        // The held prefix is shorter than the marker, so joining it costs a bounded copy.
        let mut joined = std::mem::take(partial);
        let from_held = joined.len();
        joined.push_str(&s[p..]);
        if let Some(k) = joined.find(close) {
            push_reasoning(out, &joined[..k]);
            let end = k + close.len();
            let ls = *line_start;
            self.state = State::Prose {
                held: String::new(),
                line_start: ls,
            };
            // Bytes of the marker that were held came before `s[p..]`.
            return Outcome::Advanced(p + end - from_held);
        }
        // Hold the longest suffix that could begin the marker.
        let keep = (1..close.len().min(joined.len() + 1))
            .rev()
            .find(|&n| {
                joined.is_char_boundary(joined.len() - n)
                    && close.starts_with(&joined[joined.len() - n..])
            })
            .unwrap_or(0);
        let release = joined.len() - keep;
        push_reasoning(out, &joined[..release]);
        *partial = joined[release..].to_owned();
        Outcome::Advanced(s.len())
    }

    /// The first index from `i` on whose byte is a newline or an anywhere-trigger (or the
    /// end).
    fn skip_prose(&self, bytes: &[u8], i: usize) -> usize {
        self.prose_stops.find(bytes, i)
    }

    /// Asks the formats whose bit is set in `mask` about `s`.
    fn detect(&self, s: &str, mask: u32, at: Position) -> Found {
        let ctx = Ctx {
            registry: &self.registry,
            next_index: self.next_index,
            last_edit_path: None,
            auto: self.mode == Mode::Auto,
            answered: self.answered,
            attempted: self.attempted,
        };
        let mut need_more = false;
        for (k, f) in self.formats.iter().enumerate().take(32) {
            if mask & (1 << k) == 0 {
                continue;
            }
            match f.detect(s, at, &ctx) {
                Detect::No => {}
                Detect::NeedMore => need_more = !at.eos,
                // Triggers are disjoint (tested), so the first `Start` is the only one.
                Detect::Start(body) => return Found::Start(body, f.id()),
            }
        }
        if need_more {
            Found::NeedMore
        } else {
            Found::No
        }
    }
}

/// The combined answer of all formats at one candidate.
enum Found {
    No,
    NeedMore,
    Start(Box<dyn Body>, FormatId),
}

/// Whether `events` hold a failure (which makes any later attempt at a call not the reply's
/// only one: [`Ctx::attempted`]).
fn any_failure(events: &[Event]) -> bool {
    events.iter().any(|e| matches!(e, Event::Failure { .. }))
}

/// Renders events as a stable, line-per-event text trace for snapshot tests and tools.
///
/// Adjacent `Text` events are coalesced, and so are adjacent `ArgsDelta` events of the same
/// index, so the trace of a reply does not depend on how it was chunked. Lines:
///
/// ```text
/// text "prose, JSON-escaped"
/// reasoning "text between the reasoning markers, JSON-escaped"
/// start #0 read
/// args #0 "{\"path\":\"a.py\"}"
/// proposal #0 text read {"path":"a.py"} repairs=crlf,fenced_block
/// failure #- truncated_block "raw text, JSON-escaped"
/// ```
pub fn trace(events: &[Event]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < events.len() {
        match &events[i] {
            Event::Text(_) => {
                let mut t = String::new();
                while let Some(Event::Text(s)) = events.get(i) {
                    t.push_str(s);
                    i += 1;
                }
                out.push_str("text ");
                out.push_str(&quote(&t));
                out.push('\n');
                continue;
            }
            Event::Reasoning(_) => {
                let mut t = String::new();
                while let Some(Event::Reasoning(s)) = events.get(i) {
                    t.push_str(s);
                    i += 1;
                }
                out.push_str("reasoning ");
                out.push_str(&quote(&t));
                out.push('\n');
                continue;
            }
            Event::ArgsDelta { index, .. } => {
                let index = *index;
                let mut t = String::new();
                while let Some(Event::ArgsDelta { index: j, fragment }) = events.get(i) {
                    if *j != index {
                        break;
                    }
                    t.push_str(fragment);
                    i += 1;
                }
                out.push_str(&format!("args #{index} {}\n", quote(&t)));
                continue;
            }
            Event::ToolCallStart { index, name } => {
                out.push_str(&format!("start #{index} {name}\n"));
            }
            Event::Proposal { index, proposal } => {
                out.push_str(&format!("proposal #{index} {}\n", proposal_line(proposal)));
            }
            Event::Failure { index, kind, raw } => {
                let index = index.map_or_else(|| "-".to_owned(), |i| i.to_string());
                out.push_str(&format!("failure #{index} {kind} {}\n", quote(raw)));
            }
        }
        i += 1;
    }
    out
}

fn quote(s: &str) -> String {
    serde_json::Value::String(s.to_owned()).to_string()
}

/// `format name {arguments} [repairs=a,b]`.
fn proposal_line(p: &ActionProposal) -> String {
    let mut line = format!("{} {} {}", p.format, p.action.name(), p.action.arguments());
    if !p.repairs.is_empty() {
        line.push_str(" repairs=");
        let names: Vec<&str> = p.repairs.iter().map(|r| r.as_str()).collect();
        line.push_str(&names.join(","));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The eight-bytes-at-a-time skip stops exactly where the byte table would.
        #[test]
        fn fast_skip_matches_the_byte_table(bytes in proptest::collection::vec(any::<u8>(), 0..64), from in 0usize..64) {
            let d = TurnDecoder::new(Mode::Auto, Arc::new(Registry::builtin()));
            let from = from.min(bytes.len());
            let mut naive = from;
            while naive < bytes.len() && !d.prose_stops.table[usize::from(bytes[naive])] {
                naive += 1;
            }
            prop_assert_eq!(d.skip_prose(&bytes, from), naive);
        }

        /// The same for any set of stop bytes, with few (eight at a time) or many.
        #[test]
        fn stop_search_matches_the_byte_table(
            stops in proptest::collection::vec(any::<u8>(), 0..7),
            bytes in proptest::collection::vec(any::<u8>(), 0..64),
            from in 0usize..64,
        ) {
            let set = Stops::new(|b| stops.contains(&b));
            let from = from.min(bytes.len());
            let naive = (from..bytes.len())
                .find(|&k| stops.contains(&bytes[k]))
                .unwrap_or(bytes.len());
            prop_assert_eq!(set.find(&bytes, from), naive);
        }
    }

    #[test]
    fn feeding_after_finish_is_ignored() {
        let mut d = TurnDecoder::new(Mode::Auto, Arc::new(Registry::builtin()));
        assert_eq!(d.feed("hi there"), vec![Event::Text("hi there".into())]);
        assert!(d.finish().is_empty());
        assert!(d.feed("READ a.py\n").is_empty());
        assert!(d.finish().is_empty());
    }

    fn decode_with(d: TurnDecoder, parts: &[&str]) -> String {
        let mut d = d;
        let mut events = Vec::new();
        for p in parts {
            d.feed_into(p, &mut events);
        }
        d.finish_into(&mut events);
        trace(&events)
    }

    fn builtin() -> TurnDecoder {
        TurnDecoder::new(Mode::Auto, Arc::new(Registry::builtin()))
    }

    /// Every split of `input` in two, and byte by byte, gives the whole trace.
    fn same_for_every_chunking(make: impl Fn() -> TurnDecoder, input: &str) -> String {
        let whole = decode_with(make(), &[input]);
        let chars: Vec<String> = input.chars().map(String::from).collect();
        let chars: Vec<&str> = chars.iter().map(String::as_str).collect();
        assert_eq!(
            decode_with(make(), &chars),
            whole,
            "byte by byte: {input:?}"
        );
        for (k, _) in input.char_indices().skip(1) {
            assert_eq!(
                decode_with(make(), &[&input[..k], &input[k..]]),
                whole,
                "split at {k}: {input:?}"
            );
        }
        whole
    }

    #[test]
    fn reasoning_is_never_decoded_into_actions() {
        let input = "<think>\nREAD a.py\n<tool_call>{\"name\": \"read\", \"arguments\": {\"path\": \"b\"}}</tool_call>\n</think>\nREAD c.py\n";
        assert_eq!(
            same_for_every_chunking(builtin, input),
            "reasoning \"\\nREAD a.py\\n<tool_call>{\\\"name\\\": \\\"read\\\", \\\"arguments\\\": {\\\"path\\\": \\\"b\\\"}}</tool_call>\\n\"\ntext \"\\n\"\nproposal #0 text read {\"path\":\"c.py\"}\n"
        );
    }

    /// The reasoning markers of the families whose calls were added as table rows, set as a
    /// profile sets them: a call of the family written inside is reasoning, the same call after
    /// the block is decoded. (`<think>`, the default, covers GLM-4.5, MiniMax-M2, Olmo 3 and
    /// LFM2; Seed-OSS and MiniCPM3 have their own.)
    #[test]
    fn family_reasoning_markers_hide_their_calls() {
        let cases = [
            (
                "<seed:think>",
                "</seed:think>",
                "<seed:tool_call><function=read><parameter=path>a</parameter></function></seed:tool_call>",
            ),
            (
                "<|thought_start|>",
                "<|thought_end|>",
                "<|tool_call_start|>\n```python\nread(path=\"a\")\n```\n<|tool_call_end|>",
            ),
            (
                "<think>",
                "</think>",
                "<minimax:tool_call><invoke name=\"read\"><parameter name=\"path\">a</parameter></invoke></minimax:tool_call>",
            ),
            (
                "<think>",
                "</think>",
                "<tool_call>read\n<arg_key>path</arg_key>\n<arg_value>a</arg_value>\n</tool_call>",
            ),
        ];
        for (open, close, call) in cases {
            let make = || builtin().with_reasoning_markers(open, close);
            let input = format!("{open}{call}{close}\n{call}");
            let t = same_for_every_chunking(make, &input);
            assert_eq!(t.matches("proposal #").count(), 1, "{t}");
            assert!(t.starts_with("reasoning "), "{t}");
            assert!(
                t.contains("proposal #0 qwen3_xml read")
                    || t.contains("proposal #0 marker_list read"),
                "{t}"
            );
        }
    }

    #[test]
    fn an_unclosed_reasoning_block_is_reasoning_to_the_end() {
        assert_eq!(
            same_for_every_chunking(builtin, "ok <think>READ a.py\n</thi"),
            "text \"ok \"\nreasoning \"READ a.py\\n</thi\"\n"
        );
    }

    #[test]
    fn a_reply_can_start_inside_reasoning() {
        let make = || builtin().starts_in_reasoning(true);
        assert_eq!(
            same_for_every_chunking(make, "plan: READ x\n</think>READ a.py\n"),
            "reasoning \"plan: READ x\\n\"\nproposal #0 text read {\"path\":\"a.py\"}\n"
        );
    }

    #[test]
    fn reasoning_markers_are_configurable_and_can_be_turned_off() {
        let custom = || builtin().with_reasoning_markers("[R]", "[/R]");
        assert_eq!(
            same_for_every_chunking(custom, "[R]READ a.py\n[/R]<think>x</think>"),
            "reasoning \"READ a.py\\n\"\ntext \"<think>x</think>\"\n"
        );
        let off = || builtin().with_reasoning_markers("", "");
        assert_eq!(
            same_for_every_chunking(off, "<think>x</think>"),
            "text \"<think>x</think>\"\n"
        );
        assert!(off().reasoning_markers().is_none());
    }

    /// A candidate that would need bytes past a reasoning opener is prose: the opener
    /// interrupts it, whether it arrived whole or split.
    #[test]
    fn an_opener_interrupts_a_pending_candidate() {
        let t = same_for_every_chunking(builtin, "READ a.py<think>x</think>\n");
        assert!(!t.contains("proposal"), "{t}");
        assert!(t.contains("reasoning \"x\""), "{t}");
    }

    /// Inside a construct the opener is content: a JSON string may hold `<think>`.
    #[test]
    fn an_opener_inside_a_construct_is_content() {
        let t = same_for_every_chunking(
            builtin,
            "<tool_call>{\"name\": \"read\", \"arguments\": {\"path\": \"<think>.md\"}}</tool_call>",
        );
        assert!(
            t.contains("proposal #0 hermes read {\"path\":\"<think>.md\"}"),
            "{t}"
        );
        assert!(!t.contains("reasoning"), "{t}");
    }

    #[test]
    fn trace_coalesces_text_and_argument_fragments() {
        let events = vec![
            Event::Text("a".into()),
            Event::Text("b".into()),
            Event::ToolCallStart {
                index: 0,
                name: "read".into(),
            },
            Event::ArgsDelta {
                index: 0,
                fragment: "{\"pa".into(),
            },
            Event::ArgsDelta {
                index: 0,
                fragment: "th\":\"x\"}".into(),
            },
            Event::Failure {
                index: Some(0),
                kind: FailureKind::BadArguments,
                raw: "r".into(),
            },
        ];
        assert_eq!(
            trace(&events),
            "text \"ab\"\nstart #0 read\nargs #0 \"{\\\"path\\\":\\\"x\\\"}\"\nfailure #0 bad_arguments \"r\"\n"
        );
    }
}
