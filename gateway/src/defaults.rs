//! What a model's profile decides for requests that do not say: plain settings, read from the
//! profile once, that the tool plan, validation and `bellows tune` take as given.

use codec::format::FormatId;
use codec::registry::PromptStyle;
use models::{GrammarMode, ReasoningSpec, Sampling};

/// What the model's profile decides for requests that do not say.
#[derive(Debug, Clone)]
pub struct Defaults {
    /// Sampling for fields a request leaves out.
    pub sampling: Sampling,
    /// The profile's protocol: the text protocol, or the native format the model was trained
    /// to call tools in.
    pub protocol: FormatId,
    /// The profile's grammar mode for tool requests under `tool_choice: "auto"`.
    pub grammar: GrammarMode,
    /// The profile's reasoning markers (by default every known family's; one pair a profile
    /// names; or off) and whether its replies start inside a reasoning block.
    pub reasoning: ReasoningSpec,
    pub starts_in_reasoning: bool,
    /// How the text protocol is taught in the system prompt.
    pub prompt_style: PromptStyle,
    /// How client tools reach the model under `tool_choice: "auto"`.
    pub tools_presentation: ToolsPresentation,
    /// The profile's actions per reply: `Some(1)` makes `parallel_tool_calls` default to
    /// false (one call, then generation stops).
    pub actions_per_turn: Option<u32>,
    /// The profile's measured figures, reported by `/v1/models`.
    pub measured: models::profile::Measured,
    /// Where `protocol` came from, for `/v1/models`: `profile NAME`, `chat template: …` (no
    /// profile matched, and the model's chat template teaches one tool-call format), or
    /// `default`.
    pub protocol_from: String,
}

/// How client tools reach the model under `tool_choice: "auto"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ToolsPresentation {
    /// The chat template's `tools` variable when the template renders it, else a system
    /// message.
    #[default]
    Template,
    /// Always a system message describing the tools and the `<tool_call>` form.
    System,
    /// A system message with one worked call.
    Example,
}

impl ToolsPresentation {
    pub const ALL: [ToolsPresentation; 3] = [
        ToolsPresentation::Template,
        ToolsPresentation::System,
        ToolsPresentation::Example,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            ToolsPresentation::Template => "template",
            ToolsPresentation::System => "system",
            ToolsPresentation::Example => "example",
        }
    }

    pub fn parse(s: &str) -> Option<ToolsPresentation> {
        ToolsPresentation::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

impl Default for Defaults {
    fn default() -> Self {
        Defaults {
            sampling: Sampling::default(),
            protocol: FormatId::Text,
            grammar: GrammarMode::Off,
            reasoning: ReasoningSpec::Known,
            starts_in_reasoning: false,
            prompt_style: PromptStyle::Full,
            tools_presentation: ToolsPresentation::Template,
            actions_per_turn: None,
            measured: models::profile::Measured::default(),
            protocol_from: DEFAULT_SOURCE.to_owned(),
        }
    }
}

/// [`Defaults::protocol_from`] when neither a profile nor the chat template chose.
pub const DEFAULT_SOURCE: &str = "default";

impl Defaults {
    /// From a profile's `protocol` (`text` or a native format name), sampling and grammar
    /// mode. An unknown protocol name falls back to the text protocol.
    pub fn from_profile(protocol: &str, sampling: Sampling, grammar: GrammarMode) -> Defaults {
        Defaults {
            sampling,
            protocol: FormatId::parse(protocol).unwrap_or(FormatId::Text),
            grammar,
            ..Defaults::default()
        }
    }

    /// Everything a profile decides for requests: protocol, sampling, grammar, reasoning,
    /// prompt style, tool presentation, actions per reply (a profile's names were checked
    /// when it was parsed).
    pub fn of_profile(p: &models::Profile) -> Defaults {
        Defaults {
            reasoning: p.reasoning.clone(),
            starts_in_reasoning: p.starts_in_reasoning,
            prompt_style: PromptStyle::parse(&p.prompt).unwrap_or_default(),
            tools_presentation: ToolsPresentation::parse(&p.tools).unwrap_or_default(),
            actions_per_turn: p.actions_per_turn,
            measured: p.measured.clone(),
            protocol_from: if p.name == models::Profile::generic().name {
                DEFAULT_SOURCE.to_owned()
            } else {
                format!("profile {}", p.name)
            },
            ..Defaults::from_profile(&p.protocol, p.sampling.clone(), p.grammar)
        }
    }

    /// When no profile chose the protocol (the generic profile), the tool-call format the
    /// model's chat template teaches (`codec::chat_template::tool_format`: `<tool_call>` is
    /// Hermes, `[TOOL_CALLS]` Mistral, …): client tool calls are then decoded in that format
    /// alone. A template that teaches none, or two, leaves the defaults as they are (every
    /// in-band format decoded).
    pub fn with_template_format(mut self, template: Option<&str>) -> Defaults {
        if self.protocol_from != DEFAULT_SOURCE {
            return self;
        }
        if let Some(found) = template.and_then(codec::chat_template::tool_format) {
            self.protocol = found.format;
            self.protocol_from = format!("chat template: {}", found.reason());
        }
        self
    }

    /// The form earlier client-tool calls are written back in: the profile's native format,
    /// else Hermes (what the tools system message asks for).
    pub fn call_format(&self) -> FormatId {
        match self.protocol {
            FormatId::Text | FormatId::OpenAi => FormatId::Hermes,
            f => f,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Qwen2.5's tool block, as its GGUF's chat template writes it (abridged).
    const HERMES_TEMPLATE: &str = "{%- if tools %}For each function call, return a json object \
        within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \
        \"arguments\": <args-json-object>}\n</tool_call>{%- endif %}";
    const CHATML: &str = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}\
        <|im_end|>\n{% endfor %}";

    #[test]
    fn the_chat_template_picks_the_format_only_when_no_profile_did() {
        let generic = Defaults::of_profile(&models::Profile::generic());
        assert_eq!(generic.protocol_from, DEFAULT_SOURCE);
        let picked = generic.clone().with_template_format(Some(HERMES_TEMPLATE));
        assert_eq!(picked.protocol, FormatId::Hermes);
        assert!(
            picked.protocol_from.starts_with("chat template: "),
            "{}",
            picked.protocol_from
        );
        assert!(picked.protocol_from.contains("<tool_call>"));
        // No tool syntax, or no template: every in-band format, as before.
        let plain = generic.clone().with_template_format(Some(CHATML));
        assert_eq!(
            (plain.protocol, plain.protocol_from.as_str()),
            (FormatId::Text, DEFAULT_SOURCE)
        );
        let none = generic.with_template_format(None);
        assert_eq!(none.protocol, FormatId::Text);
        // A profile's protocol stands, whatever the template says.
        let named = models::Profile::named("smollm2-135m-instruct").unwrap();
        let kept = Defaults::of_profile(&named).with_template_format(Some(HERMES_TEMPLATE));
        assert_eq!(kept.protocol_from, "profile smollm2-135m-instruct");
        assert_eq!(kept.protocol, FormatId::parse(&named.protocol).unwrap());
    }
}
