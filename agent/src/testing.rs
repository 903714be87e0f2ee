//! Set-up shared by the crate's unit tests.

use crate::workspace::Workspace;

/// A temporary repository holding `files` (path, text), and it as a workspace.
pub(crate) fn repo(files: &[(&str, &str)]) -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    for (p, text) in files {
        let path = dir.path().join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let ws = Workspace::new(dir.path()).unwrap();
    (dir, ws)
}

/// A command the task calls wrong (a symptom), nothing else about it known.
pub(crate) fn symptom(command: &str) -> crate::probe::Probe {
    crate::probe::Probe {
        command: command.to_owned(),
        argv: shlex::split(command).unwrap(),
        symptom: true,
        fails: false,
        quoted: Vec::new(),
        found: false,
        keep: false,
        plain: false,
        sibling: false,
    }
}
