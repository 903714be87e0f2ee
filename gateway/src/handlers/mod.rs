//! Endpoint handlers: each turns a read body into a response or an [`crate::error::ApiError`].

pub mod chat;
pub mod completions;
pub mod info;
mod stream;
