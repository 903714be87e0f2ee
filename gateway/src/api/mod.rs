//! OpenAI wire types: the only place in the workspace where they exist.
//!
//! [`upstream`] holds the same wire format seen from the other side, for bellows as the client
//! of an upstream server.
//!
//! [`request`] holds what clients send, deserialized leniently (unknown fields are ignored, as
//! most OpenAI-compatible servers do, so newer clients keep working). [`response`] holds what
//! the gateway sends back. Neither leaks past the handlers: a request becomes a
//! [`crate::validate::ValidChat`] before the engine sees it, and codec and engine types are
//! converted into responses explicitly.

pub mod request;
pub mod response;
pub mod upstream;
