//! `bellows tune`: sweeps the choices a model profile makes and picks the best by a stated
//! objective, measured on live generations ([`crate::measure`]).
//!
//! The sweep is a coordinate search from the profile's current settings: one stage per
//! choice (protocol and system-prompt style, grammar, temperature, actions per reply, tool
//! presentation); each stage measures its candidates on the whole prompt set, keeps the best
//! and moves on. Every reply is appended to `replies.jsonl` in the output directory as soon as
//! it is scored, so an interrupted sweep resumes where it stopped (a reply already there is
//! never generated again). The objective, in order: right-action rate, conversion, fewer
//! generated tokens per action, speed.
//!
//! One file per job: [`sweep`] the search, [`store`] the resumable store, [`report`] the
//! table, Markdown, HTML/SVG page and `results.json`, [`profile`] the profile TOML `--write`
//! rewrites, `date` the date it records, `error` why a sweep stops; this file is the command.

mod date;
mod error;
pub mod profile;
pub mod report;
pub mod store;
pub mod sweep;

use std::path::{Path, PathBuf};
use std::time::Duration;

use codec::format::FormatId;
use gateway::defaults::Defaults;
use models::Engine;
use serde_json::json;

pub use date::today;
pub use error::TuneError;
use error::io;
pub use profile::{measured, write_profile};
pub use report::{html, markdown, results_json, table};
pub use store::Store;
pub use sweep::{
    Measurement, OnReply, Stage, SweepOptions, SweepResult, candidates, pick_best, sweep,
};

use crate::batch;
use crate::measure::{Config, GenOptions};

/// Arguments of `bellows tune`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "\
The sweep starts from the profile's own settings and goes one choice at a time, keeping the
best of each stage: protocol and system-prompt style (text/full, text/compact, text/example,
then each --protocols native format with the builtins offered as native tools), grammar (off,
lazy, strict; strict makes every reply act: in the text protocol at most two short lines of
prose and then an action, natively `tool_choice: required`), temperature (--temperatures; K
replies per prompt above 0 with --samples K), actions per reply (1: generation stops after
the first action; a0: no limit) and how client tools are shown under tool_choice auto
(template: the chat template's tools, else a system message; system; example: a system
message with one worked call).

Objective, in order: right-action rate (the first valid action names an expected tool), then
conversion (replies with a valid action that is not an echo of the help text), then fewer
generated tokens per action, then speed.

Every reply is appended to OUT/replies.jsonl as it is scored; run the same command again to
resume an interrupted sweep. OUT also gets sweep.json, results.json and report.html (the
table and an SVG chart of conversion per configuration). With --write the chosen settings and
a [measured] table go into the profile's TOML (comments kept).")]
pub struct TuneArgs {
    #[command(flatten)]
    pub model: crate::model::ModelArgs,
    #[command(flatten)]
    pub endpoint: crate::endpoint::EndpointArgs,
    /// The prompt set (JSONL, as `bellows eval --generate` reads; `expect` gives the right
    /// first actions).
    #[arg(long, value_name = "FILE")]
    pub prompts: PathBuf,
    /// Replies per prompt at temperatures above 0.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub samples: u32,
    /// Reply length limit in tokens.
    #[arg(long, default_value_t = 160, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_tokens: u32,
    /// Protocols tried for builtin tasks: `text` and native format names.
    #[arg(long, value_delimiter = ',', default_value = "text,hermes")]
    pub protocols: Vec<String>,
    /// Temperatures tried.
    #[arg(long, value_delimiter = ',', default_value = "0,0.3,0.7")]
    pub temperatures: Vec<f32>,
    /// Stop starting replies after this many minutes; the best fully measured configuration
    /// is still reported (and written).
    #[arg(long, value_name = "MINUTES")]
    pub budget: Option<f64>,
    /// Output directory; default: .bellows/tune/PROFILE.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Discard an earlier sweep in the output directory instead of resuming it.
    #[arg(long)]
    pub fresh: bool,
    /// Write the chosen settings and figures into the profile TOML.
    #[arg(long)]
    pub write: bool,
    /// The TOML file --write writes; default: the --profile file, else
    /// models/profiles/PROFILE.toml when it exists here, else OUT/PROFILE.toml.
    #[arg(long, value_name = "PATH", requires = "write")]
    pub write_to: Option<PathBuf>,
    /// Print the table as Markdown.
    #[arg(long)]
    pub markdown: bool,
}

/// `bellows tune`.
pub fn run(args: &TuneArgs) -> anyhow::Result<()> {
    let (prompts, sha) = batch::load_prompts(&args.prompts)?;
    let mut protocols = Vec::new();
    for p in &args.protocols {
        match FormatId::parse(p) {
            Some(f) if f != FormatId::OpenAi => protocols.push(f),
            _ => anyhow::bail!(
                "--protocols: unknown protocol {p:?}; use text or a native format (hermes, \
                 qwen3_xml, llama3, mistral, pythonic, bare_json, marker_list, gemma_call, section_calls, harmony)"
            ),
        }
    }
    if let Some(t) = args
        .temperatures
        .iter()
        .find(|t| !(0.0..=f32::MAX).contains(*t))
    {
        anyhow::bail!("--temperatures: {t} is not a non-negative number");
    }
    eprintln!("loading the model…");
    let (engine, profile) = crate::endpoint::engine(
        &args.endpoint,
        &args.model,
        gateway::serve::DEFAULT_MODEL,
        1,
    )?;
    let base = Defaults::of_profile(&profile);
    let model_id = engine.info().id.clone();
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| Path::new(".bellows/tune").join(&profile.name));
    let header = json!({
        "model": model_id,
        "profile": profile.name,
        "prompts_sha256": sha,
        "max_tokens": args.max_tokens,
        "samples": args.samples,
    });
    let mut store = Store::open(&out, &header, args.fresh)?;
    if store.resumed() > 0 {
        eprintln!(
            "resuming the sweep in {}: {} replies already scored",
            out.display(),
            store.resumed()
        );
    }
    let opts = SweepOptions {
        generation: GenOptions {
            max_tokens: args.max_tokens,
            samples: args.samples,
        },
        protocols,
        temperatures: args.temperatures.clone(),
        budget: args
            .budget
            .map(|m| Duration::from_secs_f64(m.max(0.0) * 60.0)),
        max_new_replies: None,
    };
    let bar = batch::progress_bar(None);
    let mut on_reply = |n: usize, c: &Config| {
        bar.set_position(n as u64);
        bar.set_length(n as u64);
        bar.set_message(c.key());
    };
    let result = batch::runtime()?.block_on(sweep(
        &engine,
        &base,
        &prompts,
        &opts,
        &mut store,
        &mut on_reply,
    ))?;
    bar.finish_and_clear();
    let title = format!("bellows tune: {model_id} ({})", profile.name);
    let report = out.join("report.html");
    std::fs::write(&report, html(&result, &title)).map_err(io(&report))?;
    let results = out.join("results.json");
    std::fs::write(&results, format!("{:#}\n", results_json(&result))).map_err(io(&results))?;
    if args.markdown {
        print!("{}", markdown(&result));
    } else {
        print!("{}", table(&result));
    }
    let best = result.best();
    let base_fig = &result.baseline().figures;
    println!(
        "chosen: {} (conversion {:.0}% vs {:.0}% with the profile's settings, right action \
         {:.0}% vs {:.0}%){}",
        best.config.key(),
        best.figures.conversion_rate() * 100.0,
        base_fig.conversion_rate() * 100.0,
        best.figures.right_action_rate() * 100.0,
        base_fig.right_action_rate() * 100.0,
        if result.complete {
            ""
        } else {
            "; the budget ran out: run again to resume"
        }
    );
    println!(
        "{} new replies; report: {}",
        result.new_replies,
        report.display()
    );
    if args.write {
        let target = match (&args.write_to, &args.model.profile) {
            (Some(p), _) => p.clone(),
            (None, Some(p)) if p.ends_with(".toml") || p.contains('/') => PathBuf::from(p),
            _ => {
                let shipped = Path::new("models/profiles").join(format!("{}.toml", profile.name));
                if shipped.exists() {
                    shipped
                } else {
                    out.join(format!("{}.toml", profile.name))
                }
            }
        };
        let text = match std::fs::read_to_string(&target) {
            Ok(t) => t,
            Err(_) => models::profile::BUILTIN
                .iter()
                .find(|(n, _)| *n == profile.name)
                .map(|(_, t)| (*t).to_owned())
                .unwrap_or_default(),
        };
        let prompts_name = args.prompts.display().to_string();
        let new = write_profile(&text, &best.config, &measured(&result, &prompts_name, &sha))?;
        // What is written must load back as a profile.
        models::Profile::parse(&profile.name, &new)?;
        std::fs::write(&target, new).map_err(io(&target))?;
        println!("wrote {}", target.display());
    }
    Ok(())
}
