//! How one generation picks its tokens: the sampler chain built from a request's
//! [`Sampling`], the grammar kept apart for the sample-then-check fast path, log probabilities
//! scored in the same pass over the logits, and llama.cpp's DRY stage.

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::logit_bias::LlamaLogitBias;

use crate::engine::{Dry, Sampling};

/// How many recent tokens the repetition, frequency and presence penalties look at.
const PENALTY_LAST_N: i32 = 64;
/// A grammar sampler compiled once at admission and moved into its job: the slot never
/// compiles a grammar.
pub(crate) struct CompiledGrammar(pub(crate) LlamaSampler);

impl std::fmt::Debug for CompiledGrammar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CompiledGrammar")
    }
}

/// The sampler of one generation: an unconstrained chain, and the grammar kept apart for the
/// sample-then-check fast path (llama.cpp's common sampler does the same): sample without the
/// grammar, ask the grammar about the chosen token only, and only when it is rejected apply the
/// grammar to the whole vocabulary and sample again. Checking one token instead of the whole
/// vocabulary is what keeps constrained generation near unconstrained speed.
pub(crate) struct JobSampler {
    chain: LlamaSampler,
    grammar: Option<LlamaSampler>,
    /// Greedy with no penalties: the first pass is a plain argmax over the logits, with no
    /// vocabulary-sized candidate array (262k entries for Gemma) built at all.
    plain_greedy: bool,
    /// `Some(n)`: score each sampled token (log probability and the `n` most likely).
    logprobs: Option<usize>,
    /// The request's logit bias as a dense vector, when logprobs are asked for and a bias
    /// is set: log probabilities are reported after the bias, as OpenAI does.
    dense_bias: Option<Vec<f32>>,
}

/// A sampled token's log probability and the most likely tokens at its position.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Scored {
    pub(crate) logprob: f32,
    pub(crate) top: Vec<(LlamaToken, f32)>,
}

/// One pass over a position's logits: a running log-sum-exp and the `k` largest logits (ties
/// keep the lower token id first, as greedy argmax does). The same pass serves as the argmax
/// of plain greedy sampling, and rides along the candidate fill otherwise, so log
/// probabilities cost no extra pass over the vocabulary.
#[derive(Debug)]
struct LogitScan {
    max: f32,
    /// Sum of `exp(logit - max)`.
    sum: f32,
    k: usize,
    /// Descending by logit.
    pub(crate) top: Vec<(LlamaToken, f32)>,
}

impl LogitScan {
    fn new(k: usize) -> LogitScan {
        let k = k.max(1);
        LogitScan {
            max: f32::NEG_INFINITY,
            sum: 0.0,
            k,
            top: Vec::with_capacity(k + 1),
        }
    }

    #[inline]
    fn push(&mut self, id: i32, logit: f32) {
        // A banned (or NaN) logit has probability zero and is never a candidate.
        if logit.is_nan() || logit == f32::NEG_INFINITY {
            return;
        }
        if logit > self.max {
            self.sum = self.sum * (self.max - logit).exp() + 1.0;
            self.max = logit;
        } else {
            self.sum += (logit - self.max).exp();
        }
        if self.top.len() < self.k || self.top.last().is_some_and(|&(_, l)| logit > l) {
            let at = self.top.partition_point(|&(_, l)| l >= logit);
            self.top.insert(at, (LlamaToken(id), logit));
            self.top.truncate(self.k);
        }
    }

    /// `ln(sum(exp(logit)))` over everything pushed.
    fn log_sum_exp(&self) -> f32 {
        self.max + self.sum.ln()
    }

    /// The largest logit's token (the argmax).
    fn best(&self) -> Option<LlamaToken> {
        self.top.first().map(|&(t, _)| t)
    }

    /// Scores `token`, whose biased logit is `logit`, keeping `n` alternatives.
    fn score(&self, logit: f32, n: usize) -> Scored {
        let lse = self.log_sum_exp();
        Scored {
            logprob: logit - lse,
            top: self
                .top
                .iter()
                .take(n)
                .map(|&(t, l)| (t, l - lse))
                .collect(),
        }
    }
}

impl JobSampler {
    pub(crate) fn new(
        model: &LlamaModel,
        s: &Sampling,
        n_ctx: u32,
        grammar: Option<CompiledGrammar>,
        logprobs: Option<u32>,
    ) -> JobSampler {
        // Out-of-range values switch a stage off instead of reaching llama.cpp, where a NaN
        // temperature or a non-positive penalty would make every logit NaN.
        let mut stages = Vec::new();
        let logit_bias = effective_bias(model, s);
        if !logit_bias.is_empty() {
            let biases: Vec<LlamaLogitBias> = logit_bias
                .iter()
                .map(|&(t, b)| LlamaLogitBias::new(LlamaToken(t), b))
                .collect();
            stages.push(LlamaSampler::logit_bias(model.n_vocab(), &biases));
        }
        let repeat = if s.repeat_penalty.is_finite() && s.repeat_penalty > 0.0 {
            s.repeat_penalty
        } else {
            1.0
        };
        let finite = |x: f32| if x.is_finite() { x } else { 0.0 };
        let (freq, present) = (finite(s.frequency_penalty), finite(s.presence_penalty));
        if repeat != 1.0 || freq != 0.0 || present != 0.0 {
            stages.push(LlamaSampler::penalties(
                model.n_vocab(),
                PENALTY_LAST_N,
                repeat,
                freq,
                present,
            ));
        }
        if let Some(dry) = dry_stage(model, &s.dry, n_ctx) {
            stages.push(dry);
        }
        if !(s.temperature.is_finite() && s.temperature > 0.0) {
            stages.push(LlamaSampler::greedy());
        } else {
            if s.top_k > 0 {
                stages.push(LlamaSampler::top_k(s.top_k));
            }
            if s.top_p > 0.0 && s.top_p < 1.0 {
                stages.push(LlamaSampler::top_p(s.top_p, 1));
            }
            if s.min_p > 0.0 && s.min_p < 1.0 {
                stages.push(LlamaSampler::min_p(s.min_p, 1));
            }
            stages.push(LlamaSampler::temp(s.temperature));
            stages.push(LlamaSampler::dist(s.seed.unwrap_or_else(random_seed)));
        }
        let plain_greedy = stages.len() == 1 && !(s.temperature.is_finite() && s.temperature > 0.0);
        let dense_bias = match logprobs {
            Some(_) if !logit_bias.is_empty() => {
                let mut dense = vec![0.0f32; usize::try_from(model.n_vocab()).unwrap_or(0)];
                for &(t, b) in &logit_bias {
                    if let Some(slot) = usize::try_from(t).ok().and_then(|t| dense.get_mut(t)) {
                        *slot += b;
                    }
                }
                Some(dense)
            }
            _ => None,
        };
        JobSampler {
            chain: LlamaSampler::chain_simple(stages),
            grammar: grammar.map(|g| g.0),
            plain_greedy,
            logprobs: logprobs.map(|n| n as usize),
            dense_bias,
        }
    }

    /// Fills `buf` with the position's logits as candidates; `scan`, when given, sees each
    /// (biased) logit in the same pass.
    fn fill(
        ctx: &LlamaContext<'_>,
        idx: i32,
        buf: &mut Vec<LlamaTokenData>,
        scan: Option<(&mut LogitScan, Option<&[f32]>)>,
    ) -> LlamaTokenDataArray {
        let mut data = std::mem::take(buf);
        data.clear();
        let logits = ctx.get_logits_ith(idx);
        match scan {
            None => data.extend(
                logits
                    .iter()
                    .enumerate()
                    .map(|(i, &l)| LlamaTokenData::new(LlamaToken(i as i32), l, 0.0)),
            ),
            Some((scan, bias)) => {
                data.reserve(logits.len());
                for (i, &l) in logits.iter().enumerate() {
                    let biased = bias.map_or(l, |b| l + b[i]);
                    scan.push(i as i32, biased);
                    data.push(LlamaTokenData::new(LlamaToken(i as i32), l, 0.0));
                }
            }
        }
        LlamaTokenDataArray::new(data, false)
    }

    fn pick(chain: &mut LlamaSampler, arr: &mut LlamaTokenDataArray) -> LlamaToken {
        chain.apply(arr);
        match arr.selected_token() {
            Some(t) => t,
            // Every stage selects; this is only a guard against an empty candidate set.
            None => arr
                .data
                .iter()
                .max_by(|a, b| a.logit().total_cmp(&b.logit()))
                .map_or(LlamaToken(0), LlamaTokenData::id),
        }
    }

    /// Samples the next token; with log probabilities asked for, also scores it against the
    /// model's distribution at this position (softmax of the raw logits plus logit bias; before
    /// penalties, temperature, truncation and the grammar).
    pub(crate) fn sample(
        &mut self,
        ctx: &LlamaContext<'_>,
        idx: i32,
        buf: &mut Vec<LlamaTokenData>,
    ) -> (LlamaToken, Option<Scored>) {
        let mut scan = self.logprobs.map(LogitScan::new);
        let bias = self.dense_bias.as_deref();
        // First pass: the unconstrained choice.
        let mut arr = None;
        let mut token = if self.plain_greedy {
            match &mut scan {
                // Plain greedy has no bias, and the scan's best is the argmax.
                Some(scan) => {
                    for (i, &l) in ctx.get_logits_ith(idx).iter().enumerate() {
                        scan.push(i as i32, l);
                    }
                    scan.best().unwrap_or(LlamaToken(0))
                }
                None => argmax(ctx.get_logits_ith(idx)),
            }
        } else {
            let mut a = JobSampler::fill(ctx, idx, buf, scan.as_mut().map(|s| (s, bias)));
            let t = JobSampler::pick(&mut self.chain, &mut a);
            arr = Some(a);
            t
        };
        if let Some(grammar) = &mut self.grammar {
            // Ask the grammar about the chosen token alone.
            let mut one =
                LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 1.0, 0.0)], false);
            grammar.apply(&mut one);
            let rejected = one
                .data
                .first()
                .is_none_or(|d| d.logit() == f32::NEG_INFINITY);
            if rejected {
                // Second pass: the grammar masks the whole vocabulary, then the chain picks.
                if let Some(a) = arr.take() {
                    *buf = a.data;
                }
                let mut a = JobSampler::fill(ctx, idx, buf, None);
                grammar.apply(&mut a);
                token = JobSampler::pick(&mut self.chain, &mut a);
                arr = Some(a);
            }
            // A lazy grammar is blind until its trigger: the token that completes the trigger
            // may carry text the grammar does not admit, and llama.cpp then refuses it and is
            // left with no parse state, where its next `apply` aborts the whole process
            // (`GGML_ASSERT(!stacks.empty())`). So a refused token ends the constraint: the
            // reply goes on unconstrained, and its decoder judges the text as it comes.
            if grammar.try_accept(token).is_err() {
                self.grammar = None;
            }
        }
        if let Some(a) = arr {
            *buf = a.data;
        }
        self.chain.accept(token);
        let scored = scan.map(|scan| {
            let i = token.0 as usize;
            let logit = ctx
                .get_logits_ith(idx)
                .get(i)
                .copied()
                .unwrap_or(f32::NEG_INFINITY)
                + bias.and_then(|b| b.get(i)).copied().unwrap_or(0.0);
            scan.score(logit, self.logprobs.unwrap_or(0))
        });
        (token, scored)
    }
}

/// The request's logit bias, plus a ban on every end-of-generation token when `ignore_eos` is
/// set (as llama-server does: `-inf` on each token `llama_vocab_is_eog` names). Built per
/// generation from the request alone, so no request's setting outlives it.
fn effective_bias(model: &LlamaModel, s: &Sampling) -> Vec<(i32, f32)> {
    let mut bias = s.logit_bias.clone();
    if s.ignore_eos {
        let vocab = model.vocab();
        bias.extend(
            (0..model.n_vocab())
                .filter(|&t| vocab.is_eog(LlamaToken(t)))
                .map(|t| (t, f32::NEG_INFINITY)),
        );
    }
    bias
}

/// llama.cpp's DRY sampler for `dry`, or `None` when it would change nothing.
///
/// Its place in the chain is llama.cpp's: `common/sampling.cpp` adds the samplers in the order
/// of `params.samplers`, whose default is `penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;
/// xtc;temperature` (`tools/server/README.md`, `--samplers`), so DRY comes after the penalties
/// and before truncation, temperature and the pick. Greedy sampling therefore picks the
/// argmax of the penalized logits, and the plain-greedy shortcut (which reads the raw logits)
/// is not taken while DRY is on. The grammar's second pass applies the same chain, so DRY
/// also shapes a pick the grammar forced.
///
/// `penalty_last_n` -1 means the whole context, as in llama-server, which turns -1 into the
/// slot's context size itself (`llama_sampler_init_dry` clamps negative values to 0, off); a
/// larger window than the context is clamped to it, as it could never fill and llama.cpp
/// allocates it up front. Out-of-range values that got past validation switch the stage off
/// rather than reaching llama.cpp, and a breaker with a NUL byte (which llama-cpp-2 panics
/// on) is dropped.
fn dry_stage(model: &LlamaModel, dry: &Dry, n_ctx: u32) -> Option<LlamaSampler> {
    if !(dry.is_on() && dry.multiplier.is_finite() && dry.base.is_finite() && dry.base >= 1.0) {
        return None;
    }
    let n_ctx = i32::try_from(n_ctx).unwrap_or(i32::MAX);
    let last_n = match dry.penalty_last_n {
        -1 => n_ctx,
        n if n > 0 => n.min(n_ctx),
        _ => return None,
    };
    let breakers = dry
        .sequence_breakers
        .iter()
        .filter(|b| !b.is_empty() && !b.contains('\0'))
        .map(String::as_bytes);
    Some(LlamaSampler::dry(
        model,
        dry.multiplier,
        dry.base,
        dry.allowed_length.max(0),
        last_n,
        breakers,
    ))
}

/// A fresh seed for a request that named none: distinct per call and per process.
pub(crate) fn random_seed() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish() as u32
}

/// The index of the largest logit (the first, on ties), as llama.cpp's greedy sampler picks.
fn argmax(logits: &[f32]) -> LlamaToken {
    let mut best = 0;
    let mut best_logit = f32::NEG_INFINITY;
    for (i, &l) in logits.iter().enumerate() {
        if l > best_logit {
            best = i;
            best_logit = l;
        }
    }
    LlamaToken(best as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logit_scan_matches_a_two_pass_softmax_and_argmax() {
        let logits: Vec<f32> = (0..1000)
            .map(|i| ((i * 7919 % 1000) as f32 / 97.0).sin() * 8.0)
            .chain([7.99, f32::NEG_INFINITY, f32::NAN, 7.99])
            .collect();
        let mut scan = LogitScan::new(5);
        for (i, &l) in logits.iter().enumerate() {
            scan.push(i as i32, l);
        }
        let finite: Vec<(usize, f32)> = logits
            .iter()
            .copied()
            .enumerate()
            .filter(|(_, l)| l.is_finite())
            .collect();
        let max = finite.iter().map(|&(_, l)| l).fold(f32::MIN, f32::max);
        let lse = max
            + finite
                .iter()
                .map(|&(_, l)| (l - max).exp())
                .sum::<f32>()
                .ln();
        assert!(
            (scan.log_sum_exp() - lse).abs() < 1e-4,
            "{} vs {lse}",
            scan.log_sum_exp()
        );
        let mut sorted = finite.clone();
        // Descending by logit, lower id first on ties.
        sorted.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let want: Vec<i32> = sorted.iter().take(5).map(|&(i, _)| i as i32).collect();
        let got: Vec<i32> = scan.top.iter().map(|&(t, _)| t.0).collect();
        assert_eq!(got, want);
        assert_eq!(scan.best(), Some(argmax(&logits)));
        let scored = scan.score(logits[want[0] as usize], 3);
        assert_eq!(scored.top.len(), 3);
        assert!(scored.logprob <= 0.0 && scored.logprob == scored.top[0].1);
        assert!(scored.top.windows(2).all(|w| w[0].1 >= w[1].1));
        let total: f32 = finite.iter().map(|&(_, l)| (l - lse).exp()).sum();
        assert!((total - 1.0).abs() < 1e-4);
    }
}
