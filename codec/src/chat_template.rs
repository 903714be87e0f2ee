//! Which tool-call format a chat template teaches.
//!
//! A GGUF carries its chat template (`tokenizer.chat_template`, a Jinja string), and the
//! template spells out the tool-call syntax its model was trained on: it renders earlier calls
//! in the history and, most often, describes the syntax in the system prompt. So when no
//! profile names a format, [`tool_format`] reads the template and picks the [`FormatId`] whose
//! markers it writes, with the marker that decided it; `None` leaves the caller decoding every
//! format. llama.cpp picks its chat format the same way, from substrings of the template
//! source (`common_chat_templates_apply_jinja` and `common_chat_try_specialized_template` in
//! `common/chat.cpp`).
//!
//! # Precedence
//!
//! Templates often name more than one marker, so every [`Rule`] has a [`Tier`], and the first
//! tier with a match decides, most specific first:
//!
//! 1. [`Tier::Refinement`]: a shared tag together with the markers that make it one family's
//!    (`<tool_call>` with `<function=` and `<parameter=` is Qwen3-Coder's XML, not Hermes JSON).
//! 2. [`Tier::FamilyToken`]: a special token only one family writes (`[TOOL_CALLS]`,
//!    `<|python_tag|>`, `<|tool_call_start|>`, …).
//! 3. [`Tier::SharedTag`]: `<tool_call>`, which many ChatML families write around Hermes JSON.
//! 4. [`Tier::Instruction`]: the call syntax taught in prose (`[func_name1(` for pythonic
//!    lists), which has no token of its own.
//! 5. [`Tier::Header`]: a family's turn header that implies its call syntax (Llama 3's
//!    `ipython` turn).
//!
//! Within the deciding tier, every matching rule must name the same format; when two formats
//! match at one tier the template teaches both, and the answer is `None` (decode everything)
//! rather than a guess. Rules are data ([`RULES`]), so adding a family is a row.
//!
//! Markers count only outside Jinja comments (`{# … #}`): a comment that names a syntax does
//! not teach it. A marker the template assembles at render time from pieces (`'<' + tok + '>'`)
//! is not seen.

use crate::format_id::FormatId;

/// How specific a rule's markers are; a lower tier decides before a higher one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    /// A shared tag plus the markers that make it one family's.
    Refinement,
    /// A special token one family alone writes.
    FamilyToken,
    /// A tag several families write around the same body.
    SharedTag,
    /// The call syntax taught in prose, with no token of its own.
    Instruction,
    /// A turn header that implies the family's call syntax.
    Header,
}

/// One family's markers, all of which the template must contain.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    pub tier: Tier,
    pub format: FormatId,
    /// The model families that write these markers.
    pub families: &'static str,
    /// Every one must occur in the template outside comments.
    pub markers: &'static [&'static str],
}

/// The format a template teaches, and the rule that decided it.
#[derive(Debug, Clone, Copy)]
pub struct TemplateFormat {
    pub format: FormatId,
    pub rule: &'static Rule,
}

impl TemplateFormat {
    /// One line saying why, for a log: the markers found and the families they belong to.
    pub fn reason(&self) -> String {
        self.to_string()
    }
}

impl std::fmt::Display for TemplateFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the chat template writes ")?;
        for (i, m) in self.rule.markers.iter().enumerate() {
            if i > 0 {
                f.write_str(" with ")?;
            }
            write!(f, "`{m}`")?;
        }
        write!(f, " ({}): {}", self.rule.families, self.format)
    }
}

const fn rule(
    tier: Tier,
    format: FormatId,
    families: &'static str,
    markers: &'static [&'static str],
) -> Rule {
    Rule {
        tier,
        format,
        families,
        markers,
    }
}

/// Every rule, grouped by tier. Each marker was checked against a real template (the sources
/// are in `codec/README.md`, "Picking the format from a chat template").
pub const RULES: &[Rule] = &[
    // Tier 1: `<tool_call>` made specific by what goes inside it.
    rule(
        Tier::Refinement,
        FormatId::Qwen3Xml,
        "Qwen3-Coder, Qwen3.5, Nemotron Nano 3",
        &["<tool_call>", "<function=", "<parameter="],
    ),
    rule(
        Tier::Refinement,
        FormatId::Qwen3Xml,
        "GLM-4.5",
        &["<tool_call>", "<arg_key>"],
    ),
    // Tier 2: one family's own tokens.
    rule(
        Tier::FamilyToken,
        FormatId::Qwen3Xml,
        "Seed-OSS",
        &["<seed:tool_call>"],
    ),
    rule(
        Tier::FamilyToken,
        FormatId::Qwen3Xml,
        "MiniMax-M2",
        &["<minimax:tool_call>"],
    ),
    rule(
        Tier::FamilyToken,
        FormatId::Harmony,
        "gpt-oss",
        &["<|channel|>"],
    ),
    rule(
        Tier::FamilyToken,
        FormatId::Harmony,
        "gpt-oss",
        &["<|call|>"],
    ),
    rule(
        Tier::FamilyToken,
        FormatId::SectionCalls,
        "DeepSeek R1, V3, V3.1",
        &["<｜tool▁calls▁begin｜>"],
    ),
    rule(
        Tier::FamilyToken,
        FormatId::SectionCalls,
        "DeepSeek V3.1",
        &["<｜tool▁call▁begin｜>"],
    ),
    rule(
        Tier::FamilyToken,
        FormatId::SectionCalls,
        "Kimi K2",
        &["<|tool_calls_section_begin|>"],
    ),
    rule(
        Tier::FamilyToken,
        FormatId::Mistral,
        "Mistral Nemo, Mistral Small 3.x, Ministral 3",
        &["[TOOL_CALLS]"],
    ),
    rule(
        Tier::FamilyToken,
        FormatId::Llama3,
        "Llama 3.1, 3.3",
        &["<|python_tag|>"],
    ),
    rule(
        Tier::FamilyToken,
        FormatId::GemmaCall,
        "FunctionGemma",
        &["<start_function_call>"],
    ),
    rule(
        Tier::FamilyToken,
        FormatId::GemmaCall,
        "Gemma 4",
        &["<|tool_call>"],
    ),
    rule(
        Tier::FamilyToken,
        FormatId::MarkerList,
        "Hunyuan-A13B, Apriel 1.5",
        &["<tool_calls>"],
    ),
    rule(
        Tier::FamilyToken,
        FormatId::MarkerList,
        "Nemotron Nano v2",
        &["<TOOLCALL>"],
    ),
    rule(
        Tier::FamilyToken,
        FormatId::MarkerList,
        "Apertus",
        &["<|tools_prefix|>"],
    ),
    rule(
        Tier::FamilyToken,
        FormatId::MarkerList,
        "Command R7B",
        &["<|START_ACTION|>"],
    ),
    rule(
        Tier::FamilyToken,
        FormatId::MarkerList,
        "Granite 3.x",
        &["<|tool_call|>"],
    ),
    rule(
        Tier::FamilyToken,
        FormatId::MarkerList,
        "Phi-4-mini",
        &["functools["],
    ),
    rule(
        Tier::FamilyToken,
        FormatId::MarkerList,
        "InternLM 2/2.5",
        &["<|action_start|><|plugin|>"],
    ),
    rule(
        Tier::FamilyToken,
        FormatId::MarkerList,
        "LFM2, MiniCPM3",
        &["<|tool_call_start|>"],
    ),
    rule(
        Tier::FamilyToken,
        FormatId::MarkerList,
        "Llama 4 (code tag)",
        &["<|python_start|>"],
    ),
    rule(
        Tier::FamilyToken,
        FormatId::MarkerList,
        "Olmo 3",
        &["<function_calls>"],
    ),
    // Tier 3: the tag many ChatML families write around a JSON call.
    rule(
        Tier::SharedTag,
        FormatId::Hermes,
        "Hermes 2 Pro, Qwen2.5, Qwen2.5-Coder, Qwen3",
        &["<tool_call>"],
    ),
    // Tier 4: a syntax taught in words.
    rule(
        Tier::Instruction,
        FormatId::Pythonic,
        "Llama 3.2 and Llama 4 pythonic, Gemma 3 pythonic (vLLM's templates)",
        &["[func_name1("],
    ),
    // Tier 5: a turn header that implies the family's syntax.
    rule(
        Tier::Header,
        FormatId::Llama3,
        "Llama 3.1, 3.2, 3.3 (JSON calls)",
        &["<|start_header_id|>ipython<|end_header_id|>"],
    ),
];

/// The tool-call format `template` teaches, or `None` when it writes no known tool syntax or
/// teaches two formats at the same tier (see the module docs for the precedence).
pub fn tool_format(template: &str) -> Option<TemplateFormat> {
    let code = without_comments(template);
    let mut tier: Option<Tier> = None;
    let mut found: Option<&'static Rule> = None;
    for rule in RULES {
        if tier.is_some_and(|t| rule.tier > t) {
            break;
        }
        if !rule.markers.iter().all(|m| code.contains(m)) {
            continue;
        }
        match found {
            None => {
                tier = Some(rule.tier);
                found = Some(rule);
            }
            // A second format at the deciding tier: the template teaches both.
            Some(first) if first.format != rule.format => return None,
            Some(_) => {}
        }
    }
    found.map(|rule| TemplateFormat {
        format: rule.format,
        rule,
    })
}

/// The template with its Jinja comments (`{# … #}`, whitespace-control dashes included)
/// removed. An unclosed comment runs to the end, as Jinja would reject the rest anyway.
fn without_comments(template: &str) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find("{#") {
        out.push_str(&rest[..open]);
        match rest[open + 2..].find("#}") {
            Some(close) => rest = &rest[open + 2 + close + 2..],
            None => return out,
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn comments_are_removed_and_code_kept() {
        assert_eq!(without_comments("a{# x #}b{#- y -#}c"), "abc");
        assert_eq!(without_comments("a{# open"), "a");
        assert_eq!(without_comments("no comment"), "no comment");
    }

    #[test]
    fn rules_are_grouped_by_tier() {
        // `tool_format` stops at the first rule past the deciding tier, so the table must be
        // sorted by tier.
        assert!(RULES.windows(2).all(|w| w[0].tier <= w[1].tier));
    }

    #[test]
    fn the_reason_names_the_markers() {
        let found = tool_format("{{ '<tool_call>' }}").unwrap();
        assert_eq!(
            found.reason(),
            "the chat template writes `<tool_call>` (Hermes 2 Pro, Qwen2.5, Qwen2.5-Coder, \
             Qwen3): hermes"
        );
    }
}
