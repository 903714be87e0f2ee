//! What RUN may not change although its sandbox lets it write there: the parts of `.git/`
//! that make git run programs later, outside any sandbox (`config` — `core.hooksPath`,
//! `core.fsmonitor`, aliases, filter drivers —, `hooks/` and `info/`). Landlock has no deny
//! rules, so a command that may write beneath the repository may write these too; the
//! workspace snapshots them before each command and puts back whatever the command changed.
//!
//! Only a top-level `.git` directory is guarded: a worktree's `.git` file points outside the
//! repository, where the sandbox already denies writes. A process that detaches from the
//! command's process group is ended before the snapshot is compared (`crate::leftovers`), so
//! it cannot write here after the check.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The guarded paths, relative to `.git/`.
const GUARDED: [&str; 3] = ["config", "hooks", "info"];

/// One guarded entry as it was.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Saved {
    File { bytes: Vec<u8>, mode: u32 },
    Dir,
    Link(PathBuf),
}

/// The guarded part of a repository's `.git/`, as it stood before a command.
#[derive(Debug)]
pub(crate) struct GitGuard {
    git: PathBuf,
    /// Whether anything was at `.git` before: a repository that had none gets none from a
    /// command (`git init` there would leave a config that git obeys later).
    existed: bool,
    before: BTreeMap<PathBuf, Saved>,
}

impl GitGuard {
    /// Snapshots `root/.git`'s guarded entries (nothing when `.git` is not a directory).
    pub(crate) fn snapshot(root: &Path) -> GitGuard {
        let git = root.join(".git");
        let existed = std::fs::symlink_metadata(&git).is_ok();
        let before = walk(&git);
        GitGuard {
            git,
            existed,
            before,
        }
    }

    /// Puts back every guarded entry the command changed, created or removed. Returns the
    /// paths (relative to the repository, e.g. `.git/hooks/pre-commit`) it had to restore;
    /// those it could not restore are listed too, with the error.
    pub(crate) fn restore(self) -> Vec<String> {
        if !self.existed {
            let Ok(meta) = std::fs::symlink_metadata(&self.git) else {
                return Vec::new();
            };
            let removed = match meta.is_dir() {
                true => std::fs::remove_dir_all(&self.git),
                false => std::fs::remove_file(&self.git),
            };
            return vec![match removed {
                Ok(()) => ".git".to_owned(),
                Err(e) => format!(".git (could not remove: {e})"),
            }];
        }
        let after = walk(&self.git);
        if after == self.before {
            return Vec::new();
        }
        let shown = |rel: &Path| format!(".git/{}", rel.display());
        let mut changed = Vec::new();
        // What the command added: deepest first.
        for (rel, now) in after.iter().rev() {
            if self.before.contains_key(rel) {
                continue;
            }
            let path = self.git.join(rel);
            let removed = match now {
                Saved::Dir => std::fs::remove_dir_all(&path),
                _ => std::fs::remove_file(&path),
            };
            changed.push(match removed {
                Ok(()) => shown(rel),
                Err(e) => format!("{} (could not remove: {e})", shown(rel)),
            });
        }
        // What it changed or removed: parents first.
        for (rel, was) in &self.before {
            let now = after.get(rel);
            if now == Some(was) {
                continue;
            }
            let path = self.git.join(rel);
            let put_back = (|| {
                match now {
                    Some(Saved::Dir) if *was != Saved::Dir => std::fs::remove_dir_all(&path)?,
                    Some(Saved::Dir) | None => {}
                    Some(_) => std::fs::remove_file(&path)?,
                }
                match was {
                    Saved::Dir => std::fs::create_dir_all(&path),
                    Saved::Link(target) => std::os::unix::fs::symlink(target, &path),
                    Saved::File { bytes, mode } => {
                        crate::durable::write_atomic(&path, bytes)?;
                        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(*mode))
                    }
                }
            })();
            changed.push(match put_back {
                Ok(()) => shown(rel),
                Err(e) => format!("{} (could not restore: {e})", shown(rel)),
            });
        }
        changed.sort();
        changed.dedup();
        changed
    }
}

/// The guarded entries under `git`, by path relative to it. Links are recorded, never
/// followed.
fn walk(git: &Path) -> BTreeMap<PathBuf, Saved> {
    let mut out = BTreeMap::new();
    if !std::fs::symlink_metadata(git).is_ok_and(|m| m.is_dir()) {
        return out;
    }
    let mut stack: Vec<PathBuf> = GUARDED.iter().map(PathBuf::from).collect();
    while let Some(rel) = stack.pop() {
        let path = git.join(&rel);
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let kind = meta.file_type();
        let saved = if kind.is_symlink() {
            Saved::Link(std::fs::read_link(&path).unwrap_or_default())
        } else if kind.is_dir() {
            if let Ok(entries) = std::fs::read_dir(&path) {
                stack.extend(entries.flatten().map(|e| rel.join(e.file_name())));
            }
            Saved::Dir
        } else {
            Saved::File {
                bytes: std::fs::read(&path).unwrap_or_default(),
                mode: meta.permissions().mode() & 0o777,
            }
        };
        out.insert(rel, saved);
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn what_a_command_changes_in_git_config_hooks_and_info_is_put_back() {
        let dir = tempfile::tempdir().unwrap();
        let git = dir.path().join(".git");
        std::fs::create_dir_all(git.join("hooks")).unwrap();
        std::fs::create_dir_all(git.join("objects")).unwrap();
        std::fs::write(git.join("config"), "[core]\n").unwrap();
        std::fs::write(git.join("hooks/pre-commit.sample"), "#!/bin/sh\n").unwrap();
        let guard = GitGuard::snapshot(dir.path());
        // A hook added, the config changed, a sample replaced by a link, info/ made, and an
        // object written (not guarded: git never runs it).
        std::fs::write(git.join("hooks/pre-commit"), "#!/bin/sh\nevil\n").unwrap();
        std::fs::write(git.join("config"), "[core]\nhooksPath = /tmp/x\n").unwrap();
        std::fs::remove_file(git.join("hooks/pre-commit.sample")).unwrap();
        std::os::unix::fs::symlink("/tmp/x", git.join("hooks/pre-commit.sample")).unwrap();
        std::fs::create_dir_all(git.join("info")).unwrap();
        std::fs::write(git.join("info/attributes"), "* filter=x\n").unwrap();
        std::fs::write(git.join("objects/ab"), "blob").unwrap();
        let restored = guard.restore();
        assert_eq!(
            restored,
            [
                ".git/config",
                ".git/hooks/pre-commit",
                ".git/hooks/pre-commit.sample",
                ".git/info",
                ".git/info/attributes",
            ]
        );
        assert_eq!(std::fs::read(git.join("config")).unwrap(), b"[core]\n");
        assert!(!git.join("hooks/pre-commit").exists());
        assert!(!git.join("info").exists());
        let sample = git.join("hooks/pre-commit.sample");
        assert!(!sample.symlink_metadata().unwrap().is_symlink());
        assert_eq!(std::fs::read(sample).unwrap(), b"#!/bin/sh\n");
        assert!(git.join("objects/ab").exists());
        // Nothing changed: nothing to say.
        assert!(GitGuard::snapshot(dir.path()).restore().is_empty());
    }

    #[test]
    fn a_removed_hooks_directory_comes_back_and_no_git_means_no_guard() {
        let dir = tempfile::tempdir().unwrap();
        let git = dir.path().join(".git");
        std::fs::create_dir_all(git.join("hooks")).unwrap();
        std::fs::write(git.join("hooks/post-checkout"), "#!/bin/sh\n").unwrap();
        let guard = GitGuard::snapshot(dir.path());
        std::fs::remove_dir_all(git.join("hooks")).unwrap();
        std::fs::write(git.join("hooks"), "not a directory").unwrap();
        assert_eq!(guard.restore(), [".git/hooks", ".git/hooks/post-checkout"]);
        assert_eq!(
            std::fs::read(git.join("hooks/post-checkout")).unwrap(),
            b"#!/bin/sh\n"
        );
        // A worktree's `.git` file: nothing under it to guard.
        let worktree = tempfile::tempdir().unwrap();
        std::fs::write(worktree.path().join(".git"), "gitdir: elsewhere\n").unwrap();
        let guard = GitGuard::snapshot(worktree.path());
        assert!(guard.before.is_empty() && guard.restore().is_empty());
        // No repository at all: a `.git` a command made is removed again.
        let plain = tempfile::tempdir().unwrap();
        let guard = GitGuard::snapshot(plain.path());
        std::fs::create_dir_all(plain.path().join(".git/hooks")).unwrap();
        assert_eq!(guard.restore(), [".git"]);
        assert!(!plain.path().join(".git").exists());
    }
}
