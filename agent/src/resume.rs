//! `bellows agent --resume ID`: a session's history and counters rebuilt from its journal,
//! turn by turn, through the same [`crate::record::turn_record`] the live loop uses. The rebuilt
//! history renders the prompt the uninterrupted session would have sent next: the task
//! message is the one the session started with (journaled in its `start` event), every
//! observation the model was shown is journaled (echo refusals included), and the history's
//! compaction state is the one the last `prompt` event records.

use crate::act::Observation;
use crate::config::Config;
use crate::history::History;
use crate::journal::{Journal, JournalError};
use crate::prompt::Protocol;
use crate::record::{Tally, loop_key, turn_record};
use crate::view::Event;
use crate::workspace::Workspace;

/// What a journal says about a session so far.
#[derive(Debug, Clone)]
pub struct Replay {
    pub task: String,
    pub history: History,
    /// The last turn that produced a reply (0 when none).
    pub last_turn: u32,
    /// The loop's counters as they stood after the last turn: tokens, false successes, the
    /// highest commit id of any kind (file, directory, failed, undone: so that new commits,
    /// and undo, never reuse one), echoes, premature DONEs, whether an action succeeded yet,
    /// and the stall and loop counts.
    pub tally: Tally,
    /// The repository's fingerprint when the session first started (its first `start`
    /// event's); `None` in journals older than the field.
    pub start_tree: Option<String>,
    /// The protocol the session spoke.
    pub protocol: Protocol,
    /// What the task's commands printed when the session first started.
    pub probes: Vec<crate::probe::ProbeRun>,
    /// The files the check runs, as they were when the session first started.
    pub check_files: Vec<crate::checkfiles::CheckFile>,
    /// The definitions the first message left out ([`crate::whole::Partial`]).
    pub left_out: Vec<(String, Vec<String>)>,
    /// The check the model wrote first ([`crate::owncheck`]), if it kept one.
    pub own_check: Option<crate::owncheck::OwnCheck>,
}

/// One turn while it is read back.
#[derive(Debug, Default)]
struct Pending {
    turn: u32,
    /// The reply; a turn whose prompt was journaled but whose reply was not (the engine
    /// failed) was never part of the history.
    reply: Option<String>,
    /// The canonical text of the last proposal not yet paired with an observation.
    action: Option<String>,
    /// That proposal was a valid action (not refused as an echo or a premature DONE).
    valid: bool,
    /// A `verify` event came last: its observation is not an action's.
    verifying: bool,
    /// That `verify` event rejected a DONE: its observation counts towards the loop stop.
    rejected_done: bool,
    observations: Vec<(String, Observation)>,
    malformed: Vec<String>,
}

/// Rebuilds session `journal`'s history: the task (and first message) from its `start`
/// event, each turn from its `reply`, `proposal`, `malformed` and `observation` events, and
/// how far the history is compacted from its last `prompt` event.
pub fn replay(ws: &Workspace, journal: &Journal, cfg: &Config) -> Result<Replay, JournalError> {
    let events = crate::journal::read_events(&journal.path())?;
    let (task, task_message, start_tree, protocol, probes, check_files, left_out) = events
        .iter()
        .find_map(|e| match e {
            Event::Start {
                task,
                task_message,
                tree_sha256,
                protocol,
                probes,
                check_files,
                left_out,
                ..
            } => Some((
                task.clone(),
                task_message.clone(),
                tree_sha256.clone(),
                protocol.clone(),
                probes.clone(),
                check_files.clone(),
                left_out.clone(),
            )),
            _ => None,
        })
        .ok_or_else(|| JournalError::NoSession(journal.dir().to_owned()))?;
    // A journal names its protocol; one older than the field spoke the text protocol.
    let protocol = match protocol {
        Some(p) => Protocol::parse(&p).ok_or_else(|| JournalError::UnknownProtocol {
            path: journal.path(),
            protocol: p.clone(),
        })?,
        None => Protocol::Text,
    };
    // Turns are rebuilt in the session's protocol, whatever this run was asked for.
    let cfg = &Config {
        protocol,
        ..cfg.clone()
    };
    // Journals older than the `task_message` field: the best that can be done is today's.
    let task_message = task_message.unwrap_or_else(|| {
        protocol.task_message(
            ws,
            &task,
            cfg.context_budget
                .unwrap_or(protocol.default_context_budget()),
            cfg.layout(),
        )
    });
    let mut history = protocol.history(
        cfg.policy.mode,
        protocol.system_prompt(cfg.policy.mode, cfg.prompt_style),
        task_message,
    );
    let mut last_turn = 0;
    let mut t = Tally::default();
    let mut pending: Option<Pending> = None;
    let finish = |p: Pending, history: &mut History, t: &mut Tally| {
        if let Some(reply) = p.reply {
            history.turns.push(turn_record(
                ws,
                cfg,
                (&journal.id, p.turn),
                reply,
                &p.observations,
                &p.malformed,
                t.commits > 0,
            ));
            t.end_turn();
        }
    };
    for e in &events {
        if let Some(turn) = turn_of(e)
            && pending.as_ref().is_none_or(|p| p.turn != turn)
        {
            if let Some(p) = pending.take() {
                finish(p, &mut history, &mut t);
            }
            pending = Some(Pending {
                turn,
                ..Pending::default()
            });
        }
        let p = pending.as_mut();
        match e {
            // How the live loop left the history after rendering this prompt: `digested`
            // counts the digests shown, the turns dropped come before them.
            Event::Prompt {
                digested, dropped, ..
            } => {
                history.digested = digested + dropped;
                history.dropped = *dropped;
            }
            Event::Reply {
                turn,
                raw,
                prompt_tokens,
                generated_tokens,
                ..
            } => {
                last_turn = *turn;
                t.tokens += u64::from(*prompt_tokens) + u64::from(*generated_tokens);
                if let Some(p) = p {
                    p.reply = Some(raw.clone());
                }
            }
            // The check asked for before the first turn: its tokens are the session's.
            Event::OwnCheck {
                prompt_tokens,
                generated_tokens,
                ..
            } => t.tokens += u64::from(*prompt_tokens) + u64::from(*generated_tokens),
            Event::Proposal { text, .. } => {
                if let Some(p) = p {
                    p.action = Some(text.clone());
                    p.valid = true;
                    t.valid_this_turn += 1;
                }
            }
            // As the loop counts them: an echo, a premature DONE or a DONE with nothing
            // changed is not a valid action.
            Event::Refused { why, .. }
                if matches!(
                    why.as_str(),
                    "echo"
                        | "premature_done"
                        | "no_change"
                        | "lint"
                        | "unchanged_output"
                        | "still_failing"
                        | "test_broken"
                        | "copy_left"
                        | "check_changed"
                        | "file_left"
                        | "file_missing"
                        | "rename_incomplete"
                        | "content_missing"
                        | "name_missing"
                        | "definition_left"
                ) =>
            {
                match why.as_str() {
                    "echo" => t.echoes += 1,
                    "premature_done" => t.premature_done += 1,
                    "lint" => t.lint_refused += 1,
                    "unchanged_output" | "still_failing" | "test_broken" => t.probe_refused += 1,
                    "copy_left" => t.copy_refused += 1,
                    "check_changed" => t.check_file_refused += 1,
                    "file_left" | "file_missing" | "rename_incomplete" | "content_missing"
                    | "name_missing" | "definition_left" => t.file_left_refused += 1,
                    _ => t.no_change += 1,
                }
                if let Some(p) = p
                    && p.valid
                {
                    p.valid = false;
                    t.valid_this_turn = t.valid_this_turn.saturating_sub(1);
                }
            }
            Event::Malformed { kind, .. } => {
                if let Some(p) = p {
                    p.malformed.push(kind.clone());
                }
            }
            Event::Observation {
                ok,
                summary,
                output,
                hint,
                ..
            } => {
                if let Some(p) = p {
                    let obs = Observation {
                        ok: *ok,
                        summary: summary.clone(),
                        output: output.clone(),
                        hint: hint.clone(),
                    };
                    // An echo refused as prose has no proposal: its action is empty, as live.
                    let action = p.action.take().unwrap_or_default();
                    if p.valid && !p.verifying {
                        t.saw(loop_key(&action, obs.ok, &obs.summary, &obs.output));
                        t.acted |= obs.ok;
                        t.progress_this_turn |= obs.ok;
                    } else if p.valid && p.rejected_done {
                        // A rejected DONE counts towards the loop stop, as live.
                        t.saw(loop_key(&action, obs.ok, &obs.summary, &obs.output));
                    }
                    p.valid = false;
                    p.verifying = false;
                    p.rejected_done = false;
                    p.observations.push((action, obs));
                }
            }
            Event::Verify {
                ok, after_change, ..
            } => {
                if !ok && !after_change {
                    t.false_successes += 1;
                }
                if let Some(p) = p {
                    p.verifying = true;
                    p.rejected_done = !ok && !after_change;
                }
            }
            // Every kind of record that holds a commit id counts: a resumed session never
            // reuses one, whatever the last commit was.
            Event::Commit {
                id,
                path,
                pre_sha256,
                ..
            } => {
                t.commits = t.commits.max(*id);
                // The pre-image is in the journal's blobs: what the file was before the
                // session first wrote it decides whether a syntax check holds against it.
                let pre = pre_sha256
                    .as_ref()
                    .and_then(|sha| std::fs::read(journal.dir().join("blobs").join(sha)).ok());
                t.note_change(path, pre.as_deref());
            }
            Event::CommitDir { id, .. }
            | Event::CommitFailed { id, .. }
            | Event::Undo { id, .. } => t.commits = t.commits.max(*id),
            _ => {}
        }
    }
    if let Some(p) = pending.take() {
        finish(p, &mut history, &mut t);
    }
    let own_check = events.iter().find_map(|e| match e {
        Event::OwnCheck { check, .. } => check.clone(),
        _ => None,
    });
    Ok(Replay {
        own_check,
        task,
        history,
        last_turn,
        tally: t,
        start_tree,
        protocol,
        probes,
        check_files,
        left_out,
    })
}

/// The turn an event belongs to, for the events that belong to one.
fn turn_of(e: &Event) -> Option<u32> {
    match e {
        Event::Prompt { turn, .. }
        | Event::Prose { turn, .. }
        | Event::Reply { turn, .. }
        | Event::Proposal { turn, .. }
        | Event::Malformed { turn, .. }
        | Event::Refused { turn, .. }
        | Event::Witnessed { turn, .. }
        | Event::Preview { turn, .. }
        | Event::Approval { turn, .. }
        | Event::Commit { turn, .. }
        | Event::CommitDir { turn, .. }
        | Event::Observation { turn, .. }
        | Event::Verify { turn, .. } => Some(*turn),
        Event::Start { .. }
        | Event::OwnCheck { .. }
        | Event::CommitFailed { .. }
        | Event::Stop { .. }
        | Event::Resume { .. }
        | Event::Undo { .. } => None,
    }
}
