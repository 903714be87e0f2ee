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

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use codec::format::FormatId;
use codec::registry::PromptStyle;
use models::profile::Measured;
use models::{Engine, GrammarMode};
use serde_json::{Value, json};

use crate::measure::{
    self, Config, FIGURE_COLUMNS, Figures, GenOptions, PromptLine, Sample, figure_cells,
};
use crate::state::{Defaults, ToolsPresentation};

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

/// Where a sweep keeps its replies, and what it was started on.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    /// Replies already scored, by (configuration key, prompt id, sample).
    done: HashMap<(String, String, u32), Sample>,
    file: std::fs::File,
}

/// Why a sweep could not run.
#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{dir} holds a sweep of other prompts or settings ({what}); pass --fresh to start over, \
         or --out another directory"
    )]
    Mismatch { dir: PathBuf, what: String },
    #[error("no prompts to measure")]
    NoPrompts,
    #[error(transparent)]
    Prompt(#[from] measure::PromptError),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> TuneError + '_ {
    move |source| TuneError::Io {
        path: path.to_owned(),
        source,
    }
}

impl Store {
    /// Opens (or starts) the sweep in `dir`. `header` identifies what is measured (model,
    /// prompt digest, generation limits); a directory holding another sweep is refused unless
    /// `fresh`, which clears it.
    pub fn open(dir: &Path, header: &Value, fresh: bool) -> Result<Store, TuneError> {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let head_path = dir.join("sweep.json");
        let replies_path = dir.join("replies.jsonl");
        if fresh {
            for p in [&head_path, &replies_path] {
                if p.exists() {
                    std::fs::remove_file(p).map_err(io(p))?;
                }
            }
        }
        if head_path.exists() {
            let text = std::fs::read_to_string(&head_path).map_err(io(&head_path))?;
            let old: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            if &old != header {
                let what = ["model", "prompts_sha256", "max_tokens", "samples"]
                    .into_iter()
                    .filter(|k| old.get(k) != header.get(k))
                    .collect::<Vec<_>>()
                    .join(", ");
                return Err(TuneError::Mismatch {
                    dir: dir.to_owned(),
                    what: if what.is_empty() {
                        "sweep.json differs".to_owned()
                    } else {
                        format!("{what} differ")
                    },
                });
            }
        } else {
            std::fs::write(&head_path, format!("{header:#}\n")).map_err(io(&head_path))?;
        }
        let mut done = HashMap::new();
        if replies_path.exists() {
            let f = std::fs::File::open(&replies_path).map_err(io(&replies_path))?;
            for line in BufReader::new(f).lines() {
                let line = line.map_err(io(&replies_path))?;
                // A line cut by the interruption does not parse: it is generated again.
                let Ok(v) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                let (Some(key), Some(s)) = (
                    v.get("config").and_then(Value::as_str),
                    Sample::from_json(&v),
                ) else {
                    continue;
                };
                done.insert((key.to_owned(), s.prompt_id.clone(), s.sample), s);
            }
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&replies_path)
            .map_err(io(&replies_path))?;
        Ok(Store {
            dir: dir.to_owned(),
            done,
            file,
        })
    }

    /// Replies read back from an earlier run.
    pub fn resumed(&self) -> usize {
        self.done.len()
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn record(&mut self, line: Value) -> Result<(), TuneError> {
        let path = self.dir.join("replies.jsonl");
        writeln!(self.file, "{line}").map_err(io(&path))?;
        self.file.flush().map_err(io(&path))
    }
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
                    if let Some(s) = store.done.get(&key) {
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
                    store.record(s.to_json(&engine.info().id, &config, line))?;
                    store.done.insert(key, s.clone());
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

/// The sweep's table: one row per configuration, the chosen one marked `*`.
pub fn table(result: &SweepResult) -> String {
    let mut header = vec!["configuration", "stage"];
    header.extend_from_slice(FIGURE_COLUMNS);
    let rows: Vec<Vec<String>> = result
        .measured
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let mark = if i == result.best { "* " } else { "  " };
            let partial = if m.complete { "" } else { " (partial)" };
            let mut row = vec![
                format!("{mark}{}{partial}", m.config.key()),
                m.stage.as_str().to_owned(),
            ];
            row.extend(figure_cells(&m.figures));
            row
        })
        .collect();
    measure::text_table(&header, &rows)
}

/// The same table in Markdown.
pub fn markdown(result: &SweepResult) -> String {
    let mut s = String::from("| configuration | stage |");
    for c in FIGURE_COLUMNS {
        let _ = write!(s, " {c} |");
    }
    s.push_str("\n|---|---|");
    for _ in FIGURE_COLUMNS {
        s.push_str("---:|");
    }
    s.push('\n');
    for (i, m) in result.measured.iter().enumerate() {
        let name = if i == result.best {
            format!("**{}**", m.config.key())
        } else {
            m.config.key()
        };
        let _ = write!(s, "| {name} | {} |", m.stage.as_str());
        for c in figure_cells(&m.figures) {
            let _ = write!(s, " {c} |");
        }
        s.push('\n');
    }
    s
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A self-contained HTML report: the settings, the table, and an SVG bar chart of
/// conversion and right-action rate per configuration.
pub fn html(result: &SweepResult, title: &str) -> String {
    let n = result.measured.len();
    let bar_h = 18;
    let row_h = 2 * bar_h + 10;
    let label_w = 330;
    let chart_w = 400;
    let height = n * row_h + 40;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{height}\" \
         font-family=\"sans-serif\" font-size=\"12\" role=\"img\" \
         aria-label=\"conversion per configuration\">\n",
        label_w + chart_w + 60
    );
    for (i, m) in result.measured.iter().enumerate() {
        let y = 20 + i * row_h;
        let weight = if i == result.best { "bold" } else { "normal" };
        let _ = writeln!(
            svg,
            "<text x=\"0\" y=\"{}\" font-weight=\"{weight}\">{}</text>",
            y + bar_h,
            escape(&m.config.key())
        );
        for (j, (rate, colour, what)) in [
            (m.figures.conversion_rate(), "#3b7dd8", "conversion"),
            (m.figures.right_action_rate(), "#e08a2c", "right action"),
        ]
        .into_iter()
        .enumerate()
        {
            let w = (rate * chart_w as f64).round() as usize;
            let by = y + j * (bar_h + 2);
            let _ = writeln!(
                svg,
                "<rect x=\"{label_w}\" y=\"{by}\" width=\"{w}\" height=\"{bar_h}\" \
                 fill=\"{colour}\"><title>{what} {:.0}%</title></rect>\
                 <text x=\"{}\" y=\"{}\">{:.0}%</text>",
                rate * 100.0,
                label_w + w + 4,
                by + bar_h - 4,
                rate * 100.0
            );
        }
    }
    let _ = writeln!(
        svg,
        "<text x=\"{label_w}\" y=\"{}\" fill=\"#3b7dd8\">■ conversion</text>\
         <text x=\"{}\" y=\"{}\" fill=\"#e08a2c\">■ right action</text></svg>",
        height - 5,
        label_w + 120,
        height - 5
    );
    let mut rows = String::new();
    for (i, m) in result.measured.iter().enumerate() {
        let cls = if i == result.best {
            " class=\"best\""
        } else {
            ""
        };
        let _ = write!(
            rows,
            "<tr{cls}><td>{}</td><td>{}</td>",
            escape(&m.config.key()),
            m.stage.as_str()
        );
        for c in figure_cells(&m.figures) {
            let _ = write!(rows, "<td>{}</td>", escape(&c));
        }
        rows.push_str("</tr>\n");
    }
    let mut head = String::from("<tr><th>configuration</th><th>stage</th>");
    for c in FIGURE_COLUMNS {
        let _ = write!(head, "<th>{c}</th>");
    }
    head.push_str("</tr>");
    let best = result.best();
    format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{t}</title>\n<style>\
         body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}\
         td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}}\
         td:first-child,th:first-child{{text-align:left;font-family:monospace}}\
         tr.best{{background:#eef6e8;font-weight:bold}}</style></head><body>\n\
         <h1>{t}</h1>\n<p>Chosen: <code>{best}</code> (objective: right-action rate, then \
         conversion, then generated tokens per action, then speed).{partial}</p>\n\
         <p>Configuration names read protocol / system-prompt style / temperature / grammar / \
         actions per reply (a0: no limit) / tool presentation. conv: replies with a valid, \
         non-echo action; valid: valid among attempted actions; right and exact: first action \
         as expected; auto: client-tool prompts that got a valid call; echo: actions copying \
         the help text.</p>\n{svg}\n<table>\n{head}\n{rows}</table>\n</body></html>\n",
        t = escape(title),
        best = escape(&best.config.key()),
        partial = if result.complete {
            ""
        } else {
            " The sweep stopped at its budget; partial rows are not chosen."
        },
    )
}

/// The `[measured]` table for the chosen configuration.
pub fn measured(result: &SweepResult, prompts: &str, prompts_sha256: &str) -> Measured {
    let f = &result.best().figures;
    let round = |x: f64| (x * 1000.0).round() / 1000.0;
    Measured {
        conversion_rate: Some(round(f.conversion_rate())),
        valid_action_rate: Some(round(f.valid_action_rate())),
        right_action_rate: Some(round(f.right_action_rate())),
        exact_action_rate: Some(round(f.exact_action_rate())),
        auto_tool_call_rate: f.auto_tool_call_rate().map(round),
        echo_decodes: Some(u64::from(f.echoes)),
        tokens_per_action: f.tokens_per_action().map(|t| (t * 10.0).round() / 10.0),
        tokens_per_second: Some((f.tokens_per_second() * 10.0).round() / 10.0),
        replies: Some(u64::from(f.replies)),
        configuration: Some(result.best().config.key()),
        prompts: Some(prompts.to_owned()),
        prompts_sha256: Some(prompts_sha256.to_owned()),
        date: Some(today()),
        bellows_version: Some(env!("CARGO_PKG_VERSION").to_owned()),
        corpus: None,
    }
}

/// Today's date (UTC) as `YYYY-MM-DD`.
pub fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Rewrites profile TOML `text` with `config`'s settings and `measured`, keeping everything
/// else (comments included) as it was.
pub fn write_profile(
    text: &str,
    config: &Config,
    measured: &Measured,
) -> Result<String, toml_edit::TomlError> {
    // The placeholder comment of an unmeasured profile goes: the table replaces it.
    let text: String = text
        .lines()
        .filter(|l| !l.starts_with("# [measured] is filled in by profile tuning"))
        .map(|l| format!("{l}\n"))
        .collect();
    let mut doc: toml_edit::DocumentMut = text.parse()?;
    let table = |doc: &mut toml_edit::DocumentMut, name: &str| {
        if !doc.contains_table(name) {
            doc[name] = toml_edit::table();
        }
    };
    table(&mut doc, "generation");
    let g = &mut doc["generation"];
    g["protocol"] = toml_edit::value(config.protocol.as_str());
    g["prompt"] = toml_edit::value(config.prompt.as_str());
    g["grammar"] = toml_edit::value(config.grammar.as_str());
    g["actions_per_turn"] = toml_edit::value(i64::from(config.actions_per_turn));
    g["tools"] = toml_edit::value(config.tools.as_str());
    if let Some(t) = config.temperature {
        table(&mut doc, "sampling");
        // Through f64's shortest form of the f32, so 0.3 is written as 0.3.
        let t: f64 = format!("{t}").parse().unwrap_or(f64::from(t));
        doc["sampling"]["temperature"] = toml_edit::value(t);
    }
    let mut m = toml_edit::Table::new();
    m.decor_mut().set_prefix(
        "\n# Written by `bellows tune --write`: the chosen configuration's figures on the\n\
         # prompt set named here (see models/profiles/README.md).\n",
    );
    let v = serde_json::to_value(measured).unwrap_or(Value::Null);
    if let Value::Object(fields) = v {
        for (k, v) in fields {
            let item = match v {
                Value::Null => continue,
                Value::Bool(b) => toml_edit::value(b),
                Value::Number(n) => match n.as_i64() {
                    Some(i) if !n.is_f64() => toml_edit::value(i),
                    _ => toml_edit::value(n.as_f64().unwrap_or_default()),
                },
                Value::String(s) => toml_edit::value(s),
                other => toml_edit::value(other.to_string()),
            };
            m.insert(&k, item);
        }
    }
    doc.remove("measured");
    doc.insert("measured", toml_edit::Item::Table(m));
    Ok(doc.to_string())
}

/// The sweep's summary as JSON (`results.json`).
pub fn results_json(result: &SweepResult) -> Value {
    json!({
        "best": result.best().config.key(),
        "complete": result.complete,
        "configurations": result.measured.iter().map(|m| json!({
            "config": m.config.key(),
            "stage": m.stage.as_str(),
            "complete": m.complete,
            "figures": m.figures.to_json(),
            "by_kind": measure::by_kind(&m.samples)
                .into_iter()
                .map(|(k, f)| (k.to_owned(), f.to_json()))
                .collect::<serde_json::Map<_, _>>(),
        })).collect::<Vec<_>>(),
    })
}

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
    pub model: crate::agent_cmd::ModelArgs,
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

/// Reads a prompt file: its lines (bad ones reported on stderr) and its sha256.
fn load_prompts(path: &Path) -> anyhow::Result<(Vec<PromptLine>, String)> {
    use sha2::Digest;
    let bytes = std::fs::read(path)
        .map_err(|e| anyhow::anyhow!("cannot read prompts {}: {e}", path.display()))?;
    let sha = format!("{:x}", sha2::Sha256::digest(&bytes));
    let (good, bad) = measure::read_prompts(&bytes[..])?;
    for b in &bad {
        eprintln!("{}:{}: skipped: {}", path.display(), b.line, b.error);
    }
    if good.is_empty() {
        anyhow::bail!("{}: no usable prompt lines", path.display());
    }
    Ok((good, sha))
}

/// A progress bar on a terminal; hidden otherwise.
fn progress_bar(len: Option<u64>) -> indicatif::ProgressBar {
    let bar = match len {
        Some(n) => indicatif::ProgressBar::new(n),
        None => indicatif::ProgressBar::new_spinner(),
    };
    let style = indicatif::ProgressStyle::with_template(
        "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} replies  {msg}",
    )
    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    bar.set_style(style);
    bar
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

/// `bellows tune`.
pub fn tune_cmd(args: &TuneArgs) -> anyhow::Result<()> {
    let (prompts, sha) = load_prompts(&args.prompts)?;
    let mut protocols = Vec::new();
    for p in &args.protocols {
        match FormatId::parse(p) {
            Some(f) if f != FormatId::OpenAi => protocols.push(f),
            _ => anyhow::bail!(
                "--protocols: unknown protocol {p:?}; use text or a native format (hermes, \
                 qwen3_xml, llama3, mistral, pythonic, bare_json)"
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
    let engine = args.model.load()?;
    let profile = engine.profile().clone();
    let base = Defaults::of_profile(&profile);
    let engine: Arc<dyn Engine> = Arc::new(engine);
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
    let bar = progress_bar(None);
    let mut on_reply = |n: usize, c: &Config| {
        bar.set_position(n as u64);
        bar.set_length(n as u64);
        bar.set_message(c.key());
    };
    let result = runtime()?.block_on(sweep(
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

/// `bellows eval --generate`.
pub fn generate_cmd(args: &crate::eval::EvalArgs, prompts_path: &Path) -> anyhow::Result<()> {
    let (prompts, _sha) = load_prompts(prompts_path)?;
    eprintln!("loading the model…");
    let engine = args.model.load()?;
    let base = Defaults::of_profile(engine.profile());
    let engine: Arc<dyn Engine> = Arc::new(engine);
    let model_id = engine.info().id.clone();
    let out = match &args.out {
        Some(p) => p.clone(),
        None => {
            let secs = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            let stem: String = model_id
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            Path::new(".bellows/eval").join(format!("{stem}-{secs}.jsonl"))
        }
    };
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
    }
    let mut file = std::fs::File::create(&out).map_err(io(&out))?;
    let gen_opts = GenOptions {
        max_tokens: args.max_tokens,
        samples: args.samples,
    };
    // The profile's settings, with each line's temperature and protocol where it gives them.
    let profile_config = Config {
        temperature: None,
        ..Config::of_defaults(&base)
    };
    let configs: Vec<Config> = prompts
        .iter()
        .map(|l| Config {
            protocol: l
                .protocol
                .as_deref()
                .and_then(FormatId::parse)
                .unwrap_or(profile_config.protocol),
            ..profile_config
        })
        .collect();
    let total: u64 = prompts
        .iter()
        .zip(&configs)
        .map(|(l, c)| u64::from(measure::samples_for(l, c, &gen_opts)))
        .sum();
    let bar = progress_bar(Some(total));
    let rt = runtime()?;
    let mut samples = Vec::new();
    let mut by_format: std::collections::BTreeMap<String, Vec<Sample>> = Default::default();
    for (line, config) in prompts.iter().zip(&configs) {
        bar.set_message(line.id.clone());
        for k in 0..measure::samples_for(line, config, &gen_opts) {
            let s = match rt.block_on(measure::measure(&engine, &base, line, config, &gen_opts, k))
            {
                Ok(s) => s,
                Err(e) => {
                    bar.suspend(|| eprintln!("{}: skipped: {e}", prompts_path.display()));
                    continue;
                }
            };
            let v = s.to_json(&model_id, config, line);
            writeln!(file, "{v}").map_err(io(&out))?;
            let format = v
                .get("format")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_owned();
            by_format.entry(format).or_default().push(s.clone());
            samples.push(s);
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    let mut rows = vec![row("total", &Figures::of(&samples))];
    for (kind, f) in measure::by_kind(&samples) {
        rows.push(row(kind, &f));
    }
    for (format, s) in &by_format {
        rows.push(row(&format!("format {format}"), &Figures::of(s)));
    }
    let mut header = vec![""];
    header.extend_from_slice(FIGURE_COLUMNS);
    if args.json {
        let json = json!({
            "corpus": out.display().to_string(),
            "summary": Figures::of(&samples).to_json(),
            "by_format": by_format.iter().map(|(k, s)| (k.clone(), Figures::of(s).to_json()))
                .collect::<serde_json::Map<_, _>>(),
        });
        println!("{json}");
    } else {
        print!("{}", measure::text_table(&header, &rows));
        println!(
            "replies written to {} (score them again with `bellows eval {}`)",
            out.display(),
            out.display()
        );
    }
    Ok(())
}

fn row(name: &str, f: &Figures) -> Vec<String> {
    let mut r = vec![name.to_owned()];
    r.extend(figure_cells(f));
    r
}
