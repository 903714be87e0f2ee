//! Chat templates rendered with minijinja against expected strings: the tiny GGUF's ChatML,
//! SmolLM2's template, the Gemma profile's turn format, and a Hermes-style template with tools.

use models::{ChatMessage, ChatTemplate, Profile, TemplateError, ToolSpec};

fn msg(role: &str, content: &str) -> ChatMessage {
    ChatMessage::new(role.to_owned(), content.to_owned())
}

fn conversation() -> Vec<ChatMessage> {
    vec![
        msg("system", "You edit files."),
        msg("user", "Fix the typo."),
        msg("assistant", "READ src/main.rs"),
        msg("user", "  Done?  "),
    ]
}

const SMOLLM2: &str = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

#[test]
fn smollm2_chatml() {
    let t = ChatTemplate::new(SMOLLM2, "<|im_start|>", "<|im_end|>").expect("compile");
    let out = t.render(&conversation()[1..2], &[], true).expect("render");
    assert_eq!(
        out,
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n\
         <|im_start|>user\nFix the typo.<|im_end|>\n<|im_start|>assistant\n"
    );
    let out = t.render(&conversation(), &[], false).expect("render");
    assert_eq!(
        out,
        "<|im_start|>system\nYou edit files.<|im_end|>\n<|im_start|>user\nFix the typo.<|im_end|>\n\
         <|im_start|>assistant\nREAD src/main.rs<|im_end|>\n<|im_start|>user\n  Done?  <|im_end|>\n"
    );
}

#[test]
fn gemma_profile_turn_format() {
    let profile = Profile::named("gemma3-270m").expect("profile");
    let src = profile
        .chat_template
        .expect("the gemma profile supplies a template");
    let t = ChatTemplate::new(&src, "<bos>", "<eos>").expect("compile");
    let out = t.render(&conversation(), &[], true).expect("render");
    assert_eq!(
        out,
        "<bos><start_of_turn>user\nYou edit files.\n\nFix the typo.<end_of_turn>\n\
         <start_of_turn>model\nREAD src/main.rs<end_of_turn>\n\
         <start_of_turn>user\nDone?<end_of_turn>\n<start_of_turn>model\n"
    );
    let out = t.render(&[msg("user", "hi")], &[], false).expect("render");
    assert_eq!(out, "<bos><start_of_turn>user\nhi<end_of_turn>\n");
}

/// A Hermes / Qwen2.5-style template: tools as JSON inside `<tools>`, Python string methods,
/// `raise_exception` for bad roles, and the trim_blocks / lstrip_blocks whitespace rules.
const HERMES: &str = r#"{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'].strip() }}
    {%- else %}
        {{- 'You are a helpful assistant.' }}
    {%- endif %}
    {{- "\n\n# Tools\n\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nReturn a call as <tool_call>{\"name\": ..., \"arguments\": ...}</tool_call><|im_end|>\n" }}
{%- elif messages[0]['role'] == 'system' %}
    {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
{%- endif %}
{%- for message in messages %}
    {%- if message.role not in ['system', 'user', 'assistant'] %}
        {{- raise_exception('unknown role ' + message.role) }}
    {%- elif message.role != 'system' %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
"#;

fn read_tool() -> ToolSpec {
    ToolSpec {
        name: "read".to_owned(),
        description: "Read a file.".to_owned(),
        parameters: serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    }
}

#[test]
fn hermes_with_tools() {
    let t = ChatTemplate::new(HERMES, "", "<|im_end|>").expect("compile");
    let out = t
        .render(&conversation()[..2], &[read_tool()], true)
        .expect("render");
    let tool_json = r#"{"function":{"description":"Read a file.","name":"read","parameters":{"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}},"type":"function"}"#;
    let expected = format!(
        "<|im_start|>system\nYou edit files.\n\n# Tools\n\n<tools>\n{tool_json}\n</tools>\n\n\
         Return a call as <tool_call>{{\"name\": ..., \"arguments\": ...}}</tool_call><|im_end|>\n\
         <|im_start|>user\nFix the typo.<|im_end|>\n<|im_start|>assistant\n"
    );
    assert_eq!(out, expected);
    // Without tools the template takes its other branch.
    let out = t.render(&conversation()[..2], &[], true).expect("render");
    assert_eq!(
        out,
        "<|im_start|>system\nYou edit files.<|im_end|>\n<|im_start|>user\nFix the typo.<|im_end|>\n<|im_start|>assistant\n"
    );
}

#[test]
fn raise_exception_and_bad_templates_are_typed_errors() {
    let t = ChatTemplate::new(HERMES, "", "").expect("compile");
    match t.render(&[msg("wizard", "hi")], &[], true) {
        Err(TemplateError::Render(m)) => assert!(m.contains("unknown role wizard"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        ChatTemplate::new("{% for %}", "", ""),
        Err(TemplateError::Compile(_))
    ));
}
