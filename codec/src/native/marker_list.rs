//! The "start marker, JSON list of calls, optional end marker" family, as one table: each
//! [`Row`] names a marker, the keys of the list's elements and the marker that may close the
//! list. Adding the next format of this shape is a row.
//!
//! | families | written |
//! |---|---|
//! | Jamba, Hunyuan-A13B, Apriel 1.5 | `<tool_calls>[{"name": f, "arguments": {…}}, …]</tool_calls>` |
//! | Nemotron (Nano v2) | `<TOOLCALL>[{"name": f, "arguments": {…}}, …]</TOOLCALL>` |
//! | Apertus | `<\|tools_prefix\|>[{"f": {…}}, …]<\|tools_suffix\|>` |
//! | Command R7B | `<\|START_ACTION\|>[{"tool_call_id": "0", "tool_name": f, "parameters": {…}}]<\|END_ACTION\|>` |
//! | Granite 3.0 | `<\|tool_call\|>[{"name": f, "arguments": {…}}, …]` (no end marker) |
//! | Phi-4-mini | `functools[{"name": f, "arguments": {…}}, …]` (no end marker) |
//!
//! Sources, in the same order: vLLM's `jamba`, `hunyuan_a13b` and `apriel` tool parsers and
//! llama.cpp's Apriel 1.5 chat format; llama.cpp's Nemotron v2 chat format; vLLM's `apertus`
//! tool parser (which also takes a missing suffix); vLLM's `command` tool parser and
//! llama.cpp's Command R7B chat format; vLLM's `granite` tool parser; vLLM's `phi4_mini_json`
//! tool parser.
//!
//! (Granite 3.1 writes `<tool_call>[…]`, which is Hermes' tag with a list body: [`super::hermes`]
//! reads it.)
//!
//! The list is read by the machine of [`super::json_list`] with the call-object parser of
//! `call.rs`, so the elements stream, validate and repair as every other JSON call does
//! (`parameters_key`, `arguments_as_string`, `python_literal`, `unclosed_json`, …).
//!
//! # Triggers
//!
//! The markers are special tokens of their models, matched literally anywhere; `functools` is
//! a plain word, so it counts only at the start of a line and only right before its list's `[`
//! (the trigger is `functools[`; `import functools` and `functools.partial` are prose, and the
//! prose scanner's fast skip gains no common letter). No marker is a prefix of another, nor of
//! another format's trigger: `<tool_calls>` and Hermes' `<tool_call>` agree up to
//! `<tool_call` and both answer `NeedMore` there; the next byte (`s` or `>`) decides.
//!
//! # Never a false call
//!
//! A marker not followed (after blanks) by `[` and a call object of its row's shape is prose:
//! the body rejects and every byte goes back to the scanner. Elements are read as unwrapped
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
use super::detect_literal;
use super::json_list::ListMachine;
use crate::format::{Ctx, Detect, Format, FormatId, Position};

/// One format of the family.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    /// The model families that write it.
    pub families: &'static str,
    /// The start marker, read before the list.
    pub open: &'static str,
    /// The keys of the list's elements.
    pub(crate) keys: Keys,
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
        keys: Keys::Named,
        close: Some("</tool_calls>"),
        word: false,
    },
    Row {
        families: "Nemotron",
        open: "<TOOLCALL>",
        keys: Keys::Named,
        close: Some("</TOOLCALL>"),
        word: false,
    },
    Row {
        families: "Apertus",
        open: "<|tools_prefix|>",
        keys: Keys::NameIsKey,
        close: Some("<|tools_suffix|>"),
        word: false,
    },
    Row {
        families: "Command R7B",
        open: "<|START_ACTION|>",
        keys: Keys::ToolName,
        close: Some("<|END_ACTION|>"),
        word: false,
    },
    Row {
        families: "Granite 3.0",
        open: "<|tool_call|>",
        keys: Keys::Named,
        close: None,
        word: false,
    },
    Row {
        families: "Phi-4-mini",
        open: "functools",
        keys: Keys::Named,
        close: None,
        word: true,
    },
];

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
                    return Detect::Start(ListMachine::boxed_marker(
                        FormatId::MarkerList,
                        self.text_mode,
                        row.open.len(),
                        row.keys,
                        row.close,
                    ));
                }
                None => more = true,
                Some(false) => {}
            }
        }
        if more { Detect::NeedMore } else { Detect::No }
    }
}
