//! Scores the text protocol's SEARCH/REPLACE decoding against aider's own reading of the same
//! replies (`codec/README.md`, "aider parity", says how the input is made).
//!
//! Input: JSONL on stdin or in the files named, one reply a line:
//! `{"id", "raw", "aider": [[path, search, replace], …]}`, where `aider` lists the blocks aider's
//! `find_original_update_blocks` yields for `raw` (shell commands left out). A reply is decoded
//! whole with `Mode::Only(FormatId::Text)` and the builtin registry; each decoded `edit` is cut
//! into its blocks, and blocks are compared with aider's as multisets of
//! `(path, search, replace)`, CRLF read as LF (the codec normalises it, as a named repair).
//!
//! Output: one line per reply that differs (its misses and false decodes), then the totals:
//! aider's blocks, matched, recall, and false decodes (decoded blocks aider did not yield).
//!
//! `cargo run --release -p codec --example aider_parity -- FILE.jsonl`

use std::io::Read;
use std::sync::Arc;

use codec::{Action, Event, FormatId, Mode, Registry, TurnDecoder};
use serde_json::Value;

type Triple = (String, String, String);

fn decoded_blocks(raw: &str, registry: &Arc<Registry>) -> (Vec<Triple>, Vec<String>) {
    let mut d = TurnDecoder::new(Mode::Only(FormatId::Text), Arc::clone(registry));
    let mut events = d.feed(raw);
    events.extend(d.finish());
    let mut blocks = Vec::new();
    let mut failures = Vec::new();
    for e in events {
        match e {
            Event::Proposal { proposal, .. } => {
                if let Action::Edit { path, blocks: bs } = proposal.action {
                    for b in bs {
                        blocks.push((path.clone(), b.search, b.replace));
                    }
                }
            }
            Event::Failure { kind, .. } => failures.push(kind.as_str().to_owned()),
            _ => {}
        }
    }
    (blocks, failures)
}

fn gold_blocks(v: &Value) -> Vec<Triple> {
    let lf = |x: &Value| x.as_str().unwrap_or_default().replace("\r\n", "\n");
    v.as_array()
        .into_iter()
        .flatten()
        .map(|t| (lf(&t[0]), lf(&t[1]), lf(&t[2])))
        .collect()
}

/// `(matched, misses, false decodes)` of one reply, as multisets.
fn compare(decoded: &[Triple], gold: &[Triple]) -> (usize, Vec<Triple>, Vec<Triple>) {
    let mut used = vec![false; gold.len()];
    let mut false_decodes = Vec::new();
    for d in decoded {
        match (0..gold.len()).find(|&i| !used[i] && gold[i] == *d) {
            Some(i) => used[i] = true,
            None => false_decodes.push(d.clone()),
        }
    }
    let misses: Vec<Triple> = gold
        .iter()
        .zip(&used)
        .filter(|(_, u)| !**u)
        .map(|(g, _)| g.clone())
        .collect();
    (gold.len() - misses.len(), misses, false_decodes)
}

fn main() {
    let mut input = String::new();
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        std::io::stdin()
            .read_to_string(&mut input)
            .expect("read stdin");
    }
    for f in &files {
        input.push_str(&std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{f}: {e}")));
        input.push('\n');
    }
    let registry = Arc::new(Registry::builtin());
    let (mut replies, mut gold_total, mut matched, mut false_total) = (0, 0, 0, 0);
    for line in input.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).expect("a JSON line");
        let id = v["id"].as_str().unwrap_or("?");
        let raw = v["raw"].as_str().expect("\"raw\" is a string");
        let gold = gold_blocks(&v["aider"]);
        let (decoded, failures) = decoded_blocks(raw, &registry);
        let (m, misses, false_decodes) = compare(&decoded, &gold);
        replies += 1;
        gold_total += gold.len();
        matched += m;
        false_total += false_decodes.len();
        if !misses.is_empty() || !false_decodes.is_empty() {
            let show = |ts: &[Triple]| {
                ts.iter()
                    .map(|(p, s, r)| format!("{p:?} ({} → {} bytes)", s.len(), r.len()))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            println!(
                "{id}: misses [{}] false decodes [{}] failures {failures:?}",
                show(&misses),
                show(&false_decodes)
            );
        }
    }
    let recall = if gold_total == 0 {
        1.0
    } else {
        matched as f64 / gold_total as f64
    };
    println!(
        "replies {replies}, aider blocks {gold_total}, matched {matched}, recall {recall:.3}, \
         false decodes {false_total}"
    );
}
