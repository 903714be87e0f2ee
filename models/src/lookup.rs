//! Lookup decoding: a generating sequence drafts its next tokens from n-grams of its own
//! prompt and reply, the draft is verified in the same batch as the sampled token, and the
//! longest run the sampler agrees with is kept (the batcher does the verifying).
//!
//! A draft is worth its tokens only when the tokens it is expected to save outweigh what its
//! extra batch rows cost. Both sides are measured, not assumed:
//! - [`Pace`], per sequence: how often this reply's drafted tokens are taken (a reply that
//!   copies a file takes most of them; a list of new facts few).
//! - [`StepCost`], per engine: what a step of `w` tokens costs against a step of one, timed on
//!   the steps themselves. On a GPU or a wide CPU a few more rows are nearly free; on a
//!   two-core CPU a step of three tokens takes as long as two steps of one (benches/README.md,
//!   "Lookup decoding"), and a draft needs about half its tokens taken to pay.
//!
//! The draft length chosen is the one with the most expected tokens per unit of step time, or
//! none when no length beats a plain step. A sequence that does not draft still learns: it
//! keeps a [`Shadow`] draft, the tokens it would have drafted, and checks them against the
//! tokens it samples, so a reply that turns to copying (prose, then an edit block) is noticed
//! without paying for a single drafted row.

use llama_cpp_2::token::LlamaToken;

/// When a generating sequence drafts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lookup {
    /// Never.
    Off,
    /// While at most [`LOOKUP_AUTO_MAX_SEQS`] sequences generate (with more, the batch is
    /// already wide and a draft's extra tokens cost more than they save), at the length the
    /// measured step costs and the reply's acceptance rate make worth it.
    #[default]
    Auto,
    /// Always, as long as the reply's drafts are taken at all; the step costs are not
    /// consulted (for measuring drafts, and hardware where extra rows are free).
    On,
}

/// The most sequences generating at once for which [`Lookup::Auto`] drafts.
pub const LOOKUP_AUTO_MAX_SEQS: usize = 1;

/// Draft n-gram sizes, longest (most specific) first; a two-token repeat predicts too little
/// to pay for its draft.
const LOOKUP_NGRAMS: [usize; 2] = [4, 3];

/// The tokens that followed the latest earlier occurrence of `history`'s last n tokens (the
/// longest n of [`LOOKUP_NGRAMS`] that occurred before), at most `max` of them.
pub(crate) fn lookup_draft(history: &[LlamaToken], max: usize) -> Vec<LlamaToken> {
    if max == 0 {
        return Vec::new();
    }
    let len = history.len();
    for n in LOOKUP_NGRAMS {
        if len <= n {
            continue;
        }
        let key = &history[len - n..];
        if let Some(start) = (0..len - n)
            .rev()
            .find(|&start| &history[start..start + n] == key)
        {
            let from = start + n;
            return history[from..(from + max).min(len)].to_vec();
        }
    }
    Vec::new()
}

/// The draft length in `0..=max` with the most expected tokens per unit of step time, when a
/// drafted token is taken with probability `rate` given the one before it was (a draft of `k`
/// yields `1 + rate + rate² + … + rateᵏ` tokens) and a step of `w` tokens costs `cost(w)`
/// one-token steps. 0 unless some length beats a plain step by [`MIN_GAIN`].
pub(crate) fn best_draft_len(rate: f64, max: usize, cost: impl Fn(usize) -> f64) -> usize {
    let mut best = (0, 1.0 + MIN_GAIN);
    let mut expected = 1.0;
    let mut taken = 1.0;
    for k in 1..=max {
        taken *= rate;
        expected += taken;
        let gain = expected / cost(k + 1).max(1.0);
        if gain > best.1 {
            best = (k, gain);
        }
    }
    best.0
}

/// How much faster per unit of time a draft must be expected to make the reply before it is
/// tried: step times are noisy and the acceptance rate is an estimate.
const MIN_GAIN: f64 = 0.03;

/// A sequence's record of its drafts, real and shadow: the rate at which drafted tokens are
/// taken (recent drafts weigh most).
///
/// Copying comes in runs (a file's unchanged lines, one after another), so the rate is kept
/// apart for drafts that follow a draft taken whole and for the others: inside a run a long
/// draft pays, at its edge a short one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Pace {
    /// Drafts made after a draft taken whole.
    after_whole: Record,
    /// Drafts made after a draft cut short, or first.
    after_cut: Record,
    /// The last draft was taken whole.
    whole: bool,
}

/// Drafted tokens taken and drafts cut short by a refused token, both decayed.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Record {
    taken: f64,
    refused: f64,
}

impl Record {
    const EMPTY: Record = Record {
        taken: 0.0,
        refused: 0.0,
    };
    /// How many refusals' worth a prior weighs.
    const PRIOR_WEIGHT: f64 = 1.0;
    /// The weight a draft's record keeps after each later draft.
    const MEMORY: f64 = 0.8;

    /// The estimated probability that a drafted token is taken, given the one before it was,
    /// starting from `prior`.
    fn rate(&self, prior: f64) -> f64 {
        (self.taken + prior * Record::PRIOR_WEIGHT)
            / (self.taken + self.refused + Record::PRIOR_WEIGHT)
    }

    fn add(&mut self, drafted: usize, accepted: usize) {
        self.taken = self.taken * Record::MEMORY + accepted as f64;
        self.refused = self.refused * Record::MEMORY + f64::from(u8::from(accepted < drafted));
    }
}

impl Pace {
    /// The rate assumed before any draft, and after a cut: low enough that on a CPU, where a
    /// row costs a third of a step, a shadow draft must show the reply copying before a row
    /// is spent; where rows are nearly free (a GPU) drafts start at once.
    const PRIOR_RATE: f64 = 0.35;
    /// The rate assumed inside a run of copying before any draft there.
    const PRIOR_RATE_IN_RUN: f64 = 0.9;

    pub(crate) fn new() -> Pace {
        Pace {
            after_whole: Record::EMPTY,
            after_cut: Record::EMPTY,
            whole: false,
        }
    }

    /// The estimated probability that the next draft's tokens are taken, each given the one
    /// before it was.
    pub(crate) fn rate(&self) -> f64 {
        if self.whole {
            self.after_whole.rate(Pace::PRIOR_RATE_IN_RUN)
        } else {
            self.after_cut.rate(Pace::PRIOR_RATE)
        }
    }

    /// The draft length to try this step, at most `max`, a step of `w` tokens costing
    /// `cost(w)` one-token steps; 0 when no length is worth its rows.
    pub(crate) fn want(&self, max: usize, cost: impl Fn(usize) -> f64) -> usize {
        best_draft_len(self.rate(), max, cost)
    }

    /// What became of a draft of `drafted` tokens, real or shadow: `accepted` were taken.
    pub(crate) fn record(&mut self, drafted: usize, accepted: usize) {
        if drafted == 0 {
            return;
        }
        if self.whole {
            self.after_whole.add(drafted, accepted);
        } else {
            self.after_cut.add(drafted, accepted);
        }
        self.whole = accepted == drafted;
    }
}

/// A shadow draft's length: short, so that a reply turning to copying is seen within a few
/// tokens (a whole shadow draft starts real ones).
pub(crate) const SHADOW_LEN: usize = 4;

/// The draft a sequence would have made, checked token by token against what it samples
/// instead (no rows spent): how the sequence keeps learning its rate while drafts do not pay.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Shadow {
    tokens: Vec<LlamaToken>,
    seen: usize,
}

impl Shadow {
    /// Whether a shadow draft is being checked.
    pub(crate) fn pending(&self) -> bool {
        self.seen < self.tokens.len()
    }

    /// Starts checking `draft` (the tokens predicted to follow the token being decoded).
    pub(crate) fn start(&mut self, draft: Vec<LlamaToken>) {
        self.tokens = draft;
        self.seen = 0;
    }

    /// The sequence sampled `token`: `Some((drafted, accepted))` once the shadow draft is
    /// decided (a token differs, or every one matched), as [`Pace::record`] takes it.
    pub(crate) fn observe(&mut self, token: LlamaToken) -> Option<(usize, usize)> {
        if !self.pending() {
            return None;
        }
        if self.tokens[self.seen] == token {
            self.seen += 1;
            if self.seen < self.tokens.len() {
                return None;
            }
        }
        let outcome = (self.tokens.len(), self.seen);
        self.tokens.clear();
        self.seen = 0;
        Some(outcome)
    }
}

/// What a one-sequence generation step of `w` tokens (the sampled token and `w - 1` drafted
/// ones) costs against a step of one, timed on this engine's own steps. A width not timed yet
/// is estimated from the widths that were (a straight line through a one-token step's cost),
/// or from [`StepCost::PRIOR_MARGINAL`] before any was.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StepCost {
    /// A one-token step's duration in seconds, a running mean.
    single: Option<f64>,
    /// By width: a step's duration over a one-token step's, a running mean.
    ratio: Vec<Option<f64>>,
}

impl StepCost {
    /// The extra cost of each row before any wide step is timed: low, so drafts get tried
    /// and timed.
    const PRIOR_MARGINAL: f64 = 0.2;
    /// The weight of a new timing in a running mean.
    const WEIGHT: f64 = 0.2;

    /// Costs for steps of up to `max_width` tokens.
    pub(crate) fn new(max_width: usize) -> StepCost {
        StepCost {
            single: None,
            ratio: vec![None; max_width + 1],
        }
    }

    /// A one-sequence generation step of `width` tokens took `secs`.
    pub(crate) fn observe(&mut self, width: usize, secs: f64) {
        let mean = |old: Option<f64>, new: f64| {
            Some(old.map_or(new, |o| o + StepCost::WEIGHT * (new - o)))
        };
        if width == 1 {
            self.single = mean(self.single, secs);
            return;
        }
        let Some(single) = self.single.filter(|&s| s > 0.0) else {
            return;
        };
        if let Some(slot) = self.ratio.get_mut(width) {
            *slot = mean(*slot, secs / single);
        }
    }

    /// A step of `width` tokens in one-token steps.
    pub(crate) fn of(&self, width: usize) -> f64 {
        if width <= 1 {
            return 1.0;
        }
        match self.ratio.get(width).copied().flatten() {
            Some(r) => r,
            None => 1.0 + self.marginal() * (width - 1) as f64,
        }
    }

    /// The cost of one more row: the least-squares slope of the timed widths' costs through
    /// a one-token step's.
    fn marginal(&self) -> f64 {
        let (mut xy, mut xx) = (0.0, 0.0);
        for (w, r) in self.ratio.iter().enumerate() {
            if let Some(r) = r {
                let x = (w - 1) as f64;
                xy += x * (r - 1.0);
                xx += x * x;
            }
        }
        if xx > 0.0 {
            (xy / xx).max(0.0)
        } else {
            StepCost::PRIOR_MARGINAL
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_drafts_what_followed_the_latest_longest_match() {
        let t = |v: &[i32]| v.iter().map(|&x| LlamaToken(x)).collect::<Vec<_>>();
        // ... 1 2 3 [4 5 6] ... 1 2 3 → 4 5 6 (capped at max).
        let h = t(&[9, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3]);
        assert_eq!(lookup_draft(&h, 3), t(&[4, 5, 6]));
        assert_eq!(lookup_draft(&h, 0), t(&[]));
        // The latest occurrence wins: 1 2 3 → 7 here, not 4.
        let h = t(&[1, 2, 3, 4, 0, 1, 2, 3, 7, 5, 1, 2, 3]);
        assert_eq!(lookup_draft(&h, 2), t(&[7, 5]));
        // A four-token match beats a later three-token one.
        let h = t(&[5, 6, 7, 8, 40, 41, 9, 6, 7, 8, 50, 5, 6, 7, 8]);
        assert_eq!(lookup_draft(&h, 2), t(&[40, 41]));
        // Nothing repeats (or only two tokens do): no draft; a match at the very end drafts
        // only what follows it.
        assert!(lookup_draft(&t(&[1, 2, 3, 4]), 4).is_empty());
        assert!(lookup_draft(&t(&[1, 2, 9, 1, 2]), 4).is_empty());
        assert_eq!(lookup_draft(&t(&[1, 2, 3, 1, 2, 3]), 4), t(&[1, 2, 3]));
    }

    #[test]
    fn the_best_draft_length_weighs_the_rate_against_the_step_cost() {
        let free = |_: usize| 1.0;
        let linear = |m: f64| move |w: usize| 1.0 + m * (w - 1) as f64;
        // Free rows: draft all there is room for, whatever the rate.
        assert_eq!(best_draft_len(0.1, 8, free), 8);
        assert_eq!(best_draft_len(0.9, 3, free), 3);
        // This CPU's rows (about half a step each): a reply that takes 90 % drafts a few
        // tokens (a longer draft's tail is too unlikely to pay for its rows), one that takes
        // a third drafts nothing.
        let k = best_draft_len(0.9, 8, linear(0.4));
        assert!((2..=5).contains(&k), "{k}");
        assert_eq!(best_draft_len(0.33, 8, linear(0.4)), 0);
        assert_eq!(best_draft_len(0.99, 8, linear(0.05)), 8);
        // A width that costs more than a wider one is skipped for the wider one.
        let uneven = |w: usize| [1.0, 1.0, 1.6, 2.0, 1.9, 2.4][w.min(5)];
        assert_eq!(best_draft_len(0.95, 4, uneven), 3);
        assert_eq!(best_draft_len(0.5, 8, |_| f64::INFINITY), 0);
    }

    #[test]
    fn the_pace_follows_the_rate() {
        let cost = |w: usize| 1.0 + 0.4 * (w - 1) as f64;
        let mut p = Pace::new();
        assert_eq!(
            p.want(8, cost),
            0,
            "rows a third of a step: no draft before evidence"
        );
        assert!(
            p.want(8, |w| 1.0 + 0.02 * (w - 1) as f64) >= 2,
            "nearly free rows: drafts"
        );
        // A shadow draft taken whole: drafting starts, and grows while drafts are taken.
        p.record(8, 8);
        let first = p.want(8, cost);
        assert!(first >= 2, "{first}");
        p.record(first, first);
        for _ in 0..6 {
            let k = p.want(8, cost);
            assert!(k >= first, "{k}");
            p.record(k, k);
        }
        assert!(p.rate() > 0.9, "{}", p.rate());
        assert!(p.want(8, cost) >= 2);
        assert!(p.want(3, cost) <= 3, "never past the room");
        // Drafts refused outright: the rate falls until drafting stops.
        let mut steps = 0;
        while p.want(8, cost) > 0 {
            p.record(2, 0);
            steps += 1;
            assert!(steps < 20, "drafting never stopped: rate {}", p.rate());
        }
        // Shadow drafts taken whole bring it back.
        steps = 0;
        while p.want(8, cost) == 0 {
            p.record(8, 8);
            steps += 1;
            assert!(steps < 5, "drafting never resumed: rate {}", p.rate());
        }
        // Free rows: drafting goes on while any token is taken, at full length.
        let mut q = Pace::new();
        for _ in 0..20 {
            let k = q.want(8, |_| 1.0);
            assert_eq!(k, 8);
            q.record(k, 1);
        }
        assert_eq!(q.want(0, |_| 1.0), 0);
    }

    #[test]
    fn a_shadow_draft_is_decided_by_the_tokens_sampled() {
        let t = |v: &[i32]| v.iter().map(|&x| LlamaToken(x)).collect::<Vec<_>>();
        let mut s = Shadow::default();
        assert!(!s.pending());
        assert_eq!(s.observe(LlamaToken(1)), None, "nothing to decide");
        // Matched to the end: taken whole.
        s.start(t(&[1, 2, 3]));
        assert!(s.pending());
        assert_eq!(s.observe(LlamaToken(1)), None);
        assert_eq!(s.observe(LlamaToken(2)), None);
        assert_eq!(s.observe(LlamaToken(3)), Some((3, 3)));
        assert!(!s.pending());
        // Cut at the second token.
        s.start(t(&[4, 5, 6]));
        assert_eq!(s.observe(LlamaToken(4)), None);
        assert_eq!(s.observe(LlamaToken(9)), Some((3, 1)));
        assert!(!s.pending());
        // Refused at once.
        s.start(t(&[7]));
        assert_eq!(s.observe(LlamaToken(8)), Some((1, 0)));
        assert_eq!(
            s.observe(LlamaToken(7)),
            None,
            "decided: nothing left to check"
        );
        s.start(Vec::new());
        assert!(!s.pending(), "an empty draft is nothing to check");
    }

    #[test]
    fn inside_a_run_of_whole_drafts_the_drafts_are_longer_than_at_its_edge() {
        // A reply that copies in runs: drafts after a whole one are taken whole, the first
        // draft after a cut is refused at its second token.
        let cost = |w: usize| 1.0 + 0.35 * (w - 1) as f64;
        let mut p = Pace::new();
        let (mut in_run, mut at_edge) = (Vec::new(), Vec::new());
        for step in 0..60 {
            let was_whole = p.whole;
            let k = p.want(8, cost);
            // A draft not made is a shadow draft of 8, decided the same way.
            let drafted = if k == 0 { 8 } else { k };
            let taken = if was_whole && step % 10 != 0 {
                drafted
            } else {
                drafted.min(1)
            };
            p.record(drafted, taken);
            if k == 0 {
                continue;
            }
            if was_whole {
                in_run.push(k)
            } else {
                at_edge.push(k)
            }
        }
        let mean = |v: &[usize]| v.iter().sum::<usize>() as f64 / v.len().max(1) as f64;
        assert!(
            !in_run.is_empty() && !at_edge.is_empty(),
            "{in_run:?} {at_edge:?}"
        );
        assert!(
            mean(&in_run) >= mean(&at_edge) + 2.0,
            "in a run {in_run:?}, at its edge {at_edge:?}"
        );
        assert!(
            in_run.iter().filter(|&&k| k == 8).count() * 2 >= in_run.len(),
            "{in_run:?}"
        );
    }

    #[test]
    fn step_costs_are_timed_and_untimed_widths_estimated() {
        let mut c = StepCost::new(9);
        // Before any timing: the prior.
        assert!((c.of(3) - (1.0 + 2.0 * StepCost::PRIOR_MARGINAL)).abs() < 1e-9);
        assert_eq!(c.of(1), 1.0);
        // A wide step before any one-token step has nothing to compare with.
        c.observe(5, 0.1);
        assert!((c.of(5) - (1.0 + 4.0 * StepCost::PRIOR_MARGINAL)).abs() < 1e-9);
        c.observe(1, 0.040);
        c.observe(5, 0.100);
        assert!((c.of(5) - 2.5).abs() < 1e-9);
        // Untimed widths follow the slope of the timed ones: 1.5 / 4 per row.
        assert!((c.of(9) - 4.0).abs() < 1e-9);
        assert!((c.of(3) - 1.75).abs() < 1e-9);
        // Running means: a new timing moves the figure part of the way.
        c.observe(5, 0.060);
        let r = c.of(5);
        assert!(r > 1.5 && r < 2.5, "{r}");
        // Widths past the table are estimated too.
        assert!(c.of(20) > c.of(9));
    }
}
