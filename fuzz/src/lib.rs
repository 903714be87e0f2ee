//! The shared body of every fuzz target: decode fuzzer bytes whole and in fuzzer-chosen
//! chunks with a fuzzer-chosen registry (builtin, client-only, or both), and require identical
//! traces (chunk boundaries must never matter), no panic, and a lossless, well-ordered trace:
//! text, failure raws and proposals tile the input, and nothing follows a closed call.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use codec::format::FormatId;
use codec::{Event, Mode, Registry, TurnDecoder};
use serde_json::json;

fn decode(mode: Mode, registry: &Arc<Registry>, pieces: &[&str]) -> Vec<Event> {
    let mut d = TurnDecoder::new(mode, Arc::clone(registry));
    let mut events = Vec::new();
    for p in pieces {
        events.extend(d.feed(p));
    }
    events.extend(d.finish());
    events
}

/// Client tools the fuzzer can call by name; `read` and `edit` shadow builtin names in a
/// client-only registry.
fn add_client_tools(r: &mut Registry, client_only: bool) {
    let tools = [
        (
            "weather",
            json!({"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}),
        ),
        ("anything", json!({"type": "object"})),
        (
            "flags",
            json!({"type": "object", "properties": {"on": {"type": "boolean"}, "tags": {"type": "array", "items": {"type": "string"}}}, "additionalProperties": false}),
        ),
    ];
    for (name, schema) in tools {
        r.add_client_tool(name, "fuzz", schema).expect("valid tool");
    }
    if client_only {
        r.add_client_tool(
            "read",
            "a client's own read",
            json!({"type": "object", "properties": {"file": {"type": "string"}}, "required": ["file"]}),
        )
        .expect("builtin names are free in a client-only registry");
    }
}

/// The registry a selector byte picks: builtin, client-only, or builtin plus client tools.
pub fn registry(selector: u8) -> Registry {
    match selector % 3 {
        0 => Registry::builtin(),
        1 => {
            let mut r = Registry::client_only();
            add_client_tools(&mut r, true);
            r
        }
        _ => {
            let mut r = Registry::builtin();
            add_client_tools(&mut r, false);
            r
        }
    }
}

/// Where each piece can end, for pieces laid in order over `input`: exact positions, plus,
/// after a gap, "anywhere past" a position. A gap (a run of proposals) is a non-empty span.
#[derive(Default)]
struct Reach {
    at: BTreeSet<usize>,
    past: Option<usize>,
}

impl Reach {
    fn gap(self) -> Reach {
        let from = self.at.first().copied().into_iter().chain(self.past).min();
        Reach {
            at: BTreeSet::new(),
            past: from,
        }
    }

    fn bytes(self, input: &str, s: &str) -> Reach {
        if s.is_empty() {
            return self;
        }
        let mut at: BTreeSet<usize> = self
            .at
            .iter()
            .filter(|&&i| input[i..].starts_with(s))
            .map(|&i| i + s.len())
            .collect();
        if let Some(p) = self.past {
            // Every occurrence that starts strictly after `p` (overlaps included).
            let mut k = p + 1;
            while k <= input.len() {
                let Some(off) = input.get(k..).and_then(|t| t.find(s)) else {
                    break;
                };
                at.insert(k + off + s.len());
                k += off + 1;
                while k < input.len() && !input.is_char_boundary(k) {
                    k += 1;
                }
            }
        }
        Reach { at, past: None }
    }

    fn dead(&self) -> bool {
        self.at.is_empty() && self.past.is_none()
    }

    fn ends_at(&self, n: usize) -> bool {
        self.at.contains(&n) || self.past.is_some_and(|p| p < n)
    }
}

/// Whether text and failure raws, with a non-empty span of input for each run of proposals,
/// tile `input` exactly.
fn tiles(input: &str, events: &[Event]) -> bool {
    let mut r = Reach {
        at: BTreeSet::from([0]),
        past: None,
    };
    let mut gap = false;
    for e in events {
        let piece = match e {
            Event::Text(t) => t.as_str(),
            Event::Failure { raw, .. } => raw.as_str(),
            Event::Proposal { .. } => {
                gap = true;
                continue;
            }
            _ => continue,
        };
        if gap {
            r = r.gap();
            gap = false;
        }
        r = r.bytes(input, piece);
        if r.dead() {
            return false;
        }
    }
    if gap {
        r = r.gap();
    }
    r.ends_at(input.len())
}

/// No start or fragment after a call closed; fragments concatenate to the proposal's
/// arguments.
fn well_ordered(events: &[Event]) -> Result<(), String> {
    let mut closed = BTreeSet::new();
    let mut args: BTreeMap<usize, String> = BTreeMap::new();
    for e in events {
        match e {
            Event::ToolCallStart { index, .. } | Event::ArgsDelta { index, .. }
                if closed.contains(index) =>
            {
                return Err(format!("event for closed call #{index}"));
            }
            Event::ToolCallStart { index, .. } => {
                args.entry(*index).or_default();
            }
            Event::ArgsDelta { index, fragment } => {
                args.entry(*index).or_default().push_str(fragment)
            }
            Event::Proposal { index, proposal } => {
                if !closed.insert(*index) {
                    return Err(format!("call #{index} closed twice"));
                }
                if args
                    .get(index)
                    .is_some_and(|a| *a != proposal.arguments_json())
                {
                    return Err(format!("call #{index} streamed other arguments"));
                }
            }
            Event::Failure {
                index: Some(index), ..
            } => {
                if !closed.insert(*index) {
                    return Err(format!("call #{index} closed twice"));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// `data` is: one byte `n`, then one registry selector byte, then `n % 32` chunk lengths
/// (one byte each), then the reply as lossy UTF-8. Chunk lengths repeat cyclically and are
/// moved forward to character boundaries.
pub fn check(mode: Mode, data: &[u8]) {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let Some((&selector, rest)) = rest.split_first() else {
        return;
    };
    let n = usize::from(n % 32).min(rest.len());
    let (lens, text) = rest.split_at(n);
    let text = String::from_utf8_lossy(text);
    let registry = Arc::new(registry(selector));

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

    let whole_events = decode(mode, &registry, &[&text]);
    let whole = codec::turn::trace(&whole_events);
    assert!(
        tiles(&text, &whole_events),
        "text, failure raws and proposals do not tile the input:\n{whole}"
    );
    if let Err(e) = well_ordered(&whole_events) {
        panic!("{e}:\n{whole}");
    }
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
