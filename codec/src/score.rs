//! Conversion accounting for `bellows eval`: how many replies of a corpus decode into a valid
//! action, which repairs that took, why the rest failed, and, where a reply has `gold`, which
//! decoded proposals the model did not mean (false decodes) and which it meant but were not
//! decoded (misses).
//!
//! The corpus format (DESIGN.md): JSONL, one reply per line,
//! `{"id", "model", "format", "raw", "tool_calls"?, "tools"?, "gold"?}`, where `gold` is a list
//! of `{"name", "arguments"}` objects in the JSON form of [`Action::to_json`] and `tools` the
//! client tools the reply was asked with (an OpenAI `tools` array, turned into a registry by
//! the caller, which knows that wire shape).
//!
//! A reply is *converted* when it holds at least one valid proposal (an explicit `done` is
//! one). Decoded proposals are valid by construction (a call that fails its schema is a
//! failure, not a proposal); where the line has gold, a proposal not in the gold is a false
//! decode and does not count, so a reply whose only proposals are false decodes is not
//! converted.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::action::{Action, ActionProposal, GoldError};
use crate::event::{Event, FailureKind, RepairKind};
use crate::format::FormatId;
use crate::registry::Registry;

/// One corpus line.
#[derive(Debug, Clone)]
pub struct CorpusEntry {
    pub id: String,
    pub model: Option<String>,
    pub format: Option<String>,
    /// The reply text, exactly as the model wrote it.
    pub raw: String,
    /// Structured OpenAI `tool_calls` that came with the reply (from an upstream server).
    pub tool_calls: Option<Value>,
    /// The registry the reply is decoded with when the line declares `tools`: a client-only
    /// registry holding exactly those tools. `None`: the builtin registry.
    pub registry: Option<Arc<Registry>>,
    /// The proposals the model meant, when someone decided, validated against the line's
    /// registry ([`Registry::gold_action`]).
    pub gold: Option<Vec<Action>>,
}

/// Why a corpus line was skipped.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CorpusError {
    #[error("not JSON: {0}")]
    NotJson(String),
    #[error("not a JSON object")]
    NotObject,
    #[error("missing \"raw\" (or it is not a string)")]
    MissingRaw,
    #[error("invalid \"tools\": {0}")]
    BadTools(String),
    #[error("\"gold\" is not a list")]
    GoldNotList,
    #[error("gold entry {index}: {error}")]
    BadGold { index: usize, error: GoldError },
}

impl CorpusEntry {
    /// Parses one corpus line. A missing `id` becomes `line N` (`line_no` is 1-based). A
    /// line's `tools` value (when present and not null) goes to `client_registry`, which
    /// builds the registry the reply is decoded with or says why it cannot; the line's gold
    /// is validated against that registry.
    pub fn parse(
        line: &str,
        line_no: usize,
        client_registry: &mut dyn FnMut(&Value) -> Result<Arc<Registry>, String>,
    ) -> Result<CorpusEntry, CorpusError> {
        let v: Value =
            serde_json::from_str(line).map_err(|e| CorpusError::NotJson(e.to_string()))?;
        let Value::Object(obj) = v else {
            return Err(CorpusError::NotObject);
        };
        let raw = obj
            .get("raw")
            .and_then(Value::as_str)
            .ok_or(CorpusError::MissingRaw)?
            .to_owned();
        let text = |k: &str| obj.get(k).and_then(Value::as_str).map(str::to_owned);
        let registry = match obj.get("tools") {
            None | Some(Value::Null) => None,
            Some(tools) => Some(client_registry(tools).map_err(CorpusError::BadTools)?),
        };
        let builtin;
        let gold_registry = match &registry {
            Some(r) => &**r,
            None => {
                builtin = Registry::builtin();
                &builtin
            }
        };
        let gold = match obj.get("gold") {
            None | Some(Value::Null) => None,
            Some(Value::Array(items)) => Some(
                items
                    .iter()
                    .enumerate()
                    .map(|(index, g)| {
                        gold_registry
                            .gold_action(g)
                            .map_err(|error| CorpusError::BadGold { index, error })
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            Some(_) => return Err(CorpusError::GoldNotList),
        };
        Ok(CorpusEntry {
            id: text("id").unwrap_or_else(|| format!("line {line_no}")),
            model: text("model"),
            format: text("format"),
            raw,
            tool_calls: obj.get("tool_calls").filter(|v| !v.is_null()).cloned(),
            registry,
            gold,
        })
    }
}

/// Decodes a non-streamed OpenAI `tool_calls` array (`[{"function": {"name", "arguments"}}]`,
/// `arguments` a JSON string or object) into events, validating each call against the
/// registry. Call indices start at `first_index`.
pub fn decode_tool_calls(
    registry: &Registry,
    tool_calls: &Value,
    first_index: usize,
) -> Vec<Event> {
    let Value::Array(calls) = tool_calls else {
        return vec![Event::Failure {
            index: None,
            kind: FailureKind::InvalidJson,
            raw: tool_calls.to_string(),
        }];
    };
    let mut out = Vec::new();
    for (i, call) in calls.iter().enumerate() {
        let index = first_index + i;
        let f = call.get("function").unwrap_or(call);
        let fail = |kind| Event::Failure {
            index: None,
            kind,
            raw: call.to_string(),
        };
        let Some(name) = f
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
        else {
            out.push(fail(FailureKind::MissingName));
            continue;
        };
        let mut repairs = Vec::new();
        let args = match f.get("arguments") {
            Some(Value::String(s)) if s.trim().is_empty() => json!({}),
            Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
                Ok(v) => v,
                Err(_) => {
                    out.push(fail(FailureKind::InvalidJson));
                    continue;
                }
            },
            Some(v @ Value::Object(_)) => v.clone(),
            None | Some(Value::Null) => json!({}),
            Some(_) => {
                out.push(fail(FailureKind::BadArguments));
                continue;
            }
        };
        match registry.validate(name, &args) {
            Ok((action, mut r)) => {
                repairs.append(&mut r);
                out.push(Event::Proposal {
                    index,
                    proposal: ActionProposal {
                        action,
                        repairs,
                        format: FormatId::OpenAi,
                    },
                });
            }
            Err(kind) => out.push(fail(kind)),
        }
    }
    out
}

/// How a reply's decoded proposals compare with its gold.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GoldMatch {
    /// Decoded proposals that are not in gold (counted with multiplicity).
    pub false_decodes: Vec<Action>,
    /// Gold proposals that were not decoded.
    pub misses: Vec<Action>,
}

impl GoldMatch {
    /// Matches `decoded` against `gold` as multisets: each gold action absorbs at most one
    /// equal decoded action. Order does not matter; a reply's actions are compared as a set
    /// of intentions.
    pub fn compare(decoded: &[&Action], gold: &[Action]) -> GoldMatch {
        let mut used = vec![false; gold.len()];
        let mut false_decodes = Vec::new();
        for d in decoded {
            match (0..gold.len()).find(|&i| !used[i] && gold[i] == **d) {
                Some(i) => used[i] = true,
                None => false_decodes.push((*d).clone()),
            }
        }
        let misses = gold
            .iter()
            .zip(&used)
            .filter(|(_, u)| !**u)
            .map(|(g, _)| g.clone())
            .collect();
        GoldMatch {
            false_decodes,
            misses,
        }
    }
}

/// One reply's outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplyScore {
    pub id: String,
    pub proposals: Vec<ActionProposal>,
    /// Every repair of every proposal, in order.
    pub repairs: Vec<RepairKind>,
    pub failures: Vec<FailureKind>,
    /// Present when the corpus line has gold.
    pub gold: Option<GoldMatch>,
}

impl ReplyScore {
    /// Scores the events of one whole reply.
    pub fn from_events(id: &str, events: &[Event], gold: Option<&[Action]>) -> ReplyScore {
        let mut proposals = Vec::new();
        let mut failures = Vec::new();
        for e in events {
            match e {
                Event::Proposal { proposal, .. } => proposals.push(proposal.clone()),
                Event::Failure { kind, .. } => failures.push(*kind),
                // Reasoning is never an action, so it does not count either way.
                Event::Text(_)
                | Event::Reasoning(_)
                | Event::ToolCallStart { .. }
                | Event::ArgsDelta { .. } => {}
            }
        }
        let repairs = proposals
            .iter()
            .flat_map(|p| p.repairs.iter().copied())
            .collect();
        let gold = gold.map(|g| {
            let decoded: Vec<&Action> = proposals.iter().map(|p| &p.action).collect();
            GoldMatch::compare(&decoded, g)
        });
        ReplyScore {
            id: id.to_owned(),
            proposals,
            repairs,
            failures,
            gold,
        }
    }

    /// A reply is converted when it decoded to at least one valid proposal (an explicit
    /// `done` is a proposal too). With gold, only proposals in the gold count: a false decode
    /// is an action the model did not mean, not a conversion.
    pub fn converted(&self) -> bool {
        let false_decodes = self.gold.as_ref().map_or(0, |g| g.false_decodes.len());
        self.proposals.len() > false_decodes
    }

    /// The reply's entry in `bellows eval --json`.
    pub fn to_json(&self) -> Value {
        let proposals: Vec<Value> = self.proposals.iter().map(|p| p.action.to_json()).collect();
        let repairs: Vec<&str> = self.repairs.iter().map(|r| r.as_str()).collect();
        let failures: Vec<&str> = self.failures.iter().map(|f| f.as_str()).collect();
        let mut v = json!({
            "id": self.id,
            "converted": self.converted(),
            "proposals": proposals,
            "repairs": repairs,
            "failures": failures,
        });
        if let (Some(g), Value::Object(m)) = (&self.gold, &mut v) {
            let list = |a: &[Action]| Value::Array(a.iter().map(Action::to_json).collect());
            m.insert("false_decodes".to_owned(), list(&g.false_decodes));
            m.insert("misses".to_owned(), list(&g.misses));
        }
        v
    }
}

/// Totals over a corpus.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Summary {
    pub total: usize,
    pub converted: usize,
    /// Replies with at least one repaired proposal.
    pub repaired_replies: usize,
    /// Replies with at least one failure.
    pub failed_replies: usize,
    pub proposals: usize,
    pub repairs: BTreeMap<RepairKind, usize>,
    pub failures: BTreeMap<FailureKind, usize>,
    /// Replies that had gold.
    pub with_gold: usize,
    /// Replies with gold whose decoded proposals equal their gold exactly.
    pub gold_exact: usize,
    /// Gold proposals, over the replies with gold.
    pub gold_proposals: usize,
    /// Decoded proposals, over the replies with gold (the denominator of precision).
    pub gold_decoded: usize,
    pub false_decodes: usize,
    pub misses: usize,
}

impl Summary {
    pub fn add(&mut self, r: &ReplyScore) {
        self.total += 1;
        self.converted += usize::from(r.converted());
        self.repaired_replies += usize::from(!r.repairs.is_empty());
        self.failed_replies += usize::from(!r.failures.is_empty());
        self.proposals += r.proposals.len();
        for k in &r.repairs {
            *self.repairs.entry(*k).or_default() += 1;
        }
        for k in &r.failures {
            *self.failures.entry(*k).or_default() += 1;
        }
        if let Some(g) = &r.gold {
            self.with_gold += 1;
            self.gold_exact += usize::from(g.false_decodes.is_empty() && g.misses.is_empty());
            self.gold_decoded += r.proposals.len();
            self.gold_proposals += r.proposals.len() - g.false_decodes.len() + g.misses.len();
            self.false_decodes += g.false_decodes.len();
            self.misses += g.misses.len();
        }
    }

    /// Converted replies as a share of all, 0 for an empty corpus.
    pub fn conversion_rate(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.converted as f64 / self.total as f64
        }
    }

    /// Decoded proposals that are in the gold, over the replies with gold.
    pub fn matched(&self) -> usize {
        self.gold_decoded - self.false_decodes
    }

    /// Over the replies with gold, the share of decoded proposals that are in the gold;
    /// `None` when nothing was decoded there.
    pub fn precision(&self) -> Option<f64> {
        (self.gold_decoded > 0).then(|| self.matched() as f64 / self.gold_decoded as f64)
    }

    /// Over the replies with gold, the share of gold proposals that were decoded; `None`
    /// when the gold holds no proposal.
    pub fn recall(&self) -> Option<f64> {
        (self.gold_proposals > 0).then(|| self.matched() as f64 / self.gold_proposals as f64)
    }

    /// The `summary` object of `bellows eval --json`. Kinds are listed in declaration order,
    /// each with its count (zero counts omitted).
    pub fn to_json(&self) -> Value {
        let repairs: serde_json::Map<String, Value> = self
            .repairs
            .iter()
            .map(|(k, n)| (k.as_str().to_owned(), json!(n)))
            .collect();
        let failures: serde_json::Map<String, Value> = self
            .failures
            .iter()
            .map(|(k, n)| (k.as_str().to_owned(), json!(n)))
            .collect();
        let mut v = json!({
            "total": self.total,
            "converted": self.converted,
            "conversion_rate": self.conversion_rate(),
            "repaired_replies": self.repaired_replies,
            "failed_replies": self.failed_replies,
            "proposals": self.proposals,
            "repairs": repairs,
            "failures": failures,
        });
        if self.with_gold > 0
            && let Value::Object(m) = &mut v
        {
            m.insert("with_gold".to_owned(), json!(self.with_gold));
            m.insert("gold_exact".to_owned(), json!(self.gold_exact));
            m.insert("gold_proposals".to_owned(), json!(self.gold_proposals));
            m.insert("gold_decoded".to_owned(), json!(self.gold_decoded));
            m.insert("matched".to_owned(), json!(self.matched()));
            m.insert("precision".to_owned(), json!(self.precision()));
            m.insert("recall".to_owned(), json!(self.recall()));
            m.insert("false_decodes".to_owned(), json!(self.false_decodes));
            m.insert("misses".to_owned(), json!(self.misses));
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::Block;

    fn proposal(action: Action, repairs: Vec<RepairKind>) -> Event {
        Event::Proposal {
            index: 0,
            proposal: ActionProposal {
                action,
                repairs,
                format: FormatId::Text,
            },
        }
    }

    /// A registry builder for lines with `tools`: one client tool `weather {city: string}`
    /// when the array is non-empty, refused otherwise.
    fn tools(v: &Value) -> Result<Arc<Registry>, String> {
        if v.as_array().is_none_or(Vec::is_empty) {
            return Err("no tools".to_owned());
        }
        let mut r = Registry::client_only();
        r.add_client_tool(
            "weather",
            "",
            json!({"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"], "additionalProperties": false}),
        )
        .map_err(|e| e.to_string())?;
        Ok(Arc::new(r))
    }

    fn parse(line: &str, line_no: usize) -> Result<CorpusEntry, CorpusError> {
        CorpusEntry::parse(line, line_no, &mut tools)
    }

    #[test]
    fn lines_with_tools_get_their_registry_and_gold_is_checked_against_it() {
        let e = parse(
            r#"{"raw":"x","tools":[1],"gold":[{"name":"weather","arguments":{"city":"Oslo"}}]}"#,
            1,
        )
        .expect("valid line");
        let reg = e.registry.expect("a client registry");
        assert!(!reg.has_builtins());
        assert_eq!(
            e.gold,
            Some(vec![Action::Client {
                name: "weather".into(),
                arguments: json!({"city": "Oslo"})
            }])
        );
        assert_eq!(
            parse(r#"{"raw":"x","tools":[]}"#, 1).map(|e| e.id),
            Err(CorpusError::BadTools("no tools".into()))
        );
        // With tools declared, gold naming an undeclared tool or breaking the schema is a bad
        // line (a builtin name included: the line's registry has no builtins).
        for gold in [
            r#"{"name":"read","arguments":{"path":"a"}}"#,
            r#"{"name":"weather","arguments":{"town":"Oslo"}}"#,
        ] {
            let line = format!(r#"{{"raw":"x","tools":[1],"gold":[{gold}]}}"#);
            assert!(
                matches!(
                    parse(&line, 1),
                    Err(CorpusError::BadGold {
                        index: 0,
                        error: GoldError::Invalid { .. }
                    })
                ),
                "{gold}"
            );
        }
        // Without tools the same gold is taken as given (no schema to check it against).
        assert!(
            parse(
                r#"{"raw":"x","gold":[{"name":"weather","arguments":{"town":"Oslo"}}]}"#,
                1
            )
            .is_ok()
        );
        assert!(
            parse(r#"{"raw":"x","tools":null}"#, 1).is_ok_and(|e| e.registry.is_none()),
            "null tools are no tools"
        );
    }

    #[test]
    fn a_false_decode_is_not_a_conversion() {
        let r = |p: &str| Action::Read {
            path: p.into(),
            start: None,
            end: None,
        };
        let only_false = ReplyScore::from_events(
            "f",
            &[proposal(r("a"), vec![])],
            Some(std::slice::from_ref(&r("b"))),
        );
        assert!(!only_false.converted());
        assert_eq!(only_false.to_json()["converted"], false);
        let one_right = ReplyScore::from_events(
            "t",
            &[proposal(r("a"), vec![]), proposal(r("b"), vec![])],
            Some(&[r("b")]),
        );
        assert!(one_right.converted());
        let no_gold = ReplyScore::from_events("n", &[proposal(r("a"), vec![])], None);
        assert!(no_gold.converted());
        let nothing = ReplyScore::from_events("p", &[Event::Text("prose".into())], Some(&[]));
        assert!(!nothing.converted());
    }

    #[test]
    fn corpus_lines() {
        let e = parse(
            r#"{"id":"a","model":"m","format":"text","raw":"READ x\n","gold":[{"name":"read","arguments":{"path":"x"}}]}"#,
            1,
        )
        .expect("valid line");
        assert_eq!(e.id, "a");
        assert_eq!(
            e.gold,
            Some(vec![Action::Read {
                path: "x".into(),
                start: None,
                end: None
            }])
        );
        assert_eq!(
            parse(r#"{"raw":"x"}"#, 7).map(|e| e.id),
            Ok("line 7".to_owned())
        );
        assert!(matches!(parse("{", 1), Err(CorpusError::NotJson(_))));
        assert_eq!(parse("[1]", 1).err(), Some(CorpusError::NotObject));
        assert_eq!(
            parse(r#"{"id":"a"}"#, 1).err(),
            Some(CorpusError::MissingRaw)
        );
        assert_eq!(
            parse(r#"{"raw":5}"#, 1).err(),
            Some(CorpusError::MissingRaw)
        );
        assert_eq!(
            parse(r#"{"raw":"","gold":{}}"#, 1).err(),
            Some(CorpusError::GoldNotList)
        );
        assert!(matches!(
            parse(r#"{"raw":"","gold":[{"name":"read","arguments":{}}]}"#, 1),
            Err(CorpusError::BadGold { index: 0, .. })
        ));
    }

    #[test]
    fn gold_is_a_multiset() {
        let r = |p: &str| Action::Read {
            path: p.into(),
            start: None,
            end: None,
        };
        let (a, b, c) = (r("a"), r("b"), r("c"));
        let m = GoldMatch::compare(&[&a, &a, &b], &[a.clone(), c.clone()]);
        assert_eq!(m.false_decodes, vec![a.clone(), b.clone()]);
        assert_eq!(m.misses, vec![c.clone()]);
        let m = GoldMatch::compare(&[&b, &a], &[a.clone(), b.clone()]);
        assert_eq!(m, GoldMatch::default());
    }

    #[test]
    fn summary_counts() {
        let done = Action::Done {
            summary: "ok".into(),
        };
        let edit = Action::Edit {
            path: "a".into(),
            blocks: vec![Block {
                search: "x\n".into(),
                replace: "y\n".into(),
            }],
        };
        let replies = [
            ReplyScore::from_events(
                "1",
                &[
                    Event::Text("hi\n".into()),
                    proposal(
                        edit.clone(),
                        vec![RepairKind::FencedBlock, RepairKind::Crlf],
                    ),
                    proposal(done.clone(), vec![]),
                ],
                Some(std::slice::from_ref(&edit)),
            ),
            ReplyScore::from_events(
                "2",
                &[Event::Failure {
                    index: None,
                    kind: FailureKind::TruncatedBlock,
                    raw: "<<<".into(),
                }],
                Some(std::slice::from_ref(&done)),
            ),
            ReplyScore::from_events("3", &[Event::Text("prose".into())], None),
        ];
        let mut s = Summary::default();
        for r in &replies {
            s.add(r);
        }
        assert_eq!(
            (
                s.total,
                s.converted,
                s.repaired_replies,
                s.failed_replies,
                s.proposals
            ),
            (3, 1, 1, 1, 2)
        );
        assert_eq!(s.repairs.get(&RepairKind::FencedBlock), Some(&1));
        assert_eq!(s.failures.get(&FailureKind::TruncatedBlock), Some(&1));
        assert_eq!(
            (s.with_gold, s.gold_exact, s.false_decodes, s.misses),
            (2, 0, 1, 1)
        );
        // Gold replies decoded 2 proposals, 1 of them in the 2 gold proposals.
        assert_eq!((s.gold_decoded, s.gold_proposals, s.matched()), (2, 2, 1));
        assert_eq!((s.precision(), s.recall()), (Some(0.5), Some(0.5)));
        assert_eq!(Summary::default().precision(), None);
        let j = s.to_json();
        assert_eq!(j["repairs"], json!({"fenced_block": 1, "crlf": 1}));
        assert_eq!(j["false_decodes"], 1);
        assert_eq!(
            (j["precision"].as_f64(), j["recall"].as_f64()),
            (Some(0.5), Some(0.5))
        );
        let r = replies[0].to_json();
        assert_eq!(
            r["proposals"][1],
            json!({"name": "done", "arguments": {"summary": "ok"}})
        );
        assert_eq!(r["repairs"], json!(["fenced_block", "crlf"]));
        assert_eq!(
            r["false_decodes"],
            json!([{"name": "done", "arguments": {"summary": "ok"}}])
        );
        assert!(
            replies[2].to_json().get("misses").is_none(),
            "no gold, no gold fields"
        );
    }

    #[test]
    fn openai_tool_calls() {
        let reg = Registry::builtin();
        let calls = json!([
            {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a\"}"}},
            {"function": {"name": "nope", "arguments": "{}"}},
            {"function": {"name": "read", "arguments": "{\"path\":"}},
            {"function": {"arguments": "{}"}},
        ]);
        let kinds: Vec<String> = decode_tool_calls(&reg, &calls, 2)
            .iter()
            .map(|e| match e {
                Event::Proposal { index, proposal } => {
                    format!("{index}:{}", proposal.action.to_json())
                }
                Event::Failure { kind, .. } => kind.to_string(),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                r#"2:{"name":"read","arguments":{"path":"a"}}"#,
                "unknown_tool",
                "invalid_json",
                "missing_name"
            ]
        );
    }
}
