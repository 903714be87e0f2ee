//! The gateway's side of "trust at the boundary", on the scripted engine: any model name,
//! seeds, written-back calls in the profile's format, tool results matched to their calls, the
//! text protocol's builtin tool choices, the profile's lazy grammar, log probabilities, and a
//! client that stops reading.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use codec::format::FormatId;
use common::*;
use gateway::defaults::Defaults;
use gateway::state::AppState;
use models::{GrammarMode, GrammarSpec, Prompt, Sampling, Script, ScriptedEngine};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

const WEATHER_TOOL: &str = r#""tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}}}]"#;

fn engine(text: &str) -> Arc<ScriptedEngine> {
    Arc::new(ScriptedEngine::new(MODEL, Script::chunked(text, 3)))
}

async fn server_with(engine: Arc<ScriptedEngine>, defaults: Defaults) -> TestServer {
    start_state(
        AppState::new(engine)
            .with_ids(gateway::ids::IdGen::sequential())
            .with_defaults(defaults),
    )
    .await
}

fn body(model: &str, extra: &str) -> String {
    format!(r#"{{"model":"{model}","messages":[{{"role":"user","content":"hi"}}]{extra}}}"#)
}

#[tokio::test]
async fn any_model_name_is_served_and_aliases_are_listed() {
    let state =
        AppState::new(engine("ok")).with_aliases(vec!["default".to_owned(), "smollm2".to_owned()]);
    let server = start_state(state).await;
    for name in ["gpt-4o", "default", "anything/at-all:7b", MODEL] {
        let r = server.post("/v1/chat/completions", &body(name, "")).await;
        assert_eq!(r.status, 200, "{name}: {}", r.text());
        assert_eq!(
            r.json()["model"],
            name,
            "the answer names the model as asked"
        );
        let r = server
            .post(
                "/v1/completions",
                &format!(r#"{{"model":"{name}","prompt":"x"}}"#),
            )
            .await;
        assert_eq!(r.status, 200, "{name}: {}", r.text());
    }
    // Without `model` at all, the model's own id.
    let r = server
        .post(
            "/v1/chat/completions",
            r#"{"messages":[{"role":"user","content":"hi"}]}"#,
        )
        .await;
    assert_eq!(r.json()["model"], MODEL);
    let v = server.get("/v1/models").await.json();
    let ids: Vec<&str> = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [MODEL, "default", "smollm2"]);
    assert_eq!(v["data"][1]["bellows"]["alias_of"], MODEL);
    let r = server.get("/v1/models/gpt-4o").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["id"], "gpt-4o");
    server.stop().await.unwrap();
}

#[tokio::test]
async fn the_seed_is_random_unless_given_or_pinned_by_the_profile() {
    let e = engine("ok");
    let server = server_with(e.clone(), Defaults::default()).await;
    server.post("/v1/chat/completions", &body(MODEL, "")).await;
    server
        .post("/v1/chat/completions", &body(MODEL, r#","seed":42"#))
        .await;
    server.stop().await.unwrap();
    let pinned = Defaults::from_profile(
        "text",
        Sampling {
            seed: Some(9),
            ..Sampling::default()
        },
        GrammarMode::Off,
    );
    let server = server_with(e.clone(), pinned).await;
    server.post("/v1/chat/completions", &body(MODEL, "")).await;
    server
        .post("/v1/chat/completions", &body(MODEL, r#","seed":42"#))
        .await;
    let seeds: Vec<Option<u32>> = e
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.sampling.seed)
        .collect();
    assert_eq!(seeds, [None, Some(42), Some(9), Some(42)]);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn penalties_and_logit_bias_reach_the_engine() {
    let e = engine("ok");
    let server = start_engine(e.clone()).await;
    let r = server
        .post(
            "/v1/chat/completions",
            &body(
                MODEL,
                r#","frequency_penalty":0.5,"presence_penalty":-0.25,"logit_bias":{"17":-100,"4":2.5}"#,
            ),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let seen = e.seen.lock().unwrap()[0].sampling.clone();
    assert_eq!(seen.frequency_penalty, 0.5);
    assert_eq!(seen.presence_penalty, -0.25);
    assert_eq!(seen.logit_bias, vec![(17, f32::NEG_INFINITY), (4, 2.5)]);
    server.stop().await.unwrap();
}

/// Earlier calls go back into the prompt in the form the profile's model calls tools in.
#[tokio::test]
async fn past_calls_are_written_in_the_profiles_format_and_results_keep_their_ids() {
    let history = r#","messages":[{"role":"user","content":"weather?"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_7","type":"function","function":{"name":"get_weather","arguments":"{\"location\":\"Paris\"}"}}]},{"role":"tool","tool_call_id":"call_7","name":"get_weather","content":"sunny"}]"#;
    let req = format!(r#"{{"model":"m"{history},{WEATHER_TOOL}}}"#);
    for (protocol, marker) in [
        ("text", "<tool_call>"),
        ("hermes", "<tool_call>"),
        ("mistral", "[TOOL_CALLS]"),
        ("llama3", "<|python_tag|>"),
        ("pythonic", "[get_weather(location=\"Paris\")]"),
        ("qwen3_xml", "<function=get_weather>"),
    ] {
        let e = engine("It is sunny.");
        let defaults = Defaults::from_profile(protocol, Sampling::default(), GrammarMode::Off);
        let server = server_with(e.clone(), defaults).await;
        let r = server.post("/v1/chat/completions", &req).await;
        assert_eq!(r.status, 200, "{}", r.text());
        let seen = e.seen.lock().unwrap()[0].clone();
        let Prompt::Chat { messages, .. } = &seen.prompt else {
            panic!("chat prompt")
        };
        assert!(
            messages[1].content.contains(marker),
            "{protocol}: {}",
            messages[1].content
        );
        assert_eq!(messages[2].role, "tool");
        assert_eq!(messages[2].tool_call_id.as_deref(), Some("call_7"));
        assert_eq!(messages[2].name.as_deref(), Some("get_weather"));
        server.stop().await.unwrap();
    }
}

/// With the text protocol, a builtin past call is written back as its action line.
#[tokio::test]
async fn text_protocol_past_calls_are_written_as_actions() {
    let e = engine("DONE ok\n");
    let server = start_engine(e.clone()).await;
    let req = r#"{"bellows":{"protocol":"text"},"messages":[{"role":"user","content":"look"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{\"path\":\"src/a.py\"}"}}]},{"role":"tool","tool_call_id":"c1","content":"x = 1"}]}"#;
    let r = server.post("/v1/chat/completions", req).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let seen = e.seen.lock().unwrap()[0].clone();
    let Prompt::Chat { messages, .. } = &seen.prompt else {
        panic!("chat prompt")
    };
    let assistant = messages.iter().find(|m| m.role == "assistant").unwrap();
    assert_eq!(assistant.content, "READ src/a.py\n");
    server.stop().await.unwrap();
}

fn strict_gbnf(g: &Option<GrammarSpec>) -> String {
    match g {
        Some(GrammarSpec::Strict { gbnf, .. }) => gbnf.clone(),
        other => panic!("expected a strict grammar, got {other:?}"),
    }
}

/// In the text protocol the builtins are the tools: `required` needs no client tools and
/// forces at least one action; a named builtin restricts the grammar to that action.
#[tokio::test]
async fn text_protocol_required_and_named_builtins() {
    let e = engine("READ a.txt\n");
    let server = start_engine(e.clone()).await;
    let r = server
        .post(
            "/v1/chat/completions",
            &body(
                MODEL,
                r#","bellows":{"protocol":"text"},"tool_choice":"required""#,
            ),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.json()["choices"][0]["message"]["tool_calls"][0]["function"]["name"],
        "read"
    );
    let r = server
        .post(
            "/v1/chat/completions",
            &body(
                MODEL,
                r#","bellows":{"protocol":"text"},"tool_choice":{"type":"function","function":{"name":"read"}}"#,
            ),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let r = server
        .post(
            "/v1/chat/completions",
            &body(
                MODEL,
                r#","bellows":{"protocol":"text"},"tool_choice":{"type":"function","function":{"name":"nope"}}"#,
            ),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    let seen = e.seen.lock().unwrap().clone();
    let required = strict_gbnf(&seen[0].grammar);
    assert!(
        required.contains("root ::= prose* action (prose | action)*"),
        "{required}"
    );
    let named = strict_gbnf(&seen[1].grammar);
    assert!(named.contains("root ::= prose* read-action"), "{named}");
    server.stop().await.unwrap();
}

/// A profile whose grammar mode is `lazy` gets a grammar triggered at the call opener for
/// `auto` tool requests; the calls it shapes then stream their arguments.
#[tokio::test]
async fn the_profiles_lazy_grammar_shapes_auto_tool_calls() {
    let call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}\n</tool_call>";
    let e = engine("unused");
    e.push(Script::chunked(call, 1));
    let defaults = Defaults::from_profile("text", Sampling::default(), GrammarMode::Lazy);
    let server = server_with(e.clone(), defaults).await;
    let events = server
        .post(
            "/v1/chat/completions",
            &body(MODEL, &format!(r#",{WEATHER_TOOL},"stream":true"#)),
        )
        .await
        .events();
    let seen = e.seen.lock().unwrap()[0].clone();
    let Some(GrammarSpec::LazyJsonSchema {
        schema,
        trigger,
        close,
    }) = &seen.grammar
    else {
        panic!("lazy grammar: {:?}", seen.grammar)
    };
    assert_eq!(
        (trigger.as_str(), close.as_str()),
        ("<tool_call>", "</tool_call>")
    );
    assert_eq!(schema["properties"]["name"]["const"], "get_weather");
    let fragments = events
        .iter()
        .filter_map(|e| e["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].as_str())
        .filter(|a| !a.is_empty())
        .count();
    assert!(fragments > 1, "{fragments} fragments: {events:?}");
    server.stop().await.unwrap();
}

#[tokio::test]
async fn logprobs_are_returned_when_asked() {
    let e = engine("Hello world");
    let server = start_engine(e.clone()).await;
    let v = server
        .post(
            "/v1/chat/completions",
            &body(MODEL, r#","logprobs":true,"top_logprobs":2"#),
        )
        .await
        .json();
    let content = v["choices"][0]["logprobs"]["content"].as_array().unwrap();
    let tokens: String = content
        .iter()
        .map(|t| t["token"].as_str().unwrap())
        .collect();
    assert_eq!(tokens, "Hello world");
    assert_eq!(e.seen.lock().unwrap()[0].logprobs, Some(2));
    let v = server
        .post("/v1/chat/completions", &body(MODEL, ""))
        .await
        .json();
    assert_eq!(v["choices"][0]["logprobs"], Value::Null);
    let events = server
        .post(
            "/v1/chat/completions",
            &body(MODEL, r#","logprobs":true,"stream":true"#),
        )
        .await
        .events();
    let streamed: usize = events
        .iter()
        .filter_map(|e| e["choices"][0]["logprobs"]["content"].as_array())
        .map(Vec::len)
        .sum();
    assert_eq!(streamed, content.len());
    let v = server
        .post(
            "/v1/completions",
            &format!(r#"{{"model":"{MODEL}","prompt":"x","logprobs":1}}"#),
        )
        .await
        .json();
    let lp = &v["choices"][0]["logprobs"];
    assert_eq!(lp["tokens"].as_array().unwrap().len(), content.len(), "{v}");
    assert_eq!(lp["text_offset"][1], json!(3));
    server.stop().await.unwrap();
}

/// A client that stops reading a stream: after the write-stall bound the request is cancelled
/// and its generation dropped, instead of waiting on the client forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_whose_client_stops_reading_is_cancelled_after_the_stall_bound() {
    // Several megabytes of reply, far more than the socket buffers hold.
    let long = "0123456789abcdef".repeat(256 * 1024);
    let e = Arc::new(ScriptedEngine::new(MODEL, Script::chunked(&long, 4096)));
    let state = AppState::new(e).with_write_stall(Duration::from_millis(300));
    let server = start_state(state).await;
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut s = socket.connect(server.addr).await.unwrap();
    let req = body(MODEL, r#","stream":true"#);
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{req}",
        req.len()
    );
    s.write_all(head.as_bytes()).await.unwrap();
    // Never read. The server must give up on its own and free the request.
    assert_eq!(
        wait_metric(&server, "bellows_cancellations_total", 1.0).await,
        1.0
    );
    assert_eq!(wait_metric(&server, "bellows_busy_slots", 0.0).await, 0.0);
    // The engine's own count arrives once it let go of the work, short of the whole reply:
    // the generation was dropped, not left running.
    let generated = wait_metric_above(&server, "bellows_generated_tokens_total", 0.0).await;
    assert!(generated < (long.len() / 4096) as f64, "{generated}");
    drop(s);
    server.stop().await.unwrap();
}

#[tokio::test]
async fn text_format_profiles_decode_client_tools_in_native_formats_only() {
    // The profile speaks the text protocol; a tools request still decodes only the client's
    // tools, in every in-band native format.
    let reply = "DELETE src/a.py\n[get_weather(location=\"Rome\")]\n";
    let e = engine(reply);
    let defaults = Defaults::from_profile("text", Sampling::default(), GrammarMode::Off);
    assert_eq!(defaults.call_format(), FormatId::Hermes);
    let server = server_with(e, defaults).await;
    let v = server
        .post(
            "/v1/chat/completions",
            &body(MODEL, &format!(",{WEATHER_TOOL}")),
        )
        .await
        .json();
    let msg = &v["choices"][0]["message"];
    // The verb line is prose, byte for byte (the call's own line ending stays content too).
    assert_eq!(msg["content"], "DELETE src/a.py\n\n", "{v}");
    assert_eq!(
        msg["tool_calls"][0]["function"]["name"], "get_weather",
        "{v}"
    );
    server.stop().await.unwrap();
}

/// llama.cpp failing mid-generation is a 500 (non-streamed) or an error event (streamed),
/// counted, and never dressed up as `"stop"` or `"length"`.
#[tokio::test]
async fn an_engine_failure_is_an_error_never_a_stop() {
    let e = engine("unused");
    e.push(Script::failing(
        "Partial answ",
        4,
        "llama_decode returned -1",
    ));
    e.push(Script::failing(
        "Partial answ",
        4,
        "llama_decode returned -1",
    ));
    let server = start_engine(e).await;
    let r = server.post("/v1/chat/completions", &body(MODEL, "")).await;
    assert_eq!(r.status, 500, "{}", r.text());
    assert_eq!(r.error_code(), "engine_failure");
    assert!(r.text().contains("llama_decode"), "{}", r.text());
    let r = server
        .post("/v1/chat/completions", &body(MODEL, r#","stream":true"#))
        .await;
    assert_eq!(r.status, 200);
    let text = r.text();
    let events = r.events();
    let last = events.last().unwrap();
    assert_eq!(last["error"]["code"], "engine_failure", "{text}");
    assert!(
        events
            .iter()
            .all(|e| e["choices"][0]["finish_reason"].is_null()),
        "no finish reason after a failure: {text}"
    );
    assert!(!text.contains("[DONE]"), "{text}");
    assert_eq!(
        server
            .metric(r#"bellows_errors_total{kind="engine_failure"}"#)
            .await,
        2.0
    );
    server.stop().await.unwrap();
}

/// `<think>…</think>` is the model's reasoning: returned apart as `reasoning_content` (and
/// streamed as such), with or without tools, and never decoded into a call — even when the
/// reasoning holds a call-shaped line.
#[tokio::test]
async fn reasoning_is_returned_apart_and_never_acted_on() {
    let reply = "<think>Maybe <tool_call>{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Oslo\"}}</tool_call>? No.</think>It is sunny.";
    for tools in ["", WEATHER_TOOL] {
        let e = engine("unused");
        e.push(Script::chunked(reply, 1));
        e.push(Script::chunked(reply, 5));
        let server = start_engine(e).await;
        let extra = if tools.is_empty() {
            String::new()
        } else {
            format!(",{tools}")
        };
        let v = server
            .post("/v1/chat/completions", &body(MODEL, &extra))
            .await
            .json();
        let msg = &v["choices"][0]["message"];
        assert_eq!(msg["content"], "It is sunny.", "{v}");
        assert!(
            msg["reasoning_content"].as_str().unwrap().contains("? No."),
            "{v}"
        );
        assert!(msg.get("tool_calls").is_none(), "{v}");
        assert_eq!(v["choices"][0]["finish_reason"], "stop");
        let events = server
            .post(
                "/v1/chat/completions",
                &body(MODEL, &format!("{extra},\"stream\":true")),
            )
            .await
            .events();
        let reasoning: String = delta_text(&events, "reasoning_content");
        let content: String = delta_text(&events, "content");
        assert!(reasoning.starts_with("Maybe <tool_call>"), "{reasoning:?}");
        assert_eq!(content, "It is sunny.");
        server.stop().await.unwrap();
    }
    // Raw completions are not chat replies: the markers are plain text there.
    let e = engine("<think>x</think>y");
    let server = start_engine(e).await;
    let v = server
        .post(
            "/v1/completions",
            &format!(r#"{{"model":"{MODEL}","prompt":"q"}}"#),
        )
        .await
        .json();
    assert_eq!(v["choices"][0]["text"], "<think>x</think>y");
    server.stop().await.unwrap();
}

/// With no markers named, every known family's reasoning markers split a reply as `<think>`
/// does: `[THINK]…[/THINK]` (Magistral), `<|START_THINKING|>…` (Command R7B) and the others come
/// back as `reasoning_content`, and the call written inside is not decoded, while the same
/// call after the block is. A profile's own pair replaces the set.
#[tokio::test]
async fn every_known_familys_reasoning_is_returned_apart_and_never_acted_on() {
    let call = "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Oslo\"}}</tool_call>";
    for (open, close) in codec::KNOWN_REASONING_MARKERS {
        let inside = format!("{open}Maybe {call}? No.{close}It is sunny.");
        let after = format!("{open}Plan.{close}{call}");
        let e = engine("unused");
        e.push(Script::chunked(&inside, 1));
        e.push(Script::chunked(&inside, 4));
        e.push(Script::chunked(&after, 2));
        let server = start_engine(e).await;
        let tools = format!(",{WEATHER_TOOL}");
        let v = server
            .post("/v1/chat/completions", &body(MODEL, &tools))
            .await
            .json();
        let msg = &v["choices"][0]["message"];
        assert_eq!(msg["content"], "It is sunny.", "{open}: {v}");
        assert_eq!(
            msg["reasoning_content"],
            format!("Maybe {call}? No."),
            "{open}: {v}"
        );
        assert!(msg.get("tool_calls").is_none(), "{open}: {v}");
        let events = server
            .post(
                "/v1/chat/completions",
                &body(MODEL, &format!("{tools},\"stream\":true")),
            )
            .await
            .events();
        let reasoning: String = delta_text(&events, "reasoning_content");
        assert_eq!(reasoning, format!("Maybe {call}? No."), "{open}");
        assert!(
            events
                .iter()
                .all(|e| e["choices"][0]["delta"].get("tool_calls").is_none()),
            "{open}"
        );
        let v = server
            .post("/v1/chat/completions", &body(MODEL, &tools))
            .await
            .json();
        let msg = &v["choices"][0]["message"];
        assert_eq!(msg["reasoning_content"], "Plan.", "{open}: {v}");
        assert_eq!(
            msg["tool_calls"][0]["function"]["name"], "get_weather",
            "{open}: {v}"
        );
        assert_eq!(v["choices"][0]["finish_reason"], "tool_calls", "{open}");
        server.stop().await.unwrap();
    }
    // A profile that names `[THINK]` reads only that pair: `<think>` is then content.
    let e = engine("<think>x</think>[THINK]y[/THINK]z");
    let defaults = Defaults {
        reasoning: models::ReasoningSpec::Pair {
            open: "[THINK]".to_owned(),
            close: "[/THINK]".to_owned(),
        },
        ..Defaults::default()
    };
    let server = server_with(e, defaults).await;
    let v = server
        .post("/v1/chat/completions", &body(MODEL, ""))
        .await
        .json();
    assert_eq!(v["choices"][0]["message"]["content"], "<think>x</think>z");
    assert_eq!(v["choices"][0]["message"]["reasoning_content"], "y");
    server.stop().await.unwrap();
}

/// A profile without reasoning markers leaves `<think>` as content.
#[tokio::test]
async fn a_profile_without_reasoning_leaves_think_tags_as_content() {
    let e = engine("<think>x</think>y");
    let defaults = Defaults {
        reasoning: models::ReasoningSpec::Off,
        ..Defaults::default()
    };
    let server = server_with(e, defaults).await;
    let v = server
        .post("/v1/chat/completions", &body(MODEL, ""))
        .await
        .json();
    assert_eq!(v["choices"][0]["message"]["content"], "<think>x</think>y");
    assert!(
        v["choices"][0]["message"]
            .get("reasoning_content")
            .is_none()
    );
    server.stop().await.unwrap();
}

/// The settings `bellows tune` writes into a profile reach every request: the strict grammar
/// makes a text-protocol reply act, the lazy one waits for a verb, the prompt style teaches by
/// example, one action per reply stops after the first call, and the tool presentation moves
/// client tools into a system message even for a template that renders them.
#[tokio::test]
async fn a_tuned_profiles_settings_reach_every_request() {
    let text_protocol = r#","bellows":{"protocol":"text"}"#;
    let strict = Defaults {
        prompt_style: codec::registry::PromptStyle::Example,
        ..Defaults::from_profile("text", Sampling::default(), GrammarMode::Strict)
    };
    let e = engine("READ a.py\nREAD b.py\n");
    let server = server_with(e.clone(), strict).await;
    let v = server
        .post("/v1/chat/completions", &body(MODEL, text_protocol))
        .await
        .json();
    let seen = e.seen.lock().unwrap()[0].clone();
    let Some(GrammarSpec::Strict { gbnf, root }) = &seen.grammar else {
        panic!("strict grammar: {:?}", seen.grammar)
    };
    assert_eq!(root, "root");
    assert!(gbnf.contains("root ::= acting\n") && gbnf.contains("acting ::= lead? strict-action"));
    let Prompt::Chat { messages, .. } = &seen.prompt else {
        panic!("chat prompt")
    };
    assert!(
        messages[0]
            .content
            .contains(codec::registry::WORKED_EXAMPLE)
    );
    // Both reads come back: the profile sets no action limit.
    assert_eq!(
        v["choices"][0]["message"]["tool_calls"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    server.stop().await.unwrap();

    // One action per reply: the first call, then generation stops, unless the request asks
    // for parallel calls.
    let one = Defaults {
        actions_per_turn: Some(1),
        ..Defaults::from_profile("text", Sampling::default(), GrammarMode::Lazy)
    };
    let e = engine("READ a.py\nREAD b.py\n");
    let server = server_with(e.clone(), one).await;
    let v = server
        .post("/v1/chat/completions", &body(MODEL, text_protocol))
        .await
        .json();
    assert_eq!(
        v["choices"][0]["message"]["tool_calls"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let seen = e.seen.lock().unwrap()[0].clone();
    let Some(GrammarSpec::Lazy { triggers, .. }) = &seen.grammar else {
        panic!("lazy grammar: {:?}", seen.grammar)
    };
    assert!(triggers.iter().any(|t| t == "EDIT "), "{triggers:?}");
    let v = server
        .post(
            "/v1/chat/completions",
            &body(
                MODEL,
                &format!(r#"{text_protocol},"parallel_tool_calls":true"#),
            ),
        )
        .await
        .json();
    assert_eq!(
        v["choices"][0]["message"]["tool_calls"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    server.stop().await.unwrap();

    // Tools shown in a system message (with a worked call), not through the template.
    for (presentation, example) in [
        (gateway::defaults::ToolsPresentation::System, false),
        (gateway::defaults::ToolsPresentation::Example, true),
    ] {
        let shown = Defaults {
            tools_presentation: presentation,
            ..Defaults::default()
        };
        let e = engine("Sunny.");
        let server = server_with(e.clone(), shown).await;
        server
            .post(
                "/v1/chat/completions",
                &body(MODEL, &format!(",{WEATHER_TOOL}")),
            )
            .await;
        let seen = e.seen.lock().unwrap()[0].clone();
        let Prompt::Chat { messages, tools } = &seen.prompt else {
            panic!("chat prompt")
        };
        assert!(tools.is_empty(), "{presentation:?}");
        assert!(messages[0].role == "system" && messages[0].content.contains("get_weather"));
        assert_eq!(messages[0].content.contains("get_time"), example);
        server.stop().await.unwrap();
    }
}

/// `/v1/models` reports what tuning measured for the loaded profile.
#[tokio::test]
async fn the_model_card_reports_the_measured_conversion() {
    let measured = models::profile::Measured {
        conversion_rate: Some(0.75),
        configuration: Some("text/full/T0/strict/a1/template".to_owned()),
        ..Default::default()
    };
    let server = server_with(
        engine("x"),
        Defaults {
            measured,
            ..Defaults::default()
        },
    )
    .await;
    let v = server.get("/v1/models").await.json();
    let ext = &v["data"][0]["bellows"];
    assert_eq!(ext["conversion_rate"], 0.75);
    assert_eq!(
        ext["measured"]["configuration"],
        "text/full/T0/strict/a1/template"
    );
    server.stop().await.unwrap();
    // An unmeasured profile says nothing rather than a made-up figure.
    let server = server_with(engine("x"), Defaults::default()).await;
    let v = server.get("/v1/models").await.json();
    assert!(v["data"][0]["bellows"].get("conversion_rate").is_none());
    server.stop().await.unwrap();
}
