//! The OpenAI-compatible HTTP gateway: configuration, the server and its router, the handlers,
//! validation, tool calling through the codec, SSE framing, errors and metrics. The `bellows`
//! binary (the `cli` crate) runs it as `bellows serve`.

pub mod api;
pub mod body;
pub mod choices;
pub mod config;
pub mod defaults;
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
pub mod upstream;
pub mod validate;
