//! The session journal: `.bellows/sessions/ID/journal.jsonl`, one [`Event`] per line, written
//! (and flushed) before the next step; pre-images of changed files in `blobs/SHA256`. Undo
//! reads the same records.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use crate::act::sha256;
use crate::view::Event;
use crate::workspace::Workspace;

#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("journal {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no session journal under {0}")]
    NoSession(PathBuf),
    #[error(
        "{path} changed since commit {id} (now {now}); undo would lose that change. \
         Use --force to restore anyway"
    )]
    ChangedSince { id: u32, path: String, now: String },
    #[error(
        "{path}/ (made by commit {id}) holds files the session did not put there: {}; undo \
         would have to delete them. Move them away first, or use --force to keep the directory",
        .others.join(", ")
    )]
    DirNotEmpty {
        id: u32,
        path: String,
        others: Vec<String>,
    },
    #[error("pre-image {0} of a commit is missing")]
    MissingBlob(String),
    #[error(transparent)]
    Workspace(#[from] crate::workspace::WorkspaceError),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> JournalError + '_ {
    move |source| JournalError::Io {
        path: path.to_owned(),
        source,
    }
}

/// An open session journal.
#[derive(Debug)]
pub struct Journal {
    pub id: String,
    dir: PathBuf,
    file: File,
}

/// Creates a new directory under `base` named by the time, the process id and a counter (the
/// first name not taken); returns its name and path, or the path that failed.
pub(crate) fn fresh_dir(
    base: &std::path::Path,
) -> Result<(String, std::path::PathBuf), (std::path::PathBuf, std::io::Error)> {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut n = 0;
    loop {
        let id = format!("{secs:010}-{}-{n}", std::process::id());
        let dir = base.join(&id);
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok((id, dir)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => n += 1,
            Err(e) => return Err((dir, e)),
        }
    }
}

impl Journal {
    /// Creates a new session under `ws`'s `.bellows/sessions/`, named by the time and
    /// process id (and a counter when that name is taken).
    pub fn create(ws: &Workspace) -> Result<Journal, JournalError> {
        let base = ws.state_dir().join("sessions");
        std::fs::create_dir_all(&base).map_err(io(&base))?;
        let (id, dir) = fresh_dir(&base).map_err(|(dir, e)| io(&dir)(e))?;
        let path = dir.join("journal.jsonl");
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io(&path))?;
        Ok(Journal { id, dir, file })
    }

    /// Opens session `id`'s journal for appending (`bellows agent --resume`).
    pub fn open(ws: &Workspace, id: &str) -> Result<Journal, JournalError> {
        let dir = ws.state_dir().join("sessions").join(id);
        // An id is one directory name, never a path that could leave `sessions/`.
        let plain = !id.is_empty() && !id.contains(['/', '\\']) && id != "." && id != "..";
        let path = dir.join("journal.jsonl");
        if !plain || !path.is_file() {
            return Err(JournalError::NoSession(dir));
        }
        let file = OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(io(&path))?;
        Ok(Journal {
            id: id.to_owned(),
            dir,
            file,
        })
    }

    /// The journal's events as JSON values, skipping a torn last line.
    pub fn events(&self) -> Result<Vec<serde_json::Value>, JournalError> {
        let path = self.dir.join("journal.jsonl");
        let file = File::open(&path).map_err(io(&path))?;
        let mut events = Vec::new();
        for line in BufReader::new(file).lines() {
            let line = line.map_err(io(&path))?;
            if let Ok(v) = serde_json::from_str(&line) {
                events.push(v);
            }
        }
        Ok(events)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Appends one event and flushes it.
    pub fn record(&mut self, event: &Event) -> Result<(), JournalError> {
        let path = self.dir.join("journal.jsonl");
        let mut line = serde_json::to_string(event).unwrap_or_default();
        line.push('\n');
        self.file.write_all(line.as_bytes()).map_err(io(&path))?;
        self.file.flush().map_err(io(&path))
    }

    /// Saves a pre-image by its sha256 (once) so undo can restore it.
    pub fn save_blob(&self, bytes: &[u8]) -> Result<String, JournalError> {
        let sha = sha256(bytes);
        let path = self.dir.join("blobs").join(&sha);
        if !path.exists() {
            crate::workspace::write_atomic(&path, bytes).map_err(io(&path))?;
        }
        Ok(sha)
    }
}

/// One commit as undo reads it back: a file, or a directory the commit made (`dir`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct CommitRecord {
    id: u32,
    path: String,
    pre: Option<String>,
    post: Option<String>,
    /// The file's mode bits before the commit.
    mode: Option<u32>,
    dir: bool,
}

/// `bellows agent undo [ID] [--steps N] [--force]`: restores the pre-images of the last
/// `steps` commits not yet undone in session `id` (the latest session when `None`), newest
/// first. A file whose current content is not what the commit wrote is refused unless
/// `force`. A directory the commit made is removed once its files are restored, if nothing
/// else is in it; holding other files it refuses the undo, or with `force` stays. Returns the
/// restored paths (a removed directory with a trailing `/`); each is journaled.
pub fn undo(
    ws: &Workspace,
    id: Option<&str>,
    steps: usize,
    force: bool,
) -> Result<Vec<String>, JournalError> {
    let base = ws.state_dir().join("sessions");
    let dir = match id {
        Some(id) => base.join(id),
        None => {
            let mut ids: Vec<_> = std::fs::read_dir(&base)
                .map_err(|_| JournalError::NoSession(base.clone()))?
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            ids.sort();
            base.join(
                ids.pop()
                    .ok_or_else(|| JournalError::NoSession(base.clone()))?,
            )
        }
    };
    let path = dir.join("journal.jsonl");
    let file = File::open(&path).map_err(|_| JournalError::NoSession(dir.clone()))?;
    let mut commits = Vec::new();
    let mut undone = std::collections::HashSet::new();
    for line in BufReader::new(file).lines() {
        let line = line.map_err(io(&path))?;
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue; // A torn last line (a crash mid-write) is skipped, not fatal.
        };
        let id = v["id"].as_u64().unwrap_or(0) as u32;
        let sha = |k: &str| v[k].as_str().map(str::to_owned);
        match v["event"].as_str() {
            Some(kind @ ("commit" | "commit_dir")) => commits.push(CommitRecord {
                id,
                path: v["path"].as_str().unwrap_or_default().to_owned(),
                pre: sha("pre_sha256"),
                post: sha("post_sha256"),
                mode: v["pre_mode"].as_u64().map(|m| m as u32),
                dir: kind == "commit_dir",
            }),
            // A failed commit wrote nothing; an undone one is already restored.
            Some("undo" | "commit_failed") => {
                undone.insert(id);
            }
            _ => {}
        }
    }
    let mut ids: Vec<u32> = commits.iter().map(|c| c.id).collect();
    ids.dedup();
    ids.retain(|i| !undone.contains(i));
    let chosen: Vec<u32> = ids.into_iter().rev().take(steps).collect();
    let mut journal = OpenOptions::new()
        .append(true)
        .open(&path)
        .map_err(io(&path))?;
    let mut restored = Vec::new();
    for id in chosen {
        let group: Vec<&CommitRecord> = commits.iter().filter(|c| c.id == id).collect();
        let (dirs, files): (Vec<&CommitRecord>, Vec<&CommitRecord>) =
            group.iter().partition(|c| c.dir);
        // Check every file and directory of the commit before touching any.
        let mut kept_dirs = Vec::new();
        for d in &dirs {
            let others = strangers(ws, d, &group)?;
            match others.is_empty() {
                true => {}
                false if force => kept_dirs.push(d.path.clone()),
                false => {
                    return Err(JournalError::DirNotEmpty {
                        id,
                        path: d.path.clone(),
                        others,
                    });
                }
            }
        }
        for c in &files {
            let now = ws.read(&c.path)?.map(|b| sha256(&b));
            if now != c.post && !force {
                return Err(JournalError::ChangedSince {
                    id,
                    path: c.path.clone(),
                    now: now.unwrap_or_else(|| "absent".to_owned()),
                });
            }
        }
        for c in files.iter().rev() {
            match &c.pre {
                Some(sha) => {
                    let blob = dir.join("blobs").join(sha);
                    let bytes =
                        std::fs::read(&blob).map_err(|_| JournalError::MissingBlob(sha.clone()))?;
                    ws.write_atomic(&c.path, &bytes)?;
                    if let Some(mode) = c.mode {
                        ws.set_mode(&c.path, mode)?;
                    }
                }
                None => {
                    if ws.read(&c.path)?.is_some() {
                        ws.remove(&c.path)?;
                    }
                }
            }
            let line = serde_json::to_string(&Event::Undo {
                id,
                path: c.path.clone(),
                kept: false,
            })
            .unwrap_or_default();
            writeln!(journal, "{line}").map_err(io(&path))?;
            journal.flush().map_err(io(&path))?;
            restored.push(c.path.clone());
        }
        // Deepest first; a kept directory keeps its parents too. A kept one is journaled as
        // handled, so that the next undo moves on to the commit before.
        for d in dirs.iter().rev() {
            let path = ws.resolve(&d.path)?;
            let kept = kept_dirs.iter().any(|k| k == &d.path || within(k, &d.path));
            if !kept && !path.is_dir() {
                continue;
            }
            if !kept {
                ws.remove_dir(&d.path)?;
            }
            let line = serde_json::to_string(&Event::Undo {
                id,
                path: format!("{}/", d.path),
                kept,
            })
            .unwrap_or_default();
            let shown = match kept {
                true => format!("{}/ (kept: not empty)", d.path),
                false => format!("{}/", d.path),
            };
            writeln!(journal, "{line}").map_err(io(&path))?;
            journal.flush().map_err(io(&path))?;
            restored.push(shown);
        }
    }
    Ok(restored)
}

/// True when `path` lies under directory `dir`.
fn within(path: &str, dir: &str) -> bool {
    path.strip_prefix(dir)
        .is_some_and(|rest| rest.starts_with('/'))
}

/// What is in directory `d` (made by a commit) that undoing the commit `group` would not take
/// away: anything but the files the group created and the directories it made.
fn strangers(
    ws: &Workspace,
    d: &CommitRecord,
    group: &[&CommitRecord],
) -> Result<Vec<String>, JournalError> {
    let root = ws.resolve(&d.path)?;
    let mut others = Vec::new();
    let mut stack = vec![(root, d.path.clone())];
    while let Some((dir, rel)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let name = format!("{rel}/{}", e.file_name().to_string_lossy());
            let ours = group.iter().any(|c| {
                c.path == name
                    && if c.dir {
                        true
                    } else {
                        c.pre.is_none() && c.post.is_some()
                    }
            });
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                if !ours {
                    others.push(format!("{name}/"));
                }
                stack.push((e.path(), name));
            } else if !ours {
                others.push(name);
            }
        }
    }
    others.sort();
    Ok(others)
}
