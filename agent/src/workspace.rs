//! The repository the agent works in: every path confined to it, atomic writes, and an argv
//! runner (no shell) with a timeout, an output cap and a scrubbed environment.

use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
}

impl WorkspaceError {
    /// True for a confinement refusal (as opposed to an I/O failure).
    pub fn is_escape(&self) -> bool {
        !matches!(self, WorkspaceError::Io { .. })
    }
}

fn io(path: &str) -> impl FnOnce(std::io::Error) -> WorkspaceError + '_ {
    move |source| WorkspaceError::Io {
        path: path.to_owned(),
        source,
    }
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
}

/// A confined repository.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    /// How long one `run` may take before it is killed.
    pub run_timeout: Duration,
    /// Bytes kept of each of stdout and stderr.
    pub output_cap: usize,
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
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The agent's own state directory (`.bellows/`), created on demand.
    pub fn state_dir(&self) -> PathBuf {
        self.root.join(STATE_DIR)
    }

    /// Resolves a model-supplied relative path inside the repository. Refused: empty,
    /// absolute, any `..`, anything under `.git/` or `.bellows/`, and a path whose existing
    /// part resolves (through symbolic links) outside the root.
    pub fn resolve(&self, rel: &str) -> Result<PathBuf, WorkspaceError> {
        let rel_path = Path::new(rel);
        if rel.is_empty() {
            return Err(WorkspaceError::Empty(rel.to_owned()));
        }
        let mut clean = PathBuf::new();
        for c in rel_path.components() {
            match c {
                Component::Normal(p) => clean.push(p),
                Component::CurDir => {}
                Component::ParentDir => return Err(WorkspaceError::ParentDir(rel.to_owned())),
                Component::RootDir | Component::Prefix(_) => {
                    return Err(WorkspaceError::Absolute(rel.to_owned()));
                }
            }
        }
        if let Some(Component::Normal(first)) = clean.components().next()
            && (first == ".git" || first == STATE_DIR)
        {
            return Err(WorkspaceError::Private(rel.to_owned()));
        }
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
        if !real.starts_with(&self.root) {
            return Err(WorkspaceError::SymlinkEscape(rel.to_owned()));
        }
        // Nothing private reached through a link either.
        if let Ok(inner) = real.strip_prefix(&self.root)
            && let Some(Component::Normal(first)) = inner.components().next()
            && (first == ".git" || first == STATE_DIR)
        {
            return Err(WorkspaceError::Private(rel.to_owned()));
        }
        Ok(full)
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
    /// skipping `.git/` and `.bellows/`.
    pub fn files(&self, rel: &str) -> Result<Vec<String>, WorkspaceError> {
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
                    out.push(slash(inner));
                }
                continue;
            };
            for e in entries.flatten() {
                let p = e.path();
                let Ok(inner) = p.strip_prefix(&self.root) else {
                    continue;
                };
                let name = e.file_name();
                if name == ".git" || name == STATE_DIR {
                    continue;
                }
                // Links are listed but never followed, so a walk cannot leave the root.
                let Ok(ft) = e.file_type() else { continue };
                if ft.is_dir() {
                    stack.push(p);
                } else {
                    out.push(slash(inner));
                }
            }
        }
        out.sort();
        Ok(out)
    }

    /// Runs `argv` in the repository root without a shell: the environment is cleared except
    /// `PATH` (and `HOME` pointed at the repository, `LANG=C`), stdin is empty, output is cut
    /// at [`Workspace::output_cap`] and the process is killed past [`Workspace::run_timeout`].
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
        let mut cmd = Command::new(program);
        cmd.args(args)
            .current_dir(&self.root)
            .env_clear()
            .env("HOME", &self.root)
            .env("LANG", "C")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(path) = std::env::var_os("PATH") {
            cmd.env("PATH", path);
        }
        // Its own process group, so that whatever it starts can be ended with it.
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut child = cmd.spawn().map_err(io(program))?;
        let cap = self.output_cap;
        let readers: Vec<_> = [
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
        .map(|r| std::thread::spawn(move || read_capped(r, cap)))
        .collect();
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
        let mut output = String::new();
        let mut truncated = false;
        for r in readers {
            // A reader ends when the pipe closes; the group kill above ends any background
            // process that still held it.
            let (bytes, cut) = r.join().unwrap_or_default();
            truncated |= cut;
            output.push_str(&String::from_utf8_lossy(&bytes));
        }
        Ok(RunOutput {
            code,
            timed_out,
            output,
            truncated,
        })
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

fn slash(p: &Path) -> String {
    p.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// Temporary file + rename in the target's directory, keeping an existing file's mode bits.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dir.join(format!(".{name}.bellows-{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        if let Ok(meta) = std::fs::metadata(path) {
            std::fs::set_permissions(&tmp, meta.permissions())?;
        }
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
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
