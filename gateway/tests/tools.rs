//! Tool calls through the codec, on the scripted engine: what the model "writes" is scripted,
//! and the client must receive valid OpenAI `tool_calls`, streamed without retraction.

#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use models::{GrammarSpec, Prompt, Script};
use serde_json::{Value, json};

const WEATHER_TOOLS: &str = r#""tools":[{"type":"function","function":{"name":"get_weather","description":"Weather for a city","parameters":{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}}},{"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{}}}}]"#;

const HERMES_CALL: &str = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}\n</tool_call>";

fn tools_body(extra: &str) -> String {
    let sep = if extra.is_empty() { "" } else { "," };
    chat_body(&format!("{WEATHER_TOOLS}{sep}{extra}"))
}

fn args_of(call: &Value) -> Value {
    serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap()
}

#[tokio::test]
async fn native_call_non_stream_becomes_tool_calls() {
    let (server, engine) = start(HERMES_CALL).await;
    let r = server.post("/v1/chat/completions", &tools_body("")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    let choice = &v["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["content"], Value::Null);
    let calls = choice["message"]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["type"], "function");
    assert!(calls[0]["id"].as_str().unwrap().starts_with("call_"));
    assert_eq!(calls[0]["function"]["name"], "get_weather");
    assert_eq!(args_of(&calls[0]), json!({"location": "Paris"}));
    // Standard clients never see the extension field outside the text protocol.
    assert!(calls[0].get("bellows").is_none());

    // The tools reached the chat template, and no grammar was imposed for `auto`.
    let seen = engine.seen.lock().unwrap().clone();
    let Prompt::Chat { tools, .. } = &seen[0].prompt else {
        panic!("chat prompt")
    };
    assert_eq!(
        tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        ["get_weather", "get_time"]
    );
    assert_eq!(seen[0].grammar, None);
    let m = server.metrics().await;
    assert_eq!(
        gateway::metrics::sample(&m, r#"bellows_decoded_proposals_total{format="hermes"}"#),
        Some(1.0),
        "{m}"
    );
    server.stop().await.unwrap();
}

/// Checks the OpenAI streaming contract for tool calls and returns (name, arguments) per index.
fn assemble_stream(events: &[Value]) -> Vec<(String, String)> {
    let mut calls: Vec<(String, String)> = Vec::new();
    for e in events {
        let Some(choice) = e["choices"].get(0) else {
            continue;
        };
        let Some(deltas) = choice["delta"]["tool_calls"].as_array() else {
            continue;
        };
        for d in deltas {
            let i = d["index"].as_u64().unwrap() as usize;
            if i == calls.len() {
                // The first fragment of a call carries id, type and the whole name.
                assert!(d["id"].as_str().unwrap().starts_with("call_"), "{d}");
                assert_eq!(d["type"], "function");
                calls.push((
                    d["function"]["name"].as_str().unwrap().to_owned(),
                    String::new(),
                ));
                assert_eq!(d["function"]["arguments"], "");
            } else {
                assert!(i < calls.len(), "indices are dense and in order: {d}");
                assert!(
                    d.get("id").is_none() && d["function"].get("name").is_none(),
                    "{d}"
                );
                if let Some(a) = d["function"]["arguments"].as_str() {
                    calls[i].1.push_str(a);
                }
            }
        }
    }
    calls
}

/// The `tool_calls` deltas of a stream, and the content, as (events with a call delta, content).
fn call_events_and_content(events: &[Value]) -> (usize, String) {
    let with_calls = events
        .iter()
        .filter(|e| e["choices"][0]["delta"]["tool_calls"].is_array())
        .count();
    let content = common::delta_text(events, "content");
    (with_calls, content)
}

/// Without a grammar, nothing of a call reaches the client before its arguments validated:
/// the call arrives whole (name, then all its arguments), however the model's text was cut.
#[tokio::test]
async fn without_a_grammar_a_streamed_call_is_sent_whole_once_valid() {
    let engine = scripted("unused");
    // One byte per piece: the hardest chunking for the decoder.
    engine.push(Script::chunked(HERMES_CALL, 1));
    let server = start_engine(engine.clone()).await;
    let r = server
        .post("/v1/chat/completions", &tools_body(r#""stream":true"#))
        .await;
    assert_eq!(r.status, 200);
    let events = r.events();
    let calls = assemble_stream(&events);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].0, "get_weather");
    assert_eq!(
        serde_json::from_str::<Value>(&calls[0].1).unwrap(),
        json!({"location": "Paris"})
    );
    // The start and the whole arguments: two call deltas, no partial fragments.
    let (with_calls, content) = call_events_and_content(&events);
    assert_eq!(with_calls, 2, "{events:?}");
    let last = events.last().unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], "tool_calls");
    // No content leaked from the call's markup.
    assert_eq!(content.trim(), "");
    server.stop().await.unwrap();
}

/// Under a grammar that guarantees the call (`tool_choice: "required"`), argument fragments
/// stream as they are generated.
#[tokio::test]
async fn under_a_guaranteeing_grammar_arguments_stream_in_fragments() {
    let engine = scripted("unused");
    engine.push(Script::chunked(
        r#"{"name": "get_weather", "arguments": {"location": "Paris"}}"#,
        1,
    ));
    let server = start_engine(engine.clone()).await;
    let r = server
        .post(
            "/v1/chat/completions",
            &tools_body(r#""stream":true,"tool_choice":"required""#),
        )
        .await;
    let events = r.events();
    let calls = assemble_stream(&events);
    assert_eq!(calls.len(), 1, "{events:?}");
    assert_eq!(
        serde_json::from_str::<Value>(&calls[0].1).unwrap(),
        json!({"location": "Paris"})
    );
    let fragments = events
        .iter()
        .filter(|e| e["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] != "")
        .filter(|e| e["choices"][0]["delta"]["tool_calls"].is_array())
        .count();
    assert!(fragments > 1, "{fragments} fragments");
    assert_eq!(
        events.last().unwrap()["choices"][0]["finish_reason"],
        "tool_calls"
    );
    server.stop().await.unwrap();
}

/// A call whose arguments fail the schema, streamed byte by byte: no `tool_calls` delta at
/// all, its text comes back as content unchanged, and the finish reason is "stop".
#[tokio::test]
async fn a_streamed_call_that_fails_validation_sends_nothing_but_its_text() {
    let bad = "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": 5}}\n</tool_call>";
    let engine = scripted("unused");
    engine.push(Script::chunked(bad, 1));
    let server = start_engine(engine.clone()).await;
    let events = server
        .post("/v1/chat/completions", &tools_body(r#""stream":true"#))
        .await
        .events();
    let (with_calls, content) = call_events_and_content(&events);
    assert_eq!(with_calls, 0, "{events:?}");
    assert_eq!(content, bad);
    assert_eq!(
        events.last().unwrap()["choices"][0]["finish_reason"],
        "stop"
    );
    assert_eq!(
        server
            .metric(r#"bellows_decode_failures_total{kind="bad_arguments"}"#)
            .await,
        1.0
    );
    server.stop().await.unwrap();
}

/// With client tools, bellows' own protocol is not decoded: verb lines and an aider-style
/// fenced edit are the model's prose and come back byte for byte; only the declared tool's
/// call becomes a tool call.
#[tokio::test]
async fn with_client_tools_verbs_and_edit_blocks_stay_prose() {
    let prose = "To fix this, RUN make test first.\nRUN make test\nREAD src/a.py\nsrc/a.py\n```python\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n```\n";
    let reply = format!("{prose}{HERMES_CALL}");
    for chunk in [1, 3, 4096] {
        let engine = scripted("unused");
        engine.push(Script::chunked(&reply, chunk));
        engine.push(Script::chunked(&reply, chunk));
        let server = start_engine(engine.clone()).await;
        let v = server
            .post("/v1/chat/completions", &tools_body(""))
            .await
            .json();
        let msg = &v["choices"][0]["message"];
        assert_eq!(msg["content"], prose, "chunk {chunk}: {v}");
        let calls = msg["tool_calls"].as_array().unwrap();
        assert_eq!(calls.len(), 1, "chunk {chunk}: {v}");
        assert_eq!(calls[0]["function"]["name"], "get_weather");
        assert!(msg.get("bellows").is_none(), "no failure either: {v}");
        let events = server
            .post("/v1/chat/completions", &tools_body(r#""stream":true"#))
            .await
            .events();
        let (_, content) = call_events_and_content(&events);
        assert_eq!(content, prose, "chunk {chunk}, streamed");
        assert_eq!(assemble_stream(&events).len(), 1);
        server.stop().await.unwrap();
    }
}

/// `parallel_tool_calls: false`: at most one call; generation is halted after it.
#[tokio::test]
async fn parallel_tool_calls_false_yields_one_call() {
    let two = format!(
        "{HERMES_CALL}\n<tool_call>\n{{\"name\": \"get_time\", \"arguments\": {{}}}}\n</tool_call>"
    );
    let engine = scripted("unused");
    engine.push(Script::chunked(&two, 2));
    engine.push(Script::chunked(&two, 2));
    let server = start_engine(engine.clone()).await;
    let v = server
        .post("/v1/chat/completions", &tools_body(""))
        .await
        .json();
    assert_eq!(
        v["choices"][0]["message"]["tool_calls"]
            .as_array()
            .unwrap()
            .len(),
        2,
        "{v}"
    );
    let v = server
        .post(
            "/v1/chat/completions",
            &tools_body(r#""parallel_tool_calls":false"#),
        )
        .await
        .json();
    let calls = v["choices"][0]["message"]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{v}");
    assert_eq!(calls[0]["function"]["name"], "get_weather");
    assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
    // The engine stopped early: fewer tokens than the whole two-call reply.
    let all = two.len().div_ceil(2) as u64;
    assert!(
        v["usage"]["completion_tokens"].as_u64().unwrap() < all,
        "{v}"
    );
    server.stop().await.unwrap();
}

#[tokio::test]
async fn bare_json_call_from_a_small_model_is_decoded() {
    let (server, _engine) =
        start(r#"{"name": "get_weather", "arguments": {"location": "Oslo"}}"#).await;
    let v = server
        .post("/v1/chat/completions", &tools_body(""))
        .await
        .json();
    let call = &v["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(call["function"]["name"], "get_weather");
    assert_eq!(args_of(call), json!({"location": "Oslo"}));
    server.stop().await.unwrap();
}

#[tokio::test]
async fn required_and_named_choices_constrain_with_a_schema_grammar() {
    let (server, engine) =
        start(r#"{"name": "get_weather", "arguments": {"location": "Rome"}}"#).await;
    let r = server
        .post(
            "/v1/chat/completions",
            &tools_body(r#""tool_choice":"required""#),
        )
        .await;
    assert_eq!(r.json()["choices"][0]["finish_reason"], "tool_calls");
    let r = server
        .post(
            "/v1/chat/completions",
            &tools_body(r#""tool_choice":{"type":"function","function":{"name":"get_weather"}}"#),
        )
        .await;
    let v = r.json();
    assert_eq!(
        v["choices"][0]["message"]["tool_calls"][0]["function"]["name"],
        "get_weather"
    );
    let seen = engine.seen.lock().unwrap().clone();
    let Some(GrammarSpec::JsonSchema(required)) = &seen[0].grammar else {
        panic!("grammar")
    };
    let names: Vec<&Value> = required["anyOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["properties"]["name"]["const"])
        .collect();
    assert_eq!(names, [&json!("get_weather"), &json!("get_time")]);
    let Some(GrammarSpec::JsonSchema(named)) = &seen[1].grammar else {
        panic!("grammar")
    };
    assert_eq!(named["properties"]["name"]["const"], "get_weather");
    assert_eq!(
        named["properties"]["arguments"]["required"],
        json!(["location"])
    );
    server.stop().await.unwrap();
}

#[tokio::test]
async fn tool_choice_none_serves_plain_content() {
    let (server, engine) = start(HERMES_CALL).await;
    let v = server
        .post(
            "/v1/chat/completions",
            &tools_body(r#""tool_choice":"none""#),
        )
        .await
        .json();
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    assert_eq!(v["choices"][0]["message"]["content"], HERMES_CALL);
    let seen = engine.seen.lock().unwrap().clone();
    let Prompt::Chat { tools, .. } = &seen[0].prompt else {
        panic!("chat prompt")
    };
    assert!(tools.is_empty());
    server.stop().await.unwrap();
}

#[tokio::test]
async fn schema_violation_comes_back_as_content_and_is_counted() {
    let bad =
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": 5}}\n</tool_call>";
    let (server, _engine) = start(bad).await;
    let v = server
        .post("/v1/chat/completions", &tools_body(""))
        .await
        .json();
    let msg = &v["choices"][0]["message"];
    assert!(msg.get("tool_calls").is_none(), "{v}");
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    assert!(
        msg["content"].as_str().unwrap().contains("\"location\": 5"),
        "{v}"
    );
    assert_eq!(msg["bellows"]["failures"][0]["kind"], "bad_arguments");
    let m = server.metrics().await;
    assert_eq!(
        gateway::metrics::sample(&m, r#"bellows_decode_failures_total{kind="bad_arguments"}"#),
        Some(1.0)
    );
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_call_to_an_undeclared_builtin_is_not_sent_as_a_tool_call() {
    let text =
        "<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}\n</tool_call>";
    let (server, _engine) = start(text).await;
    let v = server
        .post("/v1/chat/completions", &tools_body(""))
        .await
        .json();
    let msg = &v["choices"][0]["message"];
    assert!(msg.get("tool_calls").is_none(), "{v}");
    // The model's words come back unchanged, with the failure named.
    assert_eq!(msg["content"], text, "{v}");
    assert_eq!(msg["bellows"]["failures"][0]["kind"], "unknown_tool");
    server.stop().await.unwrap();
}

#[tokio::test]
async fn text_protocol_extension_returns_proposals_with_repairs() {
    let reply = "I will fix it.\nEDIT src/a.py\n<<<<<<<SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\nREAD src/b.py\n";
    let engine = scripted("unused");
    engine.push(Script::chunked(reply, 2));
    engine.push(Script::chunked(reply, 2));
    let server = start_engine(engine.clone()).await;
    let body = chat_body(r#""bellows":{"protocol":"text"}"#);
    let v = server.post("/v1/chat/completions", &body).await.json();
    let choice = &v["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["content"], "I will fix it.\n");
    let calls = choice["message"]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2, "{v}");
    assert_eq!(calls[0]["function"]["name"], "edit");
    assert_eq!(
        args_of(&calls[0]),
        json!({"path": "src/a.py", "blocks": [{"search": "x = 1\n", "replace": "x = 2\n"}]})
    );
    assert_eq!(
        calls[0]["bellows"],
        json!({"format": "text", "repairs": ["marker_run_together"]})
    );
    assert_eq!(calls[1]["function"]["name"], "read");
    assert_eq!(args_of(&calls[1]), json!({"path": "src/b.py"}));
    assert_eq!(calls[1]["bellows"]["repairs"], json!([]));

    // The model was taught the protocol in a system message.
    let seen = engine.seen.lock().unwrap().clone();
    let Prompt::Chat { messages, tools } = &seen[0].prompt else {
        panic!("chat prompt")
    };
    assert_eq!(messages[0].role, "system");
    assert!(
        messages[0].content.contains("READ"),
        "{}",
        messages[0].content
    );
    assert!(tools.is_empty());

    // Streamed, the same calls arrive whole, with the extension after each.
    let body = chat_body(r#""bellows":{"protocol":"text"},"stream":true"#);
    let events = server.post("/v1/chat/completions", &body).await.events();
    let calls = assemble_stream(&events);
    assert_eq!(
        calls.iter().map(|c| c.0.as_str()).collect::<Vec<_>>(),
        ["edit", "read"]
    );
    let ext: Vec<&Value> = events
        .iter()
        .filter_map(|e| e["choices"][0]["delta"]["tool_calls"][0].get("bellows"))
        .collect();
    assert_eq!(ext[0]["repairs"], json!(["marker_run_together"]));
    let m = server.metrics().await;
    assert_eq!(
        gateway::metrics::sample(&m, r#"bellows_repairs_total{kind="marker_run_together"}"#),
        Some(2.0)
    );
    server.stop().await.unwrap();
}

#[tokio::test]
async fn past_tool_calls_and_results_reach_the_prompt() {
    let (server, engine) = start("It is sunny.").await;
    let body = format!(
        r#"{{"messages":[{{"role":"user","content":"weather?"}},{{"role":"assistant","content":null,"tool_calls":[{{"id":"call_1","type":"function","function":{{"name":"get_weather","arguments":"{{\"location\":\"Paris\"}}"}}}}]}},{{"role":"tool","tool_call_id":"call_1","content":"sunny"}}],{WEATHER_TOOLS}}}"#
    );
    let r = server.post("/v1/chat/completions", &body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["choices"][0]["message"]["content"], "It is sunny.");
    let seen = engine.seen.lock().unwrap().clone();
    let Prompt::Chat { messages, .. } = &seen[0].prompt else {
        panic!("chat prompt")
    };
    assert_eq!(messages[1].role, "assistant");
    assert!(
        messages[1].content.contains(r#""name":"get_weather""#),
        "{}",
        messages[1].content
    );
    assert_eq!(messages[2].role, "tool");
    assert_eq!(messages[2].content, "sunny");
    server.stop().await.unwrap();
}

#[tokio::test]
async fn a_client_tool_may_use_a_builtin_name_with_its_own_schema() {
    // An editor harness declares its own `read` taking `file`, not bellows' `path`.
    let text =
        "<tool_call>\n{\"name\": \"read\", \"arguments\": {\"file\": \"a.txt\"}}\n</tool_call>";
    let (server, _engine) = start(text).await;
    let body = chat_body(
        r#""tools":[{"type":"function","function":{"name":"read","parameters":{"type":"object","properties":{"file":{"type":"string"}},"required":["file"],"additionalProperties":false}}}]"#,
    );
    let v = server.post("/v1/chat/completions", &body).await.json();
    let choice = &v["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls", "{v}");
    let calls = choice["message"]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{v}");
    assert_eq!(calls[0]["function"]["name"], "read");
    assert_eq!(args_of(&calls[0]), json!({"file": "a.txt"}));
    server.stop().await.unwrap();
}
