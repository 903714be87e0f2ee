//! `bellows eval --generate`: replies to a prompt set generated with a model, as
//! [`crate::measure`] generates them, written as a corpus and scored.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use codec::format::FormatId;
use gateway::defaults::Defaults;
use models::Engine;
use serde_json::{Value, json};

use super::EvalArgs;
use crate::batch;
use crate::measure::{self, Config, FIGURE_COLUMNS, Figures, GenOptions, Sample, figure_cells};

/// A file `--generate` could not write.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct WriteError {
    path: PathBuf,
    source: std::io::Error,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> WriteError + '_ {
    move |source| WriteError {
        path: path.to_owned(),
        source,
    }
}

/// `bellows eval --generate`.
pub fn run(args: &EvalArgs, prompts_path: &Path) -> anyhow::Result<()> {
    let (prompts, _sha) = batch::load_prompts(prompts_path)?;
    eprintln!("loading the model…");
    let (engine, profile) = crate::endpoint::engine(
        &args.endpoint,
        &args.model,
        gateway::serve::DEFAULT_MODEL,
        1,
    )?;
    let base = Defaults::of_profile(&profile);
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
    let bar = batch::progress_bar(Some(total));
    let rt = batch::runtime()?;
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
