//! `bellows agent --resume ID`: a session's history and counters rebuilt from its journal,
//! turn by turn, through the same [`crate::run::turn_record`] the live loop uses.

use crate::act::Observation;
use crate::history::History;
use crate::journal::{Journal, JournalError};
use crate::run::{Config, Tally, loop_key, turn_record};
use crate::workspace::Workspace;

/// What a journal says about a session so far.
#[derive(Debug, Clone)]
pub struct Replay {
    pub task: String,
    pub history: History,
    /// The last turn that produced a reply (0 when none).
    pub last_turn: u32,
    /// The loop's counters as they stood after the last turn: tokens, false successes, the
    /// highest commit id (so that new commits, and undo, never reuse one), echoes, premature
    /// DONEs, whether an action succeeded yet, and the stall and loop counts.
    pub tally: Tally,
}

/// One turn while it is read back.
#[derive(Debug, Default)]
struct Pending {
    turn: u32,
    reply: String,
    /// The canonical text of the last proposal not yet paired with an observation.
    action: Option<String>,
    /// That proposal was a valid action (not refused as an echo or a premature DONE).
    valid: bool,
    /// A `verify` event came last: its observation is not an action's.
    verifying: bool,
    observations: Vec<(String, Observation)>,
    malformed: Vec<String>,
}

/// Rebuilds session `journal`'s history: the task from its `start` event, each turn from its
/// `reply`, `proposal`, `malformed` and `observation` events.
pub fn replay(ws: &Workspace, journal: &Journal, cfg: &Config) -> Result<Replay, JournalError> {
    let events = journal.events()?;
    let task = events
        .iter()
        .find(|v| v["event"] == "start")
        .and_then(|v| v["task"].as_str())
        .ok_or_else(|| JournalError::NoSession(journal.dir().to_owned()))?
        .to_owned();
    let mut history = History::new(
        crate::prompt::system_prompt(cfg.policy.mode, cfg.prompt_style),
        crate::prompt::task_message(ws, &task),
    );
    let mut r = Replay {
        task,
        history: History::new(String::new(), String::new()),
        last_turn: 0,
        tally: Tally::default(),
    };
    let t = &mut r.tally;
    let mut pending: Option<Pending> = None;
    let finish = |p: Pending, history: &mut History| {
        history.turns.push(turn_record(
            ws,
            cfg,
            &journal.id,
            p.turn,
            p.reply,
            &p.observations,
            &p.malformed,
        ));
    };
    for v in &events {
        let n = |k: &str| v[k].as_u64().unwrap_or(0);
        let text = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
        let turn = n("turn") as u32;
        match v["event"].as_str().unwrap_or_default() {
            "reply" => {
                if let Some(p) = pending.take() {
                    finish(p, &mut history);
                    t.end_turn();
                }
                r.last_turn = turn;
                t.tokens += n("prompt_tokens") + n("generated_tokens");
                pending = Some(Pending {
                    turn,
                    reply: text("raw"),
                    ..Pending::default()
                });
            }
            "proposal" => {
                if let Some(p) = pending.as_mut() {
                    p.action = Some(text("text"));
                    p.valid = true;
                    t.valid_this_turn += 1;
                }
            }
            // As the loop counts them: an echo or a premature DONE is not a valid action.
            "refused" if v["why"] == "echo" || v["why"] == "premature_done" => {
                if v["why"] == "echo" {
                    t.echoes += 1;
                } else {
                    t.premature_done += 1;
                }
                if let Some(p) = pending.as_mut()
                    && p.valid
                {
                    p.valid = false;
                    t.valid_this_turn = t.valid_this_turn.saturating_sub(1);
                }
            }
            "malformed" => {
                if let Some(p) = pending.as_mut() {
                    p.malformed.push(text("kind"));
                }
            }
            "observation" => {
                if let Some(p) = pending.as_mut() {
                    let obs = Observation {
                        ok: v["ok"].as_bool().unwrap_or(false),
                        summary: text("summary"),
                        output: text("output"),
                        hint: v["hint"].as_str().map(str::to_owned),
                    };
                    let action = p.action.take().unwrap_or_default();
                    if p.valid && !p.verifying {
                        t.saw(loop_key(
                            &action,
                            obs.ok,
                            &obs.summary,
                            &obs.output,
                            &obs.hint,
                        ));
                        t.acted |= obs.ok;
                    }
                    p.valid = false;
                    p.verifying = false;
                    p.observations.push((action, obs));
                }
            }
            "verify" => {
                if v["ok"] == false {
                    t.false_successes += 1;
                }
                if let Some(p) = pending.as_mut() {
                    p.verifying = true;
                }
            }
            "commit" => t.commits = t.commits.max(n("id") as u32),
            _ => {}
        }
    }
    if let Some(p) = pending.take() {
        finish(p, &mut history);
        t.end_turn();
    }
    r.history = history;
    Ok(r)
}
