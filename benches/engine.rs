//! Engine benchmark: `LlamaEngine` against llama.cpp itself (through llama-cpp-python),
//! measured in the same run and reported as ratios, plus the grammar fast path, the prompt
//! cache on a 6-turn agent conversation, and memory.
//!
//! ```text
//! eval "$(scripts/models-env.sh)"
//! BELLOWS_PEER_PYTHON=/work/venv-peer/bin/python cargo bench --bench engine
//! ```
//!
//! Models come from `BELLOWS_SMOLLM2_GGUF` and `BELLOWS_GEMMA3_GGUF` (either may be absent;
//! at least one is needed). The peer runs when `BELLOWS_PEER_PYTHON` names a Python with
//! `llama-cpp-python` installed; its runs are interleaved with ours, repetition by
//! repetition, because this machine's speed drifts over minutes. `BELLOWS_BENCH_REPS` sets the
//! repetitions (default 3); medians are reported. Everything runs with 2 threads, greedy,
//! 256 generated tokens, a 2048-token context and 512-token batches on both sides.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use models::{
    ChatMessage, Engine, GenEvent, GenerateRequest, GrammarSpec, LlamaEngine, LoadOptions, Prompt,
    Sampling, StopReason, Timings,
};
use serde_json::{Value, json};

const THREADS: u32 = 2;
const N_CTX: u32 = 2048;
const N_BATCH: u32 = 512;
const GEN_TOKENS: u32 = 256;

/// About 250 tokens of prose for prompt-processing speed.
const LONG_PROMPT: &str = "The lighthouse keeper kept a ledger of every ship that passed the \
point, written in a small neat hand: the hour, the flag, the direction of the wind, and a \
word or two about the sea. Over forty years the ledger grew to eleven volumes. Most entries \
are ordinary. A coal barge heading north at dawn, light swell. Two fishing boats returning \
early, rain from the west. But some entries are strange. On the ninth of March a ship with \
no flag passed at midnight, showing no lights, and the keeper wrote only that the water \
around it was perfectly calm while everything else was white with foam. Three weeks later \
the same ship passed again, going the other way, and this time he wrote nothing at all \
except the hour. Historians who have read the ledgers disagree about what he saw. Some say \
it was a smuggler who knew the coast well enough to run dark. Others point out that the \
keeper never once in forty years failed to record a flag, and that he was not a man given \
to invention. The ledgers are kept now in the harbour museum, open to the page for the \
ninth of March, and visitors stand in front of the glass case longer than at any other \
exhibit. Summarise the story above in three sentences.";

const STORY_PROMPT: &str = "<|im_start|>user\nWrite a long, detailed story about a lighthouse keeper who finds a message in a bottle. Use many paragraphs.<|im_end|>\n<|im_start|>assistant\n";

const SYSTEM: &str = "You are a coding agent working in a repository. Reply with one action \
per line. Actions: READ path[:start-end], LIST [path], GLOB pattern, GREP pattern [-- path], \
RUN argv..., EDIT path followed by SEARCH/REPLACE blocks, CREATE path, DELETE path, MKDIR \
path, MOVE src -> dst, DONE summary. Prose between actions is allowed. Keep replies short. \
Read files before editing them, run the tests after editing, and finish with DONE.";

/// The gateway's tools system message (what a template that ignores `tools` gets).
const TOOLS_SYSTEM: &str = "You can call tools. Each tool is one JSON object inside <tools></tools>:\n<tools>\n{\"name\":\"get_weather\",\"description\":\"Current weather for a city\",\"parameters\":{\"type\":\"object\",\"properties\":{\"location\":{\"type\":\"string\"}},\"required\":[\"location\"]}}\n</tools>\nTo call a tool, write a line <tool_call>{\"name\": TOOL_NAME, \"arguments\": {ARGUMENTS}}</tool_call> with arguments that match its parameters. When no tool is needed, answer in plain text.";

const OBSERVATIONS: [&str; 6] = [
    "Fix the failing test in src/parse.rs: `cargo test` reports that parse_range(\"3-\") panics instead of returning an error.",
    "src/parse.rs:\n1 pub fn parse_range(s: &str) -> Result<(u32, u32), String> {\n2     let (a, b) = s.split_once('-').unwrap();\n3     Ok((a.parse().unwrap(), b.parse().unwrap()))\n4 }\n",
    "tests/parse.rs:\n1 #[test]\n2 fn open_range_is_an_error() {\n3     assert!(parse_range(\"3-\").is_err());\n4 }\n",
    "EDIT applied: 1 block replaced in src/parse.rs (lines 2-3).",
    "RUN cargo test: 14 passed; 0 failed; finished in 0.41s",
    "The working tree has 1 modified file: src/parse.rs. Nothing else changed.",
];

fn median(mut xs: Vec<f64>) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn proc_status(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Resets the kernel's peak-RSS counter for this process, so each model's peak is its own.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn mib(bytes: f64) -> String {
    format!("{:.0} MiB", bytes / (1024.0 * 1024.0))
}

/// The llama-cpp-python peer process (benches/peer_llama_cpp_python.py).
struct Peer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Peer {
    fn start(python: &str) -> Option<Peer> {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peer_llama_cpp_python.py");
        let mut child = Command::new(python)
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| eprintln!("peer: cannot start {python}: {e}"))
            .ok()?;
        let stdin = child.stdin.take()?;
        let stdout = BufReader::new(child.stdout.take()?);
        Some(Peer {
            child,
            stdin,
            stdout,
        })
    }

    fn call(&mut self, cmd: Value) -> Option<Value> {
        writeln!(self.stdin, "{cmd}").ok()?;
        self.stdin.flush().ok()?;
        let mut line = String::new();
        self.stdout.read_line(&mut line).ok()?;
        let v: Value = serde_json::from_str(&line).ok()?;
        if let Some(e) = v.get("error") {
            eprintln!("peer: {e}");
            return None;
        }
        Some(v)
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Run {
    text: String,
    reason: StopReason,
    timings: Timings,
}

async fn run(engine: &LlamaEngine, req: GenerateRequest) -> Run {
    let mut g = match engine.generate(req).await {
        Ok(g) => g,
        Err(e) => panic!("generate failed: {e}"),
    };
    let mut text = String::new();
    let mut end = (StopReason::Cancelled, Timings::default());
    while let Some(ev) = g.next().await {
        match ev {
            GenEvent::Text { piece, .. } => text.push_str(&piece),
            GenEvent::Done { reason, timings } => end = (reason, timings),
            GenEvent::Failed { error, .. } => panic!("the engine failed: {error}"),
        }
    }
    Run {
        text,
        reason: end.0,
        timings: end.1,
    }
}

fn request(prompt: Prompt, max_tokens: u32, grammar: Option<GrammarSpec>) -> GenerateRequest {
    GenerateRequest {
        prompt,
        sampling: Sampling::default(),
        max_tokens: Some(max_tokens),
        stop: Vec::new(),
        grammar,
        logprobs: None,
    }
}

fn load(path: &Path) -> LlamaEngine {
    let mut opts = LoadOptions::new(path);
    opts.threads = Some(THREADS);
    opts.n_ctx = Some(N_CTX);
    opts.n_batch = N_BATCH;
    match LlamaEngine::load(opts) {
        Ok(e) => e,
        Err(e) => panic!("load {}: {e}", path.display()),
    }
}

fn tok_per_s(tokens: u32, secs: f64) -> f64 {
    if secs > 0.0 {
        f64::from(tokens) / secs
    } else {
        f64::NAN
    }
}

/// Generation speed excludes the first token, whose time is the prompt's.
fn gen_rate(t: &Timings) -> f64 {
    tok_per_s(
        t.generated_tokens.saturating_sub(1),
        t.generation.as_secs_f64(),
    )
}

#[derive(Default)]
struct Speed {
    ours_prompt: Vec<f64>,
    ours_gen: Vec<f64>,
    ours_gen_tokens: u32,
    peer_prompt: Vec<f64>,
    peer_gen: Vec<f64>,
    peer_gen_tokens: u32,
    prompt_tokens: u32,
}

async fn bench_model(
    label: &str,
    path: &Path,
    peer_python: Option<&str>,
    reps: usize,
    report: &mut String,
) {
    let file_size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0) as f64;
    reset_peak_rss();
    let engine = load(path);
    let rss_loaded = proc_status("VmRSS:") as f64;
    let mut peer = peer_python.and_then(Peer::start).and_then(|mut p| {
        p.call(json!({"cmd": "load", "path": path, "n_ctx": N_CTX, "threads": THREADS, "n_batch": N_BATCH}))
            .map(|_| p)
    });

    // Speed, interleaved with the peer repetition by repetition.
    let mut s = Speed::default();
    for rep in 0..reps {
        // A different first token each repetition defeats the prompt cache.
        let text = format!("[{rep}] {LONG_PROMPT}");
        let r = run(&engine, request(Prompt::Text(text.clone()), 1, None)).await;
        let evaluated = r.timings.prompt_tokens - r.timings.cached_tokens;
        s.prompt_tokens = evaluated;
        s.ours_prompt
            .push(tok_per_s(evaluated, r.timings.prompt_eval.as_secs_f64()));
        if let Some(p) = peer.as_mut()
            && let Some(v) = p.call(json!({"cmd": "prompt", "text": text}))
        {
            let n = v["n_prompt"].as_u64().unwrap_or(0) as u32;
            s.peer_prompt
                .push(tok_per_s(n, v["prompt_secs"].as_f64().unwrap_or(f64::NAN)));
        }
        let r = run(
            &engine,
            request(Prompt::Text(STORY_PROMPT.to_owned()), GEN_TOKENS, None),
        )
        .await;
        s.ours_gen_tokens = r.timings.generated_tokens;
        s.ours_gen.push(gen_rate(&r.timings));
        if let Some(p) = peer.as_mut()
            && let Some(v) =
                p.call(json!({"cmd": "gen", "text": STORY_PROMPT, "max_tokens": GEN_TOKENS}))
        {
            let n = v["n_gen"].as_u64().unwrap_or(0) as u32;
            s.peer_gen_tokens = n;
            s.peer_gen.push(tok_per_s(
                n.saturating_sub(1),
                v["gen_secs"].as_f64().unwrap_or(f64::NAN),
            ));
        }
        eprintln!("{label}: speed repetition {} of {reps} done", rep + 1);
    }

    // Grammar: the text-protocol grammar, strict, against no grammar, on an agent prompt.
    let gbnf_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("grammars/text-protocol.gbnf");
    let gbnf =
        std::fs::read_to_string(&gbnf_path).unwrap_or_else(|_| "root ::= [^\\x00]*".to_owned());
    let agent_prompt = Prompt::Chat {
        messages: vec![
            ChatMessage::new("system".to_owned(), SYSTEM.to_owned()),
            ChatMessage::new("user".to_owned(), OBSERVATIONS[0].to_owned()),
        ],
        tools: vec![],
    };
    let (mut off, mut strict, mut off_n, mut strict_n) = (Vec::new(), Vec::new(), 0, 0);
    // A reply long enough to time, written without a call; each run starts with its own
    // first token, so both sides evaluate the whole prompt cold (cached and cold greedy runs
    // may differ by float rounding, which would compare different replies).
    let tools_prompt = |tag: &str| Prompt::Chat {
        messages: vec![
            ChatMessage::new("system", format!("[{tag}] {TOOLS_SYSTEM}")),
            ChatMessage::new(
                "user",
                "Write a long travel guide to Paris and Rome, with many paragraphs.",
            ),
        ],
        tools: vec![],
    };
    let lazy = GrammarSpec::LazyJsonSchema {
        schema: json!({
            "type": "object",
            "properties": {
                "name": {"const": "get_weather"},
                "arguments": {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}
            },
            "required": ["name", "arguments"],
            "additionalProperties": false
        }),
        trigger: "<tool_call>".to_owned(),
        close: "</tool_call>".to_owned(),
    };
    let (mut tools_off, mut lazy_rates, mut tools_off_n, mut lazy_n) =
        (Vec::new(), Vec::new(), 0, 0);
    let mut lazy_triggered = false;
    for rep in 0..reps {
        let r = run(&engine, request(agent_prompt.clone(), GEN_TOKENS, None)).await;
        off_n = r.timings.generated_tokens;
        off.push(gen_rate(&r.timings));
        let g = GrammarSpec::Strict {
            gbnf: gbnf.clone(),
            root: "root".to_owned(),
        };
        let r = run(&engine, request(agent_prompt.clone(), GEN_TOKENS, Some(g))).await;
        strict_n = r.timings.generated_tokens;
        strict.push(gen_rate(&r.timings));
        // The gateway's lazy tool-call grammar (profile `grammar = "lazy"`, `tool_choice:
        // "auto"`): free text until `<tool_call>`, then one schema-valid call. Against no
        // grammar on the same tools prompt.
        let r = run(
            &engine,
            request(tools_prompt(&format!("off {rep}")), GEN_TOKENS, None),
        )
        .await;
        tools_off_n = r.timings.generated_tokens;
        tools_off.push(gen_rate(&r.timings));
        let r = run(
            &engine,
            request(
                tools_prompt(&format!("on {rep}")),
                GEN_TOKENS,
                Some(lazy.clone()),
            ),
        )
        .await;
        lazy_n = r.timings.generated_tokens;
        lazy_triggered |= r.text.contains("<tool_call>");
        lazy_rates.push(gen_rate(&r.timings));
        eprintln!(
            "{label}: grammar repetition done ({off_n} tokens off, {strict_n} strict, \
             {tools_off_n} tools off, {lazy_n} lazy)"
        );
    }

    // The agent conversation on the warm engine; then the same prompts cold.
    // Turn 1 starts cold: the grammar runs above used the same first prompt.
    run(&engine, request(Prompt::Text("x".to_owned()), 1, None)).await;
    let mut messages = vec![ChatMessage::new("system".to_owned(), SYSTEM.to_owned())];
    let mut turns = Vec::new();
    // Tokens of each turn that were neither in the previous turn's prompt nor its reply.
    let mut new_tokens = Vec::new();
    let mut seen = 0usize;
    for obs in OBSERVATIONS {
        messages.push(ChatMessage::new("user".to_owned(), obs.to_owned()));
        let prompt = Prompt::Chat {
            messages: messages.clone(),
            tools: vec![],
        };
        let r = run(&engine, request(prompt.clone(), 48, None)).await;
        new_tokens.push(r.timings.prompt_tokens as usize - seen);
        seen = r.timings.prompt_tokens as usize + r.timings.generated_tokens as usize;
        messages.push(ChatMessage::new(
            "assistant".to_owned(),
            r.text.trim().to_owned(),
        ));
        eprintln!(
            "{label}: agent turn {} done ({} tokens)",
            turns.len() + 1,
            r.timings.generated_tokens
        );
        turns.push((prompt, r.timings, r.reason));
    }
    let peak_warm = proc_status("VmHWM:") as f64;
    let peer_rss = peer.as_mut().and_then(|p| p.call(json!({"cmd": "rss"})));
    drop(peer);

    let cold_engine = load(path);
    let mut cold = Vec::new();
    for (prompt, _, _) in &turns {
        // Evict: an unrelated one-token prompt leaves nothing to share.
        run(&cold_engine, request(Prompt::Text("x".to_owned()), 1, None)).await;
        let r = run(&cold_engine, request(prompt.clone(), 1, None)).await;
        cold.push(r.timings);
    }
    drop(cold_engine);

    // Report.
    use std::fmt::Write as _;
    let ratio = |a: f64, b: f64| {
        if b > 0.0 {
            format!("{:.2}", a / b)
        } else {
            "—".to_owned()
        }
    };
    let (op, og, pp, pg) = (
        median(s.ours_prompt),
        median(s.ours_gen),
        median(s.peer_prompt),
        median(s.peer_gen),
    );
    let _ = writeln!(report, "\n### {label}\n");
    let _ = writeln!(
        report,
        "| measure | LlamaEngine | llama.cpp (llama-cpp-python) | ratio |"
    );
    let _ = writeln!(report, "|---|---|---|---|");
    let _ = writeln!(
        report,
        "| prompt tok/s ({} tokens) | {op:.1} | {pp:.1} | {} |",
        s.prompt_tokens,
        ratio(op, pp)
    );
    let _ = writeln!(
        report,
        "| generation tok/s (greedy; {} vs {} tokens) | {og:.1} | {pg:.1} | {} |",
        s.ours_gen_tokens,
        s.peer_gen_tokens,
        ratio(og, pg)
    );
    let (off_m, strict_m) = (median(off), median(strict));
    let _ = writeln!(
        report,
        "| generation tok/s, text-protocol grammar strict vs off ({strict_n} vs {off_n} tokens) | {strict_m:.1} vs {off_m:.1} | | {} |",
        ratio(strict_m, off_m)
    );
    let (tools_off_m, lazy_m) = (median(tools_off), median(lazy_rates));
    let _ = writeln!(
        report,
        "| generation tok/s, lazy tool-call grammar vs off ({lazy_n} vs {tools_off_n} tokens; trigger {}) | {lazy_m:.1} vs {tools_off_m:.1} | | {} |",
        if lazy_triggered {
            "reached"
        } else {
            "not reached"
        },
        ratio(lazy_m, tools_off_m)
    );
    let peer_peak = peer_rss.as_ref().and_then(|v| v["peak_rss_bytes"].as_f64());
    let _ = writeln!(
        report,
        "| peak RSS beyond the model file ({}) | {} (after load: {}) | {} | |",
        mib(file_size),
        mib(peak_warm - file_size),
        mib(rss_loaded - file_size),
        peer_peak.map_or("—".to_owned(), |p| mib(p - file_size)),
    );
    let _ = writeln!(
        report,
        "\nAgent conversation, 6 turns, each extending the last (reply ≤ 48 tokens):\n"
    );
    let _ = writeln!(
        report,
        "| turn | prompt tokens | new this turn | evaluated (cached run) | TTFT cached | evaluated (cold) | TTFT cold | TTFT cached/cold |"
    );
    let _ = writeln!(report, "|---|---|---|---|---|---|---|---|");
    for (i, ((_, warm, _), cold)) in turns.iter().zip(&cold).enumerate() {
        let w = warm.time_to_first_token.as_secs_f64();
        let c = cold.time_to_first_token.as_secs_f64();
        let _ = writeln!(
            report,
            "| {} | {} | {} | {} | {:.0} ms | {} | {:.0} ms | {:.2} |",
            i + 1,
            warm.prompt_tokens,
            new_tokens[i],
            warm.prompt_tokens - warm.cached_tokens,
            w * 1000.0,
            cold.prompt_tokens - cold.cached_tokens,
            c * 1000.0,
            w / c
        );
    }
}

fn main() {
    // `cargo bench` passes `--bench`; this program takes no arguments of its own.
    let peer_python = std::env::var("BELLOWS_PEER_PYTHON")
        .ok()
        .filter(|p| !p.is_empty());
    let reps = std::env::var("BELLOWS_BENCH_REPS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3usize)
        .max(1);
    let models: Vec<(&str, PathBuf)> = [
        ("SmolLM2-135M-Instruct Q4_1", "BELLOWS_SMOLLM2_GGUF"),
        ("Gemma-3-270M Q4_K_M", "BELLOWS_GEMMA3_GGUF"),
    ]
    .into_iter()
    .filter_map(|(label, var)| std::env::var_os(var).map(|p| (label, PathBuf::from(p))))
    .filter(|(_, p)| p.is_file())
    .collect();
    if models.is_empty() {
        eprintln!(
            "no models: run `eval \"$(scripts/models-env.sh)\"` first (BELLOWS_SMOLLM2_GGUF, BELLOWS_GEMMA3_GGUF)"
        );
        std::process::exit(2);
    }
    if peer_python.is_none() {
        eprintln!("BELLOWS_PEER_PYTHON is not set: measuring LlamaEngine alone (no ratios)");
    }
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => panic!("tokio runtime: {e}"),
    };
    let mut report = format!(
        "engine bench: {THREADS} threads, greedy, {GEN_TOKENS} tokens, n_ctx {N_CTX}, n_batch {N_BATCH}, medians of {reps}\n"
    );
    // Each model's section is printed as soon as it is measured.
    println!("{report}");
    for (label, path) in &models {
        report.clear();
        rt.block_on(bench_model(
            label,
            path,
            peer_python.as_deref(),
            reps,
            &mut report,
        ));
        println!("{report}");
    }
}
