//! llama-server's DRY sampler fields on the scripted engine: bad values are a 400 naming the
//! field on both generation endpoints, good ones reach the engine, and a profile's `[sampling]`
//! DRY keys are the defaults a request's own values override.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use common::*;
use gateway::defaults::Defaults;
use gateway::state::AppState;
use models::{Dry, GrammarMode, Profile, Sampling, ScriptedEngine};

fn completion_body(extra: &str) -> String {
    format!(r#"{{"model":"{MODEL}","prompt":"def f():",{extra}}}"#)
}

/// The same extra fields as a chat and as a completion request.
fn both(extra: &str) -> [(&'static str, String); 2] {
    [
        ("/v1/chat/completions", chat_body(extra)),
        ("/v1/completions", completion_body(extra)),
    ]
}

async fn server_with(engine: Arc<ScriptedEngine>, defaults: Defaults) -> TestServer {
    start_state(
        AppState::new(engine)
            .with_ids(gateway::ids::IdGen::sequential())
            .with_defaults(defaults),
    )
    .await
}

/// The DRY settings of each request the engine saw, in order.
fn seen_dry(e: &ScriptedEngine) -> Vec<Dry> {
    e.seen
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.sampling.dry.clone())
        .collect()
}

#[tokio::test]
async fn each_bad_dry_value_is_a_400_naming_its_field() {
    let seventeen = format!(
        r#""dry_sequence_breakers":[{}]"#,
        vec![r#""x""#; 17].join(",")
    );
    let too_long = format!(r#""dry_sequence_breakers":["{}"]"#, "y".repeat(41));
    let cases: Vec<(String, &str)> = vec![
        (r#""dry_multiplier":-0.5"#.into(), "dry_multiplier"),
        (r#""dry_multiplier":"high""#.into(), "dry_multiplier"),
        (r#""dry_base":0.5"#.into(), "dry_base"),
        (r#""dry_base":-1.75"#.into(), "dry_base"),
        (r#""dry_allowed_length":-1"#.into(), "dry_allowed_length"),
        (
            r#""dry_allowed_length":100000"#.into(),
            "dry_allowed_length",
        ),
        (r#""dry_allowed_length":2.5"#.into(), "dry_allowed_length"),
        (r#""dry_penalty_last_n":-2"#.into(), "dry_penalty_last_n"),
        (r#""dry_penalty_last_n":1e12"#.into(), "dry_penalty_last_n"),
        (
            r#""dry_sequence_breakers":"\n""#.into(),
            "dry_sequence_breakers",
        ),
        (
            r#""dry_sequence_breakers":["\n",7]"#.into(),
            "dry_sequence_breakers[1]",
        ),
        (
            r#""dry_sequence_breakers":[""]"#.into(),
            "dry_sequence_breakers",
        ),
        (
            r#""dry_sequence_breakers":["a\u0000b"]"#.into(),
            "dry_sequence_breakers",
        ),
        (seventeen, "dry_sequence_breakers"),
        (too_long, "dry_sequence_breakers"),
    ];
    let (server, engine) = start("ok").await;
    for (extra, param) in &cases {
        for (path, body) in both(extra) {
            let r = server.post(path, &body).await;
            assert_eq!(r.status, 400, "{path} {extra}: {}", r.text());
            let err = &r.json()["error"];
            assert_eq!(err["type"], "invalid_request_error", "{path} {extra}");
            assert_eq!(err["param"], *param, "{path} {extra}: {err}");
            assert_eq!(err["code"], "invalid_value", "{path} {extra}");
        }
    }
    assert!(
        engine.seen.lock().unwrap().is_empty(),
        "no bad request reached the engine"
    );
    // The edges of each range are served.
    let edges = [
        r#""dry_multiplier":0,"dry_base":1,"dry_allowed_length":0,"dry_penalty_last_n":-1"#,
        r#""dry_multiplier":5,"dry_base":4,"dry_allowed_length":1024,"dry_penalty_last_n":0"#,
        r#""dry_sequence_breakers":[]"#,
    ];
    for extra in edges {
        for (path, body) in both(extra) {
            let r = server.post(path, &body).await;
            assert_eq!(r.status, 200, "{path} {extra}: {}", r.text());
        }
    }
    server.stop().await.unwrap();
}

#[tokio::test]
async fn dry_fields_reach_the_engine_from_both_endpoints() {
    let (server, engine) = start("ok").await;
    let extra = r#""dry_multiplier":0.8,"dry_base":2.0,"dry_allowed_length":3,"dry_penalty_last_n":256,"dry_sequence_breakers":["\n","```"]"#;
    for (path, body) in both(extra) {
        let r = server.post(path, &body).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text());
    }
    // Without the fields: llama.cpp's defaults, with DRY off.
    server.post("/v1/chat/completions", &chat_body("")).await;
    let want = Dry {
        multiplier: 0.8,
        base: 2.0,
        allowed_length: 3,
        penalty_last_n: 256,
        sequence_breakers: vec!["\n".to_owned(), "```".to_owned()],
    };
    assert_eq!(seen_dry(&engine), [want.clone(), want, Dry::default()]);
    assert_eq!(
        Dry::default().sequence_breakers,
        ["\n", ":", "\"", "*"],
        "llama.cpp's default breakers"
    );
    assert!(!Dry::default().is_on());
    server.stop().await.unwrap();
}

#[tokio::test]
async fn profile_dry_keys_are_defaults_that_a_request_overrides() {
    let profile = Profile::parse(
        "dry",
        "[sampling]\ndry_multiplier = 0.8\ndry_base = 2.5\ndry_allowed_length = 4\n\
         dry_penalty_last_n = 512\ndry_sequence_breakers = [\"\\n\", \"}\"]\n",
    )
    .expect("a profile with DRY keys parses");
    let from_profile = Dry {
        multiplier: 0.8,
        base: 2.5,
        allowed_length: 4,
        penalty_last_n: 512,
        sequence_breakers: vec!["\n".to_owned(), "}".to_owned()],
    };
    assert_eq!(profile.sampling.dry, from_profile);

    let engine = scripted("ok");
    let server = server_with(engine.clone(), Defaults::of_profile(&profile)).await;
    for (path, body) in both(r#""temperature":0"#) {
        let r = server.post(path, &body).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text());
    }
    // A request's own value wins, field by field; the rest stay the profile's.
    let r = server
        .post(
            "/v1/chat/completions",
            &chat_body(r#""dry_multiplier":0,"dry_sequence_breakers":["*"]"#),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let r = server
        .post(
            "/v1/completions",
            &completion_body(r#""dry_allowed_length":1,"dry_penalty_last_n":-1"#),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    // A bad value is refused even where the profile's own values are good.
    let r = server
        .post("/v1/chat/completions", &chat_body(r#""dry_base":0.9"#))
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["error"]["param"], "dry_base");
    assert_eq!(
        seen_dry(&engine),
        [
            from_profile.clone(),
            from_profile.clone(),
            Dry {
                multiplier: 0.0,
                sequence_breakers: vec!["*".to_owned()],
                ..from_profile.clone()
            },
            Dry {
                allowed_length: 1,
                penalty_last_n: -1,
                ..from_profile
            },
        ]
    );
    server.stop().await.unwrap();

    // Built in code rather than parsed, the defaults take the same path.
    let engine = scripted("ok");
    let pinned = Defaults::from_profile(
        "text",
        Sampling {
            dry: Dry {
                multiplier: 1.5,
                ..Dry::default()
            },
            ..Sampling::default()
        },
        GrammarMode::Off,
    );
    let server = server_with(engine.clone(), pinned).await;
    server.post("/v1/chat/completions", &chat_body("")).await;
    assert_eq!(seen_dry(&engine)[0].multiplier, 1.5);
    server.stop().await.unwrap();
}
