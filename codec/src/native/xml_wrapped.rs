//! XML calls in wrappers other than `<tool_call>`, as one table: each `Wrapper` row names its
//! start and end tags and the tag dialect of the calls inside (`qwen3_xml::XmlTags`).
//! The machine is Hermes' (`hermes::HermesMachine`), so the tail after a call, the
//! repairs and the failures are the same as inside `<tool_call>`; a wrapper of this table holds
//! XML calls only, one or more.
//!
//! | families | written |
//! |---|---|
//! | Seed-OSS | `<seed:tool_call><function=f><parameter=a>v</parameter></function></seed:tool_call>` |
//! | MiniMax-M2 | `<minimax:tool_call><invoke name="f"><parameter name="a">v</parameter></invoke>…</minimax:tool_call>` |
//!
//! Sources: Seed-OSS's chat template (`chat_template.jinja` of ByteDance-Seed/Seed-OSS-36B-Instruct)
//! and llama.cpp's `SEED_OSS` chat format; MiniMax-M2's tool-calling guide
//! (`docs/tool_calling_guide.md` of MiniMaxAI/MiniMax-M2) and llama.cpp's `MINIMAX_M2` chat
//! format. Values are text, typed by the tool's schema as in [`super::qwen3_xml`].
//!
//! # Triggers
//!
//! The start tags are matched literally anywhere; they part from every other `<` trigger at
//! their second byte (`s`, `m`: no other trigger has `<s` or `<m`), and from each other at the
//! same byte. A start tag followed (after blanks) by anything but the dialect's call opening
//! (`<function=`, `<invoke name="`) is prose; so is a call whose name ends badly before anything
//! was emitted.

use super::detect_literal;
use super::hermes::{HermesMachine, Wrapper};
use super::qwen3_xml::{MINIMAX, QWEN3};
use crate::format::{Ctx, Detect, Format, FormatId, Position};

/// Every wrapper of the table. Their start tags are disjoint (a test checks every pair).
pub(crate) const ROWS: &[Wrapper] = &[
    Wrapper {
        // Seed-OSS
        open: "<seed:tool_call>",
        close: "</seed:tool_call>",
        tags: &QWEN3,
        hermes: false,
    },
    Wrapper {
        // MiniMax-M2
        open: "<minimax:tool_call>",
        close: "</minimax:tool_call>",
        tags: &MINIMAX,
        hermes: false,
    },
];

/// The detector of every row; its calls are attributed to `qwen3_xml`.
#[derive(Debug)]
pub struct XmlWrapped {
    text_mode: bool,
}

impl XmlWrapped {
    pub fn new(text_mode: bool) -> XmlWrapped {
        XmlWrapped { text_mode }
    }
}

impl Format for XmlWrapped {
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
        let mut more = false;
        for row in ROWS {
            match detect_literal(s, row.open, at) {
                Some(true) => return Detect::Start(HermesMachine::boxed(row, self.text_mode)),
                None => more = true,
                Some(false) => {}
            }
        }
        if more { Detect::NeedMore } else { Detect::No }
    }
}
