//! Live measurement and tuning (`bellows eval --generate`, `bellows tune`): on the scripted
//! engine, whose replies depend on how it was asked, and on the tiny random-weight GGUF.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use cli::measure::{self, Config, Figures, GenOptions, PromptLine};
use cli::tune::{self, Stage, Store, SweepOptions};
use codec::format::FormatId;
use codec::registry::PromptStyle;
use gateway::defaults::{Defaults, ToolsPresentation};
use models::{Engine, GenerateRequest, GrammarMode, GrammarSpec, Prompt, Script, ScriptedEngine};
use serde_json::{Value, json};

fn prompts(text: &str) -> Vec<PromptLine> {
    let (good, bad) = measure::read_prompts(text.as_bytes()).unwrap();
    assert!(bad.is_empty(), "{bad:?}");
    good
}

/// Two builtin tasks and one client-tool task, each with the action a careful agent takes.
const PROMPTS: &str = r#"{"id": "read-notes", "messages": [{"role": "user", "content": "Show me notes.txt"}], "expect": [{"name": "read", "arguments": {"path": "notes.txt"}}]}
{"id": "list-src", "messages": [{"role": "user", "content": "What is in src?"}], "expect": [{"name": "list", "arguments": {"path": "src"}}]}
{"id": "weather", "messages": [{"role": "user", "content": "Weather in Lyon?"}], "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Current weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}], "expect": [{"name": "get_weather", "arguments": {"city": "Lyon"}}]}
"#;

fn system_text(req: &GenerateRequest) -> String {
    match &req.prompt {
        Prompt::Chat { messages, .. } => messages
            .iter()
            .filter(|m| m.role == "system")
            .map(|m| m.content.clone())
            .collect(),
        Prompt::Text(t) => t.clone(),
    }
}

fn user_text(req: &GenerateRequest) -> String {
    match &req.prompt {
        Prompt::Chat { messages, .. } => messages
            .iter()
            .filter(|m| m.role == "user")
            .map(|m| m.content.clone())
            .collect(),
        Prompt::Text(t) => t.clone(),
    }
}

/// A model that reads only when taught by example, lists only under the strict grammar, and
/// otherwise echoes the help text or chats; client tools it calls in any set-up. Each choice
/// helps on its own, so a sweep that tries one choice at a time can find both.
fn picky_engine() -> Arc<ScriptedEngine> {
    let engine = ScriptedEngine::new("picky", Script::chunked("Sure.\n", 4)).responding(Box::new(
        |req: &GenerateRequest| {
            let user = user_text(req);
            if user.contains("Weather") {
                // A grammar (`required`) makes a model write the bare call it admits.
                if req.grammar.is_some() {
                    return Script::chunked(
                        "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lyon\"}}",
                        5,
                    );
                }
                return Script::chunked(
                    "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lyon\"}}</tool_call>",
                    5,
                );
            }
            let taught = system_text(req).contains("Example. Task:");
            let strict = matches!(&req.grammar, Some(GrammarSpec::Strict { gbnf, .. }) if gbnf.contains("root ::= acting"));
            let reply = if user.contains("notes") {
                if taught {
                    "Reading it.\nREAD notes.txt\nThe file says hello.\n"
                } else {
                    "READ path\n"
                }
            } else if strict {
                "LIST src\n"
            } else {
                "I would look at the files first, then decide.\n"
            };
            Script::chunked(reply, 3)
        },
    ));
    Arc::new(engine)
}

fn base() -> Defaults {
    Defaults::default()
}

#[tokio::test]
async fn a_generated_reply_is_decoded_and_scored_as_the_gateway_decodes_it() {
    let engine = picky_engine();
    let dyn_engine: Arc<dyn Engine> = engine.clone();
    let lines = prompts(PROMPTS);
    let strict_example = Config {
        prompt: PromptStyle::Example,
        grammar: GrammarMode::Strict,
        actions_per_turn: 1,
        ..Config::of_defaults(&base())
    };
    let opts = GenOptions::default();
    let s = measure::measure(&dyn_engine, &base(), &lines[0], &strict_example, &opts, 0)
        .await
        .unwrap();
    assert_eq!(
        s.actions,
        vec![json!({"name": "read", "arguments": {"path": "notes.txt"}})]
    );
    assert_eq!((s.right, s.exact), (Some(true), Some(true)));
    // One action per reply: generation stopped after the READ line, before the invented
    // result.
    assert!(!s.raw.contains("hello"), "{:?}", s.raw);
    assert_eq!(s.stop, "stop");
    // Scoring the stored text again gives the same verdict.
    let again = measure::rescore(&dyn_engine, &base(), &lines[0], &strict_example, &opts, &s);
    assert_eq!(again.unwrap(), s);
    // What generation was halted in is not scored: a block the halt cut off is no failure.
    let cut = measure::Sample {
        raw: "READ notes.txt\nEDIT a.py\n<<<<<<< SEARCH\nx\n".to_owned(),
        ..s.clone()
    };
    let judged = measure::rescore(
        &dyn_engine,
        &base(),
        &lines[0],
        &strict_example,
        &opts,
        &cut,
    )
    .unwrap();
    assert!(
        judged.failures.is_empty() && judged.actions.len() == 1,
        "{judged:?}"
    );
    let unlimited = Config {
        actions_per_turn: 0,
        ..strict_example
    };
    let judged =
        measure::rescore(&dyn_engine, &base(), &lines[0], &unlimited, &opts, &cut).unwrap();
    assert_eq!(judged.failures, vec!["truncated_block"]);
    // The request carried the strict grammar whose root must act, and the example prompt.
    let seen = engine.seen.lock().unwrap().last().cloned().unwrap();
    assert!(system_text(&seen).contains("Example. Task:"));

    // The default settings: the model echoes the help text, which is no action.
    let plain = Config::of_defaults(&base());
    let s = measure::measure(&dyn_engine, &base(), &lines[0], &plain, &opts, 0)
        .await
        .unwrap();
    assert!(s.actions.is_empty() && !s.converted(), "{s:?}");
    assert_eq!((s.right, s.exact), (Some(false), Some(false)));

    // A client-tool line: a valid call to the declared tool, decoded natively.
    let s = measure::measure(&dyn_engine, &base(), &lines[2], &plain, &opts, 0)
        .await
        .unwrap();
    assert!(s.client);
    assert_eq!(
        s.actions,
        vec![json!({"name": "get_weather", "arguments": {"city": "Lyon"}})]
    );
    let f = Figures::of(&[s]);
    assert_eq!(f.auto_tool_call_rate(), Some(1.0));

    // A line written back reads back the same.
    let v = measure::measure(&dyn_engine, &base(), &lines[1], &strict_example, &opts, 0)
        .await
        .unwrap();
    let json = v.to_json("picky", &strict_example, &lines[1]);
    assert_eq!(measure::Sample::from_json(&json).as_ref(), Some(&v));
    assert_eq!(json["config"], strict_example.key());
}

#[tokio::test]
async fn a_bad_expectation_is_an_error_naming_the_prompt() {
    let engine: Arc<dyn Engine> = picky_engine();
    let lines = prompts(
        r#"{"id": "bad", "messages": [{"role": "user", "content": "x"}], "expect": [{"name": "read", "arguments": {"file": 3}}]}"#,
    );
    let e = measure::measure(
        &engine,
        &base(),
        &lines[0],
        &Config::of_defaults(&base()),
        &GenOptions::default(),
        0,
    )
    .await
    .unwrap_err();
    assert!(
        e.to_string().contains("bad") && e.to_string().contains("expect"),
        "{e}"
    );
}

#[test]
fn prompt_lines_are_checked_and_bad_ones_reported_by_line() {
    let (good, bad) = measure::read_prompts(
        "{\"id\": \"a\", \"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}\n\
         not json\n\
         {\"messages\": []}\n\
         {\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"seed\": -1}\n"
            .as_bytes(),
    )
    .unwrap();
    assert_eq!(good.len(), 1);
    assert_eq!(
        bad.iter().map(|b| b.line).collect::<Vec<_>>(),
        vec![2, 3, 4]
    );
}

#[test]
fn configuration_names_round_trip() {
    for protocol in [FormatId::Text, FormatId::Hermes] {
        for prompt in PromptStyle::ALL {
            for tools in ToolsPresentation::ALL {
                let c = Config {
                    protocol,
                    prompt,
                    temperature: Some(0.3),
                    grammar: GrammarMode::Lazy,
                    actions_per_turn: 1,
                    tools,
                };
                assert_eq!(Config::parse_key(&c.key()), Some(c), "{}", c.key());
            }
        }
    }
}

fn sweep_opts() -> SweepOptions {
    SweepOptions {
        generation: GenOptions {
            max_tokens: 64,
            samples: 1,
        },
        protocols: vec![FormatId::Text, FormatId::Hermes],
        temperatures: vec![0.0, 0.5],
        budget: None,
        max_new_replies: None,
    }
}

fn header() -> Value {
    json!({"model": "picky", "prompts_sha256": "x", "max_tokens": 64, "samples": 1})
}

#[tokio::test]
async fn tune_picks_what_the_model_does_best_and_writes_a_profile_that_loads() {
    let engine: Arc<dyn Engine> = picky_engine();
    let lines = prompts(PROMPTS);
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path(), &header(), false).unwrap();
    let mut replies = 0;
    let result = tune::sweep(
        &engine,
        &base(),
        &lines,
        &sweep_opts(),
        &mut store,
        &mut |n, _| replies = n,
    )
    .await
    .unwrap();
    assert!(result.complete);
    assert_eq!(replies, result.new_replies);
    // The baseline comes first, then every stage.
    assert_eq!(result.baseline().config, Config::of_defaults(&base()));
    for stage in Stage::ALL {
        assert!(
            result.measured.iter().any(|m| m.stage == stage),
            "{stage:?}"
        );
    }
    let best = result.best();
    assert_eq!(best.config.prompt, PromptStyle::Example);
    assert_eq!(best.config.grammar, GrammarMode::Strict);
    assert_eq!(best.config.protocol, FormatId::Text);
    assert!((best.figures.right_action_rate() - 1.0).abs() < 1e-9);
    assert!(result.baseline().figures.right_action_rate() < 0.5);
    // Every configuration measured every prompt, and nothing twice.
    let keys: std::collections::HashSet<String> =
        result.measured.iter().map(|m| m.config.key()).collect();
    assert_eq!(keys.len(), result.measured.len());
    assert!(result.measured.iter().all(|m| m.figures.replies == 3));

    let table = tune::table(&result);
    assert!(
        table.contains(&format!("* {}", best.config.key())),
        "{table}"
    );
    let html = tune::html(&result, "picky <model>");
    assert!(html.contains("<svg") && html.contains("picky &lt;model&gt;"));
    assert_eq!(html.matches("<rect").count(), 2 * result.measured.len());

    // --write: the chosen settings and the figures, comments kept, and it loads back.
    let original = models::profile::BUILTIN[0].1;
    let written = tune::write_profile(
        original,
        &best.config,
        &tune::measured(&result, "prompts.jsonl", "abc"),
    )
    .unwrap();
    assert!(
        written.contains("# SmolLM2-135M-Instruct, Q4_1"),
        "{written}"
    );
    assert!(!written.contains("not measured yet"));
    let p = models::Profile::parse("smollm2-135m-instruct", &written).unwrap();
    assert_eq!(p.prompt, "example");
    assert_eq!(p.grammar, GrammarMode::Strict);
    assert_eq!(p.measured.right_action_rate, Some(1.0));
    assert_eq!(p.measured.prompts_sha256.as_deref(), Some("abc"));
    assert_eq!(p.measured.configuration, Some(best.config.key()));
    // The profile's settings are what the gateway then uses.
    let d = Defaults::of_profile(&p);
    assert_eq!(Config::of_defaults(&d), best.config);

    // A coder profile's agent-bench figures are not tuning's: --write keeps them beside its own.
    let coder = models::profile::BUILTIN
        .iter()
        .find(|(n, _)| *n == "qwen2.5-coder-1.5b-instruct")
        .unwrap()
        .1;
    let before = models::Profile::parse("qwen2.5-coder-1.5b-instruct", coder).unwrap();
    assert_eq!(before.measured.agent_solved, Some(24));
    let written = tune::write_profile(
        coder,
        &best.config,
        &tune::measured(&result, "prompts.jsonl", "abc"),
    )
    .unwrap();
    let p = models::Profile::parse("qwen2.5-coder-1.5b-instruct", &written).unwrap();
    assert_eq!(p.measured.prompts_sha256.as_deref(), Some("abc"));
    assert_eq!(
        p.measured.agent_summary(),
        before.measured.agent_summary(),
        "{written}"
    );
}

#[tokio::test]
async fn an_interrupted_sweep_resumes_without_generating_a_reply_twice() {
    let engine = picky_engine();
    let dyn_engine: Arc<dyn Engine> = engine.clone();
    let lines = prompts(PROMPTS);
    let dir = tempfile::tempdir().unwrap();
    let opts = SweepOptions {
        max_new_replies: Some(7),
        ..sweep_opts()
    };
    let mut store = Store::open(dir.path(), &header(), false).unwrap();
    let first = tune::sweep(
        &dyn_engine,
        &base(),
        &lines,
        &opts,
        &mut store,
        &mut |_, _| {},
    )
    .await
    .unwrap();
    assert!(!first.complete);
    assert_eq!(first.new_replies, 7);
    drop(store);
    // The interruption cut the last line in half: that reply is generated again.
    let replies = dir.path().join("replies.jsonl");
    let text = std::fs::read_to_string(&replies).unwrap();
    let cut = text.trim_end().rfind('\n').unwrap() + 1;
    std::fs::write(&replies, &text[..cut + 20]).unwrap();

    let asked_before = engine.seen.lock().unwrap().len();
    let mut store = Store::open(dir.path(), &header(), false).unwrap();
    assert_eq!(store.resumed(), 6);
    let second = tune::sweep(
        &dyn_engine,
        &base(),
        &lines,
        &sweep_opts(),
        &mut store,
        &mut |_, _| {},
    )
    .await
    .unwrap();
    assert!(second.complete);
    let total: u32 = second.measured.iter().map(|m| m.figures.replies).sum();
    assert_eq!(second.new_replies as u32, total - 6);
    assert_eq!(
        engine.seen.lock().unwrap().len() - asked_before,
        second.new_replies
    );

    // Another prompt set or limit in the same directory is refused, unless --fresh.
    let other = json!({"model": "picky", "prompts_sha256": "y", "max_tokens": 64, "samples": 1});
    let e = Store::open(dir.path(), &other, false).unwrap_err();
    assert!(e.to_string().contains("prompts_sha256"), "{e}");
    let fresh = Store::open(dir.path(), &other, true).unwrap();
    assert_eq!(fresh.resumed(), 0);
}

fn tiny() -> PathBuf {
    std::env::var("BELLOWS_TINY_GGUF")
        .ok()
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            gateway::serve::resolve_model(Some("tiny"))
                .unwrap_or_else(|e| panic!("{e}; run scripts/fetch-models.sh tiny"))
        })
}

fn bellows(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_bellows"))
        .args(args)
        .env_remove("BELLOWS_MODEL")
        .env_remove("BELLOWS_PROFILE")
        .output()
        .unwrap()
}

/// The tiny GGUF writes noise; under the strict grammar a reply still ends in an action or
/// runs out of tokens, never in prose alone.
#[test]
fn generate_and_tune_run_end_to_end_on_the_tiny_gguf() {
    let dir = tempfile::tempdir().unwrap();
    let prompts_path = dir.path().join("prompts.jsonl");
    std::fs::write(
        &prompts_path,
        PROMPTS.lines().take(2).collect::<Vec<_>>().join("\n"),
    )
    .unwrap();
    let model = tiny();
    let out = dir.path().join("replies.jsonl");
    let o = bellows(&[
        "eval",
        "--generate",
        prompts_path.to_str().unwrap(),
        "--model",
        model.to_str().unwrap(),
        "--threads",
        "1",
        "--max-tokens",
        "24",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("total") && stdout.contains("tok/s"),
        "{stdout}"
    );
    let lines: Vec<Value> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    for l in &lines {
        assert!(l["generated_tokens"].as_u64().unwrap() <= 24, "{l}");
        assert!(l["stop"].is_string() && l["raw"].is_string());
    }
    // The written corpus scores again with plain `bellows eval`.
    let o = bellows(&["eval", out.to_str().unwrap(), "--json"]);
    assert!(o.status.success());
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["skipped"], json!([]));

    let tune_dir = dir.path().join("tune");
    let profile = dir.path().join("tiny.toml");
    std::fs::write(&profile, "# mine\n[generation]\nprotocol = \"text\"\n").unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "tune",
            "--model",
            model.to_str().unwrap(),
            "--profile",
            profile.to_str().unwrap(),
            "--prompts",
            prompts_path.to_str().unwrap(),
            "--threads",
            "1",
            "--max-tokens",
            "48",
            "--temperatures",
            "0",
            "--protocols",
            "text",
            "--out",
            tune_dir.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        bellows(&args)
    };
    let o = run(&[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("chosen: "), "{stdout}");
    for f in ["report.html", "results.json", "replies.jsonl", "sweep.json"] {
        assert!(tune_dir.join(f).is_file(), "{f}");
    }
    let replies: Vec<Value> = std::fs::read_to_string(tune_dir.join("replies.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for r in replies
        .iter()
        .filter(|r| r["config"].as_str().is_some_and(|c| c.contains("/strict/")))
    {
        let acted = !r["actions"].as_array().unwrap().is_empty() || r["echoes"].as_u64() > Some(0);
        assert!(
            acted || r["stop"] == "max_tokens",
            "a strict reply ended in prose: {r}"
        );
    }
    // A second run resumes everything (no new reply), and --write writes what it chose.
    let o = run(&["--write"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("\n0 new replies"), "{stdout}");
    let written = std::fs::read_to_string(&profile).unwrap();
    assert!(written.starts_with("# mine"), "{written}");
    let p = models::Profile::parse("tiny", &written).unwrap();
    assert!(p.measured.conversion_rate.is_some() && p.measured.date.is_some());
    let chosen = stdout
        .lines()
        .find_map(|l| l.strip_prefix("chosen: "))
        .unwrap();
    assert_eq!(
        p.measured.configuration.as_deref(),
        chosen.split(' ').next()
    );
}

/// The strict grammar on llama.cpp's own grammar engine, sampled hot from noise: every reply
/// that finishes its action decodes to an action that is not an echo. Random weights write
/// whatever the grammar allows, so this walks far more of it than a real model would.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_reply_the_strict_grammar_admits_decodes_to_an_action() {
    let mut opts = models::LoadOptions::new(tiny());
    opts.threads = Some(1);
    opts.n_ctx = Some(2048);
    let engine: Arc<dyn Engine> = Arc::new(models::LlamaEngine::load(opts).unwrap());
    let lines = prompts(PROMPTS);
    let strict = Config {
        grammar: GrammarMode::Strict,
        temperature: Some(1.5),
        actions_per_turn: 1,
        ..Config::of_defaults(&base())
    };
    let gen_opts = GenOptions {
        max_tokens: 400,
        samples: 1,
    };
    let (mut acted, mut cut) = (0, 0);
    for seed in 0..24 {
        let line = PromptLine {
            seed: Some(seed * 7919),
            ..lines[seed as usize % 2].clone()
        };
        let s = measure::measure(&engine, &base(), &line, &strict, &gen_opts, 0)
            .await
            .unwrap();
        if s.stop == "max_tokens" {
            cut += 1;
            continue;
        }
        assert!(
            s.converted() && s.echoes == 0 && s.failures.is_empty(),
            "a finished strict reply did not act: {s:?}"
        );
        acted += 1;
    }
    eprintln!("strict on noise: {acted} acted, {cut} ran out of tokens");
    assert!(acted > 0, "every reply ran out of tokens");
}
