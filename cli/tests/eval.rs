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
    // replies, converted, rate, with gold, exact, precision, recall, false decodes, misses.
    assert_eq!(row(&t, "m1"), "4 2 50.0% 2 1 66.7% 66.7% 1 1");
    assert_eq!(row(&t, "m2"), "2 2 100.0% 0 - - - - -");
    assert_eq!(row(&t, "replies with gold"), "2");
    assert_eq!(
        row(&t, "precision"),
        "66.7% (2 of 3 decoded proposals in gold)"
    );
    assert_eq!(row(&t, "recall"), "66.7% (2 of 3 gold proposals decoded)");
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

/// The client tools of the `tools` corpus lines: `get_weather {city}` and a client tool named
/// `read` (a builtin's name: with client tools it is the client's own).
const TOOLS: &str = r#"[{"type":"function","function":{"name":"get_weather","description":"Weather in a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}}},{"type":"function","function":{"name":"read","parameters":{"type":"object","properties":{"file":{"type":"string"}},"required":["file"]}}}]"#;

/// A corpus line with [`TOOLS`].
fn tools_line(id: &str, model: &str, format: &str, raw: &str, gold: Option<&str>) -> String {
    let mut v = serde_json::json!({
        "id": id,
        "model": model,
        "format": format,
        "raw": raw,
        "tools": serde_json::from_str::<serde_json::Value>(TOOLS).expect("TOOLS is JSON"),
    });
    if let Some(g) = gold {
        v["gold"] = serde_json::from_str(g).expect("gold is JSON");
    }
    format!("{v}\n")
}

fn eval_json(path: &std::path::Path, extra: &[&str]) -> (serde_json::Value, String) {
    let mut args = vec!["eval", "--json", path.to_str().expect("utf-8 path")];
    args.extend(extra);
    let out = bellows(&args);
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        serde_json::from_str(&stdout(&out)).expect("stdout is JSON"),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn reply<'a>(report: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    report["replies"]
        .as_array()
        .expect("replies")
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no reply {id}"))
}

#[test]
fn tools_lines_decode_with_exactly_their_client_tools() {
    let corpus = [
        tools_line(
            "valid",
            "m",
            "hermes",
            r#"<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>"#,
            Some(r#"[{"name":"get_weather","arguments":{"city":"Paris"}}]"#),
        ),
        tools_line(
            "bad-args",
            "m",
            "hermes",
            r#"<tool_call>{"name": "get_weather", "arguments": {"town": "Paris"}}</tool_call>"#,
            Some("[]"),
        ),
        tools_line(
            "unknown",
            "m",
            "hermes",
            r#"<tool_call>{"name": "get_time", "arguments": {"zone": "UTC"}}</tool_call>"#,
            None,
        ),
        tools_line(
            "python-literal",
            "m",
            "hermes",
            "<tool_call>{'name': 'get_weather', 'arguments': {'city': 'Oslo'}}</tool_call>",
            Some(r#"[{"name":"get_weather","arguments":{"city":"Oslo"}}]"#),
        ),
        // bellows' own verbs are prose when the client declared tools, even its `read`.
        tools_line("verb", "m", "text", "READ calc.py\nDONE ok\n", Some("[]")),
        tools_line(
            "client-read",
            "m",
            "bare_json",
            r#"{"name": "read", "arguments": {"file": "calc.py"}}"#,
            Some(r#"[{"name":"read","arguments":{"file":"calc.py"}}]"#),
        ),
        // Invalid tools: the line is skipped, naming the culprit.
        r#"{"id":"bad-tools","raw":"x","tools":[{"type":"function","function":{"name":"no spaces allowed"}}]}"#.to_owned() + "\n",
        // Gold naming a tool the line does not declare.
        tools_line(
            "bad-gold",
            "m",
            "hermes",
            "x",
            Some(r#"[{"name":"get_time","arguments":{}}]"#),
        ),
        // The same verb line without tools is a builtin action.
        r#"{"id":"no-tools","model":"m","format":"text","raw":"READ calc.py\n"}"#.to_owned()
            + "\n",
    ]
    .concat();
    let path = corpus_file("tools.jsonl", &corpus);
    for mode in ["auto", "text"] {
        let (v, err) = eval_json(&path, &["--mode", mode]);
        let ctx = format!("--mode {mode}: {v}");
        let valid = reply(&v, "valid");
        assert_eq!(valid["converted"], true, "{ctx}");
        assert_eq!(
            valid["proposals"],
            serde_json::json!([{"name": "get_weather", "arguments": {"city": "Paris"}}]),
            "{ctx}"
        );
        assert_eq!(valid["repairs"], serde_json::json!([]), "{ctx}");
        let bad = reply(&v, "bad-args");
        assert_eq!(
            bad["failures"],
            serde_json::json!(["bad_arguments"]),
            "{ctx}"
        );
        assert_eq!(bad["converted"], false, "{ctx}");
        assert_eq!(
            reply(&v, "unknown")["failures"],
            serde_json::json!(["unknown_tool"]),
            "{ctx}"
        );
        let py = reply(&v, "python-literal");
        assert_eq!(
            py["repairs"],
            serde_json::json!(["python_literal"]),
            "{ctx}"
        );
        assert_eq!(py["misses"], serde_json::json!([]), "{ctx}");
        assert_eq!(py["converted"], true, "{ctx}");
        let verb = reply(&v, "verb");
        assert_eq!(verb["proposals"], serde_json::json!([]), "{ctx}");
        assert_eq!(verb["converted"], false, "{ctx}");
        assert_eq!(reply(&v, "client-read")["converted"], true, "{ctx}");
        assert_eq!(
            reply(&v, "no-tools")["proposals"][0],
            serde_json::json!({"name": "read", "arguments": {"path": "calc.py"}}),
            "{ctx}"
        );
        assert_eq!(v["summary"]["total"], 7, "{ctx}");
        assert_eq!(v["summary"]["converted"], 4, "{ctx}");
        assert_eq!(v["summary"]["false_decodes"], 0, "{ctx}");
        let skipped = v["skipped"].as_array().expect("skipped");
        assert_eq!(skipped.len(), 2, "{ctx}");
        assert_eq!(skipped[0]["line"], 7);
        let e = skipped[0]["error"].as_str().expect("error text");
        assert!(
            e.contains("invalid \"tools\"") && e.contains("tools[0].function.name"),
            "{e}"
        );
        assert_eq!(skipped[1]["line"], 8);
        assert!(
            skipped[1]["error"]
                .as_str()
                .is_some_and(|e| e.contains("get_time") && e.contains("unknown_tool")),
            "{}",
            skipped[1]
        );
        assert!(
            err.contains("tools.jsonl:7: skipped: invalid \"tools\""),
            "{err}"
        );
        assert!(
            err.contains("tools.jsonl:8: skipped: gold entry 0"),
            "{err}"
        );
    }
}

#[test]
fn from_corpus_mode_decodes_each_line_in_its_own_format() {
    let hermes = r#"<tool_call>{"name": "done", "arguments": {"summary": "ok"}}</tool_call>"#;
    let line = |id: &str, format: Option<&str>| {
        let mut v = serde_json::json!({"id": id, "model": "m", "raw": hermes});
        if let Some(f) = format {
            v["format"] = f.into();
        }
        format!("{v}\n")
    };
    let corpus = [
        line("as-hermes", Some("hermes")),
        line("as-pythonic", Some("pythonic")),
        line("as-text", Some("text")),
        line("no-format", None),
        line("yaml", Some("yaml")),
    ]
    .concat();
    let path = corpus_file("from-corpus.jsonl", &corpus);

    let (v, err) = eval_json(&path, &["--mode", "from-corpus"]);
    assert_eq!(reply(&v, "as-hermes")["converted"], true, "{v}");
    assert_eq!(reply(&v, "as-hermes")["repairs"], serde_json::json!([]));
    // A Hermes call is not a pythonic one.
    assert_eq!(reply(&v, "as-pythonic")["converted"], false, "{v}");
    // Text mode decodes in-band native calls, and says so.
    assert_eq!(
        reply(&v, "as-text")["repairs"],
        serde_json::json!(["native_in_text_mode"]),
        "{v}"
    );
    assert_eq!(v["summary"]["total"], 3);
    assert!(
        err.contains("from-corpus.jsonl:4: skipped: --mode from-corpus: no \"format\""),
        "{err}"
    );
    assert!(
        err.contains("from-corpus.jsonl:5: skipped: --mode from-corpus: unknown format \"yaml\""),
        "{err}"
    );

    // In `auto` every line decodes, whatever it says its format is.
    let (auto, err) = eval_json(&path, &[]);
    assert_eq!(auto["summary"]["total"], 5);
    assert_eq!(auto["summary"]["converted"], 5);
    assert!(err.is_empty(), "{err}");
}

#[test]
fn conversion_excludes_false_decodes() {
    let corpus = concat!(
        // The model explained a command; gold says it meant no action.
        r#"{"id":"trap","model":"m","format":"text","raw":"READ calc.py\n","gold":[]}"#,
        "\n",
        // It meant another file: a false decode and a miss.
        r#"{"id":"wrong","model":"m","format":"text","raw":"READ calc.py\n","gold":[{"name":"read","arguments":{"path":"main.py"}}]}"#,
        "\n",
        // One right, one wrong: converted.
        r#"{"id":"half","model":"m","format":"text","raw":"READ main.py\nREAD calc.py\n","gold":[{"name":"read","arguments":{"path":"main.py"}}]}"#,
        "\n",
        // No gold: any valid proposal converts.
        r#"{"id":"nogold","model":"m","format":"text","raw":"READ calc.py\n"}"#,
        "\n",
    );
    let path = corpus_file("false.jsonl", corpus);
    let (v, _) = eval_json(&path, &[]);
    let converted: Vec<bool> = v["replies"]
        .as_array()
        .expect("replies")
        .iter()
        .map(|r| r["converted"].as_bool().expect("converted is a bool"))
        .collect();
    assert_eq!(converted, [false, false, true, true]);
    let s = &v["summary"];
    assert_eq!(s["converted"], 2);
    assert_eq!(s["false_decodes"], 3);
    assert_eq!(s["misses"], 1);
    assert_eq!(s["gold_exact"], 0);
    // 4 decoded in gold replies, 1 of them in gold; 2 gold proposals, 1 decoded.
    assert_eq!(s["precision"], 0.25);
    assert_eq!(s["recall"], 0.5);
}

/// Two models, two formats, gold on some lines.
const GROUPS: &str = concat!(
    r#"{"id":"a1","model":"small","format":"text","raw":"READ a.py\n","gold":[{"name":"read","arguments":{"path":"a.py"}}]}"#,
    "\n",
    r#"{"id":"a2","model":"small","format":"hermes","raw":"<tool_call>{\"name\": \"read\", \"arguments\": {\"path\": \"b.py\"}}</tool_call>","gold":[{"name":"read","arguments":{"path":"c.py"}}]}"#,
    "\n",
    r#"{"id":"b1","model":"big|one","format":"text","raw":"Just prose.\n"}"#,
    "\n",
    r#"{"id":"b2","raw":"DONE ok\n"}"#,
    "\n",
);

#[test]
fn report_breaks_down_per_model_and_per_format() {
    let path = corpus_file("groups.jsonl", GROUPS);
    let (v, _) = eval_json(&path, &[]);
    let small = &v["by_model"]["small"];
    assert_eq!(
        (&small["total"], &small["converted"], &small["gold_exact"]),
        (&2.into(), &1.into(), &1.into()),
        "{small}"
    );
    assert_eq!(
        (&small["precision"], &small["recall"]),
        (&0.5.into(), &0.5.into())
    );
    assert_eq!(small["false_decodes"], 1);
    assert_eq!(small["misses"], 1);
    assert_eq!(v["by_model"]["big|one"]["converted"], 0);
    assert!(
        v["by_model"]["big|one"].get("precision").is_none(),
        "no gold there"
    );
    assert_eq!(v["by_model"]["?"]["converted"], 1, "a line without a model");
    let hermes = &v["by_format"]["hermes"];
    assert_eq!(
        (&hermes["total"], &hermes["converted"]),
        (&1.into(), &0.into())
    );
    assert_eq!(hermes["false_decodes"], 1);
    assert_eq!(v["by_format"]["text"]["total"], 2);
    assert_eq!(v["by_format"]["?"]["total"], 1);

    let out = bellows(&["eval", path.to_str().expect("utf-8 path")]);
    let t = stdout(&out);
    assert_eq!(row(&t, "small"), "2 1 50.0% 2 1 50.0% 50.0% 1 1");
    assert_eq!(row(&t, "hermes"), "1 0 0.0% 1 0 0.0% 0.0% 1 1");
    assert_eq!(row(&t, "text"), "2 1 50.0% 1 1 100.0% 100.0% 0 0");
    assert!(t.contains("by model\n  model "), "{t}");
    assert!(t.contains("by format\n  format "), "{t}");
}

#[test]
fn markdown_prints_the_same_tables() {
    let path = corpus_file("md.jsonl", GROUPS);
    let p = path.to_str().expect("utf-8 path");
    let out = bellows(&["eval", "--markdown", p]);
    assert!(out.status.success());
    let md = stdout(&out);
    for want in [
        "### conversion\n\n| metric | value |\n|---|---|\n| replies | 4 |\n",
        "| converted | 2 / 4  50.0% |\n",
        "### by model\n\n| model | replies | converted | rate | gold | exact | precision | recall | false decodes | misses |\n|---|---|---|---|---|---|---|---|---|---|\n",
        "| small | 2 | 1 | 50.0% | 2 | 1 | 50.0% | 50.0% | 1 | 1 |\n",
        // A `|` in a model name is escaped, so it cannot split the row.
        "| big\\|one | 1 | 0 | 0.0% | 0 | - | - | - | - | - |\n",
        "### by format\n",
        "| hermes | 1 | 0 | 0.0% | 1 | 0 | 0.0% | 0.0% | 1 | 1 |\n",
        "### gold\n",
    ] {
        assert!(md.contains(want), "--markdown lacks {want:?}:\n{md}");
    }
    // Every table row has as many cells as its header.
    for table in md.split("### ").skip(1) {
        let rows: Vec<&str> = table.lines().filter(|l| l.starts_with('|')).collect();
        let cells = |l: &str| l.replace("\\|", "").matches('|').count();
        assert!(rows.iter().all(|r| cells(r) == cells(rows[0])), "{table}");
    }
    let both = bellows(&["eval", "--markdown", "--json", p]);
    assert!(!both.status.success(), "--markdown and --json conflict");
}
