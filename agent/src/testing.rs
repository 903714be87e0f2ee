//! Set-up shared by the crate's unit tests.

use crate::workspace::Workspace;

/// The skip policy for a missing prerequisite (`python3`, `bash`, Landlock), shared with the
/// integration tests: a failure under `BELLOWS_NO_SKIP=1`, else a counted skip.
#[path = "../tests/common/prereq.rs"]
pub(crate) mod prereq;

/// The kernel confines commands (Landlock), through the skip policy.
#[track_caller]
pub(crate) fn landlock() -> bool {
    prereq::landlock(!matches!(
        crate::sandbox::Confinement::default(),
        crate::sandbox::Confinement::Refused(_)
    ))
}

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
