//! Durable writes: a file replaced atomically, and a directory synced so that what was
//! renamed into it survives a crash. The bottom of the crate: it uses nothing of it.

use std::io::Write;
use std::path::Path;

/// Temporary file + rename in the target's directory, keeping an existing file's mode bits.
/// Durable once it returns: the file's bytes are synced before the rename, and the directory
/// after it (a rename is only on disk once its directory is).
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
    result?;
    sync_dir(dir)
}

/// Syncs a directory, so that a file created or renamed into it survives a crash. A
/// filesystem that cannot sync directories (it answers `EINVAL`) is left at that.
pub(crate) fn sync_dir(dir: &Path) -> std::io::Result<()> {
    match std::fs::File::open(dir)?.sync_all() {
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::InvalidInput | std::io::ErrorKind::Unsupported
            ) =>
        {
            Ok(())
        }
        other => other,
    }
}
