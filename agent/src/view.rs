//! What a session reports, as one event type: the journal appends every event (except
//! streamed prose, which the raw reply already holds), and a [`View`] shows them — readable
//! text on a terminal, or one JSON object per line with `--json`.

use std::io::Write;

use crate::policy::Approval;

/// One thing that happened in a session. Serialised with `"event"` as the tag.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    Start {
        session: String,
        task: String,
        mode: String,
        model: String,
        n_ctx: u32,
    },
    /// The prompt of a turn: its size with the engine's tokenizer, and how history was
    /// compacted to fit.
    Prompt {
        turn: u32,
        prompt_tokens: usize,
        digested: usize,
        dropped: usize,
    },
    /// Streamed prose (views only; not journaled).
    Prose {
        turn: u32,
        text: String,
    },
    /// The whole reply, and what generating it cost. `cached_tokens` is the prefix the engine
    /// reused, so `prompt_tokens - cached_tokens` were evaluated.
    Reply {
        turn: u32,
        raw: String,
        prompt_tokens: u32,
        cached_tokens: u32,
        generated_tokens: u32,
    },
    /// A decoded action: its JSON form and its canonical text-protocol rendering.
    Proposal {
        turn: u32,
        action: serde_json::Value,
        text: String,
        repairs: Vec<String>,
    },
    /// A text that was not an action (decoder failure kind and the raw text).
    Malformed {
        turn: u32,
        kind: String,
        raw: String,
    },
    /// An action refused before any preview (`echo`, `policy`, `premature_done`).
    Refused {
        turn: u32,
        why: String,
    },
    Preview {
        turn: u32,
        shown: String,
    },
    Approval {
        turn: u32,
        answer: Approval,
    },
    /// A committed file change; `pre_sha256`/`post_sha256`/`pre_mode` are `null` for an
    /// absent file.
    Commit {
        turn: u32,
        id: u32,
        path: String,
        pre_sha256: Option<String>,
        post_sha256: Option<String>,
        /// The permission bits of the file before (undo restores them with its bytes).
        pre_mode: Option<u32>,
        repairs: Vec<String>,
    },
    /// A directory commit `id` creates (MKDIR, or a new file's missing parent), journaled
    /// before it is made; undo removes it again when it is empty.
    CommitDir {
        turn: u32,
        id: u32,
        path: String,
    },
    /// Commit `id` (journaled before its write) was refused at revalidation or failed;
    /// undo skips it.
    CommitFailed {
        id: u32,
        reason: String,
    },
    /// What the model is told (before truncation and redaction, which rendering applies).
    Observation {
        turn: u32,
        ok: bool,
        summary: String,
        output: String,
        hint: Option<String>,
    },
    /// `--verify` ran after DONE.
    Verify {
        turn: u32,
        ok: bool,
        summary: String,
    },
    Stop {
        reason: String,
        turns: u32,
        false_successes: u32,
        echoes: u32,
        /// DONE refused because no action had succeeded yet.
        premature_done: u32,
        tokens: u64,
    },
    /// `bellows agent --resume` continued the session after turn `after_turn`.
    Resume {
        session: String,
        after_turn: u32,
    },
    /// `bellows agent undo` restored commit `id`'s pre-image (or removed the directory it
    /// made: `path` then ends with `/`; `kept` when `--force` left it because it holds other
    /// files).
    Undo {
        id: u32,
        path: String,
        kept: bool,
    },
}

/// Shows events as they happen.
pub trait View: std::fmt::Debug {
    fn show(&mut self, event: &Event);
}

/// Shows nothing (tests).
#[derive(Debug, Default)]
pub struct Quiet;

impl View for Quiet {
    fn show(&mut self, _: &Event) {}
}

/// `--json`: one event per line on stdout.
#[derive(Debug, Default)]
pub struct JsonLines;

impl View for JsonLines {
    fn show(&mut self, event: &Event) {
        let mut out = std::io::stdout().lock();
        if let Ok(line) = serde_json::to_string(event) {
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
    }
}

/// The readable terminal view: prose as it streams, then each action and its outcome.
#[derive(Debug, Default)]
pub struct Terminal;

impl View for Terminal {
    fn show(&mut self, event: &Event) {
        let mut out = std::io::stdout().lock();
        let _ = match event {
            Event::Start {
                session,
                task,
                mode,
                model,
                n_ctx,
            } => writeln!(
                out,
                "session {session} · {model} (n_ctx {n_ctx}) · approval {mode}\ntask: {task}"
            ),
            Event::Prompt {
                turn,
                prompt_tokens,
                digested,
                dropped,
            } => {
                let compacted = if digested + dropped > 0 {
                    format!(" ({digested} turns digested, {dropped} dropped)")
                } else {
                    String::new()
                };
                writeln!(
                    out,
                    "\n── turn {turn} · prompt {prompt_tokens} tokens{compacted}"
                )
            }
            Event::Prose { text, .. } => write!(out, "{text}"),
            Event::Reply {
                prompt_tokens,
                cached_tokens,
                generated_tokens,
                ..
            } => writeln!(
                out,
                "\n   [{generated_tokens} generated, {} of {prompt_tokens} prompt tokens evaluated]",
                prompt_tokens.saturating_sub(*cached_tokens)
            ),
            Event::Proposal { text, .. } => {
                writeln!(out, "→ {}", text.lines().next().unwrap_or_default())
            }
            Event::Malformed { kind, .. } => writeln!(out, "✗ not an action ({kind})"),
            Event::Refused { why, .. } => writeln!(out, "✗ refused: {why}"),
            Event::Preview { shown, .. } => writeln!(out, "{}", shown.trim_end()),
            Event::Approval { answer, .. } => writeln!(out, "  answer: {answer:?}"),
            Event::Commit { path, .. } => writeln!(out, "  writing {path}"),
            Event::CommitDir { path, .. } => writeln!(out, "  making directory {path}/"),
            Event::CommitFailed { reason, .. } => writeln!(out, "  not written: {reason}"),
            Event::Observation { ok, summary, .. } => {
                writeln!(out, "{} {summary}", if *ok { "✓" } else { "✗" })
            }
            Event::Verify { ok, summary, .. } => {
                writeln!(
                    out,
                    "verify: {} {summary}",
                    if *ok { "passed" } else { "FAILED" }
                )
            }
            Event::Stop {
                reason,
                turns,
                false_successes,
                echoes,
                premature_done,
                tokens,
            } => writeln!(
                out,
                "\nstopped: {reason} after {turns} turns, {tokens} tokens, \
                 {false_successes} rejected DONE, {premature_done} premature DONE refused, \
                 {echoes} echoes refused"
            ),
            Event::Resume {
                session,
                after_turn,
            } => {
                writeln!(out, "resuming session {session} after turn {after_turn}")
            }
            Event::Undo { id, path, kept } => match kept {
                false => writeln!(out, "restored {path} (commit {id})"),
                true => writeln!(out, "kept {path} (commit {id}): not empty"),
            },
        };
        let _ = out.flush();
    }
}
