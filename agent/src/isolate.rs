//! `--isolate`, `bellows agent promote` and `bellows agent discard`: a session run on a copy
//! of the repository under `.bellows/isolated/ID/`, its changes applied to the real tree
//! afterwards, and the copy removed.
//!
//! In a git repository (the repository root being the work tree's top) the copy is a git
//! worktree detached at `HEAD`, with the working tree's uncommitted changes carried over
//! (`git diff HEAD --binary` applied, untracked files that are not ignored copied), so the
//! session can use git and ignored build outputs stay behind. Elsewhere it is a plain copy of
//! every file (not `.git` or `.bellows`, at any depth). Either way isolating records what every
//! path the copy starts with holds (`.bellows/isolated/ID.base.json`): a file's sha256, or
//! `link:TARGET` for a symbolic link.
//!
//! Symbolic links are copied as links, never followed. Every link in the copy must resolve
//! inside it (following the other links it meets, as the OS would); one that leaves it — an
//! absolute target, or `..` past the root — refuses isolation, naming the link. A failed
//! isolation leaves nothing behind: no worktree registered, no directory, no base record.
//!
//! Promoting compares the copy with that base: a path whose file or link differs was changed
//! or created, a base path missing from the copy was deleted. Each such path must still hold
//! its base in the real tree (or still be absent); otherwise promotion is refused before
//! anything is written, because it would overwrite a change made since. A link that would
//! leave the repository is refused the same way, `--force` or not. In a worktree copy, paths
//! git ignores there (build output a `RUN` made: `__pycache__/`, `target/`) are neither
//! promoted nor a reason to refuse; they are reported apart ([`Pending::ignored`]). A plain
//! copy of a directory that is not a git repository has no ignore rules: everything in it
//! that differs is promoted.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use crate::act::sha256;
use crate::workspace::{EntryKind, Workspace, WorkspaceError};

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
    #[error(
        "{link} is a symbolic link to {}, which leaves the repository; an isolated copy never \
         holds such a link nor promotes one",
        .target.display()
    )]
    LinkLeaves { link: String, target: PathBuf },
}

/// What promotion does to one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Writes the copy's file (bytes and mode bits), replacing whatever is there.
    Write(String),
    /// Makes `path` a symbolic link to `target`, replacing whatever is there.
    Link { path: String, target: PathBuf },
    /// Removes the file or link.
    Delete(String),
}

impl Change {
    pub fn path(&self) -> &str {
        match self {
            Change::Write(p) | Change::Delete(p) | Change::Link { path: p, .. } => p,
        }
    }
}

/// What promoting isolated copy `id` would do, and what it leaves out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pending {
    /// The changes, sorted by path.
    pub changes: Vec<Change>,
    /// Paths that differ from the base but that git ignores in the copy (build output); never
    /// promoted. Always empty for a plain copy, which has no ignore rules.
    pub ignored: Vec<String>,
}

fn isolated_dir(ws: &Workspace) -> PathBuf {
    ws.state_dir().join("isolated")
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> IsolateError + '_ {
    move |source| IsolateError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Runs `git -C dir args`, feeding it `stdin`: its stdout when it exits with a status in `ok`
/// (with that status), else its stderr as the error.
fn git_status(
    dir: &Path,
    args: &[&str],
    stdin: Option<&[u8]>,
    ok: &[i32],
) -> Result<(i32, Vec<u8>), IsolateError> {
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
    let pipe = child.stdin.take();
    // Fed from another thread: git may answer while it reads (`check-ignore --stdin`), and a
    // full stdout pipe would otherwise stall both sides.
    let out = std::thread::scope(|s| {
        if let (Some(bytes), Some(mut pipe)) = (stdin, pipe) {
            s.spawn(move || {
                // A write error shows as git's own failure (or a short answer) below.
                let _ = pipe.write_all(bytes);
            });
        }
        child.wait_with_output()
    })
    .map_err(|e| failed(e.to_string()))?;
    match out.status.code() {
        Some(code) if ok.contains(&code) => Ok((code, out.stdout)),
        _ => Err(failed(
            String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        )),
    }
}

/// [`git_status`] accepting only success.
fn git(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> Result<Vec<u8>, IsolateError> {
    git_status(dir, args, stdin, &[0]).map(|(_, out)| out)
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

/// What `path` holds in `ws`, the last component not followed, as the base records it: a
/// file's sha256, `link:TARGET` for a symbolic link, a marker no base holds for a directory;
/// `None` when nothing is there.
fn state(ws: &Workspace, path: &str) -> Result<Option<String>, IsolateError> {
    let full = ws.resolve_nofollow(path)?;
    let meta = match std::fs::symlink_metadata(&full) {
        Ok(m) => m,
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(None);
        }
        Err(e) => return Err(io(&full)(e)),
    };
    if meta.is_symlink() {
        let target = std::fs::read_link(&full).map_err(io(&full))?;
        Ok(Some(format!("link:{}", target.display())))
    } else if meta.is_dir() {
        Ok(Some("dir/".to_owned()))
    } else {
        let bytes = std::fs::read(&full).map_err(io(&full))?;
        Ok(Some(sha256(&bytes)))
    }
}

/// What a path is, to [`leaves_tree`].
enum Node {
    Link(PathBuf),
    Other,
    Missing,
}

/// Looks paths up in the tree at `root`, not following the last component. [`leaves_tree`]
/// only asks about paths whose directories it has already resolved, so nothing here follows
/// a link either.
fn tree_lookup(root: &Path) -> impl Fn(&Path) -> Node + '_ {
    move |rel| {
        let full = root.join(rel);
        match std::fs::symlink_metadata(&full) {
            Ok(m) if m.is_symlink() => std::fs::read_link(&full).map_or(Node::Missing, Node::Link),
            Ok(_) => Node::Other,
            Err(_) => Node::Missing,
        }
    }
}

/// Past this many links followed, resolution stops as the OS's would (`ELOOP`, a little
/// later than Linux's 40): a loop of links ends nowhere, so in particular not outside.
const MAX_HOPS: usize = 64;

/// True when the symbolic link at `link` (repository-relative) with `target` resolves outside
/// the repository: an absolute target, or a `..` that climbs past the root, directly or
/// through the other links `lookup` reports on the way (`top -> .` then `x -> top/../y`
/// leaves although `top/../y` reads as `y`). Past a missing component the rest is taken as
/// written (nothing there can be a link), so a dangling link is judged by its text.
fn leaves_tree(link: &str, target: &Path, lookup: &dyn Fn(&Path) -> Node) -> bool {
    enum Step {
        Root,
        Up,
        Name(OsString),
    }
    fn steps(path: &Path) -> impl DoubleEndedIterator<Item = Step> + '_ {
        path.components().filter_map(|c| match c {
            Component::RootDir | Component::Prefix(_) => Some(Step::Root),
            Component::ParentDir => Some(Step::Up),
            Component::CurDir => None,
            Component::Normal(n) => Some(Step::Name(n.to_owned())),
        })
    }
    // Where resolution stands, as resolved (link-free) components below the root.
    let mut at: Vec<OsString> = Path::new(link)
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_owned()),
            _ => None,
        })
        .collect();
    at.pop();
    let mut todo: Vec<Step> = steps(target).rev().collect();
    let (mut hops, mut exists) = (0, true);
    while let Some(step) = todo.pop() {
        match step {
            Step::Root => return true,
            Step::Up => {
                if at.pop().is_none() {
                    return true;
                }
            }
            Step::Name(name) => {
                at.push(name);
                if !exists {
                    continue;
                }
                match lookup(&at.iter().collect::<PathBuf>()) {
                    Node::Link(next) => {
                        hops += 1;
                        if hops > MAX_HOPS {
                            return false;
                        }
                        at.pop();
                        todo.extend(steps(&next).rev());
                    }
                    Node::Other => {}
                    Node::Missing => exists = false,
                }
            }
        }
    }
    false
}

/// Refuses the first link of `links` (path, target) that leaves the tree `lookup` describes.
fn check_links(
    links: &[(String, PathBuf)],
    lookup: &dyn Fn(&Path) -> Node,
) -> Result<(), IsolateError> {
    match links.iter().find(|(p, t)| leaves_tree(p, t, lookup)) {
        Some((link, target)) => Err(IsolateError::LinkLeaves {
            link: link.clone(),
            target: target.clone(),
        }),
        None => Ok(()),
    }
}

/// Copies `path` from `ws` into `copy` as it is: a file with its mode bits (an executable
/// script stays executable), a symbolic link as a link to the same target (never followed),
/// a directory with everything in it. Nothing there is a no-op.
fn copy_path(ws: &Workspace, copy: &Workspace, path: &str) -> Result<(), IsolateError> {
    let src = ws.resolve_nofollow(path)?;
    let Ok(meta) = std::fs::symlink_metadata(&src) else {
        return Ok(());
    };
    if meta.is_symlink() {
        let target = std::fs::read_link(&src).map_err(io(&src))?;
        let dst = copy.resolve_nofollow(path)?;
        if let Some(parent) = dst.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        std::os::unix::fs::symlink(&target, &dst).map_err(io(&dst))?;
    } else if meta.is_dir() {
        // An untracked nested repository, which git lists as `dir/`.
        for e in ws.entries(path)? {
            copy_path(ws, copy, &e.path)?;
        }
    } else {
        let Some(bytes) = ws.read(path)? else {
            return Ok(());
        };
        copy.write_atomic(path, &bytes)?;
        if let Some(mode) = ws.mode(path) {
            copy.set_mode(path, mode)?;
        }
    }
    Ok(())
}

/// Makes `dir` (empty) a worktree of `ws` detached at `HEAD`, then carries the working tree's
/// uncommitted changes over: the diff against `HEAD` (staged and not, binary included), and
/// the untracked files and links git does not ignore (not `.git` or `.bellows`).
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
        if path
            .split('/')
            .any(|c| crate::workspace::is_private(c.as_ref()))
        {
            continue;
        }
        copy_path(ws, &copy, path.trim_end_matches('/'))?;
    }
    Ok(())
}

/// Makes an isolated copy of the repository under `.bellows/isolated/ID/` — a git worktree
/// with the uncommitted changes in a git repository, else a copy of every file and link (not
/// `.git` or `.bellows`) — and records what each path it starts with holds. Returns the id and
/// the copy as a workspace. A link that leaves the repository refuses it
/// ([`IsolateError::LinkLeaves`]); on any failure nothing of the copy is left behind.
pub fn isolate(ws: &Workspace) -> Result<(String, Workspace), IsolateError> {
    let base = isolated_dir(ws);
    std::fs::create_dir_all(&base).map_err(io(&base))?;
    let (id, dir) = crate::journal::fresh_dir(&base)
        .map_err(|(path, source)| IsolateError::Io { path, source })?;
    let in_git = is_git_top(ws.root());
    match build(ws, &id, &dir, in_git) {
        Ok(copy) => Ok((id, copy)),
        Err(e) => {
            // Best effort: the error that stopped isolation is the one worth reporting.
            let _ = remove_copy(ws, &id, &dir, in_git);
            Err(e)
        }
    }
}

/// [`isolate`]'s steps after the directory exists; any error leaves cleanup to the caller.
fn build(ws: &Workspace, id: &str, dir: &Path, in_git: bool) -> Result<Workspace, IsolateError> {
    let mut copy = Workspace::new(dir)?;
    if in_git {
        make_worktree(ws, dir)?;
    } else {
        for e in ws.entries("")? {
            copy_path(ws, &copy, &e.path)?;
        }
    }
    let mut base = BTreeMap::new();
    let mut links = Vec::new();
    for e in copy.entries("")? {
        if e.kind == EntryKind::Link {
            let full = copy.resolve_nofollow(&e.path)?;
            links.push((
                e.path.clone(),
                std::fs::read_link(&full).map_err(io(&full))?,
            ));
        }
        if let Some(s) = state(&copy, &e.path)? {
            base.insert(e.path, s);
        }
    }
    check_links(&links, &tree_lookup(copy.root()))?;
    let manifest = isolated_dir(ws).join(format!("{id}.base.json"));
    let text = serde_json::to_string_pretty(&base).unwrap_or_default();
    crate::workspace::write_atomic(&manifest, text.as_bytes()).map_err(io(&manifest))?;
    copy.run_timeout = ws.run_timeout;
    copy.output_cap = ws.output_cap;
    Ok(copy)
}

/// Removes copy `id` at `dir`: the worktree's registration (`git worktree remove --force`,
/// then `git worktree prune` for whatever that left), the directory and the base record.
/// `in_git` prunes even when `dir` no longer reads as a worktree (a half-made one).
fn remove_copy(ws: &Workspace, id: &str, dir: &Path, in_git: bool) -> Result<(), IsolateError> {
    let worktree = is_worktree(dir);
    if worktree {
        let target = dir.to_string_lossy().into_owned();
        // --force: the session's own changes (and its journal) are what is being discarded.
        // Should git refuse (a locked worktree), the directory goes below and prune follows.
        let _ = git(ws.root(), &["worktree", "remove", "--force", &target], None);
    }
    if dir.symlink_metadata().is_ok() {
        std::fs::remove_dir_all(dir).map_err(io(dir))?;
    }
    if worktree || in_git {
        git(ws.root(), &["worktree", "prune"], None)?;
    }
    let manifest = isolated_dir(ws).join(format!("{id}.base.json"));
    match std::fs::remove_file(&manifest) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(&manifest)(e)),
        _ => Ok(()),
    }
}

/// `bellows agent discard ID`: removes isolated copy `id` (`git worktree remove` for a
/// worktree) and its base record. Returns whether it was a worktree.
pub fn discard(ws: &Workspace, id: &str) -> Result<bool, IsolateError> {
    let dir = isolated_dir(ws).join(id);
    if !crate::journal::is_session_id(id) || !dir.is_dir() {
        return Err(IsolateError::NoCopy(id.to_owned()));
    }
    let worktree = is_worktree(&dir);
    remove_copy(ws, id, &dir, false)?;
    Ok(worktree)
}

/// An isolated copy and its base.
struct Copy {
    ws: Workspace,
    base: BTreeMap<String, String>,
    worktree: bool,
}

fn open(ws: &Workspace, id: &str) -> Result<Copy, IsolateError> {
    let dir = isolated_dir(ws).join(id);
    let manifest = isolated_dir(ws).join(format!("{id}.base.json"));
    if !crate::journal::is_session_id(id) || !dir.is_dir() {
        return Err(IsolateError::NoCopy(id.to_owned()));
    }
    let text = std::fs::read_to_string(&manifest).map_err(io(&manifest))?;
    let base = serde_json::from_str(&text).map_err(|e| IsolateError::Io {
        path: manifest,
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
    })?;
    Ok(Copy {
        worktree: is_worktree(&dir),
        ws: Workspace::new(&dir)?,
        base,
    })
}

/// Of `paths` (relative to the worktree `dir`), those git ignores there. Tracked paths are
/// never ignored, whatever the patterns say.
fn git_ignored(dir: &Path, paths: &[&str]) -> Result<BTreeSet<String>, IsolateError> {
    if paths.is_empty() {
        return Ok(BTreeSet::new());
    }
    let mut input = Vec::new();
    for p in paths {
        input.extend_from_slice(p.as_bytes());
        input.push(0);
    }
    // Exit status 1 means none is ignored.
    let (_, out) = git_status(
        dir,
        &["check-ignore", "--stdin", "-z"],
        Some(&input),
        &[0, 1],
    )?;
    Ok(out
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect())
}

fn pending_in(copy: &Copy) -> Result<Pending, IsolateError> {
    let mut changes = Vec::new();
    let mut now = BTreeSet::new();
    for e in copy.ws.entries("")? {
        now.insert(e.path.clone());
        // Only a base path needs reading: anything else is new, and new build output (which
        // git may well ignore) can run to gigabytes.
        if let Some(was) = copy.base.get(&e.path)
            && state(&copy.ws, &e.path)?.as_ref() == Some(was)
        {
            continue;
        }
        changes.push(match e.kind {
            EntryKind::Link => {
                let full = copy.ws.resolve_nofollow(&e.path)?;
                let target = std::fs::read_link(&full).map_err(io(&full))?;
                Change::Link {
                    path: e.path,
                    target,
                }
            }
            EntryKind::File => Change::Write(e.path),
        });
    }
    for path in copy.base.keys() {
        if !now.contains(path) {
            changes.push(Change::Delete(path.clone()));
        }
    }
    let mut ignored = Vec::new();
    if copy.worktree {
        let written: Vec<&str> = changes
            .iter()
            .filter(|c| !matches!(c, Change::Delete(_)))
            .map(Change::path)
            .collect();
        let skip = git_ignored(copy.ws.root(), &written)?;
        changes.retain(|c| !skip.contains(c.path()));
        ignored = skip.into_iter().collect();
    }
    changes.sort_by(|a, b| a.path().cmp(b.path()));
    Ok(Pending { changes, ignored })
}

/// What promoting isolated copy `id` would do: its changes against its base, sorted by path,
/// and the git-ignored paths left out.
pub fn pending(ws: &Workspace, id: &str) -> Result<Pending, IsolateError> {
    pending_in(&open(ws, id)?)
}

/// The changes isolated copy `id` holds against its base, sorted by path (git-ignored paths
/// left out; see [`pending`]).
pub fn changes(ws: &Workspace, id: &str) -> Result<Vec<Change>, IsolateError> {
    Ok(pending(ws, id)?.changes)
}

/// `bellows agent promote ID`: applies isolated copy `id`'s changes to the real tree. Every
/// path is checked first: it must be a path the agent may write, a link must stay inside the
/// repository (as the copy resolves it, and as the real tree will once promoted), and it must
/// still hold its base (or still be absent) unless `force`. Any failed check refuses the whole
/// promotion before anything is written. Git-ignored paths of a worktree copy are left out.
/// Returns what was applied.
pub fn promote(ws: &Workspace, id: &str, force: bool) -> Result<Vec<Change>, IsolateError> {
    let copy = open(ws, id)?;
    let changes = pending_in(&copy)?.changes;
    let targets = changes
        .iter()
        .map(|c| ws.resolve_nofollow(c.path()))
        .collect::<Result<Vec<_>, _>>()?;

    let links: Vec<(String, PathBuf)> = changes
        .iter()
        .filter_map(|c| match c {
            Change::Link { path, target } => Some((path.clone(), target.clone())),
            _ => None,
        })
        .collect();
    check_links(&links, &tree_lookup(copy.ws.root()))?;
    // The real tree once promoted: the changed paths as the copy has them, the rest as is.
    let changed: BTreeSet<PathBuf> = changes.iter().map(|c| PathBuf::from(c.path())).collect();
    let (in_copy, in_real) = (tree_lookup(copy.ws.root()), tree_lookup(ws.root()));
    let after = |rel: &Path| {
        if changed.contains(rel) {
            in_copy(rel)
        } else {
            in_real(rel)
        }
    };
    check_links(&links, &after)?;

    let mut stale = Vec::new();
    for c in &changes {
        if state(ws, c.path())?.as_ref() != copy.base.get(c.path()) {
            stale.push(c.path().to_owned());
        }
    }
    if !stale.is_empty() && !force {
        return Err(IsolateError::ChangedSince(stale));
    }

    for (c, dst) in changes.iter().zip(&targets) {
        match c {
            Change::Write(path) => {
                let src = copy.ws.resolve_nofollow(path)?;
                let bytes = std::fs::read(&src).map_err(io(&src))?;
                crate::workspace::write_atomic(dst, &bytes).map_err(io(dst))?;
                let mode = std::fs::metadata(&src).map_err(io(&src))?.permissions();
                std::fs::set_permissions(dst, mode).map_err(io(dst))?;
            }
            Change::Link { target, .. } => replace_with_link(dst, target)?,
            Change::Delete(_) => match std::fs::symlink_metadata(dst) {
                Ok(m) if !m.is_dir() => std::fs::remove_file(dst).map_err(io(dst))?,
                _ => {}
            },
        }
    }
    Ok(changes)
}

/// Makes `dst` a symbolic link to `target` in one step: a link under a temporary name beside
/// it, renamed over whatever file or link is there.
fn replace_with_link(dst: &Path, target: &Path) -> Result<(), IsolateError> {
    let dir = dst.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let name = dst.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dir.join(format!(".{name}.bellows-{}.link", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(target, &tmp).map_err(io(&tmp))?;
    std::fs::rename(&tmp, dst).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io(dst)(e)
    })
}
