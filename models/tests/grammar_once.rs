//! A request's grammar is compiled exactly once, at admission (the slot reuses the compiled
//! sampler). Alone in its own test binary, so no other test compiles grammars meanwhile.

mod common;

use common::{run, text_request, tiny};
use models::{Engine, EngineError, GrammarSpec, LlamaEngine, LoadOptions, StopReason};

#[tokio::test]
async fn a_request_compiles_its_grammar_once_and_a_bad_one_fails_at_generate() {
    let mut opts = LoadOptions::new(tiny());
    opts.threads = Some(1);
    opts.n_ctx = Some(512);
    let e = LlamaEngine::load(opts).expect("load the tiny GGUF");
    let compiled = models::llama::grammar_compilations;

    let mut req = text_request("<|im_start|>user\nhi<|im_end|>\n", 20);
    req.grammar = Some(GrammarSpec::Strict {
        gbnf: r#"root ::= "ok" [0-9]"#.to_owned(),
        root: "root".to_owned(),
    });
    let before = compiled();
    let out = run(&e, req.clone()).await;
    assert_eq!(out.text.len(), 3, "{:?}", out.text);
    assert!(out.text.starts_with("ok"), "{:?}", out.text);
    assert_eq!(out.reason, StopReason::Eog);
    assert_eq!(compiled() - before, 1, "one request, one compilation");

    let before = compiled();
    req.grammar = Some(GrammarSpec::LazyJsonSchema {
        schema: serde_json::json!({"type": "integer"}),
        trigger: "<call>".to_owned(),
        close: "</call>".to_owned(),
    });
    run(&e, req.clone()).await;
    assert_eq!(compiled() - before, 1, "a lazy JSON-schema grammar too");

    req.grammar = Some(GrammarSpec::Strict {
        gbnf: "root ::= (\"a\"".to_owned(),
        root: "root".to_owned(),
    });
    match e.generate(req).await {
        Err(EngineError::InvalidGrammar(msg)) => assert!(!msg.is_empty()),
        other => panic!("expected InvalidGrammar from generate, got {other:?}"),
    }
}
