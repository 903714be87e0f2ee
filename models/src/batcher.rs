//! The engine thread: one llama.cpp context, many sequences, one batch per step.
//!
//! `LlamaEngine` owns one `LlamaContext` through one dedicated OS thread (the context is
//! `!Send`), created with `n_seq_max` = the engine's slots and a unified KV cache, so every
//! sequence draws its cells from one pool of `--ctx` cells. Each step decodes one batch that
//! holds the next token of every generating sequence and, within a per-step token budget,
//! prompt chunks of sequences still evaluating theirs (chunked prefill: a long prompt admitted
//! while others generate delays them by at most one chunk per step). On the CPU, a wide step
//! that holds both is decoded as two batches, the generated tokens first: in one batch, a
//! generated token of another sequence keeps llama.cpp's CPU attention from skipping the cells
//! the prompt rows beside it mask ([`SPLIT_MIN_TOKENS`]). Then each sequence whose last token
//! got logits samples its next token with its own sampler, grammar and stop strings.
//!
//! **Prefix sharing.** Each sequence keeps the tokens its cells hold after a job ends (its
//! prompt cache). A new job reuses its own sequence's common prefix, and copies a longer one
//! from any other sequence (`seq_cp` marks the same cells as shared: nothing is evaluated or
//! stored twice). When another sequence is still evaluating the same prefix — `n` choices,
//! parallel attempts of one agent task — the new job waits for it and copies what it
//! evaluated, so one prompt is evaluated once for all of them.
//!
//! **Back pressure without a stall.** Events go out through a bounded channel per generation,
//! never by blocking the thread: a sequence whose consumer is behind keeps its next token and
//! sits out the steps until there is room; after `write_stall` without room it is cancelled.
//! Other sequences go on meanwhile.
//!
//! **KV budget.** A job reserves its prompt plus `max_tokens` cells (its whole per-sequence
//! limit when it names no `max_tokens`); the queue hands a job to a free sequence only while
//! the reservations fit the context, so a decode never runs out of cells. Idle sequences'
//! caches are evicted, least recently used first, when a new job needs their room.
//!
//! **Idle caches parked.** When a job starts, every other idle sequence's cells are copied to
//! host memory and cleared from the context (each batch attends over the span of occupied
//! cells, so idle caches slow everyone); the sequence keeps the token list, so its
//! conversation is still routed back to it, and its cells are copied back when it is.

use std::collections::VecDeque;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::session::{LlamaStateSeqFlags, SeqState as ParkedState};
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use tokio::sync::mpsc;

use crate::attention::{Attention, FlashAttn};
use crate::detok::{StopMatcher, StopScan, Utf8Assembler};
use crate::engine::{
    GenEvent, ProgressGuard, Sampling, StopReason, Timings, TokenLogprob, TopLogprob,
};
use crate::lookup::{
    LOOKUP_AUTO_MAX_SEQS, Lookup, Pace, SHADOW_LEN, Shadow, StepCost, lookup_draft,
};
use crate::sampler::{CompiledGrammar, JobSampler};

/// Text events buffered per generation before the sequence waits for the consumer. The
/// channel holds one more: a permit kept free for the final `Done` or `Failed`, so a stream cut
/// off by the write-stall bound still ends with `Done { Cancelled }` when its reader comes back.
pub(crate) const EVENT_BUFFER: usize = 64;
/// Channel permits that text events leave free for the final event.
pub(crate) const FINAL_EVENT: usize = 1;

/// Creating contexts in parallel from one model is unsound in llama.cpp (it may write
/// `n_ctx_train`), so engines loading at once take turns.
static CONTEXT_CREATION: Mutex<()> = Mutex::new(());

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn common_prefix(a: &[LlamaToken], b: &[LlamaToken]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// A validated request waiting for, or running on, a sequence.
#[derive(Debug)]
pub(crate) struct Job {
    pub(crate) tokens: Vec<LlamaToken>,
    pub(crate) sampling: Sampling,
    pub(crate) grammar: Option<CompiledGrammar>,
    /// `None`: until the sequence's context is full (which then ends it as `ContextFull`).
    pub(crate) max_tokens: Option<u32>,
    pub(crate) stop: Vec<String>,
    /// `Some(n)`: report each token's log probability and the `n` most likely alternatives.
    pub(crate) logprobs: Option<u32>,
    /// KV cells the job may come to hold: its prompt plus `max_tokens`, at most the
    /// per-sequence limit.
    pub(crate) reserve: usize,
    pub(crate) tx: mpsc::Sender<GenEvent>,
    /// Set by `Generation::halt`: stop as if a stop string had matched.
    pub(crate) halt: Arc<AtomicBool>,
    /// Marks the generation's counts final when the job is dropped.
    pub(crate) progress: ProgressGuard,
    pub(crate) admitted: Instant,
    /// When admission finished and the job was queued (for the first-token breakdown).
    pub(crate) queued: Instant,
}

/// A sequence as the scheduler sees it.
#[derive(Debug, Default)]
pub(crate) struct SeqState {
    pub(crate) busy: bool,
    /// When the sequence last took a job (a dispatch counter), for least-recently-used choice.
    last_used: u64,
    /// The tokens the sequence's cells hold, as of its last finished job.
    pub(crate) cached: Vec<LlamaToken>,
    /// Cells the running job reserved.
    reserved: usize,
    pub(crate) mailbox: Option<Job>,
}

#[derive(Debug)]
pub(crate) struct Sched {
    pub(crate) queue: VecDeque<Job>,
    dispatched: u64,
    pub(crate) seqs: Vec<SeqState>,
    pub(crate) shutdown: bool,
    /// The context's cells, shared by all sequences.
    kv_total: usize,
}

impl Sched {
    pub(crate) fn new(n_seqs: usize, kv_total: usize) -> Sched {
        Sched {
            queue: VecDeque::new(),
            dispatched: 0,
            seqs: (0..n_seqs).map(|_| SeqState::default()).collect(),
            shutdown: false,
            kv_total,
        }
    }

    /// Sequences free to take a job now.
    pub(crate) fn idle(&self) -> usize {
        self.seqs
            .iter()
            .filter(|s| !s.busy && s.mailbox.is_none())
            .count()
    }

    /// Hands queued jobs, oldest first, to free sequences while their reservations fit the
    /// context (the head of the queue waits for room; nothing overtakes it). A job goes to
    /// the free sequence where it gains most: the cached prefix it reuses minus the cached
    /// tokens it would evict (a conversation that merely shares a system prompt with another
    /// sequence's does not evict it while an emptier one is free); among equals, the least
    /// recently used.
    pub(crate) fn dispatch(&mut self) {
        while let Some(job) = self.queue.front() {
            let reserved: usize = self.seqs.iter().map(|s| s.reserved).sum();
            if reserved + job.reserve > self.kv_total {
                break;
            }
            let best = self
                .seqs
                .iter()
                .enumerate()
                .filter(|(_, s)| !s.busy && s.mailbox.is_none())
                .max_by_key(|(i, s)| {
                    let reused = common_prefix(&s.cached, &job.tokens) as i64;
                    let evicted = s.cached.len() as i64 - reused;
                    (
                        reused - evicted,
                        std::cmp::Reverse(s.last_used),
                        std::cmp::Reverse(*i),
                    )
                })
                .map(|(i, _)| i);
            let Some(i) = best else { break };
            let Some(job) = self.queue.pop_front() else {
                break;
            };
            self.dispatched += 1;
            let seq = &mut self.seqs[i];
            seq.busy = true;
            seq.last_used = self.dispatched;
            seq.reserved = job.reserve;
            seq.mailbox = Some(job);
        }
    }
}

#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) sched: Mutex<Sched>,
    pub(crate) wake: Condvar,
    /// Steps decoded as two batches (see [`SPLIT_MIN_TOKENS`]).
    pub(crate) split_steps: AtomicU64,
}

/// What the engine thread needs to build its context and run its sequences.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BatcherConfig {
    /// Cells of the whole context.
    pub(crate) n_ctx_total: u32,
    /// Cells one sequence may hold.
    pub(crate) n_ctx_seq: u32,
    /// Tokens decoded per step at most.
    pub(crate) n_batch: u32,
    /// Prompt tokens a step evaluates while other sequences are generating.
    pub(crate) prefill_chunk: u32,
    pub(crate) n_seqs: u32,
    pub(crate) threads: u32,
    /// The sliding window, when prefix reuse must respect one.
    pub(crate) n_swa: Option<u32>,
    pub(crate) swa_full: bool,
    /// How long a sequence waits on a consumer that stopped reading before it is cancelled.
    pub(crate) write_stall: Duration,
    /// Lookup decoding: when it drafts.
    pub(crate) lookup: Lookup,
    /// Draft tokens per step at most.
    pub(crate) lookup_max: u32,
    /// Flash attention and the KV cache's element types.
    pub(crate) attention: Attention,
    /// Whether a wide step holding generated tokens and prompt chunks is decoded as two
    /// batches ([`SPLIT_MIN_TOKENS`]): when attention runs on the CPU, with flash attention.
    pub(crate) split_wide_steps: bool,
}

/// The shortest reused prefix worth restoring a parked cache for.
const RESTORE_MIN_TOKENS: usize = 32;

/// A step holding both generated tokens and prompt chunks, this many tokens or more, is
/// decoded as two batches: the generated tokens, then the prompt chunks. llama.cpp's CPU flash
/// attention works on tiles of 64 query rows (`GGML_FA_TILE_Q`) and skips a tile of cached
/// cells only when every row of the tile masks it; one generated token of another sequence in
/// a tile of prompt rows makes that tile attend over every sequence's cells. Eight ~1,000-token
/// prompts evaluated while the first ones generate took 45 s mixed, 40 s apart (SmolLM2, 2
/// threads, `benches/README.md`); a smaller batch attends row by row and skips masked cells one
/// by one, so it is not split. The cost: one more pass over the weights for the generated rows.
const SPLIT_MIN_TOKENS: usize = 64;

pub(crate) type Ready = std::sync::mpsc::SyncSender<Result<(), String>>;

/// The engine thread's body: builds the context, reports ready, then runs steps until
/// shutdown.
pub(crate) fn engine_main(
    backend: &'static LlamaBackend,
    model: Arc<LlamaModel>,
    shared: Arc<Shared>,
    cfg: BatcherConfig,
    ready: Ready,
) {
    let threads = i32::try_from(cfg.threads).unwrap_or(i32::MAX);
    let per_step = cfg.n_batch.max(cfg.n_seqs);
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(cfg.n_ctx_total))
        .with_n_batch(per_step)
        .with_n_ubatch(per_step)
        .with_n_seq_max(cfg.n_seqs)
        .with_kv_unified(true)
        .with_n_threads(threads)
        .with_n_threads_batch(threads)
        .with_swa_full(cfg.swa_full)
        .with_flash_attention_policy(cfg.attention.flash_attn.to_llama())
        .with_type_k(cfg.attention.cache_type_k.to_llama())
        .with_type_v(cfg.attention.cache_type_v.to_llama());
    let ctx = {
        let _turn = lock(&CONTEXT_CREATION);
        model.new_context(backend, params)
    };
    let ctx = match ctx {
        Ok(ctx) => ctx,
        Err(e) => {
            let _ = ready.send(Err(e.to_string()));
            return;
        }
    };
    let _ = ready.send(Ok(()));
    let mut b = Batcher {
        model: &model,
        ctx,
        batch: LlamaBatch::new(per_step as usize, 1),
        cfg,
        seqs: (0..cfg.n_seqs as i32)
            .map(|id| Seq {
                id,
                cached: Vec::new(),
                last_used: 0,
                run: None,
                parked: None,
            })
            .collect(),
        candidates: Vec::new(),
        closing: Vec::new(),
        started: 0,
        step_cost: StepCost::new(cfg.lookup_max as usize + 1),
    };
    let mut backoff = Duration::from_micros(200);
    loop {
        let mut new = Vec::new();
        {
            let mut s = lock(&shared.sched);
            loop {
                if s.shutdown {
                    drop(s);
                    b.shut_down();
                    return;
                }
                for (i, seq) in s.seqs.iter_mut().enumerate() {
                    if let Some(job) = seq.mailbox.take() {
                        new.push((i, job));
                    }
                }
                if !new.is_empty() || b.busy() {
                    break;
                }
                s = shared.wake.wait(s).unwrap_or_else(PoisonError::into_inner);
            }
        }
        for (i, job) in new {
            b.start(i, job, &shared);
        }
        if b.step(&shared) {
            backoff = Duration::from_micros(200);
        } else if b.busy() {
            // Every sequence waits on its consumer: sleep a little, but wake for new jobs.
            let s = lock(&shared.sched);
            if s.seqs.iter().all(|x| x.mailbox.is_none()) && !s.shutdown {
                let _ = shared.wake.wait_timeout(s, backoff);
            }
            backoff = (backoff * 2).min(Duration::from_millis(10));
        }
    }
}

/// Events on their way to one consumer. Text events leave [`FINAL_EVENT`] permits free; the
/// final event needs none, so it always fits behind them.
struct Outbox {
    tx: mpsc::Sender<GenEvent>,
    queue: VecDeque<GenEvent>,
    /// Since when the queue has waited for room.
    blocked_since: Option<Instant>,
}

/// What flushing an outbox came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    /// Everything queued was delivered.
    Clear,
    /// The consumer is behind; something is still queued.
    Blocked { since: Instant },
    /// The consumer is gone.
    Closed,
}

impl Outbox {
    fn new(tx: mpsc::Sender<GenEvent>) -> Outbox {
        Outbox {
            tx,
            queue: VecDeque::new(),
            blocked_since: None,
        }
    }

    fn flush(&mut self) -> Flow {
        while let Some(ev) = self.queue.pop_front() {
            if self.tx.is_closed() {
                self.queue.clear();
                return Flow::Closed;
            }
            let reserve = match ev {
                GenEvent::Text { .. } => FINAL_EVENT,
                GenEvent::Done { .. } | GenEvent::Failed { .. } => 0,
            };
            let sent = if self.tx.capacity() > reserve {
                self.tx.try_send(ev)
            } else {
                Err(mpsc::error::TrySendError::Full(ev))
            };
            match sent {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Closed(_)) => {
                    self.queue.clear();
                    return Flow::Closed;
                }
                Err(mpsc::error::TrySendError::Full(back)) => {
                    self.queue.push_front(back);
                    let since = *self.blocked_since.get_or_insert_with(Instant::now);
                    return Flow::Blocked { since };
                }
            }
        }
        self.blocked_since = None;
        Flow::Clear
    }
}

/// One sequence of the context: its id and the tokens whose cells it holds (positions
/// `0..cached.len()`).
struct Seq {
    id: i32,
    cached: Vec<LlamaToken>,
    last_used: u64,
    run: Option<Box<Running>>,
    /// Set while the sequence is parked: its cells copied to host memory and cleared from
    /// the context, `cached` still naming what they hold (see [`Batcher::park_idle`]).
    parked: Option<ParkedState>,
}

/// Where a running job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for the job started as `leader_order` on sequence `leader` to evaluate the
    /// first `upto` prompt tokens, which this one then copies.
    Follow {
        leader: usize,
        leader_order: u64,
        upto: usize,
    },
    /// Evaluating the prompt from the sequence's cached length on.
    Prefill,
    /// `token` was sampled (and its text queued); it goes into the next batch.
    Decode { token: LlamaToken },
}

/// A job on its sequence, with everything its generation keeps between steps.
struct Running {
    job: Job,
    /// The order jobs started in: older prompts are evaluated first.
    order: u64,
    phase: Phase,
    out: Outbox,
    sampler: JobSampler,
    utf8: Utf8Assembler,
    stops: StopMatcher,
    /// Tokens and log probabilities of text not yet sent.
    pending: Vec<i32>,
    pending_logprobs: Vec<TokenLogprob>,
    timings: Timings,
    /// When the job reached its sequence.
    started: Instant,
    eval_start: Instant,
    gen_start: Instant,
    halted: bool,
    /// The draft tokens put into the current batch after the last sampled token.
    draft: Vec<LlamaToken>,
    pace: Pace,
    /// The draft not made while drafts do not pay, checked against the tokens sampled.
    shadow: Shadow,
}

/// How a job ended on its sequence: a stop of some kind, or an engine failure, which is never
/// reported as a stop.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ending {
    Stopped(StopReason),
    Failed(String),
}

impl Ending {
    /// The stream's last event.
    pub(crate) fn event(self, timings: Timings) -> GenEvent {
        match self {
            Ending::Stopped(reason) => GenEvent::Done { reason, timings },
            Ending::Failed(error) => GenEvent::Failed { error, timings },
        }
    }
}

/// What one sequence put into a batch.
#[derive(Debug, Clone, Copy)]
struct Entry {
    seq: usize,
    kind: EntryKind,
    /// The batch index of its last token, when that token gets logits.
    logits: Option<i32>,
}

#[derive(Debug, Clone, Copy)]
enum EntryKind {
    /// Prompt tokens `from..to`.
    Prompt { from: usize, to: usize },
    /// The last sampled token.
    Token(LlamaToken),
}

struct Batcher<'m> {
    model: &'m LlamaModel,
    ctx: LlamaContext<'m>,
    batch: LlamaBatch<'static>,
    cfg: BatcherConfig,
    seqs: Vec<Seq>,
    /// Reused candidate buffer, so sampling does not allocate a vocabulary-sized array per token.
    candidates: Vec<LlamaTokenData>,
    /// Final events of finished jobs still on their way to slow consumers.
    closing: Vec<Outbox>,
    /// Jobs started so far (orders them).
    started: u64,
    /// What a draft's rows cost, timed on one-sequence generation steps.
    step_cost: StepCost,
}

impl Batcher<'_> {
    /// Whether anything is left to do besides waiting for jobs.
    fn busy(&self) -> bool {
        !self.closing.is_empty() || self.seqs.iter().any(|s| s.run.is_some())
    }

    /// Takes a job onto sequence `i`: reuses the sequence's own cached prefix, copies a longer
    /// one from another sequence, or waits for a sequence still evaluating it.
    fn start(&mut self, i: usize, job: Job, shared: &Shared) {
        if job.tx.is_closed() {
            // The consumer left while the job queued: nothing to say to anyone.
            self.publish_idle(i, shared);
            return;
        }
        let now = Instant::now();
        self.unpark(i, &job.tokens);
        let own = self.reuse_own_prefix(i, &job.tokens);
        // At least the last prompt token is evaluated here, for its logits.
        let limit = job.tokens.len() - 1;
        let mut phase = Phase::Prefill;
        if self.cfg.n_swa.is_none() {
            let mut best_done = (own, None);
            let mut best_follow: Option<(usize, u64, usize)> = None;
            for (j, other) in self.seqs.iter().enumerate() {
                if j == i || other.parked.is_some() {
                    continue;
                }
                let evaluated = common_prefix(&other.cached, &job.tokens).min(limit);
                if evaluated > best_done.0 {
                    best_done = (evaluated, Some(j));
                }
                if let Some(run) = &other.run
                    && run.phase == Phase::Prefill
                {
                    let target = common_prefix(&run.job.tokens, &job.tokens).min(limit);
                    if target > evaluated && best_follow.is_none_or(|(_, _, t)| target > t) {
                        best_follow = Some((j, run.order, target));
                    }
                }
            }
            match best_follow {
                Some((leader, leader_order, upto)) if upto > best_done.0 => {
                    phase = Phase::Follow {
                        leader,
                        leader_order,
                        upto,
                    };
                    if let (n, Some(donor)) = best_done {
                        self.copy_prefix(donor, i, &job.tokens[..n]);
                    }
                }
                _ => {
                    if let (n, Some(donor)) = best_done {
                        self.copy_prefix(donor, i, &job.tokens[..n]);
                    }
                }
            }
        }
        self.park_idle(i);
        self.make_room(i, job.reserve, shared);
        let cached = self.seqs[i].cached.len() as u32;
        job.progress.set_cached(cached);
        let mut job = job;
        let sampler = JobSampler::new(
            self.model,
            &job.sampling,
            self.cfg.n_ctx_seq,
            job.grammar.take(),
            job.logprobs,
        );
        self.started += 1;
        let run = Running {
            out: Outbox::new(job.tx.clone()),
            stops: StopMatcher::new(&job.stop),
            timings: Timings {
                prompt_tokens: job.tokens.len() as u32,
                cached_tokens: cached,
                ..Timings::default()
            },
            job,
            order: self.started,
            phase,
            sampler,
            utf8: Utf8Assembler::new(),
            pending: Vec::new(),
            pending_logprobs: Vec::new(),
            started: now,
            eval_start: now,
            gen_start: now,
            halted: false,
            draft: Vec::new(),
            pace: Pace::new(),
            shadow: Shadow::default(),
        };
        self.seqs[i].run = Some(Box::new(run));
    }

    /// How many of its cached tokens sequence `i` keeps for `prompt`, after making its cells
    /// agree.
    fn reuse_own_prefix(&mut self, i: usize, prompt: &[LlamaToken]) -> usize {
        let seq = &mut self.seqs[i];
        let mut n = common_prefix(&seq.cached, prompt);
        // At least one prompt token must be evaluated to get logits for the first sample.
        if n == prompt.len() {
            n -= 1;
        }
        // With sliding-window attention the cache keeps only the last window of positions;
        // a prefix is reusable only if what was evicted lies entirely before the window the
        // next token will attend to.
        if n > 0
            && let Some(n_swa) = self.cfg.n_swa
        {
            let pos_min = self.ctx.kv_cache_seq_pos_min(seq.id);
            let floor = n.saturating_sub(n_swa as usize);
            if pos_min >= 0 && pos_min as usize > floor {
                tracing::debug!(
                    pos_min,
                    n_common = n,
                    n_swa,
                    "sliding window evicted the prefix; re-evaluating"
                );
                n = 0;
            }
        }
        if n < seq.cached.len() {
            let id = seq.id as u32;
            let removed = n > 0
                && matches!(
                    self.ctx.clear_kv_cache_seq(Some(id), Some(n as u32), None),
                    Ok(true)
                );
            if !removed {
                let _ = self.ctx.clear_kv_cache_seq(Some(id), None, None);
                n = 0;
            }
            seq.cached.truncate(n);
        }
        n
    }

    /// Makes sequence `to` share `from`'s cells for `prefix` (which both start with; `to`
    /// already holds the part its own cache had).
    fn copy_prefix(&mut self, from: usize, to: usize, prefix: &[LlamaToken]) {
        let have = self.seqs[to].cached.len();
        if prefix.len() <= have || self.seqs[from].parked.is_some() {
            // A parked sequence holds no cells to share: `to` evaluates the rest itself.
            return;
        }
        let (src, dst) = (self.seqs[from].id, self.seqs[to].id);
        let copied =
            self.ctx
                .copy_kv_cache_seq(src, dst, Some(have as u32), Some(prefix.len() as u32));
        if copied.is_ok() {
            self.seqs[to].cached.extend_from_slice(&prefix[have..]);
        }
    }

    /// Parks every idle sequence but `i` that holds cells: copies its cells to host memory
    /// and clears them from the context, keeping `cached`, so the queue still routes its
    /// conversation back to it. In a unified KV cache every batch attends over the span of
    /// occupied cells, masked or not, so idle caches left in place slow every other sequence
    /// (a ~1,500-token prompt took 7.2 s beside eight idle 1,000-token caches, 5.8 s alone;
    /// llama-server clears idle slots the same way). A parked cache costs one copy out and,
    /// when its conversation comes back, one copy in.
    fn park_idle(&mut self, i: usize) {
        for j in 0..self.seqs.len() {
            let seq = &self.seqs[j];
            if j == i || seq.run.is_some() || seq.parked.is_some() || seq.cached.is_empty() {
                continue;
            }
            let id = seq.id;
            match self.ctx.state_seq_get(id, LlamaStateSeqFlags::empty()) {
                Ok(state) => {
                    let _ = self.ctx.clear_kv_cache_seq(Some(id as u32), None, None);
                    self.seqs[j].parked = Some(state);
                }
                // Not parked: the cells stay where they are, still usable.
                Err(e) => tracing::debug!(seq = id, error = %e, "could not park an idle sequence"),
            }
        }
    }

    /// Brings sequence `i`'s parked cells back when `prompt` reuses at least
    /// [`RESTORE_MIN_TOKENS`] of them; otherwise drops them (a chat template's first tokens
    /// are cheaper to evaluate again than a whole cache to copy in and cut). A restore that fails (no room) leaves the sequence empty: the prompt is
    /// evaluated in full, never on cells that are not there.
    fn unpark(&mut self, i: usize, prompt: &[LlamaToken]) {
        let Some(state) = self.seqs[i].parked.take() else {
            return;
        };
        let id = self.seqs[i].id;
        if common_prefix(&self.seqs[i].cached, prompt) >= RESTORE_MIN_TOKENS {
            if self.ctx.state_seq_set(&state, id).is_ok() {
                return;
            }
            // No room while other idle caches sit in the context: park them and try again.
            self.park_idle(i);
            match self.ctx.state_seq_set(&state, id) {
                Ok(()) => return,
                Err(e) => {
                    tracing::debug!(seq = id, error = %e, "could not restore a parked sequence")
                }
            }
        }
        let _ = self.ctx.clear_kv_cache_seq(Some(id as u32), None, None);
        self.seqs[i].cached.clear();
    }

    /// Evicts idle sequences' caches, least recently used first, until the running jobs'
    /// reservations, sequence `i`'s new one and the caches kept fit the context.
    fn make_room(&mut self, i: usize, reserve: usize, shared: &Shared) {
        // Stamped with the order of the job about to start, the newest: eviction goes by it.
        self.seqs[i].last_used = self.started + 1;
        let total = self.cfg.n_ctx_total as usize;
        loop {
            let held: usize = self
                .seqs
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .map(|(_, s)| match &s.run {
                    Some(run) => run.job.reserve,
                    None if s.parked.is_some() => 0,
                    None => s.cached.len(),
                })
                .sum();
            if held + reserve <= total {
                return;
            }
            let victim = self
                .seqs
                .iter()
                .enumerate()
                .filter(|&(j, s)| {
                    j != i && s.run.is_none() && s.parked.is_none() && !s.cached.is_empty()
                })
                .min_by_key(|(_, s)| s.last_used)
                .map(|(j, _)| j);
            let Some(j) = victim else { return };
            let id = self.seqs[j].id as u32;
            let _ = self.ctx.clear_kv_cache_seq(Some(id), None, None);
            self.seqs[j].cached.clear();
            lock(&shared.sched).seqs[j].cached.clear();
        }
    }

    /// Runs one step: settles followers, delivers events, decodes one batch and samples.
    /// `false` when there was nothing to decode.
    fn step(&mut self, shared: &Shared) -> bool {
        self.flush_closing();
        // Consumers that left, and the write-stall bound.
        for i in 0..self.seqs.len() {
            let Some(run) = self.seqs[i].run.as_mut() else {
                continue;
            };
            let ending = match run.out.flush() {
                Flow::Closed => Some(Ending::Stopped(StopReason::Cancelled)),
                Flow::Blocked { since } if since.elapsed() >= self.cfg.write_stall => {
                    tracing::warn!(
                        stall_ms = self.cfg.write_stall.as_millis() as u64,
                        "the consumer stopped reading; cancelling the generation"
                    );
                    Some(Ending::Stopped(StopReason::Cancelled))
                }
                _ if run.job.tx.is_closed() => Some(Ending::Stopped(StopReason::Cancelled)),
                _ => None,
            };
            if let Some(ending) = ending {
                self.end(i, ending, shared);
            }
        }
        self.settle_followers();

        let entries = self.fill_batch();
        if entries.is_empty() {
            return false;
        }
        let at = split_point(
            &entries,
            self.batch.n_tokens() as usize,
            self.cfg.split_wide_steps,
        );
        match at {
            Some(at) => {
                shared.split_steps.fetch_add(1, Ordering::Relaxed);
                let (tokens, prompts) = entries.split_at(at);
                for part in [tokens, prompts] {
                    self.batch.clear();
                    let part: Vec<Entry> = part
                        .iter()
                        .filter_map(|&e| self.add(Entry { logits: None, ..e }))
                        .collect();
                    if !part.is_empty() {
                        self.decode_entries(part, shared);
                    }
                }
            }
            None => self.decode_entries(entries, shared),
        }
        true
    }

    /// Decodes the batch holding `entries` and takes its results; when a batch of several
    /// sequences fails, decodes each one's part alone, so one bad input fails only its own job.
    fn decode_entries(&mut self, entries: Vec<Entry>, shared: &Shared) {
        let began = Instant::now();
        match self.decode() {
            Ok(()) => {
                if let [
                    Entry {
                        kind: EntryKind::Token(_),
                        ..
                    },
                ] = entries[..]
                {
                    // One sequence's token and its draft: what lookup decoding weighs.
                    let width = self.batch.n_tokens() as usize;
                    self.step_cost.observe(width, began.elapsed().as_secs_f64());
                }
                self.after_decode(&entries, shared)
            }
            Err(e) if entries.len() == 1 => self.fail(entries[0], &e, shared),
            Err(e) => {
                // One sequence's bad input must not sink the others: take the batch back and
                // decode each sequence's part alone.
                tracing::warn!(error = %e, sequences = entries.len(), "a batch failed; retrying its sequences one by one");
                for entry in &entries {
                    let seq = &self.seqs[entry.seq];
                    let _ = self.ctx.clear_kv_cache_seq(
                        Some(seq.id as u32),
                        Some(seq.cached.len() as u32),
                        None,
                    );
                }
                for entry in entries {
                    let Some(entry) = self.refill(entry) else {
                        continue;
                    };
                    match self.decode() {
                        Ok(()) => self.after_decode(&[entry], shared),
                        Err(e) => self.fail(entry, &e, shared),
                    }
                }
            }
        }
    }

    /// Followers whose leader has evaluated what they wait for (or stopped evaluating) copy
    /// it and go on with their own prefill.
    fn settle_followers(&mut self) {
        for i in 0..self.seqs.len() {
            let Some(Phase::Follow {
                leader,
                leader_order,
                upto,
            }) = self.seqs[i].run.as_ref().map(|r| r.phase)
            else {
                continue;
            };
            let waiting = self.seqs[leader].run.as_ref().is_some_and(|r| {
                r.order == leader_order
                    && r.phase == Phase::Prefill
                    && self.seqs[leader].cached.len() < upto
            });
            if waiting {
                continue;
            }
            let tokens = self.seqs[i]
                .run
                .as_ref()
                .map(|r| r.job.tokens[..upto].to_vec())
                .unwrap_or_default();
            let n = common_prefix(&self.seqs[leader].cached, &tokens);
            self.copy_prefix(leader, i, &tokens[..n]);
            let cached = self.seqs[i].cached.len() as u32;
            if let Some(run) = self.seqs[i].run.as_mut() {
                run.phase = Phase::Prefill;
                run.eval_start = Instant::now();
                run.timings.cached_tokens = cached;
                run.job.progress.set_cached(cached);
            }
        }
    }

    /// Puts every generating sequence's token into the batch, then prompt chunks, oldest job
    /// first, within the step's budget.
    fn fill_batch(&mut self) -> Vec<Entry> {
        self.batch.clear();
        let mut entries = Vec::new();
        let mut budget = self.cfg.n_batch.max(self.cfg.n_seqs) as usize;
        let ready: Vec<(usize, LlamaToken)> = self
            .seqs
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match s.run.as_ref() {
                Some(run) if run.out.queue.is_empty() => match run.phase {
                    Phase::Decode { token } => Some((i, token)),
                    _ => None,
                },
                _ => None,
            })
            .collect();
        let drafting = match self.cfg.lookup {
            Lookup::Off => false,
            Lookup::Auto => ready.len() <= LOOKUP_AUTO_MAX_SEQS,
            Lookup::On => true,
        };
        // Each generating sequence's token first (one each), then drafts from what is left.
        let mut spare = budget.saturating_sub(ready.len());
        for (i, token) in ready {
            if drafting {
                self.draft(i, token, &mut spare);
            }
            let entry = Entry {
                seq: i,
                kind: EntryKind::Token(token),
                logits: None,
            };
            if let Some(entry) = self.add(entry) {
                budget -= 1 + self.seqs[i].run.as_ref().map_or(0, |r| r.draft.len());
                entries.push(entry);
            }
        }
        if !entries.is_empty() {
            budget = budget.min(self.cfg.prefill_chunk.max(1) as usize);
        }
        let mut prefilling: Vec<(u64, usize)> = self
            .seqs
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                s.run
                    .as_ref()
                    .filter(|r| r.phase == Phase::Prefill)
                    .map(|r| (r.order, i))
            })
            .collect();
        prefilling.sort_unstable();
        for (_, i) in prefilling {
            if budget == 0 {
                break;
            }
            let from = self.seqs[i].cached.len();
            let Some(run) = self.seqs[i].run.as_mut() else {
                continue;
            };
            let to = run.job.tokens.len().min(from + budget);
            let entry = Entry {
                seq: i,
                kind: EntryKind::Prompt { from, to },
                logits: None,
            };
            if let Some(entry) = self.add(entry) {
                budget -= to - from;
                entries.push(entry);
            }
        }
        entries
    }

    /// Adds an entry's tokens to the batch (logits for a prompt's last token and for every
    /// generated one); `None` if the batch refused them.
    fn add(&mut self, mut entry: Entry) -> Option<Entry> {
        let seq = &self.seqs[entry.seq];
        let run = seq.run.as_ref()?;
        let base = seq.cached.len();
        let ids = [seq.id];
        match entry.kind {
            EntryKind::Token(token) => {
                self.batch.add(token, base as i32, &ids, true).ok()?;
                entry.logits = Some(self.batch.n_tokens() - 1);
                for (j, &d) in run.draft.iter().enumerate() {
                    self.batch.add(d, (base + 1 + j) as i32, &ids, true).ok()?;
                }
            }
            EntryKind::Prompt { from, to } => {
                let last = to == run.job.tokens.len();
                for (j, &t) in run.job.tokens[from..to].iter().enumerate() {
                    let pos = (base + j) as i32;
                    let logits = last && from + j + 1 == to;
                    self.batch.add(t, pos, &ids, logits).ok()?;
                }
                if last {
                    entry.logits = Some(self.batch.n_tokens() - 1);
                }
            }
        }
        Some(entry)
    }

    /// A batch of this one entry, for the retry after a failed batch.
    fn refill(&mut self, entry: Entry) -> Option<Entry> {
        self.seqs[entry.seq].run.as_ref()?;
        self.batch.clear();
        self.add(Entry {
            logits: None,
            ..entry
        })
    }

    fn decode(&mut self) -> Result<(), String> {
        self.ctx.decode(&mut self.batch).map_err(|e| e.to_string())
    }

    /// Records what the batch evaluated and samples for every entry with logits.
    fn after_decode(&mut self, entries: &[Entry], shared: &Shared) {
        for entry in entries {
            {
                let seq = &mut self.seqs[entry.seq];
                let Some(run) = seq.run.as_mut() else {
                    continue;
                };
                match entry.kind {
                    EntryKind::Token(token) => seq.cached.push(token),
                    EntryKind::Prompt { from, to } => {
                        seq.cached.extend_from_slice(&run.job.tokens[from..to]);
                        if to == run.job.tokens.len() {
                            run.timings.prompt_eval = run.eval_start.elapsed();
                        }
                    }
                }
            }
            let Some(idx) = entry.logits else {
                continue;
            };
            let draft = self.seqs[entry.seq]
                .run
                .as_mut()
                .map(|r| std::mem::take(&mut r.draft))
                .unwrap_or_default();
            // Sample at the token's position, then at each draft token's while the sampler
            // agrees with the draft: an agreed draft token's cells are already evaluated.
            let mut ending = None;
            let mut accepted = 0;
            for j in 0..=draft.len() {
                ending = self.advance(entry.seq, idx + j as i32);
                if ending.is_some() {
                    break;
                }
                let agreed = draft.get(j).is_some_and(|&d| {
                    self.seqs[entry.seq]
                        .run
                        .as_ref()
                        .is_some_and(|r| r.phase == Phase::Decode { token: d })
                });
                if !agreed {
                    break;
                }
                self.seqs[entry.seq].cached.push(draft[j]);
                accepted += 1;
                if let Some(run) = self.seqs[entry.seq].run.as_mut() {
                    run.timings.draft_accepted += 1;
                }
            }
            // No draft in the batch: the shadow draft, if one is pending, meets the token.
            if draft.is_empty()
                && ending.is_none()
                && let Some(run) = self.seqs[entry.seq].run.as_mut()
                && let Phase::Decode { token } = run.phase
                && let Some((drafted, taken)) = run.shadow.observe(token)
            {
                run.pace.record(drafted, taken);
            }
            if !draft.is_empty() {
                // Cells of draft tokens the sampler did not take are dropped.
                let seq = &self.seqs[entry.seq];
                let _ = self.ctx.clear_kv_cache_seq(
                    Some(seq.id as u32),
                    Some(seq.cached.len() as u32),
                    None,
                );
                if let Some(run) = self.seqs[entry.seq].run.as_mut() {
                    run.timings.draft_tokens += draft.len() as u32;
                    run.pace.record(draft.len(), accepted);
                }
            }
            if let Some(ending) = ending {
                self.end(entry.seq, ending, shared);
            }
        }
    }

    /// Drafts sequence `i`'s next tokens after `token` from n-grams of what it holds, within
    /// `spare` batch positions, its context and its `max_tokens`.
    fn draft(&mut self, i: usize, token: LlamaToken, spare: &mut usize) {
        let max_seq = self.cfg.n_ctx_seq as usize;
        let lookup_max = self.cfg.lookup_max as usize;
        let seq = &mut self.seqs[i];
        let Some(run) = seq.run.as_mut() else {
            return;
        };
        run.draft.clear();
        // Room after the token itself: the context, and the tokens still to generate after
        // the one the token's logits give.
        let room_ctx = max_seq.saturating_sub(seq.cached.len() + 2);
        let room_max = run.job.max_tokens.map_or(usize::MAX, |m| {
            (m as usize).saturating_sub(run.timings.generated_tokens as usize + 1)
        });
        let max = lookup_max.min(*spare).min(room_ctx).min(room_max);
        if max == 0 {
            return;
        }
        if run.shadow.pending() {
            // The last draft not made is still being checked: its outcome decides the next.
            return;
        }
        let len = match self.cfg.lookup {
            Lookup::Auto => run.pace.want(max, |w| self.step_cost.of(w)),
            _ => run.pace.want(max, |_| 1.0),
        };
        seq.cached.push(token);
        if len > 0 {
            run.draft = lookup_draft(&seq.cached, len);
        } else {
            run.shadow
                .start(lookup_draft(&seq.cached, SHADOW_LEN.min(lookup_max)));
        }
        seq.cached.pop();
        *spare -= run.draft.len();
    }

    /// A sequence whose part of a batch llama.cpp refused ends as failed, its cells cleared:
    /// KV entries of a failed batch are not trustworthy.
    fn fail(&mut self, entry: Entry, error: &str, shared: &Shared) {
        let seq = &mut self.seqs[entry.seq];
        let _ = self.ctx.clear_kv_cache_seq(Some(seq.id as u32), None, None);
        seq.cached.clear();
        let message = match (entry.kind, seq.run.as_ref()) {
            (EntryKind::Prompt { .. }, _) => {
                tracing::error!(error = %error, "prompt evaluation failed");
                format!("prompt evaluation failed: {error}")
            }
            (EntryKind::Token(_), run) => {
                tracing::error!(error = %error, "decoding a generated token failed");
                format!(
                    "decoding generated token {} failed: {error}",
                    run.map_or(0, |r| r.timings.generated_tokens)
                )
            }
        };
        self.end(entry.seq, Ending::Failed(message), shared);
    }

    /// Samples sequence `i`'s next token from the logits at batch index `idx`, queues its text,
    /// and says whether the job ends here.
    fn advance(&mut self, i: usize, idx: i32) -> Option<Ending> {
        let n_ctx_seq = self.cfg.n_ctx_seq as usize;
        let cached = self.seqs[i].cached.len();
        let run = self.seqs[i].run.as_mut()?;
        if run.job.tx.is_closed() {
            return Some(Ending::Stopped(StopReason::Cancelled));
        }
        if run
            .job
            .max_tokens
            .is_some_and(|m| run.timings.generated_tokens >= m)
        {
            return Some(Ending::Stopped(StopReason::MaxTokens));
        }
        // A halt ends like a stop string but keeps what was held back: it is real output.
        if run.job.halt.load(Ordering::Relaxed) {
            run.halted = true;
            return Some(Ending::Stopped(StopReason::Stop));
        }
        let (token, scored) = run.sampler.sample(&self.ctx, idx, &mut self.candidates);
        if run.timings.generated_tokens == 0 {
            run.timings.time_to_first_token = run.job.admitted.elapsed();
            run.gen_start = Instant::now();
            let us = |d: Duration| d.as_micros() as u64;
            let admission = run.job.queued.saturating_duration_since(run.job.admitted);
            let queue = run.started.saturating_duration_since(run.job.queued);
            tracing::debug!(
                admission_us = us(admission),
                queue_us = us(queue),
                prompt_eval_us = us(run.timings.prompt_eval),
                ttft_us = us(run.timings.time_to_first_token),
                "first token"
            );
        }
        run.timings.generated_tokens += 1;
        run.job.progress.set_generated(run.timings.generated_tokens);
        let vocab = self.model.vocab();
        if vocab.is_eog(token) {
            return Some(Ending::Stopped(StopReason::Eog));
        }
        run.pending.push(token.0);
        let bytes = vocab.token_to_piece(token, false, None);
        if let Some(scored) = scored {
            run.pending_logprobs.push(TokenLogprob {
                token: token.0,
                bytes: bytes.clone(),
                logprob: scored.logprob,
                top: scored
                    .top
                    .into_iter()
                    .map(|(t, logprob)| TopLogprob {
                        token: t.0,
                        bytes: vocab.token_to_piece(t, false, None),
                        logprob,
                    })
                    .collect(),
            });
        }
        let text = run.utf8.push(&bytes);
        if !text.is_empty() {
            match run.stops.push(&text) {
                StopScan::Emit(s) => run.queue_text(s),
                StopScan::Stopped(s) => {
                    run.queue_text(s);
                    return Some(Ending::Stopped(StopReason::Stop));
                }
            }
        }
        if run
            .job
            .max_tokens
            .is_some_and(|m| run.timings.generated_tokens >= m)
        {
            return Some(Ending::Stopped(StopReason::MaxTokens));
        }
        // Every position of the sequence is used: a real full context, not a failure.
        if cached >= n_ctx_seq {
            return Some(Ending::Stopped(StopReason::ContextFull));
        }
        run.phase = Phase::Decode { token };
        None
    }

    /// Ends the job on sequence `i`: flushes what was held back when the ending calls for it,
    /// publishes the sequence idle with its cache, then queues the final event.
    fn end(&mut self, i: usize, ending: Ending, shared: &Shared) {
        let Some(mut run) = self.seqs[i].run.take() else {
            return;
        };
        let mut ending = ending;
        let flush = match &ending {
            Ending::Stopped(StopReason::Stop | StopReason::Cancelled) => run.halted,
            Ending::Stopped(_) => true,
            // A failed stream ends broken; what was held back is not flushed as if it were
            // the end of a reply.
            Ending::Failed(_) => false,
        };
        if flush {
            // Whatever was held back (a split character, a false start of a stop string) is
            // real output now that nothing more follows.
            let tail = run.utf8.finish();
            let mut out = String::new();
            match run.stops.push(&tail) {
                StopScan::Emit(s) => {
                    out.push_str(&s);
                    out.push_str(&run.stops.finish());
                }
                StopScan::Stopped(s) => {
                    out.push_str(&s);
                    ending = Ending::Stopped(StopReason::Stop);
                }
            }
            run.queue_text(out);
        }
        if run.timings.generated_tokens > 0 {
            run.timings.generation = run.gen_start.elapsed();
        }
        // The sequence is published idle, with its cache, before `Done` goes out: a client
        // that sends its next turn after `Done` always finds the sequence that holds its
        // history free.
        self.publish_idle(i, shared);
        let Running {
            mut out,
            timings,
            job,
            ..
        } = *run;
        out.queue.push_back(ending.event(timings));
        if out.flush() != Flow::Clear && !out.queue.is_empty() {
            self.closing.push(out);
        }
        // The job (and its progress guard) goes only after the final event is queued.
        drop(job);
    }

    fn publish_idle(&mut self, i: usize, shared: &Shared) {
        {
            let mut s = lock(&shared.sched);
            let state = &mut s.seqs[i];
            state.cached.clone_from(&self.seqs[i].cached);
            state.busy = false;
            state.reserved = 0;
            s.dispatch();
        }
        shared.wake.notify_all();
    }

    /// Delivers final events held for slow consumers; one stalled past the bound loses its
    /// remaining text, never its final event.
    fn flush_closing(&mut self) {
        let stall = self.cfg.write_stall;
        self.closing.retain_mut(|out| match out.flush() {
            Flow::Clear | Flow::Closed => false,
            Flow::Blocked { since } => {
                if since.elapsed() >= stall {
                    out.queue.retain(|ev| !matches!(ev, GenEvent::Text { .. }));
                    out.flush() == Flow::Blocked { since }
                } else {
                    true
                }
            }
        });
    }

    /// Ends every running job as cancelled (their final events go out if there is room) and
    /// drops the rest.
    fn shut_down(&mut self) {
        for seq in &mut self.seqs {
            if let Some(run) = seq.run.take() {
                let _ = run
                    .job
                    .tx
                    .try_send(Ending::Stopped(StopReason::Cancelled).event(run.timings.clone()));
            }
        }
        self.closing.clear();
    }
}

impl Running {
    /// Queues a text event with the tokens and log probabilities behind it.
    fn queue_text(&mut self, piece: String) {
        if piece.is_empty() {
            return;
        }
        self.out.queue.push_back(GenEvent::Text {
            piece,
            tokens: std::mem::take(&mut self.pending),
            logprobs: std::mem::take(&mut self.pending_logprobs),
        });
    }
}

/// Whether wide mixed steps are split ([`SPLIT_MIN_TOKENS`]): only where the tiles it works
/// around exist, attention on the CPU with flash attention not off. Without flash attention
/// every row attends over every cell, masked or not; on a GPU the kernels differ, and there
/// the extra pass over the weights is what a split would surely cost.
pub(crate) fn splits_wide_steps(all_on_cpu: bool, flash_attn: FlashAttn) -> bool {
    all_on_cpu && flash_attn != FlashAttn::Off
}

/// Where a step's entries split into two batches (see [`SPLIT_MIN_TOKENS`]): after the
/// generated tokens, which `fill_batch` puts first, when prompt chunks follow them, the batch
/// holds at least that many tokens, and splitting is on.
fn split_point(entries: &[Entry], n_tokens: usize, split: bool) -> Option<usize> {
    let at = entries
        .iter()
        .position(|e| matches!(e.kind, EntryKind::Prompt { .. }))?;
    (split && at > 0 && n_tokens >= SPLIT_MIN_TOKENS).then_some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_splits_after_its_generated_tokens_only_when_it_is_wide_and_mixed() {
        let token = |seq| Entry {
            seq,
            kind: EntryKind::Token(LlamaToken(1)),
            logits: None,
        };
        let prompt = |seq, to| Entry {
            seq,
            kind: EntryKind::Prompt { from: 0, to },
            logits: None,
        };
        let mixed = [token(0), token(1), prompt(2, 62)];
        assert_eq!(split_point(&mixed, 64, true), Some(2));
        assert_eq!(split_point(&mixed, 63, true), None, "narrow");
        assert_eq!(split_point(&mixed, 64, false), None, "splitting off");
        let tokens = [token(0), token(1)];
        assert_eq!(split_point(&tokens, 80, true), None);
        let prompts = [prompt(0, 40), prompt(1, 40)];
        assert_eq!(split_point(&prompts, 80, true), None);
        assert_eq!(split_point(&[], 0, true), None);
        // On only where llama.cpp's tiled CPU attention runs.
        assert!(splits_wide_steps(true, FlashAttn::Auto));
        assert!(splits_wide_steps(true, FlashAttn::On));
        assert!(
            !splits_wide_steps(true, FlashAttn::Off),
            "no tiles to spoil"
        );
        assert!(
            !splits_wide_steps(false, FlashAttn::Auto),
            "attention on a GPU"
        );
    }

    #[test]
    fn endings_map_to_their_events() {
        let t = Timings::default();
        assert!(matches!(
            Ending::Stopped(StopReason::ContextFull).event(t.clone()),
            GenEvent::Done {
                reason: StopReason::ContextFull,
                ..
            }
        ));
        assert!(matches!(
            Ending::Failed("boom".to_owned()).event(t),
            GenEvent::Failed { error, .. } if error == "boom"
        ));
    }

    #[test]
    fn an_outbox_keeps_a_permit_for_the_final_event_and_reports_a_stall() {
        let (tx, mut rx) = mpsc::channel(3);
        let mut out = Outbox::new(tx);
        for k in 0..3 {
            out.queue.push_back(GenEvent::Text {
                piece: format!("t{k}"),
                tokens: Vec::new(),
                logprobs: Vec::new(),
            });
        }
        // Two text events fit; the third waits, keeping the last permit free.
        assert!(matches!(out.flush(), Flow::Blocked { .. }));
        assert_eq!(out.queue.len(), 1);
        out.queue
            .push_back(Ending::Stopped(StopReason::Stop).event(Timings::default()));
        // Still blocked: the final event does not overtake the text before it.
        assert!(matches!(out.flush(), Flow::Blocked { .. }));
        assert_eq!(out.queue.len(), 2);
        assert!(matches!(rx.try_recv(), Ok(GenEvent::Text { piece, .. }) if piece == "t0"));
        // One permit freed: the text takes it and the final event the kept one.
        assert_eq!(out.flush(), Flow::Clear);
        assert!(out.blocked_since.is_none());
        for want in ["t1", "t2"] {
            assert!(matches!(rx.try_recv(), Ok(GenEvent::Text { piece, .. }) if piece == want));
        }
        assert!(matches!(rx.try_recv(), Ok(GenEvent::Done { .. })));
        drop(rx);
        out.queue
            .push_back(Ending::Stopped(StopReason::Stop).event(Timings::default()));
        assert_eq!(out.flush(), Flow::Closed);
    }
}
