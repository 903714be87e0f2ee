//! One reply in flight: engine events in, gateway-level outputs out.
//!
//! [`Turn`] pulls [`GenEvent`]s from a [`Generation`], runs the text through the codec's
//! decoder when the request has tools, and yields [`Out`] items that both the streaming (SSE)
//! and the non-streaming writers consume, so the two paths cannot disagree. It also keeps the
//! per-request metrics: time to first token, per-token latency, token counts, queue and slot
//! gauges, proposals, repairs, failures and cancellations.

use std::collections::HashMap;
use std::time::Instant;

use codec::{Event, FailureKind, TurnDecoder};
use models::{GenEvent, Generation, StopReason};

use crate::api::response::{FinishReason, ToolCallExt, Usage};
use crate::error::ApiError;
use crate::ids::IdGen;
use crate::metrics::Metrics;
use crate::tools::{self, ToolPlan};

/// What the client is told, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Out {
    /// Text for the message's `content`.
    Content(String),
    /// A tool call whose name is certain. `index` is the call's position in this reply.
    CallStart {
        index: u32,
        id: String,
        name: String,
    },
    /// A fragment of that call's arguments JSON.
    CallArgs { index: u32, fragment: String },
    /// The call decoded and validated; `ext` is set for the text-protocol extension.
    CallDone {
        index: u32,
        ext: Option<ToolCallExt>,
    },
    /// Model output that started a call but failed to decode. Its raw text has been (or is
    /// about to be) sent as content; `index` is set when the call's name was already sent.
    CallFailed {
        index: Option<u32>,
        kind: &'static str,
    },
}

/// How the reply ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finish {
    pub reason: FinishReason,
    pub usage: Usage,
}

/// One step of a reply.
#[derive(Debug)]
pub enum Step {
    Out(Vec<Out>),
    Finished(Finish),
}

/// Keeps the queue and slot gauges honest whatever way a request ends, and counts a
/// cancellation when it ends before the engine finished (the client went away).
#[derive(Debug)]
pub struct Inflight {
    metrics: Metrics,
    busy: bool,
    settled: bool,
}

impl Inflight {
    /// A request waiting for its first token.
    pub fn queued(metrics: &Metrics) -> Inflight {
        metrics.queue_depth.inc();
        Inflight {
            metrics: metrics.clone(),
            busy: false,
            settled: false,
        }
    }

    fn started(&mut self) {
        if !self.busy {
            self.busy = true;
            self.metrics.queue_depth.dec();
            self.metrics.busy_slots.inc();
        }
    }

    /// The request ended without the client going away (finished, or refused).
    pub fn settle(&mut self) {
        self.settled = true;
    }
}

impl Drop for Inflight {
    fn drop(&mut self) {
        if self.busy {
            self.metrics.busy_slots.dec();
        } else {
            self.metrics.queue_depth.dec();
        }
        if !self.settled {
            self.metrics.cancellations.inc();
        }
    }
}

/// What the gateway knows about each call the codec opened.
#[derive(Debug)]
enum Call {
    /// Sent to the client under `index`.
    Sent { index: u32 },
    /// A call to a tool the client did not declare (a builtin the registry knows): held back
    /// and returned as content, since the client cannot run it.
    Held { name: String, args: String },
}

/// A reply in flight.
#[derive(Debug)]
pub struct Turn {
    generation: Generation,
    decoder: Option<TurnDecoder>,
    plan: ToolPlan,
    metrics: Metrics,
    inflight: Inflight,
    ids: IdGen,
    started: Instant,
    last_piece: Option<Instant>,
    calls: HashMap<usize, Call>,
    next_index: u32,
    completed_calls: u32,
    finish: Option<Finish>,
    ended: bool,
}

impl Turn {
    pub fn new(
        generation: Generation,
        plan: ToolPlan,
        metrics: &Metrics,
        inflight: Inflight,
        ids: IdGen,
        started: Instant,
    ) -> Turn {
        Turn {
            decoder: plan.decoder(),
            generation,
            plan,
            metrics: metrics.clone(),
            inflight,
            ids,
            started,
            last_piece: None,
            calls: HashMap::new(),
            next_index: 0,
            completed_calls: 0,
            finish: None,
            ended: false,
        }
    }

    /// The next step; `Ok(None)` after [`Step::Finished`] was returned.
    pub async fn next(&mut self) -> Result<Option<Step>, ApiError> {
        if let Some(f) = self.finish.take() {
            self.ended = true;
            return Ok(Some(Step::Finished(f)));
        }
        if self.ended {
            return Ok(None);
        }
        loop {
            match self.generation.next().await {
                Some(GenEvent::Text { piece, tokens }) => {
                    self.observe_piece(tokens.len());
                    let out = self.decode_piece(&piece);
                    if !out.is_empty() {
                        return Ok(Some(Step::Out(out)));
                    }
                }
                Some(GenEvent::Done { reason, timings }) => {
                    self.inflight.settle();
                    self.metrics
                        .prompt_tokens
                        .inc_by(u64::from(timings.prompt_tokens));
                    self.metrics
                        .cached_tokens
                        .inc_by(u64::from(timings.cached_tokens));
                    self.metrics
                        .generated_tokens
                        .inc_by(u64::from(timings.generated_tokens));
                    let out = self.finish_decoder();
                    let reason = if self.completed_calls > 0 {
                        FinishReason::ToolCalls
                    } else {
                        match reason {
                            StopReason::MaxTokens | StopReason::ContextFull => FinishReason::Length,
                            StopReason::Eog | StopReason::Stop | StopReason::Cancelled => {
                                FinishReason::Stop
                            }
                        }
                    };
                    let usage = Usage::new(
                        timings.prompt_tokens,
                        timings.cached_tokens,
                        timings.generated_tokens,
                    );
                    self.finish = Some(Finish { reason, usage });
                    return Ok(Some(Step::Out(out)));
                }
                None => {
                    // The engine dropped the stream without a final event: not the client's
                    // doing, so not a cancellation.
                    self.inflight.settle();
                    self.ended = true;
                    return Err(ApiError::Engine("the generation ended unexpectedly".into()));
                }
            }
        }
    }

    fn observe_piece(&mut self, tokens: usize) {
        let now = Instant::now();
        match self.last_piece {
            None => {
                self.inflight.started();
                self.metrics.observe_ttft(now.duration_since(self.started));
            }
            Some(prev) => self
                .metrics
                .observe_tokens(now.duration_since(prev), tokens),
        }
        self.last_piece = Some(now);
    }

    fn decode_piece(&mut self, piece: &str) -> Vec<Out> {
        match self.decoder.as_mut() {
            None => vec![Out::Content(piece.to_owned())],
            Some(d) => {
                let events = d.feed(piece);
                self.convert(events)
            }
        }
    }

    fn finish_decoder(&mut self) -> Vec<Out> {
        match self.decoder.as_mut() {
            None => Vec::new(),
            Some(d) => {
                let events = d.finish();
                self.convert(events)
            }
        }
    }

    fn convert(&mut self, events: Vec<Event>) -> Vec<Out> {
        let mut out = Vec::new();
        for ev in events {
            match ev {
                Event::Text(t) => push_content(&mut out, t),
                // Reasoning is not the reply's content and is never an action; it is not
                // forwarded (yet: a `reasoning_content` delta would carry it).
                Event::Reasoning(_) => {}
                Event::ToolCallStart { index, name } => {
                    if self.plan.exposes(&name) {
                        let i = self.alloc_index();
                        self.calls.insert(index, Call::Sent { index: i });
                        out.push(Out::CallStart {
                            index: i,
                            id: self.ids.call_id(),
                            name,
                        });
                    } else {
                        self.calls.insert(
                            index,
                            Call::Held {
                                name,
                                args: String::new(),
                            },
                        );
                    }
                }
                Event::ArgsDelta { index, fragment } => match self.calls.get_mut(&index) {
                    Some(Call::Sent { index }) => {
                        out.push(Out::CallArgs {
                            index: *index,
                            fragment,
                        });
                    }
                    Some(Call::Held { args, .. }) => args.push_str(&fragment),
                    None => {}
                },
                Event::Proposal { index, proposal } => {
                    let name = proposal.action.name().to_owned();
                    match self.calls.remove(&index) {
                        Some(Call::Sent { index }) => {
                            self.accept(&proposal);
                            out.push(Out::CallDone {
                                index,
                                ext: self.ext(&proposal),
                            });
                        }
                        Some(Call::Held { name, args }) => {
                            self.hold_back(&mut out, &name, &args);
                        }
                        None if self.plan.exposes(&name) => {
                            // A proposal with no streamed start (the text protocol): send it
                            // whole.
                            self.accept(&proposal);
                            let i = self.alloc_index();
                            out.push(Out::CallStart {
                                index: i,
                                id: self.ids.call_id(),
                                name,
                            });
                            out.push(Out::CallArgs {
                                index: i,
                                fragment: proposal.arguments_json(),
                            });
                            out.push(Out::CallDone {
                                index: i,
                                ext: self.ext(&proposal),
                            });
                        }
                        None => {
                            let args = proposal.arguments_json();
                            self.hold_back(&mut out, &name, &args);
                        }
                    }
                }
                Event::Failure { index, kind, raw } => {
                    self.metrics.failure(kind);
                    let sent = match index.and_then(|i| self.calls.remove(&i)) {
                        Some(Call::Sent { index }) => Some(index),
                        _ => None,
                    };
                    push_content(&mut out, raw);
                    out.push(Out::CallFailed {
                        index: sent,
                        kind: kind.as_str(),
                    });
                }
            }
        }
        out
    }

    fn alloc_index(&mut self) -> u32 {
        let i = self.next_index;
        self.next_index += 1;
        i
    }

    fn accept(&mut self, proposal: &codec::ActionProposal) {
        self.completed_calls += 1;
        self.metrics.proposal(proposal.format);
        for r in &proposal.repairs {
            self.metrics.repair(*r);
        }
    }

    fn ext(&self, proposal: &codec::ActionProposal) -> Option<ToolCallExt> {
        self.plan.is_text_protocol().then(|| ToolCallExt {
            format: proposal.format.as_str(),
            repairs: proposal.repairs.iter().map(|r| r.as_str()).collect(),
        })
    }

    /// A call the client cannot run goes back as content, written as a past call would be.
    fn hold_back(&mut self, out: &mut Vec<Out>, name: &str, args: &str) {
        self.metrics.failure(FailureKind::UnknownTool);
        let value = serde_json::from_str(args).unwrap_or(serde_json::Value::Null);
        push_content(out, tools::render_past_call(name, &value));
        out.push(Out::CallFailed {
            index: None,
            kind: FailureKind::UnknownTool.as_str(),
        });
    }
}

fn push_content(out: &mut Vec<Out>, text: String) {
    if text.is_empty() {
        return;
    }
    if let Some(Out::Content(prev)) = out.last_mut() {
        prev.push_str(&text);
    } else {
        out.push(Out::Content(text));
    }
}
