//! Reasoning markers of every known family, recognised by default.
//!
//! Each pair of `KNOWN_REASONING_MARKERS` must be treated exactly as `<think>` is: the text
//! between its markers is reasoning, a call written there is not decoded, the same call after
//! the block is, another family's close does not end the block, and prose that mentions a
//! marker behaves as it does with `<think>`. Every case is decoded whole, one char at a time
//! and split in two at every char boundary, with a registry of client tools and with the
//! builtin one; the traces must be identical.

use std::sync::Arc;

use codec::event::Event;
use codec::format::FormatId;
use codec::registry::Registry;
use codec::turn::{KNOWN_REASONING_MARKERS, Mode, ReasoningMarkers, TurnDecoder, trace};
use serde_json::json;

/// The pairs besides `<think>`, which the older tests cover.
fn new_pairs() -> impl Iterator<Item = (&'static str, &'static str)> {
    KNOWN_REASONING_MARKERS
        .into_iter()
        .filter(|&(open, _)| open != "<think>")
}

/// A registry of one client tool and no builtins, as the gateway builds for client tools.
fn client() -> Arc<Registry> {
    let mut r = Registry::client_only();
    r.add_client_tool(
        "get_weather",
        "Weather for a city.",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    )
    .expect("valid client tool");
    Arc::new(r)
}

fn builtin() -> Arc<Registry> {
    Arc::new(Registry::builtin())
}

/// The Hermes call each registry declares a tool for, and the proposal line it decodes to.
fn call_for(reg: &Registry) -> (&'static str, &'static str) {
    if reg.has_builtins() {
        (
            r#"<tool_call>{"name": "read", "arguments": {"path": "a.py"}}</tool_call>"#,
            "proposal #0 hermes read {\"path\":\"a.py\"}\n",
        )
    } else {
        (
            r#"<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}</tool_call>"#,
            "proposal #0 hermes get_weather {\"city\":\"Rome\"}\n",
        )
    }
}

fn decode<'a>(make: &impl Fn() -> TurnDecoder, parts: impl IntoIterator<Item = &'a str>) -> String {
    let mut d = make();
    let mut events = Vec::new();
    for p in parts {
        d.feed_into(p, &mut events);
    }
    d.finish_into(&mut events);
    trace(&events)
}

/// The trace of `input`, after checking that every chunking gives the same one.
fn check(make: impl Fn() -> TurnDecoder, input: &str) -> String {
    let whole = decode(&make, [input]);
    let chars: Vec<&str> = input
        .char_indices()
        .map(|(i, c)| &input[i..i + c.len_utf8()])
        .collect();
    assert_eq!(decode(&make, chars), whole, "char by char: {input:?}");
    for (k, _) in input.char_indices().skip(1) {
        assert_eq!(
            decode(&make, [&input[..k], &input[k..]]),
            whole,
            "split at {k}: {input:?}"
        );
    }
    whole
}

/// The decoders a reply goes through: both registries, in every in-band format and in the
/// profile's one format.
fn decoders() -> Vec<(Arc<Registry>, Mode)> {
    let mut v = Vec::new();
    for reg in [client(), builtin()] {
        for mode in [Mode::Auto, Mode::Only(FormatId::Hermes)] {
            v.push((Arc::clone(&reg), mode));
        }
    }
    v
}

/// The trace of a call with the event lines that start and stream it, as the registry
/// streams them (a client tool's arguments stream; a builtin's come validated).
fn call_events(reg: &Registry) -> String {
    if reg.has_builtins() {
        "start #0 read\nargs #0 \"{\\\"path\\\":\\\"a.py\\\"}\"\n".to_owned()
    } else {
        "start #0 get_weather\nargs #0 \"{\\\"city\\\":\\\"Rome\\\"}\"\n".to_owned()
    }
}

#[test]
fn the_known_pairs_are_the_sourced_families() {
    let opens: Vec<&str> = KNOWN_REASONING_MARKERS.iter().map(|p| p.0).collect();
    assert_eq!(
        opens,
        [
            "<think>",
            "<seed:think>",
            "\u{25c1}think\u{25b7}",
            "[THINK]",
            "<|START_THINKING|>",
            "<|inner_prefix|>"
        ]
    );
    let d = TurnDecoder::new(Mode::Auto, builtin());
    assert_eq!(
        d.reasoning_marker_set(),
        ReasoningMarkers::known().as_slice()
    );
    assert_eq!(d.reasoning_markers(), Some(&ReasoningMarkers::default()));
}

/// A call inside a block of any family is reasoning; the same call after the block is decoded.
#[test]
fn a_call_inside_any_familys_block_is_reasoning_and_after_it_is_decoded() {
    for (reg, mode) in decoders() {
        let (call, proposal) = call_for(&reg);
        for (open, close) in KNOWN_REASONING_MARKERS {
            let input = format!("{open}Plan: {call}{close}\n{call}");
            let got = check(|| TurnDecoder::new(mode, Arc::clone(&reg)), &input);
            let want = format!(
                "reasoning {}\ntext \"\\n\"\n{}{proposal}",
                serde_json::Value::String(format!("Plan: {call}")),
                call_events(&reg),
            );
            assert_eq!(got, want, "{open} in {mode:?}");
        }
    }
}

/// A block left open is reasoning to the end, call and all.
#[test]
fn an_unclosed_block_of_any_family_is_reasoning_to_the_end() {
    for (reg, mode) in decoders() {
        let (call, _) = call_for(&reg);
        for (open, close) in KNOWN_REASONING_MARKERS {
            // The close cut short is part of the reasoning too.
            let cut = &close[..close.len() - close.chars().last().map_or(0, char::len_utf8)];
            let input = format!("ok {open}{call}\n{cut}");
            let got = check(|| TurnDecoder::new(mode, Arc::clone(&reg)), &input);
            let want = format!(
                "text \"ok \"\nreasoning {}\n",
                serde_json::Value::String(format!("{call}\n{cut}"))
            );
            assert_eq!(got, want, "{open} in {mode:?}");
        }
    }
}

/// Only the close of the pair that opened the block ends it: another family's close (and
/// another family's opener) inside it is reasoning text, so the call after it is not decoded.
#[test]
fn another_familys_close_does_not_end_the_block() {
    for (reg, mode) in decoders() {
        let (call, proposal) = call_for(&reg);
        for (open, close) in KNOWN_REASONING_MARKERS {
            for (other_open, other_close) in KNOWN_REASONING_MARKERS {
                if other_open == open {
                    continue;
                }
                let inner = format!("a{other_close}{call}{other_open}b");
                let input = format!("{open}{inner}{close}{call}");
                let got = check(|| TurnDecoder::new(mode, Arc::clone(&reg)), &input);
                let want = format!(
                    "reasoning {}\n{}{proposal}",
                    serde_json::Value::String(inner),
                    call_events(&reg),
                );
                assert_eq!(got, want, "{open} … {other_close} in {mode:?}");
            }
        }
    }
}

/// A marker split across chunks is held, not released as prose.
#[test]
fn a_partial_opener_at_a_chunk_end_is_held() {
    for (open, close) in new_pairs() {
        let mut d = TurnDecoder::new(Mode::Auto, client());
        let cut = open.char_indices().nth(2).map_or(1, |(i, _)| i);
        let close_cut = close.chars().next().map_or(1, char::len_utf8);
        let mut events = d.feed(&format!("ok {}", &open[..cut]));
        assert_eq!(events, vec![Event::Text("ok ".into())], "{open}");
        events.extend(d.feed(&format!("{}x{}", &open[cut..], &close[..close_cut])));
        assert_eq!(
            events,
            vec![Event::Text("ok ".into()), Event::Reasoning("x".into())],
            "{open}"
        );
        events.extend(d.feed(&format!("{}y", &close[close_cut..])));
        events.extend(d.finish());
        assert_eq!(
            trace(&events),
            "text \"ok \"\nreasoning \"x\"\ntext \"y\"\n",
            "{open}"
        );
    }
}

/// Prose that names a marker: whatever `<think>` does there today, every pair does the same.
/// Today an opener anywhere in prose opens a block (in backticks or a sentence too), and a
/// close outside a block is prose.
#[test]
fn prose_naming_a_marker_behaves_as_think_does() {
    let sentences = [
        (
            "Wrap your plan in `<think>` and `</think>`.\nREAD a.py\n",
            "text \"Wrap your plan in `\"\nreasoning \"` and `\"\ntext \"`.\\n\"\nproposal #0 text read {\"path\":\"a.py\"}\n",
        ),
        (
            "The model writes <think> first, then READ a.py\n",
            "text \"The model writes \"\nreasoning \" first, then READ a.py\\n\"\n",
        ),
        (
            "A lone </think> is prose.\nREAD a.py\n",
            "text \"A lone </think> is prose.\\n\"\nproposal #0 text read {\"path\":\"a.py\"}\n",
        ),
    ];
    let make = || TurnDecoder::new(Mode::Auto, builtin());
    for (input, think_trace) in sentences {
        assert_eq!(check(make, input), think_trace, "{input:?}");
        for (open, close) in new_pairs() {
            let swap = |s: &str| s.replace("</think>", close).replace("<think>", open);
            assert_eq!(
                check(make, &swap(input)),
                swap(think_trace),
                "{open}: {input:?}"
            );
        }
    }
}

/// A profile's pair replaces the known set; an empty pair turns reasoning off.
#[test]
fn a_profiles_pair_replaces_the_known_set() {
    let (call, proposal) = call_for(&client());
    for (open, close) in new_pairs() {
        let only = || TurnDecoder::new(Mode::Auto, client()).with_reasoning_markers(open, close);
        assert_eq!(only().reasoning_marker_set().len(), 1);
        // `<think>` is now prose, so its call is decoded; the profile's pair still hides one.
        let input = format!("<think>x</think>{open}{call}{close}{call}");
        let want = format!(
            "text \"<think>x</think>\"\nreasoning {}\n{}{proposal}",
            serde_json::Value::String(call.to_owned()),
            call_events(&client()),
        );
        assert_eq!(check(only, &input), want, "{open}");

        let off = || TurnDecoder::new(Mode::Auto, client()).with_reasoning_markers("", "");
        assert!(off().reasoning_markers().is_none());
        let input = format!("{open}x{close}");
        assert_eq!(
            check(off, &input),
            format!("text {}\n", serde_json::Value::String(input.clone()))
        );
    }
    // A set of pairs, as a caller may give it.
    let set = || {
        TurnDecoder::new(Mode::Auto, client()).with_reasoning_marker_set([
            ReasoningMarkers::new("[THINK]", "[/THINK]"),
            ReasoningMarkers::new("", "ignored"),
        ])
    };
    assert_eq!(set().reasoning_marker_set().len(), 1);
    assert_eq!(
        check(set, "[THINK]a[/THINK]<think>b</think>"),
        "reasoning \"a\"\ntext \"<think>b</think>\"\n"
    );
}

/// A reply that starts inside reasoning is inside the first pair's block (`<think>`): only
/// `</think>` ends it.
#[test]
fn a_reply_starting_in_reasoning_ends_at_the_first_pairs_close() {
    let (call, proposal) = call_for(&client());
    let make = || TurnDecoder::new(Mode::Auto, client()).starts_in_reasoning(true);
    let input = format!("a[/THINK]{call}</think>{call}");
    let want = format!(
        "reasoning {}\n{}{proposal}",
        serde_json::Value::String(format!("a[/THINK]{call}")),
        call_events(&client()),
    );
    assert_eq!(check(make, &input), want);
}

/// Inside a construct an opener is content, for every family as for `<think>`.
#[test]
fn an_opener_inside_a_call_is_content() {
    for (open, _) in KNOWN_REASONING_MARKERS {
        let path = serde_json::Value::String(format!("{open}.md"));
        let input = format!(
            r#"<tool_call>{{"name": "read", "arguments": {{"path": {path}}}}}</tool_call>"#
        );
        let got = check(|| TurnDecoder::new(Mode::Auto, builtin()), &input);
        let args = json!({ "path": format!("{open}.md") });
        assert_eq!(
            got,
            format!(
                "start #0 read\nargs #0 {}\nproposal #0 hermes read {args}\n",
                serde_json::Value::String(args.to_string())
            ),
            "{open}"
        );
    }
}
