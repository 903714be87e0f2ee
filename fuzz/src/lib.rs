//! The shared body of every fuzz target: decode fuzzer bytes whole and in fuzzer-chosen
//! chunks with a fuzzer-chosen registry (builtin, client-only, or both), and require identical
//! traces (chunk boundaries must never matter), no panic, and a lossless, well-ordered trace:
//! text, failure raws and proposals tile the input, and nothing follows a closed call.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use codec::format::FormatId;
use codec::{Event, Mode, Registry, TurnDecoder};
use serde_json::json;

/// Reasoning markers and whether the reply starts inside a block.
#[derive(Debug, Clone, Copy)]
struct Think {
    open: &'static str,
    close: &'static str,
    inside: bool,
}

/// The reasoning set-up a selector byte picks: default markers, starting inside a block, or
/// custom markers.
fn think(selector: u8) -> Think {
    match (selector / 3) % 3 {
        0 => Think {
            open: "<think>",
            close: "</think>",
            inside: false,
        },
        1 => Think {
            open: "<think>",
            close: "</think>",
            inside: true,
        },
        _ => Think {
            open: "[R]",
            close: "[/R]",
            inside: false,
        },
    }
}

fn decode(mode: Mode, registry: &Arc<Registry>, think: Think, pieces: &[&str]) -> Vec<Event> {
    let mut d = TurnDecoder::new(mode, Arc::clone(registry))
        .with_reasoning_markers(think.open, think.close)
        .starts_in_reasoning(think.inside);
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
#[derive(Default, Clone)]
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

    fn starts(&self, input: &str) -> Vec<usize> {
        let mut v: Vec<usize> = self.at.iter().copied().collect();
        if let Some(p) = self.past {
            v.extend((p + 1..=input.len()).filter(|&k| input.is_char_boundary(k)));
        }
        v
    }

    /// `s`, where `brk` (a closing then an opening reasoning marker) may also occur at any
    /// point of it: adjacent reasoning blocks merge into one event.
    fn bytes(self, input: &str, s: &str, brk: &str) -> Reach {
        if s.is_empty() {
            return self;
        }
        let mut at = BTreeSet::new();
        for start in self.starts(input) {
            let mut k = start;
            let mut ok = true;
            for (j, c) in s.char_indices() {
                while !brk.is_empty() && input[k..].starts_with(brk) && !s[j..].starts_with(brk) {
                    k += brk.len();
                }
                if input[k..].starts_with(c) {
                    k += c.len_utf8();
                } else {
                    ok = false;
                    break;
                }
            }
            if ok {
                at.insert(k);
            }
        }
        Reach { at, past: None }
    }

    fn union(mut self, other: Reach) -> Reach {
        self.at.extend(other.at);
        self.past = match (self.past, other.past) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self
    }

    fn maybe(self, input: &str, s: &str) -> Reach {
        let with = self.clone().bytes(input, s, "");
        self.union(with)
    }

    fn star(self, input: &str, s: &str) -> Reach {
        let mut all = self.clone();
        let mut frontier = self;
        while !frontier.dead() {
            let next = frontier.bytes(input, s, "");
            let before = all.at.len();
            all = all.union(next.clone());
            if all.at.len() == before {
                break;
            }
            frontier = next;
        }
        all
    }

    fn dead(&self) -> bool {
        self.at.is_empty() && self.past.is_none()
    }

    fn ends_at(&self, n: usize) -> bool {
        self.at.contains(&n) || self.past.is_some_and(|p| p < n)
    }
}

/// Whether text, failure raws and reasoning (with its markers), with a non-empty span of
/// input for each run of proposals, tile `input` exactly.
fn tiles(input: &str, events: &[Event], think: Think) -> bool {
    let empty_block = format!("{}{}", think.open, think.close);
    let brk = format!("{}{}", think.close, think.open);
    let mut r = Reach {
        at: BTreeSet::from([0]),
        past: None,
    };
    if think.inside {
        r = r.maybe(input, think.close);
    }
    let mut i = 0;
    while i < events.len() {
        r = r.star(input, &empty_block);
        match &events[i] {
            // An empty reasoning block emits nothing: the prose around it merges.
            Event::Text(t) => r = r.bytes(input, t, &empty_block),
            Event::Failure { raw, .. } => r = r.bytes(input, raw, ""),
            Event::Proposal { .. } => {
                while matches!(
                    events.get(i + 1),
                    Some(Event::Proposal { .. })
                        | Some(Event::ToolCallStart { .. })
                        | Some(Event::ArgsDelta { .. })
                ) {
                    i += 1;
                }
                r = r.gap();
            }
            Event::Reasoning(_) => {
                r = r.maybe(input, think.open);
                while let Some(Event::Reasoning(t)) = events.get(i) {
                    r = r.bytes(input, t, &brk);
                    i += 1;
                }
                r = r.maybe(input, think.close);
                continue;
            }
            _ => {}
        }
        if r.dead() {
            return false;
        }
        i += 1;
    }
    r = r.star(input, &empty_block).maybe(input, think.open);
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

/// `data` is: one byte `n`, then one selector byte (registry and reasoning set-up), then `n % 32` chunk lengths
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
    let think = think(selector);

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

    let whole_events = decode(mode, &registry, think, &[&text]);
    let whole = codec::turn::trace(&whole_events);
    assert!(
        tiles(&text, &whole_events, think),
        "text, failure raws and proposals do not tile the input:\n{whole}"
    );
    if let Err(e) = well_ordered(&whole_events) {
        panic!("{e}:\n{whole}");
    }
    let chunked = codec::turn::trace(&decode(mode, &registry, think, &pieces));
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
