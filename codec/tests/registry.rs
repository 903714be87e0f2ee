//! The registry table and what is generated from it: the GBNF file, the JSON schemas, the
//! system prompt, argument validation, client tools and the verb-line grammar.

use codec::action::GoldError;
use codec::registry::{BUILTINS, RegistryError};
use codec::{Action, FailureKind, Registry};
use serde_json::{Value, json};

/// Renders a validation outcome as one line, so cases read as data.
fn outcome(r: Result<(Action, Vec<codec::RepairKind>), FailureKind>) -> String {
    match r {
        Ok((a, repairs)) => {
            let repairs: Vec<&str> = repairs.iter().map(|r| r.as_str()).collect();
            format!("ok {} [{}]", a.to_json(), repairs.join(","))
        }
        Err(kind) => format!("err {kind}"),
    }
}

fn check(reg: &Registry, name: &str, args: Value, expect: &str) {
    let got = outcome(reg.validate(name, &args));
    assert_eq!(got, expect, "validate({name}, {args})");
}

#[test]
fn gbnf_file_matches_generator() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../grammars/text-protocol.gbnf");
    let generated = Registry::builtin().text_protocol_gbnf();
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        // Under CI this would rewrite the file instead of checking it.
        assert!(
            std::env::var_os("CI").is_none(),
            "UPDATE_EXPECT is set under CI: the grammar would be rewritten, not checked"
        );
        std::fs::write(&path, &generated).expect("write grammars/text-protocol.gbnf");
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == generated,
        "grammars/text-protocol.gbnf is out of date; rerun with UPDATE_EXPECT=1"
    );
}

/// Every rule the grammar references is defined, `root` exists, and every verb has a rule.
#[test]
fn gbnf_rules_are_closed() {
    let g = Registry::builtin().text_protocol_gbnf();
    let mut defined = Vec::new();
    let mut bodies = Vec::new();
    for line in g
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let (name, body) = line
            .split_once(" ::= ")
            .expect("every rule line is `name ::= body`");
        defined.push(name.to_owned());
        bodies.push(body.to_owned());
    }
    assert!(defined.iter().any(|d| d == "root"));
    for body in &bodies {
        // Strip quoted literals and character classes, then what is left are rule names.
        let mut plain = String::new();
        let mut chars = body.chars();
        while let Some(c) = chars.next() {
            match c {
                '"' => {
                    while let Some(d) = chars.next() {
                        if d == '\\' {
                            chars.next();
                        } else if d == '"' {
                            break;
                        }
                    }
                    plain.push(' ');
                }
                '[' => {
                    while let Some(d) = chars.next() {
                        if d == '\\' {
                            chars.next();
                        } else if d == ']' {
                            break;
                        }
                    }
                    plain.push(' ');
                }
                // A `{m,n}` repetition bound holds numbers, not rule names.
                '{' => {
                    for d in chars.by_ref() {
                        if d == '}' {
                            break;
                        }
                    }
                    plain.push(' ');
                }
                c if c.is_ascii_alphanumeric() || c == '-' => plain.push(c),
                _ => plain.push(' '),
            }
        }
        for name in plain.split_whitespace() {
            assert!(
                defined.iter().any(|d| d == name),
                "rule {name:?} used but not defined"
            );
        }
    }
    for t in BUILTINS {
        assert!(
            g.contains(&format!("\"{}", t.verb)),
            "no rule writes verb {}",
            t.verb
        );
    }
}

#[test]
fn schemas_are_generated_from_the_table() {
    let schemas = Registry::builtin().tool_schemas();
    let names: Vec<&str> = schemas.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "read", "list", "glob", "grep", "run", "delete", "mkdir", "move", "edit", "create",
            "done"
        ]
    );
    let read = &schemas[0];
    assert_eq!(read.parameters["required"], json!(["path"]));
    assert_eq!(read.parameters["properties"]["start"]["type"], "integer");
    let edit = schemas
        .iter()
        .find(|s| s.name == "edit")
        .expect("edit schema");
    assert_eq!(
        edit.parameters["properties"]["blocks"]["items"]["required"],
        json!(["search", "replace"])
    );
    // Every canonical action's arguments satisfy its own schema, and an extra key does not.
    let samples = [
        Action::Read {
            path: "a.py".into(),
            start: Some(1),
            end: Some(9),
        },
        Action::Run {
            argv: vec!["cargo".into(), "test".into()],
        },
        Action::Edit {
            path: "a.py".into(),
            blocks: vec![codec::Block {
                search: "x\n".into(),
                replace: "y\n".into(),
            }],
        },
        Action::Done {
            summary: "ok".into(),
        },
    ];
    for a in samples {
        let s = schemas
            .iter()
            .find(|s| s.name == a.name())
            .expect("schema for sample");
        let v = jsonschema::validator_for(&s.parameters).expect("generated schema compiles");
        assert!(
            v.is_valid(&a.arguments()),
            "{} arguments fail own schema",
            a.name()
        );
        let mut extra = a.arguments();
        extra["bogus"] = json!(1);
        assert!(!v.is_valid(&extra));
    }
}

#[test]
fn system_prompt_teaches_every_verb() {
    let mut reg = Registry::builtin();
    let p = reg.system_prompt();
    for t in BUILTINS {
        assert!(
            p.contains(&format!("{}  {}\n", t.syntax, t.hint)),
            "prompt lacks {}",
            t.verb
        );
    }
    assert!(p.contains("<<<<<<< SEARCH\n") && p.contains(">>>>>>> REPLACE\n"));
    assert!(
        !p.contains("<tool_call>"),
        "no client tools, no tool_call teaching"
    );
    reg.add_client_tool("weather", "Get the weather.", json!({"type": "object"}))
        .expect("add");
    let p = reg.system_prompt();
    assert!(p.contains("<tool_call>") && p.contains("weather  Get the weather."));
}

#[test]
fn builtin_validation() {
    let reg = Registry::builtin();
    let cases: &[(&str, Value, &str)] = &[
        (
            "read",
            json!({"path": "a.py"}),
            r#"ok {"name":"read","arguments":{"path":"a.py"}} []"#,
        ),
        (
            "read",
            json!({"end": 9, "path": "a.py", "start": 2}),
            r#"ok {"name":"read","arguments":{"path":"a.py","start":2,"end":9}} []"#,
        ),
        (
            "read",
            json!({"path": "a.py", "start": null}),
            r#"ok {"name":"read","arguments":{"path":"a.py"}} []"#,
        ),
        (
            "read",
            json!({"path": "a.py", "start": "2"}),
            "err bad_arguments",
        ),
        (
            "read",
            json!({"path": "a.py", "start": -1}),
            "err bad_arguments",
        ),
        ("read", json!({"path": 7}), "err bad_arguments"),
        ("read", json!({}), "err bad_arguments"),
        (
            "read",
            json!({"path": "a.py", "mode": "r"}),
            "err bad_arguments",
        ),
        ("read", json!("a.py"), "err bad_arguments"),
        (
            "read",
            json!({"file_path": "a.py"}),
            r#"ok {"name":"read","arguments":{"path":"a.py"}} [argument_alias]"#,
        ),
        (
            "read",
            json!({"file_path": "a.py", "path": "b.py"}),
            "err bad_arguments",
        ),
        (
            "Read",
            json!({"path": "a.py"}),
            r#"ok {"name":"read","arguments":{"path":"a.py"}} [argument_alias]"#,
        ),
        (
            "list",
            json!({"path": "."}),
            r#"ok {"name":"list","arguments":{"path":"."}} []"#,
        ),
        (
            "list",
            json!({"directory": "src"}),
            r#"ok {"name":"list","arguments":{"path":"src"}} [argument_alias]"#,
        ),
        (
            "glob",
            json!({"pattern": "**/*.rs"}),
            r#"ok {"name":"glob","arguments":{"pattern":"**/*.rs"}} []"#,
        ),
        (
            "grep",
            json!({"pattern": "fn main"}),
            r#"ok {"name":"grep","arguments":{"pattern":"fn main"}} []"#,
        ),
        (
            "grep",
            json!({"pattern": "x", "path": "src"}),
            r#"ok {"name":"grep","arguments":{"pattern":"x","path":"src"}} []"#,
        ),
        (
            "run",
            json!({"argv": ["ls", "-la"]}),
            r#"ok {"name":"run","arguments":{"argv":["ls","-la"]}} []"#,
        ),
        ("run", json!({"argv": []}), "err bad_arguments"),
        ("run", json!({"argv": "ls -la"}), "err bad_arguments"),
        ("run", json!({"argv": ["ls", 1]}), "err bad_arguments"),
        (
            "run",
            json!({"command": "python 'my script.py' -v"}),
            r#"ok {"name":"run","arguments":{"argv":["python","my script.py","-v"]}} [argument_alias]"#,
        ),
        (
            "run",
            json!({"command": ["pytest", "-q"]}),
            r#"ok {"name":"run","arguments":{"argv":["pytest","-q"]}} [argument_alias]"#,
        ),
        (
            "run",
            json!({"command": "cat a.txt | grep x"}),
            "err bad_arguments",
        ),
        (
            "run",
            json!({"command": "echo hi > out"}),
            "err bad_arguments",
        ),
        (
            "run",
            json!({"command": "echo 'unclosed"}),
            "err bad_arguments",
        ),
        (
            "run",
            json!({"argv": ["ls"], "cwd": "/"}),
            "err bad_arguments",
        ),
        (
            "delete",
            json!({"path": "a.py"}),
            r#"ok {"name":"delete","arguments":{"path":"a.py"}} []"#,
        ),
        (
            "mkdir",
            json!({"path": "src/x"}),
            r#"ok {"name":"mkdir","arguments":{"path":"src/x"}} []"#,
        ),
        (
            "move",
            json!({"to": "b", "from": "a"}),
            r#"ok {"name":"move","arguments":{"from":"a","to":"b"}} []"#,
        ),
        (
            "move",
            json!({"source": "a", "destination": "b"}),
            r#"ok {"name":"move","arguments":{"from":"a","to":"b"}} [argument_alias,argument_alias]"#,
        ),
        ("move", json!({"from": "a"}), "err bad_arguments"),
        (
            "edit",
            json!({"path": "a.py", "blocks": [{"search": "x\n", "replace": "y\n"}]}),
            r#"ok {"name":"edit","arguments":{"path":"a.py","blocks":[{"search":"x\n","replace":"y\n"}]}} []"#,
        ),
        (
            "edit",
            json!({"path": "a.py", "blocks": [{"search": "x\r\ny", "replace": "z\n"}, {"search": "q\n", "replace": ""}]}),
            r#"ok {"name":"edit","arguments":{"path":"a.py","blocks":[{"search":"x\ny\n","replace":"z\n"},{"search":"q\n","replace":""}]}} [crlf,missing_final_newline]"#,
        ),
        (
            "edit",
            json!({"file_path": "a.py", "old_string": "x\n", "new_string": "y\n"}),
            r#"ok {"name":"edit","arguments":{"path":"a.py","blocks":[{"search":"x\n","replace":"y\n"}]}} [argument_alias,argument_alias,argument_alias,argument_alias]"#,
        ),
        (
            "edit",
            json!({"path": "new.py", "blocks": [{"search": "", "replace": "print(1)\n"}]}),
            r#"ok {"name":"edit","arguments":{"path":"new.py","blocks":[{"search":"","replace":"print(1)\n"}]}} [empty_search_edit]"#,
        ),
        (
            "edit",
            json!({"path": "a.py", "blocks": [{"search": "", "replace": "a\n"}, {"search": "b\n", "replace": "c\n"}]}),
            r#"ok {"name":"edit","arguments":{"path":"a.py","blocks":[{"search":"","replace":"a\n"},{"search":"b\n","replace":"c\n"}]}} [empty_search_edit]"#,
        ),
        (
            "edit",
            json!({"path": "a.py", "blocks": []}),
            "err bad_block_count",
        ),
        (
            "edit",
            json!({"path": "a.py", "blocks": [{"search": "x\n"}]}),
            "err bad_arguments",
        ),
        (
            "edit",
            json!({"path": "a.py", "blocks": [{"search": "x\n", "replace": "y\n", "why": "z"}]}),
            "err bad_arguments",
        ),
        (
            "edit",
            json!({"path": "a.py", "blocks": "x"}),
            "err bad_arguments",
        ),
        (
            "edit",
            json!({"path": "a.py", "search": "x\n"}),
            "err bad_arguments",
        ),
        (
            "create",
            json!({"path": "a.py", "content": "x = 1"}),
            r#"ok {"name":"create","arguments":{"path":"a.py","content":"x = 1\n"}} [missing_final_newline]"#,
        ),
        (
            "create",
            json!({"path": "a.py", "content": ""}),
            r#"ok {"name":"create","arguments":{"path":"a.py","content":""}} []"#,
        ),
        (
            "create",
            json!({"path": "a.py", "file_text": "x\n"}),
            r#"ok {"name":"create","arguments":{"path":"a.py","content":"x\n"}} [argument_alias]"#,
        ),
        ("create", json!({"path": "a.py"}), "err bad_arguments"),
        (
            "done",
            json!({"summary": "fixed"}),
            r#"ok {"name":"done","arguments":{"summary":"fixed"}} []"#,
        ),
        ("done", json!({}), "err bad_arguments"),
        ("frobnicate", json!({}), "err unknown_tool"),
        ("", json!({}), "err unknown_tool"),
    ];
    for (name, args, expect) in cases {
        check(&reg, name, args.clone(), expect);
    }
}

#[test]
fn client_tools_are_first_class() {
    let mut reg = Registry::builtin();
    let schema = json!({
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
        "required": ["city"],
        "additionalProperties": false
    });
    assert!(!reg.is_known("weather"));
    reg.add_client_tool("weather", "Get the weather.", schema.clone())
        .expect("valid tool");
    assert!(reg.is_known("weather") && reg.is_known("read") && !reg.is_known("Weather"));
    check(
        &reg,
        "weather",
        json!({"city": "Oslo"}),
        r#"ok {"name":"weather","arguments":{"city":"Oslo"}} []"#,
    );
    check(
        &reg,
        "WEATHER",
        json!({"city": "Oslo"}),
        r#"ok {"name":"weather","arguments":{"city":"Oslo"}} [argument_alias]"#,
    );
    check(
        &reg,
        "weather",
        json!({"city": "Oslo", "days": 0}),
        "err bad_arguments",
    );
    check(
        &reg,
        "weather",
        json!({"town": "Oslo"}),
        "err bad_arguments",
    );
    check(&reg, "weather", json!("Oslo"), "err bad_arguments");
    assert_eq!(
        reg.tool_schemas().last().map(|s| s.parameters.clone()),
        Some(schema.clone())
    );

    let errs = [
        reg.add_client_tool("weather", "again", json!({"type": "object"})),
        reg.add_client_tool("READ", "shadows a builtin", json!({"type": "object"})),
    ];
    for e in errs {
        assert!(matches!(e, Err(RegistryError::NameClash(_))), "{e:?}");
    }
    for bad_name in ["", "has space", "x".repeat(65).as_str(), "semi;colon"] {
        let e = reg.add_client_tool(bad_name, "d", json!({"type": "object"}));
        assert!(
            matches!(e, Err(RegistryError::InvalidName(_))),
            "{bad_name:?}: {e:?}"
        );
    }
    for bad_schema in [
        json!("object"),
        json!({"type": "string"}),
        json!({"type": 5}),
        json!({"properties": {"a": {"minimum": "x"}}}),
    ] {
        let e = reg.add_client_tool("other", "d", bad_schema.clone());
        assert!(
            matches!(e, Err(RegistryError::InvalidSchema { .. })),
            "{bad_schema}: {e:?}"
        );
    }
    assert_eq!(reg.client_tools().len(), 1, "refused tools are not added");
}

#[test]
fn gold_entries() {
    let a = Action::from_gold(&json!({"name": "read", "arguments": {"path": "a.py", "start": 1}}));
    assert_eq!(
        a,
        Ok(Action::Read {
            path: "a.py".into(),
            start: Some(1),
            end: None
        })
    );
    let c = Action::from_gold(&json!({"name": "weather", "arguments": {"city": "Oslo"}}));
    assert_eq!(
        c,
        Ok(Action::Client {
            name: "weather".into(),
            arguments: json!({"city": "Oslo"})
        })
    );
    assert_eq!(
        Action::from_gold(&json!({"arguments": {}})),
        Err(GoldError::Shape)
    );
    assert_eq!(Action::from_gold(&json!(["read"])), Err(GoldError::Shape));
    assert_eq!(
        Action::from_gold(&json!({"name": "read", "arguments": {}})),
        Err(GoldError::Invalid {
            name: "read".into(),
            kind: FailureKind::BadArguments
        })
    );
    // The JSON form round-trips through from_gold for every builtin.
    let all = [
        Action::Read {
            path: "a".into(),
            start: None,
            end: Some(3),
        },
        Action::List { path: ".".into() },
        Action::Glob {
            pattern: "*".into(),
        },
        Action::Grep {
            pattern: "x".into(),
            path: Some("s".into()),
        },
        Action::Run {
            argv: vec!["ls".into()],
        },
        Action::Delete { path: "a".into() },
        Action::Mkdir { path: "d".into() },
        Action::Move {
            from: "a".into(),
            to: "b".into(),
        },
        Action::Edit {
            path: "a".into(),
            blocks: vec![codec::Block {
                search: "a\n".into(),
                replace: "".into(),
            }],
        },
        Action::Create {
            path: "a".into(),
            content: "x\n".into(),
        },
        Action::Done {
            summary: "s".into(),
        },
    ];
    assert_eq!(all.len(), BUILTINS.len());
    for a in all {
        assert_eq!(Action::from_gold(&a.to_json()).as_ref(), Ok(&a));
    }
}

#[test]
fn client_only_registry_frees_builtin_names() {
    let mut reg = codec::Registry::client_only();
    assert!(!reg.is_known("read"));
    assert_eq!(
        reg.validate("edit", &serde_json::json!({"path": "a"}))
            .expect_err("edit is not a client tool"),
        codec::FailureKind::UnknownTool
    );
    reg.add_client_tool(
        "read",
        "the client's own read",
        serde_json::json!({"type": "object", "properties": {"file": {"type": "string"}}, "required": ["file"]}),
    )
    .expect("a builtin name is free in a client-only registry");
    let (action, repairs) = reg
        .validate("read", &serde_json::json!({"file": "a.txt"}))
        .expect("valid against the client's schema");
    assert!(repairs.is_empty());
    assert_eq!(
        action,
        codec::Action::Client {
            name: "read".into(),
            arguments: serde_json::json!({"file": "a.txt"})
        }
    );
    assert_eq!(reg.resolve_name("READ"), Some(("read".to_owned(), false)));
    assert_eq!(reg.tool_schemas().len(), 1);
    // The builtin registry still reserves the name.
    assert!(
        codec::Registry::builtin()
            .add_client_tool("Read", "", serde_json::json!({"type": "object"}))
            .is_err()
    );
}

/// A reply mixing the text protocol and a Hermes call for a client tool.
const MIXED_REPLY_PROSE: &str = "I will look first.
READ calc.py
RUN make test
calc.py
```python
<<<<<<< SEARCH
x = 1
=======
x = 2
>>>>>>> REPLACE
```
EDIT notes.txt
<<<<<<< SEARCH
=======
checked
>>>>>>> REPLACE
DONE fixed
";
const MIXED_REPLY_CALL: &str =
    "<tool_call>{\"name\": \"lookup\", \"arguments\": {\"q\": \"average\"}}</tool_call>";

fn lookup_tool(reg: &mut Registry) {
    reg.add_client_tool(
        "lookup",
        "Look something up.",
        json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}),
    )
    .expect("a valid client tool");
}

/// Decodes `reply` whole and one char at a time; the two must agree.
fn decode_both_ways(reg: &Registry, reply: &str) -> Vec<codec::Event> {
    use codec::{Mode, TurnDecoder, turn::trace};
    let reg = std::sync::Arc::new(reg.clone());
    let mut whole = TurnDecoder::new(Mode::Auto, reg.clone());
    let mut events = whole.feed(reply);
    events.extend(whole.finish());
    let mut by_char = TurnDecoder::new(Mode::Auto, reg);
    let mut char_events = Vec::new();
    for (i, c) in reply.char_indices() {
        char_events.extend(by_char.feed(&reply[i..i + c.len_utf8()]));
    }
    char_events.extend(by_char.finish());
    assert_eq!(trace(&events), trace(&char_events));
    events
}

/// `Registry::client_only()` promises that nothing decodes to a builtin action: the verbs and
/// edit blocks of the text protocol stay prose, byte for byte, and only the client's own call
/// is proposed.
#[test]
fn a_client_only_registry_decodes_no_builtin_action() {
    let mut reg = Registry::client_only();
    lookup_tool(&mut reg);
    assert!(!reg.has_builtins());
    let reply = format!("{MIXED_REPLY_PROSE}{MIXED_REPLY_CALL}");
    let events = decode_both_ways(&reg, &reply);
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            codec::Event::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, MIXED_REPLY_PROSE);
    let proposals: Vec<&codec::ActionProposal> = events
        .iter()
        .filter_map(|e| match e {
            codec::Event::Proposal { proposal, .. } => Some(proposal),
            _ => None,
        })
        .collect();
    assert_eq!(proposals.len(), 1, "{events:?}");
    assert_eq!(
        proposals[0].action,
        Action::Client {
            name: "lookup".into(),
            arguments: json!({"q": "average"})
        }
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, codec::Event::Failure { .. })),
        "{events:?}"
    );
}

/// The same reply with the builtin registry (plus the client tool) decodes every action.
#[test]
fn the_builtin_registry_decodes_the_same_reply_to_actions() {
    let mut reg = Registry::builtin();
    lookup_tool(&mut reg);
    assert!(reg.has_builtins());
    let reply = format!("{MIXED_REPLY_PROSE}{MIXED_REPLY_CALL}");
    let names: Vec<String> = decode_both_ways(&reg, &reply)
        .iter()
        .filter_map(|e| match e {
            codec::Event::Proposal { proposal, .. } => Some(proposal.action.name().to_owned()),
            _ => None,
        })
        .collect();
    assert_eq!(
        names,
        ["read", "run", "edit", "edit", "done", "lookup"],
        "every verb, both edits and the client call"
    );
}

/// The formats of the later table rows (InternLM, LFM2, MiniCPM3, Llama 4, Olmo 3, Seed-OSS, MiniMax-M2,
/// GLM-4.5, Mistral v11 without `[ARGS]`) resolve names through the registry too: with a
/// client-only registry a call to the builtin `read` is no action, and the same call to the
/// client's `lookup` is one.
#[test]
fn the_later_formats_decode_only_declared_tools() {
    let mut reg = Registry::client_only();
    lookup_tool(&mut reg);
    let forms: &[fn(&str, &str) -> String] = &[
        |f, a| {
            format!(
                "<|action_start|><|plugin|>\n{{\"name\": \"{f}\", \"parameters\": {{\"{a}\": \"x\"}}}}<|action_end|>"
            )
        },
        |f, a| format!("<|tool_call_start|>[{f}({a}=\"x\")]<|tool_call_end|>"),
        |f, a| {
            format!(
                "<|tool_call_start|>[{{\"name\": \"{f}\", \"arguments\": {{\"{a}\": \"x\"}}}}]<|tool_call_end|>"
            )
        },
        |f, a| format!("<|python_start|>[{f}({a}=\"x\")]<|python_end|>"),
        |f, a| format!("<|tool_call_start|>\n```python\n{f}({a}=\"x\")\n```\n<|tool_call_end|>"),
        |f, a| format!("<function_calls>\n{f}({a}=\"x\")\n</function_calls>"),
        |f, a| {
            format!(
                "<seed:tool_call><function={f}><parameter={a}>x</parameter></function></seed:tool_call>"
            )
        },
        |f, a| {
            format!(
                "<minimax:tool_call><invoke name=\"{f}\"><parameter name=\"{a}\">x</parameter></invoke></minimax:tool_call>"
            )
        },
        |f, a| {
            format!(
                "<tool_call>{f}\n<arg_key>{a}</arg_key>\n<arg_value>x</arg_value>\n</tool_call>"
            )
        },
        |f, a| format!("[TOOL_CALLS]{f}{{\"{a}\": \"x\"}}"),
    ];
    for form in forms {
        let builtin = form("read", "path");
        let proposals = |reply: &str| -> Vec<String> {
            decode_both_ways(&reg, reply)
                .iter()
                .filter_map(|e| match e {
                    codec::Event::Proposal { proposal, .. } => {
                        Some(proposal.action.name().to_owned())
                    }
                    _ => None,
                })
                .collect()
        };
        assert_eq!(proposals(&builtin), Vec::<String>::new(), "{builtin}");
        let client = form("lookup", "q");
        assert_eq!(proposals(&client), ["lookup"], "{client}");
    }
}
