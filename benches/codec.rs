//! Codec throughput and scaling.
//!
//! * `throughput/*`: replies of 64 KiB (prose only, edit-dense, Hermes tool-call stream, and the
//!   native formats InternLM, Llama 4 `<|python_start|>`, Olmo 3 `<function_calls>`, MiniMax-M2
//!   and GLM-4.5, one builtin call per construct) decoded
//!   whole and in token-sized chunks (3–8 bytes, deterministic pseudo-random sizes, cut on
//!   character boundaries, as a model's detokenised stream arrives).
//! * `scaling/*`: the same replies at 4, 16 and 64 KiB in token-sized chunks, decoded
//!   incrementally by one `TurnDecoder`, and by the baseline servers use: a fresh decoder over
//!   the whole accumulated buffer at every chunk (timed over the reply's last 64 chunks).
//!   Throughput is counted in chunks, so criterion's elements/s is chunks per second and its
//!   inverse the cost of one chunk: flat for the incremental decoder as the reply grows, and
//!   growing with the reply for the baseline (linear versus quadratic in total).
//!
//! * `adversarial/*`: every trigger (native openers, the text protocol's marker, verb line,
//!   fence, path line and EDIT header, and a reasoning opener) followed by 64 KiB, 256 KiB and 1 MiB of filler (spaces, or a non-blank
//!   letter), fed in 4-byte chunks. Throughput is in chunks: the cost of one chunk must not
//!   grow with the filler, whatever a detector holds or a body reads.
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
        let (name, args) = match c {
            Call::Read { path, start, end } => (
                "read",
                format!("{{\"path\": \"{path}\", \"start\": {start}, \"end\": {end}}}"),
            ),
            Call::Run { argv } => ("run", format!("{{\"argv\": {}}}", argv_json(argv))),
        };
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
        let (name, params) = xml_params(c);
        let mut s = format!("<minimax:tool_call>\n<invoke name=\"{name}\">\n");
        for (k, v) in params {
            s.push_str(&format!("<parameter name=\"{k}\">{v}</parameter>\n"));
        }
        s.push_str("</invoke>\n</minimax:tool_call>");
        s
    })
}

/// GLM-4.5: `<tool_call>f` then `<arg_key>p</arg_key><arg_value>v</arg_value>`… (`qwen3_xml`).
fn glm45(size: usize) -> String {
    native(size, |c| {
        let (name, params) = xml_params(c);
        let mut s = format!("<tool_call>{name}\n");
        for (k, v) in params {
            s.push_str(&format!(
                "<arg_key>{k}</arg_key>\n<arg_value>{v}</arg_value>\n"
            ));
        }
        s.push_str("</tool_call>");
        s
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
];

/// `opener` then `size` bytes of `filler`, cut into 4-byte chunks.
fn adversarial_input(opener: &str, filler: char, size: usize) -> String {
    let mut s = String::with_capacity(opener.len() + size);
    s.push_str(opener);
    s.extend(std::iter::repeat_n(filler, size));
    s
}

fn four_byte_chunks(s: &str) -> Vec<&str> {
    // The inputs are ASCII, so every 4-byte cut is a character boundary.
    s.as_bytes()
        .chunks(4)
        .map(|c| std::str::from_utf8(c).expect("ASCII input"))
        .collect()
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
