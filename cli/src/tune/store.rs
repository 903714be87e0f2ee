//! The sweep's resumable store: `sweep.json` says what is measured, and every scored reply is
//! appended to `replies.jsonl` at once, so an interrupted sweep resumes where it stopped.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write as _};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::error::{TuneError, io};
use crate::measure::Sample;

/// A reply's place in a sweep: (configuration key, prompt id, sample).
pub type Key = (String, String, u32);

/// Where a sweep keeps its replies, and what it was started on.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    /// Replies already scored, by (configuration key, prompt id, sample).
    done: HashMap<Key, Sample>,
    file: std::fs::File,
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

    /// The reply already scored for `key`, if any.
    pub(super) fn get(&self, key: &Key) -> Option<&Sample> {
        self.done.get(key)
    }

    /// Appends a scored reply (`line`, its JSON record) and remembers it under `key`.
    pub(super) fn record(
        &mut self,
        key: Key,
        line: Value,
        sample: Sample,
    ) -> Result<(), TuneError> {
        let path = self.dir.join("replies.jsonl");
        writeln!(self.file, "{line}").map_err(io(&path))?;
        self.file.flush().map_err(io(&path))?;
        self.done.insert(key, sample);
        Ok(())
    }
}
