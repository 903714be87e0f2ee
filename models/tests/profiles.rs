//! Profiles: the built-in files parse, select their model by GGUF metadata, and bad profile
//! text is a typed error.

mod common;

use models::gguf;
use models::{GrammarMode, Profile, ProfileError};

#[test]
fn builtins_parse() {
    let all = Profile::builtins().expect("built-in profiles parse");
    let names: Vec<_> = all.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["smollm2-135m-instruct", "gemma3-270m"]);
    for p in &all {
        assert_eq!(p.protocol, "text");
        // Tuned: the shipped profiles carry what `bellows tune` chose and measured.
        assert_eq!(p.grammar, GrammarMode::Strict);
        assert_eq!(p.actions_per_turn, Some(1));
        let m = &p.measured;
        assert!(m.conversion_rate.is_some() && m.prompts_sha256.is_some() && m.date.is_some());
        assert!(p.n_ctx.is_some());
        assert!(!p.stop.is_empty());
    }
}

#[test]
fn unknown_model_gets_the_generic_profile() {
    let info = gguf::inspect(&common::tiny()).expect("inspect");
    assert_eq!(info.name(), Some("tiny-random-llama"));
    let p = Profile::select(&info).expect("select");
    assert_eq!(p.name, "generic");
    assert_eq!(p.chat_template, None);
}

#[test]
fn selection_by_general_name() {
    let mut info = gguf::inspect(&common::tiny()).expect("inspect");
    info.metadata.insert(
        "general.name".to_owned(),
        gguf::MetaValue::Str("Gemma 3 270m".to_owned()),
    );
    assert_eq!(Profile::select(&info).expect("select").name, "gemma3-270m");
    info.metadata.insert(
        "general.name".to_owned(),
        gguf::MetaValue::Str("SmolLM2 135M Instruct (requantized)".to_owned()),
    );
    assert_eq!(
        Profile::select(&info).expect("select").name,
        "smollm2-135m-instruct"
    );
}

#[test]
fn bad_profiles_are_typed_errors() {
    assert!(matches!(
        Profile::parse("x", "[generation\n"),
        Err(ProfileError::Parse { .. })
    ));
    assert!(matches!(
        Profile::parse("x", "colour = 3\n"),
        Err(ProfileError::Parse { .. })
    ));
    assert!(matches!(
        Profile::parse("x", "[generation]\ngrammar = \"sometimes\"\n"),
        Err(ProfileError::Parse { .. })
    ));
    assert!(matches!(
        Profile::parse("x", "[sampling]\ntemperature = -1.0\n"),
        Err(ProfileError::Invalid { .. })
    ));
    assert!(matches!(
        Profile::parse("x", "[match]\nsha256 = [\"abc\"]\n"),
        Err(ProfileError::Invalid { .. })
    ));
    assert!(matches!(
        Profile::named("nope"),
        Err(ProfileError::Unknown { .. })
    ));
    assert!(matches!(
        Profile::named("/no/such/profile.toml"),
        Err(ProfileError::Io { .. })
    ));
    let p = Profile::parse("mine", "[generation]\nprotocol = \"hermes\"\ngrammar = \"lazy\"\nstop = [\"</tool_call>\"]\n[measured]\nconversion_rate = 0.5\n").expect("parse");
    assert_eq!(p.protocol, "hermes");
    assert_eq!(p.grammar, GrammarMode::Lazy);
    assert_eq!(p.measured.conversion_rate, Some(0.5));
}

#[test]
fn tuned_settings_and_measured_figures_parse_and_bad_ones_are_refused() {
    let p = Profile::parse(
        "tuned",
        "[generation]\nprompt = \"example\"\ntools = \"system\"\nactions_per_turn = 1\n\
         [measured]\nconversion_rate = 0.9\nright_action_rate = 0.5\necho_decodes = 0\n\
         configuration = \"text/example/T0/strict/a1/system\"\ndate = \"2026-12-01\"\n",
    )
    .expect("parse");
    assert_eq!((p.prompt.as_str(), p.tools.as_str()), ("example", "system"));
    assert_eq!(p.actions_per_turn, Some(1));
    assert_eq!(p.measured.right_action_rate, Some(0.5));
    assert_eq!(p.measured.echo_decodes, Some(0));
    let defaults = Profile::parse("plain", "").expect("parse");
    assert_eq!(
        (defaults.prompt.as_str(), defaults.tools.as_str()),
        ("full", "template")
    );
    assert_eq!(defaults.actions_per_turn, None);
    for (bad, what) in [
        ("[generation]\nprompt = \"chatty\"\n", "generation.prompt"),
        ("[generation]\ntools = \"inline\"\n", "generation.tools"),
        ("[measured]\nright_action_rate = 1.5\n", "right_action_rate"),
        ("[measured]\nsomething = 1\n", "something"),
    ] {
        let e = Profile::parse("bad", bad).expect_err(bad).to_string();
        assert!(e.contains(what), "{bad}: {e}");
    }
}
