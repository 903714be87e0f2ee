//! Chunk boundaries must not matter, and nothing panics, whatever the input.
//!
//! Inputs are built from fragments of every format (markers, verbs, fences, tags, JSON) mixed
//! with arbitrary text, so the generator reaches the decoder's interesting states often.

use std::sync::Arc;

use codec::event::{Event, FailureKind};
use codec::format::FormatId;
use codec::registry::Registry;
use codec::turn::{MAX_HELD, Mode, TurnDecoder, trace};
use proptest::prelude::*;

const FRAGMENTS: &[&str] = &[
    "READ ",
    "READ calc.py\n",
    "EDIT a.py\n",
    "CREATE b.txt\n",
    "DONE ok\n",
    "RUN pytest -q\n",
    "LIST\n",
    "MOVE a -> b\n",
    "<<<<<<< SEARCH\n",
    "<<<<<<<SEARCH\n",
    ">>>>>>> SEARCH\n",
    "=======\n",
    "=====\n",
    ">>>>>>> REPLACE\n",
    "<<<<<<< REPLACE\n",
    "```",
    "```python\n",
    "```json\n",
    "```\n",
    "<source>\n",
    "<source>python\n",
    "</source>\n",
    "<<<<<<< SEARCH>\n",
    "### src/a.py\n",
    "src/a.py\n",
    "x = 1\n",
    "\n",
    "\r\n",
    " ",
    "é",
    "—",
    "<tool_call>",
    "</tool_call>",
    // Every known family's reasoning markers (the decoder recognises them all by default),
    // and pieces of them.
    "<think>",
    "</think>",
    "<seed:think>",
    "</seed:think>",
    "\u{25c1}think\u{25b7}",
    "\u{25c1}/think\u{25b7}",
    "[THINK]",
    "[/THINK]",
    "[/TH",
    "<|START_THINKING|>",
    "<|END_THINKING|>",
    "<|START_",
    "<|inner_prefix|>",
    "<|inner_suffix|>",
    "{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}",
    "{",
    "}",
    "[",
    "]",
    "[read(path=\"a\")]",
    "[{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}, ",
    "[{\"name\": \"nope\", \"arguments\": {}}",
    "{\"tool_calls\": [",
    "{\"tool_call\": ",
    "[TOOL_CALLS]",
    "<tool_calls>[",
    "</tool_calls>",
    "<|tools_prefix|>[{\"read\": {\"path\": \"a\"}}",
    "<|START_ACTION|>[{\"tool_call_id\": \"0\", \"tool_name\": \"read\", \"parameters\": ",
    "functools[",
    "<start_function_call>call:read{path:",
    "<escape>",
    "<end_function_call>",
    "<|tool_call>call:read{",
    "<|\"|>",
    "<tool_call|>",
    "<tools>",
    "</tools>",
    "<function name=\"read\">{",
    "</function>",
    "<response>",
    "<\u{ff5c}tool\u{2581}calls\u{2581}begin\u{ff5c}><\u{ff5c}tool\u{2581}call\u{2581}begin\u{ff5c}>",
    "function<\u{ff5c}tool\u{2581}sep\u{ff5c}>read\n```json\n",
    "read<\u{ff5c}tool\u{2581}sep\u{ff5c}>",
    "<\u{ff5c}tool\u{2581}call\u{2581}end\u{ff5c}>",
    "<\u{ff5c}tool\u{2581}calls\u{2581}end\u{ff5c}>",
    "<|tool_calls_section_begin|><|tool_call_begin|>functions.read:0<|tool_call_argument_begin|>",
    "<|tool_call_end|>",
    "<|tool_calls_section_end|>",
    "<|channel|>commentary to=functions.read <|constrain|>json<|message|>",
    "<|channel|>analysis<|message|>",
    "<|start|>assistant",
    "<|end|>",
    "<|call|>",
    "<function=read>",
    "<parameter=path>",
    "\"",
    "'",
    "<|action_start|><|plugin|>\n{\"name\": \"read\", \"parameters\": ",
    "<|action_end|>",
    "<|tool_call_start|>[",
    "<|tool_call_start|>\n```python\n",
    "```\n",
    "<|python_start|>[",
    "<|python_end|>",
    "<function_calls>\n",
    "</function_calls>",
    "read(path=\"a\")",
    // Expression arguments: a failure only when the call ends the reply.
    "read(path=p)",
    "read(path=\"a\" + p, end=2 * n)",
    "\n",
    "<seed:tool_call>",
    "</seed:tool_call>",
    "<minimax:tool_call>",
    "<invoke name=\"read\">",
    "<parameter name=\"path\">",
    "</parameter>",
    "</invoke>",
    "</minimax:tool_call>",
    "<tool_call>read\n",
    "<arg_key>path</arg_key>",
    "<arg_value>a</arg_value>",
    "</tool_call>",
    "[TOOL_CALLS]read{",
    "read\n{\"path\": \"a\"}",
    "EDIT path  then one or more blocks of this form:\n",
    "READ path[:start-end]  show\n",
];

fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => proptest::sample::select(FRAGMENTS).prop_map(str::to_owned),
        1 => "[ -~\n]{0,12}",
        1 => any::<String>().prop_map(|s| s.chars().take(6).collect()),
    ]
}

fn reply() -> impl Strategy<Value = String> {
    proptest::collection::vec(fragment(), 0..40).prop_map(|v| v.concat())
}

fn modes() -> impl Strategy<Value = Mode> {
    prop_oneof![
        Just(Mode::Auto),
        Just(Mode::Only(FormatId::Text)),
        Just(Mode::Only(FormatId::Hermes)),
        Just(Mode::Only(FormatId::BareJson)),
        Just(Mode::Only(FormatId::MarkerList)),
        Just(Mode::Only(FormatId::GemmaCall)),
        Just(Mode::Only(FormatId::SectionCalls)),
        Just(Mode::Only(FormatId::Harmony)),
        Just(Mode::Only(FormatId::Qwen3Xml)),
        Just(Mode::Only(FormatId::Mistral)),
    ]
}

fn decode<'a>(mode: Mode, parts: impl IntoIterator<Item = &'a str>) -> Vec<Event> {
    let mut d = TurnDecoder::new(mode, Arc::new(Registry::builtin()));
    let mut events = Vec::new();
    for p in parts {
        d.feed_into(p, &mut events);
    }
    d.finish_into(&mut events);
    events
}

/// Splits `s` at the char boundaries nearest to the given cut points.
fn split<'a>(s: &'a str, cuts: &[usize]) -> Vec<&'a str> {
    let mut at: Vec<usize> = cuts
        .iter()
        .map(|&c| {
            let mut k = c % (s.len() + 1);
            while !s.is_char_boundary(k) {
                k -= 1;
            }
            k
        })
        .collect();
    at.sort_unstable();
    at.dedup();
    let mut parts = Vec::new();
    let mut from = 0;
    for k in at {
        parts.push(&s[from..k]);
        from = k;
    }
    parts.push(&s[from..]);
    parts
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_chunking_gives_the_whole_trace(
        mode in modes(),
        s in reply(),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
    ) {
        let whole = trace(&decode(mode, [s.as_str()]));
        let parts = split(&s, &cuts);
        prop_assert_eq!(&trace(&decode(mode, parts.iter().copied())), &whole);
        let chars: Vec<String> = s.chars().map(String::from).collect();
        prop_assert_eq!(&trace(&decode(mode, chars.iter().map(String::as_str))), &whole);
    }

    #[test]
    fn arbitrary_strings_never_panic_and_ignore_chunking(
        s in any::<String>(),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
    ) {
        let whole = trace(&decode(Mode::Auto, [s.as_str()]));
        prop_assert_eq!(trace(&decode(Mode::Auto, split(&s, &cuts))), whole);
    }

    /// Prose with no trigger in it comes out whole and unchanged.
    #[test]
    fn plain_prose_is_released_unchanged(s in "[a-z ,;()!?'\n]{0,200}", cuts in proptest::collection::vec(any::<usize>(), 0..8)) {
        let events = decode(Mode::Auto, split(&s, &cuts));
        let text: String = events
            .iter()
            .map(|e| match e {
                Event::Text(t) => t.as_str(),
                _ => "<event>",
            })
            .collect();
        prop_assert_eq!(text, s);
    }
}

#[test]
fn text_is_released_before_the_stream_ends() {
    let mut d = TurnDecoder::new(Mode::Auto, Arc::new(Registry::builtin()));
    // Prose with no candidate in it goes out at once.
    assert_eq!(
        d.feed("Hello there, "),
        vec![Event::Text("Hello there, ".into())]
    );
    // A line start that could begin a verb is held ...
    assert_eq!(d.feed("world.\nRE"), vec![Event::Text("world.\n".into())]);
    // ... and released as soon as it cannot.
    assert_eq!(d.feed("ally?"), vec![Event::Text("REally?".into())]);
}

#[test]
fn a_verb_line_is_emitted_at_its_newline_not_before() {
    let mut d = TurnDecoder::new(Mode::Only(FormatId::Text), Arc::new(Registry::builtin()));
    assert!(d.feed("READ calc.py").is_empty());
    let events = d.feed("\n");
    assert!(
        matches!(events.as_slice(), [Event::Proposal { index: 0, .. }]),
        "{events:?}"
    );
}

#[test]
fn an_edit_is_emitted_once_the_next_line_shows_no_block_follows() {
    let mut d = TurnDecoder::new(Mode::Only(FormatId::Text), Arc::new(Registry::builtin()));
    let head = "EDIT a.py\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n";
    assert!(d.feed(head).is_empty());
    // `<<<` could still begin another block.
    assert!(d.feed("<<<").is_empty());
    let events = d.feed(" no");
    assert!(
        matches!(events.as_slice(), [Event::Proposal { .. }, Event::Text(t)] if t == "<<< no"),
        "{events:?}"
    );
}

#[test]
fn an_overlong_block_fails_as_too_long_and_keeps_its_text() {
    overlong_fails_as_too_long("EDIT a.py\n<<<<<<< SEARCH\n");
}

/// The lines held after a divider in a REPLACE part (content or past the block's end, not
/// known yet) count against the same cap.
#[test]
fn overlong_lines_after_a_replace_divider_fail_as_too_long_and_keep_their_text() {
    overlong_fails_as_too_long("EDIT a.py\n<<<<<<< SEARCH\na\n=======\nb\n=======\n");
}

fn overlong_fails_as_too_long(head: &str) {
    let mut s = String::from(head);
    while s.len() <= MAX_HELD {
        s.push_str("0123456789abcdef\n");
    }
    s.push_str("tail\n");
    let events = decode(Mode::Only(FormatId::Text), [s.as_str()]);
    let raw_len: usize = events
        .iter()
        .map(|e| match e {
            Event::Failure {
                kind: FailureKind::TooLong,
                raw,
                ..
            } => raw.len(),
            Event::Text(t) => t.len(),
            _ => 0,
        })
        .sum();
    assert!(events.iter().any(|e| matches!(
        e,
        Event::Failure {
            kind: FailureKind::TooLong,
            ..
        }
    )));
    assert!(!events.iter().any(|e| matches!(e, Event::Proposal { .. })));
    assert_eq!(
        raw_len,
        s.len(),
        "every byte comes back as failure text or prose"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Replies longer than the window of following text that held bytes are re-read with
    /// (4 KiB): the window's edges fall at every kind of place, and still cost nothing.
    #[test]
    fn long_replies_give_the_whole_trace(
        mode in modes(),
        s in proptest::collection::vec(fragment(), 800..1600).prop_map(|v| v.concat()),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
    ) {
        let whole = trace(&decode(mode, [s.as_str()]));
        prop_assert_eq!(&trace(&decode(mode, split(&s, &cuts))), &whole);
        let chars: Vec<String> = s.chars().map(String::from).collect();
        prop_assert_eq!(&trace(&decode(mode, chars.iter().map(String::as_str))), &whole);
    }
}

/// Llama 3 hands back the `<` of the `<|eom_id|>` after each call, which prose holds and
/// re-reads with what follows. Many calls in one feed decode every call, the same as fed
/// in pieces; re-reading the rest of the reply at each call made this quadratic.
#[test]
fn many_calls_that_hand_text_back_decode_whole_as_in_pieces() {
    let mut s = String::new();
    for i in 0..600 {
        s.push_str(&format!(
            "Reading {i}.\n<|python_tag|>{{\"name\": \"read\", \"parameters\": {{\"path\": \"src/m{i}.py\"}}}}<|eom_id|>\n"
        ));
    }
    assert!(s.len() > 12 * 4096, "{}", s.len());
    let mode = Mode::Only(FormatId::Llama3);
    let whole = decode(mode, [s.as_str()]);
    let calls = whole
        .iter()
        .filter(|e| matches!(e, Event::Proposal { .. }))
        .count();
    assert_eq!(calls, 600, "{}", trace(&whole));
    let whole = trace(&whole);
    for size in [1, 7, 4093, 4096, 4099] {
        let parts: Vec<&str> = s
            .as_bytes()
            .chunks(size)
            .map(|c| std::str::from_utf8(c).expect("ASCII reply"))
            .collect();
        assert_eq!(trace(&decode(mode, parts)), whole, "chunks of {size}");
    }
}
