//! Many sequences in one context, on the tiny random-weight GGUF: batched generation equals
//! sequential generation token for token (up to the first near tie: llama.cpp's logits differ
//! in their last bits between batch shapes, see `common::TIE`), cancelling one leaves the others alone, a prompt
//! evaluated once serves every sequence that shares it, chunked prefill keeps the others
//! generating, and the per-sequence and total context limits hold.

mod common;

use std::sync::Arc;

use common::{Output, assert_same_but_for_ties, run, text_request, tiny};
use models::{
    Engine, EngineError, FlashAttn, GenEvent, GenerateRequest, GrammarSpec, LlamaEngine,
    LoadOptions, StopReason,
};

fn engine_with(slots: u32, f: impl FnOnce(&mut LoadOptions)) -> Arc<LlamaEngine> {
    let mut opts = LoadOptions::new(tiny());
    opts.threads = Some(2);
    opts.n_ctx = Some(2048 * slots);
    opts.slots = slots;
    f(&mut opts);
    Arc::new(LlamaEngine::load(opts).expect("load the tiny GGUF"))
}

fn engine(slots: u32) -> Arc<LlamaEngine> {
    engine_with(slots, |_| {})
}

fn prompts(n: usize) -> Vec<String> {
    let topics = [
        "apples", "bicycles", "clouds", "dragons", "engines", "forests", "glaciers", "harbours",
    ];
    (0..n)
        .map(|i| {
            format!(
                "<|im_start|>user\nTell me about {} number {i}, please.<|im_end|>\n<|im_start|>assistant\n",
                topics[i % topics.len()]
            )
        })
        .collect()
}

/// A greedy request that reports each token's two most likely alternatives, so a
/// comparison can tell a near tie from a wrong token.
fn scored_request(prompt: &str, max_tokens: u32) -> GenerateRequest {
    GenerateRequest {
        logprobs: Some(2),
        ..text_request(prompt, max_tokens)
    }
}

/// Runs `prompts` one after another on a one-slot engine: the reference.
async fn sequential(prompts: &[String], max_tokens: u32) -> Vec<Output> {
    let e = engine(1);
    let mut out = Vec::new();
    for p in prompts {
        out.push(run(e.as_ref(), scored_request(p, max_tokens)).await);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn batched_generation_equals_sequential_token_for_token() {
    for n in [1usize, 2, 5, 8] {
        let prompts = prompts(n);
        let want = sequential(&prompts, 48).await;
        let e = engine(8);
        // Half start together; the rest are admitted while the first ones generate.
        let (early, late) = prompts.split_at(n.div_ceil(2));
        let mut tasks = Vec::new();
        for p in early {
            let (e, p) = (Arc::clone(&e), p.clone());
            tasks.push(tokio::spawn(async move {
                run(e.as_ref(), scored_request(&p, 48)).await
            }));
        }
        if !late.is_empty() {
            // Wait until the first sequence is generating.
            let mut g = e
                .generate(text_request(&prompts[0], 48))
                .await
                .expect("generate");
            assert!(matches!(g.next().await, Some(GenEvent::Text { .. })));
            for p in late {
                let (e, p) = (Arc::clone(&e), p.clone());
                tasks.push(tokio::spawn(async move {
                    run(e.as_ref(), scored_request(&p, 48)).await
                }));
            }
            drop(g);
        }
        for (i, t) in tasks.into_iter().enumerate() {
            let got = t.await.expect("task");
            assert_same_but_for_ties(&got, &want[i], &format!("{n} sequences: sequence {i}"));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancelling_one_sequence_leaves_the_others_unchanged() {
    let prompts = prompts(4);
    let want = sequential(&prompts, 64).await;
    let e = engine(4);
    let mut doomed = e
        .generate(text_request(&prompts[0], 64))
        .await
        .expect("generate");
    let mut tasks = Vec::new();
    for p in &prompts[1..] {
        let (e, p) = (Arc::clone(&e), p.clone());
        tasks.push(tokio::spawn(async move {
            run(e.as_ref(), scored_request(&p, 64)).await
        }));
    }
    assert!(matches!(doomed.next().await, Some(GenEvent::Text { .. })));
    drop(doomed);
    for (i, t) in tasks.into_iter().enumerate() {
        let got = t.await.expect("task");
        assert_same_but_for_ties(&got, &want[i + 1], &format!("sequence {}", i + 1));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_prompt_is_evaluated_once_for_every_sequence_that_shares_it() {
    // A long shared prefix (an agent's system prompt), then the same question four times.
    let system = "<|im_start|>system\nYou are a careful coding assistant. ".repeat(12);
    let prompt = format!("{system}<|im_end|>\n<|im_start|>user\nfix the bug<|im_end|>\n");
    let n_prompt = e_len(&prompt);
    let cold = sequential(std::slice::from_ref(&prompt), 32)
        .await
        .remove(0);
    assert_eq!(cold.timings.cached_tokens, 0);

    let e = engine(4);
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let (e, p) = (Arc::clone(&e), prompt.clone());
        tasks.push(tokio::spawn(async move {
            run(e.as_ref(), scored_request(&p, 32)).await
        }));
    }
    let mut copied = 0;
    for t in tasks {
        let got = t.await.expect("task");
        assert_same_but_for_ties(&got, &cold, "a sequence that shares the prompt");
        if got.timings.cached_tokens as usize == n_prompt - 1 {
            copied += 1;
        }
    }
    // The first to start evaluates the prompt; the others copy all of it but the last token.
    assert!(copied >= 3, "{copied} of 4 reused the prompt");

    // A different question after the same system prompt copies the system prompt from
    // whichever sequence holds it.
    let other = format!("{system}<|im_end|>\n<|im_start|>user\nadd a test<|im_end|>\n");
    let shared = common_prefix_len(&prompt, &other);
    let fresh_engine = engine(2);
    // The first is queued before the second: the second copies the system prompt from it,
    // waiting for its evaluation if it is still under way.
    let first = fresh_engine
        .generate(text_request(&prompt, 200))
        .await
        .expect("generate");
    let second = run(fresh_engine.as_ref(), scored_request(&other, 8)).await;
    assert!(
        second.timings.cached_tokens as usize >= shared.min(n_prompt - 1) - 2,
        "the second request reused {} of {shared} shared tokens",
        second.timings.cached_tokens
    );
    let alone = sequential(std::slice::from_ref(&other), 8).await.remove(0);
    assert_same_but_for_ties(&second, &alone, "a sequence that copied a prefix");
    drop(first);
}

fn e_len(prompt: &str) -> usize {
    engine(1).tokenize(prompt).expect("tokenize").len()
}

/// Tokens two prompts share from the start.
fn common_prefix_len(a: &str, b: &str) -> usize {
    let e = engine(1);
    let (ta, tb) = (
        e.tokenize(a).expect("tokenize"),
        e.tokenize(b).expect("tokenize"),
    );
    ta.iter().zip(&tb).take_while(|(x, y)| x == y).count()
}

/// A grammar that never lets the model end, so only max_tokens stops it.
fn endless() -> GrammarSpec {
    GrammarSpec::Strict {
        gbnf: "root ::= [a-z] root".to_owned(),
        root: "root".to_owned(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_long_prompt_admitted_mid_generation_does_not_stall_the_others() {
    let long = "<|im_start|>user\n".to_owned() + &"a long pasted file line\n".repeat(30);
    let n_long = engine(1).tokenize(&long).expect("tokenize").len();
    let chunk = 16u32;
    // Tokens the running stream generated while the long prompt was evaluated, counted by the
    // engine itself (its progress), so a slow reader cannot blur them.
    let mut during = Vec::new();
    for prefill_chunk in [chunk, 4096] {
        let e = engine_with(2, |o| {
            o.prefill_chunk = prefill_chunk;
            o.n_batch = 2048;
        });
        let mut req = text_request(&prompts(1)[0], 400);
        req.grammar = Some(endless());
        let mut a = e.generate(req).await.expect("generate");
        assert!(matches!(a.next().await, Some(GenEvent::Text { .. })));
        let progress = Arc::clone(&a.progress);
        let reader = tokio::spawn(async move { while a.next().await.is_some() {} });
        let before = progress.generated();
        let mut b = e.generate(text_request(&long, 4)).await.expect("generate");
        match b.next().await {
            Some(GenEvent::Text { .. } | GenEvent::Done { .. }) => {}
            other => panic!("the long prompt's stream: {other:?}"),
        }
        during.push(progress.generated() - before);
        drop(b);
        reader.abort();
    }
    let (chunked, whole) = (during[0] as usize, during[1] as usize);
    // About one generated token per chunk of the long prompt...
    let steps = n_long / chunk as usize;
    assert!(
        chunked >= steps / 2,
        "{chunked} tokens of the other stream while {n_long} prompt tokens were evaluated in chunks of {chunk}"
    );
    // ...and hardly any when the whole prompt is one step.
    assert!(
        whole < steps / 4,
        "{whole} tokens while the whole prompt was evaluated in one step ({chunked} in chunks)"
    );
}

/// Prompts whose chunks, beside a generated token, make a step of 64 tokens or more: such a
/// step decodes the generated tokens and the prompt chunks as two batches.
fn long_prompts(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let file = format!("line {i} of a pasted file\n").repeat(24);
            format!(
                "<|im_start|>user\n{file}Summarise file {i}.<|im_end|>\n<|im_start|>assistant\n"
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn long_prompts_admitted_mid_generation_are_decoded_apart_and_equal_sequential_ones() {
    let long = long_prompts(3);
    let want = sequential(&long, 32).await;
    // With flash attention off there are no attention tiles to spoil: such steps stay whole.
    for flash_attn in [FlashAttn::Auto, FlashAttn::Off] {
        let e = engine_with(4, |o| {
            o.prefill_chunk = 96;
            o.attention.flash_attn = flash_attn;
        });
        // A stream that generates until dropped, so every step holds one of its tokens.
        let mut req = text_request(&prompts(1)[0], 400);
        req.grammar = Some(endless());
        let mut g = e.generate(req).await.expect("generate");
        assert!(matches!(g.next().await, Some(GenEvent::Text { .. })));
        let reader = tokio::spawn(async move { while g.next().await.is_some() {} });
        let splits = e.split_steps();
        let tasks: Vec<_> = long
            .iter()
            .map(|p| {
                let (e, p) = (Arc::clone(&e), p.clone());
                tokio::spawn(async move { run(e.as_ref(), scored_request(&p, 32)).await })
            })
            .collect();
        for (i, t) in tasks.into_iter().enumerate() {
            let got = t.await.expect("task");
            assert_same_but_for_ties(&got, &want[i], &format!("{flash_attn}: long prompt {i}"));
        }
        let split = e.split_steps() > splits;
        assert_eq!(
            split,
            flash_attn != FlashAttn::Off,
            "{flash_attn}: steps decoded as two batches: {}",
            e.split_steps() - splits
        );
        reader.abort();
    }
}

#[tokio::test]
async fn the_per_sequence_and_total_contexts_are_reported_and_enforced() {
    let e = engine_with(2, |o| o.n_ctx = Some(512));
    assert_eq!(e.info().n_ctx, 256, "the total divided among the slots");
    assert_eq!(e.info().n_ctx_total, 512);
    let prompt = prompts(1).remove(0);
    let n = e.tokenize(&prompt).expect("tokenize").len() as u32;
    match e.generate(text_request(&prompt, 300)).await {
        Err(EngineError::ContextExceeded {
            prompt_tokens,
            max_tokens,
            n_ctx,
        }) => {
            assert_eq!((prompt_tokens, max_tokens, n_ctx), (n, 300, 256));
        }
        other => panic!("expected ContextExceeded, got {other:?}"),
    }
    let mut fits = text_request(&prompt, 256 - n);
    fits.grammar = Some(endless());
    let ok = run(e.as_ref(), fits).await;
    assert_eq!(ok.reason, StopReason::MaxTokens);
    assert_eq!(ok.timings.generated_tokens, 256 - n);

    let e = engine_with(2, |o| {
        o.n_ctx = Some(512);
        o.n_ctx_seq = Some(1024);
    });
    assert_eq!(e.info().n_ctx, 512, "a sequence never exceeds the total");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn requests_wait_for_room_when_their_reservations_overfill_the_context() {
    // Each request reserves its prompt and 200 tokens, over half of the 400 cells: two
    // cannot run at once.
    let e = engine_with(2, |o| {
        o.n_ctx = Some(400);
        o.n_ctx_seq = Some(300);
    });
    let ps = prompts(2);
    let request = |p: &str| {
        let mut r = text_request(p, 200);
        r.grammar = Some(endless());
        r
    };
    let mut want = Vec::new();
    for p in &ps {
        want.push(run(engine(1).as_ref(), request(p)).await);
    }
    let mut gens = Vec::new();
    for p in &ps {
        gens.push(e.generate(request(p)).await.expect("generate"));
    }
    let progress: Vec<_> = gens.iter().map(|g| Arc::clone(&g.progress)).collect();
    let mut tasks = Vec::new();
    for (i, mut g) in gens.into_iter().enumerate() {
        let other = Arc::clone(&progress[1 - i]);
        tasks.push(tokio::spawn(async move {
            // Whether the other request was already done when this one generated its first
            // token: the engine lets go of a job before it starts the next.
            let mut other_done_first = None;
            let mut tokens = Vec::new();
            while let Some(ev) = g.next().await {
                match ev {
                    GenEvent::Text { tokens: t, .. } => {
                        other_done_first.get_or_insert_with(|| other.is_finished());
                        tokens.extend(t);
                    }
                    GenEvent::Done { reason, .. } => assert_eq!(reason, StopReason::MaxTokens),
                    GenEvent::Failed { error, .. } => panic!("{error}"),
                }
            }
            (other_done_first.expect("text"), tokens)
        }));
    }
    let a = tasks.remove(0).await.expect("task");
    let b = tasks.remove(0).await.expect("task");
    assert_eq!(a.1, want[0].tokens);
    assert_eq!(b.1, want[1].tokens);
    // One ran after the other.
    assert!(a.0 != b.0, "the two overlapped");
}

/// Runs `req` with lookup decoding `lookup` on a fresh one-slot engine.
async fn with_lookup(lookup: models::Lookup, req: models::GenerateRequest) -> Output {
    let e = engine_with(1, |o| o.lookup = lookup);
    run(e.as_ref(), req).await
}

#[tokio::test]
async fn lookup_decoding_changes_no_token_greedy_or_seeded() {
    // A prompt the reply copies from: n-gram drafts come from it.
    let prompt = "<|im_start|>user\nRepeat: the quick brown fox jumps over the lazy dog. \
                  the quick brown fox jumps over the lazy dog.<|im_end|>\n<|im_start|>assistant\n";
    let mut seeded = text_request(prompt, 120);
    seeded.sampling.temperature = 0.8;
    seeded.sampling.seed = Some(7);
    // A grammar that makes the reply repeat itself, so drafts are certain to come.
    let mut repeating = text_request(prompt, 120);
    repeating.grammar = Some(GrammarSpec::Strict {
        gbnf: "root ::= \"abc \" root".to_owned(),
        root: "root".to_owned(),
    });
    let mut drafted = 0;
    let mut accepted = 0;
    for req in [text_request(prompt, 120), seeded, repeating] {
        let off = with_lookup(models::Lookup::Off, req.clone()).await;
        // Auto drafts as the step times it measures make worth it (timing-dependent, so only
        // its output is checked); On drafts at every step.
        let auto = with_lookup(models::Lookup::Auto, req.clone()).await;
        assert_eq!(auto.tokens, off.tokens, "lookup auto changed the output");
        assert!(auto.timings.draft_accepted <= auto.timings.draft_tokens);
        let on = with_lookup(models::Lookup::On, req).await;
        assert_eq!(on.tokens, off.tokens, "lookup decoding changed the output");
        assert_eq!(on.reason, off.reason);
        assert_eq!(off.timings.draft_tokens, 0);
        assert!(on.timings.draft_accepted <= on.timings.draft_tokens);
        drafted += on.timings.draft_tokens;
        accepted += on.timings.draft_accepted;
    }
    assert!(
        accepted > 20,
        "{accepted} of {drafted} drafted tokens accepted"
    );
}
