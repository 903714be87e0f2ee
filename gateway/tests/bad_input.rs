//! The bad-input suite: malformed and unservable requests each get the right status, an
//! OpenAI-shaped error naming the problem, and leave the server serving the next good request.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use common::*;
use gateway::state::AppState;
use models::{Script, ScriptedEngine};

struct Case {
    name: &'static str,
    method: &'static str,
    path: &'static str,
    body: Vec<u8>,
    status: u16,
    code: &'static str,
    /// The `param` the error must name, when it names one.
    param: Option<&'static str>,
}

fn case(name: &'static str, body: &str, status: u16, code: &'static str) -> Case {
    Case {
        name,
        method: "POST",
        path: "/v1/chat/completions",
        body: body.as_bytes().to_vec(),
        status,
        code,
        param: None,
    }
}

impl Case {
    fn param(mut self, p: &'static str) -> Case {
        self.param = Some(p);
        self
    }
    fn at(mut self, method: &'static str, path: &'static str) -> Case {
        self.method = method;
        self.path = path;
        self
    }
}

const USER: &str = r#"[{"role":"user","content":"hi"}]"#;

fn chat(extra: &str) -> String {
    format!(r#"{{"messages":{USER},{extra}}}"#)
}

fn msgs(messages: &str) -> String {
    format!(r#"{{"messages":{messages}}}"#)
}

fn tools(extra: &str) -> String {
    chat(&format!(
        r#""tools":[{{"type":"function","function":{{"name":"f","parameters":{{"type":"object","properties":{{"a":{{"type":"string"}}}}}}}}}}],{extra}"#
    ))
}

fn cases() -> Vec<Case> {
    let long_prompt = format!(
        r#"{{"messages":[{{"role":"user","content":"{}"}}]}}"#,
        "word ".repeat(80)
    );
    let deep = format!(r#"{{"messages":{}}}"#, "[".repeat(1000));
    let many_stops = format!(r#""stop":[{}]"#, vec![r#""x""#; 20].join(","));
    let huge = format!(
        r#"{{"messages":[{{"role":"user","content":"{}"}}]}}"#,
        "a".repeat(10_000)
    );
    vec![
        case("truncated JSON", "{", 400, "invalid_json"),
        case("empty body", "", 400, "invalid_json"),
        case("trailing garbage", &format!("{} x", msgs(USER)), 400, "invalid_json"),
        case("body is an array", "[]", 400, "invalid_value").param("body"),
        case("body is a string", r#""hi""#, 400, "invalid_value").param("body"),
        case("deeply nested JSON", &deep, 400, "invalid_json"),
        case("missing messages", r#"{"model":"scripted-model"}"#, 400, "missing_field").param("messages"),
        case("messages is a string", &msgs(r#""hi""#), 400, "invalid_value").param("messages"),
        case("messages is empty", &msgs("[]"), 400, "invalid_value").param("messages"),
        case("message without role", &msgs(r#"[{"content":"hi"}]"#), 400, "missing_field")
            .param("messages[0].role"),
        case("unknown role", &msgs(r#"[{"role":"wizard","content":"hi"}]"#), 400, "invalid_value")
            .param("messages[0].role"),
        case("content is a number", &msgs(r#"[{"role":"user","content":5}]"#), 400, "invalid_value")
            .param("messages[0].content"),
        case(
            "image content part",
            &msgs(r#"[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]"#),
            400,
            "unsupported_parameter",
        )
        .param("messages[0].content[0].type"),
        case("text part without text", &msgs(r#"[{"role":"user","content":[{"type":"text"}]}]"#), 400, "missing_field")
            .param("messages[0].content[0].text"),
        case("user content null", &msgs(r#"[{"role":"user","content":null}]"#), 400, "missing_field")
            .param("messages[0].content"),
        case("tool message without id", &msgs(r#"[{"role":"tool","content":"x"}]"#), 400, "missing_field")
            .param("messages[0].tool_call_id"),
        case(
            "user message with tool_calls",
            &msgs(r#"[{"role":"user","content":"x","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]}]"#),
            400,
            "invalid_value",
        )
        .param("messages[0].tool_calls"),
        case(
            "past call arguments not JSON",
            &msgs(r#"[{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{nope"}}]}]"#),
            400,
            "invalid_value",
        )
        .param("messages[0].tool_calls[0].function.arguments"),
        case("model is a number", &chat(r#""model":7"#), 400, "invalid_value").param("model"),
        case("n = 0", &chat(r#""n":0"#), 400, "invalid_value").param("n"),
        case("n over the cap", &chat(r#""n":17"#), 400, "invalid_value").param("n"),
        case("n is negative", &chat(r#""n":-1"#), 400, "invalid_value").param("n"),
        case("temperature is a string", &chat(r#""temperature":"hot""#), 400, "invalid_value")
            .param("temperature"),
        case("temperature out of range", &chat(r#""temperature":5"#), 400, "invalid_value")
            .param("temperature"),
        case("top_p zero", &chat(r#""top_p":0"#), 400, "invalid_value").param("top_p"),
        case("negative max_tokens", &chat(r#""max_tokens":-1"#), 400, "invalid_value")
            .param("max_tokens"),
        case("zero max_tokens", &chat(r#""max_tokens":0"#), 400, "invalid_value").param("max_tokens"),
        case("max_tokens as string", &chat(r#""max_tokens":"10""#), 400, "invalid_value")
            .param("max_tokens"),
        case("stop is a number", &chat(r#""stop":5"#), 400, "invalid_value").param("stop"),
        case("empty stop string", &chat(r#""stop":[""]"#), 400, "invalid_value").param("stop"),
        case("too many stop strings", &chat(&many_stops), 400, "invalid_value").param("stop"),
        case("stream is a string", &chat(r#""stream":"yes""#), 400, "invalid_value").param("stream"),
        case("stream_options without stream", &chat(r#""stream_options":{"include_usage":true}"#), 400, "invalid_value")
            .param("stream_options"),
        case("top_logprobs without logprobs", &chat(r#""top_logprobs":2"#), 400, "invalid_value")
            .param("top_logprobs"),
        case("top_logprobs over 20", &chat(r#""logprobs":true,"top_logprobs":21"#), 400, "invalid_value")
            .param("top_logprobs"),
        case("zero max_completion_tokens", &chat(r#""max_completion_tokens":0"#), 400, "invalid_value")
            .param("max_completion_tokens"),
        case("max_tokens past the context", &chat(r#""max_tokens":100"#), 400, "context_length_exceeded")
            .param("max_tokens"),
        case(
            "max_completion_tokens past the context",
            &chat(r#""max_completion_tokens":100"#),
            400,
            "context_length_exceeded",
        )
        .param("max_completion_tokens"),
        case("logit_bias key not a token", &chat(r#""logit_bias":{"abc":1}"#), 400, "invalid_value")
            .param("logit_bias.abc"),
        case("logit_bias token past the vocabulary", &chat(r#""logit_bias":{"99999999":1}"#), 400, "invalid_value")
            .param("logit_bias.99999999"),
        case("logit_bias out of range", &chat(r#""logit_bias":{"5":101}"#), 400, "invalid_value")
            .param("logit_bias.5"),
        case("frequency_penalty out of range", &chat(r#""frequency_penalty":3"#), 400, "invalid_value")
            .param("frequency_penalty"),
        case("presence_penalty out of range", &chat(r#""presence_penalty":-2.5"#), 400, "invalid_value")
            .param("presence_penalty"),
        case(
            "grammar with tools",
            &chat(r#""grammar":"root ::= \"x\"","tools":[{"type":"function","function":{"name":"f"}}]"#),
            400,
            "unsupported_parameter",
        )
        .param("grammar"),
        case("tools is an object", &chat(r#""tools":{}"#), 400, "invalid_value").param("tools"),
        case(
            "tool of unknown type",
            &chat(r#""tools":[{"type":"retrieval","function":{"name":"f"}}]"#),
            400,
            "invalid_value",
        )
        .param("tools[0].type"),
        case(
            "invalid tool name",
            &chat(r#""tools":[{"type":"function","function":{"name":"bad name!"}}]"#),
            400,
            "invalid_value",
        )
        .param("tools[0].function.name"),
        case(
            "duplicate tool names",
            &chat(r#""tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}]"#),
            400,
            "invalid_value",
        )
        .param("tools[1].function.name"),
        case(
            "parameters not an object",
            &chat(r#""tools":[{"type":"function","function":{"name":"f","parameters":"x"}}]"#),
            400,
            "invalid_value",
        )
        .param("tools[0].function.parameters"),
        case(
            "parameters not a valid schema",
            &chat(r#""tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"frobnicate"}}}}}]"#),
            400,
            "invalid_value",
        )
        .param("tools[0].function.parameters"),
        case(
            "text-protocol tool named like a builtin",
            &chat(r#""tools":[{"type":"function","function":{"name":"Read"}}],"bellows":{"protocol":"text"}"#),
            400,
            "unsupported_parameter",
        )
        .param("tools[0].function.name"),
        case("unknown tool_choice", &tools(r#""tool_choice":"sometimes""#), 400, "invalid_value")
            .param("tool_choice"),
        case("required without tools", &chat(r#""tool_choice":"required""#), 400, "invalid_value")
            .param("tool_choice"),
        case(
            "named tool not declared",
            &tools(r#""tool_choice":{"type":"function","function":{"name":"g"}}"#),
            400,
            "invalid_value",
        )
        .param("tool_choice.function.name"),
        case("unknown response_format", &chat(r#""response_format":{"type":"xml"}"#), 400, "invalid_value")
            .param("response_format.type"),
        case(
            "json_schema without its object",
            &chat(r#""response_format":{"type":"json_schema"}"#),
            400,
            "missing_field",
        )
        .param("response_format.json_schema"),
        case(
            "json_schema schema is a string",
            &chat(r#""response_format":{"type":"json_schema","json_schema":{"name":"x","schema":"no"}}"#),
            400,
            "invalid_schema",
        ),
        case("response_format with tools", &tools(r#""response_format":{"type":"json_object"}"#), 400, "unsupported_parameter")
            .param("response_format"),
        case("unknown bellows protocol", &chat(r#""bellows":{"protocol":"klingon"}"#), 400, "invalid_value")
            .param("bellows.protocol"),
        case("prompt over the context", &long_prompt, 400, "context_length_exceeded").param("messages"),
        case("body over the size limit", &huge, 413, "body_too_large"),
        case("GET on a POST endpoint", "", 405, "method_not_allowed").at("GET", "/v1/chat/completions"),
        case("POST on /health", "", 405, "method_not_allowed").at("POST", "/health"),
        case("unknown path", "{}", 404, "not_found").at("POST", "/v1/nothing"),
        case("completion without prompt", "{}", 400, "missing_field")
            .param("prompt")
            .at("POST", "/v1/completions"),
        case("completion with two prompts", r#"{"prompt":["a","b"]}"#, 400, "unsupported_parameter")
            .param("prompt")
            .at("POST", "/v1/completions"),
        case("completion with echo", r#"{"prompt":"a","echo":true}"#, 400, "unsupported_parameter")
            .param("echo")
            .at("POST", "/v1/completions"),
        case("completion with n = 0", r#"{"prompt":"a","n":0}"#, 400, "invalid_value")
            .param("n")
            .at("POST", "/v1/completions"),
        case("completion with n over the cap", r#"{"prompt":"a","n":17}"#, 400, "invalid_value")
            .param("n")
            .at("POST", "/v1/completions"),
        case("completion with best_of below n", r#"{"prompt":"a","n":2,"best_of":1}"#, 400, "invalid_value")
            .param("best_of")
            .at("POST", "/v1/completions"),
        case("completion with best_of above 1", r#"{"prompt":"a","best_of":3}"#, 400, "unsupported_parameter")
            .param("best_of")
            .at("POST", "/v1/completions"),
        case("completion prompt is a number", r#"{"prompt":5}"#, 400, "invalid_value")
            .param("prompt")
            .at("POST", "/v1/completions"),
        case("tokenize without content", r#"{"text":"a"}"#, 400, "missing_field")
            .param("content")
            .at("POST", "/tokenize"),
        Case {
            name: "invalid UTF-8",
            method: "POST",
            path: "/v1/chat/completions",
            body: b"{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe\"}]}".to_vec(),
            status: 400,
            code: "invalid_json",
            param: None,
        },
    ]
}

fn error_type(status: u16) -> &'static str {
    match status {
        401 => "authentication_error",
        404 => "not_found_error",
        503 => "overloaded_error",
        _ => "invalid_request_error",
    }
}

async fn good_request_succeeds(server: &TestServer, after: &str) {
    let r = server.post("/v1/chat/completions", &chat_body("")).await;
    assert_eq!(r.status, 200, "good request after {after:?}: {}", r.text());
    assert_eq!(r.json()["choices"][0]["message"]["content"], "ok");
}

#[tokio::test]
async fn every_bad_request_gets_its_error_and_the_server_keeps_serving() {
    let engine = Arc::new(ScriptedEngine::new(MODEL, Script::chunked("ok", 3)).with_ctx(64));
    let state = AppState::new(engine).with_max_body_bytes(4096);
    let server = start_state(state).await;
    let cases = cases();
    assert!(cases.len() >= 40, "{} cases", cases.len());
    for c in &cases {
        let r = request(
            server.addr,
            c.method,
            c.path,
            &[("content-type", "application/json")],
            &c.body,
        )
        .await;
        let v = r.json();
        assert_eq!(r.status, c.status, "{}: {v}", c.name);
        assert_eq!(v["error"]["code"], c.code, "{}: {v}", c.name);
        assert_eq!(v["error"]["type"], error_type(c.status), "{}: {v}", c.name);
        assert!(
            !v["error"]["message"].as_str().unwrap().is_empty(),
            "{}",
            c.name
        );
        match c.param {
            Some(p) => assert_eq!(v["error"]["param"], p, "{}: {v}", c.name),
            None => assert!(v["error"]["param"].is_null(), "{}: {v}", c.name),
        }
        good_request_succeeds(&server, c.name).await;
    }
    // Every refusal was counted under its kind.
    let m = server.metrics().await;
    let total: f64 = gateway::error::ApiError::KINDS
        .iter()
        .map(|k| {
            gateway::metrics::sample(&m, &format!(r#"bellows_errors_total{{kind="{k}"}}"#)).unwrap()
        })
        .sum();
    assert_eq!(total, cases.len() as f64);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn over_long_prompt_names_both_token_counts() {
    let engine = Arc::new(ScriptedEngine::new(MODEL, Script::chunked("ok", 3)).with_ctx(64));
    let server = start_engine(engine).await;
    let body = format!(
        r#"{{"messages":[{{"role":"user","content":"{}"}}]}}"#,
        "word ".repeat(80)
    );
    let r = server.post("/v1/chat/completions", &body).await;
    assert_eq!(r.status, 400);
    let msg = r.json()["error"]["message"].as_str().unwrap().to_owned();
    // 80 words plus the template's 3 role markers; the context holds 64.
    assert!(msg.contains("83") && msg.contains("64"), "{msg}");
    server.stop().await.unwrap();
}

#[tokio::test]
async fn chunked_body_over_the_limit_is_refused_while_reading() {
    let engine = scripted("ok");
    let state = AppState::new(engine).with_max_body_bytes(2048);
    let server = start_state(state).await;
    let chunk = "a".repeat(1000);
    let mut raw = String::from(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n",
    );
    for _ in 0..4 {
        raw.push_str(&format!("{:x}\r\n{chunk}\r\n", chunk.len()));
    }
    raw.push_str("0\r\n\r\n");
    let r = send_raw(server.addr, raw.as_bytes()).await;
    assert_eq!(r.status, 413);
    assert_eq!(r.error_code(), "body_too_large");
    good_request_succeeds(&server, "chunked").await;
    server.stop().await.unwrap();
}

#[tokio::test]
async fn queue_full_is_503_with_retry_after() {
    let inner = ScriptedEngine::new(MODEL, Script::chunked("ok", 3));
    let server = start_engine(Arc::new(FullEngine { inner })).await;
    let r = server.post("/v1/chat/completions", &chat_body("")).await;
    assert_eq!(r.status, 503);
    assert_eq!(r.header("retry-after"), Some("1"));
    assert_eq!(r.error_code(), "queue_full");
    assert_eq!(r.json()["error"]["type"], "overloaded_error");
    // A refused request is neither queued, busy nor cancelled.
    assert_eq!(server.metric("bellows_queue_depth").await, 0.0);
    assert_eq!(server.metric("bellows_cancellations_total").await, 0.0);
    server.stop().await.unwrap();
}
