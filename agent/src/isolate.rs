//! `--isolate`, `bellows agent promote` and `bellows agent discard`: a session run on a copy
//! of the repository under `.bellows/isolated/ID/`, its changes applied to the real tree
//! afterwards, and the copy removed.
//!
//! In a git repository (the repository root being the work tree's top) the copy is a git
//! worktree detached at `HEAD`, with the working tree's uncommitted changes carried over
//! (`git diff HEAD --binary` applied, untracked files that are not ignored copied), so the
//! session can use git and ignored build outputs stay behind. Elsewhere it is a plain copy of
//! every file. Either way isolating records the sha256 of every file the copy starts with
//! (`.bellows/isolated/ID.base.json`).
//! Promoting compares the copy with that base: a file whose bytes differ was changed or
//! created, a base file missing from the copy was deleted. Each such path must still hold its
//! base bytes in the real tree (or still be absent); otherwise promotion is refused before
//! anything is written, because it would overwrite a change made since.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
    #[error("git {args}: {stderr}")]
    Git { args: String, stderr: String },
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

/// Runs `git -C dir args`, feeding it `stdin`; its stdout, or its stderr as the error.
fn git(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> Result<Vec<u8>, IsolateError> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let failed = |stderr: String| IsolateError::Git {
        args: args.join(" "),
        stderr,
    };
    let mut child = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| failed(e.to_string()))?;
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(bytes).map_err(|e| failed(e.to_string()))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| failed(e.to_string()))?;
    if !out.status.success() {
        return Err(failed(
            String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        ));
    }
    Ok(out.stdout)
}

/// True when `root` is the top of a git work tree with a commit at `HEAD`.
fn is_git_top(root: &Path) -> bool {
    let top = git(root, &["rev-parse", "--show-toplevel"], None)
        .ok()
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o).trim()));
    let same = top
        .and_then(|t| t.canonicalize().ok())
        .is_some_and(|t| t == root);
    same && git(root, &["rev-parse", "--verify", "-q", "HEAD"], None).is_ok()
}

/// True when isolated copy `dir` is a git worktree (its `.git` is a file naming the repo's).
fn is_worktree(dir: &Path) -> bool {
    dir.join(".git").is_file()
}

/// Makes `dir` (empty) a worktree of `ws` detached at `HEAD`, then carries the working tree's
/// uncommitted changes over: the diff against `HEAD` (staged and not, binary included), and
/// the untracked files git does not ignore (not `.bellows/`).
fn make_worktree(ws: &Workspace, dir: &Path) -> Result<(), IsolateError> {
    let root = ws.root();
    let target = dir.to_string_lossy().into_owned();
    git(
        root,
        &["worktree", "add", "--detach", "-q", &target, "HEAD"],
        None,
    )?;
    let diff = git(root, &["diff", "HEAD", "--binary"], None)?;
    if !diff.is_empty() {
        git(
            dir,
            &["apply", "--binary", "--whitespace=nowarn", "-"],
            Some(&diff),
        )?;
    }
    let untracked = git(
        root,
        &["ls-files", "--others", "--exclude-standard", "-z"],
        None,
    )?;
    let copy = Workspace::new(dir)?;
    for path in untracked.split(|b| *b == 0).filter(|p| !p.is_empty()) {
        let path = String::from_utf8_lossy(path).into_owned();
        if path.starts_with(".bellows/") {
            continue;
        }
        copy_file(ws, &copy, &path)?;
    }
    Ok(())
}

/// Copies one file with its mode bits (an executable script stays executable).
fn copy_file(ws: &Workspace, copy: &Workspace, path: &str) -> Result<(), IsolateError> {
    let Some(bytes) = ws.read(path)? else {
        return Ok(());
    };
    copy.write_atomic(path, &bytes)?;
    if let Some(mode) = ws.mode(path) {
        copy.set_mode(path, mode)?;
    }
    Ok(())
}

/// Makes an isolated copy of the repository under `.bellows/isolated/ID/` — a git worktree
/// with the uncommitted changes in a git repository, else a copy of every file (not `.git/`
/// or `.bellows/`) — and records the sha256 of the files it starts with. Returns the id and
/// the copy as a workspace.
pub fn isolate(ws: &Workspace) -> Result<(String, Workspace), IsolateError> {
    let base = isolated_dir(ws);
    std::fs::create_dir_all(&base).map_err(|source| IsolateError::Io {
        path: base.clone(),
        source,
    })?;
    let (id, dir) = crate::journal::fresh_dir(&base)
        .map_err(|(path, source)| IsolateError::Io { path, source })?;
    let copy = Workspace::new(&dir)?;
    if is_git_top(ws.root()) {
        if let Err(e) = make_worktree(ws, &dir) {
            let _ = discard(ws, &id);
            return Err(e);
        }
    } else {
        for path in ws.files("")? {
            copy_file(ws, &copy, &path)?;
        }
    }
    let mut shas = BTreeMap::new();
    for path in copy.files("")? {
        if let Some(bytes) = copy.read(&path)? {
            shas.insert(path, sha256(&bytes));
        }
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

/// `bellows agent discard ID`: removes isolated copy `id` (`git worktree remove` for a
/// worktree) and its base record. Returns whether it was a worktree.
pub fn discard(ws: &Workspace, id: &str) -> Result<bool, IsolateError> {
    let plain = !id.is_empty() && !id.contains(['/', '\\']) && id != "." && id != "..";
    let dir = isolated_dir(ws).join(id);
    if !plain || !dir.is_dir() {
        return Err(IsolateError::NoCopy(id.to_owned()));
    }
    let worktree = is_worktree(&dir);
    if worktree {
        let target = dir.to_string_lossy().into_owned();
        // --force: the session's own changes (and its journal) are what is being discarded.
        if git(ws.root(), &["worktree", "remove", "--force", &target], None).is_err() {
            std::fs::remove_dir_all(&dir).map_err(|source| IsolateError::Io {
                path: dir.clone(),
                source,
            })?;
            git(ws.root(), &["worktree", "prune"], None)?;
        }
    } else {
        std::fs::remove_dir_all(&dir).map_err(|source| IsolateError::Io {
            path: dir.clone(),
            source,
        })?;
    }
    let _ = std::fs::remove_file(isolated_dir(ws).join(format!("{id}.base.json")));
    Ok(worktree)
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
