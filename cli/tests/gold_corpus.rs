//! `bellows eval` on the hand-written gold corpora in `tests/corpus/`:
//!
//! * `handmade-gold.jsonl` — replies in every format, malformed the ways small models malform
//!   them, plus false-decode traps, decoded with bellows' builtin tools;
//! * `client-tools-gold.jsonl` — replies to a request with client tools (each line carries its
//!   OpenAI `tools`): calls in every in-band native format, repaired malformations, calls that
//!   must fail (`bad_arguments`, `unknown_tool`), and prose traps (bellows' own verbs and edit
//!   blocks, a call mentioned in prose, a tool result echoed) that must stay prose.
//!
//! Every reply must decode exactly to its gold, with no false decode, whatever the chunk size.

use std::path::Path;
use std::process::Command;

const HANDMADE: &str = "handmade-gold.jsonl";
const CLIENT_TOOLS: &str = "client-tools-gold.jsonl";

fn eval_json(corpus: &str, extra: &[&str]) -> serde_json::Value {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/corpus")
        .join(corpus);
    let out = Command::new(env!("CARGO_BIN_EXE_bellows"))
        .arg("eval")
        .arg(&corpus)
        .arg("--json")
        .args(extra)
        .output()
        .expect("run bellows eval");
    assert!(
        out.status.success(),
        "eval failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "no line of a gold corpus is skipped: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("eval --json prints JSON")
}

/// Asserts every reply decoded exactly to its gold; returns the summary.
fn assert_exact(report: &serde_json::Value) -> &serde_json::Value {
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
    assert_eq!(summary["precision"], 1.0);
    assert_eq!(summary["recall"], 1.0);
    summary
}

#[test]
fn handmade_gold_corpus_decodes_exactly_with_no_false_decode() {
    let report = eval_json(HANDMADE, &["--chunk", "4096"]);
    let summary = assert_exact(&report);
    // The traps (prose with verbs, echoed help, fabricated results, unknown tools, a cut-off
    // block) convert nothing; everything else converts.
    assert_eq!(summary["converted"], 26);
}

#[test]
fn client_tools_gold_corpus_decodes_exactly_with_no_false_decode() {
    // `auto` and each line's own format agree: every call is written in its line's format.
    for mode in ["auto", "from-corpus"] {
        let report = eval_json(CLIENT_TOOLS, &["--mode", mode]);
        let summary = assert_exact(&report);
        assert_eq!(summary["total"], 25, "--mode {mode}");
        // 14 replies hold valid calls; the failing calls and the prose traps convert nothing.
        assert_eq!(summary["converted"], 14, "--mode {mode}");
        assert_eq!(
            summary["failures"],
            serde_json::json!({"bad_arguments": 3, "unknown_tool": 2}),
            "--mode {mode}"
        );
        assert_eq!(
            summary["repairs"],
            serde_json::json!({
                "python_literal": 1,
                "arguments_before_name": 1,
                "arguments_as_string": 1,
                "missing_close_tag": 1,
                "fenced_json": 1,
                "argument_alias": 1
            }),
            "--mode {mode}"
        );
        // Every format the corpus holds converts where its gold says so.
        for (format, converted) in [
            ("hermes", 7),
            ("bare_json", 2),
            ("pythonic", 2),
            ("mistral", 1),
            ("qwen3_xml", 1),
            ("llama3", 1),
        ] {
            assert_eq!(
                report["by_format"][format]["converted"], converted,
                "--mode {mode}, {format}"
            );
        }
    }
}

#[test]
fn gold_corpora_are_chunk_invariant() {
    for corpus in [HANDMADE, CLIENT_TOOLS] {
        let whole = eval_json(corpus, &["--chunk", "1048576"]);
        for chunk in ["1", "3", "7"] {
            assert_eq!(
                eval_json(corpus, &["--chunk", chunk]),
                whole,
                "{corpus}: chunk size {chunk} changed the report"
            );
        }
    }
}
