//! Tests of the native formats, driven through the `Format`/`Body` contract directly: detect at
//! the start of the input, feed the rest in chunks, and render the events as one line each.
//! Every case is checked whole, byte by byte and split at every offset.

use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::event::Event;
use crate::format::Detect;
use crate::registry::Registry;

fn registry() -> Registry {
    let mut r = Registry::builtin();
    r.add_client_tool(
        "get_weather",
        "Weather for a city.",
        json!({"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}),
    )
    .expect("valid client tool");
    r
}

/// Drives `fmt` over `input` split into the given pieces; returns the rendered trace.
fn drive(fmt: &dyn Format, pieces: &[&str], auto: bool) -> Vec<String> {
    let reg = registry();
    let mut ctx = Ctx {
        registry: &reg,
        next_index: 0,
        last_edit_path: None,
        auto,
        answered: false,
        attempted: false,
    };
    let mut out = Vec::new();
    let mut prose = String::new();
    let mut body: Option<Box<dyn Body>> = None;
    let mut held = String::new();
    let mut state_done = false;
    for (k, piece) in pieces.iter().enumerate() {
        if state_done {
            prose.push_str(piece);
            continue;
        }
        let mut input: String = piece.to_string();
        if body.is_none() {
            held.push_str(piece);
            let eos = k + 1 == pieces.len();
            match fmt.detect(
                &held,
                Position {
                    line_start: true,
                    eos,
                    reply_start: true,
                },
                &ctx,
            ) {
                Detect::No => {
                    prose.push_str(&held);
                    state_done = true;
                    continue;
                }
                Detect::NeedMore => continue,
                Detect::Start(b) => {
                    body = Some(b);
                    input = std::mem::take(&mut held);
                }
            }
        }
        let Some(b) = body.as_mut() else { continue };
        match b.feed(&input, &mut ctx, &mut out) {
            Step::NeedMore => {}
            Step::Done { consumed } => {
                prose.push_str(&input[consumed..]);
                state_done = true;
            }
            Step::Ended { held, rest, .. } => {
                prose.push_str(&held);
                prose.push_str(&input[input.len() - rest..]);
                state_done = true;
            }
            Step::Reject { held, rest } => {
                out.push(Event::Text(format!("<rejected>{held}")));
                prose.push_str(&input[input.len() - rest..]);
                state_done = true;
            }
        }
    }
    if !state_done {
        match body.as_mut() {
            Some(b) => {
                if let Some(s) = b.finish(&mut ctx, &mut out) {
                    prose.push_str(&s);
                }
            }
            None => prose.push_str(&held),
        }
    }
    render(&out, &prose)
}

fn render(events: &[Event], prose: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for e in events {
        let line = match e {
            Event::Text(t) => format!("text {t:?}"),
            Event::Reasoning(t) => format!("reasoning {t:?}"),
            Event::ToolCallStart { index, name } => format!("start {index} {name}"),
            Event::ArgsDelta { index, fragment } => {
                // Fragmentation depends on chunking; the concatenation does not.
                let prefix = format!("args {index} ");
                if let Some(last) = lines.last_mut()
                    && last.starts_with(&prefix)
                {
                    last.push_str(fragment);
                    continue;
                }
                format!("{prefix}{fragment}")
            }
            Event::Proposal { index, proposal } => {
                let repairs: Vec<&str> = proposal.repairs.iter().map(|r| r.as_str()).collect();
                format!(
                    "proposal {index} {} {} {} [{}]",
                    proposal.format,
                    proposal.action.name(),
                    proposal.arguments_json(),
                    repairs.join(",")
                )
            }
            Event::Failure { index, kind, raw } => format!("failure {index:?} {kind} {raw:?}"),
        };
        lines.push(line);
    }
    if !prose.is_empty() {
        lines.push(format!("prose {prose:?}"));
    }
    lines
}

/// Splits on char boundaries every `n` bytes.
fn chunks(s: &str, n: usize) -> Vec<&str> {
    let mut v = Vec::new();
    let mut start = 0;
    while start < s.len() {
        let mut end = (start + n).min(s.len());
        while !s.is_char_boundary(end) {
            end += 1;
        }
        v.push(&s[start..end]);
        start = end;
    }
    v
}

/// Checks the trace is the same for every chunking, then compares it with `expect`.
#[track_caller]
fn check_with(fmt: &dyn Format, input: &str, auto: bool, expect: &[&str]) {
    let whole = drive(fmt, &[input], auto);
    for n in [1, 2, 3, 7] {
        assert_eq!(drive(fmt, &chunks(input, n), auto), whole, "chunk size {n}");
    }
    for i in 1..input.len() {
        if input.is_char_boundary(i) {
            assert_eq!(
                drive(fmt, &[&input[..i], &input[i..]], auto),
                whole,
                "split at {i}"
            );
        }
    }
    let checked = check_args_contract(fmt, input, auto);
    let proposals = whole.iter().filter(|l| l.starts_with("proposal ")).count();
    assert_eq!(
        checked, proposals,
        "the argument contract was checked on every proposal"
    );
    assert_eq!(whole, expect, "\nactual: {whole:#?}");
}

#[track_caller]
fn check(fmt: &dyn Format, input: &str, expect: &[&str]) {
    check_with(fmt, input, true, expect);
}

/// The concatenated `ArgsDelta`s of a proposal equal its `arguments_json()`.
/// Returns how many proposals it checked.
fn check_args_contract(fmt: &dyn Format, input: &str, auto: bool) -> usize {
    let reg = registry();
    let mut ctx = Ctx {
        registry: &reg,
        next_index: 0,
        last_edit_path: None,
        auto,
        answered: false,
        attempted: false,
    };
    let mut out = Vec::new();
    if let Detect::Start(mut b) = fmt.detect(
        input,
        Position {
            line_start: true,
            eos: true,
            reply_start: false,
        },
        &ctx,
    ) {
        let mut open = true;
        for c in chunks(input, 1) {
            if b.feed(c, &mut ctx, &mut out) != Step::NeedMore {
                open = false;
                break;
            }
        }
        if open {
            let _ = b.finish(&mut ctx, &mut out);
        }
    }
    let mut args: std::collections::BTreeMap<usize, String> = Default::default();
    let mut checked = 0;
    for e in &out {
        match e {
            Event::ArgsDelta { index, fragment } => {
                args.entry(*index).or_default().push_str(fragment)
            }
            Event::Proposal { index, proposal } => {
                assert_eq!(
                    args.get(index).cloned().unwrap_or_default(),
                    proposal.arguments_json()
                );
                checked += 1;
            }
            _ => {}
        }
    }
    checked
}

fn hermes() -> Box<dyn Format> {
    Box::new(hermes::ToolCallTag::new(FormatId::Hermes, false))
}
fn bare() -> Box<dyn Format> {
    Box::new(bare_json::BareJson::new(FormatId::BareJson, false))
}

#[test]
fn hermes_happy_path() {
    check(
        &*hermes(),
        "<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"calc.py\"}}\n</tool_call>\nok",
        &[
            "start 0 read",
            r#"args 0 {"path":"calc.py"}"#,
            r#"proposal 0 hermes read {"path":"calc.py"} []"#,
            r#"prose "\nok""#,
        ],
    );
}

#[test]
fn hermes_client_tool_streams_arguments() {
    let input = "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par\\u00e9 \\\"x\\\"\", \"days\": 3}}</tool_call>";
    check(
        &*hermes(),
        input,
        &[
            "start 0 get_weather",
            r#"args 0 {"city":"Paré \"x\"","days":3}"#,
            r#"proposal 0 hermes get_weather {"city":"Paré \"x\"","days":3} []"#,
        ],
    );
    // The arguments really stream: a prefix of the call already produced fragments.
    let reg = registry();
    let mut ctx = Ctx {
        registry: &reg,
        next_index: 0,
        last_edit_path: None,
        auto: true,
        answered: false,
        attempted: false,
    };
    let mut out = Vec::new();
    let Detect::Start(mut b) = hermes().detect(
        input,
        Position {
            line_start: true,
            eos: false,
            reply_start: false,
        },
        &ctx,
    ) else {
        panic!("no start");
    };
    let cut = input.find("Par").expect("in input") + 2;
    assert_eq!(b.feed(&input[..cut], &mut ctx, &mut out), Step::NeedMore);
    let streamed: String = out
        .iter()
        .filter_map(|e| match e {
            Event::ArgsDelta { fragment, .. } => Some(fragment.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(streamed, r#"{"city":"Pa"#);
}

#[test]
fn hermes_close_tag_in_string_does_not_end_the_call() {
    check(
        &*hermes(),
        "<tool_call>{\"name\": \"done\", \"arguments\": {\"summary\": \"wrote </tool_call> docs\"}}</tool_call>",
        &[
            "start 0 done",
            r#"args 0 {"summary":"wrote </tool_call> docs"}"#,
            r#"proposal 0 hermes done {"summary":"wrote </tool_call> docs"} [close_tag_in_string]"#,
        ],
    );
}

#[test]
fn hermes_repairs() {
    check(
        &*hermes(),
        "<tool_call>{'name': 'read', 'arguments': {'path': 'a.py', 'start': 1}}</tool_call>",
        &[
            "start 0 read",
            r#"args 0 {"path":"a.py","start":1}"#,
            r#"proposal 0 hermes read {"path":"a.py","start":1} [python_literal]"#,
        ],
    );
    check(
        &*hermes(),
        "<tool_call>{\"arguments\": {\"path\": \"src\"}, \"name\": \"list\"}</tool_call>",
        &[
            "start 0 list",
            r#"args 0 {"path":"src"}"#,
            r#"proposal 0 hermes list {"path":"src"} [arguments_before_name]"#,
        ],
    );
    check(
        &*hermes(),
        "<tool_call>{\"name\": \"glob\", \"arguments\": \"{\\\"pattern\\\": \\\"*.rs\\\"}\"}</tool_call>",
        &[
            "start 0 glob",
            r#"args 0 {"pattern":"*.rs"}"#,
            r#"proposal 0 hermes glob {"pattern":"*.rs"} [arguments_as_string]"#,
        ],
    );
    check(
        &*hermes(),
        "<tool_call>{\"name\": \"glob\", \"parameters\": {\"pattern\": \"*.rs\"}}}</tool_call>",
        &[
            "start 0 glob",
            r#"args 0 {"pattern":"*.rs"}"#,
            r#"proposal 0 hermes glob {"pattern":"*.rs"} [parameters_key,trailing_after_call]"#,
        ],
    );
}

#[test]
fn hermes_end_of_stream() {
    check(
        &*hermes(),
        "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"",
        &[
            "start 0 get_weather",
            r#"args 0 {"city":"Oslo"}"#,
            r#"proposal 0 hermes get_weather {"city":"Oslo"} [unclosed_json,missing_close_tag]"#,
        ],
    );
    check(
        &*hermes(),
        "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Os",
        &[
            "start 0 get_weather",
            r#"args 0 {"city":"Os"#,
            r#"failure Some(0) truncated_json "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Os""#,
        ],
    );
    check(
        &*hermes(),
        "<tool_call>{\"name\": \"read\", \"arguments\": {\"path\":",
        &[
            "start 0 read",
            r#"failure Some(0) truncated_json "<tool_call>{\"name\": \"read\", \"arguments\": {\"path\":""#,
        ],
    );
}

#[test]
fn hermes_missing_close_before_next_call() {
    check(
        &*hermes(),
        "<tool_call>{\"name\": \"list\", \"arguments\": {\"path\": \".\"}}\n<tool_call>",
        &[
            "start 0 list",
            r#"args 0 {"path":"."}"#,
            r#"proposal 0 hermes list {"path":"."} [missing_close_tag]"#,
            r#"prose "\n<tool_call>""#,
        ],
    );
}

#[test]
fn hermes_failures() {
    check(
        &*hermes(),
        "<tool_call>{\"name\": \"launch_rockets\", \"arguments\": {}}</tool_call>",
        &[
            r#"failure None unknown_tool "<tool_call>{\"name\": \"launch_rockets\", \"arguments\": {}}</tool_call>""#,
        ],
    );
    check(
        &*hermes(),
        "<tool_call>{\"name\": \"read\", \"arguments\": {\"file\": 3}}</tool_call>",
        &[
            "start 0 read",
            r#"failure Some(0) bad_arguments "<tool_call>{\"name\": \"read\", \"arguments\": {\"file\": 3}}</tool_call>""#,
        ],
    );
    check(
        &*hermes(),
        "<tool_call>{\"arguments\": {\"path\": \"a\"}}</tool_call>",
        &[
            r#"failure None missing_name "<tool_call>{\"arguments\": {\"path\": \"a\"}}</tool_call>""#,
        ],
    );
    check(
        &*hermes(),
        "<tool_call>{\"name\": \"read\", \"arguments\": {\"path\" \"a\"}}</tool_call>",
        &[
            "start 0 read",
            // The failing quote goes back to prose once, not also in the failure's raw.
            r#"failure Some(0) invalid_json "<tool_call>{\"name\": \"read\", \"arguments\": {\"path\" ""#,
            r#"prose "\"a\"}}</tool_call>""#,
        ],
    );
}

#[test]
fn hermes_tag_in_prose_is_prose() {
    check(
        &*hermes(),
        "<tool_call> tags wrap each call",
        &[
            // A word after the tag could be a GLM-4.5 call's name, and a blank may end the
            // name; only the next byte, which no argument tag starts with, rejects it.
            r#"text "<rejected><tool_call> tags w""#,
            r#"prose "rap each call""#,
        ],
    );
}

#[test]
fn qwen3_xml_in_tool_call() {
    check(
        &*hermes(),
        "<tool_call>\n<function=read>\n<parameter=path>\nsrc/main.rs\n</parameter>\n<parameter=start>\n10\n</parameter>\n</function>\n</tool_call>",
        &[
            "start 0 read",
            r#"args 0 {"path":"src/main.rs","start":10}"#,
            r#"proposal 0 qwen3_xml read {"path":"src/main.rs","start":10} []"#,
        ],
    );
    check(
        &qwen3_xml::BareFunction::new(false),
        "<function=done>\n<parameter=summary>\nall fixed\n</function>",
        &[
            "start 0 done",
            r#"args 0 {"summary":"all fixed"}"#,
            r#"proposal 0 qwen3_xml done {"summary":"all fixed"} [missing_close_tag]"#,
        ],
    );
    check(
        &qwen3_xml::BareFunction::new(false),
        "<function=my func> in prose",
        &[
            r#"text "<rejected><function=my ""#,
            r#"prose "func> in prose""#,
        ],
    );
}

#[test]
fn bare_json_calls_and_traps() {
    check(
        &*bare(),
        "{\"name\": \"read\", \"arguments\": {\"path\": \"calc.py\"}}\nthen",
        &[
            "start 0 read",
            r#"args 0 {"path":"calc.py"}"#,
            r#"proposal 0 bare_json read {"path":"calc.py"} []"#,
            r#"prose "\nthen""#,
        ],
    );
    check(
        &*bare(),
        "```json\n{\"name\": \"mkdir\", \"arguments\": {\"path\": \"out\"}}\n```\n",
        &[
            "start 0 mkdir",
            r#"args 0 {"path":"out"}"#,
            r#"proposal 0 bare_json mkdir {"path":"out"} [fenced_json]"#,
            r#"prose "\n""#,
        ],
    );
    // An echoed tool schema: `description` before `parameters` says it is not a call.
    check(
        &*bare(),
        "{\"name\": \"list\", \"description\": \"List a directory.\", \"parameters\": {}}",
        &[
            r#"text "<rejected>{\"name\": \"list\", \"description\"""#,
            r#"prose ": \"List a directory.\", \"parameters\": {}}""#,
        ],
    );
    // A fabricated tool result is not even a candidate.
    check(
        &*bare(),
        "{\"status\": \"ok\", \"contents\": \"x\"}",
        &[r#"prose "{\"status\": \"ok\", \"contents\": \"x\"}""#],
    );
    // A name with no arguments key is data, not a call.
    check(
        &*bare(),
        "{\"name\": \"read\", \"age\": 3}",
        &[
            r#"text "<rejected>{\"name\": \"read\", \"age\"""#,
            r#"prose ": 3}""#,
        ],
    );
    check(
        &*bare(),
        "{\"name\": \"read\"}",
        &[r#"text "<rejected>{\"name\": \"read\"}""#],
    );
    check(
        &*bare(),
        "{\n  type: \"object\"\n}",
        &[r#"prose "{\n  type: \"object\"\n}""#],
    );
    check(
        &*bare(),
        "{\"name\": \"nope\", \"arguments\": {}}",
        &[r#"failure None unknown_tool "{\"name\": \"nope\", \"arguments\": {}}""#],
    );
}

/// Call lists and envelopes (see `json_list`): xLAM-2/Hammer lists, xLAM-1 and llama.cpp's
/// generic envelopes, and the data that looks like them.
#[test]
fn json_lists_and_envelopes() {
    // A list of a builtin and a client call: the client's arguments stream.
    check(
        &*bare(),
        "[{\"name\": \"read\", \"arguments\": {\"path\": \"a.py\"}}, {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}]\nok",
        &[
            "start 0 read",
            r#"args 0 {"path":"a.py"}"#,
            r#"proposal 0 bare_json read {"path":"a.py"} []"#,
            "start 1 get_weather",
            r#"args 1 {"city":"Rome"}"#,
            r#"proposal 1 bare_json get_weather {"city":"Rome"} []"#,
            r#"prose "\nok""#,
        ],
    );
    // llama.cpp's generic format with parallel calls: an `id` after the arguments.
    check(
        &*bare(),
        "{\"tool_calls\": [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}, \"id\": \"call_0001\"}]}",
        &[
            "start 0 get_weather",
            r#"args 0 {"city":"Oslo"}"#,
            r#"proposal 0 bare_json get_weather {"city":"Oslo"} []"#,
        ],
    );
    check(
        &*bare(),
        "```json\n{\"tool_call\": {\"name\": \"list\", \"parameters\": \"{\\\"path\\\": \\\"src\\\"}\"}}\n```\n",
        &[
            "start 0 list",
            r#"args 0 {"path":"src"}"#,
            r#"proposal 0 bare_json list {"path":"src"} [arguments_as_string,parameters_key,fenced_json]"#,
            r#"prose "\n""#,
        ],
    );
    // An undeclared tool before a declared one: a failure with its own text, released when
    // the declared call starts.
    check(
        &*bare(),
        "[{\"name\": \"web_search\", \"arguments\": {\"q\": \"x\"}}, {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}]",
        &[
            r#"failure None unknown_tool "[{\"name\": \"web_search\", \"arguments\": {\"q\": \"x\"}}""#,
            "start 0 get_weather",
            r#"args 0 {"city":"Rome"}"#,
            r#"proposal 0 bare_json get_weather {"city":"Rome"} []"#,
        ],
    );
    // After the list is committed, a bad element is a failure that takes the closing `]`.
    check(
        &*bare(),
        "[{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}, {\"name\": \"read\", \"arguments\": {\"path\": 0}}]",
        &[
            "start 0 read",
            r#"args 0 {"path":"a"}"#,
            r#"proposal 0 bare_json read {"path":"a"} []"#,
            "start 1 read",
            r#"failure Some(1) bad_arguments ", {\"name\": \"read\", \"arguments\": {\"path\": 0}}]""#,
        ],
    );
    // Cut off inside the last call: closed when only brackets are missing.
    check(
        &*bare(),
        "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"",
        &[
            "start 0 get_weather",
            r#"args 0 {"city":"Rome"}"#,
            r#"proposal 0 bare_json get_weather {"city":"Rome"} [unclosed_json]"#,
        ],
    );
    // Traps: plain data, an undeclared tool alone, an empty envelope, an API echo whose
    // first key is not a call key, and llama.cpp's `response` object.
    check(
        &*bare(),
        "[{\"name\": \"Alice\", \"age\": 3}]",
        &[
            r#"text "<rejected>[{\"name\": \"Alice\", \"age\"""#,
            r#"prose ": 3}]""#,
        ],
    );
    check(
        &*bare(),
        "[{\"name\": \"web_search\", \"arguments\": {\"q\": \"x\"}}]",
        &[r#"text "<rejected>[{\"name\": \"web_search\", \"arguments\": {\"q\": \"x\"}}]""#],
    );
    check(
        &*bare(),
        "{\"tool_calls\": []}",
        &[r#"text "<rejected>{\"tool_calls\": []""#, r#"prose "}""#],
    );
    check(
        &*bare(),
        "{\"tool_calls\": [{\"id\": \"call_1\", \"type\": \"function\"}]}",
        &[
            r#"text "<rejected>{\"tool_calls\": [{\"id\"""#,
            r#"prose ": \"call_1\", \"type\": \"function\"}]}""#,
        ],
    );
    check(
        &*bare(),
        "{\"response\": \"Done.\"}",
        &[r#"prose "{\"response\": \"Done.\"}""#],
    );
    check(
        &*bare(),
        "[1, 2, {\"name\": \"read\"}]",
        &[r#"prose "[1, 2, {\"name\": \"read\"}]""#],
    );
}

fn markers() -> Box<dyn Format> {
    Box::new(marker_list::MarkerList::new(false))
}

/// The marker lists (see `marker_list`): every row's own shape, its repairs, and the prose
/// that mentions its marker.
#[test]
fn marker_lists() {
    // Jamba / Hunyuan / Apriel: a client call streams, a builtin follows, the end marker is
    // part of the construct and the prose after it is not.
    check(
        &*markers(),
        "<tool_calls>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}, {\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}]</tool_calls> ok",
        &[
            "start 0 get_weather",
            r#"args 0 {"city":"Rome"}"#,
            r#"proposal 0 marker_list get_weather {"city":"Rome"} []"#,
            "start 1 read",
            r#"args 1 {"path":"a"}"#,
            r#"proposal 1 marker_list read {"path":"a"} []"#,
            r#"prose " ok""#,
        ],
    );
    // Nemotron, written as a Python literal with `parameters`.
    check(
        &*markers(),
        "<TOOLCALL>[{'name': 'get_weather', 'parameters': {'city': 'Rome', 'days': 2}}]</TOOLCALL>",
        &[
            "start 0 get_weather",
            r#"args 0 {"city":"Rome","days":2}"#,
            r#"proposal 0 marker_list get_weather {"city":"Rome","days":2} [python_literal,parameters_key]"#,
        ],
    );
    // Apertus: each element keyed by the tool's name; a second key is not the shape.
    check(
        &*markers(),
        "<|tools_prefix|>[{\"get_weather\": {\"city\": \"Rome\"}}, {\"list\": {\"path\": \".\"}}]<|tools_suffix|>",
        &[
            "start 0 get_weather",
            r#"args 0 {"city":"Rome"}"#,
            r#"proposal 0 marker_list get_weather {"city":"Rome"} []"#,
            "start 1 list",
            r#"args 1 {"path":"."}"#,
            r#"proposal 1 marker_list list {"path":"."} []"#,
        ],
    );
    check(
        &*markers(),
        "<|tools_prefix|>[{\"get_weather\": {\"city\": \"Rome\"}, \"x\": 1}]",
        &[
            "start 0 get_weather",
            r#"args 0 {"city":"Rome"}"#,
            r#"failure Some(0) invalid_json "<|tools_prefix|>[{\"get_weather\": {\"city\": \"Rome\"}, \"x""#,
            r#"prose "\": 1}]""#,
        ],
    );
    // Cut off after its name: closed when only brackets are missing; the suffix is optional.
    check(
        &*markers(),
        "<|tools_prefix|>[{\"get_weather\": {\"city\": \"Rome\"",
        &[
            "start 0 get_weather",
            r#"args 0 {"city":"Rome"}"#,
            r#"proposal 0 marker_list get_weather {"city":"Rome"} [unclosed_json]"#,
        ],
    );
    // Command R7B: `tool_call_id` is skipped, `parameters` is the format's own key.
    check(
        &*markers(),
        "<|START_ACTION|>[\n    {\"tool_call_id\": \"0\", \"tool_name\": \"get_weather\", \"parameters\": {\"city\": \"Rome\"}}\n]<|END_ACTION|>",
        &[
            "start 0 get_weather",
            r#"args 0 {"city":"Rome"}"#,
            r#"proposal 0 marker_list get_weather {"city":"Rome"} []"#,
        ],
    );
    // Granite 3.0 and Phi-4-mini have no end marker.
    check(
        &*markers(),
        "<|tool_call|>[{\"name\": \"list\", \"arguments\": \"{\\\"path\\\": \\\"src\\\"}\"}]\n",
        &[
            "start 0 list",
            r#"args 0 {"path":"src"}"#,
            r#"proposal 0 marker_list list {"path":"src"} [arguments_as_string]"#,
            r#"prose "\n""#,
        ],
    );
    check(
        &*markers(),
        "functools[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}]",
        &[
            "start 0 get_weather",
            r#"args 0 {"city":"Rome"}"#,
            r#"proposal 0 marker_list get_weather {"city":"Rome"} []"#,
        ],
    );
    // Undeclared tools after a marker are failures, not prose, each with its own text; a
    // declared call after them starts as usual.
    check(
        &*markers(),
        "<tool_calls>[{\"name\": \"nope\", \"arguments\": {}}]</tool_calls>",
        &[
            r#"failure None unknown_tool "<tool_calls>[{\"name\": \"nope\", \"arguments\": {}}]""#,
            r#"text "</tool_calls>""#,
        ],
    );
    check(
        &*markers(),
        "<TOOLCALL>[{\"name\": \"nope\", \"arguments\": {}}, {\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}]\nthen",
        &[
            r#"failure None unknown_tool "<TOOLCALL>[{\"name\": \"nope\", \"arguments\": {}}""#,
            "start 0 read",
            r#"args 0 {"path":"a"}"#,
            r#"proposal 0 marker_list read {"path":"a"} []"#,
            r#"prose "\nthen""#,
        ],
    );
    check(
        &*markers(),
        "<|tools_prefix|>[{\"nope\": {\"city\": \"Rome\"",
        &[r#"failure None unknown_tool "<|tools_prefix|>[{\"nope\": {\"city\": \"Rome\"""#],
    );
    // Traps: a marker named in prose, data after a marker, a shape foreign to the row, and
    // Python's functools.
    check(
        &*markers(),
        "<tool_calls> is the tag",
        &[r#"text "<rejected><tool_calls> i""#, r#"prose "s the tag""#],
    );
    check(
        &*markers(),
        "<tool_calls>[{\"name\": \"Alice\", \"age\": 3}]",
        &[
            r#"text "<rejected><tool_calls>[{\"name\": \"Alice\", \"age\"""#,
            r#"prose ": 3}]""#,
        ],
    );
    check(
        &*markers(),
        "<|tools_prefix|>[{\"city\": \"Paris\"}]",
        &[
            r#"text "<rejected><|tools_prefix|>[{\"city\": \"""#,
            r#"prose "Paris\"}]""#,
        ],
    );
    check(
        &*markers(),
        "<|START_ACTION|>[{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}]",
        &[
            r#"text "<rejected><|START_ACTION|>[{\"name\"""#,
            r#"prose ": \"read\", \"arguments\": {\"path\": \"a\"}}]""#,
        ],
    );
    check(
        &*markers(),
        "functools.partial(f)",
        &[r#"prose "functools.partial(f)""#],
    );
    check(
        &*markers(),
        "functools[0]",
        &[r#"text "<rejected>functools[0""#, r#"prose "]""#],
    );
}

/// `<tool_calls>` (marker_list) and `<tool_call>` (hermes) agree up to `<tool_call`: both
/// need more bytes there, and the next byte makes exactly one of them start.
#[test]
fn tool_calls_and_tool_call_part_at_their_last_byte() {
    let reg = registry();
    let ctx = Ctx {
        registry: &reg,
        next_index: 0,
        last_edit_path: None,
        auto: true,
        answered: false,
        attempted: false,
    };
    let answer = |f: &dyn Format, s: &str, eos: bool| match f.detect(
        s,
        Position {
            line_start: false,
            eos,
            reply_start: false,
        },
        &ctx,
    ) {
        Detect::No => "no",
        Detect::NeedMore => "more",
        Detect::Start(_) => "start",
    };
    let (h, m) = (hermes(), markers());
    let tag = "<tool_calls>";
    for k in 1..=tag.len() - 2 {
        assert_eq!(answer(&*h, &tag[..k], false), "more", "{:?}", &tag[..k]);
        assert_eq!(answer(&*m, &tag[..k], false), "more", "{:?}", &tag[..k]);
        assert_eq!(answer(&*h, &tag[..k], true), "no", "{:?}", &tag[..k]);
        assert_eq!(answer(&*m, &tag[..k], true), "no", "{:?}", &tag[..k]);
    }
    assert_eq!(answer(&*h, "<tool_calls", false), "no");
    assert_eq!(answer(&*m, "<tool_calls", false), "more");
    assert_eq!(answer(&*h, "<tool_calls>", false), "no");
    assert_eq!(answer(&*m, "<tool_calls>", false), "start");
    assert_eq!(answer(&*h, "<tool_call>", false), "start");
    assert_eq!(answer(&*m, "<tool_call>", false), "no");
    // `functools[` counts at a line start only.
    let at = |line_start| Position {
        line_start,
        eos: false,
        reply_start: false,
    };
    assert!(matches!(
        m.detect("functools[{", at(true), &ctx),
        Detect::Start(_)
    ));
    assert!(matches!(
        m.detect("functools[{", at(false), &ctx),
        Detect::No
    ));
    assert!(matches!(
        m.detect("functools", at(true), &ctx),
        Detect::NeedMore
    ));
}

/// A backtick after LFM2's marker followed by a multibyte character is prose, not a panic.
#[test]
fn marker_fence_peek_stops_at_characters() {
    let reg = registry();
    let ctx = Ctx {
        registry: &reg,
        next_index: 0,
        last_edit_path: None,
        auto: true,
        answered: false,
        attempted: false,
    };
    let f = marker_list::MarkerList::new(false);
    for eos in [false, true] {
        let at = Position {
            line_start: false,
            eos,
            reply_start: false,
        };
        for s in [
            "<|tool_call_start|>``\u{e9}x",
            "<|tool_call_start|>`\u{e9}",
            "<|tool_call_start|>```p\u{e9}\n",
        ] {
            assert!(matches!(f.detect(s, at, &ctx), Detect::No), "{s:?}");
        }
    }
}

/// No XML wrapper's start tag is a prefix of another's, nor of `<tool_call>`.
#[test]
fn xml_wrappers_are_disjoint() {
    let opens: Vec<&str> = xml_wrapped::ROWS
        .iter()
        .map(|w| w.open)
        .chain([hermes::TOOL_CALL.open])
        .collect();
    for (i, a) in opens.iter().enumerate() {
        for (j, b) in opens.iter().enumerate() {
            if i != j {
                assert!(!b.starts_with(a), "{a} / {b}");
            }
        }
    }
}

/// No row's marker is a prefix of another's, so at most one row starts anywhere.
#[test]
fn marker_rows_are_disjoint() {
    for (i, a) in marker_list::ROWS.iter().enumerate() {
        for (j, b) in marker_list::ROWS.iter().enumerate() {
            if i != j {
                assert!(!b.open.starts_with(a.open), "{} / {}", a.open, b.open);
            }
        }
    }
}

fn gemma() -> Box<dyn Format> {
    Box::new(gemma_call::GemmaCall::new(false))
}

/// Gemma's `call:` form in both dialects (see `gemma_call`): values of every kind, the
/// repairs, the failures, and the markers named in prose.
#[test]
fn gemma_calls() {
    check(
        &*gemma(),
        "<start_function_call>call:get_weather{city:<escape>Paris, \"FR\"<escape>,days:3}<end_function_call> ok",
        &[
            "start 0 get_weather",
            r#"args 0 {"city":"Paris, \"FR\"","days":3}"#,
            r#"proposal 0 gemma_call get_weather {"city":"Paris, \"FR\"","days":3} []"#,
            r#"prose " ok""#,
        ],
    );
    check(
        &*gemma(),
        "<|tool_call>call:get_weather{city:<|\"|>Rome<|\"|>,days:2}<tool_call|>",
        &[
            "start 0 get_weather",
            r#"args 0 {"city":"Rome","days":2}"#,
            r#"proposal 0 gemma_call get_weather {"city":"Rome","days":2} []"#,
        ],
    );
    check(
        &*gemma(),
        "<start_function_call>call:read{path:<escape>a <b> <esc <escape>}<end_function_call>",
        &[
            "start 0 read",
            r#"args 0 {"path":"a <b> <esc "}"#,
            r#"proposal 0 gemma_call read {"path":"a <b> <esc "} []"#,
        ],
    );
    check(
        &*gemma(),
        "<|tool_call>call:get_weather{city:<|\"|>Rome<|\"|>,xs:[1,<|\"|>a<|\"|>,{k:true}],o:{n:null,f:-1.5e3},<|\"|>odd key<|\"|>:false}<tool_call|>",
        &[
            "start 0 get_weather",
            r#"args 0 {"city":"Rome","xs":[1,"a",{"k":true}],"o":{"n":null,"f":-1500.0},"odd key":false}"#,
            r#"proposal 0 gemma_call get_weather {"city":"Rome","xs":[1,"a",{"k":true}],"o":{"n":null,"f":-1500.0},"odd key":false} []"#,
        ],
    );
    // Repairs: no end marker (before prose, at end of stream), Python literals, cut off.
    check(
        &*gemma(),
        "<start_function_call>call:get_weather{city:<escape>Oslo<escape>}\nDone.",
        &[
            "start 0 get_weather",
            r#"args 0 {"city":"Oslo"}"#,
            r#"proposal 0 gemma_call get_weather {"city":"Oslo"} [missing_close_tag]"#,
            r#"prose "\nDone.""#,
        ],
    );
    check(
        &*gemma(),
        "<|tool_call>call:get_weather{city:<|\"|>Rome<|\"|>,flag:True,none:None}",
        &[
            "start 0 get_weather",
            r#"args 0 {"city":"Rome","flag":true,"none":null}"#,
            r#"proposal 0 gemma_call get_weather {"city":"Rome","flag":true,"none":null} [python_literal,missing_close_tag]"#,
        ],
    );
    check(
        &*gemma(),
        "<start_function_call>call:get_weather{days:2,city:<escape>Oslo<escape>",
        &[
            "start 0 get_weather",
            r#"args 0 {"days":2,"city":"Oslo"}"#,
            r#"proposal 0 gemma_call get_weather {"days":2,"city":"Oslo"} [unclosed_json,missing_close_tag]"#,
        ],
    );
    // A number at the very end may have been cut: it is not closed.
    check(
        &*gemma(),
        "<start_function_call>call:get_weather{city:<escape>Oslo<escape>,days:2",
        &[
            "start 0 get_weather",
            r#"args 0 {"city":"Oslo","days":"#,
            r#"failure Some(0) truncated_json "<start_function_call>call:get_weather{city:<escape>Oslo<escape>,days:2""#,
        ],
    );
    // Failures: cut inside a string, after a comma; a bare word; a JSON-quoted string; an
    // undeclared tool; arguments the schema refuses.
    check(
        &*gemma(),
        "<start_function_call>call:get_weather{city:<escape>Os",
        &[
            "start 0 get_weather",
            r#"args 0 {"city":"Os"#,
            r#"failure Some(0) truncated_json "<start_function_call>call:get_weather{city:<escape>Os""#,
        ],
    );
    check(
        &*gemma(),
        "<start_function_call>call:get_weather{city:<escape>Os<escape>,",
        &[
            "start 0 get_weather",
            r#"args 0 {"city":"Os""#,
            r#"failure Some(0) truncated_json "<start_function_call>call:get_weather{city:<escape>Os<escape>,""#,
        ],
    );
    check(
        &*gemma(),
        "<start_function_call>call:get_weather{unit:celsius}<end_function_call>",
        &[
            "start 0 get_weather",
            r#"args 0 {"unit":"#,
            r#"failure Some(0) invalid_json "<start_function_call>call:get_weather{unit:celsi""#,
            r#"prose "us}<end_function_call>""#,
        ],
    );
    check(
        &*gemma(),
        "<|tool_call>call:get_weather{city:\"Rome\"}<tool_call|>",
        &[
            "start 0 get_weather",
            r#"args 0 {"city":"#,
            r#"failure Some(0) invalid_json "<|tool_call>call:get_weather{city:""#,
            r#"prose "\"Rome\"}<tool_call|>""#,
        ],
    );
    check(
        &*gemma(),
        "<start_function_call>call:nope{a:1}<end_function_call>",
        &[r#"failure None unknown_tool "<start_function_call>call:nope{a:1}<end_function_call>""#],
    );
    check(
        &*gemma(),
        "<start_function_call>call:read{}<end_function_call>",
        &[
            "start 0 read",
            r#"failure Some(0) bad_arguments "<start_function_call>call:read{}<end_function_call>""#,
        ],
    );
    // Traps: the markers named in prose.
    check(
        &*gemma(),
        "<start_function_call> and <end_function_call> wrap a call",
        &[
            r#"text "<rejected><start_function_call> a""#,
            r#"prose "nd <end_function_call> wrap a call""#,
        ],
    );
    check(
        &*gemma(),
        "<|tool_call> opens it",
        &[r#"text "<rejected><|tool_call> o""#, r#"prose "pens it""#],
    );
    check(
        &*gemma(),
        "<|tool_call>call: f(x)",
        &[r#"text "<rejected><|tool_call>call: ""#, r#"prose "f(x)""#],
    );
    check(
        &*gemma(),
        "<|tool_call|>[{\"name\": \"read\"}]",
        &[r#"prose "<|tool_call|>[{\"name\": \"read\"}]""#],
    );
}

fn drift() -> Box<dyn Format> {
    Box::new(hermes_drift::HermesDrift::new(false))
}

/// The drifted Hermes wrappers (see `hermes_drift`): decoded only when a call to a declared
/// tool follows; anything else is prose, every byte.
#[test]
fn hermes_drift_wrappers() {
    check(
        &*drift(),
        "<tools>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tools> ok",
        &[
            "start 0 get_weather",
            r#"args 0 {"city":"Paris"}"#,
            r#"proposal 0 hermes get_weather {"city":"Paris"} [hermes_wrapper]"#,
            r#"prose " ok""#,
        ],
    );
    check(
        &*drift(),
        "<function_call>{\"arguments\": {\"path\": \"a\"}, \"name\": \"read\"}</function_call>",
        &[
            "start 0 read",
            r#"args 0 {"path":"a"}"#,
            r#"proposal 0 hermes read {"path":"a"} [arguments_before_name,hermes_wrapper]"#,
        ],
    );
    check(
        &*drift(),
        "<function name=\"get_weather\">{\"city\": \"Rome\", \"days\": 2}</function>",
        &[
            "start 0 get_weather",
            r#"args 0 {"city":"Rome","days":2}"#,
            r#"proposal 0 hermes get_weather {"city":"Rome","days":2} [hermes_wrapper]"#,
        ],
    );
    check(
        &*drift(),
        "<function name=\"read\">\n{\"path\": \"a.py\"}\n</function>",
        &[
            "start 0 read",
            r#"args 0 {"path":"a.py"}"#,
            r#"proposal 0 hermes read {"path":"a.py"} [hermes_wrapper]"#,
        ],
    );
    // Repairs: no close tag, a Python literal, arguments as a string, cut off.
    check(
        &*drift(),
        "<response>{\"name\": \"list\", \"arguments\": {\"path\": \"src\"}}\nDone.",
        &[
            "start 0 list",
            r#"args 0 {"path":"src"}"#,
            r#"proposal 0 hermes list {"path":"src"} [hermes_wrapper,missing_close_tag]"#,
            r#"prose "\nDone.""#,
        ],
    );
    check(
        &*drift(),
        "<json>{'name': 'get_weather', 'arguments': {'city': 'Rome'}}</json>",
        &[
            "start 0 get_weather",
            r#"args 0 {"city":"Rome"}"#,
            r#"proposal 0 hermes get_weather {"city":"Rome"} [python_literal,hermes_wrapper]"#,
        ],
    );
    check(
        &*drift(),
        "<tool>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Ro",
        &[
            "start 0 get_weather",
            r#"args 0 {"city":"Ro"#,
            r#"failure Some(0) truncated_json "<tool>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Ro""#,
        ],
    );
    check(
        &*drift(),
        "<tool>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"",
        &[
            "start 0 get_weather",
            r#"args 0 {"city":"Rome"}"#,
            r#"proposal 0 hermes get_weather {"city":"Rome"} [unclosed_json,hermes_wrapper,missing_close_tag]"#,
        ],
    );
    // Failures once a declared call started.
    check(
        &*drift(),
        "<tools>{\"name\": \"read\", \"arguments\": {\"path\": 3}}</tools>",
        &[
            "start 0 read",
            r#"failure Some(0) bad_arguments "<tools>{\"name\": \"read\", \"arguments\": {\"path\": 3}}</tools>""#,
        ],
    );
    // Traps: every wrapper is a word in prose or markup until a declared call follows.
    check(
        &*drift(),
        "<tool> is a tag",
        &[r#"text "<rejected><tool> i""#, r#"prose "s a tag""#],
    );
    check(
        &*drift(),
        "<tools>{\"name\": \"nope\", \"arguments\": {}}</tools>",
        &[
            r#"text "<rejected><tools>{\"name\": \"nope\", \"arguments\": {}}""#,
            r#"prose "</tools>""#,
        ],
    );
    check(
        &*drift(),
        "<response>{\"status\": \"ok\"}</response>",
        &[
            r#"text "<rejected><response>{\"status\"""#,
            r#"prose ": \"ok\"}</response>""#,
        ],
    );
    check(
        &*drift(),
        "<json>{\"name\": \"Alice\", \"age\": 3}</json>",
        &[
            r#"text "<rejected><json>{\"name\": \"Alice\", \"age\"""#,
            r#"prose ": 3}</json>""#,
        ],
    );
    check(
        &*drift(),
        "<function name=\"nope\">{\"a\": 1}</function>",
        &[
            r#"text "<rejected><function name=\"nope\">{""#,
            r#"prose "\"a\": 1}</function>""#,
        ],
    );
    check(
        &*drift(),
        "<function name=\"read\">{{ template }}</function>",
        &[
            r#"text "<rejected><function name=\"read\">{{""#,
            r#"prose " template }}</function>""#,
        ],
    );
    check(
        &*drift(),
        "<function name=\"read\">Reads a file.</function>",
        &[
            r#"text "<rejected><function name=\"read\">R""#,
            r#"prose "eads a file.</function>""#,
        ],
    );
    check(&*drift(), "<tool_call>{", &[r#"prose "<tool_call>{""#]);
}

/// `<tool>`, `<tools>`, `<tool_call>` and `<tool_calls>` agree up to `<tool`; `<function_call>`,
/// `<function_calls>`, `<function name="` and `<function=` up to `<function`. All need more there, and the next
/// byte makes at most one start; the Gemma 4 marker parts from Granite's at its last byte.
#[test]
fn look_alike_tags_part_at_one_byte() {
    let reg = registry();
    let ctx = Ctx {
        registry: &reg,
        next_index: 0,
        last_edit_path: None,
        auto: true,
        answered: false,
        attempted: false,
    };
    let at = Position {
        line_start: false,
        eos: false,
        reply_start: false,
    };
    let starts = |s: &str| -> Vec<FormatId> {
        formats()
            .iter()
            .filter(|f| matches!(f.detect(s, at, &ctx), Detect::Start(_)))
            .map(|f| f.id())
            .collect()
    };
    let more = |s: &str| -> usize {
        formats()
            .iter()
            .filter(|f| matches!(f.detect(s, at, &ctx), Detect::NeedMore))
            .count()
    };
    assert_eq!(more("<tool"), 3);
    assert_eq!(more("<function"), 3);
    assert_eq!(more("<function_call"), 2);
    assert_eq!(starts("<function_calls>\nread("), [FormatId::MarkerList]);
    assert_eq!(starts("<|tool_call_start|>[read("), [FormatId::MarkerList]);
    assert_eq!(starts("<tool>"), [FormatId::Hermes]);
    assert_eq!(starts("<tools>"), [FormatId::Hermes]);
    assert_eq!(starts("<tool_call>"), [FormatId::Hermes]);
    assert_eq!(starts("<tool_calls>"), [FormatId::MarkerList]);
    assert_eq!(starts("<function_call>"), [FormatId::Hermes]);
    assert_eq!(starts("<function name=\""), [FormatId::Hermes]);
    assert_eq!(starts("<function="), [FormatId::Qwen3Xml]);
    assert_eq!(starts("<|tool_call>"), [FormatId::GemmaCall]);
    assert_eq!(starts("<|tool_call|>"), [FormatId::MarkerList]);
    assert_eq!(starts("<start_function_call>"), [FormatId::GemmaCall]);
    assert_eq!(more("<|tool_calls"), 1);
    assert_eq!(more("<|tool_call"), 3);
    assert_eq!(more("<|"), 5);
    assert_eq!(
        starts("<|tool_calls_section_begin|>"),
        [FormatId::SectionCalls]
    );
    assert_eq!(starts(DS_OPEN), [FormatId::SectionCalls]);
    assert_eq!(starts("<|channel|>"), [FormatId::Harmony]);
    assert_eq!(starts("<|start|>assistant"), [FormatId::Harmony]);
    assert!(starts("<|START_ACTION|>").contains(&FormatId::MarkerList));
    assert!(starts(DS_CALL).is_empty());
    assert!(starts("<|tool_call_begin|>").is_empty());
    assert!(starts("<|start|>user").is_empty());
    assert!(starts("<start_function_response>").is_empty());
    assert!(starts("<toolbox>").is_empty());
}

/// A Gemma quote token holds no `<` but its first byte, which the transcoder relies on when a
/// `<` inside a string turns out not to start one.
#[test]
fn gemma_quote_tokens_hold_one_angle() {
    for d in gemma_call::DIALECTS {
        assert!(d.quote.starts_with('<'));
        assert!(!d.quote[1..].contains('<'), "{}", d.quote);
    }
    for (i, a) in gemma_call::DIALECTS.iter().enumerate() {
        for (j, b) in gemma_call::DIALECTS.iter().enumerate() {
            if i != j {
                assert!(!b.open.starts_with(a.open), "{} / {}", a.open, b.open);
            }
        }
    }
}

#[test]
fn llama3_forms() {
    check(
        &llama3::PythonTag::new(false, false),
        "<|python_tag|>{\"name\": \"grep\", \"parameters\": {\"pattern\": \"TODO\"}}; {\"name\": \"list\", \"parameters\": {\"path\": \".\"}}<|eom_id|>",
        &[
            "start 0 grep",
            r#"args 0 {"pattern":"TODO"}"#,
            r#"proposal 0 llama3 grep {"pattern":"TODO"} []"#,
            "start 1 list",
            r#"args 1 {"path":"."}"#,
            r#"proposal 1 llama3 list {"path":"."} []"#,
            r#"prose "<|eom_id|>""#,
        ],
    );
    check(
        &llama3::PythonTag::new(true, false),
        "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Rome\"}}",
        &[
            "start 0 get_weather",
            r#"args 0 {"city":"Rome"}"#,
            r#"proposal 0 llama3 get_weather {"city":"Rome"} []"#,
        ],
    );
    check(
        &llama3::PythonTag::new(false, false),
        "<|python_tag|>brave_search.call(query=\"x\")",
        &[
            r#"text "<rejected><|python_tag|>b""#,
            r#"prose "rave_search.call(query=\"x\")""#,
        ],
    );
}

#[test]
fn mistral_forms() {
    let m = mistral::Mistral::new(false);
    check(
        &m,
        "[TOOL_CALLS][{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}, {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Nice\"}}]",
        &[
            "start 0 read",
            r#"args 0 {"path":"a"}"#,
            r#"proposal 0 mistral read {"path":"a"} []"#,
            "start 1 get_weather",
            r#"args 1 {"city":"Nice"}"#,
            r#"proposal 1 mistral get_weather {"city":"Nice"} []"#,
        ],
    );
    check(
        &m,
        "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Lyon\"} ok",
        &[
            "start 0 get_weather",
            r#"args 0 {"city":"Lyon"}"#,
            r#"proposal 0 mistral get_weather {"city":"Lyon"} []"#,
            r#"prose " ok""#,
        ],
    );
    check(
        &m,
        "[TOOL_CALLS]delete[CALL_ID]ab12[ARGS]{\"path\": \"tmp\"}",
        &[
            "start 0 delete",
            r#"args 0 {"path":"tmp"}"#,
            r#"proposal 0 mistral delete {"path":"tmp"} []"#,
        ],
    );
}

#[test]
fn pythonic_forms() {
    let p = pythonic::Pythonic::new(false);
    check(
        &p,
        "[read(path='a.py', start=3), get_weather(city=\"Bern\")]\n",
        &[
            "start 0 read",
            r#"args 0 {"path":"a.py","start":3}"#,
            r#"proposal 0 pythonic read {"path":"a.py","start":3} []"#,
            "start 1 get_weather",
            r#"args 1 {"city":"Bern"}"#,
            r#"proposal 1 pythonic get_weather {"city":"Bern"} []"#,
            r#"prose "\n""#,
        ],
    );
    check(
        &p,
        "[print(x) for x in xs]",
        &[r#"text "<rejected>[print(""#, r#"prose "x) for x in xs]""#],
    );
    check(
        &p,
        "[list(x) for x in xs]",
        &[r#"text "<rejected>[list(x)""#, r#"prose " for x in xs]""#],
    );
    check(&p, "[1, 2]", &[r#"prose "[1, 2]""#]);
    check(&p, "[link](http://x)", &[r#"prose "[link](http://x)""#]);
}

#[test]
fn text_mode_repair() {
    let f = hermes::ToolCallTag::new(FormatId::Hermes, true);
    check_with(
        &f,
        "<tool_call>{\"name\": \"done\", \"arguments\": {\"summary\": \"ok\"}}</tool_call>",
        false,
        &[
            "start 0 done",
            r#"args 0 {"summary":"ok"}"#,
            r#"proposal 0 hermes done {"summary":"ok"} [native_in_text_mode]"#,
        ],
    );
    let f = bare_json::BareJson::new(FormatId::BareJson, true);
    check_with(
        &f,
        "```json\n{\"tool_calls\": [{\"name\": \"done\", \"arguments\": {\"summary\": \"ok\"}}]}\n```",
        false,
        &[
            "start 0 done",
            r#"args 0 {"summary":"ok"}"#,
            r#"proposal 0 bare_json done {"summary":"ok"} [fenced_json,native_in_text_mode]"#,
        ],
    );
}

#[test]
fn openai_deltas() {
    let mut d = openai::DeltaDecoder::new(registry(), 0);
    let mut out = Vec::new();
    d.feed(0, Some("call_1"), Some("get_weather"), Some(""), &mut out);
    d.feed(0, None, None, Some("{\"city\": \"Gen"), &mut out);
    d.feed(0, None, None, Some("eva\"}"), &mut out);
    d.feed(
        1,
        Some("call_2"),
        Some("read"),
        Some("{'path': 'x'}"),
        &mut out,
    );
    d.feed(2, Some("call_3"), Some("nope"), Some("{}"), &mut out);
    d.finish(&mut out);
    assert_eq!(
        render(&out, ""),
        vec![
            "start 0 get_weather",
            r#"args 0 {"city":"Geneva"}"#,
            "start 1 read",
            r#"proposal 0 openai get_weather {"city":"Geneva"} []"#,
            r#"args 1 {"path":"x"}"#,
            r#"proposal 1 openai read {"path":"x"} [python_literal]"#,
            r#"failure None unknown_tool "nope{}""#,
        ]
    );
}

#[test]
fn triggers_are_disjoint() {
    let reg = registry();
    let ctx = Ctx {
        registry: &reg,
        next_index: 0,
        last_edit_path: None,
        auto: true,
        answered: false,
        attempted: false,
    };
    let samples = [
        "<tool_call>{",
        "<function=read>",
        "<|python_tag|>{",
        "[TOOL_CALLS][",
        "[read(path='a')]",
        "{\"name\": \"read\"",
        "```json\n{\"name\": \"read\"",
        "[{\"name\": \"read\"",
        "[\n  {\"arguments\": {",
        "{\"tool_calls\": [",
        "{\"tool_call\": {",
        "```json\n[{\"name\": \"read\"",
        "```json\n{\"tool_calls\":",
        "<tool_calls>[{",
        "<TOOLCALL>[{",
        "<|tools_prefix|>[{",
        "<|START_ACTION|>[{",
        "<|tool_call|>[{",
        "functools[{",
        "<start_function_call>call:read{",
        "<|tool_call>call:read{",
        "<tools>{\"name\"",
        "<function_call>{",
        "<tool>{",
        "<response>{",
        "<json>{",
        "<function name=\"read\">{",
        "<\u{ff5c}tool\u{2581}calls\u{2581}begin\u{ff5c}><\u{ff5c}tool\u{2581}call\u{2581}begin\u{ff5c}>",
        "<|tool_calls_section_begin|><|tool_call_begin|>",
        "<|channel|>commentary to=functions.read",
        "<|start|>assistant<|channel|>",
        "<|action_start|><|plugin|>\n{",
        "<|tool_call_start|>[read(",
        "<|tool_call_start|>[{\"name\"",
        "<|python_start|>[read(",
        "<function_calls>\nread(",
        "[TOOL_CALLS]read{",
        "<seed:tool_call>\n<function=read>",
        "<minimax:tool_call>\n<invoke name=\"read\">",
        "<tool_call>read\n<arg_key>",
        "read\n{\"path\"",
        "<|tool_call_start|>\n```python\nread(",
    ];
    for s in samples {
        for line_start in [true, false] {
            let at = Position {
                line_start,
                eos: false,
                reply_start: line_start,
            };
            let yes: Vec<FormatId> = formats()
                .iter()
                .filter(|f| matches!(f.detect(s, at, &ctx), Detect::Start(_)))
                .map(|f| f.id())
                .collect();
            assert!(yes.len() <= 1, "{s:?} started by {yes:?}");
            if line_start {
                assert_eq!(yes.len(), 1, "{s:?} is a trigger");
            }
        }
    }
}

#[test]
fn json_reserialises_like_serde() {
    for s in [
        r#"{"a": [1, 2.5, -0, 1e3, true, null], "b": {"c": "\u00e9\n\t\u0001\ud83d\ude00 \/"}}"#,
        r#"{"x": "y"}"#,
        "[]",
    ] {
        let mut p = json::ValueParser::new(true);
        let mut text = String::new();
        for c in s.chars() {
            p.push(c).expect("valid json");
            text.push_str(&p.take_out());
        }
        let v: serde_json::Value = serde_json::from_str(s).expect("valid json");
        assert_eq!(text, v.to_string());
        assert_eq!(p.take_value(), Some(v));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn arbitrary_bytes_never_panic(tail in "\\PC{0,80}", cut in 0usize..8) {
        for prefix in ["<tool_call>", "<tool_call><function=", "<|python_tag|>", "[TOOL_CALLS]", "[read(", "{\"name\"", "```json\n{\"name\":", "<function=", "[{\"name\":", "{\"tool_calls\": [", "{\"tool_call\":", "```json\n[{\"name\":", "<tool_calls>[{\"name\":", "<|tools_prefix|>[{\"get_weather\":", "<|START_ACTION|>[{\"tool_name\":", "functools[", "<start_function_call>call:get_weather{", "<|tool_call>call:get_weather{", "<tools>{\"name\": \"read\", ", "<function name=\"get_weather\">{", "<\u{ff5c}tool\u{2581}calls\u{2581}begin\u{ff5c}><\u{ff5c}tool\u{2581}call\u{2581}begin\u{ff5c}>function<\u{ff5c}tool\u{2581}sep\u{ff5c}>", "<\u{ff5c}tool\u{2581}calls\u{2581}begin\u{ff5c}><\u{ff5c}tool\u{2581}call\u{2581}begin\u{ff5c}>get_weather<\u{ff5c}tool\u{2581}sep\u{ff5c}>", "<|tool_calls_section_begin|><|tool_call_begin|>functions.read:0<|tool_call_argument_begin|>", "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>", "<|channel|>analysis<|message|>"] {
            let input = format!("{prefix}{tail}");
            for f in formats().iter().chain(mode_formats(FormatId::Llama3).iter()) {
                let _ = drive(&**f, &chunks(&input, cut + 1), true);
            }
        }
    }

    #[test]
    fn json_shaped_noise_never_panics(s in "[{}\\[\\]\",:'a-z0-9 \\\\]{0,60}") {
        let input = format!("<tool_call>{{\"name\": \"get_weather\", \"arguments\": {s}");
        let _ = drive(&*hermes(), &chunks(&input, 3), true);
        let input = format!("{{\"name\": \"read\", \"arguments\": {s}");
        let _ = drive(&*bare(), &chunks(&input, 2), true);
        let input = format!("[{{\"name\": \"get_weather\", \"arguments\": {s}");
        let _ = drive(&*bare(), &chunks(&input, 2), true);
        let input = format!("{{\"tool_calls\": [{s}");
        let _ = drive(&*bare(), &chunks(&input, 3), true);
        let input = format!("<|tools_prefix|>[{{\"get_weather\": {s}");
        let _ = drive(&*markers(), &chunks(&input, 2), true);
        let input = format!("<|START_ACTION|>[{{\"tool_name\": \"get_weather\", \"parameters\": {s}");
        let _ = drive(&*markers(), &chunks(&input, 3), true);
        let input = format!("<|tool_call>call:get_weather{{{s}");
        let _ = drive(&*gemma(), &chunks(&input, 2), true);
        let input = format!("<tool>{{\"name\": \"get_weather\", \"arguments\": {s}");
        let _ = drive(&*drift(), &chunks(&input, 3), true);
        let input = format!("<function name=\"get_weather\">{{{s}");
        let _ = drive(&*drift(), &chunks(&input, 2), true);
        let input = format!("{DS_OPEN}{DS_CALL}get_weather{DS_SEP}{s}{DS_CALL_END}");
        let _ = drive(&*sections(), &chunks(&input, 3), true);
        let input = format!("<|channel|>commentary to=functions.get_weather<|message|>{s}<|call|>");
        let _ = drive(&*harmony_fmt(), &chunks(&input, 2), true);
    }
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-1.0e12f64..1.0e12).prop_map(|f| json!(f)),
        "\\PC{0,12}|[\"\\\\\n\t\u{1}<>/]{0,6}|</tool_call>".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::Array),
            prop::collection::btree_map("[a-z_]{1,6}", inner, 0..4)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

fn args_object() -> impl Strategy<Value = serde_json::Value> {
    prop::collection::btree_map("[a-z_\"\\\\é]{1,6}", json_value(), 0..5)
        .prop_map(|m| serde_json::Value::Object(m.into_iter().collect()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    /// Random client-tool arguments, written compact or pretty, decode to the same value
    /// under any chunking, and the streamed fragments concatenate to its compact form.
    #[test]
    fn client_arguments_roundtrip(args in args_object(), pretty in any::<bool>(), n in 1usize..9) {
        let mut reg = Registry::builtin();
        reg.add_client_tool("anything", "Takes any object.", json!({"type": "object"}))
            .expect("valid client tool");
        let text = if pretty {
            serde_json::to_string_pretty(&args).expect("serialises")
        } else {
            args.to_string()
        };
        let input = format!("<tool_call>{{\"name\": \"anything\", \"arguments\": {text}}}</tool_call>");
        let mut ctx = Ctx { registry: &reg, next_index: 0, last_edit_path: None, auto: true, answered: false, attempted: false };
        let mut out = Vec::new();
        let Detect::Start(mut b) = hermes().detect(&input, Position { line_start: true, eos: false, reply_start: false }, &ctx) else {
            panic!("no start");
        };
        let mut done = false;
        for piece in chunks(&input, n) {
            prop_assert!(!done, "body ended before the input did");
            match b.feed(piece, &mut ctx, &mut out) {
                Step::NeedMore => {}
                Step::Done { consumed } => {
                    prop_assert_eq!(consumed, piece.len());
                    done = true;
                }
                other => prop_assert!(false, "unexpected step {:?}", other),
            }
        }
        prop_assert!(done);
        let streamed: String = out
            .iter()
            .filter_map(|e| match e {
                Event::ArgsDelta { fragment, .. } => Some(fragment.as_str()),
                _ => None,
            })
            .collect();
        prop_assert_eq!(&streamed, &args.to_string());
        let proposals: Vec<&crate::action::ActionProposal> = out
            .iter()
            .filter_map(|e| match e {
                Event::Proposal { proposal, .. } => Some(proposal),
                _ => None,
            })
            .collect();
        prop_assert_eq!(proposals.len(), 1);
        match &proposals[0].action {
            crate::action::Action::Client { arguments, .. } => prop_assert_eq!(arguments, &args),
            other => prop_assert!(false, "not a client action: {:?}", other),
        }
    }
}

#[test]
fn held_bytes_are_capped() {
    let reg = registry();
    let mut ctx = Ctx {
        registry: &reg,
        next_index: 0,
        last_edit_path: None,
        auto: true,
        answered: false,
        attempted: false,
    };
    let mut out = Vec::new();
    let head = "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"";
    let Detect::Start(mut b) = hermes().detect(
        head,
        Position {
            line_start: true,
            eos: false,
            reply_start: false,
        },
        &ctx,
    ) else {
        panic!("no start");
    };
    assert_eq!(b.feed(head, &mut ctx, &mut out), Step::NeedMore);
    let filler = "x".repeat(4096);
    let mut ended = None;
    for _ in 0..(MAX_HELD / filler.len() + 2) {
        match b.feed(&filler, &mut ctx, &mut out) {
            Step::NeedMore => {}
            other => {
                ended = Some(other);
                break;
            }
        }
    }
    assert!(matches!(ended, Some(Step::Done { .. })), "{ended:?}");
    let failure = out.iter().find_map(|e| match e {
        Event::Failure { index, kind, raw } => Some((*index, *kind, raw.len())),
        _ => None,
    });
    let (index, kind, raw_len) = failure.expect("a failure");
    assert_eq!((index, kind), (Some(0), crate::event::FailureKind::TooLong));
    assert!(raw_len > MAX_HELD);
    assert!(b.finish(&mut ctx, &mut out).is_none());
}

fn sections() -> Box<dyn Format> {
    Box::new(section::SectionCalls::new(false))
}

const DS_OPEN: &str = "<\u{ff5c}tool\u{2581}calls\u{2581}begin\u{ff5c}>";
const DS_CALL: &str = "<\u{ff5c}tool\u{2581}call\u{2581}begin\u{ff5c}>";
const DS_SEP: &str = "<\u{ff5c}tool\u{2581}sep\u{ff5c}>";
const DS_CALL_END: &str = "<\u{ff5c}tool\u{2581}call\u{2581}end\u{ff5c}>";
const DS_END: &str = "<\u{ff5c}tool\u{2581}calls\u{2581}end\u{ff5c}>";

/// DeepSeek's markers are the tokens' exact bytes: `<`, U+FF5C, words joined by U+2581, U+FF5C,
/// `>`.
#[test]
fn deepseek_marker_bytes() {
    let row = &section::ROWS[0];
    assert_eq!(row.open, DS_OPEN);
    assert_eq!(row.call_open, DS_CALL);
    assert_eq!(row.sep, DS_SEP);
    assert_eq!(row.call_close, DS_CALL_END);
    assert_eq!(row.close, DS_END);
    assert_eq!(
        row.open.as_bytes(),
        b"<\xef\xbd\x9ctool\xe2\x96\x81calls\xe2\x96\x81begin\xef\xbd\x9c>"
    );
}

/// No row's section marker is a prefix of another's.
#[test]
fn section_rows_are_disjoint() {
    for (i, a) in section::ROWS.iter().enumerate() {
        for (j, b) in section::ROWS.iter().enumerate() {
            if i != j {
                assert!(!b.open.starts_with(a.open), "{} / {}", a.open, b.open);
            }
        }
    }
}

#[test]
fn section_calls_deepseek() {
    let r1 = |name: &str, args: &str| {
        format!("{DS_CALL}function{DS_SEP}{name}\n```json\n{args}\n```{DS_CALL_END}")
    };
    check(
        &*sections(),
        &format!(
            "{DS_OPEN}{}\n{}{DS_END} ok",
            r1("get_weather", "{\"city\": \"Paris\"}"),
            r1("read", "{\"path\": \"a.rs\"}")
        ),
        &[
            "start 0 get_weather",
            "args 0 {\"city\":\"Paris\"}",
            "proposal 0 section_calls get_weather {\"city\":\"Paris\"} []",
            "start 1 read",
            "args 1 {\"path\":\"a.rs\"}",
            "proposal 1 section_calls read {\"path\":\"a.rs\"} []",
            "prose \" ok\"",
        ],
    );
    check(
        &*sections(),
        &format!(
            "{DS_OPEN}{DS_CALL}get_weather{DS_SEP}{{\"city\": \"Rome\", \"days\": 2}}{DS_CALL_END}{DS_END}"
        ),
        &[
            "start 0 get_weather",
            "args 0 {\"city\":\"Rome\",\"days\":2}",
            "proposal 0 section_calls get_weather {\"city\":\"Rome\",\"days\":2} []",
        ],
    );
    // Repairs: end markers missing (next call, section end, end of stream), Python literal.
    check(
        &*sections(),
        &format!(
            "{DS_OPEN}{DS_CALL}get_weather{DS_SEP}{{'city': 'Oslo'}}{DS_CALL}read{DS_SEP}{{\"path\": \"x\"}}{DS_END}"
        ),
        &[
            "start 0 get_weather",
            "args 0 {\"city\":\"Oslo\"}",
            "proposal 0 section_calls get_weather {\"city\":\"Oslo\"} [python_literal,missing_close_tag]",
            "start 1 read",
            "args 1 {\"path\":\"x\"}",
            "proposal 1 section_calls read {\"path\":\"x\"} [missing_close_tag]",
        ],
    );
    check(
        &*sections(),
        &format!("{DS_OPEN}{DS_CALL}function{DS_SEP}get_weather\n```json\n{{\"city\": \"Oslo\""),
        &[
            "start 0 get_weather",
            "args 0 {\"city\":\"Oslo\"}",
            "proposal 0 section_calls get_weather {\"city\":\"Oslo\"} [unclosed_json,missing_close_tag]",
        ],
    );
    // Failures: an undeclared tool, arguments the schema refuses.
    check(
        &*sections(),
        &format!("{DS_OPEN}{DS_CALL}nope{DS_SEP}{{}}{DS_CALL_END}{DS_END}"),
        &[
            "failure None unknown_tool \"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>nope<｜tool▁sep｜>{}<｜tool▁call▁end｜>\"",
            "text \"<｜tool▁calls▁end｜>\"",
        ],
    );
    // V3.1 calling a tool named `function`: `{` after the separator.
    check(
        &*sections(),
        &format!("{DS_OPEN}{DS_CALL}function{DS_SEP}{{\"a\": 1}}{DS_CALL_END}{DS_END}"),
        &[
            "failure None unknown_tool \"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>{\\\"a\\\": 1}<｜tool▁call▁end｜>\"",
            "text \"<｜tool▁calls▁end｜>\"",
        ],
    );
    // Traps: the marker named in prose; a head that is no name.
    check(
        &*sections(),
        &format!("{DS_OPEN} starts a call list"),
        &[
            "text \"<rejected><｜tool▁calls▁begin｜> s\"",
            "prose \"tarts a call list\"",
        ],
    );
    check(
        &*sections(),
        &format!("{DS_OPEN}{DS_CALL}what is this? {DS_SEP}"),
        &[
            "text \"<rejected><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>what is this? <｜tool▁sep｜>\"",
        ],
    );
}

#[test]
fn section_calls_kimi() {
    check(
        &*sections(),
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_call_end|><|tool_call_begin|>functions.read:1<|tool_call_argument_begin|>{\"path\": \"a\"}<|tool_call_end|><|tool_calls_section_end|>",
        &[
            "start 0 get_weather",
            "args 0 {\"city\":\"Paris\"}",
            "proposal 0 section_calls get_weather {\"city\":\"Paris\"} []",
            "start 1 read",
            "args 1 {\"path\":\"a\"}",
            "proposal 1 section_calls read {\"path\":\"a\"} []",
        ],
    );
    check(
        &*sections(),
        "<|tool_calls_section_begin|> <|tool_call_begin|> get_weather:0 <|tool_call_argument_begin|> {\"city\": \"Paris\", \"days\": 3\nDone.",
        &[
            "start 0 get_weather",
            "args 0 {\"city\":\"Paris\",\"days\":3",
            "failure Some(0) invalid_json \"<|tool_calls_section_begin|> <|tool_call_begin|> get_weather:0 <|tool_call_argument_begin|> {\\\"city\\\": \\\"Paris\\\", \\\"days\\\": 3\\n\"",
            "prose \"Done.\"",
        ],
    );
    check(
        &*sections(),
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather<|tool_call_argument_begin|>{}<|tool_call_end|>",
        &[
            "text \"<rejected><|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather<|tool_call_argument_begin|>\"",
            "prose \"{}<|tool_call_end|>\"",
        ],
    );
    check(
        &*sections(),
        "<|tool_calls_section_begin|> is the token Kimi opens calls with",
        &[
            "text \"<rejected><|tool_calls_section_begin|> i\"",
            "prose \"s the token Kimi opens calls with\"",
        ],
    );
}

fn harmony_fmt() -> Box<dyn Format> {
    Box::new(harmony::Harmony::new(false))
}

#[test]
fn harmony_messages() {
    check(
        &*harmony_fmt(),
        "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>",
        &[
            "start 0 get_weather",
            "args 0 {\"city\":\"Paris\"}",
            "proposal 0 harmony get_weather {\"city\":\"Paris\"} []",
        ],
    );
    check(
        &*harmony_fmt(),
        "<|start|>assistant to=functions.read<|channel|>commentary json<|message|>{\"path\": \"a\"}<|call|>",
        &[
            "start 0 read",
            "args 0 {\"path\":\"a\"}",
            "proposal 0 harmony read {\"path\":\"a\"} []",
        ],
    );
    check(
        &*harmony_fmt(),
        "<|channel|>analysis<|message|>Call <tool_call>{\"name\": \"read\"}</tool_call>? No.<|end|><|start|>assistant",
        &[
            "text \"<|channel|>analysis<|message|>\"",
            "reasoning \"Call <tool_call>{\\\"name\\\": \\\"read\\\"}</tool_call>? No.\"",
            "text \"<|end|>\"",
            "prose \"<|start|>assistant\"",
        ],
    );
    check(
        &*harmony_fmt(),
        "<|channel|>commentary to=functions.get_weather<|message|>{'city': 'Oslo'}",
        &[
            "start 0 get_weather",
            "args 0 {\"city\":\"Oslo\"}",
            "proposal 0 harmony get_weather {\"city\":\"Oslo\"} [python_literal,missing_close_tag]",
        ],
    );
    check(
        &*harmony_fmt(),
        "<|channel|>final<|message|>The <|channel|> token names a channel.<|return|>",
        &[
            "text \"<rejected><|channel|>final<|message|>\"",
            "prose \"The <|channel|> token names a channel.<|return|>\"",
        ],
    );
    check(
        &*harmony_fmt(),
        "<|channel|>commentary to=browser.search <|constrain|>json<|message|>{\"q\": \"x\"}<|call|>",
        &[
            "text \"<rejected><|channel|>commentary to=browser.search <|constrain|>json<|message|>\"",
            "prose \"{\\\"q\\\": \\\"x\\\"}<|call|>\"",
        ],
    );
    check(
        &*harmony_fmt(),
        "<|channel|>commentary to=functions.nope<|message|>{}<|call|>",
        &[
            "failure None unknown_tool \"<|channel|>commentary to=functions.nope<|message|>{}<|call|>\"",
        ],
    );
}
