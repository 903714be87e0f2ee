//! The sweep's report: the terminal table, Markdown, the self-contained HTML page with its SVG
//! chart, and `results.json`.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::sweep::SweepResult;
use crate::measure::{self, FIGURE_COLUMNS, figure_cells};

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
