//! `bellows eval` on the hand-written gold corpus `tests/corpus/handmade-gold.jsonl`: replies in
//! every format, malformed the ways small models malform them, plus false-decode traps. Every
//! reply must decode exactly to its gold, with no false decode, whatever the chunk size.

use std::path::Path;
use std::process::Command;

fn eval_json(chunk: usize) -> serde_json::Value {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus/handmade-gold.jsonl");
    let out = Command::new(env!("CARGO_BIN_EXE_bellows"))
        .arg("eval")
        .arg(&corpus)
        .arg("--json")
        .arg("--chunk")
        .arg(chunk.to_string())
        .output()
        .expect("run bellows eval");
    assert!(
        out.status.success(),
        "eval failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("eval --json prints JSON")
}

#[test]
fn handmade_gold_corpus_decodes_exactly_with_no_false_decode() {
    let report = eval_json(4096);
    let summary = &report["summary"];
    let mismatched: Vec<_> = report["replies"]
        .as_array()
        .expect("replies")
        .iter()
        .filter(|r| {
            !r["false_decodes"].as_array().is_none_or(|a| a.is_empty())
                || !r["misses"].as_array().is_none_or(|a| a.is_empty())
        })
        .map(|r| r["id"].clone())
        .collect();
    assert!(
        mismatched.is_empty(),
        "replies not decoded as gold: {mismatched:?}"
    );
    assert_eq!(summary["false_decodes"], 0);
    assert_eq!(summary["misses"], 0);
    assert_eq!(summary["gold_exact"], summary["total"]);
    // The traps (prose with verbs, echoed help, fabricated results, unknown tools, a cut-off
    // block) convert nothing; everything else converts.
    assert_eq!(summary["converted"], 26);
}

#[test]
fn handmade_gold_corpus_is_chunk_invariant() {
    let whole = eval_json(1 << 20);
    for chunk in [1, 3, 7] {
        assert_eq!(
            eval_json(chunk),
            whole,
            "chunk size {chunk} changed the report"
        );
    }
}
