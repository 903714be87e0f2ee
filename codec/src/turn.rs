//! (skeleton)

/// Which formats a [`TurnDecoder`] looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The text protocol and every in-band native format, in one stream.
    Auto,
    /// One format only.
    Only(crate::format::FormatId),
}

/// The incremental decoder for one model reply. (Skeleton.)
#[derive(Debug)]
pub struct TurnDecoder {}
