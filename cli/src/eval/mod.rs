//! `bellows eval`: the codec's conversion rate on a corpus of real model replies.
//!
//! Each corpus line is one reply (`{"id", "model", "format", "raw", "tool_calls"?, "tools"?,
//! "gold"?}`); its `raw` text is fed through a [`TurnDecoder`] (whole, or in `--chunk N`-byte
//! pieces cut on character boundaries, which must not change anything) and the events are
//! scored by [`codec::score`]. A line with `tools` is decoded as the gateway decodes a request
//! with those tools: a client-only registry holding exactly them ([`add_client_tools`]), in
//! the mode [`client_tools_mode`] gives. Bad lines are reported with their line number and
//! skipped. `--generate` makes such a corpus first, with a model ([`generate`]).

pub mod generate;

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::sync::Arc;

use codec::format::FormatId;
use codec::score::{CorpusEntry, CorpusError, ReplyScore, Summary, decode_tool_calls};
use codec::{Event, Mode, Registry, TurnDecoder};

use gateway::api::request::Tool;
use gateway::tools::{add_client_tools, client_tools_mode};

/// Arguments of `bellows eval`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "\
Corpus format: JSONL, one model reply per line:
  {\"id\", \"model\", \"format\", \"raw\", \"tool_calls\"?, \"tools\"?, \"gold\"?}
where `raw` is the reply text, `tool_calls` an OpenAI tool_calls array returned with it,
`tools` the OpenAI tools array the model was offered, and `gold` a list of
{\"name\", \"arguments\"} proposals the model meant.

A line with `tools` is decoded as the gateway decodes a request with those tools: only those
tools exist (bellows' own verbs and edit blocks stay prose), each call is checked against its
tool's schema, and every in-band native format is decoded (`--mode text` and `auto` alike);
its gold must name those tools with schema-valid arguments.

A reply is converted when it holds at least one valid proposal (an explicit DONE counts);
with gold, a decoded proposal that is not in the gold is a false decode and does not count.
The report lists converted/total, replies that needed repairs, each repair and failure kind
with its count and, for replies with gold, exact replies, precision (decoded proposals in
gold / decoded), recall (gold proposals decoded / gold), false decodes and misses (gold
proposals not decoded), in total and per model and per format (the line's `format`).

Lines that are not JSON objects, lack a string `raw`, have invalid `tools` or `gold`, or
(with --mode from-corpus) name no known format are reported on stderr with their line number
and skipped. The exit status is 0 when the corpus was read, whatever the rate.")]
pub struct EvalArgs {
    /// The corpus file (JSONL).
    #[arg(required_unless_present = "generate")]
    pub corpus: Option<PathBuf>,
    /// Generate replies to the prompts in this file with a model first (lines as
    /// shared/corpus/dev-prompts.jsonl: `messages`, optional `tools`, `temperature`, `seed`,
    /// `protocol`, `expect`), write them as a corpus (--out) and score them: conversion,
    /// valid actions, right and exact first actions, echoes, tokens per action, speed.
    #[arg(long, value_name = "PROMPTS.jsonl", conflicts_with = "corpus")]
    pub generate: Option<PathBuf>,
    /// Where --generate writes its replies; default: .bellows/eval/MODEL-UNIXTIME.jsonl.
    #[arg(long, value_name = "CORPUS.jsonl", requires = "generate")]
    pub out: Option<PathBuf>,
    /// Replies per prompt at a temperature above 0 (--generate).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub samples: u32,
    /// Reply length limit in tokens (--generate).
    #[arg(long, default_value_t = 192, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_tokens: u32,
    #[command(flatten)]
    pub model: crate::model::ModelArgs,
    /// With --generate: generate on a remote server instead of a loaded model.
    #[command(flatten)]
    pub endpoint: crate::endpoint::EndpointArgs,
    /// Print JSON, {"summary": {...}, "by_model": {...}, "by_format": {...},
    /// "replies": [{"id", "converted", "proposals", "repairs", "failures"}], "skipped": [...]},
    /// instead of the table.
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Print the tables as Markdown (for reports).
    #[arg(long)]
    pub markdown: bool,
    /// Which formats to decode: `auto` (the text protocol and every in-band native format),
    /// one of text, hermes, qwen3_xml, llama3, mistral, pythonic, bare_json, marker_list,
    /// gemma_call, section_calls, harmony, openai, or `from-corpus`: each line in the format its `format` field names (a line with
    /// no known format is reported and skipped).
    #[arg(long, default_value = "auto", value_parser = parse_mode)]
    pub mode: EvalMode,
    /// Feed each reply in chunks of N bytes (cut on character boundaries) instead of whole,
    /// as a token stream would arrive. The output is the same for every N.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub chunk: Option<u64>,
}

/// How `--mode` picks a line's decode mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvalMode {
    /// The same mode for every line.
    Fixed(Mode),
    /// Each line in the one format its `format` field names.
    FromCorpus,
}

/// Parses `--mode`.
pub fn parse_mode(s: &str) -> Result<EvalMode, String> {
    match s {
        "auto" => return Ok(EvalMode::Fixed(Mode::Auto)),
        "from-corpus" => return Ok(EvalMode::FromCorpus),
        _ => {}
    }
    FormatId::parse(s)
        .map(|f| EvalMode::Fixed(Mode::Only(f)))
        .ok_or_else(|| {
            let names: Vec<&str> = FormatId::ALL.iter().map(|f| f.as_str()).collect();
            format!(
                "unknown mode {s:?}; use auto, from-corpus or one of {}",
                names.join(", ")
            )
        })
}

/// The mode a line is decoded in. A line with client tools is decoded as the gateway decodes
/// a tools request whose model speaks that format ([`client_tools_mode`]); only `openai`
/// keeps its meaning (the structured `tool_calls` alone), since it names no in-band format.
fn line_mode(mode: Mode, client_tools: bool) -> Mode {
    match mode {
        Mode::Only(f) if client_tools && f != FormatId::OpenAi => client_tools_mode(f),
        m => m,
    }
}

/// Why an evaluation could not run at all (bad lines are not errors: they are skipped).
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("cannot open corpus {path}: {source}")]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read corpus {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Why a corpus line was skipped.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SkipReason {
    #[error(transparent)]
    Corpus(#[from] CorpusError),
    /// `--mode from-corpus` on a line whose `format` is missing or not a format name.
    #[error("--mode from-corpus: {}", match .0 {
        Some(f) => format!("unknown format {f:?}"),
        None => "no \"format\"".to_owned(),
    })]
    NoFormat(Option<String>),
}

/// A corpus line that was skipped.
#[derive(Debug, Clone, PartialEq)]
pub struct BadLine {
    /// 1-based.
    pub line: usize,
    pub error: SkipReason,
}

/// The outcome of evaluating a corpus.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub summary: Summary,
    pub replies: Vec<ReplyScore>,
    /// Per model (`?` when the line names none).
    pub by_model: BTreeMap<String, Summary>,
    /// Per the line's `format` field (`?` when it has none).
    pub by_format: BTreeMap<String, Summary>,
    pub bad_lines: Vec<BadLine>,
}

/// Builds a line's client-only registry from its `tools` value, with the gateway's own
/// checks (`tools[i]...` names the culprit).
pub fn tools_registry(tools: &serde_json::Value) -> Result<Registry, String> {
    let tools: Vec<Tool> = serde_json::from_value(tools.clone())
        .map_err(|e| format!("not an OpenAI tools array: {e}"))?;
    let mut registry = Registry::client_only();
    add_client_tools(&mut registry, &tools).map_err(|e| e.to_string())?;
    Ok(registry)
}

/// Cuts `s` into pieces of at most `n` bytes on character boundaries (a piece holds at least
/// one character, so a character longer than `n` bytes is a piece of its own).
pub fn chunks(s: &str, n: usize) -> impl Iterator<Item = &str> {
    let mut rest = s;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut end = n.min(rest.len());
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        if end == 0 {
            end = rest.chars().next().map_or(rest.len(), char::len_utf8);
        }
        let (piece, tail) = rest.split_at(end);
        rest = tail;
        Some(piece)
    })
}

/// Decodes one reply into its events, whole (`chunk` = `None`) or chunked.
pub fn decode_reply(
    registry: &Arc<Registry>,
    mode: Mode,
    raw: &str,
    chunk: Option<usize>,
) -> Vec<Event> {
    let mut decoder = TurnDecoder::new(mode, Arc::clone(registry));
    let mut events = Vec::new();
    match chunk {
        None => events.extend(decoder.feed(raw)),
        Some(n) => {
            for piece in chunks(raw, n) {
                events.extend(decoder.feed(piece));
            }
        }
    }
    events.extend(decoder.finish());
    events
}

/// Evaluates a corpus read from `reader`.
pub fn evaluate(
    reader: impl BufRead,
    mode: EvalMode,
    chunk: Option<usize>,
) -> std::io::Result<Report> {
    let builtin = Arc::new(Registry::builtin());
    // Corpora repeat the same tools on many lines: build each distinct array's registry once.
    let mut registries: HashMap<String, Arc<Registry>> = HashMap::new();
    let mut client_registry = |tools: &serde_json::Value| {
        let key = tools.to_string();
        if let Some(r) = registries.get(&key) {
            return Ok(Arc::clone(r));
        }
        let r = Arc::new(tools_registry(tools)?);
        registries.insert(key, Arc::clone(&r));
        Ok(r)
    };
    let mut report = Report::default();
    for (i, line) in reader.lines().enumerate() {
        let line_no = i + 1;
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let mut skip = |error: SkipReason| {
            report.bad_lines.push(BadLine {
                line: line_no,
                error,
            });
        };
        let entry = match CorpusEntry::parse(&line, line_no, &mut client_registry) {
            Ok(e) => e,
            Err(error) => {
                skip(error.into());
                continue;
            }
        };
        let mode = match mode {
            EvalMode::Fixed(m) => m,
            EvalMode::FromCorpus => match entry.format.as_deref().and_then(FormatId::parse) {
                Some(f) => Mode::Only(f),
                None => {
                    skip(SkipReason::NoFormat(entry.format.clone()));
                    continue;
                }
            },
        };
        let mode = line_mode(mode, entry.registry.is_some());
        let registry = entry.registry.as_ref().unwrap_or(&builtin);
        let mut events = decode_reply(registry, mode, &entry.raw, chunk);
        // Structured tool calls came beside the text, not in it: they apply where the
        // OpenAI format is decoded.
        if let (Some(calls), Mode::Auto | Mode::Only(FormatId::OpenAi)) = (&entry.tool_calls, mode)
        {
            let next = events
                .iter()
                .filter_map(|e| match e {
                    Event::Proposal { index, .. } | Event::ToolCallStart { index, .. } => {
                        Some(index + 1)
                    }
                    _ => None,
                })
                .max()
                .unwrap_or(0);
            events.extend(decode_tool_calls(registry, calls, next));
        }
        let score = ReplyScore::from_events(&entry.id, &events, entry.gold.as_deref());
        report.summary.add(&score);
        let group = |name: Option<String>| name.unwrap_or_else(|| "?".to_owned());
        report
            .by_model
            .entry(group(entry.model))
            .or_default()
            .add(&score);
        report
            .by_format
            .entry(group(entry.format))
            .or_default()
            .add(&score);
        report.replies.push(score);
    }
    Ok(report)
}

fn pct(n: usize, d: usize) -> String {
    if d == 0 {
        "-".to_owned()
    } else {
        format!("{:.1}%", 100.0 * n as f64 / d as f64)
    }
}

fn rate(r: Option<f64>) -> String {
    r.map_or_else(|| "-".to_owned(), |r| format!("{:.1}%", 100.0 * r))
}

/// One table of the report, rendered as text ([`table`]) or Markdown ([`markdown`]).
struct Section {
    title: &'static str,
    header: Vec<&'static str>,
    /// A two-column name/value list: its header shows in Markdown only.
    list: bool,
    rows: Vec<Vec<String>>,
}

/// The report's tables, in order.
fn sections(report: &Report) -> Vec<Section> {
    let s = &report.summary;
    let kv = |k: &str, v: String| vec![k.to_owned(), v];
    let mut out = vec![Section {
        title: "conversion",
        header: vec!["metric", "value"],
        list: true,
        rows: vec![
            kv("replies", s.total.to_string()),
            kv(
                "converted",
                format!(
                    "{} / {}  {}",
                    s.converted,
                    s.total,
                    pct(s.converted, s.total)
                ),
            ),
            kv(
                "repaired replies",
                format!(
                    "{}  {}",
                    s.repaired_replies,
                    pct(s.repaired_replies, s.total)
                ),
            ),
            kv(
                "replies with failures",
                format!("{}  {}", s.failed_replies, pct(s.failed_replies, s.total)),
            ),
            kv("proposals", s.proposals.to_string()),
        ],
    }];
    let kinds = |title, header, counts: Vec<(&str, usize)>| {
        let mut rows: Vec<Vec<String>> = counts
            .into_iter()
            .map(|(k, n)| kv(k, n.to_string()))
            .collect();
        if rows.is_empty() {
            rows.push(kv("(none)", String::new()));
        }
        Section {
            title,
            header: vec![header, "count"],
            list: true,
            rows,
        }
    };
    out.push(kinds(
        "repairs (per occurrence)",
        "repair",
        s.repairs.iter().map(|(k, n)| (k.as_str(), *n)).collect(),
    ));
    out.push(kinds(
        "failures (per occurrence)",
        "failure",
        s.failures.iter().map(|(k, n)| (k.as_str(), *n)).collect(),
    ));
    if s.with_gold > 0 {
        out.push(Section {
            title: "gold",
            header: vec!["metric", "value"],
            list: true,
            rows: vec![
                kv("replies with gold", s.with_gold.to_string()),
                kv(
                    "exactly as gold",
                    format!("{}  {}", s.gold_exact, pct(s.gold_exact, s.with_gold)),
                ),
                kv(
                    "precision",
                    format!(
                        "{}  ({} of {} decoded proposals in gold)",
                        rate(s.precision()),
                        s.matched(),
                        s.gold_decoded
                    ),
                ),
                kv(
                    "recall",
                    format!(
                        "{}  ({} of {} gold proposals decoded)",
                        rate(s.recall()),
                        s.matched(),
                        s.gold_proposals
                    ),
                ),
                kv("false decodes", s.false_decodes.to_string()),
                kv("misses", s.misses.to_string()),
            ],
        });
    }
    let breakdown = |title, key, groups: &BTreeMap<String, Summary>| Section {
        title,
        header: vec![
            key,
            "replies",
            "converted",
            "rate",
            "gold",
            "exact",
            "precision",
            "recall",
            "false decodes",
            "misses",
        ],
        list: false,
        rows: groups
            .iter()
            .map(|(name, g)| {
                let gold = |v: String| if g.with_gold > 0 { v } else { "-".to_owned() };
                vec![
                    name.clone(),
                    g.total.to_string(),
                    g.converted.to_string(),
                    pct(g.converted, g.total),
                    g.with_gold.to_string(),
                    gold(g.gold_exact.to_string()),
                    gold(rate(g.precision())),
                    gold(rate(g.recall())),
                    gold(g.false_decodes.to_string()),
                    gold(g.misses.to_string()),
                ]
            })
            .collect(),
    };
    out.push(breakdown("by model", "model", &report.by_model));
    out.push(breakdown("by format", "format", &report.by_format));
    out
}

/// The human-readable table.
pub fn table(report: &Report) -> String {
    let mut t = String::new();
    for section in sections(report) {
        let _ = writeln!(t, "{}", section.title);
        if section.list {
            for r in &section.rows {
                let line = format!("  {:<28} {}", r[0], r[1]);
                let _ = writeln!(t, "{}", line.trim_end());
            }
            continue;
        }
        let header: Vec<String> = section.header.iter().map(|h| (*h).to_owned()).collect();
        let lines: Vec<&Vec<String>> = std::iter::once(&header).chain(&section.rows).collect();
        let widths: Vec<usize> = (0..header.len())
            .map(|c| {
                lines
                    .iter()
                    .map(|l| l[c].chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        for l in lines {
            let cells: Vec<String> = l
                .iter()
                .zip(&widths)
                .map(|(cell, w)| format!("{cell:<w$}"))
                .collect();
            let _ = writeln!(t, "  {}", cells.join("  ").trim_end());
        }
    }
    t
}

/// The tables as Markdown, for reports: one `###` heading and one table per section.
pub fn markdown(report: &Report) -> String {
    // A cell must not end the row early or break the line.
    let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    let mut t = String::new();
    for section in sections(report) {
        let _ = writeln!(t, "### {}\n", section.title);
        let _ = writeln!(t, "| {} |", section.header.join(" | "));
        let _ = writeln!(t, "|{}", "---|".repeat(section.header.len()));
        for r in &section.rows {
            let cells: Vec<String> = r.iter().map(|c| cell(c)).collect();
            let _ = writeln!(t, "| {} |", cells.join(" | "));
        }
        t.push('\n');
    }
    t
}

/// The `--json` document.
pub fn json(report: &Report) -> serde_json::Value {
    let replies: Vec<serde_json::Value> = report.replies.iter().map(ReplyScore::to_json).collect();
    let groups = |g: &BTreeMap<String, Summary>| {
        serde_json::Value::Object(
            g.iter()
                .map(|(name, s)| (name.clone(), s.to_json()))
                .collect(),
        )
    };
    let skipped: Vec<serde_json::Value> = report
        .bad_lines
        .iter()
        .map(|b| serde_json::json!({"line": b.line, "error": b.error.to_string()}))
        .collect();
    serde_json::json!({
        "summary": report.summary.to_json(),
        "by_model": groups(&report.by_model),
        "by_format": groups(&report.by_format),
        "replies": replies,
        "skipped": skipped,
    })
}

/// Runs `bellows eval`: the report on stdout, skipped lines on stderr.
pub fn run(args: &EvalArgs) -> anyhow::Result<()> {
    if let Some(prompts) = &args.generate {
        return generate::run(args, prompts);
    }
    let corpus = args.corpus.clone().unwrap_or_default();
    Ok(run_corpus(args, &corpus)?)
}

fn run_corpus(args: &EvalArgs, corpus: &std::path::Path) -> Result<(), EvalError> {
    let file = std::fs::File::open(corpus).map_err(|source| EvalError::Open {
        path: corpus.to_owned(),
        source,
    })?;
    let chunk = args.chunk.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    let report =
        evaluate(BufReader::new(file), args.mode, chunk).map_err(|source| EvalError::Read {
            path: corpus.to_owned(),
            source,
        })?;
    for bad in &report.bad_lines {
        eprintln!("{}:{}: skipped: {}", corpus.display(), bad.line, bad.error);
    }
    if args.json {
        println!("{}", json(&report));
    } else if args.markdown {
        print!("{}", markdown(&report));
    } else {
        print!("{}", table(&report));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cut_on_char_boundaries() {
        let s = "aé€😀b";
        for n in 1..=s.len() + 1 {
            let pieces: Vec<&str> = chunks(s, n).collect();
            assert_eq!(pieces.concat(), s, "n = {n}");
            assert!(pieces.iter().all(|p| !p.is_empty()));
            // A piece is longer than n only when it is a single wide character.
            assert!(
                pieces
                    .iter()
                    .all(|p| p.len() <= n || p.chars().count() == 1),
                "n = {n}: {pieces:?}"
            );
        }
        assert_eq!(chunks("", 3).count(), 0);
    }

    #[test]
    fn modes_parse() {
        assert_eq!(parse_mode("auto"), Ok(EvalMode::Fixed(Mode::Auto)));
        assert_eq!(
            parse_mode("hermes"),
            Ok(EvalMode::Fixed(Mode::Only(FormatId::Hermes)))
        );
        assert_eq!(parse_mode("from-corpus"), Ok(EvalMode::FromCorpus));
        assert!(parse_mode("yaml").is_err_and(|e| e.contains("qwen3_xml")));
    }

    #[test]
    fn client_tool_lines_decode_as_the_gateway_does() {
        assert_eq!(line_mode(Mode::Auto, true), Mode::Auto);
        assert_eq!(line_mode(Mode::Only(FormatId::Text), true), Mode::Auto);
        assert_eq!(
            line_mode(Mode::Only(FormatId::Text), false),
            Mode::Only(FormatId::Text)
        );
        assert_eq!(
            line_mode(Mode::Only(FormatId::Pythonic), true),
            Mode::Only(FormatId::Pythonic)
        );
        assert_eq!(
            line_mode(Mode::Only(FormatId::OpenAi), true),
            Mode::Only(FormatId::OpenAi)
        );
        let err = tools_registry(&serde_json::json!([{"type": "function", "function":
            {"name": "f", "parameters": {"type": "array"}}}]))
        .expect_err("not an object schema");
        assert!(err.contains("tools[0].function.parameters"), "{err}");
        assert!(
            tools_registry(&serde_json::json!({"name": "f"}))
                .is_err_and(|e| e.contains("not an OpenAI tools array"))
        );
    }
}
