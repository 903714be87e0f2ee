//! `codec::chat_template::tool_format`: which tool-call format a chat template teaches.
//!
//! Each case is a short excerpt written for this test that reproduces the tool-syntax lines of
//! a real template (the source is named above it), not the whole file. One helper, `check`,
//! prints the answer as `format (families)` or `none`.

use codec::FormatId;
use codec::chat_template::{RULES, Tier, tool_format};

fn answer(template: &str) -> String {
    match tool_format(template) {
        Some(found) => format!("{} ({})", found.format, found.rule.families),
        None => "none".to_owned(),
    }
}

#[track_caller]
fn check(template: &str, expect: &str) {
    assert_eq!(answer(template), expect, "template:\n{template}");
}

// ---- the shipped model ----

/// Qwen2.5-Coder-0.5B-Instruct's GGUF (`tokenizer.chat_template` of the file
/// `scripts/fetch-models.sh qwen-coder-0.5b` assembles): the tools system block and the
/// assistant tool-call rendering.
#[test]
fn qwen2_5_coder_is_hermes() {
    let t = r#"{%- if tools %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- endif %}
{%- for tool_call in message.tool_calls %}
    {{- '\n<tool_call>\n{"name": "' }}{{- tool_call.name }}{{- '", "arguments": ' }}
    {{- tool_call.arguments | tojson }}{{- '}\n</tool_call>' }}
{%- endfor %}"#;
    check(t, "hermes (Hermes 2 Pro, Qwen2.5, Qwen2.5-Coder, Qwen3)");
}

// ---- one case per family ----

/// vLLM `examples/tool_chat_template_qwen3coder.jinja`: the format instruction and the
/// call rendering. `<tool_call>` alone would be Hermes; `<function=` and `<parameter=` inside
/// it make it Qwen3-Coder's XML.
#[test]
fn qwen3_coder_is_qwen3_xml() {
    let t = r#"{{- '\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n</parameter>\n</function>\n</tool_call>' }}
{{- '\n<tool_call>\n<function=' + tool_call.name + '>\n' }}{{- '<parameter=' + args_name + '>\n' }}"#;
    check(t, "qwen3_xml (Qwen3-Coder, Qwen3.5, Nemotron Nano 3)");
}

/// llama.cpp `models/templates/glm_4_5.jinja`: `<tool_call>` followed by the name and
/// `<arg_key>`/`<arg_value>` pairs.
#[test]
fn glm_4_5_is_qwen3_xml() {
    let t = "For each function call, output the function name and arguments within the following XML format:\n\
             <tool_call>{function-name}\n<arg_key>{arg-key-1}</arg_key>\n<arg_value>{arg-value-1}</arg_value>\n</tool_call>";
    check(t, "qwen3_xml (GLM-4.5)");
}

/// llama.cpp `models/templates/ByteDance-Seed-OSS.jinja`: the token variables and the
/// format instruction (its `<function=`/`<parameter=` body is Qwen3-Coder's, without
/// `<tool_call>`).
#[test]
fn seed_oss_is_qwen3_xml() {
    let t = r#"{%- set toolcall_begin_token   = '<seed:tool_call>'         -%}
{{"<seed:tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>value_1</parameter>\n</function>\n</seed:tool_call>\n"}}"#;
    check(t, "qwen3_xml (Seed-OSS)");
}

/// llama.cpp `models/templates/unsloth-MiniMax-M2.jinja`: the wrapper token and `<invoke>`.
#[test]
fn minimax_m2_is_qwen3_xml() {
    let t = r#"{%- set toolcall_begin_token   = '<minimax:tool_call>'         -%}
<invoke name="tool-name-1">
<parameter name="param-key-1">param-value-1</parameter>
</invoke>"#;
    check(t, "qwen3_xml (MiniMax-M2)");
}

/// gpt-oss's template as llama.cpp patches it (`common/chat.cpp`, the `<|channel|>` check
/// before rendering): the harmony channel markers.
#[test]
fn gpt_oss_is_harmony() {
    let t = r#"{{- "<|start|>assistant<|channel|>commentary to=" + "functions." + tool_call.name }}{{- " <|constrain|>json<|message|>" + tool_call.arguments|tojson + "<|call|>" }}"#;
    check(t, "harmony (gpt-oss)");
}

/// llama.cpp `models/templates/deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja`: the
/// assistant's tool-call rendering.
#[test]
fn deepseek_r1_is_section_calls() {
    let t = "{{'<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>' + tool['function']['name'] + '\\n' + '```json' + '\\n' + tool['function']['arguments'] + '\\n' + '```' + '<｜tool▁call▁end｜>'}}";
    check(t, "section_calls (DeepSeek R1, V3, V3.1)");
}

/// Kimi K2's call section, as Moonshot's tool-call guidance writes a call (the tokens llama.cpp
/// checks for in `common_chat_try_specialized_template`).
#[test]
fn kimi_k2_is_section_calls() {
    let t = "{{- '<|tool_calls_section_begin|>' -}}{{- '<|tool_call_begin|>' + tool_call.id + '<|tool_call_argument_begin|>' + args + '<|tool_call_end|>' -}}";
    check(t, "section_calls (Kimi K2)");
}

/// llama.cpp `models/templates/mistralai-Mistral-Small-3.1-24B-Instruct-2503.jinja`.
#[test]
fn mistral_small_is_mistral() {
    let t = r#"{{- "[AVAILABLE_TOOLS] [" }}{{- "[/AVAILABLE_TOOLS]" }}
{{- "[TOOL_CALLS] [" }}{%- set out = tool_call.function|tojson %}{{- out[:-1] }}"#;
    check(t, "mistral (Mistral Nemo, Mistral Small 3.x, Ministral 3)");
}

/// Meta's Llama 3.1 template: built-in tools are called after `<|python_tag|>`, results come
/// back in the `ipython` turn (llama.cpp `common/chat.cpp`: `allow_python_tag_builtin_tools`).
#[test]
fn llama_3_1_with_python_tag_is_llama3() {
    let t = r#"{{- '<|python_tag|>' + tool_call.name + '.call(' }}
{{- "<|start_header_id|>ipython<|end_header_id|>\n\n" }}"#;
    check(t, "llama3 (Llama 3.1, 3.3)");
}

/// vLLM `examples/tool_chat_template_llama3.1_json.jinja` (Meta's template without the
/// built-in tools): JSON calls taught in words, results in the `ipython` turn. No token of its
/// own, so the header decides.
#[test]
fn llama_3_json_is_llama3_by_its_header() {
    let t = r#"{{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}. ' }}
{{- '{"name": "' + tool_call.name|trim + '", ' }}{{- '"parameters": ' }}
{{- "<|start_header_id|>ipython<|end_header_id|>\n\n" }}"#;
    check(t, "llama3 (Llama 3.1, 3.2, 3.3 (JSON calls))");
}

/// FunctionGemma's call form (Google's FunctionGemma model card; `gemma_call.rs` cites it).
#[test]
fn functiongemma_is_gemma_call() {
    let t = "{{- '<start_function_call>call:' + function['name'] + '{' -}}{{- '}<end_function_call>' -}}";
    check(t, "gemma_call (FunctionGemma)");
}

/// Gemma 4 (llama.cpp detects it by the literal `'<|tool_call>call:'`,
/// `common_chat_try_specialized_template`).
#[test]
fn gemma_4_is_gemma_call() {
    let t = "{{- '<|tool_call>call:' + function['name'] + '{' -}}{{- '}<tool_call|>' -}}";
    check(t, "gemma_call (Gemma 4)");
}

/// llama.cpp `models/templates/llama-cpp-lfm2.jinja`: the tool list and call tokens.
#[test]
fn lfm2_is_marker_list() {
    let t = r#"{%- set ns.system_prompt = ns.system_prompt + "List of tools: <|tool_list_start|>[" -%}
{%- set content = "<|tool_call_start|>[" + ns_tc.result + "]<|tool_call_end|>" + content -%}"#;
    check(t, "marker_list (LFM2, MiniCPM3)");
}

/// vLLM `examples/tool_chat_template_minicpm3.jinja`: a python fence between LFM2's tokens.
#[test]
fn minicpm3_is_marker_list() {
    let t = r"{{- '<|tool_call_start|>\n```python\n' }}{{- tool_call.name + '(' }}{{- '```\n<|tool_call_end|>\n' }}";
    check(t, "marker_list (LFM2, MiniCPM3)");
}

/// vLLM `examples/tool_chat_template_hunyuan_a13b.jinja` (its instruction is in Chinese; the
/// markers are what matter).
#[test]
fn hunyuan_is_marker_list() {
    let t = r#"{% set content = content + '<tool_calls>' + ns.tool_calls + '</tool_calls>' %}"#;
    check(t, "marker_list (Hunyuan-A13B, Apriel 1.5)");
}

/// vLLM `examples/tool_chat_template_nemotron_nano_v2.jinja`.
#[test]
fn nemotron_nano_v2_is_marker_list() {
    let t = r#"{{- 'If you decide to call any tool(s), use the following format:\n' -}}
{{- '<TOOLCALL>[{{"name": "tool_name1", "arguments": "tool_args1"}}]</TOOLCALL>\n\n' -}}"#;
    check(t, "marker_list (Nemotron Nano v2)");
}

/// vLLM `examples/tool_chat_template_apertus.jinja`: the marker is set as a variable.
#[test]
fn apertus_is_marker_list() {
    let t = "{%- set tool_calls_token = '<|tools_prefix|>' -%}\n{%- set end_tool_calls_token = '<|tools_suffix|>' -%}";
    check(t, "marker_list (Apertus)");
}

/// llama.cpp `models/templates/CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja`.
#[test]
fn command_r7b_is_marker_list() {
    let t = "1. Action: write <|START_ACTION|> followed by a list of JSON-formatted tool calls, with each one containing \"tool_name\" and \"parameters\" fields.";
    check(t, "marker_list (Command R7B)");
}

/// IBM Granite 3.x: the assistant's tool-call turn (also hard-coded in llama.cpp
/// `src/llama-chat.cpp` for Granite).
#[test]
fn granite_is_marker_list() {
    let t = "{{- '<|start_of_role|>assistant<|end_of_role|><|tool_call|>' + message['content'] + '<|end_of_text|>\\n' }}";
    check(t, "marker_list (Granite 3.x)");
}

/// vLLM `examples/tool_chat_template_phi4_mini.jinja`.
#[test]
fn phi_4_mini_is_marker_list() {
    let t = r#"  * all function calls should be generated in a single JSON list formatted as functools[{"name": [function name], "arguments": [function arguments as JSON]}, ...]"#;
    check(t, "marker_list (Phi-4-mini)");
}

/// vLLM `examples/tool_chat_template_internlm2_tool.jinja`.
#[test]
fn internlm_is_marker_list() {
    let t = r#"{{- "<|action_start|><|plugin|>\n" }}{{- '{"name": "' + function.name + '", '}}{{- "<|action_end|>" }}"#;
    check(t, "marker_list (InternLM 2/2.5)");
}

/// vLLM `examples/tool_chat_template_olmo3.jinja`.
#[test]
fn olmo_3_is_marker_list() {
    let t = r#"{{- "\n\nYou have access to the following functions. To call functions, respond with a pythonic function call wrapped in <function_calls></function_calls> XML tags." }}
{{- "<|im_start|>assistant\n<function_calls>\n" }}"#;
    check(t, "marker_list (Olmo 3)");
}

/// Llama 4's code tag: `<|python_start|>` wraps the pythonic list (vLLM's `llama4_pythonic`
/// parser reads it; `marker_list.rs` cites it).
#[test]
fn llama_4_python_tag_is_marker_list() {
    let t = "{{- '<|python_start|>' }}{{- tool_call.name + '(' }}{{- ')<|python_end|>' }}";
    check(t, "marker_list (Llama 4 (code tag))");
}

/// vLLM `examples/tool_chat_template_llama3.2_pythonic.jinja`: the pythonic instruction, in
/// a template whose tool results still come in the `ipython` turn. The instruction is the more
/// specific of the two.
#[test]
fn llama_3_2_pythonic_is_pythonic() {
    let t = r#"{{- "You have access to the following functions. To call functions, please respond with a python list of the calls. " }}
{{- 'Respond in the format [func_name1(params_name1=params_value1, params_name2=params_value2...), func_name2(params)] ' }}
{{- "<|start_header_id|>ipython<|end_header_id|>\n\n" }}"#;
    check(
        t,
        "pythonic (Llama 3.2 and Llama 4 pythonic, Gemma 3 pythonic (vLLM's templates))",
    );
}

/// vLLM `examples/tool_chat_template_llama4_pythonic.jinja`: no `<|python_start|>` there,
/// the bare list is taught.
#[test]
fn llama_4_pythonic_is_pythonic() {
    let t = r#"- Use exact format: [func_name1(param1=value1, param2=value2), func_name2(...)]\nExamples:\nCORRECT: [get_weather(location=\"Vancouver\")]"#;
    check(
        t,
        "pythonic (Llama 3.2 and Llama 4 pythonic, Gemma 3 pythonic (vLLM's templates))",
    );
}

/// vLLM `examples/tool_chat_template_gemma3_pythonic.jinja`: pythonic calls, and
/// `<tool_response>` around results (not a call marker).
#[test]
fn gemma_3_pythonic_is_pythonic() {
    let t = r#"{{- "Example Format: [func_name1(params_name1=params_value1, params_name2=params_value2...), func_name2(params)] \n" -}}
{{ '<tool_response>\n' -}}"#;
    check(
        t,
        "pythonic (Llama 3.2 and Llama 4 pythonic, Gemma 3 pythonic (vLLM's templates))",
    );
}

// ---- no tool syntax ----

/// SmolLM2-135M-Instruct's GGUF template, whole (it is one line): ChatML, no tools.
#[test]
fn smollm2_without_tools_is_none() {
    let t = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";
    check(t, "none");
}

/// Gemma 2's turn format (google/gemma-2-2b-it): no system role, no tools.
#[test]
fn gemma_2_is_none() {
    let t = "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}\
             {% for message in messages %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}\
             {{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}\
             {% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}";
    check(t, "none");
}

/// Names that only look like markers: `<tool_response>` (Qwen, Gemma 3 pythonic), `<tools>`
/// (the Hermes tool list), `tool_calls` as a message field, `<|tool_call_end|>` without its
/// start, `<tool_call|>` (Gemma 4's close, not its open).
#[test]
fn tool_words_that_are_not_call_markers_are_none() {
    let t = "{%- if message.tool_calls %}{{ '<tools>' }}{{ '<tool_response>' }}{{ '<|tool_call_end|>' }}{{ '<tool_call|>' }}{% endif %}";
    check(t, "none");
}

/// A marker inside a Jinja comment is not taught. (No real template was found that names a
/// marker only in a comment; this one is made up. Templates do comment their tool blocks,
/// e.g. vLLM's `{#- System message #}` or Unsloth's `{# Unsloth & community template fixes #}`.)
#[test]
fn a_marker_only_in_a_comment_is_none() {
    check(
        "{#- Hermes writes <tool_call>{...}</tool_call> -#}{{ messages }}",
        "none",
    );
    check(
        "{# calls look like [TOOL_CALLS] #}{{- '<tool_call>' }}",
        "hermes (Hermes 2 Pro, Qwen2.5, Qwen2.5-Coder, Qwen3)",
    );
}

// ---- precedence ----

/// A family token beats the shared `<tool_call>` tag: a template that names Hermes' tag in its
/// instructions but writes LFM2's tokens teaches LFM2.
#[test]
fn a_family_token_beats_the_shared_tag() {
    check(
        "{{ 'Do not write <tool_call>.' }}{{ '<|tool_call_start|>[' + calls + ']<|tool_call_end|>' }}",
        "marker_list (LFM2, MiniCPM3)",
    );
}

/// A refinement beats a family token only because it is one: `<tool_call>` with
/// `<function=`/`<parameter=` is Qwen3-Coder even beside another tier's marker of the same
/// meaning, and beside an unrelated family token it still decides (tier 1 before tier 2).
#[test]
fn a_refinement_beats_everything_below_it() {
    check(
        "{{ '<tool_call>\n<function=f>\n<parameter=p>\nv\n</parameter>\n</function>\n</tool_call>' }}{{ '[TOOL_CALLS]' }}",
        "qwen3_xml (Qwen3-Coder, Qwen3.5, Nemotron Nano 3)",
    );
}

/// Two family tokens of different formats: the template teaches both, so no pick.
#[test]
fn two_formats_at_one_tier_is_none() {
    check("{{ '[TOOL_CALLS]' }}{{ '<|python_tag|>' }}", "none");
}

/// Two rules of one format at one tier agree (DeepSeek V3.1 writes both section tokens).
#[test]
fn two_rules_of_one_format_agree() {
    check(
        "{{ '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + name + '<｜tool▁sep｜>' }}",
        "section_calls (DeepSeek R1, V3, V3.1)",
    );
}

/// The shared tag beats a pythonic instruction, and the instruction beats the header.
#[test]
fn tag_then_instruction_then_header() {
    let header = "<|start_header_id|>ipython<|end_header_id|>";
    let pythonic = "[func_name1(a=1)]";
    check(header, "llama3 (Llama 3.1, 3.2, 3.3 (JSON calls))");
    check(
        &format!("{pythonic}{header}"),
        "pythonic (Llama 3.2 and Llama 4 pythonic, Gemma 3 pythonic (vLLM's templates))",
    );
    check(
        &format!("<tool_call>{pythonic}{header}"),
        "hermes (Hermes 2 Pro, Qwen2.5, Qwen2.5-Coder, Qwen3)",
    );
}

// ---- the table itself ----

/// Markers of different formats never contain one another (outside the refinement tier, whose
/// rules extend a lower tier's marker on purpose), so a family's token cannot match inside
/// another family's.
#[test]
fn single_markers_of_different_formats_are_disjoint() {
    let singles: Vec<_> = RULES
        .iter()
        .filter(|r| r.tier != Tier::Refinement)
        .flat_map(|r| r.markers.iter().map(move |m| (r.format, *m)))
        .collect();
    for (fa, a) in &singles {
        for (fb, b) in &singles {
            if fa != fb {
                assert!(!a.contains(b), "`{a}` ({fa}) contains `{b}` ({fb})");
            }
        }
    }
}

/// Every marker-list row's start marker is taught by some rule, so a new row without a
/// template rule fails here.
#[test]
fn every_marker_list_row_has_a_rule() {
    for row in codec::native::marker_list::ROWS {
        let covered = RULES.iter().any(|r| {
            r.format == FormatId::MarkerList && r.markers.iter().any(|m| m.starts_with(row.open))
        });
        assert!(
            covered,
            "no chat-template rule for the marker-list row `{}`",
            row.open
        );
    }
}

/// The answer is a format the decoder has a mode for.
#[test]
fn every_rule_names_an_in_band_format() {
    for r in RULES {
        assert!(
            codec::native::format(r.format).is_some(),
            "{} has no in-band decoder",
            r.format
        );
    }
}
