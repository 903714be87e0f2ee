//! llama.cpp's DRY sampler through the engine: profile keys, the sampler reaching llama.cpp on
//! the tiny GGUF (greedy, sampled, extreme values), and on SmolLM2 a greedy loop it breaks,
//! with and without a grammar, while `multiplier` 0 changes nothing.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashMap;

use common::{Output, model_path, run, text_request, tiny};
use models::{
    DRY_MAX_BREAKERS, Dry, GenerateRequest, GrammarSpec, LlamaEngine, LoadOptions, Profile,
    ProfileError, Sampling, StopReason,
};

// ---------------------------------------------------------------------------------------------
// Profiles

#[test]
fn profile_dry_keys_parse_and_default_to_off() {
    let p = Profile::parse(
        "dry",
        "[sampling]\ndry_multiplier = 0.8\ndry_base = 2.0\ndry_allowed_length = 3\n\
         dry_penalty_last_n = 0\ndry_sequence_breakers = [\"\\n\", \"```\"]\n",
    )
    .expect("parse");
    assert_eq!(
        p.sampling.dry,
        Dry {
            multiplier: 0.8,
            base: 2.0,
            allowed_length: 3,
            penalty_last_n: 0,
            sequence_breakers: vec!["\n".to_owned(), "```".to_owned()],
        }
    );
    // Keys left out keep llama.cpp's defaults, with DRY off.
    let p = Profile::parse("partial", "[sampling]\ndry_multiplier = 0.5\n").expect("parse");
    assert_eq!(
        p.sampling.dry,
        Dry {
            multiplier: 0.5,
            ..Dry::default()
        }
    );
    let plain = Profile::parse("plain", "").expect("parse");
    assert_eq!(plain.sampling.dry, Dry::default());
    assert!(!plain.sampling.dry.is_on());
    for name in models::profile::BUILTIN.iter().map(|(n, _)| *n) {
        let p = Profile::named(name).expect("a built-in profile loads");
        assert!(p.sampling.dry.check().is_ok(), "{name}");
    }
}

#[test]
fn bad_profile_dry_keys_are_refused_naming_the_key() {
    let many = format!(
        "dry_sequence_breakers = [{}]",
        vec!["\"x\""; DRY_MAX_BREAKERS + 1].join(", ")
    );
    let long = format!("dry_sequence_breakers = [\"{}\"]", "z".repeat(41));
    for (line, key) in [
        ("dry_multiplier = -0.1", "dry_multiplier"),
        ("dry_multiplier = nan", "dry_multiplier"),
        ("dry_base = 0.99", "dry_base"),
        ("dry_base = inf", "dry_base"),
        ("dry_allowed_length = -1", "dry_allowed_length"),
        ("dry_allowed_length = 5000", "dry_allowed_length"),
        ("dry_penalty_last_n = -2", "dry_penalty_last_n"),
        ("dry_sequence_breakers = [\"\"]", "dry_sequence_breakers"),
        (
            "dry_sequence_breakers = [\"a\\u0000\"]",
            "dry_sequence_breakers",
        ),
        (many.as_str(), "dry_sequence_breakers"),
        (long.as_str(), "dry_sequence_breakers"),
    ] {
        match Profile::parse("bad", &format!("[sampling]\n{line}\n")) {
            Err(ProfileError::Invalid { what, .. }) => {
                assert!(what.contains(&format!("sampling.{key}")), "{line}: {what}")
            }
            other => panic!("{line}: {other:?}"),
        }
    }
    // Wrong types and unknown keys are parse errors, as for every other key.
    for line in [
        "dry_sequence_breakers = [1]",
        "dry_sequence_breakers = \"\\n\"",
        "dry_allowed_length = 2.5",
        "dry_multiplyer = 0.8",
    ] {
        assert!(
            matches!(
                Profile::parse("bad", &format!("[sampling]\n{line}\n")),
                Err(ProfileError::Parse { .. })
            ),
            "{line}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Measures of repetition

/// How often the most frequent non-blank line occurs.
fn most_repeated_line(text: &str) -> usize {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        *counts.entry(line).or_default() += 1;
    }
    counts.into_values().max().unwrap_or(0)
}

/// The length of the longest token sequence that occurs twice (the occurrences may overlap):
/// a reply that loops with period `p` over `n` tokens scores about `n - p`.
fn longest_repeat(tokens: &[i32]) -> usize {
    // run[j] = length of the common suffix of tokens[..i] and tokens[..j], for j < i.
    let mut best = 0;
    let mut prev = vec![0usize; tokens.len() + 1];
    for i in 1..=tokens.len() {
        let mut cur = vec![0usize; tokens.len() + 1];
        for j in 1..i {
            if tokens[i - 1] == tokens[j - 1] {
                cur[j] = prev[j - 1] + 1;
                best = best.max(cur[j]);
            }
        }
        prev = cur;
    }
    best
}

#[test]
fn the_measures_measure_repetition() {
    assert_eq!(longest_repeat(&[1, 2, 3, 4]), 0);
    assert_eq!(longest_repeat(&[1, 2, 3, 1, 2, 4]), 2);
    assert_eq!(longest_repeat(&[7, 8, 7, 8, 7, 8, 7]), 5);
    assert_eq!(most_repeated_line("a\n\nb\n a\nc\n"), 2);
}

// ---------------------------------------------------------------------------------------------
// The tiny GGUF: the sampler reaches llama.cpp

fn tiny_engine() -> LlamaEngine {
    let mut opts = LoadOptions::new(tiny());
    opts.threads = Some(1);
    opts.n_ctx = Some(512);
    LlamaEngine::load(opts).expect("load the tiny GGUF")
}

const TINY_PROMPT: &str =
    "<|im_start|>user\nhello there, tell me a story<|im_end|>\n<|im_start|>assistant\n";

/// DRY that bans every token already in the reply but the first: with `allowed_length` 0
/// every earlier token "extends a repeat", and a vast multiplier puts it out of reach.
fn ban_repeats() -> Dry {
    Dry {
        multiplier: 1e30,
        base: 1.0,
        allowed_length: 0,
        penalty_last_n: -1,
        sequence_breakers: Vec::new(),
    }
}

fn distinct_after_first(tokens: &[i32]) -> bool {
    let rest = tokens.get(1..).unwrap_or_default();
    let mut seen = rest.to_vec();
    seen.sort_unstable();
    seen.dedup();
    seen.len() == rest.len()
}

#[tokio::test]
async fn dry_reaches_llama_cpp_when_greedy_and_when_sampling() {
    let e = tiny_engine();
    let plain = run(&e, text_request(TINY_PROMPT, 48)).await;
    assert!(
        !distinct_after_first(&plain.tokens),
        "the tiny model repeats tokens when greedy: {:?}",
        plain.tokens
    );
    for temperature in [0.0, 0.8] {
        let mut req = text_request(TINY_PROMPT, 48);
        req.sampling = Sampling {
            temperature,
            seed: Some(7),
            dry: ban_repeats(),
            ..Sampling::default()
        };
        let out = run(&e, req).await;
        assert!(out.tokens.len() > 8, "T={temperature}: {out:?}");
        assert!(
            distinct_after_first(&out.tokens),
            "T={temperature}: DRY bans every repeat: {:?}",
            out.tokens
        );
    }
    // A window of 0 turns it off again.
    let mut req = text_request(TINY_PROMPT, 48);
    req.sampling.dry = Dry {
        penalty_last_n: 0,
        ..ban_repeats()
    };
    assert_eq!(run(&e, req).await.tokens, plain.tokens);
}

#[tokio::test]
async fn extreme_dry_values_are_harmless() {
    let e = tiny_engine();
    for dry in [
        // A window far past the context, a huge base and breakers llama.cpp would choke on.
        Dry {
            multiplier: 3.0,
            base: 1e30,
            allowed_length: 1,
            penalty_last_n: i32::MAX,
            sequence_breakers: vec!["\0".to_owned(), String::new(), "x".repeat(200)],
        },
        // Values validation refuses, should one arrive anyway: the stage is left out.
        Dry {
            multiplier: f32::NAN,
            base: 0.5,
            allowed_length: -4,
            penalty_last_n: -9,
            sequence_breakers: vec![],
        },
        Dry {
            multiplier: f32::INFINITY,
            ..Dry::default()
        },
    ] {
        let mut req = text_request(TINY_PROMPT, 40);
        req.sampling.dry = dry.clone();
        let out = run(&e, req).await;
        assert_eq!(out.timings.generated_tokens, 40, "{dry:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// SmolLM2: a greedy loop, broken

/// A text prompt SmolLM2 answers, greedily, by repeating one comment line until the budget
/// runs out.
const LOOP_PROMPT: &str =
    "def f():\n    print('hello')\n\ndef f():\n    print('hello')\n\ndef f():\n";
const LOOP_TOKENS: u32 = 128;

/// A fresh engine for each run, so that no run reuses another's cached prompt (cached and
/// cold evaluation may round differently, and greedy picks follow the rounding).
fn smollm2() -> LlamaEngine {
    let mut opts = LoadOptions::new(model_path("BELLOWS_SMOLLM2_GGUF"));
    opts.threads = Some(2);
    opts.n_ctx = Some(1024);
    LlamaEngine::load(opts).expect("load SmolLM2")
}

fn loop_request(dry: Dry, grammar: Option<GrammarSpec>) -> GenerateRequest {
    let mut req = text_request(LOOP_PROMPT, LOOP_TOKENS);
    req.sampling.dry = dry;
    req.grammar = grammar;
    req
}

fn dry(multiplier: f32) -> Dry {
    Dry {
        multiplier,
        ..Dry::default()
    }
}

fn report(label: &str, out: &Output) {
    eprintln!(
        "{label}: {} tokens, most repeated line x{}, longest repeat {} tokens\n{}\n",
        out.tokens.len(),
        most_repeated_line(&out.text),
        longest_repeat(&out.tokens),
        out.text
    );
}

#[tokio::test]
async fn dry_breaks_a_greedy_loop_and_multiplier_zero_changes_nothing() {
    let plain = run(&smollm2(), loop_request(Dry::default(), None)).await;
    report("no DRY", &plain);
    let off = run(
        &smollm2(),
        loop_request(
            Dry {
                multiplier: 0.0,
                base: 3.0,
                allowed_length: 1,
                penalty_last_n: 64,
                sequence_breakers: vec![],
            },
            None,
        ),
    )
    .await;
    let on = run(&smollm2(), loop_request(dry(0.8), None)).await;
    report("DRY 0.8", &on);

    assert_eq!(
        off.tokens, plain.tokens,
        "dry_multiplier 0 is token for token the same as no DRY"
    );
    // Measured: without DRY one line 11 times and a repeat of 117 tokens (the whole reply but
    // its first period); with it no line twice and no repeat over 9 tokens.
    assert_loops(&plain);
    assert_does_not_loop(&on);
}

/// The premise: greedy SmolLM2 loops on the prompt.
fn assert_loops(out: &Output) {
    assert_eq!(out.reason, StopReason::MaxTokens, "{out:?}");
    assert!(most_repeated_line(&out.text) >= 6, "{:?}", out.text);
    assert!(longest_repeat(&out.tokens) >= 64, "{:?}", out.text);
}

fn assert_does_not_loop(out: &Output) {
    assert!(most_repeated_line(&out.text) <= 3, "{:?}", out.text);
    assert!(longest_repeat(&out.tokens) <= 32, "{:?}", out.text);
}

/// Whether each line of `text` is `# f() ` then lowercase words, spaces, parentheses and
/// dots (the last line may be cut short).
fn comment_lines(text: &str) -> bool {
    let lines: Vec<&str> = text.split('\n').collect();
    lines.iter().enumerate().all(|(i, line)| {
        let last = i + 1 == lines.len();
        let prefix = "# f() ";
        let body_ok = |b: &str| {
            b.chars()
                .all(|c| c.is_ascii_lowercase() || " ().".contains(c))
        };
        if last {
            prefix.starts_with(line) || (line.starts_with(prefix) && body_ok(&line[prefix.len()..]))
        } else {
            line.len() > prefix.len() && line.starts_with(prefix) && body_ok(&line[prefix.len()..])
        }
    })
}

#[tokio::test]
async fn dry_works_under_a_grammar() {
    // Comment lines of lowercase words: the loop is inside the language, so the grammar alone
    // does not break it; the line DRY steers to with no grammar has a comma, which it refuses.
    let words = GrammarSpec::Strict {
        gbnf: "root ::= line+\nline ::= \"# f() \" [a-z ().]+ \"\\n\"\n".to_owned(),
        root: "root".to_owned(),
    };
    let plain = run(
        &smollm2(),
        loop_request(Dry::default(), Some(words.clone())),
    )
    .await;
    report("grammar, no DRY", &plain);
    let on = run(&smollm2(), loop_request(dry(0.8), Some(words))).await;
    report("grammar, DRY 0.8", &on);
    // A grammar that admits the loop line only: every pick DRY steers away from it is refused,
    // and the pick made under the grammar (with DRY still in the chain) is the loop's.
    let only = GrammarSpec::Strict {
        gbnf: "root ::= (\"# f() is a function that does nothing.\\n\")+\n".to_owned(),
        root: "root".to_owned(),
    };
    let forced = run(&smollm2(), loop_request(dry(0.8), Some(only))).await;
    report("loop grammar, DRY 0.8", &forced);

    assert_loops(&plain);
    assert!(comment_lines(&plain.text), "{:?}", plain.text);
    assert_does_not_loop(&on);
    assert!(comment_lines(&on.text), "the grammar holds: {:?}", on.text);
    // The grammar wins: the text is the loop line over and over. DRY still acted in the
    // grammar's second pass: it picked other tokens spelling the same text (measured: no
    // repeat over 11 tokens).
    let line = "# f() is a function that does nothing.\n";
    assert!(
        line.repeat(20).starts_with(&forced.text),
        "{:?}",
        forced.text
    );
    assert!(forced.text.len() > line.len() * 4, "{:?}", forced.text);
    assert_ne!(forced.tokens, plain.tokens);
    assert!(longest_repeat(&forced.tokens) <= 48, "{:?}", forced.tokens);
}
