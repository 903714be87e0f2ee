//! The engine interface of issue 7 on the tiny random-weight GGUF: seeds, logit bias,
//! frequency and presence penalties, `ContextExceeded`, `renders_tools`, `halt` and the lazy
//! JSON-schema grammar.

mod common;

use common::{run, text_request, tiny};
use models::{
    Engine, EngineError, GenEvent, GrammarSpec, LlamaEngine, LoadOptions, Sampling, StopReason,
};

fn engine() -> LlamaEngine {
    let mut opts = LoadOptions::new(tiny());
    opts.threads = Some(1);
    opts.n_ctx = Some(2048);
    LlamaEngine::load(opts).expect("load the tiny GGUF")
}

const PROMPT: &str =
    "<|im_start|>user\nhello there, tell me a story<|im_end|>\n<|im_start|>assistant\n";

fn sampled(seed: Option<u32>) -> models::GenerateRequest {
    let mut req = text_request(PROMPT, 40);
    req.sampling = Sampling {
        temperature: 1.0,
        seed,
        ..Sampling::default()
    };
    req
}

#[tokio::test]
async fn no_seed_samples_afresh_while_a_seed_repeats() {
    // Fresh engines each time, so the prompt cache cannot play a part.
    let a = run(&engine(), sampled(Some(11))).await;
    let b = run(&engine(), sampled(Some(11))).await;
    assert_eq!(a.tokens, b.tokens, "a given seed repeats");

    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..4 {
        seen.insert(run(&engine(), sampled(None)).await.tokens);
    }
    assert!(
        seen.len() > 1,
        "four unseeded runs at temperature 1 gave the same sample"
    );
}

#[tokio::test]
async fn a_banning_logit_bias_changes_the_greedy_first_token() {
    let e = engine();
    let plain = run(&e, text_request(PROMPT, 5)).await;
    let first = plain.tokens[0];
    let mut req = text_request(PROMPT, 5);
    req.sampling.logit_bias = vec![(first, f32::NEG_INFINITY)];
    let biased = run(&e, req).await;
    assert_ne!(
        biased.tokens[0], first,
        "the banned token came first anyway"
    );
    assert!(!biased.tokens.contains(&first), "{:?}", biased.tokens);
}

#[tokio::test]
async fn frequency_and_presence_penalties_change_a_repeating_greedy_continuation() {
    let e = engine();
    let plain = run(&e, text_request(PROMPT, 200)).await;
    // The first position whose greedy token already occurred: penalties (which look at
    // generated tokens only) can change nothing before it.
    let first_repeat = (0..plain.tokens.len())
        .find(|&i| plain.tokens[..i].contains(&plain.tokens[i]))
        .unwrap_or_else(|| panic!("the greedy continuation never repeats: {:?}", plain.tokens));
    for (frequency, presence) in [(1.5, 0.0), (0.0, 1.5)] {
        let mut req = text_request(PROMPT, 200);
        req.sampling.frequency_penalty = frequency;
        req.sampling.presence_penalty = presence;
        let penalised = run(&e, req).await;
        let diverge = plain
            .tokens
            .iter()
            .zip(&penalised.tokens)
            .take_while(|(a, b)| a == b)
            .count();
        assert!(
            diverge < plain.tokens.len().min(penalised.tokens.len()),
            "frequency {frequency}, presence {presence} changed nothing"
        );
        assert!(
            diverge >= first_repeat,
            "diverged at {diverge}, before any repeat (first at {first_repeat})"
        );
    }
}

#[tokio::test]
async fn max_tokens_past_the_context_is_refused_naming_the_counts() {
    let mut opts = LoadOptions::new(tiny());
    opts.threads = Some(1);
    opts.n_ctx = Some(64);
    let e = LlamaEngine::load(opts).expect("load");
    let n = e.tokenize(PROMPT).expect("tokenize").len() as u32;
    let over = 64 - n + 1;
    match e.generate(text_request(PROMPT, over)).await {
        Err(
            err @ EngineError::ContextExceeded {
                prompt_tokens,
                max_tokens,
                n_ctx: 64,
            },
        ) => {
            assert_eq!((prompt_tokens, max_tokens), (n, over));
            let msg = err.to_string();
            for count in [n, over, 64] {
                assert!(msg.contains(&count.to_string()), "{msg}");
            }
        }
        other => panic!("expected ContextExceeded, got {other:?}"),
    }
    // Exactly filling the context is allowed and runs to max_tokens.
    let out = run(&e, text_request(PROMPT, 64 - n)).await;
    assert_eq!(out.reason, StopReason::MaxTokens);
    assert_eq!(out.timings.generated_tokens, 64 - n);
}

/// A ChatML template that lists the tools in a system turn.
const TOOLS_TEMPLATE: &str = r#"{%- if tools %}<|im_start|>system
Tools:{% for tool in tools %} {{ tool.function.name }}{% endfor %}<|im_end|>
{% endif %}{% for message in messages %}<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant
{% endif %}"#;

#[tokio::test]
async fn renders_tools_tells_templates_that_show_tools_from_those_that_drop_them() {
    assert!(!engine().renders_tools(), "ChatML ignores tools");

    let dir = std::env::temp_dir().join(format!("bellows-profile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let path = dir.join("tools-chatml.toml");
    let toml = format!(
        "description = \"ChatML with tools\"\n\n[template]\nchat_template = '''\n{TOOLS_TEMPLATE}'''\n"
    );
    std::fs::write(&path, toml).expect("write the profile");
    let mut opts = LoadOptions::new(tiny());
    opts.n_ctx = Some(256);
    opts.profile = Some(path.to_string_lossy().into_owned());
    let e = LlamaEngine::load(opts).expect("load with the tools profile");
    assert!(e.renders_tools(), "this template shows tools");
    let tool = models::ToolSpec {
        name: "read".to_owned(),
        description: "Read a file.".to_owned(),
        parameters: serde_json::json!({"type": "object"}),
    };
    let text = e
        .render_chat(&[models::ChatMessage::new("user", "hi")], &[tool])
        .expect("render");
    assert!(text.contains("Tools: read"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn halt_ends_with_stop_before_max_tokens() {
    let e = engine();
    let mut req = text_request(PROMPT, 1500);
    // A grammar that never lets the model end, so only a limit or the halt stops it.
    req.grammar = Some(GrammarSpec::Strict {
        gbnf: "root ::= [a-z] root".to_owned(),
        root: "root".to_owned(),
    });
    let mut g = e.generate(req).await.expect("generate");
    assert!(matches!(g.next().await, Some(GenEvent::Text { .. })));
    g.halt();
    let mut text_after = 0;
    let mut end = None;
    while let Some(ev) = g.next().await {
        match ev {
            GenEvent::Text { .. } => text_after += 1,
            GenEvent::Done { reason, timings } => end = Some((reason, timings)),
            GenEvent::Failed { error, .. } => panic!("{error}"),
        }
    }
    let (reason, timings) = end.expect("a halted stream still ends with Done");
    assert_eq!(reason, StopReason::Stop);
    assert!(timings.generated_tokens < 1500, "{timings:?}");
    // The slot ran ahead by at most the event buffer before it saw the halt.
    assert!(text_after <= 64 + 1, "{text_after} pieces after the halt");
}

#[tokio::test]
async fn lazy_json_schema_leaves_text_free_until_the_trigger_then_forces_a_valid_value() {
    let e = engine();
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
        "additionalProperties": false
    });
    let mut req = text_request(PROMPT, 1500);
    req.grammar = Some(GrammarSpec::LazyJsonSchema {
        schema,
        trigger: "@".to_owned(),
        close: "!".to_owned(),
    });
    // A high temperature and a seed under which the noise model writes the trigger (as in
    // engine_tiny's lazy-grammar test).
    req.sampling = Sampling {
        temperature: 1.0,
        seed: Some(7),
        ..Sampling::default()
    };
    let out = run(&e, req).await;
    let at = out
        .text
        .find('@')
        .unwrap_or_else(|| panic!("no trigger in {:?}", out.text));
    assert!(at > 0, "free text comes before the trigger: {:?}", out.text);
    let rest = out.text[at + 1..].trim_start_matches([' ', '\t', '\n']);
    let mut values = serde_json::Deserializer::from_str(rest).into_iter::<serde_json::Value>();
    let value = values
        .next()
        .unwrap_or_else(|| panic!("no value after the trigger: {rest:?}"))
        .unwrap_or_else(|err| panic!("{err}: {rest:?}"));
    assert!(value["n"].is_i64() || value["n"].is_u64(), "{value}");
    assert_eq!(value.as_object().map(|o| o.len()), Some(1), "{value}");
    let after = rest[values.byte_offset()..].trim_start_matches([' ', '\t', '\n']);
    assert_eq!(after, "!", "the close, then nothing: {rest:?}");
    assert_eq!(out.reason, StopReason::Eog, "{out:?}");
}

/// Before its trigger a lazy grammar constrains nothing: a greedy reply that never writes the
/// trigger is the same, token for token, as with no grammar.
#[tokio::test]
async fn an_untriggered_lazy_grammar_leaves_greedy_output_unchanged() {
    let e = engine();
    let off = run(&e, text_request(PROMPT, 200)).await;
    let mut req = text_request(PROMPT, 200);
    req.grammar = Some(GrammarSpec::LazyJsonSchema {
        schema: serde_json::json!({"type": "object"}),
        trigger: "<tool_call>".to_owned(),
        close: "</tool_call>".to_owned(),
    });
    let lazy = run(&e, req).await;
    assert!(!off.text.contains("<tool_call>"), "{:?}", off.text);
    assert_eq!(lazy.tokens, off.tokens);
    assert_eq!(lazy.reason, off.reason);
}
