//! OpenAI's `n`: several choices from one request.
//!
//! Each choice is a generation of its own: [`admit`] calls the engine's `generate` once per
//! choice with the same request (the seed, when the client gave one, offset by the choice's
//! index, so the choices differ at a temperature above zero), all before any is consumed, so
//! an engine with several slots runs them side by side. Each choice then gets its own
//! [`Turn`] (its own decoder, tool calls, finish reason and log probabilities); [`Choices`]
//! drives them on a task each and hands their steps on, tagged with the choice's index, in
//! the order they arrive. Dropping [`Choices`] aborts the tasks, which drops every
//! generation and so cancels it.
//!
//! Usage is OpenAI's: the prompt once, the completion tokens summed over the choices (see
//! [`Tally`]). The token metrics count each generation (the engine's work), the request
//! metrics count the request once.

use std::sync::Arc;
use std::time::Instant;

use models::GenerateRequest;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::api::response::Usage;
use crate::error::ApiError;
use crate::reply::{Inflight, Siblings, Step, Turn};
use crate::state::AppState;
use crate::tools::ToolPlan;

/// The generations of one request, admitted and not yet running on their tasks.
#[derive(Debug)]
pub struct Admitted {
    turns: Vec<Turn>,
    siblings: Arc<Siblings>,
}

/// Admits `n` generations of `req`, choice `i` with seed `seed + i` (wrapping) when `req`
/// has a seed. When one cannot be admitted, those admitted before it are dropped (which
/// cancels them) and the error is the request's, as for a single choice;
/// `max_tokens_param` names the parameter an error about `max_tokens` concerns.
pub async fn admit(
    state: &AppState,
    req: GenerateRequest,
    n: u32,
    plan: ToolPlan,
    max_tokens_param: &'static str,
) -> Result<Admitted, ApiError> {
    // An upstream pool does not queue: it refuses a generation when every upstream is at its
    // cap, so a request for more choices than it runs at once could never be served.
    let places = state.engine.info().slots;
    if state.upstream.is_some() && n > places {
        return Err(ApiError::invalid(
            "n",
            format!(
                "n = {n} is more than the {places} generations the upstreams run at once; \
                 ask for at most {places} choices"
            ),
        ));
    }
    let started = Instant::now();
    let siblings = Arc::new(Siblings::default());
    let mut turns = Vec::with_capacity(n as usize);
    let seed = req.sampling.seed;
    let mut requests: Vec<GenerateRequest> = (1..n).map(|_| req.clone()).collect();
    requests.push(req);
    for (i, mut choice) in (0u32..).zip(requests) {
        if let Some(seed) = seed {
            choice.sampling.seed = Some(seed.wrapping_add(i));
        }
        let mut inflight = Inflight::queued_with(&state.metrics, &siblings);
        match state.engine.generate(choice).await {
            Ok(generation) => turns.push(Turn::new(
                generation,
                plan.clone(),
                &state.metrics,
                inflight,
                state.ids.clone(),
                started,
            )),
            Err(e) => {
                inflight.settle();
                // The choices already admitted are dropped with `turns`: cancelled, and not
                // counted as the client's cancellations.
                siblings.withdraw();
                return Err(ApiError::from_engine(e, max_tokens_param));
            }
        }
    }
    Ok(Admitted { turns, siblings })
}

impl Admitted {
    /// How many choices.
    pub fn len(&self) -> u32 {
        self.turns.len() as u32
    }

    /// Whether there are none (never, for an admitted request).
    pub fn is_empty(&self) -> bool {
        self.turns.is_empty()
    }

    /// Starts driving every choice, each on a task of its own.
    pub fn start(self) -> Choices {
        let n = self.len();
        // One step in flight per choice: a consumer that stops reading holds every choice up
        // within a step, and so the engine's own bound on a stalled reader still applies.
        let (tx, rx) = mpsc::channel(self.turns.len().max(1));
        let mut tasks = JoinSet::new();
        for (index, mut turn) in (0u32..).zip(self.turns) {
            let tx = tx.clone();
            tasks.spawn(async move {
                loop {
                    let (step, last) = match turn.next().await {
                        Ok(Some(Step::Out(outs))) => (Ok(Step::Out(outs)), false),
                        Ok(Some(Step::Finished(f))) => (Ok(Step::Finished(f)), true),
                        Ok(None) => return,
                        Err(e) => (Err(e), true),
                    };
                    if tx.send((index, step)).await.is_err() || last {
                        return;
                    }
                }
            });
        }
        Choices {
            rx,
            _tasks: tasks,
            siblings: self.siblings,
            n,
        }
    }
}

/// The choices of one request, running. Steps arrive tagged with their choice's index, in
/// the order the choices produce them; each choice ends with [`Step::Finished`] or an error.
#[derive(Debug)]
pub struct Choices {
    rx: mpsc::Receiver<(u32, Result<Step, ApiError>)>,
    /// Dropped with `Choices`, which aborts every task and so drops (cancels) every
    /// generation still running.
    _tasks: JoinSet<()>,
    siblings: Arc<Siblings>,
    n: u32,
}

impl Choices {
    /// How many choices.
    pub fn len(&self) -> u32 {
        self.n
    }

    /// Whether there are none (never, for an admitted request).
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The next step of any choice; `None` once every choice has ended.
    pub async fn next(&mut self) -> Option<(u32, Result<Step, ApiError>)> {
        self.rx.recv().await
    }

    /// The request is answered with a choice's error: the other choices are dropped with
    /// `self`, and are not counted as the client's cancellations.
    pub fn withdraw(self) {
        self.siblings.withdraw();
    }
}

/// The request's usage, over its choices, as OpenAI reports it: the prompt (and its cached
/// part) counted once, the completion tokens summed.
#[derive(Debug, Clone, Copy)]
pub struct Tally {
    left: u32,
    usage: Option<Usage>,
}

impl Tally {
    /// For a request with `n` choices.
    pub fn new(n: u32) -> Tally {
        Tally {
            left: n,
            usage: None,
        }
    }

    /// Counts a choice's usage; the request's, once this was the last choice to finish.
    pub fn finished(&mut self, usage: Usage) -> Option<Usage> {
        let total = match self.usage {
            None => usage,
            Some(sum) => sum.with_choice(usage),
        };
        self.usage = Some(total);
        self.left = self.left.saturating_sub(1);
        (self.left == 0).then_some(total)
    }
}
