//! [`TuneError`], and the I/O failures it carries with the file they were on.

use std::path::{Path, PathBuf};

use crate::measure;

/// Why a sweep could not run.
#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{dir} holds a sweep of other prompts or settings ({what}); pass --fresh to start over, \
         or --out another directory"
    )]
    Mismatch { dir: PathBuf, what: String },
    #[error("no prompts to measure")]
    NoPrompts,
    #[error(transparent)]
    Prompt(#[from] measure::PromptError),
}

pub(super) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> TuneError + '_ {
    move |source| TuneError::Io {
        path: path.to_owned(),
        source,
    }
}
