//! The "start marker, known body, optional end marker" family, as one table: each [`Row`]
//! names a marker, the body that follows it (a JSON list of calls, one JSON call object, a
//! pythonic list, or pythonic calls one per line) and the marker that may close it. Adding the
//! next format of this shape is a row.
//!
//! | families | written |
//! |---|---|
//! | Jamba, Hunyuan-A13B, Apriel 1.5 | `<tool_calls>[{"name": f, "arguments": {…}}, …]</tool_calls>` |
//! | Nemotron (Nano v2) | `<TOOLCALL>[{"name": f, "arguments": {…}}, …]</TOOLCALL>` |
//! | Apertus | `<\|tools_prefix\|>[{"f": {…}}, …]<\|tools_suffix\|>` |
//! | Command R7B | `<\|START_ACTION\|>[{"tool_call_id": "0", "tool_name": f, "parameters": {…}}]<\|END_ACTION\|>` |
//! | Granite 3.0 | `<\|tool_call\|>[{"name": f, "arguments": {…}}, …]` (no end marker) |
//! | Phi-4-mini | `functools[{"name": f, "arguments": {…}}, …]` (no end marker) |
//! | InternLM 2 / 2.5 | `<\|action_start\|><\|plugin\|>{"name": f, "parameters": {…}}<\|action_end\|>` |
//! | LFM2, MiniCPM3 | `<\|tool_call_start\|>[f(a=1), …]<\|tool_call_end\|>`, a JSON list of calls, or a ```` ```python ```` fence of calls one per line (MiniCPM3) |
//! | Llama 4 | `<\|python_start\|>[f(a=1), …]<\|python_end\|>` |
//! | Olmo 3 | `<function_calls>` then `f(a=1)` one call per line, then `</function_calls>` |
//!
//! Sources, in the same order: vLLM's `jamba`, `hunyuan_a13b` and `apriel` tool parsers and
//! llama.cpp's Apriel 1.5 chat format; llama.cpp's Nemotron v2 chat format; vLLM's `apertus`
//! tool parser (which also takes a missing suffix); vLLM's `command` tool parser and
//! llama.cpp's Command R7B chat format; vLLM's `granite` tool parser; vLLM's `phi4_mini_json`
//! tool parser; InternLM's chat-format documentation (`chat/chat_format.md`) and vLLM's
//! `internlm2` tool parser (one call per action, `parameters` or `arguments`); vLLM's `lfm2`
//! tool parser (pythonic list), llama.cpp's `LFM2_WITH_JSON_TOOLS` format (JSON list) and
//! vLLM's `minicpm` tool parser with its `tool_chat_template_minicpm3.jinja` (MiniCPM3: a
//! fence, optionally naming `python`, of one call per line between the same markers);
//! vLLM's `llama4_pythonic` tool parser and its `tool_chat_template_llama4_pythonic.jinja`;
//! vLLM's `olmo3` tool parser (calls separated by newlines, JSON's `true`/`false`/`null`
//! accepted beside Python's).
//!
//! (Granite 3.1 writes `<tool_call>[…]`, which is Hermes' tag with a list body: [`super::hermes`]
//! reads it.)
//!
//! A JSON body is read by the machine of [`super::json_list`] with the call-object parser of
//! `call.rs`, so the elements stream, validate and repair as every other JSON call does
//! (`parameters_key`, `arguments_as_string`, `python_literal`, `unclosed_json`, …). A pythonic
//! body is read by the machine of [`super::pythonic`], as a line-start `[f(a=1)]` is: nothing
//! goes out until the body closes, and then whole calls.
//!
//! # Triggers
//!
//! The markers are special tokens of their models, matched literally anywhere; `functools` is
//! a plain word, so it counts only at the start of a line and only right before its list's `[`
//! (the trigger is `functools[`; `import functools` and `functools.partial` are prose, and the
//! prose scanner's fast skip gains no common letter). No marker is a prefix of another, nor of
//! another format's trigger: `<tool_calls>` and Hermes' `<tool_call>` agree up to
//! `<tool_call` and both answer `NeedMore` there; the next byte (`s` or `>`) decides. Olmo's
//! `<function_calls>` parts the same way from the drifted Hermes wrapper `<function_call>`
//! (`s` or `>`), and from `<function=` and `<function name="` at the byte after `<function`;
//! `<|tool_call_start|>` from `<|tool_call|>`, `<|tool_call>` and Kimi's
//! `<|tool_calls_section_begin|>` at the byte after `<|tool_call`.
//!
//! A pythonic body starts only when the bytes after the marker show it: blanks, `[`, blanks and
//! the first letter of a name (LFM2's `[{` is its JSON list instead, and a ```` ```python ````
//! line then blanks and a name MiniCPM3's fence); Olmo's, blanks and the first letter of a
//! name. Anything else after the marker leaves the marker prose.
//!
//! # Never a false call
//!
//! A marker not followed (after blanks) by `[` and a call object of its row's shape (InternLM:
//! the call object itself) is prose: the body rejects and every byte goes back to the scanner.
//! A pythonic body is a call list only when every call names a declared tool with keyword
//! arguments and the body closes (`]`, or Olmo's end marker; an Olmo body the stream cut off
//! after a complete call lacks only the marker, `missing_close_tag`); anything else is prose,
//! because the same markers also wrap plain Python (Llama 4's `<|python_start|>` is its code
//! interpreter's). Elements are read as unwrapped
//! call objects: one must show its tool name and its arguments key before it starts, and a
//! first key foreign to the row's shape rejects the list. Unlike a bare list, the marker says
//! "these are calls", so a list of call-shaped elements that name only undeclared tools ends
//! as `unknown_tool` failures rather than prose. Nothing is emitted for an element until its
//! name is certain and declared.
//!
//! An end marker is consumed when it follows the list after blanks; when it does not come, the
//! calls are complete anyway (their JSON closed) and the look-ahead goes back to prose. After
//! a failure the end marker goes out as prose, as a fence's closing line does after a failed
//! fenced list: the failure carries the list's own text. A list the stream cut off is closed
//! when only brackets are missing (`unclosed_json`).

use super::call::Keys;
use super::json_list::{ListMachine, Shape};
use super::pythonic::PyMachine;
use super::{detect_literal, pythonic};
use crate::format::{Ctx, Detect, Format, FormatId, Position};

/// What follows a row's start marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RowBody {
    /// A JSON list of call objects with these keys.
    List(Keys),
    /// One JSON call object whose arguments key is `"parameters"` (`"arguments"` too).
    Object,
    /// A pythonic list, `[f(a=1), g(b="x")]`.
    Pythonic,
    /// A pythonic list, or a JSON list of call objects with these keys: the byte after the
    /// `[` tells which (`{` or a name's first letter); or a ```` ```python ```` fence holding
    /// pythonic calls one per line.
    PythonicOrList(Keys),
    /// Pythonic calls, one per line, without brackets.
    PythonicLines,
}

/// One format of the family.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    /// The model families that write it.
    pub families: &'static str,
    /// The start marker, read before the body.
    pub open: &'static str,
    /// What the marker is followed by.
    pub(crate) body: RowBody,
    /// The end marker, when the format has one. It may be missing.
    pub close: Option<&'static str>,
    /// The marker is a plain word, not a special token: it counts only at the start of a line
    /// and only right before the list's `[`.
    pub word: bool,
}

/// Every format of the family. Their triggers are disjoint (a test checks every pair).
pub const ROWS: &[Row] = &[
    Row {
        families: "Jamba, Hunyuan-A13B, Apriel 1.5",
        open: "<tool_calls>",
        body: RowBody::List(Keys::Named),
        close: Some("</tool_calls>"),
        word: false,
    },
    Row {
        families: "Nemotron",
        open: "<TOOLCALL>",
        body: RowBody::List(Keys::Named),
        close: Some("</TOOLCALL>"),
        word: false,
    },
    Row {
        families: "Apertus",
        open: "<|tools_prefix|>",
        body: RowBody::List(Keys::NameIsKey),
        close: Some("<|tools_suffix|>"),
        word: false,
    },
    Row {
        families: "Command R7B",
        open: "<|START_ACTION|>",
        body: RowBody::List(Keys::ToolName),
        close: Some("<|END_ACTION|>"),
        word: false,
    },
    Row {
        families: "Granite 3.0",
        open: "<|tool_call|>",
        body: RowBody::List(Keys::Named),
        close: None,
        word: false,
    },
    Row {
        families: "Phi-4-mini",
        open: "functools",
        body: RowBody::List(Keys::Named),
        close: None,
        word: true,
    },
    Row {
        families: "InternLM 2 / 2.5",
        open: "<|action_start|><|plugin|>",
        body: RowBody::Object,
        close: Some("<|action_end|>"),
        word: false,
    },
    Row {
        families: "LFM2",
        open: "<|tool_call_start|>",
        body: RowBody::PythonicOrList(Keys::Named),
        close: Some("<|tool_call_end|>"),
        word: false,
    },
    Row {
        families: "Llama 4",
        open: "<|python_start|>",
        body: RowBody::Pythonic,
        close: Some("<|python_end|>"),
        word: false,
    },
    Row {
        families: "Olmo 3",
        open: "<function_calls>",
        body: RowBody::PythonicLines,
        close: Some("</function_calls>"),
        word: false,
    },
];

/// Blanks allowed between a marker and a pythonic body's first name.
const PEEK_BLANKS: usize = 64;

/// Which body the bytes after a row's marker begin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Peeked {
    Json,
    /// A pythonic body whose `[` (or, for calls one per line, first name) is at this byte.
    Pythonic(usize),
    /// Calls one per line in a code fence, the first name at this byte.
    Fence(usize),
}

/// The languages a fence of pythonic calls may name.
const FENCE_LANGS: &[&str] = &["", "python", "py"];

/// Looks past the marker (`s` starts with it) for the body a pythonic row needs. `None`: need
/// more bytes; `Some(None)`: none follows, the marker is prose.
fn peek(s: &str, row: &Row, at: Position) -> Option<Option<Peeked>> {
    let b = s.as_bytes();
    let more = if at.eos { Some(None) } else { None };
    let mut i = row.open.len();
    let blanks = |i: &mut usize, newlines: bool| -> Option<bool> {
        let from = *i;
        while *i < b.len()
            && (b[*i] == b' ' || b[*i] == b'\t' || newlines && matches!(b[*i], b'\n' | b'\r'))
        {
            *i += 1;
            if *i - from > PEEK_BLANKS {
                return Some(false);
            }
        }
        if *i >= b.len() { None } else { Some(true) }
    };
    let name_start = |c: u8| c.is_ascii_alphabetic() || c == b'_';
    if row.body == RowBody::PythonicLines {
        return match blanks(&mut i, true) {
            None => more,
            Some(false) => Some(None),
            Some(true) => Some(name_start(b[i]).then_some(Peeked::Pythonic(i))),
        };
    }
    match blanks(&mut i, true) {
        None => return more,
        Some(false) => return Some(None),
        Some(true) if b[i] == b'`' && matches!(row.body, RowBody::PythonicOrList(_)) => {
            return peek_fence(s, i, at);
        }
        Some(true) if b[i] != b'[' => return Some(None),
        Some(true) => {}
    }
    let bracket = i;
    i += 1;
    match blanks(&mut i, false) {
        None => more,
        Some(false) => Some(None),
        Some(true) if b[i] == b'{' && matches!(row.body, RowBody::PythonicOrList(_)) => {
            Some(Some(Peeked::Json))
        }
        Some(true) => Some(name_start(b[i]).then_some(Peeked::Pythonic(bracket))),
    }
}

/// A ```` ```python ```` line at `i`, blanks, then a name's first letter.
fn peek_fence(s: &str, mut i: usize, at: Position) -> Option<Option<Peeked>> {
    let b = s.as_bytes();
    let more = if at.eos { Some(None) } else { None };
    let fence = b"```";
    // Bytes, not a `str` slice: the three bytes may end inside a character.
    let have = &b[i..(i + fence.len()).min(b.len())];
    if !fence.starts_with(have) {
        return Some(None);
    }
    if have.len() < fence.len() {
        return more;
    }
    i += fence.len();
    let lang = i;
    while i < b.len() && b[i].is_ascii_alphanumeric() {
        i += 1;
        if i - lang > 8 {
            return Some(None);
        }
    }
    let Some(&end) = b.get(i) else { return more };
    if !FENCE_LANGS.contains(&&s[lang..i]) {
        return Some(None);
    }
    if end == b'\r' {
        i += 1;
    }
    match b.get(i) {
        None => return more,
        Some(b'\n') => i += 1,
        Some(_) => return Some(None),
    }
    let from = i;
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
        if i - from > PEEK_BLANKS {
            return Some(None);
        }
    }
    match b.get(i) {
        None => more,
        Some(&c) if c.is_ascii_alphabetic() || c == b'_' => Some(Some(Peeked::Fence(i))),
        Some(_) => Some(None),
    }
}

impl Row {
    /// Whether `s` starts this row's trigger. `None`: need more bytes.
    fn detect(&self, s: &str, at: Position) -> Option<bool> {
        if self.word && !at.line_start {
            return Some(false);
        }
        match detect_literal(s, self.open, at) {
            Some(true) if self.word => match s.as_bytes().get(self.open.len()) {
                None if !at.eos => None,
                Some(b'[') => Some(true),
                _ => Some(false),
            },
            r => r,
        }
    }

    /// The body for a construct that starts with this row's marker, once the bytes after it
    /// decide it. `None`: need more bytes; `Some(None)`: the marker is prose.
    fn start(&self, s: &str, at: Position, text_mode: bool) -> Option<Option<Detect>> {
        let lead = self.open.len();
        let list = |keys| {
            ListMachine::boxed_marker(
                FormatId::MarkerList,
                text_mode,
                lead,
                Shape::List,
                keys,
                self.close,
            )
        };
        let body = match self.body {
            RowBody::List(keys) => list(keys),
            RowBody::Object => ListMachine::boxed_marker(
                FormatId::MarkerList,
                text_mode,
                lead,
                Shape::Object,
                Keys::Named,
                self.close,
            ),
            RowBody::Pythonic | RowBody::PythonicOrList(_) | RowBody::PythonicLines => {
                match peek(s, self, at)? {
                    None => return Some(None),
                    Some(Peeked::Json) => match self.body {
                        RowBody::PythonicOrList(keys) => list(keys),
                        _ => return Some(None),
                    },
                    Some(Peeked::Fence(n)) => pythonic::boxed(PyMachine::fenced(
                        FormatId::MarkerList,
                        text_mode,
                        n,
                        self.close,
                    )),
                    Some(Peeked::Pythonic(n)) => pythonic::boxed(PyMachine::marker(
                        FormatId::MarkerList,
                        text_mode,
                        n,
                        self.body == RowBody::PythonicLines,
                        self.close,
                    )),
                }
            }
        };
        Some(Some(Detect::Start(body)))
    }
}

/// The detector of every row.
#[derive(Debug)]
pub struct MarkerList {
    text_mode: bool,
}

impl MarkerList {
    pub fn new(text_mode: bool) -> MarkerList {
        MarkerList { text_mode }
    }
}

impl Format for MarkerList {
    fn id(&self) -> FormatId {
        FormatId::MarkerList
    }
    fn trigger_bytes(&self) -> &'static [u8] {
        b"<"
    }
    fn line_start_bytes(&self) -> &'static [u8] {
        b"f"
    }
    fn detect(&self, s: &str, at: Position, _ctx: &Ctx<'_>) -> Detect {
        let mut more = false;
        for row in ROWS {
            match row.detect(s, at) {
                Some(true) => {
                    return match row.start(s, at, self.text_mode) {
                        None => Detect::NeedMore,
                        Some(None) => Detect::No,
                        Some(Some(d)) => d,
                    };
                }
                None => more = true,
                Some(false) => {}
            }
        }
        if more { Detect::NeedMore } else { Detect::No }
    }
}
