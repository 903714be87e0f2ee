//! Property tests: `decode(render(a)) == a` for random actions cut into random chunks, and
//! arbitrary input never panics a decoder in any mode and decodes the same in any chunking.
//!
//! The generators stay inside what the text protocol can carry (see `codec::render`): no
//! newline in a single-line value, READ ranges only as `1 <= start <= end` on a plain path, no
//! DONE summary with surrounding blanks or starting with the word `summary`, and no block-body
//! line that is a marker or fence line, or a divider line in a SEARCH part (those are
//! structure; the protocol has no escape for them). Divider-like lines inside a REPLACE part
//! are content, and are generated. Everything else — blanks, quotes, Unicode and shell
//! characters in paths, patterns and RUN words — is fair game, and must come back exactly.

use std::sync::Arc;

use codec::format::FormatId;
use codec::render::render;
use codec::turn::trace;
use codec::{Action, Block, Event, Mode, Registry, TurnDecoder};
use proptest::prelude::*;

/// Any single-line value: quoting carries blanks, quotes and backslashes.
fn word() -> impl Strategy<Value = String> {
    "[^\n\r]{1,16}"
}

/// A plain path, the only kind a READ range can follow.
fn plain_path() -> impl Strategy<Value = String> {
    "(src/|tests/|)[a-z_]{1,8}[.](py|rs|txt)"
}

/// One line of a block body (without its newline): anything but structure.
fn body_line() -> impl Strategy<Value = String> {
    "[^\n\r]{0,24}".prop_filter("not a marker, divider or fence line", |l| {
        let t = l.trim_start();
        !(t.starts_with("<<<")
            || t.starts_with(">>>")
            || t.starts_with("===")
            || t.starts_with("```"))
    })
}

fn body(min: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(body_line(), min..4)
        .prop_map(|lines| lines.into_iter().map(|l| l + "\n").collect())
}

/// A REPLACE part: like any body, plus divider-like lines, which only the first divider of a
/// block can be; inside a REPLACE part they are content (a merge-conflict-looking file).
fn replace_body() -> impl Strategy<Value = String> {
    prop::collection::vec(prop_oneof![3 => body_line(), 1 => "={3,9}[ ]{0,2}"], 0..4)
        .prop_map(|lines| lines.into_iter().map(|l| l + "\n").collect())
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        word().prop_map(|path| Action::Read {
            path,
            start: None,
            end: None
        }),
        (plain_path(), 1..10_000u64, 0..10_000u64).prop_map(|(path, start, len)| Action::Read {
            path,
            start: Some(start),
            end: Some(start + len),
        }),
        word().prop_map(|path| Action::List { path }),
        word().prop_map(|pattern| Action::Glob { pattern }),
        (word(), prop::option::of(word()))
            .prop_map(|(pattern, path)| Action::Grep { pattern, path }),
        prop::collection::vec("[^\n\r]{0,8}", 1..5).prop_map(|argv| Action::Run { argv }),
        word().prop_map(|path| Action::Delete { path }),
        word().prop_map(|path| Action::Mkdir { path }),
        (word(), word()).prop_map(|(from, to)| Action::Move { from, to }),
        (
            word(),
            prop::collection::vec((body(0), replace_body()), 1..4)
        )
            .prop_map(|(path, blocks)| {
                Action::Edit {
                    path,
                    blocks: blocks
                        .into_iter()
                        .map(|(search, replace)| Block { search, replace })
                        .collect(),
                }
            }),
        (word(), replace_body()).prop_map(|(path, content)| Action::Create { path, content }),
        "[^\n\r]{0,30}"
            .prop_map(|s| s.trim_matches([' ', '\t']).to_owned())
            .prop_filter("not the help line", |s| s.split_whitespace().next()
                != Some("summary"))
            .prop_map(|summary| Action::Done { summary }),
    ]
}

/// Cuts `s` at the given fractions of its length, moved to character boundaries.
fn cut<'s>(s: &'s str, cuts: &[f64]) -> Vec<&'s str> {
    let mut at: Vec<usize> = cuts
        .iter()
        .map(|f| {
            let mut i = ((s.len() as f64) * f) as usize;
            while i < s.len() && !s.is_char_boundary(i) {
                i += 1;
            }
            i.min(s.len())
        })
        .collect();
    at.sort_unstable();
    at.dedup();
    let mut pieces = Vec::new();
    let mut from = 0;
    for i in at {
        pieces.push(&s[from..i]);
        from = i;
    }
    pieces.push(&s[from..]);
    pieces
}

fn decode(mode: Mode, pieces: &[&str]) -> Vec<Event> {
    let mut d = TurnDecoder::new(mode, Arc::new(Registry::builtin()));
    let mut events = Vec::new();
    for p in pieces {
        events.extend(d.feed(p));
    }
    events.extend(d.finish());
    events
}

/// `auto` and every single-format mode.
fn modes() -> impl Iterator<Item = Mode> {
    std::iter::once(Mode::Auto).chain(FormatId::ALL.iter().map(|f| Mode::Only(*f)))
}

fn proposals(events: &[Event]) -> Vec<&codec::ActionProposal> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Proposal { proposal, .. } => Some(proposal),
            _ => None,
        })
        .collect()
}

proptest! {
    // A decoder that loops forever must fail the test, not hang it: each case gets a generous
    // 10 s (proptest then runs the cases in a child process), and shrinking a hang stops after
    // a minute. This bounds liveness only; speed is measured by the benches.
    #![proptest_config(ProptestConfig {
        cases: 512,
        timeout: 10_000,
        max_shrink_time: 60_000,
        ..ProptestConfig::default()
    })]

    #[test]
    fn render_then_decode_is_identity(a in action(), cuts in prop::collection::vec(0.0..1.0f64, 0..8)) {
        let text = render(&a);
        let events = decode(Mode::Only(FormatId::Text), &cut(&text, &cuts));
        let got = proposals(&events);
        prop_assert_eq!(got.len(), 1, "rendered {:?}, events {:?}", text, events);
        prop_assert_eq!(&got[0].action, &a, "rendered {:?}", text);
        // The one repair a canonical rendering carries: an edit block with an empty SEARCH part
        // (append, or create when missing) is always reported, once per such block.
        let empty_searches = match &a {
            Action::Edit { blocks, .. } => blocks.iter().filter(|b| b.search.is_empty()).count(),
            _ => 0,
        };
        let want = vec![codec::RepairKind::EmptySearchEdit; empty_searches];
        prop_assert_eq!(&got[0].repairs, &want, "repairs for {:?}", text);
        prop_assert_eq!(got[0].format, FormatId::Text);
        prop_assert!(
            !events.iter().any(|e| matches!(e, Event::Failure { .. })),
            "failure in {:?}", events
        );
    }

    /// Several actions in one reply decode to the same sequence, in order.
    #[test]
    fn rendered_sequences_decode_in_order(
        actions in prop::collection::vec(action(), 1..5),
        cuts in prop::collection::vec(0.0..1.0f64, 0..12),
    ) {
        let text: String = actions.iter().map(render).collect();
        let events = decode(Mode::Only(FormatId::Text), &cut(&text, &cuts));
        let got: Vec<&Action> = proposals(&events).into_iter().map(|p| &p.action).collect();
        let want: Vec<&Action> = actions.iter().collect();
        prop_assert_eq!(got, want, "rendered {:?}", text);
    }

    /// Arbitrary bytes, as lossy UTF-8 in arbitrary chunks, never panic any decoder, and the
    /// chunking never changes the trace.
    #[test]
    fn arbitrary_input_never_panics(
        bytes in prop::collection::vec(any::<u8>(), 0..512),
        cuts in prop::collection::vec(0.0..1.0f64, 0..16),
    ) {
        let text = String::from_utf8_lossy(&bytes);
        let pieces = cut(&text, &cuts);
        for mode in modes() {
            let whole = trace(&decode(mode, &[&text]));
            prop_assert_eq!(whole, trace(&decode(mode, &pieces)), "{:?} in {:?}", text, mode);
        }
    }

    /// Protocol-shaped noise (markers, verbs, tags and JSON punctuation) reaches deeper states
    /// than random bytes do; the same holds there.
    #[test]
    fn protocol_shaped_noise_never_panics(
        parts in prop::collection::vec(prop::sample::select(vec![
            "READ ", "EDIT a.py\n", "CREATE b\n", "<<<<<<< SEARCH\n", "=======\n", ">>>>>>> REPLACE\n",
            "<<<<", "```\n", "```python\n", "<tool_call>", "</tool_call>", "{\"name\": \"read\", ",
            "\"arguments\": {\"path\": \"x\"}}", "<function=read>", "<parameter=path>", "</parameter>",
            "</function>", "[TOOL_CALLS]", "[read(path='x')]", "<|python_tag|>", "{", "}", "\"", "\\",
            "\n", "\r\n", " ", "x", "é", "DONE ok\n", "RUN 'a\n", "<source>\n", "</source>\n",
            "<<<<<<< SEARCH>\n", "### a.py\n", "a.py\n",
        ]), 0..40),
        cuts in prop::collection::vec(0.0..1.0f64, 0..16),
    ) {
        let text: String = parts.concat();
        let pieces = cut(&text, &cuts);
        for mode in modes() {
            let whole = trace(&decode(mode, &[&text]));
            prop_assert_eq!(whole, trace(&decode(mode, &pieces)), "{:?} in {:?}", text, mode);
        }
    }
}
