//! The session journal: `.bellows/sessions/ID/journal.jsonl`, one [`Event`] per line, written
//! before the next step (the records undo relies on synced to disk, the rest flushed);
//! pre-images of changed files in `blobs/SHA256`. [`read_events`] is the one reader: undo,
//! resume and the bench all read the typed events back through it.
//!
//! Undo trusts nothing it reads. A journal is a file in the repository, and a cloned
//! repository can ship one: every record undo acts on is checked first (session ids, blob
//! names and the bytes behind them, mode bits, paths), and a record that fails a check is a
//! [`JournalError::Tampered`] naming its line and field, before anything is written.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::act::sha256;
use crate::view::Event;
use crate::workspace::{PERMISSION_BITS, Workspace};

#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("journal {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no session journal under {0}")]
    NoSession(PathBuf),
    /// The session spoke a protocol this build does not know.
    #[error(
        "session journal {path} names the protocol {protocol:?}, which this build does not speak"
    )]
    UnknownProtocol { path: PathBuf, protocol: String },
    #[error(
        "{0:?} is not a session id (session ids look like 1700000000-4242-0: digits, in \
         three parts joined by dashes), so no session journal has that name"
    )]
    BadSessionId(String),
    /// A line that is not an event, and not the last one (a crash can tear only the last).
    #[error("journal {path} line {line} is not an event: {error}")]
    BadLine {
        path: PathBuf,
        line: usize,
        error: String,
    },
    /// A record that fails undo's checks; nothing was written.
    #[error(
        "journal {path} line {line}: {field} {why}. The record looks tampered with; \
         nothing was restored"
    )]
    Tampered {
        path: PathBuf,
        line: usize,
        field: &'static str,
        why: String,
    },
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
    #[error("pre-image {sha} (journal line {line}) is missing")]
    MissingBlob { line: usize, sha: String },
    #[error(transparent)]
    Workspace(#[from] crate::workspace::WorkspaceError),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> JournalError + '_ {
    move |source| JournalError::Io {
        path: path.to_owned(),
        source,
    }
}

/// True for an id of the shape [`fresh_dir`] makes: `{secs}-{pid}-{n}`, three runs of ASCII
/// digits joined by dashes. Such an id is one plain directory name, never a path (no `/`,
/// `..`, nor anything absolute). Session ids (`Journal::open`, undo) and isolated copies'
/// ids (`crate::isolate`) share this shape and this check.
pub(crate) fn is_session_id(id: &str) -> bool {
    let parts: Vec<&str> = id.split('-').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| (1..=20).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()))
}

/// True for a pre-image's name: exactly 64 lowercase hex digits, as [`sha256`] writes them.
fn is_sha256(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn now_unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Syncs a directory, so that a file just created or renamed into it survives a crash.
fn sync_dir(dir: &Path) -> Result<(), JournalError> {
    crate::workspace::sync_dir(dir).map_err(io(dir))
}

/// The events of the journal at `path`, each with its line number (from 1). A torn last line
/// (no newline: a crash mid-write) is skipped; any other line that is not an event is a
/// [`JournalError::BadLine`].
pub fn read_numbered(path: &Path) -> Result<Vec<(usize, Event)>, JournalError> {
    let bytes = std::fs::read(path).map_err(io(path))?;
    let lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    let last = lines.len() - 1;
    let mut events = Vec::with_capacity(last);
    for (i, line) in lines.into_iter().enumerate() {
        match serde_json::from_slice::<Event>(line) {
            Ok(event) => events.push((i + 1, event)),
            // After the last newline: empty, or torn by a crash.
            Err(_) if i == last => {}
            Err(e) => {
                return Err(JournalError::BadLine {
                    path: path.to_owned(),
                    line: i + 1,
                    error: e.to_string(),
                });
            }
        }
    }
    Ok(events)
}

/// [`read_numbered`] without the line numbers.
pub fn read_events(path: &Path) -> Result<Vec<Event>, JournalError> {
    Ok(read_numbered(path)?.into_iter().map(|(_, e)| e).collect())
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
        sync_dir(&base)?;
        let path = dir.join("journal.jsonl");
        let file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(&path)
            .map_err(io(&path))?;
        sync_dir(&dir)?;
        Ok(Journal { id, dir, file })
    }

    /// Opens session `id`'s journal for appending (`bellows agent --resume`, undo). A torn
    /// last line (a crash mid-write) is cut off first, so that what is appended starts a line
    /// of its own.
    pub fn open(ws: &Workspace, id: &str) -> Result<Journal, JournalError> {
        if !is_session_id(id) {
            return Err(JournalError::BadSessionId(id.to_owned()));
        }
        let dir = ws.state_dir().join("sessions").join(id);
        let path = dir.join("journal.jsonl");
        if !path.is_file() {
            return Err(JournalError::NoSession(dir));
        }
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(&path)
            .map_err(io(&path))?;
        let bytes = std::fs::read(&path).map_err(io(&path))?;
        if bytes.last().is_some_and(|b| *b != b'\n') {
            let keep = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
            file.set_len(keep as u64).map_err(io(&path))?;
            file.sync_data().map_err(io(&path))?;
        }
        Ok(Journal {
            id: id.to_owned(),
            dir,
            file,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The journal file.
    pub fn path(&self) -> PathBuf {
        self.dir.join("journal.jsonl")
    }

    /// Appends one event: synced to disk when undo relies on it ([`Event::is_durable`]),
    /// else flushed.
    pub fn record(&mut self, event: &Event) -> Result<(), JournalError> {
        let path = self.path();
        let mut line = serde_json::to_string(event).unwrap_or_default();
        line.push('\n');
        self.file.write_all(line.as_bytes()).map_err(io(&path))?;
        self.file.flush().map_err(io(&path))?;
        if event.is_durable() {
            self.file.sync_data().map_err(io(&path))?;
        }
        Ok(())
    }

    /// Saves a pre-image by its sha256 (once) so undo can restore it; synced to disk, as is
    /// the directory it lands in.
    pub fn save_blob(&self, bytes: &[u8]) -> Result<String, JournalError> {
        let sha = sha256(bytes);
        let blobs = self.dir.join("blobs");
        if !blobs.is_dir() {
            std::fs::create_dir_all(&blobs).map_err(io(&blobs))?;
            sync_dir(&self.dir)?;
        }
        let path = blobs.join(&sha);
        if !path.exists() {
            // `write_atomic` syncs the file and the directory it is renamed into.
            crate::workspace::write_atomic(&path, bytes).map_err(io(&path))?;
        }
        Ok(sha)
    }
}

/// The session `undo` acts on when none is named: the one started (or resumed) last, by the
/// start times its journal records. Directories whose names are not session ids, journals
/// with no start record, and start times in the future are ignored, so that a directory a
/// cloned repository ships cannot pass for the latest session by its name or its date.
fn latest_session(base: &Path) -> Result<String, JournalError> {
    let now = now_unix_ms();
    let entries = std::fs::read_dir(base).map_err(|_| JournalError::NoSession(base.to_owned()))?;
    let mut best: Option<(u64, String)> = None;
    for e in entries.flatten() {
        let Some(name) = e.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        if !is_session_id(&name) || !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let Some(started) = started(&base.join(&name).join("journal.jsonl"), now) else {
            continue;
        };
        // Equal start times (journals older than the field all read 0) fall back to the name.
        if best.as_ref().is_none_or(|b| (started, &name) > (b.0, &b.1)) {
            best = Some((started, name));
        }
    }
    best.map(|(_, name)| name)
        .ok_or_else(|| JournalError::NoSession(base.to_owned()))
}

/// The latest start time not after `now` that a journal records, read leniently (the chosen
/// journal is read strictly afterwards).
fn started(journal: &Path, now: u64) -> Option<u64> {
    let bytes = std::fs::read(journal).ok()?;
    bytes
        .split(|b| *b == b'\n')
        .filter_map(|line| match serde_json::from_slice(line) {
            Ok(Event::Start {
                started_unix_ms, ..
            }) => Some(started_unix_ms),
            _ => None,
        })
        .filter(|t| *t <= now)
        .max()
}

/// One file a commit changed, as undo reads it back (checked).
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileRecord {
    line: usize,
    path: String,
    pre: Option<String>,
    post: Option<String>,
    /// The file's permission bits before the commit.
    mode: Option<u32>,
}

/// One directory a commit made.
#[derive(Debug, Clone, PartialEq, Eq)]
struct DirRecord {
    path: String,
}

/// Everything the journal says about one commit id.
#[derive(Debug, Default)]
struct CommitGroup {
    files: Vec<FileRecord>,
    dirs: Vec<DirRecord>,
    /// For a failed commit: the paths it changed or tried to (directories with a `/`).
    failed: Option<Vec<String>>,
}

impl CommitGroup {
    /// The files undo checks: all of a commit's, or those a failed one touched.
    fn files(&self) -> Vec<&FileRecord> {
        self.files
            .iter()
            .filter(|f| self.failed.as_ref().is_none_or(|t| t.contains(&f.path)))
            .collect()
    }

    /// The directories undo removes: all a commit made, or those a failed one made.
    fn dirs(&self) -> Vec<&DirRecord> {
        self.dirs
            .iter()
            .filter(|d| {
                self.failed
                    .as_ref()
                    .is_none_or(|t| t.iter().any(|p| p.strip_suffix('/') == Some(&d.path)))
            })
            .collect()
    }
}

/// The journal's commits, every record checked, and the ids already undone.
#[derive(Debug, Default)]
struct Commits {
    groups: std::collections::BTreeMap<u32, CommitGroup>,
    undone: std::collections::HashSet<u32>,
}

impl Commits {
    /// Reads the commit records of `events`, refusing the first that fails a check.
    fn check(
        ws: &Workspace,
        path: &Path,
        events: &[(usize, Event)],
    ) -> Result<Commits, JournalError> {
        let tampered = |line: usize, field: &'static str, why: String| JournalError::Tampered {
            path: path.to_owned(),
            line,
            field,
            why,
        };
        let confined = |line: usize, field: &'static str, p: &str| {
            ws.resolve(p)
                .map(|_| ())
                .map_err(|e| tampered(line, field, format!("{p:?} is refused: {e}")))
        };
        let sha = |line: usize, field: &'static str, s: &Option<String>| match s {
            Some(s) if !is_sha256(s) => Err(tampered(
                line,
                field,
                format!("{s:?} is not a sha256 (64 lowercase hex digits)"),
            )),
            _ => Ok(()),
        };
        let mut c = Commits::default();
        for (line, event) in events {
            let line = *line;
            match event {
                Event::Commit {
                    id,
                    path: p,
                    pre_sha256,
                    post_sha256,
                    pre_mode,
                    ..
                } => {
                    confined(line, "path", p)?;
                    sha(line, "pre_sha256", pre_sha256)?;
                    sha(line, "post_sha256", post_sha256)?;
                    if let Some(m) = pre_mode
                        && *m > PERMISSION_BITS
                    {
                        return Err(tampered(
                            line,
                            "pre_mode",
                            format!(
                                "{m:#o} has bits beyond the permission bits (setuid, setgid, \
                                 sticky or higher)"
                            ),
                        ));
                    }
                    c.groups.entry(*id).or_default().files.push(FileRecord {
                        line,
                        path: p.clone(),
                        pre: pre_sha256.clone(),
                        post: post_sha256.clone(),
                        mode: *pre_mode,
                    });
                }
                Event::CommitDir { id, path: p, .. } => {
                    confined(line, "path", p)?;
                    c.groups
                        .entry(*id)
                        .or_default()
                        .dirs
                        .push(DirRecord { path: p.clone() });
                }
                Event::CommitFailed { id, touched, .. } => {
                    for t in touched {
                        confined(line, "touched", t.strip_suffix('/').unwrap_or(t))?;
                    }
                    let failed = &mut c.groups.entry(*id).or_default().failed;
                    failed
                        .get_or_insert_with(Vec::new)
                        .extend(touched.iter().cloned());
                }
                Event::Undo { id, .. } => {
                    c.undone.insert(*id);
                }
                _ => {}
            }
        }
        Ok(c)
    }

    /// Commit ids not undone yet, newest first.
    fn pending(&self) -> Vec<u32> {
        self.groups
            .keys()
            .rev()
            .copied()
            .filter(|id| !self.undone.contains(id))
            .collect()
    }
}

/// Reads and checks the pre-image `sha` (named by journal line `line`): its name was checked
/// to be a sha256; it must be a regular file in the session's `blobs/` whose bytes hash to it.
fn load_blob(
    session: &Path,
    journal: &Path,
    line: usize,
    sha: &str,
) -> Result<Vec<u8>, JournalError> {
    let tampered = |why: String| JournalError::Tampered {
        path: journal.to_owned(),
        line,
        field: "pre_sha256",
        why,
    };
    let path = session.join("blobs").join(sha);
    match std::fs::symlink_metadata(&path) {
        Err(_) => {
            return Err(JournalError::MissingBlob {
                line,
                sha: sha.to_owned(),
            });
        }
        Ok(m) if !m.is_file() => {
            return Err(tampered(format!(
                "names {}, which is not a regular file",
                path.display()
            )));
        }
        Ok(_) => {}
    }
    let bytes = std::fs::read(&path).map_err(io(&path))?;
    let actual = sha256(&bytes);
    if actual != sha {
        return Err(tampered(format!(
            "names a pre-image whose bytes hash to {actual}"
        )));
    }
    Ok(bytes)
}

/// What undoing one commit does to one of its files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FileStep {
    /// Already at its pre-image: left alone.
    Leave,
    Restore,
}

/// `bellows agent undo [ID] [--steps N] [--force]`: restores the pre-images of the last
/// `steps` commits not yet undone in session `id` (the latest session when `None`, by its
/// recorded start time), newest first.
///
/// Each file of a commit is checked against the disk: one at its pre-image is left alone,
/// one at what the commit wrote is restored, and one at neither is refused unless `force`. A
/// failed commit is checked the same way for the paths it touched before it failed (its
/// rollback may not have finished); one that left nothing to restore is no step, and is
/// marked handled. A directory a commit made is removed once its files are restored, if
/// nothing else is in it; holding other files it refuses the undo, or with `force` stays.
///
/// Every record is checked before anything is written (session id, paths, sha256 names,
/// mode bits, and the pre-images' bytes); one that fails is a [`JournalError::Tampered`].
/// Returns the restored paths (a removed directory with a trailing `/`); each is journaled.
pub fn undo(
    ws: &Workspace,
    id: Option<&str>,
    steps: usize,
    force: bool,
) -> Result<Vec<String>, JournalError> {
    let base = ws.state_dir().join("sessions");
    let session = match id {
        Some(id) if !is_session_id(id) => return Err(JournalError::BadSessionId(id.to_owned())),
        Some(id) => id.to_owned(),
        None => latest_session(&base)?,
    };
    let dir = base.join(&session);
    let path = dir.join("journal.jsonl");
    if !path.is_file() {
        return Err(JournalError::NoSession(dir));
    }
    let events = read_numbered(&path)?;
    let commits = Commits::check(ws, &path, &events)?;
    // The commits this undo may reach: up to `steps` that are not failed ones, and the failed
    // ones among them (which may turn out to be no step). Their pre-images are read and
    // checked now, before anything is written.
    let mut reach = Vec::new();
    let mut counted = 0;
    for id in commits.pending() {
        if counted >= steps {
            break;
        }
        reach.push(id);
        if commits.groups[&id].failed.is_none() {
            counted += 1;
        }
    }
    let mut blobs = std::collections::HashMap::new();
    for id in &reach {
        for f in commits.groups[id].files() {
            if let Some(sha) = &f.pre
                && !blobs.contains_key(sha)
            {
                blobs.insert(sha.clone(), load_blob(&dir, &path, f.line, sha)?);
            }
        }
    }
    let mut journal: Option<Journal> = None;
    let mut restored = Vec::new();
    let mut done = 0;
    for id in reach {
        if done >= steps {
            break;
        }
        let group = &commits.groups[&id];
        let files = group.files();
        let dirs = group.dirs();
        // Check every file and directory of the commit before touching any.
        let mut plan = Vec::new();
        for c in &files {
            let now = ws.read(&c.path)?.map(|b| sha256(&b));
            let step = if now == c.pre {
                FileStep::Leave
            } else if now == c.post || force {
                FileStep::Restore
            } else {
                return Err(JournalError::ChangedSince {
                    id,
                    path: c.path.clone(),
                    now: now.unwrap_or_else(|| "absent".to_owned()),
                });
            };
            plan.push((*c, step));
        }
        let present: Vec<&DirRecord> = dirs
            .iter()
            .copied()
            .filter(|d| ws.resolve(&d.path).is_ok_and(|p| p.is_dir()))
            .collect();
        let mut kept_dirs = Vec::new();
        for d in &present {
            let others = strangers(ws, d, group)?;
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
        let journal = match &mut journal {
            Some(j) => j,
            None => journal.insert(Journal::open(ws, &session)?),
        };
        let noop = plan.iter().all(|(_, s)| *s == FileStep::Leave) && present.is_empty();
        if group.failed.is_some() && noop {
            // A failed commit whose rollback left everything as it was: no step. Marked
            // handled, so that a later change to one of its paths is never taken for it.
            for (c, _) in &plan {
                journal.record(&Event::Undo {
                    id,
                    path: c.path.clone(),
                    kept: false,
                })?;
            }
            continue;
        }
        done += 1;
        for (c, step) in plan.iter().rev() {
            if *step == FileStep::Restore {
                match &c.pre {
                    Some(sha) => {
                        let bytes = blobs.get(sha).ok_or_else(|| JournalError::MissingBlob {
                            line: c.line,
                            sha: sha.clone(),
                        })?;
                        ws.write_atomic(&c.path, bytes)?;
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
            }
            journal.record(&Event::Undo {
                id,
                path: c.path.clone(),
                kept: false,
            })?;
            restored.push(c.path.clone());
        }
        // Deepest first; a kept directory keeps its parents too. A kept one is journaled as
        // handled, so that the next undo moves on to the commit before.
        for d in dirs.iter().rev() {
            let full = ws.resolve(&d.path)?;
            let kept = kept_dirs.iter().any(|k| k == &d.path || within(k, &d.path));
            let gone = !kept && !full.is_dir();
            if !kept && !gone {
                ws.remove_dir(&d.path)?;
            }
            // One already gone is journaled too, so that a commit whose directories were all
            // removed by hand still counts as undone.
            journal.record(&Event::Undo {
                id,
                path: format!("{}/", d.path),
                kept,
            })?;
            match (kept, gone) {
                (true, _) => restored.push(format!("{}/ (kept: not empty)", d.path)),
                (false, false) => restored.push(format!("{}/", d.path)),
                (false, true) => {}
            }
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
    d: &DirRecord,
    group: &CommitGroup,
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
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            let ours = match is_dir {
                true => group.dirs.iter().any(|o| o.path == name),
                false => group
                    .files
                    .iter()
                    .any(|f| f.path == name && f.pre.is_none() && f.post.is_some()),
            };
            if is_dir {
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
