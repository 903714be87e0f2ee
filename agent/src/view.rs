//! What a session reports, as one event type: the journal appends every event (except
//! streamed prose, which the raw reply already holds), and a [`View`] shows them — readable
//! text on a terminal, or one JSON object per line with `--json`.

use std::io::Write;

use crate::policy::Approval;

/// One thing that happened in a session. Serialised with `"event"` as the tag, and read
/// back as it was written ([`crate::journal::read_events`]): undo, resume and the bench
/// deserialize these, never match JSON by hand. A field added later is `#[serde(default)]`,
/// so that older journals still read.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// A session started, or was resumed (a resumed session's journal has one per run).
    Start {
        session: String,
        task: String,
        mode: String,
        model: String,
        n_ctx: u32,
        /// When, in milliseconds since the Unix epoch: undo picks the latest session by it,
        /// never by its directory's name. `0` in journals older than the field.
        #[serde(default)]
        started_unix_ms: u64,
        /// The first user message as the session showed it (the task and the repository's
        /// files at the session's start), so that a resumed session shows the same one even
        /// after its changes altered the file list. Absent in older journals.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        task_message: Option<String>,
        /// The repository's fingerprint when the session first started
        /// (`act::tree_fingerprint`; a resumed run repeats its first run's): a DONE in a mode
        /// that allows changes is refused while the tree still has it. Absent in older
        /// journals.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tree_sha256: Option<String>,
        /// The protocol the session spoke (`prompt::Protocol`): a resumed session speaks it
        /// too. Absent in older journals, which spoke the text protocol.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        protocol: Option<String>,
        /// What the task's commands printed before the session changed anything
        /// ([`crate::probe`]): a resumed session judges a DONE against the first run's.
        /// Empty when the task names none, and in older journals.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        probes: Vec<crate::probe::ProbeRun>,
        /// The files the check runs, read-only to the session ([`crate::checkfiles`]), as
        /// they were when it first started. Empty without a check, and in older journals.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        check_files: Vec<crate::checkfiles::CheckFile>,
        /// The definitions the first message left out of the files it showed in part
        /// ([`crate::whole::Partial`]), by file: a resumed session keeps them as the files
        /// have them too. Empty when it showed files whole, and in older journals.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        left_out: Vec<(String, Vec<String>)>,
    },
    /// The prompt of a turn: its size with the engine's tokenizer, and how history was
    /// compacted to fit.
    Prompt {
        turn: u32,
        prompt_tokens: usize,
        digested: usize,
        dropped: usize,
        /// The temperature and seed the turn's reply is sampled with (warmer after a turn
        /// that made no progress). Absent in older journals.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        temperature: Option<f32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seed: Option<u32>,
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
    /// An action refused before any preview (`echo`, `policy`, `premature_done`,
    /// `no_change`).
    Refused {
        turn: u32,
        why: String,
    },
    /// A refused DONE's tree judged by a [`crate::config::DoneWitness`] (the bench's hidden
    /// `verify.sh`; never shown to the model): `passes` is whether the tree the DONE was
    /// said on passes it, so a rule that refuses right answers shows in the figures. `why` is
    /// the refusal's, or `check` for a DONE the session's check rejected.
    Witnessed {
        turn: u32,
        why: String,
        passes: bool,
    },
    Preview {
        turn: u32,
        shown: String,
    },
    Approval {
        turn: u32,
        #[serde(deserialize_with = "approval")]
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
    /// Commit `id` (journaled before its write) was refused at revalidation, or one of its
    /// steps failed and the steps before it were rolled back. `touched` lists the paths it
    /// changed or tried to (a directory with a trailing `/`): undo checks each of them and
    /// restores any that is not at its pre-image. `unrestored` lists those the rollback
    /// could not bring back (`rolled_back` is true when there is none). Older journals have
    /// neither list: their failed commits wrote nothing.
    CommitFailed {
        id: u32,
        reason: String,
        #[serde(default)]
        touched: Vec<String>,
        #[serde(default)]
        unrestored: Vec<String>,
        #[serde(default = "yes")]
        rolled_back: bool,
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
        /// Run because the turn changed the repository, not for a DONE: a failure is
        /// feedback, not a rejected claim. Absent (false) in older journals.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        after_change: bool,
    },
    /// A reply asked for the check the model writes before its first change
    /// ([`crate::owncheck`]): what came of it (`kept`, or why not: `no_script`,
    /// `does_not_parse`, `passes_already`, `no_copy`), the check when kept, and what
    /// generating it cost.
    OwnCheck {
        raw: String,
        verdict: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        check: Option<crate::owncheck::OwnCheck>,
        prompt_tokens: u32,
        cached_tokens: u32,
        generated_tokens: u32,
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

impl Event {
    /// True for the records undo relies on (commits, failed commits, undo's own): the
    /// journal syncs these to disk before going on, rather than only flushing them.
    pub fn is_durable(&self) -> bool {
        matches!(
            self,
            Event::Commit { .. }
                | Event::CommitDir { .. }
                | Event::CommitFailed { .. }
                | Event::Undo { .. }
        )
    }
}

fn yes() -> bool {
    true
}

/// [`Approval`] as it is serialised (`"yes"`, `"no"`, `"quit"`).
fn approval<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Approval, D::Error> {
    let word = <String as serde::Deserialize>::deserialize(d)?;
    match word.as_str() {
        "yes" => Ok(Approval::Yes),
        "no" => Ok(Approval::No),
        "quit" => Ok(Approval::Quit),
        other => Err(serde::de::Error::unknown_variant(
            other,
            &["yes", "no", "quit"],
        )),
    }
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
                ..
            } => writeln!(
                out,
                "session {session} · {model} (n_ctx {n_ctx}) · approval {mode}\ntask: {task}"
            ),
            Event::Prompt {
                turn,
                prompt_tokens,
                digested,
                dropped,
                ..
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
            Event::Witnessed { passes, .. } => writeln!(
                out,
                "  (the refused tree {} the hidden check)",
                if *passes { "passes" } else { "fails" }
            ),
            Event::Preview { shown, .. } => writeln!(out, "{}", shown.trim_end()),
            Event::Approval { answer, .. } => writeln!(out, "  answer: {answer:?}"),
            Event::Commit { path, .. } => writeln!(out, "  writing {path}"),
            Event::CommitDir { path, .. } => writeln!(out, "  making directory {path}/"),
            Event::CommitFailed {
                reason, unrestored, ..
            } if !unrestored.is_empty() => writeln!(
                out,
                "  failed: {reason}; NOT restored: {} (bellows agent undo --force)",
                unrestored.join(", ")
            ),
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
            Event::OwnCheck { check: Some(c), .. } => writeln!(
                out,
                "own check written: `{}` fails now ({})",
                c.command(),
                c.before.status()
            ),
            Event::OwnCheck { verdict, .. } => {
                writeln!(out, "own check not kept: {verdict}")
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// One event of every kind.
    fn every_event() -> Vec<Event> {
        let s = |t: &str| t.to_owned();
        vec![
            Event::Start {
                session: s("1-2-3"),
                task: s("t"),
                mode: s("auto"),
                model: s("m"),
                n_ctx: 512,
                started_unix_ms: 1_700_000_000_000,
                task_message: Some(s("Task: t")),
                tree_sha256: Some(s("0").repeat(64)),
                protocol: Some(s("whole")),
                probes: vec![crate::probe::ProbeRun {
                    command: s("python3 a.py"),
                    code: Some(1),
                    timed_out: false,
                    output: s("Traceback"),
                }],
                check_files: vec![crate::checkfiles::CheckFile {
                    path: s("test.sh"),
                    sha256: s("0").repeat(64),
                    content: Some(s("true\n")),
                    run_by: s("sh test.sh"),
                }],
                left_out: vec![(s("retry.py"), vec![s("call_with_retry")])],
            },
            Event::Prompt {
                turn: 1,
                prompt_tokens: 10,
                digested: 2,
                dropped: 1,
                temperature: None,
                seed: None,
            },
            Event::Prose {
                turn: 1,
                text: s("hm"),
            },
            Event::Reply {
                turn: 1,
                raw: s("LIST\n"),
                prompt_tokens: 10,
                cached_tokens: 4,
                generated_tokens: 2,
            },
            Event::Proposal {
                turn: 1,
                action: serde_json::json!({"name": "list"}),
                text: s("LIST"),
                repairs: vec![s("indent")],
            },
            Event::Malformed {
                turn: 1,
                kind: s("bad_verb_line"),
                raw: s("MOVE a"),
            },
            Event::Refused {
                turn: 1,
                why: s("echo"),
            },
            Event::Preview {
                turn: 1,
                shown: s("diff"),
            },
            Event::Approval {
                turn: 1,
                answer: Approval::Yes,
            },
            Event::Approval {
                turn: 1,
                answer: Approval::No,
            },
            Event::Approval {
                turn: 1,
                answer: Approval::Quit,
            },
            Event::Commit {
                turn: 1,
                id: 1,
                path: s("a.txt"),
                pre_sha256: None,
                post_sha256: Some(s("ab")),
                pre_mode: Some(0o644),
                repairs: Vec::new(),
            },
            Event::CommitDir {
                turn: 1,
                id: 1,
                path: s("d"),
            },
            Event::CommitFailed {
                id: 1,
                reason: s("r"),
                touched: vec![s("d/"), s("a.txt")],
                unrestored: vec![s("a.txt")],
                rolled_back: false,
            },
            Event::Observation {
                turn: 1,
                ok: true,
                summary: s("s"),
                output: s("o"),
                hint: Some(s("h")),
            },
            Event::Verify {
                turn: 1,
                ok: false,
                summary: s("s"),
                after_change: true,
            },
            Event::OwnCheck {
                raw: s("```sh\nexit 1\n```"),
                verdict: s("kept"),
                check: Some(crate::owncheck::OwnCheck {
                    lang: crate::owncheck::Lang::Sh,
                    script: s("exit 1\n"),
                    before: crate::probe::ProbeRun {
                        command: s("sh .bellows-own-check.sh"),
                        code: Some(1),
                        timed_out: false,
                        output: String::new(),
                    },
                }),
                prompt_tokens: 10,
                cached_tokens: 2,
                generated_tokens: 5,
            },
            Event::Stop {
                reason: s("done"),
                turns: 1,
                false_successes: 0,
                echoes: 1,
                premature_done: 0,
                tokens: 12,
            },
            Event::Resume {
                session: s("1-2-3"),
                after_turn: 1,
            },
            Event::Undo {
                id: 1,
                path: s("a.txt"),
                kept: false,
            },
        ]
    }

    #[test]
    fn every_event_reads_back_as_it_was_written() {
        for e in every_event() {
            let line = serde_json::to_string(&e).unwrap();
            let back: Event = serde_json::from_str(&line).unwrap();
            assert_eq!(back, e, "{line}");
        }
    }

    #[test]
    fn older_journals_read_with_the_fields_they_lack_defaulted() {
        let start =
            r#"{"event":"start","session":"1-2-3","task":"t","mode":"auto","model":"m","n_ctx":1}"#;
        let Event::Start {
            started_unix_ms,
            task_message,
            ..
        } = serde_json::from_str(start).unwrap()
        else {
            panic!("a start event")
        };
        assert_eq!((started_unix_ms, task_message), (0, None));
        // A failed commit of an older journal wrote nothing.
        let failed = r#"{"event":"commit_failed","id":3,"reason":"changed"}"#;
        assert_eq!(
            serde_json::from_str::<Event>(failed).unwrap(),
            Event::CommitFailed {
                id: 3,
                reason: "changed".to_owned(),
                touched: Vec::new(),
                unrestored: Vec::new(),
                rolled_back: true,
            }
        );
        // An answer that is no answer is refused, not guessed.
        let bad = r#"{"event":"approval","turn":1,"answer":"maybe"}"#;
        assert!(serde_json::from_str::<Event>(bad).is_err());
    }
}
