//! `bellows agent --resume ID`: a session's history and counters rebuilt from its journal,
//! turn by turn, through the same [`crate::run::turn_record`] the live loop uses.

use crate::act::Observation;
use crate::history::History;
use crate::journal::{Journal, JournalError};
use crate::run::{Config, turn_record};
use crate::workspace::Workspace;

/// What a journal says about a session so far.
#[derive(Debug, Clone)]
pub struct Replay {
    pub task: String,
    pub history: History,
    /// The last turn that produced a reply (0 when none).
    pub last_turn: u32,
    pub tokens: u64,
    pub false_successes: u32,
    /// The highest commit id, so that new commits (and undo) never reuse one.
    pub commits: u32,
    pub echoes: u32,
    pub premature_done: u32,
    /// Some action succeeded (an observation with `ok`), so DONE is no longer premature.
    pub acted: bool,
}

/// One turn while it is read back.
#[derive(Debug, Default)]
struct Pending {
    turn: u32,
    reply: String,
    /// The canonical text of the last proposal not yet paired with an observation.
    action: Option<String>,
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
        crate::prompt::system_prompt(cfg.policy.mode),
        crate::prompt::task_message(ws, &task),
    );
    let mut r = Replay {
        task,
        history: History::new(String::new(), String::new()),
        last_turn: 0,
        tokens: 0,
        false_successes: 0,
        commits: 0,
        echoes: 0,
        premature_done: 0,
        acted: false,
    };
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
                }
                r.last_turn = turn;
                r.tokens += n("prompt_tokens") + n("generated_tokens");
                pending = Some(Pending {
                    turn,
                    reply: text("raw"),
                    ..Pending::default()
                });
            }
            "proposal" => {
                if let Some(p) = pending.as_mut() {
                    p.action = Some(text("text"));
                }
            }
            "malformed" => {
                if let Some(p) = pending.as_mut() {
                    p.malformed.push(text("kind"));
                }
            }
            "observation" => {
                r.acted |= v["ok"] == true;
                if let Some(p) = pending.as_mut() {
                    let obs = Observation {
                        ok: v["ok"].as_bool().unwrap_or(false),
                        summary: text("summary"),
                        output: text("output"),
                        hint: v["hint"].as_str().map(str::to_owned),
                    };
                    p.observations
                        .push((p.action.take().unwrap_or_default(), obs));
                }
            }
            "verify" if v["ok"] == false => r.false_successes += 1,
            "refused" if v["why"] == "echo" => r.echoes += 1,
            "refused" if v["why"] == "premature_done" => r.premature_done += 1,
            "commit" => r.commits = r.commits.max(n("id") as u32),
            _ => {}
        }
    }
    if let Some(p) = pending.take() {
        finish(p, &mut history);
    }
    r.history = history;
    Ok(r)
}
