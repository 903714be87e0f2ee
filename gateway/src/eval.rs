//! `bellows eval`: the codec's conversion rate on a corpus of real model replies.
//!
//! Each corpus line is one reply (`{"id", "model", "format", "raw", "tool_calls"?, "gold"?}`);
//! its `raw` text is fed through a [`TurnDecoder`] (whole, or in `--chunk N`-byte pieces cut
//! on character boundaries, which must not change anything) and the events are scored by
//! [`codec::score`]. Bad lines are reported with their line number and skipped.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::sync::Arc;

use codec::format::FormatId;
use codec::score::{CorpusEntry, CorpusError, ReplyScore, Summary, decode_tool_calls};
use codec::{Event, Mode, Registry, TurnDecoder};

/// Arguments of `bellows eval`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "\
Corpus format: JSONL, one model reply per line:
  {\"id\", \"model\", \"format\", \"raw\", \"tool_calls\"?, \"gold\"?}
where `raw` is the reply text, `tool_calls` an OpenAI tool_calls array returned with it, and
`gold` a list of {\"name\", \"arguments\"} proposals the model meant.

A reply is converted when it decodes to at least one valid proposal (an explicit DONE counts).
The report lists converted/total, replies that needed repairs, each repair and failure kind
with its count, replies per model, and, for replies with gold, false decodes (decoded
proposals not in gold) and misses (gold proposals not decoded).

Lines that are not JSON objects or lack a string `raw` are reported on stderr with their line
number and skipped. The exit status is 0 when the corpus was read, whatever the rate.")]
pub struct EvalArgs {
    /// The corpus file (JSONL).
    pub corpus: PathBuf,
    /// Print JSON, {"summary": {...}, "replies": [{"id", "proposals", "repairs", "failures"}]},
    /// instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Which formats to decode: `auto` (the text protocol and every in-band native format)
    /// or one of text, hermes, qwen3_xml, llama3, mistral, pythonic, bare_json, openai.
    #[arg(long, default_value = "auto", value_parser = parse_mode)]
    pub mode: Mode,
    /// Feed each reply in chunks of N bytes (cut on character boundaries) instead of whole,
    /// as a token stream would arrive. The output is the same for every N.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub chunk: Option<u64>,
}

/// Parses `--mode`.
pub fn parse_mode(s: &str) -> Result<Mode, String> {
    if s == "auto" {
        return Ok(Mode::Auto);
    }
    FormatId::parse(s).map(Mode::Only).ok_or_else(|| {
        let names: Vec<&str> = FormatId::ALL.iter().map(|f| f.as_str()).collect();
        format!(
            "unknown mode {s:?}; use auto or one of {}",
            names.join(", ")
        )
    })
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

/// A corpus line that was skipped.
#[derive(Debug, Clone, PartialEq)]
pub struct BadLine {
    /// 1-based.
    pub line: usize,
    pub error: CorpusError,
}

/// The outcome of evaluating a corpus.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub summary: Summary,
    pub replies: Vec<ReplyScore>,
    /// Per model (`?` when the line names none): replies, converted.
    pub by_model: BTreeMap<String, (usize, usize)>,
    pub bad_lines: Vec<BadLine>,
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
pub fn evaluate(reader: impl BufRead, mode: Mode, chunk: Option<usize>) -> std::io::Result<Report> {
    let registry = Arc::new(Registry::builtin());
    let mut report = Report::default();
    for (i, line) in reader.lines().enumerate() {
        let line_no = i + 1;
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let entry = match CorpusEntry::parse(&line, line_no) {
            Ok(e) => e,
            Err(error) => {
                report.bad_lines.push(BadLine {
                    line: line_no,
                    error,
                });
                continue;
            }
        };
        let mut events = decode_reply(&registry, mode, &entry.raw, chunk);
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
            events.extend(decode_tool_calls(&registry, calls, next));
        }
        let score = ReplyScore::from_events(&entry.id, &events, entry.gold.as_deref());
        report.summary.add(&score);
        let m = report
            .by_model
            .entry(entry.model.unwrap_or_else(|| "?".to_owned()))
            .or_default();
        m.0 += 1;
        m.1 += usize::from(score.converted());
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

/// The human-readable table.
pub fn table(report: &Report) -> String {
    let s = &report.summary;
    let mut t = String::new();
    let row = |t: &mut String, k: &str, v: String| {
        let _ = writeln!(t, "  {k:<28} {v}");
    };
    t.push_str("conversion\n");
    row(&mut t, "replies", s.total.to_string());
    row(
        &mut t,
        "converted",
        format!(
            "{} / {}  {}",
            s.converted,
            s.total,
            pct(s.converted, s.total)
        ),
    );
    row(
        &mut t,
        "repaired replies",
        format!(
            "{}  {}",
            s.repaired_replies,
            pct(s.repaired_replies, s.total)
        ),
    );
    row(
        &mut t,
        "replies with failures",
        format!("{}  {}", s.failed_replies, pct(s.failed_replies, s.total)),
    );
    row(&mut t, "proposals", s.proposals.to_string());
    t.push_str("repairs (per occurrence)\n");
    if s.repairs.is_empty() {
        row(&mut t, "(none)", String::new());
    }
    for (k, n) in &s.repairs {
        row(&mut t, k.as_str(), n.to_string());
    }
    t.push_str("failures (per occurrence)\n");
    if s.failures.is_empty() {
        row(&mut t, "(none)", String::new());
    }
    for (k, n) in &s.failures {
        row(&mut t, k.as_str(), n.to_string());
    }
    t.push_str("by model (converted / replies)\n");
    for (model, (total, conv)) in &report.by_model {
        row(
            &mut t,
            model,
            format!("{conv} / {total}  {}", pct(*conv, *total)),
        );
    }
    if s.with_gold > 0 {
        t.push_str("gold\n");
        row(&mut t, "replies with gold", s.with_gold.to_string());
        row(
            &mut t,
            "exactly as gold",
            format!("{}  {}", s.gold_exact, pct(s.gold_exact, s.with_gold)),
        );
        row(&mut t, "false decodes", s.false_decodes.to_string());
        row(&mut t, "misses", s.misses.to_string());
    }
    t
}

/// The `--json` document.
pub fn json(report: &Report) -> serde_json::Value {
    let replies: Vec<serde_json::Value> = report.replies.iter().map(ReplyScore::to_json).collect();
    serde_json::json!({ "summary": report.summary.to_json(), "replies": replies })
}

/// Runs `bellows eval`: the report on stdout, skipped lines on stderr.
pub fn run(args: &EvalArgs) -> Result<(), EvalError> {
    let file = std::fs::File::open(&args.corpus).map_err(|source| EvalError::Open {
        path: args.corpus.clone(),
        source,
    })?;
    let chunk = args.chunk.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    let report =
        evaluate(BufReader::new(file), args.mode, chunk).map_err(|source| EvalError::Read {
            path: args.corpus.clone(),
            source,
        })?;
    for bad in &report.bad_lines {
        eprintln!(
            "{}:{}: skipped: {}",
            args.corpus.display(),
            bad.line,
            bad.error
        );
    }
    if args.json {
        println!("{}", json(&report));
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
        assert_eq!(parse_mode("auto"), Ok(Mode::Auto));
        assert_eq!(parse_mode("hermes"), Ok(Mode::Only(FormatId::Hermes)));
        assert!(parse_mode("yaml").is_err_and(|e| e.contains("qwen3_xml")));
    }
}
