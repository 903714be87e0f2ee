//! The `bellows` binary's library: the OpenAI-compatible gateway, the CLI subcommands and the
//! agent loop.

pub mod eval;
