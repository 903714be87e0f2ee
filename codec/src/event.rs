//! Events a decoder emits, and the closed sets of repair and failure kinds.
//!
//! Kinds are `Copy` enums with a stable snake_case name: the name is what corpora, `bellows eval`,
//! the gateway's metrics labels and the OpenAI extension field all print, so a metric label can
//! never come from model- or request-supplied text.

use crate::action::ActionProposal;

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

macro_rules! kinds {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $var:ident = $s:literal,)* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($(#[$vm])* $var,)* }
        impl $name {
            /// Every kind, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$var,)*];
            /// The stable snake_case name used in reports, metrics and fixtures.
            pub const fn as_str(self) -> &'static str { match self { $($name::$var => $s,)* } }
            /// Inverse of [`Self::as_str`].
            pub fn parse(s: &str) -> Option<Self> { match s { $($s => Some($name::$var),)* _ => None } }
        }
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { f.write_str(self.as_str()) }
        }
    };
}

kinds! {
    /// A named repair: a malformation the decoder fixed because the intent was unambiguous.
    RepairKind {
        /// `>>>>>>> SEARCH`, `<<<<<<< REPLACE`: arrows pointing the wrong way.
        MarkerArrowDirection = "marker_arrow_direction",
        /// 3–6 or 8–9 arrows instead of 7.
        MarkerArrowCount = "marker_arrow_count",
        /// `<<<<<<< search`.
        MarkerCase = "marker_case",
        /// `<<<<<<<SEARCH`: no space between arrows and word.
        MarkerRunTogether = "marker_run_together",
        /// Trailing spaces or tabs after a marker or divider.
        MarkerTrailingSpace = "marker_trailing_space",
        /// A divider of 3–6 or 8–9 `=`.
        DividerLength = "divider_length",
        /// A block wrapped in a code fence.
        FencedBlock = "fenced_block",
        /// The path on the line before the fence (aider style) instead of an `EDIT` header.
        PathBeforeFence = "path_before_fence",
        /// The path on the fence line itself: "```src/a.py".
        PathOnFence = "path_on_fence",
        /// A block with no header following a block for the same file.
        InheritedPath = "inherited_path",
        /// CRLF line endings normalised to LF.
        Crlf = "crlf",
        /// An `EDIT` header whose blocks all have an empty SEARCH part became a `CREATE`,
        /// or a `CREATE` written with a non-empty SEARCH part became an `EDIT`.
        EditCreateSwap = "edit_create_swap",
        /// A native-looking JSON tool call inside text mode.
        NativeInTextMode = "native_in_text_mode",
        /// `</tool_call>` inside a JSON string did not end the call.
        CloseTagInString = "close_tag_in_string",
        /// Arguments written as a Python literal (single quotes, True/False/None).
        PythonLiteral = "python_literal",
        /// `"arguments"` before `"name"`.
        ArgumentsBeforeName = "arguments_before_name",
        /// Arguments given as a JSON-encoded string.
        ArgumentsAsString = "arguments_as_string",
        /// Trailing prose or markup after the last call, inside the call's wrapper.
        TrailingAfterCall = "trailing_after_call",
        /// A JSON object left unclosed at end of stream, closed because nothing was missing
        /// but closing brackets.
        UnclosedJson = "unclosed_json",
        /// A missing closing tag (`</tool_call>`, `</function>`) at end of stream or before
        /// the next call.
        MissingCloseTag = "missing_close_tag",
        /// A block body's last line had no newline before the marker/end; one was added.
        MissingFinalNewline = "missing_final_newline",
        /// A JSON tool call wrapped in a ```json fence.
        FencedJson = "fenced_json",
        /// Argument names or tool names in a different case/alias (`file_path` for `path`).
        ArgumentAlias = "argument_alias",
        /// `"parameters"` as the arguments key where the format's own key is `"arguments"`.
        ParametersKey = "parameters_key",
        /// A call written in the OpenAI `tool_calls` item shape,
        /// `{"type": "function", "function": {"name": …, "arguments": …}}`.
        NestedFunction = "nested_function",
    }
}

kinds! {
    /// A named failure: the model clearly started an action, and it could not be repaired
    /// safely. A failure never produces an action.
    FailureKind {
        /// The stream ended inside a SEARCH/REPLACE block.
        TruncatedBlock = "truncated_block",
        /// A SEARCH part with no divider before the REPLACE marker.
        MissingDivider = "missing_divider",
        /// A block with no path: no header, no fence path, no earlier block to inherit from.
        MissingPath = "missing_path",
        /// A verb line whose arguments do not parse (e.g. `MOVE a` with no `->`).
        BadVerbLine = "bad_verb_line",
        /// Tool arguments that fail the tool's schema.
        BadArguments = "bad_arguments",
        /// A call to a tool the registry does not know.
        UnknownTool = "unknown_tool",
        /// JSON that ended before it was complete and could not be closed safely.
        TruncatedJson = "truncated_json",
        /// JSON (or a Python literal) that is not well-formed.
        InvalidJson = "invalid_json",
        /// A call with no tool name.
        MissingName = "missing_name",
        /// A held candidate grew past the decoder's buffer cap.
        TooLong = "too_long",
        /// A `CREATE` with more than one block, or an `EDIT` with no blocks.
        BadBlockCount = "bad_block_count",
    }
}
