//! The typed action space: what a model asked to do, whatever format it wrote it in.
//!
//! `ActionProposal` is deliberately not `Serialize`: the JSON form (`name` + `arguments`, the
//! form of `gold` in corpora and of native tool calls) is produced by explicit conversion, so
//! wire formats live at the edges (see STYLE.md, "Wire types live at the edge").

use crate::event::RepairKind;
use crate::format::FormatId;

/// One SEARCH/REPLACE block. Both bodies are whole lines, each ending in `\n` (or empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub search: String,
    pub replace: String,
}

/// One action, with the native tool names and argument objects of DESIGN.md.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Read { path: String, start: Option<u64>, end: Option<u64> },
    List { path: String },
    Glob { pattern: String },
    Grep { pattern: String, path: Option<String> },
    Run { argv: Vec<String> },
    Delete { path: String },
    Mkdir { path: String },
    Move { from: String, to: String },
    Edit { path: String, blocks: Vec<Block> },
    Create { path: String, content: String },
    Done { summary: String },
    /// A client-declared tool; `arguments` has been validated against its JSON schema.
    Client { name: String, arguments: serde_json::Value },
}

/// A decoded action together with how it was obtained.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionProposal {
    pub action: Action,
    /// Every repair applied to produce this proposal, one entry per occurrence, in order.
    pub repairs: Vec<RepairKind>,
    /// The format the model wrote it in.
    pub format: FormatId,
}
