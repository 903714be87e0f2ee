//! The closed sets of named repairs and failures, at the bottom of the crate.
//!
//! Kinds are `Copy` enums with a stable snake_case name: the name is what corpora, `bellows eval`,
//! the gateway's metrics labels and the OpenAI extension field all print, so a metric label can
//! never come from model- or request-supplied text. They depend on nothing else in the crate, so
//! the action types (which carry repairs) and the events (which carry failures) can both use them.

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
        /// A block wrapped in a code fence: backticks, or one of the tag fences aider uses when
        /// a file holds backticks (`<source>`, `<code>`, `<pre>`, `<codeblock>`,
        /// `<sourcecode>`).
        FencedBlock = "fenced_block",
        /// The path on the line before the fence or the SEARCH marker (aider style) instead of
        /// an `EDIT` header, possibly decorated as aider allows (`**a.py**`, `` `a.py` ``,
        /// `a.py:`, `### a.py`); one blank line may separate it from the fence, and it may be
        /// the fence's first line, right above the marker. A path has a `/` or an extension,
        /// or is a dotfile or a well-known extensionless name (`Makefile`, `Dockerfile`).
        PathBeforeFence = "path_before_fence",
        /// The path on the fence line itself: "```src/a.py".
        PathOnFence = "path_on_fence",
        /// A block with no header following a block for the same file.
        InheritedPath = "inherited_path",
        /// CRLF line endings normalised to LF.
        Crlf = "crlf",
        /// A `CREATE` written with a non-empty SEARCH part became an `EDIT`: its SEARCH lines
        /// must still match the file, so nothing is overwritten that the model did not quote.
        /// (The other direction never happens: only a `CREATE` header yields `create`.)
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
        /// An edit block with an empty SEARCH part, anywhere but under a `CREATE` header. It
        /// stays an `edit` whose block has an empty `search`: append the REPLACE text to the
        /// file, or create the file when it is missing (aider's reading of an empty SEARCH). It
        /// is never turned into a `create`, which would overwrite a whole file. One per such
        /// block; a proposal holding an empty-SEARCH block always carries it.
        EmptySearchEdit = "empty_search_edit",
        /// A second divider line ended a REPLACE part that no REPLACE marker closed: the
        /// stream ended, or a SEARCH marker came first. Aider accepts a divider
        /// in place of the REPLACE marker; the lines after it are not part of the block and are
        /// read as prose again. (A divider followed by the block's REPLACE marker is content.)
        DividerClosesReplace = "divider_closes_replace",
        /// A divider line right before the REPLACE marker (`=======`, then `>>>>>>> REPLACE`)
        /// in an aider-style block (under a path line or fence, not an `EDIT`/`CREATE` header),
        /// where it cannot underline a heading (the REPLACE part is empty, or its last line is
        /// blank or indented as code): the block was closed twice. The divider ends the REPLACE
        /// part, as aider's parser reads it, and the marker closes the block.
        DividerBeforeReplace = "divider_before_replace",
        /// `<<<<<<< SEARCH>`: a stray `>` after a SEARCH marker's word (aider's SEARCH pattern
        /// allows it).
        MarkerTrailingAngle = "marker_trailing_angle",
        /// A Hermes call object in another wrapper than `<tool_call>`: `<function_call>`,
        /// `<tool>`, `<tools>`, `<json>`, `<response>`, `<xml>`, `<JSON>`, or
        /// `<function name="f">{arguments}</function>` (the drift llama.cpp's Hermes parser
        /// accepts; see `native::hermes_drift`).
        HermesWrapper = "hermes_wrapper",
        /// A whole-file block written as a diff of the file (`-` and `+` lines), read as the
        /// change it shows because its unmarked and `-` lines are the file exactly (or as the
        /// file itself, when its unmarked and `+` lines are). The agent's whole protocol.
        DiffMarkersInFile = "diff_markers_in_file",
        /// A whole-file block that holds only some of the file's top-level definitions,
        /// spliced in: each of its definitions replaces the file's one of the same name, the
        /// rest of the file kept (the agent's `splice`). The agent's whole protocol.
        PartialFileMerged = "partial_file_merged",
        /// A fenced block with no path line above it whose definitions are all top-level
        /// definitions of one file of the repository, and of no other: written into that
        /// file (spliced as [`Self::PartialFileMerged`]). The agent's whole protocol.
        BlockPlacedByDefinitions = "block_placed_by_definitions",
        /// Pythonic calls written without the list's brackets: `f(a=1)` on a line of its
        /// own (NexusRaven's `f(a=1);`, several joined by `,` or `;`), or lines of calls in a
        /// fence that holds nothing else (see `native::bare_call`).
        BareCall = "bare_call",
        /// A pythonic call's arguments given by position, mapped onto the tool's parameters
        /// in the order its schema declares them.
        PositionalArguments = "positional_arguments",
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
        /// A whole-file block still open when the reply hit its token limit.
        TruncatedFile = "truncated_file",
        /// A whole-file block whose reply ended right after its opening fence: no line of
        /// content and no closing fence, so whether the file is to be emptied is not said.
        EmptyUnclosedFile = "empty_unclosed_file",
        /// A bare pythonic call to a declared tool whose arguments are not all literals
        /// (`n=5 * 2`, a variable), written as the reply's one attempt at a call, on a line
        /// (or in a fence) of its own with nothing but blanks after it to the reply's end: a
        /// value would be a guess (see `native::bare_call`).
        ExpressionArgument = "expression_argument",
    }
}
