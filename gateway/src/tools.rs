//! Tool calling: the one module that couples the gateway to the codec's registry and decoder.
//!
//! A request's `tools`, `tool_choice` and `bellows.protocol` become a [`ToolPlan`]: what the
//! chat template is shown, which system prompt is prepended, which grammar constrains the
//! model, and how the reply is decoded. Three plans exist:
//!
//! * **none** — no tools (or `tool_choice: "none"`): the reply is plain content.
//! * **native** — the client's tools go to the chat template's `tools`; the reply is decoded in
//!   the codec's `auto` mode (every in-band native format), and calls come back as OpenAI
//!   `tool_calls`. With `tool_choice: "required"` or a named tool, a JSON-schema grammar makes
//!   the model write exactly one bare `{"name": …, "arguments": …}` object naming an allowed
//!   tool with schema-valid arguments, so the call always decodes.
//! * **text** (the `"bellows": {"protocol": "text"}` extension) — the model is taught bellows'
//!   text protocol through the registry's system prompt, and every decoded `ActionProposal`
//!   comes back as a tool call named by the registry (`read`, `edit`, …) with its format and
//!   repairs in a `bellows` extension field.

use std::sync::Arc;

use codec::format::FormatId;
use codec::{Mode, Registry, TurnDecoder};
use models::{ChatMessage, EngineError, GrammarSpec, ToolSpec};

use crate::api::request::{BellowsOptions, ProtocolChoice, Tool, ToolChoice, ToolChoiceMode};
use crate::error::ApiError;

/// How a chat request's reply is produced and decoded.
#[derive(Debug, Clone)]
pub struct ToolPlan {
    kind: PlanKind,
}

#[derive(Debug, Clone)]
enum PlanKind {
    None,
    Native {
        registry: Arc<Registry>,
        specs: Vec<ToolSpec>,
        mode: Mode,
        grammar: Option<GrammarSpec>,
    },
    Text {
        registry: Arc<Registry>,
        grammar: Option<GrammarSpec>,
    },
}

impl ToolPlan {
    /// A plan that decodes nothing.
    pub fn none() -> ToolPlan {
        ToolPlan {
            kind: PlanKind::None,
        }
    }

    /// True when the reply goes through the codec.
    pub fn decodes(&self) -> bool {
        !matches!(self.kind, PlanKind::None)
    }

    /// True for the text-protocol extension, whose calls carry a `bellows` field.
    pub fn is_text_protocol(&self) -> bool {
        matches!(self.kind, PlanKind::Text { .. })
    }

    /// Text to put before the conversation's own system prompt.
    pub fn system_prompt(&self) -> Option<String> {
        match &self.kind {
            PlanKind::Text { registry, .. } => Some(registry.system_prompt()),
            _ => None,
        }
    }

    /// Tools for the chat template's `tools` variable.
    pub fn template_tools(&self) -> Vec<ToolSpec> {
        match &self.kind {
            PlanKind::Native { specs, .. } => specs.clone(),
            _ => Vec::new(),
        }
    }

    pub fn grammar(&self) -> Option<GrammarSpec> {
        match &self.kind {
            PlanKind::Native { grammar, .. } | PlanKind::Text { grammar, .. } => grammar.clone(),
            PlanKind::None => None,
        }
    }

    /// A fresh decoder for one reply, or `None` when the reply is plain content.
    pub fn decoder(&self) -> Option<TurnDecoder> {
        match &self.kind {
            PlanKind::None => None,
            PlanKind::Native { registry, mode, .. } => {
                Some(TurnDecoder::new(*mode, Arc::clone(registry)))
            }
            PlanKind::Text { registry, .. } => {
                Some(TurnDecoder::new(Mode::Auto, Arc::clone(registry)))
            }
        }
    }

    /// Whether a call to `name` may reach the client. The codec's registry always knows the
    /// builtin tools; in native mode the client declared its own and must see only those.
    pub fn exposes(&self, name: &str) -> bool {
        match &self.kind {
            PlanKind::None => false,
            PlanKind::Native { specs, .. } => specs.iter().any(|s| s.name == name),
            PlanKind::Text { registry, .. } => registry.is_known(name),
        }
    }
}

/// Builds the plan for a request.
pub fn plan(
    tools: Option<&[Tool]>,
    choice: Option<&ToolChoice>,
    bellows: Option<&BellowsOptions>,
    native_mode: Mode,
) -> Result<ToolPlan, ApiError> {
    let tools = tools.unwrap_or_default();
    let protocol = bellows
        .and_then(|b| b.protocol)
        .unwrap_or(ProtocolChoice::Native);
    // In native mode the client's tools are the only tools: a client tool named `read` or
    // `edit` is the client's own, validated against its own schema. The text protocol is
    // bellows' action space, so it keeps the builtins beside any client tools.
    let mut registry = match protocol {
        ProtocolChoice::Text => Registry::builtin(),
        _ => Registry::client_only(),
    };
    let mut specs = Vec::with_capacity(tools.len());
    for (i, t) in tools.iter().enumerate() {
        if t.kind != "function" {
            return Err(ApiError::invalid(
                format!("tools[{i}].type"),
                format!("{:?}; only \"function\" tools exist", t.kind),
            ));
        }
        let f = &t.function;
        let parameters = f
            .parameters
            .clone()
            .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}}));
        let description = f.description.clone().unwrap_or_default();
        registry
            .add_client_tool(&f.name, &description, parameters.clone())
            .map_err(|e| client_tool_error(i, e))?;
        specs.push(ToolSpec {
            name: f.name.clone(),
            description,
            parameters,
        });
    }
    let choice = resolve_choice(choice, &specs)?;
    let registry = Arc::new(registry);
    if protocol == ProtocolChoice::Text {
        let grammar = match choice {
            Choice::None | Choice::Auto => None,
            Choice::Required | Choice::Named(_) => Some(GrammarSpec::Strict {
                gbnf: registry.text_protocol_gbnf(),
                root: "root".to_owned(),
            }),
        };
        return Ok(ToolPlan {
            kind: PlanKind::Text { registry, grammar },
        });
    }
    let (grammar, mode) = match choice {
        Choice::None => return Ok(ToolPlan::none()),
        Choice::Auto => (None, native_mode),
        Choice::Required => (
            Some(call_grammar(specs.iter())),
            Mode::Only(FormatId::BareJson),
        ),
        Choice::Named(i) => (
            Some(call_grammar(specs[i..=i].iter())),
            Mode::Only(FormatId::BareJson),
        ),
    };
    Ok(ToolPlan {
        kind: PlanKind::Native {
            registry,
            specs,
            mode,
            grammar,
        },
    })
}

/// The 400 for a client tool the registry refused.
fn client_tool_error(i: usize, e: codec::registry::RegistryError) -> ApiError {
    use codec::registry::{BUILTINS, RegistryError};
    match e {
        RegistryError::InvalidSchema { .. } => {
            ApiError::invalid(format!("tools[{i}].function.parameters"), e.to_string())
        }
        // With the text protocol the registry holds bellows' builtin tools, whose names are
        // reserved in any letter case; say so rather than "taken".
        RegistryError::NameClash(name)
            if BUILTINS.iter().any(|t| t.name.eq_ignore_ascii_case(&name)) =>
        {
            ApiError::unsupported(
                format!("tools[{i}].function.name"),
                format!(
                    "{name:?} is the name of a bellows builtin tool, reserved in this version; \
                     rename the tool"
                ),
            )
        }
        _ => ApiError::invalid(format!("tools[{i}].function.name"), e.to_string()),
    }
}

enum Choice {
    None,
    Auto,
    Required,
    /// Index into the declared tools.
    Named(usize),
}

fn resolve_choice(choice: Option<&ToolChoice>, specs: &[ToolSpec]) -> Result<Choice, ApiError> {
    let none_declared = |what: &str| {
        ApiError::invalid(
            "tool_choice",
            format!("{what} needs at least one tool in `tools`"),
        )
    };
    match choice {
        None if specs.is_empty() => Ok(Choice::None),
        None | Some(ToolChoice::Mode(ToolChoiceMode::Auto)) => {
            if specs.is_empty() {
                Ok(Choice::None)
            } else {
                Ok(Choice::Auto)
            }
        }
        Some(ToolChoice::Mode(ToolChoiceMode::None)) => Ok(Choice::None),
        Some(ToolChoice::Mode(ToolChoiceMode::Required)) => {
            if specs.is_empty() {
                return Err(none_declared("\"required\""));
            }
            Ok(Choice::Required)
        }
        Some(ToolChoice::Named(n)) => {
            if n.kind != "function" {
                return Err(ApiError::invalid(
                    "tool_choice.type",
                    "must be \"function\"",
                ));
            }
            specs
                .iter()
                .position(|s| s.name == n.function.name)
                .map(Choice::Named)
                .ok_or_else(|| {
                    ApiError::invalid(
                        "tool_choice.function.name",
                        format!("{:?} is not one of the declared tools", n.function.name),
                    )
                })
        }
    }
}

/// A JSON schema admitting exactly one call `{"name": N, "arguments": A}` to one of `specs`,
/// with `A` valid against that tool's parameters. The engine compiles it to a grammar.
fn call_grammar<'a>(specs: impl Iterator<Item = &'a ToolSpec>) -> GrammarSpec {
    let variants: Vec<serde_json::Value> = specs
        .map(|s| {
            serde_json::json!({
                "type": "object",
                "properties": {
                    "name": {"const": s.name},
                    "arguments": s.parameters,
                },
                "required": ["name", "arguments"],
                "additionalProperties": false,
            })
        })
        .collect();
    let schema = match <[serde_json::Value; 1]>::try_from(variants) {
        Ok([one]) => one,
        Err(many) => serde_json::json!({ "anyOf": many }),
    };
    GrammarSpec::JsonSchema(schema)
}

/// How an earlier assistant tool call is written back into the prompt: the Hermes form, which
/// most small chat models were trained on and every decoder mode reads.
pub fn render_past_call(name: &str, arguments: &serde_json::Value) -> String {
    let call = serde_json::json!({"name": name, "arguments": arguments});
    format!("<tool_call>\n{call}\n</tool_call>\n")
}

/// Makes sure the model sees the tools. Many small models' chat templates ignore the `tools`
/// variable (the tools would silently vanish, as they do in other servers); when rendering
/// with and without them gives the same prompt, the tools are described in a system message
/// instead, asking for Hermes-style `<tool_call>` lines, which every decoder mode reads.
pub fn fit_to_template(
    messages: &mut Vec<ChatMessage>,
    tools: &mut Vec<ToolSpec>,
    render: impl Fn(&[ChatMessage], &[ToolSpec]) -> Result<String, EngineError>,
) -> Result<(), EngineError> {
    if tools.is_empty() || render(messages, tools)? != render(messages, &[])? {
        return Ok(());
    }
    let text = tools_system_prompt(tools);
    tools.clear();
    match messages.first_mut() {
        Some(first) if first.role == "system" => {
            first.content = format!("{}\n\n{text}", first.content);
        }
        _ => messages.insert(
            0,
            ChatMessage {
                role: "system".to_owned(),
                content: text,
            },
        ),
    }
    Ok(())
}

/// The system-prompt text describing client tools when the template cannot.
pub fn tools_system_prompt(tools: &[ToolSpec]) -> String {
    let mut s = String::from(
        "You can call tools. Each tool is one JSON object inside <tools></tools>:\n<tools>\n",
    );
    for t in tools {
        let spec = serde_json::json!({
            "name": t.name,
            "description": t.description,
            "parameters": t.parameters,
        });
        s.push_str(&spec.to_string());
        s.push('\n');
    }
    s.push_str(
        "</tools>\nTo call a tool, write a line <tool_call>{\"name\": TOOL_NAME, \"arguments\": \
         {ARGUMENTS}}</tool_call> with arguments that match its parameters. When no tool is \
         needed, answer in plain text.",
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.to_owned(),
            description: "d".to_owned(),
            parameters: serde_json::json!({"type": "object"}),
        }
    }

    fn user() -> Vec<ChatMessage> {
        vec![ChatMessage {
            role: "user".to_owned(),
            content: "hi".to_owned(),
        }]
    }

    #[test]
    fn a_template_that_ignores_tools_gets_them_in_a_system_message() {
        let (mut messages, mut tools) = (user(), vec![spec("get_weather")]);
        let blind = |m: &[ChatMessage], _t: &[ToolSpec]| Ok(format!("{m:?}"));
        fit_to_template(&mut messages, &mut tools, blind).expect("renders");
        assert!(tools.is_empty());
        assert_eq!(messages[0].role, "system");
        assert!(
            messages[0].content.contains(r#""name":"get_weather""#),
            "{}",
            messages[0].content
        );
        assert!(messages[0].content.contains("<tool_call>"));
        assert_eq!(messages[1].content, "hi");
    }

    #[test]
    fn a_template_that_renders_tools_keeps_them() {
        let (mut messages, mut tools) = (user(), vec![spec("get_weather")]);
        let aware = |m: &[ChatMessage], t: &[ToolSpec]| Ok(format!("{m:?}{t:?}"));
        fit_to_template(&mut messages, &mut tools, aware).expect("renders");
        assert_eq!(tools.len(), 1);
        assert_eq!(messages.len(), 1);
    }
}
