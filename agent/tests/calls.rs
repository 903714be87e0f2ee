//! The `tools` protocol: the builtins offered through the chat template's `tools`, the model's
//! Hermes `<tool_call>` replies decoded into the same actions, observations sent back as
//! `tool` messages — live and after a resume.

#![allow(clippy::unwrap_used)] // Tests fail loudly on the first surprise.

mod common;

use agent::{ApprovalMode, Config, Policy, Protocol, StopReason};
use common::{engine, repo, resume, session};
use models::{Prompt, ScriptedEngine};

fn cfg(task: &str, mode: ApprovalMode) -> Config {
    let mut c = Config::new(task, Policy::new(mode));
    c.protocol = Protocol::Tools;
    c.max_turns = 4;
    c.reply_reserve = 300;
    c
}

/// Each request's tool names and its messages' roles.
fn seen(e: &ScriptedEngine) -> Vec<(Vec<String>, Vec<String>)> {
    e.seen
        .lock()
        .unwrap()
        .iter()
        .map(|r| match &r.prompt {
            Prompt::Chat { messages, tools } => (
                tools.iter().map(|t| t.name.clone()).collect(),
                messages.iter().map(|m| m.role.clone()).collect(),
            ),
            Prompt::Text(_) => panic!("a chat prompt"),
        })
        .collect()
}

fn call(name: &str, args: &str) -> String {
    format!("<tool_call>\n{{\"name\": \"{name}\", \"arguments\": {args}}}\n</tool_call>")
}

#[test]
fn tool_calls_act_and_their_results_go_back_as_tool_messages() {
    let dir = repo("calls", &[("a.py", "x = 1\n")]);
    let edit = call(
        "edit",
        r#"{"path": "a.py", "blocks": [{"search": "x = 1\n", "replace": "x = 2\n"}]}"#,
    );
    let done = call("done", r#"{"summary": "x is 2"}"#);
    let e = engine(&[edit.as_str(), done.as_str()]);
    let out = session(
        &e,
        dir.path(),
        &cfg("set x to 2 in a.py", ApprovalMode::Auto),
    );
    assert_eq!(out.reason, StopReason::Done);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.py")).unwrap(),
        "x = 2\n"
    );
    let seen = seen(&e);
    let (tools, roles) = &seen[1];
    assert!(tools.iter().any(|t| t == "edit") && tools.iter().any(|t| t == "run"));
    assert_eq!(roles, &["system", "user", "assistant", "tool"]);
}

#[test]
fn plan_mode_offers_only_the_looking_tools() {
    let dir = repo("calls-plan", &[("a.py", "x = 1\n")]);
    let e = engine(&[call("read", r#"{"path": "a.py"}"#).as_str()]);
    let mut c = cfg("what is x", ApprovalMode::Plan);
    c.max_turns = 1;
    session(&e, dir.path(), &c);
    let (tools, _) = &seen(&e)[0];
    assert_eq!(tools, &["read", "list", "glob", "grep", "done"]);
}

#[test]
fn a_reply_without_a_call_is_told_so_and_a_resume_keeps_the_protocol() {
    let dir = repo("calls-resume", &[("a.py", "x = 1\n")]);
    let e = engine(&["I would change x."]);
    let mut c = cfg("set x to 2 in a.py", ApprovalMode::Auto);
    c.max_turns = 1;
    let first = session(&e, dir.path(), &c);
    let create = call("create", r#"{"path": "a.py", "content": "x = 2\n"}"#);
    let done = call("done", r#"{"summary": "done"}"#);
    let e2 = engine(&[create.as_str(), done.as_str()]);
    let mut text = c.clone();
    text.protocol = Protocol::Text;
    text.max_turns = 3;
    let out = resume(&e2, dir.path(), &text, &first.session);
    assert_eq!(out.reason, StopReason::Done);
    let seen = seen(&e2);
    let (tools, roles) = &seen[0];
    assert!(
        tools.iter().any(|t| t == "create"),
        "the tools protocol resumed"
    );
    assert_eq!(roles, &["system", "user", "assistant", "tool"]);
    let prompts = common::prompts(&e2);
    assert!(
        prompts[0].contains("no tool call found in your reply"),
        "{}",
        prompts[0]
    );
}
