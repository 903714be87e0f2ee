//! Acting on one proposal, each side effect a value first: [`plan`] turns an action into a
//! [`Plan`] (a read's result, or a preview — diff or argv — carrying the sha256 of every file
//! it read), and [`commit`] re-checks those hashes (and each SEARCH) before writing atomically.

use codec::{Action, Block};
use sha2::{Digest, Sha256};

use crate::workspace::{Workspace, WorkspaceError};

/// What the model is told about one action.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Observation {
    pub ok: bool,
    pub summary: String,
    pub output: String,
    pub hint: Option<String>,
}

impl Observation {
    pub fn ok(summary: impl Into<String>, output: impl Into<String>) -> Observation {
        Observation {
            ok: true,
            summary: summary.into(),
            output: output.into(),
            hint: None,
        }
    }

    pub fn error(summary: impl Into<String>, hint: Option<&str>) -> Observation {
        Observation {
            ok: false,
            summary: summary.into(),
            output: String::new(),
            hint: hint.map(str::to_owned),
        }
    }
}

impl From<WorkspaceError> for Observation {
    fn from(e: WorkspaceError) -> Observation {
        let hint = e
            .is_escape()
            .then_some("use a path relative to the repository root, inside it");
        Observation::error(e.to_string(), hint)
    }
}

/// A file's permission bits (`None` when it does not exist). Setuid, setgid and sticky bits
/// are not kept: a file the agent writes, moves or restores never gains them, and undo
/// refuses a journal record that has them.
fn permissions(ws: &Workspace, path: &str) -> Option<u32> {
    ws.mode(path).map(|m| m & crate::journal::PERMISSION_BITS)
}

/// One file before and after a change. `None` means absent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    pub path: String,
    pub pre: Option<Vec<u8>>,
    pub post: Option<Vec<u8>>,
    /// The mode bits of the file as it was (journaled, so undo restores them).
    pub pre_mode: Option<u32>,
    /// The mode bits to give a new file (a MOVE's target takes its source's); an existing
    /// file keeps its own.
    pub post_mode: Option<u32>,
}

impl FileChange {
    pub fn pre_sha(&self) -> Option<String> {
        self.pre.as_deref().map(sha256)
    }
    pub fn post_sha(&self) -> Option<String> {
        self.post.as_deref().map(sha256)
    }
}

/// What acting on an action will do, before anything is done.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// A read-only action, already answered.
    Observed(Observation),
    /// File changes (edit, create, delete, move, mkdir) and their unified diff.
    Change {
        diff: String,
        changes: Vec<FileChange>,
        dirs: Vec<String>,
        /// Repairs made to match SEARCH text (named, counted), e.g. `search_whitespace`.
        repairs: Vec<&'static str>,
    },
    /// A command to run.
    Run { argv: Vec<String> },
    /// The model says it is finished.
    Done { summary: String },
}

pub fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Plans `action`: reads happen now (they change nothing); changes are previewed.
pub fn plan(ws: &Workspace, action: &Action) -> Result<Plan, Observation> {
    let text = |rel: &str| -> Result<Option<String>, Observation> {
        match ws.read(rel)? {
            None => Ok(None),
            Some(b) => String::from_utf8(b)
                .map(Some)
                .map_err(|_| Observation::error(format!("{rel} is not UTF-8 text"), None)),
        }
    };
    let change = |changes: Vec<FileChange>, dirs: Vec<String>, repairs: Vec<&'static str>| {
        let diff = changes
            .iter()
            .map(|c| {
                let pre = c.pre.as_deref().map(String::from_utf8_lossy);
                let post = c.post.as_deref().map(String::from_utf8_lossy);
                crate::diff::unified(&c.path, pre.as_deref(), post.as_deref())
            })
            .collect::<String>();
        Plan::Change {
            diff,
            changes,
            dirs,
            repairs,
        }
    };
    match action {
        Action::Read { path, start, end } => {
            let content = text(path)?.ok_or_else(|| missing(path))?;
            let total = content.lines().count();
            let (a, b) = (start.unwrap_or(1).max(1) as usize, end.map(|e| e as usize));
            let out: String = content
                .split_inclusive('\n')
                .skip(a - 1)
                .take(b.map_or(usize::MAX, |b| (b + 1).saturating_sub(a)))
                .collect();
            let range = match (start, end) {
                (None, None) => String::new(),
                _ => format!(" lines {a}-{}", b.unwrap_or(total).min(total)),
            };
            Ok(Plan::Observed(Observation::ok(
                format!("{path}{range} ({total} lines)"),
                out,
            )))
        }
        Action::List { path } => {
            let dir = if path.is_empty() || path == "." {
                ws.root().to_path_buf()
            } else {
                ws.resolve(path)?
            };
            let entries = std::fs::read_dir(&dir)
                .map_err(|e| Observation::error(format!("{path}: {e}"), None))?;
            let mut names: Vec<String> = entries
                .flatten()
                .filter(|e| !crate::workspace::is_private(&e.file_name()))
                .map(|e| {
                    let n = e.file_name().to_string_lossy().into_owned();
                    if e.file_type().is_ok_and(|t| t.is_dir()) {
                        n + "/"
                    } else {
                        n
                    }
                })
                .collect();
            names.sort();
            let shown = if path.is_empty() { "." } else { path };
            Ok(Plan::Observed(Observation::ok(
                format!("{shown}: {} entries", names.len()),
                names.join("\n"),
            )))
        }
        Action::Glob { pattern } => {
            let files: Vec<String> = ws
                .files("")?
                .into_iter()
                .filter(|f| crate::workspace::glob_match(pattern, f))
                .collect();
            Ok(Plan::Observed(Observation::ok(
                format!("{} files match {pattern}", files.len()),
                files.join("\n"),
            )))
        }
        Action::Grep { pattern, path } => {
            let mut hits = Vec::new();
            for f in ws.files(path.as_deref().unwrap_or(""))? {
                let Ok(Some(t)) = text(&f) else { continue };
                for (i, line) in t.lines().enumerate() {
                    if line.contains(pattern.as_str()) {
                        hits.push(format!("{f}:{}: {line}", i + 1));
                    }
                }
            }
            Ok(Plan::Observed(Observation::ok(
                format!("{} matching lines for {pattern:?}", hits.len()),
                hits.join("\n"),
            )))
        }
        Action::Run { argv } => Ok(Plan::Run { argv: argv.clone() }),
        Action::Done { summary } => Ok(Plan::Done {
            summary: summary.clone(),
        }),
        Action::Mkdir { path } => {
            ws.resolve(path)?;
            Ok(change(Vec::new(), vec![path.clone()], Vec::new()))
        }
        Action::Delete { path } => {
            let pre = ws.read(path)?.ok_or_else(|| missing(path))?;
            let changes = vec![FileChange {
                path: path.clone(),
                pre: Some(pre),
                post: None,
                pre_mode: permissions(ws, path),
                post_mode: None,
            }];
            Ok(change(changes, Vec::new(), Vec::new()))
        }
        Action::Move { from, to } => {
            let pre = ws.read(from)?.ok_or_else(|| missing(from))?;
            if ws.read(to)?.is_some() {
                return Err(Observation::error(
                    format!("{to} already exists"),
                    Some("DELETE it first, or move to a new path"),
                ));
            }
            // The moved file keeps its permission bits (an executable script stays
            // executable). The target is written first and the source removed after, so that
            // a failure between the two never leaves the file in neither place.
            let mode = permissions(ws, from);
            let changes = vec![
                FileChange {
                    path: to.clone(),
                    pre: None,
                    post: Some(pre.clone()),
                    pre_mode: None,
                    post_mode: mode,
                },
                FileChange {
                    path: from.clone(),
                    pre: Some(pre),
                    post: None,
                    pre_mode: mode,
                    post_mode: None,
                },
            ];
            Ok(change(changes, Vec::new(), Vec::new()))
        }
        Action::Create { path, content } => {
            if ws.read(path)?.is_some() {
                return Err(Observation::error(
                    format!("{path} already exists"),
                    Some("use EDIT with SEARCH/REPLACE blocks to change it"),
                ));
            }
            let changes = vec![FileChange {
                path: path.clone(),
                pre: None,
                post: Some(content.clone().into_bytes()),
                pre_mode: None,
                post_mode: None,
            }];
            Ok(change(changes, Vec::new(), Vec::new()))
        }
        Action::Edit { path, blocks } => {
            let pre = text(path)?;
            let (post, repairs) = apply_blocks(path, pre.as_deref(), blocks)?;
            let changes = vec![FileChange {
                path: path.clone(),
                pre: pre.map(String::into_bytes),
                post: Some(post.into_bytes()),
                pre_mode: permissions(ws, path),
                post_mode: None,
            }];
            Ok(change(changes, Vec::new(), repairs))
        }
        Action::Client { name, .. } => Err(Observation::error(
            format!("unknown tool {name:?}"),
            Some("use the commands listed in the instructions"),
        )),
    }
}

fn missing(path: &str) -> Observation {
    Observation::error(
        format!("{path} does not exist"),
        Some("LIST or GLOB to find the right path"),
    )
}

/// Applies SEARCH/REPLACE blocks in order. An empty SEARCH appends (or creates a missing
/// file). A SEARCH must match exactly once at line starts; if it matches nowhere but exactly
/// one run of lines equals it up to whitespace, that run is replaced and a
/// `search_whitespace` repair is recorded. Nothing is guessed beyond that.
pub fn apply_blocks(
    path: &str,
    pre: Option<&str>,
    blocks: &[Block],
) -> Result<(String, Vec<&'static str>), Observation> {
    let mut content = pre.unwrap_or("").to_owned();
    let mut repairs = Vec::new();
    for (n, b) in blocks.iter().enumerate() {
        if b.search.is_empty() {
            if !content.is_empty() && !content.ends_with('\n') {
                content.push('\n');
            }
            content.push_str(&b.replace);
            continue;
        }
        if pre.is_none() {
            return Err(missing(path));
        }
        let exact: Vec<usize> = content
            .match_indices(b.search.as_str())
            .map(|(i, _)| i)
            .filter(|&i| i == 0 || content.as_bytes()[i - 1] == b'\n')
            .collect();
        let (at, len) = match exact.as_slice() {
            [i] => (*i, b.search.len()),
            [] => match whitespace_match(&content, &b.search) {
                Ok(span) => {
                    repairs.push("search_whitespace");
                    span
                }
                Err(0) => {
                    return Err(Observation::error(
                        format!("block {}: SEARCH text not found in {path}", n + 1),
                        Some("READ the file and copy the lines to change exactly"),
                    ));
                }
                Err(k) => return Err(ambiguous(path, n, k)),
            },
            many => return Err(ambiguous(path, n, many.len())),
        };
        content.replace_range(at..at + len, &b.replace);
    }
    Ok((content, repairs))
}

fn ambiguous(path: &str, n: usize, k: usize) -> Observation {
    Observation::error(
        format!("block {}: SEARCH text matches {k} places in {path}", n + 1),
        Some("include more surrounding lines so the SEARCH text is unique"),
    )
}

/// The byte span of the one run of whole lines equal to `search` up to whitespace, or the
/// number of such runs (0 or more than 1).
fn whitespace_match(content: &str, search: &str) -> Result<(usize, usize), usize> {
    let norm = |l: &str| l.split_whitespace().collect::<Vec<_>>().join(" ");
    let want: Vec<String> = search.lines().map(norm).collect();
    let lines: Vec<&str> = content.split_inclusive('\n').collect();
    let mut offsets = Vec::with_capacity(lines.len() + 1);
    let mut o = 0;
    for l in &lines {
        offsets.push(o);
        o += l.len();
    }
    offsets.push(o);
    let found: Vec<usize> = (0..=lines.len().saturating_sub(want.len()))
        .filter(|&s| {
            s + want.len() <= lines.len()
                && want
                    .iter()
                    .enumerate()
                    .all(|(k, w)| norm(lines[s + k]) == *w)
        })
        .collect();
    match found.as_slice() {
        [s] => Ok((offsets[*s], offsets[s + want.len()] - offsets[*s])),
        other => Err(other.len()),
    }
}

/// Why a commit did not happen as planned, and what it left on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitFailure {
    /// What the model is told: what failed, and what the rollback did.
    pub observation: Observation,
    /// The paths the commit changed or tried to before it failed, in order (a directory
    /// with a trailing `/`); empty when it was refused before any step.
    pub touched: Vec<String>,
    /// Those the rollback could not bring back to what they were before the commit.
    pub unrestored: Vec<String>,
}

/// One step [`commit`] took, as its rollback undoes it.
enum Done<'c> {
    Dir(String),
    File(&'c FileChange),
}

/// Re-checks every file against the hash its preview read, then makes the missing
/// directories and writes (temporary file + rename) or removes each file, in order. Nothing is
/// written unless every file still matches. All or nothing: when a step fails, the steps
/// before it are rolled back (pre-images restored with their mode bits, files it created
/// removed, directories it made removed), and the failure says what is on disk.
pub fn commit(
    ws: &Workspace,
    changes: &[FileChange],
    dirs: &[String],
) -> Result<(), Box<CommitFailure>> {
    let refused = |observation: Observation| {
        Box::new(CommitFailure {
            observation,
            touched: Vec::new(),
            unrestored: Vec::new(),
        })
    };
    for c in changes {
        let now = ws.read(&c.path).map_err(|e| refused(e.into()))?;
        if now.as_deref().map(sha256) != c.pre_sha() {
            return Err(refused(Observation::error(
                format!("{} changed since the preview; nothing was written", c.path),
                Some("READ the file again and redo the change against its current text"),
            )));
        }
    }
    let mut done: Vec<Done<'_>> = Vec::new();
    let mut failed = None;
    for d in new_dirs(ws, changes, dirs) {
        let made = ws.resolve(&d).and_then(|p| match std::fs::create_dir(&p) {
            // Made by someone else since the preview: not ours to remove again.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && p.is_dir() => Ok(false),
            Err(source) => Err(WorkspaceError::Io {
                path: d.clone(),
                source,
            }),
            Ok(()) => Ok(true),
        });
        match made {
            Ok(true) => done.push(Done::Dir(d)),
            Ok(false) => {}
            Err(e) => {
                done.push(Done::Dir(d));
                failed = Some(e);
                break;
            }
        }
    }
    if failed.is_none() {
        for c in changes {
            // Counted as touched before it is tried: a failed step may have half happened
            // (written, but its mode not set).
            done.push(Done::File(c));
            let step = match &c.post {
                Some(bytes) => ws
                    .write_atomic(&c.path, bytes)
                    .and_then(|()| match c.post_mode {
                        Some(mode) => ws.set_mode(&c.path, mode),
                        None => Ok(()),
                    }),
                None => ws.remove(&c.path),
            };
            if let Err(e) = step {
                failed = Some(e);
                break;
            }
        }
    }
    let Some(error) = failed else {
        return Ok(());
    };
    let touched: Vec<String> = done
        .iter()
        .map(|d| match d {
            Done::Dir(d) => format!("{d}/"),
            Done::File(c) => c.path.clone(),
        })
        .collect();
    let unrestored = roll_back(ws, &done);
    let summary = match unrestored.is_empty() {
        true => format!("{error}; nothing was changed (the commit was rolled back)"),
        false => format!(
            "{error}; rolling back failed too, so these are not as they were: {}",
            unrestored.join(", ")
        ),
    };
    let hint = match unrestored.is_empty() {
        true => "try another path, or another way",
        false => "the user can restore them with `bellows agent undo --force`",
    };
    Err(Box::new(CommitFailure {
        observation: Observation::error(summary, Some(hint)),
        touched,
        unrestored,
    }))
}

/// Undoes `done` (the steps a failed commit took, the failed one last), newest first: each
/// file back to its pre-image and mode, or removed when it did not exist; each directory
/// made removed. Returns the paths it could not restore.
fn roll_back(ws: &Workspace, done: &[Done<'_>]) -> Vec<String> {
    let mut unrestored = Vec::new();
    for step in done.iter().rev() {
        match step {
            Done::File(c) => {
                if restore(ws, c).is_err() {
                    unrestored.push(c.path.clone());
                }
            }
            Done::Dir(d) => {
                let gone = ws
                    .resolve(d)
                    .is_ok_and(|p| !p.exists() || std::fs::remove_dir(&p).is_ok());
                if !gone {
                    unrestored.push(format!("{d}/"));
                }
            }
        }
    }
    unrestored
}

/// Puts one file back as it was before `c`: its pre-image with its mode bits, or absent.
fn restore(ws: &Workspace, c: &FileChange) -> Result<(), WorkspaceError> {
    let now = ws.read(&c.path)?;
    match &c.pre {
        Some(pre) => {
            if now.as_ref() != Some(pre) {
                ws.write_atomic(&c.path, pre)?;
            }
            match c.pre_mode {
                Some(mode) if ws.mode(&c.path) != Some(mode) => ws.set_mode(&c.path, mode),
                _ => Ok(()),
            }
        }
        None if now.is_some() => ws.remove(&c.path),
        None => Ok(()),
    }
}

/// The directories that do not exist yet and that committing `changes` and `dirs` creates,
/// each parent before its children.
pub(crate) fn new_dirs(ws: &Workspace, changes: &[FileChange], dirs: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let wanted = dirs.iter().map(String::as_str).chain(
        changes
            .iter()
            .filter(|c| c.post.is_some())
            .filter_map(|c| c.path.rsplit_once('/').map(|(parent, _)| parent)),
    );
    for dir in wanted {
        let mut prefix = String::new();
        for part in dir.split('/').filter(|p| !p.is_empty() && *p != ".") {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
            let exists = ws.resolve(&prefix).is_ok_and(|p| p.exists());
            if !exists && !out.contains(&prefix) {
                out.push(prefix.clone());
            }
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn block(s: &str, r: &str) -> Block {
        Block {
            search: s.to_owned(),
            replace: r.to_owned(),
        }
    }

    #[test]
    fn search_must_match_once_and_whitespace_is_repaired_by_name() {
        let pre = "fn a() {\n    1\n}\nfn b() {\n    1\n}\n";
        let twice = apply_blocks("x", Some(pre), &[block("    1\n", "    2\n")]);
        assert!(twice.unwrap_err().summary.contains("matches 2 places"));
        let (post, repairs) = apply_blocks(
            "x",
            Some(pre),
            &[block("fn  b() {\n  1\n", "fn b() {\n    3\n")],
        )
        .unwrap();
        assert_eq!(post, "fn a() {\n    1\n}\nfn b() {\n    3\n}\n");
        assert_eq!(repairs, vec!["search_whitespace"]);
        let none = apply_blocks("x", Some(pre), &[block("fn c()\n", "")]);
        assert!(none.unwrap_err().summary.contains("not found"));
    }

    #[test]
    fn a_rollback_that_cannot_restore_says_what_it_left() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("plain"), "p\n").unwrap();
        std::fs::create_dir(dir.path().join("full")).unwrap();
        std::fs::write(dir.path().join("full/other"), "o\n").unwrap();
        std::fs::write(dir.path().join("new.txt"), "n\n").unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        // A pre-image under a regular file cannot be written back (ENOTDIR, for root too);
        // a directory that is not empty cannot be removed; a created file can be.
        let under_file = FileChange {
            path: "plain/x.txt".to_owned(),
            pre: Some(b"x\n".to_vec()),
            post: None,
            pre_mode: Some(0o644),
            post_mode: None,
        };
        let created = FileChange {
            path: "new.txt".to_owned(),
            pre: None,
            post: Some(b"n\n".to_vec()),
            pre_mode: None,
            post_mode: None,
        };
        let done = [
            Done::Dir("full".to_owned()),
            Done::File(&under_file),
            Done::File(&created),
        ];
        assert_eq!(roll_back(&ws, &done), ["plain/x.txt", "full/"]);
        assert!(!dir.path().join("new.txt").exists());
        assert!(dir.path().join("full/other").exists());
    }

    #[test]
    fn empty_search_appends_or_creates() {
        let (post, _) = apply_blocks("x", Some("a"), &[block("", "b\n")]).unwrap();
        assert_eq!(post, "a\nb\n");
        let (post, _) = apply_blocks("x", None, &[block("", "new\n")]).unwrap();
        assert_eq!(post, "new\n");
    }
}
