//! Trust at the boundary: for any input and any registry (builtin, client-only with generated
//! client tools, mixed), the decoder
//!
//! * (a) loses and duplicates nothing: the emitted `Text`, the `Failure` raws, the
//!   `Reasoning` text with its markers and the raw spans of proposals, in event order, are the
//!   input byte for byte;
//! * (b) closes each call once: no `ToolCallStart`/`ArgsDelta` for an index after its
//!   `Failure`/`Proposal`, and the `ArgsDelta`s of a proposal concatenate to its
//!   `arguments_json()`;
//! * (c) gives the same trace for the whole input, byte by byte, and any chunking.
//!
//! The decoder is checked with one reasoning marker pair, with reasoning off, and with the
//! known families' pairs it starts with (`KNOWN_REASONING_MARKERS`, which the gateway keeps
//! unless a profile names a pair); generated replies mix markers of every family (whole, cut
//! short, mismatched, unclosed, stray) with the calls and edits.
//!
//! Proposals carry no raw text, so (a) is checked as an alignment: every `Text` and
//! `Failure.raw` must sit in the input right where the previous piece ended, except that
//! one or more proposals in between own a non-empty span of the input (the construct they
//! were decoded from). The pieces are placed at the earliest position that keeps the rest
//! alignable, so a byte that is both in a failure's raw and in the text after it, or a byte
//! that nobody emitted and no proposal explains, is a mismatch. A run of reasoning is
//! placed with the pair whose opener starts each block: only that pair's close may end it,
//! so another family's marker the decoder dropped from a block is a mismatch too.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use codec::format::FormatId;
use codec::turn::trace;
use codec::{Event, KNOWN_REASONING_MARKERS, Mode, Registry, TurnDecoder};
use proptest::prelude::*;
use serde_json::{Value, json};

/// Which reasoning markers a decoder recognises.
#[derive(Debug, Clone, Copy)]
enum Markers {
    /// Every known family's pair: what a new decoder starts with, and what the gateway leaves
    /// it with when no profile names a pair.
    Known,
    /// One pair, as a profile names it.
    Pair(&'static str, &'static str),
    /// Reasoning off.
    Off,
}

impl Markers {
    /// The pairs in effect, `(open, close)`; the first is the one a reply can start inside.
    fn pairs(self) -> Vec<(&'static str, &'static str)> {
        match self {
            Markers::Known => KNOWN_REASONING_MARKERS.to_vec(),
            Markers::Pair(open, close) => vec![(open, close)],
            Markers::Off => Vec::new(),
        }
    }
}

/// How a decoder treats reasoning: its markers, and whether the reply starts inside a block
/// (of the first pair).
#[derive(Debug, Clone, Copy)]
struct Think {
    markers: Markers,
    inside: bool,
}

const THINK: Think = Think {
    markers: Markers::Pair("<think>", "</think>"),
    inside: false,
};

const KNOWN: Think = Think {
    markers: Markers::Known,
    inside: false,
};

fn decode<'a>(
    reg: &Arc<Registry>,
    mode: Mode,
    think: Think,
    parts: impl IntoIterator<Item = &'a str>,
) -> Vec<Event> {
    let d = TurnDecoder::new(mode, Arc::clone(reg));
    let d = match think.markers {
        // The decoder as `TurnDecoder::new` makes it, untouched.
        Markers::Known => d,
        Markers::Pair(open, close) => d.with_reasoning_markers(open, close),
        Markers::Off => d.with_reasoning_markers("", ""),
    };
    let mut d = d.starts_in_reasoning(think.inside);
    let mut events = Vec::new();
    for p in parts {
        d.feed_into(p, &mut events);
    }
    d.finish_into(&mut events);
    events
}

/// What a proposal-free run of events must reproduce, and where proposals own input.
enum Piece<'e> {
    Bytes(&'e str),
    /// Prose: an empty reasoning block (of any pair) inside it emits nothing, so the prose
    /// around it merges into one event.
    Text(&'e str, Vec<String>),
    /// A run of reasoning events: one block, or several with nothing between them (a close
    /// right before an opener, maybe of another pair), whose events merge. See
    /// [`Reach::block`]. After a Harmony analysis header (`…<|message|>`, prose) the run may
    /// instead be that message's content, byte for byte, with no markers.
    Block {
        texts: Vec<&'e str>,
        bare: bool,
    },
    /// Nothing, or one of these (a reasoning marker: the close of the block a reply starts
    /// in, or an opener left open at the end).
    Maybe(Vec<&'static str>),
    /// Any number of these, in any order (empty reasoning blocks).
    Star(Vec<String>),
    /// One or more proposals: a non-empty span of input the emitted pieces do not cover.
    Gap,
}

/// How the header of a Harmony message ends: the analysis channel's content that follows is
/// reasoning, without markers.
const HARMONY_HEADER_END: &str = "<|message|>";

fn pieces(events: &[Event], think: Think) -> Vec<Piece<'_>> {
    let pairs = think.markers.pairs();
    let empty_blocks: Vec<String> = pairs.iter().map(|(o, c)| format!("{o}{c}")).collect();
    let mut v = Vec::new();
    if think.inside {
        // An empty block the reply starts in: the first pair's.
        v.push(Piece::Maybe(pairs.iter().take(1).map(|p| p.1).collect()));
    }
    let mut i = 0;
    while i < events.len() {
        v.push(Piece::Star(empty_blocks.clone()));
        match &events[i] {
            Event::Text(t) => v.push(Piece::Text(t, empty_blocks.clone())),
            Event::Failure { raw, .. } => v.push(Piece::Bytes(raw)),
            Event::Proposal { .. } if !matches!(v.last(), Some(Piece::Gap)) => v.push(Piece::Gap),
            Event::Reasoning(_) => {
                let bare = i > 0
                    && matches!(&events[i - 1], Event::Text(t) if t.ends_with(HARMONY_HEADER_END));
                let mut run = Vec::new();
                while let Some(Event::Reasoning(r)) = events.get(i) {
                    run.push(r.as_str());
                    i += 1;
                }
                v.push(Piece::Block { texts: run, bare });
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    v.push(Piece::Star(empty_blocks));
    // An empty block left open at the end.
    v.push(Piece::Maybe(pairs.iter().map(|p| p.0).collect()));
    v
}

/// Where each piece can end, for pieces laid in order over `input`: exact positions, plus,
/// after a gap, "anywhere past" a position. A gap (a run of proposals) is a non-empty span.
#[derive(Default, Clone)]
struct Reach {
    at: BTreeSet<usize>,
    past: Option<usize>,
}

impl Reach {
    fn gap(self) -> Reach {
        let from = self.at.first().copied().into_iter().chain(self.past).min();
        Reach {
            at: BTreeSet::new(),
            past: from,
        }
    }

    fn bytes(self, input: &str, s: &str) -> Reach {
        if s.is_empty() {
            return self;
        }
        let mut at: BTreeSet<usize> = self
            .at
            .iter()
            .filter(|&&i| input[i..].starts_with(s))
            .map(|&i| i + s.len())
            .collect();
        if let Some(p) = self.past {
            // Every occurrence that starts strictly after `p` (overlaps included).
            let mut k = p + 1;
            while k < input.len() && !input.is_char_boundary(k) {
                k += 1;
            }
            while k <= input.len() {
                let Some(off) = input.get(k..).and_then(|t| t.find(s)) else {
                    break;
                };
                at.insert(k + off + s.len());
                k += off + 1;
                while k < input.len() && !input.is_char_boundary(k) {
                    k += 1;
                }
            }
        }
        Reach { at, past: None }
    }

    /// The positions this reach holds: the exact ones, and after a gap every char boundary
    /// past it.
    fn starts(&self, input: &str) -> Vec<usize> {
        let past = self
            .past
            .into_iter()
            .flat_map(|p| (p + 1..=input.len()).filter(|&k| input.is_char_boundary(k)));
        self.at.iter().copied().chain(past).collect()
    }

    /// Like [`Reach::bytes`], where any of `brks` may also occur in the input at any point
    /// of `s` (empty reasoning blocks in prose).
    fn bytes_breaking(self, input: &str, s: &str, brks: &[String]) -> Reach {
        let mut at = BTreeSet::new();
        'start: for start in self.starts(input) {
            let mut k = start;
            for (j, c) in s.char_indices() {
                while let Some(b) = brks
                    .iter()
                    .find(|b| input[k..].starts_with(b.as_str()) && !s[j..].starts_with(b.as_str()))
                {
                    k += b.len();
                }
                if !input[k..].starts_with(c) {
                    continue 'start;
                }
                k += c.len_utf8();
            }
            at.insert(k);
        }
        Reach { at, past: None }
    }

    /// A run of reasoning events, `texts`, with the decoder's marker `pairs`. Each block
    /// starts at an opener (the first may instead be the block a reply starts `inside`, at
    /// the start, of the first pair), is ended only by the close of the pair that opened it,
    /// and is followed at once by the next block's opener while the run goes on (empty blocks
    /// of any pair may come between). The last block's close may be missing only at the end
    /// of the input: an unclosed block is reasoning to the end. So a marker of another pair
    /// inside a block must be in its text.
    fn block(self, input: &str, texts: &[&str], pairs: &[(&str, &str)], inside: bool) -> Reach {
        // Where the text can go on, and which pair's block it is in.
        let mut states: BTreeSet<(usize, usize)> = BTreeSet::new();
        for p in self.starts(input) {
            if inside && p == 0 {
                states.insert((0, 0));
            }
            for (k, (open, _)) in pairs.iter().enumerate() {
                if input[p..].starts_with(open) {
                    states.insert((p + open.len(), k));
                }
            }
        }
        for text in texts {
            states = states
                .into_iter()
                .filter_map(|(p, k)| read_reasoning(input, text, p, k, pairs))
                .collect();
        }
        let at = states
            .into_iter()
            .filter_map(|(p, k)| {
                let close = pairs[k].1;
                if input[p..].starts_with(close) {
                    Some(p + close.len())
                } else {
                    (p == input.len()).then_some(p)
                }
            })
            .collect();
        Reach { at, past: None }
    }

    fn union(mut self, other: Reach) -> Reach {
        self.at.extend(other.at);
        self.past = match (self.past, other.past) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self
    }

    /// Nothing, or one of `options`.
    fn maybe(self, input: &str, options: &[&str]) -> Reach {
        options.iter().fold(self.clone(), |all, s| {
            all.union(self.clone().bytes(input, s))
        })
    }

    /// Any sequence of `options`.
    fn star(self, input: &str, options: &[String]) -> Reach {
        let mut all = self.clone();
        let mut frontier = self;
        while !frontier.dead() {
            let next = options
                .iter()
                .filter(|s| !s.is_empty())
                .fold(Reach::default(), |acc, s| {
                    acc.union(frontier.clone().bytes(input, s))
                });
            let before = all.at.len();
            all = all.union(next.clone());
            if all.at.len() == before {
                break;
            }
            frontier = next;
        }
        all
    }

    fn dead(&self) -> bool {
        self.at.is_empty() && self.past.is_none()
    }

    fn ends_at(&self, n: usize) -> bool {
        self.at.contains(&n) || self.past.is_some_and(|p| p < n)
    }
}

/// Reads reasoning `text` from `p`, in a block of pair `k`: before each character, a close
/// of the block's pair followed by an opener (of any pair) moves to the next block. The text
/// never holds its block's close, so where the input has it the block must end there.
fn read_reasoning(
    input: &str,
    text: &str,
    mut p: usize,
    mut k: usize,
    pairs: &[(&str, &str)],
) -> Option<(usize, usize)> {
    for c in text.chars() {
        while let Some(rest) = input[p..].strip_prefix(pairs[k].1) {
            let next = pairs.iter().position(|(open, _)| rest.starts_with(open))?;
            p += pairs[k].1.len() + pairs[next].0.len();
            k = next;
        }
        if !input[p..].starts_with(c) {
            return None;
        }
        p += c.len_utf8();
    }
    Some((p, k))
}

/// Whether `pieces` tile `input` exactly, gaps being non-empty spans.
fn aligns(input: &str, pieces: &[Piece<'_>], think: Think) -> bool {
    let pairs = think.markers.pairs();
    let mut r = Reach {
        at: BTreeSet::from([0]),
        past: None,
    };
    for p in pieces {
        r = match p {
            Piece::Bytes(s) => r.bytes(input, s),
            Piece::Maybe(s) => r.maybe(input, s),
            Piece::Text(s, brks) => r.bytes_breaking(input, s, brks),
            Piece::Block { texts, bare } => {
                let content = bare.then(|| r.clone().bytes(input, &texts.concat()));
                let blocks = r.block(input, texts, &pairs, think.inside);
                content.map_or(blocks.clone(), |c| c.union(blocks))
            }
            Piece::Star(s) => r.star(input, s),
            Piece::Gap => r.gap(),
        };
        if r.dead() {
            return false;
        }
    }
    r.ends_at(input.len())
}

/// Invariants (a) and (b) on one event list.
fn check_events(input: &str, events: &[Event], think: Think) -> Result<(), String> {
    if !aligns(input, &pieces(events, think), think) {
        return Err(format!(
            "text, failure raws and proposals do not tile the input {input:?}:\n{}",
            trace(events)
        ));
    }
    let mut closed: BTreeSet<usize> = BTreeSet::new();
    let mut args: BTreeMap<usize, String> = BTreeMap::new();
    for e in events {
        match e {
            Event::ToolCallStart { index, .. } | Event::ArgsDelta { index, .. }
                if closed.contains(index) =>
            {
                return Err(format!(
                    "event for closed call #{index}:\n{}",
                    trace(events)
                ));
            }
            Event::ToolCallStart { index, .. } => {
                args.entry(*index).or_default();
            }
            Event::ArgsDelta { index, fragment } => {
                args.entry(*index).or_default().push_str(fragment);
            }
            Event::Proposal { index, proposal } => {
                if !closed.insert(*index) {
                    return Err(format!("call #{index} closed twice:\n{}", trace(events)));
                }
                // A text-protocol proposal is not streamed; a started call is.
                let streamed = args.get(index);
                if streamed.is_some_and(|s| *s != proposal.arguments_json()) {
                    return Err(format!(
                        "call #{index} streamed {streamed:?}, closed with {:?}:\n{}",
                        proposal.arguments_json(),
                        trace(events)
                    ));
                }
            }
            Event::Failure {
                index: Some(index), ..
            } if !closed.insert(*index) => {
                return Err(format!("call #{index} closed twice:\n{}", trace(events)));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Splits `s` at the char boundaries nearest to the given cut points.
fn split<'a>(s: &'a str, cuts: &[usize]) -> Vec<&'a str> {
    let mut at: Vec<usize> = cuts
        .iter()
        .map(|&c| {
            let mut k = c % (s.len() + 1);
            while !s.is_char_boundary(k) {
                k -= 1;
            }
            k
        })
        .collect();
    at.sort_unstable();
    at.dedup();
    let mut parts = Vec::new();
    let mut from = 0;
    for k in at {
        parts.push(&s[from..k]);
        from = k;
    }
    parts.push(&s[from..]);
    parts
}

/// All three invariants for one input: whole, byte by byte (by char) and in `cuts`.
fn check_all(reg: &Arc<Registry>, mode: Mode, input: &str, cuts: &[usize]) -> Result<(), String> {
    check_all_with(reg, mode, THINK, input, cuts)
}

fn check_all_with(
    reg: &Arc<Registry>,
    mode: Mode,
    think: Think,
    input: &str,
    cuts: &[usize],
) -> Result<(), String> {
    let whole = decode(reg, mode, think, [input]);
    check_events(input, &whole, think)?;
    let want = trace(&whole);
    let chars: Vec<&str> = input
        .char_indices()
        .map(|(i, c)| &input[i..i + c.len_utf8()])
        .collect();
    let by_char = decode(reg, mode, think, chars.iter().copied());
    check_events(input, &by_char, think)?;
    if trace(&by_char) != want {
        return Err(format!(
            "byte-by-byte trace differs for {input:?}:\n--- whole\n{want}--- by char\n{}",
            trace(&by_char)
        ));
    }
    let parts = split(input, cuts);
    let chunked = decode(reg, mode, think, parts.iter().copied());
    check_events(input, &chunked, think)?;
    if trace(&chunked) != want {
        return Err(format!(
            "chunked trace differs for {parts:?}:\n--- whole\n{want}--- chunked\n{}",
            trace(&chunked)
        ));
    }
    Ok(())
}

fn weather_only() -> Arc<Registry> {
    let mut r = Registry::client_only();
    r.add_client_tool(
        "weather",
        "Weather for a city.",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    )
    .expect("valid client tool");
    Arc::new(r)
}

// Regressions found with client-tool registries; each failed before the fix.

/// A call that fails partway gave the failing character twice: at the end of the failure's
/// raw and again at the start of the prose after it (`…} junk}` came back as `…} jjunk}`).
#[test]
fn a_failing_character_is_not_duplicated() {
    let reg = weather_only();
    for input in [
        r#"{"name": "weather", "arguments": {"city": "x"} junk}"#,
        r#"<tool_call>{"name": "weather", "arguments": {"city": "x"} junk}</tool_call>"#,
        r#"[TOOL_CALLS][{"name": "weather", "arguments": {"city": "x"} junk}]"#,
        r#"<|python_tag|>{"name": "weather", "parameters": {"city": "x"} junk}"#,
    ] {
        let events = decode(&reg, Mode::Auto, THINK, [input]);
        check_events(input, &events, THINK).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// A client call's pending argument fragment went out after the call's `Failure`.
#[test]
fn no_argument_fragment_follows_a_failure() {
    let reg = weather_only();
    for input in [
        r#"{"name": "weather", "arguments": {"city": 1}}"#,
        r#"{"name": "weather", "arguments": {"city": "x"} junk}"#,
        r#"<tool_call>{"name": "weather", "arguments": {"city": 1}}</tool_call>"#,
    ] {
        let events = decode(&reg, Mode::Auto, THINK, [input]);
        check_events(input, &events, THINK).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// The same failing calls gave a different trace whole and byte by byte.
#[test]
fn failing_client_calls_ignore_chunking() {
    let reg = weather_only();
    for input in [
        r#"{"name": "weather", "arguments": {"city": 1}}"#,
        r#"{"name": "weather", "arguments": {"city": "x"} junk}"#,
        r#"[TOOL_CALLS][{"name": "weather", "arguments": {"city": "x"} junk}]"#,
    ] {
        check_all(&reg, Mode::Auto, input, &[7, 19]).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// A client tool's arguments stream as they are read, before the call closes; a builtin's
/// go out in one fragment when validated.
#[test]
fn client_arguments_stream_before_the_call_closes() {
    let reg = weather_only();
    let mut d = TurnDecoder::new(Mode::Auto, Arc::clone(&reg));
    let events = d.feed(r#"<tool_call>{"name": "weather", "arguments": {"city": "Par"#);
    let streamed: String = events
        .iter()
        .filter_map(|e| match e {
            Event::ArgsDelta { fragment, .. } => Some(fragment.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(streamed, r#"{"city":"Par"#);
    assert!(!events.iter().any(|e| matches!(e, Event::Proposal { .. })));

    let mut d = TurnDecoder::new(Mode::Auto, Arc::new(Registry::builtin()));
    let events = d.feed(r#"<tool_call>{"name": "read", "arguments": {"path": "a"#);
    assert!(
        !events.iter().any(|e| matches!(e, Event::ArgsDelta { .. })),
        "{events:?}"
    );
}

/// Reasoning edge cases: an empty block inside prose (the prose around it merges into one
/// event), adjacent blocks (their reasoning merges), markers split anywhere.
#[test]
fn reasoning_blocks_tile_the_input() {
    let reg = Arc::new(Registry::builtin());
    for input in [
        "\n<think></think>i",
        "a<think>b</think><think>c</think>d",
        "<think></think><think></think>",
        "x<think>READ a.py\n</think>READ b.py\n",
    ] {
        check_all(&reg, Mode::Auto, input, &[2, 9]).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// The same with every known family's markers, as a decoder starts with them (and from inside
/// a `<think>` block): another family's close or block inside a block, blocks of different
/// families back to back, stray closes, unclosed blocks and markers cut short at the end, a
/// multi-byte empty block before a call list, a Harmony analysis message (reasoning without
/// markers) before a block.
#[test]
fn reasoning_blocks_of_every_family_tile_the_input() {
    let reg = Arc::new(Registry::builtin());
    for input in [
        "<think>a</seed:think>b</think>c",
        "[THINK]a<think>b</think>c[/THINK]d",
        "<think>a</think>[THINK]b[/THINK]\u{25c1}think\u{25b7}\u{25c1}/think\u{25b7}c",
        "x</think>[/THINK]<|END_THINKING|>y\n",
        "<|START_THINKING|>READ a.py\n<|inner_suffix|>",
        "ok <seed:think>a</seed:thi",
        "<think></think>\u{25c1}think\u{25b7}\u{25c1}/think\u{25b7}[TOOL_CALLS]read{\"path\": \"a\"}[TOOL_CALLS]nope{}",
        "<|channel|>analysis<|message|>{\"path\": \"\"}<|end|>[THINK]x[/THINK]",
    ] {
        for think in [
            KNOWN,
            Think {
                inside: true,
                ..KNOWN
            },
        ] {
            check_all_with(&reg, Mode::Auto, think, input, &[3, 11])
                .unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

/// The alignment holds each block to its own pair's close: the decoder's events for these
/// inputs pass it, and event lists that end a block at another family's close, drop a
/// marker, or go on after an unclosed block do not.
#[test]
fn the_alignment_holds_a_block_to_its_own_close() {
    let r = |s: &str| Event::Reasoning(s.to_owned());
    let t = |s: &str| Event::Text(s.to_owned());
    let reg = Arc::new(Registry::builtin());
    for (input, want) in [
        (
            "<think>a</seed:think>b</think>c",
            vec![r("a</seed:think>b"), t("c")],
        ),
        ("<think>a</think>[THINK]b[/THINK]c", vec![r("ab"), t("c")]),
        ("x</think>y<think></think>z", vec![t("x</think>yz")]),
        ("[THINK]a</think>b", vec![r("a</think>b")]),
    ] {
        let got = decode(&reg, Mode::Auto, KNOWN, [input]);
        assert_eq!(trace(&got), trace(&want), "{input:?}");
        check_events(input, &want, KNOWN).unwrap_or_else(|e| panic!("{e}"));
    }
    for (input, wrong) in [
        ("<think>a</seed:think>b", vec![r("a"), t("b")]),
        ("<think>a</think>[THINK]b</think>c", vec![r("ab"), t("c")]),
        ("<think>a[/THINK]", vec![r("a")]),
        ("x</think>y", vec![t("xy")]),
        ("<think>ab", vec![r("a"), t("b")]),
    ] {
        assert!(
            check_events(input, &wrong, KNOWN).is_err(),
            "{input:?} passed with {}",
            trace(&wrong)
        );
    }
}

/// Fuzz findings (`fuzz/README.md`): a pythonic list, or a wrapper's list, whose calls did not
/// all fail gave each failure the whole list's text, so bytes were reported twice.
#[test]
fn each_failure_of_a_call_list_carries_its_own_text() {
    let reg = Arc::new(Registry::builtin());
    for input in [
        "[read(path=\"calc.py\", stard=1, end=10), grep(pattern='def ', path=\"calc.py\")]\n",
        "[read(path=\"calc.py\", start=1, end=10), grep(pattern='def ', jath=\"calc.py\")]\n",
        r#"[TOOL_CALLS][{"name": "read", "arguments": {"path": 0}}, {"name": "nope", "arguments": {}}]"#,
        r#"<tool_call>[{"name": "read", "arguments": {"path": 0}}, {"name": "nope", "arguments": {}}]</tool_call>"#,
    ] {
        check_all(&reg, Mode::Auto, input, &[5, 40]).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// A bare call list holds its elements that name undeclared tools until a declared call
/// starts; then they go out in one step, and each must still carry only its own text.
#[test]
fn held_failures_of_a_bare_call_list_each_carry_their_own_text() {
    let reg = Arc::new(Registry::builtin());
    for input in [
        "[{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": {}}, {\"name\": \"read\", \"arguments\": {\"path\": 0}}, {\"name\": \"c\", \"arguments\": {}}]\n",
        "{\"tool_calls\": [{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": {}}, {\"name\": \"read\", \"arguments\": {\"path\": \"x\"}}]} tail\n",
        "```json\n[{\"name\": \"a\", \"arguments\": {}},\n {\"name\": \"b\", \"arguments\": {}},\n {\"name\": \"list\", \"arguments\": {\"path\": \".\"}}]\n```\n",
        "<tool_calls>[{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": {}}, {\"name\": \"read\", \"arguments\": {\"path\": 0}}]</tool_calls> tail\n",
        "<|tools_prefix|>[{\"a\": {}}, {\"b\": {\"x\": 1}}]<|tools_suffix|>\n",
    ] {
        check_all(&reg, Mode::Auto, input, &[3, 50]).unwrap_or_else(|e| panic!("{e}"));
        let events = decode(&reg, Mode::Auto, THINK, [input]);
        let failures = events
            .iter()
            .filter(|e| matches!(e, Event::Failure { .. }))
            .count();
        assert!(failures >= 2, "{}", trace(&events));
    }
}

// The property.

/// A small JSON schema for a client tool: an object with a few typed properties, some
/// required, and sometimes no additional properties.
fn schema() -> impl Strategy<Value = Value> {
    let ty =
        prop::sample::select(&["string", "integer", "number", "boolean", "array", "object"][..]);
    (
        prop::collection::btree_map("[a-z]{1,5}", ty, 0..4),
        any::<u8>(),
        any::<bool>(),
    )
        .prop_map(|(props, req_bits, closed)| {
            let required: Vec<&String> = props
                .keys()
                .enumerate()
                .filter(|(i, _)| req_bits & (1 << i) != 0)
                .map(|(_, k)| k)
                .collect();
            let properties: serde_json::Map<String, Value> = props
                .iter()
                .map(|(k, t)| (k.clone(), json!({ "type": t })))
                .collect();
            let mut s = json!({"type": "object", "properties": properties, "required": required});
            if closed {
                s["additionalProperties"] = json!(false);
            }
            s
        })
}

/// A client tool: a random valid name and a schema.
fn client_tool() -> impl Strategy<Value = (String, Value)> {
    ("[a-zA-Z_][a-zA-Z0-9_.-]{0,9}", schema())
}

/// Which registry a case runs with; the tools' names are also used to write calls.
#[derive(Debug, Clone)]
struct Setup {
    builtin: bool,
    client: Vec<(String, Value)>,
}

impl Setup {
    fn registry(&self) -> Registry {
        let mut r = if self.builtin {
            Registry::builtin()
        } else {
            Registry::client_only()
        };
        for (name, schema) in &self.client {
            // Names that clash (with a builtin, or with another in another letter case) are
            // skipped: the registry refuses them, and the call fragments still name them.
            let _ = r.add_client_tool(name, "generated", schema.clone());
        }
        r
    }
}

fn setup() -> impl Strategy<Value = Setup> {
    let tools = || prop::collection::vec(client_tool(), 1..4);
    prop_oneof![
        1 => Just(Setup { builtin: true, client: Vec::new() }),
        2 => tools().prop_map(|client| Setup { builtin: false, client }),
        1 => tools().prop_map(|client| Setup { builtin: true, client }),
    ]
}

/// A JSON-ish value of any type (so schemas are both met and violated).
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        "\"[a-z é\\\\\"]{0,6}\"",
        "-?[0-9]{1,3}(\\.[0-9])?",
        Just("true".to_owned()),
        Just("None".to_owned()),
        Just("[1, \"a\"]".to_owned()),
        Just("{\"k\": 1}".to_owned()),
        Just("'py'".to_owned()),
    ]
}

/// An arguments object with the given keys (and sometimes others), possibly malformed.
fn args(keys: Vec<String>) -> impl Strategy<Value = String> {
    let n = keys.len();
    (
        prop::collection::vec(value(), n..=n),
        prop::collection::vec("[a-z]{1,4}", 0..2),
        prop::collection::vec(value(), 2),
        prop::sample::select(&["}", "}", "}", " junk}", "", "}}", ",}"][..]),
    )
        .prop_map(move |(vals, extra, extra_vals, end)| {
            let mut parts: Vec<String> = keys
                .iter()
                .zip(&vals)
                .map(|(k, v)| format!("\"{k}\": {v}"))
                .collect();
            parts.extend(
                extra
                    .iter()
                    .zip(&extra_vals)
                    .map(|(k, v)| format!("\"{k}\": {v}")),
            );
            format!("{{{}{end}", parts.join(", "))
        })
}

/// A call to `name` in one of the native formats.
fn call(name: String, keys: Vec<String>) -> impl Strategy<Value = String> {
    (
        args(keys.clone()),
        0..41usize,
        prop::sample::select(keys_or_x(&keys)),
        value(),
    )
        .prop_map(move |(a, form, key, v)| match form {
            0 => format!("<tool_call>{{\"name\": \"{name}\", \"arguments\": {a}}}</tool_call>"),
            1 => format!("{{\"name\": \"{name}\", \"arguments\": {a}}}\n"),
            2 => format!("```json\n{{\"name\": \"{name}\", \"arguments\": {a}}}\n```\n"),
            3 => format!("[TOOL_CALLS][{{\"name\": \"{name}\", \"arguments\": {a}}}]"),
            4 => format!("<|python_tag|>{{\"name\": \"{name}\", \"parameters\": {a}}}"),
            5 => format!("<function={name}><parameter={key}>\n{v}\n</parameter></function>"),
            6 => format!("[{name}({key}={v})]"),
            8 => format!("[{{\"name\": \"{name}\", \"arguments\": {a}}}, {{\"name\": \"nope\", \"arguments\": {{}}}}]\n"),
            9 => format!("{{\"tool_calls\": [{{\"name\": \"nope\", \"arguments\": {a}}}, {{\"name\": \"{name}\", \"parameters\": {a}, \"id\": \"c1\"}}]}}\n"),
            10 => format!("```json\n{{\"tool_call\": {{\"name\": \"{name}\", \"arguments\": {a}}}}}\n```\n"),
            11 => format!("<tool_calls>[{{\"name\": \"{name}\", \"arguments\": {a}}}, {{\"name\": \"nope\", \"arguments\": {{}}}}]</tool_calls>"),
            12 => format!("<|tools_prefix|>[{{\"{name}\": {a}}}]<|tools_suffix|>"),
            13 => format!("<|START_ACTION|>[{{\"tool_call_id\": \"0\", \"tool_name\": \"{name}\", \"parameters\": {a}}}]<|END_ACTION|>"),
            14 => format!("\nfunctools[{{\"name\": \"{name}\", \"arguments\": {a}}}]\n"),
            15 => format!("<TOOLCALL>[{{\"name\": \"nope\", \"arguments\": {a}}}, {{\"name\": \"{name}\", \"arguments\": {a}}}]</TOOLCALL>"),
            16 => format!("<|tool_call|>[{{\"name\": \"{name}\", \"arguments\": {a}}}]\n"),
            18 => format!("<start_function_call>call:{name}{{{key}:<escape>{v}<escape>}}<end_function_call>"),
            19 => format!("<|tool_call>call:{name}{{{key}:{v},x:<|\"|>{v}<|\"|>}}<tool_call|>\n"),
            20 => format!("<tools>\n{{\"name\": \"{name}\", \"arguments\": {a}}}\n</tools>"),
            21 => format!("<function name=\"{name}\">{a}</function>"),
            22 => format!("<\u{ff5c}tool\u{2581}calls\u{2581}begin\u{ff5c}><\u{ff5c}tool\u{2581}call\u{2581}begin\u{ff5c}>function<\u{ff5c}tool\u{2581}sep\u{ff5c}>{name}\n```json\n{a}\n```<\u{ff5c}tool\u{2581}call\u{2581}end\u{ff5c}><\u{ff5c}tool\u{2581}calls\u{2581}end\u{ff5c}>"),
            23 => format!("<\u{ff5c}tool\u{2581}calls\u{2581}begin\u{ff5c}><\u{ff5c}tool\u{2581}call\u{2581}begin\u{ff5c}>nope<\u{ff5c}tool\u{2581}sep\u{ff5c}>{{}}<\u{ff5c}tool\u{2581}call\u{2581}end\u{ff5c}><\u{ff5c}tool\u{2581}call\u{2581}begin\u{ff5c}>{name}<\u{ff5c}tool\u{2581}sep\u{ff5c}>{a}<\u{ff5c}tool\u{2581}calls\u{2581}end\u{ff5c}>"),
            24 => format!("<|tool_calls_section_begin|><|tool_call_begin|>functions.{name}:0<|tool_call_argument_begin|>{a}<|tool_call_end|><|tool_calls_section_end|>"),
            25 => format!("<|channel|>analysis<|message|>{a}<|end|><|start|>assistant<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>{a}<|call|>"),
            26 => format!("[TOOL_CALLS]{name}{a}[TOOL_CALLS]nope{{}}"),
            27 => format!("<|action_start|><|plugin|>\n{{\"name\": \"{name}\", \"parameters\": {a}}}<|action_end|>"),
            28 => format!("<|tool_call_start|>[{name}({key}={v}), nope(x=1)]<|tool_call_end|>"),
            29 => format!("<|python_start|>[{name}({key}={v})]<|python_end|>\n"),
            30 => format!("<function_calls>\n{name}({key}={v})\n{name}()\n</function_calls>"),
            31 => format!("<seed:tool_call>\n<function={name}>\n<parameter={key}>{v}</parameter>\n</function>\n</seed:tool_call>"),
            32 => format!("<minimax:tool_call>\n<invoke name=\"nope\">\n</invoke>\n<invoke name=\"{name}\">\n<parameter name=\"{key}\">{v}</parameter>\n</invoke>\n</minimax:tool_call>"),
            33 => format!("<tool_call>{name}\n<arg_key>{key}</arg_key>\n<arg_value>{v}</arg_value>\n</tool_call>"),
            34 => format!("{name}\n{a}\n"),
            35 => format!("<|tool_call_start|>\n```python\n{name}({key}={v})\n```\n<|tool_call_end|>"),
            36 => format!("\n{name}({key}={v});\n"),
            37 => format!("\n    [{name}({v}), nope(x=1)]\n"),
            38 => format!("\n```python\n  {name}({key}={v}), {name}({v})\n# c\n  ```\n"),
            39 => format!("\n```[{name}({key}={v})]```"),
            40 => format!("\n```\n[]\n```\n{name}({key}=({v}, 2))\n"),
            _ => format!("<tool_call>\n{{\"arguments\": {a}, \"name\": \"{name}\"}}\n</tool_call>"),
        })
}

fn keys_or_x(keys: &[String]) -> Vec<String> {
    if keys.is_empty() {
        vec!["x".to_owned()]
    } else {
        keys.to_vec()
    }
}

const NOISE: &[&str] = &[
    "READ a.py\n",
    "DONE ok\n",
    "<<<<<<< SEARCH\n",
    "=======\n",
    ">>>>>>> REPLACE\n",
    "```",
    "```json\n",
    "\n",
    " ",
    "é",
    "<tool_call>",
    "</tool_call>",
    "{",
    "}",
    "[",
    "\"",
    "<function=",
    "</parameter>",
    "[TOOL_CALLS]",
    "<|python_tag|>",
    "{\"tool_calls\": [",
    "[{\"name\": \"nope\", \"arguments\": {}}, ",
    "<tool_calls>[",
    "</tool_calls>",
    "<|tools_prefix|>[",
    "<|tools_suffix|>",
    "<|START_ACTION|>",
    "\nfunctools[",
    "<start_function_call>call:",
    "<end_function_call>",
    "<|tool_call>",
    "<escape>",
    "<tools>",
    "</tools>",
    "<function name=\"",
    "<response>",
    "<\u{ff5c}tool\u{2581}calls\u{2581}begin\u{ff5c}>",
    "<\u{ff5c}tool\u{2581}call\u{2581}begin\u{ff5c}>",
    "<\u{ff5c}tool\u{2581}sep\u{ff5c}>",
    "<\u{ff5c}tool\u{2581}call\u{2581}end\u{ff5c}>",
    "<|tool_calls_section_begin|><|tool_call_begin|>",
    "<|tool_call_argument_begin|>",
    "<|tool_call_end|>",
    "<|action_start|><|plugin|>",
    "<|action_end|>",
    "<|tool_call_start|>[",
    "<|python_start|>[",
    "<function_calls>\n",
    "</function_calls>",
    "<seed:tool_call>",
    "<minimax:tool_call>",
    "<invoke name=\"",
    "<arg_key>",
    "</arg_value>",
    "<|channel|>analysis<|message|>",
    "<|channel|>commentary to=functions.",
    "<|message|>",
    "<|end|>",
    "<|call|>",
    "<think>",
    "</think>",
    "<think></think>",
    "<thi",
    "</th",
    "[R]",
    "[/R]",
    "\nread(",
    "\n  read(path=",
    "\nread(path=p)",
    " * 2)",
    "\n```python\n",
    ");\n",
    "\n[]\n",
];

/// A reply: calls to the setup's tools (and to builtins) mixed with noise and arbitrary text.
fn reply(setup: &Setup) -> impl Strategy<Value = String> + use<> {
    let mut names: Vec<(String, Vec<String>)> = setup
        .client
        .iter()
        .map(|(n, s)| {
            let keys = s["properties"]
                .as_object()
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default();
            (n.clone(), keys)
        })
        .collect();
    names.push(("read".to_owned(), vec!["path".to_owned()]));
    names.push(("nope".to_owned(), vec!["q".to_owned()]));
    let calls = prop::sample::select(names).prop_flat_map(|(n, k)| call(n, k));
    let fragment = prop_oneof![
        3 => calls,
        2 => prop::sample::select(NOISE).prop_map(str::to_owned),
        2 => marker(),
        1 => "[ -~\n]{0,10}",
    ]
    .boxed();
    // A block of any family around a few fragments, so that blocks also close and the reply
    // goes on after them (a lone opener leaves the rest of the reply in its block).
    let block = (
        prop::sample::select(&KNOWN_REASONING_MARKERS[..]),
        prop::collection::vec(fragment.clone(), 0..3),
    )
        .prop_map(|((open, close), inner)| format!("{open}{}{close}", inner.concat()));
    let piece = prop_oneof![4 => fragment, 1 => block];
    prop::collection::vec(piece, 0..10).prop_map(|v| v.concat())
}

/// A reasoning marker of any known family: an opener or a close (so blocks nest, mismatch,
/// stay open, or close nothing), an empty block, one cut short, or a look-alike that is none.
/// With one pair or none in effect, the other families' markers are prose.
fn marker() -> impl Strategy<Value = String> {
    (
        prop::sample::select(&KNOWN_REASONING_MARKERS[..]),
        0..9usize,
        any::<prop::sample::Index>(),
    )
        .prop_map(|((open, close), form, cut)| match form {
            0 | 1 => open.to_owned(),
            2..=4 => close.to_owned(),
            5 => format!("{open}{close}"),
            6 | 7 => {
                // A proper, non-empty prefix, cut at a char boundary.
                let m = if form == 6 { open } else { close };
                let ends: Vec<usize> = m.char_indices().skip(1).map(|(i, _)| i).collect();
                m[..ends[cut.index(ends.len())]].to_owned()
            }
            _ => {
                // The opener with a character inserted before its last one.
                let last = open.char_indices().last().map_or(0, |(i, _)| i);
                format!("{}ing{}", &open[..last], &open[last..])
            }
        })
}

fn case() -> impl Strategy<Value = (Setup, String)> {
    setup().prop_flat_map(|s| {
        let r = reply(&s);
        (Just(s), r)
    })
}

fn mode() -> impl Strategy<Value = Mode> {
    prop_oneof![
        4 => Just(Mode::Auto),
        1 => Just(Mode::Only(FormatId::Text)),
        1 => prop::sample::select(&[
            FormatId::Hermes,
            FormatId::Qwen3Xml,
            FormatId::Llama3,
            FormatId::Mistral,
            FormatId::Pythonic,
            FormatId::BareJson,
            FormatId::MarkerList,
            FormatId::GemmaCall,
            FormatId::SectionCalls,
            FormatId::Harmony,
            // No in-band format: what the gateway decodes a reply to a request without tools
            // with, to tell reasoning from the answer.
            FormatId::OpenAi,
        ][..]).prop_map(Mode::Only),
    ]
}

/// Reasoning with every known family's markers (as a decoder starts), with `<think>` only or
/// custom markers (as a profile names them), maybe starting inside a block; or off.
fn think() -> impl Strategy<Value = Think> {
    prop_oneof![
        3 => any::<bool>().prop_map(|inside| Think { inside, ..KNOWN }),
        2 => any::<bool>().prop_map(|inside| Think { inside, ..THINK }),
        1 => any::<bool>().prop_map(|inside| Think { markers: Markers::Pair("[R]", "[/R]"), inside }),
        1 => Just(Think { markers: Markers::Off, inside: false }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn every_registry_decodes_losslessly_and_ignores_chunking(
        (setup, input) in case(),
        mode in mode(),
        think in think(),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
    ) {
        let reg = Arc::new(setup.registry());
        if let Err(e) = check_all_with(&reg, mode, think, &input, &cuts) {
            prop_assert!(false, "{:?} {:?} {:?}: {}", setup, mode, think, e);
        }
    }
}
