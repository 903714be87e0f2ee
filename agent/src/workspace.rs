//! The repository the agent works in: every path confined to it, atomic writes, and an argv
//! runner (no shell) with a timeout, an output cap and a scrubbed environment.

use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub(crate) use crate::durable::sync_dir;
pub use crate::durable::write_atomic;
use crate::leftovers::Reaper;
use crate::sandbox::Confinement;

/// Where the agent keeps its own files (sessions, artifacts); never offered to the model.
pub const STATE_DIR: &str = ".bellows";

/// Why a path or a command was refused, or an I/O step failed.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("path {0:?} is empty")]
    Empty(String),
    #[error("path {0:?} is absolute; paths are relative to the repository root")]
    Absolute(String),
    #[error("path {0:?} leaves the repository (`..`)")]
    ParentDir(String),
    #[error("path {0:?} is inside .git/ or .bellows/, which the agent never touches")]
    Private(String),
    #[error("path {0:?} resolves outside the repository through a symbolic link")]
    SymlinkEscape(String),
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("empty command")]
    EmptyArgv,
    /// The kernel cannot confine commands and nobody passed `--unsandboxed-run`: nothing ran.
    #[error("{}", crate::sandbox::refusal(*.0))]
    Unconfinable(crate::sandbox::Unavailable),
    /// The sandbox could not be set up, so the command was not started.
    #[error("the command was not run: {0}")]
    Sandbox(#[from] crate::sandbox::SandboxError),
}

impl WorkspaceError {
    /// True for a confinement refusal (as opposed to an I/O failure).
    pub fn is_escape(&self) -> bool {
        !matches!(
            self,
            WorkspaceError::Io { .. }
                | WorkspaceError::Unconfinable(_)
                | WorkspaceError::Sandbox(_)
        )
    }
}

fn io(path: &str) -> impl FnOnce(std::io::Error) -> WorkspaceError + '_ {
    move |source| WorkspaceError::Io {
        path: path.to_owned(),
        source,
    }
}

/// True for a `.git` or `.bellows` path component, compared case-insensitively (on a
/// case-insensitive filesystem `.GIT` is `.git`). Such a name is private at any depth: a
/// submodule's or vendored repository's `.git` runs hooks as surely as the top one.
pub(crate) fn is_private(name: &std::ffi::OsStr) -> bool {
    let name = name.as_encoded_bytes();
    name.eq_ignore_ascii_case(b".git") || name.eq_ignore_ascii_case(STATE_DIR.as_bytes())
}

/// The lexical checks of [`Workspace::resolve`]: `rel` without `.` components, or why it is
/// refused (empty, absolute, `..`, a private component).
fn lexical(rel: &str) -> Result<PathBuf, WorkspaceError> {
    if rel.is_empty() {
        return Err(WorkspaceError::Empty(rel.to_owned()));
    }
    let mut clean = PathBuf::new();
    for c in Path::new(rel).components() {
        match c {
            Component::Normal(p) if is_private(p) => {
                return Err(WorkspaceError::Private(rel.to_owned()));
            }
            Component::Normal(p) => clean.push(p),
            Component::CurDir => {}
            Component::ParentDir => return Err(WorkspaceError::ParentDir(rel.to_owned())),
            Component::RootDir | Component::Prefix(_) => {
                return Err(WorkspaceError::Absolute(rel.to_owned()));
            }
        }
    }
    Ok(clean)
}

/// One path [`Workspace::entries`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Repository-relative, with `/`.
    pub path: String,
    pub kind: EntryKind,
}

/// What a listed path is; directories are walked, not listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File,
    /// A symbolic link, never followed by the walk.
    Link,
}

/// What a command did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutput {
    /// The exit code; `None` when killed (timeout) or ended by a signal.
    pub code: Option<i32>,
    pub timed_out: bool,
    /// stdout then stderr, each cut at the output cap.
    pub output: String,
    /// True when some output was dropped at the cap.
    pub truncated: bool,
    /// Whether the command left processes running outside its process group (a daemon, a
    /// server started in the background); they were killed when it ended (see
    /// [`crate::leftovers`]).
    pub left_running: bool,
    /// Entries of `.git/` (config, hooks, info) the command changed and the workspace put
    /// back (see `crate::guard`).
    pub restored: Vec<String>,
}

/// A confined repository.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    /// How long one `run` may take before it is killed.
    pub run_timeout: Duration,
    /// Bytes kept of each of stdout and stderr.
    pub output_cap: usize,
    /// How [`Workspace::run`] confines commands: by default Landlock (network off) where the
    /// kernel has it, else refused (see [`crate::sandbox`]).
    pub confinement: Confinement,
    /// How processes a command leaves behind are ended: by default a PID namespace per
    /// command where the kernel allows one (see [`crate::leftovers`]).
    pub reaper: Reaper,
}

impl Workspace {
    /// The repository at `root` (it must exist).
    pub fn new(root: &Path) -> Result<Workspace, WorkspaceError> {
        let root = root
            .canonicalize()
            .map_err(io(&root.display().to_string()))?;
        Ok(Workspace {
            root,
            run_timeout: Duration::from_secs(60),
            output_cap: 64 * 1024,
            confinement: Confinement::default(),
            reaper: Reaper::for_machine(),
        })
    }

    /// One line saying how commands run here are confined (for the session's start).
    pub fn sandbox_report(&self) -> String {
        let confined = self.confinement.report(&self.root, crate::sandbox::probe());
        match self.confinement {
            Confinement::Refused(_) => confined,
            _ => format!("{confined}; {}", self.reaper.report()),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The agent's own state directory (`.bellows/`), created on demand.
    pub fn state_dir(&self) -> PathBuf {
        self.root.join(STATE_DIR)
    }

    /// Resolves a model-supplied relative path inside the repository. Refused: empty,
    /// absolute, any `..`, a `.git` or `.bellows` component at any depth (a submodule's or a
    /// vendored repository's `.git` included; compared case-insensitively, for
    /// case-insensitive filesystems), and a path whose existing part resolves (through
    /// symbolic links) outside the root or into a `.git` or `.bellows`.
    pub fn resolve(&self, rel: &str) -> Result<PathBuf, WorkspaceError> {
        let clean = lexical(rel)?;
        let full = self.root.join(&clean);
        // The longest existing prefix must resolve inside the root; what does not exist yet
        // cannot be a link.
        let mut existing = full.clone();
        while existing.symlink_metadata().is_err() {
            if !existing.pop() {
                break;
            }
        }
        let real = existing.canonicalize().map_err(io(rel))?;
        let Ok(inner) = real.strip_prefix(&self.root) else {
            return Err(WorkspaceError::SymlinkEscape(rel.to_owned()));
        };
        // Nothing private reached through a link either.
        if inner.components().any(|c| is_private(c.as_os_str())) {
            return Err(WorkspaceError::Private(rel.to_owned()));
        }
        Ok(full)
    }

    /// [`Workspace::resolve`] for a path whose last component is not followed: it may be a
    /// symbolic link (even a dangling one, or one pointing out of the repository), which is
    /// then the thing named, as `lstat`, `readlink` and `unlink` see it. The same paths are
    /// refused, and every directory above it must resolve inside the root.
    pub fn resolve_nofollow(&self, rel: &str) -> Result<PathBuf, WorkspaceError> {
        let clean = lexical(rel)?;
        let Some(name) = clean.file_name() else {
            return Err(WorkspaceError::Empty(rel.to_owned()));
        };
        let dir = match clean.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => {
                self.resolve(&slash(parent)).map_err(|e| match e {
                    // Name the path asked for, not its parent.
                    WorkspaceError::SymlinkEscape(_) => WorkspaceError::SymlinkEscape(rel.into()),
                    WorkspaceError::Private(_) => WorkspaceError::Private(rel.into()),
                    other => other,
                })?
            }
            _ => self.root.clone(),
        };
        Ok(dir.join(name))
    }

    /// The file's bytes, or `None` when it does not exist.
    pub fn read(&self, rel: &str) -> Result<Option<Vec<u8>>, WorkspaceError> {
        let path = self.resolve(rel)?;
        match std::fs::read(&path) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io(rel)(e)),
        }
    }

    /// Writes `bytes` atomically: a temporary file in the same directory, then a rename. An
    /// existing file's mode bits are kept; missing parent directories are created.
    pub fn write_atomic(&self, rel: &str, bytes: &[u8]) -> Result<(), WorkspaceError> {
        let path = self.resolve(rel)?;
        write_atomic(&path, bytes).map_err(io(rel))
    }

    pub fn remove(&self, rel: &str) -> Result<(), WorkspaceError> {
        let path = self.resolve(rel)?;
        std::fs::remove_file(&path).map_err(io(rel))
    }

    pub fn rename(&self, from: &str, to: &str) -> Result<(), WorkspaceError> {
        let (src, dst) = (self.resolve(from)?, self.resolve(to)?);
        if let Some(parent) = dst.parent() {
            std::fs::create_dir_all(parent).map_err(io(to))?;
        }
        std::fs::rename(&src, &dst).map_err(io(from))
    }

    /// The file's permission bits, or `None` when it does not exist.
    pub fn mode(&self, rel: &str) -> Option<u32> {
        use std::os::unix::fs::PermissionsExt;
        let path = self.resolve(rel).ok()?;
        let meta = std::fs::metadata(path).ok()?;
        Some(meta.permissions().mode() & 0o7777)
    }

    pub fn set_mode(&self, rel: &str, mode: u32) -> Result<(), WorkspaceError> {
        use std::os::unix::fs::PermissionsExt;
        let path = self.resolve(rel)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).map_err(io(rel))
    }

    /// Removes an empty directory (a non-empty one is an error).
    pub fn remove_dir(&self, rel: &str) -> Result<(), WorkspaceError> {
        let path = self.resolve(rel)?;
        std::fs::remove_dir(&path).map_err(io(rel))
    }

    pub fn mkdir(&self, rel: &str) -> Result<(), WorkspaceError> {
        let path = self.resolve(rel)?;
        std::fs::create_dir_all(&path).map_err(io(rel))
    }

    /// Every file under `rel` (recursively), as sorted repository-relative paths with `/`,
    /// skipping `.git` and `.bellows` at any depth. Symbolic links are listed (never followed,
    /// so a walk cannot leave the root); [`Workspace::entries`] tells them apart.
    pub fn files(&self, rel: &str) -> Result<Vec<String>, WorkspaceError> {
        Ok(self.entries(rel)?.into_iter().map(|e| e.path).collect())
    }

    /// [`Workspace::files`], each path with its kind: a regular file or a symbolic link (to
    /// anything: a file, a directory, nothing). A link to a directory is not walked into.
    pub fn entries(&self, rel: &str) -> Result<Vec<Entry>, WorkspaceError> {
        let start = if rel.is_empty() || rel == "." {
            self.root.clone()
        } else {
            self.resolve(rel)?
        };
        let mut out = Vec::new();
        let mut stack = vec![start];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                if let Ok(inner) = dir.strip_prefix(&self.root)
                    && dir.is_file()
                {
                    out.push(Entry {
                        path: slash(inner),
                        kind: EntryKind::File,
                    });
                }
                continue;
            };
            for e in entries.flatten() {
                let p = e.path();
                let Ok(inner) = p.strip_prefix(&self.root) else {
                    continue;
                };
                if is_private(&e.file_name()) {
                    continue;
                }
                // `DirEntry::file_type` does not follow links.
                let Ok(ft) = e.file_type() else { continue };
                let kind = if ft.is_dir() {
                    stack.push(p);
                    continue;
                } else if ft.is_symlink() {
                    EntryKind::Link
                } else {
                    EntryKind::File
                };
                out.push(Entry {
                    path: slash(inner),
                    kind,
                });
            }
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }

    /// Runs `argv` in the repository root without a shell, confined as
    /// [`Workspace::confinement`] says: the environment is cleared except `PATH` (and `HOME`
    /// pointed at the repository, `LANG=C`, `PYTHONDONTWRITEBYTECODE=1`, `TMPDIR`/`TMP`/`TEMP`
    /// at a private temp dir made for this command under the system temp dir and removed
    /// afterwards), stdin is empty, output is cut at [`Workspace::output_cap`] and the process
    /// is killed past [`Workspace::run_timeout`]. Under Landlock the command can write only
    /// beneath the repository root, its temp dir and a few devices; `.git/` and `.bellows/`
    /// are inside the root and Landlock has no deny rules, so a command can write them: what
    /// it changes in `.git/`'s config, hooks and info is put back after it
    /// ([`RunOutput::restored`]). Refused without running anything when the kernel cannot
    /// confine it and nobody opted out ([`WorkspaceError::Unconfinable`]).
    pub fn run(&self, argv: &[String]) -> Result<RunOutput, WorkspaceError> {
        self.run_until(argv, &|| false)
    }

    /// [`Workspace::run`], also ending the command (and its process group) as soon as `stop`
    /// says so (Ctrl-C); it then reads as ended by a signal.
    pub fn run_until(
        &self,
        argv: &[String],
        stop: &dyn Fn() -> bool,
    ) -> Result<RunOutput, WorkspaceError> {
        let (program, args) = argv.split_first().ok_or(WorkspaceError::EmptyArgv)?;
        if let Confinement::Refused(why) = self.confinement {
            return Err(WorkspaceError::Unconfinable(why));
        }
        // Removed (with whatever the command left there) when this returns.
        let tmp = tempfile::Builder::new()
            .prefix("bellows-run-")
            .tempdir()
            .map_err(io("private temp dir"))?;
        // A program that cannot be found is spawned as it is, so that the error is the
        // spawn's own (`unshare` would report it as a failed command instead).
        let plain = Reaper::without_namespace();
        let reaper = if crate::leftovers::runnable(program, &self.root) {
            &self.reaper
        } else {
            &plain
        };
        let mut cmd = reaper.command(program, args);
        cmd.current_dir(&self.root)
            .env_clear()
            .env("HOME", &self.root)
            .env("LANG", "C")
            // Python checks a cached module by its source's mtime (seconds) and size, so an
            // edit that keeps the size within the second a test ran would run stale code.
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("TMPDIR", tmp.path())
            .env("TMP", tmp.path())
            .env("TEMP", tmp.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(path) = std::env::var_os("PATH") {
            cmd.env("PATH", path);
        }
        // Its own process group, so that whatever it starts can be ended with it.
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        // Before the command starts: what it changes in `.git/` is put back when it ends.
        let guard = crate::guard::GitGuard::snapshot(&self.root);
        let spawned = match self.confinement {
            Confinement::Landlock { allow_net } => {
                crate::sandbox::spawn_confined(&mut cmd, allow_net, &[&self.root, tmp.path()])?
            }
            Confinement::Unconfined => cmd.spawn(),
            Confinement::Refused(why) => return Err(WorkspaceError::Unconfinable(why)),
        };
        let mut child = spawned.map_err(io(program))?;
        let _registered = Registered::new(child.id());
        let cap = self.output_cap;
        // The pipes' inodes name them in `/proc`, for finding who else holds them later.
        let pipes: Vec<u64> = [
            child.stdout.as_ref().and_then(crate::leftovers::pipe_inode),
            child.stderr.as_ref().and_then(crate::leftovers::pipe_inode),
        ]
        .into_iter()
        .flatten()
        .collect();
        let streams: Vec<Box<dyn Read + Send>> = [
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
        ]
        .into_iter()
        .flatten()
        .collect();
        let (read_tx, read_rx) = std::sync::mpsc::channel();
        for (i, stream) in streams.into_iter().enumerate() {
            let tx = read_tx.clone();
            std::thread::spawn(move || {
                let _ = tx.send((i, read_capped(stream, cap)));
            });
        }
        drop(read_tx);
        let started = Instant::now();
        let (code, timed_out) = loop {
            if let Some(status) = child.try_wait().map_err(io(program))? {
                kill_group(child.id());
                break (status.code(), false);
            }
            if stop() {
                kill_group(child.id());
                let _ = child.kill();
                let _ = child.wait();
                break (None, false);
            }
            if started.elapsed() >= self.run_timeout {
                kill_group(child.id());
                let _ = child.kill();
                let _ = child.wait();
                break (None, true);
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        // What the command left running in a session of its own ends now, before its
        // output is read to the end and `.git/` is put back (see `crate::leftovers`).
        // The first sweep reads environments only; the pipes are looked for (in every
        // process's open files, which costs more) only if a reader is still blocked.
        let mut ended = crate::leftovers::end_leftovers(tmp.path(), &[]);
        let (output, truncated) = collect_output(&read_rx, tmp.path(), &pipes, &mut ended);
        // Under a PID namespace the kernel ended them; the namespace's shell said so.
        let left_running = ended > 0 || tmp.path().join(crate::leftovers::LEFT_RUNNING).exists();
        // Paths in the output read as the model writes them: relative to the repository
        // (a traceback's `File "/tmp/bellows-probe-KnNgd5/test_stats.py"` is
        // `File "test_stats.py"`), the private temp dir as `$TMPDIR`. Both roots are
        // random per copy and per run, so the same program printed a different text in
        // each attempt and each probe, and sampled differently from the same message.
        let output = relative_paths(&output, &self.root, ".");
        let output = relative_paths(&output, tmp.path(), "$TMPDIR");
        // The group is gone and the pipes closed: nothing writes there any more.
        let _ = tmp.close();
        Ok(RunOutput {
            code,
            timed_out,
            output,
            truncated,
            left_running,
            restored: guard.restore(),
        })
    }
}

/// How long the output pipes may stay open after the command's group was killed before
/// whoever still holds them is hunted down again (see [`crate::leftovers`]); and how long
/// after that before what was read is taken as it is.
const LEFTOVER_GRACE: Duration = Duration::from_millis(200);

/// stdout then stderr as the reader threads deliver them (index 0, then 1), and whether
/// either was cut at the cap. Readers end when every writer closed its end; one still open
/// after [`LEFTOVER_GRACE`] belongs to a process the first sweep missed: those are killed
/// (counted in `ended`), and a reader still blocked after that is abandoned (its stream
/// reads as empty).
fn collect_output(
    read_rx: &std::sync::mpsc::Receiver<(usize, (Vec<u8>, bool))>,
    mark: &Path,
    pipes: &[u64],
    ended: &mut usize,
) -> (String, bool) {
    let mut streams: Vec<Option<(Vec<u8>, bool)>> = vec![None; pipes.len().max(2)];
    let mut deadline = Instant::now() + LEFTOVER_GRACE;
    let mut hunted = false;
    loop {
        match read_rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok((i, read)) => {
                if let Some(slot) = streams.get_mut(i) {
                    *slot = Some(read);
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) if !hunted => {
                *ended += crate::leftovers::end_leftovers(mark, pipes);
                hunted = true;
                deadline = Instant::now() + LEFTOVER_GRACE;
            }
            // Every reader delivered, or the hunt left one blocked.
            Err(_) => break,
        }
    }
    let mut output = String::new();
    let mut truncated = false;
    for (bytes, cut) in streams.into_iter().flatten() {
        truncated |= cut;
        output.push_str(&String::from_utf8_lossy(&bytes));
    }
    (output, truncated)
}

/// `text` with `dir` (as given, and as the kernel resolves it) written as `name`: `dir/x`
/// as `x` where `name` is `.`, else as `name/x`; `dir` alone (before a quote, a space, a
/// colon or the end) as `name`. A longer path that starts with the same characters
/// (`dir-2/x`) is left as it is.
fn relative_paths(text: &str, dir: &Path, name: &str) -> String {
    let mut forms = vec![dir.to_string_lossy().into_owned()];
    if let Ok(real) = dir.canonicalize() {
        let real = real.to_string_lossy().into_owned();
        if !forms.contains(&real) {
            forms.push(real);
        }
    }
    let mut out = text.to_owned();
    for form in forms.iter().filter(|f| f.len() > 1) {
        let mut next = String::with_capacity(out.len());
        let mut rest = out.as_str();
        while let Some(i) = rest.find(form.as_str()) {
            let after = &rest[i + form.len()..];
            next.push_str(&rest[..i]);
            if let Some(tail) = after.strip_prefix('/') {
                if name != "." {
                    next.push_str(name);
                    next.push('/');
                }
                rest = tail;
            } else if after.is_empty() || after.starts_with(['"', '\'', ' ', ':', '\n', ')', ',']) {
                next.push_str(name);
                rest = after;
            } else {
                next.push_str(form);
                rest = after;
            }
        }
        next.push_str(rest);
        out = next;
    }
    out
}

/// The process groups of the commands running now (RUN, checks, probes), so that a process
/// exiting on a signal can end them first: a command left running when the agent is killed
/// would otherwise outlive it, orphaned (a script that calls itself went on forking for
/// minutes after its bench was stopped).
static RUNNING: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

/// Removes a command's group from [`RUNNING`] once it has ended.
struct Registered(u32);

impl Registered {
    fn new(pid: u32) -> Registered {
        RUNNING.lock().unwrap_or_else(|e| e.into_inner()).push(pid);
        Registered(pid)
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        RUNNING
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|p| *p != self.0);
    }
}

/// Ends the process group of every command running now. For a process about to exit on a
/// signal; the sessions those commands belong to see them killed.
pub fn end_running_commands() {
    let running = std::mem::take(&mut *RUNNING.lock().unwrap_or_else(|e| e.into_inner()));
    for pid in running {
        kill_group(pid);
    }
}

/// Ends a command's process group (nothing it started outlives the action). Done with
/// `kill(1)` because this workspace forbids `unsafe`, which a direct `kill(2)` would need.
fn kill_group(pid: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pid}")])
        .env_clear()
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

fn read_capped(mut r: Box<dyn Read + Send>, cap: usize) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    let mut cut = false;
    loop {
        match r.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = cap.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
                cut |= n > room;
            }
        }
    }
    (kept, cut)
}

/// The highest mode a record may restore: permission bits only. Setuid, setgid and sticky
/// bits are never journaled by the loop (it records `mode & 0o777`), so a record with them
/// was written by someone else.
pub(crate) const PERMISSION_BITS: u32 = 0o777;

fn slash(p: &Path) -> String {
    p.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// `*` (within a path segment), `**` (any number of segments) and `?`.
pub fn glob_match(pattern: &str, path: &str) -> bool {
    fn seg(p: &[u8], s: &[u8]) -> bool {
        match (p.first(), s.first()) {
            (None, None) => true,
            (Some(b'*'), _) => seg(&p[1..], s) || (!s.is_empty() && seg(p, &s[1..])),
            (Some(b'?'), Some(_)) => seg(&p[1..], &s[1..]),
            (Some(a), Some(b)) if a == b => seg(&p[1..], &s[1..]),
            _ => false,
        }
    }
    fn parts(p: &[&str], s: &[&str]) -> bool {
        match (p.first(), s.first()) {
            (None, None) => true,
            (Some(&"**"), _) => parts(&p[1..], s) || (!s.is_empty() && parts(p, &s[1..])),
            (Some(a), Some(b)) => seg(a.as_bytes(), b.as_bytes()) && parts(&p[1..], &s[1..]),
            _ => false,
        }
    }
    let p: Vec<&str> = pattern.trim_start_matches("./").split('/').collect();
    let s: Vec<&str> = path.split('/').collect();
    // A pattern without a slash matches a file name at any depth, as most tools do.
    if p.len() == 1 && p[0] != "**" {
        return s
            .last()
            .is_some_and(|name| seg(p[0].as_bytes(), name.as_bytes()));
    }
    parts(&p, &s)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn paths_under_a_root_read_relative_and_lookalikes_stay() {
        let root = Path::new("/tmp/bellows-probe-Kn5");
        let text = "File \"/tmp/bellows-probe-Kn5/test_stats.py\", line 3\ncwd /tmp/bellows-probe-Kn5\nother /tmp/bellows-probe-Kn5-2/x and /tmp/bellows-probe-Kn5: done";
        assert_eq!(
            relative_paths(text, root, "."),
            "File \"test_stats.py\", line 3\ncwd .\nother /tmp/bellows-probe-Kn5-2/x and .: done"
        );
        assert_eq!(
            relative_paths("/tmp/r1/a.txt", Path::new("/tmp/r1"), "$TMPDIR"),
            "$TMPDIR/a.txt"
        );
    }

    #[test]
    fn a_commands_output_names_the_repository_and_its_temp_dir_alike_in_every_copy() {
        let run = || {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join("a.txt"), "x\n").unwrap();
            let ws = Workspace::new(dir.path()).unwrap();
            let argv: Vec<String> = ["sh", "-c", "pwd; echo \"$TMPDIR/t\"; ls \"$PWD/a.txt\""]
                .iter()
                .map(|s| (*s).to_owned())
                .collect();
            let out = ws.run(&argv);
            drop(dir);
            out
        };
        let (first, second) = match (run(), run()) {
            (Ok(a), Ok(b)) => (a, b),
            // No confinement on this kernel and no opt-out: nothing runs, nothing to compare.
            (Err(WorkspaceError::Unconfinable(_)), _) => return,
            (a, b) => panic!("{a:?} {b:?}"),
        };
        assert_eq!(first.output, ".\n$TMPDIR/t\na.txt\n");
        assert_eq!(first.output, second.output);
    }
}
