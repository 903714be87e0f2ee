//! `bellows eval` end to end: the binary on a small corpus written here.

use std::path::PathBuf;
use std::process::{Command, Output};

/// A corpus covering a plain action, prose, a repaired edit, a native call, a truncated block,
/// gold with a false decode and a miss, multi-byte text, and two bad lines.
const CORPUS: &str = concat!(
    r#"{"id":"read","model":"m1","format":"text","raw":"I will look first.\nREAD calc.py\n","gold":[{"name":"read","arguments":{"path":"calc.py"}}]}"#,
    "\n",
    r#"{"id":"prose","model":"m1","format":"text","raw":"You can use a list comprehension to filter the numbers — café ☕.\n"}"#,
    "\n",
    r#"{"id":"fenced","model":"m2","format":"text","raw":"EDIT calc.py\n```\n<<<<<<< SEARCH\n    return total / len(numbers)\n=======\n    return total / len(numbers) if numbers else 0.0\n>>>>>>> REPLACE\n```\nDONE fixed average\n"}"#,
    "\n",
    "not json at all\n",
    r#"{"id":"hermes","model":"m2","format":"hermes","raw":"<tool_call>{\"name\": \"done\", \"arguments\": {\"summary\": \"ok\"}}</tool_call>"}"#,
    "\n",
    r#"{"id":"no-raw","model":"m2"}"#,
    "\n",
    r#"{"id":"truncated","model":"m1","format":"text","raw":"EDIT a.py\n<<<<<<< SEARCH\nx = 1\n"}"#,
    "\n",
    "\n",
    r#"{"id":"gold-mismatch","model":"m1","format":"text","raw":"READ a.py\nREAD b.py\n","gold":[{"name":"read","arguments":{"path":"a.py"}},{"name":"list","arguments":{"path":"."}}]}"#,
    "\n",
);

fn corpus_file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bellows-eval-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write corpus");
    path
}

fn bellows(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bellows"))
        .args(args)
        .output()
        .expect("run bellows")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The value column of a table row, whitespace-normalised.
fn row(table: &str, key: &str) -> String {
    table
        .lines()
        .find(|l| l.trim_start().starts_with(key) && l.trim_start()[key.len()..].starts_with("  "))
        .map(|l| {
            l.trim_start()[key.len()..]
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|| panic!("no row {key:?} in\n{table}"))
}

#[test]
fn table_counts_conversions_repairs_failures_and_gold() {
    let path = corpus_file("table.jsonl", CORPUS);
    let out = bellows(&["eval", path.to_str().expect("utf-8 path")]);
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t = stdout(&out);
    assert_eq!(row(&t, "replies"), "6");
    assert_eq!(row(&t, "converted"), "4 / 6 66.7%");
    assert_eq!(row(&t, "repaired replies"), "1 16.7%");
    assert_eq!(row(&t, "fenced_block"), "1");
    assert_eq!(row(&t, "truncated_block"), "1");
    assert_eq!(row(&t, "m1"), "2 / 4 50.0%");
    assert_eq!(row(&t, "m2"), "2 / 2 100.0%");
    assert_eq!(row(&t, "replies with gold"), "2");
    assert_eq!(row(&t, "false decodes"), "1");
    assert_eq!(row(&t, "misses"), "1");

    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("table.jsonl:4: skipped: not JSON"),
        "stderr: {err}"
    );
    assert!(
        err.contains("table.jsonl:6: skipped: missing \"raw\""),
        "stderr: {err}"
    );
    assert_eq!(
        err.lines().count(),
        2,
        "only the bad lines are reported: {err}"
    );
}

#[test]
fn output_is_the_same_for_every_chunk_size() {
    let path = corpus_file("chunks.jsonl", CORPUS);
    let p = path.to_str().expect("utf-8 path");
    for json in [false, true] {
        let run = |chunk: Option<&str>| {
            let mut args = vec!["eval", p];
            if json {
                args.push("--json");
            }
            if let Some(n) = chunk {
                args.extend(["--chunk", n]);
            }
            let out = bellows(&args);
            assert!(out.status.success());
            stdout(&out)
        };
        let whole = run(None);
        for n in ["1", "2", "7", "4096"] {
            assert_eq!(run(Some(n)), whole, "--chunk {n} (json: {json})");
        }
    }
}

#[test]
fn json_has_the_documented_shape() {
    let path = corpus_file("json.jsonl", CORPUS);
    let out = bellows(&["eval", "--json", path.to_str().expect("utf-8 path")]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("stdout is JSON");
    assert_eq!(v["summary"]["total"], 6);
    assert_eq!(v["summary"]["converted"], 4);
    assert_eq!(v["summary"]["repairs"]["fenced_block"], 1);
    assert_eq!(v["summary"]["failures"]["truncated_block"], 1);
    assert_eq!(v["summary"]["false_decodes"], 1);
    let replies = v["replies"].as_array().expect("replies array");
    let ids: Vec<&str> = replies.iter().filter_map(|r| r["id"].as_str()).collect();
    assert_eq!(
        ids,
        [
            "read",
            "prose",
            "fenced",
            "hermes",
            "truncated",
            "gold-mismatch"
        ]
    );
    let fenced = &replies[2];
    assert_eq!(fenced["proposals"][0]["name"], "edit");
    assert_eq!(
        fenced["proposals"][0]["arguments"]["blocks"][0]["replace"],
        "    return total / len(numbers) if numbers else 0.0\n"
    );
    assert_eq!(
        fenced["proposals"][1],
        serde_json::json!({"name": "done", "arguments": {"summary": "fixed average"}})
    );
    assert_eq!(fenced["repairs"], serde_json::json!(["fenced_block"]));
    assert_eq!(replies[3]["proposals"][0]["name"], "done");
    assert_eq!(
        replies[4]["failures"],
        serde_json::json!(["truncated_block"])
    );
    for r in replies {
        for key in ["id", "proposals", "repairs", "failures"] {
            assert!(r.get(key).is_some(), "reply lacks {key}: {r}");
        }
    }
}

#[test]
fn single_format_mode_only_decodes_that_format() {
    let path = corpus_file("mode.jsonl", CORPUS);
    let out = bellows(&[
        "eval",
        "--json",
        "--mode",
        "hermes",
        path.to_str().expect("utf-8 path"),
    ]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("stdout is JSON");
    assert_eq!(
        v["summary"]["converted"], 1,
        "only the hermes reply converts: {}",
        v["summary"]
    );
}

#[test]
fn errors_are_clear() {
    let missing = bellows(&["eval", "/nonexistent/corpus.jsonl"]);
    assert!(!missing.status.success());
    let err = String::from_utf8_lossy(&missing.stderr);
    assert!(
        err.contains("cannot open corpus /nonexistent/corpus.jsonl"),
        "stderr: {err}"
    );

    let bad_mode = bellows(&["eval", "--mode", "yaml", "x.jsonl"]);
    assert!(!bad_mode.status.success());
    assert!(String::from_utf8_lossy(&bad_mode.stderr).contains("unknown mode \"yaml\""));

    // On a corpus that exists, so the refusal can only come from the range check.
    let real = corpus_file("chunk0.jsonl", CORPUS);
    let zero = bellows(&["eval", "--chunk", "0", real.to_str().expect("a UTF-8 path")]);
    assert!(!zero.status.success(), "--chunk 0 is refused");
    let err = String::from_utf8_lossy(&zero.stderr);
    assert!(
        err.contains("--chunk") && err.contains('0'),
        "stderr: {err}"
    );

    let help = bellows(&["eval", "--help"]);
    let h = stdout(&help);
    for word in [
        "--json",
        "--mode",
        "--chunk",
        "gold",
        "false decodes",
        "skipped",
    ] {
        assert!(h.contains(word), "--help lacks {word}:\n{h}");
    }
}

#[test]
fn empty_corpus_is_zero_not_a_crash() {
    let path = corpus_file("empty.jsonl", "");
    let out = bellows(&["eval", path.to_str().expect("utf-8 path")]);
    assert!(out.status.success());
    assert_eq!(row(&stdout(&out), "converted"), "0 / 0 -");
}
