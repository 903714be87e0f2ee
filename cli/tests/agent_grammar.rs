//! The agent's grammars in the engine the CLI hands it: on the tiny random-weight GGUF, the
//! strict grammar compiles in llama.cpp and bounds the prose before the first action. Needs
//! `scripts/fetch-models.sh tiny` (or `$BELLOWS_TINY_GGUF`).

#[path = "../../gateway/tests/common/mod.rs"]
mod common;

/// The agent's strict grammar compiles in llama.cpp for every approval mode, and it bounds
/// the prose before the first action: a reply's lines before its first verb are short.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agents_strict_grammar_compiles_and_bounds_the_lead_prose() {
    use models::{Engine, GenEvent, GenerateRequest, LlamaEngine, LoadOptions, Prompt, Sampling};
    let engine = LlamaEngine::load(LoadOptions::new(
        common::tiny().to_string_lossy().into_owned(),
    ))
    .expect("load the tiny GGUF");
    for mode in [
        agent::ApprovalMode::Plan,
        agent::ApprovalMode::Ask,
        agent::ApprovalMode::Edits,
        agent::ApprovalMode::Auto,
    ] {
        let grammar = agent::prompt::grammar(mode, agent::GrammarChoice::Strict);
        assert!(grammar.is_some(), "{mode:?}");
        for seed in 0..3 {
            let req = GenerateRequest {
                prompt: Prompt::Text("Task: fix the bug.\n".to_owned()),
                sampling: Sampling {
                    temperature: 1.0,
                    seed: Some(seed),
                    ..Sampling::default()
                },
                max_tokens: Some(400),
                stop: Vec::new(),
                grammar: grammar.clone(),
                logprobs: None,
            };
            let mut g = engine
                .generate(req)
                .await
                .unwrap_or_else(|e| panic!("{mode:?}: the grammar must compile: {e}"));
            let mut text = String::new();
            while let Some(ev) = g.next().await {
                if let GenEvent::Text { piece, .. } = ev {
                    text.push_str(&piece);
                }
            }
            // Every line before the first that starts with a capital (a verb) is at most 160
            // characters, and there are at most two of them.
            let lead: Vec<&str> = text
                .split('\n')
                .take_while(|l| !l.starts_with(|c: char| c.is_ascii_uppercase()))
                .collect();
            assert!(lead.len() <= 3, "{mode:?}: {text:?}");
            for l in &lead {
                assert!(
                    l.chars().count() <= 160,
                    "{mode:?}: a long lead line in {text:?}"
                );
            }
        }
    }
}
