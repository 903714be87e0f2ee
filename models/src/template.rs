//! Chat templates: the Jinja text in a GGUF's `tokenizer.chat_template` (or a profile's
//! override), rendered with `minijinja` the way Hugging Face's `apply_chat_template` does:
//! `trim_blocks` and `lstrip_blocks` on, Python string methods available (`.strip()`,
//! `.startswith()`, ...), `raise_exception`, `bos_token` / `eos_token`, `tools` in the
//! OpenAI function shape and `add_generation_prompt`.

use minijinja::{Environment, Error, ErrorKind, Value, context};

use crate::engine::{ChatMessage, ToolSpec};

/// Why a template could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    #[error("the chat template does not compile: {0}")]
    Compile(String),
    #[error("the chat template failed to render: {0}")]
    Render(String),
}

/// ChatML, for models that carry no template and whose profile names none.
pub const CHATML_TEMPLATE: &str = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/// A compiled chat template.
#[derive(Debug)]
pub struct ChatTemplate {
    env: Environment<'static>,
    bos_token: String,
    eos_token: String,
}

impl ChatTemplate {
    /// Compiles `source`. `bos_token` and `eos_token` are the model's special token texts.
    pub fn new(
        source: &str,
        bos_token: &str,
        eos_token: &str,
    ) -> Result<ChatTemplate, TemplateError> {
        let mut env = Environment::new();
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function("raise_exception", raise_exception);
        env.add_template_owned("chat", source.to_owned())
            .map_err(|e| TemplateError::Compile(describe(&e)))?;
        Ok(ChatTemplate {
            env,
            bos_token: bos_token.to_owned(),
            eos_token: eos_token.to_owned(),
        })
    }

    /// Renders messages and tools; `add_generation_prompt` opens the assistant's turn.
    pub fn render(
        &self,
        messages: &[ChatMessage],
        tools: &[ToolSpec],
        add_generation_prompt: bool,
    ) -> Result<String, TemplateError> {
        let tmpl = self
            .env
            .get_template("chat")
            .map_err(|e| TemplateError::Render(describe(&e)))?;
        // Templates test `if tools` to decide whether to describe them, so no tools is `none`.
        let tools_value = if tools.is_empty() {
            Value::from(())
        } else {
            Value::from_serialize(
                tools
                    .iter()
                    .map(|t| {
                        serde_json::json!({
                            "type": "function",
                            "function": {
                                "name": t.name,
                                "description": t.description,
                                "parameters": t.parameters,
                            }
                        })
                    })
                    .collect::<Vec<_>>(),
            )
        };
        tmpl.render(context! {
            messages => Value::from_serialize(messages),
            tools => tools_value,
            add_generation_prompt => add_generation_prompt,
            bos_token => self.bos_token.as_str(),
            eos_token => self.eos_token.as_str(),
        })
        .map_err(|e| TemplateError::Render(describe(&e)))
    }
}

impl ChatTemplate {
    /// Whether the template shows the `tools` variable: a probe conversation renders
    /// differently with a tool than without.
    pub fn renders_tools(&self) -> bool {
        let messages = [ChatMessage::new("user", "ping")];
        let tool = ToolSpec {
            name: "bellows_probe_tool".to_owned(),
            description: "probe".to_owned(),
            parameters: serde_json::json!({"type": "object", "properties": {}}),
        };
        match (
            self.render(&messages, std::slice::from_ref(&tool), true),
            self.render(&messages, &[], true),
        ) {
            (Ok(with), Ok(without)) => with != without,
            _ => false,
        }
    }
}

fn raise_exception(msg: String) -> Result<Value, Error> {
    Err(Error::new(ErrorKind::InvalidOperation, msg))
}

/// The error with its causes, on one line.
fn describe(e: &Error) -> String {
    let mut s = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(cause) = src {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        src = cause.source();
    }
    s
}
