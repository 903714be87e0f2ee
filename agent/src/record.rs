//! What a session keeps of its turns and counts: the turn as history shows it, and the
//! counters its stop conditions read. The live loop (`crate::run`) and `--resume`
//! (`crate::resume`, from the journal) both go through these, so a resumed session reads and
//! counts as the uninterrupted one would have.

use std::collections::{BTreeMap, BTreeSet};

use crate::act::Observation;
use crate::config::Config;
use crate::history::TurnRecord;
use crate::prompt;
use crate::workspace::Workspace;

/// Counters the stop conditions read. The live loop keeps them; `--resume` rebuilds them from
/// the journal through the same methods (`crate::resume`).
#[derive(Debug, Default, Clone)]
pub struct Tally {
    pub(crate) no_action_turns: u32,
    pub(crate) valid_this_turn: u32,
    /// The loop key (see [`loop_key`]) of the last valid action and its result.
    pub(crate) last: Option<String>,
    pub(crate) repeats: u32,
    /// The loop keys of this turn's valid actions, in order: a turn is "the same turn" as
    /// the one before when its actions and their results are. A reply of several actions
    /// (the whole protocol's file blocks) that comes back unchanged never repeats one action
    /// twice in a row, so it is caught here.
    pub(crate) this_turn: Vec<String>,
    /// Each distinct turn of the session (its keys) and how many times it came.
    pub(crate) turns_seen: Vec<(Vec<String>, u32)>,
    /// How many times the last turn with a valid action had come, itself included: a model
    /// that alternates between two replies (the file, then the test, then the file again)
    /// makes no progress either.
    pub(crate) turn_repeats: u32,
    pub(crate) tokens: u64,
    pub(crate) false_successes: u32,
    pub(crate) echoes: u32,
    /// DONE proposals refused because no action had succeeded yet (plan mode).
    pub(crate) premature_done: u32,
    /// DONE proposals refused because the repository had not changed (writing modes).
    pub(crate) no_change: u32,
    /// Some action of the session succeeded (a read answered, a change committed, a command
    /// exited 0); until then a DONE is refused as premature.
    pub(crate) acted: bool,
    pub(crate) commits: u32,
    /// Paths the session has written, and those of them that did not parse before it first
    /// wrote them (never held against the model): what [`Tally::lint`] checks.
    pub(crate) changed: BTreeSet<String>,
    pub(crate) lint_exempt: BTreeSet<String>,
    /// What each changed file held before the session first wrote it (`None`: it was not
    /// there), up to [`ORIGINAL_BYTES`]; a larger one is left out.
    pub(crate) originals: BTreeMap<String, Option<Vec<u8>>>,
    /// DONE proposals refused because a file the session wrote does not parse.
    pub(crate) lint_refused: u32,
    /// DONE proposals refused because the task's commands print what they printed before
    /// (`unchanged_output`, [`crate::probe`]).
    pub(crate) probe_refused: u32,
    /// Changes to a file the check runs refused, and DONEs refused while a command had left
    /// one changed ([`crate::checkfiles`]).
    pub(crate) check_file_refused: u32,
    /// DONEs refused while a file the task says to delete was still there, or one it says to
    /// create was not.
    pub(crate) file_left_refused: u32,
    /// Renames the agent finished for the session ([`crate::renames::finish`]).
    pub(crate) renames_finished: u32,
    /// Paths the session created (absent before it first wrote them).
    pub(crate) created: BTreeSet<String>,
    /// DONE proposals refused because a file the task asked to move is still there beside
    /// its copy (`copy_left`).
    pub(crate) copy_refused: u32,
    /// Some valid action of this turn succeeded (a file written, a read answered, a command
    /// exited 0).
    pub(crate) progress_this_turn: bool,
    /// Turns in a row that made no progress: no action succeeded, or the turn came back
    /// as it was before. The next reply is sampled warmer ([`Tally::sampling`]).
    pub(crate) stuck: u32,
}

/// Bytes of a changed file's original [`Tally::originals`] keeps at most.
const ORIGINAL_BYTES: usize = 256 * 1024;

/// Words of a task that ask for a change of whitespace alone.
const WHITESPACE_WORDS: &[&str] = &[
    "whitespace",
    "blank",
    "indent",
    "indentation",
    "newline",
    "newlines",
    "trailing",
    "format",
    "formatting",
    "reformat",
    "spaces",
    "tabs",
    "empty",
];

/// `text` without what whitespace alone changes: each line's trailing spaces, blank lines.
fn substance(text: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(text)
        .lines()
        .map(|l| l.trim_end().to_owned())
        .filter(|l| !l.is_empty())
        .collect()
}

/// The files the session changed, when every change it made is whitespace alone (blank lines,
/// trailing spaces) and `task` asks for no such change: a DONE then is no fix. The 0.5B, told
/// to fix a spelling mistake in README.md, added a blank line at its end, and its implied DONE
/// won the vote. `None` when some change has substance, or one cannot be told (a file too
/// large to keep, a file made or deleted).
pub(crate) fn whitespace_only(tally: &Tally, ws: &Workspace, task: &str) -> Option<Vec<String>> {
    if asks_whitespace(task) {
        return None;
    }
    unchanged_as(tally, ws, substance)
}

/// The files the session changed, when each reads the same through `view` as it did before
/// the session; `None` when one does not, none changed, or one cannot be told (a file too
/// large to keep, a file made or deleted).
fn unchanged_as(
    tally: &Tally,
    ws: &Workspace,
    view: impl Fn(&[u8]) -> Vec<String>,
) -> Option<Vec<String>> {
    if tally.changed.is_empty() {
        return None;
    }
    for path in &tally.changed {
        let Some(Some(before)) = tally.originals.get(path) else {
            return None;
        };
        let now = ws.read(path).ok().flatten()?;
        if view(before) != view(&now) {
            return None;
        }
    }
    Some(tally.changed.iter().cloned().collect())
}

/// Words of a task that ask for a spelling fix: a wrong, missing or extra letter.
const SPELLING_WORDS: &[&str] = &[
    "typo",
    "typos",
    "spelling",
    "misspelled",
    "misspelt",
    "misspelling",
    "misspellings",
];

/// Words of a task that ask for a change of letter case itself.
const CASE_WORDS: &[&str] = &[
    "case",
    "capital",
    "capitals",
    "capitalise",
    "capitalize",
    "capitalised",
    "capitalized",
    "capitalisation",
    "capitalization",
    "uppercase",
    "lowercase",
    "upper",
    "lower",
];

/// The files the session changed, when `task` asks for a spelling fix and not for letter
/// case, and every change it made alters letter case (or whitespace) alone: no letter is
/// wrong any less. The 1.5B, told to fix the spelling mistake in README.md, capitalised its
/// heading (`# mailer` to `# Mailer`), left `recieve` as it was, and said DONE. `None` when
/// some change is more than that, or one cannot be told (a file too large to keep, a file
/// made or deleted).
pub(crate) fn case_only(tally: &Tally, ws: &Workspace, task: &str) -> Option<Vec<String>> {
    let words: Vec<String> = task
        .split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .collect();
    let has = |list: &[&str]| words.iter().any(|w| list.contains(&w.as_str()));
    if !has(SPELLING_WORDS) || has(CASE_WORDS) {
        return None;
    }
    unchanged_as(tally, ws, |b| {
        substance(b).iter().map(|l| l.to_lowercase()).collect()
    })
}

/// Of the files the session changed, those whose change is more than blank lines and spaces
/// (a new file always is; every file, where the task asks for whitespace itself): what
/// `named_unchanged` judges. The 0.5B on extract-constant took one blank line out of
/// client.py, the file the task names, then wrote a README.md describing the change it had
/// not made, and its DONE passed as the task's file changed.
pub(crate) fn substantive(tally: &Tally, ws: &Workspace, task: &str) -> Vec<String> {
    let asks = asks_whitespace(task);
    tally
        .changed
        .iter()
        .filter(|path| {
            asks || match (tally.originals.get(*path), ws.read(path).ok().flatten()) {
                (Some(Some(before)), Some(now)) => substance(before) != substance(&now),
                _ => true,
            }
        })
        .cloned()
        .collect()
}

/// Whether `task` is about whitespace itself ([`WHITESPACE_WORDS`]).
fn asks_whitespace(task: &str) -> bool {
    task.split(|c: char| !c.is_alphanumeric())
        .any(|w| WHITESPACE_WORDS.contains(&w.to_lowercase().as_str()))
}

/// What an echo is told.
pub(crate) const ECHO_SUMMARY: &str =
    "that line is the example from the instructions, not a command";

/// The seed a warmer turn starts from when the session's sampling names none.
const STUCK_SEED: u32 = 0x57_0c4;

impl Tally {
    /// Notes that the session wrote `path`, whose content before was `pre` (`None`: new).
    /// The files that were there at the start, changed by the session and different now
    /// from how they started (one written back as it was is not among them).
    pub(crate) fn modified(&self, ws: &crate::workspace::Workspace) -> Vec<String> {
        self.changed
            .iter()
            .filter(|p| !self.created.contains(*p))
            .filter(|p| match self.originals.get(*p) {
                Some(Some(before)) => ws.read(p).ok().flatten().as_deref() != Some(before),
                _ => true,
            })
            .cloned()
            .collect()
    }

    pub(crate) fn note_change(&mut self, path: &str, pre: Option<&[u8]>) {
        if self.changed.insert(path.to_owned()) {
            if pre.is_none_or(|b| b.len() <= ORIGINAL_BYTES) {
                self.originals
                    .insert(path.to_owned(), pre.map(<[u8]>::to_vec));
            }
            match pre {
                None => {
                    self.created.insert(path.to_owned());
                }
                Some(b) if crate::lint::check(path, b).is_some() => {
                    self.lint_exempt.insert(path.to_owned());
                }
                Some(_) => {}
            }
        }
    }

    /// Files the session created that hold exactly the bytes of a file it never touched
    /// (new, original): a small model asked to move a file writes it at the new place and
    /// leaves the old one. Empty files are no copy of anything.
    pub(crate) fn copies(&self, ws: &Workspace) -> Vec<(String, String)> {
        let size = |p: &str| {
            ws.resolve_nofollow(p)
                .ok()
                .and_then(|f| std::fs::symlink_metadata(f).ok())
                .filter(std::fs::Metadata::is_file)
                .map(|m| m.len())
        };
        let new: Vec<(&String, u64)> = self
            .created
            .iter()
            .filter_map(|p| Some((p, size(p).filter(|n| *n > 0)?)))
            .collect();
        if new.is_empty() {
            return Vec::new();
        }
        let others = ws.files("").unwrap_or_default();
        let mut out = Vec::new();
        for (path, len) in new {
            let Some(bytes) = ws.read(path).ok().flatten() else {
                continue;
            };
            if let Some(original) = others.iter().find(|o| {
                !self.changed.contains(*o)
                    && size(o) == Some(len)
                    && ws.read(o).ok().flatten().as_deref() == Some(bytes.as_slice())
            }) {
                out.push((path.clone(), original.clone()));
            }
        }
        out
    }

    /// The files the session wrote that do not parse now, with why ([`crate::lint`]); a file
    /// since deleted, or one that did not parse before the session, is not checked.
    pub(crate) fn lint(&self, ws: &Workspace) -> Vec<(String, String)> {
        self.changed
            .iter()
            .filter(|p| !self.lint_exempt.contains(*p))
            .filter_map(|p| {
                let bytes = ws.read(p).ok().flatten()?;
                crate::lint::check(p, &bytes).map(|why| (p.clone(), why))
            })
            .collect()
    }

    /// Counts the turn towards a stall (no valid action) or resets the stall count.
    pub(crate) fn end_turn(&mut self) {
        if self.valid_this_turn == 0 {
            self.no_action_turns += 1;
        } else {
            self.no_action_turns = 0;
        }
        self.valid_this_turn = 0;
        let progress = std::mem::take(&mut self.progress_this_turn);
        let keys = std::mem::take(&mut self.this_turn);
        let repeated = !keys.is_empty() && self.count_turn(keys) > 1;
        if progress && !repeated {
            self.stuck = 0;
        } else {
            self.stuck += 1;
        }
    }

    /// Counts a turn of valid actions (`keys`) among the session's turns: how many times it
    /// has now come.
    fn count_turn(&mut self, keys: Vec<String>) -> u32 {
        match self.turns_seen.iter_mut().find(|(k, _)| *k == keys) {
            Some((_, n)) => {
                *n += 1;
                self.turn_repeats = *n;
            }
            None => {
                self.turns_seen.push((keys, 1));
                self.turn_repeats = 1;
            }
        }
        self.turn_repeats
    }

    /// The sampling of the next reply: `base`, or — after a turn that made no progress —
    /// warmer, at least `stuck_temperature` and 0.15 more for each further such turn (at
    /// most 1.0), with a seed of its own for each turn. A greedy small model given nearly
    /// the same prompt again writes nearly the same reply again (the same files copied back
    /// unchanged, turn after turn); a warmer sample is a different one. `stuck_temperature`
    /// 0 keeps `base` always.
    pub(crate) fn sampling(
        &self,
        base: &models::Sampling,
        stuck_temperature: f32,
        turn: u32,
    ) -> models::Sampling {
        if self.stuck == 0 || stuck_temperature <= 0.0 {
            return base.clone();
        }
        let warmer = stuck_temperature + 0.15 * (self.stuck - 1) as f32;
        models::Sampling {
            temperature: base.temperature.max(warmer.min(1.0)),
            seed: Some(base.seed.unwrap_or(STUCK_SEED).wrapping_add(turn)),
            ..base.clone()
        }
    }

    /// Whether the turn so far is an earlier turn again, action for action and result for
    /// result, now that its last action is in: the loop's hint then says so.
    pub(crate) fn completes_repeated_turn(&self) -> bool {
        self.turns_seen.iter().any(|(k, _)| *k == self.this_turn)
    }

    /// What the loop stop reads: one action again and again in a row, or one whole turn
    /// come back that many times in the session.
    pub(crate) fn loop_count(&self) -> u32 {
        self.repeats.max(self.turn_repeats)
    }

    /// Counts a valid action and its result (as [`loop_key`] has them) towards loop detection.
    pub(crate) fn saw(&mut self, key: String) {
        self.this_turn.push(key.clone());
        if self.last.as_ref() == Some(&key) {
            self.repeats += 1;
        } else {
            self.last = Some(key);
            self.repeats = 1;
        }
    }
}

/// A turn as history keeps it: the reply, the rendered observations (each paired with the
/// canonical text of its action), and its digest. The live loop and resume both build turns
/// here, so a resumed history reads as the original did. `(session, turn)` names the turn's
/// artifacts.
pub(crate) fn turn_record(
    ws: &Workspace,
    cfg: &Config,
    (session, turn): (&str, u32),
    reply: String,
    observations: &[(String, Observation)],
    malformed: &[String],
    changed: bool,
) -> TurnRecord {
    let artifacts = ws.state_dir().join("artifacts");
    // The whole protocol's reply without the instructions' example block, and, beside other
    // results, without what its echo was told: the model copies both back.
    let (reply, observations) = if cfg.protocol == prompt::Protocol::Whole {
        let shown: Vec<(String, Observation)> = observations
            .iter()
            .filter(|(_, o)| o.summary != ECHO_SUMMARY)
            .cloned()
            .collect();
        let shown = if shown.is_empty() {
            observations.to_vec()
        } else {
            shown
        };
        (crate::whole::without_example_blocks(&reply), shown)
    } else {
        (reply, observations.to_vec())
    };
    let observations = observations.as_slice();
    let mut text = String::new();
    // What the turn came to, as (what happened, what to do): the words of a turn shown as a
    // note instead of a turn.
    let mut said: Vec<(String, String)> = observations
        .iter()
        .map(|(_, o)| (o.summary.clone(), o.hint.clone().unwrap_or_default()))
        .collect();
    for (k, (_, obs)) in observations.iter().enumerate() {
        let name = format!("{session}-t{turn}-{k}.txt");
        text.push_str(&crate::observe::render(
            obs,
            cfg.output_budget,
            Some((&artifacts, &name)),
        ));
    }
    // The whole protocol's failures leave the rest of the reply acting, so they are told
    // whatever else happened.
    let mut told = Vec::new();
    for kind in malformed {
        if let Some(hint) = crate::whole::failure_hint(kind)
            && !told.contains(&kind)
        {
            told.push(kind);
            text.push_str(&format!(
                "[error] a file block was not written ({kind})\nhint: {hint}\n"
            ));
            said.push((
                format!("a file block was not written ({kind})"),
                hint.to_owned(),
            ));
        }
    }
    let silent = observations.is_empty() && told.is_empty();
    if silent && malformed.iter().any(|k| k == REPETITION) {
        said.push((
            "it repeated the same lines over and over, and was cut".to_owned(),
            "write each file once".to_owned(),
        ));
        text.push_str(
            "[error] your reply repeated the same lines over and over, and was cut\nhint: \
             write one command, once; if you are stuck, READ the file again or try another \
             change\n",
        );
    } else if silent && !malformed.is_empty() {
        text.push_str(&format!(
            "[error] a command could not be read ({})\nhint: write each command exactly as \
             the instructions show, one per line\n",
            malformed.join(", ")
        ));
    } else if silent && cfg.protocol == prompt::Protocol::Tools {
        text.push_str(
            "[error] no tool call found in your reply\nhint: call one of the tools, e.g. \
             read or edit\n",
        );
    } else if silent && cfg.protocol == prompt::Protocol::Whole {
        text.push_str(
            "[error] no file block or command found in your reply\nhint: to change a file, \
             write its path on a line by itself, then its complete new content in a fenced \
             code block; or write one command on its own line\n",
        );
        said.push((
            "it held no file block and no command".to_owned(),
            if changed {
                "if the task is finished, reply DONE on a line by itself; if not, write the \
                 file that still needs a change: its path on a line by itself, then its \
                 complete new content in a fenced code block"
            } else {
                "to change a file, write its path on a line by itself, then its complete new \
                 content in a fenced code block; or write one command on its own line"
            }
            .to_owned(),
        ));
    } else if silent {
        text.push_str("[error] no command found in your reply\nhint: write one command on its own line, e.g. LIST\n");
    }
    let digest = match observations.first() {
        Some((action, obs)) => {
            let first = action.lines().next().unwrap_or_default();
            let status = if obs.ok { "ok" } else { "error" };
            format!("turn {turn}: {first} → {status}: {}", obs.summary)
        }
        None => format!("turn {turn}: no command"),
    };
    // In the whole protocol, a turn that changed nothing and showed nothing (every result a
    // refusal without output: files written back as they were, an echo, no action at all)
    // is not shown as a turn: the 0.5B copies such a turn's reply, or its answer, as its
    // next reply. Its words are a note at the end of the prompt instead.
    let unused = cfg.protocol == prompt::Protocol::Whole
        && observations
            .iter()
            .all(|(_, o)| !o.ok && o.output.is_empty());
    TurnRecord {
        reply,
        observations: text,
        digest,
        note: unused.then(|| unused_note(&said)),
        told: told_plainly(observations, &said),
    }
}

/// Outputs of one turn a restated message shows at most.
const TOLD_OUTPUTS: usize = 2;

/// Characters of each output [`told_plainly`] shows (head and tail).
const TOLD_OUTPUT_CHARS: usize = 1000;

/// A turn's results as [`TurnRecord::told`] holds them: a line per result (`said`), the
/// outputs that are not a change's diff, fenced, then the last thing to do.
fn told_plainly(observations: &[(String, Observation)], said: &[(String, String)]) -> String {
    let mut out = String::new();
    for (what, _) in said {
        out.push_str(&format!("- {}\n", what.trim_end_matches('.')));
    }
    if said.is_empty() {
        out.push_str("- nothing: the reply held no file block and no command\n");
    }
    let shown = observations
        .iter()
        .map(|(_, o)| o)
        .filter(|o| {
            let out = o.output.trim_start();
            !out.is_empty() && !out.starts_with("--- ") && !out.starts_with("@@")
        })
        .take(TOLD_OUTPUTS);
    for o in shown {
        let output = o.output.trim_end();
        let summary = o.summary.trim_end_matches(':');
        if output.lines().any(|l| l.trim_start().starts_with("```")) {
            // A file shown whole (fenced after its path): as it is. Fenced again, its own
            // fence would end the outer one, and a cut would leave it half a file; the 1.5B,
            // given rename-config-key's client.py so, wrote back the file it had.
            out.push_str(&format!("\n{summary}:\n{output}\n"));
        } else {
            out.push_str(&format!(
                "\n{summary}:\n```\n{}\n```\n",
                crate::observe::head_tail(output, TOLD_OUTPUT_CHARS, None).trim_end()
            ));
        }
    }
    if let Some((_, hint)) = said.iter().rev().find(|(_, h)| !h.is_empty()) {
        out.push_str(&format!("\nWhat to do now: {hint}\n"));
    }
    out
}

/// The note that stands for an unused turn: what became of the last reply, then what to do,
/// in sentences (no `[error]` lines to copy).
fn unused_note(said: &[(String, String)]) -> String {
    let what: Vec<&str> = said.iter().map(|(s, _)| s.as_str()).collect();
    let mut hints: Vec<&str> = Vec::new();
    for (_, h) in said {
        if !h.is_empty() && !hints.contains(&h.as_str()) {
            hints.push(h);
        }
    }
    let mut note = String::from("Your last reply changed nothing");
    if !what.is_empty() {
        note.push_str(&format!(" ({})", what.join("; ")));
    }
    note.push('.');
    for h in hints {
        let mut c = h.chars();
        if let Some(first) = c.next() {
            note.push(' ');
            note.extend(first.to_uppercase());
            note.push_str(c.as_str());
            if !h.ends_with('.') {
                note.push('.');
            }
        }
    }
    note
}

/// What makes two actions "the same action with the same result" for loop detection: the
/// action's canonical text and the observation as the journal records it (output redacted),
/// so that `--resume` computes the same keys from the journal. The hint is left out: a
/// repeat's hint says that it is one ([`repeat_hint`]), and the repeat is still the same.
pub(crate) fn loop_key(action: &str, ok: bool, summary: &str, output: &str) -> String {
    format!("{action}\n{ok}\n{summary}\n{output}")
}

/// The failure kind of a reply cut because it repeated itself.
pub(crate) const REPETITION: &str = "repetition";

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_file_shown_whole_is_told_as_it_is_and_other_outputs_fenced() {
        let file =
            "client.py with line 2 so:\nclient.py\n```\ndef url(cfg):\n    return cfg\n```\n";
        let refused =
            Observation::error("DONE refused: the word", Some("write client.py")).with_output(file);
        let ran = Observation::ok("`python3 app.py` printed", "hello\n");
        let said = vec![
            (
                "DONE refused: the word".to_owned(),
                "write client.py".to_owned(),
            ),
            ("`python3 app.py` printed".to_owned(), String::new()),
        ];
        let told = told_plainly(
            &[("done".to_owned(), refused), ("run".to_owned(), ran)],
            &said,
        );
        // The file's own fence, once: not inside another.
        assert!(
            told.contains("DONE refused: the word:\nclient.py with line 2 so:\nclient.py\n```\ndef url(cfg):\n    return cfg\n```\n"),
            "{told}"
        );
        assert_eq!(told.matches("```").count(), 4, "{told}");
        // A command's output is fenced as before.
        assert!(
            told.contains("`python3 app.py` printed:\n```\nhello\n```"),
            "{told}"
        );
    }
}
