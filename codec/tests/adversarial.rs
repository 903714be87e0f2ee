//! Every trigger followed by a megabyte of filler, fed in 4-byte chunks, completes and gives
//! every byte back. Look-ahead after a trigger is bounded in every detector, so held bytes
//! are re-offered at a bounded cost per feed; a detector that skipped blanks without bound
//! (the ```` ```json ```` fence lead once did) made this quadratic and the test would not end.
//! Nothing here is timed: speed is measured by the `adversarial` group of `benches/codec.rs`.

use std::sync::Arc;

use codec::format::FormatId;
use codec::{Event, Mode, Registry, TurnDecoder};

/// Each trigger, and the mode that enables it (`{"name"` is Llama 3's line object).
const OPENERS: &[(&str, Mode)] = &[
    ("```json", Mode::Auto),
    ("```json\n", Mode::Auto),
    ("<tool_call>", Mode::Auto),
    ("<function=", Mode::Auto),
    ("<|python_tag|>", Mode::Auto),
    ("{\"name\"", Mode::Only(FormatId::Llama3)),
    ("[TOOL_CALLS]", Mode::Auto),
    ("[f(", Mode::Auto),
    ("[{\"name\":", Mode::Auto),
    ("[{\"name\": \"x\", \"arguments\": {}}, ", Mode::Auto),
    ("{\"tool_calls\":", Mode::Auto),
    ("{\"tool_call\":", Mode::Auto),
    ("```json\n[", Mode::Auto),
    ("<tool_calls>", Mode::Auto),
    (
        "<tool_calls>[{\"name\": \"x\", \"arguments\": {}}, ",
        Mode::Auto,
    ),
    ("<|tools_prefix|>[{\"x\": ", Mode::Auto),
    ("<|START_ACTION|>[", Mode::Auto),
    ("functools[", Mode::Only(FormatId::MarkerList)),
    ("<start_function_call>", Mode::Auto),
    ("<start_function_call>call:", Mode::Auto),
    ("<start_function_call>call:read{path:<escape>", Mode::Auto),
    ("<|tool_call>call:read{", Mode::Only(FormatId::GemmaCall)),
    ("<tools>", Mode::Auto),
    (
        "<tools>{\"name\": \"read\", \"arguments\": {\"path\": \"",
        Mode::Auto,
    ),
    ("<function name=\"", Mode::Auto),
    ("<function name=\"read\">{", Mode::Only(FormatId::Hermes)),
    ("<|tool_calls_section_begin|>", Mode::Auto),
    (
        "<|tool_calls_section_begin|><|tool_call_begin|>",
        Mode::Auto,
    ),
    (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.read:0<|tool_call_argument_begin|>{\"path\": \"",
        Mode::Only(FormatId::SectionCalls),
    ),
    ("<|channel|>", Mode::Auto),
    ("<|start|>assistant", Mode::Auto),
    ("<|channel|>analysis<|message|>", Mode::Auto),
    (
        "<|channel|>commentary to=functions.read<|message|>{\"path\": \"",
        Mode::Only(FormatId::Harmony),
    ),
    ("[TOOL_CALLS]read", Mode::Auto),
    ("<|action_start|><|plugin|>", Mode::Auto),
    ("<|tool_call_start|>", Mode::Auto),
    ("<|tool_call_start|>[read(path=", Mode::Auto),
    ("<|python_start|>[read(path=", Mode::Auto),
    ("<|tool_call_start|>\n```python\nread(path=", Mode::Auto),
    ("<function_calls>\n", Mode::Auto),
    // In `auto` the complete call line would be a bare pythonic call once the marker's body
    // gives up, so the marker's own look-ahead is checked in its format's mode.
    (
        "<function_calls>\nread(path=\"a\")\n",
        Mode::Only(FormatId::MarkerList),
    ),
    ("read(path=", Mode::Auto),
    ("read(path=\"a\", ", Mode::Auto),
    ("    [read(path=\"a\"), ", Mode::Auto),
    ("read(path=\"a\")", Mode::Auto),
    // A bare call with expression arguments: read on to its `)`, then held while only blanks
    // follow it.
    ("read(path=p", Mode::Auto),
    ("read(path=(p + ", Mode::Auto),
    ("read(path=f\"", Mode::Auto),
    ("read(path=p)", Mode::Auto),
    ("read(path=p)\n", Mode::Auto),
    ("<seed:tool_call>", Mode::Auto),
    (
        "<minimax:tool_call>\n<invoke name=\"read\">\n<parameter name=\"path\">",
        Mode::Auto,
    ),
    ("<tool_call>read", Mode::Auto),
    (
        "<tool_call>read\n<arg_key>path</arg_key><arg_value>",
        Mode::Auto,
    ),
    ("read\n{", Mode::Auto),
    ("read\n{\"path\": \"a\"}", Mode::Auto),
    ("[", Mode::Auto),
    ("{", Mode::Auto),
    ("<<<<<<< SEARCH\n", Mode::Auto),
    ("READ ", Mode::Auto),
    ("```", Mode::Auto),
    ("src/a.py\n", Mode::Auto),
    ("EDIT a.py\n", Mode::Auto),
    ("<think>", Mode::Auto),
];

fn decode_in_chunks(mode: Mode, input: &str, n: usize) -> Vec<Event> {
    let mut d = TurnDecoder::new(mode, Arc::new(Registry::builtin()));
    let mut events = Vec::new();
    for chunk in input.as_bytes().chunks(n) {
        d.feed_into(
            std::str::from_utf8(chunk).expect("ASCII input"),
            &mut events,
        );
    }
    d.finish_into(&mut events);
    events
}

#[test]
fn a_megabyte_after_any_trigger_completes_and_is_given_back() {
    for &(opener, mode) in OPENERS {
        for filler in [' ', 'a'] {
            let mut input = String::from(opener);
            input.extend(std::iter::repeat_n(filler, 1 << 20));
            let events = decode_in_chunks(mode, &input, 4);
            // Filler never completes a call, so text, failure raws and reasoning (after its
            // opener) are the whole input.
            let mut back = String::new();
            for e in &events {
                match e {
                    Event::Text(t) => back.push_str(t),
                    Event::Reasoning(t) => {
                        if back.is_empty() {
                            back.push_str("<think>");
                        }
                        back.push_str(t);
                    }
                    Event::Failure { raw, .. } => back.push_str(raw),
                    Event::Proposal { .. } => panic!("{opener:?} + {filler:?}: a proposal"),
                    _ => {}
                }
            }
            assert!(
                back == input,
                "{opener:?} + {filler:?}: {} bytes in, {} given back",
                input.len(),
                back.len()
            );
        }
    }
}

/// Every trigger followed by a multibyte character at each of the first few offsets (after
/// blanks, brackets, quotes, backticks) decodes without a panic, split anywhere, and a reply
/// that completes no call comes back whole. Detectors that look ahead byte-wise must never cut
/// a character.
#[test]
fn a_multibyte_character_after_any_trigger_is_given_back() {
    const AFTER: &[&str] = &[
        "",
        " ",
        "\n",
        "[",
        "[ ",
        "{",
        "\"",
        "`",
        "``",
        "```",
        "```p",
        "```python\n",
        "(",
        "=",
    ];
    for &(opener, mode) in OPENERS {
        for after in AFTER {
            for ch in ["é", "\u{2581}", "\u{1F600}"] {
                let input = format!("{opener}{after}{ch}{ch} tail");
                for k in (0..=input.len()).filter(|&k| input.is_char_boundary(k)) {
                    let mut d = TurnDecoder::new(mode, Arc::new(Registry::builtin()));
                    let mut events = Vec::new();
                    d.feed_into(&input[..k], &mut events);
                    d.feed_into(&input[k..], &mut events);
                    d.finish_into(&mut events);
                    let mut back = String::new();
                    for e in &events {
                        match e {
                            Event::Text(t) => back.push_str(t),
                            Event::Reasoning(t) => {
                                if back.is_empty() {
                                    back.push_str("<think>");
                                }
                                back.push_str(t);
                            }
                            Event::Failure { raw, .. } => back.push_str(raw),
                            _ => {}
                        }
                    }
                    let called = events.iter().any(|e| matches!(e, Event::Proposal { .. }));
                    assert!(called || back == input, "{input:?} split at {k}: {back:?}");
                }
            }
        }
    }
}

/// A bare pythonic call line, then a megabyte: the call is emitted at its newline, and every
/// byte after the line comes back once (as prose or a `too_long` failure's raw), whatever
/// the filler and the chunking.
#[test]
fn a_megabyte_after_an_emitted_bare_call_line_is_given_back_once() {
    let line = "read(path=\"a\")\n";
    for tail in ["", "read(path=\"", "    read(path=[1, "] {
        for filler in [' ', '\n', 'a'] {
            let mut input = format!("{line}{tail}");
            input.extend(std::iter::repeat_n(filler, 1 << 20));
            let events = decode_in_chunks(Mode::Auto, &input, 4);
            let mut back = String::new();
            let mut proposals = 0;
            for e in &events {
                match e {
                    Event::Text(t) => back.push_str(t),
                    Event::Failure { raw, .. } => back.push_str(raw),
                    Event::Proposal { .. } => proposals += 1,
                    _ => {}
                }
            }
            assert_eq!(proposals, 1, "{tail:?} + {filler:?}");
            assert!(
                back == input[line.len()..],
                "{tail:?} + {filler:?}: {} bytes after the line, {} given back",
                input.len() - line.len(),
                back.len()
            );
        }
    }
}
