//! Events a decoder emits. The closed sets of repair and failure kinds they name live in
//! [`crate::repair`] and are re-exported here.

use crate::action::ActionProposal;
pub use crate::repair::{FailureKind, RepairKind};

/// One thing a decoder learned from the bytes fed so far. Nothing emitted is ever retracted.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// Prose, released as soon as no later byte could turn it into part of an action.
    Text(String),
    /// Text inside reasoning markers (`<think>`…`</think>` by default), markers excluded.
    /// It is never decoded into actions. Released as it arrives, except bytes that could
    /// begin the closing marker.
    Reasoning(String),
    /// A native tool call whose tool name is now certain (and known to the registry).
    /// `index` counts calls (native and text-protocol proposals alike) within the turn, from 0.
    ToolCallStart { index: usize, name: String },
    /// A fragment of the call's arguments JSON. The concatenation of all fragments for an
    /// index equals `ActionProposal::arguments_json()` of the proposal that closes it.
    ArgsDelta { index: usize, fragment: String },
    /// A complete, validated action. Emitted when its terminator arrives, never earlier.
    Proposal {
        index: usize,
        proposal: ActionProposal,
    },
    /// A malformation that could not be repaired safely. `raw` is the text that was consumed
    /// and not turned into an action, so nothing is lost. If a `ToolCallStart` for `index`
    /// was emitted, `index` is `Some` and that call is closed as failed.
    Failure {
        index: Option<usize>,
        kind: FailureKind,
        raw: String,
    },
}
