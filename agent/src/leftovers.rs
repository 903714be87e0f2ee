//! Processes a command leaves behind. When a command ends, its process group is killed; a
//! process that moved into a session of its own (`setsid`, a daemon, a server started with
//! `nohup … &`) is in no group of the command's. Left alone it would hold the action open
//! through the output pipe it inherited, and go on writing after the action was judged:
//! Landlock confines it to the repository, which is exactly where the agent has just checked
//! the files (and `.git/hooks`, which the workspace puts back only once, right after the
//! command).
//!
//! So after every command, [`end_leftovers`] kills each process that carries the command's
//! mark — the private temp dir the workspace made for this one command, in its environment
//! (`TMPDIR`, `TMP`, `TEMP`), which children inherit — or holds one of its output pipes,
//! again until none is left (a process may fork while the sweep runs). A process that both
//! dropped its environment and closed its output escapes that; where the kernel can start
//! the command in a PID namespace of its own ([`Reaper`], util-linux's `unshare`), nothing
//! escapes: when the command exits, the kernel kills every process left in the namespace.
//! A shell is the namespace's first process and the command its child (a namespace's first
//! process ignores signals it has no handler for); a command a signal ended reads as exit
//! code 128 + the signal's number there. Under Landlock the namespace needs the privilege to make one without a user
//! namespace (a user namespace's id map is a write into `/proc`, which the sandbox denies), so
//! in practice it is there when the agent runs as root.

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// Whether commands start in a PID namespace of their own, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reaper {
    /// `unshare` and the options that worked when probed.
    namespace: Option<(PathBuf, &'static [&'static str])>,
}

/// `unshare`'s options that start a new PID namespace, its first process killed if `unshare`
/// itself dies (the agent's timeout and Ctrl-C kill the group `unshare` leads): first as a
/// privileged caller, then in a new user namespace mapping the caller's ids to themselves.
const UNSHARE_OPTIONS: [&[&str]; 2] = [
    &["--pid", "--fork", "--kill-child", "--"],
    &[
        "--user",
        "--map-current-user",
        "--pid",
        "--fork",
        "--kill-child",
        "--",
    ],
];

/// The namespace's first process: a shell that runs the command as its child and exits with
/// its status (128 + the signal's number when a signal ended it), so that the command itself
/// is not PID 1 and signals reach it as anywhere else. Before it exits (and the kernel ends
/// the rest of the namespace) it leaves [`LEFT_RUNNING`] in the command's temp dir if any
/// other process of the namespace is still there (`kill -0 -1` reaches every one but itself).
const SHIM: [&str; 4] = [
    "sh",
    "-c",
    "\"$@\"; s=$?; if kill -0 -1 2>/dev/null; then : > \"$TMPDIR/.bellows-left-running\"; fi; exit $s",
    "sh",
];

/// The file [`SHIM`] leaves in the command's temp dir when the command left processes behind.
pub const LEFT_RUNNING: &str = ".bellows-left-running";

impl Reaper {
    /// What this machine allows, probed once per process: `unshare` is run on `true` with
    /// each of [`UNSHARE_OPTIONS`], confined as commands are (Landlock, where the kernel has
    /// it); the first that succeeds is used.
    pub fn for_machine() -> Reaper {
        static REAPER: OnceLock<Reaper> = OnceLock::new();
        REAPER.get_or_init(probe).clone()
    }

    /// No namespace: leftovers are found by their mark and their pipes only.
    pub fn without_namespace() -> Reaper {
        Reaper { namespace: None }
    }

    /// Whether commands start in a PID namespace of their own.
    pub fn has_namespace(&self) -> bool {
        self.namespace.is_some()
    }

    /// The command that runs `program args` under this reaper.
    pub fn command(&self, program: &str, args: &[String]) -> Command {
        match &self.namespace {
            Some((unshare, options)) => {
                let mut cmd = Command::new(unshare);
                cmd.args(*options).args(SHIM).arg(program).args(args);
                cmd
            }
            None => {
                let mut cmd = Command::new(program);
                cmd.args(args);
                cmd
            }
        }
    }

    /// One clause for the sandbox report.
    pub fn report(&self) -> &'static str {
        match self.namespace {
            Some(_) => {
                "processes a command leaves behind end with it (a PID namespace per command)"
            }
            None => {
                "processes a command leaves behind end with it, found by its environment and \
                 its output pipes (no PID namespace here: one that drops both outlives it)"
            }
        }
    }
}

fn probe() -> Reaper {
    let Some(unshare) = find_program("unshare") else {
        return Reaper::without_namespace();
    };
    let Ok(tmp) = tempfile::Builder::new().prefix("bellows-reaper-").tempdir() else {
        return Reaper::without_namespace();
    };
    for options in UNSHARE_OPTIONS {
        let reaper = Reaper {
            namespace: Some((unshare.clone(), options)),
        };
        let mut cmd = reaper.command("true", &[]);
        cmd.current_dir(tmp.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let spawned = match crate::sandbox::probe() {
            crate::sandbox::Support::Landlock { .. } => {
                match crate::sandbox::spawn_confined(&mut cmd, false, &[tmp.path()]) {
                    Ok(spawned) => spawned,
                    Err(_) => continue,
                }
            }
            crate::sandbox::Support::Unavailable(_) => cmd.spawn(),
        };
        if spawned
            .and_then(|mut child| child.wait())
            .is_ok_and(|status| status.success())
        {
            return reaper;
        }
    }
    Reaper::without_namespace()
}

/// Whether `program`, run from `dir`, names an executable file: a path (with a `/`) from
/// `dir`, else a name on this process's `PATH` (commands inherit it).
pub(crate) fn runnable(program: &str, dir: &Path) -> bool {
    if program.contains('/') {
        is_executable(&dir.join(program))
    } else {
        find_program(program).is_some()
    }
}

/// `name` on this process's `PATH`, as an executable file.
fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The inode of the pipe (or any file) behind `fd`, as `/proc/PID/fd` links name it.
pub fn pipe_inode(fd: &impl AsRawFd) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(format!("/proc/self/fd/{}", fd.as_raw_fd()))
        .ok()
        .map(|m| m.ino())
}

/// Kills every process but this one whose environment carries `mark` as its temp dir
/// (`TMPDIR`, `TMP` or `TEMP`) or that holds one of the pipes `pipes` open, sweeping again
/// until a sweep finds none (at most a few rounds); returns how many it killed. Done with
/// `kill(1)`, as the workspace forbids the `unsafe` of `kill(2)`.
pub fn end_leftovers(mark: &Path, pipes: &[u64]) -> usize {
    let mark = mark.as_os_str().as_encoded_bytes();
    let marks: Vec<Vec<u8>> = ["TMPDIR=", "TMP=", "TEMP="]
        .iter()
        .map(|k| [k.as_bytes(), mark].concat())
        .collect();
    let links: Vec<String> = pipes.iter().map(|i| format!("pipe:[{i}]")).collect();
    let me = std::process::id();
    // A process killed a moment ago may still be dying (SIGKILL is delivered, not awaited):
    // each is killed and counted once.
    let mut ended = std::collections::BTreeSet::new();
    for _ in 0..8 {
        let Ok(procs) = std::fs::read_dir("/proc") else {
            break;
        };
        let found: Vec<u32> = procs
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| *pid != me && !ended.contains(pid))
            .filter(|pid| carries(*pid, &marks) || holds(*pid, &links))
            .collect();
        if found.is_empty() {
            break;
        }
        ended.extend(found.iter().copied());
        let _ = Command::new("kill")
            .arg("-KILL")
            .arg("--")
            .args(found.iter().map(u32::to_string))
            .env_clear()
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    ended.len()
}

/// Whether process `pid`'s environment holds one of `marks` (a whole `NAME=value` entry).
fn carries(pid: u32, marks: &[Vec<u8>]) -> bool {
    !marks.is_empty()
        && std::fs::read(format!("/proc/{pid}/environ"))
            .is_ok_and(|env| env.split(|b| *b == 0).any(|e| marks.iter().any(|m| e == m)))
}

/// Whether process `pid` has one of `links` (`pipe:[INODE]`) among its open files.
fn holds(pid: u32, links: &[String]) -> bool {
    !links.is_empty()
        && std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|fds| {
            fds.flatten().any(|fd| {
                std::fs::read_link(fd.path())
                    .is_ok_and(|target| links.iter().any(|l| target.as_os_str() == l.as_str()))
            })
        })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_namespace_wraps_the_command_and_keeps_its_arguments_apart() {
        let reaper = Reaper {
            namespace: Some((PathBuf::from("/usr/bin/unshare"), UNSHARE_OPTIONS[1])),
        };
        let cmd = reaper.command("--help", &["-x".to_owned(), "a b".to_owned()]);
        assert_eq!(cmd.get_program(), "/usr/bin/unshare");
        let args: Vec<_> = cmd.get_args().collect();
        let n = UNSHARE_OPTIONS[1].len();
        // `--` ends unshare's options; the shim passes its arguments on as they are ("$@"),
        // so a program named like an option is still the program.
        assert_eq!(args[n - 1], "--");
        assert_eq!(&args[n..n + 4], SHIM);
        assert_eq!(&args[n + 4..], ["--help", "-x", "a b"]);
        let plain = Reaper::without_namespace().command("python3", &["t.py".to_owned()]);
        assert_eq!(plain.get_program(), "python3");
        assert_eq!(plain.get_args().collect::<Vec<_>>(), ["t.py"]);
    }

    #[test]
    fn a_process_holding_a_pipe_is_found_and_ended() {
        let mut child = Command::new("sleep")
            .arg("30")
            .stdout(Stdio::piped())
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let ino = pipe_inode(&out).unwrap();
        let nowhere = Path::new("/nonexistent/bellows-mark");
        // This process holds the read end; only the child holds the write end.
        assert_eq!(end_leftovers(nowhere, &[ino]), 1);
        let status = child.wait().unwrap();
        assert_eq!(status.code(), None, "{status:?}");
        assert_eq!(end_leftovers(nowhere, &[ino]), 0);
    }

    #[test]
    fn a_process_carrying_the_mark_is_found_and_ended_and_no_other() {
        let mark = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        let spawn = |dir: &Path| {
            Command::new("sleep")
                .arg("30")
                .env("TMPDIR", dir)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        };
        let (mut marked, mut unmarked) = (spawn(mark.path()), spawn(other.path()));
        assert_eq!(end_leftovers(mark.path(), &[]), 1);
        assert_eq!(marked.wait().unwrap().code(), None);
        assert_eq!(
            unmarked.try_wait().unwrap(),
            None,
            "the other process was killed"
        );
        unmarked.kill().unwrap();
        unmarked.wait().unwrap();
    }
}
