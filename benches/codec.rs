//! Codec throughput and scaling.
//!
//! * `throughput/*`: replies of 64 KiB (prose only, edit-dense, Hermes tool-call stream, and the
//!   native formats InternLM, Llama 4 `<|python_start|>`, Olmo 3 `<function_calls>`, MiniMax-M2,
//!   GLM-4.5, Qwen3-Coder, Seed-OSS, bare JSON call objects, xLAM-2 call lists, xLAM-1
//!   `{"tool_calls": […]}` envelopes, Llama 3 `<|python_tag|>`, Mistral `[TOOL_CALLS]` (list and
//!   v11), pythonic lists, bare pythonic calls (one call line in prose; and adversarial prose
//!   whose every line starts with the tool's name, none of them a call), the marker-list rows of Jamba, Nemotron, Apertus, Command R7B,
//!   Granite 3.0, Phi-4-mini and LFM2, Hermes drift `<tools>`, FunctionGemma, Gemma 4, gpt-oss
//!   harmony, DeepSeek R1 and V3.1, and Kimi K2, one builtin call per construct; and GLM-4-9B,
//!   whose one call is the whole reply: an `edit` with as many blocks as the size takes)
//!   decoded whole and in token-sized chunks (3–8 bytes, deterministic pseudo-random sizes,
//!   cut on character boundaries, as a model's detokenised stream arrives).
//! * `scaling/*`: the same replies at 4, 16 and 64 KiB in token-sized chunks, decoded
//!   incrementally by one `TurnDecoder`, and by the baseline servers use: a fresh decoder over
//!   the whole accumulated buffer at every chunk (timed over the reply's last 64 chunks).
//!   Throughput is counted in chunks, so criterion's elements/s is chunks per second and its
//!   inverse the cost of one chunk: flat for the incremental decoder as the reply grows, and
//!   growing with the reply for the baseline (linear versus quadratic in total).
//!
//! * `adversarial/*`: every trigger (native openers, some with the start of a call's body after
//!   them, the text protocol's marker, verb line, fence, path line and EDIT header, and the
//!   reasoning openers `<think>` and harmony's `analysis` channel) followed by 64 KiB, 256 KiB
//!   and 1 MiB of filler (spaces, or a non-blank letter), fed in 4-byte chunks (on character
//!   boundaries). Throughput is in chunks: the cost of one chunk must not grow with the filler,
//!   whatever a detector holds or a body reads.
//!
//! Run: `cargo bench --bench codec -- --warm-up-time 1 --measurement-time 3`.

use std::hint::black_box;
use std::sync::Arc;

use codec::format::FormatId;
use codec::{Event, Mode, Registry, TurnDecoder};
use criterion::{
    BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main,
};

/// A deterministic xorshift generator, so every run benches the same bytes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const WORDS: &[&str] = &[
    "the", "function", "returns", "a", "value", "when", "list", "is", "empty", "so", "we",
    "should", "check", "length", "first", "and", "then", "divide", "by", "number", "of", "items",
    "this", "fixes", "crash", "in", "average", "because", "zero", "division", "raises", "error",
    "café", "naïve", "résumé", "→", "code", "test", "passes", "now",
];

fn sentence(rng: &mut Rng, out: &mut String) {
    let n = 6 + rng.below(12);
    for i in 0..n {
        let w = WORDS[rng.below(WORDS.len())];
        if i == 0 {
            let mut c = w.chars();
            if let Some(f) = c.next() {
                out.extend(f.to_uppercase());
                out.push_str(c.as_str());
            }
        } else {
            out.push(' ');
            out.push_str(w);
        }
    }
    out.push_str(". ");
}

/// Prose only: paragraphs of sentences, wrapped at about 80 columns.
fn prose(size: usize) -> String {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut s = String::with_capacity(size + 256);
    while s.len() < size {
        let mut para = String::new();
        for _ in 0..(2 + rng.below(4)) {
            sentence(&mut rng, &mut para);
        }
        let mut col = 0;
        for w in para.split(' ') {
            if col + w.len() > 80 {
                s.push('\n');
                col = 0;
            } else if col > 0 {
                s.push(' ');
                col += 1;
            }
            s.push_str(w);
            col += w.len();
        }
        s.push_str("\n\n");
    }
    s
}

fn code_line(rng: &mut Rng, out: &mut String) {
    let indent = 4 * rng.below(3);
    out.extend(std::iter::repeat_n(' ', indent));
    let name = WORDS[rng.below(WORDS.len())];
    match rng.below(4) {
        0 => out.push_str(&format!("{name} = compute({name}, {})\n", rng.below(100))),
        1 => out.push_str(&format!("if {name} is None:\n")),
        2 => out.push_str(&format!("return {name} / len(items)\n")),
        _ => out.push_str(&format!("print(\"{name}: \", {name})\n")),
    }
}

/// Edit-dense: a short sentence, then an EDIT with two or three SEARCH/REPLACE blocks, over
/// and over.
fn edits(size: usize) -> String {
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    let mut s = String::with_capacity(size + 1024);
    while s.len() < size {
        sentence(&mut rng, &mut s);
        s.push('\n');
        s.push_str(&format!("EDIT src/{}.py\n", WORDS[rng.below(WORDS.len())]));
        for _ in 0..(2 + rng.below(2)) {
            s.push_str("<<<<<<< SEARCH\n");
            for _ in 0..(1 + rng.below(4)) {
                code_line(&mut rng, &mut s);
            }
            s.push_str("=======\n");
            for _ in 0..(1 + rng.below(5)) {
                code_line(&mut rng, &mut s);
            }
            s.push_str(">>>>>>> REPLACE\n");
        }
    }
    s
}

fn json_string(s: &str) -> String {
    serde_json::Value::String(s.to_owned()).to_string()
}

/// A Hermes tool-call stream: calls (edits with multi-line JSON-escaped bodies, reads, runs)
/// separated by short prose.
fn hermes(size: usize) -> String {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut s = String::with_capacity(size + 1024);
    while s.len() < size {
        sentence(&mut rng, &mut s);
        s.push('\n');
        let name = WORDS[rng.below(WORDS.len())];
        match rng.below(3) {
            0 => {
                let (mut search, mut replace) = (String::new(), String::new());
                for _ in 0..(1 + rng.below(4)) {
                    code_line(&mut rng, &mut search);
                }
                for _ in 0..(1 + rng.below(5)) {
                    code_line(&mut rng, &mut replace);
                }
                s.push_str(&format!(
                    "<tool_call>\n{{\"name\": \"edit\", \"arguments\": {{\"path\": \"src/{name}.py\", \"blocks\": [{{\"search\": {}, \"replace\": {}}}]}}}}\n</tool_call>\n",
                    json_string(&search),
                    json_string(&replace)
                ));
            }
            1 => s.push_str(&format!(
                "<tool_call>\n{{\"name\": \"read\", \"arguments\": {{\"path\": \"src/{name}.py\", \"start\": {}, \"end\": {}}}}}\n</tool_call>\n",
                1 + rng.below(50),
                60 + rng.below(50)
            )),
            _ => s.push_str(&format!(
                "<tool_call>\n{{\"name\": \"run\", \"arguments\": {{\"argv\": [\"python\", \"-m\", \"pytest\", \"tests/test_{name}.py\"]}}}}\n</tool_call>\n"
            )),
        }
    }
    s
}

/// One tool call of a native-format reply: `read` with a line range, or `run` with an argv.
enum Call {
    Read {
        path: String,
        start: usize,
        end: usize,
    },
    Run {
        argv: [String; 4],
    },
}

/// A native-format reply: calls to builtin tools, each written by `render` as one construct,
/// separated by short prose.
fn native(size: usize, render: fn(&Call) -> String) -> String {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut s = String::with_capacity(size + 1024);
    while s.len() < size {
        sentence(&mut rng, &mut s);
        s.push('\n');
        let name = WORDS[rng.below(WORDS.len())];
        let call = if rng.below(2) == 0 {
            Call::Read {
                path: format!("src/{name}.py"),
                start: 1 + rng.below(50),
                end: 60 + rng.below(50),
            }
        } else {
            Call::Run {
                argv: ["python", "-m", "pytest", &format!("tests/test_{name}.py")]
                    .map(str::to_owned),
            }
        };
        s.push_str(&render(&call));
        s.push('\n');
    }
    s
}

/// The argv as a JSON list (pythonic bodies read it as a Python list too).
fn argv_json(argv: &[String; 4]) -> String {
    serde_json::to_string(argv).expect("strings serialise")
}

/// InternLM: `<|action_start|><|plugin|>` and one JSON call object (`marker_list`).
fn internlm(size: usize) -> String {
    native(size, |c| {
        let (name, args) = json_args(c);
        format!(
            "<|action_start|><|plugin|>\n{{\"name\": \"{name}\", \"parameters\": {args}}}<|action_end|>"
        )
    })
}

/// A pythonic call, `read(path="…", start=1, end=60)`.
fn pythonic_call(c: &Call) -> String {
    match c {
        Call::Read { path, start, end } => {
            format!("read(path=\"{path}\", start={start}, end={end})")
        }
        Call::Run { argv } => format!("run(argv={})", argv_json(argv)),
    }
}

/// Llama 4: a pythonic list in `<|python_start|>…<|python_end|>` (`marker_list`).
fn llama4(size: usize) -> String {
    native(size, |c| {
        format!("<|python_start|>[{}]<|python_end|>", pythonic_call(c))
    })
}

/// Olmo 3: `<function_calls>`, a pythonic call on its own line, `</function_calls>`
/// (`marker_list`).
fn olmo3(size: usize) -> String {
    native(size, |c| {
        format!("<function_calls>\n{}\n</function_calls>", pythonic_call(c))
    })
}

/// The (key, text value) pairs of a call, as the XML dialects write them.
fn xml_params(c: &Call) -> (&'static str, Vec<(&'static str, String)>) {
    match c {
        Call::Read { path, start, end } => (
            "read",
            vec![
                ("path", path.clone()),
                ("start", start.to_string()),
                ("end", end.to_string()),
            ],
        ),
        Call::Run { argv } => ("run", vec![("argv", argv_json(argv))]),
    }
}

/// MiniMax-M2: `<minimax:tool_call><invoke name="f"><parameter name="p">v</parameter>…`
/// (`qwen3_xml`).
fn minimax(size: usize) -> String {
    native(size, |c| {
        xml_call(
            c,
            |name| format!("<minimax:tool_call>\n<invoke name=\"{name}\">\n"),
            |k, v| format!("<parameter name=\"{k}\">{v}</parameter>\n"),
            "</invoke>\n</minimax:tool_call>",
        )
    })
}

/// A call in an XML dialect: `open(name)`, `param(key, value)` for each argument, `close`.
fn xml_call(
    c: &Call,
    open: fn(&str) -> String,
    param: fn(&str, &str) -> String,
    close: &str,
) -> String {
    let (name, params) = xml_params(c);
    let mut s = open(name);
    for (k, v) in params {
        s.push_str(&param(k, &v));
    }
    s.push_str(close);
    s
}

/// GLM-4.5: `<tool_call>f` then `<arg_key>p</arg_key><arg_value>v</arg_value>`… (`qwen3_xml`).
fn glm45(size: usize) -> String {
    native(size, |c| {
        xml_call(
            c,
            |name| format!("<tool_call>{name}\n"),
            |k, v| format!("<arg_key>{k}</arg_key>\n<arg_value>{v}</arg_value>\n"),
            "</tool_call>",
        )
    })
}

/// Qwen3-Coder: `<tool_call>`, `<function=f>`, one `<parameter=p>` per argument with its value
/// on lines of its own, `</function>`, `</tool_call>` (`qwen3_xml`; sources: Qwen3-Coder's chat
/// template, vLLM's `qwen3_xml` tool parser and llama.cpp's `QWEN3_CODER_XML` chat format).
fn qwen3_coder(size: usize) -> String {
    native(size, |c| {
        xml_call(
            c,
            |name| format!("<tool_call>\n<function={name}>\n"),
            |k, v| format!("<parameter={k}>\n{v}\n</parameter>\n"),
            "</function>\n</tool_call>",
        )
    })
}

/// Seed-OSS: the Qwen3-Coder call in `<seed:tool_call>…</seed:tool_call>` (`xml_wrapped`;
/// sources: the chat template of ByteDance-Seed/Seed-OSS-36B-Instruct, llama.cpp's `SEED_OSS`
/// chat format).
fn seed_oss(size: usize) -> String {
    native(size, |c| {
        xml_call(
            c,
            |name| format!("<seed:tool_call>\n<function={name}>\n"),
            |k, v| format!("<parameter={k}>{v}</parameter>\n"),
            "</function>\n</seed:tool_call>",
        )
    })
}

/// A call's name and its arguments as a JSON object.
fn json_args(c: &Call) -> (&'static str, String) {
    match c {
        Call::Read { path, start, end } => (
            "read",
            format!("{{\"path\": \"{path}\", \"start\": {start}, \"end\": {end}}}"),
        ),
        Call::Run { argv } => ("run", format!("{{\"argv\": {}}}", argv_json(argv))),
    }
}

/// A call object, `{"name": "read", "arguments": {…}}`.
fn json_call(c: &Call) -> String {
    let (name, args) = json_args(c);
    format!("{{\"name\": \"{name}\", \"arguments\": {args}}}")
}

/// A bare call object on a line of its own (`bare_json`; the shape most small models fall
/// back to, and llama.cpp's generic format's single call without its envelope).
fn bare_object(size: usize) -> String {
    native(size, json_call)
}

/// xLAM-2 / Hammer: a JSON list of call objects at the start of a line (`json_list`; sources:
/// the Salesforce xLAM-2 and MadeAgents Hammer 2.x model cards, vLLM's `xlam` tool parser).
fn xlam2(size: usize) -> String {
    native(size, |c| format!("[{}]", json_call(c)))
}

/// xLAM-1: the `{"tool_calls": […]}` envelope, also llama.cpp's generic format with parallel
/// calls (`json_list`; sources: the xLAM-1 model card, `common_chat_parse_generic` in
/// llama.cpp's `common/chat.cpp`).
fn xlam1(size: usize) -> String {
    native(size, |c| format!("{{\"tool_calls\": [{}]}}", json_call(c)))
}

/// GLM-4-9B: the whole reply is the tool's name on its first line and the JSON arguments on the
/// next, so one call per reply: an `edit` whose blocks fill `size` (`name_line`; sources: the
/// chat template and function-call example of THUDM/glm-4-9b-chat).
fn glm4(size: usize) -> String {
    let mut rng = Rng(0x6A09_E667_F3BC_C908);
    let mut s = String::with_capacity(size + 1024);
    let name = WORDS[rng.below(WORDS.len())];
    s.push_str(&format!(
        "edit\n{{\"path\": \"src/{name}.py\", \"blocks\": ["
    ));
    let mut first = true;
    while s.len() < size {
        let (mut search, mut replace) = (String::new(), String::new());
        for _ in 0..(1 + rng.below(4)) {
            code_line(&mut rng, &mut search);
        }
        for _ in 0..(1 + rng.below(5)) {
            code_line(&mut rng, &mut replace);
        }
        if !first {
            s.push_str(", ");
        }
        first = false;
        s.push_str(&format!(
            "{{\"search\": {}, \"replace\": {}}}",
            json_string(&search),
            json_string(&replace)
        ));
    }
    s.push_str("]}\n");
    s
}

/// Llama 3.x: `<|python_tag|>` and a call object with `"parameters"`, ended by `<|eom_id|>`
/// (`llama3`; sources: Meta's Llama 3.1 prompt-format documentation, vLLM's `llama3_json` tool
/// parser, which takes the object after an optional `<|python_tag|>`).
fn llama3(size: usize) -> String {
    native(size, |c| {
        let (name, args) = json_args(c);
        format!("<|python_tag|>{{\"name\": \"{name}\", \"parameters\": {args}}}<|eom_id|>")
    })
}

/// Mistral: `[TOOL_CALLS]` and a JSON list of call objects (`mistral`; sources: Mistral's
/// tokenizer documentation, llama.cpp's Mistral Nemo chat format).
fn mistral(size: usize) -> String {
    native(size, |c| format!("[TOOL_CALLS][{}]", json_call(c)))
}

/// Mistral v11 (Magistral, Devstral): `[TOOL_CALLS]f[ARGS]{json}` (`mistral`; sources:
/// mistral-common's v11 tokenizer, llama.cpp's Magistral chat format).
fn mistral_v11(size: usize) -> String {
    native(size, |c| {
        let (name, args) = json_args(c);
        format!("[TOOL_CALLS]{name}[ARGS]{args}")
    })
}

/// Pythonic: a list of calls at the start of a line, `[read(path="…", start=1)]` (`pythonic`;
/// sources: Llama 3.2's and ToolACE's model cards, vLLM's `pythonic` tool parser).
fn pythonic(size: usize) -> String {
    native(size, |c| format!("[{}]", pythonic_call(c)))
}

/// Bare pythonic calls: prose with one call written without brackets on a line of its own,
/// `read(path="…", start=1, end=60)`, after the first paragraph (`pythonic`, read by
/// `native::bare_call`; gorilla-openfunctions and NexusRaven write calls so). A reply answers
/// once, so it holds one call however long it is: the rest is prose, each line of it offered to
/// the bare-call detector when it starts with a declared tool's first letter.
fn bare_call(size: usize) -> String {
    let mut s = prose(size);
    let cut = s.find("\n\n").map_or(0, |i| i + 2);
    s.insert_str(cut, "read(path=\"src/average.py\", start=1, end=60)\n\n");
    s
}

/// Adversarial prose for bare calls: every line starts with the tool's name — a call with more
/// after it on its line (`read(path="…") returns …`), a call whose arguments are expressions
/// followed by a line of prose (the first is held to that line, as it could have ended the
/// reply; later ones are prose at once), `read` as a word — or mentions a call mid-line.
/// Nothing in it is a call: every byte comes back as prose.
fn bare_call_mentions(size: usize) -> String {
    let mut rng = Rng(0x6C07_8965_D5A1_F3B9);
    let mut s = String::with_capacity(size + 256);
    while s.len() < size {
        let name = WORDS[rng.below(WORDS.len())];
        match rng.below(4) {
            0 => s.push_str(&format!("read(path=\"src/{name}.py\") returns the file, ")),
            1 => s.push_str(&format!(
                "read(path=path_of[{}], end=2 * n)\n",
                rng.below(9)
            )),
            2 => s.push_str("read the file first, then "),
            _ => s.push_str(&format!("Call read(path=\"src/{name}.py\") to see it. ")),
        }
        sentence(&mut rng, &mut s);
        s.push('\n');
    }
    s
}

/// Jamba / Hunyuan-A13B / Apriel 1.5: `<tool_calls>[{…}]</tool_calls>` (`marker_list`;
/// sources: vLLM's `jamba`, `hunyuan_a13b` and `apriel` tool parsers).
fn jamba(size: usize) -> String {
    native(size, |c| {
        format!("<tool_calls>[{}]</tool_calls>", json_call(c))
    })
}

/// Nemotron Nano v2: `<TOOLCALL>[{…}]</TOOLCALL>` (`marker_list`; source: llama.cpp's Nemotron
/// v2 chat format).
fn nemotron(size: usize) -> String {
    native(size, |c| format!("<TOOLCALL>[{}]</TOOLCALL>", json_call(c)))
}

/// Apertus: `<|tools_prefix|>[{"f": {…}}]<|tools_suffix|>`, each element keyed by the tool's
/// name (`marker_list`; source: vLLM's `apertus` tool parser).
fn apertus(size: usize) -> String {
    native(size, |c| {
        let (name, args) = json_args(c);
        format!("<|tools_prefix|>[{{\"{name}\": {args}}}]<|tools_suffix|>")
    })
}

/// Command R7B: `<|START_ACTION|>[{"tool_call_id", "tool_name", "parameters"}]<|END_ACTION|>`
/// (`marker_list`; sources: vLLM's `command` tool parser, llama.cpp's Command R7B chat format).
fn command_r7b(size: usize) -> String {
    native(size, |c| {
        let (name, args) = json_args(c);
        format!(
            "<|START_ACTION|>[{{\"tool_call_id\": \"0\", \"tool_name\": \"{name}\", \"parameters\": {args}}}]<|END_ACTION|>"
        )
    })
}

/// Granite 3.0: `<|tool_call|>[{…}]`, no end marker (`marker_list`; source: vLLM's `granite`
/// tool parser).
fn granite3(size: usize) -> String {
    native(size, |c| format!("<|tool_call|>[{}]", json_call(c)))
}

/// Phi-4-mini: `functools[{…}]` at the start of a line, no end marker (`marker_list`; source:
/// vLLM's `phi4_mini_json` tool parser).
fn phi4_mini(size: usize) -> String {
    native(size, |c| format!("functools[{}]", json_call(c)))
}

/// LFM2: a pythonic list in `<|tool_call_start|>…<|tool_call_end|>` (`marker_list`; sources:
/// LFM2's chat template, vLLM's `lfm2` tool parser).
fn lfm2(size: usize) -> String {
    native(size, |c| {
        format!("<|tool_call_start|>[{}]<|tool_call_end|>", pythonic_call(c))
    })
}

/// Hermes drift: the Hermes call object in the `<tools>` wrapper small models drift to, one of
/// the open tags of llama.cpp's Hermes 2 Pro parser (`common_chat_parse_hermes_2_pro`)
/// (`hermes_drift`, decoded in the `hermes` mode).
fn hermes_drift(size: usize) -> String {
    native(size, |c| format!("<tools>\n{}\n</tools>", json_call(c)))
}

/// A call's arguments in Gemma's `call:` syntax: bare keys, strings between `quote` tokens,
/// numbers and lists bare.
fn gemma_args(c: &Call, quote: &str) -> (&'static str, String) {
    match c {
        Call::Read { path, start, end } => (
            "read",
            format!("path:{quote}{path}{quote},start:{start},end:{end}"),
        ),
        Call::Run { argv } => {
            let items: Vec<String> = argv.iter().map(|a| format!("{quote}{a}{quote}")).collect();
            ("run", format!("argv:[{}]", items.join(",")))
        }
    }
}

/// FunctionGemma: `<start_function_call>call:f{a:<escape>v<escape>,n:3}<end_function_call>`
/// (`gemma_call`; sources: Google's FunctionGemma model card and its formatting guide, vLLM's
/// `functiongemma` tool parser).
fn functiongemma(size: usize) -> String {
    native(size, |c| {
        let (name, args) = gemma_args(c, "<escape>");
        format!("<start_function_call>call:{name}{{{args}}}<end_function_call>")
    })
}

/// Gemma 4: `<|tool_call>call:f{a:<|"|>v<|"|>,n:3}<tool_call|>` (`gemma_call`; source: vLLM's
/// `gemma4` tool parser).
fn gemma4(size: usize) -> String {
    native(size, |c| {
        let (name, args) = gemma_args(c, "<|\"|>");
        format!("<|tool_call>call:{name}{{{args}}}<tool_call|>")
    })
}

/// gpt-oss harmony: `<|channel|>commentary to=functions.f <|constrain|>json<|message|>{…}<|call|>`
/// (`harmony`; sources: OpenAI's harmony response format guide, llama.cpp's
/// `common_chat_parse_gpt_oss`).
fn gpt_oss(size: usize) -> String {
    native(size, |c| {
        let (name, args) = json_args(c);
        format!(
            "<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>{args}<|call|>"
        )
    })
}

/// DeepSeek's section markers (U+FF5C, U+2581 between ASCII `<` and `>`).
const DS_CALLS_BEGIN: &str = "<\u{ff5c}tool\u{2581}calls\u{2581}begin\u{ff5c}>";
const DS_CALL_BEGIN: &str = "<\u{ff5c}tool\u{2581}call\u{2581}begin\u{ff5c}>";
const DS_SEP: &str = "<\u{ff5c}tool\u{2581}sep\u{ff5c}>";
const DS_CALL_END: &str = "<\u{ff5c}tool\u{2581}call\u{2581}end\u{ff5c}>";
const DS_CALLS_END: &str = "<\u{ff5c}tool\u{2581}calls\u{2581}end\u{ff5c}>";

/// DeepSeek R1 / V3: `function<｜tool▁sep｜>f`, then the arguments in a ```` ```json ```` fence,
/// inside the section and call markers (`section`; sources: vLLM's `deepseekv3` tool parser,
/// llama.cpp's `common_chat_parse_deepseek_r1`).
fn deepseek_r1(size: usize) -> String {
    native(size, |c| {
        let (name, args) = json_args(c);
        format!(
            "{DS_CALLS_BEGIN}{DS_CALL_BEGIN}function{DS_SEP}{name}\n```json\n{args}\n```{DS_CALL_END}{DS_CALLS_END}"
        )
    })
}

/// DeepSeek V3.1: `f<｜tool▁sep｜>{…}` inside the same markers (`section`; sources: vLLM's
/// `deepseek_v31` tool parser, llama.cpp's `common_chat_parse_deepseek_v3_1`).
fn deepseek_v31(size: usize) -> String {
    native(size, |c| {
        let (name, args) = json_args(c);
        format!("{DS_CALLS_BEGIN}{DS_CALL_BEGIN}{name}{DS_SEP}{args}{DS_CALL_END}{DS_CALLS_END}")
    })
}

/// Kimi K2: `<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{…}<|tool_call_end|><|tool_calls_section_end|>`
/// (`section`; sources: vLLM's `kimi_k2` tool parser, llama.cpp's `common_chat_parse_kimi_k2`).
fn kimi_k2(size: usize) -> String {
    native(size, |c| {
        let (name, args) = json_args(c);
        format!(
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.{name}:0<|tool_call_argument_begin|>{args}<|tool_call_end|><|tool_calls_section_end|>"
        )
    })
}

/// Cuts `s` into token-sized pieces of 3–8 bytes on character boundaries.
fn token_chunks(s: &str) -> Vec<&str> {
    let mut rng = Rng(0x0123_4567_89AB_CDEF);
    let mut out = Vec::with_capacity(s.len() / 5 + 1);
    let mut rest = s;
    while !rest.is_empty() {
        let mut end = (3 + rng.below(6)).min(rest.len());
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        let (piece, tail) = rest.split_at(end);
        out.push(piece);
        rest = tail;
    }
    out
}

fn decode_chunks(mode: Mode, registry: &Arc<Registry>, chunks: &[&str]) -> usize {
    let mut d = TurnDecoder::new(mode, Arc::clone(registry));
    let mut n = 0;
    for c in chunks {
        n += d.feed(c).len();
    }
    n + d.finish().len()
}

/// The baseline: at every chunk, a fresh decoder over the whole accumulated buffer. Only the
/// last `tail` chunks are timed (the buffer before them is already accumulated), which is the
/// baseline's steady cost per chunk at this reply size; timing every chunk of a 64 KiB reply
/// would take minutes per sample and show the same thing.
fn reparse_per_chunk(mode: Mode, registry: &Arc<Registry>, prefix: &str, tail: &[&str]) -> usize {
    let mut buf = String::with_capacity(prefix.len() + 64 * tail.len());
    buf.push_str(prefix);
    let mut n = 0;
    for c in tail {
        buf.push_str(c);
        let mut d = TurnDecoder::new(mode, Arc::clone(registry));
        let mut events: Vec<Event> = d.feed(&buf);
        events.extend(d.finish());
        n = events.len();
    }
    n
}

/// How many chunks at the end of a reply the baseline is timed on.
const TAIL: usize = 64;

struct Kind {
    name: &'static str,
    mode: Mode,
    make: fn(usize) -> String,
    /// What each construct of the reply starts with (none in prose).
    construct: Option<&'static str>,
}

const KINDS: &[Kind] = &[
    Kind {
        name: "prose",
        mode: Mode::Auto,
        make: prose,
        construct: None,
    },
    Kind {
        name: "edits",
        mode: Mode::Only(FormatId::Text),
        make: edits,
        construct: Some("EDIT "),
    },
    Kind {
        name: "hermes",
        mode: Mode::Only(FormatId::Hermes),
        make: hermes,
        construct: Some("<tool_call>"),
    },
    Kind {
        name: "internlm",
        mode: Mode::Only(FormatId::MarkerList),
        make: internlm,
        construct: Some("<|action_start|>"),
    },
    Kind {
        name: "llama4",
        mode: Mode::Only(FormatId::MarkerList),
        make: llama4,
        construct: Some("<|python_start|>"),
    },
    Kind {
        name: "olmo3",
        mode: Mode::Only(FormatId::MarkerList),
        make: olmo3,
        construct: Some("<function_calls>"),
    },
    Kind {
        name: "minimax",
        mode: Mode::Only(FormatId::Qwen3Xml),
        make: minimax,
        construct: Some("<minimax:tool_call>"),
    },
    Kind {
        name: "glm45",
        mode: Mode::Only(FormatId::Qwen3Xml),
        make: glm45,
        construct: Some("<tool_call>"),
    },
    Kind {
        name: "qwen3_coder",
        mode: Mode::Only(FormatId::Qwen3Xml),
        make: qwen3_coder,
        construct: Some("<tool_call>"),
    },
    Kind {
        name: "seed_oss",
        mode: Mode::Only(FormatId::Qwen3Xml),
        make: seed_oss,
        construct: Some("<seed:tool_call>"),
    },
    Kind {
        name: "bare_object",
        mode: Mode::Only(FormatId::BareJson),
        make: bare_object,
        construct: Some("{\"name\""),
    },
    Kind {
        name: "xlam2",
        mode: Mode::Only(FormatId::BareJson),
        make: xlam2,
        construct: Some("[{\"name\""),
    },
    Kind {
        name: "xlam1",
        mode: Mode::Only(FormatId::BareJson),
        make: xlam1,
        construct: Some("{\"tool_calls\""),
    },
    Kind {
        name: "glm4",
        mode: Mode::Only(FormatId::BareJson),
        make: glm4,
        construct: Some("edit\n{"),
    },
    Kind {
        name: "llama3",
        mode: Mode::Only(FormatId::Llama3),
        make: llama3,
        construct: Some("<|python_tag|>"),
    },
    Kind {
        name: "mistral",
        mode: Mode::Only(FormatId::Mistral),
        make: mistral,
        construct: Some("[TOOL_CALLS]"),
    },
    Kind {
        name: "mistral_v11",
        mode: Mode::Only(FormatId::Mistral),
        make: mistral_v11,
        construct: Some("[TOOL_CALLS]"),
    },
    // Every construct starts a line; the `[` of a `run` argv is never at one.
    Kind {
        name: "pythonic",
        mode: Mode::Only(FormatId::Pythonic),
        make: pythonic,
        construct: Some("\n["),
    },
    // Decoded as the gateway decodes a reply where tools are declared: every format at once.
    Kind {
        name: "bare_call",
        mode: Mode::Auto,
        make: bare_call,
        construct: Some("read(path="),
    },
    Kind {
        name: "bare_call_mentions",
        mode: Mode::Auto,
        make: bare_call_mentions,
        construct: None,
    },
    Kind {
        name: "jamba",
        mode: Mode::Only(FormatId::MarkerList),
        make: jamba,
        construct: Some("<tool_calls>"),
    },
    Kind {
        name: "nemotron",
        mode: Mode::Only(FormatId::MarkerList),
        make: nemotron,
        construct: Some("<TOOLCALL>"),
    },
    Kind {
        name: "apertus",
        mode: Mode::Only(FormatId::MarkerList),
        make: apertus,
        construct: Some("<|tools_prefix|>"),
    },
    Kind {
        name: "command_r7b",
        mode: Mode::Only(FormatId::MarkerList),
        make: command_r7b,
        construct: Some("<|START_ACTION|>"),
    },
    Kind {
        name: "granite3",
        mode: Mode::Only(FormatId::MarkerList),
        make: granite3,
        construct: Some("<|tool_call|>"),
    },
    Kind {
        name: "phi4_mini",
        mode: Mode::Only(FormatId::MarkerList),
        make: phi4_mini,
        construct: Some("functools["),
    },
    Kind {
        name: "lfm2",
        mode: Mode::Only(FormatId::MarkerList),
        make: lfm2,
        construct: Some("<|tool_call_start|>"),
    },
    Kind {
        name: "hermes_drift",
        mode: Mode::Only(FormatId::Hermes),
        make: hermes_drift,
        construct: Some("<tools>"),
    },
    Kind {
        name: "functiongemma",
        mode: Mode::Only(FormatId::GemmaCall),
        make: functiongemma,
        construct: Some("<start_function_call>"),
    },
    Kind {
        name: "gemma4",
        mode: Mode::Only(FormatId::GemmaCall),
        make: gemma4,
        construct: Some("<|tool_call>"),
    },
    Kind {
        name: "gpt_oss",
        mode: Mode::Only(FormatId::Harmony),
        make: gpt_oss,
        construct: Some("<|channel|>"),
    },
    Kind {
        name: "deepseek_r1",
        mode: Mode::Only(FormatId::SectionCalls),
        make: deepseek_r1,
        construct: Some(DS_CALLS_BEGIN),
    },
    Kind {
        name: "deepseek_v31",
        mode: Mode::Only(FormatId::SectionCalls),
        make: deepseek_v31,
        construct: Some(DS_CALLS_BEGIN),
    },
    Kind {
        name: "kimi_k2",
        mode: Mode::Only(FormatId::SectionCalls),
        make: kimi_k2,
        construct: Some("<|tool_calls_section_begin|>"),
    },
];

fn throughput(c: &mut Criterion) {
    let registry = Arc::new(Registry::builtin());
    let mut g = c.benchmark_group("throughput");
    for k in KINDS {
        let reply = (k.make)(64 * 1024);
        let chunks = token_chunks(&reply);
        g.throughput(Throughput::Bytes(reply.len() as u64));
        g.bench_function(BenchmarkId::new(k.name, "whole"), |b| {
            b.iter(|| decode_chunks(k.mode, &registry, &[black_box(reply.as_str())]))
        });
        g.bench_function(BenchmarkId::new(k.name, "tokens"), |b| {
            b.iter(|| decode_chunks(k.mode, &registry, black_box(&chunks)))
        });
    }
    g.finish();
}

fn scaling(c: &mut Criterion) {
    let registry = Arc::new(Registry::builtin());
    let mut g = c.benchmark_group("scaling");
    g.sampling_mode(SamplingMode::Flat);
    g.sample_size(10);
    for k in KINDS {
        for kib in [4usize, 16, 64] {
            let reply = (k.make)(kib * 1024);
            let chunks = token_chunks(&reply);
            g.throughput(Throughput::Elements(chunks.len() as u64));
            g.bench_function(
                BenchmarkId::new(format!("{}/incremental", k.name), format!("{kib}KiB")),
                |b| b.iter(|| decode_chunks(k.mode, &registry, black_box(&chunks))),
            );
            let split = chunks.len().saturating_sub(TAIL);
            let prefix: String = chunks[..split].concat();
            let tail = &chunks[split..];
            g.throughput(Throughput::Elements(tail.len() as u64));
            g.bench_function(
                BenchmarkId::new(format!("{}/reparse", k.name), format!("{kib}KiB")),
                |b| {
                    b.iter(|| {
                        reparse_per_chunk(k.mode, &registry, black_box(&prefix), black_box(tail))
                    })
                },
            );
        }
    }
    g.finish();
}

/// Each trigger and the mode that enables it (`{"name"` is Llama 3's line object; in `auto`
/// it is bare_json's).
const TRIGGERS: &[(&str, &str, Mode)] = &[
    ("fence_json", "```json", Mode::Auto),
    ("tool_call", "<tool_call>", Mode::Auto),
    ("function", "<function=", Mode::Auto),
    ("python_tag", "<|python_tag|>", Mode::Auto),
    ("llama3_object", "{\"name\"", Mode::Only(FormatId::Llama3)),
    ("tool_calls", "[TOOL_CALLS]", Mode::Auto),
    ("pythonic", "[f(", Mode::Auto),
    ("bare_object", "{", Mode::Auto),
    ("search_marker", "<<<<<<< SEARCH\n", Mode::Auto),
    ("verb_line", "READ ", Mode::Auto),
    ("fence", "```", Mode::Auto),
    ("path_line", "src/a.py\n", Mode::Auto),
    ("edit_header", "EDIT a.py\n", Mode::Auto),
    ("think", "<think>", Mode::Auto),
    ("action_start", "<|action_start|><|plugin|>", Mode::Auto),
    (
        "tool_call_start",
        "<|tool_call_start|>[read(path=",
        Mode::Auto,
    ),
    ("python_start", "<|python_start|>[read(path=", Mode::Auto),
    ("function_calls", "<function_calls>\n", Mode::Auto),
    ("seed_tool_call", "<seed:tool_call>", Mode::Auto),
    (
        "minimax_value",
        "<minimax:tool_call><invoke name=\"read\"><parameter name=\"path\">",
        Mode::Auto,
    ),
    ("glm_name", "<tool_call>read", Mode::Auto),
    ("mistral_v11_name", "[TOOL_CALLS]read", Mode::Auto),
    (
        "mistral_value",
        "[TOOL_CALLS][{\"name\": \"read\", \"arguments\": {\"path\": \"",
        Mode::Auto,
    ),
    ("json_list", "[{\"name\":", Mode::Auto),
    ("fenced_json_list", "```json\n[", Mode::Auto),
    ("tool_calls_envelope", "{\"tool_calls\":", Mode::Auto),
    ("tool_call_envelope", "{\"tool_call\":", Mode::Auto),
    ("bare_call", "read(path=", Mode::Auto),
    ("bare_call_expression", "read(path=p", Mode::Auto),
    // Held while only blanks follow, as it would be the reply's one attempt at a call.
    ("bare_call_expression_line", "read(path=p)\n", Mode::Auto),
    ("name_line", "read\n{", Mode::Auto),
    ("name_line_object", "read\n{\"path\": \"a\"}", Mode::Auto),
    ("tool_calls_marker", "<tool_calls>", Mode::Auto),
    (
        "tool_calls_marker_list",
        "<tool_calls>[{\"name\": \"x\", \"arguments\": {}}, ",
        Mode::Auto,
    ),
    ("toolcall", "<TOOLCALL>", Mode::Auto),
    ("tools_prefix", "<|tools_prefix|>[{\"x\": ", Mode::Auto),
    ("start_action", "<|START_ACTION|>[", Mode::Auto),
    ("granite_tool_call", "<|tool_call|>", Mode::Auto),
    ("functools", "functools[", Mode::Only(FormatId::MarkerList)),
    ("tools_drift", "<tools>", Mode::Auto),
    (
        "tools_drift_value",
        "<tools>{\"name\": \"read\", \"arguments\": {\"path\": \"",
        Mode::Auto,
    ),
    ("start_function_call", "<start_function_call>", Mode::Auto),
    (
        "functiongemma_value",
        "<start_function_call>call:read{path:<escape>",
        Mode::Auto,
    ),
    (
        "gemma4_call",
        "<|tool_call>call:read{",
        Mode::Only(FormatId::GemmaCall),
    ),
    ("channel", "<|channel|>", Mode::Auto),
    ("start_assistant", "<|start|>assistant", Mode::Auto),
    ("analysis", "<|channel|>analysis<|message|>", Mode::Auto),
    (
        "harmony_value",
        "<|channel|>commentary to=functions.read<|message|>{\"path\": \"",
        Mode::Only(FormatId::Harmony),
    ),
    ("deepseek_section", DS_CALLS_BEGIN, Mode::Auto),
    (
        "deepseek_value",
        "<\u{ff5c}tool\u{2581}calls\u{2581}begin\u{ff5c}><\u{ff5c}tool\u{2581}call\u{2581}begin\u{ff5c}>read<\u{ff5c}tool\u{2581}sep\u{ff5c}>{\"path\": \"",
        Mode::Only(FormatId::SectionCalls),
    ),
    ("kimi_section", "<|tool_calls_section_begin|>", Mode::Auto),
    (
        "kimi_value",
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.read:0<|tool_call_argument_begin|>{\"path\": \"",
        Mode::Only(FormatId::SectionCalls),
    ),
];

/// `opener` then `size` bytes of `filler`, cut into 4-byte chunks.
fn adversarial_input(opener: &str, filler: char, size: usize) -> String {
    let mut s = String::with_capacity(opener.len() + size);
    s.push_str(opener);
    s.extend(std::iter::repeat_n(filler, size));
    s
}

/// Cuts `s` into 4-byte pieces; a cut inside a character moves to its end (only DeepSeek's
/// markers are not ASCII), so every piece is a whole number of characters.
fn four_byte_chunks(s: &str) -> Vec<&str> {
    let mut out = Vec::with_capacity(s.len() / 4 + 1);
    let mut rest = s;
    while !rest.is_empty() {
        let mut end = 4.min(rest.len());
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        let (piece, tail) = rest.split_at(end);
        out.push(piece);
        rest = tail;
    }
    out
}

fn adversarial(c: &mut Criterion) {
    let registry = Arc::new(Registry::builtin());
    let mut g = c.benchmark_group("adversarial");
    g.sampling_mode(SamplingMode::Flat);
    g.sample_size(10);
    for &(name, opener, mode) in TRIGGERS {
        for (filler_name, filler) in [("spaces", ' '), ("letters", 'a')] {
            for (size_name, size) in [
                ("64KiB", 64 << 10),
                ("256KiB", 256 << 10),
                ("1MiB", 1 << 20),
            ] {
                let input = adversarial_input(opener, filler, size);
                let chunks = four_byte_chunks(&input);
                g.throughput(Throughput::Elements(chunks.len() as u64));
                g.bench_function(
                    BenchmarkId::new(format!("{name}/{filler_name}"), size_name),
                    |b| b.iter(|| decode_chunks(mode, &registry, black_box(&chunks))),
                );
            }
        }
    }
    g.finish();
}

/// The bench inputs decode to what they claim: prose to no proposal, the others to one
/// proposal per construct. Checked once before timing, so a decoder regression cannot make
/// the bench fast by doing nothing.
fn sanity(_: &mut Criterion) {
    let registry = Arc::new(Registry::builtin());
    for k in KINDS {
        let reply = (k.make)(16 * 1024);
        let mut d = TurnDecoder::new(k.mode, Arc::clone(&registry));
        let mut events = d.feed(&reply);
        events.extend(d.finish());
        let proposals = events
            .iter()
            .filter(|e| matches!(e, Event::Proposal { .. }))
            .count();
        let failures = events
            .iter()
            .filter(|e| matches!(e, Event::Failure { .. }))
            .count();
        let constructs = k.construct.map_or(0, |m| reply.matches(m).count());
        // A construct string the generator never writes would make the check vacuous.
        assert!(
            k.construct.is_none() || constructs > 0,
            "{} input holds its constructs",
            k.name
        );
        assert_eq!(
            (proposals, failures),
            (constructs, 0),
            "{} input decodes as intended",
            k.name
        );
    }
}

criterion_group!(benches, sanity, throughput, scaling, adversarial);
criterion_main!(benches);
