//! `--isolate` and `bellows agent promote`: a session run on a copy of the repository under
//! `.bellows/isolated/ID/`, and its changes applied to the real tree afterwards.
//!
//! Isolating records the sha256 of every file copied (`.bellows/isolated/ID.base.json`).
//! Promoting compares the copy with that base: a file whose bytes differ was changed or
//! created, a base file missing from the copy was deleted. Each such path must still hold its
//! base bytes in the real tree (or still be absent); otherwise promotion is refused before
//! anything is written, because it would overwrite a change made since.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::act::sha256;
use crate::workspace::{Workspace, WorkspaceError};

#[derive(Debug, thiserror::Error)]
pub enum IsolateError {
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no isolated copy {0}")]
    NoCopy(String),
    #[error(
        "changed in the repository since the copy was made (promoting would lose that): {}",
        .0.join(", ")
    )]
    ChangedSince(Vec<String>),
}

/// What promotion does to one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Write(String),
    Delete(String),
}

fn isolated_dir(ws: &Workspace) -> PathBuf {
    ws.state_dir().join("isolated")
}

/// Copies the repository's files (not `.git/` or `.bellows/`) to `.bellows/isolated/ID/`
/// and records their sha256. Returns the id and the copy as a workspace.
pub fn isolate(ws: &Workspace) -> Result<(String, Workspace), IsolateError> {
    let base = isolated_dir(ws);
    std::fs::create_dir_all(&base).map_err(|source| IsolateError::Io {
        path: base.clone(),
        source,
    })?;
    let (id, dir) = crate::journal::fresh_dir(&base)
        .map_err(|(path, source)| IsolateError::Io { path, source })?;
    let copy = Workspace::new(&dir)?;
    let mut shas = BTreeMap::new();
    for path in ws.files("")? {
        let Some(bytes) = ws.read(&path)? else {
            continue;
        };
        copy.write_atomic(&path, &bytes)?;
        // Mode bits (an executable script stays executable).
        if let (Ok(meta), Ok(dst)) = (std::fs::metadata(ws.resolve(&path)?), copy.resolve(&path)) {
            let _ = std::fs::set_permissions(dst, meta.permissions());
        }
        shas.insert(path, sha256(&bytes));
    }
    let manifest = base.join(format!("{id}.base.json"));
    let text = serde_json::to_string_pretty(&shas).unwrap_or_default();
    crate::workspace::write_atomic(&manifest, text.as_bytes()).map_err(|source| {
        IsolateError::Io {
            path: manifest.clone(),
            source,
        }
    })?;
    let mut copy = copy;
    copy.run_timeout = ws.run_timeout;
    copy.output_cap = ws.output_cap;
    Ok((id, copy))
}

/// The changes isolated copy `id` holds against its base, sorted by path.
pub fn changes(ws: &Workspace, id: &str) -> Result<Vec<Change>, IsolateError> {
    let (copy, base) = open(ws, id)?;
    let mut out = Vec::new();
    let files = copy.files("")?;
    for path in &files {
        let now = copy.read(path)?.map(|b| sha256(&b));
        if now.as_ref() != base.get(path) {
            out.push(Change::Write(path.clone()));
        }
    }
    for path in base.keys() {
        if !files.contains(path) {
            out.push(Change::Delete(path.clone()));
        }
    }
    out.sort_by(|a, b| change_path(a).cmp(change_path(b)));
    Ok(out)
}

fn change_path(c: &Change) -> &str {
    match c {
        Change::Write(p) | Change::Delete(p) => p,
    }
}

fn open(ws: &Workspace, id: &str) -> Result<(Workspace, BTreeMap<String, String>), IsolateError> {
    let plain = !id.is_empty() && !id.contains(['/', '\\']) && id != "." && id != "..";
    let dir = isolated_dir(ws).join(id);
    let manifest = isolated_dir(ws).join(format!("{id}.base.json"));
    if !plain || !dir.is_dir() {
        return Err(IsolateError::NoCopy(id.to_owned()));
    }
    let text = std::fs::read_to_string(&manifest).map_err(|source| IsolateError::Io {
        path: manifest.clone(),
        source,
    })?;
    let base = serde_json::from_str(&text).map_err(|e| IsolateError::Io {
        path: manifest,
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
    })?;
    Ok((Workspace::new(&dir)?, base))
}

/// `bellows agent promote ID`: applies isolated copy `id`'s changes to the real tree. Every
/// path is checked first (it must still hold its base bytes, or still be absent); any that
/// changed since refuses the whole promotion unless `force`. Returns what was applied.
pub fn promote(ws: &Workspace, id: &str, force: bool) -> Result<Vec<Change>, IsolateError> {
    let (copy, base) = open(ws, id)?;
    let changes = changes(ws, id)?;
    let mut stale = Vec::new();
    for c in &changes {
        let path = change_path(c);
        let now = ws.read(path)?.map(|b| sha256(&b));
        if now.as_ref() != base.get(path) {
            stale.push(path.to_owned());
        }
    }
    if !stale.is_empty() && !force {
        return Err(IsolateError::ChangedSince(stale));
    }
    for c in &changes {
        match c {
            Change::Write(path) => {
                let bytes = copy.read(path)?.unwrap_or_default();
                ws.write_atomic(path, &bytes)?;
            }
            Change::Delete(path) => {
                if ws.read(path)?.is_some() {
                    ws.remove(path)?;
                }
            }
        }
    }
    Ok(changes)
}
