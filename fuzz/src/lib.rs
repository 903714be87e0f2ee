//! The shared body of every fuzz target: decode fuzzer bytes whole and in fuzzer-chosen
//! chunks, and require identical traces (chunk boundaries must never matter) and no panic.

use std::sync::Arc;

use codec::format::FormatId;
use codec::{Event, Mode, Registry, TurnDecoder};

fn decode(mode: Mode, registry: &Arc<Registry>, pieces: &[&str]) -> Vec<Event> {
    let mut d = TurnDecoder::new(mode, Arc::clone(registry));
    let mut events = Vec::new();
    for p in pieces {
        events.extend(d.feed(p));
    }
    events.extend(d.finish());
    events
}

/// `data` is: one byte `n`, then `n % 32` chunk lengths (one byte each), then the reply as
/// lossy UTF-8. Chunk lengths repeat cyclically and are moved forward to character
/// boundaries.
pub fn check(mode: Mode, data: &[u8]) {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let n = usize::from(n % 32).min(rest.len());
    let (lens, text) = rest.split_at(n);
    let text = String::from_utf8_lossy(text);
    let registry = Arc::new(Registry::builtin());

    let mut pieces = Vec::new();
    let mut from = 0;
    let mut i = 0;
    while from < text.len() {
        let len = lens
            .get(i % lens.len().max(1))
            .map_or(text.len(), |&l| usize::from(l.max(1)));
        let mut to = (from + len).min(text.len());
        while !text.is_char_boundary(to) {
            to += 1;
        }
        pieces.push(&text[from..to]);
        from = to;
        i += 1;
    }

    let whole = codec::turn::trace(&decode(mode, &registry, &[&text]));
    let chunked = codec::turn::trace(&decode(mode, &registry, &pieces));
    assert_eq!(
        whole, chunked,
        "chunk boundaries changed the trace; pieces: {pieces:?}"
    );
}

/// The mode a target named `name` fuzzes.
pub fn mode(name: &str) -> Mode {
    if name == "auto" {
        return Mode::Auto;
    }
    Mode::Only(FormatId::parse(name).expect("every target is named after a mode"))
}
