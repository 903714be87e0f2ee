//! The typed action space: what a model asked to do, whatever format it wrote it in.
//!
//! `ActionProposal` is deliberately not `Serialize`: the JSON form (`name` + `arguments`, the
//! form of `gold` in corpora and of native tool calls) is produced by explicit conversion, so
//! wire formats live at the edges (see STYLE.md, "Wire types live at the edge").

use crate::format_id::FormatId;
use crate::repair::{FailureKind, RepairKind};

/// One SEARCH/REPLACE block. Both bodies are whole lines, each ending in `\n` (or empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub search: String,
    pub replace: String,
}

/// One action, with the native tool names and argument objects of DESIGN.md.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Read {
        path: String,
        start: Option<u64>,
        end: Option<u64>,
    },
    List {
        path: String,
    },
    Glob {
        pattern: String,
    },
    Grep {
        pattern: String,
        path: Option<String>,
    },
    Run {
        argv: Vec<String>,
    },
    Delete {
        path: String,
    },
    Mkdir {
        path: String,
    },
    Move {
        from: String,
        to: String,
    },
    Edit {
        path: String,
        blocks: Vec<Block>,
    },
    Create {
        path: String,
        content: String,
    },
    Done {
        summary: String,
    },
    /// A client-declared tool; `arguments` has been validated against its JSON schema.
    Client {
        name: String,
        arguments: serde_json::Value,
    },
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

/// Why a `gold` entry of a corpus is not a proposal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GoldError {
    /// The entry is not a `{"name": …, "arguments": {…}}` object.
    #[error("a gold entry must be an object with \"name\" and \"arguments\"")]
    Shape,
    /// The entry does not validate: a builtin's arguments that fail its argument table, a
    /// client tool's that fail its schema (`bad_arguments`), or a name a client-only registry
    /// does not know (`unknown_tool`).
    #[error("gold entry for {name:?} does not validate: {kind}")]
    Invalid { name: String, kind: FailureKind },
}

impl Action {
    /// The native tool name (`read`, `edit`, …, or the client tool's name).
    pub fn name(&self) -> &str {
        match self {
            Action::Read { .. } => "read",
            Action::List { .. } => "list",
            Action::Glob { .. } => "glob",
            Action::Grep { .. } => "grep",
            Action::Run { .. } => "run",
            Action::Delete { .. } => "delete",
            Action::Mkdir { .. } => "mkdir",
            Action::Move { .. } => "move",
            Action::Edit { .. } => "edit",
            Action::Create { .. } => "create",
            Action::Done { .. } => "done",
            Action::Client { name, .. } => name,
        }
    }

    /// The arguments object of the JSON form: keys in the registry's spec order, absent
    /// optional arguments omitted.
    pub fn arguments(&self) -> serde_json::Value {
        use serde_json::{Map, Value, json};
        let s = |v: &str| Value::String(v.to_owned());
        match self {
            Action::Read { path, start, end } => {
                let mut m = Map::new();
                m.insert("path".to_owned(), s(path));
                if let Some(start) = start {
                    m.insert("start".to_owned(), json!(start));
                }
                if let Some(end) = end {
                    m.insert("end".to_owned(), json!(end));
                }
                Value::Object(m)
            }
            Action::List { path } => json!({ "path": path }),
            Action::Glob { pattern } => json!({ "pattern": pattern }),
            Action::Grep { pattern, path } => match path {
                Some(path) => json!({ "pattern": pattern, "path": path }),
                None => json!({ "pattern": pattern }),
            },
            Action::Run { argv } => json!({ "argv": argv }),
            Action::Delete { path } => json!({ "path": path }),
            Action::Mkdir { path } => json!({ "path": path }),
            Action::Move { from, to } => json!({ "from": from, "to": to }),
            Action::Edit { path, blocks } => {
                let blocks: Vec<Value> = blocks
                    .iter()
                    .map(|b| json!({ "search": b.search, "replace": b.replace }))
                    .collect();
                json!({ "path": path, "blocks": blocks })
            }
            Action::Create { path, content } => json!({ "path": path, "content": content }),
            Action::Done { summary } => json!({ "summary": summary }),
            Action::Client { arguments, .. } => arguments.clone(),
        }
    }

    /// The whole JSON form, `{"name": …, "arguments": {…}}`: the form of `gold` in corpora
    /// and of proposals in `bellows eval --json`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({ "name": self.name(), "arguments": self.arguments() })
    }
}

impl ActionProposal {
    /// The arguments as compact JSON; the concatenation of a native call's `ArgsDelta`
    /// fragments equals this.
    pub fn arguments_json(&self) -> String {
        self.action.arguments().to_string()
    }
}
