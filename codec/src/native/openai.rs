//! OpenAI `tool_calls` stream deltas from an upstream server (llama-server, vLLM, another
//! bellows). They are not in-band text: each delta names an upstream call index and carries
//! an optional id, an optional name and an optional fragment of the arguments string.
//!
//! Each upstream call is read by the same call-object parser as the in-band JSON formats,
//! as the object `{"name": …, "arguments": <fragments…>}` the deltas spell, so the upstream's
//! arguments are checked, repaired (Python literals, unclosed JSON) and validated the same
//! way, and client-tool arguments stream on as they arrive.

use std::collections::BTreeMap;

use super::call::{CallObject, CallOpts, Keys, Outcome};
use crate::event::{Event, FailureKind};
use crate::format::{Ctx, FormatId};
use crate::registry::Registry;

#[derive(Debug)]
struct Up {
    call: Box<CallObject>,
    /// Everything this upstream call delivered, for a failure's raw text.
    raw: String,
    /// Arguments fragments that arrived before the name.
    early_args: String,
    named: bool,
    /// The call went wrong; later deltas for it are ignored.
    failed: bool,
    saw_args: bool,
}

/// Decodes one upstream reply's `tool_calls` deltas into events.
#[derive(Debug)]
pub struct DeltaDecoder {
    registry: Registry,
    next_index: usize,
    calls: BTreeMap<u32, Up>,
}

fn opts() -> CallOpts {
    CallOpts {
        wrapped: true,
        format: FormatId::OpenAi,
        parameters_native: false,
        keys: Keys::Named,
    }
}

impl DeltaDecoder {
    /// `first_index` is the turn's next call index (calls decoded from the reply's content
    /// share the counter).
    pub fn new(registry: Registry, first_index: usize) -> DeltaDecoder {
        DeltaDecoder {
            registry,
            next_index: first_index,
            calls: BTreeMap::new(),
        }
    }

    /// The next call index this decoder would hand out.
    pub fn next_index(&self) -> usize {
        self.next_index
    }

    fn with_ctx<R>(
        registry: &Registry,
        next_index: &mut usize,
        f: impl FnOnce(&mut Ctx<'_>) -> R,
    ) -> R {
        let mut ctx = Ctx {
            registry,
            next_index: *next_index,
            last_edit_path: None,
            auto: true,
            answered: false,
            attempted: false,
        };
        let r = f(&mut ctx);
        *next_index = ctx.next_index;
        r
    }

    /// One delta of upstream call `index`.
    pub fn feed(
        &mut self,
        index: u32,
        _id: Option<&str>,
        name: Option<&str>,
        arguments_fragment: Option<&str>,
        out: &mut Vec<Event>,
    ) {
        let up = self.calls.entry(index).or_insert_with(|| Up {
            call: CallObject::new(opts()),
            raw: String::new(),
            early_args: String::new(),
            named: false,
            failed: false,
            saw_args: false,
        });
        if up.failed {
            return;
        }
        let mut text = String::new();
        if let Some(n) = name.filter(|n| !n.is_empty())
            && !up.named
        {
            up.named = true;
            let quoted = serde_json::Value::String(n.to_owned()).to_string();
            text.push_str("{\"name\":");
            text.push_str(&quoted);
            text.push_str(",\"arguments\":");
            up.raw.push_str(n);
            text.push_str(&std::mem::take(&mut up.early_args));
        }
        if let Some(a) = arguments_fragment {
            up.raw.push_str(a);
            if !a.is_empty() {
                up.saw_args = true;
            }
            if up.named {
                text.push_str(a);
            } else {
                up.early_args.push_str(a);
            }
        }
        let registry = &self.registry;
        Self::with_ctx(registry, &mut self.next_index, |ctx| {
            for c in text.chars() {
                if let Err(e) = up.call.push(c, ctx, out) {
                    up.call.flush(out);
                    if let Some(o) = up.call.outcome_of(e) {
                        o.emit(&[], &up.raw, out);
                    }
                    up.failed = true;
                    return;
                }
            }
            up.call.flush(out);
        });
    }

    /// The upstream reply ended: close every call, in upstream index order.
    pub fn finish(&mut self, out: &mut Vec<Event>) {
        let calls = std::mem::take(&mut self.calls);
        let registry = &self.registry;
        for (_, mut up) in calls {
            if up.failed {
                continue;
            }
            if !up.named {
                out.push(Event::Failure {
                    index: None,
                    kind: FailureKind::MissingName,
                    raw: up.raw,
                });
                continue;
            }
            Self::with_ctx(registry, &mut self.next_index, |ctx| {
                if !up.saw_args {
                    // No arguments at all means an empty object.
                    for c in "{}}".chars() {
                        let _ = up.call.push(c, ctx, out);
                    }
                } else if up.call.value_closed() {
                    let _ = up.call.push('}', ctx, out);
                } else {
                    let r = up.call.finish(ctx, out).map(Some);
                    emit(r.map_err(|e| up.call.outcome_of(e)), &up.raw, out);
                    return;
                }
                let r = up.call.conclude(ctx, out).map(Some);
                emit(r.map_err(|e| up.call.outcome_of(e)), &up.raw, out);
            });
        }
    }
}

fn emit(r: Result<Option<Outcome>, Option<Outcome>>, raw: &str, out: &mut Vec<Event>) {
    match r {
        Ok(Some(o)) | Err(Some(o)) => o.emit(&[], raw, out),
        Ok(None) | Err(None) => {}
    }
}
