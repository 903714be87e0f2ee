//! Decodes a JSONL corpus the way `bellows eval --json` does (auto mode; a line's OpenAI
//! `tools` as a client-only registry, the builtin registry where it has none; a line whose
//! gold does not validate against its tools is skipped) and prints
//! `{"replies": [{"id", "proposals": [{"name", "arguments"}], "failures": [[kind, raw]]}]}`,
//! which `score.py` reads. It needs the codec alone, so a figure at an older commit needs no
//! llama.cpp build:
//!
//! ```text
//! cargo run --release -p codec --example eval_lines -- ready.jsonl > out.json
//! ```
use std::io::BufRead;
use std::sync::Arc;

use codec::event::Event;
use codec::registry::Registry;
use codec::turn::{Mode, TurnDecoder};

fn main() {
    let path = std::env::args().nth(1).expect("corpus path");
    let f = std::io::BufReader::new(std::fs::File::open(path).expect("open"));
    let mut replies = Vec::new();
    for line in f.lines() {
        let line = line.expect("line");
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(&line).expect("json");
        let reg = match v.get("tools").and_then(|t| t.as_array()) {
            Some(tools) => {
                let mut r = Registry::client_only();
                for t in tools {
                    let f = &t["function"];
                    let p = f
                        .get("parameters")
                        .cloned()
                        .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}}));
                    r.add_client_tool(
                        f["name"].as_str().unwrap_or(""),
                        f["description"].as_str().unwrap_or(""),
                        p,
                    )
                    .unwrap_or_else(|e| panic!("{e}"));
                }
                r
            }
            None => Registry::builtin(),
        };
        // `bellows eval` skips a line whose gold does not validate against its tools.
        let gold_ok = v.get("gold").and_then(|g| g.as_array()).is_none_or(|g| {
            g.iter().all(|e| {
                reg.validate(e["name"].as_str().unwrap_or(""), &e["arguments"])
                    .is_ok()
            })
        });
        if !gold_ok {
            continue;
        }
        let mut d = TurnDecoder::new(Mode::Auto, Arc::new(reg));
        let mut ev = d.feed(v["raw"].as_str().unwrap_or(""));
        ev.extend(d.finish());
        let mut props = Vec::new();
        let mut fails = Vec::new();
        for e in ev {
            match e {
                Event::Proposal { proposal, .. } => props.push(serde_json::json!({
                    "name": proposal.action.name(),
                    "arguments": serde_json::from_str::<serde_json::Value>(&proposal.arguments_json())
                        .unwrap_or_default(),
                })),
                Event::Failure { kind, raw, .. } => fails.push(serde_json::json!([kind.as_str(), raw])),
                _ => {}
            }
        }
        replies.push(serde_json::json!({"id": v["id"], "proposals": props, "failures": fails}));
    }
    println!("{}", serde_json::json!({ "replies": replies }));
}
