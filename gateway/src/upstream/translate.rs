//! One upstream reply's stream chunks as engine events: text pieces, the upstream's native
//! `tool_calls` written into the text as bare JSON calls (so the gateway's codec decodes,
//! repairs and validates them like any call a model wrote), the finish reason and the usage.

use std::collections::BTreeMap;

use models::StopReason;

use crate::api::upstream::{UpChunk, UpUsage};

/// What the stream has said so far, and what it still owes.
#[derive(Debug, Default)]
pub struct Translator {
    /// Native calls being assembled, by the upstream's call index: (name, arguments text).
    calls: BTreeMap<u32, (String, String)>,
    /// Whether the text written so far ends a line (or nothing was written).
    at_line_start: bool,
    wrote_any: bool,
    pub finish: Option<StopReason>,
    pub usage: Option<UpUsage>,
    /// Chunks that carried text: the generated count when the upstream reports no usage.
    pub pieces: u32,
}

/// Why a chunk cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChunkError {
    Malformed(String),
    /// The upstream reported an error inside the stream.
    Reported(String),
}

impl Translator {
    pub fn new() -> Translator {
        Translator {
            at_line_start: true,
            ..Translator::default()
        }
    }

    /// The text one `data:` event adds (possibly empty).
    pub fn chunk(&mut self, data: &str) -> Result<String, ChunkError> {
        let chunk: UpChunk = serde_json::from_str(data).map_err(|e| {
            let shown: String = data.chars().take(120).collect();
            ChunkError::Malformed(format!("{e} in {shown:?}"))
        })?;
        if let Some(err) = chunk.error {
            let message = match &err {
                serde_json::Value::Object(o) => o
                    .get("message")
                    .and_then(|m| m.as_str())
                    .map_or_else(|| err.to_string(), str::to_owned),
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            return Err(ChunkError::Reported(message));
        }
        if chunk.usage.is_some() {
            self.usage = chunk.usage;
        }
        let mut text = String::new();
        // Only the first choice is read: bellows asks for one.
        if let Some(choice) = chunk.choices.into_iter().next() {
            if let Some(t) = choice.text {
                text.push_str(&t);
            }
            if let Some(delta) = choice.delta {
                if let Some(c) = delta.content {
                    // Content after calls: the calls come first, as they were sent.
                    if !c.is_empty() && !self.calls.is_empty() {
                        text.push_str(&self.flush_calls());
                    }
                    text.push_str(&c);
                }
                for call in delta.tool_calls.unwrap_or_default() {
                    let index = call.index.unwrap_or(0);
                    let entry = self.calls.entry(index).or_default();
                    if let Some(f) = call.function {
                        if let Some(name) = f.name {
                            entry.0.push_str(&name);
                        }
                        if let Some(args) = f.arguments {
                            entry.1.push_str(&args);
                        }
                    }
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.finish = Some(match reason.as_str() {
                    "length" => StopReason::MaxTokens,
                    _ => StopReason::Eog,
                });
            }
        }
        if self.finish.is_some() && !self.calls.is_empty() {
            text.push_str(&self.flush_calls());
        }
        if !text.is_empty() {
            self.pieces += 1;
            self.wrote(&text);
        }
        Ok(text)
    }

    /// The calls still held, at the end of the stream.
    pub fn end(&mut self) -> String {
        let text = self.flush_calls();
        self.wrote(&text);
        text
    }

    fn wrote(&mut self, text: &str) {
        if let Some(last) = text.chars().last() {
            self.at_line_start = last == '\n';
            self.wrote_any = true;
        }
    }

    /// Every held call as one bare JSON object per line: `{"name": …, "arguments": …}`, the
    /// arguments as the upstream sent them (an object when they parse, else the raw text, for
    /// the codec's repairs to judge).
    fn flush_calls(&mut self) -> String {
        let mut out = String::new();
        let mut line_start = self.at_line_start || !self.wrote_any;
        for (_, (name, args)) in std::mem::take(&mut self.calls) {
            if !line_start {
                out.push('\n');
            }
            let args = args.trim();
            let args = if args.is_empty() { "{}" } else { args };
            out.push_str("{\"name\": ");
            out.push_str(&serde_json::Value::String(name).to_string());
            out.push_str(", \"arguments\": ");
            out.push_str(args);
            out.push_str("}\n");
            line_start = true;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completion_text_and_usage_are_read() {
        let mut t = Translator::new();
        assert_eq!(
            t.chunk(r#"{"choices":[{"text":"Hel","finish_reason":null}]}"#),
            Ok("Hel".into())
        );
        assert_eq!(
            t.chunk(r#"{"choices":[{"text":"lo","finish_reason":"length"}]}"#),
            Ok("lo".into())
        );
        assert_eq!(
            t.chunk(r#"{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":3}}}"#),
            Ok(String::new())
        );
        assert_eq!(t.finish, Some(StopReason::MaxTokens));
        let u = t.usage.expect("usage");
        assert_eq!((u.prompt_tokens, u.completion_tokens), (7, 2));
        assert_eq!(u.prompt_tokens_details.map(|d| d.cached_tokens), Some(3));
        assert_eq!(t.pieces, 2);
    }

    #[test]
    fn native_calls_become_bare_json_lines_after_the_content() {
        let mut t = Translator::new();
        let mut text = t
            .chunk(r#"{"choices":[{"delta":{"content":"Let me look."}}]}"#)
            .expect("valid");
        for c in [
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"get_weather","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": "}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"name":"noop"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
        ] {
            text.push_str(&t.chunk(c).expect("valid"));
        }
        text.push_str(&t.end());
        assert_eq!(
            text,
            "Let me look.\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n\
             {\"name\": \"noop\", \"arguments\": {}}\n"
        );
        assert_eq!(t.finish, Some(StopReason::Eog));
    }

    #[test]
    fn malformed_chunks_and_reported_errors_are_typed() {
        let mut t = Translator::new();
        assert!(matches!(
            t.chunk("{not json"),
            Err(ChunkError::Malformed(_))
        ));
        assert_eq!(
            t.chunk(r#"{"error":{"message":"out of memory"}}"#),
            Err(ChunkError::Reported("out of memory".into()))
        );
    }
}
