//! Profiles: the built-in files parse, select their model by GGUF metadata, and bad profile
//! text is a typed error.

mod common;

use models::gguf;
use models::{GrammarMode, Profile, ProfileError};

#[test]
fn builtins_parse() {
    let all = Profile::builtins().expect("built-in profiles parse");
    let names: Vec<_> = all.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "smollm2-135m-instruct",
            "gemma3-270m",
            "qwen2.5-coder-0.5b-instruct",
            "qwen2.5-coder-1.5b-instruct"
        ]
    );
    let (tuned, coders) = all.split_at(2);
    for p in tuned {
        assert_eq!(p.protocol, "text");
        assert_eq!(p.agent_protocol, "text");
        // Tuned: the shipped profiles carry what `bellows tune` chose and measured.
        assert_eq!(p.grammar, GrammarMode::Strict);
        assert_eq!(p.actions_per_turn, Some(1));
        let m = &p.measured;
        assert!(m.conversion_rate.is_some() && m.prompts_sha256.is_some() && m.date.is_some());
        assert!(p.n_ctx.is_some());
        assert!(!p.stop.is_empty());
    }
    // The Qwen coders ship untuned: Hermes calls through their own template, greedy, no
    // reasoning markers; what they carry is the agent bench's figures they were chosen by
    // (benches/README.md, session 28), and no tuning figures.
    let summaries: Vec<_> = coders
        .iter()
        .map(|p| p.measured.agent_summary().expect("agent figures"))
        .collect();
    assert_eq!(
        summaries,
        [
            "agent bench benches/agent-tasks: solved 11/29, pass@1 7/29 (4 attempts, 0 false \
             successes; 2026-12-06, bellows 0.1.0)",
            "agent bench benches/agent-tasks: solved 24/29, pass@1 22/29 (4 attempts, 0 false \
             successes; 2026-12-06, bellows 0.1.0)",
        ]
    );
    for p in coders {
        assert_eq!(p.protocol, "hermes");
        // The agent bench picked whole-file edits for them.
        assert_eq!(p.agent_protocol, "whole");
        assert_eq!(p.tools, "template");
        assert_eq!(p.chat_template, None);
        assert_eq!(p.reasoning, models::ReasoningSpec::Off);
        assert_eq!(p.sampling.temperature, 0.0);
        assert_eq!(p.measured.conversion_rate, None);
        assert!(p.measured.agent_binary.is_some());
        assert!(p.stop.iter().any(|s| s == "<|im_end|>"));
        assert_eq!(p.matcher.sha256.len(), 1);
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
    // The shipped Qwen GGUFs' names, a requantization of each, and near misses: another size,
    // the base model, another family.
    for (name, profile) in [
        (
            "Qwen2.5 Coder 0.5B Instruct AWQ",
            "qwen2.5-coder-0.5b-instruct",
        ),
        (
            "Qwen2.5 Coder 1.5B Instruct GGUF",
            "qwen2.5-coder-1.5b-instruct",
        ),
        ("qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-0.5b-instruct"),
        (
            "Qwen2.5-Coder-1.5B-Instruct Q8_0",
            "qwen2.5-coder-1.5b-instruct",
        ),
        ("Qwen2.5 Coder 7B Instruct", "generic"),
        ("Qwen2.5 Coder 0.5B", "generic"),
        ("Qwen2.5 0.5B Instruct", "generic"),
    ] {
        info.metadata.insert(
            "general.name".to_owned(),
            gguf::MetaValue::Str(name.to_owned()),
        );
        assert_eq!(
            Profile::select(&info).expect("select").name,
            profile,
            "{name}"
        );
    }
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
        Profile::parse("x", "[generation]\nagent_protocol = \"diff\"\n"),
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

/// `generation.reasoning` unnamed is the known families' markers; a pair replaces them; `[]`
/// turns reasoning off; anything else is refused.
#[test]
fn reasoning_markers_are_known_a_pair_or_off() {
    use models::ReasoningSpec;
    let spec = |toml: &str| Profile::parse("r", toml).map(|p| p.reasoning);
    assert_eq!(spec("").expect("parse"), ReasoningSpec::Known);
    assert_eq!(Profile::generic().reasoning, ReasoningSpec::Known);
    assert_eq!(
        spec("[generation]\nreasoning = [\"[THINK]\", \"[/THINK]\"]\n").expect("parse"),
        ReasoningSpec::Pair {
            open: "[THINK]".to_owned(),
            close: "[/THINK]".to_owned()
        }
    );
    assert_eq!(
        spec("[generation]\nreasoning = []\n").expect("parse"),
        ReasoningSpec::Off
    );
    for bad in ["[\"<think>\"]", "[\"\", \"x\"]", "[\"a\", \"b\", \"c\"]"] {
        assert!(matches!(
            spec(&format!("[generation]\nreasoning = {bad}\n")),
            Err(ProfileError::Invalid { .. })
        ));
    }
    assert!(matches!(
        spec("[generation]\nreasoning = []\nstarts_in_reasoning = true\n"),
        Err(ProfileError::Invalid { .. })
    ));
    let inside = Profile::parse("r", "[generation]\nstarts_in_reasoning = true\n").expect("parse");
    assert!(inside.starts_in_reasoning);
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
        (
            "[measured]\nagent_tasks = 29\nagent_solved = 30\n",
            "agent_solved 30 is more than agent_tasks 29",
        ),
        ("[measured]\nagent_solved = 3\n", "need agent_tasks"),
    ] {
        let e = Profile::parse("bad", bad).expect_err(bad).to_string();
        assert!(e.contains(what), "{bad}: {e}");
    }
}
