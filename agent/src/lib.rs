//! `agent`: the coding-agent loop of `bellows agent`.
//!
//! One turn: render the prompt ([`history`]) → generate on any [`models::Engine`] → decode the
//! reply with [`codec::TurnDecoder`] → act on each proposal ([`act`], under a [`policy`], inside a
//! [`workspace`]) → observe ([`observe`]). Every step is journaled ([`journal`]), which is also
//! what `bellows agent undo` reads. The loop itself is [`run::run`], one screen long.
//!
//! The crate knows neither HTTP nor llama.cpp: it sees only the `Engine` trait, so every test
//! runs on [`models::ScriptedEngine`].

pub mod act;
pub mod answers;
pub mod asks;
pub mod attempts;
pub mod bench;
pub mod calls;
pub mod checkfiles;
pub mod config;
pub mod context;
pub mod diff;
mod durable;
pub mod examples;
pub mod expect;
pub mod explain;
pub mod found;
pub mod given;
mod guard;
pub mod history;
pub mod imports;
pub mod inputs;
pub mod interrupt;
pub mod isolate;
pub mod journal;
pub mod leftovers;
pub mod lint;
pub mod localise;
pub mod named;
pub mod observe;
pub mod onimport;
pub mod options;
pub mod order;
pub mod origin;
pub mod owncheck;
pub mod policy;
pub mod probe;
pub mod prompt;
mod record;
pub mod renames;
pub mod resume;
pub mod run;
pub mod sandbox;
pub mod shellopt;
pub mod shtrace;
pub mod splice;
pub mod targets;
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod testing;
pub mod trace;
pub mod undefined;
pub mod usage;
pub mod view;
pub mod whole;
pub mod wordsplit;
pub mod workspace;

pub use act::Observation;
pub use config::Config;
pub use interrupt::Interrupt;
pub use journal::{Journal, undo};
pub use policy::{Approval, ApprovalMode, Approver, Policy, ScriptedApprover};
pub use prompt::{GrammarChoice, Protocol};
pub use run::{AgentError, Outcome, StopReason, resume, run};
pub use view::{Event, View};
pub use workspace::Workspace;
