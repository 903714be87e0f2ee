//! [`FormatId`]: which format a proposal was written in. A plain name at the bottom of the crate,
//! so the action types can carry it without depending on the format machinery.

/// Which format produced a proposal; also the single-format decoder modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FormatId {
    /// bellows' text protocol: verb lines and SEARCH/REPLACE blocks.
    Text,
    /// Hermes / Qwen2.5: `<tool_call>{json}</tool_call>`, and the wrappers small models drift to
    /// (`<tools>{json}</tools>`, `<function name="f">{…}</function>`, …:
    /// [`crate::native::hermes_drift`]).
    Hermes,
    /// Qwen3-Coder: `<tool_call><function=name><parameter=p>v</parameter></function></tool_call>`;
    /// the same call in Seed-OSS's `<seed:tool_call>`, MiniMax-M2's
    /// `<minimax:tool_call><invoke name="f"><parameter name="p">v</parameter></invoke>…`
    /// ([`crate::native::xml_wrapped`]), and GLM-4.5's
    /// `<tool_call>f<arg_key>p</arg_key><arg_value>v</arg_value></tool_call>`.
    Qwen3Xml,
    /// Llama 3.x: `<|python_tag|>{json}` or a bare `{"name":…,"parameters":…}` line.
    Llama3,
    /// Mistral: `[TOOL_CALLS][{json},…]` (and the v11 `[TOOL_CALLS]name[ARGS]{json}` or
    /// `[TOOL_CALLS]name{json}`).
    Mistral,
    /// Pythonic: `[f(a=1), g(b="x")]`.
    Pythonic,
    /// JSON calls without a wrapper token: a bare `{"name":…,"arguments":…}` object, a list
    /// of them (xLAM-2, Hammer), or a `{"tool_calls": […]}` / `{"tool_call": {…}}` envelope
    /// (xLAM-1, llama.cpp's generic format), optionally in a ```json fence; and GLM-4-9B's
    /// reply of a tool's name on its first line and the JSON arguments after it
    /// ([`crate::native::name_line`]).
    BareJson,
    /// A start marker, a known body, an optional end marker: Jamba / Hunyuan / Apriel
    /// `<tool_calls>[…]</tool_calls>`, Nemotron `<TOOLCALL>[…]</TOOLCALL>`, Apertus
    /// `<|tools_prefix|>[{"f": {…}}]<|tools_suffix|>`, Command R7B
    /// `<|START_ACTION|>[…]<|END_ACTION|>`, Granite 3.0 `<|tool_call|>[…]`, Phi-4-mini
    /// `functools[…]`, InternLM `<|action_start|><|plugin|>{…}<|action_end|>`, LFM2
    /// `<|tool_call_start|>[f(a=1)]<|tool_call_end|>` (MiniCPM3: a ```python fence of calls), Llama 4 `<|python_start|>[f(a=1)]`, Olmo 3
    /// `<function_calls>` one pythonic call per line (one table, [`crate::native::marker_list`]).
    MarkerList,
    /// Gemma's `call:` form: FunctionGemma
    /// `<start_function_call>call:f{a:<escape>v<escape>}<end_function_call>` and Gemma 4
    /// `<|tool_call>call:f{a:<|"|>v<|"|>}<tool_call|>` ([`crate::native::gemma_call`]).
    GemmaCall,
    /// Calls between section markers, one table ([`crate::native::section`]): DeepSeek R1/V3
    /// `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f` + a ```json fence,
    /// DeepSeek V3.1 `<｜tool▁call▁begin｜>f<｜tool▁sep｜>{…}<｜tool▁call▁end｜>`, Kimi K2
    /// `<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{…}`.
    SectionCalls,
    /// gpt-oss harmony: `<|channel|>commentary to=functions.f <|constrain|>json<|message|>{…}<|call|>`;
    /// the `analysis` channel is reasoning ([`crate::native::harmony`]).
    Harmony,
    /// OpenAI `tool_calls` stream deltas from an upstream server (not in-band text).
    OpenAi,
}

impl FormatId {
    pub const ALL: &'static [FormatId] = &[
        FormatId::Text,
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
        FormatId::OpenAi,
    ];

    /// The stable name used on the command line (`--mode`), in corpora and in profiles.
    pub const fn as_str(self) -> &'static str {
        match self {
            FormatId::Text => "text",
            FormatId::Hermes => "hermes",
            FormatId::Qwen3Xml => "qwen3_xml",
            FormatId::Llama3 => "llama3",
            FormatId::Mistral => "mistral",
            FormatId::Pythonic => "pythonic",
            FormatId::BareJson => "bare_json",
            FormatId::MarkerList => "marker_list",
            FormatId::GemmaCall => "gemma_call",
            FormatId::SectionCalls => "section_calls",
            FormatId::Harmony => "harmony",
            FormatId::OpenAi => "openai",
        }
    }

    pub fn parse(s: &str) -> Option<FormatId> {
        FormatId::ALL.iter().copied().find(|f| f.as_str() == s)
    }
}

impl std::fmt::Display for FormatId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
