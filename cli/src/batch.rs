//! What `bellows tune` and `bellows eval --generate` share as commands over a prompt file: the
//! file read with its digest, a progress bar, and the runtime the generations run on.

use std::path::Path;

use crate::measure::{self, PromptLine};

/// Reads a prompt file: its lines (bad ones reported on stderr) and its sha256.
pub fn load_prompts(path: &Path) -> anyhow::Result<(Vec<PromptLine>, String)> {
    use sha2::Digest;
    let bytes = std::fs::read(path)
        .map_err(|e| anyhow::anyhow!("cannot read prompts {}: {e}", path.display()))?;
    let sha = format!("{:x}", sha2::Sha256::digest(&bytes));
    let (good, bad) = measure::read_prompts(&bytes[..])?;
    for b in &bad {
        eprintln!("{}:{}: skipped: {}", path.display(), b.line, b.error);
    }
    if good.is_empty() {
        anyhow::bail!("{}: no usable prompt lines", path.display());
    }
    Ok((good, sha))
}

/// A progress bar on a terminal; hidden otherwise.
pub fn progress_bar(len: Option<u64>) -> indicatif::ProgressBar {
    let bar = match len {
        Some(n) => indicatif::ProgressBar::new(n),
        None => indicatif::ProgressBar::new_spinner(),
    };
    let style = indicatif::ProgressStyle::with_template(
        "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} replies  {msg}",
    )
    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    bar.set_style(style);
    bar
}

/// The runtime the generations run on.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}
