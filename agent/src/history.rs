//! The budgeted prompt: system prompt, task, then the turns, as chat messages. When the prompt
//! (measured with the engine's own tokenizer) exceeds the budget, the oldest turns collapse
//! into one-line digests (deterministic), then the oldest digests drop. The system prompt and
//! the task always stay.
//!
//! Compaction changes the prompt right after the system prompt (the digests live in the task
//! message), so every compaction costs the engine's prompt cache everything after it. It is
//! therefore done in batches with hysteresis: once over budget, enough turns are compacted to
//! get down to [`LOW_WATER`] of the budget, and what was compacted stays compacted, so the
//! turns after that only append to the prompt (and the cache evaluates only their tokens)
//! until the budget is reached again.

use models::{ChatMessage, Engine, ToolSpec};

/// One finished turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnRecord {
    /// The reply as the model wrote it (cut at the action limit).
    pub reply: String,
    /// The rendered observations of its actions (or a note that there was no valid action).
    pub observations: String,
    /// One line standing for the whole turn once it is compacted.
    pub digest: String,
    /// `Some` for a turn that changed nothing and showed nothing (files written back as they
    /// were, no action found, only refusals): it is not shown as a turn, since a small model
    /// copies whatever its earlier replies and their answers say. Its words go at the end of
    /// the message before the next reply instead, while no later turn was shown.
    pub note: Option<String>,
    /// What came of the turn in sentences, for a restated message
    /// ([`crate::Config::restate`]): each result's summary, the output of those that show
    /// something other than a diff (a check's, a command's), then what to do. No `[error]`,
    /// `hint:` or `<output>` lines for a small model to copy back.
    pub told: String,
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

/// A compaction brings the prompt down to this fraction of the budget (numerator,
/// denominator), leaving a third of it for the turns that follow to append to.
pub const LOW_WATER: (usize, usize) = (2, 3);

/// The linear list of turns the budgeter renders.
#[derive(Debug, Clone)]
pub struct History {
    pub system: String,
    pub task: String,
    pub turns: Vec<TurnRecord>,
    /// Turns compacted so far (digested, and of those the oldest dropped); a later render
    /// never shows them whole again, so the prompt's prefix stays put between compactions.
    pub digested: usize,
    pub dropped: usize,
    /// Tools the chat template shows the model (the `tools` protocol); measured with the
    /// prompt, since the template renders them into it.
    pub tools: Vec<ToolSpec>,
    /// The role observations go back in: `user`, or `tool` where the model calls tools.
    pub observation_role: &'static str,
}

impl History {
    pub fn new(system: String, task: String) -> History {
        History {
            system,
            task,
            turns: Vec::new(),
            digested: 0,
            dropped: 0,
            tools: Vec::new(),
            observation_role: "user",
        }
    }

    /// The prompt within `budget` tokens. As compacted as before if that fits; otherwise the
    /// oldest whole turns become digests, then the oldest digests drop, until the prompt is
    /// within [`LOW_WATER`] of the budget (or, when that cannot be reached, within the budget).
    pub fn render(&mut self, engine: &dyn Engine, budget: usize) -> Result<Rendered, OverBudget> {
        let n = self.turns.len();
        let (mut digested, mut dropped) = (self.digested.min(n), self.dropped.min(n));
        let low = budget * LOW_WATER.0 / LOW_WATER.1;
        let mut target = budget;
        let mut first_fit = None;
        loop {
            let messages = self.messages(digested, dropped);
            let tokens = measure_with(engine, &messages, &self.tools);
            if tokens <= target {
                return Ok(self.keep(messages, tokens, digested, dropped));
            }
            if tokens <= budget && first_fit.is_none() {
                first_fit = Some((messages, tokens, digested, dropped));
            }
            // Over budget: compact in one batch, down to the low-water mark.
            target = low;
            if digested < n {
                digested += 1;
            } else if dropped < n {
                dropped += 1;
            } else if let Some((messages, tokens, digested, dropped)) = first_fit {
                return Ok(self.keep(messages, tokens, digested, dropped));
            } else {
                return Err(OverBudget { tokens, budget });
            }
        }
    }

    /// Records how far the history is compacted now, and returns the prompt.
    fn keep(
        &mut self,
        messages: Vec<ChatMessage>,
        tokens: usize,
        digested: usize,
        dropped: usize,
    ) -> Rendered {
        self.digested = digested;
        self.dropped = dropped;
        Rendered {
            messages,
            tokens,
            digested: digested - dropped,
            dropped,
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
        let mut messages = vec![ChatMessage::new("system", self.system.clone())];
        // A first message with a turn break is the files, then the task (the whole
        // protocol's): two user messages with the assistant's acknowledgement between.
        match task.split_once(crate::whole::TURN_BREAK) {
            Some((files, ask)) => {
                messages.push(ChatMessage::new("user", files.to_owned()));
                messages.push(ChatMessage::new(
                    "assistant",
                    crate::whole::ACKNOWLEDGEMENT.to_owned(),
                ));
                messages.push(ChatMessage::new("user", ask.to_owned()));
            }
            None => messages.push(ChatMessage::new("user", task)),
        }
        let mut note = None;
        for t in &self.turns[digested..] {
            if t.note.is_some() {
                note = t.note.as_deref();
                continue;
            }
            note = None;
            messages.push(ChatMessage::new("assistant", t.reply.clone()));
            messages.push(ChatMessage::new(
                self.observation_role,
                t.observations.clone(),
            ));
        }
        if let (Some(note), Some(last)) = (note, messages.last_mut()) {
            last.content.push_str("\n\n");
            last.content.push_str(note);
        }
        unshown_but_last(&mut messages);
        messages
    }
}

/// A file the last message shows as it should be written ([`crate::whole::files_to_write`]) is
/// shown there only: its blocks in the earlier messages (the files as they were, the model's
/// own earlier writes of it) are left out. The 1.5B on rename-config-key, given client.py with
/// the line as it should read, wrote back its own first reply's client.py each turn, as the
/// conversation showed it above; and a line standing in for a block left out is copied as a
/// reply of its own (session 24: `clean.sh: (as it should be written, …)`, then DONE).
fn unshown_but_last(messages: &mut [ChatMessage]) {
    let Some((last, earlier)) = messages.split_last_mut() else {
        return;
    };
    for path in crate::whole::files_to_write(&last.content) {
        for m in earlier.iter_mut().filter(|m| m.role != "system") {
            m.content = crate::whole::without_blocks(&m.content, &path);
        }
    }
}

/// Characters of the last turn's results a restated message holds at most (head and tail).
const RESTATED_RESULTS: usize = 2400;

/// Characters of the last turn's results a restated message holds whole when they show a file
/// as it should be written ([`crate::whole::files_to_write`]).
const RESTATED_WHOLE: usize = 4 * RESTATED_RESULTS;

/// Turns a restated message lists at most (the latest).
const RESTATED_TURNS: usize = 8;

/// The history [`crate::Config::restate`] renders after the first turn: no turns, and a first
/// message `fresh` (made again from the files as they are now) with what came of `turns` told
/// before its closing lines (`The task again: …`; in the files-apart layout, at the end of
/// the files' message; else at its end): a line per turn (its digest), then the last turn's
/// results in sentences ([`TurnRecord::told`]).
pub fn restated(history: &History, fresh: &str) -> History {
    let mut section = String::from(
        "What came of your earlier replies (the files above are as they are now, with every \
         change that was made):\n",
    );
    let skip = history.turns.len().saturating_sub(RESTATED_TURNS);
    for t in &history.turns[skip..] {
        section.push_str(&format!("- {}\n", t.digest));
    }
    let mut fresh = fresh.to_owned();
    if let Some(last) = history.turns.last() {
        // A file the results show as it should be written is shown there only (the 1.5B,
        // shown rename-config-key's client.py as it is above and as it should be below,
        // wrote back the one above), and such results are told whole within
        // [`RESTATED_WHOLE`]: a cut file is no file to copy.
        let to_write = crate::whole::files_to_write(&last.told);
        let whole = !to_write.is_empty() && last.told.len() <= RESTATED_WHOLE;
        for path in to_write.iter().filter(|_| whole) {
            fresh = crate::whole::without_blocks(&fresh, path);
        }
        let limit = if whole {
            RESTATED_WHOLE
        } else {
            RESTATED_RESULTS
        };
        let told = crate::observe::head_tail(last.told.trim_end(), limit, None);
        section.push_str(&format!(
            "\nWhat came of your last reply:\n{}\n",
            told.trim_end()
        ));
    }
    // The files-apart layout: at the end of the files' message, so that the task's message
    // stays last and alone.
    let at = fresh
        .find(crate::whole::TURN_BREAK)
        .or_else(|| fresh.rfind(RESTATED_BEFORE));
    let task = match at {
        Some(at) => format!(
            "{}\n\n{}{}",
            fresh[..at].trim_end(),
            section.trim_end(),
            &fresh[at..]
        ),
        None => format!("{}\n\n{}", fresh.trim_end(), section.trim_end()),
    };
    History {
        system: history.system.clone(),
        task,
        turns: Vec::new(),
        digested: 0,
        dropped: 0,
        tools: history.tools.clone(),
        observation_role: history.observation_role,
    }
}

/// Where a restated message tells the earlier replies: before the first message's closing
/// repetition of the task.
const RESTATED_BEFORE: &str = "\nThe task again: ";

/// Tokens of the messages as the engine will see them (chat template applied). A template
/// or tokenizer failure counts as not fitting, so the caller compacts rather than overflows.
pub fn measure(engine: &dyn Engine, messages: &[ChatMessage]) -> usize {
    measure_with(engine, messages, &[])
}

/// [`measure`] with the tools the template renders into the prompt.
/// Where the engine cannot count (a remote server without llama-server's `/tokenize`:
/// Ollama, vLLM, a hosted API; one that renders no template) the count is an estimate, at
/// [`ESTIMATED_BYTES_PER_TOKEN`]; counting it as too long would stop every session before its
/// first reply.
pub fn measure_with(engine: &dyn Engine, messages: &[ChatMessage], tools: &[ToolSpec]) -> usize {
    match engine.render_chat(messages, tools) {
        Ok(text) => engine
            .tokenize(&text)
            .map_or_else(|_| estimate(text.len()), |t| t.len()),
        Err(_) => {
            let tools: usize = tools
                .iter()
                .map(|t| t.name.len() + t.description.len() + t.parameters.to_string().len())
                .sum();
            let text: usize = messages
                .iter()
                .map(|m| m.content.len() + MESSAGE_OVERHEAD_BYTES)
                .sum();
            estimate(text + tools)
        }
    }
}

/// Bytes a token is assumed to hold where the engine cannot count: fewer than English text
/// and code average in the tokenizers of the models bellows knows (about four), so a prompt
/// estimated to fit does.
pub const ESTIMATED_BYTES_PER_TOKEN: usize = 3;

/// Bytes a message's role markers are assumed to take, where no template rendered them.
const MESSAGE_OVERHEAD_BYTES: usize = 24;

fn estimate(bytes: usize) -> usize {
    bytes.div_ceil(ESTIMATED_BYTES_PER_TOKEN)
}
