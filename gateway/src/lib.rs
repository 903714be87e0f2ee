//! The `bellows` binary's library: the OpenAI-compatible gateway, the CLI subcommands and the
//! agent loop.

pub mod agent_cmd;
pub mod eval;
pub mod measure;
pub mod tune;

pub mod api;
pub mod body;
pub mod config;
pub mod error;
pub mod handlers;
pub mod ids;
pub mod metrics;
pub mod reply;
pub mod router;
pub mod serve;
pub mod server;
pub mod sse;
pub mod state;
pub mod tools;
pub mod validate;
