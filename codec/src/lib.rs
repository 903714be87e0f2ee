//! `codec`: turns whatever a small model wrote into [`ActionProposal`]s.
//!
//! The crate is a leaf: it knows nothing of HTTP, llama.cpp or async runtimes, so it can be
//! fuzzed, benchmarked and snapshot-tested alone. Data flows one way:
//!
//! ```text
//! text deltas ──▶ TurnDecoder (prose scanner + one active Body) ──▶ Event*
//! ```
//!
//! Modules, from the bottom up (`tests/layers.rs` keeps it so: a module only uses lower ones):
//!
//! * [`repair`], [`format_id`], [`words`] — plain names: repair and failure kinds, format ids,
//!   the word lists that tell prose from arguments.
//! * [`chat_template`] — which tool-call format a model's chat template teaches.
//! * [`action`] — the typed action space and its JSON form.
//! * [`event`] — decoder events (re-exporting the kinds).
//! * [`registry`] — the tool table: builtin tools plus client-declared ones; generates the
//!   system prompt, the JSON schemas and the GBNF grammar, and validates arguments.
//! * [`echo`] — recognising actions that copy the protocol's help text back.
//! * [`format`](mod@format) — the contract between the prose scanner and a format's body parser.
//! * [`text`] — the text protocol (verb lines, SEARCH/REPLACE blocks).
//! * [`native`] — native tool-call formats (Hermes, Qwen3 XML, Llama-3, Mistral, pythonic,
//!   bare JSON, OpenAI stream deltas).
//! * [`render`] — canonical text-protocol rendering, the inverse of decoding.
//! * [`turn`] — [`TurnDecoder`]: one incremental decoder for a whole reply, in `auto` or one
//!   format's mode.
//! * [`score`] — conversion-rate accounting for `bellows eval`.

pub mod action;
pub mod chat_template;
pub mod echo;
pub mod event;
pub mod format;
pub mod format_id;
pub mod native;
pub mod registry;
pub mod render;
pub mod repair;
pub mod score;
mod strict_gbnf;
pub mod text;
pub mod turn;
pub mod words;

pub use action::{Action, ActionProposal, Block};
pub use chat_template::TemplateFormat;
pub use event::Event;
pub use format_id::FormatId;
pub use registry::Registry;
pub use repair::{FailureKind, RepairKind};
pub use turn::{KNOWN_REASONING_MARKERS, Mode, ReasoningMarkers, TurnDecoder};
