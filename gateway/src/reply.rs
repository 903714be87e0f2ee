//! One reply in flight: engine events in, gateway-level outputs out.
//!
//! [`Turn`] pulls [`GenEvent`]s from a [`Generation`], runs the text through the codec's
//! decoder when the request has tools, and yields [`Out`] items that both the streaming (SSE)
//! and the non-streaming writers consume, so the two paths cannot disagree. It also keeps the
//! metrics of its generation: per-token latency, token counts, queue and slot gauges,
//! proposals, repairs, failures and cancellations, and the request's time to first token
//! (once for all of a request's choices, through [`Siblings`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use codec::{Event, TurnDecoder};
use models::{GenEvent, Generation, Progress, StopReason, TokenLogprob};

use crate::api::response::{FinishReason, ToolCallExt, Usage};
use crate::error::ApiError;
use crate::ids::IdGen;
use crate::metrics::Metrics;
use crate::tools::ToolPlan;

/// What the client is told, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Out {
    /// Text for the message's `content`.
    Content(String),
    /// The model's reasoning (`<think>…</think>`), for `reasoning_content`; never acted on.
    Reasoning(String),
    /// Log probabilities of generated tokens, when the request asked for them.
    Logprobs(Vec<TokenLogprob>),
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
    /// Model output that started a call but failed to decode. Its raw text has been sent as
    /// content; `index` is set only when the call's name had already been streamed (possible
    /// only under a grammar that should have prevented the failure, e.g. cut by max_tokens).
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

/// What the generations of one request share: a request with `n` choices runs `n`
/// generations, each with its own [`Inflight`].
#[derive(Debug, Default)]
pub struct Siblings {
    /// The gateway itself let go of the request (a choice failed, or one could not be
    /// admitted): the generations it drops are not the client's cancellations.
    withdrawn: AtomicBool,
    /// Some choice produced text: time to first token is the request's, observed once.
    first_text: AtomicBool,
}

impl Siblings {
    /// The gateway ends the request before its generations finished, for a reason of its own:
    /// they are dropped (which cancels them) without counting as cancellations.
    pub fn withdraw(&self) {
        self.withdrawn.store(true, Ordering::Release);
    }
}

/// Keeps the queue and slot gauges honest whatever way a generation ends, and counts a
/// cancellation when it ends before the engine finished (the client went away).
#[derive(Debug)]
pub struct Inflight {
    metrics: Metrics,
    busy: bool,
    settled: bool,
    /// The engine's live counts, turned into the token metrics if the request is cancelled
    /// (a finished request counts the engine's final timings instead).
    prompt_tokens: u32,
    progress: Option<Arc<Progress>>,
    siblings: Arc<Siblings>,
}

impl Inflight {
    /// A request's only generation, waiting for its first token.
    pub fn queued(metrics: &Metrics) -> Inflight {
        Inflight::queued_with(metrics, &Arc::default())
    }

    /// One of the generations of a request, waiting for its first token.
    pub fn queued_with(metrics: &Metrics, siblings: &Arc<Siblings>) -> Inflight {
        metrics.queue_depth.inc();
        Inflight {
            metrics: metrics.clone(),
            busy: false,
            settled: false,
            prompt_tokens: 0,
            progress: None,
            siblings: Arc::clone(siblings),
        }
    }

    fn started(&mut self) {
        if !self.busy {
            self.busy = true;
            self.metrics.queue_depth.dec();
            self.metrics.busy_slots.inc();
        }
    }

    /// Whether this is the request's first text (of any of its choices).
    fn first_of_request(&self) -> bool {
        !self.siblings.first_text.swap(true, Ordering::AcqRel)
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
            if !self.siblings.withdrawn.load(Ordering::Acquire) {
                self.metrics.cancellations.inc();
            }
            // The engine's timings never arrive for a cancelled request. Its live counts do:
            // once the engine has let go of the work, what it evaluated and generated is
            // counted, so the token metrics cover every request that reached the engine and
            // show how soon a cancellation stopped it.
            if let Some(progress) = self.progress.take() {
                let metrics = self.metrics.clone();
                let prompt = self.prompt_tokens;
                let count = move |p: &Progress| {
                    metrics.prompt_tokens.inc_by(u64::from(prompt));
                    metrics.cached_tokens.inc_by(u64::from(p.cached()));
                    metrics.generated_tokens.inc_by(u64::from(p.generated()));
                };
                match tokio::runtime::Handle::try_current() {
                    Ok(rt) => {
                        rt.spawn(async move {
                            // Bounded: an engine that never lets go is counted as it stands.
                            let _ = tokio::time::timeout(CANCELLED_COUNT_WAIT, progress.finished())
                                .await;
                            count(&progress);
                        });
                    }
                    Err(_) => count(&progress),
                }
            }
        }
    }
}

/// How long a cancelled request's token counts wait for the engine to let go of it.
const CANCELLED_COUNT_WAIT: std::time::Duration = std::time::Duration::from_secs(120);

/// What the gateway knows about each call the codec opened.
#[derive(Debug)]
enum Call {
    /// Streamed to the client under `index` as it is generated (a grammar guarantees it).
    Streaming { index: u32 },
    /// Held until it validates: nothing of it has reached the client.
    Held,
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
    /// Calls sent to the client, whole or started.
    sent_calls: u32,
    /// `parallel_tool_calls: false` and one call is out: generation was halted, and any
    /// later call is returned as content.
    call_limit_reached: bool,
    finish: Option<Finish>,
    ended: bool,
}

impl Turn {
    pub fn new(
        generation: Generation,
        plan: ToolPlan,
        metrics: &Metrics,
        mut inflight: Inflight,
        ids: IdGen,
        started: Instant,
    ) -> Turn {
        inflight.prompt_tokens = generation.prompt_tokens;
        inflight.progress = Some(Arc::clone(&generation.progress));
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
            sent_calls: 0,
            call_limit_reached: false,
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
                Some(GenEvent::Text {
                    piece,
                    tokens,
                    logprobs,
                }) => {
                    self.observe_piece(tokens.len());
                    let mut out = self.decode_piece(&piece);
                    if !logprobs.is_empty() {
                        out.push(Out::Logprobs(logprobs));
                    }
                    if !out.is_empty() {
                        return Ok(Some(Step::Out(out)));
                    }
                }
                Some(GenEvent::Done { reason, timings }) => {
                    self.inflight.settle();
                    self.count_tokens(&timings);
                    let out = self.finish_decoder();
                    let reason = match reason {
                        // A reply cut short is "length" even when a call went out before:
                        // the client must know the reply is incomplete.
                        StopReason::MaxTokens | StopReason::ContextFull => FinishReason::Length,
                        _ if self.sent_calls > 0 => FinishReason::ToolCalls,
                        StopReason::Eog | StopReason::Stop | StopReason::Cancelled => {
                            FinishReason::Stop
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
                Some(GenEvent::Failed { error, timings }) => {
                    self.inflight.settle();
                    self.count_tokens(&timings);
                    self.ended = true;
                    // An upstream's broken stream is answered as the upstream error it is.
                    return Err(match self.generation.cause.get() {
                        Some(cause) => ApiError::from_upstream(cause.clone()),
                        None => ApiError::Engine(error),
                    });
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

    fn count_tokens(&self, timings: &models::Timings) {
        let m = &self.metrics;
        for (counter, n) in [
            (&m.prompt_tokens, timings.prompt_tokens),
            (&m.cached_tokens, timings.cached_tokens),
            (&m.generated_tokens, timings.generated_tokens),
            (&m.draft_tokens, timings.draft_tokens),
            (&m.draft_accepted, timings.draft_accepted),
        ] {
            counter.inc_by(u64::from(n));
        }
    }

    fn observe_piece(&mut self, tokens: usize) {
        let now = Instant::now();
        match self.last_piece {
            None => {
                self.inflight.started();
                if self.inflight.first_of_request() {
                    self.metrics.observe_ttft(now.duration_since(self.started));
                }
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
                // Reasoning is not the reply's content and is never an action.
                Event::Reasoning(t) => {
                    if !t.is_empty() {
                        out.push(Out::Reasoning(t));
                    }
                }
                Event::ToolCallStart { index, name } => {
                    if self.plan.streams_arguments()
                        && self.plan.exposes(&name)
                        && !self.call_limit_reached
                    {
                        let i = self.alloc_index();
                        self.sent_calls += 1;
                        self.calls.insert(index, Call::Streaming { index: i });
                        out.push(Out::CallStart {
                            index: i,
                            id: self.ids.call_id(),
                            name,
                        });
                    } else {
                        self.calls.insert(index, Call::Held);
                    }
                }
                Event::ArgsDelta { index, fragment } => {
                    if let Some(Call::Streaming { index }) = self.calls.get(&index) {
                        out.push(Out::CallArgs {
                            index: *index,
                            fragment,
                        });
                    }
                }
                Event::Proposal { index, proposal } => {
                    let name = proposal.action.name().to_owned();
                    match self.calls.remove(&index) {
                        Some(Call::Streaming { index }) => {
                            self.accept(&proposal);
                            out.push(Out::CallDone {
                                index,
                                ext: self.ext(&proposal),
                            });
                            self.after_call();
                        }
                        Some(Call::Held) | None
                            if self.plan.exposes(&name) && !self.call_limit_reached =>
                        {
                            // Validated: the whole call goes out at once.
                            self.accept(&proposal);
                            let i = self.alloc_index();
                            self.sent_calls += 1;
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
                            self.after_call();
                        }
                        // `parallel_tool_calls: false` and the one call is out: generation was
                        // halted, and what the model wrote past it is not part of the answer.
                        Some(Call::Held) | None if self.call_limit_reached => {}
                        Some(Call::Held) | None => {
                            // A tool the plan does not expose (none today: the registry holds
                            // exactly the exposed tools). Returned as content, as a call would
                            // be written back, and counted.
                            self.metrics.failure(codec::FailureKind::UnknownTool);
                            push_content(
                                &mut out,
                                self.plan
                                    .render_past_call(&name, &proposal.action.arguments()),
                            );
                        }
                    }
                }
                Event::Failure { index, kind, raw } => {
                    self.metrics.failure(kind);
                    let streamed = match index.and_then(|i| self.calls.remove(&i)) {
                        Some(Call::Streaming { index }) => Some(index),
                        _ => None,
                    };
                    push_content(&mut out, raw);
                    out.push(Out::CallFailed {
                        index: streamed,
                        kind: kind.as_str(),
                    });
                }
            }
        }
        out
    }

    /// With `parallel_tool_calls: false`, the first call ends the reply: generation is halted
    /// (the engine still reports its timings).
    fn after_call(&mut self) {
        if !self.plan.parallel() && !self.call_limit_reached {
            self.call_limit_reached = true;
            self.generation.halt();
        }
    }

    fn alloc_index(&mut self) -> u32 {
        let i = self.next_index;
        self.next_index += 1;
        i
    }

    fn accept(&mut self, proposal: &codec::ActionProposal) {
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
