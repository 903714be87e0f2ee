//! Tool calling: the one module that couples the gateway to the codec's registry and decoder.
//!
//! A request's `tools`, `tool_choice`, `parallel_tool_calls` and `bellows.protocol` become a
//! [`ToolPlan`]: what the chat template is shown, which system prompt is prepended, which
//! grammar constrains the model, how the reply is decoded, and how earlier calls are written
//! back into the prompt. Three plans exist:
//!
//! * **none** — no tools (or `tool_choice: "none"`): the reply is plain content.
//! * **native** — the client's tools go to the chat template's `tools`; the reply is decoded
//!   with a registry holding only the client's tools, in every in-band native format (or the
//!   profile's one format), and calls come back as OpenAI `tool_calls`. Prose — bellows' own
//!   verbs and edit blocks included — stays prose. With `tool_choice: "required"` or a named
//!   tool, a JSON-schema grammar makes the model write exactly one bare
//!   `{"name": …, "arguments": …}` object naming an allowed tool with schema-valid arguments,
//!   so the call always decodes. With `auto` and a profile whose grammar mode is `lazy`, a
//!   lazy grammar switches on at the call opener (`<tool_call>`), so a call the model opens is
//!   always well-formed while prose stays free.
//! * **text** (the `"bellows": {"protocol": "text"}` extension) — the model is taught bellows'
//!   text protocol through the registry's system prompt, and every decoded `ActionProposal`
//!   comes back as a tool call named by the registry (`read`, `edit`, …) with its format and
//!   repairs in a `bellows` extension field. The builtins are tools, so `required` needs no
//!   client tools, and a named builtin restricts the grammar to that one action.
//!
//! Whether argument fragments may stream before a call is complete is part of the plan: only
//! when a grammar guarantees that every call the decoder starts will validate.

use std::sync::Arc;

use codec::format::FormatId;
use codec::registry::PromptStyle;
use codec::{Mode, Registry, TurnDecoder};
use models::{ChatMessage, GrammarMode, GrammarSpec, ReasoningSpec, ToolSpec};

use crate::api::request::{BellowsOptions, ProtocolChoice, Tool, ToolChoice, ToolChoiceMode};
use crate::defaults::{Defaults, ToolsPresentation};
use crate::error::ApiError;

/// How a chat request's reply is produced and decoded.
#[derive(Debug, Clone)]
pub struct ToolPlan {
    kind: PlanKind,
    /// `parallel_tool_calls`: when false, generation stops after the first call.
    parallel: bool,
    /// How earlier calls are written back into the prompt.
    call_format: FormatId,
    /// Reasoning markers and whether the reply starts inside them; `None` leaves reasoning
    /// markers as plain text (raw completions).
    reasoning: Option<Reasoning>,
}

/// How a reply's reasoning is told from its answer.
#[derive(Debug, Clone)]
struct Reasoning {
    markers: ReasoningSpec,
    starts_inside: bool,
}

#[derive(Debug, Clone)]
enum PlanKind {
    None,
    Native {
        registry: Arc<Registry>,
        specs: Vec<ToolSpec>,
        mode: Mode,
        grammar: Option<GrammarSpec>,
        /// The grammar forces every decoded call to be schema-valid.
        guaranteed: bool,
    },
    Text {
        registry: Arc<Registry>,
        grammar: Option<GrammarSpec>,
        guaranteed: bool,
        style: PromptStyle,
    },
}

impl ToolPlan {
    /// A plan that decodes nothing.
    pub fn none() -> ToolPlan {
        ToolPlan {
            kind: PlanKind::None,
            parallel: true,
            call_format: FormatId::Hermes,
            reasoning: None,
        }
    }

    /// The plan with the profile's reasoning markers applied to its decoder (every known
    /// family's unless the profile names a pair or none): a chat reply's reasoning is split
    /// from its answer (and never decoded into actions), tools or not.
    pub fn with_reasoning(mut self, defaults: &Defaults) -> ToolPlan {
        self.reasoning = Some(Reasoning {
            markers: defaults.reasoning.clone(),
            starts_inside: defaults.starts_in_reasoning,
        });
        self
    }

    /// True when the reply goes through the codec.
    pub fn decodes(&self) -> bool {
        !matches!(self.kind, PlanKind::None)
    }

    /// True for the text-protocol extension, whose calls carry a `bellows` field.
    pub fn is_text_protocol(&self) -> bool {
        matches!(self.kind, PlanKind::Text { .. })
    }

    /// The registry replies are decoded against (`None` when nothing is decoded).
    pub fn registry(&self) -> Option<&Arc<Registry>> {
        match &self.kind {
            PlanKind::None => None,
            PlanKind::Native { registry, .. } | PlanKind::Text { registry, .. } => Some(registry),
        }
    }

    /// Whether several calls may come back in one reply.
    pub fn parallel(&self) -> bool {
        self.parallel
    }

    /// Whether a call's argument fragments may go to the client as they are generated: only
    /// when a grammar guarantees the call will validate. Otherwise a call is sent whole, once
    /// its arguments validated, so a client never receives a call it must not run.
    pub fn streams_arguments(&self) -> bool {
        match &self.kind {
            PlanKind::None => false,
            PlanKind::Native { guaranteed, .. } | PlanKind::Text { guaranteed, .. } => *guaranteed,
        }
    }

    /// Text to put before the conversation's own system prompt.
    pub fn system_prompt(&self) -> Option<String> {
        match &self.kind {
            PlanKind::Text {
                registry, style, ..
            } => Some(registry.system_prompt_styled(*style)),
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
        let decoder = match &self.kind {
            // No tools: a decoder that decodes no action, only tells reasoning from answer.
            PlanKind::None => match &self.reasoning {
                Some(r) if !r.markers.is_off() => TurnDecoder::new(
                    Mode::Only(FormatId::OpenAi),
                    Arc::new(Registry::client_only()),
                ),
                _ => return None,
            },
            PlanKind::Native { registry, mode, .. } => {
                TurnDecoder::new(*mode, Arc::clone(registry))
            }
            PlanKind::Text { registry, .. } => TurnDecoder::new(Mode::Auto, Arc::clone(registry)),
        };
        Some(match &self.reasoning {
            None => decoder,
            Some(r) => {
                // A new decoder knows every family's markers; a profile's pair replaces them.
                let decoder = match &r.markers {
                    ReasoningSpec::Known => decoder,
                    ReasoningSpec::Pair { open, close } => {
                        decoder.with_reasoning_markers(open, close)
                    }
                    ReasoningSpec::Off => decoder.with_reasoning_markers("", ""),
                };
                decoder.starts_in_reasoning(r.starts_inside)
            }
        })
    }

    /// Whether a call to `name` may reach the client: one the client declared (native), or
    /// one the registry knows (text protocol, whose builtins are tools).
    pub fn exposes(&self, name: &str) -> bool {
        match &self.kind {
            PlanKind::None => false,
            PlanKind::Native { specs, .. } => specs.iter().any(|s| s.name == name),
            PlanKind::Text { registry, .. } => registry.is_known(name),
        }
    }

    /// How an earlier assistant call is written back into the prompt: in the form this plan
    /// asks the model to write calls in, so the model sees its own convention in its history.
    /// With the text protocol a builtin call is rendered as its text-protocol action.
    pub fn render_past_call(&self, name: &str, arguments: &serde_json::Value) -> String {
        if self.is_text_protocol()
            && let Some(action) = builtin_action(name, arguments)
        {
            return codec::render::render(&action);
        }
        render_call(self.call_format, name, arguments)
    }
}

/// A builtin call's arguments as the action they describe, when they are one.
fn builtin_action(name: &str, arguments: &serde_json::Value) -> Option<codec::Action> {
    codec::registry::builtin(name)?;
    let gold = serde_json::json!({"name": name, "arguments": arguments});
    codec::Action::from_gold(&gold).ok()
}

/// One call written in `format`, ending with a newline. Every form is one the codec decodes
/// in that format's mode (a test checks each round trip).
pub fn render_call(format: FormatId, name: &str, arguments: &serde_json::Value) -> String {
    let object = |key: &str| {
        let mut m = serde_json::Map::new();
        m.insert(
            "name".to_owned(),
            serde_json::Value::String(name.to_owned()),
        );
        m.insert(key.to_owned(), arguments.clone());
        serde_json::Value::Object(m)
    };
    match format {
        FormatId::Llama3 => format!("<|python_tag|>{}\n", object("parameters")),
        FormatId::Mistral => format!("[TOOL_CALLS][{}]\n", object("arguments")),
        FormatId::BareJson => format!("{}\n", object("arguments")),
        // The family's first row (Jamba, Hunyuan, Apriel): which row a profile's model writes
        // is not known here, and every row decodes in this format's mode.
        FormatId::MarkerList => format!("<tool_calls>[{}]</tool_calls>\n", object("arguments")),
        // FunctionGemma's dialect (the small one bellows serves); Gemma 4's decodes in the same
        // mode.
        // DeepSeek R1/V3's form (the R1 distills are the small models of the family); V3.1's
        // and Kimi K2's decode in the same mode.
        FormatId::SectionCalls => format!(
            "<\u{ff5c}tool\u{2581}calls\u{2581}begin\u{ff5c}><\u{ff5c}tool\u{2581}call\u{2581}begin\u{ff5c}>function\
             <\u{ff5c}tool\u{2581}sep\u{ff5c}>{name}\n```json\n{arguments}\n```<\u{ff5c}tool\u{2581}call\u{2581}end\u{ff5c}>\
             <\u{ff5c}tool\u{2581}calls\u{2581}end\u{ff5c}>\n"
        ),
        FormatId::Harmony => format!(
            "<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>{arguments}<|call|>\n"
        ),
        FormatId::GemmaCall => format!(
            "<start_function_call>call:{name}{}<end_function_call>\n",
            gemma_value(arguments)
        ),
        FormatId::Qwen3Xml => {
            let mut s = format!("<tool_call>\n<function={name}>\n");
            if let Some(obj) = arguments.as_object() {
                for (k, v) in obj {
                    let v = match v {
                        serde_json::Value::String(t) => t.clone(),
                        other => other.to_string(),
                    };
                    s.push_str(&format!("<parameter={k}>\n{v}\n</parameter>\n"));
                }
            }
            s.push_str("</function>\n</tool_call>\n");
            s
        }
        FormatId::Pythonic => match pythonic_call(name, arguments) {
            Some(call) => format!("[{call}]\n"),
            None => format!("<tool_call>\n{}\n</tool_call>\n", object("arguments")),
        },
        FormatId::Hermes | FormatId::Text | FormatId::OpenAi => {
            format!("<tool_call>\n{}\n</tool_call>\n", object("arguments"))
        }
    }
}

/// A JSON value in FunctionGemma's argument syntax: bare keys (quoted like strings when they
/// hold other characters than a name's), strings between `<escape>` tokens, other scalars as
/// JSON writes them.
fn gemma_value(v: &serde_json::Value) -> String {
    const QUOTE: &str = "<escape>";
    let key = |k: &str| {
        if !k.is_empty()
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        {
            k.to_owned()
        } else {
            format!("{QUOTE}{k}{QUOTE}")
        }
    };
    match v {
        serde_json::Value::String(s) => format!("{QUOTE}{s}{QUOTE}"),
        serde_json::Value::Array(a) => {
            let items: Vec<String> = a.iter().map(gemma_value).collect();
            format!("[{}]", items.join(","))
        }
        serde_json::Value::Object(o) => {
            let items: Vec<String> = o
                .iter()
                .map(|(k, v)| format!("{}:{}", key(k), gemma_value(v)))
                .collect();
            format!("{{{}}}", items.join(","))
        }
        other => other.to_string(),
    }
}

/// `name(k=v, …)` with Python literals, when the name and keys are identifiers.
fn pythonic_call(name: &str, arguments: &serde_json::Value) -> Option<String> {
    fn ident(s: &str) -> bool {
        let mut c = s.chars();
        c.next()
            .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
            && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
    }
    fn literal(v: &serde_json::Value) -> String {
        match v {
            serde_json::Value::Null => "None".to_owned(),
            serde_json::Value::Bool(true) => "True".to_owned(),
            serde_json::Value::Bool(false) => "False".to_owned(),
            serde_json::Value::Array(a) => {
                let items: Vec<String> = a.iter().map(literal).collect();
                format!("[{}]", items.join(", "))
            }
            serde_json::Value::Object(o) => {
                let items: Vec<String> = o
                    .iter()
                    .map(|(k, v)| {
                        format!("{}: {}", serde_json::Value::String(k.clone()), literal(v))
                    })
                    .collect();
                format!("{{{}}}", items.join(", "))
            }
            other => other.to_string(),
        }
    }
    if !ident(name) {
        return None;
    }
    let obj = arguments.as_object()?;
    let mut parts = Vec::with_capacity(obj.len());
    for (k, v) in obj {
        if !ident(k) {
            return None;
        }
        parts.push(format!("{k}={}", literal(v)));
    }
    Some(format!("{name}({})", parts.join(", ")))
}

/// Declares a request's `tools` in `registry` (each a `function` with a name free in it and a
/// valid parameters schema, `{"type": "object", "properties": {}}` when absent) and returns
/// what the chat template is shown. `bellows eval` builds a corpus line's registry with it, so
/// a line's `tools` are decoded exactly as a request's.
pub fn add_client_tools(
    registry: &mut Registry,
    tools: &[Tool],
) -> Result<Vec<ToolSpec>, ApiError> {
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
    Ok(specs)
}

/// How a reply to a request with client tools is decoded when the model's protocol is
/// `protocol`: in that native format, or in every in-band native format when the protocol is
/// the text protocol or OpenAI (with a client-only registry the text protocol itself never
/// decodes, so `auto` adds nothing but the natives).
pub fn client_tools_mode(protocol: FormatId) -> Mode {
    match protocol {
        FormatId::Text | FormatId::OpenAi => Mode::Auto,
        f => Mode::Only(f),
    }
}

/// Builds the plan for a request.
pub fn plan(
    tools: Option<&[Tool]>,
    choice: Option<&ToolChoice>,
    parallel_tool_calls: Option<bool>,
    bellows: Option<&BellowsOptions>,
    defaults: &Defaults,
) -> Result<ToolPlan, ApiError> {
    let tools = tools.unwrap_or_default();
    // A profile tuned to one action per reply stops after the first call unless the request
    // asks for parallel calls.
    let parallel = parallel_tool_calls.unwrap_or(defaults.actions_per_turn != Some(1));
    let call_format = defaults.call_format();
    let protocol = bellows
        .and_then(|b| b.protocol)
        .unwrap_or(ProtocolChoice::Native);
    // In native mode the client's tools are the only tools: a client tool named `read` or
    // `edit` is the client's own, validated against its own schema, and nothing decodes to a
    // builtin action. The text protocol is bellows' action space, so it keeps the builtins
    // beside any client tools.
    let mut registry = match protocol {
        ProtocolChoice::Text => Registry::builtin(),
        _ => Registry::client_only(),
    };
    let specs = add_client_tools(&mut registry, tools)?;
    let registry = Arc::new(registry);
    if protocol == ProtocolChoice::Text {
        let choice = resolve_choice(choice, &specs, Some(&registry))?;
        let gbnf = |root: String| GrammarSpec::Strict {
            gbnf: with_root(&registry.text_protocol_gbnf(), &root),
            root: "root".to_owned(),
        };
        let grammar = match &choice {
            // The profile's strict grammar makes every reply act: at most two short lines of
            // prose, then an action (the registry's `acting` rule).
            Choice::None | Choice::Auto => match defaults.grammar {
                GrammarMode::Strict => Some(gbnf("acting".to_owned())),
                GrammarMode::Lazy => Some(GrammarSpec::Lazy {
                    gbnf: with_root(&registry.text_protocol_gbnf(), "action (prose | action)*"),
                    root: "root".to_owned(),
                    triggers: codec::registry::BUILTINS
                        .iter()
                        .map(|t| format!("{} ", t.verb))
                        .collect(),
                }),
                GrammarMode::Off => None,
            },
            // At least one action, anywhere among prose and other actions.
            Choice::Required => Some(gbnf("prose* action (prose | action)*".to_owned())),
            Choice::Named(NamedTool::Builtin(name)) => Some(gbnf(format!("prose* {name}-action"))),
            // A client tool in the text protocol is called natively; one call, bare JSON.
            Choice::Named(NamedTool::Client(i)) => Some(call_grammar(specs[*i..=*i].iter())),
        };
        // The text-protocol grammar covers builtin actions only; client tools stay unchecked.
        // A lazy grammar leaves what comes before its trigger free (an aider-style fenced
        // edit block, say), so only a strict one guarantees every decoded action.
        let guaranteed = matches!(grammar, Some(GrammarSpec::Strict { .. })) && specs.is_empty();
        return Ok(ToolPlan {
            kind: PlanKind::Text {
                registry,
                grammar,
                guaranteed,
                style: defaults.prompt_style,
            },
            parallel,
            call_format,
            reasoning: None,
        });
    }
    let choice = resolve_choice(choice, &specs, None)?;
    let (grammar, mode, guaranteed) = match choice {
        Choice::None => {
            return Ok(ToolPlan {
                call_format,
                ..ToolPlan::none()
            });
        }
        Choice::Auto => {
            let mode = client_tools_mode(defaults.protocol);
            match lazy_call_grammar(defaults, mode, &specs) {
                // Under a lazy grammar only the formats it covers may decode, so every call
                // that starts is one the grammar shapes.
                Some((grammar, format)) => (Some(grammar), Mode::Only(format), true),
                None => (None, mode, false),
            }
        }
        Choice::Required => (
            Some(call_grammar(specs.iter())),
            Mode::Only(FormatId::BareJson),
            true,
        ),
        Choice::Named(NamedTool::Client(i)) => (
            Some(call_grammar(specs[i..=i].iter())),
            Mode::Only(FormatId::BareJson),
            true,
        ),
        Choice::Named(NamedTool::Builtin(_)) => {
            unreachable!("builtins are named only with the text protocol")
        }
    };
    Ok(ToolPlan {
        kind: PlanKind::Native {
            registry,
            specs,
            mode,
            grammar,
            guaranteed,
        },
        parallel,
        call_format,
        reasoning: None,
    })
}

/// A GBNF with its `root` rule replaced.
fn with_root(gbnf: &str, root: &str) -> String {
    let mut out = String::with_capacity(gbnf.len());
    for line in gbnf.lines() {
        if line.starts_with("root ::=") {
            out.push_str("root ::= ");
            out.push_str(root);
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// The profile's lazy grammar for `auto` tool calls, and the one format it shapes: the call
/// opener triggers a grammar admitting one schema-valid call and its closer.
fn lazy_call_grammar(
    defaults: &Defaults,
    mode: Mode,
    specs: &[ToolSpec],
) -> Option<(GrammarSpec, FormatId)> {
    if defaults.grammar != GrammarMode::Lazy {
        return None;
    }
    let schema = call_schema(specs.iter());
    let (trigger, close, format) = match mode {
        // Tools reach a model through its template or a system message asking for Hermes
        // lines, so Hermes is the opener to expect in `auto`.
        Mode::Auto | Mode::Only(FormatId::Hermes) | Mode::Only(FormatId::Text) => {
            ("<tool_call>", "</tool_call>", FormatId::Hermes)
        }
        Mode::Only(FormatId::Mistral) => {
            let schema = serde_json::json!({"type": "array", "items": schema, "minItems": 1});
            return Some((
                GrammarSpec::LazyJsonSchema {
                    schema,
                    trigger: "[TOOL_CALLS]".to_owned(),
                    close: String::new(),
                },
                FormatId::Mistral,
            ));
        }
        // The other formats' openers are not followed by one plain JSON call.
        Mode::Only(_) => return None,
    };
    Some((
        GrammarSpec::LazyJsonSchema {
            schema,
            trigger: trigger.to_owned(),
            close: close.to_owned(),
        },
        format,
    ))
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
    Named(NamedTool),
}

enum NamedTool {
    /// Index into the declared tools.
    Client(usize),
    /// A bellows builtin (text protocol only).
    Builtin(String),
}

/// `builtins` is the text protocol's registry, whose builtin tools count as declared.
fn resolve_choice(
    choice: Option<&ToolChoice>,
    specs: &[ToolSpec],
    builtins: Option<&Registry>,
) -> Result<Choice, ApiError> {
    let has_tools = !specs.is_empty() || builtins.is_some();
    match choice {
        None | Some(ToolChoice::Mode(ToolChoiceMode::Auto)) => Ok(if has_tools {
            Choice::Auto
        } else {
            Choice::None
        }),
        Some(ToolChoice::Mode(ToolChoiceMode::None)) => Ok(Choice::None),
        Some(ToolChoice::Mode(ToolChoiceMode::Required)) => {
            if !has_tools {
                return Err(ApiError::invalid(
                    "tool_choice",
                    "\"required\" needs at least one tool in `tools`",
                ));
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
            let name = &n.function.name;
            if let Some(i) = specs.iter().position(|s| &s.name == name) {
                return Ok(Choice::Named(NamedTool::Client(i)));
            }
            if builtins.is_some() && codec::registry::builtin(name).is_some() {
                return Ok(Choice::Named(NamedTool::Builtin(name.clone())));
            }
            Err(ApiError::invalid(
                "tool_choice.function.name",
                format!("{name:?} is not one of the declared tools"),
            ))
        }
    }
}

/// The JSON schema of one call `{"name": N, "arguments": A}` to one of `specs`, with `A`
/// valid against that tool's parameters.
fn call_schema<'a>(specs: impl Iterator<Item = &'a ToolSpec>) -> serde_json::Value {
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
    match <[serde_json::Value; 1]>::try_from(variants) {
        Ok([one]) => one,
        Err(many) => serde_json::json!({ "anyOf": many }),
    }
}

/// A grammar admitting exactly one bare call to one of `specs`.
fn call_grammar<'a>(specs: impl Iterator<Item = &'a ToolSpec>) -> GrammarSpec {
    GrammarSpec::JsonSchema(call_schema(specs))
}

/// Makes sure the model sees the tools, as the profile's presentation says. Many small
/// models' chat templates ignore the `tools` variable (the tools would silently vanish, as they
/// do in other servers); when the engine's template does not render them (probed once at
/// load), or the profile asks for it, the tools are described in a system message instead,
/// asking for Hermes-style `<tool_call>` lines, which every decoder mode reads.
pub fn fit_to_template(
    messages: &mut Vec<ChatMessage>,
    tools: &mut Vec<ToolSpec>,
    template_renders_tools: bool,
    presentation: ToolsPresentation,
) {
    if tools.is_empty() || (template_renders_tools && presentation == ToolsPresentation::Template) {
        return;
    }
    let mut text = tools_system_prompt(tools);
    if presentation == ToolsPresentation::Example {
        text.push_str(TOOLS_WORKED_EXAMPLE);
    }
    tools.clear();
    match messages.first_mut() {
        Some(first) if first.role == "system" => {
            first.content = format!("{}\n\n{text}", first.content);
        }
        _ => messages.insert(0, ChatMessage::new("system", text)),
    }
}

/// One worked call, for the `example` presentation. Its tool is not among the client's, so a
/// model that copies it calls an unknown tool (a named failure), never a real one by accident.
const TOOLS_WORKED_EXAMPLE: &str = "\nExample: asked \"what time is it in Tokyo?\" with a tool \
    get_time(zone), you would reply:\n<tool_call>{\"name\": \"get_time\", \"arguments\": \
    {\"zone\": \"Asia/Tokyo\"}}</tool_call>";

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
    use codec::Event;

    fn spec(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.to_owned(),
            description: "d".to_owned(),
            parameters: serde_json::json!({"type": "object"}),
        }
    }

    fn user() -> Vec<ChatMessage> {
        vec![ChatMessage::new("user", "hi")]
    }

    #[test]
    fn a_template_that_ignores_tools_gets_them_in_a_system_message() {
        let (mut messages, mut tools) = (user(), vec![spec("get_weather")]);
        fit_to_template(
            &mut messages,
            &mut tools,
            false,
            ToolsPresentation::Template,
        );
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
        fit_to_template(&mut messages, &mut tools, true, ToolsPresentation::Template);
        assert_eq!(tools.len(), 1);
        assert_eq!(messages.len(), 1);
    }

    /// Every format's written-back call decodes, in that format's own mode, to the same call.
    #[test]
    fn past_calls_round_trip_through_the_decoder_in_every_format() {
        let args = serde_json::json!({"city": "Paris", "days": 3, "metric": true});
        for &format in FormatId::ALL {
            if format == FormatId::OpenAi {
                continue;
            }
            let mut registry = Registry::client_only();
            registry
                .add_client_tool("get_weather", "d", serde_json::json!({"type": "object"}))
                .expect("valid tool");
            let text = render_call(format, "get_weather", &args);
            let mode = match format {
                FormatId::Text => Mode::Auto,
                f => Mode::Only(f),
            };
            let mut d = TurnDecoder::new(mode, Arc::new(registry));
            let mut events = d.feed(&text);
            events.extend(d.finish());
            let calls: Vec<_> = events
                .iter()
                .filter_map(|e| match e {
                    Event::Proposal { proposal, .. } => Some(proposal),
                    _ => None,
                })
                .collect();
            assert_eq!(calls.len(), 1, "{format:?}: {text:?} gave {events:?}");
            assert_eq!(calls[0].action.name(), "get_weather", "{format:?}");
            let got: serde_json::Value =
                serde_json::from_str(&calls[0].arguments_json()).expect("arguments are JSON");
            if format == FormatId::Qwen3Xml {
                // XML parameters are text; the schema here types nothing.
                assert_eq!(got["city"], "Paris", "{format:?}: {got}");
            } else {
                assert_eq!(got, args, "{format:?}");
            }
        }
    }

    #[test]
    fn with_root_replaces_only_the_root_rule() {
        let g = "# c\nroot ::= (a | b)*\na ::= \"x\"\n";
        assert_eq!(with_root(g, "a b"), "# c\nroot ::= a b\na ::= \"x\"\n");
    }
}
