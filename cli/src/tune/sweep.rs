//! The coordinate sweep: from the profile's settings, one stage per choice, each stage's
//! candidates measured on the whole prompt set and the best kept, ranked by the objective
//! ([`Figures::better_than`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use codec::format::FormatId;
use codec::registry::PromptStyle;
use gateway::defaults::{Defaults, ToolsPresentation};
use models::{Engine, GrammarMode};

use super::error::TuneError;
use super::store::Store;
use crate::measure::{self, Config, Figures, GenOptions, PromptLine, Sample};

/// One stage of the sweep: the choice it varies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Protocol, and for the text protocol the system-prompt style.
    Protocol,
    Grammar,
    Temperature,
    ActionsPerTurn,
    ToolPresentation,
}

impl Stage {
    pub const ALL: [Stage; 5] = [
        Stage::Protocol,
        Stage::Grammar,
        Stage::Temperature,
        Stage::ActionsPerTurn,
        Stage::ToolPresentation,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Stage::Protocol => "protocol and prompt",
            Stage::Grammar => "grammar",
            Stage::Temperature => "temperature",
            Stage::ActionsPerTurn => "actions per reply",
            Stage::ToolPresentation => "tool presentation",
        }
    }
}

/// What a sweep tries.
#[derive(Debug, Clone)]
pub struct SweepOptions {
    pub generation: GenOptions,
    /// Protocols for builtin tasks (the text protocol and native formats).
    pub protocols: Vec<FormatId>,
    pub temperatures: Vec<f32>,
    /// Stop starting new replies after this long (the best fully measured configuration is
    /// still chosen).
    pub budget: Option<Duration>,
    /// Stop after generating this many new replies (for tests and dry runs).
    pub max_new_replies: Option<usize>,
}

impl Default for SweepOptions {
    fn default() -> Self {
        SweepOptions {
            generation: GenOptions::default(),
            protocols: vec![FormatId::Text, FormatId::Hermes],
            temperatures: vec![0.0, 0.3, 0.7],
            budget: None,
            max_new_replies: None,
        }
    }
}

/// The candidates of `stage` around the best configuration so far.
pub fn candidates(stage: Stage, best: &Config, opts: &SweepOptions) -> Vec<Config> {
    let mut out = Vec::new();
    match stage {
        Stage::Protocol => {
            for &p in &opts.protocols {
                if p == FormatId::Text {
                    for style in PromptStyle::ALL {
                        out.push(Config {
                            protocol: p,
                            prompt: style,
                            ..*best
                        });
                    }
                } else {
                    out.push(Config {
                        protocol: p,
                        ..*best
                    });
                }
            }
        }
        Stage::Grammar => {
            for g in [GrammarMode::Off, GrammarMode::Lazy, GrammarMode::Strict] {
                out.push(Config {
                    grammar: g,
                    ..*best
                });
            }
        }
        Stage::Temperature => {
            for &t in &opts.temperatures {
                out.push(Config {
                    temperature: Some(t),
                    ..*best
                });
            }
        }
        Stage::ActionsPerTurn => {
            for a in [1, 0] {
                out.push(Config {
                    actions_per_turn: a,
                    ..*best
                });
            }
        }
        Stage::ToolPresentation => {
            for t in ToolsPresentation::ALL {
                out.push(Config { tools: t, ..*best });
            }
        }
    }
    out
}

/// One measured configuration.
#[derive(Debug, Clone)]
pub struct Measurement {
    pub config: Config,
    pub stage: Stage,
    pub figures: Figures,
    pub samples: Vec<Sample>,
    /// Every prompt was measured (false when the budget ran out part-way).
    pub complete: bool,
}

/// The outcome of a sweep.
#[derive(Debug, Clone)]
pub struct SweepResult {
    /// In the order measured; the first is the profile's own settings.
    pub measured: Vec<Measurement>,
    /// Index into `measured` of the chosen configuration.
    pub best: usize,
    /// The sweep ran to the end (no budget stop).
    pub complete: bool,
    pub new_replies: usize,
}

impl SweepResult {
    pub fn best(&self) -> &Measurement {
        &self.measured[self.best]
    }

    pub fn baseline(&self) -> &Measurement {
        &self.measured[0]
    }
}

/// Reports progress: (replies done in this sweep so far, the configuration being measured).
pub type OnReply<'a> = &'a mut dyn FnMut(usize, &Config);

/// Runs the sweep. `base` holds the profile's settings; its configuration is measured first.
pub async fn sweep(
    engine: &Arc<dyn Engine>,
    base: &Defaults,
    prompts: &[PromptLine],
    opts: &SweepOptions,
    store: &mut Store,
    on_reply: OnReply<'_>,
) -> Result<SweepResult, TuneError> {
    if prompts.is_empty() {
        return Err(TuneError::NoPrompts);
    }
    let started = Instant::now();
    let mut result = SweepResult {
        measured: Vec::new(),
        best: 0,
        complete: true,
        new_replies: 0,
    };
    let baseline = Config::of_defaults(base);
    let mut queue: Vec<(Stage, Vec<Config>)> = vec![(Stage::Protocol, vec![baseline])];
    let mut stage_index = 0;
    let mut out_of_budget = false;
    while let Some((stage, configs)) = queue.pop() {
        for config in configs {
            if result
                .measured
                .iter()
                .any(|m| m.config.key() == config.key())
            {
                continue;
            }
            let mut samples = Vec::new();
            let mut complete = true;
            'prompts: for line in prompts {
                for k in 0..measure::samples_for(line, &config, &opts.generation) {
                    let key = (config.key(), line.id.clone(), k);
                    if let Some(s) = store.get(&key) {
                        samples.push(measure::rescore(
                            engine,
                            base,
                            line,
                            &config,
                            &opts.generation,
                            s,
                        )?);
                        continue;
                    }
                    let over_time = opts.budget.is_some_and(|b| started.elapsed() >= b);
                    let over_count = opts
                        .max_new_replies
                        .is_some_and(|n| result.new_replies >= n);
                    if over_time || over_count {
                        out_of_budget = true;
                        complete = false;
                        break 'prompts;
                    }
                    let s =
                        measure::measure(engine, base, line, &config, &opts.generation, k).await?;
                    store.record(key, s.to_json(&engine.info().id, &config, line), s.clone())?;
                    samples.push(s);
                    result.new_replies += 1;
                    on_reply(result.new_replies, &config);
                }
            }
            let figures = Figures::of(&samples);
            result.measured.push(Measurement {
                config,
                stage,
                figures,
                samples,
                complete,
            });
            if out_of_budget {
                break;
            }
        }
        // The best fully measured configuration so far leads the next stage.
        result.best = pick_best(&result.measured);
        if out_of_budget {
            result.complete = false;
            break;
        }
        if stage_index < Stage::ALL.len() {
            let next = Stage::ALL[stage_index];
            stage_index += 1;
            let best = result.measured[result.best].config;
            queue.push((next, candidates(next, &best, opts)));
        }
    }
    Ok(result)
}

/// The index of the best complete measurement (the first one when none is complete).
pub fn pick_best(measured: &[Measurement]) -> usize {
    let mut best: Option<usize> = None;
    for (i, m) in measured.iter().enumerate() {
        if !m.complete {
            continue;
        }
        match best {
            Some(b) if !m.figures.better_than(&measured[b].figures) => {}
            _ => best = Some(i),
        }
    }
    best.unwrap_or(0)
}
