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
