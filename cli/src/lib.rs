//! The `bellows` command line's library: the subcommands' flags and what runs them. `serve`
//! is the `gateway` crate's server, `agent` the `agent` crate's loop; `eval` and `tune` live
//! here, on [`measure`], which drives the gateway's own request path.

pub mod agent_cmd;
pub mod batch;
pub mod endpoint;
pub mod eval;
pub mod measure;
pub mod model;
pub mod progress;
pub mod tune;
