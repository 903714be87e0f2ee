//! The budgeted prompt: system prompt, task, then the turns, as chat messages. When the prompt
//! (measured with the engine's own tokenizer) exceeds the budget, the oldest turns collapse
//! into one-line digests (deterministic), then the oldest digests drop. The system prompt and
//! the task always stay, and the prefix only changes when a turn is compacted.

use models::{ChatMessage, Engine};

/// One finished turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnRecord {
    /// The reply as the model wrote it (cut at the action limit).
    pub reply: String,
    /// The rendered observations of its actions (or a note that there was no valid action).
    pub observations: String,
    /// One line standing for the whole turn once it is compacted.
    pub digest: String,
}

/// A rendered prompt and how it was made to fit.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub messages: Vec<ChatMessage>,
    pub tokens: usize,
    pub digested: usize,
    pub dropped: usize,
}

/// Even the system prompt and the task alone do not fit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the prompt needs {tokens} tokens even with every turn dropped; the budget is {budget}")]
pub struct OverBudget {
    pub tokens: usize,
    pub budget: usize,
}

/// The linear list of turns the budgeter renders.
#[derive(Debug, Clone)]
pub struct History {
    pub system: String,
    pub task: String,
    pub turns: Vec<TurnRecord>,
}

impl History {
    pub fn new(system: String, task: String) -> History {
        History {
            system,
            task,
            turns: Vec::new(),
        }
    }

    /// The fullest prompt within `budget` tokens: first the oldest turns become digests, one
    /// at a time, then the oldest digests drop.
    pub fn render(&self, engine: &dyn Engine, budget: usize) -> Result<Rendered, OverBudget> {
        let n = self.turns.len();
        let (mut digested, mut dropped) = (0, 0);
        loop {
            let messages = self.messages(digested, dropped);
            let tokens = measure(engine, &messages);
            if tokens <= budget {
                return Ok(Rendered {
                    messages,
                    tokens,
                    digested: digested - dropped,
                    dropped,
                });
            }
            if digested < n {
                digested += 1;
            } else if dropped < n {
                dropped += 1;
            } else {
                return Err(OverBudget { tokens, budget });
            }
        }
    }

    fn messages(&self, digested: usize, dropped: usize) -> Vec<ChatMessage> {
        let mut task = self.task.clone();
        if dropped > 0 {
            task.push_str(&format!("\n\n({dropped} earlier turns omitted.)"));
        }
        if digested > dropped {
            task.push_str("\n\nEarlier turns, in brief:\n");
            for t in &self.turns[dropped..digested] {
                task.push_str(&t.digest);
                task.push('\n');
            }
        }
        let mut messages = vec![
            ChatMessage::new("system", self.system.clone()),
            ChatMessage::new("user", task),
        ];
        for t in &self.turns[digested..] {
            messages.push(ChatMessage::new("assistant", t.reply.clone()));
            messages.push(ChatMessage::new("user", t.observations.clone()));
        }
        messages
    }
}

/// Tokens of the messages as the engine will see them (chat template applied). A template
/// or tokenizer failure counts as not fitting, so the caller compacts rather than overflows.
pub fn measure(engine: &dyn Engine, messages: &[ChatMessage]) -> usize {
    engine
        .render_chat(messages, &[])
        .and_then(|text| engine.tokenize(&text))
        .map_or(usize::MAX, |t| t.len())
}
